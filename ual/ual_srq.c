/*
 * Shared receive queues (IT-API 2.7): an SRQ feeds the receives of every
 * endpoint created with IT_EP_SRQ and its handle; a receive taken from it
 * completes on the receive EVD of the endpoint the message arrived on.  The
 * low watermark arms the provider's limit event, delivered once as
 * IT_ASYNC_AFF_SRQ_LOW_WATERMARK (re-arm with it_srq_modify).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "ual.h"

it_status_t
it_srq_create(it_pz_handle_t pz_handle, size_t max_recv_segments, size_t max_recv_dtos,
              it_srq_handle_t *srq_handle)
{
  it_status_t st = IT_SUCCESS;
  if (srq_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_srq_create: srq_handle is NULL");
  ual_lock_take();
  ual_pz_t *pz = ual_pz_get(pz_handle);
  if (pz == NULL) {
    st = ual_fail(IT_ERR_INVALID_PZ, "it_srq_create: %p is not a live PZ handle", (void *) pz_handle);
    goto unlock;
  }
  ual_ia_t *ia = pz->obj.ia;
  if (!(ia->caps.features & RNICPI_CAP_SRQ)) {
    st = ual_fail(IT_ERR_SRQ_NOT_SUPPORTED, "IA '%s' has no shared receive queues "
                  "(it_ia_info_t.srq_support)", ia->iface->name);
    goto unlock;
  }
  if (max_recv_dtos == 0 || max_recv_dtos > ia->caps.max_qp_wr) {
    st = ual_fail(IT_ERR_INVALID_SRQ_SIZE, "an SRQ of %zu receives: IA '%s' allows 1 to %u",
                  max_recv_dtos, ia->iface->name, ia->caps.max_qp_wr);
    goto unlock;
  }
  if (max_recv_segments == 0 || max_recv_segments > ia->caps.max_recv_sge) {
    st = ual_fail(IT_ERR_RESOURCE_RSEG, "%zu segments per receive: IA '%s' allows 1 to %u",
                  max_recv_segments, ia->iface->name, ia->caps.max_recv_sge);
    goto unlock;
  }
  ual_srq_t *q = g_new0(ual_srq_t, 1);
  q->pz = pz;
  q->max_recv_dtos = max_recv_dtos;
  q->max_recv_segs = max_recv_segments;
  if ((st = ual_handle_new(&q->obj, IT_HANDLE_TYPE_SRQ, ia)) != IT_SUCCESS) {
    g_free(q);
    goto unlock;
  }
  rnicpi_status_t rs = ia->prov->srq->srq_create(pz->pd, (uint32_t) max_recv_dtos,
                                                 (uint32_t) max_recv_segments, q->obj.handle, &q->srq);
  if (rs != RNICPI_OK) {
    ual_handle_release(&q->obj);
    g_free(q);
    st = ual_prov_refused(ia, rs, IT_ERR_SRQ_NOT_SUPPORTED, "create an SRQ of %zu receives", max_recv_dtos);
    goto unlock;
  }
  pz->nref++;
  ual_ia_child_add(ia, &q->obj);
  *srq_handle = UAL_HANDLE(&q->obj, it_srq_handle_t);
unlock:
  ual_lock_drop();
  return st;
}

void
ual_srq_destroy(ual_srq_t *q)
{
  if (q->obj.handle != 0)
    ual_handle_release(&q->obj);
  q->obj.ia->prov->srq->srq_destroy(q->srq);
  q->pz->nref--;
  g_free(q);
}

it_status_t
it_srq_free(it_srq_handle_t srq_handle)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_srq_t *q = ual_srq_get(srq_handle);
  if (q == NULL) {
    st = ual_fail(IT_ERR_INVALID_SRQ, "it_srq_free: %p is not a live SRQ handle", (void *) srq_handle);
  } else if (q->nep > 0) {
    st = ual_fail(IT_ERR_SRQ_BUSY, "SRQ %p feeds %d endpoints; free them first", (void *) srq_handle,
                  q->nep);
  } else {
    ual_ia_child_remove(q->obj.ia, &q->obj);
    ual_obj_retire(&q->obj);
  }
  ual_lock_drop();
  return st;
}

it_status_t
it_srq_modify(it_srq_handle_t srq_handle, it_srq_param_mask_t mask, const it_srq_param_t *params)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_srq_t *q = ual_srq_get(srq_handle);
  if (q == NULL) {
    st = ual_fail(IT_ERR_INVALID_SRQ, "it_srq_modify: %p is not a live SRQ handle", (void *) srq_handle);
    goto unlock;
  }
  const it_srq_param_mask_t modifiable = IT_SRQ_PARAM_MAX_RECV_DTO | IT_SRQ_PARAM_LOW_WATERMARK;
  if (mask == 0 || (mask & ~modifiable) != 0) {
    st = ual_fail(IT_ERR_INVALID_MASK, "it_srq_modify: mask 0x%x; only MAX_RECV_DTO and LOW_WATERMARK "
                  "can change", (unsigned) mask);
    goto unlock;
  }
  if (params == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_srq_modify: params is NULL");
    goto unlock;
  }
  size_t dtos = (mask & IT_SRQ_PARAM_MAX_RECV_DTO) ? params->max_recv_dtos : q->max_recv_dtos;
  size_t low = (mask & IT_SRQ_PARAM_LOW_WATERMARK) ? params->low_watermark : q->low_watermark;
  ual_ia_t *ia = q->obj.ia;
  if (dtos == 0 || dtos > ia->caps.max_qp_wr) {
    st = ual_fail(IT_ERR_INVALID_SRQ_SIZE, "an SRQ of %zu receives: IA '%s' allows 1 to %u", dtos,
                  ia->iface->name, ia->caps.max_qp_wr);
    goto unlock;
  }
  if (low > dtos) {
    st = ual_fail(IT_ERR_INVALID_WATERMARK, "low watermark %zu exceeds the SRQ's %zu receives", low, dtos);
    goto unlock;
  }
  rnicpi_status_t rs = ia->prov->srq->srq_modify(q->srq, (mask & IT_SRQ_PARAM_MAX_RECV_DTO) ? (uint32_t) dtos : 0,
                                                 (uint32_t) low);
  if (rs != RNICPI_OK) {
    st = ual_fail(rs == RNICPI_EBUSY ? IT_ERR_INVALID_SRQ_SIZE : ual_map_status(rs),
                  "provider '%s' refused to change SRQ %p: %s", ia->prov->name, (void *) srq_handle,
                  rs == RNICPI_EBUSY ? "it holds more receives than the new size" : rnicpi_status_message(rs));
    goto unlock;
  }
  q->max_recv_dtos = dtos;
  q->low_watermark = low;
unlock:
  ual_lock_drop();
  return st;
}

it_status_t
it_srq_query(it_srq_handle_t srq_handle, it_srq_param_mask_t mask, it_srq_param_t *params)
{
  RSEC_SCOPE();
  ual_srq_t *q = ual_srq_get(srq_handle);
  if (q == NULL)
    return ual_fail(IT_ERR_INVALID_SRQ, "it_srq_query: %p is not a live SRQ handle", (void *) srq_handle);
  if ((mask & ~UAL_SRQ_PARAMS_KNOWN) != 0)
    return ual_fail(IT_ERR_INVALID_MASK, "it_srq_query: mask 0x%x has unknown bits", (unsigned) mask);
  if (params == NULL)
    return ual_fail(IT_ERR_FAULT, "it_srq_query: params is NULL");
  memset(params, 0, sizeof(*params));
  params->ia = UAL_HANDLE(&q->obj.ia->obj, it_ia_handle_t);
  params->pz = UAL_HANDLE(&q->pz->obj, it_pz_handle_t);
  params->max_recv_dtos = q->max_recv_dtos;
  params->max_recv_segs = q->max_recv_segs;
  params->low_watermark = q->low_watermark;
  return IT_SUCCESS;
}

it_status_t
ual_srq_post_recv(ual_srq_t *q, const it_lmr_triplet_t *segs, size_t n, it_dto_cookie_t cookie)
{
  rnicpi_sge_t sge[UAL_MAX_SGE];
  it_status_t st = ual_to_sges(segs, n, q->max_recv_segs, sge);
  if (G_UNLIKELY(st != IT_SUCCESS))
    return st;
  rnicpi_recv_wr_t wr = { .wr_id = cookie, .sg_list = sge, .num_sge = (uint32_t) n };
  rnicpi_status_t rs = q->obj.ia->prov->srq->post_srq_recv(q->srq, &wr);
  if (G_LIKELY(rs == RNICPI_OK))
    return IT_SUCCESS;
  if (rs == RNICPI_EFULL)
    return ual_fail(IT_ERR_TOO_MANY_POSTS, "SRQ %p holds its %zu receives; wait for completions",
                    (void *) (uintptr_t) q->obj.handle, q->max_recv_dtos);
  return ual_fail(ual_map_status(rs), "provider '%s' refused the receive on SRQ %p: %s",
                  q->obj.ia->prov->name, (void *) (uintptr_t) q->obj.handle, rnicpi_status_message(rs));
}
