/*
 * vp/emul cross-process endpoints: the per-listener socket, the CM
 * handshake with another process, the exported region table, and the
 * progress thread that serves every socket (see emul_x.h for the design).
 *
 * Run-time knobs: ITAPI_EMUL_CMA=0 forbids cross-memory attach; payloads of
 * every connection made afterwards go through the shared-memory bounce
 * ring.  Read at each connection, so a process may change it.
 * ITAPI_EMUL_SPIN_US and ITAPI_EMUL_APP_PROGRESS (emul_x.h, "Who drains a
 * ring") are read once, at the first cross-process use.
 *
 * Rules:
 * - everything here runs under the fabric lock; upcalls go through the
 *   event thread (CM, async) or emul_work_deliver after the lock (CQs);
 * - the progress thread's callbacks take the lock, then check that their
 *   source was not destroyed meanwhile (g_source_is_destroyed): a socket is
 *   closed only under the lock, so a callback never sees a freed xconn;
 * - no call here blocks on a peer: sockets are non-blocking and a peer
 *   that stops answering is only waited for by the application's own
 *   (bounded) waits; its death is an EOF.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "emul_x.h"

static GMainContext *x_ctx;
static int x_mr_fd = -1;            /* this process's region table (memfd) */
static x_mr_entry_t *x_mrs;
static gboolean x_said_bounce;
static GList *x_conns;              /* every live emul_xconn_t */
/* g_list_length(x_conns), read without the lock by every poll of a CQ:
 * alone on its line, written only when a connection comes or goes. */
_Alignas(64) gint emul_x_nconn;

/* Progress thread state, for emul_x_cq_armed (see x_poll_func). */
enum { XP_RUNNING, XP_SLEEP_ARMED, XP_SLEEP_UNARMED };
static _Alignas(64) gint x_pstate;
static _Alignas(64) gint x_arm_seq; /* CQ arms so far (emul_x_cq_armed) */
/* Sleepers that left a ring armed for them, so far (emul_x_cq_wait_end):
 * the progress thread must look within the grace (Dekker with x_pstate). */
static _Alignas(64) gint x_grace_seq;
/* This thread's last poll found nothing (initial-exec: no __tls_get_addr
 * call on the polling path of a shared library). */
static __thread gboolean x_polled_empty __attribute__((tls_model("initial-exec")));
static guint x_spin_us;             /* ITAPI_EMUL_SPIN_US */
/* The progress thread waits for the fabric lock (emul.h). */
_Alignas(64) gint emul_x_pwant;
static gboolean x_app_progress = TRUE; /* ITAPI_EMUL_APP_PROGRESS */
gboolean emul_x_map_on = TRUE;         /* ITAPI_EMUL_MAP */

/* The word a peer reads to learn whether it may attach to us. */
static volatile uint64_t x_probe_word = UINT64_C(0x45554d4c50524f42);

static gboolean x_conn_ready(gint fd, GIOCondition cond, gpointer data);

/* The connections this thread sleeps on, between emul_x_cq_wait_begin and
 * emul_x_cq_wait_end (each with a reference), and whether they are every
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
emul_x_progress_lock(void)
{
  g_atomic_int_inc(&emul_x_pwant);
  emul_fabric_lock();
  g_atomic_int_add(&emul_x_pwant, -1);
}
static void x_conn_unref(emul_xconn_t *x);

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
  for (GList *i = x_conns; i != NULL; i = i->next) {
    emul_xconn_t *x = i->data;
    if (!x->dead && x->qp != NULL && x->seg != NULL) {
      x->ref++;
      g_ptr_array_add(a, x);
    }
  }
  return a;
}

static void
x_snapshot_free(GPtrArray *a)
{
  for (guint i = 0; i < a->len; i++)
    x_conn_unref(g_ptr_array_index(a, i));
  g_ptr_array_free(a, TRUE);
}

/* Drain and pump @x if it has work (fabric lock held); TRUE if it had.
 * @pending: what emul_x_pending(x) said, just before. */
static gboolean
x_serve(emul_xconn_t *x, gboolean pending, emul_work_t *w)
{
  /* Frames only move in RTS (emul_x_drain): none is work elsewhere. */
  gboolean in = pending && x->qp->state == RNICPI_QPS_RTS;
  if (in)
    emul_x_drain(x, w);
  if (!x->dead && (in || !emul_queue_empty(&x->out)))
    emul_x_pump(x);
  return in;
}

/* The progress thread's poll (GMainContext poll function, called without
 * the context's lock): before it sleeps, decide for each ring whether the
 * peer must ring the bell (emul_x.h, "Who drains a ring").  Work found on
 * the way is done here and the poll returns at once. */
