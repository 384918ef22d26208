/*
 * Local memory regions: pinning through the kAL, registration through the
 * provider, the three bindings of it_lmr_create; I/O address mapping and
 * I/O buffer list registration; unlinked LMRs (IT-API 2.1).
 *
 * Pinning.  Every registration (it_lmr_create in its three bindings, an
 * I/O buffer list, it_mem_map, it_lmr_link, and it_lmr_modify adding a
 * write right) first has the kAL check that its pages are mapped, and
 * writable when a write right is granted, as the kernel's get_user_pages()
 * does for an RDMA driver: a read-only page with IT_PRIV_REMOTE_WRITE is
 * IT_ERR_ACCESS at registration, never a peer's Write faulting this
 * process later.  The pages are locked and accounted only for a provider
 * without RNICPI_CAP_NO_PIN (RNIC-PI 1.8), whose device needs them
 * resident; the others register 1 GiB without touching a page of it.
 *
 * Privilege.  IT-API reserves I/O buffer lists, it_mem_map and unlinked
 * LMRs for "privileged" consumers.  Here every consumer is privileged:
 * the provider checks keys, domains, bounds and rights on every access,
 * and an I/O address is nothing but a virtual address of the caller's own
 * address space, pinned by it_mem_map, so none of these calls reaches
 * memory the caller could not register anyway.  What IT-API gates per EP
 * stays gated: it_lmr_link and it_lmr_unlink need an EP created with
 * priv_ops_enable (IT_ERR_PRIV_OPS_UNAVAILABLE otherwise).
 *
 * I/O buffer lists.  it_mem_map pins a range and returns its virtual
 * address as its I/O address; an I/O buffer list (page, block or
 * variable-length list, with a first-byte offset) is translated back into
 * one virtual range, which must lie inside one mapping of the IA and be
 * contiguous (element i + 1 starts where element i ends): emul and every
 * provider here register a virtually contiguous range.  A discontiguous
 * list is refused with IT_ERR_INVALID_IOBL.
 *
 * Unlinked LMRs are RNIC-PI 1.4 fast-register regions: mr_alloc with a
 * capacity in elements, it_lmr_link posts RNICPI_WR_FAST_REG (new context
 * at post, IT_LMR_LINK_CMPL_EVENT), it_lmr_unlink a Local Invalidate of
 * the region's key.  A link pins its range until the next link or the free.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <unistd.h>

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
  if ((privs & IT_PRIV_ATOMIC) && !(ia->caps.features & RNICPI_CAP_ATOMICS)) {
    char advice[UAL_ADVICE_LEN];
    return ual_fail(IT_ERR_INVALID_PRIVS, "IT_PRIV_ATOMIC asked but IA '%s' has no atomics%s", ia->iface->name,
                    ual_cap_advice(ia, RNICPI_CAP_ATOMICS, advice));
  }
  return IT_SUCCESS;
}

/* The privileges that let the device write the memory: a registration
 * with any of them needs writable pages (the kernel pins such a region
 * with FOLL_WRITE; ib_umem_get). */
#define WRITE_PRIVS (IT_PRIV_LOCAL_WRITE | IT_PRIV_REMOTE_WRITE | IT_PRIV_ATOMIC)

/* How to take memory registered on @ia with @privs: locked and accounted
 * only where the device needs pinned pages (RNIC-PI 1.8). */
static uint32_t
pin_flags(const ual_ia_t *ia, it_mem_priv_t privs)
{
  return ((ia->caps.features & RNICPI_CAP_NO_PIN) ? 0 : KAL_PIN_LOCK) |
         ((privs & WRITE_PRIVS) ? KAL_PIN_WRITE : 0);
}

/* The write privileges of @privs by name, e.g. "IT_PRIV_REMOTE_WRITE". */
static char *
write_privs_name(it_mem_priv_t privs)
{
  GString *s = g_string_new(NULL);
  if (privs & IT_PRIV_LOCAL_WRITE) g_string_append(s, " | IT_PRIV_LOCAL_WRITE");
  if (privs & IT_PRIV_REMOTE_WRITE) g_string_append(s, " | IT_PRIV_REMOTE_WRITE");
  if (privs & IT_PRIV_ATOMIC) g_string_append(s, " | IT_PRIV_ATOMIC");
  return g_string_free(g_string_erase(s, 0, MIN(s->len, 3)), FALSE);
}

/* The IT-API failure of @fn for kAL's refusal @rs (sentence @why) to take
 * @len bytes at @addr with @privs. */
