/*
 * vp/emul CM across processes: the per-listener socket, the handshake
 * with another process (REQ, REP or REJ, RTU), the connection object and
 * its socket messages, and teardown: DISC or BREAK to the peer, the
 * peer's own, and its death (EOF on the socket).  Design: emul_ring.h,
 * "CM".
 *
 * Run-time knobs: ITAPI_EMUL_CMA=0 forbids cross-memory attach; payloads of
 * every connection made afterwards go through the shared-memory bounce
 * ring.  ITAPI_EMUL_TRUST=0 trusts no peer (below).  ITAPI_EMUL_TIMEOUT_MS
 * is how long a peer may take nothing from a ring with frames waiting
 * (emul_ring.h, "Timeout").  All are read at each connection (a listener's
 * when it starts listening), so a process may change them.
 *
 * Trust.  A peer gets this process's region table, its bell eventfd and
 * mappings of its regions (emul_mapped.c) only when it could reach this
 * process's memory anyway: it runs as our effective user (SO_PEERCRED,
 * never what it claims) and the kernel lets it attach to us, which it
 * proves by reading a random nonce of ours (x->nonce, private memory,
 * never sent) with process_vm_readv and sending back what it read; the
 * kernel's own rule (ptrace access mode, Yama, dumpability, containers)
 * decides, not ours.  Any other peer gets the connection segment (its
 * rings) and nothing else: every payload goes through the rings, and this
 * process executes the peer's requests itself, checking key, domain,
 * bounds and rights in its own tables (emul_ring_resp.c).  The proofs
 * cross before the consumer sees the request: REQ (the active's nonce) ->
 * PROBE (the passive's proof and nonce) -> ATTACH (the active's proof, and
 * to a trusted passive its table and bell) -> the request is raised ->
 * REP (to a trusted active the passive's table and bell).
 *
 * Rules:
 * - everything here runs under the fabric lock; upcalls go through the
 *   event thread (CM, async) or emul_work_deliver after the lock (CQs);
 * - socket callbacks run on the progress thread and enter with
 *   emul_ring_enter (emul_progress.c): a socket is closed only under the
 *   lock, so a callback never sees a freed xconn;
 * - no call here blocks on a peer: sockets are non-blocking and a peer
 *   that stops answering is only waited for by the application's own
 *   (bounded) waits; its death is an EOF.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "emul_ring.h"

static gboolean x_said_bounce;
GList *emul_ring_conns;                /* every live emul_xconn_t */
/* g_list_length(emul_ring_conns), read without the lock by every poll of a CQ:
 * alone on its line, written only when a connection comes or goes. */
_Alignas(64) gint emul_ring_nconn;

static gboolean x_conn_ready(gint fd, GIOCondition cond, gpointer data);

/* ---- sockets ---- */

socklen_t
emul_ring_addr(const char *kind, uint32_t n, struct sockaddr_un *sa)
{
  memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  int k = g_snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "itapi-emul/%s%u", kind, n);
  return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) k);
}

