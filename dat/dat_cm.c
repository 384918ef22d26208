/*
 * dat/: connection management.  A PSP or an RSP is an IT-API listen point
 * on spigot 0 whose connection qualifier is an IANA port (qual_port():
 * DAT's 64-bit qualifier as DAPL maps it; dat_psp_create_any lets IT-API
 * choose one);
 * a connection request arriving on its CR EVD becomes a CR object holding
 * IT-API's cn_est_id and a writable copy of the private data (dtest edits
 * it and accepts with it), and for a PSP with DAT_PSP_PROVIDER_FLAG an EP
 * the provider makes (datx_ep_new_tentative()).  dat_ep_connect resolves the remote address with
 * it_get_pathinfo() and connects with the two-way handshake;
 * dat_ep_dup_connect does the same to the address and qualifier another
 * EP connected to.  On a datagram EP, connect, accept and reject are the
 * datagram service exchange of dat_ud.c.
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#include <arpa/inet.h>
#include <string.h>

/* The IANA port of a DAT connection qualifier.  DAT's is 64 bits, an IANA
 * port 16: a qualifier above 0xffff maps onto ports 33534..65534 as DAPL's
 * rdma_cm provider maps it (qualifier modulo 32001, plus 65535 - 32001), so
 * that both providers listen and connect on the same port for it. */
static uint16_t
qual_port(DAT_CONN_QUAL qual)
{
  if (qual <= UINT16_MAX)
    return (uint16_t) qual;
  return (uint16_t) (qual % 32001u + (65535u - 32001u));
}

static DAT_RETURN
net_addr_of(DAT_IA_ADDRESS_PTR sa, it_net_addr_t *out, struct sockaddr_in *copy)
{
  memset(out, 0, sizeof(*out));
  if (sa == NULL)
    return DATX_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_MALFORMED);
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
    out->addr_type = IT_IPV4;
    out->addr.ipv4 = in->sin_addr;
    *copy = *in;
    return DAT_SUCCESS;
  }
  if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
    out->addr_type = IT_IPV6;
    out->addr.ipv6 = in6->sin6_addr;
    memset(copy, 0, sizeof(*copy));
    return DAT_SUCCESS;
  }
  return DATX_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED);
}

static DAT_RETURN
ep_connect_on_held(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote, DAT_CONN_QUAL qual,
                   DAT_TIMEOUT timeout, DAT_COUNT pdata_size, const DAT_PVOID pdata, DAT_QOS qos,
                   DAT_CONNECT_FLAGS flags)
{
  (void) qos;
  (void) flags;
  datx_ep_t *ep = datx_cell_get(ep_handle, DATX_EP);
  if (ep == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  size_t limit = ep->ud ? MIN(ep->ia->ud_req_pdata_len, (size_t) IT_MAX_PRIV_DATA) - DATX_UD_HDR_LEN
                       : ep->ia->connect_pdata_len;
  if (pdata_size < 0 || (size_t) pdata_size > limit || (pdata_size > 0 && pdata == NULL))
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
  it_net_addr_t addr;
  struct sockaddr_in copy;
  DAT_RETURN ret = net_addr_of(remote, &addr, &copy);
  if (ret != DAT_SUCCESS)
    return ret;
  it_path_t path;
  size_t npaths = 1, total = 0;
  it_status_t st = it_get_pathinfo(ep->ia->it, 0, &addr, &npaths, &total, &path);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  if (npaths == 0)
    return DATX_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
  if (timeout != DAT_TIMEOUT_INFINITE)
    path.timeout = timeout;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(qual_port(qual));
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  ep->remote = copy;
  ep->remote.sin_port = q.conn_qual.port;
  ep->remote_qual = qual;
  ep->active = TRUE;
  /* Kept for a retry while nobody listens yet (datx_ep_connect_retry). */
  ep->conn_path = path;
  ep->conn_qual = q;
  ep->conn_pdata_len = (size_t) pdata_size;
  if (pdata_size > 0)
    memcpy(ep->conn_pdata, pdata, (size_t) pdata_size);
  const char *env = g_getenv("ITAPI_DAT_CONNECT_RETRY_MS");
  gint64 window = (env != NULL ? CLAMP(g_ascii_strtoll(env, NULL, 10), 0, 3600000) : DATX_CONNECT_RETRY_MS) * 1000;
  if (timeout != DAT_TIMEOUT_INFINITE)
    window = MIN(window, (gint64) timeout);
  gint64 deadline = window > 0 ? g_get_monotonic_time() + window : 0;
  /* A datagram EP may ask several peers, or one several times, at once. */
  if (ep->ud)
    return datx_ud_connect(ep, &path, &q, &ep->remote, pdata, (size_t) pdata_size, deadline);
  ep->conn_deadline = deadline;
  ep->conn_tries = 0;
  st = it_ep_connect(ep->it, &path, &ca, &q, IT_CONNECT_FLAG_TWO_WAY, pdata, (size_t) pdata_size);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  return DAT_SUCCESS;
}

gboolean
datx_ep_connect_retry(datx_ep_t *ep)
{
  if (!ep->active || ep->conn_deadline == 0 || g_get_monotonic_time() >= ep->conn_deadline)
    return FALSE;
  if (ep->conn_tries++ == 0)
    g_debug("DAT EP %u: nobody listens at qualifier %" G_GUINT64_FORMAT " yet: trying again "
            "until the connect's timeout or ITAPI_DAT_CONNECT_RETRY_MS", ep->cell->id,
            (guint64) ep->remote_qual);
  /* 1, 2, 4 ... ms, then every 32 ms: a listener a moment late. */
  g_usleep(1000u << MIN(ep->conn_tries - 1, 5u));
  if (it_ep_reset(ep->it) != IT_SUCCESS)
    return FALSE;
  datx_ep_recvs_again(ep);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  return it_ep_connect(ep->it, &ep->conn_path, &ca, &ep->conn_qual, IT_CONNECT_FLAG_TWO_WAY,
                       ep->conn_pdata_len > 0 ? ep->conn_pdata : NULL, ep->conn_pdata_len) == IT_SUCCESS;
}

DAT_RETURN
datx_ep_connect(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote, DAT_CONN_QUAL qual,
                DAT_TIMEOUT timeout, DAT_COUNT pdata_size, const DAT_PVOID pdata, DAT_QOS qos,
                DAT_CONNECT_FLAGS flags)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP,
                   ep_connect_on_held(ep_handle, remote, qual, timeout, pdata_size, pdata, qos, flags));
}

