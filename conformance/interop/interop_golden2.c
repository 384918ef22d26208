/*
 * cert-interop: golden frames that break a rule.  The test plays a raw TCP
 * peer (as interop_golden.c) and feeds the provider FPDUs that an honest
 * peer never sends -- a wrong DDP or RDMAP version, a Send on the wrong
 * queue, an MSN from the future, a Message Offset with a gap, a Read
 * Response that does not answer the Read it claims to -- and MPA Requests
 * and Replies the RFCs forbid.  A correct peer end of the provider's own
 * kind cannot produce these frames, so only here are the receive checks of
 * RFC 5041 7 and RFC 5040 5, 7 seen failing: each must refuse the frame,
 * place none of it, and (when it answers at all) send the Terminate with
 * the RFC's layer, error type and code, copying the offending DDP header
 * exactly when it says it does.
 *
 * The framing helpers are interop_frame.c's, shared with interop_golden.c.
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

static void
raw_fpdu(int fd, const uint8_t *ulpdu, size_t len)
{
  uint8_t out[2 + 1024 + 8];
  g_assert_cmpuint(len, <=, 1024);
  wire_write(fd, out, wire_fpdu_build(ulpdu, len, out));
}

/* One FPDU from the provider (CRC on, checked): the ULPDU's length, or -1
 * when the provider closed first. */
static int
fpdu_read(int fd, uint8_t *ulpdu)
{
  uint8_t lb[2];
  if (wire_read(fd, lb, 2, RAW_WAIT_MS) != 2)
    return -1;
  size_t len = (size_t) lb[0] << 8 | lb[1];
  size_t pad = (4 - (2 + len) % 4) % 4;
  g_autofree uint8_t *all = g_malloc(2 + len + pad + 4);
  memcpy(all, lb, 2);
  g_assert_cmpuint(wire_read(fd, all + 2, len + pad + 4, RAW_WAIT_MS), ==, len + pad + 4);
  uint32_t c = wire_crc32c(all, 2 + len + pad);
  const uint8_t *w = all + 2 + len + pad;
  g_assert_cmphex((uint32_t) w[0] | (uint32_t) w[1] << 8 | (uint32_t) w[2] << 16 |
                    (uint32_t) w[3] << 24, ==, c);
  memcpy(ulpdu, all + 2, len);
  return (int) len;
}


/* The CONNECT_REQUEST of listener @lctx within @ms, or NULL. */
static rnicpi_cm_event_t *
poll_request(cert_t *f, uint64_t lctx, guint ms)
{
  gint64 deadline = g_get_monotonic_time() + (gint64) ms * 1000;
  for (;;) {
    gint64 left = deadline - g_get_monotonic_time();
    rnicpi_cm_event_t *ev = left > 0 ? g_async_queue_timeout_pop(f->cm_q, (guint64) left) : NULL;
    if (ev == NULL)
      return NULL;
    if (ev->type == RNICPI_CM_CONNECT_REQUEST && ev->listen_ctx == lctx)
      return ev;
    f->cm_seen = g_list_append(f->cm_seen, ev);
  }
}

/* The test connects with the golden Request and the provider accepts (it
 * is the MPA Responder, CRC on): the socket, in full operation. */
static int
raw_passive(cert_t *f, cert_side_t *s, uint64_t lctx)
{
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, lctx, &lst);
  rnicpi_addr_t a;
  cert_addr(f, port, &a);
  int fd = interop_tcp_connect(&a.sa);
  g_assert_cmpint(fd, >=, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  wire_write(fd, wire_golden_request, sizeof(wire_golden_request));
  g_autofree rnicpi_cm_event_t *req = poll_request(f, lctx, CERT_TIMEOUT_MS);
  g_assert_nonnull(req);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->accept(s->qp, req->conn_id, &cp));
  uint8_t h[20];
  g_assert_cmpuint(wire_read(fd, h, sizeof(h), RAW_WAIT_MS), ==, sizeof(h));
  g_assert_cmpmem(h, 16, wire_key_rep, 16);
  g_assert_cmphex(h[16] & 0x20, ==, 0);
  g_assert_cmphex(h[16] & 0x40, ==, 0x40); /* C: we asked for CRC, so both ends use it */
  g_assert_cmpuint(h[17], ==, 1);
  g_assert_cmpuint(h[18] << 8 | h[19], ==, 0);
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s->ctx));
  cert_ok(CMV->unlisten(lst));
  return fd;
}

/* The provider connects to the test (it is the MPA Initiator): the socket
 * after its Request, which the test read whole, the Reply not sent. */
