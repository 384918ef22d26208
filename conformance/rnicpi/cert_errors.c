/*
 * cert-rnicpi: protection and length errors on a connected pair, and CQ
 * overflow.  After every failure the test accounts for each work request
 * that was outstanding: it completes exactly once, the failing one with its
 * error and every other one flushed (RNICPI_WC_WR_FLUSH_ERR), and nothing
 * outside a registered region is touched.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define TARGET (RW | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define NRECV 3
#define BAD_ID 0xbad0
#define NEXT_ID 0xbad1

typedef struct {
  cert_pair_t pr;
  cert_buf_t src;  /* active: what is sent or written */
  cert_buf_t tgt;  /* passive: the target region */
  cert_buf_t ra, rp; /* receive buffers of each side */
  uint64_t ida[NRECV], idp[NRECV];
  /* Sends and Writes complete at transmission (no "completes-at-placement"):
   * the responder's refusal comes back as a Terminate, after the failing WR
   * may have completed. */
  gboolean at_sent;
} err_setup_t;

/* A connected pair, a target with @tgt_access, and receives outstanding on
 * both sides, so a failure has something to flush. */
static gboolean
err_open(cert_t *f, err_setup_t *e, uint32_t tgt_access, uint32_t rp_len)
{
  memset(e, 0, sizeof(*e));
  if (!cert_pair_open(f, &e->pr, NULL))
    return FALSE;
  e->at_sent = !(f->caps.features & RNICPI_CAP_PLACED_COMPLETION);
  cert_buf_new(e->pr.a.pd, &e->src, 256, RW);
  cert_buf_new(e->pr.p.pd, &e->tgt, 4096, tgt_access);
  cert_buf_new(e->pr.a.pd, &e->ra, 64 * NRECV, RW);
  cert_buf_new(e->pr.p.pd, &e->rp, rp_len * NRECV, RW);
  cert_buf_fill(&e->src, 41);
  for (int i = 0; i < NRECV; i++) {
    e->ida[i] = 0xa100 + (uint64_t) i;
    e->idp[i] = 0xb100 + (uint64_t) i;
    cert_post_recv(e->pr.a.qp, &e->ra, (size_t) i * 64, 64, e->ida[i]);
    cert_post_recv(e->pr.p.qp, &e->rp, (size_t) i * rp_len, rp_len, e->idp[i]);
  }
  return TRUE;
}

static void
err_close(err_setup_t *e)
{
  cert_buf_free(&e->src);
  cert_buf_free(&e->tgt);
  cert_buf_free(&e->ra);
  cert_buf_free(&e->rp);
  cert_pair_free(&e->pr);
}

/* Post a good signaled RDMA Write behind the failing WR: it must complete
 * once, flushed, after the failing one.  @remote: the responder refuses the
 * failing WR; where completions mean transmission that shows as the
 * requester entering ERROR, which is waited for first (a WR posted before
 * would be transmitted, and complete, too). */
static void
post_next(err_setup_t *e, gboolean remote)
{
  if (remote && e->at_sent)
    cert_wait_state(e->pr.a.qp, RNICPI_QPS_ERROR);
  rnicpi_sge_t sge = cert_sge(&e->src, 0, 8);
  rnicpi_send_wr_t wr = { .wr_id = NEXT_ID, .opcode = RNICPI_WR_RDMA_WRITE,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = cert_raddr(&e->tgt, 0), .rkey = e->tgt.mr->rkey };
  /* A QP already in ERROR still takes the WR and completes it flushed. */
  cert_ok(DAT->post_send(e->pr.a.qp, &wr));
}

/* The requester's send CQ holds the failing WR with @status, then the
 * flushed one behind it, and nothing else.  @remote: the responder refused
 * it; where completions mean transmission it may also have completed
 * successfully or flushed. */
