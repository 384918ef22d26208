/*
 * cert-rnicpi: unreliable datagrams (ABI 1.3, RNICPI_CAP_UD): UD queue
 * pairs, address handles (rnicpi_ud_ops_t), the datagram fields of
 * rnicpi_send_wr_t and rnicpi_wc_t, and UD service resolution (IB SIDR,
 * ud_svc_request / ud_svc_reply).  Two UD queue pairs of one domain on the
 * same device send to each other through an address handle naming the
 * device's own first address.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define UDO (cert_prov->ud)
#define QKEY 0x11110000u
#define GRH 40
#define S_CTX 0xd1000ull
#define R_CTX 0xd2000ull

typedef struct {
  cert_side_t s, r;  /* sender and receiver, one domain */
  rnicpi_ah_t *ah;   /* to the device's own address */
  uint8_t gid[RNICPI_GID_LEN]; /* that address as a GID */
  cert_buf_t src, dst;
} ud_setup_t;

static gboolean
ud_open(cert_t *f, ud_setup_t *u)
{
  memset(u, 0, sizeof(*u));
  if (!cert_require(f, RNICPI_CAP_UD))
    return FALSE;
  g_assert_cmpuint(f->caps.ud_mtu, >, 0);
  rnicpi_qp_attr_t a = cert_qp_attr(f, NULL, NULL);
  a.type = RNICPI_QPT_UD;
  a.qkey = QKEY;
  a.access = 0;
  cert_side_new(f, &u->s, S_CTX, 64, &a);
  /* The receiver in the sender's domain: an address handle serves the
   * QPs of its domain. */
  u->r.ctx = R_CTX;
  u->r.pd = u->s.pd;
  cert_ok(QUE->cq_create(f->dev, 64, R_CTX | 1, &u->r.scq));
  cert_ok(QUE->cq_create(f->dev, 64, R_CTX | 2, &u->r.rcq));
  a.send_cq = u->r.scq;
  a.recv_cq = u->r.rcq;
  cert_ok(QUE->qp_create(u->r.pd, &a, R_CTX, &u->r.qp));
  g_assert_cmpint(QUE->qp_state(u->s.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(u->r.qp), ==, RNICPI_QPS_RTS);
  cert_self_gid(f, u->gid);
  rnicpi_ah_attr_t aa = { .port = 0 };
  memcpy(aa.dgid, u->gid, RNICPI_GID_LEN);
  cert_ok(UDO->ah_create(u->s.pd, &aa, &u->ah));
  g_assert_nonnull(u->ah);
  g_assert_true(u->ah->pd == u->s.pd);
  uint32_t big = f->caps.ud_mtu + 64;
  cert_buf_new(u->s.pd, &u->src, big, RW);
  cert_buf_new(u->s.pd, &u->dst, 4 * (GRH + big), RW);
  return TRUE;
}

static void
ud_close(ud_setup_t *u)
{
  cert_ok(UDO->ah_destroy(u->ah));
  cert_buf_free(&u->src);
  cert_buf_free(&u->dst);
  cert_ok(QUE->qp_destroy(u->r.qp));
  cert_ok(QUE->cq_destroy(u->r.scq));
  cert_ok(QUE->cq_destroy(u->r.rcq));
  cert_side_free(&u->s); /* frees the shared domain last */
}

/* Post receive @id into slot @slot of dst (room for the GRH and an MTU). */
static void
ud_recv(cert_t *f, ud_setup_t *u, int slot, uint64_t id)
{
  uint32_t room = GRH + f->caps.ud_mtu + 64;
  cert_post_recv(u->r.qp, &u->dst, (size_t) slot * room, room, id);
}

static uint8_t *
slot_data(cert_t *f, ud_setup_t *u, int slot)
{
  return u->dst.data + (size_t) slot * (GRH + f->caps.ud_mtu + 64);
}

/* A UD Send of @len bytes of src to @qpn with @qkey; returns post_send's status. */
static rnicpi_status_t
ud_send(ud_setup_t *u, uint64_t id, uint32_t len, uint32_t qpn, uint32_t qkey)
{
  rnicpi_sge_t sge = cert_sge(&u->src, 0, len);
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = len > 0 ? 1 : 0, .ah = u->ah,
                          .remote_qpn = qpn, .remote_qkey = qkey };
  return DAT->post_send(u->s.qp, &wr);
}

