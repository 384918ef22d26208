/*
 * vp/iwarp transmit side: the requester (Send, RDMA Write, RDMA Read
 * Request), the read responder's Read Responses, Terminates and RTRs,
 * segmented into FPDUs of at most the path's MULPDU (RFC 5041 5.2,
 * RFC 5044 4.1, 4.5).  Payload goes from the registered memory straight to
 * the socket with sendmsg(): no copy.  Up to IW_TX_FPDUS FPDUs are framed
 * into one batch and written by one call (a Read Response, the Send behind
 * it and the delivery fence after that share one TCP segment).  Messages
 * are framed one after the other, so two tagged or two untagged messages
 * never interleave (siw refuses that).
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "iw.h"

static gint fpdu_counter; /* for ITAPI_IWARP_CORRUPT_CRC */

/* Payload room of one FPDU after its headers; a multiple of 4, so the
 * FPDUs before the last carry no pad. */
static uint32_t
room_for(iw_qp_t *qp, uint32_t hdr_len)
{
  return (qp->fpdu_max - IW_FPDU_LEN_BYTES - IW_FPDU_CRC_BYTES - hdr_len) & ~3u;
}

static uint32_t
fpdu_crc_final(iw_qp_t *qp, uint32_t crc)
{
  if (!qp->crc)
    return 0;
  int n = iw_config.corrupt_crc;
  if (n > 0 && g_atomic_int_add(&fpdu_counter, 1) + 1 == n) {
    g_message("ITAPI_IWARP_CORRUPT_CRC: corrupting the CRC of FPDU %d", n);
    crc ^= 0xdeadbeef;
  }
  return crc;
}

/* Frame one contiguous ULPDU into @out; returns the FPDU length. */
static uint32_t
frame_ulpdu(iw_qp_t *qp, const uint8_t *ulpdu, uint32_t len, uint8_t *out)
{
  uint16_t l = htons((uint16_t) len);
  memcpy(out, &l, 2);
  memcpy(out + 2, ulpdu, len);
  uint32_t pad = iw_fpdu_pad(len);
  memset(out + 2 + len, 0, pad);
  uint32_t n = 2 + len + pad;
  iw_crc_put(out + n, fpdu_crc_final(qp, iw_crc32c(0, out, n)));
  return n + IW_FPDU_CRC_BYTES;
}

/* A zero-length Read of our own, an RTR or a delivery fence, queued to be
 * answered: it completes nothing.  Only the fields such a Read uses are
 * set (this runs per message). */
static iw_swqe_t *
internal_read(iw_qp_t *qp, gboolean fence)
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

/* The RFC 6581 ready-to-receive, sent by the initiator right after the
 * reply: a zero-length RDMA Write or Read Request with STag 1 (cxgb4 fails
 * tagged segments with STag 0, softiwarp issue #21). */
int
iw_tx_rtr(iw_qp_t *qp)
{
  uint8_t ulpdu[18 + 28], fpdu[2 + sizeof(ulpdu) + 8];
  uint32_t len;
  if (qp->rtr == IW_RTR_WRITE) {
    iw_ddp_tagged_t t = {
      .ctrl = IW_DDP_TAGGED | IW_DDP_LAST | IW_DDP_VERSION,
      .rdmap = IW_RDMAP_VERSION | IW_OP_WRITE,
      .stag_be = htonl(1), .to_be = 0,
    };
    memcpy(ulpdu, &t, sizeof(t));
    len = sizeof(t);
  } else {
    iw_ddp_untagged_t u = {
      .ctrl = IW_DDP_LAST | IW_DDP_VERSION, .rdmap = IW_RDMAP_VERSION | IW_OP_READ_REQ,
      .qn_be = htonl(IW_QN_READ_REQ), .msn_be = htonl(++qp->msn_tx[IW_QN_READ_REQ]),
    };
    iw_rdmap_readreq_t r = { .sink_stag_be = htonl(1), .src_stag_be = htonl(1) };
    memcpy(ulpdu, &u, sizeof(u));
    memcpy(ulpdu + sizeof(u), &r, sizeof(r));
    len = sizeof(u) + sizeof(r);
    internal_read(qp, FALSE);
  }
  uint32_t n = frame_ulpdu(qp, ulpdu, len, fpdu);
  return iw_sock_send_all(qp->fd, fpdu, n);
}

