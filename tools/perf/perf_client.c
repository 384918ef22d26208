/*
 * itapi-perf: the client.  It drives every test, size and chunk, and times
 * them; nothing outside the timed loops below is measured.
 *
 * SPDX-License-Identifier: MIT
 */
#include "itapi_perf.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
client_pingpong(side_t *s, const test_desc_t *t, size_t size, uint64_t n, uint64_t base,
                bool verify_on, bool complete_first, samples_t *sm, progress_t *pg)
{
  uint64_t last_ping = 0, recvd0 = s->data_recvd;
  bool by_send = t->op == OP_SEND || notify_by_send(s, t);
  for (uint64_t i = 0; i < n; i++) {
    int k = i & 1;
    uint64_t it = base + i;
    if (by_send)
      post_data_recv(s, k, t->op == OP_SEND ? size : 0);
    uint64_t t0 = lat_now();
    if (t->op == OP_SEND) {
      last_ping = sq_post(s, OP_SEND, source_off(s), size, 0, true);
    } else if (by_send) {
      /* The Write, then the zero-length Send that tells the server. */
      sq_post(s, OP_WRITE, source_off(s), size, peer_target(s, k), false);
      last_ping = sq_post(s, OP_SEND, source_off(s), 0, 0, true);
    } else {
      last_ping = sq_post(s, OP_WRITE, source_off(s), size, peer_target(s, k), true);
    }
    if (complete_first)
      sq_wait(s, last_ping, "a ping to complete");
    if (by_send) {
      while (s->data_recvd < recvd0 + i + 1)
        pump(s, true, WAIT_DUE, "a pong");
    } else {
      volatile unsigned char *lastb = target(s, k) + size - 1;
      uint64_t deadline = 0; /* set at the first check: no clock read inside the sample */
      for (unsigned spin = 1; __atomic_load_n(lastb, __ATOMIC_ACQUIRE) != tag_of(it); spin++) {
        spin_pause();
        if (spin % 4096 == 0) {
          check_connection(s);
          if (deadline == 0 && s->timeout_ns)
            deadline = now_ns() + s->timeout_ns;
          check_deadline(s, deadline, "an RDMA Write pong to land");
        }
      }
    }
    uint64_t t1 = lat_now();
    if (sm != NULL)
      record(sm, lat_ticks_ns(t1 - t0));
    if (verify_on)
      verify(target(s, k), size, it, WHO_SERVER, t->name, "client", it, t->op == OP_WRITE);
    if (i + 1 < n) {
      sq_wait(s, last_ping, "a ping to complete");
      fill(source(s), size, it + 1, WHO_CLIENT);
    }
    progress_tick(pg, pg->on ? now_ns() : 0, sm ? sm->n : 0);
  }
}

static void
client_read_lat(side_t *s, const test_desc_t *t, size_t size, uint64_t n, uint64_t base,
                bool verify_on, samples_t *sm, progress_t *pg)
{
  for (uint64_t i = 0; i < n; i++) {
    int k = i & 1;
    uint64_t t0 = lat_now();
    uint64_t done = sq_post(s, OP_READ, OFF_DATA, size, peer_target(s, k), true);
    sq_wait(s, done, "an RDMA Read");
    uint64_t t1 = lat_now();
    if (sm != NULL)
      record(sm, lat_ticks_ns(t1 - t0));
    /* The server's two targets hold the patterns of iterations 0 and 1. */
    if (verify_on)
      verify(target(s, 0), size, (uint64_t) k, WHO_READ, t->name, "client", base + i, false);
    progress_tick(pg, pg->on ? now_ns() : 0, sm ? sm->n : 0);
  }
}

/* A window of WRs in flight, one signaled every `every`, the last one
 * always signaled so the final completion covers the whole chunk. */
static uint64_t
client_bw(side_t *s, const test_desc_t *t, size_t size, uint64_t n, uint32_t window,
          uint32_t every, uint64_t *sent, progress_t *pg, uint64_t done_before)
{
  uint64_t t0 = now_ns(), first = s->sq_posted;
  for (uint64_t i = 0; i < n; i++) {
    while (s->sq_posted - s->sq_done >= window)
      sq_wait(s, s->sq_done + 1, "a bandwidth completion");
    if (t->op == OP_SEND) {
      uint64_t deadline = 0;
      for (unsigned spin = 1; read_credit(s) <= *sent; spin++) {
        /* Credits arrive by RDMA Write, which raises no event here. */
        while (pump(s, false, WAIT_DUE, NULL))
          ;
        spin_check(s, spin, &deadline, "receive credits from the server");
      }
      (*sent)++;
    }
    bool sig = (i + 1) % every == 0 || i + 1 == n;
    if (t->op == OP_SEND)
      sq_post(s, OP_SEND, source_off(s), size, 0, sig);
    else if (t->op == OP_WRITE)
      sq_post(s, OP_WRITE, source_off(s), size, peer_target(s, 0), sig);
    else
      sq_post(s, OP_READ, OFF_DATA, size, peer_target(s, 0), sig);
    if ((i & 1023) == 1023)
      progress_tick(pg, now_ns(), done_before + i);
  }
  sq_wait(s, first + n, "the last bandwidth completion");
  return now_ns() - t0;
}

