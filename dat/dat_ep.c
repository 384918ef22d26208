/*
 * dat/: endpoints.  A DAT EP is an IT-API RC endpoint, or a UD one for
 * DAT_IB_SERVICE_TYPE_UD (dat_ud.c); its DAT EVDs give
 * it their DTO and connection SEVDs, and its consumer context on the IT-API
 * side is its DAT handle, which is how completions name it.  An EP created
 * without a receive, request or connection EVD (DAT 2.0 6.5.1 allows
 * DAT_HANDLE_NULL) gets a private IT-API dispatcher whose events no one
 * reads.  An EP made by dat_ep_create_with_srq is an IT-API endpoint made
 * with IT_EP_SRQ: it takes its receives from the SRQ.  An EP uses its PZ,
 * EVDs and SRQ (datx_cell_use()) until it is freed: their frees refuse
 * them as in use, and a create naming one already freed is refused.
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#include <string.h>

static DAT_EP_STATE
state_of(it_ep_state_rc_t st)
{
  switch (st) {
  case IT_EP_STATE_UNCONNECTED: return DAT_EP_STATE_UNCONNECTED;
  case IT_EP_STATE_ACTIVE1_CONNECTION_PENDING:
  case IT_EP_STATE_ACTIVE2_CONNECTION_PENDING: return DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
  case IT_EP_STATE_PASSIVE_CONNECTION_PENDING:
  case IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ: return DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
  case IT_EP_STATE_CONNECTED: return DAT_EP_STATE_CONNECTED;
  case IT_EP_STATE_NONOPERATIONAL: return DAT_EP_STATE_DISCONNECTED;
  }
  return DAT_EP_STATE_DISCONNECTED;
}

/* The DAT default attributes (DAT 2.0 6.5.1: the provider chooses them when
 * the consumer gives none). */
static void
default_attr(const datx_ia_t *ia, DAT_EP_ATTR *a)
{
  memset(a, 0, sizeof(*a));
  a->service_type = DAT_SERVICE_TYPE_RC;
  a->max_message_size = (DAT_SEG_LENGTH) MIN(ia->max_rc_send_len, (size_t) UINT32_MAX);
  a->max_rdma_size = (DAT_SEG_LENGTH) MIN(ia->max_rc_rdma_len, (size_t) UINT32_MAX);
  a->max_recv_dtos = 64;
  a->max_request_dtos = 64;
  a->max_recv_iov = 4;
  a->max_request_iov = 4;
  a->max_rdma_read_in = 4;
  a->max_rdma_read_out = 4;
  a->max_rdma_read_iov = 4;
  a->max_rdma_write_iov = 4;
  a->srq_soft_hw = DAT_HW_DEFAULT;
}

/* The IT-API dispatcher of @p stream behind DAT EVD @p handle, the EVD
 * used (@p evd, datx_cell_unuse() when the EP goes); NULL handle: a
 * private one made on @p ia (stored in @p own). */
static DAT_RETURN
it_evd_for(datx_ia_t *ia, DAT_EVD_HANDLE handle, int stream, DAT_RETURN_SUBTYPE sub,
           datx_evd_t **evd, it_evd_handle_t *own, it_evd_handle_t *out)
{
  *evd = NULL;
  if (handle == DAT_HANDLE_NULL) {
    if (*own == IT_NULL_HANDLE) {
      it_event_type_t s = stream == DATX_S_DTO ? IT_DTO_EVENT_STREAM : IT_CM_MSG_EVENT_STREAM;
      it_status_t st = it_evd_create(ia->it, s, IT_EVD_OVERFLOW_DEFAULT, 64, 1, IT_NULL_HANDLE,
                                     own, NULL);
      if (st != IT_SUCCESS)
        return datx_status(st, sub);
    }
    *out = *own;
    return DAT_SUCCESS;
  }
  datx_evd_t *e = datx_cell_use(handle, DATX_EVD);
  if (e == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, sub);
  if (e->ia != ia || e->sevd[stream] == IT_NULL_HANDLE) {
    datx_cell_unuse(e->cell);
    return DATX_ERR(DAT_INVALID_HANDLE, sub);
  }
  *evd = e;
  *out = e->sevd[stream];
  return DAT_SUCCESS;
}

