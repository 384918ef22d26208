/*
 * cert-interop: golden MPA exchanges the RFCs forbid (a Request whose
 * private data is longer than it says, a wrong key or revision, markers
 * asked for), the Terminate the provider sends when it refuses a segment
 * (its DDP Segment Length, the asynchronous event that reports it), and an
 * orderly close with a Read outstanding.  The test is the raw peer
 * (interop_raw.c), as in interop_golden2.c.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "interop_test.h"
#include "rnicpi_util.h"

#define RAW_WAIT_MS INTEROP_RAW_WAIT_MS

/* ---- Tests: MPA --------------------------------------------------------- */

/* Sent the Request @req (@len bytes) to a listener of the provider: what
 * it answered before it closed (the bytes in @rep, their count), and the
 * CONNECT_REQUEST it raised, if any (accepted with @s, whose consumer then
 * sees ESTABLISHED or not). */
static rnicpi_cm_event_t *
mpa_try(cert_t *f, uint64_t lctx, const uint8_t *req, size_t len, int *fd_out)
{
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, lctx, &lst);
  rnicpi_addr_t a;
  cert_addr(f, port, &a);
  int fd = interop_tcp_connect(&a.sa);
  g_assert_cmpint(fd, >=, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  wire_write(fd, req, len);
  /* A provider that refuses answers or closes at once; one that takes the
   * Request raises CONNECT_REQUEST. */
  rnicpi_cm_event_t *ev = NULL;
  cert_limit_t w;
  cert_limit_begin(&w, "a CONNECT_REQUEST, or an answer on the socket", (gint64) CERT_TIMEOUT_MS * 1000);
  while (ev == NULL && !cert_limit_over(&w)) {
    ev = raw_poll_request(f, lctx, 50);
    struct pollfd pf = { .fd = fd, .events = POLLIN };
    if (ev == NULL && poll(&pf, 1, 0) == 1)
      break;
  }
  cert_limit_end(&w);
  cert_ok(CMV->unlisten(lst));
  *fd_out = fd;
  return ev;
}

/* The provider refused the Request on @fd: at most a Reply with R=1, then
 * the close. */
static void
expect_mpa_refused(int fd)
{
  uint8_t h[20 + 512 + 16];
  size_t got = wire_read(fd, h, sizeof(h), RAW_WAIT_MS);
  if (got > 0) {
    g_autofree char *hex = interop_hex(h, MIN(got, (size_t) 20));
    g_test_message("the provider answered %zu bytes: %s", got, hex);
    g_assert_cmpuint(got, >=, 20);
    g_assert_cmpmem(h, 16, wire_key_rep, 16);
    g_assert_cmphex(h[16] & 0x20, ==, 0x20); /* R: rejected */
  }
}

static void
test_mpa_pdata_too_long(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an MPA Request with PD_Length 513 (the most is 512) and 513 bytes of private "
                 "data is refused: no CONNECT_REQUEST, the provider closes the connection, "
                 "answering (if at all) with R=1");
  if (!interop_require_wire(f))
    return;
  uint8_t req[20 + 513];
  memcpy(req, wire_golden_request, 20);
  req[18] = 0x02;
  req[19] = 0x01;
  for (size_t i = 0; i < 513; i++)
    req[20 + i] = interop_pattern(0x66, i);
  int fd;
  rnicpi_cm_event_t *ev = mpa_try(f, 0xee01d, req, sizeof(req), &fd);
  if (ev != NULL)
    g_test_message("the provider raised CONNECT_REQUEST with %u bytes of private data",
                   ev->pdata_len);
  g_assert_null(ev);
  expect_mpa_refused(fd);
  close(fd);
}

static void
test_mpa_key(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a frame opening with the Reply key \"MPA ID Rep Frame\" where the Request's "
                 "\"MPA ID Req Frame\" is due (another Responder on the far end) is refused: no "
                 "CONNECT_REQUEST, the provider closes the connection, answering (if at all) "
                 "with R=1");
  if (!interop_require_wire(f))
    return;
  uint8_t req[sizeof(wire_golden_request)];
  memcpy(req, wire_golden_request, sizeof(req));
  memcpy(req, wire_key_rep, 16);
  int fd;
  rnicpi_cm_event_t *ev = mpa_try(f, 0xe501d, req, sizeof(req), &fd);
  if (ev != NULL)
    g_test_message("the provider raised CONNECT_REQUEST for a frame with the Reply key");
  g_assert_null(ev);
  expect_mpa_refused(fd);
  close(fd);
}