static int
raw_request_in(cert_t *f, cert_side_t *s)
{
  struct sockaddr_storage ss;
  cert_self_addr(f, &ss);
  int lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint(lfd, >=, 0);
  socklen_t sl = ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  g_assert_cmpint(bind(lfd, (struct sockaddr *) &ss, sl), ==, 0);
  g_assert_cmpint(listen(lfd, 1), ==, 0);
  g_assert_cmpint(getsockname(lfd, (struct sockaddr *) &ss, &sl), ==, 0);
  rnicpi_addr_t dst;
  memset(&dst, 0, sizeof(dst));
  dst.sa = ss;
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->connect(s->qp, &dst, &cp));
  struct pollfd pf = { .fd = lfd, .events = POLLIN };
  g_assert_cmpint(poll(&pf, 1, RAW_WAIT_MS), ==, 1);
  int fd = accept(lfd, NULL, NULL);
  g_assert_cmpint(fd, >=, 0);
  close(lfd);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  uint8_t h[20 + 512];
  g_assert_cmpuint(wire_read(fd, h, 20, RAW_WAIT_MS), ==, 20);
  uint32_t pd_len = (uint32_t) h[18] << 8 | h[19];
  g_assert_cmpuint(pd_len, <=, 512);
  g_assert_cmpuint(wire_read(fd, h + 20, pd_len, RAW_WAIT_MS), ==, pd_len);
  return fd;
}

/* raw_request_in, answered by a Rev 1 Reply (RFC 6581: a responder without
 * enhanced set-up answers Rev 1), C=1, no private data: no RTR, and the
 * provider may send first (RFC 5044 7.1.2 holds a Responder back until the
 * Initiator's first FPDU).  The socket, in full operation. */
static int
raw_active(cert_t *f, cert_side_t *s)
{
  int fd = raw_request_in(f, s);
  uint8_t rep[20];
  memcpy(rep, wire_key_rep, 16);
  rep[16] = 0x40;
  rep[17] = 1;
  rep[18] = rep[19] = 0;
  wire_write(fd, rep, sizeof(rep));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s->ctx));
  return fd;
}

/* ---- What a refused segment must cause --------------------------------- */

/* The provider refused the segment whose DDP header is @hdr (@hdr_len
 * bytes, from the DDP control byte): it closes the stream, first sending
 * (if anything) the Terminate of RFC 5040 4.8 with @layer/@etype/@code --
 * untagged, QN 2, MSN 1, MO 0, opcode 7 -- whose copy of the DDP header,
 * when its D bit says there is one, is that header byte for byte. */
static void
expect_terminate(int fd, uint8_t layer, uint8_t etype, uint8_t code, const uint8_t *hdr,
                 size_t hdr_len)
{
  uint8_t u[65536];
  int len = fpdu_read(fd, u);
  if (len < 0) {
    g_test_message("the provider closed the connection without a Terminate");
    return;
  }
  g_test_message("the provider answered with an FPDU of %d bytes: opcode %u, Terminate control "
                 "%02x %02x %02x", len, u[1] & 0x0f, len >= 21 ? u[18] : 0, len >= 21 ? u[19] : 0,
                 len >= 21 ? u[20] : 0);
  g_assert_cmpint(len, >=, 22);
  g_assert_cmphex(u[0], ==, 0x41);          /* untagged, L=1, DV=1 */
  g_assert_cmphex(u[1], ==, 0x47);          /* RV=1, opcode 7: Terminate */
  g_assert_cmpuint(wire_get32(u + 6), ==, 2);    /* QN 2 */
  g_assert_cmpuint(wire_get32(u + 10), ==, 1);   /* MSN 1: the first Terminate */
  g_assert_cmpuint(wire_get32(u + 14), ==, 0);   /* MO 0 */
  if (u[18] != (uint8_t) (layer << 4 | etype) || u[19] != code)
    g_test_message("Terminate layer %u, error type %u, code 0x%02x; the RFC's is layer %u, "
                   "error type %u, code 0x%02x", u[18] >> 4, u[18] & 0x0f, u[19], layer, etype, code);
  g_assert_cmphex(u[18], ==, (uint8_t) (layer << 4 | etype));
  g_assert_cmphex(u[19], ==, code);
  if (hdr != NULL && (u[20] & 0x40)) {
    /* D=1: the DDP Segment Length (2 bytes), then the header copy. */
    g_assert_cmpint(len, >=, 22 + 2 + (int) hdr_len);
    if (memcmp(u + 24, hdr, hdr_len) != 0) {
      g_autofree char *g = interop_hex(u + 24, hdr_len);
      g_autofree char *w = interop_hex(hdr, hdr_len);
      g_test_message("the Terminate's copy of the DDP header is %s; the segment's was %s", g, w);
    }
    g_assert_cmpmem(u + 24, hdr_len, hdr, hdr_len);
  }
  uint8_t rest[1];
  g_assert_cmpuint(wire_read(fd, rest, 1, RAW_WAIT_MS), ==, 0);
}

/* The receive @id was not completed successfully (flushed, or in error, or
 * not at all), and its 64-byte buffer holds nothing past @kept bytes. */
