/*
 * itapi-perf -T N: the message rate of N threads of one process, each with
 * an endpoint pair of its own on one interface, side by side: what the
 * stack's locking lets threads do at once (ucx_perftest -T, fi_msg_bw's
 * threads).  Each thread drives both ends of its pair: it posts on the
 * sending end, keeps receives posted on the other and reaps both EVDs,
 * busy-polling.  The threads start each test and size together (a
 * barrier); the aggregate rate is all their messages over the longest
 * thread's time.
 *
 * SPDX-License-Identifier: MIT
 */
#include "itapi_perf.h"

#include "../tool_addr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RATE_DEFAULT_SEC 1.0
#define RATE_WARMUP_MSGS 2000

typedef struct {
  const config_t *cfg;
  it_ia_handle_t ia;
  unsigned index;
  pthread_barrier_t *barrier;
  char role_tx[32], role_rx[32];
  side_t tx, rx;             /* the sending end and the receiving end */
  uint64_t msgs[NTESTS][MAX_SIZES], ns[NTESTS][MAX_SIZES];
} rate_thread_t;

/* One end on the shared interface: its own PZ and CM EVD, then open_ep's
 * buffer, LMR, DTO EVD and EP. */
static void
open_end(rate_thread_t *rt, side_t *s, const char *role, size_t max_size)
{
  s->role = role;
  s->mem_kind = rt->cfg->mem;
  s->timeout_ns = (uint64_t) (rt->cfg->timeout * 1e9);
  s->ia = rt->ia;
  IT(it_pz_create, s->ia, &s->pz);
  IT(it_evd_create, s->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE,
     &s->cm_evd, NULL);
  open_ep(s, max_size, rt->cfg->window);
}

/* The receiving end listens on a port the provider chooses, the sending
 * end connects to it; both are this thread's, so each learns the other's
 * buffer directly. */
