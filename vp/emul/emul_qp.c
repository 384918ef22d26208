/*
 * vp/emul queue pairs and the in-process requester: a work request
 * executes against the peer's memory when it is posted, by the
 * responder's rules of emul_resp.c (which the ring's responder follows
 * too); posting, and the QP's life.  Links and long copies: emul_link.c.
 *
 * Rules (IBTA vol 1, 10.6 and 11.6, as a hardware RC QP applies them, and
 * RFC 5040/5041 for an iWARP QP):
 * - a local key, domain, bounds or rights failure completes the WR with a
 *   local protection error and breaks the connection; the rights a local
 *   list needs are the personality's (emul_pers_local_need: an iWARP Read
 *   sink also needs remote write, RFC 5040 4.4);
 * - a remote failure completes the WR with a remote access error on the
 *   requester, and the responder's QP breaks with an affiliated event;
 * - a send finding no receive waits (InfiniBand: infinite RNR retry), and
 *   so does every WR behind it, preserving RC ordering; on iWARP it is a
 *   Terminate (RFC 5041 7.2): remote operation error, both sides BROKEN;
 * - IRD/ORD: a Read or atomic on a QP whose negotiated ORD is 0 is refused
 *   at post (RNICPI_ELIMIT); one reaching a responder whose IRD is 0 fails
 *   remotely (remote operation error, both sides BROKEN).  In-process, a
 *   Read completes when posted, so none is ever in flight beyond that;
 * - once in ERROR, every outstanding and every new WR completes flushed.
 * What differs by personality comes from the device's row of emul_pers[].
 * A QP connected to another process (qp->x) follows the same rules through
 * emul_ring_req.c and emul_ring_resp.c; the branches to it are the only cost on this path.
 *
 * The fast path.  The two QPs of an in-process connection share a link
 * (emul_link_t, made when it is established) whose lock guards their
 * queues and state (emul.h, "Locks").  A Send, RDMA Write or RDMA Read on a
 * linked QP, and a receive posted to one, take that lock alone when what
 * they do touches nothing else: no key they read names a window or a
 * fast-registered region (their entries change under the fabric lock:
 * fast_keys_fixed, emul_key_fixed; such entries elsewhere in the process do
 * not matter), the request names no sink window, and neither QP holds work
 * queued behind a receiver not ready (its flush or progress may release a
 * window).  The rest takes
 * the fabric lock, then the link's, and runs the same code.  So two
 * threads, each with its own connection, never share a lock.  A QP
 * connected to another process gets a link of its own when established
 * (link->ring): a Send, RDMA Write or Read that emul_ring_post_hot takes
 * (one SGE, the ring's latency case) holds that lock alone when its local
 * key names no window or fast-registered region, and so do a receive that no Send of the peer waits for and a
 * busy poll's drain of the ring's common case (emul_ring_drain_link);
 * anything else on it takes the fabric lock, then the link's.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "emul.h"

typedef enum { EXEC_DONE, EXEC_BLOCKED, EXEC_FAILED } exec_t;

/* The fast path's lock: @qp's link locked, or NULL (no link, or it changed
 * while we waited: the caller takes the fabric lock instead). */
static inline emul_link_t *
fast_lock(emul_qp_t *qp)
{
  emul_link_t *l = __atomic_load_n(&qp->link, __ATOMIC_ACQUIRE);
  if (l == NULL)
    return NULL;
  rnicpi_spin_lock(&l->lock);
  if (G_LIKELY(__atomic_load_n(&qp->link, __ATOMIC_RELAXED) == l))
    return l;
  rnicpi_spin_unlock(&l->lock);
  return NULL;
}

/* Whether a copy runs with @qp's link let go (its lock held). */
static inline gboolean
link_copying(const emul_qp_t *qp)
{
  return qp->link != NULL && qp->link->copying;
}

/* Leave the fast path: let @l go; first, when posts queued work behind a
 * long copy that has ended, run it under the fabric lock (the queue may
 * hold a bind or a fast registration, which change what the fast path
 * reads).  A post that queued behind a copy still running leaves that to
 * the copier, which sees the mark when it takes the lock back. */
static inline void
fast_unlock(emul_qp_t *qp, emul_link_t *l, emul_work_t *w)
{
  gboolean again = l->again && !l->copying;
  rnicpi_spin_unlock(&l->lock);
  if (G_UNLIKELY(again)) {
    emul_lock_data_path();
    l = emul_link_take_post(qp);  /* a copy begun meanwhile settles it itself */
    emul_link_settle(l, w);
    emul_link_drop(l);
    emul_fabric_unlock();
  }
}

/* Whether every key @wr's execution on @qp would read names an entry whose
 * fields never change (emul_key_fixed; the link's lock held): its own
 * SGEs', the remote key of a Write or Read, the SGEs' of the receive a
 * Send lands in (the peer's next, if any: a Send finding none only
 * waits; a peer's SRQ may give any of its receives, so a Send to it is
 * left to the fabric lock while such entries exist). */
static inline gboolean
fast_keys_fixed(emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  if (G_LIKELY(emul_mutable_none()))
    return TRUE;
  const emul_pers_t *p = emul_pers_of_qp(qp);
  if (!emul_sges_fixed(p, wr->sg_list, wr->num_sge))
    return FALSE;
  if (wr->opcode != RNICPI_WR_SEND)
    return emul_key_fixed(p, wr->rkey);
  if (qp->peer != NULL && qp->peer->srq != NULL)
    return FALSE;  /* the receive it lands in is whichever the SRQ's head is then */
  const emul_rwqe_t *r = qp->peer != NULL ? emul_wq_peek(&qp->peer->rq) : NULL;
  return r == NULL || emul_sges_fixed(p, r->sge, r->num_sge);
}

/* What a post_send on the fast path needs once it holds the link's lock:
 * no key whose entry changes under the fabric lock (fast_keys_fixed), and
 * neither QP holding work queued behind a receiver not ready (its flush or
 * progress may release a window); or a long copy running, behind which
 * the request only queues. */
