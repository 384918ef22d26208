/*
 * vp/emul responder across processes: the peer's requests (sends; RDMA
 * Write and Read in bounce mode; atomics in both modes), executed in ring
 * order by whoever drains the ring or posts the receive they wait for:
 * the progress thread, an application thread draining the ring, or the
 * application's post_recv.  The QP's link is held, and the fabric lock
 * too, but for a Send or a bounce mode's RDMA Write whole in one frame
 * that a drain under the link alone lands (emul_ring_recv_short,
 * emul_ring_write_short).  Design: emul_ring.h.
 *
 * Each frame is decoded into a packet for the responder written once
 * (emul_resp_rx, emul_xport.h, over emul_resp.c's rules), the in-process ones; this
 * file is its transport (emul_xport_ring's responder ops), with how it reports them:
 * - remote key, domain, bounds, rights: checked against this process's
 *   own table (emul_resp_target) before a byte moves; failure:
 *   REM_ACCESS_ERR at the requester, the responder gets
 *   RNICPI_ASYNC_QP_ACCESS_ERR, both BROKEN (a request the responder
 *   cannot execute, REM_OP_ERR, gives it QP_FATAL instead);
 * - RC ordering: the peer's requests execute in ring order, a send with
 *   no receive posted holds every request behind it (qp->xin) where the
 *   personality waits for receives (InfiniBand), and is a Terminate where
 *   it does not (iWARP: REM_OP_ERR at the requester, both BROKEN);
 * - IRD: a Read or atomic reaching a QP whose IRD is 0 fails remotely
 *   (REM_OP_ERR);
 * - atomics execute here, under the fabric lock, in both payload modes;
 * - a long Send's payload pulled by attach moves with the locks let go,
 *   whoever pulls it (Long pulls, below).
 * Limitation: answers still queued for a full ring when the responder
 * breaks are lost; their requests complete flushed at the requester.
 *
 * The requester's side of the ring is here too (emul_xport_ring's
 * transmit; the one-sided place op: emul_ring_copy.c): a request as its
 * frame (the short one: emul_ring_send_short), and the peer's answers
 * (ACK and READ_RESP frames) decoded into packets for the completer
 * (emul_comp_run, which takes its ACK word too), with these rules:
 * - local key, domain, bounds, rights: checked when a WR is issued
 *   (emul_req_run); failure: LOC_PROT_ERR, QP_FATAL, both sides BROKEN;
 * - ORD: no more Reads and atomics issued than the negotiated ORD before
 *   their answers (emul_req_run);
 * - graceful disconnect (iWARP): the DISC goes once every outstanding
 *   request is answered (qp->closing);
 * - flush exactly once: a WR stays in qp->sq until its answer (ACK,
 *   READ_RESP, or BREAK naming its seq) or the flush, whichever is first
 *   (out of it only while its answer's copy runs: emul_ring_copy.c, Long
 *   copies); answers for a closed connection cannot arrive (its ring is
 *   unmapped).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <sys/uio.h>

#include "emul_ring.h"
#include "emul_xport.h"

/* Long pulls.  A Send whose payload this process pulls from the sender by
 * attach (X_F_CMA: one longer than X_INLINE_MAX) is pulled with the fabric
 * lock let go, as an attach copy of a request is (emul_ring_copy.c, "Long
 * copies"): the receive is taken and checked under the lock, the QP
 * marked (qp->rcopying) and the copy counted (emul_fabric.xcopies).
 * Meanwhile the peer's later requests queue in qp->xin behind it (a drain
 * executes none in place, emul_ring_run_in runs none), what would change
 * the QP's state or free it waits (emul_qp_wait_copy), and a region the
 * receive names, held by reference, waits to leave the table
 * (emul_mr_release).  A teardown meanwhile flushes the
 * receive queue without the receive being filled, which goes back to its
 * queue and is flushed with it when the pull ends (an SRQ keeps it).  A
 * drain does not pull such a Send (it keeps the ring's position while it
 * holds the lock): it queues it and leaves it to the drainer (XR_OWED,
 * x->issue_owed) for after the drain, the progress thread or an
 * application thread alike (emul_ring_copy.c, "Long copies"). */
