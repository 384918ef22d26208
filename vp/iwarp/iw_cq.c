/*
 * vp/iwarp completion queues (the same contract as vp/emul's).
 *
 * The ring is rnicpi_util's: it never drops an entry; past its declared
 * depth it grows and the overflow is reported once as an asynchronous event
 * (RNICPI_ASYNC_CQ_OVERFLOW), which the access layer turns into the IT-API
 * affiliated event.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "iw.h"

rnicpi_status_t
iw_cq_create(rnicpi_dev_t *d, uint32_t depth, uint64_t ctx, rnicpi_cq_t **out)
{
  iw_dev_t *dev = to_iw_dev(d);
  if (depth == 0 || depth > dev->caps.max_cqe || !rnicpi_count_take(&dev->ncq, dev->caps.max_cq))
    return RNICPI_ELIMIT;
  iw_cq_t *cq = g_new0(iw_cq_t, 1);
  cq->base.dev = d;
  cq->base.al_ctx = ctx;
  rnicpi_notify_t to = { to_iw_dev(d)->up.cq_notify, d->al_ctx, ctx, &to_iw_dev(d)->notifying };
  rnicpi_cq_ring_init(&cq->ring, depth, &to);
  g_mutex_init(&cq->qps_lock);
  cq->qps = g_ptr_array_new();
  *out = &cq->base;
  return RNICPI_OK;
}

rnicpi_status_t
iw_cq_destroy(rnicpi_cq_t *c)
{
  iw_cq_t *cq = to_iw_cq(c);
  if (g_atomic_int_get(&cq->nqp) != 0)
    return RNICPI_EBUSY;
  rnicpi_cq_ring_clear(&cq->ring);
  g_ptr_array_free(cq->qps, TRUE);
  g_mutex_clear(&cq->qps_lock);
  rnicpi_count_put(&to_iw_dev(c->dev)->ncq);
  g_free(cq);
  return RNICPI_OK;
}

void
iw_cq_push(iw_cq_t *cq, const rnicpi_wc_t *wc, iw_work_t *w)
{
  if (rnicpi_cq_ring_push_notify(&cq->ring, wc, w)) {
    rnicpi_async_event_t ev = rnicpi_async_event(RNICPI_ASYNC_CQ_OVERFLOW, cq->base.al_ctx,
                                                 RNICPI_AE_UNSPECIFIED);
    iw_defer_async(to_iw_dev(cq->base.dev), &ev);
  }
}

void
iw_work_deliver(iw_work_t *w)
{
  rnicpi_notify_batch_deliver(w);
}

void
iw_cq_attach(iw_cq_t *cq, iw_qp_t *qp)
{
  g_mutex_lock(&cq->qps_lock);
  g_ptr_array_add(cq->qps, qp);
  g_mutex_unlock(&cq->qps_lock);
}

/* After this returns no poller is inside @qp any more. */
void
iw_cq_detach(iw_cq_t *cq, iw_qp_t *qp)
{
  g_mutex_lock(&cq->qps_lock);
  g_ptr_array_remove_fast(cq->qps, qp);
  g_mutex_unlock(&cq->qps_lock);
}

/* Progress in the polling thread: the connected QPs of @cq read what the
 * socket holds and send what they can.  A QP busy in another thread (the
 * progress thread, a post) is skipped: that thread makes the progress.
 * A poller that spins (@spinning) on a CQ of few QPs takes them over from
 * the progress thread (iw_qp_set_polled); on a CQ of many, each poll
 * drives a few of them in turn and the thread keeps the rest going, so a
 * poll costs O(1) whatever the number of QPs.
 *
 * What the input asks an owned QP to send (Read Responses, the answers to
 * the peer's delivery fences) is held while the consumer still has
 * completions to take and through the first empty poll after them
 * (@hold): a consumer that drains its CQ and then posts sends it in the
 * same segment as its post, one sendmsg() where there would be two.  The
 * next empty poll sends it, so a consumer that only polls delays the
 * peer's completions by one poll. */
