/*
 * vp/emul rings: the two SPSC rings of a connection segment between two
 * processes (design: emul_ring.h, "Rings" and "Who drains a ring, and
 * doorbells").  Producing: a frame written, then published by its mark,
 * or the ACK word raised; the doorbell owed for it; the overflow queue
 * x->out.  Consuming: frames taken in ring order from the head, assembled
 * into whole messages and handed to the responder (requests,
 * emul_ring_resp.c) or the requester (answers, emul_ring_resp.c); room
 * given back in quarters of the ring.
 *
 * Rules:
 * - a frame's mark (or the ACK word) is stored last, then the consumer's
 *   `armed` read (Dekker pair, both sequentially consistent): only a set
 *   `armed` costs a doorbell, one per sleep;
 * - a consumer never stops draining: a request it cannot execute yet waits
 *   in qp->xin, so two processes whose rings are full of each other's
 *   requests cannot deadlock (a pause for a long Read Response's copy
 *   ends with the copy: emul_ring_serve);
 * - nothing read from the peer's ring is trusted: lengths and ops are
 *   checked before use, and a frame that breaks the rules breaks the
 *   connection (emul_ring_peer_break);
 * - the QP's link is held, and the fabric lock too but in the busy poll's
 *   drain of the common case (emul_ring_drain_link).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <unistd.h>

#include "emul_ring.h"

#define ROUND_LINE(n) (((uint64_t) (n) + X_LINE - 1) & ~(uint64_t) (X_LINE - 1))

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
 * The mark and the consumer's `armed` are a Dekker pair (see emul_ring.h):
 * after publishing, a set `armed` means nobody on the other side is
 * looking at the ring, so it needs a doorbell; taking the flag makes that
 * one doorbell per sleep. */
