/*
 * vp/emul's in-process requester: a work request executes against the
 * peer's memory when it is posted (emul_qp.c), or when what it waited for
 * came: its local rule here, then the peer's responder (emul_resp_rx,
 * which the ring's requests reach too) called at once in this thread.
 * Its completions, its failures and the flush of a QP that goes to ERROR
 * are the completer's (emul_comp.c).
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
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "emul.h"

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

static emul_exec_t
fail_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st, emul_work_t *w)
{
  emul_req_fail_local(qp, wr, st, w);
  return EMUL_EXEC_FAILED;
}

/* A long copy of @len bytes by @qp (emul_link.c, "Long copies") holds the
 * regions it touches by reference, taken here under the lock that its
 * checks were made under: the lists @a and @b, and the entry of @rkey at
 * the responder when @remote.  The locks are let go only when every one
 * is held; an entry that left the table since the checks keeps the copy
 * under the lock, which its removal waits for.  Inline: a short copy
 * (every latency case) pays only the length test. */
static inline __attribute__((always_inline)) emul_link_t *
copy_begin(emul_qp_t *qp, uint64_t len, emul_hold_t *h, const rnicpi_sge_t *a, uint32_t na,
           const rnicpi_sge_t *b, uint32_t nb, gboolean remote, uint64_t rkey)
{
  h->n = 0;
  if (len < EMUL_COPY_UNLOCKED || qp->link == NULL)
    return NULL;
  const emul_pers_t *p = emul_pers_of_qp(qp);
  if (!emul_hold_sges(h, p, a, na) || !emul_hold_sges(h, p, b, nb) ||
      (remote && !emul_hold_key(h, p, rkey))) {
    emul_hold_drop(h);
    return NULL;
  }
  return emul_link_copy_begin(qp, len);
}

/* The copy is over: its references go before any lock is taken back
 * (@l NULL: nothing was let go, and nothing is held). */
static inline void
copy_end(emul_qp_t *qp, emul_link_t *l, emul_hold_t *h)
{
  if (l == NULL)
    return;
  emul_hold_drop(h);
  emul_link_copy_end(qp, l);
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

/* The in-process transport of a request (emul_resp_ops_t): the peer's
 * responder runs in the requester's thread, the bytes move by memcpy
 * between the requester's checked list and the responder's memory, and
 * the answer is the requester's completion.  Inline into the responder
 * (emul_resp_rx) that exec_remote runs: an in-process post makes no call
 * for the layering. */
static inline __attribute__((always_inline)) gboolean
local_pull(emul_qp_t *resp, emul_pkt_t *pkt, emul_rwqe_t *r, const rnicpi_sge_t *dst, uint32_t n,
           emul_work_t *w)
{
  (void) resp, (void) r, (void) w;
  gboolean send = emul_pkt_is_send(pkt->op);
  emul_hold_t h;
  emul_link_t *l = copy_begin(pkt->req, pkt->len, &h, pkt->sg, pkt->wr->num_sge, send ? dst : NULL,
                              send ? n : 0, !send, pkt->rkey);
  if (send)
    sg_to_sg(pkt->sg, pkt->wr->num_sge, dst, n);
  else
    emul_sg_copy(pkt->sg, pkt->wr->num_sge, (uint8_t *) (uintptr_t) dst->addr, TRUE);
  copy_end(pkt->req, l, &h);
  return TRUE;
}

/* A Read's bytes come back into the requester's list (IBTA 9.4.4; RFC 5040
 * 4.4), an atomic's old value into its 8 bytes; then the request completes. */
static inline __attribute__((always_inline)) emul_exec_t
local_answer(emul_qp_t *resp, emul_pkt_t *pkt, uint8_t *t, emul_work_t *w)
{
  (void) resp;
  emul_qp_t *qp = pkt->req;
  const rnicpi_send_wr_t *wr = pkt->wr;
  if (pkt->op == RNICPI_WR_RDMA_READ) {
    emul_hold_t h;
    emul_link_t *l = copy_begin(qp, pkt->len, &h, pkt->sg, wr->num_sge, NULL, 0, TRUE, wr->rkey);
    if (pkt->len > 0)
      emul_sg_copy(pkt->sg, wr->num_sge, t, FALSE);
    copy_end(qp, l, &h);
    if (!emul_read_inv_done(qp, wr))
      return fail_local(qp, wr, RNICPI_WC_MEM_MGT_ERR, w);
  } else if (rnicpi_wr_is_atomic(pkt->op)) {
    memcpy((void *) (uintptr_t) wr->sg_list[0].addr, &pkt->old, 8);
    pkt->len = 8;
  }
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) pkt->len, w);
  return EMUL_EXEC_DONE;
}

