/*
 * cert-rnicpi /rnicpi/wait: sleeping on a provider's own descriptors until
 * a CQ has a completion (RNIC-PI 1.11 cq_wait_begin, cq_wait_end), as the
 * access layer's it_evd_wait does: begin, arm the CQ, look at it, poll the
 * descriptors while watching cq_notify, end.  Whatever wakes the sleeper
 * (a descriptor, the notification, the completion already there), the
 * completion must come, and none may be stranded: after cq_wait_end it is
 * in the CQ, or on its way with a notification.  A provider without the
 * operations (older than 1.11) is skipped.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <poll.h>
#include <string.h>

#include "cert.h"


#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define WAIT_FDS 8
#define LEN 256

typedef enum {
  WOKE_NONE,    /* the sleep ran its whole time */
  WOKE_READY,   /* the CQ held a completion before the sleep */
  WOKE_FD,      /* a descriptor of the provider's was ready */
  WOKE_NOTIFY,  /* the cq_notify upcall came */
} woke_t;

/* One sleep as the access layer sleeps, of at most @ms; what ended it.
 * FALSE (a skip) when the provider offers no such sleep.  @nfds: how many
 * descriptors the provider named. */
static gboolean
sleep_on(cert_t *f, rnicpi_cq_t *cq, guint ms, woke_t *woke, uint32_t *nfds)
{
  struct pollfd fds[WAIT_FDS];
  memset(fds, 0, sizeof(fds));
  uint32_t n = WAIT_FDS;
  rnicpi_status_t st = DAT->cq_wait_begin(cq, fds, &n);
  if (st == RNICPI_ENOTSUP) {
    g_test_skip("the provider has no descriptors to sleep on: cq_wait_begin says RNICPI_ENOTSUP "
                "(RNIC-PI older than 1.11, or not offered); its CQs are waited for by cq_notify");
    return FALSE;
  }
  cert_ok(st);
  g_assert_cmpuint(n, <=, WAIT_FDS);
  for (uint32_t i = 0; i < n; i++) {
    g_assert_cmpint(fcntl(fds[i].fd, F_GETFD), >=, 0);
    g_assert_cmpint(fds[i].events, !=, 0);
  }
  *nfds = n;
  cert_ok(DAT->arm_cq(cq));
  *woke = WOKE_NONE;
  if (DAT->cq_count(cq) > 0)
    *woke = WOKE_READY;
  cert_limit_t w;
  cert_limit_begin(&w, "a CQ's descriptor or notification (cq_wait_begin)", (gint64) ms * 1000);
  while (*woke == WOKE_NONE && !cert_limit_over(&w)) {
    /* Slices of 10 ms: the notification reaches this test through a queue,
     * not a descriptor. */
    int r = poll(fds, n, 10);
    g_assert_cmpint(r, >=, 0);
    if (r > 0)
      *woke = WOKE_FD;
    else if (cert_wait_notify(f, cq->al_ctx, 0))
      *woke = WOKE_NOTIFY;
  }
  cert_limit_end(&w);
  DAT->cq_wait_end(cq, fds, n);
  return TRUE;
}

static const char *
woke_name(woke_t w)
{
  static const char *const names[] = { "nothing", "the completion already there",
                                       "a descriptor of the provider's", "cq_notify" };
  return names[w];
}

/* After a sleep that ended: the receive @id of @len bytes is in @cq, now
 * or soon (a provider may still be delivering it), and it is whole. */
static void
expect_recv(rnicpi_cq_t *cq, uint64_t ctx, uint64_t id, uint32_t len, const cert_buf_t *dst,
            uint8_t seed)
{
  rnicpi_wc_t wc = cert_wc(cq);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmphex(wc.qp_ctx, ==, ctx);
  g_assert_cmpuint(wc.byte_len, ==, len);
  cert_buf_check(dst, 0, len, seed);
  cert_buf_check_guards(dst);
}

typedef struct {
  cert_pair_t *pr;
  cert_buf_t *src;
  guint delay_ms;
  uint64_t id;
} late_send_t;

static gpointer
late_send(gpointer data)
{
  late_send_t *ls = data;
  g_usleep((gulong) ls->delay_ms * 1000);
  cert_post_send(ls->pr->a.qp, RNICPI_WR_SEND, ls->src, 0, LEN, ls->id, RNICPI_WR_SIGNALED, 0, 0);
  return NULL;
}

