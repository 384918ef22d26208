/*
 * cert-rnicpi: limits and local checks of the data path that an honest
 * peer reaches but no other test did: the gather/scatter lists a queue
 * pair was created for (per operation: Send, RDMA Write, RDMA Read,
 * receive), an element that runs past the end of its region on either
 * side of a Send, a CQ of no entries, and a Send with Invalidate naming a
 * key the responder does not have (RFC 5040 5.3, 7.2: the message is not
 * delivered as a plain Send), and the connection verbs on a queue pair in
 * the wrong state (connect or accept with one already connected,
 * disconnect of one never connected), a connect whose TCP peer accepts
 * and never answers (a plain socket, so only a provider that connects over
 * TCP is concerned), and the fence of a Write behind a Read.  Each rule
 * holds for every RNIC; the tests
 * assert what the consumer can see: the status post_send/post_recv
 * returns, the completion's status and wr_id, which bytes changed.
 *
 * SPDX-License-Identifier: MIT
 */
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cert.h"

/* A refused post: RNICPI_ELIMIT (the queue pair's limit) or RNICPI_EINVAL
 * (a provider may call the argument out of range), never success. */
static void
expect_post_refused(rnicpi_status_t st, const char *what)
{
  if (st != RNICPI_ELIMIT && st != RNICPI_EINVAL)
    g_test_message("%s: post returned %s, expected RNICPI_ELIMIT (or RNICPI_EINVAL)", what,
                   rnicpi_status_name(st));
  g_assert_true(st == RNICPI_ELIMIT || st == RNICPI_EINVAL);
}

/* A connected pair whose queue pairs take @send, @write, @read and @recv
 * gather/scatter elements per work request (0: the default); FALSE (with a
 * skip) when the device's record does not allow them. */
static gboolean
sge_pair(cert_t *f, cert_pair_t *pr, uint32_t send, uint32_t write, uint32_t read, uint32_t recv)
{
  const rnicpi_caps_t *c = &f->caps;
  if ((send && send > c->max_send_sge) || (write && write > c->max_rdma_write_sge) ||
      (read && read > c->max_rdma_read_sge) || (recv && recv > c->max_recv_sge)) {
    g_test_skip("the device's record allows too few gather/scatter elements for this test");
    return FALSE;
  }
  rnicpi_qp_attr_t a = cert_qp_attr(f, NULL, NULL);
  if (send)
    a.max_send_sge = send;
  if (write)
    a.max_rdma_write_sge = write;
  if (read)
    a.max_rdma_read_sge = read;
  if (recv)
    a.max_recv_sge = recv;
  return cert_pair_open(f, pr, &a);
}

/* A record claiming more scatter elements per Read than this is taken at
 * this many (the test's arrays). */
#define READ_SGE_TESTED 64

/* The Read scatter limit the record claims is honoured: an RDMA Read into
 * max_rdma_read_sge segments of uneven lengths, apart from each other in
 * one region (a device whose wire Read names one sink, as iWARP's does,
 * must issue one wire Read per segment), lands each segment's bytes from
 * the matching offset of the source, touches nothing between them, and
 * completes once with the whole length. */