static void
ring_publish(emul_xconn_t *x, uint64_t need, guint *bell)
{
  uint8_t *data = ring_data(x, x->side);
  uint64_t pos = x->tail;
  __atomic_store_n((uint64_t *) (data + (pos & (X_RING_SIZE - 1))), pos ^ x->key_out, __ATOMIC_SEQ_CST);
  __atomic_store_n(&x->tail, pos + need, __ATOMIC_RELAXED);  /* the stall check reads it */
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
gboolean
emul_ring_ring_push_short(emul_xconn_t *x, uint64_t seq, const rnicpi_sge_t *sg, uint32_t nsg,
                       uint64_t len, guint *bell)
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

/* Doorbells owed by this thread, rung once it lets the fabric lock go
 * (emul_fabric_unlock): a doorbell is a system call (a socket message, an
 * eventfd write), and no thread should wait for the lock while it runs.
 * The connection's queued socket messages, and the close of its socket
 * after them, are owed the same way (X_BELL_MSGS).  Each entry holds a
 * reference to its connection, so its descriptors stay open until the
 * bell is rung.  The first X_BELLS_INLINE entries live in the thread's
 * own storage; a section that owes more connections (a teardown of many,
 * a drain of a CQ shared by many) grows a heap array, kept for the
 * thread's next sections and freed when it exits (x_bells_heap).  Only
 * when that array cannot grow is a bell rung at once, under the lock. */
#define X_BELLS_INLINE 8
typedef struct {
  emul_xconn_t *x;
  guint bell;
} x_bell_t;
static __thread x_bell_t x_bells[X_BELLS_INLINE] __attribute__((tls_model("initial-exec")));
static __thread x_bell_t *x_bells_more;  /* entries X_BELLS_INLINE and on */
static __thread guint x_bells_room;      /* of x_bells_more */

/* The thread exits: its array goes, and a bell owed later in its exit (by
 * another destructor) grows a new one. */
static void
x_bells_free(gpointer more)
{
  g_free(more);
  x_bells_more = NULL;
  x_bells_room = 0;
}
static GPrivate x_bells_heap = G_PRIVATE_INIT(x_bells_free);
__thread guint emul_ring_bells_due __attribute__((tls_model("initial-exec")));

static inline x_bell_t *
x_bell_at(guint i)
{
  return i < X_BELLS_INLINE ? &x_bells[i] : &x_bells_more[i - X_BELLS_INLINE];
}

/* Room for one more owed bell; FALSE when the heap array cannot grow. */
static gboolean
x_bells_grow(void)
{
  guint due = emul_ring_bells_due;
  if (due < X_BELLS_INLINE + x_bells_room)
    return TRUE;
  guint room = x_bells_room == 0 ? X_BELLS_INLINE : x_bells_room * 2;
  if (room > G_MAXUINT / 4)
    return FALSE;
  x_bell_t *more = g_try_renew(x_bell_t, x_bells_more, room);
  if (more == NULL)
    return FALSE;
  x_bells_more = more;
  x_bells_room = room;
  g_private_set(&x_bells_heap, more);  /* freed at the thread's exit */
  return TRUE;
}

static void
x_ring_bell(emul_xconn_t *x, guint bell)
{
  /* One message for both: the peer's socket callback pumps its out queue
   * after any message (emul_ring_conn_ready), a doorbell too.  It goes behind the
   * connection's queued messages, in their order. */
  if (bell & (X_BELL_THREAD | X_BELL_SPACE)) {
    x_sockmsg_t e = { .nfds = 0 };
    e.m.type = (bell & X_BELL_THREAD) ? X_DOORBELL : X_SPACE;
    e.m.pdata_len = 0;
    emul_ring_msgs_flush(x, &e);
  } else if (bell & X_BELL_MSGS) {
    emul_ring_msgs_flush(x, NULL);
  }
  if (bell & X_BELL_WAITER) {
    /* A full counter wakes the sleeper too; a peer gone is its socket's
     * to say (EOF), not this write's. */
    uint64_t one = 1;
    ssize_t r = write(x->peer_bell_fd, &one, sizeof(one));
    (void) r;
  }
  if (bell & X_BELL_SELF) {
    uint64_t one = 1;
    ssize_t r = write(x->bell_fd, &one, sizeof(one));
    (void) r;
  }
}

/* Wake who sleeps on the peer's side: its progress thread (a socket
 * message) or an application thread asleep on the bell eventfd it gave us
 * (emul_ring_cq_wait_begin), as @bell (X_BELL_*) says; or send the
 * connection's queued messages.  Fabric lock held (or a QP's link alone):
 * the bell is rung when this thread lets its locks go; at once only when
 * the thread's list of owed bells cannot grow (no memory). */
void
emul_ring_doorbell(emul_xconn_t *x, guint bell)
{
  for (guint i = 0; i < emul_ring_bells_due; i++) {
    x_bell_t *b = x_bell_at(i);
    if (b->x == x) {
      b->bell |= bell;
      return;
    }
  }
  /* The inline entries first: the heap array's pointer and room are
   * thread-locals of the shared library's dynamic model (a call to reach). */
  if (G_UNLIKELY(emul_ring_bells_due >= X_BELLS_INLINE) && !x_bells_grow()) {
    x_ring_bell(x, bell);
    return;
  }
  g_atomic_int_inc(&x->ref);
  *x_bell_at(emul_ring_bells_due++) = (x_bell_t) { x, bell };
}

void
emul_ring_bells_ring(void)
{
  guint n = emul_ring_bells_due;
  emul_ring_bells_due = 0;
  for (guint i = 0; i < n; i++) {
    x_bell_t b = *x_bell_at(i);
    x_ring_bell(b.x, b.bell);
    emul_ring_conn_unref(b.x);  /* the last reference may go here */
  }
}

/* Responder: the peer's requests below @upto executed and need no answer
 * frame (emul_ring.h, "Rings"). */
void
emul_ring_ack(emul_xconn_t *x, uint64_t upto)
{
  if (x->dead || x->seg == NULL)
    return;
  x_ring_ctl_t *r = &x->seg->ring[x->side];
  __atomic_store_n(&r->acked, upto, __ATOMIC_SEQ_CST);
  guint bell = x_take_armed(r);
  if (bell)
    emul_ring_doorbell(x, bell);
}

/* Whether @o answers the peer's request (it counts against our IRD). */
static inline guint
x_is_answer(const x_out_t *o)
{
  return o->f.op == X_OP_READ_RESP || o->f.op == X_OP_ACK;
}

void
emul_ring_pump(emul_xconn_t *x)
{
  guint bell = 0;
  x_out_t *o;
  if (x->dead || x->seg == NULL || emul_queue_empty(&x->out))
    return;
  while ((o = g_queue_peek_head(&x->out)) != NULL) {
    if (!out_push(x, o, &bell))
      break;
    g_queue_pop_head(&x->out);
    x->out_answers -= x_is_answer(o);
    x->out_bytes -= o->buf != NULL ? o->f.total : 0;
    g_free(o->buf);
    g_free(o);
  }
  if (bell)
    emul_ring_doorbell(x, bell);
}

/* Send @o (built on the caller's stack): straight into the ring when
 * nothing waits ahead of it, else (or for what did not fit) a copy joins
 * x->out.  @owned: o->buf is ours to free; otherwise it is borrowed and
 * copied only if the message has to wait. */
gboolean
emul_ring_emit(emul_xconn_t *x, x_out_t *o, gboolean owned)
{
  guint bell = 0;
  if (x->dead || x->seg == NULL) {
    if (owned)
      g_free(o->buf);
    return TRUE;
  }
  if (emul_queue_empty(&x->out) && out_push(x, o, &bell)) {
    if (owned)
      g_free(o->buf);
  } else {
    /* A Read Response's bytes are as long as the peer asked (its region's
     * length at most): their copy may not fit in memory. */
    uint8_t *copy = !owned && o->buf != NULL ? g_try_malloc(o->f.total) : o->buf;
    if (copy == NULL && o->buf != NULL && o->f.total > 0)
      return FALSE;
    if (!owned && o->buf != NULL)
      memcpy(copy, o->buf, o->f.total);
    x_out_t *q = g_memdup2(o, sizeof(*o));
    q->buf = copy;
    g_queue_push_tail(&x->out, q);
    x->out_answers += x_is_answer(q);
    x->out_bytes += copy != NULL ? q->f.total : 0;
  }
  if (bell)
    emul_ring_doorbell(x, bell);
  return TRUE;
}

gboolean
emul_ring_emit_now(emul_xconn_t *x, x_out_t *o)
{
  guint bell = 0;
  if (x->dead || x->seg == NULL || o->f.total > X_FRAG_MAX || !emul_queue_empty(&x->out) ||
      !out_push(x, o, &bell))
    return FALSE;  /* one frame: none of it went */
  if (bell)
    emul_ring_doorbell(x, bell);
  return TRUE;
}

/* The look after an arm: both loads are the consumer's half of the Dekker
 * pair with the producer (its mark or ACK word, then `armed`), so they are
 * sequentially consistent, not merely acquire (a plain load on x86). */
gboolean
emul_ring_pending(emul_xconn_t *x)
{
  if (x->dead || x->seg == NULL)
    return FALSE;
  const uint8_t *data = ring_data(x, 1 - x->side);
  /* rx_head and acked_seen move under the QP's link, which a busy poll
   * holds alone (emul_ring_drain_link): a value read here may be one step
   * old, which only makes a frame already taken look pending; its drain,
   * under the link, reads them again. */
  uint64_t h = __atomic_load_n(&x->rx_head, __ATOMIC_RELAXED);
  return g_atomic_int_get(&x->in_whole) ||
         __atomic_load_n((const uint64_t *) (data + (h & (X_RING_SIZE - 1))), __ATOMIC_SEQ_CST) ==
           (h ^ x->key_in) ||
         __atomic_load_n(&x->seg->ring[1 - x->side].acked, __ATOMIC_SEQ_CST) !=
           __atomic_load_n(&x->acked_seen, __ATOMIC_RELAXED);
}

gboolean
emul_ring_waiting(emul_xconn_t *x, uint64_t *taken)
{
  if (x->dead || x->seg == NULL)
    return FALSE;
  /* The peer's word, read once: only compared with our own tail. */
  *taken = __atomic_load_n(&x->seg->ring[x->side].taken, __ATOMIC_RELAXED);
  return *taken != __atomic_load_n(&x->tail, __ATOMIC_RELAXED);
}

void
emul_ring_space(emul_xconn_t *x)
{
  emul_ring_pump(x);
}

void
emul_ring_free_queues(emul_xconn_t *x)
{
  x_out_t *o;
  x_in_t *in;
  while ((o = g_queue_pop_head(&x->out)) != NULL) {
    g_free(o->buf);
    g_free(o);
  }
  x->out_answers = 0;
  x->out_bytes = 0;
  if (x->in_busy)
    g_free(x->in.buf);
  x->in_busy = FALSE;
  g_atomic_int_set(&x->in_whole, 0);
  if (x->qp != NULL) {
    while ((in = g_queue_pop_head(&x->qp->xin)) != NULL)
      emul_ring_in_free(in);
    x->qp->xin_bytes = 0;
    while ((in = g_queue_pop_head(&x->qp->xans)) != NULL)
      emul_ring_in_free(in);
  }
}

x_in_t *
emul_ring_in_new(const x_frame_t *f, uint8_t *buf, gboolean owned)
{
  x_in_t *in = g_new(x_in_t, 1);
  in->f = *f;
  in->buf = owned || buf == NULL ? buf : g_memdup2(buf, f->total);
  return in;
}

void
emul_ring_in_free(x_in_t *in)
{
  g_free(in->buf);
  g_free(in);
}

/* Whether @total more bytes of the peer's may wait beside the payload the
 * QP's requests hold waiting (qp->xin): a request queued behind a receive,
 * or a message being assembled, counts against ITAPI_EMUL_INBOUND_MB. */
static inline gboolean
x_in_fits(const emul_xconn_t *x, uint64_t total)
{
  uint64_t held = MIN(x->qp->xin_bytes, emul_ring_xin_max);
  return total <= emul_ring_xin_max - held;
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
    if (emul_queue_empty(&qp->xin) && !qp->rcopying) {
      /* Nothing ahead of it: execute in place. */
      x_in_t now = { *f, buf };
      xr_t r = emul_ring_exec_in(qp, &now, TRUE, w);
      if (r != XR_BLOCKED && r != XR_OWED) {
        if (owned)
          g_free(buf);
        break;
      }
    }
    /* A peer of ours has no more requests outstanding than its send queue
     * holds; the payload they may hold here is bounded too (a peer that
     * sends on and on with no receive posted here). */
    uint64_t bytes = buf != NULL ? f->total : 0;
    if (qp->xin.length >= EMUL_MAX_QP_WR || !x_in_fits(x, bytes)) {
      if (owned)
        g_free(buf);
      emul_ring_peer_violation(x, w, "more requests than this queue pair holds waiting for receives "
                               "(%u requests, %" G_GUINT64_FORMAT " bytes of payload: the bound is %u "
                               "requests and ITAPI_EMUL_INBOUND_MB=%" G_GUINT64_FORMAT ")",
                               qp->xin.length + 1, qp->xin_bytes + bytes, EMUL_MAX_QP_WR,
                               emul_ring_xin_max >> 20);
      break;
    }
    x_in_t *in = emul_ring_in_new(f, buf, owned);
    qp->xin_bytes += bytes;
    g_queue_push_tail(&qp->xin, in);
    emul_ring_run_in(qp, TRUE, w);
    break;
  }
  case X_OP_ACK:
  case X_OP_READ_RESP:
    emul_ring_answer(qp, f, buf, owned, w);  /* takes @buf when owned */
    break;
  default:
    if (owned)
      g_free(buf);
    emul_ring_peer_violation(x, w, "a frame of unknown op %u", f->op);
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
    emul_ring_doorbell(x, X_BELL_SPACE);  /* an X_SPACE, sent with the lock let go */
  }
}

