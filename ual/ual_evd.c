/*
 * Event dispatchers: simple EVDs (one stream each) and aggregate EVDs.
 *
 * Rules this file implements (decisions where the spec text is not public):
 * - A DTO SEVD is a provider CQ: dequeue polls the CQ directly.  Every other
 *   stream is a queue kept here.
 * - An SEVD is "at threshold" when it holds at least max(threshold, 1)
 *   events.  While at threshold its fd (an eventfd) is readable; crossing
 *   the threshold upward notifies its AEVD and calls its callback (neither
 *   happens when the threshold is IT_THRESHOLD_DISABLE).
 * - it_evd_wait returns at once when an event is queued; otherwise it blocks
 *   until the threshold is met or the timeout (microseconds) expires.  One
 *   waiter per EVD; an SEVD that feeds an AEVD is waited on through the AEVD.
 * - Nothing is dropped: a queue past its size keeps the event, marks the EVD
 *   overflowed and posts IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE on the IA's
 *   affiliated EVD.  Only it_evd_post_se refuses (IT_ERR_EVD_QUEUE_FULL).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ual.h"

static gboolean
is_stream(it_event_type_t s)
{
  switch (s) {
  case IT_DTO_EVENT_STREAM: case IT_CM_REQ_EVENT_STREAM: case IT_CM_MSG_EVENT_STREAM:
  case IT_ASYNC_AFF_EVENT_STREAM: case IT_ASYNC_UNAFF_EVENT_STREAM:
  case IT_SOFTWARE_EVENT_STREAM: case IT_AEVD_NOTIFICATION_EVENT_STREAM:
    return TRUE;
  default:
    return FALSE;
  }
}

static gboolean
is_aevd(const ual_evd_t *e)
{
  return e->stream == IT_AEVD_NOTIFICATION_EVENT_STREAM;
}

static uint32_t
evd_count_locked(ual_evd_t *e)
{
  if (e->cq != NULL)
    return e->obj.ia->prov->data->cq_count(e->cq);
  if (is_aevd(e))
    return g_queue_get_length(&e->notified);
  return g_queue_get_length(&e->q);
}

static void
fd_set_level(ual_evd_t *e, gboolean on)
{
  uint64_t v = 1;
  if (on && !e->signaled) {
    if (write(e->fd, &v, sizeof(v)) != sizeof(v))
      g_log(UAL_LOG, G_LOG_LEVEL_WARNING, "EVD %p: eventfd write failed: %s",
            (void *) (uintptr_t) e->obj.handle, g_strerror(errno));
    /* Written under the EVD's lock, read without it by sevd_take. */
    g_atomic_int_set(&e->signaled, TRUE);
  } else if (!on && e->signaled && !g_atomic_int_get(&e->dead)) {
    /* A freed EVD's descriptor stays readable (ual_evd_unpublish), even
     * when a take that was in flight re-evaluates the level after it. */
    if (read(e->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
      g_log(UAL_LOG, G_LOG_LEVEL_WARNING, "EVD %p: eventfd read failed: %s",
            (void *) (uintptr_t) e->obj.handle, g_strerror(errno));
    g_atomic_int_set(&e->signaled, FALSE);
  }
}

static void aevd_notify(ual_evd_t *aevd, ual_evd_t *sevd);

/* The DTO SEVD this thread waits on in it_evd_wait, when it needs no
 * rising edge of its own (threshold 1, no callback), or NULL: a cq_notify
 * upcall this thread makes for it (from its own poll of the CQ, or its
 * cq_wait_begin .. cq_wait_end) then needs no eventfd write, as the thread
 * takes the completion itself next, and that take re-evaluates the level. */
static __thread ual_evd_t *evd_self_wait UAL_TLS;

/* Descriptors of a provider's a waiter sleeps on besides the EVD's own. */
#define UAL_WAIT_FDS 8

/* Re-evaluate the threshold after any change; arm the CQ when someone may
 * be waiting for the next completion. */
void
ual_evd_update(ual_evd_t *e)
{
  gboolean rising = FALSE;
  g_mutex_lock(&e->lock);
  size_t trig = MAX(e->threshold, (size_t) 1);
  for (;;) {
    uint32_t n = evd_count_locked(e);
    gboolean at = n >= trig;
    if (at && !e->signaled)
      rising = TRUE;
    fd_set_level(e, at);
    if (at || e->cq == NULL)
      break;
    /* Below threshold on a CQ: arm it only for someone who waits for the
     * next completion (an fd, an AEVD, a callback, a thread asleep in
     * it_evd_wait); a busy poller would pay a notify per completion, and
     * so would a waiter re-arming as it takes the event it returns. */
    if (!g_atomic_int_get(&e->fd_on) && e->aevd == NULL && e->callback == NULL &&
        g_atomic_int_get(&e->sleepers) == 0)
      break;
    /* Arm, then look again to close the race. */
    e->obj.ia->prov->data->arm_cq(e->cq);
    if (e->obj.ia->prov->data->cq_count(e->cq) == n)
      break;
  }
  ual_evd_t *aevd = e->aevd;
  it_evd_callback_rtn_t cb = e->callback;
  void *arg = e->callback_arg;
  g_mutex_unlock(&e->lock);

  if (rising && e->threshold != IT_THRESHOLD_DISABLE) {
    if (aevd != NULL)
      aevd_notify(aevd, e);
    if (cb != NULL)
      cb(UAL_HANDLE(&e->obj, it_evd_handle_t), arg);
  }
}

static void
aevd_notify(ual_evd_t *aevd, ual_evd_t *sevd)
{
  g_mutex_lock(&aevd->lock);
  /* A freed SEVD never comes back on the queue (ual_evd_unpublish). */
  if (!sevd->in_aevd && !g_atomic_int_get(&sevd->dead)) {
    sevd->in_aevd = TRUE;
    g_queue_push_tail(&aevd->notified, sevd);
  }
  fd_set_level(aevd, TRUE);
  g_mutex_unlock(&aevd->lock);
}

/* Enqueue a software-made event (CM, async, software streams). */
void
ual_evd_push(ual_evd_t *e, const it_event_t *ev)
{
  gboolean overflow = FALSE;
  it_event_t *copy = g_new(it_event_t, 1);
  *copy = *ev;
  copy->any.evd = UAL_HANDLE(&e->obj, it_evd_handle_t);
  g_mutex_lock(&e->lock);
  g_queue_push_tail(&e->q, copy);
  if (g_queue_get_length(&e->q) > e->qsize && !e->overflowed)
    overflow = e->overflowed = TRUE;
  g_mutex_unlock(&e->lock);
  if (overflow && e->stream != IT_ASYNC_AFF_EVENT_STREAM)
    ual_async_aff(e->obj.ia, IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE, UAL_HANDLE(&e->obj, it_handle_t));
  ual_evd_update(e);
}

/* Post an affiliated asynchronous event on the IA's affiliated EVD. */
void
ual_async_aff(ual_ia_t *ia, it_event_type_t type, it_handle_t cause)
{
  ual_evd_t *aff = ia->aff_evd;
  if (aff == NULL) {
    g_log(UAL_LOG, G_LOG_LEVEL_MESSAGE,
          "affiliated event %s (0x%x) on %p of IA '%s' has no affiliated EVD to go to; "
          "create one with it_evd_create(IT_ASYNC_AFF_EVENT_STREAM) to receive it",
          itx_event_name(type), (unsigned) type, cause, ia->iface->name);
    return;
  }
  it_event_t ev;
  memset(&ev, 0, sizeof(ev));
  ev.aff_async.event_number = type;
  ev.aff_async.cause.ep = (it_ep_handle_t) cause;
  ual_evd_push(aff, &ev);
}

static const it_event_type_t dto_event_of[] = {
  [RNICPI_WC_SEND] = IT_DTO_SEND_CMPL_EVENT,
  [RNICPI_WC_RDMA_WRITE] = IT_DTO_RDMA_WRITE_CMPL_EVENT,
  [RNICPI_WC_RDMA_READ] = IT_DTO_RDMA_READ_CMPL_EVENT,
  [RNICPI_WC_CMP_SWP] = IT_DTO_CMP_SWAP_CMPL_EVENT,
  [RNICPI_WC_FETCH_ADD] = IT_DTO_FETCH_ADD_CMPL_EVENT,
  [RNICPI_WC_RECV] = IT_DTO_RC_RECV_CMPL_EVENT,
  [RNICPI_WC_BIND_MW] = IT_RMR_LINK_CMPL_EVENT,
  [RNICPI_WC_LOCAL_INV] = IT_RMR_LINK_CMPL_EVENT, /* an LMR's key: IT_LMR_LINK_CMPL_EVENT (wc_to_event) */
  [RNICPI_WC_FAST_REG] = IT_LMR_LINK_CMPL_EVENT,
};

static const it_dto_status_t dto_status_of[] = {
  [RNICPI_WC_SUCCESS] = IT_DTO_SUCCESS,
  [RNICPI_WC_LOC_LEN_ERR] = IT_DTO_ERR_LOCAL_LENGTH,
  [RNICPI_WC_LOC_QP_OP_ERR] = IT_DTO_ERR_LOCAL_EP,
  [RNICPI_WC_LOC_PROT_ERR] = IT_DTO_ERR_LOCAL_PROTECTION,
  [RNICPI_WC_WR_FLUSH_ERR] = IT_DTO_ERR_FLUSHED,
  [RNICPI_WC_MW_BIND_ERR] = IT_RMR_OPERATION_FAILED,
  [RNICPI_WC_BAD_RESP_ERR] = IT_DTO_ERR_BAD_RESPONSE,
  [RNICPI_WC_REM_ACCESS_ERR] = IT_DTO_ERR_REMOTE_ACCESS,
  [RNICPI_WC_REM_OP_ERR] = IT_DTO_ERR_REMOTE_RESPONDER,
  [RNICPI_WC_TRANSPORT_ERR] = IT_DTO_ERR_TRANSPORT,
  [RNICPI_WC_RNR_ERR] = IT_DTO_ERR_RECEIVER_NOT_READY,
  [RNICPI_WC_GENERAL_ERR] = IT_DTO_ERR_TRANSPORT,
  [RNICPI_WC_MEM_MGT_ERR] = IT_DTO_ERR_LOCAL_MM_OPERATION,
};

static void wc_to_event_flags(ual_evd_t *e, const rnicpi_wc_t *wc, it_event_t *ev);

/* The completion @wc of @e's CQ as the IT-API event @ev: inline, for a
 * poller's dequeue; what flags or a key add is wc_to_event_flags()'s. */
static inline __attribute__((always_inline)) void
wc_to_event(ual_evd_t *e, const rnicpi_wc_t *wc, it_event_t *ev)
{
  ual_dto_ext_t *x = (ual_dto_ext_t *) ev;
  memset(x, 0, sizeof(*x));
  it_dto_cmpl_event_t *d = &x->dto;
  d->event_number = (unsigned) wc->opcode < G_N_ELEMENTS(dto_event_of) ?
                    dto_event_of[wc->opcode] : IT_DTO_SEND_CMPL_EVENT;
  d->evd = UAL_HANDLE(&e->obj, it_evd_handle_t);
  d->ep = (it_ep_handle_t) (uintptr_t) wc->qp_ctx;
  d->cookie = wc->wr_id;
  d->dto_status = (unsigned) wc->status < G_N_ELEMENTS(dto_status_of) ?
                  dto_status_of[wc->status] : IT_DTO_ERR_TRANSPORT;
  d->transferred_length = wc->byte_len;
  d->unlinked_mr_handle = IT_NULL_HANDLE;
  /* The usual completion: no flag, no key, nothing more to say. */
  if (G_LIKELY(wc->flags == 0 && wc->opcode != RNICPI_WC_LOCAL_INV))
    return;
  wc_to_event_flags(e, wc, ev);
}

/* What @wc's flags and key add to @ev, filled by wc_to_event(). */
static void
wc_to_event_flags(ual_evd_t *e, const rnicpi_wc_t *wc, it_event_t *ev)
{
  ual_dto_ext_t *x = (ual_dto_ext_t *) ev;
  it_dto_cmpl_event_t *d = &x->dto;
  /* A receive of it_post_send_and_unlink names the RMR the peer unlinked. */
  if (wc->opcode == RNICPI_WC_RECV && (wc->flags & RNICPI_WC_WITH_INV))
    d->unlinked_mr_handle = ual_rmr_invalidated(e->obj.ia, wc->rkey);
  /* A Read with IT_UNLINK_LOCAL_SINK names the sink it unlinked. */
  if (wc->opcode == RNICPI_WC_RDMA_READ && (wc->flags & RNICPI_WC_WITH_INV))
    d->unlinked_mr_handle = ual_rmr_invalidated(e->obj.ia, wc->rkey);
  /* it_lmr_unlink and it_rmr_unlink are both Local Invalidates: the key
   * (RNIC-PI 1.4 reports it) tells an LMR's from an RMR's. */
  if (wc->opcode == RNICPI_WC_LOCAL_INV && wc->rkey != 0 && ual_lmr_is_link_key(e->obj.ia, wc->rkey))
    d->event_number = IT_LMR_LINK_CMPL_EVENT;
  if (wc->opcode == RNICPI_WC_RECV && (wc->flags & RNICPI_WC_WITH_IMM)) {
    x->with_imm = 1;
    x->imm_data = wc->imm_data;
  }
  /* A datagram receive takes the all_dto_cmpl form (sender, path, GRH). */
  if (G_UNLIKELY(wc->flags & RNICPI_WC_UD))
    ual_ud_recv_event(e->obj.ia, wc, &ev->all_dto_cmpl);
}

/* Take one event from an SEVD; TRUE when one was taken. */
static inline __attribute__((always_inline)) gboolean
sevd_take(ual_evd_t *e, it_event_t *ev)
{
  gboolean got = FALSE;
  if (e->cq != NULL) {
    rnicpi_wc_t wc;
    /* Zeroed for a provider of a minor before 5, which leaves the fields
     * of later minors alone; one of 5 on writes every field (rnicpi.h). */
    if (G_UNLIKELY(e->wc_zero))
      memset(&wc, 0, sizeof(wc));
    if (e->poll_cq(e->cq, &wc, 1) == 1) {
      wc_to_event(e, &wc, ev);
      got = TRUE;
    }
  } else {
    g_mutex_lock(&e->lock);
    it_event_t *q = g_queue_pop_head(&e->q);
    if (q != NULL) {
      *ev = *q;
      g_free(q);
      got = TRUE;
    }
    if (g_queue_is_empty(&e->q) && (e->flags & IT_EVD_OVERFLOW_AUTO_RESET))
      e->overflowed = FALSE;
    g_mutex_unlock(&e->lock);
  }
  /* Whoever may be watching the level (fd, AEVD, callback, waiter) must see
   * it fall again.  A notify racing this take may have raised it after the
   * entry left the CQ, so the level is re-read under the lock here. */
  if (got && (g_atomic_int_get(&e->fd_on) || e->aevd != NULL || e->callback != NULL ||
              g_atomic_int_get(&e->sleepers) > 0 || g_atomic_int_get(&e->signaled)))
    ual_evd_update(e);
  return got;
}

static gboolean
aevd_take(ual_evd_t *a, it_event_t *ev)
{
  for (;;) {
    g_mutex_lock(&a->lock);
    ual_evd_t *s = g_queue_pop_head(&a->notified);
    if (s != NULL)
      s->in_aevd = FALSE;
    if (g_queue_is_empty(&a->notified))
      fd_set_level(a, FALSE);
    g_mutex_unlock(&a->lock);
    if (s == NULL)
      return FALSE;
    if (a->flags & IT_EVD_DEQUEUE_NOTIFICATIONS) {
      memset(ev, 0, sizeof(it_aevd_notification_event_t));
      ev->aevd_notify.event_number = IT_AEVD_NOTIFICATION_EVENT;
      ev->aevd_notify.aevd = UAL_HANDLE(&a->obj, it_evd_handle_t);
      ev->aevd_notify.sevd = UAL_HANDLE(&s->obj, it_evd_handle_t);
      return TRUE;
    }
    if (sevd_take(s, ev)) {
      /* More left: keep it in the rotation. */
      g_mutex_lock(&s->lock);
      gboolean more = evd_count_locked(s) > 0;
      g_mutex_unlock(&s->lock);
      if (more)
        aevd_notify(a, s);
      return TRUE;
    }
  }
}

static inline __attribute__((always_inline)) it_status_t
evd_take(ual_evd_t *e, it_event_t *ev)
{
  gboolean got = is_aevd(e) ? aevd_take(e, ev) : sevd_take(e, ev);
  return got ? IT_SUCCESS : IT_ERR_QUEUE_EMPTY;
}

it_status_t
it_evd_dequeue(it_evd_handle_t evd_handle, it_event_t *event)
{
  RSEC_SCOPE();
  ual_evd_t *e = ual_evd_get(evd_handle);
  if (G_UNLIKELY(e == NULL))
    return ual_fail(IT_ERR_INVALID_EVD, "it_evd_dequeue: %p is not a live EVD handle", (void *) evd_handle);
  if (G_UNLIKELY(event == NULL))
    return ual_fail(IT_ERR_FAULT, "it_evd_dequeue: event is NULL");
  return evd_take(e, event);
}

/* A batch dequeue polls a CQ this many entries at a time (on the stack). */
#define UAL_DEQUEUE_CHUNK 32

/* Take up to @max events from an SEVD into @ev; how many.  What @max
 * sevd_take calls would give, in the same order: a CQ is polled for many
 * entries at once, a queue popped under one lock hold, and the level that
 * watchers see is re-read once at the end. */
static size_t
sevd_take_n(ual_evd_t *e, size_t max, it_event_t *ev)
{
  size_t got = 0;
  if (e->cq != NULL) {
    const rnicpi_data_ops_t *ops = e->obj.ia->prov->data;
    /* rnicpi_wc_t last grew in ABI 1.5 (imm_data): a provider built with
     * an older minor strides its entries by a smaller size, so it is
     * polled one zeroed entry at a time, as sevd_take does. */
    size_t chunk = e->obj.ia->prov->abi_minor >= 5 ? UAL_DEQUEUE_CHUNK : 1;
    rnicpi_wc_t wc[UAL_DEQUEUE_CHUNK];
    while (got < max) {
      int want = (int) MIN(max - got, chunk);
      /* Zeroed: a provider leaves the fields of a newer minor alone. */
      memset(wc, 0, (size_t) want * sizeof(wc[0]));
      int n = ops->poll_cq(e->cq, wc, want);
      for (int i = 0; i < n; i++)
        wc_to_event(e, &wc[i], &ev[got + (size_t) i]);
      got += (size_t) MAX(n, 0);
      if (n < want)
        break;
    }
  } else {
    g_mutex_lock(&e->lock);
    for (it_event_t *q; got < max && (q = g_queue_pop_head(&e->q)) != NULL; got++) {
      ev[got] = *q;
      g_free(q);
    }
    if (g_queue_is_empty(&e->q) && (e->flags & IT_EVD_OVERFLOW_AUTO_RESET))
      e->overflowed = FALSE;
    g_mutex_unlock(&e->lock);
  }
  /* As sevd_take: watchers must see the level fall. */
  if (got > 0 && (g_atomic_int_get(&e->fd_on) || e->aevd != NULL || e->callback != NULL ||
                  g_atomic_int_get(&e->sleepers) > 0 || g_atomic_int_get(&e->signaled)))
    ual_evd_update(e);
  return got;
}

it_boolean_t
itx_dto_imm_data(const it_event_t *event, uint64_t *imm_data)
{
  const ual_dto_ext_t *x = (const ual_dto_ext_t *) event;
  if (event == NULL || x->dto.event_number != IT_DTO_RC_RECV_CMPL_EVENT ||
      x->dto.dto_status != IT_DTO_SUCCESS || !x->with_imm)
    return IT_FALSE;
  if (imm_data != NULL)
    *imm_data = x->imm_data;
  return IT_TRUE;
}

it_status_t
itx_evd_dequeue_n(it_evd_handle_t evd_handle, size_t max, it_event_t *events, size_t *count)
{
  RSEC_SCOPE();
  ual_evd_t *e = ual_evd_get(evd_handle);
  if (G_UNLIKELY(e == NULL))
    return ual_fail(IT_ERR_INVALID_EVD, "itx_evd_dequeue_n: %p is not a live EVD handle",
                    (void *) evd_handle);
  if (G_UNLIKELY(events == NULL || count == NULL))
    return ual_fail(IT_ERR_FAULT, "itx_evd_dequeue_n: %s is NULL", events == NULL ? "events" : "count");
  if (max == 0) {
    *count = 0;
    return IT_SUCCESS;
  }
  size_t got = 0;
  if (is_aevd(e)) {
    /* An AEVD takes one member's event at a time (each take rotates the
     * members): no saving to make, the same events as many dequeues. */
    while (got < max && aevd_take(e, &events[got]))
      got++;
  } else {
    got = sevd_take_n(e, max, events);
  }
  if (got == 0)
    return IT_ERR_QUEUE_EMPTY;
  *count = got;
  return IT_SUCCESS;
}

/* it_evd_wait is about to sleep on @e: arm what must be armed and say
 * which descriptors of the provider's to sleep on besides e->fd, into
 * @pfd (room for UAL_WAIT_FDS); how many, or UINT32_MAX when the sleep is
 * on e->fd alone (no evd_wait_end then).  @ready: no sleep, a completion
 * is already there.
 *
 * A DTO SEVD whose every event is worth waking for (threshold 1, no
 * callback that the rising edge must call: evd_self_wait) sleeps on the
 * provider's own descriptors (RNIC-PI 1.11): a message from the peer
 * wakes this thread, which makes the progress itself in evd_wait_end,
 * instead of a provider thread that is woken first and wakes this one
 * through cq_notify and the eventfd.  The provider is asked first and the
 * CQ armed after: an arm then finds this thread already counted as the
 * one that makes progress, and no provider thread is woken to watch for
 * it.  A completion that comes another way still reaches e->fd through
 * the armed CQ. */
static uint32_t
evd_wait_begin(ual_evd_t *e, struct pollfd *pfd, gboolean *ready)
{
  uint32_t n = UINT32_MAX;
  *ready = FALSE;
  g_atomic_int_set(&e->sleepers, 1);
  if (evd_self_wait == e) {
    uint32_t room = UAL_WAIT_FDS;
    rnicpi_status_t rs = e->obj.ia->prov->data->cq_wait_begin(e->cq, pfd, &room);
    g_atomic_int_set(&e->wait_ops, rs == RNICPI_OK ? 1 : -1);
    if (rs == RNICPI_OK) {
      n = MIN(room, (uint32_t) UAL_WAIT_FDS);
      /* What the provider found waiting as it began: take it, without
       * raising the level (ual_evd_update) only to lower it again. */
      if (e->obj.ia->prov->data->cq_count(e->cq) > 0) {
        *ready = TRUE;
        return n;
      }
    }
  }
  ual_evd_update(e);
  return n;
}

static void
evd_wait_end(ual_evd_t *e, const struct pollfd *pfd, uint32_t n)
{
  e->obj.ia->prov->data->cq_wait_end(e->cq, pfd, n);
}

it_status_t
it_evd_wait(it_evd_handle_t evd_handle, uint64_t timeout, it_event_t *event, size_t *nmore)
{
  if (event == NULL)
    return ual_fail(IT_ERR_FAULT, "it_evd_wait: event is NULL");
  /* The waiter slot is claimed in a read section, not under the object
   * lock, which a thread may hold across a slow provider call (a
   * disconnect waiting for a long copy to end).  it_evd_free takes the
   * slot itself (waiters 0 -> -1) before the EVD goes, so a claim that
   * wins keeps the EVD; it_ia_free marks it dead and then waits for its
   * waiters to leave, so a claim that finds it not dead after winning is
   * seen by that wait (both sides are sequentially consistent). */
  rsec_enter();
  ual_evd_t *e = ual_evd_get(evd_handle);
  it_status_t claim = IT_SUCCESS;
  if (e == NULL)
    claim = ual_fail(IT_ERR_INVALID_EVD, "it_evd_wait: %p is not a live EVD handle", (void *) evd_handle);
  else if (e->aevd != NULL)
    claim = ual_fail(IT_ERR_EVD_WAIT, "EVD %p feeds AEVD %p; wait on the AEVD instead",
                     (void *) evd_handle, (void *) (uintptr_t) e->aevd->obj.handle);
  else if (!g_atomic_int_compare_and_exchange(&e->waiters, 0, 1))
    claim = g_atomic_int_get(&e->waiters) < 0
              ? ual_fail(IT_ERR_INVALID_EVD, "it_evd_wait: EVD %p is being freed by another thread's "
                         "it_evd_free; stop using its handle", (void *) evd_handle)
              : ual_fail(IT_ERR_WAITER_LIMIT, "EVD %p already has a waiting thread (one waiter per EVD); "
                         "wait from one thread, or give each thread an EVD of its own", (void *) evd_handle);
  else if (g_atomic_int_get(&e->dead)) {
    g_atomic_int_set(&e->waiters, 0);
    claim = ual_fail(IT_ERR_INVALID_EVD, "it_evd_wait: EVD %p was freed with its IA (it_ia_free); "
                     "stop using its handle", (void *) evd_handle);
  }
  rsec_exit();
  if (claim != IT_SUCCESS)
    return claim;
  /* The deadline is read from the clock at the first take that finds
   * nothing: a wait that finds its event at once, the common case of a
   * busy queue, reads no clock. */
  gint64 deadline = timeout == IT_TIMEOUT_INFINITE ? -1 : 0;
  it_status_t st;
  if (e->cq != NULL && MAX(e->threshold, (size_t) 1) == 1 && e->callback == NULL)
    evd_self_wait = e;
  /* Each take is a read section (an AEVD's take reaches its SEVDs, which
   * may be freed meanwhile); the wait in poll is outside any. */
  for (;;) {
    /* Sleeping through the provider, an empty CQ needs no poll: what the
     * poll's own progress would find (a recv, a ring drained) makes the
     * provider's descriptors ready or is found by cq_wait_begin (rnicpi.h),
     * and the system call it may cost comes before the sleep, where a peer
     * woken by our last post may be waiting for this CPU. */
    if (!(evd_self_wait == e && g_atomic_int_get(&e->wait_ops) > 0 &&
          e->obj.ia->prov->data->cq_count(e->cq) == 0)) {
      rsec_enter();
      st = evd_take(e, event);
      rsec_exit();
      if (st == IT_SUCCESS)
        break;
    }
    if (G_UNLIKELY(g_atomic_int_get(&e->dead))) {
      st = ual_fail(IT_ERR_INVALID_EVD, "it_evd_wait: EVD %p was freed with its IA while this thread "
                    "waited on it", (void *) evd_handle);
      break;
    }
    int ms = -1;
    if (deadline >= 0) {
      gint64 now = g_get_monotonic_time();
      if (deadline == 0)
        deadline = now + (gint64) MIN(timeout, (uint64_t) G_MAXINT64 / 2);
      gint64 left = deadline - now;
      if (left <= 0) {
        rsec_enter();
        st = evd_take(e, event);
        rsec_exit();
        if (st != IT_SUCCESS)
          st = IT_ERR_TIMEOUT_EXPIRED;
        break;
      }
      ms = (int) MIN((left + 999) / 1000, (gint64) G_MAXINT);
    }
    struct pollfd pfd[1 + UAL_WAIT_FDS] = { { .fd = e->fd, .events = POLLIN } };
    gboolean ready;
    uint32_t n = evd_wait_begin(e, pfd + 1, &ready);
    int r = ready ? 0 : poll(pfd, 1 + (n == UINT32_MAX ? 0 : n), ms);
    int err = errno;
    if (n != UINT32_MAX)
      evd_wait_end(e, pfd + 1, n);
    g_atomic_int_set(&e->sleepers, 0);
    errno = err;
    if (r < 0 && errno == EINTR) {
      st = IT_ERR_INTERRUPT;
      break;
    }
    /* A DTO SEVD below its threshold keeps the fd quiet: take what is
     * there when woken by the timeout, as the loop head does. */
  }
  if (st == IT_SUCCESS && nmore != NULL) {
    /* A CQ's count is the provider's, which needs no lock. */
    gboolean locked = e->cq == NULL;
    if (locked)
      g_mutex_lock(&e->lock);
    *nmore = evd_count_locked(e);
    if (locked)
      g_mutex_unlock(&e->lock);
  }
  evd_self_wait = NULL;
  g_atomic_int_set(&e->waiters, 0);
  return st;
}

it_status_t
it_evd_create(it_ia_handle_t ia_handle, it_event_type_t event_number, it_evd_flags_t evd_flag,
              size_t sevd_queue_size, size_t sevd_threshold, it_evd_handle_t aevd_handle,
              it_evd_handle_t *evd_handle, int *fd)
{
  it_status_t st = IT_SUCCESS;
  if (evd_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_evd_create: evd_handle is NULL");
  ual_lock_take();
  ual_ia_t *ia = ual_ia_get(ia_handle);
  ual_evd_t *aevd = NULL;
  if (ia == NULL) {
    st = ual_fail(IT_ERR_INVALID_IA, "it_evd_create: %p is not a live IA handle", (void *) ia_handle);
    goto unlock;
  }
  if (!is_stream(event_number)) {
    st = ual_fail(IT_ERR_INVALID_EVD_TYPE, "event stream 0x%x is not one of the IT_*_EVENT_STREAM values",
                  (unsigned) event_number);
    goto unlock;
  }
  gboolean aevd_kind = event_number == IT_AEVD_NOTIFICATION_EVENT_STREAM;
  if ((evd_flag & ~UAL_EVD_FLAGS_KNOWN) != 0 || (!aevd_kind && (evd_flag & IT_EVD_DEQUEUE_NOTIFICATIONS))) {
    st = ual_fail(IT_ERR_INVALID_FLAGS, "EVD flags 0x%x: unknown bits, or DEQUEUE_NOTIFICATIONS on an SEVD",
                  (unsigned) evd_flag);
    goto unlock;
  }
  /* Liberal where the standard leaves room: an fd pointer without the flag
   * (IBM SKV's tests pass one) gets -1 and no descriptor. */
  if ((evd_flag & IT_EVD_CREATE_FD) && fd == NULL) {
    st = ual_fail(IT_ERR_MISMATCH_FD, "IT_EVD_CREATE_FD is set but the fd pointer is NULL; pass an int * "
                  "to receive the descriptor, or leave the flag out");
    goto unlock;
  }
  if (!aevd_kind && sevd_queue_size == 0) {
    st = ual_fail(IT_ERR_INVALID_QUEUE_SIZE, "an SEVD needs a queue size of at least 1");
    goto unlock;
  }
  if (event_number == IT_DTO_EVENT_STREAM && sevd_queue_size > ia->caps.max_cqe) {
    st = ual_fail(IT_ERR_RESOURCE_QUEUE_SIZE, "DTO EVD of %zu entries exceeds the %u the device '%s' allows",
                  sevd_queue_size, ia->caps.max_cqe, ia->iface->name);
    goto unlock;
  }
  if (!aevd_kind && sevd_threshold > sevd_queue_size) {
    st = ual_fail(IT_ERR_INVALID_THRESHOLD, "threshold %zu exceeds the queue size %zu",
                  sevd_threshold, sevd_queue_size);
    goto unlock;
  }
  if (aevd_handle != IT_NULL_HANDLE) {
    aevd = ual_evd_get(aevd_handle);
    if (aevd_kind) {
      st = ual_fail(IT_ERR_AEVD_NOT_ALLOWED, "an AEVD cannot feed another AEVD");
      goto unlock;
    }
    if (aevd == NULL || !is_aevd(aevd) || aevd->obj.ia != ia) {
      st = ual_fail(IT_ERR_INVALID_AEVD, "%p is not a live AEVD of this IA", (void *) aevd_handle);
      goto unlock;
    }
  }
  if (event_number == IT_ASYNC_AFF_EVENT_STREAM && ia->aff_evd != NULL) {
    st = ual_fail(IT_ERR_ASYNC_AFF_EVD_EXISTS, "IA '%s' already has an affiliated async EVD", ia->iface->name);
    goto unlock;
  }
  if (event_number == IT_ASYNC_UNAFF_EVENT_STREAM && ia->unaff_evd != NULL) {
    st = ual_fail(IT_ERR_ASYNC_UNAFF_EVD_EXISTS, "IA '%s' already has an unaffiliated async EVD", ia->iface->name);
    goto unlock;
  }

  ual_evd_t *e = g_new0(ual_evd_t, 1);
  e->stream = event_number;
  e->flags = evd_flag;
  e->fd_on = (evd_flag & IT_EVD_CREATE_FD) != 0;
  e->qsize = sevd_queue_size;
  e->threshold = aevd_kind ? 1 : sevd_threshold;
  e->aevd = aevd;
  e->poll_cq = ia->prov->data->poll_cq;
  e->wc_zero = ia->prov->abi_minor < 5;
  g_mutex_init(&e->lock);
  g_queue_init(&e->q);
  g_queue_init(&e->notified);
  e->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (e->fd < 0) {
    st = ual_fail(IT_ERR_RESOURCES, "eventfd for a new EVD failed: %s", g_strerror(errno));
    goto err_free_evd;
  }
  if ((st = ual_handle_new(&e->obj, IT_HANDLE_TYPE_EVD, ia)) != IT_SUCCESS)
    goto err_close_fd;
  if (event_number == IT_DTO_EVENT_STREAM) {
    rnicpi_status_t rs = ia->prov->queue->cq_create(ia->dev, (uint32_t) sevd_queue_size,
                                                    e->obj.handle, &e->cq);
    if (rs != RNICPI_OK) {
      st = ual_fail(IT_ERR_RESOURCES, "provider '%s' could not create a CQ of %zu entries: %s",
                    ia->prov->name, sevd_queue_size, rnicpi_status_message(rs));
      goto err_release_handle;
    }
  }
  if (aevd != NULL)
    aevd->nsevd++;
  if (event_number == IT_ASYNC_AFF_EVENT_STREAM)
    ia->aff_evd = e;
  if (event_number == IT_ASYNC_UNAFF_EVENT_STREAM)
    ia->unaff_evd = e;
  ual_ia_child_add(ia, &e->obj);
  *evd_handle = UAL_HANDLE(&e->obj, it_evd_handle_t);
  if (fd != NULL)
    *fd = (evd_flag & IT_EVD_CREATE_FD) ? e->fd : -1;
  /* Notification-driven SEVDs watch their CQ from the start. */
  if (e->cq != NULL && (aevd != NULL || (evd_flag & IT_EVD_CREATE_FD))) {
    ual_lock_drop();
    ual_evd_update(e);
    return IT_SUCCESS;
  }
  ual_lock_drop();
  return IT_SUCCESS;

err_release_handle:
  ual_handle_release(&e->obj);
err_close_fd:
  close(e->fd);
err_free_evd:
  g_free(e);
unlock:
  ual_lock_drop();
  return st;
}

void
ual_evd_unpublish(ual_evd_t *e)
{
  g_atomic_int_set(&e->dead, 1);
  if (e->aevd != NULL) {
    ual_evd_t *a = e->aevd;
    g_mutex_lock(&a->lock);
    g_queue_remove(&a->notified, e);
    e->in_aevd = FALSE;
    if (g_queue_is_empty(&a->notified))
      fd_set_level(a, FALSE);
    g_mutex_unlock(&a->lock);
  }
  /* Whoever watches the descriptor wakes and finds the handle stale: a
   * thread in it_evd_wait (only it_ia_free gets here with one) leaves, a
   * GSource of itx_evd_source_new(), which polls a duplicate of the
   * descriptor, removes itself.  The level then stays up (fd_set_level). */
  g_mutex_lock(&e->lock);
  fd_set_level(e, TRUE);
  g_mutex_unlock(&e->lock);
}

void
ual_evd_destroy(ual_evd_t *e)
{
  ual_ia_t *ia = e->obj.ia;
  if (e->obj.handle != 0)
    ual_handle_release(&e->obj);
  if (ia->aff_evd == e)
    ia->aff_evd = NULL;
  if (ia->unaff_evd == e)
    ia->unaff_evd = NULL;
  if (e->aevd != NULL) {
    ual_evd_t *a = e->aevd;
    g_mutex_lock(&a->lock);
    g_queue_remove(&a->notified, e);
    if (g_queue_is_empty(&a->notified))
      fd_set_level(a, FALSE);
    g_mutex_unlock(&a->lock);
    a->nsevd--;
  }
  if (e->cq != NULL)
    ia->prov->queue->cq_destroy(e->cq);
  g_queue_clear_full(&e->q, g_free);
  g_queue_clear(&e->notified);
  close(e->fd);
  g_mutex_clear(&e->lock);
  g_free(e);
}

it_status_t
it_evd_free(it_evd_handle_t evd_handle)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_evd_t *e = ual_evd_get(evd_handle);
  if (e == NULL) {
    st = ual_fail(IT_ERR_INVALID_EVD, "it_evd_free: %p is not a live EVD handle", (void *) evd_handle);
  } else if (e->nbound > 0) {
    st = ual_fail(IT_ERR_EVD_BUSY, "EVD %p is used by %d endpoints or listeners; free them first",
                  (void *) evd_handle, e->nbound);
  } else if (e->nsevd > 0) {
    st = ual_fail(IT_ERR_EVD_BUSY, "AEVD %p still has %d SEVDs attached; free them first",
                  (void *) evd_handle, e->nsevd);
  } else if (!g_atomic_int_compare_and_exchange(&e->waiters, 0, -1)) {
    /* Taken for good on success: a thread that starts it_evd_wait now is
     * refused (it claims the slot without the object lock). */
    st = ual_fail(IT_ERR_EVD_BUSY, "EVD %p has a thread waiting on it in it_evd_wait; free it once "
                  "that wait has returned", (void *) evd_handle);
  } else {
    ual_ia_child_remove(e->obj.ia, &e->obj);
    ual_obj_retire(&e->obj);
  }
  ual_lock_drop();
  return st;
}

it_status_t
it_evd_query(it_evd_handle_t evd_handle, it_evd_param_mask_t mask, it_evd_param_t *params)
{
  RSEC_SCOPE();
  ual_evd_t *e = ual_evd_get(evd_handle);
  if (e == NULL)
    return ual_fail(IT_ERR_INVALID_EVD, "it_evd_query: %p is not a live EVD handle", (void *) evd_handle);
  if ((mask & ~UAL_EVD_PARAMS_KNOWN) != 0)
    return ual_fail(IT_ERR_INVALID_MASK, "it_evd_query: mask 0x%x has unknown bits", (unsigned) mask);
  if (params == NULL)
    return ual_fail(IT_ERR_FAULT, "it_evd_query: params is NULL");
  memset(params, 0, sizeof(*params));
  params->ia = UAL_HANDLE(&e->obj.ia->obj, it_ia_handle_t);
  params->event_number = e->stream;
  params->evd_flag = e->flags | (g_atomic_int_get(&e->fd_on) ? IT_EVD_CREATE_FD : 0);
  params->sevd_queue_size = e->qsize;
  params->sevd_threshold = e->threshold;
  params->aevd = e->aevd ? UAL_HANDLE(&e->aevd->obj, it_evd_handle_t) : IT_NULL_HANDLE;
  params->fd = g_atomic_int_get(&e->fd_on) ? e->fd : -1;
  params->evd_bound = e->nbound > 0 || e->nsevd > 0 ? IT_TRUE : IT_FALSE;
  params->evd_enabled = IT_TRUE;
  params->evd_overflowed = e->overflowed ? IT_TRUE : IT_FALSE;
  params->evd_callback = e->callback != NULL ? IT_TRUE : IT_FALSE;
  return IT_SUCCESS;
}

it_status_t
it_evd_modify(it_evd_handle_t evd_handle, it_evd_param_mask_t mask, const it_evd_param_t *params)
{
  RSEC_SCOPE();
  ual_evd_t *e = ual_evd_get(evd_handle);
  if (e == NULL)
    return ual_fail(IT_ERR_INVALID_EVD, "it_evd_modify: %p is not a live EVD handle", (void *) evd_handle);
  if (params == NULL)
    return ual_fail(IT_ERR_FAULT, "it_evd_modify: params is NULL");
  if ((mask & ~(IT_EVD_PARAM_THRESHOLD | IT_EVD_PARAM_OVERFLOWED)) != 0 || mask == 0)
    return ual_fail(IT_ERR_INVALID_MASK,
                    "it_evd_modify: mask 0x%x; only THRESHOLD and OVERFLOWED (reset) can change",
                    (unsigned) mask);
  if ((mask & IT_EVD_PARAM_THRESHOLD) && (is_aevd(e) || params->sevd_threshold > e->qsize))
    return ual_fail(IT_ERR_INVALID_THRESHOLD, "threshold %zu is above the queue size %zu, or the EVD is an AEVD",
                    params->sevd_threshold, e->qsize);
  g_mutex_lock(&e->lock);
  if (mask & IT_EVD_PARAM_THRESHOLD)
    e->threshold = params->sevd_threshold;
  if ((mask & IT_EVD_PARAM_OVERFLOWED) && !params->evd_overflowed)
    e->overflowed = FALSE;
  g_mutex_unlock(&e->lock);
  ual_evd_update(e);
  return IT_SUCCESS;
}

it_status_t
it_evd_post_se(it_evd_handle_t evd_handle, const void *event)
{
  RSEC_SCOPE();
  ual_evd_t *e = ual_evd_get(evd_handle);
  if (e == NULL)
    return ual_fail(IT_ERR_INVALID_EVD, "it_evd_post_se: %p is not a live EVD handle", (void *) evd_handle);
  if (e->stream != IT_SOFTWARE_EVENT_STREAM)
    return ual_fail(IT_ERR_INVALID_SOFT_EVD, "EVD %p serves stream 0x%x, not the software event stream",
                    (void *) evd_handle, (unsigned) e->stream);
  g_mutex_lock(&e->lock);
  gboolean full = g_queue_get_length(&e->q) >= e->qsize;
  g_mutex_unlock(&e->lock);
  if (full)
    return ual_fail(IT_ERR_EVD_QUEUE_FULL, "software EVD %p holds its %zu events; dequeue some first",
                    (void *) evd_handle, e->qsize);
  it_event_t ev;
  memset(&ev, 0, sizeof(it_software_event_t));
  ev.sw.event_number = IT_SOFTWARE_EVENT;
  ev.sw.data = (void *) event;
  ual_evd_push(e, &ev);
  return IT_SUCCESS;
}

it_status_t
it_evd_callback_attach(it_evd_handle_t evd_handle, it_evd_callback_rtn_t callback, void *arg)
{
  RSEC_SCOPE();
  ual_evd_t *e = ual_evd_get(evd_handle);
  if (e == NULL)
    return ual_fail(IT_ERR_INVALID_EVD, "it_evd_callback_attach: %p is not a live EVD handle", (void *) evd_handle);
  if (callback == NULL)
    return ual_fail(IT_ERR_FAULT, "it_evd_callback_attach: callback is NULL");
  g_mutex_lock(&e->lock);
  gboolean exists = e->callback != NULL;
  if (!exists) {
    e->callback = callback;
    e->callback_arg = arg;
  }
  g_mutex_unlock(&e->lock);
  if (exists)
    return ual_fail(IT_ERR_CALLBACK_EXISTS, "EVD %p already has a callback; detach it first", (void *) evd_handle);
  ual_evd_update(e);
  return IT_SUCCESS;
}

it_status_t
it_evd_callback_detach(it_evd_handle_t evd_handle)
{
  RSEC_SCOPE();
  ual_evd_t *e = ual_evd_get(evd_handle);
  if (e == NULL)
    return ual_fail(IT_ERR_INVALID_EVD, "it_evd_callback_detach: %p is not a live EVD handle", (void *) evd_handle);
  g_mutex_lock(&e->lock);
  e->callback = NULL;
  e->callback_arg = NULL;
  g_mutex_unlock(&e->lock);
  return IT_SUCCESS;
}

/* Upcalls from providers. */

void
ual_upcall_cq_notify(void *dev_ctx, uint64_t cq_ctx)
{
  /* It may race it_evd_free (rnicpi.h): the EVD is looked up and updated
   * in a read section, which a free's grace period waits for; not under
   * the object lock, which a thread may hold across a slow provider call
   * while completions go on (a notification is the data path of a thread
   * that sleeps for its completions).  The callback it may call runs in
   * that section too, as it_evd_callback_attach's does: a free it makes
   * goes to the reclaimer. */
  (void) dev_ctx;
  rsec_enter();
  ual_evd_t *e = ual_evd_get((it_evd_handle_t) (uintptr_t) cq_ctx);
  /* This thread's own wait (evd_wait_begin): it takes the completion next,
   * and that take re-evaluates the level and arms again (sevd_take), so
   * the eventfd need not be written now and read back at once.  A
   * callback attached meanwhile still gets its rising edge. */
  if (e != NULL && !(e == evd_self_wait && e->callback == NULL))
    ual_evd_update(e);
  rsec_exit();
}

/* The IT-API affiliated event of a queue pair's asynchronous event: the
 * cause says which (doc/writing-a-provider.md); without one, a local
 * fault is EP_FAILURE, a violation of this side's rights
 * L_ACCESS_VIOLATION, what the peer reported R_ERROR. */
static it_event_type_t
ual_ep_async_event(rnicpi_async_type_t type, rnicpi_async_cause_t cause)
{
  switch (cause) {
  case RNICPI_AE_WRITE_ACCESS: return IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION;
  case RNICPI_AE_READ_ACCESS: return IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION;
  case RNICPI_AE_ACCESS: return IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION;
  case RNICPI_AE_WRITE_CORRUPT: return IT_ASYNC_AFF_EP_RDMAW_CORRUPT_DATA;
  case RNICPI_AE_BAD_OPCODE: return IT_ASYNC_AFF_EP_BAD_TRANSPORT_OPCODE;
  case RNICPI_AE_PROTOCOL: return IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR;
  case RNICPI_AE_LLP: return IT_ASYNC_AFF_EP_L_LLP_ERROR;
  case RNICPI_AE_LOCAL_RECV: return IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION;
  case RNICPI_AE_LOCAL_READ_RESP: return IT_ASYNC_AFF_EP_L_IRRQ_ACCESS_VIOLATION;
  case RNICPI_AE_LOCAL: return IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION;
  case RNICPI_AE_REMOTE_ACCESS: return IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION;
  case RNICPI_AE_REMOTE_RECV: return IT_ASYNC_AFF_EP_R_RECV_ACCESS_VIOLATION;
  case RNICPI_AE_REMOTE_RECV_LENGTH: return IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR;
  case RNICPI_AE_REMOTE: return IT_ASYNC_AFF_EP_R_ERROR;
  case RNICPI_AE_UNSPECIFIED:
  default:
    break;
  }
  if (type == RNICPI_ASYNC_QP_ACCESS_ERR)
    return IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION;
  return type == RNICPI_ASYNC_QP_REMOTE_ERR ? IT_ASYNC_AFF_EP_R_ERROR : IT_ASYNC_AFF_EP_FAILURE;
}

void
ual_upcall_async(void *dev_ctx, const rnicpi_async_event_t *ev)
{
  ual_ia_t *ia = dev_ctx;
  if (ia == NULL)
    return;
  ual_lock_take();
  switch (ev->type) {
  case RNICPI_ASYNC_CQ_OVERFLOW: {
    ual_evd_t *e = ual_evd_get((it_evd_handle_t) (uintptr_t) ev->ctx);
    if (e != NULL) {
      e->overflowed = TRUE;
      ual_async_aff(ia, IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE, (it_handle_t) (uintptr_t) ev->ctx);
      ual_evd_update(e);
    }
    break;
  }
  case RNICPI_ASYNC_QP_FATAL:
  case RNICPI_ASYNC_QP_ACCESS_ERR:
  case RNICPI_ASYNC_QP_REMOTE_ERR: {
    ual_ep_t *ep = ual_ep_get((it_ep_handle_t) (uintptr_t) ev->ctx);
    if (ep != NULL) {
      /* The 1.7 fields: from a provider of that minor, and the Terminate
       * only with a cause (a provider that zeroes the event says none). */
      rnicpi_async_cause_t cause = ia->prov->abi_minor >= 7 ? ev->cause : RNICPI_AE_UNSPECIFIED;
      itx_ep_error_t *e = &ep->error;
      memset(e, 0, sizeof(*e));
      e->event = ual_ep_async_event(ev->type, cause);
      if (cause != RNICPI_AE_UNSPECIFIED && ev->term_layer != RNICPI_TERM_NONE) {
        e->terminate = IT_TRUE;
        e->sent = ev->type != RNICPI_ASYNC_QP_REMOTE_ERR;
        e->layer = ev->term_layer;
        e->etype = ev->term_etype;
        e->code = ev->term_code;
      }
      ual_async_aff(ia, e->event, (it_handle_t) (uintptr_t) ev->ctx);
    }
    break;
  }
  case RNICPI_ASYNC_SRQ_LIMIT: {
    ual_srq_t *q = ual_srq_get((it_srq_handle_t) (uintptr_t) ev->ctx);
    if (q != NULL) {
      q->low_watermark = 0; /* fired: disarmed until it_srq_modify arms it again */
      ual_async_aff(ia, IT_ASYNC_AFF_SRQ_LOW_WATERMARK, (it_handle_t) (uintptr_t) ev->ctx);
    }
    break;
  }
  case RNICPI_ASYNC_PORT_ACTIVE:
  case RNICPI_ASYNC_PORT_DOWN:
    if (ia->unaff_evd != NULL) {
      it_event_t e;
      memset(&e, 0, sizeof(it_unaffiliated_event_t));
      e.unaff_async.event_number = ev->type == RNICPI_ASYNC_PORT_ACTIVE ?
                                   IT_ASYNC_UNAFF_SPIGOT_ONLINE : IT_ASYNC_UNAFF_SPIGOT_OFFLINE;
      e.unaff_async.ia = UAL_HANDLE(&ia->obj, it_ia_handle_t);
      e.unaff_async.spigot_id = (size_t) ev->ctx;
      ual_evd_push(ia->unaff_evd, &e);
    }
    break;
  }
  ual_lock_drop();
}
