/*
 * cert-rnicpi: what a connection settled stays settled.  qp_modify's IRD
 * and ORD are what a queue pair offers when it next connects: a connected
 * one keeps its connection's values (never a higher IRD, as InfiniBand
 * allows no change of them in RTS), and an IRD of 0 settles as 0.  And a
 * connect asking for the three-way handshake on a device without it is
 * refused, or the flag is ignored: it never brings a CONNECT_REPLY.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define REMOTE (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)

/* A Read on @s, which rnicpi.h refuses at post while its ORD is 0. */
static rnicpi_status_t
post_read(cert_side_t *s, cert_buf_t *sink, const cert_buf_t *src, uint64_t id)
{
  rnicpi_sge_t sge = cert_sge(sink, 0, 64);
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = RNICPI_WR_RDMA_READ,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = cert_raddr(src, 0), .rkey = src->mr->rkey };
  return DAT->post_send(s->qp, &wr);
}

static void
test_modify_connected_ird_ord(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("qp_modify on connected queue pairs does not raise the IRD and ORD their "
                 "connection settled: the active side connects with ORD 0, so it settles at ORD "
                 "0 and the passive side at IRD 0; qp_modify then asks IRD and ORD 4 of both, "
                 "and returns RNICPI_OK; an RDMA Read posted on the active side is still "
                 "RNICPI_ELIMIT (ORD 0), nothing completes, and a Send each way still arrives");
  const rnicpi_caps_t *c = &f->caps;
  if (!cert_require_reads(f))
    return;
  /* ORD 0 alone: an IRD of 0 may be announced as 1 (vp/iwarp answers
   * zero-length Reads, its fences, whatever the IRD). */
  rnicpi_conn_param_t act = { .ird = cert_min(4, c->max_ird), .ord = 0 };
  rnicpi_conn_param_t pas = { .ird = cert_min(4, c->max_ird), .ord = cert_min(4, c->max_ord) };
  cert_pair_t pr;
  if (!cert_pair_open_cp(f, &pr, NULL, &act, &pas))
    return;
  g_test_message("settled: active IRD %u ORD %u, passive IRD %u ORD %u", pr.a.ird, pr.a.ord,
                 pr.p.ird, pr.p.ord);
  g_assert_cmpuint(pr.a.ord, ==, 0);

  cert_buf_t src[2], sink[2];
  cert_side_t *side[2] = { &pr.a, &pr.p };
  for (int s = 0; s < 2; s++) {
    cert_buf_new(side[s]->pd, &src[s], 64, RW | REMOTE);
    cert_buf_new(side[s]->pd, &sink[s], 64, cert_sink_access(f));
    cert_buf_fill(&src[s], (uint8_t) (0x61 + s));
  }
  /* Before and after qp_modify: ORD 0, so no Read may be outstanding. */
  for (int round = 0; round < 2; round++) {
    if (round == 1) {
      for (int s = 0; s < 2; s++) {
        rnicpi_qp_attr_t a = cert_qp_attr(f, side[s]->scq, side[s]->rcq);
        a.ird = cert_min(4, c->max_ird);
        a.ord = cert_min(4, c->max_ord);
        cert_ok(QUE->qp_modify(side[s]->qp, &a));
      }
    }
    rnicpi_status_t st = post_read(&pr.a, &sink[0], &src[1], 0x9d0 + (uint64_t) round);
    if (st != RNICPI_ELIMIT)
      g_test_message("%s qp_modify, a Read on the active side (settled ORD 0): %s",
                     round == 0 ? "before" : "after", rnicpi_status_name(st));
    cert_cmpst(st, RNICPI_ELIMIT);
  }
  cert_assert_cq_quiet(pr.a.scq);
  for (int s = 0; s < 2; s++) {
    cert_post_recv(side[1 - s]->qp, &sink[1 - s], 0, 64, 0x9e0 + (uint64_t) s);
    cert_post_send(side[s]->qp, RNICPI_WR_SEND, &src[s], 0, 64, 0x9f0 + (uint64_t) s,
                   RNICPI_WR_SIGNALED, 0, 0);
    rnicpi_wc_t wc = cert_wc(side[s]->scq);
    g_assert_cmphex(wc.wr_id, ==, 0x9f0 + (uint64_t) s);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    wc = cert_wc(side[1 - s]->rcq);
    g_assert_cmphex(wc.wr_id, ==, 0x9e0 + (uint64_t) s);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    cert_buf_check(&sink[1 - s], 0, 64, (uint8_t) (0x61 + s));
  }
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);
  for (int s = 0; s < 2; s++) {
    cert_buf_free(&sink[s]);
    cert_buf_free(&src[s]);
  }
  cert_pair_free(&pr);
}

