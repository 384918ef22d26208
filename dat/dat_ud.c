/*
 * dat/: DAT's IB unreliable-datagram extension (dat_ib_extensions.h,
 * version 2.0.9) over IT-API's datagram service.
 *
 * An EP made with DAT_IB_SERVICE_TYPE_UD is an IT-API UD endpoint whose
 * Q_Key is DATX_UD_QKEY (DAPL's).  Its dat_ep_connect is a datagram
 * service request (it_ud_service_request, IB SIDR) to the qualifier's
 * service point; the reply names the serving EP (its QPN) and comes back
 * as DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED of type DAT_IB_UD_REMOTE_AH,
 * carrying an address handle made from the request's path.  The serving
 * side sees DAT_IB_UD_CONNECTION_REQUEST_EVENT; its dat_cr_accept replies
 * with its EP and gets DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED of type
 * DAT_IB_UD_PASSIVE_REMOTE_AH, the AH back to the requester, on the EP's
 * connection EVD (its software stream: IT-API raises no event for a
 * reply sent).  DAT_IB_ADDR_HANDLE::ah is the handle of an AH object
 * (a cell, like every handle here): dat_ib_post_send_ud and
 * dat_ib_ud_ah_free refuse one that is not live, without reading it.  An
 * AH belongs to the EP whose event gave it, as DAPL's: the EP's free
 * frees those the consumer did not.
 * Sends complete as DAT_IB_DTO_EVENT / DAT_IB_DTO_SEND_UD, receives as
 * DAT_IB_DTO_RECV_UD, the 40-byte GRH in front of the payload and
 * counted in the length, as on InfiniBand.
 *
 * IT-API's request event names no requesting endpoint and neither the
 * request nor the reply carries the private data's length, so both carry
 * a frame (datx_ud_hdr_t) before the consumer's bytes.  The replies go to
 * a dispatcher of the IA that a thread of the provider reads
 * (ud_thread_main), which sends again a request nobody serves yet and
 * posts each reply's event on the EP's connection EVD.  DAPL's UD "CM"
 * object is the reply's private data, which the event's context names
 * until dat_ib_ud_cm_free or the EP's free.
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#include <arpa/inet.h>
#include <string.h>

/* The frame in front of the consumer's private data of a request and a reply. */
typedef struct {
  uint8_t magic;   /* DATX_UD_MAGIC */
  uint8_t version; /* DATX_UD_VERSION */
  uint8_t len;     /* bytes of the consumer's private data that follow */
  uint8_t reserved;
  uint32_t qpn_be; /* the sending EP's identifier, big-endian */
} datx_ud_hdr_t;
G_STATIC_ASSERT(sizeof(datx_ud_hdr_t) == DATX_UD_HDR_LEN);
#define DATX_UD_MAGIC 0xd5
#define DATX_UD_VERSION 1

/* A service request of a datagram EP awaiting its reply. */
typedef struct {
  it_ud_svc_req_handle_t it;  /* its IT-API handle (consumer context: the EP's cell) */
  struct sockaddr_in remote;  /* the IA asked */
  DAT_CONN_QUAL qual;         /* the qualifier asked */
  gint64 deadline;            /* monotonic µs until which one nobody serves is sent again; 0: never */
  guint tries;                /* sends after the first */
} datx_ud_req_t;

static size_t
ud_hdr_put(unsigned char *buf, uint32_t qpn, const void *pdata, size_t len)
{
  datx_ud_hdr_t h = { .magic = DATX_UD_MAGIC, .version = DATX_UD_VERSION, .len = (uint8_t) len,
                      .qpn_be = htonl(qpn) };
  memcpy(buf, &h, sizeof(h));
  if (len > 0)
    memcpy(buf + sizeof(h), pdata, len);
  return sizeof(h) + len;
}

/* The frame of @p buf (@p avail bytes received at most): FALSE when it is
 * not ours or claims more bytes than arrived. */