static inline gboolean
fast_ok(emul_qp_t *qp, const emul_link_t *l, const rnicpi_send_wr_t *wr)
{
  return !l->ring && ((emul_wq_empty(&qp->sq) && (qp->peer == NULL || emul_wq_empty(&qp->peer->sq)) &&
                       fast_keys_fixed(qp, wr)) || l->copying);
}

/* A request that may take the fast path: one whose every key names a
 * region (not a sink window, not an invalidation, not an atomic). */
static inline gboolean
fast_candidate(const rnicpi_send_wr_t *wr)
{
  return (wr->opcode == RNICPI_WR_SEND || wr->opcode == RNICPI_WR_RDMA_WRITE ||
          wr->opcode == RNICPI_WR_RDMA_READ) && !(wr->flags & RNICPI_WR_SINK_MW);
}

static const rnicpi_wc_opcode_t wc_opcode_of[RNICPI_WR_OPCODE_COUNT] = {
  [RNICPI_WR_SEND] = RNICPI_WC_SEND,
  [RNICPI_WR_SEND_INV] = RNICPI_WC_SEND,
  [RNICPI_WR_RDMA_WRITE] = RNICPI_WC_RDMA_WRITE,
  [RNICPI_WR_RDMA_READ] = RNICPI_WC_RDMA_READ,
  [RNICPI_WR_ATOMIC_CMP_SWP] = RNICPI_WC_CMP_SWP,
  [RNICPI_WR_ATOMIC_FETCH_ADD] = RNICPI_WC_FETCH_ADD,
  [RNICPI_WR_BIND_MW] = RNICPI_WC_BIND_MW,
  [RNICPI_WR_LOCAL_INV] = RNICPI_WC_LOCAL_INV,
  [RNICPI_WR_FAST_REG] = RNICPI_WC_FAST_REG,
  [RNICPI_WR_RDMA_READ_INV] = RNICPI_WC_RDMA_READ,
  [RNICPI_WR_IMM_DATA] = RNICPI_WC_SEND,
  [RNICPI_WR_RDMA_WRITE_IMM] = RNICPI_WC_RDMA_WRITE,
};

void
emul_complete(emul_cq_t *cq, emul_qp_t *qp, uint64_t wr_id, rnicpi_wc_opcode_t op,
         rnicpi_wc_status_t st, uint32_t len, emul_work_t *w)
{
  rnicpi_wc_t wc = {
    .wr_id = wr_id, .qp_ctx = qp->base.al_ctx, .status = st, .opcode = op,
    .byte_len = len, .flags = qp->ud && op == RNICPI_WC_RECV ? RNICPI_WC_UD : 0,
  };
  emul_cq_push(cq, &wc, w);
}

void
emul_complete_send(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st,
              uint32_t len, emul_work_t *w)
{
  if (st != RNICPI_WC_SUCCESS || (wr->flags & RNICPI_WR_SIGNALED)) {
    /* RNIC-PI 1.2: a bind's completion repeats the window's new key;
     * 1.4: a fast registration's the region's, a Local Invalidate names
     * the key it was for, a Read with Invalidate the sink key it killed. */
    rnicpi_wc_t wc = {
      .wr_id = wr->wr_id, .qp_ctx = qp->base.al_ctx, .status = st,
      .opcode = wc_opcode_of[wr->opcode], .byte_len = len,
      .rkey = wr->opcode == RNICPI_WR_BIND_MW || wr->opcode == RNICPI_WR_FAST_REG ? wr->rkey :
              wr->opcode == RNICPI_WR_LOCAL_INV ? wr->invalidate_rkey : 0,
    };
    if (wr->opcode == RNICPI_WR_RDMA_READ_INV && st == RNICPI_WC_SUCCESS) {
      wc.flags = RNICPI_WC_WITH_INV;
      wc.rkey = wr->invalidate_rkey;
    }
    emul_cq_push(qp->scq, &wc, w);
  }
}

gboolean
emul_sges_ok(emul_qp_t *qp, const rnicpi_sge_t *s, uint32_t n, uint32_t need, uint64_t *total)
{
  uint64_t t = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (s[i].length > 0 && emul_sge_region(qp, &s[i], need) == NULL)
      return FALSE;
    t += s[i].length;
  }
  *total = t;
  return TRUE;
}

/* Copy between a gather list and a contiguous buffer, either direction;
 * the last byte lands last (emul_place). */
void
emul_sg_copy(const rnicpi_sge_t *s, uint32_t n, uint8_t *buf, gboolean to_buf)
{
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *p = (uint8_t *) (uintptr_t) s[i].addr;
    if (i + 1 < n)
      memcpy(to_buf ? buf : p, to_buf ? p : buf, s[i].length);
    else
      emul_place(to_buf ? buf : p, to_buf ? p : buf, s[i].length);
    buf += s[i].length;
  }
}

void
emul_scatter_at(const rnicpi_sge_t *s, uint32_t n, uint64_t skip, const uint8_t *buf, uint64_t len)
{
  uint32_t i = 0;
  while (i < n && skip >= s[i].length)
    skip -= s[i++].length;
  for (; i < n && len > 0; i++) {
    uint64_t k = MIN((uint64_t) s[i].length - skip, len);
    uint8_t *d = (uint8_t *) (uintptr_t) s[i].addr + skip;
    if (k < len)
      memcpy(d, buf, k);
    else
      emul_place(d, buf, k);
    buf += k;
    len -= k;
    skip = 0;
  }
}

void
emul_scatter(const rnicpi_sge_t *s, uint32_t n, const uint8_t *buf, uint64_t len)
{
  emul_scatter_at(s, n, 0, buf, len);
}