static it_status_t
pin_refused(const char *fn, rnicpi_status_t rs, const char *why, const void *addr, uint64_t len,
            it_mem_priv_t privs)
{
  if (rs == RNICPI_ERANGE)
    return ual_fail(IT_ERR_INVALID_ADDRESS, "%s: %" G_GUINT64_FORMAT " bytes at %p cannot be registered: %s; "
                    "register memory the process has mapped", fn, (guint64) len, addr, why);
  if (rs != RNICPI_EACCES)
    return ual_fail(IT_ERR_RESOURCES, "%s: %s", fn, why);
  if ((privs & WRITE_PRIVS) && kal_mem_check(addr, len, false, NULL) == RNICPI_OK) {
    g_autofree char *w = write_privs_name(privs);
    return ual_fail(IT_ERR_ACCESS, "%s: %" G_GUINT64_FORMAT " bytes at %p asked with %s, but %s; a device "
                    "writes memory registered with that right (the kernel refuses to pin such memory "
                    "too): register it with read privileges only, or map it writable", fn, (guint64) len,
                    addr, w, why);
  }
  return ual_fail(IT_ERR_ACCESS, "%s: %" G_GUINT64_FORMAT " bytes at %p cannot be registered: %s; make the "
                  "memory readable (mprotect) first", fn, (guint64) len, addr, why);
}

it_status_t
ual_check_addr_mode(const ual_ia_t *ia, it_addr_mode_t mode)
{
  if (mode != IT_ADDR_MODE_ABSOLUTE && mode != IT_ADDR_MODE_RELATIVE)
    return ual_fail(IT_ERR_INVALID_ADDR_MODE, "address mode %d is neither IT_ADDR_MODE_ABSOLUTE nor "
                    "IT_ADDR_MODE_RELATIVE", (int) mode);
  if (mode == IT_ADDR_MODE_RELATIVE && !(ia->caps.features & RNICPI_CAP_ZERO_BASED))
    return ual_fail(IT_ERR_INVALID_ADDR_MODE, "IA '%s' has no relative (zero-based) addressing "
                    "(it_ia_info_t.addr_mode_relative_support); use IT_ADDR_MODE_ABSOLUTE", ia->iface->name);
  return IT_SUCCESS;
}

/* The mapping of @ia holding [a, a + len), or NULL. */
static ual_map_t *
map_holding(ual_ia_t *ia, uintptr_t a, uint64_t len)
{
  for (GList *l = ia->maps; l != NULL; l = l->next) {
    ual_map_t *m = l->data;
    if (a >= m->addr && len <= m->len && a - m->addr <= m->len - len)
      return m;
  }
  return NULL;
}

/* Translate @iobl (with @length bytes from its first-byte offset) into one
 * virtual range: its start in *start, its elements in *nelts. */
static it_status_t
iobl_range(ual_ia_t *ia, const it_iobl_t *iobl, it_length_t length, uintptr_t *start, size_t *nelts,
           const char *fn)
{
  size_t n = iobl->num_elts;
  gboolean ce = iobl->iobl_type == IT_IOBL_PAGE_LIST || iobl->iobl_type == IT_IOBL_BLOCK_LIST;
  if (!ce && iobl->iobl_type != IT_IOBL_VE_PAGE_LIST)
    return ual_fail(IT_ERR_INVALID_IOBL, "%s: I/O buffer list type %d is not PAGE_LIST, BLOCK_LIST or "
                    "VE_PAGE_LIST", fn, (int) iobl->iobl_type);
  if (n == 0 || (ce ? (void *) iobl->list.ce_list.list_elt : (void *) iobl->list.ve_list.list_elt) == NULL)
    return ual_fail(IT_ERR_INVALID_IOBL, "%s: the I/O buffer list has no elements", fn);
  it_length_t ce_len = iobl->list.ce_list.elt_len;
  if (ce && (ce_len == 0 || (iobl->iobl_type == IT_IOBL_PAGE_LIST && (ce_len & (ce_len - 1)) != 0)))
    return ual_fail(IT_ERR_INVALID_IOBL, "%s: element length %" G_GUINT64_FORMAT " is 0, or not a power of two "
                    "in a page list", fn, (guint64) ce_len);
  uintptr_t first = 0, next = 0;
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    uintptr_t a = (uintptr_t) (ce ? iobl->list.ce_list.list_elt[i] : iobl->list.ve_list.list_elt[i].io_addr);
    it_length_t l = ce ? ce_len : iobl->list.ve_list.list_elt[i].elt_len;
    if (l == 0 || a + l < a)
      return ual_fail(IT_ERR_INVALID_IOBL, "%s: element %zu is empty or wraps the address space", fn, i);
    if (iobl->iobl_type == IT_IOBL_PAGE_LIST && (a & (ce_len - 1)) != 0)
      return ual_fail(IT_ERR_INVALID_IOBL, "%s: page %zu at %p is not aligned to the page size %" G_GUINT64_FORMAT,
                      fn, i, (void *) a, (guint64) ce_len);
    if (i == 0)
      first = a;
    else if (a != next)
      return ual_fail(IT_ERR_INVALID_IOBL, "%s: element %zu at %p does not follow element %zu (ends at %p); this "
                      "stack registers only I/O buffer lists contiguous in the I/O address space", fn, i,
                      (void *) a, i - 1, (void *) next);
    next = a + l;
    total += l;
  }
  it_length_t first_len = ce ? ce_len : iobl->list.ve_list.list_elt[0].elt_len;
  if (iobl->fbo >= first_len)
    return ual_fail(IT_ERR_INVALID_IOBL, "%s: first-byte offset %" G_GUINT64_FORMAT " is not inside the first "
                    "element (%" G_GUINT64_FORMAT " bytes)", fn, (guint64) iobl->fbo, (guint64) first_len);
  if (length == 0)
    return ual_fail(IT_ERR_INVALID_LENGTH, "%s: length is 0", fn);
  if (length > total - iobl->fbo)
    return ual_fail(IT_ERR_INVALID_LENGTH, "%s: %" G_GUINT64_FORMAT " bytes from offset %" G_GUINT64_FORMAT
                    " exceed the %" G_GUINT64_FORMAT " bytes of the I/O buffer list", fn, (guint64) length,
                    (guint64) iobl->fbo, (guint64) total);
  uintptr_t a = first + iobl->fbo;
  if (map_holding(ia, a, length) == NULL)
    return ual_fail(IT_ERR_INVALID_IOBL, "%s: %" G_GUINT64_FORMAT " bytes at I/O address %p are not inside one "
                    "range mapped by it_mem_map on IA '%s'", fn, (guint64) length, (void *) a, ia->iface->name);
  *start = a;
  *nelts = n;
  return IT_SUCCESS;
}

