/*
 * vp/ib connection management through rdma_cm, with queue pairs the
 * provider owns ("external" QPs): rdma_cm resolves the address and route,
 * carries the private data and the IRD/ORD (responder resources and
 * initiator depth), and the provider moves its own QP through the states
 * with rdma_init_qp_attr.  On InfiniBand and RoCE the active side sees
 * CONNECT_RESPONSE, moves its QP to RTR and RTS and sends the RTU with
 * rdma_establish (the three-way handshake: RNIC-PI's CONNECT_REPLY when
 * asked for); the passive side moves its QP to RTS before rdma_accept.  On
 * iWARP the kernel's iw_cm moves the QP to RTS itself and both sides see
 * ESTABLISHED.
 *
 * UD service resolution (IB SIDR, RNIC-PI 1.3) goes through rdma_cm's UDP
 * port space: the requester's rdma_connect on a UDP identifier sends the
 * SIDR_REQ, and the SIDR_REP comes back as ESTABLISHED (or UNREACHABLE
 * with the SIDR status); a listener also listens on its port in that space
 * and answers with rdma_accept (the service's queue pair number) or
 * rdma_reject.  Over IP addresses rdma_cm puts its own Q_Key in the reply
 * and sends only SUCCESS or REJECT, and the IB CM pads private data to its
 * fixed sizes, so the adapter puts a header of its own in front of the
 * consumer's private data: a mark and the length (5 bytes) in the request;
 * a mark, the RNIC-PI status, the length and the service's Q_Key (12
 * bytes) in the reply.  A message without the mark (a peer that is not
 * vp/ib) is read as rdma_cm gives it.
 *
 * This file holds the consumer's side (listen, connect, accept, reject,
 * disconnect, a UD service request and its answer), the connection
 * objects, the queue pair's moves through the states rdma_cm computes and
 * the connect deadlines; rdma_cm's events are handled in ib_cm_event.c.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ib.h"

/* ---- connection objects ---------------------------------------------------- */

/* A new connection in the table (dev->lock held). */
ib_conn_t *
conn_new_locked(ib_dev_t *dev)
{
  ib_conn_t *c = g_new0(ib_conn_t, 1);
  c->tag.kind = IB_CTX_CONN;
  c->tag.obj = c;
  c->dev = dev;
  c->conn_id = dev->next_conn_id++;
  g_hash_table_insert(dev->conns, &c->conn_id, c);
  return c;
}

/* @c no longer has a deadline (dev->lock held). */
static void
conn_untime_locked(ib_conn_t *c)
{
  if (c->timed_link.data != NULL) {
    g_queue_unlink(&c->dev->timed, &c->timed_link);
    c->timed_link.data = NULL;
  }
}

/* Take @c out of the table and off its queue pair (dev->lock held): the
 * caller now owns it and destroys it with conn_free() once no lock is
 * held.  FALSE when someone else took it first. */
gboolean
conn_take_locked(ib_conn_t *c)
{
  if (c->dead)
    return FALSE;
  c->dead = TRUE;
  conn_untime_locked(c); /* the deadline list never holds a connection taken */
  g_hash_table_remove(c->dev->conns, &c->conn_id);
  if (c->qp != NULL && c->qp->conn == c)
    c->qp->conn = NULL;
  c->qp = NULL;
  return TRUE;
}

/* Destroy a taken connection's identifier and free it; with no lock held
 * and never before its pending event, if any, was acknowledged. */
void
conn_free(ib_conn_t *c)
{
  if (c->id != NULL)
    rdma_destroy_id(c->id);
  g_free(c);
}

/* The device's address of @dst's family, port 0, in @src; FALSE if none. */
static gboolean
source_addr(ib_dev_t *dev, const rnicpi_addr_t *dst, struct sockaddr_storage *src)
{
  memset(src, 0, sizeof(*src));
  for (uint32_t i = 0; i < dev->caps.num_addrs; i++)
    if (dev->caps.addrs[i].ss_family == dst->sa.ss_family) {
      *src = dev->caps.addrs[i];
      break;
    }
  if (src->ss_family == AF_INET)
    ((struct sockaddr_in *) src)->sin_port = 0;
  else if (src->ss_family == AF_INET6)
    ((struct sockaddr_in6 *) src)->sin6_port = 0;
  else
    return FALSE;
  return TRUE;
}

/* The address @dst stands for on @dev: a loopback destination, which
 * rdma_cm cannot reach through a device bound to a real netdev (to rxe the
 * kernel routes 127.0.0.1 out of that netdev, where no one answers: the IB
 * CM retries for 98 s; siw's TCP connect goes through lo, where nothing
 * listens), is the device's own address, where this host's listeners on
 * the device listen (ib_listen), its port kept, in @buf; else @dst.  The
 * access layer maps such a destination already (ual_ia_map_loopback):
 * this serves RNIC-PI callers that come without it. */
