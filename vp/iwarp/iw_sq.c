/*
 * vp/iwarp transmit side: which message goes out next (iw_tx.c frames it
 * and writes it).  A Terminate first; then the Read and Atomic Responses
 * the responder queued (qp->irq), in order; then the send queue, in
 * order: a fast registration, bind or invalidation executed in its place,
 * a delivery fence or the fence of an orderly close, and the consumer's
 * work requests, their local elements checked, Reads and atomics no more
 * than the ORD and fenced requests waiting for them (RFC 5040 6.1,
 * RFC 7306); a scattered RDMA Read goes as one wire Read per run of its
 * sink.
 *
 * SPDX-License-Identifier: MIT
 */
#include "iw.h"

/* A zero-length Read of our own, an RTR or a delivery fence, queued to be
 * answered: it completes nothing.  Only the fields such a Read uses are
 * set (this runs per message). */
iw_swqe_t *
iw_tx_internal_read(iw_qp_t *qp, gboolean fence)
{
  iw_swqe_t *s = rnicpi_cache_get(&qp->swqe_cache, sizeof(iw_swqe_t));
  s->wr.opcode = RNICPI_WR_RDMA_READ;
  s->wr.flags = 0;
  s->wr.num_sge = 0;
  s->wr.rkey = 1;
  s->wr.remote_addr = 0;
  s->total = s->got = 0;
  s->done = s->sent = FALSE;
  s->status = RNICPI_WC_SUCCESS;
  s->internal = TRUE;
  s->fence = fence;
  s->req_id = 0;
  s->qn = s->msn = 0;
  s->sink_stag = 1;
  s->sink_to = 0;
  s->sink = NULL;
  s->parent = NULL;
  s->parts_out = 0;
  rnicpi_fifo_push(&qp->sq_out, s);
  rnicpi_fifo_push(&qp->orq, s);
  return s;
}

gboolean
iw_local_ok(iw_qp_t *qp, const rnicpi_sge_t *s, uint32_t need)
{
  return s->length == 0 || iw_mr_local(qp, s, need) != NULL;
}

/* RFC 7306 6.3: the WR's Immediate Data message (after its Write, for
 * RNICPI_WR_RDMA_WRITE_IMM): untagged on QN 0, numbered with the Sends,
 * its 8 bytes framed as its header. */
void
iw_tx_imm_start(iw_qp_t *qp, iw_tx_t *t)
{
  t->op = (t->wqe->wr.flags & RNICPI_WR_SOLICITED) ? IW_OP_IMM_SE : IW_OP_IMM;
  t->qn = IW_QN_SEND;
  t->msn = ++qp->msn_tx[IW_QN_SEND];
  t->wqe->qn = t->qn;
  t->wqe->msn = t->msn;
  t->len = t->off = 0;
  t->stag = 0;
  t->to = 0;
  t->imm_next = FALSE;
}

/* The end (one past) of the run of a Read's sink segments that starts at
 * its segment @i (of non-zero length): the segments after it that follow
 * it in memory in the same region, zero-length ones skipped, up to the
 * 32-bit size a Read Request carries.  One run is one Data Sink STag and
 * TO, so one wire Read (RFC 5040 6.1); *@len is its bytes. */
static uint32_t
read_run_end(const iw_swqe_t *s, uint32_t i, uint64_t *len)
{
  const rnicpi_sge_t *head = &s->sge[i];
  uint64_t end = head->addr + head->length;
  *len = head->length;
  for (i++; i < s->wr.num_sge; i++) {
    const rnicpi_sge_t *e = &s->sge[i];
    if (e->length == 0)
      continue;
    if (e->lkey != head->lkey || e->addr != end || *len + e->length > UINT32_MAX)
      break;
    end += e->length;
    *len += e->length;
  }
  return i;
}

/* The first segment of non-zero length of @s at or after @i (num_sge when
 * there is none). */
