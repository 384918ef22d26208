/*
 * vp/emul requester across processes: the send queue's WRs issued in
 * order into the ring, one-sided RDMA Write and Read by this process into
 * the peer's memory (cross-memory attach, or a region of the peer mapped
 * here: emul_mapped.c), and the peer's answers (ACK and READ_RESP
 * frames) decoded into packets for the completer (emul_comp_run, which
 * takes its ACK word too).  Design: emul_ring.h.
 *
 * Rules, the same as in-process (emul_exec.c), with how they are kept here:
 * - local key, domain, bounds, rights: checked when a WR is issued;
 *   failure: LOC_PROT_ERR, QP_FATAL, both sides BROKEN;
 * - remote ones, for one-sided RDMA by attach: checked here against the
 *   target's exported copy of its table (emul_export.c), exactly as the
 *   target would; failure: REM_ACCESS_ERR here, the responder gets
 *   RNICPI_ASYNC_QP_ACCESS_ERR, both BROKEN, no byte moved;
 * - RC ordering: a one-sided RDMA runs only when no earlier request is
 *   still unanswered;
 * - ORD: no more Reads and atomics issued than the negotiated ORD before
 *   their answers; the target's IRD is read in the connection segment
 *   before a one-sided Read;
 * - graceful disconnect (iWARP): the DISC goes once every outstanding
 *   request is answered (qp->closing);
 * - flush exactly once: a WR stays in qp->sq until its answer (ACK,
 *   READ_RESP, or BREAK naming its seq) or the flush, whichever is first
 *   (out of it only while its answer's copy runs: Long copies);
 *   answers for a closed connection cannot arrive (its ring is unmapped).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emul_ring.h"
#include "emul_xport.h"

/* ---- cross-memory attach ---- */

/* Long copies.  A copy into or out of the peer's memory by cross-memory
 * attach, whatever its length (a system call), and a memcpy of
 * EMUL_COPY_UNLOCKED bytes or more into a region of the peer mapped here,
 * run with the fabric lock let go: their checks were made under the lock,
 * the QP is marked (qp->xcopying) and counted (emul_fabric.xcopies).
 * Meanwhile a post on the QP queues behind it (emul_req_run issues nothing,
 * the latency path steps aside), and what would change the QP's state or
 * free it waits (emul_qp_wait_copy): while it waits, no new copy of that
 * QP lets the lock go, and every other QP's still do.  A region leaving
 * the table waits for the copies that hold it (emul_mr_release), and no
 * other; a fork waits for every copy, and none lets the lock go meanwhile
 * (emul_wait_all_copies).  A teardown meanwhile (the peer's BREAK, its
 * death) flushes the receive queue and leaves the send queue to the
 * copier, which completes its request flushed, then the rest, in order
 * (the bytes may land until the copy ends, never after the completion).
 * The copier holds a reference to the connection, which keeps its
 * mappings: they are unmapped with the last one (emul_ring_conn_unref),
 * and one to each region of this process it copies into or out of
 * (emul_ring_copy_hold: its list, a Send's receive, a bounce-mode Write's
 * target, a Read's sink), put before it takes the lock back.
 * Whoever copies holds nothing else: the thread that posts, or the
 * thread that drained the ring once its drain is over.  A drain keeps the
 * ring's position (its frames are read in place) for as long as it holds
 * the lock, so a long copy a drain finds (an answer let the request
 * behind it go, a Send to pull) is left to the drainer (XR_OWED,
 * x->issue_owed) and made after the drain (emul_ring_issue_owed), with
 * the locks let go: the progress thread's drain and an application
 * thread's in its poll of a CQ alike, so that no system call runs under
 * the fabric lock and the process's other connections go on meanwhile.
 * The bounce mode's Read Response of EMUL_COPY_UNLOCKED bytes or more,
 * assembled from its frames, is scattered into the sink the same way
 * (emul_comp_run): a drain queues it (qp->xans), and the answers after it
 * queue behind it, for its drainer; its Read is out of the send queue
 * while the copy runs, as a posted request's is.  A sink of windows is
 * translated under the lock before such a copy, and the copy lands where
 * the windows pointed then, as in-process (emul_link.c, "Long copies"): a
 * bind or invalidation on another QP meanwhile moves the window for the
 * requests after it, the region the copy writes stays registered until it
 * ends (its reference), and a Read with Invalidate kills its key after
 * the copy, under the lock (a key changed meanwhile: MEM_MGT_ERR). */
