/*
 * Unreliable datagrams (IT-API 2.4, 2.10, 2.11, 2.12): UD endpoints,
 * it_post_sendto / it_post_recvfrom and their completions, address
 * handles, and UD service resolution (IB SIDR) over the provider's RNIC-PI
 * 1.3 operations.  Everything here needs RNICPI_CAP_UD
 * (it_ia_info_t.supported_service_types has IT_UD_SERVICE); without it the
 * calls answer IT_ERR_OP_NOT_SUPPORTED.
 *
 * Addressing: a UD EP's id (ud_ep_id) is its queue pair number and its key
 * (ud_ep_key) the Q_Key a datagram must carry to be received; the IA
 * assigns the id, the consumer chooses the key.  An address handle is the
 * path it was built from (the IB path fields are the address vector, as
 * it_ib_net_endpoint_t documents).
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "ual.h"

#define GRH_LEN 40

static gboolean
has_ud(ual_ia_t *ia)
{
  return (ia->caps.features & RNICPI_CAP_UD) != 0;
}

static it_status_t
no_ud(ual_ia_t *ia, const char *fn)
{
  return ual_fail(IT_ERR_OP_NOT_SUPPORTED, "%s: IA '%s' has no unreliable-datagram service "
                  "(it_ia_info_t.supported_service_types lacks IT_UD_SERVICE)", fn, ia->iface->name);
}

/* Endpoints. */

static it_status_t
check_ud_attr(ual_ia_t *ia, const it_ep_attributes_t *a)
{
  const rnicpi_caps_t *c = &ia->caps;
  it_status_t st = ual_check_queue_attr(ia, a);
  if (st != IT_SUCCESS)
    return st;
  if (a->max_dto_payload_size > c->ud_mtu)
    return ual_fail(IT_ERR_INVALID_EP_ATTR, "max_dto_payload_size %zu exceeds the %u-byte datagram MTU "
                    "of IA '%s' (it_spigot_info_t.max_ud_send_len)", a->max_dto_payload_size, c->ud_mtu,
                    ia->iface->name);
  /* IBTA 10.2.4: Q_Keys with the high bit set are controlled (privileged). */
  if (a->srv.ud.ep_info.ud_ep_key & 0x80000000u)
    return ual_fail(IT_ERR_INVALID_EP_KEY, "ud_ep_key 0x%08x has bit 31 set: a controlled Q_Key, which "
                    "an unprivileged consumer may not use", a->srv.ud.ep_info.ud_ep_key);
  return IT_SUCCESS;
}

