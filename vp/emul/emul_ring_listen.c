/*
 * vp/emul across processes: listeners.  A listener of a port binds the
 * abstract socket "itapi-emul/<port>" before it takes the fabric lock
 * (emul_ring_listen_open), and the progress thread watches it: the
 * connection requests waiting there are accepted with no lock held, each
 * with its peer's process pinned, a bell and a nonce, and made
 * connections under the lock, no more than emul_ring_pending_max of them
 * waiting for their consumer's answer.  An unlisten refuses the requests
 * nobody answered, as a closed port would.  The handshake that follows is
 * emul_ring_cm.c's.  Design: emul_ring.h, "CM".
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib-unix.h>

#include "emul_ring.h"

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
    pid[n] = emul_ring_peer_cred(c[n], &uid[n]);
    pidfd[n] = emul_ring_peer_pin(c[n], pid[n]);
    bell[n] = emul_ring_bell_new();
    nonce[n] = emul_ring_nonce_new();
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
      emul_xconn_t *x = emul_ring_conn_new(c[i], 1, pid[i], pidfd[i], uid[i], nonce[i], bell[i],
                                           &s->l->knobs);
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
  l->knobs = emul_ring_knobs_read();
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
