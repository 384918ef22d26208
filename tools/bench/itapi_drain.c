/*
 * itapi-drain: how fast an application drains a burst of completions from
 * a DTO EVD, N calls of it_evd_dequeue against one itx_evd_dequeue_n of
 * up to N, in one process, side by side (tools/bench/drain.sh).
 *
 *   itapi-drain [-i IA] [-n N] [-D SECONDS]
 *
 * An RC endpoint pair of this process on interface IA (default emul0): the
 * sending end posts a burst of N signaled 8-byte RDMA Writes; once the
 * burst has completed, the completions are taken from the sending end's
 * DTO EVD, timed from the first call to the N-th event, busy-polling, by
 * it_evd_dequeue one at a time or by itx_evd_dequeue_n, the two ways
 * alternating burst by burst for SECONDS each.  Each event's cookie is
 * checked against the order posted.
 *
 * "Completed" is known without taking an event: a burst is followed by a
 * zero-length Send whose receive completes on the other end's EVD; the
 * Writes before it, on one connection, have completed when it arrives
 * (RC completes a send queue in order: the Send's completion is last, and
 * is the one event of the burst left out of the timing, N + 1 posts).
 * Where the provider completes a Write only when the peer placed it, the
 * receive proves the Writes placed and their completions queued; where
 * completion is earlier (ITX_COMPLETION_SENT) it proves at least as much.
 * Calls that found the EVD empty inside the timed drain are counted and
 * printed: anything but 0 means the burst was not all there.
 *
 * Output, one line: "IA N SINGLE BATCH EMPTY", the drain rates in millions
 * of events per second (events over the summed drain time) and the empty
 * calls of both ways together.
 *
 * Built by meson (tools/bench/meson.build), not installed.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("itapi-drain: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

#include "../tool_util.h"

#define MAX_BURST 1024
#define WAIT_US 10000000 /* a connection or burst not done in 10 s is a failure */

typedef struct {
  it_pz_handle_t pz;
  it_evd_handle_t dto, cm;
  it_ep_handle_t ep;
} end_t;

static it_ia_handle_t ia;
static it_lmr_handle_t lmr;
static it_rmr_context_t rmr_ctx;
static unsigned char *mem;

static uint64_t
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void
open_end(end_t *e, it_pz_handle_t pz, size_t n)
{
  e->pz = pz;
  IT(it_evd_create, ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE, &e->cm,
     NULL);
  IT(it_evd_create, ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 2 * n + 16, 1, IT_NULL_HANDLE,
     &e->dto, NULL);
  it_ep_attributes_t a;
  tool_rc_attr(&a, 64, n + 4, 4);
  a.srv.rc.rdma_read_ird = a.srv.rc.rdma_read_ord = 1;
  IT(it_ep_rc_create, pz, e->dto, e->dto, e->cm, IT_EP_NO_FLAG, &a, &e->ep);
}

static it_event_t
wait_event(it_evd_handle_t evd, const char *what)
{
  it_event_t ev;
  size_t more;
  it_status_t st = it_evd_wait(evd, WAIT_US, &ev, &more);
  if (st != IT_SUCCESS)
    it_die(what, st);
  return ev;
}

