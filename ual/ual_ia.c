/*
 * Interface adapters, protection zones, paths and network addresses.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <string.h>

#include "rnicpi_registry.h"
#include "rnicpi_util.h"
#include "ual.h"

const char *
ual_cap_advice(ual_ia_t *ia, uint64_t cap, char buf[UAL_ADVICE_LEN])
{
  char a[UAL_ADVICE_LEN - 2] = "";
  if (ia->prov->device->cap_advice(ia->dev, cap, a, sizeof(a)) != RNICPI_OK)
    return "";
  a[sizeof(a) - 1] = '\0';
  if (a[0] == '\0')
    return "";
  g_snprintf(buf, UAL_ADVICE_LEN, "; %s", a);
  return buf;
}

static const rnicpi_upcalls_t ual_upcalls = {
  .cm_event = ual_upcall_cm,
  .cq_notify = ual_upcall_cq_notify,
  .async_event = ual_upcall_async,
};

void
it_interface_list(it_interface_t *interfaces, size_t *num_interfaces,
                  size_t *total_interfaces)
{
  size_t total = kal_iface_count();
  size_t cap = num_interfaces != NULL ? *num_interfaces : 0;
  size_t n = interfaces != NULL ? MIN(cap, total) : 0;
  for (size_t i = 0; i < n; i++) {
    const kal_iface_t *f = kal_iface_get(i);
    memset(&interfaces[i], 0, sizeof(interfaces[i]));
    interfaces[i].major_version = 2;
    interfaces[i].minor_version = 1;
    interfaces[i].transport_type = (it_transport_type_t) f->transport;
    g_strlcpy(interfaces[i].name, f->name, sizeof(interfaces[i].name));
  }
  if (num_interfaces != NULL)
    *num_interfaces = n;
  if (total_interfaces != NULL)
    *total_interfaces = total;
}

it_status_t
it_ia_create(const char *name, uint32_t major_version, uint32_t minor_version,
             it_ia_handle_t *ia_handle)
{
  if (ia_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_ia_create: ia_handle is NULL");
  const kal_iface_t *f = kal_iface_find(name);
  const char *missing = f == NULL ? kal_iface_missing(name) : NULL;
  if (missing != NULL)
    return ual_fail(IT_ERR_INVALID_NAME, "no interface named '%s': %s", name != NULL ? name : "(null)",
                    missing);
  if (f == NULL)
    return ual_fail(IT_ERR_INVALID_NAME,
                    "no interface named '%s' (%zu interfaces known; list them with it_interface_list or itapi-info)",
                    name != NULL ? name : "(null)", kal_iface_count());
  if (major_version < 1 || major_version > 2)
    return ual_fail(IT_ERR_INVALID_MAJOR_VERSION,
                    "IT-API major version %u requested; interface '%s' implements 1.0 to 2.1",
                    major_version, name);
  if ((major_version == 1 && minor_version > 0) || (major_version == 2 && minor_version > 1))
    return ual_fail(IT_ERR_INVALID_MINOR_VERSION,
                    "IT-API version %u.%u requested; interface '%s' implements 1.0 to 2.1",
                    major_version, minor_version, name);

  ual_ia_t *ia = g_new0(ual_ia_t, 1);
  ia->iface = f;
  ia->prov = f->prov;
  ia->major = major_version;
  ia->minor = minor_version;
  rnicpi_status_t st = ia->prov->device->open(f->device, &ual_upcalls, ia, &ia->dev);
  if (st != RNICPI_OK) {
    g_free(ia);
    return ual_fail(IT_ERR_IA_CATASTROPHE, "provider '%s' could not open device '%s': %s",
                    f->prov->name, f->device, rnicpi_status_message(st));
  }
  st = ia->prov->device->query(ia->dev, &ia->caps);
  if (st != RNICPI_OK) {
    ia->prov->device->close(ia->dev);
    g_free(ia);
    return ual_fail(IT_ERR_IA_CATASTROPHE, "provider '%s' could not describe device '%s': %s",
                    f->prov->name, f->device, rnicpi_status_message(st));
  }
  /* An older provider's rules in this minor's bits: from here on only
   * bits are read. */
  rnicpi_caps_complete(ia->prov, &ia->caps);
  ia->host_cm = ual_hostcm_wanted(ia);
  it_status_t hs = ual_handle_new(&ia->obj, IT_HANDLE_TYPE_IA, ia);
  if (hs != IT_SUCCESS) {
    ia->prov->device->close(ia->dev);
    g_free(ia);
    return hs;
  }
  *ia_handle = UAL_HANDLE(&ia->obj, it_ia_handle_t);
  return IT_SUCCESS;
}