static void
test_mpa_revision(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the golden MPA Request with Rev 0 (RFC 5044 7.1.1 defines Rev 1, RFC 6581 Rev "
                 "2; 0 is the pre-IETF framing) is refused: no CONNECT_REQUEST, the provider "
                 "closes the connection, answering (if at all) with R=1");
  if (!interop_require_wire(f))
    return;
  uint8_t req[sizeof(wire_golden_request)];
  memcpy(req, wire_golden_request, sizeof(req));
  req[17] = 0;
  int fd;
  rnicpi_cm_event_t *ev = mpa_try(f, 0xf001d, req, sizeof(req), &fd);
  if (ev != NULL)
    g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC,
                        "the provider took an MPA Request of Rev 0: it raised CONNECT_REQUEST");
  expect_mpa_refused(fd);
  close(fd);
}

/* The name of a CM event that may end a connect. */
static const char *
cm_end_name(rnicpi_cm_event_type_t t)
{
  switch (t) {
  case RNICPI_CM_ESTABLISHED: return "ESTABLISHED";
  case RNICPI_CM_REJECTED: return "REJECTED";
  case RNICPI_CM_UNREACHABLE: return "UNREACHABLE";
  case RNICPI_CM_BROKEN: return "BROKEN";
  default: return "another event";
  }
}

static void
test_mpa_reply_revision(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Reply of Rev 0 (C=1, R=0, private data \"accept\") to the provider's MPA "
                 "Request (RFC 5044 7.1.1: Rev 1; RFC 6581: Rev 2) ends its connect with "
                 "UNREACHABLE, REJECTED or BROKEN, never ESTABLISHED; the queue pair does not "
                 "enter RTS and the provider closes the connection (after a Terminate, if any)");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xf1000, 16, NULL);
  int fd = raw_request_in(f, &s);
  uint8_t rep[20 + 6];
  memcpy(rep, wire_key_rep, 16);
  rep[16] = 0x40; /* C */
  rep[17] = 0;    /* Rev 0 */
  rep[18] = 0;
  rep[19] = 6;
  memcpy(rep + 20, "accept", 6);
  wire_write(fd, rep, sizeof(rep));
  /* The first CM event of the queue pair ends the connect. */
  rnicpi_cm_event_t *ev = NULL;
  cert_limit_t w;
  cert_limit_begin(&w, "a CM event ending the connect after a Rev 0 Reply",
                   (gint64) CERT_TIMEOUT_MS * 1000);
  while (ev == NULL && !cert_limit_over(&w)) {
    ev = g_async_queue_timeout_pop(f->cm_q, 50000);
    if (ev != NULL && ev->qp_ctx != s.ctx) {
      f->cm_seen = g_list_append(f->cm_seen, ev);
      ev = NULL;
    }
  }
  cert_limit_end(&w);
  if (ev == NULL)
    g_test_message("no CM event within %d ms after the Rev 0 Reply", CERT_TIMEOUT_MS);
  g_assert_nonnull(ev);
  rnicpi_cm_event_type_t type = ev->type;
  g_test_message("the connect ended with %s (reason %d)", cm_end_name(type), ev->reason);
  g_free(ev);
  if (type != RNICPI_CM_UNREACHABLE && type != RNICPI_CM_REJECTED && type != RNICPI_CM_BROKEN) {
    g_autofree char *msg = g_strdup_printf("the provider took an MPA Reply of Rev 0: its connect "
                                           "ended with %s", cm_end_name(type));
    g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, msg);
  }
  g_assert_cmpint(QUE->qp_state(s.qp), !=, RNICPI_QPS_RTS);
  uint8_t rest[256];
  size_t got = wire_read(fd, rest, sizeof(rest), RAW_WAIT_MS);
  if (got > 0) {
    g_autofree char *hex = interop_hex(rest, MIN(got, (size_t) 32));
    g_test_message("the provider sent %zu bytes before it closed: %s", got, hex);
  }
  g_assert_cmpuint(got, <, sizeof(rest));
  close(fd);
  cert_side_free(&s);
}