static gint
x_poll_func(GPollFD *fds, guint nfds, gint timeout)
{
  if (timeout == 0 || g_atomic_int_get(&emul_x_nconn) == 0)
    return g_poll(fds, nfds, timeout);  /* no ring to decide about */
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  gboolean did = FALSE, unarmed = FALSE;
  /* Dekker with emul_x_cq_armed: state first, then the CQs' arm bits. */
  g_atomic_int_set(&x_pstate, XP_SLEEP_UNARMED);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  gint gs = g_atomic_int_get(&x_grace_seq);
  emul_x_progress_lock();
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
          seen = emul_x_pending(x);  /* mapped while referenced */
        }
        rnicpi_cpu_relax();
      }
    }
    emul_x_progress_lock();
  }
  gint64 now = g_get_monotonic_time();
  for (guint i = 0; i < a->len; i++) {
    emul_xconn_t *x = g_ptr_array_index(a, i);
    if (x->dead || x->qp == NULL)
      continue;
    /* An application thread sleeps on its bell (emul_x_cq_wait_begin):
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
    gint p = x->app_polls;
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
                     x->poll_arm_seq != g_atomic_int_get(&x_arm_seq);
    gboolean bell = !x_app_progress || !polled || waits;
    __atomic_store_n(&x->seg->ring[1 - x->side].armed, bell ? X_ARM_THREAD : X_ARM_NONE, __ATOMIC_SEQ_CST);
    x->armed_by = X_ARM_THREAD;
    unarmed |= !bell;
    did |= x_serve(x, emul_x_pending(x), &w);  /* what came before the flag was set */
  }
  x_snapshot_free(a);
  emul_fabric_unlock();
  emul_work_deliver(&w);
  gint r = 0;
  if (!did) {
    if (!unarmed) {
      g_atomic_int_set(&x_pstate, XP_SLEEP_ARMED);
      /* Dekker with emul_x_cq_wait_end: a sleeper that left a ring armed
       * for it since the look above must be looked at within the grace. */
      if (g_atomic_int_get(&x_grace_seq) != gs) {
        g_atomic_int_set(&x_pstate, XP_SLEEP_UNARMED);
        unarmed = TRUE;
      }
    }
    if (unarmed && (timeout < 0 || timeout > X_POLL_GRACE_MS))
      timeout = X_POLL_GRACE_MS;
    r = g_poll(fds, nfds, timeout);
  }
  g_atomic_int_set(&x_pstate, XP_RUNNING);
  return r;
}

/* Application thread (no lock held): a poll of @cq took @got entries;
 * when it found none, advance the rings that feed it and poll again.
 * Busy-poll mode's whole receive path for a small message. */
int
emul_x_poll_cq(emul_cq_t *cq, rnicpi_wc_t *wc, int n, int got)
{
  x_polled_empty = got == 0;
  if (got > 0 || !x_app_progress || g_atomic_int_get(&emul_x_pwant) > 0 ||
      !emul_fabric_trylock())
    return got;  /* whoever holds the lock is making progress */
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  gboolean did = FALSE;
  gint seq = g_atomic_int_get(&x_arm_seq);
  GList *next;
  for (GList *i = x_conns; i != NULL; i = next) {
    emul_xconn_t *x = i->data;
    next = i->next;
    if (x->qp == NULL || (x->qp->scq != cq && x->qp->rcq != cq))
      continue;
    x->app_polls++;  /* read by x_poll_func, under the lock too */
    x->poll_arm_seq = seq;
    gboolean pending = emul_x_pending(x);
    if (pending || !emul_queue_empty(&x->out)) {
      x->ref++;  /* x_conns may change under x_serve; x stays valid */
      did |= x_serve(x, pending, &w);
      next = x->dead ? x_conns : i->next;  /* closed: start over (cheap, rare) */
      x_conn_unref(x);
    }
  }
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return did ? rnicpi_cq_ring_poll(&cq->ring, wc, n) : 0;
}

/* Application thread (no lock held): @cq was armed.  After an empty poll
 * that is a thread about to sleep: if the progress thread sleeps without
 * the rings armed, wake it to arm them.  (After a poll that took
 * something it is an access layer re-arming as it goes: a thread that
 * then sleeps polls once more first, and arms again.) */
