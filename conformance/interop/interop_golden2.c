/*
 * cert-interop: golden frames that break a rule.  The test plays a raw TCP
 * peer (as interop_golden.c) and feeds the provider FPDUs that an honest
 * peer never sends -- a wrong DDP or RDMAP version, a Send on the wrong
 * queue, an MSN from the future, a Message Offset with a gap, a Read
 * Response that does not answer the Read it claims to (MPA Requests and
 * Replies the RFCs forbid are interop_golden_mpa.c's).  A correct peer end
 * of the provider's own kind cannot produce these frames, so only here are
 * the receive checks of RFC 5041 7 and RFC 5040 5, 7 seen failing: each
 * must refuse the frame, place none of it, and (when it answers at all)
 * send the Terminate with the RFC's layer, error type and code, copying the
 * offending DDP header exactly when it says it does.
 *
 * The framing helpers are interop_frame.c's, shared with interop_golden.c;
 * the raw peer is interop_raw.c's.
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
  int len = raw_fpdu_read(fd, u);
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

/* One Send segment of "Hello, iWARP!" with the header fields of a case
 * sent to a provider with one 64-byte receive posted: refused with the
 * case's Terminate, nothing placed. */
typedef struct {
  const char *path, *summary;
  uint64_t ctx;
  uint8_t ddp_ctrl, rdmap_ctrl;
  uint32_t qn, msn, mo;
  uint8_t layer, etype, code; /* the Terminate's */
} send_case_t;

/* ---- Tests: untagged Sends -------------------------------------------- */

static const send_case_t send_cases[] = {
  { "/interop/golden/bad-ddp-version",
    "a Send with DDP version 0 (DV=00) is not placed: the receive does not "
    "complete successfully, and the Terminate is DDP / untagged buffer / 0x06 "
    "(invalid DDP version)",
    0xe1000, 0x40, 0x43, 0, 1, 0, 1, 2, 0x06 },
  { "/interop/golden/bad-rdmap-version",
    "a Send with RDMAP version 0 (RV=00) is not delivered: the Terminate is RDMAP "
    "/ remote operation / 0x05 (invalid RDMAP version)",
    0xe2000, 0x41, 0x03, 0, 1, 0, 0, 2, 0x05 },
  /* The tagged header is 4 bytes shorter: the 18 bytes read as a tagged
   * header plus payload still name opcode 3 with T=1. */
  { "/interop/golden/bad-send-tagged",
    "a segment with T=1 (tagged) and the Send opcode is refused: Send is an untagged "
    "message; the Terminate is RDMAP / remote operation / 0x06 (unexpected opcode)",
    0xe3000, 0xc1, 0x43, 0, 1, 0, 0, 2, 0x06 },
  { "/interop/golden/bad-send-qn",
    "a Send on untagged queue 1 (the Read Request queue) instead of queue 0 is "
    "refused: the Terminate is DDP / untagged buffer / 0x01 (invalid QN)",
    0xe4000, 0x41, 0x43, 1, 1, 0, 1, 2, 0x01 },
  { "/interop/golden/bad-send-msn",
    "the first Send of a connection with MSN 2 (the next expected is 1) is not "
    "placed: the Terminate is DDP / untagged buffer / 0x03 (MSN out of range)",
    0xe5000, 0x41, 0x43, 0, 2, 0, 1, 2, 0x03 },
  { "/interop/golden/bad-send-first-mo",
    "a one-segment Send whose Message Offset is 4, not 0, is not placed: the "
    "Terminate is DDP / untagged buffer / 0x04 (invalid MO)",
    0xe6000, 0x41, 0x43, 0, 1, 4, 1, 2, 0x04 },
};

