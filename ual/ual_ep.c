/*
 * RC endpoints: creation, attributes, state machine, reset and free.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "ual.h"

/* The queue sizes every endpoint type shares. */
it_status_t
ual_check_queue_attr(ual_ia_t *ia, const it_ep_attributes_t *a)
{
  const rnicpi_caps_t *c = &ia->caps;
  if (a->max_request_dtos > c->max_qp_wr)
    return ual_fail(IT_ERR_RESOURCE_REQ_DTO, "max_request_dtos %zu exceeds the device's %u",
                    a->max_request_dtos, c->max_qp_wr);
  if (a->max_recv_dtos > c->max_qp_wr)
    return ual_fail(IT_ERR_RESOURCE_RECV_DTO, "max_recv_dtos %zu exceeds the device's %u",
                    a->max_recv_dtos, c->max_qp_wr);
  if (a->max_send_segments > c->max_send_sge)
    return ual_fail(IT_ERR_RESOURCE_SSEG, "max_send_segments %zu exceeds the device's %u",
                    a->max_send_segments, c->max_send_sge);
  if (a->max_recv_segments > c->max_recv_sge)
    return ual_fail(IT_ERR_RESOURCE_RSEG, "max_recv_segments %zu exceeds the device's %u",
                    a->max_recv_segments, c->max_recv_sge);
  return IT_SUCCESS;
}

static it_status_t
check_attr(ual_ia_t *ia, const it_ep_attributes_t *a)
{
  const rnicpi_caps_t *c = &ia->caps;
  const it_rc_only_attributes_t *rc = &a->srv.rc;
  it_status_t st = ual_check_queue_attr(ia, a);
  if (st != IT_SUCCESS)
    return st;
  if (rc->max_rdma_read_segments > c->max_rdma_read_sge)
    return ual_fail(IT_ERR_RESOURCE_RRSEG, "max_rdma_read_segments %zu exceeds the device's %u",
                    rc->max_rdma_read_segments, c->max_rdma_read_sge);
  if (rc->max_rdma_write_segments > c->max_rdma_write_sge)
    return ual_fail(IT_ERR_RESOURCE_RWSEG, "max_rdma_write_segments %zu exceeds the device's %u",
                    rc->max_rdma_write_segments, c->max_rdma_write_sge);
  if (rc->rdma_read_ird > c->max_ird)
    return ual_fail(IT_ERR_RESOURCE_IRD, "rdma_read_ird %u exceeds the device's %u",
                    rc->rdma_read_ird, c->max_ird);
  if (rc->rdma_read_ord > c->max_ord)
    return ual_fail(IT_ERR_RESOURCE_ORD, "rdma_read_ord %u exceeds the device's %u",
                    rc->rdma_read_ord, c->max_ord);
  if (a->max_dto_payload_size > c->max_msg_size)
    return ual_fail(IT_ERR_INVALID_EP_ATTR, "max_dto_payload_size %zu exceeds the device's %" G_GUINT64_FORMAT,
                    a->max_dto_payload_size, c->max_msg_size);
  if (rc->atomics_enable && !(c->features & RNICPI_CAP_ATOMICS)) {
    char advice[UAL_ADVICE_LEN];
    return ual_fail(IT_ERR_INVALID_EP_ATTR, "atomics_enable is set but IA '%s' has no atomics%s",
                    ia->iface->name, ual_cap_advice(ia, RNICPI_CAP_ATOMICS, advice));
  }
  return IT_SUCCESS;
}

static uint32_t
qp_access(const it_ep_attributes_t *a)
{
  uint32_t acc = 0;
  if (a->srv.rc.rdma_read_enable)
    acc |= RNICPI_ACCESS_REMOTE_READ;
  if (a->srv.rc.rdma_write_enable)
    acc |= RNICPI_ACCESS_REMOTE_WRITE;
  if (a->srv.rc.atomics_enable)
    acc |= RNICPI_ACCESS_ATOMIC;
  return acc;
}

