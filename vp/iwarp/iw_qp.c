/*
 * vp/iwarp queue pairs: creation, state, posting, in-order completion of
 * the send queue, flush, and the dispatch of socket readiness to the CM,
 * receive and transmit engines.
 *
 * Every work request lives in exactly one queue (sq, sq_out, rq, or the
 * receive in progress) until it completes, so a flush completes each one
 * exactly once (RDMAC verbs 8.2: WRs complete in order; in ERROR every
 * outstanding WR completes flushed).  A receive of an SRQ is the SRQ's
 * until a message takes it (iw_srq.c), then the QP's receive in progress:
 * a flush completes that one and leaves the SRQ's to its other QPs.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iw.h"

static const rnicpi_wc_opcode_t wc_opcode_of[RNICPI_WR_OPCODE_COUNT] = {
  [RNICPI_WR_SEND] = RNICPI_WC_SEND,
  [RNICPI_WR_SEND_INV] = RNICPI_WC_SEND,
  [RNICPI_WR_RDMA_WRITE] = RNICPI_WC_RDMA_WRITE,
  [RNICPI_WR_RDMA_READ] = RNICPI_WC_RDMA_READ,
  [RNICPI_WR_RDMA_READ_INV] = RNICPI_WC_RDMA_READ,
  [RNICPI_WR_ATOMIC_CMP_SWP] = RNICPI_WC_CMP_SWP,
  [RNICPI_WR_ATOMIC_FETCH_ADD] = RNICPI_WC_FETCH_ADD,
  [RNICPI_WR_IMM_DATA] = RNICPI_WC_SEND,
  [RNICPI_WR_RDMA_WRITE_IMM] = RNICPI_WC_RDMA_WRITE,
  [RNICPI_WR_LOCAL_INV] = RNICPI_WC_LOCAL_INV,
  [RNICPI_WR_FAST_REG] = RNICPI_WC_FAST_REG,
  [RNICPI_WR_BIND_MW] = RNICPI_WC_BIND_MW,
};

/* What RFC 7306 adds: on a connection only when both ends offered it. */
static gboolean
wr_is_rfc7306(rnicpi_wr_opcode_t op)
{
  return rnicpi_wr_is_atomic(op) || op == RNICPI_WR_IMM_DATA || op == RNICPI_WR_RDMA_WRITE_IMM;
}

void
iw_qp_complete(iw_qp_t *qp, iw_cq_t *cq, uint64_t wr_id, rnicpi_wc_opcode_t op,
               rnicpi_wc_status_t st, uint32_t len, iw_work_t *w)
{
  rnicpi_wc_t wc = {
    .wr_id = wr_id, .qp_ctx = qp->base.al_ctx, .status = st, .opcode = op, .byte_len = len,
  };
  iw_cq_push(cq, &wc, w);
}

static void
complete_swqe(iw_qp_t *qp, iw_swqe_t *s, rnicpi_wc_status_t st, iw_work_t *w)
{
  if (!s->internal)
    qp->sq_used--;
  if (!s->internal && (st != RNICPI_WC_SUCCESS || (s->wr.flags & RNICPI_WR_SIGNALED))) {
    gboolean killed = s->wr.opcode == RNICPI_WR_RDMA_READ_INV && st == RNICPI_WC_SUCCESS;
    rnicpi_wc_t wc = {
      .wr_id = s->wr.wr_id, .qp_ctx = qp->base.al_ctx, .status = st,
      .opcode = wc_opcode_of[s->wr.opcode],
      .byte_len = st == RNICPI_WC_SUCCESS ? (uint32_t) s->total : 0,
      /* rnicpi_wc_t::rkey: a fast registration's or a bind's new STag,
       * the one a local invalidation named. */
      .rkey = s->wr.opcode == RNICPI_WR_FAST_REG || s->wr.opcode == RNICPI_WR_BIND_MW ? s->wr.rkey :
              s->wr.opcode == RNICPI_WR_LOCAL_INV || killed ? s->wr.invalidate_rkey : 0,
      /* A Read with Invalidate killed its sink key (iw_rx.c). */
      .flags = killed ? RNICPI_WC_WITH_INV : 0,
    };
    iw_cq_push(qp->scq, &wc, w);
  }
  if (!s->internal)
    iw_mem_post_done(&s->wr);
  rnicpi_cache_put(&qp->swqe_cache, s);
}

/* Complete the finished head of the send queue, in posting order.  A
 * scattered Read that failed waits for its parts still in flight (they
 * name it): the flush that follows its failure frees them and completes
 * it, once, with its own status. */
