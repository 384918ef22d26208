/*
 * cert-rnicpi: completion queues and queue pairs without a connection
 * (rnicpi_queue_ops_t, and the parts of rnicpi_data_ops_t an IDLE queue
 * pair allows).  Completions are produced by flushing posted receives, so
 * none of these tests needs the CM verbs.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define QP_CTX 0xc0000

/* ---- cq --------------------------------------------------------------- */

static void
test_cq_create_destroy(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.cq_create/cq_destroy: a CQ belongs to its device, keeps its context, "
                 "starts empty, and destroys");
  uint32_t depths[] = { 1, 16, cert_min(4096, f->caps.max_cqe) };
  for (size_t i = 0; i < G_N_ELEMENTS(depths); i++) {
    rnicpi_cq_t *cq = NULL;
    cert_ok(QUE->cq_create(f->dev, depths[i], 0x7700 + i, &cq));
    g_assert_nonnull(cq);
    g_assert_true(cq->dev == f->dev);
    g_assert_cmphex(cq->al_ctx, ==, 0x7700 + i);
    g_assert_cmpuint(DAT->cq_count(cq), ==, 0);
    cert_ok(QUE->cq_destroy(cq));
  }
}

static void
test_cq_destroy_busy(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.cq_destroy: a CQ a queue pair uses (as send or as receive CQ) is "
                 "RNICPI_EBUSY; after the QP is destroyed it destroys");
  cert_side_t s;
  cert_side_new(f, &s, QP_CTX, 16, NULL);
  cert_cmpst(QUE->cq_destroy(s.scq), RNICPI_EBUSY);
  cert_cmpst(QUE->cq_destroy(s.rcq), RNICPI_EBUSY);
  /* The QP still works: a receive posts. */
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_WRITE);
  cert_post_recv(s.qp, &b, 0, 64, 1);
  cert_buf_free(&b);
  cert_side_free(&s); /* destroys the QP first, then the CQs */
}

static void
test_cq_depth_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.cq_create: a depth above caps.max_cqe is refused with RNICPI_ELIMIT");
  if (f->caps.max_cqe == UINT32_MAX) {
    g_test_skip("max_cqe is UINT32_MAX: no depth lies above it");
    return;
  }
  rnicpi_cq_t *cq = NULL;
  cert_cmpst(QUE->cq_create(f->dev, f->caps.max_cqe + 1, 1, &cq), RNICPI_ELIMIT);
  g_assert_null(cq);
}

static void
test_cq_poll_empty(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.poll_cq: an empty CQ returns 0 and leaves the entries untouched; "
                 "cq_count is 0");
  rnicpi_cq_t *cq;
  cert_ok(QUE->cq_create(f->dev, 8, 5, &cq));
  rnicpi_wc_t wc[4];
  memset(wc, 0x5c, sizeof(wc));
  g_assert_cmpint(DAT->poll_cq(cq, wc, 4), ==, 0);
  g_assert_cmpint(DAT->poll_cq(cq, wc, 1), ==, 0);
  g_assert_cmphex(wc[0].wr_id, ==, 0x5c5c5c5c5c5c5c5cull);
  g_assert_cmpuint(DAT->cq_count(cq), ==, 0);
  cert_ok(QUE->cq_destroy(cq));
}

static void
test_cq_notify(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.arm_cq: after arming, the next completion brings one cq_notify upcall "
                 "with the CQ's context; without re-arming, the following one brings none");
  cert_side_t s;
  cert_buf_t b;
  cert_side_new(f, &s, QP_CTX, 16, NULL);
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_WRITE);

  /* Arming announces nothing by itself. */
  cert_post_recv(s.qp, &b, 0, 64, 1);
  cert_ok(DAT->arm_cq(s.rcq));
  g_assert_false(cert_wait_notify(f, s.rcq->al_ctx, CERT_QUIET_MS));

  /* A flushed receive is a completion. */
  cert_ok(QUE->qp_to_error(s.qp));
  g_assert_true(cert_wait_notify(f, s.rcq->al_ctx, CERT_TIMEOUT_MS));
  rnicpi_wc_t wc = cert_wc(s.rcq);
  g_assert_cmphex(wc.wr_id, ==, 1);

  /* One-shot: a second completion without re-arming is not announced. */
  cert_post_recv(s.qp, &b, 0, 64, 2);
  wc = cert_wc(s.rcq);
  g_assert_cmphex(wc.wr_id, ==, 2);
  g_assert_false(cert_wait_notify(f, s.rcq->al_ctx, CERT_QUIET_MS));

  /* Re-armed, the next one is. */
  cert_ok(DAT->arm_cq(s.rcq));
  cert_post_recv(s.qp, &b, 0, 64, 3);
  g_assert_true(cert_wait_notify(f, s.rcq->al_ctx, CERT_TIMEOUT_MS));
  wc = cert_wc(s.rcq);
  g_assert_cmphex(wc.wr_id, ==, 3);
  /* The send CQ saw nothing and was never armed. */
  g_assert_false(cert_wait_notify(f, s.scq->al_ctx, 0));

  cert_buf_free(&b);
  cert_side_free(&s);
}