static void
qp_attr_of(const it_ep_attributes_t *a, rnicpi_qp_attr_t *q)
{
  q->max_send_wr = (uint32_t) a->max_request_dtos;
  q->max_recv_wr = (uint32_t) a->max_recv_dtos;
  q->max_send_sge = (uint32_t) a->max_send_segments;
  q->max_recv_sge = (uint32_t) a->max_recv_segments;
  q->max_rdma_write_sge = (uint32_t) MAX(a->srv.rc.max_rdma_write_segments, 1);
  q->max_rdma_read_sge = (uint32_t) MAX(a->srv.rc.max_rdma_read_segments, 1);
  q->ird = a->srv.rc.rdma_read_ird;
  q->ord = a->srv.rc.rdma_read_ord;
  q->access = qp_access(a);
}

it_status_t
ual_ep_dto_evds(ual_ia_t *ia, it_evd_handle_t req_h, it_evd_handle_t recv_h, ual_evd_t **req,
                ual_evd_t **recv)
{
  *req = ual_evd_get(req_h);
  *recv = ual_evd_get(recv_h);
  if (*req == NULL || (*req)->obj.ia != ia || (*req)->stream != IT_DTO_EVENT_STREAM)
    return ual_fail(IT_ERR_INVALID_REQ_EVD, "request EVD %p is not a live DTO-stream EVD of the PZ's IA "
                    "'%s'; create it there with it_evd_create(IT_DTO_EVENT_STREAM)",
                    (void *) req_h, ia->iface->name);
  if (*recv == NULL || (*recv)->obj.ia != ia || (*recv)->stream != IT_DTO_EVENT_STREAM)
    return ual_fail(IT_ERR_INVALID_RECV_EVD, "receive EVD %p is not a live DTO-stream EVD of the PZ's IA "
                    "'%s'; create it there with it_evd_create(IT_DTO_EVENT_STREAM)",
                    (void *) recv_h, ia->iface->name);
  return IT_SUCCESS;
}

