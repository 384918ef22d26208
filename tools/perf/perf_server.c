/*
 * itapi-perf: the server.  It follows the client's RUN messages: prepares
 * each chunk, answers READY, and plays its part of the data phase.
 *
 * SPDX-License-Identifier: MIT
 */
#include "itapi_perf.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

/* The ping-pong responder of send_lat and write_lat.  It answers first
 * and checks afterwards, so the check stays out of the client's timing.
 * The source is refilled for the next pong once this pong has completed.
 * Where that completion needs the peer's next message (vp/iwarp completes
 * a Send or Write when the answer to its delivery fence comes back, and
 * the client sends that answer with its next ping), the refill waits for
 * that ping instead of the responder waiting for the completion before it
 * polls for the ping: the responder answers a ping straight away.  With
 * --complete-first (FLAG_COMPLETE_FIRST) it takes each pong's completion
 * before it polls for the next ping, as dtest's responder does. */
static void
serve_pingpong(side_t *s, const ctrl_msg_t *m)
{
  const test_desc_t *t = &tests[m->test];
  size_t size = m->size;
  uint64_t last_pong = 0;
  bool verify_on = m->flags & FLAG_VERIFY, refill = false;
  bool complete_first = m->flags & FLAG_COMPLETE_FIRST;
  /* Pings that arrive as a receive: send_lat, and write_lat -e (a
   * zero-length Send behind each Write). */
  bool by_send = t->op == OP_SEND || notify_by_send(s, t);
  size_t recv_len = t->op == OP_SEND ? size : 0;
  /* Counted from the chunk's start: waiting for a pong may already have
   * taken the next ping off the queue. */
  uint64_t recvd0 = s->data_recvd;
  memset(target(s, 0), 0, size);
  memset(target(s, 1), 0, size);
  fill(source(s), size, m->base, WHO_SERVER);
  if (by_send)
    post_data_recv(s, 0, recv_len);
  else
    post_ctrl_recv(s);
  send_ctrl(s, MSG_READY, 0, 0, 0, 0, 0);
  for (uint64_t i = 0; i < m->iters; i++) {
    int k = i & 1;
    uint64_t it = m->base + i;
    if (by_send) {
      while (s->data_recvd < recvd0 + i + 1)
        pump(s, true, WAIT_DUE, "a ping");
    } else {
      volatile unsigned char *lastb = target(s, k) + size - 1;
      uint64_t deadline = 0; /* set at the first check, as the client's */
      for (unsigned spin = 1; __atomic_load_n(lastb, __ATOMIC_ACQUIRE) != tag_of(it); spin++) {
        spin_pause();
        if (spin % 4096 == 0) {
          check_connection(s);
          if (deadline == 0 && s->timeout_ns)
            deadline = now_ns() + s->timeout_ns;
          check_deadline(s, deadline, "an RDMA Write ping to land");
        }
      }
    }
    if (refill) {
      sq_wait(s, last_pong, "a pong to complete");
      fill(source(s), size, it, WHO_SERVER);
      refill = false;
    }
    if (by_send) {
      /* The next CTRL must land behind the last data receive. */
      if (i + 1 < m->iters)
        post_data_recv(s, !k, recv_len);
      else
        post_ctrl_recv(s);
    }
    if (t->op == OP_SEND) {
      last_pong = sq_post(s, OP_SEND, source_off(s), size, 0, true);
    } else if (by_send) {
      sq_post(s, OP_WRITE, source_off(s), size, peer_target(s, k), false);
      last_pong = sq_post(s, OP_SEND, source_off(s), 0, 0, true);
    } else {
      last_pong = sq_post(s, OP_WRITE, source_off(s), size, peer_target(s, k), true);
    }
    if (complete_first)
      sq_wait(s, last_pong, "a pong to complete");
    if (verify_on)
      verify(target(s, k), size, it, WHO_CLIENT, t->name, "server", it, t->op == OP_WRITE);
    /* Reap completions as we go so the send queue never fills.  A
     * write_lat pong is the only request of its iteration: the responder
     * goes straight back to polling memory, as perftest's does. */
    if (by_send)
      while (pump(s, false, WAIT_DUE, NULL))
        ;
    else
      pump(s, false, WAIT_DUE, NULL);
    /* The pong's completion is usually in by now (the client still has to
     * see the pong, check it and refill before its next ping can arrive). */
    if (i + 1 < m->iters) {
      if (s->sq_done >= last_pong)
        fill(source(s), size, it + 1, WHO_SERVER);
      else
        refill = true;
    }
  }
}