int
emul_ring_dial(const char *kind, uint32_t n, uint32_t wait_ms)
{
  struct sockaddr_un sa;
  socklen_t len = emul_ring_addr(kind, n, &sa);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | (wait_ms == 0 ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0)
    return -1;
  if (wait_ms > 0) {
    /* A blocking connect waits while the listener's backlog is full (a
     * burst of requests its progress thread has not taken yet), as a TCP
     * SYN is sent again; SO_SNDTIMEO bounds the wait. */
    struct timeval tv = { .tv_sec = wait_ms / 1000, .tv_usec = (wait_ms % 1000) * 1000 };
    (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  int r;
  do
    r = connect(fd, (struct sockaddr *) &sa, len);
  while (r != 0 && errno == EINTR);
  int e = r != 0 ? errno : 0;
  if (e == EAGAIN && wait_ms > 0)
    g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: the listener at itapi-emul/%s%u took no connection "
          "request in %u ms (its backlog full, its process stopped or starved): refused; "
          "ITAPI_EMUL_TIMEOUT_MS sets the wait", kind, n, wait_ms);
  if (e != 0 && e != EISCONN) {
    close(fd);
    return -1;
  }
  if (wait_ms > 0) {
    struct timeval none = { 0 };
    (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

int
emul_ring_bind_listen(const char *kind, uint32_t n)
{
  struct sockaddr_un sa;
  socklen_t len = emul_ring_addr(kind, n, &sa);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0 && (bind(fd, (struct sockaddr *) &sa, len) != 0 || listen(fd, SOMAXCONN) != 0)) {
    int e = errno;
    close(fd);
    errno = e;
    fd = -1;
  }
  return fd;
}

/* ---- connections ---- */

/* The peer's process and effective user, as the kernel saw them when the
 * socket connected; an unknown peer is no user of ours ((uid_t) -1). */
static pid_t
x_peer_cred(int fd, uid_t *uid)
{
  struct ucred cr;
  socklen_t len = sizeof(cr);
  *uid = (uid_t) -1;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
    return 0;
  *uid = cr.uid;
  return cr.pid;
}


/* A connection's nonce: random, never 0 (a proof of 0 is "nothing read");
 * drawn with no lock held (a system call). */
static uint64_t
x_nonce_new(void)
{
  uint64_t v = 0;
  while (v == 0) {
    if (getrandom(&v, sizeof(v), 0) != (ssize_t) sizeof(v))
      v = (uint64_t) g_random_int() << 32 | g_random_int();
  }
  return v;
}

/* The knobs of a connection, read by the application's thread when it
 * connects or listens: the progress thread never reads the environment,
 * which the application may change meanwhile (getenv races setenv). */
static emul_ring_knobs_t
x_knobs_read(void)
{
  return (emul_ring_knobs_t) {
    .no_cma = g_strcmp0(g_getenv("ITAPI_EMUL_CMA"), "0") == 0,
    .no_trust = g_strcmp0(g_getenv("ITAPI_EMUL_TRUST"), "0") == 0,
    .timeout_ms = (uint32_t) rnicpi_env_int("ITAPI_EMUL_TIMEOUT_MS", X_TIMEOUT_MS, 0, INT_MAX),
  };
}

/* May this process read and write the peer's memory?  Its nonce at
 * @probe_addr read by attach, in *@proof (0: not read).  Asked once per
 * connection (also under ITAPI_EMUL_CMA=0: the proof is what makes this
 * process trusted by the peer); a refusal is said once per process. */
static gboolean
x_probe(emul_xconn_t *x, uint64_t probe_addr, uint64_t *proof, int *mem)
{
  const char *why = NULL;
  uint64_t v = 0;
  struct iovec l = { &v, sizeof(v) }, r = { (void *) (uintptr_t) probe_addr, sizeof(v) };
  /* Read through the pin alone, and kept only if the pinned process still
   * lives after it: then it is the one the word came from (emul_ring_peer.c).
   * Its memory file, opened before that look, is the same process's too. */
  *mem = x->peer_pidfd >= 0 ? emul_ring_peer_mem_open(x->peer_pid) : -1;
  ssize_t n = x->peer_pidfd >= 0 ? process_vm_readv(x->peer_pid, &l, 1, &r, 1, 0) : -1;
  int err = x->peer_pidfd >= 0 ? errno : 0;
  gboolean alive = n == (ssize_t) sizeof(v) && emul_ring_peer_alive(x->peer_pidfd);
  *proof = alive ? v : 0;
  if (*proof != 0 && !x->no_cma)
    return TRUE;
  if (*mem >= 0)
    close(*mem);
  *mem = -1;
  why = x->no_cma                 ? "ITAPI_EMUL_CMA=0"
        : x->peer_pidfd < 0       ? "no pidfd pins it"
        : n < 0                   ? g_strerror(err)
        : n == (ssize_t) sizeof(v) && !alive ? "it exited"
                                  : "it read nothing";
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

/* What a handshake message needs of system calls, made by the progress
 * thread as it reads the message, before it takes the fabric lock
 * (x_conn_pre): the peer's connection segment (REQ) and region table
 * (ATTACH, REP) checked and mapped, its bell checked (ATTACH, REP), its
 * memory probed (REQ, PROBE).  What the handler does not take is unmapped
 * or closed after the lock (x_pre_drop). */
typedef struct {
  void *seg;      /* MAP_FAILED: none */
  void *table;    /* MAP_FAILED: none */
  int bell;       /* the peer's bell eventfd, checked; -1: none */
  const char *bad;  /* why a descriptor of the message was refused, or NULL */
  gboolean cma;   /* this process can attach to the peer's memory (x_probe) */
  uint64_t proof; /* what it read there */
  int mem;        /* the peer's memory file (x_probe), or -1 */
  gboolean trust; /* PROBE, ATTACH: the peer proved it can attach to us, and is
                   * of our effective user */
  int sock;       /* a UD service request's: the socket duplicated, to answer on
                   * (emul_ring_ud_on_svc_req); -1: none */
} x_pre_t;

/* The peer's memory file x_probe opened, taken by the connection (fabric
 * lock held; one per connection: a second probe's is closed with @pre). */
static void
x_take_mem(emul_xconn_t *x, x_pre_t *pre)
{
  if (x->peer_mem < 0 && pre->mem >= 0) {
    x->peer_mem = pre->mem;
    pre->mem = -1;
  }
}

/* A connection's bell, given to the peer with REQ or REP: an application
 * thread sleeps on it (emul_ring_cq_wait_begin).  Without one (-1), the
 * progress thread's doorbell serves. */
static int
x_bell_new(void)
{
  return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

/* A connection over socket @fd to process @pid (pinned by @pidfd, or -1),
 * with its bell @bell_fd: all made with no lock held (x_listen_ready,
 * emul_ring_dial_open); the connection is made under the fabric lock.
 * @k: the knobs when its listener or connect started (no_cma is read by
 * the progress thread as it reads the handshake, x_conn_pre: set before
 * the watch). */
static emul_xconn_t *
x_conn_new(int fd, int side, pid_t pid, int pidfd, uid_t uid, uint64_t nonce, int bell_fd,
           const emul_ring_knobs_t *k)
{
  emul_xconn_t *x = g_new0(emul_xconn_t, 1);
  x->ref = 1;
  x->fd = fd;
  x->side = side;
  x->peer_pid = pid;
  x->peer_pidfd = pidfd;
  x->peer_mem = -1;
  x->peer_uid = uid;
  x->no_trust = k->no_trust;
  x->nonce = nonce;
  x->no_cma = k->no_cma;
  x->timeout_us = (gint64) k->timeout_ms * 1000;
  x->bell_fd = bell_fd;
  x->peer_bell_fd = -1;
  g_queue_init(&x->out);
  g_mutex_init(&x->mlock);
  g_queue_init(&x->msgs);
  /* The source's reference: its callback reads the socket before it takes
   * the fabric lock; dropped once the source is destroyed and no callback
   * runs (x_sock_close).  It starts watching once the lock is let go, as
   * the connection's first messages leave (emul_ring_msgs_flush). */
  g_atomic_int_inc(&x->ref);
  x->src = emul_ring_watch_new(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, x_conn_ready, x,
                               (GDestroyNotify) emul_ring_conn_unref);
  x->watch_due = TRUE;
  emul_ring_peer_watch_new(x);
  emul_ring_doorbell(x, X_BELL_MSGS);
  emul_ring_conns = g_list_prepend(emul_ring_conns, x);
  g_atomic_int_inc(&emul_ring_nconn);
  return x;
}

static void
x_sockmsg_drop(x_sockmsg_t *e)
{
  for (int i = 0; i < e->nfds; i++) {
    if (e->given & (1u << i))
      close(e->fds[i]);
  }
}

/* The last reference may go with no lock held: the thread that rang a
 * doorbell or sent the socket's messages (emul_ring_bells_ring) holds one
 * until then. */
void
emul_ring_conn_unref(emul_xconn_t *x)
{
  /* The last reference, dropped under the fabric lock, goes as the lock
   * does: an owed bell takes it (its unmappings and closes are system
   * calls).  Nobody else holds one to add to it meanwhile. */
  if (emul_fabric_mine && g_atomic_int_get(&x->ref) == 1)
    emul_ring_doorbell(x, 0);
  if (!g_atomic_int_dec_and_test(&x->ref))
    return;
  /* Unmapped with the last reference: a spinning progress thread may
   * still look at the ring's words. */
  if (x->seg != NULL)
    munmap(x->seg, X_SEG_SIZE);
  if (x->peer_mrs != NULL)
    munmap((void *) x->peer_mrs, X_MR_CAP * sizeof(x_mr_entry_t));
  emul_ring_maps_free(x);
  /* Closed with the last reference too: a thread may sleep on bell_fd. */
  if (x->bell_fd >= 0)
    close(x->bell_fd);
  if (x->peer_bell_fd >= 0)
    close(x->peer_bell_fd);
  /* And the pin: a long attach copy holds a reference. */
  if (x->peer_pidfd >= 0)
    close(x->peer_pidfd);
  if (x->peer_mem >= 0)
    close(x->peer_mem);
  x_sockmsg_t *e;
  while ((e = g_queue_pop_head(&x->msgs)) != NULL) {
    if (e->upcall != NULL)
      emul_events_raise(e->upcall);  /* the messages ahead are dropped, not the event */
    x_sockmsg_drop(e);
    g_free(e);
    g_atomic_int_add(&emul_ring_msgs_owed, -1);
  }
  if (!x->sock_closed)
    close(x->fd);
  g_mutex_clear(&x->mlock);
  g_free(x->held_req);
  g_free(x);
}

/* Release everything a connection holds; the peer sees EOF. */
void
emul_ring_close(emul_xconn_t *x)
{
  if (x->dead)
    return;
  x->dead = TRUE;
  g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: connection to process %d closed: %" G_GUINT64_FORMAT
        " frames taken under its QP's link alone, %" G_GUINT64_FORMAT " under the fabric lock",
        (int) x->peer_pid, __atomic_load_n(&x->rx_link, __ATOMIC_RELAXED),
        __atomic_load_n(&x->rx_full, __ATOMIC_RELAXED));
  emul_ring_conns = g_list_remove(emul_ring_conns, x);
  g_atomic_int_add(&emul_ring_nconn, -1);
  if (x->qp != NULL && x->qp->x == x)
    __atomic_store_n(&x->qp->x, NULL, __ATOMIC_RELAXED);  /* read unlocked as a hint (x_hot_candidate) */
  emul_ring_free_queues(x);
  if (x->conn != NULL) {
    x->conn->x = NULL;
    x->conn = NULL;
  }
  /* A thread asleep on the bell wakes and lets the connection go. */
  if (x->waiters > 0 && x->bell_fd >= 0)
    emul_ring_doorbell(x, X_BELL_SELF);
  /* The socket closes (the peer sees EOF), and its watch goes, once the
   * messages queued before this are sent, with the lock let go. */
  g_mutex_lock(&x->mlock);
  x->sock_close = TRUE;
  g_mutex_unlock(&x->mlock);
  emul_ring_doorbell(x, X_BELL_MSGS);
  /* The peer's region table and its regions mapped here stay mapped until
   * the last reference goes (a long copy may use them; the thread that
   * owes the close above holds one): unmapped with no lock held, most of
   * the time. */
  x->map_gen++;
  emul_ring_conn_unref(x);
}

/* ---- the socket's messages ---- */

gint emul_ring_msgs_owed;

void
emul_ring_send_msg(emul_xconn_t *x, const x_msg_t *m, const int *fds, int nfds, unsigned given)
{
  g_assert(nfds >= 0 && nfds <= 4);
  x_sockmsg_t *e = g_new(x_sockmsg_t, 1);
  e->upcall = NULL;
  e->nfds = nfds;
  e->given = given;
  if (nfds > 0)
    memcpy(e->fds, fds, (size_t) nfds * sizeof(int));
  memcpy(&e->m, m, X_MSG_MIN + MIN(m->pdata_len, (uint32_t) RNICPI_MAX_PDATA));
  g_mutex_lock(&x->mlock);
  gboolean queued = !x->sock_close;
  if (queued) {
    g_queue_push_tail(&x->msgs, e);
    g_atomic_int_inc(&emul_ring_msgs_owed);
  }
  g_mutex_unlock(&x->mlock);
  if (!queued) {
    x_sockmsg_drop(e);
    g_free(e);
    return;
  }
  emul_ring_doorbell(x, X_BELL_MSGS);
}

gboolean
emul_ring_msgs_then(emul_xconn_t *x, emul_upcall_t *u)
{
  g_mutex_lock(&x->mlock);
  gboolean queued = !x->sock_closed && (x->msending || !emul_queue_empty(&x->msgs));
  if (queued) {
    x_sockmsg_t *e = g_new0(x_sockmsg_t, 1);
    e->upcall = u;
    g_queue_push_tail(&x->msgs, e);
    g_atomic_int_inc(&emul_ring_msgs_owed);
  }
  g_mutex_unlock(&x->mlock);
  if (queued)
    emul_ring_doorbell(x, X_BELL_MSGS);
  return queued;
}

static const char *
x_msg_name(uint32_t type)
{
  static const char *const names[] = {
    [X_REQ] = "connection request", [X_REP] = "connection reply", [X_RTU] = "ready-to-use",
    [X_REJ] = "rejection", [X_ATTACH] = "attach answer", [X_DOORBELL] = "doorbell",
    [X_SPACE] = "ring-space doorbell", [X_DISC] = "disconnect", [X_BREAK] = "break",
    [X_MAP_REQ] = "mapping request", [X_MAP_REP] = "mapping answer",
  };
  return type < G_N_ELEMENTS(names) && names[type] != NULL ? names[type] : "message";
}

/* Send @e, or say it must wait for room (FALSE): a message that is not a
 * doorbell, into a full socket.  A full buffer holds doorbells the peer
 * has not read yet (each sends one when it finds the ring empty); it
 * wakes for them anyway, so a doorbell that does not fit is dropped.
 * Anything else waits for the peer to read: a disconnect dropped here
 * would reach the peer as the socket's EOF, its connection BROKEN where
 * it was closed in order.  It waits the connection's timeout at most
 * (ITAPI_EMUL_TIMEOUT_MS, 0: for ever), then goes, said: a peer that
 * reads nothing for so long is stopped or traced.  The sender's alone
 * (msending). */
static gboolean
x_sockmsg_send(emul_xconn_t *x, x_sockmsg_t *e)
{
  gboolean bell = e->m.type == X_DOORBELL || e->m.type == X_SPACE;
  if (emul_ring_send_fd(x->fd, &e->m, e->fds, e->nfds)) {
    x->room_since = 0;
  } else {
    int err = errno;
    gint64 now = g_get_monotonic_time();
    gboolean full = err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS;
    if (full && !bell && x->room_since == 0)
      x->room_since = now;
    if (full && !bell && (x->timeout_us == 0 || now - x->room_since < x->timeout_us))
      return FALSE;
    if (e->m.type == X_MAP_REQ)
      g_atomic_int_set(&x->map_lost, (gint) e->m.mr_index + 1);  /* asked again */
    if (full && !bell)
      g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: %s to process %d (uid %d) not sent: its socket "
            "stayed full for %" G_GINT64_FORMAT " ms (the process reads none of its messages: "
            "stopped or traced); ITAPI_EMUL_TIMEOUT_MS sets the wait, 0 none",
            x_msg_name(e->m.type), (int) x->peer_pid, (int) x->peer_uid, (now - x->room_since) / 1000);
    else if (!bell)  /* the peer went away: its EOF tells */
      g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: %s to process %d not sent: %s",
            x_msg_name(e->m.type), (int) x->peer_pid, g_strerror(err));
    x->room_since = 0;
  }
  x_sockmsg_drop(e);
  return TRUE;
}

/* The socket's last user, its sender or its reader, closes it
 * (emul_ring_sock_done), with no lock held: its watch goes first, so that
 * the progress thread never polls the descriptor's number reused.  The
 * caller holds a reference to @x besides the watch's (a bell's, or the
 * dispatch's of the watch's own callback). */
static void
x_sock_close(emul_xconn_t *x)
{
  GSource *src = x->src, *pid_src = x->pid_src;
  x->src = NULL;
  x->pid_src = NULL;
  if (src != NULL) {  /* none on a bare connection of a unit test (emul-bells) */
    g_source_destroy(src);
    g_source_unref(src);
  }
  if (pid_src != NULL) {
    g_source_destroy(pid_src);
    g_source_unref(pid_src);
  }
  close(x->fd);
}

static void x_msgs_pump(emul_xconn_t *x, x_sockmsg_t *first);

/* The progress thread, when the socket a message waited on has room (or
 * its wait ran out, or the peer closed): the sender goes on. */
static gboolean
x_msgs_room(gint fd, GIOCondition cond, gpointer data)
{
  emul_xconn_t *x = data;  /* the watch's reference keeps it */
  (void) fd;
  (void) cond;
  g_mutex_lock(&x->mlock);
  x_msgs_pump(x, NULL);
  return G_SOURCE_REMOVE;
}

/* Send the queued messages (@first, the caller's own doorbell, before
 * them), with mlock held and msending set; it returns with mlock let go.
 * A message that waits for room goes back to the head of the queue, and
 * msending stays set: the watch of the socket's room sends on
 * (x_msgs_room), and meanwhile others only queue theirs, the events
 * among them, so that nothing overtakes it. */
static void
x_msgs_pump(emul_xconn_t *x, x_sockmsg_t *first)
{
  for (x_sockmsg_t *e = first;; e = NULL) {
    if (e == NULL && (e = g_queue_pop_head(&x->msgs)) == NULL)
      break;
    g_mutex_unlock(&x->mlock);
    if (e->upcall != NULL) {
      emul_events_raise(e->upcall);
    } else if (!x_sockmsg_send(x, e)) {
      g_assert(e != first);  /* a doorbell never waits */
      g_atomic_int_inc(&x->ref);  /* the watch's */
      GSource *src = emul_ring_watch_new(x->fd, G_IO_OUT | G_IO_ERR | G_IO_HUP, x_msgs_room, x,
                                         (GDestroyNotify) emul_ring_conn_unref);
      if (x->timeout_us > 0)
        g_source_set_ready_time(src, x->room_since + x->timeout_us);
      g_mutex_lock(&x->mlock);
      g_queue_push_head(&x->msgs, e);
      g_mutex_unlock(&x->mlock);
      emul_ring_watch_start(src);
      g_source_unref(src);
      return;
    }
    if (e != first) {
      g_free(e);
      g_atomic_int_add(&emul_ring_msgs_owed, -1);
    }
    g_mutex_lock(&x->mlock);
  }
  x->msending = FALSE;
  g_mutex_unlock(&x->mlock);
  if (emul_ring_sock_done(x, TRUE))
    x_sock_close(x);
}

void
emul_ring_msgs_flush(emul_xconn_t *x, x_sockmsg_t *first)
{
  g_mutex_lock(&x->mlock);
  if (first != NULL && x->sock_close) {
    x_sockmsg_drop(first);
    first = NULL;
  } else if (first != NULL && (x->msending || !emul_queue_empty(&x->msgs))) {
    const x_sockmsg_t *t = g_queue_peek_tail(&x->msgs);
    gboolean bell = first->m.type == X_DOORBELL || first->m.type == X_SPACE;
    if (bell && t != NULL && t->m.type == first->m.type)
      x_sockmsg_drop(first);  /* one waiting wakes the peer as well */
    else {
      g_queue_push_tail(&x->msgs, g_memdup2(first, sizeof(*first)));
      g_atomic_int_inc(&emul_ring_msgs_owed);
    }
    first = NULL;
  }
  if (x->msending) {
    g_mutex_unlock(&x->mlock);
    return;  /* its sender sends ours too: it pops until none is left */
  }
  x->msending = TRUE;
  if (x->watch_due) {
    /* The watch starts here, as the lock that made it is let go; a
     * connection closed first never starts it. */
    x->watch_due = FALSE;
    if (!x->sock_close) {
      g_mutex_unlock(&x->mlock);
      emul_ring_watch_start(x->src);
      if (x->pid_src != NULL)
        emul_ring_watch_start(x->pid_src);
      g_mutex_lock(&x->mlock);
    }
  }
  x_msgs_pump(x, first);
}

gboolean
emul_ring_sock_done(emul_xconn_t *x, gboolean sender)
{
  g_mutex_lock(&x->mlock);
  if (!sender)
    x->sock_reading = FALSE;
  gboolean close_now = x->sock_close && !x->sock_closed && !x->msending && !x->sock_reading &&
                       emul_queue_empty(&x->msgs);
  x->sock_closed = x->sock_closed || close_now;
  g_mutex_unlock(&x->mlock);
  return close_now;
}

gboolean
emul_ring_send_fd(int fd, x_msg_t *m, const int *fds, int nfds)
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

/* A listener's socket for other processes, the data of the progress
 * thread's watch of it (emul_ring_lsock_t): @l is NULL once the listener
 * went (fabric lock). */
struct x_lsock {
  emul_ring_lsock_t sock;  /* first */
  emul_listen_t *l;
};
typedef struct x_lsock x_lsock_t;

/* Listeners' sockets cut from their listener and not closed yet: a new
 * listener of the port may find it bound a moment (emul_ring_listen_start). */
static gint x_lsocks_closing;

static void
x_lsock_closing(emul_ring_lsock_t *sock)
{
  x_lsock_t *s = (x_lsock_t *) sock;
  if (s->l == NULL)
    g_atomic_int_add(&x_lsocks_closing, -1);
}

#define X_ACCEPT_BATCH 8
/* Connections of one listener not accepted yet by its consumer (or not
 * through their handshake): a peer that opens more is refused, said
 * once per process. */
static gboolean x_said_pending;

/* The connections of @l waiting for their consumer's answer. */
static guint
x_pending(const emul_listen_t *l)
{
  guint n = 0;
  for (GList *i = emul_ring_conns; i != NULL; i = i->next) {
    const emul_xconn_t *x = i->data;
    n += x->listener == l && x->qp == NULL && !x->dead;
  }
  return n;
}

/* The progress thread, when connections wait at a listener: accepted, each
 * with its peer's process and a bell, with no lock held; made connections
 * under the fabric lock (closed after it if the listener went meanwhile:
 * the peer sees the EOF of a closed port). */
static gboolean
x_listen_ready(gint fd, GIOCondition cond, gpointer data)
{
  x_lsock_t *s = data;
  (void) cond;
  int c[X_ACCEPT_BATCH], bell[X_ACCEPT_BATCH], pidfd[X_ACCEPT_BATCH];
  pid_t pid[X_ACCEPT_BATCH];
  uid_t uid[X_ACCEPT_BATCH];
  uint64_t nonce[X_ACCEPT_BATCH];
  guint n = 0;
  while (n < X_ACCEPT_BATCH && (c[n] = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
    pid[n] = x_peer_cred(c[n], &uid[n]);
    pidfd[n] = emul_ring_peer_pin(c[n], pid[n]);
    bell[n] = x_bell_new();
    nonce[n] = x_nonce_new();
    n++;
  }
  if (n == 0)
    emul_ring_accept_refuse(fd, errno, "connection requests");
  if (emul_ring_enter() && s->l != NULL) {
    guint pending = n > 0 ? x_pending(s->l) : 0;
    for (guint i = 0; i < n; i++) {
      if (pending >= emul_ring_pending_max) {
        if (!x_said_pending) {
          x_said_pending = TRUE;
          g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: port %u has %u connection requests waiting "
                "for an answer: refusing process %d's and any more (answer or reject them)",
                s->l->port, pending, (int) pid[i]);
        }
        continue;  /* closed below, as for a listener gone */
      }
      pending++;
      emul_xconn_t *x = x_conn_new(c[i], 1, pid[i], pidfd[i], uid[i], nonce[i], bell[i], &s->l->knobs);
      x->listener = s->l;
      c[i] = -1;
    }
  }
  emul_fabric_unlock();
  for (guint i = 0; i < n; i++) {
    if (c[i] >= 0) {
      close(c[i]);
      if (bell[i] >= 0)
        close(bell[i]);
      if (pidfd[i] >= 0)
        close(pidfd[i]);
    }
  }
  return G_SOURCE_CONTINUE;
}

int
emul_ring_listen_open(uint32_t port)
{
  if (!emul_ring_init())
    return -1;
  int fd = emul_ring_bind_listen("", port);
  if (fd < 0) {
    /* Without the access layer's reservation two processes may pick one
     * port: the second listens for its own process only. */
    g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: port %u not reachable from other processes: %s",
          port, g_strerror(errno));
  }
  return fd;
}

void
emul_ring_listen(emul_listen_t *l, int fd)
{
  if (fd < 0)
    return;
  x_lsock_t *s = g_new0(x_lsock_t, 1);
  emul_ring_lsock_init(&s->sock, fd);
  s->sock.closing = x_lsock_closing;
  s->l = l;
  l->xsock = s;
  l->knobs = x_knobs_read();
}

void
emul_ring_listen_start(emul_listen_t *l)
{
  /* The port's socket may still be an earlier listener's of this process,
   * whose unlisten closes it with no lock held: bound again once it did
   * (for a second at most; the listener is the caller's alone until this
   * returns). */
  for (unsigned n = 0; l->xsock == NULL && g_atomic_int_get(&x_lsocks_closing) > 0 && n < 10000; n++) {
    g_usleep(100);
    int fd = emul_ring_bind_listen("", l->port);
    if (fd >= 0)
      emul_ring_listen(l, fd);
  }
  if (l->xsock != NULL)
    emul_ring_lsock_watch(&l->xsock->sock, x_listen_ready);
}

void
emul_ring_listen_close(x_lsock_t *s)
{
  if (s != NULL)
    emul_ring_lsock_close(&s->sock);
}

x_lsock_t *
emul_ring_unlisten(emul_listen_t *l, emul_work_t *w)
{
  (void) w;
  /* Its watch is destroyed once the lock is let go: a callback that waits
   * for the lock meanwhile finds the listener gone (s->l). */
  x_lsock_t *s = l->xsock;
  if (s != NULL) {
    s->l = NULL;
    g_atomic_int_inc(&x_lsocks_closing);
  }
  l->xsock = NULL;
  /* Requests nobody answered yet are refused, as a closed port would. */
  GList *all = g_list_copy(emul_ring_conns);
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
      emul_ring_send_msg(x, &m, NULL, 0, 0);
      x->conn = NULL;
      c->x = NULL;
      emul_cm_conn_drop(c);
    }
    if (x->qp == NULL)
      emul_ring_close(x);
  }
  g_list_free(all);
  return s;
}

