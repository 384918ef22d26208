/*
 * cert-rnicpi: rules of rnicpi.h that no other test of the catalog checks
 * (doc/rnicpi-rules.md maps every rule to its tests).  Each test here
 * asserts what the header promises in so many words: the members of a
 * work request a provider must not read, the statuses of an opcode out of
 * range or of a capability the device lacks, the fields a completion
 * leaves zero, what qp_to_error, pd_free, mr_alloc, mw_alloc, srq_create,
 * reject, ud_svc_reply, handoff, cap_advice and list_refused answer in the
 * cases their @retval lines name, and that an upcall may call the
 * provider's operations.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define TGT (RW | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define MW (cert_prov->mw)
#define SRQ (cert_prov->srq)
#define UDO (cert_prov->ud)
#define SOCK (cert_prov->sock)

/* A pointer no provider may follow: reading through it faults. */
#define POISON ((void *) (uintptr_t) 0x8)

/* ---- Members a work request's opcode does not use ---------------------- */

/* A work request of @op whose members meaningful only for other opcodes
 * (a bind, a UD destination, a fast registration, immediate data, atomic
 * operands, a key to invalidate) hold garbage and pointers that fault. */
static rnicpi_send_wr_t
wr_poisoned(rnicpi_wr_opcode_t op, uint64_t id, const rnicpi_sge_t *sge, uint64_t raddr,
            uint64_t rkey)
{
  rnicpi_send_wr_t wr = {
    .wr_id = id, .opcode = op, .flags = RNICPI_WR_SIGNALED, .sg_list = sge, .num_sge = 1,
    .remote_addr = raddr, .rkey = rkey,
    .invalidate_rkey = 0xdeadbeefcafef00dull, .compare_add = 0x1111, .swap = 0x2222,
    .bind = { .mw = POISON, .mr = POISON, .addr = 0x1000, .length = 0x1000,
              .access = RNICPI_ACCESS_REMOTE_WRITE, .zero_based = 1 },
    .ah = POISON, .remote_qpn = 0xfffff1, .remote_qkey = 0x80000000u,
    .fast_reg = { .mr = POISON, .addr = POISON, .length = 4096, .iova = 0,
                  .access = TGT, .page_size = 4096, .num_pages = 3, .pages = POISON },
    .imm_data = 0x0123456789abcdefull,
  };
  return wr;
}

static void
test_unused_members(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("rnicpi_send_wr_t: the members from bind on (and the atomic operands, the key "
                 "to invalidate, the immediate data) are meaningful only for their opcodes and a "
                 "provider must not read them otherwise; a Send, an RDMA Write and an RDMA Read "
                 "on an RC queue pair whose unused members hold garbage and pointers that fault "
                 "complete successfully with exactly their bytes, the receive without "
                 "WITH_IMM or WITH_INV");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  const uint32_t len = 256;
  cert_buf_t src, sink, tgt, rcv;
  cert_buf_new(pr.a.pd, &src, len, RW);
  cert_buf_new(pr.a.pd, &sink, len, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, 2 * len, TGT);
  cert_buf_new(pr.p.pd, &rcv, len, RW);
  cert_buf_fill(&src, 0x31);
  cert_buf_fill(&tgt, 0x52);
  memset(sink.data, 0, len);
  memset(rcv.data, 0, len);

  cert_post_recv(pr.p.qp, &rcv, 0, len, 0x501);
  rnicpi_sge_t s = cert_sge(&src, 0, len);
  rnicpi_send_wr_t wr = wr_poisoned(RNICPI_WR_SEND, 0x511, &s, 0, 0);
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x511);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_SEND);
  wc = cert_wc(pr.p.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0x501);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmpuint(wc.byte_len, ==, len);
  g_assert_cmphex(wc.flags & (RNICPI_WC_WITH_IMM | RNICPI_WC_WITH_INV), ==, 0);
  g_assert_cmphex(wc.imm_data, ==, 0);
  cert_buf_check(&rcv, 0, len, 0x31);

  wr = wr_poisoned(RNICPI_WR_RDMA_WRITE, 0x512, &s, cert_raddr(&tgt, len), tgt.mr->rkey);
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x512);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_WRITE);
  cert_placed(f, &pr, cert_raddr(&tgt, 0), tgt.mr->rkey);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_buf_check(&tgt, 0, len, 0x52);
  for (uint32_t i = 0; i < len; i++)
    g_assert_cmphex(tgt.data[len + i], ==, cert_pattern(0x31, i));

  rnicpi_sge_t k = cert_sge(&sink, 0, len);
  wr = wr_poisoned(RNICPI_WR_RDMA_READ, 0x513, &k, cert_raddr(&tgt, 0), tgt.mr->rkey);
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x513);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  cert_buf_check(&sink, 0, len, 0x52);
  cert_buf_check_guards(&sink);
  cert_buf_check_guards(&tgt);
  cert_buf_check_guards(&rcv);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);

  cert_buf_free(&src);
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_buf_free(&rcv);
  cert_pair_free(&pr);
}

/* ---- Opcodes a provider refuses at post ------------------------------- */

/* A Send from @pr's active side still lands: the queue pair is as it was. */
static void
send_still_lands(cert_t *f, cert_pair_t *pr, uint64_t id)
{
  (void) f;
  cert_buf_t src, rcv;
  cert_buf_new(pr->a.pd, &src, 64, RW);
  cert_buf_new(pr->p.pd, &rcv, 64, RW);
  cert_buf_fill(&src, (uint8_t) id);
  cert_post_recv(pr->p.qp, &rcv, 0, 64, id);
  cert_post_send(pr->a.qp, RNICPI_WR_SEND, &src, 0, 64, id + 1, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(pr->a.scq);
  g_assert_cmphex(wc.wr_id, ==, id + 1);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  wc = cert_wc(pr->p.rcq);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, 64);
  cert_buf_check(&rcv, 0, 64, (uint8_t) id);
  cert_buf_free(&src);
  cert_buf_free(&rcv);
}

static void
test_opcode_out_of_range(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("post_send of an opcode out of range (RNICPI_WR_OPCODE_COUNT, and a large "
                 "value) is refused with RNICPI_EINVAL (RNICPI_ENOTSUP from a provider that "
                 "passes the kernel's answer on): nothing completes, and the queue pair stays "
                 "RTS and carries a Send");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  static const int ops[] = { RNICPI_WR_OPCODE_COUNT, RNICPI_WR_OPCODE_COUNT + 1, 0x7fff };
  for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
    rnicpi_sge_t s = cert_sge(&src, 0, 64);
    rnicpi_send_wr_t wr = { .wr_id = 0x600 + i, .opcode = (rnicpi_wr_opcode_t) ops[i],
                            .flags = RNICPI_WR_SIGNALED, .sg_list = &s, .num_sge = 1 };
    rnicpi_status_t st = DAT->post_send(pr.a.qp, &wr);
    g_test_message("opcode %d: %s", ops[i], rnicpi_status_name(st));
    if (st != RNICPI_ENOTSUP)
      cert_cmpst(st, RNICPI_EINVAL);
  }
  cert_assert_cq_quiet(pr.a.scq);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  send_still_lands(f, &pr, 0x620);
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

static void
test_missing_capability(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("post_send of an operation whose capability the device lacks (atomics, "
                 "immediate data, Local Invalidate, RDMA Read with Invalidate) is refused with RNICPI_ENOTSUP: nothing completes, nothing reaches "
                 "the peer, and the queue pair stays RTS and carries a Send");
  static const struct {
    rnicpi_wr_opcode_t op;
    uint64_t needs; /* every bit of it */
    const char *name;
  } ops[] = {
    { RNICPI_WR_ATOMIC_CMP_SWP, RNICPI_CAP_ATOMICS, "compare and swap" },
    { RNICPI_WR_ATOMIC_FETCH_ADD, RNICPI_CAP_ATOMICS, "fetch and add" },
    { RNICPI_WR_IMM_DATA, RNICPI_CAP_IMMEDIATE, "immediate data" },
    { RNICPI_WR_RDMA_WRITE_IMM, RNICPI_CAP_IMMEDIATE, "RDMA Write with immediate" },
    { RNICPI_WR_LOCAL_INV, RNICPI_CAP_LOCAL_INVALIDATE, "Local Invalidate" },
    { RNICPI_WR_RDMA_READ_INV, RNICPI_CAP_READ_SINK_MW | RNICPI_CAP_LOCAL_INVALIDATE,
      "RDMA Read with Invalidate" },
  };
  int lacking = 0;
  for (size_t i = 0; i < G_N_ELEMENTS(ops); i++)
    lacking += (f->caps.features & ops[i].needs) != ops[i].needs;
  if (lacking == 0) {
    g_test_skip("the device has every capability whose absence this test checks");
    return;
  }
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, tgt, rcv;
  cert_buf_new(pr.a.pd, &src, 64, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, 64, TGT);
  cert_buf_new(pr.p.pd, &rcv, 64, RW);
  cert_buf_fill(&src, 0x17);
  cert_buf_fill(&tgt, 0x71);
  memset(rcv.data, 0, 64);
  cert_post_recv(pr.p.qp, &rcv, 0, 64, 0x700);
  for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
    if ((f->caps.features & ops[i].needs) == ops[i].needs)
      continue;
    gboolean atomic = ops[i].op == RNICPI_WR_ATOMIC_CMP_SWP
                      || ops[i].op == RNICPI_WR_ATOMIC_FETCH_ADD;
    rnicpi_sge_t s = cert_sge(&src, 0, atomic ? 8 : 32);
    rnicpi_send_wr_t wr = { .wr_id = 0x710 + i, .opcode = ops[i].op,
                            .flags = RNICPI_WR_SIGNALED, .sg_list = &s,
                            .num_sge = ops[i].op == RNICPI_WR_IMM_DATA
                                       || ops[i].op == RNICPI_WR_LOCAL_INV ? 0 : 1,
                            .remote_addr = cert_raddr(&tgt, 0), .rkey = tgt.mr->rkey,
                            .invalidate_rkey = tgt.mr->rkey, .compare_add = 1, .swap = 2,
                            .imm_data = 0x42 };
    g_test_message("%s without capability %#" G_GINT64_MODIFIER "x", ops[i].name, ops[i].needs);
    cert_cmpst(DAT->post_send(pr.a.qp, &wr), RNICPI_ENOTSUP);
  }
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_buf_check(&tgt, 0, 64, 0x71);
  cert_buf_check(&src, 0, 64, 0x17);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  /* The receive posted first takes the Send that proves the pair works. */
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0x7f0, RNICPI_WR_SIGNALED, 0, 0);
  g_assert_cmpint(cert_wc(pr.a.scq).status, ==, RNICPI_WC_SUCCESS);
  rnicpi_wc_t wc = cert_wc(pr.p.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0x700);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmphex(wc.flags, ==, 0);
  cert_buf_check(&rcv, 0, 64, 0x17);
  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_buf_free(&rcv);
  cert_pair_free(&pr);
}

