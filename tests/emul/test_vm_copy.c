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
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <sys/uio.h>
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
  g_assert_true(emul_ring_vm_copy(getpid(), TRUE, l, nl, r, nr));
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

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/emul/vm-copy/last-byte-alone/one-piece", test_one_piece);
  g_test_add_func("/emul/vm-copy/last-byte-alone/pieces", test_pieces);
  return g_test_run();
}
