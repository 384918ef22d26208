/*
 * vp/ib rdma_cm events: a listener's (a connection request, a UD service
 * request), a connection's (its address and route resolved, the reply,
 * its establishment, a refusal, a disconnect, the device's removal) and a
 * UD service request's (its answer), each turned into what the queue pair
 * and the consumer get.
 *
 * Every event is taken by the device's progress thread: under dev->lock it
 * reads the identifier's object (which cannot be freed before the event is
 * acknowledged: rdma_destroy_id waits for that) and decides, then it
 * acknowledges, and only then makes its upcall or destroys an identifier.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ib.h"

/* ---- events ------------------------------------------------------------------- */

void
cm_ev_init(rnicpi_cm_event_t *ev, rnicpi_cm_event_type_t type, uint64_t qp_ctx)
{
  memset(ev, 0, sizeof(*ev));
  ev->type = type;
  ev->qp_ctx = qp_ctx;
}

/* The private data of @e.  The IB CM's messages always carry their whole
 * private data field, zero-filled past what the sender gave, so on IB a
 * field of zeros is taken as none given. */
static void
cm_ev_pdata(ib_dev_t *dev, rnicpi_cm_event_t *ev, const struct rdma_cm_event *e)
{
  const uint8_t *pd = e->param.conn.private_data;
  uint32_t len = e->param.conn.private_data_len;
  if (pd != NULL && !dev->iwarp) {
    uint32_t i = 0;
    while (i < len && pd[i] == 0)
      i++;
    if (i == len)
      len = 0;
  }
  if (pd != NULL && len > 0) {
    ev->pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
    memcpy(ev->pdata, pd, ev->pdata_len);
  }
}

static rnicpi_cm_reason_t
reason_of_status(ib_dev_t *dev, enum rdma_cm_event_type type, int status)
{
  if (type == RDMA_CM_EVENT_ADDR_ERROR || type == RDMA_CM_EVENT_ROUTE_ERROR)
    return status == -ETIMEDOUT ? RNICPI_CM_REASON_TIMEOUT : RNICPI_CM_REASON_BAD_PATH;
  if (status == -ETIMEDOUT || status == -ETIME)
    return RNICPI_CM_REASON_TIMEOUT;
  if (type == RDMA_CM_EVENT_REJECTED && !dev->iwarp) {
    /* IB CM REJ reasons (IBTA 12.6.7.2): 8 invalid service ID (no
     * listener), 1-4 no QP, EE or resources. */
    if (status == 8)
      return RNICPI_CM_REASON_NO_LISTENER;
    if (status >= 1 && status <= 4)
      return RNICPI_CM_REASON_RESOURCES;
  }
  if (status < 0)
    return rnicpi_cm_reason_of_errno(-status);
  return RNICPI_CM_REASON_BAD_PATH;
}

/* The private data of a refusal made by this provider rather than by a
 * consumer (a listener closed with requests pending, a request for
 * another device): rdma_cm offers no reason code of our own, so the
 * refusal carries this mark and a vp/ib requester reports UNREACHABLE
 * (no listener), as for a port nothing listens on. */
static const uint8_t no_listener_mark[16] = "\0itapi-vp-ib:nl";

void
reject_no_listener(struct rdma_cm_id *id)
{
  rdma_reject(id, no_listener_mark, sizeof(no_listener_mark));
}

/* Whether a REJECTED event is the peer consumer's refusal (with its
 * private data) rather than a refusal by the stack (no listener). */
static gboolean
consumer_reject(ib_dev_t *dev, const struct rdma_cm_event *e)
{
  if (e->param.conn.private_data_len >= sizeof(no_listener_mark) &&
      memcmp(e->param.conn.private_data, no_listener_mark, sizeof(no_listener_mark)) == 0)
    return FALSE;
  if (dev->iwarp)
    return e->status != -ECONNREFUSED && e->status != -ETIMEDOUT;
  return e->status == 28; /* IB_CM_REJ_CONSUMER_DEFINED */
}

/* A fault of the queue pair's own ends its connection (dev->lock held):
 * the peer is told by a disconnect, and @ev is this side's BROKEN.  FALSE
 * when the connection was not up. */