void
iw_qp_sq_reap(iw_qp_t *qp, iw_work_t *w)
{
  iw_swqe_t *s;
  while ((s = rnicpi_fifo_peek(&qp->sq_out)) != NULL && s->done && s->parts_out == 0) {
    rnicpi_fifo_pop(&qp->sq_out);
    complete_swqe(qp, s, s->status, w);
  }
}

/* To ERROR: every outstanding work request completes, flushed unless it
 * already finished with its own status. */
void
iw_qp_flush(iw_qp_t *qp, iw_work_t *w)
{
  qp->state = RNICPI_QPS_ERROR;
  qp->closing = FALSE;
  /* A message half sent names user memory: forget it (the stream is dead
   * for data; only a Terminate between FPDUs may still go out). */
  iw_tx_drop(qp);
  iw_swqe_t *s;
  while ((s = rnicpi_fifo_pop(&qp->sq_out)) != NULL)
    complete_swqe(qp, s, s->done ? s->status : RNICPI_WC_WR_FLUSH_ERR, w);
  while ((s = rnicpi_fifo_pop(&qp->sq)) != NULL)
    complete_swqe(qp, s, RNICPI_WC_WR_FLUSH_ERR, w);
  rnicpi_fifo_init(&qp->orq, offsetof(iw_swqe_t, or_next)); /* its entries were in sq_out */
  qp->rd_split = NULL; /* it was in sq_out too */
  qp->ord_used = 0;
  qp->unfenced = 0;
  qp->fence_out = FALSE;
  qp->fin_fence = FALSE;
  qp->rx.rdwqe = NULL;
  if (qp->rx.rwqe != NULL) {
    iw_qp_complete(qp, qp->rcq, qp->rx.rwqe->wr_id, RNICPI_WC_RECV, RNICPI_WC_WR_FLUSH_ERR, 0, w);
    iw_qp_recv_put(qp, qp->rx.rwqe);
    qp->rx.rwqe = NULL;
  }
  iw_rwqe_t *r;
  while ((r = rnicpi_fifo_pop(&qp->rq)) != NULL) {
    iw_qp_complete(qp, qp->rcq, r->wr_id, RNICPI_WC_RECV, RNICPI_WC_WR_FLUSH_ERR, 0, w);
    rnicpi_cache_put(&qp->rwqe_cache, r);
  }
  iw_rresp_t *rr;
  while ((rr = rnicpi_fifo_pop(&qp->irq)) != NULL)
    rnicpi_cache_put(&qp->rresp_cache, rr);
}

/* One final CM event per connection (REJECTED, UNREACHABLE, DISCONNECTED
 * or BROKEN), and ESTABLISHED at most once before it. */
void
iw_qp_cm_event(iw_qp_t *qp, rnicpi_cm_event_type_t type, const void *pdata,
               uint32_t pdata_len, rnicpi_cm_reason_t reason)
{
  if (type != RNICPI_CM_ESTABLISHED) {
    if (qp->final_event)
      return;
    qp->final_event = TRUE;
  }
  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = type;
  ev->qp_ctx = qp->base.al_ctx;
  ev->ird = qp->ird;
  ev->ord = qp->ord;
  ev->reason = reason;
  ev->pdata_len = MIN(pdata_len, (uint32_t) RNICPI_MAX_PDATA);
  if (ev->pdata_len > 0)
    memcpy(ev->pdata, pdata, ev->pdata_len);
  iw_defer_cm(qp->dev, ev);
  g_free(ev);
}

/* The connection failed or ended: ERROR, flush, and the consumer is told. */
void
iw_qp_fail(iw_qp_t *qp, rnicpi_cm_event_type_t ev, iw_work_t *w)
{
  gboolean was_connected = iw_qp_connected(qp);
  /* Pollers drive only live streams: the thread sees this one out. */
  iw_qp_set_polled(qp, FALSE);
  iw_qp_flush(qp, w);
  if (was_connected || ev != RNICPI_CM_BROKEN)
    iw_qp_cm_event(qp, ev, NULL, 0, RNICPI_CM_REASON_NONE);
}

void
iw_qp_close_fd(iw_qp_t *qp)
{
  if (qp->fd >= 0) {
    iw_epoll_del(qp->dev, qp->fd);
    close(qp->fd);
    qp->fd = -1;
  }
  qp->epmask = 0;
  qp->cs = IW_CS_CLOSED;
  qp->want_out = FALSE;
  iw_qp_set_polled(qp, FALSE);
  iw_timed_del(qp);
}