/* The latency case of a Send: its payload inline, a receive that holds
 * it whose every SGE that takes bytes is checked from x->hot (or looked up
 * anew past the first; a key whose entry changes under the fabric lock
 * sends it to the full path, which checks again). */
static inline __attribute__((always_inline)) gboolean
x_recv_placed(emul_qp_t *qp, emul_xconn_t *x, const emul_rwqe_t *r, uint64_t len)
{
  if (r->num_sge == 1)
    return r->sge[0].length > 0 && len <= r->sge[0].length &&
           emul_ring_hot_local(qp, x, &r->sge[0], RNICPI_ACCESS_LOCAL_WRITE);
  uint64_t room = 0;
  for (uint32_t i = 0; i < r->num_sge; i++) {
    if (r->sge[i].length == 0)
      continue;
    if (!emul_ring_hot_local(qp, x, &r->sge[i], RNICPI_ACCESS_LOCAL_WRITE))
      return FALSE;
    room += r->sge[i].length;
  }
  return room > 0 && len <= room;
}

void
emul_ring_span_scatter(const rnicpi_sge_t *sge, uint32_t n, const x_span_t *p)
{
  if (n == 1 && p->na == p->len && p->len <= sge[0].length) {
    emul_place((uint8_t *) (uintptr_t) sge[0].addr, p->a, p->len);
    return;
  }
  emul_scatter_at(sge, n, 0, p->a, p->na);
  emul_scatter_at(sge, n, p->na, p->b, p->len - p->na);
}

gboolean
emul_ring_recv_short(emul_qp_t *qp, emul_xconn_t *x, const x_frame_t *f, const x_span_t *p,
                     emul_work_t *w)
{
  /* The head receive, checked and taken at once under the SRQ's lock when
   * the QP has one (other QPs take from it meanwhile); an empty SRQ is the
   * full drain's, which marks it starved. */
  emul_wq_t *rq = emul_qp_rq(qp);
  emul_rq_lock(qp);
  emul_rwqe_t *r = emul_wq_peek(rq);
  if (r == NULL || !x_recv_placed(qp, x, r, f->byte_len)) {
    emul_rq_unlock(qp);
    return FALSE;
  }
  emul_wq_pop(rq);
  gboolean limit = qp->srq != NULL && emul_srq_took(qp->srq);
  emul_rq_unlock(qp);
  if (limit)
    emul_srq_limit(qp->srq);
  emul_ring_span_scatter(r->sge, r->num_sge, p);
  emul_resp_recv_done(qp, r, f->byte_len, (f->flags & X_F_INV) != 0, f->rkey, w);
  emul_ring_ack(x, f->seq + 1);
  return TRUE;
}

/* Whether a drain may look @rkey up here: under the fabric lock, any key;
 * under the QP's link alone, one whose entry never changes (a window's
 * or a fast-registered region's changes under the fabric lock). */
static inline gboolean
x_rkey_here(emul_qp_t *qp, uint64_t rkey)
{
  return emul_fabric_mine || emul_key_fixed(emul_pers_of_qp(qp), rkey);
}

gboolean
emul_ring_write_short(emul_qp_t *qp, emul_xconn_t *x, const x_frame_t *f, const x_span_t *p)
{
  emul_fault_t fault;
  /* A long one is the full drain's, which copies it with the locks let go
   * (emul_ring_copy_unlocks). */
  if (f->total >= EMUL_COPY_UNLOCKED || !x_rkey_here(qp, f->rkey))
    return FALSE;
  uint8_t *t = emul_resp_target(qp, RNICPI_WR_RDMA_WRITE, f->raddr, f->rkey, f->total, &fault);
  if (t == NULL)
    return FALSE;  /* refused: the full drain breaks the connection with its fault */
  rnicpi_sge_t at = { .addr = (uint64_t) (uintptr_t) t, .length = (uint32_t) f->total };
  emul_ring_span_scatter(&at, 1, p);
  emul_ring_ack(x, f->seq + 1);
  return TRUE;
}

