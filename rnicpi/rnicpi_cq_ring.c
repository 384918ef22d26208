/*
 * The completion ring of rnicpi_util.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include "rnicpi_util.h"

void
rnicpi_cq_ring_init(rnicpi_cq_ring_t *r, uint32_t depth, const rnicpi_notify_t *to)
{
  r->to = *to;
  r->lock.held = 0;
  r->depth = depth;
  r->cap = 16;
  while (r->cap < depth)
    r->cap <<= 1;
  r->ring = g_new(rnicpi_wc_t, r->cap);
  r->head = r->count = 0;
  r->armed = r->overflowed = FALSE;
}

void
rnicpi_cq_ring_clear(rnicpi_cq_ring_t *r)
{
  g_free(r->ring);
  r->ring = NULL;
}

void
rnicpi_cq_ring_grow(rnicpi_cq_ring_t *r)
{
  rnicpi_wc_t *n = g_new(rnicpi_wc_t, r->cap * 2);
  for (uint32_t i = 0; i < r->count; i++)
    n[i] = r->ring[(r->head + i) & (r->cap - 1)];
  g_free(r->ring);
  r->ring = n;
  r->head = 0;
  r->cap *= 2;
}

void
rnicpi_cq_ring_arm(rnicpi_cq_ring_t *r)
{
  rnicpi_spin_lock(&r->lock);
  /* Read without the lock by vp/emul's progress thread (emul_progress.c). */
  __atomic_store_n(&r->armed, TRUE, __ATOMIC_SEQ_CST);
  rnicpi_spin_unlock(&r->lock);
}

void
rnicpi_notify_batch_add(rnicpi_notify_batch_t *b, const rnicpi_cq_ring_t *r)
{
  rnicpi_notify_t n = r->to;
  if (n.inflight != NULL)
    g_atomic_int_inc(n.inflight);
  if (b->nnotify < (int) G_N_ELEMENTS(b->notify)) {
    b->notify[b->nnotify++] = n;
    return;
  }
  /* A flush of many QPs can touch many CQs at once. */
  if (b->more == NULL)
    b->more = g_array_new(FALSE, FALSE, sizeof(rnicpi_notify_t));
  g_array_append_val(b->more, n);
}

/* The batch this thread is delivering and the entry it is at (a callback
 * of the access layer's may close a device from inside a delivery). */
static __thread const rnicpi_notify_batch_t *cur_batch;
static __thread int cur_index;

static int
batch_len(const rnicpi_notify_batch_t *b)
{
  return b->nnotify + (b->more != NULL ? (int) b->more->len : 0);
}

static const rnicpi_notify_t *
batch_entry(const rnicpi_notify_batch_t *b, int i)
{
  return i < b->nnotify ? &b->notify[i] : &g_array_index(b->more, rnicpi_notify_t, i - b->nnotify);
}

void
rnicpi_notify_batch_deliver(rnicpi_notify_batch_t *b)
{
  if (!rnicpi_notify_batch_pending(b))
    return;  /* the usual case of a data-path call: no thread-local access */
  const rnicpi_notify_batch_t *outer = cur_batch;
  int outer_index = cur_index;
  cur_batch = b;
  for (cur_index = 0; cur_index < batch_len(b); cur_index++) {
    const rnicpi_notify_t *n = batch_entry(b, cur_index);
    n->notify(n->dev_ctx, n->cq_ctx);
    if (n->inflight != NULL)
      g_atomic_int_add(n->inflight, -1);  /* the last touch of the device */
  }
  cur_batch = outer;
  cur_index = outer_index;
  b->nnotify = 0;
  if (b->more != NULL) {
    g_array_free(b->more, TRUE);
    b->more = NULL;
  }
}

/* Entries of @inflight's device that this thread's own delivery still
 * holds (the current one included): waiting for those would never end. */
static int
own_inflight(const gint *inflight)
{
  const rnicpi_notify_batch_t *b = cur_batch;
  int own = 0;
  for (int i = cur_index; b != NULL && i < batch_len(b); i++)
    own += batch_entry(b, i)->inflight == inflight;
  return own;
}

void
rnicpi_notify_quiesce(gint *inflight)
{
  /* Deliveries run outside any lock and end quickly: a short wait. */
  int own = own_inflight(inflight);
  while (g_atomic_int_get(inflight) > own)
    g_usleep(50);
}