void
iw_qp_async(iw_qp_t *qp, rnicpi_async_cause_t cause, uint8_t layer, uint8_t etype, uint8_t code)
{
  rnicpi_async_event_t ev = rnicpi_async_event(rnicpi_async_type_of(cause), qp->base.al_ctx, cause);
  ev.term_layer = layer;
  ev.term_etype = etype;
  ev.term_code = code;
  iw_defer_async(qp->dev, &ev);
}

void
iw_qp_llp_fail(iw_qp_t *qp, iw_work_t *w)
{
  if (iw_qp_connected(qp))
    iw_qp_async(qp, RNICPI_AE_LLP, RNICPI_TERM_NONE, RNICPI_TERM_NONE, RNICPI_TERM_NONE);
  iw_qp_fail(qp, RNICPI_CM_BROKEN, w);
}

/* The TCP connection is gone under us (reset, or EOF where none may be). */
void
iw_qp_conn_lost(iw_qp_t *qp, iw_work_t *w)
{
  if (qp->cs == IW_CS_CLOSING && qp->state == RNICPI_QPS_RTS)
    iw_qp_fail(qp, RNICPI_CM_DISCONNECTED, w);
  else if (qp->state != RNICPI_QPS_ERROR || !qp->final_event)
    iw_qp_llp_fail(qp, w);
  iw_qp_close_fd(qp);
}

void
iw_qp_go_rts(iw_qp_t *qp)
{
  qp->state = RNICPI_QPS_RTS;
  qp->cs = IW_CS_RTS;
  iw_timed_del(qp);
}

/* Full operation begins (before the RTR goes out or comes in). */
void
iw_qp_init_stream(iw_qp_t *qp)
{
  /* RFC 5041 5.1: MSNs start at 1 on each queue; we pre-increment. */
  for (int i = 0; i < IW_QN_COUNT; i++) {
    qp->msn_tx[i] = 0;
    qp->msn_rx[i] = 1;
  }
  iw_tx_drop(qp);
  iw_rx_reset(qp);
  iw_qp_mulpdu(qp);
}

/* RFC 5044 4.5: an FPDU fits the path's MULPDU, so that it can ride one
 * TCP segment: MULPDU = EMSS - (6 + EMSS mod 4) without markers.  Read at
 * the start of the stream and again as large messages go out
 * (IW_MSS_PROBE_BYTES): the segment size grows with the peer's window. */
void
iw_qp_mulpdu(iw_qp_t *qp)
{
  int emss = 0;
  socklen_t sl = sizeof(emss);
  uint32_t max = 4096;
  if (qp->fd >= 0 && getsockopt(qp->fd, IPPROTO_TCP, TCP_MAXSEG, &emss, &sl) == 0 && emss > 0)
    max = (uint32_t) emss - (uint32_t) emss % 4;
  qp->mss_bytes = 0;
  qp->fpdu_max = CLAMP(MIN(max, iw_config.fpdu_max), IW_FPDU_MIN, IW_FPDU_MAX);
}

/* The progress thread watches the socket for input and the peer's FIN,
 * and for room to write while a batch waits.  A socket a poller drives
 * leaves the epoll set altogether (epmask 0): the poller's own recv()
 * sees the FIN and errors, and a socket in no set costs nothing when a
 * segment arrives, where one in a set makes the sender's side run the
 * epoll wake-up for every segment (measurable on the 8-byte round trip).
 * It comes back, input and FIN level-triggered, when the lease ends. */
static void
qp_epoll_update(iw_qp_t *qp)
{
  uint32_t m = qp->polled ? 0 : EPOLLIN | EPOLLRDHUP | (qp->want_out ? EPOLLOUT : 0);
  if (qp->fd < 0 || m == qp->epmask)
    return;
  if (m == 0)
    iw_epoll_del(qp->dev, qp->fd);
  else
    iw_epoll_set(qp->dev, qp->fd, &qp->poll, m, qp->epmask == 0);
  qp->epmask = m;
}

static gboolean qp_slept_on(iw_qp_t *qp);

void
iw_qp_want_out(iw_qp_t *qp, gboolean on)
{
  qp->want_out = on;
  /* A thread asleep on the socket (iw_cq_wait_begin) watches it for input
   * only, unless it began with output waiting: room to write is the
   * progress thread's to watch, so the socket goes back to it (the sleeper
   * takes it again at its next cq_wait_begin). */
  if (on && qp->polled && qp_slept_on(qp))
    iw_qp_set_polled(qp, FALSE);
  qp_epoll_update(qp);
}