void
emul_x_cq_armed(emul_cq_t *cq)
{
  g_atomic_int_inc(&x_arm_seq);  /* a full barrier: Dekker with x_poll_func */
  /* This thread sleeps on the bells of every connection of @cq itself
   * (emul_x_cq_wait_begin came first): no ring is the thread's to arm. */
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
 * one wake-up per message, of the thread that takes it (emul_x.h, "Who
 * drains a ring").  As the progress thread does before it sleeps, it
 * looks at the ring once more after arming (the Dekker pair with the
 * producer's mark) and drains what came.  Connections past @room stay
 * the progress thread's, whose cq_notify reaches the sleeper anyway. */
uint32_t
emul_x_cq_wait_begin(emul_cq_t *cq, struct pollfd *fds, uint32_t room)
{
  x_wait.cq = NULL;
  x_wait.n = 0;
  if (g_atomic_int_get(&emul_x_nconn) == 0 || !x_app_progress)
    return 0;
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  emul_fabric_lock();
  x_wait.cq = cq;
  x_wait.all = TRUE;
  x_wait.traffic = FALSE;
  room = MIN(room, (uint32_t) X_WAIT_MAX);
  for (GList *i = x_conns; i != NULL; i = i->next) {
    emul_xconn_t *x = i->data;
    if (x->dead || x->qp == NULL || x->seg == NULL || (x->qp->scq != cq && x->qp->rcq != cq))
      continue;
    if (x_wait.n == room || x->bell_fd < 0 || x->peer_bell_fd < 0) {
      x_wait.all = FALSE;
      continue;
    }
    x->ref++;
    x->waiters++;
    x_wait.x[x_wait.n] = x;
    fds[x_wait.n] = (struct pollfd) { .fd = x->bell_fd, .events = POLLIN };
    x_wait.n++;
    uint32_t was = __atomic_exchange_n(&x->seg->ring[1 - x->side].armed, X_ARM_WAITER, __ATOMIC_SEQ_CST);
    /* Taken (X_ARM_NONE) since a sleeper armed it: a producer rang the
     * bell while nobody slept on it (the grace after a sleep). */
    if (was == X_ARM_NONE && x->armed_by == X_ARM_WAITER)
      x->bell_rung = TRUE;
    x->armed_by = X_ARM_WAITER;
    x->left_at = 0;
    /* The bell that ended the last sleep is quieted here, not when it woke
     * us (there it would delay the answer the peer waits for), and after
     * the arm, which a producer's frame then found set.  A ring this read
     * swallows is one whose frame the look below finds. */
    if (x->bell_rung) {
      uint64_t v;
      ssize_t r = read(x->bell_fd, &v, sizeof(v));
      (void) r;
      x->bell_rung = FALSE;
    }
  }
  /* After every arm, the last look (x_serve may change x_conns: the
   * references keep each connection valid). */
  for (uint32_t k = 0; k < x_wait.n; k++) {
    emul_xconn_t *x = x_wait.x[k];
    gboolean pending = emul_x_pending(x);
    if (!x->dead && (pending || !emul_queue_empty(&x->out))) {
      x_serve(x, pending, &w);
      x_wait.traffic = TRUE;
    }
  }
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return x_wait.n;
}

/* RNIC-PI 1.11: the sleep of emul_x_cq_wait_begin is over, and what
 * arrived is drained here, in this thread.  The rings stay armed for a
 * sleeper: the application usually sleeps again (or polls) within
 * microseconds, and a frame meanwhile then rings the bell nobody watches,
 * where a doorbell to the progress thread would wake it for nothing and
 * have it take the fabric lock from the application.  For the case where
 * it does not come back, the progress thread takes a ring back once
 * X_POLL_GRACE_MS has passed (x_poll_func, left_at), and is woken for it
 * if it sleeps without a timer. */
void
emul_x_cq_wait_end(emul_cq_t *cq, const struct pollfd *fds, uint32_t nfds)
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
      x->bell_rung = TRUE;  /* quieted at the next sleep (emul_x_cq_wait_begin) */
    /* Another thread may still sleep on the same bell (a QP whose two
     * CQs both have a sleeper): the producer took the word when it rang,
     * and that sleeper, woken with us, may have found the bell already
     * quiet and slept again; so the word is set again for it. */
    gboolean traffic = x_wait.traffic || (fds[k].revents & POLLIN) ||
                       (!x->dead && (emul_x_pending(x) || !emul_queue_empty(&x->out)));
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
  for (uint32_t k = 0; k < x_wait.n; k++) {
    emul_xconn_t *x = x_wait.x[k];
    gboolean pending = !x->dead && emul_x_pending(x);
    if (!x->dead && (pending || !emul_queue_empty(&x->out)))
      x_serve(x, pending, &w);
  }
  for (uint32_t k = 0; k < x_wait.n; k++)
    x_conn_unref(x_wait.x[k]);
  x_wait.cq = NULL;
  x_wait.n = 0;
  emul_fabric_unlock();
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
static void x_fork_prepare(void) { emul_fabric_lock(); }
static void x_fork_done(void) { emul_fabric_unlock(); }

/* First cross-process use: the progress thread and the region table,
 * filled with the regions registered so far. */
gboolean
emul_x_init(void)
{
  if (x_mrs != NULL)
    return TRUE;
  int fd = memfd_create("itapi-emul-mrs", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t) X_MR_CAP * sizeof(x_mr_entry_t)) != 0) {
    g_log(EMUL_LOG, G_LOG_LEVEL_WARNING, "emul: no region table for other processes: %s",
          g_strerror(errno));
    if (fd >= 0)
      close(fd);
    return FALSE;
  }
  void *m = mmap(NULL, X_MR_CAP * sizeof(x_mr_entry_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    close(fd);
    return FALSE;
  }
  x_mr_fd = fd;
  x_mrs = m;
  for (guint i = 1; i < emul_fabric.mrs->len; i++)
    emul_x_mr_sync(i);
  x_ctx = g_main_context_new();
  g_main_context_set_poll_func(x_ctx, x_poll_func);
  const char *spin = g_getenv("ITAPI_EMUL_SPIN_US");
  x_spin_us = spin != NULL ? (guint) MIN(g_ascii_strtoull(spin, NULL, 10), 1000000) : 0;
  x_app_progress = g_strcmp0(g_getenv("ITAPI_EMUL_APP_PROGRESS"), "0") != 0;
  emul_x_map_on = g_strcmp0(g_getenv("ITAPI_EMUL_MAP"), "0") != 0;
  pthread_atfork(x_fork_prepare, x_fork_done, x_fork_done);
  g_thread_unref(g_thread_new("emul-xproc", x_thread, NULL));
  return TRUE;
}

void
emul_x_mr_sync(uint32_t index)
{
  emul_fabric.mr_gen++;  /* what x->hot keeps of a local check is stale */
  if (x_mrs == NULL || index >= X_MR_CAP)
    return;
  x_mr_entry_t *e = &x_mrs[index];
  emul_mr_t *mr = index < emul_fabric.mrs->len ? g_ptr_array_index(emul_fabric.mrs, index) : NULL;
  uint32_t s = e->seq;
  __atomic_store_n(&e->seq, s + 1, __ATOMIC_SEQ_CST);
  if (mr != NULL) {
    e->key = mr->key;
    e->access = mr->access;
    e->qpn = mr->mw != NULL && mr->mw->qp != NULL ? mr->mw->qp->base.qp_num : 0;
    e->pd_id = mr->pd->id;
    e->addr = (uint64_t) (uintptr_t) mr->addr;
    e->length = mr->length;
    e->iova = mr->iova;
  }
  e->valid = mr != NULL;
  __atomic_store_n(&e->seq, s + 2, __ATOMIC_RELEASE);
}

/* Read one entry of a peer's table consistently (bounded retries: a writer
 * holds an entry odd only for a few stores). */
gboolean
emul_x_mr_read(const x_mr_entry_t *table, uint32_t index, x_mr_entry_t *out)
{
  if (table == NULL || index == 0 || index >= X_MR_CAP)
    return FALSE;
  const x_mr_entry_t *e = &table[index];
  for (int tries = 0; tries < 1000; tries++) {
    uint32_t s1 = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
    if (s1 & 1)
      continue;
    memcpy(out, (const void *) e, sizeof(*out));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) == s1)
      return out->valid != 0;
  }
  return FALSE;
}

