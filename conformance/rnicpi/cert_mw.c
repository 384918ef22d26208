/*
 * cert-rnicpi: memory windows and fast registration (rnicpi_mw_ops_t,
 * mr_alloc, and the send-queue work requests #RNICPI_WR_BIND_MW,
 * #RNICPI_WR_LOCAL_INV, #RNICPI_WR_SEND_INV and #RNICPI_WR_FAST_REG; ABI
 * 1.2 and 1.4).  The passive side of a connected pair owns the target
 * region and binds windows to it through its own queue pair; the active
 * side reads and writes through the window's key.  A test whose last step
 * is a refused access ends with the connection broken (cert_expect_refused).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define REMOTE (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define TGT_LEN 4096
/* The window covers [WIN_OFF, WIN_OFF + WIN_LEN) of the target region. */
#define WIN_OFF 1024
#define WIN_LEN 1024
#define BAD_ID 0xbad0

#define MW (cert_prov->mw)

typedef struct {
  cert_pair_t pr;
  cert_buf_t src;  /* active: what is written, and the Read sink */
  cert_buf_t tgt;  /* passive: the region windows are bound to */
  rnicpi_mw_t *mw; /* passive: the window, or NULL */
} mw_setup_t;

/* The window type this device offers (narrow preferred), or a skip. */
static gboolean
mw_type(cert_t *f, rnicpi_mw_type_t *type)
{
  if ((f->caps.features & (RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE)) == RNICPI_CAP_MW_WIDE) {
    *type = RNICPI_MW_WIDE;
    return cert_require(f, RNICPI_CAP_MW_WIDE);
  }
  *type = RNICPI_MW_NARROW;
  return cert_require(f, RNICPI_CAP_MW_NARROW);
}

/* A connected pair, a target region of @tgt_access on the passive side and
 * an unbound window in its domain. */
static gboolean
mw_open(cert_t *f, mw_setup_t *m, uint32_t tgt_access)
{
  memset(m, 0, sizeof(*m));
  rnicpi_mw_type_t type;
  if (!mw_type(f, &type) || !cert_pair_open(f, &m->pr, NULL))
    return FALSE;
  cert_buf_new(m->pr.a.pd, &m->src, TGT_LEN, RW | REMOTE);
  cert_buf_new(m->pr.p.pd, &m->tgt, TGT_LEN, tgt_access);
  cert_ok(MW->mw_alloc(m->pr.p.pd, type, &m->mw));
  g_assert_nonnull(m->mw);
  g_assert_true(m->mw->pd == m->pr.p.pd);
  g_assert_cmpint(m->mw->type, ==, type);
  return TRUE;
}

static void
mw_close(mw_setup_t *m)
{
  if (m->mw != NULL)
    cert_ok(MW->mw_dealloc(m->mw));
  cert_buf_free(&m->src);
  cert_buf_free(&m->tgt);
  cert_pair_free(&m->pr);
}

/* Post a bind of the window over [off, off + len) of the target with
 * @access; returns the key post_send gave the window. */
static uint64_t
mw_post_bind(mw_setup_t *m, uint64_t id, size_t off, uint64_t len, uint32_t access)
{
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = RNICPI_WR_BIND_MW, .flags = RNICPI_WR_SIGNALED };
  wr.bind.mw = m->mw;
  wr.bind.mr = m->tgt.mr;
  wr.bind.addr = cert_raddr(&m->tgt, off);
  wr.bind.length = len;
  wr.bind.access = access;
  cert_ok(DAT->post_send(m->pr.p.qp, &wr));
  return m->mw->rkey;
}

/* Bind [WIN_OFF, WIN_OFF + WIN_LEN) with @access and check the completion:
 * opcode BIND_MW, the wr_id, the key post_send announced, nothing else. */
static uint64_t
mw_bind_ok(mw_setup_t *m, uint32_t access)
{
  uint64_t old = m->mw->rkey;
  uint64_t key = mw_post_bind(m, 0xb1d, WIN_OFF, WIN_LEN, access);
  g_assert_cmphex(key, !=, old);
  g_assert_cmphex(key, !=, m->tgt.mr->rkey);
  rnicpi_wc_t wc = cert_wc(m->pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xb1d);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_BIND_MW);
  g_assert_cmphex(wc.qp_ctx, ==, m->pr.p.ctx);
  g_assert_cmphex(wc.rkey, ==, key);
  cert_assert_cq_quiet(m->pr.p.scq);
  return key;
}

/* Where byte @off of the window is, for the active side. */
static uint64_t
win_addr(const mw_setup_t *m, size_t off)
{
  return cert_raddr(&m->tgt, WIN_OFF + off);
}

/* The target holds zeros everywhere but [off, off + len), which holds the
 * pattern of @seed. */
static void
tgt_only(const mw_setup_t *m, size_t off, size_t len, uint8_t seed)
{
  for (size_t i = 0; i < m->tgt.len; i++)
    if (i < off || i >= off + len)
      if (m->tgt.data[i] != 0) {
        g_test_message("target byte %zu is 0x%02x: written outside [%zu, %zu)", i,
                       m->tgt.data[i], off, off + len);
        g_assert_cmphex(m->tgt.data[i], ==, 0);
      }
  if (len > 0)
    cert_buf_check(&m->tgt, off, len, seed);
  cert_buf_check_guards(&m->tgt);
}

/* A Write of @len bytes through @key at window offset @off that the
 * responder must refuse; the target stays all zeros. */
static void
mw_write_refused(cert_t *f, mw_setup_t *m, uint64_t raddr, uint32_t len, uint64_t key)
{
  cert_post_send(m->pr.a.qp, RNICPI_WR_RDMA_WRITE, &m->src, 0, len, BAD_ID, RNICPI_WR_SIGNALED,
                 raddr, key);
  cert_expect_refused(f, &m->pr, BAD_ID, TRUE);
  tgt_only(m, 0, 0, 0);
}

/* ---- bind and access -------------------------------------------------- */

