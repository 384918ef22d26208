/*
 * The data path takes no object lock (issue 26 point 5): while another
 * thread holds ual_lock,
 * - the RMR posts (it_rmr_link, it_rmr_unlink, it_post_rdma_read_to_rmr)
 *   run to the provider and return; each link and unlink then completes
 *   as usual once the lock is free again;
 * - a completion's notification (the provider's cq_notify upcall) reaches
 *   the EVD's callback, and it_evd_wait takes the completion.
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

static void
on_event(it_evd_handle_t evd, void *arg)
{
  (void) evd;
  g_atomic_int_inc((gint *) arg);
}

static void
test_notify_without_lock(void)
{
  g_test_summary("While another thread holds ual_lock, a Send's receive completion notifies the receiving "
                 "EVD's callback (cq_notify), and it_evd_wait on that EVD then returns the completion, its "
                 "bytes landed");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_buf_t sb, rb;
  conf_buf_new(&p.a, &sb, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rb, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&sb, 7);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  it_lmr_triplet_t r = conf_seg(&rb, 0, LEN), s = conf_seg(&sb, 0, LEN);
  conf_ok(it_post_recv(p.p.ep, &r, 1, 1, IT_COMPLETION_FLAG));
  gint calls = 0;
  conf_ok(it_evd_callback_attach(p.p.dto, on_event, &calls));

  holder_t h = { 0 };
  GThread *t = g_thread_new("holder", hold_lock, &h);
  while (!g_atomic_int_get(&h.held))
    g_thread_yield();
  conf_ok(it_post_send(p.a.ep, &s, 1, 2, IT_COMPLETION_FLAG));
  gint64 end = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;
  while (g_atomic_int_get(&calls) == 0 && g_get_monotonic_time() < end)
    g_usleep(1000);
  int notified = g_atomic_int_get(&calls);
  it_event_t ev = { 0 };
  it_status_t st = IT_ERR_QUEUE_EMPTY;
  if (notified > 0) {
    conf_ok(it_evd_callback_detach(p.p.dto));
    st = it_evd_wait(p.p.dto, 2 * G_USEC_PER_SEC, &ev, NULL);
  }
  gboolean released = g_atomic_int_get(&h.released);
  g_atomic_int_set(&h.done, 1);
  g_thread_join(t);
  if (notified == 0 || released)
    g_error("the receive completion's notification did not reach the EVD's callback while another "
            "thread held ual_lock (%d calls, lock %s)", notified, released ? "let go" : "held");
  conf_ok(st);
  g_assert_cmpint(ev.event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 1);
  conf_buf_check(&rb, 0, LEN, 7);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  conf_pair_close(&p);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ual/rmr/posts-without-lock", test_posts_without_lock);
  g_test_add_func("/ual/evd/notify-without-lock", test_notify_without_lock);
  return g_test_run();
}
