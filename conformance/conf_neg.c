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
    it_status_t st = conf_evd_wait(evd, CONF_TIMEOUT_US, &ev, &more);
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

/* ---- every part of a key, protection zones on every path, IRD/ORD ---- */

typedef enum { KF_WRITE, KF_READ, KF_ATOMIC } kf_op_t;

static const char *const kf_what[] = { "RDMA Write", "RDMA Read", "atomic fetch-and-add" };
static const it_event_type_t kf_event[] = { IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_RDMA_READ_CMPL_EVENT,
                                            IT_DTO_FETCH_ADD_CMPL_EVENT };

#define KF_LEN 64
#define KF_TGT 256
#define KF_GOOD 0x600d
#define KF_BAD 0xbad

/* A connected pair for one remote access: the requester's buffer (a
 * source, a Read sink or an atomic's result) and the responder's target
 * with every remote right (and the atomic one where atomics are used). */
typedef struct kf {
  conf_pair_t p;
  conf_buf_t loc;
  conf_buf_t tgt;
  it_mem_priv_t tgt_privs;
} kf_t;

/* Whether @op can run here; @attr gets the EP attributes it needs. */
static gboolean
kf_offered(kf_op_t op, it_ep_attributes_t *attr)
{
  gboolean at = conf_probe_atomics(attr, NULL);
  return op != KF_ATOMIC || conf_require(at, "atomics");
}