static void
test_mw_bind_access(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mw_alloc, then a BIND_MW work request of the region's owner: post_send gives "
                 "the window a new key, the bind completes once with opcode BIND_MW and that "
                 "key; an RDMA Write through the window covering its first to its last byte "
                 "lands at the window's place in the region and nowhere else, and an RDMA Read "
                 "through it returns the region's bytes");
  mw_setup_t m;
  if (!mw_open(f, &m, RW | REMOTE | RNICPI_ACCESS_MW_BIND))
    return;
  g_assert_cmphex(m.mw->rkey, ==, 0);
  uint64_t key = mw_bind_ok(&m, REMOTE);
  cert_buf_fill(&m.src, 5);
  cert_write_ok(f, &m.pr, &m.src, 0, WIN_LEN, win_addr(&m, 0), key);
  tgt_only(&m, WIN_OFF, WIN_LEN, 5);

  /* Read the window's last 100 bytes back into the source's end. */
  cert_post_send(m.pr.a.qp, RNICPI_WR_RDMA_READ, &m.src, 3000, 100, 0x4ead, RNICPI_WR_SIGNALED,
                 win_addr(&m, WIN_LEN - 100), key);
  rnicpi_wc_t wc = cert_wc(m.pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x4ead);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  g_assert_cmpmem(m.src.data + 3000, 100, m.tgt.data + WIN_OFF + WIN_LEN - 100, 100);
  cert_assert_cq_quiet(m.pr.a.scq);
  cert_assert_cq_quiet(m.pr.p.rcq);
  mw_close(&m);
}

static void
test_mw_write_past_window(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Write through a window that starts at the window's last byte and ends "
                 "one byte past it (still inside the region) is refused: requester "
                 "RNICPI_WC_REM_ACCESS_ERR, responder access event, connection broken, and no "
                 "byte of the region written");
  mw_setup_t m;
  if (!mw_open(f, &m, RW | REMOTE | RNICPI_ACCESS_MW_BIND))
    return;
  uint64_t key = mw_bind_ok(&m, REMOTE);
  mw_write_refused(f, &m, win_addr(&m, WIN_LEN - 1), 2, key);
  mw_close(&m);
}

static void
test_mw_write_before_window(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Write through a window that starts one byte before the window (still "
                 "inside the region) is refused, and no byte of the region is written");
  mw_setup_t m;
  if (!mw_open(f, &m, RW | REMOTE | RNICPI_ACCESS_MW_BIND))
    return;
  uint64_t key = mw_bind_ok(&m, REMOTE);
  mw_write_refused(f, &m, win_addr(&m, 0) - 1, 8, key);
  mw_close(&m);
}

static void
test_mw_window_rights(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a window bound with REMOTE_READ only, over a region that grants remote Write "
                 "too: an RDMA Read through it succeeds, an RDMA Write through it is refused "
                 "(the window's rights, not the region's, apply) and writes nothing");
  mw_setup_t m;
  if (!mw_open(f, &m, RW | REMOTE | RNICPI_ACCESS_MW_BIND))
    return;
  uint64_t key = mw_bind_ok(&m, RNICPI_ACCESS_REMOTE_READ);
  cert_post_send(m.pr.a.qp, RNICPI_WR_RDMA_READ, &m.src, 0, 64, 0x4ead, RNICPI_WR_SIGNALED,
                 win_addr(&m, 0), key);
  rnicpi_wc_t wc = cert_wc(m.pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x4ead);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_fill(&m.src, 9);
  mw_write_refused(f, &m, win_addr(&m, 0), 64, key);
  mw_close(&m);
}

/* A bind that breaks one of rnicpi_bind_t's rules: the region's rights,
 * the window's range (@off, @len) and the rights the bind asks. */
typedef struct {
  const char *path, *summary;
  uint32_t tgt_access;
  size_t off;
  uint64_t len;
  uint32_t access;
} bind_case_t;

static const bind_case_t bind_cases[] = {
  { "/rnicpi/mw/bind-rights-exceed-region",
    "a bind asking REMOTE_WRITE of a region registered without it completes with "
    "RNICPI_WC_MW_BIND_ERR and the binding queue pair enters ERROR",
    RW | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_MW_BIND, WIN_OFF, WIN_LEN, REMOTE },
  { "/rnicpi/mw/bind-no-mw-bind",
    "a bind to a region registered without RNICPI_ACCESS_MW_BIND completes with "
    "RNICPI_WC_MW_BIND_ERR and the binding queue pair enters ERROR",
    RW | REMOTE, WIN_OFF, WIN_LEN, RNICPI_ACCESS_REMOTE_READ },
  { "/rnicpi/mw/bind-past-region",
    "a bind whose range ends one byte past the region's last byte completes with "
    "RNICPI_WC_MW_BIND_ERR and the binding queue pair enters ERROR",
    RW | REMOTE | RNICPI_ACCESS_MW_BIND, 1, TGT_LEN, RNICPI_ACCESS_REMOTE_READ },
  { "/rnicpi/mw/bind-longer-than-region",
    "a bind that starts at the region's first byte and is one byte longer than the "
    "region completes with RNICPI_WC_MW_BIND_ERR and the binding queue pair enters "
    "ERROR",
    RW | REMOTE | RNICPI_ACCESS_MW_BIND, 0, TGT_LEN + 1, RNICPI_ACCESS_REMOTE_READ },
  { "/rnicpi/mw/bind-length-wraps",
    "a bind of length 2^64-1 that starts one byte into the region (its end wraps "
    "past zero, below the region's end) completes with RNICPI_WC_MW_BIND_ERR and the "
    "binding queue pair enters ERROR",
    RW | REMOTE | RNICPI_ACCESS_MW_BIND, 1, UINT64_MAX, RNICPI_ACCESS_REMOTE_READ },
};

/* Each completes with RNICPI_WC_MW_BIND_ERR and takes the binding queue
 * pair to ERROR. */
