/*
 * cert-interop: known-answer tests.  The test plays a raw TCP peer with
 * byte strings written down here from RFC 5044 (MPA), RFC 5041 (DDP),
 * RFC 5040 (RDMAP) and RFC 6581, not produced by any provider's code: it
 * reads the provider's MPA Request, Reply and FPDUs byte for byte, and
 * feeds it golden FPDUs (an untagged Send, a tagged RDMA Write, an RDMA
 * Read Request, a Send with a wrong CRC).
 *
 * The CRC32c the test builds frames with is its own, bit by bit, checked
 * first against the published vectors of RFC 3720 B.4.
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

#define RAW_WAIT_MS INTEROP_RAW_WAIT_MS

/* ---- Golden bytes ------------------------------------------------------ */

/* RFC 5044 7.1.1: Reply, C=1, Rev 1, private data "accept". */
static const uint8_t golden_reply[] = {
  0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
  0x40, 0x01, 0x00, 0x06,
  0x61, 0x63, 0x63, 0x65, 0x70, 0x74,
};
/* RFC 5044 7.1.1: Reply, R=1 (rejected), Rev 1, private data "busy". */
static const uint8_t golden_reject[] = {
  0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
  0x20, 0x01, 0x00, 0x04,
  0x62, 0x75, 0x73, 0x79,
};
static const char busy_pdata[] = "busy";
static const uint8_t key_req[16] = "MPA ID Req Frame";
static const char ulp_pdata[] = "ULP private data";
static const char accept_pdata[] = "accept";

/* The first Send of a connection, "Hello, iWARP!", CRC on (RFC 5044 4.1
 * FPDU; RFC 5041 4.3 untagged, QN 0, MSN 1, MO 0, L=1, DV=1; RFC 5040 4.1
 * RV=1, opcode 3).  ULPDU_Length 31, 3 bytes of pad, CRC least
 * significant byte first. */
static const uint8_t golden_send[] = {
  0x00, 0x1f,                                     /* ULPDU_Length 31 */
  0x41,                                           /* T=0 L=1 DV=01 */
  0x43,                                           /* RV=01 opcode 3 (Send) */
  0x00, 0x00, 0x00, 0x00,                         /* RsvdULP: no Invalidate STag */
  0x00, 0x00, 0x00, 0x00,                         /* QN 0 */
  0x00, 0x00, 0x00, 0x01,                         /* MSN 1 */
  0x00, 0x00, 0x00, 0x00,                         /* MO 0 */
  0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x2c, 0x20, 0x69, 0x57, 0x41, 0x52, 0x50, 0x21,
  0x00, 0x00, 0x00,                               /* pad */
  0x13, 0x43, 0x08, 0x1e,                         /* CRC32c 0x1e084313 */
};

/* ---- Raw TCP ----------------------------------------------------------- */

static void
expect_bytes(const char *what, const uint8_t *got, size_t got_len, const uint8_t *want,
             size_t want_len)
{
  if (got_len != want_len || memcmp(got, want, want_len) != 0) {
    g_autofree char *g = interop_hex(got, got_len);
    g_autofree char *w = interop_hex(want, want_len);
    /* The report shows the assertion's line: let it name the field. */
    g_autofree char *msg = g_strdup_printf("%s: the provider's bytes %s differ from the RFC's %s",
                                           what, g, w);
    g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, msg);
  }
}

static const char *
cm_name(rnicpi_cm_event_type_t t)
{
  switch (t) {
  case RNICPI_CM_ESTABLISHED: return "ESTABLISHED";
  case RNICPI_CM_REJECTED: return "REJECTED";
  case RNICPI_CM_UNREACHABLE: return "UNREACHABLE";
  case RNICPI_CM_DISCONNECTED: return "DISCONNECTED";
  case RNICPI_CM_BROKEN: return "BROKEN";
  default: return "another event";
  }
}

/* The next CM event of the queue pair @ctx, which must be @want: a
 * provider that refused the golden frame says so by another one. */
static rnicpi_cm_event_t *
expect_cm(cert_t *f, rnicpi_cm_event_type_t want, uint64_t ctx, const char *after)
{
  cert_limit_t w;
  cert_limit_beginf(&w, (gint64) CERT_TIMEOUT_MS * 1000, "%s after %s", cm_name(want), after);
  for (;;) {
    gint64 left = cert_limit_left(&w);
    rnicpi_cm_event_t *ev = left > 0 ? g_async_queue_timeout_pop(f->cm_q, (guint64) left) : NULL;
    if (ev == NULL) {
      g_autofree char *msg = g_strdup_printf("no CM event within %d ms after %s; expected %s",
                                             CERT_TIMEOUT_MS, after, cm_name(want));
      g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, msg);
    }
    if (ev->type == RNICPI_CM_CONNECT_REQUEST || ev->qp_ctx != ctx) {
      f->cm_seen = g_list_append(f->cm_seen, ev);
      continue;
    }
    if (ev->type != want) {
      g_autofree char *msg = g_strdup_printf("%s (reason %d) after %s; expected %s",
                                             cm_name(ev->type), ev->reason, after, cm_name(want));
      g_free(ev);
      g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, msg);
    }
    cert_limit_end(&w);
    return ev;
  }
}

/* One FPDU from the provider, CRC on: its ULPDU into @ulpdu (room for
 * 65535), its length returned; the pad and CRC checked.  -1 when the
 * provider closed the stream first.  @raw, if given, gets the whole FPDU. */
