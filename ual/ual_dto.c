/*
 * Data transfer operations: the hot path.  Checks here are those IT-API
 * reports synchronously (handles, segment counts, flags, EP state); the
 * provider checks keys, domains, bounds and rights as hardware does and
 * reports them in the completion.
 *
 * SPDX-License-Identifier: MIT
 */
#include "ual.h"

/* The address segment @t names in @lmr, as the provider takes it.
 * Relative: an offset; an I/O buffer list region: an I/O address, which is
 * the virtual address here (it_mem_map). */
static inline uint64_t
seg_addr(const ual_lmr_t *lmr, const it_lmr_triplet_t *t)
{
  return lmr->addr_mode == IT_ADDR_MODE_RELATIVE ? (uint64_t) (uintptr_t) lmr->addr + t->addr.rel :
         lmr->iobl ? (uint64_t) (uintptr_t) t->addr.io : (uint64_t) (uintptr_t) t->addr.abs;
}

it_status_t
ual_to_sges(const it_lmr_triplet_t *t, size_t n, size_t max, rnicpi_sge_t *out)
{
  if (G_UNLIKELY(n > max || n > UAL_MAX_SGE))
    return ual_fail(IT_ERR_INVALID_NUM_SEGMENTS, "%zu segments exceed the EP's limit of %zu", n, max);
  if (G_UNLIKELY(n > 0 && t == NULL))
    return ual_fail(IT_ERR_INVALID_NUM_SEGMENTS, "%zu segments but the segment list is NULL", n);
  for (size_t i = 0; i < n; i++) {
    ual_lmr_t *lmr = ual_lmr_get(t[i].lmr);
    if (G_UNLIKELY(lmr == NULL))
      return ual_fail(IT_ERR_INVALID_LMR, "segment %zu names %p, not a live LMR", i, (void *) t[i].lmr);
    if (G_UNLIKELY(t[i].length > UINT32_MAX))
      return ual_fail(IT_ERR_INVALID_LENGTH, "segment %zu is %" G_GUINT64_FORMAT " bytes; at most 4 GiB - 1",
                      i, (guint64) t[i].length);
    out[i].addr = seg_addr(lmr, &t[i]);
    out[i].length = (uint32_t) t[i].length;
    out[i].pad = 0;
    out[i].lkey = __atomic_load_n(&lmr->lkey, __ATOMIC_RELAXED);
  }
  return IT_SUCCESS;
}

/* ual_to_sges for one segment, within the limit: the common case, inline. */
static inline it_status_t
ual_to_sge1(const it_lmr_triplet_t *t, rnicpi_sge_t *out)
{
  ual_lmr_t *lmr = t != NULL ? ual_lmr_get(t->lmr) : NULL;
  if (G_UNLIKELY(lmr == NULL || t->length > UINT32_MAX))
    return ual_to_sges(t, 1, 1, out);  /* says which */
  out->addr = seg_addr(lmr, t);
  out->length = (uint32_t) t->length;
  out->pad = 0;
  out->lkey = __atomic_load_n(&lmr->lkey, __ATOMIC_RELAXED);
  return IT_SUCCESS;
}

/* A send-queue operation as a message names it, and the capability it
 * needs beyond RC (0: none; a window bind: its window's type). */
static const struct {
  const char *name;
  uint64_t cap;
} wr_rule[RNICPI_WR_OPCODE_COUNT] = {
  [RNICPI_WR_SEND] = { "a Send", 0 },
  [RNICPI_WR_SEND_INV] = { "a Send with Invalidate", RNICPI_CAP_REMOTE_INVALIDATE },
  [RNICPI_WR_RDMA_WRITE] = { "an RDMA Write", 0 },
  [RNICPI_WR_RDMA_READ] = { "an RDMA Read", 0 },
  [RNICPI_WR_ATOMIC_CMP_SWP] = { "an atomic compare and swap", RNICPI_CAP_ATOMICS },
  [RNICPI_WR_ATOMIC_FETCH_ADD] = { "an atomic fetch and add", RNICPI_CAP_ATOMICS },
  [RNICPI_WR_BIND_MW] = { "an RMR link (window bind)", 0 },
  [RNICPI_WR_LOCAL_INV] = { "a local invalidation", RNICPI_CAP_LOCAL_INVALIDATE },
  [RNICPI_WR_FAST_REG] = { "a fast registration", RNICPI_CAP_FAST_REGISTER },
  [RNICPI_WR_RDMA_READ_INV] = { "an RDMA Read with Invalidate", RNICPI_CAP_READ_SINK_MW },
  [RNICPI_WR_IMM_DATA] = { "immediate data", RNICPI_CAP_IMMEDIATE },
  [RNICPI_WR_RDMA_WRITE_IMM] = { "an RDMA Write with immediate data", RNICPI_CAP_IMMEDIATE },
};

