/*
 * emul_probe: the raw limits tools/bench/emul.sh compares vp/emul with,
 * measured in the same run (method of /work/shared/reference/baselines.md,
 * section 2).  Built by the script with `cc -O2 -pthread`; not part of the
 * Meson build.
 *
 *   emul_probe clpp SECONDS      two threads on CPU 0 and CPU 1 bounce one
 *                                cache line (spin with PAUSE); prints the
 *                                median one-way ns over 64-round-trip batches
 *   emul_probe memcpy SIZE SECS  single-core memcpy of SIZE bytes between the
 *                                same two buffers; prints the median GB/s
 *                                over batches
 *   emul_probe cma SIZE SECS     process_vm_writev of SIZE bytes into a
 *                                forked child; prints the median ns per call
 *                                (what one one-sided RDMA Write costs emul)
 *
 * Output: one line "NAME VALUE".
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t
now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

static void
pin(int cpu)
{
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  (void) sched_setaffinity(0, sizeof(s), &s);
}

static void
relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double
median(double *v, size_t n)
{
  qsort(v, n, sizeof(*v), cmp_double);
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAXS 1000000

/* ---- cache-line ping-pong ---- */

static _Alignas(64) volatile uint64_t line;
static volatile int stop;

static void *
pong(void *arg)
{
  (void) arg;
  pin(1);
  for (uint64_t want = 1; !stop; want += 2) {
    while (__atomic_load_n(&line, __ATOMIC_ACQUIRE) != want)
      if (stop)
        return NULL;
      else
        relax();
    __atomic_store_n(&line, want + 1, __ATOMIC_RELEASE);
  }
  return NULL;
}

static int
clpp(double secs)
{
  static double s[MAXS];
  size_t n = 0;
  pthread_t t;
  pin(0);
  pthread_create(&t, NULL, pong, NULL);
  uint64_t v = 0, end = now_ns() + (uint64_t) (secs * 1e9), warm = now_ns() + 50000000u;
  while (n < MAXS) {
    uint64_t t0 = now_ns();
    for (int i = 0; i < 64; i++) {
      __atomic_store_n(&line, ++v, __ATOMIC_RELEASE);
      ++v;
      while (__atomic_load_n(&line, __ATOMIC_ACQUIRE) != v)
        relax();
    }
    uint64_t t1 = now_ns();
    if (t1 > warm)
      s[n++] = (double) (t1 - t0) / 128.0;
    if (t1 > end)
      break;
  }
  stop = 1;
  __atomic_store_n(&line, ++v, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
  printf("clpp_ns %.1f\n", median(s, n));
  return 0;
}

/* ---- memcpy ---- */

/* @size bytes on whole pages, each byte @fill. */
static char *
page_buf(size_t size, int fill)
{
  char *p = aligned_alloc(4096, (size + 4095) & ~(size_t) 4095);
  memset(p, fill, size);
  return p;
}

static int
bench_memcpy(size_t size, double secs)
{
  static double s[MAXS];
  size_t n = 0;
  pin(0);
  char *a = page_buf(size, 1), *b = page_buf(size, 2);
  size_t per = size >= (1u << 20) ? 4 : 64;
  uint64_t end = now_ns() + (uint64_t) (secs * 1e9);
  for (int w = 0; w < 16; w++)
    memcpy(b, a, size);
  while (n < MAXS) {
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < per; i++) {
      memcpy(b, a, size);
      __asm__ volatile("" : : "r"(b) : "memory");
    }
    uint64_t t1 = now_ns();
    s[n++] = (double) (size * per) / (double) (t1 - t0);
    if (t1 > end)
      break;
  }
  printf("memcpy_gbps %.2f\n", median(s, n));
  return 0;
}

/* ---- process_vm_writev ---- */

static int
cma(size_t size, double secs)
{
  static double s[MAXS];
  size_t n = 0;
  char *buf = page_buf(size, 0), *src = page_buf(size, 3);
  pid_t child = fork();
  if (child == 0) {
    pin(1);
    for (;;)
      pause();
  }
  pin(0);
  struct iovec l = { src, size }, r = { buf, size };  /* same address in the child */
  uint64_t end = now_ns() + (uint64_t) (secs * 1e9);
  int rc = 0;
  while (n < MAXS) {
    uint64_t t0 = now_ns();
    for (int i = 0; i < 16; i++)
      if (process_vm_writev(child, &l, 1, &r, 1, 0) != (ssize_t) size) {
        perror("process_vm_writev");
        rc = 1;
        goto kill_child;
      }
    uint64_t t1 = now_ns();
    s[n++] = (double) (t1 - t0) / 16.0;
    if (t1 > end)
      break;
  }
  printf("cma_ns %.1f\n", median(s, n));
kill_child:
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return rc;
}

int
main(int argc, char **argv)
{
  if (argc >= 3 && strcmp(argv[1], "clpp") == 0)
    return clpp(atof(argv[2]));
  if (argc >= 4 && strcmp(argv[1], "memcpy") == 0)
    return bench_memcpy(strtoull(argv[2], NULL, 0), atof(argv[3]));
  if (argc >= 4 && strcmp(argv[1], "cma") == 0)
    return cma(strtoull(argv[2], NULL, 0), atof(argv[3]));
  fprintf(stderr, "usage: %s clpp SECS | memcpy SIZE SECS | cma SIZE SECS\n", argv[0]);
  return 2;
}