static void
test_send_refused(cert_t *f, gconstpointer data)
{
  const send_case_t *c = data;
  g_test_summary(c->summary);
  if (!interop_require_wire(f))
    return;
  cert_side_t s;
  cert_side_new(f, &s, c->ctx, 16, NULL);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_post_recv(s.qp, &b, 0, 64, c->ctx | 0x7e);
  int fd = raw_passive(f, &s, c->ctx | 0x1d);
  uint8_t u[18 + 13];
  raw_untagged_hdr(u, c->ddp_ctrl, c->rdmap_ctrl, c->qn, c->msn, c->mo);
  memcpy(u + 18, wire_hello, 13);
  raw_fpdu(fd, u, sizeof(u));
  /* A segment read as tagged has its 14-byte header copied. */
  expect_terminate(fd, c->layer, c->etype, c->code, u, (c->ddp_ctrl & 0x80) ? 14 : 18);
  expect_recv_refused(&s, &b, c->ctx | 0x7e, 0);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
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
  raw_untagged_hdr(u, 0x01, 0x43, 0, 1, 0); /* T=0 L=0 DV=01; RV=01 Send */
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
  raw_untagged_hdr(u, 0x01, 0x43, 0, 1, 0); /* L=0: more follows */
  memcpy(u + 18, wire_hello, 13);
  raw_fpdu(fd, u, sizeof(u));
  raw_untagged_hdr(u, 0x41, 0x43, 0, 1, 17);
  raw_fpdu(fd, u, sizeof(u));
  expect_terminate(fd, 1, 2, 0x04, u, 18);
  /* The first segment was valid and may have been placed (13 bytes). */
  expect_recv_refused(&s, &b, 0xe707e, 13);
  close(fd);
  cert_buf_free(&b);
  cert_side_free(&s);
}

/* ---- Tests: Read Responses -------------------------------------------- */


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

/* The Read Response cases: which rule the raw peer's answer breaks. */
typedef enum { RR_GOOD, RR_OTHER_STAG, RR_WRONG_TO, RR_TOO_LONG, RR_SHORT } rr_kind_t;

typedef struct {
  const char *path, *summary;
  uint64_t ctx;
  rr_kind_t kind;
} rr_case_t;

static const rr_case_t rr_cases[] = {
  { "/interop/golden/read-response",
    "the provider's RDMA Read to the raw peer goes out as the RFC's Read Request "
    "(QN 1, MSN 1, MO 0, its sink STag and TO, the size, the source STag and TO), and "
    "the golden Read Response to that STag and TO places the bytes there and "
    "completes the Read successfully",
    0xe8000, RR_GOOD },
  { "/interop/golden/bad-read-response-stag",
    "a Read Response naming another region of the provider (valid, remote write "
    "allowed) instead of the Read's sink is refused: the Read does not complete "
    "successfully, neither region changes, and the Terminate is DDP / tagged buffer "
    "/ 0x00 (invalid STag)",
    0xe9000, RR_OTHER_STAG },
  { "/interop/golden/bad-read-response-to",
    "a Read Response whose Tagged Offset is 8 bytes past the sink TO the Read "
    "Request gave is refused: the Read does not complete successfully, nothing "
    "lands, and the Terminate is DDP / tagged buffer / 0x01 (base or bounds)",
    0xea000, RR_WRONG_TO },
  { "/interop/golden/bad-read-response-long",
    "a Read Response 16 bytes longer than the Read asked for is refused: the Read "
    "does not complete successfully, nothing lands outside the Read's sink, and the "
    "Terminate is DDP / tagged buffer / 0x01 (base or bounds)",
    0xeb000, RR_TOO_LONG },
  { "/interop/golden/bad-read-response-short",
    "a Read Response whose last segment (L=1) ends 16 bytes short of the size the "
    "Read asked for does not complete the Read successfully: the provider "
    "terminates the stream",
    0xec000, RR_SHORT },
};

