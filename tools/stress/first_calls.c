/*
 * itapi-first-calls: threads whose first IT-API calls come at the same
 * moment, before the process made any other: each opens the interface,
 * makes a protection zone and an EVD, and frees them, many times.  Every
 * call must succeed.  Under the thread sanitizer (scripts/sanitize.sh) it
 * also checks that what the library makes on first use (its recursive
 * object lock, first of all) is published to every thread that uses it.
 *
 *   itapi-first-calls [IA] [THREADS] [ROUNDS]   (emul0, 4, 200)
 *
 * SPDX-License-Identifier: MIT
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "it_api.h"
#include "itx.h"

static const char *ia_name = "emul0";
static unsigned rounds = 200;
static pthread_barrier_t start_line;

/* The first failed call, reported and the process ended. */
static void
check(it_status_t st, const char *call, unsigned round)
{
  if (st == IT_SUCCESS)
    return;
  fprintf(stderr, "itapi-first-calls: %s on %s failed in round %u: %s (%s)\n", call, ia_name, round,
          itx_status_name(st), itx_error_detail());
  exit(1);
}

static void *
worker(void *arg)
{
  (void) arg;
  pthread_barrier_wait(&start_line);
  for (unsigned r = 0; r < rounds; r++) {
    it_ia_handle_t ia;
    it_pz_handle_t pz;
    it_evd_handle_t evd;
    check(it_ia_create(ia_name, 2, 0, &ia), "it_ia_create", r);
    check(it_pz_create(ia, &pz), "it_pz_create", r);
    check(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE,
                        &evd, NULL), "it_evd_create", r);
    check(it_evd_free(evd), "it_evd_free", r);
    check(it_pz_free(pz), "it_pz_free", r);
    check(it_ia_free(ia), "it_ia_free", r);
  }
  return NULL;
}

int
main(int argc, char **argv)
{
  unsigned n = 4;
  if (argc > 1)
    ia_name = argv[1];
  if (argc > 2)
    n = (unsigned) strtoul(argv[2], NULL, 10);
  if (argc > 3)
    rounds = (unsigned) strtoul(argv[3], NULL, 10);
  if (n == 0 || n > 64) {
    fprintf(stderr, "itapi-first-calls: THREADS must be 1 to 64 (got %s)\n", argv[2]);
    return 2;
  }
  pthread_t t[64];
  pthread_barrier_init(&start_line, NULL, n);
  for (unsigned i = 0; i < n; i++)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) {
      fprintf(stderr, "itapi-first-calls: pthread_create of thread %u failed\n", i);
      return 1;
    }
  for (unsigned i = 0; i < n; i++)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&start_line);
  printf("itapi-first-calls: %u threads, %u rounds each on %s: every call succeeded\n", n, rounds, ia_name);
  return 0;
}
