/*
 * cert-rnicpi: the data path on a connected pair (rnicpi_data_ops_t):
 * send/receive, gather/scatter, zero-length messages, RDMA Write and Read,
 * atomics, immediate data, completion suppression and order, and full work
 * queues.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define TARGET (RW | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)

static void
test_data_send_recv(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("post_send SEND / post_recv: the bytes arrive, the receive completes with opcode "
                 "RECV, byte_len and the receiver's QP context, the send with opcode SEND; bytes "
                 "past the message and the guards are untouched");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 1000, RW);
  cert_buf_new(pr.p.pd, &dst, 1100, RW);
  cert_buf_fill(&src, 3);
  cert_post_recv(pr.p.qp, &dst, 0, 1100, 0x1001);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 1000, 0x1002, RNICPI_WR_SIGNALED, 0, 0);

  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(r.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmphex(r.wr_id, ==, 0x1001);
  g_assert_cmphex(r.qp_ctx, ==, pr.p.ctx);
  g_assert_cmpuint(r.byte_len, ==, 1000);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_SEND);
  g_assert_cmphex(s.wr_id, ==, 0x1002);
  g_assert_cmphex(s.qp_ctx, ==, pr.a.ctx);
  cert_buf_check(&dst, 0, 1000, 3);
  for (size_t i = 1000; i < 1100; i++)
    g_assert_cmphex(dst.data[i], ==, 0);
  cert_buf_check_guards(&dst);
  cert_assert_cq_quiet(pr.a.rcq);
  cert_assert_cq_quiet(pr.p.scq);

  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_data_multi_sge(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("post_send with 3 gather entries into a receive of 2 scatter entries split at "
                 "other offsets: the bytes arrive in order across the boundaries");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  if (f->caps.max_send_sge < 3 || f->caps.max_recv_sge < 2) {
    g_test_skip("the device has fewer than 3 send or 2 receive SGEs");
    cert_pair_free(&pr);
    return;
  }
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 300, RW);
  cert_buf_new(pr.p.pd, &dst, 400, RW);
  cert_buf_fill(&src, 7);
  /* Gather 0..99, 100..149, 150..299 from separate places of src. */
  rnicpi_sge_t g[3] = { cert_sge(&src, 0, 100), cert_sge(&src, 100, 50), cert_sge(&src, 150, 150) };
  /* Scatter the first 130 bytes to dst[0..129], the rest to dst[200..]. */
  rnicpi_sge_t sc[2] = { cert_sge(&dst, 0, 130), cert_sge(&dst, 200, 200) };
  rnicpi_recv_wr_t rwr = { .wr_id = 1, .sg_list = sc, .num_sge = 2 };
  cert_ok(DAT->post_recv(pr.p.qp, &rwr));
  rnicpi_send_wr_t swr = { .wr_id = 2, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                           .sg_list = g, .num_sge = 3 };
  cert_ok(DAT->post_send(pr.a.qp, &swr));
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(r.byte_len, ==, 300);
  g_assert_cmpint(cert_wc(pr.a.scq).status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpmem(dst.data, 130, src.data, 130);
  g_assert_cmpmem(dst.data + 200, 170, src.data + 130, 170);
  for (size_t i = 130; i < 200; i++)
    g_assert_cmphex(dst.data[i], ==, 0);

  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_data_zero_length(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a SEND and an RDMA Write with no SGE succeed; the receive completes with "
                 "byte_len 0 and its buffer untouched");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t dst;
  cert_buf_new(pr.p.pd, &dst, 64, TARGET);
  cert_post_recv(pr.p.qp, &dst, 0, 64, 0x21);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, NULL, 0, 0, 0x22, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(r.byte_len, ==, 0);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmphex(s.wr_id, ==, 0x22);

  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, NULL, 0, 0, 0x23, RNICPI_WR_SIGNALED,
                 cert_raddr(&dst, 0), dst.mr->rkey);
  s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_RDMA_WRITE);
  for (size_t i = 0; i < 64; i++)
    g_assert_cmphex(dst.data[i], ==, 0);
  cert_buf_check_guards(&dst);

  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_data_rdma_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("RDMA Write into the middle of a remote region: the bytes land at the offset, "
                 "the rest and the guards stay, no receive of the responder is consumed");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst, rbuf;
  cert_buf_new(pr.a.pd, &src, 512, RW);
  cert_buf_new(pr.p.pd, &dst, 4096, TARGET);
  cert_buf_new(pr.p.pd, &rbuf, 64, RW);
  cert_buf_fill(&src, 11);
  cert_post_recv(pr.p.qp, &rbuf, 0, 64, 0x31);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 512, 0x32, RNICPI_WR_SIGNALED,
                 cert_raddr(&dst, 1000), dst.mr->rkey);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_RDMA_WRITE);
  g_assert_cmphex(s.wr_id, ==, 0x32);
  cert_placed(f, &pr, cert_raddr(&dst, 1000), dst.mr->rkey);
  cert_buf_check(&dst, 1000, 512, 11);
  for (size_t i = 0; i < 4096; i++)
    if (i < 1000 || i >= 1512)
      g_assert_cmphex(dst.data[i], ==, 0);
  cert_buf_check_guards(&dst);
  cert_assert_cq_quiet(pr.p.rcq);

  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_buf_free(&rbuf);
  cert_pair_free(&pr);
}

