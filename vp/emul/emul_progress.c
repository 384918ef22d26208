/*
 * vp/emul progress across processes: the progress thread that serves every
 * socket and ring of this process, and the other consumers that may drain
 * a ring instead of it: an application thread that polls an empty CQ
 * (busy-poll mode), and one asleep on its bell eventfd until its CQ has a
 * completion (RNIC-PI 1.11).  Design: emul_ring.h, "Who drains a ring,
 * and doorbells".
 *
 * Run-time knobs: ITAPI_EMUL_SPIN_US and ITAPI_EMUL_APP_PROGRESS
 * (emul_ring.h, "Who drains a ring") are read once, at the first
 * cross-process use (emul_ring_init).
 *
 * Rules:
 * - whoever drains a ring holds the QP's link; the common case (Sends,
 *   and bounce-mode RDMA Writes, Reads and Read Responses, whole in one
 *   frame; the ACK word) is drained under the link alone
 *   (emul_ring_drain_link), the rest under the fabric lock too, which the
 *   progress thread takes with emul_ring_progress_lock, which an
 *   application thread polling yields to (emul.h);
 * - the progress thread's callbacks take the lock, then check that their
 *   source was not destroyed meanwhile (emul_ring_enter,
 *   g_source_is_destroyed): a socket's watches are destroyed before it
 *   closes, with no lock held (emul_ring_sock_done), and each watch holds
 *   a reference to its connection, so a callback never sees a freed
 *   xconn;
 * - the consumer's ring word `armed` belongs to whoever sleeps on the
 *   ring: the progress thread leaves a connection with a sleeper
 *   (x->waiters) alone, and takes a ring a sleeper left armed back only
 *   after X_POLL_GRACE_MS;
 * - a ring the application polls (within X_POLL_GRACE_MS) is its polls'
 *   to drain: the progress thread neither drains nor pumps it;
 * - a long copy a drain finds is made by its drainer after the drain,
 *   with the locks let go (emul_ring_issue_owed), whoever drains.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <glib-unix.h>

#include "emul_ring.h"

static GMainContext *x_ctx;  /* the progress thread's: every socket of this process */

/* Progress thread state, for emul_ring_cq_armed (see x_poll_func). */
enum { XP_RUNNING, XP_SLEEP_ARMED, XP_SLEEP_UNARMED };
static _Alignas(64) gint x_pstate;
static _Alignas(64) gint x_arm_seq; /* CQ arms so far (emul_ring_cq_armed) */
/* Sleepers that left a ring armed for them, so far (emul_ring_cq_wait_end):
 * the progress thread must look within the grace (Dekker with x_pstate). */
static _Alignas(64) gint x_grace_seq;
/* This thread's last poll found nothing (initial-exec: no __tls_get_addr
 * call on the polling path of a shared library). */
static __thread gboolean x_polled_empty __attribute__((tls_model("initial-exec")));
static guint x_spin_us;             /* ITAPI_EMUL_SPIN_US */
uint64_t emul_ring_xin_max = (uint64_t) 256 << 20;
guint emul_ring_pending_max = 1024;  /* a listener's connection requests held (emul_ring_init) */
/* The progress thread waits for the fabric lock (emul.h). */
_Alignas(64) gint emul_ring_pwant;
static gboolean x_app_progress = TRUE; /* ITAPI_EMUL_APP_PROGRESS */

/* The connections this thread sleeps on, between emul_ring_cq_wait_begin and
 * emul_ring_cq_wait_end (each with a reference), and whether they are every
 * connection that feeds that CQ. */
typedef struct x_wait {
  emul_cq_t *cq;
  emul_xconn_t *x[X_WAIT_MAX];
  uint32_t n;
  gboolean all;
  gboolean traffic;  /* the begin found frames to drain */
} x_wait_t;
static __thread x_wait_t x_wait __attribute__((tls_model("initial-exec")));

void
emul_ring_progress_lock(void)
{
  g_atomic_int_inc(&emul_ring_pwant);
  emul_fabric_lock();
  g_atomic_int_add(&emul_ring_pwant, -1);
}

static gpointer
x_thread(gpointer unused)
{
  (void) unused;
  for (;;)
    g_main_context_iteration(x_ctx, TRUE);
  return NULL;
}

static gboolean
x_cq_is_armed(emul_cq_t *cq)
{
  return cq != NULL && __atomic_load_n(&cq->ring.armed, __ATOMIC_SEQ_CST);
}

/* The connections with a QP and a ring, each with a reference (fabric
 * lock held); x_snapshot_free drops them (lock held). */
static GPtrArray *
x_snapshot(void)
{
  GPtrArray *a = g_ptr_array_sized_new(8);
  for (GList *i = emul_ring_conns; i != NULL; i = i->next) {
    emul_xconn_t *x = i->data;
    if (!x->dead && x->qp != NULL && x->seg != NULL) {
      g_atomic_int_inc(&x->ref);
      g_ptr_array_add(a, x);
    }
  }
  return a;
}