/* The sender's completion of @id: success, opcode SEND, nothing more. */
static void
ud_sent(ud_setup_t *u, uint64_t id)
{
  rnicpi_wc_t wc = cert_wc(u->s.scq);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_SEND);
  g_assert_cmphex(wc.qp_ctx, ==, S_CTX);
  cert_assert_cq_quiet(u->s.scq);
}

/* The receive completion of @id in slot @slot: @len bytes of pattern
 * @seed from the sender, named by QP number and GID. */
static void
ud_expect_recv(cert_t *f, ud_setup_t *u, uint64_t id, int slot, uint32_t len, uint8_t seed)
{
  rnicpi_wc_t r = cert_wc(u->r.rcq);
  g_assert_cmphex(r.wr_id, ==, id);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(r.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmphex(r.qp_ctx, ==, R_CTX);
  g_assert_cmphex(r.flags & RNICPI_WC_UD, ==, RNICPI_WC_UD);
  g_assert_cmpuint(r.src_qpn, ==, u->s.qp->qp_num);
  g_assert_cmpmem(r.src_gid, RNICPI_GID_LEN, u->gid, RNICPI_GID_LEN);
  uint32_t grh = (r.flags & RNICPI_WC_GRH) ? GRH : 0;
  g_assert_cmpuint(r.byte_len, ==, grh + len);
  const uint8_t *d = slot_data(f, u, slot) + grh;
  for (uint32_t i = 0; i < len; i++)
    if (d[i] != u->src.data[i]) {
      g_test_message("payload byte %u is 0x%02x, sent 0x%02x (seed %u)", i, d[i], u->src.data[i],
                     seed);
      g_assert_cmphex(d[i], ==, u->src.data[i]);
    }
}

static void
test_ud_send_recv(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("UD queue pairs start in RTS; a Send through an address handle to the "
                 "receiver's QP number and Q_Key arrives once: opcode RECV, flag "
                 "RNICPI_WC_UD, the sender's QP number and GID, byte_len counting the GRH when "
                 "flagged, the payload after it; a Send of exactly ud_mtu bytes arrives too");
  ud_setup_t u;
  if (!ud_open(f, &u))
    return;
  cert_buf_fill(&u.src, 91);
  ud_recv(f, &u, 0, 0x601);
  ud_recv(f, &u, 1, 0x602);
  cert_ok(ud_send(&u, 0x611, 100, u.r.qp->qp_num, QKEY));
  ud_sent(&u, 0x611);
  ud_expect_recv(f, &u, 0x601, 0, 100, 91);
  cert_ok(ud_send(&u, 0x612, f->caps.ud_mtu, u.r.qp->qp_num, QKEY));
  ud_sent(&u, 0x612);
  ud_expect_recv(f, &u, 0x602, 1, f->caps.ud_mtu, 91);
  cert_assert_cq_quiet(u.r.rcq);
  cert_assert_cq_quiet(u.s.rcq);
  ud_close(&u);
}

static void
test_ud_too_big(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a UD Send one byte larger than ud_mtu is refused (post_send fails, or it "
                 "completes in error) and no receive completes; the queue pair stays usable unless the "
                 "provider moved it to ERROR");
  ud_setup_t u;
  if (!ud_open(f, &u))
    return;
  cert_buf_fill(&u.src, 92);
  ud_recv(f, &u, 0, 0x701);
  rnicpi_status_t st = ud_send(&u, 0x711, f->caps.ud_mtu + 1, u.r.qp->qp_num, QKEY);
  g_test_message("post_send of ud_mtu + 1 bytes: %s", rnicpi_status_name(st));
  if (st == RNICPI_OK) {
    rnicpi_wc_t wc = cert_wc(u.s.scq);
    g_assert_cmphex(wc.wr_id, ==, 0x711);
    g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  }
  cert_assert_cq_quiet(u.r.rcq);
  cert_assert_cq_quiet(u.s.scq);
  /* A provider may put the sender in ERROR for it (an IB UD QP's local
   * length error does); qp_reset leaves a QP IDLE, so that sender is done.
   * The receiver must still be usable. */
  if (QUE->qp_state(u.s.qp) == RNICPI_QPS_ERROR) {
    g_test_message("the sender's QP went to ERROR: the datagram after it is not tried");
    ud_close(&u);
    return;
  }
  cert_ok(ud_send(&u, 0x712, 10, u.r.qp->qp_num, QKEY));
  ud_sent(&u, 0x712);
  ud_expect_recv(f, &u, 0x701, 0, 10, 92);
  ud_close(&u);
}

static void
test_ud_wrong_qkey(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a UD Send with a Q_Key other than the receiver's, and one to a QP number no UD "
                 "QP has, complete successfully at the sender and are dropped: no receive "
                 "completes, none is consumed, and the next good datagram takes the first "
                 "receive");
  ud_setup_t u;
  if (!ud_open(f, &u))
    return;
  cert_buf_fill(&u.src, 93);
  ud_recv(f, &u, 0, 0x801);
  cert_ok(ud_send(&u, 0x811, 32, u.r.qp->qp_num, QKEY ^ 0x10));
  ud_sent(&u, 0x811);
  cert_ok(ud_send(&u, 0x812, 32, (u.r.qp->qp_num ^ 0x5a5a) & 0xffffff, QKEY));
  ud_sent(&u, 0x812);
  cert_assert_cq_quiet(u.r.rcq);
  for (size_t i = 0; i < u.dst.len; i++)
    g_assert_cmphex(u.dst.data[i], ==, 0);
  cert_ok(ud_send(&u, 0x813, 24, u.r.qp->qp_num, QKEY));
  ud_sent(&u, 0x813);
  ud_expect_recv(f, &u, 0x801, 0, 24, 93);
  cert_assert_cq_quiet(u.r.rcq);
  ud_close(&u);
}

