/*
 * cert-rnicpi: what the IT-API level checked alone until now, at the
 * RNIC-PI level: changing a region's rights (mr_modify) and a connected
 * queue pair's (qp_modify), completion notification in detail (arm_cq,
 * cq_count), local protection of receive buffers and Read sinks, the exact
 * edges of a region, misaligned atomics, posting in ERROR, and socket
 * handoff.  Also the helpers cert.h lists for cert_mw.c, cert_srq.c and
 * cert_ud.c.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define REMOTE (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define BAD_ID 0xbad0

/* ---- Helpers (cert.h) ------------------------------------------------- */

void
cert_wait_state(rnicpi_qp_t *qp, rnicpi_qp_state_t want)
{
  cert_limit_t w;
  cert_limit_beginf(&w, CERT_TIMEOUT_MS * 1000, "a QP to enter state %d (cert_wait_state)", want);
  while (QUE->qp_state(qp) != want && !cert_limit_over(&w))
    g_usleep(1000);
  cert_limit_end(&w);
  g_assert_cmpint(QUE->qp_state(qp), ==, want);
}

void
cert_expect_refused(cert_t *f, cert_pair_t *pr, uint64_t id, gboolean write)
{
  rnicpi_wc_t wc = cert_wc(pr->a.scq);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmphex(wc.qp_ctx, ==, pr->a.ctx);
  gboolean at_sent = write && !(f->caps.features & RNICPI_CAP_PLACED_COMPLETION);
  if (at_sent && (wc.status == RNICPI_WC_SUCCESS || wc.status == RNICPI_WC_WR_FLUSH_ERR))
    g_test_message("requester completion status %d (completed at transmission)", wc.status);
  else
    g_assert_cmpint(wc.status, ==, RNICPI_WC_REM_ACCESS_ERR);
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr->a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr->p.ctx));
  g_free(cert_wait_async(f, RNICPI_ASYNC_QP_ACCESS_ERR, pr->p.ctx));
  cert_wait_state(pr->a.qp, RNICPI_QPS_ERROR);
  cert_wait_state(pr->p.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pr->a.scq);
}

void
cert_write_ok(cert_t *f, cert_pair_t *pr, const cert_buf_t *src, size_t off, uint32_t len,
              uint64_t raddr, uint64_t rkey)
{
  cert_post_send(pr->a.qp, RNICPI_WR_RDMA_WRITE, src, off, len, 0x3717e, RNICPI_WR_SIGNALED,
                 raddr, rkey);
  rnicpi_wc_t wc = cert_wc(pr->a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x3717e);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_WRITE);
  cert_placed(f, pr, raddr, rkey);
}

/* ---- ORD 0 ------------------------------------------------------------- */

static void
test_ord_zero(cert_t *f, gconstpointer data)
{
  rnicpi_wr_opcode_t op = GPOINTER_TO_INT(data);
  gboolean atomic = op != RNICPI_WR_RDMA_READ;
  g_autofree char *s = g_strdup_printf(
    "with ORD 0 negotiated (the connect asks for none), an %s is refused by post_send with "
    "RNICPI_ELIMIT, or completes with an error: no Read or atomic may be outstanding, so it "
    "never completes successfully, never hangs, never reaches the peer (which raises no "
    "event of its own) and the peer's memory does not change",
    atomic ? "atomic (Fetch and Add, then Compare and Swap)" : "RDMA Read");
  g_test_summary(s);
  if (atomic && !cert_require(f, RNICPI_CAP_ATOMICS))
    return;
  rnicpi_conn_param_t act = { .ird = cert_min(4, f->caps.max_ird), .ord = 0 };
  rnicpi_conn_param_t pas = { .ird = cert_min(4, f->caps.max_ird),
                              .ord = cert_min(4, f->caps.max_ord) };
  cert_pair_t pr;
  if (!cert_pair_open_cp(f, &pr, NULL, &act, &pas))
    return;
  g_assert_cmpuint(pr.a.ord, ==, 0);
  cert_buf_t sink, tgt;
  cert_buf_new(pr.a.pd, &sink, 64, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, 64, RW | REMOTE | (atomic ? RNICPI_ACCESS_ATOMIC : 0));
  cert_buf_fill(&tgt, 3);
  const rnicpi_wr_opcode_t ops[] = { op, RNICPI_WR_ATOMIC_CMP_SWP };
  for (int i = 0; i < (atomic ? 2 : 1); i++) {
    rnicpi_sge_t sge = cert_sge(&sink, 0, atomic ? 8 : 64);
    uint64_t old;
    memcpy(&old, tgt.data, 8);
    rnicpi_send_wr_t wr = { .wr_id = BAD_ID + (uint64_t) i, .opcode = ops[i],
                            .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                            .remote_addr = cert_raddr(&tgt, 0), .rkey = tgt.mr->rkey,
                            .compare_add = old, .swap = 0x5a5a };
    rnicpi_status_t st = DAT->post_send(pr.a.qp, &wr);
    if (st == RNICPI_OK) {
      rnicpi_wc_t wc = cert_wc(pr.a.scq);
      g_test_message("ORD 0: opcode %d taken by post_send, completed with status %d", ops[i],
                     wc.status);
      g_assert_cmphex(wc.wr_id, ==, BAD_ID + (uint64_t) i);
      g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
      break; /* the queue pair may have ended with it */
    }
    cert_cmpst(st, RNICPI_ELIMIT);
    cert_assert_cq_quiet(pr.a.scq);
  }
  /* It never reached the peer: a responder that got a Read or atomic past
   * its IRD (0 here) would have raised an event of its own. */
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_QP_FATAL, pr.p.ctx, CERT_QUIET_MS));
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_QP_ACCESS_ERR, pr.p.ctx, 0));
  cert_buf_check(&tgt, 0, 64, 3);
  for (size_t i = 0; i < sink.len; i++)
    g_assert_cmphex(sink.data[i], ==, 0);
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- mr_modify -------------------------------------------------------- */