gboolean
emul_ring_copy_unlocks(const emul_qp_t *qp, uint64_t len, gboolean attach)
{
  return (attach || len >= EMUL_COPY_UNLOCKED) && emul_fabric.xcopy_waiters == 0 &&
         qp->copy_waiters == 0;
}

gboolean
emul_ring_copy_owed(emul_xconn_t *x, gboolean draining, gboolean *unlock)
{
  if (!*unlock || !draining)
    return FALSE;
  x->issue_owed = TRUE;  /* the drainer makes it after its drain */
  return TRUE;
}

emul_xconn_t *
emul_ring_copy_begin(emul_qp_t *qp, gboolean *mark)
{
  emul_xconn_t *x = qp->x;
  g_atomic_int_inc(&x->ref);  /* and with it the mappings the copy may use */
  *mark = TRUE;
  emul_fabric.xcopies++;
  emul_link_drop(qp->link);  /* its latency posts step aside meanwhile (qp->xcopying) */
  emul_fabric_unlock();
  return x;
}

void
emul_ring_copy_end(emul_qp_t *qp, emul_xconn_t *x, gboolean *mark)
{
  int err = errno;
  emul_lock_data_path();
  /* The same link: a reset or a destroy, which change or free it, waits
   * for the copy (emul_qp_wait_copy). */
  emul_link_take(qp);
  emul_fabric.xcopies--;
  *mark = FALSE;
  emul_ring_conn_unref(x);
  errno = err;
}

gboolean
emul_ring_copy_hold(emul_qp_t *qp, emul_hold_t *h, const rnicpi_sge_t *s, uint32_t n)
{
  h->n = 0;
  if (emul_hold_sges(h, emul_pers_of_qp(qp), s, n))
    return TRUE;
  emul_hold_drop(h);
  return FALSE;
}

/* Let the fabric lock go for a long copy by @qp (emul_ring_copy_unlocks). */
static emul_xconn_t *
x_copy_begin(emul_qp_t *qp)
{
  qp->xcopy_flushed = FALSE;
  return emul_ring_copy_begin(qp, &qp->xcopying);
}

/* Take the lock back after the copy x_copy_begin let it go for; errno is
 * kept.  TRUE: the QP was flushed meanwhile. */
static gboolean
x_copy_end(emul_qp_t *qp, emul_xconn_t *x)
{
  emul_ring_copy_end(qp, x, &qp->xcopying);
  return qp->xcopy_flushed;
}

/* A piece up to this long goes through the peer's memory file when there
 * is one (x->peer_mem): one system call that needs no look at the pin, and
 * cheaper than cross-memory attach up to some KiB (it copies through a
 * kernel page; measured on Linux 6.1 to 6.18: 1.8 against 2.2 us for 8 B,
 * 6.0 against 4.7 us for 64 KiB, 90 against 49 us for 1 MiB). */
#define X_MEM_MAX (16u << 10)

/* One piece through the memory file @mem at the peer's address @at: its
 * bytes, or -1 with errno EFAULT (the peer has nothing mapped there, as
 * cross-memory attach says it) or ESRCH (the process exited: the file
 * reads and writes nothing then). */
static ssize_t
x_mem_copy(int mem, gboolean to_peer, const struct iovec *a, int na, uint64_t at)
{
  ssize_t k = to_peer ? pwritev(mem, a, na, (off_t) at) : preadv(mem, a, na, (off_t) at);
  if (k == 0) {
    errno = ESRCH;
    return -1;
  }
  if (k < 0 && errno == EIO)
    errno = EFAULT;
  return k;
}

/* Into the peer, the last byte goes in a local piece of its own, which
 * the kernel copies after the rest (rnicpi_place says why).  A short piece
 * goes through the peer's memory file @mem (or -1), the process's address
 * space itself; another by cross-memory attach, with the pin looked at
 * before each call into the peer and after each call out of it
 * (emul_ring_peer.c). */
