/*
 * dat/: data transfers.  DAT's LMR triplets name a region by lmr_context
 * (the LMR's cell number) and an absolute virtual address; IT-API's name
 * the region's handle and the same address.  A zero-length DAT segment
 * names nothing (DAT 2.0 6.6.x) and is left out.  The consumer's DTO cookie
 * is IT-API's cookie, returned as it is in the completion.  DAT's IB
 * extensions (dat_ib_extensions.h) post an RDMA Write with immediate data
 * (itx_post_rdma_write_imm) and the atomics (it_post_atomic); its
 * datagram operations are dat_ud.c's.
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

/* The 64-bit total of a post's segment lengths cannot wrap: at most
 * DATX_MAX_SEGS segments of 32 bits each (DAT_SEG_LENGTH). */
G_STATIC_ASSERT(sizeof(DAT_SEG_LENGTH) <= 4 && DATX_MAX_SEGS <= 1u << 31);

DAT_RETURN
datx_segments_of(const datx_ia_t *ia, DAT_COUNT n, const DAT_LMR_TRIPLET *iov, it_lmr_triplet_t *out,
            size_t *nout, uint64_t *total)
{
  if (n < 0 || n > DATX_MAX_SEGS || (n > 0 && iov == NULL))
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  size_t k = 0;
  *total = 0;
  for (DAT_COUNT i = 0; i < n; i++) {
    if (iov[i].segment_length == 0)
      continue;
    /* Held while read: dat_lmr_free waits for it. */
    datx_cell_t *cell = datx_lmr_hold_context(iov[i].lmr_context);
    datx_lmr_t *lmr = cell != NULL ? cell->object : NULL;
    gboolean ours = lmr != NULL && lmr->ia == ia;
    if (ours)
      out[k].lmr = lmr->it;
    if (cell != NULL)
      datx_cell_put(cell);
    if (!ours)
      return DATX_ERR(DAT_PROTECTION_VIOLATION, DAT_PROTECTION_READ);
    out[k].addr.abs = (void *) (uintptr_t) iov[i].virtual_address;
    out[k].length = iov[i].segment_length;
    *total += iov[i].segment_length;
    k++;
  }
  *nout = k;
  return DAT_SUCCESS;
}

typedef enum { POST_SEND, POST_RECV, POST_READ, POST_WRITE, POST_WRITE_IMM } post_op_t;

/* Keep @cookie of a signaled RDMA Write with immediate data of @ep until
 * its completion (datx_ep_imm_done), so that the completion is reported
 * as the extension's; before the post, which may complete at once. */
static void
imm_keep(datx_ep_t *ep, uint64_t cookie)
{
  g_mutex_lock(&ep->lock);
  if (ep->imm_cookies == NULL)
    ep->imm_cookies = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  g_array_append_val(ep->imm_cookies, cookie);
  g_atomic_int_inc(&ep->imm_pending);
  g_atomic_int_inc(&ep->ia->imm_pending);
  g_mutex_unlock(&ep->lock);
}

/* Forget the latest kept entry of @cookie (from the end: a post that
 * failed), or the oldest (from the start: a completion).  Send-queue
 * completions come in posting order, so the oldest entry of a cookie is
 * the one completing; two posts racing in two threads may have kept their
 * cookies in the other order, which matching by cookie does not mind. */
static gboolean
imm_forget(datx_ep_t *ep, uint64_t cookie, gboolean latest)
{
  gboolean found = FALSE;
  g_mutex_lock(&ep->lock);
  GArray *a = ep->imm_cookies;
  guint n = a != NULL ? a->len : 0;
  for (guint k = 0; k < n && !found; k++) {
    guint i = latest ? n - 1 - k : k;
    if (g_array_index(a, uint64_t, i) == cookie) {
      g_array_remove_index(a, i);
      g_atomic_int_dec_and_test(&ep->imm_pending);
      g_atomic_int_dec_and_test(&ep->ia->imm_pending);
      found = TRUE;
    }
  }
  g_mutex_unlock(&ep->lock);
  return found;
}

gboolean
datx_ep_imm_done(datx_ep_t *ep, uint64_t cookie)
{
  return g_atomic_int_get(&ep->imm_pending) > 0 && imm_forget(ep, cookie, FALSE);
}