/* ---- qp --------------------------------------------------------------- */

static void
test_qp_create(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.qp_create: a queue pair starts in RNICPI_QPS_IDLE, belongs to its "
                 "domain, keeps its context, and has a number distinct from another's");
  cert_side_t s;
  cert_side_new(f, &s, QP_CTX, 16, NULL);
  g_assert_true(s.qp->pd == s.pd);
  g_assert_cmphex(s.qp->al_ctx, ==, QP_CTX);
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_IDLE);

  rnicpi_qp_attr_t a = cert_qp_attr(f, s.scq, s.rcq);
  rnicpi_qp_t *qp2;
  cert_ok(QUE->qp_create(s.pd, &a, QP_CTX + 0x100, &qp2));
  g_assert_cmpint(QUE->qp_state(qp2), ==, RNICPI_QPS_IDLE);
  g_assert_cmpuint(qp2->qp_num, !=, s.qp->qp_num);
  cert_ok(QUE->qp_destroy(qp2));
  cert_side_free(&s);
}

typedef struct {
  const char *field;
  size_t offset;
  size_t cap_offset;
} qp_limit_t;

#define LIMIT(f, c) { #f, offsetof(rnicpi_qp_attr_t, f), offsetof(rnicpi_caps_t, c) }
static const qp_limit_t qp_limits[] = {
  LIMIT(max_send_wr, max_qp_wr),
  LIMIT(max_recv_wr, max_qp_wr),
  LIMIT(max_send_sge, max_send_sge),
  LIMIT(max_recv_sge, max_recv_sge),
  LIMIT(max_rdma_write_sge, max_rdma_write_sge),
  LIMIT(max_rdma_read_sge, max_rdma_read_sge),
  LIMIT(ird, max_ird),
  LIMIT(ord, max_ord),
};

static void
test_qp_limits(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.qp_create: each attribute one above its capability-record limit "
                 "(WRs, SGEs, IRD, ORD) is refused with RNICPI_ELIMIT; at the limit it is not");
  cert_side_t s;
  cert_side_new(f, &s, QP_CTX, 16, NULL);
  for (size_t i = 0; i < G_N_ELEMENTS(qp_limits); i++) {
    const qp_limit_t *l = &qp_limits[i];
    uint32_t cap;
    memcpy(&cap, (const char *) &f->caps + l->cap_offset, sizeof(cap));
    if (cap == UINT32_MAX)
      continue;
    g_test_message("attribute %s, limit %u", l->field, cap);
    rnicpi_qp_attr_t a = cert_qp_attr(f, s.scq, s.rcq);
    uint32_t over = cap + 1;
    memcpy((char *) &a + l->offset, &over, sizeof(over));
    rnicpi_qp_t *qp = NULL;
    cert_cmpst(QUE->qp_create(s.pd, &a, QP_CTX + 1, &qp), RNICPI_ELIMIT);
    g_assert_null(qp);
  }
  /* Small limits can be tried at the limit itself without exhausting memory. */
  rnicpi_qp_attr_t a = cert_qp_attr(f, s.scq, s.rcq);
  a.max_send_sge = f->caps.max_send_sge;
  a.max_recv_sge = f->caps.max_recv_sge;
  a.ird = f->caps.max_ird;
  a.ord = f->caps.max_ord;
  rnicpi_qp_t *qp = NULL;
  cert_ok(QUE->qp_create(s.pd, &a, QP_CTX + 2, &qp));
  cert_ok(QUE->qp_destroy(qp));
  cert_side_free(&s);
}