it_status_t
it_ep_ud_create(it_pz_handle_t pz_handle, it_evd_handle_t request_sevd_handle, it_evd_handle_t recv_sevd_handle,
                const it_ep_attributes_t *ep_attr, size_t spigot_id, it_ep_handle_t *ep_handle)
{
  it_status_t st = IT_SUCCESS;
  if (ep_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_ep_ud_create: ep_handle is NULL");
  ual_lock_take();
  ual_pz_t *pz = ual_pz_get(pz_handle);
  if (pz == NULL) {
    st = ual_fail(IT_ERR_INVALID_PZ, "it_ep_ud_create: %p is not a live PZ handle", (void *) pz_handle);
    goto unlock;
  }
  ual_ia_t *ia = pz->obj.ia;
  if (!has_ud(ia)) {
    st = no_ud(ia, "it_ep_ud_create");
    goto unlock;
  }
  ual_evd_t *req, *recv;
  if ((st = ual_ep_dto_evds(ia, request_sevd_handle, recv_sevd_handle, &req, &recv)) != IT_SUCCESS)
    goto unlock;
  if (ep_attr == NULL) {
    st = ual_fail(IT_ERR_INVALID_EP_ATTR, "it_ep_ud_create: ep_attr is NULL");
    goto unlock;
  }
  if (spigot_id >= MAX(ia->caps.num_ports, 1u)) {
    st = ual_fail(IT_ERR_INVALID_SPIGOT, "spigot %zu does not exist; IA '%s' has %u",
                  spigot_id, ia->iface->name, ia->caps.num_ports);
    goto unlock;
  }
  if ((st = check_ud_attr(ia, ep_attr)) != IT_SUCCESS)
    goto unlock;

  ual_ep_t *ep = g_new0(ual_ep_t, 1);
  ep->pz = pz;
  ep->req = req;
  ep->recv = recv;
  ep->ud = TRUE;
  ep->attr = *ep_attr;
  ep->spigot = spigot_id;
  ep->state = IT_EP_STATE_UD_OPERATIONAL;
  if ((st = ual_handle_new(&ep->obj, IT_HANDLE_TYPE_EP, ia)) != IT_SUCCESS) {
    g_free(ep);
    goto unlock;
  }
  rnicpi_qp_attr_t qa = {
    .send_cq = req->cq, .recv_cq = recv->cq,
    .max_send_wr = (uint32_t) ep_attr->max_request_dtos, .max_recv_wr = (uint32_t) ep_attr->max_recv_dtos,
    .max_send_sge = (uint32_t) ep_attr->max_send_segments,
    .max_recv_sge = (uint32_t) ep_attr->max_recv_segments,
    .type = RNICPI_QPT_UD, .qkey = ep_attr->srv.ud.ep_info.ud_ep_key,
  };
  rnicpi_status_t rs = ia->prov->queue->qp_create(pz->pd, &qa, ep->obj.handle, &ep->qp);
  if (rs != RNICPI_OK) {
    ual_handle_release(&ep->obj);
    g_free(ep);
    st = ual_prov_refused(ia, rs, IT_ERR_OP_NOT_SUPPORTED, "create a UD queue pair");
    goto unlock;
  }
  /* The id is the IA's choice: the QP number peers send to. */
  ep->attr.srv.ud.ep_info.ud_ep_id = ep->qp->qp_num;
  pz->nref++;
  req->nbound++;
  recv->nbound++;
  ual_ia_child_add(ia, &ep->obj);
  *ep_handle = UAL_HANDLE(&ep->obj, it_ep_handle_t);
unlock:
  ual_lock_drop();
  return st;
}

/* Data transfer. */

static ual_ep_t *
ud_ep_get(it_ep_handle_t h, const char *fn, it_status_t *st)
{
  ual_ep_t *ep = ual_ep_get(h);
  if (G_UNLIKELY(ep == NULL))
    *st = ual_fail(IT_ERR_INVALID_EP, "%s: %p is not a live EP handle", fn, (void *) h);
  else if (G_UNLIKELY(!ep->ud))
    *st = ual_fail(IT_ERR_INVALID_EP_TYPE, "%s: EP %p is an RC EP; datagrams need a UD EP "
                   "(it_ep_ud_create)", fn, (void *) h);
  else
    return ep;
  return NULL;
}

it_status_t
it_post_sendto(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments, size_t num_segments,
               it_dto_cookie_t cookie, it_dto_flags_t dto_flags, const it_dg_remote_ep_addr_t *remote_ep_addr)
{
  /* A read section, not the object lock: the EP, the LMRs and the
   * address handle (with the provider handle it holds, ual_ah_t) stay
   * alive until it ends, and sends on other EPs run side by side. */
  RSEC_SCOPE();
  it_status_t st = IT_SUCCESS;
  ual_ep_t *ep = ud_ep_get(ep_handle, "it_post_sendto", &st);
  if (ep == NULL)
    return st;
  if ((dto_flags & ~UAL_DTO_FLAGS_KNOWN) != 0 || (dto_flags & (IT_UNLINK_LOCAL_SINK | IT_UNLINK_FENCE_FLAG)))
    return ual_fail(IT_ERR_INVALID_DTO_FLAGS, "it_post_sendto: flags 0x%x are unknown, or unlink flags a "
                    "datagram send does not take", (unsigned) dto_flags);
  if (remote_ep_addr == NULL || remote_ep_addr->type != IT_DG_TYPE_IB_UD)
    return ual_fail(IT_ERR_INVALID_AH, "it_post_sendto: the destination is %s, not an IT_DG_TYPE_IB_UD "
                    "address", remote_ep_addr == NULL ? "NULL" : "of an unknown type");
  ual_ah_t *ah = ual_ah_get(remote_ep_addr->addr.ud.addr);
  if (ah == NULL || ah->pz != ep->pz)
    return ual_fail(IT_ERR_INVALID_AH, "it_post_sendto: %p is not a live address handle of EP %p's PZ",
                    (void *) remote_ep_addr->addr.ud.addr, (void *) ep_handle);
  rnicpi_sge_t sge[UAL_MAX_SGE];
  if ((st = ual_to_sges(local_segments, num_segments, ep->attr.max_send_segments, sge)) != IT_SUCCESS)
    return st;
  uint64_t total = 0;
  for (size_t i = 0; i < num_segments; i++)
    total += sge[i].length;
  if (total > ep->obj.ia->caps.ud_mtu)
    return ual_fail(IT_ERR_PAYLOAD_SIZE, "it_post_sendto: a %" G_GUINT64_FORMAT "-byte datagram exceeds the "
                    "%u-byte MTU of IA '%s' (it_spigot_info_t.max_ud_send_len); nothing was sent", total,
                    ep->obj.ia->caps.ud_mtu, ep->obj.ia->iface->name);
  rnicpi_send_wr_t wr = {
    .wr_id = cookie, .opcode = RNICPI_WR_SEND, .sg_list = sge, .num_sge = (uint32_t) num_segments,
    .flags = ((dto_flags & IT_COMPLETION_FLAG) ? RNICPI_WR_SIGNALED : 0) |
             ((dto_flags & IT_SOLICITED_WAIT_FLAG) ? RNICPI_WR_SOLICITED : 0),
    .ah = __atomic_load_n(&ah->ah, __ATOMIC_ACQUIRE), .remote_qpn = remote_ep_addr->addr.ud.ep_info.ud_ep_id,
    .remote_qkey = remote_ep_addr->addr.ud.ep_info.ud_ep_key,
  };
  rnicpi_status_t rs = ep->obj.ia->prov->data->post_send(ep->qp, &wr);
  if (rs == RNICPI_ERANGE)
    return ual_fail(IT_ERR_PAYLOAD_SIZE, "provider '%s' refused a %" G_GUINT64_FORMAT "-byte datagram: "
                    "larger than the path MTU", ep->obj.ia->prov->name, total);
  if (rs == RNICPI_EACCES)
    return ual_fail(IT_ERR_INVALID_AH, "provider '%s' refused address handle %p for EP %p",
                    ep->obj.ia->prov->name, (void *) remote_ep_addr->addr.ud.addr, (void *) ep_handle);
  return ual_post_status(ep, rs, &wr);
}

it_status_t
it_post_recvfrom(it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments, size_t num_segments,
                 it_dto_cookie_t cookie, it_dto_flags_t dto_flags)
{
  RSEC_SCOPE();
  it_status_t st = IT_SUCCESS;
  ual_ep_t *ep = ud_ep_get(ep_handle, "it_post_recvfrom", &st);
  if (ep == NULL)
    return st;
  if (G_UNLIKELY((dto_flags & ~UAL_DTO_FLAGS_KNOWN) != 0 ||
                 (dto_flags & (IT_UNLINK_LOCAL_SINK | IT_UNLINK_FENCE_FLAG))))
    return ual_fail(IT_ERR_INVALID_DTO_FLAGS, "it_post_recvfrom: flags 0x%x are unknown, or unlink flags a "
                    "receive does not take", (unsigned) dto_flags);
  rnicpi_sge_t sge[UAL_MAX_SGE];
  if ((st = ual_to_sges(local_segments, num_segments, ep->attr.max_recv_segments, sge)) != IT_SUCCESS)
    return st;
  rnicpi_recv_wr_t wr = { .wr_id = cookie, .sg_list = sge, .num_sge = (uint32_t) num_segments };
  return ual_post_status(ep, ep->obj.ia->prov->data->post_recv(ep->qp, &wr), NULL);
}

/* IBTA MTU code of @bytes (1: 256 ... 5: 4096). */
static uint8_t
mtu_code(uint32_t bytes)
{
  uint8_t c = 1;
  while (c < 5 && (256u << c) <= bytes)
    c++;
  return c;
}

/* A completion of a UD receive: the sender's EP id, its path, the GRH.
 * transferred_length counts the GRH, which is at the start of the buffer
 * whenever IT_UD_IB_GRH_PRESENT is set. */
void
ual_ud_recv_event(ual_ia_t *ia, const rnicpi_wc_t *wc, it_all_dto_cmpl_event_t *d)
{
  d->event_number = IT_DTO_UD_RECV_CMPL_EVENT;
  d->flags = (wc->flags & RNICPI_WC_GRH) ? IT_UD_IB_GRH_PRESENT : 0;
  d->ud_ep_id = wc->src_qpn;
  memset(&d->src_path, 0, sizeof(d->src_path));
  if (wc->status != RNICPI_WC_SUCCESS)
    return;
  it_ib_net_endpoint_t *ib = &d->src_path.remote.ib;
  ib->partition_key = 0xffff;
  ib->path_mtu = mtu_code(ia->caps.ud_mtu) & 0xf;
  ual_ia_local_gid(ia, &ib->local_port_gid);
  memcpy(&ib->remote_port_gid, wc->src_gid, RNICPI_GID_LEN);
  ib->remote_port_lid = wc->src_lid;
  ib->subnet_local = 1;
  ib->hop_limit = 64;
}

/* Address handles. */

static it_status_t
path_to_ah(ual_ia_t *ia, const it_path_t *path, it_ah_flags_t flags, it_path_t *stored,
           rnicpi_ah_attr_t *a, const char *fn)
{
  if (path == NULL)
    return ual_fail(IT_ERR_INVALID_SOURCE_PATH, "%s: destination_path is NULL", fn);
  if (path->spigot_id >= MAX(ia->caps.num_ports, 1u))
    return ual_fail(IT_ERR_INVALID_SPIGOT, "%s: the path starts at spigot %zu; IA '%s' has %u", fn,
                    path->spigot_id, ia->iface->name, ia->caps.num_ports);
  *stored = *path;
  it_ib_net_endpoint_t *ib = &stored->remote.ib;
  static const struct in6_addr zero;
  if (memcmp(&ib->remote_port_gid, &zero, sizeof(zero)) == 0 && ib->remote_port_lid == 0)
    return ual_fail(IT_ERR_INVALID_SOURCE_PATH, "%s: the path names no destination (remote GID and LID "
                    "are zero); build it with it_get_pathinfo", fn);
  /* Without IT_AH_PATH_COMPLETE the IA completes what it knows of the
   * local end (P_Key, local GID, MTU); with it the path is taken as is. */
  if (!(flags & IT_AH_PATH_COMPLETE)) {
    if (ib->partition_key == 0)
      ib->partition_key = 0xffff;
    if (memcmp(&ib->local_port_gid, &zero, sizeof(zero)) == 0)
      ual_ia_local_gid(ia, &ib->local_port_gid);
    if (ib->path_mtu == 0)
      ib->path_mtu = mtu_code(ia->caps.ud_mtu) & 0xf;
  }
  memset(a, 0, sizeof(*a));
  memcpy(a->dgid, &ib->remote_port_gid, RNICPI_GID_LEN);
  a->dlid = ib->remote_port_lid;
  a->sl = ib->sl;
  a->global = !ib->subnet_local;
  a->flow_label = ib->flow_label;
  a->traffic_class = ib->traffic_class;
  a->hop_limit = ib->hop_limit;
  a->static_rate = ib->packet_rate;
  a->path_mtu = ib->path_mtu;
  a->port = (uint32_t) path->spigot_id;
  return IT_SUCCESS;
}

it_status_t
it_address_handle_create(it_pz_handle_t pz_handle, const it_path_t *destination_path, it_ah_flags_t ah_flags,
                         it_addr_handle_t *addr_handle)
{
  it_status_t st = IT_SUCCESS;
  if (addr_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_address_handle_create: addr_handle is NULL");
  ual_lock_take();
  ual_pz_t *pz = ual_pz_get(pz_handle);
  if (pz == NULL) {
    st = ual_fail(IT_ERR_INVALID_PZ, "it_address_handle_create: %p is not a live PZ handle", (void *) pz_handle);
    goto unlock;
  }
  ual_ia_t *ia = pz->obj.ia;
  if (!has_ud(ia)) {
    st = no_ud(ia, "it_address_handle_create");
    goto unlock;
  }
  if ((ah_flags & ~IT_AH_PATH_COMPLETE) != 0) {
    st = ual_fail(IT_ERR_INVALID_FLAGS, "it_address_handle_create: flags 0x%x; only IT_AH_PATH_COMPLETE "
                  "(0x1) is defined", (unsigned) ah_flags);
    goto unlock;
  }
  it_path_t stored;
  rnicpi_ah_attr_t attr;
  if ((st = path_to_ah(ia, destination_path, ah_flags, &stored, &attr, "it_address_handle_create")) != IT_SUCCESS)
    goto unlock;
  ual_ah_t *ah = g_new0(ual_ah_t, 1);
  rnicpi_status_t rs = ia->prov->ud->ah_create(pz->pd, &attr, &ah->ah);
  if (rs != RNICPI_OK) {
    g_free(ah);
    st = ual_prov_refused(ia, rs, IT_ERR_OP_NOT_SUPPORTED, "create an address handle");
    goto unlock;
  }
  ah->pz = pz;
  ah->path = stored;
  if ((st = ual_pz_child_add(&ah->obj, IT_HANDLE_TYPE_ADDR, pz)) != IT_SUCCESS) {
    ia->prov->ud->ah_destroy(ah->ah);
    g_free(ah);
    goto unlock;
  }
  *addr_handle = UAL_HANDLE(&ah->obj, it_addr_handle_t);
unlock:
  ual_lock_drop();
  return st;
}

void
ual_ah_destroy(ual_ah_t *ah)
{
  if (ah->obj.handle != 0)
    ual_handle_release(&ah->obj);
  ah->obj.ia->prov->ud->ah_destroy(ah->ah);
  for (GSList *l = ah->replaced; l != NULL; l = l->next)
    ah->obj.ia->prov->ud->ah_destroy(l->data);
  g_slist_free(ah->replaced);
  ah->pz->nref--;
  g_free(ah);
}

it_status_t
it_address_handle_free(it_addr_handle_t addr_handle)
{
  return ual_child_free(addr_handle, IT_HANDLE_TYPE_ADDR, IT_ERR_INVALID_AH, "address");
}

it_status_t
it_address_handle_modify(it_addr_handle_t addr_handle, it_addr_param_mask_t mask, const it_addr_param_t *params)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ah_t *ah = ual_ah_get(addr_handle);
  if (ah == NULL) {
    st = ual_fail(IT_ERR_INVALID_AH, "it_address_handle_modify: %p is not a live address handle",
                  (void *) addr_handle);
    goto unlock;
  }
  if (mask != IT_ADDR_PARAM_PATH) {
    st = ual_fail(IT_ERR_INVALID_MASK, "it_address_handle_modify: mask 0x%x; only the path "
                  "(IT_ADDR_PARAM_PATH) can change: the IA and PZ are fixed", (unsigned) mask);
    goto unlock;
  }
  if (params == NULL) {
    st = ual_fail(IT_ERR_FAULT, "it_address_handle_modify: params is NULL");
    goto unlock;
  }
  ual_ia_t *ia = ah->obj.ia;
  it_path_t stored;
  rnicpi_ah_attr_t attr;
  if ((st = path_to_ah(ia, &params->path, 0, &stored, &attr, "it_address_handle_modify")) != IT_SUCCESS)
    goto unlock;
  /* A provider handle is immutable (as ibv_ah): make the new one first. */
  rnicpi_ah_t *nah = NULL;
  rnicpi_status_t rs = ia->prov->ud->ah_create(ah->pz->pd, &attr, &nah);
  if (rs != RNICPI_OK) {
    st = ual_fail(IT_ERR_RESOURCES, "provider '%s' could not rebuild address handle %p: %s",
                  ia->prov->name, (void *) addr_handle, rnicpi_status_message(rs));
    goto unlock;
  }
  /* A send in a read section may hold the old one: it goes with the
   * object, after its grace period (ual_ah_t). */
  ah->replaced = g_slist_prepend(ah->replaced, ah->ah);
  __atomic_store_n(&ah->ah, nah, __ATOMIC_RELEASE);
  ah->path = stored;
unlock:
  ual_lock_drop();
  return st;
}

it_status_t
it_address_handle_query(it_addr_handle_t addr_handle, it_addr_param_mask_t mask, it_addr_param_t *params)
{
  ual_lock_take();
  it_status_t st = IT_SUCCESS;
  ual_ah_t *ah = ual_ah_get(addr_handle);
  if (ah == NULL)
    st = ual_fail(IT_ERR_INVALID_AH, "it_address_handle_query: %p is not a live address handle",
                  (void *) addr_handle);
  else if ((mask & ~(unsigned) (IT_ADDR_PARAM_ALL | IT_ADDR_PARAM_IA | IT_ADDR_PARAM_PZ | IT_ADDR_PARAM_PATH)) != 0)
    st = ual_fail(IT_ERR_INVALID_MASK, "it_address_handle_query: mask 0x%x has unknown bits", (unsigned) mask);
  else if (params == NULL)
    st = ual_fail(IT_ERR_FAULT, "it_address_handle_query: params is NULL");
  else {
    memset(params, 0, sizeof(*params));
    params->ia = UAL_HANDLE(&ah->obj.ia->obj, it_ia_handle_t);
    params->pz = UAL_HANDLE(&ah->pz->obj, it_pz_handle_t);
    params->path = ah->path;
  }
  ual_lock_drop();
  return st;
}

/* UD service resolution.  The listener side: pending requests under an
 * IT-API identifier, mapped to the provider's id. */

typedef struct {
  it_ud_svc_req_identifier_t id;
  uint64_t prov_id;
  ual_ia_t *ia;
} ual_svc_pending_t;

static GHashTable *svc_table; /* id -> ual_svc_pending_t* (ual_lock) */
static uint64_t svc_next;
static uint32_t request_next;

void
ual_ud_drop_ia(ual_ia_t *ia)
{
  if (svc_table == NULL)
    return;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, svc_table);
  while (g_hash_table_iter_next(&it, &k, &v))
    if (((ual_svc_pending_t *) v)->ia == ia)
      g_hash_table_iter_remove(&it);
}

