/*
 * iwarp-netpath: one end of a vp/iwarp connection across a real network
 * path, for netpath-test.sh (network namespaces, a veth pair, tbf, a
 * fault-injecting relay, the link taken down).
 *
 *   iwarp-netpath server PORT ROUNDS SIZE EXPECT
 *   iwarp-netpath client ADDR PORT ROUNDS SIZE EXPECT
 *
 * Both ends stream at once: round k is an RDMA Write of SIZE bytes of a
 * pattern into slot k of the peer's region, then a Send naming k.  A Send
 * that arrives means its Write was placed (RFC 5040 5.5: messages complete
 * in order), so the receiver compares the slot byte by byte.  After its
 * last round each end reads the peer's copy of that round back with an
 * RDMA Read and compares it, sends an end marker and waits for the peer's.
 * The regions are exchanged in the MPA private data.
 *
 * EXPECT "ok": every round and the Read verified, a clean disconnect.
 * EXPECT "broken": the script breaks the path mid-stream; the connection
 * must break (BROKEN, or DISCONNECTED from a reset) within LIMIT ms of the
 * fault (NETPATH_LIMIT_MS; the fault's CLOCK_BOOTTIME in seconds is read
 * from the file NETPATH_FAULT_FILE, written by whoever injected it), every
 * WR posted must complete exactly once, and nothing may hang.  Until the
 * fault, every round that arrived was verified all the same.
 *
 * Prints one line "netpath ROLE: ..." with the figures; exit 0 when the
 * expectation holds.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <glib.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rnicpi.h"
#include "iw_test_up.h"

extern const rnicpi_provider_t rnicpi_builtin_iwarp;

static const rnicpi_provider_t *P;

enum { SQ_DEPTH = 64, MSG = 16, END = 0xffffffffu, OVERALL_S = 90 };

/* What one end tells the other in the MPA private data. */
typedef struct region_msg {
  uint64_t addr_be;
  uint32_t stag_be;
} region_msg_t;

typedef struct end {
  gboolean server;
  uint32_t rounds, size;
  rnicpi_dev_t *dev;
  rnicpi_pd_t *pd;
  rnicpi_cq_t *scq, *rcq;
  rnicpi_qp_t *qp;
  rnicpi_mr_t *mr;
  uint8_t *buf;        /* region (peer writes) | source | read sink | messages */
  uint8_t *region, *src, *sink, *msgs;
  uint64_t peer_addr;
  uint32_t peer_stag;
  /* WR ids: sends 0 .. 2*rounds+1 (Write 2k, Send 2k+1, Read 2*rounds,
   * end marker 2*rounds+1); receives 0 .. rounds. */
  uint8_t *sdone, *rdone;
  uint32_t sposted, rposted, scompleted, rcompleted, sflushed, rflushed, twice;
  uint32_t sent_rounds, verified, bad;
  gboolean read_posted, read_ok, end_sent, end_got, broken, disconnected;
  double t_broken, t_last;
} end_t;

