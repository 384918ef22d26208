/*
 * vp/emul: without cross-memory attach (ITAPI_EMUL_CMA=0 in both
 * processes) payloads between processes go through the connection's
 * shared-memory bounce ring, and each process says so once in its log
 * (emul_ring_msg.c): a Send and an RDMA Write and Read land intact, and
 * the target's log has the line exactly once.
 *
 * What every provider must do with such transfers is the conformance
 * catalog's (/conformance/xproc/, run over the bounce ring by the matrix's
 * emul-bounce and emul-iw-bounce rows); the log line is emul's alone.
 *
 * The test runs itself as the child (--child), the target: it posts a
 * receive of LEN bytes and registers a region of LEN bytes with remote
 * rights, accepts, says where the region is, checks the Send it received,
 * then, once the parent has disconnected, the bytes the parent's Write
 * left in the region.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"

#define LEN (1u << 20)
#define SEND_SEED 7
#define WRITE_SEED 11
#define LINE_MS 30000
#define BOUNCE_SAID "moving payloads through a shared-memory bounce ring"

static const char *self;

static int
child(void)
{
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_buf_t rb, region;
  conf_buf_new(&s, &rb, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &region, LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t r = conf_seg(&rb, 0, LEN);
  conf_ok(it_post_recv(s.ep, &r, 1, 1, IT_COMPLETION_FLAG));
  conf_child_listen(&s);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(s.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_say(1, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", (guint64) (uintptr_t) region.data,
           (guint64) region.ctx);
  it_dto_cmpl_event_t d = conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  g_assert_cmpuint(d.transferred_length, ==, LEN);
  conf_buf_check(&rb, 0, LEN, SEND_SEED);
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_buf_check(&region, 0, LEN, WRITE_SEED);
  conf_buf_check_guards(&region);
  conf_say(1, "ok\n");
  conf_buf_free(&region);
  conf_buf_free(&rb);
  conf_side_close(&s);
  return 0;
}

/* How many times @needle stands in the file @path; -1 when it cannot be
 * read. */
static int
count_in(const char *path, const char *needle)
{
  g_autofree char *text = NULL;
  int n = 0;
  if (!g_file_get_contents(path, &text, NULL, NULL))
    return -1;
  for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

static void
test_bounce_said_once(void)
{
  g_test_summary("vp/emul with ITAPI_EMUL_CMA=0 in both processes: a 1 MiB Send, and a 1 MiB RDMA "
                 "Write read back by an RDMA Read, land intact through the bounce ring, and the "
                 "target's log says once that payloads go through it");
  const char *args[] = { "--child", NULL };
  conf_child_t c = conf_child_spawn(self, args, "emul-bounce", NULL, NULL);
  conf_side_t s;
  guint64 addr = 0, ctx = 0;
  conf_child_connect_mr(&c, &s, NULL, LINE_MS, &addr, &ctx);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) addr);

  conf_buf_t sb, wb, back;
  conf_buf_new(&s, &sb, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &wb, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &back, LEN, conf_sink_privs(&s), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&sb, SEND_SEED);
  conf_buf_fill(&wb, WRITE_SEED);
  it_lmr_triplet_t st = conf_seg(&sb, 0, LEN), wt = conf_seg(&wb, 0, LEN), bt = conf_seg(&back, 0, LEN);
  conf_ok(it_post_send(s.ep, &st, 1, 1, IT_COMPLETION_FLAG));
  conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_ok(it_post_rdma_write(s.ep, &wt, 1, 2, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) ctx));
  conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_ok(it_post_rdma_read(s.ep, &bt, 1, 3, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) ctx));
  conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  conf_buf_check(&back, 0, LEN, WRITE_SEED);
  conf_buf_check_guards(&back);
  conf_ok(it_ep_disconnect(s.ep, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);

  g_autofree char *ok = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(ok, ==, "ok");
  int status = 0;
  g_assert_true(conf_child_wait(&c, TRUE, &status));
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  g_assert_cmpint(count_in(c.err, BOUNCE_SAID), ==, 1);
  unlink(c.err);
  close(c.to);
  close(c.from);
  conf_buf_free(&back);
  conf_buf_free(&wb);
  conf_buf_free(&sb);
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  g_log_writer_default_set_use_stderr(TRUE); /* stdout is the child's line pipe */
  if (argc == 2 && strcmp(argv[1], "--child") == 0)
    return child();
  self = argv[0];
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/emul/bounce/said-once", test_bounce_said_once);
  return g_test_run();
}