static const it_lmr_flag_t known_lmr_flags = IT_LMR_FLAG_NONE | IT_LMR_FLAG_SHARED | IT_LMR_FLAG_NONCOHERENT |
                                             IT_LMR_FLAG_NON_SHAREABLE;

static it_status_t
check_flags(it_lmr_flag_t flags)
{
  if ((flags & ~known_lmr_flags) != 0 || ((flags & IT_LMR_FLAG_SHARED) && (flags & IT_LMR_FLAG_NON_SHAREABLE)))
    return ual_fail(IT_ERR_INVALID_FLAGS, "LMR flags 0x%x: unknown bits, or SHARED with NON_SHAREABLE",
                    (unsigned) flags);
  return IT_SUCCESS;
}

static size_t
kal_page_size(void)
{
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t) p : 4096;
}

/* Page addresses of @pin for a provider that wants them (g_free it). */
static uint64_t *
pin_pages(ual_ia_t *ia, const kal_pin_t *pin)
{
  if (!(ia->caps.features & RNICPI_CAP_PAGE_LIST))
    return NULL;
  uint64_t *pages = g_new(uint64_t, pin->num_pages);
  for (size_t i = 0; i < pin->num_pages; i++)
    pages[i] = pin->first_page + i * pin->page_size;
  return pages;
}

it_status_t
it_lmr_create21(it_pz_handle_t pz_handle, void *addr, it_iobl_t *iobl, it_length_t length,
                it_addr_mode_t addr_mode, it_mem_priv_t privs, it_lmr_flag_t flags,
                uint32_t shared_id, it_lmr_handle_t *lmr_handle, it_rmr_context_t *rmr_context)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_pz_t *pz = ual_pz_get(pz_handle);
  if (pz == NULL) {
    st = ual_fail(IT_ERR_INVALID_PZ, "it_lmr_create: %p is not a live PZ handle", (void *) pz_handle);
    goto unlock;
  }
  ual_ia_t *ia = pz->obj.ia;
  if (iobl != NULL) {
    /* The list replaces addr: the region is the range it translates to. */
    uintptr_t start;
    size_t nelts;
    if ((st = iobl_range(ia, iobl, length, &start, &nelts, "it_lmr_create")) != IT_SUCCESS)
      goto unlock;
    addr = (void *) start;
  }
  if (addr == NULL) {
    st = ual_fail(IT_ERR_INVALID_ADDRESS, "it_lmr_create: addr is NULL");
    goto unlock;
  }
  if (length == 0) {
    st = ual_fail(IT_ERR_INVALID_LENGTH, "it_lmr_create: length is 0");
    goto unlock;
  }
  if (length > ia->caps.max_mr_size || (uintptr_t) addr + length < (uintptr_t) addr) {
    st = ual_fail(IT_ERR_RESOURCE_LMR_LENGTH, "a region of %" G_GUINT64_FORMAT " bytes exceeds the "
                  "%" G_GUINT64_FORMAT " IA '%s' can register, or wraps the address space",
                  (guint64) length, ia->caps.max_mr_size, ia->iface->name);
    goto unlock;
  }
  if ((st = ual_check_addr_mode(ia, addr_mode)) != IT_SUCCESS)
    goto unlock;
  if ((st = check_privs(ia, privs)) != IT_SUCCESS)
    goto unlock;
  if ((st = check_flags(flags)) != IT_SUCCESS)
    goto unlock;
  if (lmr_handle == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_lmr_create: lmr_handle is NULL");
    goto unlock;
  }

  ual_lmr_t *lmr = g_new0(ual_lmr_t, 1);
  char *why = NULL;
  rnicpi_status_t rs = kal_pin(addr, length, pin_flags(ia, privs), &lmr->pin, &why);
  if (rs != RNICPI_OK) {
    if (rs == RNICPI_ELIMIT || rs == RNICPI_EINVAL)
      g_log(UAL_LOG, G_LOG_LEVEL_MESSAGE, "it_lmr_create: %s", why);
    st = pin_refused("it_lmr_create", rs, why, addr, length, privs);
    g_free(why);
    g_free(lmr);
    goto unlock;
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
    goto unlock;
  }
  lmr->pz = pz;
  lmr->addr = addr;
  lmr->length = length;
  lmr->addr_mode = addr_mode;
  lmr->privs = privs;
  lmr->flags = flags;
  lmr->shared_id = shared_id;
  lmr->iobl = iobl != NULL;
  lmr->iobl_num_elts = iobl != NULL ? iobl->num_elts : 0;
  lmr->iobl_type = iobl != NULL ? iobl->iobl_type : 0;
  lmr->lkey = lmr->mr->lkey;
  if ((st = ual_pz_child_add(&lmr->obj, IT_HANDLE_TYPE_LMR, pz)) != IT_SUCCESS) {
    ia->prov->mem->mr_dereg(lmr->mr);
    kal_unpin(lmr->pin);
    g_free(lmr);
    goto unlock;
  }
  *lmr_handle = UAL_HANDLE(&lmr->obj, it_lmr_handle_t);
  if (rmr_context != NULL)
    *rmr_context = lmr->mr->rkey;
