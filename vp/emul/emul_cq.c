/*
 * vp/emul completion queues.
 *
 * The ring is rnicpi_util's: it never drops an entry; past its declared
 * depth it grows and the overflow is reported once as an asynchronous event
 * (RNICPI_ASYNC_CQ_OVERFLOW), which the access layer turns into the IT-API
 * affiliated event.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "emul_ring.h"

rnicpi_status_t
emul_cq_create(rnicpi_dev_t *d, uint32_t depth, uint64_t ctx, rnicpi_cq_t **out)
{
  emul_dev_t *dev = to_emul_dev(d);
  if (depth == 0 || depth > dev->caps.max_cqe || !rnicpi_count_take(&dev->ncq, dev->caps.max_cq))
    return RNICPI_ELIMIT;
  emul_cq_t *cq = g_new0(emul_cq_t, 1);
  cq->base.dev = d;
  cq->base.al_ctx = ctx;
  rnicpi_notify_t to = { to_emul_dev(d)->up.cq_notify, d->al_ctx, ctx, &to_emul_dev(d)->notifying };
  rnicpi_cq_ring_init(&cq->ring, depth, &to);
  cq->xlinks = g_ptr_array_new();
  emul_fabric_lock();
  g_ptr_array_add(emul_fabric.cqs, cq);
  emul_fabric_unlock();
  *out = &cq->base;
  return RNICPI_OK;
}

rnicpi_status_t
emul_cq_destroy(rnicpi_cq_t *c)
{
  emul_cq_t *cq = to_emul_cq(c);
  if (g_atomic_int_get(&cq->nqp) != 0)
    return RNICPI_EBUSY;
  emul_fabric_lock();
  g_ptr_array_remove_fast(emul_fabric.cqs, cq);
  emul_fabric_unlock();
  g_ptr_array_free(cq->xlinks, TRUE);  /* empty: its QPs are gone */
  rnicpi_cq_ring_clear(&cq->ring);
  rnicpi_count_put(&to_emul_dev(c->dev)->ncq);
  g_free(cq);
  return RNICPI_OK;
}

/* The CQs @l's QP completes into, each once. */
static guint
ring_cqs(const emul_link_t *l, emul_cq_t *cqs[2])
{
  cqs[0] = l->qp[0]->scq;
  cqs[1] = l->qp[0]->rcq;
  return cqs[1] != cqs[0] ? 2 : 1;
}

void
emul_cq_ring_link(emul_link_t *l, gboolean join)
{
  emul_cq_t *cqs[2];
  for (guint i = 0, n = ring_cqs(l, cqs); i < n; i++) {
    rnicpi_spin_lock(&cqs[i]->xlock);
    if (join)
      g_ptr_array_add(cqs[i]->xlinks, l);
    else
      g_ptr_array_remove_fast(cqs[i]->xlinks, l);
    rnicpi_spin_unlock(&cqs[i]->xlock);
  }
}

void
emul_cqs_lock_all(void)
{
  for (guint i = 0; i < emul_fabric.cqs->len; i++)
    rnicpi_spin_lock(&((emul_cq_t *) g_ptr_array_index(emul_fabric.cqs, i))->xlock);
}

void
emul_cqs_unlock_all(void)
{
  for (guint i = 0; i < emul_fabric.cqs->len; i++)
    rnicpi_spin_unlock(&((emul_cq_t *) g_ptr_array_index(emul_fabric.cqs, i))->xlock);
}

void
emul_cq_push(emul_cq_t *cq, const rnicpi_wc_t *wc, emul_work_t *w)
{
  if (rnicpi_cq_ring_push_notify(&cq->ring, wc, w))
    emul_defer_async(to_emul_dev(cq->base.dev), RNICPI_ASYNC_CQ_OVERFLOW, cq->base.al_ctx,
                     RNICPI_AE_UNSPECIFIED);
}

static int
emul_poll_cq(rnicpi_cq_t *c, rnicpi_wc_t *wc, int n)
{
  emul_cq_t *cq = to_emul_cq(c);
  int got = rnicpi_cq_ring_poll(&cq->ring, wc, n);
  /* A QP of another process may feed it: when empty, advance the rings
   * here (emul_ring.h, "Who drains a ring"). */
  if (g_atomic_int_get(&emul_ring_nconn) > 0)
    got = emul_ring_poll_cq(cq, wc, n, got);
  return got;
}

static uint32_t
emul_cq_count(rnicpi_cq_t *c)
{
  return rnicpi_cq_ring_count(&to_emul_cq(c)->ring);
}

static rnicpi_status_t
emul_arm_cq(rnicpi_cq_t *c)
{
  rnicpi_cq_ring_arm(&to_emul_cq(c)->ring);
  if (g_atomic_int_get(&emul_ring_nconn) > 0)
    emul_ring_cq_armed(to_emul_cq(c));
  return RNICPI_OK;
}

/* RNIC-PI 1.11: a thread sleeps on the bells of the cross-process
 * connections that feed the CQ (emul_ring_cq_wait_begin).  Completions from
 * this process (a peer QP in it, the thread's own posts) come by
 * cq_notify, as before. */
static rnicpi_status_t
emul_cq_wait_begin(rnicpi_cq_t *c, struct pollfd *fds, uint32_t *nfds)
{
  *nfds = emul_ring_cq_wait_begin(to_emul_cq(c), fds, *nfds);
  return RNICPI_OK;
}

static void
emul_cq_wait_end(rnicpi_cq_t *c, const struct pollfd *fds, uint32_t nfds)
{
  emul_ring_cq_wait_end(to_emul_cq(c), fds, nfds);
}

/* The data path's table: the posts (emul_qp.c) and this file's polls and
 * waits. */
const rnicpi_data_ops_t emul_data_ops = {
  .size = sizeof(rnicpi_data_ops_t),
  .post_send = emul_post_send,
  .post_recv = emul_post_recv,
  .poll_cq = emul_poll_cq,
  .cq_count = emul_cq_count,
  .arm_cq = emul_arm_cq,
  .cq_wait_begin = emul_cq_wait_begin,
  .cq_wait_end = emul_cq_wait_end,
};