/* ---- What a completion leaves zero ------------------------------------ */

static void
assert_wc_rest_zero(const rnicpi_wc_t *wc)
{
  static const uint8_t zero[16];
  g_assert_cmphex(wc->flags, ==, 0);
  g_assert_cmphex(wc->rkey, ==, 0);
  g_assert_cmpuint(wc->src_qpn, ==, 0);
  g_assert_cmpuint(wc->src_lid, ==, 0);
  g_assert_cmpuint(wc->pad, ==, 0);
  g_assert_cmpmem(wc->src_gid, RNICPI_GID_LEN, zero, RNICPI_GID_LEN);
  g_assert_cmphex(wc->imm_data, ==, 0);
}

/* One completion of @cq polled into an entry filled with a pattern: a
 * provider of minor 5 on writes every field itself (the access layer
 * zeroes the entry only for older minors, which know fewer fields). */
static rnicpi_wc_t
wc_unzeroed(rnicpi_cq_t *cq)
{
  rnicpi_wc_t wc;
  memset(&wc, cert_prov->abi_minor >= 5 ? 0xa5 : 0, sizeof(wc));
  g_assert_cmpint(cert_poll(cq, &wc, 1, CERT_TIMEOUT_MS), ==, 1);
  return wc;
}

static void
test_wc_zero_fields(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("rnicpi_wc_t on an RC queue pair: the completions of a Send, its receive, an "
                 "RDMA Write and an RDMA Read name their work request, opcode and queue pair "
                 "context (the receive its byte_len) and leave zero what they do not carry: "
                 "flags, rkey (no window, invalidation or fast registration), the UD sender "
                 "fields and imm_data, written by the provider (the entry is polled into "
                 "holding a pattern)");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, sink, tgt, rcv;
  cert_buf_new(pr.a.pd, &src, 128, RW);
  cert_buf_new(pr.a.pd, &sink, 128, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, 128, TGT);
  cert_buf_new(pr.p.pd, &rcv, 128, RW);
  cert_buf_fill(&src, 0x23);
  cert_post_recv(pr.p.qp, &rcv, 0, 128, 0x800);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 100, 0x801, RNICPI_WR_SIGNALED, 0, 0);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 128, 0x802, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), tgt.mr->rkey);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, 128, 0x803, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), tgt.mr->rkey);
  static const rnicpi_wc_opcode_t want[] = { RNICPI_WC_SEND, RNICPI_WC_RDMA_WRITE,
                                             RNICPI_WC_RDMA_READ };
  for (int i = 0; i < 3; i++) {
    rnicpi_wc_t wc = wc_unzeroed(pr.a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0x801 + (uint64_t) i);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpint(wc.opcode, ==, want[i]);
    g_assert_cmphex(wc.qp_ctx, ==, pr.a.ctx);
    assert_wc_rest_zero(&wc);
  }
  rnicpi_wc_t wc = wc_unzeroed(pr.p.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0x800);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmphex(wc.qp_ctx, ==, pr.p.ctx);
  g_assert_cmpuint(wc.byte_len, ==, 100);
  assert_wc_rest_zero(&wc);
  cert_buf_check(&sink, 0, 128, 0x23);
  cert_buf_free(&src);
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_buf_free(&rcv);
  cert_pair_free(&pr);
}

/* ---- qp_to_error ------------------------------------------------------ */

static void
test_to_error_twice(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("qp_to_error of a connected queue pair returns RNICPI_OK, flushes each of its "
                 "receives once and gives the peer exactly one BROKEN (its receive flushed "
                 "once, its queue pair in ERROR); a second qp_to_error of the queue pair, now "
                 "in ERROR, returns RNICPI_OK too and completes and signals nothing more");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t ra, rp;
  cert_buf_new(pr.a.pd, &ra, 128, RW);
  cert_buf_new(pr.p.pd, &rp, 64, RW);
  cert_post_recv(pr.a.qp, &ra, 0, 64, 0x901);
  cert_post_recv(pr.a.qp, &ra, 64, 64, 0x902);
  cert_post_recv(pr.p.qp, &rp, 0, 64, 0x903);
  cert_ok(QUE->qp_to_error(pr.a.qp));
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_ERROR);
  static const uint64_t a_ids[] = { 0x901, 0x902 }, p_ids[] = { 0x903 };
  cert_expect_flushed(pr.a.rcq, pr.a.ctx, a_ids, 2);
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pr.p.ctx));
  cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);
  cert_expect_flushed(pr.p.rcq, pr.p.ctx, p_ids, 1);

  cert_ok(QUE->qp_to_error(pr.a.qp));
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pr.a.rcq);
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, pr.p.ctx);
  cert_assert_no_cm(f, RNICPI_CM_DISCONNECTED, pr.p.ctx);
  cert_buf_free(&ra);
  cert_buf_free(&rp);
  cert_pair_free(&pr);
}

/* ---- pd_free of a domain with objects --------------------------------- */

static void
test_pd_free_busy_objects(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("pd_free of a domain that still holds a queue pair, an SRQ, a memory window "
                 "or an address handle (each where the device has it) fails with RNICPI_EBUSY "
                 "and leaves the domain and the object usable; once the object is gone the "
                 "domain frees");
  rnicpi_cq_t *cq = NULL;
  cert_ok(QUE->cq_create(f->dev, 16, 0xc1, &cq));

  rnicpi_pd_t *pd = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  rnicpi_qp_attr_t a = cert_qp_attr(f, cq, cq);
  rnicpi_qp_t *qp = NULL;
  cert_ok(QUE->qp_create(pd, &a, 0xc2, &qp));
  cert_cmpst(DEV->pd_free(pd), RNICPI_EBUSY);
  g_assert_cmpint(QUE->qp_state(qp), ==, RNICPI_QPS_IDLE);
  cert_buf_t b;
  cert_buf_new(pd, &b, 64, RW); /* the domain still registers */
  cert_post_recv(qp, &b, 0, 64, 0xc3);
  cert_buf_free(&b);
  cert_ok(QUE->qp_destroy(qp));
  g_assert_cmpint(cert_poll(cq, &(rnicpi_wc_t){ 0 }, 1, CERT_QUIET_MS), <=, 1);
  cert_ok(DEV->pd_free(pd));

  if (SRQ != NULL && (f->caps.features & RNICPI_CAP_SRQ)) {
    cert_ok(DEV->pd_alloc(f->dev, &pd));
    rnicpi_srq_t *srq = NULL;
    cert_ok(SRQ->srq_create(pd, 4, 1, 0xc4, &srq));
    cert_cmpst(DEV->pd_free(pd), RNICPI_EBUSY);
    g_assert_cmpuint(SRQ->srq_count(srq), ==, 0);
    cert_ok(SRQ->srq_destroy(srq));
    cert_ok(DEV->pd_free(pd));
  }
  static const struct {
    uint64_t cap;
    rnicpi_mw_type_t type;
  } mws[] = { { RNICPI_CAP_MW_NARROW, RNICPI_MW_NARROW }, { RNICPI_CAP_MW_WIDE, RNICPI_MW_WIDE } };
  for (size_t i = 0; i < G_N_ELEMENTS(mws); i++) {
    if (MW == NULL || !(f->caps.features & mws[i].cap))
      continue;
    cert_ok(DEV->pd_alloc(f->dev, &pd));
    rnicpi_mw_t *mw = NULL;
    cert_ok(MW->mw_alloc(pd, mws[i].type, &mw));
    cert_cmpst(DEV->pd_free(pd), RNICPI_EBUSY);
    cert_ok(MW->mw_dealloc(mw));
    cert_ok(DEV->pd_free(pd));
  }
  if (UDO != NULL && (f->caps.features & RNICPI_CAP_UD)) {
    cert_ok(DEV->pd_alloc(f->dev, &pd));
    rnicpi_ah_attr_t aa = { .port = 0 };
    cert_self_gid(f, aa.dgid);
    rnicpi_ah_t *ah = NULL;
    cert_ok(UDO->ah_create(pd, &aa, &ah));
    cert_cmpst(DEV->pd_free(pd), RNICPI_EBUSY);
    cert_ok(UDO->ah_destroy(ah));
    cert_ok(DEV->pd_free(pd));
  }
  cert_ok(QUE->cq_destroy(cq));
}