it_status_t
it_ep_rc_create(it_pz_handle_t pz_handle, it_evd_handle_t request_sevd_handle,
                it_evd_handle_t recv_sevd_handle, it_evd_handle_t connect_sevd_handle,
                it_ep_rc_creation_flags_t flags, const it_ep_attributes_t *ep_attr,
                it_ep_handle_t *ep_handle)
{
  it_status_t st = IT_SUCCESS;
  if (ep_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_ep_rc_create: ep_handle is NULL");
  ual_lock_take();
  ual_pz_t *pz = ual_pz_get(pz_handle);
  if (pz == NULL) {
    st = ual_fail(IT_ERR_INVALID_PZ, "it_ep_rc_create: %p is not a live PZ handle", (void *) pz_handle);
    goto unlock;
  }
  ual_ia_t *ia = pz->obj.ia;
  ual_evd_t *req, *recv;
  if ((st = ual_ep_dto_evds(ia, request_sevd_handle, recv_sevd_handle, &req, &recv)) != IT_SUCCESS)
    goto unlock;
  ual_evd_t *conn = ual_evd_get(connect_sevd_handle);
  if (conn == NULL || conn->obj.ia != ia || conn->stream != IT_CM_MSG_EVENT_STREAM) {
    st = ual_fail(IT_ERR_INVALID_CONN_EVD, "connect EVD %p is not a live CM_MSG-stream EVD of the PZ's IA",
                  (void *) connect_sevd_handle);
    goto unlock;
  }
  if ((flags & ~(IT_EP_REUSEADDR | IT_EP_SRQ)) != 0) {
    st = ual_fail(IT_ERR_INVALID_FLAGS, "it_ep_rc_create: flags 0x%x have unknown bits", (unsigned) flags);
    goto unlock;
  }
  if (ep_attr == NULL) {
    st = ual_fail(IT_ERR_INVALID_EP_ATTR, "it_ep_rc_create: ep_attr is NULL");
    goto unlock;
  }
  ual_srq_t *srq = NULL;
  if (flags & IT_EP_SRQ) {
    if (!(ia->caps.features & RNICPI_CAP_SRQ)) {
      st = ual_fail(IT_ERR_SRQ_NOT_SUPPORTED, "IA '%s' has no shared receive queues", ia->iface->name);
      goto unlock;
    }
    srq = ual_srq_get(ep_attr->srv.rc.srq);
    if (srq == NULL || srq->pz != pz) {
      st = ual_fail(IT_ERR_INVALID_SRQ, "IT_EP_SRQ given but ep_attr.srv.rc.srq %p is not a live SRQ "
                    "of PZ %p", (void *) ep_attr->srv.rc.srq, (void *) pz_handle);
      goto unlock;
    }
  }
  if ((st = check_attr(ia, ep_attr)) != IT_SUCCESS)
    goto unlock;

  ual_ep_t *ep = g_new0(ual_ep_t, 1);
  ep->pz = pz;
  ep->req = req;
  ep->recv = recv;
  ep->conn = conn;
  ep->attr = *ep_attr;
  ep->attr.srv.rc.srq = srq != NULL ? UAL_HANDLE(&srq->obj, it_srq_handle_t) : IT_NULL_HANDLE;
  ep->srq = srq;
  ep->flags = flags;
  ep->state = IT_EP_STATE_UNCONNECTED;
  ep->post_send = ia->prov->data->post_send;
  if ((st = ual_handle_new(&ep->obj, IT_HANDLE_TYPE_EP, ia)) != IT_SUCCESS) {
    g_free(ep);
    goto unlock;
  }
  rnicpi_qp_attr_t qa = { .send_cq = req->cq, .recv_cq = recv->cq };
  qp_attr_of(ep_attr, &qa);
  qa.srq = srq != NULL ? srq->srq : NULL;
  rnicpi_status_t rs = ia->prov->queue->qp_create(pz->pd, &qa, ep->obj.handle, &ep->qp);
  if (rs != RNICPI_OK) {
    ual_handle_release(&ep->obj);
    g_free(ep);
    st = ual_fail(IT_ERR_RESOURCES, "provider '%s' could not create a queue pair: %s",
                  ia->prov->name, rnicpi_status_message(rs));
    goto unlock;
  }
  pz->nref++;
  req->nbound++;
  recv->nbound++;
  conn->nbound++;
  if (srq != NULL)
    srq->nep++;
  ual_ia_child_add(ia, &ep->obj);
  *ep_handle = UAL_HANDLE(&ep->obj, it_ep_handle_t);
unlock:
  ual_lock_drop();
  return st;
}

void
ual_ep_destroy(ual_ep_t *ep)
{
  ual_ia_t *ia = ep->obj.ia;
  if (ia->host_cm)
    ual_hostcm_cancel(ep);
  if (ep->obj.handle != 0)
    ual_handle_release(&ep->obj);
  /* Flushed completions still name the (now stale) handle: harmless. */
  ia->prov->queue->qp_destroy(ep->qp);
  ep->pz->nref--;
  if (ep->srq != NULL)
    ep->srq->nep--;
  ep->req->nbound--;
  ep->recv->nbound--;
  if (ep->conn != NULL)
    ep->conn->nbound--;
  g_free(ep);
}

it_status_t
it_ep_free(it_ep_handle_t ep_handle)
{
  return ual_child_free(ep_handle, IT_HANDLE_TYPE_EP, IT_ERR_INVALID_EP, "EP");
}

it_status_t
itx_ep_error(it_ep_handle_t ep_handle, itx_ep_error_t *error)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL)
    st = ual_fail(IT_ERR_INVALID_EP, "itx_ep_error: %p is not a live EP handle", (void *) ep_handle);
  else if (error == NULL)
    st = ual_fail(IT_ERR_FAULT, "itx_ep_error: error is NULL for EP %p; pass an itx_ep_error_t "
                  "to fill", (void *) ep_handle);
  else
    *error = ep->error;
  ual_lock_drop();
  return st;
}

