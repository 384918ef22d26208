/*
 * Conformance: remote memory regions (IT-API 2.9, memory windows): create,
 * query, free; link a sub-range and RDMA through its context; rights,
 * unlink and relink, narrow and wide scope, send-and-unlink, the LMR busy
 * while linked, argument checks and the IT-API 1.0 binding; IT-API 2.1
 * RDMA Reads into RMRs with and without IT_UNLINK_LOCAL_SINK.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "conf.h"

#define PRIV_TARGET (IT_PRIV_LOCAL | IT_PRIV_REMOTE)
#define WIN_OFF 1024
#define WIN_LEN 512

static gboolean
require_type(conf_side_t *s, it_rmr_type_t t)
{
  it_ia_info_t *info = conf_info(s);
  gboolean ok = (info->rmr_types_supported & t) != 0;
  it_ia_info_free(info);
  return conf_require(ok, t == IT_RMR_TYPE_NARROW ? "narrow RMRs (rmr_types_supported)"
                                                  : "wide RMRs (rmr_types_supported)");
}

static gboolean
require_unlink(conf_side_t *s, it_rmr_type_t t)
{
  it_ia_info_t *info = conf_info(s);
  gboolean ok = t == IT_RMR_TYPE_NARROW ? info->narrow_rmr_unlink_support : info->wide_rmr_unlink_support;
  it_ia_info_free(info);
  return conf_require(ok, "RMR unlink (narrow_/wide_rmr_unlink_support)");
}

/* Any type the IA offers, narrow first. */
static it_rmr_type_t
some_type(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  it_rmr_type_t t = (info->rmr_types_supported & IT_RMR_TYPE_NARROW) ? IT_RMR_TYPE_NARROW :
                    (info->rmr_types_supported & IT_RMR_TYPE_WIDE) ? IT_RMR_TYPE_WIDE : IT_RMR_TYPE_DEFAULT;
  it_ia_info_free(info);
  return t;
}

/* Link [WIN_OFF, WIN_OFF + WIN_LEN) of @b on the EP of side @s. */
static it_rmr_context_t
link_on(conf_side_t *s, it_rmr_handle_t rmr, conf_buf_t *b, it_mem_priv_t privs, it_dto_cookie_t cookie)
{
  it_rmr_context_t ctx = 0;
  conf_ok(it_rmr_link(rmr, b->lmr, b->data + WIN_OFF, WIN_LEN, IT_ADDR_MODE_ABSOLUTE, privs, s->ep,
                      cookie, IT_COMPLETION_FLAG, &ctx));
  conf_dto(s->dto, IT_RMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, cookie);
  return ctx;
}

/* The window the active side writes to, on the passive side's EP. */
static it_rmr_context_t
link_window(conf_pair_t *p, it_rmr_handle_t rmr, conf_buf_t *b, it_mem_priv_t privs, it_dto_cookie_t cookie)
{
  return link_on(&p->p, rmr, b, privs, cookie);
}

/* RDMA Write @len bytes from the active side to @off of @dst through @ctx.
 * @want IT_DTO_SUCCESS: the bytes are placed when it returns (conf_placed:
 * a completion may mean transmission only).  Otherwise the Write is
 * refused (conf_write_refused): where a completion means transmission it
 * may complete before the responder's refusal breaks the connection, which
 * it waits for, so that nothing can land after it returns. */
static void
write_through(conf_pair_t *p, conf_buf_t *src, conf_buf_t *dst, it_rmr_context_t ctx, size_t off, size_t len,
              it_dto_status_t want, it_dto_cookie_t cookie)
{
  it_lmr_triplet_t s = conf_seg(src, 0, len);
  it_rdma_addr_t addr = it_make_rdma_addr_absolute(dst->data + off);
  conf_ok(it_post_rdma_write(p->a.ep, &s, 1, cookie, IT_COMPLETION_FLAG, addr, ctx));
  if (want == IT_DTO_SUCCESS) {
    conf_dto(p->a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, want, cookie);
    conf_placed(&p->a, addr, ctx);
    return;
  }
  g_assert_cmpint(want, ==, IT_DTO_ERR_REMOTE_ACCESS);
  conf_write_refused(&p->a, cookie);
}

static void
assert_zero(const conf_buf_t *b, size_t off, size_t len)
{
  for (size_t i = off; i < off + len; i++)
    if (b->data[i] != 0)
      g_error("byte %zu of the target changed to 0x%02x", i, b->data[i]);
}