/* A request the provider does not carry out: which capability it needs,
 * and what the provider advises to get it (RNIC-PI 1.12 cap_advice: the
 * provider's settings are its own to name). */
static it_status_t
post_unsupported(ual_ep_t *ep, const rnicpi_send_wr_t *wr)
{
  ual_ia_t *ia = ep->obj.ia;
  void *h = (void *) (uintptr_t) ep->obj.handle;
  if (wr == NULL || (unsigned) wr->opcode >= RNICPI_WR_OPCODE_COUNT)
    return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "provider '%s' does not support this %s on EP %p; itapi-info "
                    "lists what IA '%s' offers", ia->prov->name, wr == NULL ? "receive" : "request", h,
                    ia->iface->name);
  uint64_t cap = wr_rule[wr->opcode].cap;
  if (wr->opcode == RNICPI_WR_BIND_MW && wr->bind.mw != NULL)
    cap = wr->bind.mw->type == RNICPI_MW_WIDE ? RNICPI_CAP_MW_WIDE : RNICPI_CAP_MW_NARROW;
  else if (wr->opcode == RNICPI_WR_RDMA_READ && (wr->flags & RNICPI_WR_SINK_MW))
    cap = RNICPI_CAP_READ_SINK_MW;  /* it_post_rdma_read_to_rmr */
  if (cap == 0)
    return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "provider '%s' does not support %s on EP %p; itapi-info lists "
                    "what IA '%s' offers", ia->prov->name, wr_rule[wr->opcode].name, h, ia->iface->name);
  char advice[UAL_ADVICE_LEN];
  const char *a = ual_cap_advice(ia, cap, advice);
  /* The IA may have the capability and this connection not (an option
   * both ends must offer, RFC 7306 on iWARP). */
  return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "provider '%s' does not support %s on EP %p: IA '%s' %s "
                  "capability \"%s\"%s%s", ia->prov->name, wr_rule[wr->opcode].name, h, ia->iface->name,
                  (ia->caps.features & cap) ? "has, and this connection does not use," : "lacks",
                  rnicpi_cap_name(cap), a, *a == '\0' ? "; itapi-info lists what it offers" : "");
}

it_status_t
ual_post_fail(ual_ep_t *ep, rnicpi_status_t rs, const rnicpi_send_wr_t *wr)
{
  switch (rs) {
  case RNICPI_EFULL:
    return ual_fail(IT_ERR_TOO_MANY_POSTS, "the queue of EP %p is full; wait for completions",
                    (void *) (uintptr_t) ep->obj.handle);
  case RNICPI_ESTATE:
    return ual_fail(IT_ERR_INVALID_EP_STATE, "EP %p is not connected", (void *) (uintptr_t) ep->obj.handle);
  case RNICPI_ELIMIT:
    return ual_fail(IT_ERR_INVALID_NUM_SEGMENTS, "too many segments for EP %p",
                    (void *) (uintptr_t) ep->obj.handle);
  case RNICPI_ENOTSUP:
    return post_unsupported(ep, wr);
  default:
    return ual_fail(ual_map_status(rs), "provider '%s' refused the work request on EP %p: %s",
                    ep->obj.ia->prov->name, (void *) (uintptr_t) ep->obj.handle, rnicpi_status_message(rs));
  }
}

/* The request flags of DTO flags, bit for bit with no branch (a post's):
 * the completion flag stays, the solicited and the two fences move down
 * one (IT_NOTIFY_FLAG, between them, is left out). */