/* ---- mr_alloc --------------------------------------------------------- */

static void
test_mr_alloc_refused(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mr_alloc on a device without fast-register is RNICPI_ENOTSUP and on one with "
                 "it, of 0 pages, RNICPI_EINVAL: no region is returned and the domain frees");
  rnicpi_pd_t *pd = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  rnicpi_mr_t *mr = NULL;
  if (f->caps.features & RNICPI_CAP_FAST_REGISTER) {
    g_test_message("device has fast-register: 0 pages");
    cert_cmpst(MEM->mr_alloc(pd, 0, &mr), RNICPI_EINVAL);
  } else {
    g_test_message("device lacks fast-register");
    cert_cmpst(MEM->mr_alloc(pd, 4, &mr), RNICPI_ENOTSUP);
  }
  g_assert_null(mr);
  cert_ok(DEV->pd_free(pd));
}

static void
test_mr_alloc_key_unusable(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a region of mr_alloc not yet fast-registered has an unusable key: an RDMA "
                 "Write through it is refused with a remote access error, breaks the connection "
                 "and changes no memory at the responder");
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  rnicpi_mr_t *mr = NULL;
  cert_ok(MEM->mr_alloc(pr.p.pd, 4, &mr));
  g_assert_nonnull(mr);
  cert_buf_t src, tgt;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_new(pr.p.pd, &tgt, 4096, TGT);
  cert_buf_fill(&src, 0x44);
  memset(tgt.data, 0, 4096);
  /* The address of memory the responder has registered, and iova 0: the
   * key must open neither. */
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 64, 0xa01, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), mr->rkey);
  cert_expect_refused(f, &pr, 0xa01, TRUE);
  for (size_t i = 0; i < 4096; i++)
    g_assert_cmphex(tgt.data[i], ==, 0);
  cert_buf_check_guards(&tgt);
  cert_ok(MEM->mr_dereg(mr));
  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- mw_alloc --------------------------------------------------------- */

static void
test_mw_alloc_refused(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mw_alloc of a type that is neither narrow nor wide is RNICPI_EINVAL (or, on a "
                 "device without windows, RNICPI_ENOTSUP); of a type whose capability is clear, "
                 "RNICPI_ENOTSUP; of a type the device has, a window of that type and domain "
                 "with key 0 until its first bind");
  gboolean any = (f->caps.features & (RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE)) != 0;
  if (MW == NULL) {
    g_assert_false(any);
    g_test_skip("the provider has no memory window table");
    return;
  }
  rnicpi_pd_t *pd = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  static const int bad[] = { 0, 3, 0x7fff };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    rnicpi_mw_t *mw = NULL;
    rnicpi_status_t st = MW->mw_alloc(pd, (rnicpi_mw_type_t) bad[i], &mw);
    if (!(any == FALSE && st == RNICPI_ENOTSUP))
      cert_cmpst(st, RNICPI_EINVAL);
    g_assert_null(mw);
  }
  static const struct {
    uint64_t cap;
    rnicpi_mw_type_t type;
  } t[] = { { RNICPI_CAP_MW_NARROW, RNICPI_MW_NARROW }, { RNICPI_CAP_MW_WIDE, RNICPI_MW_WIDE } };
  for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
    rnicpi_mw_t *mw = NULL;
    if (!(f->caps.features & t[i].cap)) {
      g_test_message("no %s windows", rnicpi_cap_name(t[i].cap));
      cert_cmpst(MW->mw_alloc(pd, t[i].type, &mw), RNICPI_ENOTSUP);
      g_assert_null(mw);
      continue;
    }
    cert_ok(MW->mw_alloc(pd, t[i].type, &mw));
    g_assert_nonnull(mw);
    g_assert_true(mw->pd == pd);
    g_assert_cmpint(mw->type, ==, t[i].type);
    g_assert_cmphex(mw->rkey, ==, 0);
    cert_ok(MW->mw_dealloc(mw));
  }
  cert_ok(DEV->pd_free(pd));
}

/* ---- SRQ -------------------------------------------------------------- */

static void
test_srq_create_limits(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("srq_create with max_wr or max_sge 0, or above the capability record "
                 "(max_qp_wr, max_recv_sge), is RNICPI_ELIMIT and creates nothing; at the "
                 "limits it creates an SRQ of its domain and context");
  if (!cert_require(f, RNICPI_CAP_SRQ))
    return;
  rnicpi_pd_t *pd = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  const struct {
    uint32_t wr, sge;
  } bad[] = { { 0, 1 }, { 4, 0 }, { f->caps.max_qp_wr + 1, 1 }, { 4, f->caps.max_recv_sge + 1 } };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    rnicpi_srq_t *srq = NULL;
    g_test_message("max_wr %u max_sge %u", bad[i].wr, bad[i].sge);
    cert_cmpst(SRQ->srq_create(pd, bad[i].wr, bad[i].sge, 0x5e1, &srq), RNICPI_ELIMIT);
    g_assert_null(srq);
  }
  rnicpi_srq_t *srq = NULL;
  cert_ok(SRQ->srq_create(pd, cert_min(f->caps.max_qp_wr, 4096), f->caps.max_recv_sge, 0x5e2,
                          &srq));
  g_assert_true(srq->pd == pd);
  g_assert_cmphex(srq->al_ctx, ==, 0x5e2);
  cert_ok(SRQ->srq_destroy(srq));
  cert_ok(DEV->pd_free(pd));
}

static void
test_srq_post_recv_on_qp(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("post_recv takes receives in any state but on a queue pair that receives "
                 "from an SRQ: there it is refused (RNICPI_EINVAL or RNICPI_ESTATE), queues "
                 "nothing on the queue pair or the SRQ and completes nothing");
  if (!cert_require(f, RNICPI_CAP_SRQ))
    return;
  rnicpi_pd_t *pd = NULL;
  rnicpi_cq_t *cq = NULL;
  rnicpi_srq_t *srq = NULL;
  rnicpi_qp_t *qp = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_ok(QUE->cq_create(f->dev, 16, 0x5f1, &cq));
  cert_ok(SRQ->srq_create(pd, 4, 1, 0x5f2, &srq));
  rnicpi_qp_attr_t a = cert_qp_attr(f, cq, cq);
  a.srq = srq;
  cert_ok(QUE->qp_create(pd, &a, 0x5f3, &qp));
  cert_buf_t b;
  cert_buf_new(pd, &b, 64, RW);
  rnicpi_sge_t s = cert_sge(&b, 0, 64);
  rnicpi_recv_wr_t wr = { .wr_id = 0x5f4, .sg_list = &s, .num_sge = 1 };
  rnicpi_status_t st = DAT->post_recv(qp, &wr);
  g_test_message("post_recv on a queue pair of an SRQ: %s", rnicpi_status_name(st));
  if (st != RNICPI_ESTATE)
    cert_cmpst(st, RNICPI_EINVAL);
  g_assert_cmpuint(SRQ->srq_count(srq), ==, 0);
  cert_ok(QUE->qp_to_error(qp));
  cert_assert_cq_quiet(cq);
  cert_ok(QUE->qp_destroy(qp));
  cert_assert_cq_quiet(cq);
  cert_buf_free(&b);
  cert_ok(SRQ->srq_destroy(srq));
  cert_ok(QUE->cq_destroy(cq));
  cert_ok(DEV->pd_free(pd));
}

/* ---- reject ----------------------------------------------------------- */

static void
test_reject_answered(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("reject of a request already accepted, of one already rejected and of a "
                 "conn_id never issued is RNICPI_ENOENT: the accepted connection stays up and "
                 "carries a Send, and the rejected requester gets exactly one REJECTED");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  cert_pair_t pr;
  memset(&pr, 0, sizeof(pr));
  cert_side_new(f, &pr.a, 0xa0000, 64, NULL);
  cert_side_new(f, &pr.p, 0xb0000, 64, NULL);
  cert_side_t r;
  cert_side_new(f, &r, 0xc0000, 64, NULL);
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1160, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord) };

  cert_ok(CMV->connect(pr.a.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req1 = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1160);
  cert_ok(CMV->accept(pr.p.qp, req1->conn_id, &cp));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr.a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr.p.ctx));
  cert_cmpst(CMV->reject(f->dev, req1->conn_id, NULL, 0), RNICPI_ENOENT);

  cert_ok(CMV->connect(r.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req2 = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1160);
  g_assert_cmphex(req2->conn_id, !=, req1->conn_id);
  cert_ok(CMV->reject(f->dev, req2->conn_id, NULL, 0));
  g_free(cert_wait_cm(f, RNICPI_CM_REJECTED, r.ctx));
  cert_cmpst(CMV->reject(f->dev, req2->conn_id, NULL, 0), RNICPI_ENOENT);
  uint64_t never = (req1->conn_id | req2->conn_id) ^ 0x5a5a5a5a00000000ull;
  if (never == req1->conn_id || never == req2->conn_id)
    never = ~never;
  cert_cmpst(CMV->reject(f->dev, never, NULL, 0), RNICPI_ENOENT);
  cert_assert_no_cm(f, RNICPI_CM_REJECTED, r.ctx);
  cert_assert_no_cm(f, RNICPI_CM_REJECTED, pr.a.ctx);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, pr.a.ctx);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);
  send_still_lands(f, &pr, 0xb10);
  cert_ok(CMV->unlisten(lst));
  cert_side_free(&r);
  cert_pair_free(&pr);
}