it_status_t
it_ud_service_request_handle_create(const it_conn_qual_t *conn_qual, it_evd_handle_t reply_evd,
                                    const it_path_t *destination_path, const unsigned char *private_data,
                                    size_t private_data_length, it_ud_svc_req_handle_t *ud_svc_handle)
{
  it_status_t st = IT_SUCCESS;
  uint32_t port;
  if (ud_svc_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_ud_service_request_handle_create: ud_svc_handle is NULL");
  ual_lock_take();
  ual_evd_t *evd = ual_evd_get(reply_evd);
  if (evd == NULL || evd->stream != IT_CM_MSG_EVENT_STREAM) {
    st = ual_fail(IT_ERR_INVALID_EVD, "reply EVD %p is not a live CM_MSG-stream EVD", (void *) reply_evd);
    goto unlock;
  }
  ual_ia_t *ia = evd->obj.ia;
  if (!has_ud(ia)) {
    st = no_ud(ia, "it_ud_service_request_handle_create");
    goto unlock;
  }
  if ((st = ual_qual_to_port(conn_qual, FALSE, &port)) != IT_SUCCESS)
    goto unlock;
  if (port == 0) {
    st = ual_fail(IT_ERR_INVALID_CONN_QUAL, "the qualifier names port 0; name the listener's port");
    goto unlock;
  }
  if (destination_path == NULL) {
    st = ual_fail(IT_ERR_INVALID_SOURCE_PATH, "it_ud_service_request_handle_create: destination_path is NULL");
    goto unlock;
  }
  if (destination_path->spigot_id >= MAX(ia->caps.num_ports, 1u)) {
    st = ual_fail(IT_ERR_INVALID_SPIGOT, "the path starts at spigot %zu; IA '%s' has %u",
                  destination_path->spigot_id, ia->iface->name, ia->caps.num_ports);
    goto unlock;
  }
  if ((st = ual_check_pdata(private_data, private_data_length, MIN(ia->caps.pdata_ud_req, IT_MAX_PRIV_DATA),
                            "ud_req", ia)) != IT_SUCCESS)
    goto unlock;
  ual_udsvc_t *svc = g_new0(ual_udsvc_t, 1);
  svc->reply = evd;
  svc->qual = *conn_qual;
  svc->path = *destination_path;
  svc->request_id = ++request_next;
  svc->pdata_len = private_data_length;
  if (private_data_length > 0)
    memcpy(svc->pdata, private_data, private_data_length);
  if ((st = ual_handle_new(&svc->obj, IT_HANDLE_TYPE_UD_SVC_REQ, ia)) != IT_SUCCESS) {
    g_free(svc);
    goto unlock;
  }
  evd->nbound++;
  ual_ia_child_add(ia, &svc->obj);
  *ud_svc_handle = UAL_HANDLE(&svc->obj, it_ud_svc_req_handle_t);
unlock:
  ual_lock_drop();
  return st;
}

void
ual_udsvc_destroy(ual_udsvc_t *svc)
{
  /* A reply still on its way finds no handle and is dropped. */
  if (svc->obj.handle != 0)
    ual_handle_release(&svc->obj);
  svc->reply->nbound--;
  g_free(svc);
}

it_status_t
it_ud_service_request_handle_free(it_ud_svc_req_handle_t ud_svc_handle)
{
  return ual_child_free(ud_svc_handle, IT_HANDLE_TYPE_UD_SVC_REQ, IT_ERR_INVALID_UD_SVC, "UD service request");
}

it_status_t
it_ud_service_request_handle_query(it_ud_svc_req_handle_t ud_svc_handle, it_ud_svc_req_param_mask_t mask,
                                   it_ud_svc_req_param_t *ud_svc_handle_info)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_udsvc_t *svc = ual_udsvc_get(ud_svc_handle);
  if (svc == NULL)
    st = ual_fail(IT_ERR_INVALID_UD_SVC, "it_ud_service_request_handle_query: %p is not a live UD service "
                  "request handle", (void *) ud_svc_handle);
  else if ((mask & ~UAL_UD_SVC_PARAMS_KNOWN) != 0)
    st = ual_fail(IT_ERR_INVALID_MASK, "it_ud_service_request_handle_query: mask 0x%x has unknown bits",
                  (unsigned) mask);
  else if (ud_svc_handle_info == NULL)
    st = ual_fail(IT_ERR_FAULT, "it_ud_service_request_handle_query: ud_svc_handle_info is NULL");
  else {
    it_ud_svc_req_param_t *p = ud_svc_handle_info;
    memset(p, 0, sizeof(*p));
    p->ia = UAL_HANDLE(&svc->obj.ia->obj, it_ia_handle_t);
    p->request_id = svc->request_id;
    p->reply_evd = UAL_HANDLE(&svc->reply->obj, it_evd_handle_t);
    p->conn_qual = svc->qual;
    p->destination_path = svc->path;
    memcpy(p->private_data, svc->pdata, svc->pdata_len);
    p->private_data_length = svc->pdata_len;
  }
  ual_lock_drop();
  return st;
}

