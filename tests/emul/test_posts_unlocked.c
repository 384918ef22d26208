/*
 * vp/emul's posts that take no process-wide lock (issue 26, point 5).
 *
 * Beside memory windows and fast-registered regions: a window's or a
 * fast-registered region's table entry changes under the fabric lock (a
 * bind, a link, an invalidation), so a request that names one runs under
 * that lock; one that names none runs under its connection's link alone,
 * whether or not such entries exist in the process (emul_key_fixed).
 * Before, a single window or unlinked LMR anywhere in the process sent
 * every post of every thread to the fabric lock.
 *
 * Shared receive queues: an SRQ has a lock of its own (emul_srq.c), so a
 * Send into it and a receive posted to it take no process-wide lock
 * either (before, every connection with an SRQ ran under the fabric
 * lock); a Send that finds it empty waits (InfiniBand's RNR retry) until
 * a receive comes, whichever thread posts it.
 *
 * How it is seen: this thread holds the fabric lock (the internals are
 * linked in) while another posts and takes the completion by
 * it_evd_dequeue.  A post that needs the lock cannot complete meanwhile;
 * one that does not, completes.  Then the lock is let go and the bytes
 * are checked.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "conf.h"
#include "emul.h"

#define LEN 4096
#define HELD_US (2 * G_USEC_PER_SEC)

/* A request posted by a thread of its own, which then polls for its
 * completion: done once it came (or a status other than an empty queue). */
typedef struct {
  it_evd_handle_t evd;
  it_event_type_t want;
  int (*post)(gpointer data);
  gpointer data;
  gint done;
  it_event_t ev;
  it_status_t last;
} poster_t;

static gpointer
poster_run(gpointer data)
{
  poster_t *p = data;
  p->last = p->post(p->data);
  if (p->last == IT_SUCCESS) {
    gint64 end = g_get_monotonic_time() + 2 * HELD_US;
    do {
      p->last = it_evd_dequeue(p->evd, &p->ev);
    } while (p->last == IT_ERR_QUEUE_EMPTY && g_get_monotonic_time() < end);
  }
  g_atomic_int_set(&p->done, 1);
  return NULL;
}

/* Run @p's post and poll while this thread holds the fabric lock for up
 * to HELD_US: TRUE when it completed meanwhile.  The lock is let go, and
 * the completion taken, before it returns. */
static gboolean
post_beside_lock(poster_t *p)
{
  emul_fabric_lock();
  GThread *t = g_thread_new("poster", poster_run, p);
  gint64 end = g_get_monotonic_time() + HELD_US;
  while (!g_atomic_int_get(&p->done) && g_get_monotonic_time() < end)
    g_usleep(1000);
  gboolean in_time = g_atomic_int_get(&p->done);
  emul_fabric_unlock();
  g_thread_join(t);
  if (p->last != IT_SUCCESS)
    g_error("the post or its completion returned %s (%s)", itx_status_name(p->last), itx_error_detail());
  g_assert_cmpstr(itx_event_name(p->ev.event_number), ==, itx_event_name(p->want));
  g_assert_cmpstr(itx_dto_status_name(p->ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_SUCCESS));
  return in_time;
}

typedef struct {
  conf_pair_t p;
  conf_buf_t src, dst;
  it_rmr_handle_t rmr;     /* a window, bound to dst */
  it_rmr_context_t win;    /* its context */
  it_lmr_handle_t fr;      /* an unlinked LMR, linked to dst */
  it_rmr_context_t fr_ctx;
} fixture_t;