static int
fpdu_read(int fd, uint8_t *ulpdu, GByteArray *raw, int timeout_ms)
{
  uint8_t lb[2];
  if (wire_read(fd, lb, 2, timeout_ms) != 2)
    return -1;
  size_t len = (size_t) lb[0] << 8 | lb[1];
  size_t pad = (4 - (2 + len) % 4) % 4;
  g_autofree uint8_t *rest = g_malloc(len + pad + 4);
  wire_read_all(fd, rest, len + pad + 4);
  memcpy(ulpdu, rest, len);
  for (size_t i = 0; i < pad; i++)
    g_assert_cmphex(rest[len + i], ==, 0);
  g_autofree uint8_t *all = g_malloc(2 + len + pad);
  memcpy(all, lb, 2);
  memcpy(all + 2, rest, len + pad);
  uint32_t c = wire_crc32c(all, 2 + len + pad);
  const uint8_t *w = rest + len + pad;
  uint8_t want[4] = { (uint8_t) c, (uint8_t) (c >> 8), (uint8_t) (c >> 16), (uint8_t) (c >> 24) };
  if (raw != NULL) {
    g_byte_array_append(raw, lb, 2);
    g_byte_array_append(raw, rest, (guint) (len + pad + 4));
  }
  expect_bytes("the CRC field of an FPDU (RFC 5044 4.1: CRC32c, least significant byte first)",
               w, 4, want, 4);
  return (int) len;
}

/* The zero-length RDMA Read Request a provider may send as a delivery fence
 * (RFC 5040 5.5) after a Send: answered with its zero-length Read Response
 * (RFC 5040 4.3/4.4: tagged, L=1, opcode 2, to the Data Sink STag and TO). */
static gboolean
answer_fence(int fd, const uint8_t *u, int len)
{
  if (len != 46 || u[0] != 0x41 || u[1] != 0x41 || wire_get32(u + 6) != 1 || wire_get32(u + 26) != 0)
    return FALSE;
  uint8_t resp[14], out[32];
  resp[0] = 0xc1;
  resp[1] = 0x42;
  memcpy(resp + 2, u + 18, 4);  /* Data Sink STag */
  memcpy(resp + 6, u + 22, 8);  /* Data Sink TO */
  wire_write(fd, out, wire_fpdu_build(resp, sizeof(resp), out));
  return TRUE;
}

/* The send completion of @id, answering delivery fences meanwhile. */
static void
wait_send_done(cert_side_t *s, int fd, uint64_t id)
{
  cert_limit_t w;
  cert_limit_begin(&w, "a Send's completion, answering delivery fences", (gint64) CERT_TIMEOUT_MS * 1000);
  rnicpi_wc_t wc;
  while (cert_poll(s->scq, &wc, 1, 20) == 0) {
    g_assert_false(cert_limit_over(&w));
    struct pollfd pf = { .fd = fd, .events = POLLIN };
    if (poll(&pf, 1, 20) == 1) {
      uint8_t u[65536];
      int len = fpdu_read(fd, u, NULL, RAW_WAIT_MS);
      g_assert_cmpint(len, >=, 0);
      gboolean fence = answer_fence(fd, u, len);
      if (!fence)
        g_test_message("an FPDU of %d bytes from the provider before its Send completed, not a "
                       "zero-length RDMA Read Request", len);
      g_assert_true(fence);
    }
  }
  cert_limit_end(&w);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_SEND);
  cert_assert_cq_quiet(s->scq);
}

/* ---- Connection set-up with the raw peer -------------------------------- */

/* An MPA frame's RFC 6581 control word (the first 4 bytes of its private
 * data when Rev 2 with the enhanced bit): two big-endian halves, A B IRD
 * and C D ORD, 14 bits each. */
typedef struct {
  gboolean enhanced;
  uint16_t ird_half, ord_half;
} mpa_ctl_t;

#define MPA_CTL_VALUE 0x3fffu /* the 14-bit IRD/ORD field */
#define MPA_CTL_A 0x8000u     /* IRD half: peer-to-peer mode */
#define MPA_CTL_C 0x8000u     /* ORD half: RTR is a zero-length RDMA Write */
#define MPA_CTL_D 0x4000u     /* ORD half: RTR is a zero-length RDMA Read */

static int golden_request_in_ctl(cert_t *f, cert_side_t *s, uint32_t ird, uint32_t ord,
                                 mpa_ctl_t *ctl);

/* The provider connects to the test (it is the MPA Initiator): the test
 * checks its Request.  The socket, the Reply not sent yet. */
static int
golden_request_in(cert_t *f, cert_side_t *s)
{
  return golden_request_in_ctl(f, s, cert_min(4, f->caps.max_ird), cert_min(4, f->caps.max_ord),
                               NULL);
}

/* golden_request_in, the provider connecting with IRD @ird and ORD @ord;
 * @ctl, if given, gets the Request's control word. */
