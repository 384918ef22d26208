/*
 * cert-rnicpi: connection management verbs (rnicpi_cm_ops_t, optional:
 * RNICPI_CAP_CM_VERBS): listen, connect, accept and reject with private
 * data, IRD/ORD negotiation, unreachable peers, orderly disconnect and the
 * three-way handshake.  Both ends live on the one device under test,
 * connected through its first address.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "cert.h"
#include "rnicpi_util.h"

#define LISTEN_CTX 0x11570
#define A_CTX 0xa0000
#define P_CTX 0xb0000

static void
pdata_check(const rnicpi_cm_event_t *ev, uint32_t len, uint8_t seed)
{
  uint8_t want[RNICPI_MAX_PDATA];
  cert_pdata_fill(want, len, seed);
  g_assert_cmpuint(ev->pdata_len, >=, len);
  g_assert_cmpmem(ev->pdata, len, want, len);
}

/* @ss's address (no port), for messages. */
static const char *
addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
  const void *a = ss->ss_family == AF_INET6 ? (const void *) &((const struct sockaddr_in6 *) ss)->sin6_addr
                                            : (const void *) &((const struct sockaddr_in *) ss)->sin_addr;
  if (inet_ntop(ss->ss_family, a, buf, (socklen_t) len) == NULL)
    g_snprintf(buf, len, "(address family %d)", ss->ss_family);
  return buf;
}

/* A request's source, from a QP of the device to the device's own address
 * (@want): that address, exactly (the port aside). */
static void
assert_source(cert_t *f, const struct sockaddr_storage *src, const struct sockaddr_storage *want)
{
  gboolean same = src->ss_family == want->ss_family;
  if (same && src->ss_family == AF_INET)
    same = ((const struct sockaddr_in *) src)->sin_addr.s_addr ==
           ((const struct sockaddr_in *) want)->sin_addr.s_addr;
  else if (same)
    same = memcmp(&((const struct sockaddr_in6 *) src)->sin6_addr,
                  &((const struct sockaddr_in6 *) want)->sin6_addr, sizeof(struct in6_addr)) == 0;
  if (!same) {
    char got_s[INET6_ADDRSTRLEN + 32], want_s[INET6_ADDRSTRLEN + 32];
    g_error("CONNECT_REQUEST src is %s, expected %s: a connection from device '%s' to its own "
            "first address (caps.addrs[0]) must come from that address",
            addr_text(src, got_s, sizeof(got_s)), addr_text(want, want_s, sizeof(want_s)),
            f->dev_name);
  }
}

/* Both sides, unconnected, and a listener on a fresh port. */
typedef struct {
  cert_side_t a, p;
  rnicpi_listen_t *lst;
  uint32_t port;
  rnicpi_addr_t dst;
} cm_setup_t;

static gboolean
cm_open(cert_t *f, cm_setup_t *s)
{
  memset(s, 0, sizeof(*s));
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return FALSE;
  cert_side_new(f, &s->a, A_CTX, 64, NULL);
  cert_side_new(f, &s->p, P_CTX, 64, NULL);
  s->port = cert_listen(f, LISTEN_CTX, &s->lst);
  g_assert_nonnull(s->lst);
  g_assert_true(s->lst->dev == f->dev);
  g_assert_cmphex(s->lst->al_ctx, ==, LISTEN_CTX);
  cert_addr(f, s->port, &s->dst);
  return TRUE;
}

static void
cm_close(cm_setup_t *s)
{
  if (s->lst != NULL)
    cert_ok(CMV->unlisten(s->lst));
  cert_side_free(&s->a);
  cert_side_free(&s->p);
}

static void
test_cm_listen_twice(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.listen: a second listener on a port already listened on is "
                 "RNICPI_EEXIST; after unlisten the port can be listened on again");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  rnicpi_listen_t *l1 = NULL, *l2 = NULL;
  uint32_t port = cert_listen(f, 1, &l1);
  cert_cmpst(CMV->listen(f->dev, port, 2, &l2), RNICPI_EEXIST);
  g_assert_null(l2);
  cert_ok(CMV->unlisten(l1));
  cert_ok(CMV->listen(f->dev, port, 3, &l2));
  cert_ok(CMV->unlisten(l2));
}

static void
test_cm_connect_accept(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect/accept: the listener gets CONNECT_REQUEST with the port, the "
                 "device's own address as source, the private data, the requested IRD/ORD and a "
                 "conn_id; after accept both QPs get ESTABLISHED (the active one with the "
                 "accept's private data) with negotiated IRD/ORD, and both are RTS");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  const rnicpi_caps_t *c = &f->caps;
  uint8_t req_pd[RNICPI_MAX_PDATA], acc_pd[RNICPI_MAX_PDATA];
  uint32_t req_len = cert_min(32, c->pdata_connect), acc_len = cert_min(40, c->pdata_accept);
  cert_pdata_fill(req_pd, req_len, 0x21);
  cert_pdata_fill(acc_pd, acc_len, 0x42);

  rnicpi_conn_param_t act = { .pdata = req_pd, .pdata_len = req_len,
                              .ird = cert_min(4, c->max_ird), .ord = cert_min(3, c->max_ord) };
  cert_ok(CMV->connect(s.a.qp, &s.dst, &act));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  g_assert_cmpuint(req->port, ==, s.port);
  g_assert_cmpuint(req->ird, ==, act.ird);
  g_assert_cmpuint(req->ord, ==, act.ord);
  g_assert_true(req->src.sa.ss_family == AF_INET || req->src.sa.ss_family == AF_INET6);
  assert_source(f, &req->src.sa, &s.dst.sa);
  pdata_check(req, req_len, 0x21);
  g_assert_cmpint(QUE->qp_state(s.a.qp), !=, RNICPI_QPS_RTS);

  rnicpi_conn_param_t pas = { .pdata = acc_pd, .pdata_len = acc_len,
                              .ird = cert_min(2, c->max_ird), .ord = cert_min(1, c->max_ord) };
  cert_ok(CMV->accept(s.p.qp, req->conn_id, &pas));
  g_autofree rnicpi_cm_event_t *ea = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  g_autofree rnicpi_cm_event_t *ep = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, P_CTX);
  pdata_check(ea, acc_len, 0x42);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_RTS);

  /* No side may read more than the other lets in. */
  g_assert_cmpuint(ea->ord, <=, pas.ird);
  g_assert_cmpuint(ep->ord, <=, act.ird);
  g_assert_cmpuint(ea->ord, ==, ep->ird);
  g_assert_cmpuint(ep->ord, ==, ea->ird);
  if (c->features & RNICPI_CAP_IRD_ORD_NEGOTIATED) {
    /* Each direction settles to what both ends can do. */
    g_assert_cmpuint(ea->ord, ==, MIN(act.ord, pas.ird));
    g_assert_cmpuint(ea->ird, ==, MIN(act.ird, pas.ord));
  }
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, P_CTX);
  cm_close(&s);
}

