/*
 * vp/iwarp completion queues (the same contract as vp/emul's).
 *
 * A CQ never drops an entry: past its declared depth the ring grows and the
 * overflow is reported once as an asynchronous event (RNICPI_ASYNC_CQ_OVERFLOW),
 * which the access layer turns into the IT-API affiliated event.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "iw.h"

static rnicpi_status_t
iw_cq_create(rnicpi_dev_t *d, uint32_t depth, uint64_t ctx, rnicpi_cq_t **out)
{
  if (depth == 0 || depth > to_iw_dev(d)->caps.max_cqe)
    return RNICPI_ELIMIT;
  iw_cq_t *cq = g_new0(iw_cq_t, 1);
  cq->base.dev = d;
  cq->base.al_ctx = ctx;
  g_mutex_init(&cq->lock);
  cq->depth = depth;
  cq->cap = 16;
  while (cq->cap < depth)
    cq->cap <<= 1;
  cq->ring = g_new(rnicpi_wc_t, cq->cap);
  *out = &cq->base;
  return RNICPI_OK;
}

static rnicpi_status_t
iw_cq_destroy(rnicpi_cq_t *c)
{
  iw_cq_t *cq = to_iw_cq(c);
  if (g_atomic_int_get(&cq->nqp) != 0)
    return RNICPI_EBUSY;
  g_mutex_clear(&cq->lock);
  g_free(cq->ring);
  g_free(cq);
  return RNICPI_OK;
}

static void
iw_cq_grow(iw_cq_t *cq)
{
  rnicpi_wc_t *n = g_new(rnicpi_wc_t, cq->cap * 2);
  for (uint32_t i = 0; i < cq->count; i++)
    n[i] = cq->ring[(cq->head + i) & (cq->cap - 1)];
  g_free(cq->ring);
  cq->ring = n;
  cq->head = 0;
  cq->cap *= 2;
}

void
iw_cq_push(iw_cq_t *cq, const rnicpi_wc_t *wc, iw_work_t *w)
{
  gboolean overflow = FALSE, notify = FALSE;
  g_mutex_lock(&cq->lock);
  if (cq->count == cq->cap)
    iw_cq_grow(cq);
  cq->ring[(cq->head + cq->count) & (cq->cap - 1)] = *wc;
  cq->count++;
  if (cq->count > cq->depth && !cq->overflowed)
    overflow = cq->overflowed = TRUE;
  if (cq->armed) {
    cq->armed = FALSE;
    notify = TRUE;
  }
  g_mutex_unlock(&cq->lock);

  if (overflow)
    iw_defer_async(to_iw_dev(cq->base.dev), RNICPI_ASYNC_CQ_OVERFLOW, cq->base.al_ctx);
  if (notify) {
    if (w->nnotify < (int) G_N_ELEMENTS(w->notify)) {
      w->notify[w->nnotify++] = cq;
    } else {
      /* A flush of many QPs can touch many CQs at once. */
      if (w->more == NULL)
        w->more = g_ptr_array_new();
      g_ptr_array_add(w->more, cq);
    }
  }
}

static void
notify_one(iw_cq_t *cq)
{
  iw_dev_t *dev = to_iw_dev(cq->base.dev);
  dev->up.cq_notify(dev->base.al_ctx, cq->base.al_ctx);
}

void
iw_work_deliver(iw_work_t *w)
{
  for (int i = 0; i < w->nnotify; i++)
    notify_one(w->notify[i]);
  w->nnotify = 0;
  if (w->more != NULL) {
    for (guint i = 0; i < w->more->len; i++)
      notify_one(g_ptr_array_index(w->more, i));
    g_ptr_array_free(w->more, TRUE);
    w->more = NULL;
  }
}

static int
iw_poll_cq(rnicpi_cq_t *c, rnicpi_wc_t *wc, int n)
{
  iw_cq_t *cq = to_iw_cq(c);
  int got = 0;
  g_mutex_lock(&cq->lock);
  while (got < n && cq->count > 0) {
    wc[got++] = cq->ring[cq->head];
    cq->head = (cq->head + 1) & (cq->cap - 1);
    cq->count--;
  }
  if (cq->count == 0)
    cq->overflowed = FALSE;
  g_mutex_unlock(&cq->lock);
  return got;
}

static uint32_t
iw_cq_count(rnicpi_cq_t *c)
{
  iw_cq_t *cq = to_iw_cq(c);
  g_mutex_lock(&cq->lock);
  uint32_t n = cq->count;
  g_mutex_unlock(&cq->lock);
  return n;
}

static rnicpi_status_t
iw_arm_cq(rnicpi_cq_t *c)
{
  iw_cq_t *cq = to_iw_cq(c);
  g_mutex_lock(&cq->lock);
  cq->armed = TRUE;
  g_mutex_unlock(&cq->lock);
  return RNICPI_OK;
}

extern rnicpi_status_t iw_post_send(rnicpi_qp_t *q, const rnicpi_send_wr_t *wr);
extern rnicpi_status_t iw_post_recv(rnicpi_qp_t *q, const rnicpi_recv_wr_t *wr);

const rnicpi_data_ops_t iw_data_ops = {
  .size = sizeof(rnicpi_data_ops_t),
  .post_send = iw_post_send,
  .post_recv = iw_post_recv,
  .poll_cq = iw_poll_cq,
  .cq_count = iw_cq_count,
  .arm_cq = iw_arm_cq,
};

/* The queue table lives here with the CQ half; QP ops come from iw_qp.c. */
extern rnicpi_status_t iw_qp_create(rnicpi_pd_t *, const rnicpi_qp_attr_t *, uint64_t, rnicpi_qp_t **);
extern rnicpi_status_t iw_qp_modify(rnicpi_qp_t *, const rnicpi_qp_attr_t *);
extern rnicpi_status_t iw_qp_to_error(rnicpi_qp_t *);
extern rnicpi_status_t iw_qp_reset(rnicpi_qp_t *);
extern rnicpi_qp_state_t iw_qp_state(rnicpi_qp_t *);
extern rnicpi_status_t iw_qp_destroy(rnicpi_qp_t *);

const rnicpi_queue_ops_t iw_queue_ops = {
  .size = sizeof(rnicpi_queue_ops_t),
  .cq_create = iw_cq_create,
  .cq_destroy = iw_cq_destroy,
  .qp_create = iw_qp_create,
  .qp_modify = iw_qp_modify,
  .qp_to_error = iw_qp_to_error,
  .qp_reset = iw_qp_reset,
  .qp_state = iw_qp_state,
  .qp_destroy = iw_qp_destroy,
};