/* DAT 2.0 dat_ep_dup_connect: to the remote IA and qualifier
 * @p dup_handle connected to; an EP that accepted its connection (or
 * never connected) names no remote service point. */
static DAT_RETURN
ep_dup_connect_on_held(DAT_EP_HANDLE ep_handle, DAT_EP_HANDLE dup_handle, DAT_TIMEOUT timeout,
                       DAT_COUNT pdata_size, const DAT_PVOID pdata, DAT_QOS qos)
{
  if (datx_cell_get(ep_handle, DATX_EP) == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  datx_cell_t *held = datx_cell_hold(dup_handle, DATX_EP);
  if (held == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  const datx_ep_t *dup = held->object;
  struct sockaddr_in remote = dup->remote;
  DAT_CONN_QUAL qual = dup->remote_qual;
  gboolean active = dup->active;
  datx_cell_put(held);
  if (!active)
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
  return ep_connect_on_held(ep_handle, (DAT_IA_ADDRESS_PTR) &remote, qual, timeout, pdata_size,
                            pdata, qos, DAT_CONNECT_DEFAULT_FLAG);
}

DAT_RETURN
datx_ep_dup_connect(DAT_EP_HANDLE ep_handle, DAT_EP_HANDLE dup_handle, DAT_TIMEOUT timeout,
                    DAT_COUNT pdata_size, const DAT_PVOID pdata, DAT_QOS qos)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP,
                   ep_dup_connect_on_held(ep_handle, dup_handle, timeout, pdata_size, pdata, qos));
}

static DAT_RETURN
ep_disconnect_on_held(DAT_EP_HANDLE ep_handle, DAT_CLOSE_FLAGS flags)
{
  datx_ep_t *ep = datx_cell_get(ep_handle, DATX_EP);
  if (ep == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  /* Both flags lead to it_ep_disconnect: IT-API's disconnect is graceful
   * where the transport has one, and flushes what is outstanding. */
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (ep->ud)
    return DAT_SUCCESS; /* a datagram EP has no connection */
  it_ep_param_t p;
  if (it_ep_query(ep->it, IT_EP_PARAM_STATE, &p) == IT_SUCCESS &&
      p.ep_state.rc == IT_EP_STATE_UNCONNECTED)
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
  /* A connect given up: no retry after this (datx_ep_connect_retry). */
  ep->conn_deadline = 0;
  it_status_t st = it_ep_disconnect(ep->it, NULL, 0);
  if (st == IT_ERR_INVALID_EP_STATE) {
    /* The peer disconnected first (or the connection broke): the EP is
     * already where a disconnect leads, and its event is on its way or
     * queued; DAT 2.0 6.5.7 makes that a no-op, as DAPL does.  The EP may
     * still read CONNECTED: the provider refused because it has the
     * connection down already, and the event saying so has not reached
     * the EP yet (vp/ib, when DAPL's provider on the other side
     * disconnected a moment before). */
    if (it_ep_query(ep->it, IT_EP_PARAM_STATE, &p) == IT_SUCCESS &&
        (p.ep_state.rc == IT_EP_STATE_NONOPERATIONAL || p.ep_state.rc == IT_EP_STATE_CONNECTED))
      return DAT_SUCCESS;
  }
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ep_disconnect(DAT_EP_HANDLE ep_handle, DAT_CLOSE_FLAGS flags)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP, ep_disconnect_on_held(ep_handle, flags));
}