static void
test_mr_modify_revoke_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mr_modify taking REMOTE_WRITE away from a region that was just written "
                 "remotely: the keys stay, and the very next RDMA Write through them is "
                 "refused and writes nothing");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, tgt;
  cert_buf_new(pr.a.pd, &src, 256, RW);
  cert_buf_new(pr.p.pd, &tgt, 256, RW | REMOTE);
  cert_buf_fill(&src, 2);
  cert_write_ok(f, &pr, &src, 0, 64, cert_raddr(&tgt, 0), tgt.mr->rkey);
  cert_buf_check(&tgt, 0, 64, 2);
  uint64_t lkey = tgt.mr->lkey, rkey = tgt.mr->rkey;
  cert_ok(MEM->mr_modify(tgt.mr, RW | RNICPI_ACCESS_REMOTE_READ));
  g_assert_cmphex(tgt.mr->lkey, ==, lkey);
  g_assert_cmphex(tgt.mr->rkey, ==, rkey);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 64, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 64), rkey);
  cert_expect_refused(f, &pr, BAD_ID, TRUE);
  cert_buf_check(&tgt, 0, 64, 2);
  for (size_t i = 64; i < tgt.len; i++)
    g_assert_cmphex(tgt.data[i], ==, 0);
  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

static void
test_mr_modify_revoke_read(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mr_modify taking REMOTE_READ away: the next RDMA Read through the region's "
                 "key completes with RNICPI_WC_REM_ACCESS_ERR and fills nothing of the sink");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t sink, tgt;
  cert_buf_new(pr.a.pd, &sink, 256, RW | REMOTE);
  cert_buf_new(pr.p.pd, &tgt, 256, RW | REMOTE);
  cert_buf_fill(&tgt, 12);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, 64, 0x4ead, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), tgt.mr->rkey);
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&sink, 0, 64, 12);
  cert_ok(MEM->mr_modify(tgt.mr, RW | RNICPI_ACCESS_REMOTE_WRITE));
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 64, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), tgt.mr->rkey);
  cert_expect_refused(f, &pr, BAD_ID, FALSE);
  for (size_t i = 64; i < sink.len; i++)
    g_assert_cmphex(sink.data[i], ==, 0);
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

static void
test_mr_modify_grant_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mr_modify granting REMOTE_WRITE to a region registered without it: the next "
                 "RDMA Write through its unchanged key lands");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, tgt;
  cert_buf_new(pr.a.pd, &src, 256, RW);
  cert_buf_new(pr.p.pd, &tgt, 256, RW | RNICPI_ACCESS_REMOTE_READ);
  cert_buf_fill(&src, 13);
  uint64_t rkey = tgt.mr->rkey;
  cert_ok(MEM->mr_modify(tgt.mr, RW | REMOTE));
  g_assert_cmphex(tgt.mr->rkey, ==, rkey);
  cert_write_ok(f, &pr, &src, 0, 256, cert_raddr(&tgt, 0), rkey);
  cert_buf_check(&tgt, 0, 256, 13);
  cert_buf_check_guards(&tgt);
  cert_assert_cq_quiet(pr.a.scq);
  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- completion notification ------------------------------------------ */