static void
test_data_rdma_read(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("RDMA Read from the middle of a remote region into a local sink: the bytes "
                 "arrive, the completion has opcode RDMA_READ and the source is unchanged");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  /* Some transports (iWARP) need the sink to take remote writes. */
  uint32_t sink = RW;
  if (f->caps.features & RNICPI_CAP_READ_SINK_REMOTE_WRITE)
    sink |= RNICPI_ACCESS_REMOTE_WRITE;
  cert_buf_t src, dst;
  cert_buf_new(pr.p.pd, &src, 2048, TARGET);
  cert_buf_new(pr.a.pd, &dst, 700, sink);
  cert_buf_fill(&src, 13);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &dst, 0, 700, 0x41, RNICPI_WR_SIGNALED,
                 cert_raddr(&src, 0), src.mr->rkey);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_RDMA_READ);
  g_assert_cmphex(s.wr_id, ==, 0x41);
  g_assert_cmpmem(dst.data, 700, src.data, 700);
  cert_buf_check_guards(&dst);

  /* From an offset, into an offset. */
  memset(dst.data, 0, 700);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &dst, 100, 300, 0x42, RNICPI_WR_SIGNALED,
                 cert_raddr(&src, 1500), src.mr->rkey);
  s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpmem(dst.data + 100, 300, src.data + 1500, 300);
  g_assert_cmphex(dst.data[99], ==, 0);
  g_assert_cmphex(dst.data[400], ==, 0);
  cert_buf_check(&src, 0, 2048, 13);

  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_data_zero_based(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a region registered with iova 0 (zero-based) is addressed by offset: an RDMA "
                 "Write to remote address 64 lands 64 bytes into it");
  if (!cert_require(f, RNICPI_CAP_ZERO_BASED))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src;
  cert_buf_new(pr.a.pd, &src, 128, RW);
  cert_buf_fill(&src, 17);
  g_autofree uint8_t *target = g_malloc0(512);
  rnicpi_mr_t *mr;
  rnicpi_mr_attr_t attr = { .addr = target, .length = 512, .iova = 0, .access = TARGET };
  cert_ok(MEM->mr_reg(pr.p.pd, &attr, &mr));
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 128, 0x51, RNICPI_WR_SIGNALED, 64,
                 mr->rkey);
  g_assert_cmpint(cert_wc(pr.a.scq).status, ==, RNICPI_WC_SUCCESS);
  cert_placed(f, &pr, 64, mr->rkey);
  g_assert_cmpmem(target + 64, 128, src.data, 128);
  g_assert_cmphex(target[63], ==, 0);
  g_assert_cmphex(target[192], ==, 0);
  cert_ok(MEM->mr_dereg(mr));
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