static void
x_snapshot_free(GPtrArray *a)
{
  for (guint i = 0; i < a->len; i++)
    emul_ring_conn_unref(g_ptr_array_index(a, i));
  g_ptr_array_free(a, TRUE);
}

/* Drain and pump @x if it has work (fabric lock held, which a long copy
 * the drain found lets go: emul_ring_issue_owed; the caller holds a
 * reference to @x); TRUE if it had.  @pending: what emul_ring_pending(x)
 * said, just before.  The QP's link is taken too: its latency posts hold
 * that lock alone (emul_qp.c, "The fast path"). */
static gboolean
x_serve(emul_xconn_t *x, gboolean pending, emul_work_t *w)
{
  emul_link_t *l = emul_link_take(x->qp);
  /* Frames only move in RTS (emul_ring_drain): none is work elsewhere. */
  gboolean in = pending && x->qp->state == RNICPI_QPS_RTS;
  if (in) {
    emul_ring_serve(x, w);  /* may let the locks go for a long copy */
  }
  if (!x->dead && (in || !emul_queue_empty(&x->out)))
    emul_ring_pump(x);
  emul_link_drop(l);
  return in;
}

unsigned
emul_ring_drain_alone(emul_link_t *l, emul_xconn_t *x, emul_work_t *w)
{
  /* Waited for: whoever holds it (a post, a poll's drain) holds it
   * briefly, and waits for nothing of this thread's meanwhile. */
  emul_link_lock(l);
  emul_qp_t *qp = l->qp[0];
  unsigned found = qp != NULL && qp->x == x ? emul_ring_drain_link(qp, x, w) : 0;
  rnicpi_spin_unlock(&l->lock);
  emul_ring_bells_flush();
  return found;
}

/* The stall check of the connections in @a (fabric lock held;
 * emul_ring.h, "Timeout"): a ring whose peer took nothing from it for the
 * connection's timeout, with frames waiting, breaks its connection.  Every
 * connection (one whose QP is not yet there too: an accept does not wake
 * this thread) is looked at again within half its timeout, so a stall is
 * seen between one and one and a half timeouts after it began.  How long
 * this thread may sleep before it looks again (ms; -1: no limit). */
static gint
x_stalls(GPtrArray *a, emul_work_t *w)
{
  gint64 now = g_get_monotonic_time(), next = G_MAXINT64;
  for (guint i = 0; i < a->len; i++) {
    emul_xconn_t *x = g_ptr_array_index(a, i);
    uint64_t taken = 0;
    if (x->dead || x->qp == NULL || x->qp->x != x || x->conn != NULL || x->timeout_us == 0)
      continue;
    if (!emul_ring_waiting(x, &taken)) {
      x->stall_at = 0;
    } else if (x->stall_at == 0 || taken != x->stall_taken) {
      x->stall_taken = taken;
      x->stall_at = now;
    } else if (now - x->stall_at >= x->timeout_us) {
      emul_link_t *l = emul_link_take(x->qp);  /* may let the lock go: looked at again */
      if (!x->dead && x->qp != NULL && x->qp->x == x)
        emul_ring_timed_out(x, now - x->stall_at, w);
      emul_link_drop(l);
    } else {
      next = MIN(next, x->stall_at + x->timeout_us - now);
    }
  }
  for (GList *i = emul_ring_conns; i != NULL; i = i->next) {
    emul_xconn_t *x = i->data;
    if (!x->dead && x->timeout_us > 0)
      next = MIN(next, x->timeout_us / 2);
  }
  return next == G_MAXINT64 ? -1 : (gint) MIN((next + 999) / 1000, G_MAXINT);
}

/* The progress thread's poll (GMainContext poll function, called without
 * the context's lock): before it sleeps, decide for each ring whether the
 * peer must ring the bell (emul_ring.h, "Who drains a ring").  Work found on
 * the way is done here and the poll returns at once. */