static int
golden_request_in_ctl(cert_t *f, cert_side_t *s, uint32_t ird, uint32_t ord, mpa_ctl_t *ctl)
{
  rnicpi_addr_t dst;
  int lfd = raw_listen(f, &dst);
  rnicpi_conn_param_t cp = { .pdata = ulp_pdata, .pdata_len = 16, .ird = ird, .ord = ord };
  g_assert_cmpuint(f->caps.pdata_connect, >=, 16);
  cert_ok(CMV->connect(s->qp, &dst, &cp));
  int fd = raw_accept(lfd);

  /* RFC 5044 7.1.1: Key | M C R Res | Rev | PD_Length | private data. */
  uint8_t h[20];
  wire_read_all(fd, h, sizeof(h));
  expect_bytes("the MPA Request's key (RFC 5044 7.1.1)", h, 16, key_req, 16);
  uint8_t flags = h[16], rev = h[17];
  uint32_t pd_len = (uint32_t) h[18] << 8 | h[19];
  g_test_message("MPA Request: flags 0x%02x, Rev %u, PD_Length %u", flags, rev, pd_len);
  g_assert_cmphex(flags & 0x80, ==, 0); /* M: this peer inserts no markers */
  g_assert_cmphex(flags & 0x20, ==, 0); /* R: a Request rejects nothing */
  g_assert_true(rev == 1 || rev == 2);
  g_assert_cmpuint(pd_len, <=, 512);
  uint8_t pd[512];
  wire_read_all(fd, pd, pd_len);
  /* RFC 6581: a Rev 2 frame with the enhanced bit begins its private
   * data with the 4-byte IRD/ORD control word. */
  uint32_t ctl_len = rev == 2 && (flags & 0x10) ? 4 : 0;
  g_assert_cmpuint(pd_len, ==, ctl_len + 16);
  expect_bytes("the MPA Request's private data", pd + ctl_len, pd_len - ctl_len,
               (const uint8_t *) ulp_pdata, 16);
  if (ctl != NULL) {
    ctl->enhanced = ctl_len != 0;
    ctl->ird_half = ctl_len ? (uint16_t) (pd[0] << 8 | pd[1]) : 0;
    ctl->ord_half = ctl_len ? (uint16_t) (pd[2] << 8 | pd[3]) : 0;
  }

  return fd;
}

/* golden_request_in, answered with the golden Reply: Rev 1 (RFC 6581: a
 * responder that does not do enhanced setup answers Rev 1), C=1,
 * "accept". */
static int
golden_active(cert_t *f, cert_side_t *s)
{
  int fd = golden_request_in(f, s);
  wire_write(fd, golden_reply, sizeof(golden_reply));
  g_autofree rnicpi_cm_event_t *ev =
    expect_cm(f, RNICPI_CM_ESTABLISHED, s->ctx, "the golden MPA Reply (C=1, Rev 1, \"accept\")");
  expect_bytes("the private data of the golden MPA Reply, as ESTABLISHED gives it", ev->pdata,
               ev->pdata_len, (const uint8_t *) accept_pdata, 6);
  return fd;
}

/* The CONNECT_REQUEST the golden Request raises at listener @lctx; a
 * provider that refuses the Request closes the socket or answers it. */
static rnicpi_cm_event_t *
wait_request(cert_t *f, int fd, uint64_t lctx)
{
  rnicpi_cm_event_t *ev = NULL;
  cert_limit_t w;
  cert_limit_begin(&w, "a CONNECT_REQUEST for the golden MPA Request", (gint64) CERT_TIMEOUT_MS * 1000);
  while (ev == NULL && !cert_limit_over(&w)) {
    ev = g_async_queue_timeout_pop(f->cm_q, 50000);
    if (ev != NULL && (ev->type != RNICPI_CM_CONNECT_REQUEST || ev->listen_ctx != lctx)) {
      f->cm_seen = g_list_append(f->cm_seen, ev);
      ev = NULL;
    }
    struct pollfd pf = { .fd = fd, .events = POLLIN };
    if (ev == NULL && poll(&pf, 1, 0) == 1) {
      uint8_t h[20];
      size_t got = wire_read(fd, h, sizeof(h), RAW_WAIT_MS);
      g_autofree char *hex = interop_hex(h, got);
      g_autofree char *msg = g_strdup_printf("the provider answered the golden MPA Request (key \"MPA ID "
                                             "Req Frame\", C=1, Rev 1) with %zu bytes (%s) and no "
                                             "CONNECT_REQUEST: it refused the Request", got, hex);
      g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, msg);
    }
  }
  cert_limit_end(&w);
  if (ev == NULL)
    g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC,
                        "no CONNECT_REQUEST for the golden MPA Request within the timeout");
  return ev;
}

/* The test connects to the provider (the test is the MPA Initiator) with
 * the golden Request; the provider accepts with "accept" and IRD
 * @accept_ird.  The socket; @ird, if given, gets the IRD the provider's
 * ESTABLISHED reports. */
static int
golden_passive_ird(cert_t *f, cert_side_t *s, uint32_t accept_ird, uint32_t *ird)
{
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x901d, &lst);
  rnicpi_addr_t a;
  cert_addr(f, port, &a);
  int fd = interop_tcp_connect(&a.sa);
  g_assert_cmpint(fd, >=, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  wire_write(fd, wire_golden_request, sizeof(wire_golden_request));
  g_autofree rnicpi_cm_event_t *req = wait_request(f, fd, 0x901d);
  expect_bytes("the golden MPA Request's private data, as CONNECT_REQUEST gives it", req->pdata,
               req->pdata_len, (const uint8_t *) ulp_pdata, 16);
  g_assert_cmpuint(f->caps.pdata_accept, >=, 6);
  rnicpi_conn_param_t cp = { .pdata = accept_pdata, .pdata_len = 6,
                             .ird = accept_ird, .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->accept(s->qp, req->conn_id, &cp));

  uint8_t h[20];
  wire_read_all(fd, h, sizeof(h));
  expect_bytes("the MPA Reply's key (RFC 5044 7.1.1)", h, 16, wire_key_rep, 16);
  uint8_t flags = h[16], rev = h[17];
  uint32_t pd_len = (uint32_t) h[18] << 8 | h[19];
  g_test_message("MPA Reply: flags 0x%02x, Rev %u, PD_Length %u", flags, rev, pd_len);
  g_assert_cmphex(flags & 0x80, ==, 0); /* M: we asked for none, it inserts none for us */
  /* C: the Request asked for CRC, so both ends use it (RFC 5044 7.1.1),
   * whatever the responder would have chosen alone. */
  g_assert_cmphex(flags & 0x40, ==, 0x40);
  g_assert_cmphex(flags & 0x20, ==, 0); /* R: accepted */
  g_assert_cmpuint(rev, ==, 1);         /* RFC 6581: a Rev 1 Request gets a Rev 1 Reply */
  g_assert_cmpuint(pd_len, ==, 6);
  uint8_t pd[6];
  wire_read_all(fd, pd, sizeof(pd));
  expect_bytes("the MPA Reply's private data", pd, 6, (const uint8_t *) accept_pdata, 6);
  g_autofree rnicpi_cm_event_t *est = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s->ctx);
  /* A Rev 1 Request negotiates nothing: a provider that reports no IRD
   * (vp/ib over rdma_cm on siw) holds the one its consumer accepted with. */
  if (ird != NULL)
    *ird = est->ird != 0 ? est->ird : cp.ird;
  cert_ok(CMV->unlisten(lst));
  return fd;
}

