/*
 * vp/emul cross-process data path: the rings between two processes, the
 * requester (issue in order, one-sided RDMA by cross-memory attach), the
 * responder (the peer's requests, executed in order by whoever holds the
 * fabric lock when they become executable: the progress thread, or the
 * application's post_recv), and teardown.  Design: emul_x.h.
 *
 * Rules, the same as in-process (emul_qp.c), with how they are kept here:
 * - local key, domain, bounds, rights: checked by the requester when a WR
 *   is issued; failure: LOC_PROT_ERR, QP_FATAL, both sides BROKEN;
 * - remote ones: checked by whoever moves the bytes, against the target's
 *   own table (bounce mode, atomics) or its exported copy (one-sided RDMA
 *   by attach); failure: REM_ACCESS_ERR at the requester, the responder
 *   gets RNICPI_ASYNC_QP_ACCESS_ERR, both BROKEN, no byte moved (a request
 *   the responder cannot execute, REM_OP_ERR, gives it QP_FATAL instead);
 * - RC ordering: the peer executes ring requests in ring order, a send with
 *   no receive posted holds every request behind it (qp->xin) where the
 *   personality waits for receives (InfiniBand), and is a Terminate where
 *   it does not (iWARP: REM_OP_ERR at the requester, both BROKEN); a
 *   one-sided RDMA runs only when no earlier request is still unanswered;
 * - IRD/ORD: the requester issues no more Reads and atomics than its
 *   negotiated ORD before their answers; a Read reaching a QP whose IRD is
 *   0 fails remotely (REM_OP_ERR);
 * - graceful disconnect (iWARP): the DISC goes once every outstanding
 *   request is answered (qp->closing);
 * - flush exactly once: a WR stays in qp->sq until its answer (ACK,
 *   READ_RESP, or BREAK naming its seq) or the flush, whichever is first;
 *   answers for a closed connection cannot arrive (its ring is unmapped).
 * Limitation: answers still queued for a full ring when the responder
 * breaks are lost; their requests complete flushed at the requester.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emul_x.h"

typedef enum { XR_DONE, XR_BLOCKED, XR_FAILED, XR_NOTDIRECT } xr_t;

#define ROUND_LINE(n) (((uint64_t) (n) + X_LINE - 1) & ~(uint64_t) (X_LINE - 1))
#define X_MAX_IOV 64

static uint8_t *
ring_data(emul_xconn_t *x, int s)
{
  return (uint8_t *) x->seg + X_HDR_SIZE + (size_t) s * X_RING_SIZE;
}

/* Payload of @o from byte @off, @n bytes, into @dst. */
static void
out_copy(const x_out_t *o, uint64_t off, uint8_t *dst, uint64_t n)
{
  if (o->buf != NULL) {
    memcpy(dst, o->buf + off, n);
    return;
  }
  for (uint32_t i = 0; i < o->nsg && n > 0; i++) {
    uint64_t l = o->sg[i].length;
    if (off >= l) {
      off -= l;
      continue;
    }
    uint64_t k = MIN(l - off, n);
    memcpy(dst, (const uint8_t *) (uintptr_t) (o->sg[i].addr + off), k);
    dst += k;
    n -= k;
    off = 0;
  }
}

static void
ring_put(uint8_t *data, uint64_t pos, const x_out_t *o, const void *src, uint64_t off, uint64_t n)
{
  uint64_t at = pos & (X_RING_SIZE - 1);
  uint64_t first = MIN(n, X_RING_SIZE - at);
  if (src != NULL) {
    memcpy(data + at, src, first);
    memcpy(data, (const uint8_t *) src + first, n - first);
  } else {
    out_copy(o, off, data + at, first);
    out_copy(o, off + first, data, n - first);
  }
}

static void
ring_get(const uint8_t *data, uint64_t pos, void *dst, uint64_t n)
{
  uint64_t at = pos & (X_RING_SIZE - 1);
  uint64_t first = MIN(n, X_RING_SIZE - at);
  memcpy(dst, data + at, first);
  memcpy((uint8_t *) dst + first, data, n - first);
}

/* After a sequentially consistent store of a frame's mark or of @r's ACK word: is
 * the consumer asleep, and who sleeps (X_BELL_*, 0: nobody)?  Taking the
 * flag makes one doorbell per sleep. */
static guint
x_take_armed(x_ring_ctl_t *r)
{
  if (!__atomic_load_n(&r->armed, __ATOMIC_SEQ_CST))
    return 0;
  uint32_t a = __atomic_exchange_n(&r->armed, X_ARM_NONE, __ATOMIC_SEQ_CST);
  return a == X_ARM_WAITER ? X_BELL_WAITER : a != X_ARM_NONE ? X_BELL_THREAD : 0;
}

/* Producer: room for @need more bytes?  The consumer's head is read again
 * only when the ring looks full (it is a line the consumer writes). */
static gboolean
ring_room(emul_xconn_t *x, uint64_t need)
{
  x_ring_ctl_t *r = &x->seg->ring[x->side];
  if (G_LIKELY(X_RING_SIZE - (x->tail - x->head_seen) >= need))
    return TRUE;
  x->head_seen = __atomic_load_n(&r->head, __ATOMIC_SEQ_CST);
  if (X_RING_SIZE - (x->tail - x->head_seen) >= need)
    return TRUE;
  __atomic_store_n(&r->want_space, 1, __ATOMIC_SEQ_CST);
  x->head_seen = __atomic_load_n(&r->head, __ATOMIC_SEQ_CST);
  return X_RING_SIZE - (x->tail - x->head_seen) >= need;  /* else X_SPACE pumps again */
}

/* Producer: the frame at x->tail is written but for its mark; publish it.
 * The mark and the consumer's `armed` are a Dekker pair (see emul_x.h):
 * after publishing, a set `armed` means nobody on the other side is
 * looking at the ring, so it needs a doorbell; taking the flag makes that
 * one doorbell per sleep. */
static void
ring_publish(emul_xconn_t *x, uint64_t need, guint *bell)
{
  uint8_t *data = ring_data(x, x->side);
  uint64_t pos = x->tail;
  __atomic_store_n((uint64_t *) (data + (pos & (X_RING_SIZE - 1))), pos ^ x->key_out, __ATOMIC_SEQ_CST);
  x->tail = pos + need;
  *bell |= x_take_armed(&x->seg->ring[x->side]);
}

