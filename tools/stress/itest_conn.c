/*
 * itapi-test: per-thread objects, connection establishment with the
 * exchange of buffer contexts in the private data, CM event checks, and the
 * orderly end: disconnect, every EP's DISCONNECT event, every outstanding
 * receive flushed exactly once, nothing extra afterwards.
 *
 * Sharing: the active EPs of a thread share one DTO EVD for both queues and
 * one CM EVD; each passive EP has its own request and receive EVDs and they
 * share one CM EVD.  Even pairs connect two-way, odd pairs three-way when
 * the IA offers it.  By default (--close mixed) the active end disconnects
 * even pairs and the passive end odd ones; --close both has both ends call
 * it_ep_disconnect, as two applications closing at once do.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "itest.h"
#include "../tool_addr.h"

#define PDATA_MAGIC 0x49544553u /* "ITES" */

/* What each end tells the other when connecting (network byte order). */
typedef struct {
  uint32_t magic;
  uint16_t thread;
  uint16_t pair;
  uint64_t base;
  uint64_t ctx;
  uint64_t gid;
} itest_pdata_t;

/* Disconnect private data: the initiator names itself. */
typedef struct {
  uint32_t magic;
  uint32_t pad;
  uint64_t gid;
} itest_disc_pdata_t;

#define SETUP(call)                                                                    \
  do {                                                                                 \
    it_status_t st_ = (call);                                                          \
    if (st_ != IT_SUCCESS)                                                             \
      itest_fatal("thread %u setup: %s failed: %s (%s) %s", th->id, #call,             \
                  itx_status_name(st_), itx_status_message(st_), itx_error_detail()); \
  } while (0)

static void
pdata_make(const itest_end_t *e, itest_pdata_t *p)
{
  p->magic = htonl(PDATA_MAGIC);
  p->thread = htons((uint16_t) e->th->id);
  p->pair = htons((uint16_t) e->pair->index);
  p->base = it_hton64(it_make_rdma_addr_absolute(e->mem));
  p->ctx = it_hton64(e->ctx);
  p->gid = it_hton64(e->gid);
}

/* Take the peer's announcement; FALSE when it is not for this end. */
static bool
pdata_take(itest_end_t *e, const unsigned char *raw)
{
  itest_pdata_t p;
  memcpy(&p, raw, sizeof(p));
  if (ntohl(p.magic) != PDATA_MAGIC || ntohs(p.thread) != e->th->id ||
      ntohs(p.pair) != e->pair->index || it_ntoh64(p.gid) != e->peer->gid)
    return false;
  e->peer_base = it_ntoh64(p.base);
  e->peer_ctx = it_ntoh64(p.ctx);
  return true;
}

static void
layout(itest_thread_t *th)
{
  size_t w = th->cfg->window;
  th->slot = ((size_t) th->cfg->max_size + ITEST_GUARD + 63) & ~(size_t) 63;
  /* A window slot runs one transfer at a time, so its source (send,
   * write) and sink (read, atomic result) share one buffer. */
  th->off_src = 0;
  th->off_sink = th->off_src;
  th->off_recv = th->off_sink + w * th->slot;
  th->off_target = th->off_recv + w * th->slot;
  th->off_rdreg = th->off_target + w * th->slot;
  th->off_atomic = th->off_rdreg + 2 * th->slot;
}

