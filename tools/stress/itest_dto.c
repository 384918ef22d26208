/*
 * itapi-test: the transaction loop.  Every transfer is validated:
 *   - sends at the receiver: the k-th receive of an endpoint holds the
 *     peer's k-th send, whose length and bytes derive from (seed, sender,
 *     k), so a misplaced, stale or reordered message is caught;
 *   - RDMA Writes by reading the target memory once the write completed,
 *     and some by an RDMA Read of the same range;
 *   - RDMA Reads against the peer's read region, whose content is known;
 *   - atomics by the old value each returns (RC executes them in order, so
 *     the requester knows it) and by the counter's final value.
 * Landing zones are poisoned with the complement of the expected bytes
 * before each post, and guard bytes after them are checked, so a missing
 * or overlong placement is caught too.  Every work request carries a
 * cookie naming its endpoint, queue slot and generation: a completion for
 * a request that is not outstanding (duplicate, unknown), out of queue
 * order, or on the wrong EVD or EP is an error, and so is a request that
 * never completes.
 *
 * SPDX-License-Identifier: MIT
 */
#include <sched.h>
#include <string.h>

#include "itest.h"

/* Pattern families: one key space each. */
enum { PK_SEND = 1, PK_SIZE, PK_WRITE, PK_RDREG, PK_COUNTER, PK_ATOM, PK_OPS };

