/*
 * vp/emul unreliable datagrams (RNIC-PI 1.3, InfiniBand personality only):
 * UD queue pairs, address handles and UD service resolution (IB SIDR).
 *
 * Rules, as an IB HCA applies them (IBTA vol 1, 9.8.3 UD, 10.2.4 Q_Keys,
 * 11.2.2 address vectors, 12.11 SIDR):
 * - a datagram carries at most EMUL_UD_MTU payload bytes (the path MTU,
 *   IBTA 9.8.3: UD messages are one packet); post_send refuses a larger
 *   one with RNICPI_ERANGE and nothing is sent;
 * - delivery is unreliable and unacknowledged: a datagram to a GID that is
 *   not this fabric's, to a QP number no UD QP has, with a Q_Key that does
 *   not match the destination's, or finding no receive posted is dropped
 *   without a trace at the destination; the sender's completion is a
 *   success all the same (the HCA completes a UD send once it is on the
 *   wire, IBTA 10.8.3.1);
 * - a Q_Key with bit 31 set in the work request means the sending QP's own
 *   Q_Key (controlled Q_Keys, IBTA 10.2.4);
 * - every datagram carries a GRH: emul routes by GID, as RoCE does, so the
 *   40-byte Global Route Header (IBTA 8.3) is always placed at the start of
 *   the receive buffer and RNICPI_WC_GRH is always set; byte_len counts it
 *   (as ibv_wc.byte_len does).  A receive whose buffers cannot hold the
 *   GRH and the payload completes with RNICPI_WC_LOC_LEN_ERR; the QP stays
 *   usable and the sender still sees success;
 * - receives complete with the sender's QP number and GID (RNICPI_WC_UD).
 *
 * Across processes (emul_ring_ud.c): a datagram to a QP number no UD QP of
 * this process has goes to the process that owns it, whose progress thread
 * delivers it here (emul_ud_deliver) by the same rules; a service request
 * for a port nobody here listens on goes to the process listening there,
 * whose answer comes back the same way (emul_ud_svc_reply_to).
 *
 * Locks.  A UD QP has a link of its own (emul_link_join_ud) that guards
 * its receive queue and state.  A datagram whose SGEs name no memory
 * window or fast-registered region (emul_key_fixed) is checked, gathered
 * and delivered under the sending QP's link (emul_ud_post_send): the
 * destination is the one its last datagram found (emul_qp_t.ud_to), or is
 * looked up in the table under the table's own lock (emul_fabric.ud_lock,
 * whose holder never waits), and its link is only tried, never waited
 * for, while the sender's is held; a busy one is waited for after the
 * sender's link went (ud_take).  A UD QP's destroy takes it out of the
 * table, counts (emul_fabric.ud_gen: every remembered destination is
 * looked up again) and takes every link once before it goes, so none is
 * still in use.  Threads whose QPs are their own share no lock (itapi-perf
 * -T 2 --ud).  A destination with a shared receive queue takes its
 * receive under the SRQ's lock (emul_srq.c).  What needs more takes the
 * fabric lock: a receive naming a window or a fast-registered region, a
 * datagram leaving the process, and a post naming one (as on a connected
 * QP).  The region table is read under a link, as the RC fast path does
 * (a region's removal takes every link once, emul_links_pass).
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "emul.h"

typedef struct emul_ah {
  rnicpi_ah_t base;
  rnicpi_ah_attr_t attr;
} emul_ah_t;

static inline emul_ah_t *to_emul_ah(rnicpi_ah_t *a) { return (emul_ah_t *) a; }

/* A UD service request waiting for the listener's consumer. */
typedef struct emul_ud_svc {
  uint64_t id;
  emul_dev_t *requester;   /* referenced while pending; NULL: from another process */
  uint64_t req_ctx;
  int fd;                  /* another process's request: the socket to answer on */
  emul_listen_t *listener;
  rnicpi_addr_t responder; /* the address the request was sent to */
} emul_ud_svc_t;

void
emul_ud_qp_add_locked(emul_qp_t *qp)
{
  rnicpi_spin_lock(&emul_fabric.ud_lock);
  g_hash_table_insert(emul_fabric.ud_qps, GUINT_TO_POINTER(qp->base.qp_num), qp);
  rnicpi_spin_unlock(&emul_fabric.ud_lock);
}

