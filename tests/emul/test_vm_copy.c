/*
 * vp/emul's cross-memory attach Write (emul_ring_vm_copy into the peer):
 * the message's last byte goes in a local piece of its own, copied after
 * every other byte by a string instruction of its own.  The kernel copies
 * a piece with one string instruction, whose stores the CPU may make
 * visible out of order (Intel SDM vol. 3, "Out-of-Order Stores For String
 * Operations"): a peer polling the last byte of a Write, as
 * itapi-pingpong and perftest's write_lat do, could see it before bytes
 * ahead of it (vp/iwarp's recvmsg() placement did, in a fresh-clone CI of 6b0f311:
 * example-itapi-pingpong-loaded-iwarp0, byte 576 of a 4 KiB Write stale).
 *
 * Every process_vm_writev() call is watched (-Wl,--wrap); the copy is
 * made into this process itself, so the bytes that landed are checked
 * too.
 *
 * And the copy goes through the peer's pin alone (emul_ring_copy.c): none
 * without a pidfd, and none into or out of a process ID reused after the
 * pinned process exited (the reuse made on purpose: a child created with
 * clone3's set_tid at the dead one's ID, which needs CAP_SYS_ADMIN; the
 * case is skipped without it).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "emul.h"
#include "emul_ring.h"

/* What the watched calls did with the byte watched: in a local piece of
 * its own, the last of the call (good), or inside a longer piece (bad). */
static const uint8_t *watched;
static int alone, inside, calls;

ssize_t __real_process_vm_writev(pid_t pid, const struct iovec *l, unsigned long nl,
                                 const struct iovec *r, unsigned long nr, unsigned long flags);
ssize_t
__wrap_process_vm_writev(pid_t pid, const struct iovec *l, unsigned long nl, const struct iovec *r,
                         unsigned long nr, unsigned long flags)
{
  calls++;
  for (unsigned long i = 0; i < nl; i++) {
    const uint8_t *b = l[i].iov_base;
    if (watched >= b && watched < b + l[i].iov_len) {
      if (l[i].iov_len == 1 && i == nl - 1)
        alone++;
      else
        inside++;
    }
  }
  return __real_process_vm_writev(pid, l, nl, r, nr, flags);
}

/* @total bytes from local pieces of the lengths @ll into remote pieces of
 * the lengths @rl (0-terminated lists). */
static void
copy_case(const size_t *ll, const size_t *rl, size_t total)
{
  uint8_t *src = g_malloc(total), *dst = g_malloc0(total + 64);
  for (size_t i = 0; i < total; i++)
    src[i] = (uint8_t) (i * 7 + 3);
  struct iovec l[8], r[8];
  int nl = 0, nr = 0;
  size_t off = 0;
  for (; ll[nl] != 0; nl++, off += ll[nl - 1])
    l[nl] = (struct iovec) { src + off, ll[nl] };
  g_assert_cmpuint(off, ==, total);
  off = 0;
  for (; rl[nr] != 0; nr++, off += rl[nr - 1])
    r[nr] = (struct iovec) { dst + off, rl[nr] };
  g_assert_cmpuint(off, ==, total);
  watched = src + total - 1;
  alone = inside = calls = 0;
  int self = (int) syscall(SYS_pidfd_open, getpid(), 0);
  g_assert_cmpint(self, >=, 0);
  g_assert_true(emul_ring_vm_copy(getpid(), self, -1, TRUE, l, nl, r, nr));
  close(self);
  g_assert_cmpmem(dst, total, src, total);
  for (size_t i = total; i < total + 64; i++)
    g_assert_cmpuint(dst[i], ==, 0);  /* nothing past the pieces */
  g_assert_cmpint(inside, ==, 0);
  g_assert_cmpint(alone, ==, 1);  /* once, in a piece of its own */
  g_assert_cmpint(calls, >, 0);
  g_free(src);
  g_free(dst);
}

static void
test_one_piece(void)
{
  copy_case((const size_t[]) { 4096, 0 }, (const size_t[]) { 4096, 0 }, 4096);
  copy_case((const size_t[]) { 2, 0 }, (const size_t[]) { 2, 0 }, 2);
  copy_case((const size_t[]) { 1, 0 }, (const size_t[]) { 1, 0 }, 1);
}

static void
test_pieces(void)
{
  /* Local and remote pieces cut in different places; the last local piece
   * shorter than the last remote one, then longer. */
  copy_case((const size_t[]) { 1000, 3000, 96, 0 }, (const size_t[]) { 2048, 2048, 0 }, 4096);
  copy_case((const size_t[]) { 2048, 2048, 0 }, (const size_t[]) { 1000, 3000, 96, 0 }, 4096);
  copy_case((const size_t[]) { 65536, 1, 0 }, (const size_t[]) { 65537, 0 }, 65537);
}

/* ---- the pin ---- */

/* The word a child's copy of this process holds; the tests write it. */
static volatile uint64_t victim;

/* A child that tells its victim word on pipe @out once pipe @in has a
 * byte, then exits (also when the test's end of @in closes). */
static void G_GNUC_NORETURN
child_body(const int in[2], const int out[2])
{
  char c;
  close(in[1]);
  close(out[0]);
  if (read(in[0], &c, 1) == 1) {
    uint64_t v = victim;
    if (write(out[1], &v, sizeof(v)) != (ssize_t) sizeof(v))
      _exit(2);
  }
  _exit(0);
}

/* clone3(2)'s arguments, as far as set_tid (CLONE_ARGS_SIZE_VER1). */
struct clone_args_v1 {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
      set_tid_size;
};

/* A child at process ID @want (fork's semantics), running child_body; -1
 * with errno when the kernel refuses. */