static void
test_mw_bind_refused(cert_t *f, gconstpointer data)
{
  const bind_case_t *c = data;
  g_test_summary(c->summary);
  mw_setup_t m;
  if (!mw_open(f, &m, c->tgt_access))
    return;
  mw_post_bind(&m, BAD_ID, c->off, c->len, c->access);
  rnicpi_wc_t wc = cert_wc(m.pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_MW_BIND_ERR);
  g_assert_cmphex(wc.qp_ctx, ==, m.pr.p.ctx);
  cert_wait_state(m.pr.p.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(m.pr.p.scq);
  /* A local error need not reach the peer at once. */
  if (QUE->qp_state(m.pr.a.qp) != RNICPI_QPS_ERROR)
    cert_ok(QUE->qp_to_error(m.pr.a.qp));
  tgt_only(&m, 0, 0, 0);
  mw_close(&m);
}

static void
test_mw_bind_zero_based_region(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("on a device with \"mw-needs-va-region\" (iWARP) a window cannot be bound to a "
                 "zero-based region (RDMAC verbs 7.2.7): the bind completes with "
                 "RNICPI_WC_MW_BIND_ERR, the binding queue pair enters ERROR and the region is "
                 "untouched");
  /* Without the bit (InfiniBand) windows on zero-based regions are allowed. */
  if (!cert_require(f, RNICPI_CAP_MW_NEEDS_VA_REGION) || !cert_require(f, RNICPI_CAP_ZERO_BASED))
    return;
  mw_setup_t m;
  if (!mw_open(f, &m, RW | REMOTE))
    return;
  g_autofree uint8_t *mem = g_malloc0(TGT_LEN);
  rnicpi_mr_t *zb;
  rnicpi_mr_attr_t attr = { .addr = mem, .length = TGT_LEN, .iova = 0,
                            .access = RW | REMOTE | RNICPI_ACCESS_MW_BIND };
  cert_ok(MEM->mr_reg(m.pr.p.pd, &attr, &zb));
  rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = RNICPI_WR_BIND_MW,
                          .flags = RNICPI_WR_SIGNALED };
  wr.bind = (rnicpi_bind_t) { .mw = m.mw, .mr = zb, .addr = WIN_OFF, .length = WIN_LEN,
                              .access = REMOTE };
  cert_ok(DAT->post_send(m.pr.p.qp, &wr));
  rnicpi_wc_t wc = cert_wc(m.pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_MW_BIND_ERR);
  cert_wait_state(m.pr.p.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(m.pr.p.scq);
  /* A local error need not reach the peer at once. */
  if (QUE->qp_state(m.pr.a.qp) != RNICPI_QPS_ERROR)
    cert_ok(QUE->qp_to_error(m.pr.a.qp));
  for (size_t i = 0; i < TGT_LEN; i++)
    g_assert_cmphex(mem[i], ==, 0);
  cert_ok(MEM->mr_dereg(zb));
  mw_close(&m);
}

/* ---- invalidation ----------------------------------------------------- */

static void
test_mw_local_invalidate(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("LOCAL_INV of a bound window's key completes once with opcode LOCAL_INV and "
                 "that key; an RDMA Write through the key afterwards is refused and writes "
                 "nothing, though the region itself stays registered");
  if (!cert_require(f, RNICPI_CAP_LOCAL_INVALIDATE))
    return;
  mw_setup_t m;
  if (!mw_open(f, &m, RW | REMOTE | RNICPI_ACCESS_MW_BIND))
    return;
  uint64_t key = mw_bind_ok(&m, REMOTE);
  rnicpi_send_wr_t wr = { .wr_id = 0x1a, .opcode = RNICPI_WR_LOCAL_INV,
                          .flags = RNICPI_WR_SIGNALED, .invalidate_rkey = key };
  cert_ok(DAT->post_send(m.pr.p.qp, &wr));
  rnicpi_wc_t wc = cert_wc(m.pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x1a);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_LOCAL_INV);
  g_assert_cmphex(wc.rkey, ==, key);
  cert_assert_cq_quiet(m.pr.p.scq);
  g_assert_cmpint(QUE->qp_state(m.pr.p.qp), ==, RNICPI_QPS_RTS);
  cert_buf_fill(&m.src, 3);
  mw_write_refused(f, &m, win_addr(&m, 0), 64, key);
  mw_close(&m);
}

static void
test_mw_send_invalidate(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("SEND_INV naming the peer's bound window key: the peer's receive completes "
                 "with the bytes, flag RNICPI_WC_WITH_INV and that key in rkey; an RDMA Write "
                 "through the key afterwards is refused and writes nothing");
  if (!cert_require(f, RNICPI_CAP_REMOTE_INVALIDATE))
    return;
  mw_setup_t m;
  if (!mw_open(f, &m, RW | REMOTE | RNICPI_ACCESS_MW_BIND))
    return;
  uint64_t key = mw_bind_ok(&m, REMOTE);
  cert_buf_t rb;
  cert_buf_new(m.pr.p.pd, &rb, 64, RW);
  cert_post_recv(m.pr.p.qp, &rb, 0, 64, 0x4ec);
  cert_buf_fill(&m.src, 4);
  rnicpi_sge_t sge = cert_sge(&m.src, 0, 32);
  rnicpi_send_wr_t wr = { .wr_id = 0x5e1, .opcode = RNICPI_WR_SEND_INV,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .invalidate_rkey = key };
  cert_ok(DAT->post_send(m.pr.a.qp, &wr));
  rnicpi_wc_t r = cert_wc(m.pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0x4ec);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(r.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmpuint(r.byte_len, ==, 32);
  g_assert_cmphex(r.flags & RNICPI_WC_WITH_INV, ==, RNICPI_WC_WITH_INV);
  g_assert_cmphex(r.rkey, ==, key);
  cert_buf_check(&rb, 0, 32, 4);
  rnicpi_wc_t s = cert_wc(m.pr.a.scq);
  g_assert_cmphex(s.wr_id, ==, 0x5e1);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_SEND);
  cert_assert_cq_quiet(m.pr.p.rcq);
  mw_write_refused(f, &m, win_addr(&m, 0), 64, key);
  cert_buf_free(&rb);
  mw_close(&m);
}

static void
test_mw_rebind_old_key(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("binding a bound window again gives it a new key that works, and its old key "
                 "dies: an RDMA Write through the old key is refused");
  mw_setup_t m;
  if (!mw_open(f, &m, RW | REMOTE | RNICPI_ACCESS_MW_BIND))
    return;
  uint64_t old = mw_bind_ok(&m, REMOTE);
  uint64_t key = mw_bind_ok(&m, REMOTE);
  g_assert_cmphex(key, !=, old);
  cert_buf_fill(&m.src, 6);
  cert_write_ok(f, &m.pr, &m.src, 0, 16, win_addr(&m, 0), key);
  tgt_only(&m, WIN_OFF, 16, 6);
  memset(m.tgt.data, 0, m.tgt.len);
  mw_write_refused(f, &m, win_addr(&m, 0), 16, old);
  mw_close(&m);
}