static void
end_create(itest_thread_t *th, itest_pair_t *p, int side)
{
  const itest_config_t *cfg = th->cfg;
  itest_end_t *e = &p->end[side];
  e->th = th;
  e->pair = p;
  e->peer = &p->end[!side];
  e->side = side;
  e->index = p->index * 2 + (unsigned) side;
  e->gid = ((uint64_t) th->id << 16) | e->index;
  e->atomics_clean = true;
  e->memlen = (th->off_atomic + 64 + 4095) & ~(size_t) 4095;
  e->mem = aligned_alloc(4096, e->memlen);
  if (e->mem == NULL)
    itest_fatal("out of memory for a %zu-byte endpoint region", e->memlen);
  memset(e->mem, 0, e->memlen);
  itest_fill_read_region(e);
  uint64_t c = itest_counter_init(e);
  memcpy(e->mem + th->off_atomic, &c, 8);

  /* Atomic rights only where atomics run: an IA without them refuses the
   * privilege (IT_ERR_INVALID_PRIVS). */
  it_mem_priv_t privs = IT_PRIV_LOCAL | IT_PRIV_REMOTE |
                        (th->cfg->op_enabled[OP_ATOMIC] ? IT_PRIV_ATOMIC : 0);
  SETUP(it_lmr_create(th->pz[side], e->mem, NULL, e->memlen, IT_ADDR_MODE_ABSOLUTE, privs,
                      IT_LMR_FLAG_NONE, 0, &e->lmr, &e->ctx));
  if (side == 0) {
    e->req_evd = e->recv_evd = th->shared_dto_evd;
  } else {
    SETUP(it_evd_create(cfg->ia[1], IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, cfg->window + 8, 1,
                        IT_NULL_HANDLE, &e->req_evd, NULL));
    SETUP(it_evd_create(cfg->ia[1], IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, cfg->window + 8, 1,
                        IT_NULL_HANDLE, &e->recv_evd, NULL));
  }
  e->cm_evd = th->cm_evd[side];

  it_ep_attributes_t a;
  memset(&a, 0, sizeof(a));
  a.max_dto_payload_size = cfg->max_size;
  a.max_request_dtos = cfg->window;
  a.max_recv_dtos = cfg->window;
  a.max_send_segments = 1;
  a.max_recv_segments = 1;
  a.srv.rc.rdma_read_enable = IT_TRUE;
  a.srv.rc.rdma_write_enable = IT_TRUE;
  a.srv.rc.max_rdma_read_segments = 1;
  a.srv.rc.max_rdma_write_segments = 1;
  a.srv.rc.rdma_read_ird = cfg->window;
  a.srv.rc.rdma_read_ord = cfg->window;
  a.srv.rc.atomics_enable = cfg->op_enabled[OP_ATOMIC] ? IT_TRUE : IT_FALSE;
  SETUP(it_ep_rc_create(th->pz[side], e->req_evd, e->recv_evd, e->cm_evd, IT_EP_NO_FLAG, &a, &e->ep));
}

static itest_end_t *
end_of_ep(itest_thread_t *th, int side, it_ep_handle_t ep)
{
  for (unsigned i = 0; i < th->npairs; i++)
    if (th->pairs[i].end[side].ep == ep)
      return &th->pairs[i].end[side];
  return NULL;
}

static bool
wait_cm(itest_thread_t *th, it_evd_handle_t evd, uint64_t timeout_us, it_event_t *ev)
{
  size_t more;
  it_status_t st = it_evd_wait(evd, timeout_us, ev, &more);
  if (st == IT_ERR_TIMEOUT_EXPIRED)
    return false;
  SETUP(st);
  return true;
}