/* Drops the uses an EP made (or failed to make) takes of its PZ, EVDs and SRQ. */
static void
ep_unuse(datx_ep_t *ep)
{
  if (ep->pz != NULL)
    datx_cell_unuse(ep->pz->cell);
  if (ep->srq != NULL)
    datx_cell_unuse(ep->srq->cell);
  if (ep->recv_evd != NULL)
    datx_cell_unuse(ep->recv_evd->cell);
  if (ep->req_evd != NULL)
    datx_cell_unuse(ep->req_evd->cell);
  if (ep->conn_evd != NULL)
    datx_cell_unuse(ep->conn_evd->cell);
}

void
datx_ep_it_attr_init(const datx_ep_t *ep, size_t max_payload, it_ep_attributes_t *it_attr)
{
  const DAT_EP_ATTR *a = &ep->attr;
  memset(it_attr, 0, sizeof(*it_attr));
  it_attr->max_dto_payload_size = a->max_message_size != 0 ? a->max_message_size : max_payload;
  it_attr->max_request_dtos = (size_t) MAX(a->max_request_dtos, 1);
  it_attr->max_recv_dtos = (size_t) MAX(a->max_recv_dtos, 1);
  it_attr->max_send_segments = (size_t) MAX(a->max_request_iov, 1);
  it_attr->max_recv_segments = (size_t) MAX(a->max_recv_iov, 1);
}

/* The IT-API RC endpoint of @p ep (DAT_SERVICE_TYPE_RC). */
static DAT_RETURN
ep_rc_create(datx_ep_t *ep, it_evd_handle_t it_req, it_evd_handle_t it_recv, it_evd_handle_t it_conn)
{
  datx_ia_t *ia = ep->ia;
  DAT_EP_ATTR *a = &ep->attr;
  it_ep_attributes_t it_attr;
  datx_ep_it_attr_init(ep, ia->max_rc_send_len, &it_attr);
  it_attr.srv.rc.rdma_read_enable = IT_TRUE;
  it_attr.srv.rc.rdma_write_enable = IT_TRUE;
  /* DAT's IB extension has no EP attribute for atomics: an interface
   * with them takes them on every EP, as DAPL's does. */
  it_attr.srv.rc.atomics_enable = ia->atomics ? IT_TRUE : IT_FALSE;
  /* DAT 2.0 leaves RDMA iovs at 0 to mean "as for requests". */
  it_attr.srv.rc.max_rdma_read_segments =
      (size_t) MAX(a->max_rdma_read_iov > 0 ? a->max_rdma_read_iov : a->max_request_iov, 1);
  it_attr.srv.rc.max_rdma_write_segments =
      (size_t) MAX(a->max_rdma_write_iov > 0 ? a->max_rdma_write_iov : a->max_request_iov, 1);
  it_attr.srv.rc.rdma_read_ird = (uint32_t) MAX(a->max_rdma_read_in, 0);
  it_attr.srv.rc.rdma_read_ord = (uint32_t) MAX(a->max_rdma_read_out, 0);
  it_ep_rc_creation_flags_t flags = IT_EP_NO_FLAG;
  if (ep->srq != NULL) {
    flags |= IT_EP_SRQ;
    it_attr.srv.rc.srq = ep->srq->it;
  }
  it_status_t st = it_ep_rc_create(ep->pz->it, it_req, it_recv, it_conn, flags, &it_attr, &ep->it);
  if (st != IT_SUCCESS) {
    g_message("DAT EP on %s: it_ep_rc_create failed: %s", ia->provider->it_name,
              itx_status_name(st));
    return datx_status(st, st == IT_ERR_INVALID_SRQ ? DAT_INVALID_HANDLE_SRQ : DAT_INVALID_HANDLE_EP);
  }
  a->max_rdma_read_iov = (DAT_COUNT) it_attr.srv.rc.max_rdma_read_segments;
  a->max_rdma_write_iov = (DAT_COUNT) it_attr.srv.rc.max_rdma_write_segments;
  return DAT_SUCCESS;
}

/* @p srq: the SRQ's cell, held by the caller, or NULL for an EP that
 * receives on its own queue. */
