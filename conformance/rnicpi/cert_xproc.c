/*
 * cert-rnicpi /rnicpi/xproc: the rules of keys, protection zones, bounds,
 * rights, receive lengths, atomics, invalidation and completions again,
 * with the passive side in another process (cert_peer.c).  A provider may
 * move data between processes by another path than within one (vp/emul:
 * cross-memory attach, a mapped region, a bounce ring); each path keeps
 * every rule.
 *
 * SPDX-License-Identifier: MIT
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define REMOTE (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define BAD_ID 0xbad0
#define LEN 4096
/* Good accesses before the one under test in the "warm" cases, and the
 * pause before each: a provider may learn a region asynchronously (vp/emul
 * maps a peer's shared region after the first access asks for it). */
#define WARM_ACCESSES 3
#define WARM_GAP_US 20000

typedef cert_xreg_t xreg_t;

/* A region of @len zero bytes in the peer's own memory (cert_buf_new). */
static xreg_t
xreg(cert_peer_t *pe, int slot, int pd, size_t len, uint32_t access)
{
  return cert_peer_reg(pe, slot, pd, len, access, FALSE);
}

/* One signaled request of this side that must succeed. */
static void
x_ok(cert_peer_t *pe, rnicpi_wr_opcode_t op, const cert_buf_t *b, size_t off, uint32_t len,
     uint64_t raddr, uint64_t rkey)
{
  cert_post_send(pe->a.qp, op, b, off, len, 0x600d, RNICPI_WR_SIGNALED, raddr, rkey);
  rnicpi_wc_t wc = cert_wc(pe->a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x600d);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmphex(wc.qp_ctx, ==, pe->a.ctx);
}

/* As cert_expect_refused: this side's request @id refused by the peer. */
static void
x_refused(cert_t *f, cert_peer_t *pe, uint64_t id, gboolean write)
{
  rnicpi_wc_t wc = cert_wc(pe->a.scq);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmphex(wc.qp_ctx, ==, pe->a.ctx);
  gboolean at_sent = write && !(f->caps.features & RNICPI_CAP_PLACED_COMPLETION);
  if (at_sent && (wc.status == RNICPI_WC_SUCCESS || wc.status == RNICPI_WC_WR_FLUSH_ERR))
    g_test_message("requester completion status %d (completed at transmission)", wc.status);
  else
    g_assert_cmpint(wc.status, ==, RNICPI_WC_REM_ACCESS_ERR);
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pe->a.ctx));
  cert_peer_broken(pe, RNICPI_ASYNC_QP_ACCESS_ERR);
  cert_wait_state(pe->a.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pe->a.scq);
}

static void
peer_check(cert_peer_t *pe, const xreg_t *r, size_t off, size_t len, int seed)
{
  if (seed < 0)
    cert_peer_do(pe, "check %d %zu %zu zero", r->slot, off, len);
  else
    cert_peer_do(pe, "check %d %zu %zu %d", r->slot, off, len, seed);
}

/* ---- Data moves --------------------------------------------------------- */

static void
test_xproc_transfer(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with the passive side in another process: Sends of 64 bytes and of 192 KiB "
                 "land whole in the peer's receives (byte_len, opcode RECV), RDMA Writes and "
                 "Reads of 192 KiB move every byte both ways, three times each (a provider may take "
                 "another path once it knows the region), into a region of private memory and "
                 "one of shared memory (a memfd mapping another process can map), and no guard "
                 "byte is touched");
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  enum { BIG = 192 << 10 };
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, BIG, RW | REMOTE);
  xreg_t rb = xreg(&pe, 0, 0, BIG, RW);
  xreg_t tgts[2] = { xreg(&pe, 1, 0, BIG, RW | REMOTE),
                     cert_peer_reg(&pe, 2, 0, BIG, RW | REMOTE, TRUE) };

  const uint32_t sizes[] = { 64, BIG };
  for (int i = 0; i < 2; i++) {
    cert_buf_fill(&src, (uint8_t) (10 + i));
    cert_peer_do(&pe, "recv 0 0 %d 0x%x", BIG, 0x4ec0 + i);
    x_ok(&pe, RNICPI_WR_SEND, &src, 0, sizes[i], 0, 0);
    g_autofree char *r = cert_peer_call(&pe, "wc r %d", CERT_TIMEOUT_MS);
    g_autofree char *want = g_strdup_printf("0x%x %d %d %u 0x0 0x0", 0x4ec0 + i,
                                            RNICPI_WC_SUCCESS, RNICPI_WC_RECV, sizes[i]);
    g_assert_cmpstr(r, ==, want);
    peer_check(&pe, &rb, 0, sizes[i], 10 + i);
  }
  for (int round = 0; round < 6; round++) {
    const xreg_t *t = &tgts[round / 3];
    g_usleep(WARM_GAP_US);
    cert_buf_fill(&src, (uint8_t) (20 + round));
    x_ok(&pe, RNICPI_WR_RDMA_WRITE, &src, 0, BIG, t->addr, t->rkey);
    cert_placed_by(f, &pe.a, t->addr, t->rkey);
    peer_check(&pe, t, 0, BIG, 20 + round);
    cert_peer_do(&pe, "fill %d %d", t->slot, 30 + round);
    memset(src.data, 0, src.len);
    x_ok(&pe, RNICPI_WR_RDMA_READ, &src, 0, BIG, t->addr, t->rkey);
    cert_buf_check(&src, 0, BIG, (uint8_t) (30 + round));
    cert_buf_check_guards(&src);
  }
  cert_assert_cq_quiet(pe.a.scq);
  cert_buf_free(&src);
  cert_peer_close(&pe);
}

/* ---- Refusals: key, domain, rights, bounds, lifetime ----------------- */

typedef enum {
  XR_KEY_BYTE,   /* the key's consumer byte changed */
  XR_OTHER_PD,   /* a region of another domain of the peer */
  XR_QP_RIGHTS,  /* the peer's QP lacks the right, the region has it */
  XR_REGION_RIGHTS, /* the region lacks the right (it has the other), the QP has it */
  XR_LONGER,     /* longer than the region, from its start */
  XR_PAST_END,   /* starts inside, ends 16 bytes past the end */
  XR_DEREGISTERED, /* the region was deregistered since the last access */
} xr_case_t;

typedef struct xr_test {
  xr_case_t c;
  gboolean write;
  gboolean warm; /* a good access of the same kind first */
} xr_test_t;