/* The answer to RDMA Read @f, its bytes at @t (borrowed: copied into the
 * ring now, or when it has to wait). */
static x_out_t
x_read_resp(const x_frame_t *f, const uint8_t *t)
{
  x_out_t o = { .f = { .seq = f->seq, .op = X_OP_READ_RESP, .byte_len = f->byte_len, .total = f->byte_len } };
  o.buf = f->byte_len > 0 ? (uint8_t *) t : NULL;
  return o;
}

gboolean
emul_ring_read_short(emul_qp_t *qp, emul_xconn_t *x, const x_frame_t *f)
{
  emul_fault_t fault;
  if (f->byte_len > X_FRAG_MAX || !x_rkey_here(qp, f->rkey))
    return FALSE;
  uint8_t *t = emul_resp_target(qp, RNICPI_WR_RDMA_READ, f->raddr, f->rkey, f->byte_len, &fault);
  if (t == NULL)
    return FALSE;  /* refused: the full drain breaks the connection with its fault */
  x_out_t o = x_read_resp(f, t);
  return emul_ring_emit_now(x, &o);
}

/* The cross-process transport of a request (emul_xport_ops_t): the bytes
 * come from the frame, assembled (bounce mode), or are pulled from the
 * sender by attach (X_F_CMA, a Send's gather list), with the fabric lock
 * let go when pkt->unlock (Long pulls); the answer is an ACK or an answer
 * frame. */
static gboolean
x_resp_pull(emul_qp_t *qp, emul_pkt_t *pkt, emul_rwqe_t *r, const rnicpi_sge_t *dst, uint32_t nd,
            emul_work_t *w)
{
  x_in_t *in = pkt->in;
  emul_xconn_t *x = pkt->x;
  uint64_t len = pkt->len, n = in->f.total / sizeof(x_iov_t), sum = 0;
  gboolean cma = emul_pkt_is_send(pkt->op) && (in->f.flags & X_F_CMA), ended = FALSE;
  gboolean unlock = pkt->unlock;
  struct iovec rv[X_IOV_MAX];
  gboolean ok = cma ? n <= X_IOV_MAX && in->f.total % sizeof(x_iov_t) == 0 : in->f.total == len;
  for (uint64_t i = 0; cma && ok && i < n; i++) {
    x_iov_t e = ((const x_iov_t *) in->buf)[i];  /* read once: it may lie in the ring */
    rv[i] = (struct iovec) { (void *) (uintptr_t) e.addr, e.len };
    ok = e.len <= len - sum;  /* no sum that wraps to the message's length */
    sum += e.len;
  }
  ok = ok && (!cma || sum == len);
  emul_hold_t h;
  emul_xconn_t *held = NULL;
  if (ok && unlock && emul_ring_copy_hold(qp, &h, dst, nd))
    held = emul_ring_copy_begin(qp, &qp->rcopying);
  if (ok && cma) {
    struct iovec l[32];
    int nl = emul_ring_sge_iov(dst, nd, l);
    /* x's descriptors are open while the copy holds the connection. */
    ok = emul_ring_vm_copy(x->peer_pid, x->peer_pidfd, x->peer_mem, FALSE, l, nl, rv, (int) n);
  } else if (ok) {
    emul_scatter(dst, nd, in->buf, len);
  }
  if (held != NULL) {
    emul_hold_drop(&h);
    emul_ring_copy_end(qp, held, &qp->rcopying);
    ended = qp->state != RNICPI_QPS_RTS || qp->x == NULL;
  }
  if (ok && !ended)
    return TRUE;
  /* The receive was not filled: it goes the way of its queue (flushed, or
   * kept by an SRQ) when the connection ended while the bytes came, else
   * when the sender's memory or frame lies (it is gone or lying). */
  if (r != NULL) {
    emul_rq_lock(qp);
    emul_wq_push_head(emul_qp_rq(qp), r);
    emul_rq_unlock(qp);
  }
  if (ended)
    emul_qp_set_error(qp, w);
  else
    emul_ring_peer_break(x, NULL, w);
  return FALSE;
}