static void
test_read_sge_at_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read posted with as many scatter elements as the capability record's "
                 "max_rdma_read_sge (up to 64), of uneven lengths with gaps between them, "
                 "completes once (its wr_id, RNICPI_WC_SUCCESS, byte_len the sum) with each "
                 "element's bytes from its offset of the source and nothing between them");
  uint32_t n = MIN(f->caps.max_rdma_read_sge, READ_SGE_TESTED);
  cert_pair_t pr;
  if (!sge_pair(f, &pr, 0, 0, n, 0))
    return;
  uint32_t acc = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                 RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE;
  rnicpi_sge_t sg[READ_SGE_TESTED];
  size_t off[READ_SGE_TESTED], at = 5, total = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t len = 1 + (i * 397u + 13u) % 1500u;
    off[i] = at;
    at += len + 3 + i % 5; /* a gap after each */
    total += len;
    sg[i].length = len;
  }
  cert_buf_t b, rb;
  cert_buf_new(pr.a.pd, &b, at, cert_sink_access(f) | acc);
  cert_buf_new(pr.p.pd, &rb, total + 16, acc);
  memset(b.data, 0, b.len);
  cert_buf_fill(&rb, 0x6b);
  for (uint32_t i = 0; i < n; i++)
    sg[i] = cert_sge(&b, off[i], sg[i].length);
  rnicpi_send_wr_t wr = { .wr_id = 0x5ca7, .opcode = RNICPI_WR_RDMA_READ,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = sg, .num_sge = n,
                          .remote_addr = cert_raddr(&rb, 7), .rkey = rb.mr->rkey };
  g_assert_cmpint(DAT->post_send(pr.a.qp, &wr), ==, RNICPI_OK);
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x5ca7);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  g_assert_cmpuint(wc.byte_len, ==, total);
  size_t src = 7;
  for (uint32_t i = 0; i < n; i++) {
    g_assert_cmpmem(b.data + off[i], sg[i].length, rb.data + src, sg[i].length);
    src += sg[i].length;
    size_t gap_end = i + 1 < n ? off[i + 1] : b.len;
    for (size_t k = off[i] + sg[i].length; k < gap_end; k++)
      g_assert_cmphex(b.data[k], ==, 0);
  }
  for (size_t k = 0; k < off[0]; k++)
    g_assert_cmphex(b.data[k], ==, 0);
  cert_buf_check_guards(&b);
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.scq);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  cert_buf_free(&rb);
  cert_buf_free(&b);
  cert_pair_free(&pr);
}

/* An RDMA Read's completion means every byte of it is placed (RNIC-PI
 * post_send; RFC 5040 7.1), also when the Read scatters over elements a
 * device takes one per Read (an adapter splits it, and must complete it
 * with its last piece). */
static void
test_read_sge_large(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read of 512 KiB into each of four scatter elements apart from each "
                 "other completes once, and at its completion every element already holds "
                 "its bytes, the last one's last byte included");
  enum { N = 4, LEN = 512 * 1024, GAP = 4096 };
  cert_pair_t pr;
  if (!sge_pair(f, &pr, 0, 0, N, 0))
    return;
  uint32_t acc = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                 RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE;
  cert_buf_t b, rb;
  cert_buf_new(pr.a.pd, &b, N * (LEN + GAP), cert_sink_access(f) | acc);
  cert_buf_new(pr.p.pd, &rb, N * LEN, acc);
  memset(b.data, 0, b.len);
  cert_buf_fill(&rb, 0x6c);
  rnicpi_sge_t sg[N];
  for (uint32_t i = 0; i < N; i++)
    sg[i] = cert_sge(&b, (size_t) i * (LEN + GAP), LEN);
  rnicpi_send_wr_t wr = { .wr_id = 0x5ca8, .opcode = RNICPI_WR_RDMA_READ,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = sg, .num_sge = N,
                          .remote_addr = cert_raddr(&rb, 0), .rkey = rb.mr->rkey };
  g_assert_cmpint(DAT->post_send(pr.a.qp, &wr), ==, RNICPI_OK);
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  /* At once: the last bytes first, which a completion made early lacks. */
  for (int i = N - 1; i >= 0; i--)
    g_assert_cmpmem(b.data + (size_t) i * (LEN + GAP), LEN, rb.data + (size_t) i * LEN, LEN);
  g_assert_cmphex(wc.wr_id, ==, 0x5ca8);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  g_assert_cmpuint(wc.byte_len, ==, N * LEN);
  for (uint32_t i = 0; i < N; i++)
    for (size_t k = (size_t) i * (LEN + GAP) + LEN; k < (size_t) (i + 1) * (LEN + GAP); k++)
      g_assert_cmphex(b.data[k], ==, 0);
  cert_buf_check_guards(&b);
  cert_assert_cq_quiet(pr.a.scq);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  cert_buf_free(&rb);
  cert_buf_free(&b);
  cert_pair_free(&pr);
}

/* A legal Send of 8 bytes from @b then reaches the peer's receive on
 * @rb: the refused post left the queue pair usable and sent nothing. */