static inline uint32_t
wr_flags(it_dto_flags_t f)
{
  G_STATIC_ASSERT((int) IT_COMPLETION_FLAG == (int) RNICPI_WR_SIGNALED &&
                  (int) IT_SOLICITED_WAIT_FLAG >> 1 == (int) RNICPI_WR_SOLICITED &&
                  (int) IT_BARRIER_FENCE_FLAG >> 1 == (int) RNICPI_WR_FENCE &&
                  (int) IT_UNLINK_FENCE_FLAG >> 1 == (int) RNICPI_WR_LOCAL_FENCE);
  return ((uint32_t) f & IT_COMPLETION_FLAG) |
         (((uint32_t) f >> 1) & (RNICPI_WR_SOLICITED | RNICPI_WR_FENCE | RNICPI_WR_LOCAL_FENCE));
}

gboolean
ual_ep_established(ual_ep_t *ep, int state)
{
  /* The provider may complete the peer's first message before its
   * ESTABLISHED upcall has moved the EP on: an application that reads its
   * DTO EVD before its CM EVD (a server answering the first request) must
   * be able to answer.  The queue pair's own state says whether the
   * connection is up. */
  if (state != IT_EP_STATE_PASSIVE_CONNECTION_PENDING && state != IT_EP_STATE_ACTIVE2_CONNECTION_PENDING &&
      state != IT_EP_STATE_ACTIVE1_CONNECTION_PENDING)
    return FALSE;
  return ep->obj.ia->prov->queue->qp_state(ep->qp) == RNICPI_QPS_RTS;
}

/* The checks common to every send-queue post; @allowed are the unlink
 * flags the operation takes. */
it_status_t
ual_post_checks(it_ep_handle_t ep_handle, it_dto_flags_t flags, it_dto_flags_t allowed, const char *fn,
                ual_ep_t **out)
{
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (G_UNLIKELY(ep == NULL))
    return ual_fail(IT_ERR_INVALID_EP, "%s: %p is not a live EP handle", fn, (void *) ep_handle);
  if (G_UNLIKELY((flags & ~UAL_DTO_FLAGS_KNOWN) != 0 ||
                 (flags & (IT_UNLINK_LOCAL_SINK | IT_UNLINK_FENCE_FLAG) & ~allowed)))
    return ual_fail(IT_ERR_INVALID_DTO_FLAGS, "%s: flags 0x%x are unknown, or an unlink flag this "
                    "operation does not take (IT_UNLINK_FENCE_FLAG: the unlink calls; IT_UNLINK_LOCAL_SINK: "
                    "it_post_rdma_read_to_rmr)", fn, (unsigned) flags);
  if (G_UNLIKELY(ep->ud))
    return ual_fail(IT_ERR_INVALID_EP_TYPE, "%s: EP %p is a datagram EP; send with it_post_sendto", fn,
                    (void *) ep_handle);
  int state = g_atomic_int_get(&ep->state);
  if (G_UNLIKELY(state != IT_EP_STATE_CONNECTED && state != IT_EP_STATE_NONOPERATIONAL &&
                 !ual_ep_established(ep, state)))
    return ual_fail(IT_ERR_INVALID_EP_STATE, "%s: EP %p is in state %d; send-side posts need a connected "
                    "EP (a NONOPERATIONAL one completes them flushed)", fn, (void *) ep_handle, state);
  *out = ep;
  return IT_SUCCESS;
}

/* Hand a checked request with its list to the provider. */
it_status_t
ual_post_sq_sges(ual_ep_t *ep, rnicpi_send_wr_t *wr, rnicpi_sge_t *sge, size_t n, it_dto_flags_t flags)
{
  wr->sg_list = sge;
  wr->num_sge = (uint32_t) n;
  wr->flags |= wr_flags(flags);
  return ual_post_status(ep, ep->post_send(ep->qp, wr), wr);
}

/* A send-queue post: common checks, then the provider.  The unlink flags
 * are refused unless the operation allows them (the unlink calls). */