/* A busy poller of the QP's CQ takes over its input and output (on), or
 * gives them back to the progress thread (off).  While it holds them the
 * thread is not woken by every segment to compete with it for the QP;
 * the lease runs out IW_POLL_LEASE_US after the last poll
 * (iw_dev_poll_leases) or when the consumer arms the CQ to sleep. */
void
iw_qp_set_polled(iw_qp_t *qp, gboolean on)
{
  if (qp->polled == on)
    return;
  iw_dev_t *dev = qp->dev;
  qp->polled = on;
  if (!on)
    qp->slept = FALSE;
  g_mutex_lock(&dev->ev_lock);
  if (on) {
    qp->polled_link.data = qp;
    /* The thread may be in a 100 ms epoll_wait that counted no lease (or
     * napping, every lease a sleeper's): poll_progress and iw_cq_wait_end
     * wake it if this one outlives the poll or sleep that took it. */
    if (g_queue_is_empty(&dev->polled) || g_atomic_int_get(&dev->lease_nap))
      g_atomic_int_set(&dev->lease_untold, TRUE);
    g_queue_push_tail_link(&dev->polled, &qp->polled_link);
  } else if (qp->polled_link.data != NULL) {
    g_queue_unlink(&dev->polled, &qp->polled_link);
    qp->polled_link.data = NULL;
    if (g_queue_is_empty(&dev->polled))
      g_atomic_int_set(&dev->lease_untold, FALSE);
  }
  g_mutex_unlock(&dev->ev_lock);
  qp_epoll_update(qp);
}

/* A thread sleeps in cq_wait_begin .. cq_wait_end on a CQ of @qp: the
 * QP's socket is its to watch, however long it sleeps. */
static gboolean
qp_slept_on(iw_qp_t *qp)
{
  return g_atomic_int_get(&qp->scq->waiters) > 0 || g_atomic_int_get(&qp->rcq->waiters) > 0;
}

/* The device's progress thread, every millisecond while some QP is
 * poll-driven: a QP whose CQs nobody polled within the lease, and nobody
 * sleeps on, goes back to the thread, which does at once what the poller
 * left (input already in the socket, a deferred Read Response).  When
 * every lease left is a sleeper's, the thread may nap (dev->lease_nap):
 * it need not look again until a sleeper wakes, which wakes it. */
void
iw_dev_poll_leases(iw_dev_t *dev)
{
  gint64 now = g_get_monotonic_time();
  GPtrArray *out = NULL;
  /* Dekker with iw_cq_wait_end: the nap is announced before the sleepers
   * are counted, so a sleeper that leaves meanwhile sees it and wakes us. */
  g_atomic_int_set(&dev->lease_nap, TRUE);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  gboolean awake = FALSE;
  g_mutex_lock(&dev->ev_lock);
  for (GList *l = dev->polled.head; l != NULL; l = l->next) {
    iw_qp_t *qp = l->data;
    if (qp_slept_on(qp))
      continue;
    awake = TRUE;
    gint64 last = MAX(__atomic_load_n(&qp->scq->last_poll, __ATOMIC_RELAXED),
                      __atomic_load_n(&qp->rcq->last_poll, __ATOMIC_RELAXED));
    if (now - last > IW_POLL_LEASE_US) {
      if (out == NULL)
        out = g_ptr_array_new();
      g_ptr_array_add(out, qp);
    }
  }
  g_mutex_unlock(&dev->ev_lock);
  if (awake)
    g_atomic_int_set(&dev->lease_nap, FALSE);
  /* Only this thread frees QPs: the ones collected stay valid. */
  for (guint i = 0; out != NULL && i < out->len; i++) {
    iw_qp_t *qp = g_ptr_array_index(out, i);
    iw_work_t w;
    rnicpi_notify_batch_init(&w);
    g_mutex_lock(&qp->lock);
    if (!qp->dead && !qp_slept_on(qp))  /* a sleeper may have come since */
      iw_qp_unpoll(qp, &w);
    g_mutex_unlock(&qp->lock);
    iw_work_deliver(&w);
  }
  if (out != NULL)
    g_ptr_array_free(out, TRUE);
}

