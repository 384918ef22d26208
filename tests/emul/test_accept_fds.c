/*
 * vp/emul: a listener of a process that ran out of file descriptors does
 * not spin.  accept() then fails with EMFILE and leaves the connection
 * queued: the listening socket stays readable, and the progress thread,
 * woken by it again and again, would take a core and keep every client
 * out.  It takes the connection with a descriptor kept in reserve and
 * closes it (emul_progress.c, emul_ring_accept_refuse), once per
 * connection, and says so once.
 *
 * The test is the target: it listens on emul0, leaves itself four more
 * descriptors than it has open (RLIMIT_NOFILE), and has a child (this
 * program, --flood PORT) open 32 raw connections to the listener's socket
 * that send nothing.  Over the next second the process uses little CPU;
 * with its limit back, a child running the library (--good PORT)
 * connects through the same listener and a Send lands, checked.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"

#define FLOOD 32
#define LEN 4096
#define LINE_MS 20000
#define CPU_MAX_MS 150  /* of the second the flood waits, the whole process */

static const char *self;

/* 32 connections to the listener's socket, held until stdin closes. */
static int
flood(unsigned port)
{
  int fds[FLOOD];
  for (unsigned i = 0; i < FLOOD; i++) {
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int k = g_snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "itapi-emul/%u", port);
    socklen_t len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) k);
    fds[i] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fds[i] < 0 || connect(fds[i], (struct sockaddr *) &sa, len) != 0)
      return 1;
  }
  printf("flooded\n");
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0)
    ;
  for (unsigned i = 0; i < FLOOD; i++)
    close(fds[i]);
  return 0;
}

/* The library's active side: connects, sends LEN bytes (seed 3). */
static int
good(unsigned port)
{
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_conn_qual_t q = { .type = IT_IANA_PORT, .conn_qual.port = htons((uint16_t) port) };
  conf_ok(conf_connect(&s, s.ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_buf_t sb;
  conf_buf_new(&s, &sb, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&sb, 3);
  it_lmr_triplet_t t = conf_seg(&sb, 0, LEN);
  conf_ok(it_post_send(s.ep, &t, 1, 1, IT_COMPLETION_FLAG));
  conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  printf("sent\n");
  fflush(stdout);
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_buf_free(&sb);
  conf_side_close(&s);
  return 0;
}

static unsigned
open_fds(void)
{
  unsigned n = 0;
  GDir *d = g_dir_open("/proc/self/fd", 0, NULL);
  g_assert_nonnull(d);
  while (g_dir_read_name(d) != NULL)
    n++;
  g_dir_close(d);
  return n;
}

static gint64
cpu_us(void)
{
  struct rusage u;
  g_assert_cmpint(getrusage(RUSAGE_SELF, &u), ==, 0);
  return (gint64) (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * G_USEC_PER_SEC + u.ru_utime.tv_usec +
         u.ru_stime.tv_usec;
}

static void
test_out_of_fds(void)
{
  g_test_summary("A process out of file descriptors with 32 silent connections queued on its "
                 "listener uses little CPU for a second (no accept spin), and once it has "
                 "descriptors again a client process connects and a Send lands, checked");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_listen_handle_t lh;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  conf_ok(it_listen_create(s.ia, 0, s.req, IT_LISTEN_NO_FLAG, &q, &lh));
  unsigned port = ntohs(q.conn_qual.port);
  g_autofree char *ps = g_strdup_printf("%u", port);

  const char *fargs[] = { "--flood", ps, NULL };
  conf_child_t f = conf_child_spawn(self, fargs, "emul-accept-flood", NULL, NULL);
  struct rlimit was, low;
  g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &was), ==, 0);
  low = was;
  low.rlim_cur = open_fds() + 4;
  g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &low), ==, 0);
  g_autofree char *fl = conf_hear(f.from, LINE_MS);
  g_assert_cmpstr(fl, ==, "flooded");
  gint64 c0 = cpu_us();
  g_usleep(G_USEC_PER_SEC);
  gint64 used = cpu_us() - c0;
  g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &was), ==, 0);
  g_test_message("CPU used in the second the flood waited with no descriptor left: %" G_GINT64_FORMAT " ms",
                 used / 1000);
  g_assert_cmpint(used, <, CPU_MAX_MS * 1000);
  close(f.to);  /* the flood ends */
  conf_child_reap(&f);
  conf_assert_empty(s.req);  /* none of the flood got to the application */

  conf_buf_t rb;
  conf_buf_new(&s, &rb, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t t = conf_seg(&rb, 0, LEN);
  conf_ok(it_post_recv(s.ep, &t, 1, 1, IT_COMPLETION_FLAG));
  const char *gargs[] = { "--good", ps, NULL };
  conf_child_t g = conf_child_spawn(self, gargs, "emul-accept-good", NULL, NULL);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(s.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_buf_check(&rb, 0, LEN, 3);
  g_autofree char *gl = conf_hear(g.from, LINE_MS);
  g_assert_cmpstr(gl, ==, "sent");
  conf_ok(it_ep_disconnect(s.ep, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_child_reap(&g);
  conf_ok(it_listen_free(lh));
  conf_buf_free(&rb);
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--flood") == 0)
    return flood((unsigned) atoi(argv[2]));
  if (argc == 3 && strcmp(argv[1], "--good") == 0)
    return good((unsigned) atoi(argv[2]));
  self = argv[0];
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/emul/accept/out-of-fds", test_out_of_fds);
  return g_test_run();
}
