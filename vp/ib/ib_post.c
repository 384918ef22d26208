/*
 * vp/ib posting: post_send (its one-segment short path, the faults found
 * at post, siw's short splits and an RDMA Read in pieces), post_recv and
 * the SRQ's post_srq_recv.  Each request is written into its queue's
 * shadow (ib_comp.c) before the device sees it, and each local segment is
 * checked against its region first (map_sges).
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ib.h"

/* ---- the data path -------------------------------------------------------- */

static rnicpi_wc_opcode_t
wc_opcode_of(rnicpi_wr_opcode_t op)
{
  switch (op) {
  case RNICPI_WR_RDMA_WRITE:
  case RNICPI_WR_RDMA_WRITE_IMM: return RNICPI_WC_RDMA_WRITE;
  case RNICPI_WR_RDMA_READ:
  case RNICPI_WR_RDMA_READ_INV: return RNICPI_WC_RDMA_READ;
  case RNICPI_WR_ATOMIC_CMP_SWP: return RNICPI_WC_CMP_SWP;
  case RNICPI_WR_ATOMIC_FETCH_ADD: return RNICPI_WC_FETCH_ADD;
  case RNICPI_WR_BIND_MW: return RNICPI_WC_BIND_MW;
  case RNICPI_WR_LOCAL_INV: return RNICPI_WC_LOCAL_INV;
  case RNICPI_WR_FAST_REG: return RNICPI_WC_FAST_REG;
  default: return RNICPI_WC_SEND;
  }
}

/* Local segments, mapped for the device.  Verbs reads a segment's
 * address in its region's own address space (its iova: 0 for a
 * zero-based region), RNIC-PI gives our virtual address; and devices
 * report a segment outside its region in their own ways (rxe: a
 * LOC_QP_OP_ERR as soon as the packet is built, flushing the requests
 * before it), where RNIC-PI promises a local protection error in the
 * request's turn.  So each segment is looked up: it must lie inside a
 * live region of @pd that grants @need.  IB_SGE_LIMIT: more segments
 * than @max; IB_SGE_FAULT: one is outside (it is passed on as given). */
enum { IB_SGE_OK, IB_SGE_LIMIT, IB_SGE_FAULT };

/* What a segment needs of its region, from the region's fields. */
static inline gboolean
sge_fits(const rnicpi_sge_t *s, const rnicpi_pd_t *pd, uint32_t need, uint64_t lkey,
         const rnicpi_pd_t *mr_pd, uint64_t addr, uint64_t length, uint32_t asked)
{
  return s->lkey == lkey && mr_pd == pd && s->addr >= addr && s->length <= length &&
         s->addr - addr <= length - s->length && (asked & need) == need;
}

/* The region of this thread's last one-segment post, copied at
 * ib_mr_gen's value then: while no region of any device changed, a post
 * naming it again needs neither the table's lock nor its lookup.  A
 * region deregistered meanwhile is a race the table's lock does not
 * close either (it is let go before the device sees the request). */
typedef struct {
  const ib_dev_t *dev;
  guint64 gen;
  uint64_t lkey;
  const rnicpi_pd_t *pd;
  uint64_t addr, length, iova;
  uint32_t asked;
} mr_memo_t;
static __thread mr_memo_t mr_memo __attribute__((tls_model("initial-exec")));

/* map_sges for one segment in the region of this thread's last
 * one-segment post (mr_memo): TRUE with @out set, FALSE having changed
 * nothing when the memo does not cover it. */
static inline gboolean
map_sge_memo(const ib_dev_t *dev, const rnicpi_pd_t *pd, const rnicpi_sge_t *in, uint32_t need,
             struct ibv_sge *out)
{
  if (mr_memo.dev != dev || mr_memo.lkey != in->lkey ||
      mr_memo.gen != __atomic_load_n(&ib_mr_gen, __ATOMIC_ACQUIRE) ||
      !sge_fits(in, pd, need, mr_memo.lkey, mr_memo.pd, mr_memo.addr, mr_memo.length, mr_memo.asked))
    return FALSE;
  out->addr = in->addr - mr_memo.addr + mr_memo.iova;
  out->length = in->length;
  out->lkey = (uint32_t) in->lkey;
  return TRUE;
}