static gboolean
ud_hdr_get(const unsigned char *buf, size_t avail, uint32_t *qpn, size_t *len)
{
  datx_ud_hdr_t h;
  if (avail < sizeof(h))
    return FALSE;
  memcpy(&h, buf, sizeof(h));
  if (h.magic != DATX_UD_MAGIC || h.version != DATX_UD_VERSION || h.len > avail - sizeof(h))
    return FALSE;
  *qpn = ntohl(h.qpn_be);
  *len = h.len;
  return TRUE;
}

DAT_RETURN
datx_ud_ep_create(datx_ep_t *ep, it_evd_handle_t req, it_evd_handle_t recv)
{
  datx_ia_t *ia = ep->ia;
  DAT_EP_ATTR *a = &ep->attr;
  if (!ia->ud) {
    g_message("DAT EP on %s: a datagram EP (DAT_IB_SERVICE_TYPE_UD) asked for, but IT-API "
              "interface %s has no datagram service (iWARP has none): use an InfiniBand one",
              ia->provider->info.ia_name, ia->provider->it_name);
    return DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
  }
  if (ep->srq != NULL) {
    g_message("DAT EP on %s: IT-API's datagram EPs take no SRQ", ia->provider->info.ia_name);
    return DATX_ERR(DAT_MODEL_NOT_SUPPORTED, 0);
  }
  /* An application written for a larger path MTU (dtestcm -u asks 2048
   * bytes; rxe on a 1500-byte link carries 1024) runs with what one
   * datagram holds: the EP is made with that, dat_ep_query says so, and
   * a longer Send completes in error. */
  if (a->max_message_size > ia->max_ud_send_len) {
    if (g_atomic_int_compare_and_exchange(&ia->ud_clamp_said, 0, 1))
      g_message("DAT EP on %s: a datagram EP's max_message_size of %u is more than the %zu bytes "
                "of one datagram of %s: its EPs get %zu (said once per IA)",
                ia->provider->info.ia_name, (unsigned) a->max_message_size, ia->max_ud_send_len,
                ia->provider->it_name, ia->max_ud_send_len);
    a->max_message_size = ia->max_ud_send_len;
  }
  it_ep_attributes_t it_attr;
  datx_ep_it_attr_init(ep, ia->max_ud_send_len, &it_attr);
  it_attr.srv.ud.ep_info.ud_ep_key = DATX_UD_QKEY;
  it_status_t st = it_ep_ud_create(ep->pz->it, req, recv, &it_attr, 0, &ep->it);
  if (st != IT_SUCCESS) {
    g_message("DAT EP on %s: it_ep_ud_create failed: %s", ia->provider->info.ia_name,
              itx_status_name(st));
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  }
  it_ep_param_t p;
  st = it_ep_query(ep->it, IT_EP_PARAM_ALL, &p);
  if (st != IT_SUCCESS) {
    it_ep_free(ep->it);
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  }
  ep->ud = TRUE;
  ep->ud_id = p.attr.srv.ud.ep_info.ud_ep_id;
  g_atomic_int_inc(&ia->ud_eps);
  a->max_message_size = (DAT_SEG_LENGTH) it_attr.max_dto_payload_size;
  a->max_rdma_size = 0;
  a->max_rdma_read_in = a->max_rdma_read_out = 0;
  a->max_rdma_read_iov = a->max_rdma_write_iov = 0;
  return DAT_SUCCESS;
}

/* Frees an AH whose cell is retired. */
static void
ud_ah_destroy(datx_ah_t *ah)
{
  it_status_t st = it_address_handle_free(ah->it);
  if (st != IT_SUCCESS)
    g_warning("DAT AH %u: it_address_handle_free failed: %s", ah->cell->id, itx_status_name(st));
  datx_cell_unuse(ah->pz->cell);
  datx_cell_kill(ah->cell, ah->ia);
  g_free(ah);
}

/* Takes @p cell off its EP's AHs (the EP held or retired). */
static void
ud_ah_unlist(datx_ep_t *ep, datx_cell_t *cell)
{
  g_mutex_lock(&ep->lock);
  if (ep->ud_ahs != NULL)
    g_ptr_array_remove_fast(ep->ud_ahs, cell);
  g_mutex_unlock(&ep->lock);
}