static void
test_create_query_free(void)
{
  g_test_summary("IT-API RMR: it_rmr_create20 of each offered type, query of an unlinked and a "
                 "linked RMR, free; create10 gives the default type; a freed handle is refused");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!conf_require(some_type(&p.p) != IT_RMR_TYPE_DEFAULT, "remote memory regions")) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t b;
  conf_buf_new(&p.p, &b, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.p.pz, some_type(&p.p), &rmr));
  it_rmr_param_t q;
  conf_ok(it_rmr_query(rmr, IT_RMR_PARAM_ALL, &q));
  g_assert_cmpint(q.linked, ==, IT_FALSE);
  g_assert_cmpint(q.type, ==, some_type(&p.p));
  g_assert_cmphex((guint64) (uintptr_t) q.pz, ==, (guint64) (uintptr_t) p.p.pz);
  it_rmr_context_t ctx = link_window(&p, rmr, &b, IT_PRIV_REMOTE_WRITE, 1);
  conf_ok(it_rmr_query(rmr, IT_RMR_PARAM_ALL, &q));
  g_assert_cmpint(q.linked, ==, IT_TRUE);
  g_assert_cmphex(q.rmr_context, ==, ctx);
  g_assert_cmphex((guint64) (uintptr_t) q.lmr, ==, (guint64) (uintptr_t) b.lmr);
  g_assert_true(q.addr == b.data + WIN_OFF);
  g_assert_cmpuint(q.length, ==, WIN_LEN);
  g_assert_cmpint(q.privs, ==, IT_PRIV_REMOTE_WRITE);
  g_assert_cmphex(ctx, !=, b.ctx);
  conf_assert_status(it_pz_free(p.p.pz), IT_ERR_PZ_BUSY);
  conf_ok(it_rmr_free(rmr));
  conf_assert_status(it_rmr_free(rmr), IT_ERR_INVALID_RMR);
  conf_assert_status(it_rmr_query(rmr, IT_RMR_PARAM_ALL, &q), IT_ERR_INVALID_RMR);
  conf_ok(it_rmr_create10(p.p.pz, &rmr));
  conf_ok(it_rmr_query(rmr, IT_RMR_PARAM_TYPE, &q));
  g_assert_cmpint(q.type, ==, some_type(&p.p));
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&b);
  conf_pair_close(&p);
}

