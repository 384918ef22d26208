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

  g_rw_lock_writer_lock(&dev->mr_lock);
  /* Index 0 is never handed out, so at most 2^24 - 1 regions. */
  if (dev->mr_count >= MIN(dev->caps.max_mr, (1u << 24) - 1)) {
    g_rw_lock_writer_unlock(&dev->mr_lock);
    g_free(mr);
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

  mr->base.lkey = mr->base.rkey = mr->stag;
  g_atomic_int_inc(&mr->pd->nobj);
  *out = &mr->base;
  return RNICPI_OK;
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
  *slot_of(dev, mr->stag >> 8, FALSE) = NULL;
  dev->mr_count--;
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
};
