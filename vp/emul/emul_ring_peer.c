/*
 * vp/emul: the peer process of a connection, pinned.  Design: emul_ring.h,
 * "Payload"; emul_ring_cm.c, "Trust".
 *
 * The kernel names the peer by a process ID (SO_PEERCRED), and cross-memory
 * attach (process_vm_readv/writev) takes one; but a process ID is reused
 * once its process exits and is reaped, and a connection's socket outlives
 * its process when another one holds it (a child that inherited it).  So
 * the peer is pinned by a pidfd from the moment its identity is known (the
 * socket's accept or connect), before the proof of attach is read
 * (x_probe): a pidfd opened before that read and not signalled after it
 * names the process the proof came from.  Then:
 * - a short copy goes through the peer's /proc/PID/mem, opened before the
 *   proof was read and so the pinned process's: that file holds the
 *   process's address space itself, not its ID, and reads and writes
 *   nothing once the process exited (one system call, no look at the pin);
 * - no other attach call is made with a pidfd that signalled the process's exit:
 *   it is looked at just before each call into the peer (a Write) and just
 *   after each call out of it (a Read, whose bytes are then thrown away),
 *   so what a call touched is the pinned process's (a write is left the
 *   window of one system call's entry, in which the process would have to
 *   exit, be reaped and its ID be given out again);
 * - the progress thread watches the pidfd: the pinned process's exit ends
 *   the connection as its death does (emul_ring_peer_died), whoever still
 *   holds the socket;
 * - without a pidfd (a kernel before 5.3, or a sandbox that forbids it)
 *   this process never attaches to that peer: its payloads go through the
 *   bounce ring, and the peer gets no proof from it.  A bare process ID is
 *   never used.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emul_ring.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  /* Linux 6.5 */
#endif

int
emul_ring_peer_pin(int sock, pid_t pid)
{
  int fd = -1;
  socklen_t len = sizeof(fd);
  /* The socket's own peer (Linux 6.5): no window in which the ID could
   * have gone to another process since the peer connected. */
  if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0)
    return fd;
  /* An older kernel: the ID as SO_PEERCRED gave it.  A peer already gone
   * (ESRCH and the like) is not looked up again by its number. */
  if (errno != ENOPROTOOPT && errno != EINVAL)
    return -1;
  if (pid <= 0) {
    errno = ESRCH;
    return -1;
  }
#ifdef SYS_pidfd_open
  return (int) syscall(SYS_pidfd_open, pid, 0);
#else
  errno = ENOSYS;
  return -1;
#endif
}

int
emul_ring_peer_mem_open(pid_t pid)
{
  char path[32];
  g_snprintf(path, sizeof(path), "/proc/%d/mem", (int) pid);
  return open(path, O_RDWR | O_CLOEXEC);
}

gboolean
emul_ring_peer_alive(int pidfd)
{
  if (pidfd < 0)
    return FALSE;
  struct pollfd p = { .fd = pidfd, .events = POLLIN };
  int n;
  while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR)
    ;
  return n == 0;  /* readable: the process exited */
}

/* The progress thread, when the pinned process exited: the connection ends
 * as at the peer's death (its socket's EOF), the frames it published
 * before taken first. */
static gboolean
x_peer_exited(gint fd, GIOCondition cond, gpointer data)
{
  emul_xconn_t *x = data;  /* the watch's reference keeps it */
  (void) fd;
  (void) cond;
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  if (emul_ring_enter() && !x->dead) {
    g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: process %d exited while its connection's socket stays "
          "open (another process holds it): the connection ends as at its death", (int) x->peer_pid);
    emul_link_t *l = x->qp != NULL ? emul_link_take(x->qp) : NULL;
    if (!x->dead && x->qp != NULL && x->seg != NULL)
      emul_ring_drain(x, FALSE, &w);
    if (!x->dead)
      emul_ring_peer_died(x, &w);
    emul_link_drop(l);
  }
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return G_SOURCE_REMOVE;
}

void
emul_ring_peer_watch_new(emul_xconn_t *x)
{
  if (x->peer_pidfd < 0)
    return;
  g_atomic_int_inc(&x->ref);  /* the watch's */
  x->pid_src = emul_ring_watch_new(x->peer_pidfd, G_IO_IN, x_peer_exited, x,
                                   (GDestroyNotify) emul_ring_conn_unref);
}