/* A PSP (@p ep NULL), an RSP, or a CSP (@p csp) on @p qual; @p qual_inout
 * NULL: the qualifier is given, else IT-API chooses it and it is returned
 * there. */
static DAT_RETURN
sp_create_on_held(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL qual, DAT_CONN_QUAL *qual_out,
                  DAT_EVD_HANDLE evd_handle, DAT_PSP_FLAGS flags, DAT_EP_HANDLE ep_handle,
                  gboolean csp, DAT_HANDLE *sp_handle)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  /* The service point uses its EVD until freed: a racing dat_evd_free is
   * refused, or retired the EVD first and this create is refused. */
  datx_evd_t *evd = datx_cell_use(evd_handle, DATX_EVD);
  if (evd == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
  DAT_RETURN ret = DAT_SUCCESS;
  if (evd->ia != ia || evd->sevd[DATX_S_CR] == IT_NULL_HANDLE)
    ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
  else if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  else if (sp_handle == NULL)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
  if (ret != DAT_SUCCESS)
    goto err_unuse;
  /* An RSP's EP is held while read; the RSP keeps its handle, held again
   * by each use (dat_cr_accept). */
  datx_cell_t *ep_cell = NULL;
  if (ep_handle != DAT_HANDLE_NULL) {
    ep_cell = datx_cell_hold(ep_handle, DATX_EP);
    DAT_EP_STATE state;
    if (ep_cell == NULL || ((datx_ep_t *) ep_cell->object)->ia != ia)
      ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    else
      ret = datx_ep_get_status(ep_handle, &state, NULL, NULL);
    if (ret == DAT_SUCCESS && state != DAT_EP_STATE_UNCONNECTED)
      ret = DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED);
    if (ep_cell != NULL)
      datx_cell_put(ep_cell);
    if (ret != DAT_SUCCESS)
      goto err_unuse;
  }
  datx_psp_t *psp = g_new0(datx_psp_t, 1);
  psp->ia = ia;
  psp->evd = evd;
  psp->flags = flags;
  psp->ep = ep_cell;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = qual_out == NULL ? htons(qual_port(qual)) : 0;
  it_status_t st = it_listen_create(ia->it, 0, evd->sevd[DATX_S_CR],
                                    qual_out == NULL ? IT_LISTEN_CONN_QUAL_INPUT : IT_LISTEN_NO_FLAG,
                                    &q, &psp->it);
  if (st != IT_SUCCESS) {
    ret = st == IT_ERR_CONN_QUAL_BUSY ? DATX_ERR(DAT_CONN_QUAL_IN_USE, 0)
                                      : datx_status(st, DAT_INVALID_HANDLE_IA);
    goto err_free;
  }
  psp->qual = qual_out == NULL ? qual : ntohs(q.conn_qual.port);
  psp->cell = datx_cell_new(&ia->provider->dat,
                            ep_cell != NULL ? DATX_RSP : csp ? DATX_CSP : DATX_PSP, psp, ia);
  if (psp->cell == NULL) {
    it_listen_free(psp->it);
    ret = DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    goto err_free;
  }
  g_mutex_lock(&ia->lock);
  ia->psps = g_list_prepend(ia->psps, psp);
  g_mutex_unlock(&ia->lock);
  if (qual_out != NULL)
    *qual_out = psp->qual;
  *sp_handle = psp->cell;
  return DAT_SUCCESS;

err_free:
  g_free(psp);
err_unuse:
  datx_cell_unuse(evd->cell);
  return ret;
}

static DAT_RETURN
sp_create(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL qual, DAT_CONN_QUAL *qual_out,
          DAT_EVD_HANDLE evd_handle, DAT_PSP_FLAGS flags, DAT_EP_HANDLE ep_handle,
          DAT_HANDLE *sp_handle)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA,
                   sp_create_on_held(ia_handle, qual, qual_out, evd_handle, flags, ep_handle, FALSE,
                                     sp_handle));
}