gboolean
iw_local_ok(iw_qp_t *qp, const rnicpi_sge_t *s, uint32_t need)
{
  return s->length == 0 || iw_mr_local(qp, s, need) != NULL;
}

/* Forget the message being framed; the batch stays allocated.  Field by
 * field: this runs per message, and rr is only read after it is set. */
static void
tx_reset(iw_tx_t *t)
{
  t->kind = IW_TX_NONE;
  t->wqe = NULL;
  t->op = 0;
  t->len = t->off = t->sge_off = t->to = 0;
  t->sge_i = t->msn = t->qn = t->stag = 0;
  t->src = NULL;
  t->imm_next = FALSE;
}

/* RFC 7306 6.3: the WR's Immediate Data message (after its Write, for
 * RNICPI_WR_RDMA_WRITE_IMM): untagged on QN 0, numbered with the Sends,
 * its 8 bytes framed as its header. */
static void
tx_imm_start(iw_qp_t *qp, iw_tx_t *t)
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
static gboolean
tx_next(iw_qp_t *qp, iw_work_t *w)
{
  iw_tx_t *t = &qp->tx;
  tx_reset(t);
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
      return qp->term_pending ? tx_next(qp, w) : FALSE;
    s = rnicpi_fifo_peek(&qp->sq);
  }
  /* The fence of an orderly close goes behind the last WR, once every
   * Read has its answer (iw_disconnect).  A fence is a Read: it takes an
   * ORD credit like the consumer's. */
  gboolean fin_fence = qp->fin_fence && s == NULL && rnicpi_fifo_empty(&qp->orq);
  if ((qp->unfenced > 0 || fin_fence) && !qp->fence_out && qp->ord_used < iw_qp_read_room(qp) &&
      (s == NULL || qp->unfenced >= 16)) {
    iw_swqe_t *f = internal_read(qp, TRUE);
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
    return qp->term_pending ? tx_next(qp, w) : FALSE;
  }
  gboolean is_read = iw_wr_is_read(s->wr.opcode);
  gboolean is_atomic = rnicpi_wr_is_atomic(s->wr.opcode);
  /* ORD: no more Reads and atomics in flight than negotiated; a fence
   * waits for them all. */
  if (((is_read || is_atomic) && qp->ord_used >= qp->ord) ||
      ((s->wr.flags & RNICPI_WR_FENCE) && !rnicpi_fifo_empty(&qp->orq)))
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
    return qp->term_pending ? tx_next(qp, w) : FALSE;
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
    return qp->term_pending ? tx_next(qp, w) : FALSE;
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
    tx_imm_start(qp, t);
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

/* The region a Read Response is read from, found again before each piece
 * is read and before a later pass writes a piece named in place: the
 * Request was checked when it came (iw_rdmap_read_req), but the consumer
 * may have deregistered the region since and freed its memory, or taken
 * the remote read right from it (it_lmr_modify) or from this QP.  Found by
 * STag and generation (iw_mr_live), so that a new region at that STag is
 * not taken for it; the generation pins its memory, bounds and protection
 * domain.  NULL, with the RDMAP remote protection code in *@code, when the
 * read may not go on (mr_lock held). */
static iw_mr_t *
tx_src_find(iw_qp_t *qp, uint32_t stag, uint64_t gen, uint8_t *code)
{
  iw_mr_t *mr = iw_mr_live(qp->dev, stag, gen);
  if (mr == NULL) {
    *code = IW_RDMAP_P_INVALID_STAG;
    return NULL;
  }
  if (!(mr->access & RNICPI_ACCESS_REMOTE_READ) ||
      !(qp->attr.access & RNICPI_ACCESS_REMOTE_READ)) {
    *code = IW_RDMAP_P_ACCESS;
    return NULL;
  }
  return mr;
}