static int
golden_passive(cert_t *f, cert_side_t *s)
{
  return golden_passive_ird(f, s, cert_min(4, f->caps.max_ird), NULL);
}

/* ---- Tests ------------------------------------------------------------- */

static void
test_crc_vectors(cert_t *f, gconstpointer data)
{
  (void) f;
  (void) data;
  g_test_summary("the CRC32c the golden frames are built with gives the RFC 3720 B.4 answers "
                 "(32 x 0x00: 0x8a9136aa, 32 x 0xff: 0x62a8ab43, 0..31: 0x46dd794e) and frames "
                 "the RFC 5044 sample Send's CRC, stored least significant byte first");
  wire_crc_known_answers();
  uint8_t out[64];
  size_t n = wire_fpdu_build(golden_send + 2, 31, out);
  expect_bytes("the test's own framing of the sample Send", out, n, golden_send, sizeof(golden_send));
}

static void
test_mpa_request(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("as MPA Initiator the provider sends the key \"MPA ID Req Frame\", M=0, R=0, "
                 "Rev 1 or 2, PD_Length of the private data (plus the RFC 6581 control word when "
                 "enhanced) and the private data byte for byte; it takes the golden Reply (C=1, Rev "
                 "1) and gives its private data in ESTABLISHED");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xd0000, 16, NULL);
  int fd = golden_active(f, &s);
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_RTS);
  cert_assert_cq_quiet(s.scq);
  close(fd);
  cert_side_free(&s);
}

static void
test_send_fpdu(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the provider's first Send, \"Hello, iWARP!\", after the golden Reply is the "
                 "RFC's FPDU byte for byte: ULPDU_Length 31, DDP untagged L=1 DV=1, RDMAP RV=1 "
                 "opcode 3, QN 0, MSN 1, MO 0, pad, CRC32c least significant byte first");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xd1000, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  int fd = golden_active(f, &s);
  memcpy(b.data, wire_hello, 13);
  cert_post_send(s.qp, RNICPI_WR_SEND, &b, 0, 13, 0x5e, RNICPI_WR_SIGNALED, 0, 0);
  uint8_t u[65536];
  g_autoptr(GByteArray) raw = g_byte_array_new();
  int len = fpdu_read(fd, u, raw, RAW_WAIT_MS);
  g_assert_cmpint(len, >=, 0);
  expect_bytes("the FPDU of a Send of \"Hello, iWARP!\"", raw->data, raw->len, golden_send,
               sizeof(golden_send));
  wait_send_done(&s, fd, 0x5e);
  cert_assert_cq_quiet(s.rcq);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_mpa_reply(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("as MPA Responder to the golden Request (C=1, Rev 1, \"ULP private data\") the "
                 "provider gives the private data in CONNECT_REQUEST and answers the key \"MPA ID "
                 "Rep Frame\", M=0, C=1 (the Request asked for CRC), R=0, Rev 1, PD_Length 6 and "
                 "its private data \"accept\"");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xd2000, 16, NULL);
  int fd = golden_passive(f, &s);
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_RTS);
  close(fd);
  cert_side_free(&s);
}