static gboolean
ring_push(emul_xconn_t *x, const x_frame_t *f, const x_out_t *o, uint64_t off, guint *bell)
{
  uint64_t need = ROUND_LINE(sizeof(*f) + f->frag_len);
  if (!ring_room(x, need))
    return FALSE;
  uint8_t *data = ring_data(x, x->side);
  /* Everything but the mark, which ring_publish stores last. */
  ring_put(data, x->tail + 8, NULL, (const uint8_t *) f + 8, 0, sizeof(*f) - 8);
  if (f->frag_len > 0)
    ring_put(data, x->tail + sizeof(*f), o, NULL, off, f->frag_len);
  ring_publish(x, need, bell);
  return TRUE;
}

/* A whole send of @len bytes from @sg, with the short header, when it fits
 * now and nothing waits ahead of it in x->out; FALSE otherwise. */
static gboolean
ring_push_short(emul_xconn_t *x, uint64_t seq, const rnicpi_sge_t *sg, uint32_t nsg, uint64_t len,
                guint *bell)
{
  uint64_t need = ROUND_LINE(sizeof(x_short_t) + len);
  if (len > X_FRAG_MAX || x->out.head != NULL || !ring_room(x, need))
    return FALSE;
  uint8_t *data = ring_data(x, x->side);
  uint64_t at = x->tail & (X_RING_SIZE - 1);
  x_short_t *h = (x_short_t *) (data + at);  /* a line start: the header never wraps */
  h->op = X_OP_SEND_SHORT;
  h->len = (uint32_t) len;
  h->seq = seq;
  if (nsg == 1 && at + sizeof(*h) + len <= X_RING_SIZE)
    emul_copy((uint8_t *) (h + 1), (const uint8_t *) (uintptr_t) sg[0].addr, len);
  else if (len > 0)
    ring_put(data, x->tail + sizeof(*h), &(x_out_t) { .sg = sg, .nsg = nsg }, NULL, 0, len);
  ring_publish(x, need, bell);
  return TRUE;
}

/* Push what is left of @o into the ring; FALSE when it did not all fit. */
static gboolean
out_push(emul_xconn_t *x, x_out_t *o, guint *bell)
{
  /* Bounce-mode RDMA and atomics complete nothing at the target: its
   * application may never poll a CQ for them (it may be polling the very
   * memory they write), so every frame of theirs rings. */
  gboolean ring_always = o->f.op == X_OP_WRITE || o->f.op == X_OP_READ || o->f.op == X_OP_ATOMIC;
  do {
    x_frame_t f = o->f;
    if (o->started)
      f = (x_frame_t) { .op = X_OP_CONT };
    f.frag_len = (uint32_t) MIN(o->f.total - o->done, X_FRAG_MAX);
    if (!ring_push(x, &f, o, o->done, bell))
      return FALSE;
    if (ring_always)
      *bell |= X_BELL_THREAD;
    o->done += f.frag_len;
    o->started = TRUE;
  } while (o->done < o->f.total);
  return TRUE;
}

/* Wake who sleeps on the peer's side: its progress thread (a socket
 * message) or an application thread asleep on the bell eventfd it gave us
 * (emul_x_cq_wait_begin), as @bell (X_BELL_*) says. */
static void
x_doorbell(emul_xconn_t *x, guint bell)
{
  if (bell & X_BELL_THREAD) {
    x_msg_t m = { .type = X_DOORBELL };
    emul_x_send_msg(x, &m, NULL, 0);
  }
  if (bell & X_BELL_WAITER) {
    /* A full counter wakes the sleeper too; a peer gone is its socket's
     * to say (EOF), not this write's. */
    uint64_t one = 1;
    ssize_t r = write(x->peer_bell_fd, &one, sizeof(one));
    (void) r;
  }
}

/* Responder: the peer's requests below @upto executed and need no answer
 * frame (emul_x.h, "Rings"). */
static void
x_ack(emul_xconn_t *x, uint64_t upto)
{
  if (x->dead || x->seg == NULL)
    return;
  x_ring_ctl_t *r = &x->seg->ring[x->side];
  __atomic_store_n(&r->acked, upto, __ATOMIC_SEQ_CST);
  guint bell = x_take_armed(r);
  if (bell)
    x_doorbell(x, bell);
}

void
emul_x_pump(emul_xconn_t *x)
{
  guint bell = 0;
  x_out_t *o;
  if (x->dead || x->seg == NULL || emul_queue_empty(&x->out))
    return;
  while ((o = g_queue_peek_head(&x->out)) != NULL) {
    if (!out_push(x, o, &bell))
      break;
    g_queue_pop_head(&x->out);
    g_free(o->buf);
    g_free(o);
  }
  if (bell)
    x_doorbell(x, bell);
}

/* Send @o (built on the caller's stack): straight into the ring when
 * nothing waits ahead of it, else (or for what did not fit) a copy joins
 * x->out.  @owned: o->buf is ours to free; otherwise it is borrowed and
 * copied only if the message has to wait. */
static void
x_emit(emul_xconn_t *x, x_out_t *o, gboolean owned)
{
  guint bell = 0;
  if (x->dead || x->seg == NULL) {
    if (owned)
      g_free(o->buf);
    return;
  }
  if (emul_queue_empty(&x->out) && out_push(x, o, &bell)) {
    if (owned)
      g_free(o->buf);
  } else {
    x_out_t *q = g_memdup2(o, sizeof(*o));
    if (!owned && o->buf != NULL)
      q->buf = g_memdup2(o->buf, o->f.total);
    g_queue_push_tail(&x->out, q);
  }
  if (bell)
    x_doorbell(x, bell);
}

gboolean
emul_x_pending(emul_xconn_t *x)
{
  if (x->dead || x->seg == NULL)
    return FALSE;
  const uint8_t *data = ring_data(x, 1 - x->side);
  uint64_t h = x->rx_head;
  return __atomic_load_n((const uint64_t *) (data + (h & (X_RING_SIZE - 1))), __ATOMIC_ACQUIRE) ==
           (h ^ x->key_in) ||
         __atomic_load_n(&x->seg->ring[1 - x->side].acked, __ATOMIC_RELAXED) != x->acked_seen;
}

/* Requests the peer answers with its ACK word rather than a frame. */
static gboolean
x_acked_by_word(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_SEND || op == RNICPI_WR_SEND_INV || op == RNICPI_WR_RDMA_WRITE;
}