/* ---- active side ---- */

/* Whether process @pid (uid @uid, SO_PEERCRED) may listen on a privileged
 * port: root, or CAP_NET_BIND_SERVICE in its effective set.  A process
 * whose capabilities cannot be read is not believed. */
static gboolean
x_may_bind_privileged(pid_t pid, uid_t uid)
{
  gboolean has = FALSE;
  return uid == 0 || (rnicpi_pid_cap_effective(pid, CAP_NET_BIND_SERVICE, &has) && has);
}

gboolean
emul_ring_dial_open(uint32_t port, emul_dial_t *d)
{
  *d = EMUL_DIAL_NONE;
  if (!emul_ring_init())
    return FALSE;
  /* A listener's backlog may be full for a moment (a burst of requests):
   * wait for it as long as for a stalled peer, 0 (never) meaning 60 s. */
  uint32_t wait_ms = x_knobs_read().timeout_ms;
  d->fd = emul_ring_dial("", port, wait_ms != 0 ? wait_ms : 60000);
  if (d->fd < 0)
    return FALSE; /* nobody listens there: unreachable, as in-process */
  d->pid = (int) x_peer_cred(d->fd, &d->uid);
  d->pidfd = emul_ring_peer_pin(d->fd, (pid_t) d->pid);
  /* Any process may bind an abstract socket name: below the host's
   * unprivileged start, only a listener that could bind the TCP port is
   * believed (the access layer refuses the others their listen), as its
   * pin, alive after the look, says it was the one looked at. */
  if (port < rnicpi_unprivileged_port_start() &&
      (!x_may_bind_privileged((pid_t) d->pid, d->uid) || !emul_ring_peer_alive(d->pidfd))) {
    g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: process %d (uid %d) answers on privileged port %u "
          "without CAP_NET_BIND_SERVICE: not connecting to it (find who binds the abstract socket "
          "itapi-emul/%u)", d->pid, (int) d->uid, port, port);
    emul_ring_dial_close(d);
    return FALSE;
  }
  /* Sealed at its size: the peer maps it, and a file that could shrink
   * under a mapping would SIGBUS it (the peer checks, x_seg_map). */
  d->seg_fd = memfd_create("itapi-emul-conn", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  void *seg = MAP_FAILED;
  if (d->seg_fd >= 0 && ftruncate(d->seg_fd, X_SEG_SIZE) == 0 &&
      fcntl(d->seg_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
    seg = mmap(NULL, X_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, d->seg_fd, 0);
  d->seg = seg != MAP_FAILED ? seg : NULL;
  if (d->seg == NULL) {
    g_log(EMUL_LOG, G_LOG_LEVEL_WARNING, "emul: no shared segment for a connection to port %u: %s",
          port, g_strerror(errno));
    emul_ring_dial_close(d);
    return FALSE;
  }
  d->bell_fd = x_bell_new();
  d->nonce = x_nonce_new();
  emul_random_ready();  /* the segment's keys (emul_ring_connect) */
  return TRUE;
}

void
emul_ring_dial_close(emul_dial_t *d)
{
  if (d->seg != NULL)
    munmap(d->seg, X_SEG_SIZE);
  if (d->seg_fd >= 0)
    close(d->seg_fd);
  if (d->bell_fd >= 0)
    close(d->bell_fd);
  if (d->pidfd >= 0)
    close(d->pidfd);
  if (d->fd >= 0)
    close(d->fd);
  *d = EMUL_DIAL_NONE;
}

void
emul_ring_connect(emul_qp_t *qp, emul_dial_t *d, gboolean v6, const rnicpi_conn_param_t *p)
{
  emul_ring_knobs_t k = x_knobs_read();
  emul_xconn_t *x = x_conn_new(d->fd, 0, (pid_t) d->pid, d->pidfd, d->uid, d->nonce, d->bell_fd, &k);
  int seg_fd = d->seg_fd;
  x->seg = d->seg;
  *d = EMUL_DIAL_NONE;
  x->seg->magic = X_MAGIC;
  x->seg->ring_size = X_RING_SIZE;
  x->seg->ring[0].armed = x->seg->ring[1].armed = 1;  /* until a consumer says it polls */
  for (int i = 0; i < 2; i++)  /* the top bit: no mark is ever 0, the ring's first content */
    x->seg->key[i] = ((uint64_t) emul_random_u32() << 32 | emul_random_u32()) | UINT64_C(1) << 63;
  x->key_out = x->seg->key[0];
  x->key_in = x->seg->key[1];
  x->seg->access[0] = qp->attr.access;
  x->seg->ird[0] = p->ird;
  x->qp = qp;
  __atomic_store_n(&qp->x, x, __ATOMIC_RELAXED);

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
    .probe_addr = (uint64_t) (uintptr_t) &x->nonce, .fds = X_FD_SEG,
    .pers = (uint32_t) emul_pers_of_qp(qp)->id, .atomics = emul_qp_atomics(qp), .v6 = v6,
  };
  x_pdata(&m, p->pdata, p->pdata_len);
  /* The segment's descriptor is the message's (closed once sent).  A
   * listener gone between connect and send: its EOF says so from the
   * progress thread. */
  emul_ring_send_msg(x, &m, &seg_fd, 1, 1u);
}

static void
x_established(emul_qp_t *qp, emul_conn_t *c, const void *pdata, uint32_t len)
{
  qp->state = RNICPI_QPS_RTS;
  if (qp->link == NULL)
    emul_link_join_ring(qp);
  emul_ring_access_changed(qp);  /* the negotiated IRD, for the peer */
  qp->x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  emul_qp_cm_event(qp, RNICPI_CM_ESTABLISHED, pdata, len);
}

/* The peer's bell eventfd: the message's descriptor *@fd becomes the
 * connection's (the others are closed after it is handled). */
static void
x_take_peer_bell(emul_xconn_t *x, int *fd)
{
  if (fd != NULL && *fd >= 0 && x->peer_bell_fd < 0) {
    x->peer_bell_fd = *fd;
    *fd = -1;
  }
}

/* What a trusted peer gave with its ATTACH or REP (@pre): its region
 * table, which makes this process attach to it for payload when it can
 * (x->probed) and may, and its bell.  An untrusted peer's bell is never
 * written to: a descriptor shared with the peer could be made to block. */
static void
x_take_gifts(emul_xconn_t *x, x_pre_t *pre)
{
  if (pre->table != MAP_FAILED) {
    x->peer_mrs = pre->table;
    pre->table = MAP_FAILED;
  }
  x->cma_out = x->probed && x->peer_mrs != NULL;
  if (x->trusted)
    x_take_peer_bell(x, &pre->bell);
  if (x->probed && x->peer_mrs == NULL)
    g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: process %d does not trust process %d: its payloads go "
          "through the ring", (int) x->peer_pid, (int) getpid());
}

