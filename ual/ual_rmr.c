/*
 * Remote memory regions (IT-API 2.9: memory windows) over RNIC-PI 1.2
 * windows.  it_rmr_link posts a bind work request and returns the key the
 * provider gives the window at post (as ibv_bind_mw does); it_rmr_unlink
 * posts a Local Invalidate; it_post_send_and_unlink a Send with
 * Invalidate.  What the IA offers comes from the capability record
 * (RNICPI_CAP_MW_NARROW / _WIDE, _LOCAL_INVALIDATE, _REMOTE_INVALIDATE).
 *
 * Synchronous checks are those IT-API reports from the call (handles,
 * zones, the range inside the LMR, privileges within the LMR's, addressing
 * modes); the provider applies the same bind rules again as hardware does
 * and reports a violation as IT_RMR_OPERATION_FAILED in the completion.
 *
 * The posts (it_rmr_link, it_rmr_unlink, and it_post_rdma_read_to_rmr in
 * ual_dto.c) take no object lock: as every post, they look their handles
 * up in a read section, which keeps the RMR, the LMR and the EP alive
 * until they return.  The RMR's own lock (ual_rmr_t: a leaf, after
 * ual_lock) guards its link state, read and changed before and after the
 * provider's post_send, never across it.  What the provider is handed
 * must outlive the post too: the window (freed at it_rmr_free, not with
 * the object) is kept by rmr->posting, the LMR's region by its bind count
 * (ual_lmr_bind_begin); a free that finds either counted refuses, as it
 * refuses when the provider still has the link queued.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "ual.h"

#define RMR_PRIVS (IT_PRIV_REMOTE | IT_PRIV_ATOMIC)
#define LINK_FLAGS (IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_BARRIER_FENCE_FLAG)

static const char *
type_name(it_rmr_type_t t)
{
  return t == IT_RMR_TYPE_NARROW ? "narrow" : "wide";
}

it_status_t
it_rmr_create20(it_pz_handle_t pz_handle, it_rmr_type_t rmr_type, it_rmr_handle_t *rmr_handle)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_pz_t *pz = ual_pz_get(pz_handle);
  if (pz == NULL) {
    st = ual_fail(IT_ERR_INVALID_PZ, "it_rmr_create: %p is not a live PZ handle", (void *) pz_handle);
    goto unlock;
  }
  ual_ia_t *ia = pz->obj.ia;
  uint64_t f = ia->caps.features;
  if (!(f & (RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE))) {
    st = ual_fail(IT_ERR_OP_NOT_SUPPORTED, "IA '%s' has no remote memory regions "
                  "(it_ia_info_t.rmr_types_supported is 0)", ia->iface->name);
    goto unlock;
  }
  /* DEFAULT: the EP-bound kind where offered (IB type 2, the iWARP window). */
  if (rmr_type == IT_RMR_TYPE_DEFAULT)
    rmr_type = (f & RNICPI_CAP_MW_NARROW) ? IT_RMR_TYPE_NARROW : IT_RMR_TYPE_WIDE;
  if ((rmr_type != IT_RMR_TYPE_NARROW && rmr_type != IT_RMR_TYPE_WIDE) ||
      (rmr_type == IT_RMR_TYPE_NARROW && !(f & RNICPI_CAP_MW_NARROW)) ||
      (rmr_type == IT_RMR_TYPE_WIDE && !(f & RNICPI_CAP_MW_WIDE))) {
    st = ual_fail(IT_ERR_INVALID_RMR_TYPE, "RMR type %d is not one IA '%s' offers "
                  "(it_ia_info_t.rmr_types_supported 0x%x)", (int) rmr_type, ia->iface->name,
                  (unsigned) (((f & RNICPI_CAP_MW_NARROW) ? IT_RMR_TYPE_NARROW : 0) |
                              ((f & RNICPI_CAP_MW_WIDE) ? IT_RMR_TYPE_WIDE : 0)));
    goto unlock;
  }
  if (rmr_handle == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_rmr_create: rmr_handle is NULL");
    goto unlock;
  }
  ual_rmr_t *rmr = g_new0(ual_rmr_t, 1);
  g_mutex_init(&rmr->lock);
  rnicpi_status_t rs = ia->prov->mw->mw_alloc(pz->pd, rmr_type == IT_RMR_TYPE_NARROW ? RNICPI_MW_NARROW
                                                                                     : RNICPI_MW_WIDE, &rmr->mw);
  if (rs != RNICPI_OK) {
    g_mutex_clear(&rmr->lock);
    g_free(rmr);
    st = ual_prov_refused(ia, rs, IT_ERR_OP_NOT_SUPPORTED, "allocate a %s memory window", type_name(rmr_type));
    goto unlock;
  }
  rmr->pz = pz;
  rmr->type = rmr_type;
  rmr->addr_mode = IT_ADDR_MODE_ABSOLUTE;
  if ((st = ual_pz_child_add(&rmr->obj, IT_HANDLE_TYPE_RMR, pz)) != IT_SUCCESS) {
    ia->prov->mw->mw_dealloc(rmr->mw);
    g_mutex_clear(&rmr->lock);
    g_free(rmr);
    goto unlock;
  }
  *rmr_handle = UAL_HANDLE(&rmr->obj, it_rmr_handle_t);