void
emul_ud_qp_gone_locked(emul_qp_t *qp)
{
  rnicpi_spin_lock(&emul_fabric.ud_lock);
  g_hash_table_remove(emul_fabric.ud_qps, GUINT_TO_POINTER(qp->base.qp_num));
  rnicpi_spin_unlock(&emul_fabric.ud_lock);
  /* A sender that found @qp with its own link held (ud_send_linked) finds
   * it no more once the count moved, and one still using it holds that
   * link: every link is taken once. */
  g_atomic_int_inc(&emul_fabric.ud_gen);
  emul_links_quiesce();
}

/* UD QP @qpn of this process with its link taken, or NULL (none).  Its
 * link is stable while it is in the table (destroy takes it out first).
 * The table's lock is never held while waiting: a thread that holds its
 * own QP's link takes it (ud_send_linked). */
static emul_qp_t *
ud_take(uint32_t qpn)
{
  for (unsigned n = 1;; n++) {
    rnicpi_spin_lock(&emul_fabric.ud_lock);
    emul_qp_t *dst = g_hash_table_lookup(emul_fabric.ud_qps, GUINT_TO_POINTER(qpn));
    if (dst == NULL) {
      rnicpi_spin_unlock(&emul_fabric.ud_lock);
      return NULL;
    }
    gboolean got = rnicpi_spin_trylock(&dst->link->lock);
    rnicpi_spin_unlock(&emul_fabric.ud_lock);
    if (got)
      return dst;
    rnicpi_spin_backoff(n);
  }
}

/* The GID of a device's port 0: its first address, IPv4-mapped. */
static void
dev_gid(const emul_dev_t *dev, uint8_t gid[16])
{
  memset(gid, 0, 16);
  const struct sockaddr_storage *ss = &dev->caps.addrs[0];
  if (ss->ss_family == AF_INET6) {
    memcpy(gid, &((const struct sockaddr_in6 *) ss)->sin6_addr, 16);
  } else {
    gid[10] = gid[11] = 0xff;
    memcpy(gid + 12, &((const struct sockaddr_in *) ss)->sin_addr, 4);
  }
}

/* The fabric answers on the host's loopback GIDs (as emul_addr_is_ours). */
static gboolean
gid_is_ours(const uint8_t gid[16])
{
  rnicpi_addr_t a;
  memset(&a, 0, sizeof(a));
  struct sockaddr_in6 *s = (struct sockaddr_in6 *) &a.sa;
  s->sin6_family = AF_INET6;
  memcpy(&s->sin6_addr, gid, 16);
  return emul_addr_is_ours(&a);
}

/* IBTA 8.3.1: IPVer 6, traffic class, flow label, payload length, next
 * header 0x1B (IBA transport), hop limit, SGID, DGID. */
static void
grh_build(uint8_t *g, const rnicpi_ah_attr_t *ah, const uint8_t sgid[16], uint32_t paylen)
{
  uint32_t w0 = (6u << 28) | ((uint32_t) ah->traffic_class << 20) | (ah->flow_label & 0xfffff);
  w0 = htonl(w0);
  memcpy(g, &w0, 4);
  uint16_t pl = htons((uint16_t) MIN(paylen, 0xffffu));
  memcpy(g + 4, &pl, 2);
  g[6] = 0x1b;
  g[7] = ah->hop_limit != 0 ? ah->hop_limit : 64;
  memcpy(g + 8, sgid, 16);
  memcpy(g + 24, ah->dgid, 16);
}


/* The sending half of a datagram (under the sending QP's lock: its link,
 * or the fabric lock): checks, then the GRH and payload gathered into
 * @out.  FALSE when the WR ended here (*@st, and an error completion
 * where one is due); else the datagram is on the wire, @len its payload. */