static void
test_untagged_send(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the golden Send FPDU (MSN 1, CRC32c) lands in the posted receive: one RECV "
                 "completion of 13 bytes holding \"Hello, iWARP!\", nothing past them, nothing "
                 "more on the CQs");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xd3000, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_post_recv(s.qp, &b, 0, 64, 0x7e);
  int fd = golden_passive(f, &s);
  wire_write(fd, golden_send, sizeof(golden_send));
  rnicpi_wc_t wc = cert_wc(s.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0x7e);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmpuint(wc.byte_len, ==, 13);
  expect_bytes("the receive buffer", b.data, 13, (const uint8_t *) wire_hello, 13);
  for (size_t i = 13; i < 64; i++)
    g_assert_cmphex(b.data[i], ==, 0);
  cert_buf_check_guards(&b);
  cert_assert_cq_quiet(s.rcq);
  cert_assert_cq_quiet(s.scq);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_tagged_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a golden RDMA Write of two tagged segments (T=1, L=0 then L=1, opcode 0) to "
                 "the STag and TO of the provider's region places 80 bytes exactly there and "
                 "consumes no receive; the golden Send after it then completes the one receive");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xd4000, 16, NULL);
  cert_buf_t b, r;
  cert_buf_new(s.pd, &b, 4096, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE);
  cert_buf_new(s.pd, &r, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_post_recv(s.qp, &r, 0, 64, 0x7f);
  int fd = golden_passive(f, &s);
  /* RFC 5041 4.2: ctrl | RDMAP ctrl | STag | TO, then the payload. */
  const uint32_t lens[2] = { 50, 30 };
  uint64_t to = cert_raddr(&b, 100);
  size_t done = 0;
  for (int k = 0; k < 2; k++) {
    uint8_t u[14 + 50], out[96];
    u[0] = k == 0 ? 0x81 : 0xc1; /* T=1, L only on the last segment, DV=01 */
    u[1] = 0x40;                 /* RV=01, opcode 0: RDMA Write */
    wire_put32(u + 2, b.mr->rkey);
    wire_put64(u + 6, to + done);
    for (uint32_t i = 0; i < lens[k]; i++)
      u[14 + i] = interop_pattern(0x33, done + i);
    wire_write(fd, out, wire_fpdu_build(u, 14 + lens[k], out));
    done += lens[k];
  }
  wire_write(fd, golden_send, sizeof(golden_send));
  rnicpi_wc_t wc = cert_wc(s.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0x7f);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmpuint(wc.byte_len, ==, 13);
  for (size_t i = 0; i < 4096; i++) {
    uint8_t want = i >= 100 && i < 180 ? interop_pattern(0x33, i - 100) : 0;
    if (b.data[i] != want)
      g_test_message("byte %zu of the region is 0x%02x, expected 0x%02x", i, b.data[i], want);
    g_assert_cmphex(b.data[i], ==, want);
  }
  cert_buf_check_guards(&b);
  cert_assert_cq_quiet(s.rcq);
  cert_assert_cq_quiet(s.scq);
  close(fd);
  cert_buf_free(&r);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_read_request(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a golden RDMA Read Request (QN 1, MSN 1, 64 bytes of the provider's region "
                 "to sink STag 0x11111100 TO 0x2000) is answered by one Read Response FPDU: "
                 "tagged, L=1, opcode 2, that STag and TO, the region's bytes, CRC32c; no "
                 "completion at the provider");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xd5000, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 256, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ);
  for (size_t i = 0; i < 256; i++)
    b.data[i] = interop_pattern(0x44, i);
  int fd = golden_passive(f, &s);
  /* RFC 5041 4.3 untagged header, RFC 5040 4.4 Read Request header. */
  uint8_t u[46], out[64];
  memset(u, 0, sizeof(u));
  u[0] = 0x41;            /* T=0 L=1 DV=01 */
  u[1] = 0x41;            /* RV=01 opcode 1: RDMA Read Request */
  wire_put32(u + 6, 1);        /* QN 1 */
  wire_put32(u + 10, 1);       /* MSN 1 */
  wire_put32(u + 14, 0);       /* MO 0 */
  wire_put32(u + 18, 0x11111100);
  wire_put64(u + 22, 0x2000);
  wire_put32(u + 30, 64);
  wire_put32(u + 34, b.mr->rkey);
  wire_put64(u + 38, cert_raddr(&b, 8));
  wire_write(fd, out, wire_fpdu_build(u, sizeof(u), out));
  uint8_t resp[65536];
  int len = fpdu_read(fd, resp, NULL, RAW_WAIT_MS);
  if (len >= 22 && (resp[1] & 0x0f) == 7) {
    g_autofree char *msg = g_strdup_printf("the provider answered the golden Read Request with a "
                                           "Terminate: layer %u, error type %u, code 0x%02x",
                                           resp[18] >> 4, resp[18] & 0x0f, resp[19]);
    g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, msg);
  }
  g_assert_cmpint(len, ==, 14 + 64);
  uint8_t want[14 + 64] = { 0xc1, 0x42, 0x11, 0x11, 0x11, 0x00, 0, 0, 0, 0, 0, 0, 0x20, 0x00 };
  memcpy(want + 14, b.data + 8, 64);
  expect_bytes("the Read Response (RFC 5040 4.3: tagged, L=1, opcode 2, the sink STag and TO)",
               resp, (size_t) len, want, sizeof(want));
  g_assert_cmphex(wire_get64(resp + 6), ==, 0x2000);
  cert_assert_cq_quiet(s.rcq);
  cert_assert_cq_quiet(s.scq);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_read_past_ird(cert_t *f, gconstpointer data)
{
  gboolean zero = data != NULL;
  g_test_summary(zero ? "the provider accepts with IRD 0, then one golden RDMA Read Request of "
                        "16 MiB arrives (RFC 5040 5.1: a Data Source holds at most IRD Reads, "
                        "here none): it answers none and ends the stream with a Terminate or "
                        "a close"
                      : "IRD + 1 golden RDMA Read Requests of 16 MiB each, sent back to back "
                        "while the test reads nothing, exceed the provider's IRD (RFC 5040 "
                        "5.1: a Data Source holds at most IRD Reads): it answers at most IRD "
                        "of them and ends the stream with a Terminate or a close, never "
                        "answering them all");
  if (!interop_require_wire(f))
    return;
  enum { SIZE = 16 << 20 };
  cert_side_t s;
  cert_side_new(f, &s, 0xd8000, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, SIZE, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ);
  uint32_t ird = 0;
  int fd = golden_passive_ird(f, &s, zero ? 0 : cert_min(4, f->caps.max_ird), &ird);
  g_assert_cmpuint(ird, >=, zero ? 0 : 1);
  g_assert_cmpuint(ird, <=, zero ? 0 : 64);
  /* A small receive buffer: the first response cannot drain into the
   * socket, so the provider still holds every Read it took. */
  int small = 65536;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  uint32_t n = ird + 1;
  g_autofree uint8_t *reqs = g_malloc0((size_t) n * 64);
  size_t off = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint8_t u[46];
    memset(u, 0, sizeof(u));
    u[0] = 0x41;               /* T=0 L=1 DV=01 */
    u[1] = 0x41;               /* RV=01 opcode 1: RDMA Read Request */
    wire_put32(u + 6, 1);           /* QN 1 */
    wire_put32(u + 10, i + 1);      /* MSN */
    wire_put32(u + 18, 0x11111100); /* Data Sink STag */
    wire_put64(u + 22, (uint64_t) i * SIZE);
    wire_put32(u + 30, SIZE);
    wire_put32(u + 34, b.mr->rkey);
    wire_put64(u + 38, cert_raddr(&b, 0));
    off += wire_fpdu_build(u, sizeof(u), reqs + off);
  }
  wire_write(fd, reqs, off);

  /* Every FPDU the provider sends, until a Terminate or the close. */
  g_autofree uint8_t *u = g_malloc(65536);
  uint32_t answered = 0;
  gboolean terminated = FALSE, closed = FALSE;
  while (!terminated && !closed && answered < n) {
    int len = fpdu_read(fd, u, NULL, RAW_WAIT_MS);
    if (len < 0) {
      closed = TRUE;
    } else if (len >= 2 && (u[0] & 0x80) && (u[1] & 0x0f) == 2) {
      if (u[0] & 0x40) /* L: the last segment of a Read Response */
        answered++;
    } else if (len >= 20 && !(u[0] & 0x80) && (u[1] & 0x0f) == 7) {
      g_test_message("Terminate: layer %u, error type %u, code 0x%02x", u[18] >> 4, u[18] & 0x0f,
                     u[19]);
      terminated = TRUE;
    } else {
      g_test_message("an FPDU of %d bytes, header %02x %02x, neither a Read Response nor a "
                     "Terminate", len, u[0], u[1]);
      g_assert_not_reached();
    }
  }
  g_test_message("IRD %u: %u of %u Reads answered, then %s", ird, answered, n,
                 terminated ? "a Terminate" : closed ? "the close" : "nothing");
  if (answered > ird)
    g_test_message("the provider answered %u Reads with an IRD of %u: it took more than its IRD",
                   answered, ird);
  g_assert_cmpuint(answered, <=, ird);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_bad_crc(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the golden Send with one CRC bit wrong is refused (RFC 5044 8): the posted "
                 "receive does not complete successfully, nothing lands past the message, and the provider "
                 "sends a Terminate (LLP, MPA, CRC error 0x02) or closes the connection");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xd6000, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_post_recv(s.qp, &b, 0, 64, 0x8e);
  int fd = golden_passive(f, &s);
  uint8_t bad[sizeof(golden_send)];
  memcpy(bad, golden_send, sizeof(bad));
  bad[sizeof(bad) - 1] ^= 0x01;
  wire_write(fd, bad, sizeof(bad));
  /* A Terminate, then the close; or the close alone. */
  uint8_t u[65536];
  int len = fpdu_read(fd, u, NULL, RAW_WAIT_MS);
  if (len >= 0) {
    g_test_message("the provider answered with an FPDU of %d bytes", len);
    /* RFC 5040 4.8: untagged, QN 2, MSN 1, MO 0, opcode 7; Terminate
     * control Layer 2 (LLP) EType 0 (MPA) code 0x02 (CRC error). */
    g_assert_cmpint(len, >=, 22);
    g_assert_cmphex(u[0], ==, 0x41);
    g_assert_cmphex(u[1], ==, 0x47);
    g_assert_cmpuint(wire_get32(u + 6), ==, 2);
    g_assert_cmpuint(wire_get32(u + 10), ==, 1);
    g_assert_cmpuint(wire_get32(u + 14), ==, 0);
    g_assert_cmphex(u[18], ==, 0x20);
    g_assert_cmphex(u[19], ==, 0x02);
    uint8_t rest[1];
    g_assert_cmpuint(wire_read(fd, rest, 1, RAW_WAIT_MS), ==, 0);
  } else {
    g_test_message("the provider closed the connection without a Terminate");
  }
  rnicpi_wc_t wc;
  if (cert_poll(s.rcq, &wc, 1, 500) == 1) {
    g_test_message("the receive completed with status %d", wc.status);
    g_assert_cmphex(wc.wr_id, ==, 0x8e);
    g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  }
  /* Placement of a segment may run ahead of its CRC (siw and vp/iwarp
   * place as the bytes stream in and check the CRC at the FPDU's end), so
   * the 13 bytes of a receive that completed in error are undefined (RFC
   * 5040 5.5); nothing may land past them nor outside the buffer. */
  for (size_t i = 13; i < 64; i++)
    g_assert_cmphex(b.data[i], ==, 0);
  cert_buf_check_guards(&b);
  cert_assert_cq_quiet(s.rcq);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_mpa_rejected(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the golden rejecting Reply (R=1, Rev 1, \"busy\") to the provider's Request "
                 "ends its connect with REJECTED carrying \"busy\", not ESTABLISHED");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xd7000, 16, NULL);
  int fd = golden_request_in(f, &s);
  wire_write(fd, golden_reject, sizeof(golden_reject));
  g_autofree rnicpi_cm_event_t *ev =
    expect_cm(f, RNICPI_CM_REJECTED, s.ctx, "the golden rejecting MPA Reply (R=1)");
  expect_bytes("the private data of the golden rejecting Reply, as REJECTED gives it", ev->pdata,
               ev->pdata_len, (const uint8_t *) busy_pdata, 4);
  g_assert_cmpint(QUE->qp_state(s.qp), !=, RNICPI_QPS_RTS);
  close(fd);
  cert_side_free(&s);
}