static void
test_wait_send_wakes(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.cq_wait_begin/cq_wait_end: a receiver asleep on the provider's "
                 "descriptors (and its cq_notify) wakes when the peer's Send arrives, and once "
                 "the sleep is over the receive is in its CQ, whole; five times in a row");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, LEN, RW);
  cert_buf_new(pr.p.pd, &dst, LEN, RW);
  for (int i = 0; i < 5; i++) {
    cert_buf_fill(&src, (uint8_t) (0x40 + i));
    memset(dst.data, 0, LEN);
    cert_post_recv(pr.p.qp, &dst, 0, LEN, 0x3000 + (uint64_t) i);
    late_send_t ls = { &pr, &src, 30, 0x3100 + (uint64_t) i };
    GThread *t = g_thread_new("late-send", late_send, &ls);
    woke_t woke;
    uint32_t n;
    gboolean ran = sleep_on(f, pr.p.rcq, CERT_TIMEOUT_MS, &woke, &n);
    g_thread_join(t);
    if (!ran)
      break;
    g_test_message("sleep %d on %u descriptor(s) ended by %s", i, n, woke_name(woke));
    g_assert_cmpint(woke, !=, WOKE_NONE);
    expect_recv(pr.p.rcq, pr.p.ctx, 0x3000 + (uint64_t) i, LEN, &dst, (uint8_t) (0x40 + i));
    rnicpi_wc_t wc = cert_wc(pr.a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0x3100 + (uint64_t) i);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    /* Left armed by the sleep: a late notification is allowed, not owed. */
    while (cert_wait_notify(f, pr.p.rcq->al_ctx, 0))
      ;
  }
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_wait_already_there(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.cq_wait_begin: a Send that arrived before the receiver went to sleep "
                 "is not stranded: the sleep ends at once (the completion is there, a descriptor "
                 "is ready or the notification comes) and the receive is in the CQ after "
                 "cq_wait_end");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, LEN, RW);
  cert_buf_new(pr.p.pd, &dst, LEN, RW);
  cert_buf_fill(&src, 0x51);
  cert_post_recv(pr.p.qp, &dst, 0, LEN, 0x3200);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, LEN, 0x3201, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x3201);
  g_usleep(20000);  /* on the wire, or in the peer's socket, ring or CQ by now */
  woke_t woke;
  uint32_t n;
  if (sleep_on(f, pr.p.rcq, CERT_TIMEOUT_MS, &woke, &n)) {
    g_test_message("sleep on %u descriptor(s) ended by %s", n, woke_name(woke));
    g_assert_cmpint(woke, !=, WOKE_NONE);
    expect_recv(pr.p.rcq, pr.p.ctx, 0x3200, LEN, &dst, 0x51);
  }
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_wait_timeout(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.cq_wait_end after a sleep that timed out: nothing completed, and the "
                 "CQ works as before: a Send that arrives afterwards is polled from it and, the "
                 "CQ being armed, brings its cq_notify; a hundred empty sleeps leave nothing "
                 "behind either");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, LEN, RW);
  cert_buf_new(pr.p.pd, &dst, LEN, RW);
  cert_post_recv(pr.p.qp, &dst, 0, LEN, 0x3300);
  woke_t woke;
  uint32_t n;
  if (!sleep_on(f, pr.p.rcq, CERT_QUIET_MS, &woke, &n))
    goto free_bufs;
  g_assert_cmpint(woke, ==, WOKE_NONE);
  g_assert_cmpuint(DAT->cq_count(pr.p.rcq), ==, 0);
  for (int i = 0; i < 100; i++) {
    struct pollfd fds[WAIT_FDS];
    uint32_t k = WAIT_FDS;
    cert_ok(DAT->cq_wait_begin(pr.p.rcq, fds, &k));
    for (uint32_t j = 0; j < k; j++)
      fds[j].revents = 0;
    DAT->cq_wait_end(pr.p.rcq, fds, k);
  }
  /* Armed by the first sleep and never since fired: the Send notifies. */
  cert_buf_fill(&src, 0x62);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, LEN, 0x3301, RNICPI_WR_SIGNALED, 0, 0);
  g_assert_true(cert_wait_notify(f, pr.p.rcq->al_ctx, CERT_TIMEOUT_MS));
  expect_recv(pr.p.rcq, pr.p.ctx, 0x3300, LEN, &dst, 0x62);
  g_assert_cmphex(cert_wc(pr.a.scq).wr_id, ==, 0x3301);
free_bufs:
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_wait_xproc(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.cq_wait_begin/cq_wait_end with the sender in another process: the "
                 "receiver asleep on the provider's descriptors wakes for each of the peer's "
                 "Sends and finds each receive whole in its CQ after cq_wait_end; ten in a row, "
                 "with the sender's completions in order");
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  cert_buf_t dst;
  cert_buf_new(pe.a.pd, &dst, LEN, RW);
  cert_peer_reg(&pe, 0, 0, LEN, RW, FALSE);
  for (int i = 0; i < 10; i++) {
    memset(dst.data, 0, LEN);
    cert_post_recv(pe.a.qp, &dst, 0, LEN, 0x3400 + (uint64_t) i);
    cert_peer_do(&pe, "fill 0 %d", 0x70 + i);
    /* Asked, not waited for: the Send comes while this side sleeps. */
    cert_peer_send(&pe, "post send 0 0 %d 0 0 0x%x", LEN, 0x3500 + i);
    woke_t woke;
    uint32_t n;
    gboolean ran = sleep_on(f, pe.a.rcq, CERT_TIMEOUT_MS, &woke, &n);
    g_free(cert_peer_reply(&pe));
    if (!ran)
      break;
    g_test_message("sleep %d on %u descriptor(s) ended by %s", i, n, woke_name(woke));
    g_assert_cmpint(woke, !=, WOKE_NONE);
    expect_recv(pe.a.rcq, pe.a.ctx, 0x3400 + (uint64_t) i, LEN, &dst, (uint8_t) (0x70 + i));
    g_autofree char *s = cert_peer_call(&pe, "wc s %d", CERT_TIMEOUT_MS);
    g_autofree char *want = g_strdup_printf("0x%x %d %d ", 0x3500 + i, RNICPI_WC_SUCCESS, RNICPI_WC_SEND);
    g_assert_true(g_str_has_prefix(s, want));
    while (cert_wait_notify(f, pe.a.rcq->al_ctx, 0))
      ;
  }
  cert_buf_free(&dst);
  cert_peer_close(&pe);
}