unlock:
  ual_lock_drop();
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

gboolean
ual_lmr_bind_wait(ual_lmr_t *lmr)
{
  /* it_lmr_free marks the LMR and learns from the provider whether it may
   * go, all under the object lock: once this thread has it, the mark is
   * for good or gone.  (Taking the lock inside a read section is allowed:
   * a free drops it before it waits for a grace period.) */
  ual_lock_take();
  ual_lock_drop();
  if (!(g_atomic_int_add(&lmr->binds, 1) & UAL_LMR_FREED))
    return TRUE;
  g_atomic_int_add(&lmr->binds, -1);
  return FALSE;
}

it_status_t
it_lmr_free(it_lmr_handle_t lmr_handle)
{
  ual_lock_take();
  ual_lmr_t *lmr = ual_lmr_get(lmr_handle);
  if (lmr == NULL) {
    ual_lock_drop();
    return ual_fail(IT_ERR_INVALID_LMR, "it_lmr_free: %p is not a live LMR handle", (void *) lmr_handle);
  }
  /* it_rmr_link posts its bind of the region without the object lock:
   * one counted in (ual_lmr_bind_begin) names lmr->mr to the provider, so
   * the region stays until it returns.  From here until the provider's
   * answer below, links that find the mark wait for this decision under
   * the object lock (ual_lmr_bind_wait). */
  if (!g_atomic_int_compare_and_exchange(&lmr->binds, 0, UAL_LMR_FREED)) {
    ual_lock_drop();
    return ual_fail(IT_ERR_LMR_BUSY, "another thread is posting an RMR link to LMR %p; free it after "
                    "it_rmr_link returns and the RMR is unlinked or freed", (void *) lmr_handle);
  }
  /* The provider knows whether a window is still bound to the region
   * (a peer's Send with Invalidate may have just freed it). */
  rnicpi_status_t rs = lmr->obj.ia->prov->mem->mr_dereg(lmr->mr);
  if (rs == RNICPI_EBUSY) {
    __atomic_fetch_and(&lmr->binds, ~UAL_LMR_FREED, __ATOMIC_SEQ_CST);
    ual_lock_drop();
    return ual_fail(IT_ERR_LMR_BUSY, "LMR %p still has an RMR linked to it; unlink or free the RMR first",
                    (void *) lmr_handle);
  }
  /* Posts racing this free read lmr->lkey, never lmr->mr: they post a key
   * that no longer exists, and complete with a protection error. */
  lmr->mr = NULL;
  ual_ia_child_remove(lmr->obj.ia, &lmr->obj);
  ual_obj_retire(&lmr->obj);
  ual_lock_drop();
  return IT_SUCCESS;
}

