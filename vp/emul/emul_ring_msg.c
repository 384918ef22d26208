/*
 * vp/emul across processes: a connection's socket and its messages
 * (x_msg_t: the handshake, doorbells, mappings, teardown).  They leave in
 * order with the fabric lock let go, one thread sending at a time; a
 * message other than a doorbell waits for room in a full socket.  The
 * progress thread reads them with no lock held, checks and maps the
 * descriptors they carry and probes the peer's memory (emul_ring_cm.c,
 * Trust), then hands them, in order, to emul_ring_on_msg under the fabric
 * lock.  The socket's last user, its sender or its reader, closes it.
 * Also the abstract socket addresses, dialled and listened on (by
 * emul_ring_cm.c, emul_ring_listen.c and emul_ring_ud.c).  Design:
 * emul_ring.h, "CM".
 *
 * Rules:
 * - no system call on a connection's socket is made under the fabric
 *   lock: a message is queued under it and sent once it is let go;
 * - socket callbacks run on the progress thread and enter with
 *   emul_ring_enter (emul_progress.c); a connection's watch holds a
 *   reference to it, so a callback never sees a freed xconn;
 * - no call here blocks on a peer: sockets are non-blocking, and a
 *   message waits for a full socket's room on the progress thread.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "emul_ring.h"

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

/* ---- the socket's messages ---- */

gint emul_ring_msgs_owed;

void
emul_ring_sockmsg_drop(x_sockmsg_t *e)
{
  for (int i = 0; i < e->nfds; i++) {
    if (e->given & (1u << i))
      close(e->fds[i]);
  }
}

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
    emul_ring_sockmsg_drop(e);
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
  emul_ring_sockmsg_drop(e);
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
    emul_ring_sockmsg_drop(first);
    first = NULL;
  } else if (first != NULL && (x->msending || !emul_queue_empty(&x->msgs))) {
    const x_sockmsg_t *t = g_queue_peek_tail(&x->msgs);
    gboolean bell = first->m.type == X_DOORBELL || first->m.type == X_SPACE;
    if (bell && t != NULL && t->m.type == first->m.type)
      emul_ring_sockmsg_drop(first);  /* one waiting wakes the peer as well */
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
  /* Non-blocking: a full buffer holds doorbells the peer has yet to
   * read; the queue's sender decides what waits for room and what is
   * dropped (x_sockmsg_send). */
  ssize_t n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
  return n == (ssize_t) iov.iov_len;
}

/* ---- the progress thread's reading ---- */

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

static gboolean x_said_bounce;

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
   * lives after it: then it is the one the word came from (emul_ring_copy.c).
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

/* Messages read from a connection's socket with no lock held, handled
 * after under the fabric lock (emul_ring_conn_ready); the progress thread's. */
typedef struct {
  x_msg_t m;
  int fds[4];
  int nfds;
  ssize_t n;  /* recvmsg's result: 0 is the peer's EOF, < 0 an error */
  x_pre_t pre;
} x_rx_t;
static x_rx_t x_rx[X_READ_BATCH];

/* A message of the peer's (as emul_ring_conn_ready checks it before it trusts
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
 * throughout: the source holds a reference (emul_ring_conn_new). */
gboolean
emul_ring_conn_ready(gint fd, GIOCondition cond, gpointer data)
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
      emul_ring_on_msg(x, &r->m, r->fds, r->nfds, &r->pre, &w, &later);
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
