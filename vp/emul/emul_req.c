/*
 * vp/emul's requester, written once for both transports (rxe_requester's
 * model): the send queue's requests not yet issued go, in order, as far
 * as RC ordering and the ORD allow, each to what executes it: a bind,
 * Local Invalidate or fast registration here (emul_qp_exec_local), a
 * one-sided RDMA the transport makes itself (ops->place: across
 * processes, by attach or into a mapped region), else the local rule
 * (emul_req_local) and the request as a packet to the transport
 * (ops->transmit).  In process (emul_xport_local) the peer answers within the
 * send, so a request leaves the queue at once, or stays at its head while
 * a Send waits for a receive; across processes (emul_xport_ring) it stays
 * issued until its answer (the completer, emul_comp.c).
 *
 * A post across processes is emul_req_post: its fast case first
 * (emul_ring_hot), then the request queued and this run.  In
 * process a request with nothing ahead of it executes from the caller's
 * memory (emul_qp.c).
 *
 * SPDX-License-Identifier: MIT
 */
#include "emul_ring.h"
#include "emul_xport.h"

/* The ORD credits @wr takes until its answer: none for what is not a Read
 * or atomic; one for a Read, or, where a wire Read names one sink
 * (read_sink_per_run: iWARP), one per run of its sink segments that follow
 * each other in memory in one region, as the wire Reads an iWARP RNIC
 * splits it into.  Those parts beyond the ORD would wait for the earlier
 * ones' answers: a Read of more runs than the ORD takes the whole ORD,
 * and is issued only when nothing else holds any of it. */
static uint32_t
ord_cost(emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  if (!emul_is_rd_atomic(wr->opcode))
    return 0;
  if (!emul_pers_of_qp(qp)->read_sink_per_run || rnicpi_wr_is_atomic(wr->opcode))
    return 1;
  uint32_t runs = 0;
  const rnicpi_sge_t *last = NULL;
  for (uint32_t i = 0; i < wr->num_sge; i++) {
    const rnicpi_sge_t *e = &wr->sg_list[i];
    if (e->length == 0)
      continue;
    if (last == NULL || e->lkey != last->lkey || e->addr != last->addr + last->length)
      runs++;
    last = e;
  }
  return MIN(MAX(runs, 1u), MAX(qp->ord, 1u));
}

/* Requests that only touch this process's tables. */
static gboolean
is_local(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_BIND_MW || op == RNICPI_WR_LOCAL_INV || op == RNICPI_WR_FAST_REG;
}

rnicpi_status_t
emul_req_post(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  if (emul_req_hot_shape(wr) && emul_ring_hot(qp, wr, FALSE, w))
    return RNICPI_OK;
  emul_swqe_keep(qp, wr)->seq = qp->next_seq++;
  emul_req_run(qp, FALSE, w);
  if (qp->x != NULL)
    emul_ring_pump(qp->x);
  return RNICPI_OK;
}

void
emul_req_run(emul_qp_t *qp, gboolean draining, emul_work_t *w)
{
  const emul_xport_ops_t *ops = qp->x != NULL ? &emul_xport_ring : &emul_xport_local;
  /* A Read whose answer's bytes land is ahead of them all: what would
   * complete at once (one-sided, local) waits for it. */
  emul_swqe_t *prev = qp->xcopy_answered, *s = emul_wq_peek(&qp->sq);
  uint32_t reads = 0;  /* the ORD credits of the Reads and atomics issued, not answered */
  while (s != NULL && ops->ready(qp)) {
    rnicpi_send_wr_t *wr = &s->wr;
    if (s->issued) {
      reads += ord_cost(qp, wr);
      prev = s;
      s = (emul_swqe_t *) s->link.next;
      continue;
    }
    /* A local fence waits for every earlier request (emul_req_next). */
    if ((wr->flags & RNICPI_WR_LOCAL_FENCE) && prev != NULL)
      return;
    if (ops->place != NULL) {
      emul_exec_t r = ops->place(qp, s, prev != NULL, draining, w);
      if (r == EMUL_EXEC_DONE) {
        s = emul_wq_peek(&qp->sq);
        continue;
      }
      if (r != EMUL_EXEC_NOT)
        return;
    }
    if (emul_is_rd_atomic(wr->opcode) && reads + ord_cost(qp, wr) > qp->ord)
      return;  /* ORD: wait for an answer */
    if (is_local(wr->opcode)) {
      if (prev != NULL)
        return;  /* in order: behind a request the peer has not answered */
      emul_wq_pop(&qp->sq);
      gboolean ok = emul_qp_exec_local(qp, wr, w);
      emul_swqe_done(qp, s);
      if (!ok)
        return;
      s = emul_wq_peek(&qp->sq);
      continue;
    }
    rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
    uint64_t len;
    const rnicpi_sge_t *sg = emul_req_local(qp, wr, win, &len);
    if (sg == NULL) {
      /* It completes in its place (RDMAC verbs p.134: in order), after
       * what the peer has yet to answer, and the teardown flushes the rest. */
      if (prev != NULL)
        return;
      emul_wq_pop(&qp->sq);
      emul_req_fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
      emul_wq_put(&qp->sq, s);
      return;
    }
    emul_pkt_t pkt = emul_req_pkt(qp, wr, s->seq, sg, len);
    if (ops->at_once) {
      /* The head leaves the queue before it runs: a failure completes it
       * and flushes the rest, so it must not be in the queue to be
       * flushed a second time. */
      emul_wq_pop(&qp->sq);
      emul_exec_t r = ops->transmit(qp, &pkt, w);
      if (r == EMUL_EXEC_BLOCKED) {
        emul_wq_push_head(&qp->sq, s);
        return;
      }
      emul_swqe_done(qp, s);
      if (r == EMUL_EXEC_FAILED)
        return;
      s = emul_wq_peek(&qp->sq);
      continue;
    }
    ops->transmit(qp, &pkt, w);
    s->issued = TRUE;
    s->len = (uint32_t) len;
    reads += ord_cost(qp, wr);  /* ORD counts it from now on */
    prev = s;
    s = (emul_swqe_t *) s->link.next;
  }
}