static gint
x_poll_func(GPollFD *fds, guint nfds, gint timeout)
{
  if (timeout == 0 || g_atomic_int_get(&emul_ring_nconn) == 0)
    return g_poll(fds, nfds, timeout);  /* no ring to decide about */
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  gboolean did = FALSE, unarmed = FALSE;
  /* Dekker with emul_ring_cq_armed: state first, then the CQs' arm bits. */
  g_atomic_int_set(&x_pstate, XP_SLEEP_UNARMED);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  gint gs = g_atomic_int_get(&x_grace_seq);
  emul_ring_progress_lock();
  GPtrArray *a = x_snapshot();
  if (x_spin_us > 0 && a->len > 0) {
    /* Optional: look at the rings for a while before sleeping (not those
     * a sleeper holds, below). */
    for (guint i = 0; i < a->len; i++) {
      emul_xconn_t *x = g_ptr_array_index(a, i);
      if (x->waiters == 0 && x->left_at == 0) {
        __atomic_store_n(&x->seg->ring[1 - x->side].armed, X_ARM_NONE, __ATOMIC_SEQ_CST);
        x->armed_by = X_ARM_NONE;
      }
    }
    emul_fabric_unlock();
    gint64 end = g_get_monotonic_time() + x_spin_us;
    for (gboolean seen = FALSE; !seen && g_get_monotonic_time() < end;) {
      for (guint k = 0; k < 256 && !seen; k++) {
        for (guint i = 0; i < a->len && !seen; i++) {
          emul_xconn_t *x = g_ptr_array_index(a, i);
          seen = emul_ring_pending(x);  /* mapped while referenced */
        }
        rnicpi_cpu_relax();
      }
    }
    emul_ring_progress_lock();
  }
  gint64 now = g_get_monotonic_time();
  /* The connections to drain, and their QPs' links (a reference each):
   * the progress thread's own arrays, kept from poll to poll. */
  static GPtrArray *todo, *links;
  if (todo == NULL) {
    todo = g_ptr_array_new();
    links = g_ptr_array_new();
  }
  for (guint i = 0; i < a->len; i++) {
    emul_xconn_t *x = g_ptr_array_index(a, i);
    if (x->dead || x->qp == NULL)
      continue;
    /* An application thread sleeps on its bell (emul_ring_cq_wait_begin):
     * the ring's armed word is that thread's, and it drains the ring.
     * While its sleepers come and go often, look again after the grace
     * (below); else sleep until one leaves, which wakes this thread. */
    if (x->waiters > 0) {
      unarmed |= x->last_left != 0 && now - x->last_left < X_SLEEPER_RECENT_MS * 1000;
      continue;
    }
    /* The last sleeper left the ring armed for its return (the next
     * sleep or poll of the application, as a busy poller's grace): taken
     * back only once the grace is over. */
    if (x->left_at != 0 && now - x->left_at < X_POLL_GRACE_MS * 1000) {
      unarmed = TRUE;
      continue;
    }
    x->left_at = 0;
    gint p = __atomic_load_n(&x->app_polls, __ATOMIC_RELAXED);
    if (p != x->seen_polls) {
      x->seen_polls = p;
      x->polled_at = now;
    }
    /* Polled within the grace period (this thread may itself have kept
     * the application off the CPU since), and not armed for a
     * notification since: no doorbell.  (An access layer may re-arm a CQ
     * after each completion it takes while busy polling; the next empty
     * poll shows that nobody went to sleep.) */
    gboolean polled = x->polled_at != 0 && now - x->polled_at < X_POLL_GRACE_MS * 1000;
    gboolean waits = (x_cq_is_armed(x->qp->scq) || x_cq_is_armed(x->qp->rcq)) &&
                     __atomic_load_n(&x->poll_arm_seq, __ATOMIC_RELAXED) != g_atomic_int_get(&x_arm_seq);
    gboolean bell = !x_app_progress || !polled || waits;
    __atomic_store_n(&x->seg->ring[1 - x->side].armed, bell ? X_ARM_THREAD : X_ARM_NONE, __ATOMIC_SEQ_CST);
    x->armed_by = X_ARM_THREAD;
    if (!bell) {
      /* The application polls that ring: its poll drains it, and this
       * thread keeps away (it would take the link and the lock from it,
       * and the CPU from a pull it makes with them let go); it looks
       * again after the grace. */
      unarmed = TRUE;
      continue;
    }
    /* What came before the flag was set: drained below, under the QP's
     * link alone where it can be. */
    emul_link_t *l = x->qp->link;
    if (l != NULL && l->ring) {
      l->ref++;  /* the link outlives its QP meanwhile */
      g_ptr_array_add(links, l);
      g_ptr_array_add(todo, x);
    } else {
      did |= x_serve(x, emul_ring_pending(x), &w);
    }
  }
  if (todo->len > 0) {
    emul_fabric_unlock();
    guint full = 0;  /* todo[0, full): what the drain under the link left */
    for (guint i = 0; i < todo->len; i++) {
      emul_xconn_t *x = g_ptr_array_index(todo, i);
      unsigned found = emul_ring_drain_alone(g_ptr_array_index(links, i), x, &w);
      did |= (found & X_DRAIN_DID) != 0;
      if (found & X_DRAIN_FABRIC)
        todo->pdata[full++] = x;
    }
    emul_ring_progress_lock();
    for (guint i = 0; i < full; i++) {
      emul_xconn_t *x = g_ptr_array_index(todo, i);
      if (!x->dead && x->qp != NULL)
        did |= x_serve(x, emul_ring_pending(x), &w);
    }
    for (guint i = 0; i < links->len; i++)
      emul_link_unref(g_ptr_array_index(links, i));
  }
  g_ptr_array_set_size(todo, 0);
  g_ptr_array_set_size(links, 0);
  gint look = x_stalls(a, &w);
  x_snapshot_free(a);
  emul_fabric_unlock();
  emul_work_deliver(&w);
  gint r = 0;
  if (!did) {
    if (!unarmed) {
      g_atomic_int_set(&x_pstate, XP_SLEEP_ARMED);
      /* Dekker with emul_ring_cq_wait_end: a sleeper that left a ring armed
       * for it since the look above must be looked at within the grace. */
      if (g_atomic_int_get(&x_grace_seq) != gs) {
        g_atomic_int_set(&x_pstate, XP_SLEEP_UNARMED);
        unarmed = TRUE;
      }
    }
    if (unarmed && (timeout < 0 || timeout > X_POLL_GRACE_MS))
      timeout = X_POLL_GRACE_MS;
    if (look >= 0 && (timeout < 0 || timeout > look))
      timeout = look;
    r = g_poll(fds, nfds, timeout);
  }
  g_atomic_int_set(&x_pstate, XP_RUNNING);
  return r;
}

