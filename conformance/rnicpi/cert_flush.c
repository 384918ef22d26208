/*
 * cert-rnicpi: every work request completes exactly once, also at the end
 * of a queue pair's life.  After qp_destroy or qp_reset its CQs hold
 * nothing more of it, and a reset QP connected again shows no stale
 * completion; requests posted to an ERROR QP flush once and never again;
 * an unsignaled request that fails still completes, with its error, and
 * those behind it flush (RNICPI_WR_SIGNALED only suppresses successes);
 * large Reads, Sends and Writes in flight when the QP goes to ERROR
 * complete flushed, or successfully with every byte in place.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define TARGET (RW | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
/* What a sink holds before a transfer, so a byte not placed shows. */
#define POISON 0x5a
/* How long to go on watching a CQ that must stay empty: a completion a
 * provider makes late (from a thread, a timer, a second flush) shows. */
#define LATE_MS (2 * CERT_QUIET_MS)
/* In-flight transfers: this many requests of this size each. */
#define NFLIGHT 4
#define FLIGHT_LEN (4u << 20)
#define BAD_ID 0xbad0

/* Nothing arrives on @cq now, nor a while later. */
static void
assert_quiet_late(rnicpi_cq_t *cq)
{
  cert_assert_cq_quiet(cq);
  g_usleep(LATE_MS * 1000);
  cert_assert_cq_quiet(cq);
}

/* Poll @nids completions from @cq: each id of @ids exactly once, from
 * @qp_ctx, with a status @ok accepts; @out[j] gets the completion of
 * ids[j].  Then nothing more. */
typedef gboolean (*status_ok_fn)(rnicpi_wc_status_t st);

static gboolean
flushed_only(rnicpi_wc_status_t st)
{
  return st == RNICPI_WC_WR_FLUSH_ERR;
}

static gboolean
done_or_flushed(rnicpi_wc_status_t st)
{
  return st == RNICPI_WC_SUCCESS || st == RNICPI_WC_WR_FLUSH_ERR;
}

static void
take_each_once_in(rnicpi_cq_t *cq, uint64_t qp_ctx, const uint64_t *ids, int nids,
                  status_ok_fn ok, rnicpi_wc_t *out, gboolean in_order)
{
  rnicpi_wc_t *wc = g_new0(rnicpi_wc_t, nids + 1);
  gboolean *seen = g_new0(gboolean, nids);
  int n = cert_poll(cq, wc, nids, CERT_TIMEOUT_MS);
  for (int i = 0; i < n; i++) {
    int j = 0;
    while (j < nids && ids[j] != wc[i].wr_id)
      j++;
    if (j == nids || seen[j])
      g_test_message("completion %d: wr_id 0x%" G_GINT64_MODIFIER "x (status %d) %s", i,
                     wc[i].wr_id, wc[i].status,
                     j == nids ? "was never posted here, or is a stale one" : "completed twice");
    g_assert_cmpint(j, <, nids);
    g_assert_false(seen[j]);
    /* A work queue completes in the order it was posted, flushed requests
     * too: those in flight first, then those not yet started. */
    if (in_order && j != i)
      g_test_message("completion %d of %d is wr_id 0x%" G_GINT64_MODIFIER "x (status %d), posted "
                     "as number %d: out of posting order; a work queue completes in the order "
                     "it was posted, flushed requests included", i + 1, nids, wc[i].wr_id,
                     wc[i].status, j + 1);
    if (in_order)
      g_assert_cmpint(j, ==, i);
    seen[j] = TRUE;
    g_assert_cmphex(wc[i].qp_ctx, ==, qp_ctx);
    if (!ok(wc[i].status))
      g_test_message("wr_id 0x%" G_GINT64_MODIFIER "x completed with status %d", wc[i].wr_id,
                     wc[i].status);
    g_assert_true(ok(wc[i].status));
    if (out != NULL)
      out[j] = wc[i];
  }
  for (int j = 0; j < nids; j++)
    if (!seen[j])
      g_test_message("wr_id 0x%" G_GINT64_MODIFIER "x never completed", ids[j]);
  g_assert_cmpint(n, ==, nids);
  g_free(seen);
  g_free(wc);
  cert_assert_cq_quiet(cq);
}