it_status_t
it_ia_free(it_ia_handle_t ia_handle)
{
  ual_lock_take();
  ual_ia_t *ia = ual_ia_get(ia_handle);
  if (ia == NULL) {
    ual_lock_drop();
    return ual_fail(IT_ERR_INVALID_IA, "it_ia_free: %p is not a live IA handle", (void *) ia_handle);
  }
  /* Unpublish the IA and every child at once: from here no call finds
   * them, and a thread waiting on one of its EVDs wakes and leaves. */
  ual_handle_kill(&ia->obj);
  for (GList *l = ia->children; l != NULL; l = l->next)
    ual_obj_unpublish(l->data);
  ual_cn_drop_ia(ia);
  ual_ud_drop_ia(ia);
  ual_mem_unmap_all(ia);
  if (!ual_can_sync()) {
    g_log(UAL_LOG, G_LOG_LEVEL_DEBUG, "IA '%s' is freed from a callback or a read section: the reclaimer "
          "tears it down once no thread can use it", ia->iface->name);
    ual_reclaim_later(&ia->obj);
    ual_lock_drop();
    return IT_SUCCESS;
  }
  ual_lock_drop();
  ual_ia_teardown(ia);
  return IT_SUCCESS;
}

/* Whether a thread still waits on an EVD of @ia (object lock held). */
static gboolean
ia_has_waiter(ual_ia_t *ia)
{
  for (GList *l = ia->children; l != NULL; l = l->next) {
    ual_obj_t *o = l->data;
    if (o->type == IT_HANDLE_TYPE_EVD && g_atomic_int_get(&((ual_evd_t *) o)->waiters) > 0)
      return TRUE;
  }
  return FALSE;
}

void
ual_ia_teardown(ual_ia_t *ia)
{
  /* Children that other threads freed finish their grace period, waiters
   * leave, then no read section may still hold any child. */
  ual_lock_take();
  while (ia->dying > 0 || ia_has_waiter(ia)) {
    ual_lock_drop();
    g_usleep(100);
    ual_lock_take();
  }
  ual_lock_drop();
  rsec_sync();
  ual_lock_take();
  /* Children in dependency order: EPs, listeners and service requests,
   * SRQs, RMRs, address handles, LMRs, the SEVDs that feed an AEVD (while
   * their AEVD still lives), the other EVDs, PZs. */
  static const struct { it_handle_type_enum_t type; gboolean feeding; } order[] = {
    { IT_HANDLE_TYPE_EP, FALSE }, { IT_HANDLE_TYPE_LISTEN, FALSE }, { IT_HANDLE_TYPE_UD_SVC_REQ, FALSE },
    { IT_HANDLE_TYPE_SRQ, FALSE }, { IT_HANDLE_TYPE_RMR, FALSE }, { IT_HANDLE_TYPE_ADDR, FALSE },
    { IT_HANDLE_TYPE_LMR, FALSE }, { IT_HANDLE_TYPE_EVD, TRUE }, { IT_HANDLE_TYPE_EVD, FALSE },
    { IT_HANDLE_TYPE_PZ, FALSE },
  };
  for (size_t k = 0; k < G_N_ELEMENTS(order); k++) {
    GList *l = ia->children;
    while (l != NULL) {
      ual_obj_t *o = l->data;
      GList *next = l->next;
      if (o->type == order[k].type &&
          (!order[k].feeding || ((ual_evd_t *) o)->aevd != NULL)) {
        guint left = ia->nchildren - 1;
        ual_ia_child_remove(ia, o);
        ual_obj_destroy(o);
        /* On from the next child, one walk per type, unless the destroy
         * took siblings too (the next one may be gone): then from the
         * head again. */
        l = ia->nchildren == left ? next : ia->children;
        continue;
      }
      l = next;
    }
  }
  ual_handle_release(&ia->obj);
  ual_lock_drop();
  /* Closing waits for upcalls in flight, which take ual_lock. */
  ia->prov->device->close(ia->dev);
  g_free(ia);  /* its list is empty: each node was its child's own */
}