static DAT_RETURN
ep_create_on_held(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd,
                  DAT_EVD_HANDLE req_evd, DAT_EVD_HANDLE conn_evd, datx_cell_t *srq_cell,
                  const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_handle)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  /* Used from here: a free of the zone racing this create is refused as
   * in use, or retired it first and this create is refused. */
  datx_pz_t *pz = datx_cell_use(pz_handle, DATX_PZ);
  if (pz == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  datx_srq_t *srq = srq_cell != NULL ? srq_cell->object : NULL;
  DAT_RETURN ret = DAT_SUCCESS;
  if (pz->ia != ia)
    ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  else if (srq != NULL && srq->ia != ia)
    ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
  /* DAT 2.0 dat_ep_create_with_srq: the zones must match where the
   * provider says srq_ep_pz_difference_supported is false (IT-API's SRQ
   * serves the EPs of its own zone only). */
  else if (srq != NULL && srq->pz != pz)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  else if (ep_handle == NULL)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, srq != NULL ? DAT_INVALID_ARG8 : DAT_INVALID_ARG7);
  else if (attr != NULL && attr->service_type != DAT_SERVICE_TYPE_RC &&
           attr->service_type != (DAT_SERVICE_TYPE) DAT_IB_SERVICE_TYPE_UD)
    ret = DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
  else if (srq != NULL && datx_cell_use(srq_cell, DATX_SRQ) == NULL)
    ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
  if (ret != DAT_SUCCESS) {
    datx_cell_unuse(pz->cell);
    return ret;
  }

  datx_ep_t *ep = g_new0(datx_ep_t, 1);
  g_mutex_init(&ep->lock);
  ep->ia = ia;
  ep->pz = pz;
  ep->srq = srq;
  if (attr != NULL)
    ep->attr = *attr;
  else
    default_attr(ia, &ep->attr);
  DAT_EP_ATTR *a = &ep->attr;
  a->ep_transport_specific_count = 0;
  a->ep_transport_specific = NULL;
  a->ep_provider_specific_count = 0;
  a->ep_provider_specific = NULL;

  it_evd_handle_t it_recv, it_req, it_conn;
  ret = it_evd_for(ia, recv_evd, DATX_S_DTO, DAT_INVALID_HANDLE_EVD_RECV, &ep->recv_evd,
                              &ep->own_dto, &it_recv);
  if (ret == DAT_SUCCESS)
    ret = it_evd_for(ia, req_evd, DATX_S_DTO, DAT_INVALID_HANDLE_EVD_REQUEST, &ep->req_evd,
                     &ep->own_dto, &it_req);
  if (ret == DAT_SUCCESS)
    ret = it_evd_for(ia, conn_evd, DATX_S_CONN, DAT_INVALID_HANDLE_EVD_CONN, &ep->conn_evd,
                     &ep->own_conn, &it_conn);
  if (ret != DAT_SUCCESS)
    goto err_free;

  ret = a->service_type == (DAT_SERVICE_TYPE) DAT_IB_SERVICE_TYPE_UD
            ? datx_ud_ep_create(ep, it_req, it_recv)
            : ep_rc_create(ep, it_req, it_recv, it_conn);
  if (ret != DAT_SUCCESS)
    goto err_free;
  ep->cell = datx_cell_new(&ia->provider->dat, DATX_EP, ep, ia);
  if (ep->cell == NULL) {
    ret = DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    goto err_ep;
  }
  it_context_t ctx = { .ptr = ep->cell };
  it_set_consumer_context(ep->it, ctx);
  datx_cell_set_it(ep->cell, (uint64_t) (uintptr_t) ep->it);
  *ep_handle = ep->cell;
  return DAT_SUCCESS;

err_ep:
  it_ep_free(ep->it);
err_free:
  if (ep->own_dto != IT_NULL_HANDLE)
    it_evd_free(ep->own_dto);
  if (ep->own_conn != IT_NULL_HANDLE)
    it_evd_free(ep->own_conn);
  ep_unuse(ep);
  datx_ep_imm_clear(ep);
  g_free(ep);
  return ret;
}

DAT_RETURN
datx_ep_create(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd,
               DAT_EVD_HANDLE req_evd, DAT_EVD_HANDLE conn_evd, const DAT_EP_ATTR *attr,
               DAT_EP_HANDLE *ep_handle)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA,
                   ep_create_on_held(ia_handle, pz_handle, recv_evd, req_evd, conn_evd, NULL, attr,
                                     ep_handle));
}