static emul_exec_t
x_resp_answer(emul_qp_t *qp, emul_pkt_t *pkt, uint8_t *t, emul_work_t *w)
{
  (void) qp;
  emul_xconn_t *x = pkt->x;
  const x_frame_t *f = &((x_in_t *) pkt->in)->f;
  if (pkt->op == RNICPI_WR_RDMA_READ) {
    x_out_t o = x_read_resp(f, t);
    if (!emul_ring_emit(x, &o, FALSE)) {
      g_log(EMUL_LOG, G_LOG_LEVEL_WARNING, "emul: no memory to hold a Read Response of %u bytes for "
            "process %d: its connection is broken (free memory, or read less at a time)", f->byte_len,
            (int) x->peer_pid);
      emul_ring_peer_break(x, NULL, w);
      return EMUL_EXEC_FAILED;
    }
  } else if (rnicpi_wr_is_atomic(pkt->op)) {
    x_out_t o = { .f = { .seq = f->seq, .op = X_OP_ACK, .byte_len = 8, .cmp = pkt->old } };
    emul_ring_emit(x, &o, FALSE);
  } else {
    emul_ring_ack(x, f->seq + 1);
  }
  return EMUL_EXEC_DONE;
}

/* The request failed here with @f: each side gets its affiliated event,
 * the requester completes it with its status. */
static void
x_resp_refuse(emul_qp_t *qp, const emul_pkt_t *pkt, emul_fault_t f, emul_work_t *w)
{
  x_fault_t to = { .f = f, .to_responder = FALSE };
  rnicpi_async_cause_t mine = emul_fault_responder(f);
  emul_ring_teardown(qp, w, X_BREAK, emul_fault_status(f), pkt->seq, &to, &mine, NULL, 0);
}

/* The latency case of a Send: a copy short enough to make under the lock,
 * inline, into a receive checked from x->hot. */
static gboolean
x_resp_placed(emul_qp_t *qp, const emul_pkt_t *pkt, const emul_rwqe_t *r)
{
  const x_frame_t *f = &((const x_in_t *) pkt->in)->f;
  return emul_pkt_is_send(pkt->op) && !pkt->unlock && !(f->flags & X_F_CMA) && f->total == pkt->len &&
         x_recv_placed(qp, pkt->x, r, pkt->len);
}

const emul_xport_ops_t emul_xport_ring = {
  .ready = emul_ring_req_ready, .place = emul_ring_place, .transmit = emul_ring_send,
  .pull = x_resp_pull, .answer = x_resp_answer, .refuse = x_resp_refuse, .placed = x_resp_placed,
};

/* Decode the frame of @in into a packet for the responder (emul_resp_rx).
 * Immediate data (X_F_IMM, checked by the drain: emul_ring.c) is a Send of
 * no payload, or follows a bounce mode's RDMA Write whose bytes are @in's
 * payload. */
