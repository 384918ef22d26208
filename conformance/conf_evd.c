/*
 * Conformance: event dispatchers (IT-API EVD area): dequeue and wait,
 * file descriptors and thresholds, software events, overflow, aggregate
 * EVDs, creation errors, busy EVDs, waiters, callbacks, query and modify.
 *
 * SPDX-License-Identifier: MIT
 */
#include <poll.h>
#include <string.h>

#include "conf.h"

#define assert_handle_eq(a, b) \
  g_assert_cmphex((guint64) (uintptr_t) (a), ==, (guint64) (uintptr_t) (b))

static it_evd_handle_t
sw_evd(conf_side_t *s, size_t qsize, size_t threshold, it_evd_flags_t flags, it_evd_handle_t aevd, int *fd)
{
  it_evd_handle_t evd = IT_NULL_HANDLE;
  conf_ok(it_evd_create(s->ia, IT_SOFTWARE_EVENT_STREAM, flags, qsize, threshold, aevd, &evd, fd));
  return evd;
}

/* Whether @fd polls readable within @ms milliseconds. */
static gboolean
readable(int fd, int ms)
{
  struct pollfd pfd = { .fd = fd, .events = POLLIN };
  int r = poll(&pfd, 1, ms);
  g_assert_cmpint(r, >=, 0);
  return r > 0 && (pfd.revents & POLLIN) != 0;
}

/* Give side @s a new EP whose request EVD is @req (receives go to s->dto). */
static void
replace_ep(conf_side_t *s, it_evd_handle_t req)
{
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  conf_ok(it_ep_free(s->ep));
  conf_ok(it_ep_rc_create(s->pz, req, s->dto, s->cm, IT_EP_NO_FLAG, &attr, &s->ep));
}

/* Post @n signaled 8-byte RDMA Writes from a to @dst, cookies base.. */
static void
post_writes(conf_pair_t *p, conf_buf_t *src, conf_buf_t *dst, unsigned n, it_dto_cookie_t base)
{
  for (unsigned i = 0; i < n; i++) {
    it_lmr_triplet_t s = conf_seg(src, (i % 8) * 8, 8);
    conf_ok(it_post_rdma_write(p->a.ep, &s, 1, base + i, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute(dst->data + (i % 8) * 8), dst->ctx));
  }
}

static void
test_empty(void)
{
  g_test_summary("IT-API EVD: it_evd_dequeue on an empty EVD returns IT_ERR_QUEUE_EMPTY; "
                 "it_evd_wait with a 10 ms timeout returns IT_ERR_TIMEOUT_EXPIRED after >= 10 ms");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t sw = sw_evd(&s, 4, 1, IT_EVD_OVERFLOW_DEFAULT, IT_NULL_HANDLE, NULL);
  it_evd_handle_t evds[] = { sw, s.dto, s.cm, s.aff };
  for (size_t i = 0; i < G_N_ELEMENTS(evds); i++) {
    it_event_t ev;
    size_t more = 0;
    conf_assert_status(it_evd_dequeue(evds[i], &ev), IT_ERR_QUEUE_EMPTY);
    gint64 t0 = g_get_monotonic_time();
    conf_assert_status(conf_evd_wait(evds[i], 10000, &ev, &more), IT_ERR_TIMEOUT_EXPIRED);
    gint64 took = g_get_monotonic_time() - t0;
    g_assert_cmpint(took, >=, 9500);
    g_assert_cmpint(took, <, 2 * G_USEC_PER_SEC);
  }
  conf_side_close(&s);
}

static void
test_fd_software(void)
{
  g_test_summary("IT-API EVD: the fd of a software EVD created with IT_EVD_CREATE_FD is not "
                 "readable while empty, readable once an event is queued, quiet again when drained");
  conf_side_t s;
  conf_side_open(&s, NULL);
  int fd = -1;
  it_evd_handle_t evd = sw_evd(&s, 4, 1, IT_EVD_CREATE_FD, IT_NULL_HANDLE, &fd);
  g_assert_cmpint(fd, >=, 0);
  g_assert_false(readable(fd, 0));
  int token;
  conf_ok(it_evd_post_se(evd, &token));
  g_assert_true(readable(fd, 0));
  g_assert_true(readable(fd, 0)); /* level, not consumed by polling */
  it_event_t ev;
  conf_ok(it_evd_dequeue(evd, &ev));
  g_assert_cmpint(ev.event_number, ==, IT_SOFTWARE_EVENT);
  g_assert_true(ev.sw.data == &token);
  g_assert_false(readable(fd, 0));
  /* And again: the fd follows every round. */
  conf_ok(it_evd_post_se(evd, &token));
  g_assert_true(readable(fd, 0));
  conf_ok(it_evd_dequeue(evd, &ev));
  g_assert_false(readable(fd, 0));
  conf_ok(it_evd_free(evd));
  conf_side_close(&s);
}

