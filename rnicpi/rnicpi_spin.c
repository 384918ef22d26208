/*
 * The contended side of rnicpi_util.h's spin lock.
 *
 * SPDX-License-Identifier: MIT
 */
#include "rnicpi_util.h"

/* Pauses before the first yield, and yields before the first sleep: about
 * a microsecond of spinning, then a few hundred of yielding (a 1 MiB copy
 * under the lock ends within those), then sleeps of SLEEP_US. */
#define SPINS 64u
#define YIELDS 256u
#define SLEEP_US 50

void
rnicpi_spin_backoff(unsigned n)
{
  if (n < SPINS)
    rnicpi_cpu_relax();
  else if (n < SPINS + YIELDS)
    g_thread_yield();
  else
    g_usleep(SLEEP_US);
}

void
rnicpi_spin_wait(rnicpi_spin_t *l)
{
  for (unsigned n = 1; !rnicpi_spin_trylock(l); n++)
    rnicpi_spin_backoff(n);
}
