/*
 * vp/emul's in-process requester, its executors: a work request executes
 * against the peer's memory when it is posted with nothing queued
 * (emul_qp.c), or when what it waited for came (the requester's queue,
 * emul_req.c): its local rule here (emul_req_local), then the in-process
 * transport (emul_xport_local.c), which runs the peer's responder
 * (emul_resp_rx, which the ring's requests reach too) at once in this
 * thread; the requests that touch only this process's tables (bind, Local
 * Invalidate, fast registration) execute here, for both transports.  Its
 * completions, its failures and the flush of a QP that goes to ERROR are
 * the completer's (emul_comp.c).
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
 * emul_req.c, emul_ring_copy.c and emul_ring_resp.c; the branches to it are the only cost on this path.
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

static emul_exec_t
fail_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st, emul_work_t *w)
{
  emul_req_fail_local(qp, wr, st, w);
  return EMUL_EXEC_FAILED;
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
  [RNICPI_WR_SEND] = emul_xport_local_exec,
  [RNICPI_WR_SEND_INV] = emul_xport_local_exec,
  [RNICPI_WR_RDMA_WRITE] = emul_xport_local_exec,
  [RNICPI_WR_RDMA_READ] = emul_xport_local_exec,
  [RNICPI_WR_ATOMIC_CMP_SWP] = emul_xport_local_exec,
  [RNICPI_WR_ATOMIC_FETCH_ADD] = emul_xport_local_exec,
  [RNICPI_WR_BIND_MW] = exec_bind,
  [RNICPI_WR_LOCAL_INV] = exec_local_inv,
  [RNICPI_WR_FAST_REG] = exec_fast_reg,
  [RNICPI_WR_RDMA_READ_INV] = emul_xport_local_exec,
  [RNICPI_WR_IMM_DATA] = emul_xport_local_exec,
  [RNICPI_WR_RDMA_WRITE_IMM] = emul_xport_local_exec,
};

/* A local request (bind, Local Invalidate, fast registration) reaching
 * the head of a cross-process QP's send queue executes here, as
 * in-process (emul_req_run); FALSE: it failed, completed with its error,
 * and the connection is broken. */
gboolean
emul_qp_exec_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  return emul_exec_of[wr->opcode](qp, wr, w) == EMUL_EXEC_DONE;
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