static const rnicpi_addr_t *
peer_addr(ib_dev_t *dev, const rnicpi_addr_t *dst, rnicpi_addr_t *buf)
{
  struct sockaddr_storage own;
  if (!rnicpi_addr_is_loopback((const struct sockaddr *) &dst->sa) ||
      !rnicpi_caps_loopback_target(&dev->caps, dst->sa.ss_family, &own))
    return dst;
  in_port_t port = dst->sa.ss_family == AF_INET6 ? ((const struct sockaddr_in6 *) &dst->sa)->sin6_port
                                                 : ((const struct sockaddr_in *) &dst->sa)->sin_port;
  buf->sa = own;
  if (own.ss_family == AF_INET6)
    ((struct sockaddr_in6 *) &buf->sa)->sin6_port = port;
  else
    ((struct sockaddr_in *) &buf->sa)->sin_port = port;
  if (g_atomic_int_compare_and_exchange(&dev->said_loopback, 0, 1)) {
    char from[INET6_ADDRSTRLEN] = "?", to[INET6_ADDRSTRLEN] = "?";
    inet_ntop(dst->sa.ss_family, dst->sa.ss_family == AF_INET6
              ? (const void *) &((const struct sockaddr_in6 *) &dst->sa)->sin6_addr
              : (const void *) &((const struct sockaddr_in *) &dst->sa)->sin_addr, from, sizeof(from));
    inet_ntop(own.ss_family, own.ss_family == AF_INET6
              ? (const void *) &((const struct sockaddr_in6 *) &own)->sin6_addr
              : (const void *) &((const struct sockaddr_in *) &own)->sin_addr, to, sizeof(to));
    g_message("%s: %s is this host, and rdma_cm cannot reach the loopback through the device: "
              "connecting to the device's own address %s instead, where this host's listeners "
              "on %s are (said once per device)", dev->name, from, to, dev->name);
  }
  return buf;
}

/* A new connection with an identifier of its own in port space @ps
 * (dev->lock held); NULL, with errno set, when rdma_cm gives none. */
static ib_conn_t *
conn_new_id_locked(ib_dev_t *dev, enum rdma_port_space ps)
{
  ib_conn_t *c = conn_new_locked(dev);
  if (rdma_create_id(dev->cm, &c->id, &c->tag, ps) != 0) {
    int err = errno;
    c->id = NULL;
    conn_take_locked(c);
    g_free(c);
    errno = err;
    return NULL;
  }
  return c;
}

/* ---- queue pair transitions -------------------------------------------------- */

/* Move @qp to @state with the attributes rdma_cm computed for @id, our
 * own rights and, where given, our IRD and ORD. */
static int
qp_cm_modify(ib_qp_t *qp, struct rdma_cm_id *id, enum ibv_qp_state state)
{
  struct ibv_qp_attr a;
  int mask = 0;
  memset(&a, 0, sizeof(a));
  a.qp_state = state;
  if (rdma_init_qp_attr(id, &a, &mask) != 0)
    return errno;
  if (state == IBV_QPS_INIT) {
    a.qp_access_flags = (unsigned) ib_qp_access_to_verbs(qp->access);
  } else if (state == IBV_QPS_RTR) {
    a.max_dest_rd_atomic = (uint8_t) MAX(qp->ird, 1u);
  } else if (state == IBV_QPS_RTS) {
    a.max_rd_atomic = (uint8_t) qp->ord;
    if (!(mask & IBV_QP_MAX_QP_RD_ATOMIC))
      mask |= IBV_QP_MAX_QP_RD_ATOMIC;
  }
  return ibv_modify_qp(qp->qp, &a, mask);
}

/* IB: INIT (again, with the path's port and P_Key), RTR, RTS. */
static int
qp_cm_up(ib_qp_t *qp, struct rdma_cm_id *id)
{
  int err;
  if ((err = qp_cm_modify(qp, id, IBV_QPS_INIT)) != 0 ||
      (err = qp_cm_modify(qp, id, IBV_QPS_RTR)) != 0 ||
      (err = qp_cm_modify(qp, id, IBV_QPS_RTS)) != 0)
    return err;
  return 0;
}

/* The queue pair leaves the connection: ERROR in verbs and here. */
void
qp_down(ib_qp_t *qp)
{
  ib_qp_set_error(qp);
  ib_qp_modify_verbs(qp, IBV_QPS_ERR);
}