/* Copy a gather list into a scatter list. */
static void
sg_to_sg(const rnicpi_sge_t *g, uint32_t ng, const rnicpi_sge_t *s, uint32_t ns)
{
  uint32_t gi = 0, si = 0;
  uint64_t go = 0, so = 0;
  while (gi < ng && si < ns) {
    uint64_t n = MIN(g[gi].length - go, s[si].length - so);
    if (n > 0)
      memcpy((uint8_t *) (uintptr_t) (s[si].addr + so),
             (const uint8_t *) (uintptr_t) (g[gi].addr + go), n);
    go += n;
    so += n;
    if (go == g[gi].length) { gi++; go = 0; }
    if (si < ns && so == s[si].length) { si++; so = 0; }
  }
}

/* Remote failure @f: the requester completes with its status, both sides
 * break, each gets its affiliated event (emul_fault_t); across processes
 * the responder's goes in the teardown message (emul_ring_break_fault). */
void
emul_req_fail_remote(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_fault_t f, emul_work_t *w)
{
  emul_complete_send(qp, wr, emul_fault_status(f), 0, w);
  if (qp->x != NULL) {
    emul_ring_break_fault(qp, w, f);  /* its affiliated event after the BREAK */
    return;
  }
  emul_qp_async(qp, emul_fault_requester(f));
  if (qp->peer != NULL)
    emul_qp_async(qp->peer, emul_fault_responder(f));
  emul_qp_break(qp, w, FALSE, NULL, 0);
}

static exec_t
fail_remote(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_fault_t f, emul_work_t *w)
{
  emul_req_fail_remote(qp, wr, f, w);
  return EXEC_FAILED;
}

void
emul_req_fail_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st, emul_work_t *w)
{
  emul_complete_send(qp, wr, st, 0, w);
  if (qp->x != NULL) {
    emul_ring_break_local(qp, w, emul_local_cause(st));  /* its affiliated event after the BREAK */
    return;
  }
  emul_qp_async(qp, emul_local_cause(st));
  emul_qp_break(qp, w, FALSE, NULL, 0);
}

static exec_t
fail_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st, emul_work_t *w)
{
  emul_req_fail_local(qp, wr, st, w);
  return EXEC_FAILED;
}

static exec_t
exec_send(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  emul_qp_t *peer = qp->peer;
  uint64_t len;
  rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
  if (emul_req_local(qp, wr, win, &len) == NULL)
    return fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
  gboolean inv = wr->opcode == RNICPI_WR_SEND_INV, blocked;
  emul_fault_t f;
  emul_rwqe_t *r = emul_resp_recv_take(peer, inv, wr->invalidate_rkey, &blocked, &f);
  if (r == NULL)
    return blocked ? EXEC_BLOCKED : fail_remote(qp, wr, f, w);
  if (!emul_resp_recv_fits(peer, r, len, &f, w))
    return fail_remote(qp, wr, f, w);
  emul_link_t *l = emul_link_copy_begin(qp, len);
  sg_to_sg(wr->sg_list, wr->num_sge, r->sge, r->num_sge);
  emul_link_copy_end(qp, l);
  emul_resp_recv_done(peer, r, len, inv, wr->invalidate_rkey, w);
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) len, w);
  return EXEC_DONE;
}

/* Immediate data (RNIC-PI 1.5), alone or after an RDMA Write: the Write's
 * target is checked first, then the receive is taken (none: a Send's
 * fate, so an InfiniBand Write waits with nothing placed), the bytes are
 * placed, and only then does the receive complete (IBTA 9.4.3; RFC 7306
 * 6.3: the Immediate Data message follows its Write). */
static exec_t
exec_imm(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  emul_qp_t *peer = qp->peer;
  uint64_t len;
  rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
  if (emul_req_local(qp, wr, win, &len) == NULL)
    return fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
  emul_fault_t f;
  uint8_t *remote = (uint8_t *) "";
  if (wr->opcode == RNICPI_WR_RDMA_WRITE_IMM &&
      (remote = emul_resp_target(peer, RNICPI_WR_RDMA_WRITE, wr->remote_addr, wr->rkey, len, &f)) == NULL)
    return fail_remote(qp, wr, f, w);
  gboolean blocked;
  emul_rwqe_t *r = emul_resp_recv_take(peer, FALSE, 0, &blocked, &f);
  if (r == NULL)
    return blocked ? EXEC_BLOCKED : fail_remote(qp, wr, f, w);
  if (!emul_resp_recv_fits(peer, r, 0, &f, w))
    return fail_remote(qp, wr, f, w);
  if (len > 0) {
    emul_link_t *l = emul_link_copy_begin(qp, len);
    emul_sg_copy(wr->sg_list, wr->num_sge, remote, TRUE);
    emul_link_copy_end(qp, l);
  }
  emul_resp_recv_imm(peer, r, emul_pers_of_qp(qp)->imm_mask & wr->imm_data, len, w);
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) len, w);
  return EXEC_DONE;
}

/* RNIC-PI 1.4 (#RNICPI_WR_SINK_MW): translate a read sink of window keys
 * into our addresses.  Each window must be bound, of the QP's domain and,
 * narrow, bound through this QP; the personality's read-sink rights are
 * split: the local ones from the window's region, the remote ones (iWARP:
 * the sink STag is written by the Read Response) from the window. */
