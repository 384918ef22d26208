/*
 * iwarp-scale: one process holds many idle vp/iwarp connections.
 *
 *   iwarp-scale N PORT [SAMPLE]
 *
 * A forked peer process listens on PORT and accepts every request; this
 * process opens N RC queue pairs on one pair of CQs and connects them all
 * over the CM verbs (at most WINDOW handshakes in flight), then moves a
 * Send on SAMPLE of them (default 100, spread over the N), which the peer
 * echoes back, and checks every byte.  It prints the set-up time and the
 * resident memory per connection.  RLIMIT_NOFILE is raised to its hard
 * limit first; if that is too low for N sockets it says so and skips (77).
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <glib.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rnicpi.h"
#include "iw_test_up.h"

extern const rnicpi_provider_t rnicpi_builtin_iwarp;

enum { SLOT = 64, WINDOW = 256 };

static const rnicpi_provider_t *P;

typedef struct side {
  rnicpi_dev_t *dev;
  rnicpi_pd_t *pd;
  rnicpi_cq_t *scq, *rcq;
  rnicpi_mr_t *mr;
  uint8_t *buf;     /* N receive slots, then N send slots */
  rnicpi_qp_t **qp;
  uint32_t n;
} side_t;

static void
side_open(side_t *s, uint32_t n)
{
  s->n = n;
  g_assert_cmpint(P->device->open("iwarp0", &ups, NULL, &s->dev), ==, RNICPI_OK);
  g_assert_cmpint(P->device->pd_alloc(s->dev, &s->pd), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_create(s->dev, 4096, 1, &s->scq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_create(s->dev, 4096, 2, &s->rcq), ==, RNICPI_OK);
  s->buf = g_malloc0((size_t) n * SLOT * 2);
  rnicpi_mr_attr_t m = { .addr = s->buf, .length = (uint64_t) n * SLOT * 2,
                         .iova = (uint64_t) (uintptr_t) s->buf,
                         .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE };
  g_assert_cmpint(P->mem->mr_reg(s->pd, &m, &s->mr), ==, RNICPI_OK);
  s->qp = g_new0(rnicpi_qp_t *, n);
}

/* Undo side_open once every queue pair is destroyed: what the process
 * allocated is all given back, so that LeakSanitizer (an ASan build)
 * finds nothing at exit. */
static void
side_close(side_t *s)
{
  g_assert_cmpint(P->mem->mr_dereg(s->mr), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(s->scq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(s->rcq), ==, RNICPI_OK);
  g_assert_cmpint(P->device->pd_free(s->pd), ==, RNICPI_OK);
  P->device->close(s->dev);
  g_free(s->buf);
  g_free(s->qp);
}

static rnicpi_qp_t *
qp_new(side_t *s, uint32_t i)
{
  rnicpi_qp_attr_t a = { .send_cq = s->scq, .recv_cq = s->rcq, .max_send_wr = 4,
                         .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1,
                         .max_rdma_write_sge = 1, .max_rdma_read_sge = 1, .ird = 1, .ord = 1 };
  g_assert_cmpint(P->queue->qp_create(s->pd, &a, i, &s->qp[i]), ==, RNICPI_OK);
  return s->qp[i];
}

static void
post_recv(side_t *s, uint32_t i)
{
  rnicpi_sge_t g = { .addr = (uint64_t) (uintptr_t) (s->buf + (size_t) i * SLOT),
                     .length = SLOT, .lkey = s->mr->lkey };
  rnicpi_recv_wr_t wr = { .wr_id = i, .sg_list = &g, .num_sge = 1 };
  g_assert_cmpint(P->data->post_recv(s->qp[i], &wr), ==, RNICPI_OK);
}

static void
post_send(side_t *s, uint32_t i, const uint8_t *src)
{
  rnicpi_sge_t g = { .addr = (uint64_t) (uintptr_t) src, .length = SLOT, .lkey = s->mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = i, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &g, .num_sge = 1 };
  g_assert_cmpint(P->data->post_send(s->qp[i], &wr), ==, RNICPI_OK);
}

static long
rss_kib(void)
{
  long kb = -1;
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  while (f != NULL && fgets(line, sizeof(line), f) != NULL)
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
      break;
  if (f != NULL)
    fclose(f);
  return kb;
}

/* The peer: accept N requests, echo every Send back on its connection.  Once
 * the SAMPLE echoes are out, the other side destroys its queue pairs: the
 * receives still posted here flush, possibly before the broken-connection
 * event is read, and either one ends the peer.  A flush before that is an
 * error. */
static int
peer(uint32_t n, uint32_t sample, uint32_t port, int ready_fd)
{
  side_t s;
  side_open(&s, n);
  rnicpi_listen_t *l;
  /* The sockets of a previous run on this port may still be closing. */
  rnicpi_status_t st;
  for (int i = 0; (st = P->cm->listen(s.dev, port, 0x77, &l)) != RNICPI_OK && i < 100; i++)
    g_usleep(100000);
  if (st != RNICPI_OK)
    g_error("peer: cannot listen on TCP port %u (status %d) for 10 s", port, st);
  g_assert_cmpint(write(ready_fd, "r", 1), ==, 1);
  uint32_t accepted = 0, echoed = 0;
  for (;;) {
    rnicpi_cm_event_t *ev = g_async_queue_timeout_pop(cmq, 1000);
    if (ev != NULL && ev->type == RNICPI_CM_CONNECT_REQUEST) {
      if (accepted == n)
        g_error("peer: more than %u connection requests", n);
      uint32_t k = accepted++;
      qp_new(&s, k);
      post_recv(&s, k);
      rnicpi_conn_param_t cp = { .ird = 1, .ord = 1 };
      g_assert_cmpint(P->cm->accept(s.qp[k], ev->conn_id, &cp), ==, RNICPI_OK);
    } else if (ev != NULL && (ev->type == RNICPI_CM_BROKEN || ev->type == RNICPI_CM_DISCONNECTED)) {
      g_free(ev);
      break; /* the other side is going away */
    }
    g_free(ev);
    rnicpi_wc_t wc[64];
    int got;
    while ((got = P->data->poll_cq(s.rcq, wc, 64)) > 0)
      for (int i = 0; i < got; i++) {
        if (wc[i].status == RNICPI_WC_WR_FLUSH_ERR && echoed == sample)
          _exit(0); /* the other side is going away */
        if (wc[i].status != RNICPI_WC_SUCCESS)
          g_error("peer: receive on connection %" G_GUINT64_FORMAT " ended with status %d "
                  "after %u of %u echoes", wc[i].wr_id, wc[i].status, echoed, sample);
        echoed++;
        uint32_t k = (uint32_t) wc[i].wr_id;
        uint8_t *out = s.buf + ((size_t) n + k) * SLOT;
        memcpy(out, s.buf + (size_t) k * SLOT, SLOT);
        post_send(&s, k, out);
      }
    while (P->data->poll_cq(s.scq, wc, 64) > 0)
      ;
  }
  _exit(0);
}

static void
pattern(uint8_t *p, uint32_t i)
{
  for (uint32_t j = 0; j < SLOT; j++)
    p[j] = (uint8_t) (i * 7 + j * 13 + (i >> 8));
}

int
main(int argc, char **argv)
{
  if (argc < 3)
    g_error("usage: iwarp-scale N PORT [SAMPLE]");
  uint32_t n = (uint32_t) atoi(argv[1]), port = (uint32_t) atoi(argv[2]);
  uint32_t sample = argc > 3 ? (uint32_t) atoi(argv[3]) : 100;
  sample = MIN(sample, n);
  P = &rnicpi_builtin_iwarp;

  /* Each connection is a socket in each process, plus a few descriptors. */
  struct rlimit rl;
  g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t) n + 64) {
    g_print("SKIP: %u connections need %u file descriptors per process, but the hard limit "
            "of RLIMIT_NOFILE is %llu; raise it (ulimit -Hn, or LimitNOFILE= in systemd) "
            "or run with a smaller N\n", n, n + 64, (unsigned long long) rl.rlim_max);
    return 77;
  }

  int pfd[2];
  g_assert_cmpint(pipe(pfd), ==, 0);
  pid_t child = fork();
  g_assert_cmpint(child, >=, 0);
  if (child == 0) {
    close(pfd[0]);
    cmq = g_async_queue_new();
    return peer(n, sample, port, pfd[1]);
  }
  close(pfd[1]);
  char c;
  g_assert_cmpint(read(pfd[0], &c, 1), ==, 1);
  cmq = g_async_queue_new();

  side_t s;
  side_open(&s, n);
  long rss0 = rss_kib();
  gint64 t0 = g_get_monotonic_time();
  rnicpi_addr_t dst = { 0 };
  struct sockaddr_in *sin = (struct sockaddr_in *) &dst.sa;
  sin->sin_family = AF_INET;
  sin->sin_port = htons((uint16_t) port);
  sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint32_t started = 0, established = 0;
  while (established < n) {
    while (started < n && started - established < WINDOW) {
      rnicpi_conn_param_t cp = { .ird = 1, .ord = 1 };
      qp_new(&s, started);
      g_assert_cmpint(P->cm->connect(s.qp[started], &dst, &cp), ==, RNICPI_OK);
      started++;
    }
    rnicpi_cm_event_t *ev = g_async_queue_timeout_pop(cmq, 30 * G_USEC_PER_SEC);
    if (ev == NULL)
      g_error("no CM event within 30 s (%u of %u established)", established, n);
    if (ev->type != RNICPI_CM_ESTABLISHED)
      g_error("connection %" G_GUINT64_FORMAT ": CM event %d instead of ESTABLISHED "
              "(%u of %u established)", ev->qp_ctx, ev->type, established, n);
    established++;
    g_free(ev);
  }
  gint64 t1 = g_get_monotonic_time();
  long rss1 = rss_kib();
  for (uint32_t i = 0; i < n; i++)
    g_assert_cmpint(P->queue->qp_state(s.qp[i]), ==, RNICPI_QPS_RTS);

  /* Verified data on a sample spread over all of them. */
  for (uint32_t k = 0; k < sample; k++) {
    uint32_t i = (uint32_t) ((uint64_t) k * n / sample);
    post_recv(&s, i);
    uint8_t *out = s.buf + ((size_t) n + i) * SLOT;
    pattern(out, i);
    post_send(&s, i, out);
  }
  uint32_t echoed = 0, sent = 0;
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  while (echoed < sample || sent < sample) {
    rnicpi_wc_t wc[64];
    int got = P->data->poll_cq(s.rcq, wc, 64);
    for (int j = 0; j < got; j++) {
      uint32_t i = (uint32_t) wc[j].wr_id;
      g_assert_cmpint(wc[j].status, ==, RNICPI_WC_SUCCESS);
      g_assert_cmpuint(wc[j].byte_len, ==, SLOT);
      uint8_t want[SLOT];
      pattern(want, i);
      g_assert_cmpmem(s.buf + (size_t) i * SLOT, SLOT, want, SLOT);
      echoed++;
    }
    got = P->data->poll_cq(s.scq, wc, 64);
    for (int j = 0; j < got; j++) {
      g_assert_cmpint(wc[j].status, ==, RNICPI_WC_SUCCESS);
      sent++;
    }
    if (g_get_monotonic_time() > deadline)
      g_error("data phase: %u of %u echoes and %u of %u send completions within 30 s",
              echoed, sample, sent, sample);
  }
  gint64 t2 = g_get_monotonic_time();
  long rss2 = rss_kib();
  g_print("%u connections established in %.2f s (%.0f per second, %u handshakes in flight)\n",
          n, (double) (t1 - t0) / 1e6, n / ((double) (t1 - t0) / 1e6), (unsigned) WINDOW);
  g_print("resident memory: %ld KiB before, %ld KiB with %u connections: %.2f KiB per "
          "connection (user space; the kernel's socket buffers are not counted)\n",
          rss0, rss1, n, (double) (rss1 - rss0) / n);
  g_print("Send + echo verified on %u connections spread over the %u in %.1f ms; resident "
          "memory after: %ld KiB\n", sample, n, (double) (t2 - t1) / 1e3, rss2);

  for (uint32_t i = 0; i < n; i++)
    g_assert_cmpint(P->queue->qp_destroy(s.qp[i]), ==, RNICPI_OK);
  int st = 0;
  g_assert_cmpint(waitpid(child, &st, 0), ==, child);
  g_assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  side_close(&s);
  /* The BROKEN events of the connections the peer closed, never read. */
  for (gpointer ev; (ev = g_async_queue_try_pop(cmq)) != NULL;)
    g_free(ev);
  g_async_queue_unref(cmq);
  g_print("ok\n");
  return 0;
}