static void
fixture_open(fixture_t *f)
{
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.priv_ops_enable = IT_TRUE;
  conf_pair_open2(&f->p, &a, &a);
  conf_pair_connect(&f->p, NULL, 0, NULL, 0);
  conf_buf_new(&f->p.a, &f->src, LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&f->p.p, &f->dst, LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&f->src, 7);
  /* A window bound to the target's region, and an unlinked LMR linked to
   * it: both alive while every test runs. */
  conf_ok(it_rmr_create20(f->p.p.pz, IT_RMR_TYPE_DEFAULT, &f->rmr));
  conf_ok(it_rmr_link(f->rmr, f->dst.lmr, f->dst.data, LEN, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                      f->p.p.ep, 1, IT_COMPLETION_FLAG, &f->win));
  conf_dto(f->p.p.dto, IT_RMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_ok(it_lmr_create_unlinked(f->p.p.pz, 4, IT_LMR_FLAG_NONE, 0, &f->fr));
  conf_ok(it_lmr_link(f->fr, f->dst.data, NULL, LEN, IT_ADDR_MODE_ABSOLUTE,
                      IT_PRIV_LOCAL | IT_PRIV_REMOTE, f->p.p.ep, 2, IT_COMPLETION_FLAG, &f->fr_ctx));
  conf_dto(f->p.p.dto, IT_LMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 2);
}

static void
fixture_close(fixture_t *f)
{
  conf_ok(it_rmr_free(f->rmr));
  conf_ok(it_lmr_free(f->fr));
  conf_buf_free(&f->src);
  conf_buf_free(&f->dst);
  conf_pair_close(&f->p);
}

typedef struct {
  fixture_t *f;
  it_rmr_context_t ctx;
} write_t;

static int
post_write(gpointer data)
{
  write_t *w = data;
  it_lmr_triplet_t s = conf_seg(&w->f->src, 0, LEN);
  return it_post_rdma_write(w->f->p.a.ep, &s, 1, 5, IT_COMPLETION_FLAG,
                            it_make_rdma_addr_absolute(w->f->dst.data), w->ctx);
}

static void
test_write_unlocked(void)
{
  g_test_summary("emul: with a bound window and a linked unlinked LMR in the process, an RDMA Write "
                 "between plain LMRs completes while the fabric lock is held by another thread; one "
                 "through the window's context waits for the lock; both land");
  fixture_t f;
  fixture_open(&f);
  write_t w = { &f, f.dst.ctx };
  poster_t p = { .evd = f.p.a.dto, .want = IT_DTO_RDMA_WRITE_CMPL_EVENT, .post = post_write, .data = &w };
  g_assert_true(post_beside_lock(&p));
  conf_buf_check(&f.dst, 0, LEN, 7);

  /* Through the window: its entry changes under the fabric lock, so the
   * Write is made under it, once it is let go. */
  memset(f.dst.data, 0, LEN);
  w.ctx = f.win;
  poster_t q = { .evd = f.p.a.dto, .want = IT_DTO_RDMA_WRITE_CMPL_EVENT, .post = post_write, .data = &w };
  g_assert_false(post_beside_lock(&q));
  conf_buf_check(&f.dst, 0, LEN, 7);
  fixture_close(&f);
}

static int
post_send(gpointer data)
{
  fixture_t *f = data;
  it_lmr_triplet_t g = conf_seg(&f->src, 0, LEN);
  return it_post_send(f->p.a.ep, &g, 1, 6, IT_COMPLETION_FLAG);
}

static void
send_beside_lock(fixture_t *f, gboolean into_fr, gboolean unlocked)
{
  memset(f->dst.data, 0, LEN);
  it_lmr_triplet_t r = conf_seg(&f->dst, 0, LEN);
  if (into_fr)
    r.lmr = f->fr;
  conf_ok(it_post_recv(f->p.p.ep, &r, 1, 8, IT_COMPLETION_FLAG));
  poster_t p = { .evd = f->p.a.dto, .want = IT_DTO_SEND_CMPL_EVENT, .post = post_send, .data = f };
  g_assert_cmpint(post_beside_lock(&p), ==, unlocked);
  it_dto_cmpl_event_t d = conf_dto(f->p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 8);
  g_assert_cmpuint(d.transferred_length, ==, LEN);
  conf_buf_check(&f->dst, 0, LEN, 7);
}

static void
test_send_unlocked(void)
{
  g_test_summary("emul: with a bound window and a linked unlinked LMR in the process, a Send into a "
                 "receive of a plain LMR completes while the fabric lock is held by another thread; "
                 "one into a receive of the unlinked LMR waits for the lock; both land");
  fixture_t f;
  fixture_open(&f);
  send_beside_lock(&f, FALSE, TRUE);
  send_beside_lock(&f, TRUE, FALSE);
  fixture_close(&f);
}

#define UD_LEN 1000
#define UD_QKEY 0x5eedu

typedef struct {
  it_ep_handle_t ep;
  it_lmr_triplet_t seg;
  it_dg_remote_ep_addr_t dst;
} sendto_t;

static int
post_sendto(gpointer data)
{
  sendto_t *s = data;
  return it_post_sendto(s->ep, &s->seg, 1, 11, IT_COMPLETION_FLAG, &s->dst);
}

static void
test_datagram_unlocked(void)
{
  g_test_summary("emul: with a bound window and a linked unlinked LMR in the process, a datagram a UD "
                 "EP sends itself into a receive of a plain LMR completes while the fabric lock is "
                 "held by another thread; one into a receive of the unlinked LMR waits for the lock; "
                 "both land");
  fixture_t f;
  fixture_open(&f);
  it_evd_handle_t req, rcv;
  conf_ok(it_evd_create(f.p.p.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE,
                        &req, NULL));
  conf_ok(it_evd_create(f.p.p.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE,
                        &rcv, NULL));
  it_ep_attributes_t a;
  memset(&a, 0, sizeof(a));
  a.max_dto_payload_size = UD_LEN;
  a.max_request_dtos = 4;
  a.max_recv_dtos = 4;
  a.max_send_segments = 1;
  a.max_recv_segments = 1;
  a.srv.ud.ep_info.ud_ep_key = UD_QKEY;
  it_ep_handle_t ep;
  conf_ok(it_ep_ud_create(f.p.p.pz, req, rcv, &a, 0, &ep));
  it_ep_param_t prm;
  conf_ok(it_ep_query(ep, IT_EP_PARAM_ALL, &prm));
  it_path_t path;
  conf_path(&f.p.p, &path);
  it_addr_handle_t ah;
  conf_ok(it_address_handle_create(f.p.p.pz, &path, 0, &ah));
  /* The source: the target's region (the same PZ), its pattern. */
  conf_buf_t src;
  conf_buf_new(&f.p.p, &src, UD_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 9);
  sendto_t s = { .ep = ep, .seg = conf_seg(&src, 0, UD_LEN), .dst = { .type = IT_DG_TYPE_IB_UD } };
  s.dst.addr.ud.addr = ah;
  s.dst.addr.ud.ep_info.ud_ep_id = prm.attr.srv.ud.ep_info.ud_ep_id;
  s.dst.addr.ud.ep_info.ud_ep_key = UD_QKEY;
  for (int into_fr = 0; into_fr < 2; into_fr++) {
    memset(f.dst.data, 0, LEN);
    it_lmr_triplet_t r = conf_seg(&f.dst, 0, EMUL_UD_GRH_LEN + UD_LEN);
    if (into_fr)
      r.lmr = f.fr;
    conf_ok(it_post_recvfrom(ep, &r, 1, 12, IT_COMPLETION_FLAG));
    poster_t p = { .evd = req, .want = IT_DTO_SEND_CMPL_EVENT, .post = post_sendto, .data = &s };
    g_assert_cmpint(post_beside_lock(&p), ==, !into_fr);
    it_event_t ev;
    size_t more;
    conf_ok(it_evd_wait(rcv, conf_wait_us(), &ev, &more));
    g_assert_cmpstr(itx_event_name(ev.event_number), ==, itx_event_name(IT_DTO_UD_RECV_CMPL_EVENT));
    g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_SUCCESS));
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 12);
    conf_buf_t landed = f.dst;
    landed.data = f.dst.data + EMUL_UD_GRH_LEN;
    conf_buf_check(&landed, 0, UD_LEN, 9);
  }
  conf_ok(it_ep_free(ep));
  conf_ok(it_address_handle_free(ah));
  conf_buf_free(&src);
  conf_ok(it_evd_free(req));
  conf_ok(it_evd_free(rcv));
  fixture_close(&f);
}