static void
kf_open(kf_t *k, const it_ep_attributes_t *attr)
{
  conf_pair_open2(&k->p, attr, attr);
  conf_pair_connect(&k->p, NULL, 0, NULL, 0);
  k->tgt_privs = PRIV_TARGET | (attr->srv.rc.atomics_enable ? IT_PRIV_ATOMIC : 0);
  conf_buf_new(&k->p.a, &k->loc, KF_LEN, conf_sink_privs(&k->p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&k->p.p, &k->tgt, KF_TGT, k->tgt_privs, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&k->loc, 1);
  conf_buf_fill(&k->tgt, 2);
}

static void
kf_close(kf_t *k)
{
  conf_buf_free(&k->loc);
  conf_buf_free(&k->tgt);
  conf_pair_close(&k->p);
}

/* Post @op of the requester against offset 8 of @tgt through @ctx. */
static void
kf_post(kf_t *k, kf_op_t op, const conf_buf_t *tgt, it_rmr_context_t ctx, it_dto_cookie_t cookie)
{
  it_rdma_addr_t ra = it_make_rdma_addr_absolute(tgt->data + 8);
  it_lmr_triplet_t l = conf_seg(&k->loc, 0, op == KF_ATOMIC ? 8 : KF_LEN);
  if (op == KF_WRITE)
    conf_ok(it_post_rdma_write(k->p.a.ep, &l, 1, cookie, IT_COMPLETION_FLAG, ra, ctx));
  else if (op == KF_READ)
    conf_ok(it_post_rdma_read(k->p.a.ep, &l, 1, cookie, IT_COMPLETION_FLAG, ra, ctx));
  else
    conf_ok(it_post_atomic(k->p.a.ep, IT_FETCH_AND_ADD, 1, 0, &l, cookie, IT_COMPLETION_FLAG, ra, ctx));
}

/* @op through @ctx succeeds and moves its bytes. */
static void
kf_good(kf_t *k, kf_op_t op, conf_buf_t *tgt, it_rmr_context_t ctx)
{
  uint64_t before, old, now;
  memcpy(&before, tgt->data + 8, 8);
  kf_post(k, op, tgt, ctx, KF_GOOD);
  conf_dto(k->p.a.dto, kf_event[op], IT_DTO_SUCCESS, KF_GOOD);
  if (op == KF_WRITE) {
    conf_placed(&k->p.a, it_make_rdma_addr_absolute(tgt->data + 8), ctx);
    g_assert_cmpmem(tgt->data + 8, KF_LEN, k->loc.data, KF_LEN);
  } else if (op == KF_READ) {
    g_assert_cmpmem(k->loc.data, KF_LEN, tgt->data + 8, KF_LEN);
  } else {
    memcpy(&old, k->loc.data, 8);
    memcpy(&now, tgt->data + 8, 8);
    g_assert_cmpuint(old, ==, before);
    g_assert_cmpuint(now, ==, before + 1);
  }
}

/* @op through @ctx is refused: IT_DTO_ERR_REMOTE_ACCESS (conf_dto_refused),
 * both sides CONN_BROKEN, the responder's affiliated event (for an atomic,
 * any) and the requester's IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION, @tgt and the
 * local buffer as they were.  @full: and nothing else on either side. */
static void
kf_bad(kf_t *k, kf_op_t op, conf_buf_t *tgt, it_rmr_context_t ctx, gboolean full)
{
  if (op == KF_WRITE)
    conf_buf_fill(&k->loc, 3);
  else
    memset(k->loc.data, 0xee, k->loc.len);
  g_autofree unsigned char *tgt_was = g_memdup2(tgt->data, tgt->len);
  g_autofree unsigned char *loc_was = g_memdup2(k->loc.data, k->loc.len);
  kf_post(k, op, tgt, ctx, KF_BAD);
  conf_dto_refused(&k->p.a, kf_event[op], IT_DTO_ERR_REMOTE_ACCESS, KF_BAD);
  wait_broken(&k->p);
  if (op == KF_ATOMIC) {
    it_event_t ev;
    size_t more;
    conf_ok(conf_evd_wait(k->p.p.aff, CONF_TIMEOUT_US, &ev, &more));
    g_test_message("responder's affiliated event: %s", itx_event_name(ev.event_number));
    assert_handle_eq(ev.aff_async.cause.ep, k->p.p.ep);
  } else {
    it_event_t ev = conf_wait(k->p.p.aff, op == KF_WRITE ? IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION
                                                         : IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION);
    assert_handle_eq(ev.aff_async.cause.ep, k->p.p.ep);
  }
  it_event_t ev = conf_wait(k->p.a.aff, IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION);
  assert_handle_eq(ev.aff_async.cause.ep, k->p.a.ep);
  g_assert_cmpmem(tgt->data, tgt->len, tgt_was, tgt->len);
  g_assert_cmpmem(k->loc.data, k->loc.len, loc_was, k->loc.len);
  conf_buf_check_guards(tgt);
  conf_buf_check_guards(&k->loc);
  if (full) {
    conf_assert_empty(k->p.a.dto);
    conf_assert_empty(k->p.p.dto);
    conf_assert_empty(k->p.a.aff);
    conf_assert_empty(k->p.p.aff);
    conf_assert_empty(k->p.a.cm);
    conf_assert_empty(k->p.p.cm);
  }
}

typedef struct {
  kf_op_t op;
  gboolean key_byte;
} kf_case_t;

static const kf_case_t kf_cases[] = {
  { KF_WRITE, TRUE }, { KF_READ, TRUE }, { KF_ATOMIC, TRUE },
  { KF_WRITE, FALSE }, { KF_READ, FALSE }, { KF_ATOMIC, FALSE },
};

static void
test_key_field(gconstpointer data)
{
  const kf_case_t *c = data;
  g_test_summary("IT-API DTO protection: an rmr_context that differs from a live LMR's only in its "
                 "key byte (the low 8 bits; several values), or only in one other bit (each alone), "
                 "is refused: after the same RDMA Write, Read or atomic with the right context "
                 "succeeded on the connection, it completes IT_DTO_ERR_REMOTE_ACCESS, both sides "
                 "break, and neither the target nor the local buffer changes");
  it_ep_attributes_t attr;
  if (!kf_offered(c->op, &attr))
    return;
  conf_key_change_t ch[64];
  int n = 0;
  for (int i = 0; n == 0 || i < n; i++) {
    kf_t k;
    kf_open(&k, &attr);
    if (n == 0)
      n = conf_key_changes(k.tgt.ctx, c->key_byte, ch);
    it_rmr_context_t bad = k.tgt.ctx ^ ch[i].mask;
    g_test_message("%s: context 0x%" G_GINT64_MODIFIER "x, %s: 0x%" G_GINT64_MODIFIER "x",
                   kf_what[c->op], (guint64) k.tgt.ctx, ch[i].what, (guint64) bad);
    kf_good(&k, c->op, &k.tgt, k.tgt.ctx);
    kf_bad(&k, c->op, &k.tgt, bad, i == n - 1);
    kf_close(&k);
  }
}

static void
test_remote_other_pz_op(gconstpointer data)
{
  kf_op_t op = (kf_op_t) GPOINTER_TO_INT(data);
  g_test_summary("IT-API DTO protection: an in-bounds RDMA Read or atomic with the live context "
                 "of an LMR in another PZ of the responder's IA than its EP's is refused "
                 "(IT_DTO_ERR_REMOTE_ACCESS, both sides broken) and moves no byte, after the same "
                 "request to an LMR of the EP's PZ succeeded");
  it_ep_attributes_t attr;
  if (!kf_offered(op, &attr))
    return;
  kf_t k;
  kf_open(&k, &attr);
  it_pz_handle_t pz2;
  conf_ok(it_pz_create(k.p.p.ia, &pz2));
  conf_side_t other = k.p.p;
  other.pz = pz2;
  conf_buf_t foreign;
  conf_buf_new(&other, &foreign, KF_TGT, k.tgt_privs, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&foreign, 4);
  kf_good(&k, op, &k.tgt, k.tgt.ctx);
  kf_bad(&k, op, &foreign, foreign.ctx, TRUE);
  conf_buf_free(&foreign);
  kf_close(&k);
}

typedef enum { LPZ_SEND, LPZ_READ_SINK, LPZ_ATOMIC_RESULT } lpz_case_t;

static void
test_local_other_pz_op(gconstpointer data)
{
  lpz_case_t c = (lpz_case_t) GPOINTER_TO_INT(data);
  g_test_summary("IT-API DTO protection: a Send's segment, an RDMA Read's sink or an atomic's "
                 "result in an LMR of another PZ of the same IA than the EP's completes "
                 "IT_DTO_ERR_LOCAL_PROTECTION; the LMR, the peer's memory and its receive stay "
                 "untouched");
  it_ep_attributes_t attr;
  gboolean at = conf_probe_atomics(&attr, NULL);
  if (c == LPZ_ATOMIC_RESULT && !conf_require(at, "atomics"))
    return;
  fixture_t f;
  if (c == LPZ_ATOMIC_RESULT)
    conf_pair_open2(&f.p, &attr, &attr);
  else
    conf_pair_open(&f.p);
  conf_pair_connect(&f.p, NULL, 0, NULL, 0);
  conf_buf_new(&f.p.a, &f.src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&f.p.a, &f.rq, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&f.p.p, &f.dst, 4096, PRIV_TARGET | (at ? IT_PRIV_ATOMIC : 0), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&f.src, 1);
  conf_buf_fill(&f.dst, 2);
  it_lmr_triplet_t r1 = conf_seg(&f.rq, 0, 128), r2 = conf_seg(&f.rq, 128, 128);
  conf_ok(it_post_recv(f.p.a.ep, &r1, 1, FLUSH_COOKIE_1, IT_COMPLETION_FLAG));
  conf_ok(it_post_recv(f.p.a.ep, &r2, 1, FLUSH_COOKIE_2, IT_COMPLETION_FLAG));
  conf_buf_t rb;
  conf_buf_new(&f.p.p, &rb, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rs = conf_seg(&rb, 0, 256);
  conf_ok(it_post_recv(f.p.p.ep, &rs, 1, 0xb1, IT_COMPLETION_FLAG));
  it_pz_handle_t pz2;
  conf_ok(it_pz_create(f.p.a.ia, &pz2));
  conf_side_t other = f.p.a;
  other.pz = pz2;
  conf_buf_t foreign;
  conf_buf_new(&other, &foreign, 256, conf_sink_privs(&f.p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&foreign, 5);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute(f.dst.data + 8);
  it_event_type_t type;
  if (c == LPZ_SEND) {
    it_lmr_triplet_t s = conf_seg(&foreign, 0, 256);
    conf_ok(it_post_send(f.p.a.ep, &s, 1, 0x7f, IT_COMPLETION_FLAG));
    type = IT_DTO_SEND_CMPL_EVENT;
  } else if (c == LPZ_READ_SINK) {
    it_lmr_triplet_t s = conf_seg(&foreign, 0, 256);
    conf_ok(it_post_rdma_read(f.p.a.ep, &s, 1, 0x7f, IT_COMPLETION_FLAG, ra, f.dst.ctx));
    type = IT_DTO_RDMA_READ_CMPL_EVENT;
  } else {
    it_lmr_triplet_t s = conf_seg(&foreign, 0, 8);
    conf_ok(it_post_atomic(f.p.a.ep, IT_FETCH_AND_ADD, 1, 0, &s, 0x7f, IT_COMPLETION_FLAG, ra, f.dst.ctx));
    type = IT_DTO_FETCH_ADD_CMPL_EVENT;
  }
  /* The responder's receive takes nothing: flushed when the connection breaks. */
  it_dto_cmpl_event_t d = conf_dto(f.p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 0xb1);
  g_assert_cmpuint(d.transferred_length, ==, 0);
  expect_failure(&f, type, IT_DTO_ERR_LOCAL_PROTECTION, 0x7f, IT_ASYNC_AFF_EP_L_ACCESS_VIOLATION, 0);
  expect_dst_untouched(&f);
  conf_buf_check(&foreign, 0, foreign.len, 5);
  conf_buf_check_guards(&foreign);
  for (size_t i = 0; i < rb.len; i++)
    g_assert_cmpuint(rb.data[i], ==, 0);
  conf_buf_free(&foreign);
  conf_buf_free(&rb);
  fixture_teardown(&f);
}

/* Bytes per Read: large enough that the responder is still answering one
 * when the next arrives, where a requester sends more than the IRD. */
#define RO_LEN (256 * 1024)

static void
test_local_other_pz_recv(void)
{
  g_test_summary("IT-API DTO protection: a receive whose segment lies in an LMR of another PZ than "
                 "the EP's: the Send that lands in it completes the receive "
                 "IT_DTO_ERR_LOCAL_PROTECTION and leaves the LMR unchanged; the receiver gets "
                 "IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION, the sender's Send fails (where "
                 "completions mean transmission it may have completed) and it gets "
                 "IT_ASYNC_AFF_EP_R_RECV_ACCESS_VIOLATION; both sides break");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  it_pz_handle_t pz2;
  conf_ok(it_pz_create(p.p.ia, &pz2));
  conf_side_t other = p.p;
  other.pz = pz2;
  conf_buf_t src, foreign;
  conf_buf_new(&p.a, &src, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&other, &foreign, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 3);
  conf_buf_fill(&foreign, 4);
  it_lmr_triplet_t r = conf_seg(&foreign, 0, 256), s = conf_seg(&src, 0, 256);
  conf_ok(it_post_recv(p.p.ep, &r, 1, 0xb2, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(p.a.ep, &s, 1, 0xa2, IT_COMPLETION_FLAG));
  it_dto_cmpl_event_t d = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_LOCAL_PROTECTION, 0xb2);
  assert_handle_eq(d.ep, p.p.ep);
  it_event_t ev = conf_wait(p.a.dto, IT_DTO_SEND_CMPL_EVENT);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 0xa2);
  g_test_message("sender's completion: %s", itx_dto_status_name(ev.dto_cmpl.dto_status));
  if (itx_ia_completion(p.a.ia) != ITX_COMPLETION_SENT)
    g_assert_cmpint(ev.dto_cmpl.dto_status, !=, IT_DTO_SUCCESS);
  wait_broken(&p);
  ev = conf_wait(p.p.aff, IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION);
  assert_handle_eq(ev.aff_async.cause.ep, p.p.ep);
  ev = conf_wait(p.a.aff, IT_ASYNC_AFF_EP_R_RECV_ACCESS_VIOLATION);
  assert_handle_eq(ev.aff_async.cause.ep, p.a.ep);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_check(&foreign, 0, foreign.len, 4);
  conf_buf_check_guards(&foreign);
  conf_buf_free(&src);
  conf_buf_free(&foreign);
  conf_pair_close(&p);
}

typedef enum { RO_READS, RO_ATOMICS, RO_MIXED } ro_kind_t;

typedef struct {
  ro_kind_t kind;
  uint32_t depth; /* IRD = ORD asked on both EPs */
  int n;          /* requests posted back to back */
} ro_case_t;

static const ro_case_t ro_cases[] = {
  { RO_READS, 1, 8 }, { RO_ATOMICS, 1, 8 }, { RO_MIXED, 1, 8 }, { RO_READS, 4, 16 }, { RO_MIXED, 4, 16 },
};

static void
test_ird_ord(gconstpointer data)
{
  const ro_case_t *c = data;
  g_test_summary("IT-API DTO: with rdma_read_ird = rdma_read_ord = N (1, or 4) on both EPs, 8 or 16 "
                 "RDMA Reads, atomics, or both mixed, posted back to back, all complete "
                 "IT_DTO_SUCCESS in posting order with the right bytes (the requester holds back "
                 "what the peer's IRD cannot take); the connection stays up and a Send after them "
                 "arrives");
  it_ep_attributes_t attr;
  gboolean at = conf_probe_atomics(&attr, NULL);
  if (c->kind != RO_READS && !conf_require(at, "atomics"))
    return;
  attr.srv.rc.rdma_read_ird = c->depth;
  attr.srv.rc.rdma_read_ord = c->depth;
  conf_pair_t p;
  conf_pair_open2(&p, &attr, &attr);
  conf_ok(conf_connect(&p.a, p.a.ep, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(p.p.ep, ev.conn_req.cn_est_id, NULL, 0));
  it_event_t ea = conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  it_event_t ep = conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  it_ia_info_t *info = conf_info(&p.a);
  gboolean told = info->ird_ord_ia_support;
  it_ia_info_free(info);
  g_test_message("asked IRD = ORD = %u; ESTABLISHED: active IRD %u ORD %u, passive IRD %u ORD %u%s",
                 c->depth, ea.conn.rdma_read_ird, ea.conn.rdma_read_ord, ep.conn.rdma_read_ird,
                 ep.conn.rdma_read_ord, told ? "" : " (not valid: no ird_ord_ia_support)");
  if (told) {
    g_assert_cmpuint(ea.conn.rdma_read_ord, ==, c->depth);
    g_assert_cmpuint(ep.conn.rdma_read_ird, ==, c->depth);
  }
  int n = c->n;
  size_t woff = (size_t) n * RO_LEN;
  conf_buf_t src, sink, res, rb;
  conf_buf_new(&p.p, &src, woff + 64, PRIV_TARGET | (at ? IT_PRIV_ATOMIC : 0), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &sink, woff, conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &res, (size_t) n * 8, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rb, KF_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 7);
  uint64_t word = 1000, expect = 1000;
  memcpy(src.data + woff, &word, 8);
  g_autofree unsigned char *src_was = g_memdup2(src.data, woff);
  memset(res.data, 0xee, res.len);
  gboolean atomic[16];
  for (int i = 0; i < n; i++) {
    atomic[i] = c->kind == RO_ATOMICS || (c->kind == RO_MIXED && i % 2 == 1);
    if (atomic[i]) {
      it_lmr_triplet_t r = conf_seg(&res, (size_t) i * 8, 8);
      conf_ok(it_post_atomic(p.a.ep, IT_FETCH_AND_ADD, (uint64_t) i + 1, 0, &r, 0x500 + i,
                             IT_COMPLETION_FLAG, it_make_rdma_addr_absolute(src.data + woff), src.ctx));
    } else {
      it_lmr_triplet_t r = conf_seg(&sink, (size_t) i * RO_LEN, RO_LEN);
      conf_ok(it_post_rdma_read(p.a.ep, &r, 1, 0x500 + i, IT_COMPLETION_FLAG,
                                it_make_rdma_addr_absolute(src.data + (size_t) (n - 1 - i) * RO_LEN),
                                src.ctx));
    }
  }
  for (int i = 0; i < n; i++) {
    it_dto_cmpl_event_t d = conf_dto(p.a.dto, atomic[i] ? IT_DTO_FETCH_ADD_CMPL_EVENT : IT_DTO_RDMA_READ_CMPL_EVENT,
                                     IT_DTO_SUCCESS, 0x500 + i);
    assert_handle_eq(d.ep, p.a.ep);
    if (atomic[i]) {
      uint64_t old;
      memcpy(&old, res.data + (size_t) i * 8, 8);
      g_assert_cmpuint(old, ==, expect);
      expect += (uint64_t) i + 1;
    } else {
      g_assert_cmpmem(sink.data + (size_t) i * RO_LEN, RO_LEN, src.data + (size_t) (n - 1 - i) * RO_LEN, RO_LEN);
    }
  }
  memcpy(&word, src.data + woff, 8);
  g_assert_cmpuint(word, ==, expect);
  g_assert_cmpmem(src.data, woff, src_was, woff);
  conf_buf_check_guards(&sink);
  conf_buf_check_guards(&src);
  /* Still connected: a Send behind them arrives. */
  it_lmr_triplet_t r = conf_seg(&rb, 0, KF_LEN), s = conf_seg(&sink, 0, KF_LEN);
  conf_ok(it_post_recv(p.p.ep, &r, 1, 0x5e0, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(p.a.ep, &s, 1, 0x5e1, IT_COMPLETION_FLAG));
  it_dto_cmpl_event_t d = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 0x5e0);
  g_assert_cmpuint(d.transferred_length, ==, KF_LEN);
  g_assert_cmpmem(rb.data, KF_LEN, sink.data, KF_LEN);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 0x5e1);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_CONNECTED);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_assert_empty(p.a.aff);
  conf_assert_empty(p.p.aff);
  conf_assert_empty(p.a.cm);
  conf_assert_empty(p.p.cm);
  conf_buf_free(&src);
  conf_buf_free(&sink);
  conf_buf_free(&res);
  conf_buf_free(&rb);
  conf_pair_close(&p);
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
  static const char *const op_id[] = { "write", "read", "atomic" };
  for (size_t i = 0; i < G_N_ELEMENTS(kf_cases); i++) {
    g_autofree char *path = g_strdup_printf("/conformance/neg/key-field/%s/%s", op_id[kf_cases[i].op],
                                            kf_cases[i].key_byte ? "key-byte" : "bits");
    g_test_add_data_func(path, &kf_cases[i], test_key_field);
  }
  g_test_add_data_func("/conformance/neg/pz/remote-read", GINT_TO_POINTER(KF_READ), test_remote_other_pz_op);
  g_test_add_data_func("/conformance/neg/pz/remote-atomic", GINT_TO_POINTER(KF_ATOMIC), test_remote_other_pz_op);
  g_test_add_data_func("/conformance/neg/pz/local-send", GINT_TO_POINTER(LPZ_SEND), test_local_other_pz_op);
  g_test_add_data_func("/conformance/neg/pz/local-read-sink", GINT_TO_POINTER(LPZ_READ_SINK),
                       test_local_other_pz_op);
  g_test_add_data_func("/conformance/neg/pz/local-atomic-result", GINT_TO_POINTER(LPZ_ATOMIC_RESULT),
                       test_local_other_pz_op);
  g_test_add_func("/conformance/neg/pz/local-recv", test_local_other_pz_recv);
  static const char *const ro_id[] = { "reads", "atomics", "mixed" };
  for (size_t i = 0; i < G_N_ELEMENTS(ro_cases); i++) {
    g_autofree char *path = g_strdup_printf("/conformance/dto/ird-ord/%u/%s-%d", ro_cases[i].depth,
                                            ro_id[ro_cases[i].kind], ro_cases[i].n);
    g_test_add_data_func(path, &ro_cases[i], test_ird_ord);
  }
  return g_test_run();
}