/* Consumer: the frame the peer published at @head of its ring @data, if
 * there is one (FALSE: none yet): its header in @f (a short one as the
 * Send it is), the header's length in *@hdr. */
static inline __attribute__((always_inline)) gboolean
x_frame_at(const emul_xconn_t *x, const uint8_t *data, uint64_t head, x_frame_t *f, uint64_t *hdr)
{
  uint64_t at = head & (X_RING_SIZE - 1);
  if (__atomic_load_n((const uint64_t *) (data + at), __ATOMIC_ACQUIRE) != (head ^ x->key_in))
    return FALSE;
  const x_short_t *sh = (const x_short_t *) (data + at);  /* a line start: never wraps */
  if (__atomic_load_n(&sh->op, __ATOMIC_RELAXED) == X_OP_SEND_SHORT) {
    uint32_t len = __atomic_load_n(&sh->len, __ATOMIC_RELAXED);
    *f = (x_frame_t) { .op = X_OP_SEND, .frag_len = len, .byte_len = len, .total = len,
                       .seq = __atomic_load_n(&sh->seq, __ATOMIC_RELAXED) };
    *hdr = sizeof(*sh);
  } else {
    ring_get(data, head, f, sizeof(*f));
    *hdr = sizeof(*f);
  }
  return TRUE;
}