static void
x_on_rep(emul_xconn_t *x, const x_msg_t *m, x_pre_t *pre, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  emul_qp_t *qp = x->qp;
  if (c == NULL || qp == NULL || c->state != CONN_REQUESTED || !x->probe_seen || pre->bad != NULL) {
    emul_ring_peer_violation(x, w, "a reply %s", pre->bad != NULL ? pre->bad : "out of turn");
    return;
  }
  x->peer_pd = m->pd_id;
  x->peer_qpn = m->qpn;
  x_take_gifts(x, pre);
  qp->atomics = emul_qp_atomics(qp) && m->atomics != 0;
  emul_cm_settle(qp, m->ird, m->ord);  /* as in-process (emul_cm.c) */
  emul_xconn_t *after = emul_events_after;
  emul_events_after = x;  /* the event leaves after the answer (emul_ring_teardown) */
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
  emul_events_after = after;
}

/* ---- passive side ---- */

static void
x_on_req(emul_xconn_t *x, const x_msg_t *m, x_pre_t *pre, emul_work_t *w)
{
  emul_listen_t *l = x->listener;
  if (l == NULL || x->conn != NULL || x->seg != NULL || pre->bad != NULL) {
    emul_ring_peer_violation(x, w, "a connection request %s",
                             pre->bad != NULL ? pre->bad : "out of turn");
    return;
  }
  if (m->pers != (uint32_t) to_emul_dev(l->base.dev)->pers->id) {
    /* An HCA does not reach an RNIC: refused as by a non-peer. */
    x_msg_t r = { .type = X_REJ, .reason = RNICPI_CM_REASON_BAD_PATH };
    emul_ring_send_msg(x, &r, NULL, 0, 0);
    emul_ring_close(x);
    return;
  }
  x_seg_hdr_t *seg = pre->seg;
  if (seg == MAP_FAILED || __atomic_load_n(&seg->magic, __ATOMIC_RELAXED) != X_MAGIC ||
      __atomic_load_n(&seg->ring_size, __ATOMIC_RELAXED) != X_RING_SIZE) {
    /* the mappings go after the lock (x_pre_drop) */
    emul_ring_peer_violation(x, w, "a connection segment of another layout (not version %08x)", X_MAGIC);
    return;
  }
  x->seg = pre->seg;
  pre->seg = MAP_FAILED;
  /* Read once: the peer may change them in the segment, not for us. */
  x->key_out = __atomic_load_n(&x->seg->key[1], __ATOMIC_RELAXED);
  x->key_in = __atomic_load_n(&x->seg->key[0], __ATOMIC_RELAXED);
  x->peer_pd = m->pd_id;
  x->peer_qpn = m->qpn;
  x->probed = pre->cma;
  x_take_mem(x, pre);

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

  /* The consumer sees the request once the proofs crossed (Trust). */
  x->held_req = g_memdup2(m, sizeof(*m));
  x_msg_t p = { .type = X_PROBE, .probe_addr = (uint64_t) (uintptr_t) &x->nonce, .proof = pre->proof,
                .attach = pre->cma };
  emul_ring_send_msg(x, &p, NULL, 0, 0);
}

