/*
 * dat/: remote memory regions (memory windows), Send with Invalidate and
 * RDMA Read to RMR.
 *
 * A DAT RMR is an IT-API RMR: dat_rmr_create makes a wide one (DAT 2.0
 * 6.7.2, DAT_RMR_SCOPE_PZ: usable through any EP of the zone),
 * dat_rmr_create_for_ep a narrow one (DAT_RMR_SCOPE_EP).  dat_rmr_bind is
 * it_rmr_link, absolute addressing; a bind of a zero-length triplet unbinds
 * (DAT 2.0 dat_rmr_bind), it_rmr_unlink.  Both complete on the EP's request
 * EVD as DAT_RMR_BIND_COMPLETION_EVENT naming the RMR: the IT-API cookie of
 * a link or unlink is the RMR's cell number and the bind's number, and the
 * consumer's cookie waits in the RMR, by number, until its completion is
 * translated (the last DATX_RMR_BINDS binds of an RMR are kept: a
 * suppressed completion that never comes holds no memory).
 * The IT-API RMR's consumer context is its cell too, so that a receive that
 * invalidated one (it_dto_cmpl_event_t::unlinked_mr_handle) names its
 * rmr_context.
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#include <string.h>

static it_mem_priv_t
remote_privs_of(DAT_MEM_PRIV_FLAGS p)
{
  it_mem_priv_t out = IT_PRIV_NONE;
  if (p & DAT_MEM_PRIV_REMOTE_READ_FLAG)
    out |= IT_PRIV_REMOTE_READ;
  if (p & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
    out |= IT_PRIV_REMOTE_WRITE;
  if (p & DAT_IB_MEM_PRIV_REMOTE_ATOMIC)
    out |= IT_PRIV_ATOMIC;
  return out;
}

static it_dto_flags_t
dto_flags_of(DAT_COMPLETION_FLAGS f)
{
  it_dto_flags_t out = 0;
  if (!(f & DAT_COMPLETION_SUPPRESS_FLAG))
    out |= IT_COMPLETION_FLAG;
  if (f & DAT_COMPLETION_SOLICITED_WAIT_FLAG)
    out |= IT_SOLICITED_WAIT_FLAG;
  if (f & DAT_COMPLETION_BARRIER_FENCE_FLAG)
    out |= IT_BARRIER_FENCE_FLAG;
  return out;
}

static DAT_RETURN
rmr_create(DAT_PZ_HANDLE pz_handle, DAT_RMR_SCOPE scope, DAT_RMR_HANDLE *rmr_handle)
{
  if (rmr_handle == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  /* Held by the caller, and used by the RMR until freed: a racing
   * dat_pz_free is refused, or retired the zone first and this create is
   * refused. */
  datx_pz_t *pz = datx_cell_use(pz_handle, DATX_PZ);
  if (pz == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  DAT_RETURN ret;
  datx_ia_t *ia = pz->ia;
  datx_rmr_t *rmr = g_new0(datx_rmr_t, 1);
  rmr->ia = ia;
  rmr->pz = pz;
  rmr->scope = scope;
  g_mutex_init(&rmr->lock);
  it_rmr_type_t type = scope == DAT_RMR_SCOPE_EP ? IT_RMR_TYPE_NARROW : IT_RMR_TYPE_WIDE;
  it_status_t st = it_rmr_create20(pz->it, type, &rmr->it);
  if (st != IT_SUCCESS) {
    g_message("DAT RMR (%s) on %s: it_rmr_create failed: %s (%s)",
              type == IT_RMR_TYPE_NARROW ? "for one EP, narrow" : "for the zone, wide",
              ia->provider->it_name, itx_status_name(st),
              itx_error_detail() != NULL ? itx_error_detail() : "");
    /* An interface without memory windows of the type: the model is not offered. */
    if (st == IT_ERR_OP_NOT_SUPPORTED || st == IT_ERR_INVALID_RMR_TYPE)
      ret = DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
    else
      ret = datx_status(st, DAT_INVALID_HANDLE_PZ);
    goto err_free;
  }
  rmr->cell = datx_cell_new(&ia->provider->dat, DATX_RMR, rmr, ia);
  if (rmr->cell == NULL) {
    ret = DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    goto err_rmr;
  }
  it_context_t ctx = { .ptr = rmr->cell };
  it_set_consumer_context((it_handle_t) rmr->it, ctx);
  *rmr_handle = rmr->cell;
  return DAT_SUCCESS;

err_rmr:
  it_rmr_free(rmr->it);
err_free:
  g_mutex_clear(&rmr->lock);
  g_free(rmr);
  datx_cell_unuse(pz->cell);
  return ret;
}