static void
serve_send_bw(side_t *s, const ctrl_msg_t *m)
{
  size_t size = m->size;
  uint64_t end = s->data_recv_posted + m->iters;
  uint64_t batch = s->rq_depth / 8 > 0 ? s->rq_depth / 8 : 1, unpublished = 0;
  size_t depth = s->rq_depth - NCTRL_RECV - 4;
  while (s->data_recv_posted < end && s->data_recv_posted - s->data_recvd < depth)
    post_data_recv(s, 0, size);
  if (s->data_recv_posted == end)
    post_ctrl_recv(s);
  publish_credit(s);
  send_ctrl(s, MSG_READY, 0, 0, 0, 0, 0);
  while (s->data_recvd < end) {
    pump(s, true, WAIT_DUE, "send_bw data");
    while (s->data_recv_posted < end && s->data_recv_posted - s->data_recvd < depth) {
      post_data_recv(s, 0, size);
      unpublished++;
      if (s->data_recv_posted == end)
        post_ctrl_recv(s);
    }
    if (unpublished >= batch || (unpublished > 0 && s->data_recv_posted == end)) {
      publish_credit(s);
      unpublished = 0;
    }
  }
}

static void
serve(side_t *s)
{
  bool spin = false;
  for (;;) {
    /* Between chunks nothing is timed: sleep rather than spin, leaving the
     * CPU to the client on a small machine.  Except behind an RDMA Write
     * or Read chunk in busy-poll mode: the wait for the next message then
     * spans the data phase, and a provider whose target takes part in
     * placement (vp/iwarp) is driven by polling there, as a busy-polling
     * receiver of raw TCP would be.  Either wait is idle (wait_t): that
     * data phase lasts as long as the client's test, however much longer
     * than --timeout, and the connection's loss still ends it. */
    ctrl_msg_t m = wait_ctrl(s, spin ? WAIT_IDLE_SPIN : WAIT_IDLE, "the next test");
    spin = false;
    if (m.type == MSG_QUIT)
      return;
    if (m.type != MSG_RUN || m.test >= NTESTS || m.size == 0 || m.size > s->slot || m.iters == 0)
      die("server: bad control message (type %u, test %u, %llu bytes, %llu iterations)",
          (unsigned) m.type, (unsigned) m.test, (unsigned long long) m.size,
          (unsigned long long) m.iters);
    const test_desc_t *t = &tests[m.test];
    s->expect_len = notify_by_send(s, t) ? 0 : m.size;
    if (t->op == OP_SEND && t->bw) {
      serve_send_bw(s, &m);
    } else if (t->op == OP_SEND || (t->op == OP_WRITE && !t->bw)) {
      serve_pingpong(s, &m);
    } else {
      /* RDMA Write and Read bandwidth, Read latency: the server's CPU
       * takes no part.  Reads alternate between the two targets, filled
       * with two patterns, so each iteration's data differs from the last. */
      if (t->op == OP_READ) {
        fill(target(s, 0), m.size, 0, WHO_READ);
        fill(target(s, 1), m.size, 1, WHO_READ);
      }
      post_ctrl_recv(s);
      send_ctrl(s, MSG_READY, 0, 0, 0, 0, 0);
      spin = !s->event_mode;
    }
  }
}