static void
send_still_works(cert_pair_t *pr, cert_buf_t *b, cert_buf_t *rb)
{
  cert_buf_fill(b, 0x3c);
  cert_post_recv(pr->p.qp, rb, 0, 64, 0xc0de);
  cert_post_send(pr->a.qp, RNICPI_WR_SEND, b, 0, 8, 0x5e17, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(pr->a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x5e17);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  rnicpi_wc_t r = cert_wc(pr->p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0xc0de);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(r.byte_len, ==, 8);
  cert_buf_check(rb, 0, 8, 0x3c);
  cert_assert_cq_quiet(pr->a.scq);
  cert_assert_cq_quiet(pr->p.rcq);
}

/* A send-queue request of @op with two elements on a queue pair whose
 * limit for @op is one (@send, @write, @read: max_send_sge,
 * max_rdma_write_sge, max_rdma_read_sge): refused, nothing happens. */
typedef struct {
  const char *path, *summary;
  rnicpi_wr_opcode_t op;
  uint32_t send, write, read;
} sge_case_t;

static const sge_case_t sge_cases[] = {
  { "/rnicpi/qp/send-sge-over-limit",
    "post_send of a Send with two gather elements on a queue pair created with "
    "max_send_sge 1 is refused (RNICPI_ELIMIT or RNICPI_EINVAL): no completion, the "
    "queue pair stays RTS and a one-element Send then arrives",
    RNICPI_WR_SEND, 1, 2, 0 },
  { "/rnicpi/qp/write-sge-over-limit",
    "post_send of an RDMA Write with two gather elements on a queue pair created "
    "with max_rdma_write_sge 1 (max_send_sge 2) is refused: the Write's own limit "
    "applies, not the Send's; nothing lands at the peer",
    RNICPI_WR_RDMA_WRITE, 2, 1, 0 },
  { "/rnicpi/qp/read-sge-over-limit",
    "post_send of an RDMA Read with two scatter elements on a queue pair created "
    "with max_rdma_read_sge 1 (max_send_sge 2) is refused: the Read's own limit "
    "applies, not the Send's",
    RNICPI_WR_RDMA_READ, 2, 2, 1 },
};

static void
test_sge_over_limit(cert_t *f, gconstpointer data)
{
  const sge_case_t *c = data;
  g_test_summary(c->summary);
  cert_pair_t pr;
  if (!sge_pair(f, &pr, c->send, c->write, c->read, 0))
    return;
  uint32_t acc = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ |
                 RNICPI_ACCESS_REMOTE_WRITE;
  cert_buf_t b, rb;
  cert_buf_new(pr.a.pd, &b, 64, c->op == RNICPI_WR_RDMA_READ ? cert_sink_access(f) | acc : acc);
  cert_buf_new(pr.p.pd, &rb, 64, acc);
  rnicpi_sge_t sg[2] = { cert_sge(&b, 0, 8), cert_sge(&b, 32, 8) };
  rnicpi_send_wr_t wr = { .wr_id = 0xbad5, .opcode = c->op, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = sg, .num_sge = 2, .remote_addr = cert_raddr(&rb, 0),
                          .rkey = rb.mr->rkey };
  expect_post_refused(DAT->post_send(pr.a.qp, &wr), "two elements over a limit of one");
  cert_assert_cq_quiet(pr.a.scq);
  for (size_t i = 0; i < 64; i++)
    g_assert_cmphex(rb.data[i], ==, 0);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  send_still_works(&pr, &b, &rb);
  cert_buf_free(&rb);
  cert_buf_free(&b);
  cert_pair_free(&pr);
}

static void
test_recv_sge_over_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("post_recv of a receive with two scatter elements on a queue pair created with "
                 "max_recv_sge 1 is refused (RNICPI_ELIMIT or RNICPI_EINVAL) and not queued: the "
                 "next Send lands in the one-element receive posted after it");
  cert_pair_t pr;
  if (!sge_pair(f, &pr, 0, 0, 0, 1))
    return;
  uint32_t acc = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE;
  cert_buf_t b, rb;
  cert_buf_new(pr.a.pd, &b, 64, acc);
  cert_buf_new(pr.p.pd, &rb, 64, acc);
  rnicpi_sge_t sg[2] = { cert_sge(&rb, 0, 8), cert_sge(&rb, 32, 8) };
  rnicpi_recv_wr_t wr = { .wr_id = 0xbad6, .sg_list = sg, .num_sge = 2 };
  expect_post_refused(DAT->post_recv(pr.p.qp, &wr), "two elements over a limit of one");
  send_still_works(&pr, &b, &rb);
  cert_buf_free(&rb);
  cert_buf_free(&b);
  cert_pair_free(&pr);
}

