/*
 * vp/emul: a peer process that stops taking frames breaks its connection
 * after ITAPI_EMUL_TIMEOUT_MS, as RDMA's exhausted retries do, and one
 * that pauses for less does not (emul_ring.h, "Timeout").
 *
 * The test runs itself as the child (--child MODE), which accepts a
 * connection from the parent, posts its receives and says "ready"; the
 * parent stops it with SIGSTOP, the real way a process stops answering
 * (a debugger, a job-control stop, a machine that does not schedule it):
 *
 *  - "stopped": the parent posts four Sends and waits.  The oldest
 *    completes IT_DTO_ERR_TRANSPORT and the others IT_DTO_ERR_FLUSHED,
 *    the connection is BROKEN, no sooner than the timeout (1 s), and the
 *    parent's log names the peer.  Continued, the child finds its
 *    connection broken too.
 *  - "paused": stopped for a quarter of the timeout (2 s) while the Sends
 *    wait, then continued: every Send lands, verified, and the connection
 *    lives on.
 *
 * A listener's process that is stopped, or slow to take requests, holds
 * them in its socket's backlog, as a TCP listener does SYNs:
 *
 *  - "burst": the child listens and is stopped; the parent makes BURST
 *    connection requests at once (more than a small backlog holds), then
 *    continues it: the child accepts each, and every one is ESTABLISHED
 *    on both sides.
 *  - a listening socket whose backlog is full and never taken from (the
 *    test's own, at an emul port): it_ep_connect waits the timeout for
 *    it, no less, and the connection is then refused, the log saying why.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"

#define SENDS 4
#define LEN 64
#define LINE_MS 20000
#define STOPPED_MS 1000
#define PAUSED_MS 2000
#define BURST 100        /* connection requests at once: more than 64 */
#define FULL_WAIT_MS 500 /* the timeout a full backlog is waited for */

static const char *self;
static gint said_timeout;  /* the parent's log named the stalled peer */
static gint said_backlog;  /* the parent's log said a backlog stayed full */

static void
log_handler(const gchar *domain, GLogLevelFlags level, const gchar *msg, gpointer data)
{
  (void) data;
  if (strstr(msg, "took nothing from QP") != NULL)
    g_atomic_int_set(&said_timeout, 1);
  if (strstr(msg, "took no connection request") != NULL)
    g_atomic_int_set(&said_backlog, 1);
  g_log_default_handler(domain, level, msg, NULL);
}

/* Event queues deep enough for BURST connections. */
static void
burst_evds(conf_side_t *s, it_evd_handle_t *cm, it_evd_handle_t *req)
{
  conf_ok(it_evd_create(s->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4 * BURST, 1,
                        IT_NULL_HANDLE, cm, NULL));
  if (req != NULL)
    conf_ok(it_evd_create(s->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4 * BURST, 1,
                          IT_NULL_HANDLE, req, NULL));
}

/* BURST endpoints of @s whose connection events go to @cm. */
static void
burst_eps(conf_side_t *s, it_evd_handle_t cm, it_ep_handle_t *eps)
{
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  for (unsigned i = 0; i < BURST; i++)
    conf_ok(it_ep_rc_create(s->pz, s->dto, s->dto, cm, IT_EP_NO_FLAG, &attr, &eps[i]));
}