uint64_t
itest_mix(uint64_t x)
{
  /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t
pat_key(const itest_thread_t *th, unsigned family, uint64_t gid, uint64_t seq)
{
  return itest_mix(itest_mix(itest_mix(th->cfg->seed ^ family) ^ gid) ^ seq);
}

static uint64_t
rnd(itest_thread_t *th)
{
  return itest_mix(th->rng++);
}

static uint32_t
rnd_below(itest_thread_t *th, uint32_t n)
{
  return (uint32_t) (rnd(th) % n);
}

/* Sizes mix small and large transfers. */
static uint32_t
pick_len(uint64_t r, uint32_t max, bool zero_ok)
{
  uint32_t lim = (r & 1) ? (max < 64 ? max : 64) : max;
  uint32_t base = zero_ok ? 0 : 1;
  return base + (uint32_t) ((r >> 8) % (lim - base + 1));
}

/* Byte j of a pattern stream is byte j % 8 of mix(key + j / 8), xor x. */
static void
pat_fill(uint8_t *dst, uint64_t key, uint64_t off, size_t n, uint8_t x)
{
  size_t i = 0;
  while (i < n) {
    uint64_t j = off + i;
    uint64_t w = itest_mix(key + (j >> 3));
    for (unsigned b = j & 7; b < 8 && i < n; b++)
      dst[i++] = (uint8_t) (w >> (b * 8)) ^ x;
  }
}

/* Index of the first byte that differs from the pattern, or -1. */
static long
pat_find_bad(const uint8_t *src, uint64_t key, uint64_t off, size_t n, uint8_t x, uint8_t *want)
{
  size_t i = 0;
  while (i < n) {
    uint64_t j = off + i;
    uint64_t w = itest_mix(key + (j >> 3));
    for (unsigned b = j & 7; b < 8 && i < n; b++, i++) {
      uint8_t v = (uint8_t) (w >> (b * 8)) ^ x;
      if (src[i] != v) {
        *want = v;
        return (long) i;
      }
    }
  }
  return -1;
}

/* Check a landing zone: @len bytes of the pattern, then the poisoned guard. */
static bool
check_zone(itest_thread_t *th, itest_end_t *e, uint64_t seq, const char *what, const uint8_t *p,
           uint64_t key, uint64_t off, uint32_t len, size_t guard)
{
  uint8_t want;
  long bad = pat_find_bad(p, key, off, len, 0, &want);
  if (bad >= 0) {
    itest_error(th, e, seq, "%s: byte %ld of %u is 0x%02x, expected 0x%02x%s", what, bad, len,
                p[bad], want, (p[bad] ^ want) == 0xff ? " (never written: still the poison)" :
                " (wrong data: misplaced or stale transfer)");
    return false;
  }
  bad = pat_find_bad(p + len, key, off + len, guard, 0xff, &want);
  if (bad >= 0) {
    itest_error(th, e, seq, "%s: guard byte %ld past the %u transferred bytes was overwritten "
                "(0x%02x, poison 0x%02x)", what, bad, len, p[len + bad], want);
    return false;
  }
  return true;
}

static void
poison_zone(uint8_t *p, uint64_t key, uint64_t off, uint32_t len, size_t guard)
{
  pat_fill(p, key, off, len + guard, 0xff);
}

uint64_t
itest_counter_init(const itest_end_t *e)
{
  return pat_key(e->th, PK_COUNTER, e->gid, 0);
}

void
itest_fill_read_region(itest_end_t *e)
{
  pat_fill(e->mem + e->th->off_rdreg, pat_key(e->th, PK_RDREG, e->gid, 0), 0, 2 * e->th->slot, 0);
}

static uint32_t
send_len(const itest_thread_t *th, uint64_t sender_gid, uint64_t seq)
{
  return pick_len(pat_key(th, PK_SIZE, sender_gid, seq), th->cfg->max_size, true);
}

bool
itest_pair_expects_flush(const itest_pair_t *p)
{
  return p->state != PAIR_RUNNING;
}

static void
pair_kill(itest_pair_t *p)
{
  if (p->state == PAIR_RUNNING)
    p->state = PAIR_DEAD;
}

/* --- posting --------------------------------------------------------- */

static uint64_t
make_cookie(itest_end_t *e, itest_wr_kind_t kind, unsigned slot)
{
  e->gen = (e->gen + 1) & 0x0fffffffu;
  return ((uint64_t) e->th->id << 56) | ((uint64_t) e->index << 40) | ((uint64_t) kind << 36) |
         ((uint64_t) slot << 28) | e->gen;
}

static uint8_t *
slot_ptr(itest_end_t *e, size_t region, unsigned slot)
{
  return e->mem + region + (size_t) slot * e->th->slot;
}

static it_lmr_triplet_t
triplet(itest_end_t *e, uint8_t *p, uint32_t len)
{
  it_lmr_triplet_t t = { .lmr = e->lmr, .addr.abs = p, .length = len };
  return t;
}

static void
sq_take(itest_end_t *e, unsigned k, itest_wr_kind_t kind, uint64_t seq, uint32_t len)
{
  itest_wr_t *w = &e->sq[k];
  memset(w, 0, sizeof(*w));
  w->busy = true;
  w->kind = kind;
  w->cookie = make_cookie(e, kind, k);
  w->post_no = e->sq_post_no++;
  w->seq = seq;
  w->len = len;
  e->sq_busy++;
}

/* A post the library refused: the request will never complete. */
static void
sq_unpost(itest_end_t *e, unsigned k, const char *call, it_status_t st)
{
  itest_call_error(e->th, e, e->sq[k].seq, call, st);
  e->sq[k].busy = false;
  e->sq_busy--;
  e->sq_post_no--;
  pair_kill(e->pair);
}

static void
post_recv_slot(itest_end_t *e, unsigned k)
{
  itest_thread_t *th = e->th;
  itest_wr_t *w = &e->rq[k];
  memset(w, 0, sizeof(*w));
  w->busy = true;
  w->kind = WR_RECV;
  w->cookie = make_cookie(e, WR_RECV, k);
  w->post_no = e->rq_post_no++;
  w->seq = e->recv_seq;
  w->len = send_len(th, e->peer->gid, w->seq);
  uint8_t *p = slot_ptr(e, th->off_recv, k);
  poison_zone(p, pat_key(th, PK_SEND, e->peer->gid, w->seq), 0, w->len, ITEST_GUARD);
  it_lmr_triplet_t t = triplet(e, p, th->cfg->max_size);
  it_status_t st = it_post_recv(e->ep, &t, 1, w->cookie, IT_COMPLETION_FLAG);
  if (st != IT_SUCCESS) {
    itest_call_error(th, e, w->seq, "it_post_recv", st);
    w->busy = false;
    e->rq_post_no--;
    pair_kill(e->pair);
    return;
  }
  e->recv_seq++;
  e->rq_busy++;
}

void
itest_post_initial_recvs(itest_end_t *e)
{
  for (unsigned k = 0; k < e->th->cfg->window; k++)
    post_recv_slot(e, k);
}

static void
issue_send(itest_thread_t *th, itest_end_t *e, unsigned k)
{
  uint64_t seq = e->send_seq;
  uint32_t len = send_len(th, e->gid, seq);
  uint8_t *src = slot_ptr(e, th->off_src, k);
  pat_fill(src, pat_key(th, PK_SEND, e->gid, seq), 0, len, 0);
  sq_take(e, k, WR_SEND, seq, len);
  it_lmr_triplet_t t = triplet(e, src, len);
  /* A zero-byte send may name one empty segment or none. */
  size_t nseg = (len == 0 && (rnd(th) & 1)) ? 0 : 1;
  it_status_t st = it_post_send(e->ep, nseg ? &t : NULL, nseg, e->sq[k].cookie, IT_COMPLETION_FLAG);
  if (st != IT_SUCCESS) {
    sq_unpost(e, k, "it_post_send", st);
    return;
  }
  e->send_seq++;
}

static uint64_t
peer_addr(itest_end_t *e, size_t region, unsigned slot, uint32_t off)
{
  return e->peer_base + region + (uint64_t) slot * e->th->slot + off;
}

static void
issue_write(itest_thread_t *th, itest_end_t *e, unsigned k)
{
  uint32_t max = th->cfg->max_size;
  uint64_t seq = e->op_seq++;
  uint32_t len = pick_len(rnd(th), max, false);
  uint32_t off = rnd_below(th, max - len + 1);
  uint64_t key = pat_key(th, PK_WRITE, e->gid, seq);
  uint8_t *src = slot_ptr(e, th->off_src, k);
  pat_fill(src, key, 0, len, 0);
  /* Our slot k is the only writer of the peer's target slot k. */
  poison_zone(slot_ptr(e->peer, th->off_target, k) + off, key, 0, len, ITEST_GUARD);
  sq_take(e, k, WR_WRITE, seq, len);
  e->sq[k].off = off;
  e->sq[k].readback = rnd_below(th, 100) < th->cfg->readback_pct;
  it_lmr_triplet_t t = triplet(e, src, len);
  it_status_t st = it_post_rdma_write(e->ep, &t, 1, e->sq[k].cookie, IT_COMPLETION_FLAG,
                                      peer_addr(e, th->off_target, k, off), e->peer_ctx);
  if (st != IT_SUCCESS)
    sq_unpost(e, k, "it_post_rdma_write", st);
}

static void
issue_read(itest_thread_t *th, itest_end_t *e, unsigned k)
{
  uint64_t seq = e->op_seq++;
  uint32_t len = pick_len(rnd(th), th->cfg->max_size, false);
  uint32_t off = rnd_below(th, (uint32_t) th->slot);
  uint64_t key = pat_key(th, PK_RDREG, e->peer->gid, 0);
  uint8_t *sink = slot_ptr(e, th->off_sink, k);
  poison_zone(sink, key, off, len, ITEST_GUARD);
  sq_take(e, k, WR_READ, seq, len);
  e->sq[k].off = off;
  it_lmr_triplet_t t = triplet(e, sink, len);
  it_status_t st = it_post_rdma_read(e->ep, &t, 1, e->sq[k].cookie, IT_COMPLETION_FLAG,
                                     e->peer_base + th->off_rdreg + off, e->peer_ctx);
  if (st != IT_SUCCESS)
    sq_unpost(e, k, "it_post_rdma_read", st);
}

static void
poison_result(itest_thread_t *th, itest_end_t *e, uint8_t *p, uint64_t expect, uint64_t seq)
{
  uint64_t bad = ~expect;
  memcpy(p, &bad, 8);
  pat_fill(p + 8, pat_key(th, PK_ATOM, e->gid, seq), 8, ITEST_GUARD, 0xff);
}

static void
issue_atomic(itest_thread_t *th, itest_end_t *e, unsigned k)
{
  uint64_t seq = e->op_seq++;
  uint8_t *res = slot_ptr(e, th->off_sink, k);
  bool cas = rnd(th) & 1;
  uint64_t old = e->atomic_value, add_or_swap = rnd(th), compare = 0;
  bool miss = false;
  if (cas) {
    /* One in four compares against a value the counter does not hold. */
    miss = rnd_below(th, 4) == 0;
    compare = miss ? old ^ (1ull << rnd_below(th, 64)) : old;
  }
  poison_result(th, e, res, old, seq);
  sq_take(e, k, cas ? WR_CSWAP : WR_FADD, seq, 8);
  e->sq[k].expect = old;
  e->sq[k].miss = miss;
  it_lmr_triplet_t t = triplet(e, res, 8);
  it_status_t st = it_post_atomic(e->ep, cas ? IT_COMPARE_AND_SWAP : IT_FETCH_AND_ADD, add_or_swap,
                                  compare, &t, e->sq[k].cookie, IT_COMPLETION_FLAG,
                                  e->peer_base + th->off_atomic, e->peer_ctx);
  if (st != IT_SUCCESS) {
    sq_unpost(e, k, "it_post_atomic", st);
    e->atomics_clean = false;
    return;
  }
  e->atomic_value = cas ? (miss ? old : add_or_swap) : old + add_or_swap;
}

static int
free_sq_slot(const itest_end_t *e)
{
  for (unsigned k = 0; k < e->th->cfg->window; k++)
    if (!e->sq[k].busy)
      return (int) k;
  return -1;
}

static itest_op_t
pick_op(itest_thread_t *th)
{
  itest_op_t en[OP_COUNT];
  unsigned n = 0;
  for (int o = 0; o < OP_COUNT; o++)
    if (th->cfg->op_enabled[o])
      en[n++] = (itest_op_t) o;
  return en[rnd_below(th, n)];
}

/* Whether @e may send now.  On InfiniBand a send that finds no receive
 * waits (RNR retry).  Elsewhere (iWARP) it ends the connection, so as an
 * application's credits would, the sender waits until the peer has posted
 * the receive its next send lands in (the k-th receive takes the k-th
 * send; both ends live in this thread). */
static bool
send_credit(const itest_thread_t *th, const itest_end_t *e)
{
  return th->cfg->ib || e->peer->recv_seq > e->send_seq;
}

/* A random enabled operation other than a send, or OP_COUNT if none. */
static itest_op_t
pick_non_send(itest_thread_t *th)
{
  itest_op_t en[OP_COUNT];
  unsigned n = 0;
  for (int o = 0; o < OP_COUNT; o++)
    if (o != OP_SEND && th->cfg->op_enabled[o])
      en[n++] = (itest_op_t) o;
  return n ? en[rnd_below(th, n)] : OP_COUNT;
}

/* Fill the end's window; returns how many were posted. */
static unsigned
issue_window(itest_thread_t *th, itest_end_t *e, bool sends_only)
{
  unsigned n = 0;
  int k;
  while (e->pair->state == PAIR_RUNNING && (k = free_sq_slot(e)) >= 0) {
    if (th->cfg->transactions > 0 && th->st.issued >= th->quota)
      break;
    itest_op_t op = sends_only ? OP_SEND : pick_op(th);
    if (op == OP_SEND && !send_credit(th, e) && (sends_only || (op = pick_non_send(th)) == OP_COUNT))
      break;
    switch (op) {
    case OP_SEND: issue_send(th, e, (unsigned) k); break;
    case OP_WRITE: issue_write(th, e, (unsigned) k); break;
    case OP_READ: issue_read(th, e, (unsigned) k); break;
    default: issue_atomic(th, e, (unsigned) k); break;
    }
    th->st.issued++;
    n++;
  }
  return n;
}

/* --- completions ----------------------------------------------------- */

static const it_event_type_t event_of[WR_KIND_COUNT] = {
  [WR_SEND] = IT_DTO_SEND_CMPL_EVENT,
  [WR_RECV] = IT_DTO_RC_RECV_CMPL_EVENT,
  [WR_WRITE] = IT_DTO_RDMA_WRITE_CMPL_EVENT,
  [WR_READ] = IT_DTO_RDMA_READ_CMPL_EVENT,
  [WR_READBACK] = IT_DTO_RDMA_READ_CMPL_EVENT,
  [WR_FADD] = IT_DTO_FETCH_ADD_CMPL_EVENT,
  [WR_CSWAP] = IT_DTO_CMP_SWAP_CMPL_EVENT,
};

static void
post_readback(itest_thread_t *th, itest_end_t *e, unsigned k)
{
  itest_wr_t w = e->sq[k];
  uint8_t *sink = slot_ptr(e, th->off_sink, k);
  poison_zone(sink, pat_key(th, PK_WRITE, e->gid, w.seq), 0, w.len, ITEST_GUARD);
  /* The slot stays busy: the read is a new request of the same transfer. */
  e->sq[k].busy = false;
  e->sq_busy--;
  sq_take(e, k, WR_READBACK, w.seq, w.len);
  e->sq[k].off = w.off;
  e->sq[k].readback = w.readback; /* sampled, or only forced (at_sent) */
  it_lmr_triplet_t t = triplet(e, sink, w.len);
  it_status_t st = it_post_rdma_read(e->ep, &t, 1, e->sq[k].cookie, IT_COMPLETION_FLAG,
                                     peer_addr(e, th->off_target, k, w.off), e->peer_ctx);
  if (st != IT_SUCCESS)
    sq_unpost(e, k, "it_post_rdma_read (read-back of an RDMA Write)", st);
}

/* The target memory of RDMA Write @w (slot @k of @e) holds its pattern;
 * otherwise the error is counted and the pair killed. */
static bool
check_target(itest_thread_t *th, itest_end_t *e, unsigned k, const itest_wr_t *w, const char *how)
{
  char what[112];
  snprintf(what, sizeof(what), "RDMA Write (target slot %u offset %u, %s)", k, w->off, how);
  bool ok = check_zone(th, e, w->seq, what, slot_ptr(e->peer, th->off_target, k) + w->off,
                       pat_key(th, PK_WRITE, e->gid, w->seq), 0, w->len, ITEST_GUARD);
  if (!ok)
    pair_kill(e->pair);
  return ok;
}

/* A successful send-queue completion: validate it.  Returns whether the
 * slot stays busy (a read-back was chained). */
static bool
sq_success(itest_thread_t *th, itest_end_t *e, unsigned k, const it_dto_cmpl_event_t *d)
{
  itest_wr_t *w = &e->sq[k];
  itest_stats_t *st = &th->st;
  if (w->kind != WR_FADD && w->kind != WR_CSWAP && d->transferred_length != w->len)
    itest_error(th, e, w->seq, "%s completion reports %u bytes transferred; %u were posted",
                itest_wr_name(w->kind), d->transferred_length, w->len);
  switch (w->kind) {
  case WR_SEND:
    e->send_done++;
    st->ops[OP_SEND]++;
    st->bytes += w->len;
    return false;
  case WR_WRITE: {
    /* Completed at transmission: the target is checked when the Read
     * behind it returns (the peer answers it after placing the Write). */
    bool ok = th->cfg->at_sent || check_target(th, e, k, w, "checked in the target memory");
    st->ops[OP_WRITE]++;
    st->bytes += w->len;
    if (ok && (w->readback || th->cfg->at_sent) && e->pair->state == PAIR_RUNNING) {
      post_readback(th, e, k);
      return e->sq[k].busy;
    }
    return false;
  }
  case WR_READ: {
    char what[96];
    snprintf(what, sizeof(what), "RDMA Read (sink slot %u, remote read region offset %u)", k, w->off);
    if (!check_zone(th, e, w->seq, what, slot_ptr(e, th->off_sink, k),
                    pat_key(th, PK_RDREG, e->peer->gid, 0), w->off, w->len, ITEST_GUARD))
      pair_kill(e->pair);
    st->ops[OP_READ]++;
    st->bytes += w->len;
    return false;
  }
  case WR_READBACK:
    if (th->cfg->at_sent && !check_target(th, e, k, w, "checked in the target memory after a Read"))
      return false;
    if (!check_zone(th, e, w->seq, "RDMA Read back of an RDMA Write", slot_ptr(e, th->off_sink, k),
                    pat_key(th, PK_WRITE, e->gid, w->seq), 0, w->len, ITEST_GUARD))
      pair_kill(e->pair);
    if (w->readback) /* sampled (--readback), not only forced by at_sent */
      st->readback++;
    st->bytes += w->len;
    return false;
  case WR_FADD:
  case WR_CSWAP: {
    const uint8_t *res = slot_ptr(e, th->off_sink, k);
    uint64_t got;
    memcpy(&got, res, 8);
    uint8_t want;
    if (got != w->expect) {
      itest_error(th, e, w->seq, "%s returned 0x%016llx; the counter held 0x%016llx%s",
                  itest_wr_name(w->kind), (unsigned long long) got, (unsigned long long) w->expect,
                  got == ~w->expect ? " (result never written: still the poison)" : "");
      e->atomics_clean = false;
      pair_kill(e->pair);
    } else if (pat_find_bad(res + 8, pat_key(th, PK_ATOM, e->gid, w->seq), 8, ITEST_GUARD, 0xff,
                            &want) >= 0) {
      itest_error(th, e, w->seq, "%s wrote past its 8-byte result", itest_wr_name(w->kind));
      pair_kill(e->pair);
    }
    st->ops[OP_ATOMIC]++;
    if (w->kind == WR_FADD)
      st->fadd++;
    else
      st->cswap++, st->cswap_miss += w->miss;
    st->bytes += 8;
    return false;
  }
  default:
    return false;
  }
}

static bool
should_repost(const itest_end_t *e)
{
  return e->pair->state == PAIR_RUNNING && !e->hold_recv;
}

static void
count_flush(itest_thread_t *th, itest_end_t *e)
{
  th->st.flushed++;
  if (e->pair->state == PAIR_FAULT && th->fault_pair == e->pair) {
    if (e->freed)
      th->fault.victim_flushed++;
    else
      th->fault.survivor_flushed++;
  }
}

static void
handle_dto(itest_thread_t *th, it_evd_handle_t evd, const it_event_t *ev)
{
  const it_dto_cmpl_event_t *d = &ev->dto_cmpl;
  uint64_t c = d->cookie;
  unsigned tid = (unsigned) (c >> 56), idx = (unsigned) ((c >> 40) & 0xffff);
  unsigned kind = (unsigned) ((c >> 36) & 0xf), k = (unsigned) ((c >> 28) & 0xff);
  if (ev->event_number < IT_DTO_SEND_CMPL_EVENT || ev->event_number > IT_DTO_CMP_SWAP_CMPL_EVENT) {
    itest_error(th, NULL, 0, "DTO EVD %p returned event %s (0x%x)", (void *) evd,
                itx_event_name(ev->event_number), (unsigned) ev->event_number);
    return;
  }
  if (tid != th->id || idx >= 2 * th->npairs || kind == WR_NONE || kind >= WR_KIND_COUNT ||
      k >= th->cfg->window) {
    itest_error(th, NULL, 0, "completion %s with cookie 0x%016llx that this thread never posted "
                "(EP %p, EVD %p)", itx_event_name(ev->event_number), (unsigned long long) c,
                (void *) d->ep, (void *) evd);
    return;
  }
  itest_end_t *e = &th->pairs[idx / 2].end[idx % 2];
  bool recv = kind == WR_RECV;
  itest_wr_t *w = recv ? &e->rq[k] : &e->sq[k];
  if (!w->busy || w->cookie != c) {
    itest_error(th, e, w->busy ? w->seq : 0, "%s completion (status %s) for cookie 0x%016llx, which "
                "is not outstanding: a %s completion%s", itest_wr_name((itest_wr_kind_t) kind),
                itx_dto_status_name(d->dto_status), (unsigned long long) c,
                w->busy ? "stale" : "duplicate or unknown",
                w->busy ? " (the slot holds a later request)" : "");
    return;
  }
  if (d->ep != e->ep)
    itest_error(th, e, w->seq, "%s completion names EP %p, posted on EP %p",
                itest_wr_name(w->kind), (void *) d->ep, (void *) e->ep);
  if (evd != (recv ? e->recv_evd : e->req_evd))
    itest_error(th, e, w->seq, "%s completion arrived on EVD %p, not the EP's %s EVD %p",
                itest_wr_name(w->kind), (void *) evd, recv ? "receive" : "request",
                (void *) (recv ? e->recv_evd : e->req_evd));
  uint64_t *done_no = recv ? &e->rq_done_no : &e->sq_done_no;
  if (w->post_no != *done_no)
    itest_error(th, e, w->seq, "%s completion out of order: request #%llu of the %s queue completed "
                "while #%llu was expected first", itest_wr_name(w->kind),
                (unsigned long long) w->post_no, recv ? "receive" : "send",
                (unsigned long long) *done_no);
  *done_no = w->post_no + 1;

  bool keep = false;
  if (d->dto_status == IT_DTO_SUCCESS) {
    if (ev->event_number != event_of[w->kind])
      itest_error(th, e, w->seq, "%s completed as %s", itest_wr_name(w->kind),
                  itx_event_name(ev->event_number));
    if (recv) {
      char what[64];
      snprintf(what, sizeof(what), "receive of send #%llu (receive slot %u)",
               (unsigned long long) w->seq, k);
      if (w->seq != e->recv_done)
        itest_error(th, e, w->seq, "receive #%llu completed while #%llu was due",
                    (unsigned long long) w->seq, (unsigned long long) e->recv_done);
      if (d->transferred_length != w->len) {
        itest_error(th, e, w->seq, "%s: %u bytes arrived, the peer sent %u", what,
                    d->transferred_length, w->len);
        pair_kill(e->pair);
      } else if (!check_zone(th, e, w->seq, what, slot_ptr(e, th->off_recv, k),
                             pat_key(th, PK_SEND, e->peer->gid, w->seq), 0, w->len, ITEST_GUARD)) {
        pair_kill(e->pair);
      }
      e->recv_done = w->seq + 1;
      th->st.recv++;
    } else {
      keep = sq_success(th, e, k, d);
    }
  } else if ((d->dto_status == IT_DTO_ERR_FLUSHED && itest_pair_expects_flush(e->pair)) ||
             itest_fault_error_ok(th, e)) {
    count_flush(th, e);
    if (d->dto_status != IT_DTO_ERR_FLUSHED) {
      th->fault.error_cmpl++;
      itest_log(th->cfg, "fault: thread %u pair %u: %s of the %s end completed with %s after the "
                "free (accepted: not InfiniBand)", th->id, e->pair->index, itest_wr_name(w->kind),
                e->freed ? "freed" : "surviving", itx_dto_status_name(d->dto_status));
    }
    if (w->kind == WR_FADD || w->kind == WR_CSWAP)
      e->atomics_clean = false;
  } else {
    itest_error(th, e, w->seq, "%s completed with %s", itest_wr_name(w->kind),
                itx_dto_status_name(d->dto_status));
    if (w->kind == WR_FADD || w->kind == WR_CSWAP)
      e->atomics_clean = false;
    pair_kill(e->pair);
  }
  if (keep)
    return;
  w->busy = false;
  if (recv) {
    e->rq_busy--;
    if (should_repost(e))
      post_recv_slot(e, k);
  } else {
    e->sq_busy--;
  }
}

static unsigned
drain_evd(itest_thread_t *th, it_evd_handle_t evd)
{
  unsigned n = 0;
  it_event_t ev;
  while (n < 64) {
    it_status_t st = it_evd_dequeue(evd, &ev);
    if (st == IT_ERR_QUEUE_EMPTY)
      break;
    if (st != IT_SUCCESS) {
      itest_call_error(th, NULL, 0, "it_evd_dequeue", st);
      break;
    }
    handle_dto(th, evd, &ev);
    n++;
  }
  return n;
}

bool
itest_poll_dto(itest_thread_t *th)
{
  unsigned n = drain_evd(th, th->shared_dto_evd);
  for (unsigned i = 0; i < th->npairs; i++) {
    itest_end_t *e = &th->pairs[i].end[1];
    n += drain_evd(th, e->req_evd);
    n += drain_evd(th, e->recv_evd);
  }
  return n > 0;
}

/* --- the loop -------------------------------------------------------- */

static bool
drained(const itest_thread_t *th)
{
  for (unsigned i = 0; i < th->npairs; i++) {
    const itest_pair_t *p = &th->pairs[i];
    for (int s = 0; s < 2; s++) {
      const itest_end_t *e = &p->end[s];
      if (e->sq_busy > 0)
        return false;
      if (p->state == PAIR_RUNNING && e->recv_done != e->peer->send_done)
        return false;
    }
  }
  return !itest_fault_pending(th);
}

static void
report_undrained(itest_thread_t *th)
{
  for (unsigned i = 0; i < th->npairs; i++) {
    itest_pair_t *p = &th->pairs[i];
    for (int s = 0; s < 2; s++) {
      itest_end_t *e = &p->end[s];
      for (unsigned k = 0; k < th->cfg->window; k++)
        if (e->sq[k].busy)
          itest_error(th, e, e->sq[k].seq, "%s (cookie 0x%016llx, request #%llu) never completed "
                      "within %.0f s of the end of the run", itest_wr_name(e->sq[k].kind),
                      (unsigned long long) e->sq[k].cookie, (unsigned long long) e->sq[k].post_no,
                      ITEST_DRAIN_TIMEOUT_S);
      if (p->state == PAIR_RUNNING && e->recv_done != e->peer->send_done)
        itest_error(th, e, e->recv_done, "%llu receives validated, but the peer completed %llu sends",
                    (unsigned long long) e->recv_done, (unsigned long long) e->peer->send_done);
    }
  }
  if (itest_fault_pending(th)) {
    itest_end_t *v = &th->fault_pair->end[th->fault.victim_side];
    itest_error(th, v->peer, 0, "fault: after freeing the peer EP, %s; %u request(s) of the survivor "
                "and %u of the freed EP still without completion",
                v->peer->broken ? "the BROKEN event came" : "no IT_CM_MSG_CONN_BROKEN_EVENT came",
                v->peer->sq_busy + v->peer->rq_busy, v->sq_busy + v->rq_busy);
    th->fault_state = FAULT_DONE;
  }
}

void
itest_run(itest_thread_t *th)
{
  const itest_config_t *cfg = th->cfg;
  th->phase = "run";
  th->t_start = itest_now();
  unsigned idle = 0;
  for (uint64_t iter = 0;; iter++) {
    double now = itest_now();
    itest_fault_step(th, now);
    if (!th->stopping &&
        ((cfg->duration > 0 && now - th->t_start >= cfg->duration) ||
         (cfg->transactions > 0 && th->st.issued >= th->quota))) {
      th->stopping = true;
      th->t_stop = now;
      th->phase = "drain";
    }
    unsigned posted = 0;
    bool prep = th->fault_state == FAULT_PREP;
    for (unsigned i = 0; i < th->npairs && !th->stopping; i++) {
      itest_pair_t *p = &th->pairs[i];
      for (int s = 0; s < 2; s++) {
        bool fault_pair = prep && p == th->fault_pair;
        if (fault_pair && &p->end[s] == itest_fault_holder(th))
          continue;
        posted += issue_window(th, &p->end[s], fault_pair);
      }
    }
    bool got = itest_poll_dto(th);
    if ((iter & 15) == 0 || th->stopping)
      itest_poll_cm(th);
    if (th->stopping) {
      if (drained(th))
        break;
      if (now - th->t_stop > ITEST_DRAIN_TIMEOUT_S) {
        report_undrained(th);
        break;
      }
    }
    if (posted == 0 && !got) {
      if (++idle > 4)
        sched_yield();
    } else {
      idle = 0;
    }
  }
}
