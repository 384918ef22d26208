/*
 * Conformance: data transfer operations (IT-API DTO area) over a connected
 * RC endpoint pair: send/receive, scatter/gather, RDMA Write and Read in
 * both addressing modes, completion order and suppression, receiver not
 * ready, queue limits, flushing and atomics.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "conf.h"

#define assert_handle_eq(a, b) \
  g_assert_cmphex((guint64) (uintptr_t) (a), ==, (guint64) (uintptr_t) (b))

#define PRIV_LOCAL IT_PRIV_LOCAL
#define PRIV_TARGET (IT_PRIV_LOCAL | IT_PRIV_REMOTE)

static void
pair_up(conf_pair_t *p)
{
  conf_pair_open(p);
  conf_pair_connect(p, NULL, 0, NULL, 0);
}

static it_lmr_triplet_t
rel_seg(const conf_buf_t *b, size_t off, size_t len)
{
  it_lmr_triplet_t t = { .lmr = b->lmr, .addr.rel = off, .length = len };
  return t;
}

static void
check_zero(const conf_buf_t *b, size_t off, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (b->data[off + i] != 0)
      g_error("byte at offset %zu is 0x%02x; nothing should have been written there", off + i,
              b->data[off + i]);
}

/* Send @len bytes from a to p; the receive buffer is 64 bytes larger. */
static void
test_send_recv(gconstpointer data)
{
  size_t len = GPOINTER_TO_SIZE(data);
  g_test_summary("IT-API DTO: it_post_send/it_post_recv move the bytes; the receive completes as "
                 "IT_DTO_RC_RECV_CMPL_EVENT with its cookie, EP, EVD and transferred_length");
  conf_pair_t p;
  conf_buf_t src, dst;
  pair_up(&p);
  conf_buf_new(&p.a, &src, len, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, len + 64, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 3);

  it_lmr_triplet_t rs = conf_seg(&dst, 0, dst.len), ss = conf_seg(&src, 0, len);
  conf_ok(it_post_recv(p.p.ep, &rs, 1, 0xabc0001, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(p.a.ep, &ss, 1, 0xabc0002, IT_COMPLETION_FLAG));

  it_dto_cmpl_event_t r = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 0xabc0001);
  assert_handle_eq(r.ep, p.p.ep);
  assert_handle_eq(r.evd, p.p.dto);
  g_assert_cmpuint(r.transferred_length, ==, len);
  it_dto_cmpl_event_t s = conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 0xabc0002);
  assert_handle_eq(s.ep, p.a.ep);
  assert_handle_eq(s.evd, p.a.dto);

  conf_buf_check(&dst, 0, len, 3);
  check_zero(&dst, len, 64);
  conf_buf_check_guards(&dst);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_multi_sge(void)
{
  g_test_summary("IT-API DTO: a send gathers 3 segments and the receive scatters them into 2 "
                 "segments of other sizes, in order");
  conf_pair_t p;
  conf_buf_t src, dst;
  pair_up(&p);
  conf_buf_new(&p.a, &src, 4096, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 4096, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 9);

  /* Gather: 100 bytes at 1000, 200 at 0, 300 at 2000 (600 in all). */
  it_lmr_triplet_t g[3] = { conf_seg(&src, 1000, 100), conf_seg(&src, 0, 200), conf_seg(&src, 2000, 300) };
  /* Scatter: 250 bytes at 3000, then 400 at 100. */
  it_lmr_triplet_t s[2] = { conf_seg(&dst, 3000, 250), conf_seg(&dst, 100, 400) };
  conf_ok(it_post_recv(p.p.ep, s, 2, 7, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(p.a.ep, g, 3, 8, IT_COMPLETION_FLAG));
  it_dto_cmpl_event_t r = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 7);
  g_assert_cmpuint(r.transferred_length, ==, 600);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 8);

  unsigned char want[600];
  memcpy(want, src.data + 1000, 100);
  memcpy(want + 100, src.data, 200);
  memcpy(want + 300, src.data + 2000, 300);
  g_assert_cmpmem(dst.data + 3000, 250, want, 250);
  g_assert_cmpmem(dst.data + 100, 350, want + 250, 350);
  check_zero(&dst, 450, 50);     /* rest of the second scatter segment */
  check_zero(&dst, 0, 100);
  check_zero(&dst, 500, 2500);
  check_zero(&dst, 3250, 4096 - 3250);
  conf_buf_check_guards(&dst);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_zero_length(void)
{
  g_test_summary("IT-API DTO: a send of no segments completes the peer's receive with "
                 "transferred_length 0 and writes nothing");
  conf_pair_t p;
  conf_buf_t dst;
  pair_up(&p);
  conf_buf_new(&p.p, &dst, 64, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rs = conf_seg(&dst, 0, 64);
  conf_ok(it_post_recv(p.p.ep, &rs, 1, 21, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(p.a.ep, NULL, 0, 22, IT_COMPLETION_FLAG));
  it_dto_cmpl_event_t r = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 21);
  g_assert_cmpuint(r.transferred_length, ==, 0);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 22);
  check_zero(&dst, 0, 64);
  conf_buf_check_guards(&dst);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_rdma_write(void)
{
  g_test_summary("IT-API DTO: it_post_rdma_write with 2 gather segments to an absolute remote "
                 "address lands the bytes there and only there; the responder sees no completion");
  conf_pair_t p;
  conf_buf_t src, dst;
  pair_up(&p);
  conf_buf_new(&p.a, &src, 8192, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 8192, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 5);
  it_lmr_triplet_t g[2] = { conf_seg(&src, 4096, 3000), conf_seg(&src, 10, 1000) };
  conf_ok(it_post_rdma_write(p.a.ep, g, 2, 31, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(dst.data + 512), dst.ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 31);
  conf_placed(&p.a, it_make_rdma_addr_absolute(dst.data + 512), dst.ctx);
  g_assert_cmpmem(dst.data + 512, 3000, src.data + 4096, 3000);
  g_assert_cmpmem(dst.data + 3512, 1000, src.data + 10, 1000);
  check_zero(&dst, 0, 512);
  check_zero(&dst, 4512, 8192 - 4512);
  conf_buf_check_guards(&dst);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_rdma_read(void)
{
  g_test_summary("IT-API DTO: it_post_rdma_read copies the remote bytes into the local segment and "
                 "completes as IT_DTO_RDMA_READ_CMPL_EVENT; the responder sees no completion");
  conf_pair_t p;
  conf_buf_t dst, src;
  pair_up(&p);
  conf_buf_new(&p.a, &dst, 8192, conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &src, 8192, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 11);
  it_lmr_triplet_t l = conf_seg(&dst, 100, 5000);
  conf_ok(it_post_rdma_read(p.a.ep, &l, 1, 41, IT_COMPLETION_FLAG,
                            it_make_rdma_addr_absolute(src.data + 3000), src.ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 41);
  g_assert_cmpmem(dst.data + 100, 5000, src.data + 3000, 5000);
  check_zero(&dst, 0, 100);
  check_zero(&dst, 5100, 8192 - 5100);
  conf_buf_check_guards(&dst);
  conf_buf_check(&src, 0, src.len, 11); /* the source is unchanged */
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

/* Small transfers across a page boundary: each one's bytes lie on both
 * sides of a 4 KiB boundary in the source and in the sink, at a split of
 * its own.  A device that copies a short payload page by page may take
 * the second part from the wrong page (siw before its fix copies a
 * one-segment payload of at most 32 bytes that way when its transmit
 * thread, not the post, sends it): so they are posted back to back,
 * behind a large transfer that keeps the transmitter busy. */
static const struct { unsigned len, before; } straddles[] = {
  { 2, 1 }, { 7, 3 }, { 16, 1 }, { 16, 8 }, { 16, 15 }, { 24, 20 },
  { 31, 13 }, { 32, 4 }, { 32, 31 }, { 33, 16 }, { 64, 40 },
};
#define N_STRADDLES G_N_ELEMENTS(straddles)
#define STRADDLE_BUF ((N_STRADDLES + 2) * 4096)
#define LEAD_N 8

/* The offset in @b of its @i-th 4 KiB boundary (from 0). */
static size_t
page_boundary(const conf_buf_t *b, size_t i)
{
  return ((4096 - ((uintptr_t) b->data & 4095)) & 4095) + 4096 * (i + 1);
}

/* Where transfer @i starts in the source and in the sink. */
static size_t
straddle_src(const conf_buf_t *b, size_t i)
{
  return page_boundary(b, i) - straddles[i].before;
}

static size_t
straddle_dst(const conf_buf_t *b, size_t i)
{
  return page_boundary(b, i) - (straddles[i].len - straddles[i].before);
}

/* @dst holds each transfer's bytes from @src where they belong and
 * nothing anywhere else. */
static void
check_straddles(const conf_buf_t *dst, const conf_buf_t *src, const char *what)
{
  unsigned char *want = g_malloc0(dst->len);
  for (size_t i = 0; i < N_STRADDLES; i++)
    memcpy(want + straddle_dst(dst, i), src->data + straddle_src(src, i), straddles[i].len);
  for (size_t i = 0; i < N_STRADDLES; i++) {
    size_t at = straddle_dst(dst, i);
    for (size_t k = 0; k < straddles[i].len; k++)
      if (dst->data[at + k] != want[at + k])
        g_error("%s %zu (%u bytes, %u before the page boundary): byte %zu is 0x%02x, expected 0x%02x",
                what, i, straddles[i].len, straddles[i].before, k, dst->data[at + k], want[at + k]);
  }
  for (size_t k = 0; k < dst->len; k++)
    if (dst->data[k] != want[k])
      g_error("%s: byte at offset %zu is 0x%02x, expected 0x%02x (written outside every transfer?)",
              what, k, dst->data[k], want[k]);
  conf_buf_check_guards(dst);
  g_free(want);
}

static void
test_small_across_page(void)
{
  g_test_summary("IT-API DTO: Sends, RDMA Writes and RDMA Reads of 2 to 64 bytes whose source and sink "
                 "each straddle a page boundary, posted back to back, land every byte where it belongs");
  conf_pair_t p;
  conf_buf_t src, dst, rsrc, rdst, msrc, mdst, lead_src, lead_dst;
  pair_up(&p);
  /* The lead: LEAD_N transfers of 1 MiB (the EP's payload limit), from
   * and to one buffer each, so little is pinned. */
  conf_buf_new(&p.a, &lead_src, 1 << 20, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &lead_dst, 1 << 20, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t lead = conf_seg(&lead_src, 0, lead_src.len);
  conf_buf_new(&p.a, &src, STRADDLE_BUF, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, STRADDLE_BUF, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rsrc, STRADDLE_BUF, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &rdst, STRADDLE_BUF, conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &msrc, STRADDLE_BUF, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &mdst, STRADDLE_BUF, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 21);
  conf_buf_fill(&rsrc, 22);
  conf_buf_fill(&msrc, 23);

  for (int k = 0; k < LEAD_N; k++)
    conf_ok(it_post_rdma_write(p.a.ep, &lead, 1, 90 + k, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute(lead_dst.data), lead_dst.ctx));
  for (size_t i = 0; i < N_STRADDLES; i++) {
    it_lmr_triplet_t l = conf_seg(&src, straddle_src(&src, i), straddles[i].len);
    conf_ok(it_post_rdma_write(p.a.ep, &l, 1, 100 + i, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute(dst.data + straddle_dst(&dst, i)), dst.ctx));
  }
  for (int k = 0; k < LEAD_N; k++)
    conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 90 + k);
  for (size_t i = 0; i < N_STRADDLES; i++)
    conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 100 + i);
  conf_placed(&p.a, it_make_rdma_addr_absolute(dst.data), dst.ctx);
  check_straddles(&dst, &src, "RDMA Write");

  for (size_t i = 0; i < N_STRADDLES; i++) {
    it_lmr_triplet_t l = conf_seg(&rdst, straddle_dst(&rdst, i), straddles[i].len);
    conf_ok(it_post_rdma_read(p.a.ep, &l, 1, 200 + i, IT_COMPLETION_FLAG,
                              it_make_rdma_addr_absolute(rsrc.data + straddle_src(&rsrc, i)), rsrc.ctx));
  }
  for (size_t i = 0; i < N_STRADDLES; i++)
    conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 200 + i);
  check_straddles(&rdst, &rsrc, "RDMA Read");

  it_lmr_triplet_t lead_sink = conf_seg(&lead_dst, 0, lead_dst.len);
  for (int k = 0; k < LEAD_N; k++)
    conf_ok(it_post_recv(p.p.ep, &lead_sink, 1, 290 + k, IT_COMPLETION_FLAG));
  for (size_t i = 0; i < N_STRADDLES; i++) {
    it_lmr_triplet_t l = conf_seg(&mdst, straddle_dst(&mdst, i), straddles[i].len);
    conf_ok(it_post_recv(p.p.ep, &l, 1, 300 + i, IT_COMPLETION_FLAG));
  }
  for (int k = 0; k < LEAD_N; k++)
    conf_ok(it_post_send(p.a.ep, &lead, 1, 390 + k, IT_COMPLETION_FLAG));
  for (size_t i = 0; i < N_STRADDLES; i++) {
    it_lmr_triplet_t l = conf_seg(&msrc, straddle_src(&msrc, i), straddles[i].len);
    conf_ok(it_post_send(p.a.ep, &l, 1, 400 + i, IT_COMPLETION_FLAG));
  }
  for (int k = 0; k < LEAD_N; k++)
    conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 290 + k);
  for (size_t i = 0; i < N_STRADDLES; i++) {
    it_dto_cmpl_event_t r = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 300 + i);
    g_assert_cmpuint(r.transferred_length, ==, straddles[i].len);
  }
  for (int k = 0; k < LEAD_N; k++)
    conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 390 + k);
  for (size_t i = 0; i < N_STRADDLES; i++)
    conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 400 + i);
  check_straddles(&mdst, &msrc, "Send");

  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&mdst);
  conf_buf_free(&msrc);
  conf_buf_free(&rdst);
  conf_buf_free(&rsrc);
  conf_buf_free(&dst);
  conf_buf_free(&src);
  conf_buf_free(&lead_dst);
  conf_buf_free(&lead_src);
  conf_pair_close(&p);
}