/* Requester: complete, in order, the oldest issued requests the peer's ACK
 * word covers.  TRUE when one completed. */
static gboolean
x_take_acks(emul_qp_t *qp, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  if (x == NULL || x->seg == NULL)
    return FALSE;
  uint64_t a = __atomic_load_n(&x->seg->ring[1 - x->side].acked, __ATOMIC_ACQUIRE);
  x->acked_seen = a;
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

void
emul_x_space(emul_xconn_t *x)
{
  emul_x_pump(x);
}

void
emul_x_free_queues(emul_xconn_t *x)
{
  x_out_t *o;
  x_in_t *in;
  while ((o = g_queue_pop_head(&x->out)) != NULL) {
    g_free(o->buf);
    g_free(o);
  }
  if (x->in_busy)
    g_free(x->in.buf);
  x->in_busy = FALSE;
  if (x->qp != NULL) {
    while ((in = g_queue_pop_head(&x->qp->xin)) != NULL) {
      g_free(in->buf);
      g_free(in);
    }
  }
}

/* ---- teardown ---- */

/* A request's fault as a BREAK tells it: the receiver raises the event
 * of its side (the responder's, or the requester's). */
typedef struct {
  emul_fault_t f;
  gboolean to_responder;
} x_fault_t;

/* This side ends the connection: tell the peer (DISC, or BREAK with the
 * request that failed, and @fault when the peer gets an event), release
 * it, report and flush locally. */
static void
x_teardown(emul_qp_t *qp, emul_work_t *w, x_msg_type_t type, rnicpi_wc_status_t st,
           uint64_t seq, const x_fault_t *fault, const void *pdata, uint32_t len)
{
  emul_xconn_t *x = qp->x;
  if (x != NULL) {
    x_take_acks(qp, w);  /* what the peer executed completes, not flushed */
    emul_x_pump(x);  /* answers already due go first, as far as they fit */
    x_msg_t m = { .type = type, .status = st, .seq = seq };
    if (fault != NULL) {
      m.fault = fault->f + 1;
      m.responder = fault->to_responder;
    }
    m.pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
    if (m.pdata_len > 0)
      memcpy(m.pdata, pdata, m.pdata_len);
    emul_x_send_msg(x, &m, NULL, 0);
    emul_x_close(x);
  }
  if (qp->state == RNICPI_QPS_RTS)
    emul_qp_cm_event(qp, type == X_DISC ? RNICPI_CM_DISCONNECTED : RNICPI_CM_BROKEN, NULL, 0);
  emul_qp_set_error(qp, w);
}

void
emul_x_break(emul_qp_t *qp, emul_work_t *w, gboolean orderly, const void *pdata, uint32_t len)
{
  x_teardown(qp, w, orderly ? X_DISC : X_BREAK, 0, 0, NULL, pdata, len);
}

/* The peer ended the connection (m: its DISC or BREAK), died (m NULL, EOF)
 * or broke the protocol (m NULL). */
void
emul_x_peer_break(emul_xconn_t *x, const x_msg_t *m, emul_work_t *w)
{
  if (x->conn != NULL) {
    emul_x_fail_pending(x, w);
    return;
  }
  emul_qp_t *qp = x->qp;
  if (qp != NULL && qp->x == x)
    x_take_acks(qp, w);  /* what the peer executed completes, not flushed */
  emul_x_close(x);
  if (qp == NULL)
    return;
  gboolean disc = m != NULL && m->type == X_DISC;
  if (m == NULL && qp->state == RNICPI_QPS_RTS)
    emul_qp_async(qp, RNICPI_AE_LLP); /* the peer died, or its ring broke the rules */
  if (m != NULL && m->type == X_BREAK) {
    if (m->fault > 0 && qp->state == RNICPI_QPS_RTS) { /* with its BROKEN below */
      emul_fault_t f = (emul_fault_t) (m->fault - 1);
      emul_qp_async(qp, m->responder ? emul_fault_responder(f) : emul_fault_requester(f));
    }
    emul_swqe_t *s = emul_wq_peek(&qp->sq);
    if (m->status != 0 && s != NULL && s->issued && s->seq == m->seq) {
      emul_wq_pop(&qp->sq);
      emul_complete_send(qp, &s->wr, (rnicpi_wc_status_t) m->status, 0, w);
      emul_wq_put(&qp->sq, s);
    }
  }
  if (qp->state == RNICPI_QPS_RTS)
    emul_qp_cm_event(qp, disc ? RNICPI_CM_DISCONNECTED : RNICPI_CM_BROKEN,
                     disc ? m->pdata : NULL, disc ? m->pdata_len : 0);
  emul_qp_set_error(qp, w);
}

static void
x_fail_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st, emul_work_t *w)
{
  emul_complete_send(qp, wr, st, 0, w);
  emul_qp_async(qp, emul_local_cause(st));
  x_teardown(qp, w, X_BREAK, 0, 0, NULL, NULL, 0);
}

/* Responder side: request @seq failed here with @f; each side gets its
 * affiliated event, the requester completes it with its status. */
static void
x_fail_req(emul_qp_t *qp, uint64_t seq, emul_fault_t f, emul_work_t *w)
{
  emul_qp_async(qp, emul_fault_responder(f));
  x_fault_t to = { .f = f, .to_responder = FALSE };
  x_teardown(qp, w, X_BREAK, emul_fault_status(f), seq, &to, NULL, 0);
}

/* Requester side, reaching into the peer's memory itself: @wr failed
 * there with @f; each side gets its affiliated event. */
static void
x_fail_direct(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_fault_t f, emul_work_t *w)
{
  emul_complete_send(qp, wr, emul_fault_status(f), 0, w);
  emul_qp_async(qp, emul_fault_requester(f));
  x_fault_t to = { .f = f, .to_responder = TRUE };
  x_teardown(qp, w, X_BREAK, 0, 0, &to, NULL, 0);
}

/* ---- cross-memory attach ---- */

/* Move @total bytes between local pieces and the peer's pieces. */
static gboolean
x_vm_copy(pid_t pid, gboolean to_peer, const struct iovec *l, int nl,
          const struct iovec *r, int nr)
{
  int li = 0, ri = 0;
  size_t lo = 0, ro = 0;
  while (li < nl && ri < nr) {
    size_t n = MIN(l[li].iov_len - lo, r[ri].iov_len - ro);
    if (n > 0) {
      struct iovec a = { (uint8_t *) l[li].iov_base + lo, n };
      struct iovec b = { (uint8_t *) r[ri].iov_base + ro, n };
      ssize_t k = to_peer ? process_vm_writev(pid, &a, 1, &b, 1, 0)
                          : process_vm_readv(pid, &a, 1, &b, 1, 0);
      if (k <= 0)
        return FALSE;
      n = (size_t) k;
    }
    lo += n;
    ro += n;
    if (lo == l[li].iov_len) { li++; lo = 0; }
    if (ri < nr && ro == r[ri].iov_len) { ri++; ro = 0; }
  }
  return TRUE;
}

