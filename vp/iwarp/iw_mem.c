/*
 * vp/iwarp memory regions and STags.
 *
 * An STag is what RDMAP carries (RFC 5040 2.1): a 24-bit index and an 8-bit
 * key drawn at random.  Indexes are handed out in sequence and only reused
 * after the whole 24-bit space went by, so a stale STag does not reach new
 * memory.  The lkey and rkey of a region are the same STag (iWARP has one
 * key per region).  Index 0 is never used: STag 0 is the privileged STag
 * and STag 1 is what RFC 6581 zero-length RTRs carry.
 *
 * Fast registration (RNIC-PI 1.4; RDMAC verbs "Fast-Register", RFC 5040
 * 2.1's STag model): mr_alloc takes an index for an invalid region, whose
 * STag answers nothing.  A FAST_REG work request gets a new key byte at
 * post (written into the region's keys, as rnicpi.h says) and, at its turn
 * in the send queue, makes the region valid with that STag, its memory and
 * rights.  A Local Invalidate, or a peer's Send with Invalidate, of that
 * STag makes it invalid again; the next FAST_REG gives it a new key.  A
 * region of mr_reg can be invalidated by neither (RFC 5040 6.10 leaves it
 * to the RNIC which STags may be; the RDMAC verbs allow it for fast-
 * registered regions and windows only, as vp/emul does), nor a region
 * with a window bound to it: the window would outlive its memory.
 *
 * Memory windows (iw_mw.c) take entries of the same table: a window's STag
 * is invalidated by the same work requests and by a peer's Send with
 * Invalidate, but only through the queue pair it was bound through.  A
 * window's STag is a remote key only: no local gather or scatter names it
 * (iw_mr_local).
 *
 * Placement holds mr_lock for reading for a whole pass and checks a
 * region again by STag and generation (iw_mr_live) before each recv()
 * into it; every change of a region's validity takes the lock for
 * writing and draws a new generation, so no recv() writes into memory
 * after the call that invalidated or re-registered its STag returned.
 *
 * SPDX-License-Identifier: MIT
 */
#include <sys/random.h>

#include "iw.h"

static uint8_t
random_key(void)
{
  uint8_t k;
  if (getrandom(&k, sizeof(k), 0) != (ssize_t) sizeof(k))
    k = (uint8_t) g_random_int();
  return k;
}

/* The slot of STag index @idx, its page allocated when @make (mr_lock
 * held for writing). */
static iw_mr_t **
slot_of(iw_dev_t *dev, uint32_t idx, gboolean make)
{
  iw_mr_t ***page = &dev->mr_pages[idx / IW_MR_PAGE];
  if (*page == NULL) {
    if (!make)
      return NULL;
    *page = g_new0(iw_mr_t *, IW_MR_PAGE);
  }
  return &(*page)[idx % IW_MR_PAGE];
}

gboolean
iw_mr_set_stag(iw_dev_t *dev, iw_mr_t *mr, uint32_t stag)
{
  g_rw_lock_writer_lock(&dev->mr_lock);
  iw_mr_t **to = slot_of(dev, stag >> 8, TRUE);
  gboolean ok = *to == NULL || *to == mr;
  if (ok) {
    *slot_of(dev, mr->stag >> 8, FALSE) = NULL;
    *to = mr;
    mr->stag = stag;
    mr->base.lkey = mr->base.rkey = stag;
  }
  g_rw_lock_writer_unlock(&dev->mr_lock);
  return ok;
}

void
iw_mr_table_free(iw_dev_t *dev)
{
  for (size_t i = 0; i < G_N_ELEMENTS(dev->mr_pages); i++)
    g_clear_pointer(&dev->mr_pages[i], g_free);
}

static rnicpi_status_t mr_enter(iw_dev_t *dev, iw_mr_t *mr, rnicpi_mr_t **out);

iw_mr_t *
iw_mr_local(iw_qp_t *qp, const rnicpi_sge_t *s, uint32_t need)
{
  iw_mr_t *mr = s->lkey <= UINT32_MAX ? iw_mr_lookup(qp->dev, (uint32_t) s->lkey) : NULL;
  if (mr == NULL || mr->mw != NULL || mr->pd != qp->pd || (mr->access & need) != need)
    return NULL;
  uint64_t start = (uint64_t) (uintptr_t) mr->addr;
  if (s->addr < start || s->length > mr->length || s->addr - start > mr->length - s->length)
    return NULL;
  return mr;
}