/* Give @qp back to the progress thread and catch up (qp->lock held). */
void
iw_qp_unpoll(iw_qp_t *qp, iw_work_t *w)
{
  if (!qp->polled)
    return;
  iw_qp_set_polled(qp, FALSE);
  if (qp->fd >= 0 && (qp->cs == IW_CS_RTS || qp->cs == IW_CS_CLOSING)) {
    iw_rx_progress(qp, w);
    if (qp->fd >= 0)
      iw_tx_progress(qp, w);
  }
}

/* A connected QP's socket is ready (qp->lock held). */
void
iw_qp_io_rts(iw_qp_t *qp, uint32_t events, iw_work_t *w)
{
  iw_mr_lock(qp);
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
    iw_rx_progress(qp, w);
  /* Read Responses for what came in, and whatever waited for room. */
  if (qp->fd >= 0)
    iw_tx_progress(qp, w);
  iw_mr_unlock(qp);
}

/* The progress thread: the socket of @qp is ready for something. */
void
iw_qp_io(iw_qp_t *qp, uint32_t events, iw_work_t *w)
{
  iw_qp_lock_io(qp);
  if (qp->dead || qp->fd < 0)
    goto unlock;
  switch (qp->cs) {
  case IW_CS_TCP_CONNECT:
  case IW_CS_MPA_REP:
  case IW_CS_HOLD:
  case IW_CS_MPA_REQ:
    iw_cm_qp_io(qp, events, w);
    break;
  case IW_CS_RTR_WAIT:
  case IW_CS_RTS:
  case IW_CS_CLOSING:
  case IW_CS_DRAIN:
    iw_qp_io_rts(qp, events, w);
    break;
  default:
    break;
  }
unlock:
  g_mutex_unlock(&qp->lock);
}

/* ---- posting ---------------------------------------------------------- */

rnicpi_status_t
iw_post_send(rnicpi_qp_t *q, const rnicpi_send_wr_t *wr)
{
  iw_qp_t *qp = to_iw_qp(q);
  iw_work_t w;
  rnicpi_notify_batch_init(&w);
  rnicpi_status_t st = RNICPI_OK;

  if ((unsigned) wr->opcode >= RNICPI_WR_OPCODE_COUNT)
    return RNICPI_EINVAL;
  /* RNIC-PI 1.4: windows are Read sinks only. */
  if ((wr->flags & RNICPI_WR_SINK_MW) && !iw_wr_is_read(wr->opcode))
    return RNICPI_EINVAL;
  gboolean stag_op = iw_mem_is_stag_op(wr->opcode);
  if (wr->opcode == RNICPI_WR_FAST_REG &&
      (wr->fast_reg.mr == NULL || !to_iw_mr(wr->fast_reg.mr)->fr))
    return RNICPI_EINVAL;
  if (wr->opcode == RNICPI_WR_BIND_MW && (wr->bind.mw == NULL || wr->bind.mr == NULL))
    return RNICPI_EINVAL;
  uint32_t max_sge = iw_wr_is_read(wr->opcode) ? qp->attr.max_rdma_read_sge :
                     wr->opcode == RNICPI_WR_RDMA_WRITE || wr->opcode == RNICPI_WR_RDMA_WRITE_IMM ?
                     qp->attr.max_rdma_write_sge :
                     wr->opcode == RNICPI_WR_IMM_DATA || stag_op ? 0 : qp->attr.max_send_sge;
  if (wr->num_sge > max_sge || wr->num_sge > IW_MAX_SGE)
    return RNICPI_ELIMIT;

  iw_qp_lock_post(qp);
  if (qp->state == RNICPI_QPS_IDLE) {
    st = RNICPI_ESTATE;
  } else if (wr_is_rfc7306(wr->opcode) && !qp->rfc7306) {
    /* RFC 5040 has neither atomics nor immediate data; RFC 7306 was not
     * agreed on this connection (ITAPI_IWARP_RFC7306=1 at both ends). */
    st = RNICPI_ENOTSUP;
  } else if (qp->state == RNICPI_QPS_ERROR || qp->closing) {
    iw_qp_complete(qp, qp->scq, wr->wr_id, wc_opcode_of[wr->opcode], RNICPI_WC_WR_FLUSH_ERR,
                   0, &w);
  } else if ((iw_wr_is_read(wr->opcode) || rnicpi_wr_is_atomic(wr->opcode)) &&
             qp->ord == 0) {
    st = RNICPI_ELIMIT; /* ORD 0: no Read or atomic may ever be outstanding */
  } else if (qp->sq_used >= qp->attr.max_send_wr) {
    st = RNICPI_EFULL;
  } else {
    iw_swqe_t *s = rnicpi_cache_get(&qp->swqe_cache, sizeof(iw_swqe_t));
    s->wr = *wr;
    /* A WR with no segments may carry sg_list NULL: memcpy from NULL is
     * undefined even for 0 bytes (C11 7.24.1p2), and UBSan says so. */
    if (wr->num_sge > 0)
      memcpy(s->sge, wr->sg_list, wr->num_sge * sizeof(rnicpi_sge_t));
    s->wr.sg_list = s->sge;
    s->total = 0;
    for (uint32_t i = 0; i < wr->num_sge; i++)
      s->total += wr->sg_list[i].length;
    s->done = FALSE;
    s->sent = FALSE;
    s->fence = FALSE;
    s->status = RNICPI_WC_SUCCESS;
    s->internal = FALSE;
    s->got = 0;
    s->sink = NULL;
    s->sink_stag = 0;
    s->sink_to = 0;
    s->parent = NULL;
    s->parts_out = s->part_sge = 0;
    s->part_off = 0;
    s->req_id = 0;
    s->qn = s->msn = 0;
    if (stag_op)
      iw_mem_post(qp, s);
    gboolean tx_idle = !iw_tx_pending(qp);
    rnicpi_fifo_push(&qp->sq, s);
    qp->sq_used++;
    /* Transmit from this thread while the socket takes it, one burst at
     * most (IW_IO_BURST); the progress thread continues when it would
     * block or the burst ends.  Except a small unsignaled
     * RDMA Write on a QP whose consumer sleeps for its completions
     * (it_evd_wait: the lease of iw_cq_wait_begin): it waits for what the
     * consumer does next, usually the Send that tells the peer about it,
     * to go out in the same sendmsg() and TCP segment and wake the peer
     * once.  The consumer's next post, empty poll or sleep sends it, and
     * at the latest the progress thread when the lease runs out
     * (IW_POLL_LEASE_US after the last poll or sleep).  A spinning poller's
     * Writes go at once: it may be polling memory for the answer instead
     * of its CQ.  ITAPI_IWARP_WRITE_HOLD=0 sends every Write at once. */
    if (!(wr->opcode == RNICPI_WR_RDMA_WRITE && !(wr->flags & RNICPI_WR_SIGNALED) &&
          s->total <= IW_TX_INLINE && qp->polled && qp->slept && tx_idle && iw_config.write_hold))
      iw_tx_progress(qp, &w);
  }
  g_mutex_unlock(&qp->lock);
  iw_work_deliver(&w);
  return st;
}

