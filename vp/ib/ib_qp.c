/*
 * vp/ib queue pairs, shared receive queues and the data path.
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
#include <errno.h>
#include <string.h>

#include "ib.h"

/* ---- shadows ------------------------------------------------------------- */

static void
wq_init(ib_wq_t *q, uint32_t n)
{
  q->size = 1;
  while (q->size < MAX(n, 1u))
    q->size <<= 1;
  q->e = g_new0(ib_shadow_t, q->size);
  q->head = q->tail = 0;
}

static inline ib_shadow_t *
wq_at(ib_wq_t *q, uint64_t seq)
{
  return &q->e[seq & (q->size - 1)];
}

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

static rnicpi_wc_opcode_t
wc_opcode_of(rnicpi_wr_opcode_t op)
{
  switch (op) {
  case RNICPI_WR_RDMA_WRITE:
  case RNICPI_WR_RDMA_WRITE_IMM: return RNICPI_WC_RDMA_WRITE;
  case RNICPI_WR_RDMA_READ:
  case RNICPI_WR_RDMA_READ_INV: return RNICPI_WC_RDMA_READ;
  case RNICPI_WR_ATOMIC_CMP_SWP: return RNICPI_WC_CMP_SWP;
  case RNICPI_WR_ATOMIC_FETCH_ADD: return RNICPI_WC_FETCH_ADD;
  case RNICPI_WR_BIND_MW: return RNICPI_WC_BIND_MW;
  case RNICPI_WR_LOCAL_INV: return RNICPI_WC_LOCAL_INV;
  case RNICPI_WR_FAST_REG: return RNICPI_WC_FAST_REG;
  default: return RNICPI_WC_SEND;
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

/* The consumer ends the queue pair's work (qp_to_error, disconnect,
 * destroy), before the device hears of it: siw completes the request it
 * was transmitting when its connection drops with LOC_QP_OP_ERR and
 * raises QP_FATAL (siw_qp_sq_process, siw_qp_tx.c), where RNIC-PI has
 * a request in flight at that moment flushed (or done). */
void
ib_qp_torn_down(ib_qp_t *qp)
{
  __atomic_store_n(&qp->torn_down, TRUE, __ATOMIC_RELEASE);
}

/* The queue pair went to ERROR (a completion in error, an asynchronous
 * event, a disconnect): posts from now stay out of the device, and the
 * sweep completes what the device leaves. */
void
ib_qp_set_error(ib_qp_t *qp)
{
  rnicpi_spin_lock(&qp->sq_lock);
  rnicpi_spin_lock(&qp->rq_lock);
  qp->state = IB_QP_ERROR;
  rnicpi_spin_unlock(&qp->rq_lock);
  rnicpi_spin_unlock(&qp->sq_lock);
}

rnicpi_status_t
ib_qp_modify_verbs(ib_qp_t *qp, enum ibv_qp_state to)
{
  struct ibv_qp_attr a = { .qp_state = to };
  int err = ibv_modify_qp(qp->qp, &a, IBV_QP_STATE);
  return err == 0 ? RNICPI_OK : ib_status_of_errno(err);
}

/* The queue pair failed, or was flushed (@cause UNSPECIFIED): ERROR; a
 * first fault of its own is raised and breaks the connection, and the
 * sweep completes what the device leaves once its own flush stops. */
static void
qp_fault(ib_qp_t *qp, rnicpi_async_cause_t cause)
{
  if (cause != RNICPI_AE_UNSPECIFIED && qp->err_cause == RNICPI_AE_UNSPECIFIED) {
    qp->err_cause = cause;
    qp->break_due = TRUE;
  }
  if (qp->state != IB_QP_ERROR)
    ib_qp_set_error(qp);
  __atomic_store_n(&qp->sweep_at, g_get_monotonic_time() + (gint64) ib_config.sweep_ms * 1000,
                   __ATOMIC_RELAXED);
  if (!qp->flush_due) {
    qp->flush_due = TRUE;
    ib_dev_sweep_soon(qp->dev);
  }
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

/* ---- queue pairs ---------------------------------------------------------- */

/* A queue pair's inbound rights: the remote ones of a region's. */
int
ib_qp_access_to_verbs(uint32_t access)
{
  return ib_access_to_verbs(access) &
         (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
}

/* RESET -> INIT with the device's port: receives may be posted from here
 * (rdma_cm moves it on to RTR and RTS once connected). */
static rnicpi_status_t
qp_to_init(ib_qp_t *qp)
{
  struct ibv_qp_attr a = {
    .qp_state = IBV_QPS_INIT,
    .qp_access_flags = (unsigned) ib_qp_access_to_verbs(qp->access),
    .pkey_index = 0,
    .port_num = qp->dev->port,
  };
  int mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS;
  if (!qp->dev->iwarp)
    mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (qp->type == RNICPI_QPT_UD) {
    /* IBTA 11.2.4.2: a UD queue pair has a Q_Key and no remote rights. */
    a.qkey = qp->qkey;
    mask = (mask & ~IBV_QP_ACCESS_FLAGS) | IBV_QP_QKEY;
  }
  int err = ibv_modify_qp(qp->qp, &a, mask);
  return err == 0 ? RNICPI_OK : ib_status_of_errno(err);
}

/* Reserve room in a verbs CQ for @n more requests (its queue pairs' and
 * SRQs'), @promise of them the consumer's own (a bind of a narrow window
 * takes two verbs requests for one): grow it when the device can, refuse
 * when it cannot.  Only the consumer's requests can go past the ring's
 * depth: the CQ is watched (drained by the progress thread at each
 * completion, which costs a wakeup each) only when they can. */
static rnicpi_status_t
cq_reserve(ib_cq_t *cq, uint32_t n, uint32_t promise)
{
  uint64_t need = (uint64_t) cq->users + n;
  if (need > cq->vsize) {
    if (need > cq->dev->caps.max_cqe || ibv_resize_cq(cq->cq, (int) need) != 0) {
      g_message("%s: a queue pair needs %" G_GUINT64_FORMAT " entries in a CQ of %u and the "
                "device cannot grow it: create the CQ with a larger depth (ITAPI_IB_CQ_MIN)",
                cq->dev->name, need, cq->vsize);
      return RNICPI_ELIMIT;
    }
    cq->vsize = (uint32_t) cq->cq->cqe;
  }
  cq->users += n;
  cq->promised += promise;
  if (cq->promised > cq->ring.depth && !cq->watch) {
    cq->watch = TRUE;
    ibv_req_notify_cq(cq->cq, 0);
  }
  return RNICPI_OK;
}

static void
cq_release(ib_cq_t *cq, uint32_t n, uint32_t promise)
{
  cq->users -= n;
  cq->promised -= promise;
  if (cq->promised <= cq->ring.depth)
    cq->watch = FALSE; /* the next channel event is the consumer's arm alone */
}

static rnicpi_status_t
ib_qp_create(rnicpi_pd_t *p, const rnicpi_qp_attr_t *attr, uint64_t al_ctx, rnicpi_qp_t **out)
{
  ib_dev_t *dev = to_ib_dev(p->dev);
  const rnicpi_caps_t *c = &dev->caps;
  if (attr->type != RNICPI_QPT_RC &&
      (attr->type != RNICPI_QPT_UD || !(c->features & RNICPI_CAP_UD)))
    return RNICPI_ENOTSUP;
  if (attr->max_send_wr > c->max_qp_wr || attr->max_recv_wr > c->max_qp_wr ||
      attr->max_send_sge > c->max_send_sge || attr->max_recv_sge > c->max_recv_sge ||
      attr->max_rdma_write_sge > c->max_rdma_write_sge ||
      attr->max_rdma_read_sge > c->max_rdma_read_sge || attr->ird > c->max_ird ||
      attr->ord > c->max_ord)
    return RNICPI_ELIMIT;
  ib_qp_t *qp = g_new0(ib_qp_t, 1);
  qp->base.pd = p;
  qp->base.al_ctx = al_ctx;
  qp->dev = dev;
  qp->scq = to_ib_cq(attr->send_cq);
  qp->rcq = to_ib_cq(attr->recv_cq);
  qp->srq = attr->srq != NULL ? to_ib_srq(attr->srq) : NULL;
  qp->type = attr->type;
  qp->access = attr->access;
  qp->ird = attr->ird;
  qp->ord = attr->ord;
  /* A Read of more segments than the device takes goes out in pieces of
   * one segment each (read_pieces). */
  uint32_t read_sge = attr->max_rdma_read_sge > dev->read_sge_dev ? 1u : attr->max_rdma_read_sge;
  qp->max_send_sge = MAX(MAX(attr->max_send_sge, attr->max_rdma_write_sge), MAX(read_sge, 1u));
  qp->max_recv_sge = MAX(attr->max_recv_sge, 1u);
  qp->lim_send_sge = attr->max_send_sge;
  qp->lim_write_sge = attr->max_rdma_write_sge;
  qp->lim_read_sge = attr->max_rdma_read_sge;
  qp->max_inline = dev->inline_max;
  qp->qkey = attr->qkey;

  /* A bind of a bound narrow window is two verbs requests (ib_mw.c), a
   * Read of more segments than the device takes one per segment at most
   * (read_pieces), and on siw a short Read across a page two (short_split
   * below; its capability record offers half the device's requests).  The
   * verbs queue holds the most that many requests take, as far as the
   * device goes; past that a post waits for room (ib_post_send). */
  uint64_t per = 1;
  if (attr->type == RNICPI_QPT_RC && (c->features & RNICPI_CAP_MW_NARROW))
    per = 2;
  if (attr->type == RNICPI_QPT_RC && attr->max_rdma_read_sge > dev->read_sge_dev)
    per = MAX(per, attr->max_rdma_read_sge);
  if (attr->type == RNICPI_QPT_RC && dev->short_split)
    per *= 2;
  uint32_t send_need = (uint32_t) MIN(per * attr->max_send_wr, (uint64_t) dev->verbs_max_qp_wr);
  send_need = MAX(send_need, attr->max_send_wr);
  uint32_t recv_need = qp->srq != NULL ? 0 : attr->max_recv_wr;
  rnicpi_status_t st = cq_reserve(qp->scq, send_need, attr->max_send_wr);
  if (st == RNICPI_OK && (st = cq_reserve(qp->rcq, recv_need, recv_need)) != RNICPI_OK)
    cq_release(qp->scq, send_need, attr->max_send_wr);
  if (st != RNICPI_OK) {
    g_free(qp);
    return st;
  }
  struct ibv_qp_init_attr ia = {
    .qp_context = qp,
    .send_cq = qp->scq->cq,
    .recv_cq = qp->rcq->cq,
    .srq = qp->srq != NULL ? qp->srq->srq : NULL,
    .cap = {
      .max_send_wr = MAX(send_need, 1u),
      .max_recv_wr = qp->srq != NULL ? 0 : MAX(attr->max_recv_wr, 1u),
      .max_send_sge = MAX(qp->max_send_sge, dev->short_split ? 2u : 1u),
      .max_recv_sge = qp->max_recv_sge,
      .max_inline_data = dev->inline_max,
    },
    .qp_type = attr->type == RNICPI_QPT_UD ? IBV_QPT_UD : IBV_QPT_RC,
    .sq_sig_all = 0,
  };
  qp->init_attr = ia;
  errno = 0;
  qp->qp = ibv_create_qp(to_ib_pd(p)->pd, &ia);
  if (qp->qp == NULL && ia.cap.max_inline_data > 0) {
    /* The probe's small queue pair took inline data; one with more
     * segments or requests may not (a device bounds its WQE's size). */
    ia = qp->init_attr;
    ia.cap.max_inline_data = 0;
    qp->init_attr = ia;
    qp->max_inline = 0;
    errno = 0;
    qp->qp = ibv_create_qp(to_ib_pd(p)->pd, &ia);
  }
  if (qp->qp == NULL) {
    int err = errno;
    if (err == 0) {
      /* The driver's library refused what the kernel made without
       * saying why (libsiw: an mmap key it takes for invalid). */
      g_message("%s: the device's verbs library refused a new queue pair and gave no reason",
                dev->name);
      err = EIO;
    }
    cq_release(qp->scq, send_need, attr->max_send_wr);
    cq_release(qp->rcq, recv_need, recv_need);
    g_free(qp);
    return err == ENOMEM || err == EINVAL ? RNICPI_ELIMIT : ib_status_of_errno(err);
  }
  qp->base.qp_num = qp->qp->qp_num;
  wq_init(&qp->sq, attr->max_send_wr);
  wq_init(&qp->rq, qp->srq != NULL ? 1 : attr->max_recv_wr);
  if (qp->type == RNICPI_QPT_UD)
    qp->rq_sge = g_new0(struct ibv_sge, (gsize) qp->rq.size * qp->max_recv_sge);
  qp->sq_need = send_need;
  qp->sq_max = attr->max_send_wr;
  qp->rq_max = attr->max_recv_wr;
  qp->serial = ib_dev_serial(dev);
  if ((st = qp_to_init(qp)) != RNICPI_OK ||
      (qp->type == RNICPI_QPT_UD && (st = ib_ud_qp_up(qp)) != RNICPI_OK)) {
    g_warning("%s: cannot move new QP %u to %s (port %u): %s; ibv_devinfo -d %s shows the "
              "port's state", dev->name, qp->base.qp_num,
              qp->type == RNICPI_QPT_UD ? "RTS" : "INIT", dev->port, rnicpi_status_message(st),
              dev->name);
    ibv_destroy_qp(qp->qp);
    cq_release(qp->scq, send_need, attr->max_send_wr);
    cq_release(qp->rcq, recv_need, recv_need);
    g_free(qp->sq.e);
    g_free(qp->rq.e);
    g_free(qp->rq_sge);
    g_free(qp);
    return st;
  }
  /* RNIC-PI 1.3: a UD queue pair is created in RTS. */
  qp->state = qp->type == RNICPI_QPT_UD ? IB_QP_RTS : IB_QP_IDLE;
  rnicpi_spin_lock(&dev->qp_lock);
  g_hash_table_insert(dev->qps, GUINT_TO_POINTER(qp->base.qp_num), qp);
  rnicpi_spin_unlock(&dev->qp_lock);
  *out = &qp->base;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_qp_modify(rnicpi_qp_t *q, const rnicpi_qp_attr_t *attr)
{
  ib_qp_t *qp = to_ib_qp(q);
  if (attr->ird > qp->dev->caps.max_ird || attr->ord > qp->dev->caps.max_ord)
    return RNICPI_ELIMIT;
  if (attr->access != qp->access && qp->state != IB_QP_ERROR && qp->type == RNICPI_QPT_RC) {
    struct ibv_qp_attr a = { .qp_access_flags = (unsigned) ib_qp_access_to_verbs(attr->access) };
    int err = ibv_modify_qp(qp->qp, &a, IBV_QP_ACCESS_FLAGS);
    if (err != 0)
      return ib_status_of_errno(err);
  }
  qp->access = attr->access;
  /* IRD and ORD are offered at the next connect or accept; a connection
   * keeps what it settled (IBTA: no change of them in RTS), and the post's
   * ORD 0 check reads the settled one. */
  if (qp->state == IB_QP_IDLE || qp->state == IB_QP_ERROR) {
    qp->ird = attr->ird;
    qp->ord = attr->ord;
  }
  return RNICPI_OK;
}

/* Drain the device's flush for up to the sweep time, then complete the
 * rest ourselves: destroy and reset leave nothing outstanding. */
static void
qp_quiesce(ib_qp_t *qp, gboolean dying)
{
  ib_dev_t *dev = qp->dev;
  rnicpi_notify_batch_t b;
  rnicpi_notify_batch_init(&b);
  gint64 end = g_get_monotonic_time() + (gint64) ib_config.sweep_ms * 1000;
  while (g_get_monotonic_time() < end) {
    ib_cq_drain(qp->scq, &b);
    if (qp->rcq != qp->scq)
      ib_cq_drain(qp->rcq, &b);
    rnicpi_spin_lock(&qp->sq_lock);
    rnicpi_spin_lock(&qp->rq_lock);
    gboolean left = ib_qp_outstanding(qp);
    rnicpi_spin_unlock(&qp->rq_lock);
    rnicpi_spin_unlock(&qp->sq_lock);
    if (!left)
      break;
    g_usleep(1000);
  }
  g_mutex_lock(&dev->lock);
  ib_qp_flush_rest(qp, &b);
  if (dying)
    qp->fatal_due = FALSE; /* no event names a queue pair being destroyed */
  else
    ib_qp_fatal_settle(qp);
  qp->dying = dying; /* the sweep never takes it again */
  if (qp->sweeping) {
    dev->sweep = g_list_remove(dev->sweep, qp);
    qp->sweeping = FALSE;
  }
  g_mutex_unlock(&dev->lock);
  ib_cq_defer(dev, &b);
}

static rnicpi_status_t
ib_qp_to_error(rnicpi_qp_t *q)
{
  ib_qp_t *qp = to_ib_qp(q);
  ib_qp_torn_down(qp);
  ib_qp_set_error(qp);
  ib_qp_modify_verbs(qp, IBV_QPS_ERR);
  ib_cm_qp_error(qp);
  ib_sweep_add(qp);
  return RNICPI_OK;
}

/* iWARP: a queue pair serves one connection (siw will not connect one
 * again after RESET), so a reset gives the queue pair a new one of the
 * device's, with a new number.  Posts leave the device alone meanwhile:
 * the queue pair is in ERROR until the reset ends. */
static rnicpi_status_t
qp_renew(ib_qp_t *qp)
{
  ib_dev_t *dev = qp->dev;
  struct ibv_qp_init_attr ia = qp->init_attr;
  struct ibv_qp *fresh = ibv_create_qp(to_ib_pd(qp->base.pd)->pd, &ia);
  if (fresh == NULL) {
    int err = errno;
    g_message("%s: cannot create a queue pair to reset QP %u with (%s); free the EP and "
              "create another", dev->name, qp->base.qp_num, g_strerror(err));
    return err == ENOMEM ? RNICPI_ENOMEM : ib_status_of_errno(err);
  }
  struct ibv_qp *old = qp->qp;
  rnicpi_spin_lock(&dev->qp_lock);
  g_hash_table_remove(dev->qps, GUINT_TO_POINTER(qp->base.qp_num));
  qp->qp = fresh;
  qp->base.qp_num = fresh->qp_num;
  g_hash_table_insert(dev->qps, GUINT_TO_POINTER(qp->base.qp_num), qp);
  rnicpi_spin_unlock(&dev->qp_lock);
  /* A drain that found the old number before it left the table, or in
   * its CQ's cache. */
  ib_cq_forget_qp(qp->scq, qp);
  ib_cq_forget_qp(qp->rcq, qp);
  ib_mw_qp_gone(qp);
  int err = ibv_destroy_qp(old);
  if (err != 0)
    g_warning("%s: ibv_destroy_qp(QP %u, reset) failed: %s; its kernel resources stay until "
              "the IA is freed", dev->name, old->qp_num, g_strerror(err));
  return RNICPI_OK;
}

static rnicpi_status_t
ib_qp_reset(rnicpi_qp_t *q)
{
  ib_qp_t *qp = to_ib_qp(q);
  if (qp->state != IB_QP_ERROR)
    return RNICPI_ESTATE;
  ib_cm_qp_gone(qp);
  qp_quiesce(qp, FALSE);
  rnicpi_status_t st = qp->dev->iwarp ? qp_renew(qp) : ib_qp_modify_verbs(qp, IBV_QPS_RESET);
  if (st != RNICPI_OK)
    return st;
  rnicpi_spin_lock(&qp->sq_lock);
  rnicpi_spin_lock(&qp->rq_lock);
  /* A new incarnation: completions of the old one are dropped. */
  qp->serial = ib_dev_serial(qp->dev);
  qp->sq.head = qp->sq.tail = qp->sq.seen = 0;
  qp->sq_verbs = 0;
  for (uint32_t i = 0; i < qp->sq.size; i++)
    qp->sq.e[i].pieces = 0;
  qp->rq.head = qp->rq.tail = 0;
  qp->held = FALSE;
  qp->err_cause = RNICPI_AE_UNSPECIFIED;
  qp->break_due = FALSE;
  __atomic_store_n(&qp->torn_down, FALSE, __ATOMIC_RELEASE);
  rnicpi_spin_unlock(&qp->rq_lock);
  rnicpi_spin_unlock(&qp->sq_lock);
  if ((st = qp_to_init(qp)) != RNICPI_OK)
    return st;
  if (qp->type == RNICPI_QPT_UD) {
    if ((st = ib_ud_qp_up(qp)) != RNICPI_OK)
      return st;
    ib_qp_set_state(qp, IB_QP_IDLE);
    ib_qp_set_state(qp, IB_QP_RTS);
    return RNICPI_OK;
  }
  ib_qp_set_state(qp, IB_QP_IDLE);
  return RNICPI_OK;
}

void
ib_qp_set_state(ib_qp_t *qp, ib_qp_state_t s)
{
  rnicpi_spin_lock(&qp->sq_lock);
  rnicpi_spin_lock(&qp->rq_lock);
  if (qp->state != IB_QP_ERROR || s == IB_QP_IDLE)
    qp->state = s;
  rnicpi_spin_unlock(&qp->rq_lock);
  rnicpi_spin_unlock(&qp->sq_lock);
}

static rnicpi_qp_state_t
ib_qp_state(rnicpi_qp_t *q)
{
  ib_qp_t *qp = to_ib_qp(q);
  if (qp->state == IB_QP_RTS) {
    /* A request that failed unsignaled, with nobody polling: its error
     * completion in the device's CQ is how the queue pair's ERROR shows
     * (rxe raises no asynchronous event for it), so take what the CQs
     * hold before answering. */
    rnicpi_notify_batch_t b;
    rnicpi_notify_batch_init(&b);
    ib_cq_drain(qp->scq, &b);
    if (qp->rcq != qp->scq)
      ib_cq_drain(qp->rcq, &b);
    ib_cq_defer(qp->dev, &b);
  }
  switch (qp->state) {
  case IB_QP_RTS:
    return RNICPI_QPS_RTS;
  case IB_QP_ERROR:
    return RNICPI_QPS_ERROR;
  default:
    return RNICPI_QPS_IDLE;
  }
}

static rnicpi_status_t
ib_qp_destroy(rnicpi_qp_t *q)
{
  ib_qp_t *qp = to_ib_qp(q);
  ib_dev_t *dev = qp->dev;
  /* The connection first: once its identifier is destroyed no CM event
   * names the queue pair, and none can put it back on the sweep list. */
  ib_qp_torn_down(qp);
  ib_cm_qp_gone(qp);
  ib_qp_set_error(qp);
  ib_qp_modify_verbs(qp, IBV_QPS_ERR);
  qp_quiesce(qp, TRUE);
  rnicpi_spin_lock(&dev->qp_lock);
  g_hash_table_remove(dev->qps, GUINT_TO_POINTER(qp->base.qp_num));
  rnicpi_spin_unlock(&dev->qp_lock);
  /* A drain in another thread may have found the queue pair just before
   * it left the table, or in its CQ's cache: it holds the CQ's poll lock
   * while it uses it, and the cache forgets it under that lock. */
  ib_cq_forget_qp(qp->scq, qp);
  ib_cq_forget_qp(qp->rcq, qp);
  /* Completions of the queue pair still in the verbs CQs find no queue
   * pair from now and are dropped: each request completed once already.
   * ibv_destroy_qp waits for the progress thread to acknowledge the
   * queue pair's asynchronous events. */
  ib_mw_qp_gone(qp);
  int err = ibv_destroy_qp(qp->qp);
  if (err != 0)
    g_warning("%s: ibv_destroy_qp(QP %u) failed: %s; its kernel resources stay until the IA "
              "is freed", dev->name, qp->base.qp_num, g_strerror(err));
  cq_release(qp->scq, qp->sq_need, qp->sq_max);
  if (qp->srq == NULL)
    cq_release(qp->rcq, qp->rq_max, qp->rq_max);
  g_free(qp->sq.e);
  g_free(qp->rq.e);
  g_free(qp->rq_sge);
  g_free(qp);
  return RNICPI_OK;
}

/* ---- the data path -------------------------------------------------------- */

/* Local segments, mapped for the device.  Verbs reads a segment's
 * address in its region's own address space (its iova: 0 for a
 * zero-based region), RNIC-PI gives our virtual address; and devices
 * report a segment outside its region in their own ways (rxe: a
 * LOC_QP_OP_ERR as soon as the packet is built, flushing the requests
 * before it), where RNIC-PI promises a local protection error in the
 * request's turn.  So each segment is looked up: it must lie inside a
 * live region of @pd that grants @need.  IB_SGE_LIMIT: more segments
 * than @max; IB_SGE_FAULT: one is outside (it is passed on as given). */
enum { IB_SGE_OK, IB_SGE_LIMIT, IB_SGE_FAULT };

/* What a segment needs of its region, from the region's fields. */
static inline gboolean
sge_fits(const rnicpi_sge_t *s, const rnicpi_pd_t *pd, uint32_t need, uint64_t lkey,
         const rnicpi_pd_t *mr_pd, uint64_t addr, uint64_t length, uint32_t asked)
{
  return s->lkey == lkey && mr_pd == pd && s->addr >= addr && s->length <= length &&
         s->addr - addr <= length - s->length && (asked & need) == need;
}

/* The region of this thread's last one-segment post, copied at
 * ib_mr_gen's value then: while no region of any device changed, a post
 * naming it again needs neither the table's lock nor its lookup.  A
 * region deregistered meanwhile is a race the table's lock does not
 * close either (it is let go before the device sees the request). */
typedef struct {
  const ib_dev_t *dev;
  guint64 gen;
  uint64_t lkey;
  const rnicpi_pd_t *pd;
  uint64_t addr, length, iova;
  uint32_t asked;
} mr_memo_t;
static __thread mr_memo_t mr_memo __attribute__((tls_model("initial-exec")));

static int
map_sges(ib_dev_t *dev, const rnicpi_pd_t *pd, const rnicpi_sge_t *in, uint32_t n,
         struct ibv_sge *out, uint32_t max, uint32_t need, uint32_t *len)
{
  if (n > max)
    return IB_SGE_LIMIT;
  if (n == 1 && mr_memo.dev == dev && mr_memo.lkey == in[0].lkey &&
      mr_memo.gen == __atomic_load_n(&ib_mr_gen, __ATOMIC_ACQUIRE) &&
      sge_fits(&in[0], pd, need, mr_memo.lkey, mr_memo.pd, mr_memo.addr, mr_memo.length,
               mr_memo.asked)) {
    out[0].addr = in[0].addr - mr_memo.addr + mr_memo.iova;
    out[0].length = in[0].length;
    out[0].lkey = (uint32_t) in[0].lkey;
    *len = in[0].length;
    return IB_SGE_OK;
  }
  int r = IB_SGE_OK;
  uint32_t total = 0;
  g_rw_lock_reader_lock(&dev->mr_lock);
  for (uint32_t i = 0; i < n; i++) {
    out[i].addr = in[i].addr;
    out[i].length = in[i].length;
    out[i].lkey = (uint32_t) in[i].lkey;
    total += in[i].length;
    const ib_mr_t *mr = g_hash_table_lookup(dev->mrs, GUINT_TO_POINTER((uint32_t) in[i].lkey));
    if (mr != NULL && sge_fits(&in[i], pd, need, mr->base.lkey, mr->base.pd, mr->addr, mr->length,
                               mr->asked)) {
      out[i].addr = in[i].addr - mr->addr + mr->iova;
      if (n == 1)
        mr_memo = (mr_memo_t) { dev, __atomic_load_n(&ib_mr_gen, __ATOMIC_RELAXED), mr->base.lkey,
                                mr->base.pd, mr->addr, mr->length, mr->iova, mr->asked };
    } else if (in[i].length > 0) {
      r = IB_SGE_FAULT;
    }
  }
  g_rw_lock_reader_unlock(&dev->mr_lock);
  *len = total;
  return r;
}

/* A fault of the request that the device would not report as RNIC-PI
 * promises, found before the device sees it: the status it completes
 * with in its turn, and the fault's cause (0: none).  Verbs keys are 32
 * bits, so a key with an upper bit set names no region (the peer would
 * refuse it); rxe refuses a misaligned atomic at post time, where the
 * peer would answer it with a remote operation error. */
static uint8_t
post_fault(const rnicpi_send_wr_t *wr, int sges, uint8_t *cause)
{
  gboolean atomic = wr->opcode == RNICPI_WR_ATOMIC_CMP_SWP || wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD;
  gboolean remote = atomic || wr->opcode == RNICPI_WR_RDMA_WRITE ||
                    wr->opcode == RNICPI_WR_RDMA_WRITE_IMM || wr->opcode == RNICPI_WR_RDMA_READ;
  if (sges == IB_SGE_FAULT) {
    *cause = RNICPI_AE_LOCAL;
    return RNICPI_WC_LOC_PROT_ERR;
  }
  if (remote && wr->rkey > UINT32_MAX) {
    *cause = RNICPI_AE_REMOTE_ACCESS;
    return RNICPI_WC_REM_ACCESS_ERR;
  }
  if (atomic && (wr->remote_addr & 7) != 0) {
    *cause = RNICPI_AE_REMOTE;
    return RNICPI_WC_REM_OP_ERR;
  }
  return 0;
}

/* siw (6.1) copies a one-segment payload of at most IB_SIW_SHORT_TX
 * bytes that crosses a page boundary wrongly whenever its transmit thread
 * rather than the post sends it: siw_try_1seg() takes the bytes past the
 * boundary from the first page, reading past its end.  The data arrives
 * wrong, with a good CRC.  So the adapter never hands it one: a Send or
 * Write goes inline (copied at the post), or else gets its segment cut
 * at the boundary (two segments take siw's general path); a Read, whose
 * response the peer's siw sends from
 * the remote range, becomes two Reads, one on each side of the
 * boundary.  Where the bytes before the boundary end: 0 when the
 * payload need not be cut. */
static uint32_t
short_cut(uint64_t addr, uint64_t len)
{
  uint32_t before = 4096 - (uint32_t) (addr & 4095);
  return len > 1 && len <= IB_SIW_SHORT_TX && before < len ? before : 0;
}

/* Cut the segment @sge[0] at @cut: its first @cut bytes stay, the rest
 * goes to @sge[1]. */
static void
cut_sge(struct ibv_sge *sge, uint32_t cut)
{
  sge[1] = sge[0];
  sge[0].length = cut;
  sge[1].addr += cut;
  sge[1].length -= cut;
}

/* Cut @v's only segment at @cut into two segments. */
static void
short_split_sge(struct ibv_send_wr *v, struct ibv_sge *sge, uint32_t cut)
{
  cut_sge(sge, cut);
  v->num_sge = 2;
}

/* Make the Read @v of @n segments @sge (mapped, checked) the pieces the
 * device takes, in @piece and @psge, chained from @v: one Read per run of
 * segments that follow each other in one region (zero-length ones
 * skipped), each reading the next bytes of the remote range, as the
 * device takes one sink segment per Read (RFC 5040 6.1; siw's max_sge_rd
 * is 1); and on siw a short run across a page cut there (short_cut).
 * The first piece keeps the fence, the last the request's signal and
 * solicitation; the others complete only in error, under the same shadow
 * and wr_id, as a window's invalidation does (ib_mw.c): the request
 * completes once, when its last piece does, or with the first error.
 * Each piece takes an ORD credit; the device holds those beyond the ORD
 * until answers come.  Returns the number of pieces (1: @v as it was). */
static uint32_t
read_pieces(const ib_dev_t *dev, struct ibv_send_wr *v, const struct ibv_sge *sge, int n,
            struct ibv_send_wr piece[IB_READ_PIECES_MAX], struct ibv_sge psge[IB_READ_PIECES_MAX])
{
  /* The runs. */
  struct ibv_sge run[IB_READ_SPLIT_SGE];
  uint32_t nrun = 0;
  for (int i = 0; i < n; i++) {
    if (sge[i].length == 0)
      continue;
    struct ibv_sge *last = nrun > 0 ? &run[nrun - 1] : NULL;
    if (last != NULL && last->lkey == sge[i].lkey && last->addr + last->length == sge[i].addr &&
        (uint64_t) last->length + sge[i].length <= UINT32_MAX)
      last->length += sge[i].length;
    else if (nrun < G_N_ELEMENTS(run))
      run[nrun++] = sge[i];
    else
      return 1; /* more than the capability record offers: map_sges refused it */
  }
  if (nrun == 0) {
    v->num_sge = MIN(n, 1); /* a zero-length Read */
    return 1;
  }
  /* The pieces: each run, cut once at a page where siw needs it. */
  uint32_t np = 0;
  uint64_t raddr = v->wr.rdma.remote_addr;
  for (uint32_t r = 0; r < nrun; r++) {
    uint32_t cut = dev->short_split ? short_cut(raddr, run[r].length) : 0;
    for (int part = 0; part < (cut != 0 ? 2 : 1); part++) {
      psge[np] = run[r];
      if (cut != 0 && part == 0) {
        psge[np].length = cut;
      } else if (cut != 0) {
        psge[np].addr += cut;
        psge[np].length -= cut;
      }
      piece[np] = *v;
      piece[np].sg_list = &psge[np];
      piece[np].num_sge = 1;
      piece[np].wr.rdma.remote_addr = raddr;
      piece[np].send_flags &= ~(unsigned) (IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE);
      piece[np].next = NULL;
      if (np > 0)
        piece[np - 1].next = &piece[np];
      raddr += psge[np].length;
      np++;
    }
  }
  piece[0].send_flags |= v->send_flags & IBV_SEND_FENCE;
  piece[np - 1].send_flags |= v->send_flags & (IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
  *v = piece[0];
  return np;
}

/* The capabilities an opcode needs, every bit of them: without them
 * post_send refuses it with RNICPI_ENOTSUP (rnicpi.h) before the device's
 * library sees it, which answers in its own way (libsiw: -EINVAL, a
 * negative errno, for an atomic or immediate data).  A bind needs either
 * kind of window: ib_mw_check's. */
static const uint64_t op_needs[RNICPI_WR_OPCODE_COUNT] = {
  [RNICPI_WR_SEND_INV] = RNICPI_CAP_REMOTE_INVALIDATE,
  [RNICPI_WR_ATOMIC_CMP_SWP] = RNICPI_CAP_ATOMICS,
  [RNICPI_WR_ATOMIC_FETCH_ADD] = RNICPI_CAP_ATOMICS,
  [RNICPI_WR_LOCAL_INV] = RNICPI_CAP_LOCAL_INVALIDATE,
  [RNICPI_WR_FAST_REG] = RNICPI_CAP_FAST_REGISTER,
  [RNICPI_WR_RDMA_READ_INV] = RNICPI_CAP_READ_SINK_MW | RNICPI_CAP_LOCAL_INVALIDATE,
  [RNICPI_WR_IMM_DATA] = RNICPI_CAP_IMMEDIATE,
  [RNICPI_WR_RDMA_WRITE_IMM] = RNICPI_CAP_IMMEDIATE,
};

/* The common post: a Send, RDMA Write or RDMA Read of one good segment
 * on an RC queue pair in RTS, signaled or on a send CQ already watched,
 * which the device takes as it is (no split, no fault, nothing held back
 * before it).  ib_post_send's steps for that case alone, with the same
 * outcome, without testing for all the others: TRUE and the status in
 * @p st when it was that case, else FALSE having changed nothing, and
 * ib_post_send does it all. */
static inline gboolean
post_send_common(ib_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_status_t *st)
{
  rnicpi_wr_opcode_t op = wr->opcode;
  gboolean read = op == RNICPI_WR_RDMA_READ, write = op == RNICPI_WR_RDMA_WRITE;
  if ((op != RNICPI_WR_SEND && !write && !read) || qp->type != RNICPI_QPT_RC || wr->num_sge != 1 ||
      qp->dev->short_split || ((read || write) && wr->rkey > UINT32_MAX) || (read && qp->ord == 0) ||
      (!(wr->flags & RNICPI_WR_SIGNALED) && !__atomic_load_n(&qp->scq->watch_unsignaled, __ATOMIC_ACQUIRE)))
    return FALSE;
  uint32_t need = !read ? 0
                  : RNICPI_ACCESS_LOCAL_WRITE | ((qp->dev->caps.features & RNICPI_CAP_READ_SINK_REMOTE_WRITE)
                                                     ? RNICPI_ACCESS_REMOTE_WRITE : 0);
  struct ibv_sge sge;
  uint32_t len = 0;
  if (map_sges(qp->dev, qp->base.pd, wr->sg_list, 1, &sge, 1, need, &len) != IB_SGE_OK)
    return FALSE;
  struct ibv_send_wr v, *bad = NULL;
  memset(&v, 0, sizeof(v));
  v.sg_list = &sge;
  v.num_sge = 1;
  v.send_flags = ((wr->flags & RNICPI_WR_SIGNALED) ? IBV_SEND_SIGNALED : 0) |
                 ((wr->flags & RNICPI_WR_SOLICITED) ? IBV_SEND_SOLICITED : 0) |
                 ((wr->flags & (RNICPI_WR_FENCE | RNICPI_WR_LOCAL_FENCE)) ? IBV_SEND_FENCE : 0);
  v.opcode = read ? IBV_WR_RDMA_READ : write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
  if (read || write) {
    v.wr.rdma.remote_addr = wr->remote_addr;
    v.wr.rdma.rkey = (uint32_t) wr->rkey;
  }
  /* Inline as ib_post_send decides it, from the process's own address. */
  if (!read && len > 0 && len <= qp->max_inline) {
    v.send_flags |= IBV_SEND_INLINE;
    sge.addr = wr->sg_list[0].addr;
  }
  rnicpi_spin_lock(&qp->sq_lock);
  if (qp->state != IB_QP_RTS || qp->held || qp->sq.tail - qp->sq.head >= qp->sq_max ||
      qp->sq_verbs + 1 > qp->sq_need) {
    rnicpi_spin_unlock(&qp->sq_lock);
    return FALSE;
  }
  uint64_t seq = qp->sq.tail;
  ib_shadow_t *s = wq_at(&qp->sq, seq);
  s->wr_id = wr->wr_id;
  s->opcode = (uint8_t) (read ? RNICPI_WC_RDMA_READ : write ? RNICPI_WC_RDMA_WRITE : RNICPI_WC_SEND);
  s->signaled = (wr->flags & RNICPI_WR_SIGNALED) != 0;
  s->len = len;
  s->rkey = 0;
  s->mw = NULL;
  s->done = 0;
  s->status = RNICPI_WC_SUCCESS;
  s->fail = 0;
  s->fail_cause = RNICPI_AE_UNSPECIFIED;
  s->given = 1;
  s->pieces = 1;
  qp->sq_verbs += 1;
  qp->sq.tail = seq + 1;
  v.wr_id = ib_wrid(qp->serial, IB_KIND_SEND, seq);
  int err = ibv_post_send(qp->qp, &v, &bad);
  if (err < 0)
    err = -err; /* libsiw returns -errno (siw_post_send, rdma-core 44) */
  if (err != 0) {
    qp->sq.tail = seq; /* not taken */
    qp->sq_verbs -= 1;
    s->pieces = 0;
  }
  rnicpi_spin_unlock(&qp->sq_lock);
  *st = err == 0        ? RNICPI_OK
        : err == ENOMEM ? RNICPI_EFULL
        : err == EINVAL ? RNICPI_EINVAL
                        : ib_status_of_errno(err);
  return TRUE;
}

static rnicpi_status_t
ib_post_send(rnicpi_qp_t *q, const rnicpi_send_wr_t *wr)
{
  ib_qp_t *qp = to_ib_qp(q);
  rnicpi_status_t common;
  if (post_send_common(qp, wr, &common))
    return common;
  if ((unsigned) wr->opcode >= RNICPI_WR_OPCODE_COUNT ||
      (qp->dev->caps.features & op_needs[wr->opcode]) != op_needs[wr->opcode])
    return RNICPI_ENOTSUP;
  if (!(wr->flags & RNICPI_WR_SIGNALED) && qp->type == RNICPI_QPT_RC &&
      !__atomic_load_n(&qp->scq->watch_unsignaled, __ATOMIC_ACQUIRE) &&
      !__atomic_exchange_n(&qp->scq->watch_unsignaled, TRUE, __ATOMIC_ACQ_REL))
    ibv_req_notify_cq(qp->scq->cq, 0); /* the progress thread drains it from now on */
  /* ORD 0: no Read or atomic may ever be outstanding.  rxe would hold one
   * for ever (its requester waits for a credit that never comes) and siw
   * refuses it with EINVAL: say so here, as every provider does. */
  if (qp->type == RNICPI_QPT_RC && qp->ord == 0 &&
      (qp->state == IB_QP_RTS || qp->state == IB_QP_ACCEPTING) &&
      (wr->opcode == RNICPI_WR_RDMA_READ || wr->opcode == RNICPI_WR_RDMA_READ_INV ||
       wr->opcode == RNICPI_WR_ATOMIC_CMP_SWP || wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD))
    return RNICPI_ELIMIT;
  struct ibv_sge sge[32];
  struct ibv_send_wr v, *bad = NULL;
  memset(&v, 0, sizeof(v));
  uint32_t len = 0;
  /* What the request writes locally: a Read's sink (on iWARP also named
   * by an STag the peer writes to) and an atomic's result. */
  uint32_t need = 0;
  if (wr->opcode == RNICPI_WR_RDMA_READ || wr->opcode == RNICPI_WR_RDMA_READ_INV)
    need = RNICPI_ACCESS_LOCAL_WRITE |
           ((qp->dev->caps.features & RNICPI_CAP_READ_SINK_REMOTE_WRITE) ? RNICPI_ACCESS_REMOTE_WRITE : 0);
  else if (wr->opcode == RNICPI_WR_ATOMIC_CMP_SWP || wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD)
    need = RNICPI_ACCESS_LOCAL_WRITE;
  /* Each operation's own limit, as the consumer created the queue pair
   * (a datagram's is max_send_sge); an atomic has one segment. */
  uint32_t lim = qp->lim_send_sge;
  if (qp->type == RNICPI_QPT_RC && (wr->opcode == RNICPI_WR_RDMA_READ || wr->opcode == RNICPI_WR_RDMA_READ_INV))
    lim = qp->lim_read_sge;
  else if (qp->type == RNICPI_QPT_RC &&
           (wr->opcode == RNICPI_WR_RDMA_WRITE || wr->opcode == RNICPI_WR_RDMA_WRITE_IMM))
    lim = qp->lim_write_sge;
  else if (wr->opcode == RNICPI_WR_BIND_MW || wr->opcode == RNICPI_WR_LOCAL_INV ||
           wr->opcode == RNICPI_WR_FAST_REG)
    lim = qp->max_send_sge; /* no data segments: not the consumer's gather list */
  int sges = map_sges(qp->dev, qp->base.pd, wr->sg_list, wr->num_sge, sge,
                      MIN(MAX(lim, 1u), G_N_ELEMENTS(sge)), need, &len);
  if (sges == IB_SGE_LIMIT)
    return RNICPI_ELIMIT;
  v.sg_list = sge;
  v.num_sge = (int) wr->num_sge;
  v.send_flags = ((wr->flags & RNICPI_WR_SIGNALED) ? IBV_SEND_SIGNALED : 0) |
                 ((wr->flags & RNICPI_WR_SOLICITED) ? IBV_SEND_SOLICITED : 0) |
                 /* The verbs fence waits for the Reads and atomics before
                  * it to complete: a local fence too, whose source may be
                  * their sink. */
                 ((wr->flags & (RNICPI_WR_FENCE | RNICPI_WR_LOCAL_FENCE)) ? IBV_SEND_FENCE : 0);
  rnicpi_status_t st;
  gboolean mw_op = FALSE;
  if (qp->type == RNICPI_QPT_UD && (st = ib_ud_prepare(qp, wr, len, &v)) != RNICPI_OK)
    return st;
  switch (wr->opcode) {
  case RNICPI_WR_SEND:
    v.opcode = IBV_WR_SEND;
    break;
  case RNICPI_WR_BIND_MW:
  case RNICPI_WR_LOCAL_INV:
    if ((st = ib_mw_check(qp, wr)) != RNICPI_OK)
      return st;
    mw_op = TRUE;
    break;
  case RNICPI_WR_SEND_INV:
    /* Offered on iWARP devices only (fill_caps, doc/provider-ib.md);
     * elsewhere the opcode's capability refused it above. */
    v.opcode = IBV_WR_SEND_WITH_INV;
    v.invalidate_rkey = (uint32_t) wr->invalidate_rkey;
    /* libsiw (rdma-core 44, push_send_wqe) takes every key from
     * wr.rdma.rkey, and siw sends that as the Invalidate STag
     * (siw_qp_tx.c); other providers read invalidate_rkey alone. */
    v.wr.rdma.rkey = (uint32_t) wr->invalidate_rkey;
    break;
  case RNICPI_WR_RDMA_WRITE:
  case RNICPI_WR_RDMA_WRITE_IMM:
  case RNICPI_WR_RDMA_READ:
    v.opcode = wr->opcode == RNICPI_WR_RDMA_READ ? IBV_WR_RDMA_READ
               : wr->opcode == RNICPI_WR_RDMA_WRITE ? IBV_WR_RDMA_WRITE
                                                    : IBV_WR_RDMA_WRITE_WITH_IMM;
    v.wr.rdma.remote_addr = wr->remote_addr;
    v.wr.rdma.rkey = (uint32_t) wr->rkey;
    v.imm_data = htonl((uint32_t) wr->imm_data);
    break;
  case RNICPI_WR_IMM_DATA:
    v.opcode = IBV_WR_SEND_WITH_IMM;
    v.imm_data = htonl((uint32_t) wr->imm_data);
    break;
  case RNICPI_WR_ATOMIC_CMP_SWP:
  case RNICPI_WR_ATOMIC_FETCH_ADD:
    v.opcode = wr->opcode == RNICPI_WR_ATOMIC_CMP_SWP ? IBV_WR_ATOMIC_CMP_AND_SWP
                                                      : IBV_WR_ATOMIC_FETCH_AND_ADD;
    v.wr.atomic.remote_addr = wr->remote_addr;
    v.wr.atomic.rkey = (uint32_t) wr->rkey;
    v.wr.atomic.compare_add = wr->compare_add;
    v.wr.atomic.swap = wr->swap;
    break;
  default:
    return RNICPI_ENOTSUP;
  }
  if (qp->type == RNICPI_QPT_UD && wr->opcode != RNICPI_WR_SEND)
    return RNICPI_EINVAL; /* a UD queue pair takes Sends only */
  uint8_t cause = RNICPI_AE_UNSPECIFIED;
  /* A UD queue pair has no connection to break: its device reports. */
  uint8_t fail = qp->type == RNICPI_QPT_UD ? 0 : post_fault(wr, sges, &cause);
  /* Short Sends and Writes go inline (probe_inline), only once every
   * segment has passed map_sges, the check the device would have made
   * with the key (a UD queue pair's faults go to the device, so a bad
   * segment there is never inline).  The library copies the bytes from
   * the process's own addresses, not a zero-based region's.  Never a
   * Send with Invalidate: siw takes inline data for a Send or Write only
   * (siw_activate_tx_from_sq, siw_qp.c, 6.1), refuses the doorbell with
   * EINVAL and leaves the request at the head of its queue. */
  if (sges == IB_SGE_OK && fail == 0 && len > 0 && len <= qp->max_inline &&
      (wr->opcode == RNICPI_WR_SEND || wr->opcode == RNICPI_WR_IMM_DATA ||
       wr->opcode == RNICPI_WR_RDMA_WRITE || wr->opcode == RNICPI_WR_RDMA_WRITE_IMM)) {
    v.send_flags |= IBV_SEND_INLINE;
    for (uint32_t i = 0; i < wr->num_sge; i++)
      sge[i].addr = wr->sg_list[i].addr;
  }
  struct ibv_send_wr piece[IB_READ_PIECES_MAX];
  struct ibv_sge psge[IB_READ_PIECES_MAX];
  uint32_t pieces = 1, cut;
  if (fail == 0 && qp->type == RNICPI_QPT_RC && wr->opcode == RNICPI_WR_RDMA_READ &&
      (wr->num_sge > qp->dev->read_sge_dev || (qp->dev->short_split && wr->num_sge == 1))) {
    pieces = read_pieces(qp->dev, &v, sge, (int) wr->num_sge, piece, psge);
  } else if (qp->dev->short_split && fail == 0 && wr->num_sge == 1 && qp->type == RNICPI_QPT_RC &&
             !(v.send_flags & IBV_SEND_INLINE) &&
             (wr->opcode == RNICPI_WR_SEND || wr->opcode == RNICPI_WR_RDMA_WRITE ||
              wr->opcode == RNICPI_WR_SEND_INV)) {
    if ((cut = short_cut(wr->sg_list[0].addr, len)) != 0)
      short_split_sge(&v, sge, cut);
  }
  if (mw_op && (qp->dev->caps.features & RNICPI_CAP_MW_NARROW))
    pieces = 2; /* a bind of a bound narrow window: two (ib_mw.c) */

  rnicpi_spin_lock(&qp->sq_lock);
  if (qp->state == IB_QP_IDLE || qp->state == IB_QP_CONNECTING || qp->state == IB_QP_ACCEPTING) {
    rnicpi_spin_unlock(&qp->sq_lock);
    return RNICPI_ESTATE;
  }
  if (qp->sq.tail - qp->sq.head >= qp->sq_max) {
    rnicpi_spin_unlock(&qp->sq_lock);
    return RNICPI_EFULL;
  }
  /* Room in the verbs queue: short only where the device's limit capped
   * it below what the shadows' requests may take (ib_qp_create). */
  if (qp->state != IB_QP_ERROR && !qp->held && qp->sq_verbs + pieces > qp->sq_need) {
    rnicpi_spin_unlock(&qp->sq_lock);
    return RNICPI_EFULL;
  }
  uint64_t seq = qp->sq.tail;
  ib_shadow_t *s = wq_at(&qp->sq, seq);
  s->wr_id = wr->wr_id;
  s->opcode = (uint8_t) wc_opcode_of(wr->opcode);
  s->signaled = (wr->flags & RNICPI_WR_SIGNALED) != 0;
  s->len = mw_op ? 0 : len;
  s->rkey = wr->opcode == RNICPI_WR_LOCAL_INV ? wr->invalidate_rkey : 0;
  s->mw = NULL;
  s->done = 0;
  s->status = RNICPI_WC_SUCCESS;
  s->fail = 0;
  s->fail_cause = RNICPI_AE_UNSPECIFIED;
  gboolean error = qp->state == IB_QP_ERROR;
  /* Kept in the shadow: posted in ERROR (the sweep completes it), or
   * behind a fault still waiting for its turn (it will be flushed). */
  gboolean keep = error || qp->held;
  gboolean fault_now = FALSE, split_broke = FALSE;
  if (fail != 0 && !keep) {
    s->fail = fail;
    s->fail_cause = cause;
    s->signaled = 1; /* an error always completes */
    if (seq == qp->sq.head) {
      fault_now = keep = TRUE; /* nothing before it */
    } else {
      /* Its turn comes when the device completes what is before it: a
       * zero-length RDMA Write stands in for it (IBTA C9-88 and RFC 5040
       * check no key for it), and later sends wait in the shadow. */
      memset(&v, 0, sizeof(v));
      v.opcode = IBV_WR_RDMA_WRITE;
      v.send_flags = IBV_SEND_SIGNALED;
      qp->held = TRUE;
    }
  }
  s->given = !keep; /* given to the device */
  s->pieces = keep ? 0 : (uint8_t) (fail != 0 ? 1 : pieces);
  qp->sq_verbs += s->pieces;
  qp->sq.tail = seq + 1;
  int err = 0;
  if (!keep) {
    for (struct ibv_send_wr *w = &v; w != NULL; w = w->next)
      w->wr_id = ib_wrid(qp->serial, IB_KIND_SEND, seq); /* every piece (read_pieces) */
    err = mw_op && fail == 0 ? ib_mw_post(qp, wr, &v, s) : ibv_post_send(qp->qp, &v, &bad);
    if (err < 0)
      err = -err; /* libsiw returns -errno (siw_post_send, rdma-core 44) */
    if (err != 0 && bad != NULL && bad != &v) {
      /* Some pieces of a split Read went in, the rest not: the verbs
       * queue has room for all (ib_qp_create), so only a failed device
       * does this.  The request fails in its turn, with the queue pair. */
      g_warning("%s: QP %u took part of an RDMA Read split in %u (request %" G_GUINT64_FORMAT
                ") and refused the rest (%s): the queue pair is failed and the Read completes "
                "flushed; ibv_devinfo -d %s shows whether the device still answers",
                qp->dev->name, qp->base.qp_num, pieces, seq, g_strerror(err), qp->dev->name);
      err = 0;
      s->signaled = 1;
      s->given = 0;
      split_broke = TRUE;
    }
    if (err != 0) {
      qp->sq.tail = seq; /* not taken */
      qp->sq_verbs -= s->pieces;
      s->pieces = 0;
      if (fail != 0)
        qp->held = FALSE;
    }
  } else if (wr->opcode == RNICPI_WR_BIND_MW) {
    /* Never executed, but its key is the window's from now (rnicpi.h). */
    wr->bind.mw->rkey = ibv_inc_rkey((uint32_t) wr->bind.mw->rkey);
    s->rkey = wr->bind.mw->rkey;
  }
  rnicpi_spin_unlock(&qp->sq_lock);
  if (split_broke) {
    g_mutex_lock(&qp->dev->lock);
    qp_fault(qp, RNICPI_AE_LOCAL);
    g_mutex_unlock(&qp->dev->lock);
    return RNICPI_OK;
  }
  if (fault_now) {
    g_mutex_lock(&qp->dev->lock);
    qp_fault(qp, (rnicpi_async_cause_t) cause);
    g_mutex_unlock(&qp->dev->lock);
    return RNICPI_OK;
  }
  if (error) {
    ib_sweep_add(qp);
    return RNICPI_OK;
  }
  if (err == ENOMEM)
    return RNICPI_EFULL;
  return err == 0 ? RNICPI_OK : err == EINVAL ? RNICPI_EINVAL : ib_status_of_errno(err);
}

static rnicpi_status_t
ib_post_recv(rnicpi_qp_t *q, const rnicpi_recv_wr_t *wr)
{
  ib_qp_t *qp = to_ib_qp(q);
  if (qp->srq != NULL)
    return RNICPI_ESTATE;
  struct ibv_sge sge[32];
  uint32_t len = 0;
  /* A bad segment is the device's to report, when a message arrives;
   * what it reports is its own (rxe: LOC_QP_OP_ERR, do_class_ac_error in
   * rxe_resp.c), and RNIC-PI's is a local protection error. */
  int sges = map_sges(qp->dev, qp->base.pd, wr->sg_list, wr->num_sge, sge,
                      MIN(qp->max_recv_sge, G_N_ELEMENTS(sge)), RNICPI_ACCESS_LOCAL_WRITE, &len);
  if (sges == IB_SGE_LIMIT)
    return RNICPI_ELIMIT;
  struct ibv_recv_wr v = { .sg_list = sge, .num_sge = (int) wr->num_sge }, *bad = NULL;
  rnicpi_spin_lock(&qp->rq_lock);
  if (qp->rq.tail - qp->rq.head >= qp->rq_max) {
    rnicpi_spin_unlock(&qp->rq_lock);
    return RNICPI_EFULL;
  }
  uint64_t seq = qp->rq.tail;
  ib_shadow_t *s = wq_at(&qp->rq, seq);
  s->wr_id = wr->wr_id;
  s->opcode = RNICPI_WC_RECV;
  s->signaled = 1;
  s->done = 0;
  s->fail = sges == IB_SGE_FAULT ? RNICPI_WC_LOC_PROT_ERR : 0;
  s->len = len;
  s->rkey = 0;
  if (qp->rq_sge != NULL) {
    /* UD: where the GRH lands, read at completion (ib_ud.c), in our own
     * addresses. */
    struct ibv_sge *at = &qp->rq_sge[(seq & (qp->rq.size - 1)) * qp->max_recv_sge];
    for (uint32_t i = 0; i < wr->num_sge; i++)
      at[i] = (struct ibv_sge){ .addr = wr->sg_list[i].addr, .length = wr->sg_list[i].length,
                                .lkey = (uint32_t) wr->sg_list[i].lkey };
    s->nsge = (uint8_t) wr->num_sge;
  }
  gboolean error = qp->state == IB_QP_ERROR;
  s->given = !error;
  qp->rq.tail = seq + 1;
  int err = 0;
  if (!error) {
    v.wr_id = ib_wrid(qp->serial, IB_KIND_RECV, seq);
    err = ibv_post_recv(qp->qp, &v, &bad);
    if (err != 0)
      qp->rq.tail = seq;
  }
  rnicpi_spin_unlock(&qp->rq_lock);
  if (error) {
    ib_sweep_add(qp);
    return RNICPI_OK;
  }
  if (err == ENOMEM)
    return RNICPI_EFULL;
  return err == 0 ? RNICPI_OK : ib_status_of_errno(err);
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

static rnicpi_status_t
ib_srq_create(rnicpi_pd_t *p, uint32_t max_wr, uint32_t max_sge, uint64_t al_ctx,
              rnicpi_srq_t **out)
{
  ib_dev_t *dev = to_ib_dev(p->dev);
  if (max_wr == 0 || max_wr > dev->caps.max_qp_wr || max_sge == 0 ||
      max_sge > dev->caps.max_recv_sge)
    return RNICPI_ELIMIT;
  ib_srq_t *srq = g_new0(ib_srq_t, 1);
  struct ibv_srq_init_attr ia = {
    .srq_context = srq,
    .attr = { .max_wr = max_wr, .max_sge = max_sge },
  };
  srq->srq = ibv_create_srq(to_ib_pd(p)->pd, &ia);
  if (srq->srq == NULL) {
    int err = errno;
    g_free(srq);
    return err == EINVAL ? RNICPI_ELIMIT : ib_status_of_errno(err);
  }
  srq->base.pd = p;
  srq->base.al_ctx = al_ctx;
  srq->dev = dev;
  srq->serial = ib_dev_serial(dev);
  srq->max_sge = max_sge;
  srq->nslots = max_wr;
  srq->slot = g_new0(ib_shadow_t, max_wr);
  srq->free = g_new(uint32_t, max_wr);
  for (uint32_t i = 0; i < max_wr; i++) {
    srq->slot[i].done = 1;
    srq->free[i] = max_wr - 1 - i;
  }
  srq->nfree = max_wr;
  *out = &srq->base;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_srq_modify(rnicpi_srq_t *s, uint32_t max_wr, uint32_t limit)
{
  ib_srq_t *srq = to_ib_srq(s);
  struct ibv_srq_attr a = { .max_wr = max_wr, .srq_limit = limit };
  int mask = IBV_SRQ_LIMIT;
  if (max_wr != 0 && max_wr != srq->nslots) {
    if (max_wr < srq->posted)
      return RNICPI_EBUSY; /* it holds more receives than that */
    mask |= IBV_SRQ_MAX_WR;
  }
  int err = ibv_modify_srq(srq->srq, &a, mask);
  if (err != 0)
    return ib_status_of_errno(err);
  if (mask & IBV_SRQ_MAX_WR) {
    rnicpi_spin_lock(&srq->lock);
    if (max_wr > srq->nslots) {
      srq->slot = g_renew(ib_shadow_t, srq->slot, max_wr);
      srq->free = g_renew(uint32_t, srq->free, max_wr);
      for (uint32_t i = srq->nslots; i < max_wr; i++) {
        memset(&srq->slot[i], 0, sizeof(srq->slot[i]));
        srq->slot[i].done = 1;
        srq->free[srq->nfree++] = i;
      }
      srq->nslots = max_wr;
    }
    srq->cap = max_wr;
    rnicpi_spin_unlock(&srq->lock);
  }
  return RNICPI_OK;
}

static rnicpi_status_t
ib_srq_destroy(rnicpi_srq_t *s)
{
  ib_srq_t *srq = to_ib_srq(s);
  int err = ibv_destroy_srq(srq->srq);
  if (err != 0)
    return err == EBUSY ? RNICPI_EBUSY : ib_status_of_errno(err);
  g_free(srq->slot);
  g_free(srq->free);
  g_free(srq);
  return RNICPI_OK;
}

static rnicpi_status_t
ib_post_srq_recv(rnicpi_srq_t *s, const rnicpi_recv_wr_t *wr)
{
  ib_srq_t *srq = to_ib_srq(s);
  struct ibv_sge sge[32];
  uint32_t len = 0;
  if (map_sges(srq->dev, srq->base.pd, wr->sg_list, wr->num_sge, sge,
               MIN(srq->max_sge, G_N_ELEMENTS(sge)), RNICPI_ACCESS_LOCAL_WRITE, &len) == IB_SGE_LIMIT)
    return RNICPI_ELIMIT;
  struct ibv_recv_wr v = { .sg_list = sge, .num_sge = (int) wr->num_sge }, *bad = NULL;
  rnicpi_spin_lock(&srq->lock);
  uint32_t cap = srq->cap != 0 ? srq->cap : srq->nslots;
  if (srq->nfree == 0 || srq->posted >= cap) {
    rnicpi_spin_unlock(&srq->lock);
    return RNICPI_EFULL;
  }
  uint32_t slot = srq->free[--srq->nfree];
  ib_shadow_t *sh = &srq->slot[slot];
  sh->wr_id = wr->wr_id;
  sh->opcode = RNICPI_WC_RECV;
  sh->len = len;
  sh->done = 0;
  srq->posted++;
  v.wr_id = ib_wrid(srq->serial, IB_KIND_SRQ, slot);
  int err = ibv_post_srq_recv(srq->srq, &v, &bad);
  if (err != 0) {
    sh->done = 1;
    srq->free[srq->nfree++] = slot;
    srq->posted--;
  }
  rnicpi_spin_unlock(&srq->lock);
  if (err == ENOMEM)
    return RNICPI_EFULL;
  return err == 0 ? RNICPI_OK : ib_status_of_errno(err);
}

static uint32_t
ib_srq_count(rnicpi_srq_t *s)
{
  ib_srq_t *srq = to_ib_srq(s);
  rnicpi_spin_lock(&srq->lock);
  uint32_t n = srq->posted;
  rnicpi_spin_unlock(&srq->lock);
  return n;
}

/* ---- tables ---------------------------------------------------------------- */

const rnicpi_queue_ops_t ib_queue_ops = {
  .size = sizeof(rnicpi_queue_ops_t),
  .cq_create = ib_cq_create,
  .cq_destroy = ib_cq_destroy,
  .qp_create = ib_qp_create,
  .qp_modify = ib_qp_modify,
  .qp_to_error = ib_qp_to_error,
  .qp_reset = ib_qp_reset,
  .qp_state = ib_qp_state,
  .qp_destroy = ib_qp_destroy,
};

const rnicpi_data_ops_t ib_data_ops = {
  .size = sizeof(rnicpi_data_ops_t),
  .post_send = ib_post_send,
  .post_recv = ib_post_recv,
  .poll_cq = ib_poll_cq,
  .cq_count = ib_cq_count,
  .arm_cq = ib_arm_cq,
};

const rnicpi_srq_ops_t ib_srq_ops = {
  .size = sizeof(rnicpi_srq_ops_t),
  .srq_create = ib_srq_create,
  .srq_modify = ib_srq_modify,
  .srq_destroy = ib_srq_destroy,
  .post_srq_recv = ib_post_srq_recv,
  .srq_count = ib_srq_count,
};