static void
test_cq_depth_zero(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.cq_create of depth 0 is refused (RNICPI_ELIMIT or RNICPI_EINVAL) and "
                 "creates nothing: a CQ that can hold no completion cannot serve a queue");
  rnicpi_cq_t *cq = NULL;
  rnicpi_status_t st = QUE->cq_create(f->dev, 0, 1, &cq);
  if (st == RNICPI_OK)
    QUE->cq_destroy(cq);
  expect_post_refused(st, "cq_create(depth 0)");
}

/* ---- An element past the end of its region ----------------------------- */

/* 64 registered bytes; the element starts at byte 32 and is 64 long, so
 * its last 32 bytes are the guard after the region. */
#define PAST_OFF 32
#define PAST_LEN 64

static void
test_recv_sge_past_region(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a receive whose scatter element runs 32 bytes past the end of its region "
                 "either is refused by post_recv or, when a 48-byte Send arrives, completes "
                 "RNICPI_WC_LOC_PROT_ERR: no byte lands after the region; the Send completes "
                 "once");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  uint32_t acc = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE;
  cert_buf_t b, rb;
  cert_buf_new(pr.a.pd, &b, 64, acc);
  cert_buf_new(pr.p.pd, &rb, 64, acc);
  cert_buf_fill(&b, 0x71);
  rnicpi_sge_t sg = { .addr = (uint64_t) (uintptr_t) (rb.data + PAST_OFF), .length = PAST_LEN,
                      .lkey = rb.mr->lkey };
  rnicpi_recv_wr_t wr = { .wr_id = 0x9a57, .sg_list = &sg, .num_sge = 1 };
  rnicpi_status_t st = DAT->post_recv(pr.p.qp, &wr);
  if (st != RNICPI_OK) {
    g_test_message("post_recv refused the element: %s", rnicpi_status_name(st));
  } else {
    cert_post_send(pr.a.qp, RNICPI_WR_SEND, &b, 0, 48, 0x5e9d, RNICPI_WR_SIGNALED, 0, 0);
    rnicpi_wc_t r = cert_wc(pr.p.rcq);
    g_test_message("the receive completed with status %d", r.status);
    g_assert_cmphex(r.wr_id, ==, 0x9a57);
    g_assert_cmpint(r.status, ==, RNICPI_WC_LOC_PROT_ERR);
    rnicpi_wc_t s = cert_wc(pr.a.scq);
    g_assert_cmphex(s.wr_id, ==, 0x5e9d);
    cert_assert_cq_quiet(pr.a.scq);
    cert_assert_cq_quiet(pr.p.rcq);
  }
  cert_buf_check_guards(&rb);
  cert_buf_free(&rb);
  cert_buf_free(&b);
  cert_pair_free(&pr);
}

static void
test_send_sge_past_region(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send whose gather element runs 32 bytes past the end of its region either "
                 "is refused by post_send or completes RNICPI_WC_LOC_PROT_ERR: the peer's "
                 "receive never completes successfully and holds none of the bytes");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  uint32_t acc = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE;
  cert_buf_t b, rb;
  cert_buf_new(pr.a.pd, &b, 64, acc);
  cert_buf_new(pr.p.pd, &rb, 128, acc);
  cert_buf_fill(&b, 0x72);
  cert_post_recv(pr.p.qp, &rb, 0, 128, 0x9a58);
  rnicpi_sge_t sg = { .addr = (uint64_t) (uintptr_t) (b.data + PAST_OFF), .length = PAST_LEN,
                      .lkey = b.mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = 0x5e9e, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sg, .num_sge = 1 };
  rnicpi_status_t st = DAT->post_send(pr.a.qp, &wr);
  if (st != RNICPI_OK) {
    g_test_message("post_send refused the element: %s", rnicpi_status_name(st));
  } else {
    rnicpi_wc_t s = cert_wc(pr.a.scq);
    g_test_message("the Send completed with status %d", s.status);
    g_assert_cmphex(s.wr_id, ==, 0x5e9e);
    g_assert_cmpint(s.status, ==, RNICPI_WC_LOC_PROT_ERR);
  }
  rnicpi_wc_t r;
  if (cert_poll(pr.p.rcq, &r, 1, 300) == 1) {
    g_test_message("the peer's receive completed with status %d", r.status);
    g_assert_cmphex(r.wr_id, ==, 0x9a58);
    g_assert_cmpint(r.status, !=, RNICPI_WC_SUCCESS);
  }
  for (size_t i = 0; i < 128; i++)
    g_assert_cmphex(rb.data[i], ==, 0);
  cert_buf_free(&rb);
  cert_buf_free(&b);
  cert_pair_free(&pr);
}