static DAT_RETURN
ep_create_with_srq_held(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd,
                        DAT_EVD_HANDLE req_evd, DAT_EVD_HANDLE conn_evd, datx_cell_t *srq,
                        const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_handle)
{
  DATX_RETURN_HELD(ia_handle, DATX_IA,
                   ep_create_on_held(ia_handle, pz_handle, recv_evd, req_evd, conn_evd, srq, attr,
                                     ep_handle));
}

DAT_RETURN
datx_ep_create_with_srq(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd,
                        DAT_EVD_HANDLE req_evd, DAT_EVD_HANDLE conn_evd, DAT_SRQ_HANDLE srq_handle,
                        const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep_handle)
{
  /* The SRQ is held too, until the EP counts as its user. */
  datx_cell_t *srq = datx_cell_hold(srq_handle, DATX_SRQ);
  if (srq == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
  DAT_RETURN ret;
  if (attr == NULL) /* DAT 2.0 dat_ep_create_with_srq: attributes are required */
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7);
  else
    ret = ep_create_with_srq_held(ia_handle, pz_handle, recv_evd, req_evd, conn_evd, srq, attr,
                                  ep_handle);
  datx_cell_put(srq);
  return ret;
}

static DAT_RETURN
ep_query_on_held(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *param)
{
  datx_ep_t *ep = datx_cell_get(ep_handle, DATX_EP);
  if (ep == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (mask & DAT_EP_FIELD_IA_HANDLE)
    param->ia_handle = ep->ia->cell;
  if (mask & DAT_EP_FIELD_EP_STATE) {
    DAT_RETURN ret = datx_ep_get_status(ep_handle, &param->ep_state, NULL, NULL);
    if (ret != DAT_SUCCESS)
      return ret;
  }
  if (mask & DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR)
    param->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR) &ep->ia->addr;
  if (mask & DAT_EP_FIELD_LOCAL_PORT_QUAL)
    param->local_port_qual = ep->local_qual;
  if (mask & DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR)
    param->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR) &ep->remote;
  if (mask & DAT_EP_FIELD_REMOTE_PORT_QUAL)
    param->remote_port_qual = ep->remote_qual;
  if (mask & DAT_EP_FIELD_PZ_HANDLE)
    param->pz_handle = ep->pz != NULL ? ep->pz->cell : DAT_HANDLE_NULL;
  if (mask & DAT_EP_FIELD_RECV_EVD_HANDLE)
    param->recv_evd_handle = ep->recv_evd != NULL ? ep->recv_evd->cell : DAT_HANDLE_NULL;
  if (mask & DAT_EP_FIELD_REQUEST_EVD_HANDLE)
    param->request_evd_handle = ep->req_evd != NULL ? ep->req_evd->cell : DAT_HANDLE_NULL;
  if (mask & DAT_EP_FIELD_CONNECT_EVD_HANDLE)
    param->connect_evd_handle = ep->conn_evd != NULL ? ep->conn_evd->cell : DAT_HANDLE_NULL;
  if (mask & DAT_EP_FIELD_SRQ_HANDLE)
    param->srq_handle = ep->srq != NULL ? ep->srq->cell : DAT_HANDLE_NULL;
  if (mask & DAT_EP_FIELD_EP_ATTR_ALL)
    param->ep_attr = ep->attr;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ep_query(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *param)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP, ep_query_on_held(ep_handle, mask, param));
}

/* The EP's value of each field dat_ep_modify may name but IT-API fixes at
 * creation, against @p want: TRUE when they all match. */