static void
expect_recv_refused(cert_side_t *s, const cert_buf_t *b, uint64_t id, size_t kept)
{
  rnicpi_wc_t wc;
  if (cert_poll(s->rcq, &wc, 1, 500) == 1) {
    g_test_message("the receive completed with status %d, %u bytes", wc.status, wc.byte_len);
    g_assert_cmphex(wc.wr_id, ==, id);
    g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  }
  for (size_t i = kept; i < 64; i++) {
    if (b->data[i] != 0)
      g_test_message("byte %zu of the receive buffer is 0x%02x: the refused segment was placed",
                     i, b->data[i]);
    g_assert_cmphex(b->data[i], ==, 0);
  }
  cert_buf_check_guards(b);
  cert_assert_cq_quiet(s->rcq);
}

/* RFC 5041 4.3 untagged header + RFC 5040 4.1 control, in @u. */
static void
untagged_hdr(uint8_t *u, uint8_t ddp_ctrl, uint8_t rdmap_ctrl, uint32_t qn, uint32_t msn, uint32_t mo)
{
  u[0] = ddp_ctrl;
  u[1] = rdmap_ctrl;
  wire_put32(u + 2, 0);
  wire_put32(u + 6, qn);
  wire_put32(u + 10, msn);
  wire_put32(u + 14, mo);
}

/* One Send segment of "Hello, iWARP!" with the header fields given sent to
 * a provider with one 64-byte receive posted: refused with @layer/@etype/
 * @code, nothing placed. */
static void
send_refused(cert_t *f, uint64_t ctx, uint8_t ddp_ctrl, uint8_t rdmap_ctrl, uint32_t qn,
             uint32_t msn, uint32_t mo, uint8_t layer, uint8_t etype, uint8_t code)
{
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, ctx, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_post_recv(s.qp, &b, 0, 64, ctx | 0x7e);
  int fd = raw_passive(f, &s, ctx | 0x1d);
  uint8_t u[18 + 13];
  untagged_hdr(u, ddp_ctrl, rdmap_ctrl, qn, msn, mo);
  memcpy(u + 18, wire_hello, 13);
  raw_fpdu(fd, u, sizeof(u));
  /* A segment read as tagged has its 14-byte header copied. */
  expect_terminate(fd, layer, etype, code, u, (ddp_ctrl & 0x80) ? 14 : 18);
  expect_recv_refused(&s, &b, ctx | 0x7e, 0);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

/* ---- Tests: untagged Sends -------------------------------------------- */

static void
test_ddp_version(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send with DDP version 0 (DV=00) is not placed: the receive does not "
                 "complete successfully, and the Terminate is DDP / untagged buffer / 0x06 "
                 "(invalid DDP version)");
  send_refused(f, 0xe1000, 0x40, 0x43, 0, 1, 0, 1, 2, 0x06);
}

static void
test_rdmap_version(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send with RDMAP version 0 (RV=00) is not delivered: the Terminate is RDMAP "
                 "/ remote operation / 0x05 (invalid RDMAP version)");
  send_refused(f, 0xe2000, 0x41, 0x03, 0, 1, 0, 0, 2, 0x05);
}

static void
test_send_tagged(cert_t *f, gconstpointer data)
{
  (void) data;
  /* The tagged header is 4 bytes shorter: the 18 bytes read as a tagged
   * header plus payload still name opcode 3 with T=1. */
  g_test_summary("a segment with T=1 (tagged) and the Send opcode is refused: Send is an untagged "
                 "message; the Terminate is RDMAP / remote operation / 0x06 (unexpected opcode)");
  send_refused(f, 0xe3000, 0xc1, 0x43, 0, 1, 0, 0, 2, 0x06);
}

static void
test_send_wrong_qn(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send on untagged queue 1 (the Read Request queue) instead of queue 0 is "
                 "refused: the Terminate is DDP / untagged buffer / 0x01 (invalid QN)");
  send_refused(f, 0xe4000, 0x41, 0x43, 1, 1, 0, 1, 2, 0x01);
}

static void
test_send_msn_ahead(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the first Send of a connection with MSN 2 (the next expected is 1) is not "
                 "placed: the Terminate is DDP / untagged buffer / 0x03 (MSN out of range)");
  send_refused(f, 0xe5000, 0x41, 0x43, 0, 2, 0, 1, 2, 0x03);
}