/* Whether @sa is one of @f's device's addresses (the port aside). */
static gboolean
device_lists(cert_t *f, const struct sockaddr_storage *sa)
{
  for (uint32_t i = 0; i < MIN(f->caps.num_addrs, (uint32_t) G_N_ELEMENTS(f->caps.addrs)); i++) {
    const struct sockaddr_storage *a = &f->caps.addrs[i];
    if (a->ss_family != sa->ss_family)
      continue;
    if (a->ss_family == AF_INET && ((const struct sockaddr_in *) a)->sin_addr.s_addr ==
                                       ((const struct sockaddr_in *) sa)->sin_addr.s_addr)
      return TRUE;
    if (a->ss_family == AF_INET6 && memcmp(&((const struct sockaddr_in6 *) a)->sin6_addr,
                                           &((const struct sockaddr_in6 *) sa)->sin6_addr,
                                           sizeof(struct in6_addr)) == 0)
      return TRUE;
  }
  return FALSE;
}

static void
test_cm_loopback(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect to 127.0.0.1 and the listener's port: this host's listener on "
                 "the device gets CONNECT_REQUEST, from 127.0.0.1 or one of the device's "
                 "addresses, with the private data; after accept both QPs are ESTABLISHED and a "
                 "Send lands (a device that cannot reach the loopback connects to its own "
                 "address)");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  rnicpi_addr_t lo;
  memset(&lo, 0, sizeof(lo));
  struct sockaddr_in *lo4 = (struct sockaddr_in *) &lo.sa;
  lo4->sin_family = AF_INET;
  lo4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  lo4->sin_port = htons((uint16_t) s.port);
  uint8_t req_pd[RNICPI_MAX_PDATA];
  uint32_t req_len = cert_min(16, f->caps.pdata_connect);
  cert_pdata_fill(req_pd, req_len, 0x7f);
  rnicpi_conn_param_t act = { .pdata = req_pd, .pdata_len = req_len, .ird = 1, .ord = 1 };
  cert_ok(CMV->connect(s.a.qp, &lo, &act));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  g_assert_cmpuint(req->port, ==, s.port);
  pdata_check(req, req_len, 0x7f);
  if (!rnicpi_addr_is_loopback((const struct sockaddr *) &req->src.sa) && !device_lists(f, &req->src.sa)) {
    char got[INET6_ADDRSTRLEN + 32];
    g_error("CONNECT_REQUEST of a connect to 127.0.0.1 comes from %s: neither the loopback nor an "
            "address of device '%s'", addr_text(&req->src.sa, got, sizeof(got)), f->dev_name);
  }
  rnicpi_conn_param_t pas = { .ird = 1, .ord = 1 };
  cert_ok(CMV->accept(s.p.qp, req->conn_id, &pas));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, A_CTX));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, P_CTX));

  cert_buf_t src, dst;
  cert_buf_new(s.a.pd, &src, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_new(s.p.pd, &dst, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_fill(&src, 0x7e);
  cert_post_recv(s.p.qp, &dst, 0, 64, 0x7e0);
  cert_post_send(s.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0x7e1, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(s.p.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0x7e0);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, 64);
  cert_buf_check(&dst, 0, 64, 0x7e);
  wc = cert_wc(s.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x7e1);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cm_close(&s);
}

static void
test_cm_reject(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.reject: the active QP gets REJECTED with the reject's private data; the "
                 "request is gone afterwards (accept is RNICPI_ENOENT) and the passive QP was "
                 "never touched");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  uint8_t rej_pd[RNICPI_MAX_PDATA];
  uint32_t rej_len = cert_min(24, f->caps.pdata_reject);
  cert_pdata_fill(rej_pd, rej_len, 0x77);
  rnicpi_conn_param_t act = { .ird = 1, .ord = 1 };
  cert_ok(CMV->connect(s.a.qp, &s.dst, &act));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  cert_ok(CMV->reject(f->dev, req->conn_id, rej_pd, rej_len));
  g_autofree rnicpi_cm_event_t *rej = cert_wait_cm(f, RNICPI_CM_REJECTED, A_CTX);
  pdata_check(rej, rej_len, 0x77);
  g_assert_cmpint(QUE->qp_state(s.a.qp), !=, RNICPI_QPS_RTS);

  rnicpi_conn_param_t pas = { .ird = 1, .ord = 1 };
  cert_cmpst(CMV->accept(s.p.qp, req->conn_id, &pas), RNICPI_ENOENT);
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_IDLE);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  cm_close(&s);
}

static void
test_cm_request_cancelled(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a pending connection request whose requester goes away (its queue pair "
                 "destroyed) before the listener answers: the listener gets exactly one "
                 "REQUEST_CANCELLED with its listen_ctx and the request's conn_id, and an accept "
                 "of that conn_id afterwards fails and connects nothing");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  rnicpi_conn_param_t act = { .ird = 1, .ord = 1 };
  cert_ok(CMV->connect(s.a.qp, &s.dst, &act));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  /* The requester goes away: its queue pair, not only its state. */
  cert_ok(QUE->qp_destroy(s.a.qp));
  s.a.qp = NULL;
  g_autofree rnicpi_cm_event_t *can = cert_wait_cm(f, RNICPI_CM_REQUEST_CANCELLED, LISTEN_CTX);
  g_assert_cmphex(can->listen_ctx, ==, LISTEN_CTX);
  g_assert_cmphex(can->conn_id, ==, req->conn_id);
  cert_assert_no_cm(f, RNICPI_CM_REQUEST_CANCELLED, LISTEN_CTX);

  rnicpi_conn_param_t pas = { .ird = 1, .ord = 1 };
  rnicpi_status_t st = CMV->accept(s.p.qp, req->conn_id, &pas);
  g_test_message("accept of the cancelled request: %s", rnicpi_status_name(st));
  g_assert_cmpstr(rnicpi_status_name(st), !=, rnicpi_status_name(RNICPI_OK));
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, P_CTX);
  g_assert_cmpint(QUE->qp_state(s.p.qp), !=, RNICPI_QPS_RTS);
  cm_close(&s);
}