static int
sge_iov(const rnicpi_sge_t *s, uint32_t n, struct iovec *iov)
{
  int k = 0;
  for (uint32_t i = 0; i < n; i++)
    if (s[i].length > 0)
      iov[k++] = (struct iovec) { (void *) (uintptr_t) s[i].addr, s[i].length };
  return k;
}

/* One-sided RDMA Write or Read by this process into the peer's memory:
 * the key is checked in the peer's exported table, exactly as the peer
 * would (emul_remote_range); the bytes move by memcpy where the region is
 * mapped here (emul_xmap.c), else by cross-memory attach.  Without attach
 * (bounce mode) only a mapped region is reached this way: anything else,
 * failures included, is XR_NOTDIRECT and goes through the ring. */
/* emul_sge_region for @sg, answered from x->hot when it names the region the
 * last one passed and no region changed since. */
static inline __attribute__((always_inline)) gboolean
x_hot_local(emul_qp_t *qp, emul_xconn_t *x, const rnicpi_sge_t *sg, uint32_t need)
{
  x_hot_t *h = &x->hot;
  if (sg->lkey == h->lkey && h->lgen == emul_fabric.mr_gen && (h->laccess & need) == need &&
      sg->addr >= h->lstart && sg->length <= h->llen && sg->addr - h->lstart <= h->llen - sg->length)
    return TRUE;
  emul_mr_t *mr = emul_sge_region(qp, sg, need);
  if (mr == NULL)
    return FALSE;
  h->lkey = sg->lkey;
  h->lstart = (uint64_t) (uintptr_t) mr->addr;
  h->llen = mr->length;
  h->laccess = mr->access;
  h->lgen = emul_fabric.mr_gen;
  return TRUE;
}

/* The latency case of x_direct: one SGE (of a length > 0) into the region
 * reached last (x->hot), whose check still stands; the local SGE is
 * checked in full.  FALSE, with nothing done, when it does not apply. */
static inline __attribute__((always_inline)) gboolean
x_hot_move(emul_qp_t *qp, emul_xconn_t *x, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  gboolean write = wr->opcode == RNICPI_WR_RDMA_WRITE;
  uint32_t rneed = write ? RNICPI_ACCESS_REMOTE_WRITE : RNICPI_ACCESS_REMOTE_READ;
  uint64_t len, ra = wr->remote_addr;
  const x_hot_t *h = &x->hot;
  const rnicpi_sge_t *sg = wr->sg_list;
  if (!(wr->num_sge == 1 && h->valid && wr->rkey == h->rkey && h->map_gen == x->map_gen &&
        (len = sg->length) > 0 && (h->access & rneed) == rneed && ra >= h->iova && len <= h->length &&
        ra - h->iova <= h->length - len &&
        __atomic_load_n(&x->peer_mrs[h->index].seq, __ATOMIC_ACQUIRE) == h->seq &&
        __atomic_load_n(&x->seg->access[1 - x->side], __ATOMIC_ACQUIRE) == h->qp_access &&
        (write || __atomic_load_n(&x->seg->ird[1 - x->side], __ATOMIC_ACQUIRE) != 0) &&
        x_hot_local(qp, x, sg, write ? RNICPI_ACCESS_LOCAL_READ :
                               emul_pers_local_need(emul_pers_of_qp(qp), wr->opcode))))
    return FALSE;
  uint8_t *remote = h->base + (ra - h->iova), *local = (uint8_t *) (uintptr_t) sg->addr;
  emul_place(write ? remote : local, write ? local : remote, len);
  __atomic_thread_fence(__ATOMIC_RELEASE); /* in place before the completion says so */
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) len, w);
  return TRUE;
}

/* The latency case of a send: one SGE, sent whole with the short header
 * (ring_push_short) when every earlier request is issued and the local SGE
 * passes; the entry kept for its completion is made after the frame is
 * out.  FALSE, with nothing done, when it does not apply. */
static inline __attribute__((always_inline)) gboolean
x_hot_send(emul_qp_t *qp, emul_xconn_t *x, const rnicpi_send_wr_t *wr)
{
  const rnicpi_sge_t *sg = wr->sg_list;
  const emul_swqe_t *last = (const emul_swqe_t *) qp->sq.q.tail;  /* issued ones are a prefix */
  guint bell = 0;
  if ((last != NULL && !last->issued) || x->dead || (x->peer_cma && sg->length > X_INLINE_MAX) ||
      (sg->length > 0 && !x_hot_local(qp, x, sg, RNICPI_ACCESS_LOCAL_READ)) ||
      !ring_push_short(x, qp->next_seq, sg, 1, sg->length, &bell))
    return FALSE;
  emul_swqe_t *s = emul_swqe_keep(qp, wr);
  s->issued = TRUE;
  s->seq = qp->next_seq++;
  s->len = sg->length;
  if (bell)
    x_doorbell(x, bell);
  return TRUE;
}

gboolean
emul_x_post_hot(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  if (x == NULL || qp->state != RNICPI_QPS_RTS || qp->closing || qp->sq.q.len >= qp->attr.max_send_wr)
    return FALSE;
  if (wr->opcode == RNICPI_WR_SEND)
    return x_hot_send(qp, x, wr);
  return emul_wq_empty(&qp->sq) && (wr->opcode == RNICPI_WR_RDMA_WRITE || qp->ord > 0) &&
         (x->cma_out || emul_x_map_on) && x_hot_move(qp, x, wr, w);
}