static void
test_mpa_reject(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a provider that rejects the golden Request answers the key \"MPA ID Rep "
                 "Frame\" with R=1, M=0, Rev 1, PD_Length 4 and its private data \"busy\", then "
                 "closes the stream");
  if (!interop_require_wire(f))
    return;
  g_assert_cmpuint(f->caps.pdata_reject, >=, 4);
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x901e, &lst);
  rnicpi_addr_t a;
  cert_addr(f, port, &a);
  int fd = interop_tcp_connect(&a.sa);
  g_assert_cmpint(fd, >=, 0);
  wire_write(fd, wire_golden_request, sizeof(wire_golden_request));
  g_autofree rnicpi_cm_event_t *req = wait_request(f, fd, 0x901e);
  cert_ok(CMV->reject(f->dev, req->conn_id, busy_pdata, 4));
  uint8_t h[24];
  wire_read_all(fd, h, sizeof(h));
  expect_bytes("the MPA Reply's key (RFC 5044 7.1.1)", h, 16, wire_key_rep, 16);
  g_test_message("MPA Reply: flags 0x%02x, Rev %u, PD_Length %u", h[16], h[17], h[18] << 8 | h[19]);
  g_assert_cmphex(h[16] & 0x20, ==, 0x20); /* R: rejected */
  g_assert_cmphex(h[16] & 0x80, ==, 0);    /* M */
  g_assert_cmpuint(h[17], ==, 1);
  g_assert_cmpuint(h[18] << 8 | h[19], ==, 4);
  expect_bytes("the rejecting Reply's private data", h + 20, 4, (const uint8_t *) busy_pdata, 4);
  uint8_t more[1];
  g_assert_cmpuint(wire_read(fd, more, 1, RAW_WAIT_MS), ==, 0);
  close(fd);
  cert_ok(CMV->unlisten(lst));
}