/* Consumer: the frames before @head are taken; room goes back to the
 * producer in quarters of the ring, not frame by frame: a release is a
 * store the producer's next look for room has to fetch, and a fence.  The
 * producer waits for room only when more than a quarter is unreleased (a
 * ring looks full to it with at most one largest frame free), so the
 * release that frees it always comes. */
static inline void
x_taken(emul_xconn_t *x, uint64_t head)
{
  __atomic_store_n(&x->rx_head, head, __ATOMIC_RELAXED);  /* emul_ring_pending reads it */
  /* The producer's stall check reads it; a store to a line nobody else
   * reads in the common case. */
  __atomic_store_n(&x->seg->ring[1 - x->side].taken, head, __ATOMIC_RELAXED);
  if (head - x->rx_published >= X_RING_SIZE / 4) {
    x_release(x, head);
    x->rx_published = head;
  }
}

/* Consumer: take every frame the peer published, assembling messages and
 * handing each to x_dispatch.  Never stops early (see emul_ring.h), but
 * with @cut at a long Read Response left to the drainer (qp->xans): TRUE
 * then, and the caller makes the copy and drains on (emul_ring_serve). */
/* The longest message a peer may send: 1 GiB and a page. */
#define X_MSG_MAX ((UINT64_C(1) << 30) + 4096)