static void
conn_param(ib_qp_t *qp, const rnicpi_conn_param_t *p, struct rdma_conn_param *cp)
{
  memset(cp, 0, sizeof(*cp));
  cp->private_data = p->pdata_len > 0 ? p->pdata : NULL;
  cp->private_data_len = (uint8_t) p->pdata_len;
  cp->responder_resources = (uint8_t) MIN(p->ird, 255u);
  cp->initiator_depth = (uint8_t) MIN(p->ord, 255u);
  cp->flow_control = 1;
  cp->retry_count = 7;
  cp->rnr_retry_count = 7; /* the IT-API's peer-not-ready: retry for ever */
  cp->srq = qp->srq != NULL;
  cp->qp_num = qp->base.qp_num;
}

/* Active side: the route is known; prepare the QP and send the request. */
int
active_connect(ib_conn_t *c)
{
  ib_qp_t *qp = c->qp;
  int err = 0;
  if (!c->dev->iwarp && (err = qp_cm_modify(qp, c->id, IBV_QPS_INIT)) != 0)
    return err;
  struct rdma_conn_param cp;
  conn_param(qp, &c->param, &cp);
  cp.private_data = c->param.pdata_len > 0 ? c->pdata : NULL;
  if (rdma_connect(c->id, &cp) != 0)
    return errno;
  c->state = IB_CONN_CONNECTING;
  return 0;
}

/* Active side, IB: the reply came; RTR, RTS and the RTU. */
int
active_establish(ib_conn_t *c)
{
  int err = qp_cm_up(c->qp, c->id);
  if (err == 0 && rdma_establish(c->id) != 0)
    err = errno;
  return err;
}

/* ---- connect timeouts ------------------------------------------------------------ */

/* Give the connect @c a deadline (dev->lock held): unanswered then, it
 * ends (ib_cm_expire()). */
static void
conn_time_locked(ib_conn_t *c, gint64 at)
{
  ib_dev_t *dev = c->dev;
  c->deadline = at;
  c->timed_link.data = c;
  g_queue_push_tail_link(&dev->timed, &c->timed_link);
  if (at < dev->timed_next) {
    dev->timed_next = at;
    ib_dev_wake(dev); /* the progress thread's poll may wait past it */
  }
}

/* The connect @c got no answer by its deadline (dev->lock held): it ends
 * as a pending connect the consumer disconnects does, UNREACHABLE with
 * reason TIMEOUT instead of DISCONNECTED.  Its identifier goes, which
 * withdraws the request (the IB CM sends a REJ), into @gone to destroy
 * once no lock is held; but on iWARP once rdma_connect was sent, iw_cm's
 * destroy_cm_id (iwcm.c) waits for the device's answer to the connect
 * (IWCM_F_CONNECT_WAIT), which siw gives only on the peer's MPA Reply or
 * at its own timer (MPAREQ_TIMEOUT, 10 s, siw_cm_queue_work in siw_cm.c):
 * the progress thread must not wait that long, so the identifier stays,
 * withdrawn, until that answer arrives (conn_event()) or the queue pair
 * goes.  The queue pair is in ERROR by then, so a late MPA Reply cannot
 * bring it up (siw_proc_mpareply refuses a queue pair past RTR). */
static void
conn_expire_locked(ib_conn_t *c, GPtrArray *gone)
{
  ib_dev_t *dev = c->dev;
  gboolean sent = c->state == IB_CONN_CONNECTING;
  ib_cm_out_t o = { .have = FALSE };
  g_debug("%s: QP %u: no answer to its connect within %" G_GUINT64_FORMAT " ms: unreachable",
          dev->name, c->qp->base.qp_num, c->param.timeout_us / 1000);
  ib_qp_torn_down(c->qp);
  fail_active(c, RNICPI_CM_UNREACHABLE, RNICPI_CM_REASON_TIMEOUT, NULL, &o);
  ib_dev_queue_cm(dev, &o.ev);
  if (dev->iwarp && sent)
    c->withdrawn = TRUE;
  else if (conn_take_locked(c))
    g_ptr_array_add(gone, c);
}

/* From the progress thread: end the connects whose deadline passed with
 * no answer (still resolving, or the request sent and no reply), and
 * find the next deadline.  Under dev->lock, so a reply handled at the
 * same moment (conn_event()) either came first, and the connection has
 * left those states, or finds it DOWN: one event either way. */
