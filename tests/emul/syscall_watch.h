/*
 * Watches the system calls vp/emul makes (tests/emul/syscall_watch.c):
 * linked into a test program with -Wl,--wrap for each call of
 * syscall_watch_calls in tests/emul/meson.build, it counts those made by a
 * thread that holds the fabric lock.  sendmsg, recvmsg and recv are the
 * program's own to wrap (its wrappers call syscall_watch_hit); the rest
 * are wrapped here.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef ITAPI_TESTS_SYSCALL_WATCH_H
#define ITAPI_TESTS_SYSCALL_WATCH_H

#include <glib.h>

enum {
  SC_SENDMSG, SC_RECVMSG, SC_RECV,
  SC_ACCEPT4, SC_BIND, SC_CLOSE, SC_CLOSEDIR, SC_CONNECT, SC_EVENTFD, SC_FCLOSE, SC_FCNTL,
  SC_FGETS, SC_FOPEN, SC_FSTAT, SC_FTRUNCATE, SC_GETPID, SC_GETRANDOM, SC_GETSOCKOPT,
  SC_LISTEN, SC_MEMFD, SC_MMAP, SC_MUNMAP, SC_OPEN, SC_OPENDIR, SC_VM_READ, SC_VM_WRITE, SC_READ,
  SC_READDIR, SC_SOCKET, SC_STAT, SC_WRITE, SC_POLL, SC_G_ATTACH, SC_G_DESTROY, SC_G_WAKEUP, SC_N
};

/* Call @which was made: counted when the calling thread holds the fabric
 * lock (the first of each kind said on stderr). */
void syscall_watch_hit(int which);
/* The calls made under the fabric lock so far, and (into @names, when
 * not NULL) which, as "name=count ..." (free with g_free). */
int syscall_watch_locked(char **names);
/* Called (when set) before each g_source_attach, by the attaching thread,
 * with no lock of the watch's: a test delays a watch's start with it. */
extern void (*syscall_watch_attach_hook)(GSource *s);
/* Called (when set) before each write() vp/emul makes, by the writing
 * thread: a test holds a thread there. */
extern void (*syscall_watch_write_hook)(int fd);

#endif