unlock:
  ual_lock_drop();
  return st;
}

it_status_t
it_rmr_create10(it_pz_handle_t pz_handle, it_rmr_handle_t *rmr_handle)
{
  return it_rmr_create20(pz_handle, IT_RMR_TYPE_DEFAULT, rmr_handle);
}

void
ual_rmr_destroy(ual_rmr_t *rmr)
{
  if (rmr->obj.handle != 0)
    ual_handle_release(&rmr->obj);
  if (rmr->mw != NULL)
    rmr->obj.ia->prov->mw->mw_dealloc(rmr->mw);
  rmr->pz->nref--;
  g_mutex_clear(&rmr->lock);
  g_free(rmr);
}

it_status_t
it_rmr_free(it_rmr_handle_t rmr_handle)
{
  ual_lock_take();
  ual_rmr_t *rmr = ual_rmr_get(rmr_handle);
  if (rmr == NULL) {
    ual_lock_drop();
    return ual_fail(IT_ERR_INVALID_RMR, "it_rmr_free: %p is not a live RMR handle", (void *) rmr_handle);
  }
  /* A link or unlink on another thread between its checks and its
   * post's return may be handing the window to the provider: the RMR
   * cannot go yet, as when the provider still has a link queued.  Once
   * marked, such posts refuse it; from the mark to the provider's answer
   * below this thread holds ual_lock, which a post that finds the mark
   * takes to wait for the decision (ual_rmr_lock_live). */
  g_mutex_lock(&rmr->lock);
  guint posting = rmr->posting;
  if (posting == 0)
    rmr->freed = TRUE;
  g_mutex_unlock(&rmr->lock);
  if (posting > 0) {
    ual_lock_drop();
    return ual_fail(IT_ERR_INVALID_RMR, "RMR %p is being linked or unlinked by another thread; free it "
                    "after that call returns", (void *) rmr_handle);
  }
  /* A linked RMR is unlinked by the free (its context dies at once); only
   * one whose link is still queued behind a blocked send cannot go. */
  rnicpi_status_t rs = rmr->obj.ia->prov->mw->mw_dealloc(rmr->mw);
  if (rs == RNICPI_EBUSY) {
    g_mutex_lock(&rmr->lock);
    rmr->freed = FALSE;
    g_mutex_unlock(&rmr->lock);
    ual_lock_drop();
    return ual_fail(IT_ERR_INVALID_RMR, "RMR %p has a link still queued on its EP; free it after that "
                    "completes", (void *) rmr_handle);
  }
  rmr->mw = NULL;
  ual_ia_child_remove(rmr->obj.ia, &rmr->obj);
  ual_obj_retire(&rmr->obj);
  ual_lock_drop();
  return IT_SUCCESS;
}