/* ---- RFC 6581: IRD and ORD in the control word --------------------------- */

/* An RFC 6581 frame: @key, C=1 and the enhanced bit, Rev 2, PD_Length of
 * the control word (@ird_half, @ord_half) and @len bytes of @pdata.  Its
 * length; @out holds 24 + @len bytes. */
static size_t
mpa_v2_frame(uint8_t *out, const uint8_t key[16], uint16_t ird_half, uint16_t ord_half,
             const char *pdata, size_t len)
{
  memcpy(out, key, 16);
  out[16] = 0x40 | 0x10;
  out[17] = 2;
  out[18] = (uint8_t) ((4 + len) >> 8);
  out[19] = (uint8_t) (4 + len);
  out[20] = (uint8_t) (ird_half >> 8);
  out[21] = (uint8_t) ird_half;
  out[22] = (uint8_t) (ord_half >> 8);
  out[23] = (uint8_t) ord_half;
  memcpy(out + 24, pdata, len);
  return 24 + len;
}

/* The IRD and ORD a connection asks, different from each other and within
 * the record (FALSE, with a skip, when the record allows no such pair). */
static gboolean
v2_ird_ord(cert_t *f, uint32_t *ird, uint32_t *ord)
{
  *ird = cert_min(3, f->caps.max_ird);
  *ord = cert_min(5, f->caps.max_ord);
  if (*ird < 2 || *ord < 2 || *ird == *ord || !interop_require_wire(f)) {
    if (*ird < 2 || *ord < 2 || *ird == *ord)
      g_test_skip("needs an IRD of 2 or more and a different ORD of 2 or more (max_ird, max_ord)");
    return FALSE;
  }
  if (!(f->caps.features & RNICPI_CAP_IRD_ORD_NEGOTIATED)) {
    g_test_skip("needs capability: ird-ord-negotiated");
    return FALSE;
  }
  return TRUE;
}

static void
test_mpa_v2_initiator(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("as MPA Initiator asked for IRD 3 and ORD 5, a provider that negotiates IRD and "
                 "ORD sends an RFC 6581 Request (Rev 2, the enhanced bit) whose control word "
                 "carries IRD 3 in its first half and ORD 5 in its second (14 bits each, big "
                 "endian); to the golden Rev 2 Reply announcing IRD 1 and ORD 2 (echoing A, an "
                 "RDMA Write RTR where offered) it settles ORD at most 1 (the responder's IRD) and "
                 "IRD at least 2 (the responder's ORD)");
  uint32_t ird, ord;
  if (!v2_ird_ord(f, &ird, &ord))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xd9000, 16, NULL);
  mpa_ctl_t ctl;
  int fd = golden_request_in_ctl(f, &s, ird, ord, &ctl);
  if (!ctl.enhanced) {
    g_test_skip("the provider's Request is not enhanced (RFC 6581: Rev 2 and the 0x10 bit): "
                "it negotiates no IRD/ORD on the wire");
    close(fd);
    cert_side_free(&s);
    return;
  }
  g_test_message("control word: IRD half 0x%04x, ORD half 0x%04x", ctl.ird_half, ctl.ord_half);
  g_assert_cmpuint(ctl.ird_half & MPA_CTL_VALUE, ==, ird);
  g_assert_cmpuint(ctl.ord_half & MPA_CTL_VALUE, ==, ord);

  /* RFC 6581 9.2: the Reply echoes A and picks one RTR type offered. */
  uint16_t rep_ird = 1, rep_ord = 2;
  gboolean rtr_read = FALSE;
  if (ctl.ird_half & MPA_CTL_A) {
    rep_ird |= MPA_CTL_A;
    if (ctl.ord_half & MPA_CTL_C)
      rep_ord |= MPA_CTL_C;
    else if (ctl.ord_half & MPA_CTL_D) {
      rep_ord |= MPA_CTL_D;
      rtr_read = TRUE;
    } else {
      g_test_skip("the Request asks for peer-to-peer mode with no RDMA Write or Read RTR");
      close(fd);
      cert_side_free(&s);
      return;
    }
  }
  uint8_t rep[24 + 6];
  wire_write(fd, rep, mpa_v2_frame(rep, wire_key_rep, rep_ird, rep_ord, accept_pdata, 6));
  if (rtr_read) {
    uint8_t u[65536];
    g_autoptr(GByteArray) raw = g_byte_array_new();
    int len = fpdu_read(fd, u, raw, RAW_WAIT_MS);
    g_assert_true(len >= 0 && answer_fence(fd, u, len));
  }
  g_autofree rnicpi_cm_event_t *ev =
    expect_cm(f, RNICPI_CM_ESTABLISHED, s.ctx, "the golden Rev 2 MPA Reply (IRD 1, ORD 2)");
  expect_bytes("the private data of the golden Rev 2 Reply, as ESTABLISHED gives it", ev->pdata,
               ev->pdata_len, (const uint8_t *) accept_pdata, 6);
  g_test_message("ESTABLISHED: IRD %u, ORD %u", ev->ird, ev->ord);
  g_assert_cmpuint(ev->ord, <=, 1);
  g_assert_cmpuint(ev->ird, >=, 2);
  close(fd);
  cert_side_free(&s);
}

