/*
 * Connection management over the provider's CM verbs: listeners (with the
 * kAL's host-wide qualifier space), connect, accept, reject, disconnect,
 * and the translation of provider CM upcalls into IT-API CM events.
 *
 * Connection qualifiers: IT_IANA_PORT (network byte order), IT_IANA_LR_PORT
 * (listener uses .local, connector .remote) and IT_IB_SERVICEID (an
 * IP-based service ID 0x0000000001060000 + port, or a plain value up to
 * 65535) all name a 16-bit port of the device.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnicpi_util.h"
#include "ual.h"

static GHashTable *cn_table; /* it_cn_est_identifier_t -> ual_cn_t* (ual_lock) */
static uint64_t cn_next;

static ual_cn_t *
cn_new(ual_ia_t *ia, ual_cn_kind_t kind, uint64_t prov_id)
{
  if (cn_table == NULL) {
    cn_table = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
    cn_next = ((uint64_t) g_random_int() << 32) | 1;
  }
  ual_cn_t *c = g_new0(ual_cn_t, 1);
  c->id = cn_next++;
  c->kind = kind;
  c->prov_id = prov_id;
  c->ia = ia;
  g_hash_table_insert(cn_table, &c->id, c);
  return c;
}

static ual_cn_t *
cn_find(it_cn_est_identifier_t id)
{
  return cn_table != NULL ? g_hash_table_lookup(cn_table, &id) : NULL;
}

static void
cn_drop(ual_cn_t *c)
{
  g_hash_table_remove(cn_table, &c->id);
}

void
ual_cn_drop_ia(ual_ia_t *ia)
{
  if (cn_table == NULL)
    return;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, cn_table);
  while (g_hash_table_iter_next(&it, &k, &v))
    if (((ual_cn_t *) v)->ia == ia)
      g_hash_table_iter_remove(&it);
}

it_status_t
ual_qual_to_port(const it_conn_qual_t *q, gboolean passive, uint32_t *port)
{
  if (q == NULL)
    return ual_fail(IT_ERR_INVALID_CONN_QUAL, "connection qualifier is NULL");
  switch (q->type) {
  case IT_IANA_PORT:
    *port = ntohs(q->conn_qual.port);
    break;
  case IT_IANA_LR_PORT:
    *port = ntohs(passive ? q->conn_qual.lr_port.local : q->conn_qual.lr_port.remote);
    break;
  case IT_IB_SERVICEID: {
    uint64_t sid = it_ntoh64(q->conn_qual.serviceid);
    if ((sid >> 16) == 0x106)
      *port = (uint32_t) (sid & 0xffff);
    else if (sid <= 0xffff)
      *port = (uint32_t) sid;
    else
      return ual_fail(IT_ERR_INVALID_CONN_QUAL, "service ID 0x%016" G_GINT64_MODIFIER "x is neither "
                      "IP-based (0x106xxxx) nor at most 65535", sid);
    break;
  }
  default:
    return ual_fail(IT_ERR_INVALID_CONN_QUAL, "connection qualifier type %d is not IANA port, "
                    "local/remote port or IB service ID", (int) q->type);
  }
  return IT_SUCCESS;
}

static void
port_to_qual(uint32_t port, it_conn_qual_t *q)
{
  switch (q->type) {
  case IT_IANA_LR_PORT:
    q->conn_qual.lr_port.local = htons((uint16_t) port);
    break;
  case IT_IB_SERVICEID:
    q->conn_qual.serviceid = it_hton64(UINT64_C(0x1060000) | port);
    break;
  default:
    q->type = IT_IANA_PORT;
    q->conn_qual.port = htons((uint16_t) port);
    break;
  }
}

/* Listeners. */