static gboolean
ud_build(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w, emul_ud_out_t *out,
         rnicpi_status_t *st, uint64_t *len)
{
  out->away = FALSE;
  *st = RNICPI_OK;
  if (wr->opcode != RNICPI_WR_SEND) {
    *st = RNICPI_EINVAL;
    return FALSE;
  }
  /* IBTA 10.2.3: a datagram names an AH of the QP's domain (rnicpi.h
   * post_send: RNICPI_EACCES for none or another domain's). */
  if (wr->ah == NULL || wr->ah->pd != qp->base.pd) {
    *st = RNICPI_EACCES;
    return FALSE;
  }
  *len = 0;
  for (uint32_t i = 0; i < wr->num_sge; i++)
    *len += wr->sg_list[i].length;
  if (*len > EMUL_UD_MTU) {
    *st = RNICPI_ERANGE;
    return FALSE;
  }
  if (qp->state != RNICPI_QPS_RTS) {
    emul_complete(qp->scq, qp, wr->wr_id, RNICPI_WC_SEND, RNICPI_WC_WR_FLUSH_ERR, 0, w);
    return FALSE;
  }
  if (!emul_sges_ok(qp, wr->sg_list, wr->num_sge, RNICPI_ACCESS_LOCAL_READ, len)) {
    /* A local protection error completes the WR; the UD QP stays usable. */
    emul_complete(qp->scq, qp, wr->wr_id, RNICPI_WC_SEND, RNICPI_WC_LOC_PROT_ERR, 0, w);
    return FALSE;
  }
  dev_gid(emul_qp_dev(qp), out->sgid);
  grh_build(out->bytes, &to_emul_ah(wr->ah)->attr, out->sgid, (uint32_t) *len);
  uint8_t *p = out->bytes + EMUL_UD_GRH_LEN;
  for (uint32_t i = 0; i < wr->num_sge; i++) {
    memcpy(p, (const uint8_t *) (uintptr_t) wr->sg_list[i].addr, wr->sg_list[i].length);
    p += wr->sg_list[i].length;
  }
  out->d = (emul_ud_dgram_t) {
    .pers = emul_pers_of_qp(qp), .qkey = (wr->remote_qkey & 0x80000000u) ? qp->qkey : wr->remote_qkey,
    .src_qpn = qp->base.qp_num, .sgid = out->sgid, .buf = out->bytes, .len = EMUL_UD_GRH_LEN + *len,
  };
  return TRUE;
}

/* Deliver @out under @qp's link @l (held) when the destination's can be
 * had without waiting: the QP itself, or one whose link is free; it is
 * looked up in the table only when @qp's last datagram went elsewhere or
 * a UD QP was destroyed since (emul_qp_t.ud_to: destroy waits for every
 * link after it counted, emul_ud_qp_gone_locked, so a destination found
 * with @l held stays valid while @l is).  FALSE: not delivered. */
static gboolean
ud_send_linked(emul_qp_t *qp, emul_link_t *l, uint32_t qpn, emul_ud_out_t *out, emul_work_t *w)
{
  guint gen = g_atomic_int_get(&emul_fabric.ud_gen);
  emul_qp_t *dst = qp->ud_to;
  if (dst == NULL || qp->ud_to_qpn != qpn || qp->ud_to_gen != gen) {
    rnicpi_spin_lock(&emul_fabric.ud_lock);  /* its holders never wait */
    dst = g_hash_table_lookup(emul_fabric.ud_qps, GUINT_TO_POINTER(qpn));
    rnicpi_spin_unlock(&emul_fabric.ud_lock);
    if (dst == NULL)
      return FALSE;
    qp->ud_to = dst;
    qp->ud_to_qpn = qpn;
    qp->ud_to_gen = gen;
  }
  if (dst->link == l)
    return emul_ud_deliver(dst, &out->d, w);
  if (!rnicpi_spin_trylock(&dst->link->lock))
    return FALSE;  /* never wait for a second link holding one */
  gboolean done = emul_ud_deliver(dst, &out->d, w);
  rnicpi_spin_unlock(&dst->link->lock);
  return done;
}

