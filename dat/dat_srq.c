/*
 * dat/: shared receive queues (DAT 2.0 dat_srq_*).  A DAT SRQ is an
 * IT-API SRQ (it_srq_create) of the same zone; receives posted to it go
 * through it_post_recv on the SRQ's handle, and complete on the receive EVD
 * of the EP the message arrived on, as IT-API delivers them.  IT-API wants
 * an SRQ's EPs in the SRQ's zone, so srq_ep_pz_difference_supported is
 * false.  IT-API does not count the receives an SRQ holds: dat_srq_query
 * reports available_dto_count and outstanding_dto_count as
 * DAT_VALUE_UNKNOWN (srq_info_supported false).
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

static DAT_RETURN
srq_create_on_held(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, const DAT_SRQ_ATTR *attr,
                   DAT_SRQ_HANDLE *srq_handle)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  /* The SRQ uses its zone until freed: a racing dat_pz_free is refused,
   * or retired the zone first and this create is refused. */
  datx_pz_t *pz = datx_cell_use(pz_handle, DATX_PZ);
  if (pz == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  DAT_RETURN ret = DAT_SUCCESS;
  if (pz->ia != ia)
    ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  else if (attr == NULL || attr->max_recv_dtos <= 0 || attr->max_recv_iov <= 0 ||
           attr->low_watermark < 0 || attr->low_watermark > attr->max_recv_dtos)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  else if (srq_handle == NULL)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  /* DAT 2.0 dat_srq_create: an IA without SRQs does not support the model. */
  else if (!ia->srq_support)
    ret = DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
  else if (ia->max_recv_per_srq > 0 && attr->max_recv_dtos > ia->max_recv_per_srq)
    ret = DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
  if (ret != DAT_SUCCESS)
    goto err_unuse;

  datx_srq_t *srq = g_new0(datx_srq_t, 1);
  srq->ia = ia;
  srq->pz = pz;
  it_status_t st = it_srq_create(pz->it, (size_t) attr->max_recv_iov, (size_t) attr->max_recv_dtos,
                                 &srq->it);
  if (st != IT_SUCCESS) {
    g_message("DAT SRQ on %s: it_srq_create of %d receives of %d segments failed: %s; "
              "dat_ia_query gives the interface's limits (max_recv_per_srq)",
              ia->provider->it_name, attr->max_recv_dtos, attr->max_recv_iov, itx_status_name(st));
    if (st == IT_ERR_INVALID_SRQ_SIZE || st == IT_ERR_RESOURCE_RSEG)
      ret = DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
    else
      ret = datx_status(st, DAT_INVALID_HANDLE_PZ);
    goto err_free;
  }
  if (attr->low_watermark > 0) {
    it_srq_param_t p = { .low_watermark = (size_t) attr->low_watermark };
    st = it_srq_modify(srq->it, IT_SRQ_PARAM_LOW_WATERMARK, &p);
    if (st != IT_SUCCESS) {
      ret = datx_status(st, DAT_INVALID_HANDLE_SRQ);
      goto err_srq;
    }
  }
  srq->cell = datx_cell_new(&ia->provider->dat, DATX_SRQ, srq, ia);
  if (srq->cell == NULL) {
    ret = DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    goto err_srq;
  }
  /* Its asynchronous events (low watermark) name it by this. */
  it_context_t ctx = { .ptr = srq->cell };
  it_set_consumer_context(srq->it, ctx);
  *srq_handle = srq->cell;
  return DAT_SUCCESS;

err_srq:
  it_srq_free(srq->it);
err_free:
  g_free(srq);
err_unuse:
  datx_cell_unuse(pz->cell);
  return ret;
}

DAT_RETURN
datx_srq_create(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_SRQ_ATTR *attr,
                DAT_SRQ_HANDLE *srq_handle)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA, srq_create_on_held(ia_handle, pz_handle, attr, srq_handle));
}