/* A Read Response's source failed tx_src_find: the Response ends there.
 * An error found while creating a message ends the stream with a
 * Terminate sent in the message's place, copying no header (RFC 5040
 * 7.2); its code is the remote protection error the peer's STag now earns
 * (0/1/@code), so that the peer's Read fails as a remote access error,
 * whatever part of the data it already has. */
static void
tx_src_lost(iw_qp_t *qp, uint32_t stag, uint8_t code, iw_work_t *w)
{
  g_message("QP %u: the region an RDMA Read Response reads (STag 0x%08x) %s before the "
            "Response was all sent; Terminate 0/1/0x%02x",
            qp->base.qp_num, stag,
            code == IW_RDMAP_P_INVALID_STAG ? "was deregistered" : "lost the remote read right",
            code);
  iw_term_send(qp, RNICPI_AE_LOCAL_READ_RESP, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_PROT, code,
               NULL, 0, 0, NULL, w);
}

/* Whether the message being framed may read its next piece: for a Read
 * Response, its source found again, t->src pointing into it; 0xff, or the
 * code tx_src_find gave (mr_lock held). */
static uint8_t
tx_src_next(iw_qp_t *qp)
{
  iw_tx_t *t = &qp->tx;
  /* An Atomic Response reads no memory; a zero-length Read Response
   * names none (RFC 5041 5.2: its STag is not checked). */
  if (t->kind != IW_TX_RRESP || t->op != IW_OP_READ_RESP || t->len == 0)
    return 0xff;
  uint8_t code;
  iw_mr_t *mr = tx_src_find(qp, t->rr.src_stag, t->rr.src_gen, &code);
  if (mr == NULL)
    return code;
  t->src = mr->addr + (t->rr.src_to - mr->iova);
  return 0xff;
}

/* The whole message is framed (not necessarily written yet). */
static void
tx_framed(iw_qp_t *qp)
{
  iw_tx_t *t = &qp->tx;
  if (t->kind == IW_TX_SQ && !iw_op_answered(t->op) && iw_qp_fenced(qp)) {
    /* RFC 5040 has no acknowledgement: TCP having a Send or Write says
     * nothing of its placement (RDMAC verbs 8.1.3.1).  With
     * ITAPI_IWARP_COMPLETION=placed it completes when a later zero-length
     * Read comes back: the peer answers Reads after it placed what came
     * before them (RFC 5040 5.5), and a Terminate for the WR arrives before
     * that answer.  The fence is framed behind this message, so its answer
     * cannot come before this message is written. */
    t->wqe->sent = TRUE;
    qp->unfenced++;
  }
  tx_reset(t);
}

/* Append @n bytes at @p to the batch's iovecs, extending the last one when
 * they follow it in memory. */
static void
tx_iov_add(iw_txbatch_t *b, const void *p, size_t n)
{
  struct iovec *last = b->niov > 0 ? &b->iov[b->niov - 1] : NULL;
  if (last != NULL && (const uint8_t *) last->iov_base + last->iov_len == p) {
    last->iov_len += n;
    return;
  }
  b->iov[b->niov].iov_base = (void *) p;
  b->iov[b->niov++].iov_len = n;
}

/* Room for one more FPDU in the batch. */
static gboolean
tx_batch_room(const iw_txbatch_t *b)
{
  return b->nf < IW_TX_FPDUS && b->niov + IW_MAX_SGE + 3 <= IW_TX_IOV &&
         b->lin_len + IW_TX_FPDU_LIN <= IW_TX_LIN;
}

/* Frame the next FPDU of the current message into the batch (mr_lock held
 * for reading): header, then the payload (copied behind the header when
 * it is small, otherwise named in place), then pad and CRC. */