rnicpi_status_t
emul_ud_post_send(emul_qp_t *qp, emul_link_t *l, const rnicpi_send_wr_t *wr, emul_work_t *w,
                  emul_ud_out_t *out)
{
  rnicpi_status_t st;
  uint64_t len;
  gboolean sent = ud_build(qp, wr, w, out, &st, &len);
  /* A datagram to a GID that is not this fabric's is gone at once. */
  gboolean done = !sent || !gid_is_ours(to_emul_ah(wr->ah)->attr.dgid);
  if (l != NULL) {
    done = done || ud_send_linked(qp, l, wr->remote_qpn, out, w);
    rnicpi_spin_unlock(&l->lock);
  }
  if (!sent)
    return st;
  /* From here on the datagram is on the wire: the send succeeds whatever
   * becomes of it. */
  emul_qp_t *dst;
  if (!done && l != NULL && (dst = ud_take(wr->remote_qpn)) != NULL) {
    /* A busy destination's link, waited for with none held. */
    done = emul_ud_deliver(dst, &out->d, w);
    rnicpi_spin_unlock(&dst->link->lock);
  }
  if (!done) {
    /* A receive naming a window or fast-registered region, or another
     * process's QP (or none): under the fabric lock. */
    if (l != NULL)
      emul_lock_data_path();
    if ((dst = ud_take(wr->remote_qpn)) != NULL) {
      emul_ud_deliver(dst, &out->d, w);
      rnicpi_spin_unlock(&dst->link->lock);
    } else {
      /* Another process's, maybe: its sendmsg() waits for the lock to go. */
      emul_ring_ud_away_locked(qp, wr->remote_qpn, out);
    }
    if (l != NULL)
      emul_fabric_unlock();
  }
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) len, w);
  return RNICPI_OK;
}

void
emul_ud_deliver_locked(emul_qp_t *dst, const emul_ud_dgram_t *d, emul_work_t *w)
{
  emul_link_t *l = emul_link_take(dst);
  emul_ud_deliver(dst, d, w);
  emul_link_drop(l);
}

gboolean
emul_ud_deliver(emul_qp_t *dst, const emul_ud_dgram_t *d, emul_work_t *w)
{
  if (dst->state != RNICPI_QPS_RTS || dst->qkey != d->qkey || emul_qp_dev(dst)->pers != d->pers)
    return TRUE;  /* dropped without a trace */
  emul_rq_lock(dst);
  const emul_rwqe_t *next = emul_wq_peek(emul_qp_rq(dst));
  if (next == NULL || (!emul_fabric_mine && !emul_sges_fixed(d->pers, next->sge, next->num_sge))) {
    emul_rq_unlock(dst);
    /* No receive: dropped too.  One whose entries change under the fabric
     * lock (emul_key_fixed) is that lock's to deliver into. */
    return next == NULL;
  }
  /* The receive is taken, checked and, when it cannot hold the datagram,
   * completed with its error as a Send's is (emul_resp.c); the QP stays
   * usable. */
  emul_rwqe_t *r = emul_resp_recv_pop(dst);
  emul_fault_t f;
  if (!emul_resp_recv_fits(dst, r, d->len, &f, w))
    return TRUE;
  emul_scatter(r->sge, r->num_sge, d->buf, d->len);
  rnicpi_wc_t rwc = {
    .wr_id = r->wr_id, .qp_ctx = dst->base.al_ctx, .status = RNICPI_WC_SUCCESS,
    .opcode = RNICPI_WC_RECV, .flags = RNICPI_WC_UD | RNICPI_WC_GRH,
    .byte_len = (uint32_t) d->len, .src_qpn = d->src_qpn,
  };
  memcpy(rwc.src_gid, d->sgid, 16);
  emul_cq_push(dst->rcq, &rwc, w);
  emul_resp_recv_put(dst, r);
  return TRUE;
}

/* Address handles. */

static rnicpi_status_t
emul_ah_create(rnicpi_pd_t *p, const rnicpi_ah_attr_t *attr, rnicpi_ah_t **out)
{
  emul_dev_t *dev = to_emul_dev(p->dev);
  if (!(dev->caps.features & RNICPI_CAP_UD))
    return RNICPI_ENOTSUP;
  if (attr->port >= dev->caps.num_ports)
    return RNICPI_EINVAL;
  emul_ah_t *ah = g_new0(emul_ah_t, 1);
  ah->base.pd = p;
  ah->attr = *attr;
  g_atomic_int_inc(&to_emul_pd(p)->nobj);
  *out = &ah->base;
  return RNICPI_OK;
}