/* Whether frame @f may join the message being assembled (x->in): a
 * continuation that fits what is left of it, or the first frame of a new
 * one no longer than a peer may send.  The full drain refuses any other. */
static inline gboolean
x_frag_fits(const emul_xconn_t *x, const x_frame_t *f)
{
  if (f->op == X_OP_CONT)
    return x->in_busy && f->frag_len > 0 && x->in_have + f->frag_len <= x->in.f.total;
  if (x->in_busy || f->frag_len > f->total || f->total > X_MSG_MAX)
    return FALSE;
  /* What each first frame may say (x_dispatch, emul_ring_exec_in,
   * emul_ring_answer), checked before anything is allocated for it.
   * Immediate data: no more bits than the personality carries, on a Write
   * or alone (a Send of no payload and no other flag). */
  if ((f->flags & X_F_IMM) &&
      ((f->cmp & ~emul_pers_of_qp(x->qp)->imm_mask) != 0 ||
       (f->op == X_OP_SEND && (f->flags != X_F_IMM || f->byte_len != 0 || f->total != 0))))
    return FALSE;
  switch (f->op) {
  case X_OP_SEND:
    if (f->flags & ~(X_F_CMA | X_F_INV | X_F_IMM))
      return FALSE;
    /* A gather list to pull (emul_ring_resp.c) only where this process
     * said it attaches to the peer. */
    if (f->flags & X_F_CMA)
      return x->probed && f->total % sizeof(x_iov_t) == 0 && f->total <= X_IOV_MAX * sizeof(x_iov_t);
    return f->byte_len == f->total;
  case X_OP_WRITE:
    return (f->flags & ~X_F_IMM) == 0;
  case X_OP_READ_RESP:
    return f->flags == 0;
  case X_OP_READ:
  case X_OP_ACK:
    return f->flags == 0 && f->total == 0;
  case X_OP_ATOMIC:
    return (f->flags & ~X_F_FETCH_ADD) == 0 && f->total == 0;
  default:
    return FALSE;
  }
}

