/*
 * vp/ib completions of work requests: each verbs completion translated
 * through the shadow of its request, the send queue's delivered in the
 * order of posting, a queue pair's faults raised, and what the device
 * leaves completed as flushed.
 *
 * Every work request posted is first written into its queue's shadow (the
 * caller's wr_id, the RNIC-PI opcode, the bytes it moves), and the verbs
 * wr_id names that shadow (ib.h).  A verbs completion is translated
 * through it, so an error completion, whose opcode verbs leaves undefined,
 * still says what completed.  A request posted to a queue pair known to be
 * in ERROR is not given to the device (siw would never complete it): it
 * stays in the shadow, and once the device has had its time to flush what
 * it holds, the sweep (ib_progress.c) completes the rest as flushed.  Sends
 * complete in order on an RC queue pair, so a completion for entry s also
 * retires the unsignaled entries before it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <string.h>

#include "ib.h"

/* ---- shadows ------------------------------------------------------------- */

static rnicpi_wc_status_t
wc_status(enum ibv_wc_status s)
{
  switch (s) {
  case IBV_WC_SUCCESS: return RNICPI_WC_SUCCESS;
  case IBV_WC_LOC_LEN_ERR: return RNICPI_WC_LOC_LEN_ERR;
  case IBV_WC_LOC_QP_OP_ERR: return RNICPI_WC_LOC_QP_OP_ERR;
  case IBV_WC_LOC_PROT_ERR: return RNICPI_WC_LOC_PROT_ERR;
  case IBV_WC_LOC_ACCESS_ERR: return RNICPI_WC_LOC_PROT_ERR;
  case IBV_WC_WR_FLUSH_ERR: return RNICPI_WC_WR_FLUSH_ERR;
  case IBV_WC_MW_BIND_ERR: return RNICPI_WC_MW_BIND_ERR;
  case IBV_WC_BAD_RESP_ERR: return RNICPI_WC_BAD_RESP_ERR;
  case IBV_WC_REM_ACCESS_ERR: return RNICPI_WC_REM_ACCESS_ERR;
  case IBV_WC_REM_INV_REQ_ERR:
  case IBV_WC_REM_OP_ERR: return RNICPI_WC_REM_OP_ERR;
  case IBV_WC_RETRY_EXC_ERR: return RNICPI_WC_TRANSPORT_ERR;
  case IBV_WC_RNR_RETRY_EXC_ERR: return RNICPI_WC_RNR_ERR;
  default: return RNICPI_WC_GENERAL_ERR;
  }
}

static void
wc_from_shadow(ib_qp_t *qp, const ib_shadow_t *s, rnicpi_wc_status_t st, rnicpi_wc_t *wc)
{
  memset(wc, 0, sizeof(*wc));
  wc->wr_id = s->wr_id;
  wc->qp_ctx = qp->base.al_ctx;
  wc->status = st;
  wc->opcode = (rnicpi_wc_opcode_t) s->opcode;
  wc->byte_len = st == RNICPI_WC_SUCCESS ? s->len : 0;
  wc->rkey = s->rkey;
  if (qp->type == RNICPI_QPT_UD && s->opcode == RNICPI_WC_RECV)
    wc->flags |= RNICPI_WC_UD;
}

/* A send-queue entry is done (@st: how): what it held goes. */
static inline void
sq_retire(ib_qp_t *qp, ib_shadow_t *s, rnicpi_wc_status_t st)
{
  qp->sq_verbs -= s->pieces;
  s->pieces = 0;
  if (G_UNLIKELY(s->mw != NULL))
    ib_mw_retire(qp->dev, s, st);
}

/* The cause to raise for the first error completion @st of an operation
 * @op (a fault found at post brings its own). */
static rnicpi_async_cause_t
cause_of(rnicpi_wc_status_t st, rnicpi_wc_opcode_t op)
{
  switch (st) {
  case RNICPI_WC_SUCCESS:
  case RNICPI_WC_WR_FLUSH_ERR: return RNICPI_AE_UNSPECIFIED;
  case RNICPI_WC_REM_ACCESS_ERR: return RNICPI_AE_REMOTE_ACCESS;
  case RNICPI_WC_REM_OP_ERR: return RNICPI_AE_REMOTE;
  case RNICPI_WC_LOC_LEN_ERR: return op == RNICPI_WC_RECV ? RNICPI_AE_PROTOCOL : RNICPI_AE_LOCAL;
  case RNICPI_WC_LOC_PROT_ERR: return op == RNICPI_WC_RECV ? RNICPI_AE_LOCAL_RECV : RNICPI_AE_LOCAL;
  default: return RNICPI_AE_LOCAL;
  }
}

