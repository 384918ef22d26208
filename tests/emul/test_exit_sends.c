/*
 * vp/emul: the message that ends a connection to another process reaches
 * that process even when the application exits as soon as it learns of
 * the end.  The message (a BREAK naming the refused request's status, a
 * DISC with its private data) is queued under the fabric lock and sent
 * with the lock let go, often by the progress thread (emul_ring_msg.c,
 * emul_ring_send_msg); the application hears of the end from the event
 * thread.  So (issue 26, point 5):
 *
 *  - the connection's events leave after its message (emul_events_after,
 *    emul_ring_msgs_then): an application told BROKEN, or given the
 *    responder's affiliated event, has had its BREAK sent;
 *  - the process's exit waits for the messages other threads still owe
 *    (emul_progress.c, x_exit_drain): one that exits on what no message
 *    orders, a completion (its receive flushed by the teardown, seen by
 *    polling its CQ), still tells the peer.
 *
 * Without them the peer sees the socket's EOF and completes its refused
 * RDMA Write IT_DTO_ERR_FLUSHED instead of IT_DTO_ERR_REMOTE_ACCESS (1 run
 * in 10 of /conformance/xproc/windows over the bounce ring with three
 * instances side by side).  Here every BREAK is sent 300 ms late
 * (sendmsg wrapped, -Wl,--wrap=sendmsg: a sender the scheduler set aside),
 * which makes each case fail every time without its part.
 *
 * A third case holds the active side's first socket read 300 ms instead
 * (recvmsg wrapped): the passive child accepts and disconnects at once, so
 * that the reply and the disconnect are read in one batch; the connection's
 * ESTABLISHED waits behind the attach answer the reply makes, and its
 * DISCONNECT must wait behind it (emul_ring_conn_ready sets emul_events_after):
 * without, DISCONNECT came first, in every run.
 *
 * A fourth case refuses the child's DISC three times as a full socket does
 * (EAGAIN: the buffer holds doorbells the parent has not read yet): the
 * DISC waits for room rather than being dropped, which the parent would
 * see as the socket's EOF, its connection BROKEN (1 run in 40 of
 * itapi-perf across users with the machine loaded).
 *
 * The test runs itself as the child (--child MODE): the child accepts a
 * connection over the bounce ring (ITAPI_EMUL_CMA=0, ITAPI_EMUL_MAP=0:
 * the child's progress thread executes the parent's RDMA Writes and finds
 * the fault), says its region, waits for the end (MODE "event": the
 * connection's BROKEN, "affiliated": the responder's affiliated event;
 * each then says how many BREAKs this process had sent; "flushed": its
 * posted receive's flushed completion, polled) and returns from main.
 * The parent writes 16 bytes past the region and expects the completion
 * REMOTE_ACCESS and the child's line.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"
#include "emul.h"
#include "emul_ring.h"

#define LEN 4096
#define BREAK_DELAY_US 300000
#define LINE_MS 10000

static gint breaks_sent;
static gint disc_refusals;  /* sends of a DISC refused as into a full buffer, to come */

ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t
__wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
  x_msg_t h;
  gboolean brk = FALSE;
  if (m->msg_iovlen > 0 && m->msg_iov[0].iov_len >= X_MSG_MIN) {
    memcpy(&h, m->msg_iov[0].iov_base, X_MSG_MIN);
    brk = h.magic == X_MAGIC && h.type == X_BREAK;
  }
  if (brk)
    g_usleep(BREAK_DELAY_US);
  if (m->msg_iovlen > 0 && m->msg_iov[0].iov_len >= X_MSG_MIN && h.magic == X_MAGIC &&
      h.type == X_DISC && g_atomic_int_get(&disc_refusals) > 0) {
    g_atomic_int_add(&disc_refusals, -1);
    errno = EAGAIN;
    return -1;
  }
  ssize_t n = __real_sendmsg(fd, m, flags);
  if (brk && n > 0)
    g_atomic_int_inc(&breaks_sent);
  return n;
}

/* The parent's first socket read (its progress thread's) waits 300 ms. */
static gint hold_first_read;

ssize_t __real_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t __wrap_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t
__wrap_recvmsg(int fd, struct msghdr *m, int flags)
{
  if (g_atomic_int_compare_and_exchange(&hold_first_read, 1, 0))
    g_usleep(BREAK_DELAY_US);
  return __real_recvmsg(fd, m, flags);
}

