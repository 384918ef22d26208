/*
 * vp/emul shared receive queues.
 *
 * An SRQ is a queue of receives that every QP created with it takes from
 * (IBTA 10.2.9.6): a send to such a QP pops the SRQ's head, in-process or
 * across processes, and completes on that QP's receive CQ.  A QP in ERROR
 * flushes its own queues, not the SRQ's, which stays usable by the other
 * QPs.  The limit event is raised once when a take leaves fewer receives
 * than the armed limit, then disarms.
 *
 * Locks.  The queue has a lock of its own (emul_srq_t.lock), a leaf taken
 * under whatever the taker holds: a Send of an in-process connection on
 * the fast path holds its link's lock alone, so connections whose QPs
 * share an SRQ meet only there.  A post takes that lock alone, and the
 * fabric lock after it only when a Send found the queue empty and waits
 * for a receive (emul_srq_t.starved, InfiniBand's RNR wait), in this
 * process or from another (a ring's drain marks it too): then it runs the
 * waiting senders of every QP of the SRQ, each under its link.  (A ring's
 * frames owed for room, which a QP's own receive post pumps, are pumped
 * when the peer says there is room: X_SPACE.)
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
  if (max_wr == 0 || max_wr > dev->caps.max_qp_wr || max_sge == 0 ||
      max_sge > dev->caps.max_recv_sge || !rnicpi_count_take(&dev->nsrq, dev->caps.max_srq))
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
  rnicpi_spin_lock(&srq->lock);
  if (max_wr != 0 && max_wr < srq->rq.q.len) {
    st = RNICPI_EBUSY;
  } else {
    if (max_wr != 0)
      srq->max_wr = max_wr;
    srq->limit = limit;
  }
  rnicpi_spin_unlock(&srq->lock);
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
  rnicpi_count_put(&to_emul_dev(s->pd->dev)->nsrq);
  g_free(srq);
  return RNICPI_OK;
}

gboolean
emul_srq_took(emul_srq_t *srq)
{
  if (srq->limit == 0 || srq->rq.q.len >= srq->limit)
    return FALSE;
  srq->limit = 0;
  return TRUE;
}

void
emul_srq_limit(emul_srq_t *srq)
{
  emul_defer_async(to_emul_dev(srq->pd->base.dev), RNICPI_ASYNC_SRQ_LIMIT, srq->base.al_ctx,
                   RNICPI_AE_UNSPECIFIED);
}

static rnicpi_status_t
emul_post_srq_recv(rnicpi_srq_t *s, const rnicpi_recv_wr_t *wr)
{
  emul_srq_t *srq = to_emul_srq(s);
  emul_work_t w = { .nnotify = 0 };
  rnicpi_status_t st = RNICPI_OK;
  if (wr->num_sge > srq->max_sge)
    return RNICPI_ELIMIT;
  gboolean starved = FALSE;
  rnicpi_spin_lock(&srq->lock);
  if (srq->rq.q.len >= srq->max_wr) {
    st = RNICPI_EFULL;
  } else {
    emul_rwqe_keep(&srq->rq, wr);
    starved = srq->starved;
    srq->starved = FALSE;
  }
  rnicpi_spin_unlock(&srq->lock);
  if (st != RNICPI_OK || !starved)
    return st;
  /* A sender waits for a receive of one of these QPs: each may go on.  A
   * sender that found the queue empty marked it before it let its link
   * (or the fabric lock) go, with its request queued: taking each link
   * here finds that request.  A QP connected to another process runs its
   * ring's waiting Send (emul_ring_recv_posted): the drain that found the
   * queue empty marked it, and held the fabric lock until the Send was
   * queued. */
  emul_lock_data_path();
  for (GList *i = srq->qps; i != NULL; i = i->next) {
    emul_qp_t *qp = i->data;
    /* Not emul_link_take, which may let the fabric lock go in the middle
     * of this walk: a link whose copy runs with its lock let go is marked,
     * and its copier runs the queues when done (emul_link_settle). */
    emul_link_t *l = emul_link_take_post(qp);  /* NULL: not connected, no sender */
    if (qp->x != NULL) {
      emul_ring_recv_posted(qp, &w);  /* its latency posts hold that link alone */
    } else if (l != NULL) {
      l->again = TRUE;
      emul_link_settle(l, &w);
    }
    emul_link_drop(l);
  }
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return st;
}

static uint32_t
emul_srq_count(rnicpi_srq_t *s)
{
  emul_srq_t *srq = to_emul_srq(s);
  rnicpi_spin_lock(&srq->lock);
  uint32_t n = srq->rq.q.len;
  rnicpi_spin_unlock(&srq->lock);
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