static xr_t
x_direct(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  gboolean cma = x->cma_out;
  gboolean write = wr->opcode == RNICPI_WR_RDMA_WRITE;
  const emul_pers_t *pers = emul_pers_of_qp(qp);
  uint32_t rneed = write ? RNICPI_ACCESS_REMOTE_WRITE : RNICPI_ACCESS_REMOTE_READ;
  uint64_t len, ra = wr->remote_addr;
  rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
  if (emul_mw_post_relevant(wr)) {
    /* A read into windows or with invalidate: without attach, through the
     * ring (a failure of its own here must not leave it half done). */
    if (!cma)
      return XR_NOTDIRECT;
  } else if (x_hot_move(qp, x, wr, w)) {
    return XR_DONE;
  }
  const rnicpi_sge_t *sg = emul_rdma_local(qp, wr, win, &len);
  if (sg == NULL) {
    if (!cma)
      return XR_NOTDIRECT;
    x_fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
    return XR_FAILED;
  }
  if (!write && __atomic_load_n(&x->seg->ird[1 - x->side], __ATOMIC_ACQUIRE) == 0) {
    if (!cma)
      return XR_NOTDIRECT;
    x_fail_direct(qp, wr, EMUL_FAULT_OP, w);
    return XR_FAILED;
  }
  if (len == 0 && !cma)
    return XR_NOTDIRECT;
  if (len > 0) {
    x_mr_entry_t e;
    uint32_t qp_access = __atomic_load_n(&x->seg->access[1 - x->side], __ATOMIC_ACQUIRE);
    uint32_t index = 0, tag = 0;
    if (!emul_key_split(pers, wr->rkey, &index, &tag) ||
        !emul_x_mr_read(x->peer_mrs, index, &e) ||
        e.key != tag || e.pd_id != x->peer_pd || (e.qpn != 0 && e.qpn != x->peer_qpn) ||
        (e.access & rneed) != rneed || (qp_access & rneed) != rneed ||
        ra < e.iova || len > e.length || ra - e.iova > e.length - len) {
      if (!cma)
        return XR_NOTDIRECT;
      x_fail_direct(qp, wr, emul_access_fault(wr->opcode), w);
      return XR_FAILED;
    }
    uint8_t *mapped = emul_x_map_lookup(x, index, &e);
    if (mapped != NULL) {
      x->hot = (x_hot_t) {
        .valid = TRUE, .rkey = wr->rkey, .index = index, .seq = e.seq, .qp_access = qp_access,
        .access = e.access & qp_access, .iova = e.iova, .length = e.length, .base = mapped,
        .map_gen = x->map_gen,
      };
      emul_sg_copy(sg, wr->num_sge, mapped + (ra - e.iova), write);
      __atomic_thread_fence(__ATOMIC_RELEASE); /* in place before the completion says so */
    } else if (!cma) {
      return XR_NOTDIRECT;
    } else {
      struct iovec l[32], r = { (void *) (uintptr_t) (e.addr + (ra - e.iova)), len };
      int nl = sge_iov(sg, wr->num_sge, l);
      if (!x_vm_copy(x->peer_pid, write, l, nl, &r, 1)) {
        /* EFAULT: the region went away under us (deregistered while in
         * use); anything else: the peer is gone. */
        if (errno == EFAULT) {
          x_fail_direct(qp, wr, emul_access_fault(wr->opcode), w);
        } else {
          emul_complete_send(qp, wr, RNICPI_WC_WR_FLUSH_ERR, 0, w);
          x_teardown(qp, w, X_BREAK, 0, 0, NULL, NULL, 0);
        }
        return XR_FAILED;
      }
    }
  }
  if (!emul_read_inv_done(qp, wr)) {
    x_fail_local(qp, wr, RNICPI_WC_MEM_MGT_ERR, w);
    return XR_FAILED;
  }
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) len, w);
  return XR_DONE;
}

/* ---- requester ---- */

static gboolean
x_is_rdma(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_RDMA_WRITE || op == RNICPI_WR_RDMA_READ || op == RNICPI_WR_RDMA_READ_INV;
}

static gboolean
x_is_read(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_RDMA_READ || op == RNICPI_WR_RDMA_READ_INV;
}

/* Every RDMA Write and Read is one-sided (x_direct) under attach. */
static gboolean
x_is_direct(emul_xconn_t *x, rnicpi_wr_opcode_t op)
{
  return x->cma_out && x_is_rdma(op);
}

/* Requests that only touch this process's tables. */
static gboolean
x_is_local(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_BIND_MW || op == RNICPI_WR_LOCAL_INV || op == RNICPI_WR_FAST_REG;
}

/* Without attach, one to a region mapped here may be. */
static gboolean
x_may_map(emul_xconn_t *x, rnicpi_wr_opcode_t op)
{
  return !x->cma_out && emul_x_map_on && x_is_rdma(op);
}

/* The frame that carries issued request @s (@len bytes) into the ring;
 * TRUE when o->buf is allocated for it (owned). */