void
datx_ud_ep_clear(datx_ep_t *ep)
{
  if (ep->ud)
    g_atomic_int_dec_and_test(&ep->ia->ud_eps);
  if (ep->ud_cms != NULL)
    g_ptr_array_free(ep->ud_cms, TRUE);
  ep->ud_cms = NULL;
  if (ep->ud_reqs != NULL) {
    for (guint i = 0; i < ep->ud_reqs->len; i++)
      it_ud_service_request_handle_free(((datx_ud_req_t *) g_ptr_array_index(ep->ud_reqs, i))->it);
    g_ptr_array_free(ep->ud_reqs, TRUE);
    ep->ud_reqs = NULL;
  }
  /* DAPL frees the AHs of an EP with it (dat_ib_extensions.h: an AH is
   * freed before its EP); those the consumer did not free go now.  A free
   * racing this one holds the EP, which was waited out. */
  g_mutex_lock(&ep->lock);
  GPtrArray *ahs = ep->ud_ahs;
  ep->ud_ahs = NULL;
  g_mutex_unlock(&ep->lock);
  for (guint i = 0; ahs != NULL && i < ahs->len; i++) {
    datx_cell_t *cell = g_ptr_array_index(ahs, i);
    if (datx_cell_retire_wait(cell) == DATX_RETIRED)
      ud_ah_destroy(cell->object);
  }
  if (ahs != NULL)
    g_ptr_array_free(ahs, TRUE);
}

static gpointer ud_thread_main(gpointer data);

/* The IA's reply dispatcher and the thread taking its replies, made at
 * its first datagram connect. */
static it_status_t
ud_replies_start(datx_ia_t *ia)
{
  it_status_t st = IT_SUCCESS;
  g_mutex_lock(&ia->lock);
  /* An abrupt close racing a connect: no thread after its join. */
  if (ia->ud_closing)
    st = IT_ERR_INVALID_IA;
  else if (ia->ud_reply_evd == IT_NULL_HANDLE) {
    st = it_evd_create(ia->it, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4096, 1,
                       IT_NULL_HANDLE, &ia->ud_reply_evd, NULL);
    if (st == IT_SUCCESS)
      ia->ud_thread = g_thread_new("dat-ud-replies", ud_thread_main, ia);
    else
      g_message("DAT IA %s: the dispatcher of datagram service replies: it_evd_create failed: %s",
                ia->provider->info.ia_name, itx_status_name(st));
  }
  g_mutex_unlock(&ia->lock);
  return st;
}

void
datx_ud_ia_close(datx_ia_t *ia)
{
  g_mutex_lock(&ia->lock);
  g_atomic_int_set(&ia->ud_closing, 1);
  GThread *t = ia->ud_thread;
  ia->ud_thread = NULL;
  g_mutex_unlock(&ia->lock);
  if (t != NULL)
    g_thread_join(t);
}

DAT_RETURN
datx_ud_connect(datx_ep_t *ep, const it_path_t *path, const it_conn_qual_t *q,
                const struct sockaddr_in *remote, const void *pdata, size_t len, gint64 deadline)
{
  if (len + DATX_UD_HDR_LEN > MIN(ep->ia->ud_req_pdata_len, (size_t) IT_MAX_PRIV_DATA))
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
  it_status_t st = ud_replies_start(ep->ia);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  unsigned char buf[IT_MAX_PRIV_DATA];
  size_t n = ud_hdr_put(buf, ep->ud_id, pdata, len);
  datx_ud_req_t *r = g_new0(datx_ud_req_t, 1);
  r->remote = *remote;
  r->qual = ep->remote_qual;
  r->deadline = deadline;
  st = it_ud_service_request_handle_create(q, ep->ia->ud_reply_evd, path, buf, n, &r->it);
  if (st != IT_SUCCESS) {
    g_free(r);
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  }
  it_context_t ctx = { .ptr = ep->cell };
  it_set_consumer_context(r->it, ctx);
  /* Listed before it is sent: the reply may be translated at once. */
  g_mutex_lock(&ep->lock);
  if (ep->ud_reqs == NULL)
    ep->ud_reqs = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(ep->ud_reqs, r);
  g_mutex_unlock(&ep->lock);
  st = it_ud_service_request(r->it);
  if (st != IT_SUCCESS) {
    g_mutex_lock(&ep->lock);
    it_ud_service_request_handle_free(r->it);
    g_ptr_array_remove_fast(ep->ud_reqs, r);
    g_mutex_unlock(&ep->lock);
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  }
  return DAT_SUCCESS;
}