/* Start assembling the message whose first frame is @f (x->in): FALSE
 * when its buffer cannot be allocated. */
static gboolean
x_in_start(emul_xconn_t *x, const x_frame_t *f)
{
  uint8_t *buf = f->total > 0 ? g_try_malloc(f->total) : NULL;
  if (f->total > 0 && buf == NULL)
    return FALSE;
  x->in.f = *f;
  x->in.buf = buf;
  x->in_have = 0;
  x->in_busy = TRUE;
  return TRUE;
}

/* The message being assembled (x->in) is whole: execute it.  FALSE when
 * the connection went meanwhile; *@stop when a Read Response's copy is
 * owed first (emul_ring_drain's @cut). */
static gboolean
x_dispatch_whole(emul_xconn_t *x, gboolean cut, gboolean *stop, emul_work_t *w)
{
  x_frame_t whole = x->in.f;
  uint8_t *buf = x->in.buf;
  x->in_busy = FALSE;
  x->in.buf = NULL;
  g_atomic_int_set(&x->in_whole, 0);
  x_dispatch(x, &whole, buf, TRUE, w);
  if (x->dead)
    return FALSE;  /* the ring went with the connection */
  /* The Reads behind this answer are issued once its copy is made: made
   * now, not after every frame the peer has sent meanwhile, it keeps the
   * peer's Read Responses coming. */
  *stop = cut && x->issue_owed && !emul_queue_empty(&x->qp->xans);
  return TRUE;
}

