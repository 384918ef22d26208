/*
 * dat/: interface adapters, protection zones, consumer contexts and handle
 * types.  An IA is an IT-API adapter; its attributes come from
 * it_ia_query() (spigot 0's address and sizes, the private-data limits).
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* What the IT-API capability record does not say: generous counts, as a
 * software provider has no table of its own to run out of. */
#define DATX_MAX_OBJECTS 65536
#define DATX_MAX_QLEN 65536
/* Where the device's limits cannot be read (ia_describe_caps()). */
#define DATX_MAX_IOV 32
#define DATX_MAX_RD 16

/* The MTU of the network interface that holds @p addr, or 0. */
static unsigned
link_mtu_of(struct in_addr addr)
{
  struct ifaddrs *ifs;
  if (getifaddrs(&ifs) != 0)
    return 0;
  unsigned mtu = 0;
  for (struct ifaddrs *i = ifs; i != NULL && mtu == 0; i = i->ifa_next) {
    if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
        ((struct sockaddr_in *) (void *) i->ifa_addr)->sin_addr.s_addr != addr.s_addr)
      continue;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      break;
    struct ifreq req;
    memset(&req, 0, sizeof(req));
    g_strlcpy(req.ifr_name, i->ifa_name, sizeof(req.ifr_name));
    if (ioctl(fd, SIOCGIFMTU, &req) == 0 && req.ifr_mtu > 0)
      mtu = (unsigned) req.ifr_mtu;
    close(fd);
  }
  freeifaddrs(ifs);
  return mtu;
}

/* DAT_IB_TRANSPORT_MTU, as DAPL's providers give it: an InfiniBand MTU
 * (256 to 4096) in decimal.  Over InfiniBand it is the spigot's datagram
 * size, its path MTU; over iWARP and other transports without datagrams,
 * the MTU of the link that holds the spigot's address rounded down to the
 * InfiniBand scale, as iWARP verbs devices report theirs (siw). */
static void
ia_describe_mtu(datx_ia_t *ia, size_t ud_mtu)
{
  size_t mtu = ud_mtu > 0 ? ud_mtu : link_mtu_of(ia->addr.sin_addr);
  ia->mtu[0] = '\0';
  if (mtu < 256) {
    g_debug("DAT IA %s: no MTU found for %s (no datagrams, no link holds its address): "
            "DAT_IB_TRANSPORT_MTU left out", ia->provider->info.ia_name, ia->provider->it_name);
    return;
  }
  size_t ib = 256;
  while (ib < 4096 && ib * 2 <= mtu)
    ib *= 2;
  g_snprintf(ia->mtu, sizeof(ia->mtu), "%zu", ib);
}

/* A device limit for a DAT count: the cap, or @p fallback when the
 * device was not read or says 0. */
static DAT_COUNT
cap_count(gboolean have, uint32_t cap, DAT_COUNT fallback)
{
  return have && cap > 0 ? (DAT_COUNT) MIN(cap, (uint32_t) G_MAXINT32) : fallback;
}

/* The device's features and limits, which it_ia_info_t does not give:
 * itx_interface_caps() opens the device again (0.2 ms for iwarp0), so it
 * is read once per provider, not at each dat_ia_open. */