static void
test_mpa_markers(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an MPA Request with M=1 (the Initiator wants markers in what it receives) is "
                 "either refused (R=1, or the close) or, if accepted, answered by FPDUs that "
                 "carry markers: the first 4 bytes of the stream after the Reply are a marker "
                 "(FPDUptr 0), not an FPDU's ULPDU_Length");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xef000, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  uint8_t req[sizeof(wire_golden_request)];
  memcpy(req, wire_golden_request, sizeof(req));
  req[16] |= 0x80;
  int fd;
  g_autofree rnicpi_cm_event_t *ev = mpa_try(f, 0xef01d, req, sizeof(req), &fd);
  if (ev == NULL) {
    expect_mpa_refused(fd);
  } else {
    rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
    cert_ok(CMV->accept(s.qp, ev->conn_id, &cp));
    uint8_t h[20];
    size_t got = wire_read(fd, h, sizeof(h), RAW_WAIT_MS);
    g_assert_cmpuint(got, ==, sizeof(h));
    g_assert_cmpmem(h, 16, wire_key_rep, 16);
    g_test_message("MPA Reply to M=1: flags 0x%02x", h[16]);
    if ((h[16] & 0x20) == 0) {
      g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s.ctx));
      memcpy(b.data, wire_hello, 13);
      cert_post_send(s.qp, RNICPI_WR_SEND, &b, 0, 13, 0xef05e, RNICPI_WR_SIGNALED, 0, 0);
      uint8_t m[4];
      g_assert_cmpuint(wire_read(fd, m, 4, RAW_WAIT_MS), ==, 4);
      g_autofree char *hex = interop_hex(m, 4);
      g_test_message("the first 4 bytes after the Reply: %s", hex);
      g_assert_cmphex(wire_get32(m), ==, 0);
    }
  }
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

/* ---- Tests: the Terminate the provider sends --------------------------- */

/* The two offending segments: an untagged Send on the Read Request queue
 * (DDP / untagged buffer / invalid QN) of 18 + 34 = 52 bytes (0x0034), and
 * a tagged Read Response 16 bytes longer than its Read (DDP / tagged
 * buffer / base or bounds) of 14 + 80 = 94 bytes (0x005e).  Neither length
 * reads the same byte-swapped. */
typedef enum { TERM_UNTAGGED, TERM_TAGGED } term_case_t;

#define TERM_SEND_PAYLOAD 34u

typedef struct {
  cert_side_t s;
  cert_buf_t b;
  int fd;
  uint8_t u[65536]; /* the Terminate's ULPDU, from the DDP control byte */
  int len;          /* its length, or -1 when the provider closed without one */
  uint32_t seg_len; /* the offending segment's DDP Segment Length (its ULPDU_Length) */
  uint8_t layer, etype, code; /* the RFC's cause of this case */
} term_seen_t;

/* The provider refuses @c's segment; @t holds what it sent back. */
static void
term_provoke(cert_t *f, uint64_t ctx, term_case_t c, term_seen_t *t)
{
  cert_side_new(f, &t->s, ctx, 16, NULL);
  if (c == TERM_UNTAGGED) {
    cert_buf_new(t->s.pd, &t->b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
    cert_post_recv(t->s.qp, &t->b, 0, 64, ctx | 0x7e);
    t->fd = raw_passive(f, &t->s, ctx | 0x1d);
    uint8_t u[18 + TERM_SEND_PAYLOAD];
    raw_untagged_hdr(u, 0x41, 0x43, 1, 1, 0);
    for (uint32_t i = 0; i < TERM_SEND_PAYLOAD; i++)
      u[18 + i] = interop_pattern(0x34, i);
    raw_fpdu(t->fd, u, sizeof(u));
    t->seg_len = sizeof(u);
    t->layer = 1, t->etype = 2, t->code = 0x01;
  } else {
    cert_buf_new(t->s.pd, &t->b, 256, cert_sink_access(f));
    t->fd = raw_active(f, &t->s);
    uint8_t req[65536], hdr[14];
    raw_read_out(&t->s, t->fd, &t->b, ctx | 0x5d, req);
    raw_read_resp(t->fd, wire_get32(req + 18), wire_get64(req + 22), RD_LEN + 16, TRUE, hdr);
    t->seg_len = 14 + RD_LEN + 16;
    t->layer = 1, t->etype = 1, t->code = 0x01;
  }
  t->len = raw_fpdu_read(t->fd, t->u);
  if (t->len < 0) {
    g_test_message("the provider closed the connection without a Terminate");
    return;
  }
  g_test_message("the provider's Terminate (%d bytes): control %02x %02x %02x %02x, then %02x %02x",
                 t->len, t->len > 18 ? t->u[18] : 0, t->len > 19 ? t->u[19] : 0,
                 t->len > 20 ? t->u[20] : 0, t->len > 21 ? t->u[21] : 0,
                 t->len > 22 ? t->u[22] : 0, t->len > 23 ? t->u[23] : 0);
  /* RFC 5040 4.8: untagged, opcode 7, QN 2, then the Terminate Control. */
  g_assert_cmpint(t->len, >=, 22);
  g_assert_cmphex(t->u[1] & 0x0f, ==, 7);
  g_assert_cmpuint(wire_get32(t->u + 6), ==, 2);
  g_assert_cmphex(t->u[18], ==, (uint8_t) (t->layer << 4 | t->etype));
  g_assert_cmphex(t->u[19], ==, t->code);
}

static void
term_done(term_seen_t *t)
{
  close(t->fd);
  cert_buf_free(&t->b);
  cert_side_free(&t->s);
}

static void
test_term_seg_len(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Terminate the provider sends with its M flag set carries, right after the "
                 "Terminate Control, the DDP Segment Length of the segment it refused in network "
                 "byte order (RFC 5040 4.8): 0x0034 for a 52-byte untagged Send on queue 1, "
                 "0x005e for a 94-byte Read Response too long for its Read");
  if (!interop_require_wire(f))
    return;
  for (term_case_t c = TERM_UNTAGGED; c <= TERM_TAGGED; c++) {
    term_seen_t *t = g_new0(term_seen_t, 1);
    term_provoke(f, c == TERM_UNTAGGED ? 0xf1000 : 0xf2000, c, t);
    if (t->len >= 22 && (t->u[20] & 0x80)) {
      g_assert_cmpint(t->len, >=, 24);
      uint32_t got = (uint32_t) t->u[22] << 8 | t->u[23];
      if (got != t->seg_len)
        g_test_message("%s: the Terminate's DDP Segment Length is 0x%04x; the refused segment's "
                       "is 0x%04x", c == TERM_UNTAGGED ? "untagged" : "tagged", got, t->seg_len);
      g_assert_cmphex(got, ==, t->seg_len);
    } else if (t->len >= 22) {
      g_test_message("%s: the Terminate's M flag is clear: no segment length to check",
                     c == TERM_UNTAGGED ? "untagged" : "tagged");
    }
    term_done(t);
    g_free(t);
  }
}