it_status_t
it_lmr_query(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask, it_lmr_param_t *params)
{
  if ((mask & ~UAL_LMR_PARAMS_KNOWN) != 0)
    return ual_fail(IT_ERR_INVALID_MASK, "it_lmr_query: mask 0x%x has unknown bits", (unsigned) mask);
  if (params == NULL)
    return ual_fail(IT_ERR_FAULT, "it_lmr_query: params is NULL");
  /* Under the object lock: the region (mr, pin) changes with links and
   * goes with it_lmr_free, which both take it. */
  ual_lock_take();
  ual_lmr_t *lmr = ual_lmr_get(lmr_handle);
  if (lmr == NULL) {
    ual_lock_drop();
    return ual_fail(IT_ERR_INVALID_LMR, "it_lmr_query: %p is not a live LMR handle", (void *) lmr_handle);
  }
  memset(params, 0, sizeof(*params));
  params->ia = UAL_HANDLE(&lmr->obj.ia->obj, it_ia_handle_t);
  params->pz = UAL_HANDLE(&lmr->pz->obj, it_pz_handle_t);
  params->addr = lmr->addr;
  params->length = lmr->length;
  params->privs = lmr->privs;
  params->flags = lmr->flags;
  params->shared_id = lmr->shared_id;
  params->rmr_context = lmr->mr->rkey;
  params->actual_addr = lmr->pin != NULL ? (void *) lmr->pin->first_page : NULL;
  params->actual_length = lmr->pin != NULL ? lmr->pin->bytes : 0;
  params->addr_mode = lmr->addr_mode;
  params->linked = !lmr->linkable || lmr->linked ? IT_TRUE : IT_FALSE;
  params->iobl_num_elts = lmr->iobl_num_elts;
  params->iobl_type = lmr->iobl_type;
  ual_lock_drop();
  return IT_SUCCESS;
}

it_status_t
it_lmr_modify(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask, const it_lmr_param_t *params)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_lmr_t *lmr = ual_lmr_get(lmr_handle);
  if (lmr == NULL) {
    st = ual_fail(IT_ERR_INVALID_LMR, "it_lmr_modify: %p is not a live LMR handle", (void *) lmr_handle);
    goto unlock;
  }
  if (mask != IT_LMR_PARAM_MEM_PRIV) {
    st = ual_fail(IT_ERR_INVALID_MASK, "it_lmr_modify: mask 0x%x; only IT_LMR_PARAM_MEM_PRIV can change "
                  "(register anew to move or resize)", (unsigned) mask);
    goto unlock;
  }
  if (params == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_lmr_modify: params is NULL");
    goto unlock;
  }
  if ((st = check_privs(lmr->obj.ia, params->privs)) != IT_SUCCESS)
    goto unlock;
  if ((params->privs & WRITE_PRIVS) && !(lmr->privs & WRITE_PRIVS) && lmr->length > 0) {
    g_autofree char *why = NULL;
    rnicpi_status_t cs = kal_mem_check(lmr->addr, lmr->length, true, &why);
    if (cs != RNICPI_OK) {
      st = pin_refused("it_lmr_modify", cs, why, lmr->addr, lmr->length, params->privs);
      goto unlock;
    }
  }
  rnicpi_status_t rs = lmr->obj.ia->prov->mem->mr_modify(lmr->mr, ual_access_of(lmr->obj.ia, params->privs));
  if (rs != RNICPI_OK) {
    st = ual_fail(ual_map_status(rs), "provider '%s' could not change the rights of LMR %p: %s",
                  lmr->obj.ia->prov->name, (void *) lmr_handle, rnicpi_status_message(rs));
    goto unlock;
  }
  /* it_rmr_link reads the rights without the object lock. */
  __atomic_store_n(&lmr->privs, params->privs, __ATOMIC_RELAXED);
unlock:
  ual_lock_drop();
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

/* ---- I/O address mapping (privileged: see the head of the file) ------- */

it_status_t
it_mem_map(it_ia_handle_t ia_handle, void *vaddr, uint64_t aspace_id, size_t len, it_io_addr_t *io_addr,
           size_t *mapped_len)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ia_t *ia = ual_ia_get(ia_handle);
  if (ia == NULL) {
    st = ual_fail(IT_ERR_INVALID_IA, "it_mem_map: %p is not a live IA handle", (void *) ia_handle);
    goto unlock;
  }
  if (io_addr == NULL || mapped_len == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_mem_map: io_addr or mapped_len is NULL");
    goto unlock;
  }
  if (vaddr == NULL) {
    st = ual_fail(IT_ERR_INVALID_ADDRESS, "it_mem_map: vaddr is NULL");
    goto unlock;
  }
  if (len == 0 || (uintptr_t) vaddr + len < (uintptr_t) vaddr) {
    st = ual_fail(IT_ERR_INVALID_LENGTH, "it_mem_map: length %zu is 0 or wraps the address space", len);
    goto unlock;
  }
  /* A user-space provider reaches its own address space only. */
  if (aspace_id != 0 && aspace_id != (uint64_t) getpid()) {
    st = ual_fail(IT_ERR_NO_PERMISSION, "it_mem_map: address space %" G_GUINT64_FORMAT " is not the caller's "
                  "(0 or its process id %d)", (guint64) aspace_id, (int) getpid());
    goto unlock;
  }
  ual_map_t *m = g_new0(ual_map_t, 1);
  char *why = NULL;
  /* The rights come with the registration of a list; a mapping needs the
   * pages mapped (and locked, where the device needs it). */
  rnicpi_status_t rs = kal_pin(vaddr, len, pin_flags(ia, 0), &m->pin, &why);
  if (rs != RNICPI_OK) {
    st = pin_refused("it_mem_map", rs, why, vaddr, len, 0);
    g_free(why);
    g_free(m);
    goto unlock;
  }
  m->addr = (uintptr_t) vaddr;
  m->len = len;
  ia->maps = g_list_prepend(ia->maps, m);
  *io_addr = (it_io_addr_t) vaddr;
  *mapped_len = len;