static void
test_read_sink_rule(void)
{
  g_test_summary("IT-API DTO: the read-sink rule: where it_ia_info_t.rdma_read_requires_remote_write "
                 "is set (iWARP), an RDMA Read into a sink without IT_PRIV_REMOTE_WRITE fails "
                 "with IT_DTO_ERR_LOCAL_PROTECTION and lands nothing; otherwise (IB) it succeeds");
  conf_pair_t p;
  conf_buf_t dst, src;
  pair_up(&p);
  it_ia_info_t *info = conf_info(&p.a);
  gboolean needs_rw = info->rdma_read_requires_remote_write;
  it_ia_info_free(info);
  conf_buf_new(&p.a, &dst, 1024, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &src, 1024, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 5);
  it_lmr_triplet_t l = conf_seg(&dst, 0, 1024);
  conf_ok(it_post_rdma_read(p.a.ep, &l, 1, 61, IT_COMPLETION_FLAG,
                            it_make_rdma_addr_absolute(src.data), src.ctx));
  if (needs_rw) {
    conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_ERR_LOCAL_PROTECTION, 61);
    check_zero(&dst, 0, 1024);
    conf_wait(p.a.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  } else {
    conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 61);
    g_assert_cmpmem(dst.data, 1024, src.data, 1024);
  }
  conf_buf_check_guards(&dst);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_rdma_write_relative(void)
{
  g_test_summary("IT-API DTO: RDMA Write to a relative-addressed remote LMR at "
                 "it_make_rdma_addr_relative(offset), from a relative local triplet (addr.rel)");
  conf_pair_t p;
  conf_buf_t src, dst;
  pair_up(&p);
  it_ia_info_t *info = conf_info(&p.a);
  gboolean rel = info->addr_mode_relative_support;
  it_ia_info_free(info);
  if (!conf_require(rel, "addr_mode_relative_support")) {
    conf_pair_close(&p);
    return;
  }
  conf_buf_new(&p.a, &src, 4096, PRIV_LOCAL, IT_ADDR_MODE_RELATIVE);
  conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_RELATIVE);
  conf_buf_fill(&src, 13);
  it_lmr_triplet_t g[2] = { rel_seg(&src, 1024, 700), rel_seg(&src, 0, 300) };
  conf_ok(it_post_rdma_write(p.a.ep, g, 2, 51, IT_COMPLETION_FLAG, it_make_rdma_addr_relative(2000),
                             dst.ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 51);
  conf_placed(&p.a, it_make_rdma_addr_relative(2000), dst.ctx);
  g_assert_cmpmem(dst.data + 2000, 700, src.data + 1024, 700);
  g_assert_cmpmem(dst.data + 2700, 300, src.data, 300);
  check_zero(&dst, 0, 2000);
  check_zero(&dst, 3000, 1096);
  conf_buf_check_guards(&dst);

  /* And back: an RDMA Read of the same relative range into offset 0. */
  conf_buf_t back;
  conf_buf_new(&p.a, &back, 1000, conf_sink_privs(&p.a), IT_ADDR_MODE_RELATIVE);
  it_lmr_triplet_t b = rel_seg(&back, 0, 1000);
  conf_ok(it_post_rdma_read(p.a.ep, &b, 1, 52, IT_COMPLETION_FLAG, it_make_rdma_addr_relative(2000), dst.ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 52);
  g_assert_cmpmem(back.data, 1000, dst.data + 2000, 1000);
  conf_buf_check_guards(&back);

  /* Short ones too (a provider may post those inline, copying from the
   * process's addresses rather than the region's offsets): a 100-byte
   * Write from offset 3000 to offset 100, and a 60-byte Send from offset
   * 3500 into a relative receive at offset 500. */
  it_lmr_triplet_t w = rel_seg(&src, 3000, 100);
  conf_ok(it_post_rdma_write(p.a.ep, &w, 1, 53, IT_COMPLETION_FLAG, it_make_rdma_addr_relative(100),
                             dst.ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 53);
  conf_placed(&p.a, it_make_rdma_addr_relative(100), dst.ctx);
  g_assert_cmpmem(dst.data + 100, 100, src.data + 3000, 100);
  check_zero(&dst, 200, 1800);
  it_lmr_triplet_t rs = rel_seg(&dst, 500, 60), ss = rel_seg(&src, 3500, 60);
  conf_ok(it_post_recv(p.p.ep, &rs, 1, 54, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(p.a.ep, &ss, 1, 55, IT_COMPLETION_FLAG));
  it_dto_cmpl_event_t r = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 54);
  g_assert_cmpuint(r.transferred_length, ==, 60);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 55);
  g_assert_cmpmem(dst.data + 500, 60, src.data + 3500, 60);
  conf_buf_check_guards(&dst);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&back);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

#define NORDER 32
#define SLOT 64

static void
test_order(void)
{
  g_test_summary("IT-API DTO: 32 sends complete in posting order on the sender, and the 32 "
                 "pre-posted receives complete in posting order with the matching data");
  conf_pair_t p;
  conf_buf_t src, dst;
  pair_up(&p);
  conf_buf_new(&p.a, &src, NORDER * SLOT, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, NORDER * SLOT, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 17);
  for (unsigned i = 0; i < NORDER; i++) {
    it_lmr_triplet_t r = conf_seg(&dst, i * SLOT, SLOT);
    conf_ok(it_post_recv(p.p.ep, &r, 1, 1000 + i, IT_COMPLETION_FLAG));
  }
  for (unsigned i = 0; i < NORDER; i++) {
    /* Send i carries i + 1 bytes, so a misrouted message shows. */
    it_lmr_triplet_t s = conf_seg(&src, i * SLOT, i + 1);
    conf_ok(it_post_send(p.a.ep, &s, 1, i, IT_COMPLETION_FLAG));
  }
  for (unsigned i = 0; i < NORDER; i++)
    conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, i);
  for (unsigned i = 0; i < NORDER; i++) {
    it_dto_cmpl_event_t r = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1000 + i);
    g_assert_cmpuint(r.transferred_length, ==, i + 1);
    g_assert_cmpmem(dst.data + i * SLOT, i + 1, src.data + i * SLOT, i + 1);
    check_zero(&dst, i * SLOT + i + 1, SLOT - i - 1);
  }
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_unsignaled(void)
{
  g_test_summary("IT-API DTO: a send without IT_COMPLETION_FLAG makes no send completion event "
                 "but its receive completes; a later signaled send does complete");
  conf_pair_t p;
  conf_buf_t src, dst;
  pair_up(&p);
  conf_buf_new(&p.a, &src, 128, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 128, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 19);
  it_lmr_triplet_t r0 = conf_seg(&dst, 0, 64), r1 = conf_seg(&dst, 64, 64);
  conf_ok(it_post_recv(p.p.ep, &r0, 1, 60, IT_COMPLETION_FLAG));
  conf_ok(it_post_recv(p.p.ep, &r1, 1, 61, IT_COMPLETION_FLAG));

  it_lmr_triplet_t s0 = conf_seg(&src, 0, 64);
  conf_ok(it_post_send(p.a.ep, &s0, 1, 70, 0));
  it_dto_cmpl_event_t r = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 60);
  g_assert_cmpuint(r.transferred_length, ==, 64);
  conf_assert_empty(p.a.dto);

  it_lmr_triplet_t s1 = conf_seg(&src, 64, 64);
  conf_ok(it_post_send(p.a.ep, &s1, 1, 71, IT_COMPLETION_FLAG));
  r = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 61);
  g_assert_cmpuint(r.transferred_length, ==, 64);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 71);
  g_assert_cmpmem(dst.data, 128, src.data, 128);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_send_waits_for_recv(void)
{
  g_test_summary("IT-API DTO: a send posted before the peer posts a receive waits (no completion "
                 "on either side) and completes once the receive is posted; a later RDMA Write "
                 "stays ordered behind it");
  conf_pair_t p;
  conf_buf_t src, dst, tgt;
  pair_up(&p);
  conf_buf_new(&p.a, &src, 256, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 256, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &tgt, 256, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 23);
  it_lmr_triplet_t s = conf_seg(&src, 0, 256);
  conf_ok(it_post_send(p.a.ep, &s, 1, 80, IT_COMPLETION_FLAG));
  conf_ok(it_post_rdma_write(p.a.ep, &s, 1, 81, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(tgt.data), tgt.ctx));
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  check_zero(&tgt, 0, 256); /* the write waits behind the send */
  check_zero(&dst, 0, 256);

  it_lmr_triplet_t r = conf_seg(&dst, 0, 256);
  conf_ok(it_post_recv(p.p.ep, &r, 1, 90, IT_COMPLETION_FLAG));
  it_dto_cmpl_event_t ev = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 90);
  g_assert_cmpuint(ev.transferred_length, ==, 256);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 80);
  conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 81);
  conf_placed(&p.a, it_make_rdma_addr_absolute(tgt.data), tgt.ctx);
  g_assert_cmpmem(dst.data, 256, src.data, 256);
  g_assert_cmpmem(tgt.data, 256, src.data, 256);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_buf_free(&tgt);
  conf_pair_close(&p);
}

