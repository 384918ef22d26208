/*
 * vp/emul's doorbells and socket messages against its fabric lock.
 *
 * A thread that owes a bell (emul_ring_doorbell, rung when it lets its
 * locks go) never waits for the fabric lock before ringing it: a sleeper
 * woken beside a teardown, which drained its ring under the QP's link
 * alone and then waited for the fabric lock owing the acknowledgement's
 * bell, once kept the teardown (which waited for every bell owed on its
 * connection) spinning and was kept waiting by it: both threads stuck for
 * good (the cross-process recv-length test in the bounce mode, about once
 * in 150 runs on a loaded host; CI of stop 47).
 *
 * A connection's socket messages (handshake, mapping requests, teardown)
 * queued under the fabric lock leave only once it is let go, in order,
 * with the descriptors they carry, and the socket closes after the last
 * (issue 26, point 5: no system call under the fabric lock), however many
 * connections one section owes.
 *
 * Linked with libitapi's internals (the built-in emul among them): the
 * connection is a bare emul_xconn_t over a socket pair, no device.
 *
 * SPDX-License-Identifier: MIT
 */
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <glib.h>

#include "emul.h"
#include "emul_ring.h"

typedef struct {
  emul_xconn_t *x;
  gboolean data_path;  /* emul_lock_data_path rather than emul_fabric_lock */
  gint owes;           /* set once the bell is owed, before the wait */
  gint locked;         /* set once the lock was taken */
} owner_t;

/* A thread that owes @x a bell (as after a drain under a link alone) and
 * then waits for the fabric lock. */
static gpointer
owner(gpointer data)
{
  owner_t *o = data;
  emul_ring_doorbell(o->x, X_BELL_THREAD);
  g_atomic_int_set(&o->owes, 1);
  if (o->data_path)
    emul_lock_data_path();
  else
    emul_fabric_lock();
  g_atomic_int_set(&o->locked, 1);
  emul_fabric_unlock();
  return NULL;
}

/* A bare connection over one end of a socket pair: the other end, the
 * peer's, in *@peer. */
static emul_xconn_t *
conn_new(int *peer)
{
  int sv[2];
  g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  emul_xconn_t *x = g_new0(emul_xconn_t, 1);
  x->ref = 1;
  x->fd = sv[0];
  x->bell_fd = -1;
  x->peer_bell_fd = -1;
  x->peer_pidfd = -1;
  x->peer_mem = -1;
  g_mutex_init(&x->mlock);
  g_queue_init(&x->msgs);
  *peer = sv[1];
  return x;
}

/* The next message on @fd within @ms milliseconds (its length, -1 for
 * none), and the descriptor it carried in *@got (or -1). */
static ssize_t
next_msg(int fd, x_msg_t *m, int ms, int *got)
{
  struct pollfd p = { .fd = fd, .events = POLLIN };
  int fds[4], nfds = 0;
  *got = -1;
  if (poll(&p, 1, ms) != 1)
    return -1;
  ssize_t n = emul_ring_recv_msg(fd, m, fds, &nfds);
  for (int i = 0; i < nfds; i++) {
    if (i == 0)
      *got = fds[0];
    else
      close(fds[i]);
  }
  return n;
}

static void
test_rung_before_wait(gconstpointer data)
{
  gboolean data_path = GPOINTER_TO_INT(data);
  int peer;
  emul_xconn_t *x = conn_new(&peer);
  owner_t o = { .x = x, .data_path = data_path };

  emul_fabric_lock();  /* the teardown's thread */
  GThread *t = g_thread_new("bell-owner", owner, &o);
  while (!g_atomic_int_get(&o.owes))
    g_usleep(1000);
  /* The owner now waits for the lock this thread holds: its bell must
   * have been rung all the same, the doorbell message sent. */
  x_msg_t m;
  int got;
  ssize_t n = next_msg(peer, &m, 5000, &got);
  gboolean locked = g_atomic_int_get(&o.locked);
  emul_fabric_unlock();  /* let the owner go before any check fails */
  g_thread_join(t);
  g_assert_cmpint(n, ==, (ssize_t) X_MSG_MIN);
  g_assert_cmpuint(m.type, ==, X_DOORBELL);
  g_assert_cmpint(got, ==, -1);
  g_assert_false(locked);
  g_assert_true(g_atomic_int_get(&o.locked));
  /* Once: nothing more came, and the owner's reference went with it. */
  g_assert_cmpint(next_msg(peer, &m, 0, &got), ==, -1);
  g_assert_cmpint(g_atomic_int_get(&x->ref), ==, 1);
  emul_ring_conn_unref(x);
  close(peer);
}

/* Messages queued under the fabric lock: none leaves while it is held;
 * once it goes they arrive in order, a doorbell owed after them behind
 * them, the descriptor given to one with it (and closed here), and the
 * socket closes after the last. */