static gboolean
ep_fixed_fields_match(const datx_ep_t *ep, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *want,
                      const char **which)
{
  const DAT_EP_ATTR *h = &ep->attr, *w = &want->ep_attr;
#define FIELD(bit, same)                                                                           \
  do {                                                                                             \
    if ((mask & (bit)) && !(same)) {                                                               \
      *which = #bit;                                                                               \
      return FALSE;                                                                                \
    }                                                                                              \
  } while (0)
  FIELD(DAT_EP_FIELD_PZ_HANDLE, want->pz_handle == ep->pz->cell);
  FIELD(DAT_EP_FIELD_RECV_EVD_HANDLE,
        want->recv_evd_handle == (ep->recv_evd != NULL ? ep->recv_evd->cell : DAT_HANDLE_NULL));
  FIELD(DAT_EP_FIELD_REQUEST_EVD_HANDLE,
        want->request_evd_handle == (ep->req_evd != NULL ? ep->req_evd->cell : DAT_HANDLE_NULL));
  FIELD(DAT_EP_FIELD_CONNECT_EVD_HANDLE,
        want->connect_evd_handle == (ep->conn_evd != NULL ? ep->conn_evd->cell : DAT_HANDLE_NULL));
  FIELD(DAT_EP_FIELD_SRQ_HANDLE,
        want->srq_handle == (ep->srq != NULL ? ep->srq->cell : DAT_HANDLE_NULL));
  FIELD(DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE, w->service_type == h->service_type);
  FIELD(DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, w->max_message_size == h->max_message_size);
  FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE, w->max_rdma_size == h->max_rdma_size);
  FIELD(DAT_EP_FIELD_EP_ATTR_QOS, w->qos == h->qos);
  FIELD(DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS,
        w->recv_completion_flags == h->recv_completion_flags);
  FIELD(DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS,
        w->request_completion_flags == h->request_completion_flags);
  FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, w->max_recv_dtos == h->max_recv_dtos);
  FIELD(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, w->max_request_dtos == h->max_request_dtos);
  FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV, w->max_recv_iov == h->max_recv_iov);
  FIELD(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, w->max_request_iov == h->max_request_iov);
  FIELD(DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW, w->srq_soft_hw == h->srq_soft_hw);
  FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV, w->max_rdma_read_iov == h->max_rdma_read_iov);
  FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV, w->max_rdma_write_iov == h->max_rdma_write_iov);
  FIELD(DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR, w->ep_transport_specific_count == 0);
  FIELD(DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR, w->ep_transport_specific_count == 0);
  FIELD(DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR, w->ep_provider_specific_count == 0);
  FIELD(DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, w->ep_provider_specific_count == 0);
#undef FIELD
  return TRUE;
}

datx_cell_t *
datx_ep_new_tentative(datx_ia_t *ia)
{
  datx_ep_t *ep = g_new0(datx_ep_t, 1);
  g_mutex_init(&ep->lock);
  ep->ia = ia;
  default_attr(ia, &ep->attr);
  ep->cell = datx_cell_new(&ia->provider->dat, DATX_EP, ep, ia);
  if (ep->cell == NULL) {
    g_mutex_clear(&ep->lock);
    g_free(ep);
    return NULL;
  }
  return ep->cell;
}

/* DAT 2.0 (dat_psp_create, DAT_PSP_PROVIDER_FLAG): the consumer gives the
 * EP the provider made its zone and EVDs with dat_ep_modify.  An IT-API
 * endpoint takes them at it_ep_rc_create, so it is made now, as
 * dat_ep_create would make it, and moved under the provider EP's handle:
 * one dat_ep_modify names the zone, the EVDs (a NULL EVD is a private
 * one, as for dat_ep_create) and any attributes; a later one changes
 * what any EP's does. */
static DAT_RETURN
ep_configure(datx_ep_t *ep, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *param)
{
  if (!(mask & DAT_EP_FIELD_PZ_HANDLE) || param->pz_handle == DAT_HANDLE_NULL) {
    g_debug("DAT EP %u: made by the provider for a PSP, it needs its protection zone "
            "(DAT_EP_FIELD_PZ_HANDLE) in its first dat_ep_modify", ep->cell->id);
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  }
  if ((mask & DAT_EP_FIELD_SRQ_HANDLE) && param->srq_handle != DAT_HANDLE_NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  DAT_EP_ATTR attr = ep->attr;
  const DAT_EP_ATTR *w = &param->ep_attr;
#define TAKE(bit, field)                                                                           \
  do {                                                                                             \
    if (mask & (bit))                                                                              \
      attr.field = w->field;                                                                       \
  } while (0)
  TAKE(DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE, service_type);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, max_message_size);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE, max_rdma_size);
  TAKE(DAT_EP_FIELD_EP_ATTR_QOS, qos);
  TAKE(DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, recv_completion_flags);
  TAKE(DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS, request_completion_flags);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, max_recv_dtos);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, max_request_dtos);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV, max_recv_iov);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, max_request_iov);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, max_rdma_read_in);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT, max_rdma_read_out);
  TAKE(DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW, srq_soft_hw);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV, max_rdma_read_iov);
  TAKE(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV, max_rdma_write_iov);