/* ---- UD service requests ---------------------------------------------- */

static void
test_ud_svc_refused(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("ud_svc_request with private data over pdata_ud_req is RNICPI_ELIMIT and no "
                 "reply follows; ud_svc_reply with a status that is no rnicpi_ud_svc_status_t "
                 "is RNICPI_EINVAL, with private data over pdata_ud_rep RNICPI_ELIMIT, to an id "
                 "never issued RNICPI_ENOENT, and none of them answers the request, which a "
                 "good reply then answers once");
  if (!cert_require(f, RNICPI_CAP_UD) || !cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  uint8_t big[RNICPI_MAX_PDATA + 8];
  memset(big, 0x3c, sizeof(big));
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x5d8, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  cert_cmpst(CMV->ud_svc_request(f->dev, &dst, big, f->caps.pdata_ud_req + 1, 0x5d9),
             RNICPI_ELIMIT);
  cert_assert_no_cm(f, RNICPI_CM_UD_SVC_REQUEST, 0x5d8);
  cert_assert_no_cm(f, RNICPI_CM_UD_SVC_REPLY, 0x5d9);

  cert_ok(CMV->ud_svc_request(f->dev, &dst, NULL, 0, 0x5da));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_UD_SVC_REQUEST, 0x5d8);
  cert_cmpst(CMV->ud_svc_reply(f->dev, req->conn_id, (rnicpi_ud_svc_status_t) 99, 0x77, 0x11,
                               NULL, 0),
             RNICPI_EINVAL);
  cert_cmpst(CMV->ud_svc_reply(f->dev, req->conn_id, RNICPI_UD_SVC_OK, 0x77, 0x11, big,
                               f->caps.pdata_ud_rep + 1),
             RNICPI_ELIMIT);
  cert_cmpst(CMV->ud_svc_reply(f->dev, ~req->conn_id, RNICPI_UD_SVC_OK, 0x77, 0x11, NULL, 0),
             RNICPI_ENOENT);
  cert_assert_no_cm(f, RNICPI_CM_UD_SVC_REPLY, 0x5da);
  cert_ok(CMV->ud_svc_reply(f->dev, req->conn_id, RNICPI_UD_SVC_OK, 0x77, 0x11, NULL, 0));
  g_autofree rnicpi_cm_event_t *rep = cert_wait_cm(f, RNICPI_CM_UD_SVC_REPLY, 0x5da);
  g_assert_cmpint(rep->ud_status, ==, RNICPI_UD_SVC_OK);
  g_assert_cmpuint(rep->ud_qpn, ==, 0x77);
  g_assert_cmphex(rep->ud_qkey, ==, 0x11);
  cert_assert_no_cm(f, RNICPI_CM_UD_SVC_REPLY, 0x5da);
  cert_ok(CMV->unlisten(lst));
}

/* ---- UD queue pairs ---------------------------------------------------- */

static void
test_ud_qp_rules(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a UD queue pair is created in RTS, takes only Sends (an RDMA Write or Read "
                 "on it is RNICPI_EINVAL and completes nothing), and qp_reset of it in ERROR "
                 "brings it back to RTS; ah_create of a port the device does not have is "
                 "RNICPI_EINVAL");
  if (!cert_require(f, RNICPI_CAP_UD))
    return;
  rnicpi_qp_attr_t a = cert_qp_attr(f, NULL, NULL);
  a.type = RNICPI_QPT_UD;
  a.qkey = 0x1234;
  a.access = 0;
  cert_side_t s;
  cert_side_new(f, &s, 0xd3000, 16, &a);
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_RTS);
  cert_buf_t b;
  cert_buf_new(s.pd, &b, 64, TGT);
  rnicpi_ah_attr_t aa = { .port = 0 };
  cert_self_gid(f, aa.dgid);
  rnicpi_ah_t *ah = NULL;
  cert_ok(UDO->ah_create(s.pd, &aa, &ah));
  static const rnicpi_wr_opcode_t ops[] = { RNICPI_WR_RDMA_WRITE, RNICPI_WR_RDMA_READ };
  for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
    rnicpi_sge_t sg = cert_sge(&b, 0, 64);
    rnicpi_send_wr_t wr = { .wr_id = 0xd31 + i, .opcode = ops[i], .flags = RNICPI_WR_SIGNALED,
                            .sg_list = &sg, .num_sge = 1, .remote_addr = cert_raddr(&b, 0),
                            .rkey = b.mr->rkey, .ah = ah, .remote_qpn = s.qp->qp_num,
                            .remote_qkey = 0x1234 };
    cert_cmpst(DAT->post_send(s.qp, &wr), RNICPI_EINVAL);
  }
  cert_assert_cq_quiet(s.scq);
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_RTS);
  cert_ok(QUE->qp_to_error(s.qp));
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_ERROR);
  cert_ok(QUE->qp_reset(s.qp));
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_RTS);
  cert_assert_cq_quiet(s.scq);

  rnicpi_ah_t *bad = NULL;
  rnicpi_ah_attr_t ba = aa;
  ba.port = f->caps.num_ports + 7;
  cert_cmpst(UDO->ah_create(s.pd, &ba, &bad), RNICPI_EINVAL);
  g_assert_null(bad);
  cert_ok(UDO->ah_destroy(ah));
  cert_buf_free(&b);
  cert_side_free(&s);
}

static void
test_ud_absent(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("on a device without the capability ud, qp_create of a UD queue pair and "
                 "ah_create are RNICPI_ENOTSUP and create nothing");
  if (f->caps.features & RNICPI_CAP_UD) {
    g_test_skip("the device has ud");
    return;
  }
  rnicpi_pd_t *pd = NULL;
  rnicpi_cq_t *cq = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_ok(QUE->cq_create(f->dev, 16, 0xd41, &cq));
  rnicpi_qp_attr_t a = cert_qp_attr(f, cq, cq);
  a.type = RNICPI_QPT_UD;
  a.qkey = 0x1234;
  a.access = 0;
  rnicpi_qp_t *qp = NULL;
  cert_cmpst(QUE->qp_create(pd, &a, 0xd42, &qp), RNICPI_ENOTSUP);
  g_assert_null(qp);
  if (UDO != NULL) {
    rnicpi_ah_attr_t aa = { .port = 0 };
    cert_self_gid(f, aa.dgid);
    rnicpi_ah_t *ah = NULL;
    cert_cmpst(UDO->ah_create(pd, &aa, &ah), RNICPI_ENOTSUP);
    g_assert_null(ah);
  }
  cert_ok(QUE->cq_destroy(cq));
  cert_ok(DEV->pd_free(pd));
}