static void
test_cq_notify_once(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("completions on a CQ never armed bring no cq_notify upcall; armed, three "
                 "completions arriving together bring exactly one, and cq_count says 3, then "
                 "2 after one poll and 0 after the rest; re-armed, the next completion brings "
                 "one more");
  cert_side_t s;
  cert_buf_t b;
  cert_side_new(f, &s, 0xe0000, 16, NULL);
  cert_buf_new(s.pd, &b, 256, RNICPI_ACCESS_LOCAL_WRITE);

  /* Never armed. */
  cert_post_recv(s.qp, &b, 0, 64, 1);
  cert_post_recv(s.qp, &b, 64, 64, 2);
  cert_ok(QUE->qp_to_error(s.qp));
  rnicpi_wc_t wc[4];
  g_assert_cmpint(cert_poll(s.rcq, wc, 2, CERT_TIMEOUT_MS), ==, 2);
  g_assert_false(cert_wait_notify(f, s.rcq->al_ctx, CERT_QUIET_MS));
  g_assert_cmpuint(DAT->cq_count(s.rcq), ==, 0);

  /* Armed: three completions at once, one upcall. */
  cert_ok(QUE->qp_reset(s.qp));
  for (uint64_t i = 0; i < 3; i++)
    cert_post_recv(s.qp, &b, i * 64, 64, 10 + i);
  cert_ok(DAT->arm_cq(s.rcq));
  cert_ok(QUE->qp_to_error(s.qp));
  g_assert_true(cert_wait_notify(f, s.rcq->al_ctx, CERT_TIMEOUT_MS));
  cert_limit_t lim;
  cert_limit_begin(&lim, "3 completions counted on the receive CQ", CERT_TIMEOUT_MS * 1000);
  while (DAT->cq_count(s.rcq) < 3 && !cert_limit_over(&lim))
    g_usleep(1000);
  cert_limit_end(&lim);
  g_assert_cmpuint(DAT->cq_count(s.rcq), ==, 3);
  g_assert_false(cert_wait_notify(f, s.rcq->al_ctx, CERT_QUIET_MS));
  g_assert_cmpint(DAT->poll_cq(s.rcq, wc, 1), ==, 1);
  g_assert_cmphex(wc[0].wr_id, ==, 10);
  g_assert_cmpuint(DAT->cq_count(s.rcq), ==, 2);
  g_assert_cmpint(DAT->poll_cq(s.rcq, wc, 4), ==, 2);
  g_assert_cmphex(wc[0].wr_id, ==, 11);
  g_assert_cmphex(wc[1].wr_id, ==, 12);
  g_assert_cmpuint(DAT->cq_count(s.rcq), ==, 0);

  /* Re-armed: the next completion (a receive posted in ERROR) is announced. */
  cert_ok(DAT->arm_cq(s.rcq));
  cert_post_recv(s.qp, &b, 0, 64, 20);
  g_assert_true(cert_wait_notify(f, s.rcq->al_ctx, CERT_TIMEOUT_MS));
  rnicpi_wc_t w = cert_wc(s.rcq);
  g_assert_cmphex(w.wr_id, ==, 20);
  g_assert_false(cert_wait_notify(f, s.rcq->al_ctx, CERT_QUIET_MS));
  g_assert_false(cert_wait_notify(f, s.scq->al_ctx, 0));
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_cq_notify_send_recv(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("on a connected pair, the receiver's armed receive CQ gets exactly one "
                 "cq_notify upcall for an arriving Send, the sender's armed send CQ one for its "
                 "completion, and the unarmed CQs none");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_new(pr.p.pd, &dst, 64, RW);
  cert_post_recv(pr.p.qp, &dst, 0, 64, 0x71);
  cert_ok(DAT->arm_cq(pr.p.rcq));
  cert_ok(DAT->arm_cq(pr.a.scq));
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0x72, RNICPI_WR_SIGNALED, 0, 0);
  g_assert_true(cert_wait_notify(f, pr.p.rcq->al_ctx, CERT_TIMEOUT_MS));
  g_assert_true(cert_wait_notify(f, pr.a.scq->al_ctx, CERT_TIMEOUT_MS));
  g_assert_cmphex(cert_wc(pr.p.rcq).wr_id, ==, 0x71);
  g_assert_cmphex(cert_wc(pr.a.scq).wr_id, ==, 0x72);
  g_assert_false(cert_wait_notify(f, pr.p.rcq->al_ctx, CERT_QUIET_MS));
  g_assert_false(cert_wait_notify(f, pr.a.scq->al_ctx, 0));
  g_assert_false(cert_wait_notify(f, pr.p.scq->al_ctx, 0));
  g_assert_false(cert_wait_notify(f, pr.a.rcq->al_ctx, 0));
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

/* ---- local protection ------------------------------------------------- */

static void
test_protect_recv_no_local_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send into a receive whose buffer's region lacks LOCAL_WRITE: the receive "
                 "completes once with RNICPI_WC_LOC_PROT_ERR, no byte of the buffer is written, "
                 "and the Send does not complete successfully where completions mean placement");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_new(pr.p.pd, &dst, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_REMOTE_READ);
  cert_buf_fill(&src, 21);
  cert_post_recv(pr.p.qp, &dst, 0, 64, 0x81);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, BAD_ID, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0x81);
  g_assert_cmphex(r.qp_ctx, ==, pr.p.ctx);
  g_assert_cmpint(r.status, ==, RNICPI_WC_LOC_PROT_ERR);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmphex(s.wr_id, ==, BAD_ID);
  g_test_message("requester completion status %d", s.status);
  if (f->caps.features & RNICPI_CAP_PLACED_COMPLETION)
    g_assert_cmpint(s.status, !=, RNICPI_WC_SUCCESS);
  for (size_t i = 0; i < dst.len; i++)
    g_assert_cmphex(dst.data[i], ==, 0);
  cert_buf_check_guards(&dst);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_assert_cq_quiet(pr.a.scq);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