/* ---- Send with Invalidate of a key the responder does not have -------- */

static void
test_send_inv_unknown(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send with Invalidate (plain, and with Solicited Event) naming the key of a "
                 "region the responder has deregistered is not delivered as a plain Send "
                 "(RFC 5040 5.3, 7.2: STag cannot be invalidated): the responder's receive never "
                 "completes successfully; the Send completes once");
  for (int se = 0; se < 2; se++) {
    cert_pair_t pr;
    if (!cert_pair_open(f, &pr, NULL))
      return;
    uint32_t acc = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE;
    cert_buf_t b, rb, gone;
    cert_buf_new(pr.a.pd, &b, 64, acc);
    cert_buf_new(pr.p.pd, &rb, 64, acc);
    cert_buf_new(pr.p.pd, &gone, 64, acc | RNICPI_ACCESS_REMOTE_WRITE);
    uint64_t key = gone.mr->rkey;
    cert_buf_free(&gone);
    cert_buf_fill(&b, 0x73);
    cert_post_recv(pr.p.qp, &rb, 0, 64, 0x9a59);
    rnicpi_sge_t sg = cert_sge(&b, 0, 13);
    rnicpi_send_wr_t wr = { .wr_id = 0x5e9f, .opcode = RNICPI_WR_SEND_INV,
                            .flags = RNICPI_WR_SIGNALED | (se ? RNICPI_WR_SOLICITED : 0),
                            .sg_list = &sg, .num_sge = 1, .invalidate_rkey = key };
    rnicpi_status_t st = DAT->post_send(pr.a.qp, &wr);
    if (st == RNICPI_ENOTSUP) {
      g_test_message("post_send: Send with Invalidate not supported");
      cert_buf_free(&rb);
      cert_buf_free(&b);
      cert_pair_free(&pr);
      g_test_skip("needs capability: Send with Invalidate");
      return;
    }
    cert_ok(st);
    rnicpi_wc_t s = cert_wc(pr.a.scq);
    g_test_message("%s: the Send completed with status %d", se ? "with SE" : "plain", s.status);
    g_assert_cmphex(s.wr_id, ==, 0x5e9f);
    rnicpi_wc_t r;
    if (cert_poll(pr.p.rcq, &r, 1, 500) == 1) {
      g_test_message("%s: the receive completed with status %d", se ? "with SE" : "plain",
                     r.status);
      g_assert_cmphex(r.wr_id, ==, 0x9a59);
      g_assert_cmpint(r.status, !=, RNICPI_WC_SUCCESS);
    }
    cert_assert_cq_quiet(pr.a.scq);
    cert_buf_free(&rb);
    cert_buf_free(&b);
    cert_pair_free(&pr);
  }
}

/* ---- Fence ------------------------------------------------------------- */

/* A large Read, and a small Write to the last bytes it reads: without the
 * fence the Write reaches those bytes long before the Read's Response
 * does. */
#define FENCE_LEN (16u * 1024 * 1024)
#define FENCE_WRITE 4096u