static void
test_write_range(void)
{
  g_test_summary("IT-API RMR: an RDMA Write through a linked sub-range lands at the right offset; one "
                 "byte past the range fails with IT_DTO_ERR_REMOTE_ACCESS and changes nothing");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!conf_require(some_type(&p.p) != IT_RMR_TYPE_DEFAULT, "remote memory regions")) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 3);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.p.pz, some_type(&p.p), &rmr));
  it_rmr_context_t ctx = link_window(&p, rmr, &dst, IT_PRIV_REMOTE_WRITE, 1);
  write_through(&p, &src, &dst, ctx, WIN_OFF + 100, 200, IT_DTO_SUCCESS, 2);
  g_assert_cmpmem(dst.data + WIN_OFF + 100, 200, src.data, 200);
  assert_zero(&dst, 0, WIN_OFF + 100);
  assert_zero(&dst, WIN_OFF + 300, 4096 - WIN_OFF - 300);
  memset(dst.data + WIN_OFF, 0, WIN_LEN);
  /* Ends one byte past the window. */
  write_through(&p, &src, &dst, ctx, WIN_OFF + WIN_LEN - 15, 16, IT_DTO_ERR_REMOTE_ACCESS, 3);
  assert_zero(&dst, 0, 4096);
  conf_buf_check_guards(&dst);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_rights(void)
{
  g_test_summary("IT-API RMR: an RMR linked with IT_PRIV_REMOTE_READ only serves RDMA Reads and "
                 "refuses an RDMA Write (IT_DTO_ERR_REMOTE_ACCESS)");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!conf_require(some_type(&p.p) != IT_RMR_TYPE_DEFAULT, "remote memory regions")) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, 4096, conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&dst, 9);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.p.pz, some_type(&p.p), &rmr));
  it_rmr_context_t ctx = link_window(&p, rmr, &dst, IT_PRIV_REMOTE_READ, 1);
  it_lmr_triplet_t s = conf_seg(&src, 0, 64);
  conf_ok(it_post_rdma_read(p.a.ep, &s, 1, 2, IT_COMPLETION_FLAG,
                            it_make_rdma_addr_absolute(dst.data + WIN_OFF), ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  g_assert_cmpmem(src.data, 64, dst.data + WIN_OFF, 64);
  write_through(&p, &src, &dst, ctx, WIN_OFF, 64, IT_DTO_ERR_REMOTE_ACCESS, 3);
  conf_buf_check(&dst, 0, 4096, 9);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_unlink_relink(void)
{
  g_test_summary("IT-API RMR: after it_rmr_unlink (IT_RMR_LINK_CMPL_EVENT) the old context is refused; a "
                 "relink gives a new context that works while the old one stays refused");
  conf_pair_t p;
  conf_pair_open(&p);
  it_rmr_type_t t = some_type(&p.p);
  if (!conf_require(t != IT_RMR_TYPE_DEFAULT, "remote memory regions") || !require_unlink(&p.p, t)) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 5);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.p.pz, t, &rmr));
  it_rmr_context_t old = link_window(&p, rmr, &dst, IT_PRIV_REMOTE_WRITE, 1);
  conf_ok(it_rmr_unlink(rmr, p.p.ep, 2, IT_COMPLETION_FLAG | IT_UNLINK_FENCE_FLAG));
  conf_dto(p.p.dto, IT_RMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  it_rmr_param_t q;
  conf_ok(it_rmr_query(rmr, IT_RMR_PARAM_LINKED, &q));
  g_assert_cmpint(q.linked, ==, IT_FALSE);
  conf_assert_status(it_rmr_unlink(rmr, p.p.ep, 3, IT_COMPLETION_FLAG), IT_ERR_INVALID_RMR);
  write_through(&p, &src, &dst, old, WIN_OFF, 32, IT_DTO_ERR_REMOTE_ACCESS, 4);
  assert_zero(&dst, 0, 4096);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);

  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 5);
  conf_ok(it_rmr_create20(p.p.pz, t, &rmr));
  old = link_window(&p, rmr, &dst, IT_PRIV_REMOTE_WRITE, 1);
  conf_ok(it_rmr_unlink(rmr, p.p.ep, 2, IT_COMPLETION_FLAG));
  conf_dto(p.p.dto, IT_RMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  it_rmr_context_t fresh = link_window(&p, rmr, &dst, IT_PRIV_REMOTE_WRITE, 3);
  g_assert_cmphex(fresh, !=, old);
  write_through(&p, &src, &dst, fresh, WIN_OFF, 32, IT_DTO_SUCCESS, 4);
  g_assert_cmpmem(dst.data + WIN_OFF, 32, src.data, 32);
  write_through(&p, &src, &dst, old, WIN_OFF + 64, 32, IT_DTO_ERR_REMOTE_ACCESS, 5);
  assert_zero(&dst, WIN_OFF + 64, 32);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

/* Two connected pairs whose passive EPs share one IA and PZ: the second
 * passive EP is on pair 2, built from pair 1's passive IA. */
static void
test_scope(gconstpointer data)
{
  it_rmr_type_t t = (it_rmr_type_t) GPOINTER_TO_INT(data);
  g_test_summary(t == IT_RMR_TYPE_NARROW
                 ? "IT-API RMR: a narrow RMR linked on one EP is refused through another EP of its PZ"
                 : "IT-API RMR: a wide RMR linked on one EP is usable through any EP of its PZ");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!require_type(&p.p, t)) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  /* A second EP in the passive side's PZ, accepted on the same listener
   * from a second active side. */
  conf_side_t a2;
  conf_side_open(&a2, NULL);
  it_ep_handle_t ep2;
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  conf_ok(it_ep_rc_create(p.p.pz, p.p.dto, p.p.dto, p.p.cm, IT_EP_NO_FLAG, &attr, &ep2));
  conf_ok(conf_connect(&a2, a2.ep, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(ep2, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(a2.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_buf_t src, dst;
  conf_buf_new(&a2, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 11);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.p.pz, t, &rmr));
  it_rmr_context_t ctx = link_window(&p, rmr, &dst, IT_PRIV_REMOTE_WRITE, 1);
  it_lmr_triplet_t s = conf_seg(&src, 0, 64);
  conf_ok(it_post_rdma_write(a2.ep, &s, 1, 2, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(dst.data + WIN_OFF), ctx));
  if (t == IT_RMR_TYPE_NARROW) {
    conf_write_refused(&a2, 2);
    assert_zero(&dst, 0, 4096);
  } else {
    conf_dto(a2.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 2);
    conf_placed(&a2, it_make_rdma_addr_absolute(dst.data + WIN_OFF), ctx);
    g_assert_cmpmem(dst.data + WIN_OFF, 64, src.data, 64);
  }
  conf_buf_free(&src);
  conf_side_close(&a2);
  conf_ok(it_ep_free(ep2));
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_send_and_unlink(void)
{
  g_test_summary("IT-API RMR: it_post_send_and_unlink delivers the message, the receiver's completion "
                 "names its RMR in unlinked_mr_handle, and the context is refused afterwards");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.a);
  gboolean ok = info->post_send_unlink_remote_support;
  it_ia_info_free(info);
  if (!conf_require(some_type(&p.p) != IT_RMR_TYPE_DEFAULT, "remote memory regions") ||
      !conf_require(ok, "send and unlink (post_send_unlink_remote_support)")) {
    conf_pair_close(&p);
    return;
  }
  conf_buf_t src, dst, rbuf;
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rbuf, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t r = conf_seg(&rbuf, 0, 4096);
  conf_ok(it_post_recv(p.p.ep, &r, 1, 100, (it_dto_flags_t) 0));
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_fill(&src, 13);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.p.pz, some_type(&p.p), &rmr));
  it_rmr_context_t ctx = link_window(&p, rmr, &dst, IT_PRIV_REMOTE_WRITE, 1);
  it_lmr_triplet_t s = conf_seg(&src, 0, 128);
  conf_ok(it_post_send_and_unlink(p.a.ep, &s, 1, 2, IT_COMPLETION_FLAG, ctx));
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  it_dto_cmpl_event_t rc = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 100);
  g_assert_cmpuint(rc.transferred_length, ==, 128);
  g_assert_cmphex((guint64) (uintptr_t) rc.unlinked_mr_handle, ==, (guint64) (uintptr_t) rmr);
  it_rmr_param_t q;
  conf_ok(it_rmr_query(rmr, IT_RMR_PARAM_LINKED, &q));
  g_assert_cmpint(q.linked, ==, IT_FALSE);
  write_through(&p, &src, &dst, ctx, WIN_OFF, 32, IT_DTO_ERR_REMOTE_ACCESS, 3);
  assert_zero(&dst, 0, 4096);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_buf_free(&rbuf);
  conf_pair_close(&p);
}

