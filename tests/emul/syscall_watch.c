/*
 * Watches the system calls vp/emul makes, linked into a program with
 * -Wl,--wrap for each (tests/emul/meson.build): none may be made by a
 * thread that holds the fabric lock (issue 26, point 5: "no lock held
 * across a copy or a system call").  Every socket message vp/emul sends a
 * connection's peer process, and every one it reads from it (an x_msg_t:
 * handshake, doorbell, mapping request and answer, teardown), is counted
 * too: they are queued under the lock and leave as it goes
 * (emul_ring_send_msg), and the progress thread reads them before it takes
 * the lock (x_conn_ready); the handshake's other calls (the listener's
 * bind and accept, the connect's socket, segment and bell, the mappings
 * of the peer's segment and table, the probe of its memory) are made
 * before the lock or after it.  At exit it says, on stderr:
 *
 *   emul-msgs: 12 sent, 0 under the fabric lock (types sent: 1 5 6 ...); 9 read, 0 under the fabric lock
 *   emul-syscalls: 0 under the fabric lock ()
 *
 * (the calls made under the lock named with their counts between the
 * parentheses), and the first message sent or read under the lock, and
 * the first call of each kind, are named as they happen.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <glib.h>

#include "emul.h"
#include "emul_ring.h"

#define TYPES 32
static gint sent, locked;
static gint by_type[TYPES];

ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t
__wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
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
ssize_t
__wrap_recvmsg(int fd, struct msghdr *m, int flags)
{
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

/* Every other call vp/emul makes that enters the kernel (nm of its
 * archive: the large-file names are what its objects call). */
enum {
  SC_ACCEPT4, SC_BIND, SC_CLOSE, SC_CLOSEDIR, SC_CONNECT, SC_EVENTFD, SC_FCLOSE, SC_FCNTL,
  SC_FGETS, SC_FOPEN, SC_FSTAT, SC_FTRUNCATE, SC_GETPID, SC_GETRANDOM, SC_GETSOCKOPT,
  SC_LISTEN, SC_MMAP, SC_MUNMAP, SC_OPEN, SC_OPENDIR, SC_VM_READ, SC_VM_WRITE, SC_READ,
  SC_READDIR, SC_RECV, SC_SOCKET, SC_STAT, SC_WRITE, SC_N
};
static const char *const sc_names[SC_N] = {
  "accept4", "bind", "close", "closedir", "connect", "eventfd", "fclose", "fcntl", "fgets",
  "fopen", "fstat", "ftruncate", "getpid", "getrandom", "getsockopt", "listen", "mmap",
  "munmap", "open", "opendir", "process_vm_readv", "process_vm_writev", "read", "readdir",
  "recv", "socket", "stat", "write",
};
static gint sc_locked[SC_N];

static void
sc(int which)
{
  if (emul_fabric_mine && g_atomic_int_add(&sc_locked[which], 1) == 0)
    fprintf(stderr, "emul-syscalls: %s called under the fabric lock\n", sc_names[which]);
}

#define WATCH(ret, name, which, params, args) \
  ret __real_##name params;                   \
  ret __wrap_##name params;                   \
  ret __wrap_##name params                    \
  {                                           \
    sc(which);                                \
    return __real_##name args;                \
  }

WATCH(int, accept4, SC_ACCEPT4, (int fd, struct sockaddr *a, socklen_t *l, int f), (fd, a, l, f))
WATCH(int, bind, SC_BIND, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
WATCH(int, close, SC_CLOSE, (int fd), (fd))
WATCH(int, closedir, SC_CLOSEDIR, (DIR *d), (d))
WATCH(int, connect, SC_CONNECT, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
WATCH(int, eventfd, SC_EVENTFD, (unsigned v, int f), (v, f))
WATCH(int, fclose, SC_FCLOSE, (FILE *f), (f))
WATCH(int, fcntl64, SC_FCNTL, (int fd, int c, long a), (fd, c, a))
WATCH(char *, fgets, SC_FGETS, (char *b, int n, FILE *f), (b, n, f))
WATCH(FILE *, fopen64, SC_FOPEN, (const char *p, const char *m), (p, m))
WATCH(int, fstat64, SC_FSTAT, (int fd, struct stat *st), (fd, st))
WATCH(int, ftruncate64, SC_FTRUNCATE, (int fd, off_t l), (fd, l))
WATCH(pid_t, getpid, SC_GETPID, (void), ())
WATCH(ssize_t, getrandom, SC_GETRANDOM, (void *b, size_t n, unsigned f), (b, n, f))
WATCH(int, getsockopt, SC_GETSOCKOPT, (int fd, int l, int o, void *v, socklen_t *n), (fd, l, o, v, n))
WATCH(int, listen, SC_LISTEN, (int fd, int n), (fd, n))
WATCH(void *, mmap64, SC_MMAP, (void *a, size_t l, int p, int f, int fd, off_t o), (a, l, p, f, fd, o))
WATCH(int, munmap, SC_MUNMAP, (void *a, size_t l), (a, l))
WATCH(int, open64, SC_OPEN, (const char *p, int f, int m), (p, f, m))
WATCH(DIR *, opendir, SC_OPENDIR, (const char *p), (p))
WATCH(ssize_t, process_vm_readv, SC_VM_READ,
      (pid_t p, const struct iovec *l, unsigned long nl, const struct iovec *r, unsigned long nr,
       unsigned long f), (p, l, nl, r, nr, f))
WATCH(ssize_t, process_vm_writev, SC_VM_WRITE,
      (pid_t p, const struct iovec *l, unsigned long nl, const struct iovec *r, unsigned long nr,
       unsigned long f), (p, l, nl, r, nr, f))
WATCH(ssize_t, read, SC_READ, (int fd, void *b, size_t n), (fd, b, n))
WATCH(struct dirent *, readdir64, SC_READDIR, (DIR *d), (d))
WATCH(ssize_t, recv, SC_RECV, (int fd, void *b, size_t n, int f), (fd, b, n, f))
WATCH(int, socket, SC_SOCKET, (int d, int t, int p), (d, t, p))
WATCH(int, stat64, SC_STAT, (const char *p, struct stat *st), (p, st))
WATCH(ssize_t, write, SC_WRITE, (int fd, const void *b, size_t n), (fd, b, n))

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
  g_string_truncate(t, 0);
  int total = 0;
  for (int i = 0; i < SC_N; i++) {
    int n = g_atomic_int_get(&sc_locked[i]);
    if (n > 0)
      g_string_append_printf(t, "%s%s=%d", total > 0 ? " " : "", sc_names[i], n);
    total += n;
  }
  fprintf(stderr, "emul-syscalls: %d under the fabric lock (%s)\n", total, t->str);
  g_string_free(t, TRUE);
}