static void
take_each_once(rnicpi_cq_t *cq, uint64_t qp_ctx, const uint64_t *ids, int nids,
               status_ok_fn ok, rnicpi_wc_t *out)
{
  take_each_once_in(cq, qp_ctx, ids, nids, ok, out, FALSE);
}

/* [off, off + len) of @dst holds the same bytes as of @src. */
static void
check_same(const cert_buf_t *dst, const cert_buf_t *src, size_t off, size_t len)
{
  for (size_t i = off; i < off + len; i++)
    if (dst->data[i] != src->data[i]) {
      g_test_message("byte %zu of the sink is 0x%02x, expected 0x%02x (%zu bytes of %zu in place "
                     "before it)", i, dst->data[i], src->data[i], i - off, len);
      g_assert_cmphex(dst->data[i], ==, src->data[i]);
    }
}

/* Connect @pr's two (IDLE) queue pairs again, as cert_pair_open does. */
static void
connect_again(cert_t *f, cert_pair_t *pr)
{
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1151, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->connect(pr->a.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1151);
  cert_ok(CMV->accept(pr->p.qp, req->conn_id, &cp));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr->a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr->p.ctx));
  cert_ok(CMV->unlisten(lst));
  g_assert_cmpint(QUE->qp_state(pr->a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(pr->p.qp), ==, RNICPI_QPS_RTS);
}

/* ---- at the end: destroy, reset, reconnect --------------------------- */

static void
test_flush_destroy(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.qp_destroy of a connected QP with receives, RDMA Writes and an RDMA "
                 "Read outstanding: each completes exactly once (the receives flushed, the others "
                 "flushed or successfully, a successful Read with its bytes) and its CQs stay "
                 "empty afterwards, also a while later");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  enum { LEN = 1 << 20 };
  cert_buf_t src, tgt, rsrc, sink, rbuf;
  cert_buf_new(pr.a.pd, &src, LEN, RW);
  cert_buf_new(pr.p.pd, &tgt, LEN, TARGET);
  cert_buf_new(pr.p.pd, &rsrc, LEN, TARGET);
  cert_buf_new(pr.a.pd, &sink, LEN, cert_sink_access(f));
  cert_buf_new(pr.a.pd, &rbuf, 4 * 64, RW);
  cert_buf_fill(&src, 3);
  cert_buf_fill(&rsrc, 5);
  memset(sink.data, POISON, LEN);

  uint64_t rids[4], sids[5];
  for (int i = 0; i < 4; i++) {
    rids[i] = 0xd100 + (uint64_t) i;
    cert_post_recv(pr.a.qp, &rbuf, (size_t) i * 64, 64, rids[i]);
  }
  for (int i = 0; i < 4; i++) {
    sids[i] = 0xd200 + (uint64_t) i;
    cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, LEN, sids[i], RNICPI_WR_SIGNALED,
                   cert_raddr(&tgt, 0), tgt.mr->rkey);
  }
  sids[4] = 0xd204;
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, LEN, sids[4], RNICPI_WR_SIGNALED,
                 cert_raddr(&rsrc, 0), rsrc.mr->rkey);
  cert_ok(QUE->qp_destroy(pr.a.qp));
  pr.a.qp = NULL;

  rnicpi_wc_t wc[5];
  take_each_once(pr.a.scq, pr.a.ctx, sids, 5, done_or_flushed, wc);
  if (wc[4].status == RNICPI_WC_SUCCESS) {
    g_assert_cmpint(wc[4].opcode, ==, RNICPI_WC_RDMA_READ);
    check_same(&sink, &rsrc, 0, LEN);
  }
  cert_buf_check_guards(&sink);
  take_each_once(pr.a.rcq, pr.a.ctx, rids, 4, flushed_only, NULL);
  assert_quiet_late(pr.a.scq);
  assert_quiet_late(pr.a.rcq);
  /* The peer had nothing posted: nothing of it completes. */
  cert_assert_cq_quiet(pr.p.scq);
  cert_assert_cq_quiet(pr.p.rcq);

  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_buf_free(&rsrc);
  cert_buf_free(&sink);
  cert_buf_free(&rbuf);
  cert_pair_free(&pr);
}

