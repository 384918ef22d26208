/*
 * cert-interop: the INTEROP level of the certification catalog.  The
 * provider under test talks over its wire to a reference peer (vp/iwarp in
 * another process, cert-iwarp-peer) and to the test itself playing a raw
 * TCP peer with golden frames written from the RFCs.
 *
 * What the test program and the peer share: the byte pattern both ends
 * fill and check, and the text form of private data on the pipe.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef INTEROP_H
#define INTEROP_H

#include <glib.h>
#include <stdint.h>
#include <string.h>

/* Byte @i of a buffer filled with the pattern of @seed. */
static inline uint8_t
interop_pattern(uint8_t seed, size_t i)
{
  return (uint8_t) (seed * 29u + i * 13u + (i >> 9));
}

/* @len bytes as lowercase hex ("-" for none: a word on the pipe). */
static inline char *
interop_hex(const uint8_t *p, size_t len)
{
  if (len == 0)
    return g_strdup("-");
  GString *s = g_string_sized_new(len * 2);
  for (size_t i = 0; i < len; i++)
    g_string_append_printf(s, "%02x", p[i]);
  return g_string_free(s, FALSE);
}

/* Hex back to bytes into @out (room for @max); the count, or -1. */
static inline int
interop_unhex(const char *hex, uint8_t *out, size_t max)
{
  if (g_strcmp0(hex, "-") == 0)
    return 0;
  size_t n = strlen(hex);
  if (n % 2 != 0 || n / 2 > max)
    return -1;
  for (size_t i = 0; i < n / 2; i++) {
    int hi = g_ascii_xdigit_value(hex[2 * i]), lo = g_ascii_xdigit_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return -1;
    out[i] = (uint8_t) (hi << 4 | lo);
  }
  return (int) (n / 2);
}

/* How long the reference peer waits for one event, in seconds: the
 * conformance level's ITAPI_CONF_WAIT_S (the lab raises it for its slow
 * TCG guest), never under 10.  The test program waits
 * INTEROP_REPLY_SLACK_S longer for each answer, so that a peer which gave
 * up says why ("error no connection request within N s") rather than the
 * test reporting silence. */
static inline guint
interop_wait_s(void)
{
  const char *v = g_getenv("ITAPI_CONF_WAIT_S");
  guint64 s = v != NULL ? g_ascii_strtoull(v, NULL, 10) : 0;
  return (guint) CLAMP(s, 10, 3600);
}

#define INTEROP_REPLY_SLACK_S 10

/* The peer's registered buffer, and the most a test moves in one message. */
#define INTEROP_PEER_BUF (1u << 20)

#endif
