/*
 * vp/iwarp tests: a listener on a port nobody holds.  Tests run beside
 * each other (meson runs two at once, a second checkout may run the same
 * ones), so no test may count on a fixed port.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef IW_TEST_PORT_H
#define IW_TEST_PORT_H

#include <glib.h>

#include "rnicpi.h"

/* Listens on a random free port between 20000 and 59999 and returns it;
 * a port someone holds (RNICPI_EEXIST) is skipped. */
static inline uint32_t
iw_test_listen_any(const rnicpi_provider_t *prov, rnicpi_dev_t *dev, uint64_t ctx,
                   rnicpi_listen_t **listener)
{
  enum { ATTEMPTS = 64 };
  for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
    uint32_t port = (uint32_t) g_random_int_range(20000, 60000);
    rnicpi_status_t st = prov->cm->listen(dev, port, ctx, listener);
    if (st == RNICPI_OK)
      return port;
    g_assert_cmpint(st, ==, RNICPI_EEXIST);
  }
  g_error("no free port between 20000 and 59999 in %d tries", ATTEMPTS);
}

#endif