static void
expect_requester(err_setup_t *e, rnicpi_wc_status_t status, gboolean remote)
{
  rnicpi_wc_t wc[3];
  g_assert_cmpint(cert_poll(e->pr.a.scq, wc, 2, CERT_TIMEOUT_MS), ==, 2);
  g_assert_cmphex(wc[0].wr_id, ==, BAD_ID);
  g_assert_cmphex(wc[0].qp_ctx, ==, e->pr.a.ctx);
  if (remote && e->at_sent &&
      (wc[0].status == RNICPI_WC_SUCCESS || wc[0].status == RNICPI_WC_WR_FLUSH_ERR)) {
    g_test_message("requester completion status %d (completed at transmission)", wc[0].status);
  } else if (status == RNICPI_WC_GENERAL_ERR) { /* any error but a flush */
    g_test_message("requester completion status %d", wc[0].status);
    g_assert_cmpint(wc[0].status, !=, RNICPI_WC_SUCCESS);
    g_assert_cmpint(wc[0].status, !=, RNICPI_WC_WR_FLUSH_ERR);
  } else {
    g_assert_cmpint(wc[0].status, ==, status);
  }
  g_assert_cmphex(wc[1].wr_id, ==, NEXT_ID);
  g_assert_cmpint(wc[1].status, ==, RNICPI_WC_WR_FLUSH_ERR);
  cert_assert_cq_quiet(e->pr.a.scq);
}

/* A good WR posted behind the failing one (post_next), then both
 * completions (expect_requester). */
static void
expect_failed_wr(err_setup_t *e, rnicpi_wc_status_t status, gboolean remote)
{
  post_next(e, remote);
  expect_requester(e, status, remote);
}

/* Both QPs in ERROR and every outstanding receive flushed exactly once. */
static void
expect_flushed_both(cert_t *f, err_setup_t *e, int p_consumed)
{
  (void) f;
  cert_wait_state(e->pr.a.qp, RNICPI_QPS_ERROR);
  cert_wait_state(e->pr.p.qp, RNICPI_QPS_ERROR);
  cert_expect_flushed(e->pr.a.rcq, e->pr.a.ctx, e->ida, NRECV);
  cert_expect_flushed(e->pr.p.rcq, e->pr.p.ctx, e->idp + p_consumed, NRECV - p_consumed);
  cert_assert_cq_quiet(e->pr.p.scq);
}

/* A remote access violation: requester REM_ACCESS_ERR, both QPs broken,
 * the responder told by an affiliated event of @cause, the requester that
 * the peer reported an access error, the target untouched. */
static void
expect_remote_access_error(cert_t *f, err_setup_t *e, rnicpi_async_cause_t cause)
{
  expect_failed_wr(e, RNICPI_WC_REM_ACCESS_ERR, TRUE);
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, e->pr.a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, e->pr.p.ctx));
  cert_wait_qp_async(f, cause, e->pr.p.ctx);
  cert_wait_qp_async(f, RNICPI_AE_REMOTE_ACCESS, e->pr.a.ctx);
  expect_flushed_both(f, e, 0);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, e->pr.a.ctx);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, e->pr.p.ctx);
  cert_buf_check_guards(&e->tgt);
}

static void
test_errors_write_past_end(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("RDMA Write of 128 bytes starting 64 before the end of the remote region: "
                 "requester RNICPI_WC_REM_ACCESS_ERR, both QPs ERROR with BROKEN, "
                 "RNICPI_ASYNC_QP_ACCESS_ERR (cause WRITE_ACCESS) on the responder, "
                 "RNICPI_ASYNC_QP_REMOTE_ERR (REMOTE_ACCESS) on the requester, guard bytes "
                 "untouched, every "
                 "outstanding WR completed once");
  err_setup_t e;
  if (!err_open(f, &e, TARGET, 64))
    return;
  cert_post_send(e.pr.a.qp, RNICPI_WR_RDMA_WRITE, &e.src, 0, 128, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&e.tgt, e.tgt.len - 64), e.tgt.mr->rkey);
  expect_remote_access_error(f, &e, RNICPI_AE_WRITE_ACCESS);
  err_close(&e);
}

static void
test_errors_wrong_rkey(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("RDMA Write with an rkey no region has: requester RNICPI_WC_REM_ACCESS_ERR, both "
                 "QPs broken, responder access event, target untouched");
  err_setup_t e;
  if (!err_open(f, &e, TARGET, 64))
    return;
  cert_post_send(e.pr.a.qp, RNICPI_WR_RDMA_WRITE, &e.src, 0, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&e.tgt, 0), e.tgt.mr->rkey ^ 0xff0000ffull);
  expect_remote_access_error(f, &e, RNICPI_AE_WRITE_ACCESS);
  for (size_t i = 0; i < e.tgt.len; i++)
    g_assert_cmphex(e.tgt.data[i], ==, 0);
  err_close(&e);
}