void
datx_ep_imm_clear(datx_ep_t *ep)
{
  if (ep->imm_cookies != NULL)
    g_array_free(ep->imm_cookies, TRUE);
  if (ep->ud_reqs != NULL)
    g_ptr_array_free(ep->ud_reqs, TRUE);
  ep->ud_reqs = NULL;
  if (ep->ud_ahs != NULL)
    g_ptr_array_free(ep->ud_ahs, TRUE);
  ep->ud_ahs = NULL;
  if (ep->ud_cms != NULL)
    g_ptr_array_free(ep->ud_cms, TRUE);
  ep->ud_cms = NULL;
  ep->imm_cookies = NULL;
  if (ep->early_recvs != NULL)
    g_ptr_array_free(ep->early_recvs, TRUE);
  ep->early_recvs = NULL;
  if (ep->swallow != NULL)
    g_array_free(ep->swallow, TRUE);
  ep->swallow = NULL;
  g_mutex_clear(&ep->lock);
}

/* A receive posted before the connection was established: kept, to be
 * posted again if a connect try fails for want of a listener
 * (datx_ep_connect_retry).  An EP with an SRQ posts none of its own. */
static void
early_recv_keep(datx_ep_t *ep, uint64_t cookie, const it_lmr_triplet_t *seg, size_t n)
{
  datx_early_recv_t *r = g_malloc(sizeof(*r) + n * sizeof(seg[0]));
  r->cookie = cookie;
  r->n = n;
  memcpy(r->seg, seg, n * sizeof(seg[0]));
  g_mutex_lock(&ep->lock);
  if (ep->early_recvs == NULL)
    ep->early_recvs = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(ep->early_recvs, r);
  g_mutex_unlock(&ep->lock);
}

void
datx_ep_established(datx_ep_t *ep)
{
  g_atomic_int_set(&ep->established, 1);
  g_mutex_lock(&ep->lock);
  if (ep->early_recvs != NULL)
    g_ptr_array_set_size(ep->early_recvs, 0);
  g_mutex_unlock(&ep->lock);
}

gboolean
datx_ep_swallow(datx_ep_t *ep, uint64_t cookie)
{
  if (g_atomic_int_get(&ep->nswallow) == 0)
    return FALSE;
  gboolean found = FALSE;
  g_mutex_lock(&ep->lock);
  for (guint i = 0; ep->swallow != NULL && i < ep->swallow->len && !found; i++)
    if (g_array_index(ep->swallow, uint64_t, i) == cookie) {
      g_array_remove_index(ep->swallow, i);
      g_atomic_int_dec_and_test(&ep->nswallow);
      found = TRUE;
    }
  g_mutex_unlock(&ep->lock);
  return found;
}

/* Post the early receives of @ep again after a failed try flushed them,
 * each flush to be kept from the consumer (datx_ep_swallow). */
void
datx_ep_recvs_again(datx_ep_t *ep)
{
  g_mutex_lock(&ep->lock);
  for (guint i = 0; ep->early_recvs != NULL && i < ep->early_recvs->len; i++) {
    const datx_early_recv_t *r = g_ptr_array_index(ep->early_recvs, i);
    if (it_post_recv(ep->it, r->seg, r->n, r->cookie, IT_COMPLETION_FLAG) != IT_SUCCESS)
      continue;  /* its flush then reaches the consumer */
    if (ep->swallow == NULL)
      ep->swallow = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    g_array_append_val(ep->swallow, r->cookie);
    g_atomic_int_inc(&ep->nswallow);
  }
  g_mutex_unlock(&ep->lock);
}

/* The data path of a Send, an RDMA Read or an RDMA Write: the EP's and
 * the LMRs' cells are read, their objects neither read nor held
 * (datx_cell_peek()), so a post costs no atomic operation of this layer.
 * The checks are ep_post's.  Only a post IT-API took
 * returns TRUE; anything else, a refusal or a race with a free, is made
 * again by ep_post, which holds each object and says what is wrong (a
 * refused post left nothing behind). */