/* Drain and pump, under the fabric lock (held), the rings of @cq's QPs
 * that have work; TRUE if one had. */
static gboolean
x_serve_cq(emul_cq_t *cq, emul_work_t *w)
{
  gboolean did = FALSE;
  GList *next;
  for (GList *i = emul_ring_conns; i != NULL; i = next) {
    emul_xconn_t *x = i->data;
    next = i->next;
    if (x->qp == NULL || (x->qp->scq != cq && x->qp->rcq != cq))
      continue;
    gboolean pending = emul_ring_pending(x);
    if (pending || !emul_queue_empty(&x->out)) {
      g_atomic_int_inc(&x->ref);  /* emul_ring_conns may change under x_serve; x stays valid */
      did |= x_serve(x, pending, w);
      next = x->dead ? emul_ring_conns : i->next;  /* closed: start over (cheap, rare) */
      emul_ring_conn_unref(x);
    }
  }
  return did;
}

/* The first pass of a poll (@poll: counted as the application's busy
 * poll) or of a sleeper's wake-up (no lock held): the ring of each QP of
 * @cq whose link is free is drained under that link alone
 * (emul_ring_drain_link); a link another thread holds (a post, a drain,
 * the progress thread) is passed over, as is the whole list while another
 * poll of @cq walks it: whoever holds them is making progress.  What it
 * found (X_DRAIN_*). */
static unsigned
x_poll_links(emul_cq_t *cq, gboolean poll, emul_work_t *w)
{
  gint seq = g_atomic_int_get(&x_arm_seq);
  if (!rnicpi_spin_trylock(&cq->xlock))
    return 0;
  unsigned found = 0;
  for (guint i = 0; i < cq->xlinks->len; i++) {
    emul_link_t *l = g_ptr_array_index(cq->xlinks, i);
    /* Only tried (the order is fabric, link, xlock), and left to a thread
     * that waits for it (emul_link_lock_idle): it holds the fabric lock. */
    if (g_atomic_int_get(&l->wanted) > 0 || !rnicpi_spin_trylock(&l->lock))
      continue;
    emul_qp_t *qp = l->qp[0];
    emul_xconn_t *x = qp != NULL ? qp->x : NULL;
    if (x != NULL && poll) {
      /* Written under the link alone, read by x_poll_func under the
       * fabric lock: stores, not read-modify-writes (no bus lock per poll). */
      __atomic_store_n(&x->app_polls, x->app_polls + 1, __ATOMIC_RELAXED);
      if (x->poll_arm_seq != seq)
        __atomic_store_n(&x->poll_arm_seq, seq, __ATOMIC_RELAXED);
    }
    if (x != NULL)
      found |= emul_ring_drain_link(qp, x, w);
    rnicpi_spin_unlock(&l->lock);
  }
  rnicpi_spin_unlock(&cq->xlock);
  return found;
}

/* Application thread (no lock held): a poll of @cq took @got entries;
 * when it found none, advance the rings that feed it and poll again.
 * Busy-poll mode's whole receive path for a small message: under each
 * QP's link alone (x_poll_links), and under the fabric lock only for
 * work that drain leaves (anything but a Send of the latency case and
 * the ACK word's completions). */