static void
test_mpa_v2_responder(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("as MPA Responder to the golden Rev 2 Request announcing IRD 1 and ORD 2 (no "
                 "peer-to-peer mode), accepting with IRD and ORD 4, a provider that negotiates "
                 "IRD and ORD settles ORD at most 1 (the initiator's IRD), reports it in "
                 "ESTABLISHED, and answers Rev 2 with the enhanced bit whose control word's "
                 "ORD (second half) is at most 1 and IRD (first half) at least 1");
  uint32_t ird, ord;
  if (!v2_ird_ord(f, &ird, &ord))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xda000, 16, NULL);
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x9020, &lst);
  rnicpi_addr_t a;
  cert_addr(f, port, &a);
  int fd = interop_tcp_connect(&a.sa);
  g_assert_cmpint(fd, >=, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  uint8_t req[24 + 16];
  /* A=0 B=0 IRD 1, C=0 D=0 ORD 2 */
  wire_write(fd, req, mpa_v2_frame(req, key_req, 0x0001, 0x0002, ulp_pdata, 16));
  g_autofree rnicpi_cm_event_t *creq = wait_request(f, fd, 0x9020);
  expect_bytes("the golden Rev 2 Request's private data (after its control word), as "
               "CONNECT_REQUEST gives it", creq->pdata, creq->pdata_len,
               (const uint8_t *) ulp_pdata, 16);
  rnicpi_conn_param_t cp = { .pdata = accept_pdata, .pdata_len = 6,
                             .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->accept(s.qp, creq->conn_id, &cp));

  uint8_t h[20];
  wire_read_all(fd, h, sizeof(h));
  expect_bytes("the MPA Reply's key (RFC 5044 7.1.1)", h, 16, wire_key_rep, 16);
  uint32_t pd_len = (uint32_t) h[18] << 8 | h[19];
  g_test_message("MPA Reply: flags 0x%02x, Rev %u, PD_Length %u", h[16], h[17], pd_len);
  g_assert_cmphex(h[16] & 0x20, ==, 0); /* R: accepted */
  g_assert_cmpuint(h[17], ==, 2);
  g_assert_cmphex(h[16] & 0x10, ==, 0x10);
  g_assert_cmpuint(pd_len, ==, 4 + 6);
  uint8_t pd[10];
  wire_read_all(fd, pd, sizeof(pd));
  uint16_t rep_ird = (uint16_t) (pd[0] << 8 | pd[1]), rep_ord = (uint16_t) (pd[2] << 8 | pd[3]);
  g_test_message("control word: IRD half 0x%04x, ORD half 0x%04x", rep_ird, rep_ord);
  expect_bytes("the MPA Reply's private data (after its control word)", pd + 4, 6,
               (const uint8_t *) accept_pdata, 6);
  g_assert_cmphex(rep_ird & MPA_CTL_A, ==, 0); /* nothing to echo */
  g_assert_cmpuint(rep_ord & MPA_CTL_VALUE, <=, 1);
  g_assert_cmpuint(rep_ird & MPA_CTL_VALUE, >=, 1);
  g_autofree rnicpi_cm_event_t *est = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s.ctx);
  g_test_message("ESTABLISHED: IRD %u, ORD %u", est->ird, est->ord);
  g_assert_cmpuint(est->ord, <=, 1);
  cert_ok(CMV->unlisten(lst));
  close(fd);
  cert_side_free(&s);
}

void
interop_register_golden(void)
{
  cert_add("/interop/golden/crc32c-vectors", test_crc_vectors);
  cert_add("/interop/golden/mpa-request", test_mpa_request);
  cert_add("/interop/golden/send-fpdu", test_send_fpdu);
  cert_add("/interop/golden/mpa-reply", test_mpa_reply);
  cert_add("/interop/golden/mpa-v2-initiator", test_mpa_v2_initiator);
  cert_add("/interop/golden/mpa-v2-responder", test_mpa_v2_responder);
  cert_add("/interop/golden/mpa-rejected", test_mpa_rejected);
  cert_add("/interop/golden/mpa-reject", test_mpa_reject);
  cert_add("/interop/golden/untagged-send", test_untagged_send);
  cert_add("/interop/golden/tagged-write", test_tagged_write);
  cert_add("/interop/golden/read-past-ird", test_read_past_ird);
  g_test_add("/interop/golden/read-ird-zero", cert_t, "zero", cert_setup, test_read_past_ird,
             cert_teardown);
  cert_add("/interop/golden/read-request", test_read_request);
  cert_add("/interop/golden/bad-crc", test_bad_crc);
}