rnicpi_status_t
iw_post_recv(rnicpi_qp_t *q, const rnicpi_recv_wr_t *wr)
{
  iw_qp_t *qp = to_iw_qp(q);
  iw_work_t w;
  rnicpi_notify_batch_init(&w);
  rnicpi_status_t st = RNICPI_OK;

  if (qp->srq != NULL)
    return RNICPI_EINVAL; /* its receives are the SRQ's (post_srq_recv) */
  if (wr->num_sge > qp->attr.max_recv_sge || wr->num_sge > IW_MAX_SGE)
    return RNICPI_ELIMIT;
  iw_qp_lock_post(qp);
  if (qp->state == RNICPI_QPS_ERROR) {
    iw_qp_complete(qp, qp->rcq, wr->wr_id, RNICPI_WC_RECV, RNICPI_WC_WR_FLUSH_ERR, 0, &w);
  } else if (qp->rq.len + (qp->rx.rwqe != NULL) >= qp->attr.max_recv_wr) {
    st = RNICPI_EFULL;
  } else {
    iw_rwqe_t *r = rnicpi_cache_get(&qp->rwqe_cache, sizeof(iw_rwqe_t));
    r->wr_id = wr->wr_id;
    r->num_sge = wr->num_sge;
    r->total = 0;
    if (wr->num_sge > 0) /* sg_list may be NULL (C11 7.24.1p2, as in post_send) */
      memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(rnicpi_sge_t));
    for (uint32_t i = 0; i < wr->num_sge; i++)
      r->total += wr->sg_list[i].length;
    rnicpi_fifo_push(&qp->rq, r);
  }
  g_mutex_unlock(&qp->lock);
  iw_work_deliver(&w);
  return st;
}

/* ---- queue pair verbs ------------------------------------------------- */