/* Disconnect a from p and wait for both sides to see it. */
static void
disconnect(conf_pair_t *p)
{
  conf_ok(it_ep_disconnect(p->a.ep, NULL, 0));
  it_event_t ev = conf_wait(p->a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  assert_handle_eq(ev.conn.ep, p->a.ep);
  ev = conf_wait(p->p.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  assert_handle_eq(ev.conn.ep, p->p.ep);
}

static void
test_too_many_posts(void)
{
  g_test_summary("IT-API DTO: with max_recv_dtos receives outstanding, it_post_recv returns "
                 "IT_ERR_TOO_MANY_POSTS; each accepted receive completes once (flushed)");
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  conf_pair_t p;
  conf_buf_t dst;
  pair_up(&p);
  conf_buf_new(&p.a, &dst, 16, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t r = conf_seg(&dst, 0, 16);
  for (size_t i = 0; i < attr.max_recv_dtos; i++)
    conf_ok(it_post_recv(p.a.ep, &r, 1, 500 + i, IT_COMPLETION_FLAG));
  conf_assert_status(it_post_recv(p.a.ep, &r, 1, 999, IT_COMPLETION_FLAG), IT_ERR_TOO_MANY_POSTS);
  disconnect(&p);
  for (size_t i = 0; i < attr.max_recv_dtos; i++)
    conf_dto(p.a.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 500 + i);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_flush(void)
{
  g_test_summary("IT-API DTO: outstanding receives complete exactly once with IT_DTO_ERR_FLUSHED "
                 "on disconnect; sends and receives posted on the NONOPERATIONAL EP complete "
                 "flushed, and the EVD holds exactly those");
  conf_pair_t p;
  conf_buf_t buf;
  pair_up(&p);
  conf_buf_new(&p.a, &buf, 64, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t seg = conf_seg(&buf, 0, 64);
  for (unsigned i = 0; i < 4; i++)
    conf_ok(it_post_recv(p.a.ep, &seg, 1, 600 + i, IT_COMPLETION_FLAG));
  disconnect(&p);
  for (unsigned i = 0; i < 4; i++) {
    it_dto_cmpl_event_t ev = conf_dto(p.a.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 600 + i);
    assert_handle_eq(ev.ep, p.a.ep);
  }
  conf_assert_empty(p.a.dto);

  it_ep_param_t ep;
  conf_ok(it_ep_query(p.a.ep, IT_EP_PARAM_STATE, &ep));
  g_assert_cmpint(ep.ep_state.rc, ==, IT_EP_STATE_NONOPERATIONAL);
  conf_ok(it_post_send(p.a.ep, &seg, 1, 700, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(p.a.ep, &seg, 1, 701, 0)); /* unsignaled: flushes are always reported */
  conf_ok(it_post_recv(p.a.ep, &seg, 1, 702, IT_COMPLETION_FLAG));
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 700);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 701);
  conf_dto(p.a.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 702);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&buf);
  conf_pair_close(&p);
}

static void
test_atomics(void)
{
  g_test_summary("IT-API DTO: it_post_atomic fetch-and-add and compare-and-swap on a remote 8-byte "
                 "word (IT_PRIV_ATOMIC, atomics_enable) return the old value and change the word");
  it_ep_attributes_t attr;
  conf_pair_t p;
  if (!conf_require(conf_probe_atomics(&attr, NULL), "atomics"))
    return;
  conf_pair_open2(&p, &attr, &attr);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t res, word;
  conf_buf_new(&p.a, &res, 16, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &word, 16, IT_PRIV_LOCAL | IT_PRIV_ATOMIC, IT_ADDR_MODE_ABSOLUTE);
  uint64_t v = 100, got;
  memcpy(word.data + 8, &v, 8);
  memset(res.data, 0xee, 16);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute(word.data + 8);

  it_lmr_triplet_t r = conf_seg(&res, 0, 8);
  conf_ok(it_post_atomic(p.a.ep, IT_FETCH_AND_ADD, 5, 0, &r, 1, IT_COMPLETION_FLAG, ra, word.ctx));
  it_dto_cmpl_event_t ev = conf_dto(p.a.dto, IT_DTO_FETCH_ADD_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  assert_handle_eq(ev.ep, p.a.ep);
  memcpy(&got, res.data, 8);
  g_assert_cmpuint(got, ==, 100);
  memcpy(&got, word.data + 8, 8);
  g_assert_cmpuint(got, ==, 105);

  /* Compare matches: swap. */
  it_lmr_triplet_t r2 = conf_seg(&res, 8, 8);
  conf_ok(it_post_atomic(p.a.ep, IT_COMPARE_AND_SWAP, 7, 105, &r2, 2, IT_COMPLETION_FLAG, ra, word.ctx));
  conf_dto(p.a.dto, IT_DTO_CMP_SWAP_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  memcpy(&got, res.data + 8, 8);
  g_assert_cmpuint(got, ==, 105);
  memcpy(&got, word.data + 8, 8);
  g_assert_cmpuint(got, ==, 7);

  /* Compare differs: the word stays, the old value still comes back. */
  conf_ok(it_post_atomic(p.a.ep, IT_COMPARE_AND_SWAP, 9, 1, &r, 3, IT_COMPLETION_FLAG, ra, word.ctx));
  conf_dto(p.a.dto, IT_DTO_CMP_SWAP_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  memcpy(&got, res.data, 8);
  g_assert_cmpuint(got, ==, 7);
  memcpy(&got, word.data + 8, 8);
  g_assert_cmpuint(got, ==, 7);
  memcpy(&got, word.data, 8);
  g_assert_cmpuint(got, ==, 0); /* the neighbouring word is untouched */
  conf_buf_check_guards(&word);
  conf_buf_check_guards(&res);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&res);
  conf_buf_free(&word);
  conf_pair_close(&p);
}

/* Whether the IA under test offers immediate data (ITX_FEATURE_IMMEDIATE,
 * "immediate-data"); skips the test otherwise. */
static gboolean
require_immediate(void)
{
  itx_caps_t caps;
  conf_ok(itx_interface_caps(conf_ia_name(), &caps));
  return conf_require((caps.features & ITX_FEATURE_IMMEDIATE) != 0, "immediate-data");
}

/* The receive completion @d of immediate data @sent: the value as the
 * transport carries it (the low 32 bits on InfiniBand, 64 on iWARP), and
 * on iWARP its 8 bytes placed in network order at the start of the
 * receive buffer @rb (@off, 64 bytes), which hold @fill past them. */
static void
check_imm_recv(const it_event_t *ev, gboolean iwarp, uint64_t sent, uint32_t ib_len, const conf_buf_t *rb,
               size_t off, unsigned char fill)
{
  uint64_t got = 0;
  g_assert_true(itx_dto_imm_data(ev, &got));
  g_assert_cmphex(got, ==, iwarp ? sent : (sent & 0xffffffffu));
  if (iwarp) {
    g_assert_cmpuint(ev->dto_cmpl.transferred_length, ==, 8);
    for (unsigned i = 0; i < 8; i++)
      g_assert_cmphex(rb->data[off + i], ==, (unsigned char) (sent >> (56 - 8 * i)));
    g_assert_cmpuint(conf_first_not(rb->data + off + 8, 56, fill), ==, 56);
  } else {
    g_assert_cmpuint(ev->dto_cmpl.transferred_length, ==, ib_len);
    g_assert_cmpuint(conf_first_not(rb->data + off, 64, fill), ==, 64);
  }
}

static void
test_immediate(void)
{
  g_test_summary("itx_post_rdma_write_imm: the Write's bytes land, then the peer's receive "
                 "completes carrying the immediate value (itx_dto_imm_data; the low 32 bits on "
                 "InfiniBand, where the length is the Write's, all 64 on iWARP, also placed in "
                 "network order, length 8); itx_post_imm_data consumes a receive with the value "
                 "alone (length 0 on InfiniBand); a plain Send's receive carries none");
  if (!require_immediate())
    return;
  conf_pair_t p;
  pair_up(&p);
  gboolean iwarp = conf_transport(&p.a) == IT_IWARP_TCP_TRANSPORT;
  conf_buf_t src, dst, rb;
  conf_buf_new(&p.a, &src, 64, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 64, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rb, 3 * 64, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 21);
  memset(rb.data, 0xee, rb.len);
  for (unsigned k = 0; k < 3; k++) {
    it_lmr_triplet_t r = conf_seg(&rb, (size_t) k * 64, 64);
    conf_ok(it_post_recv(p.p.ep, &r, 1, 10 + k, IT_COMPLETION_FLAG));
  }

  const uint64_t v1 = UINT64_C(0x1122334455667788), v2 = UINT64_C(0x0badcafe8badf00d);
  it_lmr_triplet_t s = conf_seg(&src, 0, 32);
  conf_ok(itx_post_rdma_write_imm(p.a.ep, &s, 1, 1, IT_COMPLETION_FLAG,
                                  it_make_rdma_addr_absolute(dst.data + 16), dst.ctx, v1));
  conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  it_event_t ev = conf_wait(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 10);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  assert_handle_eq(ev.dto_cmpl.ep, p.p.ep);
  /* The written bytes are placed before the receive completes. */
  conf_buf_check(&src, 0, 32, 21);
  g_assert_cmpmem(dst.data + 16, 32, src.data, 32);
  check_zero(&dst, 0, 16);
  check_zero(&dst, 48, 16);
  check_imm_recv(&ev, iwarp, v1, 32, &rb, 0, 0xee);

  conf_ok(itx_post_imm_data(p.a.ep, 2, IT_COMPLETION_FLAG, v2));
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  ev = conf_wait(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 11);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  check_imm_recv(&ev, iwarp, v2, 0, &rb, 64, 0xee);

  /* A Send's receive carries no immediate data. */
  conf_ok(it_post_send(p.a.ep, &s, 1, 3, IT_COMPLETION_FLAG));
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  ev = conf_wait(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT);
  g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, 32);
  g_assert_false(itx_dto_imm_data(&ev, NULL));
  g_assert_false(itx_dto_imm_data(NULL, NULL));
  g_assert_cmpmem(rb.data + 128, 32, src.data, 32);

  conf_buf_check_guards(&dst);
  conf_buf_check_guards(&rb);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_buf_free(&rb);
  conf_pair_close(&p);
}

static void
test_immediate_refused(void)
{
  g_test_summary("itx_post_rdma_write_imm and itx_post_imm_data on a stale EP handle fail "
                 "IT_ERR_INVALID_EP; on an IA without immediate data IT_ERR_OP_NOT_SUPPORTED, "
                 "and nothing reaches the peer");
  conf_pair_t p;
  pair_up(&p);
  conf_buf_t src;
  conf_buf_new(&p.a, &src, 64, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t s = conf_seg(&src, 0, 8);
  itx_caps_t caps;
  conf_ok(itx_interface_caps(conf_ia_name(), &caps));
  if (!(caps.features & ITX_FEATURE_IMMEDIATE)) {
    g_assert_cmpint(itx_post_rdma_write_imm(p.a.ep, &s, 1, 1, IT_COMPLETION_FLAG, 0, 0, 1), ==,
                    IT_ERR_OP_NOT_SUPPORTED);
    g_assert_cmpint(itx_post_imm_data(p.a.ep, 2, IT_COMPLETION_FLAG, 2), ==, IT_ERR_OP_NOT_SUPPORTED);
    g_test_message("%s", itx_error_detail());
    conf_assert_empty(p.a.dto);
    conf_assert_empty(p.p.dto);
  }
  conf_buf_free(&src);
  it_ep_handle_t stale = p.a.ep;
  conf_pair_close(&p);
  g_assert_cmpint(itx_post_rdma_write_imm(stale, NULL, 0, 1, IT_COMPLETION_FLAG, 0, 0, 1), ==,
                  IT_ERR_INVALID_EP);
  g_assert_cmpint(itx_post_imm_data(stale, 2, IT_COMPLETION_FLAG, 2), ==, IT_ERR_INVALID_EP);
}

static void
test_atomics_no_right(void)
{
  g_test_summary("IT-API DTO: it_post_atomic on a word whose region lacks IT_PRIV_ATOMIC completes "
                 "with IT_DTO_ERR_REMOTE_ACCESS, on a misaligned word with "
                 "IT_DTO_ERR_REMOTE_RESPONDER (RFC 7306 8.2: a remote operation error); both "
                 "leave the word and the result buffer as they were");
  it_ep_attributes_t attr;
  if (!conf_require(conf_probe_atomics(&attr, NULL), "atomics"))
    return;
  for (int misaligned = 0; misaligned < 2; misaligned++) {
    conf_pair_t p;
    conf_pair_open2(&p, &attr, &attr);
    conf_pair_connect(&p, NULL, 0, NULL, 0);
    conf_buf_t res, word;
    conf_buf_new(&p.a, &res, 8, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    /* Remote rights, but no atomic right; or the atomic right at an odd address. */
    conf_buf_new(&p.p, &word, 16, misaligned ? IT_PRIV_LOCAL | IT_PRIV_ATOMIC : IT_PRIV_LOCAL | IT_PRIV_REMOTE,
                 IT_ADDR_MODE_ABSOLUTE);
    uint64_t v = 100, got;
    memcpy(word.data + 4, &v, 8);
    memset(res.data, 0xee, 8);
    it_lmr_triplet_t r = conf_seg(&res, 0, 8);
    conf_ok(it_post_atomic(p.a.ep, IT_FETCH_AND_ADD, 5, 0, &r, 1, IT_COMPLETION_FLAG,
                           it_make_rdma_addr_absolute(word.data + (misaligned ? 4 : 8)), word.ctx));
    conf_dto(p.a.dto, IT_DTO_FETCH_ADD_CMPL_EVENT,
             misaligned ? IT_DTO_ERR_REMOTE_RESPONDER : IT_DTO_ERR_REMOTE_ACCESS, 1);
    memcpy(&got, word.data + 4, 8);
    g_assert_cmpuint(got, ==, 100);
    for (int i = 0; i < 8; i++)
      g_assert_cmpuint(res.data[i], ==, 0xee);
    conf_buf_check_guards(&word);
    conf_buf_check_guards(&res);
    conf_buf_free(&res);
    conf_buf_free(&word);
    conf_pair_close(&p);
  }
}

static void
test_atomics_not_negotiated(void)
{
  g_test_summary("IT-API DTO, iWARP (vp/iwarp, or emul's iWARP personality): an EP whose interface "
                 "has the RFC 7306 option (ITAPI_IWARP_RFC7306=1, ITAPI_EMUL_RFC7306=1) connected to "
                 "one whose interface does not: the connection does not use it, it_post_atomic is "
                 "refused with IT_ERR_OP_NOT_SUPPORTED, its detail quoting the provider's advice "
                 "(the variable to set at both ends), and nothing completes");
  /* The option is read when an interface opens (vp/iwarp's or emul's). */
  const char *var = g_str_has_prefix(conf_ia_name(), "iwarp") ? "ITAPI_IWARP_RFC7306"
                                                              : "ITAPI_EMUL_RFC7306";
  const char *opt = g_getenv(var);
  it_ep_attributes_t attr;
  gboolean iw;
  gboolean at = conf_probe_atomics(&attr, &iw);
  if (!conf_require(at && iw && g_strcmp0(opt, "1") == 0, "an iWARP interface with its RFC 7306 option on"))
    return;
  conf_pair_t p;
  memset(&p, 0, sizeof(p));
  conf_side_open(&p.a, &attr);
  g_setenv(var, "0", TRUE);  /* read when the passive side's interface opens */
  conf_side_open(&p.p, NULL);
  g_setenv(var, "1", TRUE);
  it_ia_info_t *info = conf_info(&p.p);
  g_assert_false(info->atomic_support);
  it_ia_info_free(info);
  p.qual.type = IT_IANA_PORT;
  conf_ok(it_listen_create(p.p.ia, 0, p.p.req, IT_LISTEN_NO_FLAG, &p.qual, &p.lh));
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t res, word;
  conf_buf_new(&p.a, &res, 8, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &word, 8, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t r = conf_seg(&res, 0, 8);
  g_assert_cmpint(it_post_atomic(p.a.ep, IT_FETCH_AND_ADD, 5, 0, &r, 1, IT_COMPLETION_FLAG,
                                 it_make_rdma_addr_absolute(word.data), word.ctx),
                  ==, IT_ERR_OP_NOT_SUPPORTED);
  /* The variable comes from the provider (RNIC-PI cap_advice), not from
   * the access layer. */
  g_autofree char *want = g_strdup_printf("%s=1", var);
  g_test_message("%s", itx_error_detail());
  g_assert_nonnull(strstr(itx_error_detail(), want));
  g_assert_nonnull(strstr(itx_error_detail(), "\"atomics\""));
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  for (int i = 0; i < 8; i++)
    g_assert_cmpuint(word.data[i], ==, 0);
  conf_buf_free(&res);
  conf_buf_free(&word);
  conf_pair_close(&p);
}

static void
test_unconnected(void)
{
  g_test_summary("IT-API DTO: on an UNCONNECTED EP it_post_send returns IT_ERR_INVALID_EP_STATE "
                 "(and completes nothing) while it_post_recv is accepted and serves the first "
                 "message once connected");
  conf_pair_t p;
  conf_buf_t a, b;
  conf_pair_open(&p);
  conf_buf_new(&p.a, &a, 128, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &b, 128, PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&b, 29);
  it_lmr_triplet_t sa = conf_seg(&a, 0, 128), sb = conf_seg(&b, 0, 128);
  conf_assert_status(it_post_send(p.a.ep, &sa, 1, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_EP_STATE);
  conf_assert_status(it_post_rdma_write(p.a.ep, &sa, 1, 2, IT_COMPLETION_FLAG, 0, 0),
                     IT_ERR_INVALID_EP_STATE);
  conf_ok(it_post_recv(p.a.ep, &sa, 1, 3, IT_COMPLETION_FLAG));
  conf_assert_empty(p.a.dto);

  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_ok(it_post_send(p.p.ep, &sb, 1, 4, IT_COMPLETION_FLAG));
  it_dto_cmpl_event_t ev = conf_dto(p.a.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  g_assert_cmpuint(ev.transferred_length, ==, 128);
  conf_dto(p.p.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 4);
  g_assert_cmpmem(a.data, 128, b.data, 128);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&a);
  conf_buf_free(&b);
  conf_pair_close(&p);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/conformance/dto/send-recv/1-byte", GSIZE_TO_POINTER(1), test_send_recv);
  g_test_add_data_func("/conformance/dto/send-recv/4-KiB", GSIZE_TO_POINTER(4096), test_send_recv);
  g_test_add_data_func("/conformance/dto/send-recv/1-MiB", GSIZE_TO_POINTER(1 << 20), test_send_recv);
  g_test_add_func("/conformance/dto/multi-sge", test_multi_sge);
  g_test_add_func("/conformance/dto/zero-length", test_zero_length);
  g_test_add_func("/conformance/dto/rdma-write", test_rdma_write);
  g_test_add_func("/conformance/dto/rdma-read", test_rdma_read);
  g_test_add_func("/conformance/dto/small-across-page", test_small_across_page);
  g_test_add_func("/conformance/dto/read-sink-rule", test_read_sink_rule);
  g_test_add_func("/conformance/dto/rdma-write-relative", test_rdma_write_relative);
  g_test_add_func("/conformance/dto/order", test_order);
  g_test_add_func("/conformance/dto/unsignaled", test_unsignaled);
  g_test_add_func("/conformance/dto/send-waits-for-recv", test_send_waits_for_recv);
  g_test_add_func("/conformance/dto/too-many-posts", test_too_many_posts);
  g_test_add_func("/conformance/dto/flush", test_flush);
  g_test_add_func("/conformance/dto/atomics/basic", test_atomics);
  g_test_add_func("/conformance/dto/atomics/no-right", test_atomics_no_right);
  g_test_add_func("/conformance/dto/atomics/not-negotiated", test_atomics_not_negotiated);
  g_test_add_func("/conformance/dto/unconnected", test_unconnected);
  g_test_add_func("/conformance/dto/immediate/basic", test_immediate);
  g_test_add_func("/conformance/dto/immediate/refused", test_immediate_refused);
  conf_dto_scatter_register();
  return g_test_run();
}