it_status_t
it_rmr_query(it_rmr_handle_t rmr_handle, it_rmr_param_mask_t mask, it_rmr_param_t *params)
{
  ual_lock_take();
  it_status_t st = IT_SUCCESS;
  ual_rmr_t *rmr = ual_rmr_get(rmr_handle);
  if (rmr == NULL) {
    st = ual_fail(IT_ERR_INVALID_RMR, "it_rmr_query: %p is not a live RMR handle", (void *) rmr_handle);
    goto unlock;
  }
  if ((mask & ~UAL_RMR_PARAMS_KNOWN) != 0) {
    st = ual_fail(IT_ERR_INVALID_MASK, "it_rmr_query: mask 0x%x has unknown bits", (unsigned) mask);
    goto unlock;
  }
  if (params == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_rmr_query: params is NULL");
    goto unlock;
  }
  memset(params, 0, sizeof(*params));
  params->ia = UAL_HANDLE(&rmr->obj.ia->obj, it_ia_handle_t);
  params->pz = UAL_HANDLE(&rmr->pz->obj, it_pz_handle_t);
  params->type = rmr->type;
  g_mutex_lock(&rmr->lock);
  params->linked = rmr->linked ? IT_TRUE : IT_FALSE;
  params->addr_mode = rmr->addr_mode;
  if (rmr->linked) {
    params->lmr = rmr->lmr;
    params->addr = rmr->addr;
    params->length = rmr->length;
    params->privs = rmr->privs;
    params->rmr_context = rmr->ctx;
  }
  g_mutex_unlock(&rmr->lock);
unlock:
  ual_lock_drop();
  return st;
}

gboolean
ual_rmr_lock_live(ual_rmr_t *rmr)
{
  g_mutex_lock(&rmr->lock);
  if (G_LIKELY(!rmr->freed))
    return TRUE;
  /* it_rmr_free marked it and holds ual_lock until the provider says
   * whether the window may go; once this thread has had ual_lock the mark
   * is for good or gone.  The RMR's lock is not held meanwhile (lock
   * order: ual_lock first). */
  g_mutex_unlock(&rmr->lock);
  ual_lock_take();
  ual_lock_drop();
  g_mutex_lock(&rmr->lock);
  if (!rmr->freed)
    return TRUE;
  g_mutex_unlock(&rmr->lock);
  return FALSE;
}