int
emul_ring_poll_cq(emul_cq_t *cq, rnicpi_wc_t *wc, int n, int got)
{
  x_polled_empty = got == 0;
  if (got > 0 || !x_app_progress || g_atomic_int_get(&emul_ring_pwant) > 0)
    return got;  /* the progress thread waits for the lock: it goes first */
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  unsigned found = x_poll_links(cq, TRUE, &w);
  gboolean did = (found & X_DRAIN_DID) != 0;
  emul_ring_bells_flush();
  if ((found & X_DRAIN_FABRIC) && emul_fabric_trylock()) {
    did |= x_serve_cq(cq, &w);
    emul_fabric_unlock();
  }
  emul_work_deliver(&w);
  return did ? rnicpi_cq_ring_poll(&cq->ring, wc, n) : 0;
}

/* Application thread (no lock held): @cq was armed.  After an empty poll
 * that is a thread about to sleep: if the progress thread sleeps without
 * the rings armed, wake it to arm them.  (After a poll that took
 * something it is an access layer re-arming as it goes: a thread that
 * then sleeps polls once more first, and arms again.) */
void
emul_ring_cq_armed(emul_cq_t *cq)
{
  g_atomic_int_inc(&x_arm_seq);  /* a full barrier: Dekker with x_poll_func */
  /* This thread sleeps on the bells of every connection of @cq itself
   * (emul_ring_cq_wait_begin came first): no ring is the thread's to arm. */
  if (x_wait.cq == cq && x_wait.all)
    return;
  if (x_polled_empty && g_atomic_int_get(&x_pstate) == XP_SLEEP_UNARMED)
    g_main_context_wakeup(x_ctx);
}

/* RNIC-PI 1.11 (emul_cq.c's cq_wait_begin, no lock held): the calling
 * thread is about to sleep until @cq has a completion.  For each
 * connection whose QP completes into @cq it arms the peer's ring with
 * X_ARM_WAITER, so that the peer's next frame or ACK word writes this
 * process's bell eventfd for that connection, which the thread sleeps on:
 * one wake-up per message, of the thread that takes it (emul_ring.h, "Who
 * drains a ring").  As the progress thread does before it sleeps, it
 * looks at the ring once more after arming (the Dekker pair with the
 * producer's mark) and drains what came.  Connections past @room stay
 * the progress thread's, whose cq_notify reaches the sleeper anyway. */