DAT_RETURN
datx_rmr_create(DAT_PZ_HANDLE pz_handle, DAT_RMR_HANDLE *rmr_handle)
{
  DATX_RETURN_HELD(pz_handle, DATX_PZ, rmr_create(pz_handle, DAT_RMR_SCOPE_PZ, rmr_handle));
}

DAT_RETURN
datx_rmr_create_for_ep(DAT_PZ_HANDLE pz_handle, DAT_RMR_HANDLE *rmr_handle)
{
  DATX_RETURN_HELD(pz_handle, DATX_PZ, rmr_create(pz_handle, DAT_RMR_SCOPE_EP, rmr_handle));
}

static DAT_RETURN
rmr_query_on_held(DAT_RMR_HANDLE rmr_handle, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *param)
{
  datx_rmr_t *rmr = datx_cell_get(rmr_handle, DATX_RMR);
  if (rmr == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  /* A peer's Send with Invalidate unlinks the region behind our back:
   * IT-API's record says whether it is still linked. */
  it_rmr_param_t ip;
  gboolean linked = it_rmr_query(rmr->it, IT_RMR_PARAM_LINKED, &ip) == IT_SUCCESS && ip.linked;
  g_mutex_lock(&rmr->lock);
  if (mask & DAT_RMR_FIELD_IA_HANDLE)
    param->ia_handle = rmr->ia->cell;
  if (mask & DAT_RMR_FIELD_PZ_HANDLE)
    param->pz_handle = rmr->pz->cell;
  if (mask & DAT_RMR_FIELD_LMR_TRIPLET) {
    if (linked)
      param->lmr_triplet = rmr->triplet;
    else
      memset(&param->lmr_triplet, 0, sizeof(param->lmr_triplet));
  }
  if (mask & DAT_RMR_FIELD_MEM_PRIV)
    param->mem_priv = linked ? rmr->privs : DAT_MEM_PRIV_NONE_FLAG;
  if (mask & DAT_RMR_FIELD_RMR_CONTEXT)
    param->rmr_context = linked ? rmr->context : 0;
  if (mask & DAT_RMR_FIELD_RMR_SCOPE)
    param->rmr_scope = rmr->scope;
  if (mask & DAT_RMR_FIELD_VA_TYPE)
    param->va_type = DAT_VA_TYPE_VA;
  g_mutex_unlock(&rmr->lock);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_rmr_query(DAT_RMR_HANDLE rmr_handle, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *param)
{
  DATX_RETURN_HELD(rmr_handle, DATX_RMR, rmr_query_on_held(rmr_handle, mask, param));
}

/* Keeps @p cookie for the next bind of @p rmr and returns that bind's
 * IT-API cookie. */
static it_dto_cookie_t
bind_cookie(datx_rmr_t *rmr, DAT_RMR_COOKIE cookie)
{
  g_mutex_lock(&rmr->lock);
  if (++rmr->seq == 0)
    rmr->seq = 1;
  uint32_t seq = rmr->seq;
  rmr->binds[seq % DATX_RMR_BINDS].seq = seq;
  rmr->binds[seq % DATX_RMR_BINDS].cookie = cookie;
  g_mutex_unlock(&rmr->lock);
  return ((it_dto_cookie_t) rmr->cell->id << 32) | seq;
}

/* The bind of @p rmr (held) through the EP and LMR, both held for the call. */
static DAT_RETURN
rmr_bind_on_held(datx_rmr_t *rmr, DAT_LMR_HANDLE lmr_handle, const DAT_LMR_TRIPLET *triplet,
                 DAT_MEM_PRIV_FLAGS privs, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_handle,
                 DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT *rmr_context)
{
  if (triplet == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  datx_ep_t *ep = datx_cell_get(ep_handle, DATX_EP);
  if (ep == NULL || ep->ia != rmr->ia)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  /* Binds are ordered only through the send queue of the EP: IT-API's
   * flags for a link are completion, notify and fence. */
  it_dto_flags_t itf = dto_flags_of(flags) & (IT_COMPLETION_FLAG | IT_BARRIER_FENCE_FLAG);
  it_status_t st;
  if (triplet->segment_length == 0) {
    /* DAT 2.0 dat_rmr_bind: a zero-length triplet unbinds the RMR. */
    st = it_rmr_unlink(rmr->it, ep->it, bind_cookie(rmr, cookie), itf);
    if (st != IT_SUCCESS) {
      g_message("DAT RMR %u on %s: unbinding it through EP %u failed: %s (%s)", rmr->cell->id,
                rmr->ia->provider->it_name, ep->cell->id, itx_status_name(st),
                itx_error_detail() != NULL ? itx_error_detail() : "");
      return st == IT_ERR_INVALID_RMR ? DATX_ERR(DAT_INVALID_STATE, 0)
                                      : datx_status(st, DAT_INVALID_HANDLE_EP);
    }
    if (rmr_context != NULL)
      *rmr_context = 0;
    return DAT_SUCCESS;
  }
  if (va_type != DAT_VA_TYPE_VA)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
  if (privs & ~(DAT_MEM_PRIV_FLAGS) DAT_MEM_PRIV_ALL_FLAG)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  datx_lmr_t *lmr = datx_cell_get(lmr_handle, DATX_LMR);
  if (lmr == NULL || lmr->ia != rmr->ia)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
  /* The triplet names the LMR by lmr_context too: it must be this LMR. */
  if (triplet->lmr_context != lmr->cell->id)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (rmr->pz != lmr->pz || rmr->pz != ep->pz)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  it_rmr_context_t ctx = 0;
  it_dto_cookie_t itc = bind_cookie(rmr, cookie);
  st = it_rmr_link(rmr->it, lmr->it, (void *) (uintptr_t) triplet->virtual_address,
                   triplet->segment_length, IT_ADDR_MODE_ABSOLUTE, remote_privs_of(privs), ep->it,
                   itc, itf, &ctx);
  if (st != IT_SUCCESS) {
    g_message("DAT RMR %u on %s: binding %llu bytes of LMR %u through EP %u failed: %s (%s)",
              rmr->cell->id, rmr->ia->provider->it_name,
              (unsigned long long) triplet->segment_length, lmr->cell->id, ep->cell->id,
              itx_status_name(st), itx_error_detail() != NULL ? itx_error_detail() : "");
    switch (st) {
    case IT_ERR_RANGE:
    case IT_ERR_INVALID_LENGTH:
      return DATX_ERR(DAT_LENGTH_ERROR, 0);
    case IT_ERR_INVALID_PRIVS:
      return DATX_ERR(DAT_PRIVILEGES_VIOLATION, 0);
    case IT_ERR_INVALID_PZ:
      return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    case IT_ERR_INVALID_LMR:
      return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
    case IT_ERR_INVALID_RMR:
      return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
    default:
      return datx_status(st, DAT_INVALID_HANDLE_EP);
    }
  }
  if (ctx > UINT32_MAX) {
    /* As for LMRs (dat_lmr.c): DAT's rmr_context is 32 bits. */
    g_warning("IT-API interface %s gave RMR %u the context 0x%llx, wider than DAT's 32-bit "
              "rmr_context: the bind is undone", rmr->ia->provider->it_name, rmr->cell->id,
              (unsigned long long) ctx);
    it_rmr_unlink(rmr->it, ep->it, itc, 0);
    return DATX_ERR(DAT_INTERNAL_ERROR, 0);
  }
  g_mutex_lock(&rmr->lock);
  rmr->context = (DAT_RMR_CONTEXT) ctx;
  rmr->triplet = *triplet;
  rmr->privs = privs;
  g_mutex_unlock(&rmr->lock);
  if (rmr_context != NULL)
    *rmr_context = (DAT_RMR_CONTEXT) ctx;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_rmr_bind(DAT_RMR_HANDLE rmr_handle, DAT_LMR_HANDLE lmr_handle, const DAT_LMR_TRIPLET *triplet,
              DAT_MEM_PRIV_FLAGS privs, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_handle,
              DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT *rmr_context)
{
  datx_cell_t *held = datx_cell_hold(rmr_handle, DATX_RMR);
  if (held == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
  /* The EP and the LMR are held too: their frees wait for the bind. */
  datx_cell_t *ep_held = datx_cell_hold(ep_handle, DATX_EP);
  datx_cell_t *lmr_held = lmr_handle != NULL ? datx_cell_hold(lmr_handle, DATX_LMR) : NULL;
  DAT_RETURN ret = rmr_bind_on_held(held->object, lmr_handle, triplet, privs, va_type, ep_handle,
                                    cookie, flags, rmr_context);
  if (lmr_held != NULL)
    datx_cell_put(lmr_held);
  if (ep_held != NULL)
    datx_cell_put(ep_held);
  datx_cell_put(held);
  return ret;
}

DAT_RETURN
datx_rmr_free(DAT_RMR_HANDLE rmr_handle)
{
  datx_cell_t *cell = datx_cell_hold(rmr_handle, DATX_RMR);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
  datx_rmr_t *rmr = cell->object;
  /* DAT 2.0 dat_rmr_free: a bound RMR is unbound by its free; IT-API's
   * free does that, and refuses a region whose link is still queued. */
  it_status_t st = it_rmr_free(rmr->it);
  datx_cell_put(cell);
  if (st != IT_SUCCESS) {
    g_message("DAT RMR %u on %s: it_rmr_free failed: %s (%s); wait for its bind's completion "
              "and free it again", rmr->cell->id, rmr->ia->provider->it_name,
              itx_status_name(st), itx_error_detail() != NULL ? itx_error_detail() : "");
    return st == IT_ERR_INVALID_RMR ? DATX_ERR(DAT_INVALID_STATE, 0)
                                    : datx_status(st, DAT_INVALID_HANDLE_RMR);
  }
  /* A bind or query holding it: wait it out. */
  if (datx_cell_retire_wait(cell) != DATX_RETIRED)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
  datx_cell_unuse(rmr->pz->cell);
  datx_cell_kill(rmr->cell, rmr->ia);
  g_mutex_clear(&rmr->lock);
  g_free(rmr);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_rmr_translate_bind(const it_dto_cmpl_event_t *in, DAT_EVENT *out)
{
  uint32_t id = (uint32_t) (in->cookie >> 32), seq = (uint32_t) in->cookie;
  DAT_RMR_BIND_COMPLETION_EVENT_DATA *d = &out->event_data.rmr_completion_event_data;
  out->event_number = DAT_RMR_BIND_COMPLETION_EVENT;
  d->rmr_handle = DAT_HANDLE_NULL;
  d->user_cookie.as_64 = 0;
  d->status = datx_dto_status(in->dto_status);
  /* A freed RMR's consumer cookies went with it: the event names no RMR
   * and no cookie. */
  datx_cell_t *held = datx_cell_hold_id(id, DATX_RMR);
  if (held == NULL) {
    g_message("the completion of a bind of RMR %u, freed since, names no consumer cookie", id);
    return DAT_SUCCESS;
  }
  datx_rmr_t *rmr = held->object;
  d->rmr_handle = held;
  g_mutex_lock(&rmr->lock);
  if (rmr->binds[seq % DATX_RMR_BINDS].seq == seq) {
    d->user_cookie = rmr->binds[seq % DATX_RMR_BINDS].cookie;
    rmr->binds[seq % DATX_RMR_BINDS].seq = 0;
  } else {
    g_message("DAT RMR %u: bind %u completed after %d later binds; its consumer cookie is no "
              "longer kept (the last %d are): report 0", id, seq, DATX_RMR_BINDS, DATX_RMR_BINDS);
  }
  g_mutex_unlock(&rmr->lock);
  datx_cell_put(held);
  return DAT_SUCCESS;
}

gboolean
datx_rmr_context_of(it_handle_t unlinked, DAT_RMR_CONTEXT *context)
{
  it_context_t ctx;
  if (unlinked == IT_NULL_HANDLE || it_get_consumer_context(unlinked, &ctx) != IT_SUCCESS)
    return FALSE;
  datx_cell_t *held = datx_cell_hold(ctx.ptr, DATX_RMR);
  if (held == NULL)
    return FALSE;
  datx_rmr_t *rmr = held->object;
  g_mutex_lock(&rmr->lock);
  *context = rmr->context;
  g_mutex_unlock(&rmr->lock);
  datx_cell_put(held);
  return TRUE;
}

/* The live RMR of @p ia whose rmr_context is @p context, held; or NULL. */
static datx_cell_t *
rmr_hold_context(datx_ia_t *ia, DAT_RMR_CONTEXT context)
{
  datx_cell_t *found = NULL;
  g_mutex_lock(&ia->lock);
  for (GList *l = ia->children; l != NULL && found == NULL; l = l->next) {
    datx_cell_t *cell = l->data;
    if (cell->type != DATX_RMR)
      continue;
    datx_cell_t *held = datx_cell_hold(cell, DATX_RMR);
    if (held == NULL)
      continue;
    datx_rmr_t *rmr = held->object;
    g_mutex_lock(&rmr->lock);
    gboolean match = rmr->context == context && context != 0;
    g_mutex_unlock(&rmr->lock);
    if (match)
      found = held;
    else
      datx_cell_put(held);
  }
  g_mutex_unlock(&ia->lock);
  return found;
}

static DAT_RETURN
post_send_inv_on_held(datx_ep_t *ep, DAT_COUNT n, const DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                      DAT_COMPLETION_FLAGS flags, DAT_BOOLEAN invalidate, DAT_RMR_CONTEXT context)
{
  it_lmr_triplet_t seg[DATX_MAX_SEGS];
  size_t k;
  uint64_t total;
  DAT_RETURN ret = datx_segments_of(ep->ia, n, iov, seg, &k, &total);
  if (ret != DAT_SUCCESS)
    return ret;
  it_status_t st = invalidate ? it_post_send_and_unlink(ep->it, seg, k, cookie.as_64,
                                                        dto_flags_of(flags), context)
                              : it_post_send(ep->it, seg, k, cookie.as_64, dto_flags_of(flags));
  if (st == IT_ERR_OP_NOT_SUPPORTED) {
    g_message("DAT EP %u on %s: Send with Invalidate refused: %s (%s)", ep->cell->id,
              ep->ia->provider->it_name, itx_status_name(st),
              itx_error_detail() != NULL ? itx_error_detail() : "");
    return DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
  }
  return datx_status(st, DAT_INVALID_HANDLE_EP);
}

DAT_RETURN
datx_ep_post_send_with_invalidate(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                  DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                                  DAT_BOOLEAN invalidate, DAT_RMR_CONTEXT context)
{
  datx_cell_t *held = datx_cell_hold(ep_handle, DATX_EP);
  if (held == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  DAT_RETURN ret = post_send_inv_on_held(held->object, n, iov, cookie, flags, invalidate, context);
  datx_cell_put(held);
  return ret;
}

static DAT_RETURN
post_read_to_rmr_on_held(datx_ep_t *ep, const DAT_RMR_TRIPLET *local, DAT_DTO_COOKIE cookie,
                         const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags)
{
  if (local == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (remote == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  if (local->segment_length > remote->segment_length)
    return DATX_ERR(DAT_LENGTH_ERROR, 0);
  datx_cell_t *sink = rmr_hold_context(ep->ia, local->rmr_context);
  if (sink == NULL)
    return DATX_ERR(DAT_PROTECTION_VIOLATION, DAT_PROTECTION_RDMA_READ);
  datx_rmr_t *rmr = sink->object;
  it_rmr_triplet_t seg = { .rmr = rmr->it,
                           .addr.abs = (void *) (uintptr_t) local->virtual_address,
                           .length = local->segment_length };
  it_status_t st = it_post_rdma_read_to_rmr(ep->it, &seg, 1, cookie.as_64, dto_flags_of(flags),
                                            remote->virtual_address, remote->rmr_context);
  datx_cell_put(sink);
  if (st == IT_ERR_OP_NOT_SUPPORTED) {
    g_message("DAT EP %u on %s: RDMA Read to RMR refused: %s (%s)", ep->cell->id,
              ep->ia->provider->it_name, itx_status_name(st),
              itx_error_detail() != NULL ? itx_error_detail() : "");
    return DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
  }
  if (st == IT_ERR_INVALID_RMR || st == IT_ERR_INVALID_PZ)
    return DATX_ERR(DAT_PROTECTION_VIOLATION, DAT_PROTECTION_RDMA_READ);
  return datx_status(st, DAT_INVALID_HANDLE_EP);
}

DAT_RETURN
datx_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep_handle, const DAT_RMR_TRIPLET *local,
                              DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                              DAT_COMPLETION_FLAGS flags)
{
  datx_cell_t *held = datx_cell_hold(ep_handle, DATX_EP);
  if (held == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  DAT_RETURN ret = post_read_to_rmr_on_held(held->object, local, cookie, remote, flags);
  datx_cell_put(held);
  return ret;
}