it_status_t
it_listen_create(it_ia_handle_t ia_handle, size_t spigot_id, it_evd_handle_t connect_evd,
                 it_listen_flags_t flags, it_conn_qual_t *conn_qual, it_listen_handle_t *listen_handle)
{
  it_status_t st = IT_SUCCESS;
  uint32_t port = 0;
  if (listen_handle == NULL)
    return ual_fail(IT_ERR_FAULT, "it_listen_create: listen_handle is NULL");
  ual_lock_take();
  ual_ia_t *ia = ual_ia_get(ia_handle);
  if (ia == NULL) {
    st = ual_fail(IT_ERR_INVALID_IA, "it_listen_create: %p is not a live IA handle", (void *) ia_handle);
    goto unlock;
  }
  if (!(ia->caps.features & RNICPI_CAP_CM_VERBS)) {
    st = ual_fail(IT_ERR_OP_NOT_SUPPORTED, "IA '%s' has no connection-management verbs, so it cannot "
                  "listen%s", ia->iface->name, ia->host_cm ? "; accept TCP connections yourself and hand "
                  "them over with it_socket_convert (its connects go through the host stack)" : "");
    goto unlock;
  }
  if (spigot_id >= MAX(ia->caps.num_ports, 1u)) {
    st = ual_fail(IT_ERR_INVALID_SPIGOT, "spigot %zu does not exist; IA '%s' has %u",
                  spigot_id, ia->iface->name, ia->caps.num_ports);
    goto unlock;
  }
  ual_evd_t *evd = ual_evd_get(connect_evd);
  if (evd == NULL || evd->obj.ia != ia || evd->stream != IT_CM_REQ_EVENT_STREAM) {
    st = ual_fail(IT_ERR_INVALID_CONN_EVD, "listener EVD %p is not a live CM_REQ-stream EVD of this IA",
                  (void *) connect_evd);
    goto unlock;
  }
  if ((flags & ~(IT_LISTEN_CONN_QUAL_INPUT | IT_LISTEN_SUPPRESS_IRD_ORD)) != 0 ||
      (flags & IT_LISTEN_SUPPRESS_IRD_ORD)) {
    st = ual_fail(IT_ERR_INVALID_FLAGS, "listen flags 0x%x: unknown bits, or IRD/ORD suppression, "
                  "which IA '%s' does not offer", (unsigned) flags, ia->iface->name);
    goto unlock;
  }
  if (conn_qual == NULL) {
    st = ual_fail(IT_ERR_INVALID_CONN_QUAL, "it_listen_create: conn_qual is NULL");
    goto unlock;
  }
  if (flags & IT_LISTEN_CONN_QUAL_INPUT) {
    if ((st = ual_qual_to_port(conn_qual, TRUE, &port)) != IT_SUCCESS)
      goto unlock;
    if (port == 0) {
      st = ual_fail(IT_ERR_INVALID_CONN_QUAL, "port 0 given with IT_LISTEN_CONN_QUAL_INPUT; "
                    "leave the flag out to have one chosen");
      goto unlock;
    }
  }
  /* A port free in the kAL's space may still be held by the host's own
   * stack (an iWARP provider listens on a real TCP port, which a client
   * socket or TIME_WAIT may hold): a chosen port that the provider finds
   * taken is given back and another one tried. */
  gboolean chosen = !(flags & IT_LISTEN_CONN_QUAL_INPUT);
  ual_listen_t *l = NULL;
  for (int attempt = 0; ; attempt++) {
    kal_port_t *res = NULL;
    uint32_t want = chosen ? 0 : port;
    g_autofree char *why = NULL;
    rnicpi_status_t rs = kal_port_reserve(ia->prov->name, &want, &res, &why);
    if (rs != RNICPI_OK) {
      st = ual_fail(rs == RNICPI_EEXIST ? IT_ERR_CONN_QUAL_BUSY :
                    rs == RNICPI_EACCES ? IT_ERR_INVALID_CONN_QUAL : IT_ERR_RESOURCES,
                    "IA '%s' cannot listen: %s", ia->iface->name, why);
      goto unlock;
    }
    port = want;
    l = g_new0(ual_listen_t, 1);
    l->evd = evd;
    l->res = res;
    l->spigot = spigot_id;
    if ((st = ual_handle_new(&l->obj, IT_HANDLE_TYPE_LISTEN, ia)) != IT_SUCCESS) {
      kal_port_release(res);
      g_free(l);
      l = NULL;
      goto unlock;
    }
    rs = ia->prov->cm->listen(ia->dev, port, l->obj.handle, &l->lst);
    if (rs == RNICPI_OK)
      break;
    ual_handle_release(&l->obj);
    kal_port_release(res);
    g_free(l);
    l = NULL;
    if (rs == RNICPI_EACCES) {
      /* The kAL let the port through and the host did not: a rule the
       * kAL does not know (a security module's), or a capability lost
       * between the two checks.  RNICPI_EACCES of listen is the host's
       * refusal of the port (rnicpi.h), never a key or an access right. */
      st = ual_fail(IT_ERR_INVALID_CONN_QUAL, "provider '%s' cannot listen on port %u: the host refused "
                    "it the port (below net.ipv4.ip_unprivileged_port_start, %u here, a port needs "
                    "CAP_NET_BIND_SERVICE in the user namespace that owns the network namespace; a "
                    "security module may refuse others); use another port, or grant the capability",
                    ia->prov->name, port, rnicpi_unprivileged_port_start());
      goto unlock;
    }
    if (!(chosen && rs == RNICPI_EEXIST && attempt < 64)) {
      st = ual_fail(rs == RNICPI_EEXIST ? IT_ERR_CONN_QUAL_BUSY : ual_map_status(rs),
                    "provider '%s' cannot listen on port %u: %s", ia->prov->name, port,
                    rnicpi_status_message(rs));
      goto unlock;
    }
  }
  if (!(flags & IT_LISTEN_CONN_QUAL_INPUT))
    port_to_qual(port, conn_qual);
  l->qual = *conn_qual;
  evd->nbound++;
  ual_ia_child_add(ia, &l->obj);
  *listen_handle = UAL_HANDLE(&l->obj, it_listen_handle_t);
unlock:
  ual_lock_drop();
  return st;
}

void
ual_listen_destroy(ual_listen_t *l)
{
  if (l->obj.handle != 0)
    ual_handle_release(&l->obj);
  l->obj.ia->prov->cm->unlisten(l->lst);
  kal_port_release(l->res);
  l->evd->nbound--;
  g_free(l);
}

it_status_t
it_listen_free(it_listen_handle_t listen_handle)
{
  return ual_child_free(listen_handle, IT_HANDLE_TYPE_LISTEN, IT_ERR_INVALID_LISTEN, "listener");
}