/* A receive that invalidated a window (a Send with Invalidate). */
static void
recv_invalidated(ib_qp_t *qp, const rnicpi_wc_t *wc)
{
  if (wc->status == RNICPI_WC_SUCCESS && (wc->flags & RNICPI_WC_WITH_INV))
    ib_mw_invalidated(qp->dev, (uint32_t) wc->rkey);
}

/* The status a send-queue completion @v of @qp stands for. */
static rnicpi_wc_status_t
send_status(ib_qp_t *qp, const ib_shadow_t *s, const struct ibv_wc *v,
            rnicpi_async_cause_t *cause)
{
  rnicpi_wc_status_t st = wc_status(v->status);
  if (v->status == IBV_WC_LOC_QP_OP_ERR && __atomic_load_n(&qp->torn_down, __ATOMIC_ACQUIRE)) {
    /* Cut off by the consumer's own end of the queue pair (siw:
     * ib_qp_torn_down()): flushed, no fault of its own. */
    *cause = RNICPI_AE_UNSPECIFIED;
    return RNICPI_WC_WR_FLUSH_ERR;
  }
  if (s->fail != 0 && st == RNICPI_WC_SUCCESS) {
    /* The stand-in of a request that failed at post: its turn came. */
    *cause = (rnicpi_async_cause_t) s->fail_cause;
    return (rnicpi_wc_status_t) s->fail;
  }
  /* RNIC-PI (as the RDMAC verbs) fails an invalidation it cannot do as
   * a window operation; rxe says LOC_QP_OP_ERR. */
  if (s->opcode == RNICPI_WC_LOCAL_INV && st != RNICPI_WC_SUCCESS && st != RNICPI_WC_WR_FLUSH_ERR)
    st = RNICPI_WC_MW_BIND_ERR;
  if (v->status == IBV_WC_REM_INV_REQ_ERR &&
      (s->opcode == RNICPI_WC_RDMA_WRITE || s->opcode == RNICPI_WC_RDMA_READ)) {
    /* IB answers a Write or Read the peer's queue pair does not allow
     * with Invalid Request: for RNIC-PI that is a refused access. */
    st = RNICPI_WC_REM_ACCESS_ERR;
  }
  *cause = cause_of(st, (rnicpi_wc_opcode_t) s->opcode);
  return st;
}

/* A message received on a queue pair whose accept is in flight proves the
 * connection up: iWARP's requester sends only once ESTABLISHED, and siw
 * moves the passive QP to RTS (siw_accept()) before rdma_cm's ESTABLISHED
 * reaches user space.  A server that reads its completions before its
 * connection events may answer the first message at once. */
static void
qp_accept_proven(ib_qp_t *qp)
{
  if (G_LIKELY(qp->state != IB_QP_ACCEPTING))
    return;
  rnicpi_spin_lock(&qp->sq_lock);
  rnicpi_spin_lock(&qp->rq_lock);
  if (qp->state == IB_QP_ACCEPTING)
    qp->state = IB_QP_RTS;
  rnicpi_spin_unlock(&qp->rq_lock);
  rnicpi_spin_unlock(&qp->sq_lock);
}

/* One verbs completion of @qp: its RNIC-PI completions go to @out.
 * Send-queue completions leave in the order the requests were posted,
 * as RNIC-PI promises: siw completes an RDMA Read
 * when its response arrives, after the requests behind it, so a request
 * done early waits in its shadow for those before it. */