static void
test_xproc_refused(cert_t *f, gconstpointer data)
{
  const xr_test_t *t = data;
  static const char *const what[] = {
    [XR_KEY_BYTE] = "the region's key changed only in its key byte",
    [XR_OTHER_PD] = "an in-bounds access to a region of another protection domain of the peer",
    [XR_QP_RIGHTS] = "an access the region allows but the peer's QP was created without",
    [XR_REGION_RIGHTS] = "an access the peer's QP allows, to a region with the other right",
    [XR_LONGER] = "an access one byte longer than the region, from its first byte",
    [XR_PAST_END] = "an access that starts inside the region and ends 16 bytes past it",
    [XR_DEREGISTERED] = "an access through the key of a region deregistered since the last one",
  };
  g_autofree char *summary = g_strdup_printf(
    "with the passive side in another process, %s, by an RDMA %s%s: the requester completes it "
    "with RNICPI_WC_REM_ACCESS_ERR, both QPs are broken and in ERROR, the peer gets "
    "RNICPI_ASYNC_QP_ACCESS_ERR, and no byte of the peer's memory changes (nor of the Read "
    "sink)", what[t->c], t->write ? "Write" : "Read",
    t->warm ? " after a good one through the same key (the region in shared memory)" : "");
  g_test_summary(summary);
  uint32_t need = t->write ? RNICPI_ACCESS_REMOTE_WRITE : RNICPI_ACCESS_REMOTE_READ;
  uint32_t qp_rights = t->c == XR_QP_RIGHTS ? (cert_peer_rights(f) & ~need) : cert_peer_rights(f);
  /* A good access first needs the right on the QP: warm up with the other kind. */
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, qp_rights))
    return;
  rnicpi_wr_opcode_t op = t->write ? RNICPI_WR_RDMA_WRITE : RNICPI_WR_RDMA_READ;
  int pd = t->c == XR_OTHER_PD ? (int) cert_peer_u64(&pe, "pd") : 0;
  /* Warm: in shared memory, where vp/emul remembers the region after the
   * good access and checks the next one by that memory (its fast path). */
  uint32_t access = RW | (t->c == XR_REGION_RIGHTS ? REMOTE & ~need : REMOTE);
  xreg_t r = cert_peer_reg(&pe, 0, pd, LEN, access, t->warm);
  cert_peer_do(&pe, "fill 0 7");
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, LEN + 64, RW | REMOTE);
  cert_buf_fill(&src, 9);

  if (t->warm) {
    /* Good accesses through the same key (of a kind the QP allows), a
     * moment apart: vp/emul asks for the region's mapping at the first,
     * maps it at the next, and checks the one after by what it kept. */
    gboolean other = t->c == XR_QP_RIGHTS || t->c == XR_REGION_RIGHTS;
    rnicpi_wr_opcode_t wop = other ? (t->write ? RNICPI_WR_RDMA_READ : RNICPI_WR_RDMA_WRITE) : op;
    for (int i = 0; i < WARM_ACCESSES; i++) {
      g_usleep(WARM_GAP_US);
      if (wop == RNICPI_WR_RDMA_WRITE) {
        x_ok(&pe, wop, &src, 0, 64, r.addr, r.rkey);
        cert_placed_by(f, &pe.a, r.addr, r.rkey);
        peer_check(&pe, &r, 0, 64, 9);
      } else {
        x_ok(&pe, wop, &src, LEN, 64, r.addr, r.rkey);
        cert_buf_check(&src, LEN, 64, 7);
      }
    }
    cert_peer_do(&pe, "fill 0 7");
    cert_buf_fill(&src, 9);
  }

  uint64_t raddr = r.addr, rkey = r.rkey;
  uint32_t len = 64;
  switch (t->c) {
  case XR_KEY_BYTE:
    rkey = (rkey & ~(uint64_t) 0xff) | (uint8_t) (rkey + 1);
    break;
  case XR_LONGER:
    len = LEN + 1;
    break;
  case XR_PAST_END:
    raddr = r.addr + LEN - 48;
    break;
  case XR_DEREGISTERED:
    cert_peer_do(&pe, "dereg 0");
    break;
  default:
    break;
  }
  cert_post_send(pe.a.qp, op, &src, 0, len, BAD_ID, RNICPI_WR_SIGNALED, raddr, rkey);
  x_refused(f, &pe, BAD_ID, t->write);
  peer_check(&pe, &r, 0, LEN, 7);
  if (!t->write)
    cert_buf_check(&src, 0, LEN + 64, 9);
  cert_buf_check_guards(&src);
  cert_buf_free(&src);
  cert_peer_close(&pe);
}

/* ---- Receives ------------------------------------------------------------ */

static void
test_xproc_recv_too_long(cert_t *f, gconstpointer data)
{
  uint32_t n = GPOINTER_TO_UINT(data);
  g_autofree char *summary = g_strdup_printf(
    "with the passive side in another process, a Send of %u bytes into a receive of %u: the "
    "peer completes the receive with RNICPI_WC_LOC_LEN_ERR and writes nothing past it, the "
    "requester completes the Send with an error (where completions mean placement), both QPs are broken, the peer's event is "
    "RNICPI_ASYNC_QP_FATAL of cause PROTOCOL and the requester's cause REMOTE_RECV_LENGTH",
    n + 1, n);
  g_test_summary(summary);
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, n + 1, RW);
  cert_buf_fill(&src, 5);
  xreg(&pe, 0, 0, n + 64, RW);
  cert_peer_do(&pe, "recv 0 0 %u 0x4ec", n);
  cert_post_send(pe.a.qp, RNICPI_WR_SEND, &src, 0, n + 1, BAD_ID, RNICPI_WR_SIGNALED, 0, 0);
  g_autofree char *r = cert_peer_call(&pe, "wc r %d", CERT_TIMEOUT_MS);
  g_autofree char *want = g_strdup_printf("0x4ec %d", RNICPI_WC_LOC_LEN_ERR);
  g_assert_true(g_str_has_prefix(r, want));
  rnicpi_wc_t wc = cert_wc(pe.a.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  if (f->caps.features & RNICPI_CAP_PLACED_COMPLETION) {
    g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
    g_assert_cmpint(wc.status, !=, RNICPI_WC_WR_FLUSH_ERR);
  } else { /* completed when sent, the Terminate comes after */
    g_test_message("requester completion status %d (completions at transmission)", wc.status);
  }
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pe.a.ctx));
  cert_peer_broken(&pe, RNICPI_ASYNC_QP_FATAL);
  cert_wait_qp_async(f, RNICPI_AE_REMOTE_RECV_LENGTH, pe.a.ctx);
  cert_peer_do(&pe, "check 0 %u 64 zero", n);
  cert_buf_free(&src);
  cert_peer_close(&pe);
}