static void
test_cm_unreachable(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect: to a port of the device's address nobody listens on, the QP "
                 "gets UNREACHABLE with reason NO_LISTENER");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  /* The listener's port plus one was never listened on in this run. */
  uint32_t port = cert_port();
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  rnicpi_conn_param_t act = { .ird = 1, .ord = 1, .timeout_us = 2000000 };
  cert_ok(CMV->connect(s.a.qp, &dst, &act));
  g_autofree rnicpi_cm_event_t *ev = cert_wait_cm(f, RNICPI_CM_UNREACHABLE, A_CTX);
  g_assert_cmpint(ev->reason, ==, RNICPI_CM_REASON_NO_LISTENER);
  g_assert_cmpint(QUE->qp_state(s.a.qp), !=, RNICPI_QPS_RTS);
  cert_assert_no_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  cm_close(&s);
}

static void
test_cm_disconnect(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.disconnect: both QPs get DISCONNECTED once (the peer with the private "
                 "data), enter ERROR, and their posted receives complete flushed exactly once");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  rnicpi_conn_param_t cp = { .ird = 1, .ord = 1 };
  cert_ok(CMV->connect(s.a.qp, &s.dst, &cp));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  cert_ok(CMV->accept(s.p.qp, req->conn_id, &cp));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, A_CTX));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, P_CTX));

  cert_buf_t ba, bp;
  cert_buf_new(s.a.pd, &ba, 256, RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_new(s.p.pd, &bp, 256, RNICPI_ACCESS_LOCAL_WRITE);
  uint64_t ida[3] = { 0xa1, 0xa2, 0xa3 }, idp[2] = { 0xb1, 0xb2 };
  for (int i = 0; i < 3; i++)
    cert_post_recv(s.a.qp, &ba, (size_t) i * 64, 64, ida[i]);
  for (int i = 0; i < 2; i++)
    cert_post_recv(s.p.qp, &bp, (size_t) i * 64, 64, idp[i]);

  uint8_t dis_pd[RNICPI_MAX_PDATA];
  uint32_t dis_len = cert_min(16, f->caps.pdata_disconnect);
  cert_pdata_fill(dis_pd, dis_len, 0x99);
  cert_ok(CMV->disconnect(s.a.qp, dis_pd, dis_len));
  g_free(cert_wait_cm(f, RNICPI_CM_DISCONNECTED, A_CTX));
  g_autofree rnicpi_cm_event_t *dp = cert_wait_cm(f, RNICPI_CM_DISCONNECTED, P_CTX);
  pdata_check(dp, dis_len, 0x99);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_ERROR);
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_ERROR);
  cert_expect_flushed(s.a.rcq, A_CTX, ida, 3);
  cert_expect_flushed(s.p.rcq, P_CTX, idp, 2);
  cert_assert_no_cm(f, RNICPI_CM_DISCONNECTED, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_DISCONNECTED, P_CTX);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, P_CTX);

  cert_buf_free(&ba);
  cert_buf_free(&bp);
  cm_close(&s);
}


/* Two receives (@ida) posted on the active side into @ba, then a connect
 * (IRD 1, ORD 1, @timeout_us) to the listener: the request is pending when
 * it returns. */
static void
cm_connect_with_recvs(cm_setup_t *s, cert_buf_t *ba, const uint64_t ida[2], uint64_t timeout_us)
{
  cert_buf_new(s->a.pd, ba, 256, RNICPI_ACCESS_LOCAL_WRITE);
  for (int i = 0; i < 2; i++)
    cert_post_recv(s->a.qp, ba, (size_t) i * 64, 64, ida[i]);
  rnicpi_conn_param_t act = { .ird = 1, .ord = 1, .timeout_us = timeout_us };
  cert_ok(CMV->connect(s->a.qp, &s->dst, &act));
}

static void
test_cm_disconnect_pending(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.disconnect of a queue pair whose connect the listener has not answered: "
                 "it returns RNICPI_OK, the queue pair gets exactly one DISCONNECTED and enters "
                 "ERROR, its posted receives complete flushed exactly once, and the listener's "
                 "request is withdrawn (an accept of it afterwards fails and establishes nothing)");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  cert_buf_t ba;
  uint64_t ida[2] = { 0xd1, 0xd2 };
  cm_connect_with_recvs(&s, &ba, ida, 0);
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  /* The requester gives up before the answer. */
  cert_ok(CMV->disconnect(s.a.qp, NULL, 0));
  g_free(cert_wait_cm(f, RNICPI_CM_DISCONNECTED, A_CTX));
  cert_wait_state(s.a.qp, RNICPI_QPS_ERROR);
  cert_expect_flushed(s.a.rcq, A_CTX, ida, 2);

  rnicpi_conn_param_t pas = { .ird = 1, .ord = 1 };
  rnicpi_status_t st = CMV->accept(s.p.qp, req->conn_id, &pas);
  g_test_message("accept of the withdrawn request: %s", rnicpi_status_name(st));
  /* A listener that learns of the withdrawal only from the wire may take
   * the accept; the accepted side then never establishes. */
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, P_CTX);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_DISCONNECTED, A_CTX);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_ERROR);
  cert_assert_cq_quiet(s.a.rcq);
  cert_buf_free(&ba);
  cm_close(&s);
}

/* The timeout of a connect nobody answers: short, so the test takes about
 * a second, and long enough that the request reaches the listener first. */
#define UNANSWERED_TIMEOUT_US 500000

static void
test_cm_unanswered_timeout(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect with timeout_us 0.5 s to a listener of the device whose "
                 "consumer never answers the request: the requester gets exactly one "
                 "UNREACHABLE, reason RNICPI_CM_REASON_TIMEOUT, no sooner than the timeout "
                 "(never ESTABLISHED or BROKEN), its queue pair enters ERROR and its receives "
                 "complete flushed exactly once; an accept of the request afterwards "
                 "establishes nothing");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  cert_buf_t ba;
  uint64_t ida[2] = { 0x8a1, 0x8a2 };
  gint64 start = g_get_monotonic_time();
  cm_connect_with_recvs(&s, &ba, ida, UNANSWERED_TIMEOUT_US);
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  /* The listener's consumer does nothing with it. */
  g_autofree rnicpi_cm_event_t *ev = cert_poll_cm(f, RNICPI_CM_UNREACHABLE, A_CTX, CERT_TIMEOUT_MS);
  gint64 took_ms = (g_get_monotonic_time() - start) / 1000;
  if (ev == NULL)
    g_test_message("no UNREACHABLE within %d ms of a connect with a timeout of %d ms whose "
                   "request the listener never answered: the provider ignores timeout_us",
                   CERT_TIMEOUT_MS, UNANSWERED_TIMEOUT_US / 1000);
  g_assert_nonnull(ev);
  g_test_message("UNREACHABLE reason %d after %" G_GINT64_FORMAT " ms", ev->reason, took_ms);
  g_assert_cmpint(ev->reason, ==, RNICPI_CM_REASON_TIMEOUT);
  g_assert_cmpint(took_ms, >=, UNANSWERED_TIMEOUT_US / 1000 - 1);
  cert_wait_state(s.a.qp, RNICPI_QPS_ERROR);
  cert_expect_flushed(s.a.rcq, A_CTX, ida, 2);
  cert_assert_no_cm(f, RNICPI_CM_UNREACHABLE, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, A_CTX);

  /* The requester gave up: a late answer reaches nobody.  A listener that
   * learns of it only from the wire may take the accept; the accepted side
   * then never establishes. */
  rnicpi_conn_param_t pas = { .ird = 1, .ord = 1 };
  rnicpi_status_t st = CMV->accept(s.p.qp, req->conn_id, &pas);
  g_test_message("accept after the requester gave up: %s", rnicpi_status_name(st));
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, P_CTX);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_ERROR);
  g_assert_cmpint(QUE->qp_state(s.p.qp), !=, RNICPI_QPS_RTS);
  cert_assert_cq_quiet(s.a.rcq);
  cert_buf_free(&ba);
  cm_close(&s);
}

