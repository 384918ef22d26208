/*
 * cert-rnicpi: RNICPI_WR_LOCAL_FENCE (ABI 1.2), "wait for every earlier
 * work request of the queue".  A request that reads local memory an
 * earlier request writes, as a Send whose source is the sink of the RDMA
 * Read before it, must see what that request wrote: the Read's bytes,
 * never the ones its sink held before (the local fence of the InfiniBand
 * and RDMAC verbs).
 *
 * SPDX-License-Identifier: MIT
 */
#include <inttypes.h>
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define REMOTE (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define TGT (RW | REMOTE)

/* A Read long enough to be still under way, on any transport that ignores
 * the fence, when the requests behind it are started; the Send and the
 * Write take the last bytes it places. */
#define FENCE_READ (1024u * 1024)
#define FENCE_TAIL (64u * 1024)
#define FENCE_ROUNDS 8

/* The seed of round @i's remote bytes: never the seed before it. */
static uint8_t
round_seed(int i)
{
  return (uint8_t) (0x30 + 11 * i);
}

static void
test_local_fence(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("RNICPI_WR_LOCAL_FENCE waits for every earlier work request of the queue: "
                 "an RDMA Read of 1 MiB into a local buffer, then a fenced Send and a fenced "
                 "RDMA Write whose source is the last 64 KiB of that buffer, eight times over "
                 "with new remote bytes each time: the peer receives, and its region holds, "
                 "the bytes each Read fetched, never what the buffer held before; the three "
                 "complete successfully in order");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  if (FENCE_READ > f->caps.max_mr_size || FENCE_READ > f->caps.max_msg_size) {
    cert_pair_free(&pr);
    g_test_skip("max_mr_size or max_msg_size below the test's 1 MiB Read");
    return;
  }
  g_assert_cmpuint(pr.a.ord, >=, 1);
  cert_buf_t src, mid, rcv, tgt;
  cert_buf_new(pr.p.pd, &src, FENCE_READ, TGT);
  cert_buf_new(pr.a.pd, &mid, FENCE_READ, cert_sink_access(f) | RNICPI_ACCESS_LOCAL_READ);
  cert_buf_new(pr.p.pd, &rcv, FENCE_TAIL, RW);
  cert_buf_new(pr.p.pd, &tgt, FENCE_TAIL, TGT);
  cert_buf_fill(&mid, 0xee);
  const size_t tail = FENCE_READ - FENCE_TAIL;
  const uint32_t fl = RNICPI_WR_SIGNALED | RNICPI_WR_LOCAL_FENCE;

  for (int i = 0; i < FENCE_ROUNDS; i++) {
    uint8_t seed = round_seed(i);
    cert_buf_fill(&src, seed);
    memset(rcv.data, 0, FENCE_TAIL);
    memset(tgt.data, 0, FENCE_TAIL);
    cert_post_recv(pr.p.qp, &rcv, 0, FENCE_TAIL, 0x5e00 + (uint64_t) i);
    cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &mid, 0, FENCE_READ, 0xf100 + (uint64_t) i,
                   RNICPI_WR_SIGNALED, cert_raddr(&src, 0), src.mr->rkey);
    cert_post_send(pr.a.qp, RNICPI_WR_SEND, &mid, tail, FENCE_TAIL, 0xf200 + (uint64_t) i, fl,
                   0, 0);
    cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &mid, tail, FENCE_TAIL, 0xf300 + (uint64_t) i,
                   fl, cert_raddr(&tgt, 0), tgt.mr->rkey);
    static const rnicpi_wc_opcode_t ops[] = { RNICPI_WC_RDMA_READ, RNICPI_WC_SEND,
                                              RNICPI_WC_RDMA_WRITE };
    for (int k = 0; k < 3; k++) {
      rnicpi_wc_t wc = cert_wc(pr.a.scq);
      g_assert_cmphex(wc.wr_id, ==, 0xf100 + 0x100 * (uint64_t) k + (uint64_t) i);
      g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
      g_assert_cmpint(wc.opcode, ==, ops[k]);
    }
    rnicpi_wc_t wc = cert_wc(pr.p.rcq);
    g_assert_cmphex(wc.wr_id, ==, 0x5e00 + (uint64_t) i);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpuint(wc.byte_len, ==, FENCE_TAIL);
    cert_placed(f, &pr, cert_raddr(&tgt, 0), tgt.mr->rkey);
    for (size_t j = 0; j < FENCE_TAIL; j++) {
      uint8_t want = cert_pattern(seed, tail + j);
      if (rcv.data[j] != want || tgt.data[j] != want)
        g_test_message("round %d: byte %zu of the fenced requests' source: received 0x%02x, "
                       "written 0x%02x, the Read fetched 0x%02x", i, tail + j, rcv.data[j],
                       tgt.data[j], want);
      g_assert_cmphex(rcv.data[j], ==, want);
      g_assert_cmphex(tgt.data[j], ==, want);
    }
  }
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_buf_check_guards(&mid);
  cert_buf_check_guards(&rcv);
  cert_buf_check_guards(&tgt);
  cert_buf_free(&tgt);
  cert_buf_free(&rcv);
  cert_buf_free(&mid);
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

