/*
 * vp/ib progress: the per-device thread that owns the rdma_cm event
 * channel (its events handled in ib_cm_event.c), the completion channel
 * (but while an application thread sleeps on it: ib_cq_wait_begin) and
 * the asynchronous event descriptor, and makes the upcalls queued for
 * it with no lock held; verbs asynchronous events, and the devices that
 * share a verbs context; and the sweep, which completes as flushed what a
 * device leaves of a queue pair in ERROR.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ib.h"

/* ---- events ------------------------------------------------------------- */

void
ib_dev_wake(ib_dev_t *dev)
{
  uint64_t one = 1;
  ssize_t r = write(dev->wakefd, &one, sizeof(one));
  (void) r; /* a full counter wakes the thread already */
}

static void
queue_event(ib_dev_t *dev, ib_event_t *e)
{
  g_mutex_lock(&dev->ev_lock);
  g_queue_push_tail(&dev->events, e);
  g_mutex_unlock(&dev->ev_lock);
  ib_dev_wake(dev);
}

static ib_event_t *
event_new(int kind)
{
  ib_event_t *e = g_new0(ib_event_t, 1);
  e->kind = kind;
  return e;
}

void
ib_dev_queue_cm(ib_dev_t *dev, const rnicpi_cm_event_t *ev)
{
  ib_event_t *e = event_new(IB_EV_CM);
  e->cm = *ev;
  queue_event(dev, e);
}

void
ib_dev_queue_async(ib_dev_t *dev, const rnicpi_async_event_t *ev)
{
  ib_event_t *e = event_new(IB_EV_ASYNC);
  e->async = *ev;
  queue_event(dev, e);
}

void
ib_dev_queue_notify(ib_dev_t *dev, const rnicpi_notify_t *n)
{
  ib_event_t *e = event_new(IB_EV_NOTIFY);
  e->notify = *n;
  queue_event(dev, e);
}

static void
deliver_events(ib_dev_t *dev)
{
  for (;;) {
    g_mutex_lock(&dev->ev_lock);
    ib_event_t *e = g_queue_pop_head(&dev->events);
    g_mutex_unlock(&dev->ev_lock);
    if (e == NULL)
      return;
    if (e->kind == IB_EV_CM) {
      dev->up.cm_event(dev->base.al_ctx, &e->cm);
    } else if (e->kind == IB_EV_ASYNC) {
      dev->up.async_event(dev->base.al_ctx, &e->async);
    } else if (e->kind == IB_EV_REMOVED) {
      ib_dev_removed(dev);
    } else {
      e->notify.notify(e->notify.dev_ctx, e->notify.cq_ctx);
      if (e->notify.inflight != NULL)
        g_atomic_int_add(e->notify.inflight, -1);
    }
    g_free(e);
  }
}

/* A completion channel event: the CQ was armed; answer the ring's arm.
 * Run by the progress thread, or by an application thread that slept on
 * the channel itself (ib_cq_wait_end), which then wakes the progress
 * thread if it left a CQ for rearm_idle() to look at. */
void
ib_comp_events(ib_dev_t *dev)
{
  struct ibv_cq *vcq;
  void *cq_ctx;
  gboolean rearm_set = FALSE;
  while (ibv_get_cq_event(dev->comp, &vcq, &cq_ctx) == 0) {
    ib_cq_t *cq = cq_ctx;
    rnicpi_notify_t to = { NULL, NULL, 0, NULL };
    rnicpi_notify_batch_t b;
    rnicpi_notify_batch_init(&b);
    g_mutex_lock(&dev->lock);
    if (!cq->dead && (cq->watch || __atomic_load_n(&cq->watch_unsignaled, __ATOMIC_ACQUIRE))) {
      guint polls = __atomic_load_n(&cq->polls, __ATOMIC_RELAXED);
      if (!cq->watch && polls != cq->polls_seen) {
        /* Watched for its unsignaled requests alone, and its consumer
         * polls it: the consumer takes what comes, a failure too.  Left
         * unarmed, so that its completions wake no thread (a progress
         * thread woken beside a polling consumer costs it more than its
         * own poll), and armed again once it stops polling. */
        cq->polls_seen = polls;
        if (!cq->rearm_due) {
          cq->rearm_due = TRUE;
          dev->rearm = g_list_prepend(dev->rearm, cq);
        }
        if (dev->rearm_at == G_MAXINT64) {
          dev->rearm_at = g_get_monotonic_time() + IB_REARM_IDLE_MS * 1000;
          rearm_set = TRUE;
        }
      } else {
        /* Re-armed first, then drained: a completion between the two is
         * either taken now or raises the next event. */
        ibv_req_notify_cq(cq->cq, 0);
        ib_cq_drain(cq, &b);
      }
    }
    if (!cq->dead && __atomic_exchange_n(&cq->ring.armed, FALSE, __ATOMIC_SEQ_CST)) {
      to = cq->ring.to;
      g_atomic_int_inc(&dev->inflight);
    }
    g_mutex_unlock(&dev->lock);
    ibv_ack_cq_events(vcq, 1);
    rnicpi_notify_batch_deliver(&b);
    if (to.notify != NULL) {
      to.notify(to.dev_ctx, to.cq_ctx);
      g_atomic_int_dec_and_test(&dev->inflight);
    }
  }
  /* The progress thread reads rearm_at when it goes to sleep. */
  if (rearm_set && g_thread_self() != dev->thread)
    ib_dev_wake(dev);
}