it_status_t
it_listen_query(it_listen_handle_t listen_handle, it_listen_param_mask_t mask, it_listen_param_t *params)
{
  RSEC_SCOPE();
  ual_listen_t *l = ual_listen_get(listen_handle);
  if (l == NULL)
    return ual_fail(IT_ERR_INVALID_LISTEN, "it_listen_query: %p is not a live listener handle",
                    (void *) listen_handle);
  if ((mask & ~UAL_LISTEN_PARAMS_KNOWN) != 0)
    return ual_fail(IT_ERR_INVALID_MASK, "it_listen_query: mask 0x%x has unknown bits", (unsigned) mask);
  if (params == NULL)
    return ual_fail(IT_ERR_FAULT, "it_listen_query: params is NULL");
  params->ia_handle = UAL_HANDLE(&l->obj.ia->obj, it_ia_handle_t);
  params->spigot_id = l->spigot;
  params->connect_evd = UAL_HANDLE(&l->evd->obj, it_evd_handle_t);
  params->connect_qual = l->qual;
  return IT_SUCCESS;
}

/* Active side. */

it_status_t
ual_path_to_addr(ual_ia_t *ia, const it_path_t *path, uint32_t port, rnicpi_addr_t *out)
{
  memset(out, 0, sizeof(*out));
  if (path == NULL)
    return ual_fail(IT_ERR_INVALID_SOURCE_PATH, "it_ep_connect: path is NULL");
  struct in6_addr v6;
  gboolean v4 = FALSE;
  struct in_addr a4 = { 0 };
  /* An IP path on an IA of InfiniBand paths (applications written for
   * rdma_cm fill the iWARP form and never call it_get_pathinfo) is
   * taken as the address it names, as rdma_cm resolves one: its first
   * word, ip_vers 1 or 2, is no InfiniBand path (path MTU 0). */
  gboolean four = path->remote.iwarp.ip_vers == IT_IP_VERS_IPV4;
  gboolean ip_form = ia->caps.path_format == RNICPI_PATH_GID && path->remote.ib.path_mtu == 0 &&
                     (four || path->remote.iwarp.ip_vers == IT_IP_VERS_IPV6);
  if (ip_form && !ia->said_ip_path) {
    ia->said_ip_path = TRUE;
    char a[INET6_ADDRSTRLEN];
    inet_ntop(four ? AF_INET : AF_INET6, four ? (const void *) &path->remote.iwarp.raddr.ipv4
                                              : (const void *) &path->remote.iwarp.raddr.ipv6, a, sizeof(a));
    g_message("IA '%s' takes InfiniBand paths (GIDs); a path gives IP address %s (the iWARP form): "
              "connecting to that address, as it_get_pathinfo to it would (said once per IA)",
              ia->iface->name, a);
  }
  if (ia->caps.path_format == RNICPI_PATH_GID && !ip_form) {
    v6 = path->remote.ib.remote_port_gid;
  } else if (path->remote.iwarp.ip_vers == IT_IP_VERS_IPV4) {
    v4 = TRUE;
    a4 = path->remote.iwarp.raddr.ipv4;
  } else if (path->remote.iwarp.ip_vers == IT_IP_VERS_IPV6) {
    v6 = path->remote.iwarp.raddr.ipv6;
  } else {
    return ual_fail(IT_ERR_INVALID_SOURCE_PATH, "path names IP version %d; expected IPv4 or IPv6",
                    (int) path->remote.iwarp.ip_vers);
  }
  if (!v4 && IN6_IS_ADDR_V4MAPPED(&v6)) {
    v4 = TRUE;
    memcpy(&a4, &v6.s6_addr[12], 4);
  }
  if (v4) {
    struct sockaddr_in *s = (struct sockaddr_in *) &out->sa;
    s->sin_family = AF_INET;
    s->sin_addr = a4;
    s->sin_port = htons((uint16_t) port);
  } else {
    struct sockaddr_in6 *s = (struct sockaddr_in6 *) &out->sa;
    s->sin6_family = AF_INET6;
    s->sin6_addr = v6;
    s->sin6_port = htons((uint16_t) port);
  }
  /* A hand-built path to the loopback (an IP path naming 127.0.0.1, a GID
   * ::ffff:127.0.0.1) goes where it_get_pathinfo would send it. */
  ual_ia_map_loopback(ia, &out->sa);
  return IT_SUCCESS;
}

it_status_t
ual_check_pdata(const unsigned char *pdata, size_t len, size_t limit, const char *what, ual_ia_t *ia)
{
  if (len > limit)
    return ual_fail(IT_ERR_INVALID_PDATA_LENGTH, "%zu bytes of %s private data exceed the %zu IA '%s' "
                    "allows (it_ia_info_t.%s_private_data_len)", len, what, limit, ia->iface->name, what);
  if (len > 0 && pdata == NULL)
    return ual_fail(IT_ERR_INVALID_PDATA_LENGTH, "%s private data length is %zu but the pointer is NULL",
                    what, len);
  return IT_SUCCESS;
}

