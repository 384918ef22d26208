/*
 * cert-rnicpi: the limits of the capability record that count objects
 * (max_pd, max_cq, max_qp, max_srq, max_mr) and the largest message
 * (max_msg_size), at the limit, and the windows a device can key (the
 * record has no count of them).  A device holds max_* objects of a kind
 * and refuses one more with RNICPI_ELIMIT; a message of max_msg_size
 * bytes moves whole.  Where a limit is beyond what a test can make in a
 * few seconds (more than 100,000 objects, or 64 MiB), the test says so
 * and leaves that limit out, or is skipped.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define REMOTE (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define SRQ (cert_prov->srq)
#define MW (cert_prov->mw)

/* The most objects of a kind, and the longest message, a test makes. */
#define COUNT_MAX 100000u
#define MSG_MAX (64ull * 1024 * 1024)

/** One kind of object: how to make and free one. */
typedef struct kind {
  const char *name;   /* the record's field */
  uint32_t max;
  /* Make one (@i-th) into *@obj: the provider's status. */
  rnicpi_status_t (*make)(cert_t *f, void *ctx, uint32_t i, void **obj);
  rnicpi_status_t (*free)(void *obj);
} kind_t;

/* What a kind's objects are made of: a domain, a CQ. */
typedef struct count_ctx {
  rnicpi_pd_t *pd;
  rnicpi_cq_t *cq;
} count_ctx_t;

static rnicpi_status_t
make_pd(cert_t *f, void *ctx, uint32_t i, void **obj)
{
  (void) ctx;
  (void) i;
  return DEV->pd_alloc(f->dev, (rnicpi_pd_t **) obj);
}

static rnicpi_status_t
free_pd(void *obj)
{
  return DEV->pd_free(obj);
}

static rnicpi_status_t
make_cq(cert_t *f, void *ctx, uint32_t i, void **obj)
{
  (void) ctx;
  return QUE->cq_create(f->dev, 1, 0xc0000000ull + i, (rnicpi_cq_t **) obj);
}

static rnicpi_status_t
free_cq(void *obj)
{
  return QUE->cq_destroy(obj);
}

static rnicpi_status_t
make_qp(cert_t *f, void *ctx, uint32_t i, void **obj)
{
  count_ctx_t *c = ctx;
  rnicpi_qp_attr_t a = cert_qp_attr(f, c->cq, c->cq);
  a.max_send_wr = a.max_recv_wr = 1;
  a.max_send_sge = a.max_recv_sge = a.max_rdma_write_sge = a.max_rdma_read_sge = 1;
  return QUE->qp_create(c->pd, &a, 0xd0000000ull + i, (rnicpi_qp_t **) obj);
}

static rnicpi_status_t
free_qp(void *obj)
{
  return QUE->qp_destroy(obj);
}

static rnicpi_status_t
make_srq(cert_t *f, void *ctx, uint32_t i, void **obj)
{
  (void) f;
  count_ctx_t *c = ctx;
  return SRQ->srq_create(c->pd, 1, 1, 0xe0000000ull + i, (rnicpi_srq_t **) obj);
}

static rnicpi_status_t
free_srq(void *obj)
{
  return SRQ->srq_destroy(obj);
}

/* Make @k->max objects of @k (@have of them exist already), then one
 * more, which must be RNICPI_ELIMIT; free them.  FALSE when the limit is
 * beyond COUNT_MAX (nothing made). */
static gboolean
fill_to_limit(cert_t *f, const kind_t *k, void *ctx, uint32_t have)
{
  if (k->max > COUNT_MAX) {
    g_test_message("%s is %u, above the %u objects a test makes: not checked", k->name, k->max,
                   COUNT_MAX);
    return FALSE;
  }
  g_assert_cmpuint(k->max, >=, have);
  uint32_t n = k->max - have;
  void **objs = g_new0(void *, MAX(n, 1u));
  for (uint32_t i = 0; i < n; i++) {
    rnicpi_status_t st = k->make(f, ctx, i, &objs[i]);
    if (st != RNICPI_OK)
      g_test_message("%s is %u, but making object %u of it (%u made before the test) was %s",
                     k->name, k->max, have + i + 1, have, rnicpi_status_name(st));
    cert_ok(st);
  }
  void *extra = NULL;
  rnicpi_status_t st = k->make(f, ctx, n, &extra);
  if (st != RNICPI_ELIMIT)
    g_test_message("%s is %u: making one more with %u existing was %s", k->name, k->max, k->max,
                   rnicpi_status_name(st));
  if (st == RNICPI_OK)
    cert_ok(k->free(extra));
  cert_cmpst(st, RNICPI_ELIMIT);
  g_test_message("%s: %u made, one more refused with RNICPI_ELIMIT", k->name, k->max);
  /* Freed, the room is back: one more is made. */
  if (n > 0) {
    cert_ok(k->free(objs[n - 1]));
    cert_ok(k->make(f, ctx, n - 1, &objs[n - 1]));
  }
  for (uint32_t i = n; i-- > 0;)
    cert_ok(k->free(objs[i]));
  g_free(objs);
  return TRUE;
}

