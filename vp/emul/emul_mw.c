/*
 * vp/emul memory windows (RNIC-PI 1.2).
 *
 * A window owns a slot of the region table for its whole life: its key is
 * that slot's index and a tag that changes at every bind (emul_mem.c: the
 * slot's next tag, by a random stride on InfiniBand, the 8-bit key bumped
 * on iWARP, RDMAC verbs 7.2.7), so a stale window key stays refused.  Binding and invalidation are send-queue work requests and
 * execute in order with the rest of the queue (emul_exec.c); the rules of a
 * bind are IBTA 10.6.7.2 and RDMAC verbs 7.2.7 as rnicpi.h lists them.
 *
 * Across processes: binds, Local Invalidates and fast registrations on a
 * cross-process QP execute locally when they reach the head of its send
 * queue (emul_req_run); a Send with Invalidate carries its key in the ring
 * and the receiving process invalidates.  A window's entry is exported
 * like a region's (emul_ring_mr_sync), with the number of the QP a narrow
 * window is bound through, so a peer process may use its key one-sided
 * only through that QP.  A Read into windows (RNICPI_WR_SINK_MW) is
 * placed by the requesting process, which translates its sink windows to
 * its own addresses when the data lands (emul_req_local), and a Read
 * with Invalidate kills the sink key there, as in-process.
 *
 * SPDX-License-Identifier: MIT
 */
#include "emul.h"

#define MW_RIGHTS (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_ATOMIC)

static rnicpi_status_t
emul_mw_alloc(rnicpi_pd_t *p, rnicpi_mw_type_t type, rnicpi_mw_t **out)
{
  emul_dev_t *dev = to_emul_dev(p->dev);
  uint64_t need = type == RNICPI_MW_NARROW ? RNICPI_CAP_MW_NARROW :
                  type == RNICPI_MW_WIDE ? RNICPI_CAP_MW_WIDE : 0;
  if (need == 0)
    return RNICPI_EINVAL;
  if (!(dev->caps.features & need))
    return RNICPI_ENOTSUP;
  emul_mw_t *mw = g_new0(emul_mw_t, 1);
  mw->base.pd = p;
  mw->base.type = type;
  mw->entry.base.pd = p;
  mw->entry.pd = to_emul_pd(p);
  mw->entry.pers = dev->pers;
  mw->entry.mw = mw;
  emul_random_ready();
  emul_fabric_lock();
  if (!emul_slot_alloc(&mw->entry, dev->pers)) {
    emul_fabric_unlock();
    g_free(mw);
    return RNICPI_ELIMIT;
  }
  mw->entry.key = emul_slot_new_tag(dev->pers, mw->entry.index);
  mw->entry.ref = 1;  /* the table's */
  emul_mr_mutable_enter();
  emul_mr_slot_set(mw->entry.index, &mw->entry);
  emul_ring_mr_sync(mw->entry.index);
  emul_fabric_unlock();
  g_atomic_int_inc(&mw->entry.pd->nobj);
  *out = &mw->base;
  return RNICPI_OK;
}

/* Unbind: the key dies, the region is free of it. */
static void
mw_unbind(emul_mw_t *mw)
{
  if (mw->parent != NULL) {
    mw->parent->nmw--;
    emul_mr_put(mw->parent);
  }
  if (mw->qp != NULL)
    mw->qp->mws = g_list_remove(mw->qp->mws, mw);
  mw->parent = NULL;
  mw->qp = NULL;
  mw->access = 0;
  mw->entry.access = 0;
  mw->entry.length = 0;
  emul_ring_mr_sync(mw->entry.index);
}