it_status_t
ual_post_sq(it_ep_handle_t ep_handle, rnicpi_send_wr_t *wr, const it_lmr_triplet_t *segs, size_t n,
            it_dto_flags_t flags, it_dto_flags_t allowed, const char *fn)
{
  ual_ep_t *ep;
  it_status_t st = ual_post_checks(ep_handle, flags, allowed, fn, &ep);
  if (G_UNLIKELY(st != IT_SUCCESS))
    return st;
  size_t max;
  switch (wr->opcode) {
  case RNICPI_WR_RDMA_READ: max = MAX(ep->attr.srv.rc.max_rdma_read_segments, 1); break;
  case RNICPI_WR_RDMA_WRITE:
  case RNICPI_WR_RDMA_WRITE_IMM: max = MAX(ep->attr.srv.rc.max_rdma_write_segments, 1); break;
  case RNICPI_WR_IMM_DATA: max = 0; break;
  case RNICPI_WR_ATOMIC_CMP_SWP:
  case RNICPI_WR_ATOMIC_FETCH_ADD: max = 1; break; /* the one 8-byte result segment */
  default: max = ep->attr.max_send_segments; break;
  }
  rnicpi_sge_t sge[UAL_MAX_SGE];
  st = ual_to_sges(segs, n, max, sge);
  if (G_UNLIKELY(st != IT_SUCCESS))
    return st;
  return ual_post_sq_sges(ep, wr, sge, n, flags);
}

/* The common case of a send-queue post, one segment of a live LMR on a
 * connected RC EP with no unlink flag: the checks of ual_post_sq, inline
 * and in one pass.  Anything else, errors included, takes ual_post_sq,
 * which says what is wrong.  @max1: one segment is within the EP's limit
 * whatever its attributes (RDMA Write and Read count at least one). */
static inline __attribute__((always_inline)) it_status_t
ual_post_sq1(it_ep_handle_t ep_handle, rnicpi_send_wr_t *wr, const it_lmr_triplet_t *segs, size_t n,
             it_dto_flags_t flags, gboolean max1, const char *fn)
{
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (G_LIKELY(ep != NULL && n == 1 && segs != NULL &&
               (flags & ~(UAL_DTO_FLAGS_KNOWN & ~(it_dto_flags_t) (IT_UNLINK_LOCAL_SINK | IT_UNLINK_FENCE_FLAG))) == 0 &&
               !ep->ud && g_atomic_int_get(&ep->state) == IT_EP_STATE_CONNECTED &&
               (max1 || ep->attr.max_send_segments >= 1))) {
    rnicpi_sge_t sge;
    it_status_t st = ual_to_sge1(segs, &sge);
    if (G_UNLIKELY(st != IT_SUCCESS))
      return st;
    wr->sg_list = &sge;
    wr->num_sge = 1;
    wr->flags = wr_flags(flags);
    rnicpi_status_t rs = ep->post_send(ep->qp, wr);
    return ual_post_status(ep, rs, wr);
  }
  return ual_post_sq(ep_handle, wr, segs, n, flags, 0, fn);
}

/* The common members of a send-queue request.  The opcode-specific ones
 * (bind, fast_reg, the datagram address) stay unset: rnicpi.h lets a
 * provider read them only for their opcodes, and clearing the whole
 * request costs more than the rest of a post. */
static inline void
wr_set(rnicpi_send_wr_t *wr, it_dto_cookie_t cookie, rnicpi_wr_opcode_t op, uint64_t raddr, uint64_t rkey)
{
  wr->wr_id = cookie;
  wr->opcode = op;
  wr->flags = 0;
  wr->sg_list = NULL;
  wr->num_sge = 0;
  wr->remote_addr = raddr;
  wr->rkey = rkey;
  wr->invalidate_rkey = 0;
  wr->compare_add = 0;
  wr->swap = 0;
}

it_status_t
it_post_send(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments, size_t num_segments,
             it_dto_cookie_t cookie, it_dto_flags_t dto_flags)
{
  RSEC_SCOPE();
  rnicpi_send_wr_t wr;
  wr_set(&wr, cookie, RNICPI_WR_SEND, 0, 0);
  return ual_post_sq1(ep_handle, &wr, local_segments, num_segments, dto_flags, FALSE, "it_post_send");
}

it_status_t
it_post_rdma_write(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments, size_t num_segments,
                   it_dto_cookie_t cookie, it_dto_flags_t dto_flags, it_rdma_addr_t rdma_addr,
                   it_rmr_context_t rmr_context)
{
  RSEC_SCOPE();
  rnicpi_send_wr_t wr;
  wr_set(&wr, cookie, RNICPI_WR_RDMA_WRITE, rdma_addr, rmr_context);
  return ual_post_sq1(ep_handle, &wr, local_segments, num_segments, dto_flags, TRUE, "it_post_rdma_write");
}