#undef TAKE
  DAT_EVD_HANDLE recv = (mask & DAT_EP_FIELD_RECV_EVD_HANDLE) ? param->recv_evd_handle : DAT_HANDLE_NULL;
  DAT_EVD_HANDLE req = (mask & DAT_EP_FIELD_REQUEST_EVD_HANDLE) ? param->request_evd_handle
                                                                : DAT_HANDLE_NULL;
  DAT_EVD_HANDLE conn = (mask & DAT_EP_FIELD_CONNECT_EVD_HANDLE) ? param->connect_evd_handle
                                                                 : DAT_HANDLE_NULL;
  DAT_EP_HANDLE made;
  DAT_RETURN ret = datx_ep_create(ep->ia->cell, param->pz_handle, recv, req, conn, &attr, &made);
  if (ret != DAT_SUCCESS)
    return ret;
  /* The new EP's zone, EVDs and IT-API endpoint, with their uses, move to
   * this one; its handle, never handed out, dies. */
  datx_ep_t *from = ((datx_cell_t *) made)->object;
  ep->pz = from->pz;
  ep->recv_evd = from->recv_evd;
  ep->req_evd = from->req_evd;
  ep->conn_evd = from->conn_evd;
  ep->own_dto = from->own_dto;
  ep->own_conn = from->own_conn;
  ep->attr = from->attr;
  it_context_t ctx = { .ptr = ep->cell };
  it_set_consumer_context(from->it, ctx);
  ep->it = from->it;
  datx_cell_kill(from->cell, from->ia);
  datx_cell_set_it(ep->cell, (uint64_t) (uintptr_t) ep->it);
  g_mutex_clear(&from->lock);
  g_free(from);
  return DAT_SUCCESS;
}

/* What it_ep_modify changes of an RC endpoint: the RDMA Read depths (IRD
 * and ORD, in the Unconnected state) and the RDMA enables, which DAT does
 * not expose.  A field named with the value it has is accepted; a change
 * of any other field is refused, as DAT 2.0 dat_ep_modify allows for a
 * parameter the provider cannot modify (DAT_INVALID_PARAMETER). */
static DAT_RETURN
ep_modify_on_held(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *param)
{
  datx_ep_t *ep = datx_cell_get(ep_handle, DATX_EP);
  if (ep == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  /* Never modifiable (DAT 2.0 dat_ep_modify): the IA, the state, the addresses. */
  const DAT_EP_PARAM_MASK never = DAT_EP_FIELD_IA_HANDLE | DAT_EP_FIELD_EP_STATE | DAT_EP_FIELD_COMM |
                                  DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR | DAT_EP_FIELD_LOCAL_PORT_QUAL |
                                  DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR | DAT_EP_FIELD_REMOTE_PORT_QUAL;
  if ((mask & ~DAT_EP_FIELD_ALL) != 0 || (mask & never) != 0)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (mask == 0)
    return DAT_SUCCESS;
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (ep->it == IT_NULL_HANDLE) {
    /* Under the EP's lock: one of two racing configurations makes the
     * IT-API endpoint. */
    g_mutex_lock(&ep->lock);
    DAT_RETURN ret = ep->it == IT_NULL_HANDLE ? ep_configure(ep, mask, param)
                                              : DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
    g_mutex_unlock(&ep->lock);
    return ret;
  }
  const char *which = NULL;
  if (!ep_fixed_fields_match(ep, mask, param, &which)) {
    g_debug("DAT EP %u: dat_ep_modify of %s refused: IT-API fixes it when the EP is made "
            "(it_ep_modify changes only the RDMA Read depths); create the EP with it",
            ep->cell->id, which);
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  }
  const DAT_EP_ATTR *w = &param->ep_attr;
  it_ep_attributes_t a;
  memset(&a, 0, sizeof(a));
  it_ep_param_mask_t im = 0;
  if ((mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN) && w->max_rdma_read_in != ep->attr.max_rdma_read_in) {
    if (w->max_rdma_read_in < 0)
      return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    im |= IT_EP_PARAM_MAX_IRD;
    a.srv.rc.rdma_read_ird = (uint32_t) w->max_rdma_read_in;
  }
  if ((mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT) && w->max_rdma_read_out != ep->attr.max_rdma_read_out) {
    if (w->max_rdma_read_out < 0)
      return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    im |= IT_EP_PARAM_MAX_ORD;
    a.srv.rc.rdma_read_ord = (uint32_t) w->max_rdma_read_out;
  }
  if (im == 0)
    return DAT_SUCCESS;
  it_status_t st = it_ep_modify(ep->it, im, &a);
  if (st == IT_ERR_INVALID_EP_STATE)
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
  if (st == IT_ERR_RESOURCE_IRD || st == IT_ERR_RESOURCE_ORD)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  if (im & IT_EP_PARAM_MAX_IRD)
    ep->attr.max_rdma_read_in = w->max_rdma_read_in;
  if (im & IT_EP_PARAM_MAX_ORD)
    ep->attr.max_rdma_read_out = w->max_rdma_read_out;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ep_modify(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *param)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP, ep_modify_on_held(ep_handle, mask, param));
}

