/*
 * vp/emul's completer, for both transports: a send work request's
 * completion (emul_complete_send: the work completion its opcode and
 * status give, on its send CQ), the requester's failures, which complete
 * the request and break the connection, the flush of a QP that goes to
 * ERROR (every outstanding request and receive completes flushed, in
 * order), and, across processes, the completion of the requests the
 * peer's ACK word covers (emul_ring_take_acks).  In process, a request
 * completes as soon as it executed (emul_exec.c); across processes, when
 * its answer comes (emul_ring_req.c: an ACK word, an ACK or a READ_RESP
 * frame).  The rules are the requester's (emul_exec.c): completions in
 * the order of the send queue, each request completed once, every one
 * outstanding flushed once the QP is in ERROR.
 *
 * SPDX-License-Identifier: MIT
 */
#include "emul_ring.h"

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
emul_qp_copy_whole(emul_qp_t *qp, const rnicpi_send_wr_t *wr, uint32_t len, emul_work_t *w)
{
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, len, w);
  flush_all(qp, w);
}

void
emul_qp_set_error(emul_qp_t *qp, emul_work_t *w)
{
  qp->state = RNICPI_QPS_ERROR;
  flush_all(qp, w);
}

/* Requests the peer answers with its ACK word rather than a frame. */
static gboolean
x_acked_by_word(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_SEND || op == RNICPI_WR_SEND_INV || op == RNICPI_WR_RDMA_WRITE ||
         op == RNICPI_WR_IMM_DATA || op == RNICPI_WR_RDMA_WRITE_IMM;
}

/* Requester: complete, in order, the oldest issued requests the peer's ACK
 * word covers.  TRUE when one completed.  They stop at the first Read or
 * atomic, whose answer comes as a frame; while a copy runs (qp->xcopying)
 * its request is out of the queue, and nothing completes. */
gboolean
emul_ring_take_acks(emul_qp_t *qp, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  if (x == NULL || x->seg == NULL || qp->xcopying)
    return FALSE;
  uint64_t a = __atomic_load_n(&x->seg->ring[1 - x->side].acked, __ATOMIC_ACQUIRE);
  __atomic_store_n(&x->acked_seen, a, __ATOMIC_RELAXED);  /* emul_ring_pending reads it */
  gboolean any = FALSE;
  emul_swqe_t *s;
  while ((s = emul_wq_peek(&qp->sq)) != NULL && s->issued && s->seq < a &&
         x_acked_by_word(s->wr.opcode)) {
    emul_wq_pop(&qp->sq);
    emul_complete_send(qp, &s->wr, RNICPI_WC_SUCCESS, s->len, w);
    emul_wq_put(&qp->sq, s);
    any = TRUE;
  }
  return any;
}