static uint32_t
read_run_next(const iw_swqe_t *s, uint32_t i)
{
  while (i < s->wr.num_sge && s->sge[i].length == 0)
    i++;
  return i;
}

/* Whether the sink of one run of Read @s (its first segment @e, @len
 * bytes) may take the Read Response: a local region of this protection
 * domain writable locally and, RFC 5040 4.4 and the RDMAC verbs, remotely
 * (the Response is a tagged write into it); with RNICPI_WR_SINK_MW, a
 * window of this QP (iw_mw_sink).  Where it lands (*@at) and the Data
 * Sink STag and TO the Read Request names (mr_lock held). */
static gboolean
read_sink(iw_qp_t *qp, const iw_swqe_t *s, const rnicpi_sge_t *e, uint64_t len, uint8_t **at,
          uint32_t *stag, uint64_t *to)
{
  rnicpi_sge_t run = *e;
  run.length = (uint32_t) len;
  if (run.length != len)
    return FALSE;
  if (s->wr.flags & RNICPI_WR_SINK_MW) {
    /* The segment is in the window's address space, which is the TO. */
    iw_mr_t *w = iw_mw_sink(qp, &run);
    if (w == NULL)
      return FALSE;
    *at = w->addr + (run.addr - w->iova);
    *stag = w->stag;
    *to = run.addr;
    return TRUE;
  }
  iw_mr_t *mr = iw_mr_local(qp, &run, RNICPI_ACCESS_LOCAL_WRITE);
  if (mr == NULL || !(mr->access & RNICPI_ACCESS_REMOTE_WRITE))
    return FALSE;
  *at = (uint8_t *) (uintptr_t) run.addr;
  *stag = mr->stag;
  *to = mr->iova + (run.addr - (uint64_t) (uintptr_t) mr->addr);
  return TRUE;
}

/* Issue the next part of the scattered Read qp->rd_split: one wire Read
 * Request into its next run of segments, from the remote range at the
 * run's offset.  Each part takes an ORD credit of its own (RFC 5040 6.1
 * counts Read Requests, not consumer requests): the caller issues it only
 * with one free, and the parts beyond the ORD wait for earlier answers.
 * Earlier WRs are all started and later ones wait behind it (the send
 * queue is in order).  FALSE, the Read completed with a local protection
 * error and the stream terminated, when the run's sink no longer takes
 * the Response (deregistered since the first part went out). */
static gboolean
tx_read_part(iw_qp_t *qp, iw_work_t *w)
{
  iw_tx_t *t = &qp->tx;
  iw_swqe_t *s = qp->rd_split;
  uint32_t first = read_run_next(s, s->part_sge);
  uint64_t len;
  uint32_t end = read_run_end(s, first, &len);
  iw_mr_lock(qp);
  uint8_t *at;
  uint32_t stag;
  uint64_t to;
  iw_swqe_t *p = NULL;
  if (read_sink(qp, s, &s->sge[first], len, &at, &stag, &to)) {
    p = rnicpi_cache_get(&qp->swqe_cache, sizeof(iw_swqe_t));
    p->sink = at;
    p->sink_stag = stag;
    p->sink_to = to;
  }
  iw_mr_unlock(qp);
  if (p == NULL) {
    qp->rd_split = NULL;
    s->done = TRUE;
    s->status = RNICPI_WC_LOC_PROT_ERR;
    iw_qp_sq_reap(qp, w);
    iw_term_send(qp, RNICPI_AE_LOCAL, IW_LAYER_RDMAP, IW_RDMAP_ET_CATASTROPHIC, 0, NULL, 0, 0,
                 NULL, w);
    return FALSE;
  }
  p->wr.opcode = RNICPI_WR_RDMA_READ;
  p->wr.flags = 0;
  p->wr.num_sge = 0;
  p->wr.wr_id = s->wr.wr_id;
  p->wr.rkey = s->wr.rkey;
  p->wr.remote_addr = s->wr.remote_addr + s->part_off;
  p->total = len;
  p->got = 0;
  p->done = p->sent = FALSE;
  p->status = RNICPI_WC_SUCCESS;
  p->internal = TRUE;
  p->fence = FALSE;
  p->parent = s;
  p->parts_out = 0;
  s->parts_out++;
  s->part_off += len;
  s->part_sge = read_run_next(s, end);
  if (s->part_sge == s->wr.num_sge)
    qp->rd_split = NULL; /* its last part */

  t->kind = IW_TX_SQ;
  t->wqe = p;
  t->op = IW_OP_READ_REQ;
  t->qn = IW_QN_READ_REQ;
  t->msn = ++qp->msn_tx[IW_QN_READ_REQ];
  t->len = 0;
  p->req_id = t->msn;
  p->qn = t->qn;
  p->msn = t->msn;
  rnicpi_fifo_push(&qp->sq_out, p);
  rnicpi_fifo_push(&qp->orq, p);
  qp->ord_used++;
  return TRUE;
}