static void
test_object_limits(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("max_pd, max_cq, max_qp and max_srq bound how many objects a device holds: "
                 "with max_* of a kind made (counting those the test needs besides), one more "
                 "is RNICPI_ELIMIT, and once one is freed one more can be made; a limit above "
                 "100,000 is not checked (said in the log), all of them above it skip the test");
  const rnicpi_caps_t *c = &f->caps;
  gboolean srq = (c->features & RNICPI_CAP_SRQ) != 0;
  if (c->max_pd > COUNT_MAX && c->max_cq > COUNT_MAX && c->max_qp > COUNT_MAX &&
      (!srq || c->max_srq > COUNT_MAX)) {
    cert_skipf("max_pd %u, max_cq %u, max_qp %u, max_srq %u: each above the %u objects a test "
               "makes", c->max_pd, c->max_cq, c->max_qp, c->max_srq, COUNT_MAX);
    return;
  }
  count_ctx_t ctx = { 0 };
  int checked = 0;
  const kind_t pd = { "max_pd", c->max_pd, make_pd, free_pd };
  checked += fill_to_limit(f, &pd, &ctx, 0);
  const kind_t cq = { "max_cq", c->max_cq, make_cq, free_cq };
  checked += fill_to_limit(f, &cq, &ctx, 0);
  /* Queue pairs and SRQs in one domain; the queue pairs complete into one CQ. */
  cert_ok(DEV->pd_alloc(f->dev, &ctx.pd));
  cert_ok(QUE->cq_create(f->dev, 4, 0xc1, &ctx.cq));
  const kind_t qp = { "max_qp", c->max_qp, make_qp, free_qp };
  checked += fill_to_limit(f, &qp, &ctx, 0);
  if (srq) {
    const kind_t sq = { "max_srq", c->max_srq, make_srq, free_srq };
    checked += fill_to_limit(f, &sq, &ctx, 0);
  }
  cert_ok(QUE->cq_destroy(ctx.cq));
  cert_ok(DEV->pd_free(ctx.pd));
  g_assert_cmpint(checked, >, 0);
}

static void
test_mr_count_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mr_reg with max_mr regions live is RNICPI_ELIMIT, and so is mr_alloc "
                 "(fast-register); once one is deregistered one more can be registered; "
                 "skipped where max_mr is above 100,000");
  uint32_t max = f->caps.max_mr;
  if (max > COUNT_MAX) {
    cert_skipf("max_mr is %u, above the %u regions a test makes", max, COUNT_MAX);
    return;
  }
  rnicpi_pd_t *pd = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  uint8_t *mem = g_malloc0(64);
  rnicpi_mr_attr_t ma = { .addr = mem, .length = 64, .iova = (uint64_t) (uintptr_t) mem,
                          .access = RW };
  rnicpi_mr_t **mrs = g_new0(rnicpi_mr_t *, MAX(max, 1u));
  for (uint32_t i = 0; i < max; i++) {
    rnicpi_status_t st = MEM->mr_reg(pd, &ma, &mrs[i]);
    if (st != RNICPI_OK)
      g_test_message("max_mr is %u, but registering region %u was %s", max, i + 1,
                     rnicpi_status_name(st));
    cert_ok(st);
  }
  rnicpi_mr_t *extra = NULL;
  rnicpi_status_t st = MEM->mr_reg(pd, &ma, &extra);
  if (st == RNICPI_OK)
    cert_ok(MEM->mr_dereg(extra));
  cert_cmpst(st, RNICPI_ELIMIT);
  if (f->caps.features & RNICPI_CAP_FAST_REGISTER) {
    st = MEM->mr_alloc(pd, 1, &extra);
    if (st == RNICPI_OK)
      cert_ok(MEM->mr_dereg(extra));
    cert_cmpst(st, RNICPI_ELIMIT);
  } else {
    g_test_message("no fast-register: mr_alloc not checked");
  }
  if (max > 0) {
    cert_ok(MEM->mr_dereg(mrs[max - 1]));
    cert_ok(MEM->mr_reg(pd, &ma, &mrs[max - 1]));
  }
  for (uint32_t i = max; i-- > 0;)
    cert_ok(MEM->mr_dereg(mrs[i]));
  g_free(mrs);
  g_free(mem);
  cert_ok(DEV->pd_free(pd));
}