/* Wait for @n ESTABLISHED events on @cm, one per endpoint of @eps. */
static void
burst_established(it_evd_handle_t cm, const it_ep_handle_t *eps, unsigned n)
{
  g_autofree gboolean *seen = g_new0(gboolean, n);
  for (unsigned k = 0; k < n; k++) {
    it_event_t ev = conf_wait(cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    unsigned i = 0;
    while (i < n && eps[i] != ev.conn.ep)
      i++;
    g_assert_cmpuint(i, <, n);
    g_assert_false(seen[i]);
    seen[i] = TRUE;
  }
}

/* The listener of "burst": accept BURST requests, each with an endpoint
 * of its own, and say so once all are ESTABLISHED. */
static int
child_burst(void)
{
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t cm, req;
  burst_evds(&s, &cm, &req);
  it_ep_handle_t eps[BURST];
  burst_eps(&s, cm, eps);
  it_listen_handle_t lh;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  conf_ok(it_listen_create(s.ia, 0, req, IT_LISTEN_NO_FLAG, &q, &lh));
  printf("port %u\n", (unsigned) ntohs(q.conn_qual.port));
  fflush(stdout);
  for (unsigned i = 0; i < BURST; i++) {
    it_event_t ev = conf_wait(req, IT_CM_REQ_CONN_REQUEST_EVENT);
    conf_ok(it_ep_accept(eps[i], ev.conn_req.cn_est_id, NULL, 0));
  }
  burst_established(cm, eps, BURST);
  printf("accepted %u\n", BURST);
  fflush(stdout);
  /* Until the parent has seen its side established too. */
  g_autofree char *l = conf_hear(0, LINE_MS);
  g_assert_cmpstr(l, ==, "done");
  for (unsigned i = 0; i < BURST; i++)
    conf_ok(it_ep_free(eps[i]));
  conf_ok(it_listen_free(lh));
  conf_ok(it_evd_free(req));
  conf_ok(it_evd_free(cm));
  conf_side_close(&s);
  return 0;
}

static int
child(const char *mode)
{
  if (strcmp(mode, "burst") == 0)
    return child_burst();
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_child_listen(&s);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_buf_t rb;
  conf_buf_new(&s, &rb, (size_t) SENDS * LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (unsigned k = 0; k < SENDS; k++) {
    it_lmr_triplet_t t = conf_seg(&rb, (size_t) k * LEN, LEN);
    conf_ok(it_post_recv(s.ep, &t, 1, k, IT_COMPLETION_FLAG));
  }
  conf_ok(it_ep_accept(s.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  printf("ready\n");
  fflush(stdout);
  if (strcmp(mode, "stopped") == 0) {
    /* Continued after the parent's timeout: its BREAK waits on the socket. */
    conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
    printf("broken\n");
  } else {
    for (unsigned k = 0; k < SENDS; k++) {
      conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, k);
      g_assert_cmpuint(conf_first_not(rb.data + (size_t) k * LEN, LEN, (unsigned char) (10 + k)), ==, LEN);
    }
    printf("landed %u\n", SENDS);
    fflush(stdout);
    conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
    printf("disconnected\n");
  }
  fflush(stdout);
  conf_buf_check_guards(&rb);
  conf_buf_free(&rb);
  conf_side_close(&s);
  return 0;
}

/* The child in @mode, ready, and @s connected to it with the timeout
 * @timeout_ms (read as the connect starts). */
static conf_child_t
connect_child(const char *mode, conf_side_t *s, int timeout_ms)
{
  const char *args[] = { "--child", mode, NULL };
  conf_child_t c = conf_child_spawn(self, args, "emul-stopped-peer", NULL, NULL);
  it_conn_qual_t q = conf_child_hear_port(&c, LINE_MS);
  conf_side_open(s, NULL);
  g_autofree char *to = g_strdup_printf("%d", timeout_ms);
  g_setenv("ITAPI_EMUL_TIMEOUT_MS", to, TRUE);
  conf_ok(conf_connect(s, s->ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  g_unsetenv("ITAPI_EMUL_TIMEOUT_MS");
  conf_wait(s->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_autofree char *l = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(l, ==, "ready");
  return c;
}

/* Stop @pid and wait until every thread of it stopped (SIGSTOP is
 * delivered to each thread in its own time: its progress thread could
 * still take a frame meanwhile). */
static void
stop_child(pid_t pid)
{
  g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
  g_autofree char *dir = g_strdup_printf("/proc/%d/task", (int) pid);
  gint64 end = g_get_monotonic_time() + CONF_TIMEOUT_US;
  for (;;) {
    gboolean all = TRUE;
    GDir *d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    for (const char *t; all && (t = g_dir_read_name(d)) != NULL;) {
      g_autofree char *path = g_strdup_printf("%s/%s/stat", dir, t);
      g_autofree char *st = NULL;
      const char *rp;
      all = g_file_get_contents(path, &st, NULL, NULL) && (rp = strrchr(st, ')')) != NULL &&
            (rp[2] == 'T' || rp[2] == 't');
    }
    g_dir_close(d);
    if (all)
      return;
    g_assert_cmpint(g_get_monotonic_time(), <, end);
    g_usleep(1000);
  }
}

/* Four Sends of LEN bytes (fill 10 + k), cookies 1 to SENDS. */
static void
post_sends(conf_side_t *s, conf_buf_t *sb)
{
  conf_buf_new(s, sb, (size_t) SENDS * LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (unsigned k = 0; k < SENDS; k++) {
    memset(sb->data + (size_t) k * LEN, 10 + (int) k, LEN);
    it_lmr_triplet_t t = conf_seg(sb, (size_t) k * LEN, LEN);
    conf_ok(it_post_send(s->ep, &t, 1, 1 + k, IT_COMPLETION_FLAG));
  }
}

static void
test_stopped(void)
{
  g_test_summary("A peer process stopped by SIGSTOP takes none of four Sends: after the timeout "
                 "(1 s) and no sooner the oldest completes with a transport error, the others "
                 "flush, the connection breaks and the log names the peer; continued, the peer "
                 "finds its connection broken");
  conf_side_t s;
  conf_buf_t sb;
  conf_child_t c = connect_child("stopped", &s, STOPPED_MS);
  stop_child(c.pid);
  gint64 t0 = g_get_monotonic_time();
  post_sends(&s, &sb);
  conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_ERR_TRANSPORT, 1);
  gint64 took = g_get_monotonic_time() - t0;
  for (unsigned k = 1; k < SENDS; k++)
    conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_ERR_FLUSHED, 1 + k);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  g_test_message("the oldest Send failed %" G_GINT64_FORMAT " ms after it was posted", took / 1000);
  g_assert_cmpint(took, >=, (gint64) STOPPED_MS * 1000);
  g_assert_true(g_atomic_int_get(&said_timeout));
  conf_assert_empty(s.dto);
  g_assert_cmpint(kill(c.pid, SIGCONT), ==, 0);
  g_autofree char *l = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(l, ==, "broken");
  conf_child_reap(&c);
  conf_buf_free(&sb);
  conf_side_close(&s);
}

static void
test_paused(void)
{
  g_test_summary("A peer process stopped for a quarter of the timeout while four Sends wait, "
                 "then continued: every Send lands, verified, and the connection lives on");
  conf_side_t s;
  conf_buf_t sb;
  g_atomic_int_set(&said_timeout, 0);
  conf_child_t c = connect_child("paused", &s, 4 * PAUSED_MS);
  stop_child(c.pid);
  post_sends(&s, &sb);
  g_usleep((gulong) PAUSED_MS * 1000);
  conf_assert_empty(s.dto);
  g_assert_cmpint(kill(c.pid, SIGCONT), ==, 0);
  for (unsigned k = 0; k < SENDS; k++)
    conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 1 + k);
  g_autofree char *l = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(l, ==, "landed 4");
  g_assert_cmpint(conf_ep_state(s.ep), ==, IT_EP_STATE_CONNECTED);
  g_assert_false(g_atomic_int_get(&said_timeout));
  conf_ok(it_ep_disconnect(s.ep, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_autofree char *l2 = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(l2, ==, "disconnected");
  conf_child_reap(&c);
  conf_buf_free(&sb);
  conf_side_close(&s);
}

static void
test_listener_burst(void)
{
  g_test_summary("A listener's process is stopped while another makes 100 connection requests "
                 "to it at once: each is held, as a TCP backlog holds SYNs, and once the "
                 "listener is continued and accepts, all 100 are ESTABLISHED on both sides, "
                 "none refused");
  const char *args[] = { "--child", "burst", NULL };
  conf_child_t c = conf_child_spawn(self, args, "emul-listener-burst", NULL, NULL);
  it_conn_qual_t q = conf_child_hear_port(&c, LINE_MS);
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t cm;
  burst_evds(&s, &cm, NULL);
  it_ep_handle_t eps[BURST];
  burst_eps(&s, cm, eps);
  stop_child(c.pid);
  for (unsigned i = 0; i < BURST; i++)
    conf_ok(conf_connect(&s, eps[i], &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  g_usleep(200 * 1000);
  conf_assert_empty(cm);  /* nothing refused while the listener is stopped */
  g_assert_cmpint(kill(c.pid, SIGCONT), ==, 0);
  burst_established(cm, eps, BURST);
  g_autofree char *l = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(l, ==, "accepted 100");
  conf_say(c.to, "done\n");
  conf_child_reap(&c);
  for (unsigned i = 0; i < BURST; i++)
    conf_ok(it_ep_free(eps[i]));
  conf_ok(it_evd_free(cm));
  conf_side_close(&s);
}

static void
test_listener_backlog_full(void)
{
  g_test_summary("A listening socket at an emul port whose backlog is full and never taken "
                 "from: it_ep_connect to that port waits ITAPI_EMUL_TIMEOUT_MS (500 ms) for "
                 "room, no less, and then the connection is refused (a non-peer reject), the "
                 "log saying that the listener took no request");
  conf_side_t s;
  conf_side_open(&s, NULL);
  /* The socket an emul listener would have, at a free port. */
  int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  g_assert_cmpint(lfd, >=, 0);
  GArray *fill = g_array_new(FALSE, FALSE, sizeof(int));
  unsigned port = 0;
  for (unsigned p = 40000 + (unsigned) getpid() % 20000; port == 0; p = p < 65000 ? p + 1 : 40000) {
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int k = g_snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "itapi-emul/%u", p);
    socklen_t len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) k);
    if (bind(lfd, (struct sockaddr *) &sa, len) == 0) {
      port = p;
      g_assert_cmpint(listen(lfd, 1), ==, 0);
      /* Fill its backlog. */
      for (;;) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        g_assert_cmpint(fd, >=, 0);
        if (connect(fd, (struct sockaddr *) &sa, len) != 0) {
          g_assert_cmpint(errno, ==, EAGAIN);
          close(fd);
          break;
        }
        g_array_append_val(fill, fd);
        g_assert_cmpuint(fill->len, <, 64);
      }
      g_test_message("port %u: backlog full after %u connections", port, fill->len);
    } else {
      g_assert_cmpint(errno, ==, EADDRINUSE);
    }
  }
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons((uint16_t) port);
  g_autofree char *to = g_strdup_printf("%d", FULL_WAIT_MS);
  g_setenv("ITAPI_EMUL_TIMEOUT_MS", to, TRUE);
  g_atomic_int_set(&said_backlog, 0);
  gint64 t0 = g_get_monotonic_time();
  it_status_t st = conf_connect(&s, s.ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
  if (st == IT_SUCCESS) {
    it_event_t ev = conf_wait(s.cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
    g_test_message("refused: reason %d", (int) ev.conn.reject_reason_code);
  } else {
    g_test_message("refused at the call: %s", itx_status_name(st));
  }
  gint64 took = g_get_monotonic_time() - t0;
  g_unsetenv("ITAPI_EMUL_TIMEOUT_MS");
  g_test_message("refused %" G_GINT64_FORMAT " ms after it_ep_connect", took / 1000);
  g_assert_cmpint(took, >=, (gint64) FULL_WAIT_MS * 1000);
  g_assert_true(g_atomic_int_get(&said_backlog));
  for (guint i = 0; i < fill->len; i++)
    close(g_array_index(fill, int, i));
  g_array_free(fill, TRUE);
  close(lfd);
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--child") == 0)
    return child(argv[2]);
  self = argv[0];
  g_test_init(&argc, &argv, NULL);
  g_log_set_handler("itapi-vp-emul", G_LOG_LEVEL_MESSAGE, log_handler, NULL);
  g_test_add_func("/emul/timeout/stopped", test_stopped);
  g_test_add_func("/emul/timeout/paused", test_paused);
  g_test_add_func("/emul/timeout/listener-burst", test_listener_burst);
  g_test_add_func("/emul/timeout/listener-backlog-full", test_listener_backlog_full);
  return g_test_run();
}
