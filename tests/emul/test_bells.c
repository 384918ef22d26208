/*
 * vp/emul's doorbells against its fabric lock: a thread that owes a bell
 * (emul_ring_doorbell, rung when it lets its locks go) never waits for the
 * fabric lock before ringing it.  A teardown under the fabric lock waits
 * for every bell owed on its connection before the descriptors close
 * (emul_ring_bells_quiet); a sleeper woken beside it, which drained its
 * ring under the QP's link alone and then waited for the fabric lock
 * owing the acknowledgement's bell, kept the teardown spinning and was
 * kept waiting by it: both threads stuck for good (the cross-process
 * recv-length test in the bounce mode, about once in 150 runs on a loaded
 * host; CI of stop 47).
 *
 * Linked with libitapi's internals (the built-in emul among them): the
 * connection is a bare emul_xconn_t over a socket pair, no device.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <sys/socket.h>
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

static void
check_rung_before_wait(gboolean data_path)
{
  int sv[2];
  g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  emul_xconn_t *x = g_new0(emul_xconn_t, 1);
  x->fd = sv[0];
  x->peer_bell_fd = -1;
  owner_t o = { .x = x, .data_path = data_path };

  emul_fabric_lock();  /* the teardown's thread */
  GThread *t = g_thread_new("bell-owner", owner, &o);
  while (!g_atomic_int_get(&o.owes))
    g_usleep(1000);
  /* The owner now waits for the lock this thread holds: its bell must
   * have been rung, or emul_ring_bells_quiet below would spin for ever. */
  gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
  while (g_atomic_int_get(&x->bells_out) > 0 && g_get_monotonic_time() < end)
    g_usleep(1000);
  int owed = g_atomic_int_get(&x->bells_out);
  if (owed > 0)
    emul_fabric_unlock();  /* let the owner go before failing */
  g_assert_cmpint(owed, ==, 0);
  emul_ring_bells_quiet(x);  /* returns at once: nothing owed */
  g_assert_false(g_atomic_int_get(&o.locked));
  emul_fabric_unlock();
  g_thread_join(t);
  g_assert_true(g_atomic_int_get(&o.locked));

  /* The peer got the doorbell message, once. */
  x_msg_t m;
  ssize_t n = recv(sv[1], &m, sizeof m, MSG_DONTWAIT);
  g_assert_cmpint(n, ==, (ssize_t) X_MSG_MIN);
  g_assert_cmpuint(m.type, ==, X_DOORBELL);
  g_assert_cmpint(recv(sv[1], &m, sizeof m, MSG_DONTWAIT), ==, -1);
  close(sv[0]);
  close(sv[1]);
  g_free(x);
}

static void
test_fabric_lock(void)
{
  check_rung_before_wait(FALSE);
}

static void
test_data_path(void)
{
  check_rung_before_wait(TRUE);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/emul/bells/rung-before-fabric-lock", test_fabric_lock);
  g_test_add_func("/emul/bells/rung-before-data-path-lock", test_data_path);
  return g_test_run();
}
