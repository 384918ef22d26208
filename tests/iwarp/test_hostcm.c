/*
 * The access layer's own connection services over a real TCP interface:
 * host connection policy (kAL) on connects and on requests reaching a
 * listener, and connects that end before a peer answers (timeout, cancel).
 * Run once with ITAPI_CM=host (the host-stack path: the access layer opens
 * the TCP connection and hands the socket to the provider) and once with
 * ITAPI_CM=provider; both must give the same events.
 *
 * The policy file is written before the first IT-API call, with ports this
 * host has free at that moment, and named by ITAPI_POLICY.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"

static uint16_t port_conn_denied; /* "deny connect 127.0.0.1 port P" */
static uint16_t port_acc_denied;  /* "deny accept 127.0.0.0/8 port P" */

/* A TCP port nothing on this host holds now. */
static uint16_t
probe_port(void)
{
  struct sockaddr_in a = { .sin_family = AF_INET };
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(bind(fd, (struct sockaddr *) &a, sizeof(a)), ==, 0);
  g_assert_cmpint(getsockname(fd, (struct sockaddr *) &a, &al), ==, 0);
  close(fd);
  return ntohs(a.sin_port);
}

/* Two ends, the passive one listening on @port (0: a port of its choice). */
static void
open_pair(conf_side_t *a, conf_side_t *p, uint16_t port, it_conn_qual_t *q, it_listen_handle_t *lh)
{
  conf_side_open(a, NULL);
  conf_side_open(p, NULL);
  memset(q, 0, sizeof(*q));
  q->type = IT_IANA_PORT;
  q->conn_qual.port = htons(port);
  conf_ok(it_listen_create(p->ia, 0, p->req, port != 0 ? IT_LISTEN_CONN_QUAL_INPUT : IT_LISTEN_NO_FLAG,
                           q, lh));
}