static void
test_read_response(cert_t *f, gconstpointer data)
{
  const rr_case_t *c = data;
  uint64_t ctx = c->ctx;
  g_test_summary(c->summary);
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
  raw_read_out(&s, fd, &sink, ctx | 0x5d, req);
  uint32_t stag = wire_get32(req + 18);
  uint64_t to = wire_get64(req + 22);
  switch (c->kind) {
  case RR_GOOD: {
    raw_read_resp(fd, stag, to, RD_LEN, TRUE, hdr);
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
    raw_read_resp(fd, (uint32_t) other.mr->rkey, cert_raddr(&other, 64), RD_LEN, TRUE, hdr);
    expect_terminate(fd, 1, 1, 0x00, hdr, 14);
    expect_read_failed(&s, &sink, ctx | 0x5d, 0, 0);
    break; /* (the other region untouched: checked below) */
  case RR_WRONG_TO:
    raw_read_resp(fd, stag, to + 8, RD_LEN, TRUE, hdr);
    expect_terminate(fd, 1, 1, 0x01, hdr, 14);
    expect_read_failed(&s, &sink, ctx | 0x5d, 0, 0);
    break;
  case RR_TOO_LONG:
    /* More than the Read asked for: the RFC 5041 bounds of the sink are
     * the Read's, not its region's. */
    raw_read_resp(fd, stag, to, RD_LEN + 16, TRUE, hdr);
    expect_terminate(fd, 1, 1, 0x01, hdr, 14);
    expect_read_failed(&s, &sink, ctx | 0x5d, 64, 64 + RD_LEN);
    break;
  case RR_SHORT:
    /* The last segment ends the Response 16 bytes early. */
    raw_read_resp(fd, stag, to, RD_LEN - 16, TRUE, hdr);
    {
      uint8_t u[65536];
      int len = raw_fpdu_read(fd, u);
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
  raw_read_resp(fd, (uint32_t) b.mr->rkey, cert_raddr(&b, 0), 32, TRUE, hdr);
  uint8_t u[65536];
  int len = raw_fpdu_read(fd, u);
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
    int len = raw_fpdu_read(fd, u);
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
typedef struct {
  const char *path, *summary;
  uint64_t ctx;
  uint8_t ctrl;
  uint32_t extra;
} rreq_case_t;

static const rreq_case_t rreq_cases[] = {
  { "/interop/golden/bad-read-request-not-last",
    "an RDMA Read Request whose one segment has L=0 (a Read Request is a single "
    "segment, RFC 5040 4.4) is refused: no Read Response, the provider terminates "
    "the stream (a DDP or RDMAP error, not an LLP one) or closes it",
    0xe6100, 0x01, 0 },
  { "/interop/golden/bad-read-request-length",
    "an RDMA Read Request with 4 bytes after its 28-byte header (its length is "
    "fixed, RFC 5040 4.4) is refused: no Read Response, the provider terminates the "
    "stream (a DDP or RDMAP error: the framing and CRC were right) or closes it",
    0xe6200, 0x41, 4 },
};

static void
test_read_request_refused(cert_t *f, gconstpointer data)
{
  const rreq_case_t *c = data;
  uint64_t ctx = c->ctx;
  uint32_t extra = c->extra;
  g_test_summary(c->summary);
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
  raw_untagged_hdr(u, c->ctrl, 0x41, 1, 1, 0);
  wire_put32(u + 18, 0x11111100);
  wire_put64(u + 22, 0x2000);
  wire_put32(u + 30, 64);
  wire_put32(u + 34, (uint32_t) b.mr->rkey);
  wire_put64(u + 38, cert_raddr(&b, 8));
  g_assert_cmpuint(extra, <=, 8);
  raw_fpdu(fd, u, 46 + extra);
  uint8_t r[65536];
  int len = raw_fpdu_read(fd, r);
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

void
interop_register_golden2(void)
{
  for (size_t i = 0; i < G_N_ELEMENTS(send_cases); i++)
    cert_add_data(send_cases[i].path, &send_cases[i], test_send_refused);
  cert_add("/interop/golden/send-half-flushed", test_send_half_flushed);
  cert_add("/interop/golden/bad-send-mo-gap", test_send_mo_gap);
  for (size_t i = 0; i < G_N_ELEMENTS(rr_cases); i++)
    cert_add_data(rr_cases[i].path, &rr_cases[i], test_read_response);
  cert_add("/interop/golden/bad-read-response-unasked", test_read_response_unasked);
  cert_add("/interop/golden/send-se-fpdu", test_send_se_fpdu);
  cert_add("/interop/golden/send-inv-fpdu", test_send_inv_fpdu);
  for (size_t i = 0; i < G_N_ELEMENTS(rreq_cases); i++)
    cert_add_data(rreq_cases[i].path, &rreq_cases[i], test_read_request_refused);
}