static void
test_ud_own_qkey(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a UD Send whose Q_Key has bit 31 set presents the sending QP's own Q_Key "
                 "(IBTA 10.2.4): to a receiver of the same Q_Key it arrives");
  ud_setup_t u;
  if (!ud_open(f, &u))
    return;
  cert_buf_fill(&u.src, 94);
  ud_recv(f, &u, 0, 0x901);
  cert_ok(ud_send(&u, 0x911, 48, u.r.qp->qp_num, 0x80000000u));
  ud_sent(&u, 0x911);
  ud_expect_recv(f, &u, 0x901, 0, 48, 94);
  ud_close(&u);
}

static void
test_ud_svc(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("ud_svc_request to a listener's port brings it one RNICPI_CM_UD_SVC_REQUEST with "
                 "the private data; its ud_svc_reply (status OK, a QP number and Q_Key, private "
                 "data) comes back as one RNICPI_CM_UD_SVC_REPLY with the request's context; a "
                 "second reply to the same request is RNICPI_ENOENT; a request to a port nobody "
                 "listens on is answered RNICPI_UD_SVC_NO_SERVICE");
  if (!cert_require(f, RNICPI_CAP_UD) || !cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x5d0, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  static const char ask[] = "which qp?", ans[] = "this one";
  uint32_t rl = cert_min(sizeof(ask), f->caps.pdata_ud_req);
  uint32_t al = cert_min(sizeof(ans), f->caps.pdata_ud_rep);
  cert_ok(CMV->ud_svc_request(f->dev, &dst, ask, rl, 0x5d1));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_UD_SVC_REQUEST, 0x5d0);
  g_assert_cmpuint(req->port, ==, port);
  g_assert_cmpuint(req->pdata_len, >=, rl);
  g_assert_cmpmem(req->pdata, rl, ask, rl);
  cert_assert_no_cm(f, RNICPI_CM_UD_SVC_REQUEST, 0x5d0);
  cert_ok(CMV->ud_svc_reply(f->dev, req->conn_id, RNICPI_UD_SVC_OK, 0x123, QKEY, ans, al));
  g_autofree rnicpi_cm_event_t *rep = cert_wait_cm(f, RNICPI_CM_UD_SVC_REPLY, 0x5d1);
  g_assert_cmpint(rep->ud_status, ==, RNICPI_UD_SVC_OK);
  g_assert_cmpuint(rep->ud_qpn, ==, 0x123);
  g_assert_cmphex(rep->ud_qkey, ==, QKEY);
  g_assert_cmpuint(rep->pdata_len, >=, al);
  g_assert_cmpmem(rep->pdata, al, ans, al);
  cert_cmpst(CMV->ud_svc_reply(f->dev, req->conn_id, RNICPI_UD_SVC_OK, 0x123, QKEY, NULL, 0),
             RNICPI_ENOENT);
  cert_assert_no_cm(f, RNICPI_CM_UD_SVC_REPLY, 0x5d1);
  cert_ok(CMV->unlisten(lst));

  cert_ok(CMV->ud_svc_request(f->dev, &dst, NULL, 0, 0x5d2));
  g_autofree rnicpi_cm_event_t *none = cert_wait_cm(f, RNICPI_CM_UD_SVC_REPLY, 0x5d2);
  g_assert_cmpint(none->ud_status, ==, RNICPI_UD_SVC_NO_SERVICE);
}

