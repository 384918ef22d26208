/*
 * vp/emul's completer, for both transports (rxe_completer's model): a send
 * work request's completion (emul_complete_send: the work completion its
 * opcode and status give, on its send CQ), the requester's failures, which
 * complete the request and break the connection, the flush of a QP that
 * goes to ERROR (every outstanding request and receive completes flushed,
 * in order), and, across processes, emul_comp_run: the completion of the
 * requests the peer's ACK word covers, then of the answer the transport
 * decoded into a packet (a Read Response, an atomic's ACK).  In process, a
 * request completes as soon as it executed (emul_xport_local.c); across
 * processes, when its answer comes (emul_ring_resp.c decodes ACK and
 * READ_RESP frames).  The rules are the requester's (emul_exec.c):
 * completions in the order of the send queue, each request completed
 * once, every one outstanding flushed once the QP is in ERROR.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "emul_ring.h"
#include "emul_xport.h"

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
    /* The oldest request's copy still runs (emul_ring_copy.c, "Long
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

/* Complete, in order, the oldest issued requests the peer's ACK word
 * covers.  TRUE when one completed.  They stop at the first Read or
 * atomic, whose answer comes as a frame; while a copy runs (qp->xcopying)
 * its request is out of the queue, and nothing completes. */
static gboolean
comp_acks(emul_qp_t *qp, emul_work_t *w)
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

/* Whether @a is the answer the oldest unanswered request @s asked for, and
 * no other: a Read's Response of its length, an atomic's ACK of 8 bytes. */
static gboolean
comp_fits(const emul_swqe_t *s, const emul_pkt_t *a)
{
  rnicpi_wr_opcode_t op = s != NULL ? s->wr.opcode : RNICPI_WR_SEND;
  return s != NULL && s->issued && s->seq == a->seq && !a->malformed &&
         (a->op == RNICPI_WR_RDMA_READ ? (op == RNICPI_WR_RDMA_READ || op == RNICPI_WR_RDMA_READ_INV) &&
                                         a->len == s->len
                                       : rnicpi_wr_is_atomic(op) && a->len == 8);
}

/* Read Response @a's bytes into the sink of @s (out of the queue), with the
 * locks let go for a long one when a->unlock (emul_ring_copy.c, "Long
 * copies").  FALSE when it failed or the QP was flushed meanwhile: @s
 * completed either way. */
static gboolean
comp_read_resp(emul_qp_t *qp, emul_swqe_t *s, const emul_pkt_t *a, emul_work_t *w)
{
  /* A sink of windows is translated again now: where the bytes land is
   * what the windows say when they land (under the lock, then). */
  rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
  uint64_t sink_len;
  const rnicpi_sge_t *sg = emul_req_local(qp, &s->wr, win, &sink_len);
  rnicpi_wc_status_t bad = RNICPI_WC_LOC_PROT_ERR;
  if (sg != NULL) {
    emul_hold_t h;
    gboolean unlocked = a->unlock && emul_ring_copy_unlocks(qp, a->len, FALSE) &&
                        emul_ring_copy_hold(qp, &h, sg, s->wr.num_sge);
    emul_xconn_t *held = NULL;
    if (unlocked) {
      qp->xcopy_answered = s;
      qp->xcopy_flushed = FALSE;
      held = emul_ring_copy_begin(qp, &qp->xcopying);
    }
    emul_scatter(sg, s->wr.num_sge, a->buf, a->len);
    if (unlocked) {
      emul_hold_drop(&h);
      emul_ring_copy_end(qp, held, &qp->xcopying);  /* the lock back first */
      qp->xcopy_answered = NULL;
      if (qp->xcopy_flushed) {
        emul_qp_copy_flushed(qp, &s->wr, w);  /* the connection broke meanwhile */
        return FALSE;
      }
    }
    bad = RNICPI_WC_MEM_MGT_ERR;
  }
  if (sg == NULL || !emul_read_inv_done(qp, &s->wr)) {
    emul_req_fail_local(qp, &s->wr, bad, w);
    return FALSE;
  }
  return TRUE;
}

gboolean
emul_comp_run(emul_qp_t *qp, const emul_pkt_t *ans, emul_work_t *w)
{
  gboolean any = comp_acks(qp, w);  /* the peer raised its ACK word before this answer */
  if (ans == NULL)
    return any;
  emul_swqe_t *s = emul_wq_peek(&qp->sq);
  if (!comp_fits(s, ans)) {
    emul_ring_peer_violation(qp->x, w, "an answer (op %u, %u bytes) to request %" G_GUINT64_FORMAT
                             " that does not match the oldest one it has not answered",
                             ans->op == RNICPI_WR_RDMA_READ ? X_OP_READ_RESP : X_OP_ACK,
                             (uint32_t) ans->len, (guint64) ans->seq);
    return FALSE;
  }
  emul_wq_pop(&qp->sq);
  uint32_t len = (uint32_t) ans->len;
  gboolean ok = TRUE;
  if (ans->op == RNICPI_WR_RDMA_READ)
    ok = comp_read_resp(qp, s, ans, w);
  else
    memcpy((void *) (uintptr_t) s->sge[0].addr, &ans->old, 8);
  if (ok)
    emul_complete_send(qp, &s->wr, RNICPI_WC_SUCCESS, len, w);
  emul_wq_put(&qp->sq, s);
  return ok;
}