static void
connect_pair(rate_thread_t *rt)
{
  side_t *tx = &rt->tx, *rx = &rt->rx;
  IT(it_evd_create, rx->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
     &rx->req_evd, NULL);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  IT(it_listen_create, rx->ia, 0, rx->req_evd, IT_LISTEN_NO_FLAG, &qual, &rx->listener);

  it_net_addr_t self;
  IT(tool_self_addr, tx->ia, &self);
  it_path_t path;
  size_t npaths = 1, total = 0;
  IT(it_get_pathinfo, tx->ia, 0, &self, &npaths, &total, &path);
  if (npaths < 1)
    die("%s: the interface has no path to its own address", tx->role);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  IT(it_ep_connect, tx->ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = wait_cm(rx, rx->req_evd, IT_CM_REQ_CONN_REQUEST_EVENT, false, "listening");
  IT(it_ep_accept, rx->ep, ev.conn_req.cn_est_id, NULL, 0);
  wait_cm(rx, rx->cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT, false, "accepting");
  wait_cm(tx, tx->cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT, false, "connecting");
  tx->peer_addr = it_make_rdma_addr_absolute(rx->mem);
  tx->peer_context = rx->context;
  rx->peer_addr = it_make_rdma_addr_absolute(tx->mem);
  rx->peer_context = tx->context;
  tx->connected = rx->connected = true;
}

static void
close_end(side_t *s)
{
  IT(it_ep_free, s->ep);
  IT(it_lmr_free, s->lmr);
  if (s->listener != IT_NULL_HANDLE)
    IT(it_listen_free, s->listener);
  IT(it_evd_free, s->dto_evd);
  IT(it_evd_free, s->cm_evd);
  if (s->req_evd != IT_NULL_HANDLE)
    IT(it_evd_free, s->req_evd);
  IT(it_pz_free, s->pz);
  free_buffers(s);
}

/* Reap whatever both EVDs hold; keep the receiving end's receives two
 * windows ahead of what it took. */
static void
reap(rate_thread_t *rt, size_t size)
{
  while (pump(&rt->tx, false, false, NULL))
    ;
  while (pump(&rt->rx, false, false, NULL))
    ;
  while (rt->rx.data_recv_posted < rt->rx.data_recvd + 2 * (uint64_t) rt->cfg->window)
    post_data_recv(&rt->rx, 0, size);
}

/* Post @n messages (0: until @end, a now_ns() time), a window in flight, a
 * completion requested every --signal posts and on the last one; wait
 * until every one is done (and, for Sends, received).  The messages. */
static uint64_t
run_burst(rate_thread_t *rt, const test_desc_t *t, size_t size, uint64_t n, uint64_t end)
{
  side_t *tx = &rt->tx, *rx = &rt->rx;
  uint32_t window = rt->cfg->window, every = rt->cfg->signal_every;
  uint64_t posted = 0, recvd0 = rx->data_recvd;
  rx->expect_len = size;
  reap(rt, size);
  for (;;) {
    bool last = n != 0 ? posted + 1 == n : (posted & 255) == 255 && now_ns() >= end;
    while (tx->sq_posted - tx->sq_done >= window ||
           (t->op == OP_SEND && recvd0 + posted >= rx->data_recv_posted))
      reap(rt, size);
    bool sig = last || (posted + 1) % every == 0;
    if (t->op == OP_SEND)
      sq_post(tx, OP_SEND, source_off(tx), size, 0, sig);
    else
      sq_post(tx, OP_WRITE, source_off(tx), size, peer_target(tx, 0), sig);
    posted++;
    if (last)
      break;
  }
  while (tx->sq_done < tx->sq_posted || (t->op == OP_SEND && rx->data_recvd < recvd0 + posted))
    reap(rt, size);
  return posted;
}

static void *
rate_thread(void *arg)
{
  rate_thread_t *rt = arg;
  const config_t *cfg = rt->cfg;
  size_t max_size = 0;
  for (size_t i = 0; i < cfg->nsizes; i++)
    max_size = cfg->sizes[i] > max_size ? cfg->sizes[i] : max_size;
  snprintf(rt->role_tx, sizeof(rt->role_tx), "thread %u sender", rt->index);
  snprintf(rt->role_rx, sizeof(rt->role_rx), "thread %u receiver", rt->index);
  open_end(rt, &rt->tx, rt->role_tx, max_size);
  open_end(rt, &rt->rx, rt->role_rx, max_size);
  connect_pair(rt);

  for (unsigned ti = 0; ti < NTESTS; ti++) {
    if (!(cfg->test_mask & (1u << ti)))
      continue;
    const test_desc_t *t = &tests[ti];
    for (size_t si = 0; si < cfg->nsizes; si++) {
      size_t size = cfg->sizes[si];
      uint64_t it = ti * MAX_SIZES + si;
      fill(source(&rt->tx), size, it, WHO_CLIENT);
      memset(target(&rt->rx, 0), 0, size);
      uint64_t warm = cfg->warmup >= 0 ? (uint64_t) cfg->warmup : RATE_WARMUP_MSGS;
      if (warm > 0)
        run_burst(rt, t, size, warm, 0);
      pthread_barrier_wait(rt->barrier);
      uint64_t t0 = now_ns();
      uint64_t end = t0 + (uint64_t) ((cfg->duration > 0 ? cfg->duration : RATE_DEFAULT_SEC) * 1e9);
      rt->msgs[ti][si] = run_burst(rt, t, size, cfg->duration > 0 ? 0 : cfg->iters, end);
      rt->ns[ti][si] = now_ns() - t0;
      /* Every message carried the same bytes: the last one landed whole. */
      verify(target(&rt->rx, 0), size, it, WHO_CLIENT, t->name, rt->role_rx, it, false);
      pthread_barrier_wait(rt->barrier);
    }
  }

  rt->tx.connected = rt->rx.connected = false;
  IT(it_ep_disconnect, rt->tx.ep, NULL, 0);
  wait_cm(&rt->tx, rt->tx.cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT, false, "disconnecting");
  wait_cm(&rt->rx, rt->rx.cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT, false, "disconnecting");
  close_end(&rt->tx);
  close_end(&rt->rx);
  return NULL;
}

int
rate_run(const config_t *cfg)
{
  unsigned nt = cfg->threads;
  it_ia_handle_t ia;
  IT(it_ia_create, cfg->ia_name, 2, 1, &ia);
  it_ia_info_t *info;
  IT(it_ia_query, ia, &info);
  size_t max_size = 0;
  for (size_t i = 0; i < cfg->nsizes; i++)
    max_size = cfg->sizes[i] > max_size ? cfg->sizes[i] : max_size;
  check_size_limits(info, max_size, "-T");

  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, nt);
  rate_thread_t *rts = calloc(nt, sizeof(*rts));
  pthread_t *tids = calloc(nt, sizeof(*tids));
  if (rts == NULL || tids == NULL)
    die("out of memory for %u threads", nt);
  for (unsigned i = 0; i < nt; i++) {
    rts[i] = (rate_thread_t) { .cfg = cfg, .ia = ia, .index = i, .barrier = &barrier };
    if (pthread_create(&tids[i], NULL, rate_thread, &rts[i]) != 0)
      die("cannot start thread %u of %u", i, nt);
  }
  for (unsigned i = 0; i < nt; i++)
    pthread_join(tids[i], NULL);

  if (cfg->json)
    printf("{\"interface\": \"%s\", \"threads\": %u, \"window\": %u, \"results\": [",
           info->ia_name, nt, cfg->window);
  else if (cfg->csv)
    printf("test,bytes,threads,msgs,seconds,mmsgps,thread_min_mmsgps,thread_max_mmsgps\n");
  else
    printf("# itapi-perf: interface %s, %u thread%s, each with its own endpoint pair, busy-poll, "
           "window %u\n%-10s %10s %8s %12s %10s %22s\n",
           info->ia_name, nt, nt == 1 ? "" : "s", cfg->window, "test", "bytes", "threads", "msgs",
           "Mmsg/s", "per thread (min-max)");
  bool first = true;
  for (unsigned ti = 0; ti < NTESTS; ti++) {
    if (!(cfg->test_mask & (1u << ti)))
      continue;
    for (size_t si = 0; si < cfg->nsizes; si++) {
      uint64_t msgs = 0, ns = 0;
      double lo = 0, hi = 0;
      for (unsigned i = 0; i < nt; i++) {
        double r = rts[i].msgs[ti][si] / (rts[i].ns[ti][si] / 1e9) / 1e6;
        lo = i == 0 || r < lo ? r : lo;
        hi = i == 0 || r > hi ? r : hi;
        msgs += rts[i].msgs[ti][si];
        ns = rts[i].ns[ti][si] > ns ? rts[i].ns[ti][si] : ns;
      }
      double sec = ns / 1e9, rate = msgs / sec / 1e6;
      if (cfg->json)
        printf("%s{\"test\": \"%s\", \"bytes\": %zu, \"threads\": %u, \"msgs\": %llu, "
               "\"seconds\": %.6f, \"mmsgps\": %.6f, \"thread_min_mmsgps\": %.6f, "
               "\"thread_max_mmsgps\": %.6f}",
               first ? "" : ", ", tests[ti].name, cfg->sizes[si], nt, (unsigned long long) msgs,
               sec, rate, lo, hi);
      else if (cfg->csv)
        printf("%s,%zu,%u,%llu,%.6f,%.6f,%.6f,%.6f\n", tests[ti].name, cfg->sizes[si], nt,
               (unsigned long long) msgs, sec, rate, lo, hi);
      else
        printf("%-10s %10zu %8u %12llu %10.3f %11.3f - %-8.3f\n", tests[ti].name, cfg->sizes[si],
               nt, (unsigned long long) msgs, rate, lo, hi);
      first = false;
    }
  }
  if (cfg->json)
    printf("]}\n");
  pthread_barrier_destroy(&barrier);
  free(rts);
  free(tids);
  it_ia_info_free(info);
  IT(it_ia_free, ia);
  return 0;
}
