/*
 * cert-interop: what the known-answer tests (interop_golden.c,
 * interop_golden2.c) need to play a raw TCP peer: their own CRC32c, the
 * big-endian fields of DDP and RDMAP headers, MPA framing (RFC 5044 4.1),
 * and reads and writes on the socket that fail the test, not the run, when
 * the provider stops answering.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "interop_test.h"

const uint8_t wire_golden_request[36] = {
  0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
  0x40, 0x01, 0x00, 0x10,
  0x55, 0x4c, 0x50, 0x20, 0x70, 0x72, 0x69, 0x76, 0x61, 0x74, 0x65, 0x20, 0x64, 0x61, 0x74, 0x61,
};
const uint8_t wire_key_rep[16] = "MPA ID Rep Frame";
const char wire_hello[14] = "Hello, iWARP!";

/* Castagnoli, reflected (0x82F63B78), initial value and final XOR all ones
 * (RFC 3720 B.4; RFC 5044 4.1), bit by bit: no provider's code. */
uint32_t
wire_crc32c(const uint8_t *p, size_t n)
{
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return ~c;
}

/* RFC 3720 B.4, and the "123456789" check value of the CRC catalogue. */
void
wire_crc_known_answers(void)
{
  uint8_t v[32];
  memset(v, 0x00, sizeof(v));
  g_assert_cmphex(wire_crc32c(v, 32), ==, 0x8a9136aa);
  memset(v, 0xff, sizeof(v));
  g_assert_cmphex(wire_crc32c(v, 32), ==, 0x62a8ab43);
  for (int i = 0; i < 32; i++)
    v[i] = (uint8_t) i;
  g_assert_cmphex(wire_crc32c(v, 32), ==, 0x46dd794e);
  g_assert_cmphex(wire_crc32c((const uint8_t *) "123456789", 9), ==, 0xe3069283);
}

void
wire_put32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t) (v >> 24);
  p[1] = (uint8_t) (v >> 16);
  p[2] = (uint8_t) (v >> 8);
  p[3] = (uint8_t) v;
}

void
wire_put64(uint8_t *p, uint64_t v)
{
  wire_put32(p, (uint32_t) (v >> 32));
  wire_put32(p + 4, (uint32_t) v);
}

uint32_t
wire_get32(const uint8_t *p)
{
  return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

uint64_t
wire_get64(const uint8_t *p)
{
  return (uint64_t) wire_get32(p) << 32 | wire_get32(p + 4);
}

size_t
wire_fpdu_build(const uint8_t *ulpdu, size_t len, uint8_t *out)
{
  wire_crc_known_answers();
  out[0] = (uint8_t) (len >> 8);
  out[1] = (uint8_t) len;
  memcpy(out + 2, ulpdu, len);
  size_t n = 2 + len;
  while (n % 4 != 0)
    out[n++] = 0;
  uint32_t c = wire_crc32c(out, n);
  for (int i = 0; i < 4; i++)
    out[n + (size_t) i] = (uint8_t) (c >> (8 * i));
  return n + 4;
}

size_t
wire_read(int fd, uint8_t *p, size_t n, int timeout_ms)
{
  size_t got = 0;
  while (got < n) {
    struct pollfd pf = { .fd = fd, .events = POLLIN };
    int r = poll(&pf, 1, timeout_ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0)
      g_test_message("the provider sent %zu of %zu awaited bytes within %d ms, and did not "
                     "close the connection", got, n, timeout_ms);
    g_assert_cmpint(r, ==, 1);
    ssize_t k = recv(fd, p + got, n - got, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return got;
    got += (size_t) k;
  }
  return got;
}

void
wire_read_all(int fd, uint8_t *p, size_t n)
{
  size_t got = wire_read(fd, p, n, INTEROP_RAW_WAIT_MS);
  if (got != n)
    g_test_message("the provider closed the connection after %zu of %zu awaited bytes", got, n);
  g_assert_cmpuint(got, ==, n);
}

void
wire_write(int fd, const void *p, size_t n)
{
  g_assert_cmpint(send(fd, p, n, MSG_NOSIGNAL), ==, (gssize) n);
}