static void
tx_frame(iw_qp_t *qp)
{
  iw_tx_t *t = &qp->tx;
  iw_txbatch_t *b = t->b;
  iw_txf_t *f = &b->f[b->nf++];
  f->done_kind = IW_TX_NONE;
  f->wqe = NULL;
  f->src_gen = 0;
  if (t->kind == IW_TX_TERM) {
    if (qp->tail_len > 0)
      tx_iov_add(b, qp->tail, qp->tail_len);
    tx_iov_add(b, qp->term, qp->term_len);
    f->len = qp->tail_len + qp->term_len;
    f->done_kind = IW_TX_TERM;
    b->len += f->len;
    tx_reset(t);
    return;
  }
  const iw_op_rule_t *rule = &iw_op_rules[t->op];
  uint32_t hlen = rule->tagged ? sizeof(iw_ddp_tagged_t) : sizeof(iw_ddp_untagged_t);
  hlen += rule->extra_hdr;
  uint64_t left = t->len - t->off;
  uint32_t chunk = (uint32_t) MIN(left, (uint64_t) room_for(qp, hlen));
  gboolean last = chunk == left;
  if (!last && qp->fpdu_max < iw_config.fpdu_max) { /* (at most IW_FPDU_MAX) */
    /* The segment size may have grown with the peer's window since: the
     * FPDUs after this one follow it. */
    qp->mss_bytes += chunk;
    if (qp->mss_bytes >= IW_MSS_PROBE_BYTES)
      iw_qp_mulpdu(qp);
  }
  uint8_t *fh = b->lin + b->lin_len, *h = fh + IW_FPDU_LEN_BYTES;
  uint8_t ctrl = (last ? IW_DDP_LAST : 0) | IW_DDP_VERSION;
  uint8_t rdmap = IW_RDMAP_VERSION | t->op;

  if (rule->tagged) {
    iw_ddp_tagged_t d = { .ctrl = ctrl | IW_DDP_TAGGED, .rdmap = rdmap,
                          .stag_be = htonl(t->stag), .to_be = htobe64(t->to + t->off) };
    memcpy(h, &d, sizeof(d));
  } else {
    iw_ddp_untagged_t d = { .ctrl = ctrl, .rdmap = rdmap, .inv_stag_be = htonl(t->stag),
                            .qn_be = htonl(t->qn), .msn_be = htonl(t->msn),
                            .mo_be = htonl((uint32_t) t->off) };
    memcpy(h, &d, sizeof(d));
    if (t->op == IW_OP_READ_REQ) {
      iw_swqe_t *s = t->wqe;
      iw_rdmap_readreq_t r = {
        .sink_stag_be = htonl(s->sink_stag), .sink_to_be = htobe64(s->sink_to),
        .size_be = htonl((uint32_t) s->total),
        .src_stag_be = htonl(s->wr.rkey > UINT32_MAX ? 0 : (uint32_t) s->wr.rkey),
        .src_to_be = htobe64(s->wr.remote_addr),
      };
      memcpy(h + sizeof(d), &r, sizeof(r));
    } else if (t->op == IW_OP_ATOMIC_REQ) {
      const rnicpi_send_wr_t *wr = &t->wqe->wr;
      gboolean faa = wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD;
      iw_rdmap_atomic_req_t a = {
        .opcode_be = htonl(faa ? IW_ATOMIC_FETCH_ADD : IW_ATOMIC_CMP_SWAP),
        .req_id_be = htonl(t->wqe->req_id),
        .stag_be = htonl(wr->rkey > UINT32_MAX ? 0 : (uint32_t) wr->rkey),
        .to_be = htobe64(wr->remote_addr),
        .add_swap_be = htobe64(faa ? wr->compare_add : wr->swap),
        .add_swap_mask_be = faa ? 0 : UINT64_MAX,
        .compare_be = faa ? 0 : htobe64(wr->compare_add),
        .compare_mask_be = UINT64_MAX, /* RFC 7306 5.2.1: all ones when unused */
      };
      memcpy(h + sizeof(d), &a, sizeof(a));
    } else if (t->op == IW_OP_ATOMIC_RESP) {
      iw_rdmap_atomic_resp_t a = { .req_id_be = htonl(t->rr.req_id), .orig_be = htobe64(t->rr.orig) };
      memcpy(h + sizeof(d), &a, sizeof(a));
    } else if (t->op == IW_OP_IMM || t->op == IW_OP_IMM_SE) {
      uint64_t v = htobe64(t->wqe->wr.imm_data);
      memcpy(h + sizeof(d), &v, IW_RDMAP_IMM_BYTES);
    }
  }
  uint32_t ulpdu = hlen + chunk;
  uint16_t l = htons((uint16_t) ulpdu);
  memcpy(fh, &l, 2);
  uint32_t hdr_len = IW_FPDU_LEN_BYTES + hlen;
  b->lin_len += hdr_len;
  uint32_t crc = qp->crc ? iw_crc32c(0, fh, hdr_len) : 0;

  /* The payload, from the source memory: copied behind the header (the
   * whole FPDU is then one iovec, added at the end) or named in place. */
  gboolean inline_ = chunk <= IW_TX_INLINE;
  if (!inline_)
    tx_iov_add(b, fh, hdr_len);
  uint32_t want = chunk;
  while (want > 0) {
    const uint8_t *src;
    uint32_t n;
    if (t->kind == IW_TX_RRESP) {
      src = t->src + t->off;
      n = want;
    } else {
      const rnicpi_sge_t *s = &t->wqe->sge[t->sge_i];
      src = (const uint8_t *) (uintptr_t) (s->addr + t->sge_off);
      n = (uint32_t) MIN((uint64_t) want, s->length - t->sge_off);
      t->sge_off += n;
      if (t->sge_off == s->length) {
        t->sge_i++;
        t->sge_off = 0;
      }
    }
    if (n == 0)
      continue;
    if (qp->crc)
      crc = iw_crc32c(crc, src, n);
    if (inline_) {
      memcpy(b->lin + b->lin_len, src, n);
      b->lin_len += n;
    } else if (t->kind == IW_TX_RRESP) {
      /* In an iovec of its own, which tx_keep_cut can point at a copy;
       * its region is found again before a later pass writes it. */
      f->src_iov = b->niov;
      f->src_stag = t->rr.src_stag;
      f->src_gen = t->rr.src_gen;
      b->iov[b->niov].iov_base = (void *) src;
      b->iov[b->niov++].iov_len = n;
    } else {
      tx_iov_add(b, src, n);
    }
    want -= n;
  }
  uint8_t *trailer = b->lin + b->lin_len;
  uint32_t pad = iw_fpdu_pad(ulpdu);
  memset(trailer, 0, pad);
  if (qp->crc && pad > 0)
    crc = iw_crc32c(crc, trailer, pad);
  iw_crc_put(trailer + pad, fpdu_crc_final(qp, crc));
  b->lin_len += pad + IW_FPDU_CRC_BYTES;
  f->len = hdr_len + chunk + pad + IW_FPDU_CRC_BYTES;
  if (inline_)
    tx_iov_add(b, fh, f->len);
  else
    tx_iov_add(b, trailer, pad + IW_FPDU_CRC_BYTES);
  b->len += f->len;
  t->off += chunk;
  if (t->off == t->len && t->imm_next) {
    /* The Write is framed; the WR goes on with its immediate data. */
    tx_imm_start(qp, t);
  } else if (t->off == t->len) {
    f->done_kind = (uint8_t) t->kind;
    f->op = t->op;
    f->wqe = t->wqe;
    tx_framed(qp);
  }
}