static void
test_read_then_fenced_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Write posted with RNICPI_WR_FENCE after an RDMA Read of the same "
                 "remote bytes waits for the Read: the Read's sink holds the bytes as they were "
                 "before the Write, every one of them; the region then holds the Write's bytes; "
                 "the Read completes first");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  if (FENCE_LEN > f->caps.max_mr_size) {
    cert_pair_free(&pr);
    g_test_skip("max_mr_size below the test's region");
    return;
  }
  cert_buf_t region, sink, src;
  cert_buf_new(pr.p.pd, &region, FENCE_LEN,
               RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ |
               RNICPI_ACCESS_REMOTE_WRITE);
  cert_buf_new(pr.a.pd, &sink, FENCE_LEN, cert_sink_access(f));
  cert_buf_new(pr.a.pd, &src, FENCE_WRITE, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_fill(&region, 0x1a);
  cert_buf_fill(&src, 0x2b);
  size_t tail = FENCE_LEN - FENCE_WRITE;
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, FENCE_LEN, 0xfe1, RNICPI_WR_SIGNALED,
                 cert_raddr(&region, 0), region.mr->rkey);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, FENCE_WRITE, 0xfe2,
                 RNICPI_WR_SIGNALED | RNICPI_WR_FENCE, cert_raddr(&region, tail), region.mr->rkey);
  rnicpi_wc_t w1 = cert_wc(pr.a.scq), w2 = cert_wc(pr.a.scq);
  g_assert_cmphex(w1.wr_id, ==, 0xfe1);
  g_assert_cmpint(w1.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmphex(w2.wr_id, ==, 0xfe2);
  g_assert_cmpint(w2.status, ==, RNICPI_WC_SUCCESS);
  /* The Read returned the region as it was before the fenced Write. */
  cert_buf_check(&sink, 0, FENCE_LEN, 0x1a);
  cert_placed(f, &pr, cert_raddr(&region, 0), region.mr->rkey);
  cert_buf_check(&region, 0, tail, 0x1a);
  for (size_t i = 0; i < FENCE_WRITE; i++)
    g_assert_cmphex(region.data[tail + i], ==, src.data[i]);
  cert_assert_cq_quiet(pr.a.scq);
  cert_buf_free(&src);
  cert_buf_free(&sink);
  cert_buf_free(&region);
  cert_pair_free(&pr);
}

/* ---- Connection verbs on a queue pair in the wrong state -------------- */

/* A refused CM verb: RNICPI_ESTATE, the queue pair's state forbids it. */
static void
expect_estate(rnicpi_status_t st, const char *what)
{
  if (st != RNICPI_ESTATE)
    g_test_message("%s returned %s, expected RNICPI_ESTATE", what, rnicpi_status_name(st));
  cert_cmpst(st, RNICPI_ESTATE);
}

static void
test_connect_connected(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect on a queue pair that is already connected (RTS) is "
                 "RNICPI_ESTATE and leaves its connection as it was: a Send then still arrives");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1151, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  expect_estate(CMV->connect(pr.a.qp, &dst, &cp), "connect on an RTS queue pair");
  cert_assert_no_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1151);
  cert_ok(CMV->unlisten(lst));
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  uint32_t acc = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE;
  cert_buf_t b, rb;
  cert_buf_new(pr.a.pd, &b, 64, acc);
  cert_buf_new(pr.p.pd, &rb, 64, acc);
  send_still_works(&pr, &b, &rb);
  cert_buf_free(&rb);
  cert_buf_free(&b);
  cert_pair_free(&pr);
}

static void
test_connect_pending(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect on a queue pair whose connect is still pending (the listener "
                 "has its request and has not answered) is RNICPI_ESTATE and sends no second "
                 "request; the first one, accepted, then establishes both sides");
  cert_side_t c, q;
  cert_side_new(f, &c, 0xc0000, 16, NULL);
  cert_side_new(f, &q, 0xd0000, 16, NULL);
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1153, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->connect(c.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1153);
  expect_estate(CMV->connect(c.qp, &dst, &cp), "a second connect while the first is pending");
  cert_assert_no_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1153);
  cert_ok(CMV->accept(q.qp, req->conn_id, &cp));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, c.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, q.ctx));
  cert_ok(CMV->unlisten(lst));
  g_assert_cmpint(QUE->qp_state(c.qp), ==, RNICPI_QPS_RTS);
  cert_side_free(&q);
  cert_side_free(&c);
}