typedef struct {
  side_t s;
  const config_t *cfg;
  uint64_t data_sent;        /* sends of the session, against the server's credit */
} client_t;

/* One RUN exchange and its data phase.  Returns the bandwidth time. */
static uint64_t
run_chunk(client_t *c, unsigned ti, size_t size, uint64_t n, uint64_t base, samples_t *sm,
          progress_t *pg)
{
  side_t *s = &c->s;
  const test_desc_t *t = &tests[ti];
  bool verify_on = c->cfg->verify && !t->bw;
  /* write_lat -e: the receives take the zero-length notifying Sends. */
  s->expect_len = notify_by_send(s, t) ? 0 : size;
  if (!t->bw) {
    memset(target(s, 0), 0, size);
    memset(target(s, 1), 0, size);
    if (t->op != OP_READ)
      fill(source(s), size, base, WHO_CLIENT);
  }
  post_ctrl_recv(s);
  bool complete_first = c->cfg->complete_first && !t->bw && t->op != OP_READ;
  send_ctrl(s, MSG_RUN, ti,
            (verify_on ? FLAG_VERIFY : 0) | (complete_first ? FLAG_COMPLETE_FIRST : 0), size, n,
            base);
  ctrl_msg_t m = wait_ctrl(s, WAIT_DUE, "READY from the server");
  if (m.type != MSG_READY)
    die("client: expected READY from the server, got message type %u", (unsigned) m.type);
  if ((t->op == OP_SEND && !t->bw) || notify_by_send(s, t))
    c->data_sent += n;
  uint64_t bw_ns = 0;
  if (t->bw)
    bw_ns = client_bw(s, t, size, n, c->cfg->window, c->cfg->signal_every, &c->data_sent, pg,
                      sm ? sm->bw_msgs : 0);
  else if (t->op == OP_READ)
    client_read_lat(s, t, size, n, base, verify_on, sm, pg);
  else
    client_pingpong(s, t, size, n, base, verify_on, complete_first, sm, pg);
  /* Every WR of the chunk must be accounted for before the next. */
  sq_wait(s, s->sq_signaled, "the chunk's completions");
  if (s->sq_done != s->sq_posted)
    die("internal error: %llu send-queue WRs left uncovered",
        (unsigned long long) (s->sq_posted - s->sq_done));
  if (sm != NULL && t->bw) {
    sm->bw_ns += bw_ns;
    sm->bw_msgs += n;
  }
  return bw_ns;
}

static uint64_t
default_iters(const test_desc_t *t, size_t size)
{
  /* perftest's defaults (1000 latency, 5000 bandwidth iterations), fewer
   * for large messages so that a default run stays short. */
  uint64_t n = t->bw ? 5000 : 1000, cap = (t->bw ? 1ull << 31 : 1ull << 28) / size;
  if (n > cap)
    n = cap;
  return n < 100 ? 100 : n;
}

static result_t
run_test(client_t *c, unsigned ti, size_t size)
{
  const config_t *cfg = c->cfg;
  const test_desc_t *t = &tests[ti];
  uint64_t iters = cfg->iters ? cfg->iters : default_iters(t, size);
  uint64_t warm = cfg->warmup >= 0 ? (uint64_t) cfg->warmup : iters / 10 ? iters / 10 : 1;
  samples_t sm = { 0 };
  progress_t pg = { .on = cfg->progress, .start = now_ns(), .test = t->name, .size = size,
                    .total = cfg->duration > 0 ? 0 : iters, .duration = cfg->duration };
  pg.next = pg.start;
  uint64_t base = 0;

  if (warm > 0) {
    uint64_t w0 = now_ns();
    run_chunk(c, ti, size, warm, base, NULL, &pg);
    base += warm;
    if (cfg->duration > 0 && warm >= 10) /* a first guess of the rate */
      iters = (uint64_t) (0.1e9 / ((now_ns() - w0) / (double) warm)) + 1;
  }
  if (cfg->duration <= 0) {
    run_chunk(c, ti, size, iters, base, &sm, &pg);
  } else {
    /* Chunks of at most ~0.5 s, sized from the rate so far, until the
     * duration is spent; control round trips between them are untimed. */
    uint64_t start = now_ns(), end = start + (uint64_t) (cfg->duration * 1e9);
    uint64_t chunk = cfg->iters ? cfg->iters : warm >= 10 ? iters : 100, done = 0;
    for (uint64_t now = start; now < end; now = now_ns()) {
      run_chunk(c, ti, size, chunk, base, &sm, &pg);
      base += chunk;
      done += chunk;
      uint64_t t = now_ns();
      double per = (t - start) / (double) done, left = t < end ? (double) (end - t) : 0;
      double want = (left < 0.5e9 ? left : 0.5e9) / per;
      chunk = want < 1 ? 1 : (uint64_t) want;
    }
  }
  progress_done(&pg);

  result_t r = { .test = t->name, .bw = t->bw, .bytes = size };
  if (t->bw) {
    double sec = sm.bw_ns / 1e9;
    r.iters = sm.bw_msgs;
    r.gbps = sm.bw_msgs * (double) size / sec / 1e9;
    r.mmsgps = sm.bw_msgs / sec / 1e6;
  } else {
    lat_stats(&r, &sm, t->op == OP_READ ? 1.0 : 2.0); /* half a round trip, or one read */
  }
  free(sm.ns);
  return r;
}