/* @s opened, a three-way connect (IRD 1, ORD 1) accepted by the passive
 * side with @pd (@len bytes): the active side's CONNECT_REPLY (g_free it),
 * or NULL and nothing open on a device without three-way handshakes. */
static rnicpi_cm_event_t *
cm_three_way_reply(cert_t *f, cm_setup_t *s, const uint8_t *pd, uint32_t len)
{
  if (!cm_open(f, s))
    return NULL;
  if (!cert_require(f, RNICPI_CAP_THREE_WAY)) {
    cm_close(s);
    return NULL;
  }
  rnicpi_conn_param_t act = { .ird = 1, .ord = 1, .three_way = true };
  cert_ok(CMV->connect(s->a.qp, &s->dst, &act));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  rnicpi_conn_param_t pas = { .pdata = pd, .pdata_len = len, .ird = 1, .ord = 1 };
  cert_ok(CMV->accept(s->p.qp, req->conn_id, &pas));
  return cert_wait_cm(f, RNICPI_CM_CONNECT_REPLY, A_CTX);
}

static void
test_cm_three_way(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops three-way handshake: after the passive accept the active QP gets "
                 "CONNECT_REPLY with the accept's private data and nobody is ESTABLISHED; the "
                 "active accept of the reply establishes both");
  cm_setup_t s;
  uint8_t acc_pd[RNICPI_MAX_PDATA];
  uint32_t acc_len = cert_min(20, f->caps.pdata_accept);
  cert_pdata_fill(acc_pd, acc_len, 0x35);
  g_autofree rnicpi_cm_event_t *rep = cm_three_way_reply(f, &s, acc_pd, acc_len);
  if (rep == NULL)
    return;
  pdata_check(rep, acc_len, 0x35);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, P_CTX);
  g_assert_cmpint(QUE->qp_state(s.a.qp), !=, RNICPI_QPS_RTS);

  rnicpi_conn_param_t rtu = { .ird = 1, .ord = 1 };
  cert_ok(CMV->accept(s.a.qp, rep->conn_id, &rtu));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, A_CTX));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, P_CTX));
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_RTS);
  cm_close(&s);
}

static void
test_cm_three_way_reply_rejected(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops three-way handshake, the active consumer rejects the CONNECT_REPLY with "
                 "private data: the passive queue pair gets exactly one REJECTED with that data "
                 "and enters ERROR; the active side, which refused, gets no REJECTED; nobody is "
                 "ESTABLISHED or RTS");
  cm_setup_t s;
  g_autofree rnicpi_cm_event_t *rep = cm_three_way_reply(f, &s, NULL, 0);
  if (rep == NULL)
    return;
  uint8_t rej_pd[RNICPI_MAX_PDATA];
  uint32_t rej_len = cert_min(24, f->caps.pdata_reject);
  cert_pdata_fill(rej_pd, rej_len, 0x6b);
  cert_ok(CMV->reject(f->dev, rep->conn_id, rej_pd, rej_len));
  g_autofree rnicpi_cm_event_t *rej = cert_wait_cm(f, RNICPI_CM_REJECTED, P_CTX);
  pdata_check(rej, rej_len, 0x6b);
  cert_wait_state(s.p.qp, RNICPI_QPS_ERROR);
  cert_assert_no_cm(f, RNICPI_CM_REJECTED, P_CTX);
  cert_assert_no_cm(f, RNICPI_CM_REJECTED, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, P_CTX);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  g_assert_cmpint(QUE->qp_state(s.a.qp), !=, RNICPI_QPS_RTS);
  cm_close(&s);
}

static void
test_cm_pdata_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect/accept/reject: private data one byte above caps.pdata_connect, "
                 "pdata_accept or pdata_reject is refused with RNICPI_ELIMIT and changes nothing; "
                 "the request can still be accepted");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  const rnicpi_caps_t *c = &f->caps;
  uint8_t big[RNICPI_MAX_PDATA + 1];
  memset(big, 0x3c, sizeof(big));
  rnicpi_conn_param_t act = { .pdata = big, .pdata_len = c->pdata_connect + 1, .ird = 1, .ord = 1 };
  cert_cmpst(CMV->connect(s.a.qp, &s.dst, &act), RNICPI_ELIMIT);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_IDLE);
  cert_assert_no_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);

  act.pdata_len = 0;
  cert_ok(CMV->connect(s.a.qp, &s.dst, &act));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  cert_cmpst(CMV->reject(f->dev, req->conn_id, big, c->pdata_reject + 1), RNICPI_ELIMIT);
  rnicpi_conn_param_t pas = { .pdata = big, .pdata_len = c->pdata_accept + 1, .ird = 1, .ord = 1 };
  cert_cmpst(CMV->accept(s.p.qp, req->conn_id, &pas), RNICPI_ELIMIT);
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_IDLE);
  pas.pdata_len = 0;
  cert_ok(CMV->accept(s.p.qp, req->conn_id, &pas));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, A_CTX));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, P_CTX));
  cm_close(&s);
}

