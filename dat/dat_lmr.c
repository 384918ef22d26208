/*
 * dat/: local memory regions (virtual and shared virtual memory, and
 * another LMR's memory).  The lmr_context a DAT consumer puts in its LMR
 * triplets is the LMR's cell number, so a post finds the IT-API region in
 * one step and refuses a freed one; the rmr_context is IT-API's, which
 * must fit DAT's 32 bits (it is an STag or an rkey on every IT-API provider
 * of this stack).
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#include <string.h>

static it_mem_priv_t
privs_of(DAT_MEM_PRIV_FLAGS p)
{
  it_mem_priv_t out = IT_PRIV_NONE;
  if (p & DAT_MEM_PRIV_LOCAL_READ_FLAG)
    out |= IT_PRIV_LOCAL_READ;
  if (p & DAT_MEM_PRIV_LOCAL_WRITE_FLAG)
    out |= IT_PRIV_LOCAL_WRITE;
  if (p & DAT_MEM_PRIV_REMOTE_READ_FLAG)
    out |= IT_PRIV_REMOTE_READ;
  if (p & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
    out |= IT_PRIV_REMOTE_WRITE;
  if (p & DAT_IB_MEM_PRIV_REMOTE_ATOMIC)
    out |= IT_PRIV_ATOMIC;
  /* DAT 2.0 6.7.1: local read is always granted. */
  return out | IT_PRIV_LOCAL_READ;
}