void
ib_qp_complete(ib_qp_t *qp, const struct ibv_wc *v, ib_sink_t *out)
{
  unsigned kind = IB_WRID_KIND(v->wr_id);
  rnicpi_wc_t wc;
  if (kind == IB_KIND_SRQ) {
    if (qp->srq != NULL && ib_srq_complete(qp, v, &wc)) {
      ib_qp_received(&wc, v);
      if (wc.status == RNICPI_WC_SUCCESS)
        qp_accept_proven(qp);
      recv_invalidated(qp, &wc);
      ib_sink_put(out, &wc);
      if (wc.status != RNICPI_WC_SUCCESS)
        qp_fault(qp, cause_of(wc.status, RNICPI_WC_RECV));
    }
    return;
  }
  if (IB_WRID_SERIAL(v->wr_id) != qp->serial)
    return; /* of an incarnation before a reset */
  uint64_t seq = IB_WRID_SEQ(v->wr_id);
  rnicpi_async_cause_t fault = RNICPI_AE_UNSPECIFIED;
  gboolean failed = FALSE;
  if (kind == IB_KIND_RECV) {
    /* Receives complete in order on an RC queue pair. */
    rnicpi_spin_lock(&qp->rq_lock);
    ib_wq_t *q = &qp->rq;
    gboolean have = seq >= q->head && seq < q->tail && !wq_at(q, seq)->done;
    if (have) {
      ib_shadow_t *s = wq_at(q, seq);
      rnicpi_wc_status_t st = wc_status(v->status);
      /* A receive whose buffer failed map_sges at post: the device's
       * error is RNIC-PI's local protection error. */
      if (s->fail != 0 && st != RNICPI_WC_SUCCESS && st != RNICPI_WC_WR_FLUSH_ERR)
        st = (rnicpi_wc_status_t) s->fail;
      wc_from_shadow(qp, s, st, &wc);
      wc.opcode = RNICPI_WC_RECV;
      ib_qp_received(&wc, v);
      if (qp->type == RNICPI_QPT_UD)
        ib_ud_recv_complete(qp, s, seq, v, &wc);
      s->done = 1;
      while (q->head < q->tail && wq_at(q, q->head)->done)
        q->head++;
    }
    rnicpi_spin_unlock(&qp->rq_lock);
    if (!have)
      return;
    if (wc.status == RNICPI_WC_SUCCESS)
      qp_accept_proven(qp);
    recv_invalidated(qp, &wc);
    ib_sink_put(out, &wc);
    if (wc.status != RNICPI_WC_SUCCESS) {
      failed = TRUE;
      fault = cause_of(wc.status, RNICPI_WC_RECV);
    }
  } else {
    rnicpi_spin_lock(&qp->sq_lock);
    ib_wq_t *q = &qp->sq;
    ib_shadow_t *s0 = wq_at(q, seq);
    /* The usual completion, retired here as the loop below would retire
     * it: the head's own success, of a request that failed at nothing
     * when posted and binds no window, with nothing the device completed
     * past it (q->seen), so that it is the only one delivered. */
    if (G_LIKELY(seq == q->head && seq < q->tail && q->seen <= seq + 1 && v->status == IBV_WC_SUCCESS &&
                 !s0->done && s0->fail == 0 && s0->mw == NULL)) {
      s0->status = RNICPI_WC_SUCCESS;
      s0->fail_cause = RNICPI_AE_UNSPECIFIED;
      s0->done = 1;
      q->seen = seq + 1;
      sq_retire(qp, s0, RNICPI_WC_SUCCESS);
      if (s0->signaled) {
        rnicpi_wc_t *dst = ib_sink_slot(out, &wc);
        wc_from_shadow(qp, s0, RNICPI_WC_SUCCESS, dst);
        ib_sink_commit(out, dst, &wc);
      }
      q->head = seq + 1;
      rnicpi_spin_unlock(&qp->sq_lock);
      return;
    }
    /* A sequence behind the head, or one marked done, was completed
     * already (the sweep). */
    if (seq >= q->head && seq < q->tail && !wq_at(q, seq)->done) {
      ib_shadow_t *s = wq_at(q, seq);
      rnicpi_async_cause_t cause;
      s->status = (uint8_t) send_status(qp, s, v, &cause);
      s->fail_cause = (uint8_t) cause;
      s->done = 1;
      if (seq >= q->seen)
        q->seen = seq + 1;
      /* Deliver what is done from the head on; an unsignaled request the
       * device took before one it completed is done without a word. */
      while (q->head < q->tail) {
        ib_shadow_t *h = wq_at(q, q->head);
        if (h->done) {
          sq_retire(qp, h, (rnicpi_wc_status_t) h->status);
          if (h->signaled || h->status != RNICPI_WC_SUCCESS) {
            wc_from_shadow(qp, h, (rnicpi_wc_status_t) h->status, &wc);
            ib_sink_put(out, &wc);
          }
          if (h->status != RNICPI_WC_SUCCESS && !failed) {
            failed = TRUE;
            fault = (rnicpi_async_cause_t) h->fail_cause;
          }
        } else if (q->head < q->seen && !h->signaled && h->given) {
          sq_retire(qp, h, RNICPI_WC_SUCCESS);
        } else {
          break;
        }
        q->head++;
      }
    }
    rnicpi_spin_unlock(&qp->sq_lock);
  }
  if (failed)
    qp_fault(qp, fault);
}