rnicpi_status_t
iw_qp_create(rnicpi_pd_t *p, const rnicpi_qp_attr_t *attr, uint64_t ctx, rnicpi_qp_t **out)
{
  iw_dev_t *dev = to_iw_dev(p->dev);
  if (attr->send_cq == NULL || attr->recv_cq == NULL)
    return RNICPI_EINVAL;
  /* iWARP is connected only (RFC 5040): no datagram service to give. */
  if (attr->type == RNICPI_QPT_UD)
    return RNICPI_ENOTSUP;
  if (attr->type != RNICPI_QPT_RC)
    return RNICPI_EINVAL;
  if (attr->max_send_wr > dev->caps.max_qp_wr || attr->max_recv_wr > dev->caps.max_qp_wr ||
      attr->max_send_sge > dev->caps.max_send_sge || attr->max_recv_sge > dev->caps.max_recv_sge ||
      attr->max_rdma_read_sge > dev->caps.max_rdma_read_sge ||
      attr->max_rdma_write_sge > dev->caps.max_rdma_write_sge ||
      attr->ird > dev->caps.max_ird || attr->ord > dev->caps.max_ord ||
      !rnicpi_count_take(&dev->nqp, dev->caps.max_qp))
    return RNICPI_ELIMIT;
  iw_srq_t *srq = (iw_srq_t *) attr->srq;
  if (srq != NULL) {
    rnicpi_status_t st = iw_srq_attach(srq, to_iw_pd(p));
    if (st != RNICPI_OK) {
      rnicpi_count_put(&dev->nqp);
      return st;
    }
  }
  iw_qp_t *qp = g_new0(iw_qp_t, 1);
  qp->poll.kind = IW_POLL_QP;
  qp->base.pd = p;
  qp->base.al_ctx = ctx;
  qp->dev = dev;
  qp->pd = to_iw_pd(p);
  qp->scq = to_iw_cq(attr->send_cq);
  qp->rcq = to_iw_cq(attr->recv_cq);
  qp->srq = srq;
  qp->attr = *attr;
  qp->state = RNICPI_QPS_IDLE;
  qp->fd = -1;
  qp->fpdu_max = 4096;
  qp->timed_link.data = qp->polled_link.data = NULL;
  g_mutex_init(&qp->lock);
  rnicpi_fifo_init(&qp->sq, offsetof(iw_swqe_t, q_next));
  rnicpi_fifo_init(&qp->sq_out, offsetof(iw_swqe_t, q_next));
  rnicpi_fifo_init(&qp->orq, offsetof(iw_swqe_t, or_next));
  rnicpi_fifo_init(&qp->rq, offsetof(iw_rwqe_t, q_next));
  rnicpi_fifo_init(&qp->irq, offsetof(iw_rresp_t, q_next));
  qp->base.qp_num = (uint32_t) g_atomic_int_add(&dev->next_qpn, 1) + 1;
  g_atomic_int_inc(&qp->scq->nqp);
  g_atomic_int_inc(&qp->rcq->nqp);
  iw_cq_attach(qp->scq, qp);
  if (qp->rcq != qp->scq)
    iw_cq_attach(qp->rcq, qp);
  g_atomic_int_inc(&qp->pd->nobj);
  *out = &qp->base;
  return RNICPI_OK;
}

rnicpi_status_t
iw_qp_modify(rnicpi_qp_t *q, const rnicpi_qp_attr_t *attr)
{
  iw_qp_t *qp = to_iw_qp(q);
  if (attr->ird > qp->dev->caps.max_ird || attr->ord > qp->dev->caps.max_ord)
    return RNICPI_ELIMIT;
  g_mutex_lock(&qp->lock);
  qp->attr.access = attr->access;
  qp->attr.ird = attr->ird;
  qp->attr.ord = attr->ord;
  g_mutex_unlock(&qp->lock);
  return RNICPI_OK;
}

/* Abort whatever connection @qp has: a Terminate (RDMAP, local
 * catastrophic) tells a connected peer, which sees BROKEN. */
static void
qp_abort(iw_qp_t *qp, iw_work_t *w)
{
  switch (qp->cs) {
  case IW_CS_RTS:
  case IW_CS_RTR_WAIT:
  case IW_CS_CLOSING:
    iw_term_send(qp, RNICPI_AE_UNSPECIFIED, IW_LAYER_RDMAP, IW_RDMAP_ET_CATASTROPHIC, 0, NULL, 0,
                 0, NULL, w);
    break;
  case IW_CS_TCP_CONNECT:
  case IW_CS_MPA_REP:
  case IW_CS_HOLD:
  case IW_CS_MPA_REQ:
    iw_qp_flush(qp, w);
    iw_qp_close_fd(qp);
    break;
  default:
    iw_qp_flush(qp, w);
    break;
  }
}