static int
map_sges(ib_dev_t *dev, const rnicpi_pd_t *pd, const rnicpi_sge_t *in, uint32_t n,
         struct ibv_sge *out, uint32_t max, uint32_t need, uint32_t *len)
{
  if (n > max)
    return IB_SGE_LIMIT;
  if (n == 1 && map_sge_memo(dev, pd, &in[0], need, &out[0])) {
    *len = in[0].length;
    return IB_SGE_OK;
  }
  int r = IB_SGE_OK;
  uint32_t total = 0;
  g_rw_lock_reader_lock(&dev->mr_lock);
  for (uint32_t i = 0; i < n; i++) {
    out[i].addr = in[i].addr;
    out[i].length = in[i].length;
    out[i].lkey = (uint32_t) in[i].lkey;
    total += in[i].length;
    const ib_mr_t *mr = g_hash_table_lookup(dev->mrs, GUINT_TO_POINTER((uint32_t) in[i].lkey));
    if (mr != NULL && sge_fits(&in[i], pd, need, mr->base.lkey, mr->base.pd, mr->addr, mr->length,
                               mr->asked)) {
      out[i].addr = in[i].addr - mr->addr + mr->iova;
      if (n == 1)
        mr_memo = (mr_memo_t) { dev, __atomic_load_n(&ib_mr_gen, __ATOMIC_RELAXED), mr->base.lkey,
                                mr->base.pd, mr->addr, mr->length, mr->iova, mr->asked };
    } else if (in[i].length > 0) {
      r = IB_SGE_FAULT;
    }
  }
  g_rw_lock_reader_unlock(&dev->mr_lock);
  *len = total;
  return r;
}

/* A fault of the request that the device would not report as RNIC-PI
 * promises, found before the device sees it: the status it completes
 * with in its turn, and the fault's cause (0: none).  Verbs keys are 32
 * bits, so a key with an upper bit set names no region (the peer would
 * refuse it); rxe refuses a misaligned atomic at post time, where the
 * peer would answer it with a remote operation error. */
static uint8_t
post_fault(const rnicpi_send_wr_t *wr, int sges, uint8_t *cause)
{
  gboolean atomic = wr->opcode == RNICPI_WR_ATOMIC_CMP_SWP || wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD;
  gboolean remote = atomic || wr->opcode == RNICPI_WR_RDMA_WRITE ||
                    wr->opcode == RNICPI_WR_RDMA_WRITE_IMM || wr->opcode == RNICPI_WR_RDMA_READ;
  if (sges == IB_SGE_FAULT) {
    *cause = RNICPI_AE_LOCAL;
    return RNICPI_WC_LOC_PROT_ERR;
  }
  if (remote && wr->rkey > UINT32_MAX) {
    *cause = RNICPI_AE_REMOTE_ACCESS;
    return RNICPI_WC_REM_ACCESS_ERR;
  }
  if (atomic && (wr->remote_addr & 7) != 0) {
    *cause = RNICPI_AE_REMOTE;
    return RNICPI_WC_REM_OP_ERR;
  }
  return 0;
}

/* siw (6.1) copies a one-segment payload of at most IB_SIW_SHORT_TX
 * bytes that crosses a page boundary wrongly whenever its transmit thread
 * rather than the post sends it: siw_try_1seg() takes the bytes past the
 * boundary from the first page, reading past its end.  The data arrives
 * wrong, with a good CRC.  So the adapter never hands it one: a Send or
 * Write goes inline (copied at the post), or else gets its segment cut
 * at the boundary (two segments take siw's general path); a Read, whose
 * response the peer's siw sends from
 * the remote range, becomes two Reads, one on each side of the
 * boundary.  Where the bytes before the boundary end: 0 when the
 * payload need not be cut. */
static uint32_t
short_cut(uint64_t addr, uint64_t len)
{
  uint32_t before = 4096 - (uint32_t) (addr & 4095);
  return len > 1 && len <= IB_SIW_SHORT_TX && before < len ? before : 0;
}

/* Cut the segment @sge[0] at @cut: its first @cut bytes stay, the rest
 * goes to @sge[1]. */
static void
cut_sge(struct ibv_sge *sge, uint32_t cut)
{
  sge[1] = sge[0];
  sge[0].length = cut;
  sge[1].addr += cut;
  sge[1].length -= cut;
}

/* Cut @v's only segment at @cut into two segments. */
static void
short_split_sge(struct ibv_send_wr *v, struct ibv_sge *sge, uint32_t cut)
{
  cut_sge(sge, cut);
  v->num_sge = 2;
}

/* Make the Read @v of @n segments @sge (mapped, checked) the pieces the
 * device takes, in @piece and @psge, chained from @v: one Read per run of
 * segments that follow each other in one region (zero-length ones
 * skipped), each reading the next bytes of the remote range, as the
 * device takes one sink segment per Read (RFC 5040 6.1; siw's max_sge_rd
 * is 1); and on siw a short run across a page cut there (short_cut).
 * The first piece keeps the fence, the last the request's signal and
 * solicitation; the others complete only in error, under the same shadow
 * and wr_id, as a window's invalidation does (ib_mw.c): the request
 * completes once, when its last piece does, or with the first error.
 * Each piece takes an ORD credit; the device holds those beyond the ORD
 * until answers come.  Returns the number of pieces (1: @v as it was). */