it_status_t
it_post_rdma_read(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments, size_t num_segments,
                  it_dto_cookie_t cookie, it_dto_flags_t dto_flags, it_rdma_addr_t rdma_addr,
                  it_rmr_context_t rmr_context)
{
  RSEC_SCOPE();
  rnicpi_send_wr_t wr;
  wr_set(&wr, cookie, RNICPI_WR_RDMA_READ, rdma_addr, rmr_context);
  return ual_post_sq1(ep_handle, &wr, local_segments, num_segments, dto_flags, TRUE, "it_post_rdma_read");
}

it_status_t
it_post_atomic(it_ep_handle_t ep_handle, it_atomic_op_t op, uint64_t swap_or_add, uint64_t compare,
               const it_lmr_triplet_t *result, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
               it_rdma_addr_t rdma_addr, it_rmr_context_t rmr_context)
{
  RSEC_SCOPE();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL)
    return ual_fail(IT_ERR_INVALID_EP, "it_post_atomic: %p is not a live EP handle", (void *) ep_handle);
  if (!(ep->obj.ia->caps.features & RNICPI_CAP_ATOMICS)) {
    char advice[UAL_ADVICE_LEN];
    return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "IA '%s' has no atomics (it_ia_info_t.atomic_support)%s",
                    ep->obj.ia->iface->name, ual_cap_advice(ep->obj.ia, RNICPI_CAP_ATOMICS, advice));
  }
  if (op != IT_COMPARE_AND_SWAP && op != IT_FETCH_AND_ADD)
    return ual_fail(IT_ERR_INVALID_ATOMIC_OP, "atomic operation %d is neither compare-and-swap nor fetch-and-add",
                    (int) op);
  if (result == NULL || result->length != 8)
    return ual_fail(IT_ERR_INVALID_LENGTH, "the atomic result segment must be 8 bytes");
  rnicpi_send_wr_t wr = {
    .wr_id = cookie, .remote_addr = rdma_addr, .rkey = rmr_context,
    .opcode = op == IT_COMPARE_AND_SWAP ? RNICPI_WR_ATOMIC_CMP_SWP : RNICPI_WR_ATOMIC_FETCH_ADD,
    .compare_add = op == IT_COMPARE_AND_SWAP ? compare : swap_or_add,
    .swap = swap_or_add,
  };
  return ual_post_sq(ep_handle, &wr, result, 1, dto_flags, 0, "it_post_atomic");
}

/* Immediate data needs the capability, which a provider of an ABI minor
 * before 5 never has (rnicpi_caps_complete): checked before the opcode
 * reaches it.  A connection that does not use it (RFC 7306 not offered by
 * the peer) is refused by the provider. */
static it_status_t
post_imm(it_ep_handle_t ep_handle, rnicpi_send_wr_t *wr, const it_lmr_triplet_t *segs, size_t n,
         it_dto_flags_t flags, const char *fn)
{
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL)
    return ual_fail(IT_ERR_INVALID_EP, "%s: %p is not a live EP handle", fn, (void *) ep_handle);
  if (!(ep->obj.ia->caps.features & RNICPI_CAP_IMMEDIATE)) {
    char advice[UAL_ADVICE_LEN];
    return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "%s: IA '%s' has no immediate data (RNIC-PI capability "
                    "\"immediate-data\")%s", fn, ep->obj.ia->iface->name,
                    ual_cap_advice(ep->obj.ia, RNICPI_CAP_IMMEDIATE, advice));
  }
  return ual_post_sq(ep_handle, wr, segs, n, flags, 0, fn);
}

it_status_t
itx_post_rdma_write_imm(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments,
                        size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
                        it_rdma_addr_t rdma_addr, it_rmr_context_t rmr_context, uint64_t imm_data)
{
  RSEC_SCOPE();
  rnicpi_send_wr_t wr;
  wr_set(&wr, cookie, RNICPI_WR_RDMA_WRITE_IMM, rdma_addr, rmr_context);
  wr.imm_data = imm_data;
  return post_imm(ep_handle, &wr, local_segments, num_segments, dto_flags, "itx_post_rdma_write_imm");
}

it_status_t
itx_post_imm_data(it_ep_handle_t ep_handle, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
                  uint64_t imm_data)
{
  RSEC_SCOPE();
  rnicpi_send_wr_t wr;
  wr_set(&wr, cookie, RNICPI_WR_IMM_DATA, 0, 0);
  wr.imm_data = imm_data;
  return post_imm(ep_handle, &wr, NULL, 0, dto_flags, "itx_post_imm_data");
}