uint32_t
emul_ring_cq_wait_begin(emul_cq_t *cq, struct pollfd *fds, uint32_t room)
{
  x_wait.cq = NULL;
  x_wait.n = 0;
  if (g_atomic_int_get(&emul_ring_nconn) == 0 || !x_app_progress)
    return 0;
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  gboolean quiet[X_WAIT_MAX];  /* whose bell to quiet before the arm */
  uint32_t nquiet = 0;
  int closed[X_WAIT_MAX];      /* bells to ring again, with the lock let go */
  uint32_t nclosed = 0;
  emul_fabric_lock();
  x_wait.cq = cq;
  x_wait.all = TRUE;
  x_wait.traffic = FALSE;
  room = MIN(room, (uint32_t) X_WAIT_MAX);
  for (GList *i = emul_ring_conns; i != NULL; i = i->next) {
    emul_xconn_t *x = i->data;
    if (x->dead || x->qp == NULL || x->seg == NULL || (x->qp->scq != cq && x->qp->rcq != cq))
      continue;
    if (x_wait.n == room || x->bell_fd < 0 || x->peer_bell_fd < 0) {
      x_wait.all = FALSE;
      continue;
    }
    g_atomic_int_inc(&x->ref);  /* keeps bell_fd open (closed with the last reference) */
    x->waiters++;
    x_wait.x[x_wait.n] = x;
    fds[x_wait.n] = (struct pollfd) { .fd = x->bell_fd, .events = POLLIN };
    x_ring_ctl_t *in = &x->seg->ring[1 - x->side];
    /* Taken (X_ARM_NONE) since a sleeper armed it: a producer rang the
     * bell while nobody slept on it (the grace after a sleep). */
    if (__atomic_load_n(&in->armed, __ATOMIC_SEQ_CST) == X_ARM_NONE && x->armed_by == X_ARM_WAITER)
      x->bell_rung = TRUE;
    quiet[x_wait.n] = x->bell_rung;
    nquiet += x->bell_rung;
    x->bell_rung = FALSE;
    x_wait.n++;
  }
  /* The bell that ended the last sleep is quieted here, not when it woke
   * us (there it would delay the answer the peer waits for), and before
   * the arm: a producer that takes the arm rings for this sleep, and its
   * ring must stay.  Read after the arm, it would swallow that ring with
   * the arm gone, and the look below finding the producer's frame would
   * not bring the arm back: the sleep would miss every frame after it.
   * The read is a system call: made with the fabric lock let go (each
   * connection's reference keeps its bell_fd open). */
  if (nquiet > 0) {
    emul_fabric_unlock();
    for (uint32_t k = 0; k < x_wait.n; k++) {
      uint64_t v;
      ssize_t r = quiet[k] ? read(x_wait.x[k]->bell_fd, &v, sizeof(v)) : 0;
      (void) r;  /* EAGAIN: nothing to quiet */
    }
    emul_fabric_lock();
  }
  for (uint32_t k = 0; k < x_wait.n; k++) {
    emul_xconn_t *x = x_wait.x[k];
    if (x->dead || x->seg == NULL) {
      /* Closed while the lock was let go: the teardown's ring on the bell,
       * for the sleepers, may be the one just read; it is rung again below,
       * so that this sleep ends at once (emul_ring_cq_wait_end lets the
       * reference go). */
      closed[nclosed++] = x->bell_fd;
      continue;
    }
    /* A producer that took the arm between the look above and this one
     * rang a bell nobody read: the sleep ends at once, and the wake-up
     * quiets it (emul_ring_cq_wait_end). */
    __atomic_exchange_n(&x->seg->ring[1 - x->side].armed, X_ARM_WAITER, __ATOMIC_SEQ_CST);
    x->armed_by = X_ARM_WAITER;
    x->left_at = 0;
  }
  /* After every arm, the last look: under each QP's link alone, waited
   * for (a frame published before the arm rang no bell, and a post that
   * holds the link does not drain it), the fabric lock let go; what that
   * leaves under the fabric lock (x_serve may change emul_ring_conns: the
   * references keep each connection valid). */
  emul_link_t *links[X_WAIT_MAX];
  for (uint32_t k = 0; k < x_wait.n; k++) {
    emul_xconn_t *x = x_wait.x[k];
    emul_link_t *l = !x->dead && x->qp != NULL && x->qp->x == x ? x->qp->link : NULL;
    links[k] = l != NULL && l->ring ? l : NULL;
    if (links[k] != NULL)
      links[k]->ref++;  /* the link outlives its QP meanwhile */
  }
  emul_fabric_unlock();
  unsigned found[X_WAIT_MAX];
  for (uint32_t k = 0; k < x_wait.n; k++) {
    found[k] = links[k] != NULL ? emul_ring_drain_alone(links[k], x_wait.x[k], &w) : X_DRAIN_FABRIC;
    x_wait.traffic |= (found[k] & X_DRAIN_DID) != 0;
  }
  emul_fabric_lock();
  for (uint32_t k = 0; k < x_wait.n; k++) {
    emul_xconn_t *x = x_wait.x[k];
    gboolean pending = emul_ring_pending(x);
    if ((found[k] & X_DRAIN_FABRIC) && !x->dead && (pending || !emul_queue_empty(&x->out))) {
      x_serve(x, pending, &w);
      x_wait.traffic = TRUE;
    }
    if (links[k] != NULL)
      emul_link_unref(links[k]);
  }
  emul_fabric_unlock();
  for (uint32_t k = 0; k < nclosed; k++) {
    uint64_t one = 1;  /* each connection's reference keeps its bell open */
    ssize_t r = write(closed[k], &one, sizeof(one));
    (void) r;
  }
  emul_work_deliver(&w);
  return x_wait.n;
}

/* RNIC-PI 1.11: the sleep of emul_ring_cq_wait_begin is over, and what
 * arrived is drained here, in this thread.  The rings stay armed for a
 * sleeper: the application usually sleeps again (or polls) within
 * microseconds, and a frame meanwhile then rings the bell nobody watches,
 * where a doorbell to the progress thread would wake it for nothing and
 * have it take the fabric lock from the application.  For the case where
 * it does not come back, the progress thread takes a ring back once
 * X_POLL_GRACE_MS has passed (x_poll_func, left_at), and is woken for it
 * if it sleeps without a timer. */