static void
test_flush_reset_reconnect(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("queue_ops.qp_to_error then qp_reset of a connected QP with receives and RDMA "
                 "Writes outstanding: each completes once before the reset and nothing after it; "
                 "connected again, the reset QPs carry new Sends and Writes whose requests "
                 "complete once each, with no stale completion of the old ones");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, tgt, ra, rp;
  cert_buf_new(pr.a.pd, &src, 65536, RW);
  cert_buf_new(pr.p.pd, &tgt, 65536, TARGET);
  cert_buf_new(pr.a.pd, &ra, 4 * 256, RW);
  cert_buf_new(pr.p.pd, &rp, 4 * 256, RW);
  cert_buf_fill(&src, 7);

  uint64_t old_r[3] = { 0xe100, 0xe101, 0xe102 }, old_s[2] = { 0xe110, 0xe111 };
  for (int i = 0; i < 3; i++)
    cert_post_recv(pr.a.qp, &ra, (size_t) i * 256, 256, old_r[i]);
  for (int i = 0; i < 2; i++)
    cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 65536, old_s[i], RNICPI_WR_SIGNALED,
                   cert_raddr(&tgt, 0), tgt.mr->rkey);
  cert_ok(QUE->qp_to_error(pr.a.qp));
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_ERROR);
  take_each_once(pr.a.scq, pr.a.ctx, old_s, 2, done_or_flushed, NULL);
  take_each_once(pr.a.rcq, pr.a.ctx, old_r, 3, flushed_only, NULL);
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr.p.ctx));
  cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);

  cert_ok(QUE->qp_reset(pr.a.qp));
  cert_ok(QUE->qp_reset(pr.p.qp));
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_IDLE);
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_IDLE);
  assert_quiet_late(pr.a.scq);
  cert_assert_cq_quiet(pr.a.rcq);
  cert_assert_cq_quiet(pr.p.scq);
  cert_assert_cq_quiet(pr.p.rcq);

  connect_again(f, &pr);
  memset(tgt.data, 0, tgt.len);
  memset(ra.data, 0, ra.len);
  uint64_t rp_id = 0xe200, ra_id = 0xe201, sa_id[2] = { 0xe210, 0xe212 }, sp_id = 0xe211;
  cert_post_recv(pr.p.qp, &rp, 0, 256, rp_id);
  cert_post_recv(pr.a.qp, &ra, 0, 256, ra_id);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 200, sa_id[0], RNICPI_WR_SIGNALED, 0, 0);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 4096, sa_id[1], RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), tgt.mr->rkey);
  cert_post_send(pr.p.qp, RNICPI_WR_SEND, &rp, 0, 0, sp_id, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc[2];
  take_each_once(pr.p.rcq, pr.p.ctx, &rp_id, 1, done_or_flushed, wc);
  g_assert_cmpint(wc[0].status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc[0].byte_len, ==, 200);
  cert_buf_check(&rp, 0, 200, 7);
  take_each_once(pr.a.rcq, pr.a.ctx, &ra_id, 1, done_or_flushed, wc);
  g_assert_cmpint(wc[0].status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc[0].byte_len, ==, 0);
  take_each_once(pr.a.scq, pr.a.ctx, sa_id, 2, done_or_flushed, wc);
  g_assert_cmpint(wc[0].status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc[1].status, ==, RNICPI_WC_SUCCESS);
  take_each_once(pr.p.scq, pr.p.ctx, &sp_id, 1, done_or_flushed, wc);
  g_assert_cmpint(wc[0].status, ==, RNICPI_WC_SUCCESS);
  cert_placed(f, &pr, cert_raddr(&tgt, 0), tgt.mr->rkey);
  cert_buf_check(&tgt, 0, 4096, 7);
  cert_assert_cq_quiet(pr.a.scq);

  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_buf_free(&ra);
  cert_buf_free(&rp);
  cert_pair_free(&pr);
}