static rnicpi_status_t
emul_mw_dealloc(rnicpi_mw_t *m)
{
  emul_mw_t *mw = to_emul_mw(m);
  emul_fabric_lock();
  if (mw->queued > 0) {
    emul_fabric_unlock();
    return RNICPI_EBUSY;
  }
  mw_unbind(mw);
  emul_mr_slot_set(mw->entry.index, NULL);
  g_array_append_val(emul_fabric.free_mr, mw->entry.index);
  emul_ring_mr_sync(mw->entry.index);
  emul_links_pass();
  g_atomic_int_add(&emul_fabric.nmutable, -1);
  emul_mr_release(&mw->entry);
  emul_fabric_unlock();
  g_atomic_int_dec_and_test(&mw->entry.pd->nobj);
  g_free(mw);
  return RNICPI_OK;
}

/* Rights key entry @mr grants to an access arriving through @qp. */
uint32_t
emul_key_access(const emul_mr_t *mr, const emul_qp_t *qp)
{
  const emul_mw_t *mw = mr->mw;
  if (mw == NULL)
    return emul_mr_access(mr);
  if (mw->parent == NULL || (mw->qp != NULL && mw->qp != qp))
    return 0;
  return mw->access;
}

/* Checks at post, and the key the bind will give (ibv_bind_mw returns it
 * at once): written into the window and into wr->rkey of the copy that
 * executes. */
rnicpi_status_t
emul_mw_post_check(emul_qp_t *qp, rnicpi_send_wr_t *wr)
{
  const uint64_t feats = emul_qp_dev(qp)->caps.features;
  /* RNIC-PI 1.4: reads into windows, Read with Invalidate, fast registration. */
  if (wr->flags & RNICPI_WR_SINK_MW) {
    if (wr->opcode != RNICPI_WR_RDMA_READ && wr->opcode != RNICPI_WR_RDMA_READ_INV)
      return RNICPI_EINVAL;
    if (!(feats & RNICPI_CAP_READ_SINK_MW))
      return RNICPI_ENOTSUP;
  }
  if (wr->opcode == RNICPI_WR_RDMA_READ_INV &&
      ((feats & (RNICPI_CAP_READ_SINK_MW | RNICPI_CAP_LOCAL_INVALIDATE)) !=
       (RNICPI_CAP_READ_SINK_MW | RNICPI_CAP_LOCAL_INVALIDATE)))
    return RNICPI_ENOTSUP;
  if (wr->opcode == RNICPI_WR_FAST_REG) {
    if (!(feats & RNICPI_CAP_FAST_REGISTER))
      return RNICPI_ENOTSUP;
    if (wr->fast_reg.mr == NULL)
      return RNICPI_EINVAL;
    emul_mr_t *mr = to_emul_mr(wr->fast_reg.mr);
    if (!mr->fr)
      return RNICPI_EINVAL;
    const emul_pers_t *fp = emul_pers_of_qp(qp);
    uint32_t ftag = emul_slot_new_tag(fp, mr->index);
    mr->base.lkey = mr->base.rkey = wr->rkey = emul_key_make(fp, mr->index, ftag);
    return RNICPI_OK;
  }
  if (wr->opcode != RNICPI_WR_BIND_MW && wr->opcode != RNICPI_WR_LOCAL_INV &&
      wr->opcode != RNICPI_WR_SEND_INV)
    return RNICPI_OK;
  uint64_t need = wr->opcode == RNICPI_WR_BIND_MW ? RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE :
                  wr->opcode == RNICPI_WR_LOCAL_INV ? RNICPI_CAP_LOCAL_INVALIDATE :
                  RNICPI_CAP_REMOTE_INVALIDATE;
  if (!(feats & need))
    return RNICPI_ENOTSUP;
  if (wr->opcode != RNICPI_WR_BIND_MW)
    return RNICPI_OK;
  if (wr->bind.mw == NULL || wr->bind.mr == NULL)
    return RNICPI_EINVAL;
  emul_mw_t *mw = to_emul_mw(wr->bind.mw);
  const emul_pers_t *p = emul_pers_of_qp(qp);
  uint32_t tag = emul_slot_new_tag(p, mw->entry.index);
  mw->base.rkey = wr->rkey = emul_key_make(p, mw->entry.index, tag);
  return RNICPI_OK;
}