static pid_t
child_at(pid_t want, const int in[2], const int out[2])
{
  struct clone_args_v1 a = { .exit_signal = SIGCHLD, .set_tid = (uint64_t) (uintptr_t) &want,
                             .set_tid_size = 1 };
  pid_t p = (pid_t) syscall(SYS_clone3, &a, sizeof(a));
  if (p == 0)
    child_body(in, out);
  return p;
}

static uint64_t
child_tell(int to, int from)
{
  uint64_t v = 0;
  g_assert_cmpint(write(to, "?", 1), ==, 1);
  g_assert_cmpint(read(from, &v, sizeof(v)), ==, (int) sizeof(v));
  return v;
}

static void
test_pin_none(void)
{
  g_test_summary("with no pidfd nothing is attached to, not even this process");
  uint64_t v = 0x1111, w = 0;
  struct iovec l = { &v, sizeof(v) }, r = { &w, sizeof(w) };
  calls = 0;
  errno = 0;
  g_assert_false(emul_ring_vm_copy(getpid(), -1, -1, TRUE, &l, 1, &r, 1));
  g_assert_cmpint(errno, ==, ESRCH);
  g_assert_false(emul_ring_vm_copy(getpid(), -1, -1, FALSE, &r, 1, &l, 1));
  g_assert_cmpint(calls, ==, 0);
  g_assert_cmpuint(w, ==, 0);
}

static void
test_pin_reused(void)
{
  g_test_summary("a process ID given to another process after the pinned one exited is neither written "
                 "nor read through the pin");
  int in[2], out[2];
  g_assert_cmpint(pipe(in), ==, 0);
  g_assert_cmpint(pipe(out), ==, 0);
  /* The peer: pinned, then gone and reaped. */
  pid_t peer = fork();
  g_assert_cmpint(peer, >=, 0);
  if (peer == 0)
    child_body(in, out);
  int pin = (int) syscall(SYS_pidfd_open, peer, 0);
  g_assert_cmpint(pin, >=, 0);
  int mem = emul_ring_peer_mem_open(peer);  /* as x_probe opens it, under the pin */
  g_assert_cmpint(mem, >=, 0);
  g_assert_true(emul_ring_peer_alive(pin));
  kill(peer, SIGKILL);
  g_assert_cmpint(waitpid(peer, NULL, 0), ==, peer);
  g_assert_false(emul_ring_peer_alive(pin));
  /* Another process at its ID. */
  pid_t other = child_at(peer, in, out);
  if (other < 0) {
    g_autofree char *why = g_strdup_printf("no process can be made at a chosen ID here (clone3 set_tid: %s)",
                                           g_strerror(errno));
    g_test_skip(why);
    close(pin);
    close(mem);
    return;
  }
  g_assert_cmpint(other, ==, peer);
  uint64_t v = 0xaaaaaaaaaaaaaaaa, got = 0;
  struct iovec mine = { &v, sizeof(v) }, theirs = { (void *) &victim, sizeof(victim) };
  calls = 0;
  errno = 0;
  g_assert_false(emul_ring_vm_copy(peer, pin, -1, TRUE, &mine, 1, &theirs, 1));
  g_assert_cmpint(errno, ==, ESRCH);
  g_assert_cmpint(calls, ==, 0);
  struct iovec into = { &got, sizeof(got) };
  errno = 0;
  g_assert_false(emul_ring_vm_copy(peer, pin, -1, FALSE, &into, 1, &theirs, 1));
  g_assert_cmpint(errno, ==, ESRCH);
  /* The memory file of the pinned process holds its address space, gone
   * with it: nothing through it either. */
  errno = 0;
  g_assert_false(emul_ring_vm_copy(peer, pin, mem, TRUE, &mine, 1, &theirs, 1));
  g_assert_cmpint(errno, ==, ESRCH);
  errno = 0;
  g_assert_false(emul_ring_vm_copy(peer, pin, mem, FALSE, &into, 1, &theirs, 1));
  g_assert_cmpint(errno, ==, ESRCH);
  g_assert_cmpint(calls, ==, 0);
  /* The ID does name a process we may write: through its own pin the word
   * lands, so a bare ID would have reached it. */
  int pin2 = (int) syscall(SYS_pidfd_open, other, 0);
  g_assert_cmpint(pin2, >=, 0);
  int mem2 = emul_ring_peer_mem_open(other);
  g_assert_cmpint(mem2, >=, 0);
  uint64_t mark = 0x5555555555555555, mark2 = 0x6666666666666666;
  struct iovec m = { &mark, sizeof(mark) }, m2 = { &mark2, sizeof(mark2) };
  g_assert_true(emul_ring_vm_copy(other, pin2, -1, TRUE, &m, 1, &theirs, 1));
  g_assert_true(emul_ring_vm_copy(other, pin2, mem2, FALSE, &into, 1, &theirs, 1));
  g_assert_cmphex(got, ==, mark);
  g_assert_true(emul_ring_vm_copy(other, pin2, mem2, TRUE, &m2, 1, &theirs, 1));
  g_assert_cmphex(child_tell(in[1], out[0]), ==, mark2);
  g_assert_cmpint(waitpid(other, NULL, 0), ==, other);
  close(pin);
  close(pin2);
  close(mem);
  close(mem2);
  for (int i = 0; i < 2; i++) {
    close(in[i]);
    close(out[i]);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/emul/vm-copy/pin/none", test_pin_none);
  g_test_add_func("/emul/vm-copy/pin/reused-pid", test_pin_reused);
  g_test_add_func("/emul/vm-copy/last-byte-alone/one-piece", test_one_piece);
  g_test_add_func("/emul/vm-copy/last-byte-alone/pieces", test_pieces);
  return g_test_run();
}