static void
test_errors_no_remote_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("RDMA Write into a region registered without REMOTE_WRITE: requester "
                 "RNICPI_WC_REM_ACCESS_ERR, both QPs broken, responder access event, target "
                 "untouched");
  err_setup_t e;
  if (!err_open(f, &e, RW | RNICPI_ACCESS_REMOTE_READ, 64))
    return;
  cert_post_send(e.pr.a.qp, RNICPI_WR_RDMA_WRITE, &e.src, 0, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&e.tgt, 0), e.tgt.mr->rkey);
  expect_remote_access_error(f, &e, RNICPI_AE_WRITE_ACCESS);
  for (size_t i = 0; i < e.tgt.len; i++)
    g_assert_cmphex(e.tgt.data[i], ==, 0);
  err_close(&e);
}

static void
test_errors_read_no_remote_read(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("RDMA Read from a region registered without REMOTE_READ: requester "
                 "RNICPI_WC_REM_ACCESS_ERR, both QPs broken, RNICPI_ASYNC_QP_ACCESS_ERR (cause "
                 "READ_ACCESS) on the responder, RNICPI_ASYNC_QP_REMOTE_ERR (REMOTE_ACCESS) on "
                 "the requester, the sink untouched");
  err_setup_t e;
  if (!err_open(f, &e, RW | RNICPI_ACCESS_REMOTE_WRITE, 64))
    return;
  cert_buf_t sink;
  cert_buf_new(e.pr.a.pd, &sink, 256, TARGET);
  cert_buf_fill(&e.tgt, 7);
  cert_post_send(e.pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&e.tgt, 0), e.tgt.mr->rkey);
  expect_remote_access_error(f, &e, RNICPI_AE_READ_ACCESS);
  for (size_t i = 0; i < sink.len; i++)
    g_assert_cmphex(sink.data[i], ==, 0);
  cert_buf_check_guards(&sink);
  cert_buf_free(&sink);
  err_close(&e);
}

/* A signaled SEND of @sge, whose key names no region: the requester's
 * completion is RNICPI_WC_LOC_PROT_ERR and its queue pair enters ERROR;
 * every outstanding request on both sides completes once, flushed, and
 * the responder's receive buffers stay untouched. */
static void
send_bad_lkey(cert_t *f, err_setup_t *e, rnicpi_sge_t sge)
{
  rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1 };
  cert_ok(DAT->post_send(e->pr.a.qp, &wr));
  expect_failed_wr(e, RNICPI_WC_LOC_PROT_ERR, FALSE);
  cert_wait_state(e->pr.a.qp, RNICPI_QPS_ERROR);
  /* A local error need not reach the responder at once; take it down. */
  if (QUE->qp_state(e->pr.p.qp) != RNICPI_QPS_ERROR)
    cert_ok(QUE->qp_to_error(e->pr.p.qp));
  expect_flushed_both(f, e, 0);
  for (size_t i = 0; i < e->rp.len; i++)
    g_assert_cmphex(e->rp.data[i], ==, 0);
}

static void
test_errors_local_lkey(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a SEND whose SGE carries a wrong lkey: requester RNICPI_WC_LOC_PROT_ERR and "
                 "ERROR; no receive of the responder is consumed with data, and every "
                 "outstanding WR on both sides completes once, flushed");
  err_setup_t e;
  if (!err_open(f, &e, TARGET, 64))
    return;
  rnicpi_sge_t sge = cert_sge(&e.src, 0, 64);
  sge.lkey ^= 0xff0000ffull;
  send_bad_lkey(f, &e, sge);
  err_close(&e);
}