/* Write what the socket takes of the batch: 1 all, 0 would block, -1 error. */
static int
tx_write(iw_qp_t *qp)
{
  iw_txbatch_t *b = qp->tx.b;
  while (b->sent < b->len) {
    struct iovec iov[IW_TX_IOV];
    struct msghdr mh = { .msg_iov = b->iov, .msg_iovlen = b->niov };
    if (b->sent > 0) {
      /* The rest of a batch the socket took in part. */
      int n = 0;
      size_t skip = b->sent;
      for (int i = 0; i < b->niov; i++) {
        if (skip >= b->iov[i].iov_len) {
          skip -= b->iov[i].iov_len;
          continue;
        }
        iov[n].iov_base = (uint8_t *) b->iov[i].iov_base + skip;
        iov[n++].iov_len = b->iov[i].iov_len - skip;
        skip = 0;
      }
      mh.msg_iov = iov;
      mh.msg_iovlen = n;
    }
    /* One piece (a small FPDU, copied whole) needs no iovec array: send()
     * spares the kernel importing one (about 0.1 us a message here). */
    ssize_t r = mh.msg_iovlen == 1
                  ? send(qp->fd, mh.msg_iov[0].iov_base, mh.msg_iov[0].iov_len,
                         MSG_NOSIGNAL | MSG_DONTWAIT)
                  : sendmsg(qp->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
      g_debug("QP %u: send: %s", qp->base.qp_num, g_strerror(errno));
      return -1;
    }
    b->sent += (size_t) r;
  }
  return 1;
}