static inline __attribute__((always_inline)) gboolean
ep_post_fast(DAT_EP_HANDLE ep_handle, post_op_t op, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
             DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags)
{
  datx_cell_t *cell = datx_cell_peek(ep_handle, DATX_EP);
  it_ep_handle_t it = cell != NULL ? (it_ep_handle_t) (uintptr_t) datx_cell_it(cell) : IT_NULL_HANDLE;
  if (it == IT_NULL_HANDLE || (op != POST_SEND && remote == NULL))
    return FALSE;
  it_lmr_triplet_t seg[DATX_MAX_SEGS];
  size_t k = 0;
  uint64_t total = 0;
  if (G_LIKELY(n == 1 && iov != NULL && iov[0].segment_length != 0)) {
    /* One segment, what a latency-bound consumer posts: no loop. */
    datx_cell_t *lmr = datx_cell_peek_id(iov[0].lmr_context, DATX_LMR);
    uint64_t lmr_it = lmr != NULL && lmr->ia == cell->ia ? datx_cell_it(lmr) : 0;
    if (lmr_it == 0)
      return FALSE;
    seg[0].lmr = (it_lmr_handle_t) (uintptr_t) lmr_it;
    seg[0].addr.abs = (void *) (uintptr_t) iov[0].virtual_address;
    seg[0].length = total = iov[0].segment_length;
    k = 1;
  } else {
    if (n < 0 || n > DATX_MAX_SEGS || (n > 0 && iov == NULL))
      return FALSE;
    for (DAT_COUNT i = 0; i < n; i++) {
      if (iov[i].segment_length == 0)
        continue;
      datx_cell_t *lmr = datx_cell_peek_id(iov[i].lmr_context, DATX_LMR);
      uint64_t lmr_it = lmr != NULL && lmr->ia == cell->ia ? datx_cell_it(lmr) : 0;
      if (lmr_it == 0)
        return FALSE;
      seg[k].lmr = (it_lmr_handle_t) (uintptr_t) lmr_it;
      seg[k].addr.abs = (void *) (uintptr_t) iov[i].virtual_address;
      seg[k].length = iov[i].segment_length;
      total += iov[i].segment_length;
      k++;
    }
  }
  it_status_t st;
  switch (op) {
  case POST_SEND:
    st = it_post_send(it, seg, k, cookie.as_64, datx_dto_flags_of(flags));
    break;
  case POST_READ:
    if (total > remote->segment_length)
      return FALSE;
    st = it_post_rdma_read(it, seg, k, cookie.as_64, datx_dto_flags_of(flags),
                           remote->virtual_address, remote->rmr_context);
    break;
  case POST_WRITE:
    if (total > remote->segment_length)
      return FALSE;
    st = it_post_rdma_write(it, seg, k, cookie.as_64, datx_dto_flags_of(flags),
                            remote->virtual_address, remote->rmr_context);
    break;
  default:
    return FALSE;
  }
  return st == IT_SUCCESS;
}

/* One post on the EP held for the call (dat_ep_free waits for it): its
 * segments, then the IT-API call of @op.  @remote only for a Read or a
 * Write, whose local total may not exceed the remote segment; @imm only
 * for a Write with immediate data. */
