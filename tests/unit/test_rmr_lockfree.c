/*
 * The RMR posts (it_rmr_link, it_rmr_unlink, it_post_rdma_read_to_rmr)
 * take no object lock (issue 26 point 5): while another thread holds
 * ual_lock, they run to the provider and return.  Each link and unlink
 * then completes as usual once the lock is free again.
 *
 * Linked with the library's internal objects (to take ual_lock) and the
 * conformance suite's helpers (a connected pair over vp/emul).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "conf.h"
#include "ual.h"

#define LEN 4096

typedef struct {
  gint held;       /* the holder has ual_lock */
  gint done;       /* the posting thread is done: let go */
  gint released;   /* the holder let go */
} holder_t;

static gpointer
hold_lock(gpointer data)
{
  holder_t *h = data;
  ual_lock_take();
  g_atomic_int_set(&h->held, 1);
  /* At most 10 s: a post that waits for the lock then returns after
   * @released is set, and the test says so instead of hanging. */
  gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
  while (!g_atomic_int_get(&h->done) && g_get_monotonic_time() < end)
    g_usleep(1000);
  g_atomic_int_set(&h->released, 1);
  ual_lock_drop();
  return NULL;
}

static void
test_posts_without_lock(void)
{
  g_test_summary("it_rmr_link, it_rmr_unlink and it_post_rdma_read_to_rmr each post and return while "
                 "another thread holds ual_lock; their requests complete afterwards");
  conf_pair_t p;
  conf_pair_open(&p);
  it_ia_info_t *info = conf_info(&p.a);
  gboolean ok = (info->rmr_types_supported & IT_RMR_TYPE_NARROW) && info->narrow_rmr_unlink_support &&
                info->rdma_read_local_extensions;
  it_ia_info_free(info);
  if (!ok) {
    g_test_skip("the IA has no narrow RMRs with unlink and reads into RMRs");
    conf_pair_close(&p);
    return;
  }
  conf_buf_t sink, src;
  conf_buf_new(&p.a, &sink, LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &src, LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 5);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(p.a.pz, IT_RMR_TYPE_NARROW, &rmr));

  holder_t h = { 0 };
  GThread *t = g_thread_new("holder", hold_lock, &h);
  while (!g_atomic_int_get(&h.held))
    g_thread_yield();
  it_rmr_context_t ctx;
  conf_ok(it_rmr_link(rmr, sink.lmr, sink.data, LEN, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE, p.a.ep, 1,
                      IT_COMPLETION_FLAG, &ctx));
  it_rmr_triplet_t seg = { .rmr = rmr, .addr.abs = sink.data, .length = LEN };
  conf_ok(it_post_rdma_read_to_rmr(p.a.ep, &seg, 1, 2, IT_COMPLETION_FLAG,
                                   it_make_rdma_addr_absolute(src.data), src.ctx));
  conf_ok(it_rmr_unlink(rmr, p.a.ep, 3, IT_COMPLETION_FLAG));
  gboolean released = g_atomic_int_get(&h.released);
  g_atomic_int_set(&h.done, 1);
  g_thread_join(t);
  g_assert_cmpint(released, ==, FALSE);

  conf_dto(p.a.dto, IT_RMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_dto(p.a.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_dto(p.a.dto, IT_RMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  conf_buf_check(&sink, 0, LEN, 5);
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&sink);
  conf_buf_free(&src);
  conf_pair_close(&p);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ual/rmr/posts-without-lock", test_posts_without_lock);
  return g_test_run();
}