/* An AH on @p ep's zone along @p path, which it uses until dat_ib_ud_ah_free. */
static datx_cell_t *
ud_ah_new(datx_ep_t *ep, const it_path_t *path)
{
  datx_pz_t *pz = datx_cell_use(ep->pz->cell, DATX_PZ);
  if (pz == NULL)
    return NULL;
  datx_ah_t *ah = g_new0(datx_ah_t, 1);
  ah->ia = ep->ia;
  ah->pz = pz;
  ah->ep = ep;
  it_status_t st = it_address_handle_create(pz->it, path, 0, &ah->it);
  if (st != IT_SUCCESS) {
    g_message("DAT EP %u: it_address_handle_create for its peer failed: %s", ep->cell->id,
              itx_status_name(st));
    goto err_unuse;
  }
  ah->cell = datx_cell_new(&ep->ia->provider->dat, DATX_AH, ah, ep->ia);
  if (ah->cell == NULL)
    goto err_free_ah;
  g_mutex_lock(&ep->lock);
  if (ep->ud_ahs == NULL)
    ep->ud_ahs = g_ptr_array_new();
  g_ptr_array_add(ep->ud_ahs, ah->cell);
  g_mutex_unlock(&ep->lock);
  return ah->cell;

err_free_ah:
  it_address_handle_free(ah->it);
err_unuse:
  datx_cell_unuse(pz->cell);
  g_free(ah);
  return NULL;
}

/* The extension data of a UD connection event about @p ah (NULL: none). */
static void
ud_conn_ext(DAT_EVENT *out, DAT_IB_EXT_TYPE type, datx_cell_t *ah, uint32_t qpn,
            const struct sockaddr_in *remote)
{
  DAT_IB_EXTENSION_EVENT_DATA *x = (DAT_IB_EXTENSION_EVENT_DATA *) out->event_extension_data;
  G_STATIC_ASSERT(sizeof(struct sockaddr_in) <= sizeof(x->remote_ah.ia_addr));
  x->type = type;
  x->status = ah != NULL ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
  x->remote_ah.ah = (struct ibv_ah *) ah;
  x->remote_ah.qpn = qpn;
  memcpy(&x->remote_ah.ia_addr, remote, sizeof(*remote));
  x->context.as_ptr = NULL;
}

/* The DAT event of a datagram service reply, for @p ep's connection EVD:
 * DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED with the remote AH, or the
 * reject or error event; DATX_DROPPED when sent again or its EP is gone. */