static rnicpi_status_t
emul_ah_destroy(rnicpi_ah_t *a)
{
  g_atomic_int_dec_and_test(&to_emul_pd(a->pd)->nobj);
  g_free(to_emul_ah(a));
  return RNICPI_OK;
}

const rnicpi_ud_ops_t emul_ud_ops = {
  .size = sizeof(rnicpi_ud_ops_t),
  .ah_create = emul_ah_create,
  .ah_destroy = emul_ah_destroy,
};

/* UD service resolution (IBTA 12.11: SIDR_REQ / SIDR_REP). */

void
emul_ud_svc_reply_to(emul_dev_t *requester, uint64_t req_ctx, const rnicpi_addr_t *responder,
                     rnicpi_ud_svc_status_t status, uint32_t qpn, uint32_t qkey, const void *pdata,
                     uint32_t len)
{
  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = RNICPI_CM_UD_SVC_REPLY;
  ev->qp_ctx = req_ctx;
  ev->src = *responder;
  ev->ud_status = status;
  if (status == RNICPI_UD_SVC_OK) {
    ev->ud_qpn = qpn;
    ev->ud_qkey = qkey;
  }
  emul_cm_fill_pdata(ev, pdata, len);
  emul_defer_cm(requester, ev);
  g_free(ev);
}

/* A service request for listener @l: pending until its consumer answers
 * (from @requester in this process, or from another process on @fd). */
static void
svc_incoming(emul_listen_t *l, emul_dev_t *requester, uint64_t req_ctx, int fd, const rnicpi_addr_t *dst,
             const void *pdata, uint32_t len)
{
  emul_ud_svc_t *s = g_new0(emul_ud_svc_t, 1);
  s->id = emul_fabric.next_conn_id++;
  s->requester = requester;
  s->req_ctx = req_ctx;
  s->fd = fd;
  s->listener = l;
  s->responder = *dst;
  g_hash_table_insert(emul_fabric.ud_svc, &s->id, s);
  rnicpi_cm_event_t *ev = g_new0(rnicpi_cm_event_t, 1);
  ev->type = RNICPI_CM_UD_SVC_REQUEST;
  ev->listen_ctx = l->base.al_ctx;
  ev->conn_id = s->id;
  ev->port = l->port;
  emul_cm_loopback(&ev->src.sa, FALSE);
  emul_cm_fill_pdata(ev, pdata, len);
  emul_defer_cm(to_emul_dev(l->base.dev), ev);
  g_free(ev);
}

/* Answer pending request @s, taken from the table (fabric lock held): a
 * requester of this process gets its event now and @s is freed (NULL
 * returned); another process's answer goes on its socket once the lock is
 * let go (@s returned: emul_ring_ud_svc_answer, then g_free). */
static emul_ud_svc_t *
svc_answer(emul_ud_svc_t *s, rnicpi_ud_svc_status_t status, uint32_t qpn, uint32_t qkey, const void *pdata,
           uint32_t len)
{
  if (s->requester == NULL)
    return s;
  emul_ud_svc_reply_to(s->requester, s->req_ctx, &s->responder, status, qpn, qkey, pdata, len);
  emul_dev_unref(s->requester);
  g_free(s);
  return NULL;
}