DAT_RETURN
datx_psp_create(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd_handle,
                DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp_handle)
{
  return sp_create(ia_handle, qual, NULL, evd_handle, flags, DAT_HANDLE_NULL, psp_handle);
}

DAT_RETURN
datx_psp_create_any(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evd_handle,
                    DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp_handle)
{
  if (qual == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  return sp_create(ia_handle, 0, qual, evd_handle, flags, DAT_HANDLE_NULL, psp_handle);
}

DAT_RETURN
datx_rsp_create(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep_handle,
                DAT_EVD_HANDLE evd_handle, DAT_RSP_HANDLE *rsp_handle)
{
  if (ep_handle == DAT_HANDLE_NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  return sp_create(ia_handle, qual, NULL, evd_handle, DAT_PSP_CONSUMER_FLAG, ep_handle, rsp_handle);
}

static DAT_RETURN
psp_query_on_held(DAT_PSP_HANDLE psp_handle, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *param)
{
  datx_psp_t *psp = datx_cell_get(psp_handle, DATX_PSP);
  if (psp == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (mask & DAT_PSP_FIELD_IA_HANDLE)
    param->ia_handle = psp->ia->cell;
  if (mask & DAT_PSP_FIELD_CONN_QUAL)
    param->conn_qual = psp->qual;
  if (mask & DAT_PSP_FIELD_EVD_HANDLE)
    param->evd_handle = psp->evd->cell;
  if (mask & DAT_PSP_FIELD_PSP_FLAGS)
    param->psp_flags = psp->flags;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_psp_query(DAT_PSP_HANDLE psp_handle, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *param)
{
  DATX_RETURN_HELD(psp_handle, DATX_PSP, psp_query_on_held(psp_handle, mask, param));
}

static void
sp_destroy(datx_psp_t *psp)
{
  datx_ia_t *ia = psp->ia;
  g_mutex_lock(&ia->lock);
  ia->psps = g_list_remove(ia->psps, psp);
  g_mutex_unlock(&ia->lock);
  datx_cell_unuse(psp->evd->cell);
  datx_cell_kill(psp->cell, ia);
  g_free(psp);
}

/* The free of a PSP or a CSP (@p type), refused with @p subtype. */
static DAT_RETURN
sp_free(DAT_HANDLE handle, datx_type_t type, DAT_RETURN_SUBTYPE subtype)
{
  datx_cell_t *cell = datx_cell_hold(handle, type);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, subtype);
  datx_psp_t *psp = cell->object;
  it_status_t st = it_listen_free(psp->it);
  datx_cell_put(cell);
  if (st != IT_SUCCESS)
    return datx_status(st, subtype);
  /* A request being turned into a CR holds the service point: wait it out. */
  if (datx_cell_retire_wait(psp->cell) != DATX_RETIRED)
    return DATX_ERR(DAT_INVALID_HANDLE, subtype);
  sp_destroy(psp);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_psp_free(DAT_PSP_HANDLE psp_handle)
{
  return sp_free(psp_handle, DATX_PSP, DAT_INVALID_HANDLE_PSP);
}

/* DAT 2.0 6.4.4: a common service point listens on an IP address and
 * port for dat_ep_common_connect, its communicator naming the protocol.
 * It is an IT-API listen point on spigot 0 whose IANA port is the
 * address's; the IA listens on its own address whatever IP the consumer
 * names.  Its requests arrive on its EVD as a PSP's do, the event naming
 * the CSP (DAT_SP_HANDLE::csp_handle). */
static DAT_RETURN
csp_create_on_held(DAT_IA_HANDLE ia_handle, DAT_COMM *comm, DAT_IA_ADDRESS_PTR addr,
                   DAT_EVD_HANDLE evd_handle, DAT_CSP_HANDLE *csp_handle)
{
  if (comm == NULL || (comm->domain != AF_INET && comm->domain != AF_UNSPEC) ||
      (comm->type != SOCK_STREAM && comm->type != 0) ||
      (comm->protocol != IPPROTO_TCP && comm->protocol != 0))
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (addr == NULL || addr->sa_family != AF_INET ||
      ((const struct sockaddr_in *) addr)->sin_port == 0)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (csp_handle == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
  const struct sockaddr_in *in = (const struct sockaddr_in *) addr;
  DAT_HANDLE h;
  DAT_RETURN ret = sp_create_on_held(ia_handle, ntohs(in->sin_port), NULL, evd_handle,
                                     DAT_PSP_CONSUMER_FLAG, DAT_HANDLE_NULL, TRUE, &h);
  if (ret != DAT_SUCCESS)
    return ret;
  datx_psp_t *csp = ((datx_cell_t *) h)->object;
  csp->comm = *comm;
  csp->csp_addr = *in;
  *csp_handle = h;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_csp_create(DAT_IA_HANDLE ia_handle, DAT_COMM *comm, DAT_IA_ADDRESS_PTR addr,
                DAT_EVD_HANDLE evd_handle, DAT_CSP_HANDLE *csp_handle)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA,
                   csp_create_on_held(ia_handle, comm, addr, evd_handle, csp_handle));
}

static DAT_RETURN
csp_query_on_held(DAT_CSP_HANDLE csp_handle, DAT_CSP_PARAM_MASK mask, DAT_CSP_PARAM *param)
{
  datx_psp_t *csp = datx_cell_get(csp_handle, DATX_CSP);
  if (csp == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CSP);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (mask & DAT_CSP_FIELD_IA_HANDLE)
    param->ia_handle = csp->ia->cell;
  if (mask & DAT_CSP_FIELD_COMM)
    param->comm = &csp->comm;
  if (mask & DAT_CSP_FIELD_IA_ADDRESS)
    param->address_ptr = (DAT_IA_ADDRESS_PTR) &csp->csp_addr;
  if (mask & DAT_CSP_FIELD_EVD_HANDLE)
    param->evd_handle = csp->evd->cell;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_csp_query(DAT_CSP_HANDLE csp_handle, DAT_CSP_PARAM_MASK mask, DAT_CSP_PARAM *param)
{
  DATX_RETURN_HELD(csp_handle, DATX_CSP, csp_query_on_held(csp_handle, mask, param));
}

DAT_RETURN
datx_csp_free(DAT_CSP_HANDLE csp_handle)
{
  return sp_free(csp_handle, DATX_CSP, DAT_INVALID_HANDLE_CSP);
}

/* DAT 2.0 dat_ep_common_connect: to the IP address and port of a CSP. */
static DAT_RETURN
ep_common_connect_on_held(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote, DAT_TIMEOUT timeout,
                          DAT_COUNT pdata_size, const DAT_PVOID pdata)
{
  if (remote == NULL || remote->sa_family != AF_INET ||
      ((const struct sockaddr_in *) remote)->sin_port == 0)
    return DATX_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_MALFORMED);
  DAT_CONN_QUAL qual = ntohs(((const struct sockaddr_in *) remote)->sin_port);
  return ep_connect_on_held(ep_handle, remote, qual, timeout, pdata_size, pdata,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
}

DAT_RETURN
datx_ep_common_connect(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote, DAT_TIMEOUT timeout,
                       DAT_COUNT pdata_size, const DAT_PVOID pdata)
{
  DATX_RETURN_HELD(ep_handle, DATX_EP,
                   ep_common_connect_on_held(ep_handle, remote, timeout, pdata_size, pdata));
}

static DAT_RETURN
rsp_query_on_held(DAT_RSP_HANDLE rsp_handle, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *param)
{
  datx_psp_t *rsp = datx_cell_get(rsp_handle, DATX_RSP);
  if (rsp == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (mask & DAT_RSP_FIELD_IA_HANDLE)
    param->ia_handle = rsp->ia->cell;
  if (mask & DAT_RSP_FIELD_CONN_QUAL)
    param->conn_qual = rsp->qual;
  if (mask & DAT_RSP_FIELD_EVD_HANDLE)
    param->evd_handle = rsp->evd->cell;
  if (mask & DAT_RSP_FIELD_EP_HANDLE)
    param->ep_handle = rsp->ep;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_rsp_query(DAT_RSP_HANDLE rsp_handle, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *param)
{
  DATX_RETURN_HELD(rsp_handle, DATX_RSP, rsp_query_on_held(rsp_handle, mask, param));
}

DAT_RETURN
datx_rsp_free(DAT_RSP_HANDLE rsp_handle)
{
  /* The request that consumes the RSP frees it too (datx_cr_arrive):
   * whichever retires the cell first frees it, under the adapter's lock
   * that the request's lookup takes; held until then, the RSP cannot go
   * away under us. */
  datx_cell_t *cell = datx_cell_hold(rsp_handle, DATX_RSP);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP);
  datx_psp_t *rsp = cell->object;
  g_mutex_lock(&rsp->ia->lock);
  datx_cell_put(cell);
  /* Waits out a dat_rsp_query; neither it nor this takes the lock. */
  datx_retire_t r = datx_cell_retire_wait(cell);
  g_mutex_unlock(&rsp->ia->lock);
  if (r != DATX_RETIRED)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP);
  it_status_t st = it_listen_free(rsp->it);
  if (st != IT_SUCCESS)
    g_warning("DAT RSP %u: it_listen_free of its listen point failed (%s): its port may stay "
              "taken until the IA closes", rsp->cell->id, itx_status_name(st));
  sp_destroy(rsp);
  return DAT_SUCCESS;
}

/* Refuses a request no service point takes: a connection request with a
 * reject, a datagram one with a reply naming no EP. */
static void
cr_refuse(const it_event_t *ev)
{
  if (ev->event_number == IT_CM_REQ_UD_SERVICE_REQUEST_EVENT) {
    it_remote_ep_info_t none = { 0 };
    it_ud_service_reply(ev->ud_svc_request.ud_svc_req_id, IT_UD_SVC_ID_NOT_SUPPORTED, none, NULL, 0);
  } else {
    it_reject(ev->conn_req.cn_est_id, NULL, 0);
  }
}

datx_cell_t *
datx_cr_arrive(datx_ia_t *ia, const it_event_t *ev, DAT_HANDLE *sp, DAT_CONN_QUAL *qual_out)
{
  gboolean ud = ev->event_number == IT_CM_REQ_UD_SERVICE_REQUEST_EVENT;
  const it_conn_qual_t *cq = ud ? &ev->ud_svc_request.conn_qual : &ev->conn_req.conn_qual;
  const it_net_addr_t *source = ud ? &ev->ud_svc_request.source_addr : &ev->conn_req.source_addr;
  uint16_t port = ntohs(cq->conn_qual.port);
  datx_cell_t *sp_cell = NULL, *rsp_ep = NULL;
  DAT_CONN_QUAL qual = 0;
  gboolean make_ep = FALSE;
  /* Under the adapter's lock, a PSP found is held (dat_psp_free waits for
   * it).  An RSP serves one request (DAT 2.0 6.4.3): the first marks it
   * served, a later one finds no service point.  It keeps its IT-API
   * listen point, whose freeing would take the pending request with it,
   * until dat_rsp_free; the event names it, as DAPL's does and dapltest -r
   * checks (dat.h says the event names none, the RSP being destroyed with
   * the request; here the consumer frees it). */
  g_mutex_lock(&ia->lock);
  for (GList *l = ia->psps; l != NULL; l = l->next) {
    datx_psp_t *p = l->data;
    if (qual_port(p->qual) != port)
      continue;
    if (p->ep != NULL ? !p->served && datx_cell_get(p->cell, DATX_RSP) != NULL
                      : datx_cell_hold(p->cell, (datx_type_t) p->cell->type) != NULL) {
      sp_cell = p->cell;
      qual = p->qual;
      rsp_ep = p->ep;
      p->served = p->ep != NULL;
      make_ep = p->ep == NULL && p->flags == DAT_PSP_PROVIDER_FLAG;
    }
    break;
  }
  g_mutex_unlock(&ia->lock);
  if (sp_cell == NULL) {
    g_message("DAT IA %s: a %s request for port %u, which no service point serves, is "
              "rejected", ia->provider->info.ia_name, ud ? "datagram service" : "connection", port);
    cr_refuse(ev);
    return NULL;
  }
  datx_cr_t *cr = g_new0(datx_cr_t, 1);
  cr->ia = ia;
  cr->qual = qual;
  cr->local_ep = rsp_ep;
  cr->remote.sin_family = AF_INET;
  if (source->addr_type == IT_IPV4)
    cr->remote.sin_addr = source->addr.ipv4;
  gboolean ok = TRUE;
  if (ud) {
    ok = datx_ud_request_parse(&ev->ud_svc_request, cr);
  } else {
    const it_conn_request_event_t *req = &ev->conn_req;
    cr->cn_est_id = req->cn_est_id;
    if (req->private_data_present)
      memcpy(cr->pdata, req->private_data, sizeof(cr->pdata));
    cr->pdata_size = req->private_data_present ? ia->connect_pdata_len : 0;
  }
  /* DAT 2.0 (DAT_PSP_PROVIDER_FLAG): the provider makes the EP the
   * request is accepted on; the CR names it (dat_cr_query's
   * local_ep_handle) until the consumer configures it (dat_ep_modify).
   * A connection's EP only: a datagram exchange has none. */
  if (ok && make_ep && !ud) {
    cr->local_ep = datx_ep_new_tentative(ia);
    cr->provider_ep = cr->local_ep != NULL;
    ok = cr->provider_ep;
  }
  gboolean framed = !ud || cr->ud;
  cr->cell = ok ? datx_cell_new(&ia->provider->dat, DATX_CR, cr, ia) : NULL;
  if (cr->cell == NULL) {
    if (!framed)
      g_message("DAT IA %s: a datagram service request for port %u carries no DAT provider's "
                "header (no requesting EP named): rejected; the requester must be a DAT "
                "provider over IT-API", ia->provider->info.ia_name, port);
    else
      g_message("DAT IA %s: no handle left for a connection request to port %u (or for its "
                "provider-made EP): rejected; free unused DAT objects", ia->provider->info.ia_name,
                port);
    cr_refuse(ev);
    if (cr->provider_ep)
      datx_ep_free(cr->local_ep);
    g_free(cr);
    cr = NULL;
  }
  *qual_out = qual;
  *sp = sp_cell;
  if (rsp_ep == NULL)
    datx_cell_put(sp_cell);
  return cr != NULL ? cr->cell : NULL;
}

static DAT_RETURN
cr_query_on_held(DAT_CR_HANDLE cr_handle, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *param)
{
  datx_cr_t *cr = datx_cell_get(cr_handle, DATX_CR);
  if (cr == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (mask & DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR)
    param->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR) &cr->remote;
  if (mask & DAT_CR_FIELD_REMOTE_PORT_QUAL)
    param->remote_port_qual = 0; /* IT-API does not deliver the requester's port */
  if (mask & DAT_CR_FIELD_PRIVATE_DATA_SIZE)
    param->private_data_size = (DAT_COUNT) cr->pdata_size;
  if (mask & DAT_CR_FIELD_PRIVATE_DATA)
    param->private_data = cr->pdata;
  if (mask & DAT_CR_FIELD_LOCAL_EP_HANDLE)
    param->local_ep_handle = cr->local_ep;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_cr_query(DAT_CR_HANDLE cr_handle, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *param)
{
  DATX_RETURN_HELD(cr_handle, DATX_CR, cr_query_on_held(cr_handle, mask, param));
}

/* The CR is answered or handed off: its handle dies, and the EP the
 * provider made for it goes unless @p kept names it (the EP accepted on). */
static void
cr_done(datx_cr_t *cr, DAT_EP_HANDLE kept)
{
  if (cr->provider_ep && cr->local_ep != kept)
    datx_ep_free(cr->local_ep);
  datx_cell_kill(cr->cell, cr->ia);
  g_free(cr);
}

DAT_RETURN
datx_cr_accept(DAT_CR_HANDLE cr_handle, DAT_EP_HANDLE ep_handle, DAT_COUNT pdata_size,
               const DAT_PVOID pdata)
{
  datx_cell_t *cr_cell = datx_cell_hold(cr_handle, DATX_CR);
  if (cr_cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
  datx_cr_t *cr = cr_cell->object;
  /* An RSP's request is accepted on the RSP's endpoint when none is named. */
  datx_cell_t *ep_cell = datx_cell_hold(ep_handle != DAT_HANDLE_NULL ? ep_handle : cr->local_ep, DATX_EP);
  datx_ep_t *ep = ep_cell != NULL ? ep_cell->object : NULL;
  DAT_RETURN ret = DAT_SUCCESS;
  size_t limit = cr->ud ? MIN(cr->ia->ud_rep_pdata_len, (size_t) IT_MAX_PRIV_DATA) - DATX_UD_HDR_LEN
                       : cr->ia->accept_pdata_len;
  /* A datagram request is served by a datagram EP, a connection by an RC one. */
  if (ep == NULL || ep->ia != cr->ia || ep->ud != cr->ud)
    ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  else if (ep->it == IT_NULL_HANDLE)
    ret = DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFTENTATIVE);
  else if (pdata_size < 0 || (size_t) pdata_size > limit || (pdata_size > 0 && pdata == NULL))
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  datx_cell_put(cr_cell);
  /* One of a racing accept and reject takes the CR; the other finds it gone. */
  if (ret == DAT_SUCCESS && datx_cell_retire_wait(cr_cell) != DATX_RETIRED)
    ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
  if (ret != DAT_SUCCESS)
    goto out_put_ep;
  if (cr->ud) {
    ret = datx_ud_accept(cr, ep, pdata, (size_t) pdata_size);
    if (ret != DAT_SUCCESS)
      datx_cell_revive(cr_cell);
    else
      cr_done(cr, ep_cell);
    goto out_put_ep;
  }
  ep->remote = cr->remote;
  ep->local_qual = cr->qual;
  ep->active = FALSE;
  it_status_t st = it_ep_accept(ep->it, cr->cn_est_id, pdata, (size_t) pdata_size);
  if (st != IT_SUCCESS) {
    /* Not accepted: the CR stays for another accept or a reject. */
    datx_cell_revive(cr_cell);
    ret = datx_status(st, DAT_INVALID_HANDLE_EP);
    goto out_put_ep;
  }
  cr_done(cr, ep->cell);
out_put_ep:
  if (ep_cell != NULL)
    datx_cell_put(ep_cell);
  return ret;
}

DAT_RETURN
datx_cr_reject(DAT_CR_HANDLE cr_handle, DAT_COUNT pdata_size, const DAT_PVOID pdata)
{
  datx_cell_t *cell = datx_cell_hold(cr_handle, DATX_CR);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
  datx_cr_t *cr = cell->object;
  /* DAPL's framing (DATX_REJECT_HDR_LEN), where the interface has room. */
  size_t hdr = cr->ia->reject_pdata_len >= DATX_REJECT_HDR_LEN ? DATX_REJECT_HDR_LEN : 0;
  size_t limit = cr->ia->reject_pdata_len;
  if (cr->ud) {
    hdr = DATX_UD_HDR_LEN;
    limit = MIN(cr->ia->ud_rep_pdata_len, (size_t) IT_MAX_PRIV_DATA);
  }
  gboolean ok = pdata_size >= 0 && (size_t) pdata_size + hdr <= limit &&
                (pdata_size == 0 || pdata != NULL);
  datx_cell_put(cell);
  if (!ok)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (datx_cell_retire_wait(cell) != DATX_RETIRED)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
  if (cr->ud) {
    it_status_t st = datx_ud_reject(cr, pdata, (size_t) pdata_size);
    cr_done(cr, DAT_HANDLE_NULL);
    return datx_status(st, DAT_INVALID_HANDLE_CR);
  }
  unsigned char buf[IT_MAX_PRIV_DATA];
  const unsigned char version[DATX_REJECT_HDR_LEN] = { DAT_VERSION_MAJOR, DAT_VERSION_MINOR, 2, 0 };
  memcpy(buf, version, hdr);
  if (pdata_size > 0)
    memcpy(buf + hdr, pdata, (size_t) pdata_size);
  it_status_t st = it_reject(cr->cn_est_id, buf, hdr + (size_t) pdata_size);
  DAT_CONN_QUAL qual = cr->qual;
  cr_done(cr, DAT_HANDLE_NULL);
  if (st == IT_ERR_INVALID_CN_EST_ID) {
    /* The CR was valid until now: its requester gave the request up
     * (dat_ep_disconnect while pending, or its end went away).  What the
     * reject was for is done, and the handle is consumed as usual. */
    g_debug("DAT CR on qualifier %" G_GUINT64_FORMAT ": the requester withdrew the request "
            "before the reject", (guint64) qual);
    return DAT_SUCCESS;
  }
  return datx_status(st, DAT_INVALID_HANDLE_CR);
}

DAT_RETURN
datx_cr_handoff(DAT_CR_HANDLE cr_handle, DAT_CONN_QUAL handoff)
{
  datx_cell_t *cell = datx_cell_hold(cr_handle, DATX_CR);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
  datx_cr_t *cr = cell->object;
  gboolean ud = cr->ud;
  datx_cell_put(cell);
  /* IT-API hands off connection requests only: a datagram service
   * request cannot be, and the CR stays. */
  if (ud) {
    g_message("DAT CR %u on %s: a datagram service request cannot be handed off; accept or "
              "reject it", cell->id, cr->ia->provider->info.ia_name);
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
  }
  /* One of a racing accept, reject and handoff takes the CR. */
  if (datx_cell_retire_wait(cell) != DATX_RETIRED)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
  /* IT-API hands the request to the listen point on the qualifier's port,
   * whose CR EVD then gets it as a new request (datx_cr_arrive): a new CR
   * naming that service point. */
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(qual_port(handoff));
  it_status_t st = it_handoff(&q, 0, cr->cn_est_id);
  if (st == IT_ERR_INVALID_CONN_QUAL) {
    /* DAT 2.0 (dat_cr_handoff): a qualifier no service point of the IA
     * serves, or the one holding the request, is an invalid parameter;
     * the CR stays for an accept, a reject or another handoff. */
    g_message("DAT CR %u on %s: no other service point listens on qualifier %llu (port %u) to "
              "hand the request to", cell->id, cr->ia->provider->info.ia_name,
              (unsigned long long) handoff, qual_port(handoff));
    datx_cell_revive(cell);
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  }
  /* Handed over, or gone (withdrawn by the peer): the CR is used up. */
  cr_done(cr, DAT_HANDLE_NULL);
  return datx_status(st, DAT_INVALID_HANDLE_CR);
}
