/*
 * Conformance: protection and error paths of data transfer (IT-API DTO
 * and LMR areas).  Remote access errors complete the requester's work
 * request with IT_DTO_ERR_REMOTE_ACCESS, break the connection on both
 * sides and flush everything else outstanding; local protection errors
 * complete with IT_DTO_ERR_LOCAL_PROTECTION; malformed posts are refused
 * synchronously and complete nothing.  Memory outside a registered region
 * (the guard bytes) and memory the failed operation named are never
 * touched.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "conf.h"

#define assert_handle_eq(a, b) \
  g_assert_cmphex((guint64) (uintptr_t) (a), ==, (guint64) (uintptr_t) (b))

#define PRIV_TARGET (IT_PRIV_LOCAL | IT_PRIV_REMOTE)
#define FLUSH_COOKIE_1 0xf1
#define FLUSH_COOKIE_2 0xf2

typedef struct want {
  it_event_type_t type;
  it_dto_status_t status;
  it_dto_cookie_t cookie;
  gboolean seen;
} want_t;

/* Take exactly @n completions from @side's DTO EVD, in any order, each
 * matching one entry of @w once (a refused Send or Write by
 * conf_refusal_ok); then the EVD must stay empty. */
static void
expect_set(conf_side_t *side, want_t *w, size_t n)
{
  it_evd_handle_t evd = side->dto;
  it_ep_handle_t ep = side->ep;
  for (size_t k = 0; k < n; k++) {
    it_event_t ev;
    size_t more = 0;
    it_status_t st = it_evd_wait(evd, CONF_TIMEOUT_US, &ev, &more);
    if (st != IT_SUCCESS)
      g_error("waiting for completion %zu of %zu: %s", k + 1, n, itx_status_name(st));
    size_t i;
    for (i = 0; i < n; i++)
      if (!w[i].seen && w[i].cookie == ev.dto_cmpl.cookie)
        break;
    if (i == n)
      g_error("unexpected or repeated completion: %s, cookie 0x%" G_GINT64_MODIFIER "x, %s",
              itx_event_name(ev.event_number), (guint64) ev.dto_cmpl.cookie,
              itx_dto_status_name(ev.dto_cmpl.dto_status));
    g_assert_cmpstr(itx_event_name(ev.event_number), ==, itx_event_name(w[i].type));
    if (!conf_refusal_ok(side, w[i].type, ev.dto_cmpl.dto_status, w[i].status))
      g_assert_cmpint(ev.dto_cmpl.dto_status, ==, w[i].status);
    assert_handle_eq(ev.dto_cmpl.ep, ep);
    w[i].seen = TRUE;
  }
  conf_assert_empty(evd);
}

/* A connected pair with two receives outstanding on the requester (a),
 * which a failure must flush. */
typedef struct fixture {
  conf_pair_t p;
  conf_buf_t src;   /* a: 4 KiB, local, filled with seed 1 */
  conf_buf_t rq;    /* a: receive buffers */
  conf_buf_t dst;   /* p: 4 KiB remote target, filled with seed 2 */
} fixture_t;

static void
fixture_setup(fixture_t *f, const it_ep_attributes_t *pa, it_mem_priv_t dst_privs)
{
  if (pa != NULL)
    conf_pair_open2(&f->p, NULL, pa);
  else
    conf_pair_open(&f->p);
  conf_pair_connect(&f->p, NULL, 0, NULL, 0);
  conf_buf_new(&f->p.a, &f->src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&f->p.a, &f->rq, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&f->p.p, &f->dst, 4096, dst_privs, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&f->src, 1);
  conf_buf_fill(&f->dst, 2);
  it_lmr_triplet_t r1 = conf_seg(&f->rq, 0, 128), r2 = conf_seg(&f->rq, 128, 128);
  conf_ok(it_post_recv(f->p.a.ep, &r1, 1, FLUSH_COOKIE_1, IT_COMPLETION_FLAG));
  conf_ok(it_post_recv(f->p.a.ep, &r2, 1, FLUSH_COOKIE_2, IT_COMPLETION_FLAG));
}

static void
fixture_teardown(fixture_t *f)
{
  conf_buf_free(&f->src);
  conf_buf_free(&f->rq);
  conf_buf_free(&f->dst);
  conf_pair_close(&f->p);
}