static void
test_mw_dealloc_bound(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a region with a bound window refuses mr_dereg with RNICPI_EBUSY; mw_dealloc of "
                 "the bound window succeeds, its key dies (an RDMA Write through it is refused) "
                 "and the region then deregisters");
  mw_setup_t m;
  if (!mw_open(f, &m, RW | REMOTE | RNICPI_ACCESS_MW_BIND))
    return;
  uint64_t key = mw_bind_ok(&m, REMOTE);
  cert_cmpst(MEM->mr_dereg(m.tgt.mr), RNICPI_EBUSY);
  cert_ok(MW->mw_dealloc(m.mw));
  m.mw = NULL;
  mw_write_refused(f, &m, win_addr(&m, 0), 64, key);
  mw_close(&m); /* deregisters the region */
}

/* ---- fast registration ------------------------------------------------ */

static void
test_mr_fast_reg(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mr_alloc gives an invalid region; a FAST_REG work request binds it to memory: "
                 "post_send writes its new key, the request completes once with opcode FAST_REG "
                 "and that key, and an RDMA Write through the key lands; LOCAL_INV of the key "
                 "completes with opcode LOCAL_INV, after which an RDMA Write through it is "
                 "refused and writes nothing");
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER) || !cert_require(f, RNICPI_CAP_LOCAL_INVALIDATE))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  enum { PAGE = 4096, LEN = 2 * PAGE };
  cert_buf_t src;
  cert_buf_new(pr.a.pd, &src, LEN, RW);
  uint8_t *mem = g_malloc0(LEN + 2 * PAGE);
  uint8_t *buf = (uint8_t *) (((uintptr_t) mem + PAGE - 1) & ~(uintptr_t) (PAGE - 1));
  uint64_t pages[2] = { (uint64_t) (uintptr_t) buf, (uint64_t) (uintptr_t) (buf + PAGE) };
  rnicpi_mr_t *mr = NULL;
  cert_cmpst(MEM->mr_alloc(pr.p.pd, 0, &mr), RNICPI_EINVAL);
  cert_ok(MEM->mr_alloc(pr.p.pd, 2, &mr));
  g_assert_nonnull(mr);

  rnicpi_send_wr_t wr = { .wr_id = 0xf4, .opcode = RNICPI_WR_FAST_REG, .flags = RNICPI_WR_SIGNALED };
  wr.fast_reg = (rnicpi_fast_reg_t) {
    .mr = mr, .addr = buf, .length = LEN, .iova = (uint64_t) (uintptr_t) buf,
    .access = RW | REMOTE, .page_size = PAGE, .num_pages = 2, .pages = pages,
  };
  cert_ok(DAT->post_send(pr.p.qp, &wr));
  uint64_t key = mr->rkey;
  g_assert_cmphex(mr->lkey, ==, key);
  rnicpi_wc_t wc = cert_wc(pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, 0xf4);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_FAST_REG);
  g_assert_cmphex(wc.rkey, ==, key);

  cert_buf_fill(&src, 8);
  cert_write_ok(f, &pr, &src, 0, LEN, (uint64_t) (uintptr_t) buf, key);
  g_assert_cmpmem(buf, LEN, src.data, LEN);

  rnicpi_send_wr_t inv = { .wr_id = 0x1b, .opcode = RNICPI_WR_LOCAL_INV,
                           .flags = RNICPI_WR_SIGNALED, .invalidate_rkey = key };
  cert_ok(DAT->post_send(pr.p.qp, &inv));
  wc = cert_wc(pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x1b);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_LOCAL_INV);
  g_assert_cmphex(wc.rkey, ==, key);
  cert_assert_cq_quiet(pr.p.scq);

  memset(buf, 0, LEN);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 (uint64_t) (uintptr_t) buf, key);
  cert_expect_refused(f, &pr, BAD_ID, TRUE);
  for (size_t i = 0; i < LEN; i++)
    g_assert_cmphex(buf[i], ==, 0);

  cert_ok(MEM->mr_dereg(mr));
  g_free(mem);
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

/* ---- window types and a second connection ----------------------------- */

/* A second connection with CQs of its own.  With @own_pd FALSE its
 * passive queue pair is in the window's domain (the passive side of @m),
 * which @pr2.p shares and does not own; with TRUE both of its sides have
 * domains of their own, so nothing of @m belongs to it. */
static void
mw_second_open(cert_t *f, mw_setup_t *m, cert_pair_t *pr2, gboolean own_pd)
{
  memset(pr2, 0, sizeof(*pr2));
  cert_side_new(f, &pr2->a, 0xa8000, 64, NULL);
  cert_side_t *p = &pr2->p;
  if (own_pd) {
    cert_side_new(f, p, 0xb8000, 64, NULL);
  } else {
    p->ctx = 0xb8000;
    p->pd = m->pr.p.pd;
    cert_ok(QUE->cq_create(f->dev, 64, p->ctx | 1, &p->scq));
    cert_ok(QUE->cq_create(f->dev, 64, p->ctx | 2, &p->rcq));
    rnicpi_qp_attr_t a = cert_qp_attr(f, p->scq, p->rcq);
    cert_ok(QUE->qp_create(p->pd, &a, p->ctx, &p->qp));
  }
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1151, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->connect(pr2->a.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1151);
  cert_ok(CMV->accept(p->qp, req->conn_id, &cp));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr2->a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, p->ctx));
  cert_ok(CMV->unlisten(lst));
}

static void
mw_second_close(cert_pair_t *pr2, gboolean own_pd)
{
  if (own_pd) {
    cert_pair_free(pr2);
    return;
  }
  cert_ok(QUE->qp_destroy(pr2->p.qp));
  cert_ok(QUE->cq_destroy(pr2->p.scq));
  cert_ok(QUE->cq_destroy(pr2->p.rcq));
  cert_side_free(&pr2->a);
}