it_status_t
it_ep_connect(it_ep_handle_t ep_handle, const it_path_t *path, const it_conn_attributes_t *conn_attr,
              const it_conn_qual_t *connect_qual, it_cn_est_flags_t cn_est_flags,
              const unsigned char *private_data, size_t private_data_length)
{
  (void) conn_attr; /* IB CM timers: the provider's defaults apply */
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL) {
    st = ual_fail(IT_ERR_INVALID_EP, "it_ep_connect: %p is not a live EP handle", (void *) ep_handle);
    goto unlock;
  }
  ual_ia_t *ia = ep->obj.ia;
  if (ep->ud) {
    st = ual_fail(IT_ERR_INVALID_EP_TYPE, "EP %p is a datagram EP; only RC EPs connect",
                  (void *) ep_handle);
    goto unlock;
  }
  if (path == NULL) {
    st = ual_fail(IT_ERR_INVALID_SOURCE_PATH, "it_ep_connect: path is NULL");
    goto unlock;
  }
  if (ep->state != IT_EP_STATE_UNCONNECTED) {
    st = ual_fail(IT_ERR_INVALID_EP_STATE, "EP %p is in state %d; it_ep_connect needs UNCONNECTED "
                  "(it_ep_reset a NONOPERATIONAL EP first)", (void *) ep_handle, ep->state);
    goto unlock;
  }
  const it_cn_est_flags_t known = IT_CONNECT_FLAG_TWO_WAY | IT_CONNECT_FLAG_THREE_WAY |
                                  IT_CONNECT_SUPPRESS_IRD_ORD;
  gboolean three = (cn_est_flags & IT_CONNECT_FLAG_THREE_WAY) != 0;
  if ((cn_est_flags & ~known) != 0 || (three && (cn_est_flags & IT_CONNECT_FLAG_TWO_WAY)) ||
      (three && !(ia->caps.features & RNICPI_CAP_THREE_WAY)) ||
      (cn_est_flags & IT_CONNECT_SUPPRESS_IRD_ORD)) {
    st = ual_fail(IT_ERR_INVALID_CN_EST_FLAGS, "connect flags 0x%x: unknown bits, both handshakes, or a "
                  "feature IA '%s' lacks (three-way: %s, IRD/ORD suppression: no)", (unsigned) cn_est_flags,
                  ia->iface->name, (ia->caps.features & RNICPI_CAP_THREE_WAY) ? "yes" : "no");
    goto unlock;
  }
  uint32_t port;
  if ((st = ual_qual_to_port(connect_qual, FALSE, &port)) != IT_SUCCESS)
    goto unlock;
  if ((st = ual_check_pdata(private_data, private_data_length, MIN(ia->caps.pdata_connect, IT_MAX_PRIV_DATA),
                        "connect", ia)) != IT_SUCCESS)
    goto unlock;
  rnicpi_addr_t dst;
  if ((st = ual_path_to_addr(ia, path, port, &dst)) != IT_SUCCESS)
    goto unlock;
  rnicpi_conn_param_t p = {
    .pdata = private_data, .pdata_len = (uint32_t) private_data_length,
    .ird = ep->attr.srv.rc.rdma_read_ird, .ord = ep->attr.srv.rc.rdma_read_ord,
    .three_way = three, .timeout_us = path->timeout,
  };
  ep->dst_path = *path;
  ep->spigot = path->spigot_id;
  char *why = NULL;
  /* Connecting from here on; a connect that cannot start goes back below. */
  g_atomic_int_set(&ep->state, IT_EP_STATE_ACTIVE1_CONNECTION_PENDING);
  if (kal_policy_check(KAL_POLICY_CONNECT, (const struct sockaddr *) &dst.sa, port, &why) != RNICPI_OK) {
    /* As a firewall would: the attempt fails with a non-peer reject. */
    g_message("IA '%s', EP %p: %s", ia->iface->name, (void *) ep_handle, why);
    g_free(why);
    ual_cm_fail(ep, RNICPI_CM_UNREACHABLE, RNICPI_CM_REASON_BAD_PATH);
    goto unlock;
  }
  if (ia->host_cm) {
    st = ual_hostcm_connect(ep, &dst, &p);
  } else {
    rnicpi_status_t rs = ia->prov->cm->connect(ep->qp, &dst, &p);
    if (rs != RNICPI_OK)
      st = ual_fail(ual_map_status(rs), "provider '%s' could not start connecting EP %p: %s",
                    ia->prov->name, (void *) ep_handle, rnicpi_status_message(rs));
  }
  if (st != IT_SUCCESS)
    g_atomic_int_set(&ep->state, IT_EP_STATE_UNCONNECTED);
unlock:
  ual_lock_drop();
  return st;
}