/* An RDMA Read into a 64-byte sink registered with @sink_access completes
 * once with RNICPI_WC_LOC_PROT_ERR, the sink untouched, and the requester
 * enters ERROR. */
static void
read_sink_refused(cert_t *f, uint32_t sink_access)
{
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t sink, tgt;
  cert_buf_new(pr.a.pd, &sink, 64, sink_access);
  cert_buf_new(pr.p.pd, &tgt, 64, RW | REMOTE);
  cert_buf_fill(&tgt, 22);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), tgt.mr->rkey);
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_LOC_PROT_ERR);
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  for (size_t i = 0; i < sink.len; i++)
    g_assert_cmphex(sink.data[i], ==, 0);
  cert_buf_check_guards(&sink);
  cert_assert_cq_quiet(pr.a.scq);
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

static void
test_protect_read_sink_no_local_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read whose sink's region lacks LOCAL_WRITE (it has every other right) "
                 "completes once with RNICPI_WC_LOC_PROT_ERR, the sink untouched, and the "
                 "requester enters ERROR");
  read_sink_refused(f, RNICPI_ACCESS_LOCAL_READ | REMOTE);
}

static void
test_protect_read_sink_no_remote_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("on a device whose Read sinks need REMOTE_WRITE (read-sink-needs-remote-write: "
                 "iWARP, the Read Response is a tagged write into the sink), an RDMA Read whose "
                 "sink's region has LOCAL_WRITE, LOCAL_READ and REMOTE_READ but not REMOTE_WRITE "
                 "completes once with RNICPI_WC_LOC_PROT_ERR, the sink untouched, and the "
                 "requester enters ERROR");
  if (!cert_require(f, RNICPI_CAP_READ_SINK_REMOTE_WRITE))
    return;
  read_sink_refused(f, RW | RNICPI_ACCESS_REMOTE_READ);
}

/* ---- region edges ----------------------------------------------------- */

typedef struct {
  cert_pair_t pr;
  cert_buf_t src, tgt;
} edge_t;

static gboolean
edge_open(cert_t *f, edge_t *e)
{
  if (!cert_pair_open(f, &e->pr, NULL))
    return FALSE;
  cert_buf_new(e->pr.a.pd, &e->src, 512, RW);
  cert_buf_new(e->pr.p.pd, &e->tgt, 256, RW | REMOTE);
  cert_buf_fill(&e->src, 31);
  return TRUE;
}

static void
edge_close(edge_t *e)
{
  cert_buf_free(&e->src);
  cert_buf_free(&e->tgt);
  cert_pair_free(&e->pr);
}

static void
edge_untouched(const edge_t *e)
{
  for (size_t i = 0; i < e->tgt.len; i++)
    g_assert_cmphex(e->tgt.data[i], ==, 0);
  cert_buf_check_guards(&e->tgt);
}