/* The affiliated asynchronous event of queue pair @ctx that reports a
 * fault this side found (QP_FATAL or QP_ACCESS_ERR), within the wait. */
static rnicpi_async_event_t *
term_async(cert_t *f, uint64_t ctx)
{
  for (GList *l = f->async_seen; l != NULL; l = l->next) {
    rnicpi_async_event_t *ev = l->data;
    if (ev->ctx == ctx &&
        (ev->type == RNICPI_ASYNC_QP_FATAL || ev->type == RNICPI_ASYNC_QP_ACCESS_ERR)) {
      f->async_seen = g_list_delete_link(f->async_seen, l);
      return ev;
    }
  }
  cert_limit_t w;
  cert_limit_begin(&w, "a QP_FATAL or QP_ACCESS_ERR asynchronous event", (gint64) CERT_TIMEOUT_MS * 1000);
  rnicpi_async_event_t *ev;
  for (;;) {
    gint64 left = cert_limit_left(&w);
    ev = left > 0 ? g_async_queue_timeout_pop(f->async_q, (guint64) left) : NULL;
    if (ev == NULL || (ev->ctx == ctx && (ev->type == RNICPI_ASYNC_QP_FATAL ||
                                          ev->type == RNICPI_ASYNC_QP_ACCESS_ERR)))
      break;
    f->async_seen = g_list_append(f->async_seen, ev);
  }
  cert_limit_end(&w);
  return ev;
}