xr_t
emul_ring_exec_in(emul_qp_t *qp, x_in_t *in, gboolean draining, emul_work_t *w)
{
  const x_frame_t *f = &in->f;
  emul_xconn_t *x = qp->x;
  const gboolean imm = (f->flags & X_F_IMM) != 0;
  /* A Read or an atomic needs an answer: the peer may have no more of
   * them waiting for one than our IRD (its ORD is at most that), so the
   * answers that wait for room in the ring are bounded. */
  if ((f->op == X_OP_READ || f->op == X_OP_ATOMIC) && x->out_answers >= MAX(emul_resp_ird(qp), 1u)) {
    emul_ring_peer_violation(x, w, "more RDMA Reads and atomics waiting for their answers than the "
                             "IRD of %u it was granted", emul_resp_ird(qp));
    return XR_FAILED;
  }
  emul_pkt_t pkt = {
    .seq = f->seq, .raddr = f->raddr, .rkey = f->rkey, .inv_key = f->rkey, .imm = f->cmp,
    .compare_add = f->cmp, .swap = f->swap, .in = in, .x = x,
  };
  switch (f->op) {
  case X_OP_SEND:
    pkt.op = imm ? RNICPI_WR_IMM_DATA : (f->flags & X_F_INV) ? RNICPI_WR_SEND_INV : RNICPI_WR_SEND;
    pkt.len = imm ? 0 : f->byte_len;
    break;
  case X_OP_WRITE:
    pkt.op = imm ? RNICPI_WR_RDMA_WRITE_IMM : RNICPI_WR_RDMA_WRITE;
    pkt.len = f->total;  /* at most 1 GiB and a page (emul_ring_drain) */
    break;
  case X_OP_READ:
    /* An answer that cannot go into the ring now waits in x->out, copied
     * (the region may change or go meanwhile).  The copies the peer's
     * Reads hold are bounded by ITAPI_EMUL_INBOUND_MB, as its requests
     * waiting for receives are: past it this Read waits, with every
     * request behind it (RC order), until the ring takes what waits
     * (X_SPACE runs qp->xin again). */
    if (!emul_queue_empty(&x->out) && x->out_bytes + f->byte_len > emul_ring_xin_max)
      return XR_BLOCKED;
    pkt.op = RNICPI_WR_RDMA_READ;
    pkt.len = f->byte_len;
    break;
  case X_OP_ATOMIC:
    /* Executed here, under the fabric lock, whatever the payload mode. */
    pkt.op = (f->flags & X_F_FETCH_ADD) ? RNICPI_WR_ATOMIC_FETCH_ADD : RNICPI_WR_ATOMIC_CMP_SWP;
    pkt.len = 8;
    break;
  default:
    emul_ring_peer_violation(x, w, "a request of unknown op %u", f->op);
    return XR_FAILED;
  }
  if (emul_pkt_is_send(pkt.op) || f->op == X_OP_WRITE) {
    pkt.unlock = emul_ring_copy_unlocks(qp, pkt.len, emul_pkt_is_send(pkt.op) && (f->flags & X_F_CMA));
    if (emul_ring_copy_owed(x, draining, &pkt.unlock))
      return XR_OWED;  /* its drainer pulls or places it after the drain */
  }
  return (xr_t) emul_resp_rx(qp, &pkt, &emul_xport_ring, w);
}

void
emul_ring_run_in(emul_qp_t *qp, gboolean draining, emul_work_t *w)
{
  x_in_t *in;
  while (!emul_queue_empty(&qp->xin) && qp->x != NULL && qp->state == RNICPI_QPS_RTS &&
         !qp->rcopying && (in = g_queue_pop_head(&qp->xin)) != NULL) {
    qp->xin_bytes -= emul_ring_in_bytes(in);
    xr_t r = emul_ring_exec_in(qp, in, draining, w);
    qp->xin_rnr = r == XR_BLOCKED;
    if (r == XR_BLOCKED || r == XR_OWED) {
      g_queue_push_head(&qp->xin, in);
      qp->xin_bytes += emul_ring_in_bytes(in);
      return;
    }
    emul_ring_in_free(in);
    if (r == XR_FAILED)
      return;
  }
}

/* A receive was posted: a Send waiting for one goes on.  (Work a drain
 * left to its drainer, a long pull, is that thread's: the application's
 * post does not take it over.) */
void
emul_ring_recv_posted(emul_qp_t *qp, emul_work_t *w)
{
  if (qp->xin_rnr)
    emul_ring_run_in(qp, FALSE, w);
  if (qp->x != NULL)
    emul_ring_pump(qp->x);
}

gboolean
emul_ring_recv_alone(const emul_qp_t *qp)
{
  return !qp->xin_rnr && (qp->x == NULL || emul_queue_empty(&qp->x->out));
}

