/*
 * cert-rnicpi: the edges of limits, keys and states no other file
 * reaches: the SGE counts a queue pair, a shared receive queue and a UD
 * queue pair were created with, shrinking an SRQ below what it holds, a
 * gather entry that ends one byte past its region, qp_reset of a
 * connected queue pair, the event types rnicpi.h gives a refused Read's
 * causes, an atomic whose local buffer is not 8 bytes, the page and
 * domain rules of a fast registration and of invalidating such a region
 * under a bound window,
 * windows (bound through a queue pair of another domain, used as a local
 * key, invalidated through another queue pair, freed with a bind queued),
 * Read sinks of windows (bounds, domain, the binding queue pair), and
 * datagrams (the GRH's room in a receive, an address handle of another
 * domain, a queue pair in ERROR).  Each test states a rule every RNIC
 * obeys and skips, by capability, where the device lacks the feature;
 * each catches a seeded defect of tools/mutate/defects.txt (E20-E42, S03)
 * that the rest of the catalog let through.
 *
 * SPDX-License-Identifier: MIT
 */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define REMOTE (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define BAD_ID 0xbad0
#define PAGE 4096
#define MW (cert_prov->mw)
#define SRQ (cert_prov->srq)
#define UDO (cert_prov->ud)

/* A local failure need not reach the peer at once: bring @peer down too,
 * so both queue pairs end in ERROR before the pair is freed. */
static void
edge_peer_down(cert_side_t *peer)
{
  if (QUE->qp_state(peer->qp) != RNICPI_QPS_ERROR)
    cert_ok(QUE->qp_to_error(peer->qp));
}

/* The completion of @id on @cq: status @st, its queue pair @ctx. */
static void
edge_expect(rnicpi_cq_t *cq, uint64_t id, uint64_t ctx, rnicpi_wc_status_t st)
{
  rnicpi_wc_t wc = cert_wc(cq);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmphex(wc.qp_ctx, ==, ctx);
  g_assert_cmpint(wc.status, ==, st);
}

/* Every byte of [off, off + len) of @b is zero. */
static void
edge_zero(const cert_buf_t *b, size_t off, size_t len)
{
  for (size_t i = off; i < off + len; i++)
    if (b->data[i] != 0) {
      g_test_message("byte %zu is 0x%02x: written though the request was refused", i, b->data[i]);
      g_assert_cmphex(b->data[i], ==, 0);
    }
  cert_buf_check_guards(b);
}

/* ---- SGE counts ------------------------------------------------------- */

static void
test_sge_limits_per_queue(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a queue pair created with max_send_sge 2 and max_recv_sge, max_rdma_write_sge "
                 "and max_rdma_read_sge 1: post_recv of 2 SGEs, an RDMA Write of 2 SGEs and an "
                 "RDMA Read of 2 SGEs are each refused with RNICPI_ELIMIT and complete nothing, "
                 "while a Send of 2 SGEs is taken and lands whole in a 1-SGE receive");
  if (f->caps.max_send_sge < 2) {
    g_test_skip("the device allows fewer than 2 send SGEs");
    return;
  }
  rnicpi_qp_attr_t a = cert_qp_attr(f, NULL, NULL);
  a.max_send_sge = 2;
  a.max_recv_sge = 1;
  a.max_rdma_write_sge = 1;
  a.max_rdma_read_sge = 1;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, &a))
    return;
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 256, RW | REMOTE);
  cert_buf_new(pr.p.pd, &dst, 256, RW | REMOTE);
  cert_buf_fill(&src, 21);

  rnicpi_sge_t two[2] = { cert_sge(&dst, 0, 32), cert_sge(&dst, 32, 32) };
  rnicpi_recv_wr_t rwr = { .wr_id = BAD_ID, .sg_list = two, .num_sge = 2 };
  cert_cmpst(DAT->post_recv(pr.p.qp, &rwr), RNICPI_ELIMIT);

  rnicpi_sge_t g[2] = { cert_sge(&src, 0, 16), cert_sge(&src, 16, 16) };
  rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = RNICPI_WR_RDMA_WRITE,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = g, .num_sge = 2,
                          .remote_addr = cert_raddr(&dst, 128), .rkey = dst.mr->rkey };
  cert_cmpst(DAT->post_send(pr.a.qp, &wr), RNICPI_ELIMIT);
  wr.opcode = RNICPI_WR_RDMA_READ;
  cert_cmpst(DAT->post_send(pr.a.qp, &wr), RNICPI_ELIMIT);
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.rcq);
  edge_zero(&dst, 0, dst.len);

  /* The send queue's own limit is 2: a Send of 2 entries goes. */
  cert_post_recv(pr.p.qp, &dst, 0, 64, 0x4ec);
  wr = (rnicpi_send_wr_t) { .wr_id = 0x5e2, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                            .sg_list = g, .num_sge = 2 };
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  rnicpi_wc_t r = cert_wc(pr.p.rcq);
  g_assert_cmphex(r.wr_id, ==, 0x4ec);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(r.byte_len, ==, 32);
  cert_buf_check(&dst, 0, 32, 21);
  edge_expect(pr.a.scq, 0x5e2, pr.a.ctx, RNICPI_WC_SUCCESS);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_srq_sge_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("post_srq_recv of more SGEs than the shared receive queue's max_sge is refused "
                 "with RNICPI_ELIMIT and queues nothing (srq_count stays 0); at max_sge it is "
                 "taken");
  if (!cert_require(f, RNICPI_CAP_SRQ))
    return;
  if (f->caps.max_recv_sge < 2) {
    g_test_skip("the device allows fewer than 2 receive SGEs");
    return;
  }
  rnicpi_pd_t *pd = NULL;
  rnicpi_srq_t *srq = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_ok(SRQ->srq_create(pd, 4, 1, 0x5e0, &srq));
  cert_buf_t rb;
  cert_buf_new(pd, &rb, 128, RW);
  rnicpi_sge_t two[2] = { cert_sge(&rb, 0, 32), cert_sge(&rb, 32, 32) };
  rnicpi_recv_wr_t wr = { .wr_id = BAD_ID, .sg_list = two, .num_sge = 2 };
  cert_cmpst(SRQ->post_srq_recv(srq, &wr), RNICPI_ELIMIT);
  g_assert_cmpuint(SRQ->srq_count(srq), ==, 0);
  wr.num_sge = 1;
  cert_ok(SRQ->post_srq_recv(srq, &wr));
  g_assert_cmpuint(SRQ->srq_count(srq), ==, 1);
  cert_ok(SRQ->srq_destroy(srq));
  cert_buf_free(&rb);
  cert_ok(DEV->pd_free(pd));
}