static void
test_post_send_connecting(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.post_send on a queue pair whose connect is pending (the listener "
                 "holds its request) is RNICPI_ESTATE, or takes the Send, which then arrives "
                 "and completes once the request is accepted; any other status fails, and the "
                 "connection then carries a Send");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  cert_side_t c, q;
  cert_side_new(f, &c, 0xc0000, 16, NULL);
  cert_side_new(f, &q, 0xd0000, 16, NULL);
  cert_buf_t src, dst;
  cert_buf_new(c.pd, &src, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_new(q.pd, &dst, 128, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1154, &lst);
  rnicpi_addr_t dst_addr;
  cert_addr(f, port, &dst_addr);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->connect(c.qp, &dst_addr, &cp));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1154);
  /* The request is at the listener: the queue pair is still connecting. */
  cert_buf_fill(&src, 41);
  rnicpi_sge_t sge = cert_sge(&src, 0, 16);
  rnicpi_send_wr_t wr = { .wr_id = 0x5c1, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1 };
  rnicpi_status_t st = DAT->post_send(c.qp, &wr);
  g_test_message("post_send while connecting: %s", rnicpi_status_name(st));
  if (st != RNICPI_OK)
    cert_cmpst(st, RNICPI_ESTATE);
  cert_post_recv(q.qp, &dst, 0, 64, 0x5d1);
  cert_post_recv(q.qp, &dst, 64, 64, 0x5d2);
  cert_ok(CMV->accept(q.qp, req->conn_id, &cp));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, c.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, q.ctx));
  cert_ok(CMV->unlisten(lst));
  uint64_t next = 0x5d1;
  if (st == RNICPI_OK) {
    rnicpi_wc_t s = cert_wc(c.scq);
    g_assert_cmphex(s.wr_id, ==, 0x5c1);
    g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
    rnicpi_wc_t r = cert_wc(q.rcq);
    g_assert_cmphex(r.wr_id, ==, 0x5d1);
    g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpuint(r.byte_len, ==, 16);
    cert_buf_check(&dst, 0, 16, 41);
    next = 0x5d2;
  }
  cert_assert_cq_quiet(c.scq);
  /* Connected, a Send goes as always. */
  cert_buf_fill(&src, 42);
  cert_post_send(c.qp, RNICPI_WR_SEND, &src, 0, 24, 0x5c2, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t s = cert_wc(c.scq);
  g_assert_cmphex(s.wr_id, ==, 0x5c2);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  rnicpi_wc_t r = cert_wc(q.rcq);
  g_assert_cmphex(r.wr_id, ==, next);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(r.byte_len, ==, 24);
  cert_buf_check(&dst, next == 0x5d1 ? 0 : 64, 24, 42);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_side_free(&q);
  cert_side_free(&c);
}

static void
test_accept_busy_qp(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.accept of a new connection request with a queue pair that is already "
                 "connected is RNICPI_ESTATE; the request stays pending and a fresh queue pair "
                 "then accepts it; the old connection still carries a Send");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_side_t c, q;
  cert_side_new(f, &c, 0xc0000, 16, NULL);
  cert_side_new(f, &q, 0xd0000, 16, NULL);
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1152, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->connect(c.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1152);
  expect_estate(CMV->accept(pr.p.qp, req->conn_id, &cp), "accept with an RTS queue pair");
  cert_ok(CMV->accept(q.qp, req->conn_id, &cp));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, c.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, q.ctx));
  cert_ok(CMV->unlisten(lst));
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);
  uint32_t acc = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE;
  cert_buf_t b, rb;
  cert_buf_new(pr.a.pd, &b, 64, acc);
  cert_buf_new(pr.p.pd, &rb, 64, acc);
  send_still_works(&pr, &b, &rb);
  cert_buf_free(&rb);
  cert_buf_free(&b);
  cert_side_free(&q);
  cert_side_free(&c);
  cert_pair_free(&pr);
}

static void
test_disconnect_idle(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.disconnect of a queue pair never connected (IDLE) is RNICPI_ESTATE and "
                 "raises no CM event");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  cert_side_t s;
  cert_side_new(f, &s, 0xe0000, 16, NULL);
  expect_estate(CMV->disconnect(s.qp, NULL, 0), "disconnect on an IDLE queue pair");
  cert_assert_no_cm(f, RNICPI_CM_DISCONNECTED, s.ctx);
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_IDLE);
  cert_side_free(&s);
}

/* How long the connect nobody answers may wait (rnicpi_conn_param_t
 * timeout_us): short, so the test takes well under a second. */
#define CONNECT_TIMEOUT_US 500000