static void
ia_describe_caps(datx_ia_t *ia)
{
  datx_provider_t *p = ia->provider;
  if (g_once_init_enter(&p->caps_read)) {
    it_status_t st = itx_interface_caps(p->it_name, &p->caps);
    p->have_caps = st == IT_SUCCESS;
    if (!p->have_caps)
      g_message("DAT IA %s: reading the device limits of %s failed (%s): dat_ia_query reports "
                "0 for the SRQ limits and this provider's defaults for the others, and IT-API "
                "alone checks the sizes asked for", p->info.ia_name, p->it_name, itx_status_name(st));
    g_once_init_leave(&p->caps_read, 1);
  }
  const itx_caps_t *c = &p->caps;
  gboolean have = p->have_caps;
  ia->immediate = have && (c->features & ITX_FEATURE_IMMEDIATE) != 0;
  if (ia->srq_support) {
    ia->max_srqs = cap_count(have, c->max_srq, 0);
    ia->max_recv_per_srq = cap_count(have, c->max_qp_wr, 0);
    ia->max_ep_per_srq = cap_count(have, c->max_qp, 0);
  }
  ia->max_rd_in = cap_count(have, c->max_ird, DATX_MAX_RD);
  ia->max_rd_out = cap_count(have, c->max_ord, DATX_MAX_RD);
  /* A post takes at most DATX_MAX_SEGS segments (datx_segments_of()). */
  ia->max_iov = MIN(cap_count(have, MIN(c->max_send_sge, c->max_recv_sge), DATX_MAX_IOV), DATX_MAX_SEGS);
  ia->max_read_iov = MIN(cap_count(have, c->max_rdma_read_sge, DATX_MAX_IOV), DATX_MAX_SEGS);
  ia->max_write_iov = MIN(cap_count(have, c->max_rdma_write_sge, DATX_MAX_IOV), DATX_MAX_SEGS);
}

static void
ia_describe(datx_ia_t *ia)
{
  ia->addr.sin_family = AF_INET;
  ia->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ia->max_rc_send_len = 1u << 30;
  ia->max_rc_rdma_len = 1u << 30;
  it_ia_info_t *info = NULL;
  if (it_ia_query(ia->it, &info) != IT_SUCCESS) {
    ia_describe_caps(ia);
    return;
  }
  ia->connect_pdata_len = MIN(info->connect_private_data_len, (size_t) IT_MAX_PRIV_DATA);
  ia->accept_pdata_len = MIN(info->accept_private_data_len, (size_t) IT_MAX_PRIV_DATA);
  ia->reject_pdata_len = MIN(info->reject_private_data_len, (size_t) IT_MAX_PRIV_DATA);
  ia->transport = info->transport_type;
  ia->srq_support = info->srq_support;
  ia->atomics = info->atomic_support;
  ia->srq_resizable = info->srq_resizable;
  ia->ud = (info->supported_service_types & IT_UD_SERVICE) != 0 &&
           info->ud_req_private_data_len >= DATX_UD_HDR_LEN &&
           info->ud_rep_private_data_len >= DATX_UD_HDR_LEN;
  ia->ud_req_pdata_len = info->ud_req_private_data_len;
  ia->ud_rep_pdata_len = info->ud_rep_private_data_len;
  size_t ud_mtu = 0;
  if (info->num_spigots > 0) {
    const it_spigot_info_t *sp = &info->spigot_info[0];
    ia->max_rc_send_len = sp->max_rc_send_len;
    ia->max_rc_rdma_len = sp->max_rc_rdma_len;
    ud_mtu = sp->max_ud_send_len;
    ia->max_ud_send_len = sp->max_ud_send_len;
    /* DAT consumers (dtest) print and pass on an AF_INET address. */
    for (size_t i = 0; i < sp->num_net_addr; i++)
      if (sp->net_addr[i].addr_type == IT_IPV4) {
        ia->addr.sin_addr = sp->net_addr[i].addr.ipv4;
        break;
      }
  }
  it_ia_info_free(info);
  ia_describe_mtu(ia, ud_mtu);
  ia_describe_caps(ia);
}