static void
test_msgs_after_lock(void)
{
  int peer;
  emul_xconn_t *x = conn_new(&peer);
  int pipefd[2];
  g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);

  emul_fabric_lock();
  x_msg_t rej = { .type = X_REJ, .pdata_len = 3 };
  memcpy(rej.pdata, "abc", 3);
  emul_ring_send_msg(x, &rej, &pipefd[1], 1, 1u);  /* the write end is the message's */
  emul_ring_doorbell(x, X_BELL_THREAD);
  x_msg_t m;
  int got;
  ssize_t early = next_msg(peer, &m, 100, &got);
  emul_fabric_unlock();
  g_assert_cmpint(early, ==, -1);  /* nothing sent under the lock */

  g_assert_cmpint(next_msg(peer, &m, 5000, &got), ==, (ssize_t) X_MSG_MIN + 3);
  g_assert_cmpuint(m.type, ==, X_REJ);
  g_assert_cmpmem(m.pdata, 3, "abc", 3);
  g_assert_cmpint(got, >=, 0);
  /* Our copy of the write end was closed once sent: with the copy that
   * came closed too, the pipe's reader sees its end. */
  close(got);
  char c;
  g_assert_cmpint(read(pipefd[0], &c, 1), ==, 0);
  close(pipefd[0]);
  g_assert_cmpint(next_msg(peer, &m, 5000, &got), ==, (ssize_t) X_MSG_MIN);
  g_assert_cmpuint(m.type, ==, X_DOORBELL);

  /* A teardown: its message, then the socket's close (as emul_ring_close)
   * and a doorbell owed after it, which a closing socket no longer needs. */
  emul_fabric_lock();
  x_msg_t disc = { .type = X_DISC, .seq = 77 };
  emul_ring_send_msg(x, &disc, NULL, 0, 0);
  g_mutex_lock(&x->mlock);
  x->sock_close = TRUE;
  g_mutex_unlock(&x->mlock);
  emul_ring_doorbell(x, X_BELL_MSGS);
  emul_ring_doorbell(x, X_BELL_THREAD);
  early = next_msg(peer, &m, 100, &got);
  emul_fabric_unlock();
  g_assert_cmpint(early, ==, -1);
  g_assert_cmpint(next_msg(peer, &m, 5000, &got), ==, (ssize_t) X_MSG_MIN);
  g_assert_cmpuint(m.type, ==, X_DISC);
  g_assert_cmpuint(m.seq, ==, 77);
  g_assert_cmpint(next_msg(peer, &m, 5000, &got), ==, 0);  /* EOF: closed after it */
  g_assert_true(x->sock_closed);

  /* Nothing joins a closed connection's messages; a given descriptor is
   * closed all the same. */
  g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
  emul_fabric_lock();
  emul_ring_send_msg(x, &disc, &pipefd[1], 1, 1u);
  emul_fabric_unlock();
  g_assert_cmpint(read(pipefd[0], &c, 1), ==, 0);
  close(pipefd[0]);
  g_assert_cmpint(g_atomic_int_get(&x->ref), ==, 1);
  emul_ring_conn_unref(x);
  close(peer);
}

/* Bells owed to more connections in one section than the thread keeps in
 * its own storage (8): none is rung under the lock, each once after it,
 * and the references the list held go with it.  Twice, so that the
 * second section reuses the array the first one grew. */
#define MANY_CONNS 40
static void
test_many_after_lock(void)
{
  emul_xconn_t *x[MANY_CONNS];
  int peer[MANY_CONNS];
  for (int i = 0; i < MANY_CONNS; i++)
    x[i] = conn_new(&peer[i]);
  for (int round = 0; round < 2; round++) {
    emul_fabric_lock();
    for (int i = 0; i < MANY_CONNS; i++) {
      emul_ring_doorbell(x[i], X_BELL_THREAD);
      emul_ring_doorbell(x[i], X_BELL_THREAD);  /* owed twice, rung once */
    }
    int early = 0;
    for (int i = 0; i < MANY_CONNS; i++) {
      struct pollfd p = { .fd = peer[i], .events = POLLIN };
      early += poll(&p, 1, 0) == 1;
    }
    emul_fabric_unlock();
    g_assert_cmpint(early, ==, 0);
    for (int i = 0; i < MANY_CONNS; i++) {
      x_msg_t m;
      int got;
      g_assert_cmpint(next_msg(peer[i], &m, 5000, &got), ==, (ssize_t) X_MSG_MIN);
      g_assert_cmpuint(m.type, ==, X_DOORBELL);
      g_assert_cmpint(next_msg(peer[i], &m, 0, &got), ==, -1);
      g_assert_cmpint(g_atomic_int_get(&x[i]->ref), ==, 1);
    }
  }
  for (int i = 0; i < MANY_CONNS; i++) {
    emul_ring_conn_unref(x[i]);
    close(peer[i]);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/emul/bells/rung-before-fabric-lock", GINT_TO_POINTER(FALSE),
                       test_rung_before_wait);
  g_test_add_data_func("/emul/bells/rung-before-data-path-lock", GINT_TO_POINTER(TRUE),
                       test_rung_before_wait);
  g_test_add_func("/emul/bells/messages-after-lock", test_msgs_after_lock);
  g_test_add_func("/emul/bells/many-after-lock", test_many_after_lock);
  return g_test_run();
}