static void
test_srq_shrink_below_count(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("srq_modify shrinking a shared receive queue that holds 4 receives to max_wr 3 "
                 "is refused with RNICPI_EBUSY and changes nothing: the 4 receives stay "
                 "(srq_count 4), and shrinking to 4 is taken");
  if (!cert_require(f, RNICPI_CAP_SRQ))
    return;
  rnicpi_pd_t *pd = NULL;
  rnicpi_srq_t *srq = NULL;
  cert_ok(DEV->pd_alloc(f->dev, &pd));
  cert_ok(SRQ->srq_create(pd, 8, 1, 0x5e1, &srq));
  cert_buf_t rb;
  cert_buf_new(pd, &rb, 256, RW);
  for (int i = 0; i < 4; i++) {
    rnicpi_sge_t sge = cert_sge(&rb, (size_t) i * 64, 64);
    rnicpi_recv_wr_t wr = { .wr_id = 0x4a0 + (uint64_t) i, .sg_list = &sge, .num_sge = 1 };
    cert_ok(SRQ->post_srq_recv(srq, &wr));
  }
  g_assert_cmpuint(SRQ->srq_count(srq), ==, 4);
  cert_cmpst(SRQ->srq_modify(srq, 3, 0), RNICPI_EBUSY);
  g_assert_cmpuint(SRQ->srq_count(srq), ==, 4);
  cert_ok(SRQ->srq_modify(srq, 4, 0));
  g_assert_cmpuint(SRQ->srq_count(srq), ==, 4);
  cert_ok(SRQ->srq_destroy(srq));
  cert_buf_free(&rb);
  cert_ok(DEV->pd_free(pd));
}

/* ---- local bounds ----------------------------------------------------- */

static void
test_send_sge_past_end(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send whose gather entry starts inside its region and ends one byte past the "
                 "region's last byte completes with RNICPI_WC_LOC_PROT_ERR (its wr_id, though "
                 "signaled or not) and the queue pair enters ERROR; the peer's receive gets no "
                 "byte and completes flushed");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, rb;
  cert_buf_new(pr.a.pd, &src, 256, RW);
  cert_buf_new(pr.p.pd, &rb, 256, RW);
  cert_buf_fill(&src, 22);
  cert_post_recv(pr.p.qp, &rb, 0, 256, 0x4ed);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 256 - 16, 17, BAD_ID, 0, 0, 0);
  edge_expect(pr.a.scq, BAD_ID, pr.a.ctx, RNICPI_WC_LOC_PROT_ERR);
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  edge_peer_down(&pr.p);
  edge_expect(pr.p.rcq, 0x4ed, pr.p.ctx, RNICPI_WC_WR_FLUSH_ERR);
  edge_zero(&rb, 0, rb.len);
  cert_assert_cq_quiet(pr.a.scq);
  cert_assert_cq_quiet(pr.p.rcq);
  cert_buf_free(&src);
  cert_buf_free(&rb);
  cert_pair_free(&pr);
}

/* ---- state ------------------------------------------------------------ */

static void
test_reset_connected(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("qp_reset of a connected queue pair in RTS is refused with RNICPI_ESTATE and "
                 "changes nothing: both queue pairs stay RTS and a Send still arrives whole");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_cmpst(QUE->qp_reset(pr.a.qp), RNICPI_ESTATE);
  cert_cmpst(QUE->qp_reset(pr.p.qp), RNICPI_ESTATE);
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 64, RW);
  cert_buf_new(pr.p.pd, &dst, 64, RW);
  cert_buf_fill(&src, 27);
  cert_post_recv(pr.p.qp, &dst, 0, 64, 0x4f3);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0x5e5, RNICPI_WR_SIGNALED, 0, 0);
  edge_expect(pr.p.rcq, 0x4f3, pr.p.ctx, RNICPI_WC_SUCCESS);
  edge_expect(pr.a.scq, 0x5e5, pr.a.ctx, RNICPI_WC_SUCCESS);
  cert_buf_check(&dst, 0, 64, 27);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

/* ---- asynchronous events ---------------------------------------------- */

static void
test_async_types_of_access(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read refused by the responder for a wrong key raises, by the types "
                 "rnicpi.h gives each cause (not through a helper of the provider's): at the "
                 "responder RNICPI_ASYNC_QP_ACCESS_ERR with cause RNICPI_AE_READ_ACCESS, at the "
                 "requester RNICPI_ASYNC_QP_REMOTE_ERR with cause RNICPI_AE_REMOTE_ACCESS; the "
                 "Read completes with RNICPI_WC_REM_ACCESS_ERR and fills nothing");
  if (cert_prov->abi_minor < 7) {
    g_test_skip("causes and RNICPI_ASYNC_QP_REMOTE_ERR came with ABI 1.7");
    return;
  }
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t sink, tgt;
  cert_buf_new(pr.a.pd, &sink, 256, cert_sink_access(f));
  cert_buf_new(pr.p.pd, &tgt, 256, RW | REMOTE);
  cert_buf_fill(&tgt, 30);
  /* Another key of the same layout: the region's with its low bits turned. */
  cert_post_send(pr.a.qp, RNICPI_WR_RDMA_READ, &sink, 0, 64, BAD_ID, RNICPI_WR_SIGNALED,
                 cert_raddr(&tgt, 0), tgt.mr->rkey ^ 0x5a);
  edge_expect(pr.a.scq, BAD_ID, pr.a.ctx, RNICPI_WC_REM_ACCESS_ERR);
  g_autofree rnicpi_async_event_t *resp =
    cert_wait_async(f, RNICPI_ASYNC_QP_ACCESS_ERR, pr.p.ctx);
  g_assert_cmpint(resp->cause, ==, RNICPI_AE_READ_ACCESS);
  g_autofree rnicpi_async_event_t *req =
    cert_wait_async(f, RNICPI_ASYNC_QP_REMOTE_ERR, pr.a.ctx);
  g_assert_cmpint(req->cause, ==, RNICPI_AE_REMOTE_ACCESS);
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);
  edge_zero(&sink, 0, sink.len);
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- atomics ---------------------------------------------------------- */