/* Execute a bind (IBTA 10.6.7.2, RDMAC verbs 7.2.7). */
rnicpi_wc_status_t
emul_mw_bind(emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  const rnicpi_bind_t *b = &wr->bind;
  emul_mw_t *mw = to_emul_mw(b->mw);
  emul_mr_t *mr = to_emul_mr(b->mr);
  const emul_pers_t *p = emul_pers_of_qp(qp);
  uint32_t index, tag;
  if (mw->entry.pd != qp->pd || mr->pd != qp->pd || mr->mw != NULL ||
      emul_mr_slot(mr->index) != mr)
    return RNICPI_WC_MW_BIND_ERR;
  if (!(mr->access & RNICPI_ACCESS_MW_BIND) || (b->access & ~MW_RIGHTS) != 0 ||
      (b->access & ~mr->access) != 0)
    return RNICPI_WC_MW_BIND_ERR;
  if (b->length == 0 || !emul_range_holds(mr->iova, mr->length, b->addr, b->length))
    return RNICPI_WC_MW_BIND_ERR;
  if ((mr->zero_based && (p->features & RNICPI_CAP_MW_NEEDS_VA_REGION)) ||
      (b->zero_based && !(emul_qp_dev(qp)->caps.features & RNICPI_CAP_ZERO_BASED)))
    return RNICPI_WC_MW_BIND_ERR;
  if (!emul_key_split(p, wr->rkey, &index, &tag) || index != mw->entry.index)
    return RNICPI_WC_MW_BIND_ERR;
  mw_unbind(mw);
  /* A bound window holds its region, as rxe's does (rxe_mw.c); nmw keeps
   * IBTA 10.6.7.2.3's rule that such a region cannot be deregistered. */
  emul_mr_get(mr);
  mw->parent = mr;
  mr->nmw++;
  if (mw->base.type == RNICPI_MW_NARROW) {
    mw->qp = qp;
    qp->mws = g_list_prepend(qp->mws, mw);
  }
  mw->access = b->access;
  mw->entry.key = tag;
  mw->entry.addr = mr->addr + (b->addr - mr->iova);
  mw->entry.length = b->length;
  mw->entry.iova = b->zero_based ? 0 : b->addr;
  mw->entry.zero_based = b->zero_based != 0;
  /* What other processes see (a narrow window: with its QP's number). */
  mw->entry.access = b->access;
  emul_ring_mr_sync(mw->entry.index);
  return RNICPI_WC_SUCCESS;
}

/* Invalidate window key @key, arriving through @qp (Local Invalidate on
 * the QP's own queue, Read with Invalidate, or Send with Invalidate from
 * its peer); FALSE when the key names no bound window of the QP's domain
 * usable through it.  RNIC-PI 1.4: the key may also name a valid
 * fast-registered region of the domain with no window bound to it. */
gboolean
emul_mw_invalidate(emul_qp_t *qp, uint64_t key)
{
  emul_mr_t *e = emul_mr_lookup(emul_pers_of_qp(qp), key);
  if (e != NULL && e->mw == NULL) {
    if (!e->fr || !e->valid || e->pd != qp->pd || e->nmw > 0)
      return FALSE;
    emul_fr_invalidate(e);
    return TRUE;
  }
  if (e == NULL || e->mw == NULL || e->pd != qp->pd || e->mw->parent == NULL ||
      (e->mw->qp != NULL && e->mw->qp != qp))
    return FALSE;
  mw_unbind(e->mw);
  return TRUE;
}

/* A QP goes away: the narrow windows bound through it die with it. */
void
emul_mw_qp_gone(emul_qp_t *qp)
{
  while (qp->mws != NULL)
    mw_unbind(qp->mws->data);
}

const rnicpi_mw_ops_t emul_mw_ops = {
  .size = sizeof(rnicpi_mw_ops_t),
  .mw_alloc = emul_mw_alloc,
  .mw_dealloc = emul_mw_dealloc,
};