static void
connect_pair(end_t *tx, end_t *rx)
{
  it_evd_handle_t req;
  it_listen_handle_t listener;
  IT(it_evd_create, ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE, &req,
     NULL);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  IT(it_listen_create, ia, 0, req, IT_LISTEN_NO_FLAG, &qual, &listener);
  it_net_addr_t self;
  IT(tool_self_addr, ia, &self);
  it_path_t path;
  size_t npaths = 1, total = 0;
  IT(it_get_pathinfo, ia, 0, &self, &npaths, &total, &path);
  if (npaths < 1)
    die("the interface has no path to its own address");
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  IT(it_ep_connect, tx->ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = wait_event(req, "waiting for the connection request");
  if (ev.event_number != IT_CM_REQ_CONN_REQUEST_EVENT)
    die("expected a connection request, got %s", itx_event_name(ev.event_number));
  IT(it_ep_accept, rx->ep, ev.conn_req.cn_est_id, NULL, 0);
  for (end_t *e = rx;; e = tx) {
    ev = wait_event(e->cm, "waiting for the connection");
    if (ev.event_number != IT_CM_MSG_CONN_ESTABLISHED_EVENT)
      die("expected the connection established, got %s", itx_event_name(ev.event_number));
    if (e == tx)
      break;
  }
  IT(it_listen_free, listener);
  IT(it_evd_free, req);
}

/* Post a burst of @n Writes (cookies @seq on) and the Send behind them;
 * return once the Send's receive has completed. */
static void
post_burst(end_t *tx, end_t *rx, size_t n, uint64_t seq)
{
  it_lmr_triplet_t rt = { .lmr = lmr, .addr.abs = mem + 2048, .length = 64 };
  IT(it_post_recv, rx->ep, &rt, 1, 0, IT_COMPLETION_FLAG);
  it_lmr_triplet_t t = { .lmr = lmr, .addr.abs = mem, .length = 8 };
  for (size_t i = 0; i < n; i++)
    IT(it_post_rdma_write, tx->ep, &t, 1, seq + i, IT_COMPLETION_FLAG,
       it_make_rdma_addr_absolute(mem + 1024), rmr_ctx);
  IT(it_post_send, tx->ep, &t, 0, UINT64_MAX, IT_COMPLETION_FLAG);
  it_event_t ev;
  it_status_t st;
  while ((st = it_evd_dequeue(rx->dto, &ev)) == IT_ERR_QUEUE_EMPTY)
    ;
  if (st != IT_SUCCESS)
    it_die("it_evd_dequeue of the receive", st);
  if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
    die("the burst's Send arrived with %s", itx_dto_status_name(ev.dto_cmpl.dto_status));
}

static void
check(const it_event_t *ev, uint64_t want)
{
  if (ev->event_number != IT_DTO_RDMA_WRITE_CMPL_EVENT || ev->dto_cmpl.dto_status != IT_DTO_SUCCESS ||
      ev->dto_cmpl.cookie != want)
    die("expected the Write completion of cookie %llu, got %s (%s) of cookie %llu",
        (unsigned long long) want, itx_event_name(ev->event_number),
        itx_dto_status_name(ev->dto_cmpl.dto_status), (unsigned long long) ev->dto_cmpl.cookie);
}

/* Drain the @n Writes of a burst from @evd, one call per event or in
 * batches; the time taken.  The burst's Send completion is left out of
 * the timing (it is taken after). */
static uint64_t
drain(it_evd_handle_t evd, size_t n, uint64_t seq, int batch, uint64_t *empty)
{
  static it_event_t evs[MAX_BURST];
  size_t got = 0;
  uint64_t t0 = now_ns();
  if (batch) {
    while (got < n) {
      size_t k;
      it_status_t st = itx_evd_dequeue_n(evd, n - got, evs + got, &k);
      if (st == IT_SUCCESS)
        got += k;
      else if (st == IT_ERR_QUEUE_EMPTY)
        ++*empty;
      else
        it_die("itx_evd_dequeue_n", st);
    }
  } else {
    while (got < n) {
      it_status_t st = it_evd_dequeue(evd, evs + got);
      if (st == IT_SUCCESS)
        got++;
      else if (st == IT_ERR_QUEUE_EMPTY)
        ++*empty;
      else
        it_die("it_evd_dequeue", st);
    }
  }
  uint64_t dt = now_ns() - t0;
  for (size_t i = 0; i < n; i++)
    check(&evs[i], seq + i);
  it_event_t ev;
  it_status_t st;
  while ((st = it_evd_dequeue(evd, &ev)) == IT_ERR_QUEUE_EMPTY)
    ;
  if (st != IT_SUCCESS || ev.event_number != IT_DTO_SEND_CMPL_EVENT || ev.dto_cmpl.cookie != UINT64_MAX)
    die("expected the burst's Send completion last");
  return dt;
}

int
main(int argc, char **argv)
{
  const char *ia_name = "emul0";
  size_t n = 16;
  double sec = 1.0;
  for (int c; (c = getopt(argc, argv, "i:n:D:h")) != -1;) {
    switch (c) {
    case 'i': ia_name = optarg; break;
    case 'n': n = strtoul(optarg, NULL, 0); break;
    case 'D': sec = strtod(optarg, NULL); break;
    default:
      fprintf(stderr, "usage: itapi-drain [-i IA] [-n N] [-D SECONDS]\n");
      return c == 'h' ? 0 : 2;
    }
  }
  if (n < 1 || n > MAX_BURST)
    die("-n %zu: a burst is 1 to %d completions", n, MAX_BURST);

  IT(it_ia_create, ia_name, 2, 1, &ia);
  it_pz_handle_t pz;
  IT(it_pz_create, ia, &pz);
  void *p = NULL;
  IT(itx_mem_alloc, ia, 4096, &p);
  mem = p;
  IT(it_lmr_create, pz, mem, NULL, 4096, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL | IT_PRIV_REMOTE,
     IT_LMR_FLAG_NONE, 0, &lmr, &rmr_ctx);
  end_t tx, rx;
  open_end(&tx, pz, n);
  open_end(&rx, pz, n);
  connect_pair(&tx, &rx);

  /* Warm-up: a few bursts each way, untimed. */
  uint64_t seq = 0, empty = 0, ns[2] = { 0, 0 }, bursts[2] = { 0, 0 };
  for (int i = 0; i < 200; i++, seq += n) {
    post_burst(&tx, &rx, n, seq);
    drain(tx.dto, n, seq, i & 1, &empty);
  }
  empty = 0;
  uint64_t end = now_ns() + (uint64_t) (2 * sec * 1e9);
  for (uint64_t i = 0; (i & 63) != 0 || now_ns() < end; i++, seq += n) {
    int b = (int) (i & 1);
    post_burst(&tx, &rx, n, seq);
    ns[b] += drain(tx.dto, n, seq, b, &empty);
    bursts[b]++;
  }
  printf("%s %zu %.3f %.3f %llu\n", ia_name, n, (double) (bursts[0] * n) * 1e3 / (double) ns[0],
         (double) (bursts[1] * n) * 1e3 / (double) ns[1], (unsigned long long) empty);

  IT(it_ep_free, tx.ep);
  IT(it_ep_free, rx.ep);
  IT(it_lmr_free, lmr);
  IT(itx_mem_free, mem);
  IT(it_evd_free, tx.dto);
  IT(it_evd_free, rx.dto);
  IT(it_evd_free, tx.cm);
  IT(it_evd_free, rx.cm);
  IT(it_pz_free, pz);
  IT(it_ia_free, ia);
  return 0;
}