static void
wait_broken(conf_pair_t *p)
{
  it_event_t ev = conf_wait(p->a.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  assert_handle_eq(ev.conn.ep, p->a.ep);
  ev = conf_wait(p->p.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  assert_handle_eq(ev.conn.ep, p->p.ep);
}

/* Exactly one affiliated event on @s: @want (0: none), naming its EP;
 * itx_ep_error says the same, and a Terminate with it was sent by this
 * side unless the peer reported the error (R_*). */
static void
expect_aff(conf_side_t *s, it_event_type_t want)
{
  if (want != 0) {
    it_event_t ev = conf_wait(s->aff, want);
    assert_handle_eq(ev.aff_async.cause.ep, s->ep);
  }
  conf_assert_empty(s->aff);
  itx_ep_error_t e;
  conf_ok(itx_ep_error(s->ep, &e));
  g_assert_cmphex(e.event, ==, want);
  if (e.terminate) {
    g_test_message("%s: Terminate %s, layer %u type %u code 0x%02x", itx_event_name(want),
                   e.sent ? "sent" : "received", e.layer, e.etype, e.code);
    g_assert_cmpint(e.sent, ==, want < IT_ASYNC_AFF_EP_R_ERROR);
  }
}

/* After a failed request @cookie: its completion, the two receives
 * flushed, nothing else; both sides broken, each with the affiliated
 * event given (@req_aff the requester's, @resp_aff the responder's). */
static void
expect_failure(fixture_t *f, it_event_type_t type, it_dto_status_t status, it_dto_cookie_t cookie,
               it_event_type_t req_aff, it_event_type_t resp_aff)
{
  want_t w[] = {
    { type, status, cookie, FALSE },
    { IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_FLUSHED, FLUSH_COOKIE_1, FALSE },
    { IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_FLUSHED, FLUSH_COOKIE_2, FALSE },
  };
  expect_set(&f->p.a, w, G_N_ELEMENTS(w));
  wait_broken(&f->p);
  expect_aff(&f->p.a, req_aff);
  expect_aff(&f->p.p, resp_aff);
  conf_assert_empty(f->p.p.dto);
  for (size_t i = 0; i < f->rq.len; i++) /* flushed receives land nothing */
    g_assert_cmpuint(f->rq.data[i], ==, 0);
  conf_buf_check_guards(&f->rq);
}

static void
expect_dst_untouched(fixture_t *f)
{
  conf_buf_check(&f->dst, 0, f->dst.len, 2);
  conf_buf_check_guards(&f->dst);
}

typedef enum { RANGE_PAST_END, RANGE_STRADDLE_END, RANGE_BEFORE_START, RANGE_WRAP } range_case_t;

static void
test_write_out_of_range(gconstpointer data)
{
  range_case_t c = (range_case_t) GPOINTER_TO_INT(data);
  g_test_summary("IT-API DTO protection: an RDMA Write outside the remote region (last byte + 1, "
                 "straddling the end, before the start, address + length wrapping 2^64) completes "
                 "IT_DTO_ERR_REMOTE_ACCESS, breaks both sides, raises "
                 "IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION on the responder and "
                 "IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION on the requester, flushes the rest and writes "
                 "nothing");
  fixture_t f;
  fixture_setup(&f, NULL, PRIV_TARGET);
  it_lmr_triplet_t s;
  it_rdma_addr_t ra;
  switch (c) {
  case RANGE_PAST_END:
    s = conf_seg(&f.src, 0, 1);
    ra = it_make_rdma_addr_absolute(f.dst.data + f.dst.len);
    break;
  case RANGE_STRADDLE_END:
    s = conf_seg(&f.src, 0, 64);
    ra = it_make_rdma_addr_absolute(f.dst.data + f.dst.len - 63);
    break;
  case RANGE_BEFORE_START:
    s = conf_seg(&f.src, 0, 64);
    ra = it_make_rdma_addr_absolute(f.dst.data - 1);
    break;
  case RANGE_WRAP:
  default:
    s = conf_seg(&f.src, 0, 4096);
    ra = UINT64_MAX - 15;
    break;
  }
  conf_ok(it_post_rdma_write(f.p.a.ep, &s, 1, 0x77, IT_COMPLETION_FLAG, ra, f.dst.ctx));
  expect_failure(&f, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 0x77,
                 IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
  expect_dst_untouched(&f);
  fixture_teardown(&f);
}

static void
test_write_no_priv(void)
{
  g_test_summary("IT-API DTO protection: an RDMA Write to a region registered without "
                 "IT_PRIV_REMOTE_WRITE completes IT_DTO_ERR_REMOTE_ACCESS and writes nothing; "
                 "itx_ep_error names the responder's event until it_ep_reset");
  fixture_t f;
  fixture_setup(&f, NULL, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ);
  it_lmr_triplet_t s = conf_seg(&f.src, 0, 256);
  conf_ok(it_post_rdma_write(f.p.a.ep, &s, 1, 0x78, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(f.dst.data), f.dst.ctx));
  expect_failure(&f, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 0x78,
                 IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
  expect_dst_untouched(&f);
  /* it_ep_reset forgets the error; bad arguments are refused. */
  itx_ep_error_t e;
  conf_ok(it_ep_reset(f.p.p.ep));
  conf_ok(itx_ep_error(f.p.p.ep, &e));
  g_assert_cmphex(e.event, ==, 0);
  g_assert_false(e.terminate);
  conf_assert_status(itx_ep_error(f.p.p.ep, NULL), IT_ERR_FAULT);
  conf_assert_status(itx_ep_error((it_ep_handle_t) f.p.p.dto, &e), IT_ERR_INVALID_EP);
  fixture_teardown(&f);
}

static void
test_read_no_priv(void)
{
  g_test_summary("IT-API DTO protection: an RDMA Read of a region registered without "
                 "IT_PRIV_REMOTE_READ completes IT_DTO_ERR_REMOTE_ACCESS and delivers nothing");
  fixture_t f;
  fixture_setup(&f, NULL, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
  conf_buf_t sink;
  conf_buf_new(&f.p.a, &sink, 256, conf_sink_privs(&f.p.a), IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t s = conf_seg(&sink, 0, 256);
  conf_ok(it_post_rdma_read(f.p.a.ep, &s, 1, 0x79, IT_COMPLETION_FLAG,
                            it_make_rdma_addr_absolute(f.dst.data), f.dst.ctx));
  expect_failure(&f, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 0x79,
                 IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION);
  for (size_t i = 0; i < sink.len; i++)
    g_assert_cmpuint(sink.data[i], ==, 0);
  conf_buf_check_guards(&sink);
  expect_dst_untouched(&f);
  conf_buf_free(&sink);
  fixture_teardown(&f);
}

static void
test_write_disabled(void)
{
  g_test_summary("IT-API DTO protection: an RDMA Write to a responder EP created with "
                 "rdma_write_enable false completes IT_DTO_ERR_REMOTE_ACCESS and writes nothing");
  it_ep_attributes_t pa;
  conf_default_attr(&pa);
  pa.srv.rc.rdma_write_enable = IT_FALSE;
  fixture_t f;
  fixture_setup(&f, &pa, PRIV_TARGET);
  it_lmr_triplet_t s = conf_seg(&f.src, 0, 256);
  conf_ok(it_post_rdma_write(f.p.a.ep, &s, 1, 0x7a, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(f.dst.data), f.dst.ctx));
  expect_failure(&f, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 0x7a,
                 IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
  expect_dst_untouched(&f);
  fixture_teardown(&f);
}

static void
test_rmr_context_flipped(void)
{
  g_test_summary("IT-API DTO protection: the region's rmr_context with its upper 32 bits flipped "
                 "is refused: IT_DTO_ERR_REMOTE_ACCESS, nothing written");
  fixture_t f;
  fixture_setup(&f, NULL, PRIV_TARGET);
  it_lmr_triplet_t s = conf_seg(&f.src, 0, 256);
  conf_ok(it_post_rdma_write(f.p.a.ep, &s, 1, 0x7b, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(f.dst.data),
                             f.dst.ctx ^ UINT64_C(0xffffffff00000000)));
  expect_failure(&f, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 0x7b,
                 IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
  expect_dst_untouched(&f);
  fixture_teardown(&f);
}

static void
test_rmr_context_freed(void)
{
  g_test_summary("IT-API DTO protection: the rmr_context of a freed LMR is refused "
                 "(IT_DTO_ERR_REMOTE_ACCESS) even when the same memory was registered again");
  fixture_t f;
  fixture_setup(&f, NULL, PRIV_TARGET);
  it_rmr_context_t stale = f.dst.ctx;
  conf_ok(it_lmr_free(f.dst.lmr));
  /* The memory stays registered, under a new LMR. */
  conf_ok(it_lmr_create(f.p.p.pz, f.dst.data, NULL, f.dst.len, IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
                        IT_LMR_FLAG_NONE, 0, &f.dst.lmr, &f.dst.ctx));
  g_assert_cmphex(f.dst.ctx, !=, stale);
  it_lmr_triplet_t s = conf_seg(&f.src, 0, 256);
  conf_ok(it_post_rdma_write(f.p.a.ep, &s, 1, 0x7c, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(f.dst.data), stale));
  expect_failure(&f, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 0x7c,
                 IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
  expect_dst_untouched(&f);
  fixture_teardown(&f);
}

static void
test_local_other_pz(void)
{
  g_test_summary("IT-API DTO protection: a local segment whose LMR lives in another PZ of the "
                 "same IA completes IT_DTO_ERR_LOCAL_PROTECTION; nothing reaches the peer");
  fixture_t f;
  fixture_setup(&f, NULL, PRIV_TARGET);
  it_pz_handle_t pz2;
  conf_ok(it_pz_create(f.p.a.ia, &pz2));
  conf_side_t other = f.p.a;
  other.pz = pz2;
  conf_buf_t foreign;
  conf_buf_new(&other, &foreign, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&foreign, 5);
  it_lmr_triplet_t s = conf_seg(&foreign, 0, 256);
  conf_ok(it_post_rdma_write(f.p.a.ep, &s, 1, 0x7d, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(f.dst.data), f.dst.ctx));
  expect_failure(&f, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_LOCAL_PROTECTION, 0x7d,
                 IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION, 0);
  expect_dst_untouched(&f);
  conf_buf_free(&foreign);
  fixture_teardown(&f);
}

static void
test_remote_other_pz(void)
{
  g_test_summary("IT-API DTO protection: an RDMA Write to a region in a PZ other than the "
                 "responder EP's completes IT_DTO_ERR_REMOTE_ACCESS and writes nothing");
  fixture_t f;
  fixture_setup(&f, NULL, PRIV_TARGET);
  it_pz_handle_t pz2;
  conf_ok(it_pz_create(f.p.p.ia, &pz2));
  conf_side_t other = f.p.p;
  other.pz = pz2;
  conf_buf_t foreign;
  conf_buf_new(&other, &foreign, 256, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&foreign, 6);
  it_lmr_triplet_t s = conf_seg(&f.src, 0, 256);
  conf_ok(it_post_rdma_write(f.p.a.ep, &s, 1, 0x7e, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(foreign.data), foreign.ctx));
  expect_failure(&f, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 0x7e,
                 IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
  conf_buf_check(&foreign, 0, foreign.len, 6);
  conf_buf_check_guards(&foreign);
  expect_dst_untouched(&f);
  conf_buf_free(&foreign);
  fixture_teardown(&f);
}

static void
test_local_outside(gconstpointer data)
{
  gboolean straddle = GPOINTER_TO_INT(data);
  g_test_summary("IT-API DTO protection: a local segment beyond the end of its LMR completes "
                 "IT_DTO_ERR_LOCAL_PROTECTION and nothing is written at the peer");
  fixture_t f;
  fixture_setup(&f, NULL, PRIV_TARGET);
  it_lmr_triplet_t s = straddle ? conf_seg(&f.src, f.src.len - 8, 16) : conf_seg(&f.src, f.src.len, 16);
  conf_ok(it_post_rdma_write(f.p.a.ep, &s, 1, 0x7f, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(f.dst.data), f.dst.ctx));
  expect_failure(&f, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_LOCAL_PROTECTION, 0x7f,
                 IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION, 0);
  expect_dst_untouched(&f);
  conf_buf_check(&f.src, 0, f.src.len, 1);
  conf_buf_check_guards(&f.src);
  fixture_teardown(&f);
}

static void
test_recv_too_small(void)
{
  g_test_summary("IT-API DTO errors: a send larger than the receive buffer completes the "
                 "receive IT_DTO_ERR_LOCAL_LENGTH and the send IT_DTO_ERR_REMOTE_RESPONDER; both "
                 "sides break, the receiver with IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR, the sender "
                 "with IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR");
  fixture_t f;
  fixture_setup(&f, NULL, PRIV_TARGET);
  it_lmr_triplet_t r = conf_seg(&f.dst, 0, 64);
  conf_ok(it_post_recv(f.p.p.ep, &r, 1, 0x90, IT_COMPLETION_FLAG));
  it_lmr_triplet_t s = conf_seg(&f.src, 0, 128);
  conf_ok(it_post_send(f.p.a.ep, &s, 1, 0x91, IT_COMPLETION_FLAG));
  want_t wp[] = { { IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_LOCAL_LENGTH, 0x90, FALSE } };
  expect_set(&f.p.p, wp, 1);
  expect_failure(&f, IT_DTO_SEND_CMPL_EVENT, IT_DTO_ERR_REMOTE_RESPONDER, 0x91,
                 IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR, IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR);
  /* Past the 64-byte receive segment nothing may be written. */
  for (size_t i = 64; i < f.dst.len; i++)
    g_assert_cmpuint(f.dst.data[i], ==, (unsigned char) (i * 31 + 2 * 7 + 1));
  conf_buf_check_guards(&f.dst);
  fixture_teardown(&f);
}

static void
test_sync_errors(void)
{
  g_test_summary("IT-API DTO: malformed posts fail synchronously (IT_ERR_INVALID_LMR, "
                 "IT_ERR_INVALID_NUM_SEGMENTS, IT_ERR_INVALID_DTO_FLAGS, IT_ERR_INVALID_EP, "
                 "IT_ERR_INVALID_HANDLE), complete nothing and leave the connection working");
  conf_pair_t p;
  conf_buf_t src, dst;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_new(&p.a, &src, 1024, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 1024, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 8);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute(dst.data);

  /* A freed LMR, a garbage value and a handle of another type. */
  conf_buf_t gone;
  conf_buf_new(&p.a, &gone, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t freed = conf_seg(&gone, 0, 64);
  conf_ok(it_lmr_free(gone.lmr));
  gone.lmr = IT_NULL_HANDLE;
  it_lmr_triplet_t garbage = { .lmr = (it_lmr_handle_t) (uintptr_t) 0x0badc0ffee0ddf00, .addr.abs = src.data,
                               .length = 16 };
  it_lmr_triplet_t pz_as_lmr = { .lmr = (it_lmr_handle_t) p.a.pz, .addr.abs = src.data, .length = 16 };
  it_lmr_triplet_t good = conf_seg(&src, 0, 16);
  it_lmr_triplet_t mixed[2] = { good, freed };
  conf_assert_status(it_post_send(p.a.ep, &freed, 1, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_LMR);
  conf_assert_status(it_post_send(p.a.ep, &garbage, 1, 2, IT_COMPLETION_FLAG), IT_ERR_INVALID_LMR);
  conf_assert_status(it_post_send(p.a.ep, &pz_as_lmr, 1, 3, IT_COMPLETION_FLAG), IT_ERR_INVALID_LMR);
  conf_assert_status(it_post_send(p.a.ep, mixed, 2, 4, IT_COMPLETION_FLAG), IT_ERR_INVALID_LMR);
  conf_assert_status(it_post_rdma_write(p.a.ep, &freed, 1, 5, IT_COMPLETION_FLAG, ra, dst.ctx),
                     IT_ERR_INVALID_LMR);
  conf_assert_status(it_post_rdma_read(p.a.ep, &garbage, 1, 6, IT_COMPLETION_FLAG, ra, dst.ctx),
                     IT_ERR_INVALID_LMR);
  conf_assert_status(it_post_recv(p.a.ep, &freed, 1, 7, IT_COMPLETION_FLAG), IT_ERR_INVALID_LMR);

  /* Segment counts above the EP's limits (send/recv 4, RDMA Read 1). */
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  it_lmr_triplet_t many[8];
  for (size_t i = 0; i < G_N_ELEMENTS(many); i++)
    many[i] = conf_seg(&src, i * 16, 16);
  conf_assert_status(it_post_send(p.a.ep, many, attr.max_send_segments + 1, 8, IT_COMPLETION_FLAG),
                     IT_ERR_INVALID_NUM_SEGMENTS);
  conf_assert_status(it_post_recv(p.a.ep, many, attr.max_recv_segments + 1, 9, IT_COMPLETION_FLAG),
                     IT_ERR_INVALID_NUM_SEGMENTS);
  conf_assert_status(it_post_rdma_read(p.a.ep, many, attr.srv.rc.max_rdma_read_segments + 1, 10,
                                       IT_COMPLETION_FLAG, ra, dst.ctx),
                     IT_ERR_INVALID_NUM_SEGMENTS);
  conf_assert_status(it_post_rdma_write(p.a.ep, many, attr.srv.rc.max_rdma_write_segments + 1, 11,
                                        IT_COMPLETION_FLAG, ra, dst.ctx),
                     IT_ERR_INVALID_NUM_SEGMENTS);

  /* Unknown flag bits. */
  conf_assert_status(it_post_send(p.a.ep, &good, 1, 12, IT_COMPLETION_FLAG | 0x80), IT_ERR_INVALID_DTO_FLAGS);
  conf_assert_status(it_post_send(p.a.ep, &good, 1, 13, (it_dto_flags_t) 0x10000), IT_ERR_INVALID_DTO_FLAGS);
  conf_assert_status(it_post_rdma_write(p.a.ep, &good, 1, 14, (it_dto_flags_t) 0x100, ra, dst.ctx),
                     IT_ERR_INVALID_DTO_FLAGS);
  conf_assert_status(it_post_recv(p.a.ep, &good, 1, 15, (it_dto_flags_t) 0x100), IT_ERR_INVALID_DTO_FLAGS);

  /* Not an EP. */
  it_ep_handle_t junk = (it_ep_handle_t) (uintptr_t) 0x0123456789abcdef;
  conf_assert_status(it_post_send(junk, &good, 1, 16, IT_COMPLETION_FLAG), IT_ERR_INVALID_EP);
  conf_assert_status(it_post_send((it_ep_handle_t) IT_NULL_HANDLE, &good, 1, 17, IT_COMPLETION_FLAG),
                     IT_ERR_INVALID_EP);
  conf_assert_status(it_post_send((it_ep_handle_t) p.a.pz, &good, 1, 18, IT_COMPLETION_FLAG), IT_ERR_INVALID_EP);
  conf_assert_status(it_post_rdma_write(junk, &good, 1, 19, IT_COMPLETION_FLAG, ra, dst.ctx), IT_ERR_INVALID_EP);
  conf_assert_status(it_post_rdma_read((it_ep_handle_t) p.a.dto, &good, 1, 20, IT_COMPLETION_FLAG, ra, dst.ctx),
                     IT_ERR_INVALID_EP);
  conf_assert_status(it_post_recv(p.a.pz, &good, 1, 21, IT_COMPLETION_FLAG), IT_ERR_INVALID_HANDLE);
  conf_assert_status(it_post_recv((it_handle_t) (uintptr_t) 0x0123456789abcdef, &good, 1, 22,
                                  IT_COMPLETION_FLAG), IT_ERR_INVALID_HANDLE);

  /* None of that completed anything, wrote anything or broke the connection. */
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_assert_empty(p.a.cm);
  for (size_t i = 0; i < dst.len; i++)
    g_assert_cmpuint(dst.data[i], ==, 0);
  it_lmr_triplet_t all = conf_seg(&src, 0, 1024);
  conf_ok(it_post_rdma_write(p.a.ep, &all, 1, 23, IT_COMPLETION_FLAG, ra, dst.ctx));
  conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 23);
  conf_placed(&p.a, ra, dst.ctx);
  g_assert_cmpmem(dst.data, 1024, src.data, 1024);
  conf_assert_empty(p.a.dto);
  conf_buf_free(&gone);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_queued_failure(gconstpointer data)
{
  gboolean local = GPOINTER_TO_INT(data);
  g_test_summary("IT-API DTO errors: an RDMA Write (bad remote key, or local segment outside its "
                 "LMR) queued behind a send that waits for a receive fails exactly once when its "
                 "turn comes; the send completes, the rest flush, every request completes once");
  fixture_t f;
  fixture_setup(&f, NULL, PRIV_TARGET);
  it_lmr_triplet_t s = conf_seg(&f.src, 0, 128);
  conf_ok(it_post_send(f.p.a.ep, &s, 1, 0xa0, IT_COMPLETION_FLAG));
  if (local) {
    it_lmr_triplet_t out = conf_seg(&f.src, f.src.len, 16);
    conf_ok(it_post_rdma_write(f.p.a.ep, &out, 1, 0xa1, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute(f.dst.data), f.dst.ctx));
  } else {
    conf_ok(it_post_rdma_write(f.p.a.ep, &s, 1, 0xa1, IT_COMPLETION_FLAG, it_make_rdma_addr_absolute(f.dst.data),
                               f.dst.ctx ^ UINT64_C(0xffffffff00000000)));
  }
  conf_assert_empty(f.p.a.dto);
  conf_buf_t rb;
  conf_buf_new(&f.p.p, &rb, 128, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t r = conf_seg(&rb, 0, 128);
  conf_ok(it_post_recv(f.p.p.ep, &r, 1, 0xb0, IT_COMPLETION_FLAG));
  want_t wp[] = { { IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 0xb0, FALSE } };
  expect_set(&f.p.p, wp, 1);
  g_assert_cmpmem(rb.data, 128, f.src.data, 128);
  want_t wa[] = {
    { IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 0xa0, FALSE },
    { IT_DTO_RDMA_WRITE_CMPL_EVENT, local ? IT_DTO_ERR_LOCAL_PROTECTION : IT_DTO_ERR_REMOTE_ACCESS, 0xa1, FALSE },
    { IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_FLUSHED, FLUSH_COOKIE_1, FALSE },
    { IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_FLUSHED, FLUSH_COOKIE_2, FALSE },
  };
  expect_set(&f.p.a, wa, G_N_ELEMENTS(wa));
  wait_broken(&f.p);
  expect_aff(&f.p.a, local ? IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION : IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION);
  expect_aff(&f.p.p, local ? 0 : IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
  expect_dst_untouched(&f);
  conf_buf_free(&rb);
  fixture_teardown(&f);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/conformance/neg/rdma-write/past-end", GINT_TO_POINTER(RANGE_PAST_END),
                       test_write_out_of_range);
  g_test_add_data_func("/conformance/neg/rdma-write/straddle-end", GINT_TO_POINTER(RANGE_STRADDLE_END),
                       test_write_out_of_range);
  g_test_add_data_func("/conformance/neg/rdma-write/before-start", GINT_TO_POINTER(RANGE_BEFORE_START),
                       test_write_out_of_range);
  g_test_add_data_func("/conformance/neg/rdma-write/wrap", GINT_TO_POINTER(RANGE_WRAP), test_write_out_of_range);
  g_test_add_func("/conformance/neg/rdma-write/no-remote-write-priv", test_write_no_priv);
  g_test_add_func("/conformance/neg/rdma-write/write-disabled", test_write_disabled);
  g_test_add_func("/conformance/neg/rdma-read/no-remote-read-priv", test_read_no_priv);
  g_test_add_func("/conformance/neg/rmr-context/flipped", test_rmr_context_flipped);
  g_test_add_func("/conformance/neg/rmr-context/freed", test_rmr_context_freed);
  g_test_add_func("/conformance/neg/pz/local", test_local_other_pz);
  g_test_add_func("/conformance/neg/pz/remote", test_remote_other_pz);
  g_test_add_data_func("/conformance/neg/local-segment/beyond-end", GINT_TO_POINTER(FALSE), test_local_outside);
  g_test_add_data_func("/conformance/neg/local-segment/straddle-end", GINT_TO_POINTER(TRUE), test_local_outside);
  g_test_add_func("/conformance/neg/recv-too-small", test_recv_too_small);
  g_test_add_func("/conformance/neg/sync-errors", test_sync_errors);
  g_test_add_data_func("/conformance/neg/queued/remote-failure-completes-once", GINT_TO_POINTER(FALSE),
                       test_queued_failure);
  g_test_add_data_func("/conformance/neg/queued/local-failure-completes-once", GINT_TO_POINTER(TRUE),
                       test_queued_failure);
  return g_test_run();
}
