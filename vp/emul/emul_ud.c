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
  g_hash_table_insert(emul_fabric.ud_qps, GUINT_TO_POINTER(qp->base.qp_num), qp);
}

void
emul_ud_qp_gone_locked(emul_qp_t *qp)
{
  g_hash_table_remove(emul_fabric.ud_qps, GUINT_TO_POINTER(qp->base.qp_num));
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


rnicpi_status_t
emul_ud_post_send_locked(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w,
                         emul_ud_out_t *out)
{
  out->away = FALSE;
  if (wr->opcode != RNICPI_WR_SEND || wr->ah == NULL)
    return RNICPI_EINVAL;
  emul_ah_t *ah = to_emul_ah(wr->ah);
  if (ah->base.pd != qp->base.pd)
    return RNICPI_EACCES; /* IBTA 10.2.3: the AH must be of the QP's domain */
  uint64_t len = 0;
  for (uint32_t i = 0; i < wr->num_sge; i++)
    len += wr->sg_list[i].length;
  if (len > EMUL_UD_MTU)
    return RNICPI_ERANGE;
  if (qp->state != RNICPI_QPS_RTS) {
    emul_complete(qp->scq, qp, wr->wr_id, RNICPI_WC_SEND, RNICPI_WC_WR_FLUSH_ERR, 0, w);
    return RNICPI_OK;
  }
  if (!emul_sges_ok(qp, wr->sg_list, wr->num_sge, RNICPI_ACCESS_LOCAL_READ, &len)) {
    /* A local protection error completes the WR; the UD QP stays usable. */
    emul_complete(qp->scq, qp, wr->wr_id, RNICPI_WC_SEND, RNICPI_WC_LOC_PROT_ERR, 0, w);
    return RNICPI_OK;
  }
  dev_gid(emul_qp_dev(qp), out->sgid);
  grh_build(out->bytes, &ah->attr, out->sgid, (uint32_t) len);
  uint8_t *p = out->bytes + EMUL_UD_GRH_LEN;
  for (uint32_t i = 0; i < wr->num_sge; i++) {
    memcpy(p, (const uint8_t *) (uintptr_t) wr->sg_list[i].addr, wr->sg_list[i].length);
    p += wr->sg_list[i].length;
  }

  /* From here on the datagram is on the wire: the send succeeds whatever
   * becomes of it. */
  out->d = (emul_ud_dgram_t) {
    .pers = emul_pers_of_qp(qp), .qkey = (wr->remote_qkey & 0x80000000u) ? qp->qkey : wr->remote_qkey,
    .src_qpn = qp->base.qp_num, .sgid = out->sgid, .buf = out->bytes, .len = EMUL_UD_GRH_LEN + len,
  };
  if (gid_is_ours(ah->attr.dgid)) {
    emul_qp_t *dst = g_hash_table_lookup(emul_fabric.ud_qps, GUINT_TO_POINTER(wr->remote_qpn));
    if (dst != NULL) {
      emul_ud_deliver(dst, &out->d, w);
    } else {
      /* Another process's, maybe: its sendmsg() waits for the lock to go. */
      emul_ring_ud_away_locked(qp, wr->remote_qpn, out);
    }
  }
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) len, w);
  return RNICPI_OK;
}

void
emul_ud_deliver(emul_qp_t *dst, const emul_ud_dgram_t *d, emul_work_t *w)
{
  if (dst->state != RNICPI_QPS_RTS || dst->qkey != d->qkey || emul_qp_dev(dst)->pers != d->pers ||
      emul_wq_empty(emul_qp_rq(dst)))
    return;  /* dropped without a trace */
  emul_rwqe_t *r = emul_wq_pop(emul_qp_rq(dst));
  if (dst->srq != NULL)
    emul_srq_took(dst->srq);
  uint64_t room;
  rnicpi_wc_t rwc = {
    .wr_id = r->wr_id, .qp_ctx = dst->base.al_ctx, .opcode = RNICPI_WC_RECV,
    .flags = RNICPI_WC_UD,
  };
  if (!emul_sges_ok(dst, r->sge, r->num_sge, RNICPI_ACCESS_LOCAL_WRITE, &room)) {
    rwc.status = RNICPI_WC_LOC_PROT_ERR;
  } else if (room < d->len) {
    rwc.status = RNICPI_WC_LOC_LEN_ERR;
  } else {
    emul_scatter(r->sge, r->num_sge, d->buf, d->len);
    rwc.status = RNICPI_WC_SUCCESS;
    rwc.byte_len = (uint32_t) d->len;
    rwc.flags |= RNICPI_WC_GRH;
    rwc.src_qpn = d->src_qpn;
    memcpy(rwc.src_gid, d->sgid, 16);
  }
  emul_cq_push(dst->rcq, &rwc, w);
  emul_wq_put(emul_qp_rq(dst), r);
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

/* Answer pending request @s and forget it. */
static void
svc_answer(emul_ud_svc_t *s, rnicpi_ud_svc_status_t status, uint32_t qpn, uint32_t qkey, const void *pdata,
           uint32_t len)
{
  if (s->requester != NULL) {
    emul_ud_svc_reply_to(s->requester, s->req_ctx, &s->responder, status, qpn, qkey, pdata, len);
    emul_dev_unref(s->requester);
  } else {
    emul_ring_ud_svc_answer(s->fd, status, qpn, qkey, pdata, len);
  }
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
  emul_fabric_lock();
  gboolean ours = emul_addr_is_ours(dst);
  uint32_t port = (uint32_t) emul_addr_port(dst);
  emul_listen_t *l = ours ? g_hash_table_lookup(emul_fabric.listeners, GUINT_TO_POINTER(port)) : NULL;
  if (l != NULL && to_emul_dev(l->base.dev)->pers == dev->pers) {
    emul_dev_ref(dev);
    svc_incoming(l, dev, req_ctx, -1, dst, pdata, len);
  } else if (l != NULL || !ours || !emul_ring_ud_svc_request(dev, dst, port, pdata, len, req_ctx)) {
    /* No one offers the service here (SIDR_REP status 1). */
    emul_ud_svc_reply_to(dev, req_ctx, dst, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
  }
  emul_fabric_unlock();
  return RNICPI_OK;
}

void
emul_ud_svc_remote(emul_listen_t *l, int fd, const void *pdata, uint32_t len)
{
  rnicpi_addr_t none;  /* the requester is in the other process */
  memset(&none, 0, sizeof(none));
  svc_incoming(l, NULL, 0, fd, &none, pdata, len);
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
  emul_fabric_lock();
  emul_ud_svc_t *s = g_hash_table_lookup(emul_fabric.ud_svc, &req_id);
  if (s == NULL || to_emul_dev(s->listener->base.dev) != dev) {
    st = RNICPI_ENOENT;
  } else {
    svc_answer(s, status, qpn, qkey, pdata, len);
    g_hash_table_remove(emul_fabric.ud_svc, &req_id);
  }
  emul_fabric_unlock();
  return st;
}

/* A listener goes: its unanswered requests get "no service", so no
 * requester waits forever (a real SIDR requester would time out). */
void
emul_ud_unlisten_locked(emul_listen_t *l)
{
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, emul_fabric.ud_svc);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    emul_ud_svc_t *s = v;
    if (s->listener != l)
      continue;
    svc_answer(s, RNICPI_UD_SVC_NO_SERVICE, 0, 0, NULL, 0);
    g_hash_table_iter_remove(&it);
  }
}
