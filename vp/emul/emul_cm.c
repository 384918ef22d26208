/*
 * vp/emul connection management verbs: listen, connect, accept, reject,
 * disconnect, with private data and IRD/ORD negotiation, two- and three-way
 * (IBTA CM REQ/REP/RTU).  Events reach the access layer through the
 * fabric's event thread, never from inside a verb.
 *
 * A listener is also reachable from the other processes of the host: it
 * binds "itapi-emul/<port>" (emul_ring_listen.c).  A connect looks in this
 * process's listener table first (the direct path), then at that socket;
 * a pending connection with c->x set is a cross-process handshake and its
 * accept and reject go to emul_ring_cm.c, its teardown to
 * emul_ring_teardown.c.
 *
 * Personalities: private-data limits are the device's capability record;
 * a device without RNICPI_CAP_THREE_WAY (iWARP: MPA is two-way) refuses a
 * three-way connect; a request to a listener of the other personality is
 * unreachable (an HCA does not reach an RNIC); disconnect on a personality
 * with drain_on_disconnect (iWARP: graceful close, the FIN follows the
 * data) waits for the requests still outstanding, new ones flush.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "emul.h"

void
emul_cm_fill_pdata(rnicpi_cm_event_t *ev, const void *pdata, uint32_t len)
{
  ev->pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
  if (ev->pdata_len > 0)
    memcpy(ev->pdata, pdata, ev->pdata_len);
}

void
emul_qp_cm_event(emul_qp_t *qp, rnicpi_cm_event_type_t type,
                 const void *pdata, uint32_t pdata_len)
{
  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = type;
  ev->qp_ctx = qp->base.al_ctx;
  ev->ird = qp->ird;
  ev->ord = qp->ord;
  emul_cm_fill_pdata(ev, pdata, pdata_len);
  emul_defer_cm(emul_qp_dev(qp), ev);
  g_free(ev);
}

void
emul_cm_unreachable(emul_qp_t *qp, rnicpi_cm_reason_t why)
{
  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = RNICPI_CM_UNREACHABLE;
  ev->qp_ctx = qp->base.al_ctx;
  ev->reason = why;
  emul_defer_cm(emul_qp_dev(qp), ev);
  g_free(ev);
}

void
emul_cm_request_cancelled(emul_conn_t *c)
{
  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = RNICPI_CM_REQUEST_CANCELLED;
  ev->listen_ctx = c->listener->base.al_ctx;
  ev->conn_id = c->id;
  emul_defer_cm(to_emul_dev(c->listener->base.dev), ev);
  g_free(ev);
}

void
emul_cm_arm(emul_conn_t *c, uint64_t timeout_us)
{
  gint64 at = timeout_us != 0 ? rnicpi_deadline(g_get_monotonic_time(), timeout_us) : G_MAXINT64;
  if (at == G_MAXINT64)
    return; /* the default, and IT_TIMEOUT_INFINITE: wait for the answer */
  c->deadline = at;
  g_atomic_int_inc(&emul_fabric.ntimed);
  emul_events_wake();
}

gint64
emul_cm_expire(void)
{
  if (g_atomic_int_get(&emul_fabric.ntimed) == 0)
    return -1;
  emul_work_t w = { .nnotify = 0 };
  gint64 now = g_get_monotonic_time(), next = G_MAXINT64;
  gint timed = 0;
  GSList *due = NULL;
  emul_fabric_lock();
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, emul_fabric.conns);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    emul_conn_t *c = v;
    /* Only an unanswered request: a reply (three-way) is an answer. */
    if (c->deadline == 0 || c->active == NULL || c->state != CONN_REQUESTED)
      continue;
    if (c->deadline <= now) {
      due = g_slist_prepend(due, c);
    } else {
      next = MIN(next, c->deadline);
      timed++;
    }
  }
  for (GSList *l = due; l != NULL; l = l->next) {
    emul_conn_t *c = l->data;
    emul_qp_t *qp = c->active;
    /* The request goes away as if the requester had withdrawn it; the
     * listener's consumer can no longer accept it. */
    if (c->x != NULL) {
      emul_ring_qp_gone(qp, c, &w);
    } else {
      if (c->listener != NULL)
        emul_cm_request_cancelled(c);
      emul_cm_conn_drop(c);
    }
    emul_cm_unreachable(qp, RNICPI_CM_REASON_TIMEOUT);
    emul_qp_set_error(qp, &w);
  }
  g_atomic_int_set(&emul_fabric.ntimed, timed);
  emul_fabric_unlock();
  g_slist_free(due);
  emul_work_deliver(&w);
  return next == G_MAXINT64 ? -1 : next - now;
}

