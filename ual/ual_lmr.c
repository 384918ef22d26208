/*
 * Local memory regions: pinning through the kAL, registration through the
 * provider, the three bindings of it_lmr_create.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "ual.h"

/* Provider rights of @p.  A region with remote rights also lets windows be
 * bound to it (RNIC-PI 1.2) where the IA has them. */
uint32_t
ual_access_of(ual_ia_t *ia, it_mem_priv_t p)
{
  uint32_t a = 0;
  if ((p & (IT_PRIV_REMOTE | IT_PRIV_ATOMIC)) &&
      (ia->caps.features & (RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE)))
    a |= RNICPI_ACCESS_MW_BIND;
  if (p & IT_PRIV_LOCAL_READ) a |= RNICPI_ACCESS_LOCAL_READ;
  if (p & IT_PRIV_LOCAL_WRITE) a |= RNICPI_ACCESS_LOCAL_WRITE;
  if (p & IT_PRIV_REMOTE_READ) a |= RNICPI_ACCESS_REMOTE_READ;
  if (p & IT_PRIV_REMOTE_WRITE) a |= RNICPI_ACCESS_REMOTE_WRITE;
  if (p & IT_PRIV_ATOMIC) a |= RNICPI_ACCESS_ATOMIC;
  return a;
}

static it_status_t
check_privs(ual_ia_t *ia, it_mem_priv_t privs)
{
  if ((privs & ~IT_PRIV_ALL) != 0)
    return ual_fail(IT_ERR_INVALID_PRIVS, "privileges 0x%x have bits outside IT_PRIV_ALL", (unsigned) privs);
  if ((privs & IT_PRIV_ATOMIC) && !(ia->caps.features & RNICPI_CAP_ATOMICS))
    return ual_fail(IT_ERR_INVALID_PRIVS, "IT_PRIV_ATOMIC asked but IA '%s' has no atomics", ia->iface->name);
  return IT_SUCCESS;
}