static gboolean
tx_is_stag_op(const iw_swqe_t *s)
{
  return iw_mem_is_stag_op(s->wr.opcode);
}

/* Execute the fast registration, bind or local invalidation @s at the head of
 * the send queue: it sends nothing and completes in its place.  It waits
 * for the batch to be written (its pieces of Read Responses name regions
 * in place, which the table's writer must not change under them:
 * iw_mem_exec lets this pass's read hold of mr_lock go) and, with
 * RNICPI_WR_LOCAL_FENCE, for the Reads and atomics before it, the only
 * earlier requests still acting on local memory once started.  FALSE
 * when it waits, or failed: MEM_MGT_ERR, and the QP goes to ERROR as for
 * any local fault (RDMAP catastrophic Terminate). */
static gboolean
tx_stag_op(iw_qp_t *qp, iw_swqe_t *s, iw_work_t *w)
{
  const iw_txbatch_t *b = qp->tx.b;
  if ((b != NULL && b->sent < b->len) ||
      ((s->wr.flags & (RNICPI_WR_LOCAL_FENCE | RNICPI_WR_FENCE)) && !rnicpi_fifo_empty(&qp->orq)))
    return FALSE;
  rnicpi_fifo_pop(&qp->sq);
  rnicpi_fifo_push(&qp->sq_out, s);
  rnicpi_wc_status_t st = iw_mem_exec(qp, s);
  s->status = st;
  s->done = TRUE;
  iw_qp_sq_reap(qp, w);
  if (st == RNICPI_WC_SUCCESS)
    return TRUE;
  iw_term_send(qp, RNICPI_AE_LOCAL, IW_LAYER_RDMAP, IW_RDMAP_ET_CATASTROPHIC, 0, NULL, 0, 0,
               NULL, w);
  return FALSE;
}

