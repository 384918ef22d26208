/*
 * vp/ib memory regions: ibv_reg_mr_iova2, so that a region answers to the
 * address the access layer asks for (its virtual address, or 0 when
 * zero-based).  Keys are verbs' 32-bit lkey and rkey.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>

#include "ib.h"

static rnicpi_status_t
ib_mr_reg(rnicpi_pd_t *p, const rnicpi_mr_attr_t *attr, rnicpi_mr_t **out)
{
  ib_pd_t *pd = to_ib_pd(p);
  ib_dev_t *dev = to_ib_dev(p->dev);
  if (attr->addr == NULL || attr->length == 0)
    return RNICPI_EINVAL;
  if (attr->length > dev->caps.max_mr_size)
    return RNICPI_ELIMIT;
  uint32_t access = attr->access;
  struct ibv_mr *vmr = ibv_reg_mr_iova2(pd->pd, attr->addr, attr->length, attr->iova,
                                        (unsigned) ib_access_to_verbs(access));
  if (vmr == NULL && errno == EFAULT && (access & RNICPI_ACCESS_MW_BIND) &&
      !(ib_access_to_verbs(access & ~RNICPI_ACCESS_MW_BIND) & IBV_ACCESS_LOCAL_WRITE)) {
    /* The kernel pins a region windows may be bound to for writing
     * (ib_access_writable counts IB_ACCESS_MW_BIND), which read-only
     * memory refuses: register it without; a bind to it then fails. */
    access &= ~RNICPI_ACCESS_MW_BIND;
    vmr = ibv_reg_mr_iova2(pd->pd, attr->addr, attr->length, attr->iova,
                           (unsigned) ib_access_to_verbs(access));
  }
  if (vmr == NULL) {
    int err = errno;
    g_debug("%s: ibv_reg_mr_iova2(%p, %" G_GUINT64_FORMAT " bytes, iova 0x%" G_GINT64_MODIFIER
            "x, access 0x%x): %s", dev->name, attr->addr, attr->length, attr->iova, attr->access,
            g_strerror(err));
    /* ENOMEM is the memory-lock limit (siw checks RLIMIT_MEMLOCK itself)
     * or the kernel's memory: a resource, not a fault of the caller. */
    if (err == EINVAL && (attr->iova & 4095) != ((uintptr_t) attr->addr & 4095))
      g_message("%s: a region at %p cannot answer to address 0x%" G_GINT64_MODIFIER "x: the "
                "kernel's verbs keep an address's offset in its page (zero-based regions must "
                "start on a page boundary; doc/provider-ib.md)", dev->name, attr->addr, attr->iova);
    return err == EFAULT ? RNICPI_ERANGE : ib_status_of_errno(err);
  }
  ib_mr_t *mr = g_new0(ib_mr_t, 1);
  mr->base.pd = p;
  mr->base.lkey = vmr->lkey;
  /* rxe gives a region without remote rights no rkey (0); RNIC-PI keys are
   * never 0, and the lkey names the region just as well: a remote access
   * with it is refused for want of rights. */
  mr->base.rkey = vmr->rkey != 0 ? vmr->rkey : vmr->lkey;
  mr->mr = vmr;
  mr->addr = (uintptr_t) attr->addr;
  mr->length = attr->length;
  mr->iova = attr->iova;
  mr->access = ib_access_granted(access);
  mr->asked = access;
  g_rw_lock_writer_lock(&dev->mr_lock);
  g_hash_table_insert(dev->mrs, GUINT_TO_POINTER(mr->base.lkey), mr);
  ib_mr_changed();
  g_rw_lock_writer_unlock(&dev->mr_lock);
  *out = &mr->base;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_mr_modify(rnicpi_mr_t *m, uint32_t access)
{
  ib_mr_t *mr = to_ib_mr(m);
  ib_dev_t *dev = to_ib_dev(m->pd->dev);
  /* RNIC-PI keeps a region's keys.  ibv_rereg_mr may change them (its
   * man page allows a deregistration and a new registration); neither rxe
   * nor siw has the kernel's rereg_user_mr, so there it is EOPNOTSUPP
   * (ENOTSUP here). */
  uint32_t lkey = mr->mr->lkey, rkey = mr->mr->rkey;
  int r = ibv_rereg_mr(mr->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
                       ib_access_to_verbs(access));
  if (r != 0)
    return r == IBV_REREG_MR_ERR_INPUT ? RNICPI_EINVAL : RNICPI_ENOTSUP;
  g_rw_lock_writer_lock(&dev->mr_lock);
  mr->access = ib_access_granted(access);
  mr->asked = access;
  if (mr->mr->lkey != lkey) {
    g_hash_table_remove(dev->mrs, GUINT_TO_POINTER(lkey));
    g_hash_table_insert(dev->mrs, GUINT_TO_POINTER(mr->mr->lkey), mr);
  }
  ib_mr_changed();
  g_rw_lock_writer_unlock(&dev->mr_lock);
  if (mr->mr->lkey != lkey || mr->mr->rkey != rkey) {
    g_warning("%s: ibv_rereg_mr changed the keys of a region (lkey 0x%x -> 0x%x, rkey 0x%x -> "
              "0x%x): peers holding the old rkey will fail; this device cannot change rights "
              "in place (doc/provider-ib.md)", dev->name, lkey, mr->mr->lkey,
              rkey, mr->mr->rkey);
    mr->base.lkey = mr->mr->lkey;
    mr->base.rkey = mr->mr->rkey;
  }
  return RNICPI_OK;
}

static rnicpi_status_t
ib_mr_dereg(rnicpi_mr_t *m)
{
  ib_mr_t *mr = to_ib_mr(m);
  ib_dev_t *dev = to_ib_dev(m->pd->dev);
  uint32_t lkey = mr->mr->lkey;
  /* Out of the table first: once deregistered, its lkey may name the
   * next region registered. */
  g_rw_lock_writer_lock(&dev->mr_lock);
  g_hash_table_remove(dev->mrs, GUINT_TO_POINTER(lkey));
  ib_mr_changed();
  g_rw_lock_writer_unlock(&dev->mr_lock);
  int err = ibv_dereg_mr(mr->mr);
  /* IBTA 10.6.7.2.6: no deregistration while windows are bound to the
   * region; rxe says EINVAL. */
  if (err == EINVAL && (mr->access & RNICPI_ACCESS_MW_BIND))
    err = EBUSY;
  if (err != 0) {
    g_rw_lock_writer_lock(&dev->mr_lock);
    g_hash_table_insert(dev->mrs, GUINT_TO_POINTER(lkey), mr);
    ib_mr_changed();
    g_rw_lock_writer_unlock(&dev->mr_lock);
    return err == EBUSY ? RNICPI_EBUSY : ib_status_of_errno(err);
  }
  g_free(mr);
  return RNICPI_OK;
}

const rnicpi_mem_ops_t ib_mem_ops = {
  .size = sizeof(rnicpi_mem_ops_t),
  .mr_reg = ib_mr_reg,
  .mr_modify = ib_mr_modify,
  .mr_dereg = ib_mr_dereg,
};
