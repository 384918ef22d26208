/*
 * itapi-floor: the kernel's floor for one blocking wake-up each way
 * between two processes, against which tools/bench/emul.sh and
 * tools/bench/iwarp.sh set the event-mode latency of itapi-perf -e
 * (issue 27: within 1.5x of it, measured in the same run).
 *
 *   itapi-floor evfd ITERS     two eventfds: each side blocks in poll() on
 *                              its own, reads it, and writes the other's
 *                              (vp/emul's floor: its waiter sleeps on an
 *                              eventfd its peer process writes)
 *   itapi-floor tcp ITERS      a TCP connection over 127.0.0.1, TCP_NODELAY:
 *                              each side blocks in poll() on its socket,
 *                              reads the 8-byte message, writes 8 bytes back
 *                              (vp/iwarp's floor: a raw TCP ping-pong)
 *
 * The server side runs in a forked process; nothing is pinned (itapi-perf
 * pins nothing either).  ITERS / 10 untimed round trips come first.
 * Output, one line: "NAME MEDIAN MIN P99", half a round trip in
 * microseconds, each sample one round trip timed with CLOCK_MONOTONIC.
 *
 * Built by meson (tools/bench/meson.build), not installed.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG_BYTES 8

static uint64_t
now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

static void
die(const char *what)
{
  perror(what);
  exit(1);
}

static int
cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
  return x < y ? -1 : x > y;
}

/* Block until @fd is readable (the floor's one wake-up). */
static void
wait_in(int fd)
{
  struct pollfd p = { .fd = fd, .events = POLLIN };
  while (poll(&p, 1, -1) < 0)
    if (errno != EINTR)
      die("poll");
}

/* ---- eventfd ---- */

static void
evfd_ring(int fd)
{
  uint64_t one = 1;
  if (write(fd, &one, sizeof(one)) != sizeof(one))
    die("write eventfd");
}

static void
evfd_take(int fd)
{
  uint64_t v;
  wait_in(fd);
  if (read(fd, &v, sizeof(v)) != sizeof(v))
    die("read eventfd");
}

/* ---- TCP ---- */

static void
tcp_send(int fd)
{
  static const uint8_t msg[MSG_BYTES] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  size_t off = 0;
  while (off < sizeof(msg)) {
    ssize_t r = send(fd, msg + off, sizeof(msg) - off, MSG_NOSIGNAL);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
      struct pollfd p = { .fd = fd, .events = POLLOUT };
      (void) poll(&p, 1, -1);
      continue;
    }
    if (r <= 0)
      die("send");
    off += (size_t) r;
  }
}

/* Block in poll for the 8-byte message, as a sleeping receiver does. */
static void
tcp_recv(int fd)
{
  uint8_t buf[MSG_BYTES];
  size_t off = 0;
  while (off < sizeof(buf)) {
    ssize_t r = recv(fd, buf + off, sizeof(buf) - off, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
      wait_in(fd);
      continue;
    }
    if (r <= 0) {
      if (r == 0)
        exit(0);  /* the peer is done */
      die("recv");
    }
    off += (size_t) r;
  }
}

static void
tcp_nodelay(int fd)
{
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
    die("TCP_NODELAY");
}

/* A connected pair over 127.0.0.1: @cli here, @srv for the child. */
static void
tcp_pair(int *cli, int *srv)
{
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t al = sizeof(a);
  if (l < 0 || bind(l, (struct sockaddr *) &a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr *) &a, &al) != 0)
    die("listen on 127.0.0.1");
  *cli = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*cli < 0 || connect(*cli, (struct sockaddr *) &a, sizeof(a)) != 0)
    die("connect to 127.0.0.1");
  *srv = accept(l, NULL, NULL);
  if (*srv < 0)
    die("accept");
  close(l);
  tcp_nodelay(*cli);
  tcp_nodelay(*srv);
}

int
main(int argc, char **argv)
{
  if (argc != 3 || (strcmp(argv[1], "evfd") != 0 && strcmp(argv[1], "tcp") != 0)) {
    fprintf(stderr, "usage: itapi-floor evfd|tcp ITERS\n");
    return 2;
  }
  int tcp = strcmp(argv[1], "tcp") == 0;
  long iters = strtol(argv[2], NULL, 10);
  if (iters < 1 || iters > 100000000) {
    fprintf(stderr, "itapi-floor: ITERS must be between 1 and 100000000\n");
    return 2;
  }
  long warm = iters / 10;
  /* here: what this process waits on and writes; there: the child's. */
  int here_in, here_out, there_in, there_out;
  if (tcp) {
    int c, s;
    tcp_pair(&c, &s);
    here_in = here_out = c;
    there_in = there_out = s;
  } else {
    int a = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), b = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (a < 0 || b < 0)
      die("eventfd");
    here_out = there_in = a;
    here_in = there_out = b;
  }
  pid_t child = fork();
  if (child < 0)
    die("fork");
  if (child == 0) {
    if (tcp)
      for (;;) {
        tcp_recv(there_in);
        tcp_send(there_out);
      }
    for (long i = 0; i < warm + iters; i++) {
      evfd_take(there_in);
      evfd_ring(there_out);
    }
    _exit(0);
  }
  uint64_t *s = malloc((size_t) iters * sizeof(*s));
  if (s == NULL)
    die("malloc");
  for (long i = 0; i < warm + iters; i++) {
    uint64_t t0 = now_ns();
    if (tcp) {
      tcp_send(here_out);
      tcp_recv(here_in);
    } else {
      evfd_ring(here_out);
      evfd_take(here_in);
    }
    uint64_t t1 = now_ns();
    if (i >= warm)
      s[i - warm] = t1 - t0;
  }
  if (tcp)
    shutdown(here_out, SHUT_RDWR);
  int status;
  waitpid(child, &status, 0);
  qsort(s, (size_t) iters, sizeof(*s), cmp_u64);
  uint64_t med = iters % 2 ? s[iters / 2] : (s[iters / 2 - 1] + s[iters / 2]) / 2;
  printf("%s %.3f %.3f %.3f\n", argv[1], (double) med / 2000.0, (double) s[0] / 2000.0,
         (double) s[(size_t) ((double) iters * 0.99)] / 2000.0);
  free(s);
  return 0;
}