static rnicpi_status_t
iw_mr_reg(rnicpi_pd_t *p, const rnicpi_mr_attr_t *attr, rnicpi_mr_t **out)
{
  iw_dev_t *dev = to_iw_dev(p->dev);
  if (attr->addr == NULL || attr->length == 0)
    return RNICPI_EINVAL;
  if (attr->length > dev->caps.max_mr_size)
    return RNICPI_ELIMIT;
  /* A tagged offset is 64 bits: the region must not wrap it (RFC 5041 7.2 TO wrap). */
  if (attr->iova > UINT64_MAX - attr->length)
    return RNICPI_EINVAL;
  iw_mr_t *mr = g_new0(iw_mr_t, 1);
  mr->base.pd = p;
  mr->pd = to_iw_pd(p);
  mr->addr = attr->addr;
  mr->length = attr->length;
  mr->iova = attr->iova;
  mr->access = attr->access;
  mr->valid = TRUE;
  return mr_enter(dev, mr, out);
}

rnicpi_status_t
iw_mr_table_add(iw_dev_t *dev, iw_mr_t *mr)
{
  g_rw_lock_writer_lock(&dev->mr_lock);
  /* Index 0 is never handed out, so at most 2^24 - 1 regions and windows. */
  if (dev->mr_count >= MIN(dev->caps.max_mr, (1u << 24) - 1)) {
    g_rw_lock_writer_unlock(&dev->mr_lock);
    return RNICPI_ELIMIT;
  }
  iw_mr_t **slot;
  for (;;) {
    uint32_t idx = dev->next_mr_index;
    dev->next_mr_index = idx + 1 >= (1u << 24) ? 1 : idx + 1;
    slot = slot_of(dev, idx, TRUE);
    if (*slot == NULL) {
      mr->stag = (idx << 8) | random_key();
      break;
    }
  }
  *slot = mr;
  dev->mr_count++;
  mr->gen = ++dev->mr_gen;
  g_rw_lock_writer_unlock(&dev->mr_lock);
  return RNICPI_OK;
}

void
iw_mr_table_remove(iw_dev_t *dev, iw_mr_t *mr)
{
  *slot_of(dev, mr->stag >> 8, FALSE) = NULL;
  dev->mr_count--;
}

/* Give region @mr an index and a random key, and enter it into the table;
 * frees it when the table is full. */
static rnicpi_status_t
mr_enter(iw_dev_t *dev, iw_mr_t *mr, rnicpi_mr_t **out)
{
  rnicpi_status_t st = iw_mr_table_add(dev, mr);
  if (st != RNICPI_OK) {
    g_free(mr);
    return st;
  }
  mr->base.lkey = mr->base.rkey = mr->stag;
  g_atomic_int_inc(&mr->pd->nobj);
  *out = &mr->base;
  return RNICPI_OK;
}

/* RNIC-PI 1.4: an invalid region for fast registration.  Its STag is
 * drawn now, so that its index is its own; it answers nothing until a
 * FAST_REG executes. */
static rnicpi_status_t
iw_mr_alloc(rnicpi_pd_t *p, uint32_t max_pages, rnicpi_mr_t **out)
{
  iw_dev_t *dev = to_iw_dev(p->dev);
  if (max_pages == 0)
    return RNICPI_EINVAL;
  iw_mr_t *mr = g_new0(iw_mr_t, 1);
  mr->base.pd = p;
  mr->pd = to_iw_pd(p);
  mr->fr = TRUE;
  mr->max_pages = max_pages;
  return mr_enter(dev, mr, out);
}

/* Take mr_lock for writing from @qp's pass, which may hold it for reading
 * (qp->mr_depth times): GRWLock cannot upgrade, so the read hold goes
 * first.  The pass keeps no region across it: every segment and piece
 * looks its region up again (rx_segment_start, iw_mr_live).  Returns the
 * depth mr_write_end gives back. */
static uint32_t
mr_write_begin(iw_qp_t *qp)
{
  uint32_t depth = qp->mr_depth;
  if (depth > 0) {
    qp->mr_depth = 0;
    g_rw_lock_reader_unlock(&qp->dev->mr_lock);
  }
  g_rw_lock_writer_lock(&qp->dev->mr_lock);
  return depth;
}

static void
mr_write_end(iw_qp_t *qp, uint32_t depth)
{
  g_rw_lock_writer_unlock(&qp->dev->mr_lock);
  if (depth > 0) {
    g_rw_lock_reader_lock(&qp->dev->mr_lock);
    qp->mr_depth = depth;
  }
}

/* A new key byte for the STag of @mr (RDMAC verbs 7.2.7: the consumer's
 * key changes at every fast registration and every bind), never the one
 * it has now, nor the one of the last request posted (@last). */
static uint32_t
new_stag(const iw_mr_t *mr, uint64_t last)
{
  uint8_t key;
  do
    key = random_key();
  while (key == (uint8_t) last || key == (uint8_t) mr->stag);
  return (mr->stag & ~0xffu) | key;
}