static gboolean
sink_windows(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_sge_t *out, uint64_t *total)
{
  const emul_pers_t *p = emul_pers_of_qp(qp);
  uint32_t need = emul_pers_local_need(p, wr->opcode);
  uint32_t lneed = need & (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  uint32_t rneed = need & ~lneed;
  uint64_t t = 0;
  if (wr->num_sge > EMUL_MAX_SINK_SGE)
    return FALSE;
  for (uint32_t i = 0; i < wr->num_sge; i++) {
    const rnicpi_sge_t *s = &wr->sg_list[i];
    out[i] = *s;
    t += s->length;
    if (s->length == 0)
      continue;
    emul_mr_t *e = emul_mr_lookup(p, s->lkey);
    if (e == NULL || e->mw == NULL || e->pd != qp->pd)
      return FALSE;
    const emul_mw_t *mw = e->mw;
    if (mw->parent == NULL || (mw->qp != NULL && mw->qp != qp) ||
        (emul_key_access(e, qp) & rneed) != rneed || (mw->parent->access & lneed) != lneed)
      return FALSE;
    if (!emul_range_holds(e->iova, e->length, s->addr, s->length))
      return FALSE;
    out[i].addr = (uint64_t) (uintptr_t) (e->addr + (s->addr - e->iova));
  }
  *total = t;
  return TRUE;
}

const rnicpi_sge_t *
emul_req_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_sge_t *win, uint64_t *len)
{
  if (rnicpi_wr_is_atomic(wr->opcode) && (wr->num_sge != 1 || wr->sg_list[0].length != 8))
    return NULL;
  if (wr->flags & RNICPI_WR_SINK_MW)
    return sink_windows(qp, wr, win, len) ? win : NULL;
  if (!emul_sges_ok(qp, wr->sg_list, wr->num_sge, emul_pers_local_need(emul_pers_of_qp(qp), wr->opcode),
                    len))
    return NULL;
  /* A request with no segments may carry sg_list NULL (immediate data
   * alone always may): an empty list, not a failure. */
  return wr->sg_list != NULL ? wr->sg_list : win;
}

gboolean
emul_read_inv_done(emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  return wr->opcode != RNICPI_WR_RDMA_READ_INV || emul_mw_invalidate(qp, wr->invalidate_rkey);
}

/* RDMA Write and Read differ only in the rights each side needs (the
 * local ones the personality's: emul_req_local; the remote ones the
 * responder's: emul_resp_target) and the direction of the copy (IBTA
 * 9.4.3-9.4.4; RFC 5040 4.3, 4.4). */
static exec_t
exec_rdma(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  uint64_t len;
  rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
  const rnicpi_sge_t *sg = emul_req_local(qp, wr, win, &len);
  if (sg == NULL)
    return fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
  emul_fault_t f;
  uint8_t *remote = emul_resp_target(qp->peer, wr->opcode, wr->remote_addr, wr->rkey, len, &f);
  if (remote == NULL)
    return fail_remote(qp, wr, f, w);
  emul_link_t *l = emul_link_copy_begin(qp, len);
  if (len > 0)
    emul_sg_copy(sg, wr->num_sge, remote, wr->opcode == RNICPI_WR_RDMA_WRITE);
  emul_link_copy_end(qp, l);
  if (!emul_read_inv_done(qp, wr))
    return fail_local(qp, wr, RNICPI_WC_MEM_MGT_ERR, w);
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) len, w);
  return EXEC_DONE;
}

static exec_t
exec_atomic(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  uint64_t len;
  rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
  if (emul_req_local(qp, wr, win, &len) == NULL)
    return fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
  emul_fault_t f;
  uint8_t *t = emul_resp_target(qp->peer, wr->opcode, wr->remote_addr, wr->rkey, 8, &f);
  if (t == NULL)
    return fail_remote(qp, wr, f, w);
  /* Atomic against other emul requesters: the fabric lock serialises them
   * (an atomic never takes the fast path). */
  uint64_t old = emul_resp_atomic(t, wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD, wr->compare_add, wr->swap);
  memcpy((void *) (uintptr_t) wr->sg_list[0].addr, &old, 8);
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, 8, w);
  return EXEC_DONE;
}

/* A request executed here alone (bind, invalidate, fast registration)
 * ended with @st: it completes, or fails and breaks the QP. */
static exec_t
local_done(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st, emul_work_t *w)
{
  if (st != RNICPI_WC_SUCCESS)
    return fail_local(qp, wr, st, w);
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, 0, w);
  return EXEC_DONE;
}

/* Bind a window; a failed bind breaks the QP (IBTA 10.6.7.2.4). */
static exec_t
exec_bind(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  return local_done(qp, wr, emul_mw_bind(qp, wr), w);
}

static exec_t
exec_local_inv(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  rnicpi_wc_status_t st = RNICPI_WC_SUCCESS;
  if (!emul_mw_invalidate(qp, wr->invalidate_rkey)) {
    /* A region's key (RNIC-PI 1.4) fails as memory management. */
    emul_mr_t *e = emul_mr_lookup(emul_pers_of_qp(qp), wr->invalidate_rkey);
    st = e != NULL && e->mw == NULL ? RNICPI_WC_MEM_MGT_ERR : RNICPI_WC_MW_BIND_ERR;
  }
  return local_done(qp, wr, st, w);
}

/* Fast registration (RNIC-PI 1.4); a failure breaks the QP. */
static exec_t
exec_fast_reg(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  return local_done(qp, wr, emul_fr_exec(qp, wr), w);
}

typedef exec_t (*exec_fn)(emul_qp_t *, const rnicpi_send_wr_t *, emul_work_t *);

static const exec_fn exec_of[RNICPI_WR_OPCODE_COUNT] = {
  [RNICPI_WR_SEND] = exec_send,
  [RNICPI_WR_SEND_INV] = exec_send,
  [RNICPI_WR_RDMA_WRITE] = exec_rdma,
  [RNICPI_WR_RDMA_READ] = exec_rdma,
  [RNICPI_WR_ATOMIC_CMP_SWP] = exec_atomic,
  [RNICPI_WR_ATOMIC_FETCH_ADD] = exec_atomic,
  [RNICPI_WR_BIND_MW] = exec_bind,
  [RNICPI_WR_LOCAL_INV] = exec_local_inv,
  [RNICPI_WR_FAST_REG] = exec_fast_reg,
  [RNICPI_WR_RDMA_READ_INV] = exec_rdma,
  [RNICPI_WR_IMM_DATA] = exec_imm,
  [RNICPI_WR_RDMA_WRITE_IMM] = exec_imm,
};

/* A local request (bind, Local Invalidate, fast registration) reaching
 * the head of a cross-process QP's send queue executes here, as
 * in-process (emul_ring_req.c); FALSE: it failed, completed with its error,
 * and the connection is broken. */
