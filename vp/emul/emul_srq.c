/*
 * vp/emul shared receive queues.
 *
 * An SRQ is a queue of receives under the fabric lock that every QP created
 * with it takes from (IBTA 10.2.9.6): a send to such a QP pops the SRQ's
 * head, in-process or across processes, and completes on that QP's receive
 * CQ.  A QP in ERROR flushes its own queues, not the SRQ's, which stays
 * usable by the other QPs.  The limit event is raised once when a take
 * leaves fewer receives than the armed limit, then disarms.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "emul.h"
#include "emul_ring.h"

static inline emul_srq_t *to_emul_srq(rnicpi_srq_t *s) { return (emul_srq_t *) s; }

static rnicpi_status_t
emul_srq_create(rnicpi_pd_t *p, uint32_t max_wr, uint32_t max_sge, uint64_t ctx, rnicpi_srq_t **out)
{
  emul_dev_t *dev = to_emul_dev(p->dev);
  if (max_wr == 0 || max_wr > dev->caps.max_qp_wr || max_sge == 0 || max_sge > dev->caps.max_recv_sge)
    return RNICPI_ELIMIT;
  emul_srq_t *srq = g_new0(emul_srq_t, 1);
  srq->base.pd = p;
  srq->base.al_ctx = ctx;
  srq->pd = to_emul_pd(p);
  srq->max_wr = max_wr;
  srq->max_sge = max_sge;
  emul_wq_init(&srq->rq, sizeof(emul_rwqe_t), max_sge);
  g_atomic_int_inc(&srq->pd->nobj);
  *out = &srq->base;
  return RNICPI_OK;
}

static rnicpi_status_t
emul_srq_modify(rnicpi_srq_t *s, uint32_t max_wr, uint32_t limit)
{
  emul_srq_t *srq = to_emul_srq(s);
  rnicpi_status_t st = RNICPI_OK;
  emul_fabric_lock();
  if (max_wr != 0 && max_wr < srq->rq.q.len) {
    st = RNICPI_EBUSY;
  } else {
    if (max_wr != 0)
      srq->max_wr = max_wr;
    srq->limit = limit;
  }
  emul_fabric_unlock();
  return st;
}

static rnicpi_status_t
emul_srq_destroy(rnicpi_srq_t *s)
{
  emul_srq_t *srq = to_emul_srq(s);
  emul_fabric_lock();
  gboolean busy = srq->qps != NULL;
  emul_fabric_unlock();
  if (busy)
    return RNICPI_EBUSY;
  emul_wq_clear(&srq->rq);
  g_atomic_int_dec_and_test(&srq->pd->nobj);
  g_free(srq);
  return RNICPI_OK;
}

/* A take left the queue below its armed limit: say it once. */
void
emul_srq_took(emul_srq_t *srq)
{
  if (srq->limit != 0 && srq->rq.q.len < srq->limit) {
    srq->limit = 0;
    emul_defer_async(to_emul_dev(srq->pd->base.dev), RNICPI_ASYNC_SRQ_LIMIT, srq->base.al_ctx,
                     RNICPI_AE_UNSPECIFIED);
  }
}

static rnicpi_status_t
emul_post_srq_recv(rnicpi_srq_t *s, const rnicpi_recv_wr_t *wr)
{
  emul_srq_t *srq = to_emul_srq(s);
  emul_work_t w = { .nnotify = 0 };
  rnicpi_status_t st = RNICPI_OK;
  if (wr->num_sge > srq->max_sge)
    return RNICPI_ELIMIT;
  emul_fabric_lock();
  if (srq->rq.q.len >= srq->max_wr) {
    st = RNICPI_EFULL;
  } else {
    emul_rwqe_keep(&srq->rq, wr);
    /* Any sender waiting for a receive of one of these QPs may go on. */
    for (GList *l = srq->qps; l != NULL; l = l->next) {
      emul_qp_t *qp = l->data;
      if (qp->peer != NULL)
        emul_qp_progress(qp->peer, &w);
      else if (qp->x != NULL) {
        /* Its latency posts hold that lock alone.  Not emul_link_take,
         * which may let the fabric lock go in the middle of this walk: a
         * ring link never has a copy running with it let go. */
        emul_link_t *l = emul_link_take_post(qp);
        emul_ring_recv_posted(qp, &w);
        emul_link_drop(l);
      }
    }
  }
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return st;
}

static uint32_t
emul_srq_count(rnicpi_srq_t *s)
{
  emul_fabric_lock();
  uint32_t n = to_emul_srq(s)->rq.q.len;
  emul_fabric_unlock();
  return n;
}

const rnicpi_srq_ops_t emul_srq_ops = {
  .size = sizeof(rnicpi_srq_ops_t),
  .srq_create = emul_srq_create,
  .srq_modify = emul_srq_modify,
  .srq_destroy = emul_srq_destroy,
  .post_srq_recv = emul_post_srq_recv,
  .srq_count = emul_srq_count,
};