static void
connect_all(itest_thread_t *th)
{
  const itest_config_t *cfg = th->cfg;
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = htons(th->port);
  for (unsigned i = 0; i < th->npairs; i++) {
    itest_end_t *e = &th->pairs[i].end[0];
    itest_pdata_t pd;
    pdata_make(e, &pd);
    it_conn_attributes_t ca;
    memset(&ca, 0, sizeof(ca));
    it_cn_est_flags_t fl = (cfg->three_way && (i & 1)) ? IT_CONNECT_FLAG_THREE_WAY : IT_CONNECT_FLAG_TWO_WAY;
    SETUP(it_ep_connect(e->ep, &th->path, &ca, &qual, fl, (unsigned char *) &pd, sizeof(pd)));
  }
  /* Requests come in any order: the private data says which pair. */
  for (unsigned n = 0; n < th->npairs; n++) {
    it_event_t ev;
    if (!wait_cm(th, th->req_evd, ITEST_SETUP_TIMEOUT_US, &ev))
      itest_fatal("thread %u: only %u of %u connection requests arrived within 10 s", th->id, n,
                  th->npairs);
    if (ev.event_number != IT_CM_REQ_CONN_REQUEST_EVENT || !ev.conn_req.private_data_present)
      itest_fatal("thread %u: expected a connection request with private data, got %s", th->id,
                  itx_event_name(ev.event_number));
    itest_pdata_t pd;
    memcpy(&pd, ev.conn_req.private_data, sizeof(pd));
    unsigned pi = ntohs(pd.pair);
    if (pi >= th->npairs || !pdata_take(&th->pairs[pi].end[1], ev.conn_req.private_data))
      itest_fatal("thread %u: a connection request carries private data of no pair of this thread", th->id);
    itest_end_t *e = &th->pairs[pi].end[1];
    itest_pdata_t mine;
    pdata_make(e, &mine);
    SETUP(it_ep_accept(e->ep, ev.conn_req.cn_est_id, (unsigned char *) &mine, sizeof(mine)));
  }
  unsigned est[2] = { 0, 0 };
  double deadline = itest_now() + ITEST_SETUP_TIMEOUT_US / 1e6;
  while (est[0] < th->npairs || est[1] < th->npairs) {
    if (itest_now() > deadline)
      itest_fatal("thread %u: %u active and %u passive of %u EPs established within 10 s", th->id,
                  est[0], est[1], th->npairs);
    for (int side = 0; side < 2; side++) {
      it_event_t ev;
      if (!wait_cm(th, th->cm_evd[side], 10000, &ev))
        continue;
      itest_end_t *e = end_of_ep(th, side, ev.conn.ep);
      if (e == NULL)
        itest_fatal("thread %u: %s for EP %p, which is not one of ours", th->id,
                    itx_event_name(ev.event_number), (void *) ev.conn.ep);
      if (ev.event_number == IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT && side == 0) {
        if (!ev.conn.private_data_present || !pdata_take(e, ev.conn.private_data))
          itest_fatal("thread %u pair %u: the accept carries no or wrong private data", th->id,
                      e->pair->index);
        SETUP(it_ep_accept(e->ep, ev.conn.cn_est_id, NULL, 0));
      } else if (ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT) {
        if (e->established)
          itest_fatal("thread %u pair %u: a second ESTABLISHED event", th->id, e->pair->index);
        if (side == 0 && e->peer_base == 0 &&
            (!ev.conn.private_data_present || !pdata_take(e, ev.conn.private_data)))
          itest_fatal("thread %u pair %u: the accept carries no or wrong private data", th->id,
                      e->pair->index);
        e->established = true;
        est[side]++;
      } else {
        itest_fatal("thread %u pair %u: connection failed: %s", th->id, e->pair->index,
                    itx_event_name(ev.event_number));
      }
    }
  }
}

void
itest_thread_setup(itest_thread_t *th)
{
  const itest_config_t *cfg = th->cfg;
  th->phase = "setup";
  layout(th);
  th->npairs = cfg->eps;
  th->pairs = calloc(th->npairs, sizeof(itest_pair_t));
  if (th->pairs == NULL)
    itest_fatal("out of memory");
  size_t cmq = 4 * th->npairs + 16;
  for (int side = 0; side < 2; side++) {
    SETUP(it_pz_create(cfg->ia[side], &th->pz[side]));
    SETUP(it_evd_create(cfg->ia[side], IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, cmq, 1,
                        IT_NULL_HANDLE, &th->cm_evd[side], NULL));
  }
  SETUP(it_evd_create(cfg->ia[0], IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT,
                      2 * cfg->window * th->npairs + 16, 1, IT_NULL_HANDLE, &th->shared_dto_evd, NULL));
  SETUP(it_evd_create(cfg->ia[1], IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, cmq, 1,
                      IT_NULL_HANDLE, &th->req_evd, NULL));
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  SETUP(it_listen_create(cfg->ia[1], 0, th->req_evd, IT_LISTEN_NO_FLAG, &qual, &th->listener));
  th->port = ntohs(qual.conn_qual.port);

  /* The passive IA is reached at its interface's own first address (the
   * conformance suite's rule; 127.0.0.1 reaches no RNIC). */
  it_net_addr_t addr;
  SETUP(tool_self_addr(cfg->ia[1], &addr));
  size_t npaths = 1, tpaths = 0;
  SETUP(it_get_pathinfo(cfg->ia[0], 0, &addr, &npaths, &tpaths, &th->path));
  if (npaths != 1) {
    char where[INET6_ADDRSTRLEN + 32];
    itest_fatal("thread %u: it_get_pathinfo found %zu paths to %s, the interface's own first "
                "address; expected one (itapi-info lists the interface's addresses)", th->id,
                npaths, tool_addr_str(&addr, where, sizeof(where)));
  }

  for (unsigned i = 0; i < th->npairs; i++) {
    itest_pair_t *p = &th->pairs[i];
    p->th = th;
    p->index = i;
    p->state = PAIR_RUNNING;
    end_create(th, p, 0);
    end_create(th, p, 1);
  }
  for (unsigned i = 0; i < th->npairs; i++)
    for (int side = 0; side < 2; side++)
      itest_post_initial_recvs(&th->pairs[i].end[side]);
  connect_all(th);
  for (unsigned i = 0; i < th->npairs; i++)
    for (int side = 0; side < 2; side++)
      th->pairs[i].end[side].atomic_value = itest_counter_init(th->pairs[i].end[side].peer);
  th->fault_pair = &th->pairs[0];
}

