/*
 * vp/emul queue pairs: posting to them (a request executes at once,
 * emul_exec.c, or waits in the send queue in order; a receive is queued)
 * and their life: create, modify, to error, reset, state, destroy.
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
 * (link->ring): a Send, RDMA Write or Read that emul_ring_hot takes
 * (one SGE, the ring's latency case) holds that lock alone when its local
 * key names no window or fast-registered region, and so do a receive that no Send of the peer waits for and a
 * busy poll's drain of the ring's common case (emul_ring_drain_link);
 * anything else on it takes the fabric lock, then the link's.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "emul.h"

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
    st = emul_req_post(qp, wr, w);
  } else if (link_copying(qp)) {
    emul_swqe_keep(qp, wr);  /* behind the request being copied: the copier runs it */
    qp->link->again = TRUE;
  } else if (!emul_wq_empty(&qp->sq) ||
             emul_exec_of[wr->opcode](qp, wr, w) == EMUL_EXEC_BLOCKED) {
    emul_swqe_keep(qp, wr);  /* ordered behind a blocked send */
  }
  return st;
}

/* A one-SGE send, RDMA Write or Read on a cross-process QP, within the
 * QP's limits: a candidate for emul_ring_hot.  qp->x is read without the
 * lock, as a hint only. */
static inline gboolean
x_hot_candidate(emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  return __atomic_load_n(&qp->x, __ATOMIC_RELAXED) != NULL && emul_req_hot_shape(wr) &&
         (wr->opcode == RNICPI_WR_RDMA_WRITE ? qp->attr.max_rdma_write_sge :
          wr->opcode == RNICPI_WR_RDMA_READ ? qp->attr.max_rdma_read_sge : qp->attr.max_send_sge) >= 1;
}

rnicpi_status_t
emul_post_send(rnicpi_qp_t *q, const rnicpi_send_wr_t *wr_in)
{
  emul_qp_t *qp = to_emul_qp(q);
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  rnicpi_status_t st = RNICPI_OK;

  /* The latency case first: everything this request needs was checked by
   * an earlier one (emul_ring_hot), under the QP's link alone
   * when its local key names no window or fast-registered region (whose
   * fields change under the fabric lock: emul_ring_hot_local); otherwise
   * the full path below, under the fabric lock and the link's. */
  emul_link_t *l;
  if (x_hot_candidate(qp, wr_in) && (l = fast_lock(qp)) != NULL) {
    gboolean done = emul_ring_hot(qp, wr_in, TRUE, &w);
    rnicpi_spin_unlock(&l->lock);
    if (G_LIKELY(done)) {
      emul_ring_bells_flush();
      emul_work_deliver(&w);
      return RNICPI_OK;
    }
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
      st = emul_ud_post_send(qp, l, wr, &w, &out);
    } else {
      if (l != NULL)
        rnicpi_spin_unlock(&l->lock);
      emul_lock_data_path();
      st = emul_ud_post_send(qp, NULL, wr, &w, &out);
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
      emul_req_run(qp->peer, FALSE, w);  /* a send waiting for this receive */
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
      attr->ird > dev->caps.max_ird || attr->ord > dev->caps.max_ord ||
      !rnicpi_count_take(&dev->nqp, dev->caps.max_qp))
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
  rnicpi_count_put(&to_emul_dev(q->pd->dev)->nqp);
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
