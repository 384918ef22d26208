/*
 * vp/iwarp memory windows (RNIC-PI 1.2; RDMAC verbs 7.2.7, RFC 5040 2.1's
 * STag model).
 *
 * A window is an STag of the region table (iw_mem.c) for its whole life:
 * mw_alloc takes an index for it, invalid (its STag answers nothing)
 * until a BIND_MW work request executes.  The bind gets a new key byte at
 * post (written into the window's key, as rnicpi.h says) and, at its turn
 * in the send queue, makes the STag name a range of a region with remote
 * rights of its own.  The window is the RDMAC verbs' one, bound to a
 * queue pair: only the queue pair it was bound through reaches it, takes
 * Read Responses into it, or invalidates it locally; a Terminate answers
 * its STag arriving on another stream ("STag not associated", RFC 5041
 * 7.2, RFC 5040 7.1).  A rebind kills the old STag; a Local Invalidate,
 * a peer's Send with Invalidate (RFC 5040 6.10), a Read with Invalidate,
 * mw_dealloc or the queue pair's destruction unbind it.
 *
 * Every change of a window's binding draws a new generation under mr_lock
 * held for writing, as a region's change of validity does: placement
 * checked against the old binding stops (iw_mr_live), so no byte lands
 * through a window after the request that unbound it executed.
 *
 * SPDX-License-Identifier: MIT
 */
#include "iw.h"

/* The rights a window may grant: remote ones only (rnicpi_bind_t). */
#define IW_MW_RIGHTS (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_ATOMIC)

static inline iw_mw_t *to_iw_mw(rnicpi_mw_t *m) { return (iw_mw_t *) m; }

static rnicpi_status_t
iw_mw_alloc(rnicpi_pd_t *p, rnicpi_mw_type_t type, rnicpi_mw_t **out)
{
  if (type != RNICPI_MW_NARROW && type != RNICPI_MW_WIDE)
    return RNICPI_EINVAL;
  if (type == RNICPI_MW_WIDE)
    return RNICPI_ENOTSUP; /* RDMAC verbs: an iWARP window is bound to a QP */
  iw_dev_t *dev = to_iw_dev(p->dev);
  iw_mw_t *mw = g_new0(iw_mw_t, 1);
  mw->base.pd = p;
  mw->base.type = type;
  mw->entry.base.pd = p;
  mw->entry.pd = to_iw_pd(p);
  mw->entry.mw = mw;
  mw->qp_link.data = mw;
  rnicpi_status_t st = iw_mr_table_add(dev, &mw->entry);
  if (st != RNICPI_OK) {
    g_free(mw);
    return st;
  }
  g_atomic_int_inc(&mw->entry.pd->nobj);
  *out = &mw->base;
  return RNICPI_OK;
}

void
iw_mw_unbind(iw_dev_t *dev, iw_mw_t *mw)
{
  if (mw->parent != NULL)
    mw->parent->nmw--;
  if (mw->qp != NULL)
    g_queue_unlink(&mw->qp->mws, &mw->qp_link);
  mw->parent = NULL;
  mw->qp = NULL;
  mw->entry.valid = FALSE;
  mw->entry.access = 0;
  mw->entry.length = 0;
  mw->entry.gen = ++dev->mr_gen;
}

static rnicpi_status_t
iw_mw_dealloc(rnicpi_mw_t *m)
{
  iw_mw_t *mw = to_iw_mw(m);
  iw_dev_t *dev = to_iw_dev(m->pd->dev);
  /* A queued bind reads the window when it executes (rnicpi.h). */
  if (g_atomic_int_get(&mw->queued) > 0)
    return RNICPI_EBUSY;
  /* Placement holds the lock for reading: once we have it, no recv() is
   * writing through the window any more. */
  g_rw_lock_writer_lock(&dev->mr_lock);
  iw_mw_unbind(dev, mw);
  iw_mr_table_remove(dev, &mw->entry);
  g_rw_lock_writer_unlock(&dev->mr_lock);
  g_atomic_int_dec_and_test(&mw->entry.pd->nobj);
  g_free(mw);
  return RNICPI_OK;
}

/* Why bind @b, executing on @qp, breaks a rule of rnicpi_bind_t (IBTA
 * 10.6.7.2, RDMAC verbs 7.2.7), as vp/emul checks them; NULL when it
 * breaks none.  @mr is the region, NULL when it was deregistered since the
 * post. */