void
iw_mem_post(iw_qp_t *qp, iw_swqe_t *s)
{
  rnicpi_send_wr_t *wr = &s->wr;
  if (wr->opcode == RNICPI_WR_FAST_REG) {
    iw_mr_t *mr = to_iw_mr(wr->fast_reg.mr);
    uint32_t stag = new_stag(mr, mr->base.rkey);
    mr->base.lkey = mr->base.rkey = stag;
    wr->rkey = stag;
    g_atomic_int_inc(&mr->queued);
  } else if (wr->opcode == RNICPI_WR_BIND_MW) {
    iw_mw_t *mw = (iw_mw_t *) wr->bind.mw;
    /* The window's index is its own for its life; the region's is read
     * under the lock (a FAST_REG may be changing its key byte). */
    iw_mr_lock(qp);
    mw->base.rkey = wr->rkey = new_stag(&mw->entry, mw->base.rkey);
    s->bind_index = to_iw_mr(wr->bind.mr)->stag >> 8;
    iw_mr_unlock(qp);
    g_atomic_int_inc(&mw->queued);
  }
}

void
iw_mem_post_done(const rnicpi_send_wr_t *wr)
{
  if (wr->opcode == RNICPI_WR_FAST_REG)
    g_atomic_int_dec_and_test(&to_iw_mr(wr->fast_reg.mr)->queued);
  else if (wr->opcode == RNICPI_WR_BIND_MW)
    g_atomic_int_dec_and_test(&((iw_mw_t *) wr->bind.mw)->queued);
}

/* A FAST_REG's rules (rnicpi_fast_reg_t), against the region as it is at
 * execution (mr_lock held for writing). */
static gboolean
fast_reg_ok(iw_qp_t *qp, const iw_mr_t *mr, const rnicpi_send_wr_t *wr)
{
  const rnicpi_fast_reg_t *f = &wr->fast_reg;
  uint64_t feats = qp->dev->caps.features;
  uint64_t start = (uint64_t) (uintptr_t) f->addr;
  if (mr->pd != qp->pd || mr->valid || (uint32_t) wr->rkey >> 8 != mr->stag >> 8)
    return FALSE;
  if (f->addr == NULL || f->length == 0 || f->length > qp->dev->caps.max_mr_size ||
      f->num_pages == 0 || f->num_pages > mr->max_pages || f->page_size == 0 ||
      f->num_pages > UINT64_MAX / f->page_size)
    return FALSE;
  /* [addr, addr + length) inside the pages: from the first page's start
   * when the list is given; without one (this device asks for none:
   * RNICPI_CAP_PAGE_LIST clear), page_size is the bytes per element of
   * the consumer's list, whose offset into its first element is not
   * told, so only the length is held to the elements' bytes. */
  uint64_t span = (uint64_t) f->num_pages * f->page_size;
  uint64_t first = f->pages != NULL ? f->pages[0] : start;
  if (start < first || start - first > span || f->length > span - (start - first))
    return FALSE;
  if (f->iova != start && f->iova != 0)
    return FALSE;
  if (f->iova > UINT64_MAX - f->length || start > UINT64_MAX - f->length)
    return FALSE;
  if ((f->access & RNICPI_ACCESS_ATOMIC) && !(feats & RNICPI_CAP_ATOMICS))
    return FALSE;
  return TRUE;
}

/* Invalidate @mr (mr_lock held for writing): its STag answers nothing
 * from now on, and placement checked against it stops (a new gen). */
static void
mr_invalidate(iw_dev_t *dev, iw_mr_t *mr)
{
  mr->valid = FALSE;
  mr->access = 0;
  mr->length = 0;
  mr->gen = ++dev->mr_gen;
}

/* The entry @qp may invalidate by @stag: a valid fast-registered region
 * of its protection domain with no window bound to it, or a window bound
 * through @qp (mr_lock held). */
static iw_mr_t *
mr_invalidatable(iw_qp_t *qp, uint32_t stag)
{
  iw_mr_t *mr = iw_mr_lookup(qp->dev, stag);
  if (mr == NULL || mr->pd != qp->pd)
    return NULL;
  if (mr->mw != NULL)
    return iw_mw_reachable(mr, qp) ? mr : NULL;
  return mr->fr && mr->nmw == 0 ? mr : NULL;
}

/* Invalidate entry @mr found by mr_invalidatable (mr_lock held for
 * writing). */
static void
entry_invalidate(iw_dev_t *dev, iw_mr_t *mr)
{
  if (mr->mw != NULL)
    iw_mw_unbind(dev, mr->mw);
  else
    mr_invalidate(dev, mr);
}

/* Whether STag index @stag >> 8 holds a window (mr_lock held): a refused
 * invalidation of a window's STag is a window error, RNICPI_WC_MW_BIND_ERR
 * as vp/emul says, a region's a memory management one. */