static void
test_lmr_busy(void)
{
  g_test_summary("IT-API RMR: an LMR with a linked RMR refuses it_lmr_free (IT_ERR_LMR_BUSY) until the "
                 "RMR is freed");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!conf_require(some_type(&p.p) != IT_RMR_TYPE_DEFAULT, "remote memory regions")) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t dst;
  conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.p.pz, some_type(&p.p), &rmr));
  link_window(&p, rmr, &dst, IT_PRIV_REMOTE_WRITE, 1);
  conf_assert_status(it_lmr_free(dst.lmr), IT_ERR_LMR_BUSY);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_bad_args(void)
{
  g_test_summary("IT-API RMR: link refuses an LMR or EP of another PZ (IT_ERR_INVALID_PZ), a range "
                 "outside the LMR (IT_ERR_RANGE), privileges beyond the LMR's (IT_ERR_INVALID_PRIVS), "
                 "length 0, bad flags and handles; create refuses an unknown type");
  conf_pair_t p;
  conf_pair_open(&p);
  it_rmr_type_t t = some_type(&p.p);
  if (!conf_require(t != IT_RMR_TYPE_DEFAULT, "remote memory regions")) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t b, ro;
  conf_buf_new(&p.p, &b, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &ro, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ, IT_ADDR_MODE_ABSOLUTE);
  it_pz_handle_t pz2;
  conf_ok(it_pz_create(p.p.ia, &pz2));
  it_rmr_handle_t rmr, other;
  it_rmr_context_t ctx;
  conf_ok(it_rmr_create20(p.p.pz, t, &rmr));
  conf_ok(it_rmr_create20(pz2, t, &other));
  conf_assert_status(it_rmr_create20(p.p.pz, (it_rmr_type_t) 7, &other), IT_ERR_INVALID_RMR_TYPE);
  conf_assert_status(it_rmr_link(other, b.lmr, b.data, 64, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                                 p.p.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_PZ);
  conf_assert_status(it_rmr_link(rmr, b.lmr, b.data + 4000, 200, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                                 p.p.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_RANGE);
  conf_assert_status(it_rmr_link(rmr, b.lmr, b.data - 1, 16, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                                 p.p.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_RANGE);
  conf_assert_status(it_rmr_link(rmr, ro.lmr, ro.data, 64, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                                 p.p.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_PRIVS);
  conf_assert_status(it_rmr_link(rmr, b.lmr, b.data, 0, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                                 p.p.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_LENGTH);
  conf_assert_status(it_rmr_link(rmr, b.lmr, b.data, 64, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                                 p.p.ep, 1, IT_UNLINK_LOCAL_SINK, &ctx), IT_ERR_INVALID_DTO_FLAGS);
  conf_assert_status(it_rmr_link(rmr, b.lmr, b.data, 64, (it_addr_mode_t) 9, IT_PRIV_REMOTE_WRITE,
                                 p.p.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_ADDR_MODE);
  conf_assert_status(it_rmr_link(rmr, (it_lmr_handle_t) p.p.ep, b.data, 64, IT_ADDR_MODE_ABSOLUTE,
                                 IT_PRIV_REMOTE_WRITE, p.p.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_LMR);
  conf_assert_status(it_rmr_link((it_rmr_handle_t) p.p.ep, b.lmr, b.data, 64, IT_ADDR_MODE_ABSOLUTE,
                                 IT_PRIV_REMOTE_WRITE, p.p.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_RMR);
  conf_assert_status(it_post_send(p.p.ep, NULL, 0, 1, IT_UNLINK_FENCE_FLAG), IT_ERR_INVALID_DTO_FLAGS);
  conf_assert_empty(p.p.dto);
  conf_assert_empty(p.a.dto);
  conf_ok(it_rmr_free(other));
  conf_ok(it_rmr_free(rmr));
  conf_ok(it_pz_free(pz2));
  conf_buf_free(&b);
  conf_buf_free(&ro);
  conf_pair_close(&p);
}

static void
test_bind10(void)
{
  g_test_summary("IT-API RMR: the IT-API 1.0 calls it_rmr_create10 and it_rmr_bind10 link an RMR that "
                 "serves an RDMA Write; it_rmr_unlink (1.0 it_rmr_unbind) revokes it");
  conf_pair_t p;
  conf_pair_open(&p);
  it_rmr_type_t t = some_type(&p.p);
  if (!conf_require(t != IT_RMR_TYPE_DEFAULT, "remote memory regions") || !require_unlink(&p.p, t)) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 17);
  it_rmr_handle_t rmr;
  it_rmr_context_t ctx;
  conf_ok(it_rmr_create10(p.p.pz, &rmr));
  conf_ok(it_rmr_bind10(rmr, dst.lmr, dst.data + WIN_OFF, WIN_LEN, IT_PRIV_REMOTE_WRITE, p.p.ep, 1,
                        IT_COMPLETION_FLAG, &ctx));
  conf_dto(p.p.dto, IT_RMR_BIND_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  write_through(&p, &src, &dst, ctx, WIN_OFF, 64, IT_DTO_SUCCESS, 2);
  g_assert_cmpmem(dst.data + WIN_OFF, 64, src.data, 64);
  conf_ok(it_rmr_unlink(rmr, p.p.ep, 3, IT_COMPLETION_FLAG));
  conf_dto(p.p.dto, IT_RMR_BIND_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  write_through(&p, &src, &dst, ctx, WIN_OFF, 64, IT_DTO_ERR_REMOTE_ACCESS, 4);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

/* ---- IT-API 2.1: RDMA Read into an RMR, IT_UNLINK_LOCAL_SINK ---- */

static gboolean
require_read_ext(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  gboolean ok = info->rdma_read_local_extensions;
  it_ia_info_free(info);
  return conf_require(ok, "RDMA Read into RMRs (rdma_read_local_extensions)");
}

static void
test_read_to_rmr(void)
{
  g_test_summary("IT-API 2.1 it_post_rdma_read_to_rmr: the data lands in the sink window's range; with "
                 "IT_UNLINK_LOCAL_SINK the completion names the RMR in unlinked_mr_handle, the RMR is "
                 "unlinked and its context refused");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!require_read_ext(&p.a)) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, sink, wsrc;
  conf_buf_new(&p.p, &src, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &sink, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &wsrc, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 21);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.a.pz, some_type(&p.a), &rmr));
  it_rmr_context_t ctx = link_on(&p.a, rmr, &sink, IT_PRIV_REMOTE_WRITE, 1);
  it_rmr_triplet_t t = { .rmr = rmr, .length = 256 };
  t.addr.abs = sink.data + WIN_OFF + 16;
  conf_ok(it_post_rdma_read_to_rmr(p.a.ep, &t, 1, 2, IT_COMPLETION_FLAG, it_make_rdma_addr_absolute(src.data),
                                   src.ctx));
  it_dto_cmpl_event_t d = conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  g_assert_cmpuint(d.transferred_length, ==, 256);
  g_assert_true(d.unlinked_mr_handle == IT_NULL_HANDLE);
  g_assert_cmpmem(sink.data + WIN_OFF + 16, 256, src.data, 256);
  assert_zero(&sink, 0, WIN_OFF + 16);
  assert_zero(&sink, WIN_OFF + 16 + 256, 4096 - WIN_OFF - 16 - 256);
  /* Read with unlink of the sink. */
  t.addr.abs = sink.data + WIN_OFF + 300;
  t.length = 100;
  conf_ok(it_post_rdma_read_to_rmr(p.a.ep, &t, 1, 3, IT_COMPLETION_FLAG | IT_UNLINK_LOCAL_SINK,
                                   it_make_rdma_addr_absolute(src.data + 1000), src.ctx));
  d = conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  g_assert_true((void *) d.unlinked_mr_handle == (void *) rmr);
  g_assert_cmpmem(sink.data + WIN_OFF + 300, 100, src.data + 1000, 100);
  it_rmr_param_t q;
  conf_ok(it_rmr_query(rmr, IT_RMR_PARAM_ALL, &q));
  g_assert_cmpint(q.linked, ==, IT_FALSE);
  conf_assert_status(it_post_rdma_read_to_rmr(p.a.ep, &t, 1, 4, IT_COMPLETION_FLAG,
                                              it_make_rdma_addr_absolute(src.data), src.ctx), IT_ERR_INVALID_RMR);
  /* The peer's write through the dead context is refused (and breaks the connection). */
  it_lmr_triplet_t ws = conf_seg(&wsrc, 0, 16);
  conf_ok(it_post_rdma_write(p.p.ep, &ws, 1, 5, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(sink.data + WIN_OFF), ctx));
  conf_write_refused(&p.p, 5);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&src);
  conf_buf_free(&sink);
  conf_buf_free(&wsrc);
  conf_pair_close(&p);
}

static void
test_read_to_rmr_rights(void)
{
  g_test_summary("IT-API 2.1 it_post_rdma_read_to_rmr: argument checks; a sink window without what a Read "
                 "sink needs (iWARP: the RMR's remote write; InfiniBand: its LMR's local write) completes "
                 "with IT_DTO_ERR_LOCAL_PROTECTION and nothing lands");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!require_read_ext(&p.a)) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  it_ia_info_t *info = conf_info(&p.a);
  gboolean iw = info->rdma_read_requires_remote_write;
  it_ia_info_free(info);
  conf_buf_t src, sink;
  conf_buf_new(&p.p, &src, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &sink, 4096, iw ? IT_PRIV_LOCAL | IT_PRIV_REMOTE : IT_PRIV_LOCAL_READ | IT_PRIV_REMOTE,
               IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 5);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.a.pz, some_type(&p.a), &rmr));
  link_on(&p.a, rmr, &sink, iw ? IT_PRIV_REMOTE_READ : IT_PRIV_REMOTE, 1);
  it_rmr_triplet_t t[2] = { { .rmr = rmr, .length = 64 }, { .rmr = rmr, .length = 64 } };
  t[0].addr.abs = sink.data + WIN_OFF;
  t[1].addr.abs = sink.data + WIN_OFF + 64;
  it_rdma_addr_t ra = it_make_rdma_addr_absolute(src.data);
  conf_assert_status(it_post_rdma_read_to_rmr(p.a.ep, t, 2, 2, IT_COMPLETION_FLAG | IT_UNLINK_LOCAL_SINK, ra,
                                              src.ctx), IT_ERR_INVALID_NUM_SEGMENTS);
  conf_assert_status(it_post_rdma_read_to_rmr(p.a.ep, t, 1, 2, IT_COMPLETION_FLAG | IT_UNLINK_FENCE_FLAG, ra,
                                              src.ctx), IT_ERR_INVALID_DTO_FLAGS);
  it_rmr_triplet_t bad = t[0];
  bad.rmr = (it_rmr_handle_t) p.a.ep;
  conf_assert_status(it_post_rdma_read_to_rmr(p.a.ep, &bad, 1, 2, IT_COMPLETION_FLAG, ra, src.ctx),
                     IT_ERR_INVALID_RMR);
  conf_assert_status(it_post_rdma_read_to_rmr((it_ep_handle_t) p.a.pz, t, 1, 2, IT_COMPLETION_FLAG, ra, src.ctx),
                     IT_ERR_INVALID_EP);
  conf_assert_empty(p.a.dto);
  conf_ok(it_post_rdma_read_to_rmr(p.a.ep, t, 1, 3, IT_COMPLETION_FLAG, ra, src.ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_ERR_LOCAL_PROTECTION, 3);
  assert_zero(&sink, 0, 4096);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&src);
  conf_buf_free(&sink);
  conf_pair_close(&p);
}

/* The write through @ctx into @dst's window is refused: REMOTE_ACCESS
 * (conf_write_refused), both sides broken, the responder's
 * IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION, @dst unchanged.  @full: and
 * nothing else arrives on either side. */
static void
write_refused(conf_pair_t *p, conf_buf_t *src, conf_buf_t *dst, it_rmr_context_t ctx, gboolean full)
{
  conf_buf_fill(src, 9);
  g_autofree unsigned char *was = g_memdup2(dst->data, dst->len);
  it_lmr_triplet_t s = conf_seg(src, 0, 32);
  conf_ok(it_post_rdma_write(p->a.ep, &s, 1, 0xbad, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(dst->data + WIN_OFF), ctx));
  conf_write_refused(&p->a, 0xbad);
  conf_wait(p->p.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  conf_wait(p->p.aff, IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
  g_assert_cmpmem(dst->data, dst->len, was, dst->len);
  conf_buf_check_guards(dst);
  if (full) {
    conf_assert_empty(p->a.dto);
    conf_assert_empty(p->p.dto);
    conf_assert_empty(p->p.aff);
    conf_assert_empty(p->p.cm);
  }
}

static void
test_key_field(gconstpointer data)
{
  gboolean key_byte = GPOINTER_TO_INT(data);
  g_test_summary("IT-API RMR: a linked RMR's context changed only in its key byte (the low 8 bits; "
                 "several values), or only in one other bit (each alone), is refused: after a write "
                 "through the right context landed on the connection, the write through the "
                 "changed one completes IT_DTO_ERR_REMOTE_ACCESS, both sides break and the "
                 "window's memory is unchanged");
  conf_key_change_t ch[64];
  int n = 0;
  for (int i = 0; n == 0 || i < n; i++) {
    conf_pair_t p;
    conf_pair_open(&p);
    it_rmr_type_t t = some_type(&p.p);
    if (!conf_require(t != IT_RMR_TYPE_DEFAULT, "remote memory regions")) {
      conf_pair_close(&p);
      return;
    }
    conf_pair_connect(&p, NULL, 0, NULL, 0);
    conf_buf_t src, dst;
    conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.p, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_fill(&src, 8);
    it_rmr_handle_t rmr;
    conf_ok(it_rmr_create20(p.p.pz, t, &rmr));
    it_rmr_context_t ctx = link_window(&p, rmr, &dst, IT_PRIV_REMOTE_WRITE, 1);
    if (n == 0)
      n = conf_key_changes(ctx, key_byte, ch);
    it_rmr_context_t bad = ctx ^ ch[i].mask;
    g_test_message("window context 0x%" G_GINT64_MODIFIER "x, %s: 0x%" G_GINT64_MODIFIER "x",
                   (guint64) ctx, ch[i].what, (guint64) bad);
    write_through(&p, &src, &dst, ctx, WIN_OFF, 32, IT_DTO_SUCCESS, 2);
    conf_placed(&p.a, it_make_rdma_addr_absolute(dst.data + WIN_OFF), ctx);
    g_assert_cmpmem(dst.data + WIN_OFF, 32, src.data, 32);
    /* A flip of an index bit can give the key of the target region itself
     * (registered with remote rights, so its own context rightly grants
     * the write): with 8-bit key tags, as iWARP's STags have, one run in a
     * hundred or so.  That change is no wrong key; it is left out. */
    if (bad == dst.ctx)
      g_test_message("0x%" G_GINT64_MODIFIER "x is the target region's own context: left out",
                     (guint64) bad);
    else
      write_refused(&p, &src, &dst, bad, i == n - 1);
    conf_ok(it_rmr_free(rmr));
    conf_buf_free(&src);
    conf_buf_free(&dst);
    conf_pair_close(&p);
  }
}

static void
test_other_pz(void)
{
  g_test_summary("IT-API RMR: an RMR of another PZ of the responder's IA (linked on an EP of that "
                 "PZ, through which a write lands) is refused through an EP of the first PZ: "
                 "an in-bounds RDMA Write with its context completes IT_DTO_ERR_REMOTE_ACCESS, that "
                 "connection breaks, the window's memory is unchanged and the other connection "
                 "stays up");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.p);
  it_rmr_type_t t = (info->rmr_types_supported & IT_RMR_TYPE_WIDE) ? IT_RMR_TYPE_WIDE : some_type(&p.p);
  it_ia_info_free(info);
  if (!conf_require(t != IT_RMR_TYPE_DEFAULT, "remote memory regions")) {
    conf_pair_close(&p);
    return;
  }
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  /* A second EP on the passive IA, in a PZ of its own, accepted on the
   * same listener from a second active side. */
  conf_side_t a2, p2 = p.p;
  conf_side_open(&a2, NULL);
  conf_ok(it_pz_create(p.p.ia, &p2.pz));
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  conf_ok(it_ep_rc_create(p2.pz, p.p.dto, p.p.dto, p.p.cm, IT_EP_NO_FLAG, &attr, &p2.ep));
  conf_ok(conf_connect(&a2, a2.ep, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(p2.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(a2.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_buf_t src, src2, dst;
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&a2, &src2, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p2, &dst, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src2, 12);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p2.pz, t, &rmr));
  it_rmr_context_t ctx = link_on(&p2, rmr, &dst, IT_PRIV_REMOTE_WRITE, 1);
  it_lmr_triplet_t s = conf_seg(&src2, 0, 32);
  conf_ok(it_post_rdma_write(a2.ep, &s, 1, 2, IT_COMPLETION_FLAG, it_make_rdma_addr_absolute(dst.data + WIN_OFF),
                             ctx));
  conf_dto(a2.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_placed(&a2, it_make_rdma_addr_absolute(dst.data + WIN_OFF), ctx);
  g_assert_cmpmem(dst.data + WIN_OFF, 32, src2.data, 32);
  write_refused(&p, &src, &dst, ctx, FALSE);
  g_assert_cmpint(conf_ep_state(a2.ep), ==, IT_EP_STATE_CONNECTED);
  conf_assert_empty(a2.cm);
  conf_assert_empty(p.a.dto);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&src);
  conf_buf_free(&src2);
  conf_buf_free(&dst);
  conf_side_close(&a2);
  conf_ok(it_ep_free(p2.ep));
  conf_pair_close(&p);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/rmr/create-query-free", test_create_query_free);
  g_test_add_func("/conformance/rmr/write-range", test_write_range);
  g_test_add_func("/conformance/rmr/rights", test_rights);
  g_test_add_func("/conformance/rmr/unlink-relink", test_unlink_relink);
  g_test_add_data_func("/conformance/rmr/narrow-other-ep", GINT_TO_POINTER(IT_RMR_TYPE_NARROW), test_scope);
  g_test_add_data_func("/conformance/rmr/wide-any-ep", GINT_TO_POINTER(IT_RMR_TYPE_WIDE), test_scope);
  g_test_add_func("/conformance/rmr/send-and-unlink", test_send_and_unlink);
  g_test_add_func("/conformance/rmr/lmr-busy", test_lmr_busy);
  g_test_add_func("/conformance/rmr/bad-args", test_bad_args);
  g_test_add_func("/conformance/rmr/v10-bind", test_bind10);
  g_test_add_func("/conformance/rmr/read-to-rmr", test_read_to_rmr);
  g_test_add_func("/conformance/rmr/read-to-rmr/rights", test_read_to_rmr_rights);
  g_test_add_data_func("/conformance/rmr/key-field/key-byte", GINT_TO_POINTER(TRUE), test_key_field);
  g_test_add_data_func("/conformance/rmr/key-field/bits", GINT_TO_POINTER(FALSE), test_key_field);
  g_test_add_func("/conformance/rmr/pz-other", test_other_pz);
  return g_test_run();
}