static void
poll_progress(iw_cq_t *cq, gboolean spinning, gboolean hold)
{
  iw_work_t w;
  rnicpi_notify_batch_init(&w);
  if (!g_mutex_trylock(&cq->qps_lock))
    return;
  guint n = cq->qps->len, todo = MIN(n, (guint) IW_POLL_QPS_MAX);
  gboolean own = spinning && n <= IW_POLL_QPS_MAX, held = FALSE;
  for (guint k = 0; k < todo; k++) {
    iw_qp_t *qp = g_ptr_array_index(cq->qps, (cq->rr + k) % n);
    if (!iw_qp_trylock_io(qp))
      continue;
    if (!qp->dead && qp->fd >= 0 && (qp->cs == IW_CS_RTS || qp->cs == IW_CS_CLOSING)) {
      held |= qp->polled;
      if (own) {
        iw_qp_set_polled(qp, TRUE);
        qp->slept = FALSE;  /* a spinning poller's now: its posts go at once */
      }
      iw_mr_lock(qp); /* once for the receive and the transmit pass */
      iw_rx_progress(qp, &w);
      /* A completion for this poller goes back to it first: what the input
       * asks to send (Read Responses) waits for its next empty poll or
       * post, where it shares a segment with what the consumer sends.  A QP
       * the poller does not own is sent for at once. */
      if (qp->fd >= 0 && (!qp->polled || (!hold && rnicpi_cq_ring_count(&cq->ring) == 0)) &&
          (iw_tx_pending(qp) || qp->closing))
        iw_tx_progress(qp, &w);
      iw_mr_unlock(qp);
    }
    g_mutex_unlock(&qp->lock);
  }
  if (n > 0)
    cq->rr = (cq->rr + todo) % n;
  g_mutex_unlock(&cq->qps_lock);
  /* A lease that outlived the poll that took it: the thread must count it
   * within the millisecond (the socket left its set: not even the peer's
   * FIN would wake it). */
  iw_dev_t *dev = to_iw_dev(cq->base.dev);
  if (held && g_atomic_int_get(&dev->lease_untold) &&
      g_atomic_int_compare_and_exchange(&dev->lease_untold, TRUE, FALSE))
    iw_dev_wake(dev);
  iw_work_deliver(&w);
}

static int
iw_poll_cq(rnicpi_cq_t *c, rnicpi_wc_t *wc, int n)
{
  iw_cq_t *cq = to_iw_cq(c);
  gint64 now = g_get_monotonic_time();
  gint64 prev = __atomic_exchange_n(&cq->last_poll, now, __ATOMIC_RELAXED);
  int got = rnicpi_cq_ring_poll(&cq->ring, wc, n);
  /* Written only when it changes: a spinning poller does not dirty it. */
  gboolean hold = __atomic_load_n(&cq->returned, __ATOMIC_RELAXED);
  if (hold != (got > 0))
    __atomic_store_n(&cq->returned, got > 0, __ATOMIC_RELAXED);
  if (got > 0 || !iw_config.poll_progress)
    return got;
  /* Two empty polls close together: a busy poller. */
  poll_progress(cq, now - prev < IW_POLL_SPIN_US, hold);
  return rnicpi_cq_ring_poll(&cq->ring, wc, n);
}

static uint32_t
iw_cq_count(rnicpi_cq_t *c)
{
  return rnicpi_cq_ring_count(&to_iw_cq(c)->ring);
}

/* The consumer is about to sleep until a completion: its QPs go back to
 * the progress thread now rather than when the poll lease runs out.  The
 * thread catches up (input already in the socket wakes it at once, and
 * EPOLLOUT does for a deferred Read Response): the caller may hold the
 * access layer's EVD lock, so no completion is notified from here.  Not
 * when the consumer sleeps on the sockets itself (iw_cq_wait_begin): they
 * stay with it. */
static rnicpi_status_t
iw_arm_cq(rnicpi_cq_t *c)
{
  iw_cq_t *cq = to_iw_cq(c);
  rnicpi_cq_ring_arm(&cq->ring);
  __atomic_store_n(&cq->last_poll, 0, __ATOMIC_RELAXED);
  if (g_atomic_int_get(&cq->waiters) > 0)
    return RNICPI_OK;
  g_mutex_lock(&cq->qps_lock);
  for (guint i = 0; i < cq->qps->len && cq->qps->len <= IW_POLL_QPS_MAX; i++) {
    iw_qp_t *qp = g_ptr_array_index(cq->qps, i);
    /* The order qps_lock -> qp->lock is safe: nothing takes qps_lock with
     * a QP lock held (attach and detach run without it). */
    g_mutex_lock(&qp->lock);
    if (!qp->dead && qp->polled) {
      iw_qp_set_polled(qp, FALSE);
      if (iw_tx_pending(qp))
        iw_qp_want_out(qp, TRUE);
    }
    g_mutex_unlock(&qp->lock);
  }
  g_mutex_unlock(&cq->qps_lock);
  return RNICPI_OK;
}

/* The QPs a sleeper of @cq watches: connected, with a socket (qp->lock
 * held). */
static gboolean
qp_watchable(const iw_qp_t *qp)
{
  return !qp->dead && qp->fd >= 0 && (qp->cs == IW_CS_RTS || qp->cs == IW_CS_CLOSING);
}

/* RNIC-PI 1.11: the consumer sleeps on the sockets of @cq's QPs itself.
 * They leave the progress thread's epoll set for as long as it sleeps
 * (the poll lease of iw_qp_set_polled, which iw_dev_poll_leases does not
 * take back from a sleeper), so that a segment wakes one thread, the
 * sleeper, which reads it in iw_cq_wait_end: the same one wake-up and
 * recv() as a raw TCP receiver blocking in poll.  Nothing is read here:
 * what already arrived makes the poll return at once.  What waits to be
 * sent goes now (a transmit still waiting for room asks for POLLOUT).  A
 * CQ of more QPs than one poll drives (IW_POLL_QPS_MAX), or than @nfds
 * has room for, stays with the thread (cq_notify). */