/* Destroy a child object of an IA (already off its IA's list). */
void
ual_obj_destroy(ual_obj_t *o)
{
  switch (o->type) {
  case IT_HANDLE_TYPE_EP: ual_ep_destroy((ual_ep_t *) o); break;
  case IT_HANDLE_TYPE_LISTEN: ual_listen_destroy((ual_listen_t *) o); break;
  case IT_HANDLE_TYPE_RMR: ual_rmr_destroy((ual_rmr_t *) o); break;
  case IT_HANDLE_TYPE_LMR: ual_lmr_destroy((ual_lmr_t *) o); break;
  case IT_HANDLE_TYPE_SRQ: ual_srq_destroy((ual_srq_t *) o); break;
  case IT_HANDLE_TYPE_ADDR: ual_ah_destroy((ual_ah_t *) o); break;
  case IT_HANDLE_TYPE_UD_SVC_REQ: ual_udsvc_destroy((ual_udsvc_t *) o); break;
  case IT_HANDLE_TYPE_PZ: ual_pz_destroy((ual_pz_t *) o); break;
  case IT_HANDLE_TYPE_EVD: ual_evd_destroy((ual_evd_t *) o); break;
  case IT_HANDLE_TYPE_IA: break; /* not a child */
  }
}

itx_completion_t
itx_ia_completion(it_ia_handle_t ia_handle)
{
  RSEC_SCOPE();
  ual_ia_t *ia = ual_ia_get(ia_handle);
  return ia != NULL && (ia->caps.features & RNICPI_CAP_PLACED_COMPLETION) ? ITX_COMPLETION_PLACED
                                                                          : ITX_COMPLETION_SENT;
}