/* A successful receive's length, immediate data and invalidated key. */
void
ib_qp_received(rnicpi_wc_t *wc, const struct ibv_wc *v)
{
  if (wc->status != RNICPI_WC_SUCCESS)
    return;
  wc->byte_len = v->byte_len;
  if (v->wc_flags & IBV_WC_WITH_IMM) {
    wc->flags |= RNICPI_WC_WITH_IMM;
    wc->imm_data = ntohl(v->imm_data);
  }
  if (v->wc_flags & IBV_WC_WITH_INV) {
    wc->flags |= RNICPI_WC_WITH_INV;
    wc->rkey = v->invalidated_rkey;
  }
}

gboolean
ib_qp_outstanding(ib_qp_t *qp)
{
  return qp->sq.head != qp->sq.tail || qp->rq.head != qp->rq.tail;
}

/* Complete every request still in the shadows as flushed (the queue pair
 * is in ERROR and the device has stopped flushing).  With dev->lock held. */
void
ib_qp_flush_rest(ib_qp_t *qp, rnicpi_notify_batch_t *b)
{
  ib_cq_drain(qp->scq, b);
  if (qp->rcq != qp->scq)
    ib_cq_drain(qp->rcq, b);
  rnicpi_wc_t wc;
  rnicpi_spin_lock(&qp->sq_lock);
  for (; qp->sq.head != qp->sq.tail; qp->sq.head++) {
    ib_shadow_t *s = wq_at(&qp->sq, qp->sq.head);
    /* An unsignaled request the device took has most likely completed
     * without a word (a device flushes, with an entry, what it did not
     * execute); one it never saw is completed here. */
    if (s->done) {
      /* Completed by the device, waiting for those before it. */
      sq_retire(qp, s, (rnicpi_wc_status_t) s->status);
      if (s->signaled || s->status != RNICPI_WC_SUCCESS) {
        wc_from_shadow(qp, s, (rnicpi_wc_status_t) s->status, &wc);
        ib_cq_push(qp->scq, &wc, b);
      }
      continue;
    }
    if (!s->signaled && s->given) {
      sq_retire(qp, s, RNICPI_WC_SUCCESS);
      continue;
    }
    /* A fault found at post whose turn came at once fails; the rest flush. */
    rnicpi_wc_status_t st = s->fail != 0 && !s->given ? (rnicpi_wc_status_t) s->fail
                                                      : RNICPI_WC_WR_FLUSH_ERR;
    sq_retire(qp, s, st);
    wc_from_shadow(qp, s, st, &wc);
    ib_cq_push(qp->scq, &wc, b);
  }
  rnicpi_spin_unlock(&qp->sq_lock);
  rnicpi_spin_lock(&qp->rq_lock);
  for (; qp->rq.head != qp->rq.tail; qp->rq.head++) {
    if (wq_at(&qp->rq, qp->rq.head)->done)
      continue;
    wc_from_shadow(qp, wq_at(&qp->rq, qp->rq.head), RNICPI_WC_WR_FLUSH_ERR, &wc);
    wc.opcode = RNICPI_WC_RECV;
    ib_cq_push(qp->rcq, &wc, b);
  }
  rnicpi_spin_unlock(&qp->rq_lock);
  qp->flush_due = FALSE;
}

/* The device's QP_FATAL, held until its queues were drained (dev->lock
 * held): raised without a cause only when no error completion gave one
 * (qp_fault raised that completion's cause, which is the same fault). */
void
ib_qp_fatal_settle(ib_qp_t *qp)
{
  if (!qp->fatal_due)
    return;
  qp->fatal_due = FALSE;
  if (qp->err_cause != RNICPI_AE_UNSPECIFIED)
    return;
  rnicpi_async_event_t ev =
    rnicpi_async_event(RNICPI_ASYNC_QP_FATAL, qp->base.al_ctx, RNICPI_AE_UNSPECIFIED);
  ib_dev_queue_async(qp->dev, &ev);
}

/* ---- shared receive queues ------------------------------------------------ */

gboolean
ib_srq_complete(ib_qp_t *qp, const struct ibv_wc *v, rnicpi_wc_t *out)
{
  ib_srq_t *srq = qp->srq;
  if (IB_WRID_SERIAL(v->wr_id) != srq->serial)
    return FALSE;
  uint64_t slot = IB_WRID_SEQ(v->wr_id);
  gboolean have = FALSE;
  rnicpi_spin_lock(&srq->lock);
  if (slot < srq->nslots && !srq->slot[slot].done) {
    ib_shadow_t *s = &srq->slot[slot];
    wc_from_shadow(qp, s, wc_status(v->status), out);
    out->opcode = RNICPI_WC_RECV;
    s->done = 1;
    srq->free[srq->nfree++] = (uint32_t) slot;
    srq->posted--;
    have = TRUE;
  }
  rnicpi_spin_unlock(&srq->lock);
  return have;
}