static void
test_errors_local_lkey_high_bits(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a SEND whose SGE's lkey equals the region's in its low 32 bits but has bit 40 "
                 "set names no region: requester RNICPI_WC_LOC_PROT_ERR and ERROR, no receive "
                 "of the responder is consumed with data, every outstanding WR on both sides "
                 "completes once, flushed");
  err_setup_t e;
  if (!err_open(f, &e, TARGET, 64))
    return;
  rnicpi_sge_t sge = cert_sge(&e.src, 0, 64);
  if (sge.lkey > UINT32_MAX) {
    g_test_skip("the device's local keys use more than 32 bits");
    err_close(&e);
    return;
  }
  /* Verbs keys are 32 bits: an adapter that hands the device the low 32
   * bits alone must not let the rest name the region. */
  sge.lkey |= UINT64_C(1) << 40;
  send_bad_lkey(f, &e, sge);
  err_close(&e);
}

/* The receiver's half of recv-too-small alone: a device may tell the
 * requester nothing (siw: no completion in error, no event), and the
 * receiver's status still says what happened. */
static void
test_errors_recv_too_small_receiver(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a 64-byte SEND into a 16-byte receive, the receiver's side: its receive "
                 "completes RNICPI_WC_LOC_LEN_ERR, its queue pair enters ERROR and each of its "
                 "other receives completes once, flushed, with nothing written past the receive");
  err_setup_t e;
  if (!err_open(f, &e, TARGET, 16))
    return;
  cert_post_send(e.pr.a.qp, RNICPI_WR_SEND, &e.src, 0, 64, BAD_ID, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t r = cert_wc(e.pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, e.idp[0]);
  g_assert_cmpint(r.status, ==, RNICPI_WC_LOC_LEN_ERR);
  g_assert_cmphex(r.qp_ctx, ==, e.pr.p.ctx);
  cert_wait_state(e.pr.p.qp, RNICPI_QPS_ERROR);
  cert_expect_flushed(e.pr.p.rcq, e.pr.p.ctx, e.idp + 1, NRECV - 1);
  cert_assert_cq_quiet(e.pr.p.scq);
  cert_buf_check_guards(&e.rp);
  err_close(&e);
}

static void
test_errors_recv_too_small(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a 64-byte SEND into a 16-byte receive: the receiver completes it with "
                 "RNICPI_WC_LOC_LEN_ERR, the requester with an error, both QPs enter ERROR and "
                 "every other outstanding WR completes once, flushed; the receiver gets "
                 "RNICPI_ASYNC_QP_FATAL of cause PROTOCOL and no RNICPI_ASYNC_QP_ACCESS_ERR (its "
                 "memory rights were not violated), the requester RNICPI_ASYNC_QP_REMOTE_ERR of "
                 "cause REMOTE_RECV_LENGTH");
  err_setup_t e;
  if (!err_open(f, &e, TARGET, 16))
    return;
  cert_post_send(e.pr.a.qp, RNICPI_WR_SEND, &e.src, 0, 64, BAD_ID, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t r = cert_wc(e.pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, e.idp[0]);
  g_assert_cmpint(r.status, ==, RNICPI_WC_LOC_LEN_ERR);
  g_assert_cmphex(r.qp_ctx, ==, e.pr.p.ctx);
  expect_failed_wr(&e, RNICPI_WC_GENERAL_ERR, TRUE);
  expect_flushed_both(f, &e, 1);
  cert_wait_qp_async(f, RNICPI_AE_PROTOCOL, e.pr.p.ctx);
  cert_wait_qp_async(f, RNICPI_AE_REMOTE_RECV_LENGTH, e.pr.a.ctx);
  rnicpi_async_event_t *a = cert_poll_async(f, RNICPI_ASYNC_QP_ACCESS_ERR, e.pr.p.ctx, CERT_QUIET_MS);
  if (a != NULL)
    g_test_message("the receiver reported an access violation for a receive too short");
  g_assert_null(a);
  cert_buf_check_guards(&e.rp);
  err_close(&e);
}