void
emul_ring_access_changed(emul_qp_t *qp)
{
  if (qp->x->seg == NULL)
    return;
  uint32_t ird = qp->state == RNICPI_QPS_RTS ? MIN(qp->ird, qp->attr.ird) : qp->attr.ird;
  __atomic_store_n(&qp->x->seg->access[qp->x->side], qp->attr.access, __ATOMIC_RELEASE);
  __atomic_store_n(&qp->x->seg->ird[qp->x->side], ird, __ATOMIC_RELEASE);
}

/* ---- the requester's frames and the answers ---- */

/* The frame that carries request @pkt of @qp into the ring; TRUE when
 * o->buf is allocated for it (owned). */
static gboolean
x_frame_of(emul_qp_t *qp, emul_xconn_t *x, const emul_pkt_t *pkt, x_out_t *o)
{
  const rnicpi_send_wr_t *wr = pkt->wr;
  uint64_t len = pkt->len;
  gboolean owned = FALSE;
  *o = (x_out_t) { .f = { .seq = pkt->seq } };
  switch (wr->opcode) {
  case RNICPI_WR_SEND:
  case RNICPI_WR_SEND_INV:
    o->f.op = X_OP_SEND;
    o->f.byte_len = (uint32_t) len;
    if (wr->opcode == RNICPI_WR_SEND_INV)
      o->f.flags |= X_F_INV;
    if (x->peer_cma && len > X_INLINE_MAX) {
      /* The receiver pulls the bytes when a receive matches. */
      x_iov_t *v = g_new(x_iov_t, MAX(wr->num_sge, 1));
      uint32_t k = 0;
      for (uint32_t i = 0; i < wr->num_sge; i++)
        if (wr->sg_list[i].length > 0)
          v[k++] = (x_iov_t) { wr->sg_list[i].addr, wr->sg_list[i].length };
      o->f.flags |= X_F_CMA;
      o->buf = (uint8_t *) v;
      o->f.total = k * sizeof(x_iov_t);
      owned = TRUE;
    } else {
      o->sg = wr->sg_list;
      o->nsg = wr->num_sge;
      o->f.total = len;
    }
    break;
  case RNICPI_WR_IMM_DATA:
    o->f.op = X_OP_SEND;
    o->f.flags = X_F_IMM;
    o->f.cmp = wr->imm_data & emul_pers_of_qp(qp)->imm_mask;
    break;
  case RNICPI_WR_RDMA_WRITE:
  case RNICPI_WR_RDMA_WRITE_IMM:
    o->f.op = X_OP_WRITE;
    o->sg = wr->sg_list;
    o->nsg = wr->num_sge;
    o->f.total = len;
    if (wr->opcode == RNICPI_WR_RDMA_WRITE_IMM) {
      o->f.flags = X_F_IMM;
      o->f.cmp = wr->imm_data & emul_pers_of_qp(qp)->imm_mask;
    }
    break;
  case RNICPI_WR_RDMA_READ:
  case RNICPI_WR_RDMA_READ_INV:
    o->f.op = X_OP_READ;
    o->f.byte_len = (uint32_t) len;
    break;
  default:
    o->f.op = X_OP_ATOMIC;
    o->f.flags = wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD ? X_F_FETCH_ADD : 0;
    o->f.cmp = wr->compare_add;
    o->f.swap = wr->swap;
    break;
  }
  o->f.raddr = wr->remote_addr;
  o->f.rkey = wr->opcode == RNICPI_WR_SEND_INV ? wr->invalidate_rkey : wr->rkey;
  return owned;
}

/* The frame of request @pkt into the ring: the common case, a whole send
 * in one frame with the short header; otherwise the frame of its kind
 * (o.sg is the entry's list: it lives until the answer). */
emul_exec_t
emul_ring_send(emul_qp_t *qp, emul_pkt_t *pkt, emul_work_t *w)
{
  (void) w;
  emul_xconn_t *x = qp->x;
  const rnicpi_send_wr_t *wr = pkt->wr;
  if (wr->opcode != RNICPI_WR_SEND || !emul_ring_send_short(x, pkt->seq, wr->sg_list, wr->num_sge, pkt->len)) {
    x_out_t o;
    gboolean owned = x_frame_of(qp, x, pkt, &o);
    emul_ring_emit(x, &o, owned);
  }
  return EMUL_EXEC_DONE;
}