static gboolean
names_window(iw_dev_t *dev, uint64_t stag)
{
  if (stag > UINT32_MAX)
    return FALSE;
  iw_mr_t *mr = iw_mr_at(dev, (uint32_t) stag >> 8);
  return mr != NULL && mr->mw != NULL;
}

rnicpi_wc_status_t
iw_mem_exec(iw_qp_t *qp, const iw_swqe_t *s)
{
  iw_dev_t *dev = qp->dev;
  const rnicpi_send_wr_t *wr = &s->wr;
  rnicpi_wc_status_t st = RNICPI_WC_SUCCESS;
  uint32_t depth = mr_write_begin(qp);
  if (wr->opcode == RNICPI_WR_BIND_MW) {
    st = iw_mw_bind(qp, s);
    mr_write_end(qp, depth);
    return st;
  }
  if (wr->opcode == RNICPI_WR_FAST_REG) {
    iw_mr_t *mr = to_iw_mr(wr->fast_reg.mr);
    const rnicpi_fast_reg_t *f = &wr->fast_reg;
    if (fast_reg_ok(qp, mr, wr)) {
      mr->addr = f->addr;
      mr->length = f->length;
      mr->iova = f->iova;
      mr->access = f->access;
      mr->stag = (uint32_t) wr->rkey;
      mr->gen = ++dev->mr_gen;
      mr->valid = TRUE;
    } else {
      st = RNICPI_WC_MEM_MGT_ERR;
    }
  } else {
    iw_mr_t *mr = wr->invalidate_rkey <= UINT32_MAX ?
                  mr_invalidatable(qp, (uint32_t) wr->invalidate_rkey) : NULL;
    if (mr != NULL)
      entry_invalidate(dev, mr);
    else
      st = names_window(dev, wr->invalidate_rkey) ? RNICPI_WC_MW_BIND_ERR : RNICPI_WC_MEM_MGT_ERR;
  }
  mr_write_end(qp, depth);
  if (st != RNICPI_WC_SUCCESS)
    g_message("QP %u: %s of STag 0x%08" G_GINT64_MODIFIER "x refused: %s", qp->base.qp_num,
              wr->opcode == RNICPI_WR_FAST_REG ? "a fast registration" : "a local invalidation",
              wr->opcode == RNICPI_WR_FAST_REG ? wr->rkey : wr->invalidate_rkey,
              wr->opcode == RNICPI_WR_FAST_REG ?
              "the region must be of mr_alloc, of this QP's protection domain, invalid, and "
              "the memory inside its pages (rnicpi_fast_reg_t)" :
              "only a valid fast-registered region of this QP's protection domain with no "
              "window bound to it, or a window bound through this QP, can be invalidated");
  return st;
}

gboolean
iw_mem_invalidate(iw_qp_t *qp, uint32_t stag)
{
  uint32_t depth = mr_write_begin(qp);
  iw_mr_t *mr = mr_invalidatable(qp, stag);
  if (mr != NULL)
    entry_invalidate(qp->dev, mr);
  mr_write_end(qp, depth);
  return mr != NULL;
}

static rnicpi_status_t
iw_mr_modify(rnicpi_mr_t *m, uint32_t access)
{
  iw_dev_t *dev = to_iw_dev(m->pd->dev);
  g_rw_lock_writer_lock(&dev->mr_lock);
  to_iw_mr(m)->access = access;
  g_rw_lock_writer_unlock(&dev->mr_lock);
  return RNICPI_OK;
}

static rnicpi_status_t
iw_mr_dereg(rnicpi_mr_t *m)
{
  iw_mr_t *mr = to_iw_mr(m);
  iw_dev_t *dev = to_iw_dev(m->pd->dev);
  /* Placement holds the lock for reading: once we have it, no recv() is
   * writing into the region any more. */
  g_rw_lock_writer_lock(&dev->mr_lock);
  if (g_atomic_int_get(&mr->queued) > 0 || mr->nmw > 0) {
    /* A FAST_REG posted naming it has not completed: it reads the region
     * when it executes; or a window is bound to it (rnicpi.h:
     * RNICPI_EBUSY, as vp/emul; IBTA 10.6.7.2.3). */
    g_rw_lock_writer_unlock(&dev->mr_lock);
    return RNICPI_EBUSY;
  }
  iw_mr_table_remove(dev, mr);
  g_rw_lock_writer_unlock(&dev->mr_lock);
  g_atomic_int_dec_and_test(&mr->pd->nobj);
  g_free(mr);
  return RNICPI_OK;
}

const rnicpi_mem_ops_t iw_mem_ops = {
  .size = sizeof(rnicpi_mem_ops_t),
  .mr_reg = iw_mr_reg,
  .mr_modify = iw_mr_modify,
  .mr_dereg = iw_mr_dereg,
  .mr_alloc = iw_mr_alloc,
};