static DAT_RETURN
ep_post(DAT_EP_HANDLE ep_handle, post_op_t op, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
        DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags, uint32_t imm)
{
  datx_cell_t *held = datx_cell_hold(ep_handle, DATX_EP);
  if (held == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  datx_ep_t *ep = held->object;
  gboolean rdma = op == POST_READ || op == POST_WRITE || op == POST_WRITE_IMM;
  it_lmr_triplet_t seg[DATX_MAX_SEGS];
  size_t k;
  uint64_t total;
  DAT_RETURN ret = rdma && remote == NULL ? DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5)
                                          : datx_segments_of(ep->ia, n, iov, seg, &k, &total);
  if (ret == DAT_SUCCESS && rdma && total > remote->segment_length)
    ret = DATX_ERR(DAT_LENGTH_ERROR, 0);
  /* DAT 2.0 dat_ep_create_with_srq: an EP with an SRQ takes its receives from the SRQ
   * alone; none can be posted to it. */
  if (ret == DAT_SUCCESS && op == POST_RECV && ep->srq != NULL)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
  /* A provider-made EP not configured yet has no IT-API endpoint. */
  if (ret == DAT_SUCCESS && ep->it == IT_NULL_HANDLE)
    ret = DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFTENTATIVE);
  if (ret == DAT_SUCCESS) {
    it_status_t st;
    switch (op) {
    case POST_SEND:
      st = it_post_send(ep->it, seg, k, cookie.as_64, datx_dto_flags_of(flags));
      break;
    case POST_RECV:
      /* A receive always completes with an event (DAT 2.0 6.6.2). */
      if (ep->ud) {
        st = it_post_recvfrom(ep->it, seg, k, cookie.as_64, IT_COMPLETION_FLAG);
        break;
      }
      /* Counted before the post, which its completion may overtake. */
      g_atomic_int_inc(&ep->recv_posted);
      st = it_post_recv(ep->it, seg, k, cookie.as_64, IT_COMPLETION_FLAG);
      if (st != IT_SUCCESS)
        g_atomic_int_dec_and_test(&ep->recv_posted);
      else if (!g_atomic_int_get(&ep->established))
        early_recv_keep(ep, cookie.as_64, seg, k);
      break;
    case POST_READ:
      st = it_post_rdma_read(ep->it, seg, k, cookie.as_64, datx_dto_flags_of(flags),
                             remote->virtual_address, remote->rmr_context);
      break;
    case POST_WRITE:
      st = it_post_rdma_write(ep->it, seg, k, cookie.as_64, datx_dto_flags_of(flags),
                              remote->virtual_address, remote->rmr_context);
      break;
    default: {
      gboolean signaled = (datx_dto_flags_of(flags) & IT_COMPLETION_FLAG) != 0;
      if (signaled)
        imm_keep(ep, cookie.as_64);
      st = itx_post_rdma_write_imm(ep->it, seg, k, cookie.as_64, datx_dto_flags_of(flags),
                                   remote->virtual_address, remote->rmr_context, imm);
      if (st != IT_SUCCESS && signaled)
        imm_forget(ep, cookie.as_64, TRUE);
      break;
    }
    }
    ret = datx_status(st, DAT_INVALID_HANDLE_EP);
  }
  datx_cell_put(held);
  return ret;
}

DAT_RETURN
datx_ep_post_send(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                  DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
  if (G_LIKELY(ep_post_fast(ep_handle, POST_SEND, n, iov, cookie, NULL, flags)))
    return DAT_SUCCESS;
  return ep_post(ep_handle, POST_SEND, n, iov, cookie, NULL, flags, 0);
}

DAT_RETURN
datx_ep_post_recv(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                  DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
  return ep_post(ep_handle, POST_RECV, n, iov, cookie, NULL, flags, 0);
}

DAT_RETURN
datx_ep_post_rdma_read(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                       DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                       DAT_COMPLETION_FLAGS flags)
{
  if (G_LIKELY(ep_post_fast(ep_handle, POST_READ, n, iov, cookie, remote, flags)))
    return DAT_SUCCESS;
  return ep_post(ep_handle, POST_READ, n, iov, cookie, remote, flags, 0);
}

DAT_RETURN
datx_ep_post_rdma_write(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                        DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                        DAT_COMPLETION_FLAGS flags)
{
  if (G_LIKELY(ep_post_fast(ep_handle, POST_WRITE, n, iov, cookie, remote, flags)))
    return DAT_SUCCESS;
  return ep_post(ep_handle, POST_WRITE, n, iov, cookie, remote, flags, 0);
}

/* dat_ib_post_rdma_write_immed: the arguments after the EP and the op. */
static DAT_RETURN
ext_write_imm(DAT_EP_HANDLE ep_handle, va_list args)
{
  DAT_COUNT n = va_arg(args, DAT_COUNT);
  const DAT_LMR_TRIPLET *iov = va_arg(args, const DAT_LMR_TRIPLET *);
  DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
  const DAT_RMR_TRIPLET *remote = va_arg(args, const DAT_RMR_TRIPLET *);
  DAT_UINT32 imm = va_arg(args, DAT_UINT32);
  DAT_COMPLETION_FLAGS flags = va_arg(args, DAT_COMPLETION_FLAGS);
  return ep_post(ep_handle, POST_WRITE_IMM, n, iov, cookie, remote, flags, imm);
}

/* dat_ib_post_fetch_and_add and dat_ib_post_cmp_and_swap: it_post_atomic
 * on the 8 bytes the remote triplet names, the old value into the one
 * local segment (8 bytes). */