/* One block: info, spigots and their addresses, freed by it_ia_info_free. */
it_status_t
it_ia_query(it_ia_handle_t ia_handle, it_ia_info_t **ia_info)
{
  RSEC_SCOPE();
  ual_ia_t *ia = ual_ia_get(ia_handle);
  if (ia == NULL)
    return ual_fail(IT_ERR_INVALID_IA, "it_ia_query: %p is not a live IA handle", (void *) ia_handle);
  if (ia_info == NULL)
    return ual_fail(IT_ERR_FAULT, "it_ia_query: ia_info is NULL");
  const rnicpi_caps_t *c = &ia->caps;
  size_t nsp = MAX(c->num_ports, 1u);
  size_t bytes = sizeof(it_ia_info_t) + nsp * sizeof(it_spigot_info_t) +
                 c->num_addrs * sizeof(it_net_addr_t) + strlen(ia->iface->name) + 1;
  it_ia_info_t *info = g_malloc0(bytes);
  it_spigot_info_t *sp = (it_spigot_info_t *) (info + 1);
  it_net_addr_t *na = (it_net_addr_t *) (sp + nsp);
  char *name = (char *) (na + c->num_addrs);
  strcpy(name, ia->iface->name);

  for (uint32_t i = 0; i < c->num_addrs; i++) {
    const struct sockaddr_storage *ss = &c->addrs[i];
    if (ss->ss_family == AF_INET) {
      na[i].addr_type = IT_IPV4;
      na[i].addr.ipv4 = ((const struct sockaddr_in *) ss)->sin_addr;
    } else {
      na[i].addr_type = IT_IPV6;
      na[i].addr.ipv6 = ((const struct sockaddr_in6 *) ss)->sin6_addr;
    }
  }
  for (size_t s = 0; s < nsp; s++) {
    sp[s].spigot_id = s;
    sp[s].max_rc_send_len = c->max_msg_size;
    sp[s].max_rc_rdma_len = c->max_msg_size;
    sp[s].max_ud_send_len = (c->features & RNICPI_CAP_UD) ? c->ud_mtu : 0;
    sp[s].spigot_online = IT_TRUE;
    sp[s].active_side_conn_qual = IT_IANA_PORT | IT_IB_SERVICEID | IT_IANA_LR_PORT;
    sp[s].passive_side_conn_qual = IT_IANA_PORT | IT_IB_SERVICEID | IT_IANA_LR_PORT;
    sp[s].num_net_addr = s == 0 ? c->num_addrs : 0;
    sp[s].net_addr = s == 0 ? na : NULL;
  }

#define CAP(bit) ((c->features & (bit)) ? IT_TRUE : IT_FALSE)
  info->ia_name = name;
  info->api_major_version = 2;
  info->api_minor_version = 1;
  info->sw_major_version = c->sw_major;
  info->sw_minor_version = c->sw_minor;
  info->vendor.ib.vendor = c->vendor_id & 0xffffff;
  info->vendor.ib.revision = c->hw_version;
  info->dto_alignment_hint = 64;
  info->transport_type = (it_transport_type_t) c->transport;
  info->supported_service_types = IT_RC_SERVICE;
  if (c->features & RNICPI_CAP_UD)
    info->supported_service_types |= IT_UD_SERVICE;
  info->ep_work_queues_resizable = CAP(RNICPI_CAP_QP_RESIZE);
  info->three_way_handshake_support = CAP(RNICPI_CAP_THREE_WAY);
  info->private_data_support = IT_TRUE;
  info->max_message_size_support = IT_TRUE;
  info->ird_ord_ia_support = CAP(RNICPI_CAP_IRD_ORD_NEGOTIATED);
  info->ird_ord_suppressible = IT_FALSE;
  info->spigot_online_support = IT_FALSE;
  info->spigot_offline_support = IT_FALSE;
  info->connect_private_data_len = MIN(c->pdata_connect, IT_MAX_PRIV_DATA);
  info->accept_private_data_len = MIN(c->pdata_accept, IT_MAX_PRIV_DATA);
  info->reject_private_data_len = MIN(c->pdata_reject, IT_MAX_PRIV_DATA);
  info->disconnect_private_data_len = MIN(c->pdata_disconnect, IT_MAX_PRIV_DATA);
  /* UD service resolution (ual_ud.c) carries the provider's SIDR limits. */
  info->ud_req_private_data_len = (c->features & RNICPI_CAP_UD) ? MIN(c->pdata_ud_req, IT_MAX_PRIV_DATA) : 0;
  info->ud_rep_private_data_len = (c->features & RNICPI_CAP_UD) ? MIN(c->pdata_ud_rep, IT_MAX_PRIV_DATA) : 0;
  info->num_spigots = nsp;
  info->spigot_info = sp;
  info->affiliated_err_evd = ia->aff_evd ? UAL_HANDLE(&ia->aff_evd->obj, it_evd_handle_t) : IT_NULL_HANDLE;
  info->unaffiliated_err_evd = ia->unaff_evd ? UAL_HANDLE(&ia->unaff_evd->obj, it_evd_handle_t) : IT_NULL_HANDLE;
  info->srq_support = CAP(RNICPI_CAP_SRQ);
  info->hard_hi_watermark_support = IT_FALSE;
  info->soft_hi_watermark_support = IT_FALSE;
  info->srq_resizable = CAP(RNICPI_CAP_SRQ);
  info->extended_iwarp_qp_states = IT_FALSE;
  info->socket_conversion_support = CAP(RNICPI_CAP_SOCKET_HANDOFF);
  info->rdma_read_ord_increasable = IT_FALSE;
  info->rdma_read_ird_modifiable = IT_TRUE;
  /* A mask of the types offered (0: none). */
  info->rmr_types_supported = (it_rmr_type_t) ((CAP(RNICPI_CAP_MW_NARROW) ? IT_RMR_TYPE_NARROW : 0) |
                                               (CAP(RNICPI_CAP_MW_WIDE) ? IT_RMR_TYPE_WIDE : 0));
  info->addr_mode_relative_support = CAP(RNICPI_CAP_ZERO_BASED);
  info->rdma_read_requires_remote_write = CAP(RNICPI_CAP_READ_SINK_REMOTE_WRITE);
  info->ep_rdma_enables_modifiable = IT_TRUE;
  /* it_post_rdma_read_to_rmr and IT_UNLINK_LOCAL_SINK: Reads into windows,
   * Read with Local Invalidate (RNIC-PI 1.4), and windows to read into. */
  info->rdma_read_local_extensions = CAP(RNICPI_CAP_READ_SINK_MW) && CAP(RNICPI_CAP_LOCAL_INVALIDATE) &&
                                     (CAP(RNICPI_CAP_MW_NARROW) || CAP(RNICPI_CAP_MW_WIDE));
  info->dto_evd_overflow_detection = CAP(RNICPI_CAP_CQ_OVERFLOW_DETECT);
  info->atomic_support = CAP(RNICPI_CAP_ATOMICS);
  /* Unlinked LMRs: fast registration and local invalidation of regions. */
  info->lmr_link_support = CAP(RNICPI_CAP_FAST_REGISTER) && CAP(RNICPI_CAP_LOCAL_INVALIDATE);
  info->direct_lmr_handle_support = IT_FALSE;
  info->direct_lmr_handle = IT_NULL_HANDLE;
  info->post_send_unlink_remote_support = CAP(RNICPI_CAP_REMOTE_INVALIDATE);
  info->narrow_rmr_unlink_support = CAP(RNICPI_CAP_MW_NARROW) && CAP(RNICPI_CAP_LOCAL_INVALIDATE);
  info->wide_rmr_unlink_support = CAP(RNICPI_CAP_MW_WIDE) && CAP(RNICPI_CAP_LOCAL_INVALIDATE);
  /* An unlink is a work request of the send queue (RNICPI_WR_LOCAL_FENCE). */
  info->unlink_fence_support = CAP(RNICPI_CAP_LOCAL_INVALIDATE);
  /* I/O buffer lists are translated here (ual_lmr.c: an I/O address is the
   * virtual address it_mem_map pinned), so every provider takes them. */
  info->iobl_types_supported = (it_iobl_type_t) (IT_IOBL_PAGE_LIST | IT_IOBL_BLOCK_LIST | IT_IOBL_VE_PAGE_LIST);
#undef CAP
  *ia_info = info;
  return IT_SUCCESS;
}