void
emul_cm_conn_drop(emul_conn_t *c)
{
  if (c->active != NULL)
    c->active->conn = NULL;
  if (c->passive != NULL)
    c->passive->conn = NULL;
  g_hash_table_remove(emul_fabric.conns, &c->id);
  g_free(c);
}

/* The device answers on the loopback addresses of the host. */
gboolean
emul_addr_is_ours(const rnicpi_addr_t *a)
{
  if (a->sa.ss_family == AF_INET) {
    const struct sockaddr_in *s = (const struct sockaddr_in *) &a->sa;
    return (ntohl(s->sin_addr.s_addr) >> 24) == 127;
  }
  if (a->sa.ss_family == AF_INET6) {
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *) &a->sa;
    if (IN6_IS_ADDR_LOOPBACK(&s->sin6_addr))
      return TRUE;
    return IN6_IS_ADDR_V4MAPPED(&s->sin6_addr) && s->sin6_addr.s6_addr[12] == 127;
  }
  return FALSE;
}

uint16_t
emul_addr_port(const rnicpi_addr_t *a)
{
  if (a->sa.ss_family == AF_INET)
    return ntohs(((const struct sockaddr_in *) &a->sa)->sin_port);
  return ntohs(((const struct sockaddr_in6 *) &a->sa)->sin6_port);
}

static rnicpi_status_t
emul_listen(rnicpi_dev_t *d, uint32_t port, uint64_t ctx, rnicpi_listen_t **out)
{
  rnicpi_status_t st = RNICPI_OK;
  emul_listen_t *l = NULL;
  /* Its socket for other processes first, with no lock held (bound while
   * this process listens there already, it fails: refused below). */
  int xfd = emul_ring_listen_open(port);
  emul_fabric_lock();
  if (g_hash_table_contains(emul_fabric.listeners, GUINT_TO_POINTER(port))) {
    st = RNICPI_EEXIST;
  } else {
    l = g_new0(emul_listen_t, 1);
    l->base.dev = d;
    l->base.al_ctx = ctx;
    l->port = port;
    g_hash_table_insert(emul_fabric.listeners, GUINT_TO_POINTER(port), l);
    emul_ring_listen(l, xfd);
    xfd = -1;
    *out = &l->base;
  }
  emul_fabric_unlock();
  if (l != NULL)
    emul_ring_listen_start(l);
  if (xfd >= 0)
    close(xfd);
  return st;
}

static rnicpi_status_t
emul_unlisten(rnicpi_listen_t *lb)
{
  emul_listen_t *l = to_emul_listen(lb);
  emul_work_t w = { .nnotify = 0 };
  emul_fabric_lock();
  g_hash_table_remove(emul_fabric.listeners, GUINT_TO_POINTER(l->port));
  struct x_lsock *xs = emul_ring_unlisten(l, &w); /* and the requests of other processes */
  GSList *refused = emul_ud_unlisten_locked(l); /* UD service requests nobody answered */
  /* Requests nobody answered yet are refused, as a closed port would. */
  GList *conns = g_hash_table_get_values(emul_fabric.conns);
  for (GList *i = conns; i != NULL; i = i->next) {
    emul_conn_t *c = i->data;
    if (c->listener != l || c->x != NULL)
      continue;
    if (c->state == CONN_REQUESTED) {
      emul_qp_t *a = c->active;
      emul_cm_conn_drop(c);
      emul_cm_unreachable(a, RNICPI_CM_REASON_NO_LISTENER);
      emul_qp_set_error(a, &w);
    } else {
      c->listener = NULL;
    }
  }
  g_list_free(conns);
  emul_fabric_unlock();
  emul_ring_listen_close(xs);
  emul_ud_svc_refuse(refused);
  emul_work_deliver(&w);
  g_free(l);
  return RNICPI_OK;
}

