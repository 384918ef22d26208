/*
 * vp/iwarp shared receive queues (RNIC-PI 1.1, rnicpi_srq_ops_t).
 *
 * An SRQ is a queue of receives that every QP created with it takes from
 * (RDMAC verbs 6.2.4, IBTA 10.2.9.6): the first segment of an untagged
 * Send-queue message (RFC 5041 4.3, QN 0) on such a QP pops the SRQ's
 * head, which then belongs to that QP until the message completes on the
 * QP's receive CQ with its context.  iWARP has no receiver-not-ready
 * retry (RFC 5040 7.1): a Send that finds the SRQ empty is a Terminate
 * (DDP untagged, no buffer) on its connection, as it is for a QP's own
 * queue, and the other QPs of the SRQ go on.  A QP in ERROR flushes the
 * receive it took and nothing of the SRQ's.  The limit event is raised
 * once when a take leaves fewer receives than the armed limit, then the
 * limit disarms until srq_modify arms it again (verbs' SRQ limit).
 *
 * Locks.  The SRQ's lock is a leaf: a QP's receive pass takes it under
 * qp->lock to pop a receive or to give an entry back, and a post takes it
 * alone.  The limit event is queued after it is let go (dev->ev_lock).
 * RNIC-PI has no "last WQE reached" event: a QP leaves an SRQ only when
 * it is destroyed, and qp_destroy returns after its last take.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "iw.h"

static inline iw_srq_t *to_iw_srq(rnicpi_srq_t *s) { return (iw_srq_t *) s; }

static rnicpi_status_t
iw_srq_create(rnicpi_pd_t *p, uint32_t max_wr, uint32_t max_sge, uint64_t ctx, rnicpi_srq_t **out)
{
  iw_dev_t *dev = to_iw_dev(p->dev);
  if (max_wr == 0 || max_wr > dev->caps.max_qp_wr || max_sge == 0 ||
      max_sge > dev->caps.max_recv_sge || !rnicpi_count_take(&dev->nsrq, dev->caps.max_srq))
    return RNICPI_ELIMIT;
  iw_srq_t *srq = g_new0(iw_srq_t, 1);
  srq->base.pd = p;
  srq->base.al_ctx = ctx;
  srq->dev = dev;
  srq->pd = to_iw_pd(p);
  srq->max_wr = max_wr;
  srq->max_sge = max_sge;
  g_mutex_init(&srq->lock);
  rnicpi_fifo_init(&srq->rq, offsetof(iw_rwqe_t, q_next));
  g_atomic_int_inc(&srq->pd->nobj);
  *out = &srq->base;
  return RNICPI_OK;
}

static rnicpi_status_t
iw_srq_modify(rnicpi_srq_t *s, uint32_t max_wr, uint32_t limit)
{
  iw_srq_t *srq = to_iw_srq(s);
  rnicpi_status_t st = RNICPI_OK;
  g_mutex_lock(&srq->lock);
  if (max_wr != 0 && max_wr < srq->rq.len) {
    st = RNICPI_EBUSY;
  } else {
    if (max_wr != 0)
      srq->max_wr = max_wr;
    srq->limit = limit;
  }
  g_mutex_unlock(&srq->lock);
  return st;
}

static rnicpi_status_t
iw_srq_destroy(rnicpi_srq_t *s)
{
  iw_srq_t *srq = to_iw_srq(s);
  if (g_atomic_int_get(&srq->nqp) != 0)
    return RNICPI_EBUSY;
  iw_rwqe_t *r;
  while ((r = rnicpi_fifo_pop(&srq->rq)) != NULL)
    g_free(r);
  rnicpi_cache_clear(&srq->cache);
  g_mutex_clear(&srq->lock);
  g_atomic_int_dec_and_test(&srq->pd->nobj);
  rnicpi_count_put(&srq->dev->nsrq);
  g_free(srq);
  return RNICPI_OK;
}

static rnicpi_status_t
iw_post_srq_recv(rnicpi_srq_t *s, const rnicpi_recv_wr_t *wr)
{
  iw_srq_t *srq = to_iw_srq(s);
  if (wr->num_sge > srq->max_sge || wr->num_sge > IW_MAX_SGE)
    return RNICPI_ELIMIT;
  uint64_t total = 0;
  for (uint32_t i = 0; i < wr->num_sge; i++)
    total += wr->sg_list[i].length;
  rnicpi_status_t st = RNICPI_OK;
  g_mutex_lock(&srq->lock);
  if (srq->rq.len >= srq->max_wr) {
    st = RNICPI_EFULL;
  } else {
    iw_rwqe_t *r = rnicpi_cache_get(&srq->cache, sizeof(iw_rwqe_t));
    r->wr_id = wr->wr_id;
    r->num_sge = wr->num_sge;
    r->total = total;
    if (wr->num_sge > 0) /* sg_list may be NULL (C11 7.24.1p2, as in post_recv) */
      memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(rnicpi_sge_t));
    rnicpi_fifo_push(&srq->rq, r);
  }
  g_mutex_unlock(&srq->lock);
  return st;
}

static uint32_t
iw_srq_count(rnicpi_srq_t *s)
{
  iw_srq_t *srq = to_iw_srq(s);
  g_mutex_lock(&srq->lock);
  uint32_t n = srq->rq.len;
  g_mutex_unlock(&srq->lock);
  return n;
}

iw_rwqe_t *
iw_srq_take(iw_srq_t *srq)
{
  g_mutex_lock(&srq->lock);
  iw_rwqe_t *r = rnicpi_fifo_pop(&srq->rq);
  gboolean limit = r != NULL && srq->limit != 0 && srq->rq.len < srq->limit;
  if (limit)
    srq->limit = 0; /* one event per arming */
  g_mutex_unlock(&srq->lock);
  if (limit) {
    rnicpi_async_event_t ev = rnicpi_async_event(RNICPI_ASYNC_SRQ_LIMIT, srq->base.al_ctx,
                                                 RNICPI_AE_UNSPECIFIED);
    iw_defer_async(srq->dev, &ev);
  }
  return r;
}

void
iw_srq_put(iw_srq_t *srq, iw_rwqe_t *r)
{
  g_mutex_lock(&srq->lock);
  rnicpi_cache_put(&srq->cache, r);
  g_mutex_unlock(&srq->lock);
}

rnicpi_status_t
iw_srq_attach(iw_srq_t *srq, iw_pd_t *pd)
{
  /* The receives name regions of the SRQ's domain, which a QP's placement
   * checks against its own (iw_rx_scatter). */
  if (srq->pd != pd)
    return RNICPI_EINVAL;
  g_atomic_int_inc(&srq->nqp);
  return RNICPI_OK;
}

void
iw_srq_detach(iw_srq_t *srq)
{
  g_atomic_int_add(&srq->nqp, -1);
}

const rnicpi_srq_ops_t iw_srq_ops = {
  .size = sizeof(rnicpi_srq_ops_t),
  .srq_create = iw_srq_create,
  .srq_modify = iw_srq_modify,
  .srq_destroy = iw_srq_destroy,
  .post_srq_recv = iw_post_srq_recv,
  .srq_count = iw_srq_count,
};