gboolean
emul_ring_drain(emul_xconn_t *x, gboolean cut, emul_work_t *w)
{
  if (x->dead || x->qp == NULL || x->qp->state != RNICPI_QPS_RTS || x->seg == NULL)
    return FALSE;
  int s = 1 - x->side;
  x_ring_ctl_t *r = &x->seg->ring[s];
  const uint8_t *data = ring_data(x, s);
  gboolean stop = FALSE;
  /* A message a drain under the link alone assembled whole (x_assemble)
   * goes first. */
  if (g_atomic_int_get(&x->in_whole) && (!x_dispatch_whole(x, cut, &stop, w) || stop))
    return stop;
  uint64_t head = x->rx_head;
  x_frame_t f;
  uint64_t hdr;
  /* One lap of the ring at most: a peer that publishes frames as fast as
   * they are taken must not hold this thread (and the fabric lock) for
   * ever.  What is left stays pending: the progress thread's next look
   * takes it, with the lock let go between (x_poll_func). */
  uint64_t budget = head + X_RING_SIZE;
  while (head < budget && x_frame_at(x, data, head, &f, &hdr)) {
    if (f.frag_len > X_FRAG_MAX)
      goto bad;
    __atomic_store_n(&x->rx_full, x->rx_full + 1, __ATOMIC_RELAXED);
    uint64_t need = ROUND_LINE(hdr + f.frag_len);
    if (!x_frag_fits(x, &f))
      goto bad;
    if (f.op != X_OP_CONT) {
      uint64_t pat = (head + hdr) & (X_RING_SIZE - 1);
      if (f.frag_len == f.total && pat + f.frag_len <= X_RING_SIZE) {
        /* Whole and contiguous: no copy out (valid until head is published). */
        head += need;
        __atomic_store_n(&x->rx_head, head, __ATOMIC_RELAXED);
        x_dispatch(x, &f, f.total > 0 ? (uint8_t *) data + pat : NULL, FALSE, w);
        if (x->dead)
          return FALSE;  /* the ring went with the connection */
        x_taken(x, head);
        continue;
      }
      if (!x_in_fits(x, f.total)) {
        emul_ring_peer_violation(x, w, "more requests than this queue pair holds waiting: a message "
                                 "of %" G_GUINT64_FORMAT " bytes beside %" G_GUINT64_FORMAT " waiting, "
                                 "past ITAPI_EMUL_INBOUND_MB=%" G_GUINT64_FORMAT, (guint64) f.total,
                                 (guint64) x->qp->xin_bytes, emul_ring_xin_max >> 20);
        return FALSE;
      }
      if (!x_in_start(x, &f)) {
        g_log(EMUL_LOG, G_LOG_LEVEL_WARNING, "emul: no memory to assemble a message of %" G_GUINT64_FORMAT
              " bytes from process %d: the connection is broken (free memory, or send shorter messages)",
              (guint64) f.total, (int) x->peer_pid);
        goto bad;
      }
    }
    if (f.frag_len > 0)
      ring_get(data, head + hdr, x->in.buf + x->in_have, f.frag_len);
    x->in_have += f.frag_len;
    head += need;
    __atomic_store_n(&x->rx_head, head, __ATOMIC_RELAXED);
    if (x->in_have == x->in.f.total) {
      if (!x_dispatch_whole(x, cut, &stop, w))
        return FALSE;
      if (stop) {
        x_taken(x, head);
        return TRUE;
      }
    }
    x_taken(x, head);
  }
  if (__atomic_load_n(&r->acked, __ATOMIC_ACQUIRE) != x->acked_seen && emul_comp_run(x->qp, NULL, w))
    emul_ring_answered(x->qp, w);
  return FALSE;
bad:
  emul_ring_peer_violation(x, w, "a malformed frame at ring position %" G_GUINT64_FORMAT " (op %u, flags "
                           "%#x, %u of %" G_GUINT64_FORMAT " bytes%s)", (guint64) head, f.op, f.flags,
                           f.frag_len, (guint64) f.total, x->in_busy ? ", a message being assembled" : "");
  return FALSE;
}

void
emul_ring_serve(emul_xconn_t *x, emul_work_t *w)
{
  gboolean more;
  do {
    more = emul_ring_drain(x, TRUE, w);
    emul_ring_issue_owed(x, w);  /* may let the locks go for a long copy */
  } while (more && !x->dead);
}

/* A drain under the link alone: frame @f (its payload @p) of a message of
 * several frames joins the message being assembled (x->in), as the full
 * drain's would; once whole, the message is left to the full drain, which
 * executes it before it reads the ring again (emul_ring_drain).  FALSE,
 * nothing done, for a frame out of place, which that drain refuses. */
static gboolean
x_assemble(emul_xconn_t *x, const x_frame_t *f, const x_span_t *p)
{
  if (g_atomic_int_get(&x->in_whole))
    return FALSE;  /* whole already: the full drain executes it first */
  /* Out of place: the full drain refuses it.  (A first frame here is
   * shorter than its message: whole ones are not assembled.) */
  if (!x_frag_fits(x, f))
    return FALSE;
  if (f->op != X_OP_CONT && (!x_in_fits(x, f->total) || !x_in_start(x, f)))
    return FALSE;  /* the full drain tries again, and breaks the connection */
  memcpy(x->in.buf + x->in_have, p->a, p->na);
  memcpy(x->in.buf + x->in_have + p->na, p->b, p->len - p->na);
  x->in_have += f->frag_len;
  if (x->in_have == x->in.f.total)
    g_atomic_int_set(&x->in_whole, 1);  /* the ring looks pending until it is executed */
  return TRUE;
}