rnicpi_status_t
iw_qp_to_error(rnicpi_qp_t *q)
{
  iw_qp_t *qp = to_iw_qp(q);
  iw_work_t w;
  rnicpi_notify_batch_init(&w);
  g_mutex_lock(&qp->lock);
  qp_abort(qp, &w);
  g_mutex_unlock(&qp->lock);
  iw_work_deliver(&w);
  return RNICPI_OK;
}

rnicpi_status_t
iw_qp_reset(rnicpi_qp_t *q)
{
  iw_qp_t *qp = to_iw_qp(q);
  rnicpi_status_t st = RNICPI_OK;
  g_mutex_lock(&qp->lock);
  if (qp->state == RNICPI_QPS_RTS || (qp->cs != IW_CS_NONE && qp->cs != IW_CS_CLOSED &&
                                      qp->cs != IW_CS_DRAIN)) {
    st = RNICPI_ESTATE;
  } else {
    if (qp->fd >= 0)
      iw_qp_close_fd(qp);
    qp->state = RNICPI_QPS_IDLE;
    qp->cs = IW_CS_NONE;
    qp->final_event = FALSE;
    qp->term_pending = qp->term_sent = FALSE;
    qp->tx_hold = FALSE;
    iw_tx_drop(qp);
    g_free(qp->tail);
    qp->tail = NULL;
    qp->tail_len = 0;
    iw_rx_reset(qp);
    iw_cep_put(qp); /* a setup that never finished */
  }
  g_mutex_unlock(&qp->lock);
  return st;
}

rnicpi_qp_state_t
iw_qp_state(rnicpi_qp_t *q)
{
  iw_qp_t *qp = to_iw_qp(q);
  g_mutex_lock(&qp->lock);
  rnicpi_qp_state_t s = qp->state;
  g_mutex_unlock(&qp->lock);
  return s;
}

rnicpi_status_t
iw_qp_destroy(rnicpi_qp_t *q)
{
  iw_qp_t *qp = to_iw_qp(q);
  iw_work_t w;
  rnicpi_notify_batch_init(&w);
  g_mutex_lock(&qp->lock);
  if (qp->fd >= 0 && iw_tx_fin_cut_short(qp))
    iw_qp_fail(qp, RNICPI_CM_DISCONNECTED, &w);
  else if (qp->state != RNICPI_QPS_ERROR || qp->cs != IW_CS_NONE)
    qp_abort(qp, &w);
  if (qp->fd >= 0) {
    iw_tx_progress(qp, &w); /* one try to get the Terminate out */
    iw_qp_close_fd(qp);
  }
  iw_qp_flush(qp, &w);
  iw_mw_qp_gone(qp);
  iw_timed_del(qp);
  iw_qp_set_polled(qp, FALSE);
  iw_tx_free(qp);
  g_free(qp->rx.junk);
  qp->rx.junk = NULL;
  iw_cep_put(qp);
  qp->dead = TRUE;
  g_mutex_unlock(&qp->lock);
  iw_work_deliver(&w);
  iw_cq_detach(qp->scq, qp);
  if (qp->rcq != qp->scq)
    iw_cq_detach(qp->rcq, qp);
  g_atomic_int_dec_and_test(&qp->scq->nqp);
  g_atomic_int_dec_and_test(&qp->rcq->nqp);
  g_atomic_int_dec_and_test(&qp->pd->nobj);
  rnicpi_count_put(&qp->dev->nqp);
  /* Dead under its lock, it takes nothing more from its SRQ. */
  if (qp->srq != NULL)
    iw_srq_detach(qp->srq);
  /* The progress thread may hold it in its current batch: it frees it. */
  iw_dev_bury(qp->dev, qp);
  return RNICPI_OK;
}

/* The queue table: this file's QP operations and the CQ ones of iw_cq.c. */
const rnicpi_queue_ops_t iw_queue_ops = {
  .size = sizeof(rnicpi_queue_ops_t),
  .cq_create = iw_cq_create,
  .cq_destroy = iw_cq_destroy,
  .qp_create = iw_qp_create,
  .qp_modify = iw_qp_modify,
  .qp_to_error = iw_qp_to_error,
  .qp_reset = iw_qp_reset,
  .qp_state = iw_qp_state,
  .qp_destroy = iw_qp_destroy,
};