gboolean
emul_ring_vm_copy(pid_t pid, int pidfd, int mem, gboolean to_peer, const struct iovec *l, int nl,
                  const struct iovec *r, int nr)
{
  int li = 0, ri = 0;
  size_t lo = 0, ro = 0;
  if (pidfd < 0) {
    errno = ESRCH;  /* never by a bare process ID */
    return FALSE;
  }
  while (li < nl && ri < nr) {
    size_t n = MIN(l[li].iov_len - lo, r[ri].iov_len - ro);
    if (n > 0) {
      struct iovec a[2] = { { (uint8_t *) l[li].iov_base + lo, n } };
      struct iovec b = { (uint8_t *) r[ri].iov_base + ro, n };
      int na = 1;
      if (to_peer && n > 1 && lo + n == l[li].iov_len && li == nl - 1) {
        a[0].iov_len = n - 1;
        a[1] = (struct iovec) { (uint8_t *) a[0].iov_base + n - 1, 1 };
        na = 2;
      }
      ssize_t k;
      if (mem >= 0 && n <= X_MEM_MAX) {
        k = x_mem_copy(mem, to_peer, a, na, (uint64_t) (uintptr_t) b.iov_base);
      } else {
        if (to_peer && !emul_ring_peer_alive(pidfd)) {
          errno = ESRCH;
          return FALSE;
        }
        k = to_peer ? process_vm_writev(pid, a, (unsigned long) na, &b, 1, 0)
                    : process_vm_readv(pid, a, 1, &b, 1, 0);
        if (k > 0 && !to_peer && !emul_ring_peer_alive(pidfd)) {
          errno = ESRCH;  /* what was read may be another process's */
          return FALSE;
        }
      }
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

int
emul_ring_sge_iov(const rnicpi_sge_t *s, uint32_t n, struct iovec *iov)
{
  int k = 0;
  for (uint32_t i = 0; i < n; i++)
    if (s[i].length > 0)
      iov[k++] = (struct iovec) { (void *) (uintptr_t) s[i].addr, s[i].length };
  return k;
}

/* x_hot_move's attach call: @len bytes between @local and the peer's
 * @remote (kept out of line: the mapped case is the one timed in ns). */
static G_GNUC_NO_INLINE gboolean
x_hot_attach(emul_xconn_t *x, gboolean write, uint8_t *local, uint64_t remote, uint64_t len)
{
  struct iovec l = { local, len }, r = { (void *) (uintptr_t) remote, len };
  return emul_ring_vm_copy(x->peer_pid, x->peer_pidfd, x->peer_mem, write, &l, 1, &r, 1);
}

/* The latency case of x_direct: one SGE (of a length > 0, shorter than a
 * long copy, which may let the lock go) into the region reached last
 * (x->hot), whose check still stands; the local SGE is checked in full.
 * The bytes move by memcpy into a mapped region, else, when @attach (the
 * caller holds the QP's link alone, emul_req_post), by one attach
 * call: the process's other connections go on meanwhile.  Under the fabric
 * lock an attach call is x_direct's, which lets that lock go for it
 * (Long copies).  FALSE, with nothing done, when it does not apply; FALSE
 * too when the attach call fails, and x_direct, which copies again,
 * reports it (a copy made twice lands the same bytes). */
static inline __attribute__((always_inline)) gboolean
x_hot_move(emul_qp_t *qp, emul_xconn_t *x, const rnicpi_send_wr_t *wr, gboolean attach,
           emul_work_t *w)
{
  gboolean write = wr->opcode == RNICPI_WR_RDMA_WRITE;
  uint32_t rneed = write ? RNICPI_ACCESS_REMOTE_WRITE : RNICPI_ACCESS_REMOTE_READ;
  uint64_t len, ra = wr->remote_addr;
  const x_hot_t *h = &x->hot;
  const rnicpi_sge_t *sg = wr->sg_list;
  if (!(wr->num_sge == 1 && h->valid && wr->rkey == h->rkey && h->map_gen == x->map_gen &&
        (h->base != NULL || (attach && x->cma_out)) &&
        (len = sg->length) > 0 && len < EMUL_COPY_UNLOCKED && (h->access & rneed) == rneed &&
        emul_range_holds(h->iova, h->length, ra, len) &&
        __atomic_load_n(&x->peer_mrs[h->index].seq, __ATOMIC_ACQUIRE) == h->seq &&
        __atomic_load_n(&x->seg->access[1 - x->side], __ATOMIC_ACQUIRE) == h->qp_access &&
        (write || __atomic_load_n(&x->seg->ird[1 - x->side], __ATOMIC_ACQUIRE) != 0) &&
        emul_ring_hot_local(qp, x, sg, write ? RNICPI_ACCESS_LOCAL_READ :
                                    emul_pers_local_need(emul_pers_of_qp(qp), wr->opcode))))
    return FALSE;
  uint8_t *local = (uint8_t *) (uintptr_t) sg->addr;
  if (G_LIKELY(h->base != NULL)) {
    uint8_t *remote = h->base + (ra - h->iova);
    emul_place(write ? remote : local, write ? local : remote, len);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* in place before the completion says so */
  } else if (!x_hot_attach(x, write, local, h->addr + (ra - h->iova), len)) {
    return FALSE;
  }
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) len, w);
  return TRUE;
}

/* Request @seq, @len bytes of @sg[@n], whole in one frame with the short
 * header (emul_ring_ring_push_short), its bell rung: a Send's common case.
 * FALSE, with nothing pushed, when the peer pulls its payload (attach) or
 * it does not fit. */
static inline __attribute__((always_inline)) gboolean
x_send_short(emul_xconn_t *x, uint64_t seq, const rnicpi_sge_t *sg, uint32_t n, uint64_t len)
{
  guint bell = 0;
  if ((x->peer_cma && len > X_INLINE_MAX) || x->dead ||
      !emul_ring_ring_push_short(x, seq, sg, n, len, &bell))
    return FALSE;
  if (bell)
    emul_ring_doorbell(x, bell);
  return TRUE;
}

gboolean
emul_ring_send_hot(emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  const rnicpi_sge_t *sg = wr->sg_list;
  if ((sg->length > 0 && !emul_ring_hot_local(qp, qp->x, sg, RNICPI_ACCESS_LOCAL_READ)) ||
      !x_send_short(qp->x, qp->next_seq, sg, 1, sg->length))
    return FALSE;
  emul_swqe_t *s = emul_swqe_keep(qp, wr);  /* after the frame is out */
  s->issued = TRUE;
  s->seq = qp->next_seq++;
  s->len = sg->length;
  return TRUE;
}

gboolean
emul_ring_place_hot(emul_qp_t *qp, const rnicpi_send_wr_t *wr, gboolean alone, emul_work_t *w)
{
  return (qp->x->cma_out || emul_ring_map_on) && x_hot_move(qp, qp->x, wr, alone, w);
}

/* The place a grant found: where the target lies here (mapped, a region
 * of the peer mapped here) or in the peer (addr, for an attach call), and
 * whether its copy lets the fabric lock go (Long copies). */
typedef struct x_grant {
  uint8_t *mapped;
  uint64_t addr;
  gboolean unlock;
} x_grant_t;

/* The grant: the peer's key wr->rkey for @len bytes at wr->remote_addr,
 * checked in its exported table exactly as the peer would
 * (emul_remote_range), with its IRD for a Read; the grant cache (x->hot)
 * set from it, which x_hot_move's fast case reads.  DONE: *@g says where
 * the bytes go.  Without attach (bounce mode) only a mapped region is
 * reached this way: anything else, failures included, is NOTDIRECT (the
 * ring's).  @draining: a long copy is OWED (Long copies). */
static xr_t
x_grant(emul_qp_t *qp, const rnicpi_send_wr_t *wr, uint64_t len, gboolean draining, x_grant_t *out,
        emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  gboolean cma = x->cma_out;
  gboolean write = wr->opcode == RNICPI_WR_RDMA_WRITE;
  uint32_t rneed = write ? RNICPI_ACCESS_REMOTE_WRITE : RNICPI_ACCESS_REMOTE_READ;
  uint64_t ra = wr->remote_addr;
  if (!write && __atomic_load_n(&x->seg->ird[1 - x->side], __ATOMIC_ACQUIRE) == 0) {
    if (!cma)
      return XR_NOTDIRECT;
    emul_req_fail_remote(qp, wr, EMUL_FAULT_OP, w);
    return XR_FAILED;
  }
  if (len == 0)
    return cma ? XR_DONE : XR_NOTDIRECT;
  x_mr_entry_t e = { 0 };
  uint32_t qp_access = __atomic_load_n(&x->seg->access[1 - x->side], __ATOMIC_ACQUIRE);
  uint32_t index = 0, tag = 0;
  gboolean found = emul_key_split(emul_pers_of_qp(qp), wr->rkey, &index, &tag) &&
                   emul_ring_mr_read(x->peer_mrs, index, &e) && e.key == tag;
  /* The peer's own rule (emul_remote_range) over its exported entry: a
   * narrow window answers only through the QP it is bound to. */
  emul_grant_t g = {
    .access = found && e.pd_id == x->peer_pd && (e.qpn == 0 || e.qpn == x->peer_qpn) ? e.access : 0,
    .qp_access = qp_access, .iova = e.iova, .length = e.length,
  };
  if (!found || !emul_grant_allows(&g, rneed, ra, len)) {
    if (!cma)
      return XR_NOTDIRECT;
    emul_req_fail_remote(qp, wr, emul_access_fault(wr->opcode), w);
    return XR_FAILED;
  }
  uint8_t *mapped = emul_ring_map_lookup(x, index, &e);
  if (mapped == NULL && !cma)
    return XR_NOTDIRECT;
  gboolean unlock = emul_ring_copy_unlocks(qp, len, mapped == NULL);
  if (emul_ring_copy_owed(x, draining, &unlock))
    return XR_OWED;
  x->hot = (x_hot_t) {
    .valid = TRUE, .rkey = wr->rkey, .index = index, .seq = e.seq, .qp_access = qp_access,
    .access = e.access & qp_access, .iova = e.iova, .length = e.length, .base = mapped,
    .addr = e.addr, .map_gen = x->map_gen,
  };
  *out = (x_grant_t) { mapped != NULL ? mapped + (ra - e.iova) : NULL, e.addr + (ra - e.iova), unlock };
  return XR_DONE;
}

/* The copy of @len bytes between @sg (checked) and the place grant @g
 * found: a memcpy into a mapped region, else an attach call; with the
 * fabric lock let go when g->unlock, holding the regions of @sg.  DONE, or
 * FAILED with the request completed (a teardown meanwhile, the region gone
 * in the peer, the peer gone). */
static xr_t
x_copy(emul_qp_t *qp, const rnicpi_send_wr_t *wr, const rnicpi_sge_t *sg, uint64_t len,
       const x_grant_t *g, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  gboolean write = wr->opcode == RNICPI_WR_RDMA_WRITE, ok = TRUE, flushed = FALSE;
  struct iovec l[32], r = { (void *) (uintptr_t) g->addr, len };
  int nl = g->mapped != NULL ? 0 : emul_ring_sge_iov(sg, wr->num_sge, l);
  pid_t pid = x->peer_pid;
  int pidfd = x->peer_pidfd, mem = x->peer_mem;  /* open while the copy holds the connection */
  emul_hold_t h;
  gboolean unlock = g->unlock && emul_ring_copy_hold(qp, &h, sg, wr->num_sge);
  emul_xconn_t *held = unlock ? x_copy_begin(qp) : NULL;
  if (g->mapped != NULL)
    emul_sg_copy(sg, wr->num_sge, g->mapped, write);
  else
    ok = emul_ring_vm_copy(pid, pidfd, mem, write, l, nl, &r, 1);
  __atomic_thread_fence(__ATOMIC_RELEASE); /* in place before the completion says so */
  if (unlock) {
    emul_hold_drop(&h);
    flushed = x_copy_end(qp, held);
  }
  if (flushed) {
    /* The connection broke meanwhile: a copy that ended whole moved
     * every byte (the peer may have seen them and closed; a Read with
     * Invalidate invalidated nothing: flushed). */
    if (ok && wr->opcode != RNICPI_WR_RDMA_READ_INV)
      emul_qp_copy_whole(qp, wr, (uint32_t) len, w);
    else
      emul_qp_copy_flushed(qp, wr, w);
    return XR_FAILED;
  }
  if (!ok) {
    /* EFAULT: the region went away under us (deregistered while in
     * use); anything else: the peer is gone. */
    if (errno == EFAULT) {
      emul_req_fail_remote(qp, wr, emul_access_fault(wr->opcode), w);
    } else {
      emul_complete_send(qp, wr, RNICPI_WC_WR_FLUSH_ERR, 0, w);
      emul_ring_teardown(qp, w, X_BREAK, 0, 0, NULL, NULL, NULL, 0);
    }
    return XR_FAILED;
  }
  return XR_DONE;
}

/* One-sided RDMA Write or Read by this process into the peer's memory:
 * the grant cache's fast case (x_hot_move), else the local rule, the grant
 * (x_grant) and the copy (x_copy).  Without attach anything the ring must
 * carry is XR_NOTDIRECT; @draining: a long copy is XR_OWED (Long copies). */
static xr_t
x_direct(emul_qp_t *qp, const rnicpi_send_wr_t *wr, gboolean draining, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  gboolean cma = x->cma_out;
  uint64_t len;
  rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
  if (emul_mw_post_relevant(wr)) {
    /* A read into windows or with invalidate: without attach, through the
     * ring (a failure of its own here must not leave it half done). */
    if (!cma)
      return XR_NOTDIRECT;
  } else if (x_hot_move(qp, x, wr, FALSE, w)) {
    return XR_DONE;
  }
  const rnicpi_sge_t *sg = emul_req_local(qp, wr, win, &len);
  if (sg == NULL) {
    if (!cma)
      return XR_NOTDIRECT;
    emul_req_fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
    return XR_FAILED;
  }
  x_grant_t g = { 0 };
  xr_t r = x_grant(qp, wr, len, draining, &g, w);
  if (r == XR_DONE && len > 0)
    r = x_copy(qp, wr, sg, len, &g, w);
  if (r != XR_DONE)
    return r;
  if (!emul_read_inv_done(qp, wr)) {
    emul_req_fail_local(qp, wr, RNICPI_WC_MEM_MGT_ERR, w);
    return XR_FAILED;
  }
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) len, w);
  return XR_DONE;
}

