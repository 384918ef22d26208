/*
 * vp/emul's payload paths across processes: one-sided RDMA Write and Read
 * by this process into the peer's memory (the ring's place op, from
 * emul_req_run), by cross-memory attach or into a region of the peer
 * mapped here, and the fast case of a post (emul_ring_hot); the long
 * copies that let the fabric lock go; the peer process pinned, which
 * attach calls go through; the peer's regions mapped here.  Design:
 * emul_ring.h.
 *
 * Rules, the same as in process, with how they are kept here:
 * - remote key, domain, bounds, rights: checked (x_grant) against the
 *   target's exported copy of its table (emul_export.c), exactly as the
 *   target would; failure: REM_ACCESS_ERR here, the responder gets
 *   RNICPI_ASYNC_QP_ACCESS_ERR, both BROKEN, no byte moved;
 * - RC ordering: a one-sided RDMA runs only when no earlier request is
 *   still unanswered;
 * - the target's IRD is read in the connection segment before a
 *   one-sided Read.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
 * (the peer process, below). */
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
 * caller holds the QP's link alone, emul_ring_hot), by one attach
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

/* The fast case's Send: one SGE, sent whole with the short header when
 * the local SGE passes; the entry kept for its completion is made after
 * the frame is out. */
static inline __attribute__((always_inline)) gboolean
x_hot_send(emul_qp_t *qp, emul_xconn_t *x, const rnicpi_send_wr_t *wr)
{
  const rnicpi_sge_t *sg = wr->sg_list;
  if ((sg->length > 0 && !emul_ring_hot_local(qp, x, sg, RNICPI_ACCESS_LOCAL_READ)) ||
      !emul_ring_send_short(x, qp->next_seq, sg, 1, sg->length))
    return FALSE;
  emul_swqe_t *s = emul_swqe_keep(qp, wr);
  s->issued = TRUE;
  s->seq = qp->next_seq++;
  s->len = sg->length;
  return TRUE;
}

gboolean
emul_ring_hot(emul_qp_t *qp, const rnicpi_send_wr_t *wr, gboolean alone, emul_work_t *w)
{
  emul_xconn_t *x = qp->x;
  if (x == NULL || qp->state != RNICPI_QPS_RTS || qp->closing || qp->xcopying ||
      qp->sq.q.len >= qp->attr.max_send_wr)
    return FALSE;
  if (wr->opcode == RNICPI_WR_SEND)
    return emul_req_next(qp, wr) && x_hot_send(qp, x, wr);
  return emul_wq_empty(&qp->sq) && (wr->opcode == RNICPI_WR_RDMA_WRITE || qp->ord > 0) &&
         (x->cma_out || emul_ring_map_on) && x_hot_move(qp, x, wr, alone, w);
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
  emul_xconn_t *held = NULL;
  if (unlock) {
    qp->xcopy_flushed = FALSE;  /* a teardown meanwhile sets it */
    held = emul_ring_copy_begin(qp, &qp->xcopying);
  }
  if (g->mapped != NULL)
    emul_sg_copy(sg, wr->num_sge, g->mapped, write);
  else
    ok = emul_ring_vm_copy(pid, pidfd, mem, write, l, nl, &r, 1);
  __atomic_thread_fence(__ATOMIC_RELEASE); /* in place before the completion says so */
  if (unlock) {
    emul_hold_drop(&h);
    emul_ring_copy_end(qp, held, &qp->xcopying);  /* errno kept */
    flushed = qp->xcopy_flushed;
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

/* ---- the requester's place op ---- */

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
  rnicpi_wr_opcode_t op = s->wr.opcode;
  if ((op != RNICPI_WR_RDMA_WRITE && op != RNICPI_WR_RDMA_READ && op != RNICPI_WR_RDMA_READ_INV) ||
      (!qp->x->cma_out && (!emul_ring_map_on || behind)))
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

/* ---- the peer process ---- */

/* The peer pinned (design: emul_ring.h, "Payload"; emul_ring_cm.c,
 * "Trust").  The kernel names the peer by a process ID (SO_PEERCRED), and
 * cross-memory attach (process_vm_readv/writev) takes one; but a process ID is reused
 * once its process exits and is reaped, and a connection's socket outlives
 * its process when another one holds it (a child that inherited it).  So
 * the peer is pinned by a pidfd from the moment its identity is known (the
 * socket's accept or connect), before the proof of attach is read
 * (x_probe): a pidfd opened before that read and not signalled after it
 * names the process the proof came from.  Then:
 * - a short copy goes through the peer's /proc/PID/mem, opened before the
 *   proof was read and so the pinned process's: that file holds the
 *   process's address space itself, not its ID, and reads and writes
 *   nothing once the process exited (one system call, no look at the pin);
 * - no other attach call is made with a pidfd that signalled the process's exit:
 *   it is looked at just before each call into the peer (a Write) and just
 *   after each call out of it (a Read, whose bytes are then thrown away),
 *   so what a call touched is the pinned process's (a write is left the
 *   window of one system call's entry, in which the process would have to
 *   exit, be reaped and its ID be given out again);
 * - the progress thread watches the pidfd: the pinned process's exit ends
 *   the connection as its death does (emul_ring_peer_died), whoever still
 *   holds the socket;
 * - without a pidfd (a kernel before 5.3, or a sandbox that forbids it)
 *   this process never attaches to that peer: its payloads go through the
 *   bounce ring, and the peer gets no proof from it.  A bare process ID is
 *   never used. */

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  /* Linux 6.5 */
#endif

int
emul_ring_peer_pin(int sock, pid_t pid)
{
  int fd = -1;
  socklen_t len = sizeof(fd);
  /* The socket's own peer (Linux 6.5): no window in which the ID could
   * have gone to another process since the peer connected. */
  if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0)
    return fd;
  /* An older kernel: the ID as SO_PEERCRED gave it.  A peer already gone
   * (ESRCH and the like) is not looked up again by its number. */
  if (errno != ENOPROTOOPT && errno != EINVAL)
    return -1;
  if (pid <= 0) {
    errno = ESRCH;
    return -1;
  }
#ifdef SYS_pidfd_open
  return (int) syscall(SYS_pidfd_open, pid, 0);
#else
  errno = ENOSYS;
  return -1;
#endif
}

int
emul_ring_peer_mem_open(pid_t pid)
{
  char path[32];
  g_snprintf(path, sizeof(path), "/proc/%d/mem", (int) pid);
  return open(path, O_RDWR | O_CLOEXEC);
}

gboolean
emul_ring_peer_alive(int pidfd)
{
  if (pidfd < 0)
    return FALSE;
  struct pollfd p = { .fd = pidfd, .events = POLLIN };
  int n;
  while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR)
    ;
  return n == 0;  /* readable: the process exited */
}