gboolean
ib_cm_break_locked(ib_qp_t *qp, rnicpi_cm_event_t *ev)
{
  ib_conn_t *c = qp->conn;
  if (c == NULL || c->state != IB_CONN_UP)
    return FALSE;
  rdma_disconnect(c->id);
  c->state = IB_CONN_DOWN;
  cm_ev_init(ev, RNICPI_CM_BROKEN, qp->base.al_ctx);
  return TRUE;
}

void
fail_active(ib_conn_t *c, rnicpi_cm_event_type_t type, rnicpi_cm_reason_t why,
            const struct rdma_cm_event *e, ib_cm_out_t *o)
{
  ib_qp_t *qp = c->qp;
  cm_ev_init(&o->ev, type, qp->base.al_ctx);
  o->ev.reason = why;
  if (type == RNICPI_CM_REJECTED && e != NULL)
    cm_ev_pdata(c->dev, &o->ev, e);
  o->have = TRUE;
  qp_down(qp);
  ib_sweep_add_locked(qp);
  c->state = IB_CONN_DOWN;
}

/* A request's requester went away before the consumer answered: the
 * listener's consumer is told, and the request is destroyed after the
 * event's acknowledgement. */
static void
cancel_request(ib_conn_t *c, ib_cm_out_t *o)
{
  cm_ev_init(&o->ev, RNICPI_CM_REQUEST_CANCELLED, 0);
  o->ev.listen_ctx = c->listen_ctx;
  o->ev.conn_id = c->conn_id;
  o->have = TRUE;
  if (conn_take_locked(c))
    o->destroy = c;
}

/* Whether @qp failed by itself before the peer's disconnect came (a fault
 * it found, such as the peer's access violation): the connection then
 * broke rather than ended.  A fault's completion says so; otherwise the
 * device's own state, where it tells (rxe; siw's ibv_query_qp always says
 * RESET).  Flushed receives say nothing: siw flushes them when the peer
 * closes.  And the device's removal, which may reach the peer first and
 * end this connection before this identifier hears of it
 * (ib_dev_unlisted()). */