static DAT_RETURN
ud_reply_translate(const it_ud_svc_reply_event_t *in, DAT_EVENT *out)
{
  it_context_t ctx;
  if (it_get_consumer_context(in->ud_svc, &ctx) != IT_SUCCESS)
    return DATX_DROPPED;
  /* Held: dat_ep_free waits for the translation, which reads its requests. */
  datx_cell_t *held = datx_cell_hold(ctx.ptr, DATX_EP);
  if (held == NULL)
    return DATX_DROPPED;
  datx_ep_t *ep = held->object;
  datx_ud_req_t *r = NULL;
  g_mutex_lock(&ep->lock);
  for (guint i = 0; ep->ud_reqs != NULL && i < ep->ud_reqs->len && r == NULL; i++)
    if (((datx_ud_req_t *) g_ptr_array_index(ep->ud_reqs, i))->it == in->ud_svc)
      r = g_ptr_array_index(ep->ud_reqs, i);
  g_mutex_unlock(&ep->lock);
  if (r == NULL) {
    datx_cell_put(held);
    return DATX_DROPPED;
  }
  /* Nobody serves the qualifier yet: a service point a moment late is
   * waited for, as a reliable connect's is (datx_ep_connect_retry). */
  if (in->status == IT_UD_SVC_ID_NOT_SUPPORTED && r->deadline != 0 &&
      g_get_monotonic_time() < r->deadline) {
    if (r->tries++ == 0)
      g_debug("DAT EP %u: nobody serves qualifier %" G_GUINT64_FORMAT " yet: asking again until "
              "the connect's timeout or ITAPI_DAT_CONNECT_RETRY_MS", ep->cell->id, (guint64) r->qual);
    g_usleep(1000u << MIN(r->tries - 1, 5u));
    if (it_ud_service_request(r->it) == IT_SUCCESS) {
      datx_cell_put(held);
      return DATX_DROPPED;
    }
  }
  struct sockaddr_in remote = r->remote;
  g_mutex_lock(&ep->lock);
  it_ud_service_request_handle_free(r->it);
  g_ptr_array_remove_fast(ep->ud_reqs, r);
  g_mutex_unlock(&ep->lock);

  DAT_CONNECTION_EVENT_DATA *d = &out->event_data.connect_event_data;
  d->ep_handle = ep->cell;
  d->private_data = NULL;
  d->private_data_size = 0;
  if (in->status == IT_UD_SVC_EP_INFO_VALID) {
    datx_cell_t *ah = ud_ah_new(ep, &in->dst_path);
    out->event_number = ah != NULL ? (DAT_EVENT_NUMBER) DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED
                                   : (DAT_EVENT_NUMBER) DAT_IB_UD_CONNECTION_ERROR_EVENT;
    ud_conn_ext(out, ah != NULL ? DAT_IB_UD_REMOTE_AH : DAT_IB_UD_CONNECT_ERROR, ah,
                in->ep_info.ud_ep_id, &remote);
    if (ah != NULL) {
      ep->remote = remote;
      g_atomic_int_set(&ep->established, 1);
    }
  } else if (in->status == IT_UD_SVC_REQ_REJECTED || in->status == IT_UD_SVC_ID_NOT_SUPPORTED) {
    /* Refused by the peer's consumer, or by its IA for want of a service point. */
    out->event_number = (DAT_EVENT_NUMBER) DAT_IB_UD_CONNECTION_REJECT_EVENT;
    ud_conn_ext(out, DAT_IB_UD_CONNECT_REJECT, NULL, 0, &remote);
  } else {
    out->event_number = (DAT_EVENT_NUMBER) DAT_IB_UD_CONNECTION_ERROR_EVENT;
    ud_conn_ext(out, DAT_IB_UD_CONNECT_ERROR, NULL, 0, &remote);
  }
  /* The private data stays until dat_ib_ud_cm_free or the EP's free
   * (DAPL's CM object): several replies may wait in the EVD at once. */
  uint32_t qpn;
  size_t len;
  if (in->private_data_present &&
      ud_hdr_get(in->private_data, MIN(ep->ia->ud_rep_pdata_len, (size_t) IT_MAX_PRIV_DATA), &qpn, &len) &&
      len > 0) {
    void *cm = g_memdup2(in->private_data + DATX_UD_HDR_LEN, len);
    g_mutex_lock(&ep->lock);
    if (ep->ud_cms == NULL)
      ep->ud_cms = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(ep->ud_cms, cm);
    g_mutex_unlock(&ep->lock);
    d->private_data = cm;
    d->private_data_size = (DAT_COUNT) len;
    ((DAT_IB_EXTENSION_EVENT_DATA *) out->event_extension_data)->context.as_ptr = cm;
  }
  datx_cell_put(held);
  return DAT_SUCCESS;
}