static const char *
bind_fault(iw_qp_t *qp, const iw_mw_t *mw, const iw_mr_t *mr, const rnicpi_bind_t *b,
           uint64_t rkey)
{
  uint64_t feats = qp->dev->caps.features;
  if (mr == NULL || !mr->valid || mr->mw != NULL)
    return "the region is not registered (or, fast-registered, not valid)";
  if (mw->entry.pd != qp->pd || mr->pd != qp->pd)
    return "the window, the region and the queue pair must share one protection domain";
  if (!(mr->access & RNICPI_ACCESS_MW_BIND))
    return "the region was registered without RNICPI_ACCESS_MW_BIND";
  if ((b->access & ~IW_MW_RIGHTS) != 0 || (b->access & ~mr->access) != 0)
    return "a window grants remote rights only, and only those its region grants";
  if (b->length == 0 || b->addr < mr->iova || b->length > mr->length ||
      b->addr - mr->iova > mr->length - b->length)
    return "the window's range must lie inside the region, in its address space";
  if ((feats & RNICPI_CAP_MW_NEEDS_VA_REGION) && mr->iova != (uint64_t) (uintptr_t) mr->addr)
    return "an iWARP window cannot be bound to a zero-based region (RDMAC verbs 7.2.7)";
  if (b->zero_based && !(feats & RNICPI_CAP_ZERO_BASED))
    return "this device has no zero-based addressing";
  if (rkey > UINT32_MAX || (uint32_t) rkey >> 8 != mw->entry.stag >> 8)
    return "the key is not the one post_send gave the window";
  return NULL;
}

rnicpi_wc_status_t
iw_mw_bind(iw_qp_t *qp, const iw_swqe_t *s)
{
  iw_dev_t *dev = qp->dev;
  const rnicpi_bind_t *b = &s->wr.bind;
  iw_mw_t *mw = to_iw_mw(b->mw);
  /* The region by the index read at post: the pointer is compared with
   * what the table holds there, never followed unless it is still there
   * (indexes are not reused until 2^24 registrations went by). */
  iw_mr_t *mr = iw_mr_at(dev, s->bind_index);
  if (mr != to_iw_mr(b->mr))
    mr = NULL;
  const char *why = bind_fault(qp, mw, mr, b, s->wr.rkey);
  if (why != NULL) {
    g_message("QP %u: a bind of window STag 0x%08" G_GINT64_MODIFIER "x over [0x%"
              G_GINT64_MODIFIER "x, +%" G_GINT64_MODIFIER "u) refused: %s",
              qp->base.qp_num, s->wr.rkey, b->addr, b->length, why);
    return RNICPI_WC_MW_BIND_ERR;
  }
  iw_mw_unbind(dev, mw);
  mw->parent = mr;
  mr->nmw++;
  mw->qp = qp;
  g_queue_push_tail_link(&qp->mws, &mw->qp_link);
  mw->entry.addr = mr->addr + (b->addr - mr->iova);
  mw->entry.length = b->length;
  mw->entry.iova = b->zero_based ? 0 : b->addr;
  mw->entry.access = b->access;
  mw->entry.stag = (uint32_t) s->wr.rkey;
  mw->entry.valid = TRUE;
  mw->entry.gen = ++dev->mr_gen;
  return RNICPI_WC_SUCCESS;
}

iw_mr_t *
iw_mw_sink(iw_qp_t *qp, const rnicpi_sge_t *s)
{
  iw_mr_t *w = s->lkey <= UINT32_MAX ? iw_mr_lookup(qp->dev, (uint32_t) s->lkey) : NULL;
  if (w == NULL || w->mw == NULL || w->pd != qp->pd || !iw_mw_reachable(w, qp))
    return NULL;
  if (!(w->access & RNICPI_ACCESS_REMOTE_WRITE) ||
      !(w->mw->parent->access & RNICPI_ACCESS_LOCAL_WRITE))
    return NULL;
  if (s->addr < w->iova || s->length > w->length || s->addr - w->iova > w->length - s->length)
    return NULL;
  return w;
}

void
iw_mw_qp_gone(iw_qp_t *qp)
{
  g_rw_lock_writer_lock(&qp->dev->mr_lock);
  while (qp->mws.head != NULL)
    iw_mw_unbind(qp->dev, qp->mws.head->data);
  g_rw_lock_writer_unlock(&qp->dev->mr_lock);
}

const rnicpi_mw_ops_t iw_mw_ops = {
  .size = sizeof(rnicpi_mw_ops_t),
  .mw_alloc = iw_mw_alloc,
  .mw_dealloc = iw_mw_dealloc,
};