static void
test_send_half_flushed(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the first segment (L=0) of a two-segment Send arrives into the first of two "
                 "posted receives, then the consumer moves the queue pair to ERROR before the "
                 "rest comes: both receives complete once, flushed (RNICPI_WC_WR_FLUSH_ERR), in "
                 "order, the half-filled one included");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xeb000, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 128, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_post_recv(s.qp, &b, 0, 64, 0xeb01);
  cert_post_recv(s.qp, &b, 64, 64, 0xeb02);
  int fd = raw_passive(f, &s, 0xeb1d);
  uint8_t u[18 + 13];
  untagged_hdr(u, 0x01, 0x43, 0, 1, 0); /* T=0 L=0 DV=01; RV=01 Send */
  memcpy(u + 18, wire_hello, 13);
  raw_fpdu(fd, u, sizeof(u));
  /* The segment is taken, the message is not whole: nothing completes. */
  rnicpi_wc_t wc;
  g_assert_cmpint(cert_poll(s.rcq, &wc, 1, 300), ==, 0);
  cert_ok(QUE->qp_to_error(s.qp));
  uint64_t ids[2] = { 0xeb01, 0xeb02 };
  for (int i = 0; i < 2; i++) {
    wc = cert_wc(s.rcq);
    g_assert_cmphex(wc.wr_id, ==, ids[i]);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_WR_FLUSH_ERR);
  }
  cert_assert_cq_quiet(s.rcq);
  /* Nothing of the second receive's buffer was touched. */
  for (size_t i = 64; i < 128; i++)
    g_assert_cmphex(b.data[i], ==, 0);
  cert_buf_check_guards(&b);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_send_first_mo(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a one-segment Send whose Message Offset is 4, not 0, is not placed: the "
                 "Terminate is DDP / untagged buffer / 0x04 (invalid MO)");
  send_refused(f, 0xe6000, 0x41, 0x43, 0, 1, 4, 1, 2, 0x04);
}

static void
test_send_mo_gap(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send of two segments whose second segment's Message Offset leaves a 4-byte "
                 "gap (17, not 13) is refused at that segment: the receive does not complete "
                 "successfully, nothing of the second segment lands, and the Terminate is DDP / "
                 "untagged buffer / 0x04 (invalid MO) copying the second segment's header");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xe7000, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_post_recv(s.qp, &b, 0, 64, 0xe707e);
  int fd = raw_passive(f, &s, 0xe701d);
  uint8_t u[18 + 13];
  untagged_hdr(u, 0x01, 0x43, 0, 1, 0); /* L=0: more follows */
  memcpy(u + 18, wire_hello, 13);
  raw_fpdu(fd, u, sizeof(u));
  untagged_hdr(u, 0x41, 0x43, 0, 1, 17);
  raw_fpdu(fd, u, sizeof(u));
  expect_terminate(fd, 1, 2, 0x04, u, 18);
  /* The first segment was valid and may have been placed (13 bytes). */
  expect_recv_refused(&s, &b, 0xe707e, 13);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

/* ---- Tests: Read Responses -------------------------------------------- */

#define RD_LEN 64u
#define RD_SRC_STAG 0x22222200u
#define RD_SRC_TO 0x3000u

/* The provider posts an RDMA Read of RD_LEN bytes into @sink at offset 64
 * from the raw peer's RD_SRC_STAG/RD_SRC_TO: its Read Request is checked
 * (RFC 5040 4.4: untagged, L=1, opcode 1, QN 1, MSN 1, MO 0, the sink's
 * STag and TO, the size, the source STag and TO) and left in @req. */
static void
read_out(cert_side_t *s, int fd, const cert_buf_t *sink, uint64_t id, uint8_t *req)
{
  cert_post_send(s->qp, RNICPI_WR_RDMA_READ, sink, 64, RD_LEN, id, RNICPI_WR_SIGNALED, RD_SRC_TO,
                 RD_SRC_STAG);
  int len = fpdu_read(fd, req);
  g_assert_cmpint(len, ==, 18 + 28);
  g_assert_cmphex(req[0], ==, 0x41);
  g_assert_cmphex(req[1], ==, 0x41);
  g_assert_cmpuint(wire_get32(req + 6), ==, 1);
  g_assert_cmpuint(wire_get32(req + 10), ==, 1);
  g_assert_cmpuint(wire_get32(req + 14), ==, 0);
  g_assert_cmphex(wire_get32(req + 18), ==, (uint32_t) sink->mr->rkey);
  g_assert_cmphex(wire_get64(req + 22), ==, cert_raddr(sink, 64));
  g_assert_cmpuint(wire_get32(req + 30), ==, RD_LEN);
  g_assert_cmphex(wire_get32(req + 34), ==, RD_SRC_STAG);
  g_assert_cmphex(wire_get64(req + 38), ==, RD_SRC_TO);
}

/* A Read Response segment (RFC 5040 4.3: tagged, opcode 2) of @len
 * pattern bytes to @stag/@to, L as @last. */