static void
test_flush_error_post_once(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("data_ops.post_recv/post_send on a QP in ERROR: each of several receives, "
                 "signaled and unsignaled Sends, RDMA Writes and Reads completes exactly once, "
                 "flushed, with its wr_id and opcode; polled again later, and after qp_reset and "
                 "qp_destroy, the CQs hold nothing more");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t b, tgt;
  cert_buf_new(pr.a.pd, &b, 1024, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, 1024, TARGET);
  cert_ok(QUE->qp_to_error(pr.a.qp));
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_ERROR);

  for (int round = 0; round < 2; round++) {
    uint64_t base = 0xf000 + (uint64_t) round * 0x100;
    uint64_t rids[4], sids[6];
    for (int i = 0; i < 4; i++) {
      rids[i] = base + (uint64_t) i;
      cert_post_recv(pr.a.qp, &b, (size_t) i * 64, 64, rids[i]);
    }
    static const rnicpi_wr_opcode_t ops[6] = {
      RNICPI_WR_SEND, RNICPI_WR_SEND, RNICPI_WR_RDMA_WRITE, RNICPI_WR_RDMA_WRITE,
      RNICPI_WR_RDMA_READ, RNICPI_WR_RDMA_READ,
    };
    static const rnicpi_wc_opcode_t wcops[6] = {
      RNICPI_WC_SEND, RNICPI_WC_SEND, RNICPI_WC_RDMA_WRITE, RNICPI_WC_RDMA_WRITE,
      RNICPI_WC_RDMA_READ, RNICPI_WC_RDMA_READ,
    };
    for (int i = 0; i < 6; i++) {
      sids[i] = base + 0x10 + (uint64_t) i;
      cert_post_send(pr.a.qp, ops[i], &b, 512, 64, sids[i], i % 2 ? 0 : RNICPI_WR_SIGNALED,
                     cert_raddr(&tgt, 0), tgt.mr->rkey);
    }
    rnicpi_wc_t wc[6];
    take_each_once(pr.a.scq, pr.a.ctx, sids, 6, flushed_only, wc);
    for (int i = 0; i < 6; i++)
      g_assert_cmpint(wc[i].opcode, ==, wcops[i]);
    take_each_once(pr.a.rcq, pr.a.ctx, rids, 4, flushed_only, wc);
    for (int i = 0; i < 4; i++)
      g_assert_cmpint(wc[i].opcode, ==, RNICPI_WC_RECV);
  }
  assert_quiet_late(pr.a.scq);
  cert_assert_cq_quiet(pr.a.rcq);
  for (size_t i = 0; i < tgt.len; i++)
    g_assert_cmphex(tgt.data[i], ==, 0);
  /* Flushed means gone: neither a reset nor the destroy flushes them again. */
  cert_ok(QUE->qp_reset(pr.a.qp));
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.a.rcq);
  cert_ok(QUE->qp_destroy(pr.a.qp));
  pr.a.qp = NULL;
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.a.rcq);

  cert_buf_free(&b);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- unsignaled requests that fail ------------------------------------ */

typedef enum { BAD_LKEY, BAD_LENGTH, BAD_ACCESS, BAD_RKEY_READ, BAD_RKEY_WRITE } bad_kind_t;

