/*
 * vp/iwarp: CRC32c (Castagnoli, reflected 0x82F63B78) for MPA FPDUs
 * (RFC 5044 4.1; the same CRC as iSCSI, RFC 3720 B.4).  A slicing-by-8
 * table version everywhere, the SSE4.2 crc32 instruction where the CPU has
 * it (three interleaved streams on long buffers: about 25 GB/s on one core
 * against 9-10 for one stream), and where the CPU also has AVX-512 with
 * VPCLMULQDQ, carry-less multiplies that fold 256 bytes per step for
 * buffers of 1 KiB or more; chosen once at run time.
 *
 * SPDX-License-Identifier: MIT
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "iw_mpa.h"

#if defined(__x86_64__)
#include <immintrin.h>
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
/* Three interleaved streams: the crc32 instruction has a latency of three
 * cycles and a throughput of one, so one stream uses a third of the unit.
 * The buffer is cut into blocks A|B|C of n bytes each, crc'd in parallel,
 * and joined by linearity: crc(c, A|B|C) = shift(crc(c, A), 2n) ^
 * shift(crc(0, B), n) ^ crc(0, C), where shift(x, k) is the register after
 * k zero bytes; a linear map of 32 bits, applied with 4 table lookups. */
enum { CRC_BIG = 4096, CRC_SMALL = 256 };
static uint32_t crc_shift[4][4][256]; /* [BIG n, BIG 2n, SMALL n, SMALL 2n][byte][value] */

static inline uint32_t
shift_apply(const uint32_t t[4][256], uint32_t x)
{
  return t[0][x & 0xff] ^ t[1][(x >> 8) & 0xff] ^ t[2][(x >> 16) & 0xff] ^ t[3][x >> 24];
}

__attribute__((target("sse4.2"))) static void
shift_table(uint32_t t[4][256], size_t zeros)
{
  uint32_t basis[32];
  for (int j = 0; j < 32; j++) {
    uint64_t c = 1u << j;
    for (size_t k = 0; k < zeros / 8; k++)
      c = _mm_crc32_u64(c, 0);
    basis[j] = (uint32_t) c;
  }
  for (int b = 0; b < 4; b++)
    for (uint32_t v = 0; v < 256; v++) {
      uint32_t r = 0;
      for (int j = 0; j < 8; j++)
        if (v & (1u << j))
          r ^= basis[8 * b + j];
      t[b][v] = r;
    }
}

__attribute__((target("sse4.2"))) static uint64_t
crc_3way(uint64_t c, const uint8_t **pp, size_t *lenp, size_t n, const uint32_t sn[4][256],
         const uint32_t s2n[4][256])
{
  const uint8_t *p = *pp;
  size_t len = *lenp;
  while (len >= 3 * n) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < n; i += 8) {
      uint64_t a, b, d;
      memcpy(&a, p + i, 8);
      memcpy(&b, p + n + i, 8);
      memcpy(&d, p + 2 * n + i, 8);
      c = _mm_crc32_u64(c, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, d);
    }
    c = shift_apply(s2n, (uint32_t) c) ^ shift_apply(sn, (uint32_t) c1) ^ (uint32_t) c2;
    p += 3 * n;
    len -= 3 * n;
  }
  *pp = p;
  *lenp = len;
  return c;
}

/* Folding with carry-less multiplies.  In the reflected order the crc32
 * instruction uses, a 128-bit lane holds A (its first 8 bytes, the higher
 * powers) and B: the polynomial A x^64 + B, weighted by x^(8 * bytes after
 * it).  Moving it D bits further, A x^(D+64) + B x^D, equals mod P
 * A (x^(D+64) mod P) + B (x^D mod P), two 64 x 32-bit products that fit
 * the lane.  A carry-less multiply of reflected operands gives the product
 * with bit t worth x^(94-t) instead of the lane's x^(127-t), so each
 * constant carries x^-33: k = x^(D+64-33) mod P and x^(D-33) mod P,
 * bit-reflected.  Four 512-bit registers hold 16 lanes and advance D = 2048
 * bits (256 bytes) per step; the CRC register goes into the first 4 bytes
 * as the crc32 instruction would put it, and the last 256 folded bytes,
 * equal mod P to everything before, are run through crc32 from 0. */
enum { FOLD_BYTES = 256, FOLD_MIN = 1024 };
static uint64_t fold_k_lo, fold_k_hi;

/* x^n mod P in the normal order (bit 31 is x^31). */
static uint32_t
xpow_mod(unsigned n)
{
  uint64_t r = 1;
  for (unsigned i = 0; i < n; i++) {
    r <<= 1;
    if (r & (UINT64_C(1) << 32))
      r ^= UINT64_C(0x11edc6f41);
  }
  return (uint32_t) r;
}