static DAT_RETURN
ep_recv_query_on_held(DAT_EP_HANDLE ep_handle, DAT_COUNT *nbufs_allocated, DAT_COUNT *bufs_alloc_span)
{
  datx_ep_t *ep = datx_cell_get(ep_handle, DATX_EP);
  if (ep == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  /* DAT 2.0 (dat_ep_recv_query): without an SRQ a buffer is allocated to
   * the EP when posted, and an RC EP consumes its receives in order, so
   * the span is the count.  With an SRQ the EP takes a buffer as a message
   * arrives, which IT-API does not report: DAT_VALUE_UNKNOWN, as the
   * standard has a provider answer a count it cannot obtain cheaply. */
  DAT_COUNT n = ep->srq != NULL || ep->ud ? DAT_VALUE_UNKNOWN
                                          : MAX(g_atomic_int_get(&ep->recv_posted), 0);
  if (nbufs_allocated != NULL)
    *nbufs_allocated = n;
  if (bufs_alloc_span != NULL)
    *bufs_alloc_span = n;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ep_recv_query(DAT_EP_HANDLE ep_handle, DAT_COUNT *nbufs_allocated, DAT_COUNT *bufs_alloc_span)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP,
                   ep_recv_query_on_held(ep_handle, nbufs_allocated, bufs_alloc_span));
}

static DAT_RETURN
ep_set_watermark_on_held(DAT_EP_HANDLE ep_handle, DAT_COUNT soft, DAT_COUNT hard)
{
  datx_ep_t *ep = datx_cell_get(ep_handle, DATX_EP);
  if (ep == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  if (soft < 0 && soft != DAT_WATERMARK_INFINITE)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (hard < 0 && hard != DAT_WATERMARK_INFINITE)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  /* DAT 2.0 (dat_ep_set_watermark) lets a provider without EP high
   * watermarks return DAT_MODEL_NOT_SUPPORTED.  A soft one counts the
   * buffers an EP takes from its SRQ as messages arrive, which IT-API
   * does not report, and a hard one breaks the connection with a
   * broken-connection event, which IT-API gives a consumer no way to
   * raise: a finite watermark would be taken and never honoured. */
  if (soft != DAT_WATERMARK_INFINITE || hard != DAT_WATERMARK_INFINITE)
    return DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
  ep->attr.srq_soft_hw = soft; /* DAT_EP_ATTR has no hard one */
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ep_set_watermark(DAT_EP_HANDLE ep_handle, DAT_COUNT soft_high_watermark,
                      DAT_COUNT hard_high_watermark)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP,
                   ep_set_watermark_on_held(ep_handle, soft_high_watermark, hard_high_watermark));
}