static void
test_xproc_recv_two_segments(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with the passive side in another process, Sends of 48 and of 40000 bytes "
                 "into receives of two segments (32 + 64 and 32 + 65536 bytes, apart in one "
                 "region): the first 32 bytes fill the first segment, the rest the second, "
                 "nothing between or after them changes");
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  if (cert_min(2, f->caps.max_recv_sge) < 2) {
    g_test_skip("the device takes one scatter entry per receive");
    cert_peer_close(&pe);
    return;
  }
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, 40000, RW);
  cert_buf_fill(&src, 6);
  xreg_t rb = xreg(&pe, 0, 0, 128 + 65536, RW);
  const uint32_t sizes[] = { 48, 40000 }, second[] = { 64, 65536 };
  for (int i = 0; i < 2; i++) {
    /* Segments [0, 32) and [96, 96 + second[i]) of one region. */
    cert_peer_do(&pe, "recv2 0 0 32 96 %u 0x%x", second[i], 0x4ec0 + i);
    x_ok(&pe, RNICPI_WR_SEND, &src, 0, sizes[i], 0, 0);
    g_autofree char *r = cert_peer_call(&pe, "wc r %d", CERT_TIMEOUT_MS);
    g_autofree char *want = g_strdup_printf("0x%x %d %d %u ", 0x4ec0 + i, RNICPI_WC_SUCCESS,
                                            RNICPI_WC_RECV, sizes[i]);
    g_assert_true(g_str_has_prefix(r, want));
    uint32_t rest = sizes[i] - 32;
    peer_check(&pe, &rb, 0, 32, 6);
    peer_check(&pe, &rb, 32, 64, -1);
    cert_peer_do(&pe, "check 0 96 %u 6 32", rest);
    peer_check(&pe, &rb, 96 + rest, 128 + 65536 - 96 - rest, -1);
    cert_peer_do(&pe, "zero 0 0 %u", 128 + 65536);
  }
  cert_buf_free(&src);
  cert_peer_close(&pe);
}

/* ---- Ordering and completions ---------------------------------------- */

static void
test_xproc_send_waits(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with the passive side in another process and one receive posted, two Sends "
                 "back to back: the first completes successfully; on InfiniBand the second "
                 "completes only once the peer posts a receive (then successfully, its bytes "
                 "in place); on iWARP the connection breaks (no untagged buffer) and the "
                 "second completes with an error where completions mean placement");
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, 128, RW);
  cert_buf_fill(&src, 8);
  xreg(&pe, 0, 0, 128, RW);
  cert_peer_do(&pe, "recv 0 0 64 0x4e1");
  cert_post_send(pe.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0x5e1, RNICPI_WR_SIGNALED, 0, 0);
  cert_post_send(pe.a.qp, RNICPI_WR_SEND, &src, 64, 64, 0x5e2, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(pe.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x5e1);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  if (f->caps.transport == RNICPI_TRANSPORT_IB) {
    cert_assert_cq_quiet(pe.a.scq);
    cert_peer_do(&pe, "recv 0 64 64 0x4e2");
    wc = cert_wc(pe.a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0x5e2);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    for (int i = 0; i < 2; i++) {
      g_autofree char *r = cert_peer_call(&pe, "wc r %d", CERT_TIMEOUT_MS);
      g_autofree char *want = g_strdup_printf("0x%x %d %d 64 ", 0x4e1 + i, RNICPI_WC_SUCCESS,
                                              RNICPI_WC_RECV);
      g_assert_true(g_str_has_prefix(r, want));
    }
    g_autofree char *v = cert_peer_call(&pe, "get64 0 64");
    uint64_t want64;
    memcpy(&want64, src.data + 64, 8);
    g_assert_cmphex(g_ascii_strtoull(v, NULL, 0), ==, want64);
  } else {
    wc = cert_wc(pe.a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0x5e2);
    if (f->caps.features & RNICPI_CAP_PLACED_COMPLETION)
      g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
    else /* completed when sent, the Terminate comes after */
      g_test_message("second Send: status %d (completions at transmission)", wc.status);
    g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pe.a.ctx));
    cert_peer_broken(&pe, 0);
  }
  cert_assert_cq_quiet(pe.a.scq);
  cert_buf_free(&src);
  cert_peer_close(&pe);
}

static void
test_xproc_atomics(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with the passive side in another process: Fetch and Add returns the value "
                 "before and adds; Compare and Swap that fails returns the value and changes "
                 "nothing; one that matches returns it and swaps");
  if (!cert_require(f, RNICPI_CAP_ATOMICS))
    return;
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  xreg_t t = xreg(&pe, 0, 0, 64, RW | RNICPI_ACCESS_ATOMIC);
  cert_peer_do(&pe, "put64 0 8 0x1000");
  cert_buf_t res;
  cert_buf_new(pe.a.pd, &res, 8, RW);
  struct {
    rnicpi_wr_opcode_t op;
    uint64_t cmp, swap, before, after;
  } steps[] = {
    { RNICPI_WR_ATOMIC_FETCH_ADD, 5, 0, 0x1000, 0x1005 },
    { RNICPI_WR_ATOMIC_CMP_SWP, 0x1000, 0x77, 0x1005, 0x1005 },
    { RNICPI_WR_ATOMIC_CMP_SWP, 0x1005, 0x77, 0x1005, 0x77 },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(steps); i++) {
    memset(res.data, 0xee, 8);
    rnicpi_sge_t sge = cert_sge(&res, 0, 8);
    rnicpi_send_wr_t wr = { .wr_id = 0xa70 + i, .opcode = steps[i].op,
                            .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                            .remote_addr = t.addr + 8, .rkey = t.rkey,
                            .compare_add = steps[i].cmp, .swap = steps[i].swap };
    cert_ok(DAT->post_send(pe.a.qp, &wr));
    rnicpi_wc_t wc = cert_wc(pe.a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0xa70 + i);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    uint64_t got;
    memcpy(&got, res.data, 8);
    g_assert_cmphex(got, ==, steps[i].before);
    g_assert_cmphex(cert_peer_u64(&pe, "get64 0 8"), ==, steps[i].after);
  }
  g_assert_cmphex(cert_peer_u64(&pe, "get64 0 0"), ==, 0);
  g_assert_cmphex(cert_peer_u64(&pe, "get64 0 16"), ==, 0);
  cert_buf_free(&res);
  cert_peer_close(&pe);
}

/* One atomic of this side at @raddr/@rkey into @res (8 bytes), id @id. */
static void
x_atomic(cert_peer_t *pe, rnicpi_wr_opcode_t op, const cert_buf_t *res, uint64_t raddr,
         uint64_t rkey, uint64_t cmp, uint64_t swap, uint64_t id)
{
  rnicpi_sge_t sge = cert_sge(res, 0, 8);
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = op, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1, .remote_addr = raddr, .rkey = rkey,
                          .compare_add = cmp, .swap = swap };
  cert_ok(DAT->post_send(pe->a.qp, &wr));
}