unlock:
  ual_lock_drop();
  return st;
}

it_status_t
it_mem_unmap(it_ia_handle_t ia_handle, it_io_addr_t io_addr, size_t mapped_len)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ia_t *ia = ual_ia_get(ia_handle);
  if (ia == NULL) {
    st = ual_fail(IT_ERR_INVALID_IA, "it_mem_unmap: %p is not a live IA handle", (void *) ia_handle);
    goto unlock;
  }
  GList *l = ia->maps;
  while (l != NULL && ((ual_map_t *) l->data)->addr != (uintptr_t) io_addr)
    l = l->next;
  if (l == NULL) {
    st = ual_fail(IT_ERR_INVALID_ADDRESS, "it_mem_unmap: %p is not an I/O address it_mem_map returned on IA "
                  "'%s' (or it was unmapped)", (void *) io_addr, ia->iface->name);
    goto unlock;
  }
  ual_map_t *m = l->data;
  if (m->len != mapped_len) {
    st = ual_fail(IT_ERR_INVALID_LENGTH, "it_mem_unmap: the mapping at %p is %zu bytes, not %zu",
                  (void *) io_addr, m->len, mapped_len);
    goto unlock;
  }
  ia->maps = g_list_delete_link(ia->maps, l);
  kal_unpin(m->pin);
  g_free(m);
unlock:
  ual_lock_drop();
  return st;
}

void
ual_mem_unmap_all(ual_ia_t *ia)
{
  while (ia->maps != NULL) {
    ual_map_t *m = ia->maps->data;
    ia->maps = g_list_delete_link(ia->maps, ia->maps);
    kal_unpin(m->pin);
    g_free(m);
  }
}

/* ---- Unlinked LMRs: fast registration (RNIC-PI 1.4) ---------------------- */

#define LINK_FLAGS (IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_BARRIER_FENCE_FLAG)

it_status_t
it_lmr_create_unlinked(it_pz_handle_t pz_handle, size_t iobl_num_elts, it_lmr_flag_t flags, uint32_t shared_id,
                       it_lmr_handle_t *lmr_handle)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_pz_t *pz = ual_pz_get(pz_handle);
  if (pz == NULL) {
    st = ual_fail(IT_ERR_INVALID_PZ, "it_lmr_create_unlinked: %p is not a live PZ handle", (void *) pz_handle);
    goto unlock;
  }
  ual_ia_t *ia = pz->obj.ia;
  uint64_t need = RNICPI_CAP_FAST_REGISTER | RNICPI_CAP_LOCAL_INVALIDATE;
  if ((ia->caps.features & need) != need) {
    st = ual_fail(IT_ERR_OP_NOT_SUPPORTED, "IA '%s' has no unlinked LMRs (it_ia_info_t.lmr_link_support is "
                  "IT_FALSE)", ia->iface->name);
    goto unlock;
  }
  if (iobl_num_elts == 0) {
    st = ual_fail(IT_ERR_INVALID_IOBL, "it_lmr_create_unlinked: a capacity of 0 I/O buffer list elements");
    goto unlock;
  }
  if (iobl_num_elts > UINT32_MAX || iobl_num_elts > ia->caps.max_mr_size / (uint64_t) kal_page_size()) {
    st = ual_fail(IT_ERR_RESOURCE_LMR_LENGTH, "it_lmr_create_unlinked: %zu elements of a page exceed the "
                  "%" G_GUINT64_FORMAT " bytes IA '%s' can register", iobl_num_elts, ia->caps.max_mr_size,
                  ia->iface->name);
    goto unlock;
  }
  if ((st = check_flags(flags)) != IT_SUCCESS)
    goto unlock;
  if (lmr_handle == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_lmr_create_unlinked: lmr_handle is NULL");
    goto unlock;
  }
  ual_lmr_t *lmr = g_new0(ual_lmr_t, 1);
  rnicpi_status_t rs = ia->prov->mem->mr_alloc(pz->pd, (uint32_t) iobl_num_elts, &lmr->mr);
  if (rs != RNICPI_OK) {
    g_free(lmr);
    st = ual_prov_refused(ia, rs, IT_ERR_OP_NOT_SUPPORTED, "allocate a fast-register region of %zu pages",
                          iobl_num_elts);
    goto unlock;
  }
  lmr->pz = pz;
  lmr->addr_mode = IT_ADDR_MODE_ABSOLUTE;
  lmr->flags = flags;
  lmr->shared_id = shared_id;
  lmr->linkable = TRUE;
  lmr->iobl_num_elts = iobl_num_elts;
  lmr->lkey = lmr->mr->lkey;
  if ((st = ual_pz_child_add(&lmr->obj, IT_HANDLE_TYPE_LMR, pz)) != IT_SUCCESS) {
    ia->prov->mem->mr_dereg(lmr->mr);
    g_free(lmr);
    goto unlock;
  }
  *lmr_handle = UAL_HANDLE(&lmr->obj, it_lmr_handle_t);