void
emul_cm_loopback(struct sockaddr_storage *ss, gboolean v6)
{
  memset(ss, 0, sizeof(*ss));
  if (v6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = in6addr_loopback;
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *) ss;
    s4->sin_family = AF_INET;
    s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
}

/* The IRD and ORD a consumer asks for are within the device's limits: a
 * queue pair never takes more Reads than the device can hold. */
static gboolean
ird_ord_ok(const emul_dev_t *dev, const rnicpi_conn_param_t *p)
{
  return p->ird <= dev->caps.max_ird && p->ord <= dev->caps.max_ord;
}

/* Neither connected nor on its way (a linked QP is connected or was: its
 * state is the link's to read); fabric lock held. */
static gboolean
unconnected(const emul_qp_t *qp)
{
  return qp->link == NULL && qp->state == RNICPI_QPS_IDLE && qp->conn == NULL &&
         qp->peer == NULL && !qp->dialing;
}

static rnicpi_status_t
emul_connect(rnicpi_qp_t *q, const rnicpi_addr_t *dst, const rnicpi_conn_param_t *p)
{
  emul_qp_t *qp = to_emul_qp(q);
  emul_work_t w = { .nnotify = 0 };
  rnicpi_status_t st = RNICPI_OK;
  emul_dev_t *dev = emul_qp_dev(qp);

  if (p->pdata_len > dev->caps.pdata_connect || !ird_ord_ok(dev, p))
    return RNICPI_ELIMIT;
  if (p->three_way && !(dev->caps.features & RNICPI_CAP_THREE_WAY))
    return RNICPI_ENOTSUP;
  emul_dial_t d = EMUL_DIAL_NONE;
  emul_fabric_lock();
  if (!unconnected(qp)) {
    st = RNICPI_ESTATE;
    goto unlock;
  }
  emul_listen_t *l = emul_addr_is_ours(dst) ?
    g_hash_table_lookup(emul_fabric.listeners, GUINT_TO_POINTER((uint32_t) emul_addr_port(dst))) : NULL;
  if (l == NULL && emul_addr_is_ours(dst)) {
    /* Another process's listener, perhaps: dialled, and the connection's
     * segment made, with the lock let go (the QP marked meanwhile). */
    qp->dialing = TRUE;
    emul_fabric_unlock();
    gboolean up = emul_ring_dial_open((uint32_t) emul_addr_port(dst), &d);
    emul_fabric_lock();
    qp->dialing = FALSE;
    if (!unconnected(qp)) {
      st = RNICPI_ESTATE;  /* changed meanwhile (moved to ERROR): not ours to end */
      goto unlock;
    }
    if (up) {
      emul_ring_connect(qp, &d, dst->sa.ss_family == AF_INET6, p);
      goto unlock;
    }
  }
  if (l == NULL || to_emul_dev(l->base.dev)->pers != dev->pers) {
    emul_cm_unreachable(qp, l != NULL ? RNICPI_CM_REASON_BAD_PATH :
                            emul_addr_is_ours(dst) ? RNICPI_CM_REASON_NO_LISTENER : RNICPI_CM_REASON_BAD_PATH);
    emul_qp_set_error(qp, &w);
    goto unlock;
  }
  emul_conn_t *c = g_new0(emul_conn_t, 1);
  c->id = emul_fabric.next_conn_id++;
  c->state = CONN_REQUESTED;
  c->active = qp;
  c->listener = l;
  c->ird = p->ird;
  c->ord = p->ord;
  c->three_way = p->three_way;
  qp->conn = c;
  qp->attr.ird = p->ird;
  qp->attr.ord = p->ord;
  g_hash_table_insert(emul_fabric.conns, &c->id, c);
  emul_cm_arm(c, p->timeout_us);

  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = RNICPI_CM_CONNECT_REQUEST;
  ev->listen_ctx = l->base.al_ctx;
  ev->conn_id = c->id;
  ev->port = l->port;
  ev->ird = p->ird;
  ev->ord = p->ord;
  emul_cm_loopback(&ev->src.sa, dst->sa.ss_family == AF_INET6);  /* from where it connected */
  emul_cm_fill_pdata(ev, p->pdata, p->pdata_len);
  emul_defer_cm(to_emul_dev(l->base.dev), ev);
  g_free(ev);
unlock:
  emul_fabric_unlock();
  emul_ring_dial_close(&d);  /* what a connection did not take */
  emul_work_deliver(&w);
  return st;
}