/* Two connections into one process whose passive endpoints take their
 * receives from one SRQ of @depth receives. */
typedef struct {
  conf_side_t p, a[2];
  it_srq_handle_t srq;
  it_ep_handle_t ep[2];
  it_listen_handle_t lh;
  conf_buf_t rb, sb[2];
} srq_pair_t;

#define SRQ_MSG 256

static void
srq_pair_open(srq_pair_t *t, size_t depth, size_t msgs)
{
  conf_side_open(&t->p, NULL);
  conf_ok(it_srq_create(t->p.pz, 1, depth, &t->srq));
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  conf_ok(it_listen_create(t->p.ia, 0, t->p.req, IT_LISTEN_NO_FLAG, &q, &t->lh));
  conf_buf_new(&t->p, &t->rb, msgs * SRQ_MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (int i = 0; i < 2; i++) {
    it_ep_attributes_t a;
    conf_default_attr(&a);
    a.max_request_dtos = 64;
    a.srv.rc.srq = t->srq;
    conf_ok(it_ep_rc_create(t->p.pz, t->p.dto, t->p.dto, t->p.cm, IT_EP_SRQ, &a, &t->ep[i]));
    conf_side_open(&t->a[i], NULL);
    conf_buf_new(&t->a[i], &t->sb[i], SRQ_MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_fill(&t->sb[i], 20 + (unsigned) i);
    conf_ok(conf_connect(&t->a[i], t->a[i].ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
    it_event_t ev = conf_wait(t->p.req, IT_CM_REQ_CONN_REQUEST_EVENT);
    conf_ok(it_ep_accept(t->ep[i], ev.conn_req.cn_est_id, NULL, 0));
    conf_wait(t->a[i].cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    conf_wait(t->p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  }
}

static void
srq_pair_close(srq_pair_t *t)
{
  for (int i = 0; i < 2; i++) {
    conf_ok(it_ep_free(t->ep[i]));
    conf_buf_free(&t->sb[i]);
    conf_side_close(&t->a[i]);
  }
  conf_ok(it_srq_free(t->srq));
  conf_ok(it_listen_free(t->lh));
  conf_buf_free(&t->rb);
  conf_side_close(&t->p);
}

static void
srq_post_recv(srq_pair_t *t, size_t slot)
{
  it_lmr_triplet_t r = conf_seg(&t->rb, slot * SRQ_MSG, SRQ_MSG);
  conf_ok(it_post_recv(t->srq, &r, 1, 1000 + slot, IT_COMPLETION_FLAG));
}

static int
post_srq_then_send(gpointer data)
{
  srq_pair_t *t = data;
  it_lmr_triplet_t r = conf_seg(&t->rb, 0, SRQ_MSG);
  it_status_t st = it_post_recv(t->srq, &r, 1, 1000, IT_COMPLETION_FLAG);
  if (st != IT_SUCCESS)
    return st;
  it_lmr_triplet_t s = conf_seg(&t->sb[1], 0, SRQ_MSG);
  return it_post_send(t->a[1].ep, &s, 1, 7, IT_COMPLETION_FLAG);
}

static void
test_srq_unlocked(void)
{
  g_test_summary("emul: a receive posted to an SRQ and a Send into it, on the second of two "
                 "connections sharing it, complete while another thread holds the fabric lock; "
                 "the message lands in the SRQ's receive, completed on the second endpoint");
  srq_pair_t t;
  srq_pair_open(&t, 4, 1);
  poster_t p = { .evd = t.a[1].dto, .want = IT_DTO_SEND_CMPL_EVENT, .post = post_srq_then_send,
                 .data = &t };
  g_assert_true(post_beside_lock(&p));
  it_dto_cmpl_event_t d = conf_dto(t.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1000);
  g_assert_true(d.ep == t.ep[1]);
  g_assert_cmpuint(d.transferred_length, ==, SRQ_MSG);
  conf_buf_check(&t.rb, 0, SRQ_MSG, 21);
  srq_pair_close(&t);
}

/* One connection's sender: ROUNDS Sends, at most 32 outstanding. */
#define SRQ_ROUNDS 2000
typedef struct {
  srq_pair_t *t;
  int i;
} srq_sender_t;

static gpointer
srq_send_run(gpointer data)
{
  srq_sender_t *s = data;
  conf_side_t *a = &s->t->a[s->i];
  it_lmr_triplet_t seg = conf_seg(&s->t->sb[s->i], 0, SRQ_MSG);
  unsigned posted = 0, done = 0;
  while (done < SRQ_ROUNDS) {
    while (posted < SRQ_ROUNDS && posted - done < 32)
      conf_ok(it_post_send(a->ep, &seg, 1, posted++, IT_COMPLETION_FLAG));
    it_event_t ev;
    size_t more;
    conf_ok(it_evd_wait(a->dto, conf_wait_us(), &ev, &more));
    g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_SUCCESS));
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, done);
    done++;
  }
  return NULL;
}

static void
test_srq_waiting_sends(void)
{
  g_test_summary("emul: two threads each send 2000 messages on their own connection into one SRQ "
                 "that this thread keeps short (8 receives at a time, refilled as they complete): "
                 "every Send that finds the SRQ empty waits (InfiniBand's RNR retry) and goes on "
                 "when a receive comes; every message lands whole, each receive once");
  conf_side_t probe;
  conf_side_open(&probe, NULL);
  gboolean rnr = conf_transport(&probe) != IT_IWARP_TCP_TRANSPORT;
  conf_side_close(&probe);
  if (!conf_require(rnr, "a Send that finds no receive waits (InfiniBand's RNR retry)"))
    return;
  srq_pair_t t;
  enum { SLOTS = 8 };
  srq_pair_open(&t, SLOTS, SLOTS);
  GThread *th[2];
  srq_sender_t s[2];
  for (int i = 0; i < 2; i++) {
    s[i] = (srq_sender_t) { &t, i };
    th[i] = g_thread_new("sender", srq_send_run, &s[i]);
  }
  unsigned got[2] = { 0, 0 };
  for (size_t k = 0; k < SLOTS; k++)
    srq_post_recv(&t, k);
  for (unsigned n = 0; n < 2 * SRQ_ROUNDS; n++) {
    it_event_t ev;
    size_t more;
    it_status_t st = it_evd_wait(t.p.dto, conf_wait_us(), &ev, &more);
    if (st != IT_SUCCESS)
      g_error("receive %u of %u: it_evd_wait returned %s with senders waiting (%u and %u messages "
              "in): a receive posted to the SRQ did not let a waiting Send go on?", n, 2 * SRQ_ROUNDS,
              itx_status_name(st), got[0], got[1]);
    g_assert_cmpstr(itx_event_name(ev.event_number), ==, itx_event_name(IT_DTO_RC_RECV_CMPL_EVENT));
    g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_SUCCESS));
    g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, SRQ_MSG);
    int from = ev.dto_cmpl.ep == t.ep[0] ? 0 : 1;
    size_t slot = (size_t) (ev.dto_cmpl.cookie - 1000);
    g_assert_cmpuint(slot, <, SLOTS);
    conf_buf_t one = t.rb;
    one.data = t.rb.data + slot * SRQ_MSG;
    conf_buf_check(&one, 0, SRQ_MSG, 20 + (unsigned) from);
    got[from]++;
    srq_post_recv(&t, slot);
  }
  for (int i = 0; i < 2; i++)
    g_thread_join(th[i]);
  g_assert_cmpuint(got[0], ==, SRQ_ROUNDS);
  g_assert_cmpuint(got[1], ==, SRQ_ROUNDS);
  srq_pair_close(&t);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_setenv("ITAPI_PROVIDER", "emul", TRUE);
  g_setenv("ITAPI_CONF_IA", "emul0", TRUE);
  g_test_add_func("/emul/posts-unlocked/write-beside-window", test_write_unlocked);
  g_test_add_func("/emul/posts-unlocked/send-beside-window", test_send_unlocked);
  g_test_add_func("/emul/posts-unlocked/datagram-beside-window", test_datagram_unlocked);
  g_test_add_func("/emul/posts-unlocked/srq", test_srq_unlocked);
  g_test_add_func("/emul/posts-unlocked/srq-waiting-sends", test_srq_waiting_sends);
  return g_test_run();
}
