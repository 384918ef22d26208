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
 * SPDX-License-Identifier: MIT
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"

#define SENDS 4
#define LEN 64
#define LINE_MS 20000
#define STOPPED_MS 1000
#define PAUSED_MS 2000

static const char *self;
static gint said_timeout;  /* the parent's log named the stalled peer */

static void
log_handler(const gchar *domain, GLogLevelFlags level, const gchar *msg, gpointer data)
{
  (void) data;
  if (strstr(msg, "took nothing from QP") != NULL)
    g_atomic_int_set(&said_timeout, 1);
  g_log_default_handler(domain, level, msg, NULL);
}

static int
child(const char *mode)
{
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
  return g_test_run();
}