void
emul_ring_cq_wait_end(emul_cq_t *cq, const struct pollfd *fds, uint32_t nfds)
{
  if (x_wait.cq != cq || nfds != x_wait.n) {
    x_wait.cq = NULL;   /* not the begin it answers: nothing to undo */
    return;
  }
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  gboolean graced = FALSE;
  gint64 now = g_get_monotonic_time();
  emul_fabric_lock();
  for (uint32_t k = 0; k < x_wait.n; k++) {
    emul_xconn_t *x = x_wait.x[k];
    if (fds[k].revents & POLLIN)
      x->bell_rung = TRUE;  /* quieted at the next sleep (emul_ring_cq_wait_begin) */
    /* Another thread may still sleep on the same bell (a QP whose two
     * CQs both have a sleeper): the producer took the word when it rang,
     * and that sleeper, woken with us, may have found the bell already
     * quiet and slept again; so the word is set again for it. */
    gboolean traffic = x_wait.traffic || (fds[k].revents & POLLIN) ||
                       (!x->dead && (emul_ring_pending(x) || !emul_queue_empty(&x->out)));
    if (--x->waiters > 0 && !x->dead) {
      __atomic_store_n(&x->seg->ring[1 - x->side].armed, X_ARM_WAITER, __ATOMIC_SEQ_CST);
    } else if (!x->dead && traffic) {
      x->left_at = x->last_left = now;
      graced = TRUE;
    } else if (!x->dead) {
      /* A sleep with no traffic (a timeout, a notification from
       * elsewhere): none to expect at once, so the ring goes straight back
       * to the thread, and an idle waiter's timed-out sleeps cost it
       * nothing. */
      __atomic_store_n(&x->seg->ring[1 - x->side].armed, X_ARM_THREAD, __ATOMIC_SEQ_CST);
      x->armed_by = X_ARM_THREAD;
    }
  }
  for (uint32_t k = 0; k < x_wait.n; k++)
    emul_ring_conn_unref(x_wait.x[k]);
  x_wait.cq = NULL;
  x_wait.n = 0;
  emul_fabric_unlock();
  /* What woke us is drained here: under each QP's link alone where it can
   * be (x_poll_links), the rest under the fabric lock. */
  if (x_poll_links(cq, FALSE, &w) & X_DRAIN_FABRIC) {
    emul_fabric_lock();
    x_serve_cq(cq, &w);
    emul_fabric_unlock();
  } else {
    emul_ring_bells_flush();
  }
  /* Dekker with x_poll_func: counted, then the thread's state read. */
  if (graced) {
    g_atomic_int_inc(&x_grace_seq);
    if (g_atomic_int_get(&x_pstate) == XP_SLEEP_ARMED)
      g_main_context_wakeup(x_ctx);
  }
  emul_work_deliver(&w);
}

/* fork() while the progress thread holds the fabric lock would leave it
 * locked for ever in the child: hold it across the fork. */
static void
x_fork_prepare(void)
{
  emul_fabric_lock();
  emul_wait_all_copies();
  emul_links_lock_all();
  rnicpi_spin_lock(&emul_fabric.ud_lock);  /* after the links: a sender holding its own waits for it */
  emul_cqs_lock_all();  /* a busy poll walks a CQ's list under its xlock */
  /* A thread sending a connection's messages holds its mlock a moment. */
  for (GList *i = emul_ring_conns; i != NULL; i = i->next)
    g_mutex_lock(&((emul_xconn_t *) i->data)->mlock);
}

static void
x_fork_done(void)
{
  for (GList *i = emul_ring_conns; i != NULL; i = i->next)
    g_mutex_unlock(&((emul_xconn_t *) i->data)->mlock);
  emul_cqs_unlock_all();
  rnicpi_spin_unlock(&emul_fabric.ud_lock);
  emul_links_unlock_all();
  emul_fabric_unlock();
}

static void
x_fork_child(void)
{
  x_fork_done();
  /* The parent's senders are not here: what they owed is theirs. */
  g_atomic_int_set(&emul_ring_msgs_owed, 0);
}

/* The process exits: the socket messages other threads still owe leave
 * first, for a second at most.  A teardown's message, queued under the
 * lock and sent by the thread that queued it as it lets the lock go, may
 * be owed by the progress thread when the application, told by an event
 * or a completion, returns from main (a BREAK naming a refused request's
 * status, a DISC with its private data: without them the peer sees the
 * socket's EOF, a broken connection, its request flushed). */
static void
x_exit_drain(void)
{
  /* A section under the lock whose completion the application acted on
   * may not have queued its message yet (a request's failed completion is
   * pushed before its BREAK is queued): it ends before the count is read.
   * Events wait behind the message (emul_ring_teardown); completions do
   * not. */
  if (!emul_fabric_mine) {
    emul_fabric_lock();
    emul_fabric_unlock();
  }
  for (int i = 0; i < 1000 && g_atomic_int_get(&emul_ring_msgs_owed) > 0; i++)
    g_usleep(1000);
}

/* A descriptor kept in reserve, so that a listening socket whose accept
 * fails for want of descriptors can still take the connection waiting on
 * it and close it (emul_ring_accept_refuse): else the socket stays
 * readable and the progress thread, woken by it again and again, spins. */
static int x_spare = -1;
static gint64 x_refused_said;  /* when a refusal was last logged (monotonic us) */
static guint x_refused;        /* refusals since */

gboolean
emul_ring_accept_refuse(int fd, int err, const char *what)
{
  if (err != EMFILE && err != ENFILE)
    return FALSE;
  /* Linux takes the descriptor before it looks at the queue: accept fails
   * so even when nothing waits. */
  struct pollfd p = { .fd = fd, .events = POLLIN };
  if (x_spare < 0 || poll(&p, 1, 0) <= 0)
    return FALSE;
  close(x_spare);
  int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
  if (c >= 0)
    close(c);
  x_spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
  x_refused += c >= 0;
  gint64 now = g_get_monotonic_time();
  if (c >= 0 && now - x_refused_said >= 60 * G_USEC_PER_SEC) {
    g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: process %d is out of file descriptors (%s): %u %s "
          "refused since the last line; raise `ulimit -n`", (int) getpid(), g_strerror(err),
          x_refused, what);
    x_refused_said = now;
    x_refused = 0;
  }
  return c >= 0;
}

