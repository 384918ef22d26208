/*
 * vp/ib completion queues.  Each RNIC-PI CQ is a verbs CQ whose entries
 * are translated (through the shadows of ib_comp.c) into an RNIC-PI ring.
 * The ring is what the access layer polls and counts: it never drops an
 * entry, reports going past its depth, and also receives the completions
 * the adapter makes itself (requests a device never flushed).  The verbs
 * CQ is sized for every request its queue pairs may hold, so the device
 * never overruns it (a verbs overrun is fatal to the CQ and its QPs).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>

#include <poll.h>
#include <sys/epoll.h>

#include "ib.h"

/* Notifications found while the caller may hold the access layer's
 * locks (it counts a CQ under its EVD's lock) go through the progress
 * thread, whose upcalls run with no lock held. */
void
ib_cq_defer(ib_dev_t *dev, rnicpi_notify_batch_t *b)
{
  if (!rnicpi_notify_batch_pending(b))
    return;
  for (int i = 0; i < b->nnotify; i++)
    ib_dev_queue_notify(dev, &b->notify[i]);
  if (b->more != NULL) {
    for (guint i = 0; i < b->more->len; i++)
      ib_dev_queue_notify(dev, &g_array_index(b->more, rnicpi_notify_t, i));
    g_array_free(b->more, TRUE);
  }
  /* Each entry stays counted in the device's inflight count until the
   * progress thread has delivered it. */
  rnicpi_notify_batch_init(b);
}

void
ib_cq_push(ib_cq_t *cq, const rnicpi_wc_t *wc, rnicpi_notify_batch_t *b)
{
  if (rnicpi_cq_ring_push_notify(&cq->ring, wc, b)) {
    rnicpi_async_event_t ev =
      rnicpi_async_event(RNICPI_ASYNC_CQ_OVERFLOW, cq->base.al_ctx, RNICPI_AE_UNSPECIFIED);
    ib_dev_queue_async(cq->dev, &ev);
  }
}

/* The queue pair a completion names, or NULL once it is destroyed (the
 * adapter completed its requests then).  With the poll lock held: the
 * cached one cannot be freed or renumbered under it (ib_qp_destroy and an
 * iWARP reset make the cache forget it under that lock). */
static inline ib_qp_t *
cq_qp(ib_cq_t *cq, uint32_t qp_num)
{
  if (G_LIKELY(cq->last_qp != NULL && cq->last_num == qp_num))
    return cq->last_qp;
  ib_qp_t *qp = ib_qp_lookup(cq->dev, qp_num);
  if (qp != NULL) {
    cq->last_qp = qp;
    cq->last_num = qp_num;
  }
  return qp;
}

/* Take what the verbs CQ holds, up to @max entries (0: all), to @out;
 * returns how many entries were taken from the device.  With the poll
 * lock held. */
static int
cq_take(ib_cq_t *cq, ib_sink_t *out, int max)
{
  struct ibv_wc vwc[16];
  int total = 0;
  for (;;) {
    int want = G_N_ELEMENTS(vwc);
    if (max > 0)
      want = MIN(want, max - total);
    int n = ibv_poll_cq(cq->cq, want, vwc);
    if (n <= 0)
      break;
    total += n;
    for (int i = 0; i < n; i++) {
      ib_qp_t *qp = cq_qp(cq, vwc[i].qp_num);
      if (qp != NULL)
        ib_qp_complete(qp, &vwc[i], out);
    }
    if (n < want || (max > 0 && total >= max))
      break;
  }
  return total;
}

/* Move what the verbs CQ holds into the ring; returns how many entries
 * were taken from the device. */
int
ib_cq_drain(ib_cq_t *cq, rnicpi_notify_batch_t *b)
{
  ib_sink_t ring = { cq, b, NULL, 0, 0 };
  rnicpi_spin_lock(&cq->poll_lock);
  int total = cq_take(cq, &ring, 0);
  rnicpi_spin_unlock(&cq->poll_lock);
  return total;
}