static void
test_atomic_short_local(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Fetch and Add whose local buffer is 4 bytes, not 8, does not execute: "
                 "post_send refuses it, or it completes with an error status; the remote target "
                 "keeps its value and no byte of the local region is written");
  if (!cert_require(f, RNICPI_CAP_ATOMICS))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t loc, tgt;
  cert_buf_new(pr.a.pd, &loc, 64, RW);
  cert_buf_new(pr.p.pd, &tgt, 64, RW | REMOTE | RNICPI_ACCESS_ATOMIC);
  uint64_t v = 0x1122334455667788ull;
  memcpy(tgt.data + 8, &v, 8);
  rnicpi_sge_t sge = cert_sge(&loc, 8, 4);
  rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = RNICPI_WR_ATOMIC_FETCH_ADD,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = cert_raddr(&tgt, 8), .rkey = tgt.mr->rkey,
                          .compare_add = 1 };
  rnicpi_status_t st = DAT->post_send(pr.a.qp, &wr);
  if (st == RNICPI_OK) {
    rnicpi_wc_t wc = cert_wc(pr.a.scq);
    g_assert_cmphex(wc.wr_id, ==, BAD_ID);
    g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
    g_test_message("the 4-byte atomic completed with status %d", wc.status);
    edge_peer_down(&pr.p);
    cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  } else {
    g_test_message("post_send refused the 4-byte atomic: %s", rnicpi_status_name(st));
  }
  uint64_t now;
  memcpy(&now, tgt.data + 8, 8);
  g_assert_cmphex(now, ==, v);
  edge_zero(&loc, 0, loc.len);
  cert_buf_free(&loc);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- fast registration ------------------------------------------------ */

typedef struct {
  uint8_t *mem, *buf;   /* buf: PAGE-aligned, 3 pages */
  uint64_t pages[3];
  rnicpi_mr_t *mr;
} edge_fr_t;

static void
fr_new(edge_fr_t *r, rnicpi_pd_t *pd, uint32_t max_pages)
{
  r->mem = g_malloc0(4 * PAGE);
  r->buf = (uint8_t *) (((uintptr_t) r->mem + PAGE - 1) & ~(uintptr_t) (PAGE - 1));
  for (int i = 0; i < 3; i++)
    r->pages[i] = (uint64_t) (uintptr_t) (r->buf + (size_t) i * PAGE);
  r->mr = NULL;
  cert_ok(MEM->mr_alloc(pd, max_pages, &r->mr));
  g_assert_nonnull(r->mr);
}

static void
fr_free(edge_fr_t *r)
{
  cert_ok(MEM->mr_dereg(r->mr));
  g_free(r->mem);
}

/* Post a FAST_REG of @r over @npages pages, @len bytes, through @qp. */
static void
fr_post(rnicpi_qp_t *qp, edge_fr_t *r, uint64_t id, size_t npages, uint64_t len, uint32_t access)
{
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = RNICPI_WR_FAST_REG, .flags = RNICPI_WR_SIGNALED };
  wr.fast_reg = (rnicpi_fast_reg_t) {
    .mr = r->mr, .addr = r->buf, .length = len, .iova = (uint64_t) (uintptr_t) r->buf,
    .access = access, .page_size = PAGE, .num_pages = npages, .pages = r->pages,
  };
  cert_ok(DAT->post_send(qp, &wr));
}

/* A FAST_REG that breaks a rule of rnicpi_fast_reg_t, through side @s:
 * RNICPI_WC_MEM_MGT_ERR, opcode FAST_REG, the side's QP in ERROR. */
static void
fr_refused(cert_side_t *s, cert_side_t *peer, edge_fr_t *r, size_t npages, uint64_t len)
{
  fr_post(s->qp, r, BAD_ID, npages, len, RW | REMOTE);
  rnicpi_wc_t wc = cert_wc(s->scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_MEM_MGT_ERR);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_FAST_REG);
  g_assert_cmphex(wc.qp_ctx, ==, s->ctx);
  cert_wait_state(s->qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(s->scq);
  edge_peer_down(peer);
}

static void
test_fast_reg_too_many_pages(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a FAST_REG of 2 pages of a region mr_alloc gave for 1 page completes with "
                 "RNICPI_WC_MEM_MGT_ERR, opcode FAST_REG, and the queue pair enters ERROR");
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  edge_fr_t r;
  fr_new(&r, pr.p.pd, 1);
  fr_refused(&pr.p, &pr.a, &r, 2, 2 * PAGE);
  fr_free(&r);
  cert_pair_free(&pr);
}

static void
test_fast_reg_length_past_pages(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a FAST_REG of one page whose length is one byte more than the page completes "
                 "with RNICPI_WC_MEM_MGT_ERR and the queue pair enters ERROR: [addr, addr + "
                 "length) must lie inside the pages");
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  edge_fr_t r;
  fr_new(&r, pr.p.pd, 2);
  fr_refused(&pr.p, &pr.a, &r, 1, PAGE + 1);
  fr_free(&r);
  cert_pair_free(&pr);
}