/* --- CM events during and after the run ------------------------------- */

static void
check_disc_pdata(itest_thread_t *th, itest_end_t *e, const it_connection_event_t *c)
{
  if (e->disc_initiator || th->cfg->disconnect_pdata < sizeof(itest_disc_pdata_t))
    return;
  itest_disc_pdata_t d;
  memcpy(&d, c->private_data, sizeof(d));
  if (!c->private_data_present)
    itest_error(th, e, 0, "IT_CM_MSG_CONN_DISCONNECT_EVENT lacks the peer's %zu bytes of disconnect "
                "private data", sizeof(d));
  else if (ntohl(d.magic) != PDATA_MAGIC || it_ntoh64(d.gid) != e->peer->gid)
    itest_error(th, e, 0, "IT_CM_MSG_CONN_DISCONNECT_EVENT carries private data that is not the "
                "peer's (gid 0x%llx, expected 0x%llx)", (unsigned long long) it_ntoh64(d.gid),
                (unsigned long long) e->peer->gid);
}

static void
handle_cm(itest_thread_t *th, int side, const it_event_t *ev)
{
  itest_end_t *e = end_of_ep(th, side, ev->conn.ep);
  const char *name = itx_event_name(ev->event_number);
  if (e == NULL) {
    itest_error(th, NULL, 0, "%s for EP %p, which is none of this thread's %s EPs", name,
                (void *) ev->conn.ep, side ? "passive" : "active");
    return;
  }
  if (e->freed && e->free_grace) {
    /* Dequeued in the drain right after it_ep_free: queued before. */
    th->fault.tolerated_cm++;
    itest_log(th->cfg, "fault: thread %u pair %u: %s for the freed EP was queued before its free",
              th->id, e->pair->index, name);
    return;
  }
  if (e->freed) {
    itest_error(th, e, 0, "%s delivered for an EP that was freed", name);
    return;
  }
  itest_pair_t *p = e->pair;
  switch (ev->event_number) {
  case IT_CM_MSG_CONN_DISCONNECT_EVENT:
    if (e->disconnected) {
      itest_error(th, e, 0, "a second IT_CM_MSG_CONN_DISCONNECT_EVENT");
    } else if (p->state != PAIR_DISCONNECTING && p->state != PAIR_DEAD) {
      itest_error(th, e, 0, "IT_CM_MSG_CONN_DISCONNECT_EVENT while nobody disconnected");
      e->cm_unexpected++;
      if (p->state == PAIR_RUNNING)
        p->state = PAIR_DEAD;
    } else if (e->broken) {
      itest_error(th, e, 0, "IT_CM_MSG_CONN_DISCONNECT_EVENT after IT_CM_MSG_CONN_BROKEN_EVENT");
    }
    if (p->state == PAIR_DISCONNECTING)
      check_disc_pdata(th, e, &ev->conn);
    e->disconnected = true;
    th->st.disconnects++;
    break;
  case IT_CM_MSG_CONN_BROKEN_EVENT:
    if (e->broken)
      itest_error(th, e, 0, "a second IT_CM_MSG_CONN_BROKEN_EVENT");
    else if (e->disconnected)
      itest_error(th, e, 0, "IT_CM_MSG_CONN_BROKEN_EVENT after IT_CM_MSG_CONN_DISCONNECT_EVENT");
    e->broken = true;
    if (p->state == PAIR_FAULT || p->state == PAIR_DEAD)
      break;
    itest_error(th, e, 0, "unexpected IT_CM_MSG_CONN_BROKEN_EVENT (no error and no fault injected)");
    e->cm_unexpected++;
    if (p->state == PAIR_RUNNING)
      p->state = PAIR_DEAD;
    break;
  default:
    itest_error(th, e, 0, "unexpected CM event %s", name);
    e->cm_unexpected++;
    break;
  }
}