/* Issue what waited behind requests now done; close gracefully once the
 * last is answered. */
static void
x_go_on(emul_qp_t *qp, gboolean draining, emul_work_t *w)
{
  if (qp->x != NULL)
    emul_req_run(qp, draining, w);
  /* Graceful: the last answer is in, and its copy done. */
  if (qp->closing && qp->x != NULL && emul_wq_empty(&qp->sq) && !qp->xcopying &&
      emul_queue_empty(&qp->xans))
    emul_ring_break(qp, w, TRUE, NULL, 0);
}

/* Requests answered, seen by a drain of the ring. */
void
emul_ring_answered(emul_qp_t *qp, emul_work_t *w)
{
  x_go_on(qp, TRUE, w);
}

/* Answer frame @f (@buf: a Read Response's bytes) given to the completer
 * (emul_comp_run) as its packet; @unlock: a long Read Response is
 * scattered with the locks let go.  FALSE when the connection ended or the
 * QP was flushed meanwhile. */
static gboolean
x_answer(emul_qp_t *qp, const x_frame_t *f, const uint8_t *buf, gboolean unlock, emul_work_t *w)
{
  gboolean resp = f->op == X_OP_READ_RESP;
  emul_pkt_t a = {
    .op = resp ? RNICPI_WR_RDMA_READ : RNICPI_WR_ATOMIC_CMP_SWP, .seq = f->seq, .len = f->byte_len,
    .old = f->cmp, .buf = buf, .unlock = unlock,
    .malformed = resp ? f->total != f->byte_len : f->total != 0 || f->status != 0,
  };
  return emul_comp_run(qp, &a, w);
}

/* Run the answers queued behind a Read Response's copy (qp->xans), in
 * order, each scattering a long one with the locks let go when @unlock
 * (Long copies); none while a copy runs, whose copier runs them after it.
 * FALSE when one ended the connection or flushed the QP. */
static gboolean
x_run_answers(emul_qp_t *qp, gboolean unlock, emul_work_t *w)
{
  x_in_t *a;
  gboolean any = !emul_queue_empty(&qp->xans);
  while (qp->x != NULL && qp->state == RNICPI_QPS_RTS && !qp->xcopying &&
         (a = g_queue_pop_head(&qp->xans)) != NULL) {
    gboolean go = x_answer(qp, &a->f, a->buf, unlock, w);
    emul_ring_in_free(a);
    if (!go)
      return FALSE;
    /* What the answer lets go (ORD, ordering) is issued at once, as a
     * drain's answer does (emul_ring_answered). */
    emul_comp_run(qp, NULL, w);
    x_go_on(qp, FALSE, w);
  }
  if (any && qp->x != NULL && qp->state == RNICPI_QPS_RTS && emul_queue_empty(&qp->xans))
    emul_comp_run(qp, NULL, w);  /* the Sends and Writes behind them */
  return TRUE;
}

/* A drainer (fabric lock held, a reference to @x): its drain is over; a
 * long copy it found, of a request or an answer (Long copies) or of a
 * Send's payload (emul_ring_resp.c, "Long pulls"), is made now, letting
 * the lock go. */
void
emul_ring_issue_owed(emul_xconn_t *x, emul_work_t *w)
{
  if (!x->issue_owed)
    return;
  x->issue_owed = FALSE;
  emul_qp_t *qp = x->qp;
  if (x->dead || qp == NULL || qp->x != x || qp->state != RNICPI_QPS_RTS)
    return;  /* the connection ended: the teardown flushed what was owed */
  if (!x_run_answers(qp, TRUE, w))
    return;
  emul_ring_run_in(qp, FALSE, w);
  if (qp->x == x && qp->state == RNICPI_QPS_RTS)
    x_go_on(qp, FALSE, w);
  if (qp->x != NULL)
    emul_ring_pump(qp->x);
}