unlock:
  ual_lock_drop();
  return st;
}

/* The checks it_lmr_link and it_lmr_unlink share. */
static it_status_t
link_checks(const char *fn, it_lmr_handle_t lmr_handle, it_ep_handle_t ep_handle, ual_lmr_t **lmr_out,
            ual_ep_t **ep_out)
{
  ual_lmr_t *lmr = ual_lmr_get(lmr_handle);
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (lmr == NULL)
    return ual_fail(IT_ERR_INVALID_LMR, "%s: %p is not a live LMR handle", fn, (void *) lmr_handle);
  if (ep == NULL)
    return ual_fail(IT_ERR_INVALID_EP, "%s: %p is not a live EP handle", fn, (void *) ep_handle);
  if (!lmr->linkable)
    return ual_fail(IT_ERR_INVALID_LMR, "%s: LMR %p was not created by it_lmr_create_unlinked", fn,
                    (void *) lmr_handle);
  if (!ep->attr.priv_ops_enable)
    return ual_fail(IT_ERR_PRIV_OPS_UNAVAILABLE, "%s: EP %p was created without priv_ops_enable; privileged "
                    "operations need it", fn, (void *) ep_handle);
  if (ep->pz != lmr->pz)
    return ual_fail(IT_ERR_INVALID_PZ, "%s: LMR %p and EP %p are in different PZs", fn, (void *) lmr_handle,
                    (void *) ep_handle);
  *lmr_out = lmr;
  *ep_out = ep;
  return IT_SUCCESS;
}

it_status_t
it_lmr_link(it_lmr_handle_t lmr_handle, const void *addr, const it_iobl_t *iobl, it_length_t length,
            it_addr_mode_t addr_mode, it_mem_priv_t privs, it_ep_handle_t ep_handle, it_dto_cookie_t cookie,
            it_dto_flags_t dto_flags, it_rmr_context_t *rmr_context)
{
  const char *fn = "it_lmr_link";
  ual_lock_take();
  ual_lmr_t *lmr;
  ual_ep_t *ep;
  it_status_t st = link_checks(fn, lmr_handle, ep_handle, &lmr, &ep);
  if (st != IT_SUCCESS)
    goto unlock;
  ual_ia_t *ia = lmr->obj.ia;
  if (lmr->linked) {
    st = ual_fail(IT_ERR_LMR_BUSY, "%s: LMR %p is linked; unlink it first", fn, (void *) lmr_handle);
    goto unlock;
  }
  if ((dto_flags & ~LINK_FLAGS) != 0) {
    st = ual_fail(IT_ERR_INVALID_DTO_FLAGS, "%s: flags 0x%x; a link takes only COMPLETION, NOTIFY and "
                  "BARRIER_FENCE", fn, (unsigned) dto_flags);
    goto unlock;
  }
  if (rmr_context == NULL) {
    st = ual_fail(IT_ERR_FAULT, "%s: rmr_context is NULL", fn);
    goto unlock;
  }
  if ((st = ual_check_addr_mode(ia, addr_mode)) != IT_SUCCESS)
    goto unlock;
  if ((st = check_privs(ia, privs)) != IT_SUCCESS)
    goto unlock;
  uintptr_t start;
  size_t nelts;
  size_t psz = kal_page_size();
  if (iobl != NULL) {
    if ((st = iobl_range(ia, iobl, length, &start, &nelts, fn)) != IT_SUCCESS)
      goto unlock;
  } else {
    if (addr == NULL) {
      st = ual_fail(IT_ERR_INVALID_ADDRESS, "%s: addr and iobl are both NULL", fn);
      goto unlock;
    }
    if (length == 0) {
      st = ual_fail(IT_ERR_INVALID_LENGTH, "%s: length is 0", fn);
      goto unlock;
    }
    start = (uintptr_t) addr;
    if (start + length < start) {
      st = ual_fail(IT_ERR_RESOURCE_LMR_LENGTH, "%s: the range wraps the address space", fn);
      goto unlock;
    }
    nelts = (size_t) (((start + length + psz - 1) / psz) - start / psz);
  }
  if (nelts > lmr->iobl_num_elts || length > ia->caps.max_mr_size) {
    st = ual_fail(IT_ERR_RESOURCE_LMR_LENGTH, "%s: the memory spans %zu elements; LMR %p was created for %zu",
                  fn, nelts, (void *) lmr_handle, lmr->iobl_num_elts);
    goto unlock;
  }
  kal_pin_t *pin = NULL;
  char *why = NULL;
  rnicpi_status_t rs = kal_pin((void *) start, length, pin_flags(ia, privs), &pin, &why);
  if (rs != RNICPI_OK) {
    st = pin_refused(fn, rs, why, (void *) start, length, privs);
    g_free(why);
    goto unlock;
  }
  /* The capacity counts elements: pages of a virtual range, or the list's
   * elements (page_size then bounds the bytes an element holds). */
  uint64_t *pages = pin_pages(ia, pin);
  rnicpi_send_wr_t wr = {
    .wr_id = cookie, .opcode = RNICPI_WR_FAST_REG,
    .fast_reg = {
      .mr = lmr->mr, .addr = (void *) start, .length = length,
      .iova = addr_mode == IT_ADDR_MODE_RELATIVE ? 0 : (uint64_t) start,
      .access = ual_access_of(ia, privs),
      .page_size = pages != NULL ? pin->page_size :
                   iobl != NULL ? (size_t) ((length + iobl->fbo + nelts - 1) / nelts) : psz,
      .num_pages = pages != NULL ? pin->num_pages : nelts,
      .pages = pages,
    },
  };
  st = ual_post_sq(ep_handle, &wr, NULL, 0, dto_flags, 0, fn);
  g_free(pages);
  if (st != IT_SUCCESS) {
    kal_unpin(pin);
    goto unlock;
  }
  kal_unpin(lmr->pin);
  lmr->pin = pin;
  lmr->linked = TRUE;
  /* it_rmr_link reads these without the object lock (and the provider
   * checks its bind against the region as it is when the bind runs). */
  __atomic_store_n(&lmr->addr, (void *) start, __ATOMIC_RELAXED);
  __atomic_store_n(&lmr->length, length, __ATOMIC_RELAXED);
  __atomic_store_n(&lmr->addr_mode, addr_mode, __ATOMIC_RELAXED);
  __atomic_store_n(&lmr->privs, privs, __ATOMIC_RELAXED);
  lmr->iobl = iobl != NULL;
  lmr->iobl_type = iobl != NULL ? iobl->iobl_type : 0;
  /* The fast register wrote the region's new key (rnicpi.h). */
  __atomic_store_n(&lmr->lkey, lmr->mr->lkey, __ATOMIC_RELAXED);
  *rmr_context = lmr->mr->rkey;
unlock:
  ual_lock_drop();
  return st;
}