/* Adds @fd to the progress thread's epoll set, its events tagged @tag
 * (POLL_*); epoll_ctl's answer. */
int
ib_dev_watch(ib_dev_t *dev, int fd, uint32_t tag)
{
  struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };
  return epoll_ctl(dev->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Puts the completion channel back in the progress thread's epoll set
 * when no application thread sleeps on it (ib_cq_wait_end); FALSE when it
 * stays out (epoll refused it: the progress thread tries again at each
 * round, a few milliseconds apart).  Under dev->lock. */
gboolean
ib_comp_watch_locked(ib_dev_t *dev)
{
  if (!dev->comp_out || dev->comp_sleepers > 0)
    return TRUE;
  if (ib_dev_watch(dev, dev->comp->fd, POLL_COMP) != 0 && errno != EEXIST) {
    if (!dev->comp_warned)
      g_warning("vp/ib %s: epoll_ctl could not watch the completion channel again (%s); "
                "completion notifications are late until it can: free kernel memory", dev->name,
                g_strerror(errno));
    dev->comp_warned = TRUE;
    return FALSE;
  }
  dev->comp_out = FALSE;
  dev->comp_warned = FALSE;
  return TRUE;
}

/* The CQs ib_comp_events left unarmed while their consumer polled: one it
 * has not polled since the last look is armed and drained again, one it
 * still polls is looked at again later.  A CQ being destroyed stays on
 * the list, untouched (its destroy takes it off, or leaves it there when
 * the destroy fails). */
static void
rearm_idle(ib_dev_t *dev)
{
  gint64 now = g_get_monotonic_time();
  rnicpi_notify_batch_t b;
  rnicpi_notify_batch_init(&b);
  g_mutex_lock(&dev->lock);
  if (now < dev->rearm_at) {
    g_mutex_unlock(&dev->lock);
    return;
  }
  dev->rearm_at = G_MAXINT64;
  for (GList *l = dev->rearm, *next; l != NULL; l = next) {
    next = l->next;
    ib_cq_t *cq = l->data;
    guint polls = __atomic_load_n(&cq->polls, __ATOMIC_RELAXED);
    if (cq->dead || polls != cq->polls_seen) {
      cq->polls_seen = polls;
      dev->rearm_at = now + IB_REARM_IDLE_MS * 1000;
      continue;
    }
    ibv_req_notify_cq(cq->cq, 0);
    ib_cq_drain(cq, &b);
    cq->rearm_due = FALSE;
    dev->rearm = g_list_delete_link(dev->rearm, l);
  }
  g_mutex_unlock(&dev->lock);
  rnicpi_notify_batch_deliver(&b);
}

/* ---- devices sharing a verbs context ------------------------------------ */

/* librdmacm opens one verbs context per device for the whole process, so
 * every IA open on a device reads the same asynchronous events: the
 * progress thread that takes one is not always that of the device whose
 * object it names.  The open devices, to find the others on a context. */
GMutex open_lock;
GList *open_devs;

/* The open device on @dev's context whose current verbs queue pair is
 * @vqp, found by its number in each device's table: the context is
 * librdmacm's, and another user of it in the process may own the queue
 * pair (its qp_context is not ours to read), or it may be a queue pair an
 * iWARP reset replaced. */
static ib_dev_t *
qp_owner(ib_dev_t *dev, struct ibv_qp *vqp)
{
  ib_dev_t *owner = NULL;
  g_mutex_lock(&open_lock);
  for (GList *l = open_devs; l != NULL && owner == NULL; l = l->next) {
    ib_dev_t *o = l->data;
    if (o->ctx != dev->ctx)
      continue;
    rnicpi_spin_lock(&o->qp_lock);
    ib_qp_t *qp = g_hash_table_lookup(o->qps, GUINT_TO_POINTER(vqp->qp_num));
    if (qp != NULL && qp->qp == vqp)
      owner = o;
    rnicpi_spin_unlock(&o->qp_lock);
  }
  g_mutex_unlock(&open_lock);
  /* A device still opening is not listed yet; its queue pairs come after. */
  return owner;
}

/* The open device a verbs asynchronous event belongs to, or NULL when it
 * names the port or the device (every device on @dev's context hears
 * it).  @owned: whether it names an object at all.  The object lives until
 * the event is acknowledged (its destroy waits for that), and its device
 * with it. */
static ib_dev_t *
async_owner(ib_dev_t *dev, const struct ibv_async_event *v, gboolean *owned)
{
  *owned = TRUE;
  switch (v->event_type) {
  case IBV_EVENT_QP_FATAL:
  case IBV_EVENT_QP_REQ_ERR:
  case IBV_EVENT_QP_ACCESS_ERR:
    return qp_owner(dev, v->element.qp);
  case IBV_EVENT_CQ_ERR: {
    ib_cq_t *cq = v->element.cq->cq_context;
    return cq != NULL ? cq->dev : NULL;
  }
  case IBV_EVENT_SRQ_LIMIT_REACHED: {
    ib_srq_t *srq = v->element.srq->srq_context;
    return srq != NULL ? srq->dev : NULL;
  }
  case IBV_EVENT_PORT_ACTIVE:
  case IBV_EVENT_PORT_ERR:
  case IBV_EVENT_DEVICE_FATAL:
    *owned = FALSE;
    return NULL;
  default:
    (void) dev;
    return NULL; /* async_map() has nothing for it */
  }
}

/* Hand @e to every open device on @dev's context but @dev. */
static void
queue_to_others(ib_dev_t *dev, int kind, const rnicpi_async_event_t *ev)
{
  g_mutex_lock(&open_lock);
  for (GList *l = open_devs; l != NULL; l = l->next) {
    ib_dev_t *o = l->data;
    if (o == dev || o->ctx != dev->ctx)
      continue;
    ib_event_t *e = event_new(kind);
    if (ev != NULL)
      e->async = *ev;
    queue_event(o, e);
  }
  g_mutex_unlock(&open_lock);
}

/* The RNIC-PI event of a verbs asynchronous event, or FALSE for one that
 * has none. */
static gboolean
async_map(ib_dev_t *dev, const struct ibv_async_event *v, rnicpi_async_event_t *out)
{
  ib_qp_t *qp = NULL;
  switch (v->event_type) {
  case IBV_EVENT_QP_FATAL:
  case IBV_EVENT_QP_REQ_ERR:
  case IBV_EVENT_QP_ACCESS_ERR:
    /* Ours, and its current verbs queue pair (qp_owner()); under
     * dev->lock no queue pair found in the table is freed. */
    rnicpi_spin_lock(&dev->qp_lock);
    qp = g_hash_table_lookup(dev->qps, GUINT_TO_POINTER(v->element.qp->qp_num));
    if (qp != NULL && (qp->qp != v->element.qp || qp->dying))
      qp = NULL;
    rnicpi_spin_unlock(&dev->qp_lock);
    if (qp == NULL)
      return FALSE;
    ib_qp_set_error(qp);
    ib_sweep_add_locked(qp);
    if (v->event_type == IBV_EVENT_QP_FATAL && __atomic_load_n(&qp->torn_down, __ATOMIC_ACQUIRE))
      return FALSE; /* the consumer ended it (ib_qp_torn_down()) */
    if (v->event_type == IBV_EVENT_QP_FATAL) {
      /* Verbs' QP_FATAL says no more than that the queue pair failed;
       * the error completion that comes with it says why (siw raises it
       * for a Send longer than its receive before it completes the
       * receive with LOC_LEN_ERR: siw_proc_send).  ib_qp_complete raises
       * the cause of that completion; the sweep raises this event only
       * if no completion gave one. */
      qp->fatal_due = TRUE;
      return FALSE;
    }
    if (v->event_type == IBV_EVENT_QP_ACCESS_ERR)
      *out = rnicpi_async_event(RNICPI_ASYNC_QP_ACCESS_ERR, qp->base.al_ctx, RNICPI_AE_ACCESS);
    else
      *out = rnicpi_async_event(RNICPI_ASYNC_QP_FATAL, qp->base.al_ctx, RNICPI_AE_PROTOCOL);
    return TRUE;
  case IBV_EVENT_CQ_ERR: {
    ib_cq_t *cq = v->element.cq->cq_context;
    *out = rnicpi_async_event(RNICPI_ASYNC_CQ_OVERFLOW, cq->base.al_ctx, RNICPI_AE_UNSPECIFIED);
    return TRUE;
  }
  case IBV_EVENT_SRQ_LIMIT_REACHED: {
    ib_srq_t *srq = v->element.srq->srq_context;
    *out = rnicpi_async_event(RNICPI_ASYNC_SRQ_LIMIT, srq->base.al_ctx, RNICPI_AE_UNSPECIFIED);
    return TRUE;
  }
  case IBV_EVENT_PORT_ACTIVE:
    *out = rnicpi_async_event(RNICPI_ASYNC_PORT_ACTIVE, 0, RNICPI_AE_UNSPECIFIED);
    return TRUE;
  case IBV_EVENT_PORT_ERR:
    *out = rnicpi_async_event(RNICPI_ASYNC_PORT_DOWN, 0, RNICPI_AE_UNSPECIFIED);
    return TRUE;
  case IBV_EVENT_DEVICE_FATAL:
    return FALSE; /* async_events(): ib_dev_removed raises it */
  default:
    return FALSE; /* COMM_EST, LID or GID changes, SQ drained, last WQE reached */
  }
}

static void
async_events(ib_dev_t *dev)
{
  struct ibv_async_event v;
  while (ibv_get_async_event(dev->ctx, &v) == 0) {
    rnicpi_async_event_t ev;
    gboolean owned;
    ib_dev_t *owner = async_owner(dev, &v, &owned);
    if (!owned)
      owner = dev;
    /* Mapped under the owner's lock: a queue pair being destroyed waits
     * in ibv_destroy_qp for this acknowledgement, so the context is
     * alive; and handed to another owner before it, for the same reason. */
    gboolean have = FALSE;
    if (owner != NULL) {
      g_mutex_lock(&owner->lock);
      have = async_map(owner, &v, &ev);
      g_mutex_unlock(&owner->lock);
    }
    enum ibv_event_type type = v.event_type;
    if (have && owner != dev)
      ib_dev_queue_async(owner, &ev);
    if (!owned)
      queue_to_others(dev, type == IBV_EVENT_DEVICE_FATAL ? IB_EV_REMOVED : IB_EV_ASYNC,
                      have ? &ev : NULL);
    ibv_ack_async_event(&v);
    if (have && owner == dev)
      dev->up.async_event(dev->base.al_ctx, &ev);
    if (type == IBV_EVENT_DEVICE_FATAL)
      ib_dev_removed(dev);
  }
}

static void
cm_events(ib_dev_t *dev)
{
  struct rdma_cm_event *e;
  while (rdma_get_cm_event(dev->cm, &e) == 0)
    ib_cm_handle(dev, e); /* acknowledges it */
}

/* ---- sweeping: complete what a device never completes -------------------- */

void
ib_sweep_add_locked(ib_qp_t *qp)
{
  ib_dev_t *dev = qp->dev;
  __atomic_store_n(&qp->sweep_at, g_get_monotonic_time() + (gint64) ib_config.sweep_ms * 1000,
                   __ATOMIC_RELAXED);
  qp->flush_due = TRUE;
  if (!qp->sweeping && !qp->dying) {
    qp->sweeping = TRUE;
    dev->sweep = g_list_prepend(dev->sweep, qp);
  }
  ib_dev_wake(dev);
}

void
ib_sweep_add(ib_qp_t *qp)
{
  g_mutex_lock(&qp->dev->lock);
  ib_sweep_add_locked(qp);
  g_mutex_unlock(&qp->dev->lock);
}

void
ib_dev_sweep_soon(ib_dev_t *dev)
{
  g_atomic_int_set(&dev->sweep_check, 1);
  ib_dev_wake(dev);
}

/* Queue pairs a completion in error flagged (the drain cannot take
 * dev->lock): put them on the sweep list. */
static void
sweep_collect(ib_dev_t *dev)
{
  if (!g_atomic_int_compare_and_exchange(&dev->sweep_check, 1, 0))
    return;
  g_mutex_lock(&dev->lock);
  GPtrArray *broken = g_ptr_array_new();
  rnicpi_spin_lock(&dev->qp_lock);
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, dev->qps);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    ib_qp_t *qp = v;
    if (qp->flush_due && !qp->sweeping && !qp->dying) {
      qp->sweeping = TRUE;
      dev->sweep = g_list_prepend(dev->sweep, qp);
    }
    if (qp->break_due && !qp->dying) {
      /* A fault of its own ends the connection: the peer is told (it sees
       * its queue pair's error or a disconnect), this side sees BROKEN and
       * the fault's affiliated event. */
      qp->break_due = FALSE;
      g_ptr_array_add(broken, qp);
      rnicpi_cm_event_t cm;
      if (ib_cm_break_locked(qp, &cm))
        ib_dev_queue_cm(dev, &cm);
      if (qp->err_cause != RNICPI_AE_UNSPECIFIED) {
        rnicpi_async_event_t ae = rnicpi_async_event(rnicpi_async_type_of(qp->err_cause),
                                                     qp->base.al_ctx, qp->err_cause);
        ib_dev_queue_async(dev, &ae);
      }
    }
  }
  rnicpi_spin_unlock(&dev->qp_lock);
  /* A fault found at post leaves the device's queue pair running: stop it
   * (its receives flush).  A destroy waits for dev->lock before it lets
   * the queue pair go. */
  for (guint i = 0; i < broken->len; i++)
    ib_qp_modify_verbs(g_ptr_array_index(broken, i), IBV_QPS_ERR);
  g_ptr_array_free(broken, TRUE);
  g_mutex_unlock(&dev->lock);
}