static void
test_errors_send_too_long_after_good_sends(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("two 64-byte SENDs then a 65-byte one, posted back to back, into three 64-byte "
                 "receives: the two good SENDs complete successfully at both ends with their "
                 "bytes in place, the third completes its receive with RNICPI_WC_LOC_LEN_ERR and "
                 "itself with an error (the refusal names that message, not an earlier one still "
                 "unconfirmed), both QPs go to ERROR with BROKEN and the rest is flushed once");
  enum { N = 64 };
  err_setup_t e;
  if (!err_open(f, &e, TARGET, N))
    return;
  const uint64_t good[2] = { 0xc000, 0xc001 };
  /* No wait between the posts: a requester completing Sends at placement
   * still has the good ones outstanding when the peer refuses the third. */
  cert_post_send(e.pr.a.qp, RNICPI_WR_SEND, &e.src, 0, N, good[0], RNICPI_WR_SIGNALED, 0, 0);
  cert_post_send(e.pr.a.qp, RNICPI_WR_SEND, &e.src, N, N, good[1], RNICPI_WR_SIGNALED, 0, 0);
  cert_post_send(e.pr.a.qp, RNICPI_WR_SEND, &e.src, 0, N + 1, BAD_ID, RNICPI_WR_SIGNALED, 0, 0);

  for (int i = 0; i < 2; i++) {
    rnicpi_wc_t r = cert_wc(e.pr.p.rcq);
    g_assert_cmphex(r.wr_id, ==, e.idp[i]);
    g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpuint(r.byte_len, ==, N);
    g_assert_cmpmem(e.rp.data + (size_t) i * N, N, e.src.data + (size_t) i * N, N);
  }
  rnicpi_wc_t r = cert_wc(e.pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, e.idp[2]);
  g_assert_cmpint(r.status, ==, RNICPI_WC_LOC_LEN_ERR);

  rnicpi_wc_t wc[4];
  g_assert_cmpint(cert_poll(e.pr.a.scq, wc, 3, CERT_TIMEOUT_MS), ==, 3);
  for (int i = 0; i < 2; i++) {
    g_assert_cmphex(wc[i].wr_id, ==, good[i]);
    g_assert_cmpint(wc[i].status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpuint(wc[i].byte_len, ==, N);
  }
  g_assert_cmphex(wc[2].wr_id, ==, BAD_ID);
  g_test_message("the refused Send completed with status %d", wc[2].status);
  if (!e.at_sent || (wc[2].status != RNICPI_WC_SUCCESS && wc[2].status != RNICPI_WC_WR_FLUSH_ERR)) {
    g_assert_cmpint(wc[2].status, !=, RNICPI_WC_SUCCESS);
    g_assert_cmpint(wc[2].status, !=, RNICPI_WC_WR_FLUSH_ERR);
  }
  cert_assert_cq_quiet(e.pr.a.scq);

  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, e.pr.a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, e.pr.p.ctx));
  cert_wait_qp_async(f, RNICPI_AE_PROTOCOL, e.pr.p.ctx);
  cert_wait_qp_async(f, RNICPI_AE_REMOTE_RECV_LENGTH, e.pr.a.ctx);
  expect_flushed_both(f, &e, NRECV);
  cert_buf_check_guards(&e.rp);
  err_close(&e);
}

/* ---- cq-overflow ------------------------------------------------------ */