unsigned
emul_ring_drain_link(emul_qp_t *qp, emul_xconn_t *x, emul_work_t *w)
{
  if (x->dead || x->seg == NULL)
    return 0;
  if (!emul_queue_empty(&x->out))
    return X_DRAIN_FABRIC;  /* frames owed to the ring: the full drain pumps them */
  if (qp->state != RNICPI_QPS_RTS)
    return 0;  /* frames move only in RTS */
  if (g_atomic_int_get(&x->in_whole))
    return X_DRAIN_FABRIC;  /* a message assembled whole: the full drain executes it */
  int s = 1 - x->side;
  const uint8_t *data = ring_data(x, s);
  uint64_t head = x->rx_head;
  uint64_t budget = head + X_RING_SIZE;  /* one lap at most, as the full drain */
  unsigned did = 0;
  x_frame_t f;
  uint64_t hdr;
  while (head < budget && x_frame_at(x, data, head, &f, &hdr)) {
    /* With nothing ahead of it (requests waiting, a pull running): a
     * message whole in one frame whose keys name no window or
     * fast-registered region (whose fields change under the fabric lock:
     * emul_ring_hot_local, emul_key_fixed), a Send (no Invalidate, no
     * attach) for the next receive of the QP's queue or SRQ, and in the
     * bounce mode an RDMA Write, an RDMA Read answered in one frame and a
     * Read Response for the Read at the head of the send queue; or a frame
     * of a message of several (x_assemble; once the message is whole, the
     * full drain executes it).  Its bytes are read in place, in two pieces
     * when the frame wraps the ring's end.  Anything else is the full
     * drain's. */
    if (f.frag_len > X_FRAG_MAX || !emul_queue_empty(&qp->xin) || qp->rcopying)
      return did | X_DRAIN_FABRIC;
    uint64_t pat = (head + hdr) & (X_RING_SIZE - 1);
    uint64_t na = MIN((uint64_t) f.frag_len, X_RING_SIZE - pat);
    x_span_t p = { .a = data + pat, .na = na, .b = data, .len = f.frag_len };
    gboolean done;
    if (x->in_busy || f.frag_len != f.total)
      done = x_assemble(x, &f, &p);  /* a fragment of a message of several frames */
    else if (f.flags != 0)
      done = FALSE;
    else switch (f.op) {
    case X_OP_SEND:
      done = f.byte_len == f.total && emul_ring_recv_short(qp, x, &f, &p, w);
      break;
    case X_OP_WRITE:
      done = emul_ring_write_short(qp, x, &f, &p);
      break;
    case X_OP_READ:
      done = emul_ring_read_short(qp, x, &f);
      break;
    case X_OP_READ_RESP:
      done = emul_ring_answer_short(qp, x, &f, &p, w);
      break;
    default:
      done = FALSE;
      break;
    }
    if (!done)
      return did | X_DRAIN_FABRIC;
    /* A message assembled whole is executed by the full drain. */
    gboolean whole = g_atomic_int_get(&x->in_whole);
    head += ROUND_LINE(hdr + f.frag_len);
    x_taken(x, head);
    __atomic_store_n(&x->rx_link, x->rx_link + 1, __ATOMIC_RELAXED);  /* read under the fabric lock */
    did = X_DRAIN_DID;
    if (whole)
      return did | X_DRAIN_FABRIC;
  }
  /* The completions the ACK word gives, when nothing waits to be issued
   * behind them and no disconnect waits for them (the full drain would
   * issue or close next: emul_ring_answered). */
  if (__atomic_load_n(&x->seg->ring[s].acked, __ATOMIC_ACQUIRE) != x->acked_seen) {
    const emul_swqe_t *last = (const emul_swqe_t *) qp->sq.q.tail;  /* issued ones are a prefix */
    if (qp->closing || qp->xcopying || (last != NULL && !last->issued))
      return did | X_DRAIN_FABRIC;
    if (emul_comp_run(qp, NULL, w))
      did = X_DRAIN_DID;
  }
  return did;
}