it_status_t
it_ud_service_request(it_ud_svc_req_handle_t ud_svc_handle)
{
  it_status_t st = IT_SUCCESS;
  uint32_t port;
  ual_lock_take();
  ual_udsvc_t *svc = ual_udsvc_get(ud_svc_handle);
  if (svc == NULL) {
    st = ual_fail(IT_ERR_INVALID_UD_SVC, "it_ud_service_request: %p is not a live UD service request handle",
                  (void *) ud_svc_handle);
    goto unlock;
  }
  ual_ia_t *ia = svc->obj.ia;
  rnicpi_addr_t dst;
  if ((st = ual_qual_to_port(&svc->qual, FALSE, &port)) != IT_SUCCESS ||
      (st = ual_path_to_addr(ia, &svc->path, port, &dst)) != IT_SUCCESS)
    goto unlock;
  rnicpi_status_t rs = ia->prov->cm->ud_svc_request(ia->dev, &dst, svc->pdata, (uint32_t) svc->pdata_len,
                                                    svc->obj.handle);
  if (rs != RNICPI_OK)
    st = ual_fail(rs == RNICPI_ELIMIT ? IT_ERR_INVALID_PDATA_LENGTH : ual_map_status(rs),
                  "provider '%s' could not send UD service request %p: %s", ia->prov->name,
                  (void *) ud_svc_handle, rnicpi_status_message(rs));
unlock:
  ual_lock_drop();
  return st;
}