static void
test_data_zero_based_read(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("RDMA Reads with zero-based regions at both ends: a Read from remote offset 64 "
                 "of a zero-based source brings exactly those bytes, and a Read whose local "
                 "SGE (a virtual address, as always) lies 64 bytes into a zero-based sink region "
                 "lands there, nothing before or after it");
  if (!cert_require(f, RNICPI_CAP_ZERO_BASED))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  enum { SZ = 512, N = 128 };
  /* Page-aligned: a kernel may require a zero-based region's start to keep
   * its offset in the page (uverbs does). */
  void *sv = NULL, *kv = NULL;
  g_assert_cmpint(posix_memalign(&sv, 4096, SZ), ==, 0);
  g_assert_cmpint(posix_memalign(&kv, 4096, SZ), ==, 0);
  uint8_t *src = sv, *sink = kv;
  memset(sink, 0, SZ);
  /* The source: zero-based, on the passive side. */
  for (size_t i = 0; i < SZ; i++)
    src[i] = (uint8_t) (i * 7 + 3);
  rnicpi_mr_t *smr;
  rnicpi_mr_attr_t sa = { .addr = src, .length = SZ, .iova = 0, .access = TARGET };
  cert_ok(MEM->mr_reg(pr.p.pd, &sa, &smr));
  /* The sink: zero-based too, on the requester (an iWARP Read sink is
   * remotely writable, RFC 5040 4.4). */
  rnicpi_mr_t *kmr;
  rnicpi_mr_attr_t ka = { .addr = sink, .length = SZ, .iova = 0, .access = TARGET };
  cert_ok(MEM->mr_reg(pr.a.pd, &ka, &kmr));

  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) (sink + 64), .length = N, .lkey = kmr->lkey };
  rnicpi_send_wr_t rd = { .wr_id = 0x2e0, .opcode = RNICPI_WR_RDMA_READ,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = 64, .rkey = smr->rkey };
  cert_ok(DAT->post_send(pr.a.qp, &rd));
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x2e0);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, N);
  g_assert_cmpmem(sink + 64, N, src + 64, N);
  for (size_t i = 0; i < SZ; i++)
    if (i < 64 || i >= 64 + N)
      g_assert_cmphex(sink[i], ==, 0);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  cert_ok(MEM->mr_dereg(kmr));
  cert_ok(MEM->mr_dereg(smr));
  free(sv);
  free(kv);
  cert_pair_free(&pr);
}

static void
test_data_atomics(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("64-bit fetch-and-add and compare-and-swap (matching and not): each returns the "
                 "old value into the local SGE and updates the target only when it should");
  if (!cert_require(f, RNICPI_CAP_ATOMICS))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t res, tgt;
  cert_buf_new(pr.a.pd, &res, 64, RW);
  cert_buf_new(pr.p.pd, &tgt, 64, TARGET | RNICPI_ACCESS_ATOMIC);
  uint64_t v = 1000, old;
  memcpy(tgt.data + 8, &v, 8);

  rnicpi_sge_t sge = cert_sge(&res, 0, 8);
  rnicpi_send_wr_t wr = { .wr_id = 0x61, .opcode = RNICPI_WR_ATOMIC_FETCH_ADD,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = cert_raddr(&tgt, 8), .rkey = tgt.mr->rkey,
                          .compare_add = 234 };
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_FETCH_ADD);
  memcpy(&old, res.data, 8);
  g_assert_cmpuint(old, ==, 1000);
  memcpy(&v, tgt.data + 8, 8);
  g_assert_cmpuint(v, ==, 1234);

  /* Compare matches: swapped. */
  wr.wr_id = 0x62;
  wr.opcode = RNICPI_WR_ATOMIC_CMP_SWP;
  wr.compare_add = 1234;
  wr.swap = 0xfeedfacecafebeefull;
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_CMP_SWP);
  memcpy(&old, res.data, 8);
  g_assert_cmpuint(old, ==, 1234);
  memcpy(&v, tgt.data + 8, 8);
  g_assert_cmphex(v, ==, 0xfeedfacecafebeefull);

  /* Compare differs: unchanged, old value still returned. */
  wr.wr_id = 0x63;
  wr.compare_add = 1;
  wr.swap = 2;
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  g_assert_cmpint(cert_wc(pr.a.scq).status, ==, RNICPI_WC_SUCCESS);
  memcpy(&old, res.data, 8);
  g_assert_cmphex(old, ==, 0xfeedfacecafebeefull);
  memcpy(&v, tgt.data + 8, 8);
  g_assert_cmphex(v, ==, 0xfeedfacecafebeefull);
  cert_buf_check_guards(&tgt);

  cert_buf_free(&res);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