rnicpi_status_t
emul_ud_svc_request(rnicpi_dev_t *d, const rnicpi_addr_t *dst, const void *pdata, uint32_t len,
                    uint64_t req_ctx)
{
  emul_dev_t *dev = to_emul_dev(d);
  if (!(dev->caps.features & RNICPI_CAP_UD))
    return RNICPI_ENOTSUP;
  if (len > dev->caps.pdata_ud_req)
    return RNICPI_ELIMIT;
  gboolean ours = emul_addr_is_ours(dst);
  if (ours)
    emul_ring_init();  /* another process may offer it (emul_ring_ud_svc_request) */
  uint32_t port = (uint32_t) emul_addr_port(dst);
  emul_fabric_lock();
  emul_listen_t *l = ours ? g_hash_table_lookup(emul_fabric.listeners, GUINT_TO_POINTER(port)) : NULL;
  gboolean away = FALSE;
  if (l != NULL && to_emul_dev(l->base.dev)->pers == dev->pers) {
    emul_dev_ref(dev);
    svc_incoming(l, dev, req_ctx, -1, dst, pdata, len);
  } else if (l != NULL || !ours) {
    /* No one offers the service here (SIDR_REP status 1). */
    emul_ud_svc_reply_to(dev, req_ctx, dst, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
  } else {
    away = TRUE;
  }
  emul_fabric_unlock();
  /* Another process's listener, perhaps: dialled and asked with no lock
   * held. */
  if (away && !emul_ring_ud_svc_request(dev, dst, port, pdata, len, req_ctx)) {
    emul_fabric_lock();
    emul_ud_svc_reply_to(dev, req_ctx, dst, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
    emul_fabric_unlock();
  }
  return RNICPI_OK;
}

/* Requests of other processes one listener holds unanswered: each holds
 * a descriptor (the socket to answer on) and an event for the consumer.
 * One past it is refused unanswered (its requester reads the socket's
 * EOF: no service), said once per process: a local process cannot make
 * this one hold a descriptor per request its consumer is slow to answer. */
#define SVC_PENDING_MAX 256
static gboolean svc_said_pending;

gboolean
emul_ud_svc_remote(emul_listen_t *l, int fd, const void *pdata, uint32_t len)
{
  guint pending = 0;
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, emul_fabric.ud_svc);
  while (g_hash_table_iter_next(&it, NULL, &v))
    pending += ((emul_ud_svc_t *) v)->listener == l && ((emul_ud_svc_t *) v)->requester == NULL;
  if (pending >= SVC_PENDING_MAX) {
    if (!svc_said_pending) {
      svc_said_pending = TRUE;
      g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: port %u has %u UD service requests of other processes "
            "waiting for an answer: refusing any more (answer them)", l->port, pending);
    }
    return FALSE;
  }
  rnicpi_addr_t none;  /* the requester is in the other process */
  memset(&none, 0, sizeof(none));
  svc_incoming(l, NULL, 0, fd, &none, pdata, len);
  return TRUE;
}

rnicpi_status_t
emul_ud_svc_reply(rnicpi_dev_t *d, uint64_t req_id, rnicpi_ud_svc_status_t status, uint32_t qpn,
                  uint32_t qkey, const void *pdata, uint32_t len)
{
  emul_dev_t *dev = to_emul_dev(d);
  if (len > dev->caps.pdata_ud_rep)
    return RNICPI_ELIMIT;
  if ((unsigned) status > RNICPI_UD_SVC_REDIRECT)
    return RNICPI_EINVAL;
  rnicpi_status_t st = RNICPI_OK;
  emul_ud_svc_t *away = NULL;
  emul_fabric_lock();
  emul_ud_svc_t *s = g_hash_table_lookup(emul_fabric.ud_svc, &req_id);
  if (s == NULL || to_emul_dev(s->listener->base.dev) != dev) {
    st = RNICPI_ENOENT;
  } else {
    g_hash_table_steal(emul_fabric.ud_svc, &req_id);
    away = svc_answer(s, status, qpn, qkey, pdata, len);
  }
  emul_fabric_unlock();
  if (away != NULL) {
    emul_ring_ud_svc_answer(away->fd, status, qpn, qkey, pdata, len);
    g_free(away);
  }
  return st;
}

/* A listener goes: its unanswered requests get "no service", so no
 * requester waits forever (a real SIDR requester would time out). */
GSList *
emul_ud_unlisten_locked(emul_listen_t *l)
{
  GSList *away = NULL;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, emul_fabric.ud_svc);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    emul_ud_svc_t *s = v;
    if (s->listener != l)
      continue;
    g_hash_table_iter_steal(&it);
    emul_ud_svc_t *a = svc_answer(s, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
    if (a != NULL)
      away = g_slist_prepend(away, a);
  }
  return away;
}

void
emul_ud_svc_refuse(GSList *away)
{
  for (GSList *i = away; i != NULL; i = i->next) {
    emul_ud_svc_t *s = i->data;
    emul_ring_ud_svc_answer(s->fd, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
    g_free(s);
  }
  g_slist_free(away);
}
