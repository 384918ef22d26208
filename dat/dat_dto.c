/*
 * dat/: data transfers.  DAT's LMR triplets name a region by lmr_context
 * (the LMR's cell number) and an absolute virtual address; IT-API's name
 * the region's handle and the same address.  A zero-length DAT segment
 * names nothing (DAT 2.0 6.6.x) and is left out.  The consumer's DTO cookie
 * is IT-API's cookie, returned as it is in the completion.
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

static it_dto_flags_t
flags_of(DAT_COMPLETION_FLAGS f)
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

typedef enum { POST_SEND, POST_RECV, POST_READ, POST_WRITE } post_op_t;

/* One post on the EP held for the call (dat_ep_free waits for it): its
 * segments, then the IT-API call of @op.  @remote only for a Read or a
 * Write, whose local total may not exceed the remote segment. */
static DAT_RETURN
ep_post(DAT_EP_HANDLE ep_handle, post_op_t op, DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
        DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags)
{
  datx_cell_t *held = datx_cell_hold(ep_handle, DATX_EP);
  if (held == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  const datx_ep_t *ep = held->object;
  gboolean rdma = op == POST_READ || op == POST_WRITE;
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
  if (ret == DAT_SUCCESS) {
    it_status_t st;
    switch (op) {
    case POST_SEND:
      st = it_post_send(ep->it, seg, k, cookie.as_64, flags_of(flags));
      break;
    case POST_RECV:
      /* A receive always completes with an event (DAT 2.0 6.6.2). */
      st = it_post_recv(ep->it, seg, k, cookie.as_64, IT_COMPLETION_FLAG);
      break;
    case POST_READ:
      st = it_post_rdma_read(ep->it, seg, k, cookie.as_64, flags_of(flags),
                             remote->virtual_address, remote->rmr_context);
      break;
    default:
      st = it_post_rdma_write(ep->it, seg, k, cookie.as_64, flags_of(flags),
                              remote->virtual_address, remote->rmr_context);
      break;
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
  return ep_post(ep_handle, POST_SEND, n, iov, cookie, NULL, flags);
}

DAT_RETURN
datx_ep_post_recv(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                  DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
{
  return ep_post(ep_handle, POST_RECV, n, iov, cookie, NULL, flags);
}

DAT_RETURN
datx_ep_post_rdma_read(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                       DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                       DAT_COMPLETION_FLAGS flags)
{
  return ep_post(ep_handle, POST_READ, n, iov, cookie, remote, flags);
}

DAT_RETURN
datx_ep_post_rdma_write(DAT_EP_HANDLE ep_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                        DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                        DAT_COMPLETION_FLAGS flags)
{
  return ep_post(ep_handle, POST_WRITE, n, iov, cookie, remote, flags);
}