static void
test_cm_pdata_at_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect/accept/reject with exactly caps.pdata_connect, pdata_accept and "
                 "pdata_reject bytes of private data (each limit its own: InfiniBand's REQ holds "
                 "92, its REP 196, its REJ 148): each call succeeds and the other side's event "
                 "carries every byte");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  const rnicpi_caps_t *c = &f->caps;
  uint8_t req_pd[RNICPI_MAX_PDATA], acc_pd[RNICPI_MAX_PDATA], rej_pd[RNICPI_MAX_PDATA];
  cert_pdata_fill(req_pd, c->pdata_connect, 0x13);
  cert_pdata_fill(acc_pd, c->pdata_accept, 0x57);
  cert_pdata_fill(rej_pd, c->pdata_reject, 0x6b);

  /* Rejected at the reject's limit first: the passive QP stays unused. */
  rnicpi_conn_param_t act = { .pdata = req_pd, .pdata_len = c->pdata_connect, .ird = 1, .ord = 1 };
  cert_ok(CMV->connect(s.a.qp, &s.dst, &act));
  g_autofree rnicpi_cm_event_t *req1 = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  pdata_check(req1, c->pdata_connect, 0x13);
  cert_ok(CMV->reject(f->dev, req1->conn_id, rej_pd, c->pdata_reject));
  g_autofree rnicpi_cm_event_t *rej = cert_wait_cm(f, RNICPI_CM_REJECTED, A_CTX);
  pdata_check(rej, c->pdata_reject, 0x6b);

  /* A fresh active QP, accepted at the accept's limit. */
  cert_side_free(&s.a);
  cert_side_new(f, &s.a, A_CTX, 64, NULL);
  cert_ok(CMV->connect(s.a.qp, &s.dst, &act));
  g_autofree rnicpi_cm_event_t *req2 = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  pdata_check(req2, c->pdata_connect, 0x13);
  rnicpi_conn_param_t pas = { .pdata = acc_pd, .pdata_len = c->pdata_accept, .ird = 1, .ord = 1 };
  cert_ok(CMV->accept(s.p.qp, req2->conn_id, &pas));
  g_autofree rnicpi_cm_event_t *ea = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, P_CTX));
  pdata_check(ea, c->pdata_accept, 0x57);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_RTS);
  cm_close(&s);
}

static void
test_cm_pdata_limit_disconnect(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.disconnect: private data one byte above caps.pdata_disconnect is "
                 "refused with RNICPI_ELIMIT and leaves the connection up (no CM event on "
                 "either side, both queue pairs RTS, a Send then arrives); a disconnect within "
                 "the limit then ends it, the peer's DISCONNECTED carrying that private data");
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  const uint32_t lim = f->caps.pdata_disconnect;
  uint8_t big[RNICPI_MAX_PDATA + 1];
  cert_pdata_fill(big, sizeof(big), 0x29);
  cert_cmpst(CMV->disconnect(pr.a.qp, big, lim + 1), RNICPI_ELIMIT);
  for (int i = 0; i < 2; i++) {
    uint64_t ctx = i == 0 ? pr.a.ctx : pr.p.ctx;
    cert_assert_no_cm(f, RNICPI_CM_DISCONNECTED, ctx);
    cert_assert_no_cm(f, RNICPI_CM_BROKEN, ctx);
  }
  g_assert_cmpint(QUE->qp_state(pr.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(pr.p.qp), ==, RNICPI_QPS_RTS);

  /* Still connected: a Send arrives. */
  cert_buf_t src, dst;
  cert_buf_new(pr.a.pd, &src, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_new(pr.p.pd, &dst, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_fill(&src, 0x29);
  cert_post_recv(pr.p.qp, &dst, 0, 64, 0x29e0);
  cert_post_send(pr.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0x29e1, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(pr.p.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0x29e0);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, 64);
  cert_buf_check(&dst, 0, 64, 0x29);
  wc = cert_wc(pr.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x29e1);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);

  /* At the limit the disconnect is taken, and its bytes delivered. */
  cert_ok(CMV->disconnect(pr.a.qp, big, lim));
  g_free(cert_wait_cm(f, RNICPI_CM_DISCONNECTED, pr.a.ctx));
  g_autofree rnicpi_cm_event_t *dp = cert_wait_cm(f, RNICPI_CM_DISCONNECTED, pr.p.ctx);
  pdata_check(dp, lim, 0x29);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, pr.a.ctx);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, pr.p.ctx);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  cert_pair_free(&pr);
}

static void
test_cm_ird_ord_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect/accept: an IRD above caps.max_ird or an ORD above caps.max_ord "
                 "is refused with RNICPI_ELIMIT and changes nothing (the queue pair stays IDLE, "
                 "no request is sent); the same call within the limits then connects");
  const rnicpi_caps_t *c = &f->caps;
  if (c->max_ird == UINT32_MAX || c->max_ord == UINT32_MAX) {
    g_test_skip("the device names no IRD or ORD limit (UINT32_MAX)");
    return;
  }
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  rnicpi_conn_param_t over_ird = { .ird = c->max_ird + 1, .ord = cert_min(1, c->max_ord) };
  rnicpi_conn_param_t over_ord = { .ird = cert_min(1, c->max_ird), .ord = c->max_ord + 1 };
  cert_cmpst(CMV->connect(s.a.qp, &s.dst, &over_ird), RNICPI_ELIMIT);
  cert_cmpst(CMV->connect(s.a.qp, &s.dst, &over_ord), RNICPI_ELIMIT);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_IDLE);
  cert_assert_no_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);

  rnicpi_conn_param_t ok = { .ird = c->max_ird, .ord = c->max_ord };
  cert_ok(CMV->connect(s.a.qp, &s.dst, &ok));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  cert_cmpst(CMV->accept(s.p.qp, req->conn_id, &over_ird), RNICPI_ELIMIT);
  cert_cmpst(CMV->accept(s.p.qp, req->conn_id, &over_ord), RNICPI_ELIMIT);
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_IDLE);
  cert_ok(CMV->accept(s.p.qp, req->conn_id, &ok));
  g_autofree rnicpi_cm_event_t *ea = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  g_autofree rnicpi_cm_event_t *ep = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, P_CTX);
  /* What was settled stays within both devices' limits. */
  g_assert_cmpuint(ep->ird, <=, c->max_ird);
  g_assert_cmpuint(ea->ord, <=, ep->ird);
  cm_close(&s);
}

/* The ESTABLISHED event of the queue pair @ctx (@who for messages); when
 * none comes, the test fails naming the event that ended the connection
 * instead, if any. */