static void
connect_to(conf_side_t *a, const it_conn_qual_t *q, uint64_t timeout_us)
{
  it_path_t path;
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  conf_path(a, &path);
  path.timeout = timeout_us;
  conf_ok(it_ep_connect(a->ep, &path, &ca, q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
}

/* A receive posted before the connect, which must flush when it fails. */
static void
post_one_recv(conf_side_t *s, conf_buf_t *b)
{
  conf_buf_new(s, b, 256, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t seg = conf_seg(b, 0, 256);
  conf_ok(it_post_recv(s->ep, &seg, 1, 42, IT_COMPLETION_FLAG));
}

static void
expect_recv_flushed(conf_side_t *s)
{
  it_event_t ev = conf_wait(s->dto, IT_DTO_RC_RECV_CMPL_EVENT);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_ERR_FLUSHED);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 42);
  conf_assert_empty(s->dto);
}

static void
test_policy_connect(void)
{
  g_test_summary("host policy 'deny connect': the connect ends in a non-peer reject (bad path), "
                 "the listener there never sees a request, a receive posted before it flushes");
  conf_side_t a, p;
  it_conn_qual_t q;
  it_listen_handle_t lh;
  open_pair(&a, &p, port_conn_denied, &q, &lh);
  conf_buf_t rb;
  post_one_recv(&a, &rb);
  connect_to(&a, &q, 0);
  it_event_t ev = conf_wait(a.cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
  g_assert_true(ev.conn.ep == a.ep);
  g_assert_cmpint(ev.conn.reject_reason_code, ==, IT_CN_REJ_BAD_PATH);
  g_assert_cmpint(conf_ep_state(a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  expect_recv_flushed(&a);
  g_usleep(100000);
  conf_assert_empty(p.req);
  conf_ok(it_ep_reset(a.ep));
  g_assert_cmpint(conf_ep_state(a.ep), ==, IT_EP_STATE_UNCONNECTED);
  conf_buf_free(&rb);
  conf_ok(it_listen_free(lh));
  conf_side_close(&a);
  conf_side_close(&p);
}

static void
test_policy_accept(void)
{
  g_test_summary("host policy 'deny accept': the requester gets a peer reject and the listener's "
                 "event stream stays empty; a port the rule does not name connects and moves data");
  conf_side_t a, p;
  it_conn_qual_t q;
  it_listen_handle_t lh;
  open_pair(&a, &p, port_acc_denied, &q, &lh);
  connect_to(&a, &q, 0);
  it_event_t ev = conf_wait(a.cm, IT_CM_MSG_CONN_PEER_REJECT_EVENT);
  g_assert_true(ev.conn.ep == a.ep);
  g_assert_cmpint(conf_ep_state(a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  conf_assert_empty(p.req);
  conf_ok(it_listen_free(lh));

  /* Any other port: the connection comes up and a Send lands. */
  conf_ok(it_ep_reset(a.ep));
  it_listen_handle_t lh2;
  it_conn_qual_t q2 = { .type = IT_IANA_PORT };
  conf_ok(it_listen_create(p.ia, 0, p.req, IT_LISTEN_NO_FLAG, &q2, &lh2));
  conf_buf_t rb, sb;
  conf_buf_new(&p, &rb, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&a, &sb, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rt = conf_seg(&rb, 0, 4096);
  conf_ok(it_post_recv(p.ep, &rt, 1, 7, IT_COMPLETION_FLAG));
  connect_to(&a, &q2, 0);
  ev = conf_wait(p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(p.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_wait(p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_buf_fill(&sb, 11);
  it_lmr_triplet_t st = conf_seg(&sb, 0, 3000);
  conf_ok(it_post_send(a.ep, &st, 1, 8, IT_COMPLETION_FLAG));
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 8);
  it_dto_cmpl_event_t d = conf_dto(p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 7);
  g_assert_cmpuint(d.transferred_length, ==, 3000);
  g_assert_cmpmem(rb.data, 3000, sb.data, 3000);
  conf_buf_check_guards(&rb);
  conf_ok(it_ep_disconnect(a.ep, NULL, 0));
  conf_wait(a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_wait(p.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_buf_free(&rb);
  conf_buf_free(&sb);
  conf_ok(it_listen_free(lh2));
  conf_side_close(&a);
  conf_side_close(&p);
}

/* A TCP listener that takes no more connections: its accept queue (backlog
 * 0) is filled by clients nobody accepts, so a new SYN gets no answer and a
 * connect to it stays in progress. */
typedef struct {
  int lfd;
  int cli[4];
  uint16_t port;
} deaf_t;

static void
deaf_open(deaf_t *d)
{
  struct sockaddr_in a = { .sin_family = AF_INET };
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof(a);
  /* Not a port the policy denies: the kernel may hand a probed port out
   * again, and a connect there would end in a policy reject (bad path). */
  int held = -1;
  for (;;) {
    d->lfd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = 0;
    g_assert_cmpint(bind(d->lfd, (struct sockaddr *) &a, sizeof(a)), ==, 0);
    al = sizeof(a);
    g_assert_cmpint(getsockname(d->lfd, (struct sockaddr *) &a, &al), ==, 0);
    d->port = ntohs(a.sin_port);
    if (d->port != port_conn_denied && d->port != port_acc_denied)
      break;
    if (held >= 0)
      close(held);
    held = d->lfd; /* kept bound while the next one is chosen */
  }
  if (held >= 0)
    close(held);
  g_assert_cmpint(listen(d->lfd, 0), ==, 0);
  for (size_t i = 0; i < G_N_ELEMENTS(d->cli); i++) {
    d->cli[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int r = connect(d->cli[i], (struct sockaddr *) &a, sizeof(a));
    g_assert_true(r == 0 || errno == EINPROGRESS);
  }
  g_usleep(50000);
}

static void
deaf_close(deaf_t *d)
{
  for (size_t i = 0; i < G_N_ELEMENTS(d->cli); i++)
    close(d->cli[i]);
  close(d->lfd);
}

/* @a with a receive posted in @rb connects to @d's port (@timeout_us, 0:
 * none); the connect cannot complete. */
static void
connect_deaf(const deaf_t *d, conf_side_t *a, conf_buf_t *rb, uint64_t timeout_us)
{
  conf_side_open(a, NULL);
  post_one_recv(a, rb);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(d->port);
  connect_to(a, &q, timeout_us);
}

static void
test_connect_timeout(void)
{
  g_test_summary("a connect to a peer that never answers ends at the path's timeout in a "
                 "non-peer reject with reason timeout, and its posted receive flushes");
  deaf_t d;
  deaf_open(&d);
  conf_side_t a;
  conf_buf_t rb;
  gint64 t0 = g_get_monotonic_time();
  connect_deaf(&d, &a, &rb, 300000);
  it_event_t ev = conf_wait(a.cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
  gint64 took = g_get_monotonic_time() - t0;
  g_assert_cmpint(ev.conn.reject_reason_code, ==, IT_CN_REJ_TIMEOUT);
  g_assert_cmpint(took, >=, 250000);
  g_assert_cmpint(conf_ep_state(a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  expect_recv_flushed(&a);
  conf_buf_free(&rb);
  conf_side_close(&a);
  deaf_close(&d);
}

static void
test_connect_cancel(void)
{
  g_test_summary("it_ep_disconnect on a connect still in progress ends it with a disconnect "
                 "event and flushes its posted receive; freeing an EP mid-connect is harmless");
  deaf_t d;
  deaf_open(&d);
  conf_side_t a;
  conf_buf_t rb;
  connect_deaf(&d, &a, &rb, 0);
  g_usleep(100000);
  g_assert_cmpint(conf_ep_state(a.ep), ==, IT_EP_STATE_ACTIVE1_CONNECTION_PENDING);
  conf_ok(it_ep_disconnect(a.ep, NULL, 0));
  it_event_t ev = conf_wait(a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_assert_true(ev.conn.ep == a.ep);
  g_assert_cmpint(conf_ep_state(a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  expect_recv_flushed(&a);
  conf_assert_empty(a.cm);
  conf_buf_free(&rb);

  /* Again, and free the EP (with its IA) while the connect is in flight. */
  conf_ok(it_ep_reset(a.ep));
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons(d.port);
  connect_to(&a, &q, 0);
  g_usleep(50000);
  conf_side_close(&a);
  g_usleep(100000);
  deaf_close(&d);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  /* The policy is read at the first check: write it before any IT-API call. */
  port_conn_denied = probe_port();
  do
    port_acc_denied = probe_port();
  while (port_acc_denied == port_conn_denied);
  g_autofree char *dir = g_dir_make_tmp("itapi-hostcm-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "policy", NULL);
  g_autofree char *rules = g_strdup_printf("# written by test-hostcm\n"
                                           "deny connect 127.0.0.1 port %u\n"
                                           "deny accept 127.0.0.0/8 port %u\n",
                                           port_conn_denied, port_acc_denied);
  g_assert_true(g_file_set_contents(file, rules, -1, NULL));
  /* Writable by the owner alone whatever the umask, or the policy is refused. */
  g_assert_cmpint(g_chmod(file, 0644), ==, 0);
  g_setenv("ITAPI_POLICY", file, TRUE);
  g_test_add_func("/hostcm/policy/connect", test_policy_connect);
  g_test_add_func("/hostcm/policy/accept", test_policy_accept);
  g_test_add_func("/hostcm/connect/timeout", test_connect_timeout);
  g_test_add_func("/hostcm/connect/cancel", test_connect_cancel);
  int rc = g_test_run();
  g_unlink(file);
  g_rmdir(dir);
  return rc;
}
