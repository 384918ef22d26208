/*
 * vp/emul: RDMA Reads as deep as applications written for large HCAs ask
 * (IRD and ORD 64; IBM's SKV asks 32, its server up to 256), between two
 * processes over the bounce ring, where the target answers every Read
 * itself.  An answer that finds the ring full waits, copied; the copies
 * the peer's Reads hold are bounded by ITAPI_EMUL_INBOUND_MB (1 here):
 * past it a Read waits for room, with what follows it (emul_ring_resp.c,
 * emul_ring_exec_in), instead of copying 16 MiB.
 *
 * The test runs itself as the child (--child), the target: it registers
 * READS regions of LEN bytes, each filled with its own seed, accepts with
 * IRD 64 and says where they are.  The parent posts READS Reads of LEN
 * bytes at once, ORD 64, and checks every byte.  The child then says how
 * far its peak RSS grew while it answered: less than the 16 MiB the
 * answers would have held copied.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"

#define READS 64
#define LEN (256u << 10)
#define DEPTH 64
#define LINE_MS 30000
#define GREW_MAX_KB (8u << 10)  /* 1 MiB of copies, the 1 MiB ring, room for the rest */

static const char *self;

static void
depth_attr(it_ep_attributes_t *a)
{
  conf_default_attr(a);
  a->srv.rc.rdma_read_ird = DEPTH;
  a->srv.rc.rdma_read_ord = DEPTH;
  a->max_request_dtos = READS;
}

static int
child(void)
{
  it_ep_attributes_t a;
  depth_attr(&a);
  conf_side_t s;
  conf_side_open(&s, &a);
  conf_buf_t src;
  conf_buf_new(&s, &src, (size_t) READS * LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ, IT_ADDR_MODE_ABSOLUTE);
  for (unsigned k = 0; k < READS; k++)
    memset(src.data + (size_t) k * LEN, (int) (k + 1), LEN);
  conf_child_listen(&s);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  /* The peak from here: the regions are touched already. */
  conf_peak_reset();
  gint64 rss0 = conf_status_kb("VmHWM:");
  conf_ok(it_ep_accept(s.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", (guint64) (uintptr_t) src.data,
         (guint64) src.ctx);
  fflush(stdout);
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  printf("grew %" G_GINT64_FORMAT "\n", conf_status_kb("VmHWM:") - rss0);
  fflush(stdout);
  conf_buf_free(&src);
  conf_side_close(&s);
  return 0;
}

static void
test_deep_reads(void)
{
  g_test_summary("64 RDMA Reads of 256 KiB in flight (IRD and ORD 64) to another process over the "
                 "bounce ring: every byte lands, and the target holds no more than about "
                 "ITAPI_EMUL_INBOUND_MB of its answers copied");
  const char *args[] = { "--child", NULL };
  conf_child_t c = conf_child_spawn(self, args, "emul-read-depth", NULL, NULL);
  it_ep_attributes_t a;
  depth_attr(&a);
  conf_side_t s;
  guint64 addr = 0, ctx = 0;
  conf_child_connect_mr(&c, &s, &a, LINE_MS, &addr, &ctx);
  conf_buf_t sink;
  conf_buf_new(&s, &sink, (size_t) READS * LEN, conf_sink_privs(&s), IT_ADDR_MODE_ABSOLUTE);
  for (unsigned k = 0; k < READS; k++) {
    it_lmr_triplet_t t = conf_seg(&sink, (size_t) k * LEN, LEN);
    it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) (addr + (guint64) k * LEN));
    conf_ok(it_post_rdma_read(s.ep, &t, 1, k, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) ctx));
  }
  for (unsigned k = 0; k < READS; k++)
    conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, k);
  for (unsigned k = 0; k < READS; k++)
    g_assert_cmpuint(conf_first_not(sink.data + (size_t) k * LEN, LEN, (unsigned char) (k + 1)), ==, LEN);
  conf_buf_check_guards(&sink);
  conf_ok(it_ep_disconnect(s.ep, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_autofree char *gl = conf_hear(c.from, LINE_MS);
  gint64 grew = -1;
  g_assert_nonnull(gl);
  g_assert_cmpint(sscanf(gl, "grew %" G_GINT64_FORMAT, &grew), ==, 1);
  g_test_message("the target's peak RSS grew by %" G_GINT64_FORMAT " KiB answering %u MiB of Reads", grew,
                 (READS * LEN) >> 20);
#if defined(__SANITIZE_ADDRESS__)
  /* ASan keeps freed memory in its quarantine: every copy ever made stays
   * resident, so the peak says nothing of what was held at once. */
  g_test_message("AddressSanitizer build: the peak is not held to %u KiB", GREW_MAX_KB);
#else
  g_assert_cmpint(grew, <, GREW_MAX_KB);
#endif
  conf_child_reap(&c);
  conf_buf_free(&sink);
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  if (argc == 2 && strcmp(argv[1], "--child") == 0)
    return child();
  self = argv[0];
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/emul/read-depth/bounce", test_deep_reads);
  return g_test_run();
}