typedef struct xam_test {
  rnicpi_wr_opcode_t op;
  gboolean warm; /* shared memory, good Reads and atomics through the key first */
} xam_test_t;

static void
test_xproc_atomic_misaligned(cert_t *f, gconstpointer data)
{
  const xam_test_t *t = data;
  gboolean fadd = t->op == RNICPI_WR_ATOMIC_FETCH_ADD;
  g_autofree char *summary = g_strdup_printf(
    "with the passive side in another process, a %s on a target address 4 bytes past an 8-byte "
    "boundary, inside a region with REMOTE ATOMIC rights%s: as in-process "
    "(/rnicpi/bounds/atomic-unaligned), it completes in error (not success, not a flush), the "
    "requester enters ERROR and completes nothing more, and neither the peer's region (nor its "
    "guard bytes) nor the result buffer changes",
    fadd ? "Fetch and Add" : "Compare and Swap whose compare matches",
    t->warm ? ", after good RDMA Reads and atomics through the same key (the region in shared "
              "memory, so a provider that maps it meets the misaligned one on that path)" : "");
  g_test_summary(summary);
  if (!cert_require(f, RNICPI_CAP_ATOMICS))
    return;
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  xreg_t r = cert_peer_reg(&pe, 0, 0, 64, RW | REMOTE | RNICPI_ACCESS_ATOMIC, t->warm);
  cert_peer_do(&pe, "fill 0 7");
  cert_buf_t res, sink;
  cert_buf_new(pe.a.pd, &res, 8, RW);
  cert_buf_new(pe.a.pd, &sink, 64, cert_sink_access(f));
  uint64_t word; /* the peer's aligned word at offset 8, as filled */
  for (int i = 0; i < 8; i++)
    ((uint8_t *) &word)[i] = cert_pattern(7, 8 + (size_t) i);

  if (t->warm) {
    /* Good accesses a moment apart that change nothing: a Read, a Fetch
     * and Add of 0 and a Compare and Swap that does not match. */
    for (int i = 0; i < WARM_ACCESSES; i++) {
      g_usleep(WARM_GAP_US);
      x_ok(&pe, RNICPI_WR_RDMA_READ, &sink, 0, 64, r.addr, r.rkey);
      cert_buf_check(&sink, 0, 64, 7);
      rnicpi_wr_opcode_t ops[] = { RNICPI_WR_ATOMIC_FETCH_ADD, RNICPI_WR_ATOMIC_CMP_SWP };
      for (int k = 0; k < 2; k++) {
        memset(res.data, 0xee, 8);
        x_atomic(&pe, ops[k], &res, r.addr + 8, r.rkey, k == 0 ? 0 : ~word, 0x77, 0x600d);
        rnicpi_wc_t wc = cert_wc(pe.a.scq);
        g_assert_cmphex(wc.wr_id, ==, 0x600d);
        g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
        uint64_t got;
        memcpy(&got, res.data, 8);
        g_assert_cmphex(got, ==, word);
      }
    }
    peer_check(&pe, &r, 0, 64, 7);
  }

  /* The compare matches the 8 bytes at the misaligned address, so only
   * the alignment stands between the Compare and Swap and a swap. */
  uint64_t at12;
  for (int i = 0; i < 8; i++)
    ((uint8_t *) &at12)[i] = cert_pattern(7, 12 + (size_t) i);
  memset(res.data, 0, 8);
  x_atomic(&pe, t->op, &res, r.addr + 12, r.rkey, fadd ? 1 : at12, 0x77, BAD_ID);
  rnicpi_wc_t wc = cert_wc(pe.a.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmphex(wc.qp_ctx, ==, pe.a.ctx);
  g_test_message("requester completion status %d", wc.status);
  g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.status, !=, RNICPI_WC_WR_FLUSH_ERR);
  cert_wait_state(pe.a.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pe.a.scq);
  peer_check(&pe, &r, 0, 64, 7);
  for (size_t i = 0; i < 8; i++)
    g_assert_cmphex(res.data[i], ==, 0);
  cert_buf_check_guards(&res);
  cert_buf_free(&res);
  cert_buf_free(&sink);
  cert_peer_close(&pe);
}

static void
test_xproc_send_invalidate(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with the passive side in another process, SEND_INV naming the key of a "
                 "window the peer bound: the peer's receive completes with the bytes, flag "
                 "RNICPI_WC_WITH_INV and that key; an RDMA Write through the key afterwards "
                 "is refused and writes nothing");
  if (!cert_require(f, RNICPI_CAP_REMOTE_INVALIDATE))
    return;
  if (!(f->caps.features & (RNICPI_CAP_MW_WIDE | RNICPI_CAP_MW_NARROW))) {
    g_test_skip("needs capability: mw-wide or mw-narrow");
    return;
  }
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  xreg_t t = xreg(&pe, 0, 0, 256, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  uint64_t key = cert_peer_u64(&pe, "bind 0 0x%x", (unsigned) REMOTE);
  g_assert_cmphex(key, !=, t.rkey);
  xreg_t rb = xreg(&pe, 1, 0, 64, RW);
  cert_peer_do(&pe, "recv 1 0 64 0x4ec");
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, 64, RW);
  cert_buf_fill(&src, 4);
  rnicpi_sge_t sge = cert_sge(&src, 0, 32);
  rnicpi_send_wr_t wr = { .wr_id = 0x5e1, .opcode = RNICPI_WR_SEND_INV, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1, .invalidate_rkey = key };
  cert_ok(DAT->post_send(pe.a.qp, &wr));
  rnicpi_wc_t wc = cert_wc(pe.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x5e1);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_autofree char *r = cert_peer_call(&pe, "wc r %d", CERT_TIMEOUT_MS);
  g_autofree char *want = g_strdup_printf("0x4ec %d %d 32 0x%x 0x%" PRIx64, RNICPI_WC_SUCCESS,
                                          RNICPI_WC_RECV, (unsigned) RNICPI_WC_WITH_INV, key);
  g_assert_cmpstr(r, ==, want);
  peer_check(&pe, &rb, 0, 32, 4);
  cert_post_send(pe.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 64, BAD_ID, RNICPI_WR_SIGNALED, t.addr,
                 key);
  x_refused(f, &pe, BAD_ID, TRUE);
  peer_check(&pe, &t, 0, 256, -1);
  cert_buf_free(&src);
  cert_peer_close(&pe);
}