static uint32_t
read_pieces(const ib_dev_t *dev, struct ibv_send_wr *v, const struct ibv_sge *sge, int n,
            struct ibv_send_wr piece[IB_READ_PIECES_MAX], struct ibv_sge psge[IB_READ_PIECES_MAX])
{
  /* The runs. */
  struct ibv_sge run[IB_READ_SPLIT_SGE];
  uint32_t nrun = 0;
  for (int i = 0; i < n; i++) {
    if (sge[i].length == 0)
      continue;
    struct ibv_sge *last = nrun > 0 ? &run[nrun - 1] : NULL;
    if (last != NULL && last->lkey == sge[i].lkey && last->addr + last->length == sge[i].addr &&
        (uint64_t) last->length + sge[i].length <= UINT32_MAX)
      last->length += sge[i].length;
    else if (nrun < G_N_ELEMENTS(run))
      run[nrun++] = sge[i];
    else
      return 1; /* more than the capability record offers: map_sges refused it */
  }
  if (nrun == 0) {
    v->num_sge = MIN(n, 1); /* a zero-length Read */
    return 1;
  }
  /* The pieces: each run, cut once at a page where siw needs it. */
  uint32_t np = 0;
  uint64_t raddr = v->wr.rdma.remote_addr;
  for (uint32_t r = 0; r < nrun; r++) {
    uint32_t cut = dev->short_split ? short_cut(raddr, run[r].length) : 0;
    for (int part = 0; part < (cut != 0 ? 2 : 1); part++) {
      psge[np] = run[r];
      if (cut != 0 && part == 0) {
        psge[np].length = cut;
      } else if (cut != 0) {
        psge[np].addr += cut;
        psge[np].length -= cut;
      }
      piece[np] = *v;
      piece[np].sg_list = &psge[np];
      piece[np].num_sge = 1;
      piece[np].wr.rdma.remote_addr = raddr;
      piece[np].send_flags &= ~(unsigned) (IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE);
      piece[np].next = NULL;
      if (np > 0)
        piece[np - 1].next = &piece[np];
      raddr += psge[np].length;
      np++;
    }
  }
  piece[0].send_flags |= v->send_flags & IBV_SEND_FENCE;
  piece[np - 1].send_flags |= v->send_flags & (IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
  *v = piece[0];
  return np;
}

/* The capabilities an opcode needs, every bit of them: without them
 * post_send refuses it with RNICPI_ENOTSUP (rnicpi.h) before the device's
 * library sees it, which answers in its own way (libsiw: -EINVAL, a
 * negative errno, for an atomic or immediate data).  A bind needs either
 * kind of window: ib_mw_check's. */
static const uint64_t op_needs[RNICPI_WR_OPCODE_COUNT] = {
  [RNICPI_WR_SEND_INV] = RNICPI_CAP_REMOTE_INVALIDATE,
  [RNICPI_WR_ATOMIC_CMP_SWP] = RNICPI_CAP_ATOMICS,
  [RNICPI_WR_ATOMIC_FETCH_ADD] = RNICPI_CAP_ATOMICS,
  [RNICPI_WR_LOCAL_INV] = RNICPI_CAP_LOCAL_INVALIDATE,
  [RNICPI_WR_FAST_REG] = RNICPI_CAP_FAST_REGISTER,
  [RNICPI_WR_RDMA_READ_INV] = RNICPI_CAP_READ_SINK_MW | RNICPI_CAP_LOCAL_INVALIDATE,
  [RNICPI_WR_IMM_DATA] = RNICPI_CAP_IMMEDIATE,
  [RNICPI_WR_RDMA_WRITE_IMM] = RNICPI_CAP_IMMEDIATE,
};

/* The common post: a Send, RDMA Write or RDMA Read of one good segment
 * on an RC queue pair in RTS, signaled or on a send CQ already watched,
 * which the device takes as it is (no split, no fault, nothing held back
 * before it).  ib_post_send's steps for that case alone, with the same
 * outcome, without testing for all the others: TRUE and the status in
 * @p st when it was that case, else FALSE having changed nothing, and
 * ib_post_send does it all. */
static inline gboolean
post_send_common(ib_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_status_t *st)
{
  rnicpi_wr_opcode_t op = wr->opcode;
  gboolean read = op == RNICPI_WR_RDMA_READ, write = op == RNICPI_WR_RDMA_WRITE;
  if ((op != RNICPI_WR_SEND && !write && !read) || qp->type != RNICPI_QPT_RC || wr->num_sge != 1 ||
      qp->dev->short_split || ((read || write) && wr->rkey > UINT32_MAX) || (read && qp->ord == 0) ||
      (!(wr->flags & RNICPI_WR_SIGNALED) && !__atomic_load_n(&qp->scq->watch_unsignaled, __ATOMIC_ACQUIRE)))
    return FALSE;
  uint32_t need = !read ? 0
                  : RNICPI_ACCESS_LOCAL_WRITE | ((qp->dev->caps.features & RNICPI_CAP_READ_SINK_REMOTE_WRITE)
                                                     ? RNICPI_ACCESS_REMOTE_WRITE : 0);
  struct ibv_sge sge;
  uint32_t len = wr->sg_list[0].length;
  if (!map_sge_memo(qp->dev, qp->base.pd, &wr->sg_list[0], need, &sge) &&
      map_sges(qp->dev, qp->base.pd, wr->sg_list, 1, &sge, 1, need, &len) != IB_SGE_OK)
    return FALSE;
  /* Every member a device reads for a Send, Write or Read on an RC queue
   * pair is set; the window-bind and TSO members are left alone (clearing
   * the whole request is a string store, the dearest part of it under an
   * emulated CPU). */
  struct ibv_send_wr v, *bad = NULL;
  v.next = NULL;
  v.imm_data = 0;
  v.wr.atomic.remote_addr = 0;
  v.wr.atomic.compare_add = 0;
  v.wr.atomic.swap = 0;
  v.wr.atomic.rkey = 0;
  v.qp_type.xrc.remote_srqn = 0;
  v.sg_list = &sge;
  v.num_sge = 1;
  v.send_flags = ((wr->flags & RNICPI_WR_SIGNALED) ? IBV_SEND_SIGNALED : 0) |
                 ((wr->flags & RNICPI_WR_SOLICITED) ? IBV_SEND_SOLICITED : 0) |
                 ((wr->flags & (RNICPI_WR_FENCE | RNICPI_WR_LOCAL_FENCE)) ? IBV_SEND_FENCE : 0);
  v.opcode = read ? IBV_WR_RDMA_READ : write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
  if (read || write) {
    v.wr.rdma.remote_addr = wr->remote_addr;
    v.wr.rdma.rkey = (uint32_t) wr->rkey;
  }
  /* Inline as ib_post_send decides it, from the process's own address. */
  if (!read && len > 0 && len <= qp->max_inline) {
    v.send_flags |= IBV_SEND_INLINE;
    sge.addr = wr->sg_list[0].addr;
  }
  rnicpi_spin_lock(&qp->sq_lock);
  if (qp->state != IB_QP_RTS || qp->held || qp->sq.tail - qp->sq.head >= qp->sq_max ||
      qp->sq_verbs + 1 > qp->sq_need) {
    rnicpi_spin_unlock(&qp->sq_lock);
    return FALSE;
  }
  /* The doorbell first, the shadow after it: every reader of the shadow
   * (a completion, the sweep, a flush) takes the queue's lock, held until
   * both are done, and the device starts on the request sooner. */
  uint64_t seq = qp->sq.tail;
  v.wr_id = ib_wrid(qp->serial, IB_KIND_SEND, seq);
  int err = ibv_post_send(qp->qp, &v, &bad);
  if (err < 0)
    err = -err; /* libsiw returns -errno (siw_post_send, rdma-core 44) */
  if (err == 0) {
    ib_shadow_t *s = wq_at(&qp->sq, seq);
    s->wr_id = wr->wr_id;
    s->opcode = (uint8_t) (read ? RNICPI_WC_RDMA_READ : write ? RNICPI_WC_RDMA_WRITE : RNICPI_WC_SEND);
    s->signaled = (wr->flags & RNICPI_WR_SIGNALED) != 0;
    s->len = len;
    s->rkey = 0;
    s->mw = NULL;
    s->done = 0;
    s->status = RNICPI_WC_SUCCESS;
    s->fail = 0;
    s->fail_cause = RNICPI_AE_UNSPECIFIED;
    s->given = 1;
    s->pieces = 1;
    qp->sq_verbs += 1;
    qp->sq.tail = seq + 1;
  }
  rnicpi_spin_unlock(&qp->sq_lock);
  *st = err == 0        ? RNICPI_OK
        : err == ENOMEM ? RNICPI_EFULL
        : err == EINVAL ? RNICPI_EINVAL
                        : ib_status_of_errno(err);
  return TRUE;
}

static rnicpi_status_t
ib_post_send(rnicpi_qp_t *q, const rnicpi_send_wr_t *wr)
{
  ib_qp_t *qp = to_ib_qp(q);
  rnicpi_status_t common;
  if (post_send_common(qp, wr, &common))
    return common;
  if ((unsigned) wr->opcode >= RNICPI_WR_OPCODE_COUNT ||
      (qp->dev->caps.features & op_needs[wr->opcode]) != op_needs[wr->opcode])
    return RNICPI_ENOTSUP;
  if (!(wr->flags & RNICPI_WR_SIGNALED) && qp->type == RNICPI_QPT_RC &&
      !__atomic_load_n(&qp->scq->watch_unsignaled, __ATOMIC_ACQUIRE) &&
      !__atomic_exchange_n(&qp->scq->watch_unsignaled, TRUE, __ATOMIC_ACQ_REL))
    ibv_req_notify_cq(qp->scq->cq, 0); /* the progress thread drains it from now on */
  /* ORD 0: no Read or atomic may ever be outstanding.  rxe would hold one
   * for ever (its requester waits for a credit that never comes) and siw
   * refuses it with EINVAL: say so here, as every provider does. */
  if (qp->type == RNICPI_QPT_RC && qp->ord == 0 &&
      (qp->state == IB_QP_RTS || qp->state == IB_QP_ACCEPTING) &&
      (wr->opcode == RNICPI_WR_RDMA_READ || wr->opcode == RNICPI_WR_RDMA_READ_INV ||
       wr->opcode == RNICPI_WR_ATOMIC_CMP_SWP || wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD))
    return RNICPI_ELIMIT;
  struct ibv_sge sge[32];
  struct ibv_send_wr v, *bad = NULL;
  memset(&v, 0, sizeof(v));
  uint32_t len = 0;
  /* What the request writes locally: a Read's sink (on iWARP also named
   * by an STag the peer writes to) and an atomic's result. */
  uint32_t need = 0;
  if (wr->opcode == RNICPI_WR_RDMA_READ || wr->opcode == RNICPI_WR_RDMA_READ_INV)
    need = RNICPI_ACCESS_LOCAL_WRITE |
           ((qp->dev->caps.features & RNICPI_CAP_READ_SINK_REMOTE_WRITE) ? RNICPI_ACCESS_REMOTE_WRITE : 0);
  else if (wr->opcode == RNICPI_WR_ATOMIC_CMP_SWP || wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD)
    need = RNICPI_ACCESS_LOCAL_WRITE;
  /* Each operation's own limit, as the consumer created the queue pair
   * (a datagram's is max_send_sge); an atomic has one segment. */
  uint32_t lim = qp->lim_send_sge;
  if (qp->type == RNICPI_QPT_RC && (wr->opcode == RNICPI_WR_RDMA_READ || wr->opcode == RNICPI_WR_RDMA_READ_INV))
    lim = qp->lim_read_sge;
  else if (qp->type == RNICPI_QPT_RC &&
           (wr->opcode == RNICPI_WR_RDMA_WRITE || wr->opcode == RNICPI_WR_RDMA_WRITE_IMM))
    lim = qp->lim_write_sge;
  else if (wr->opcode == RNICPI_WR_BIND_MW || wr->opcode == RNICPI_WR_LOCAL_INV ||
           wr->opcode == RNICPI_WR_FAST_REG)
    lim = qp->max_send_sge; /* no data segments: not the consumer's gather list */
  int sges = map_sges(qp->dev, qp->base.pd, wr->sg_list, wr->num_sge, sge,
                      MIN(MAX(lim, 1u), G_N_ELEMENTS(sge)), need, &len);
  if (sges == IB_SGE_LIMIT)
    return RNICPI_ELIMIT;
  v.sg_list = sge;
  v.num_sge = (int) wr->num_sge;
  v.send_flags = ((wr->flags & RNICPI_WR_SIGNALED) ? IBV_SEND_SIGNALED : 0) |
                 ((wr->flags & RNICPI_WR_SOLICITED) ? IBV_SEND_SOLICITED : 0) |
                 /* The verbs fence waits for the Reads and atomics before
                  * it to complete: a local fence too, whose source may be
                  * their sink. */
                 ((wr->flags & (RNICPI_WR_FENCE | RNICPI_WR_LOCAL_FENCE)) ? IBV_SEND_FENCE : 0);
  rnicpi_status_t st;
  gboolean mw_op = FALSE;
  if (qp->type == RNICPI_QPT_UD && (st = ib_ud_prepare(qp, wr, len, &v)) != RNICPI_OK)
    return st;
  switch (wr->opcode) {
  case RNICPI_WR_SEND:
    v.opcode = IBV_WR_SEND;
    break;
  case RNICPI_WR_BIND_MW:
  case RNICPI_WR_LOCAL_INV:
    if ((st = ib_mw_check(qp, wr)) != RNICPI_OK)
      return st;
    mw_op = TRUE;
    break;
  case RNICPI_WR_SEND_INV:
    /* Offered on iWARP devices only (fill_caps, doc/provider-ib.md);
     * elsewhere the opcode's capability refused it above. */
    v.opcode = IBV_WR_SEND_WITH_INV;
    v.invalidate_rkey = (uint32_t) wr->invalidate_rkey;
    /* libsiw (rdma-core 44, push_send_wqe) takes every key from
     * wr.rdma.rkey, and siw sends that as the Invalidate STag
     * (siw_qp_tx.c); other providers read invalidate_rkey alone. */
    v.wr.rdma.rkey = (uint32_t) wr->invalidate_rkey;
    break;
  case RNICPI_WR_RDMA_WRITE:
  case RNICPI_WR_RDMA_WRITE_IMM:
  case RNICPI_WR_RDMA_READ:
    v.opcode = wr->opcode == RNICPI_WR_RDMA_READ ? IBV_WR_RDMA_READ
               : wr->opcode == RNICPI_WR_RDMA_WRITE ? IBV_WR_RDMA_WRITE
                                                    : IBV_WR_RDMA_WRITE_WITH_IMM;
    v.wr.rdma.remote_addr = wr->remote_addr;
    v.wr.rdma.rkey = (uint32_t) wr->rkey;
    v.imm_data = htonl((uint32_t) wr->imm_data);
    break;
  case RNICPI_WR_IMM_DATA:
    v.opcode = IBV_WR_SEND_WITH_IMM;
    v.imm_data = htonl((uint32_t) wr->imm_data);
    break;
  case RNICPI_WR_ATOMIC_CMP_SWP:
  case RNICPI_WR_ATOMIC_FETCH_ADD:
    v.opcode = wr->opcode == RNICPI_WR_ATOMIC_CMP_SWP ? IBV_WR_ATOMIC_CMP_AND_SWP
                                                      : IBV_WR_ATOMIC_FETCH_AND_ADD;
    v.wr.atomic.remote_addr = wr->remote_addr;
    v.wr.atomic.rkey = (uint32_t) wr->rkey;
    v.wr.atomic.compare_add = wr->compare_add;
    v.wr.atomic.swap = wr->swap;
    break;
  default:
    return RNICPI_ENOTSUP;
  }
  if (qp->type == RNICPI_QPT_UD && wr->opcode != RNICPI_WR_SEND)
    return RNICPI_EINVAL; /* a UD queue pair takes Sends only */
  uint8_t cause = RNICPI_AE_UNSPECIFIED;
  /* A UD queue pair has no connection to break: its device reports. */
  uint8_t fail = qp->type == RNICPI_QPT_UD ? 0 : post_fault(wr, sges, &cause);
  /* Short Sends and Writes go inline (probe_inline), only once every
   * segment has passed map_sges, the check the device would have made
   * with the key (a UD queue pair's faults go to the device, so a bad
   * segment there is never inline).  The library copies the bytes from
   * the process's own addresses, not a zero-based region's.  Never a
   * Send with Invalidate: siw takes inline data for a Send or Write only
   * (siw_activate_tx_from_sq, siw_qp.c, 6.1), refuses the doorbell with
   * EINVAL and leaves the request at the head of its queue. */
  if (sges == IB_SGE_OK && fail == 0 && len > 0 && len <= qp->max_inline &&
      (wr->opcode == RNICPI_WR_SEND || wr->opcode == RNICPI_WR_IMM_DATA ||
       wr->opcode == RNICPI_WR_RDMA_WRITE || wr->opcode == RNICPI_WR_RDMA_WRITE_IMM)) {
    v.send_flags |= IBV_SEND_INLINE;
    for (uint32_t i = 0; i < wr->num_sge; i++)
      sge[i].addr = wr->sg_list[i].addr;
  }
  struct ibv_send_wr piece[IB_READ_PIECES_MAX];
  struct ibv_sge psge[IB_READ_PIECES_MAX];
  uint32_t pieces = 1, cut;
  if (fail == 0 && qp->type == RNICPI_QPT_RC && wr->opcode == RNICPI_WR_RDMA_READ &&
      (wr->num_sge > qp->dev->read_sge_dev || (qp->dev->short_split && wr->num_sge == 1))) {
    pieces = read_pieces(qp->dev, &v, sge, (int) wr->num_sge, piece, psge);
  } else if (qp->dev->short_split && fail == 0 && wr->num_sge == 1 && qp->type == RNICPI_QPT_RC &&
             !(v.send_flags & IBV_SEND_INLINE) &&
             (wr->opcode == RNICPI_WR_SEND || wr->opcode == RNICPI_WR_RDMA_WRITE ||
              wr->opcode == RNICPI_WR_SEND_INV)) {
    if ((cut = short_cut(wr->sg_list[0].addr, len)) != 0)
      short_split_sge(&v, sge, cut);
  }
  if (mw_op && (qp->dev->caps.features & RNICPI_CAP_MW_NARROW))
    pieces = 2; /* a bind of a bound narrow window: two (ib_mw.c) */

  rnicpi_spin_lock(&qp->sq_lock);
  if (qp->state == IB_QP_IDLE || qp->state == IB_QP_CONNECTING || qp->state == IB_QP_ACCEPTING) {
    rnicpi_spin_unlock(&qp->sq_lock);
    return RNICPI_ESTATE;
  }
  if (qp->sq.tail - qp->sq.head >= qp->sq_max) {
    rnicpi_spin_unlock(&qp->sq_lock);
    return RNICPI_EFULL;
  }
  /* Room in the verbs queue: short only where the device's limit capped
   * it below what the shadows' requests may take (ib_qp_create). */
  if (qp->state != IB_QP_ERROR && !qp->held && qp->sq_verbs + pieces > qp->sq_need) {
    rnicpi_spin_unlock(&qp->sq_lock);
    return RNICPI_EFULL;
  }
  uint64_t seq = qp->sq.tail;
  ib_shadow_t *s = wq_at(&qp->sq, seq);
  s->wr_id = wr->wr_id;
  s->opcode = (uint8_t) wc_opcode_of(wr->opcode);
  s->signaled = (wr->flags & RNICPI_WR_SIGNALED) != 0;
  s->len = mw_op ? 0 : len;
  s->rkey = wr->opcode == RNICPI_WR_LOCAL_INV ? wr->invalidate_rkey : 0;
  s->mw = NULL;
  s->done = 0;
  s->status = RNICPI_WC_SUCCESS;
  s->fail = 0;
  s->fail_cause = RNICPI_AE_UNSPECIFIED;
  gboolean error = qp->state == IB_QP_ERROR;
  /* Kept in the shadow: posted in ERROR (the sweep completes it), or
   * behind a fault still waiting for its turn (it will be flushed). */
  gboolean keep = error || qp->held;
  gboolean fault_now = FALSE, split_broke = FALSE;
  if (fail != 0 && !keep) {
    s->fail = fail;
    s->fail_cause = cause;
    s->signaled = 1; /* an error always completes */
    if (seq == qp->sq.head) {
      fault_now = keep = TRUE; /* nothing before it */
    } else {
      /* Its turn comes when the device completes what is before it: a
       * zero-length RDMA Write stands in for it (IBTA C9-88 and RFC 5040
       * check no key for it), and later sends wait in the shadow. */
      memset(&v, 0, sizeof(v));
      v.opcode = IBV_WR_RDMA_WRITE;
      v.send_flags = IBV_SEND_SIGNALED;
      qp->held = TRUE;
    }
  }
  s->given = !keep; /* given to the device */
  s->pieces = keep ? 0 : (uint8_t) (fail != 0 ? 1 : pieces);
  qp->sq_verbs += s->pieces;
  qp->sq.tail = seq + 1;
  int err = 0;
  if (!keep) {
    for (struct ibv_send_wr *w = &v; w != NULL; w = w->next)
      w->wr_id = ib_wrid(qp->serial, IB_KIND_SEND, seq); /* every piece (read_pieces) */
    err = mw_op && fail == 0 ? ib_mw_post(qp, wr, &v, s) : ibv_post_send(qp->qp, &v, &bad);
    if (err < 0)
      err = -err; /* libsiw returns -errno (siw_post_send, rdma-core 44) */
    if (err != 0 && bad != NULL && bad != &v) {
      /* Some pieces of a split Read went in, the rest not: the verbs
       * queue has room for all (ib_qp_create), so only a failed device
       * does this.  The request fails in its turn, with the queue pair. */
      g_warning("%s: QP %u took part of an RDMA Read split in %u (request %" G_GUINT64_FORMAT
                ") and refused the rest (%s): the queue pair is failed and the Read completes "
                "flushed; ibv_devinfo -d %s shows whether the device still answers",
                qp->dev->name, qp->base.qp_num, pieces, seq, g_strerror(err), qp->dev->name);
      err = 0;
      s->signaled = 1;
      s->given = 0;
      split_broke = TRUE;
    }
    if (err != 0) {
      qp->sq.tail = seq; /* not taken */
      qp->sq_verbs -= s->pieces;
      s->pieces = 0;
      if (fail != 0)
        qp->held = FALSE;
    }
  } else if (wr->opcode == RNICPI_WR_BIND_MW) {
    /* Never executed, but its key is the window's from now (rnicpi.h). */
    wr->bind.mw->rkey = ibv_inc_rkey((uint32_t) wr->bind.mw->rkey);
    s->rkey = wr->bind.mw->rkey;
  }
  rnicpi_spin_unlock(&qp->sq_lock);
  if (split_broke) {
    g_mutex_lock(&qp->dev->lock);
    qp_fault(qp, RNICPI_AE_LOCAL);
    g_mutex_unlock(&qp->dev->lock);
    return RNICPI_OK;
  }
  if (fault_now) {
    g_mutex_lock(&qp->dev->lock);
    qp_fault(qp, (rnicpi_async_cause_t) cause);
    g_mutex_unlock(&qp->dev->lock);
    return RNICPI_OK;
  }
  if (error) {
    ib_sweep_add(qp);
    return RNICPI_OK;
  }
  if (err == ENOMEM)
    return RNICPI_EFULL;
  return err == 0 ? RNICPI_OK : err == EINVAL ? RNICPI_EINVAL : ib_status_of_errno(err);
}

static rnicpi_status_t
ib_post_recv(rnicpi_qp_t *q, const rnicpi_recv_wr_t *wr)
{
  ib_qp_t *qp = to_ib_qp(q);
  if (qp->srq != NULL)
    return RNICPI_ESTATE;
  struct ibv_sge sge[32];
  uint32_t len = 0;
  /* A bad segment is the device's to report, when a message arrives;
   * what it reports is its own (rxe: LOC_QP_OP_ERR, do_class_ac_error in
   * rxe_resp.c), and RNIC-PI's is a local protection error. */
  int sges = map_sges(qp->dev, qp->base.pd, wr->sg_list, wr->num_sge, sge,
                      MIN(qp->max_recv_sge, G_N_ELEMENTS(sge)), RNICPI_ACCESS_LOCAL_WRITE, &len);
  if (sges == IB_SGE_LIMIT)
    return RNICPI_ELIMIT;
  struct ibv_recv_wr v = { .sg_list = sge, .num_sge = (int) wr->num_sge }, *bad = NULL;
  rnicpi_spin_lock(&qp->rq_lock);
  if (qp->rq.tail - qp->rq.head >= qp->rq_max) {
    rnicpi_spin_unlock(&qp->rq_lock);
    return RNICPI_EFULL;
  }
  uint64_t seq = qp->rq.tail;
  ib_shadow_t *s = wq_at(&qp->rq, seq);
  s->wr_id = wr->wr_id;
  s->opcode = RNICPI_WC_RECV;
  s->signaled = 1;
  s->done = 0;
  s->fail = sges == IB_SGE_FAULT ? RNICPI_WC_LOC_PROT_ERR : 0;
  s->len = len;
  s->rkey = 0;
  if (qp->rq_sge != NULL) {
    /* UD: where the GRH lands, read at completion (ib_ud.c), in our own
     * addresses. */
    struct ibv_sge *at = &qp->rq_sge[(seq & (qp->rq.size - 1)) * qp->max_recv_sge];
    for (uint32_t i = 0; i < wr->num_sge; i++)
      at[i] = (struct ibv_sge){ .addr = wr->sg_list[i].addr, .length = wr->sg_list[i].length,
                                .lkey = (uint32_t) wr->sg_list[i].lkey };
    s->nsge = (uint8_t) wr->num_sge;
  }
  gboolean error = qp->state == IB_QP_ERROR;
  s->given = !error;
  qp->rq.tail = seq + 1;
  int err = 0;
  if (!error) {
    v.wr_id = ib_wrid(qp->serial, IB_KIND_RECV, seq);
    err = ibv_post_recv(qp->qp, &v, &bad);
    if (err != 0)
      qp->rq.tail = seq;
  }
  rnicpi_spin_unlock(&qp->rq_lock);
  if (error) {
    ib_sweep_add(qp);
    return RNICPI_OK;
  }
  if (err == ENOMEM)
    return RNICPI_EFULL;
  return err == 0 ? RNICPI_OK : ib_status_of_errno(err);
}

rnicpi_status_t
ib_post_srq_recv(rnicpi_srq_t *s, const rnicpi_recv_wr_t *wr)
{
  ib_srq_t *srq = to_ib_srq(s);
  struct ibv_sge sge[32];
  uint32_t len = 0;
  if (map_sges(srq->dev, srq->base.pd, wr->sg_list, wr->num_sge, sge,
               MIN(srq->max_sge, G_N_ELEMENTS(sge)), RNICPI_ACCESS_LOCAL_WRITE, &len) == IB_SGE_LIMIT)
    return RNICPI_ELIMIT;
  struct ibv_recv_wr v = { .sg_list = sge, .num_sge = (int) wr->num_sge }, *bad = NULL;
  rnicpi_spin_lock(&srq->lock);
  uint32_t cap = srq->cap != 0 ? srq->cap : srq->nslots;
  if (srq->nfree == 0 || srq->posted >= cap) {
    rnicpi_spin_unlock(&srq->lock);
    return RNICPI_EFULL;
  }
  uint32_t slot = srq->free[--srq->nfree];
  ib_shadow_t *sh = &srq->slot[slot];
  sh->wr_id = wr->wr_id;
  sh->opcode = RNICPI_WC_RECV;
  sh->len = len;
  sh->done = 0;
  srq->posted++;
  v.wr_id = ib_wrid(srq->serial, IB_KIND_SRQ, slot);
  int err = ibv_post_srq_recv(srq->srq, &v, &bad);
  if (err != 0) {
    sh->done = 1;
    srq->free[srq->nfree++] = slot;
    srq->posted--;
  }
  rnicpi_spin_unlock(&srq->lock);
  if (err == ENOMEM)
    return RNICPI_EFULL;
  return err == 0 ? RNICPI_OK : ib_status_of_errno(err);
}

/* ---- tables ---------------------------------------------------------------- */

const rnicpi_data_ops_t ib_data_ops = {
  .size = sizeof(rnicpi_data_ops_t),
  .post_send = ib_post_send,
  .post_recv = ib_post_recv,
  .poll_cq = ib_poll_cq,
  .cq_count = ib_cq_count,
  .arm_cq = ib_arm_cq,
  .cq_wait_begin = ib_cq_wait_begin,
  .cq_wait_end = ib_cq_wait_end,
};