it_status_t
it_rmr_link(it_rmr_handle_t rmr_handle, it_lmr_handle_t lmr_handle, void *addr, it_length_t length,
            it_addr_mode_t addr_mode, it_mem_priv_t privs, it_ep_handle_t ep_handle,
            it_dto_cookie_t cookie, it_dto_flags_t dto_flags, it_rmr_context_t *rmr_context)
{
  /* A read section, not the object lock (the file's header). */
  RSEC_SCOPE();
  ual_rmr_t *rmr = ual_rmr_get(rmr_handle);
  ual_lmr_t *lmr = ual_lmr_get(lmr_handle);
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (rmr == NULL)
    return ual_fail(IT_ERR_INVALID_RMR, "it_rmr_link: %p is not a live RMR handle", (void *) rmr_handle);
  if (lmr == NULL)
    return ual_fail(IT_ERR_INVALID_LMR, "it_rmr_link: %p is not a live LMR handle", (void *) lmr_handle);
  if (ep == NULL)
    return ual_fail(IT_ERR_INVALID_EP, "it_rmr_link: %p is not a live EP handle", (void *) ep_handle);
  ual_ia_t *ia = rmr->obj.ia;
  if ((dto_flags & ~LINK_FLAGS) != 0)
    return ual_fail(IT_ERR_INVALID_DTO_FLAGS, "it_rmr_link: flags 0x%x; a link takes only COMPLETION, NOTIFY "
                    "and BARRIER_FENCE", (unsigned) dto_flags);
  if (rmr_context == NULL)
    return ual_fail(IT_ERR_FAULT, "it_rmr_link: rmr_context is NULL");
  /* IBTA 10.6.7.2.2: window, region and QP share one protection domain. */
  if (lmr->pz != rmr->pz || ep->pz != rmr->pz)
    return ual_fail(IT_ERR_INVALID_PZ, "it_rmr_link: RMR %p, LMR %p and EP %p are not all in one PZ",
                    (void *) rmr_handle, (void *) lmr_handle, (void *) ep_handle);
  it_status_t st = ual_check_addr_mode(ia, addr_mode);
  if (st != IT_SUCCESS)
    return st;
  /* The LMR's range and rights as it_lmr_link and it_lmr_modify last left
   * them (they change under the object lock; the provider checks the bind
   * against the region as it is when the bind runs). */
  void *lmr_addr = __atomic_load_n(&lmr->addr, __ATOMIC_RELAXED);
  it_length_t lmr_length = __atomic_load_n(&lmr->length, __ATOMIC_RELAXED);
  it_addr_mode_t lmr_mode = __atomic_load_n(&lmr->addr_mode, __ATOMIC_RELAXED);
  it_mem_priv_t lmr_privs = __atomic_load_n(&lmr->privs, __ATOMIC_RELAXED);
  /* RDMAC verbs 7.2.7: no window on a zero-based region of an iWARP RNIC;
   * the provider says which devices follow it (RNIC-PI 1.12). */
  if (lmr_mode == IT_ADDR_MODE_RELATIVE && (ia->caps.features & RNICPI_CAP_MW_NEEDS_VA_REGION))
    return ual_fail(IT_ERR_INVALID_ADDR_MODE, "LMR %p is relatively addressed, and IA '%s' links an RMR only "
                    "to an absolutely addressed LMR (capability \"%s\", as iWARP RNICs); register the memory "
                    "with IT_ADDR_MODE_ABSOLUTE to expose it through an RMR", (void *) lmr_handle,
                    ia->iface->name, rnicpi_cap_name(RNICPI_CAP_MW_NEEDS_VA_REGION));
  if ((privs & ~IT_PRIV_ALL) != 0 || ((privs & RMR_PRIVS) & ~lmr_privs) != 0)
    return ual_fail(IT_ERR_INVALID_PRIVS, "privileges 0x%x exceed those of LMR %p (0x%x)", (unsigned) privs,
                    (void *) lmr_handle, (unsigned) lmr_privs);
  if (length == 0)
    return ual_fail(IT_ERR_INVALID_LENGTH, "it_rmr_link: length is 0");
  /* addr is read as the LMR's triplets are: a virtual address, or an
   * offset for a relatively addressed LMR. */
  uint64_t off = lmr_mode == IT_ADDR_MODE_RELATIVE ? (uint64_t) (uintptr_t) addr
                 : (uint64_t) (uintptr_t) addr - (uint64_t) (uintptr_t) lmr_addr;
  if ((lmr_mode == IT_ADDR_MODE_ABSOLUTE && (uintptr_t) addr < (uintptr_t) lmr_addr) ||
      off > lmr_length || length > lmr_length - off)
    return ual_fail(IT_ERR_RANGE, "%" G_GUINT64_FORMAT " bytes at %p do not lie inside LMR %p (%" G_GUINT64_FORMAT
                    " bytes at %p)", (guint64) length, addr, (void *) lmr_handle, (guint64) lmr_length, lmr_addr);
  /* The region and the window go to the provider: neither may be freed
   * until the post returns.  A free that got there first leaves the
   * handle as good as stale. */
  if (!ual_lmr_bind_begin(lmr))
    return ual_fail(IT_ERR_INVALID_LMR, "it_rmr_link: %p is not a live LMR handle", (void *) lmr_handle);
  if (!ual_rmr_lock_live(rmr)) {
    ual_lmr_bind_end(lmr);
    return ual_fail(IT_ERR_INVALID_RMR, "it_rmr_link: %p is not a live RMR handle", (void *) rmr_handle);
  }
  rmr->posting++;
  g_mutex_unlock(&rmr->lock);
  rnicpi_send_wr_t wr = {
    .wr_id = cookie, .opcode = RNICPI_WR_BIND_MW,
    .bind = {
      .mw = rmr->mw, .mr = lmr->mr,
      .addr = (lmr_mode == IT_ADDR_MODE_RELATIVE ? 0 : (uint64_t) (uintptr_t) lmr_addr) + off,
      .length = length,
      .access = ual_access_of(ia, privs & RMR_PRIVS) & ~(uint32_t) RNICPI_ACCESS_MW_BIND,
      .zero_based = addr_mode == IT_ADDR_MODE_RELATIVE,
    },
  };
  /* Not under the RMR's lock: the provider's upcalls may take ual_lock. */
  st = ual_post_sq(ep_handle, &wr, NULL, 0, dto_flags, 0, "it_rmr_link");
  g_mutex_lock(&rmr->lock);
  rmr->posting--;
  /* The provider wrote the window's new key at post (rnicpi.h), and may
   * have even when it then refused the request. */
  rmr->key = rmr->mw->rkey;
  if (st == IT_SUCCESS) {
    rmr->linked = TRUE;
    rmr->lmr = lmr_handle;
    rmr->addr = addr;
    rmr->length = length;
    rmr->privs = privs & RMR_PRIVS;
    rmr->addr_mode = addr_mode;
    rmr->ctx = rmr->key;
    *rmr_context = rmr->ctx;
  }
  g_mutex_unlock(&rmr->lock);
  ual_lmr_bind_end(lmr);
  return st;
}