static void
test_xproc_peer_died(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the peer process exits without closing anything: this side's QP is reported "
                 "RNICPI_CM_BROKEN (over iWARP's TCP also DISCONNECTED: the dead process's kernel "
                 "closes the stream with a FIN, as an orderly close does), once, enters ERROR, "
                 "and its posted receives (on InfiniBand also a Send waiting for a receive) "
                 "complete flushed, each once");
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  cert_buf_t rb;
  cert_buf_new(pe.a.pd, &rb, 256, RW);
  const uint64_t ids[] = { 0x4e0, 0x4e1, 0x4e2 };
  for (int i = 0; i < 3; i++)
    cert_post_recv(pe.a.qp, &rb, (size_t) i * 64, 64, ids[i]);
  gboolean ib = f->caps.transport == RNICPI_TRANSPORT_IB;
  if (ib) /* no receive at the peer: it waits */
    cert_post_send(pe.a.qp, RNICPI_WR_SEND, &rb, 192, 64, 0x5e0, RNICPI_WR_SIGNALED, 0, 0);
  g_usleep(20000);
  cert_peer_send(&pe, "die");
  cert_peer_reap(&pe);
  rnicpi_cm_event_t *ev = cert_poll_cm(f, RNICPI_CM_BROKEN, pe.a.ctx, CERT_TIMEOUT_MS);
  rnicpi_cm_event_t *disc = cert_poll_cm(f, RNICPI_CM_DISCONNECTED, pe.a.ctx,
                                         ev != NULL || ib ? CERT_QUIET_MS : 0);
  if (ev == NULL && disc != NULL)
    g_test_message("the peer's death reported as DISCONNECTED (TCP FIN)");
  g_assert_true(ib ? ev != NULL && disc == NULL : (ev != NULL) != (disc != NULL));
  g_free(ev);
  g_free(disc);
  cert_wait_state(pe.a.qp, RNICPI_QPS_ERROR);
  cert_expect_flushed(pe.a.rcq, pe.a.ctx, ids, 3);
  if (ib) {
    const uint64_t sid = 0x5e0;
    cert_expect_flushed(pe.a.scq, pe.a.ctx, &sid, 1);
  }
  cert_buf_free(&rb);
  cert_peer_close(&pe);
}

/* ---- Datagrams across processes ------------------------------------------ */

#define UDO (cert_prov->ud)
#define XUD_QKEY_HERE 0x11110000u
#define XUD_QKEY_PEER 0x22220000u
#define XUD_GRH 40

static void
test_xproc_ud(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("datagrams to a UD queue pair in another process: a Send naming the peer's "
                 "QP number and its Q_Key (not this QP's own) arrives once, with flag "
                 "RNICPI_WC_UD, byte_len counting the GRH when flagged and the payload after "
                 "it; one naming this QP's own Q_Key, which the peer's QP does not have, is "
                 "dropped there (its receive stays posted) though the sender completes it "
                 "successfully; a third with the right Q_Key takes that receive");
  if (!cert_require(f, RNICPI_CAP_UD))
    return;
  cert_peer_t pe;
  if (!cert_peer_start(f, &pe, cert_peer_rights(f), NULL))
    return;
  uint32_t pqpn = (uint32_t) cert_peer_u64(&pe, "ud 0x%x", XUD_QKEY_PEER);
  uint32_t room = XUD_GRH + f->caps.ud_mtu;
  xreg(&pe, 0, 0, 2 * (size_t) room, RW);
  cert_peer_do(&pe, "recv 0 0 %u 0x4d0 ud", room);
  cert_peer_do(&pe, "recv 0 %u %u 0x4d1 ud", room, room);

  rnicpi_cq_t *scq = NULL, *rcq = NULL;
  rnicpi_qp_t *qp = NULL;
  cert_ok(QUE->cq_create(f->dev, 16, 0xd9001, &scq));
  cert_ok(QUE->cq_create(f->dev, 16, 0xd9002, &rcq));
  rnicpi_qp_attr_t a = cert_qp_attr(f, scq, rcq);
  a.type = RNICPI_QPT_UD;
  a.qkey = XUD_QKEY_HERE;
  a.access = 0;
  cert_ok(QUE->qp_create(pe.a.pd, &a, 0xd9000, &qp));
  rnicpi_ah_attr_t aa = { .port = 0 };
  cert_self_gid(f, aa.dgid);
  rnicpi_ah_t *ah = NULL;
  cert_ok(UDO->ah_create(pe.a.pd, &aa, &ah));
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, 256, RW);
  cert_buf_fill(&src, 12);

  const uint32_t qkeys[] = { XUD_QKEY_PEER, XUD_QKEY_HERE, XUD_QKEY_PEER };
  for (int i = 0; i < 3; i++) {
    rnicpi_sge_t sge = cert_sge(&src, 0, 100 + (uint32_t) i);
    rnicpi_send_wr_t wr = { .wr_id = 0x5d0 + (uint64_t) i, .opcode = RNICPI_WR_SEND,
                            .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1, .ah = ah,
                            .remote_qpn = pqpn, .remote_qkey = qkeys[i] };
    cert_ok(DAT->post_send(qp, &wr));
    rnicpi_wc_t wc = cert_wc(scq);
    g_assert_cmphex(wc.wr_id, ==, 0x5d0 + (uint64_t) i);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    g_autofree char *r = cert_peer_call(&pe, "wc ur %d", i == 1 ? CERT_QUIET_MS : CERT_TIMEOUT_MS);
    if (i == 1) {
      if (strcmp(r, "none") != 0)
        g_test_message("a datagram with a Q_Key the peer's QP does not have was received: %s", r);
      g_assert_cmpstr(r, ==, "none");
      continue;
    }
    uint64_t id = 0, rkey = 0;
    int st = -1, op = -1;
    unsigned len = 0, flags = 0;
    g_assert_cmpint(sscanf(r, "%" SCNx64 " %d %d %u %x %" SCNx64, &id, &st, &op, &len, &flags,
                           &rkey), ==, 6);
    g_assert_cmphex(id, ==, i == 0 ? 0x4d0 : 0x4d1);
    g_assert_cmpint(st, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpint(op, ==, RNICPI_WC_RECV);
    g_assert_cmphex(flags & RNICPI_WC_UD, ==, RNICPI_WC_UD);
    uint32_t grh = (flags & RNICPI_WC_GRH) ? XUD_GRH : 0;
    g_assert_cmpuint(len, ==, grh + 100 + (uint32_t) i);
    cert_peer_do(&pe, "check 0 %u %u 12", (i == 0 ? 0 : room) + grh, 100 + i);
  }
  cert_buf_free(&src);
  cert_ok(UDO->ah_destroy(ah));
  cert_ok(QUE->qp_destroy(qp));
  cert_ok(QUE->cq_destroy(scq));
  cert_ok(QUE->cq_destroy(rcq));
  cert_peer_close(&pe);
}

/* ---- Connection management across processes -------------------------- */