static double
boottime(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t
pattern(gboolean server, uint32_t k, uint32_t i)
{
  return (uint8_t) ((server ? 131 : 17) + k * 7 + i * 13 + (i >> 8));
}

static void
end_open(end_t *e)
{
  g_assert_cmpint(P->device->open("iwarp0", &ups, NULL, &e->dev), ==, RNICPI_OK);
  g_assert_cmpint(P->device->pd_alloc(e->dev, &e->pd), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_create(e->dev, 4 * SQ_DEPTH, 1, &e->scq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_create(e->dev, e->rounds + 8, 2, &e->rcq), ==, RNICPI_OK);
  rnicpi_qp_attr_t a = { .send_cq = e->scq, .recv_cq = e->rcq, .max_send_wr = SQ_DEPTH,
                         .max_recv_wr = e->rounds + 4, .max_send_sge = 1, .max_recv_sge = 1,
                         .max_rdma_write_sge = 1, .max_rdma_read_sge = 1, .ird = 4, .ord = 4,
                         .access = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE };
  g_assert_cmpint(P->queue->qp_create(e->pd, &a, 0xe0, &e->qp), ==, RNICPI_OK);
  size_t data = (size_t) e->rounds * e->size;
  size_t len = 2 * data + e->size + (size_t) (e->rounds + 2) * MSG;
  e->buf = g_malloc0(len);
  e->region = e->buf;
  e->src = e->buf + data;
  e->sink = e->src + data;
  e->msgs = e->sink + e->size;
  rnicpi_mr_attr_t m = { .addr = e->buf, .length = len, .iova = (uint64_t) (uintptr_t) e->buf,
                         .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                                   RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE };
  g_assert_cmpint(P->mem->mr_reg(e->pd, &m, &e->mr), ==, RNICPI_OK);
  e->sdone = g_malloc0(2 * e->rounds + 2);
  e->rdone = g_malloc0(e->rounds + 1);
  /* Every Send of the peer finds its receive posted (iWARP has no
   * receiver-not-ready retry, RFC 5040 7.1). */
  for (uint32_t k = 0; k <= e->rounds; k++) {
    rnicpi_sge_t g = { .addr = (uint64_t) (uintptr_t) (e->msgs + (size_t) k * MSG),
                       .length = MSG, .lkey = e->mr->lkey };
    rnicpi_recv_wr_t wr = { .wr_id = k, .sg_list = &g, .num_sge = 1 };
    g_assert_cmpint(P->data->post_recv(e->qp, &wr), ==, RNICPI_OK);
    e->rposted++;
  }
}

static void
end_close(end_t *e)
{
  g_assert_cmpint(P->queue->qp_destroy(e->qp), ==, RNICPI_OK);
  g_assert_cmpint(P->mem->mr_dereg(e->mr), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(e->scq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(e->rcq), ==, RNICPI_OK);
  g_assert_cmpint(P->device->pd_free(e->pd), ==, RNICPI_OK);
  P->device->close(e->dev);
  g_free(e->buf);
  g_free(e->sdone);
  g_free(e->rdone);
}

static rnicpi_cm_event_t *
next_cm(double deadline)
{
  for (;;) {
    rnicpi_cm_event_t *ev = g_async_queue_timeout_pop(cmq, 100000);
    if (ev != NULL)
      return ev;
    if (boottime() > deadline)
      return NULL;
  }
}

static void
take_region(end_t *e, const rnicpi_cm_event_t *ev)
{
  region_msg_t r;
  if (ev->pdata_len < sizeof(r))
    g_error("netpath: the peer's private data has %u bytes, not the %zu of its region",
            ev->pdata_len, sizeof(r));
  memcpy(&r, ev->pdata, sizeof(r));
  e->peer_addr = GUINT64_FROM_BE(r.addr_be);
  e->peer_stag = ntohl(r.stag_be);
}

static void
post_send(end_t *e, rnicpi_wr_opcode_t op, uint8_t *local, uint32_t len, uint64_t id,
          uint64_t raddr)
{
  rnicpi_sge_t g = { .addr = (uint64_t) (uintptr_t) local, .length = len, .lkey = e->mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = op, .flags = RNICPI_WR_SIGNALED, .sg_list = &g,
                          .num_sge = 1, .remote_addr = raddr, .rkey = e->peer_stag };
  rnicpi_status_t st = P->data->post_send(e->qp, &wr);
  if (st != RNICPI_OK)
    g_error("netpath: posting WR %" G_GUINT64_FORMAT " failed with status %d", id, st);
  e->sposted++;
}

/* Post what the send queue has room for. */
static void
pump(end_t *e)
{
  while (!e->broken && e->sent_rounds < e->rounds &&
         e->sposted - e->scompleted + 2 <= SQ_DEPTH) {
    uint32_t k = e->sent_rounds++;
    uint8_t *s = e->src + (size_t) k * e->size;
    for (uint32_t i = 0; i < e->size; i++)
      s[i] = pattern(e->server, k, i);
    post_send(e, RNICPI_WR_RDMA_WRITE, s, e->size, 2 * k, e->peer_addr + (uint64_t) k * e->size);
    /* The Send names its round by carrying the round's first 4 bytes (the
     * source stays untouched until the run ends). */
    post_send(e, RNICPI_WR_SEND, e->src + (size_t) k * e->size, 4, 2 * k + 1, 0);
  }
  if (!e->broken && e->sent_rounds == e->rounds && !e->read_posted &&
      e->sposted - e->scompleted < SQ_DEPTH) {
    /* Read the last round back from the peer. */
    e->read_posted = TRUE;
    post_send(e, RNICPI_WR_RDMA_READ, e->sink, e->size, 2 * e->rounds,
              e->peer_addr + (uint64_t) (e->rounds - 1) * e->size);
  }
  if (!e->broken && e->read_ok && !e->end_sent && e->sposted - e->scompleted < SQ_DEPTH) {
    e->end_sent = TRUE;
    uint8_t *m = e->msgs + (size_t) (e->rounds + 1) * MSG;
    memset(m, 0xff, 4);
    post_send(e, RNICPI_WR_SEND, m, 4, 2 * e->rounds + 1, 0);
  }
}

static void
poll_all(end_t *e)
{
  rnicpi_wc_t wc[32];
  int n;
  while ((n = P->data->poll_cq(e->scq, wc, 32)) > 0)
    for (int i = 0; i < n; i++) {
      uint64_t id = wc[i].wr_id;
      g_assert_cmpuint(id, <, 2 * e->rounds + 2);
      if (e->sdone[id]++ != 0)
        e->twice++;
      e->scompleted++;
      e->t_last = boottime();
      if (wc[i].status == RNICPI_WC_WR_FLUSH_ERR) {
        e->sflushed++;
        continue;
      }
      if (wc[i].status != RNICPI_WC_SUCCESS) {
        g_printerr("netpath: send WR %" G_GUINT64_FORMAT " completed with status %d\n", id,
                   wc[i].status);
        e->bad++;
        continue;
      }
      if (id == 2 * e->rounds) {
        const uint8_t *mine = e->src + (size_t) (e->rounds - 1) * e->size;
        if (memcmp(e->sink, mine, e->size) != 0) {
          g_printerr("netpath: the RDMA Read of round %u brought other bytes back\n",
                     e->rounds - 1);
          e->bad++;
        } else {
          e->read_ok = TRUE;
        }
      }
    }
  while ((n = P->data->poll_cq(e->rcq, wc, 32)) > 0)
    for (int i = 0; i < n; i++) {
      uint64_t id = wc[i].wr_id;
      g_assert_cmpuint(id, <=, e->rounds);
      if (e->rdone[id]++ != 0)
        e->twice++;
      e->rcompleted++;
      e->t_last = boottime();
      if (wc[i].status == RNICPI_WC_WR_FLUSH_ERR) {
        e->rflushed++;
        continue;
      }
      if (wc[i].status != RNICPI_WC_SUCCESS || wc[i].byte_len != 4) {
        g_printerr("netpath: receive %" G_GUINT64_FORMAT " completed with status %d, %u bytes\n",
                   id, wc[i].status, wc[i].byte_len);
        e->bad++;
        continue;
      }
      /* The Send carries the first 4 bytes of its round's source. */
      const uint8_t *m = e->msgs + (size_t) id * MSG;
      if (m[0] == 0xff && m[1] == 0xff && m[2] == 0xff && m[3] == 0xff &&
          e->verified == e->rounds) {
        e->end_got = TRUE;
        continue;
      }
      uint32_t k = e->verified; /* Sends arrive in order */
      const uint8_t *slot = e->region + (size_t) k * e->size;
      gboolean ok = TRUE;
      for (uint32_t j = 0; j < e->size && ok; j++)
        ok = slot[j] == pattern(!e->server, k, j);
      for (uint32_t j = 0; j < 4 && ok; j++)
        ok = m[j] == pattern(!e->server, k, j);
      if (!ok) {
        g_printerr("netpath: round %u: the bytes in the region are not the peer's pattern\n", k);
        e->bad++;
      }
      e->verified++;
    }
}

static void
cm_event(end_t *e, rnicpi_cm_event_t *ev)
{
  if (ev->type == RNICPI_CM_BROKEN || ev->type == RNICPI_CM_DISCONNECTED) {
    if (!e->broken)
      e->t_broken = boottime();
    e->broken = TRUE;
    e->disconnected = ev->type == RNICPI_CM_DISCONNECTED;
  }
  g_free(ev);
}

static double
fault_time(void)
{
  const char *f = g_getenv("NETPATH_FAULT_FILE");
  gchar *text = NULL;
  double t = 0;
  if (f != NULL && g_file_get_contents(f, &text, NULL, NULL))
    t = g_ascii_strtod(text, NULL);
  g_free(text);
  return t;
}

int
main(int argc, char **argv)
{
  P = &rnicpi_builtin_iwarp;
  end_t e = { 0 };
  if (argc < 2 || (strcmp(argv[1], "server") == 0 ? argc != 6 : argc != 7))
    g_error("usage: iwarp-netpath server PORT ROUNDS SIZE ok|broken | "
            "client ADDR PORT ROUNDS SIZE ok|broken");
  e.server = strcmp(argv[1], "server") == 0;
  int a = e.server ? 2 : 3;
  uint32_t port = (uint32_t) atoi(argv[a]);
  e.rounds = (uint32_t) atoi(argv[a + 1]);
  e.size = (uint32_t) atoi(argv[a + 2]);
  gboolean expect_ok = strcmp(argv[a + 3], "ok") == 0;
  if (e.rounds < 1 || e.rounds > 4096 || e.size < 4 || e.size > (1u << 20))
    g_error("netpath: ROUNDS must be 1-4096 and SIZE 4 bytes to 1 MiB (got %u and %u)",
            e.rounds, e.size);
  const char *lim = g_getenv("NETPATH_LIMIT_MS");
  double limit_s = (lim != NULL ? atoi(lim) : 10000) / 1e3;
  const char *role = e.server ? "server" : "client";
  cmq = g_async_queue_new();
  end_open(&e);
  double t0 = boottime(), deadline = t0 + OVERALL_S;

  region_msg_t mine = { .addr_be = GUINT64_TO_BE((uint64_t) (uintptr_t) e.region),
                        .stag_be = htonl((uint32_t) e.mr->rkey) };
  rnicpi_conn_param_t cp = { .pdata = &mine, .pdata_len = sizeof(mine), .ird = 4, .ord = 4 };
  rnicpi_listen_t *l = NULL;
  if (e.server) {
    g_assert_cmpint(P->cm->listen(e.dev, port, 0x77, &l), ==, RNICPI_OK);
    g_print("netpath server: listening on %u\n", port);
    rnicpi_cm_event_t *ev = next_cm(deadline);
    if (ev == NULL || ev->type != RNICPI_CM_CONNECT_REQUEST)
      g_error("netpath server: no connection request within %d s", OVERALL_S);
    take_region(&e, ev);
    g_assert_cmpint(P->cm->accept(e.qp, ev->conn_id, &cp), ==, RNICPI_OK);
    g_free(ev);
  } else {
    rnicpi_addr_t dst = { 0 };
    struct sockaddr_in *sin = (struct sockaddr_in *) &dst.sa;
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t) port);
    if (inet_pton(AF_INET, argv[2], &sin->sin_addr) != 1)
      g_error("netpath client: %s is not an IPv4 address", argv[2]);
    g_assert_cmpint(P->cm->connect(e.qp, &dst, &cp), ==, RNICPI_OK);
  }
  rnicpi_cm_event_t *ev = next_cm(deadline);
  if (ev == NULL || ev->type != RNICPI_CM_ESTABLISHED)
    g_error("netpath %s: CM event %d instead of ESTABLISHED", role, ev != NULL ? (int) ev->type : -1);
  if (!e.server)
    take_region(&e, ev);
  g_free(ev);
  if (l != NULL)
    g_assert_cmpint(P->cm->unlisten(l), ==, RNICPI_OK);
  g_print("netpath %s: established\n", role);
  e.t_last = boottime();

  /* Stream until done, broken, or the overall deadline. */
  while (!e.broken && !(e.end_sent && e.end_got && e.scompleted == e.sposted)) {
    if (boottime() > deadline)
      g_error("netpath %s: stuck after %d s: %u of %u rounds sent, %u verified, %u of %u "
              "sends completed; the connection neither finished nor broke",
              role, OVERALL_S, e.sent_rounds, e.rounds, e.verified, e.scompleted, e.sposted);
    pump(&e);
    poll_all(&e);
    while ((ev = g_async_queue_try_pop(cmq)) != NULL)
      cm_event(&e, ev);
    g_usleep(200);
  }
  double t_end = boottime();
  if (!e.broken) {
    /* Done: the client closes; the server waits for that. */
    if (!e.server)
      g_assert_cmpint(P->cm->disconnect(e.qp, NULL, 0), ==, RNICPI_OK);
    while (!e.broken && (ev = next_cm(boottime() + 10)) != NULL)
      cm_event(&e, ev);
  }
  /* Every WR completes once: what was in flight flushes. */
  double flush_deadline = boottime() + 10;
  while ((e.scompleted < e.sposted || e.rcompleted < e.rposted) && boottime() < flush_deadline) {
    poll_all(&e);
    g_usleep(1000);
  }
  double tf = fault_time();
  double detect = e.broken ? e.t_broken - (tf > 0 ? tf : e.t_last) : -1;
  g_print("netpath %s: %u/%u rounds sent, %u verified, read back %s, %s after %.2f s%s%.0f ms; "
          "sends %u posted %u completed (%u flushed), receives %u posted %u completed "
          "(%u flushed), %u completed twice, %u bad\n",
          role, e.sent_rounds, e.rounds, e.verified, e.read_ok ? "ok" : "no",
          !e.broken ? "finished" : e.disconnected ? "DISCONNECTED" : "BROKEN", t_end - t0,
          tf > 0 ? ", detected after the fault in " : ", silence before it ", detect * 1e3,
          e.sposted, e.scompleted, e.sflushed, e.rposted, e.rcompleted, e.rflushed, e.twice,
          e.bad);
  int rc = 0;
  if (e.bad > 0 || e.twice > 0 || e.scompleted != e.sposted || e.rcompleted != e.rposted) {
    g_printerr("netpath %s: FAIL: every WR must complete exactly once with its bytes right\n",
               role);
    rc = 1;
  }
  if (expect_ok && (!e.read_ok || e.verified != e.rounds || !e.end_got)) {
    g_printerr("netpath %s: FAIL: the path works, yet not every round was verified\n", role);
    rc = 1;
  }
  if (!expect_ok && !e.broken) {
    g_printerr("netpath %s: FAIL: the path was broken, yet the transfer finished; the fault "
               "came too late (lower the link rate or raise ROUNDS)\n", role);
    rc = 1;
  }
  if (!expect_ok && e.broken && detect > limit_s) {
    g_printerr("netpath %s: FAIL: the broken path was detected after %.0f ms, beyond the "
               "%.0f ms allowed (ITAPI_IWARP_TIMEOUT_MS)\n", role, detect * 1e3, limit_s * 1e3);
    rc = 1;
  }
  end_close(&e);
  for (gpointer x; (x = g_async_queue_try_pop(cmq)) != NULL;)
    g_free(x);
  g_async_queue_unref(cmq);
  return rc;
}