/* addr NULL: loopback, to the interface's own address (tool_self_addr:
 * the first of spigot 0, or 127.0.0.1 when it lists none). */
int
client_run(const config_t *cfg, const it_net_addr_t *addr, int port)
{
  client_t c = { .cfg = cfg };
  side_t *s = &c.s;
  s->role = "client";
  s->event_mode = cfg->event;
  s->mem_kind = cfg->mem;
  s->timeout_ns = (uint64_t) (cfg->timeout * 1e9);
  size_t max_size = 0;
  for (size_t i = 0; i < cfg->nsizes; i++)
    max_size = cfg->sizes[i] > max_size ? cfg->sizes[i] : max_size;

  it_ia_info_t *info;
  open_ia(s, cfg->ia_name, &info);
  check_size_limits(info, max_size, "client");
  if (sizeof(conn_pdata_t) > info->connect_private_data_len)
    die("client: needs %zu bytes of connect private data; interface %s allows %zu",
        sizeof(conn_pdata_t), info->ia_name, info->connect_private_data_len);
  open_ep(s, max_size, cfg->window);

  it_net_addr_t self;
  if (addr == NULL) {
    IT(tool_self_addr, s->ia, &self);
    addr = &self;
  }
  it_path_t path;
  size_t npaths = 1, total = 0;
  IT(it_get_pathinfo, s->ia, 0, addr, &npaths, &total, &path);
  char where[INET6_ADDRSTRLEN + 32];
  if (npaths < 1)
    die("client: interface %s has no path to %s; give a server address it can reach (-c), or "
        "another interface (-i)", info->ia_name, tool_addr_str(addr, where, sizeof(where)));
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = htons((uint16_t) port);
  conn_pdata_t cp = { htonl(WIRE_MAGIC), htons(WIRE_VERSION),
                      htons((cfg->event ? FLAG_EVENT : 0) | (cfg->verify ? FLAG_VERIFY : 0)),
                      htonl(cfg->window), 0, it_hton64(max_size),
                      it_hton64(it_make_rdma_addr_absolute(s->mem)), it_hton64(s->context) };
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  IT(it_ep_connect, s->ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY, (const unsigned char *) &cp,
     sizeof(cp));
  it_event_t ev = wait_cm(s, s->cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT, false, "connecting");
  accept_pdata_t ap;
  memcpy(&ap, ev.conn.private_data, sizeof(ap));
  if (!ev.conn.private_data_present || ntohl(ap.magic) != WIRE_MAGIC ||
      ntohs(ap.version) != WIRE_VERSION)
    die("client: the server's accept carries no itapi-perf version %d private data", WIRE_VERSION);
  s->peer_addr = it_ntoh64(ap.addr);
  s->peer_context = it_ntoh64(ap.context);
  s->connected = true;

  if (!cfg->json && !cfg->csv) {
    printf("# itapi-perf: interface %s, %s, %s completions%s, window %u, %s buffers, %s, "
           "latency clock %s\n",
           info->ia_name, cfg->mode == MODE_LOOPBACK ? "loopback" : "client",
           cfg->event ? "event (it_evd_wait)" : "busy-poll",
           cfg->complete_first ? " (each ping's before its answer)" : "", cfg->window,
           mem_kind_names[cfg->mem], cfg->verify ? "latency data verified" :
           "no verification", lat_use_tsc ? "TSC" : "CLOCK_MONOTONIC");
    print_table_header();
  } else if (cfg->csv) {
    printf("%s\n", csv_fields);
  }
  size_t nres = 0;
  result_t *res = calloc(NTESTS * cfg->nsizes, sizeof(*res));
  if (res == NULL)
    die("out of memory");
  for (unsigned ti = 0; ti < NTESTS; ti++) {
    if (!(cfg->test_mask & (1u << ti)))
      continue;
    for (size_t si = 0; si < cfg->nsizes; si++) {
      res[nres] = run_test(&c, ti, cfg->sizes[si]);
      if (cfg->csv)
        print_csv_row(&res[nres]);
      else if (!cfg->json)
        print_table_row(&res[nres]);
      nres++;
    }
  }
  if (cfg->json)
    print_json(cfg, info->ia_name, res, nres);

  send_ctrl(s, MSG_QUIT, 0, 0, 0, 0, 0);
  sq_wait(s, s->sq_signaled, "the QUIT message");
  s->connected = false;
  IT(it_ep_disconnect, s->ep, NULL, 0);
  wait_cm(s, s->cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT, false, "disconnecting");
  it_ia_info_free(info);
  close_side(s);
  free(res);
  return 0;
}