socklen_t
emul_x_addr(const char *kind, uint32_t n, struct sockaddr_un *sa)
{
  memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  int k = g_snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "itapi-emul/%s%u", kind, n);
  return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) k);
}

int
emul_x_dial(const char *kind, uint32_t n)
{
  struct sockaddr_un sa;
  socklen_t len = emul_x_addr(kind, n, &sa);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, len) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

int
emul_x_bind_listen(const char *kind, uint32_t n)
{
  struct sockaddr_un sa;
  socklen_t len = emul_x_addr(kind, n, &sa);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0 && (bind(fd, (struct sockaddr *) &sa, len) != 0 || listen(fd, 64) != 0)) {
    int e = errno;
    close(fd);
    errno = e;
    fd = -1;
  }
  return fd;
}

GSource *
emul_x_watch(int fd, GIOCondition cond, GUnixFDSourceFunc fn, gpointer data)
{
  GSource *src = g_unix_fd_source_new(fd, cond);
  g_source_set_callback(src, (GSourceFunc) (void (*)(void)) fn, data, NULL);
  g_source_attach(src, x_ctx);
  return src;
}

void
emul_x_unwatch(GSource *src, int fd)
{
  g_source_destroy(src);
  g_source_unref(src);
  close(fd);
}

gboolean
emul_x_enter(void)
{
  emul_x_progress_lock();
  return !g_source_is_destroyed(g_main_current_source());
}

static pid_t
x_peer_pid(int fd)
{
  struct ucred cr;
  socklen_t len = sizeof(cr);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
    return 0;
  return cr.pid;
}

/* ITAPI_EMUL_CMA=0?  Read by the application's thread when it connects
 * or listens: the progress thread never reads the environment, which the
 * application may change meanwhile (getenv races setenv). */
static gboolean
x_cma_off(void)
{
  return g_strcmp0(g_getenv("ITAPI_EMUL_CMA"), "0") == 0;
}

/* May this process read and write the peer's memory?  Asked once per
 * connection; a refusal is said once per process. */
static gboolean
x_probe(emul_xconn_t *x)
{
  const char *why = NULL;
  uint64_t v = 0;
  if (x->no_cma) {
    why = "ITAPI_EMUL_CMA=0";
  } else {
    struct iovec l = { &v, sizeof(v) }, r = { (void *) (uintptr_t) x->peer_probe, sizeof(v) };
    ssize_t n = process_vm_readv(x->peer_pid, &l, 1, &r, 1, 0);
    if (n == (ssize_t) sizeof(v) && v == x_probe_word)
      return TRUE;
    why = n < 0 ? g_strerror(errno) : "the probe word did not match";
  }
  if (!x_said_bounce) {
    x_said_bounce = TRUE;
    g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE,
          "emul: process %d cannot attach to process %d's memory (%s); "
          "moving payloads through a shared-memory bounce ring",
          (int) getpid(), (int) x->peer_pid, why);
  } else {
    g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: bounce ring towards process %d (%s)",
          (int) x->peer_pid, why);
  }
  return FALSE;
}

static emul_xconn_t *
x_conn_new(int fd, int side)
{
  emul_xconn_t *x = g_new0(emul_xconn_t, 1);
  x->ref = 1;
  x->fd = fd;
  x->side = side;
  x->peer_pid = x_peer_pid(fd);
  /* Its bell, given to the peer with REQ or REP: an application thread
   * sleeps on it (emul_x_cq_wait_begin).  Without one, the progress
   * thread's doorbell serves. */
  x->bell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  x->peer_bell_fd = -1;
  g_queue_init(&x->out);
  x->src = emul_x_watch(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, x_conn_ready, x);
  x_conns = g_list_prepend(x_conns, x);
  g_atomic_int_inc(&emul_x_nconn);
  return x;
}

static void
x_conn_unref(emul_xconn_t *x)
{
  if (--x->ref == 0) {
    /* Unmapped with the last reference: a spinning progress thread may
     * still look at the ring's words. */
    if (x->seg != NULL)
      munmap(x->seg, X_SEG_SIZE);
    /* Closed with the last reference too: a thread may sleep on bell_fd. */
    if (x->bell_fd >= 0)
      close(x->bell_fd);
    if (x->peer_bell_fd >= 0)
      close(x->peer_bell_fd);
    g_free(x);
  }
}

