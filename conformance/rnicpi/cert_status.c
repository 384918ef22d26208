/*
 * cert-rnicpi: the completion status of each remote fault a test can
 * cause, exactly (rnicpi_wc_status_t: one status per cause).  Other tests
 * of the same faults check what they leave behind and take any error
 * status; here the status itself is the rule.
 *
 * Not reachable through this ABI: RNICPI_WC_RNR_ERR (a queue pair has no
 * RNR retry count to set: an InfiniBand Send without a receive waits), and
 * RNICPI_WC_TRANSPORT_ERR and RNICPI_WC_BAD_RESP_ERR (a lost link and a
 * responder out of protocol are not in a test's hands: the wire tests of
 * vp/iwarp make them).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define REMOTE (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)

/* Completion @wc of request @id is @want; its name in the failure. */
static void
expect_status(const rnicpi_wc_t *wc, uint64_t id, rnicpi_wc_status_t want)
{
  g_assert_cmphex(wc->wr_id, ==, id);
  if (wc->status != want)
    g_test_message("request 0x%" G_GINT64_MODIFIER "x completed with status %d, expected %d",
                   id, wc->status, want);
  g_assert_cmpint(wc->status, ==, want);
}

static void
test_atomic_misaligned(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an atomic the responder cannot execute, a Fetch and Add at an address 4 "
                 "bytes past an 8-byte boundary inside a region with REMOTE ATOMIC rights, "
                 "completes with RNICPI_WC_REM_OP_ERR (InfiniBand: an invalid request; RFC "
                 "7306: a remote operation error), not another error; the requester enters "
                 "ERROR and the target is untouched");
  if (!cert_require(f, RNICPI_CAP_ATOMICS))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t res, tgt;
  cert_buf_new(pr.a.pd, &res, 8, RW);
  cert_buf_new(pr.p.pd, &tgt, 64, RW | REMOTE | RNICPI_ACCESS_ATOMIC);
  memset(res.data, 0, 8);
  cert_buf_fill(&tgt, 0x17);
  rnicpi_sge_t s = cert_sge(&res, 0, 8);
  rnicpi_send_wr_t wr = { .wr_id = 0xa701, .opcode = RNICPI_WR_ATOMIC_FETCH_ADD,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &s, .num_sge = 1,
                          .remote_addr = cert_raddr(&tgt, 12), .rkey = tgt.mr->rkey,
                          .compare_add = 1 };
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  expect_status(&wc, 0xa701, RNICPI_WC_REM_OP_ERR);
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pr.a.scq);
  cert_buf_check(&tgt, 0, 64, 0x17);
  for (size_t i = 0; i < 8; i++)
    g_assert_cmphex(res.data[i], ==, 0);
  cert_buf_free(&tgt);
  cert_buf_free(&res);
  cert_pair_free(&pr);
}

static void
test_send_no_receive(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("on iWARP, a Send that finds no receive at the peer (RFC 5040 7.1: no "
                 "untagged buffer) is an operation the responder cannot execute: with "
                 "completes-at-placement it completes with RNICPI_WC_REM_OP_ERR, without it "
                 "with that status or successfully (it left before the peer refused it), "
                 "never with another error; the requester enters ERROR");
  if (f->caps.transport == RNICPI_TRANSPORT_IB) {
    g_test_skip("on InfiniBand a Send waits for a receive (RNIC-PI sets no RNR retry count)");
    return;
  }
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  gboolean placed = (f->caps.features & RNICPI_CAP_PLACED_COMPLETION) != 0;
  cert_buf_t src;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_fill(&src, 0x23);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0xa702, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  if (placed || wc.status != RNICPI_WC_SUCCESS)
    expect_status(&wc, 0xa702, RNICPI_WC_REM_OP_ERR);
  else
    g_test_message("the Send completed successfully before the peer refused it");
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

void
cert_register_status(void)
{
  cert_add("/rnicpi/errors/status/atomic-misaligned", test_atomic_misaligned);
  cert_add("/rnicpi/errors/status/send-no-receive", test_send_no_receive);
}