/* The socket took part of an FPDU whose payload is a Read Response's
 * source, named in place: the payload is copied out (one FPDU at most),
 * since the region may be deregistered and its memory freed before the
 * socket takes the rest, and the rest must still go out for a Terminate to
 * start on an FPDU boundary (RFC 5044 4.1).  Every pass that leaves a
 * batch half written calls it, so between passes no half-written FPDU
 * names a region (mr_lock held). */
static void
tx_keep_cut(iw_txbatch_t *b)
{
  if (b->f_done >= b->nf || b->sent == b->f_end || b->f[b->f_done].src_gen == 0)
    return;
  iw_txf_t *f = &b->f[b->f_done];
  struct iovec *v = &b->iov[f->src_iov];
  if (b->cut_size < v->iov_len) {
    /* The iovecs still naming the old copy are written already. */
    g_free(b->cut);
    b->cut = g_malloc(v->iov_len);
    b->cut_size = v->iov_len;
  }
  memcpy(b->cut, v->iov_base, v->iov_len);
  v->iov_base = b->cut;
  f->src_gen = 0;
}

/* Pieces of Read Responses framed in an earlier pass and not written yet
 * name their regions in place: a pass holds mr_lock, so each region stays
 * while the pass that checked it runs, but not after.  Before this pass
 * writes them, each is found again; FALSE when one failed and the stream
 * was terminated (which dropped the batch). */
static gboolean
tx_batch_src_ok(iw_qp_t *qp, iw_work_t *w)
{
  iw_txbatch_t *b = qp->tx.b;
  for (int i = b != NULL ? b->f_done : 0; b != NULL && i < b->nf; i++) {
    const iw_txf_t *f = &b->f[i];
    uint8_t code;
    if (f->src_gen != 0 && tx_src_find(qp, f->src_stag, f->src_gen, &code) == NULL) {
      tx_src_lost(qp, f->src_stag, code, w);
      return FALSE;
    }
  }
  return TRUE;
}

/* An FPDU that ends a message is written completely. */
static void
tx_written(iw_qp_t *qp, iw_txf_t *f, iw_work_t *w)
{
  switch (f->done_kind) {
  case IW_TX_SQ:
    /* Without delivery fences, complete at transmission. */
    if (!iw_op_answered(f->op) && !iw_qp_fenced(qp) && f->wqe != NULL) {
      f->wqe->done = TRUE;
      iw_qp_sq_reap(qp, w);
    }
    break;
  case IW_TX_TERM:
    qp->term_sent = TRUE;
    g_free(qp->tail);
    qp->tail = NULL;
    qp->tail_len = 0;
    shutdown(qp->fd, SHUT_WR);
    break;
  default:
    break;
  }
}

/* The next FPDU of @b written whole and not yet accounted, now accounted
 * (f_done, f_end past it); NULL when there is none. */
static iw_txf_t *
tx_whole_next(iw_txbatch_t *b)
{
  if (b->f_done >= b->nf || b->f_end + b->f[b->f_done].len > b->sent)
    return NULL;
  iw_txf_t *f = &b->f[b->f_done++];
  b->f_end += f->len;
  return f;
}