it_status_t
it_ud_service_reply(it_ud_svc_req_identifier_t ud_svc_req_id, it_ud_svc_req_status_t status,
                    it_remote_ep_info_t ep_info, const unsigned char *private_data, size_t private_data_length)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_svc_pending_t *p = svc_table != NULL ? g_hash_table_lookup(svc_table, &ud_svc_req_id) : NULL;
  if (p == NULL) {
    st = ual_fail(IT_ERR_INVALID_UD_SVC_REQ_ID, "UD service request id 0x%" G_GINT64_MODIFIER "x is not "
                  "pending (answered, or never issued)", ud_svc_req_id);
    goto unlock;
  }
  ual_ia_t *ia = p->ia;
  if ((unsigned) status > IT_UD_REQ_REDIRECTED) {
    st = ual_fail(IT_ERR_INVALID_UD_STATUS, "it_ud_service_reply: status %d is not an it_ud_svc_req_status_t "
                  "(0..4)", (int) status);
    goto unlock;
  }
  if ((st = ual_check_pdata(private_data, private_data_length, MIN(ia->caps.pdata_ud_rep, IT_MAX_PRIV_DATA),
                            "ud_rep", ia)) != IT_SUCCESS)
    goto unlock;
  /* it_ud_svc_req_status_t and RNIC-PI's statuses are both SIDR_REP's. */
  rnicpi_status_t rs = ia->prov->cm->ud_svc_reply(ia->dev, p->prov_id, (rnicpi_ud_svc_status_t) status,
                                                  ep_info.ud_ep_id, ep_info.ud_ep_key, private_data,
                                                  (uint32_t) private_data_length);
  if (rs != RNICPI_OK)
    st = ual_fail(rs == RNICPI_ENOENT ? IT_ERR_INVALID_UD_SVC_REQ_ID : ual_map_status(rs),
                  "provider '%s' could not answer UD service request 0x%" G_GINT64_MODIFIER "x: %s",
                  ia->prov->name, ud_svc_req_id, rnicpi_status_message(rs));
  if (rs == RNICPI_OK || rs == RNICPI_ENOENT)
    g_hash_table_remove(svc_table, &ud_svc_req_id);