static void
test_data_immediate(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("ABI 1.5 immediate data: RDMA_WRITE_IMM places its bytes, then completes one "
                 "receive with RNICPI_WC_WITH_IMM and the value; IMM_DATA alone completes a "
                 "zero-length receive the same way; the senders complete as RDMA_WRITE and SEND. "
                 "On iWARP (RFC 7306) the 8 bytes also land, in network order, in a receive "
                 "buffer of 8 bytes or more (exactly 8 included, byte_len 8), and a smaller one "
                 "is left untouched; on InfiniBand 32 bits travel, nothing lands in the receive "
                 "buffer and byte_len is the Write's length; an IMM_DATA with a gather list is "
                 "refused");
  if (!cert_require(f, RNICPI_CAP_IMMEDIATE))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  gboolean iw = f->caps.transport == RNICPI_TRANSPORT_IWARP;
  cert_buf_t src, dst, slot;
  cert_buf_new(pr.a.pd, &src, 2000, RW);
  cert_buf_new(pr.p.pd, &dst, 2000, TARGET);
  cert_buf_new(pr.p.pd, &slot, 32, RW);
  cert_buf_fill(&src, 23);
  memset(slot.data, 0xee, 32);

  cert_post_recv(pr.p.qp, &slot, 0, 16, 0x81);
  rnicpi_sge_t g = cert_sge(&src, 0, 2000);
  rnicpi_send_wr_t wr = { .wr_id = 0x82, .opcode = RNICPI_WR_RDMA_WRITE_IMM,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &g, .num_sge = 1,
                          .remote_addr = cert_raddr(&dst, 0), .rkey = dst.mr->rkey,
                          .imm_data = 0x1122334455667788ull };
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(r.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmphex(r.wr_id, ==, 0x81);
  g_assert_cmphex(r.flags & RNICPI_WC_WITH_IMM, ==, RNICPI_WC_WITH_IMM);
  /* The written bytes are placed when the receive completes. */
  cert_buf_check(&dst, 0, 2000, 23);
  static const uint8_t be[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
  if (iw) {
    g_assert_cmphex(r.imm_data, ==, 0x1122334455667788ull);
    g_assert_cmpuint(r.byte_len, ==, 8);
    g_assert_cmpmem(slot.data, 8, be, 8);
    for (size_t i = 8; i < 32; i++)
      g_assert_cmphex(slot.data[i], ==, 0xee);
  } else {
    /* InfiniBand: 32 bits travel, the length is the Write's. */
    g_assert_cmphex(r.imm_data, ==, 0x55667788u);
    g_assert_cmpuint(r.byte_len, ==, 2000);
    for (size_t i = 0; i < 32; i++)
      g_assert_cmphex(slot.data[i], ==, 0xee);
  }
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_RDMA_WRITE);
  g_assert_cmphex(s.wr_id, ==, 0x82);

  /* Immediate data alone, into a zero-length receive, then (iWARP) into
   * one too small to hold it. */
  cert_post_recv(pr.p.qp, &slot, 16, 0, 0x83);
  if (iw)
    cert_post_recv(pr.p.qp, &slot, 16, 4, 0x85);
  rnicpi_send_wr_t imm = { .wr_id = 0x84, .opcode = RNICPI_WR_IMM_DATA,
                           .flags = RNICPI_WR_SIGNALED | RNICPI_WR_SOLICITED, .imm_data = 0xabcd };
  cert_ok(DAT->post_send(pr.a.qp, &imm));
  r = cert_wc(pr.p.rcq);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmphex(r.wr_id, ==, 0x83);
  g_assert_cmphex(r.flags & RNICPI_WC_WITH_IMM, ==, RNICPI_WC_WITH_IMM);
  g_assert_cmphex(r.imm_data, ==, 0xabcd);
  g_assert_cmpuint(r.byte_len, ==, 0);
  s = cert_wc(pr.a.scq);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_SEND);
  g_assert_cmphex(s.wr_id, ==, 0x84);
  if (iw) {
    imm.wr_id = 0x86;
    imm.imm_data = UINT64_MAX;
    cert_ok(DAT->post_send(pr.a.qp, &imm));
    r = cert_wc(pr.p.rcq);
    g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmphex(r.wr_id, ==, 0x85);
    g_assert_cmphex(r.imm_data, ==, UINT64_MAX);
    g_assert_cmpuint(r.byte_len, ==, 0);
    for (size_t i = 8; i < 32; i++)
      g_assert_cmphex(slot.data[i], ==, 0xee);
    g_assert_cmphex(cert_wc(pr.a.scq).wr_id, ==, 0x86);
    /* A receive of exactly 8 bytes holds the value whole. */
    cert_post_recv(pr.p.qp, &slot, 24, 8, 0x87);
    imm.wr_id = 0x88;
    imm.imm_data = 0x0102030405060708ull;
    cert_ok(DAT->post_send(pr.a.qp, &imm));
    r = cert_wc(pr.p.rcq);
    g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmphex(r.wr_id, ==, 0x87);
    g_assert_cmphex(r.flags & RNICPI_WC_WITH_IMM, ==, RNICPI_WC_WITH_IMM);
    g_assert_cmphex(r.imm_data, ==, 0x0102030405060708ull);
    g_assert_cmpuint(r.byte_len, ==, 8);
    static const uint8_t be8[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    g_assert_cmpmem(slot.data + 24, 8, be8, 8);
    for (size_t i = 8; i < 24; i++)
      g_assert_cmphex(slot.data[i], ==, 0xee);
    g_assert_cmphex(cert_wc(pr.a.scq).wr_id, ==, 0x88);
    /* Immediate data carries no gather list. */
    imm.sg_list = &g;
    imm.num_sge = 1;
    g_assert_cmpint(DAT->post_send(pr.a.qp, &imm), !=, RNICPI_OK);
  }
  cert_buf_check_guards(&slot);
  cert_buf_check_guards(&dst);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_assert_cq_quiet(pr.a.scq);

  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_buf_free(&slot);
  cert_pair_free(&pr);
}

static void
test_data_unsignaled(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a successful unsignaled WR (RDMA Write, SEND) makes no send-CQ entry though it "
                 "takes effect; the signaled WR behind it does");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 256, RW);
  cert_buf_new(pr.p.pd, &dst, 256, TARGET);
  cert_buf_fill(&src, 19);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 128, 0x71, 0, cert_raddr(&dst, 0),
                 dst.mr->rkey);
  cert_post_recv(pr.p.qp, &dst, 128, 128, 0x72);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 128, 128, 0x73, 0, 0, 0);
  g_assert_cmphex(cert_wc(pr.p.rcq).wr_id, ==, 0x72);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 8, 0x74, RNICPI_WR_SIGNALED,
                 cert_raddr(&dst, 0), dst.mr->rkey);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmphex(s.wr_id, ==, 0x74);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  cert_assert_cq_quiet(pr.a.scq);
  /* The Write's completion at the initiator does not say it was placed
   * at the target (iWARP completes it once sent). */
  cert_placed(f, &pr, cert_raddr(&dst, 0), dst.mr->rkey);
  cert_buf_check(&dst, 0, 256, 19);

  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_data_order(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("32 sends mixed with RDMA Writes complete in posting order on the send CQ, and "
                 "the receives in posting order on the receive CQ, each message in its buffer");
  enum { N = 32 };
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, dst, tgt;
  cert_buf_new(pr.a.pd, &src, N * 16, RW);
  cert_buf_new(pr.p.pd, &dst, N * 16, RW);
  cert_buf_new(pr.p.pd, &tgt, N * 16, TARGET);
  cert_buf_fill(&src, 23);
  for (int i = 0; i < N; i++)
    cert_post_recv(pr.p.qp, &dst, (size_t) i * 16, 16, 0x800 + (uint64_t) i);
  for (int i = 0; i < N; i++) {
    cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, (size_t) i * 16, 16, 0x900 + (uint64_t) (2 * i),
                   RNICPI_WR_SIGNALED, 0, 0);
    cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, (size_t) i * 16, 16,
                   0x900 + (uint64_t) (2 * i + 1), RNICPI_WR_SIGNALED,
                   cert_raddr(&tgt, (size_t) i * 16), tgt.mr->rkey);
  }
  rnicpi_wc_t wc[2 * N];
  g_assert_cmpint(cert_poll(pr.a.scq, wc, 2 * N, CERT_TIMEOUT_MS), ==, 2 * N);
  for (int i = 0; i < 2 * N; i++) {
    g_assert_cmphex(wc[i].wr_id, ==, 0x900 + (uint64_t) i);
    g_assert_cmpint(wc[i].status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpint(wc[i].opcode, ==, i % 2 ? RNICPI_WC_RDMA_WRITE : RNICPI_WC_SEND);
  }
  g_assert_cmpint(cert_poll(pr.p.rcq, wc, N, CERT_TIMEOUT_MS), ==, N);
  for (int i = 0; i < N; i++) {
    g_assert_cmphex(wc[i].wr_id, ==, 0x800 + (uint64_t) i);
    g_assert_cmpint(wc[i].status, ==, RNICPI_WC_SUCCESS);
  }
  cert_placed(f, &pr, cert_raddr(&tgt, 0), tgt.mr->rkey);
  cert_buf_check(&dst, 0, N * 16, 23);
  cert_buf_check(&tgt, 0, N * 16, 23);

  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

static void
test_data_queue_full(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with queues of depth 4: the 5th outstanding receive is RNICPI_EFULL (not the "
                 "6th: the depth asked, exactly); sends "
                 "waiting for receives fill the send queue up to RNICPI_EFULL; once receives are "
                 "posted every accepted send completes exactly once, in order");
  rnicpi_qp_attr_t a = cert_qp_attr(f, NULL, NULL);
  a.max_send_wr = a.max_recv_wr = cert_min(4, f->caps.max_qp_wr);
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, &a))
    return;
  if (f->caps.transport != RNICPI_TRANSPORT_IB) {
    /* iWARP breaks the connection on a send without a receive (RFC 5040
     * 7.1: no untagged buffer), so only the receive side can be filled. */
    g_test_message("transport is not IB: the send queue part is not exercised");
  }
  enum { MAXPOST = 1024 };
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_new(pr.p.pd, &dst, 64 * MAXPOST, RW);
  cert_buf_fill(&src, 29);

  /* Receive queue of the active side (nothing will arrive there). */
  int nrecv = 0;
  rnicpi_status_t st = RNICPI_OK;
  while (nrecv < MAXPOST) {
    rnicpi_sge_t sge = cert_sge(&src, 0, 64);
    rnicpi_recv_wr_t wr = { .wr_id = 0x2000 + (uint64_t) nrecv, .sg_list = &sge, .num_sge = 1 };
    st = DAT->post_recv(pr.a.qp, &wr);
    if (st != RNICPI_OK)
      break;
    nrecv++;
  }
  cert_cmpst(st, RNICPI_EFULL);
  /* Exactly the depth asked: a CQ sized for it must hold every completion. */
  g_assert_cmpint(nrecv, ==, (int) a.max_recv_wr);

  int nsend = 0;
  if (f->caps.transport == RNICPI_TRANSPORT_IB) {
    /* The passive side has no receive: the first send waits (RNR), and
     * every send behind it waits with it. */
    while (nsend < MAXPOST) {
      rnicpi_sge_t sge = cert_sge(&src, 0, 64);
      rnicpi_send_wr_t wr = { .wr_id = 0x3000 + (uint64_t) nsend, .opcode = RNICPI_WR_SEND,
                              .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1 };
      st = DAT->post_send(pr.a.qp, &wr);
      if (st != RNICPI_OK)
        break;
      nsend++;
    }
    cert_cmpst(st, RNICPI_EFULL);
    g_assert_cmpint(nsend, ==, (int) a.max_send_wr);
    for (int i = 0; i < nsend; i++)
      cert_post_recv(pr.p.qp, &dst, (size_t) i * 64, 64, 0x4000 + (uint64_t) i);
    rnicpi_wc_t *wc = g_new0(rnicpi_wc_t, nsend);
    g_assert_cmpint(cert_poll(pr.a.scq, wc, nsend, CERT_TIMEOUT_MS), ==, nsend);
    for (int i = 0; i < nsend; i++) {
      g_assert_cmphex(wc[i].wr_id, ==, 0x3000 + (uint64_t) i);
      g_assert_cmpint(wc[i].status, ==, RNICPI_WC_SUCCESS);
    }
    g_assert_cmpint(cert_poll(pr.p.rcq, wc, nsend, CERT_TIMEOUT_MS), ==, nsend);
    g_free(wc);
    cert_assert_cq_quiet(pr.a.scq);
    cert_assert_cq_quiet(pr.p.rcq);
    cert_buf_check(&dst, (size_t) (nsend - 1) * 64, 64, 29);
  }

  /* The full receive queue flushes exactly once at disconnect. */
  cert_ok(CMV->disconnect(pr.a.qp, NULL, 0));
  uint64_t *ids = g_new(uint64_t, nrecv);
  for (int i = 0; i < nrecv; i++)
    ids[i] = 0x2000 + (uint64_t) i;
  cert_expect_flushed(pr.a.rcq, pr.a.ctx, ids, nrecv);
  g_free(ids);

  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