void
itest_poll_cm(itest_thread_t *th)
{
  for (int side = 0; side < 2; side++) {
    it_event_t ev;
    for (;;) {
      it_status_t st = it_evd_dequeue(th->cm_evd[side], &ev);
      if (st == IT_ERR_QUEUE_EMPTY)
        break;
      if (st != IT_SUCCESS) {
        itest_call_error(th, NULL, 0, "it_evd_dequeue (CM EVD)", st);
        break;
      }
      handle_cm(th, side, &ev);
    }
  }
}

/* --- the end ---------------------------------------------------------- */

static bool
all_closed(const itest_thread_t *th)
{
  for (unsigned i = 0; i < th->npairs; i++) {
    const itest_pair_t *p = &th->pairs[i];
    for (int s = 0; s < 2; s++) {
      const itest_end_t *e = &p->end[s];
      if (e->sq_busy + e->rq_busy > 0)
        return false;
      if (p->state == PAIR_DISCONNECTING && !e->disconnected)
        return false;
    }
  }
  return true;
}

static void
report_unclosed(itest_thread_t *th)
{
  for (unsigned i = 0; i < th->npairs; i++) {
    itest_pair_t *p = &th->pairs[i];
    for (int s = 0; s < 2; s++) {
      itest_end_t *e = &p->end[s];
      if (p->state == PAIR_DISCONNECTING && !e->disconnected)
        itest_error(th, e, 0, "no IT_CM_MSG_CONN_DISCONNECT_EVENT within %.0f s of it_ep_disconnect "
                    "(called by the %s end)", ITEST_DRAIN_TIMEOUT_S,
                    e->disc_initiator ? "same" : "peer");
      for (unsigned k = 0; k < th->cfg->window; k++) {
        if (e->sq[k].busy)
          itest_error(th, e, e->sq[k].seq, "%s (cookie 0x%016llx) never completed, not even flushed",
                      itest_wr_name(e->sq[k].kind), (unsigned long long) e->sq[k].cookie);
        if (e->rq[k].busy)
          itest_error(th, e, e->rq[k].seq, "receive (cookie 0x%016llx, slot %u) never completed, not "
                      "even flushed, after the connection ended", (unsigned long long) e->rq[k].cookie, k);
      }
    }
  }
}

static void
check_counters(itest_thread_t *th)
{
  if (!th->cfg->op_enabled[OP_ATOMIC])
    return;
  for (unsigned i = 0; i < th->npairs; i++) {
    itest_pair_t *p = &th->pairs[i];
    if (p->state != PAIR_RUNNING)
      continue;
    for (int s = 0; s < 2; s++) {
      itest_end_t *e = &p->end[s];
      uint64_t v;
      memcpy(&v, e->peer->mem + th->off_atomic, 8);
      if (e->atomics_clean && v != e->atomic_value)
        itest_error(th, e, e->op_seq, "the peer's atomic counter ends at 0x%016llx; the atomics "
                    "issued make it 0x%016llx", (unsigned long long) v,
                    (unsigned long long) e->atomic_value);
    }
  }
}