/* The private data of an event is @len bytes of @seed. */
static void
pdata_is(const char *what, const uint8_t *got, uint32_t got_len, uint32_t len, uint8_t seed)
{
  uint8_t want[RNICPI_MAX_PDATA];
  cert_pdata_fill(want, len, seed);
  if (got_len < len || memcmp(got, want, len) != 0) {
    g_autofree char *g = cert_pdata_hex(got, got_len), *w = cert_pdata_hex(want, len);
    g_test_message("%s: private data %s, expected %s", what, g, w);
  }
  g_assert_cmpuint(got_len, >=, len);
  g_assert_cmpmem(got, len, want, len);
}

static void
test_xproc_cm_pdata(cert_t *f, gconstpointer data)
{
  gboolean max = data != NULL;
  g_test_summary(max ? "with the passive side in another process, private data as long as the "
                       "device takes (caps.pdata_connect, pdata_accept, pdata_disconnect) goes "
                       "across as cm-pdata's does: the connect's to the peer's CONNECT_REQUEST, "
                       "the accept's to this side's ESTABLISHED and the peer's disconnect's to "
                       "this side's DISCONNECTED, byte for byte"
                     : "with the passive side in another process: the connect's private data "
                       "reaches the peer's CONNECT_REQUEST and the accept's this side's "
                       "ESTABLISHED, byte for byte; then the peer disconnects with private data: "
                       "this side gets DISCONNECTED (with that private data, where the device "
                       "carries it), its QP enters ERROR and its posted receives complete "
                       "flushed, each once, and the connection is not reported BROKEN");
  cert_peer_t pe;
  if (!cert_peer_start(f, &pe, cert_peer_rights(f), NULL))
    return;
  const rnicpi_caps_t *c = &f->caps;
  uint32_t req_len = cert_min(32, c->pdata_connect), acc_len = cert_min(40, c->pdata_accept);
  uint32_t dis_len = cert_min(16, c->pdata_disconnect);
  if (max) {
    req_len = c->pdata_connect;
    acc_len = c->pdata_accept;
    dis_len = c->pdata_disconnect;
  }
  uint8_t req_pd[RNICPI_MAX_PDATA];
  cert_pdata_fill(req_pd, req_len, 0x21);
  rnicpi_conn_param_t cp = { .pdata = req_pd, .pdata_len = req_len,
                             .ird = cert_min(4, c->max_ird), .ord = cert_min(4, c->max_ord) };
  g_autofree char *answer = g_strdup_printf("accept %u", acc_len);
  cert_peer_connect(f, &pe, &cp, answer);
  g_autofree rnicpi_cm_event_t *ea = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pe.a.ctx);
  pdata_is("ESTABLISHED", ea->pdata, ea->pdata_len, acc_len, CERT_PDATA_ACCEPT);
  g_autofree char *r = cert_peer_reply(&pe);
  g_autofree char *req_hex = cert_pdata_hex(req_pd, req_len);
  g_auto(GStrv) words = g_strsplit(r, " ", 3);
  /* A transport may pad private data to its fixed size (the IB CM does). */
  if (req_len == 0)
    g_assert_nonnull(words[2]);
  else
    g_assert_true(g_str_has_prefix(words[2], req_hex));

  cert_buf_t rb;
  cert_buf_new(pe.a.pd, &rb, 256, RW);
  const uint64_t ids[] = { 0x4e0, 0x4e1 };
  for (int i = 0; i < 2; i++)
    cert_post_recv(pe.a.qp, &rb, (size_t) i * 64, 64, ids[i]);
  cert_peer_do(&pe, "disconnect %u", dis_len);
  g_autofree rnicpi_cm_event_t *dis = cert_wait_cm(f, RNICPI_CM_DISCONNECTED, pe.a.ctx);
  pdata_is("DISCONNECTED", dis->pdata, dis->pdata_len, dis_len, CERT_PDATA_DISCONNECT);
  cert_wait_state(pe.a.qp, RNICPI_QPS_ERROR);
  cert_expect_flushed(pe.a.rcq, pe.a.ctx, ids, 2);
  g_assert_null(cert_poll_cm(f, RNICPI_CM_BROKEN, pe.a.ctx, CERT_QUIET_MS));
  g_autofree char *pd = cert_peer_call(&pe, "cm %d %d", RNICPI_CM_DISCONNECTED, CERT_TIMEOUT_MS);
  g_assert_true(g_str_has_prefix(pd, "seen"));
  cert_buf_free(&rb);
  cert_peer_close(&pe);
}

static void
test_xproc_ird_ord(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with the passive side in another process, IRD and ORD settle as in one "
                 "process (cm/connect-accept): each side's ORD within the other's IRD and equal "
                 "to it, and with RNICPI_CAP_IRD_ORD_NEGOTIATED this side's ORD is the least of "
                 "its ORD and the peer's IRD, its IRD the least of its IRD and the peer's ORD; "
                 "then as many RDMA Reads as three times the settled ORD, posted back to back, "
                 "all complete successfully in order with the peer's bytes");
  const rnicpi_caps_t *c = &f->caps;
  if (c->max_ird < 3 || c->max_ord < 6) {
    g_test_skip("the device's IRD or ORD is below 3 and 6");
    return;
  }
  cert_peer_t pe;
  if (!cert_peer_start(f, &pe, cert_peer_rights(f), NULL))
    return;
  /* Asymmetric on purpose: a side that settled its ORD against the peer's
   * ORD, or its IRD against the peer's IRD, gets other numbers. */
  rnicpi_conn_param_t act = { .ird = 2, .ord = 6 };
  const uint32_t pas_ird = 1, pas_ord = 3;
  g_autofree char *answer = g_strdup_printf("accept 0 %u %u", pas_ird, pas_ord);
  cert_peer_connect(f, &pe, &act, answer);
  g_autofree rnicpi_cm_event_t *ea = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pe.a.ctx);
  g_autofree char *r = cert_peer_reply(&pe);
  unsigned p_ird = 0, p_ord = 0;
  g_assert_cmpint(sscanf(r, "%u %u", &p_ird, &p_ord), ==, 2);
  g_test_message("settled: this side IRD %u ORD %u, the peer IRD %u ORD %u", ea->ird, ea->ord,
                 p_ird, p_ord);
  g_assert_cmpuint(ea->ord, >=, 1);
  g_assert_cmpuint(ea->ord, <=, pas_ird);
  g_assert_cmpuint(p_ord, <=, act.ird);
  g_assert_cmpuint(ea->ord, ==, p_ird);
  g_assert_cmpuint(p_ord, ==, ea->ird);
  if (c->features & RNICPI_CAP_IRD_ORD_NEGOTIATED) {
    g_assert_cmpuint(ea->ord, ==, MIN(act.ord, pas_ird));
    g_assert_cmpuint(ea->ird, ==, MIN(act.ird, pas_ord));
  }

  xreg_t src = xreg(&pe, 0, 0, LEN, RW | REMOTE);
  cert_peer_do(&pe, "fill %d 77", src.slot);
  cert_buf_t b; /* a Read sink: remotely writable for iWARP (RFC 5040 4.4) */
  cert_buf_new(pe.a.pd, &b, LEN, RW | REMOTE);
  uint32_t n = 3 * ea->ord, piece = LEN / n;
  for (uint32_t i = 0; i < n; i++)
    cert_post_send(pe.a.qp, RNICPI_WR_RDMA_READ, &b, (size_t) i * piece, piece, 0x3ead0 + i,
                   RNICPI_WR_SIGNALED, src.addr + (uint64_t) i * piece, src.rkey);
  for (uint32_t i = 0; i < n; i++) {
    rnicpi_wc_t wc = cert_wc(pe.a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0x3ead0 + i);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  }
  cert_buf_t want;
  cert_buf_new(pe.a.pd, &want, LEN, RW);
  cert_buf_fill(&want, 77);
  g_assert_cmpmem(b.data, (size_t) n * piece, want.data, (size_t) n * piece);
  g_assert_cmpint(QUE->qp_state(pe.a.qp), ==, RNICPI_QPS_RTS);
  cert_buf_free(&want);
  cert_buf_free(&b);
  cert_peer_close(&pe);
}