/* A Write long enough to be seen landing on any host (milliseconds). */
#define LONG_LEN (64u << 20)
#define LONG_BYTE 0x5a

typedef struct {
  rnicpi_qp_t *qp;
  const cert_buf_t *src;
  uint64_t raddr, rkey;
} long_write_t;

static gpointer
long_write(gpointer data)
{
  long_write_t *lw = data;
  cert_post_send(lw->qp, RNICPI_WR_RDMA_WRITE, lw->src, 0, LONG_LEN, 0x61, RNICPI_WR_SIGNALED,
                 lw->raddr, lw->rkey);
  return NULL;
}

/* A byte a transfer may be writing at this moment, read as a consumer
 * polling for it would (ThreadSanitizer is told the race is on purpose). */
static uint8_t
landing_peek(const uint8_t *p)
{
#ifdef ITAPI_TSAN_GLIB_H
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
#endif
  uint8_t v = __atomic_load_n(p, __ATOMIC_RELAXED);
#ifdef ITAPI_TSAN_GLIB_H
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
  return v;
}

static void
test_data_dereg_beside_write(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("The responder deregisters the region a 64 MiB RDMA Write is landing in: mr_dereg "
                 "succeeds and no byte of the region changes after it returned (the memory is the "
                 "consumer's again); the Write completes exactly once, successfully or with an error");
  unsigned seen = 0, n = 3;
  for (unsigned r = 0; r < n; r++) {
    cert_pair_t pr;
    if (!cert_pair_open(f, &pr, NULL))
      return;
    cert_buf_t src, dst;
    cert_buf_new(pr.a.pd, &src, LONG_LEN, RW);
    cert_buf_new(pr.p.pd, &dst, LONG_LEN, TARGET);
    memset(src.data, LONG_BYTE, LONG_LEN);
    long_write_t lw = { .qp = pr.a.qp, .src = &src, .raddr = cert_raddr(&dst, 0), .rkey = dst.mr->rkey };
    /* A byte a quarter of the way in: a copy may store its first bytes
     * last (glibc's memcpy keeps them aside to align its loop). */
    const uint8_t *part = &dst.data[LONG_LEN / 4], *last = &dst.data[LONG_LEN - 1];
    GThread *t = g_thread_new("long-write", long_write, &lw);
    cert_limit_t w;
    cert_limit_begin(&w, "a long RDMA Write to start landing", (gint64) CERT_TIMEOUT_MS * 1000);
    while (landing_peek(part) == 0 && !cert_limit_over(&w))
      ;
    cert_limit_end(&w);
    seen += landing_peek(part) != 0 && landing_peek(last) == 0;
    cert_ok(MEM->mr_dereg(dst.mr));
    dst.mr = NULL;
    uint8_t at_dereg = landing_peek(last);
    g_thread_join(t);
    rnicpi_wc_t wc = cert_wc(pr.a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0x61);
    /* Give a transfer that goes on behind the deregistration's back time
     * to show. */
    g_usleep(50000);
    uint8_t after = landing_peek(last);
    if (after != at_dereg)
      g_error("round %u: the last byte of a 64 MiB RDMA Write's target was 0x%02x when mr_dereg returned and "
              "0x%02x after the Write completed (status %d): the transfer wrote into the region after it "
              "was deregistered", r + 1, at_dereg, after, (int) wc.status);
    cert_buf_free(&src);
    cert_buf_free(&dst);
    cert_pair_free(&pr);
  }
  g_test_message("%u of %u rounds deregistered the region while the Write was landing", seen, n);
}

void
cert_register_data(void)
{
  cert_add("/rnicpi/data/send-recv", test_data_send_recv);
  cert_add("/rnicpi/data/multi-sge", test_data_multi_sge);
  cert_add("/rnicpi/data/zero-length", test_data_zero_length);
  cert_add("/rnicpi/data/rdma-write", test_data_rdma_write);
  cert_add("/rnicpi/data/rdma-read", test_data_rdma_read);
  cert_add("/rnicpi/data/zero-based", test_data_zero_based);
  cert_add("/rnicpi/data/zero-based-read", test_data_zero_based_read);
  cert_add("/rnicpi/data/atomics", test_data_atomics);
  cert_add("/rnicpi/data/immediate", test_data_immediate);
  cert_add("/rnicpi/data/unsignaled", test_data_unsignaled);
  cert_add("/rnicpi/data/order", test_data_order);
  cert_add("/rnicpi/data/queue-full", test_data_queue_full);
  cert_add("/rnicpi/data/dereg-beside-write", test_data_dereg_beside_write);
}