/* The progress thread, when the pinned process exited: the connection ends
 * as at the peer's death (its socket's EOF), the frames it published
 * before taken first. */
static gboolean
x_peer_exited(gint fd, GIOCondition cond, gpointer data)
{
  emul_xconn_t *x = data;  /* the watch's reference keeps it */
  (void) fd;
  (void) cond;
  emul_work_t w;
  rnicpi_notify_batch_init(&w);
  if (emul_ring_enter() && !x->dead) {
    g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: process %d exited while its connection's socket stays "
          "open (another process holds it): the connection ends as at its death", (int) x->peer_pid);
    emul_link_t *l = x->qp != NULL ? emul_link_take(x->qp) : NULL;
    if (!x->dead && x->qp != NULL && x->seg != NULL)
      emul_ring_drain(x, FALSE, &w);
    if (!x->dead)
      emul_ring_peer_died(x, &w);
    emul_link_drop(l);
  }
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return G_SOURCE_REMOVE;
}

void
emul_ring_peer_watch_new(emul_xconn_t *x)
{
  if (x->peer_pidfd < 0)
    return;
  g_atomic_int_inc(&x->ref);  /* the watch's */
  x->pid_src = emul_ring_watch_new(x->peer_pidfd, G_IO_IN, x_peer_exited, x,
                                   (GDestroyNotify) emul_ring_conn_unref);
}

/* ---- the peer's regions mapped here ---- */

/* The requester's side (emul_mapped.c: the exporter's).  Each connection
 * keeps a small table of the peer's regions it asked for, by index; an
 * entry is used only while the peer's exported table still names the same
 * key, address and length (a region deregistered and registered again is
 * asked for again).  The key, domain, bounds and rights are still checked
 * in the exported table before every access (x_grant), as for attach. */

#define X_MAP_SLOTS 64u

typedef enum { XM_EMPTY, XM_ASKED, XM_MAPPED, XM_REFUSED } x_map_state_t;

struct x_map {
  x_map_state_t state;
  uint32_t index, key;
  uint64_t addr, len;     /* of the region, as the exported table says */
  uint8_t *base;          /* where addr is mapped here */
  void *m;
  size_t mlen;
};

static void
x_map_clear(x_map_t *s)
{
  if (s->state == XM_MAPPED)
    munmap(s->m, s->mlen);
  memset(s, 0, sizeof(*s));
}

void
emul_ring_maps_free(emul_xconn_t *x)
{
  if (x->maps == NULL)
    return;
  for (guint i = 0; i < X_MAP_SLOTS; i++)
    x_map_clear(&x->maps[i]);
  x->map_gen++;
  g_free(x->maps);
  x->maps = NULL;
}