static DAT_RETURN
lmr_create_on_held(DAT_IA_HANDLE ia_handle, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region,
                   DAT_VLEN length, DAT_PZ_HANDLE pz_handle, DAT_MEM_PRIV_FLAGS privs,
                   DAT_VA_TYPE va_type, DAT_LMR_HANDLE *lmr_handle, DAT_LMR_CONTEXT *lmr_context,
                   DAT_RMR_CONTEXT *rmr_context, DAT_VLEN *registered_length,
                   DAT_VADDR *registered_address)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  if (mem_type != DAT_MEM_TYPE_VIRTUAL && mem_type != DAT_MEM_TYPE_SHARED_VIRTUAL &&
      mem_type != DAT_MEM_TYPE_LMR)
    return DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
  /* DAT 2.0 6.7.1.1: shared virtual memory is named by its address in this
   * process and a cookie every process sharing it gives.  IT-API's shared
   * registration id is 32 bits: the cookie's 40 bytes are folded into it
   * (FNV-1a).  An id is a hint to share a registration of the same pages;
   * every IT-API provider here registers each LMR on its own, so two
   * cookies folding alike cost nothing. */
  void *addr = mem_type == DAT_MEM_TYPE_SHARED_VIRTUAL ? region.for_shared_memory.virtual_address
                                                      : region.for_va;
  /* DAT 2.0 6.7.1.1: an LMR's memory registered again, in another zone
   * or with other privileges, its length ignored.  IT-API has no call
   * that registers a region from another: the same pages are registered
   * anew, so the new LMR has keys of its own and outlives the first. */
  if (mem_type == DAT_MEM_TYPE_LMR) {
    datx_cell_t *held = datx_cell_hold(region.for_lmr_handle, DATX_LMR);
    const datx_lmr_t *from = held != NULL ? held->object : NULL;
    gboolean ours = from != NULL && from->ia == ia;
    if (ours) {
      addr = from->addr;
      length = from->length;
    }
    if (held != NULL)
      datx_cell_put(held);
    if (!ours)
      return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
  }
  uint32_t shared_id = 0;
  if (mem_type == DAT_MEM_TYPE_SHARED_VIRTUAL) {
    if (region.for_shared_memory.shared_memory_id == NULL)
      return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    shared_id = 2166136261u;
    for (size_t i = 0; i < DAT_LMR_COOKIE_SIZE; i++)
      shared_id = (shared_id ^ (unsigned char) (*region.for_shared_memory.shared_memory_id)[i]) *
                  16777619u;
  }
  if (va_type != DAT_VA_TYPE_VA)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7);
  /* The LMR uses its zone until freed: a racing dat_pz_free is refused,
   * or retired the zone first and this create is refused. */
  datx_pz_t *pz = datx_cell_use(pz_handle, DATX_PZ);
  if (pz == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  DAT_RETURN ret = DAT_SUCCESS;
  if (pz->ia != ia)
    ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  else if (addr == NULL || length == 0 || length > UINT32_MAX)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  else if (lmr_handle == NULL)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
  if (ret != DAT_SUCCESS)
    goto err_unuse;

  datx_lmr_t *lmr = g_new0(datx_lmr_t, 1);
  lmr->ia = ia;
  lmr->pz = pz;
  lmr->region = region;
  lmr->mem_type = mem_type;
  lmr->addr = addr;
  lmr->length = length;
  lmr->privs = privs;
  it_rmr_context_t ctx = 0;
  it_lmr_flag_t flags = mem_type == DAT_MEM_TYPE_SHARED_VIRTUAL ? IT_LMR_FLAG_SHARED
                                                                : IT_LMR_FLAG_NONE;
  it_status_t st = it_lmr_create(pz->it, addr, NULL, (it_length_t) length, IT_ADDR_MODE_ABSOLUTE,
                                 privs_of(privs), flags, shared_id, &lmr->it, &ctx);
  if (st != IT_SUCCESS) {
    g_message("DAT LMR of %llu bytes at %p on %s: it_lmr_create failed: %s (%s)",
              (unsigned long long) length, addr, ia->provider->it_name,
              itx_status_name(st), itx_error_detail() != NULL ? itx_error_detail() : "");
    ret = datx_status(st, DAT_INVALID_HANDLE_PZ);
    goto err_free;
  }
  if (ctx > UINT32_MAX) {
    g_warning("IT-API interface %s gave region context 0x%llx, wider than DAT's 32-bit "
              "rmr_context: the region is refused", ia->provider->it_name,
              (unsigned long long) ctx);
    ret = DATX_ERR(DAT_INTERNAL_ERROR, 0);
    goto err_lmr;
  }
  lmr->rmr_context = (DAT_RMR_CONTEXT) ctx;
  lmr->cell = datx_cell_new(&ia->provider->dat, DATX_LMR, lmr, ia);
  if (lmr->cell == NULL) {
    ret = DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    goto err_lmr;
  }
  datx_cell_set_it(lmr->cell, (uint64_t) (uintptr_t) lmr->it);
  *lmr_handle = lmr->cell;
  if (lmr_context != NULL)
    *lmr_context = lmr->cell->id;
  if (rmr_context != NULL)
    *rmr_context = lmr->rmr_context;
  if (registered_length != NULL)
    *registered_length = length;
  if (registered_address != NULL)
    *registered_address = (DAT_VADDR) (uintptr_t) addr;
  return DAT_SUCCESS;

err_lmr:
  it_lmr_free(lmr->it);
err_free:
  g_free(lmr);
err_unuse:
  datx_cell_unuse(pz->cell);
  return ret;
}

DAT_RETURN
datx_lmr_create(DAT_IA_HANDLE ia_handle, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region,
                DAT_VLEN length, DAT_PZ_HANDLE pz_handle, DAT_MEM_PRIV_FLAGS privs,
                DAT_VA_TYPE va_type, DAT_LMR_HANDLE *lmr_handle, DAT_LMR_CONTEXT *lmr_context,
                DAT_RMR_CONTEXT *rmr_context, DAT_VLEN *registered_length,
                DAT_VADDR *registered_address)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA,
                   lmr_create_on_held(ia_handle, mem_type, region, length, pz_handle, privs, va_type, lmr_handle, lmr_context, rmr_context, registered_length, registered_address));
}