it_status_t
it_rmr_bind10(it_rmr_handle_t rmr_handle, it_lmr_handle_t lmr_handle, void *addr, it_length_t length,
              it_mem_priv_t privs, it_ep_handle_t ep_handle, it_dto_cookie_t cookie,
              it_dto_flags_t dto_flags, it_rmr_context_t *rmr_context)
{
  return it_rmr_link(rmr_handle, lmr_handle, addr, length, IT_ADDR_MODE_ABSOLUTE, privs, ep_handle,
                     cookie, dto_flags, rmr_context);
}

it_status_t
it_rmr_unlink(it_rmr_handle_t rmr_handle, it_ep_handle_t ep_handle, it_dto_cookie_t cookie,
              it_dto_flags_t dto_flags)
{
  /* A read section, not the object lock (the file's header). */
  RSEC_SCOPE();
  ual_rmr_t *rmr = ual_rmr_get(rmr_handle);
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (rmr == NULL)
    return ual_fail(IT_ERR_INVALID_RMR, "it_rmr_unlink: %p is not a live RMR handle", (void *) rmr_handle);
  if (ep == NULL)
    return ual_fail(IT_ERR_INVALID_EP, "it_rmr_unlink: %p is not a live EP handle", (void *) ep_handle);
  if (!(rmr->obj.ia->caps.features & RNICPI_CAP_LOCAL_INVALIDATE))
    return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "IA '%s' cannot unlink %s RMRs (it_ia_info_t.%s_rmr_unlink_support)",
                    rmr->obj.ia->iface->name, type_name(rmr->type), type_name(rmr->type));
  if ((dto_flags & ~(LINK_FLAGS | IT_UNLINK_FENCE_FLAG)) != 0)
    return ual_fail(IT_ERR_INVALID_DTO_FLAGS, "it_rmr_unlink: flags 0x%x; an unlink takes only COMPLETION, "
                    "NOTIFY, BARRIER_FENCE and UNLINK_FENCE", (unsigned) dto_flags);
  if (ep->pz != rmr->pz)
    return ual_fail(IT_ERR_INVALID_PZ, "it_rmr_unlink: RMR %p and EP %p are in different PZs",
                    (void *) rmr_handle, (void *) ep_handle);
  if (!ual_rmr_lock_live(rmr))
    return ual_fail(IT_ERR_INVALID_RMR, "it_rmr_unlink: %p is not a live RMR handle", (void *) rmr_handle);
  if (!rmr->linked) {
    g_mutex_unlock(&rmr->lock);
    return ual_fail(IT_ERR_INVALID_RMR, "it_rmr_unlink: RMR %p is not linked", (void *) rmr_handle);
  }
  uint64_t key = rmr->ctx;
  rmr->posting++;
  g_mutex_unlock(&rmr->lock);
  rnicpi_send_wr_t wr = { .wr_id = cookie, .opcode = RNICPI_WR_LOCAL_INV, .invalidate_rkey = key };
  /* Not under the RMR's lock: the provider's upcalls may take ual_lock. */
  it_status_t st = ual_post_sq(ep_handle, &wr, NULL, 0, dto_flags, IT_UNLINK_FENCE_FLAG, "it_rmr_unlink");
  g_mutex_lock(&rmr->lock);
  rmr->posting--;
  /* Unless another thread linked it anew meanwhile. */
  if (st == IT_SUCCESS && rmr->ctx == key)
    rmr->linked = FALSE;
  g_mutex_unlock(&rmr->lock);
  return st;
}