static rnicpi_cm_event_t *
cm_established(cert_t *f, uint64_t ctx, const char *who)
{
  rnicpi_cm_event_t *ev = cert_poll_cm(f, RNICPI_CM_ESTABLISHED, ctx, CERT_TIMEOUT_MS);
  if (ev != NULL)
    return ev;
  static const rnicpi_cm_event_type_t ends[] = { RNICPI_CM_UNREACHABLE, RNICPI_CM_REJECTED,
                                                 RNICPI_CM_BROKEN };
  static const char *const names[] = { "UNREACHABLE", "REJECTED", "BROKEN" };
  for (size_t i = 0; i < G_N_ELEMENTS(ends); i++) {
    g_autofree rnicpi_cm_event_t *end = cert_poll_cm(f, ends[i], ctx, 0);
    if (end != NULL)
      g_test_message("the %s got %s (reason %d), not ESTABLISHED: the connection failed while "
                     "IRD and ORD were settled", who, names[i], end->reason);
  }
  g_test_message("no ESTABLISHED for the %s within %d ms", who, CERT_TIMEOUT_MS);
  g_assert_nonnull(ev);
  return NULL;
}

/* Reads the responder posts back to back, and the bytes of each: more
 * than the initiator's IRD of 2 several times over, each long enough that
 * the initiator is still answering one when the next would arrive. */
#define RESP_READS 8
#define RESP_READ_LEN (256 * 1024)


/* Two sides whose queue pairs are each made for the IRD and ORD its end
 * then asks (@act, @pas), and a listener for the passive one. */
static void
cm_open_ird_ord(cert_t *f, cm_setup_t *s, const rnicpi_conn_param_t *act,
                const rnicpi_conn_param_t *pas)
{
  rnicpi_qp_attr_t aa = cert_qp_attr(f, NULL, NULL), pa = aa;
  aa.ird = act->ird;
  aa.ord = act->ord;
  pa.ird = pas->ird;
  pa.ord = pas->ord;
  memset(s, 0, sizeof(*s));
  cert_side_new(f, &s->a, A_CTX, 64, &aa);
  cert_side_new(f, &s->p, P_CTX, 64, &pa);
  s->port = cert_listen(f, LISTEN_CTX, &s->lst);
  cert_addr(f, s->port, &s->dst);
}

static void
test_cm_ird_ord_responder(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.connect/accept with asymmetric Read credit (initiator IRD 2 ORD 5, "
                 "responder asking IRD 7 ORD 7): the responder's ORD settles within the "
                 "initiator's IRD and its IRD covers the initiator's ORD (with "
                 "ird-ord-negotiated: exactly 2 and 5), each side's ORD is the other's IRD; 8 "
                 "RDMA Reads the responder then posts back to back all complete successfully, "
                 "in order, with the right bytes: its requester holds back what the initiator's "
                 "IRD cannot take, and the connection stays up");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  const rnicpi_caps_t *c = &f->caps;
  if (!cert_require_reads(f))
    return;
  rnicpi_conn_param_t act = { .ird = cert_min(2, c->max_ird), .ord = cert_min(5, c->max_ord) };
  rnicpi_conn_param_t pas = { .ird = cert_min(7, c->max_ird), .ord = cert_min(7, c->max_ord) };
  cm_setup_t s;
  cm_open_ird_ord(f, &s, &act, &pas);

  cert_ok(CMV->connect(s.a.qp, &s.dst, &act));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  g_assert_cmpuint(req->ird, ==, act.ird);
  g_assert_cmpuint(req->ord, ==, act.ord);
  cert_ok(CMV->accept(s.p.qp, req->conn_id, &pas));
  g_autofree rnicpi_cm_event_t *ea = cm_established(f, A_CTX, "initiator");
  g_autofree rnicpi_cm_event_t *ep = cm_established(f, P_CTX, "responder");
  g_test_message("asked: initiator IRD %u ORD %u, responder IRD %u ORD %u; settled: initiator "
                 "IRD %u ORD %u, responder IRD %u ORD %u", act.ird, act.ord, pas.ird, pas.ord,
                 ea->ird, ea->ord, ep->ird, ep->ord);
  /* RFC 6581 9.1: no end may have more Reads out than the other takes in. */
  g_assert_cmpuint(ep->ord, <=, act.ird);
  g_assert_cmpuint(ea->ord, <=, ep->ird);
  g_assert_cmpuint(ep->ord, ==, ea->ird);
  g_assert_cmpuint(ea->ord, ==, ep->ird);
  if (c->features & RNICPI_CAP_IRD_ORD_NEGOTIATED) {
    /* Each direction settles to what both ends can do. */
    g_assert_cmpuint(ep->ord, ==, MIN(pas.ord, act.ird));
    g_assert_cmpuint(ep->ird, ==, MIN(pas.ird, act.ord));
  }

  cert_buf_t src, sink, hello, rb;
  cert_buf_new(s.a.pd, &src, (size_t) RESP_READS * RESP_READ_LEN,
               RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ);
  cert_buf_new(s.p.pd, &sink, (size_t) RESP_READS * RESP_READ_LEN, cert_sink_access(f));
  cert_buf_new(s.a.pd, &hello, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_new(s.p.pd, &rb, 64, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE);
  cert_buf_fill(&src, 0x26);
  /* RFC 5044 7.1.2: the initiator speaks first. */
  cert_post_recv(s.p.qp, &rb, 0, 64, 0x5e0);
  cert_post_send(s.a.qp, RNICPI_WR_SEND, &hello, 0, 64, 0x5e1, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(s.p.rcq);
  g_assert_cmphex(wc.wr_id, ==, 0x5e0);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  wc = cert_wc(s.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x5e1);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);

  /* Read i takes slice RESP_READS - 1 - i: a Response placed in another
   * Read's sink shows. */
  for (int i = 0; i < RESP_READS; i++)
    cert_post_send(s.p.qp, RNICPI_WR_RDMA_READ, &sink, (size_t) i * RESP_READ_LEN, RESP_READ_LEN,
                   0x600 + (uint64_t) i, RNICPI_WR_SIGNALED,
                   cert_raddr(&src, (size_t) (RESP_READS - 1 - i) * RESP_READ_LEN), src.mr->rkey);
  rnicpi_wc_t rwc[RESP_READS];
  int got = cert_poll(s.p.scq, rwc, RESP_READS, CERT_TIMEOUT_MS);
  for (int i = 0; i < got; i++)
    if (rwc[i].status != RNICPI_WC_SUCCESS || rwc[i].wr_id != 0x600 + (uint64_t) i)
      g_test_message("responder's Read completion %d: wr_id 0x%" G_GINT64_MODIFIER "x status %d",
                     i, rwc[i].wr_id, rwc[i].status);
  if (got < RESP_READS)
    g_test_message("%d of the responder's %d Reads completed (its ORD %u, the initiator's IRD "
                   "%u)", got, RESP_READS, ep->ord, act.ird);
  g_assert_cmpint(got, ==, RESP_READS);
  for (int i = 0; i < RESP_READS; i++) {
    g_assert_cmphex(rwc[i].wr_id, ==, 0x600 + (uint64_t) i);
    g_assert_cmpint(rwc[i].status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpint(rwc[i].opcode, ==, RNICPI_WC_RDMA_READ);
    g_assert_cmpuint(rwc[i].byte_len, ==, RESP_READ_LEN);
    g_assert_cmpmem(sink.data + (size_t) i * RESP_READ_LEN, RESP_READ_LEN,
                    src.data + (size_t) (RESP_READS - 1 - i) * RESP_READ_LEN, RESP_READ_LEN);
  }
  cert_buf_check_guards(&sink);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_RTS);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, P_CTX);
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_QP_REMOTE_ERR, P_CTX, 0));
  cert_assert_cq_quiet(s.p.scq);
  cert_assert_cq_quiet(s.a.rcq);

  cert_buf_free(&src);
  cert_buf_free(&sink);
  cert_buf_free(&hello);
  cert_buf_free(&rb);
  cm_close(&s);
}