/* An RDMA Write of @len bytes (patterned with @fill) through @key, from a
 * second connection into the window's domain, is refused and no byte of
 * the target changes. */
static void
mw_write_refused_elsewhere(cert_t *f, mw_setup_t *m, uint64_t key, uint32_t len, gboolean fill)
{
  cert_pair_t pr2;
  mw_second_open(f, m, &pr2, FALSE);
  cert_buf_t src2;
  cert_buf_new(pr2.a.pd, &src2, 64, RW);
  if (fill)
    cert_buf_fill(&src2, 25);
  cert_post_send(pr2.a.qp, RNICPI_WR_RDMA_WRITE, &src2, 0, len, BAD_ID, RNICPI_WR_SIGNALED,
                 win_addr(m, 0), key);
  cert_expect_refused(f, &pr2, BAD_ID, TRUE);
  tgt_only(m, 0, 0, 0);
  cert_buf_free(&src2);
  mw_second_close(&pr2, FALSE);
}

static void
test_mw_narrow_other_qp(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a narrow window answers only through the queue pair it was bound on: an RDMA "
                 "Write through its key arriving on another queue pair of the same domain is "
                 "refused and writes nothing, while through the binding QP it lands");
  if (!cert_require(f, RNICPI_CAP_MW_NARROW))
    return;
  mw_setup_t m;
  memset(&m, 0, sizeof(m));
  if (!cert_pair_open(f, &m.pr, NULL))
    return;
  cert_buf_new(m.pr.a.pd, &m.src, TGT_LEN, RW | REMOTE);
  cert_buf_new(m.pr.p.pd, &m.tgt, TGT_LEN, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  cert_ok(MW->mw_alloc(m.pr.p.pd, RNICPI_MW_NARROW, &m.mw));
  uint64_t key = mw_bind_ok(&m, REMOTE);
  cert_buf_fill(&m.src, 14);
  cert_write_ok(f, &m.pr, &m.src, 0, 32, win_addr(&m, 0), key);
  tgt_only(&m, WIN_OFF, 32, 14);
  memset(m.tgt.data, 0, m.tgt.len);

  mw_write_refused_elsewhere(f, &m, key, 32, FALSE);
  mw_close(&m);
}

static void
test_mw_wide_any_qp(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a wide window answers through any queue pair of its domain: an RDMA Write "
                 "through its key arriving on a queue pair other than the binding one lands in "
                 "the window");
  if (!cert_require(f, RNICPI_CAP_MW_WIDE))
    return;
  mw_setup_t m;
  memset(&m, 0, sizeof(m));
  if (!cert_pair_open(f, &m.pr, NULL))
    return;
  cert_buf_new(m.pr.a.pd, &m.src, TGT_LEN, RW | REMOTE);
  cert_buf_new(m.pr.p.pd, &m.tgt, TGT_LEN, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  cert_ok(MW->mw_alloc(m.pr.p.pd, RNICPI_MW_WIDE, &m.mw));
  g_assert_cmpint(m.mw->type, ==, RNICPI_MW_WIDE);
  uint64_t key = mw_bind_ok(&m, REMOTE);
  cert_pair_t pr2;
  mw_second_open(f, &m, &pr2, FALSE);
  cert_buf_t src2;
  cert_buf_new(pr2.a.pd, &src2, 64, RW);
  cert_buf_fill(&src2, 15);
  cert_write_ok(f, &pr2, &src2, 0, 64, win_addr(&m, WIN_LEN - 64), key);
  tgt_only(&m, WIN_OFF + WIN_LEN - 64, 64, 15);
  cert_assert_cq_quiet(pr2.a.scq);
  cert_buf_free(&src2);
  mw_second_close(&pr2, FALSE);
  mw_close(&m);
}

/* ---- a region of another domain --------------------------------------- */