static void
test_flush_unsignaled_error(cert_t *f, gconstpointer data)
{
  bad_kind_t kind = (bad_kind_t) GPOINTER_TO_INT(data);
  g_test_summary("an unsignaled work request that fails (locally: a wrong lkey, a gather entry "
                 "past its region's end, a Read into a sink without local write; remotely: an "
                 "RDMA Read or Write with a wrong rkey) completes with its error status and "
                 "wr_id (RNICPI_WR_SIGNALED suppresses successes only), and the signaled and "
                 "unsignaled requests behind it, and the receives, complete flushed, each once");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  gboolean remote = kind == BAD_RKEY_READ || kind == BAD_RKEY_WRITE;
  gboolean at_sent = !(f->caps.features & RNICPI_CAP_PLACED_COMPLETION);
  cert_buf_t src, tgt, sink, ra;
  cert_buf_new(pr.a.pd, &src, 4096, RW);
  cert_buf_new(pr.p.pd, &tgt, 4096, TARGET);
  /* The sink of the failing Read lacks local write (and so any write). */
  cert_buf_new(pr.a.pd, &sink, 4096, kind == BAD_ACCESS ? RNICPI_ACCESS_LOCAL_READ : cert_sink_access(f));
  cert_buf_new(pr.a.pd, &ra, 2 * 64, RW);
  cert_buf_fill(&src, 9);
  cert_buf_fill(&tgt, 11);
  memset(sink.data, POISON, sink.len);
  uint64_t rids[2] = { 0xa600, 0xa601 };
  for (int i = 0; i < 2; i++)
    cert_post_recv(pr.a.qp, &ra, (size_t) i * 64, 64, rids[i]);

  rnicpi_sge_t sge = cert_sge(&src, 0, 256);
  rnicpi_send_wr_t bad = { .wr_id = BAD_ID, .opcode = RNICPI_WR_SEND, .flags = 0,
                           .sg_list = &sge, .num_sge = 1 };
  rnicpi_wc_status_t want = RNICPI_WC_LOC_PROT_ERR;
  rnicpi_wc_opcode_t want_op = RNICPI_WC_SEND;
  switch (kind) {
  case BAD_LKEY:
    sge.lkey ^= 0xff0000ffu;
    break;
  case BAD_LENGTH:
    sge = cert_sge(&src, 4096 - 128, 256); /* 128 bytes past the end */
    break;
  case BAD_ACCESS:
    sge = cert_sge(&sink, 0, 256);
    bad.opcode = RNICPI_WR_RDMA_READ;
    bad.remote_addr = cert_raddr(&tgt, 0);
    bad.rkey = tgt.mr->rkey;
    want_op = RNICPI_WC_RDMA_READ;
    break;
  case BAD_RKEY_READ:
  case BAD_RKEY_WRITE:
    if (kind == BAD_RKEY_READ)
      sge = cert_sge(&sink, 0, 256);
    bad.opcode = kind == BAD_RKEY_READ ? RNICPI_WR_RDMA_READ : RNICPI_WR_RDMA_WRITE;
    bad.remote_addr = cert_raddr(&tgt, 0);
    bad.rkey = tgt.mr->rkey ^ 0xff0000ffu;
    want = RNICPI_WC_REM_ACCESS_ERR;
    want_op = kind == BAD_RKEY_READ ? RNICPI_WC_RDMA_READ : RNICPI_WC_RDMA_WRITE;
    break;
  }
  cert_ok(DAT->post_send(pr.a.qp, &bad));
  /* A refusal by the peer comes back later; where completions mean
   * transmission a request posted meanwhile would be sent and could
   * complete successfully: wait for ERROR first (as cert_errors.c does). */
  if (remote)
    cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);

  /* Behind it: signaled and unsignaled Writes and Sends. */
  uint64_t next[4] = { 0xa700, 0xa701, 0xa702, 0xa703 };
  for (int i = 0; i < 4; i++)
    cert_post_send(pr.a.qp, i < 2 ? RNICPI_WR_RDMA_WRITE : RNICPI_WR_SEND, &src, 0, 64, next[i],
                   i % 2 ? 0 : RNICPI_WR_SIGNALED, cert_raddr(&tgt, 1024), tgt.mr->rkey);

  /* The failing request first, with its error, then the others flushed. */
  rnicpi_wc_t first = cert_wc(pr.a.scq);
  if (first.wr_id != BAD_ID && kind == BAD_RKEY_WRITE && at_sent) {
    /* An unsignaled Write the peer refused after it completed at
     * transmission: its success is not reported and nothing else is
     * either, but the requests behind flush. */
    g_test_message("the refused Write completed at transmission (no completion-at-placement)");
  } else {
    g_assert_cmphex(first.wr_id, ==, BAD_ID);
    g_assert_cmphex(first.qp_ctx, ==, pr.a.ctx);
    g_assert_cmpint(first.opcode, ==, want_op);
    if (first.status != want)
      g_test_message("the failing request completed with status %d, expected %d", first.status,
                     want);
    if (kind == BAD_RKEY_WRITE && at_sent)
      g_assert_cmpint(first.status, !=, RNICPI_WC_SUCCESS);
    else
      g_assert_cmpint(first.status, ==, want);
    first = cert_wc(pr.a.scq);
  }
  /* The four behind it, in posting order, flushed. */
  for (int i = 0; i < 4; i++) {
    if (i > 0)
      first = cert_wc(pr.a.scq);
    g_assert_cmphex(first.wr_id, ==, next[i]);
    g_assert_cmpint(first.status, ==, RNICPI_WC_WR_FLUSH_ERR);
  }
  assert_quiet_late(pr.a.scq);
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  take_each_once(pr.a.rcq, pr.a.ctx, rids, 2, flushed_only, NULL);

  /* Nothing of the failing request landed: not in the sink, not at the
   * target (a Send: the peer had no receive, so it took nothing). */
  if (kind == BAD_ACCESS || kind == BAD_RKEY_READ)
    for (size_t i = 0; i < sink.len; i++)
      g_assert_cmphex(sink.data[i], ==, POISON);
  cert_buf_check(&tgt, 0, tgt.len, 11);
  cert_buf_check_guards(&sink);
  cert_buf_check_guards(&tgt);

  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_buf_free(&sink);
  cert_buf_free(&ra);
  cert_pair_free(&pr);
}