/* Release everything a connection holds; the peer sees EOF. */
void
emul_x_close(emul_xconn_t *x)
{
  if (x->dead)
    return;
  x->dead = TRUE;
  x_conns = g_list_remove(x_conns, x);
  g_atomic_int_add(&emul_x_nconn, -1);
  if (x->qp != NULL && x->qp->x == x)
    x->qp->x = NULL;
  emul_x_free_queues(x);
  if (x->conn != NULL) {
    x->conn->x = NULL;
    x->conn = NULL;
  }
  if (x->waiters > 0 && x->bell_fd >= 0) {
    /* A thread asleep on the bell: it wakes and lets the connection go. */
    uint64_t one = 1;
    ssize_t r = write(x->bell_fd, &one, sizeof(one));
    (void) r;
  }
  emul_x_unwatch(x->src, x->fd);
  if (x->peer_mrs != NULL)
    munmap((void *) x->peer_mrs, X_MR_CAP * sizeof(x_mr_entry_t));
  emul_x_maps_free(x);
  x_conn_unref(x);
}

gboolean
emul_x_send_msg(emul_xconn_t *x, x_msg_t *m, const int *fds, int nfds)
{
  return emul_x_send_fd(x->fd, m, fds, nfds);
}

gboolean
emul_x_send_fd(int fd, x_msg_t *m, const int *fds, int nfds)
{
  union {
    char buf[CMSG_SPACE(4 * sizeof(int))];
    struct cmsghdr align;
  } c;
  g_assert(nfds <= 4);
  m->magic = X_MAGIC;
  struct iovec iov = { m, X_MSG_MIN + m->pdata_len };
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
  if (nfds > 0) {
    memset(&c, 0, sizeof(c));
    mh.msg_control = c.buf;
    mh.msg_controllen = CMSG_SPACE((size_t) nfds * sizeof(int));
    struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN((size_t) nfds * sizeof(int));
    memcpy(CMSG_DATA(h), fds, (size_t) nfds * sizeof(int));
  }
  /* Non-blocking: a full buffer means the peer has doorbells queued and
   * will wake anyway; other messages fit in a fresh socket's buffer. */
  ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
  return n == (ssize_t) iov.iov_len;
}

static void
x_pdata(x_msg_t *m, const void *pdata, uint32_t len)
{
  m->pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
  if (m->pdata_len > 0)
    memcpy(m->pdata, pdata, m->pdata_len);
}

/* ---- listeners ---- */

static gboolean
x_listen_ready(gint fd, GIOCondition cond, gpointer data)
{
  emul_listen_t *l = data;
  (void) cond;
  if (emul_x_enter()) {
    int c;
    while ((c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
      emul_xconn_t *x = x_conn_new(c, 1);
      x->listener = l;
      x->no_cma = l->no_cma;
    }
  }
  emul_fabric_unlock();
  return G_SOURCE_CONTINUE;
}

void
emul_x_listen(emul_listen_t *l)
{
  if (!emul_x_init())
    return;
  int fd = emul_x_bind_listen("", l->port);
  if (fd < 0) {
    /* Without the access layer's reservation two processes may pick one
     * port: the second listens for its own process only. */
    g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: port %u not reachable from other processes: %s",
          l->port, g_strerror(errno));
    return;
  }
  l->xfd = fd;
  l->no_cma = x_cma_off();
  l->xsrc = emul_x_watch(fd, G_IO_IN, x_listen_ready, l);
}

void
emul_x_unlisten(emul_listen_t *l, emul_work_t *w)
{
  (void) w;
  if (l->xsrc != NULL) {
    emul_x_unwatch(l->xsrc, l->xfd);
    l->xsrc = NULL;
    l->xfd = -1;
  }
  /* Requests nobody answered yet are refused, as a closed port would. */
  GList *all = g_list_copy(x_conns);
  for (GList *i = all; i != NULL; i = i->next) {
    emul_xconn_t *x = i->data;
    if (x->side != 1 || x->listener != l)
      continue;
    x->listener = NULL;
    emul_conn_t *c = x->conn;
    if (c != NULL && c->state == CONN_REPLIED) {
      c->listener = NULL;
      continue;
    }
    if (c != NULL) {
      x_msg_t m = { .type = X_REJ, .reason = RNICPI_CM_REASON_NO_LISTENER };
      emul_x_send_msg(x, &m, NULL, 0);
      x->conn = NULL;
      c->x = NULL;
      emul_cm_conn_drop(c);
    }
    if (x->qp == NULL)
      emul_x_close(x);
  }
  g_list_free(all);
}

/* ---- active side ---- */

