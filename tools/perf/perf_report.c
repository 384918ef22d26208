/*
 * itapi-perf: statistics and output (table, CSV, JSON, progress line).
 *
 * SPDX-License-Identifier: MIT
 */
#include "itapi_perf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool progress_drawn; /* a progress line is on the terminal: errors clear it */

bool lat_use_tsc;
double lat_ns_per_tick = 1.0;

void
lat_clock_init(void)
{
#if defined(__x86_64__)
  const char *force = getenv("ITAPI_PERF_CLOCK");
  if (force != NULL && strcmp(force, "monotonic") == 0)
    return;
  /* "tsc": the TSC whatever the kernel keeps time with, as perftest's
   * get_cycles() does (in a VM whose kernel chose hpet, a clock_gettime()
   * is a system call of ~1 us, which tools/bench/ib.sh must not put on
   * one side of a comparison only). */
  if (force == NULL || strcmp(force, "tsc") != 0) {
    char cs[32] = { 0 };
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f == NULL)
      return;
    bool tsc = fgets(cs, sizeof(cs), f) != NULL && strncmp(cs, "tsc", 3) == 0 &&
               (cs[3] == '\n' || cs[3] == '\0');
    fclose(f);
    if (!tsc)
      return;
  }
  /* 20 ms against CLOCK_MONOTONIC: a rate good to well under 0.1 %. */
  uint64_t n0 = now_ns(), c0 = __builtin_ia32_rdtsc(), n1, c1;
  do {
    n1 = now_ns();
    c1 = __builtin_ia32_rdtsc();
  } while (n1 - n0 < 20000000u);
  if (c1 <= c0)
    return;
  lat_ns_per_tick = (double) (n1 - n0) / (double) (c1 - c0);
  lat_use_tsc = true;
#endif
}

void
progress_tick(progress_t *p, uint64_t now, uint64_t done)
{
  if (!p->on || now < p->next)
    return;
  p->next = now + 250000000u;
  if (now - p->start < 2000000000u)
    return;
  double el = (now - p->start) / 1e9;
  if (p->total)
    fprintf(stderr, "\r%s %zu B: %llu/%llu iterations, %.0f s ", p->test, p->size,
            (unsigned long long) done, (unsigned long long) p->total, el);
  else
    fprintf(stderr, "\r%s %zu B: %.0f/%.0f s ", p->test, p->size, el, p->duration);
  p->shown = progress_drawn = true;
}

void
progress_done(progress_t *p)
{
  if (p->shown)
    fputs("\r\033[K", stderr);
  progress_drawn = false;
}

void
record(samples_t *sm, uint64_t ns)
{
  if (sm->n == sm->cap) {
    sm->cap = sm->cap ? 2 * sm->cap : 4096;
    sm->ns = realloc(sm->ns, sm->cap * sizeof(*sm->ns));
    if (sm->ns == NULL)
      die("out of memory for %zu latency samples", sm->cap);
  }
  sm->ns[sm->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t) ns;
}

static int
cmp_u32(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile, as perftest reports them. */
static size_t
rank_of(size_t n, double q)
{
  double r = q * (double) n;
  size_t k = (size_t) r;
  if ((double) k < r)
    k++;
  return k == 0 ? 0 : k - 1;
}

void
lat_stats(result_t *r, samples_t *sm, double div)
{
  size_t n = sm->n;
  qsort(sm->ns, n, sizeof(*sm->ns), cmp_u32);
  double sc = 1.0 / (1000.0 * div), sum = 0, sq = 0;
  for (size_t i = 0; i < n; i++)
    sum += sm->ns[i] * sc;
  r->avg = sum / n;
  for (size_t i = 0; i < n; i++)
    sq += (sm->ns[i] * sc - r->avg) * (sm->ns[i] * sc - r->avg);
  r->stddev = n > 1 ? sqrt(sq / (n - 1)) : 0;
  r->iters = n;
  r->min = sm->ns[0] * sc;
  r->max = sm->ns[n - 1] * sc;
  r->median = n % 2 ? sm->ns[n / 2] * sc : (sm->ns[n / 2 - 1] + (double) sm->ns[n / 2]) * sc / 2;
  r->p99 = sm->ns[rank_of(n, 0.99)] * sc;
  r->p999 = sm->ns[rank_of(n, 0.999)] * sc;
}

void
print_table_header(void)
{
  printf("%-10s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "test", "bytes", "iters", "min_us",
         "median_us", "avg_us", "p99_us", "p99.9_us", "max_us", "GB/s", "Mmsg/s");
}

void
print_table_row(const result_t *r)
{
  printf("%-10s %9zu %9llu ", r->test, r->bytes, (unsigned long long) r->iters);
  if (r->bw)
    printf("%9s %9s %9s %9s %9s %9s %9.3f %9.3f\n", "", "", "", "", "", "", r->gbps, r->mmsgps);
  else
    printf("%9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9s %9s\n", r->min, r->median, r->avg, r->p99,
           r->p999, r->max, "", "");
  fflush(stdout);
}

const char *const csv_fields = "test,bytes,iters,min_us,median_us,avg_us,stddev_us,p99_us,"
                                "p999_us,max_us,gbps,mmsgps";

void
print_csv_row(const result_t *r)
{
  printf("%s,%zu,%llu,", r->test, r->bytes, (unsigned long long) r->iters);
  if (r->bw)
    printf(",,,,,,,%.6g,%.6g\n", r->gbps, r->mmsgps);
  else
    printf("%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,,\n", r->min, r->median, r->avg, r->stddev,
           r->p99, r->p999, r->max);
  fflush(stdout);
}

void
print_json(const config_t *cfg, const char *ia, const result_t *res, size_t n)
{
  static const char *modes[] = { "loopback", "server", "client" };
  printf("{\n  \"tool\": \"itapi-perf\",\n  \"interface\": \"%s\",\n  \"mode\": \"%s\",\n"
         "  \"completion\": \"%s\",\n  \"window\": %u,\n  \"signal_every\": %u,\n"
         "  \"verify\": %s,\n  \"complete_first\": %s,\n  \"results\": [", ia, modes[cfg->mode],
         cfg->event ? "event" : "poll", cfg->window, cfg->signal_every,
         cfg->verify ? "true" : "false", cfg->complete_first ? "true" : "false");
  for (size_t i = 0; i < n; i++) {
    const result_t *r = &res[i];
    printf("%s\n    {\"test\": \"%s\", \"kind\": \"%s\", \"bytes\": %zu, \"iters\": %llu, ",
           i ? "," : "", r->test, r->bw ? "bandwidth" : "latency", r->bytes,
           (unsigned long long) r->iters);
    if (r->bw)
      printf("\"min_us\": null, \"median_us\": null, \"avg_us\": null, \"stddev_us\": null, "
             "\"p99_us\": null, \"p999_us\": null, \"max_us\": null, \"gbps\": %.6g, "
             "\"mmsgps\": %.6g}", r->gbps, r->mmsgps);
    else
      printf("\"min_us\": %.6g, \"median_us\": %.6g, \"avg_us\": %.6g, \"stddev_us\": %.6g, "
             "\"p99_us\": %.6g, \"p999_us\": %.6g, \"max_us\": %.6g, \"gbps\": null, "
             "\"mmsgps\": null}", r->min, r->median, r->avg, r->stddev, r->p99, r->p999, r->max);
  }
  printf("\n  ]\n}\n");
}