/* Posts @p ev, translated, on its EP's connection EVD's software stream. */
static void
ud_post_conn(DAT_EVENT *ev)
{
  datx_cell_t *held = datx_cell_hold(ev->event_data.connect_event_data.ep_handle, DATX_EP);
  datx_ep_t *ep = held != NULL ? held->object : NULL;
  datx_evd_t *evd = ep != NULL ? ep->conn_evd : NULL; /* used by the EP */
  it_status_t st = IT_ERR_INVALID_EVD;
  if (evd != NULL && evd->sevd[DATX_S_SW] != IT_NULL_HANDLE) {
    ev->evd_handle = evd->cell;
    st = it_evd_post_se(evd->sevd[DATX_S_SW], ev);
  }
  if (st != IT_SUCCESS) {
    if (evd != NULL)
      g_warning("DAT EP %u: reporting the reply to its datagram connect on EVD %u failed: %s; "
                "give the connection EVD a longer queue", ep->cell->id, evd->cell->id,
                itx_status_name(st));
    g_free(ev);
  }
  if (held != NULL)
    datx_cell_put(held);
}

/* The IA's thread taking its datagram service replies, so that a request
 * nobody serves yet is sent again whether or not the consumer reads its
 * connection EVD meanwhile (dtestx -u waits for the peer's request
 * first); each reply's DAT event goes to the EP's connection EVD. */
static gpointer
ud_thread_main(gpointer data)
{
  datx_ia_t *ia = data;
  while (!g_atomic_int_get(&ia->ud_closing)) {
    it_event_t ev;
    size_t more;
    it_status_t st = it_evd_wait(ia->ud_reply_evd, 50000, &ev, &more);
    if (st == IT_ERR_TIMEOUT_EXPIRED || st == IT_ERR_INTERRUPT)
      continue;
    if (st != IT_SUCCESS) {
      g_warning("DAT IA %s: waiting for datagram service replies failed: %s; datagram connects "
                "get no answer from now on", ia->provider->info.ia_name, itx_status_name(st));
      break;
    }
    if (ev.event_number != IT_CM_MSG_UD_SERVICE_REPLY_EVENT)
      continue;
    DAT_EVENT *out = g_new0(DAT_EVENT, 1);
    if (ud_reply_translate(&ev.ud_svc_reply, out) == DAT_SUCCESS)
      ud_post_conn(out);
    else
      g_free(out);
  }
  return NULL;
}

gboolean
datx_ud_request_parse(const it_ud_svc_request_event_t *in, datx_cr_t *cr)
{
  uint32_t qpn;
  size_t len;
  if (!in->private_data_present ||
      !ud_hdr_get(in->private_data, MIN(cr->ia->ud_req_pdata_len, (size_t) IT_MAX_PRIV_DATA), &qpn, &len))
    return FALSE;
  cr->ud = TRUE;
  cr->ud_svc_req_id = in->ud_svc_req_id;
  cr->ud_qpn = qpn;
  memcpy(cr->pdata, in->private_data + DATX_UD_HDR_LEN, len);
  cr->pdata_size = len;
  return TRUE;
}

/* The passive side's DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED, on the EP's
 * connection EVD's software stream (datx_evd_create makes one on an IA
 * with datagrams). */
static void
ud_post_passive(datx_ep_t *ep, datx_cell_t *ah, const datx_cr_t *cr)
{
  datx_evd_t *evd = ep->conn_evd; /* used by the EP */
  if (evd == NULL)
    return; /* a private dispatcher nobody reads */
  DAT_EVENT *ev = g_new0(DAT_EVENT, 1);
  ev->event_number = (DAT_EVENT_NUMBER) DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED;
  ev->evd_handle = evd->cell;
  ev->event_data.connect_event_data.ep_handle = ep->cell;
  ud_conn_ext(ev, DAT_IB_UD_PASSIVE_REMOTE_AH, ah, cr->ud_qpn, &cr->remote);
  it_status_t st = evd->sevd[DATX_S_SW] != IT_NULL_HANDLE ? it_evd_post_se(evd->sevd[DATX_S_SW], ev)
                                                          : IT_ERR_INVALID_EVD;
  if (st != IT_SUCCESS) {
    g_warning("DAT EP %u: reporting its accepted datagram request on EVD %u failed: %s; give the "
              "connection EVD a longer queue", ep->cell->id, evd->cell->id, itx_status_name(st));
    g_free(ev);
  }
}