static void
test_fast_reg_other_pd(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a FAST_REG of a region of another protection domain than the posting queue "
                 "pair's completes with RNICPI_WC_MEM_MGT_ERR and the queue pair enters ERROR");
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  edge_fr_t r;
  fr_new(&r, pr.p.pd, 1);
  fr_refused(&pr.a, &pr.p, &r, 1, PAGE);
  fr_free(&r);
  cert_pair_free(&pr);
}

/* FAST_REG @r through @s's QP, which succeeds; returns the region's key. */
static uint64_t
fr_ok(cert_side_t *s, edge_fr_t *r, uint32_t access)
{
  fr_post(s->qp, r, 0xf6, 1, PAGE, access);
  uint64_t key = r->mr->rkey;
  rnicpi_wc_t wc = cert_wc(s->scq);
  g_assert_cmphex(wc.wr_id, ==, 0xf6);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_FAST_REG);
  return key;
}

/* LOCAL_INV of @key through @s, refused as a memory management error. */
static void
inv_refused(cert_side_t *s, cert_side_t *peer, uint64_t key)
{
  rnicpi_send_wr_t inv = { .wr_id = BAD_ID, .opcode = RNICPI_WR_LOCAL_INV,
                           .flags = RNICPI_WR_SIGNALED, .invalidate_rkey = key };
  cert_ok(DAT->post_send(s->qp, &inv));
  rnicpi_wc_t wc = cert_wc(s->scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_MEM_MGT_ERR);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_LOCAL_INV);
  cert_wait_state(s->qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(s->scq);
  edge_peer_down(peer);
}

/* ---- windows ---------------------------------------------------------- */

/* The window type this device offers (@wide preferred, or narrow), or a skip. */
static gboolean
edge_mw_type(cert_t *f, gboolean wide, rnicpi_mw_type_t *type)
{
  uint64_t both = RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE;
  *type = RNICPI_MW_NARROW;
  if ((f->caps.features & both) == 0)
    return cert_require(f, RNICPI_CAP_MW_NARROW);
  if (wide ? (f->caps.features & RNICPI_CAP_MW_WIDE) != 0
           : (f->caps.features & RNICPI_CAP_MW_NARROW) == 0)
    *type = RNICPI_MW_WIDE;
  else
    *type = RNICPI_MW_NARROW;
  return cert_require(f, *type == RNICPI_MW_WIDE ? RNICPI_CAP_MW_WIDE : RNICPI_CAP_MW_NARROW);
}

/* Post a bind of @mw over [off, off + len) of buffer @b's region through @qp;
 * returns the key post_send gave the window. */
static uint64_t
edge_bind(rnicpi_qp_t *qp, uint64_t id, rnicpi_mw_t *mw, const cert_buf_t *b, size_t off,
          uint64_t len, uint32_t access)
{
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = RNICPI_WR_BIND_MW, .flags = RNICPI_WR_SIGNALED };
  wr.bind = (rnicpi_bind_t) { .mw = mw, .mr = b->mr, .addr = cert_raddr(b, off), .length = len,
                              .access = access };
  cert_ok(DAT->post_send(qp, &wr));
  return mw->rkey;
}

static uint64_t
edge_bind_ok(cert_side_t *s, rnicpi_mw_t *mw, const cert_buf_t *b, size_t off, uint64_t len,
             uint32_t access)
{
  uint64_t key = edge_bind(s->qp, 0xb1f, mw, b, off, len, access);
  rnicpi_wc_t wc = cert_wc(s->scq);
  g_assert_cmphex(wc.wr_id, ==, 0xb1f);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_BIND_MW);
  return key;
}

static void
test_mw_dealloc_bind_queued(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("on InfiniBand, a bind queued behind a Send that waits for the peer's receive "
                 "keeps its window: mw_dealloc is refused with RNICPI_EBUSY; once the receive is "
                 "posted the Send and then the bind complete, in order, and the window frees");
  rnicpi_mw_type_t type;
  if (!edge_mw_type(f, FALSE, &type))
    return;
  if (f->caps.transport != RNICPI_TRANSPORT_IB) {
    /* iWARP breaks the connection on a Send without a receive (RFC 5040
     * 7.1), so nothing can be held in the send queue this way. */
    g_test_skip("a Send waits for a receive on InfiniBand only");
    return;
  }
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, rb;
  cert_buf_new(pr.a.pd, &src, 1024, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  cert_buf_new(pr.p.pd, &rb, 64, RW);
  cert_buf_fill(&src, 31);
  rnicpi_mw_t *mw = NULL;
  cert_ok(MW->mw_alloc(pr.a.pd, type, &mw));
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0x5e7, RNICPI_WR_SIGNALED, 0, 0);
  edge_bind(pr.a.qp, 0xb21, mw, &src, 256, 256, REMOTE);
  cert_assert_cq_quiet(pr.a.scq);
  cert_cmpst(MW->mw_dealloc(mw), RNICPI_EBUSY);
  cert_post_recv(pr.p.qp, &rb, 0, 64, 0x4f5);
  edge_expect(pr.p.rcq, 0x4f5, pr.p.ctx, RNICPI_WC_SUCCESS);
  cert_buf_check(&rb, 0, 64, 31);
  edge_expect(pr.a.scq, 0x5e7, pr.a.ctx, RNICPI_WC_SUCCESS);
  edge_expect(pr.a.scq, 0xb21, pr.a.ctx, RNICPI_WC_SUCCESS);
  cert_ok(MW->mw_dealloc(mw));
  cert_buf_free(&src);
  cert_buf_free(&rb);
  cert_pair_free(&pr);
}