static void
read_resp(int fd, uint32_t stag, uint64_t to, uint32_t len, gboolean last, uint8_t *hdr)
{
  uint8_t u[14 + 256];
  g_assert_cmpuint(len, <=, 256);
  u[0] = last ? 0xc1 : 0x81;
  u[1] = 0x42;
  wire_put32(u + 2, stag);
  wire_put64(u + 6, to);
  for (uint32_t i = 0; i < len; i++)
    u[14 + i] = interop_pattern(0x55, i);
  memcpy(hdr, u, 14);
  raw_fpdu(fd, u, 14 + len);
}

/* The Read @id completed, and not successfully; nothing landed in @b
 * outside [@from, @to). */
static void
expect_read_failed(cert_side_t *s, const cert_buf_t *b, uint64_t id, size_t from, size_t to)
{
  rnicpi_wc_t wc = cert_wc(s->scq);
  g_test_message("the RDMA Read completed with status %d", wc.status);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  for (size_t i = 0; i < b->len; i++) {
    if ((i < from || i >= to) && b->data[i] != 0)
      g_test_message("byte %zu of the region is 0x%02x: a refused Read Response was placed "
                     "there", i, b->data[i]);
    g_assert_true((i >= from && i < to) || b->data[i] == 0);
  }
  cert_buf_check_guards(b);
}

/* The four Read Response cases: which rule the raw peer's answer breaks. */
typedef enum { RR_GOOD, RR_OTHER_STAG, RR_WRONG_TO, RR_TOO_LONG, RR_SHORT } rr_case_t;

static void
read_case(cert_t *f, uint64_t ctx, rr_case_t c)
{
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, ctx, 16, NULL);
  /* The sink and a second region the peer may write to: a Response that
   * names the second is still not for the Read. */
  cert_buf_t sink, other;
  cert_buf_new(s.pd, &sink, 256, cert_sink_access(f));
  cert_buf_new(s.pd, &other, 256,
               RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE);
  int fd = raw_active(f, &s);
  uint8_t req[65536], hdr[14];
  read_out(&s, fd, &sink, ctx | 0x5d, req);
  uint32_t stag = wire_get32(req + 18);
  uint64_t to = wire_get64(req + 22);
  switch (c) {
  case RR_GOOD: {
    read_resp(fd, stag, to, RD_LEN, TRUE, hdr);
    rnicpi_wc_t wc = cert_wc(s.scq);
    g_assert_cmphex(wc.wr_id, ==, ctx | 0x5d);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
    for (size_t i = 0; i < 256; i++) {
      uint8_t want = i >= 64 && i < 64 + RD_LEN ? interop_pattern(0x55, i - 64) : 0;
      g_assert_cmphex(sink.data[i], ==, want);
    }
    cert_buf_check_guards(&sink);
    break;
  }
  case RR_OTHER_STAG:
    read_resp(fd, (uint32_t) other.mr->rkey, cert_raddr(&other, 64), RD_LEN, TRUE, hdr);
    expect_terminate(fd, 1, 1, 0x00, hdr, 14);
    expect_read_failed(&s, &sink, ctx | 0x5d, 0, 0);
    break; /* (the other region untouched: checked below) */
  case RR_WRONG_TO:
    read_resp(fd, stag, to + 8, RD_LEN, TRUE, hdr);
    expect_terminate(fd, 1, 1, 0x01, hdr, 14);
    expect_read_failed(&s, &sink, ctx | 0x5d, 0, 0);
    break;
  case RR_TOO_LONG:
    /* More than the Read asked for: the RFC 5041 bounds of the sink are
     * the Read's, not its region's. */
    read_resp(fd, stag, to, RD_LEN + 16, TRUE, hdr);
    expect_terminate(fd, 1, 1, 0x01, hdr, 14);
    expect_read_failed(&s, &sink, ctx | 0x5d, 64, 64 + RD_LEN);
    break;
  case RR_SHORT:
    /* The last segment ends the Response 16 bytes early. */
    read_resp(fd, stag, to, RD_LEN - 16, TRUE, hdr);
    {
      uint8_t u[65536];
      int len = fpdu_read(fd, u);
      if (len >= 21)
        g_test_message("the provider answered a short Read Response with opcode %u, Terminate "
                       "control %02x %02x", u[1] & 0x0f, u[18], u[19]);
      g_assert_true(len < 0 || (len >= 22 && (u[1] & 0x0f) == 7));
    }
    expect_read_failed(&s, &sink, ctx | 0x5d, 64, 64 + RD_LEN);
    break;
  }
  for (size_t i = 0; i < 256; i++)
    g_assert_cmphex(other.data[i], ==, 0);
  cert_buf_check_guards(&other);
  cert_assert_cq_quiet(s.scq);
  close(fd);
  cert_buf_free(&other);
  cert_buf_free(&sink);
  cert_side_free(&s);
}

static void
test_read_response(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the provider's RDMA Read to the raw peer goes out as the RFC's Read Request "
                 "(QN 1, MSN 1, MO 0, its sink STag and TO, the size, the source STag and TO), and "
                 "the golden Read Response to that STag and TO places the bytes there and "
                 "completes the Read successfully");
  read_case(f, 0xe8000, RR_GOOD);
}