static void
test_cq_overflow(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a CQ of depth 4 given 8 completions loses none (all 8 poll, each once) and "
                 "reports RNICPI_ASYNC_CQ_OVERFLOW with the CQ's context");
  if (!cert_require(f, RNICPI_CAP_CQ_OVERFLOW_DETECT))
    return;
  enum { DEPTH = 4, N = 8 };
  cert_side_t s;
  cert_buf_t b;
  cert_side_new(f, &s, 0xd0000, DEPTH, NULL);
  cert_buf_new(s.pd, &b, 64 * N, RW);
  uint64_t ids[N];
  for (int i = 0; i < N; i++) {
    ids[i] = 0xe00 + (uint64_t) i;
    cert_post_recv(s.qp, &b, (size_t) i * 64, 64, ids[i]);
  }
  cert_ok(QUE->qp_to_error(s.qp));
  g_free(cert_wait_async(f, RNICPI_ASYNC_CQ_OVERFLOW, s.rcq->al_ctx));
  g_assert_cmpuint(DAT->cq_count(s.rcq), ==, N);
  rnicpi_wc_t wc[N];
  int n = cert_poll(s.rcq, wc, N, CERT_TIMEOUT_MS);
  cert_assert_each_once(wc, n, ids, N, RNICPI_WC_WR_FLUSH_ERR);
  for (int i = 0; i < n; i++)
    g_assert_cmphex(wc[i].wr_id, ==, ids[i]);
  cert_assert_cq_quiet(s.rcq);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_cq_overflow_exact(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a CQ of depth 4 holds 4 completions without RNICPI_ASYNC_CQ_OVERFLOW; the 5th "
                 "(from a second queue pair sharing the CQ) raises it, once; all 5 poll, each "
                 "once");
  if (!cert_require(f, RNICPI_CAP_CQ_OVERFLOW_DETECT))
    return;
  enum { DEPTH = 4 };
  rnicpi_pd_t *pd = NULL;
  rnicpi_cq_t *scq = NULL, *rcq = NULL;
  rnicpi_qp_t *q1 = NULL, *q2 = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_ok(QUE->cq_create(f->dev, 16, 0xd1001, &scq));
  cert_ok(QUE->cq_create(f->dev, DEPTH, 0xd1002, &rcq));
  rnicpi_qp_attr_t a = cert_qp_attr(f, scq, rcq);
  cert_ok(QUE->qp_create(pd, &a, 0xd1000, &q1));
  cert_ok(QUE->qp_create(pd, &a, 0xd1010, &q2));
  cert_buf_t b;
  cert_buf_new(pd, &b, 64 * (DEPTH + 1), RW);
  uint64_t ids[DEPTH + 1];
  for (int i = 0; i <= DEPTH; i++)
    ids[i] = 0xe10 + (uint64_t) i;
  for (int i = 0; i < DEPTH; i++)
    cert_post_recv(q1, &b, (size_t) i * 64, 64, ids[i]);
  cert_post_recv(q2, &b, (size_t) DEPTH * 64, 64, ids[DEPTH]);

  /* Exactly DEPTH: full, not overflowed. */
  cert_ok(QUE->qp_to_error(q1));
  cert_limit_t w;
  cert_limit_begin(&w, "a full receive CQ (cq_count)", (gint64) CERT_TIMEOUT_MS * 1000);
  while (DAT->cq_count(rcq) < DEPTH && !cert_limit_over(&w))
    g_usleep(1000);
  cert_limit_end(&w);
  g_assert_cmpuint(DAT->cq_count(rcq), ==, DEPTH);
  rnicpi_async_event_t *ev = cert_poll_async(f, RNICPI_ASYNC_CQ_OVERFLOW, 0xd1002, 300);
  if (ev != NULL)
    g_test_message("CQ_OVERFLOW with %d completions in a CQ of depth %d", DEPTH, DEPTH);
  g_assert_null(ev);

  /* One more: overflowed. */
  cert_ok(QUE->qp_to_error(q2));
  g_free(cert_wait_async(f, RNICPI_ASYNC_CQ_OVERFLOW, 0xd1002));
  g_assert_cmpuint(DAT->cq_count(rcq), ==, DEPTH + 1);
  rnicpi_wc_t wc[DEPTH + 1];
  int n = cert_poll(rcq, wc, DEPTH + 1, CERT_TIMEOUT_MS);
  cert_assert_each_once(wc, n, ids, DEPTH + 1, RNICPI_WC_WR_FLUSH_ERR);
  cert_assert_cq_quiet(rcq);
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_CQ_OVERFLOW, 0xd1002, 100));

  cert_ok(QUE->qp_destroy(q1));
  cert_ok(QUE->qp_destroy(q2));
  cert_buf_free(&b);
  cert_ok(QUE->cq_destroy(scq));
  cert_ok(QUE->cq_destroy(rcq));
  cert_ok(DEV->pd_free(pd));
}

/* Receives of @qp (each 64 bytes of @b from @slot on, ids from @id0)
 * flushed into its CQ by qp_to_error. */
static void
flush_recvs(rnicpi_qp_t *qp, cert_buf_t *b, int slot, int n, uint64_t id0)
{
  for (int i = 0; i < n; i++)
    cert_post_recv(qp, b, (size_t) (slot + i) * 64, 64, id0 + (uint64_t) i);
  cert_ok(QUE->qp_to_error(qp));
}