static void
test_mw_bind_region_other_pd(cert_t *f, gconstpointer data)
{
  rnicpi_mw_type_t type = (rnicpi_mw_type_t) GPOINTER_TO_INT(data);
  const char *name = type == RNICPI_MW_WIDE ? "wide" : "narrow";
  g_autofree char *s = g_strdup_printf(
    "a bind of a %s window, through a queue pair of the window's own domain, to a region of "
    "another protection domain (IBTA 10.6.7.2, RDMAC verbs 7.2.7: window, region and queue "
    "pair share one domain) completes with RNICPI_WC_MW_BIND_ERR and the binding queue pair "
    "enters ERROR; the key post_send gave the window then opens nothing: an RDMA Write through "
    "it, over the range the bind named, arriving on a second connection into the window's "
    "domain is refused and no byte of the region is written",
    name);
  g_test_summary(s);
  if (!cert_require(f, type == RNICPI_MW_WIDE ? RNICPI_CAP_MW_WIDE : RNICPI_CAP_MW_NARROW))
    return;
  mw_setup_t m;
  memset(&m, 0, sizeof(m));
  if (!cert_pair_open(f, &m.pr, NULL))
    return;
  rnicpi_pd_t *other = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &other));
  cert_buf_new(m.pr.a.pd, &m.src, TGT_LEN, RW | REMOTE);
  /* The region is the only thing of the other domain; window and queue
   * pair are of the passive side's. */
  cert_buf_new(other, &m.tgt, TGT_LEN, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  cert_ok(MW->mw_alloc(m.pr.p.pd, type, &m.mw));
  g_assert_cmpint(m.mw->type, ==, type);

  uint64_t key = mw_post_bind(&m, BAD_ID, WIN_OFF, WIN_LEN, REMOTE);
  rnicpi_wc_t wc = cert_wc(m.pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmphex(wc.qp_ctx, ==, m.pr.p.ctx);
  if (wc.status == RNICPI_WC_SUCCESS)
    g_test_message("the %s window was bound to a region of another protection domain, key "
                   "0x%" G_GINT64_MODIFIER "x", name, key);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_MW_BIND_ERR);
  cert_wait_state(m.pr.p.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(m.pr.p.scq);
  /* A local error need not reach the peer at once. */
  if (QUE->qp_state(m.pr.a.qp) != RNICPI_QPS_ERROR)
    cert_ok(QUE->qp_to_error(m.pr.a.qp));

  /* The binding queue pair is gone: ask through another one of the
   * window's domain (a narrow window would refuse it anyway, a wide one
   * only because it is not bound). */
  mw_write_refused_elsewhere(f, &m, key, 64, TRUE);
  mw_close(&m);
  cert_ok(DEV->pd_free(other));
}

/* ---- invalidation from the wrong place -------------------------------- */

/* A LOCAL_INV of @key posted on @qp, which must not invalidate it: the
 * request completes with an error and its wr_id, and @qp enters ERROR. */
static void
local_inv_refused(rnicpi_qp_t *qp, rnicpi_cq_t *scq, uint64_t key)
{
  rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = RNICPI_WR_LOCAL_INV,
                          .flags = RNICPI_WR_SIGNALED, .invalidate_rkey = key };
  cert_ok(DAT->post_send(qp, &wr));
  rnicpi_wc_t wc = cert_wc(scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  if (wc.status == RNICPI_WC_SUCCESS)
    g_test_message("LOCAL_INV of key 0x%" G_GINT64_MODIFIER "x succeeded on a queue pair of "
                   "another protection domain", key);
  g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  cert_wait_state(qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(scq);
}

/* A SEND_INV of @key from @pr2's active side, which its passive side must
 * refuse: the Send is refused (cert_expect_refused) and the receive it
 * would have used completes flushed, never with the key invalidated. */
static void
send_inv_refused(cert_t *f, cert_pair_t *pr2, uint64_t key)
{
  cert_buf_t rb, sb;
  cert_buf_new(pr2->p.pd, &rb, 64, RW);
  cert_buf_new(pr2->a.pd, &sb, 64, RW);
  cert_post_recv(pr2->p.qp, &rb, 0, 64, 0x4ed);
  cert_buf_fill(&sb, 5);
  rnicpi_sge_t sge = cert_sge(&sb, 0, 32);
  rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = RNICPI_WR_SEND_INV,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .invalidate_rkey = key };
  cert_ok(DAT->post_send(pr2->a.qp, &wr));
  cert_expect_refused(f, pr2, BAD_ID, TRUE);
  rnicpi_wc_t r = cert_wc(pr2->p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0x4ed);
  g_assert_cmpint(r.status, ==, RNICPI_WC_WR_FLUSH_ERR);
  cert_assert_cq_quiet(pr2->p.rcq);
  cert_buf_free(&rb);
  cert_buf_free(&sb);
}

/* A wide window bound over the target of @m, and a second connection
 * whose queue pairs are in domains of their own. */
static gboolean
wide_other_pd_open(cert_t *f, mw_setup_t *m, cert_pair_t *pr2, uint64_t *key)
{
  memset(m, 0, sizeof(*m));
  if (!cert_require(f, RNICPI_CAP_MW_WIDE) || !cert_pair_open(f, &m->pr, NULL))
    return FALSE;
  cert_buf_new(m->pr.a.pd, &m->src, TGT_LEN, RW | REMOTE);
  cert_buf_new(m->pr.p.pd, &m->tgt, TGT_LEN, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  cert_ok(MW->mw_alloc(m->pr.p.pd, RNICPI_MW_WIDE, &m->mw));
  *key = mw_bind_ok(m, REMOTE);
  mw_second_open(f, m, pr2, TRUE);
  return TRUE;
}

/* The window of @m still answers through @key: a Write lands in it. */
static void
wide_still_bound(cert_t *f, mw_setup_t *m, uint64_t key, uint8_t seed)
{
  cert_buf_fill(&m->src, seed);
  cert_write_ok(f, &m->pr, &m->src, 0, 64, win_addr(m, 0), key);
  tgt_only(m, WIN_OFF, 64, seed);
}

/* A wide window's key named by an invalidation from a queue pair of
 * another domain (@by_send: the peer's SEND_INV arriving there; else a
 * LOCAL_INV posted there): refused, and the window still answers. */
static void
wide_inv_other_pd(cert_t *f, gboolean by_send, uint8_t seed)
{
  if (!cert_require(f, by_send ? RNICPI_CAP_REMOTE_INVALIDATE : RNICPI_CAP_LOCAL_INVALIDATE))
    return;
  mw_setup_t m;
  cert_pair_t pr2;
  uint64_t key;
  if (!wide_other_pd_open(f, &m, &pr2, &key))
    return;
  if (by_send)
    send_inv_refused(f, &pr2, key);
  else
    local_inv_refused(pr2.p.qp, pr2.p.scq, key);
  wide_still_bound(f, &m, key, seed);
  mw_second_close(&pr2, TRUE);
  mw_close(&m);
}

static void
test_mw_local_inv_other_pd(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("LOCAL_INV of a bound wide window's key posted on a queue pair of another "
                 "protection domain completes with an error and invalidates nothing: an RDMA "
                 "Write through the key afterwards still lands in the window");
  wide_inv_other_pd(f, FALSE, 21);
}

static void
test_mw_send_inv_other_pd(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("SEND_INV naming a bound wide window of another protection domain than the "
                 "receiving queue pair's is refused (RFC 5040 6.10, IBTA 9.4.1.1.1): the receive "
                 "is flushed, never completed with the key, and an RDMA Write through the key "
                 "afterwards still lands in the window");
  wide_inv_other_pd(f, TRUE, 22);
}

static void
test_mw_send_inv_region_key(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("SEND_INV naming the key of a region registered with mr_register (not a "
                 "window, not fast-registered) is refused: the receive is flushed, and the "
                 "region keeps its key: a Write through it on a new connection lands");
  if (!cert_require(f, RNICPI_CAP_REMOTE_INVALIDATE))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t tgt;
  cert_buf_new(pr.p.pd, &tgt, TGT_LEN, RW | REMOTE);
  send_inv_refused(f, &pr, tgt.mr->rkey);
  /* A new connection into the same passive domain writes through the key. */
  mw_setup_t m;
  memset(&m, 0, sizeof(m));
  m.pr = pr;
  cert_pair_t pr2;
  mw_second_open(f, &m, &pr2, FALSE);
  cert_buf_t src;
  cert_buf_new(pr2.a.pd, &src, 64, RW);
  cert_buf_fill(&src, 23);
  cert_write_ok(f, &pr2, &src, 0, 64, cert_raddr(&tgt, 128), tgt.mr->rkey);
  cert_buf_check(&tgt, 128, 64, 23);
  cert_buf_free(&src);
  mw_second_close(&pr2, FALSE);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* One page of fresh memory fast-registered by @pr's passive side: the
 * registration completed successfully, and @fr keeps its work request
 * for a repost.  g_free(fr->mem) after mr_dereg(fr->mr). */
typedef struct {
  uint8_t *mem, *buf; /* the allocation, and the page-aligned page in it */
  uint64_t page;      /* the page list of the request */
  rnicpi_mr_t *mr;
  rnicpi_send_wr_t wr;
} fr_page_t;

enum { FR_PAGE = 4096 };

static void
fr_page_reg(cert_pair_t *pr, fr_page_t *fr, uint64_t id)
{
  memset(fr, 0, sizeof(*fr));
  fr->mem = g_malloc0(3 * FR_PAGE);
  fr->buf = (uint8_t *) (((uintptr_t) fr->mem + FR_PAGE - 1) & ~(uintptr_t) (FR_PAGE - 1));
  fr->page = (uint64_t) (uintptr_t) fr->buf;
  cert_ok(MEM->mr_alloc(pr->p.pd, 1, &fr->mr));
  fr->wr = (rnicpi_send_wr_t) { .wr_id = id, .opcode = RNICPI_WR_FAST_REG,
                                .flags = RNICPI_WR_SIGNALED };
  fr->wr.fast_reg = (rnicpi_fast_reg_t) {
    .mr = fr->mr, .addr = fr->buf, .length = FR_PAGE, .iova = fr->page,
    .access = RW | REMOTE, .page_size = FR_PAGE, .num_pages = 1, .pages = &fr->page,
  };
  cert_ok(DAT->post_send(pr->p.qp, &fr->wr));
  rnicpi_wc_t wc = cert_wc(pr->p.scq);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
}

static void
test_mr_fast_reg_inv_other_pd(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("LOCAL_INV of a valid fast-registered region's key posted on a queue pair of "
                 "another protection domain completes with an error and invalidates nothing: "
                 "an RDMA Write through the key afterwards still lands");
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER) || !cert_require(f, RNICPI_CAP_LOCAL_INVALIDATE))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  fr_page_t fr;
  fr_page_reg(&pr, &fr, 0xf6);
  uint64_t key = fr.mr->rkey;

  mw_setup_t none;
  memset(&none, 0, sizeof(none));
  cert_pair_t pr2;
  mw_second_open(f, &none, &pr2, TRUE);
  local_inv_refused(pr2.p.qp, pr2.p.scq, key);
  mw_second_close(&pr2, TRUE);

  cert_buf_t src;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_fill(&src, 24);
  cert_write_ok(f, &pr, &src, 0, 64, fr.page + 256, key);
  g_assert_cmpmem(fr.buf + 256, 64, src.data, 64);
  for (size_t i = 0; i < FR_PAGE; i++)
    if (i < 256 || i >= 256 + 64)
      g_assert_cmphex(fr.buf[i], ==, 0);
  cert_ok(QUE->qp_to_error(pr.p.qp));
  cert_ok(MEM->mr_dereg(fr.mr));
  g_free(fr.mem);
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

static void
test_mr_fast_reg_valid(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a FAST_REG of a region that is already valid (registered and not invalidated) "
                 "completes with RNICPI_WC_MEM_MGT_ERR, opcode FAST_REG, and the queue pair enters "
                 "ERROR");
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  fr_page_t fr;
  fr_page_reg(&pr, &fr, 0xf5);
  fr.wr.wr_id = BAD_ID;
  cert_ok(DAT->post_send(pr.p.qp, &fr.wr));
  rnicpi_wc_t wc = cert_wc(pr.p.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_MEM_MGT_ERR);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_FAST_REG);
  cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pr.p.scq);
  if (QUE->qp_state(pr.a.qp) != RNICPI_QPS_ERROR)
    cert_ok(QUE->qp_to_error(pr.a.qp));
  cert_ok(MEM->mr_dereg(fr.mr));
  g_free(fr.mem);
  cert_pair_free(&pr);
}