/* The active side's ATTACH: its proof, and a trusted peer's gifts; the
 * request held since REQ goes to the consumer. */
static void
x_on_attach(emul_xconn_t *x, const x_msg_t *a, x_pre_t *pre, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  emul_listen_t *l = x->listener;
  if (x->side != 1 || x->held_req == NULL || c == NULL || c->passive != NULL || l == NULL ||
      pre->bad != NULL) {
    emul_ring_peer_violation(x, w, "an attach answer %s", pre->bad != NULL ? pre->bad : "out of turn");
    return;
  }
  x->peer_cma = a->proof == x->nonce && a->attach != 0;  /* it can, and it may */
  x->trusted = pre->trust;
  x_take_gifts(x, pre);
  x_msg_t *m = x->held_req;
  x->held_req = NULL;
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
  g_free(m);
}

/* Send @m (ATTACH or REP) with, to a trusted peer, our region table and
 * bell (both stay ours: the message closes neither). */
static void
x_send_gifts(emul_xconn_t *x, x_msg_t *m)
{
  int fds[2], n = 0;
  if (x->trusted && emul_ring_mr_fd >= 0) {
    fds[n++] = emul_ring_mr_fd;
    m->fds |= X_FD_TABLE;
  }
  if (x->trusted && x->bell_fd >= 0) {
    fds[n++] = x->bell_fd;
    m->fds |= X_FD_BELL;
  }
  emul_ring_send_msg(x, m, fds, n, 0);
}

/* The passive side's PROBE: its proof and its nonce, read before the lock
 * (@pre); the answer is ATTACH, with our table and bell to a trusted peer. */
static void
x_on_probe(emul_xconn_t *x, const x_msg_t *p, x_pre_t *pre, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  if (x->side != 0 || x->probe_seen || c == NULL || c->state != CONN_REQUESTED || pre->bad != NULL) {
    emul_ring_peer_violation(x, w, "a probe %s", pre->bad != NULL ? pre->bad : "out of turn");
    return;
  }
  x->probe_seen = TRUE;
  x->peer_cma = p->proof == x->nonce && p->attach != 0;
  x->trusted = pre->trust;
  x->probed = pre->cma;
  x_take_mem(x, pre);
  x_msg_t a = { .type = X_ATTACH, .attach = pre->cma, .proof = pre->proof };
  x_send_gifts(x, &a);
}