it_status_t
it_lmr_create21(it_pz_handle_t pz_handle, void *addr, it_iobl_t *iobl, it_length_t length,
                it_addr_mode_t addr_mode, it_mem_priv_t privs, it_lmr_flag_t flags,
                uint32_t shared_id, it_lmr_handle_t *lmr_handle, it_rmr_context_t *rmr_context)
{
  it_status_t st = IT_SUCCESS;
  g_rec_mutex_lock(&ual_lock);
  ual_pz_t *pz = ual_pz_get(pz_handle);
  if (pz == NULL) {
    st = ual_fail(IT_ERR_INVALID_PZ, "it_lmr_create: %p is not a live PZ handle", (void *) pz_handle);
    goto out;
  }
  ual_ia_t *ia = pz->obj.ia;
  if (iobl != NULL) {
    st = ual_fail(IT_ERR_OP_NOT_SUPPORTED, "I/O buffer list registration (privileged) is not built "
                  "for IA '%s'; register a virtual address range instead", ia->iface->name);
    goto out;
  }
  if (addr == NULL) {
    st = ual_fail(IT_ERR_INVALID_ADDRESS, "it_lmr_create: addr is NULL");
    goto out;
  }
  if (length == 0) {
    st = ual_fail(IT_ERR_INVALID_LENGTH, "it_lmr_create: length is 0");
    goto out;
  }
  if (length > ia->caps.max_mr_size || (uintptr_t) addr + length < (uintptr_t) addr) {
    st = ual_fail(IT_ERR_RESOURCE_LMR_LENGTH, "a region of %" G_GUINT64_FORMAT " bytes exceeds the "
                  "%" G_GUINT64_FORMAT " IA '%s' can register, or wraps the address space",
                  (guint64) length, ia->caps.max_mr_size, ia->iface->name);
    goto out;
  }
  if (addr_mode != IT_ADDR_MODE_ABSOLUTE && addr_mode != IT_ADDR_MODE_RELATIVE) {
    st = ual_fail(IT_ERR_INVALID_ADDR_MODE, "address mode %d is neither absolute nor relative", (int) addr_mode);
    goto out;
  }
  if (addr_mode == IT_ADDR_MODE_RELATIVE && !(ia->caps.features & RNICPI_CAP_ZERO_BASED)) {
    st = ual_fail(IT_ERR_INVALID_ADDR_MODE, "IA '%s' has no relative (zero-based) addressing", ia->iface->name);
    goto out;
  }
  if ((st = check_privs(ia, privs)) != IT_SUCCESS)
    goto out;
  const it_lmr_flag_t known = IT_LMR_FLAG_NONE | IT_LMR_FLAG_SHARED | IT_LMR_FLAG_NONCOHERENT |
                              IT_LMR_FLAG_NON_SHAREABLE;
  if ((flags & ~known) != 0 || ((flags & IT_LMR_FLAG_SHARED) && (flags & IT_LMR_FLAG_NON_SHAREABLE))) {
    st = ual_fail(IT_ERR_INVALID_FLAGS, "LMR flags 0x%x: unknown bits, or SHARED with NON_SHAREABLE",
                  (unsigned) flags);
    goto out;
  }
  if (lmr_handle == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_lmr_create: lmr_handle is NULL");
    goto out;
  }

  ual_lmr_t *lmr = g_new0(ual_lmr_t, 1);
  char *why = NULL;
  rnicpi_status_t rs = kal_pin(addr, length, &lmr->pin, &why);
  if (rs != RNICPI_OK) {
    g_log(UAL_LOG, G_LOG_LEVEL_MESSAGE, "it_lmr_create: %s", why);
    st = ual_fail(IT_ERR_RESOURCES, "%s", why);
    g_free(why);
    g_free(lmr);
    goto out;
  }
  rnicpi_mr_attr_t a = {
    .addr = addr, .length = length,
    .iova = addr_mode == IT_ADDR_MODE_RELATIVE ? 0 : (uint64_t) (uintptr_t) addr,
    .access = ual_access_of(ia, privs),
  };
  uint64_t *pages = NULL;
  if (ia->caps.features & RNICPI_CAP_PAGE_LIST) {
    pages = g_new(uint64_t, lmr->pin->num_pages);
    for (size_t i = 0; i < lmr->pin->num_pages; i++)
      pages[i] = lmr->pin->first_page + i * lmr->pin->page_size;
    a.page_size = lmr->pin->page_size;
    a.num_pages = lmr->pin->num_pages;
    a.pages = pages;
  }
  rs = ia->prov->mem->mr_reg(pz->pd, &a, &lmr->mr);
  g_free(pages);
  if (rs != RNICPI_OK) {
    kal_unpin(lmr->pin);
    g_free(lmr);
    st = ual_fail(IT_ERR_RESOURCES, "provider '%s' could not register %" G_GUINT64_FORMAT " bytes at %p: %s",
                  ia->prov->name, (guint64) length, addr, rnicpi_status_message(rs));
    goto out;
  }
  lmr->pz = pz;
  lmr->addr = addr;
  lmr->length = length;
  lmr->addr_mode = addr_mode;
  lmr->privs = privs;
  lmr->flags = flags;
  lmr->shared_id = shared_id;
  ual_handle_alloc(&lmr->obj, IT_HANDLE_TYPE_LMR, ia);
  pz->nref++;
  ia->children = g_list_prepend(ia->children, lmr);
  *lmr_handle = UAL_HANDLE(&lmr->obj, it_lmr_handle_t);
  if (rmr_context != NULL)
    *rmr_context = lmr->mr->rkey;
out:
  g_rec_mutex_unlock(&ual_lock);
  return st;
}

it_status_t
it_lmr_create20(it_pz_handle_t pz_handle, void *addr, it_length_t length, it_addr_mode_t addr_mode,
                it_mem_priv_t privs, it_lmr_flag_t flags, uint32_t shared_id,
                it_lmr_handle_t *lmr_handle, it_rmr_context_t *rmr_context)
{
  return it_lmr_create21(pz_handle, addr, NULL, length, addr_mode, privs, flags, shared_id,
                         lmr_handle, rmr_context);
}

it_status_t
it_lmr_create10(it_pz_handle_t pz_handle, void *addr, it_length_t length, it_mem_priv_t privs,
                it_lmr_flag_t flags, uint32_t shared_id, it_lmr_handle_t *lmr_handle,
                it_rmr_context_t *rmr_context)
{
  return it_lmr_create21(pz_handle, addr, NULL, length, IT_ADDR_MODE_ABSOLUTE, privs, flags,
                         shared_id, lmr_handle, rmr_context);
}

void
ual_lmr_destroy(ual_lmr_t *lmr)
{
  if (lmr->obj.handle != 0)
    ual_handle_release(&lmr->obj);
  if (lmr->mr != NULL)
    lmr->obj.ia->prov->mem->mr_dereg(lmr->mr);
  kal_unpin(lmr->pin);
  lmr->pz->nref--;
  g_free(lmr);
}