DAT_RETURN
datx_ia_open(const DAT_NAME_PTR name, DAT_COUNT async_qlen, DAT_EVD_HANDLE *async_evd,
             DAT_IA_HANDLE *ia_handle)
{
  if (name == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
  if (ia_handle == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  if (async_evd == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  datx_provider_t *prov = datx_provider_find(name);
  if (prov == NULL)
    return DATX_ERR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
  datx_ia_t *ia = g_new0(datx_ia_t, 1);
  g_mutex_init(&ia->lock);
  ia->provider = prov;
  it_status_t st = it_ia_create(prov->it_name, 2, 1, &ia->it);
  if (st != IT_SUCCESS) {
    g_message("DAT IA %s: opening IT-API interface %s failed: %s", name, prov->it_name,
              itx_error_detail() != NULL ? itx_error_detail() : "");
    DAT_RETURN ret = datx_status(st, DAT_INVALID_HANDLE_IA);
    g_free(ia);
    return ret;
  }
  ia_describe(ia);
  ia->pattrs[ia->npattrs].name = "DAT_IB_RDMA_READ";
  ia->pattrs[ia->npattrs++].value = "TRUE";
  ia->pattrs[ia->npattrs].name = "DAT_ITAPI_INTERFACE";
  ia->pattrs[ia->npattrs++].value = prov->it_name;
  /* DAT's IB extension (dat_ib_extensions.h): dtestx reads these. */
  ia->pattrs[ia->npattrs].name = "DAT_EXTENSION_INTERFACE";
  ia->pattrs[ia->npattrs++].value = "TRUE";
  ia->pattrs[ia->npattrs].name = DAT_IB_ATTR_FETCH_AND_ADD;
  ia->pattrs[ia->npattrs++].value = ia->atomics ? "TRUE" : "FALSE";
  ia->pattrs[ia->npattrs].name = DAT_IB_ATTR_CMP_AND_SWAP;
  ia->pattrs[ia->npattrs++].value = ia->atomics ? "TRUE" : "FALSE";
  ia->pattrs[ia->npattrs].name = DAT_IB_ATTR_IMMED_DATA;
  ia->pattrs[ia->npattrs++].value = ia->immediate ? "TRUE" : "FALSE";
  ia->pattrs[ia->npattrs].name = DAT_IB_ATTR_UD;
  ia->pattrs[ia->npattrs++].value = ia->ud ? "TRUE" : "FALSE";
  /* dtestsrq sizes its messages by it when not told (-b). */
  if (ia->mtu[0] != '\0') {
    ia->pattrs[ia->npattrs].name = "DAT_IB_TRANSPORT_MTU";
    ia->pattrs[ia->npattrs++].value = ia->mtu;
  }
  ia->cell = datx_cell_new(&prov->dat, DATX_IA, ia, NULL);
  if (ia->cell == NULL) {
    it_ia_free(ia->it);
    g_free(ia);
    return DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
  }
  if (*async_evd == DAT_HANDLE_NULL) {
    DAT_EVD_HANDLE evd;
    DAT_RETURN ret = datx_evd_create(ia->cell, async_qlen > 0 ? async_qlen : 8, DAT_HANDLE_NULL,
                                     DAT_EVD_ASYNC_FLAG, &evd);
    if (ret != DAT_SUCCESS) {
      datx_ia_close(ia->cell, DAT_CLOSE_ABRUPT_FLAG);
      return ret;
    }
    ia->async_evd = evd;
    *async_evd = evd;
  } else {
    /* A consumer's EVD of another IA cannot serve this one.  Held while
     * its flags are read: the IA keeps its handle, which is held again
     * for each event (a freed one is found dead). */
    datx_cell_t *held = datx_cell_hold(*async_evd, DATX_EVD);
    gboolean async = held != NULL && (((datx_evd_t *) held->object)->flags & DAT_EVD_ASYNC_FLAG);
    if (held != NULL)
      datx_cell_put(held);
    if (!async) {
      datx_ia_close(ia->cell, DAT_CLOSE_ABRUPT_FLAG);
      return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_ASYNC);
    }
    ia->async_evd = *async_evd;
  }
  *ia_handle = ia->cell;
  return DAT_SUCCESS;
}

static DAT_RETURN
ia_query_on_held(DAT_IA_HANDLE ia_handle, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK ia_mask,
                 DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK pr_mask, DAT_PROVIDER_ATTR *pr_attr)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  if (ia_mask != 0 && ia_attr == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  if (pr_mask != 0 && pr_attr == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
  if (async_evd != NULL)
    *async_evd = ia->async_evd;
  if (ia_mask != 0) {
    memset(ia_attr, 0, sizeof(*ia_attr));
    g_strlcpy(ia_attr->adapter_name, ia->provider->it_name, sizeof(ia_attr->adapter_name));
    g_strlcpy(ia_attr->vendor_name, "itapi", sizeof(ia_attr->vendor_name));
    ia_attr->hardware_version_major = 0;
    ia_attr->firmware_version_major = 0;
    ia_attr->firmware_version_minor = 1;
    ia_attr->ia_address_ptr = (DAT_IA_ADDRESS_PTR) &ia->addr;
    ia_attr->max_eps = DATX_MAX_OBJECTS;
    ia_attr->max_dto_per_ep = 16384;
    ia_attr->max_rdma_read_per_ep_in = ia->max_rd_in;
    ia_attr->max_rdma_read_per_ep_out = ia->max_rd_out;
    ia_attr->max_evds = DATX_MAX_OBJECTS;
    ia_attr->max_evd_qlen = DATX_MAX_QLEN;
    ia_attr->max_iov_segments_per_dto = ia->max_iov;
    ia_attr->max_lmrs = DATX_MAX_OBJECTS;
    ia_attr->max_lmr_block_size = (DAT_SEG_LENGTH) MIN(ia->max_rc_rdma_len, (size_t) UINT32_MAX);
    ia_attr->max_lmr_virtual_address = UINT64_MAX;
    ia_attr->max_pzs = DATX_MAX_OBJECTS;
    ia_attr->max_message_size = (DAT_SEG_LENGTH) MIN(ia->max_rc_send_len, (size_t) UINT32_MAX);
    ia_attr->max_rdma_size = (DAT_SEG_LENGTH) MIN(ia->max_rc_rdma_len, (size_t) UINT32_MAX);
    ia_attr->max_rmrs = 0;
    ia_attr->max_rmr_target_address = UINT64_MAX;
    ia_attr->max_iov_segments_per_rdma_read = ia->max_read_iov;
    ia_attr->max_iov_segments_per_rdma_write = ia->max_write_iov;
    /* Per IA: as many as its EPs may have, counted per EP. */
    ia_attr->max_rdma_read_in = ia->max_rd_in;
    ia_attr->max_rdma_read_out = ia->max_rd_out;
    ia_attr->max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
    ia_attr->max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
    ia_attr->max_srqs = ia->max_srqs;
    ia_attr->max_ep_per_srq = ia->max_ep_per_srq;
    ia_attr->max_recv_per_srq = ia->max_recv_per_srq;
    ia_attr->zb_supported = DAT_FALSE;
    ia_attr->extension_supported = DAT_EXTENSION_IB;
    ia_attr->extension_version = DAT_IB_EXTENSION_VERSION;
  }
  if (pr_mask != 0) {
    memset(pr_attr, 0, sizeof(*pr_attr));
    g_strlcpy(pr_attr->provider_name, ia->provider->info.ia_name, sizeof(pr_attr->provider_name));
    pr_attr->provider_version_major = 0;
    pr_attr->provider_version_minor = 1;
    /* libdat2's dat_ia_close finds the registry entry by these three. */
    pr_attr->dapl_version_major = ia->provider->info.dapl_version_major;
    pr_attr->dapl_version_minor = ia->provider->info.dapl_version_minor;
    pr_attr->lmr_mem_types_supported =
        DAT_MEM_TYPE_VIRTUAL | DAT_MEM_TYPE_SHARED_VIRTUAL | DAT_MEM_TYPE_LMR;
    pr_attr->iov_ownership_on_return = DAT_IOV_CONSUMER;
    pr_attr->dat_qos_supported = DAT_QOS_BEST_EFFORT;
    pr_attr->completion_flags_supported = DAT_COMPLETION_DEFAULT_FLAG;
    pr_attr->is_thread_safe = ia->provider->info.is_thread_safe;
    pr_attr->max_private_data_size = (DAT_COUNT) ia->connect_pdata_len;
    pr_attr->supports_multipath = DAT_FALSE;
    pr_attr->ep_creator = DAT_PSP_CREATES_EP_IFASKED;
    pr_attr->pz_support = DAT_PZ_UNIQUE;
    pr_attr->optimal_buffer_alignment = 64;
    pr_attr->srq_supported = ia->srq_support ? DAT_TRUE : DAT_FALSE;
    /* IT-API arms a low watermark on an SRQ (1), no high watermark on an EP. */
    pr_attr->srq_watermarks_supported = ia->srq_support ? 1 : 0;
    pr_attr->srq_ep_pz_difference_supported = DAT_FALSE;
    pr_attr->srq_info_supported = 0;
    /* dat_ep_recv_query: nbufs_allocated (0x01) and bufs_alloc_span
     * (0x10), for EPs without an SRQ. */
    pr_attr->ep_recv_info_supported = 0x11;
    pr_attr->lmr_sync_req = DAT_FALSE;
    pr_attr->dto_async_return_guaranteed = DAT_FALSE;
    pr_attr->rdma_write_for_rdma_read_req = DAT_FALSE;
    pr_attr->rdma_read_lmr_rmr_context_exposure = DAT_FALSE;
    pr_attr->rmr_scope_supported = DAT_RMR_SCOPE_PZ;
    pr_attr->is_signal_safe = DAT_FALSE;
    pr_attr->ha_supported = DAT_FALSE;
    pr_attr->num_provider_specific_attr = (DAT_COUNT) ia->npattrs;
    pr_attr->provider_specific_attr = ia->pattrs;
  }
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ia_query(DAT_IA_HANDLE ia_handle, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK ia_mask,
              DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK pr_mask, DAT_PROVIDER_ATTR *pr_attr)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA,
                   ia_query_on_held(ia_handle, async_evd, ia_mask, ia_attr, pr_mask, pr_attr));
}

static DAT_RETURN
ia_ha_related_on_held(DAT_IA_HANDLE ia_handle, const DAT_NAME_PTR name, DAT_BOOLEAN *answer)
{
  if (datx_cell_get(ia_handle, DATX_IA) == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  if (name == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (answer == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  /* DAT 2.0 (dat_ia_ha_related): two IAs are HA-related when the
   * provider can move a connection from one to the other.  IT-API has no
   * failover between interfaces (ha_supported is false): no IA is related
   * to another, and an IA to itself has nowhere to fail over to. */
  *answer = DAT_FALSE;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ia_ha_related(DAT_IA_HANDLE ia_handle, const DAT_NAME_PTR name, DAT_BOOLEAN *answer)
{
  DATX_RETURN_HELD(ia_handle, DATX_IA, ia_ha_related_on_held(ia_handle, name, answer));
}

/* Before it_ia_free, on an abrupt close: wakes a child's waiters that
 * it_ia_free does not (a CNO's), and frees the consumer's event copies
 * still queued on an EVD's software stream, which it_ia_free would drop
 * with the SEVD. */
static void
child_wake(gpointer data, gpointer user)
{
  datx_cell_t *cell = data;
  (void) user;
  if (cell->type == DATX_CNO) {
    datx_cno_wake_dead(cell->object);
  } else if (cell->type == DATX_EVD) {
    datx_evd_t *evd = cell->object;
    it_event_t ev;
    if (evd->sevd[DATX_S_SW] != IT_NULL_HANDLE)
      while (it_evd_dequeue(evd->sevd[DATX_S_SW], &ev) == IT_SUCCESS)
        g_free(ev.sw.data);
  }
}

/* Frees what a child cell holds, on an abrupt close, once the calls inside
 * it have left: it_ia_free() has freed the IT-API objects and woken the
 * threads waiting on its EVDs, child_wake() those on CNOs. */
static void
child_forget(gpointer data, gpointer user)
{
  datx_cell_t *cell = data;
  (void) user;
  void *obj = cell->object;
  datx_type_t type = (datx_type_t) cell->type;
  /* GONE: a free running in another thread owns the object.  The objects
   * that use it are forgotten with it. */
  if (datx_cell_retire_close(cell) != DATX_RETIRED)
    return;
  datx_cell_kill(cell, NULL);
  if (type == DATX_EVD) {
    datx_evd_t *evd = obj;
    /* A dequeue reads its EVD without a hold (datx_evd_dequeue). */
    rsec_sync();
    g_queue_clear_full(&evd->held, g_free);
    g_mutex_clear(&evd->held_lock);
  } else if (type == DATX_CNO) {
    datx_cno_destroy(obj);
    return;
  } else if (type == DATX_RMR) {
    g_mutex_clear(&((datx_rmr_t *) obj)->lock);
  } else if (type == DATX_EP) {
    datx_ep_imm_clear(obj);
  }
  g_free(obj);
}

/* The order an abrupt close forgets an IA's children in: a call inside
 * one object may read those it names without holding them (a CNO's wait
 * reads its EVDs, an EP's its SRQ), so each goes only once the calls
 * inside the objects that name it have left.  CNOs first, then EPs and
 * the rest, then SRQs and EVDs, PZs last. */
static gint
forget_rank(gconstpointer a)
{
  switch (((const datx_cell_t *) a)->type) {
  case DATX_CNO: return 0;
  case DATX_SRQ:
  case DATX_EVD: return 2;
  case DATX_PZ: return 3;
  default: return 1;
  }
}

static gint
forget_order(gconstpointer a, gconstpointer b)
{
  return forget_rank(a) - forget_rank(b);
}

DAT_RETURN
datx_ia_close(DAT_IA_HANDLE ia_handle, DAT_CLOSE_FLAGS flags)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  /* The IA's handle dies first, once the creates and queries inside it
   * have left: no child can be added to it from here. */
  if (datx_cell_retire_wait(ia->cell) != DATX_RETIRED)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  g_mutex_lock(&ia->lock);
  /* A graceful close leaves the consumer's objects to the consumer; the
   * async EVD made at open goes with the IA. */
  guint others = g_list_length(ia->children) - (g_list_find(ia->children, ia->async_evd) ? 1 : 0);
  GList *children = ia->children;
  if (flags == DAT_CLOSE_GRACEFUL_FLAG && others > 0) {
    datx_cell_revive(ia->cell);
    g_mutex_unlock(&ia->lock);
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_IA_IN_USE);
  }
  ia->children = NULL;
  children = g_list_sort(children, forget_order);
  g_list_free(ia->psps);
  ia->psps = NULL;
  g_mutex_unlock(&ia->lock);
  g_list_foreach(children, child_wake, NULL);
  datx_ud_ia_close(ia);
  it_status_t st = it_ia_free(ia->it);
  if (st != IT_SUCCESS)
    g_warning("DAT IA %s: it_ia_free failed: %s", ia->provider->info.ia_name, itx_status_name(st));
  g_list_foreach(children, child_forget, NULL);
  g_list_free(children);
  /* A CR made by an event being translated while the EVD was forgotten
   * joined the list after it was taken (datx_cr_arrive): forget it too. */
  for (;;) {
    g_mutex_lock(&ia->lock);
    GList *late = ia->children;
    ia->children = NULL;
    g_mutex_unlock(&ia->lock);
    if (late == NULL)
      break;
    g_list_foreach(late, child_forget, NULL);
    g_list_free(late);
  }
  /* Every EVD's cell is dead now, those a free in another thread retired
   * too; a dequeue that found one live before reads the IA through it
   * (datx_evd_dequeue). */
  rsec_sync();
  datx_cell_kill(ia->cell, NULL);
  g_mutex_clear(&ia->lock);
  g_free(ia);
  return DAT_SUCCESS;
}

static DAT_RETURN
pz_create_on_held(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE *pz_handle)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  if (pz_handle == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  datx_pz_t *pz = g_new0(datx_pz_t, 1);
  pz->ia = ia;
  it_status_t st = it_pz_create(ia->it, &pz->it);
  if (st != IT_SUCCESS) {
    g_free(pz);
    return datx_status(st, DAT_INVALID_HANDLE_IA);
  }
  pz->cell = datx_cell_new(&ia->provider->dat, DATX_PZ, pz, ia);
  if (pz->cell == NULL) {
    it_pz_free(pz->it);
    g_free(pz);
    return DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
  }
  *pz_handle = pz->cell;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_pz_create(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE *pz_handle)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA, pz_create_on_held(ia_handle, pz_handle));
}

static DAT_RETURN
pz_query_on_held(DAT_PZ_HANDLE pz_handle, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param)
{
  datx_pz_t *pz = datx_cell_get(pz_handle, DATX_PZ);
  if (pz == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (mask & DAT_PZ_FIELD_IA_HANDLE)
    param->ia_handle = pz->ia->cell;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_pz_query(DAT_PZ_HANDLE pz_handle, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param)
{
  DATX_RETURN_HELD(pz_handle, DATX_PZ, pz_query_on_held(pz_handle, mask, param));
}

DAT_RETURN
datx_pz_free(DAT_PZ_HANDLE pz_handle)
{
  datx_cell_t *cell = datx_cell_hold(pz_handle, DATX_PZ);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  datx_pz_t *pz = cell->object;
  datx_cell_put(cell);
  /* The LMRs, RMRs, SRQs and EPs made on it use it (datx_cell_use()): a
   * zone with users stays, and a create that comes after is refused. */
  switch (datx_cell_retire_wait(cell)) {
  case DATX_BUSY:
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);
  case DATX_GONE:
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
  case DATX_RETIRED:
    break;
  }
  it_status_t st = it_pz_free(pz->it);
  if (st != IT_SUCCESS) {
    datx_cell_revive(cell);
    return st == IT_ERR_PZ_BUSY ? DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE)
                                : datx_status(st, DAT_INVALID_HANDLE_PZ);
  }
  datx_cell_kill(pz->cell, pz->ia);
  g_free(pz);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_set_consumer_context(DAT_HANDLE handle, DAT_CONTEXT context)
{
  if (datx_cell_type(handle) == 0)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  datx_cell_t *cell = handle;
  cell->context = context;
  cell->has_context = DAT_TRUE;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_get_consumer_context(DAT_HANDLE handle, DAT_CONTEXT *context)
{
  if (datx_cell_type(handle) == 0)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  if (context == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  datx_cell_t *cell = handle;
  if (cell->has_context)
    *context = cell->context;
  else
    memset(context, 0, sizeof(*context));
  return DAT_SUCCESS;
}

DAT_RETURN
datx_get_handle_type(DAT_HANDLE handle, DAT_HANDLE_TYPE *type)
{
  static const DAT_HANDLE_TYPE types[DATX_TYPE_COUNT] = {
    [DATX_IA] = DAT_HANDLE_TYPE_IA,   [DATX_PZ] = DAT_HANDLE_TYPE_PZ,
    [DATX_EVD] = DAT_HANDLE_TYPE_EVD, [DATX_EP] = DAT_HANDLE_TYPE_EP,
    [DATX_LMR] = DAT_HANDLE_TYPE_LMR, [DATX_PSP] = DAT_HANDLE_TYPE_PSP,
    [DATX_CR] = DAT_HANDLE_TYPE_CR,   [DATX_CNO] = DAT_HANDLE_TYPE_CNO,
    [DATX_RSP] = DAT_HANDLE_TYPE_RSP, [DATX_SRQ] = DAT_HANDLE_TYPE_SRQ,
    [DATX_RMR] = DAT_HANDLE_TYPE_RMR, [DATX_CSP] = DAT_HANDLE_TYPE_CSP,
    [DATX_AH] = (DAT_HANDLE_TYPE) DAT_IB_HANDLE_TYPE_EXT,
  };
  datx_type_t t = datx_cell_type(handle);
  if (t == 0)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  if (type == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  *type = types[t];
  return DAT_SUCCESS;
}
