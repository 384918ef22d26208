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
  g_mutex_init(&r->lock);
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
  g_mutex_clear(&r->lock);
}

static void
grow(rnicpi_cq_ring_t *r)
{
  rnicpi_wc_t *n = g_new(rnicpi_wc_t, r->cap * 2);
  for (uint32_t i = 0; i < r->count; i++)
    n[i] = r->ring[(r->head + i) & (r->cap - 1)];
  g_free(r->ring);
  r->ring = n;
  r->head = 0;
  r->cap *= 2;
}

unsigned
rnicpi_cq_ring_push(rnicpi_cq_ring_t *r, const rnicpi_wc_t *wc)
{
  unsigned out = 0;
  g_mutex_lock(&r->lock);
  if (r->count == r->cap)
    grow(r);
  r->ring[(r->head + r->count) & (r->cap - 1)] = *wc;
  __atomic_store_n(&r->count, r->count + 1, __ATOMIC_RELAXED); /* read unlocked by poll */
  if (r->count > r->depth && !r->overflowed) {
    r->overflowed = TRUE;
    out |= RNICPI_CQ_PUSH_OVERFLOW;
  }
  if (r->armed) {
    r->armed = FALSE;
    out |= RNICPI_CQ_PUSH_NOTIFY;
  }
  g_mutex_unlock(&r->lock);
  return out;
}

int
rnicpi_cq_ring_poll(rnicpi_cq_ring_t *r, rnicpi_wc_t *wc, int n)
{
  int got = 0;
  /* An empty ring (a busy poller's usual case) costs no lock.  A push racing
   * this look is found by the next poll; one that finished before it, or
   * before an arm of the ring, is seen here (the lock orders them). */
  if (__atomic_load_n(&r->count, __ATOMIC_RELAXED) == 0 || n <= 0)
    return 0;
  g_mutex_lock(&r->lock);
  while (got < n && r->count > 0) {
    wc[got++] = r->ring[r->head];
    r->head = (r->head + 1) & (r->cap - 1);
    __atomic_store_n(&r->count, r->count - 1, __ATOMIC_RELAXED);
  }
  if (r->count == 0)
    r->overflowed = FALSE;
  g_mutex_unlock(&r->lock);
  return got;
}

uint32_t
rnicpi_cq_ring_count(rnicpi_cq_ring_t *r)
{
  g_mutex_lock(&r->lock);
  uint32_t n = r->count;
  g_mutex_unlock(&r->lock);
  return n;
}

void
rnicpi_cq_ring_arm(rnicpi_cq_ring_t *r)
{
  g_mutex_lock(&r->lock);
  r->armed = TRUE;
  g_mutex_unlock(&r->lock);
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

gboolean
rnicpi_cq_ring_push_notify(rnicpi_cq_ring_t *r, const rnicpi_wc_t *wc, rnicpi_notify_batch_t *b)
{
  unsigned out = rnicpi_cq_ring_push(r, wc);
  if (out & RNICPI_CQ_PUSH_NOTIFY)
    rnicpi_notify_batch_add(b, r);
  return (out & RNICPI_CQ_PUSH_OVERFLOW) != 0;
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