static void
test_mr_fast_reg_send_inv(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("SEND_INV naming the key of the peer's valid fast-registered region: the "
                 "peer's receive completes with the bytes, flag RNICPI_WC_WITH_INV and that key "
                 "in rkey; an RDMA Write through the key afterwards is refused and writes "
                 "nothing");
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER) || !cert_require(f, RNICPI_CAP_REMOTE_INVALIDATE))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  fr_page_t fr;
  fr_page_reg(&pr, &fr, 0xf7);
  uint64_t key = fr.mr->rkey;
  cert_buf_t rb, src;
  cert_buf_new(pr.p.pd, &rb, 64, RW);
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_post_recv(pr.p.qp, &rb, 0, 64, 0x4ee);
  cert_buf_fill(&src, 25);
  rnicpi_sge_t sge = cert_sge(&src, 0, 32);
  rnicpi_send_wr_t wr = { .wr_id = 0x5e2, .opcode = RNICPI_WR_SEND_INV,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .invalidate_rkey = key };
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0x4ee);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(r.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmpuint(r.byte_len, ==, 32);
  g_assert_cmphex(r.flags & RNICPI_WC_WITH_INV, ==, RNICPI_WC_WITH_INV);
  g_assert_cmphex(r.rkey, ==, key);
  cert_buf_check(&rb, 0, 32, 25);
  rnicpi_wc_t s = cert_wc(pr.a.scq);
  g_assert_cmphex(s.wr_id, ==, 0x5e2);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  cert_assert_cq_quiet(pr.p.rcq);

  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 fr.page, key);
  cert_expect_refused(f, &pr, BAD_ID, TRUE);
  for (size_t i = 0; i < FR_PAGE; i++)
    g_assert_cmphex(fr.buf[i], ==, 0);
  cert_ok(MEM->mr_dereg(fr.mr));
  g_free(fr.mem);
  cert_buf_free(&rb);
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

