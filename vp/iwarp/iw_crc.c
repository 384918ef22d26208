/*
 * vp/iwarp: CRC32c (Castagnoli, reflected 0x82F63B78) for MPA FPDUs
 * (RFC 5044 4.1; the same CRC as iSCSI, RFC 3720 B.4).  A slicing-by-8
 * table version everywhere, the SSE4.2 crc32 instruction where the CPU has
 * it, chosen once at run time.
 *
 * SPDX-License-Identifier: MIT
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "iw_mpa.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

static uint32_t crc_table[8][256];
static uint32_t (*crc_impl)(uint32_t, const uint8_t *, size_t);

static uint32_t
crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
  while (len > 0 && ((uintptr_t) p & 7) != 0) {
    crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    len--;
  }
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    v ^= crc; /* little-endian hosts only: checked at init */
    crc = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
          crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
          crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
          crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
    p += 8;
    len -= 8;
  }
  while (len-- > 0)
    crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

static uint32_t
crc_bytewise(uint32_t crc, const uint8_t *p, size_t len)
{
  while (len-- > 0)
    crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t
crc_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
  uint64_t c = crc;
  while (len > 0 && ((uintptr_t) p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t) c, *p++);
    len--;
  }
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    len -= 8;
  }
  while (len-- > 0)
    c = _mm_crc32_u8((uint32_t) c, *p++);
  return (uint32_t) c;
}
#endif

static void
crc_do_init(void)
{
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    crc_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
  crc_impl = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? crc_sw : crc_bytewise;
#if defined(__x86_64__)
  /* ITAPI_IWARP_CRC_SW=1 keeps the table version (to test it). */
  const char *sw = getenv("ITAPI_IWARP_CRC_SW");
  if (__builtin_cpu_supports("sse4.2") && (sw == NULL || strcmp(sw, "1") != 0))
    crc_impl = crc_sse42;
#endif
}

void
iw_crc_init(void)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, crc_do_init);
}

uint32_t
iw_crc32c(uint32_t crc, const void *buf, size_t len)
{
  return ~crc_impl(~crc, buf, len);
}