it_status_t
it_post_send_and_unlink(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments,
                        size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
                        it_rmr_context_t rmr_context)
{
  RSEC_SCOPE();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL)
    return ual_fail(IT_ERR_INVALID_EP, "it_post_send_and_unlink: %p is not a live EP handle", (void *) ep_handle);
  if (!(ep->obj.ia->caps.features & RNICPI_CAP_REMOTE_INVALIDATE))
    return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "IA '%s' has no send with remote unlink "
                    "(it_ia_info_t.post_send_unlink_remote_support)", ep->obj.ia->iface->name);
  rnicpi_send_wr_t wr = { .wr_id = cookie, .opcode = RNICPI_WR_SEND_INV, .invalidate_rkey = rmr_context };
  return ual_post_sq(ep_handle, &wr, local_segments, num_segments, dto_flags, 0, "it_post_send_and_unlink");
}

/* The RMR (or linked LMR) whose context a completion reports unlinked
 * (IT-API 2.1 unlinked_mr_handle): by the peer (it_post_send_and_unlink)
 * or by a Read with IT_UNLINK_LOCAL_SINK; now unlinked here too.  A
 * context names one object only: the provider draws a new one per link. */
it_handle_t
ual_rmr_invalidated(ual_ia_t *ia, uint64_t key)
{
  it_handle_t h = IT_NULL_HANDLE;
  /* ual_lock keeps the list, each RMR's lock its link state (in that
   * order, ual_rmr_t). */
  ual_lock_take();
  for (GList *l = ia->children; l != NULL; l = l->next) {
    ual_obj_t *o = l->data;
    if (o->type == IT_HANDLE_TYPE_RMR) {
      ual_rmr_t *r = (ual_rmr_t *) o;
      g_mutex_lock(&r->lock);
      gboolean hit = r->ctx == key && (r->linked || r->key == key);
      if (hit)
        r->linked = FALSE;
      g_mutex_unlock(&r->lock);
      if (hit) {
        h = (it_handle_t) (uintptr_t) o->handle;
        break;
      }
    }
    if (o->type == IT_HANDLE_TYPE_LMR && ((ual_lmr_t *) o)->linkable && ((ual_lmr_t *) o)->mr->rkey == key) {
      ((ual_lmr_t *) o)->linked = FALSE;
      h = (it_handle_t) (uintptr_t) o->handle;
      break;
    }
  }
  ual_lock_drop();
  return h;
}