static void
test_wait_write_alone(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.post_send: a small unsignaled RDMA Write posted by a consumer that polls "
                 "its CQs busily, or sleeps on them, and then neither posts, polls nor sleeps again, "
                 "still lands (a provider may hold it for the consumer's next step, to send it with "
                 "what follows, as vp/iwarp does for a sleeper, but not for ever); a Write then Send "
                 "pair lands whole, the Write's bytes in place when the Send's receive completes");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst, rb;
  cert_buf_new(pr.a.pd, &src, LEN, RW);
  cert_buf_new(pr.p.pd, &dst, LEN, RW | RNICPI_ACCESS_REMOTE_WRITE);
  cert_buf_new(pr.p.pd, &rb, 64, RW);
#ifdef ITAPI_TSAN_GLIB_H
  /* Watched here while the provider places into it, as memory a NIC
   * writes by DMA (doc/sanitizers.md). */
  ITAPI_TSAN_DMA_TARGET(dst.data, dst.len, "an RDMA Write target the test polls while it lands");
#endif
  for (int round = 0; round < 2; round++) {
    uint8_t seed = (uint8_t) (0x90 + round);
    cert_buf_fill(&src, seed);
    memset(dst.data, 0, LEN);
    if (round == 0) {
      /* A busy poller: empty polls close together. */
      rnicpi_wc_t wc;
      for (int i = 0; i < 50; i++)
        g_assert_cmpint(DAT->poll_cq(pr.a.scq, &wc, 1), ==, 0);
    } else {
      /* A sleeper that woke (the lease of a sleep, then of a poller). */
      woke_t woke;
      uint32_t n;
      if (!sleep_on(f, pr.a.scq, 20, &woke, &n))
        break;
      while (cert_wait_notify(f, pr.a.scq->al_ctx, 0))
        ;
    }
    cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 64, 0x3600 + (uint64_t) round, 0,
                   cert_raddr(&dst, 0), dst.mr->rkey);
    /* Nothing more from this side: the bytes must come anyway. */
    gint64 t0 = g_get_monotonic_time();
    cert_limit_t w;
    cert_limit_begin(&w, "an RDMA Write's last byte to land", (gint64) CERT_TIMEOUT_MS * 1000);
    while (memcmp(dst.data + 63, src.data + 63, 1) != 0 && !cert_limit_over(&w))
      g_usleep(200);
    cert_limit_end(&w);
    g_test_message("round %d: the Write landed within %" G_GINT64_FORMAT " us", round,
                   g_get_monotonic_time() - t0);
    g_usleep(1000);  /* the rest may land after the last byte (iWARP: any order) */
    cert_buf_check(&dst, 0, 64, seed);
    for (size_t i = 64; i < LEN; i++)
      g_assert_cmphex(dst.data[i], ==, 0);
    /* And a Write with its notifying Send. */
    cert_post_recv(pr.p.qp, &rb, 0, 64, 0x3700 + (uint64_t) round);
    cert_buf_fill(&src, (uint8_t) (seed + 8));
    cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 64, 64, 0x3610 + (uint64_t) round, 0,
                   cert_raddr(&dst, 64), dst.mr->rkey);
    cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 0, 0x3620 + (uint64_t) round, RNICPI_WR_SIGNALED,
                   0, 0);
    rnicpi_wc_t r = cert_wc(pr.p.rcq);
    g_assert_cmphex(r.wr_id, ==, 0x3700 + (uint64_t) round);
    g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpuint(r.byte_len, ==, 0);
    /* The Send arrived after the Write: its bytes are in place. */
    for (size_t i = 0; i < 64; i++)
      g_assert_cmphex(dst.data[64 + i], ==, cert_pattern((uint8_t) (seed + 8), 64 + i));
    rnicpi_wc_t s = cert_wc(pr.a.scq);
    g_assert_cmphex(s.wr_id, ==, 0x3620 + (uint64_t) round);
    g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  }
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_buf_free(&rb);
  cert_pair_free(&pr);
}

void
cert_register_wait(void)
{
  cert_add("/rnicpi/wait/send-wakes", test_wait_send_wakes);
  cert_add("/rnicpi/wait/already-there", test_wait_already_there);
  cert_add("/rnicpi/wait/timeout", test_wait_timeout);
  cert_add("/rnicpi/wait/write-alone", test_wait_write_alone);
  cert_add("/rnicpi/xproc/wait", test_wait_xproc);
}
