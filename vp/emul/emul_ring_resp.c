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
 * Rules, the same as in-process and written once (emul_resp.c), with how
 * this transport reports them:
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
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <sys/uio.h>

#include "emul_ring.h"

/* Responder side: request @seq failed here with @f; each side gets its
 * affiliated event, the requester completes it with its status. */
static void
x_fail_req(emul_qp_t *qp, uint64_t seq, emul_fault_t f, emul_work_t *w)
{
  x_fault_t to = { .f = f, .to_responder = FALSE };
  rnicpi_async_cause_t mine = emul_fault_responder(f);
  emul_ring_teardown(qp, w, X_BREAK, emul_fault_status(f), seq, &to, &mine, NULL, 0);
}

/* Long pulls.  A Send whose payload this process pulls from the sender by
 * attach (X_F_CMA: one longer than X_INLINE_MAX) is pulled with the fabric
 * lock let go, as an attach copy of a request is (emul_ring_req.c, "Long
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
 * application thread alike (emul_ring_req.c, "Long copies"). */
/* Copy @n bytes of the bounce mode's assembled payload @src (the
 * caller's) into @sge[@nsge], letting the fabric lock go when @unlock
 * (Long pulls).  FALSE when the connection ended meanwhile. */
static gboolean
x_land(emul_qp_t *qp, const rnicpi_sge_t *sge, uint32_t nsge, const uint8_t *src, uint64_t n,
       gboolean unlock)
{
  emul_hold_t h;
  if (!unlock || !emul_ring_copy_hold(qp, &h, sge, nsge)) {
    emul_scatter(sge, nsge, src, n);
    return TRUE;
  }
  emul_xconn_t *x = emul_ring_copy_begin(qp, &qp->rcopying);
  emul_scatter(sge, nsge, src, n);
  emul_hold_drop(&h);
  emul_ring_copy_end(qp, x, &qp->rcopying);
  return qp->state == RNICPI_QPS_RTS && qp->x != NULL;
}

/* Pull @n pieces of the peer's memory @rv into receive @r's SGEs, letting
 * the fabric lock go when @unlock (Long pulls).  FALSE when the peer's
 * memory could not be read, or the connection ended meanwhile (*@ended). */
static gboolean
x_pull(emul_qp_t *qp, emul_rwqe_t *r, const struct iovec *rv, int n, gboolean unlock, gboolean *ended)
{
  struct iovec l[32];
  int nl = emul_ring_sge_iov(r->sge, r->num_sge, l);
  pid_t pid = qp->x->peer_pid;
  int pidfd = qp->x->peer_pidfd, mem = qp->x->peer_mem;  /* open while the copy holds the connection */
  *ended = FALSE;
  emul_hold_t h;
  if (!unlock || !emul_ring_copy_hold(qp, &h, r->sge, r->num_sge))
    return emul_ring_vm_copy(pid, pidfd, mem, FALSE, l, nl, rv, n);
  emul_xconn_t *x = emul_ring_copy_begin(qp, &qp->rcopying);
  gboolean ok = emul_ring_vm_copy(pid, pidfd, mem, FALSE, l, nl, rv, n);
  emul_hold_drop(&h);
  emul_ring_copy_end(qp, x, &qp->rcopying);
  *ended = qp->state != RNICPI_QPS_RTS || qp->x == NULL;
  return ok && !*ended;
}

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