static void
test_bind_window_other_pd(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a bind of a window of another protection domain, through a queue pair and to "
                 "a region of the same domain as each other, completes with "
                 "RNICPI_WC_MW_BIND_ERR and the queue pair enters ERROR; the window's key then "
                 "reaches nothing");
  rnicpi_mw_type_t type;
  if (!edge_mw_type(f, FALSE, &type))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t tgt;
  cert_buf_new(pr.p.pd, &tgt, 1024, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  rnicpi_mw_t *mw = NULL;
  cert_ok(MW->mw_alloc(pr.a.pd, type, &mw));
  edge_bind(pr.p.qp, BAD_ID, mw, &tgt, 0, 512, REMOTE);
  edge_expect(pr.p.scq, BAD_ID, pr.p.ctx, RNICPI_WC_MW_BIND_ERR);
  cert_wait_state(pr.p.qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(pr.p.scq);
  edge_peer_down(&pr.a);
  edge_zero(&tgt, 0, tgt.len);
  cert_ok(MW->mw_dealloc(mw));
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

static void
test_window_key_as_lkey(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a bound window's key is a remote key only: a Send whose gather entry names "
                 "it as its local key, over the window's own bytes, completes with "
                 "RNICPI_WC_LOC_PROT_ERR and the peer's receive gets no byte");
  rnicpi_mw_type_t type;
  if (!edge_mw_type(f, FALSE, &type))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, rb;
  cert_buf_new(pr.a.pd, &src, 1024, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  cert_buf_new(pr.p.pd, &rb, 256, RW);
  cert_buf_fill(&src, 23);
  rnicpi_mw_t *mw = NULL;
  cert_ok(MW->mw_alloc(pr.a.pd, type, &mw));
  uint64_t key = edge_bind_ok(&pr.a, mw, &src, 256, 256, REMOTE);
  cert_post_recv(pr.p.qp, &rb, 0, 256, 0x4ee);
  rnicpi_sge_t sge = { .addr = cert_raddr(&src, 256), .length = 64, .lkey = key };
  rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1 };
  cert_ok(DAT->post_send(pr.a.qp, &wr));
  edge_expect(pr.a.scq, BAD_ID, pr.a.ctx, RNICPI_WC_LOC_PROT_ERR);
  cert_wait_state(pr.a.qp, RNICPI_QPS_ERROR);
  edge_peer_down(&pr.p);
  edge_expect(pr.p.rcq, 0x4ee, pr.p.ctx, RNICPI_WC_WR_FLUSH_ERR);
  edge_zero(&rb, 0, rb.len);
  cert_ok(MW->mw_dealloc(mw));
  cert_buf_free(&src);
  cert_buf_free(&rb);
  cert_pair_free(&pr);
}

static void
test_local_inv_region_with_window(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("LOCAL_INV of a fast-registered region's key while a window is bound to the "
                 "region completes with RNICPI_WC_MEM_MGT_ERR, opcode LOCAL_INV, and the queue "
                 "pair enters ERROR: as a region with a bound window cannot be deregistered, it "
                 "cannot be invalidated under the window either");
  rnicpi_mw_type_t type;
  if (!cert_require(f, RNICPI_CAP_FAST_REGISTER) || !cert_require(f, RNICPI_CAP_LOCAL_INVALIDATE) ||
      !edge_mw_type(f, FALSE, &type))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  edge_fr_t r;
  fr_new(&r, pr.p.pd, 1);
  uint64_t key = fr_ok(&pr.p, &r, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  rnicpi_mw_t *mw = NULL;
  cert_ok(MW->mw_alloc(pr.p.pd, type, &mw));
  rnicpi_send_wr_t b = { .wr_id = 0xb20, .opcode = RNICPI_WR_BIND_MW, .flags = RNICPI_WR_SIGNALED };
  b.bind = (rnicpi_bind_t) { .mw = mw, .mr = r.mr, .addr = (uint64_t) (uintptr_t) r.buf,
                             .length = 512, .access = REMOTE };
  cert_ok(DAT->post_send(pr.p.qp, &b));
  edge_expect(pr.p.scq, 0xb20, pr.p.ctx, RNICPI_WC_SUCCESS);
  inv_refused(&pr.p, &pr.a, key);
  cert_ok(MW->mw_dealloc(mw));
  fr_free(&r);
  cert_pair_free(&pr);
}

/* A second connection whose passive queue pair is in domain @pd, with
 * CQs of its own (@pr2.p shares the domain and does not own it). */
static void
edge_second_open(cert_t *f, rnicpi_pd_t *pd, cert_pair_t *pr2)
{
  memset(pr2, 0, sizeof(*pr2));
  cert_side_new(f, &pr2->a, 0xa9000, 64, NULL);
  cert_side_t *p = &pr2->p;
  p->ctx = 0xb9000;
  p->pd = pd;
  cert_ok(QUE->cq_create(f->dev, 64, p->ctx | 1, &p->scq));
  cert_ok(QUE->cq_create(f->dev, 64, p->ctx | 2, &p->rcq));
  rnicpi_qp_attr_t a = cert_qp_attr(f, p->scq, p->rcq);
  cert_ok(QUE->qp_create(pd, &a, p->ctx, &p->qp));
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1152, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->connect(pr2->a.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1152);
  cert_ok(CMV->accept(p->qp, req->conn_id, &cp));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr2->a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, p->ctx));
  cert_ok(CMV->unlisten(lst));
}

static void
edge_second_close(cert_pair_t *pr2)
{
  cert_ok(QUE->qp_destroy(pr2->p.qp));
  cert_ok(QUE->cq_destroy(pr2->p.scq));
  cert_ok(QUE->cq_destroy(pr2->p.rcq));
  cert_side_free(&pr2->a);
}