static void
test_qp_post_send_idle(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.post_send: on an IDLE queue pair it is RNICPI_ESTATE and makes no "
                 "completion");
  cert_side_t s;
  cert_buf_t b;
  cert_side_new(f, &s, QP_CTX, 16, NULL);
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  rnicpi_sge_t sge = cert_sge(&b, 0, 64);
  rnicpi_send_wr_t wr = { .wr_id = 9, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1 };
  cert_cmpst(DAT->post_send(s.qp, &wr), RNICPI_ESTATE);
  wr.opcode = RNICPI_WR_RDMA_WRITE;
  wr.remote_addr = cert_raddr(&b, 0);
  wr.rkey = b.mr->rkey;
  cert_cmpst(DAT->post_send(s.qp, &wr), RNICPI_ESTATE);
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_IDLE);
  cert_assert_cq_quiet(s.scq);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_qp_post_recv_idle(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.post_recv: an IDLE queue pair accepts receives and completes none of "
                 "them while no connection exists");
  cert_side_t s;
  cert_buf_t b;
  cert_side_new(f, &s, QP_CTX, 16, NULL);
  cert_buf_new(s.pd, &b, 256, RNICPI_ACCESS_LOCAL_WRITE);
  for (uint64_t i = 0; i < 4; i++)
    cert_post_recv(s.qp, &b, i * 64, 64, 100 + i);
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_IDLE);
  cert_assert_cq_quiet(s.rcq);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_qp_to_error_flush(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.qp_to_error: the QP enters ERROR and every posted receive completes "
                 "exactly once with RNICPI_WC_WR_FLUSH_ERR, opcode RECV and the QP's context; a "
                 "receive posted afterwards completes flushed too");
  cert_side_t s;
  cert_buf_t b;
  cert_side_new(f, &s, QP_CTX, 16, NULL);
  cert_buf_new(s.pd, &b, 512, RNICPI_ACCESS_LOCAL_WRITE);
  uint64_t ids[8];
  for (int i = 0; i < 8; i++) {
    ids[i] = 0x500 + (uint64_t) i;
    cert_post_recv(s.qp, &b, (size_t) i * 64, 64, ids[i]);
  }
  cert_ok(QUE->qp_to_error(s.qp));
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_ERROR);

  rnicpi_wc_t wc[9];
  int n = cert_poll(s.rcq, wc, 8, CERT_TIMEOUT_MS);
  for (int i = 0; i < n; i++) {
    g_assert_cmpint(wc[i].opcode, ==, RNICPI_WC_RECV);
    g_assert_cmphex(wc[i].qp_ctx, ==, QP_CTX);
  }
  cert_assert_each_once(wc, n, ids, 8, RNICPI_WC_WR_FLUSH_ERR);
  cert_assert_cq_quiet(s.rcq);
  cert_assert_cq_quiet(s.scq);

  uint64_t late = 0x5ff;
  cert_post_recv(s.qp, &b, 0, 64, late);
  cert_expect_flushed(s.rcq, QP_CTX, &late, 1);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_qp_reset(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.qp_reset: an ERROR queue pair returns to IDLE, where post_send is "
                 "RNICPI_ESTATE again and receives wait instead of flushing");
  cert_side_t s;
  cert_buf_t b;
  cert_side_new(f, &s, QP_CTX, 16, NULL);
  cert_buf_new(s.pd, &b, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_post_recv(s.qp, &b, 0, 64, 1);
  cert_ok(QUE->qp_to_error(s.qp));
  uint64_t id = 1;
  cert_expect_flushed(s.rcq, QP_CTX, &id, 1);

  cert_ok(QUE->qp_reset(s.qp));
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_IDLE);
  rnicpi_sge_t sge = cert_sge(&b, 0, 64);
  rnicpi_send_wr_t wr = { .wr_id = 2, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1 };
  cert_cmpst(DAT->post_send(s.qp, &wr), RNICPI_ESTATE);
  cert_post_recv(s.qp, &b, 0, 64, 3);
  cert_assert_cq_quiet(s.rcq);
  cert_assert_cq_quiet(s.scq);

  /* And it can go around again. */
  cert_ok(QUE->qp_to_error(s.qp));
  id = 3;
  cert_expect_flushed(s.rcq, QP_CTX, &id, 1);
  cert_ok(QUE->qp_reset(s.qp));
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_IDLE);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_qp_destroy(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.qp_destroy: outstanding receives complete flushed, exactly once, "
                 "before the queue pair goes; its CQs and domain are then free");
  cert_side_t s;
  cert_buf_t b;
  cert_side_new(f, &s, QP_CTX, 16, NULL);
  cert_buf_new(s.pd, &b, 256, RNICPI_ACCESS_LOCAL_WRITE);
  uint64_t ids[4];
  for (int i = 0; i < 4; i++) {
    ids[i] = 0x900 + (uint64_t) i;
    cert_post_recv(s.qp, &b, (size_t) i * 64, 64, ids[i]);
  }
  cert_ok(QUE->qp_destroy(s.qp));
  s.qp = NULL;
  cert_expect_flushed(s.rcq, QP_CTX, ids, 4);
  cert_buf_free(&b);
  cert_side_free(&s);
}

void
cert_register_queue(void)
{
  cert_add("/rnicpi/cq/create-destroy", test_cq_create_destroy);
  cert_add("/rnicpi/cq/destroy-busy", test_cq_destroy_busy);
  cert_add("/rnicpi/cq/depth-limit", test_cq_depth_limit);
  cert_add("/rnicpi/cq/poll-empty", test_cq_poll_empty);
  cert_add("/rnicpi/cq/notify", test_cq_notify);
  cert_add("/rnicpi/qp/create", test_qp_create);
  cert_add("/rnicpi/qp/limits", test_qp_limits);
  cert_add("/rnicpi/qp/post-send-idle", test_qp_post_send_idle);
  cert_add("/rnicpi/qp/post-recv-idle", test_qp_post_recv_idle);
  cert_add("/rnicpi/qp/to-error-flush", test_qp_to_error_flush);
  cert_add("/rnicpi/qp/reset", test_qp_reset);
  cert_add("/rnicpi/qp/destroy", test_qp_destroy);
}