it_status_t
it_ep_accept(it_ep_handle_t ep_handle, it_cn_est_identifier_t cn_est_id,
             const unsigned char *private_data, size_t private_data_length)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  ual_cn_t *cn = cn_find(cn_est_id);
  if (ep == NULL) {
    st = ual_fail(IT_ERR_INVALID_EP, "it_ep_accept: %p is not a live EP handle", (void *) ep_handle);
    goto unlock;
  }
  ual_ia_t *ia = ep->obj.ia;
  if (ep->ud) {
    st = ual_fail(IT_ERR_INVALID_EP_TYPE, "EP %p is a datagram EP; only RC EPs accept connections",
                  (void *) ep_handle);
    goto unlock;
  }
  if (cn == NULL || cn->ia != ia) {
    st = ual_fail(IT_ERR_INVALID_CN_EST_ID, "connection id 0x%" G_GINT64_MODIFIER "x is not pending on "
                  "IA '%s' (answered, withdrawn by the peer, or never issued)", cn_est_id, ia->iface->name);
    goto unlock;
  }
  if ((st = ual_check_pdata(private_data, private_data_length, MIN(ia->caps.pdata_accept, IT_MAX_PRIV_DATA),
                        "accept", ia)) != IT_SUCCESS)
    goto unlock;
  rnicpi_conn_param_t p = {
    .pdata = private_data, .pdata_len = (uint32_t) private_data_length,
    .ird = ep->attr.srv.rc.rdma_read_ird, .ord = ep->attr.srv.rc.rdma_read_ord,
  };
  int next;
  if (cn->kind == CN_PASSIVE_REQUEST) {
    if (ep->state != IT_EP_STATE_UNCONNECTED) {
      st = ual_fail(IT_ERR_INVALID_EP_STATE, "EP %p is in state %d; accepting needs an UNCONNECTED EP",
                    (void *) ep_handle, ep->state);
      goto unlock;
    }
    next = IT_EP_STATE_PASSIVE_CONNECTION_PENDING;
  } else {
    if (cn->ep != ep->obj.handle || ep->state != IT_EP_STATE_ACTIVE2_CONNECTION_PENDING) {
      st = ual_fail(IT_ERR_INVALID_EP_STATE, "connection id 0x%" G_GINT64_MODIFIER "x is a reply for "
                    "another EP, or EP %p is not waiting for one", cn_est_id, (void *) ep_handle);
      goto unlock;
    }
    next = IT_EP_STATE_ACTIVE2_CONNECTION_PENDING;
  }
  int prev = ep->state;
  g_atomic_int_set(&ep->state, next);
  rnicpi_status_t rs = ia->prov->cm->accept(ep->qp, cn->prov_id, &p);
  if (rs != RNICPI_OK) {
    g_atomic_int_set(&ep->state, prev);
    st = ual_fail(rs == RNICPI_ENOENT ? IT_ERR_INVALID_CN_EST_ID : ual_map_status(rs),
                  "provider '%s' could not accept connection 0x%" G_GINT64_MODIFIER "x on EP %p: %s",
                  ia->prov->name, cn_est_id, (void *) ep_handle, rnicpi_status_message(rs));
    if (rs == RNICPI_ENOENT)
      cn_drop(cn);
    goto unlock;
  }
  cn_drop(cn);
unlock:
  ual_lock_drop();
  return st;
}

it_status_t
it_reject(it_cn_est_identifier_t cn_est_id, const unsigned char *private_data, size_t private_data_length)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_cn_t *cn = cn_find(cn_est_id);
  if (cn == NULL) {
    st = ual_fail(IT_ERR_INVALID_CN_EST_ID, "connection id 0x%" G_GINT64_MODIFIER "x is not pending "
                  "(answered, withdrawn by the peer, or never issued)", cn_est_id);
    goto unlock;
  }
  ual_ia_t *ia = cn->ia;
  if ((st = ual_check_pdata(private_data, private_data_length, MIN(ia->caps.pdata_reject, IT_MAX_PRIV_DATA),
                        "reject", ia)) != IT_SUCCESS)
    goto unlock;
  rnicpi_status_t rs = ia->prov->cm->reject(ia->dev, cn->prov_id, private_data, (uint32_t) private_data_length);
  if (cn->kind == CN_ACTIVE_REPLY) {
    ual_ep_t *ep = ual_ep_get((it_ep_handle_t) (uintptr_t) cn->ep);
    if (ep != NULL)
      g_atomic_int_set(&ep->state, IT_EP_STATE_NONOPERATIONAL);
  }
  cn_drop(cn);
  if (rs != RNICPI_OK && rs != RNICPI_ENOENT)
    st = ual_fail(ual_map_status(rs), "provider '%s' could not reject: %s", ia->prov->name,
                  rnicpi_status_message(rs));
unlock:
  ual_lock_drop();
  return st;
}

it_status_t
it_ep_disconnect(it_ep_handle_t ep_handle, const unsigned char *private_data, size_t private_data_length)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL) {
    st = ual_fail(IT_ERR_INVALID_EP, "it_ep_disconnect: %p is not a live EP handle", (void *) ep_handle);
    goto unlock;
  }
  ual_ia_t *ia = ep->obj.ia;
  if (ep->ud) {
    st = ual_fail(IT_ERR_INVALID_EP_TYPE, "EP %p is a datagram EP: it has no connection to end",
                  (void *) ep_handle);
    goto unlock;
  }
  if (ep->state == IT_EP_STATE_UNCONNECTED || ep->state == IT_EP_STATE_NONOPERATIONAL) {
    st = ual_fail(IT_ERR_INVALID_EP_STATE, "EP %p is in state %d: not connected nor connecting",
                  (void *) ep_handle, ep->state);
    goto unlock;
  }
  if ((st = ual_check_pdata(private_data, private_data_length,
                        MIN(ia->caps.pdata_disconnect, IT_MAX_PRIV_DATA), "disconnect", ia)) != IT_SUCCESS)
    goto unlock;
  if (ia->host_cm && ual_hostcm_cancel(ep)) {
    /* The TCP connect had not completed: nothing of it reached the provider. */
    ual_cm_fail(ep, RNICPI_CM_DISCONNECTED, RNICPI_CM_REASON_NONE);
    goto unlock;
  }
  rnicpi_status_t rs = ia->prov->cm->disconnect(ep->qp, private_data, (uint32_t) private_data_length);
  if (rs != RNICPI_OK)
    st = ual_fail(ual_map_status(rs), "provider '%s' could not disconnect EP %p: %s", ia->prov->name,
                  (void *) ep_handle, rnicpi_status_message(rs));
unlock:
  ual_lock_drop();
  return st;
}