it_status_t
it_post_recv(it_handle_t handle, const it_lmr_triplet_t *local_segments, size_t num_segments,
             it_dto_cookie_t cookie, it_dto_flags_t dto_flags)
{
  RSEC_SCOPE();
  ual_obj_t *o = ual_handle_any(handle);
  if (G_UNLIKELY(o == NULL))
    return ual_fail(IT_ERR_INVALID_HANDLE, "it_post_recv: %p is not a live EP or SRQ handle", handle);
  if (G_UNLIKELY(o->type != IT_HANDLE_TYPE_EP && o->type != IT_HANDLE_TYPE_SRQ))
    return ual_fail(IT_ERR_INVALID_HANDLE, "it_post_recv: %p is a handle of type %d, not an EP or SRQ",
                    handle, (int) o->type);
  if (G_UNLIKELY((dto_flags & ~UAL_DTO_FLAGS_KNOWN) != 0 ||
                 (dto_flags & (IT_UNLINK_LOCAL_SINK | IT_UNLINK_FENCE_FLAG))))
    return ual_fail(IT_ERR_INVALID_DTO_FLAGS, "it_post_recv: flags 0x%x are unknown, or unlink flags a "
                    "receive does not take", (unsigned) dto_flags);
  if (o->type == IT_HANDLE_TYPE_SRQ)
    return ual_srq_post_recv((ual_srq_t *) o, local_segments, num_segments, cookie);
  ual_ep_t *ep = (ual_ep_t *) o;
  if (G_UNLIKELY(ep->ud))
    return ual_fail(IT_ERR_INVALID_EP_TYPE, "it_post_recv: EP %p is a datagram EP; receive with "
                    "it_post_recvfrom", handle);
  if (G_UNLIKELY(ep->srq != NULL))
    return ual_fail(IT_ERR_INVALID_RECV_DTO, "EP %p receives from SRQ %p; post receives to the SRQ",
                    handle, (void *) (uintptr_t) ep->srq->obj.handle);
  rnicpi_sge_t sge[UAL_MAX_SGE];
  it_status_t st = num_segments == 1 && ep->attr.max_recv_segments >= 1 ?
                   ual_to_sge1(local_segments, sge) :
                   ual_to_sges(local_segments, num_segments, ep->attr.max_recv_segments, sge);
  if (G_UNLIKELY(st != IT_SUCCESS))
    return st;
  rnicpi_recv_wr_t wr = { .wr_id = cookie, .sg_list = sge, .num_sge = (uint32_t) num_segments };
  rnicpi_status_t rs = ep->obj.ia->prov->data->post_recv(ep->qp, &wr);
  return ual_post_status(ep, rs, NULL);
}

/*
 * RDMA Read into memory windows of this side (IT-API 2.1,
 * rdma_read_local_extensions): each sink segment is an RMR triplet, its
 * address read in the RMR's addressing mode, its key the RMR's context.
 * The sink needs what a Read sink needs on the transport
 * (rdma_read_requires_remote_write): on InfiniBand the window's LMR must
 * allow local write, on iWARP the window itself remote write (its context
 * is the sink STag of the Read Response); the provider checks this at
 * execution, as for it_post_rdma_read, and a violation completes with
 * IT_DTO_ERR_LOCAL_PROTECTION.  IT_UNLINK_LOCAL_SINK (one segment) unlinks
 * the sink RMR once the data landed; the completion names it in
 * unlinked_mr_handle.
 */