void
emul_ring_answers_settle(emul_qp_t *qp, emul_work_t *w)
{
  if (qp->xcopying || emul_queue_empty(&qp->xans))
    return;  /* a copy runs: its copier completes it flushed, and the rest */
  /* All of them taken first: one that breaks the connection tears it
   * down, which must not come back here. */
  GQueue q = qp->xans;
  g_queue_init(&qp->xans);
  gboolean go = TRUE;
  x_in_t *a;
  while ((a = g_queue_pop_head(&q)) != NULL) {
    go = go && qp->x != NULL && qp->state == RNICPI_QPS_RTS && x_answer(qp, &a->f, a->buf, FALSE, w);
    emul_ring_in_free(a);
  }
}

/* An answer from the peer, found by a drain: it names the oldest
 * unanswered request. */
void
emul_ring_answer(emul_qp_t *qp, const x_frame_t *f, uint8_t *buf, gboolean owned, emul_work_t *w)
{
  if (qp->xcopying || !emul_queue_empty(&qp->xans) ||
      (owned && f->op == X_OP_READ_RESP && emul_ring_copy_unlocks(qp, f->byte_len, FALSE))) {
    /* Behind a copy, or a long Read Response to scatter with the locks let
     * go: its drainer runs it after the drain (Long copies).  No more
     * answers wait than Reads and atomics were issued (ORD). */
    if (qp->xans.length >= MAX(qp->ord, 1u)) {
      if (owned)
        g_free(buf);
      emul_ring_peer_violation(qp->x, w, "more answers than the %u Reads and atomics this side may "
                               "have outstanding", qp->ord);
      return;
    }
    g_queue_push_tail(&qp->xans, emul_ring_in_new(f, buf, owned));
    qp->x->issue_owed = TRUE;
    return;
  }
  gboolean go = x_answer(qp, f, buf, FALSE, w);
  if (owned)
    g_free(buf);
  if (!go)
    return;
  emul_comp_run(qp, NULL, w);
  emul_ring_answered(qp, w);
}

gboolean
emul_ring_answer_short(emul_qp_t *qp, emul_xconn_t *x, const x_frame_t *f, const x_span_t *p,
                       emul_work_t *w)
{
  const emul_swqe_t *last = (const emul_swqe_t *) qp->sq.q.tail;  /* issued ones are a prefix */
  if (qp->xcopying || qp->closing || !emul_queue_empty(&qp->xans) || last == NULL || !last->issued)
    return FALSE;
  emul_comp_run(qp, NULL, w);  /* the peer raised its ACK word before this frame */
  emul_swqe_t *s = emul_wq_peek(&qp->sq);
  const rnicpi_send_wr_t *wr = s != NULL ? &s->wr : NULL;
  if (s == NULL || s->seq != f->seq || wr->opcode != RNICPI_WR_RDMA_READ || (wr->flags & RNICPI_WR_SINK_MW) ||
      f->byte_len != s->len || f->total != f->byte_len)
    return FALSE;  /* the full path's, which refuses a malformed one (x_answer) */
  /* The sink checked again, as the full path does when the bytes land. */
  uint32_t need = emul_pers_local_need(emul_pers_of_qp(qp), wr->opcode);
  for (uint32_t i = 0; i < wr->num_sge; i++)
    if (wr->sg_list[i].length > 0 && !emul_ring_hot_local(qp, x, &wr->sg_list[i], need))
      return FALSE;
  emul_wq_pop(&qp->sq);
  emul_ring_span_scatter(wr->sg_list, wr->num_sge, p);
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, f->byte_len, w);
  emul_wq_put(&qp->sq, s);
  emul_comp_run(qp, NULL, w);  /* the Sends and Writes behind it */
  return TRUE;
}

gboolean
emul_ring_outstanding(emul_qp_t *qp)
{
  return !emul_wq_empty(&qp->sq) || qp->xcopying;
}