static void
test_mw_read_sink_inv(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read with RNICPI_WR_SINK_MW scatters into a window of the requester's "
                 "(its key and window addresses in the SGE) and lands at the window's place in "
                 "the region; RNICPI_WR_RDMA_READ_INV also kills the sink key: its completion "
                 "carries RNICPI_WC_WITH_INV and that key, and a later Read into the dead key "
                 "completes with RNICPI_WC_LOC_PROT_ERR, the region untouched");
  if (!cert_require(f, RNICPI_CAP_READ_SINK_MW) || !cert_require(f, RNICPI_CAP_LOCAL_INVALIDATE))
    return;
  rnicpi_mw_type_t type;
  if (!mw_type(f, &type))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t sink, tgt;
  cert_buf_new(pr.a.pd, &sink, TGT_LEN, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  cert_buf_new(pr.p.pd, &tgt, TGT_LEN, RW | REMOTE);
  cert_buf_fill(&tgt, 16);
  rnicpi_mw_t *mw = NULL;
  cert_ok(MW->mw_alloc(pr.a.pd, type, &mw));
  rnicpi_send_wr_t b = { .wr_id = 0xb1e, .opcode = RNICPI_WR_BIND_MW, .flags = RNICPI_WR_SIGNALED };
  b.bind = (rnicpi_bind_t) { .mw = mw, .mr = sink.mr, .addr = cert_raddr(&sink, WIN_OFF),
                             .length = WIN_LEN, .access = RNICPI_ACCESS_REMOTE_WRITE };
  cert_ok(DAT->post_send(pr.a.qp, &b));
  uint64_t key = mw->rkey;
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);

  /* A Read into the window's bytes 100..299. */
  rnicpi_sge_t sge = { .addr = cert_raddr(&sink, WIN_OFF + 100), .length = 200, .lkey = key };
  rnicpi_send_wr_t rd = { .wr_id = 0x4e1, .opcode = RNICPI_WR_RDMA_READ,
                          .flags = RNICPI_WR_SIGNALED | RNICPI_WR_SINK_MW, .sg_list = &sge,
                          .num_sge = 1, .remote_addr = cert_raddr(&tgt, 0), .rkey = tgt.mr->rkey };
  cert_ok(DAT->post_send(pr.a.qp, &rd));
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x4e1);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  g_assert_cmpmem(sink.data + WIN_OFF + 100, 200, tgt.data, 200);

  /* Read with Invalidate of the sink key. */
  sge.addr = cert_raddr(&sink, WIN_OFF + 300);
  rd.wr_id = 0x4e2;
  rd.opcode = RNICPI_WR_RDMA_READ_INV;
  rd.invalidate_rkey = key;
  rd.remote_addr = cert_raddr(&tgt, 200);
  cert_ok(DAT->post_send(pr.a.qp, &rd));
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x4e2);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  g_assert_cmphex(wc.flags & RNICPI_WC_WITH_INV, ==, RNICPI_WC_WITH_INV);
  g_assert_cmphex(wc.rkey, ==, key);
  g_assert_cmpmem(sink.data + WIN_OFF + 300, 200, tgt.data + 200, 200);

  /* The dead key takes nothing more. */
  memset(sink.data, 0, sink.len);
  sge.addr = cert_raddr(&sink, WIN_OFF);
  rd.wr_id = BAD_ID;
  rd.opcode = RNICPI_WR_RDMA_READ;
  rd.remote_addr = cert_raddr(&tgt, 0);
  cert_ok(DAT->post_send(pr.a.qp, &rd));
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_LOC_PROT_ERR);
  for (size_t i = 0; i < sink.len; i++)
    g_assert_cmphex(sink.data[i], ==, 0);
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pr.a.scq);
  cert_ok(MW->mw_dealloc(mw));
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

void
cert_register_mw(void)
{
  cert_add("/rnicpi/mw/bind-access", test_mw_bind_access);
  cert_add("/rnicpi/mw/write-past-window", test_mw_write_past_window);
  cert_add("/rnicpi/mw/write-before-window", test_mw_write_before_window);
  cert_add("/rnicpi/mw/window-rights", test_mw_window_rights);
  for (size_t i = 0; i < G_N_ELEMENTS(bind_cases); i++)
    cert_add_data(bind_cases[i].path, &bind_cases[i], test_mw_bind_refused);
  cert_add("/rnicpi/mw/bind-zero-based-region", test_mw_bind_zero_based_region);
  cert_add("/rnicpi/mw/local-invalidate", test_mw_local_invalidate);
  cert_add("/rnicpi/mw/send-invalidate", test_mw_send_invalidate);
  cert_add("/rnicpi/mw/rebind-old-key", test_mw_rebind_old_key);
  cert_add("/rnicpi/mw/dealloc-bound", test_mw_dealloc_bound);
  cert_add("/rnicpi/mw/narrow-other-qp", test_mw_narrow_other_qp);
  cert_add("/rnicpi/mw/wide-any-qp", test_mw_wide_any_qp);
  g_test_add("/rnicpi/mw/bind-region-other-pd/wide", cert_t, GINT_TO_POINTER(RNICPI_MW_WIDE),
             cert_setup, test_mw_bind_region_other_pd, cert_teardown);
  g_test_add("/rnicpi/mw/bind-region-other-pd/narrow", cert_t, GINT_TO_POINTER(RNICPI_MW_NARROW),
             cert_setup, test_mw_bind_region_other_pd, cert_teardown);
  cert_add("/rnicpi/mw/read-sink-invalidate", test_mw_read_sink_inv);
  cert_add("/rnicpi/mw/local-invalidate-other-pd", test_mw_local_inv_other_pd);
  cert_add("/rnicpi/mw/send-invalidate-other-pd", test_mw_send_inv_other_pd);
  cert_add("/rnicpi/mw/send-invalidate-region-key", test_mw_send_inv_region_key);
  cert_add("/rnicpi/mr/fast-reg-invalidate-other-pd", test_mr_fast_reg_inv_other_pd);
  cert_add("/rnicpi/mr/fast-reg-invalidate", test_mr_fast_reg);
  cert_add("/rnicpi/mr/fast-reg-valid", test_mr_fast_reg_valid);
  cert_add("/rnicpi/mr/fast-reg-send-invalidate", test_mr_fast_reg_send_inv);
}