gboolean
emul_qp_exec_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  return exec_of[wr->opcode](qp, wr, w) == EXEC_DONE;
}

emul_swqe_t *
emul_swqe_keep(emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  emul_swqe_t *s = emul_wq_get(&qp->sq);
  s->issued = FALSE;
  s->wr = *wr;
  /* A WR with no segments (a bind, a Local Invalidate) may carry sg_list
   * NULL: memcpy from NULL is undefined even for 0 bytes (C11 7.24.1p2). */
  if (wr->num_sge > 0)
    memcpy(s->sge, wr->sg_list, wr->num_sge * sizeof(rnicpi_sge_t));
  s->wr.sg_list = s->sge;
  if (wr->opcode == RNICPI_WR_BIND_MW)
    to_emul_mw(wr->bind.mw)->queued++;
  if (wr->opcode == RNICPI_WR_FAST_REG)
    to_emul_mr(wr->fast_reg.mr)->queued++;
  emul_wq_push(&qp->sq, s);
  return s;
}

/* A queued WR leaves the send queue: a window it names is free again. */
void
emul_swqe_done(emul_qp_t *qp, emul_swqe_t *s)
{
  if (s->wr.opcode == RNICPI_WR_BIND_MW)
    to_emul_mw(s->wr.bind.mw)->queued--;
  if (s->wr.opcode == RNICPI_WR_FAST_REG)
    to_emul_mr(s->wr.fast_reg.mr)->queued--;
  emul_wq_put(&qp->sq, s);
}

/* Run the blocked head of the send queue as far as the peer allows.  The
 * head leaves the queue before it runs: a failure completes it and flushes
 * the rest, so it must not be in the queue to be flushed a second time. */
void
emul_qp_progress(emul_qp_t *qp, emul_work_t *w)
{
  while (qp->state == RNICPI_QPS_RTS && !emul_wq_empty(&qp->sq)) {
    emul_swqe_t *s = emul_wq_pop(&qp->sq);
    exec_t r = exec_of[s->wr.opcode](qp, &s->wr, w);
    if (r == EXEC_BLOCKED) {
      emul_wq_push_head(&qp->sq, s);
      return;
    }
    emul_swqe_done(qp, s);
    if (r == EXEC_FAILED)
      return;
  }
}

static void
flush_all(emul_qp_t *qp, emul_work_t *w)
{
  emul_swqe_t *s;
  emul_rwqe_t *r;
  if (qp->xcopying) {
    /* The oldest request's copy still runs (emul_ring_req.c, "Long
     * copies"): it completes first, flushed, once the copy ended (its
     * bytes may land until then), and its copier flushes the rest of the
     * send queue behind it (emul_qp_copy_flushed). */
    qp->xcopy_flushed = TRUE;
  } else {
    while ((s = emul_wq_pop(&qp->sq)) != NULL) {
      emul_complete_send(qp, &s->wr, RNICPI_WC_WR_FLUSH_ERR, 0, w); /* keys as documented */
      emul_swqe_done(qp, s);
    }
  }
  while ((r = emul_wq_pop(&qp->rq)) != NULL) {
    emul_complete(qp->rcq, qp, r->wr_id, RNICPI_WC_RECV, RNICPI_WC_WR_FLUSH_ERR, 0, w);
    emul_wq_put(&qp->rq, r);
  }
}

void
emul_qp_copy_flushed(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  emul_complete_send(qp, wr, RNICPI_WC_WR_FLUSH_ERR, 0, w);
  flush_all(qp, w);
}

void
emul_qp_set_error(emul_qp_t *qp, emul_work_t *w)
{
  qp->state = RNICPI_QPS_ERROR;
  flush_all(qp, w);
}

void
emul_qp_end(emul_qp_t *qp, rnicpi_cm_event_type_t t, const void *pdata, uint32_t len, emul_work_t *w)
{
  if (qp->state == RNICPI_QPS_RTS)
    emul_qp_cm_event(qp, t, pdata, len);
  emul_qp_set_error(qp, w);
}

/* Tear a connection down: both sides to ERROR and flushed, each told. */
void
emul_qp_break(emul_qp_t *qp, emul_work_t *w, gboolean orderly,
              const void *pdata, uint32_t pdata_len)
{
  emul_qp_t *peer = qp->peer;
  rnicpi_cm_event_type_t t = orderly ? RNICPI_CM_DISCONNECTED : RNICPI_CM_BROKEN;
  if (qp->x != NULL) {
    emul_ring_break(qp, w, orderly, pdata, pdata_len);
    return;
  }
  qp->peer = NULL;
  emul_qp_end(qp, t, NULL, 0, w);
  if (peer != NULL) {
    peer->peer = NULL;
    emul_qp_end(peer, t, pdata, pdata_len, w);
  }
}

/* The send queue holds max_send_wr requests: a request being copied with
 * the lock let go ("Long copies", in process or across) is out of the
 * queue, still counted. */
static inline gboolean
sq_full(const emul_qp_t *qp)
{
  return qp->sq.q.len + (qp->xcopying || qp->lcopying ? 1u : 0u) >= qp->attr.max_send_wr;
}