static void
local_refuse(emul_qp_t *resp, const emul_pkt_t *pkt, emul_fault_t f, emul_work_t *w)
{
  (void) resp;
  emul_req_fail_remote(pkt->req, pkt->wr, f, w);
}

static const emul_resp_ops_t local_ops = { .pull = local_pull, .answer = local_answer, .refuse = local_refuse };

/* A request to the peer: the requester's local rule (emul_req_local), then
 * the peer's responder (emul_resp_rx) with the request as its packet. */
static emul_exec_t
exec_remote(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
  uint64_t len;
  const rnicpi_sge_t *sg = emul_req_local(qp, wr, win, &len);
  if (sg == NULL)
    return fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
  /* Built whole here and never addressed by a call that is not inlined,
   * the packet lives in registers. */
  emul_pkt_t pkt = {
    .op = wr->opcode == RNICPI_WR_RDMA_READ_INV ? RNICPI_WR_RDMA_READ : wr->opcode,
    .raddr = wr->remote_addr, .rkey = wr->rkey, .inv_key = wr->invalidate_rkey,
    .imm = wr->imm_data, /* the responder keeps its personality's bits, ours (emul_cm.c) */
    .compare_add = wr->compare_add, .swap = wr->swap,
    .len = len, .req = qp, .wr = wr, .sg = sg,
  };
  return emul_resp_rx(qp->peer, &pkt, &local_ops, w);
}

/* A request executed here alone (bind, invalidate, fast registration)
 * ended with @st: it completes, or fails and breaks the QP. */
static emul_exec_t
local_done(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st, emul_work_t *w)
{
  if (st != RNICPI_WC_SUCCESS)
    return fail_local(qp, wr, st, w);
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, 0, w);
  return EMUL_EXEC_DONE;
}

/* Bind a window; a failed bind breaks the QP (IBTA 10.6.7.2.4). */
static emul_exec_t
exec_bind(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  return local_done(qp, wr, emul_mw_bind(qp, wr), w);
}

static emul_exec_t
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
static emul_exec_t
exec_fast_reg(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  return local_done(qp, wr, emul_fr_exec(qp, wr), w);
}

const emul_exec_fn emul_exec_of[RNICPI_WR_OPCODE_COUNT] = {
  [RNICPI_WR_SEND] = exec_remote,
  [RNICPI_WR_SEND_INV] = exec_remote,
  [RNICPI_WR_RDMA_WRITE] = exec_remote,
  [RNICPI_WR_RDMA_READ] = exec_remote,
  [RNICPI_WR_ATOMIC_CMP_SWP] = exec_remote,
  [RNICPI_WR_ATOMIC_FETCH_ADD] = exec_remote,
  [RNICPI_WR_BIND_MW] = exec_bind,
  [RNICPI_WR_LOCAL_INV] = exec_local_inv,
  [RNICPI_WR_FAST_REG] = exec_fast_reg,
  [RNICPI_WR_RDMA_READ_INV] = exec_remote,
  [RNICPI_WR_IMM_DATA] = exec_remote,
  [RNICPI_WR_RDMA_WRITE_IMM] = exec_remote,
};

/* A local request (bind, Local Invalidate, fast registration) reaching
 * the head of a cross-process QP's send queue executes here, as
 * in-process (emul_ring_req.c); FALSE: it failed, completed with its error,
 * and the connection is broken. */
gboolean
emul_qp_exec_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  return emul_exec_of[wr->opcode](qp, wr, w) == EMUL_EXEC_DONE;
}

/* Run the blocked head of the send queue as far as the peer allows.  The
 * head leaves the queue before it runs: a failure completes it and flushes
 * the rest, so it must not be in the queue to be flushed a second time. */
void
emul_qp_progress(emul_qp_t *qp, emul_work_t *w)
{
  while (qp->state == RNICPI_QPS_RTS && !emul_wq_empty(&qp->sq)) {
    emul_swqe_t *s = emul_wq_pop(&qp->sq);
    emul_exec_t r = emul_exec_of[s->wr.opcode](qp, &s->wr, w);
    if (r == EMUL_EXEC_BLOCKED) {
      emul_wq_push_head(&qp->sq, s);
      return;
    }
    emul_swqe_done(qp, s);
    if (r == EMUL_EXEC_FAILED)
      return;
  }
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