static void
test_mw_count_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("mw_alloc with no window key left is RNICPI_ELIMIT, and once one window is "
                 "freed one more can be allocated; skipped where 100,000 windows are allocated "
                 "without a refusal (the record has no count of windows to aim at)");
  rnicpi_mw_type_t type = (f->caps.features & RNICPI_CAP_MW_NARROW) ? RNICPI_MW_NARROW : RNICPI_MW_WIDE;
  if (!cert_require(f, type == RNICPI_MW_NARROW ? RNICPI_CAP_MW_NARROW : RNICPI_CAP_MW_WIDE))
    return;
  rnicpi_pd_t *pd = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  GPtrArray *mws = g_ptr_array_new();
  rnicpi_status_t st = RNICPI_OK;
  while (mws->len < COUNT_MAX) {
    rnicpi_mw_t *mw = NULL;
    st = MW->mw_alloc(pd, type, &mw);
    if (st != RNICPI_OK)
      break;
    g_ptr_array_add(mws, mw);
  }
  guint made = mws->len;
  if (st != RNICPI_OK) {
    g_test_message("window %u was refused with %s", made + 1, rnicpi_status_name(st));
    cert_cmpst(st, RNICPI_ELIMIT);
    /* A freed window's key is the device's again. */
    g_assert_cmpuint(made, >, 0);
    cert_ok(MW->mw_dealloc(g_ptr_array_index(mws, made - 1)));
    cert_ok(MW->mw_alloc(pd, type, (rnicpi_mw_t **) &g_ptr_array_index(mws, made - 1)));
  }
  for (guint i = made; i-- > 0;)
    cert_ok(MW->mw_dealloc(g_ptr_array_index(mws, i)));
  g_ptr_array_free(mws, TRUE);
  cert_ok(DEV->pd_free(pd));
  if (st == RNICPI_OK)
    cert_skipf("%u windows were allocated without a refusal: the limit is beyond what a test "
               "makes", COUNT_MAX);
}

static void
test_max_message(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("max_msg_size is the largest message of any operation: a Send, an RDMA Write "
                 "and an RDMA Read of exactly max_msg_size bytes each complete successfully "
                 "with that length and every byte; skipped where max_msg_size is above 64 MiB");
  uint64_t len = f->caps.max_msg_size;
  if (len > MSG_MAX) {
    cert_skipf("max_msg_size is %" G_GUINT64_FORMAT " bytes, above the 64 MiB a test moves", len);
    return;
  }
  if (len > f->caps.max_mr_size) {
    g_test_skip("max_mr_size is below max_msg_size: no one region holds a message");
    return;
  }
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  uint32_t n = (uint32_t) len;
  cert_buf_t src, dst, sink;
  cert_buf_new(pr.a.pd, &src, n, RW);
  cert_buf_new(pr.p.pd, &dst, n, RW | REMOTE);
  cert_buf_new(pr.a.pd, &sink, n, cert_sink_access(f));
  cert_buf_fill(&src, 0x4d);
  cert_post_recv(pr.p.qp, &dst, 0, n, 0x3301);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, n, 0x3302, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x3302);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  wc = cert_wc(pr.p.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0x3301);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, n);
  cert_buf_check(&dst, 0, n, 0x4d);

  cert_buf_fill(&src, 0x5e);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_WRITE, &src, 0, n, 0x3303, RNICPI_WR_SIGNALED,
                 cert_raddr(&dst, 0), dst.mr->rkey);
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x3303);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_placed(f, &pr, cert_raddr(&dst, 0), dst.mr->rkey);
  cert_buf_check(&dst, 0, n, 0x5e);

  cert_buf_fill(&dst, 0x6f);
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, n, 0x3304, RNICPI_WR_SIGNALED,
                 cert_raddr(&dst, 0), dst.mr->rkey);
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x3304);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_check(&sink, 0, n, 0x6f);
  cert_buf_check_guards(&src);
  cert_buf_check_guards(&dst);
  cert_buf_check_guards(&sink);
  cert_buf_free(&sink);
  cert_buf_free(&dst);
  cert_buf_free(&src);
  cert_pair_free(&pr);
}

void
cert_register_count(void)
{
  cert_add("/rnicpi/device/object-limits", test_object_limits);
  cert_add("/rnicpi/mr/count-limit", test_mr_count_limit);
  cert_add("/rnicpi/mw/count-limit", test_mw_count_limit);
  cert_add("/rnicpi/data/max-message", test_max_message);
}
