/*
 * Watches every socket message vp/emul sends a connection's peer process,
 * and every one it reads from it (an x_msg_t: handshake, doorbell, mapping
 * request and answer, teardown), linked into a program with
 * tests/emul/syscall_watch.c: they are queued under the fabric lock and
 * leave as it goes (emul_ring_send_msg), and the progress thread reads them
 * before it takes the lock (emul_ring_conn_ready).  At exit it says, on stderr,
 *
 *   emul-msgs: 12 sent, 0 under the fabric lock (types sent: 1 5 6 ...); 9 read, 0 under the fabric lock
 *
 * and the first one sent or read under the lock is named as it happens.
 * Every sendmsg, recvmsg and recv is counted by syscall_watch_hit too.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <glib.h>

#include "emul.h"
#include "emul_ring.h"
#include "syscall_watch.h"

#define TYPES 32
static gint sent, locked;
static gint by_type[TYPES];

ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t
__wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
  syscall_watch_hit(SC_SENDMSG);
  x_msg_t h;
  if (m->msg_iovlen > 0 && m->msg_iov[0].iov_len >= X_MSG_MIN) {
    memcpy(&h, m->msg_iov[0].iov_base, X_MSG_MIN);
    if (h.magic == X_MAGIC) {
      g_atomic_int_inc(&sent);
      g_atomic_int_inc(&by_type[h.type % TYPES]);
      if (emul_fabric_mine && g_atomic_int_add(&locked, 1) == 0)
        fprintf(stderr, "emul-msgs: socket message of type %u sent under the fabric lock\n",
                h.type);
    }
  }
  return __real_sendmsg(fd, m, flags);
}

static gint got, got_locked;

ssize_t __real_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t
__wrap_recvmsg(int fd, struct msghdr *m, int flags)
{
  syscall_watch_hit(SC_RECVMSG);
  ssize_t n = __real_recvmsg(fd, m, flags);
  x_msg_t h;
  if (n >= (ssize_t) X_MSG_MIN && m->msg_iovlen > 0 && m->msg_iov[0].iov_len >= X_MSG_MIN) {
    memcpy(&h, m->msg_iov[0].iov_base, X_MSG_MIN);
    if (h.magic == X_MAGIC) {
      g_atomic_int_inc(&got);
      if (emul_fabric_mine && g_atomic_int_add(&got_locked, 1) == 0)
        fprintf(stderr, "emul-msgs: socket message of type %u read under the fabric lock\n",
                h.type);
    }
  }
  return n;
}

ssize_t __real_recv(int fd, void *b, size_t n, int f);
ssize_t __wrap_recv(int fd, void *b, size_t n, int f);
ssize_t
__wrap_recv(int fd, void *b, size_t n, int f)
{
  syscall_watch_hit(SC_RECV);
  return __real_recv(fd, b, n, f);
}

static void __attribute__((destructor))
report(void)
{
  GString *t = g_string_new(NULL);
  for (int i = 0; i < TYPES; i++) {
    if (g_atomic_int_get(&by_type[i]) > 0)
      g_string_append_printf(t, " %d", i);
  }
  fprintf(stderr, "emul-msgs: %d sent, %d under the fabric lock (types sent:%s); "
          "%d read, %d under the fabric lock\n", g_atomic_int_get(&sent),
          g_atomic_int_get(&locked), t->str, g_atomic_int_get(&got), g_atomic_int_get(&got_locked));
  g_string_free(t, TRUE);
}