static gboolean
qp_failed(ib_conn_t *c, ib_qp_t *qp)
{
  if (c->closing)
    return FALSE;
  if (qp->err_cause != RNICPI_AE_UNSPECIFIED)
    return TRUE;
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  if (ibv_query_qp(qp->qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_ERR)
    return TRUE;
  return ib_dev_unlisted(qp->dev);
}

/* ---- UD service resolution ------------------------------------------------------ */

static const uint8_t ud_rep_mark[4] = { 'i', 'v', 'U', 'D' };
const uint8_t ud_req_mark[4] = { 'i', 'v', 'U', 'Q' };

/* The private data of a UD service message, from the adapter's header
 * (mark, then the length at @len_at) where it has one: @pd and @len in,
 * the consumer's part out; FALSE when there is no header. */
static gboolean
ud_pdata_strip(const uint8_t *mark, uint32_t hdr, uint32_t len_at, const uint8_t **pd,
               uint32_t *len)
{
  if (*pd == NULL || *len < hdr || memcmp(*pd, mark, 4) != 0)
    return FALSE;
  uint32_t n = MIN((uint32_t) (*pd)[len_at], *len - hdr);
  *pd += hdr;
  *len = n;
  return TRUE;
}

/* The SIDR_REP private data: the adapter's header, then the consumer's. */
static uint32_t
ud_rep_pdata(uint8_t *buf, rnicpi_ud_svc_status_t status, uint32_t qkey, const void *pdata,
             uint32_t len)
{
  memset(buf, 0, IB_UD_REP_HDR);
  memcpy(buf, ud_rep_mark, sizeof(ud_rep_mark));
  buf[4] = (uint8_t) status;
  buf[5] = (uint8_t) len;
  uint32_t be = htonl(qkey);
  memcpy(buf + 8, &be, 4);
  if (len > 0)
    memcpy(buf + IB_UD_REP_HDR, pdata, len);
  return IB_UD_REP_HDR + len;
}

/* Answer a UD service request's identifier; with no lock held. */
int
ud_answer(struct rdma_cm_id *id, rnicpi_ud_svc_status_t status, uint32_t qpn, uint32_t qkey,
          const void *pdata, uint32_t len)
{
  uint8_t buf[IB_UD_REP_HDR + RNICPI_MAX_PDATA];
  uint32_t n = ud_rep_pdata(buf, status, qkey, pdata, len);
  if (status == RNICPI_UD_SVC_OK) {
    struct rdma_conn_param cp;
    memset(&cp, 0, sizeof(cp));
    cp.private_data = buf;
    cp.private_data_len = (uint8_t) n;
    cp.qp_num = qpn & 0xffffff; /* the Q_Key travels in the header: over IP rdma_cm sets its own */
    return rdma_accept(id, &cp) == 0 ? 0 : errno;
  }
  return rdma_reject(id, buf, (uint8_t) n) == 0 ? 0 : errno;
}

/* The answer to our UD service request @c (dev->lock held): from the
 * adapter's header where the reply has one, else as rdma_cm reports it. */
void
ud_reply_event(ib_conn_t *c, struct rdma_cm_event *e, ib_cm_out_t *o)
{
  rnicpi_cm_event_t *ev = &o->ev;
  cm_ev_init(ev, RNICPI_CM_UD_SVC_REPLY, c->ud_ctx);
  ev->src = c->peer;
  const uint8_t *pd = e != NULL ? e->param.ud.private_data : NULL;
  uint32_t len = e != NULL && pd != NULL ? e->param.ud.private_data_len : 0;
  if (e != NULL && e->event == RDMA_CM_EVENT_ESTABLISHED) {
    ev->ud_status = RNICPI_UD_SVC_OK;
    ev->ud_qpn = e->param.ud.qp_num;
    ev->ud_qkey = e->param.ud.qkey;
  } else if (e != NULL && e->event == RDMA_CM_EVENT_UNREACHABLE && e->status >= 1 &&
             e->status <= 4) {
    ev->ud_status = (rnicpi_ud_svc_status_t) e->status; /* IBTA 12.11.2 SIDR_REP status */
  } else {
    ev->ud_status = RNICPI_UD_SVC_NO_SERVICE; /* no answer, no route */
  }
  const uint8_t *hdr = pd;
  if (ud_pdata_strip(ud_rep_mark, IB_UD_REP_HDR, 5, &pd, &len)) {
    ev->ud_status = hdr[4] <= RNICPI_UD_SVC_REDIRECT ? (rnicpi_ud_svc_status_t) hdr[4]
                                                     : RNICPI_UD_SVC_NO_SERVICE;
    uint32_t be;
    memcpy(&be, hdr + 8, 4);
    if (ev->ud_status == RNICPI_UD_SVC_OK)
      ev->ud_qkey = ntohl(be);
  }
  if (ev->ud_status != RNICPI_UD_SVC_OK)
    ev->ud_qpn = ev->ud_qkey = 0;
  if (pd != NULL && len > 0) {
    ev->pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
    memcpy(ev->pdata, pd, ev->pdata_len);
  }
  o->have = TRUE;
  c->state = IB_CONN_DOWN;
  if (conn_take_locked(c))
    o->destroy = c;
}

/* An event of our UD service request's identifier (dev->lock held). */
static void
ud_ask_event(ib_conn_t *c, struct rdma_cm_event *e, ib_cm_out_t *o)
{
  struct rdma_conn_param cp;
  switch (e->event) {
  case RDMA_CM_EVENT_ADDR_RESOLVED:
    if (rdma_resolve_route(c->id, ib_config.resolve_ms) != 0)
      ud_reply_event(c, NULL, o);
    return;
  case RDMA_CM_EVENT_ROUTE_RESOLVED:
    memset(&cp, 0, sizeof(cp));
    cp.private_data = c->pdata; /* the header, then the consumer's */
    cp.private_data_len = (uint8_t) (IB_UD_REQ_HDR + c->param.pdata_len);
    if (rdma_connect(c->id, &cp) != 0)
      ud_reply_event(c, NULL, o);
    return;
  case RDMA_CM_EVENT_ESTABLISHED:
  case RDMA_CM_EVENT_UNREACHABLE:
  case RDMA_CM_EVENT_REJECTED:
  case RDMA_CM_EVENT_ADDR_ERROR:
  case RDMA_CM_EVENT_ROUTE_ERROR:
  case RDMA_CM_EVENT_CONNECT_ERROR:
  case RDMA_CM_EVENT_DEVICE_REMOVAL:
    ud_reply_event(c, e, o);
    return;
  default:
    return;
  }
}

/* An event of a connection's identifier (dev->lock held). */
static void
conn_event(ib_conn_t *c, struct rdma_cm_event *e, ib_cm_out_t *o)
{
  if (c->state == IB_CONN_UD_ASKING) {
    ud_ask_event(c, e, o);
    return;
  }
  if (c->state == IB_CONN_UD_REQUEST)
    return; /* answered by ud_svc_reply; nothing else comes */
  if (c->withdrawn) {
    /* An iWARP connect that ended at its deadline: iw_cm let go of the
     * identifier only now (conn_expire_locked()).  A late acceptance is
     * closed by the destroy (iw_cm's abrupt close of an ESTABLISHED id). */
    if (e->event == RDMA_CM_EVENT_ESTABLISHED || e->event == RDMA_CM_EVENT_REJECTED ||
        e->event == RDMA_CM_EVENT_UNREACHABLE || e->event == RDMA_CM_EVENT_CONNECT_ERROR) {
      if (conn_take_locked(c))
        o->destroy = c;
    }
    return;
  }
  ib_dev_t *dev = c->dev;
  ib_qp_t *qp = c->qp;
  int err;
  switch (e->event) {
  case RDMA_CM_EVENT_ADDR_RESOLVED:
    if (c->state == IB_CONN_RESOLVING && rdma_resolve_route(c->id, ib_config.resolve_ms) != 0)
      fail_active(c, RNICPI_CM_UNREACHABLE, rnicpi_cm_reason_of_errno(errno), NULL, o);
    return;
  case RDMA_CM_EVENT_ROUTE_RESOLVED:
    if (c->state == IB_CONN_RESOLVING && (err = active_connect(c)) != 0)
      fail_active(c, RNICPI_CM_UNREACHABLE, rnicpi_cm_reason_of_errno(err), NULL, o);
    return;
  case RDMA_CM_EVENT_CONNECT_RESPONSE:
    if (c->state != IB_CONN_CONNECTING || qp == NULL)
      return;
    /* rdma_cm states the peer's values in our terms: initiator_depth is
     * how many Reads we may issue (the peer's IRD), responder_resources
     * how many we must answer (its ORD). */
    qp->ord = MIN(qp->ord, (uint32_t) e->param.conn.initiator_depth);
    qp->ird = MIN(qp->ird, (uint32_t) e->param.conn.responder_resources);
    if (c->three_way) {
      c->state = IB_CONN_REPLIED;
      cm_ev_init(&o->ev, RNICPI_CM_CONNECT_REPLY, qp->base.al_ctx);
      o->ev.conn_id = c->conn_id;
    } else if ((err = active_establish(c)) != 0) {
      g_message("%s: the connection of QP %u could not be completed (%s); it is broken",
                dev->name, qp->base.qp_num, g_strerror(err));
      rdma_reject(c->id, NULL, 0);
      fail_active(c, RNICPI_CM_BROKEN, RNICPI_CM_REASON_NONE, NULL, o);
      return;
    } else {
      c->state = IB_CONN_UP;
      ib_qp_set_state(qp, IB_QP_RTS);
      cm_ev_init(&o->ev, RNICPI_CM_ESTABLISHED, qp->base.al_ctx);
    }
    o->ev.ird = qp->ird;
    o->ev.ord = qp->ord;
    cm_ev_pdata(dev, &o->ev, e);
    o->have = TRUE;
    return;
  case RDMA_CM_EVENT_ESTABLISHED:
    if (qp == NULL || (c->state != IB_CONN_CONNECTING && c->state != IB_CONN_ACCEPTING))
      return;
    if (dev->iwarp) {
      /* iWARP: iw_cm's event carries the values this end settled on (siw:
       * the active side's from the MPA Reply, the passive side's from its
       * accept), and rdma_cm copies them unswapped (cma_iw_handler():
       * initiator_depth = ird, responder_resources = ord), unlike an IB
       * REP, whose values are the peer's.  The passive side reports what
       * its queue pair got: siw_accept() raises an IRD below the
       * requester's ORD to it (relaxed_ird_negotiation, siw_cm.c). */
      uint32_t ird = e->param.conn.initiator_depth, ord = e->param.conn.responder_resources;
      if (c->state == IB_CONN_CONNECTING) {
        if (ord > 0)
          qp->ord = MIN(qp->ord, ord);
        if (ird > 0)
          qp->ird = MIN(qp->ird, ird);
      } else {
        if (ird > 0)
          qp->ird = ird;
        if (ord > 0)
          qp->ord = MIN(qp->ord, ord);
      }
    }
    cm_ev_init(&o->ev, RNICPI_CM_ESTABLISHED, qp->base.al_ctx);
    if (c->state == IB_CONN_CONNECTING)
      cm_ev_pdata(dev, &o->ev, e);
    o->ev.ird = qp->ird;
    o->ev.ord = qp->ord;
    o->have = TRUE;
    c->state = IB_CONN_UP;
    ib_qp_set_state(qp, IB_QP_RTS);
    return;
  case RDMA_CM_EVENT_REJECTED:
  case RDMA_CM_EVENT_UNREACHABLE:
  case RDMA_CM_EVENT_ADDR_ERROR:
  case RDMA_CM_EVENT_ROUTE_ERROR:
  case RDMA_CM_EVENT_CONNECT_ERROR:
    if (c->state == IB_CONN_REQUEST) {
      cancel_request(c, o);
      return;
    }
    if (qp == NULL || c->state == IB_CONN_DOWN)
      return;
    if (c->state == IB_CONN_ACCEPTING && e->event == RDMA_CM_EVENT_REJECTED &&
        consumer_reject(dev, e)) {
      /* Three-way: the requester refused our reply. */
      fail_active(c, RNICPI_CM_REJECTED, RNICPI_CM_REASON_NONE, e, o);
    } else if (c->state == IB_CONN_ACCEPTING || c->state == IB_CONN_UP) {
      fail_active(c, RNICPI_CM_BROKEN, RNICPI_CM_REASON_NONE, NULL, o);
    } else if (e->event == RDMA_CM_EVENT_REJECTED && consumer_reject(dev, e)) {
      fail_active(c, RNICPI_CM_REJECTED, RNICPI_CM_REASON_NONE, e, o);
    } else {
      fail_active(c, RNICPI_CM_UNREACHABLE,
                  e->event == RDMA_CM_EVENT_REJECTED && !consumer_reject(dev, e) &&
                      e->param.conn.private_data_len >= sizeof(no_listener_mark)
                    ? RNICPI_CM_REASON_NO_LISTENER
                    : reason_of_status(dev, e->event, e->status),
                  NULL, o);
    }
    return;
  case RDMA_CM_EVENT_DISCONNECTED:
    if (c->state == IB_CONN_REQUEST) {
      cancel_request(c, o);
      return;
    }
    if (qp == NULL || c->state == IB_CONN_DOWN)
      return;
    /* IB: answer the DREQ (rdma_cm leaves that to us), else the peer
     * waits for its DREP for seconds. */
    if (!dev->iwarp)
      rdma_disconnect(c->id);
    fail_active(c, c->state == IB_CONN_UP && !qp_failed(c, qp) ? RNICPI_CM_DISCONNECTED
                                                            : RNICPI_CM_BROKEN,
                RNICPI_CM_REASON_NONE, NULL, o);
    return;
  case RDMA_CM_EVENT_DEVICE_REMOVAL:
    if (c->state == IB_CONN_REQUEST) {
      cancel_request(c, o);
      return;
    }
    if (qp != NULL && c->state != IB_CONN_DOWN)
      fail_active(c, c->state == IB_CONN_RESOLVING || c->state == IB_CONN_CONNECTING
                       ? RNICPI_CM_UNREACHABLE : RNICPI_CM_BROKEN,
                  RNICPI_CM_REASON_BAD_PATH, NULL, o);
    return;
  default:
    return; /* TIMEWAIT_EXIT, ADDR_CHANGE, MULTICAST_* */
  }
}

/* A connection request on a listener (dev->lock held). */
static void
listen_event(ib_listen_t *l, struct rdma_cm_event *e, ib_cm_out_t *o)
{
  ib_dev_t *dev = l->dev;
  if (e->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
    return;
  }
  if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST)
    return;
  gboolean ud = e->listen_id->ps == RDMA_PS_UDP;
  ib_conn_t *c = conn_new_locked(dev);
  c->id = e->id;
  c->id->context = &c->tag;
  c->listener = l;
  c->listen_ctx = l->base.al_ctx;
  c->state = ud ? IB_CONN_UD_REQUEST : IB_CONN_REQUEST;
  if (l->dead || e->id->verbs != dev->ctx) {
    /* A request for another device (or a listener going away): refuse. */
    conn_take_locked(c);
    o->reject = c;
    return;
  }
  if (ud) {
    cm_ev_init(&o->ev, RNICPI_CM_UD_SVC_REQUEST, 0);
    o->ev.listen_ctx = l->base.al_ctx;
    o->ev.conn_id = c->conn_id;
    o->ev.port = l->port;
    struct sockaddr *peer = rdma_get_peer_addr(e->id);
    if (peer != NULL)
      memcpy(&o->ev.src.sa, peer, peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                              : sizeof(struct sockaddr_in));
    const uint8_t *pd = e->param.ud.private_data;
    uint32_t len = pd != NULL ? e->param.ud.private_data_len : 0;
    ud_pdata_strip(ud_req_mark, IB_UD_REQ_HDR, 4, &pd, &len);
    if (pd != NULL && len > 0) {
      o->ev.pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
      memcpy(o->ev.pdata, pd, o->ev.pdata_len);
    }
    o->have = TRUE;
    return;
  }
  cm_ev_init(&o->ev, RNICPI_CM_CONNECT_REQUEST, 0);
  o->ev.listen_ctx = l->base.al_ctx;
  o->ev.conn_id = c->conn_id;
  struct sockaddr *peer = rdma_get_peer_addr(e->id);
  if (peer != NULL)
    memcpy(&o->ev.src.sa, peer,
           peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
  o->ev.port = l->port;
  /* The requester's IRD and ORD, which rdma_cm states in our terms (the
   * Reads we may issue to it, the Reads it will issue to us). */
  o->ev.ird = c->req_ird = e->param.conn.initiator_depth;
  o->ev.ord = c->req_ord = e->param.conn.responder_resources;
  cm_ev_pdata(dev, &o->ev, e);
  o->have = TRUE;
}

void
ib_cm_handle(ib_dev_t *dev, struct rdma_cm_event *e)
{
  ib_cm_out_t o = { .have = FALSE };
  g_mutex_lock(&dev->lock);
  ib_cm_ctx_t *tag = e->event == RDMA_CM_EVENT_CONNECT_REQUEST ? e->listen_id->context
                                                                : e->id->context;
  if (tag != NULL && tag->kind == IB_CTX_LISTEN)
    listen_event(tag->obj, e, &o);
  else if (tag != NULL && tag->kind == IB_CTX_CONN && !((ib_conn_t *) tag->obj)->dead)
    conn_event(tag->obj, e, &o);
  g_mutex_unlock(&dev->lock);
  gboolean removed = e->event == RDMA_CM_EVENT_DEVICE_REMOVAL;
  rdma_ack_cm_event(e);
  if (o.reject != NULL) {
    if (o.reject->state == IB_CONN_UD_REQUEST)
      ud_answer(o.reject->id, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
    else
      reject_no_listener(o.reject->id);
    conn_free(o.reject);
  }
  if (o.destroy != NULL)
    conn_free(o.destroy);
  if (o.have)
    dev->up.cm_event(dev->base.al_ctx, &o.ev);
  if (removed)
    ib_dev_removed(dev);
}
