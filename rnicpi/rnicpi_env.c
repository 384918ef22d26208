/*
 * Provider helpers: run-time parameters from the environment.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>

#include "rnicpi_util.h"

int
rnicpi_env_int(const char *name, int dflt, int lo, int hi)
{
  const char *v = g_getenv(name);
  if (v == NULL || *v == '\0')
    return dflt;
  char *end = NULL;
  long n = strtol(v, &end, 10);
  if (*end != '\0' || n < lo || n > hi) {
    g_warning("%s=%s is not a number in [%d, %d]; using %d", name, v, lo, hi, dflt);
    return dflt;
  }
  return (int) n;
}