static void
test_ud_post_refused(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("post_send on a UD queue pair refuses a datagram without an address handle or "
                 "with one of another domain with RNICPI_EACCES and one longer than ud_mtu with "
                 "RNICPI_ERANGE (the access layer's IT_ERR_PAYLOAD_SIZE): none completes or is "
                 "delivered, and a good datagram then arrives");
  if (!cert_require(f, RNICPI_CAP_UD))
    return;
  rnicpi_qp_attr_t a = cert_qp_attr(f, NULL, NULL);
  a.type = RNICPI_QPT_UD;
  a.qkey = 0x1234;
  a.access = 0;
  cert_side_t s, r;
  cert_side_new(f, &s, 0xd5000, 16, &a);
  cert_side_new(f, &r, 0xd6000, 16, &a);
  uint32_t big = f->caps.ud_mtu + 1;
  cert_buf_t src, dst;
  cert_buf_new(s.pd, &src, big, RW);
  cert_buf_new(r.pd, &dst, 2 * (big + 40), RW);
  cert_buf_fill(&src, 0x2b);
  rnicpi_ah_attr_t aa = { .port = 0 };
  cert_self_gid(f, aa.dgid);
  rnicpi_ah_t *ah = NULL, *other = NULL;
  cert_ok(UDO->ah_create(s.pd, &aa, &ah));
  cert_ok(UDO->ah_create(r.pd, &aa, &other));
  cert_post_recv(r.qp, &dst, 0, big + 40, 0xd51);
  const struct {
    rnicpi_ah_t *ah;
    uint32_t len;
    rnicpi_status_t want;
    const char *what;
  } bad[] = {
    { NULL, 16, RNICPI_EACCES, "no address handle" },
    { other, 16, RNICPI_EACCES, "an address handle of another domain" },
    { ah, big, RNICPI_ERANGE, "ud_mtu + 1 bytes" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    rnicpi_sge_t sg = cert_sge(&src, 0, bad[i].len);
    rnicpi_send_wr_t wr = { .wr_id = 0xd60 + i, .opcode = RNICPI_WR_SEND,
                            .flags = RNICPI_WR_SIGNALED, .sg_list = &sg, .num_sge = 1,
                            .ah = bad[i].ah, .remote_qpn = r.qp->qp_num, .remote_qkey = 0x1234 };
    g_test_message("%s", bad[i].what);
    cert_cmpst(DAT->post_send(s.qp, &wr), bad[i].want);
  }
  cert_assert_cq_quiet(s.scq);
  cert_assert_cq_quiet(r.rcq);
  g_assert_cmpint(QUE->qp_state(s.qp), ==, RNICPI_QPS_RTS);
  rnicpi_sge_t sg = cert_sge(&src, 0, 16);
  rnicpi_send_wr_t wr = { .wr_id = 0xd70, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sg, .num_sge = 1, .ah = ah, .remote_qpn = r.qp->qp_num,
                          .remote_qkey = 0x1234 };
  cert_ok(DAT->post_send(s.qp, &wr));
  rnicpi_wc_t wc = cert_wc(s.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xd70);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  wc = cert_wc(r.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0xd51);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  uint32_t off = (wc.flags & RNICPI_WC_GRH) ? 40 : 0;
  g_assert_cmpuint(wc.byte_len, ==, off + 16);
  cert_buf_check(&dst, off, 16, 0x2b);
  cert_ok(UDO->ah_destroy(ah));
  cert_ok(UDO->ah_destroy(other));
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_side_free(&s);
  cert_side_free(&r);
}

/* ---- Windows and fast registrations posted without their objects ------- */

static void
test_bind_fast_reg_malformed(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("post_send of a window bind without its window or without its region, and of a "
                 "fast registration of a region mr_reg made (not mr_alloc), is RNICPI_EINVAL: "
                 "nothing completes, the region keeps its keys and the queue pair stays RTS and "
                 "carries a Send");
  gboolean mw = MW != NULL && (f->caps.features & (RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE));
  gboolean fr = (f->caps.features & RNICPI_CAP_FAST_REGISTER) != 0;
  if (!mw && !fr) {
    g_test_skip("needs capability: mw-narrow, mw-wide or fast-register");
    return;
  }
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t reg;
  cert_buf_new(pr.a.pd, &reg, 4096, TGT | RNICPI_ACCESS_MW_BIND);
  uint64_t lkey = reg.mr->lkey, rkey = reg.mr->rkey;
  if (mw) {
    rnicpi_mw_t *w = NULL;
    rnicpi_mw_type_t type = (f->caps.features & RNICPI_CAP_MW_NARROW) ? RNICPI_MW_NARROW
                                                                       : RNICPI_MW_WIDE;
    cert_ok(MW->mw_alloc(pr.a.pd, type, &w));
    for (int i = 0; i < 2; i++) {
      rnicpi_send_wr_t wr = { .wr_id = 0xc10 + (uint64_t) i, .opcode = RNICPI_WR_BIND_MW,
                              .flags = RNICPI_WR_SIGNALED };
      wr.bind.mw = i == 0 ? NULL : w;
      wr.bind.mr = i == 0 ? reg.mr : NULL;
      wr.bind.addr = cert_raddr(&reg, 0);
      wr.bind.length = 1024;
      wr.bind.access = RNICPI_ACCESS_REMOTE_READ;
      g_test_message("bind without its %s", i == 0 ? "window" : "region");
      cert_cmpst(DAT->post_send(pr.a.qp, &wr), RNICPI_EINVAL);
    }
    g_assert_cmphex(w->rkey, ==, 0);
    cert_assert_cq_quiet(pr.a.scq);
    cert_ok(MW->mw_dealloc(w));
  }
  if (fr) {
    rnicpi_send_wr_t wr = { .wr_id = 0xc20, .opcode = RNICPI_WR_FAST_REG,
                            .flags = RNICPI_WR_SIGNALED };
    uint64_t page = (uint64_t) (uintptr_t) reg.data;
    wr.fast_reg.mr = reg.mr;
    wr.fast_reg.addr = reg.data;
    wr.fast_reg.length = 64;
    wr.fast_reg.iova = page;
    wr.fast_reg.access = TGT;
    wr.fast_reg.page_size = 4096;
    wr.fast_reg.num_pages = 1;
    wr.fast_reg.pages = &page;
    g_test_message("fast registration of a region of mr_reg");
    cert_cmpst(DAT->post_send(pr.a.qp, &wr), RNICPI_EINVAL);
    cert_assert_cq_quiet(pr.a.scq);
  }
  g_assert_cmphex(reg.mr->lkey, ==, lkey);
  g_assert_cmphex(reg.mr->rkey, ==, rkey);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  send_still_lands(f, &pr, 0xc30);
  cert_buf_free(&reg);
  cert_pair_free(&pr);
}

/* ---- A zero-based window ----------------------------------------------- */

static void
test_zero_based_window(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a window bound zero-based (rnicpi_bind_t.zero_based) over part of a region "
                 "answers to offsets from the window's first byte: an RDMA Write at offset N "
                 "lands N bytes into the window and nowhere else, a Read at N returns those "
                 "bytes, and a Write that ends one byte past the window is refused and writes "
                 "nothing");
  if (!cert_require(f, RNICPI_CAP_ZERO_BASED))
    return;
  if (MW == NULL || !(f->caps.features & (RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE))) {
    g_test_skip("needs capability: mw-narrow or mw-wide");
    return;
  }
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  enum { REG = 4096, WOFF = 1024, WLEN = 1024, OFF = 100, LEN = 64 };
  cert_buf_t src, sink, tgt;
  cert_buf_new(pr.a.pd, &src, LEN, RW);
  cert_buf_new(pr.a.pd, &sink, LEN, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, REG, TGT | RNICPI_ACCESS_MW_BIND);
  cert_buf_fill(&src, 0x5b);
  memset(tgt.data, 0, REG);
  memset(sink.data, 0, LEN);
  rnicpi_mw_type_t type = (f->caps.features & RNICPI_CAP_MW_NARROW) ? RNICPI_MW_NARROW
                                                                     : RNICPI_MW_WIDE;
  rnicpi_mw_t *w = NULL;
  cert_ok(MW->mw_alloc(pr.p.pd, type, &w));
  rnicpi_send_wr_t bw = { .wr_id = 0xc40, .opcode = RNICPI_WR_BIND_MW,
                          .flags = RNICPI_WR_SIGNALED };
  bw.bind.mw = w;
  bw.bind.mr = tgt.mr;
  bw.bind.addr = cert_raddr(&tgt, WOFF);
  bw.bind.length = WLEN;
  bw.bind.access = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE;
  bw.bind.zero_based = 1;
  cert_ok(DAT->post_send(pr.p.qp, &bw));
  uint64_t key = w->rkey;
  rnicpi_wc_t wc = cert_wc(pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xc40);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmphex(wc.rkey, ==, key);

  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, LEN, 0xc41, RNICPI_WR_SIGNALED, OFF,
                 key);
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xc41);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, LEN, 0xc42, RNICPI_WR_SIGNALED, OFF,
                 key);
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xc42);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&sink, 0, LEN, 0x5b);
  for (size_t i = 0; i < REG; i++)
    if (i < WOFF + OFF || i >= WOFF + OFF + LEN)
      g_assert_cmphex(tgt.data[i], ==, 0);
  cert_buf_check(&tgt, WOFF + OFF, LEN, 0x5b);

  memset(tgt.data, 0, REG);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, LEN, 0xc43, RNICPI_WR_SIGNALED,
                 WLEN - LEN + 1, key);
  cert_expect_refused(f, &pr, 0xc43, TRUE);
  for (size_t i = 0; i < REG; i++)
    g_assert_cmphex(tgt.data[i], ==, 0);
  cert_buf_check_guards(&tgt);
  cert_ok(MW->mw_dealloc(w));
  cert_buf_free(&src);
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- An address handle destroyed behind its datagram -------------------- */

static void
test_ah_destroy_outstanding(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an address handle may be destroyed while a datagram that named it is "
                 "outstanding: the send read it when posted, completes successfully and arrives "
                 "whole");
  if (!cert_require(f, RNICPI_CAP_UD))
    return;
  rnicpi_qp_attr_t a = cert_qp_attr(f, NULL, NULL);
  a.type = RNICPI_QPT_UD;
  a.qkey = 0x1234;
  a.access = 0;
  cert_side_t s, r;
  cert_side_new(f, &s, 0xd7000, 16, &a);
  cert_side_new(f, &r, 0xd8000, 16, &a);
  uint32_t len = cert_min(256, f->caps.ud_mtu);
  cert_buf_t src, dst;
  cert_buf_new(s.pd, &src, len, RW);
  cert_buf_new(r.pd, &dst, len + 40, RW);
  cert_buf_fill(&src, 0x3d);
  cert_post_recv(r.qp, &dst, 0, len + 40, 0xd81);
  rnicpi_ah_attr_t aa = { .port = 0 };
  cert_self_gid(f, aa.dgid);
  rnicpi_ah_t *ah = NULL;
  cert_ok(UDO->ah_create(s.pd, &aa, &ah));
  rnicpi_sge_t sg = cert_sge(&src, 0, len);
  rnicpi_send_wr_t wr = { .wr_id = 0xd71, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sg, .num_sge = 1, .ah = ah, .remote_qpn = r.qp->qp_num,
                          .remote_qkey = 0x1234 };
  cert_ok(DAT->post_send(s.qp, &wr));
  cert_ok(UDO->ah_destroy(ah));
  rnicpi_wc_t wc = cert_wc(s.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xd71);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  wc = cert_wc(r.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0xd81);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  uint32_t off = (wc.flags & RNICPI_WC_GRH) ? 40 : 0;
  g_assert_cmpuint(wc.byte_len, ==, off + len);
  cert_buf_check(&dst, off, len, 0x3d);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_side_free(&s);
  cert_side_free(&r);
}