void
ib_cm_expire(ib_dev_t *dev)
{
  gint64 now = g_get_monotonic_time(), next = G_MAXINT64;
  GPtrArray *gone = g_ptr_array_new();
  g_mutex_lock(&dev->lock);
  for (GList *l = dev->timed.head; l != NULL;) {
    GList *after = l->next;
    ib_conn_t *c = l->data;
    if (c->state != IB_CONN_RESOLVING && c->state != IB_CONN_CONNECTING) {
      conn_untime_locked(c); /* answered, or ended otherwise */
    } else if (c->deadline > now) {
      next = MIN(next, c->deadline);
    } else {
      conn_untime_locked(c);
      conn_expire_locked(c, gone);
    }
    l = after;
  }
  dev->timed_next = next;
  g_mutex_unlock(&dev->lock);
  for (guint i = 0; i < gone->len; i++)
    conn_free(g_ptr_array_index(gone, i));
  g_ptr_array_free(gone, TRUE);
}

/* ---- operations ---------------------------------------------------------------- */

static ib_conn_t *conn_lookup_locked(ib_dev_t *dev, uint64_t conn_id);

/* Listen on @port of address @a in port space @ps: a new identifier in
 * l->ids; an errno when rdma_cm refuses. */
static int
listen_on(ib_listen_t *l, const struct sockaddr_storage *a, uint32_t port, enum rdma_port_space ps)
{
  struct sockaddr_storage sa = *a;
  if (sa.ss_family == AF_INET)
    ((struct sockaddr_in *) &sa)->sin_port = htons((uint16_t) port);
  else
    ((struct sockaddr_in6 *) &sa)->sin6_port = htons((uint16_t) port);
  struct rdma_cm_id *id;
  if (rdma_create_id(l->dev->cm, &id, &l->tag, ps) != 0)
    return errno;
  if (rdma_bind_addr(id, (struct sockaddr *) &sa) != 0 || rdma_listen(id, 128) != 0) {
    int err = errno;
    rdma_destroy_id(id);
    return err;
  }
  l->ids[l->nids++] = id;
  return 0;
}

/* Destroy a listener's identifiers; each waits for the acknowledgement of
 * its events. */
static void
listen_ids_destroy(ib_listen_t *l)
{
  for (uint32_t i = 0; i < l->nids; i++)
    rdma_destroy_id(l->ids[i]);
  l->nids = 0;
}

/* Close a listener: no request reaches the consumer from now, and those
 * not yet answered are refused. */
static void
listen_close(ib_listen_t *l)
{
  ib_dev_t *dev = l->dev;
  g_mutex_lock(&dev->lock);
  l->dead = TRUE;
  g_mutex_unlock(&dev->lock);
  listen_ids_destroy(l);
  /* Its requests not yet answered are refused. */
  GPtrArray *mine = g_ptr_array_new();
  g_mutex_lock(&dev->lock);
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, dev->conns);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    ib_conn_t *c = v;
    if (c->listener == l && (c->state == IB_CONN_REQUEST || c->state == IB_CONN_UD_REQUEST))
      g_ptr_array_add(mine, c);
  }
  for (guint i = 0; i < mine->len; i++)
    conn_take_locked(g_ptr_array_index(mine, i));
  g_mutex_unlock(&dev->lock);
  for (guint i = 0; i < mine->len; i++) {
    ib_conn_t *c = g_ptr_array_index(mine, i);
    if (c->state == IB_CONN_UD_REQUEST)
      ud_answer(c->id, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
    else
      reject_no_listener(c->id);
    conn_free(c);
  }
  g_ptr_array_free(mine, TRUE);
  g_free(l);
}