/* Account for the FPDUs written completely; empty the batch when done. */
static void
tx_account(iw_qp_t *qp, iw_work_t *w)
{
  iw_txbatch_t *b = qp->tx.b;
  iw_txf_t *f;
  while ((f = tx_whole_next(b)) != NULL) {
    if (f->done_kind != IW_TX_NONE)
      tx_written(qp, f, w);
  }
  if (b->sent == b->len)
    b->niov = b->nf = b->f_done = 0, b->len = b->sent = b->f_end = 0, b->lin_len = 0;
}

/* An orderly close owes its FIN now: asked for (iw_disconnect), still
 * connected, and nothing left to send or to be answered, its own fence
 * included (RDMAC verbs 8.3.1: graceful close once the send queue and
 * reads are done). */
static gboolean
tx_fin_due(const iw_qp_t *qp)
{
  return qp->closing && !qp->fin_fence && qp->cs == IW_CS_RTS && rnicpi_fifo_empty(&qp->sq) &&
         qp->rd_split == NULL && qp->unfenced == 0 &&
         rnicpi_fifo_empty(&qp->orq) && rnicpi_fifo_empty(&qp->irq);
}

/* Something for the transmit pass to do now: a message, the rest of a
 * batch, a Terminate, a Read Response, a fence, or the FIN of an orderly
 * close.  The FIN counts: it often falls due on input (the last Read's
 * Response), and a poller or sleeper that skips the transmit pass when
 * nothing is pending would leave the close hanging. */
gboolean
iw_tx_pending(iw_qp_t *qp)
{
  return qp->tx.kind != IW_TX_NONE || (qp->tx.b != NULL && qp->tx.b->sent < qp->tx.b->len) ||
         qp->term_pending || !rnicpi_fifo_empty(&qp->irq) || !rnicpi_fifo_empty(&qp->sq) ||
         qp->rd_split != NULL || (qp->fin_fence && rnicpi_fifo_empty(&qp->orq)) ||
         (qp->unfenced > 0 && !qp->fence_out) || tx_fin_due(qp);
}

/* @qp's orderly close waits for nothing but its own fence (iw_disconnect),
 * and the consumer frees @qp or the fence's time is up: the FIN goes now,
 * as it would have without the fence (not the Terminate of an abort).
 * FALSE: something of the consumer's is still outstanding. */
gboolean
iw_tx_fin_cut_short(iw_qp_t *qp)
{
  if (!qp->closing || qp->cs != IW_CS_RTS || !rnicpi_fifo_empty(&qp->sq) || qp->rd_split != NULL ||
      !rnicpi_fifo_empty(&qp->irq) || qp->tx.kind != IW_TX_NONE ||
      (qp->tx.b != NULL && qp->tx.b->sent < qp->tx.b->len))
    return FALSE;
  for (const iw_swqe_t *s = rnicpi_fifo_peek(&qp->orq); s != NULL; s = s->or_next) {
    if (!s->internal)
      return FALSE;
  }
  shutdown(qp->fd, SHUT_WR);
  qp->cs = IW_CS_CLOSING;
  return TRUE;
}

/* The stream is dead for data (flush): forget the batch and the message.
 * If an FPDU is half written, its rest is copied out first (the memory it
 * names may go with the flush): the peer's deframer needs it before a
 * Terminate can follow on an FPDU boundary (RFC 5044 4.1). */