it_status_t
it_lmr_free(it_lmr_handle_t lmr_handle)
{
  g_rec_mutex_lock(&ual_lock);
  ual_lmr_t *lmr = ual_lmr_get(lmr_handle);
  if (lmr == NULL) {
    g_rec_mutex_unlock(&ual_lock);
    return ual_fail(IT_ERR_INVALID_LMR, "it_lmr_free: %p is not a live LMR handle", (void *) lmr_handle);
  }
  /* The provider knows whether a window is still bound to the region
   * (a peer's Send with Invalidate may have just freed it). */
  rnicpi_status_t rs = lmr->obj.ia->prov->mem->mr_dereg(lmr->mr);
  if (rs == RNICPI_EBUSY) {
    g_rec_mutex_unlock(&ual_lock);
    return ual_fail(IT_ERR_LMR_BUSY, "LMR %p still has an RMR linked to it; unlink or free the RMR first",
                    (void *) lmr_handle);
  }
  lmr->mr = NULL;
  lmr->obj.ia->children = g_list_remove(lmr->obj.ia->children, lmr);
  ual_lmr_destroy(lmr);
  g_rec_mutex_unlock(&ual_lock);
  return IT_SUCCESS;
}

it_status_t
it_lmr_query(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask, it_lmr_param_t *params)
{
  ual_lmr_t *lmr = ual_lmr_get(lmr_handle);
  if (lmr == NULL)
    return ual_fail(IT_ERR_INVALID_LMR, "it_lmr_query: %p is not a live LMR handle", (void *) lmr_handle);
  if ((mask & ~0x7fffu) != 0)
    return ual_fail(IT_ERR_INVALID_MASK, "it_lmr_query: mask 0x%x has unknown bits", (unsigned) mask);
  if (params == NULL)
    return ual_fail(IT_ERR_FAULT, "it_lmr_query: params is NULL");
  memset(params, 0, sizeof(*params));
  params->ia = UAL_HANDLE(&lmr->obj.ia->obj, it_ia_handle_t);
  params->pz = UAL_HANDLE(&lmr->pz->obj, it_pz_handle_t);
  params->addr = lmr->addr;
  params->length = lmr->length;
  params->privs = lmr->privs;
  params->flags = lmr->flags;
  params->shared_id = lmr->shared_id;
  params->rmr_context = lmr->mr->rkey;
  params->actual_addr = (void *) lmr->pin->first_page;
  params->actual_length = lmr->pin->bytes;
  params->addr_mode = lmr->addr_mode;
  params->linked = IT_TRUE;
  params->iobl_num_elts = 0;
  params->iobl_type = 0;
  return IT_SUCCESS;
}

it_status_t
it_lmr_modify(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask, const it_lmr_param_t *params)
{
  it_status_t st = IT_SUCCESS;
  g_rec_mutex_lock(&ual_lock);
  ual_lmr_t *lmr = ual_lmr_get(lmr_handle);
  if (lmr == NULL) {
    st = ual_fail(IT_ERR_INVALID_LMR, "it_lmr_modify: %p is not a live LMR handle", (void *) lmr_handle);
    goto out;
  }
  if (mask != IT_LMR_PARAM_MEM_PRIV) {
    st = ual_fail(IT_ERR_INVALID_MASK, "it_lmr_modify: mask 0x%x; only IT_LMR_PARAM_MEM_PRIV can change "
                  "(register anew to move or resize)", (unsigned) mask);
    goto out;
  }
  if (params == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_lmr_modify: params is NULL");
    goto out;
  }
  if ((st = check_privs(lmr->obj.ia, params->privs)) != IT_SUCCESS)
    goto out;
  rnicpi_status_t rs = lmr->obj.ia->prov->mem->mr_modify(lmr->mr, ual_access_of(lmr->obj.ia, params->privs));
  if (rs != RNICPI_OK) {
    st = ual_fail(ual_map_status(rs), "provider '%s' could not change the rights of LMR %p: %s",
                  lmr->obj.ia->prov->name, (void *) lmr_handle, rnicpi_status_message(rs));
    goto out;
  }
  lmr->privs = params->privs;
out:
  g_rec_mutex_unlock(&ual_lock);
  return st;
}

/* Memory of every provider here is cache coherent with the CPU: making
 * data visible either way is a full fence. */
static it_status_t
sync_segments(const char *fn, const it_lmr_triplet_t *segs, size_t n)
{
  if (n > 0 && segs == NULL)
    return ual_fail(IT_ERR_INVALID_NUM_SEGMENTS, "%s: %zu segments but the list is NULL", fn, n);
  for (size_t i = 0; i < n; i++)
    if (ual_lmr_get(segs[i].lmr) == NULL)
      return ual_fail(IT_ERR_INVALID_LMR, "%s: segment %zu names %p, not a live LMR", fn, i, (void *) segs[i].lmr);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return IT_SUCCESS;
}

it_status_t
it_lmr_flush_to_mem(const it_lmr_triplet_t *local_segments, size_t num_segments)
{
  return sync_segments("it_lmr_flush_to_mem", local_segments, num_segments);
}

it_status_t
it_lmr_refresh_from_mem(const it_lmr_triplet_t *local_segments, size_t num_segments)
{
  return sync_segments("it_lmr_refresh_from_mem", local_segments, num_segments);
}