void
it_ia_info_free(it_ia_info_t *ia_info)
{
  g_free(ia_info);
}

/* Protection zones. */

it_status_t
it_pz_create(it_ia_handle_t ia_handle, it_pz_handle_t *pz_handle)
{
  if (pz_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_pz_create: pz_handle is NULL");
  ual_lock_take();
  ual_ia_t *ia = ual_ia_get(ia_handle);
  if (ia == NULL) {
    ual_lock_drop();
    return ual_fail(IT_ERR_INVALID_IA, "it_pz_create: %p is not a live IA handle", (void *) ia_handle);
  }
  ual_pz_t *pz = g_new0(ual_pz_t, 1);
  rnicpi_status_t st = ia->prov->device->pd_alloc(ia->dev, &pz->pd);
  if (st != RNICPI_OK) {
    ual_lock_drop();
    g_free(pz);
    return ual_fail(IT_ERR_RESOURCES, "provider '%s' could not allocate a protection domain: %s",
                    ia->prov->name, rnicpi_status_message(st));
  }
  it_status_t hs = ual_handle_new(&pz->obj, IT_HANDLE_TYPE_PZ, ia);
  if (hs != IT_SUCCESS) {
    ia->prov->device->pd_free(pz->pd);
    ual_lock_drop();
    g_free(pz);
    return hs;
  }
  ual_ia_child_add(ia, &pz->obj);
  *pz_handle = UAL_HANDLE(&pz->obj, it_pz_handle_t);
  ual_lock_drop();
  return IT_SUCCESS;
}

void
ual_pz_destroy(ual_pz_t *pz)
{
  if (pz->obj.handle != 0)
    ual_handle_release(&pz->obj);
  pz->obj.ia->prov->device->pd_free(pz->pd);
  g_free(pz);
}

it_status_t
it_pz_free(it_pz_handle_t pz_handle)
{
  ual_lock_take();
  ual_pz_t *pz = ual_pz_get(pz_handle);
  it_status_t st = IT_SUCCESS;
  if (pz == NULL) {
    st = ual_fail(IT_ERR_INVALID_PZ, "it_pz_free: %p is not a live PZ handle", (void *) pz_handle);
  } else if (pz->nref > 0) {
    st = ual_fail(IT_ERR_PZ_BUSY, "PZ %p still holds %d endpoints or memory regions; free them first",
                  (void *) pz_handle, pz->nref);
  } else {
    ual_ia_child_remove(pz->obj.ia, &pz->obj);
    ual_obj_retire(&pz->obj);
  }
  ual_lock_drop();
  return st;
}

it_status_t
it_pz_query(it_pz_handle_t pz_handle, it_pz_param_mask_t mask, it_pz_param_t *params)
{
  RSEC_SCOPE();
  ual_pz_t *pz = ual_pz_get(pz_handle);
  if (pz == NULL)
    return ual_fail(IT_ERR_INVALID_PZ, "it_pz_query: %p is not a live PZ handle", (void *) pz_handle);
  if ((mask & ~(IT_PZ_PARAM_ALL | IT_PZ_PARAM_IA)) != 0)
    return ual_fail(IT_ERR_INVALID_MASK, "it_pz_query: mask 0x%x has unknown bits", (unsigned) mask);
  if (params == NULL)
    return ual_fail(IT_ERR_FAULT, "it_pz_query: params is NULL");
  params->ia = UAL_HANDLE(&pz->obj.ia->obj, it_ia_handle_t);
  return IT_SUCCESS;
}

/* Paths: one path per reachable address, described the way the device
 * wants it (IB path record with GIDs, or an IP address pair). */

static void
v4_to_gid(struct in_addr v4, struct in6_addr *gid)
{
  memset(gid, 0, sizeof(*gid));
  gid->s6_addr[10] = 0xff;
  gid->s6_addr[11] = 0xff;
  memcpy(&gid->s6_addr[12], &v4, 4);
}

/* The IA's first address of @family (caps.addrs[], in the order the
 * provider lists them), or NULL. */
static const struct sockaddr_storage *
ia_first_addr(const ual_ia_t *ia, int family)
{
  for (uint32_t i = 0; i < ia->caps.num_addrs && i < G_N_ELEMENTS(ia->caps.addrs); i++)
    if (ia->caps.addrs[i].ss_family == family)
      return &ia->caps.addrs[i];
  return NULL;
}

void
ual_ia_local_gid(const ual_ia_t *ia, struct in6_addr *gid)
{
  const struct sockaddr_storage *ss = ia->caps.num_addrs > 0 ? &ia->caps.addrs[0] : NULL;
  if (ss != NULL && ss->ss_family == AF_INET6) {
    *gid = ((const struct sockaddr_in6 *) ss)->sin6_addr;
    return;
  }
  struct in_addr a4 = { htonl(INADDR_LOOPBACK) };
  if (ss != NULL && ss->ss_family == AF_INET)
    a4 = ((const struct sockaddr_in *) ss)->sin_addr;
  v4_to_gid(a4, gid);
}

/* @sa's address, no port, for messages. */
static const char *
sa_text(const struct sockaddr_storage *sa, char buf[INET6_ADDRSTRLEN])
{
  const void *a = sa->ss_family == AF_INET6 ? (const void *) &((const struct sockaddr_in6 *) sa)->sin6_addr
                                            : (const void *) &((const struct sockaddr_in *) sa)->sin_addr;
  if (inet_ntop(sa->ss_family, a, buf, INET6_ADDRSTRLEN) == NULL)
    g_strlcpy(buf, "?", INET6_ADDRSTRLEN);
  return buf;
}

gboolean
ual_ia_map_loopback(ual_ia_t *ia, struct sockaddr_storage *sa)
{
  struct sockaddr_storage to;
  if (!rnicpi_addr_is_loopback((const struct sockaddr *) sa) ||
      !rnicpi_caps_loopback_target(&ia->caps, sa->ss_family, &to))
    return FALSE;
  if (g_atomic_int_compare_and_exchange(&ia->said_loopback, 0, 1)) {
    char from[INET6_ADDRSTRLEN], own[INET6_ADDRSTRLEN];
    g_message("IA '%s': %s is this host, and the IA cannot reach the loopback (it lists no "
              "loopback address): a connection to it goes to the IA's own address %s, where this "
              "host's listeners on the IA are; a listener on another interface is reached by "
              "that interface's address (said once per IA)",
              ia->iface->name, sa_text(sa, from), sa_text(&to, own));
  }
  in_port_t port = sa->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *) sa)->sin6_port
                                             : ((const struct sockaddr_in *) sa)->sin_port;
  *sa = to;
  if (sa->ss_family == AF_INET6)
    ((struct sockaddr_in6 *) sa)->sin6_port = port;
  else
    ((struct sockaddr_in *) sa)->sin_port = port;
  return TRUE;
}