/* ---- The Terminate detail of an asynchronous event -------------------- */

static void
test_terminate_fields(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("rnicpi_async_event_t (ABI 1.7): an RDMA Write refused for its key gives the "
                 "responder QP_ACCESS_ERR with cause WRITE_ACCESS, whose Terminate fields are "
                 "RNICPI_TERM_NONE on InfiniBand (no Terminate went) and, on iWARP where one was "
                 "sent, name its layer (0 RDMAP, 1 DDP or 2 LLP) with a type and code: the three "
                 "are given together or not at all; no byte of the target changes");
  if (cert_prov->abi_minor < 7) {
    g_test_skip("the provider is older than ABI 1.7: its events carry no cause");
    return;
  }
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, tgt;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_new(pr.p.pd, &tgt, 64, TGT);
  memset(tgt.data, 0, 64);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 64, 0xa51, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), tgt.mr->rkey ^ 0x100);
  g_autofree rnicpi_async_event_t *ev = cert_wait_async(f, RNICPI_ASYNC_QP_ACCESS_ERR, pr.p.ctx);
  g_test_message("cause %d, Terminate layer %u type %u code 0x%02x", ev->cause, ev->term_layer,
                 ev->term_etype, ev->term_code);
  g_assert_cmpint(ev->cause, ==, RNICPI_AE_WRITE_ACCESS);
  gboolean none = ev->term_layer == RNICPI_TERM_NONE;
  g_assert_cmpint(ev->term_etype == RNICPI_TERM_NONE, ==, none);
  g_assert_cmpint(ev->term_code == RNICPI_TERM_NONE, ==, none);
  if (f->caps.transport == RNICPI_TRANSPORT_IB)
    g_assert_true(none);
  else if (!none)
    g_assert_cmpuint(ev->term_layer, <=, 2);
  /* The requester's completion: an error where completions mean
   * placement; at transmission (iWARP) it may have completed already. */
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xa51);
  if (f->caps.features & RNICPI_CAP_PLACED_COMPLETION)
    g_assert_cmpint(wc.status, ==, RNICPI_WC_REM_ACCESS_ERR);
  for (size_t i = 0; i < 64; i++)
    g_assert_cmphex(tgt.data[i], ==, 0);
  cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);
  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- Socket handoff ---------------------------------------------------- */

/* The socket is still open and still the caller's: its type reads back. */
static void
assert_sock_kept(int fd, int type)
{
  int t = 0;
  socklen_t tl = sizeof(t);
  g_assert_cmpint(fcntl(fd, F_GETFD), !=, -1);
  g_assert_cmpint(getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &tl), ==, 0);
  g_assert_cmpint(t, ==, type);
}

static void
test_handoff_refused(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("sock_ops.handoff of a datagram socket is RNICPI_EINVAL, and of a stream "
                 "socket to a queue pair that is not IDLE RNICPI_ESTATE; either way the socket "
                 "stays the caller's, open, and the queue pair as it was");
  if (!cert_require(f, RNICPI_CAP_SOCKET_HANDOFF))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_side_t idle;
  cert_side_new(f, &idle, 0xe1000, 16, NULL);
  struct sockaddr_storage ss;
  cert_self_addr(f, &ss);
  rnicpi_conn_param_t cp = { .ird = cert_min(2, f->caps.max_ird),
                             .ord = cert_min(2, f->caps.max_ord) };
  int u = socket(ss.ss_family, SOCK_DGRAM, 0);
  g_assert_cmpint(u, >=, 0);
  cert_cmpst(SOCK->handoff(idle.qp, u, true, &cp), RNICPI_EINVAL);
  assert_sock_kept(u, SOCK_DGRAM);
  g_assert_cmpint(QUE->qp_state(idle.qp), ==, RNICPI_QPS_IDLE);
  close(u);

  int t = socket(ss.ss_family, SOCK_STREAM, 0);
  g_assert_cmpint(t, >=, 0);
  cert_cmpst(SOCK->handoff(pr.a.qp, t, true, &cp), RNICPI_ESTATE);
  assert_sock_kept(t, SOCK_STREAM);
  close(t);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, idle.ctx);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  send_still_lands(f, &pr, 0xe10);
  cert_side_free(&idle);
  cert_pair_free(&pr);
}

/* ---- A zero-based fast registration ------------------------------------ */

static void
test_fast_reg_zero_based(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a fast registration with iova 0 (rnicpi_fast_reg_t) answers to offsets: an "
                 "RDMA Write at offset N lands N bytes into the memory and nowhere else, a Read "
                 "at N returns those bytes, and a Write one byte past the registered length is "
                 "refused and writes nothing");
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER) || !cert_require(f, RNICPI_CAP_ZERO_BASED))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  enum { PAGE = 4096, LEN = 2 * PAGE, OFF = PAGE + 100, N = 64 };
  cert_buf_t src, sink;
  cert_buf_new(pr.a.pd, &src, N, RW);
  cert_buf_new(pr.a.pd, &sink, N, cert_sink_access(f));
  cert_buf_fill(&src, 0x6e);
  memset(sink.data, 0, N);
  uint8_t *mem = g_malloc0(LEN + 2 * PAGE);
  uint8_t *buf = (uint8_t *) (((uintptr_t) mem + PAGE - 1) & ~(uintptr_t) (PAGE - 1));
  uint64_t pages[2] = { (uint64_t) (uintptr_t) buf, (uint64_t) (uintptr_t) (buf + PAGE) };
  rnicpi_mr_t *mr = NULL;
  cert_ok(MEM->mr_alloc(pr.p.pd, 2, &mr));
  rnicpi_send_wr_t wr = { .wr_id = 0xc50, .opcode = RNICPI_WR_FAST_REG,
                          .flags = RNICPI_WR_SIGNALED };
  wr.fast_reg = (rnicpi_fast_reg_t) {
    .mr = mr, .addr = buf, .length = LEN, .iova = 0, .access = TGT, .page_size = PAGE,
    .num_pages = 2, .pages = pages,
  };
  cert_ok(DAT->post_send(pr.p.qp, &wr));
  uint64_t key = mr->rkey;
  rnicpi_wc_t wc = cert_wc(pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xc50);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmphex(wc.rkey, ==, key);

  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, N, 0xc51, RNICPI_WR_SIGNALED, OFF, key);
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xc51);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, N, 0xc52, RNICPI_WR_SIGNALED, OFF, key);
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xc52);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&sink, 0, N, 0x6e);
  for (size_t i = 0; i < LEN; i++)
    if (i < OFF || i >= OFF + N)
      g_assert_cmphex(buf[i], ==, 0);
  g_assert_cmpmem(buf + OFF, N, src.data, N);

  memset(buf, 0, LEN);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, N, 0xc53, RNICPI_WR_SIGNALED,
                 LEN - N + 1, key);
  cert_expect_refused(f, &pr, 0xc53, TRUE);
  for (size_t i = 0; i < LEN + 2 * PAGE - (size_t) (buf - mem); i++)
    g_assert_cmphex(buf[i], ==, 0);
  cert_ok(MEM->mr_dereg(mr));
  g_free(mem);
  cert_buf_free(&src);
  cert_buf_free(&sink);
  cert_pair_free(&pr);
}

/* ---- cq_destroy of a CQ that still holds completions -------------------- */

static void
test_cq_destroy_holding(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cq_destroy of a CQ no queue pair uses any more, still holding completions "
                 "(the flushed receives of its destroyed queue pair), returns RNICPI_OK: they "
                 "are dropped, not a reason to refuse");
  rnicpi_pd_t *pd = NULL;
  rnicpi_cq_t *cq = NULL, *scq = NULL;
  rnicpi_qp_t *qp = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_ok(QUE->cq_create(f->dev, 16, 0xcd1, &cq));
  cert_ok(QUE->cq_create(f->dev, 16, 0xcd2, &scq));
  rnicpi_qp_attr_t a = cert_qp_attr(f, scq, cq);
  cert_ok(QUE->qp_create(pd, &a, 0xcd3, &qp));
  cert_buf_t b;
  cert_buf_new(pd, &b, 256, RW);
  for (int i = 0; i < 4; i++)
    cert_post_recv(qp, &b, 64 * (size_t) i, 64, 0xcd10 + (uint64_t) i);
  cert_ok(QUE->qp_to_error(qp));
  cert_limit_t w;
  cert_limit_begin(&w, "4 completions counted on the CQ", CERT_TIMEOUT_MS * 1000);
  while (DAT->cq_count(cq) < 4 && !cert_limit_over(&w))
    g_usleep(1000);
  cert_limit_end(&w);
  g_assert_cmpuint(DAT->cq_count(cq), ==, 4);
  cert_ok(QUE->qp_destroy(qp));
  cert_ok(QUE->cq_destroy(cq));
  cert_ok(QUE->cq_destroy(scq));
  cert_buf_free(&b);
  cert_ok(DEV->pd_free(pd));
}

/* ---- Socket handoff over its limits ------------------------------------ */