static void
test_local_inv_narrow_other_qp(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a narrow window belongs to the queue pair it was bound through: LOCAL_INV of "
                 "its key posted on another queue pair of the same domain fails (an error "
                 "status, its wr_id) and leaves the window bound, so an RDMA Write through the "
                 "binding queue pair's connection still lands in it");
  if (!cert_require(f, RNICPI_CAP_MW_NARROW) || !cert_require(f, RNICPI_CAP_LOCAL_INVALIDATE))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t src, tgt;
  cert_buf_new(pr.a.pd, &src, 256, RW);
  cert_buf_new(pr.p.pd, &tgt, 1024, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  cert_buf_fill(&src, 28);
  rnicpi_mw_t *mw = NULL;
  cert_ok(MW->mw_alloc(pr.p.pd, RNICPI_MW_NARROW, &mw));
  uint64_t key = edge_bind_ok(&pr.p, mw, &tgt, 256, 256, REMOTE);

  cert_pair_t pr2;
  edge_second_open(f, pr.p.pd, &pr2);
  rnicpi_send_wr_t inv = { .wr_id = BAD_ID, .opcode = RNICPI_WR_LOCAL_INV,
                           .flags = RNICPI_WR_SIGNALED, .invalidate_rkey = key };
  cert_ok(DAT->post_send(pr2.p.qp, &inv));
  rnicpi_wc_t wc = cert_wc(pr2.p.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  g_test_message("LOCAL_INV through the other queue pair: status %d", wc.status);
  edge_peer_down(&pr2.a);

  cert_write_ok(f, &pr, &src, 0, 64, cert_raddr(&tgt, 256), key);
  cert_buf_check(&tgt, 256, 64, 28);
  edge_second_close(&pr2);
  cert_ok(MW->mw_dealloc(mw));
  cert_buf_free(&src);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- Read sinks of windows -------------------------------------------- */

#define SINK_OFF 1024
#define SINK_LEN 1024

/* An RDMA Read through @s's QP of @len bytes of @tgt into window key
 * @key at @addr (RNICPI_WR_SINK_MW) that must fail locally: status
 * RNICPI_WC_LOC_PROT_ERR, the QP in ERROR, no byte of @sink written. */
static void
sink_refused(cert_side_t *s, cert_side_t *peer, const cert_buf_t *tgt, uint64_t key, uint64_t addr,
             uint32_t len, const cert_buf_t *sink)
{
  rnicpi_sge_t sge = { .addr = addr, .length = len, .lkey = key };
  rnicpi_send_wr_t rd = { .wr_id = BAD_ID, .opcode = RNICPI_WR_RDMA_READ,
                          .flags = RNICPI_WR_SIGNALED | RNICPI_WR_SINK_MW, .sg_list = &sge,
                          .num_sge = 1, .remote_addr = cert_raddr(tgt, 0), .rkey = tgt->mr->rkey };
  cert_ok(DAT->post_send(s->qp, &rd));
  edge_expect(s->scq, BAD_ID, s->ctx, RNICPI_WC_LOC_PROT_ERR);
  cert_wait_state(s->qp, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(s->scq);
  edge_peer_down(peer);
  edge_zero(sink, 0, sink->len);
}

/* Read sinks a window refuses: its region's rights, whose domain it is
 * in, and the scatter entry [@off, @off + @len) of the sink. */
typedef struct {
  const char *path, *summary;
  uint32_t sink_access;
  gboolean other_pd;  /* the sink window in the passive side's domain (wide if it can be) */
  uint8_t fill;
  size_t off;
  uint32_t len;
} sink_case_t;

static const sink_case_t sink_cases[] = {
  { "/rnicpi/mw/read-sink-past-window",
    "an RDMA Read into a window (RNICPI_WR_SINK_MW) whose scatter entry starts at "
    "the window's last 100 bytes and is 101 bytes long, still inside the region, "
    "completes with RNICPI_WC_LOC_PROT_ERR and writes no byte of the region",
    RW | REMOTE | RNICPI_ACCESS_MW_BIND, FALSE, 24, SINK_OFF + SINK_LEN - 100, 101 },
  { "/rnicpi/mw/read-sink-no-local-write",
    "an RDMA Read into a window (RNICPI_WR_SINK_MW) whose region was registered "
    "without RNICPI_ACCESS_LOCAL_WRITE completes with RNICPI_WC_LOC_PROT_ERR and "
    "writes no byte of the region: the window's rights do not replace the local "
    "ones its region must grant a Read sink",
    RNICPI_ACCESS_LOCAL_READ | REMOTE | RNICPI_ACCESS_MW_BIND, FALSE, 32, SINK_OFF, 64 },
  { "/rnicpi/mw/read-sink-other-pd",
    "an RDMA Read into a window (RNICPI_WR_SINK_MW) of another protection domain "
    "than the reading queue pair's completes with RNICPI_WC_LOC_PROT_ERR and writes "
    "no byte of the window's region",
    RW | REMOTE | RNICPI_ACCESS_MW_BIND, TRUE, 25, SINK_OFF, 64 },
};

static void
test_read_sink_refused(cert_t *f, gconstpointer data)
{
  const sink_case_t *c = data;
  g_test_summary(c->summary);
  rnicpi_mw_type_t type;
  if (!cert_require(f, RNICPI_CAP_READ_SINK_MW) || !edge_mw_type(f, c->other_pd, &type))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  /* The active side reads, into a window of its own domain or of the
   * passive side's, from a region of the other domain. */
  cert_side_t *own = c->other_pd ? &pr.p : &pr.a;
  cert_side_t *other = c->other_pd ? &pr.a : &pr.p;
  cert_buf_t sink, tgt;
  cert_buf_new(own->pd, &sink, 4096, c->sink_access);
  cert_buf_new(other->pd, &tgt, 4096, RW | REMOTE);
  cert_buf_fill(&tgt, c->fill);
  rnicpi_mw_t *mw = NULL;
  cert_ok(MW->mw_alloc(own->pd, type, &mw));
  uint64_t key = edge_bind_ok(own, mw, &sink, SINK_OFF, SINK_LEN, RNICPI_ACCESS_REMOTE_WRITE);
  sink_refused(&pr.a, &pr.p, &tgt, key, cert_raddr(&sink, c->off), c->len, &sink);
  cert_ok(MW->mw_dealloc(mw));
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

static void
test_read_sink_narrow_other_qp(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read into a narrow window (RNICPI_WR_SINK_MW) bound through another "
                 "queue pair of the same domain than the reading one completes with "
                 "RNICPI_WC_LOC_PROT_ERR and writes no byte of the window's region");
  if (!cert_require(f, RNICPI_CAP_READ_SINK_MW) || !cert_require(f, RNICPI_CAP_MW_NARROW))
    return;
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_buf_t sink, tgt;
  cert_buf_new(pr.a.pd, &sink, 4096, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
  cert_buf_new(pr.p.pd, &tgt, 4096, RW | REMOTE);
  cert_buf_fill(&tgt, 29);
  /* The window is bound through a second queue pair of the reader's domain. */
  cert_pair_t pr2;
  edge_second_open(f, pr.a.pd, &pr2);
  rnicpi_mw_t *mw = NULL;
  cert_ok(MW->mw_alloc(pr.a.pd, RNICPI_MW_NARROW, &mw));
  uint64_t key = edge_bind_ok(&pr2.p, mw, &sink, SINK_OFF, SINK_LEN, RNICPI_ACCESS_REMOTE_WRITE);
  sink_refused(&pr.a, &pr.p, &tgt, key, cert_raddr(&sink, SINK_OFF), 64, &sink);
  cert_ok(MW->mw_dealloc(mw));
  edge_second_close(&pr2);
  cert_buf_free(&sink);
  cert_buf_free(&tgt);
  cert_pair_free(&pr);
}

/* ---- datagrams -------------------------------------------------------- */

#define GRH 40
#define QKEY 0x22220000u

typedef struct {
  rnicpi_pd_t *pd;
  rnicpi_cq_t *cq;   /* every queue of both QPs */
  rnicpi_qp_t *s, *r;
  rnicpi_ah_t *ah;
  cert_buf_t src, dst;
} edge_ud_t;

static gboolean
eud_open(cert_t *f, edge_ud_t *u, rnicpi_pd_t *ah_pd, uint32_t max_send_sge)
{
  memset(u, 0, sizeof(*u));
  if (!cert_require(f, RNICPI_CAP_UD))
    return FALSE;
  cert_ok(DEV->pd_alloc(f->dev, &u->pd));
  cert_ok(QUE->cq_create(f->dev, 64, 0xe0001, &u->cq));
  rnicpi_qp_attr_t a = cert_qp_attr(f, u->cq, u->cq);
  a.type = RNICPI_QPT_UD;
  a.qkey = QKEY;
  a.access = 0;
  if (max_send_sge != 0)
    a.max_send_sge = max_send_sge;
  cert_ok(QUE->qp_create(u->pd, &a, 0xe1000, &u->s));
  cert_ok(QUE->qp_create(u->pd, &a, 0xe2000, &u->r));
  struct sockaddr_storage self;
  cert_self_addr(f, &self);
  rnicpi_ah_attr_t aa = { .port = 0 };
  if (self.ss_family == AF_INET6) {
    memcpy(aa.dgid, &((const struct sockaddr_in6 *) &self)->sin6_addr, RNICPI_GID_LEN);
  } else {
    aa.dgid[10] = aa.dgid[11] = 0xff;
    memcpy(aa.dgid + 12, &((const struct sockaddr_in *) &self)->sin_addr, 4);
  }
  cert_ok(UDO->ah_create(ah_pd != NULL ? ah_pd : u->pd, &aa, &u->ah));
  cert_buf_new(u->pd, &u->src, 256, RW);
  cert_buf_new(u->pd, &u->dst, 512, RW);
  cert_buf_fill(&u->src, 26);
  return TRUE;
}

static void
eud_close(edge_ud_t *u)
{
  cert_ok(UDO->ah_destroy(u->ah));
  cert_buf_free(&u->src);
  cert_buf_free(&u->dst);
  cert_ok(QUE->qp_destroy(u->s));
  cert_ok(QUE->qp_destroy(u->r));
  cert_ok(QUE->cq_destroy(u->cq));
  cert_ok(DEV->pd_free(u->pd));
}

static rnicpi_status_t
eud_send(edge_ud_t *u, uint64_t id, uint32_t len)
{
  rnicpi_sge_t sge = cert_sge(&u->src, 0, len);
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1, .ah = u->ah,
                          .remote_qpn = u->r->qp_num, .remote_qkey = QKEY };
  return DAT->post_send(u->s, &wr);
}

static void
test_ud_recv_no_room_for_grh(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a datagram of 64 bytes reaching a receive of exactly 64 bytes, with no room "
                 "for the 40-byte GRH before it, completes that receive with "
                 "RNICPI_WC_LOC_LEN_ERR and its wr_id; the sender's completion is a success and "
                 "a receive with room for both then takes the next datagram whole");
  edge_ud_t u;
  if (!eud_open(f, &u, NULL, 0))
    return;
  cert_post_recv(u.r, &u.dst, 0, 64, 0x4ef);
  cert_ok(eud_send(&u, 0x5e3, 64));
  /* One CQ serves both: the send's and the receive's, in either order. */
  rnicpi_wc_t wc[2];
  g_assert_cmpint(cert_poll(u.cq, wc, 2, CERT_TIMEOUT_MS), ==, 2);
  for (int i = 0; i < 2; i++) {
    if (wc[i].wr_id == 0x5e3) {
      g_assert_cmpint(wc[i].status, ==, RNICPI_WC_SUCCESS);
    } else {
      g_assert_cmphex(wc[i].wr_id, ==, 0x4ef);
      g_assert_cmpint(wc[i].status, ==, RNICPI_WC_LOC_LEN_ERR);
    }
  }
  g_assert_cmphex(wc[0].wr_id ^ wc[1].wr_id, ==, 0x5e3 ^ 0x4ef);
  cert_post_recv(u.r, &u.dst, 128, GRH + 64, 0x4f0);
  cert_ok(eud_send(&u, 0x5e4, 64));
  g_assert_cmpint(cert_poll(u.cq, wc, 2, CERT_TIMEOUT_MS), ==, 2);
  for (int i = 0; i < 2; i++) {
    g_assert_cmpint(wc[i].status, ==, RNICPI_WC_SUCCESS);
    if (wc[i].wr_id == 0x4f0)
      g_assert_cmpuint(wc[i].byte_len, ==, GRH + 64);
  }
  g_assert_cmpmem(u.dst.data + 128 + GRH, 64, u.src.data, 64);
  cert_assert_cq_quiet(u.cq);
  eud_close(&u);
}

static void
test_ud_ah_other_pd(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a datagram whose address handle belongs to another protection domain than "
                 "the sending queue pair's is not sent: post_send refuses it, or it completes "
                 "with an error status; the destination's receive gets nothing");
  rnicpi_pd_t *other = NULL;
  if (!cert_require(f, RNICPI_CAP_UD))
    return;
  cert_ok(DEV->pd_alloc(f->dev, &other));
  edge_ud_t u;
  eud_open(f, &u, other, 0);
  cert_post_recv(u.r, &u.dst, 0, 512, 0x4f1);
  rnicpi_status_t st = eud_send(&u, BAD_ID, 64);
  if (st == RNICPI_OK) {
    rnicpi_wc_t wc = cert_wc(u.cq);
    g_assert_cmphex(wc.wr_id, ==, BAD_ID);
    g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  } else {
    g_test_message("post_send refused the datagram: %s", rnicpi_status_name(st));
  }
  cert_assert_cq_quiet(u.cq);
  edge_zero(&u.dst, 0, u.dst.len);
  eud_close(&u);
  cert_ok(DEV->pd_free(other));
}

static void
test_ud_post_in_error(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a datagram posted on a UD queue pair in ERROR is not sent: it completes with "
                 "RNICPI_WC_WR_FLUSH_ERR and its wr_id, and the destination's receive gets "
                 "nothing");
  edge_ud_t u;
  if (!eud_open(f, &u, NULL, 0))
    return;
  cert_post_recv(u.r, &u.dst, 0, 512, 0x4f2);
  cert_ok(QUE->qp_to_error(u.s));
  cert_wait_state(u.s, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(u.cq);
  cert_ok(eud_send(&u, BAD_ID, 64));
  rnicpi_wc_t wc = cert_wc(u.cq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_WR_FLUSH_ERR);
  cert_assert_cq_quiet(u.cq);
  edge_zero(&u.dst, 0, u.dst.len);
  eud_close(&u);
}

static void
test_ud_sge_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a datagram of 2 SGEs on a UD queue pair created with max_send_sge 1 is refused "
                 "with RNICPI_ELIMIT: nothing completes and the destination's receive gets "
                 "nothing; the same bytes in 1 SGE are delivered");
  if (f->caps.max_send_sge < 2 && (f->caps.features & RNICPI_CAP_UD)) {
    g_test_skip("the device allows fewer than 2 send SGEs");
    return;
  }
  edge_ud_t u;
  if (!eud_open(f, &u, NULL, 1))
    return;
  cert_post_recv(u.r, &u.dst, 0, 512, 0x4f4);
  rnicpi_sge_t g[2] = { cert_sge(&u.src, 0, 32), cert_sge(&u.src, 32, 32) };
  rnicpi_send_wr_t wr = { .wr_id = BAD_ID, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = g, .num_sge = 2, .ah = u.ah, .remote_qpn = u.r->qp_num,
                          .remote_qkey = QKEY };
  cert_cmpst(DAT->post_send(u.s, &wr), RNICPI_ELIMIT);
  cert_assert_cq_quiet(u.cq);
  edge_zero(&u.dst, 0, u.dst.len);
  cert_ok(eud_send(&u, 0x5e6, 64));
  rnicpi_wc_t wc[2];
  g_assert_cmpint(cert_poll(u.cq, wc, 2, CERT_TIMEOUT_MS), ==, 2);
  for (int i = 0; i < 2; i++)
    g_assert_cmpint(wc[i].status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpmem(u.dst.data + GRH, 64, u.src.data, 64);
  eud_close(&u);
}

