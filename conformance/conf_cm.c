/*
 * Conformance: connection management (IT-API 2.1 chapter "Connection
 * Management"): listeners and connection qualifiers, connect / accept /
 * reject / disconnect with private data, the two- and three-way
 * handshakes, connection events and the EP state machine around them.
 *
 * Private-data limits come from it_ia_info_t, never from a provider.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"
#include "rnicpi_util.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */
/* ---------------------------------------------------------------------- */

static void
fill_pdata(unsigned char *buf, size_t len, unsigned seed)
{
  for (size_t i = 0; i < len; i++)
    buf[i] = (unsigned char) (i * 13 + seed * 29 + 3);
}

static uint16_t
pair_port(const conf_pair_t *p)
{
  return ntohs(p->qual.conn_qual.port);
}

/* A connection request's source: the address the active IA connected
 * from, which for a connection to its own address is that address
 * (@want), exactly. */
static void
assert_source(const it_net_addr_t *src, const it_net_addr_t *want)
{
  if (!conf_addr_equal(src, want)) {
    g_autofree char *got_s = conf_addr_str(src), *want_s = conf_addr_str(want);
    g_error("CONN_REQUEST source_addr is %s, expected %s: a connection from IA '%s' to its own "
            "address must come from that address", got_s, want_s, conf_ia_name());
  }
}

/* Start a two-way connect from the active side to @qual. */
static void
start_connect(conf_pair_t *p, const it_conn_qual_t *qual, it_cn_est_flags_t flags,
              const unsigned char *pd, size_t len)
{
  conf_ok(conf_connect(&p->a, p->a.ep, qual, flags, pd, len));
}

/* A private-data length that fits every limit used here (0 if none). */
static size_t
small_len(size_t limit, size_t want)
{
  return MIN(limit, want);
}

/* Post @n one-segment receives with cookies base..base+n-1. */
static void
post_recvs(conf_side_t *s, conf_buf_t *b, unsigned n, it_dto_cookie_t base)
{
  for (unsigned i = 0; i < n; i++) {
    it_lmr_triplet_t seg = conf_seg(b, (size_t) i * 64, 64);
    conf_ok(it_post_recv(s->ep, &seg, 1, base + i, IT_COMPLETION_FLAG));
  }
}

/* Expect exactly @n flushed receive completions with cookies base..base+n-1,
 * each once, then nothing more on the EVD. */
static void
expect_flushed_recvs(conf_side_t *s, unsigned n, it_dto_cookie_t base)
{
  gboolean seen[16] = { FALSE };
  g_assert_cmpuint(n, <=, G_N_ELEMENTS(seen));
  for (unsigned i = 0; i < n; i++) {
    it_event_t ev = conf_wait(s->dto, IT_DTO_RC_RECV_CMPL_EVENT);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_ERR_FLUSHED);
    g_assert_true(ev.dto_cmpl.ep == s->ep);
    g_assert_cmpuint(ev.dto_cmpl.cookie, >=, base);
    g_assert_cmpuint(ev.dto_cmpl.cookie, <, base + n);
    unsigned k = (unsigned) (ev.dto_cmpl.cookie - base);
    g_assert_false(seen[k]);
    seen[k] = TRUE;
  }
  conf_assert_empty(s->dto);
}

/* A port no listener of this host holds right now. */
static uint16_t
free_port(conf_side_t *s)
{
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  it_listen_handle_t lh;
  conf_ok(it_listen_create(s->ia, 0, s->req, IT_LISTEN_NO_FLAG, &q, &lh));
  conf_ok(it_listen_free(lh));
  g_assert_cmpint(q.type, ==, IT_IANA_PORT);
  g_assert_cmpuint(ntohs(q.conn_qual.port), !=, 0);
  return ntohs(q.conn_qual.port);
}

/* ---------------------------------------------------------------------- */
/* Connect and accept                                                      */
/* ---------------------------------------------------------------------- */

static void
test_connect_pdata(void)
{
  g_test_summary("CM: it_ep_connect and it_ep_accept carry private data both ways; the "
                 "CONN_REQUEST and the active ESTABLISHED event deliver the bytes with "
                 "private_data_present set");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.a);
  if (!conf_require(info->private_data_support && info->connect_private_data_len > 0 &&
                    info->accept_private_data_len > 0, "private-data")) {
    it_ia_info_free(info);
    conf_pair_close(&p);
    return;
  }
  size_t clen = small_len(info->connect_private_data_len, 40);
  size_t alen = small_len(info->accept_private_data_len, 72);
  it_ia_info_free(info);
  unsigned char cpd[IT_MAX_PRIV_DATA], apd[IT_MAX_PRIV_DATA];
  fill_pdata(cpd, clen, 1);
  fill_pdata(apd, alen, 2);

  start_connect(&p, &p.qual, IT_CONNECT_FLAG_TWO_WAY, cpd, clen);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  g_assert_cmpint(ev.conn_req.private_data_present, ==, IT_TRUE);
  g_assert_cmpmem(ev.conn_req.private_data, clen, cpd, clen);
  conf_ok(it_ep_accept(p.p.ep, ev.conn_req.cn_est_id, apd, alen));

  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.a.ep);
  g_assert_cmpint(ev.conn.private_data_present, ==, IT_TRUE);
  g_assert_cmpmem(ev.conn.private_data, alen, apd, alen);
  ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_CONNECTED);
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_CONNECTED);
  conf_assert_empty(p.a.cm);
  conf_assert_empty(p.p.req);
  conf_pair_close(&p);
}

static void
test_connect_no_pdata(void)
{
  g_test_summary("CM: a connect and an accept without private data deliver events with "
                 "private_data_present false on both sides");
  conf_pair_t p;
  conf_pair_open(&p);
  start_connect(&p, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  g_assert_cmpint(ev.conn_req.private_data_present, ==, IT_FALSE);
  conf_ok(it_ep_accept(p.p.ep, ev.conn_req.cn_est_id, NULL, 0));
  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.a.ep);
  g_assert_cmpint(ev.conn.private_data_present, ==, IT_FALSE);
  ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  g_assert_cmpint(ev.conn.private_data_present, ==, IT_FALSE);
  conf_pair_close(&p);
}

static void
test_request_fields(void)
{
  g_test_summary("CM: the CONN_REQUEST event names the listener's qualifier, as source the "
                 "address the suite connected to (the IA's own first address), spigot 0 and the "
                 "requester's IRD/ORD; ESTABLISHED names the right EP and EVD and the negotiated "
                 "IRD/ORD, which it_ep_query shows");
  it_ep_attributes_t aattr, pattr;
  conf_default_attr(&aattr);
  conf_default_attr(&pattr);
  aattr.srv.rc.rdma_read_ird = 3;
  aattr.srv.rc.rdma_read_ord = 2;
  pattr.srv.rc.rdma_read_ird = 1;
  pattr.srv.rc.rdma_read_ord = 4;

  conf_pair_t p;
  conf_pair_open2(&p, &aattr, &pattr);
  it_ia_info_t *info = conf_info(&p.a);
  gboolean irdord = info->ird_ord_ia_support;
  it_ia_info_free(info);

  start_connect(&p, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  g_assert_true(ev.conn_req.evd == p.p.req);
  g_assert_cmpint(ev.conn_req.conn_qual.type, ==, IT_IANA_PORT);
  g_assert_cmpuint(ntohs(ev.conn_req.conn_qual.conn_qual.port), ==, pair_port(&p));
  it_net_addr_t self = conf_self_addr(&p.a);
  assert_source(&ev.conn_req.source_addr, &self);
  g_assert_cmpuint(ev.conn_req.spigot_id, ==, 0);
  if (irdord) {
    g_assert_cmpuint(ev.conn_req.rdma_read_ird, ==, 3);
    g_assert_cmpuint(ev.conn_req.rdma_read_ord, ==, 2);
  }
  conf_ok(it_ep_accept(p.p.ep, ev.conn_req.cn_est_id, NULL, 0));

  /* Active ORD = min(its ORD 2, peer IRD 1); active IRD = min(3, peer ORD 4). */
  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.a.ep);
  g_assert_true(ev.conn.evd == p.a.cm);
  if (irdord) {
    g_assert_cmpuint(ev.conn.rdma_read_ord, ==, 1);
    g_assert_cmpuint(ev.conn.rdma_read_ird, ==, 3);
  }
  ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  g_assert_true(ev.conn.evd == p.p.cm);
  if (irdord) {
    g_assert_cmpuint(ev.conn.rdma_read_ord, ==, 3);
    g_assert_cmpuint(ev.conn.rdma_read_ird, ==, 1);
  }

  it_ep_param_t ep;
  conf_ok(it_ep_query(p.a.ep, IT_EP_PARAM_ALL, &ep));
  g_assert_cmpint(ep.ep_state.rc, ==, IT_EP_STATE_CONNECTED);
  if (irdord) {
    g_assert_cmpuint(ep.attr.srv.rc.rdma_read_ord, ==, 1);
    g_assert_cmpuint(ep.attr.srv.rc.rdma_read_ird, ==, 3);
  }
  conf_ok(it_ep_query(p.p.ep, IT_EP_PARAM_ALL, &ep));
  g_assert_cmpint(ep.ep_state.rc, ==, IT_EP_STATE_CONNECTED);
  if (irdord) {
    g_assert_cmpuint(ep.attr.srv.rc.rdma_read_ord, ==, 3);
    g_assert_cmpuint(ep.attr.srv.rc.rdma_read_ird, ==, 1);
  }
  conf_pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* Reject                                                                  */
/* ---------------------------------------------------------------------- */

static void
test_reject_pdata(void)
{
  g_test_summary("CM: it_reject with private data gives the active side PEER_REJECT with the "
                 "bytes; its EP is NONOPERATIONAL, it_ep_reset makes it UNCONNECTED and it "
                 "then connects successfully");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.a);
  size_t rlen = small_len(info->reject_private_data_len, 100);
  it_ia_info_free(info);
  unsigned char rpd[IT_MAX_PRIV_DATA];
  fill_pdata(rpd, rlen, 5);

  start_connect(&p, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_reject(ev.conn_req.cn_est_id, rpd, rlen));
  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_PEER_REJECT_EVENT);
  g_assert_true(ev.conn.ep == p.a.ep);
  if (rlen > 0) {
    g_assert_cmpint(ev.conn.private_data_present, ==, IT_TRUE);
    g_assert_cmpmem(ev.conn.private_data, rlen, rpd, rlen);
  }
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  /* The passive EP took no part. */
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_UNCONNECTED);
  conf_assert_empty(p.p.cm);

  /* A NONOPERATIONAL EP cannot connect until reset. */
  conf_assert_status(conf_connect(&p.a, p.a.ep, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
                     IT_ERR_INVALID_EP_STATE);
  conf_ok(it_ep_reset(p.a.ep));
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_UNCONNECTED);

  unsigned char cpd[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  info = conf_info(&p.a);
  size_t clen = small_len(info->connect_private_data_len, sizeof(cpd));
  it_ia_info_free(info);
  conf_pair_connect(&p, clen > 0 ? cpd : NULL, clen, NULL, 0);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_CONNECTED);
  conf_pair_close(&p);
}

