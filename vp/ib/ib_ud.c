/*
 * vp/ib unreliable datagrams (RNIC-PI 1.3): address handles from an
 * RNIC-PI address vector, what a UD queue pair adds to the data path, and
 * the sender of a received datagram.
 *
 * Addressing on RoCE: a GID is an IP address (IPv4-mapped for IPv4), and
 * every packet carries a GRH, so an address handle is always global and
 * leaves from the GID table entry of the port's own address of the same
 * family (for RoCE v2, the entry of that type).  On InfiniBand a handle
 * routes by LID unless the vector asks for a GRH.  The sender of a
 * datagram is read from the GRH the device wrote in front of the payload:
 * an IB GRH or IPv6 header (the source GID at bytes 8-23), or, on RoCE v2
 * over IPv4, 20 bytes of zeros and the IPv4 header (the source address at
 * bytes 32-35), as ibv_init_ah_from_wc reads it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ib.h"

#define GRH_LEN 40

static gboolean
gid_is_v4(const uint8_t *g)
{
  static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
  return memcmp(g, prefix, sizeof(prefix)) == 0;
}

/* The GID table entries of the device's own addresses (at open). */
void
ib_ud_find_gids(ib_dev_t *dev)
{
  struct ibv_port_attr pa;
  if (ibv_query_port(dev->ctx, dev->port, &pa) != 0)
    return;
  dev->roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  /* Room for every port's table (ibv_query_gid_table returns them all). */
  struct ibv_device_attr da;
  unsigned ports = ibv_query_device(dev->ctx, &da) == 0 ? MAX(da.phys_port_cnt, 1u) : 1u;
  size_t max = (size_t) MAX(pa.gid_tbl_len, 1) * ports;
  struct ibv_gid_entry *tab = g_new0(struct ibv_gid_entry, MAX(max, 1));
  ssize_t n = ibv_query_gid_table(dev->ctx, tab, MAX(max, 1), 0);
  for (ssize_t i = 0; i < n; i++) {
    const struct ibv_gid_entry e = tab[i];
    if (e.port_num != dev->port || e.gid_index > UINT8_MAX)
      continue;
    /* RoCE v2 is routable; v1 entries of the same address come second. */
    gboolean v2 = e.gid_type == IBV_GID_TYPE_ROCE_V2 || e.gid_type == IBV_GID_TYPE_IB;
    for (uint32_t k = 0; k < dev->caps.num_addrs; k++) {
      const struct sockaddr_storage *sa = &dev->caps.addrs[k];
      uint8_t want[16] = { 0 };
      if (sa->ss_family == AF_INET) {
        want[10] = want[11] = 0xff;
        memcpy(want + 12, &((const struct sockaddr_in *) sa)->sin_addr, 4);
      } else {
        memcpy(want, &((const struct sockaddr_in6 *) sa)->sin6_addr, 16);
      }
      if (memcmp(want, e.gid.raw, 16) != 0)
        continue;
      if (sa->ss_family == AF_INET && (!dev->have_sgid4 || v2)) {
        dev->sgid4 = (uint8_t) e.gid_index;
        dev->have_sgid4 = TRUE;
      } else if (sa->ss_family == AF_INET6 && (!dev->have_sgid6 || v2)) {
        dev->sgid6 = (uint8_t) e.gid_index;
        dev->have_sgid6 = TRUE;
      }
    }
  }
  g_free(tab);
  if (!dev->roce) {
    /* InfiniBand: GID 0 is the port's own. */
    dev->sgid4 = dev->sgid6 = 0;
    dev->have_sgid4 = dev->have_sgid6 = TRUE;
  }
}

/* INIT -> RTR -> RTS with no peer (IBTA 11.2.4.2: a UD queue pair needs
 * only its Q_Key, set at INIT, and a send PSN). */
rnicpi_status_t
ib_ud_qp_up(ib_qp_t *qp)
{
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
  int err = ibv_modify_qp(qp->qp, &a, IBV_QP_STATE);
  if (err == 0) {
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = g_random_int() & 0xffffff;
    err = ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
  }
  return ib_status_of_errno(err);
}

/* A Send on a UD queue pair: its handle, queue pair and Q_Key. */
rnicpi_status_t
ib_ud_prepare(ib_qp_t *qp, const rnicpi_send_wr_t *wr, uint32_t len, struct ibv_send_wr *v)
{
  if (wr->opcode != RNICPI_WR_SEND)
    return RNICPI_EINVAL;
  if (wr->ah == NULL || wr->ah->pd != qp->base.pd)
    return RNICPI_EACCES;
  if (len > qp->dev->caps.ud_mtu)
    return RNICPI_ERANGE;
  v->wr.ud.ah = to_ib_ah(wr->ah)->ah;
  v->wr.ud.remote_qpn = wr->remote_qpn & 0xffffff;
  /* IBTA 10.2.4: bit 31 set means the sending queue pair's own Q_Key.
   * Not every device applies it (rxe's init_req_packet, rxe_req.c, puts
   * remote_qkey in the DETH as given): substitute it here. */
  v->wr.ud.remote_qkey = (wr->remote_qkey & 0x80000000u) != 0 ? qp->qkey : wr->remote_qkey;
  return RNICPI_OK;
}