/* RDMA Reads the active side posts back to back once the three-way
 * handshake settled its ORD, and the bytes of each. */
#define THREE_WAY_READ_LEN 4096

static void
test_cm_three_way_ird_ord(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops three-way handshake with asymmetric Read credit (active IRD 2 ORD 6, "
                 "passive IRD 3 ORD 7): the CONNECT_REPLY offers the active side an ORD within "
                 "the passive side's IRD and an IRD within its ORD (with ird-ord-negotiated: "
                 "exactly 3 and 2); the active accept of the reply settles no more, and that "
                 "many RDMA Reads posted back to back then complete successfully, in order");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS) || !cert_require(f, RNICPI_CAP_THREE_WAY))
    return;
  const rnicpi_caps_t *c = &f->caps;
  if (!cert_require_reads(f))
    return;
  rnicpi_conn_param_t act = { .ird = cert_min(2, c->max_ird), .ord = cert_min(6, c->max_ord),
                              .three_way = true };
  rnicpi_conn_param_t pas = { .ird = cert_min(3, c->max_ird), .ord = cert_min(7, c->max_ord) };
  cm_setup_t s;
  cm_open_ird_ord(f, &s, &act, &pas);

  cert_ok(CMV->connect(s.a.qp, &s.dst, &act));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX);
  cert_ok(CMV->accept(s.p.qp, req->conn_id, &pas));
  g_autofree rnicpi_cm_event_t *rep = cert_wait_cm(f, RNICPI_CM_CONNECT_REPLY, A_CTX);
  g_test_message("asked: active IRD %u ORD %u, passive IRD %u ORD %u; the reply offers the "
                 "active side IRD %u ORD %u", act.ird, act.ord, pas.ird, pas.ord, rep->ird,
                 rep->ord);
  /* RFC 6581 9.1 (and IB's REP alike): no end may have more Reads out
   * than the other takes in. */
  g_assert_cmpuint(rep->ord, <=, pas.ird);
  g_assert_cmpuint(rep->ord, <=, act.ord);
  g_assert_cmpuint(rep->ird, <=, pas.ord);
  g_assert_cmpuint(rep->ird, <=, act.ird);
  if (c->features & RNICPI_CAP_IRD_ORD_NEGOTIATED) {
    g_assert_cmpuint(rep->ord, ==, MIN(act.ord, pas.ird));
    g_assert_cmpuint(rep->ird, ==, MIN(act.ird, pas.ord));
  }

  rnicpi_conn_param_t rtu = { .ird = rep->ird, .ord = rep->ord };
  cert_ok(CMV->accept(s.a.qp, rep->conn_id, &rtu));
  g_autofree rnicpi_cm_event_t *ea = cm_established(f, A_CTX, "active side");
  g_autofree rnicpi_cm_event_t *ep = cm_established(f, P_CTX, "passive side");
  g_test_message("settled: active IRD %u ORD %u, passive IRD %u ORD %u", ea->ird, ea->ord,
                 ep->ird, ep->ord);
  g_assert_cmpuint(ea->ord, <=, rep->ord);
  g_assert_cmpuint(ea->ord, <=, pas.ird);
  g_assert_cmpuint(ea->ord, <=, ep->ird);

  /* As many Reads as the active side may have out, back to back. */
  const uint32_t nreads = ea->ord;
  cert_buf_t src, sink;
  cert_buf_new(s.p.pd, &src, (size_t) MAX(nreads, 1) * THREE_WAY_READ_LEN,
               RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ);
  cert_buf_new(s.a.pd, &sink, (size_t) MAX(nreads, 1) * THREE_WAY_READ_LEN, cert_sink_access(f));
  cert_buf_fill(&src, 0x85);
  for (uint32_t i = 0; i < nreads; i++)
    cert_post_send(s.a.qp, RNICPI_WR_RDMA_READ, &sink, (size_t) i * THREE_WAY_READ_LEN,
                   THREE_WAY_READ_LEN, 0x850 + (uint64_t) i, RNICPI_WR_SIGNALED,
                   cert_raddr(&src, (size_t) i * THREE_WAY_READ_LEN), src.mr->rkey);
  for (uint32_t i = 0; i < nreads; i++) {
    rnicpi_wc_t wc = cert_wc(s.a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0x850 + (uint64_t) i);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
    g_assert_cmpuint(wc.byte_len, ==, THREE_WAY_READ_LEN);
  }
  cert_buf_check(&sink, 0, (size_t) nreads * THREE_WAY_READ_LEN, 0x85);
  cert_buf_check_guards(&sink);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_RTS);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, P_CTX);
  cert_assert_cq_quiet(s.a.scq);
  cert_buf_free(&src);
  cert_buf_free(&sink);
  cm_close(&s);
}

/* A CQ_OVERFLOW event for @cq_ctx, if one arrives shortly. */
static rnicpi_async_event_t *
wait_async_quiet(cert_t *f, uint64_t cq_ctx)
{
  return cert_poll_async(f, RNICPI_ASYNC_CQ_OVERFLOW, cq_ctx, 0);
}