static void
test_bounds_write_edges_in(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("RDMA Writes of the region's first byte alone, its last byte alone, and the "
                 "whole region succeed and land exactly there; the guard bytes either side stay");
  edge_t e;
  if (!edge_open(f, &e))
    return;
  uint64_t k = e.tgt.mr->rkey;
  cert_write_ok(f, &e.pr, &e.src, 0, 1, cert_raddr(&e.tgt, 0), k);
  g_assert_cmphex(e.tgt.data[0], ==, e.src.data[0]);
  cert_write_ok(f, &e.pr, &e.src, 1, 1, cert_raddr(&e.tgt, e.tgt.len - 1), k);
  g_assert_cmphex(e.tgt.data[e.tgt.len - 1], ==, e.src.data[1]);
  for (size_t i = 1; i < e.tgt.len - 1; i++)
    g_assert_cmphex(e.tgt.data[i], ==, 0);
  cert_write_ok(f, &e.pr, &e.src, 0, (uint32_t) e.tgt.len, cert_raddr(&e.tgt, 0), k);
  cert_buf_check(&e.tgt, 0, e.tgt.len, 31);
  cert_buf_check_guards(&e.tgt);
  cert_assert_cq_quiet(e.pr.a.scq);
  edge_close(&e);
}

static void
test_bounds_write_before_first(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Write of 8 bytes starting one byte before the region's first byte is "
                 "refused (RNICPI_WC_REM_ACCESS_ERR, connection broken) and writes nothing, "
                 "inside the region or before it");
  edge_t e;
  if (!edge_open(f, &e))
    return;
  cert_post_send(e.pr.a.qp, RNICPI_WR_RDMA_WRITE, &e.src, 0, 8, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&e.tgt, 0) - 1, e.tgt.mr->rkey);
  cert_expect_refused(f, &e.pr, BAD_ID, TRUE);
  edge_untouched(&e);
  edge_close(&e);
}

static void
test_bounds_write_one_past_last(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Write of 2 bytes starting at the region's last byte (so ending one "
                 "past it) is refused and writes nothing");
  edge_t e;
  if (!edge_open(f, &e))
    return;
  cert_post_send(e.pr.a.qp, RNICPI_WR_RDMA_WRITE, &e.src, 0, 2, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&e.tgt, e.tgt.len - 1), e.tgt.mr->rkey);
  cert_expect_refused(f, &e.pr, BAD_ID, TRUE);
  edge_untouched(&e);
  edge_close(&e);
}

static void
test_bounds_read_one_past_last(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read of the region's whole length starting one byte into it (so "
                 "ending one past its last byte) completes with RNICPI_WC_REM_ACCESS_ERR and "
                 "fills nothing of the sink");
  edge_t e;
  if (!edge_open(f, &e))
    return;
  cert_buf_fill(&e.tgt, 32);
  /* The sink is registered with the rights a Read sink needs on this
   * device from the start (mr_modify is a rule of its own). */
  cert_buf_t sink;
  cert_buf_new(e.pr.a.pd, &sink, e.src.len, cert_sink_access(f));
  cert_post_send(e.pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, (uint32_t) e.tgt.len, BAD_ID,
                 RNICPI_WR_SIGNALED, cert_raddr(&e.tgt, 1), e.tgt.mr->rkey);
  cert_expect_refused(f, &e.pr, BAD_ID, FALSE);
  for (size_t i = 0; i < sink.len; i++)
    g_assert_cmphex(sink.data[i], ==, 0);
  cert_buf_check_guards(&sink);
  cert_buf_free(&sink);
  edge_close(&e);
}

static void
test_bounds_atomic_unaligned(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a fetch-and-add on a target address that is not 8-byte aligned completes in "
                 "error (not success, not a flush), leaves the target and the result buffer "
                 "untouched, and the requester enters ERROR");
  if (!cert_require(f, RNICPI_CAP_ATOMICS))
    return;
  edge_t e;
  if (!cert_pair_open(f, &e.pr, NULL))
    return;
  /* The target is registered with ATOMIC from the start (mr_modify is a
   * rule of its own). */
  cert_buf_new(e.pr.a.pd, &e.src, 512, RW);
  cert_buf_new(e.pr.p.pd, &e.tgt, 256, RW | REMOTE | RNICPI_ACCESS_ATOMIC);
  rnicpi_sge_t sge = cert_sge(&e.src, 0, 8);
  rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = RNICPI_WR_ATOMIC_FETCH_ADD,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = cert_raddr(&e.tgt, 12), .rkey = e.tgt.mr->rkey,
                          .compare_add = 1 };
  cert_ok(DAT->post_send(e.pr.a.qp, &wr));
  rnicpi_wc_t wc = cert_wc(e.pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_test_message("requester completion status %d", wc.status);
  g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.status, !=, RNICPI_WC_WR_FLUSH_ERR);
  cert_wait_state(e.pr.a.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(e.pr.a.scq);
  edge_untouched(&e);
  for (size_t i = 0; i < 8; i++)
    g_assert_cmphex(e.src.data[i], ==, 0);
  edge_close(&e);
}