static uint32_t
reflect32(uint32_t v)
{
  uint32_t r = 0;
  for (int i = 0; i < 32; i++)
    if (v & (1u << i))
      r |= 1u << (31 - i);
  return r;
}

/* One register moved FOLD_BYTES further and the data there added. */
__attribute__((target("avx512f,avx512vl,vpclmulqdq"))) static inline __m512i
fold_step(__m512i x, __m512i k, const uint8_t *p)
{
  __m512i d = _mm512_loadu_si512((const void *) p);
  __m512i a = _mm512_clmulepi64_epi128(x, k, 0x00);
  __m512i b = _mm512_clmulepi64_epi128(x, k, 0x11);
  return _mm512_ternarylogic_epi64(a, b, d, 0x96); /* a ^ b ^ d */
}

__attribute__((target("avx512f,avx512vl,vpclmulqdq,sse4.2"))) static uint64_t
crc_fold(uint64_t c, const uint8_t **pp, size_t *lenp)
{
  const uint8_t *p = *pp;
  size_t len = *lenp;
  if (len < FOLD_MIN)
    return c;
  const __m512i k = _mm512_set_epi64((long long) fold_k_hi, (long long) fold_k_lo,
                                     (long long) fold_k_hi, (long long) fold_k_lo,
                                     (long long) fold_k_hi, (long long) fold_k_lo,
                                     (long long) fold_k_hi, (long long) fold_k_lo);
  /* Four independent chains, named so that they stay in registers. */
  __m512i x0 = _mm512_loadu_si512((const void *) p);
  __m512i x1 = _mm512_loadu_si512((const void *) (p + 64));
  __m512i x2 = _mm512_loadu_si512((const void *) (p + 128));
  __m512i x3 = _mm512_loadu_si512((const void *) (p + 192));
  x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int) (uint32_t) c)));
  p += FOLD_BYTES;
  len -= FOLD_BYTES;
  while (len >= FOLD_BYTES) {
    x0 = fold_step(x0, k, p);
    x1 = fold_step(x1, k, p + 64);
    x2 = fold_step(x2, k, p + 128);
    x3 = fold_step(x3, k, p + 192);
    p += FOLD_BYTES;
    len -= FOLD_BYTES;
  }
  uint64_t tail[FOLD_BYTES / 8];
  _mm512_storeu_si512((void *) tail, x0);
  _mm512_storeu_si512((void *) (tail + 8), x1);
  _mm512_storeu_si512((void *) (tail + 16), x2);
  _mm512_storeu_si512((void *) (tail + 24), x3);
  c = 0;
  for (size_t i = 0; i < FOLD_BYTES / 8; i++)
    c = _mm_crc32_u64(c, tail[i]);
  *pp = p;
  *lenp = len;
  return c;
}

__attribute__((target("sse4.2"))) static uint32_t
crc_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
  uint64_t c = crc;
  while (len > 0 && ((uintptr_t) p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t) c, *p++);
    len--;
  }
  if (fold_k_lo != 0)
    c = crc_fold(c, &p, &len);
  c = crc_3way(c, &p, &len, CRC_BIG, crc_shift[0], crc_shift[1]);
  c = crc_3way(c, &p, &len, CRC_SMALL, crc_shift[2], crc_shift[3]);
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
  if (__builtin_cpu_supports("sse4.2") && (sw == NULL || strcmp(sw, "1") != 0)) {
    shift_table(crc_shift[0], CRC_BIG);
    shift_table(crc_shift[1], 2 * CRC_BIG);
    shift_table(crc_shift[2], CRC_SMALL);
    shift_table(crc_shift[3], 2 * CRC_SMALL);
    crc_impl = crc_sse42;
    /* ITAPI_IWARP_CRC_FOLD=0 keeps the crc32 streams (to test them). */
    const char *fold = getenv("ITAPI_IWARP_CRC_FOLD");
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("vpclmulqdq") && (fold == NULL || strcmp(fold, "0") != 0)) {
      unsigned d = 8 * FOLD_BYTES;
      fold_k_lo = reflect32(xpow_mod(d + 64 - 33));
      fold_k_hi = reflect32(xpow_mod(d - 33));
    }
  }
#endif
}

void
iw_crc_init(void)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, crc_do_init);
}

const char *
iw_crc_impl_name(void)
{
#if defined(__x86_64__)
  if (crc_impl == crc_sse42)
    return fold_k_lo != 0 ? "fold" : "streams";
#endif
  return "tables";
}

uint32_t
iw_crc32c(uint32_t crc, const void *buf, size_t len)
{
  return ~crc_impl(~crc, buf, len);
}