/* Socket conversion (IT-API 2.6; RDMAC "transition to RDMA mode").
 *
 * The role follows TCP's: the side that called connect() sends the MPA
 * Request, the side that accept()ed answers it.  A socket is the accepted
 * side when a listening socket of this host (this network namespace) holds
 * its local port, which the kernel's TCP tables tell (/proc/net/tcp and
 * tcp6).  ITAPI_SC_ROLE=active|passive overrides that guess for a process
 * whose listener is already closed.  The provider gets its own copy of the
 * socket (dup): the application keeps sd and must not read or write it
 * afterwards; closing it is harmless. */

static gboolean
port_has_listener(const char *table, unsigned port)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents(table, &text, NULL, NULL))
    return FALSE;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (char **l = lines + (lines[0] != NULL ? 1 : 0); *l != NULL; l++) {
    /* "  sl  local_address rem_address   st ..." ; local "ADDR:PORT", state hex */
    g_auto(GStrv) f = g_strsplit_set(g_strstrip(*l), " ", -1);
    char *cols[4];
    int n = 0;
    for (char **x = f; *x != NULL && n < 4; x++)
      if (**x != '\0')
        cols[n++] = *x;
    if (n < 4)
      continue;
    const char *colon = strrchr(cols[1], ':');
    if (colon != NULL && strtoul(colon + 1, NULL, 16) == port && strcmp(cols[3], "0A") == 0)
      return TRUE;
  }
  return FALSE;
}

static gboolean
socket_is_active(int sd)
{
  const char *force = g_getenv("ITAPI_SC_ROLE");
  if (force != NULL && strcmp(force, "active") == 0)
    return TRUE;
  if (force != NULL && strcmp(force, "passive") == 0)
    return FALSE;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  if (getsockname(sd, (struct sockaddr *) &ss, &sl) != 0)
    return TRUE;
  unsigned port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *) &ss)->sin_port
                                                : ((struct sockaddr_in6 *) &ss)->sin6_port);
  return !port_has_listener("/proc/net/tcp", port) && !port_has_listener("/proc/net/tcp6", port);
}