void
ib_cq_forget_qp(ib_cq_t *cq, ib_qp_t *qp)
{
  rnicpi_spin_lock(&cq->poll_lock);
  if (cq->last_qp == qp)
    cq->last_qp = NULL;
  rnicpi_spin_unlock(&cq->poll_lock);
}

rnicpi_status_t
ib_cq_create(rnicpi_dev_t *d, uint32_t depth, uint64_t al_ctx, rnicpi_cq_t **out)
{
  ib_dev_t *dev = to_ib_dev(d);
  if (depth == 0 || depth > dev->caps.max_cqe)
    return RNICPI_ELIMIT;
  ib_cq_t *cq = g_new0(ib_cq_t, 1);
  cq->base.dev = d;
  cq->base.al_ctx = al_ctx;
  cq->dev = dev;
  /* A CQ that cannot grow later starts with room for the queue pairs an
   * application usually puts on one, and at least for one queue pair of
   * the most requests the device offers: a DAT consumer (dapltest) gives
   * each EP the IA's largest queues and EVDs of its own (cq_reserve()
   * refuses the rest). */
  uint32_t floor = dev->cq_fixed
                       ? MAX(MAX((uint32_t) ib_config.cq_min, IB_CQ_FIXED_MIN), dev->verbs_max_qp_wr)
                       : (uint32_t) ib_config.cq_min;
  int want = (int) MIN(dev->caps.max_cqe, MAX(depth, floor));
  cq->cq = ibv_create_cq(dev->ctx, want, cq, dev->comp, 0);
  if (cq->cq == NULL) {
    int err = errno;
    g_free(cq);
    return ib_status_of_errno(err);
  }
  cq->vsize = (uint32_t) cq->cq->cqe;
  rnicpi_notify_t to = { dev->up.cq_notify, dev->base.al_ctx, al_ctx, &dev->inflight };
  rnicpi_cq_ring_init(&cq->ring, depth, &to);
  *out = &cq->base;
  return RNICPI_OK;
}

rnicpi_status_t
ib_cq_destroy(rnicpi_cq_t *c)
{
  ib_cq_t *cq = to_ib_cq(c);
  ib_dev_t *dev = cq->dev;
  if (cq->users > 0)
    return RNICPI_EBUSY;
  g_mutex_lock(&dev->lock);
  cq->dead = TRUE; /* the progress thread drops its channel events from now */
  g_mutex_unlock(&dev->lock);
  /* Waits until the progress thread acknowledged its channel events. */
  int err = ibv_destroy_cq(cq->cq);
  if (err != 0) {
    g_mutex_lock(&dev->lock);
    cq->dead = FALSE;
    g_mutex_unlock(&dev->lock);
    return err == EBUSY ? RNICPI_EBUSY : ib_status_of_errno(err);
  }
  g_mutex_lock(&dev->lock);
  if (cq->rearm_due)
    dev->rearm = g_list_remove(dev->rearm, cq);
  g_mutex_unlock(&dev->lock);
  rnicpi_cq_ring_clear(&cq->ring);
  g_free(cq);
  return RNICPI_OK;
}

/* The ring first (what was drained before, and the completions the
 * adapter made itself), then the device.  While the ring is empty, the
 * device's completions go straight to the caller instead of through the
 * ring: nothing older waits there, and whatever the sweep adds to it from
 * now on is newer than what the poll lock lets this thread take (a request
 * completes under its queue's lock, once, by whichever comes first). */