void
iw_tx_drop(iw_qp_t *qp)
{
  iw_txbatch_t *b = qp->tx.b;
  /* FPDUs written whole but not accounted yet (a write that failed after
   * others went out, tx_progress): past them first.  Their messages are
   * flushed with the rest. */
  if (b != NULL)
    while (tx_whole_next(b) != NULL)
      continue;
  if (b != NULL && b->f_done < b->nf && b->sent > b->f_end) {
    iw_txf_t *f = &b->f[b->f_done];
    /* Batch bytes [sent, f_end + len): the iovecs may span FPDUs. */
    size_t skip = b->sent, n = b->f_end + f->len - b->sent, k = 0;
    uint8_t *tail = g_malloc(n);
    iw_mr_lock(qp);
    for (int i = 0; i < b->niov && k < n; i++) {
      size_t l = b->iov[i].iov_len;
      if (skip >= l) {
        skip -= l;
        continue;
      }
      size_t c = MIN(l - skip, n - k);
      memcpy(tail + k, (uint8_t *) b->iov[i].iov_base + skip, c);
      k += c;
      skip = 0;
    }
    iw_mr_unlock(qp);
    g_free(qp->tail);
    qp->tail = tail;
    qp->tail_len = (uint32_t) n;
  }
  if (b != NULL)
    b->niov = b->nf = b->f_done = 0, b->len = b->sent = b->f_end = 0, b->lin_len = 0;
  tx_reset(&qp->tx);
}

/* Free the transmit state of a QP that is going away, and its caches of
 * work-queue entries (flushed before this). */
void
iw_tx_free(iw_qp_t *qp)
{
  rnicpi_cache_clear(&qp->swqe_cache);
  rnicpi_cache_clear(&qp->rwqe_cache);
  rnicpi_cache_clear(&qp->rresp_cache);
  if (qp->tx.b != NULL)
    g_free(qp->tx.b->cut);
  g_free(qp->tx.b);
  qp->tx.b = NULL;
  g_free(qp->tail);
  qp->tail = NULL;
  qp->tail_len = 0;
}

static void
tx_progress(iw_qp_t *qp, iw_work_t *w)
{
  iw_tx_t *t = &qp->tx;
  size_t moved = 0;
  if (!tx_batch_src_ok(qp, w))
    return;
  while (qp->fd >= 0) {
    if (moved >= IW_IO_BURST && iw_qp_posts_waiting(qp) && iw_tx_pending(qp)) {
      /* The rest in the next burst: the progress thread (the socket has
       * room), or the poller that owns the socket, comes back for it. */
      iw_qp_want_out(qp, TRUE);
      return;
    }
    /* Frame what can go now, as long as the batch has room. */
    for (;;) {
      iw_txbatch_t *b = t->b;
      if (b != NULL && !tx_batch_room(b))
        break;
      if (t->kind == IW_TX_NONE && !tx_next(qp, w))
        break;
      if (qp->fd < 0)
        return;
      uint8_t code = tx_src_next(qp);
      if (code != 0xff) {
        /* What is framed (from sources still there) goes out whole first. */
        if (t->b != NULL && t->b->sent < t->b->len)
          break;
        tx_src_lost(qp, t->rr.src_stag, code, w);
        continue; /* the Terminate is next */
      }
      if (t->b == NULL)
        t->b = g_new0(iw_txbatch_t, 1);
      iw_mr_lock(qp);
      tx_frame(qp);
      iw_mr_unlock(qp);
    }
    iw_txbatch_t *b = t->b;
    if (b == NULL || b->sent == b->len) {
      /* Drained: an orderly close sends its FIN now. */
      if (tx_fin_due(qp)) {
        shutdown(qp->fd, SHUT_WR);
        qp->cs = IW_CS_CLOSING;
        iw_timed_add(qp, 5000000);
      }
      iw_qp_want_out(qp, FALSE);
      return;
    }
    size_t before = b->sent;
    iw_mr_lock(qp);
    int r = tx_write(qp);
    iw_mr_unlock(qp);
    moved += b->sent - before;
    if (r < 0) {
      iw_tx_drop(qp);
      g_free(qp->tail);
      qp->tail = NULL;
      qp->tail_len = 0;
      iw_qp_conn_lost(qp, w);
      return;
    }
    tx_account(qp, w);
    if (r == 0) {
      tx_keep_cut(b);
      iw_qp_want_out(qp, TRUE);
      return;
    }
  }
}

void
iw_tx_progress(iw_qp_t *qp, iw_work_t *w)
{
  iw_mr_lock(qp);
  tx_progress(qp, w);
  iw_mr_unlock(qp);
}