it_status_t
it_socket_convert(int sd, it_ep_handle_t ep_handle, it_sc_flags_t flags, const unsigned char *msg,
                  size_t len)
{
  it_status_t st = IT_SUCCESS;
  ual_lock_take();
  ual_ep_t *ep = ual_ep_get(ep_handle);
  if (ep == NULL) {
    st = ual_fail(IT_ERR_INVALID_EP, "it_socket_convert: %p is not a live EP handle", (void *) ep_handle);
    goto unlock;
  }
  ual_ia_t *ia = ep->obj.ia;
  if (!(ia->caps.features & RNICPI_CAP_SOCKET_HANDOFF)) {
    st = ual_fail(IT_ERR_OP_NOT_SUPPORTED, "IA '%s' cannot take over a socket "
                  "(it_ia_info_t.socket_conversion_support; iWARP interfaces can)", ia->iface->name);
    goto unlock;
  }
  if (flags != IT_SC_DEFAULT) {
    st = ual_fail(IT_ERR_INVALID_CONVERSION, "it_socket_convert: flags 0x%x; IT_SC_NO_REQ_REP (no MPA "
                  "exchange) is not offered: MPA negotiates CRC, IRD/ORD and the first message",
                  (unsigned) flags);
    goto unlock;
  }
  if (ep->ud) {
    st = ual_fail(IT_ERR_INVALID_EP_TYPE, "EP %p is a datagram EP; a socket converts to an RC EP",
                  (void *) ep_handle);
    goto unlock;
  }
  if (ep->state != IT_EP_STATE_UNCONNECTED) {
    st = ual_fail(IT_ERR_INVALID_EP_STATE, "EP %p is in state %d; conversion needs an UNCONNECTED EP",
                  (void *) ep_handle, ep->state);
    goto unlock;
  }
  int type = 0;
  socklen_t tl = sizeof(type);
  struct sockaddr_storage peer;
  socklen_t pl = sizeof(peer);
  if (getsockopt(sd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM ||
      getpeername(sd, (struct sockaddr *) &peer, &pl) != 0 ||
      (peer.ss_family != AF_INET && peer.ss_family != AF_INET6)) {
    st = ual_fail(IT_ERR_INVALID_CONVERSION, "descriptor %d is not a connected TCP socket (%s)", sd,
                  g_strerror(errno));
    goto unlock;
  }
  gboolean active = socket_is_active(sd);
  size_t limit = MIN(active ? ia->caps.pdata_connect : ia->caps.pdata_accept, IT_MAX_PRIV_DATA);
  if ((st = ual_check_pdata(msg, len, limit, active ? "connect" : "accept", ia)) != IT_SUCCESS)
    goto unlock;
  int fd = dup(sd);
  if (fd < 0) {
    st = ual_fail(IT_ERR_RESOURCES, "it_socket_convert: dup(%d) failed: %s", sd, g_strerror(errno));
    goto unlock;
  }
  rnicpi_conn_param_t p = {
    .pdata = msg, .pdata_len = (uint32_t) len,
    .ird = ep->attr.srv.rc.rdma_read_ird, .ord = ep->attr.srv.rc.rdma_read_ord,
  };
  g_atomic_int_set(&ep->state, active ? IT_EP_STATE_ACTIVE1_CONNECTION_PENDING
                                      : IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ);
  rnicpi_status_t rs = ia->prov->sock->handoff(ep->qp, fd, active, &p);
  if (rs != RNICPI_OK) {
    close(fd);
    g_atomic_int_set(&ep->state, IT_EP_STATE_UNCONNECTED);
    st = ual_fail(rs == RNICPI_EINVAL ? IT_ERR_INVALID_CONVERSION : ual_map_status(rs),
                  "provider '%s' could not take over socket %d for EP %p: %s", ia->prov->name, sd,
                  (void *) ep_handle, rnicpi_status_message(rs));
  }
unlock:
  ual_lock_drop();
  return st;
}

/* Provider CM upcalls become IT-API events. */

static void
copy_pdata(unsigned char *dst, it_boolean_t *present, const rnicpi_cm_event_t *ev)
{
  size_t n = MIN((size_t) ev->pdata_len, (size_t) IT_MAX_PRIV_DATA);
  memset(dst, 0, IT_MAX_PRIV_DATA);
  memcpy(dst, ev->pdata, n);
  *present = n > 0 ? IT_TRUE : IT_FALSE;
}

static const it_conn_reject_code_t reject_code_of[] = {
  [RNICPI_CM_REASON_NONE] = IT_CN_REJ_OTHER,
  [RNICPI_CM_REASON_NO_LISTENER] = IT_CN_REJ_OTHER,
  [RNICPI_CM_REASON_TIMEOUT] = IT_CN_REJ_TIMEOUT,
  [RNICPI_CM_REASON_BAD_PATH] = IT_CN_REJ_BAD_PATH,
  [RNICPI_CM_REASON_RESOURCES] = IT_CN_REJ_RESOURCES,
  [RNICPI_CM_REASON_BAD_ORD] = IT_CN_REJ_BAD_ORD,
  [RNICPI_CM_REASON_BAD_PARAMS] = IT_CN_REJ_BAD_CONN_PARMS,
};

static void
conn_request(ual_ia_t *ia, const rnicpi_cm_event_t *ev)
{
  ual_listen_t *l = ual_listen_get((it_listen_handle_t) (uintptr_t) ev->listen_ctx);
  if (l == NULL) {
    ia->prov->cm->reject(ia->dev, ev->conn_id, NULL, 0);
    return;
  }
  g_autofree char *why = NULL;
  if (kal_policy_check(KAL_POLICY_ACCEPT, (const struct sockaddr *) &ev->src.sa, ev->port, &why) != RNICPI_OK) {
    /* The listener never sees it; the requester gets a reject. */
    g_message("IA '%s': %s", ia->iface->name, why);
    ia->prov->cm->reject(ia->dev, ev->conn_id, NULL, 0);
    return;
  }
  ual_cn_t *cn = cn_new(ia, CN_PASSIVE_REQUEST, ev->conn_id);
  cn->listen = l->obj.handle;
  it_event_t *e = g_new0(it_event_t, 1);
  it_conn_request_event_t *r = &e->conn_req;
  r->event_number = IT_CM_REQ_CONN_REQUEST_EVENT;
  r->cn_est_id = cn->id;
  r->conn_qual = l->qual;
  if (ev->src.sa.ss_family == AF_INET) {
    r->source_addr.addr_type = IT_IPV4;
    r->source_addr.addr.ipv4 = ((const struct sockaddr_in *) &ev->src.sa)->sin_addr;
  } else {
    r->source_addr.addr_type = IT_IPV6;
    r->source_addr.addr.ipv6 = ((const struct sockaddr_in6 *) &ev->src.sa)->sin6_addr;
  }
  r->spigot_id = l->spigot;
  r->max_message_size = (uint32_t) MIN(ia->caps.max_msg_size, (uint64_t) UINT32_MAX);
  r->rdma_read_ird = ev->ird;
  r->rdma_read_ord = ev->ord;
  copy_pdata(r->private_data, &r->private_data_present, ev);
  cn->req = *r;
  ual_evd_push(l->evd, e);
  g_free(e);
}

/* Handoff is the access layer's own: the provider's pending request stays
 * as it is and is offered, under a new identifier, to another listen point
 * of this process on the same spigot (IT-API 2.5; DAT's dat_cr_handoff). */
it_status_t
it_handoff(const it_conn_qual_t *conn_qual, size_t spigot_id, it_cn_est_identifier_t cn_est_id)
{
  it_status_t st = IT_SUCCESS;
  uint32_t port;
  ual_lock_take();
  ual_cn_t *cn = cn_find(cn_est_id);
  if (cn == NULL || cn->kind != CN_PASSIVE_REQUEST) {
    st = ual_fail(IT_ERR_INVALID_CN_EST_ID, "connection id 0x%" G_GINT64_MODIFIER "x is not a pending "
                  "connection request (answered, withdrawn, or a reply)", cn_est_id);
    goto unlock;
  }
  if ((st = ual_qual_to_port(conn_qual, TRUE, &port)) != IT_SUCCESS)
    goto unlock;
  ual_listen_t *to = NULL;
  for (GList *l = cn->ia->children; l != NULL && to == NULL; l = l->next) {
    ual_obj_t *o = l->data;
    if (o->type != IT_HANDLE_TYPE_LISTEN)
      continue;
    ual_listen_t *cand = (ual_listen_t *) o;
    uint32_t p;
    if (cand->spigot == spigot_id && ual_qual_to_port(&cand->qual, TRUE, &p) == IT_SUCCESS && p == port)
      to = cand;
  }
  if (to == NULL) {
    st = ual_fail(IT_ERR_INVALID_CONN_QUAL, "no listen point of IA '%s' on spigot %zu listens on port %u; "
                  "it_handoff passes requests between listen points of one IA", cn->ia->iface->name,
                  spigot_id, port);
    goto unlock;
  }
  if (to->obj.handle == cn->listen) {
    st = ual_fail(IT_ERR_INVALID_CONN_QUAL, "the request already belongs to the listen point on port %u",
                  port);
    goto unlock;
  }
  ual_cn_t *moved = cn_new(cn->ia, CN_PASSIVE_REQUEST, cn->prov_id);
  moved->listen = to->obj.handle;
  moved->req = cn->req;
  moved->req.cn_est_id = moved->id;
  moved->req.conn_qual = to->qual;
  moved->req.spigot_id = to->spigot;
  cn_drop(cn);
  it_event_t *e = g_new0(it_event_t, 1);
  e->conn_req = moved->req;
  ual_evd_push(to->evd, e);
  g_free(e);
unlock:
  ual_lock_drop();
  return st;
}

static void
request_cancelled(const rnicpi_cm_event_t *ev)
{
  if (cn_table == NULL)
    return;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, cn_table);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    ual_cn_t *c = v;
    if (c->kind == CN_PASSIVE_REQUEST && c->prov_id == ev->conn_id)
      g_hash_table_iter_remove(&it);
  }
}