/* ---- in flight when the QP goes to ERROR ------------------------------ */

typedef enum { FLIGHT_READ, FLIGHT_SEND, FLIGHT_WRITE, FLIGHT_READ_ORD1 } flight_t;

static void
test_flush_in_flight(cert_t *f, gconstpointer data)
{
  flight_t kind = (flight_t) GPOINTER_TO_INT(data);
  gboolean ord1 = kind == FLIGHT_READ_ORD1;
  g_test_summary(ord1 ? "queue_ops.qp_to_error with ORD 1 and 4 RDMA Reads of 4 MiB posted: "
                        "one in flight, three waiting for it; each completes exactly once, in "
                        "posting order (the one in flight first), flushed or successfully with "
                        "every byte in its sink"
                      : "queue_ops.qp_to_error with 4 RDMA Reads, Sends or RDMA Writes of 4 MiB "
                        "in flight: each request completes exactly once and in posting order, "
                        "flushed or successfully; a successful Read has every byte in its sink, "
                        "a successful receive every byte of its Send, and (with "
                        "completes-at-placement) a successful Send or Write every byte at the "
                        "peer; the peer's receives complete once too");
  if (ord1)
    kind = FLIGHT_READ;
  cert_pair_t pr;
  rnicpi_conn_param_t one = { .ird = 1, .ord = 1 };
  if (!(ord1 ? cert_pair_open_cp(f, &pr, NULL, &one, &one) : cert_pair_open(f, &pr, NULL)))
    return;
  uint32_t len = (uint32_t) MIN((uint64_t) FLIGHT_LEN, f->caps.max_msg_size);
  gboolean placed = (f->caps.features & RNICPI_CAP_PLACED_COMPLETION) != 0;
  cert_buf_t src, dst, ra;
  /* src: the data (peer's region for a Read); dst: where it goes. */
  if (kind == FLIGHT_READ) {
    cert_buf_new(pr.p.pd, &src, (size_t) len * NFLIGHT, TARGET);
    cert_buf_new(pr.a.pd, &dst, (size_t) len * NFLIGHT, cert_sink_access(f));
  } else {
    cert_buf_new(pr.a.pd, &src, (size_t) len * NFLIGHT, RW);
    cert_buf_new(pr.p.pd, &dst, (size_t) len * NFLIGHT, kind == FLIGHT_SEND ? RW : TARGET);
  }
  cert_buf_new(pr.a.pd, &ra, 64, RW);
  cert_buf_fill(&src, 13);
  memset(dst.data, POISON, dst.len);
  uint64_t aid = 0xc500, sids[NFLIGHT], pids[NFLIGHT];
  cert_post_recv(pr.a.qp, &ra, 0, 64, aid);
  if (kind == FLIGHT_SEND)
    for (int i = 0; i < NFLIGHT; i++) {
      pids[i] = 0xc600 + (uint64_t) i;
      cert_post_recv(pr.p.qp, &dst, (size_t) i * len, len, pids[i]);
    }
  static const rnicpi_wr_opcode_t op_of[] = {
    [FLIGHT_READ] = RNICPI_WR_RDMA_READ, [FLIGHT_SEND] = RNICPI_WR_SEND,
    [FLIGHT_WRITE] = RNICPI_WR_RDMA_WRITE,
  };
  for (int i = 0; i < NFLIGHT; i++) {
    sids[i] = 0xc700 + (uint64_t) i;
    size_t off = (size_t) i * len;
    if (kind == FLIGHT_READ)
      cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &dst, off, len, sids[i], RNICPI_WR_SIGNALED,
                     cert_raddr(&src, off), src.mr->rkey);
    else
      cert_post_send(pr.a.qp, op_of[kind], &src, off, len, sids[i], RNICPI_WR_SIGNALED,
                     cert_raddr(&dst, off), dst.mr->rkey);
  }
  /* Go to ERROR once the first request completed, so that the others are
   * caught mid-transfer on a device that has to move their bytes (where
   * everything completes at once, nothing is left in flight: still a
   * valid run).  The outcome is checked whatever the timing. */
  cert_limit_t w;
  cert_limit_begin(&w, "a first send completion (cq_count)", CERT_TIMEOUT_MS * 1000);
  while (DAT->cq_count(pr.a.scq) == 0 && !cert_limit_over(&w))
    g_usleep(100);
  cert_limit_end(&w);
  cert_ok(QUE->qp_to_error(pr.a.qp));

  rnicpi_wc_t wc[NFLIGHT];
  take_each_once_in(pr.a.scq, pr.a.ctx, sids, NFLIGHT, done_or_flushed, wc, TRUE);
  take_each_once(pr.a.rcq, pr.a.ctx, &aid, 1, flushed_only, NULL);
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr.p.ctx));
  cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);
  int ok = 0;
  for (int i = 0; i < NFLIGHT; i++) {
    if (wc[i].status != RNICPI_WC_SUCCESS)
      continue;
    ok++;
    if (kind == FLIGHT_READ || placed) {
      g_test_message("request %d succeeded: checking its %u bytes", i, len);
      check_same(&dst, &src, (size_t) i * len, len);
    }
  }
  g_test_message("%d of %d requests completed successfully, the rest flushed", ok, NFLIGHT);
  if (kind == FLIGHT_SEND) {
    rnicpi_wc_t rwc[NFLIGHT];
    take_each_once_in(pr.p.rcq, pr.p.ctx, pids, NFLIGHT, done_or_flushed, rwc, TRUE);
    for (int i = 0; i < NFLIGHT; i++) {
      if (rwc[i].status != RNICPI_WC_SUCCESS) {
        /* A Send the peer received cannot have been flushed at a sender
         * whose completions mean placement. */
        if (placed)
          g_assert_cmpint(wc[i].status, !=, RNICPI_WC_SUCCESS);
        continue;
      }
      g_assert_cmpuint(rwc[i].byte_len, ==, len);
      check_same(&dst, &src, (size_t) i * len, len);
    }
  } else {
    cert_assert_cq_quiet(pr.p.rcq);
  }
  assert_quiet_late(pr.a.scq);
  cert_assert_cq_quiet(pr.p.scq);
  cert_buf_check_guards(&dst);

  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_buf_free(&ra);
  cert_pair_free(&pr);
}