static void
test_cm_unlisten_pending(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.unlisten with 20 requests pending: each active QP gets UNREACHABLE; "
                 "every armed CQ that receives a completion gets its cq_notify upcall, and no "
                 "CQ within its depth reports RNICPI_ASYNC_CQ_OVERFLOW");
  enum { N = 20 };
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  cert_side_t side[N];
  cert_buf_t buf[N];
  rnicpi_listen_t *lst;
  rnicpi_addr_t dst;
  uint32_t port = cert_listen(f, LISTEN_CTX, &lst);
  cert_addr(f, port, &dst);
  for (int i = 0; i < N; i++) {
    cert_side_new(f, &side[i], 0x100000 + (uint64_t) i * 0x10, 16, NULL);
    cert_buf_new(side[i].pd, &buf[i], 64, RNICPI_ACCESS_LOCAL_WRITE);
    cert_post_recv(side[i].qp, &buf[i], 0, 64, 0x77);
    cert_ok(DAT->arm_cq(side[i].rcq));
    rnicpi_conn_param_t cp = { .ird = 1, .ord = 1 };
    cert_ok(CMV->connect(side[i].qp, &dst, &cp));
  }
  for (int i = 0; i < N; i++)
    g_free(cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX));
  cert_ok(CMV->unlisten(lst));
  for (int i = 0; i < N; i++)
    g_free(cert_wait_cm(f, RNICPI_CM_UNREACHABLE, side[i].ctx));
  g_usleep(CERT_QUIET_MS * 1000);
  for (int i = 0; i < N; i++) {
    rnicpi_wc_t wc;
    int n = cert_poll(side[i].rcq, &wc, 1, 0);
    if (n == 1) {
      g_test_message("QP %d: receive completed with status %d", i, wc.status);
      gboolean notified = cert_wait_notify(f, side[i].rcq->al_ctx, CERT_TIMEOUT_MS);
      g_autofree rnicpi_async_event_t *ovf = wait_async_quiet(f, side[i].rcq->al_ctx);
      if (ovf != NULL)
        g_test_message("QP %d: its CQ holds 1 entry of 16, yet RNICPI_ASYNC_CQ_OVERFLOW came%s",
                       i, notified ? "" : " instead of cq_notify");
      g_assert_null(ovf);
      g_assert_true(notified);
    }
  }
  for (int i = 0; i < N; i++) {
    cert_buf_free(&buf[i]);
    cert_side_free(&side[i]);
  }
}

static void
test_cm_unlisten_pending_error(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("cm_ops.unlisten with a request pending: the requester gets exactly one "
                 "UNREACHABLE (never BROKEN or ESTABLISHED), its queue pair enters ERROR and the "
                 "receives it posted before connecting complete flushed exactly once");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  cert_buf_t ba;
  uint64_t ida[2] = { 0x861, 0x862 };
  cm_connect_with_recvs(&s, &ba, ida, 0);
  g_free(cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, LISTEN_CTX));
  /* The listener goes away without answering (rnicpi.h, UNREACHABLE). */
  cert_ok(CMV->unlisten(s.lst));
  s.lst = NULL;
  g_free(cert_wait_cm(f, RNICPI_CM_UNREACHABLE, A_CTX));
  cert_wait_state(s.a.qp, RNICPI_QPS_ERROR);
  cert_expect_flushed(s.a.rcq, A_CTX, ida, 2);
  cert_assert_no_cm(f, RNICPI_CM_UNREACHABLE, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, A_CTX);
  cert_assert_no_cm(f, RNICPI_CM_ESTABLISHED, A_CTX);
  g_assert_cmpint(QUE->qp_state(s.a.qp), ==, RNICPI_QPS_ERROR);
  cert_buf_free(&ba);
  cm_close(&s);
}

static void
test_cm_no_event_after_end(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a connection ends with exactly one CM event per side: a queue pair never "
                 "connected gets none when qp_to_error moves it to ERROR; after an orderly "
                 "disconnect (one DISCONNECTED each), qp_to_error and qp_destroy of either side "
                 "raise no BROKEN and no second DISCONNECTED");
  cm_setup_t s;
  if (!cm_open(f, &s))
    return;
  /* Never connected. */
  cert_ok(QUE->qp_to_error(s.p.qp));
  g_assert_cmpint(QUE->qp_state(s.p.qp), ==, RNICPI_QPS_ERROR);
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, P_CTX);
  cert_assert_no_cm(f, RNICPI_CM_DISCONNECTED, P_CTX);
  cm_close(&s);

  /* After an orderly disconnect. */
  cert_pair_t pr;
  if (!cert_pair_open(f, &pr, NULL))
    return;
  cert_ok(CMV->disconnect(pr.a.qp, NULL, 0));
  g_free(cert_wait_cm(f, RNICPI_CM_DISCONNECTED, pr.a.ctx));
  g_free(cert_wait_cm(f, RNICPI_CM_DISCONNECTED, pr.p.ctx));
  cert_ok(QUE->qp_to_error(pr.a.qp));
  cert_ok(QUE->qp_to_error(pr.p.qp));
  cert_ok(QUE->qp_destroy(pr.a.qp));
  pr.a.qp = NULL;
  for (int i = 0; i < 2; i++) {
    uint64_t ctx = i == 0 ? pr.a.ctx : pr.p.ctx;
    cert_assert_no_cm(f, RNICPI_CM_BROKEN, ctx);
    cert_assert_no_cm(f, RNICPI_CM_DISCONNECTED, ctx);
  }
  cert_pair_free(&pr);
}

void
cert_register_cm(void)
{
  cert_add("/rnicpi/cm/listen-twice", test_cm_listen_twice);
  cert_add("/rnicpi/cm/connect-accept", test_cm_connect_accept);
  cert_add("/rnicpi/cm/loopback", test_cm_loopback);
  cert_add("/rnicpi/cm/reject", test_cm_reject);
  cert_add("/rnicpi/cm/unreachable", test_cm_unreachable);
  cert_add("/rnicpi/cm/request-cancelled", test_cm_request_cancelled);
  cert_add("/rnicpi/cm/disconnect-pending", test_cm_disconnect_pending);
  cert_add("/rnicpi/cm/unanswered-timeout", test_cm_unanswered_timeout);
  cert_add("/rnicpi/cm/disconnect", test_cm_disconnect);
  cert_add("/rnicpi/cm/three-way", test_cm_three_way);
  cert_add("/rnicpi/cm/three-way-ird-ord", test_cm_three_way_ird_ord);
  cert_add("/rnicpi/cm/three-way-reply-rejected", test_cm_three_way_reply_rejected);
  cert_add("/rnicpi/cm/pdata-limit", test_cm_pdata_limit);
  cert_add("/rnicpi/cm/pdata-at-limit", test_cm_pdata_at_limit);
  cert_add("/rnicpi/cm/pdata-limit-disconnect", test_cm_pdata_limit_disconnect);
  cert_add("/rnicpi/cm/no-event-after-end", test_cm_no_event_after_end);
  cert_add("/rnicpi/cm/ird-ord-limit", test_cm_ird_ord_limit);
  cert_add("/rnicpi/cm/ird-ord-responder", test_cm_ird_ord_responder);
  cert_add("/rnicpi/cm/unlisten-pending", test_cm_unlisten_pending);
  cert_add("/rnicpi/cm/unlisten-pending-error", test_cm_unlisten_pending_error);
}