/* @n completions of @rcq, in order from @id0, flushed, then nothing. */
static void
poll_in_order(rnicpi_cq_t *rcq, int n, uint64_t id0)
{
  rnicpi_wc_t wc[32];
  g_assert_cmpint(n, <=, 32);
  g_assert_cmpint(cert_poll(rcq, wc, n, CERT_TIMEOUT_MS), ==, n);
  for (int i = 0; i < n; i++) {
    g_assert_cmphex(wc[i].wr_id, ==, id0 + (uint64_t) i);
    g_assert_cmpint(wc[i].status, ==, RNICPI_WC_WR_FLUSH_ERR);
  }
  cert_assert_cq_quiet(rcq);
}

static void
test_cq_overflow_again(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a CQ of depth 4 that has been used (3 completions polled, so its entries "
                 "wrap) then gets 20 at once (past any room a provider keeps beyond the depth) "
                 "loses none and keeps their order, reporting RNICPI_ASYNC_CQ_OVERFLOW; drained "
                 "empty and given 20 more, it reports RNICPI_ASYNC_CQ_OVERFLOW again and again "
                 "keeps all 20 in order");
  if (!cert_require(f, RNICPI_CAP_CQ_OVERFLOW_DETECT))
    return;
  enum { DEPTH = 4, N = 20 };
  rnicpi_pd_t *pd = NULL;
  rnicpi_cq_t *scq = NULL, *rcq = NULL;
  rnicpi_qp_t *q[3] = { NULL };
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_ok(QUE->cq_create(f->dev, 32, 0xd2001, &scq));
  cert_ok(QUE->cq_create(f->dev, DEPTH, 0xd2002, &rcq));
  rnicpi_qp_attr_t a = cert_qp_attr(f, scq, rcq);
  for (int i = 0; i < 3; i++)
    cert_ok(QUE->qp_create(pd, &a, 0xd2000 + 0x10 * (uint64_t) i, &q[i]));
  cert_buf_t b;
  cert_buf_new(pd, &b, 64 * (3 + 2 * N), RW);

  flush_recvs(q[0], &b, 0, 3, 0xe20);
  poll_in_order(rcq, 3, 0xe20);
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_CQ_OVERFLOW, 0xd2002, 0));
  for (int round = 0; round < 2; round++) {
    uint64_t id0 = 0xe40 + 0x20 * (uint64_t) round;
    flush_recvs(q[1 + round], &b, 3 + round * N, N, id0);
    g_free(cert_wait_async(f, RNICPI_ASYNC_CQ_OVERFLOW, 0xd2002));
    poll_in_order(rcq, N, id0);
    g_assert_null(cert_poll_async(f, RNICPI_ASYNC_CQ_OVERFLOW, 0xd2002, 100));
  }
  for (int i = 0; i < 3; i++)
    cert_ok(QUE->qp_destroy(q[i]));
  cert_buf_free(&b);
  cert_ok(QUE->cq_destroy(scq));
  cert_ok(QUE->cq_destroy(rcq));
  cert_ok(DEV->pd_free(pd));
}

void
cert_register_errors(void)
{
  cert_add("/rnicpi/errors/write-past-end", test_errors_write_past_end);
  cert_add("/rnicpi/cq-overflow/wrapped-and-again", test_cq_overflow_again);
  cert_add("/rnicpi/errors/wrong-rkey", test_errors_wrong_rkey);
  cert_add("/rnicpi/errors/no-remote-write", test_errors_no_remote_write);
  cert_add("/rnicpi/errors/read-no-remote-read", test_errors_read_no_remote_read);
  cert_add("/rnicpi/errors/local-lkey", test_errors_local_lkey);
  cert_add("/rnicpi/errors/local-lkey-high-bits", test_errors_local_lkey_high_bits);
  cert_add("/rnicpi/errors/recv-too-small-receiver", test_errors_recv_too_small_receiver);
  cert_add("/rnicpi/errors/recv-too-small", test_errors_recv_too_small);
  cert_add("/rnicpi/errors/send-too-long-after-good-sends",
           test_errors_send_too_long_after_good_sends);
  cert_add("/rnicpi/cq-overflow/no-loss", test_cq_overflow);
  cert_add("/rnicpi/cq-overflow/exact-depth", test_cq_overflow_exact);
}