rnicpi_status_t
emul_ring_accept(emul_qp_t *qp, emul_conn_t *c, const rnicpi_conn_param_t *p)
{
  emul_xconn_t *x = c->x;
  if (c->state == CONN_REQUESTED && c->active == NULL) {
    if (qp->state != RNICPI_QPS_IDLE || qp->conn != NULL || qp->peer != NULL || qp->x != NULL ||
        qp->dialing)
      return RNICPI_ESTATE;
    c->passive = qp;
    qp->conn = c;
    __atomic_store_n(&qp->x, x, __ATOMIC_RELAXED);
    x->qp = qp;
    qp->attr.ird = p->ird;
    qp->attr.ord = p->ord;
    x->seg->access[1] = qp->attr.access;
    emul_cm_settle(qp, c->ird, c->ord);
    qp->atomics = emul_qp_atomics(qp) && c->peer_atomics;
    x->seg->ird[1] = qp->attr.ird;
    x_msg_t m = {
      .type = X_REP, .qpn = qp->base.qp_num, .ird = p->ird, .ord = p->ord,
      .three_way = c->three_way, .pd_id = qp->pd->id,
      .atomics = emul_qp_atomics(qp),
    };
    x_pdata(&m, p->pdata, p->pdata_len);
    x_send_gifts(x, &m);
    if (c->three_way)
      c->state = CONN_REPLIED;  /* the active consumer confirms (RTU) or rejects */
    else
      x_established(qp, c, NULL, 0);
    return RNICPI_OK;
  }
  if (c->state == CONN_REPLIED && qp == c->active) {
    x_msg_t m = { .type = X_RTU };
    x_pdata(&m, p->pdata, p->pdata_len);
    emul_ring_send_msg(x, &m, NULL, 0, 0);
    x_established(qp, c, NULL, 0);
    return RNICPI_OK;
  }
  return RNICPI_ESTATE;
}

void
emul_ring_reject(emul_conn_t *c, const void *pdata, uint32_t len, emul_work_t *w)
{
  emul_xconn_t *x = c->x;
  x_msg_t m = { .type = X_REJ };
  x_pdata(&m, pdata, len);
  emul_ring_send_msg(x, &m, NULL, 0, 0);
  emul_qp_t *self = c->state == CONN_REPLIED ? c->active : NULL;
  x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  emul_ring_close(x);
  if (self != NULL) /* the active consumer refused the reply: it is done too */
    emul_qp_set_error(self, w);
}

/* A QP leaves a cross-process handshake (destroy, error, disconnect): the
 * peer sees EOF (cancelled request, or BROKEN while waiting for RTU). */
void
emul_ring_qp_gone(emul_qp_t *qp, emul_conn_t *c, emul_work_t *w)
{
  (void) w;
  emul_xconn_t *x = c->x;
  x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  if (qp->x == x)
    emul_ring_close(x);
}

static void
x_on_rej(emul_xconn_t *x, const x_msg_t *m, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  if (c == NULL) {
    emul_ring_peer_violation(x, w, "a rejection of no connection request");
    return;
  }
  emul_qp_t *to = c->state == CONN_REQUESTED ? c->active : c->passive;
  x->conn = NULL;
  c->x = NULL;
  emul_cm_conn_drop(c);
  emul_ring_close(x);
  if (to == NULL)
    return;
  if (m->reason != 0)  /* a reason we do not know is the peer's refusal as a non-peer */
    emul_cm_unreachable(to, m->reason <= RNICPI_CM_REASON_BAD_PARAMS ? (rnicpi_cm_reason_t) m->reason
                                                                     : RNICPI_CM_REASON_BAD_PATH);
  else
    emul_qp_cm_event(to, RNICPI_CM_REJECTED, m->pdata, m->pdata_len);
  emul_qp_set_error(to, w);
}

/* The socket closed before or during the handshake. */
void
emul_ring_fail_pending(emul_xconn_t *x, emul_work_t *w)
{
  emul_conn_t *c = x->conn;
  emul_qp_t *qp = NULL;
  gboolean unreachable = FALSE;
  if (c != NULL) {
    if (x->side == 1 && c->state == CONN_REQUESTED) {
      if (c->listener != NULL && x->held_req == NULL)  /* raised: ATTACH came */
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
  emul_ring_close(x);
  if (qp != NULL) {
    if (unreachable)
      emul_cm_unreachable(qp, RNICPI_CM_REASON_NO_LISTENER);
    else
      emul_qp_cm_event(qp, RNICPI_CM_BROKEN, NULL, 0);
    emul_qp_set_error(qp, w);
  }
}

/* Messages one callback reads from a connection's socket (x_conn_ready). */
#define X_READ_BATCH 8

/* What the messages read in one callback leave to be made with the fabric
 * lock let go: the mappings asked and answered (emul_ring_map_io), at most
 * one per message. */
typedef struct {
  emul_map_io_t io[X_READ_BATCH];
  guint n;
} x_later_t;

static void
x_on_msg(emul_xconn_t *x, const x_msg_t *m, int *fds, int nfds, x_pre_t *pre, emul_work_t *w,
         x_later_t *later)
{
  switch (m->type) {
  case X_REQ:
    x_on_req(x, m, pre, w);
    break;
  case X_PROBE:
    x_on_probe(x, m, pre, w);
    break;
  case X_ATTACH:
    x_on_attach(x, m, pre, w);
    break;
  case X_REP:
    if (x->side == 0)
      x_on_rep(x, m, pre, w);
    else
      emul_ring_peer_violation(x, w, "a reply to a connection it did not request");
    break;
  case X_RTU:
    if (x->side == 1 && x->conn != NULL && x->conn->state == CONN_REPLIED && x->qp != NULL)
      x_established(x->qp, x->conn, m->pdata, m->pdata_len);
    else
      emul_ring_peer_violation(x, w, "a ready-to-use out of turn");
    break;
  case X_REJ:
    x_on_rej(x, m, w);
    break;
  case X_DOORBELL:
    break; /* the ring is drained below */
  case X_SPACE:
    emul_ring_space(x);
    /* A Read that waited for its answer's room goes on (emul_ring_exec_in). */
    if (x->qp != NULL && x->qp->x == x && x->qp->xin_rnr)
      emul_ring_run_in(x->qp, FALSE, w);
    break;
  case X_DISC:
  case X_BREAK:
    if (x->qp != NULL && x->qp->x == x && x->conn == NULL)
      emul_ring_answers_settle(x->qp, w);  /* answers it gave before it ended */
    emul_ring_peer_break(x, m, w);
    break;
  case X_MAP_REQ:
    if (!x->trusted) {
      /* It never had our table: it names keys it was not given. */
      emul_ring_peer_violation(x, w, "a request to map region %u, which only a trusted peer may make",
                               m->mr_index);
      break;
    }
    emul_ring_on_map_req(x, m, &later->io[later->n]);
    later->n++;
    break;
  case X_MAP_REP:
    if (emul_ring_on_map_rep(x, m, nfds == 1 ? fds[0] : -1, &later->io[later->n])) {
      fds[0] = -1;  /* the mapping's now */
      later->n++;
    }
    break;
  case X_SIDR_REQ:
    emul_ring_ud_on_svc_req(x, m, &pre->sock, w);
    break;
  default:
    emul_ring_peer_violation(x, w, "a socket message of unknown type %u", m->type);
    break;
  }
}

/* Receive one socket message without waiting, with up to 4 descriptors
 * (more are closed); recvmsg's result. */
ssize_t
emul_ring_recv_msg(int fd, x_msg_t *m, int *fds, int *nfds)
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

/* Messages read from a connection's socket with no lock held, handled
 * after under the fabric lock (x_conn_ready); the progress thread's. */
typedef struct {
  x_msg_t m;
  int fds[4];
  int nfds;
  ssize_t n;  /* recvmsg's result: 0 is the peer's EOF, < 0 an error */
  x_pre_t pre;
} x_rx_t;
static x_rx_t x_rx[X_READ_BATCH];

/* A message of the peer's (as x_conn_ready checks it before it trusts
 * one). */
static gboolean
x_rx_valid(const x_rx_t *r)
{
  return r->n >= (ssize_t) X_MSG_MIN && r->m.magic == X_MAGIC &&
         r->m.pdata_len <= (size_t) r->n - X_MSG_MIN;
}

/* Read what @x's socket holds, up to @max messages, an EOF or an error
 * ending the batch (no lock held: the connection's own `reading` keeps the
 * socket open meanwhile, emul_ring_msgs_flush). */
static guint
x_conn_read(emul_xconn_t *x, x_rx_t *rx, guint max)
{
  guint k = 0;
  g_mutex_lock(&x->mlock);
  gboolean open = !x->sock_close;
  x->sock_reading = open;
  g_mutex_unlock(&x->mlock);
  while (open && k < max) {
    x_rx_t *r = &rx[k];
    r->n = emul_ring_recv_msg(x->fd, &r->m, r->fds, &r->nfds);
    if (r->n < 0 && (errno == EAGAIN || errno == EINTR))
      break;
    if (r->n < 0 && errno == ECONNRESET)
      continue;  /* the peer closed with messages of ours unread: the error
                  * is reported once, ahead of what it sent before closing
                  * (its DISC or BREAK); read on, EOF comes after them */
    r->pre = (x_pre_t) { .seg = MAP_FAILED, .table = MAP_FAILED, .bell = -1, .sock = -1, .mem = -1 };
    /* A UD service request is answered on the socket after the connection
     * closed: duplicated while this read keeps it open. */
    if (x_rx_valid(r) && r->m.type == X_SIDR_REQ && x->side == 1)
      r->pre.sock = fcntl(x->fd, F_DUPFD_CLOEXEC, 0);
    k++;
    if (r->n <= 0)
      break;
  }
  if (open && emul_ring_sock_done(x, FALSE))
    x_sock_close(x);
  return k;
}

/* The peer's memfd @fd as @what (a connection segment, a region table):
 * at least @size bytes, for good (sealed against shrinking: a file that
 * shrinks under a mapping SIGBUSes whoever touches it), mapped with @prot;
 * MAP_FAILED with *@bad saying why not. */
static void *
x_memfd_map(int fd, size_t size, int prot, const char *what, const char **bad)
{
  int seals = fcntl(fd, F_GET_SEALS);
  struct stat st;
  if (seals < 0) {
    *bad = what;  /* not a memfd at all */
  } else if (!(seals & F_SEAL_SHRINK) && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
    *bad = what;
  } else if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t) st.st_size < size) {
    *bad = what;
  } else {
    void *m = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
      *bad = what;
    return m;
  }
  return MAP_FAILED;
}

