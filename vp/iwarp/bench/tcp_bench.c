/*
 * Raw TCP baseline for vp/iwarp's performance targets (kept next to the
 * provider, not in tools/): the same shapes itapi-perf measures in its
 * loopback mode, two threads of one process over 127.0.0.1.
 *
 *   tcp-bench lat SIZE ITERS [block] [proc]
 *       ping-pong of SIZE-byte messages (after ITERS/10 untimed ones);
 *       prints the median and average half round trip in us
 *   tcp-bench bw SIZE COUNT [block] [proc]
 *       COUNT messages of SIZE bytes streamed one way, then a 1-byte
 *       acknowledgement; GB/s
 *
 * Both ends busy-poll (MSG_DONTWAIT) like itapi-perf's default busy-polled
 * completions; "block" makes recv() blocking.  "proc" runs the server in a
 * forked process instead of a thread: the shape of itapi-perf -s / -c
 * (tools/bench/iwarp.sh uses it).
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static size_t size;
static long iters;
static int lat, spin = 1;
static int lfd;

static double
now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void
xfer(int fd, void *buf, size_t n, int rx)
{
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = rx ? recv(fd, p, n, spin ? MSG_DONTWAIT : 0) : send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (r <= 0) {
      perror(rx ? "recv" : "send");
      exit(1);
    }
    p += r;
    n -= (size_t) r;
  }
}

static void *
server(void *arg)
{
  (void) arg;
  int fd = accept(lfd, NULL, NULL);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  uint8_t *buf = malloc(size);
  if (lat) {
    for (long i = 0; i < iters + iters / 10; i++) {
      xfer(fd, buf, size, 1);
      xfer(fd, buf, size, 0);
    }
  } else {
    for (long i = 0; i < iters; i++)
      xfer(fd, buf, size, 1);
    xfer(fd, buf, 1, 0);
  }
  free(buf);
  close(fd);
  return NULL;
}

static int
cmp(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
  if (argc < 4) {
    fprintf(stderr, "usage: tcp-bench lat|bw SIZE ITERS [block] [proc]\n");
    return 2;
  }
  lat = strcmp(argv[1], "lat") == 0;
  size = strtoul(argv[2], NULL, 0);
  iters = strtol(argv[3], NULL, 0);
  int proc = 0;
  for (int i = 4; i < argc; i++) {
    if (strcmp(argv[i], "block") == 0)
      spin = 0;
    else if (strcmp(argv[i], "proc") == 0)
      proc = 1;
  }
  lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t sl = sizeof(sin);
  if (bind(lfd, (struct sockaddr *) &sin, sizeof(sin)) != 0 || listen(lfd, 1) != 0 ||
      getsockname(lfd, (struct sockaddr *) &sin, &sl) != 0) {
    perror("listen");
    return 1;
  }
  pthread_t th;
  pid_t child = -1;
  if (proc) {
    child = fork();
    if (child == 0) {
      server(NULL);
      _exit(0);
    }
  } else {
    pthread_create(&th, NULL, server, NULL);
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr *) &sin, sizeof(sin)) != 0) {
    perror("connect");
    return 1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  uint8_t *buf = calloc(1, size);
  if (lat) {
    double *s = malloc(sizeof(double) * (size_t) iters), sum = 0;
    for (long i = 0; i < iters / 10; i++) {
      xfer(fd, buf, size, 0);
      xfer(fd, buf, size, 1);
    }
    for (long i = 0; i < iters; i++) {
      double t0 = now_us();
      xfer(fd, buf, size, 0);
      xfer(fd, buf, size, 1);
      s[i] = (now_us() - t0) / 2;
      sum += s[i];
    }
    qsort(s, (size_t) iters, sizeof(double), cmp);
    printf("tcp lat %zu bytes: median %.3f us avg %.3f us (%ld iters, %s)\n", size,
           s[iters / 2], sum / (double) iters, iters, spin ? "busy-poll" : "blocking");
    free(s);
  } else {
    double t0 = now_us();
    for (long i = 0; i < iters; i++)
      xfer(fd, buf, size, 0);
    xfer(fd, buf, 1, 1);
    double t = now_us() - t0;
    printf("tcp bw %zu bytes: %.3f GB/s (%ld msgs, %s)\n", size,
           (double) size * (double) iters / t / 1e3, iters, spin ? "busy-poll" : "blocking");
  }
  if (proc)
    waitpid(child, NULL, 0);
  else
    pthread_join(th, NULL);
  return 0;
}
