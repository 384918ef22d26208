/*
 * dat/: event dispatchers.
 *
 * A DAT EVD may serve several streams (DAT 2.0 6.3.2: the DTO, CR,
 * connection, asynchronous and software flags combine); an IT-API simple
 * dispatcher serves one.  So a DAT EVD holds one IT-API SEVD per stream and,
 * when it has several, an aggregate (AEVD) they feed: wait and dequeue go to
 * the aggregate, which hands out the underlying events.  With one stream the
 * SEVD is used directly.  dat_evd_wait's threshold (DAT 2.0 6.3.2.8: return
 * once that many events are queued, else DAT_TIMEOUT_EXPIRED with none
 * taken) is counted here, as IT-API's aggregate has no threshold and a
 * SEVD's would hand out an event at the timeout: events taken while
 * waiting are held, oldest first, and come out of the EVD before newer
 * ones.
 * Each event is translated when it is dequeued: the IT-API endpoint's
 * consumer context names the DAT endpoint, a connection request becomes a
 * CR object, a software event carries a copy of the consumer's DAT_EVENT.
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#include <string.h>

static const it_event_type_t stream_of[DATX_S_COUNT] = {
  [DATX_S_DTO] = IT_DTO_EVENT_STREAM,
  [DATX_S_CR] = IT_CM_REQ_EVENT_STREAM,
  [DATX_S_CONN] = IT_CM_MSG_EVENT_STREAM,
  [DATX_S_ASYNC] = IT_ASYNC_AFF_EVENT_STREAM,
  [DATX_S_SW] = IT_SOFTWARE_EVENT_STREAM,
};

/* Frees the IT-API dispatchers, the SEVDs before the aggregate they feed;
 * the first failure is returned, and the rest are still freed. */
static it_status_t
evd_release_it(datx_evd_t *evd)
{
  it_status_t first = IT_SUCCESS;
  for (int s = 0; s < DATX_S_COUNT; s++)
    if (evd->sevd[s] != IT_NULL_HANDLE) {
      it_status_t st = it_evd_free(evd->sevd[s]);
      if (st != IT_SUCCESS && first == IT_SUCCESS)
        first = st;
      evd->sevd[s] = IT_NULL_HANDLE;
    }
  if (evd->aevd != IT_NULL_HANDLE) {
    it_status_t st = it_evd_free(evd->aevd);
    if (st != IT_SUCCESS && first == IT_SUCCESS)
      first = st;
    evd->aevd = IT_NULL_HANDLE;
  }
  return first;
}