static void
test_fd_dto(void)
{
  g_test_summary("IT-API EVD: the fd of a DTO EVD created with IT_EVD_CREATE_FD is not readable "
                 "while empty, readable once a completion is queued, quiet again when drained");
  conf_pair_t p;
  conf_pair_open(&p);
  int fd = -1;
  it_evd_handle_t evd;
  conf_ok(it_evd_create(p.a.ia, IT_DTO_EVENT_STREAM, IT_EVD_CREATE_FD, 16, 1, IT_NULL_HANDLE, &evd, &fd));
  g_assert_cmpint(fd, >=, 0);
  replace_ep(&p.a, evd);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 64, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  g_assert_false(readable(fd, 0));
  for (int round = 0; round < 2; round++) {
    post_writes(&p, &src, &dst, 1, 10 + round);
    g_assert_true(readable(fd, 5000));
    it_event_t ev;
    conf_ok(it_evd_dequeue(evd, &ev));
    g_assert_cmpint(ev.event_number, ==, IT_DTO_RDMA_WRITE_CMPL_EVENT);
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 10 + round);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    assert_handle_eq(ev.dto_cmpl.evd, evd);
    g_assert_false(readable(fd, 0));
  }
  conf_assert_empty(evd);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_fd_threshold(gconstpointer data)
{
  gboolean dto = GPOINTER_TO_INT(data);
  g_test_summary("IT-API EVD: with threshold 3 the EVD's fd stays quiet with 2 events queued and "
                 "becomes readable with the third (software and DTO streams)");
  conf_pair_t p;
  conf_buf_t src, dst;
  int fd = -1;
  it_evd_handle_t evd;
  int tokens[3];
  conf_pair_open(&p);
  if (dto) {
    conf_ok(it_evd_create(p.a.ia, IT_DTO_EVENT_STREAM, IT_EVD_CREATE_FD, 16, 3, IT_NULL_HANDLE, &evd, &fd));
    replace_ep(&p.a, evd);
    conf_pair_connect(&p, NULL, 0, NULL, 0);
    conf_buf_new(&p.a, &src, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.p, &dst, 64, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  } else {
    evd = sw_evd(&p.a, 16, 3, IT_EVD_CREATE_FD, IT_NULL_HANDLE, &fd);
  }
  for (int i = 0; i < 3; i++) {
    g_assert_false(readable(fd, i == 0 ? 0 : 50));
    if (dto)
      post_writes(&p, &src, &dst, 1, 20 + i);
    else
      conf_ok(it_evd_post_se(evd, &tokens[i]));
  }
  g_assert_true(readable(fd, 5000));
  for (int i = 0; i < 3; i++) {
    it_event_t ev;
    conf_ok(it_evd_dequeue(evd, &ev));
    if (dto)
      g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 20 + i);
    else
      g_assert_true(ev.sw.data == &tokens[i]);
  }
  g_assert_false(readable(fd, 0));
  if (dto) {
    conf_buf_free(&src);
    conf_buf_free(&dst);
  }
  conf_pair_close(&p);
}

static void
test_fd_mismatch(void)
{
  g_test_summary("IT-API EVD: IT_EVD_CREATE_FD with a NULL fd pointer is refused with "
                 "IT_ERR_MISMATCH_FD; an fd pointer without the flag (as IBM SKV's tests pass) is "
                 "accepted, set to -1, and no descriptor is made");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t evd = IT_NULL_HANDLE;
  int fd = -1;
  conf_assert_status(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_CREATE_FD, 4, 1, IT_NULL_HANDLE,
                                   &evd, NULL), IT_ERR_MISMATCH_FD);
  conf_assert_status(it_evd_create(s.ia, IT_DTO_EVENT_STREAM, IT_EVD_CREATE_FD, 4, 1, IT_NULL_HANDLE,
                                   &evd, NULL), IT_ERR_MISMATCH_FD);
  fd = 12345;
  conf_ok(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
                        &evd, &fd));
  g_assert_cmpint(fd, ==, -1);
  it_evd_param_t q;
  conf_ok(it_evd_query(evd, IT_EVD_PARAM_ALL, &q));
  g_assert_cmpint(q.fd, ==, -1);
  conf_ok(it_evd_post_se(evd, &fd));
  it_event_t ev;
  conf_ok(it_evd_dequeue(evd, &ev));
  g_assert_true(ev.sw.data == &fd);
  conf_ok(it_evd_free(evd));
  /* The same for a DTO EVD, as SKV creates its completion queues. */
  fd = 12345;
  conf_ok(it_evd_create(s.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE, &evd, &fd));
  g_assert_cmpint(fd, ==, -1);
  conf_ok(it_evd_free(evd));
  conf_side_close(&s);
}

static void
test_software_order(void)
{
  g_test_summary("IT-API EVD: it_evd_post_se delivers IT_SOFTWARE_EVENT events carrying the "
                 "pointer in sw.data and the EVD in evd, in posting order");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t evd = sw_evd(&s, 8, 1, IT_EVD_OVERFLOW_DEFAULT, IT_NULL_HANDLE, NULL);
  int tokens[8];
  for (int i = 0; i < 8; i++)
    conf_ok(it_evd_post_se(evd, &tokens[i]));
  for (int i = 0; i < 8; i++) {
    it_event_t ev;
    size_t more = 99;
    if (i % 2 == 0) {
      conf_ok(it_evd_dequeue(evd, &ev));
    } else {
      conf_ok(conf_evd_wait(evd, CONF_TIMEOUT_US, &ev, &more));
      g_assert_cmpuint(more, ==, 7 - i);
    }
    g_assert_cmpint(ev.event_number, ==, IT_SOFTWARE_EVENT);
    assert_handle_eq(ev.sw.evd, evd);
    g_assert_true(ev.sw.data == &tokens[i]);
  }
  conf_assert_empty(evd);
  conf_side_close(&s);
}

static void
test_software_wrong_evd(void)
{
  g_test_summary("IT-API EVD: it_evd_post_se on an EVD of another stream returns "
                 "IT_ERR_INVALID_SOFT_EVD and queues nothing");
  conf_side_t s;
  conf_side_open(&s, NULL);
  int token;
  it_evd_handle_t evds[] = { s.dto, s.cm, s.req, s.aff };
  for (size_t i = 0; i < G_N_ELEMENTS(evds); i++) {
    conf_assert_status(it_evd_post_se(evds[i], &token), IT_ERR_INVALID_SOFT_EVD);
    conf_assert_empty(evds[i]);
  }
  conf_side_close(&s);
}