static void
test_term_async_detail(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("when the provider refuses a segment with a Terminate, its queue pair's "
                 "affiliated asynchronous event (QP_FATAL or QP_ACCESS_ERR) names that Terminate "
                 "(rnicpi_async_event_t, ABI 1.7): term_layer, term_etype and term_code are the "
                 "layer, error type and code that went on the wire, the RFC's for the fault -- "
                 "DDP / untagged buffer / 0x01 for a Send on queue 1, DDP / tagged buffer / 0x01 "
                 "for a Read Response too long for its Read");
  if (!interop_require_wire(f))
    return;
  if (cert_prov->abi_minor < 7) {
    g_test_skip("the provider's ABI is older than 1.7: its asynchronous events carry no "
                "Terminate detail");
    return;
  }
  for (term_case_t c = TERM_UNTAGGED; c <= TERM_TAGGED; c++) {
    term_seen_t *t = g_new0(term_seen_t, 1);
    uint64_t ctx = c == TERM_UNTAGGED ? 0xf3000 : 0xf4000;
    term_provoke(f, ctx, c, t);
    g_autofree rnicpi_async_event_t *ev = term_async(f, ctx);
    if (ev == NULL)
      g_test_message("no QP_FATAL or QP_ACCESS_ERR event for the queue pair within %d ms",
                     CERT_TIMEOUT_MS);
    g_assert_nonnull(ev);
    g_test_message("%s: async event type %d cause %s, Terminate layer %u type %u code 0x%02x; "
                   "on the wire layer %u type %u code 0x%02x",
                   c == TERM_UNTAGGED ? "untagged" : "tagged", ev->type,
                   rnicpi_async_cause_name(ev->cause), ev->term_layer, ev->term_etype,
                   ev->term_code, t->len >= 22 ? t->u[18] >> 4 : 0xff,
                   t->len >= 22 ? t->u[18] & 0x0f : 0xff, t->len >= 22 ? t->u[19] : 0xff);
    if (t->len >= 22) {
      g_assert_cmpuint(ev->term_layer, ==, t->u[18] >> 4);
      g_assert_cmpuint(ev->term_etype, ==, t->u[18] & 0x0f);
      g_assert_cmphex(ev->term_code, ==, t->u[19]);
      g_assert_cmpuint(ev->term_layer, ==, t->layer);
      g_assert_cmpuint(ev->term_etype, ==, t->etype);
      g_assert_cmphex(ev->term_code, ==, t->code);
    }
    term_done(t);
    g_free(t);
  }
}

static void
test_disconnect_read_outstanding(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an orderly disconnect asked for while the provider's RDMA Read is outstanding "
                 "sends its FIN only after the Read Response: the Read's work request stays on "
                 "the send queue until answered, and a graceful close needs that queue empty "
                 "(RDMAC verbs; a responder seeing the FIN with Reads unanswered terminates). "
                 "The raw peer sees nothing for 500 ms after the disconnect, then its golden "
                 "Response completes the Read successfully with every byte, the FIN follows (after "
                 "a close fence, a zero-length Read the raw peer answers, where the provider "
                 "sends one) and the queue pair gets DISCONNECTED");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xf5000, 16, NULL);
  cert_buf_t sink;
  cert_buf_new(s.pd, &sink, 256, cert_sink_access(f));
  int fd = raw_active(f, &s);
  uint8_t req[65536], hdr[14];
  raw_read_out(&s, fd, &sink, 0xf505d, req);
  cert_ok(CMV->disconnect(s.qp, NULL, 0));
  struct pollfd pf = { .fd = fd, .events = POLLIN };
  int r = poll(&pf, 1, 500);
  if (r != 0) {
    uint8_t b[1];
    ssize_t n = recv(fd, b, 1, MSG_PEEK | MSG_DONTWAIT);
    g_test_message("before the Read Response the provider %s",
                   n == 0 ? "ended its stream (FIN)" : n > 0 ? "sent more bytes" : "reset the stream");
  }
  g_assert_cmpint(r, ==, 0);
  raw_read_resp(fd, wire_get32(req + 18), wire_get64(req + 22), RD_LEN, TRUE, hdr);
  rnicpi_wc_t wc = cert_wc(s.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xf505d);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  for (size_t i = 0; i < 256; i++) {
    uint8_t want = i >= 64 && i < 64 + RD_LEN ? interop_pattern(0x55, i - 64) : 0;
    g_assert_cmphex(sink.data[i], ==, want);
  }
  /* Now the FIN, and nothing before it but a close fence. */
  if (raw_close_fence(fd)) {
    uint8_t rest[1];
    g_assert_cmpuint(wire_read(fd, rest, 1, RAW_WAIT_MS), ==, 0);
  }
  close(fd);
  g_free(cert_wait_cm(f, RNICPI_CM_DISCONNECTED, s.ctx));
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, s.ctx);
  cert_assert_cq_quiet(s.scq);
  cert_buf_check_guards(&sink);
  cert_buf_free(&sink);
  cert_side_free(&s);
}

void
interop_register_golden_mpa(void)
{
  cert_add("/interop/golden/bad-mpa-pdata-length", test_mpa_pdata_too_long);
  cert_add("/interop/golden/bad-mpa-key", test_mpa_key);
  cert_add("/interop/golden/bad-mpa-revision", test_mpa_revision);
  cert_add("/interop/golden/bad-mpa-reply-revision", test_mpa_reply_revision);
  cert_add("/interop/golden/mpa-markers-refused", test_mpa_markers);
  cert_add("/interop/golden/terminate-segment-length", test_term_seg_len);
  cert_add("/interop/golden/terminate-async-detail", test_term_async_detail);
  cert_add("/interop/golden/disconnect-read-outstanding", test_disconnect_read_outstanding);
}