static void
test_three_way_absent(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("connect with three_way on a device without three-way-handshake is "
                 "RNICPI_ENOTSUP, starting nothing (no CM event, the queue pair stays IDLE and "
                 "then connects two-way), or the flag is ignored (rnicpi.h lets a provider): the "
                 "request is accepted and both sides get ESTABLISHED, the active side never a "
                 "CONNECT_REPLY");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  if (f->caps.features & RNICPI_CAP_THREE_WAY) {
    g_test_skip("the device offers three-way-handshake");
    return;
  }
  cert_pair_t pr;
  memset(&pr, 0, sizeof(pr));
  cert_side_new(f, &pr.a, 0xa0000, 64, NULL);
  cert_side_new(f, &pr.p, 0xb0000, 64, NULL);
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1350, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord), .three_way = true };
  rnicpi_status_t st = CMV->connect(pr.a.qp, &dst, &cp);
  g_test_message("connect with three_way: %s", rnicpi_status_name(st));
  if (st == RNICPI_ENOTSUP) {
    cert_assert_no_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1350);
    g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_IDLE);
    cp.three_way = false;
    cert_ok(CMV->connect(pr.a.qp, &dst, &cp));
  } else {
    cert_ok(st);
  }
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1350);
  cp.three_way = false;
  cert_ok(CMV->accept(pr.p.qp, req->conn_id, &cp));
  /* Three-way, the passive side would wait for the active side's accept. */
  rnicpi_cm_event_t *reply = cert_poll_cm(f, RNICPI_CM_CONNECT_REPLY, pr.a.ctx, CERT_QUIET_MS);
  if (reply != NULL)
    g_test_message("the active side got CONNECT_REPLY: a three-way handshake the device does "
                   "not offer");
  g_assert_null(reply);
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr.p.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr.a.ctx));
  cert_ok(CMV->unlisten(lst));
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);
  cert_pair_free(&pr);
}

static void
test_ird_zero(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an IRD of 0 is settled as offered: the active side connects with IRD 0, the "
                 "passive side accepts with ORD 4; the passive side's ORD is within the active "
                 "side's IRD (0: with ird-ord-negotiated the lesser of 4 and 0), so an RDMA Read "
                 "posted there is RNICPI_ELIMIT and both queue pairs stay in RTS");
  const rnicpi_caps_t *c = &f->caps;
  if (!cert_require_reads(f))
    return;
  rnicpi_conn_param_t act = { .ird = 0, .ord = cert_min(4, c->max_ord) };
  rnicpi_conn_param_t pas = { .ird = cert_min(4, c->max_ird), .ord = cert_min(4, c->max_ord) };
  cert_pair_t pr;
  if (!cert_pair_open_cp(f, &pr, NULL, &act, &pas))
    return;
  g_test_message("settled: active IRD %u ORD %u, passive IRD %u ORD %u", pr.a.ird, pr.a.ord,
                 pr.p.ird, pr.p.ord);
  /* CM-20: no end may have more Reads out than the other takes in. */
  g_assert_cmpuint(pr.p.ord, <=, pr.a.ird);
  g_assert_cmpuint(pr.a.ird, ==, 0);
  cert_buf_t src, sink;
  cert_buf_new(pr.a.pd, &src, 64, RW | REMOTE);
  cert_buf_new(pr.p.pd, &sink, 64, cert_sink_access(f));
  cert_cmpst(post_read(&pr.p, &sink, &src, 0x9c1), RNICPI_ELIMIT);
  cert_assert_cq_quiet(pr.p.scq);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);
  cert_buf_free(&sink);
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

void
cert_register_negotiate(void)
{
  cert_add("/rnicpi/qp/modify-connected-ird-ord", test_modify_connected_ird_ord);
  cert_add("/rnicpi/cm/ird-zero", test_ird_zero);
  cert_add("/rnicpi/cm/three-way-absent", test_three_way_absent);
}