it_status_t
it_post_rdma_read_to_rmr(it_ep_handle_t ep_handle, const it_rmr_triplet_t *local_segments, size_t num_segments,
                         it_dto_cookie_t cookie, it_dto_flags_t dto_flags, it_rdma_addr_t rdma_addr,
                         it_rmr_context_t rmr_context)
{
  const char *fn = "it_post_rdma_read_to_rmr";
  /* A read section, not the object lock: each sink's link state is read
   * under its own lock (ual_rmr_t), and only its key goes to the
   * provider, so a window freed meanwhile fails the Read in its
   * completion, as one freed after the post does. */
  RSEC_SCOPE();
  ual_ep_t *ep;
  it_status_t st = ual_post_checks(ep_handle, dto_flags, IT_UNLINK_LOCAL_SINK, fn, &ep);
  if (st != IT_SUCCESS)
    return st;
  uint64_t need = RNICPI_CAP_READ_SINK_MW | RNICPI_CAP_LOCAL_INVALIDATE;
  if ((ep->obj.ia->caps.features & need) != need)
    return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "IA '%s' cannot read into RMRs "
                    "(it_ia_info_t.rdma_read_local_extensions is IT_FALSE)", ep->obj.ia->iface->name);
  size_t max = MAX(ep->attr.srv.rc.max_rdma_read_segments, 1);
  if (num_segments > max || num_segments > UAL_MAX_SGE || (num_segments > 0 && local_segments == NULL))
    return ual_fail(IT_ERR_INVALID_NUM_SEGMENTS, "%s: %zu segments exceed the EP's limit of %zu, or the list "
                    "is NULL", fn, num_segments, max);
  if ((dto_flags & IT_UNLINK_LOCAL_SINK) && num_segments != 1)
    return ual_fail(IT_ERR_INVALID_NUM_SEGMENTS, "%s: IT_UNLINK_LOCAL_SINK unlinks one sink RMR; %zu segments "
                    "given", fn, num_segments);
  rnicpi_sge_t sge[UAL_MAX_SGE];
  ual_rmr_t *sink[UAL_MAX_SGE];
  for (size_t i = 0; i < num_segments; i++) {
    const it_rmr_triplet_t *t = &local_segments[i];
    ual_rmr_t *rmr = sink[i] = ual_rmr_get(t->rmr);
    if (rmr == NULL || !ual_rmr_lock_live(rmr))
      return ual_fail(IT_ERR_INVALID_RMR, "%s: segment %zu names %p, not a live RMR", fn, i, (void *) t->rmr);
    gboolean linked = rmr->linked;
    it_addr_mode_t mode = rmr->addr_mode;
    uint64_t ctx = rmr->ctx;
    g_mutex_unlock(&rmr->lock);
    if (!linked)
      return ual_fail(IT_ERR_INVALID_RMR, "%s: segment %zu names RMR %p, which is not linked", fn, i,
                      (void *) t->rmr);
    if (rmr->pz != ep->pz)
      return ual_fail(IT_ERR_INVALID_PZ, "%s: RMR %p and EP %p are in different PZs", fn, (void *) t->rmr,
                      (void *) ep_handle);
    if (t->length > UINT32_MAX)
      return ual_fail(IT_ERR_INVALID_LENGTH, "%s: segment %zu is %" G_GUINT64_FORMAT " bytes; at most 4 GiB - 1",
                      fn, i, (guint64) t->length);
    sge[i].addr = mode == IT_ADDR_MODE_RELATIVE ? (uint64_t) t->addr.rel : (uint64_t) (uintptr_t) t->addr.abs;
    sge[i].length = (uint32_t) t->length;
    sge[i].pad = 0;
    sge[i].lkey = ctx;
  }
  rnicpi_send_wr_t wr = {
    .wr_id = cookie, .flags = RNICPI_WR_SINK_MW, .remote_addr = rdma_addr, .rkey = rmr_context,
    .opcode = (dto_flags & IT_UNLINK_LOCAL_SINK) ? RNICPI_WR_RDMA_READ_INV : RNICPI_WR_RDMA_READ,
    .invalidate_rkey = (dto_flags & IT_UNLINK_LOCAL_SINK) ? sge[0].lkey : 0,
  };
  st = ual_post_sq_sges(ep, &wr, sge, num_segments, dto_flags);
  /* The sink is unlinked as the consumer sees it once the Read is posted,
   * unless another thread linked it anew meanwhile. */
  if (st == IT_SUCCESS && (dto_flags & IT_UNLINK_LOCAL_SINK)) {
    g_mutex_lock(&sink[0]->lock);
    if (sink[0]->ctx == sge[0].lkey)
      sink[0]->linked = FALSE;
    g_mutex_unlock(&sink[0]->lock);
  }
  return st;
}

it_rdma_addr_t
it_make_rdma_addr_absolute(void *addr)
{
  return (it_rdma_addr_t) (uintptr_t) addr;
}

it_rdma_addr_t
it_make_rdma_addr_relative(it_length_t offset)
{
  return (it_rdma_addr_t) offset;
}