/* @a as a socket address, port 0: a GID as IPv6, an IPv4-mapped one as
 * the IPv4 address it carries. */
static void
net_addr_to_sa(const it_net_addr_t *a, struct sockaddr_storage *sa)
{
  memset(sa, 0, sizeof(*sa));
  const struct in6_addr *v6 = a->addr_type == IT_IPV6 ? &a->addr.ipv6 : &a->addr.gid;
  if (a->addr_type == IT_IPV4 || IN6_IS_ADDR_V4MAPPED(v6)) {
    struct sockaddr_in *s4 = (struct sockaddr_in *) sa;
    s4->sin_family = AF_INET;
    if (a->addr_type == IT_IPV4)
      s4->sin_addr = a->addr.ipv4;
    else
      memcpy(&s4->sin_addr, &v6->s6_addr[12], 4);
  } else {
    ((struct sockaddr_in6 *) sa)->sin6_family = AF_INET6;
    ((struct sockaddr_in6 *) sa)->sin6_addr = *v6;
  }
}

it_status_t
it_get_pathinfo(it_ia_handle_t ia_handle, size_t spigot_id, const it_net_addr_t *net_addr,
                size_t *num_paths, size_t *total_paths, it_path_t *paths)
{
  RSEC_SCOPE();
  ual_ia_t *ia = ual_ia_get(ia_handle);
  if (ia == NULL)
    return ual_fail(IT_ERR_INVALID_IA, "it_get_pathinfo: %p is not a live IA handle", (void *) ia_handle);
  if (spigot_id >= MAX(ia->caps.num_ports, 1u))
    return ual_fail(IT_ERR_INVALID_SPIGOT, "spigot %zu does not exist; IA '%s' has %u",
                    spigot_id, ia->iface->name, ia->caps.num_ports);
  if (net_addr == NULL || (net_addr->addr_type != IT_IPV4 && net_addr->addr_type != IT_IPV6 &&
                           net_addr->addr_type != IT_IB_GID))
    return ual_fail(IT_ERR_INVALID_NETADDR, "it_get_pathinfo: address type %d is not IPv4, IPv6 or a GID",
                    net_addr ? (int) net_addr->addr_type : -1);
  if (num_paths == NULL || total_paths == NULL)
    return ual_fail(IT_ERR_FAULT, "it_get_pathinfo: num_paths or total_paths is NULL");
  *total_paths = 1;
  if (*num_paths < 1 || paths == NULL) {
    *num_paths = 0;
    return IT_SUCCESS;
  }
  /* The path names what is really connected to: a loopback destination
   * the IA cannot reach is its own address (ual_ia_map_loopback). */
  it_net_addr_t mapped;
  struct sockaddr_storage sa;
  net_addr_to_sa(net_addr, &sa);
  if (ual_ia_map_loopback(ia, &sa)) {
    memset(&mapped, 0, sizeof(mapped));
    if (sa.ss_family == AF_INET) {
      mapped.addr_type = IT_IPV4;
      mapped.addr.ipv4 = ((const struct sockaddr_in *) &sa)->sin_addr;
    } else {
      mapped.addr_type = IT_IPV6;
      mapped.addr.ipv6 = ((const struct sockaddr_in6 *) &sa)->sin6_addr;
    }
    net_addr = &mapped;
  }
  it_path_t *p = &paths[0];
  memset(p, 0, sizeof(*p));
  p->spigot_id = spigot_id;
  p->timeout = 0;
  if (ia->caps.path_format == RNICPI_PATH_GID) {
    it_ib_net_endpoint_t *ib = &p->remote.ib;
    ib->partition_key = 0xffff;
    ib->path_mtu = 5; /* IBTA MTU code for 4096 bytes */
    ual_ia_local_gid(ia, &ib->local_port_gid);
    if (net_addr->addr_type == IT_IPV4)
      v4_to_gid(net_addr->addr.ipv4, &ib->remote_port_gid);
    else if (net_addr->addr_type == IT_IPV6)
      ib->remote_port_gid = net_addr->addr.ipv6;
    else
      ib->remote_port_gid = net_addr->addr.gid;
    ib->subnet_local = 1;
    ib->hop_limit = 64;
  } else {
    it_iwarp_net_endpoint_t *iw = &p->remote.iwarp;
    /* The local end is the IA's own first address of the destination's
     * family (an RNIC sends only from its port's addresses). */
    const struct sockaddr_storage *local;
    if (net_addr->addr_type == IT_IPV4) {
      iw->ip_vers = IT_IP_VERS_IPV4;
      iw->laddr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
      if ((local = ia_first_addr(ia, AF_INET)) != NULL)
        iw->laddr.ipv4 = ((const struct sockaddr_in *) local)->sin_addr;
      iw->raddr.ipv4 = net_addr->addr.ipv4;
    } else {
      iw->ip_vers = IT_IP_VERS_IPV6;
      iw->laddr.ipv6 = in6addr_loopback;
      if ((local = ia_first_addr(ia, AF_INET6)) != NULL)
        iw->laddr.ipv6 = ((const struct sockaddr_in6 *) local)->sin6_addr;
      iw->raddr.ipv6 = net_addr->addr_type == IT_IPV6 ? net_addr->addr.ipv6 : net_addr->addr.gid;
    }
  }
  *num_paths = 1;
  return IT_SUCCESS;
}