static void
test_connect_timeout(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect with timeout_us 0.5 s to a TCP listener of the device's "
                 "address that accepts the connection and never answers (no MPA Reply): the "
                 "queue pair gets exactly one UNREACHABLE, reason RNICPI_CM_REASON_TIMEOUT (not "
                 "NO_LISTENER: something did listen), no sooner than the timeout, never "
                 "ESTABLISHED, and is not RTS; skipped on a device that reaches no TCP listener");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  /* A plain TCP listener on a port the kernel picks: its backlog takes
   * the connection, and nobody reads or writes a byte of it. */
  struct sockaddr_storage ss;
  cert_self_addr(f, &ss);
  socklen_t sl = ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  int l = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint(l, >=, 0);
  g_assert_cmpint(bind(l, (struct sockaddr *) &ss, sl), ==, 0);
  g_assert_cmpint(listen(l, 1), ==, 0);
  g_assert_cmpint(getsockname(l, (struct sockaddr *) &ss, &sl), ==, 0);
  uint32_t port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *) &ss)->sin_port
                                                : ((struct sockaddr_in6 *) &ss)->sin6_port);
  cert_side_t s;
  cert_side_new(f, &s, 0xe1000, 16, NULL);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(1, f->caps.max_ird), .ord = cert_min(1, f->caps.max_ord),
                             .timeout_us = CONNECT_TIMEOUT_US };
  gint64 start = g_get_monotonic_time();
  cert_ok(CMV->connect(s.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *ev = cert_poll_cm(f, RNICPI_CM_UNREACHABLE, s.ctx, CERT_TIMEOUT_MS);
  gint64 took_ms = (g_get_monotonic_time() - start) / 1000;
  struct pollfd pfd = { .fd = l, .events = POLLIN };
  int tcp = poll(&pfd, 1, 0) == 1 ? accept(l, NULL, NULL) : -1;
  if (tcp < 0) {
    g_test_message("connect ended %s (reason %d) after %" G_GINT64_FORMAT " ms",
                   ev != NULL ? "UNREACHABLE" : "with nothing", ev != NULL ? (int) ev->reason : 0,
                   took_ms);
    g_test_skip("the device's connect reached no TCP listener at its address (not a TCP "
                "transport): a plain socket cannot be the peer that never answers");
    close(l);
    cert_side_free(&s);
    return;
  }
  if (ev == NULL)
    g_test_message("no UNREACHABLE within %d ms of a connect with a timeout of %d ms",
                   CERT_TIMEOUT_MS, CONNECT_TIMEOUT_US / 1000);
  g_assert_nonnull(ev);
  g_test_message("UNREACHABLE reason %d after %" G_GINT64_FORMAT " ms", ev->reason, took_ms);
  g_assert_cmpint(ev->reason, ==, RNICPI_CM_REASON_TIMEOUT);
  g_assert_cmpint(took_ms, >=, CONNECT_TIMEOUT_US / 1000 - 1);
  g_assert_cmpint(QUE->qp_state(s.qp), !=, RNICPI_QPS_RTS);
  cert_assert_no_cm(f, RNICPI_CM_UNREACHABLE, s.ctx);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, s.ctx);
  close(tcp);
  close(l);
  cert_side_free(&s);
}

void
cert_register_wire(void)
{
  for (size_t i = 0; i < G_N_ELEMENTS(sge_cases); i++)
    cert_add_data(sge_cases[i].path, &sge_cases[i], test_sge_over_limit);
  cert_add("/rnicpi/data/read-sge-at-limit", test_read_sge_at_limit);
  cert_add("/rnicpi/data/read-sge-large", test_read_sge_large);
  cert_add("/rnicpi/qp/recv-sge-over-limit", test_recv_sge_over_limit);
  cert_add("/rnicpi/cq/create-zero-refused", test_cq_depth_zero);
  cert_add("/rnicpi/protect-local/recv-sge-past-region", test_recv_sge_past_region);
  cert_add("/rnicpi/protect-local/send-sge-past-region", test_send_sge_past_region);
  cert_add("/rnicpi/errors/send-inv-unknown-stag", test_send_inv_unknown);
  cert_add("/rnicpi/data/read-then-fenced-write", test_read_then_fenced_write);
  cert_add("/rnicpi/cm/connect-connected-refused", test_connect_connected);
  cert_add("/rnicpi/cm/connect-pending-refused", test_connect_pending);
  cert_add("/rnicpi/qp/post-send-connecting", test_post_send_connecting);
  cert_add("/rnicpi/cm/accept-busy-qp-refused", test_accept_busy_qp);
  cert_add("/rnicpi/cm/disconnect-idle-refused", test_disconnect_idle);
  cert_add("/rnicpi/cm/connect-timeout", test_connect_timeout);
}