/* Whether @fd is an eventfd (a bell): the peer's bell is only written to. */
static gboolean
x_is_eventfd(int fd)
{
  char path[64], link[64];
  g_snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof(link) - 1);
  if (n < 0)
    return FALSE;
  link[n] = '\0';
  return strcmp(link, "anon_inode:[eventfd]") == 0;
}

/* The descriptors each handshake message may carry (X_FD_*). */
static uint32_t
x_fds_allowed(uint32_t type)
{
  switch (type) {
  case X_REQ:
    return X_FD_SEG;
  case X_ATTACH:
  case X_REP:
    return X_FD_TABLE | X_FD_BELL;
  default:
    return 0;
  }
}

/* The system calls of handshake messages, made before the fabric lock:
 * the descriptors checked against what the message says it carries
 * (x_msg_t.fds), a REQ's segment, an ATTACH's or REP's region table
 * mapped and bell checked; the peer's memory probed (REQ, PROBE) and its
 * proof checked (PROBE, ATTACH).  A descriptor of the wrong kind, size or
 * seals is said in pre.bad, for the handler to break the connection. */
static void
x_conn_pre(emul_xconn_t *x, x_rx_t *rx, guint k)
{
  for (guint i = 0; i < k; i++) {
    x_rx_t *r = &rx[i];
    if (!x_rx_valid(r))
      continue;
    uint32_t type = r->m.type, mask = r->m.fds;
    gboolean req = type == X_REQ && x->side == 1;
    gboolean probe = type == X_PROBE && x->side == 0;
    gboolean attach = type == X_ATTACH && x->side == 1;
    gboolean rep = type == X_REP && x->side == 0;
    if (!req && !probe && !attach && !rep)
      continue;
    if ((mask & ~x_fds_allowed(type)) != 0 || (req && mask != X_FD_SEG) ||
        r->nfds != __builtin_popcount(mask)) {
      r->pre.bad = "with descriptors that do not match what it says it carries";
      continue;
    }
    int at = 0;
    if (mask & X_FD_SEG)
      r->pre.seg = x_memfd_map(r->fds[at++], X_SEG_SIZE, PROT_READ | PROT_WRITE,
                               "with a connection segment that is not a memfd of " G_STRINGIFY(X_SEG_SIZE)
                               " bytes at least, sealed against shrinking", &r->pre.bad);
    if (mask & X_FD_TABLE)
      r->pre.table = x_memfd_map(r->fds[at++], X_MR_CAP * sizeof(x_mr_entry_t), PROT_READ,
                                 "with a region table that is not a memfd of its size, sealed against "
                                 "shrinking", &r->pre.bad);
    if (mask & X_FD_BELL) {
      int fd = r->fds[at];
      if (x_is_eventfd(fd) && fcntl(fd, F_SETFL, O_NONBLOCK) == 0) {
        r->pre.bell = fd;  /* the handler's to take, else closed with pre */
        r->fds[at] = -1;
      } else
        r->pre.bad = "with a bell that is not an eventfd";
    }
    if (req || probe)
      r->pre.cma = x_probe(x, r->m.probe_addr, &r->pre.proof, &r->pre.mem);
    if (probe || attach)
      r->pre.trust = !x->no_trust && r->m.proof == x->nonce && x->peer_uid == geteuid();
  }
}

static void
x_pre_drop(x_pre_t *pre)
{
  if (pre->sock >= 0)
    close(pre->sock);  /* no answer: the requester sees the socket's EOF, "no service" */
  if (pre->seg != MAP_FAILED)
    munmap(pre->seg, X_SEG_SIZE);
  if (pre->table != MAP_FAILED)
    munmap(pre->table, X_MR_CAP * sizeof(x_mr_entry_t));
  if (pre->bell >= 0)
    close(pre->bell);
  if (pre->mem >= 0)
    close(pre->mem);
}

static void
x_rx_close(x_rx_t *rx, guint k)
{
  for (guint i = 0; i < k; i++) {
    x_pre_drop(&rx[i].pre);
    for (int j = 0; j < rx[i].nfds; j++) {
      if (rx[i].fds[j] >= 0)
        close(rx[i].fds[j]);
    }
  }
}

/* Whether the @k messages read are doorbells alone: the peer's frames
 * wait in the ring, and no message asks anything else. */
static gboolean
x_rx_bells_only(const x_rx_t *rx, guint k)
{
  for (guint i = 0; i < k; i++)
    if (!x_rx_valid(&rx[i]) || rx[i].m.type != X_DOORBELL || rx[i].nfds != 0)
      return FALSE;
  return k > 0;
}

/* A batch of doorbells (fabric lock held, taken by emul_ring_enter): the
 * ring is drained under its QP's link alone, as a busy poll drains it,
 * with the fabric lock let go meanwhile (emul_ring_drain_alone).  TRUE
 * when that was all (the lock let go), FALSE with the lock held again
 * when frames of other kinds wait, or the connection went meanwhile: the
 * full path takes over. */
static gboolean
x_bells_alone(emul_xconn_t *x, emul_work_t *w)
{
  emul_link_t *l = x->qp != NULL && x->seg != NULL ? x->qp->link : NULL;
  if (l == NULL || !l->ring)
    return FALSE;
  l->ref++;  /* the link outlives its QP meanwhile */
  emul_fabric_unlock();
  unsigned found = emul_ring_drain_alone(l, x, w);
  emul_ring_progress_lock();
  emul_link_unref(l);
  if ((found & X_DRAIN_FABRIC) || x->dead)
    return FALSE;
  emul_fabric_unlock();
  return TRUE;
}

/* The progress thread, when the socket has messages (or the peer closed
 * it): they are read with no lock held, then handled in order under the
 * fabric lock; what they leave to system calls (the mappings asked and
 * answered) is made after it.  Doorbells alone are the ring's: drained
 * under the QP's link as far as it goes (x_bells_alone).  @x is valid
 * throughout: the source holds a reference (x_conn_new). */