void
emul_cm_settle(emul_qp_t *qp, uint32_t peer_ird, uint32_t peer_ord)
{
  qp->ord = MIN(qp->attr.ord, peer_ird);
  qp->ird = MIN(qp->attr.ird, peer_ord);
}

/* Join two QPs: IRD/ORD settle to what both sides can do. */
static void
establish(emul_conn_t *c, const void *act_pdata, uint32_t act_len,
          const void *pas_pdata, uint32_t pas_len)
{
  emul_qp_t *a = c->active, *p = c->passive;
  a->peer = p;
  p->peer = a;
  emul_cm_settle(a, p->attr.ird, p->attr.ord);
  emul_cm_settle(p, a->attr.ird, a->attr.ord);
  a->atomics = p->atomics = emul_qp_atomics(a) && emul_qp_atomics(p);
  a->state = p->state = RNICPI_QPS_RTS;
  /* The data path's own lock (emul_qp.c, "The fast path"); the receives
   * of a QP with an SRQ are the SRQ's, under its own lock (emul_srq.c). */
  emul_link_join(a, p);
  emul_cm_conn_drop(c);
  emul_qp_cm_event(a, RNICPI_CM_ESTABLISHED, act_pdata, act_len);
  emul_qp_cm_event(p, RNICPI_CM_ESTABLISHED, pas_pdata, pas_len);
}

static rnicpi_status_t
emul_accept(rnicpi_qp_t *q, uint64_t id, const rnicpi_conn_param_t *p)
{
  emul_qp_t *qp = to_emul_qp(q);
  rnicpi_status_t st = RNICPI_OK;
  emul_dev_t *dev = emul_qp_dev(qp);

  if (!ird_ord_ok(dev, p))
    return RNICPI_ELIMIT;
  emul_fabric_lock();
  emul_conn_t *c = g_hash_table_lookup(emul_fabric.conns, &id);
  if (c == NULL) {
    st = RNICPI_ENOENT;
  } else if (c->listener != NULL && to_emul_dev(c->listener->base.dev)->pers != dev->pers) {
    st = RNICPI_EINVAL;  /* a QP of the other personality cannot take it */
  } else if (c->x != NULL) {
    st = p->pdata_len > dev->caps.pdata_accept ? RNICPI_ELIMIT : emul_ring_accept(qp, c, p);
  } else if (c->state == CONN_REQUESTED && qp != c->active) {
    /* Passive accept. */
    if (p->pdata_len > dev->caps.pdata_accept) {
      st = RNICPI_ELIMIT;
    } else if (!unconnected(qp)) {
      st = RNICPI_ESTATE;
    } else {
      c->passive = qp;
      qp->conn = c;
      qp->attr.ird = p->ird;
      qp->attr.ord = p->ord;
      if (c->three_way) {
        /* REP: the active consumer confirms (RTU) or rejects. */
        c->state = CONN_REPLIED;
        rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
        ev->type = RNICPI_CM_CONNECT_REPLY;
        ev->qp_ctx = c->active->base.al_ctx;
        ev->conn_id = c->id;
        ev->ird = MIN(c->active->attr.ird, p->ord);
        ev->ord = MIN(c->active->attr.ord, p->ird);
        emul_cm_fill_pdata(ev, p->pdata, p->pdata_len);
        emul_defer_cm(emul_qp_dev(c->active), ev);
        g_free(ev);
      } else {
        establish(c, p->pdata, p->pdata_len, NULL, 0);
      }
    }
  } else if (c->state == CONN_REPLIED && qp == c->active) {
    /* Active side confirms a reply (RTU). */
    if (p->pdata_len > dev->caps.pdata_accept)
      st = RNICPI_ELIMIT;
    else
      establish(c, NULL, 0, p->pdata, p->pdata_len);
  } else {
    st = RNICPI_ESTATE;
  }
  emul_fabric_unlock();
  return st;
}