DAT_RETURN
datx_srq_free(DAT_SRQ_HANDLE srq_handle)
{
  datx_cell_t *cell = datx_cell_hold(srq_handle, DATX_SRQ);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
  datx_srq_t *srq = cell->object;
  datx_cell_put(cell);
  /* DAT 2.0 dat_srq_free: an SRQ that EPs still use stays.  A post or a
   * query inside it is short: wait it out. */
  switch (datx_cell_retire_wait(cell)) {
  case DATX_BUSY:
    return datx_status(IT_ERR_SRQ_BUSY, DAT_INVALID_HANDLE_SRQ);
  case DATX_GONE:
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
  case DATX_RETIRED:
    break;
  }
  it_status_t st = it_srq_free(srq->it);
  if (st != IT_SUCCESS) {
    datx_cell_revive(cell);
    return datx_status(st, DAT_INVALID_HANDLE_SRQ);
  }
  datx_cell_unuse(srq->pz->cell);
  datx_cell_kill(srq->cell, srq->ia);
  g_free(srq);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_srq_post_recv(DAT_SRQ_HANDLE srq_handle, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                   DAT_DTO_COOKIE cookie)
{
  datx_cell_t *held = datx_cell_hold(srq_handle, DATX_SRQ);
  if (held == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
  const datx_srq_t *srq = held->object;
  it_lmr_triplet_t seg[DATX_MAX_SEGS];
  size_t k;
  uint64_t total;
  DAT_RETURN ret = datx_segments_of(srq->ia, n, iov, seg, &k, &total);
  if (ret == DAT_SUCCESS) {
    /* DAT 2.0 dat_srq_post_recv: a receive posted to an SRQ always completes with an event. */
    it_status_t st = it_post_recv((it_handle_t) srq->it, seg, k, cookie.as_64, IT_COMPLETION_FLAG);
    ret = st == IT_ERR_TOO_MANY_POSTS ? DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ)
                                      : datx_status(st, DAT_INVALID_HANDLE_SRQ);
  }
  datx_cell_put(held);
  return ret;
}

static DAT_RETURN
srq_query_on_held(DAT_SRQ_HANDLE srq_handle, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *param)
{
  datx_srq_t *srq = datx_cell_get(srq_handle, DATX_SRQ);
  if (srq == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
  if ((mask & ~DAT_SRQ_FIELD_ALL) != 0)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  it_srq_param_t p;
  it_status_t st = it_srq_query(srq->it, IT_SRQ_PARAM_ALL, &p);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_SRQ);
  param->ia_handle = srq->ia->cell;
  param->srq_state = DAT_SRQ_STATE_OPERATIONAL;
  param->pz_handle = srq->pz->cell;
  param->max_recv_dtos = (DAT_COUNT) MIN(p.max_recv_dtos, (size_t) G_MAXINT32);
  param->max_recv_iov = (DAT_COUNT) MIN(p.max_recv_segs, (size_t) G_MAXINT32);
  /* IT-API disarms the watermark once it fired, as DAT 2.0 dat_srq_set_lw does. */
  param->low_watermark = (DAT_COUNT) MIN(p.low_watermark, (size_t) G_MAXINT32);
  param->available_dto_count = DAT_VALUE_UNKNOWN;
  param->outstanding_dto_count = DAT_VALUE_UNKNOWN;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_srq_query(DAT_SRQ_HANDLE srq_handle, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *param)
{
  DATX_RETURN_HELD(srq_handle, DATX_SRQ, srq_query_on_held(srq_handle, mask, param));
}

static DAT_RETURN
srq_resize_on_held(DAT_SRQ_HANDLE srq_handle, DAT_COUNT max_recv_dtos)
{
  datx_srq_t *srq = datx_cell_get(srq_handle, DATX_SRQ);
  if (srq == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
  if (max_recv_dtos <= 0)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (!srq->ia->srq_resizable)
    return DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
  if (srq->ia->max_recv_per_srq > 0 && max_recv_dtos > srq->ia->max_recv_per_srq)
    return DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
  it_srq_param_t p;
  it_status_t st = it_srq_query(srq->it, IT_SRQ_PARAM_LOW_WATERMARK, &p);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_SRQ);
  /* DAT 2.0 dat_srq_resize: not below the low watermark, nor below the receives it holds. */
  if ((size_t) max_recv_dtos < p.low_watermark)
    return DATX_ERR(DAT_INVALID_STATE, 0);
  p.max_recv_dtos = (size_t) max_recv_dtos;
  st = it_srq_modify(srq->it, IT_SRQ_PARAM_MAX_RECV_DTO, &p);
  if (st == IT_ERR_INVALID_SRQ_SIZE)
    return DATX_ERR(DAT_INVALID_STATE, 0);
  return datx_status(st, DAT_INVALID_HANDLE_SRQ);
}

DAT_RETURN
datx_srq_resize(DAT_SRQ_HANDLE srq_handle, DAT_COUNT max_recv_dtos)
{
  DATX_RETURN_HELD(srq_handle, DATX_SRQ, srq_resize_on_held(srq_handle, max_recv_dtos));
}

static DAT_RETURN
srq_set_lw_on_held(DAT_SRQ_HANDLE srq_handle, DAT_COUNT low_watermark)
{
  datx_srq_t *srq = datx_cell_get(srq_handle, DATX_SRQ);
  if (srq == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
  it_srq_param_t p;
  it_status_t st = it_srq_query(srq->it, IT_SRQ_PARAM_MAX_RECV_DTO, &p);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_SRQ);
  /* DAT 2.0 dat_srq_set_lw: at most max_recv_dtos; DAT_SRQ_LW_DEFAULT (0) disarms. */
  if (low_watermark < 0 || (size_t) low_watermark > p.max_recv_dtos)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  p.low_watermark = (size_t) low_watermark;
  st = it_srq_modify(srq->it, IT_SRQ_PARAM_LOW_WATERMARK, &p);
  if (st == IT_ERR_INVALID_WATERMARK)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  return datx_status(st, DAT_INVALID_HANDLE_SRQ);
}

DAT_RETURN
datx_srq_set_lw(DAT_SRQ_HANDLE srq_handle, DAT_COUNT low_watermark)
{
  DATX_RETURN_HELD(srq_handle, DATX_SRQ, srq_set_lw_on_held(srq_handle, low_watermark));
}