static void
test_software_full(void)
{
  g_test_summary("IT-API EVD: a software EVD of queue size 2 refuses a third it_evd_post_se with "
                 "IT_ERR_EVD_QUEUE_FULL and keeps the first two; room comes back after a dequeue");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t evd = sw_evd(&s, 2, 1, IT_EVD_OVERFLOW_DEFAULT, IT_NULL_HANDLE, NULL);
  int t[4];
  conf_ok(it_evd_post_se(evd, &t[0]));
  conf_ok(it_evd_post_se(evd, &t[1]));
  conf_assert_status(it_evd_post_se(evd, &t[2]), IT_ERR_EVD_QUEUE_FULL);
  it_event_t ev;
  conf_ok(it_evd_dequeue(evd, &ev));
  g_assert_true(ev.sw.data == &t[0]);
  conf_ok(it_evd_post_se(evd, &t[3]));
  conf_ok(it_evd_dequeue(evd, &ev));
  g_assert_true(ev.sw.data == &t[1]);
  conf_ok(it_evd_dequeue(evd, &ev));
  g_assert_true(ev.sw.data == &t[3]);
  conf_assert_empty(evd);
  conf_side_close(&s);
}

/* A connected pair whose active EP completes on a DTO EVD of 4 entries
 * (returned), and a 64-byte source and remote-writable sink for the
 * Writes that overflow it. */