void
cert_register_flush(void)
{
  cert_add("/rnicpi/flush/destroy", test_flush_destroy);
  cert_add("/rnicpi/flush/reset-reconnect", test_flush_reset_reconnect);
  cert_add("/rnicpi/flush/error-post-once", test_flush_error_post_once);
  g_test_add("/rnicpi/flush/unsignaled-error/lkey", cert_t, GINT_TO_POINTER(BAD_LKEY), cert_setup,
             test_flush_unsignaled_error, cert_teardown);
  g_test_add("/rnicpi/flush/unsignaled-error/length", cert_t, GINT_TO_POINTER(BAD_LENGTH),
             cert_setup, test_flush_unsignaled_error, cert_teardown);
  g_test_add("/rnicpi/flush/unsignaled-error/access", cert_t, GINT_TO_POINTER(BAD_ACCESS),
             cert_setup, test_flush_unsignaled_error, cert_teardown);
  g_test_add("/rnicpi/flush/unsignaled-error/read-rkey", cert_t, GINT_TO_POINTER(BAD_RKEY_READ),
             cert_setup, test_flush_unsignaled_error, cert_teardown);
  g_test_add("/rnicpi/flush/unsignaled-error/write-rkey", cert_t, GINT_TO_POINTER(BAD_RKEY_WRITE),
             cert_setup, test_flush_unsignaled_error, cert_teardown);
  g_test_add("/rnicpi/flush/in-flight/read", cert_t, GINT_TO_POINTER(FLIGHT_READ), cert_setup,
             test_flush_in_flight, cert_teardown);
  g_test_add("/rnicpi/flush/in-flight/send", cert_t, GINT_TO_POINTER(FLIGHT_SEND), cert_setup,
             test_flush_in_flight, cert_teardown);
  g_test_add("/rnicpi/flush/in-flight/write", cert_t, GINT_TO_POINTER(FLIGHT_WRITE), cert_setup,
             test_flush_in_flight, cert_teardown);
  g_test_add("/rnicpi/flush/in-flight/read-ord1", cert_t, GINT_TO_POINTER(FLIGHT_READ_ORD1),
             cert_setup, test_flush_in_flight, cert_teardown);
}