static void
test_xproc_cm_reject(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with the passive side in another process, the peer rejects the request with "
                 "private data: this side's QP gets REJECTED carrying that private data byte for "
                 "byte, never ESTABLISHED, and does not enter RTS");
  cert_peer_t pe;
  if (!cert_peer_start(f, &pe, cert_peer_rights(f), NULL))
    return;
  uint32_t rej_len = cert_min(24, f->caps.pdata_reject);
  rnicpi_conn_param_t cp = { .ird = 1, .ord = 1 };
  g_autofree char *answer = g_strdup_printf("reject %u", rej_len);
  cert_peer_connect(f, &pe, &cp, answer);
  g_free(cert_peer_reply(&pe));
  g_autofree rnicpi_cm_event_t *rej = cert_wait_cm(f, RNICPI_CM_REJECTED, pe.a.ctx);
  pdata_is("REJECTED", rej->pdata, rej->pdata_len, rej_len, CERT_PDATA_REJECT);
  g_assert_null(cert_poll_cm(f, RNICPI_CM_ESTABLISHED, pe.a.ctx, CERT_QUIET_MS));
  g_assert_cmpint(QUE->qp_state(pe.a.qp), !=, RNICPI_QPS_RTS);
  cert_peer_close(&pe);
}

static void
test_xproc_request_cancelled(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the process of the passive side as requester: it connects to a listener of "
                 "this process with private data and dies before the request is answered; the "
                 "listener gets exactly one REQUEST_CANCELLED with its listen_ctx and the conn_id "
                 "of the CONNECT_REQUEST, and an accept of that conn_id afterwards fails and "
                 "connects nothing");
  cert_peer_t pe;
  if (!cert_peer_start(f, &pe, cert_peer_rights(f), NULL))
    return;
  const uint64_t lctx = 0x1157c;
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, lctx, &lst);
  uint32_t len = cert_min(16, f->caps.pdata_connect);
  cert_peer_do(&pe, "connect %u %u", port, len);
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, lctx);
  pdata_is("CONNECT_REQUEST", req->pdata, req->pdata_len, len, CERT_PDATA_CONNECT);
  cert_peer_send(&pe, "die");
  cert_peer_reap(&pe);
  g_autofree rnicpi_cm_event_t *can = cert_wait_cm(f, RNICPI_CM_REQUEST_CANCELLED, lctx);
  g_assert_cmphex(can->listen_ctx, ==, lctx);
  g_assert_cmphex(can->conn_id, ==, req->conn_id);
  cert_assert_no_cm(f, RNICPI_CM_REQUEST_CANCELLED, lctx);
  rnicpi_conn_param_t cp = { .ird = 1, .ord = 1 };
  rnicpi_status_t st = CMV->accept(pe.a.qp, req->conn_id, &cp);
  g_test_message("accept of the cancelled request: %s", rnicpi_status_name(st));
  g_assert_cmpstr(rnicpi_status_name(st), !=, rnicpi_status_name(RNICPI_OK));
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, pe.a.ctx);
  g_assert_cmpint(QUE->qp_state(pe.a.qp), !=, RNICPI_QPS_RTS);
  cert_ok(CMV->unlisten(lst));
  cert_peer_close(&pe);
}

/* ---- The peer as requester, by every path -------------------------------- */