gboolean
emul_x_connect(emul_qp_t *qp, uint32_t port, gboolean v6, const rnicpi_conn_param_t *p)
{
  if (!emul_x_init())
    return FALSE;
  int fd = emul_x_dial("", port);
  if (fd < 0)
    return FALSE; /* nobody listens there: unreachable, as in-process */
  int seg_fd = memfd_create("itapi-emul-conn", MFD_CLOEXEC);
  void *seg = MAP_FAILED;
  if (seg_fd >= 0 && ftruncate(seg_fd, X_SEG_SIZE) == 0)
    seg = mmap(NULL, X_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
  if (seg == MAP_FAILED) {
    g_log(EMUL_LOG, G_LOG_LEVEL_WARNING, "emul: no shared segment for a connection to port %u: %s",
          port, g_strerror(errno));
    if (seg_fd >= 0)
      close(seg_fd);
    close(fd);
    return FALSE;
  }
  emul_xconn_t *x = x_conn_new(fd, 0);
  x->no_cma = x_cma_off();
  x->seg = seg;
  x->seg->magic = X_MAGIC;
  x->seg->ring_size = X_RING_SIZE;
  x->seg->ring[0].armed = x->seg->ring[1].armed = 1;  /* until a consumer says it polls */
  for (int i = 0; i < 2; i++)  /* the top bit: no mark is ever 0, the ring's first content */
    x->seg->key[i] = ((uint64_t) g_random_int() << 32 | g_random_int()) | UINT64_C(1) << 63;
  x->key_out = x->seg->key[0];
  x->key_in = x->seg->key[1];
  x->seg->access[0] = qp->attr.access;
  x->seg->ird[0] = p->ird;
  x->qp = qp;
  qp->x = x;

  emul_conn_t *c = g_new0(emul_conn_t, 1);
  c->id = emul_fabric.next_conn_id++;
  c->state = CONN_REQUESTED;
  c->active = qp;
  c->ird = p->ird;
  c->ord = p->ord;
  c->three_way = p->three_way;
  c->x = x;
  x->conn = c;
  qp->conn = c;
  qp->attr.ird = p->ird;
  qp->attr.ord = p->ord;
  g_hash_table_insert(emul_fabric.conns, &c->id, c);
  emul_cm_arm(c, p->timeout_us);

  x_msg_t m = {
    .type = X_REQ, .qpn = qp->base.qp_num, .ird = p->ird, .ord = p->ord,
    .three_way = p->three_way, .pd_id = qp->pd->id,
    .probe_addr = (uint64_t) (uintptr_t) &x_probe_word,
    .pers = (uint32_t) emul_pers_of_qp(qp)->id, .atomics = emul_qp_atomics(qp), .v6 = v6,
  };
  x_pdata(&m, p->pdata, p->pdata_len);
  int fds[3] = { seg_fd, x_mr_fd, x->bell_fd };
  gboolean ok = emul_x_send_msg(x, &m, fds, x->bell_fd >= 0 ? 3 : 2);
  close(seg_fd);
  if (!ok) {
    /* The listener went away between connect and send: its EOF will say
     * so from the progress thread. */
    g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: request to port %u not sent: %s", port,
          g_strerror(errno));
  }
  return TRUE;
}

static void
x_negotiate(emul_qp_t *a_or_p, uint32_t peer_ird, uint32_t peer_ord)
{
  /* The same settlement as in-process (emul_cm.c establish): each side's
   * ORD to the other's IRD. */
  a_or_p->ord = MIN(a_or_p->attr.ord, peer_ird);
  a_or_p->ird = MIN(a_or_p->attr.ird, peer_ord);
}

static void
x_established(emul_qp_t *qp, emul_conn_t *c, const void *pdata, uint32_t len)
{
  qp->state = RNICPI_QPS_RTS;
  emul_x_access_changed(qp);  /* the negotiated IRD, for the peer */
  qp->x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  emul_qp_cm_event(qp, RNICPI_CM_ESTABLISHED, pdata, len);
}

/* The peer's bell eventfd, as a descriptor of our own (the message's are
 * closed after it is handled). */