/* ---- The same with the peer in another process --------------------------
 * vp/emul moves the data of a connection between processes by other paths
 * than in-process ones, chosen at the connect by its knobs: cross-memory
 * attach (a Read done by this process at once), the peer's region mapped
 * here, or neither (the Read a frame of the ring, its answer later).
 * Other providers ignore the knobs: the three runs are the same for them. */

static void
test_xproc_local_fence(cert_t *f, gconstpointer data)
{
  const char *mode = data;
  g_autofree char *summary = g_strdup_printf(
    "RNICPI_WR_LOCAL_FENCE with the peer in another process (vp/emul: %s): an RDMA Read of "
    "1 MiB of the peer's region into a local buffer, then a fenced Send and a fenced RDMA "
    "Write whose source is the last 64 KiB of that buffer, eight times over with new bytes "
    "in the peer's region each time: the peer receives, and its target holds, the bytes each "
    "Read fetched; the three complete successfully in order", mode);
  g_test_summary(summary);
  const char *const *env = cert_xproc_env(mode);
  if (FENCE_READ > f->caps.max_mr_size || FENCE_READ > f->caps.max_msg_size) {
    g_test_skip("max_mr_size or max_msg_size below the test's 1 MiB Read");
    return;
  }
  /* The knobs are read at the connect, by the requester: this process. */
  for (int i = 0; env[i] != NULL; i += 2)
    g_setenv(env[i], env[i + 1], TRUE);
  cert_peer_t pe;
  gboolean up = cert_peer_open_env(f, &pe, cert_peer_rights(f), env);
  for (int i = 0; env[i] != NULL; i += 2)
    g_unsetenv(env[i]);
  if (!up)
    return;
  gboolean shared = strcmp(mode, "mapped") == 0;
  cert_xreg_t src = cert_peer_reg(&pe, 0, 0, FENCE_READ, TGT, shared);
  cert_peer_reg(&pe, 1, 0, FENCE_TAIL, RW, FALSE); /* the receives */
  cert_xreg_t tgt = cert_peer_reg(&pe, 2, 0, FENCE_TAIL, TGT, shared);
  cert_buf_t mid;
  cert_buf_new(pe.a.pd, &mid, FENCE_READ, cert_sink_access(f) | RNICPI_ACCESS_LOCAL_READ);
  cert_buf_fill(&mid, 0xee);
  const size_t tail = FENCE_READ - FENCE_TAIL;
  const uint32_t fl = RNICPI_WR_SIGNALED | RNICPI_WR_LOCAL_FENCE;

  for (int i = 0; i < FENCE_ROUNDS; i++) {
    uint8_t seed = round_seed(i);
    cert_peer_do(&pe, "fill 0 %u", seed);
    cert_peer_do(&pe, "zero 1 0 %u", FENCE_TAIL);
    cert_peer_do(&pe, "zero 2 0 %u", FENCE_TAIL);
    cert_peer_do(&pe, "recv 1 0 %u %u", FENCE_TAIL, 0x5e00 + i);
    cert_post_send(pe.a.qp, RNICPI_WR_RDMA_READ, &mid, 0, FENCE_READ, 0xf100 + (uint64_t) i,
                   RNICPI_WR_SIGNALED, src.addr, src.rkey);
    cert_post_send(pe.a.qp, RNICPI_WR_SEND, &mid, tail, FENCE_TAIL, 0xf200 + (uint64_t) i, fl,
                   0, 0);
    cert_post_send(pe.a.qp, RNICPI_WR_RDMA_WRITE, &mid, tail, FENCE_TAIL, 0xf300 + (uint64_t) i,
                   fl, tgt.addr, tgt.rkey);
    static const rnicpi_wc_opcode_t ops[] = { RNICPI_WC_RDMA_READ, RNICPI_WC_SEND,
                                              RNICPI_WC_RDMA_WRITE };
    for (int k = 0; k < 3; k++) {
      rnicpi_wc_t wc = cert_wc(pe.a.scq);
      g_assert_cmphex(wc.wr_id, ==, 0xf100 + 0x100 * (uint64_t) k + (uint64_t) i);
      g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
      g_assert_cmpint(wc.opcode, ==, ops[k]);
    }
    g_autofree char *r = cert_peer_call(&pe, "wc r %d", CERT_TIMEOUT_MS);
    g_autofree char *want = g_strdup_printf("0x%x %d %d %u ", 0x5e00 + i, RNICPI_WC_SUCCESS,
                                            RNICPI_WC_RECV, FENCE_TAIL);
    if (!g_str_has_prefix(r, want))
      g_test_message("round %d: the peer's receive completion: %s, expected %s...", i, r, want);
    g_assert_true(g_str_has_prefix(r, want));
    cert_placed_by(f, &pe.a, tgt.addr, tgt.rkey);
    /* The bytes the Read fetched: the pattern from offset @tail on. */
    cert_peer_do(&pe, "check 1 0 %u %u %zu", FENCE_TAIL, seed, tail);
    cert_peer_do(&pe, "check 2 0 %u %u %zu", FENCE_TAIL, seed, tail);
  }
  cert_assert_cq_quiet(pe.a.scq);
  cert_buf_check_guards(&mid);
  cert_buf_free(&mid);
  cert_peer_close(&pe);
}

void
cert_register_fence(void)
{
  cert_add("/rnicpi/data/local-fence-after-read", test_local_fence);
  cert_add_xproc("/rnicpi/xproc/local-fence-after-read", test_xproc_local_fence);
}