/* ---- queue pair modify and posting in ERROR --------------------------- */

static void
test_qp_modify_rts_access(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("qp_modify on a connected (RTS) responder taking REMOTE_WRITE out of its "
                 "inbound rights: the state stays RTS, RDMA Reads still work, and the next RDMA "
                 "Write is refused although the region grants it");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, tgt;
  cert_buf_new(pr.a.pd, &src, 256, RW | REMOTE);
  cert_buf_new(pr.p.pd, &tgt, 256, RW | REMOTE);
  cert_buf_fill(&src, 41);
  cert_write_ok(f, &pr, &src, 0, 64, cert_raddr(&tgt, 0), tgt.mr->rkey);
  rnicpi_qp_attr_t a = cert_qp_attr(f, pr.p.scq, pr.p.rcq);
  a.ird = pr.p.ird;
  a.ord = pr.p.ord;
  a.access = RNICPI_ACCESS_REMOTE_READ;
  cert_ok(QUE->qp_modify(pr.p.qp, &a));
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &src, 128, 64, 0x4ead, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), tgt.mr->rkey);
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&src, 128, 64, 41);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 64), tgt.mr->rkey);
  cert_expect_refused(f, &pr, BAD_ID, TRUE);
  for (size_t i = 64; i < tgt.len; i++)
    g_assert_cmphex(tgt.data[i], ==, 0);
  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

static void
test_qp_modify_rts_limits(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("qp_modify in RTS asking an IRD or ORD above the capability record's is refused "
                 "with RNICPI_ELIMIT and changes nothing: the queue pair stays RTS and a Send "
                 "still arrives");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  rnicpi_qp_attr_t a = cert_qp_attr(f, pr.p.scq, pr.p.rcq);
  a.ird = pr.p.ird;
  a.ord = pr.p.ord;
  if (f->caps.max_ird != UINT32_MAX) {
    a.ird = f->caps.max_ird + 1;
    cert_cmpst(QUE->qp_modify(pr.p.qp, &a), RNICPI_ELIMIT);
    a.ird = pr.p.ird;
  }
  if (f->caps.max_ord != UINT32_MAX) {
    a.ord = f->caps.max_ord + 1;
    cert_cmpst(QUE->qp_modify(pr.p.qp, &a), RNICPI_ELIMIT);
  }
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_new(pr.p.pd, &dst, 64, RW);
  cert_buf_fill(&src, 42);
  cert_post_recv(pr.p.qp, &dst, 0, 64, 0x91);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0x92, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(cert_wc(pr.a.scq).status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&dst, 0, 64, 42);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_qp_post_in_error(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a connected queue pair moved to ERROR still takes post_send and post_recv "
                 "(RNICPI_OK) and completes each exactly once, flushed, with its wr_id, nothing "
                 "reaching the peer");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_new(pr.p.pd, &dst, 64, RW);
  cert_post_recv(pr.p.qp, &dst, 0, 64, 0xa1);
  cert_ok(QUE->qp_to_error(pr.a.qp));
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_ERROR);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0xa2, RNICPI_WR_SIGNALED, 0, 0);
  uint64_t sid = 0xa2, rid = 0xa3;
  cert_expect_flushed(pr.a.scq, pr.a.ctx, &sid, 1);
  cert_post_recv(pr.a.qp, &src, 0, 64, rid);
  cert_expect_flushed(pr.a.rcq, pr.a.ctx, &rid, 1);
  /* The peer's receive was not consumed by a Send: it is flushed when the
   * broken connection takes the peer to ERROR, never completed successfully. */
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr.p.ctx));
  cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);
  uint64_t pid = 0xa1;
  cert_expect_flushed(pr.p.rcq, pr.p.ctx, &pid, 1);
  for (size_t i = 0; i < dst.len; i++)
    g_assert_cmphex(dst.data[i], ==, 0);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_qp_post_in_error_later(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a queue pair in ERROR for a while, whose earlier work has all completed "
                 "flushed, still completes a Send and a receive posted then, each exactly once, "
                 "flushed (a provider that finishes the device's flush itself must do it for "
                 "requests that come late too)");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_post_recv(pr.a.qp, &src, 0, 64, 0xa4);
  cert_ok(QUE->qp_to_error(pr.a.qp));
  uint64_t early = 0xa4;
  cert_expect_flushed(pr.a.rcq, pr.a.ctx, &early, 1);
  g_usleep(500 * 1000);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0xa5, RNICPI_WR_SIGNALED, 0, 0);
  uint64_t sid = 0xa5, rid = 0xa6;
  cert_expect_flushed(pr.a.scq, pr.a.ctx, &sid, 1);
  g_usleep(500 * 1000);
  cert_post_recv(pr.a.qp, &src, 0, 64, rid);
  cert_expect_flushed(pr.a.rcq, pr.a.ctx, &rid, 1);
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.a.rcq);
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