static void
test_handoff_limits(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("sock_ops.handoff with private data one byte over pdata_connect (active end) "
                 "or pdata_accept (passive end), or an IRD or ORD above the capability record, "
                 "is RNICPI_ELIMIT: the socket stays the caller's and open, the queue pair "
                 "IDLE, and no CM event follows");
  if (!cert_require(f, RNICPI_CAP_SOCKET_HANDOFF))
    return;
  struct sockaddr_storage ss;
  cert_self_addr(f, &ss);
  socklen_t sl = ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                         : sizeof(struct sockaddr_in6);
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

  cert_side_t q;
  cert_side_new(f, &q, 0xe2000, 16, NULL);
  uint8_t big[RNICPI_MAX_PDATA + 8];
  memset(big, 0x4d, sizeof(big));
  const struct {
    int fd;
    bool active;
    rnicpi_conn_param_t cp;
    const char *what;
  } bad[] = {
    { c, true, { .pdata = big, .pdata_len = f->caps.pdata_connect + 1 }, "pdata_connect + 1" },
    { s, false, { .pdata = big, .pdata_len = f->caps.pdata_accept + 1 }, "pdata_accept + 1" },
    { c, true, { .ird = f->caps.max_ird + 1 }, "max_ird + 1" },
    { s, false, { .ord = f->caps.max_ord + 1 }, "max_ord + 1" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_test_message("%s", bad[i].what);
    cert_cmpst(SOCK->handoff(q.qp, bad[i].fd, bad[i].active, &bad[i].cp), RNICPI_ELIMIT);
    assert_sock_kept(bad[i].fd, SOCK_STREAM);
    g_assert_cmpint(QUE->qp_state(q.qp), ==, RNICPI_QPS_IDLE);
  }
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, q.ctx);
  /* The sockets are still connected to each other: bytes cross. */
  g_assert_cmpint(write(c, "x", 1), ==, 1);
  char got = 0;
  g_assert_cmpint(read(s, &got, 1), ==, 1);
  g_assert_cmpint(got, ==, 'x');
  close(c);
  close(s);
  cert_side_free(&q);
}

/* ---- Limits of absent features ----------------------------------------- */

static void
test_absent_limits_zero(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("rnicpi_caps_t: a limit of a feature the device lacks is 0 (ud_mtu, "
                 "pdata_ud_req and pdata_ud_rep without ud, max_srq without srq), and ud_mtu of "
                 "a device with ud is not");
  const rnicpi_caps_t *c = &f->caps;
  if (c->features & RNICPI_CAP_UD) {
    g_assert_cmpuint(c->ud_mtu, >, 0);
  } else {
    g_assert_cmpuint(c->ud_mtu, ==, 0);
    g_assert_cmpuint(c->pdata_ud_req, ==, 0);
    g_assert_cmpuint(c->pdata_ud_rep, ==, 0);
  }
  if (!(c->features & RNICPI_CAP_SRQ))
    g_assert_cmpuint(c->max_srq, ==, 0);
}

/* ---- mr_modify refused ------------------------------------------------- */

static void
test_mr_modify_refused(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mr_modify asking for the atomic right on a device without atomics either "
                 "grants the rights (an RDMA Read then succeeds through the unchanged key) or is "
                 "refused and changes nothing: the keys stay, the Read it would have allowed is "
                 "refused and fills nothing, and the Write the old rights allowed still lands");
  if (f->caps.features & RNICPI_CAP_ATOMICS) {
    g_test_skip("the device has atomics: mr_modify has nothing to refuse here");
    return;
  }
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, sink, tgt;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_new(pr.a.pd, &sink, 64, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, 64, RW | RNICPI_ACCESS_REMOTE_WRITE);
  cert_buf_fill(&src, 0x7a);
  memset(tgt.data, 0, 64);
  memset(sink.data, 0, 64);
  uint64_t lkey = tgt.mr->lkey, rkey = tgt.mr->rkey;
  rnicpi_status_t st = MEM->mr_modify(tgt.mr, RW | RNICPI_ACCESS_REMOTE_WRITE
                                                | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_ATOMIC);
  g_test_message("mr_modify adding REMOTE_READ and ATOMIC: %s", rnicpi_status_name(st));
  g_assert_cmphex(tgt.mr->lkey, ==, lkey);
  g_assert_cmphex(tgt.mr->rkey, ==, rkey);
  cert_write_ok(f, &pr, &src, 0, 64, cert_raddr(&tgt, 0), rkey);
  cert_buf_check(&tgt, 0, 64, 0x7a);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, 64, 0xc61, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), rkey);
  if (st == RNICPI_OK) {
    rnicpi_wc_t wc = cert_wc(pr.a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0xc61);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    cert_buf_check(&sink, 0, 64, 0x7a);
  } else {
    cert_expect_refused(f, &pr, 0xc61, FALSE);
    for (size_t i = 0; i < 64; i++)
      g_assert_cmphex(sink.data[i], ==, 0);
  }
  cert_buf_free(&src);
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- cq_wait_end never blocks ----------------------------------------- */

static void
test_wait_end_never_blocks(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cq_wait_end never blocks: told that every descriptor cq_wait_begin named is "
                 "ready although nothing arrived, it returns at once (well within a second), "
                 "completes nothing, and the CQ then takes a Send as before");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  struct pollfd fds[8];
  uint32_t n = G_N_ELEMENTS(fds);
  rnicpi_status_t st = DAT->cq_wait_begin(pr.p.rcq, fds, &n);
  if (st == RNICPI_ENOTSUP) {
    g_test_skip("the provider has no descriptors to sleep on (cq_wait_begin RNICPI_ENOTSUP)");
    cert_pair_free(&pr);
    return;
  }
  cert_ok(st);
  g_assert_cmpuint(n, <=, G_N_ELEMENTS(fds));
  for (uint32_t i = 0; i < n; i++)
    fds[i].revents = fds[i].events;
  gint64 t0 = g_get_monotonic_time();
  DAT->cq_wait_end(pr.p.rcq, fds, n);
  gint64 took = g_get_monotonic_time() - t0;
  g_test_message("%u descriptors; cq_wait_end took %" G_GINT64_FORMAT " us", n, took);
  g_assert_cmpint(took, <, G_USEC_PER_SEC);
  g_assert_cmpuint(DAT->cq_count(pr.p.rcq), ==, 0);
  send_still_lands(f, &pr, 0xc70);
  cert_pair_free(&pr);
}

/* ---- Device table: cap_advice and list_refused ------------------------ */

static void
test_cap_advice(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cap_advice answers each capability bit with RNICPI_OK and a non-empty "
                 "NUL-terminated sentence within the room given (truncated to a smaller room, "
                 "nothing written past it), or with RNICPI_ENOENT or RNICPI_ENOTSUP and the "
                 "room untouched");
  int told = 0;
  for (unsigned bit = 0; bit < 24; bit++) {
    uint64_t cap = 1ull << bit;
    char advice[256 + 16];
    memset(advice, 0x5a, sizeof(advice));
    rnicpi_status_t st = DEV->cap_advice(f->dev, cap, advice, 256);
    if (st == RNICPI_OK) {
      told++;
      const char *nul = memchr(advice, '\0', 256);
      g_assert_nonnull(nul);
      g_assert_cmpuint(strlen(advice), >, 0);
      for (size_t i = 256; i < sizeof(advice); i++)
        g_assert_cmphex((uint8_t) advice[i], ==, 0x5a);
      g_test_message("%s: %s", rnicpi_cap_name(cap), advice);
      size_t full = strlen(advice);
      char small[8 + 8];
      memset(small, 0x5a, sizeof(small));
      cert_ok(DEV->cap_advice(f->dev, cap, small, 8));
      g_assert_nonnull(memchr(small, '\0', 8));
      g_assert_cmpuint(strlen(small), ==, MIN(full, 7));
      g_assert_cmpmem(small, strlen(small), advice, strlen(small));
      for (size_t i = 8; i < sizeof(small); i++)
        g_assert_cmphex((uint8_t) small[i], ==, 0x5a);
    } else {
      if (st != RNICPI_ENOTSUP)
        cert_cmpst(st, RNICPI_ENOENT);
      for (size_t i = 0; i < sizeof(advice); i++)
        g_assert_cmphex((uint8_t) advice[i], ==, 0x5a);
    }
  }
  g_test_message("%d capabilities with advice", told);
}

static void
test_list_refused(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("list_refused is RNICPI_ENOTSUP, or RNICPI_OK with a count and, for each "
                 "entry that fits, a non-empty NUL-terminated name and reason; no device it "
                 "refuses is one list offers, and a call with room 0 still counts them");
  char names[4][RNICPI_DEVICE_NAME_MAX], reasons[4][RNICPI_REASON_MAX];
  memset(names, 0x5a, sizeof(names));
  memset(reasons, 0x5a, sizeof(reasons));
  size_t count = G_N_ELEMENTS(names);
  rnicpi_status_t st = DEV->list_refused(names, reasons, &count);
  if (st == RNICPI_ENOTSUP) {
    g_test_message("the provider keeps no list of refused devices");
    return;
  }
  cert_ok(st);
  char offered[16][RNICPI_DEVICE_NAME_MAX];
  size_t noff = G_N_ELEMENTS(offered);
  cert_ok(DEV->list(offered, &noff));
  for (size_t i = 0; i < MIN(count, G_N_ELEMENTS(names)); i++) {
    g_assert_nonnull(memchr(names[i], '\0', sizeof(names[i])));
    g_assert_nonnull(memchr(reasons[i], '\0', sizeof(reasons[i])));
    g_assert_cmpuint(strlen(names[i]), >, 0);
    g_assert_cmpuint(strlen(reasons[i]), >, 0);
    g_test_message("refused %s: %s", names[i], reasons[i]);
    for (size_t j = 0; j < MIN(noff, G_N_ELEMENTS(offered)); j++)
      g_assert_cmpstr(names[i], !=, offered[j]);
  }
  size_t zero = 0;
  cert_ok(DEV->list_refused(names, reasons, &zero));
  g_assert_cmpuint(zero, ==, count);
  (void) f;
}