DAT_RETURN
datx_ud_accept(datx_cr_t *cr, datx_ep_t *ep, const void *pdata, size_t len)
{
  datx_ia_t *ia = ep->ia;
  if (len + DATX_UD_HDR_LEN > MIN(ia->ud_rep_pdata_len, (size_t) IT_MAX_PRIV_DATA))
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  /* The AH back to the requester first: without one, the EP could not answer. */
  it_net_addr_t addr = { .addr_type = IT_IPV4 };
  addr.addr.ipv4 = cr->remote.sin_addr;
  it_path_t path;
  size_t npaths = 1, total = 0;
  it_status_t st = it_get_pathinfo(ia->it, 0, &addr, &npaths, &total, &path);
  if (st != IT_SUCCESS)
    return datx_status(st, DAT_INVALID_HANDLE_EP);
  if (npaths == 0)
    return DATX_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
  datx_cell_t *ah = ud_ah_new(ep, &path);
  if (ah == NULL)
    return DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
  unsigned char buf[IT_MAX_PRIV_DATA];
  size_t n = ud_hdr_put(buf, ep->ud_id, pdata, len);
  it_remote_ep_info_t info = { .ud_ep_id = ep->ud_id, .ud_ep_key = DATX_UD_QKEY };
  st = it_ud_service_reply(cr->ud_svc_req_id, IT_UD_SVC_EP_INFO_VALID, info, buf, n);
  if (st != IT_SUCCESS) {
    ud_ah_unlist(ep, ah);
    if (datx_cell_retire_wait(ah) == DATX_RETIRED)
      ud_ah_destroy(ah->object);
    return datx_status(st, DAT_INVALID_HANDLE_CR);
  }
  ep->remote = cr->remote;
  ep->local_qual = cr->qual;
  g_atomic_int_set(&ep->established, 1);
  ud_post_passive(ep, ah, cr);
  return DAT_SUCCESS;
}

it_status_t
datx_ud_reject(datx_cr_t *cr, const void *pdata, size_t len)
{
  unsigned char buf[IT_MAX_PRIV_DATA];
  len = MIN(len, MIN(cr->ia->ud_rep_pdata_len, (size_t) IT_MAX_PRIV_DATA) - DATX_UD_HDR_LEN);
  size_t n = ud_hdr_put(buf, 0, pdata, len);
  it_remote_ep_info_t none = { 0 };
  return it_ud_service_reply(cr->ud_svc_req_id, IT_UD_SVC_REQ_REJECTED, none, buf, n);
}

DAT_RETURN
datx_ud_translate_recv(const it_all_dto_cmpl_event_t *in, DAT_EVENT *out)
{
  DAT_IB_EXTENSION_EVENT_DATA *x = (DAT_IB_EXTENSION_EVENT_DATA *) out->event_extension_data;
  out->event_number = (DAT_EVENT_NUMBER) DAT_IB_DTO_EVENT;
  out->event_data.dto_completion_event_data.operation = (DAT_DTOS) DAT_IB_DTO_RECV_UD;
  x->type = DAT_IB_UD_RECV;
  x->status = in->dto_status == IT_DTO_SUCCESS ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
  x->remote_ah.ah = NULL;
  x->remote_ah.qpn = in->ud_ep_id;
  /* DAPL's consumers (dtestx -u) find the payload 40 bytes in, the GRH's
   * room, and count it in the length: an InfiniBand interface gives it. */
  if (in->dto_status == IT_DTO_SUCCESS && !(in->flags & IT_UD_IB_GRH_PRESENT))
    g_debug("a datagram arrived without a GRH in front: its payload starts the buffer");
  return DAT_SUCCESS;
}