static void
reject(it_cn_est_identifier_t id, const it_ia_info_t *info, const char *why)
{
  size_t n = strlen(why) + 1;
  if (n > info->reject_private_data_len)
    n = info->reject_private_data_len;
  IT(it_reject, id, (const unsigned char *) why, n);
  fprintf(stderr, PROG ": server: rejected a connection: %s\n", why);
}

void
server_run(const config_t *cfg, rendezvous_t *rv)
{
  side_t s = { .role = "server", .timeout_ns = (uint64_t) (cfg->timeout * 1e9) };
  it_ia_info_t *info;
  open_ia(&s, cfg->ia_name, &info);
  IT(it_evd_create, s.ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
     &s.req_evd, NULL);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  it_listen_flags_t lf = IT_LISTEN_NO_FLAG;
  int port = cfg->port >= 0 ? cfg->port : cfg->mode == MODE_SERVER ? DEFAULT_PORT : -1;
  if (port >= 0) {
    qual.conn_qual.port = htons((uint16_t) port);
    lf = IT_LISTEN_CONN_QUAL_INPUT;
  }
  IT(it_listen_create, s.ia, 0, s.req_evd, lf, &qual, &s.listener);
  if (rv != NULL) {
    pthread_mutex_lock(&rv->lock);
    rv->port = ntohs(qual.conn_qual.port);
    pthread_cond_signal(&rv->cond);
    pthread_mutex_unlock(&rv->lock);
  } else {
    fprintf(stderr, PROG ": server: interface %s, listening on port %u\n", cfg->ia_name,
            ntohs(qual.conn_qual.port));
  }

  conn_pdata_t cp;
  it_event_t ev;
  for (;;) {
    ev = wait_cm(&s, s.req_evd, IT_CM_REQ_CONN_REQUEST_EVENT, rv == NULL, "listening");
    memcpy(&cp, ev.conn_req.private_data, sizeof(cp));
    uint64_t max_size = it_ntoh64(cp.max_size);
    uint32_t window = ntohl(cp.window);
    if (!ev.conn_req.private_data_present || ntohl(cp.magic) != WIRE_MAGIC)
      reject(ev.conn_req.cn_est_id, info, "not an itapi-perf client");
    else if (ntohs(cp.version) != WIRE_VERSION)
      reject(ev.conn_req.cn_est_id, info, "itapi-perf protocol version mismatch");
    else if (max_size == 0 || max_size > (1ull << 32) || window == 0 || window > 4096)
      reject(ev.conn_req.cn_est_id, info, "message size or window out of range");
    else
      break;
  }
  check_size_limits(info, it_ntoh64(cp.max_size), "server");
  if (sizeof(accept_pdata_t) > info->accept_private_data_len)
    die("server: needs %zu bytes of accept private data; interface %s allows %zu",
        sizeof(accept_pdata_t), info->ia_name, info->accept_private_data_len);
  s.event_mode = cfg->event || (ntohs(cp.flags) & FLAG_EVENT);
  s.mem_kind = cfg->mem;
  s.peer_addr = it_ntoh64(cp.addr);
  s.peer_context = it_ntoh64(cp.context);
  open_ep(&s, it_ntoh64(cp.max_size), ntohl(cp.window));
  post_ctrl_recv(&s);
  accept_pdata_t ap = { htonl(WIRE_MAGIC), htons(WIRE_VERSION), 0,
                        it_hton64(it_make_rdma_addr_absolute(s.mem)), it_hton64(s.context) };
  IT(it_ep_accept, s.ep, ev.conn_req.cn_est_id, (const unsigned char *) &ap, sizeof(ap));
  wait_cm(&s, s.cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT, false, "accepting");
  s.connected = true;

  serve(&s);

  s.connected = false;
  wait_cm(&s, s.cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT, false, "waiting for the client to leave");
  it_ia_info_free(info);
  close_side(&s);
}

void *
server_thread(void *arg)
{
  rendezvous_t *rv = arg;
  server_run(rv->cfg, rv);
  return NULL;
}