static DAT_RETURN
lmr_query_on_held(DAT_LMR_HANDLE lmr_handle, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *param)
{
  datx_lmr_t *lmr = datx_cell_get(lmr_handle, DATX_LMR);
  if (lmr == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (mask & DAT_LMR_FIELD_IA_HANDLE)
    param->ia_handle = lmr->ia->cell;
  if (mask & DAT_LMR_FIELD_MEM_TYPE)
    param->mem_type = lmr->mem_type;
  if (mask & DAT_LMR_FIELD_REGION_DESC)
    param->region_desc = lmr->region;
  if (mask & DAT_LMR_FIELD_LENGTH)
    param->length = lmr->length;
  if (mask & DAT_LMR_FIELD_PZ_HANDLE)
    param->pz_handle = lmr->pz->cell;
  if (mask & DAT_LMR_FIELD_MEM_PRIV)
    param->mem_priv = lmr->privs;
  if (mask & DAT_LMR_FIELD_VA_TYPE)
    param->va_type = DAT_VA_TYPE_VA;
  if (mask & DAT_LMR_FIELD_LMR_CONTEXT)
    param->lmr_context = lmr->cell->id;
  if (mask & DAT_LMR_FIELD_RMR_CONTEXT)
    param->rmr_context = lmr->rmr_context;
  if (mask & DAT_LMR_FIELD_REGISTERED_SIZE)
    param->registered_size = lmr->length;
  if (mask & DAT_LMR_FIELD_REGISTERED_ADDRESS)
    param->registered_address = (DAT_VADDR) (uintptr_t) lmr->addr;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_lmr_query(DAT_LMR_HANDLE lmr_handle, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *param)
{
  DATX_RETURN_HELD(lmr_handle, DATX_LMR, lmr_query_on_held(lmr_handle, mask, param));
}

DAT_RETURN
datx_lmr_free(DAT_LMR_HANDLE lmr_handle)
{
  datx_cell_t *cell = datx_cell_hold(lmr_handle, DATX_LMR);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
  datx_lmr_t *lmr = cell->object;
  it_status_t st = it_lmr_free(lmr->it);
  if (st == IT_SUCCESS)
    datx_cell_set_it(cell, 0);
  datx_cell_put(cell);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_LMR);
  /* A post resolving its lmr_context holds the LMR: wait it out. */
  if (datx_cell_retire_wait(cell) != DATX_RETIRED)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
  datx_cell_unuse(lmr->pz->cell);
  datx_cell_kill(lmr->cell, lmr->ia);
  g_free(lmr);
  return DAT_SUCCESS;
}

/* DAT 2.0 dat_lmr_sync_rdma_read/write: make the memory of the triplets
 * coherent between the consumer and RDMA.  Every IT-API interface of this
 * stack registers memory coherent with the CPU (no LMR is made with
 * IT_LMR_FLAG_NONCOHERENT), so there is nothing to flush: the call checks
 * the triplets and returns. */
static DAT_RETURN
lmr_sync_on_held(DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET *iov, DAT_VLEN n)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  if (n > 0 && iov == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  for (DAT_VLEN i = 0; i < n; i++) {
    if (iov[i].segment_length == 0)
      continue;
    datx_cell_t *cell = datx_lmr_hold_context(iov[i].lmr_context);
    const datx_lmr_t *lmr = cell != NULL ? cell->object : NULL;
    uintptr_t start = lmr != NULL ? (uintptr_t) lmr->addr : 0;
    gboolean inside = lmr != NULL && lmr->ia == ia && iov[i].virtual_address >= start &&
                      iov[i].virtual_address - start <= lmr->length &&
                      iov[i].segment_length <= lmr->length - (iov[i].virtual_address - start);
    if (cell != NULL)
      datx_cell_put(cell);
    if (!inside)
      return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  }
  return DAT_SUCCESS;
}

DAT_RETURN
datx_lmr_sync_rdma_read(DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET *iov, DAT_VLEN n)
{
  DATX_RETURN_HELD(ia_handle, DATX_IA, lmr_sync_on_held(ia_handle, iov, n));
}

DAT_RETURN
datx_lmr_sync_rdma_write(DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET *iov, DAT_VLEN n)
{
  DATX_RETURN_HELD(ia_handle, DATX_IA, lmr_sync_on_held(ia_handle, iov, n));
}