/* Start the next message; FALSE when there is none to send now. */
gboolean
iw_tx_next(iw_qp_t *qp, iw_work_t *w)
{
  iw_tx_t *t = &qp->tx;
  iw_tx_reset(t);
  if (qp->term_pending) {
    t->kind = IW_TX_TERM;
    qp->term_pending = FALSE;
    return TRUE;
  }
  if (qp->state != RNICPI_QPS_RTS || qp->tx_hold)
    return FALSE;
  iw_rresp_t *rr = rnicpi_fifo_pop(&qp->irq);
  if (rr != NULL && rr->atomic) {
    /* RFC 7306: executed when it came; its response carries the value. */
    t->rr = *rr;
    rnicpi_cache_put(&qp->rresp_cache, rr);
    t->kind = IW_TX_RRESP;
    t->op = IW_OP_ATOMIC_RESP;
    t->qn = IW_QN_ATOMIC_RESP;
    t->msn = ++qp->msn_tx[IW_QN_ATOMIC_RESP];
    return TRUE;
  }
  if (rr != NULL) {
    /* Its source is found again before each piece (tx_src_next). */
    t->rr = *rr;
    rnicpi_cache_put(&qp->rresp_cache, rr);
    t->kind = IW_TX_RRESP;
    t->op = IW_OP_READ_RESP;
    t->len = t->rr.len;
    t->stag = t->rr.sink_stag;
    t->to = t->rr.sink_to;
    return TRUE;
  }
  /* A scattered Read with parts still to issue goes first: it is the
   * oldest WR not yet started. */
  iw_swqe_t *s = qp->rd_split != NULL ? qp->rd_split : rnicpi_fifo_peek(&qp->sq);
  while (s != NULL && s != qp->rd_split && tx_is_stag_op(s)) {
    if (!tx_stag_op(qp, s, w))
      return qp->term_pending ? iw_tx_next(qp, w) : FALSE;
    s = rnicpi_fifo_peek(&qp->sq);
  }
  /* The fence of an orderly close goes behind the last WR, once every
   * Read has its answer (iw_disconnect).  A fence is a Read: it takes an
   * ORD credit like the consumer's. */
  gboolean fin_fence = qp->fin_fence && s == NULL && rnicpi_fifo_empty(&qp->orq);
  if ((qp->unfenced > 0 || fin_fence) && !qp->fence_out && qp->ord_used < iw_qp_read_room(qp) &&
      (s == NULL || qp->unfenced >= 16)) {
    iw_swqe_t *f = iw_tx_internal_read(qp, TRUE);
    qp->ord_used++;
    qp->fence_out = TRUE;
    qp->unfenced = 0;
    if (fin_fence) {
      qp->fin_fence = FALSE;
      iw_timed_add(qp, IW_FIN_FENCE_US);
    }
    t->kind = IW_TX_SQ;
    t->wqe = f;
    t->op = IW_OP_READ_REQ;
    t->qn = IW_QN_READ_REQ;
    t->msn = ++qp->msn_tx[IW_QN_READ_REQ];
    return TRUE;
  }
  if (s == NULL)
    return FALSE;
  if (s == qp->rd_split) {
    if (qp->ord_used >= qp->ord)
      return FALSE; /* its next part waits for an answer */
    if (tx_read_part(qp, w))
      return TRUE;
    return qp->term_pending ? iw_tx_next(qp, w) : FALSE;
  }
  gboolean is_read = iw_wr_is_read(s->wr.opcode);
  gboolean is_atomic = rnicpi_wr_is_atomic(s->wr.opcode);
  /* ORD: no more Reads and atomics in flight than negotiated.  A fence
   * waits for them all; so does a local fence, since their answers are
   * the earlier requests still writing local memory this one may read (a
   * Send from a Read's sink carries the bytes the Read fetched). */
  if (((is_read || is_atomic) && qp->ord_used >= qp->ord) ||
      ((s->wr.flags & (RNICPI_WR_FENCE | RNICPI_WR_LOCAL_FENCE)) && !rnicpi_fifo_empty(&qp->orq)))
    return FALSE;
  rnicpi_fifo_pop(&qp->sq);
  rnicpi_fifo_push(&qp->sq_out, s);

  uint32_t need = is_read || is_atomic ? RNICPI_ACCESS_LOCAL_WRITE : RNICPI_ACCESS_LOCAL_READ;
  /* An atomic's result goes to one 8-byte element. */
  gboolean ok = !is_atomic || (s->wr.num_sge == 1 && s->sge[0].length == 8);
  iw_mr_lock(qp);
  /* A Read's segments are checked by runs below (window keys are no
   * local keys: RNICPI_WR_SINK_MW). */
  for (uint32_t i = 0; i < s->wr.num_sge && ok && !is_read; i++)
    ok = iw_local_ok(qp, &s->sge[i], need);
  /* A Read's sink: each run of contiguous segments in one region (or
   * window) is one wire Read; every run is checked before the first goes
   * out. */
  uint32_t first = is_read ? read_run_next(s, 0) : 0, runs = 0;
  for (uint32_t i = first; ok && is_read && i < s->wr.num_sge; runs++) {
    uint64_t len, to;
    uint32_t end = read_run_end(s, i, &len), stag;
    uint8_t *at;
    ok = read_sink(qp, s, &s->sge[i], len, &at, &stag, &to);
    if (ok && i == first) {
      s->sink_stag = stag;
      s->sink_to = to;
      s->sink = at;
    }
    i = read_run_next(s, end);
  }
  if (is_read && runs == 0) {
    s->sink_stag = 1; /* zero-length: no sink */
  } else if (ok && is_atomic) {
    s->sink = (uint8_t *) (uintptr_t) s->sge[0].addr;
  }
  iw_mr_unlock(qp);
  if (!ok) {
    s->done = TRUE;
    s->status = RNICPI_WC_LOC_PROT_ERR;
    iw_qp_sq_reap(qp, w);
    iw_term_send(qp, RNICPI_AE_LOCAL, IW_LAYER_RDMAP, IW_RDMAP_ET_CATASTROPHIC, 0, NULL, 0, 0,
                 NULL, w);
    return qp->term_pending ? iw_tx_next(qp, w) : FALSE;
  }

  if (is_read && runs > 1) {
    /* Scattered: one wire Read per run (tx_read_part); the first goes now
     * (the ORD was checked above). */
    s->part_sge = first;
    s->part_off = 0;
    s->parts_out = 0;
    qp->rd_split = s;
    if (tx_read_part(qp, w))
      return TRUE;
    return qp->term_pending ? iw_tx_next(qp, w) : FALSE;
  }
  t->kind = IW_TX_SQ;
  t->wqe = s;
  t->len = s->total;
  switch (s->wr.opcode) {
  case RNICPI_WR_SEND:
  case RNICPI_WR_SEND_INV: {
    gboolean se = (s->wr.flags & RNICPI_WR_SOLICITED) != 0;
    if (s->wr.opcode == RNICPI_WR_SEND_INV)
      t->op = se ? IW_OP_SEND_SE_INV : IW_OP_SEND_INV;
    else
      t->op = se ? IW_OP_SEND_SE : IW_OP_SEND;
    t->qn = IW_QN_SEND;
    t->msn = ++qp->msn_tx[IW_QN_SEND];
    t->stag = s->wr.opcode == RNICPI_WR_SEND_INV ? (uint32_t) s->wr.invalidate_rkey : 0;
    break;
  }
  case RNICPI_WR_RDMA_WRITE:
  case RNICPI_WR_RDMA_WRITE_IMM:
    t->op = IW_OP_WRITE;
    /* An STag is 32 bits: a key with more set names no region; STag 0
     * (never valid remotely) lets the peer say so with a Terminate. */
    t->stag = s->wr.rkey > UINT32_MAX ? 0 : (uint32_t) s->wr.rkey;
    t->to = s->wr.remote_addr;
    t->imm_next = s->wr.opcode == RNICPI_WR_RDMA_WRITE_IMM;
    break;
  case RNICPI_WR_IMM_DATA:
    iw_tx_imm_start(qp, t);
    break;
  case RNICPI_WR_RDMA_READ:
  case RNICPI_WR_RDMA_READ_INV:
  case RNICPI_WR_ATOMIC_CMP_SWP:
  case RNICPI_WR_ATOMIC_FETCH_ADD:
    /* RFC 7306: Atomic Requests share QN 1 (and its MSNs) with Reads. */
    t->op = is_atomic ? IW_OP_ATOMIC_REQ : IW_OP_READ_REQ;
    t->qn = IW_QN_READ_REQ;
    t->msn = ++qp->msn_tx[IW_QN_READ_REQ];
    t->len = 0; /* the request itself carries no payload */
    s->req_id = t->msn;
    rnicpi_fifo_push(&qp->orq, s);
    qp->ord_used++;
    break;
  default:
    g_assert_not_reached();
  }
  s->qn = t->qn;
  s->msn = t->msn; /* 0 for a Write: its Immediate Data, if any, sets it */
  return TRUE;
}