static rnicpi_status_t
ib_listen(rnicpi_dev_t *d, uint32_t port, uint64_t al_ctx, rnicpi_listen_t **out)
{
  ib_dev_t *dev = to_ib_dev(d);
  if (port == 0 || port > 65535)
    return RNICPI_EINVAL;
  ib_listen_t *l = g_new0(ib_listen_t, 1);
  l->base.dev = d;
  l->base.al_ctx = al_ctx;
  l->dev = dev;
  l->port = port;
  l->tag.kind = IB_CTX_LISTEN;
  l->tag.obj = l;
  /* Every address of the device, as the capability record lists them: a
   * peer may connect to any (an IPv6 one too), and rdma_cm ties each
   * identifier to this device.  UD service requests to the port arrive in
   * rdma_cm's UDP space. */
  int err = 0;
  for (uint32_t i = 0; i < dev->caps.num_addrs && err == 0; i++) {
    const struct sockaddr_storage *a = &dev->caps.addrs[i];
    err = listen_on(l, a, port, RDMA_PS_TCP);
    if (err == 0 && (dev->caps.features & RNICPI_CAP_UD))
      err = listen_on(l, a, port, RDMA_PS_UDP);
    if (err != 0 && err != EADDRINUSE && i > 0) {
      /* The first address listens; another that cannot (an IPv6 address
       * still tentative) is left out rather than failing the port. */
      char text[INET6_ADDRSTRLEN] = "?";
      inet_ntop(a->ss_family,
                a->ss_family == AF_INET ? (const void *) &((const struct sockaddr_in *) a)->sin_addr
                                        : (const void *) &((const struct sockaddr_in6 *) a)->sin6_addr,
                text, sizeof(text));
      g_message("%s: cannot listen on port %u of %s (%s); the port listens on the device's other "
                "addresses", dev->name, port, text, g_strerror(err));
      err = 0;
    }
  }
  if (err != 0 || l->nids == 0) {
    /* An identifier that listened may have taken a request already. */
    listen_close(l);
    return err == EADDRINUSE ? RNICPI_EEXIST : ib_status_of_errno(err != 0 ? err : EADDRNOTAVAIL);
  }
  *out = &l->base;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_unlisten(rnicpi_listen_t *lst)
{
  listen_close(to_ib_listen(lst));
  return RNICPI_OK;
}

static rnicpi_status_t
check_param(ib_dev_t *dev, const rnicpi_conn_param_t *p, uint32_t pdata_max)
{
  if (p->pdata_len > pdata_max)
    return RNICPI_ELIMIT;
  if (p->ird > dev->caps.max_ird || p->ord > dev->caps.max_ord)
    return RNICPI_ELIMIT;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_connect(rnicpi_qp_t *q, const rnicpi_addr_t *dst, const rnicpi_conn_param_t *p)
{
  ib_qp_t *qp = to_ib_qp(q);
  ib_dev_t *dev = qp->dev;
  rnicpi_status_t st = check_param(dev, p, dev->caps.pdata_connect);
  if (st != RNICPI_OK)
    return st;
  if (qp->state != IB_QP_IDLE || qp->conn != NULL)
    return RNICPI_ESTATE;
  rnicpi_addr_t own;
  dst = peer_addr(dev, dst, &own);
  struct sockaddr_storage src;
  if (!source_addr(dev, dst, &src))
    return RNICPI_EINVAL; /* the device has no address of the peer's family */
  /* 0 leaves the ending to rdma_cm's own timeouts (resolution, the IB
   * CM's retries, the iWARP device's MPA timer); so does "never". */
  gint64 at = p->timeout_us != 0 ? rnicpi_deadline(g_get_monotonic_time(), p->timeout_us)
                                 : G_MAXINT64;

  g_mutex_lock(&dev->lock);
  ib_conn_t *c = conn_new_id_locked(dev, RDMA_PS_TCP);
  if (c == NULL) {
    int err = errno;
    g_mutex_unlock(&dev->lock);
    return ib_status_of_errno(err);
  }
  c->qp = qp;
  c->state = IB_CONN_RESOLVING;
  c->param = *p;
  c->three_way = p->three_way;
  if (p->pdata_len > 0)
    memcpy(c->pdata, p->pdata, p->pdata_len);
  c->param.pdata = c->pdata;
  qp->conn = c;
  qp->ird = p->ird;
  qp->ord = p->ord;
  uint64_t id = c->conn_id;
  g_mutex_unlock(&dev->lock);
  ib_qp_set_state(qp, IB_QP_CONNECTING);
  /* Resolution runs in the kernel; its events come to the progress thread.
   * A synchronous failure (siw refuses a connect to a port nothing listens
   * on at once) is reported the same way, from that thread. */
  if (rdma_resolve_addr(c->id, (struct sockaddr *) &src, (struct sockaddr *) &dst->sa,
                        ib_config.resolve_ms) != 0) {
    int err = errno;
    rnicpi_cm_event_t ev;
    cm_ev_init(&ev, RNICPI_CM_UNREACHABLE, qp->base.al_ctx);
    ev.reason = rnicpi_cm_reason_of_errno(err);
    g_mutex_lock(&dev->lock);
    c->state = IB_CONN_DOWN;
    qp_down(qp);
    ib_sweep_add_locked(qp);
    g_mutex_unlock(&dev->lock);
    ib_dev_queue_cm(dev, &ev);
  } else if (at != G_MAXINT64) {
    /* Armed only once this thread is done with the identifier and the
     * queue pair's state: from now the progress thread may end the
     * connect and destroy the identifier. */
    g_mutex_lock(&dev->lock);
    /* Found again by its number: an address error may have ended and
     * freed it on the progress thread meanwhile. */
    c = conn_lookup_locked(dev, id);
    if (c != NULL && (c->state == IB_CONN_RESOLVING || c->state == IB_CONN_CONNECTING))
      conn_time_locked(c, at);
    g_mutex_unlock(&dev->lock);
  }
  return RNICPI_OK;
}

static ib_conn_t *
conn_lookup_locked(ib_dev_t *dev, uint64_t conn_id)
{
  ib_conn_t *c = g_hash_table_lookup(dev->conns, &conn_id);
  return c != NULL && !c->dead ? c : NULL;
}

static rnicpi_status_t
ib_accept(rnicpi_qp_t *q, uint64_t conn_id, const rnicpi_conn_param_t *p)
{
  ib_qp_t *qp = to_ib_qp(q);
  ib_dev_t *dev = qp->dev;
  rnicpi_status_t st = check_param(dev, p, dev->caps.pdata_accept);
  if (st != RNICPI_OK)
    return st;
  g_mutex_lock(&dev->lock);
  ib_conn_t *c = conn_lookup_locked(dev, conn_id);
  if (c == NULL) {
    g_mutex_unlock(&dev->lock);
    return RNICPI_ENOENT;
  }
  int err = 0;
  if (c->state == IB_CONN_REPLIED) {
    /* Active side of a three-way connect: the consumer confirms the reply. */
    if (c->qp != qp) {
      g_mutex_unlock(&dev->lock);
      return RNICPI_EINVAL;
    }
    if (p->pdata_len > 0) {
      /* rdma_establish sends the RTU without private data. */
      g_mutex_unlock(&dev->lock);
      g_message("%s: QP %u: the answer to a three-way reply carries no private data over "
                "rdma_cm (%u bytes given); accept it with none", dev->name, qp->base.qp_num,
                p->pdata_len);
      return RNICPI_ELIMIT;
    }
    rnicpi_cm_event_t ev;
    if ((err = active_establish(c)) != 0) {
      rdma_reject(c->id, NULL, 0);
      cm_ev_init(&ev, RNICPI_CM_BROKEN, qp->base.al_ctx);
      c->state = IB_CONN_DOWN;
      qp_down(qp);
      ib_sweep_add_locked(qp);
    } else {
      cm_ev_init(&ev, RNICPI_CM_ESTABLISHED, qp->base.al_ctx);
      ev.ird = qp->ird;
      ev.ord = qp->ord;
      c->state = IB_CONN_UP;
      ib_qp_set_state(qp, IB_QP_RTS);
    }
    g_mutex_unlock(&dev->lock);
    ib_dev_queue_cm(dev, &ev);
    return RNICPI_OK;
  }
  if (c->state != IB_CONN_REQUEST) {
    g_mutex_unlock(&dev->lock);
    return RNICPI_ESTATE;
  }
  if (qp->state != IB_QP_IDLE || qp->conn != NULL) {
    g_mutex_unlock(&dev->lock);
    return RNICPI_ESTATE;
  }
  /* Negotiated: no more Reads out than the requester takes in, and no
   * more in than it sends out. */
  qp->ird = MIN(p->ird, c->req_ord);
  qp->ord = MIN(p->ord, c->req_ird);
  /* IB: the passive side's QP runs before its REP leaves (as librdmacm's
   * own rdma_accept does for the QPs it owns). */
  if (!dev->iwarp && (err = qp_cm_up(qp, c->id)) != 0) {
    g_mutex_unlock(&dev->lock);
    if (err == EINVAL) {
      /* The IB CM left the request's state: its requester withdrew it
       * (REQUEST_CANCELLED follows). */
      return RNICPI_ENOENT;
    }
    g_message("%s: cannot move QP %u to RTS for connection %" G_GUINT64_FORMAT ": %s; the "
              "request stays pending (reject it, or accept it on another queue pair)",
              dev->name, qp->base.qp_num, conn_id, g_strerror(err));
    return ib_status_of_errno(err);
  }
  struct rdma_conn_param cp;
  rnicpi_conn_param_t np = *p;
  np.ird = qp->ird;
  np.ord = qp->ord;
  conn_param(qp, &np, &cp);
  /* The state first: ESTABLISHED may be handled as soon as the lock is
   * dropped, and it moves the queue pair to RTS (so may the requester's
   * first message, ib_qp_complete()). */
  ib_qp_set_state(qp, dev->iwarp ? IB_QP_ACCEPTING : IB_QP_RTS);
  if (rdma_accept(c->id, &cp) != 0) {
    err = errno;
    ib_qp_set_state(qp, IB_QP_IDLE);
    g_mutex_unlock(&dev->lock);
    /* The requester went away (iWARP: its stream closed; IB: the CM left
     * the request's state); REQUEST_CANCELLED follows. */
    if (err == EINVAL || err == ECONNRESET || err == ECONNABORTED || err == ECONNREFUSED ||
        err == ETIMEDOUT || err == ENOTCONN || err == EPIPE)
      return RNICPI_ENOENT;
    return ib_status_of_errno(err);
  }
  c->qp = qp;
  qp->conn = c;
  c->state = IB_CONN_ACCEPTING;
  g_mutex_unlock(&dev->lock);
  return RNICPI_OK;
}

static rnicpi_status_t
ib_reject(rnicpi_dev_t *d, uint64_t conn_id, const void *pdata, uint32_t len)
{
  ib_dev_t *dev = to_ib_dev(d);
  if (len > dev->caps.pdata_reject)
    return RNICPI_ELIMIT;
  g_mutex_lock(&dev->lock);
  ib_conn_t *c = conn_lookup_locked(dev, conn_id);
  /* A request accepted keeps its conn_id as the connection's; as one
   * rejected or withdrawn, it is no request pending any more (rnicpi.h:
   * RNICPI_ENOENT, which the access layer takes as answered). */
  if (c == NULL || (c->state != IB_CONN_REQUEST && c->state != IB_CONN_REPLIED)) {
    g_mutex_unlock(&dev->lock);
    return RNICPI_ENOENT;
  }
  rdma_reject(c->id, pdata, (uint8_t) len);
  if (c->state == IB_CONN_REPLIED) {
    /* The active side refused the reply: its QP leaves the connection. */
    c->state = IB_CONN_DOWN;
    qp_down(c->qp);
    ib_sweep_add_locked(c->qp);
    g_mutex_unlock(&dev->lock);
    return RNICPI_OK;
  }
  conn_take_locked(c);
  g_mutex_unlock(&dev->lock);
  conn_free(c);
  return RNICPI_OK;
}

static rnicpi_status_t
ib_disconnect(rnicpi_qp_t *q, const void *pdata, uint32_t len)
{
  ib_qp_t *qp = to_ib_qp(q);
  ib_dev_t *dev = qp->dev;
  (void) pdata;
  if (len > 0)
    return RNICPI_ELIMIT; /* rdma_disconnect carries no private data */
  g_mutex_lock(&dev->lock);
  ib_conn_t *c = qp->conn;
  if (c == NULL || c->state == IB_CONN_DOWN) {
    g_mutex_unlock(&dev->lock);
    return RNICPI_ESTATE;
  }
  /* ERROR here before the device hears of it (ib_qp_torn_down()). */
  ib_qp_torn_down(qp);
  if (c->state == IB_CONN_RESOLVING || c->state == IB_CONN_CONNECTING ||
      c->state == IB_CONN_REPLIED) {
    /* The connect is still pending: rdma_disconnect would send nothing and
     * raise nothing.  The request is withdrawn (destroying the identifier
     * makes the CM refuse it toward the listener), and this side's
     * DISCONNECTED is ours to raise, as for a connected queue pair. */
    ib_cm_out_t o = { .have = FALSE };
    fail_active(c, RNICPI_CM_DISCONNECTED, RNICPI_CM_REASON_NONE, NULL, &o);
    if (conn_take_locked(c))
      o.destroy = c;
    g_mutex_unlock(&dev->lock);
    ib_dev_queue_cm(dev, &o.ev);
    if (o.destroy != NULL)
      conn_free(o.destroy);
    return RNICPI_OK;
  }
  ib_qp_set_error(qp);
  rdma_disconnect(c->id);
  c->closing = TRUE;
  /* librdmacm leaves a QP it does not own in RTS: flush it now.  The
   * DISCONNECTED event, ours and the peer's, follows. */
  qp_down(qp);
  ib_sweep_add_locked(qp);
  g_mutex_unlock(&dev->lock);
  return RNICPI_OK;
}

void
ib_cm_qp_error(ib_qp_t *qp)
{
  ib_dev_t *dev = qp->dev;
  g_mutex_lock(&dev->lock);
  ib_conn_t *c = qp->conn;
  if (c != NULL && c->state != IB_CONN_DOWN)
    rdma_disconnect(c->id); /* the peer learns the connection ended */
  g_mutex_unlock(&dev->lock);
}

void
ib_cm_qp_gone(ib_qp_t *qp)
{
  ib_dev_t *dev = qp->dev;
  g_mutex_lock(&dev->lock);
  ib_conn_t *c = qp->conn;
  gboolean mine = c != NULL && conn_take_locked(c);
  g_mutex_unlock(&dev->lock);
  if (mine)
    conn_free(c);
}

void
ib_cm_close_dev(ib_dev_t *dev)
{
  GPtrArray *all = g_ptr_array_new();
  g_mutex_lock(&dev->lock);
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, dev->conns);
  while (g_hash_table_iter_next(&it, NULL, &v))
    g_ptr_array_add(all, v);
  for (guint i = 0; i < all->len; i++)
    conn_take_locked(g_ptr_array_index(all, i));
  g_mutex_unlock(&dev->lock);
  for (guint i = 0; i < all->len; i++) {
    ib_conn_t *c = g_ptr_array_index(all, i);
    if (c->state == IB_CONN_REQUEST)
      reject_no_listener(c->id);
    else if (c->state == IB_CONN_UD_REQUEST)
      ud_answer(c->id, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
    conn_free(c);
  }
  g_ptr_array_free(all, TRUE);
}

static rnicpi_status_t
ib_ud_svc_request(rnicpi_dev_t *d, const rnicpi_addr_t *dst, const void *pdata, uint32_t len,
                  uint64_t req_ctx)
{
  ib_dev_t *dev = to_ib_dev(d);
  if (!(dev->caps.features & RNICPI_CAP_UD))
    return RNICPI_ENOTSUP;
  if (len > dev->caps.pdata_ud_req || (len > 0 && pdata == NULL))
    return RNICPI_ELIMIT;
  rnicpi_addr_t own;
  dst = peer_addr(dev, dst, &own);
  struct sockaddr_storage src;
  if (!source_addr(dev, dst, &src))
    return RNICPI_EINVAL;
  g_mutex_lock(&dev->lock);
  ib_conn_t *c = conn_new_id_locked(dev, RDMA_PS_UDP);
  if (c == NULL) {
    int err = errno;
    g_mutex_unlock(&dev->lock);
    return ib_status_of_errno(err);
  }
  c->state = IB_CONN_UD_ASKING;
  c->ud_ctx = req_ctx;
  c->peer = *dst;
  c->param.pdata_len = len;
  memcpy(c->pdata, ud_req_mark, sizeof(ud_req_mark));
  c->pdata[4] = (uint8_t) len;
  if (len > 0)
    memcpy(c->pdata + IB_UD_REQ_HDR, pdata, len);
  g_mutex_unlock(&dev->lock);
  /* As for a connection: the answer, or its failure, comes from the
   * progress thread. */
  if (rdma_resolve_addr(c->id, (struct sockaddr *) &src, (struct sockaddr *) &dst->sa,
                        ib_config.resolve_ms) != 0) {
    ib_cm_out_t o = { .have = FALSE };
    g_mutex_lock(&dev->lock);
    ud_reply_event(c, NULL, &o);
    g_mutex_unlock(&dev->lock);
    ib_dev_queue_cm(dev, &o.ev);
    if (o.destroy != NULL)
      conn_free(o.destroy);
  }
  return RNICPI_OK;
}

static rnicpi_status_t
ib_ud_svc_reply(rnicpi_dev_t *d, uint64_t req_id, rnicpi_ud_svc_status_t status, uint32_t qpn,
                uint32_t qkey, const void *pdata, uint32_t len)
{
  ib_dev_t *dev = to_ib_dev(d);
  if (len > dev->caps.pdata_ud_rep || (len > 0 && pdata == NULL))
    return RNICPI_ELIMIT;
  if ((unsigned) status > RNICPI_UD_SVC_REDIRECT)
    return RNICPI_EINVAL;
  g_mutex_lock(&dev->lock);
  ib_conn_t *c = conn_lookup_locked(dev, req_id);
  if (c == NULL || c->state != IB_CONN_UD_REQUEST) {
    g_mutex_unlock(&dev->lock);
    return RNICPI_ENOENT;
  }
  conn_take_locked(c);
  g_mutex_unlock(&dev->lock);
  int err = ud_answer(c->id, status, qpn, qkey, pdata, len);
  if (err != 0)
    g_message("%s: the answer to UD service request %" G_GUINT64_FORMAT " could not be sent "
              "(%s); the requester sees no reply", dev->name, req_id, g_strerror(err));
  /* SIDR has no state after the reply. */
  conn_free(c);
  return RNICPI_OK;
}

const rnicpi_cm_ops_t ib_cm_ops = {
  .size = sizeof(rnicpi_cm_ops_t),
  .listen = ib_listen,
  .unlisten = ib_unlisten,
  .connect = ib_connect,
  .accept = ib_accept,
  .reject = ib_reject,
  .disconnect = ib_disconnect,
  .ud_svc_request = ib_ud_svc_request,
  .ud_svc_reply = ib_ud_svc_reply,
};