static gboolean
x_conn_ready(gint fd, GIOCondition cond, gpointer data)
{
  emul_xconn_t *x = data;
  (void) fd;
  (void) cond;
  guint k = x_conn_read(x, x_rx, X_READ_BATCH);
  x_conn_pre(x, x_rx, k);
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  /* Closed: its watch goes as the socket closes, with the lock let go
   * (x_sock_close); a callback meanwhile (the peer's EOF) ends it here. */
  if (!emul_ring_enter() || x->dead) {
    emul_fabric_unlock();
    x_rx_close(x_rx, k);
    return G_SOURCE_REMOVE;
  }
  if (x_rx_bells_only(x_rx, k) && x_bells_alone(x, &w)) {
    x_rx_close(x_rx, k);
    emul_work_deliver(&w);
    return G_SOURCE_CONTINUE;
  }
  emul_link_t *l = NULL;
  x_later_t later = { .n = 0 };
  /* The events of these messages leave after any of this connection's
   * that wait behind its socket messages (an ESTABLISHED behind the
   * attach answer, then the peer's DISC read in the same batch). */
  emul_events_after = x;
  for (guint i = 0; i < k && !x->dead; i++) {
    /* The QP's link too (its latency posts hold it alone), taken again
     * each time: the handshake may give the QP its link on the way. */
    emul_link_drop(l);
    l = x->qp != NULL ? emul_link_take(x->qp) : NULL;
    x_rx_t *r = &x_rx[i];
    /* Frames published before this message (or before the EOF) first:
     * teardown must not overtake the answers that preceded it. */
    if (!x->dead && x->qp != NULL && x->seg != NULL)
      emul_ring_drain(x, FALSE, &w);
    if (x->dead) {
      /* closed while draining, or while the link's wait let the lock go */
    } else if (r->n <= 0) {
      emul_ring_peer_died(x, &w);
    } else if (!x_rx_valid(r)) {
      emul_ring_peer_violation(x, &w, "a malformed socket message (%zd bytes, magic %08x)", r->n,
                               r->n >= (ssize_t) sizeof(uint32_t) ? r->m.magic : 0);
    } else {
      x_on_msg(x, &r->m, r->fds, r->nfds, &r->pre, &w, &later);
    }
  }
  emul_link_drop(l);
  if (!x->dead && x->qp != NULL && x->seg != NULL) {
    l = emul_link_take(x->qp);
    emul_ring_serve(x, &w);  /* may let the locks go for a long copy */
    if (!x->dead)
      emul_ring_pump(x);
    emul_link_drop(l);
  }
  emul_events_after = NULL;
  emul_fabric_unlock();
  x_rx_close(x_rx, k);
  emul_work_deliver(&w);
  for (guint i = 0; i < later.n; i++)
    emul_ring_map_io(x, &later.io[i]);
  return G_SOURCE_CONTINUE;
}

/* ---- teardown ---- */

/* This side ends the connection: tell the peer (DISC, or BREAK with the
 * request that failed, and @fault when the peer gets an event), release
 * it, report and flush locally. */
void
emul_ring_teardown(emul_qp_t *qp, emul_work_t *w, x_msg_type_t type, rnicpi_wc_status_t st,
                   uint64_t seq, const x_fault_t *fault, const rnicpi_async_cause_t *local,
                   const void *pdata, uint32_t len)
{
  emul_xconn_t *x = qp->x;
  if (x != NULL) {
    emul_ring_take_acks(qp, w);  /* what the peer executed completes, not flushed */
    emul_ring_pump(x);  /* answers already due go first, as far as they fit */
    x_msg_t m = { .type = type, .status = st, .seq = seq };
    if (fault != NULL) {
      m.fault = fault->f + 1;
      m.responder = fault->to_responder;
    }
    m.pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
    if (m.pdata_len > 0)
      memcpy(m.pdata, pdata, m.pdata_len);
    emul_ring_send_msg(x, &m, NULL, 0, 0);
    g_atomic_int_inc(&x->ref);
    emul_ring_close(x);
  }
  /* The events of the end leave after its message, the affiliated one
   * first: an application that exits on them has told the peer how the
   * connection ended. */
  emul_xconn_t *after = emul_events_after;
  emul_events_after = x;
  if (local != NULL)
    emul_qp_async(qp, *local);
  emul_qp_end(qp, type == X_DISC ? RNICPI_CM_DISCONNECTED : RNICPI_CM_BROKEN, NULL, 0, w);
  emul_events_after = after;
  if (x != NULL)
    emul_ring_conn_unref(x);
}

void
emul_ring_break(emul_qp_t *qp, emul_work_t *w, gboolean orderly, const void *pdata, uint32_t len)
{
  emul_ring_teardown(qp, w, orderly ? X_DISC : X_BREAK, 0, 0, NULL, NULL, pdata, len);
}

void
emul_ring_break_fault(emul_qp_t *qp, emul_work_t *w, emul_fault_t f)
{
  x_fault_t to = { .f = f, .to_responder = TRUE };
  rnicpi_async_cause_t mine = emul_fault_requester(f);
  emul_ring_teardown(qp, w, X_BREAK, 0, 0, &to, &mine, NULL, 0);
}

void
emul_ring_break_local(emul_qp_t *qp, emul_work_t *w, rnicpi_async_cause_t cause)
{
  emul_ring_teardown(qp, w, X_BREAK, 0, 0, NULL, &cause, NULL, 0);
}

void
emul_ring_peer_violation(emul_xconn_t *x, emul_work_t *w, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: process %d (uid %d) sent %s: its connection to process "
        "%d is broken (its work requests flush); a peer that runs this library never does",
        (int) x->peer_pid, (int) x->peer_uid, what, (int) getpid());
  g_free(what);
  emul_ring_peer_break(x, NULL, w);
}

void
emul_ring_timed_out(emul_xconn_t *x, gint64 stalled_us, emul_work_t *w)
{
  emul_qp_t *qp = x->qp;
  g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: process %d (uid %d) took nothing from QP %u's ring "
        "for %" G_GINT64_FORMAT " ms with frames waiting: its connection to process %d is broken "
        "(the oldest work request completes with a transport error, the rest flush); a stopped or "
        "traced peer does this: ITAPI_EMUL_TIMEOUT_MS sets the wait, 0 none",
        (int) x->peer_pid, (int) x->peer_uid, qp->base.qp_num, stalled_us / 1000, (int) getpid());
  emul_ring_take_acks(qp, w);  /* what the peer executed completes, not flushed */
  /* The oldest request fails, unless its long copy runs with the lock let
   * go: its copier completes it, flushed (flush_all, emul_qp.c). */
  emul_swqe_t *s = qp->xcopying ? NULL : emul_wq_pop(&qp->sq);
  if (s != NULL) {
    emul_complete_send(qp, &s->wr, RNICPI_WC_TRANSPORT_ERR, 0, w);
    emul_swqe_done(qp, s);
  }
  emul_ring_break(qp, w, FALSE, NULL, 0);
}

void
emul_ring_peer_died(emul_xconn_t *x, emul_work_t *w)
{
  if (x->qp != NULL && x->conn == NULL) {
    if (x->qp->x == x)
      emul_ring_answers_settle(x->qp, w);  /* answers it gave before it died */
    emul_ring_peer_break(x, NULL, w);
  } else {
    emul_ring_fail_pending(x, w);
  }
}

/* The peer ended the connection (m: its DISC or BREAK), died (m NULL, EOF)
 * or broke the protocol (m NULL). */
void
emul_ring_peer_break(emul_xconn_t *x, const x_msg_t *m, emul_work_t *w)
{
  if (x->conn != NULL) {
    emul_ring_fail_pending(x, w);
    return;
  }
  emul_qp_t *qp = x->qp;
  if (qp != NULL && qp->x == x)
    emul_ring_take_acks(qp, w);  /* what the peer executed completes, not flushed */
  emul_ring_close(x);
  if (qp == NULL)
    return;
  gboolean disc = m != NULL && m->type == X_DISC;
  if (m == NULL && qp->state == RNICPI_QPS_RTS)
    emul_qp_async(qp, RNICPI_AE_LLP); /* the peer died, or its ring broke the rules */
  if (m != NULL && m->type == X_BREAK) {
    if (m->fault > 0 && qp->state == RNICPI_QPS_RTS) { /* with its BROKEN below */
      emul_fault_t f = (emul_fault_t) (m->fault - 1);
      emul_qp_async(qp, m->responder ? emul_fault_responder(f) : emul_fault_requester(f));
    }
    emul_swqe_t *s = emul_wq_peek(&qp->sq);
    if (m->status != 0 && s != NULL && s->issued && s->seq == m->seq) {
      /* A responder's refusal is one of two (emul_fault_status); any other
       * word of the peer's is its operation error. */
      rnicpi_wc_status_t st = m->status == RNICPI_WC_REM_ACCESS_ERR ? RNICPI_WC_REM_ACCESS_ERR
                                                                    : RNICPI_WC_REM_OP_ERR;
      emul_wq_pop(&qp->sq);
      emul_complete_send(qp, &s->wr, st, 0, w);
      emul_wq_put(&qp->sq, s);
    }
  }
  emul_qp_end(qp, disc ? RNICPI_CM_DISCONNECTED : RNICPI_CM_BROKEN, disc ? m->pdata : NULL,
              disc ? m->pdata_len : 0, w);
}