static int
child(const char *mode)
{
  /* "flushed": only the progress thread drains the ring (its section
   * queues the BREAK and flushes the receive, and sends the BREAK after
   * it); a poll of this thread's that drained the parent's Write itself
   * would send the BREAK before it looked at the completion. */
  if (strcmp(mode, "flushed") == 0)
    g_setenv("ITAPI_EMUL_APP_PROGRESS", "0", TRUE);
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_child_listen(&s);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_buf_t rb;
  conf_buf_new(&s, &rb, LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  conf_ok(it_ep_accept(s.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  if (strcmp(mode, "disconnect-full") == 0)
    g_atomic_int_set(&disc_refusals, 3);
  if (g_str_has_prefix(mode, "disconnect")) {
    conf_ok(it_ep_disconnect(s.ep, NULL, 0));
    conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
    g_assert_cmpint(g_atomic_int_get(&disc_refusals), ==, 0);
    printf("disconnected\n");
    fflush(stdout);
    return 0;
  }
  conf_buf_t recv;
  conf_buf_new(&s, &recv, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rs = conf_seg(&recv, 0, 64);
  conf_ok(it_post_recv(s.ep, &rs, 1, 5, IT_COMPLETION_FLAG));
  printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", (guint64) (uintptr_t) rb.data,
         (guint64) rb.ctx);
  fflush(stdout);
  if (strcmp(mode, "event") == 0) {
    conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
    printf("breaks %d\n", g_atomic_int_get(&breaks_sent));
  } else if (strcmp(mode, "affiliated") == 0) {
    conf_wait(s.aff, IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
    printf("affiliated breaks %d\n", g_atomic_int_get(&breaks_sent));
  } else {
    /* Polled: a completion waits behind no message. */
    it_event_t ev;
    it_status_t st;
    gint64 end = g_get_monotonic_time() + CONF_TIMEOUT_US;
    while ((st = it_evd_dequeue(s.dto, &ev)) == IT_ERR_QUEUE_EMPTY && g_get_monotonic_time() < end)
      g_usleep(100);
    conf_ok(st);
    g_assert_cmpint(ev.event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_ERR_FLUSHED);
    printf("flushed breaks %d\n", g_atomic_int_get(&breaks_sent));
  }
  fflush(stdout);
  conf_buf_check_guards(&rb);
  return 0;  /* at once: whatever the progress thread still owes is at stake */
}

static const char *self;

/* The child in @mode, and @s (opened here) connected to it; with
 * @hold_read, this process's first socket read waits 300 ms. */
static conf_child_t
connect_child(const char *mode, conf_side_t *s, gboolean hold_read)
{
  const char *args[] = { "--child", mode, NULL };
  conf_child_t c = conf_child_spawn(self, args, "emul-exit-sends", NULL, NULL);
  it_conn_qual_t q = conf_child_hear_port(&c, LINE_MS);
  conf_side_open(s, NULL);
  g_atomic_int_set(&hold_first_read, hold_read);
  conf_ok(conf_connect(s, s->ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  conf_wait(s->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  return c;
}

/* The child's last line is @last, and it exited 0. */
static void
reap_child(conf_child_t *c, const char *last)
{
  g_autofree char *el = conf_hear(c->from, LINE_MS);
  g_assert_cmpstr(el, ==, last);
  conf_child_reap(c);
}

/* A child in @mode whose responder breaks the connection: its last line
 * is @last. */
typedef struct {
  const char *path, *summary, *mode, *last;
} break_case_t;

static const break_case_t break_cases[] = {
  { "/emul/exit-sends/event-after-break",
    "The responder's BROKEN event comes after its BREAK was sent (the BREAK held "
    "300 ms): the child counts 1 BREAK sent when told, and the parent's refused "
    "RDMA Write completes REMOTE_ACCESS though the child exits at once",
    "event", "breaks 1" },
  { "/emul/exit-sends/affiliated-after-break",
    "The responder's affiliated event comes after its BREAK was sent (the BREAK "
    "held 300 ms): the child counts 1 BREAK sent when told, and the parent's "
    "refused RDMA Write completes REMOTE_ACCESS though the child exits at once",
    "affiliated", "affiliated breaks 1" },
  { "/emul/exit-sends/exit-waits",
    "The responder exits as soon as it polls its receive's flushed completion, "
    "which no message orders (the BREAK held 300 ms by the progress thread, not "
    "sent yet): the exit waits for the BREAK, and the parent's refused RDMA Write "
    "completes REMOTE_ACCESS",
    "flushed", "flushed breaks 0" },
};

static void
test_break(gconstpointer data)
{
  const break_case_t *bc = data;
  g_test_summary(bc->summary);
  conf_side_t s;
  conf_child_t c = connect_child(bc->mode, &s, FALSE);
  g_autofree char *ml = conf_hear(c.from, LINE_MS);
  guint64 addr = 0, ctx = 0;
  g_assert_nonnull(ml);
  g_assert_cmpint(sscanf(ml, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &addr, &ctx), ==, 2);
  conf_buf_t lb;
  conf_buf_new(&s, &lb, LEN + 16, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&lb, 7);
  it_lmr_triplet_t g = conf_seg(&lb, 0, LEN + 16);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) addr);
  conf_ok(it_post_rdma_write(s.ep, &g, 1, 9, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) ctx));
  conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_ERR_REMOTE_ACCESS, 9);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  reap_child(&c, bc->last);
  conf_buf_free(&lb);
  conf_side_close(&s);
}

static void
test_established_first(void)
{
  g_test_summary("The passive child accepts and disconnects at once while the active side's first "
                 "socket read waits 300 ms: the reply and the disconnect are read together, and "
                 "ESTABLISHED still comes before DISCONNECT");
  conf_side_t s;
  conf_child_t c = connect_child("disconnect", &s, TRUE);
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_assert_cmpint(g_atomic_int_get(&hold_first_read), ==, 0);  /* the read was held */
  reap_child(&c, "disconnected");
  conf_side_close(&s);
}

static void
test_disc_waits_room(void)
{
  g_test_summary("The passive child's disconnect finds the socket full three times (its sendmsg "
                 "refused EAGAIN, as when the buffer holds doorbells the parent has not read): it "
                 "waits for room, the child's DISCONNECT after it, and the parent gets "
                 "DISCONNECT, not the BROKEN of the socket's EOF");
  conf_side_t s;
  conf_child_t c = connect_child("disconnect-full", &s, FALSE);
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  reap_child(&c, "disconnected");
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--child") == 0)
    return child(argv[2]);
  self = argv[0];
  g_test_init(&argc, &argv, NULL);
  for (size_t i = 0; i < G_N_ELEMENTS(break_cases); i++)
    g_test_add_data_func(break_cases[i].path, &break_cases[i], test_break);
  g_test_add_func("/emul/exit-sends/established-first", test_established_first);
  g_test_add_func("/emul/exit-sends/disconnect-waits-room", test_disc_waits_room);
  return g_test_run();
}