it_status_t
it_convert_net_addr(const it_net_addr_t *source_addr, it_net_addr_type_t addr_type,
                    it_net_addr_t *destination_addr)
{
  if (source_addr == NULL || destination_addr == NULL)
    return ual_fail(IT_ERR_INVALID_NETADDR, "it_convert_net_addr: NULL address");
  it_net_addr_t out = { .addr_type = addr_type };
  struct in6_addr v6;
  switch (source_addr->addr_type) {
  case IT_IPV4: v4_to_gid(source_addr->addr.ipv4, &v6); break;
  case IT_IPV6: v6 = source_addr->addr.ipv6; break;
  case IT_IB_GID: v6 = source_addr->addr.gid; break;
  default:
    return ual_fail(IT_ERR_INVALID_NETADDR, "it_convert_net_addr: source type %d cannot be converted",
                    (int) source_addr->addr_type);
  }
  switch (addr_type) {
  case IT_IPV4:
    if (!IN6_IS_ADDR_V4MAPPED(&v6))
      return ual_fail(IT_ERR_INVALID_CONVERSION, "address has no IPv4 form (not IPv4-mapped)");
    memcpy(&out.addr.ipv4, &v6.s6_addr[12], 4);
    break;
  case IT_IPV6: out.addr.ipv6 = v6; break;
  case IT_IB_GID: out.addr.gid = v6; break;
  default:
    return ual_fail(IT_ERR_INVALID_CONVERSION, "it_convert_net_addr: target type %d is not IPv4, IPv6 or GID",
                    (int) addr_type);
  }
  *destination_addr = out;
  return IT_SUCCESS;
}