/* The part of a send-queue post made under the fabric lock. */
static rnicpi_status_t
post_send_locked(emul_qp_t *qp, rnicpi_send_wr_t *wr, emul_work_t *w)
{
  rnicpi_status_t st = RNICPI_OK;
  if (qp->state == RNICPI_QPS_IDLE) {
    st = RNICPI_ESTATE;
  } else if (qp->state == RNICPI_QPS_ERROR || qp->closing) {
    if (!qp->xcopying)
      emul_complete_send(qp, wr, RNICPI_WC_WR_FLUSH_ERR, 0, w);
    else if (sq_full(qp))
      st = RNICPI_EFULL;
    else
      emul_swqe_keep(qp, wr);  /* flushed in order, behind the request being copied */
  } else if (emul_is_rd_atomic(wr->opcode) && qp->ord == 0) {
    st = RNICPI_ELIMIT;  /* no Read may ever be outstanding: ORD 0 */
  } else if (rnicpi_wr_is_atomic(wr->opcode) && !qp->atomics) {
    st = RNICPI_ENOTSUP;  /* the peer does not execute atomics (RFC 7306 off there) */
  } else if (sq_full(qp)) {
    st = RNICPI_EFULL;
  } else if (emul_mw_post_relevant(wr) && (st = emul_mw_post_check(qp, wr)) != RNICPI_OK) {
    /* refused: memory windows absent, or a cross-process QP */
  } else if (qp->x != NULL) {
    st = emul_ring_post_send(qp, wr, w);
  } else if (link_copying(qp)) {
    emul_swqe_keep(qp, wr);  /* behind the request being copied: the copier runs it */
    qp->link->again = TRUE;
  } else if (!emul_wq_empty(&qp->sq) ||
             exec_of[wr->opcode](qp, wr, w) == EXEC_BLOCKED) {
    emul_swqe_keep(qp, wr);  /* ordered behind a blocked send */
  }
  return st;
}

/* A one-SGE send, RDMA Write or Read on a cross-process QP, within the
 * QP's limits: a candidate for emul_ring_post_hot.  qp->x is read without the
 * lock, as a hint only. */
static inline gboolean
x_hot_candidate(emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  return __atomic_load_n(&qp->x, __ATOMIC_RELAXED) != NULL && wr->num_sge == 1 &&
         !(wr->flags & RNICPI_WR_SINK_MW) &&
         ((wr->opcode == RNICPI_WR_RDMA_WRITE && qp->attr.max_rdma_write_sge >= 1) ||
          (wr->opcode == RNICPI_WR_RDMA_READ && qp->attr.max_rdma_read_sge >= 1) ||
          (wr->opcode == RNICPI_WR_SEND && qp->attr.max_send_sge >= 1));
}

rnicpi_status_t
emul_post_send(rnicpi_qp_t *q, const rnicpi_send_wr_t *wr_in)
{
  emul_qp_t *qp = to_emul_qp(q);
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  rnicpi_status_t st = RNICPI_OK;

  /* The latency case first: everything this request needs was checked by
   * an earlier one (emul_ring_post_hot), under the QP's link alone when its
   * local key names no window or fast-registered region (whose fields
   * change under the fabric lock: emul_ring_hot_local); otherwise the full
   * path, under the fabric lock and the link's. */
  if (x_hot_candidate(qp, wr_in)) {
    emul_link_t *l = fast_lock(qp);
    if (l != NULL) {
      if (G_LIKELY(emul_ring_post_hot(qp, wr_in, TRUE, &w))) {
        rnicpi_spin_unlock(&l->lock);
        emul_ring_bells_flush();
        emul_work_deliver(&w);
        return RNICPI_OK;
      }
      rnicpi_spin_unlock(&l->lock);
    }
    emul_lock_data_path();
    l = emul_link_take(qp);
    if (!emul_ring_post_hot(qp, wr_in, FALSE, &w))
      st = post_send_locked(qp, (rnicpi_send_wr_t *) (uintptr_t) wr_in, &w);
    emul_link_drop(l);
    emul_fabric_unlock();
    emul_work_deliver(&w);
    return st;
  }

  /* A bind or a fast registration is given its new key in rkey
   * (emul_mw_post_check): those work on a copy, the rest is only read. */
  gboolean rekey = wr_in->opcode == RNICPI_WR_BIND_MW || wr_in->opcode == RNICPI_WR_FAST_REG;
  rnicpi_send_wr_t wr_copy;
  if (rekey) {
    wr_copy = *wr_in;
    emul_random_ready();  /* its key's bits, before the lock */
  }
  rnicpi_send_wr_t *wr = rekey ? &wr_copy : (rnicpi_send_wr_t *) (uintptr_t) wr_in;

  if ((unsigned) wr->opcode >= RNICPI_WR_OPCODE_COUNT)
    return RNICPI_EINVAL;
  if (qp->ud) {
    /* A datagram executes when posted, like every in-process WR: under
     * the QP's link alone when its SGEs name no window or fast-registered
     * region (as fast_ok; the receive it lands in: emul_ud_deliver). */
    if (wr->num_sge > qp->attr.max_send_sge)
      return RNICPI_ELIMIT;
    emul_ud_out_t out;
    emul_link_t *l = fast_lock(qp);
    if (l != NULL && G_LIKELY(emul_sges_fixed(emul_pers_of_qp(qp), wr->sg_list, wr->num_sge))) {
      st = emul_ud_post_send_link(qp, l, wr, &w, &out);
    } else {
      if (l != NULL)
        rnicpi_spin_unlock(&l->lock);
      emul_lock_data_path();
      st = emul_ud_post_send_locked(qp, wr, &w, &out);
      emul_fabric_unlock();
    }
    emul_work_deliver(&w);
    if (out.away)
      emul_ring_ud_send(&out);
    return st;
  }
  /* RFC 5040 has no atomics: as vp/iwarp, unless ITAPI_EMUL_RFC7306. */
  if (rnicpi_wr_is_atomic(wr->opcode) && !emul_qp_atomics(qp))
    return RNICPI_ENOTSUP;
  /* Immediate data alone carries no gather list (RNIC-PI 1.5). */
  uint32_t max_sge = wr->opcode == RNICPI_WR_RDMA_READ || wr->opcode == RNICPI_WR_RDMA_READ_INV ?
                     MIN(qp->attr.max_rdma_read_sge, EMUL_MAX_SINK_SGE) :
                     wr->opcode == RNICPI_WR_RDMA_WRITE || wr->opcode == RNICPI_WR_RDMA_WRITE_IMM ?
                     qp->attr.max_rdma_write_sge :
                     wr->opcode == RNICPI_WR_IMM_DATA ? 0 : qp->attr.max_send_sge;
  if (wr->num_sge > max_sge)
    return RNICPI_ELIMIT;

  emul_link_t *l;
  if (fast_candidate(wr) && (l = fast_lock(qp)) != NULL) {
    if (G_LIKELY(fast_ok(qp, l, wr))) {
      st = post_send_locked(qp, wr, &w);
      fast_unlock(qp, l, &w);
      emul_work_deliver(&w);
      return st;
    }
    rnicpi_spin_unlock(&l->lock);
  }
  emul_lock_data_path();
  l = emul_link_take_post(qp);
  st = post_send_locked(qp, wr, &w);
  emul_link_settle(l, &w);
  emul_link_drop(l);
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return st;
}