static DAT_RETURN
ep_get_status_on_held(DAT_EP_HANDLE ep_handle, DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
                      DAT_BOOLEAN *request_idle)
{
  datx_ep_t *ep = datx_cell_get(ep_handle, DATX_EP);
  if (ep == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  /* Each output is optional, as DAPL's provider has it (dtestx asks for
   * the idle flags alone). */
  if (state != NULL && ep->it == IT_NULL_HANDLE) {
    /* Made by the provider for a PSP's request, not configured yet. */
    *state = DAT_EP_STATE_UNCONFIGURED_TENTATIVE;
  } else if (state != NULL && ep->ud) {
    /* A datagram EP is operational from its creation: DAT's state says
     * whether an exchange gave it a peer. */
    *state = g_atomic_int_get(&ep->established) ? DAT_EP_STATE_CONNECTED : DAT_EP_STATE_UNCONNECTED;
  } else if (state != NULL) {
    it_ep_param_t p;
    it_status_t st = it_ep_query(ep->it, IT_EP_PARAM_STATE, &p);
    if (st != IT_SUCCESS)
      return datx_status(st, DAT_INVALID_HANDLE_EP);
    *state = state_of(p.ep_state.rc);
  }
  /* Receives are counted until their completion is taken (an EP without
   * an SRQ: dat_ep_recv_query); requests are not (an unsignaled one
   * completes unseen), so they may be outstanding. */
  if (recv_idle != NULL)
    *recv_idle = ep->srq == NULL && !ep->ud && g_atomic_int_get(&ep->recv_posted) <= 0 ? DAT_TRUE
                                                                                  : DAT_FALSE;
  if (request_idle != NULL)
    *request_idle = DAT_FALSE;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ep_get_status(DAT_EP_HANDLE ep_handle, DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
                   DAT_BOOLEAN *request_idle)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP,
                   ep_get_status_on_held(ep_handle, state, recv_idle, request_idle));
}

static DAT_RETURN
ep_reset_on_held(DAT_EP_HANDLE ep_handle)
{
  datx_ep_t *ep = datx_cell_get(ep_handle, DATX_EP);
  if (ep == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  /* A datagram EP has no connection to reset: it forgets its peer. */
  if (ep->ud) {
    memset(&ep->remote, 0, sizeof(ep->remote));
    g_atomic_int_set(&ep->established, 0);
    return DAT_SUCCESS;
  }
  it_ep_param_t p;
  it_status_t st = it_ep_query(ep->it, IT_EP_PARAM_STATE, &p);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  /* DAT 2.0 6.5.12: a reset of an Unconnected EP does nothing; a
   * Disconnected one becomes Unconnected, its queues flushed. */
  if (p.ep_state.rc == IT_EP_STATE_UNCONNECTED)
    return DAT_SUCCESS;
  if (p.ep_state.rc != IT_EP_STATE_NONOPERATIONAL)
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED);
  st = it_ep_reset(ep->it);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  memset(&ep->remote, 0, sizeof(ep->remote));
  ep->local_qual = 0;
  ep->remote_qual = 0;
  g_atomic_int_set(&ep->established, 0);
  ep->conn_deadline = 0;
  ep->active = FALSE;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ep_reset(DAT_EP_HANDLE ep_handle)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP, ep_reset_on_held(ep_handle));
}

DAT_RETURN
datx_ep_free(DAT_EP_HANDLE ep_handle)
{
  datx_cell_t *cell = datx_cell_hold(ep_handle, DATX_EP);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  datx_ep_t *ep = cell->object;
  it_status_t st = ep->it != IT_NULL_HANDLE ? it_ep_free(ep->it) : IT_SUCCESS;
  if (st == IT_SUCCESS)
    datx_cell_set_it(cell, 0);
  datx_cell_put(cell);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  /* An event of the EP being translated holds it (its private data is
   * copied into the EP): wait it out. */
  if (datx_cell_retire_wait(ep->cell) != DATX_RETIRED)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  datx_ud_ep_clear(ep);
  if (ep->own_dto != IT_NULL_HANDLE)
    it_evd_free(ep->own_dto);
  if (ep->own_conn != IT_NULL_HANDLE)
    it_evd_free(ep->own_conn);
  ep_unuse(ep);
  datx_cell_kill(ep->cell, ep->ia);
  datx_ep_imm_clear(ep);
  g_free(ep);
  return DAT_SUCCESS;
}