static void
conn_event(ual_ia_t *ia, const rnicpi_cm_event_t *ev)
{
  ual_ep_t *ep = ual_ep_get((it_ep_handle_t) (uintptr_t) ev->qp_ctx);
  if (ep == NULL || ep->conn == NULL)
    return; /* the EP was freed, or is a datagram EP: nobody to tell */
  it_event_t *e = g_new0(it_event_t, 1);
  it_connection_event_t *c = &e->conn;
  c->ep = UAL_HANDLE(&ep->obj, it_ep_handle_t);
  c->rdma_read_ird = ev->ird;
  c->rdma_read_ord = ev->ord;
  c->dst_path = ep->dst_path;
  copy_pdata(c->private_data, &c->private_data_present, ev);
  switch (ev->type) {
  case RNICPI_CM_CONNECT_REPLY: {
    ual_cn_t *cn = cn_new(ia, CN_ACTIVE_REPLY, ev->conn_id);
    cn->ep = ep->obj.handle;
    c->cn_est_id = cn->id;
    c->event_number = IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT;
    g_atomic_int_set(&ep->state, IT_EP_STATE_ACTIVE2_CONNECTION_PENDING);
    break;
  }
  case RNICPI_CM_ESTABLISHED:
    c->event_number = IT_CM_MSG_CONN_ESTABLISHED_EVENT;
    ep->ird = ev->ird;
    ep->ord = ev->ord;
    g_atomic_int_set(&ep->state, IT_EP_STATE_CONNECTED);
    break;
  case RNICPI_CM_REJECTED:
    c->event_number = IT_CM_MSG_CONN_PEER_REJECT_EVENT;
    c->reject_reason_code = IT_CN_REJ_OTHER;
    g_atomic_int_set(&ep->state, IT_EP_STATE_NONOPERATIONAL);
    break;
  case RNICPI_CM_UNREACHABLE:
    c->event_number = IT_CM_MSG_CONN_NONPEER_REJECT_EVENT;
    c->reject_reason_code = (unsigned) ev->reason < G_N_ELEMENTS(reject_code_of) ?
                            reject_code_of[ev->reason] : IT_CN_REJ_OTHER;
    g_atomic_int_set(&ep->state, IT_EP_STATE_NONOPERATIONAL);
    break;
  case RNICPI_CM_DISCONNECTED:
    c->event_number = IT_CM_MSG_CONN_DISCONNECT_EVENT;
    g_atomic_int_set(&ep->state, IT_EP_STATE_NONOPERATIONAL);
    break;
  case RNICPI_CM_BROKEN:
    c->event_number = IT_CM_MSG_CONN_BROKEN_EVENT;
    g_atomic_int_set(&ep->state, IT_EP_STATE_NONOPERATIONAL);
    break;
  default:
    g_free(e);
    return;
  }
  ual_evd_push(ep->conn, e);
  g_free(e);
}

void
ual_cm_fail(ual_ep_t *ep, rnicpi_cm_event_type_t type, rnicpi_cm_reason_t reason)
{
  ual_ia_t *ia = ep->obj.ia;
  ia->prov->queue->qp_to_error(ep->qp); /* receives posted before the connect flush */
  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = type;
  ev->qp_ctx = ep->obj.handle;
  ev->reason = reason;
  conn_event(ia, ev);
  g_free(ev);
}

void
ual_upcall_cm(void *dev_ctx, const rnicpi_cm_event_t *ev)
{
  ual_ia_t *ia = dev_ctx;
  if (ia == NULL)
    return;
  ual_lock_take();
  if (ev->type == RNICPI_CM_CONNECT_REQUEST)
    conn_request(ia, ev);
  else if (ev->type == RNICPI_CM_REQUEST_CANCELLED)
    request_cancelled(ev);
  else if (ev->type == RNICPI_CM_UD_SVC_REQUEST || ev->type == RNICPI_CM_UD_SVC_REPLY)
    ual_ud_cm_event(ia, ev);
  else
    conn_event(ia, ev);
  ual_lock_drop();
}