static DAT_RETURN
evd_create_on_held(DAT_IA_HANDLE ia_handle, DAT_COUNT qlen, DAT_CNO_HANDLE cno, DAT_EVD_FLAGS flags,
                   DAT_EVD_HANDLE *evd_handle)
{
  datx_ia_t *ia = datx_cell_get(ia_handle, DATX_IA);
  if (ia == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
  if (qlen <= 0)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  /* The EVD uses its CNO until detached (datx_cno_attach()): a racing
   * dat_cno_free is refused, or retired the CNO first and this create is
   * refused. */
  datx_cno_t *c = NULL;
  if (cno != DAT_HANDLE_NULL) {
    c = datx_cell_use(cno, DATX_CNO);
    if (c == NULL)
      return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
  }
  const DAT_EVD_FLAGS known = DAT_EVD_SOFTWARE_FLAG | DAT_EVD_CR_FLAG | DAT_EVD_DTO_FLAG |
                              DAT_EVD_CONNECTION_FLAG | DAT_EVD_RMR_BIND_FLAG | DAT_EVD_ASYNC_FLAG;
  DAT_RETURN ret = DAT_SUCCESS;
  if (c != NULL && c->ia != ia)
    ret = DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
  else if (evd_handle == NULL)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
  else if (flags == 0 || (flags & ~known) != 0)
    ret = DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  if (ret != DAT_SUCCESS) {
    if (c != NULL)
      datx_cell_unuse(c->cell);
    return ret;
  }

  datx_evd_t *evd = g_new0(datx_evd_t, 1);
  evd->ia = ia;
  evd->flags = flags;
  evd->qlen = qlen;
  evd->capacity = qlen;
  evd->state = DAT_EVD_STATE_ENABLED | DAT_EVD_STATE_WAITABLE;
  evd->fd = -1;
  /* With a CNO, the dispatcher waited on gets a descriptor for dat_cno_wait. */
  it_evd_flags_t wflags = IT_EVD_OVERFLOW_DEFAULT | (c != NULL ? IT_EVD_CREATE_FD : 0);
  gboolean want[DATX_S_COUNT] = {
    [DATX_S_DTO] = (flags & (DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG)) != 0,
    [DATX_S_CR] = (flags & DAT_EVD_CR_FLAG) != 0,
    [DATX_S_CONN] = (flags & DAT_EVD_CONNECTION_FLAG) != 0,
    [DATX_S_ASYNC] = (flags & DAT_EVD_ASYNC_FLAG) != 0,
    /* An async EVD also carries the events the provider raises itself
     * (srq_drained()), on a software stream the consumer cannot post to;
     * so does a connection EVD of an IA with datagrams (a datagram
     * accept's event, dat_ud.c). */
    [DATX_S_SW] = (flags & (DAT_EVD_SOFTWARE_FLAG | DAT_EVD_ASYNC_FLAG)) != 0 ||
                  ((flags & DAT_EVD_CONNECTION_FLAG) && ia->ud),
  };
  /* One IT-API dispatcher per adapter carries its affiliated asynchronous
   * events: a second async EVD of the IA is served by its software stream
   * alone. */
  int n = 0;
  for (int s = 0; s < DATX_S_COUNT; s++)
    n += want[s];
  it_status_t st = IT_SUCCESS;
  if (n > 1) {
    st = it_evd_create(ia->it, IT_AEVD_NOTIFICATION_EVENT_STREAM, wflags, (size_t) qlen * n, 1,
                       IT_NULL_HANDLE, &evd->aevd, c != NULL ? &evd->fd : NULL);
    if (st != IT_SUCCESS)
      goto err_free;
  }
  evd->cell = datx_cell_new(&ia->provider->dat, DATX_EVD, evd, ia);
  if (evd->cell == NULL) {
    st = IT_ERR_RESOURCES;
    goto err_free;
  }
  for (int s = 0; s < DATX_S_COUNT; s++) {
    if (!want[s])
      continue;
    it_evd_flags_t f = n == 1 ? wflags : IT_EVD_OVERFLOW_DEFAULT;
    int *fd = n == 1 && c != NULL ? &evd->fd : NULL;
    st = it_evd_create(ia->it, stream_of[s], f, (size_t) qlen, 1, evd->aevd, &evd->sevd[s], fd);
    if (st == IT_ERR_ASYNC_AFF_EVD_EXISTS && s == DATX_S_ASYNC)
      continue;
    if (st != IT_SUCCESS)
      goto err_kill;
    it_context_t ctx = { .ptr = evd->cell };
    it_set_consumer_context(evd->sevd[s], ctx);
  }
  for (int s = 0; s < DATX_S_COUNT; s++)
    if (evd->sevd[s] != IT_NULL_HANDLE && evd->waitable == IT_NULL_HANDLE)
      evd->waitable = evd->aevd != IT_NULL_HANDLE ? evd->aevd : evd->sevd[s];
  g_mutex_init(&evd->held_lock);
  g_mutex_init(&evd->cno_lock);
  g_queue_init(&evd->held);
  if (c != NULL)
    datx_cno_attach(evd, c);
  *evd_handle = evd->cell;
  return DAT_SUCCESS;

err_kill:
  datx_cell_kill(evd->cell, ia);
  rsec_sync();  /* a dequeue may have found the cell live (datx_evd_dequeue) */
err_free:
  evd_release_it(evd);
  g_free(evd);
  if (c != NULL)
    datx_cell_unuse(c->cell);
  return datx_status(st, DAT_INVALID_HANDLE_IA);
}

DAT_RETURN
datx_evd_create(DAT_IA_HANDLE ia_handle, DAT_COUNT qlen, DAT_CNO_HANDLE cno, DAT_EVD_FLAGS flags,
                DAT_EVD_HANDLE *evd_handle)
{
  /* Held: dat_ia_close waits for a call on the IA to finish. */
  DATX_RETURN_HELD(ia_handle, DATX_IA, evd_create_on_held(ia_handle, qlen, cno, flags, evd_handle));
}

static DAT_RETURN
evd_query_on_held(DAT_EVD_HANDLE evd_handle, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *param)
{
  datx_evd_t *evd = datx_cell_get(evd_handle, DATX_EVD);
  if (evd == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  if (param == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (mask & DAT_EVD_FIELD_IA_HANDLE)
    param->ia_handle = evd->ia->cell;
  if (mask & DAT_EVD_FIELD_EVD_QLEN)
    param->evd_qlen = g_atomic_int_get(&evd->qlen);
  if (mask & DAT_EVD_FIELD_EVD_STATE)
    param->evd_state = (DAT_EVD_STATE) g_atomic_int_get(&evd->state);
  if (mask & DAT_EVD_FIELD_CNO) {
    g_mutex_lock(&evd->cno_lock);
    param->cno_handle = evd->cno != NULL ? evd->cno->cell : DAT_HANDLE_NULL;
    g_mutex_unlock(&evd->cno_lock);
  }
  if (mask & DAT_EVD_FIELD_EVD_FLAGS)
    param->evd_flags = evd->flags;
  return DAT_SUCCESS;
}

DAT_RETURN
datx_evd_query(DAT_EVD_HANDLE evd_handle, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *param)
{
  DATX_RETURN_HELD(evd_handle, DATX_EVD, evd_query_on_held(evd_handle, mask, param));
}

void
datx_evd_destroy(datx_evd_t *evd)
{
  /* A dequeue that found the EVD before its cell died reads it without a
   * hold: it leaves first. */
  rsec_sync();
  datx_cno_attach(evd, NULL);
  it_status_t st = evd_release_it(evd);
  if (st != IT_SUCCESS)
    g_warning("DAT EVD %u: freeing its IT-API dispatchers failed: %s", evd->cell->id,
              itx_status_name(st));
  g_queue_clear_full(&evd->held, g_free);
  g_mutex_clear(&evd->held_lock);
  g_mutex_clear(&evd->cno_lock);
  datx_cell_kill(evd->cell, evd->ia);
  g_free(evd);
}

DAT_RETURN
datx_evd_free(DAT_EVD_HANDLE evd_handle)
{
  datx_cell_t *cell = datx_cell_hold(evd_handle, DATX_EVD);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  datx_evd_t *evd = cell->object;
  datx_cell_put(cell);
  /* A thread inside dat_evd_wait holds the EVD, and the EPs and service
   * points that deliver to it use it: it is kept, as DAT 2.0 6.3.2.2 has
   * dat_evd_free refuse an EVD in use.  A dequeue, which does not wait,
   * is waited for (datx_evd_destroy()). */
  switch (datx_cell_retire(cell)) {
  case DATX_BUSY:
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
  case DATX_GONE:
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  case DATX_RETIRED:
    break;
  }
  if (evd->ia->async_evd == evd->cell)
    evd->ia->async_evd = DAT_HANDLE_NULL;
  /* Software events still queued own a copy of the consumer's event. */
  if (evd->sevd[DATX_S_SW] != IT_NULL_HANDLE) {
    it_event_t ev;
    while (it_evd_dequeue(evd->sevd[DATX_S_SW], &ev) == IT_SUCCESS)
      g_free(ev.sw.data);
  }
  datx_evd_destroy(evd);
  return DAT_SUCCESS;
}

static datx_cell_t *
ep_cell_of(it_ep_handle_t ep)
{
  it_context_t ctx;
  if (ep == IT_NULL_HANDLE || it_get_consumer_context(ep, &ctx) != IT_SUCCESS)
    return NULL;
  return ctx.ptr;
}

/* ep_cell_of() for a completion of @p evd, through the EVD's last answer:
 * completions mostly name the EP of the one before.  An IT-API handle
 * never names another object once freed, and an EP's cell gives its
 * endpoint while the endpoint lives (datx_cell_it()), so a cell giving
 * @p ep is the one its consumer context names. */
static inline __attribute__((always_inline)) datx_cell_t *
evd_ep_cell_of(datx_evd_t *evd, it_ep_handle_t ep)
{
  datx_cell_t *last = g_atomic_pointer_get(&evd->last_ep);
  if (last != NULL && ep != IT_NULL_HANDLE && datx_cell_it(last) == (uint64_t) (uintptr_t) ep)
    return last;
  datx_cell_t *cell = ep_cell_of(ep);
  if (cell != NULL)
    g_atomic_pointer_set(&evd->last_ep, cell);
  return cell;
}

/* A completion of DAT's IB extension (dat_ib_extensions.h): the
 * DAT_IB_DTO_EVENT, its operation, and the extension data's type. */
static DAT_RETURN
ext_dto(DAT_EVENT *out, DAT_IB_DTOS op, DAT_IB_EXT_TYPE type)
{
  DAT_DTO_COMPLETION_EVENT_DATA *d = &out->event_data.dto_completion_event_data;
  DAT_IB_EXTENSION_EVENT_DATA *x = (DAT_IB_EXTENSION_EVENT_DATA *) out->event_extension_data;
  G_STATIC_ASSERT(sizeof(DAT_IB_EXTENSION_EVENT_DATA) <= sizeof(out->event_extension_data));
  out->event_number = (DAT_EVENT_NUMBER) DAT_IB_DTO_EVENT;
  d->operation = (DAT_DTOS) op;
  x->type = type;
  x->status = d->status == DAT_DTO_SUCCESS ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
  return DAT_SUCCESS;
}

/* @test (datx_ep_imm_done, datx_ep_swallow) of @in's cookie on its EP,
 * held for the call; FALSE when the EP is gone. */
static gboolean
ep_cookie_test(const it_dto_cmpl_event_t *in, gboolean (*test)(datx_ep_t *, uint64_t))
{
  datx_cell_t *held = datx_cell_hold(ep_cell_of(in->ep), DATX_EP);
  if (held == NULL)
    return FALSE;
  gboolean yes = test(held->object, in->cookie);
  datx_cell_put(held);
  return yes;
}

/* A receive of @p in's EP completed to the consumer: one less at the EP
 * (dat_ep_recv_query). */
static void
recv_done(const it_dto_cmpl_event_t *in)
{
  datx_cell_t *held = datx_cell_hold(ep_cell_of(in->ep), DATX_EP);
  if (held == NULL)
    return;
  datx_ep_t *ep = held->object;
  if (ep->srq == NULL)
    g_atomic_int_dec_and_test(&ep->recv_posted);
  datx_cell_put(held);
}

static gboolean
ep_is_ud(datx_ep_t *ep, uint64_t cookie)
{
  (void) cookie;
  return ep->ud;
}

static inline __attribute__((always_inline)) DAT_RETURN
translate_dto(datx_evd_t *evd, const it_event_t *ev, DAT_EVENT *out)
{
  const it_dto_cmpl_event_t *in = &ev->dto_cmpl;
  DAT_DTO_COMPLETION_EVENT_DATA *d = &out->event_data.dto_completion_event_data;
  out->event_number = DAT_DTO_COMPLETION_EVENT;
  d->ep_handle = evd_ep_cell_of(evd, in->ep);
  d->user_cookie.as_64 = in->cookie;
  d->status = G_LIKELY(in->dto_status == IT_DTO_SUCCESS) ? DAT_DTO_SUCCESS : datx_dto_status(in->dto_status);
  d->transfered_length = in->transferred_length;
  d->rmr_context = 0;
  switch (in->event_number) {
  case IT_DTO_SEND_CMPL_EVENT:
    /* dat_ib_extensions.h: a datagram send completes as the extension's.
     * No EP of the IA is one: no hold of the EP per completion. */
    if (g_atomic_int_get(&evd->ia->ud_eps) > 0 && ep_cookie_test(in, ep_is_ud))
      return ext_dto(out, DAT_IB_DTO_SEND_UD, DAT_IB_UD_SEND);
    d->operation = DAT_DTO_SEND;
    break;
  case IT_DTO_RC_RECV_CMPL_EVENT: {
    /* A receive a failed connect try flushed and a retry posted again. */
    if (G_UNLIKELY(in->dto_status == IT_DTO_ERR_FLUSHED) && ep_cookie_test(in, datx_ep_swallow))
      return DATX_DROPPED;
    recv_done(in);
    uint64_t imm;
    if (itx_dto_imm_data(ev, &imm)) {
      /* The peer's RDMA Write with immediate data: its length (InfiniBand)
       * and the 32 bits DAT carries. */
      ((DAT_IB_EXTENSION_EVENT_DATA *) out->event_extension_data)->val.immed.data = (DAT_UINT32) imm;
      return ext_dto(out, DAT_IB_DTO_RECV_IMMED, DAT_IB_RDMA_WRITE_IMMED_DATA);
    }
    d->operation = DAT_DTO_RECEIVE;
    /* A peer's Send with Invalidate unlinked one of our RMRs. */
    if (in->unlinked_mr_handle != IT_NULL_HANDLE &&
        datx_rmr_context_of(in->unlinked_mr_handle, &d->rmr_context))
      d->operation = DAT_DTO_RECEIVE_WITH_INVALIDATE;
    break;
  }
  case IT_DTO_RDMA_WRITE_CMPL_EVENT:
    /* No EP of the IA waits for one: no hold of the EP per completion. */
    if (g_atomic_int_get(&evd->ia->imm_pending) > 0 && ep_cookie_test(in, datx_ep_imm_done))
      return ext_dto(out, DAT_IB_DTO_RDMA_WRITE_IMMED, DAT_IB_RDMA_WRITE_IMMED);
    d->operation = DAT_DTO_RDMA_WRITE;
    break;
  case IT_DTO_FETCH_ADD_CMPL_EVENT: return ext_dto(out, DAT_IB_DTO_FETCH_ADD, DAT_IB_FETCH_AND_ADD);
  case IT_DTO_CMP_SWAP_CMPL_EVENT: return ext_dto(out, DAT_IB_DTO_CMP_SWAP, DAT_IB_CMP_AND_SWAP);
  case IT_DTO_RDMA_READ_CMPL_EVENT: d->operation = DAT_DTO_RDMA_READ; break;
  case IT_RMR_LINK_CMPL_EVENT: return datx_rmr_translate_bind(in, out);
  case IT_DTO_UD_RECV_CMPL_EVENT: return datx_ud_translate_recv(&ev->all_dto_cmpl, out);
  default:
    g_debug("IT-API completion %s has no DAT counterpart yet: dropped",
            itx_event_name(in->event_number));
    return DATX_DROPPED;
  }
  return DAT_SUCCESS;
}

/* InfiniBand raises Last WQE Reached once an EP with an SRQ is in error
 * and takes no more receives from it, and DAPL reports it on the IA's
 * async EVD as DAT_ASYNC_ERROR_EP_BROKEN naming the EP (Debian's dtestsrq
 * waits for it after each disconnection).  IT-API has no such event: the
 * provider raises it when it hands out the end of @p ep's connection. */
static void
srq_drained(datx_ep_t *ep)
{
  datx_cell_t *held = datx_cell_hold(ep->ia->async_evd, DATX_EVD);
  if (held == NULL)
    return;
  datx_evd_t *evd = held->object;
  DAT_EVENT *ev = g_new0(DAT_EVENT, 1);
  ev->event_number = DAT_ASYNC_ERROR_EP_BROKEN;
  ev->evd_handle = evd->cell;
  ev->event_data.asynch_error_event_data.dat_handle = ep->cell;
  ev->event_data.asynch_error_event_data.reason = DAT_EP_TRANSFER_TO_ERROR;
  it_status_t st = evd->sevd[DATX_S_SW] != IT_NULL_HANDLE ? it_evd_post_se(evd->sevd[DATX_S_SW], ev)
                                                          : IT_ERR_INVALID_EVD;
  if (st != IT_SUCCESS) {
    g_warning("DAT EP %u: reporting that its SRQ receives ended on async EVD %u failed: %s; "
              "a consumer waiting for DAT_ASYNC_ERROR_EP_BROKEN will not get it: give the "
              "async EVD a longer queue (dat_ia_open's async_evd_qlen)",
              ep->cell->id, evd->cell->id, itx_status_name(st));
    g_free(ev);
  }
  datx_cell_put(held);
}

static DAT_RETURN
translate_conn(const it_connection_event_t *in, DAT_EVENT *out)
{
  DAT_CONNECTION_EVENT_DATA *d = &out->event_data.connect_event_data;
  datx_cell_t *cell = ep_cell_of(in->ep);
  /* Held: dat_ep_free waits for the copy of the private data to finish. */
  datx_cell_t *held = datx_cell_hold(cell, DATX_EP);
  datx_ep_t *ep = held != NULL ? held->object : NULL;
  d->ep_handle = cell;
  d->private_data_size = 0;
  d->private_data = NULL;
  size_t limit = 0;
  switch (in->event_number) {
  case IT_CM_MSG_CONN_ESTABLISHED_EVENT:
    out->event_number = DAT_CONNECTION_EVENT_ESTABLISHED;
    if (ep != NULL)
      datx_ep_established(ep);
    /* The active side gets the accept's private data; IT-API delivers no
     * length, so the size is the accept's limit (as DAPL reports it). */
    limit = ep != NULL && ep->active ? ep->ia->accept_pdata_len : 0;
    break;
  case IT_CM_MSG_CONN_PEER_REJECT_EVENT:
    out->event_number = DAT_CONNECTION_EVENT_PEER_REJECTED;
    limit = ep != NULL ? ep->ia->reject_pdata_len : 0;
    break;
  case IT_CM_MSG_CONN_NONPEER_REJECT_EVENT:
    /* Nobody listens there (yet): a listener a moment late is waited
     * for, as DAPL's slower address and route resolution would. */
    if (ep != NULL && in->reject_reason_code == IT_CN_REJ_OTHER && datx_ep_connect_retry(ep)) {
      datx_cell_put(held);
      return DATX_DROPPED;
    }
    out->event_number = in->reject_reason_code == IT_CN_REJ_TIMEOUT    ? DAT_CONNECTION_EVENT_TIMED_OUT
                        : in->reject_reason_code == IT_CN_REJ_BAD_PATH ? DAT_CONNECTION_EVENT_UNREACHABLE
                                                                       : DAT_CONNECTION_EVENT_NON_PEER_REJECTED;
    break;
  case IT_CM_MSG_CONN_DISCONNECT_EVENT:
    out->event_number = DAT_CONNECTION_EVENT_DISCONNECTED;
    break;
  case IT_CM_MSG_CONN_BROKEN_EVENT:
    out->event_number = DAT_CONNECTION_EVENT_BROKEN;
    break;
  default:
    g_debug("IT-API connection event %s has no DAT counterpart yet: dropped",
            itx_event_name(in->event_number));
    if (held != NULL)
      datx_cell_put(held);
    return DATX_DROPPED;
  }
  if (ep != NULL && ep->srq != NULL && (out->event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
                                        out->event_number == DAT_CONNECTION_EVENT_BROKEN))
    srq_drained(ep);
  if (ep != NULL && in->private_data_present && limit > 0) {
    memcpy(ep->pdata, in->private_data, MIN(limit, sizeof(ep->pdata)));
    d->private_data = ep->pdata;
    d->private_data_size = (DAT_COUNT) MIN(limit, sizeof(ep->pdata));
    /* A refusal framed as DAPL's providers and this one frame it
     * (DATX_REJECT_HDR_LEN): the consumer's bytes follow the header. */
    if (out->event_number == DAT_CONNECTION_EVENT_PEER_REJECTED &&
        d->private_data_size >= (DAT_COUNT) DATX_REJECT_HDR_LEN &&
        ep->pdata[0] == DAT_VERSION_MAJOR && ep->pdata[1] == DAT_VERSION_MINOR) {
      d->private_data = ep->pdata + DATX_REJECT_HDR_LEN;
      d->private_data_size -= (DAT_COUNT) DATX_REJECT_HDR_LEN;
    }
  }
  if (held != NULL)
    datx_cell_put(held);
  return DAT_SUCCESS;
}

static DAT_RETURN
translate_async(const it_affiliated_event_t *in, DAT_EVENT *out)
{
  DAT_ASYNCH_ERROR_EVENT_DATA *d = &out->event_data.asynch_error_event_data;
  d->reason = 0;
  if (in->event_number == IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE) {
    it_context_t ctx;
    out->event_number = DAT_ASYNC_ERROR_EVD_OVERFLOW;
    d->dat_handle = it_get_consumer_context(in->cause.sevd, &ctx) == IT_SUCCESS ? ctx.ptr : NULL;
    d->reason = DAT_EVD_OVERFLOW_ERROR;
  } else if (in->event_number >= IT_ASYNC_AFF_EP_FAILURE &&
             in->event_number <= IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR) {
    out->event_number = DAT_ASYNC_ERROR_EP_BROKEN;
    d->dat_handle = ep_cell_of(in->cause.ep);
    d->reason = DAT_EP_OTHER_ERROR;
  } else if (in->event_number == IT_ASYNC_AFF_SRQ_LOW_WATERMARK ||
             in->event_number == IT_ASYNC_AFF_SRQ_CATASTROPHIC) {
    /* DAT 2.0 names the SRQ as dat_handle and gives SRQ reasons, but no
     * event number of its own: the catch-all one, the reason says which. */
    it_context_t ctx;
    out->event_number = DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
    d->dat_handle = it_get_consumer_context(in->cause.srq, &ctx) == IT_SUCCESS ? ctx.ptr : NULL;
    d->reason = in->event_number == IT_ASYNC_AFF_SRQ_LOW_WATERMARK ? DAT_SRQ_LOW_WATERMARK_EVENT
                                                                  : DAT_SRQ_TRANSFER_TO_ERROR;
  } else {
    out->event_number = DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
    d->dat_handle = NULL;
  }
  return DAT_SUCCESS;
}

/* @p out cleared and naming @p evd, as every translation starts. */
static inline __attribute__((always_inline)) void
translate_begin(datx_evd_t *evd, DAT_EVENT *out)
{
  /* Cleared in two parts, each small enough for plain stores rather than
   * a string store (a completion's dearest instruction under an emulated
   * CPU). */
  G_STATIC_ASSERT(offsetof(DAT_EVENT, event_extension_data) + sizeof(out->event_extension_data) ==
                  sizeof(DAT_EVENT));
  memset(out, 0, offsetof(DAT_EVENT, event_extension_data));
  memset(out->event_extension_data, 0, sizeof(out->event_extension_data));
  out->evd_handle = evd->cell;
}

/* An event's stream is its number with the low 12 bits cleared. */
static inline it_event_type_t
stream_of_event(const it_event_t *in)
{
  return in->event_number & ~(it_event_type_t) 0xfff;
}

static DAT_RETURN
translate(datx_evd_t *evd, const it_event_t *in, DAT_EVENT *out)
{
  translate_begin(evd, out);
  switch (stream_of_event(in)) {
  case IT_DTO_EVENT_STREAM:
    return translate_dto(evd, in, out);
  case IT_CM_REQ_EVENT_STREAM: {
    DAT_HANDLE sp = NULL;
    DAT_CONN_QUAL qual = 0;
    datx_cell_t *cr = datx_cr_arrive(evd->ia, in, &sp, &qual);
    if (cr == NULL)
      return DATX_DROPPED;
    DAT_CR_ARRIVAL_EVENT_DATA *d = &out->event_data.cr_arrival_event_data;
    out->event_number = in->event_number == IT_CM_REQ_UD_SERVICE_REQUEST_EVENT
                            ? (DAT_EVENT_NUMBER) DAT_IB_UD_CONNECTION_REQUEST_EVENT
                            : DAT_CONNECTION_REQUEST_EVENT;
    d->sp_handle.psp_handle = sp;
    d->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR) &evd->ia->addr;
    d->conn_qual = qual;
    d->cr_handle = cr;
    d->truncate_flag = DAT_FALSE;
    return DAT_SUCCESS;
  }
  case IT_CM_MSG_EVENT_STREAM:
    return translate_conn(&in->conn, out);
  case IT_ASYNC_AFF_EVENT_STREAM:
    return translate_async(&in->aff_async, out);
  case IT_SOFTWARE_EVENT_STREAM: {
    DAT_EVENT *copy = in->sw.data;
    *out = *copy;
    out->evd_handle = evd->cell;
    g_free(copy);
    return DAT_SUCCESS;
  }
  default:
    g_debug("IT-API event %s has no DAT counterpart: dropped", itx_event_name(in->event_number));
    return DATX_DROPPED;
  }
}

/* translate(), with a completion (what a poller or a busy waiter takes)
 * translated in the caller rather than through translate()'s call. */
static inline __attribute__((always_inline)) DAT_RETURN
translate_inline(datx_evd_t *evd, const it_event_t *in, DAT_EVENT *out)
{
  if (G_LIKELY(stream_of_event(in) == IT_DTO_EVENT_STREAM)) {
    translate_begin(evd, out);
    return translate_dto(evd, in, out);
  }
  return translate(evd, in, out);
}

gboolean
datx_evd_has_held(datx_evd_t *evd)
{
  return g_atomic_int_get(&evd->nheld) > 0;
}

/* Keeps a copy of @p event, translated while waiting, after the others held. */
static void
push_held(datx_evd_t *evd, const DAT_EVENT *event)
{
  g_mutex_lock(&evd->held_lock);
  g_queue_push_tail(&evd->held, g_memdup2(event, sizeof(*event)));
  g_atomic_int_set(&evd->nheld, (gint) evd->held.length);
  g_mutex_unlock(&evd->held_lock);
}

static DAT_RETURN
evd_modify_cno_on_held(DAT_EVD_HANDLE evd_handle, DAT_CNO_HANDLE cno_handle)
{
  datx_evd_t *evd = datx_cell_get(evd_handle, DATX_EVD);
  if (evd == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  datx_cno_t *cno = NULL;
  if (cno_handle != DAT_HANDLE_NULL) {
    /* Used as dat_evd_create's CNO is. */
    cno = datx_cell_use(cno_handle, DATX_CNO);
    if (cno == NULL)
      return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
    if (cno->ia != evd->ia) {
      datx_cell_unuse(cno->cell);
      return DATX_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
    }
    /* An EVD made without a CNO has no descriptor yet: its dispatcher gets
     * one now, watched as if it had been made with it (and kept so). */
    if (g_atomic_int_get(&evd->fd) < 0) {
      int fd = -1;
      it_status_t st = itx_evd_fd_enable(evd->waitable, &fd);
      if (st != IT_SUCCESS) {
        datx_cell_unuse(cno->cell);
        return datx_status(st, 0);
      }
      g_atomic_int_set(&evd->fd, fd);
    }
  }
  datx_cno_attach(evd, cno);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_evd_modify_cno(DAT_EVD_HANDLE evd_handle, DAT_CNO_HANDLE cno_handle)
{
  DATX_RETURN_HELD(evd_handle, DATX_EVD, evd_modify_cno_on_held(evd_handle, cno_handle));
}

/* The oldest held event into @p event; @p nmore: how many stay held.
 * Events are held by a wait or a resize, and a dequeue racing either may
 * as well have come first: an empty queue is seen without the lock
 * (datx_evd_t::nheld). */
static gboolean
pop_held(datx_evd_t *evd, DAT_EVENT *event, DAT_COUNT *nmore)
{
  g_mutex_lock(&evd->held_lock);
  DAT_EVENT *e = g_queue_pop_head(&evd->held);
  g_atomic_int_set(&evd->nheld, (gint) evd->held.length);
  if (nmore != NULL)
    *nmore = (DAT_COUNT) evd->held.length;
  g_mutex_unlock(&evd->held_lock);
  if (e == NULL)
    return FALSE;
  *event = *e;
  g_free(e);
  return TRUE;
}

/* The data path: a busy poller calls it in a loop, mostly on an empty
 * queue, so that case takes no lock and calls nothing but IT-API. */
static inline __attribute__((always_inline)) DAT_RETURN
evd_dequeue(datx_evd_t *evd, DAT_EVENT *event)
{
  if (event == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (G_UNLIKELY(g_atomic_int_get(&evd->nheld) > 0) && pop_held(evd, event, NULL))
    return DAT_SUCCESS;
  for (;;) {
    it_event_t ev;
    it_status_t st = it_evd_dequeue(evd->waitable, &ev);
    if (st == IT_ERR_QUEUE_EMPTY)
      return DAT_QUEUE_EMPTY;
    if (st != IT_SUCCESS)
      return datx_status(st, 0);
    DAT_RETURN ret = translate_inline(evd, &ev, event);
    if (ret != DATX_DROPPED)
      return ret;
  }
}

/* In a read section rather than with a hold: whatever frees the EVD kills
 * its cell, then waits for the section to end before tearing it down
 * (datx_evd_destroy(), the IA's abrupt close), so a poller's dequeue
 * takes no locked instruction of this layer. */
DAT_RETURN
datx_evd_dequeue(DAT_EVD_HANDLE evd_handle, DAT_EVENT *event)
{
  rsec_enter();
  datx_cell_t *cell = datx_cell_peek(evd_handle, DATX_EVD);
  datx_evd_t *evd = cell != NULL ? __atomic_load_n((datx_evd_t **) &cell->object, __ATOMIC_ACQUIRE) : NULL;
  DAT_RETURN ret = evd != NULL ? evd_dequeue(evd, event) : DATX_ERR(DAT_INVALID_HANDLE, 0);
  rsec_exit();
  return ret;
}

/* The wait of the one thread that claimed the EVD (evd_wait()). */
static DAT_RETURN
evd_wait_claimed(datx_evd_t *evd, DAT_TIMEOUT timeout, DAT_COUNT threshold, DAT_EVENT *event,
                 DAT_COUNT *nmore)
{
  gint64 deadline = timeout == DAT_TIMEOUT_INFINITE ? -1 : g_get_monotonic_time() + timeout;
  for (;;) {
    guint held = (guint) g_atomic_int_get(&evd->nheld);
    /* DAT 2.0 (dat_evd_set_unwaitable): a waiter is woken and returns
     * DAT_INVALID_STATE; what it held stays for dat_evd_dequeue. */
    if (g_atomic_int_get(&evd->state) & DAT_EVD_STATE_UNWAITABLE) {
      if (nmore != NULL)
        *nmore = (DAT_COUNT) held;
      return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE);
    }
    if (held >= (guint) threshold) {
      pop_held(evd, event, nmore);
      return DAT_SUCCESS;
    }
    uint64_t left = IT_TIMEOUT_INFINITE;
    if (deadline >= 0) {
      gint64 now = g_get_monotonic_time();
      left = now >= deadline ? 0 : (uint64_t) (deadline - now);
    }
    /* IT-API cannot wake a waiter: sleep in slices, so that
     * dat_evd_set_unwaitable is seen.  An event ends a slice at once. */
    uint64_t slice = MIN(left, (uint64_t) DATX_WAIT_SLICE_US);
    it_event_t ev;
    size_t more = 0;
    it_status_t st = it_evd_wait(evd->waitable, slice, &ev, &more);
    if (st == IT_ERR_TIMEOUT_EXPIRED && slice < left)
      continue;
    if (st != IT_SUCCESS) {
      if (nmore != NULL)
        *nmore = (DAT_COUNT) held;
      return datx_status(st, 0);
    }
    DAT_EVENT out;
    DAT_RETURN ret = translate_inline(evd, &ev, &out);
    if (ret == DATX_DROPPED)
      continue;
    if (held == 0 && (threshold == 1 || more + 1 >= (size_t) threshold)) {
      /* The common case: nothing held, and the threshold is met. */
      *event = out;
      if (nmore != NULL)
        *nmore = (DAT_COUNT) more;
      return ret;
    }
    push_held(evd, &out);
  }
}

static DAT_RETURN
evd_wait(datx_evd_t *evd, DAT_TIMEOUT timeout, DAT_COUNT threshold, DAT_EVENT *event,
         DAT_COUNT *nmore)
{
  if (threshold <= 0 || threshold > g_atomic_int_get(&evd->qlen))
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
  if (event == NULL)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
  if (g_atomic_int_get(&evd->state) & DAT_EVD_STATE_UNWAITABLE)
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE);
  /* One waiter per EVD, as IT-API has one per dispatcher; its slot is let
   * go between slices, so the claim is made here, for the whole wait. */
  if (!g_atomic_int_compare_and_exchange(&evd->waiting, 0, 1))
    return DATX_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
  DAT_RETURN ret = evd_wait_claimed(evd, timeout, threshold, event, nmore);
  g_atomic_int_set(&evd->waiting, 0);
  return ret;
}

DAT_RETURN
datx_evd_wait(DAT_EVD_HANDLE evd_handle, DAT_TIMEOUT timeout, DAT_COUNT threshold,
              DAT_EVENT *event, DAT_COUNT *nmore)
{
  datx_cell_t *cell = datx_cell_hold(evd_handle, DATX_EVD);
  if (cell == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  DAT_RETURN ret = evd_wait(cell->object, timeout, threshold, event, nmore);
  datx_cell_put(cell);
  return ret;
}

static DAT_RETURN
evd_post_se_on_held(DAT_EVD_HANDLE evd_handle, const DAT_EVENT *event)
{
  datx_evd_t *evd = datx_cell_get(evd_handle, DATX_EVD);
  if (evd == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  if (event == NULL || event->event_number != DAT_SOFTWARE_EVENT)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (!(evd->flags & DAT_EVD_SOFTWARE_FLAG) || evd->sevd[DATX_S_SW] == IT_NULL_HANDLE)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
  DAT_EVENT *copy = g_memdup2(event, sizeof(*event));
  it_status_t st = it_evd_post_se(evd->sevd[DATX_S_SW], copy);
  if (st != IT_SUCCESS) {
    g_free(copy);
    return st == IT_ERR_EVD_QUEUE_FULL ? DATX_ERR(DAT_QUEUE_FULL, 0) : datx_status(st, 0);
  }
  return DAT_SUCCESS;
}

DAT_RETURN
datx_evd_post_se(DAT_EVD_HANDLE evd_handle, const DAT_EVENT *event)
{
  DATX_RETURN_HELD(evd_handle, DATX_EVD, evd_post_se_on_held(evd_handle, event));
}

static DAT_RETURN
evd_enable_on_held(DAT_EVD_HANDLE evd_handle)
{
  datx_evd_t *evd = datx_cell_get(evd_handle, DATX_EVD);
  if (evd == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  g_atomic_int_and(&evd->state, ~(guint) DAT_EVD_STATE_DISABLED);
  g_atomic_int_or(&evd->state, DAT_EVD_STATE_ENABLED);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_evd_enable(DAT_EVD_HANDLE evd_handle)
{
  DATX_RETURN_HELD(evd_handle, DATX_EVD, evd_enable_on_held(evd_handle));
}

static DAT_RETURN
evd_disable_on_held(DAT_EVD_HANDLE evd_handle)
{
  datx_evd_t *evd = datx_cell_get(evd_handle, DATX_EVD);
  if (evd == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  g_atomic_int_and(&evd->state, ~(guint) DAT_EVD_STATE_ENABLED);
  g_atomic_int_or(&evd->state, DAT_EVD_STATE_DISABLED);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_evd_disable(DAT_EVD_HANDLE evd_handle)
{
  DATX_RETURN_HELD(evd_handle, DATX_EVD, evd_disable_on_held(evd_handle));
}

/* The EVD's waitable/unwaitable bits made @p set. */
static DAT_RETURN
evd_waitable_on_held(DAT_EVD_HANDLE evd_handle, DAT_EVD_STATE set)
{
  datx_evd_t *evd = datx_cell_get(evd_handle, DATX_EVD);
  if (evd == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  const guint both = DAT_EVD_STATE_WAITABLE | DAT_EVD_STATE_UNWAITABLE;
  g_atomic_int_or(&evd->state, set);
  g_atomic_int_and(&evd->state, ~(both & ~(guint) set));
  return DAT_SUCCESS;
}

DAT_RETURN
datx_evd_set_unwaitable(DAT_EVD_HANDLE evd_handle)
{
  DATX_RETURN_HELD(evd_handle, DATX_EVD, evd_waitable_on_held(evd_handle, DAT_EVD_STATE_UNWAITABLE));
}

DAT_RETURN
datx_evd_clear_unwaitable(DAT_EVD_HANDLE evd_handle)
{
  DATX_RETURN_HELD(evd_handle, DATX_EVD, evd_waitable_on_held(evd_handle, DAT_EVD_STATE_WAITABLE));
}

static DAT_RETURN
evd_resize_on_held(DAT_EVD_HANDLE evd_handle, DAT_COUNT qlen)
{
  datx_evd_t *evd = datx_cell_get(evd_handle, DATX_EVD);
  if (evd == NULL)
    return DATX_ERR(DAT_INVALID_HANDLE, 0);
  if (qlen <= 0)
    return DATX_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
  if (qlen > evd->capacity) {
    g_message("DAT EVD %u: resizing its queue to %d events exceeds the %d it was created with; "
              "IT-API cannot enlarge a dispatcher: create the EVD with the largest queue it needs",
              evd->cell->id, (int) qlen, (int) evd->capacity);
    return DATX_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
  }
  /* IT-API does not say how many events a dispatcher holds: they are
   * taken into the held queue, in order, and counted there. */
  for (;;) {
    it_event_t ev;
    if (it_evd_dequeue(evd->waitable, &ev) != IT_SUCCESS)
      break;
    DAT_EVENT out;
    if (translate(evd, &ev, &out) == DATX_DROPPED)
      continue;
    push_held(evd, &out);
  }
  /* DAT 2.0 (dat_evd_resize): no queued event may be lost, so a queue
   * holding more than the new length keeps its length. */
  g_mutex_lock(&evd->held_lock);
  guint queued = evd->held.length;
  gboolean fits = queued <= (guint) qlen;
  if (fits)
    g_atomic_int_set(&evd->qlen, qlen);
  g_mutex_unlock(&evd->held_lock);
  if (!fits)
    return DATX_ERR(DAT_INVALID_STATE, 0);
  return DAT_SUCCESS;
}

DAT_RETURN
datx_evd_resize(DAT_EVD_HANDLE evd_handle, DAT_COUNT qlen)
{
  DATX_RETURN_HELD(evd_handle, DATX_EVD, evd_resize_on_held(evd_handle, qlen));
}