static void
test_xproc_peer_requester(cert_t *f, gconstpointer data)
{
  const char *mode = data;
  const char *const *env = cert_xproc_env(mode);
  g_autofree char *summary = g_strdup_printf(
    "the process of the passive side as requester (vp/emul: %s), towards regions of this side "
    "(in shared memory for the mapped path): "
    "an RDMA Write into a region with REMOTE_WRITE alone and a Read from one with REMOTE_READ "
    "alone succeed, three times, with every byte; then a Write into the region with REMOTE_READ "
    "alone is refused (RNICPI_WC_REM_ACCESS_ERR there, RNICPI_ASYNC_QP_ACCESS_ERR here) and "
    "writes nothing", mode);
  g_test_summary(summary);
  cert_peer_t pe;
  if (!cert_peer_open_env(f, &pe, cert_peer_rights(f), env))
    return;
  cert_buf_t wo, ro;
  /* The mapped path needs memory the peer can map. */
  void (*buf_new)(rnicpi_pd_t *, cert_buf_t *, size_t, uint32_t) =
    strcmp(mode, "mapped") == 0 ? cert_buf_new_shared : cert_buf_new;
  buf_new(pe.a.pd, &wo, LEN, RW | RNICPI_ACCESS_REMOTE_WRITE);
  buf_new(pe.a.pd, &ro, LEN, RW | RNICPI_ACCESS_REMOTE_READ);
  xreg(&pe, 0, 0, LEN, cert_sink_access(f));
  for (int round = 0; round < WARM_ACCESSES; round++) {
    g_usleep(WARM_GAP_US);
    cert_peer_do(&pe, "fill 0 %d", 40 + round);
    cert_peer_do(&pe, "post write 0 0 %d 0x%" PRIx64 " 0x%" PRIx64 " 0x77", LEN,
                 cert_raddr(&wo, 0), wo.mr->rkey);
    g_autofree char *w = cert_peer_call(&pe, "wc s %d", CERT_TIMEOUT_MS);
    g_autofree char *wwant = g_strdup_printf("0x77 %d %d", RNICPI_WC_SUCCESS, RNICPI_WC_RDMA_WRITE);
    g_assert_true(g_str_has_prefix(w, wwant));
    cert_buf_fill(&ro, (uint8_t) (50 + round));
    cert_peer_do(&pe, "post read 0 0 %d 0x%" PRIx64 " 0x%" PRIx64 " 0x78", LEN, cert_raddr(&ro, 0),
                 ro.mr->rkey);
    g_autofree char *r = cert_peer_call(&pe, "wc s %d", CERT_TIMEOUT_MS);
    g_autofree char *rwant = g_strdup_printf("0x78 %d %d", RNICPI_WC_SUCCESS, RNICPI_WC_RDMA_READ);
    g_assert_true(g_str_has_prefix(r, rwant));
    cert_peer_do(&pe, "check 0 0 %d %d", LEN, 50 + round);
    /* The Write landed before the Read was answered (RDMA ordering). */
    cert_buf_check(&wo, 0, LEN, (uint8_t) (40 + round));
  }
  cert_buf_fill(&ro, 60);
  cert_peer_do(&pe, "post write 0 0 64 0x%" PRIx64 " 0x%" PRIx64 " 0x79", cert_raddr(&ro, 0),
               ro.mr->rkey);
  g_autofree char *w = cert_peer_call(&pe, "wc s %d", CERT_TIMEOUT_MS);
  g_assert_true(g_str_has_prefix(w, "0x79 "));
  if (f->caps.features & RNICPI_CAP_PLACED_COMPLETION) {
    g_autofree char *want = g_strdup_printf("0x79 %d", RNICPI_WC_REM_ACCESS_ERR);
    g_assert_true(g_str_has_prefix(w, want));
  }
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pe.a.ctx));
  g_free(cert_wait_async(f, RNICPI_ASYNC_QP_ACCESS_ERR, pe.a.ctx));
  cert_wait_state(pe.a.qp, RNICPI_QPS_ERROR);
  cert_buf_check(&ro, 0, LEN, 60);
  cert_buf_check_guards(&ro);
  cert_buf_check_guards(&wo);
  cert_buf_free(&wo);
  cert_buf_free(&ro);
  cert_peer_close(&pe);
}

void
cert_register_xproc(void)
{
  cert_add("/rnicpi/xproc/transfer", test_xproc_transfer);
  static const struct {
    const char *path;
    xr_test_t t;
  } refused[] = {
    { "/rnicpi/xproc/key-byte/write", { XR_KEY_BYTE, TRUE, FALSE } },
    { "/rnicpi/xproc/key-byte/read-warm", { XR_KEY_BYTE, FALSE, TRUE } },
    { "/rnicpi/xproc/other-pd/write", { XR_OTHER_PD, TRUE, FALSE } },
    { "/rnicpi/xproc/other-pd/read", { XR_OTHER_PD, FALSE, FALSE } },
    { "/rnicpi/xproc/qp-rights/write-warm", { XR_QP_RIGHTS, TRUE, TRUE } },
    { "/rnicpi/xproc/qp-rights/read", { XR_QP_RIGHTS, FALSE, FALSE } },
    { "/rnicpi/xproc/region-rights/write-warm", { XR_REGION_RIGHTS, TRUE, TRUE } },
    { "/rnicpi/xproc/region-rights/read-warm", { XR_REGION_RIGHTS, FALSE, TRUE } },
    { "/rnicpi/xproc/bounds/longer-write", { XR_LONGER, TRUE, FALSE } },
    { "/rnicpi/xproc/bounds/longer-read-warm", { XR_LONGER, FALSE, TRUE } },
    { "/rnicpi/xproc/bounds/past-end-write-warm", { XR_PAST_END, TRUE, TRUE } },
    { "/rnicpi/xproc/bounds/past-end-read", { XR_PAST_END, FALSE, FALSE } },
    { "/rnicpi/xproc/deregistered/write-warm", { XR_DEREGISTERED, TRUE, TRUE } },
    { "/rnicpi/xproc/deregistered/read-warm", { XR_DEREGISTERED, FALSE, TRUE } },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(refused); i++)
    g_test_add(refused[i].path, cert_t, &refused[i].t, cert_setup, test_xproc_refused,
               cert_teardown);
  g_test_add("/rnicpi/xproc/recv-too-long/short", cert_t, GUINT_TO_POINTER(64), cert_setup,
             test_xproc_recv_too_long, cert_teardown);
  g_test_add("/rnicpi/xproc/recv-too-long/long", cert_t, GUINT_TO_POINTER(100000), cert_setup,
             test_xproc_recv_too_long, cert_teardown);
  cert_add("/rnicpi/xproc/recv-two-segments", test_xproc_recv_two_segments);
  cert_add("/rnicpi/xproc/send-waits-for-receive", test_xproc_send_waits);
  cert_add("/rnicpi/xproc/atomics", test_xproc_atomics);
  static const struct {
    const char *path;
    xam_test_t t;
  } misaligned[] = {
    { "/rnicpi/xproc/atomic-misaligned/fetch-add", { RNICPI_WR_ATOMIC_FETCH_ADD, FALSE } },
    { "/rnicpi/xproc/atomic-misaligned/fetch-add-warm", { RNICPI_WR_ATOMIC_FETCH_ADD, TRUE } },
    { "/rnicpi/xproc/atomic-misaligned/cmp-swap", { RNICPI_WR_ATOMIC_CMP_SWP, FALSE } },
    { "/rnicpi/xproc/atomic-misaligned/cmp-swap-warm", { RNICPI_WR_ATOMIC_CMP_SWP, TRUE } },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(misaligned); i++)
    g_test_add(misaligned[i].path, cert_t, &misaligned[i].t, cert_setup,
               test_xproc_atomic_misaligned, cert_teardown);
  cert_add("/rnicpi/xproc/send-invalidate", test_xproc_send_invalidate);
  cert_add("/rnicpi/xproc/peer-died", test_xproc_peer_died);
  cert_add("/rnicpi/xproc/cm-pdata", test_xproc_cm_pdata);
  g_test_add("/rnicpi/xproc/cm-pdata-max", cert_t, "max", cert_setup, test_xproc_cm_pdata,
             cert_teardown);
  cert_add("/rnicpi/xproc/ud", test_xproc_ud);
  cert_add("/rnicpi/xproc/ird-ord", test_xproc_ird_ord);
  cert_add("/rnicpi/xproc/cm-reject", test_xproc_cm_reject);
  cert_add("/rnicpi/xproc/request-cancelled", test_xproc_request_cancelled);
  cert_add_xproc("/rnicpi/xproc/peer-requester", test_xproc_peer_requester);
}
