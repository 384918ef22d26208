/*
 * Conformance: shared receive queues (IT-API 2.7).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "conf.h"

static gboolean
have_srq(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  gboolean ok = info->srq_support;
  it_ia_info_free(info);
  return conf_require(ok, "srq_support");
}

/* A passive side whose EP takes its receives from @srq. */
static void
open_srq_ep(conf_side_t *s, it_srq_handle_t srq, it_ep_handle_t *ep)
{
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.srv.rc.srq = srq;
  conf_ok(it_ep_rc_create(s->pz, s->dto, s->dto, s->cm, IT_EP_SRQ, &a, ep));
}

/* Connect @active's EP to a listener of @passive, accepted on @pep. */
static void
connect_to(conf_side_t *active, conf_side_t *passive, it_listen_handle_t lh, it_conn_qual_t *q,
           it_ep_handle_t pep)
{
  (void) lh;
  conf_ok(conf_connect(active, active->ep, q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  it_event_t ev = conf_wait(passive->req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(pep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(active->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_wait(passive->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
}

static void
test_shared(void)
{
  g_test_summary("SRQ: two endpoints take their receives from one SRQ; each message lands in the "
                 "SRQ's next receive, in order, and completes on the receiving endpoint's EVD with "
                 "that endpoint's handle");
  conf_side_t p, a1, a2;
  conf_side_open(&p, NULL);
  if (!have_srq(&p)) {
    conf_side_close(&p);
    return;
  }
  conf_side_open(&a1, NULL);
  conf_side_open(&a2, NULL);
  it_srq_handle_t srq;
  conf_ok(it_srq_create(p.pz, 2, 8, &srq));
  it_ep_handle_t e1, e2;
  open_srq_ep(&p, srq, &e1);
  open_srq_ep(&p, srq, &e2);
  conf_buf_t rb, s1, s2;
  conf_buf_new(&p, &rb, 4 * 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&a1, &s1, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&a2, &s2, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (int i = 0; i < 4; i++) {
    it_lmr_triplet_t t = conf_seg(&rb, (size_t) i * 256, 256);
    conf_ok(it_post_recv(srq, &t, 1, 100 + i, IT_COMPLETION_FLAG));
  }
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  it_listen_handle_t lh;
  conf_ok(it_listen_create(p.ia, 0, p.req, IT_LISTEN_NO_FLAG, &q, &lh));
  connect_to(&a1, &p, lh, &q, e1);
  connect_to(&a2, &p, lh, &q, e2);

  conf_buf_fill(&s1, 1);
  conf_buf_fill(&s2, 2);
  it_lmr_triplet_t t1 = conf_seg(&s1, 0, 200), t2 = conf_seg(&s2, 0, 150);
  conf_ok(it_post_send(a1.ep, &t1, 1, 1, IT_COMPLETION_FLAG));
  it_dto_cmpl_event_t r = conf_dto(p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 100);
  g_assert_true(r.ep == e1);
  g_assert_cmpuint(r.transferred_length, ==, 200);
  conf_ok(it_post_send(a2.ep, &t2, 1, 2, IT_COMPLETION_FLAG));
  r = conf_dto(p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 101);
  g_assert_true(r.ep == e2);
  g_assert_cmpuint(r.transferred_length, ==, 150);
  conf_ok(it_post_send(a1.ep, &t1, 1, 3, IT_COMPLETION_FLAG));
  r = conf_dto(p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 102);
  g_assert_true(r.ep == e1);
  g_assert_cmpmem(rb.data, 200, s1.data, 200);
  g_assert_cmpmem(rb.data + 256, 150, s2.data, 150);
  g_assert_cmpmem(rb.data + 512, 200, s1.data, 200);
  conf_dto(a1.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_dto(a2.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_dto(a1.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 3);

  /* Breaking one endpoint leaves the SRQ's last receive to the other. */
  conf_ok(it_ep_free(a1.ep));
  a1.ep = IT_NULL_HANDLE;
  conf_wait(p.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  conf_assert_empty(p.dto);
  conf_ok(it_post_send(a2.ep, &t2, 1, 4, IT_COMPLETION_FLAG));
  r = conf_dto(p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 103);
  g_assert_true(r.ep == e2);
  conf_buf_check_guards(&rb);
  conf_assert_status(it_srq_free(srq), IT_ERR_SRQ_BUSY);
  conf_ok(it_ep_free(e1));
  conf_ok(it_ep_free(e2));
  conf_ok(it_srq_free(srq));
  conf_ok(it_listen_free(lh));
  conf_buf_free(&s1);
  conf_buf_free(&s2);
  conf_buf_free(&rb);
  conf_side_close(&a1);
  conf_side_close(&a2);
  conf_side_close(&p);
}

static void
test_low_watermark(void)
{
  g_test_summary("SRQ: an armed low watermark posts IT_ASYNC_AFF_SRQ_LOW_WATERMARK (cause.srq) once "
                 "when the queue falls below it, then reads back as 0 until armed again");
  conf_side_t p, a;
  conf_side_open(&p, NULL);
  if (!have_srq(&p)) {
    conf_side_close(&p);
    return;
  }
  conf_side_open(&a, NULL);
  it_srq_handle_t srq;
  conf_ok(it_srq_create(p.pz, 1, 8, &srq));
  it_ep_handle_t e;
  open_srq_ep(&p, srq, &e);
  conf_buf_t rb, sb;
  conf_buf_new(&p, &rb, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&a, &sb, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rt = conf_seg(&rb, 0, 64), st = conf_seg(&sb, 0, 8);
  for (int i = 0; i < 4; i++)
    conf_ok(it_post_recv(srq, &rt, 1, 10 + i, IT_COMPLETION_FLAG));
  it_srq_param_t prm;
  memset(&prm, 0, sizeof(prm));
  prm.low_watermark = 3;
  conf_ok(it_srq_modify(srq, IT_SRQ_PARAM_LOW_WATERMARK, &prm));
  conf_ok(it_srq_query(srq, IT_SRQ_PARAM_ALL, &prm));
  g_assert_cmpuint(prm.low_watermark, ==, 3);
  g_assert_cmpuint(prm.max_recv_dtos, ==, 8);
  g_assert_cmpuint(prm.max_recv_segs, ==, 1);
  g_assert_true(prm.pz == p.pz);
  g_assert_true(prm.ia == p.ia);

  it_conn_qual_t q = { .type = IT_IANA_PORT };
  it_listen_handle_t lh;
  conf_ok(it_listen_create(p.ia, 0, p.req, IT_LISTEN_NO_FLAG, &q, &lh));
  connect_to(&a, &p, lh, &q, e);
  conf_ok(it_post_send(a.ep, &st, 1, 1, IT_COMPLETION_FLAG));
  conf_dto(p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 10);
  conf_assert_empty(p.aff); /* 3 left: not below 3 */
  conf_ok(it_post_send(a.ep, &st, 1, 2, IT_COMPLETION_FLAG));
  conf_dto(p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 11);
  it_event_t ev = conf_wait(p.aff, IT_ASYNC_AFF_SRQ_LOW_WATERMARK);
  g_assert_true(ev.aff_async.cause.srq == srq);
  conf_ok(it_post_send(a.ep, &st, 1, 3, IT_COMPLETION_FLAG));
  conf_dto(p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 12);
  conf_assert_empty(p.aff); /* once */
  conf_ok(it_srq_query(srq, IT_SRQ_PARAM_LOW_WATERMARK, &prm));
  g_assert_cmpuint(prm.low_watermark, ==, 0);
  conf_ok(it_listen_free(lh));
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  conf_side_close(&a);
  conf_side_close(&p); /* frees the EP, then the SRQ, with the IA */
}

static void
test_errors(void)
{
  g_test_summary("SRQ: the error paths: bad sizes, a stale or foreign SRQ for IT_EP_SRQ, receives "
                 "posted to an SRQ endpoint, a full SRQ, masks, and freeing it while in use");
  conf_side_t s;
  conf_side_open(&s, NULL);
  if (!have_srq(&s)) {
    conf_side_close(&s);
    return;
  }
  it_srq_handle_t srq, other;
  conf_assert_status(it_srq_create(s.pz, 1, 0, &srq), IT_ERR_INVALID_SRQ_SIZE);
  conf_assert_status(it_srq_create(s.pz, 0, 4, &srq), IT_ERR_RESOURCE_RSEG);
  conf_assert_status(it_srq_create(s.pz, 100000, 4, &srq), IT_ERR_RESOURCE_RSEG);
  conf_assert_status(it_srq_create((it_pz_handle_t) s.ia, 1, 4, &srq), IT_ERR_INVALID_PZ);
  conf_ok(it_srq_create(s.pz, 1, 2, &srq));
  it_pz_handle_t pz2;
  conf_ok(it_pz_create(s.ia, &pz2));
  conf_ok(it_srq_create(pz2, 1, 2, &other));

  it_ep_attributes_t a;
  conf_default_attr(&a);
  it_ep_handle_t ep;
  a.srv.rc.srq = other; /* another PZ's */
  conf_assert_status(it_ep_rc_create(s.pz, s.dto, s.dto, s.cm, IT_EP_SRQ, &a, &ep), IT_ERR_INVALID_SRQ);
  a.srv.rc.srq = (it_srq_handle_t) s.pz; /* not an SRQ */
  conf_assert_status(it_ep_rc_create(s.pz, s.dto, s.dto, s.cm, IT_EP_SRQ, &a, &ep), IT_ERR_INVALID_SRQ);
  a.srv.rc.srq = srq;
  conf_ok(it_ep_rc_create(s.pz, s.dto, s.dto, s.cm, IT_EP_SRQ, &a, &ep));
  it_ep_param_t ep_p;
  conf_ok(it_ep_query(ep, IT_EP_PARAM_SRQ, &ep_p));
  g_assert_true(ep_p.attr.srv.rc.srq == srq);

  conf_buf_t b;
  conf_buf_new(&s, &b, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t t = conf_seg(&b, 0, 64);
  it_lmr_triplet_t two[2] = { conf_seg(&b, 0, 32), conf_seg(&b, 32, 32) };
  conf_assert_status(it_post_recv(ep, &t, 1, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_RECV_DTO);
  conf_assert_status(it_post_recv(srq, two, 2, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_NUM_SEGMENTS);
  conf_ok(it_post_recv(srq, &t, 1, 1, IT_COMPLETION_FLAG));
  conf_ok(it_post_recv(srq, &t, 1, 2, IT_COMPLETION_FLAG));
  conf_assert_status(it_post_recv(srq, &t, 1, 3, IT_COMPLETION_FLAG), IT_ERR_TOO_MANY_POSTS);

  it_srq_param_t prm;
  memset(&prm, 0, sizeof(prm));
  conf_assert_status(it_srq_modify(srq, IT_SRQ_PARAM_PZ, &prm), IT_ERR_INVALID_MASK);
  prm.max_recv_dtos = 1; /* below the 2 it holds */
  conf_assert_status(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO, &prm), IT_ERR_INVALID_SRQ_SIZE);
  prm.max_recv_dtos = 4;
  prm.low_watermark = 5;
  conf_assert_status(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO | IT_SRQ_PARAM_LOW_WATERMARK, &prm),
                     IT_ERR_INVALID_WATERMARK);
  conf_ok(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO, &prm));
  conf_ok(it_post_recv(srq, &t, 1, 3, IT_COMPLETION_FLAG));
  conf_assert_status(it_srq_free(srq), IT_ERR_SRQ_BUSY);
  conf_assert_status(it_pz_free(pz2), IT_ERR_PZ_BUSY);
  conf_ok(it_ep_free(ep));
  conf_ok(it_srq_free(srq));
  conf_assert_status(it_srq_free(srq), IT_ERR_INVALID_SRQ);
  conf_assert_status(it_post_recv(srq, &t, 1, 4, IT_COMPLETION_FLAG), IT_ERR_INVALID_HANDLE);
  conf_ok(it_srq_free(other));
  conf_ok(it_pz_free(pz2));
  conf_buf_free(&b);
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/srq/shared", test_shared);
  g_test_add_func("/conformance/srq/low-watermark", test_low_watermark);
  g_test_add_func("/conformance/srq/errors", test_errors);
  return g_test_run();
}