static void
test_read_response_stag(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Read Response naming another region of the provider (valid, remote write "
                 "allowed) instead of the Read's sink is refused: the Read does not complete "
                 "successfully, neither region changes, and the Terminate is DDP / tagged buffer "
                 "/ 0x00 (invalid STag)");
  read_case(f, 0xe9000, RR_OTHER_STAG);
}

static void
test_read_response_to(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Read Response whose Tagged Offset is 8 bytes past the sink TO the Read "
                 "Request gave is refused: the Read does not complete successfully, nothing "
                 "lands, and the Terminate is DDP / tagged buffer / 0x01 (base or bounds)");
  read_case(f, 0xea000, RR_WRONG_TO);
}

static void
test_read_response_long(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Read Response 16 bytes longer than the Read asked for is refused: the Read "
                 "does not complete successfully, nothing lands outside the Read's sink, and the "
                 "Terminate is DDP / tagged buffer / 0x01 (base or bounds)");
  read_case(f, 0xeb000, RR_TOO_LONG);
}

static void
test_read_response_short(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Read Response whose last segment (L=1) ends 16 bytes short of the size the "
                 "Read asked for does not complete the Read successfully: the provider "
                 "terminates the stream");
  read_case(f, 0xec000, RR_SHORT);
}

static void
test_read_response_unasked(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Read Response when no RDMA Read is outstanding is refused, nothing placed: "
                 "the Terminate is RDMAP / remote operation / 0x06 (unexpected opcode) or a "
                 "DDP tagged buffer error");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xed000, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 256, cert_sink_access(f) | RNICPI_ACCESS_REMOTE_WRITE);
  int fd = raw_passive(f, &s, 0xed01d);
  uint8_t hdr[14];
  read_resp(fd, (uint32_t) b.mr->rkey, cert_raddr(&b, 0), 32, TRUE, hdr);
  uint8_t u[65536];
  int len = fpdu_read(fd, u);
  if (len >= 0) {
    g_test_message("Terminate control %02x %02x", len >= 20 ? u[18] : 0, len >= 20 ? u[19] : 0);
    g_assert_cmpint(len, >=, 22);
    g_assert_cmphex(u[1], ==, 0x47);
    g_assert_true((u[18] == 0x02 && u[19] == 0x06) || u[18] == 0x11);
  }
  for (size_t i = 0; i < 256; i++)
    g_assert_cmphex(b.data[i], ==, 0);
  cert_assert_cq_quiet(s.scq);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

/* ---- Tests: the provider's Sends with flags ------------------------------ */

/* The provider (connected to the test) posts a Send of "Hello, iWARP!" as
 * @wr: its FPDU is the first Send's (RFC 5041 4.3: untagged, L=1, QN 0,
 * MSN 1, MO 0) with RDMAP control @rdmap and Invalidate STag @inv. */
static void
send_out(cert_t *f, uint64_t ctx, rnicpi_wr_opcode_t op, uint32_t flags, uint64_t inv,
         uint8_t rdmap, uint32_t want_inv)
{
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, ctx, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  memcpy(b.data, wire_hello, 13);
  int fd = raw_active(f, &s);
  rnicpi_sge_t sg = cert_sge(&b, 0, 13);
  rnicpi_send_wr_t wr = { .wr_id = ctx | 0x5e, .opcode = op, .flags = RNICPI_WR_SIGNALED | flags,
                          .sg_list = &sg, .num_sge = 1, .invalidate_rkey = inv,
                          .rkey = 0x0badbad0 };
  rnicpi_status_t st = DAT->post_send(s.qp, &wr);
  if (st == RNICPI_ENOTSUP) {
    g_test_skip("needs capability: Send with Invalidate");
  } else {
    cert_ok(st);
    uint8_t u[65536];
    int len = fpdu_read(fd, u);
    g_assert_cmpint(len, ==, 18 + 13);
    if (u[1] != rdmap)
      g_test_message("RDMAP control 0x%02x (opcode %u); the RFC's is 0x%02x (opcode %u)", u[1],
                     u[1] & 0x0f, rdmap, rdmap & 0x0f);
    g_assert_cmphex(u[0], ==, 0x41);
    g_assert_cmphex(u[1], ==, rdmap);
    g_assert_cmphex(wire_get32(u + 2), ==, want_inv);
    g_assert_cmpuint(wire_get32(u + 6), ==, 0);
    g_assert_cmpuint(wire_get32(u + 10), ==, 1);
    g_assert_cmpuint(wire_get32(u + 14), ==, 0);
    g_assert_cmpmem(u + 18, 13, wire_hello, 13);
  }
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_send_se_fpdu(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send posted with the Solicited flag goes out as RDMAP opcode 5, Send with "
                 "Solicited Event (RV=1: control byte 0x45), in an otherwise plain first Send "
                 "FPDU");
  send_out(f, 0xe6300, RNICPI_WR_SEND, RNICPI_WR_SOLICITED, 0, 0x45, 0);
}

