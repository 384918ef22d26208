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
 * With --xproc the receiving end of each pair lives in a second process,
 * this program run again (--xproc-peer), so that every connection crosses
 * processes: there a thread per pair keeps receives posted and grants them
 * as credit (the sender's credit word, as the server does), sleeping in
 * it_evd_wait between completions, so that the cores stay with the
 * sending threads, whose rate is measured.  The sender cannot read the
 * peer's memory: nothing is verified.
 *
 * SPDX-License-Identifier: MIT
 */
#include "itapi_perf.h"

#include "../tool_addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define RATE_DEFAULT_SEC 1.0
#define RATE_WARMUP_MSGS 2000

typedef struct {
  const config_t *cfg;
  it_ia_handle_t ia;
  unsigned index;
  pthread_barrier_t *barrier;
  char role_tx[32], role_rx[32];
  side_t tx, rx;             /* the sending end and the receiving end (not with --xproc) */
  int port;                  /* --xproc: the receiving end's port in the peer process */
  uint64_t sent;             /* --xproc: Sends so far, against the peer's credit */
  uint64_t msgs[NTESTS][MAX_SIZES], ns[NTESTS][MAX_SIZES];
} rate_thread_t;

/* Where each side keeps its buffer, told to the other in the private data
 * of the connection (--xproc; one host, host order). */
typedef struct {
  uint64_t addr, context;
} xproc_pdata_t;

/* One end on the shared interface: its own PZ and CM EVD, then open_ep's
 * buffer, LMR, DTO EVD and EP. */
static void
open_end(const config_t *cfg, it_ia_handle_t ia, side_t *s, const char *role, size_t max_size)
{
  s->role = role;
  s->mem_kind = cfg->mem;
  s->timeout_ns = (uint64_t) (cfg->timeout * 1e9);
  s->ia = ia;
  IT(it_pz_create, s->ia, &s->pz);
  IT(it_evd_create, s->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE,
     &s->cm_evd, NULL);
  open_ep(s, max_size, cfg->window);
}

size_t
max_size_of(const config_t *cfg)
{
  size_t max_size = 0;
  for (size_t i = 0; i < cfg->nsizes; i++)
    max_size = cfg->sizes[i] > max_size ? cfg->sizes[i] : max_size;
  return max_size;
}

/* A path from @s's interface to its own address (both ends are on it). */
static void
self_path(side_t *s, it_path_t *path)
{
  it_net_addr_t self;
  IT(tool_self_addr, s->ia, &self);
  size_t npaths = 1, total = 0;
  IT(it_get_pathinfo, s->ia, 0, &self, &npaths, &total, path);
  if (npaths < 1)
    die("%s: the interface has no path to its own address", s->role);
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

  it_path_t path;
  self_path(tx, &path);
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

/* --xproc: connect the sending end to the receiving end listening on
 * rt->port in the peer process; each learns the other's buffer from the
 * private data. */
static void
connect_remote(rate_thread_t *rt)
{
  side_t *tx = &rt->tx;
  it_path_t path;
  self_path(tx, &path);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = htons((uint16_t) rt->port);
  xproc_pdata_t mine = { (uint64_t) (uintptr_t) tx->mem, tx->context }, theirs;
  IT(it_ep_connect, tx->ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY, (const unsigned char *) &mine,
     sizeof(mine));
  it_event_t ev = wait_cm(tx, tx->cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT, false, "connecting");
  if (!ev.conn.private_data_present)
    die("%s: the peer process accepted without saying where its buffer is", tx->role);
  memcpy(&theirs, ev.conn.private_data, sizeof(theirs));
  tx->peer_addr = theirs.addr;
  tx->peer_context = theirs.context;
  tx->connected = true;
}

static void
close_end(side_t *s)
{
  IT(it_ep_free, s->ep);
  if (s->srq != IT_NULL_HANDLE)
    IT(it_srq_free, s->srq);
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
  while (pump(&rt->tx, false, WAIT_DUE, NULL))
    ;
  if (rt->cfg->xproc)
    return;  /* the peer process keeps its receives posted */
  while (pump(&rt->rx, false, WAIT_DUE, NULL))
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
  bool xproc = rt->cfg->xproc;
  uint32_t window = rt->cfg->window, every = rt->cfg->signal_every;
  uint64_t posted = 0, recvd0 = rx->data_recvd;
  rx->expect_len = size;
  reap(rt, size);
  for (;;) {
    bool last = n != 0 ? posted + 1 == n : (posted & 255) == 255 && now_ns() >= end;
    uint64_t deadline = 0;
    for (unsigned spin = 1;
         tx->sq_posted - tx->sq_done >= window ||
         (t->op == OP_SEND && (xproc ? rt->sent >= read_credit(tx) : recvd0 + posted >= rx->data_recv_posted));
         spin++) {
      reap(rt, size);
      /* A credit comes by RDMA Write, which raises no event here. */
      if (xproc)
        spin_check(tx, spin, &deadline, "receive credits from the peer process");
    }
    rt->sent += t->op == OP_SEND;
    bool sig = last || (posted + 1) % every == 0;
    if (t->op == OP_SEND)
      sq_post(tx, OP_SEND, source_off(tx), size, 0, sig);
    else
      sq_post(tx, OP_WRITE, source_off(tx), size, peer_target(tx, 0), sig);
    posted++;
    if (last)
      break;
  }
  while (tx->sq_done < tx->sq_posted || (!xproc && t->op == OP_SEND && rx->data_recvd < recvd0 + posted))
    reap(rt, size);
  return posted;
}

static void *
rate_thread(void *arg)
{
  rate_thread_t *rt = arg;
  const config_t *cfg = rt->cfg;
  size_t max_size = max_size_of(cfg);
  snprintf(rt->role_tx, sizeof(rt->role_tx), "thread %u sender", rt->index);
  snprintf(rt->role_rx, sizeof(rt->role_rx), "thread %u receiver", rt->index);
  open_end(cfg, rt->ia, &rt->tx, rt->role_tx, max_size);
  if (cfg->xproc) {
    connect_remote(rt);
  } else {
    rt->rx.use_srq = cfg->srq;
    open_end(cfg, rt->ia, &rt->rx, rt->role_rx, max_size);
    connect_pair(rt);
  }

  for (unsigned ti = 0; ti < NTESTS; ti++) {
    if (!(cfg->test_mask & (1u << ti)))
      continue;
    const test_desc_t *t = &tests[ti];
    for (size_t si = 0; si < cfg->nsizes; si++) {
      size_t size = cfg->sizes[si];
      uint64_t it = ti * MAX_SIZES + si;
      fill(source(&rt->tx), size, it, WHO_CLIENT);
      if (!cfg->xproc)
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
      if (!cfg->xproc)
        verify(target(&rt->rx, 0), size, it, WHO_CLIENT, t->name, rt->role_rx, it, false);
      pthread_barrier_wait(rt->barrier);
    }
  }

  rt->tx.connected = rt->rx.connected = false;
  IT(it_ep_disconnect, rt->tx.ep, NULL, 0);
  wait_cm(&rt->tx, rt->tx.cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT, false, "disconnecting");
  close_end(&rt->tx);
  if (!cfg->xproc) {
    wait_cm(&rt->rx, rt->rx.cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT, false, "disconnecting");
    close_end(&rt->rx);
  }
  return NULL;
}

/* ---- --xproc: the peer process ---- */

typedef struct {
  const config_t *cfg;
  char role[32];
  side_t rx;
} peer_thread_t;

/* One receiving end of the peer process: accept, keep two windows of
 * receives posted and their count published as credit, sleep between
 * completions; until the sender disconnects. */
static void *
peer_thread(void *arg)
{
  peer_thread_t *pt = arg;
  side_t *rx = &pt->rx;
  uint32_t window = pt->cfg->window;
  it_event_t ev = wait_cm(rx, rx->req_evd, IT_CM_REQ_CONN_REQUEST_EVENT, true, "listening");
  if (!ev.conn_req.private_data_present)
    die("%s: a connection request without the sender's buffer", rx->role);
  xproc_pdata_t theirs, mine = { (uint64_t) (uintptr_t) rx->mem, rx->context };
  memcpy(&theirs, ev.conn_req.private_data, sizeof(theirs));
  rx->peer_addr = theirs.addr;
  rx->peer_context = theirs.context;
  rx->expect_len = SIZE_MAX;  /* any size of the run */
  while (rx->data_recv_posted < 2 * (uint64_t) window)
    post_data_recv(rx, 0, rx->slot);
  IT(it_ep_accept, rx->ep, ev.conn_req.cn_est_id, (const unsigned char *) &mine, sizeof(mine));
  wait_cm(rx, rx->cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT, false, "accepting");
  publish_credit(rx);
  uint64_t credited = rx->data_recv_posted;
  for (bool done = false; !done;) {
    size_t more;
    it_status_t st = it_evd_wait(rx->dto_evd, WAIT_SLICE_US, &ev, &more);
    if (st == IT_SUCCESS) {
      if (ev.dto_cmpl.dto_status == IT_DTO_ERR_FLUSHED)
        continue;  /* the receives left at the disconnect */
      account_event(rx, &ev);
    } else if (st != IT_ERR_TIMEOUT_EXPIRED) {
      it_die("it_evd_wait", st);
    }
    while (rx->data_recv_posted < rx->data_recvd + 2 * (uint64_t) window)
      post_data_recv(rx, 0, rx->slot);
    if (rx->data_recv_posted - credited >= window / 2 + 1) {
      publish_credit(rx);
      credited = rx->data_recv_posted;
    }
    if (st == IT_ERR_TIMEOUT_EXPIRED || more == 0) {
      st = it_evd_dequeue(rx->cm_evd, &ev);
      if (st == IT_SUCCESS && ev.event_number != IT_CM_MSG_CONN_DISCONNECT_EVENT)
        die("%s: expected the sender's disconnect after %llu receives, got %s (the sending "
            "process's own error, above, says why)", rx->role, (unsigned long long) rx->data_recvd,
            itx_event_name(ev.event_number));
      done = st == IT_SUCCESS;
    }
  }
  close_end(rx);
  return NULL;
}

/* --xproc-peer: open cfg->threads receiving ends, say their ports on
 * stdout, serve them until each sender disconnects. */
static int
rate_peer_run(const config_t *cfg)
{
  unsigned nt = cfg->threads;
  it_ia_handle_t ia;
  IT(it_ia_create, cfg->ia_name, 2, 1, &ia);
  peer_thread_t *pts = calloc(nt, sizeof(*pts));
  pthread_t *tids = calloc(nt, sizeof(*tids));
  if (pts == NULL || tids == NULL)
    die("out of memory for %u threads", nt);
  for (unsigned i = 0; i < nt; i++) {
    peer_thread_t *pt = &pts[i];
    pt->cfg = cfg;
    snprintf(pt->role, sizeof(pt->role), "peer thread %u receiver", i);
    open_end(cfg, ia, &pt->rx, pt->role, max_size_of(cfg));
    IT(it_evd_create, ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
       &pt->rx.req_evd, NULL);
    it_conn_qual_t qual = { .type = IT_IANA_PORT };
    IT(it_listen_create, ia, 0, pt->rx.req_evd, IT_LISTEN_NO_FLAG, &qual, &pt->rx.listener);
    printf("%u\n", (unsigned) ntohs(qual.conn_qual.port));
  }
  fflush(stdout);
  for (unsigned i = 0; i < nt; i++)
    if (pthread_create(&tids[i], NULL, peer_thread, &pts[i]) != 0)
      die("peer process: cannot start thread %u of %u", i, nt);
  for (unsigned i = 0; i < nt; i++)
    pthread_join(tids[i], NULL);
  free(pts);
  free(tids);
  IT(it_ia_free, ia);
  return 0;
}

/* Start the peer process (this program, --xproc-peer) and read the port
 * of each of its receiving ends into @rts. */
static pid_t
peer_start(const config_t *cfg, rate_thread_t *rts)
{
  int out[2];
  if (pipe(out) != 0)
    die("--xproc: no pipe to the peer process: %s", strerror(errno));
  char nt[16], window[16], size[32], timeout[32];
  snprintf(nt, sizeof(nt), "%u", cfg->threads);
  snprintf(window, sizeof(window), "%u", cfg->window);
  snprintf(size, sizeof(size), "%zu", max_size_of(cfg));
  snprintf(timeout, sizeof(timeout), "%g", cfg->timeout);
  char *argv[] = { (char *) PROG, (char *) "--xproc-peer", (char *) "-T", nt, (char *) "-W", window,
                   (char *) "-S", size, (char *) "-i", (char *) cfg->ia_name, (char *) "--mem",
                   (char *) mem_kind_names[cfg->mem], (char *) "--timeout", timeout, NULL };
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  pid_t pid;
  int err = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (err != 0)
    die("--xproc: cannot start the peer process (/proc/self/exe): %s", strerror(err));
  FILE *f = fdopen(out[0], "r");
  for (unsigned i = 0; i < cfg->threads; i++) {
    char line[32];
    if (f == NULL || fgets(line, sizeof(line), f) == NULL || sscanf(line, "%d", &rts[i].port) != 1)
      die("--xproc: the peer process gave %u of %u ports (its errors are above)", i, cfg->threads);
  }
  if (f != NULL)
    fclose(f);
  return pid;
}

void
rate_head(const config_t *cfg, const char *ia_name, const char *what)
{
  unsigned nt = cfg->threads;
  if (cfg->json)
    printf("{\"interface\": \"%s\", \"threads\": %u, \"window\": %u, \"rmr\": %s, \"results\": [",
           ia_name, nt, cfg->window, cfg->rmr ? "true" : "false");
  else if (cfg->csv)
    printf("test,bytes,threads,msgs,seconds,mmsgps,thread_min_mmsgps,thread_max_mmsgps\n");
  else
    printf("# itapi-perf: interface %s, %u thread%s, each with %s, busy-poll, window %u%s\n"
           "%-10s %10s %8s %12s %10s %22s\n",
           ia_name, nt, nt == 1 ? "" : "s", what, cfg->window, cfg->rmr ? ", an RMR allocated beside" : "",
           "test", "bytes", "threads", "msgs", "Mmsg/s", "per thread (min-max)");
}

void
rmr_beside_open(const config_t *cfg, it_ia_handle_t ia, rmr_beside_t *b)
{
  b->pz = IT_NULL_HANDLE;
  b->rmr = IT_NULL_HANDLE;
  if (!cfg->rmr)
    return;
  IT(it_pz_create, ia, &b->pz);
  it_status_t st = it_rmr_create20(b->pz, IT_RMR_TYPE_DEFAULT, &b->rmr);
  if (st != IT_SUCCESS)
    die("--rmr: it_rmr_create20 on interface %s returned %s (%s): it offers no RMRs to keep beside "
        "the run (itapi-info shows what it offers); leave out --rmr",
        cfg->ia_name != NULL ? cfg->ia_name : "(the first of it_interface_list)", itx_status_name(st),
        itx_error_detail());
}

void
rmr_beside_close(rmr_beside_t *b)
{
  if (b->rmr != IT_NULL_HANDLE)
    IT(it_rmr_free, b->rmr);
  if (b->pz != IT_NULL_HANDLE)
    IT(it_pz_free, b->pz);
}

void
rate_row(const config_t *cfg, const char *test, size_t bytes, const uint64_t *msgs,
         const uint64_t *ns, bool first)
{
  unsigned nt = cfg->threads;
  uint64_t all = 0, longest = 0;
  double lo = 0, hi = 0;
  for (unsigned i = 0; i < nt; i++) {
    double r = msgs[i] / (ns[i] / 1e9) / 1e6;
    lo = i == 0 || r < lo ? r : lo;
    hi = i == 0 || r > hi ? r : hi;
    all += msgs[i];
    longest = ns[i] > longest ? ns[i] : longest;
  }
  double sec = longest / 1e9, rate = all / sec / 1e6;
  if (cfg->json)
    printf("%s{\"test\": \"%s\", \"bytes\": %zu, \"threads\": %u, \"msgs\": %llu, "
           "\"seconds\": %.6f, \"mmsgps\": %.6f, \"thread_min_mmsgps\": %.6f, "
           "\"thread_max_mmsgps\": %.6f}",
           first ? "" : ", ", test, bytes, nt, (unsigned long long) all, sec, rate, lo, hi);
  else if (cfg->csv)
    printf("%s,%zu,%u,%llu,%.6f,%.6f,%.6f,%.6f\n", test, bytes, nt, (unsigned long long) all, sec,
           rate, lo, hi);
  else
    printf("%-10s %10zu %8u %12llu %10.3f %11.3f - %-8.3f\n", test, bytes, nt,
           (unsigned long long) all, rate, lo, hi);
}

void
rate_tail(const config_t *cfg)
{
  if (cfg->json)
    printf("]}\n");
}

int
rate_run(const config_t *cfg)
{
  unsigned nt = cfg->threads;
  if (cfg->xproc_peer)
    return rate_peer_run(cfg);
  it_ia_handle_t ia;
  IT(it_ia_create, cfg->ia_name, 2, 1, &ia);
  it_ia_info_t *info;
  IT(it_ia_query, ia, &info);
  check_size_limits(info, max_size_of(cfg), "-T");
  rmr_beside_t beside;
  rmr_beside_open(cfg, ia, &beside);

  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, nt);
  rate_thread_t *rts = calloc(nt, sizeof(*rts));
  pthread_t *tids = calloc(nt, sizeof(*tids));
  if (rts == NULL || tids == NULL)
    die("out of memory for %u threads", nt);
  for (unsigned i = 0; i < nt; i++)
    rts[i] = (rate_thread_t) { .cfg = cfg, .ia = ia, .index = i, .barrier = &barrier };
  pid_t peer = cfg->xproc ? peer_start(cfg, rts) : -1;
  for (unsigned i = 0; i < nt; i++)
    if (pthread_create(&tids[i], NULL, rate_thread, &rts[i]) != 0)
      die("cannot start thread %u of %u", i, nt);
  for (unsigned i = 0; i < nt; i++)
    pthread_join(tids[i], NULL);
  int status = 0;
  if (peer > 0 && (waitpid(peer, &status, 0) != peer || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
    die("--xproc: the peer process ended with status 0x%x (its errors are above)", (unsigned) status);

  rate_head(cfg, info->ia_name, cfg->xproc ? "its own endpoint pair whose receiving end is in a "
                                             "second process" :
                                 cfg->srq ? "its own endpoint pair whose receiving end takes its "
                                            "receives from an SRQ of its own" : "its own endpoint pair");
  uint64_t *msgs = calloc(nt, sizeof(*msgs)), *ns = calloc(nt, sizeof(*ns));
  if (msgs == NULL || ns == NULL)
    die("out of memory for %u threads", nt);
  bool first = true;
  for (unsigned ti = 0; ti < NTESTS; ti++) {
    if (!(cfg->test_mask & (1u << ti)))
      continue;
    for (size_t si = 0; si < cfg->nsizes; si++) {
      for (unsigned i = 0; i < nt; i++) {
        msgs[i] = rts[i].msgs[ti][si];
        ns[i] = rts[i].ns[ti][si];
      }
      rate_row(cfg, tests[ti].name, cfg->sizes[si], msgs, ns, first);
      first = false;
    }
  }
  rate_tail(cfg);
  free(msgs);
  free(ns);
  pthread_barrier_destroy(&barrier);
  free(rts);
  free(tids);
  rmr_beside_close(&beside);
  it_ia_info_free(info);
  IT(it_ia_free, ia);
  return 0;
}