void
emul_rwqe_keep(emul_wq_t *q, const rnicpi_recv_wr_t *wr)
{
  emul_rwqe_t *r = emul_wq_get(q);
  r->wr_id = wr->wr_id;
  r->num_sge = wr->num_sge;
  if (wr->num_sge > 0) /* sg_list may be NULL (C11 7.24.1p2, as in emul_swqe_keep) */
    memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(rnicpi_sge_t));
  emul_wq_push(q, r);
}

/* The part of a receive post made under the QP's lock: the link's, or the
 * fabric lock (and the link's, when it has one). */
static rnicpi_status_t
post_recv_locked(emul_qp_t *qp, const rnicpi_recv_wr_t *wr, emul_work_t *w)
{
  if (qp->state == RNICPI_QPS_ERROR) {
    emul_complete(qp->rcq, qp, wr->wr_id, RNICPI_WC_RECV, RNICPI_WC_WR_FLUSH_ERR, 0, w);
  } else if (qp->rq.q.len >= qp->attr.max_recv_wr) {
    return RNICPI_EFULL;
  } else {
    emul_rwqe_keep(&qp->rq, wr);
    if (link_copying(qp))
      qp->link->again = TRUE;  /* the copier runs a send this receive lets go */
    else if (qp->peer != NULL)
      emul_qp_progress(qp->peer, w);  /* a send waiting for this receive */
    else if (qp->x != NULL)
      emul_ring_recv_posted(qp, w);
  }
  return RNICPI_OK;
}

rnicpi_status_t
emul_post_recv(rnicpi_qp_t *q, const rnicpi_recv_wr_t *wr)
{
  emul_qp_t *qp = to_emul_qp(q);
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  rnicpi_status_t st = RNICPI_OK;

  if (wr->num_sge > qp->attr.max_recv_sge)
    return RNICPI_ELIMIT;
  if (qp->srq != NULL)
    return RNICPI_EINVAL; /* its receives are the SRQ's */
  /* The fast path: a linked QP whose peer has nothing queued that the
   * receive would let run (a queued request may be a bind: fabric lock),
   * or one where a long copy runs (the receive only queues); a QP
   * connected to another process whose peer sent nothing that waits for
   * a receive (qp->xin_rnr) and that owes the ring nothing (x->out). */
  emul_link_t *l = fast_lock(qp);
  if (l != NULL) {
    if (G_LIKELY(l->ring ? emul_ring_recv_alone(qp)
                         : qp->peer == NULL || emul_wq_empty(&qp->peer->sq) || l->copying)) {
      st = post_recv_locked(qp, wr, &w);
      fast_unlock(qp, l, &w);
      emul_work_deliver(&w);
      return st;
    }
    rnicpi_spin_unlock(&l->lock);
  }
  emul_lock_data_path();
  l = emul_link_take_post(qp);
  st = post_recv_locked(qp, wr, &w);
  emul_link_settle(l, &w);
  emul_link_drop(l);
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return st;
}

rnicpi_status_t
emul_qp_create(rnicpi_pd_t *p, const rnicpi_qp_attr_t *attr, uint64_t ctx, rnicpi_qp_t **out)
{
  emul_dev_t *dev = to_emul_dev(p->dev);
  if (attr->send_cq == NULL || attr->recv_cq == NULL)
    return RNICPI_EINVAL;
  if (attr->type != RNICPI_QPT_RC && attr->type != RNICPI_QPT_UD)
    return RNICPI_EINVAL;
  if (attr->type == RNICPI_QPT_UD && !(dev->caps.features & RNICPI_CAP_UD))
    return RNICPI_ENOTSUP;
  if (attr->max_send_wr > dev->caps.max_qp_wr || attr->max_recv_wr > dev->caps.max_qp_wr ||
      attr->max_send_sge > dev->caps.max_send_sge || attr->max_recv_sge > dev->caps.max_recv_sge ||
      attr->max_rdma_read_sge > dev->caps.max_rdma_read_sge ||
      attr->max_rdma_write_sge > dev->caps.max_rdma_write_sge ||
      attr->ird > dev->caps.max_ird || attr->ord > dev->caps.max_ord)
    return RNICPI_ELIMIT;
  emul_qp_t *qp = g_new0(emul_qp_t, 1);
  qp->base.pd = p;
  qp->base.al_ctx = ctx;
  qp->pd = to_emul_pd(p);
  qp->scq = to_emul_cq(attr->send_cq);
  qp->rcq = to_emul_cq(attr->recv_cq);
  qp->attr = *attr;
  qp->state = RNICPI_QPS_IDLE;
  /* A UD QP needs no connection: it is ready at once (RNIC-PI 1.3). */
  qp->ud = attr->type == RNICPI_QPT_UD;
  qp->qkey = attr->qkey;
  if (qp->ud)
    qp->state = RNICPI_QPS_RTS;
  /* Every SGE count a send-queue post may carry (emul_post_send's check). */
  emul_wq_init(&qp->sq, sizeof(emul_swqe_t),
               MAX(MAX(attr->max_send_sge, attr->max_rdma_write_sge),
                   MIN(attr->max_rdma_read_sge, EMUL_MAX_SINK_SGE)));
  emul_wq_init(&qp->rq, sizeof(emul_rwqe_t), attr->max_recv_sge);
  g_queue_init(&qp->xin);
  g_queue_init(&qp->xans);
  /* A UD QP's number is unique on the host: its name for other processes
   * is bound first, with no lock held. */
  uint32_t qpn = 0;
  struct emul_xud *xud = NULL;
  if (qp->ud && emul_ring_init())
    xud = emul_ring_ud_bind(&qpn);
  else
    qpn = emul_qp_number();
  emul_fabric_lock();
  qp->base.qp_num = qpn;
  if (qp->ud) {
    emul_ring_ud_open(qp, xud);
    emul_link_join_ud(qp);
    emul_ud_qp_add_locked(qp);
  }
  if (attr->srq != NULL) {
    qp->srq = (emul_srq_t *) attr->srq;
    qp->srq->qps = g_list_prepend(qp->srq->qps, qp);
  }
  emul_fabric_unlock();
  if (qp->ud)
    emul_ring_ud_start(qp);
  g_atomic_int_inc(&qp->scq->nqp);
  g_atomic_int_inc(&qp->rcq->nqp);
  g_atomic_int_inc(&qp->pd->nobj);
  *out = &qp->base;
  return RNICPI_OK;
}