static void
test_ud_unsignaled_local_failure(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an unsignaled datagram Send whose gather element names a key the device does "
                 "not have: post_send refuses it, or it completes once with an error (a failed "
                 "request completes whether signaled or not, RDMA Verbs 11.4.1); never "
                 "successfully, and nothing reaches the receiver");
  ud_setup_t u;
  if (!ud_open(f, &u))
    return;
  ud_recv(f, &u, 0, 0x4ec);
  cert_buf_fill(&u.src, 5);
  rnicpi_sge_t sge = cert_sge(&u.src, 0, 64);
  sge.lkey ^= 0x80; /* the key byte: no region has it */
  rnicpi_send_wr_t wr = { .wr_id = 0xbad0, .opcode = RNICPI_WR_SEND, .sg_list = &sge,
                          .num_sge = 1, .ah = u.ah, .remote_qpn = u.r.qp->qp_num,
                          .remote_qkey = QKEY };
  rnicpi_status_t st = DAT->post_send(u.s.qp, &wr);
  if (st == RNICPI_OK) {
    rnicpi_wc_t wc = cert_wc(u.s.scq);
    g_assert_cmphex(wc.wr_id, ==, 0xbad0);
    g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
    g_assert_cmpint(wc.status, !=, RNICPI_WC_WR_FLUSH_ERR);
  } else {
    g_test_message("post_send refused it: %s", rnicpi_status_name(st));
  }
  cert_assert_cq_quiet(u.s.scq);
  cert_assert_cq_quiet(u.r.rcq);
  ud_close(&u);
}

void
cert_register_ud(void)
{
  cert_add("/rnicpi/ud/send-recv", test_ud_send_recv);
  cert_add("/rnicpi/ud/too-big", test_ud_too_big);
  cert_add("/rnicpi/ud/wrong-qkey-or-qpn", test_ud_wrong_qkey);
  cert_add("/rnicpi/ud/own-qkey", test_ud_own_qkey);
  cert_add("/rnicpi/ud/svc-request-reply", test_ud_svc);
  cert_add("/rnicpi/ud/unsignaled-local-failure", test_ud_unsignaled_local_failure);
}