static void
test_send_inv_fpdu(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send with Invalidate of key 0x12345678 goes out as RDMAP opcode 4 (control "
                 "byte 0x44) carrying that STag in the Invalidate STag field (RFC 5040 4.1), not "
                 "the work request's rkey; with the Solicited flag as opcode 6 (0x46)");
  send_out(f, 0xe6400, RNICPI_WR_SEND_INV, 0, 0x12345678, 0x44, 0x12345678);
  if (!g_test_failed())
    send_out(f, 0xe6500, RNICPI_WR_SEND_INV, RNICPI_WR_SOLICITED, 0x12345678, 0x46, 0x12345678);
}

/* ---- Tests: malformed Read Requests ---------------------------------- */

/* A golden Read Request (RFC 5040 4.4: QN 1, MSN 1, MO 0, 64 bytes of the
 * provider's readable region to sink STag 0x11111100 TO 0x2000) with DDP
 * control @ctrl and @extra bytes after its header: refused, no Read
 * Response, the stream terminated (any Terminate) or closed. */
static void
read_request_refused(cert_t *f, uint64_t ctx, uint8_t ctrl, uint32_t extra)
{
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, ctx, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 256, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ);
  cert_buf_fill(&b, 0x44);
  int fd = raw_passive(f, &s, ctx | 0x1d);
  uint8_t u[46 + 8];
  memset(u, 0, sizeof(u));
  untagged_hdr(u, ctrl, 0x41, 1, 1, 0);
  wire_put32(u + 18, 0x11111100);
  wire_put64(u + 22, 0x2000);
  wire_put32(u + 30, 64);
  wire_put32(u + 34, (uint32_t) b.mr->rkey);
  wire_put64(u + 38, cert_raddr(&b, 8));
  g_assert_cmpuint(extra, <=, 8);
  raw_fpdu(fd, u, 46 + extra);
  uint8_t r[65536];
  int len = fpdu_read(fd, r);
  if (len >= 2)
    g_test_message("the provider answered with an FPDU of %d bytes, opcode %u", len, r[1] & 0x0f);
  else
    g_test_message("the provider closed the connection");
  g_assert_true(len < 0 || (len >= 22 && r[1] == 0x47));
  if (len >= 22) {
    /* The framing and its CRC were right: the fault is DDP's or RDMAP's,
     * never the LLP's (layer 2). */
    g_test_message("Terminate layer %u, error type %u, code 0x%02x", r[18] >> 4, r[18] & 0x0f,
                   r[19]);
    g_assert_cmpuint(r[18] >> 4, <, 2);
  }
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_read_request_not_last(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read Request whose one segment has L=0 (a Read Request is a single "
                 "segment, RFC 5040 4.4) is refused: no Read Response, the provider terminates "
                 "the stream (a DDP or RDMAP error, not an LLP one) or closes it");
  read_request_refused(f, 0xe6100, 0x01, 0);
}