/* ---- Upcalls may call the provider ------------------------------------ */

typedef struct {
  rnicpi_cq_t *cq;        /* the CQ the notify names */
  rnicpi_qp_t *qp;        /* the QP a CM event names */
  gint notified, cm_seen; /* upcalls that called back */
  GAsyncQueue *q;         /* CM events */
} reenter_t;

static void
re_cm_event(void *dev_ctx, const rnicpi_cm_event_t *ev)
{
  reenter_t *r = dev_ctx;
  /* An upcall comes outside the provider's locks: it may call back. */
  rnicpi_qp_t *qp = g_atomic_pointer_get(&r->qp);
  if (qp != NULL)
    (void) QUE->qp_state(qp);
  g_atomic_int_inc(&r->cm_seen);
  g_async_queue_push(r->q, g_memdup2(ev, sizeof(*ev)));
}

static void
re_cq_notify(void *dev_ctx, uint64_t cq_ctx)
{
  reenter_t *r = dev_ctx;
  (void) cq_ctx;
  rnicpi_cq_t *cq = g_atomic_pointer_get(&r->cq);
  if (cq != NULL) {
    (void) DAT->cq_count(cq);
    (void) DAT->arm_cq(cq);
  }
  g_atomic_int_inc(&r->notified);
}

static void
re_async_event(void *dev_ctx, const rnicpi_async_event_t *ev)
{
  (void) dev_ctx;
  (void) ev;
}

static rnicpi_cm_event_t *
re_wait(reenter_t *r, rnicpi_cm_event_type_t type)
{
  cert_limit_t w;
  cert_limit_beginf(&w, CERT_TIMEOUT_MS * 1000, "CM event %d (re-entering upcalls)", type);
  for (;;) {
    gint64 left = cert_limit_left(&w);
    rnicpi_cm_event_t *ev = left > 0 ? g_async_queue_timeout_pop(r->q, (guint64) left) : NULL;
    g_assert_nonnull(ev);
    if (ev->type == type) {
      cert_limit_end(&w);
      return ev;
    }
    g_free(ev);
  }
}

static void
test_upcall_reenter(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("upcalls come while the provider holds no lock its operations take: a "
                 "cm_event upcall that calls qp_state and a cq_notify upcall that calls "
                 "cq_count and arm_cq return, the connection establishes and each armed "
                 "completion is notified");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  static const rnicpi_upcalls_t up = { re_cm_event, re_cq_notify, re_async_event };
  reenter_t r = { 0 };
  r.q = g_async_queue_new_full(g_free);
  rnicpi_dev_t *dev = NULL;
  cert_ok(DEV->open(f->dev_name, &up, &r, &dev));
  rnicpi_pd_t *pd = NULL;
  rnicpi_cq_t *cqa = NULL, *cqp = NULL;
  rnicpi_qp_t *qa = NULL, *qpp = NULL;
  cert_ok(DEV->pd_alloc(dev, &pd));
  cert_ok(QUE->cq_create(dev, 64, 0xf1, &cqa));
  cert_ok(QUE->cq_create(dev, 64, 0xf2, &cqp));
  rnicpi_qp_attr_t a = cert_qp_attr(f, cqa, cqa);
  cert_ok(QUE->qp_create(pd, &a, 0xf10, &qa));
  a.send_cq = a.recv_cq = cqp;
  cert_ok(QUE->qp_create(pd, &a, 0xf20, &qpp));
  g_atomic_pointer_set(&r.qp, qpp);
  g_atomic_pointer_set(&r.cq, cqp);

  rnicpi_listen_t *lst = NULL;
  uint32_t port = 0;
  for (int i = 0; i < 32; i++) {
    port = cert_port();
    rnicpi_status_t st = CMV->listen(dev, port, 0xf00, &lst);
    if (st == RNICPI_OK)
      break;
    cert_cmpst(st, RNICPI_EEXIST);
  }
  g_assert_nonnull(lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->connect(qa, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req = re_wait(&r, RNICPI_CM_CONNECT_REQUEST);
  cert_ok(CMV->accept(qpp, req->conn_id, &cp));
  g_free(re_wait(&r, RNICPI_CM_ESTABLISHED));
  g_free(re_wait(&r, RNICPI_CM_ESTABLISHED));
  cert_ok(CMV->unlisten(lst));

  cert_buf_t src, rcv;
  cert_buf_new(pd, &src, 64, RW);
  cert_buf_new(pd, &rcv, 128, RW);
  cert_buf_fill(&src, 0x66);
  cert_ok(DAT->arm_cq(cqp));
  for (int i = 0; i < 2; i++) {
    cert_post_recv(qpp, &rcv, 64 * (size_t) i, 64, 0xf30 + (uint64_t) i);
    cert_post_send(qa, RNICPI_WR_SEND, &src, 0, 64, 0xf40 + (uint64_t) i, RNICPI_WR_SIGNALED, 0,
                   0);
    rnicpi_wc_t wc = cert_wc(cqp);
    g_assert_cmphex(wc.wr_id, ==, 0xf30 + (uint64_t) i);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    cert_limit_t w;
    cert_limit_begin(&w, "a completion notification (re-armed in its upcall)", CERT_TIMEOUT_MS * 1000);
    while (g_atomic_int_get(&r.notified) < i + 1 && !cert_limit_over(&w))
      g_usleep(1000);
    cert_limit_end(&w);
    /* The upcall re-armed the CQ: the second completion is notified too. */
    g_assert_cmpint(g_atomic_int_get(&r.notified), >=, i + 1);
    g_assert_cmpint(cert_wc(cqa).status, ==, RNICPI_WC_SUCCESS);
  }
  g_assert_cmpint(g_atomic_int_get(&r.cm_seen), >=, 3);
  g_atomic_pointer_set(&r.qp, NULL);
  g_atomic_pointer_set(&r.cq, NULL);
  cert_buf_free(&src);
  cert_buf_free(&rcv);
  cert_ok(QUE->qp_destroy(qa));
  cert_ok(QUE->qp_destroy(qpp));
  cert_ok(QUE->cq_destroy(cqa));
  cert_ok(QUE->cq_destroy(cqp));
  cert_ok(DEV->pd_free(pd));
  DEV->close(dev);
  g_async_queue_unref(r.q);
}

void
cert_register_rules(void)
{
  cert_add("/rnicpi/data/unused-wr-members", test_unused_members);
  cert_add("/rnicpi/data/opcode-out-of-range", test_opcode_out_of_range);
  cert_add("/rnicpi/data/missing-capability", test_missing_capability);
  cert_add("/rnicpi/data/wc-zero-fields", test_wc_zero_fields);
  cert_add("/rnicpi/qp/to-error-twice", test_to_error_twice);
  cert_add("/rnicpi/mr/alloc-key-unusable", test_mr_alloc_key_unusable);
  cert_add("/rnicpi/mr/alloc-refused", test_mr_alloc_refused);
  cert_add("/rnicpi/mw/alloc-refused", test_mw_alloc_refused);
  cert_add("/rnicpi/pd/free-busy-objects", test_pd_free_busy_objects);
  cert_add("/rnicpi/srq/create-limits", test_srq_create_limits);
  cert_add("/rnicpi/srq/post-recv-on-qp-refused", test_srq_post_recv_on_qp);
  cert_add("/rnicpi/cm/reject-answered", test_reject_answered);
  cert_add("/rnicpi/ud/svc-refused", test_ud_svc_refused);
  cert_add("/rnicpi/ud/qp-rules", test_ud_qp_rules);
  cert_add("/rnicpi/ud/absent-refused", test_ud_absent);
  cert_add("/rnicpi/ud/post-refused", test_ud_post_refused);
  cert_add("/rnicpi/errors/terminate-fields", test_terminate_fields);
  cert_add("/rnicpi/data/bind-fast-reg-malformed", test_bind_fast_reg_malformed);
  cert_add("/rnicpi/mw/zero-based-window", test_zero_based_window);
  cert_add("/rnicpi/ud/ah-destroy-outstanding", test_ah_destroy_outstanding);
  cert_add("/rnicpi/handoff/refused", test_handoff_refused);
  cert_add("/rnicpi/handoff/limits", test_handoff_limits);
  cert_add("/rnicpi/mr/fast-reg-zero-based", test_fast_reg_zero_based);
  cert_add("/rnicpi/cq/destroy-holding-completions", test_cq_destroy_holding);
  cert_add("/rnicpi/device/cap-advice", test_cap_advice);
  cert_add("/rnicpi/mr/modify-refused-unchanged", test_mr_modify_refused);
  cert_add("/rnicpi/wait/end-never-blocks", test_wait_end_never_blocks);
  cert_add("/rnicpi/device/absent-limits-zero", test_absent_limits_zero);
  cert_add("/rnicpi/device/list-refused", test_list_refused);
  cert_add("/rnicpi/upcalls/reenter", test_upcall_reenter);
}
