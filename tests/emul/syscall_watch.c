/*
 * Watches the system calls vp/emul makes (tests/emul/syscall_watch.h):
 * none may be made by a thread that holds the fabric lock (issue 26,
 * point 5: "no lock held across a copy or a system call").  At exit it
 * says, on stderr:
 *
 *   emul-syscalls: 0 under the fabric lock ()
 *
 * (the calls made under the lock named with their counts between the
 * parentheses), and the first call of each kind made under the lock is
 * named as it happens.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <glib.h>

#include "emul.h"
#include "syscall_watch.h"

/* Every call vp/emul makes that enters the kernel (nm of its archive: the
 * large-file names are what its objects call). */
static const char *const sc_names[SC_N] = {
  "sendmsg", "recvmsg", "recv",
  "accept4", "bind", "close", "closedir", "connect", "eventfd", "fclose", "fcntl", "fgets",
  "fopen", "fstat", "ftruncate", "getpid", "getrandom", "getsockopt", "listen",
  "memfd_create", "mmap", "munmap", "open", "opendir", "process_vm_readv",
  "process_vm_writev", "read", "readdir", "socket", "stat", "write", "poll",
  "g_source_attach", "g_source_destroy", "g_main_context_wakeup",
};
static gint sc_locked[SC_N];

void
syscall_watch_hit(int which)
{
  if (emul_fabric_mine && g_atomic_int_add(&sc_locked[which], 1) == 0)
    fprintf(stderr, "emul-syscalls: %s called under the fabric lock\n", sc_names[which]);
}

int
syscall_watch_locked(char **names)
{
  GString *t = g_string_new(NULL);
  int total = 0;
  for (int i = 0; i < SC_N; i++) {
    int n = g_atomic_int_get(&sc_locked[i]);
    if (n > 0)
      g_string_append_printf(t, "%s%s=%d", total > 0 ? " " : "", sc_names[i], n);
    total += n;
  }
  if (names != NULL)
    *names = g_string_free(t, FALSE);
  else
    g_string_free(t, TRUE);
  return total;
}

#define WATCH_VOID(name, which, params, args) \
  void __real_##name params;                      \
  void __wrap_##name params;                      \
  void __wrap_##name params                       \
  {                                               \
    syscall_watch_hit(which);                     \
    __real_##name args;                           \
  }

#define WATCH(ret, name, which, params, args) \
  ret __real_##name params;                   \
  ret __wrap_##name params;                   \
  ret __wrap_##name params                    \
  {                                           \
    syscall_watch_hit(which);                 \
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
WATCH(int, memfd_create, SC_MEMFD, (const char *n, unsigned f), (n, f))
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
WATCH(int, socket, SC_SOCKET, (int d, int t, int p), (d, t, p))
WATCH(int, stat64, SC_STAT, (const char *p, struct stat *st), (p, st))
WATCH(int, poll, SC_POLL, (struct pollfd *f, nfds_t n, int t), (f, n, t))
void (*syscall_watch_write_hook)(int fd);

ssize_t __real_write(int fd, const void *b, size_t n);
ssize_t __wrap_write(int fd, const void *b, size_t n);
ssize_t
__wrap_write(int fd, const void *b, size_t n)
{
  syscall_watch_hit(SC_WRITE);
  void (*hook)(int) = g_atomic_pointer_get(&syscall_watch_write_hook);
  if (hook != NULL)
    hook(fd);
  return __real_write(fd, b, n);
}

/* GLib writes the main context's wake-up eventfd inside these (adding or
 * removing a watched descriptor, or asked to): system calls vp/emul makes
 * through GLib. */
void (*syscall_watch_attach_hook)(GSource *s);

guint __real_g_source_attach(GSource *s, GMainContext *c);
guint __wrap_g_source_attach(GSource *s, GMainContext *c);
guint
__wrap_g_source_attach(GSource *s, GMainContext *c)
{
  syscall_watch_hit(SC_G_ATTACH);
  void (*hook)(GSource *) = g_atomic_pointer_get(&syscall_watch_attach_hook);
  if (hook != NULL)
    hook(s);
  return __real_g_source_attach(s, c);
}
WATCH_VOID(g_source_destroy, SC_G_DESTROY, (GSource *s), (s))
WATCH_VOID(g_main_context_wakeup, SC_G_WAKEUP, (GMainContext *c), (c))

/* The line goes to stderr, and is appended to the file $SYSCALL_WATCH_LOG
 * names, if any (a test whose child processes' stderr is not kept). */
static void __attribute__((destructor))
report(void)
{
  char *names = NULL;
  int total = syscall_watch_locked(&names);
  fprintf(stderr, "emul-syscalls: %d under the fabric lock (%s)\n", total, names);
  const char *log = getenv("SYSCALL_WATCH_LOG");
  FILE *f = log != NULL ? fopen(log, "a") : NULL;
  if (f != NULL) {
    fprintf(f, "emul-syscalls: %d under the fabric lock (%s)\n", total, names);
    fclose(f);
  }
  g_free(names);
}