static rnicpi_status_t
emul_reject(rnicpi_dev_t *d, uint64_t id, const void *pdata, uint32_t len)
{
  emul_work_t w = { .nnotify = 0 };
  rnicpi_status_t st = RNICPI_OK;
  if (len > to_emul_dev(d)->caps.pdata_reject)
    return RNICPI_ELIMIT;
  emul_fabric_lock();
  emul_conn_t *c = g_hash_table_lookup(emul_fabric.conns, &id);
  if (c == NULL) {
    st = RNICPI_ENOENT;
  } else if (c->x != NULL) {
    emul_ring_reject(c, pdata, len, &w);
  } else {
    /* REQUESTED: the passive consumer refuses; REPLIED: the active one does. */
    emul_qp_t *to = c->state == CONN_REQUESTED ? c->active : c->passive;
    emul_qp_t *self = c->state == CONN_REQUESTED ? NULL : c->active;
    emul_cm_conn_drop(c);
    emul_qp_cm_event(to, RNICPI_CM_REJECTED, pdata, len);
    emul_qp_set_error(to, &w);
    if (self != NULL) /* the active consumer refused the reply: it is done too */
      emul_qp_set_error(self, &w);
  }
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return st;
}

/* A QP leaves a pending connection (destroy, error, disconnect). */
void
emul_cm_qp_gone(emul_qp_t *qp, emul_work_t *w)
{
  emul_conn_t *c = qp->conn;
  if (c == NULL)
    return;
  if (c->x != NULL) {
    emul_ring_qp_gone(qp, c, w);
    return;
  }
  emul_qp_t *other = qp == c->active ? c->passive : c->active;
  if (c->state == CONN_REQUESTED && qp == c->active && c->listener != NULL)
    emul_cm_request_cancelled(c);
  emul_cm_conn_drop(c);
  if (other != NULL) {
    emul_qp_cm_event(other, RNICPI_CM_BROKEN, NULL, 0);
    emul_qp_set_error(other, w);
  }
}

static rnicpi_status_t
emul_disconnect(rnicpi_qp_t *q, const void *pdata, uint32_t len)
{
  emul_qp_t *qp = to_emul_qp(q);
  emul_work_t w = { .nnotify = 0 };
  rnicpi_status_t st = RNICPI_OK;
  if (len > emul_qp_dev(qp)->caps.pdata_disconnect)
    return RNICPI_ELIMIT;
  emul_fabric_lock();
  emul_qp_wait_copy(qp);
  emul_link_t *lk = emul_link_take(qp);
  if (qp->state == RNICPI_QPS_RTS && qp->closing) {
    /* already draining */
  } else if (qp->state == RNICPI_QPS_RTS && emul_pers_of_qp(qp)->drain_on_disconnect &&
             qp->x != NULL && emul_ring_outstanding(qp)) {
    qp->closing = TRUE;  /* emul_ring_resp.c closes when the last answer is in */
  } else if (qp->state == RNICPI_QPS_RTS) {
    emul_qp_break(qp, &w, TRUE, pdata, len);
  } else if (qp->conn != NULL) {
    emul_cm_qp_gone(qp, &w);
    emul_qp_cm_event(qp, RNICPI_CM_DISCONNECTED, NULL, 0);
    emul_qp_set_error(qp, &w);
  } else if (qp->state == RNICPI_QPS_ERROR) {
    /* The peer's disconnect or a failure got here first: this side's
     * event is already on its way, so there is nothing left to do. */
  } else {
    st = RNICPI_ESTATE;
  }
  emul_link_drop(lk);
  emul_fabric_unlock();
  emul_work_deliver(&w);
  return st;
}

const rnicpi_cm_ops_t emul_cm_ops = {
  .size = sizeof(rnicpi_cm_ops_t),
  .listen = emul_listen,
  .unlisten = emul_unlisten,
  .connect = emul_connect,
  .accept = emul_accept,
  .reject = emul_reject,
  .disconnect = emul_disconnect,
  .ud_svc_request = emul_ud_svc_request,
  .ud_svc_reply = emul_ud_svc_reply,
};