DAT_RETURN
datx_ud_post_send(DAT_EP_HANDLE ep_handle, va_list args)
{
  DAT_COUNT n = va_arg(args, DAT_COUNT);
  const DAT_LMR_TRIPLET *iov = va_arg(args, const DAT_LMR_TRIPLET *);
  const DAT_IB_ADDR_HANDLE *dst = va_arg(args, const DAT_IB_ADDR_HANDLE *);
  DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
  DAT_COMPLETION_FLAGS flags = va_arg(args, DAT_COMPLETION_FLAGS);
  datx_cell_t *held = datx_cell_hold(ep_handle, DATX_EP);
  if (held == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  datx_ep_t *ep = held->object;
  datx_cell_t *ah_cell = NULL;
  DAT_RETURN ret = DAT_SUCCESS;
  if (!ep->ud)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
  /* A stale, foreign or made-up AH is refused before it is read. */
  else if (dst == NULL || (ah_cell = datx_cell_hold(dst->ah, DATX_AH)) == NULL ||
           ((datx_ah_t *) ah_cell->object)->pz != ep->pz)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  it_lmr_triplet_t seg[DATX_MAX_SEGS];
  size_t k = 0;
  uint64_t total = 0;
  if (ret == DAT_SUCCESS)
    ret = datx_segments_of(ep->ia, n, iov, seg, &k, &total);
  if (ret == DAT_SUCCESS) {
    it_dg_remote_ep_addr_t to = { .type = IT_DG_TYPE_IB_UD };
    to.addr.ud.addr = ((datx_ah_t *) ah_cell->object)->it;
    to.addr.ud.ep_info.ud_ep_id = dst->qpn;
    to.addr.ud.ep_info.ud_ep_key = DATX_UD_QKEY;
    it_status_t st = it_post_sendto(ep->it, seg, k, cookie.as_64, datx_dto_flags_of(flags), &to);
    ret = datx_status(st, DAT_INVALID_HANDLE_EP);
  }
  if (ah_cell != NULL)
    datx_cell_put(ah_cell);
  datx_cell_put(held);
  return ret;
}

DAT_RETURN
datx_ud_ah_free(DAT_EP_HANDLE ep_handle, va_list args)
{
  const DAT_IB_ADDR_HANDLE *dst = va_arg(args, const DAT_IB_ADDR_HANDLE *);
  /* Held: the EP's free, which frees the AHs left, waits for this one. */
  datx_cell_t *ep_cell = datx_cell_hold(ep_handle, DATX_EP);
  if (ep_cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  datx_ep_t *ep = ep_cell->object;
  DAT_RETURN ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  datx_cell_t *cell = dst != NULL ? datx_cell_hold(dst->ah, DATX_AH) : NULL;
  datx_ah_t *ah = cell != NULL ? cell->object : NULL;
  gboolean ours = ah != NULL && ah->ep == ep;
  if (cell != NULL)
    datx_cell_put(cell);
  /* Another EP's AH is refused; a send naming it holds it and is waited
   * out; of two racing frees one finds it gone. */
  if (ours && datx_cell_retire_wait(cell) == DATX_RETIRED) {
    ud_ah_unlist(ep, cell);
    ud_ah_destroy(ah);
    ret = DAT_SUCCESS;
  }
  datx_cell_put(ep_cell);
  return ret;
}

DAT_RETURN
datx_ud_cm_free(DAT_EP_HANDLE ep_handle, va_list args)
{
  DAT_CONTEXT cm = va_arg(args, DAT_CONTEXT);
  datx_cell_t *ep_cell = datx_cell_hold(ep_handle, DATX_EP);
  if (ep_cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
  datx_ep_t *ep = ep_cell->object;
  /* NULL: an event that kept nothing (no private data, the passive side).
   * Anything else must be one of the EP's, found before it is freed. */
  DAT_RETURN ret = DAT_SUCCESS;
  if (cm.as_ptr != NULL) {
    g_mutex_lock(&ep->lock);
    if (ep->ud_cms == NULL || !g_ptr_array_remove_fast(ep->ud_cms, cm.as_ptr))
      ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    g_mutex_unlock(&ep->lock);
  }
  datx_cell_put(ep_cell);
  return ret;
}