/* Queue pairs in ERROR: once the device has had its time to flush them,
 * complete what is left as flushed ourselves. */
static void
sweep(ib_dev_t *dev)
{
  gint64 now = g_get_monotonic_time();
  rnicpi_notify_batch_t b;
  rnicpi_notify_batch_init(&b);
  g_mutex_lock(&dev->lock);
  for (GList *l = dev->sweep; l != NULL;) {
    GList *next = l->next;
    ib_qp_t *qp = l->data;
    if (now >= __atomic_load_n(&qp->sweep_at, __ATOMIC_RELAXED)) {
      ib_qp_flush_rest(qp, &b);
      ib_qp_fatal_settle(qp);
      qp->sweeping = FALSE;
      dev->sweep = g_list_delete_link(dev->sweep, l);
    }
    l = next;
  }
  g_mutex_unlock(&dev->lock);
  rnicpi_notify_batch_deliver(&b);
}

gpointer
progress_thread(gpointer data)
{
  ib_dev_t *dev = data;
  struct epoll_event evs[8];
  while (!g_atomic_int_get(&dev->stop)) {
    int timeout = -1;
    g_mutex_lock(&dev->lock);
    if (dev->sweep != NULL)
      timeout = MAX(1, ib_config.sweep_ms / 4);
    if (!ib_comp_watch_locked(dev))
      timeout = timeout < 0 ? IB_COMP_RETRY_MS : MIN(timeout, IB_COMP_RETRY_MS);
    /* A deadline armed after this wakes the thread (conn_time_locked). */
    gint64 due = dev->timed_next;
    /* Set under the lock by ib_comp_events, which wakes this thread when
     * another one set it. */
    gint64 rearm_at = dev->rearm_at;
    g_mutex_unlock(&dev->lock);
    if (rearm_at != G_MAXINT64) {
      gint64 left = rearm_at - g_get_monotonic_time();
      int ms = left <= 0 ? 0 : (int) MIN((left + 999) / 1000, (gint64) G_MAXINT);
      timeout = timeout < 0 ? ms : MIN(timeout, ms);
    }
    if (due != G_MAXINT64) {
      /* Rounded up: a wake-up before the deadline would only wait again. */
      gint64 left = due - g_get_monotonic_time();
      int ms = left <= 0 ? 0 : (int) MIN((left + 999) / 1000, (gint64) G_MAXINT);
      timeout = timeout < 0 ? ms : MIN(timeout, ms);
    }
    int n = epoll_wait(dev->epfd, evs, G_N_ELEMENTS(evs), timeout);
    for (int i = 0; i < n; i++) {
      switch (evs[i].data.u32) {
      case POLL_WAKE: {
        uint64_t v;
        ssize_t r = read(dev->wakefd, &v, sizeof(v));
        (void) r;
        break;
      }
      case POLL_CM:
        cm_events(dev);
        break;
      case POLL_COMP:
        ib_comp_events(dev);
        break;
      case POLL_ASYNC:
        async_events(dev);
        break;
      }
    }
    /* After this round's CM events: a reply read already wins over the deadline. */
    if (due != G_MAXINT64 && g_get_monotonic_time() >= due)
      ib_cm_expire(dev);
    if (rearm_at != G_MAXINT64)
      rearm_idle(dev);
    deliver_events(dev);
    sweep_collect(dev);
    sweep(dev);
  }
  return NULL;
}