/* Land a Send of the latency case in receive @r (taken) and complete it. */
static void
x_recv_place(emul_qp_t *qp, emul_xconn_t *x, emul_rwqe_t *r, const x_frame_t *f, const x_span_t *p,
             emul_work_t *w)
{
  emul_ring_span_scatter(r->sge, r->num_sge, p);
  emul_resp_recv_done(qp, r, f->byte_len, (f->flags & X_F_INV) != 0, f->rkey, w);
  emul_ring_ack(x, f->seq + 1);
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
  x_recv_place(qp, x, r, f, p, w);
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

/* Immediate data (X_F_IMM, checked by the drain: emul_ring.c): alone, or
 * after the bounce mode's RDMA Write whose bytes are @in's payload.  The
 * Write's target is checked first, then the receive taken (none: a Send's
 * fate; an InfiniBand Write waits, nothing placed, and runs again whole
 * when a receive comes), the bytes placed, and only then does the receive
 * complete, as in-process (emul_exec.c, exec_imm). */
static xr_t
x_exec_imm(emul_qp_t *qp, x_in_t *in, gboolean draining, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  const x_frame_t *f = &in->f;
  emul_fault_t fault;
  uint8_t *t = (uint8_t *) "";
  gboolean unlock = FALSE, blocked;
  if (f->op == X_OP_WRITE) {
    unlock = emul_ring_copy_unlocks(qp, f->total, FALSE);
    if (emul_ring_copy_owed(x, draining, &unlock))
      return XR_OWED;  /* its drainer places it after the drain */
    t = emul_resp_target(qp, RNICPI_WR_RDMA_WRITE, f->raddr, f->rkey, f->total, &fault);
    if (t == NULL) {
      x_fail_req(qp, f->seq, fault, w);
      return XR_FAILED;
    }
  }
  emul_rwqe_t *r = emul_resp_recv_take(qp, FALSE, 0, &blocked, &fault);
  if (r == NULL) {
    if (blocked)
      return XR_BLOCKED;  /* infinite RNR retry: wait for a receive */
    x_fail_req(qp, f->seq, fault, w);
    return XR_FAILED;
  }
  if (!emul_resp_recv_fits(qp, r, 0, &fault, w)) {
    x_fail_req(qp, f->seq, fault, w);
    return XR_FAILED;
  }
  /* One piece: total is at most 1 GiB and a page (emul_ring_drain). */
  rnicpi_sge_t at = { .addr = (uint64_t) (uintptr_t) t, .length = (uint32_t) f->total, .lkey = f->rkey };
  if (f->op == X_OP_WRITE && f->total > 0 && !x_land(qp, &at, 1, in->buf, f->total, unlock)) {
    emul_rq_lock(qp);
    emul_wq_push_head(emul_qp_rq(qp), r);  /* not consumed: as a Send's (x_exec_send) */
    emul_rq_unlock(qp);
    emul_qp_set_error(qp, w);  /* the connection ended while the bytes landed */
    return XR_FAILED;
  }
  emul_resp_recv_imm(qp, r, f->cmp, f->op == X_OP_WRITE ? f->total : 0, w);
  emul_ring_ack(x, f->seq + 1);
  return XR_DONE;
}

static xr_t
x_exec_send(emul_qp_t *qp, x_in_t *in, gboolean draining, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  gboolean inv = (in->f.flags & X_F_INV) != 0, blocked;
  emul_fault_t f;
  gboolean unlock = emul_ring_copy_unlocks(qp, in->f.byte_len, (in->f.flags & X_F_CMA) != 0);
  if (emul_ring_copy_owed(x, draining, &unlock))
    return XR_OWED;  /* its drainer pulls or copies it after the drain */
  emul_rwqe_t *r = emul_resp_recv_take(qp, inv, in->f.rkey, &blocked, &f);
  if (r == NULL) {
    if (blocked)
      return XR_BLOCKED;  /* infinite RNR retry: wait for a receive */
    x_fail_req(qp, in->f.seq, f, w);
    return XR_FAILED;
  }
  uint64_t len = in->f.byte_len;
  /* The latency case first (a copy short enough to make under the lock);
   * else the general checks and copies below. */
  if (!unlock && !(in->f.flags & X_F_CMA) && in->f.total == len && x_recv_placed(qp, x, r, len)) {
    x_span_t p = { .a = in->buf, .na = len, .len = len };
    x_recv_place(qp, x, r, &in->f, &p, w);
    return XR_DONE;
  }
  if (!emul_resp_recv_fits(qp, r, len, &f, w)) {
    x_fail_req(qp, in->f.seq, f, w);
    return XR_FAILED;
  } else if (in->f.flags & X_F_CMA) {
    emul_wq_t *rq = emul_qp_rq(qp);
    struct iovec rv[X_IOV_MAX];
    uint64_t n = in->f.total / sizeof(x_iov_t), sum = 0;
    const x_iov_t *v = (const x_iov_t *) in->buf;
    gboolean ok = n <= X_IOV_MAX && in->f.total % sizeof(x_iov_t) == 0, ended = FALSE;
    for (uint64_t i = 0; ok && i < n; i++) {
      x_iov_t e = v[i];  /* read once: it may lie in the ring */
      rv[i] = (struct iovec) { (void *) (uintptr_t) e.addr, e.len };
      ok = e.len <= len - sum;  /* no sum that wraps to the message's length */
      sum += e.len;
    }
    ok = ok && sum == len && x_pull(qp, r, rv, (int) n, unlock, &ended);
    if (ended) {
      /* The connection ended while the bytes came: the receive was not
       * filled, and goes the way of its queue (flushed, or kept by an SRQ). */
      emul_rq_lock(qp);
      emul_wq_push_head(rq, r);
      emul_rq_unlock(qp);
      emul_qp_set_error(qp, w);
      return XR_FAILED;
    }
    if (!ok) {
      /* The sender's memory cannot be read: it is gone or lying. */
      emul_rq_lock(qp);
      emul_wq_push_head(rq, r);
      emul_rq_unlock(qp);
      emul_ring_peer_break(x, NULL, w);
      return XR_FAILED;
    }
  } else {
    if (in->f.total != len) {
      emul_rq_lock(qp);
      emul_wq_push_head(emul_qp_rq(qp), r);
      emul_rq_unlock(qp);
      emul_ring_peer_break(x, NULL, w);
      return XR_FAILED;
    }
    if (!x_land(qp, r->sge, r->num_sge, in->buf, len, unlock)) {
      emul_rq_lock(qp);
      emul_wq_push_head(emul_qp_rq(qp), r);  /* as a pull's (ended, above) */
      emul_rq_unlock(qp);
      emul_qp_set_error(qp, w);
      return XR_FAILED;
    }
  }
  emul_resp_recv_done(qp, r, len, inv, in->f.rkey, w);
  emul_ring_ack(x, in->f.seq + 1);
  return XR_DONE;
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

xr_t
emul_ring_exec_in(emul_qp_t *qp, x_in_t *in, gboolean draining, emul_work_t *w)
{
  const x_frame_t *f = &in->f;
  emul_xconn_t *x = qp->x;
  x_out_t o;  /* an answer: set up by the cases that send one */
  uint8_t *t;
  emul_fault_t fault;
  /* A Read or an atomic needs an answer: the peer may have no more of
   * them waiting for one than our IRD (its ORD is at most that), so the
   * answers that wait for room in the ring are bounded. */
  if ((f->op == X_OP_READ || f->op == X_OP_ATOMIC) && x->out_answers >= MAX(emul_resp_ird(qp), 1u)) {
    emul_ring_peer_violation(x, w, "more RDMA Reads and atomics waiting for their answers than the "
                             "IRD of %u it was granted", emul_resp_ird(qp));
    return XR_FAILED;
  }
  if (f->flags & X_F_IMM)
    return x_exec_imm(qp, in, draining, w);
  switch (f->op) {
  case X_OP_SEND:
    return x_exec_send(qp, in, draining, w);
  case X_OP_WRITE: {
    gboolean unlock = emul_ring_copy_unlocks(qp, f->total, FALSE);
    if (emul_ring_copy_owed(x, draining, &unlock))
      return XR_OWED;  /* its drainer places it after the drain */
    t = emul_resp_target(qp, RNICPI_WR_RDMA_WRITE, f->raddr, f->rkey, f->total, &fault);
    if (t == NULL)
      break;
    /* One piece: total is at most 1 GiB and a page (emul_ring_drain). */
    rnicpi_sge_t at = { .addr = (uint64_t) (uintptr_t) t, .length = (uint32_t) f->total, .lkey = f->rkey };
    if (!x_land(qp, &at, 1, in->buf, f->total, unlock)) {
      emul_qp_set_error(qp, w);  /* the connection ended while the bytes landed */
      return XR_FAILED;
    }
    emul_ring_ack(x, f->seq + 1);
    return XR_DONE;
  }
  case X_OP_READ:
    /* An answer that cannot go into the ring now waits in x->out, copied
     * (the region may change or go meanwhile).  The copies the peer's
     * Reads hold are bounded by ITAPI_EMUL_INBOUND_MB, as its requests
     * waiting for receives are: past it this Read waits, with every
     * request behind it (RC order), until the ring takes what waits
     * (X_SPACE runs qp->xin again). */
    if (!emul_queue_empty(&x->out) && x->out_bytes + f->byte_len > emul_ring_xin_max)
      return XR_BLOCKED;
    t = emul_resp_target(qp, RNICPI_WR_RDMA_READ, f->raddr, f->rkey, f->byte_len, &fault);
    if (t == NULL)
      break;
    o = x_read_resp(f, t);
    if (!emul_ring_emit(x, &o, FALSE)) {
      g_log(EMUL_LOG, G_LOG_LEVEL_WARNING, "emul: no memory to hold a Read Response of %u bytes for "
            "process %d: its connection is broken (free memory, or read less at a time)", f->byte_len,
            (int) x->peer_pid);
      emul_ring_peer_break(x, NULL, w);
      return XR_FAILED;
    }
    return XR_DONE;
  case X_OP_ATOMIC: {
    /* Executed here, under the fabric lock, whatever the payload mode:
     * atomic against every emul requester of this process's memory. */
    gboolean fetch_add = (f->flags & X_F_FETCH_ADD) != 0;
    t = emul_resp_target(qp, fetch_add ? RNICPI_WR_ATOMIC_FETCH_ADD : RNICPI_WR_ATOMIC_CMP_SWP,
                         f->raddr, f->rkey, 8, &fault);
    if (t == NULL)
      break;
    uint64_t old = emul_resp_atomic(t, fetch_add, f->cmp, f->swap);
    o = (x_out_t) { .f = { .seq = f->seq } };
    o.f.op = X_OP_ACK;
    o.f.byte_len = 8;
    o.f.cmp = old;
    emul_ring_emit(x, &o, FALSE);
    return XR_DONE;
  }
  default:
    emul_ring_peer_violation(x, w, "a request of unknown op %u", f->op);
    return XR_FAILED;
  }
  x_fail_req(qp, f->seq, fault, w);  /* refused by emul_resp_target */
  return XR_FAILED;
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