static gboolean
x_frame_of(emul_xconn_t *x, const emul_swqe_t *s, uint64_t len, x_out_t *o)
{
  const rnicpi_send_wr_t *wr = &s->wr;
  gboolean owned = FALSE;
  *o = (x_out_t) { .f = { .seq = s->seq } };
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
  case RNICPI_WR_RDMA_WRITE:
    o->f.op = X_OP_WRITE;
    o->sg = wr->sg_list;
    o->nsg = wr->num_sge;
    o->f.total = len;
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

/* Issue the WRs of the send queue not yet issued, in order, as far as RC
 * ordering allows. */
static void
x_issue(emul_qp_t *qp, emul_work_t *w)
{
  emul_swqe_t *prev = NULL, *s = emul_wq_peek(&qp->sq);
  uint32_t reads = 0;  /* Reads and atomics issued and not answered */
  while (s != NULL && qp->x != NULL) {
    emul_xconn_t *x = qp->x;
    rnicpi_send_wr_t *wr = &s->wr;
    if (s->issued) {
      reads += emul_is_rd_atomic(wr->opcode);
      prev = s;
      s = (emul_swqe_t *) s->link.next;
      continue;
    }
    if (emul_is_rd_atomic(wr->opcode) && !x_is_direct(x, wr->opcode) && reads >= qp->ord)
      return;  /* ORD: wait for an answer */
    if (x_is_direct(x, wr->opcode)) {
      if (prev != NULL)
        return;  /* behind a request the peer has not answered */
      emul_wq_pop(&qp->sq);
      xr_t r = x_direct(qp, wr, w);
      emul_wq_put(&qp->sq, s);
      if (r != XR_DONE)
        return;
      s = emul_wq_peek(&qp->sq);
      continue;
    }
    if (x_is_local(wr->opcode)) {
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
    if (x_may_map(x, wr->opcode) && prev == NULL && x_direct(qp, wr, w) == XR_DONE) {
      emul_wq_pop(&qp->sq);
      emul_wq_put(&qp->sq, s);
      s = emul_wq_peek(&qp->sq);
      continue;
    }
    gboolean atomic = rnicpi_wr_is_atomic(wr->opcode);
    uint64_t len;
    rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
    if ((atomic && (wr->num_sge != 1 || wr->sg_list[0].length != 8)) ||
        emul_rdma_local(qp, wr, win, &len) == NULL) {
      /* It completes in its place (RDMAC verbs p.134: in order), after
       * what the peer has yet to answer, and the teardown flushes the rest. */
      if (prev != NULL)
        return;
      emul_wq_pop(&qp->sq);
      x_fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
      emul_wq_put(&qp->sq, s);
      return;
    }
    /* The common case, a whole send in one frame with the short header;
     * otherwise the frame of its kind. */
    guint bell = 0;
    gboolean small = wr->opcode == RNICPI_WR_SEND && !(x->peer_cma && len > X_INLINE_MAX) &&
                     !x->dead && ring_push_short(x, s->seq, wr->sg_list, wr->num_sge, len, &bell);
    x_out_t o;
    gboolean owned = small ? FALSE : x_frame_of(x, s, len, &o);
    s->issued = TRUE;
    s->len = (uint32_t) len;
    prev = s;
    s = (emul_swqe_t *) s->link.next;
    if (!small)
      x_emit(x, &o, owned);  /* o.sg is the entry's sge: it lives until the answer */
    else if (bell)
      x_doorbell(x, bell);
  }
}

rnicpi_status_t
emul_x_post_send(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  if (emul_wq_empty(&qp->sq) && (x_is_direct(qp->x, wr->opcode) || x_may_map(qp->x, wr->opcode)) &&
      x_direct(qp, wr, w) != XR_NOTDIRECT)
    return RNICPI_OK;  /* one-sided, nothing ahead of it: no copy of the WR */
  if (emul_wq_empty(&qp->sq) && x_is_local(wr->opcode)) {
    emul_qp_exec_local(qp, wr, w);
    return RNICPI_OK;
  }
  emul_swqe_keep(qp, wr)->seq = qp->next_seq++;
  x_issue(qp, w);
  if (qp->x != NULL)
    emul_x_pump(qp->x);
  return RNICPI_OK;
}

/* Requests completed: issue what waited behind them; close gracefully
 * once the last is answered. */
static void
x_answered(emul_qp_t *qp, emul_work_t *w)
{
  x_issue(qp, w);
  if (qp->closing && qp->x != NULL && emul_wq_empty(&qp->sq))
    emul_x_break(qp, w, TRUE, NULL, 0);  /* graceful: the last answer is in */
}

/* An answer from the peer: it names the oldest unanswered request. */
static void
x_answer(emul_qp_t *qp, const x_frame_t *f, const uint8_t *buf, emul_work_t *w)
{
  x_take_acks(qp, w);  /* the peer raised its ACK word before this frame */
  emul_swqe_t *s = emul_wq_peek(&qp->sq);
  if (s == NULL || !s->issued || s->seq != f->seq ||
      (f->op == X_OP_READ_RESP && (!x_is_read(s->wr.opcode) || f->total != f->byte_len))) {
    emul_x_peer_break(qp->x, NULL, w);
    return;
  }
  emul_wq_pop(&qp->sq);
  uint32_t len = f->byte_len;
  if (f->op == X_OP_READ_RESP) {
    /* A sink of windows is translated again now: where the bytes land is
     * what the windows say when they land. */
    rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
    uint64_t sink_len;
    const rnicpi_sge_t *sg = emul_rdma_local(qp, &s->wr, win, &sink_len);
    rnicpi_wc_status_t bad = RNICPI_WC_LOC_PROT_ERR;
    if (sg != NULL) {
      emul_scatter(sg, s->wr.num_sge, buf, MIN((uint64_t) len, f->total));
      bad = RNICPI_WC_MEM_MGT_ERR;
    }
    if (sg == NULL || !emul_read_inv_done(qp, &s->wr)) {
      x_fail_local(qp, &s->wr, bad, w);
      emul_wq_put(&qp->sq, s);
      return;
    }
  } else if (rnicpi_wr_is_atomic(s->wr.opcode)) {
    memcpy((void *) (uintptr_t) s->sge[0].addr, &f->cmp, 8);
    len = 8;
  }
  emul_complete_send(qp, &s->wr, RNICPI_WC_SUCCESS, len, w);
  emul_wq_put(&qp->sq, s);
  x_take_acks(qp, w);
  x_answered(qp, w);
}

gboolean
emul_x_outstanding(emul_qp_t *qp)
{
  return !emul_wq_empty(&qp->sq);
}

/* ---- responder ---- */

static xr_t
x_exec_send(emul_qp_t *qp, x_in_t *in, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  emul_wq_t *rq = emul_qp_rq(qp);
  if (emul_wq_empty(rq)) {
    if (emul_pers_of_qp(qp)->rnr_wait)
      return XR_BLOCKED;  /* infinite RNR retry: wait for a receive */
    x_fail_req(qp, in->f.seq, EMUL_FAULT_OP, w);  /* Terminate: no buffer */
    return XR_FAILED;
  }
  /* Send with Invalidate: the key must name a bound window (or a valid
   * fast-registered region) of ours usable through this QP (exec_send). */
  if ((in->f.flags & X_F_INV) && !emul_mw_invalidate(qp, in->f.rkey)) {
    x_fail_req(qp, in->f.seq, EMUL_FAULT_ACCESS, w);
    return XR_FAILED;
  }
  emul_rwqe_t *r = emul_wq_pop(rq);
  if (qp->srq != NULL)
    emul_srq_took(qp->srq);
  uint64_t room = 0, len = in->f.byte_len;
  /* The latency case: the payload inline, one receive SGE that holds it,
   * checked from x->hot; else the general checks and copies below. */
  gboolean placed = r->num_sge == 1 && r->sge[0].length > 0 && !(in->f.flags & X_F_CMA) &&
                    in->f.total == len && len <= r->sge[0].length &&
                    x_hot_local(qp, x, &r->sge[0], RNICPI_ACCESS_LOCAL_WRITE);
  /* emul_sges_ok sets room only for a buffer it accepts: a refused one is
   * a protection error whatever the lengths. */
  gboolean writable =
    placed || emul_sges_ok(qp, r->sge, r->num_sge, RNICPI_ACCESS_LOCAL_WRITE, &room);
  if (placed) {
    emul_copy((uint8_t *) (uintptr_t) r->sge[0].addr, in->buf, len);
  } else if (!writable || len > room) {
    gboolean too_long = writable;
    emul_complete(qp->rcq, qp, r->wr_id, RNICPI_WC_RECV,
                  too_long ? RNICPI_WC_LOC_LEN_ERR : RNICPI_WC_LOC_PROT_ERR, 0, w);
    emul_wq_put(rq, r);
    x_fail_req(qp, in->f.seq, too_long ? EMUL_FAULT_RECV_LENGTH : EMUL_FAULT_RECV_BUFFER, w);
    return XR_FAILED;
  }
  if (placed) {
    /* copied above */
  } else if (in->f.flags & X_F_CMA) {
    struct iovec l[32], rv[X_MAX_IOV];
    uint64_t n = in->f.total / sizeof(x_iov_t), sum = 0;
    const x_iov_t *v = (const x_iov_t *) in->buf;
    gboolean ok = n <= X_MAX_IOV && in->f.total % sizeof(x_iov_t) == 0;
    for (uint64_t i = 0; ok && i < n; i++) {
      rv[i] = (struct iovec) { (void *) (uintptr_t) v[i].addr, v[i].len };
      sum += v[i].len;
    }
    ok = ok && sum == len &&
         x_vm_copy(x->peer_pid, FALSE, l, sge_iov(r->sge, r->num_sge, l), rv, (int) n);
    if (!ok) {
      /* The sender's memory cannot be read: it is gone or lying. */
      emul_wq_push_head(rq, r);
      emul_x_peer_break(x, NULL, w);
      return XR_FAILED;
    }
  } else {
    if (in->f.total != len) {
      emul_wq_push_head(rq, r);
      emul_x_peer_break(x, NULL, w);
      return XR_FAILED;
    }
    emul_scatter(r->sge, r->num_sge, in->buf, len);
  }
  rnicpi_wc_t rwc = {
    .wr_id = r->wr_id, .qp_ctx = qp->base.al_ctx, .status = RNICPI_WC_SUCCESS,
    .opcode = RNICPI_WC_RECV, .byte_len = (uint32_t) len,
  };
  if (in->f.flags & X_F_INV) {
    rwc.flags = RNICPI_WC_WITH_INV;
    rwc.rkey = in->f.rkey;
  }
  emul_cq_push(qp->rcq, &rwc, w);
  emul_wq_put(rq, r);
  x_ack(x, in->f.seq + 1);
  return XR_DONE;
}

static xr_t
x_exec_in(emul_qp_t *qp, x_in_t *in, emul_work_t *w)
{
  const x_frame_t *f = &in->f;
  emul_xconn_t *x = qp->x;
  x_out_t o;  /* an answer: set up by the cases that send one */
  uint8_t *t;
  switch (f->op) {
  case X_OP_SEND:
    return x_exec_send(qp, in, w);
  case X_OP_WRITE:
    t = f->total == 0 ? (uint8_t *) "" :
      emul_remote_range(qp, f->raddr, f->rkey, f->total, RNICPI_ACCESS_REMOTE_WRITE);
    if (t == NULL)
      break;
    emul_place(t, in->buf, f->total);
    x_ack(x, f->seq + 1);
    return XR_DONE;
  case X_OP_READ:
    if (MIN(qp->ird, qp->attr.ird) == 0) {
      x_fail_req(qp, f->seq, EMUL_FAULT_OP, w);
      return XR_FAILED;
    }
    t = f->byte_len == 0 ? (uint8_t *) "" :
      emul_remote_range(qp, f->raddr, f->rkey, f->byte_len, RNICPI_ACCESS_REMOTE_READ);
    if (t == NULL)
      break;
    o = (x_out_t) { .f = { .seq = f->seq } };
    o.f.op = X_OP_READ_RESP;
    o.f.byte_len = f->byte_len;
    o.f.total = f->byte_len;
    o.buf = f->byte_len > 0 ? t : NULL;  /* copied now, or when it has to wait */
    x_emit(x, &o, FALSE);
    return XR_DONE;
  case X_OP_ATOMIC: {
    /* Executed here, under the fabric lock, whatever the payload mode:
     * atomic against every emul requester of this process's memory. */
    if (MIN(qp->ird, qp->attr.ird) == 0) {
      x_fail_req(qp, f->seq, EMUL_FAULT_OP, w);
      return XR_FAILED;
    }
    if ((f->raddr & 7) != 0) {
      /* An operation the responder cannot execute, as in-process
       * (emul_qp.c), not a protection fault. */
      x_fail_req(qp, f->seq, EMUL_FAULT_OP, w);
      return XR_FAILED;
    }
    t = emul_remote_range(qp, f->raddr, f->rkey, 8, RNICPI_ACCESS_ATOMIC);
    if (t == NULL)
      break;
    uint64_t old;
    memcpy(&old, t, 8);
    uint64_t nv = (f->flags & X_F_FETCH_ADD) ? old + f->cmp : old == f->cmp ? f->swap : old;
    memcpy(t, &nv, 8);
    o = (x_out_t) { .f = { .seq = f->seq } };
    o.f.op = X_OP_ACK;
    o.f.byte_len = 8;
    o.f.cmp = old;
    x_emit(x, &o, FALSE);
    return XR_DONE;
  }
  default:
    emul_x_peer_break(x, NULL, w);
    return XR_FAILED;
  }
  x_fail_req(qp, f->seq, f->op == X_OP_WRITE ? EMUL_FAULT_WRITE_ACCESS
                        : f->op == X_OP_READ ? EMUL_FAULT_READ_ACCESS : EMUL_FAULT_ACCESS, w);
  return XR_FAILED;
}

static void
x_run_in(emul_qp_t *qp, emul_work_t *w)
{
  x_in_t *in;
  while (!emul_queue_empty(&qp->xin) && qp->x != NULL && qp->state == RNICPI_QPS_RTS &&
         (in = g_queue_pop_head(&qp->xin)) != NULL) {
    xr_t r = x_exec_in(qp, in, w);
    if (r == XR_BLOCKED) {
      g_queue_push_head(&qp->xin, in);
      return;
    }
    g_free(in->buf);
    g_free(in);
    if (r == XR_FAILED)
      return;
  }
}

void
emul_x_recv_posted(emul_qp_t *qp, emul_work_t *w)
{
  x_run_in(qp, w);
  if (qp->x != NULL)
    emul_x_pump(qp->x);
}

void
emul_x_access_changed(emul_qp_t *qp)
{
  if (qp->x->seg == NULL)
    return;
  uint32_t ird = qp->state == RNICPI_QPS_RTS ? MIN(qp->ird, qp->attr.ird) : qp->attr.ird;
  __atomic_store_n(&qp->x->seg->access[qp->x->side], qp->attr.access, __ATOMIC_RELEASE);
  __atomic_store_n(&qp->x->seg->ird[qp->x->side], ird, __ATOMIC_RELEASE);
}

/* A whole message from the peer.  @owned: @buf is ours (assembled from
 * several frames); otherwise it lies in the ring, valid until the head
 * moves past it, and is copied only if the request has to wait. */
static void
x_dispatch(emul_xconn_t *x, const x_frame_t *f, uint8_t *buf, gboolean owned, emul_work_t *w)
{
  emul_qp_t *qp = x->qp;
  switch (f->op) {
  case X_OP_SEND:
  case X_OP_WRITE:
  case X_OP_READ:
  case X_OP_ATOMIC: {
    if (emul_queue_empty(&qp->xin)) {
      /* Nothing ahead of it: execute in place. */
      x_in_t now = { *f, buf };
      if (x_exec_in(qp, &now, w) != XR_BLOCKED) {
        if (owned)
          g_free(buf);
        break;
      }
    }
    x_in_t *in = g_new(x_in_t, 1);
    in->f = *f;
    in->buf = owned || buf == NULL ? buf : g_memdup2(buf, f->total);
    g_queue_push_tail(&qp->xin, in);
    x_run_in(qp, w);
    break;
  }
  case X_OP_ACK:
  case X_OP_READ_RESP:
    x_answer(qp, f, buf, w);
    if (owned)
      g_free(buf);
    break;
  default:
    if (owned)
      g_free(buf);
    emul_x_peer_break(x, NULL, w);
    break;
  }
}

/* Consumer: the frames before @head are done with; the producer may
 * reuse their room (and is told so if it waits for it). */
static void
x_release(emul_xconn_t *x, uint64_t head)
{
  x_ring_ctl_t *r = &x->seg->ring[1 - x->side];
  __atomic_store_n(&r->head, head, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&r->want_space, __ATOMIC_SEQ_CST)) {
    __atomic_store_n(&r->want_space, 0, __ATOMIC_SEQ_CST);
    x_msg_t m = { .type = X_SPACE };
    emul_x_send_msg(x, &m, NULL, 0);
  }
}

/* Consumer: take every frame the peer published, assembling messages and
 * handing each to x_dispatch.  Never stops early (see emul_x.h). */
void
emul_x_drain(emul_xconn_t *x, emul_work_t *w)
{
  if (x->dead || x->qp == NULL || x->qp->state != RNICPI_QPS_RTS || x->seg == NULL)
    return;
  int s = 1 - x->side;
  x_ring_ctl_t *r = &x->seg->ring[s];
  const uint8_t *data = ring_data(x, s);
  uint64_t head = x->rx_head;
  for (;;) {
    uint64_t at = head & (X_RING_SIZE - 1);
    if (__atomic_load_n((const uint64_t *) (data + at), __ATOMIC_ACQUIRE) != (head ^ x->key_in))
      break;  /* no frame there (yet) */
    x_frame_t f;
    uint64_t hdr;
    const x_short_t *sh = (const x_short_t *) (data + at);  /* a line start: never wraps */
    if (__atomic_load_n(&sh->op, __ATOMIC_RELAXED) == X_OP_SEND_SHORT) {
      uint32_t len = __atomic_load_n(&sh->len, __ATOMIC_RELAXED);
      f = (x_frame_t) { .op = X_OP_SEND, .frag_len = len, .byte_len = len, .total = len,
                        .seq = __atomic_load_n(&sh->seq, __ATOMIC_RELAXED) };
      hdr = sizeof(*sh);
    } else {
      ring_get(data, head, &f, sizeof(f));
      hdr = sizeof(f);
    }
    if (f.frag_len > X_FRAG_MAX)
      goto bad;
    uint64_t need = ROUND_LINE(hdr + f.frag_len);
    if (f.op == X_OP_CONT) {
      if (!x->in_busy || x->in_have + f.frag_len > x->in.f.total)
        goto bad;
    } else {
      if (x->in_busy || f.frag_len > f.total || f.total > (UINT64_C(1) << 30) + 4096)
        goto bad;
      uint64_t pat = (head + hdr) & (X_RING_SIZE - 1);
      if (f.frag_len == f.total && pat + f.frag_len <= X_RING_SIZE) {
        /* Whole and contiguous: no copy out (valid until head is published). */
        head = x->rx_head = head + need;
        x_dispatch(x, &f, f.total > 0 ? (uint8_t *) data + pat : NULL, FALSE, w);
        if (x->dead)
          return;  /* the ring went with the connection */
        goto next;
      }
      x->in.f = f;
      x->in.buf = f.total > 0 ? g_malloc(f.total) : NULL;
      x->in_have = 0;
      x->in_busy = TRUE;
    }
    if (f.frag_len > 0)
      ring_get(data, head + hdr, x->in.buf + x->in_have, f.frag_len);
    x->in_have += f.frag_len;
    head = x->rx_head = head + need;
    if (x->in_have == x->in.f.total) {
      x_frame_t whole = x->in.f;
      uint8_t *buf = x->in.buf;
      x->in_busy = FALSE;
      x->in.buf = NULL;
      x_dispatch(x, &whole, buf, TRUE, w);
      if (x->dead)
        return;
    }
  next:
    /* Room is given back in quarters of the ring, not frame by frame: a
     * release is a store the producer's next look for room has to fetch,
     * and a fence.  The producer waits for room only when more than a
     * quarter is unreleased (a ring looks full to it with at most one
     * largest frame free), so the release that frees it always comes. */
    if (head - x->rx_published >= X_RING_SIZE / 4) {
      x_release(x, head);
      x->rx_published = head;
    }
  }
  if (__atomic_load_n(&r->acked, __ATOMIC_ACQUIRE) != x->acked_seen && x_take_acks(x->qp, w))
    x_answered(x->qp, w);
  return;
bad:
  emul_x_peer_break(x, NULL, w);
}