#define TEARDOWN(call, e)                                          \
  do {                                                             \
    it_status_t st_ = (call);                                      \
    if (st_ != IT_SUCCESS)                                         \
      itest_call_error(th, (e), 0, #call, st_);                    \
  } while (0)

/* Which end of pair @i calls it_ep_disconnect (first, with CLOSE_BOTH). */
static int
close_side(itest_close_t how, unsigned i)
{
  switch (how) {
  case CLOSE_ACTIVE: return 0;
  case CLOSE_PASSIVE: return 1;
  default: return (int) (i & 1);
  }
}

void
itest_thread_teardown(itest_thread_t *th)
{
  th->phase = "disconnect";
  check_counters(th);
  for (unsigned i = 0; i < th->npairs; i++) {
    itest_pair_t *p = &th->pairs[i];
    if (p->state == PAIR_RUNNING) {
      p->state = PAIR_DISCONNECTING;
      th->st.disconnects_expected += 2;
      int first = close_side(th->cfg->close, i);
      for (int n = 0; n < (th->cfg->close == CLOSE_BOTH ? 2 : 1); n++) {
        itest_end_t *e = &p->end[first ^ n];
        e->disc_initiator = true;
        itest_disc_pdata_t d = { .magic = htonl(PDATA_MAGIC), .gid = it_hton64(e->gid) };
        size_t len = th->cfg->disconnect_pdata >= sizeof(d) ? sizeof(d) : 0;
        it_status_t st = it_ep_disconnect(e->ep, (unsigned char *) &d, len);
        /* Closing at once from both ends: the second call may find the
         * connection gone already, which IT-API reports this way. */
        if (st == IT_ERR_INVALID_EP_STATE && n == 1)
          e->disc_initiator = false;
        else if (st != IT_SUCCESS)
          itest_call_error(th, e, 0, "it_ep_disconnect", st);
      }
    } else if (p->state == PAIR_DEAD) {
      /* Broken by an error already reported: close what may still be
       * open; the connection may be gone already, so a refusal is fine. */
      for (int s = 0; s < 2; s++) {
        itest_end_t *e = &p->end[s];
        it_ep_param_t prm;
        if (e->freed || it_ep_query(e->ep, IT_EP_PARAM_STATE, &prm) != IT_SUCCESS ||
            prm.ep_state.rc != IT_EP_STATE_CONNECTED)
          continue;
        it_status_t st = it_ep_disconnect(e->ep, NULL, 0);
        if (st != IT_SUCCESS && st != IT_ERR_INVALID_EP_STATE)
          itest_call_error(th, e, 0, "it_ep_disconnect", st);
        break;
      }
    }
  }
  double deadline = itest_now() + ITEST_DRAIN_TIMEOUT_S;
  while (!all_closed(th) && itest_now() < deadline) {
    bool got = itest_poll_dto(th);
    itest_poll_cm(th);
    if (!got) {
      struct timespec ts = { 0, 200 * 1000 };
      nanosleep(&ts, NULL);
    }
  }
  if (!all_closed(th))
    report_unclosed(th);
  /* Anything arriving now is a duplicate or an extra event. */
  for (int i = 0; i < 3; i++) {
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    itest_poll_dto(th);
    itest_poll_cm(th);
  }

  th->phase = "free";
  for (unsigned i = 0; i < th->npairs; i++)
    for (int s = 0; s < 2; s++) {
      itest_end_t *e = &th->pairs[i].end[s];
      if (!e->freed)
        TEARDOWN(it_ep_free(e->ep), e);
    }
  TEARDOWN(it_listen_free(th->listener), NULL);
  for (unsigned i = 0; i < th->npairs; i++)
    for (int s = 0; s < 2; s++) {
      itest_end_t *e = &th->pairs[i].end[s];
      TEARDOWN(it_lmr_free(e->lmr), e);
      if (s == 1) {
        TEARDOWN(it_evd_free(e->req_evd), e);
        TEARDOWN(it_evd_free(e->recv_evd), e);
      }
      free(e->mem);
    }
  TEARDOWN(it_evd_free(th->shared_dto_evd), NULL);
  TEARDOWN(it_evd_free(th->req_evd), NULL);
  for (int side = 0; side < 2; side++) {
    TEARDOWN(it_evd_free(th->cm_evd[side]), NULL);
    TEARDOWN(it_pz_free(th->pz[side]), NULL);
  }
  free(th->pairs);
  th->pairs = NULL;
  th->phase = "done";
}