static void
test_read_request_length(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read Request with 4 bytes after its 28-byte header (its length is "
                 "fixed, RFC 5040 4.4) is refused: no Read Response, the provider terminates the "
                 "stream (a DDP or RDMAP error: the framing and CRC were right) or closes it");
  read_request_refused(f, 0xe6200, 0x41, 4);
}

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
  gint64 deadline = g_get_monotonic_time() + (gint64) CERT_TIMEOUT_MS * 1000;
  while (ev == NULL && g_get_monotonic_time() < deadline) {
    ev = poll_request(f, lctx, 50);
    struct pollfd pf = { .fd = fd, .events = POLLIN };
    if (ev == NULL && poll(&pf, 1, 0) == 1)
      break;
  }
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
  gint64 deadline = g_get_monotonic_time() + (gint64) CERT_TIMEOUT_MS * 1000;
  while (ev == NULL && g_get_monotonic_time() < deadline) {
    ev = g_async_queue_timeout_pop(f->cm_q, 50000);
    if (ev != NULL && ev->qp_ctx != s.ctx) {
      f->cm_seen = g_list_append(f->cm_seen, ev);
      ev = NULL;
    }
  }
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
    untagged_hdr(u, 0x41, 0x43, 1, 1, 0);
    for (uint32_t i = 0; i < TERM_SEND_PAYLOAD; i++)
      u[18 + i] = interop_pattern(0x34, i);
    raw_fpdu(t->fd, u, sizeof(u));
    t->seg_len = sizeof(u);
    t->layer = 1, t->etype = 2, t->code = 0x01;
  } else {
    cert_buf_new(t->s.pd, &t->b, 256, cert_sink_access(f));
    t->fd = raw_active(f, &t->s);
    uint8_t req[65536], hdr[14];
    read_out(&t->s, t->fd, &t->b, ctx | 0x5d, req);
    read_resp(t->fd, wire_get32(req + 18), wire_get64(req + 22), RD_LEN + 16, TRUE, hdr);
    t->seg_len = 14 + RD_LEN + 16;
    t->layer = 1, t->etype = 1, t->code = 0x01;
  }
  t->len = fpdu_read(t->fd, t->u);
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
  gint64 deadline = g_get_monotonic_time() + (gint64) CERT_TIMEOUT_MS * 1000;
  for (;;) {
    gint64 left = deadline - g_get_monotonic_time();
    rnicpi_async_event_t *ev = left > 0 ? g_async_queue_timeout_pop(f->async_q, (guint64) left)
                                        : NULL;
    if (ev == NULL)
      return NULL;
    if (ev->ctx == ctx &&
        (ev->type == RNICPI_ASYNC_QP_FATAL || ev->type == RNICPI_ASYNC_QP_ACCESS_ERR))
      return ev;
    f->async_seen = g_list_append(f->async_seen, ev);
  }
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
                 "Response completes the Read successfully with every byte, the FIN follows and "
                 "the queue pair gets DISCONNECTED");
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xf5000, 16, NULL);
  cert_buf_t sink;
  cert_buf_new(s.pd, &sink, 256, cert_sink_access(f));
  int fd = raw_active(f, &s);
  uint8_t req[65536], hdr[14];
  read_out(&s, fd, &sink, 0xf505d, req);
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
  read_resp(fd, wire_get32(req + 18), wire_get64(req + 22), RD_LEN, TRUE, hdr);
  rnicpi_wc_t wc = cert_wc(s.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xf505d);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  for (size_t i = 0; i < 256; i++) {
    uint8_t want = i >= 64 && i < 64 + RD_LEN ? interop_pattern(0x55, i - 64) : 0;
    g_assert_cmphex(sink.data[i], ==, want);
  }
  /* Now the FIN, and nothing before it. */
  uint8_t rest[1];
  g_assert_cmpuint(wire_read(fd, rest, 1, RAW_WAIT_MS), ==, 0);
  close(fd);
  g_free(cert_wait_cm(f, RNICPI_CM_DISCONNECTED, s.ctx));
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, s.ctx);
  cert_assert_cq_quiet(s.scq);
  cert_buf_check_guards(&sink);
  cert_buf_free(&sink);
  cert_side_free(&s);
}

void
interop_register_golden2(void)
{
  cert_add("/interop/golden/bad-ddp-version", test_ddp_version);
  cert_add("/interop/golden/bad-rdmap-version", test_rdmap_version);
  cert_add("/interop/golden/bad-send-tagged", test_send_tagged);
  cert_add("/interop/golden/bad-send-qn", test_send_wrong_qn);
  cert_add("/interop/golden/bad-send-msn", test_send_msn_ahead);
  cert_add("/interop/golden/send-half-flushed", test_send_half_flushed);
  cert_add("/interop/golden/bad-send-first-mo", test_send_first_mo);
  cert_add("/interop/golden/bad-send-mo-gap", test_send_mo_gap);
  cert_add("/interop/golden/read-response", test_read_response);
  cert_add("/interop/golden/bad-read-response-stag", test_read_response_stag);
  cert_add("/interop/golden/bad-read-response-to", test_read_response_to);
  cert_add("/interop/golden/bad-read-response-long", test_read_response_long);
  cert_add("/interop/golden/bad-read-response-short", test_read_response_short);
  cert_add("/interop/golden/bad-read-response-unasked", test_read_response_unasked);
  cert_add("/interop/golden/send-se-fpdu", test_send_se_fpdu);
  cert_add("/interop/golden/send-inv-fpdu", test_send_inv_fpdu);
  cert_add("/interop/golden/bad-read-request-not-last", test_read_request_not_last);
  cert_add("/interop/golden/bad-read-request-length", test_read_request_length);
  cert_add("/interop/golden/bad-mpa-pdata-length", test_mpa_pdata_too_long);
  cert_add("/interop/golden/bad-mpa-key", test_mpa_key);
  cert_add("/interop/golden/bad-mpa-revision", test_mpa_revision);
  cert_add("/interop/golden/bad-mpa-reply-revision", test_mpa_reply_revision);
  cert_add("/interop/golden/mpa-markers-refused", test_mpa_markers);
  cert_add("/interop/golden/terminate-segment-length", test_term_seg_len);
  cert_add("/interop/golden/terminate-async-detail", test_term_async_detail);
  cert_add("/interop/golden/disconnect-read-outstanding", test_disconnect_read_outstanding);
}