uint8_t *
emul_ring_map_lookup(emul_xconn_t *x, uint32_t index, const x_mr_entry_t *e)
{
  if (x->maps == NULL) {
    if (!emul_ring_map_on)
      return NULL;
    x->maps = g_new0(x_map_t, X_MAP_SLOTS);
  }
  gint lost = g_atomic_int_get(&x->map_lost);
  if (G_UNLIKELY(lost != 0) && g_atomic_int_compare_and_exchange(&x->map_lost, lost, 0)) {
    x_map_t *q = &x->maps[(uint32_t) (lost - 1) % X_MAP_SLOTS];
    if (q->state == XM_ASKED && q->index == (uint32_t) (lost - 1))
      q->state = XM_EMPTY;  /* the request was not sent: asked again below */
  }
  x_map_t *s = &x->maps[index % X_MAP_SLOTS];
  if (s->state != XM_EMPTY && s->index == index && s->key == e->key && s->addr == e->addr &&
      s->len == e->length) {
    return s->state == XM_MAPPED ? s->base : NULL;
  }
  x_map_clear(s);
  x->map_gen++;
  s->state = XM_ASKED;
  s->index = index;
  s->key = e->key;
  s->addr = e->addr;
  s->len = e->length;
  x_msg_t m = { .type = X_MAP_REQ, .mr_index = index, .mr_key = e->key };
  emul_ring_send_msg(x, &m, NULL, 0, 0);  /* not sent: asked again (x->map_lost) */
  return NULL;
}

/* The peer's answer: taken when the slot still waits for it. */
gboolean
emul_ring_on_map_rep(emul_xconn_t *x, const x_msg_t *m, int fd, emul_map_io_t *io)
{
  if (x->maps == NULL)
    return FALSE;
  x_map_t *s = &x->maps[m->mr_index % X_MAP_SLOTS];
  if (s->state != XM_ASKED || s->index != m->mr_index || s->key != m->mr_key)
    return FALSE;
  if (fd < 0 || m->mr_addr != s->addr || m->mr_len != s->len) {
    s->state = XM_REFUSED;
    return FALSE;
  }
  *io = (emul_map_io_t) { .type = X_MAP_REP, .index = m->mr_index, .key = m->mr_key,
                          .addr = m->mr_addr, .len = m->mr_len, .file_off = m->file_off, .fd = fd };
  return TRUE;
}

/* Map the answer's pages if the file can hold the region for good (sealed,
 * long enough), then put them in the slot if it still waits for them. */
void
emul_ring_map_take(emul_xconn_t *x, emul_map_io_t *io)
{
  long page = sysconf(_SC_PAGESIZE);
  uint64_t floor = io->file_off & ~(uint64_t) (page - 1);
  struct stat st;
  int seals = fcntl(io->fd, F_GET_SEALS);
  void *p = MAP_FAILED;
  size_t mlen = 0;
  if (seals >= 0 && (seals & F_SEAL_SHRINK) && fstat(io->fd, &st) == 0 && st.st_size >= 0 &&
      io->file_off <= (uint64_t) st.st_size && io->len <= (uint64_t) st.st_size - io->file_off &&
      io->len <= SIZE_MAX / 2) {
    mlen = (size_t) (io->file_off - floor + io->len);
    p = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, io->fd, (off_t) floor);
    if (p == MAP_FAILED)
      g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: cannot map region %u of process %d (%zu bytes): %s",
            io->index, (int) x->peer_pid, mlen, g_strerror(errno));
  }
  close(io->fd);
  io->fd = -1;
  gboolean kept = FALSE;
  emul_ring_progress_lock();
  emul_link_t *l = !x->dead && x->qp != NULL ? emul_link_take(x->qp) : NULL;
  x_map_t *s = !x->dead && x->maps != NULL ? &x->maps[io->index % X_MAP_SLOTS] : NULL;
  if (s != NULL && s->state == XM_ASKED && s->index == io->index && s->key == io->key &&
      s->addr == io->addr && s->len == io->len) {
    s->state = XM_REFUSED;
    if (p != MAP_FAILED) {
      s->m = p;
      s->mlen = mlen;
      s->base = (uint8_t *) p + (io->file_off - floor);
      s->state = XM_MAPPED;
      x->map_gen++;  /* a request the latency path sends by attach meanwhile (x->hot) now maps */
      kept = TRUE;
    }
  }
  emul_link_drop(l);
  emul_fabric_unlock();
  if (!kept && p != MAP_FAILED)
    munmap(p, mlen);
}