/* ---- socket handoff --------------------------------------------------- */

static void
test_handoff_send_recv(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("sock_ops.handoff of both ends of a connected TCP socket to two IDLE queue "
                 "pairs (one active, one passive) with an IRD and ORD of 2: both get ESTABLISHED with "
                 "an IRD and ORD of at most 2 (at least 1 for the active side's Reads) and reach RTS, "
                 "and a Send, "
                 "an RDMA Write and an RDMA Read cross the connection");
  if (!cert_require(f, RNICPI_CAP_SOCKET_HANDOFF))
    return;
  struct sockaddr_storage ss;
  cert_self_addr(f, &ss);
  socklen_t sl = ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  int l = socket(ss.ss_family, SOCK_STREAM, 0);
  g_assert_cmpint(l, >=, 0);
  g_assert_cmpint(bind(l, (struct sockaddr *) &ss, sl), ==, 0);
  g_assert_cmpint(listen(l, 1), ==, 0);
  g_assert_cmpint(getsockname(l, (struct sockaddr *) &ss, &sl), ==, 0);
  int c = socket(ss.ss_family, SOCK_STREAM, 0);
  g_assert_cmpint(c, >=, 0);
  g_assert_cmpint(connect(c, (struct sockaddr *) &ss, sl), ==, 0);
  int s = accept(l, NULL, NULL);
  g_assert_cmpint(s, >=, 0);
  close(l);

  cert_pair_t pr;
  memset(&pr, 0, sizeof(pr));
  cert_side_new(f, &pr.a, 0xa0000, 64, NULL);
  cert_side_new(f, &pr.p, 0xb0000, 64, NULL);
  /* Fewer Reads than the queue pairs were created with: the handoff's own
   * parameters are what counts. */
  rnicpi_conn_param_t cp = { .ird = cert_min(2, f->caps.max_ird),
                             .ord = cert_min(2, f->caps.max_ord) };
  cert_ok(cert_prov->sock->handoff(pr.p.qp, s, false, &cp));
  cert_ok(cert_prov->sock->handoff(pr.a.qp, c, true, &cp));
  g_autofree rnicpi_cm_event_t *ea = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr.a.ctx);
  g_autofree rnicpi_cm_event_t *ep = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr.p.ctx);
  g_test_message("negotiated: active IRD %u ORD %u, passive IRD %u ORD %u", ea->ird, ea->ord,
                 ep->ird, ep->ord);
  g_assert_cmpuint(ea->ird, <=, cp.ird);
  g_assert_cmpuint(ea->ord, <=, cp.ord);
  g_assert_cmpuint(ep->ird, <=, cp.ird);
  g_assert_cmpuint(ep->ord, <=, cp.ord);
  /* Both ends offered Reads both ways: the active side's Reads have credit
   * at both ends. */
  if (cp.ord > 0 && cp.ird > 0) {
    g_assert_cmpuint(ea->ord, >=, 1);
    g_assert_cmpuint(ep->ird, >=, 1);
  }
  cert_wait_state(pr.a.qp, RNICPI_QPS_RTS);
  cert_wait_state(pr.p.qp, RNICPI_QPS_RTS);

  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 128, RW | REMOTE);
  cert_buf_new(pr.p.pd, &dst, 256, RW | REMOTE);
  cert_buf_fill(&src, 51);
  cert_post_recv(pr.p.qp, &dst, 0, 128, 0xc1);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 100, 0xc2, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0xc1);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(r.byte_len, ==, 100);
  rnicpi_wc_t w = cert_wc(pr.a.scq);
  g_assert_cmphex(w.wr_id, ==, 0xc2);
  g_assert_cmpint(w.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&dst, 0, 100, 51);
  cert_write_ok(f, &pr, &src, 0, 128, cert_raddr(&dst, 128), dst.mr->rkey);
  cert_buf_check(&dst, 128, 128, 51);
  /* The handoff's IRD/ORD hold: an RDMA Read back. */
  memset(src.data, 0, src.len);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &src, 0, 128, 0xc3, RNICPI_WR_SIGNALED,
                 cert_raddr(&dst, 128), dst.mr->rkey);
  w = cert_wc(pr.a.scq);
  g_assert_cmphex(w.wr_id, ==, 0xc3);
  g_assert_cmpint(w.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&src, 0, 128, 51);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