static DAT_RETURN
ext_atomic(DAT_EP_HANDLE ep_handle, it_atomic_op_t aop, va_list args)
{
  uint64_t compare = 0;
  if (aop == IT_COMPARE_AND_SWAP)
    compare = va_arg(args, DAT_UINT64);
  uint64_t swap_or_add = va_arg(args, DAT_UINT64);
  const DAT_LMR_TRIPLET *local = va_arg(args, const DAT_LMR_TRIPLET *);
  DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
  const DAT_RMR_TRIPLET *remote = va_arg(args, const DAT_RMR_TRIPLET *);
  DAT_COMPLETION_FLAGS flags = va_arg(args, DAT_COMPLETION_FLAGS);
  datx_cell_t *held = datx_cell_hold(ep_handle, DATX_EP);
  if (held == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  datx_ep_t *ep = held->object;
  it_lmr_triplet_t seg[DATX_MAX_SEGS];
  size_t k = 0;
  uint64_t total = 0;
  DAT_RETURN ret = remote == NULL ? DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6)
                                  : datx_segments_of(ep->ia, local != NULL ? 1 : 0, local, seg, &k, &total);
  if (ret == DAT_SUCCESS && (k != 1 || total < 8 || remote->segment_length < 8))
    ret = DATX_ERR(DAT_LENGTH_ERROR, 0);
  if (ret == DAT_SUCCESS) {
    seg[0].length = 8;  /* the old value's 8 bytes */
    it_status_t st = it_post_atomic(ep->it, aop, swap_or_add, compare, &seg[0], cookie.as_64, datx_dto_flags_of(flags),
                                    remote->virtual_address, remote->rmr_context);
    ret = datx_status(st, DAT_INVALID_HANDLE_EP);
  }
  datx_cell_put(held);
  return ret;
}

/* dat_ib_open_query: an IA opened for its attributes alone. */
static DAT_RETURN
ext_open_query(const char *name, va_list args)
{
  DAT_IA_HANDLE *ia = va_arg(args, DAT_IA_HANDLE *);
  DAT_IA_ATTR_MASK ia_mask = va_arg(args, DAT_IA_ATTR_MASK);
  DAT_IA_ATTR *ia_attr = va_arg(args, DAT_IA_ATTR *);
  DAT_PROVIDER_ATTR_MASK pr_mask = va_arg(args, DAT_PROVIDER_ATTR_MASK);
  DAT_PROVIDER_ATTR *pr_attr = va_arg(args, DAT_PROVIDER_ATTR *);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  DAT_RETURN ret = datx_ia_open((const DAT_NAME_PTR) name, 8, &async, ia);
  if (ret != DAT_SUCCESS)
    return ret;
  ret = datx_ia_query(*ia, &async, ia_mask, ia_attr, pr_mask, pr_attr);
  if (ret != DAT_SUCCESS) {
    datx_ia_close(*ia, DAT_CLOSE_ABRUPT_FLAG);
    *ia = DAT_HANDLE_NULL;
  }
  return ret;
}

DAT_RETURN
datx_handle_extendedop(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args)
{
  switch ((int) op) {
  case DAT_IB_RDMA_WRITE_IMMED_OP:
    return ext_write_imm(handle, args);
  case DAT_IB_FETCH_AND_ADD_OP:
    return ext_atomic(handle, IT_FETCH_AND_ADD, args);
  case DAT_IB_CMP_AND_SWAP_OP:
    return ext_atomic(handle, IT_COMPARE_AND_SWAP, args);
  case DAT_IB_UD_SEND_OP:
    return datx_ud_post_send(handle, args);
  case DAT_IB_UD_AH_FREE_OP:
    return datx_ud_ah_free(handle, args);
  case DAT_IB_UD_CM_FREE_OP:
    return datx_ud_cm_free(handle, args);
  case DAT_IB_OPEN_QUERY_OP:
    return handle == NULL ? DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1)
                          : ext_open_query((const char *) handle, args);
  case DAT_IB_CLOSE_QUERY_OP:
    return datx_ia_close(handle, DAT_CLOSE_ABRUPT_FLAG);
  default:
    /* Counters and collectives are not offered (doc/dat.md). */
    return DATX_ERR(DAT_NOT_IMPLEMENTED, 0);
  }
}