int
ib_poll_cq(rnicpi_cq_t *c, rnicpi_wc_t *wc, int n)
{
  ib_cq_t *cq = to_ib_cq(c);
  /* The progress thread needs to know that someone polls, not how often. */
  __atomic_store_n(&cq->polls, __atomic_load_n(&cq->polls, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  int got = rnicpi_cq_ring_poll(&cq->ring, wc, n);
  if (got >= n)
    return got;
  rnicpi_notify_batch_t b;
  rnicpi_notify_batch_init(&b);
  rnicpi_spin_lock(&cq->poll_lock);
  if (G_LIKELY(rnicpi_cq_ring_count(&cq->ring) == 0)) {
    /* One device entry may stand for several (a send queue's in-order
     * delivery): what does not fit goes to the ring. */
    ib_sink_t direct = { cq, &b, wc + got, n - got, 0 };
    if (n - got == 1) {
      /* The access layer's usual poll: cq_take's one round for one
       * device entry, without its loop. */
      struct ibv_wc v;
      ib_qp_t *qp;
      if (ibv_poll_cq(cq->cq, 1, &v) == 1 && (qp = cq_qp(cq, v.qp_num)) != NULL)
        ib_qp_complete(qp, &v, &direct);
    } else {
      cq_take(cq, &direct, n - got);
    }
    rnicpi_spin_unlock(&cq->poll_lock);
    got += direct.got;
  } else {
    ib_sink_t ring = { cq, &b, NULL, 0, 0 };
    int taken = cq_take(cq, &ring, 0);
    rnicpi_spin_unlock(&cq->poll_lock);
    if (taken > 0)
      got += rnicpi_cq_ring_poll(&cq->ring, wc + got, n - got);
  }
  if (rnicpi_notify_batch_pending(&b)) /* seldom: no call otherwise */
    ib_cq_defer(cq->dev, &b);
  return got;
}

uint32_t
ib_cq_count(rnicpi_cq_t *c)
{
  ib_cq_t *cq = to_ib_cq(c);
  rnicpi_notify_batch_t b;
  rnicpi_notify_batch_init(&b);
  ib_cq_drain(cq, &b);
  ib_cq_defer(cq->dev, &b);
  return rnicpi_cq_ring_count(&cq->ring);
}

rnicpi_status_t
ib_arm_cq(rnicpi_cq_t *c)
{
  ib_cq_t *cq = to_ib_cq(c);
  rnicpi_cq_ring_arm(&cq->ring);
  /* The device's arm answers the next completion it adds; one already in
   * the verbs CQ is found by the count the access layer takes next. */
  if (ibv_req_notify_cq(cq->cq, 0) != 0)
    return ib_status_of_errno(errno);
  return RNICPI_OK;
}

/* RNIC-PI 1.11: a thread about to sleep for a completion sleeps on the
 * device's completion channel itself, which the progress thread stops
 * watching meanwhile; the event wakes it directly and it takes the
 * channel's events in cq_wait_end, where the progress thread would be
 * woken first and wake it through cq_notify (two wake-ups in a row).
 * The channel serves every CQ of the device: a sleeper woken for another
 * CQ's event takes it as the progress thread would, and sleeps again.
 * Should epoll refuse to let the channel go, both watch it, and whoever
 * reads an event first handles it; should it refuse to take it back, the
 * progress thread tries again until it does (ib_comp_watch_locked). */
rnicpi_status_t
ib_cq_wait_begin(rnicpi_cq_t *c, struct pollfd *fds, uint32_t *nfds)
{
  ib_dev_t *dev = to_ib_cq(c)->dev;
  if (*nfds == 0)
    return RNICPI_OK;
  g_mutex_lock(&dev->lock);
  if (dev->comp_sleepers++ == 0 && !dev->comp_out &&
      epoll_ctl(dev->epfd, EPOLL_CTL_DEL, dev->comp->fd, NULL) == 0)
    dev->comp_out = TRUE;
  g_mutex_unlock(&dev->lock);
  fds[0].fd = dev->comp->fd;
  fds[0].events = POLLIN;
  *nfds = 1;
  return RNICPI_OK;
}

void
ib_cq_wait_end(rnicpi_cq_t *c, const struct pollfd *fds, uint32_t nfds)
{
  ib_dev_t *dev = to_ib_cq(c)->dev;
  if (nfds == 0)
    return;
  if (fds[0].revents & POLLIN)
    ib_comp_events(dev);
  /* An event that came after that read keeps the channel readable, and
   * epoll reports it to the progress thread once the channel is back. */
  g_mutex_lock(&dev->lock);
  gboolean out = --dev->comp_sleepers == 0 && !ib_comp_watch_locked(dev);
  g_mutex_unlock(&dev->lock);
  if (out)
    ib_dev_wake(dev); /* the progress thread tries again */
}