static gpointer
x_init_once(gpointer unused)
{
  (void) unused;
  if (!emul_ring_export_init())
    return GINT_TO_POINTER(FALSE);
  x_ctx = g_main_context_new();
  g_main_context_set_poll_func(x_ctx, x_poll_func);
  const char *spin = g_getenv("ITAPI_EMUL_SPIN_US");
  x_spin_us = spin != NULL ? (guint) MIN(g_ascii_strtoull(spin, NULL, 10), 1000000) : 0;
  x_app_progress = g_strcmp0(g_getenv("ITAPI_EMUL_APP_PROGRESS"), "0") != 0;
  emul_ring_map_on = g_strcmp0(g_getenv("ITAPI_EMUL_MAP"), "0") != 0;
  emul_ring_xin_max = (uint64_t) rnicpi_env_int("ITAPI_EMUL_INBOUND_MB", 256, 1, 1 << 20) << 20;
  x_spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
  /* Each connection request held costs three descriptors (its socket,
   * bell and pidfd): a listener holds no more than an eighth of what the
   * process may open, so that a flood leaves the application its own. */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    emul_ring_pending_max = (guint) CLAMP(nofile.rlim_cur / 8, 16, emul_ring_pending_max);
  pthread_atfork(x_fork_prepare, x_fork_done, x_fork_child);
  atexit(x_exit_drain);
  g_thread_unref(g_thread_new("emul-xproc", x_thread, NULL));
  return GINT_TO_POINTER(TRUE);
}

/* First cross-process use, once per process: the region table, filled
 * with the regions registered so far (emul_ring_export_init), and the
 * progress thread.  Its system calls (the table's memfd and mapping, the
 * thread) are made with no lock held: the caller holds none. */
gboolean
emul_ring_init(void)
{
  static GOnce once = G_ONCE_INIT;
  g_assert(!emul_fabric_mine);
  return GPOINTER_TO_INT(g_once(&once, x_init_once, NULL));
}

gboolean
emul_ring_ready(void)
{
  return x_ctx != NULL;
}

GSource *
emul_ring_watch_new(int fd, GIOCondition cond, GUnixFDSourceFunc fn, gpointer data,
                    GDestroyNotify notify)
{
  GSource *src = g_unix_fd_source_new(fd, cond);
  g_source_set_callback(src, (GSourceFunc) (void (*)(void)) fn, data, notify);
  return src;
}

void
emul_ring_watch_start(GSource *src)
{
  g_source_attach(src, x_ctx);
}

GSource *
emul_ring_watch(int fd, GIOCondition cond, GUnixFDSourceFunc fn, gpointer data,
                GDestroyNotify notify)
{
  GSource *src = emul_ring_watch_new(fd, cond, fn, data, notify);
  emul_ring_watch_start(src);
  return src;
}

static void
lsock_unref(emul_ring_lsock_t *s)
{
  if (g_atomic_int_dec_and_test(&s->ref))
    g_free(s);  /* the owner's record: @s is its first member */
}

static void
lsock_watch_gone(gpointer data)
{
  emul_ring_lsock_t *s = data;
  close(s->fd);
  if (s->closing != NULL)
    s->closing(s);
  g_atomic_int_set(&s->closed, 1);
  lsock_unref(s);
}

void
emul_ring_lsock_init(emul_ring_lsock_t *s, int fd)
{
  s->fd = fd;
  s->ref = 2;
}

void
emul_ring_lsock_watch(emul_ring_lsock_t *s, GUnixFDSourceFunc fn)
{
  s->src = emul_ring_watch(s->fd, G_IO_IN, fn, s, lsock_watch_gone);
}

void
emul_ring_lsock_close(emul_ring_lsock_t *s)
{
  if (s->src == NULL) {
    lsock_watch_gone(s);  /* never watched: the watch's reference is ours too */
  } else {
    g_source_destroy(s->src);
    g_source_unref(s->src);
    /* A callback of the watch runs: it ends without the socket (bounded:
     * in a child forked while one ran, none will). */
    for (int i = 0; i < 20000 && !g_atomic_int_get(&s->closed); i++)
      g_usleep(50);
  }
  lsock_unref(s);
}

gboolean
emul_ring_enter(void)
{
  emul_ring_progress_lock();
  return !g_source_is_destroyed(g_main_current_source());
}