/* Gather the @n bytes at @off of a receive's scatter list into @out. */
static gboolean
gather(const struct ibv_sge *sge, uint32_t nsge, uint32_t off, uint8_t *out, uint32_t n)
{
  for (uint32_t i = 0; i < nsge && n > 0; i++) {
    if (off >= sge[i].length) {
      off -= sge[i].length;
      continue;
    }
    uint32_t take = MIN(n, sge[i].length - off);
    memcpy(out, (const uint8_t *) (uintptr_t) sge[i].addr + off, take);
    out += take;
    n -= take;
    off = 0;
  }
  return n == 0;
}

/* A UD receive completed (its shadow @s, sequence @seq; the queue's lock
 * held): the sender. */
void
ib_ud_recv_complete(ib_qp_t *qp, const ib_shadow_t *s, uint64_t seq, const struct ibv_wc *v,
                    rnicpi_wc_t *out)
{
  out->flags |= RNICPI_WC_UD;
  if (v->status != IBV_WC_SUCCESS)
    return;
  out->src_qpn = v->src_qp;
  out->src_lid = v->slid;
  if (!(v->wc_flags & IBV_WC_GRH))
    return;
  out->flags |= RNICPI_WC_GRH;
  uint8_t grh[GRH_LEN];
  const struct ibv_sge *sge = &qp->rq_sge[(seq & (qp->rq.size - 1)) * qp->max_recv_sge];
  if (!gather(sge, s->nsge, 0, grh, GRH_LEN))
    return;
  if ((grh[0] >> 4) == 6) {
    memcpy(out->src_gid, grh + 8, RNICPI_GID_LEN); /* IB GRH or IPv6: the source GID */
  } else if ((grh[20] >> 4) == 4) {
    /* RoCE v2 over IPv4: the IPv4 header in the GRH's last 20 bytes. */
    memset(out->src_gid, 0, 10);
    out->src_gid[10] = out->src_gid[11] = 0xff;
    memcpy(out->src_gid + 12, grh + 20 + 12, 4);
  }
}

/* ---- address handles ------------------------------------------------------ */

static rnicpi_status_t
ib_ah_create(rnicpi_pd_t *p, const rnicpi_ah_attr_t *attr, rnicpi_ah_t **out)
{
  ib_dev_t *dev = to_ib_dev(p->dev);
  if (!(dev->caps.features & RNICPI_CAP_UD))
    return RNICPI_ENOTSUP;
  if (attr->port >= dev->caps.num_ports)
    return RNICPI_EINVAL;
  struct ibv_ah_attr a;
  memset(&a, 0, sizeof(a));
  a.dlid = attr->dlid;
  a.sl = attr->sl;
  a.static_rate = attr->static_rate;
  a.port_num = dev->port;
  /* RoCE routes by GID alone: every handle is global there. */
  if (dev->roce || attr->global || attr->dlid == 0) {
    gboolean v4 = gid_is_v4(attr->dgid);
    if (!(v4 ? dev->have_sgid4 : dev->have_sgid6)) {
      g_message("%s: no GID of the port is an %s address, so no datagram can leave it for "
                "that destination; give the netdev an address of that family", dev->name,
                v4 ? "IPv4" : "IPv6");
      return RNICPI_EINVAL;
    }
    a.is_global = 1;
    memcpy(a.grh.dgid.raw, attr->dgid, RNICPI_GID_LEN);
    a.grh.sgid_index = v4 ? dev->sgid4 : dev->sgid6;
    a.grh.flow_label = attr->flow_label & 0xfffff;
    a.grh.traffic_class = attr->traffic_class;
    /* 0 is "not given" in an IT-API path; a GRH with 0 hops dies at once. */
    a.grh.hop_limit = attr->hop_limit != 0 ? attr->hop_limit : 64;
  }
  struct ibv_ah *vah = ibv_create_ah(to_ib_pd(p)->pd, &a);
  if (vah == NULL) {
    int err = errno;
    g_debug("%s: ibv_create_ah: %s", dev->name, g_strerror(err));
    return err == ENOMEM ? RNICPI_ENOMEM : RNICPI_EINVAL;
  }
  ib_ah_t *ah = g_new0(ib_ah_t, 1);
  ah->base.pd = p;
  ah->ah = vah;
  *out = &ah->base;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_ah_destroy(rnicpi_ah_t *h)
{
  ib_ah_t *ah = to_ib_ah(h);
  /* A send that named it was given the device's handle at post; the
   * device holds its own reference to what it needs. */
  int err = ibv_destroy_ah(ah->ah);
  if (err != 0)
    return ib_status_of_errno(err);
  g_free(ah);
  return RNICPI_OK;
}

const rnicpi_ud_ops_t ib_ud_ops = {
  .size = sizeof(rnicpi_ud_ops_t),
  .ah_create = ib_ah_create,
  .ah_destroy = ib_ah_destroy,
};
