/*
 * vp/ib queue pairs: creation (the verbs queue pair, its shadows and its
 * room in the CQs), the state the adapter tracks, modify, the move to
 * ERROR, reset (on iWARP a new verbs queue pair) and destruction, which
 * first complete what the queue pair still holds.  Work requests are
 * posted in ib_post.c and their completions translated in ib_comp.c.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>

#include "ib.h"

/* ---- queue pairs ---------------------------------------------------------- */

static void
wq_init(ib_wq_t *q, uint32_t n)
{
  q->size = 1;
  while (q->size < MAX(n, 1u))
    q->size <<= 1;
  q->e = g_new0(ib_shadow_t, q->size);
  q->head = q->tail = 0;
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
void
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