static void
x_take_peer_bell(emul_xconn_t *x, int fd)
{
  if (fd >= 0 && x->peer_bell_fd < 0)
    x->peer_bell_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

static void
x_on_rep(emul_xconn_t *x, const x_msg_t *m, int mr_fd, int bell_fd, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  emul_qp_t *qp = x->qp;
  if (c == NULL || qp == NULL || c->state != CONN_REQUESTED || mr_fd < 0) {
    emul_x_peer_break(x, NULL, w);
    return;
  }
  void *t = mmap(NULL, X_MR_CAP * sizeof(x_mr_entry_t), PROT_READ, MAP_SHARED, mr_fd, 0);
  if (t == MAP_FAILED) {
    emul_x_peer_break(x, NULL, w);
    return;
  }
  x->peer_mrs = t;
  x->peer_pd = m->pd_id;
  x->peer_qpn = m->qpn;
  x->peer_probe = m->probe_addr;
  x->peer_cma = m->attach != 0;
  x_take_peer_bell(x, bell_fd);
  x->cma_out = x_probe(x);
  qp->atomics = emul_qp_atomics(qp) && m->atomics != 0;
  x_msg_t a = { .type = X_ATTACH, .attach = x->cma_out };
  emul_x_send_msg(x, &a, NULL, 0);
  x_negotiate(qp, m->ird, m->ord);
  if (c->three_way) {
    c->state = CONN_REPLIED;
    rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
    ev->type = RNICPI_CM_CONNECT_REPLY;
    ev->qp_ctx = qp->base.al_ctx;
    ev->conn_id = c->id;
    ev->ird = qp->ird;
    ev->ord = qp->ord;
    emul_cm_fill_pdata(ev, m->pdata, m->pdata_len);
    emul_defer_cm(emul_qp_dev(qp), ev);
    g_free(ev);
  } else {
    x_established(qp, c, m->pdata, m->pdata_len);
  }
}

/* ---- passive side ---- */

static void
x_on_req(emul_xconn_t *x, const x_msg_t *m, const int *fds, int nfds, emul_work_t *w)
{
  emul_listen_t *l = x->listener;
  if (l == NULL || x->conn != NULL || x->seg != NULL || nfds < 2 || nfds > 3) {
    emul_x_peer_break(x, NULL, w);
    return;
  }
  if (m->pers != (uint32_t) to_emul_dev(l->base.dev)->pers->id) {
    /* An HCA does not reach an RNIC: refused as by a non-peer. */
    x_msg_t r = { .type = X_REJ, .reason = RNICPI_CM_REASON_BAD_PATH };
    emul_x_send_msg(x, &r, NULL, 0);
    emul_x_close(x);
    return;
  }
  void *seg = mmap(NULL, X_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
  void *t = mmap(NULL, X_MR_CAP * sizeof(x_mr_entry_t), PROT_READ, MAP_SHARED, fds[1], 0);
  if (seg == MAP_FAILED || t == MAP_FAILED ||
      ((x_seg_hdr_t *) seg)->magic != X_MAGIC || ((x_seg_hdr_t *) seg)->ring_size != X_RING_SIZE) {
    if (seg != MAP_FAILED)
      munmap(seg, X_SEG_SIZE);
    if (t != MAP_FAILED)
      munmap(t, X_MR_CAP * sizeof(x_mr_entry_t));
    emul_x_peer_break(x, NULL, w);
    return;
  }
  x->seg = seg;
  x->key_out = x->seg->key[1];  /* read once: the peer cannot change them for us */
  x->key_in = x->seg->key[0];
  x->peer_mrs = t;
  x->peer_pd = m->pd_id;
  x->peer_qpn = m->qpn;
  x->peer_probe = m->probe_addr;
  x->cma_out = x_probe(x);
  x_take_peer_bell(x, nfds == 3 ? fds[2] : -1);

  emul_conn_t *c = g_new0(emul_conn_t, 1);
  c->id = emul_fabric.next_conn_id++;
  c->state = CONN_REQUESTED;
  c->listener = l;
  c->ird = m->ird;
  c->ord = m->ord;
  c->three_way = m->three_way != 0;
  c->peer_atomics = m->atomics != 0;
  c->x = x;
  x->conn = c;
  g_hash_table_insert(emul_fabric.conns, &c->id, c);

  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = RNICPI_CM_CONNECT_REQUEST;
  ev->listen_ctx = l->base.al_ctx;
  ev->conn_id = c->id;
  ev->port = l->port;
  ev->ird = m->ird;
  ev->ord = m->ord;
  emul_cm_loopback(&ev->src.sa, m->v6 != 0);
  emul_cm_fill_pdata(ev, m->pdata, m->pdata_len);
  emul_defer_cm(to_emul_dev(l->base.dev), ev);
  g_free(ev);
}

rnicpi_status_t
emul_x_accept(emul_qp_t *qp, emul_conn_t *c, const rnicpi_conn_param_t *p)
{
  emul_xconn_t *x = c->x;
  if (c->state == CONN_REQUESTED && c->active == NULL) {
    if (qp->state != RNICPI_QPS_IDLE || qp->conn != NULL || qp->peer != NULL || qp->x != NULL)
      return RNICPI_ESTATE;
    c->passive = qp;
    qp->conn = c;
    qp->x = x;
    x->qp = qp;
    qp->attr.ird = p->ird;
    qp->attr.ord = p->ord;
    x->seg->access[1] = qp->attr.access;
    x_negotiate(qp, c->ird, c->ord);
    qp->atomics = emul_qp_atomics(qp) && c->peer_atomics;
    x->seg->ird[1] = qp->attr.ird;
    x_msg_t m = {
      .type = X_REP, .qpn = qp->base.qp_num, .ird = p->ird, .ord = p->ord,
      .three_way = c->three_way, .attach = x->cma_out, .pd_id = qp->pd->id,
      .probe_addr = (uint64_t) (uintptr_t) &x_probe_word, .atomics = emul_qp_atomics(qp),
    };
    x_pdata(&m, p->pdata, p->pdata_len);
    int fds[2] = { x_mr_fd, x->bell_fd };
    emul_x_send_msg(x, &m, fds, x->bell_fd >= 0 ? 2 : 1);
    if (c->three_way)
      c->state = CONN_REPLIED;  /* the active consumer confirms (RTU) or rejects */
    else
      x_established(qp, c, NULL, 0);
    return RNICPI_OK;
  }
  if (c->state == CONN_REPLIED && qp == c->active) {
    x_msg_t m = { .type = X_RTU };
    x_pdata(&m, p->pdata, p->pdata_len);
    emul_x_send_msg(x, &m, NULL, 0);
    x_established(qp, c, NULL, 0);
    return RNICPI_OK;
  }
  return RNICPI_ESTATE;
}

void
emul_x_reject(emul_conn_t *c, const void *pdata, uint32_t len, emul_work_t *w)
{
  emul_xconn_t *x = c->x;
  x_msg_t m = { .type = X_REJ };
  x_pdata(&m, pdata, len);
  emul_x_send_msg(x, &m, NULL, 0);
  emul_qp_t *self = c->state == CONN_REPLIED ? c->active : NULL;
  x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  emul_x_close(x);
  if (self != NULL) /* the active consumer refused the reply: it is done too */
    emul_qp_set_error(self, w);
}

/* A QP leaves a cross-process handshake (destroy, error, disconnect): the
 * peer sees EOF (cancelled request, or BROKEN while waiting for RTU). */
void
emul_x_qp_gone(emul_qp_t *qp, emul_conn_t *c, emul_work_t *w)
{
  (void) w;
  emul_xconn_t *x = c->x;
  x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  if (qp->x == x)
    emul_x_close(x);
}

static void
x_on_rej(emul_xconn_t *x, const x_msg_t *m, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  if (c == NULL) {
    emul_x_peer_break(x, NULL, w);
    return;
  }
  emul_qp_t *to = c->state == CONN_REQUESTED ? c->active : c->passive;
  x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  emul_x_close(x);
  if (to == NULL)
    return;
  if (m->reason != 0)
    emul_cm_unreachable(to, (rnicpi_cm_reason_t) m->reason);
  else
    emul_qp_cm_event(to, RNICPI_CM_REJECTED, m->pdata, m->pdata_len);
  emul_qp_set_error(to, w);
}

/* The socket closed before or during the handshake. */
void
emul_x_fail_pending(emul_xconn_t *x, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  emul_qp_t *qp = NULL;
  gboolean unreachable = FALSE;
  if (c != NULL) {
    if (x->side == 1 && c->state == CONN_REQUESTED) {
      if (c->listener != NULL)
        emul_cm_request_cancelled(c);
    } else if (x->side == 0 && c->state == CONN_REQUESTED) {
      qp = c->active;
      unreachable = TRUE;
    } else {
      qp = x->side == 0 ? c->active : c->passive;
    }
    x->conn = NULL;
    c->x = NULL;
    emul_cm_conn_drop(c);
  }
  emul_x_close(x);
  if (qp != NULL) {
    if (unreachable)
      emul_cm_unreachable(qp, RNICPI_CM_REASON_NO_LISTENER);
    else
      emul_qp_cm_event(qp, RNICPI_CM_BROKEN, NULL, 0);
    emul_qp_set_error(qp, w);
  }
}

static void
x_on_msg(emul_xconn_t *x, const x_msg_t *m, const int *fds, int nfds, emul_work_t *w)
{
  switch (m->type) {
  case X_REQ:
    x_on_req(x, m, fds, nfds, w);
    break;
  case X_REP:
    if (x->side == 0)
      x_on_rep(x, m, nfds >= 1 ? fds[0] : -1, nfds == 2 ? fds[1] : -1, w);
    else
      emul_x_peer_break(x, NULL, w);
    break;
  case X_RTU:
    if (x->side == 1 && x->conn != NULL && x->conn->state == CONN_REPLIED && x->qp != NULL)
      x_established(x->qp, x->conn, m->pdata, m->pdata_len);
    else
      emul_x_peer_break(x, NULL, w);
    break;
  case X_REJ:
    x_on_rej(x, m, w);
    break;
  case X_ATTACH:
    x->peer_cma = m->attach != 0;
    break;
  case X_DOORBELL:
    break; /* the ring is drained below */
  case X_SPACE:
    emul_x_space(x);
    break;
  case X_DISC:
  case X_BREAK:
    emul_x_peer_break(x, m, w);
    break;
  case X_MAP_REQ:
    emul_x_on_map_req(x, m);
    break;
  case X_MAP_REP:
    emul_x_on_map_rep(x, m, nfds == 1 ? fds[0] : -1);
    break;
  case X_SIDR_REQ:
    emul_x_ud_on_svc_req(x, m, w);
    break;
  default:
    emul_x_peer_break(x, NULL, w);
    break;
  }
}

/* Receive one socket message without waiting, with up to 4 descriptors
 * (more are closed); recvmsg's result. */
ssize_t
emul_x_recv_msg(int fd, x_msg_t *m, int *fds, int *nfds)
{
  union {
    char buf[CMSG_SPACE(4 * sizeof(int))];
    struct cmsghdr align;
  } c;
  struct iovec iov = { m, sizeof(*m) };
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                       .msg_controllen = sizeof(c.buf) };
  ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  *nfds = 0;
  if (n < 0)
    return n;
  for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h != NULL; h = CMSG_NXTHDR(&mh, h)) {
    if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
      int k = (int) ((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (int i = 0; i < k; i++) {
        int f;
        memcpy(&f, CMSG_DATA(h) + (size_t) i * sizeof(int), sizeof(int));
        if (*nfds < 4)
          fds[(*nfds)++] = f;
        else
          close(f);
      }
    }
  }
  return n;
}

static gboolean
x_conn_ready(gint fd, GIOCondition cond, gpointer data)
{
  emul_xconn_t *x = data;
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  (void) cond;
  if (!emul_x_enter()) {
    emul_fabric_unlock();
    return G_SOURCE_REMOVE;
  }
  x->ref++;
  x_msg_t *m = g_new(x_msg_t, 1);
  while (!x->dead) {
    int fds[4], nfds = 0;
    ssize_t n = emul_x_recv_msg(fd, m, fds, &nfds);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      break;
    if (n < 0 && errno == ECONNRESET)
      continue;  /* the peer closed with messages of ours unread: the error
                  * is reported once, ahead of what it sent before closing
                  * (its DISC or BREAK); read on, EOF comes after them */
    /* Frames published before this message (or before the EOF) first:
     * teardown must not overtake the answers that preceded it. */
    if (x->qp != NULL && x->seg != NULL)
      emul_x_drain(x, &w);
    if (x->dead) {
      /* closed while draining */
    } else if (n <= 0) {
      if (x->qp != NULL && x->conn == NULL)
        emul_x_peer_break(x, NULL, &w);   /* the peer process died */
      else
        emul_x_fail_pending(x, &w);
    } else if ((size_t) n < X_MSG_MIN || m->magic != X_MAGIC ||
               m->pdata_len > (size_t) n - X_MSG_MIN) {
      emul_x_peer_break(x, NULL, &w);     /* not a peer of ours: never trusted */
    } else {
      x_on_msg(x, m, fds, nfds, &w);
    }
    for (int i = 0; i < nfds; i++)
      close(fds[i]);
  }
  if (!x->dead && x->qp != NULL && x->seg != NULL) {
    emul_x_drain(x, &w);
    if (!x->dead)
      emul_x_pump(x);
  }
  g_free(m);
  x_conn_unref(x);
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return G_SOURCE_CONTINUE;
}