/* ---- messages of many segments ---------------------------------------- */

static void
test_data_large_message(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send of 200000 bytes (many packets or segments on any transport) completes "
                 "its receive once with byte_len 200000 and every byte in place; an RDMA Read of "
                 "the same size brings every byte back, and nothing past either message changes");
  enum { LEN = 200000, ROOM = LEN + 4096 };
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  if (f->caps.max_msg_size < LEN) {
    g_test_skip("max_msg_size is below 200000 bytes");
    cert_pair_free(&pr);
    return;
  }
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, ROOM, RW | REMOTE);
  cert_buf_new(pr.p.pd, &dst, ROOM, RW | REMOTE);
  cert_buf_fill(&src, 57);
  cert_post_recv(pr.p.qp, &dst, 0, ROOM, 0xd1);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, LEN, 0xd2, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0xd1);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(r.byte_len, ==, LEN);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmphex(s.wr_id, ==, 0xd2);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&dst, 0, LEN, 57);
  for (size_t i = LEN; i < ROOM; i++)
    g_assert_cmphex(dst.data[i], ==, 0);

  memset(src.data, 0, src.len);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &src, 0, LEN, 0xd3, RNICPI_WR_SIGNALED,
                 cert_raddr(&dst, 0), dst.mr->rkey);
  rnicpi_wc_t rd = cert_wc(pr.a.scq);
  g_assert_cmphex(rd.wr_id, ==, 0xd3);
  g_assert_cmpint(rd.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(rd.opcode, ==, RNICPI_WC_RDMA_READ);
  cert_buf_check(&src, 0, LEN, 57);
  for (size_t i = LEN; i < ROOM; i++)
    g_assert_cmphex(src.data[i], ==, 0);
  cert_buf_check_guards(&src);
  cert_buf_check_guards(&dst);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_assert_cq_quiet(pr.a.scq);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

void
cert_register_more(void)
{
  g_test_add("/rnicpi/protect/ord-zero/read", cert_t, GINT_TO_POINTER(RNICPI_WR_RDMA_READ),
             cert_setup, test_ord_zero, cert_teardown);
  g_test_add("/rnicpi/protect/ord-zero/atomic", cert_t, GINT_TO_POINTER(RNICPI_WR_ATOMIC_FETCH_ADD),
             cert_setup, test_ord_zero, cert_teardown);
  cert_add("/rnicpi/mr/modify-revoke-write", test_mr_modify_revoke_write);
  cert_add("/rnicpi/mr/modify-revoke-read", test_mr_modify_revoke_read);
  cert_add("/rnicpi/mr/modify-grant-write", test_mr_modify_grant_write);
  cert_add("/rnicpi/cq/notify-once", test_cq_notify_once);
  cert_add("/rnicpi/cq/notify-send-recv", test_cq_notify_send_recv);
  cert_add("/rnicpi/protect-local/recv-no-local-write", test_protect_recv_no_local_write);
  cert_add("/rnicpi/protect-local/read-sink-no-local-write", test_protect_read_sink_no_local_write);
  cert_add("/rnicpi/protect-local/read-sink-no-remote-write", test_protect_read_sink_no_remote_write);
  cert_add("/rnicpi/bounds/write-edges-in", test_bounds_write_edges_in);
  cert_add("/rnicpi/bounds/write-before-first", test_bounds_write_before_first);
  cert_add("/rnicpi/bounds/write-one-past-last", test_bounds_write_one_past_last);
  cert_add("/rnicpi/bounds/read-one-past-last", test_bounds_read_one_past_last);
  cert_add("/rnicpi/bounds/atomic-unaligned", test_bounds_atomic_unaligned);
  cert_add("/rnicpi/qp/modify-rts-access", test_qp_modify_rts_access);
  cert_add("/rnicpi/qp/modify-rts-limits", test_qp_modify_rts_limits);
  cert_add("/rnicpi/qp/post-in-error", test_qp_post_in_error);
  cert_add("/rnicpi/qp/post-in-error-later", test_qp_post_in_error_later);
  cert_add("/rnicpi/handoff/send-recv", test_handoff_send_recv);
  cert_add("/rnicpi/data/large-message", test_data_large_message);
}