rnicpi_status_t
emul_qp_modify(rnicpi_qp_t *q, const rnicpi_qp_attr_t *attr)
{
  emul_qp_t *qp = to_emul_qp(q);
  emul_dev_t *dev = emul_qp_dev(qp);
  if (attr->ird > dev->caps.max_ird || attr->ord > dev->caps.max_ord)
    return RNICPI_ELIMIT;
  emul_fabric_lock();
  emul_link_t *l = emul_link_take(qp);
  qp->attr.access = attr->access;
  qp->attr.ird = attr->ird;
  qp->attr.ord = attr->ord;
  if (qp->x != NULL)
    emul_ring_access_changed(qp);
  emul_link_drop(l);
  emul_fabric_unlock();
  return RNICPI_OK;
}

rnicpi_status_t
emul_qp_to_error(rnicpi_qp_t *q)
{
  emul_qp_t *qp = to_emul_qp(q);
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  emul_fabric_lock();
  emul_qp_wait_copy(qp);
  emul_link_t *l = emul_link_take(qp);
  if (qp->ud) {
    emul_qp_set_error(qp, &w); /* no peer, no connection to tell */
  } else {
    emul_cm_qp_gone(qp, &w);
    emul_qp_break(qp, &w, FALSE, NULL, 0);
  }
  emul_link_drop(l);
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return RNICPI_OK;
}

rnicpi_status_t
emul_qp_reset(rnicpi_qp_t *q)
{
  emul_qp_t *qp = to_emul_qp(q);
  rnicpi_status_t st = RNICPI_OK;
  emul_fabric_lock();
  emul_qp_wait_copy(qp);
  emul_link_t *l = emul_link_take(qp);
  if (qp->ud) {
    qp->state = RNICPI_QPS_RTS; /* back to operational: nothing to connect */
  } else if (qp->state == RNICPI_QPS_RTS || qp->conn != NULL || qp->dialing) {
    st = RNICPI_ESTATE;
  } else {
    qp->state = RNICPI_QPS_IDLE;
    qp->closing = FALSE;
    qp->ird = qp->ord = 0;
    emul_link_leave(qp);  /* a new connection gets a new one */
  }
  emul_link_drop(l);
  emul_fabric_unlock();
  return st;
}

rnicpi_qp_state_t
emul_qp_state(rnicpi_qp_t *q)
{
  emul_fabric_lock();
  emul_link_t *l = emul_link_take(to_emul_qp(q));
  rnicpi_qp_state_t s = to_emul_qp(q)->state;
  emul_link_drop(l);
  emul_fabric_unlock();
  return s;
}

rnicpi_status_t
emul_qp_destroy(rnicpi_qp_t *q)
{
  emul_qp_t *qp = to_emul_qp(q);
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  emul_fabric_lock();
  /* A connect of another thread dialling with the lock let go comes back
   * to this QP (emul_connect): it goes first. */
  for (unsigned n = 1; qp->dialing; n++) {
    emul_fabric_let_go(n);
  }
  if (qp->ud)
    emul_ud_qp_gone_locked(qp);  /* before its link: a delivery takes the table's lock first */
  emul_qp_wait_copy(qp);
  emul_link_t *l = emul_link_take(qp);
  emul_cm_qp_gone(qp, &w);
  if (qp->peer != NULL || qp->x != NULL)
    emul_qp_break(qp, &w, FALSE, NULL, 0);
  else
    emul_qp_set_error(qp, &w);
  if (qp->srq != NULL)
    qp->srq->qps = g_list_remove(qp->srq->qps, qp);
  struct emul_xud *xud = qp->ud ? emul_ring_ud_close(qp) : NULL;
  emul_mw_qp_gone(qp);
  emul_wq_clear(&qp->sq);
  emul_wq_clear(&qp->rq);
  emul_link_leave(qp);
  emul_link_drop(l);
  emul_links_release(qp);
  emul_fabric_unlock();
  emul_ring_ud_free(xud);  /* its sockets, with the lock let go */
  emul_work_deliver(&w);
  g_atomic_int_dec_and_test(&qp->scq->nqp);
  g_atomic_int_dec_and_test(&qp->rcq->nqp);
  g_atomic_int_dec_and_test(&qp->pd->nobj);
  g_free(qp);
  return RNICPI_OK;
}

/* The queue table: this file's QP operations and the CQ ones of emul_cq.c. */
const rnicpi_queue_ops_t emul_queue_ops = {
  .size = sizeof(rnicpi_queue_ops_t),
  .cq_create = emul_cq_create,
  .cq_destroy = emul_cq_destroy,
  .qp_create = emul_qp_create,
  .qp_modify = emul_qp_modify,
  .qp_to_error = emul_qp_to_error,
  .qp_reset = emul_qp_reset,
  .qp_state = emul_qp_state,
  .qp_destroy = emul_qp_destroy,
};
