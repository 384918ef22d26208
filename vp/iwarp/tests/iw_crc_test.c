/*
 * vp/iwarp CRC32c against a bit-at-a-time reference: lengths around every
 * threshold of the implementations (8-byte alignment, the 256 and 4096-byte
 * streams, the 1 KiB floor and 256-byte steps of the folding version), every
 * start offset within 8 bytes, and buffers cut in two at random points and
 * chained.  Run once per implementation: the default (folding where the
 * CPU has VPCLMULQDQ), ITAPI_IWARP_CRC_FOLD=0 (crc32 streams) and
 * ITAPI_IWARP_CRC_SW=1 (tables).
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "iw_mpa.h"

enum { BUF = 3 * 65536 + 64 };
static uint8_t *buf;

static uint32_t
crc_ref(uint32_t crc, const uint8_t *p, size_t n)
{
  crc = ~crc;
  while (n--) {
    crc ^= *p++;
    for (int k = 0; k < 8; k++)
      crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
  }
  return ~crc;
}

static void
test_known(void)
{
  g_test_summary("CRC32c of \"123456789\" is 0xE3069283 (the check value of the Castagnoli CRC)");
  g_assert_cmphex(iw_crc32c(0, "123456789", 9), ==, 0xe3069283u);
}

static void
test_lengths(void)
{
  g_test_summary("every length around the implementations' thresholds, at each start offset "
                 "0-8, matches the bit-at-a-time reference");
  static const size_t base[] = { 0, 8, 256, 768, 1024, 1280, 3072, 4096, 12288, 65480, 65536,
                                 3 * 65536 };
  for (size_t i = 0; i < G_N_ELEMENTS(base); i++)
    for (long d = -9; d <= 9; d++) {
      if ((long) base[i] + d < 0 || base[i] + (size_t) d + 8 > BUF)
        continue;
      size_t n = base[i] + (size_t) d;
      for (size_t off = 0; off <= 8; off++) {
        uint32_t want = crc_ref(0x1234abcd, buf + off, n);
        uint32_t got = iw_crc32c(0x1234abcd, buf + off, n);
        if (got != want)
          g_error("length %zu at offset %zu: 0x%08x, reference 0x%08x", n, off, got, want);
      }
    }
}

static void
test_chained(void)
{
  g_test_summary("a buffer cut in two at random points gives the same CRC when the second "
                 "call continues from the first");
  for (int i = 0; i < 200; i++) {
    size_t n = (size_t) g_test_rand_int_range(0, 70000);
    size_t cut = n ? (size_t) g_test_rand_int_range(0, (gint32) n) : 0;
    size_t off = (size_t) g_test_rand_int_range(0, 64);
    uint32_t whole = crc_ref(0, buf + off, n);
    uint32_t got = iw_crc32c(iw_crc32c(0, buf + off, cut), buf + off + cut, n - cut);
    if (got != whole)
      g_error("length %zu cut at %zu, offset %zu: 0x%08x, reference 0x%08x", n, cut, off, got,
              whole);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  iw_crc_init();
  g_test_message("implementation: %s", iw_crc_impl_name());
  buf = g_malloc(BUF);
  GRand *r = g_rand_new_with_seed(5044);
  for (size_t i = 0; i < BUF; i++)
    buf[i] = (uint8_t) g_rand_int(r);
  g_rand_free(r);
  g_test_add_func("/iwarp/crc/known", test_known);
  g_test_add_func("/iwarp/crc/lengths", test_lengths);
  g_test_add_func("/iwarp/crc/chained", test_chained);
  int rc = g_test_run();
  g_free(buf);
  return rc;
}