it_status_t
it_ep_reset(it_ep_handle_t ep_handle)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL) {
    st = ual_fail(IT_ERR_INVALID_EP, "it_ep_reset: %p is not a live EP handle", (void *) ep_handle);
  } else if (ep->ud) {
    st = ual_fail(IT_ERR_INVALID_EP_TYPE, "EP %p is a datagram EP: it is operational from creation and "
                  "has no connection state to reset", (void *) ep_handle);
  } else if (ep->state == IT_EP_STATE_UNCONNECTED) {
    st = IT_SUCCESS;
  } else if (ep->state != IT_EP_STATE_NONOPERATIONAL) {
    st = ual_fail(IT_ERR_INVALID_EP_STATE, "EP %p is in state %d; only a NONOPERATIONAL EP can be reset "
                  "(disconnect it first)", (void *) ep_handle, ep->state);
  } else {
    rnicpi_status_t rs = ep->obj.ia->prov->queue->qp_reset(ep->qp);
    if (rs != RNICPI_OK)
      st = ual_fail(IT_ERR_CANNOT_RESET, "provider '%s' cannot reset EP %p: %s",
                    ep->obj.ia->prov->name, (void *) ep_handle, rnicpi_status_message(rs));
    else {
      g_atomic_int_set(&ep->state, IT_EP_STATE_UNCONNECTED);
      ep->ird = ep->ord = 0;
      memset(&ep->error, 0, sizeof(ep->error));
      memset(&ep->dst_path, 0, sizeof(ep->dst_path));
    }
  }
  ual_lock_drop();
  return st;
}

it_status_t
it_ep_query(it_ep_handle_t ep_handle, it_ep_param_mask_t mask, it_ep_param_t *params)
{
  if ((mask & ~UAL_EP_PARAMS_KNOWN) != 0)
    return ual_fail(IT_ERR_INVALID_MASK, "it_ep_query: mask 0x%x has unknown bits", (unsigned) mask);
  if (params == NULL)
    return ual_fail(IT_ERR_FAULT, "it_ep_query: params is NULL");
  /* Looked up under the object lock, which freeing it takes. */
  ual_lock_take();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL) {
    ual_lock_drop();
    return ual_fail(IT_ERR_INVALID_EP, "it_ep_query: %p is not a live EP handle", (void *) ep_handle);
  }
  memset(params, 0, sizeof(*params));
  params->ia = UAL_HANDLE(&ep->obj.ia->obj, it_ia_handle_t);
  params->spigot_id = ep->spigot;
  params->ep_state.rc = (it_ep_state_rc_t) g_atomic_int_get(&ep->state);
  params->service_type = IT_RC_SERVICE;
  params->dst_path = ep->dst_path;
  params->pz = UAL_HANDLE(&ep->pz->obj, it_pz_handle_t);
  params->request_sevd = UAL_HANDLE(&ep->req->obj, it_evd_handle_t);
  params->recv_sevd = UAL_HANDLE(&ep->recv->obj, it_evd_handle_t);
  params->connect_sevd = ep->conn != NULL ? UAL_HANDLE(&ep->conn->obj, it_evd_handle_t) : IT_NULL_HANDLE;
  params->attr = ep->attr;
  if (ep->ud) {
    /* The id a peer sends to is the QP number (IB: the destination QPN). */
    params->service_type = IT_UD_SERVICE;
    params->ep_state.ud = ep->obj.ia->prov->queue->qp_state(ep->qp) == RNICPI_QPS_ERROR ?
                          IT_EP_STATE_UD_NONOPERATIONAL : IT_EP_STATE_UD_OPERATIONAL;
    params->attr.srv.ud.ep_info.ud_ep_id = ep->qp->qp_num;
  }
  if (ep->state == IT_EP_STATE_CONNECTED) {
    params->attr.srv.rc.rdma_read_ird = ep->ird;
    params->attr.srv.rc.rdma_read_ord = ep->ord;
  }
  ual_lock_drop();
  return IT_SUCCESS;
}