static void
test_nonpeer_reject(void)
{
  g_test_summary("CM: connecting to a qualifier nobody listens on gives "
                 "IT_CM_MSG_CONN_NONPEER_REJECT_EVENT and a NONOPERATIONAL EP");
  conf_side_t a;
  conf_side_open(&a, NULL);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(free_port(&a));
  conf_ok(conf_connect(&a, a.ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  it_event_t ev = conf_wait(a.cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
  g_assert_true(ev.conn.ep == a.ep);
  g_assert_cmpint(conf_ep_state(a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  conf_ok(it_ep_reset(a.ep));
  g_assert_cmpint(conf_ep_state(a.ep), ==, IT_EP_STATE_UNCONNECTED);
  conf_assert_empty(a.cm);
  conf_side_close(&a);
}

/* Connect @p's active EP with a path timeout of @timeout_us. */
static void
start_connect_timeout(conf_pair_t *p, uint64_t timeout_us)
{
  it_path_t path;
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  conf_path(&p->a, &path);
  path.timeout = timeout_us;
  conf_ok(it_ep_connect(p->a.ep, &path, &ca, &p->qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
}

static void
test_timeout_infinite(void)
{
  g_test_summary("CM: a path timeout of IT_TIMEOUT_INFINITE waits for the answer: the passive "
                 "side accepts after 200 ms, both EPs get ESTABLISHED and a Send lands");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_buf_t rb, sb;
  conf_buf_new(&p.p, &rb, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &sb, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rt = conf_seg(&rb, 0, 256), st = conf_seg(&sb, 0, 256);
  conf_ok(it_post_recv(p.p.ep, &rt, 1, 1, IT_COMPLETION_FLAG));
  start_connect_timeout(&p, IT_TIMEOUT_INFINITE);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  g_usleep(200000);
  conf_assert_empty(p.a.cm); /* "infinite" read as a timeout already past */
  conf_ok(it_ep_accept(p.p.ep, ev.conn_req.cn_est_id, NULL, 0));
  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.a.ep);
  ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  conf_buf_fill(&sb, 0x1f);
  conf_ok(it_post_send(p.a.ep, &st, 1, 2, IT_COMPLETION_FLAG));
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  it_dto_cmpl_event_t rc = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  g_assert_cmpuint(rc.transferred_length, ==, 256);
  conf_buf_check(&rb, 0, 256, 0x1f);
  conf_buf_free(&rb);
  conf_buf_free(&sb);
  conf_pair_close(&p);
}

static void
test_timeout_unanswered(void)
{
  g_test_summary("CM: a connect with a path timeout of 0.5 s whose request the listener's "
                 "consumer never answers ends, no sooner than the timeout, in one "
                 "IT_CM_MSG_CONN_NONPEER_REJECT_EVENT with reason IT_CN_REJ_TIMEOUT; the EP is "
                 "NONOPERATIONAL, a receive posted before it flushes, and the passive EP never "
                 "connects to it");
  enum { TIMEOUT_US = 500000 };
  conf_pair_t p;
  conf_pair_open(&p);
  conf_buf_t rb;
  conf_buf_new(&p.a, &rb, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rt = conf_seg(&rb, 0, 256);
  conf_ok(it_post_recv(p.a.ep, &rt, 1, 42, IT_COMPLETION_FLAG));
  gint64 start = g_get_monotonic_time();
  start_connect_timeout(&p, TIMEOUT_US);
  it_event_t req = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  it_event_t ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
  gint64 took_ms = (g_get_monotonic_time() - start) / 1000;
  g_test_message("non-peer reject, reason %d, after %" G_GINT64_FORMAT " ms",
                 (int) ev.conn.reject_reason_code, took_ms);
  g_assert_true(ev.conn.ep == p.a.ep);
  g_assert_cmpint(ev.conn.reject_reason_code, ==, IT_CN_REJ_TIMEOUT);
  g_assert_cmpint(took_ms, >=, TIMEOUT_US / 1000 - 1);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  conf_dto(p.a.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 42);
  conf_assert_empty(p.a.cm);
  conf_assert_empty(p.a.dto);

  /* A late accept: refused, or (a transport that learns it only from the
   * wire) the connection ends at once; never ESTABLISHED. */
  it_status_t st = it_ep_accept(p.p.ep, req.conn_req.cn_est_id, NULL, 0);
  g_test_message("accept after the requester gave up: %s", itx_status_name(st));
  if (st == IT_SUCCESS) {
    it_event_t end;
    size_t more;
    conf_ok(conf_evd_wait(p.p.cm, CONF_TIMEOUT_US, &end, &more));
    g_assert_cmpint(end.event_number, !=, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  } else {
    conf_assert_status(st, IT_ERR_INVALID_CN_EST_ID);
    conf_assert_empty(p.p.cm);
  }
  conf_assert_empty(p.a.cm);
  conf_buf_free(&rb);
  conf_pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* Three-way handshake                                                     */
/* ---------------------------------------------------------------------- */

static gboolean
require_three_way(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  gboolean ok = info->three_way_handshake_support;
  it_ia_info_free(info);
  return conf_require(ok, "three-way-handshake");
}

/* Connect three-way; the passive side accepts with @apd; returns the
 * ACCEPT_ARRIVAL event of the active side. */
static it_event_t
three_way_until_reply(conf_pair_t *p, const unsigned char *apd, size_t alen)
{
  start_connect(p, &p->qual, IT_CONNECT_FLAG_THREE_WAY, NULL, 0);
  it_event_t ev = conf_wait(p->p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(p->p.ep, ev.conn_req.cn_est_id, apd, alen));
  ev = conf_wait(p->a.cm, IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT);
  g_assert_true(ev.conn.ep == p->a.ep);
  if (alen > 0) {
    g_assert_cmpint(ev.conn.private_data_present, ==, IT_TRUE);
    g_assert_cmpmem(ev.conn.private_data, alen, apd, alen);
  }
  g_assert_cmpint(conf_ep_state(p->a.ep), ==, IT_EP_STATE_ACTIVE2_CONNECTION_PENDING);
  g_assert_cmpint(conf_ep_state(p->p.ep), ==, IT_EP_STATE_PASSIVE_CONNECTION_PENDING);
  /* Nothing is established before the active side answers. */
  conf_assert_empty(p->p.cm);
  return ev;
}

static void
test_three_way_accept(void)
{
  g_test_summary("CM: with IT_CONNECT_FLAG_THREE_WAY the active side gets ACCEPT_ARRIVAL "
                 "(passive private data, a cn_est_id, EP in ACTIVE2_CONNECTION_PENDING); its "
                 "it_ep_accept establishes both sides, its private data reaching the passive one");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!require_three_way(&p.a)) {
    conf_pair_close(&p);
    return;
  }
  it_ia_info_t *info = conf_info(&p.a);
  size_t alen = small_len(info->accept_private_data_len, 60);
  it_ia_info_free(info);
  unsigned char apd[IT_MAX_PRIV_DATA], rtu[IT_MAX_PRIV_DATA];
  fill_pdata(apd, alen, 7);
  size_t rlen = MIN(alen, (size_t) 24);
  fill_pdata(rtu, rlen, 8);

  it_event_t ev = three_way_until_reply(&p, apd, alen);
  conf_ok(it_ep_accept(p.a.ep, ev.conn.cn_est_id, rtu, rlen));
  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.a.ep);
  ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  if (rlen > 0) {
    g_assert_cmpint(ev.conn.private_data_present, ==, IT_TRUE);
    g_assert_cmpmem(ev.conn.private_data, rlen, rtu, rlen);
  }
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_CONNECTED);
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_CONNECTED);
  conf_pair_close(&p);
}

static void
test_three_way_reject(void)
{
  g_test_summary("CM: in a three-way handshake the active side may it_reject the reply; "
                 "the passive side gets PEER_REJECT with the private data and both EPs are "
                 "NONOPERATIONAL");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!require_three_way(&p.a)) {
    conf_pair_close(&p);
    return;
  }
  it_ia_info_t *info = conf_info(&p.a);
  size_t rlen = small_len(info->reject_private_data_len, 33);
  it_ia_info_free(info);
  unsigned char rpd[IT_MAX_PRIV_DATA];
  fill_pdata(rpd, rlen, 9);

  it_event_t ev = three_way_until_reply(&p, NULL, 0);
  conf_ok(it_reject(ev.conn.cn_est_id, rpd, rlen));
  ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_PEER_REJECT_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  if (rlen > 0) {
    g_assert_cmpint(ev.conn.private_data_present, ==, IT_TRUE);
    g_assert_cmpmem(ev.conn.private_data, rlen, rpd, rlen);
  }
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  conf_assert_empty(p.a.cm);
  /* The reply is answered: it cannot be accepted any more. */
  conf_assert_status(it_ep_accept(p.a.ep, ev.conn.cn_est_id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
  /* Both EPs can be reset and connect again. */
  conf_ok(it_ep_reset(p.a.ep));
  conf_ok(it_ep_reset(p.p.ep));
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_UNCONNECTED);
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_UNCONNECTED);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* Disconnect                                                              */
/* ---------------------------------------------------------------------- */

static void
test_disconnect_pdata(void)
{
  g_test_summary("CM: it_ep_disconnect with private data: both sides get DISCONNECT, the peer "
                 "sees the bytes, both EPs are NONOPERATIONAL and every posted receive "
                 "completes IT_DTO_ERR_FLUSHED exactly once");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.a);
  size_t dlen = small_len(info->disconnect_private_data_len, 120);
  it_ia_info_free(info);
  unsigned char dpd[IT_MAX_PRIV_DATA];
  fill_pdata(dpd, dlen, 11);
  conf_buf_t ba, bp;
  conf_buf_new(&p.a, &ba, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &bp, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);

  conf_pair_connect(&p, NULL, 0, NULL, 0);
  post_recvs(&p.a, &ba, 3, 100);
  post_recvs(&p.p, &bp, 2, 200);
  conf_ok(it_ep_disconnect(p.a.ep, dpd, dlen));

  it_event_t ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_assert_true(ev.conn.ep == p.a.ep);
  ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  if (dlen > 0) {
    g_assert_cmpint(ev.conn.private_data_present, ==, IT_TRUE);
    g_assert_cmpmem(ev.conn.private_data, dlen, dpd, dlen);
  }
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  expect_flushed_recvs(&p.a, 3, 100);
  expect_flushed_recvs(&p.p, 2, 200);
  conf_assert_empty(p.a.cm);
  conf_assert_empty(p.p.cm);
  /* Disconnecting again is a state error. */
  conf_assert_status(it_ep_disconnect(p.a.ep, NULL, 0), IT_ERR_INVALID_EP_STATE);
  conf_buf_free(&ba);
  conf_buf_free(&bp);
  conf_pair_close(&p);
}

static void
test_disconnect_passive(void)
{
  g_test_summary("CM: the passive side may disconnect too: both sides get DISCONNECT, the "
                 "active one without private data when none was sent, both EPs NONOPERATIONAL");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_ok(it_ep_disconnect(p.p.ep, NULL, 0));
  it_event_t ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_assert_true(ev.conn.ep == p.a.ep);
  g_assert_cmpint(ev.conn.private_data_present, ==, IT_FALSE);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  conf_assert_empty(p.a.cm);
  conf_assert_empty(p.p.cm);
  conf_pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* Private data limits                                                     */
/* ---------------------------------------------------------------------- */

static void
test_pdata_limit_connect(void)
{
  g_test_summary("CM: it_ep_connect with connect_private_data_len + 1 bytes returns "
                 "IT_ERR_INVALID_PDATA_LENGTH and leaves the EP UNCONNECTED; exactly the limit "
                 "connects and the request carries every byte");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.a);
  size_t lim = info->connect_private_data_len;
  it_ia_info_free(info);
  g_assert_cmpuint(lim, <=, IT_MAX_PRIV_DATA);
  unsigned char pd[IT_MAX_PRIV_DATA + 1];
  fill_pdata(pd, sizeof(pd), 13);

  it_path_t path;
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  conf_path(&p.a, &path);
  conf_assert_status(it_ep_connect(p.a.ep, &path, &ca, &p.qual, IT_CONNECT_FLAG_TWO_WAY, pd, lim + 1),
                     IT_ERR_INVALID_PDATA_LENGTH);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_UNCONNECTED);
  conf_assert_empty(p.p.req);

  conf_ok(it_ep_connect(p.a.ep, &path, &ca, &p.qual, IT_CONNECT_FLAG_TWO_WAY, lim ? pd : NULL, lim));
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  if (lim > 0) {
    g_assert_cmpint(ev.conn_req.private_data_present, ==, IT_TRUE);
    g_assert_cmpmem(ev.conn_req.private_data, lim, pd, lim);
  }
  conf_ok(it_ep_accept(p.p.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_pair_close(&p);
}

static void
test_pdata_limit_accept(void)
{
  g_test_summary("CM: it_ep_accept with accept_private_data_len + 1 bytes returns "
                 "IT_ERR_INVALID_PDATA_LENGTH and leaves the request pending; exactly the "
                 "limit establishes and the active side gets every byte");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.a);
  size_t lim = info->accept_private_data_len;
  it_ia_info_free(info);
  g_assert_cmpuint(lim, <=, IT_MAX_PRIV_DATA);
  unsigned char pd[IT_MAX_PRIV_DATA + 1];
  fill_pdata(pd, sizeof(pd), 17);

  start_connect(&p, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  it_cn_est_identifier_t id = ev.conn_req.cn_est_id;
  conf_assert_status(it_ep_accept(p.p.ep, id, pd, lim + 1), IT_ERR_INVALID_PDATA_LENGTH);
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_UNCONNECTED);
  conf_assert_empty(p.a.cm);

  conf_ok(it_ep_accept(p.p.ep, id, lim ? pd : NULL, lim));
  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  if (lim > 0) {
    g_assert_cmpint(ev.conn.private_data_present, ==, IT_TRUE);
    g_assert_cmpmem(ev.conn.private_data, lim, pd, lim);
  }
  conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_pair_close(&p);
}

static void
test_pdata_limit_reject(void)
{
  g_test_summary("CM: it_reject with reject_private_data_len + 1 bytes returns "
                 "IT_ERR_INVALID_PDATA_LENGTH; the request stays pending and a reject at the "
                 "limit delivers every byte");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.a);
  size_t lim = info->reject_private_data_len;
  it_ia_info_free(info);
  g_assert_cmpuint(lim, <=, IT_MAX_PRIV_DATA);
  unsigned char pd[IT_MAX_PRIV_DATA + 1];
  fill_pdata(pd, sizeof(pd), 19);

  start_connect(&p, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  it_cn_est_identifier_t id = ev.conn_req.cn_est_id;
  conf_assert_status(it_reject(id, pd, lim + 1), IT_ERR_INVALID_PDATA_LENGTH);
  conf_assert_empty(p.a.cm);

  conf_ok(it_reject(id, lim ? pd : NULL, lim));
  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_PEER_REJECT_EVENT);
  if (lim > 0) {
    g_assert_cmpint(ev.conn.private_data_present, ==, IT_TRUE);
    g_assert_cmpmem(ev.conn.private_data, lim, pd, lim);
  }
  conf_pair_close(&p);
}

static void
test_pdata_limit_disconnect(void)
{
  g_test_summary("CM: it_ep_disconnect with disconnect_private_data_len + 1 bytes returns "
                 "IT_ERR_INVALID_PDATA_LENGTH and the connection stays up; at the limit the "
                 "peer gets every byte");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.a);
  size_t lim = info->disconnect_private_data_len;
  it_ia_info_free(info);
  g_assert_cmpuint(lim, <=, IT_MAX_PRIV_DATA);
  unsigned char pd[IT_MAX_PRIV_DATA + 1];
  fill_pdata(pd, sizeof(pd), 23);

  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_assert_status(it_ep_disconnect(p.a.ep, pd, lim + 1), IT_ERR_INVALID_PDATA_LENGTH);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_CONNECTED);
  conf_assert_empty(p.p.cm);

  conf_ok(it_ep_disconnect(p.a.ep, lim ? pd : NULL, lim));
  conf_wait(p.a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  it_event_t ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  if (lim > 0) {
    g_assert_cmpint(ev.conn.private_data_present, ==, IT_TRUE);
    g_assert_cmpmem(ev.conn.private_data, lim, pd, lim);
  }
  conf_pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* Connection qualifiers                                                   */
/* ---------------------------------------------------------------------- */

static void
test_qual_busy(void)
{
  g_test_summary("CM: a second it_listen_create with IT_LISTEN_CONN_QUAL_INPUT on a port "
                 "already listened on returns IT_ERR_CONN_QUAL_BUSY (same IA and another IA "
                 "of the process); once the first listener is freed the port can be taken");
  conf_pair_t p;
  conf_pair_open(&p);
  it_conn_qual_t q = p.qual;
  it_listen_handle_t lh2 = IT_NULL_HANDLE;
  conf_assert_status(it_listen_create(p.p.ia, 0, p.p.req, IT_LISTEN_CONN_QUAL_INPUT, &q, &lh2),
                     IT_ERR_CONN_QUAL_BUSY);
  conf_assert_status(it_listen_create(p.a.ia, 0, p.a.req, IT_LISTEN_CONN_QUAL_INPUT, &q, &lh2),
                     IT_ERR_CONN_QUAL_BUSY);
  /* The qualifier is not rewritten by a failed call. */
  g_assert_cmpuint(ntohs(q.conn_qual.port), ==, pair_port(&p));

  conf_ok(it_listen_free(p.lh));
  p.lh = IT_NULL_HANDLE;
  conf_ok(it_listen_create(p.a.ia, 0, p.a.req, IT_LISTEN_CONN_QUAL_INPUT, &q, &lh2));
  g_assert_cmpuint(ntohs(q.conn_qual.port), ==, pair_port(&p));
  conf_ok(it_listen_free(lh2));
  conf_pair_close(&p);
}

/* Child: an IA of its own tries to listen on @port; exit code says how
 * it went (0 success, 1 busy, 3 refused for want of CAP_NET_BIND_SERVICE:
 * IT_ERR_INVALID_CONN_QUAL with a detail naming the capability, 2
 * anything else). */
static void G_GNUC_NORETURN
child_listen(uint16_t port)
{
  it_ia_handle_t ia;
  it_evd_handle_t req;
  it_listen_handle_t lh;
  if (it_ia_create(conf_ia_name(), 2, 1, &ia) != IT_SUCCESS)
    _exit(3);
  if (it_evd_create(ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
                    &req, NULL) != IT_SUCCESS)
    _exit(3);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(port);
  it_status_t st = it_listen_create(ia, 0, req, IT_LISTEN_CONN_QUAL_INPUT, &q, &lh);
  if (st == IT_ERR_INVALID_CONN_QUAL && strstr(itx_error_detail(), "CAP_NET_BIND_SERVICE") != NULL)
    _exit(3);
  if (st != IT_SUCCESS && st != IT_ERR_CONN_QUAL_BUSY)
    g_printerr("child: it_listen_create on port %u: %s: %s\n", port, itx_status_name(st), itx_error_detail());
  _exit(st == IT_SUCCESS ? 0 : st == IT_ERR_CONN_QUAL_BUSY ? 1 : 2);
}

/* The child runs the program anew (--cm-listen-child PORT), as
 * conf_scale.c's does: this process already runs the provider's threads,
 * and a child forked from it may only call async-signal-safe functions
 * until it execs.  Opening an IA right after fork() hung now and then
 * under AddressSanitizer (its allocator lock held by a thread that does
 * not exist in the child), and ThreadSanitizer refuses the new threads. */
static int
run_child_listen_as(uint16_t port, gboolean unprivileged)
{
  g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
  g_assert_nonnull(self);
  g_autofree char *portarg = g_strdup_printf("%u", port);
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    /* Out of the bounding and ambient sets, the capability cannot come
     * back at exec, also for root (capabilities(7)). */
    if (unprivileged && (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_NET_BIND_SERVICE, 0, 0) != 0 ||
                         prctl(PR_CAPBSET_DROP, CAP_NET_BIND_SERVICE, 0, 0, 0) != 0))
      _exit(126);
    execl(self, self, "--cm-listen-child", portarg, (char *) NULL);
    _exit(127);
  }
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static int
run_child_listen(uint16_t port)
{
  return run_child_listen_as(port, FALSE);
}

static void
test_qual_busy_process(void)
{
  g_test_summary("CM: connection qualifiers are host-wide: a process listening on the port "
                 "this one holds gets IT_ERR_CONN_QUAL_BUSY; after it_listen_free here, "
                 "another process and this one can listen on it");
  conf_pair_t p;
  conf_pair_open(&p);
  uint16_t port = pair_port(&p);
  g_assert_cmpint(run_child_listen(port), ==, 1);

  conf_ok(it_listen_free(p.lh));
  p.lh = IT_NULL_HANDLE;
  g_assert_cmpint(run_child_listen(port), ==, 0);
  /* The child's reservation died with it. */
  it_conn_qual_t q = p.qual;
  it_listen_handle_t lh;
  conf_ok(it_listen_create(p.p.ia, 0, p.p.req, IT_LISTEN_CONN_QUAL_INPUT, &q, &lh));
  g_assert_cmpuint(ntohs(q.conn_qual.port), ==, port);
  conf_ok(it_listen_free(lh));
  conf_pair_close(&p);
}

static void
test_qual_privileged(void)
{
  g_test_summary("CM: a port below net.ipv4.ip_unprivileged_port_start needs CAP_NET_BIND_SERVICE, "
                 "as a TCP port does, on every interface: a process without it gets "
                 "IT_ERR_INVALID_CONN_QUAL for port 80, with a detail naming the capability, and "
                 "listens at the start; a process with it listens on a privileged port");
  uint32_t start = rnicpi_unprivileged_port_start();
  if (!conf_require(start > 80 && start <= 65535, "port 80 below net.ipv4.ip_unprivileged_port_start"))
    return;
  g_assert_cmpint(run_child_listen_as(80, TRUE), ==, 3);
  /* At the start and above the capability is not needed; a port the
   * host's own stack holds (vp/iwarp listens on real TCP ports) is busy,
   * not refused: the next one is tried. */
  int got = 1;
  for (uint32_t port = start; got == 1 && port < start + 16 && port <= 65535; port++)
    got = run_child_listen_as((uint16_t) port, TRUE);
  g_assert_cmpint(got, ==, 0);

  if (!rnicpi_cap_effective(CAP_NET_BIND_SERVICE)) {
    g_test_message("this process lacks CAP_NET_BIND_SERVICE: a privileged listen is not tried");
    return;
  }
  conf_side_t s;
  conf_side_open(&s, NULL);
  static const uint16_t privileged[] = { 80, 1023, 1022, 1021, 1020, 999, 998, 997 };
  it_status_t st = IT_ERR_CONN_QUAL_BUSY;
  for (size_t i = 0; i < G_N_ELEMENTS(privileged) && st == IT_ERR_CONN_QUAL_BUSY; i++) {
    if (privileged[i] >= start)
      continue;
    it_conn_qual_t q = { .type = IT_IANA_PORT };
    q.conn_qual.port = htons(privileged[i]);
    it_listen_handle_t lh = IT_NULL_HANDLE;
    st = it_listen_create(s.ia, 0, s.req, IT_LISTEN_CONN_QUAL_INPUT, &q, &lh);
    if (st == IT_SUCCESS)
      conf_ok(it_listen_free(lh));
  }
  conf_assert_status(st, IT_SUCCESS);
  conf_side_close(&s);
}

static void
test_qual_auto(void)
{
  g_test_summary("CM: without IT_LISTEN_CONN_QUAL_INPUT it_listen_create writes back a non-zero "
                 "qualifier, which it_listen_query returns with the IA, spigot and EVD; two "
                 "automatic listeners get different qualifiers");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_conn_qual_t q1 = { .type = IT_IANA_PORT }, q2 = { .type = IT_IANA_PORT };
  it_listen_handle_t l1, l2;
  conf_ok(it_listen_create(s.ia, 0, s.req, IT_LISTEN_NO_FLAG, &q1, &l1));
  conf_ok(it_listen_create(s.ia, 0, s.req, IT_LISTEN_NO_FLAG, &q2, &l2));
  g_assert_cmpint(q1.type, ==, IT_IANA_PORT);
  g_assert_cmpuint(ntohs(q1.conn_qual.port), !=, 0);
  g_assert_cmpuint(ntohs(q2.conn_qual.port), !=, 0);
  g_assert_cmpuint(q1.conn_qual.port, !=, q2.conn_qual.port);

  it_listen_param_t lp;
  memset(&lp, 0, sizeof(lp));
  conf_ok(it_listen_query(l1, IT_LISTEN_PARAM_ALL, &lp));
  g_assert_true(lp.ia_handle == s.ia);
  g_assert_cmpuint(lp.spigot_id, ==, 0);
  g_assert_true(lp.connect_evd == s.req);
  g_assert_cmpint(lp.connect_qual.type, ==, IT_IANA_PORT);
  g_assert_cmpuint(lp.connect_qual.conn_qual.port, ==, q1.conn_qual.port);
  conf_ok(it_listen_free(l1));
  conf_ok(it_listen_free(l2));
  conf_assert_status(it_listen_query(l1, IT_LISTEN_PARAM_ALL, &lp), IT_ERR_INVALID_LISTEN);
  conf_side_close(&s);
}

/* Connect to the pair's listener naming it with @q; accept; established. */
static void
connect_with_qual(conf_pair_t *p, const it_conn_qual_t *q)
{
  start_connect(p, q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = conf_wait(p->p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(p->p.ep, ev.conn_req.cn_est_id, NULL, 0));
  ev = conf_wait(p->a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p->a.ep);
  conf_wait(p->p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
}

static gboolean
require_active_qual(conf_side_t *s, it_conn_qual_type_t t, const char *what)
{
  it_ia_info_t *info = conf_info(s);
  g_assert_cmpuint(info->num_spigots, >=, 1);
  gboolean ok = (info->spigot_info[0].active_side_conn_qual & t) != 0;
  it_ia_info_free(info);
  return conf_require(ok, what);
}

static void
test_qual_serviceid(void)
{
  g_test_summary("CM: an IT_IB_SERVICEID qualifier (IP-based service ID 0x106xxxx, and a plain "
                 "16-bit value) reaches the listener on that port");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!require_active_qual(&p.a, IT_IB_SERVICEID, "IB service ID qualifiers")) {
    conf_pair_close(&p);
    return;
  }
  it_conn_qual_t q = { .type = IT_IB_SERVICEID };
  q.conn_qual.serviceid = it_hton64(UINT64_C(0x1060000) | pair_port(&p));
  connect_with_qual(&p, &q);

  conf_ok(it_ep_disconnect(p.a.ep, NULL, 0));
  conf_wait(p.a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_wait(p.p.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_ok(it_ep_reset(p.a.ep));
  conf_ok(it_ep_reset(p.p.ep));

  q.conn_qual.serviceid = it_hton64(pair_port(&p));
  connect_with_qual(&p, &q);
  conf_pair_close(&p);
}

static void
test_qual_serviceid_listen(void)
{
  g_test_summary("CM: a listener created with an IT_IB_SERVICEID qualifier and "
                 "IT_LISTEN_CONN_QUAL_INPUT receives a connect that names the same port as "
                 "an IT_IANA_PORT, and the request reports the listener's qualifier");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.p);
  gboolean ok = (info->spigot_info[0].passive_side_conn_qual & IT_IB_SERVICEID) != 0;
  it_ia_info_free(info);
  if (!conf_require(ok, "IB service ID listeners")) {
    conf_pair_close(&p);
    return;
  }
  uint16_t port = pair_port(&p);
  conf_ok(it_listen_free(p.lh));
  p.lh = IT_NULL_HANDLE;
  it_conn_qual_t sq = { .type = IT_IB_SERVICEID };
  sq.conn_qual.serviceid = it_hton64(UINT64_C(0x1060000) | port);
  conf_ok(it_listen_create(p.p.ia, 0, p.p.req, IT_LISTEN_CONN_QUAL_INPUT, &sq, &p.lh));

  start_connect(&p, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  g_assert_cmpint(ev.conn_req.conn_qual.type, ==, IT_IB_SERVICEID);
  g_assert_cmphex(it_ntoh64(ev.conn_req.conn_qual.conn_qual.serviceid), ==,
                  UINT64_C(0x1060000) | port);
  conf_ok(it_ep_accept(p.p.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_pair_close(&p);
}

static void
test_qual_lr_port(void)
{
  g_test_summary("CM: an IT_IANA_LR_PORT qualifier connects to the listener named by its "
                 "remote port");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!require_active_qual(&p.a, IT_IANA_LR_PORT, "local/remote port qualifiers")) {
    conf_pair_close(&p);
    return;
  }
  it_conn_qual_t q = { .type = IT_IANA_LR_PORT };
  q.conn_qual.lr_port.local = 0;
  q.conn_qual.lr_port.remote = htons(pair_port(&p));
  connect_with_qual(&p, &q);
  conf_pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* Bad CM calls                                                            */
/* ---------------------------------------------------------------------- */

static void
test_bad_cn_est_id(void)
{
  g_test_summary("CM: it_ep_accept and it_reject with a connection id never issued return "
                 "IT_ERR_INVALID_CN_EST_ID and leave the EP UNCONNECTED");
  conf_side_t s;
  conf_side_open(&s, NULL);
  const it_cn_est_identifier_t bogus[] = { 0, 1, UINT64_C(0xdeadbeefcafef00d), UINT64_MAX };
  for (size_t i = 0; i < G_N_ELEMENTS(bogus); i++) {
    conf_assert_status(it_ep_accept(s.ep, bogus[i], NULL, 0), IT_ERR_INVALID_CN_EST_ID);
    conf_assert_status(it_reject(bogus[i], NULL, 0), IT_ERR_INVALID_CN_EST_ID);
  }
  g_assert_cmpint(conf_ep_state(s.ep), ==, IT_EP_STATE_UNCONNECTED);
  conf_side_close(&s);
}

static void
test_accept_twice(void)
{
  g_test_summary("CM: a connection request can be answered once: accepting it again on another "
                 "EP, or rejecting it afterwards, returns IT_ERR_INVALID_CN_EST_ID");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  it_ep_handle_t ep2;
  conf_ok(it_ep_rc_create(p.p.pz, p.p.dto, p.p.dto, p.p.cm, IT_EP_NO_FLAG, &attr, &ep2));

  start_connect(&p, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  it_cn_est_identifier_t id = ev.conn_req.cn_est_id;
  conf_ok(it_ep_accept(p.p.ep, id, NULL, 0));
  conf_assert_status(it_ep_accept(ep2, id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
  conf_assert_status(it_ep_accept(p.p.ep, id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
  conf_assert_status(it_reject(id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
  g_assert_cmpint(conf_ep_state(ep2), ==, IT_EP_STATE_UNCONNECTED);

  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.a.ep);
  ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  conf_assert_empty(p.p.cm);
  conf_pair_close(&p);
}

static void
test_bad_ep_state(void)
{
  g_test_summary("CM: it_ep_disconnect on an UNCONNECTED EP and it_ep_connect on a CONNECTED "
                 "EP return IT_ERR_INVALID_EP_STATE");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_assert_status(it_ep_disconnect(p.a.ep, NULL, 0), IT_ERR_INVALID_EP_STATE);
  conf_assert_status(it_ep_disconnect(p.p.ep, NULL, 0), IT_ERR_INVALID_EP_STATE);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_UNCONNECTED);

  conf_pair_connect(&p, NULL, 0, NULL, 0);
  it_path_t path;
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  conf_path(&p.a, &path);
  conf_assert_status(it_ep_connect(p.a.ep, &path, &ca, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
                     IT_ERR_INVALID_EP_STATE);
  conf_assert_status(it_ep_connect(p.p.ep, &path, &ca, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0),
                     IT_ERR_INVALID_EP_STATE);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_CONNECTED);
  conf_assert_empty(p.p.req);
  conf_pair_close(&p);
}

static void
test_bad_flags(void)
{
  g_test_summary("CM: it_ep_connect with both IT_CONNECT_FLAG_TWO_WAY and "
                 "IT_CONNECT_FLAG_THREE_WAY returns IT_ERR_INVALID_CN_EST_FLAGS and sends nothing");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_assert_status(conf_connect(&p.a, p.a.ep, &p.qual,
                                  IT_CONNECT_FLAG_TWO_WAY | IT_CONNECT_FLAG_THREE_WAY, NULL, 0),
                     IT_ERR_INVALID_CN_EST_FLAGS);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_UNCONNECTED);
  conf_assert_empty(p.p.req);
  conf_pair_close(&p);
}

static void
test_bad_listen(void)
{
  g_test_summary("CM: it_listen_create with a CM_MSG-stream EVD returns "
                 "IT_ERR_INVALID_CONN_EVD; on spigot 99 it returns IT_ERR_INVALID_SPIGOT");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_listen_handle_t lh = IT_NULL_HANDLE;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  conf_assert_status(it_listen_create(s.ia, 0, s.cm, IT_LISTEN_NO_FLAG, &q, &lh),
                     IT_ERR_INVALID_CONN_EVD);
  conf_assert_status(it_listen_create(s.ia, 0, s.dto, IT_LISTEN_NO_FLAG, &q, &lh),
                     IT_ERR_INVALID_CONN_EVD);
  it_ia_info_t *info = conf_info(&s);
  g_assert_cmpuint(info->num_spigots, <, 99);
  it_ia_info_free(info);
  conf_assert_status(it_listen_create(s.ia, 99, s.req, IT_LISTEN_NO_FLAG, &q, &lh),
                     IT_ERR_INVALID_SPIGOT);
  g_assert_true(lh == IT_NULL_HANDLE);
  conf_side_close(&s);
}

/* ---------------------------------------------------------------------- */
/* Device removal                                                          */
/* ---------------------------------------------------------------------- */

/* An event of @want on @evd within @secs seconds (a removal under an
 * emulated CPU takes a while), else the test fails naming it. */
static it_event_t
wait_long(it_evd_handle_t evd, it_event_type_t want, unsigned secs)
{
  it_event_t ev;
  size_t more = 0;
  it_status_t st = conf_evd_wait(evd, (uint64_t) secs * G_USEC_PER_SEC, &ev, &more);
  if (st != IT_SUCCESS)
    g_error("waiting %u s for %s after the device's removal: %s (%s)", secs, itx_event_name(want),
            itx_status_name(st), itx_error_detail());
  if (ev.event_number != want)
    g_error("after the device's removal: expected %s, got %s", itx_event_name(want),
            itx_event_name(ev.event_number));
  return ev;
}

/* Whether the removal command @pid ended within @secs seconds, and how. */
static gboolean
removal_ended(GPid pid, unsigned secs, int *status)
{
  for (unsigned i = 0; i < secs * 10; i++) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid)
      return TRUE;
    g_usleep(100000);
  }
  return FALSE;
}

static void
test_device_removal(void)
{
  g_test_summary("CM: the device removed under two connected EPs (the command in "
                 "$ITAPI_CONF_REMOVE_CMD, e.g. `rdma link delete rxe0`; skipped without it): "
                 "both connections break, every posted receive completes IT_DTO_ERR_FLUSHED "
                 "exactly once, a receive posted afterwards is refused or flushed, each IA's "
                 "unaffiliated EVD reports IT_ASYNC_UNAFF_SPIGOT_OFFLINE, everything frees, and the "
                 "removal itself ends (at the latest once the IAs are freed)");
  const char *cmd = g_getenv("ITAPI_CONF_REMOVE_CMD");
  if (cmd == NULL || *cmd == '\0') {
    g_test_skip("set ITAPI_CONF_REMOVE_CMD to a command that removes the interface's device "
                "(it is gone for the rest of the run)");
    return;
  }
  conf_pair_t p;
  conf_pair_open(&p);
  it_evd_handle_t ua, up;
  conf_ok(it_evd_create(p.a.ia, IT_ASYNC_UNAFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
                        IT_NULL_HANDLE, &ua, NULL));
  conf_ok(it_evd_create(p.p.ia, IT_ASYNC_UNAFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
                        IT_NULL_HANDLE, &up, NULL));
  conf_buf_t ba, bp;
  conf_buf_new(&p.a, &ba, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &bp, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  post_recvs(&p.a, &ba, 3, 100);
  post_recvs(&p.p, &bp, 2, 200);

  char *argv[] = { "/bin/sh", "-c", (char *) cmd, NULL };
  GPid pid;
  GError *err = NULL;
  if (!g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &err))
    g_error("cannot run ITAPI_CONF_REMOVE_CMD (%s): %s", cmd, err->message);

  it_event_t ev = wait_long(p.a.cm, IT_CM_MSG_CONN_BROKEN_EVENT, 60);
  g_assert_true(ev.conn.ep == p.a.ep);
  ev = wait_long(p.p.cm, IT_CM_MSG_CONN_BROKEN_EVENT, 60);
  g_assert_true(ev.conn.ep == p.p.ep);
  expect_flushed_recvs(&p.a, 3, 100);
  expect_flushed_recvs(&p.p, 2, 200);
  ev = wait_long(ua, IT_ASYNC_UNAFF_SPIGOT_OFFLINE, 60);
  g_assert_true(ev.unaff_async.ia == p.a.ia);
  ev = wait_long(up, IT_ASYNC_UNAFF_SPIGOT_OFFLINE, 60);
  g_assert_true(ev.unaff_async.ia == p.p.ia);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_NONOPERATIONAL);

  /* A request posted now never reaches a device: refused, or flushed. */
  it_lmr_triplet_t seg = conf_seg(&ba, 0, 64);
  it_status_t st = it_post_recv(p.a.ep, &seg, 1, 300, IT_COMPLETION_FLAG);
  if (st == IT_SUCCESS)
    expect_flushed_recvs(&p.a, 1, 300);

  /* The objects free as usual.  The kernel ends a removal once no
   * process holds the device (rxe and siw cannot take it from one): it
   * must end at the latest once the IAs are freed. */
  int status = 0;
  gboolean early = removal_ended(pid, 2, &status);
  conf_buf_free(&ba);
  conf_buf_free(&bp);
  conf_ok(it_evd_free(ua));
  conf_ok(it_evd_free(up));
  conf_pair_close(&p);
  if (!early && !removal_ended(pid, 120, &status))
    g_error("the removal (%s) did not end within 120 s of the IAs' free: the stack still holds "
            "the device", cmd);
  g_test_message("the removal ended %s the IAs were freed", early ? "before" : "after");
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* ---------------------------------------------------------------------- */
/* Broken and withdrawn connections                                        */
/* ---------------------------------------------------------------------- */

static void
test_broken(void)
{
  g_test_summary("CM: freeing one connected EP gives the other IT_CM_MSG_CONN_BROKEN_EVENT, "
                 "leaves it NONOPERATIONAL and flushes its posted receives once each");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_buf_t bp;
  conf_buf_new(&p.p, &bp, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  post_recvs(&p.p, &bp, 4, 300);

  conf_ok(it_ep_free(p.a.ep));
  p.a.ep = IT_NULL_HANDLE;
  it_event_t ev = conf_wait(p.p.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  g_assert_true(ev.conn.ep == p.p.ep);
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  expect_flushed_recvs(&p.p, 4, 300);
  conf_assert_empty(p.p.cm);
  conf_buf_free(&bp);
  conf_pair_close(&p);
}

static void
test_withdrawn_request(void)
{
  g_test_summary("CM: a connection request withdrawn by its requester (the active EP freed) "
                 "cannot be accepted: it_ep_accept returns IT_ERR_INVALID_CN_EST_ID and the "
                 "passive EP stays UNCONNECTED and usable");
  conf_pair_t p;
  conf_pair_open(&p);
  start_connect(&p, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  it_cn_est_identifier_t id = ev.conn_req.cn_est_id;
  conf_ok(it_ep_free(p.a.ep));
  p.a.ep = IT_NULL_HANDLE;

  /* Withdrawal travels asynchronously: poll until the id is refused.  Over
   * a transport whose withdrawal is a TCP close (iWARP), an accept may still
   * win the race; the connection then ends at once and the EP is reset. */
  it_status_t st = IT_SUCCESS;
  cert_limit_t w;
  cert_limit_begin(&w, "an accept to find the request withdrawn", 2 * G_USEC_PER_SEC);
  gboolean ib = conf_transport(&p.p) == IT_IB_TRANSPORT;
  do {
    st = it_ep_accept(p.p.ep, id, NULL, 0);
    if (st == IT_ERR_INVALID_CN_EST_ID || (st == IT_SUCCESS && !ib))
      break;
    g_assert_cmpstr(itx_status_name(st), ==, itx_status_name(IT_ERR_INVALID_CN_EST_ID));
    g_usleep(10000);
  } while (!cert_limit_over(&w));
  cert_limit_end(&w);
  if (st == IT_SUCCESS && !ib) {
    /* The accept won: the connection may come up first (ESTABLISHED, where
     * the RNIC sends its MPA Reply before it sees the requester's close),
     * and then ends. */
    it_event_t end;
    size_t more;
    conf_ok(conf_evd_wait(p.p.cm, CONF_TIMEOUT_US, &end, &more));
    if (end.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT)
      conf_ok(conf_evd_wait(p.p.cm, CONF_TIMEOUT_US, &end, &more));
    if (end.event_number != IT_CM_MSG_CONN_BROKEN_EVENT &&
        end.event_number != IT_CM_MSG_CONN_DISCONNECT_EVENT)
      g_error("the accept of a withdrawn request succeeded, and the passive EP then got %s, "
              "not BROKEN or DISCONNECT", itx_event_name(end.event_number));
    g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_NONOPERATIONAL);
    conf_ok(it_ep_reset(p.p.ep));
  } else {
    conf_assert_status(st, IT_ERR_INVALID_CN_EST_ID);
  }
  g_assert_cmpint(conf_ep_state(p.p.ep), ==, IT_EP_STATE_UNCONNECTED);
  conf_assert_empty(p.p.cm);

  /* The passive EP still takes a fresh connection. */
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  conf_ok(it_ep_rc_create(p.a.pz, p.a.dto, p.a.dto, p.a.cm, IT_EP_NO_FLAG, &attr, &p.a.ep));
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_pair_close(&p);
}

static void
test_handoff(void)
{
  g_test_summary("CM: it_handoff passes a pending request to another listen point of the IA, "
                 "which gets it with the same private data under a new identifier; the old one "
                 "is used up, and accepting the new one connects");
  conf_pair_t p;
  conf_pair_open(&p);
  it_listen_handle_t lh2;
  it_conn_qual_t q2 = { .type = IT_IANA_PORT };
  it_evd_handle_t req2;
  conf_ok(it_evd_create(p.p.ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
                        IT_NULL_HANDLE, &req2, NULL));
  conf_ok(it_listen_create(p.p.ia, 0, req2, IT_LISTEN_NO_FLAG, &q2, &lh2));

  static const unsigned char pd[] = "hand me over";
  conf_ok(conf_connect(&p.a, p.a.ep, &p.qual, IT_CONNECT_FLAG_TWO_WAY, pd, sizeof(pd)));
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  it_cn_est_identifier_t old = ev.conn_req.cn_est_id;

  conf_assert_status(it_handoff(&p.qual, 0, old), IT_ERR_INVALID_CONN_QUAL);
  it_conn_qual_t nobody = { .type = IT_IANA_PORT };
  nobody.conn_qual.port = htons(1);
  conf_assert_status(it_handoff(&nobody, 0, old), IT_ERR_INVALID_CONN_QUAL);
  conf_assert_status(it_handoff(&q2, 7, old), IT_ERR_INVALID_CONN_QUAL);
  conf_ok(it_handoff(&q2, 0, old));
  conf_assert_status(it_handoff(&q2, 0, old), IT_ERR_INVALID_CN_EST_ID);

  it_event_t moved = conf_wait(req2, IT_CM_REQ_CONN_REQUEST_EVENT);
  g_assert_true(moved.conn_req.evd == req2);
  g_assert_cmpuint(moved.conn_req.cn_est_id, !=, old);
  g_assert_cmpuint(moved.conn_req.conn_qual.conn_qual.port, ==, q2.conn_qual.port);
  g_assert_true(moved.conn_req.private_data_present);
  g_assert_cmpmem(moved.conn_req.private_data, sizeof(pd), pd, sizeof(pd));
  g_assert_cmpuint(moved.conn_req.rdma_read_ord, ==, ev.conn_req.rdma_read_ord);
  conf_assert_empty(p.p.req);

  conf_assert_status(it_ep_accept(p.p.ep, old, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
  conf_ok(it_ep_accept(p.p.ep, moved.conn_req.cn_est_id, NULL, 0));
  conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_ok(it_listen_free(lh2));
  conf_pair_close(&p);
}

static void
test_ipv6(void)
{
  g_test_summary("CM over IPv6: where the IA lists an IPv6 address, a connection by an IPv6 "
                 "path to the first one (::1 on the software providers) is requested from that "
                 "address (source_addr IT_IPV6), establishes both ways with private data, and a "
                 "send moves checked bytes");
  conf_pair_t p;
  conf_pair_open(&p);
  it_net_addr_t addr;
  if (!conf_require(conf_self_addr_of(&p.a, IT_IPV6, &addr),
                    "an IPv6 address in spigot_info[0].net_addr")) {
    conf_pair_close(&p);
    return;
  }
  it_path_t path;
  conf_path_to(&p.a, &addr, &path);
  conf_buf_t sb, rb;
  conf_buf_new(&p.a, &sb, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rb, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&sb, 6);
  it_lmr_triplet_t rs = conf_seg(&rb, 0, 64), ss = conf_seg(&sb, 0, 64);
  conf_ok(it_post_recv(p.p.ep, &rs, 1, 1, IT_COMPLETION_FLAG));
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  static const unsigned char cpd[] = "over v6", apd[] = "accepted over v6";
  conf_ok(it_ep_connect(p.a.ep, &path, &ca, &p.qual, IT_CONNECT_FLAG_TWO_WAY, cpd, sizeof(cpd)));
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  assert_source(&ev.conn_req.source_addr, &addr);
  g_assert_true(ev.conn_req.private_data_present);
  g_assert_cmpmem(ev.conn_req.private_data, sizeof(cpd), cpd, sizeof(cpd));
  conf_ok(it_ep_accept(p.p.ep, ev.conn_req.cn_est_id, apd, sizeof(apd)));
  ev = conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.private_data_present);
  g_assert_cmpmem(ev.conn.private_data, sizeof(apd), apd, sizeof(apd));
  conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_ok(it_post_send(p.a.ep, &ss, 1, 2, IT_COMPLETION_FLAG));
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  it_dto_cmpl_event_t d = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  g_assert_cmpuint(d.transferred_length, ==, 64);
  conf_buf_check(&rb, 0, 64, 6);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  conf_pair_close(&p);
}

static void
test_ip_path(void)
{
  g_test_summary("An IP path in the iWARP form filled by hand, as applications written for "
                 "rdma_cm do (IBM's SKV), with no it_get_pathinfo: on every IA, InfiniBand paths "
                 "too, the connection to the IA's IPv4 address establishes and a Send moves "
                 "checked bytes");
  conf_pair_t p;
  conf_pair_open(&p);
  it_net_addr_t addr;
  gboolean have = conf_self_addr_of(&p.a, IT_IPV4, &addr);
  if (!have && conf_self_addr_of(&p.a, IT_IB_GID, &addr) && IN6_IS_ADDR_V4MAPPED(&addr.addr.gid)) {
    struct in_addr a4;
    memcpy(&a4, &addr.addr.gid.s6_addr[12], 4);
    addr = (it_net_addr_t) { .addr_type = IT_IPV4, .addr.ipv4 = a4 };
    have = TRUE;
  }
  if (!conf_require(have, "an IPv4 address, or a GID made of one, in spigot_info[0].net_addr")) {
    conf_pair_close(&p);
    return;
  }
  it_path_t path;
  memset(&path, 0, sizeof(path));
  path.timeout = CONF_TIMEOUT_US;
  path.remote.iwarp.ip_vers = IT_IP_VERS_IPV4;
  path.remote.iwarp.laddr.ipv4 = addr.addr.ipv4;
  path.remote.iwarp.raddr.ipv4 = addr.addr.ipv4;
  conf_buf_t sb, rb;
  conf_buf_new(&p.a, &sb, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rb, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&sb, 8);
  it_lmr_triplet_t rs = conf_seg(&rb, 0, 64), ss = conf_seg(&sb, 0, 64);
  conf_ok(it_post_recv(p.p.ep, &rs, 1, 1, IT_COMPLETION_FLAG));
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  conf_ok(it_ep_connect(p.a.ep, &path, &ca, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  it_event_t ev = conf_wait(p.p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(p.p.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(p.a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_wait(p.p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_ok(it_post_send(p.a.ep, &ss, 1, 2, IT_COMPLETION_FLAG));
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  it_dto_cmpl_event_t d = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  g_assert_cmpuint(d.transferred_length, ==, 64);
  conf_buf_check(&rb, 0, 64, 8);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  conf_pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* The loopback                                                            */
/* ---------------------------------------------------------------------- */

/* @a as a plain IP address: a GID, or an IPv4-mapped IPv6 address, as the
 * IPv4 or IPv6 address it is. */
static it_net_addr_t
plain_addr(const it_net_addr_t *a)
{
  it_net_addr_t out = *a;
  const struct in6_addr *v6 = a->addr_type == IT_IB_GID ? &a->addr.gid : &a->addr.ipv6;
  if (a->addr_type == IT_IPV4)
    return out;
  if (IN6_IS_ADDR_V4MAPPED(v6)) {
    out.addr_type = IT_IPV4;
    memcpy(&out.addr.ipv4, &v6->s6_addr[12], 4);
  } else {
    out.addr_type = IT_IPV6;
    out.addr.ipv6 = *v6;
  }
  return out;
}

/* Whether @a is this host's loopback (rnicpi_addr_is_loopback). */
static gboolean
is_loopback(const it_net_addr_t *a)
{
  it_net_addr_t p = plain_addr(a);
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  if (p.addr_type == IT_IPV4) {
    ((struct sockaddr_in *) &ss)->sin_family = AF_INET;
    ((struct sockaddr_in *) &ss)->sin_addr = p.addr.ipv4;
  } else {
    ((struct sockaddr_in6 *) &ss)->sin6_family = AF_INET6;
    ((struct sockaddr_in6 *) &ss)->sin6_addr = p.addr.ipv6;
  }
  return rnicpi_addr_is_loopback((const struct sockaddr *) &ss);
}

/* Whether @a is this host's loopback or one of the addresses @s's IA lists
 * for spigot 0. */
static gboolean
loopback_or_listed(conf_side_t *s, const it_net_addr_t *a)
{
  if (is_loopback(a))
    return TRUE;
  it_net_addr_t p = plain_addr(a);
  it_ia_info_t *info = conf_info(s);
  gboolean found = FALSE;
  for (size_t i = 0; !found && info->num_spigots > 0 && i < info->spigot_info[0].num_net_addr; i++) {
    it_net_addr_t l = plain_addr(&info->spigot_info[0].net_addr[i]);
    found = conf_addr_equal(&l, &p);
  }
  it_ia_info_free(info);
  return found;
}

/* The two ends of @path, as IP addresses. */
static void
path_ends(conf_side_t *s, const it_path_t *path, it_net_addr_t *local, it_net_addr_t *remote)
{
  it_ia_info_t *info = conf_info(s);
  gboolean iwarp = info->transport_type == IT_IWARP_TCP_TRANSPORT;
  it_ia_info_free(info);
  if (iwarp) {
    const it_iwarp_net_endpoint_t *iw = &path->remote.iwarp;
    g_assert_true(iw->ip_vers == IT_IP_VERS_IPV4 || iw->ip_vers == IT_IP_VERS_IPV6);
    gboolean v4 = iw->ip_vers == IT_IP_VERS_IPV4;
    *local = (it_net_addr_t) { .addr_type = v4 ? IT_IPV4 : IT_IPV6 };
    *remote = *local;
    if (v4) {
      local->addr.ipv4 = iw->laddr.ipv4;
      remote->addr.ipv4 = iw->raddr.ipv4;
    } else {
      local->addr.ipv6 = iw->laddr.ipv6;
      remote->addr.ipv6 = iw->raddr.ipv6;
    }
  } else {
    *local = (it_net_addr_t) { .addr_type = IT_IB_GID, .addr.gid = path->remote.ib.local_port_gid };
    *remote = (it_net_addr_t) { .addr_type = IT_IB_GID, .addr.gid = path->remote.ib.remote_port_gid };
  }
  *local = plain_addr(local);
  *remote = plain_addr(remote);
}

/* A path from @s to @to by it_get_pathinfo: it goes where the loopback is
 * for this IA, from an address it lists. */
static void
loopback_path(conf_side_t *s, const it_net_addr_t *to, it_path_t *path)
{
  conf_path_to(s, to, path);
  it_net_addr_t local, remote;
  path_ends(s, path, &local, &remote);
  g_autofree char *to_s = conf_addr_str(to), *l_s = conf_addr_str(&local), *r_s = conf_addr_str(&remote);
  g_test_message("the path to %s goes from %s to %s", to_s, l_s, r_s);
  if (!loopback_or_listed(s, &remote) || !loopback_or_listed(s, &local))
    g_error("it_get_pathinfo on IA '%s' to %s gave a path from %s to %s: a path to the loopback "
            "must stay on this host (the loopback, or an address the IA lists)",
            conf_ia_name(), to_s, l_s, r_s);
}

/* Connect @p over @path with private data, accept, then one Send of 64
 * checked bytes (@seed): the request comes from the loopback or an address
 * the IA lists. */
static void
loopback_connect(conf_pair_t *p, const it_path_t *path, unsigned seed)
{
  conf_buf_t sb, rb;
  conf_buf_new(&p->a, &sb, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p->p, &rb, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&sb, seed);
  it_lmr_triplet_t rs = conf_seg(&rb, 0, 64), ss = conf_seg(&sb, 0, 64);
  conf_ok(it_post_recv(p->p.ep, &rs, 1, 1, IT_COMPLETION_FLAG));
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  static const unsigned char cpd[] = "to the loopback";
  it_ia_info_t *info = conf_info(&p->a);
  size_t clen = small_len(info->connect_private_data_len, sizeof(cpd));
  it_ia_info_free(info);
  conf_ok(it_ep_connect(p->a.ep, path, &ca, &p->qual, IT_CONNECT_FLAG_TWO_WAY, clen > 0 ? cpd : NULL,
                        clen));
  it_event_t ev = conf_wait(p->p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  g_autofree char *src = conf_addr_str(&ev.conn_req.source_addr);
  g_test_message("the request comes from %s", src);
  if (!loopback_or_listed(&p->p, &ev.conn_req.source_addr))
    g_error("a connection from IA '%s' to the loopback comes from %s: neither the loopback nor an "
            "address the IA lists", conf_ia_name(), src);
  if (clen > 0) {
    g_assert_true(ev.conn_req.private_data_present);
    g_assert_cmpmem(ev.conn_req.private_data, clen, cpd, clen);
  }
  conf_ok(it_ep_accept(p->p.ep, ev.conn_req.cn_est_id, NULL, 0));
  ev = conf_wait(p->a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.ep == p->a.ep);
  conf_wait(p->p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_ok(it_post_send(p->a.ep, &ss, 1, 2, IT_COMPLETION_FLAG));
  conf_dto(p->a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  it_dto_cmpl_event_t d = conf_dto(p->p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  g_assert_cmpuint(d.transferred_length, ==, 64);
  conf_buf_check(&rb, 0, 64, seed);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
}

static it_net_addr_t
loopback_v4(void)
{
  it_net_addr_t a = { .addr_type = IT_IPV4 };
  a.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

static void
test_loopback(void)
{
  g_test_summary("A connection to 127.0.0.1 reaches this host's listener on the IA, on every "
                 "IA (rdma_cm devices, which cannot reach the loopback, included): "
                 "it_get_pathinfo gives a path between the loopback or the IA's own addresses, "
                 "the request comes from one of them with the private data, and a Send moves "
                 "checked bytes");
  conf_pair_t p;
  conf_pair_open(&p);
  it_net_addr_t lo = loopback_v4();
  it_path_t path;
  loopback_path(&p.a, &lo, &path);
  loopback_connect(&p, &path, 11);
  conf_pair_close(&p);
}

static void
test_loopback_ip_path(void)
{
  g_test_summary("An IP path to 127.0.0.1 filled by hand in the iWARP form (no it_get_pathinfo), "
                 "as applications written for rdma_cm give it: on every IA the connection "
                 "reaches this host's listener and a Send moves checked bytes");
  conf_pair_t p;
  conf_pair_open(&p);
  it_path_t path;
  memset(&path, 0, sizeof(path));
  path.remote.iwarp.ip_vers = IT_IP_VERS_IPV4;
  path.remote.iwarp.laddr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
  path.remote.iwarp.raddr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
  loopback_connect(&p, &path, 12);
  conf_pair_close(&p);
}

/* Whether @s's IA lists ::1, or no loopback address at all (then ::1 is
 * its own address, ual_ia_map_loopback). */
static gboolean
reaches_v6_loopback(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  gboolean v6_lo = FALSE, any_lo = FALSE;
  for (size_t i = 0; info->num_spigots > 0 && i < info->spigot_info[0].num_net_addr; i++) {
    it_net_addr_t a = plain_addr(&info->spigot_info[0].net_addr[i]);
    gboolean lo = is_loopback(&a);
    any_lo |= lo;
    v6_lo |= lo && a.addr_type == IT_IPV6;
  }
  it_ia_info_free(info);
  return v6_lo || !any_lo;
}

static void
test_loopback_v6(void)
{
  g_test_summary("A connection to ::1 reaches this host's listener on the IA where the IA lists ::1 "
                 "or no loopback address at all (an rdma_cm device: there it goes to the IA's own "
                 "address, IPv4 where it has no IPv6 one); a Send moves checked bytes");
  conf_pair_t p;
  conf_pair_open(&p);
  if (!conf_require(reaches_v6_loopback(&p.a), "::1 in spigot_info[0].net_addr, or no loopback "
                    "address there")) {
    conf_pair_close(&p);
    return;
  }
  it_net_addr_t lo = { .addr_type = IT_IPV6 };
  lo.addr.ipv6 = in6addr_loopback;
  it_path_t path;
  loopback_path(&p.a, &lo, &path);
  loopback_connect(&p, &path, 13);
  conf_pair_close(&p);
}

/* Connect @s's endpoint over @path to port @port, where nobody listens:
 * the non-peer reject comes; how long it took, in ms. */
static gint64
refused_connect_ms(conf_side_t *s, const it_path_t *path, uint16_t port)
{
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(port);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  gint64 start = g_get_monotonic_time();
  conf_ok(it_ep_connect(s->ep, path, &ca, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  it_event_t ev = conf_wait(s->cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
  gint64 took_ms = (g_get_monotonic_time() - start) / 1000;
  g_test_message("non-peer reject, reason %d, after %" G_GINT64_FORMAT " ms",
                 (int) ev.conn.reject_reason_code, took_ms);
  g_assert_true(ev.conn.ep == s->ep);
  g_assert_cmpint(conf_ep_state(s->ep), ==, IT_EP_STATE_NONOPERATIONAL);
  conf_assert_empty(s->cm);
  return took_ms;
}

static void
test_loopback_no_listener(void)
{
  g_test_summary("A connect to 127.0.0.1 on a port nobody listens on, with no path timeout, is "
                 "refused at once: IT_CM_MSG_CONN_NONPEER_REJECT_EVENT within 1 s (or, on a host "
                 "slow enough that the same refusal at the IA's own address takes longer, within "
                 "three times that), not after the CM's retries (98 s on rxe, where 127.0.0.1 "
                 "leaves by the device's netdev)");
  conf_side_t a;
  conf_side_open(&a, NULL);
  uint16_t port = free_port(&a);
  /* The same refusal at the IA's own address: what this host takes. */
  it_ia_info_t *info = conf_info(&a);
  g_assert_cmpuint(info->spigot_info[0].num_net_addr, >, 0);
  it_path_t own;
  conf_path_to(&a, &info->spigot_info[0].net_addr[0], &own);
  it_ia_info_free(info);
  gint64 own_ms = refused_connect_ms(&a, &own, port);
  conf_side_close(&a);

  conf_side_open(&a, NULL);
  it_net_addr_t lo = loopback_v4();
  it_path_t path;
  loopback_path(&a, &lo, &path);
  g_assert_cmpuint(path.timeout, ==, 0);
  gint64 took_ms = refused_connect_ms(&a, &path, port);
  g_assert_cmpint(took_ms, <, MAX(1000, 3 * own_ms));
  conf_side_close(&a);
}

/* A server that answers the first message arriving on each new endpoint,
 * reading its completions before its connection events. */
#define BURST 16

static void
test_reply_before_established(void)
{
  g_test_summary("16 clients connect at once and each sends as soon as it is ESTABLISHED; the server "
                 "reads its DTO EVD before its CM EVD and replies on the endpoint each message came on: "
                 "the reply is accepted (never IT_ERR_INVALID_EP_STATE), whatever order the events "
                 "arrive in");
  for (unsigned round = 0; round < 4; round++) {
    conf_pair_t p;
    conf_pair_open(&p);
    it_ep_attributes_t attr;
    conf_default_attr(&attr);
    it_ep_handle_t cl[BURST], sv[BURST];
    unsigned char cbuf[BURST][8], sbuf[BURST][8];
    it_lmr_handle_t clmr, slmr;
    conf_ok(it_lmr_create(p.a.pz, cbuf, NULL, sizeof(cbuf), IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                          IT_LMR_FLAG_NONE, 0, &clmr, NULL));
    conf_ok(it_lmr_create(p.p.pz, sbuf, NULL, sizeof(sbuf), IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
                          IT_LMR_FLAG_NONE, 0, &slmr, NULL));
    it_path_t path;
    conf_path(&p.a, &path);
    for (unsigned i = 0; i < BURST; i++) {
      conf_ok(it_ep_rc_create(p.a.pz, p.a.dto, p.a.dto, p.a.cm, IT_EP_NO_FLAG, &attr, &cl[i]));
      conf_ok(it_ep_rc_create(p.p.pz, p.p.dto, p.p.dto, p.p.cm, IT_EP_NO_FLAG, &attr, &sv[i]));
      it_lmr_triplet_t seg = { .lmr = clmr, .addr.abs = cbuf[i], .length = 8 };
      conf_ok(it_post_recv(cl[i], &seg, 1, 100 + i, IT_COMPLETION_FLAG));
      seg = (it_lmr_triplet_t) { .lmr = slmr, .addr.abs = sbuf[i], .length = 8 };
      conf_ok(it_post_recv(sv[i], &seg, 1, i, IT_COMPLETION_FLAG));
      it_conn_attributes_t ca;
      memset(&ca, 0, sizeof(ca));
      conf_ok(it_ep_connect(cl[i], &path, &ca, &p.qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
    }
    unsigned accepted = 0, replied = 0, answered = 0;
    cert_limit_t w;
    cert_limit_beginf(&w, 10 * G_USEC_PER_SEC, "round %u: %d connections' request and reply", round,
                      BURST);
    while (answered < BURST) {
      if (cert_limit_over(&w))
        g_error("round %u: %u of %d connections accepted, %u replies sent, %u answered in 10 s", round,
                accepted, BURST, replied, answered);
      it_event_t ev;
      /* Server: completions first, then requests; its CM_MSG events are
       * read last, so a reply may precede the EP's ESTABLISHED. */
      while (it_evd_dequeue(p.p.dto, &ev) == IT_SUCCESS) {
        if (ev.event_number != IT_DTO_RC_RECV_CMPL_EVENT)
          continue;
        g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
        unsigned i = (unsigned) ev.dto_cmpl.cookie;
        g_assert_cmpuint(i, <, BURST);
        g_assert_true(ev.dto_cmpl.ep == sv[i]);
        it_lmr_triplet_t seg = { .lmr = slmr, .addr.abs = sbuf[i], .length = 8 };
        it_status_t st = it_post_send(sv[i], &seg, 1, 200 + i, IT_COMPLETION_FLAG);
        if (st != IT_SUCCESS)
          g_error("replying on server EP %u right after its first message: %s (%s)", i, itx_status_name(st),
                  itx_error_detail());
        replied++;
      }
      if (it_evd_dequeue(p.p.req, &ev) == IT_SUCCESS) {
        g_assert_cmpint(ev.event_number, ==, IT_CM_REQ_CONN_REQUEST_EVENT);
        g_assert_cmpuint(accepted, <, BURST);
        conf_ok(it_ep_accept(sv[accepted++], ev.conn_req.cn_est_id, NULL, 0));
      }
      (void) it_evd_dequeue(p.p.cm, &ev);
      /* Clients: send on ESTABLISHED, count the replies. */
      while (it_evd_dequeue(p.a.cm, &ev) == IT_SUCCESS) {
        g_assert_cmpint(ev.event_number, ==, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
        unsigned i = 0;
        while (i < BURST && cl[i] != ev.conn.ep)
          i++;
        g_assert_cmpuint(i, <, BURST);
        memset(cbuf[i], (int) i, 8);
        it_lmr_triplet_t seg = { .lmr = clmr, .addr.abs = cbuf[i], .length = 8 };
        conf_ok(it_post_send(cl[i], &seg, 1, 300 + i, IT_COMPLETION_FLAG));
      }
      while (it_evd_dequeue(p.a.dto, &ev) == IT_SUCCESS) {
        g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
        if (ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT)
          answered++;
      }
    }
    cert_limit_end(&w);
    g_assert_cmpuint(replied, ==, BURST);
    /* Requests are accepted in the order they come, so server EP i may
     * serve any client: every client's byte landed once. */
    unsigned got = 0;
    for (unsigned i = 0; i < BURST; i++) {
      g_assert_cmpuint(sbuf[i][0], <, BURST);
      got |= 1u << sbuf[i][0];
    }
    g_assert_cmphex(got, ==, (1u << BURST) - 1);
    conf_pair_close(&p);
  }
}

int
main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--cm-listen-child") == 0)
    child_listen((uint16_t) g_ascii_strtoull(argv[2], NULL, 10));
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/cm/connect-pdata", test_connect_pdata);
  g_test_add_func("/conformance/cm/connect-no-pdata", test_connect_no_pdata);
  g_test_add_func("/conformance/cm/request-fields", test_request_fields);
  g_test_add_func("/conformance/cm/ipv6", test_ipv6);
  g_test_add_func("/conformance/cm/ip-path", test_ip_path);
  g_test_add_func("/conformance/cm/loopback", test_loopback);
  g_test_add_func("/conformance/cm/loopback-ip-path", test_loopback_ip_path);
  g_test_add_func("/conformance/cm/loopback-v6", test_loopback_v6);
  g_test_add_func("/conformance/cm/loopback-no-listener", test_loopback_no_listener);
  g_test_add_func("/conformance/cm/reject-pdata", test_reject_pdata);
  g_test_add_func("/conformance/cm/nonpeer-reject", test_nonpeer_reject);
  g_test_add_func("/conformance/cm/timeout/infinite", test_timeout_infinite);
  g_test_add_func("/conformance/cm/timeout/unanswered", test_timeout_unanswered);
  g_test_add_func("/conformance/cm/three-way/accept", test_three_way_accept);
  g_test_add_func("/conformance/cm/three-way/reject", test_three_way_reject);
  g_test_add_func("/conformance/cm/disconnect-pdata", test_disconnect_pdata);
  g_test_add_func("/conformance/cm/disconnect-passive", test_disconnect_passive);
  g_test_add_func("/conformance/cm/pdata-limit/connect", test_pdata_limit_connect);
  g_test_add_func("/conformance/cm/pdata-limit/accept", test_pdata_limit_accept);
  g_test_add_func("/conformance/cm/pdata-limit/reject", test_pdata_limit_reject);
  g_test_add_func("/conformance/cm/pdata-limit/disconnect", test_pdata_limit_disconnect);
  g_test_add_func("/conformance/cm/qual/busy", test_qual_busy);
  g_test_add_func("/conformance/cm/qual/busy-process", test_qual_busy_process);
  g_test_add_func("/conformance/cm/qual/privileged", test_qual_privileged);
  g_test_add_func("/conformance/cm/qual/auto", test_qual_auto);
  g_test_add_func("/conformance/cm/qual/serviceid", test_qual_serviceid);
  g_test_add_func("/conformance/cm/qual/serviceid-listen", test_qual_serviceid_listen);
  g_test_add_func("/conformance/cm/qual/lr-port", test_qual_lr_port);
  g_test_add_func("/conformance/cm/bad/cn-est-id", test_bad_cn_est_id);
  g_test_add_func("/conformance/cm/bad/accept-twice", test_accept_twice);
  g_test_add_func("/conformance/cm/bad/ep-state", test_bad_ep_state);
  g_test_add_func("/conformance/cm/bad/cn-est-flags", test_bad_flags);
  g_test_add_func("/conformance/cm/bad/listen", test_bad_listen);
  g_test_add_func("/conformance/cm/broken", test_broken);
  g_test_add_func("/conformance/cm/device-removal", test_device_removal);
  g_test_add_func("/conformance/cm/withdrawn-request", test_withdrawn_request);
  g_test_add_func("/conformance/cm/handoff", test_handoff);
  g_test_add_func("/conformance/cm/reply-before-established", test_reply_before_established);
  return g_test_run();
}