it_status_t
it_lmr_unlink(it_lmr_handle_t lmr_handle, it_ep_handle_t ep_handle, it_dto_cookie_t cookie,
              it_dto_flags_t dto_flags)
{
  const char *fn = "it_lmr_unlink";
  ual_lock_take();
  ual_lmr_t *lmr;
  ual_ep_t *ep;
  it_status_t st = link_checks(fn, lmr_handle, ep_handle, &lmr, &ep);
  if (st != IT_SUCCESS)
    goto unlock;
  if ((dto_flags & ~(LINK_FLAGS | IT_UNLINK_FENCE_FLAG)) != 0) {
    st = ual_fail(IT_ERR_INVALID_DTO_FLAGS, "%s: flags 0x%x; an unlink takes only COMPLETION, NOTIFY, "
                  "BARRIER_FENCE and UNLINK_FENCE", fn, (unsigned) dto_flags);
    goto unlock;
  }
  if (!lmr->linked) {
    st = ual_fail(IT_ERR_INVALID_LMR, "%s: LMR %p is not linked", fn, (void *) lmr_handle);
    goto unlock;
  }
  rnicpi_send_wr_t wr = { .wr_id = cookie, .opcode = RNICPI_WR_LOCAL_INV, .invalidate_rkey = lmr->mr->rkey };
  st = ual_post_sq(ep_handle, &wr, NULL, 0, dto_flags, IT_UNLINK_FENCE_FLAG, fn);
  if (st == IT_SUCCESS)
    lmr->linked = FALSE;
unlock:
  ual_lock_drop();
  return st;
}

/* Whether @key is the context of an unlinked-kind LMR of @ia (a Local
 * Invalidate of it completes as IT_LMR_LINK_CMPL_EVENT). */
gboolean
ual_lmr_is_link_key(ual_ia_t *ia, uint64_t key)
{
  gboolean found = FALSE;
  ual_lock_take();
  for (GList *l = ia->children; l != NULL && !found; l = l->next) {
    ual_obj_t *o = l->data;
    found = o->type == IT_HANDLE_TYPE_LMR && ((ual_lmr_t *) o)->linkable && ((ual_lmr_t *) o)->mr->rkey == key;
  }
  ual_lock_drop();
  return found;
}