static rnicpi_status_t
iw_cq_wait_begin(rnicpi_cq_t *c, struct pollfd *fds, uint32_t *nfds)
{
  iw_cq_t *cq = to_iw_cq(c);
  uint32_t room = *nfds, used = 0;
  *nfds = 0;
  if (!iw_config.poll_progress)
    return RNICPI_OK;  /* ITAPI_IWARP_POLL_PROGRESS=0: the thread does it all */
  iw_work_t w;
  rnicpi_notify_batch_init(&w);
  g_mutex_lock(&cq->qps_lock);
  guint n = cq->qps->len;
  if (n > 0 && n <= IW_POLL_QPS_MAX && n <= room) {
    /* Counted before the QPs are taken: from here the thread's lease
     * check leaves them be. */
    g_atomic_int_inc(&cq->waiters);
    for (guint i = 0; i < n; i++) {
      iw_qp_t *qp = g_ptr_array_index(cq->qps, i);
      g_mutex_lock(&qp->lock);
      if (qp_watchable(qp)) {
        iw_qp_set_polled(qp, TRUE);
        qp->slept = TRUE;
        /* What the consumer posted and left for its next step (a small
         * unsignaled Write, iw_post_send) goes before it sleeps. */
        if (iw_tx_pending(qp)) {
          iw_mr_lock(qp);
          iw_tx_progress(qp, &w);
          iw_mr_unlock(qp);
        }
      }
      if (qp_watchable(qp)) {
        fds[used].fd = qp->fd;
        fds[used].events = POLLIN | POLLRDHUP | (iw_tx_pending(qp) ? POLLOUT : 0);
        fds[used].revents = 0;
        used++;
      }
      g_mutex_unlock(&qp->lock);
    }
    if (used == 0)
      g_atomic_int_add(&cq->waiters, -1);  /* nothing connected to watch */
  }
  g_mutex_unlock(&cq->qps_lock);
  iw_work_deliver(&w);
  *nfds = used;
  return RNICPI_OK;
}

/* The sleep is over: read what woke it, send what waited for room, and
 * keep the sockets as a poller would (the lease runs from now). */
static void
iw_cq_wait_end(rnicpi_cq_t *c, const struct pollfd *fds, uint32_t nfds)
{
  iw_cq_t *cq = to_iw_cq(c);
  iw_dev_t *dev = to_iw_dev(c->dev);
  if (nfds == 0)
    return;  /* no sleeper counted (iw_cq_wait_begin) */
  iw_work_t w;
  rnicpi_notify_batch_init(&w);
  __atomic_store_n(&cq->last_poll, g_get_monotonic_time(), __ATOMIC_RELAXED);
  {
    g_mutex_lock(&cq->qps_lock);
    for (guint i = 0; i < cq->qps->len; i++) {
      iw_qp_t *qp = g_ptr_array_index(cq->qps, i);
      short rev = 0;
      g_mutex_lock(&qp->lock);
      gboolean mine = FALSE;
      for (uint32_t k = 0; k < nfds; k++)
        if (fds[k].fd == qp->fd) {
          rev = fds[k].revents;
          mine = TRUE;
        }
      if (mine && qp_watchable(qp)) {
        iw_mr_lock(qp);
        if (rev & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))
          iw_rx_progress(qp, &w);
        if (qp->fd >= 0 && (iw_tx_pending(qp) || qp->closing))
          iw_tx_progress(qp, &w);
        iw_mr_unlock(qp);
      }
      g_mutex_unlock(&qp->lock);
    }
    g_mutex_unlock(&cq->qps_lock);
  }
  /* Dekker with iw_dev_poll_leases: no longer a sleeper, then a thread
   * napping on the strength of our sleep must look again. */
  g_atomic_int_add(&cq->waiters, -1);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  gboolean wake = FALSE;
  if (g_atomic_int_get(&dev->lease_nap) && g_atomic_int_compare_and_exchange(&dev->lease_nap, TRUE, FALSE))
    wake = TRUE;
  if (g_atomic_int_get(&dev->lease_untold) &&
      g_atomic_int_compare_and_exchange(&dev->lease_untold, TRUE, FALSE))
    wake = TRUE;
  if (wake)
    iw_dev_wake(dev);
  iw_work_deliver(&w);
}

/* The data path's table: the posts (iw_qp.c) and this file's polls and
 * waits. */
const rnicpi_data_ops_t iw_data_ops = {
  .size = sizeof(rnicpi_data_ops_t),
  .post_send = iw_post_send,
  .post_recv = iw_post_recv,
  .poll_cq = iw_poll_cq,
  .cq_count = iw_cq_count,
  .arm_cq = iw_arm_cq,
  .cq_wait_begin = iw_cq_wait_begin,
  .cq_wait_end = iw_cq_wait_end,
};