/* ---- issuing, in order, and the answers ---- */

static gboolean
x_is_rdma(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_RDMA_WRITE || op == RNICPI_WR_RDMA_READ || op == RNICPI_WR_RDMA_READ_INV;
}

/* Every RDMA Write and Read is one-sided (x_direct) under attach. */
static gboolean
x_is_direct(emul_xconn_t *x, rnicpi_wr_opcode_t op)
{
  return x->cma_out && x_is_rdma(op);
}

/* Without attach, one to a region mapped here may be. */
static gboolean
x_may_map(emul_xconn_t *x, rnicpi_wr_opcode_t op)
{
  return !x->cma_out && emul_ring_map_on && x_is_rdma(op);
}

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

/* The ring's requester ops (emul_xport_ops_t; emul_xport_ring in
 * emul_ring_resp.c).  Issue while the connection stands, and, while a
 * copy runs, only behind the Read whose answer lands (Long copies). */
gboolean
emul_ring_req_ready(const emul_qp_t *qp)
{
  return qp->x != NULL && (!qp->xcopying || qp->xcopy_answered != NULL);
}

/* Under attach every RDMA Write and Read is made here, one-sided
 * (x_direct), once every earlier request is answered (@behind: one is
 * not, it waits); without attach one to a region mapped here may be, when
 * nothing is ahead of it, else it goes through the ring.  Out of the
 * queue while it runs, as a posted one is: a copy that lets the lock go,
 * and a teardown meanwhile, leave the rest of the queue to the copier
 * (Long copies). */
emul_exec_t
emul_ring_place(emul_qp_t *qp, emul_swqe_t *s, gboolean behind, gboolean draining, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  rnicpi_wr_opcode_t op = s->wr.opcode;
  if (!x_is_direct(x, op) && !(x_may_map(x, op) && !behind))
    return EMUL_EXEC_NOT;
  if (behind)
    return EMUL_EXEC_BLOCKED;  /* behind a request the peer has not answered */
  emul_wq_pop(&qp->sq);
  xr_t r = x_direct(qp, &s->wr, draining, w);
  if (r == XR_OWED || r == XR_NOTDIRECT)
    emul_wq_push_head(&qp->sq, s);  /* nothing done */
  else
    emul_wq_put(&qp->sq, s);
  return (emul_exec_t) r;
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
  if (wr->opcode != RNICPI_WR_SEND || !x_send_short(x, pkt->seq, wr->sg_list, wr->num_sge, pkt->len)) {
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