void
cert_register_edge(void)
{
  cert_add("/rnicpi/qp/sge-limits-per-queue", test_sge_limits_per_queue);
  cert_add("/rnicpi/srq/sge-limit", test_srq_sge_limit);
  cert_add("/rnicpi/srq/shrink-below-count", test_srq_shrink_below_count);
  cert_add("/rnicpi/protect-local/send-sge-past-end", test_send_sge_past_end);
  cert_add("/rnicpi/qp/reset-connected", test_reset_connected);
  cert_add("/rnicpi/errors/async-types-of-access", test_async_types_of_access);
  cert_add("/rnicpi/protect-local/atomic-short-local", test_atomic_short_local);
  cert_add("/rnicpi/mr/fast-reg-too-many-pages", test_fast_reg_too_many_pages);
  cert_add("/rnicpi/mr/fast-reg-length-past-pages", test_fast_reg_length_past_pages);
  cert_add("/rnicpi/mr/fast-reg-other-pd", test_fast_reg_other_pd);
  cert_add("/rnicpi/mw/dealloc-bind-queued", test_mw_dealloc_bind_queued);
  cert_add("/rnicpi/mw/bind-other-pd", test_bind_window_other_pd);
  cert_add("/rnicpi/mw/window-key-as-lkey", test_window_key_as_lkey);
  cert_add("/rnicpi/mr/local-inv-with-window", test_local_inv_region_with_window);
  cert_add("/rnicpi/mw/local-inv-narrow-other-qp", test_local_inv_narrow_other_qp);
  for (size_t i = 0; i < G_N_ELEMENTS(sink_cases); i++)
    cert_add_data(sink_cases[i].path, &sink_cases[i], test_read_sink_refused);
  cert_add("/rnicpi/mw/read-sink-narrow-other-qp", test_read_sink_narrow_other_qp);
  cert_add("/rnicpi/ud/recv-no-room-for-grh", test_ud_recv_no_room_for_grh);
  cert_add("/rnicpi/ud/ah-other-pd", test_ud_ah_other_pd);
  cert_add("/rnicpi/ud/post-in-error", test_ud_post_in_error);
  cert_add("/rnicpi/ud/sge-limit", test_ud_sge_limit);
}