static it_evd_handle_t
overflow_pair(conf_pair_t *p, conf_buf_t *src, conf_buf_t *dst)
{
  it_evd_handle_t small;
  conf_pair_open(p);
  conf_ok(it_evd_create(p->a.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE, &small, NULL));
  replace_ep(&p->a, small);
  conf_pair_connect(p, NULL, 0, NULL, 0);
  conf_buf_new(&p->a, src, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p->p, dst, 64, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  return small;
}

static void
test_overflow(void)
{
  g_test_summary("IT-API EVD: a DTO EVD of size 4 given 8 completions drops none, reports "
                 "evd_overflowed and raises IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE naming it");
  conf_pair_t p;
  conf_buf_t src, dst;
  it_evd_handle_t small = overflow_pair(&p, &src, &dst);
  it_evd_param_t prm;
  conf_ok(it_evd_query(small, IT_EVD_PARAM_ALL, &prm));
  g_assert_false(prm.evd_overflowed);

  post_writes(&p, &src, &dst, 8, 100);
  it_event_t ev = conf_wait(p.a.aff, IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE);
  assert_handle_eq(ev.aff_async.cause.sevd, small);
  conf_ok(it_evd_query(small, IT_EVD_PARAM_ALL, &prm));
  g_assert_true(prm.evd_overflowed);
  for (unsigned i = 0; i < 8; i++) {
    it_dto_cmpl_event_t d = conf_dto(small, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 100 + i);
    assert_handle_eq(d.ep, p.a.ep);
  }
  conf_assert_empty(small);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static it_evd_handle_t
aevd_new(conf_side_t *s, it_evd_flags_t flags)
{
  it_evd_handle_t a;
  conf_ok(it_evd_create(s->ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, flags, 0, 0, IT_NULL_HANDLE, &a, NULL));
  return a;
}

/* Take @n events from @evd with itx_evd_dequeue_n, at most @max a call,
 * into @evs; fail if they do not come within the test's wait. */
static void
dequeue_n_all(it_evd_handle_t evd, size_t max, it_event_t *evs, size_t n)
{
  cert_limit_t w;
  cert_limit_beginf(&w, conf_wait_us(), "%zu events (itx_evd_dequeue_n)", n);
  size_t got = 0;
  while (got < n) {
    size_t k = 999;
    it_status_t st = itx_evd_dequeue_n(evd, MIN(max, n - got), evs + got, &k);
    if (st == IT_ERR_QUEUE_EMPTY) {
      g_assert_cmpuint(k, ==, 999);
      if (cert_limit_over(&w))
        g_error("itx_evd_dequeue_n: %zu of %zu events after the wait", got, n);
      g_usleep(100);
      continue;
    }
    conf_ok(st);
    g_assert_cmpuint(k, >=, 1);
    g_assert_cmpuint(k, <=, MIN(max, n - got));
    got += k;
  }
  cert_limit_end(&w);
}

static void
test_dequeue_n_software(void)
{
  g_test_summary("itx_evd_dequeue_n on a software EVD: the events it_evd_dequeue would give, in "
                 "posting order, at most max a call; the fd falls when the EVD is drained; then "
                 "IT_ERR_QUEUE_EMPTY with count untouched");
  conf_side_t s;
  conf_side_open(&s, NULL);
  int fd = -1;
  it_evd_handle_t evd = sw_evd(&s, 16, 1, IT_EVD_CREATE_FD, IT_NULL_HANDLE, &fd);
  int tokens[8];
  for (int i = 0; i < 8; i++)
    conf_ok(it_evd_post_se(evd, &tokens[i]));
  g_assert_true(readable(fd, 0));
  it_event_t evs[16];
  size_t k = 0;
  conf_ok(itx_evd_dequeue_n(evd, 3, evs, &k));
  g_assert_cmpuint(k, ==, 3);
  conf_ok(itx_evd_dequeue_n(evd, 16, evs + 3, &k));
  g_assert_cmpuint(k, ==, 5);
  for (int i = 0; i < 8; i++) {
    g_assert_cmpint(evs[i].event_number, ==, IT_SOFTWARE_EVENT);
    assert_handle_eq(evs[i].sw.evd, evd);
    g_assert_true(evs[i].sw.data == &tokens[i]);
  }
  g_assert_false(readable(fd, 0));
  k = 77;
  conf_assert_status(itx_evd_dequeue_n(evd, 16, evs, &k), IT_ERR_QUEUE_EMPTY);
  g_assert_cmpuint(k, ==, 77);
  conf_ok(it_evd_free(evd));
  conf_side_close(&s);
}

static void
test_dequeue_n_dto(void)
{
  g_test_summary("itx_evd_dequeue_n on a DTO EVD: a burst of 40 RDMA Writes taken 16 at a time gives "
                 "the events, field by field, that it_evd_dequeue gives for the same burst (event, "
                 "EVD, EP, status, length, cookies in posting order)");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 64, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  enum { N = 40 };
  it_event_t one[N], many[N];
  post_writes(&p, &src, &dst, N, 1000);
  for (unsigned i = 0; i < N; i++)
    one[i] = conf_wait(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT);
  /* More than one call's max: the calls continue each other's order. */
  post_writes(&p, &src, &dst, N, 2000);
  dequeue_n_all(p.a.dto, 16, many, N);
  for (unsigned i = 0; i < N; i++) {
    const it_dto_cmpl_event_t *a = &one[i].dto_cmpl, *b = &many[i].dto_cmpl;
    g_assert_cmpint(b->event_number, ==, a->event_number);
    assert_handle_eq(b->evd, a->evd);
    assert_handle_eq(b->ep, a->ep);
    g_assert_cmpint(b->dto_status, ==, a->dto_status);
    g_assert_cmpint(b->dto_status, ==, IT_DTO_SUCCESS);
    g_assert_cmpuint(b->transferred_length, ==, a->transferred_length);
    assert_handle_eq(b->unlinked_mr_handle, a->unlinked_mr_handle);
    g_assert_cmpuint(a->cookie, ==, 1000 + i);
    g_assert_cmpuint(b->cookie, ==, 2000 + i);
  }
  conf_assert_empty(p.a.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_dequeue_n_flushed(void)
{
  g_test_summary("itx_evd_dequeue_n on a DTO EVD takes error completions as it_evd_dequeue does: "
                 "receives flushed by a disconnect come as IT_DTO_RC_RECV_CMPL_EVENT with "
                 "IT_DTO_ERR_FLUSHED, in posting order");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t buf;
  conf_buf_new(&p.p, &buf, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (unsigned i = 0; i < 6; i++) {
    it_lmr_triplet_t seg = conf_seg(&buf, 0, 64);
    conf_ok(it_post_recv(p.p.ep, &seg, 1, 300 + i, IT_COMPLETION_FLAG));
  }
  conf_ok(it_ep_disconnect(p.p.ep, NULL, 0));
  it_event_t evs[6];
  dequeue_n_all(p.p.dto, 4, evs, 6);
  for (unsigned i = 0; i < 6; i++) {
    g_assert_cmpint(evs[i].event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
    g_assert_cmpint(evs[i].dto_cmpl.dto_status, ==, IT_DTO_ERR_FLUSHED);
    g_assert_cmpuint(evs[i].dto_cmpl.cookie, ==, 300 + i);
  }
  conf_buf_free(&buf);
  conf_pair_close(&p);
}

static void
test_dequeue_n_overflow(void)
{
  g_test_summary("itx_evd_dequeue_n on an overflowed DTO EVD (size 4, 8 completions) takes all 8 in "
                 "order, as it_evd_dequeue does: nothing is dropped");
  conf_pair_t p;
  conf_buf_t src, dst;
  it_evd_handle_t small = overflow_pair(&p, &src, &dst);
  post_writes(&p, &src, &dst, 8, 100);
  conf_wait(p.a.aff, IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE);
  it_event_t evs[8];
  dequeue_n_all(small, 8, evs, 8);
  for (unsigned i = 0; i < 8; i++) {
    g_assert_cmpint(evs[i].event_number, ==, IT_DTO_RDMA_WRITE_CMPL_EVENT);
    g_assert_cmpuint(evs[i].dto_cmpl.cookie, ==, 100 + i);
  }
  conf_assert_empty(small);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_dequeue_n_aevd(void)
{
  g_test_summary("itx_evd_dequeue_n on an AEVD gives its SEVDs' events, each SEVD's in order, and "
                 "then IT_ERR_QUEUE_EMPTY");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t a = aevd_new(&s, IT_EVD_OVERFLOW_DEFAULT);
  it_evd_handle_t s1 = sw_evd(&s, 8, 1, IT_EVD_OVERFLOW_DEFAULT, a, NULL);
  it_evd_handle_t s2 = sw_evd(&s, 8, 1, IT_EVD_OVERFLOW_DEFAULT, a, NULL);
  int t1[3], t2[3];
  for (int i = 0; i < 3; i++) {
    conf_ok(it_evd_post_se(s1, &t1[i]));
    conf_ok(it_evd_post_se(s2, &t2[i]));
  }
  it_event_t evs[8];
  size_t k = 0;
  conf_ok(itx_evd_dequeue_n(a, 8, evs, &k));
  g_assert_cmpuint(k, ==, 6);
  int n1 = 0, n2 = 0;
  for (size_t i = 0; i < k; i++) {
    g_assert_cmpint(evs[i].event_number, ==, IT_SOFTWARE_EVENT);
    if (evs[i].sw.evd == s1) {
      g_assert_true(evs[i].sw.data == &t1[n1++]);
    } else {
      assert_handle_eq(evs[i].sw.evd, s2);
      g_assert_true(evs[i].sw.data == &t2[n2++]);
    }
  }
  g_assert_cmpint(n1, ==, 3);
  g_assert_cmpint(n2, ==, 3);
  conf_assert_status(itx_evd_dequeue_n(a, 8, evs, &k), IT_ERR_QUEUE_EMPTY);
  conf_ok(it_evd_free(s1));
  conf_ok(it_evd_free(s2));
  conf_ok(it_evd_free(a));
  conf_side_close(&s);
}

static void
test_dequeue_n_errors(void)
{
  g_test_summary("itx_evd_dequeue_n: max 0 takes nothing and returns IT_SUCCESS with count 0; an "
                 "empty EVD (software, DTO, CM, affiliated) is IT_ERR_QUEUE_EMPTY; a null, freed or "
                 "non-EVD handle IT_ERR_INVALID_EVD; a NULL events or count IT_ERR_FAULT");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t sw = sw_evd(&s, 4, 1, IT_EVD_OVERFLOW_DEFAULT, IT_NULL_HANDLE, NULL);
  it_event_t evs[4];
  size_t k = 55;
  it_evd_handle_t evds[] = { sw, s.dto, s.cm, s.aff };
  for (size_t i = 0; i < G_N_ELEMENTS(evds); i++)
    conf_assert_status(itx_evd_dequeue_n(evds[i], 4, evs, &k), IT_ERR_QUEUE_EMPTY);
  g_assert_cmpuint(k, ==, 55);
  int token;
  conf_ok(it_evd_post_se(sw, &token));
  conf_ok(itx_evd_dequeue_n(sw, 0, evs, &k));
  g_assert_cmpuint(k, ==, 0);
  conf_assert_status(itx_evd_dequeue_n(sw, 4, NULL, &k), IT_ERR_FAULT);
  conf_assert_status(itx_evd_dequeue_n(sw, 4, evs, NULL), IT_ERR_FAULT);
  /* None of these took the event. */
  conf_ok(itx_evd_dequeue_n(sw, 4, evs, &k));
  g_assert_cmpuint(k, ==, 1);
  g_assert_true(evs[0].sw.data == &token);
  conf_assert_status(itx_evd_dequeue_n(IT_NULL_HANDLE, 4, evs, &k), IT_ERR_INVALID_EVD);
  conf_assert_status(itx_evd_dequeue_n((it_evd_handle_t) s.pz, 4, evs, &k), IT_ERR_INVALID_EVD);
  conf_ok(it_evd_free(sw));
  conf_assert_status(itx_evd_dequeue_n(sw, 4, evs, &k), IT_ERR_INVALID_EVD);
  conf_assert_status(itx_evd_dequeue_n(sw, 0, evs, &k), IT_ERR_INVALID_EVD);
  conf_side_close(&s);
}

static void
test_aevd_events(void)
{
  g_test_summary("IT-API EVD: events posted to two SEVDs feeding an AEVD come out of it_evd_wait "
                 "on the AEVD as the real events, their evd naming the SEVD, each SEVD in order");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t a = aevd_new(&s, IT_EVD_OVERFLOW_DEFAULT);
  it_evd_handle_t s1 = sw_evd(&s, 8, 1, IT_EVD_OVERFLOW_DEFAULT, a, NULL);
  it_evd_handle_t s2 = sw_evd(&s, 8, 1, IT_EVD_OVERFLOW_DEFAULT, a, NULL);
  int t1[2], t2[2];
  conf_ok(it_evd_post_se(s1, &t1[0]));
  conf_ok(it_evd_post_se(s2, &t2[0]));
  conf_ok(it_evd_post_se(s1, &t1[1]));
  conf_ok(it_evd_post_se(s2, &t2[1]));
  int n1 = 0, n2 = 0;
  for (int i = 0; i < 4; i++) {
    it_event_t ev;
    size_t more = 0;
    conf_ok(conf_evd_wait(a, CONF_TIMEOUT_US, &ev, &more));
    g_assert_cmpint(ev.event_number, ==, IT_SOFTWARE_EVENT);
    if (ev.sw.evd == s1) {
      g_assert_cmpint(n1, <, 2);
      g_assert_true(ev.sw.data == &t1[n1++]);
    } else {
      assert_handle_eq(ev.sw.evd, s2);
      g_assert_cmpint(n2, <, 2);
      g_assert_true(ev.sw.data == &t2[n2++]);
    }
  }
  g_assert_cmpint(n1, ==, 2);
  g_assert_cmpint(n2, ==, 2);
  it_event_t ev;
  size_t more = 0;
  conf_assert_status(conf_evd_wait(a, 10000, &ev, &more), IT_ERR_TIMEOUT_EXPIRED);
  conf_assert_status(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
  conf_ok(it_evd_free(s1));
  conf_ok(it_evd_free(s2));
  conf_ok(it_evd_free(a));
  conf_side_close(&s);
}

static void
test_aevd_notifications(void)
{
  g_test_summary("IT-API EVD: an AEVD created with IT_EVD_DEQUEUE_NOTIFICATIONS returns "
                 "IT_AEVD_NOTIFICATION_EVENT naming itself and the SEVD; the event stays on the SEVD");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t a = aevd_new(&s, IT_EVD_DEQUEUE_NOTIFICATIONS);
  it_evd_handle_t s1 = sw_evd(&s, 8, 1, IT_EVD_OVERFLOW_DEFAULT, a, NULL);
  it_evd_handle_t s2 = sw_evd(&s, 8, 1, IT_EVD_OVERFLOW_DEFAULT, a, NULL);
  int token;
  conf_ok(it_evd_post_se(s2, &token));
  it_event_t ev;
  size_t more = 0;
  conf_ok(conf_evd_wait(a, CONF_TIMEOUT_US, &ev, &more));
  g_assert_cmpint(ev.event_number, ==, IT_AEVD_NOTIFICATION_EVENT);
  assert_handle_eq(ev.aevd_notify.aevd, a);
  assert_handle_eq(ev.aevd_notify.sevd, s2);
  conf_ok(it_evd_dequeue(s2, &ev));
  g_assert_cmpint(ev.event_number, ==, IT_SOFTWARE_EVENT);
  g_assert_true(ev.sw.data == &token);
  conf_assert_empty(s1);
  conf_assert_empty(s2);
  conf_assert_status(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
  conf_ok(it_evd_free(s1));
  conf_ok(it_evd_free(s2));
  conf_ok(it_evd_free(a));
  conf_side_close(&s);
}

static void
test_aevd_rules(void)
{
  g_test_summary("IT-API EVD: it_evd_wait on an SEVD that feeds an AEVD returns IT_ERR_EVD_WAIT; "
                 "freeing an AEVD with SEVDs attached returns IT_ERR_EVD_BUSY");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t a = aevd_new(&s, IT_EVD_OVERFLOW_DEFAULT);
  it_evd_handle_t s1 = sw_evd(&s, 8, 1, IT_EVD_OVERFLOW_DEFAULT, a, NULL);
  int token;
  it_event_t ev;
  size_t more = 0;
  conf_assert_status(conf_evd_wait(s1, 10000, &ev, &more), IT_ERR_EVD_WAIT);
  conf_ok(it_evd_post_se(s1, &token));
  conf_assert_status(conf_evd_wait(s1, 10000, &ev, &more), IT_ERR_EVD_WAIT);
  conf_assert_status(it_evd_free(a), IT_ERR_EVD_BUSY);
  conf_ok(conf_evd_wait(a, CONF_TIMEOUT_US, &ev, &more)); /* the AEVD still works */
  g_assert_true(ev.sw.data == &token);
  conf_ok(it_evd_free(s1));
  conf_ok(it_evd_free(a));
  conf_side_close(&s);
}

static void
test_create_errors(void)
{
  g_test_summary("IT-API EVD: it_evd_create refuses a second affiliated EVD "
                 "(IT_ERR_ASYNC_AFF_EVD_EXISTS), an unknown stream (IT_ERR_INVALID_EVD_TYPE), a "
                 "threshold above the queue size (IT_ERR_INVALID_THRESHOLD) and queue size 0 "
                 "(IT_ERR_INVALID_QUEUE_SIZE)");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t evd = IT_NULL_HANDLE;
  conf_assert_status(it_evd_create(s.ia, IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
                                   IT_NULL_HANDLE, &evd, NULL), IT_ERR_ASYNC_AFF_EVD_EXISTS);
  conf_assert_status(it_evd_create(s.ia, (it_event_type_t) 0x12345, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
                                   IT_NULL_HANDLE, &evd, NULL), IT_ERR_INVALID_EVD_TYPE);
  conf_assert_status(it_evd_create(s.ia, IT_DTO_SEND_CMPL_EVENT, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
                                   IT_NULL_HANDLE, &evd, NULL), IT_ERR_INVALID_EVD_TYPE);
  conf_assert_status(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 5,
                                   IT_NULL_HANDLE, &evd, NULL), IT_ERR_INVALID_THRESHOLD);
  conf_assert_status(it_evd_create(s.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 5,
                                   IT_NULL_HANDLE, &evd, NULL), IT_ERR_INVALID_THRESHOLD);
  conf_assert_status(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 0, 0,
                                   IT_NULL_HANDLE, &evd, NULL), IT_ERR_INVALID_QUEUE_SIZE);
  conf_assert_status(it_evd_create(s.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 0, 0,
                                   IT_NULL_HANDLE, &evd, NULL), IT_ERR_INVALID_QUEUE_SIZE);
  /* Once the affiliated EVD is gone a new one may be created. */
  conf_ok(it_evd_free(s.aff));
  conf_ok(it_evd_create(s.ia, IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1, IT_NULL_HANDLE,
                        &s.aff, NULL));
  conf_side_close(&s);
}

static void
test_free_busy(void)
{
  g_test_summary("IT-API EVD: it_evd_free of an EVD an EP uses returns IT_ERR_EVD_BUSY; after "
                 "it_ep_free it succeeds");
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_assert_status(it_evd_free(s.dto), IT_ERR_EVD_BUSY);
  conf_assert_status(it_evd_free(s.cm), IT_ERR_EVD_BUSY);
  it_evd_param_t prm;
  conf_ok(it_evd_query(s.dto, IT_EVD_PARAM_ALL, &prm));
  g_assert_true(prm.evd_bound);
  conf_ok(it_ep_free(s.ep));
  s.ep = IT_NULL_HANDLE;
  conf_ok(it_evd_query(s.dto, IT_EVD_PARAM_ALL, &prm));
  g_assert_false(prm.evd_bound);
  conf_ok(it_evd_free(s.dto));
  conf_ok(it_evd_free(s.cm));
  it_event_t ev;
  conf_assert_status(it_evd_dequeue(s.dto, &ev), IT_ERR_INVALID_EVD);
  s.dto = s.cm = IT_NULL_HANDLE;
  conf_side_close(&s);
}

typedef struct waiter {
  it_evd_handle_t evd;
  uint64_t timeout;
  it_status_t st;
  it_event_t ev;
  gint64 took;
  gint started;
  gint done;
} waiter_t;

static gpointer
waiter_run(gpointer data)
{
  waiter_t *w = data;
  size_t more = 0;
  /* Timed from before it says it started: the main thread's sleep after
   * it sees that counts in full, however late this thread runs on. */
  gint64 t0 = g_get_monotonic_time();
  g_atomic_int_set(&w->started, 1);
  w->st = conf_evd_wait(w->evd, w->timeout, &w->ev, &more);
  w->took = g_get_monotonic_time() - t0;
  g_atomic_int_set(&w->done, 1);
  return NULL;
}

static GThread *
waiter_start(waiter_t *w, it_evd_handle_t evd, uint64_t timeout)
{
  memset(w, 0, sizeof(*w));
  w->evd = evd;
  w->timeout = timeout;
  GThread *t = g_thread_new("conf-waiter", waiter_run, w);
  conf_await_flag(&w->started, "the waiter thread to start");
  g_usleep(100000); /* into it_evd_wait and blocked */
  return t;
}

static void
test_waiter_limit(void)
{
  g_test_summary("IT-API EVD: a second thread calling it_evd_wait while one waits gets "
                 "IT_ERR_WAITER_LIMIT; the first waiter still gets the next event");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t evd = sw_evd(&s, 4, 1, IT_EVD_OVERFLOW_DEFAULT, IT_NULL_HANDLE, NULL);
  waiter_t w;
  GThread *t = waiter_start(&w, evd, CONF_TIMEOUT_US);
  g_assert_cmpint(g_atomic_int_get(&w.done), ==, 0);
  it_event_t ev;
  size_t more = 0;
  conf_assert_status(conf_evd_wait(evd, 0, &ev, &more), IT_ERR_WAITER_LIMIT);
  conf_assert_status(conf_evd_wait(evd, 10000, &ev, &more), IT_ERR_WAITER_LIMIT);
  int token;
  conf_ok(it_evd_post_se(evd, &token));
  g_thread_join(t);
  conf_assert_status(w.st, IT_SUCCESS);
  g_assert_cmpint(w.ev.event_number, ==, IT_SOFTWARE_EVENT);
  g_assert_true(w.ev.sw.data == &token);
  g_assert_cmpint(w.took, >=, 90000);
  /* With the waiter gone, waiting is allowed again. */
  conf_assert_status(conf_evd_wait(evd, 1000, &ev, &more), IT_ERR_TIMEOUT_EXPIRED);
  conf_side_close(&s);
}

static void
test_wait_woken(void)
{
  g_test_summary("IT-API EVD: a thread blocked in it_evd_wait on a DTO EVD is woken by a "
                 "completion another thread causes, and gets that completion");
  conf_pair_t p;
  conf_pair_open(&p);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_t src, dst;
  conf_buf_new(&p.a, &src, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &dst, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 4);
  it_lmr_triplet_t r = conf_seg(&dst, 0, 64), s = conf_seg(&src, 0, 64);
  conf_ok(it_post_recv(p.p.ep, &r, 1, 42, IT_COMPLETION_FLAG));
  waiter_t w;
  GThread *t = waiter_start(&w, p.p.dto, IT_TIMEOUT_INFINITE);
  g_assert_cmpint(g_atomic_int_get(&w.done), ==, 0); /* it really blocks */
  conf_ok(it_post_send(p.a.ep, &s, 1, 43, IT_COMPLETION_FLAG));
  g_thread_join(t);
  conf_assert_status(w.st, IT_SUCCESS);
  g_assert_cmpint(w.ev.event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
  g_assert_cmpuint(w.ev.dto_cmpl.cookie, ==, 42);
  g_assert_cmpuint(w.ev.dto_cmpl.transferred_length, ==, 64);
  g_assert_cmpint(w.took, >=, 90000);
  g_assert_cmpmem(dst.data, 64, src.data, 64);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 43);
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

typedef struct cb_rec {
  gint calls;
  it_evd_handle_t evd;
} cb_rec_t;

static void
count_cb(it_evd_handle_t evd, void *arg)
{
  cb_rec_t *r = arg;
  r->evd = evd;
  g_atomic_int_inc(&r->calls);
}

static void
other_cb(it_evd_handle_t evd, void *arg)
{
  (void) evd;
  (void) arg;
  g_error("the second callback must never be attached");
}

static void
test_callback(void)
{
  g_test_summary("IT-API EVD: the callback of it_evd_callback_attach runs when the threshold is "
                 "reached, not before; a second attach returns IT_ERR_CALLBACK_EXISTS");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t evd = sw_evd(&s, 8, 2, IT_EVD_OVERFLOW_DEFAULT, IT_NULL_HANDLE, NULL);
  cb_rec_t rec = { 0, IT_NULL_HANDLE };
  conf_ok(it_evd_callback_attach(evd, count_cb, &rec));
  conf_assert_status(it_evd_callback_attach(evd, other_cb, NULL), IT_ERR_CALLBACK_EXISTS);
  it_evd_param_t prm;
  conf_ok(it_evd_query(evd, IT_EVD_PARAM_ALL, &prm));
  g_assert_true(prm.evd_callback);
  int t[2];
  conf_ok(it_evd_post_se(evd, &t[0]));
  g_usleep(20000);
  g_assert_cmpint(g_atomic_int_get(&rec.calls), ==, 0);
  conf_ok(it_evd_post_se(evd, &t[1]));
  cert_limit_t w;
  cert_limit_begin(&w, "the EVD's callback", CONF_TIMEOUT_US);
  while (g_atomic_int_get(&rec.calls) == 0 && !cert_limit_over(&w))
    g_usleep(1000);
  cert_limit_end(&w);
  g_assert_cmpint(g_atomic_int_get(&rec.calls), ==, 1);
  assert_handle_eq(rec.evd, evd);
  conf_ok(it_evd_callback_detach(evd));
  conf_side_close(&s);
}

static void
test_query_modify(void)
{
  g_test_summary("IT-API EVD: it_evd_query returns the creation parameters; it_evd_modify "
                 "changes the threshold (and the fd follows it); other masks give IT_ERR_INVALID_MASK");
  conf_side_t s;
  conf_side_open(&s, NULL);
  int fd = -1;
  it_evd_handle_t evd = sw_evd(&s, 16, 5, IT_EVD_CREATE_FD | IT_EVD_OVERFLOW_DEFAULT, IT_NULL_HANDLE, &fd);
  it_evd_param_t prm;
  memset(&prm, 0x5a, sizeof(prm));
  conf_ok(it_evd_query(evd, IT_EVD_PARAM_ALL, &prm));
  assert_handle_eq(prm.ia, s.ia);
  g_assert_cmphex(prm.event_number, ==, IT_SOFTWARE_EVENT_STREAM);
  g_assert_cmphex(prm.evd_flag, ==, IT_EVD_CREATE_FD | IT_EVD_OVERFLOW_DEFAULT);
  g_assert_cmpuint(prm.sevd_queue_size, ==, 16);
  g_assert_cmpuint(prm.sevd_threshold, ==, 5);
  assert_handle_eq(prm.aevd, IT_NULL_HANDLE);
  g_assert_cmpint(prm.fd, ==, fd);
  g_assert_false(prm.evd_overflowed);
  g_assert_false(prm.evd_callback);
  g_assert_false(prm.evd_bound);

  conf_ok(it_evd_query(s.dto, IT_EVD_PARAM_ALL, &prm));
  g_assert_cmphex(prm.event_number, ==, IT_DTO_EVENT_STREAM);
  g_assert_cmpuint(prm.sevd_queue_size, ==, 256);
  g_assert_cmpuint(prm.sevd_threshold, ==, 1);
  g_assert_cmpint(prm.fd, ==, -1);
  g_assert_true(prm.evd_bound);

  int t[4];
  for (int i = 0; i < 4; i++)
    conf_ok(it_evd_post_se(evd, &t[i]));
  g_assert_false(readable(fd, 0));
  it_evd_param_t mod;
  memset(&mod, 0, sizeof(mod));
  mod.sevd_threshold = 4;
  conf_ok(it_evd_modify(evd, IT_EVD_PARAM_THRESHOLD, &mod));
  conf_ok(it_evd_query(evd, IT_EVD_PARAM_THRESHOLD, &prm));
  g_assert_cmpuint(prm.sevd_threshold, ==, 4);
  g_assert_true(readable(fd, 0));

  mod.sevd_queue_size = 64;
  conf_assert_status(it_evd_modify(evd, IT_EVD_PARAM_QUEUE_SIZE, &mod), IT_ERR_INVALID_MASK);
  conf_assert_status(it_evd_modify(evd, IT_EVD_PARAM_FLAG, &mod), IT_ERR_INVALID_MASK);
  conf_assert_status(it_evd_modify(evd, IT_EVD_PARAM_THRESHOLD | IT_EVD_PARAM_QUEUE_SIZE, &mod),
                     IT_ERR_INVALID_MASK);
  conf_assert_status(it_evd_modify(evd, IT_EVD_PARAM_IA, &mod), IT_ERR_INVALID_MASK);
  mod.sevd_threshold = 17;
  conf_assert_status(it_evd_modify(evd, IT_EVD_PARAM_THRESHOLD, &mod), IT_ERR_INVALID_THRESHOLD);
  conf_ok(it_evd_query(evd, IT_EVD_PARAM_ALL, &prm));
  g_assert_cmpuint(prm.sevd_queue_size, ==, 16);
  g_assert_cmpuint(prm.sevd_threshold, ==, 4);
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/evd/empty", test_empty);
  g_test_add_func("/conformance/evd/fd/software", test_fd_software);
  g_test_add_func("/conformance/evd/fd/dto", test_fd_dto);
  g_test_add_data_func("/conformance/evd/fd/threshold-software", GINT_TO_POINTER(FALSE), test_fd_threshold);
  g_test_add_data_func("/conformance/evd/fd/threshold-dto", GINT_TO_POINTER(TRUE), test_fd_threshold);
  g_test_add_func("/conformance/evd/fd/mismatch", test_fd_mismatch);
  g_test_add_func("/conformance/evd/software/order", test_software_order);
  g_test_add_func("/conformance/evd/software/not-software-evd", test_software_wrong_evd);
  g_test_add_func("/conformance/evd/software/queue-full", test_software_full);
  g_test_add_func("/conformance/evd/overflow", test_overflow);
  g_test_add_func("/conformance/evd/aevd/events", test_aevd_events);
  g_test_add_func("/conformance/evd/aevd/notifications", test_aevd_notifications);
  g_test_add_func("/conformance/evd/aevd/rules", test_aevd_rules);
  g_test_add_func("/conformance/evd/dequeue-n/software", test_dequeue_n_software);
  g_test_add_func("/conformance/evd/dequeue-n/dto", test_dequeue_n_dto);
  g_test_add_func("/conformance/evd/dequeue-n/flushed", test_dequeue_n_flushed);
  g_test_add_func("/conformance/evd/dequeue-n/overflow", test_dequeue_n_overflow);
  g_test_add_func("/conformance/evd/dequeue-n/aevd", test_dequeue_n_aevd);
  g_test_add_func("/conformance/evd/dequeue-n/errors", test_dequeue_n_errors);
  g_test_add_func("/conformance/evd/create-errors", test_create_errors);
  g_test_add_func("/conformance/evd/free-busy", test_free_busy);
  g_test_add_func("/conformance/evd/wait/waiter-limit", test_waiter_limit);
  g_test_add_func("/conformance/evd/wait/woken-by-completion", test_wait_woken);
  g_test_add_func("/conformance/evd/callback", test_callback);
  g_test_add_func("/conformance/evd/query-modify", test_query_modify);
  return g_test_run();
}