it_status_t
it_ep_modify(it_ep_handle_t ep_handle, it_ep_param_mask_t mask, const it_ep_attributes_t *ep_attr)
{
  const it_ep_param_mask_t modifiable = IT_EP_PARAM_RDMA_RD_ENABLE | IT_EP_PARAM_RDMA_WR_ENABLE |
                                        IT_EP_PARAM_MAX_IRD | IT_EP_PARAM_MAX_ORD |
                                        IT_EP_PARAM_ATOMICS_ENABLE;
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL) {
    st = ual_fail(IT_ERR_INVALID_EP, "it_ep_modify: %p is not a live EP handle", (void *) ep_handle);
    goto unlock;
  }
  if (ep_attr == NULL) {
    st = ual_fail(IT_ERR_INVALID_EP_ATTR, "it_ep_modify: ep_attr is NULL");
    goto unlock;
  }
  if (ep->ud) {
    st = ual_fail(IT_ERR_INVALID_EP_TYPE, "EP %p is a datagram EP; it_ep_modify changes only the RDMA "
                  "and IRD/ORD attributes of RC EPs", (void *) ep_handle);
    goto unlock;
  }
  if (mask == 0 || (mask & ~modifiable) != 0) {
    st = ual_fail(IT_ERR_INVALID_MASK, "it_ep_modify: mask 0x%x; this IA can change only RDMA enables, "
                  "IRD, ORD and atomics (mask 0x%x)", (unsigned) mask, (unsigned) modifiable);
    goto unlock;
  }
  if (ep->state != IT_EP_STATE_UNCONNECTED && (mask & (IT_EP_PARAM_MAX_IRD | IT_EP_PARAM_MAX_ORD))) {
    st = ual_fail(IT_ERR_INVALID_EP_STATE, "IRD/ORD of EP %p can change only while UNCONNECTED",
                  (void *) ep_handle);
    goto unlock;
  }
  it_ep_attributes_t a = ep->attr;
  if (mask & IT_EP_PARAM_RDMA_RD_ENABLE) a.srv.rc.rdma_read_enable = ep_attr->srv.rc.rdma_read_enable;
  if (mask & IT_EP_PARAM_RDMA_WR_ENABLE) a.srv.rc.rdma_write_enable = ep_attr->srv.rc.rdma_write_enable;
  if (mask & IT_EP_PARAM_MAX_IRD) a.srv.rc.rdma_read_ird = ep_attr->srv.rc.rdma_read_ird;
  if (mask & IT_EP_PARAM_MAX_ORD) a.srv.rc.rdma_read_ord = ep_attr->srv.rc.rdma_read_ord;
  if (mask & IT_EP_PARAM_ATOMICS_ENABLE) a.srv.rc.atomics_enable = ep_attr->srv.rc.atomics_enable;
  if ((st = check_attr(ep->obj.ia, &a)) != IT_SUCCESS)
    goto unlock;
  rnicpi_qp_attr_t qa = { 0 };
  qp_attr_of(&a, &qa);
  rnicpi_status_t rs = ep->obj.ia->prov->queue->qp_modify(ep->qp, &qa);
  if (rs != RNICPI_OK) {
    st = ual_fail(ual_map_status(rs), "provider '%s' refused to modify EP %p: %s",
                  ep->obj.ia->prov->name, (void *) ep_handle, rnicpi_status_message(rs));
    goto unlock;
  }
  ep->attr = a;
unlock:
  ual_lock_drop();
  return st;
}