unlock:
  ual_lock_drop();
  return st;
}

static void
copy_pdata(unsigned char *dst, it_boolean_t *present, const rnicpi_cm_event_t *ev)
{
  size_t n = MIN((size_t) ev->pdata_len, (size_t) IT_MAX_PRIV_DATA);
  memset(dst, 0, IT_MAX_PRIV_DATA);
  memcpy(dst, ev->pdata, n);
  *present = n > 0 ? IT_TRUE : IT_FALSE;
}

/* Provider upcalls (ual_lock held). */
void
ual_ud_cm_event(ual_ia_t *ia, const rnicpi_cm_event_t *ev)
{
  it_event_t *e = g_new0(it_event_t, 1);
  if (ev->type == RNICPI_CM_UD_SVC_REQUEST) {
    ual_listen_t *l = ual_listen_get((it_listen_handle_t) (uintptr_t) ev->listen_ctx);
    if (l == NULL) {
      ia->prov->cm->ud_svc_reply(ia->dev, ev->conn_id, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
      g_free(e);
      return;
    }
    if (svc_table == NULL) {
      svc_table = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
      svc_next = ((uint64_t) g_random_int() << 32) | 1;
    }
    ual_svc_pending_t *p = g_new0(ual_svc_pending_t, 1);
    p->id = svc_next++;
    p->prov_id = ev->conn_id;
    p->ia = ia;
    g_hash_table_insert(svc_table, &p->id, p);
    it_ud_svc_request_event_t *r = &e->ud_svc_request;
    r->event_number = IT_CM_REQ_UD_SERVICE_REQUEST_EVENT;
    r->ud_svc_req_id = p->id;
    r->conn_qual = l->qual;
    if (ev->src.sa.ss_family == AF_INET6) {
      r->source_addr.addr_type = IT_IPV6;
      r->source_addr.addr.ipv6 = ((const struct sockaddr_in6 *) &ev->src.sa)->sin6_addr;
    } else {
      r->source_addr.addr_type = IT_IPV4;
      r->source_addr.addr.ipv4 = ((const struct sockaddr_in *) &ev->src.sa)->sin_addr;
    }
    r->spigot_id = l->spigot;
    copy_pdata(r->private_data, &r->private_data_present, ev);
    ual_evd_push(l->evd, e);
  } else {
    ual_udsvc_t *svc = ual_udsvc_get((it_ud_svc_req_handle_t) (uintptr_t) ev->qp_ctx);
    if (svc != NULL) {
      it_ud_svc_reply_event_t *r = &e->ud_svc_reply;
      r->event_number = IT_CM_MSG_UD_SERVICE_REPLY_EVENT;
      r->ud_svc = UAL_HANDLE(&svc->obj, it_ud_svc_req_handle_t);
      r->status = (it_ud_svc_req_status_t) ev->ud_status;
      r->ep_info.ud_ep_id = ev->ud_qpn;
      r->ep_info.ud_ep_key = ev->ud_qkey;
      r->dst_path = svc->path;
      copy_pdata(r->private_data, &r->private_data_present, ev);
      ual_evd_push(svc->reply, e);
    }
  }
  g_free(e);
}
