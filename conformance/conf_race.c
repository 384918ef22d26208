/*
 * Conformance: concurrency.  Any call may race any other from another
 * thread: a free racing a post, a dequeue, a wait or a query must leave
 * the racing call returning a status (success, or IT_ERR_INVALID_* once
 * the handle is gone), never touching freed memory; running out of
 * objects is IT_ERR_RESOURCES; a freed handle stays refused.  Each race
 * runs a bounded number of rounds with the free at a varying moment; run
 * under AddressSanitizer or ThreadSanitizer it also shows that no racing
 * call reads freed memory.
 *
 *   ITAPI_RACE_ROUNDS   rounds per race (default 40)
 *   ITAPI_PZ_LIMIT_CAP  most PZs pz-limit creates (default 200000): a
 *                       device whose limit is higher (rxe: 1048576) is
 *                       only checked to create that many
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"

#define MSG 64

static unsigned
rounds(void)
{
  return (unsigned) conf_env_count("ITAPI_RACE_ROUNDS", 40);
}

/* A thread that hammers one handle until it is refused. */
typedef struct {
  it_handle_t target;          /* what the main thread frees */
  it_evd_handle_t evd;         /* completions to drain, or the EVD raced */
  it_lmr_triplet_t seg;
  it_rdma_addr_t raddr;
  it_rmr_context_t rctx;
  volatile gint started;
  volatile gint stop;
  guint64 calls;
  it_status_t bad;             /* the first status outside the allowed set */
  const char *bad_call;
} racer_t;

static void
racer_note(racer_t *r, it_status_t st, const it_status_t *ok, size_t nok, const char *call)
{
  r->calls++;
  for (size_t i = 0; i < nok; i++)
    if (st == ok[i])
      return;
  if (r->bad_call == NULL) {
    r->bad = st;
    r->bad_call = call;
  }
}

static void
racer_check(const racer_t *r)
{
  if (r->bad_call != NULL)
    g_error("%s returned %s while its handle was being freed (allowed: success, a busy status, or "
            "IT_ERR_INVALID_*)", r->bad_call, itx_status_name(r->bad));
  g_assert_cmpuint(r->calls, >, 0);
}

/* Start @fn and wait until it made its first call, then let it run a
 * moment that varies with the round before the main thread frees. */
static GThread *
racer_start(racer_t *r, GThreadFunc fn, unsigned round)
{
  GThread *t = g_thread_new("racer", fn, r);
  conf_await_flag(&r->started, "the racing thread to start");
  g_usleep((round % 8) * 150);
  return t;
}

static void
racer_join(racer_t *r, GThread *t)
{
  g_atomic_int_set(&r->stop, 1);
  g_thread_join(t);
  racer_check(r);
}

/* Posts (RDMA Write, Send, Read), queries and dequeues on an EP. */
static gpointer
ep_racer(gpointer data)
{
  racer_t *r = data;
  static const it_status_t ok[] = { IT_SUCCESS, IT_ERR_TOO_MANY_POSTS, IT_ERR_INVALID_EP,
                                    IT_ERR_INVALID_EP_STATE, IT_ERR_QUEUE_EMPTY, IT_ERR_INVALID_EVD };
  it_ep_handle_t ep = (it_ep_handle_t) r->target;
  for (unsigned i = 0; !g_atomic_int_get(&r->stop) && i < 200000; i++) {
    it_status_t st = it_post_rdma_write(ep, &r->seg, 1, i, IT_COMPLETION_FLAG, r->raddr, r->rctx);
    racer_note(r, st, ok, G_N_ELEMENTS(ok), "it_post_rdma_write");
    g_atomic_int_set(&r->started, 1);
    it_ep_param_t p;
    racer_note(r, it_ep_query(ep, IT_EP_PARAM_STATE, &p), ok, G_N_ELEMENTS(ok), "it_ep_query");
    it_event_t ev;
    racer_note(r, it_evd_dequeue(r->evd, &ev), ok, G_N_ELEMENTS(ok), "it_evd_dequeue");
    if (st == IT_ERR_INVALID_EP)
      break;
  }
  return NULL;
}

static void
test_ep_free_vs_post(void)
{
  g_test_summary("An EP freed while another thread posts RDMA Writes on it, queries it and drains its "
                 "completions: every racing call returns a status (success until the free, then "
                 "IT_ERR_INVALID_EP), the free succeeds, and the peer is told");
  unsigned n = rounds();
  for (unsigned round = 0; round < n; round++) {
    conf_pair_t p;
    conf_pair_open(&p);
    conf_buf_t src, dst;
    conf_buf_new(&p.a, &src, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.p, &dst, MSG, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
    conf_pair_connect(&p, NULL, 0, NULL, 0);
    racer_t r = { .target = (it_handle_t) p.a.ep, .evd = p.a.dto, .seg = conf_seg(&src, 0, MSG),
                  .raddr = it_make_rdma_addr_absolute(dst.data), .rctx = dst.ctx };
    GThread *t = racer_start(&r, ep_racer, round);
    conf_ok(it_ep_free(p.a.ep));
    racer_join(&r, t);
    /* The handle stays refused, by every kind of call. */
    it_ep_param_t q;
    conf_assert_status(it_ep_query(p.a.ep, IT_EP_PARAM_STATE, &q), IT_ERR_INVALID_EP);
    conf_assert_status(it_ep_free(p.a.ep), IT_ERR_INVALID_EP);
    it_lmr_triplet_t seg = conf_seg(&src, 0, MSG);
    conf_assert_status(it_post_send(p.a.ep, &seg, 1, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_EP);
    conf_buf_free(&src);
    conf_buf_free(&dst);
    conf_pair_close(&p);
  }
}

/* A pair whose active EP writes to the passive side's buffer. */
typedef struct {
  conf_pair_t p;
  conf_buf_t dst;
} write_pair_t;

static void
write_pair_open(write_pair_t *w)
{
  conf_pair_open(&w->p);
  conf_buf_new(&w->p.p, &w->dst, MSG, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
  conf_pair_connect(&w->p, NULL, 0, NULL, 0);
}

static void
write_pair_close(write_pair_t *w)
{
  conf_buf_free(&w->dst);
  conf_pair_close(&w->p);
}

typedef struct {
  racer_t r;
  it_ep_handle_t ep;
  it_evd_handle_t dto;
  guint64 completions;
  guint64 bad_completions;
  it_dto_status_t bad_dto;
} lmr_race_t;

static gpointer
lmr_post_racer(gpointer data)
{
  lmr_race_t *l = data;
  racer_t *r = &l->r;
  static const it_status_t ok[] = { IT_SUCCESS, IT_ERR_TOO_MANY_POSTS, IT_ERR_INVALID_LMR,
                                    IT_ERR_INVALID_EP_STATE, IT_ERR_QUEUE_EMPTY };
  gboolean refused = FALSE;
  for (unsigned i = 0; !g_atomic_int_get(&r->stop) && i < 200000 && !refused; i++) {
    it_status_t st = it_post_rdma_write(l->ep, &r->seg, 1, i, IT_COMPLETION_FLAG, r->raddr, r->rctx);
    racer_note(r, st, ok, G_N_ELEMENTS(ok), "it_post_rdma_write");
    g_atomic_int_set(&r->started, 1);
    refused = st == IT_ERR_INVALID_LMR;
    it_event_t ev;
    while (it_evd_dequeue(l->dto, &ev) == IT_SUCCESS) {
      l->completions++;
      /* A Write whose key died with its LMR fails locally; nothing else. */
      it_dto_status_t s = ev.dto_cmpl.dto_status;
      if (s != IT_DTO_SUCCESS && s != IT_DTO_ERR_LOCAL_PROTECTION && s != IT_DTO_ERR_FLUSHED &&
          s != IT_DTO_ERR_LOCAL_EP) {
        l->bad_completions++;
        l->bad_dto = s;
      }
    }
  }
  return NULL;
}

static void
test_lmr_free_vs_post(void)
{
  g_test_summary("An LMR freed while another thread posts RDMA Writes from it: each post returns success "
                 "(completing successfully, or with a local protection error once the key is gone) or "
                 "IT_ERR_INVALID_LMR once the handle is refused; never a crash");
  unsigned n = rounds();
  for (unsigned round = 0; round < n; round++) {
    write_pair_t w;
    write_pair_open(&w);
    conf_buf_t src;
    conf_buf_new(&w.p.a, &src, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    lmr_race_t l = { .ep = w.p.a.ep, .dto = w.p.a.dto };
    l.r.seg = conf_seg(&src, 0, MSG);
    l.r.raddr = it_make_rdma_addr_absolute(w.dst.data);
    l.r.rctx = w.dst.ctx;
    GThread *t = racer_start(&l.r, lmr_post_racer, round);
    conf_ok(it_lmr_free(src.lmr));
    racer_join(&l.r, t);
    if (l.bad_completions > 0)
      g_error("%" G_GUINT64_FORMAT " completions of Writes racing the free of their LMR had status %d; "
              "expected success, local protection or flush", l.bad_completions, (int) l.bad_dto);
    conf_assert_status(it_lmr_free(src.lmr), IT_ERR_INVALID_LMR);
    src.lmr = IT_NULL_HANDLE;
    free(src.mem);
    write_pair_close(&w);
  }
}

/* RMR links and unlinks on one thread while the main thread frees the
 * RMR, the LMR it links to, or the EP it links on. */
enum { RMR_FREE_RMR, RMR_FREE_LMR, RMR_FREE_EP };
#define RMR_ITERS 100000

typedef struct {
  racer_t r;
  it_rmr_handle_t rmr;
  it_lmr_handle_t lmr;
  it_ep_handle_t ep;
  it_evd_handle_t dto;
  unsigned char *data;
  guint8 *seen;                /* by cookie: 1 posted, 2 completed */
  guint64 posted, completed;
  guint64 unexpected;          /* completions of a cookie not posted, or a second one */
  guint64 bad_completions;
  it_dto_status_t bad_dto;
  it_event_type_t bad_event;
} rmr_race_t;

static void
rmr_race_drain(rmr_race_t *m)
{
  it_event_t ev;
  while (it_evd_dequeue(m->dto, &ev) == IT_SUCCESS) {
    it_dto_cmpl_event_t *d = &ev.dto_cmpl;
    if (d->cookie >= 2 * RMR_ITERS || m->seen[d->cookie] != 1) {
      m->unexpected++;
      continue;
    }
    m->seen[d->cookie] = 2;
    m->completed++;
    /* A link or unlink completes, or is flushed with its freed EP. */
    if (ev.event_number != IT_RMR_LINK_CMPL_EVENT ||
        (d->dto_status != IT_DTO_SUCCESS && d->dto_status != IT_DTO_ERR_FLUSHED)) {
      m->bad_completions++;
      m->bad_dto = d->dto_status;
      m->bad_event = ev.event_number;
    }
  }
}

static gpointer
rmr_racer(gpointer data)
{
  rmr_race_t *m = data;
  racer_t *r = &m->r;
  static const it_status_t ok[] = { IT_SUCCESS, IT_ERR_TOO_MANY_POSTS, IT_ERR_INVALID_RMR, IT_ERR_INVALID_LMR,
                                    IT_ERR_INVALID_EP, IT_ERR_INVALID_EP_STATE };
  gboolean refused = FALSE;
  for (unsigned i = 0; !g_atomic_int_get(&r->stop) && i < RMR_ITERS && !refused; i++) {
    it_rmr_context_t ctx;
    it_status_t st = it_rmr_link(m->rmr, m->lmr, m->data, MSG, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                                 m->ep, 2 * i, IT_COMPLETION_FLAG, &ctx);
    racer_note(r, st, ok, G_N_ELEMENTS(ok), "it_rmr_link");
    g_atomic_int_set(&r->started, 1);
    refused = st == IT_ERR_INVALID_RMR || st == IT_ERR_INVALID_LMR || st == IT_ERR_INVALID_EP;
    if (st == IT_SUCCESS) {
      m->seen[2 * i] = 1;
      m->posted++;
      st = it_rmr_unlink(m->rmr, m->ep, 2 * i + 1, IT_COMPLETION_FLAG);
      racer_note(r, st, ok, G_N_ELEMENTS(ok), "it_rmr_unlink");
      refused = st == IT_ERR_INVALID_RMR || st == IT_ERR_INVALID_EP;
      if (st == IT_SUCCESS) {
        m->seen[2 * i + 1] = 1;
        m->posted++;
      }
    }
    rmr_race_drain(m);
  }
  return NULL;
}

static void
test_rmr_link_vs_free(void)
{
  g_test_summary("An RMR linked and unlinked in a loop by one thread while another frees the RMR, the LMR "
                 "it links to or the EP it links on: every link and unlink returns a status (success, "
                 "IT_ERR_TOO_MANY_POSTS, or IT_ERR_INVALID_* once its handle is gone), the free succeeds "
                 "(a free the RMR's or LMR's busy status refuses is retried), and every posted link and "
                 "unlink ends in exactly one completion, successful or flushed");
  unsigned n = rounds();
  guint64 posted = 0, refusals = 0, refused_posts = 0;
  for (unsigned round = 0; round < n; round++) {
    conf_pair_t p;
    conf_pair_open(&p);
    it_ia_info_t *info = conf_info(&p.a);
    it_rmr_type_t type = (info->rmr_types_supported & IT_RMR_TYPE_NARROW) ? IT_RMR_TYPE_NARROW :
                         (info->rmr_types_supported & IT_RMR_TYPE_WIDE) ? IT_RMR_TYPE_WIDE : IT_RMR_TYPE_DEFAULT;
    gboolean unlink = type == IT_RMR_TYPE_NARROW ? info->narrow_rmr_unlink_support :
                      type == IT_RMR_TYPE_WIDE ? info->wide_rmr_unlink_support : IT_FALSE;
    it_ia_info_free(info);
    if (!conf_require(type != IT_RMR_TYPE_DEFAULT && unlink, "remote memory regions and their unlink")) {
      conf_pair_close(&p);
      return;
    }
    conf_buf_t buf;
    conf_buf_new(&p.a, &buf, MSG, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
    conf_pair_connect(&p, NULL, 0, NULL, 0);
    rmr_race_t m = { .lmr = buf.lmr, .ep = p.a.ep, .dto = p.a.dto, .data = buf.data,
                     .seen = g_malloc0(2 * RMR_ITERS) };
    conf_ok(it_rmr_create20(p.a.pz, type, &m.rmr));
    unsigned what = round % 3;
    GThread *t = racer_start(&m.r, rmr_racer, round);
    cert_limit_t w;
    cert_limit_beginf(&w, 10 * G_USEC_PER_SEC, "round %u: a free during links to succeed", round);
    it_status_t st;
    /* An RMR with a link in flight, an LMR with a window linked or being
     * linked: the free says so, and a later one succeeds. */
    if (what == RMR_FREE_RMR)
      while ((st = it_rmr_free(m.rmr)) == IT_ERR_INVALID_RMR && !cert_limit_over(&w)) {
        refusals++;
        g_thread_yield();
      }
    else if (what == RMR_FREE_LMR)
      while ((st = it_lmr_free(m.lmr)) == IT_ERR_LMR_BUSY && !cert_limit_over(&w)) {
        refusals++;
        g_thread_yield();
      }
    else
      st = it_ep_free(m.ep);
    cert_limit_end(&w);
    if (st != IT_SUCCESS)
      g_error("round %u: freeing the %s during links returned %s for 10 s", round,
              what == RMR_FREE_RMR ? "RMR" : what == RMR_FREE_LMR ? "LMR" : "EP", itx_status_name(st));
    racer_join(&m.r, t);
    posted += m.posted;
    refused_posts += m.r.calls - m.posted;
    /* Every posted request completes once. */
    cert_limit_t drain;
    cert_limit_begin(&drain, "every posted link and unlink to complete",
                     w.end + CONF_TIMEOUT_US - g_get_monotonic_time());
    while (m.completed < m.posted && !cert_limit_over(&drain)) {
      rmr_race_drain(&m);
      g_usleep(100);
    }
    cert_limit_end(&drain);
    rmr_race_drain(&m);
    if (m.completed != m.posted || m.unexpected > 0)
      g_error("round %u: %" G_GUINT64_FORMAT " links and unlinks posted, %" G_GUINT64_FORMAT " completed, %"
              G_GUINT64_FORMAT " completions of a request not posted or completed already", round, m.posted,
              m.completed, m.unexpected);
    if (m.bad_completions > 0)
      g_error("round %u: %" G_GUINT64_FORMAT " link or unlink completions were event 0x%x status %d; expected "
              "IT_RMR_LINK_CMPL_EVENT, successful or flushed", round, m.bad_completions,
              (unsigned) m.bad_event, (int) m.bad_dto);
    /* The freed handle stays refused; the rest is freed as usual. */
    it_rmr_context_t ctx;
    if (what == RMR_FREE_RMR) {
      conf_assert_status(it_rmr_free(m.rmr), IT_ERR_INVALID_RMR);
      conf_assert_status(it_rmr_link(m.rmr, buf.lmr, buf.data, MSG, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                                     p.a.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_RMR);
      conf_buf_free(&buf);
    } else if (what == RMR_FREE_LMR) {
      conf_assert_status(it_lmr_free(m.lmr), IT_ERR_INVALID_LMR);
      conf_assert_status(it_rmr_link(m.rmr, m.lmr, buf.data, MSG, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
                                     p.a.ep, 1, IT_COMPLETION_FLAG, &ctx), IT_ERR_INVALID_LMR);
      conf_ok(it_rmr_free(m.rmr));
      buf.lmr = IT_NULL_HANDLE;
      free(buf.mem);
    } else {
      conf_assert_status(it_rmr_unlink(m.rmr, m.ep, 1, IT_COMPLETION_FLAG), IT_ERR_INVALID_EP);
      conf_ok(it_rmr_free(m.rmr));
      conf_buf_free(&buf);
    }
    g_free(m.seen);
    conf_pair_close(&p);
  }
  g_test_message("%u rounds: %" G_GUINT64_FORMAT " links and unlinks posted, %" G_GUINT64_FORMAT " refused or "
                 "not posted, %" G_GUINT64_FORMAT " frees refused while busy", n, posted, refused_posts, refusals);
}

/* Software events posted and dequeued on an EVD while it is freed. */
static gpointer
evd_racer(gpointer data)
{
  racer_t *r = data;
  static const it_status_t ok[] = { IT_SUCCESS, IT_ERR_QUEUE_EMPTY, IT_ERR_EVD_QUEUE_FULL, IT_ERR_INVALID_EVD };
  it_evd_handle_t evd = (it_evd_handle_t) r->target;
  for (unsigned i = 0; !g_atomic_int_get(&r->stop) && i < 500000; i++) {
    it_status_t st = it_evd_post_se(evd, GUINT_TO_POINTER(i + 1));
    racer_note(r, st, ok, G_N_ELEMENTS(ok), "it_evd_post_se");
    g_atomic_int_set(&r->started, 1);
    it_event_t ev;
    it_status_t d = it_evd_dequeue(evd, &ev);
    racer_note(r, d, ok, G_N_ELEMENTS(ok), "it_evd_dequeue");
    if (d == IT_SUCCESS && ev.event_number != IT_SOFTWARE_EVENT)
      g_error("a software EVD gave event 0x%x", (unsigned) ev.event_number);
    it_evd_param_t p;
    racer_note(r, it_evd_query(evd, IT_EVD_PARAM_ALL, &p), ok, G_N_ELEMENTS(ok), "it_evd_query");
    if (st == IT_ERR_INVALID_EVD && d == IT_ERR_INVALID_EVD)
      break;
  }
  return NULL;
}

static void
test_evd_free_vs_dequeue(void)
{
  g_test_summary("A software EVD freed while another thread posts, dequeues and queries it: every call "
                 "returns a status, IT_ERR_INVALID_EVD once the handle is gone");
  conf_side_t s;
  conf_side_open(&s, NULL);
  unsigned n = rounds() * 4;
  for (unsigned round = 0; round < n; round++) {
    it_evd_handle_t evd;
    conf_ok(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, IT_NULL_HANDLE,
                          &evd, NULL));
    racer_t r = { .target = (it_handle_t) evd };
    GThread *t = racer_start(&r, evd_racer, round);
    conf_ok(it_evd_free(evd));
    racer_join(&r, t);
    conf_assert_status(it_evd_free(evd), IT_ERR_INVALID_EVD);
  }
  conf_side_close(&s);
}

/* Software events posted and taken in batches on an EVD while it is freed. */
static gpointer
evd_batch_racer(gpointer data)
{
  racer_t *r = data;
  static const it_status_t ok[] = { IT_SUCCESS, IT_ERR_QUEUE_EMPTY, IT_ERR_EVD_QUEUE_FULL, IT_ERR_INVALID_EVD };
  it_evd_handle_t evd = (it_evd_handle_t) r->target;
  for (unsigned i = 0; !g_atomic_int_get(&r->stop) && i < 500000; i++) {
    it_status_t st = IT_SUCCESS;
    for (unsigned j = 0; j < 3 && st == IT_SUCCESS; j++)
      racer_note(r, st = it_evd_post_se(evd, GUINT_TO_POINTER(i + 1)), ok, G_N_ELEMENTS(ok), "it_evd_post_se");
    g_atomic_int_set(&r->started, 1);
    it_event_t ev[4];
    size_t k = 0;
    it_status_t d = itx_evd_dequeue_n(evd, G_N_ELEMENTS(ev), ev, &k);
    racer_note(r, d, ok, G_N_ELEMENTS(ok), "itx_evd_dequeue_n");
    for (size_t j = 0; d == IT_SUCCESS && j < k; j++)
      if (ev[j].event_number != IT_SOFTWARE_EVENT)
        g_error("a software EVD gave event 0x%x", (unsigned) ev[j].event_number);
    if (st == IT_ERR_INVALID_EVD && d == IT_ERR_INVALID_EVD)
      break;
  }
  return NULL;
}

static void
test_evd_free_vs_dequeue_n(void)
{
  g_test_summary("A software EVD freed while another thread posts to it and takes its events with "
                 "itx_evd_dequeue_n: every call returns a status, IT_ERR_INVALID_EVD once the handle "
                 "is gone");
  conf_side_t s;
  conf_side_open(&s, NULL);
  unsigned n = rounds() * 4;
  for (unsigned round = 0; round < n; round++) {
    it_evd_handle_t evd;
    conf_ok(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, IT_NULL_HANDLE,
                          &evd, NULL));
    racer_t r = { .target = (it_handle_t) evd };
    GThread *t = racer_start(&r, evd_batch_racer, round);
    conf_ok(it_evd_free(evd));
    racer_join(&r, t);
    it_event_t ev;
    size_t k;
    conf_assert_status(itx_evd_dequeue_n(evd, 1, &ev, &k), IT_ERR_INVALID_EVD);
  }
  conf_side_close(&s);
}

/* One of two threads draining one DTO EVD: the cookies it took, in order. */
typedef struct {
  it_evd_handle_t evd;
  gboolean batch;
  volatile gint *taken;        /* both threads' count, against the total */
  guint total;
  GArray *cookies;
} drainer_t;

static gpointer
drainer(gpointer data)
{
  drainer_t *d = data;
  cert_limit_t w;
  cert_limit_beginf(&w, conf_wait_us() * 4, "%u completions taken by two threads", d->total);
  while ((guint) g_atomic_int_get(d->taken) < d->total) {
    it_event_t ev[8];
    size_t k = 1;
    it_status_t st = d->batch ? itx_evd_dequeue_n(d->evd, G_N_ELEMENTS(ev), ev, &k)
                              : it_evd_dequeue(d->evd, ev);
    if (st == IT_ERR_QUEUE_EMPTY) {
      if (cert_limit_over(&w))
        g_error("%u of %u completions taken by the two threads after the wait",
                (guint) g_atomic_int_get(d->taken), d->total);
      continue;
    }
    conf_ok(st);
    for (size_t j = 0; j < k; j++) {
      g_assert_cmpint(ev[j].event_number, ==, IT_DTO_RDMA_WRITE_CMPL_EVENT);
      g_assert_cmpint(ev[j].dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
      g_array_append_val(d->cookies, ev[j].dto_cmpl.cookie);
    }
    g_atomic_int_add(d->taken, (gint) k);
  }
  cert_limit_end(&w);
  return NULL;
}

static void
test_dequeue_n_beside_dequeue(void)
{
  g_test_summary("Two threads drain one DTO EVD while Writes are posted, one with it_evd_dequeue and "
                 "one with itx_evd_dequeue_n: every completion is taken once, by one of them, and each "
                 "thread sees its cookies in posting order");
  write_pair_t w;
  write_pair_open(&w);
  conf_buf_t src;
  conf_buf_new(&w.p.a, &src, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  const guint total = 2000 * MAX(rounds() / 40, 1u);
  volatile gint taken = 0;
  drainer_t d[2];
  GThread *t[2];
  for (int i = 0; i < 2; i++) {
    d[i] = (drainer_t) { .evd = w.p.a.dto, .batch = i == 1, .taken = &taken, .total = total,
                         .cookies = g_array_new(FALSE, FALSE, sizeof(it_dto_cookie_t)) };
    t[i] = g_thread_new("drainer", drainer, &d[i]);
  }
  it_lmr_triplet_t seg = conf_seg(&src, 0, 8);
  for (guint i = 0; i < total; i++) {
    it_status_t st;
    /* The send queue is full until the drainers take completions. */
    while ((st = it_post_rdma_write(w.p.a.ep, &seg, 1, i, IT_COMPLETION_FLAG,
                                    it_make_rdma_addr_absolute(w.dst.data), w.dst.ctx)) == IT_ERR_TOO_MANY_POSTS)
      g_thread_yield();
    conf_ok(st);
  }
  for (int i = 0; i < 2; i++)
    g_thread_join(t[i]);
  guint8 *seen = g_new0(guint8, total);
  for (int i = 0; i < 2; i++) {
    it_dto_cookie_t *c = (it_dto_cookie_t *) (void *) d[i].cookies->data;
    for (guint j = 0; j < d[i].cookies->len; j++) {
      g_assert_cmpuint(c[j], <, total);
      g_assert_cmpuint(seen[c[j]], ==, 0);
      seen[c[j]] = 1;
      if (j > 0)
        g_assert_cmpuint(c[j], >, c[j - 1]);
    }
    g_test_message("%s took %u completions", d[i].batch ? "itx_evd_dequeue_n" : "it_evd_dequeue",
                   d[i].cookies->len);
  }
  g_assert_cmpuint(d[0].cookies->len + d[1].cookies->len, ==, total);
  for (int i = 0; i < 2; i++)
    g_array_free(d[i].cookies, TRUE);
  g_free(seen);
  conf_assert_empty(w.p.a.dto);
  conf_buf_free(&src);
  write_pair_close(&w);
}

/* it_evd_wait again and again, with a timeout of 200 us (nothing comes),
 * out of it a varying moment between two waits. */
static gpointer
wait_racer(gpointer data)
{
  racer_t *r = data;
  static const it_status_t ok[] = { IT_ERR_TIMEOUT_EXPIRED, IT_ERR_INVALID_EVD };
  for (unsigned i = 0; !g_atomic_int_get(&r->stop) && i < 100000; i++) {
    it_event_t ev;
    racer_note(r, conf_evd_wait(r->evd, 200, &ev, NULL), ok, G_N_ELEMENTS(ok), "it_evd_wait");
    g_atomic_int_set(&r->started, 1);
    g_usleep(i % 4 * 40);
  }
  return NULL;
}

static void
test_evd_free_vs_wait(void)
{
  g_test_summary("An EVD (software, DTO) freed while another thread enters and leaves it_evd_wait on it: "
                 "the free returns IT_ERR_EVD_BUSY while the thread waits, and succeeds between its waits; "
                 "a wait returns IT_ERR_TIMEOUT_EXPIRED or IT_ERR_INVALID_EVD, the latter once the handle "
                 "is gone");
  conf_side_t s;
  conf_side_open(&s, NULL);
  unsigned n = rounds();
  guint busy = 0;
  for (unsigned round = 0; round < n; round++) {
    it_evd_handle_t evd;
    conf_ok(it_evd_create(s.ia, round % 2 ? IT_DTO_EVENT_STREAM : IT_SOFTWARE_EVENT_STREAM,
                          IT_EVD_OVERFLOW_DEFAULT, 64, 1, IT_NULL_HANDLE, &evd, NULL));
    racer_t r = { .evd = evd };
    GThread *t = racer_start(&r, wait_racer, round);
    it_status_t st;
    cert_limit_t w;
    cert_limit_begin(&w, "it_evd_free to find no thread waiting", CONF_TIMEOUT_US);
    while ((st = it_evd_free(evd)) == IT_ERR_EVD_BUSY && !cert_limit_over(&w)) {
      busy++;
      g_usleep(50);
    }
    cert_limit_end(&w);
    conf_ok(st);
    racer_join(&r, t);
    it_event_t ev;
    conf_assert_status(conf_evd_wait(evd, 0, &ev, NULL), IT_ERR_INVALID_EVD);
    conf_assert_status(it_evd_free(evd), IT_ERR_INVALID_EVD);
  }
  g_test_message("%u frees of %u found a thread waiting (IT_ERR_EVD_BUSY)", busy, n);
  conf_side_close(&s);
}

/* Dequeues on an AEVD while an SEVD feeding it is freed. */
static gpointer
aevd_racer(gpointer data)
{
  racer_t *r = data;
  static const it_status_t ok[] = { IT_SUCCESS, IT_ERR_QUEUE_EMPTY };
  for (unsigned i = 0; !g_atomic_int_get(&r->stop) && i < 500000; i++) {
    it_event_t ev;
    racer_note(r, it_evd_dequeue(r->evd, &ev), ok, G_N_ELEMENTS(ok), "it_evd_dequeue(AEVD)");
    g_atomic_int_set(&r->started, 1);
  }
  return NULL;
}

static void
test_sevd_free_vs_aevd(void)
{
  g_test_summary("An SEVD that feeds an AEVD, full of events, freed while another thread dequeues the "
                 "AEVD: the AEVD gives the events or IT_ERR_QUEUE_EMPTY, never the freed SEVD");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t aevd;
  conf_ok(it_evd_create(s.ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 0, 0,
                        IT_NULL_HANDLE, &aevd, NULL));
  unsigned n = rounds() * 4;
  for (unsigned round = 0; round < n; round++) {
    it_evd_handle_t sevd;
    conf_ok(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, aevd, &sevd, NULL));
    for (unsigned i = 0; i < 32; i++)
      conf_ok(it_evd_post_se(sevd, GUINT_TO_POINTER(i + 1)));
    racer_t r = { .evd = aevd };
    GThread *t = racer_start(&r, aevd_racer, round);
    conf_ok(it_evd_free(sevd));
    racer_join(&r, t);
  }
  it_event_t ev;
  conf_assert_status(it_evd_dequeue(aevd, &ev), IT_ERR_QUEUE_EMPTY);
  conf_ok(it_evd_free(aevd));
  conf_side_close(&s);
}

/* Receives posted to an SRQ, and queries, while it is freed. */
static gpointer
srq_racer(gpointer data)
{
  racer_t *r = data;
  static const it_status_t ok[] = { IT_SUCCESS, IT_ERR_TOO_MANY_POSTS, IT_ERR_INVALID_HANDLE,
                                    IT_ERR_INVALID_SRQ };
  it_srq_handle_t srq = (it_srq_handle_t) r->target;
  for (unsigned i = 0; !g_atomic_int_get(&r->stop) && i < 200000; i++) {
    it_status_t st = it_post_recv(srq, &r->seg, 1, i, IT_COMPLETION_FLAG);
    racer_note(r, st, ok, G_N_ELEMENTS(ok), "it_post_recv(SRQ)");
    g_atomic_int_set(&r->started, 1);
    it_srq_param_t p;
    racer_note(r, it_srq_query(srq, IT_SRQ_PARAM_ALL, &p), ok, G_N_ELEMENTS(ok), "it_srq_query");
    if (st == IT_ERR_INVALID_HANDLE)
      break;
  }
  return NULL;
}

static void
test_srq_free_vs_post(void)
{
  g_test_summary("An SRQ freed while another thread posts receives to it and queries it: every call "
                 "returns a status, IT_ERR_INVALID_HANDLE or IT_ERR_INVALID_SRQ once it is gone");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_ia_info_t *info = conf_info(&s);
  gboolean srq = info->srq_support;
  it_ia_info_free(info);
  if (!conf_require(srq, "srq_support")) {
    conf_side_close(&s);
    return;
  }
  conf_buf_t b;
  conf_buf_new(&s, &b, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  unsigned n = rounds() * 2;
  for (unsigned round = 0; round < n; round++) {
    it_srq_handle_t q;
    conf_ok(it_srq_create(s.pz, 1, 1024, &q));
    racer_t r = { .target = (it_handle_t) q, .seg = conf_seg(&b, 0, MSG) };
    GThread *t = racer_start(&r, srq_racer, round);
    conf_ok(it_srq_free(q));
    racer_join(&r, t);
    it_srq_param_t p;
    conf_assert_status(it_srq_query(q, IT_SRQ_PARAM_ALL, &p), IT_ERR_INVALID_SRQ);
  }
  conf_buf_free(&b);
  conf_side_close(&s);
}

/* A thread blocked in it_evd_wait when the IA goes. */
static gpointer
waiter(gpointer data)
{
  racer_t *r = data;
  it_event_t ev;
  size_t more;
  g_atomic_int_set(&r->started, 1);
  r->bad = conf_evd_wait(r->evd, IT_TIMEOUT_INFINITE, &ev, &more);
  return NULL;
}

static void
test_ia_free_vs_wait(void)
{
  g_test_summary("it_ia_free while another thread blocks in it_evd_wait on one of its EVDs (no timeout): "
                 "the free succeeds and the waiter returns IT_ERR_INVALID_EVD within a second; and while "
                 "it enters and leaves waits of 200 us: each wait returns IT_ERR_TIMEOUT_EXPIRED or "
                 "IT_ERR_INVALID_EVD");
  for (unsigned round = 0; round < 8; round++) {
    conf_side_t s;
    conf_side_open(&s, NULL);
    racer_t r = { .evd = round % 2 ? s.cm : s.dto };
    GThread *t = g_thread_new("waiter", waiter, &r);
    conf_await_flag(&r.started, "the waiting thread to start");
    g_usleep(2000);
    gint64 t0 = g_get_monotonic_time();
    conf_ok(it_ia_free(s.ia));
    g_thread_join(t);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);
    if (r.bad != IT_ERR_INVALID_EVD)
      g_error("it_evd_wait returned %s when its IA was freed; expected IT_ERR_INVALID_EVD",
              itx_status_name(r.bad));
  }
  /* And while the thread enters and leaves short waits (wait_racer). */
  for (unsigned round = 0; round < rounds(); round++) {
    conf_side_t s;
    conf_side_open(&s, NULL);
    racer_t r = { .evd = round % 2 ? s.cm : s.dto };
    GThread *t = racer_start(&r, wait_racer, round);
    conf_ok(it_ia_free(s.ia));
    racer_join(&r, t);
    it_event_t ev;
    conf_assert_status(conf_evd_wait(r.evd, 0, &ev, NULL), IT_ERR_INVALID_EVD);
  }
}

/* One connection driven by a thread of its own: RDMA Writes of a pattern
 * that changes every time, each read back and checked. */
typedef struct {
  write_pair_t w;
  conf_buf_t src, back;
  unsigned id, n;
  gint done;
} conn_worker_t;

static gpointer
conn_worker(gpointer data)
{
  conn_worker_t *c = data;
  conf_side_t *a = &c->w.p.a;
  it_lmr_triplet_t src = conf_seg(&c->src, 0, MSG), back = conf_seg(&c->back, 0, MSG);
  it_rdma_addr_t dst = it_make_rdma_addr_absolute(c->w.dst.data);
  for (unsigned i = 0; i < c->n; i++) {
    unsigned seed = c->id * 100003u + i;
    conf_buf_fill(&c->src, seed);
    conf_ok(it_post_rdma_write(a->ep, &src, 1, 2 * i, IT_COMPLETION_FLAG, dst, c->w.dst.ctx));
    conf_dto(a->dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 2 * i);
    conf_ok(it_post_rdma_read(a->ep, &back, 1, 2 * i + 1, IT_COMPLETION_FLAG, dst, c->w.dst.ctx));
    conf_dto(a->dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 2 * i + 1);
    conf_buf_check(&c->back, 0, MSG, seed);
  }
  g_atomic_int_set(&c->done, 1);
  return NULL;
}

static void
test_connections_vs_registration(void)
{
  g_test_summary("Two threads, each driving a connection of its own with RDMA Writes read back and "
                 "checked, while the main thread registers and frees LMRs and creates and frees RMRs: "
                 "every transfer lands whole and completes successfully, and every registration call "
                 "returns a status (a provider that lets connections run side by side must still see "
                 "every change of the memory tables)");
  conn_worker_t c[2];
  for (unsigned k = 0; k < G_N_ELEMENTS(c); k++) {
    c[k].id = k + 1;
    c[k].n = rounds() * 25;
    c[k].done = 0;
    conf_pair_open(&c[k].w.p);
    conf_buf_new(&c[k].w.p.p, &c[k].w.dst, MSG,
                 IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE | IT_PRIV_REMOTE_READ, IT_ADDR_MODE_ABSOLUTE);
    conf_pair_connect(&c[k].w.p, NULL, 0, NULL, 0);
    conf_buf_new(&c[k].w.p.a, &c[k].src, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&c[k].w.p.a, &c[k].back, MSG, conf_sink_privs(&c[k].w.p.a), IT_ADDR_MODE_ABSOLUTE);
  }
  GThread *t[2];
  for (unsigned k = 0; k < G_N_ELEMENTS(c); k++)
    t[k] = g_thread_new("conn", conn_worker, &c[k]);
  /* Registrations of both PZs, and RMRs where the IA has them, until the
   * workers are done (at least a few of each). */
  unsigned regs = 0, rmrs = 0;
  while (regs < 8 || g_atomic_int_get(&c[0].done) + g_atomic_int_get(&c[1].done) < 2) {
    conf_side_t *s = regs % 2 ? &c[0].w.p.p : &c[1].w.p.a;
    conf_buf_t b;
    conf_buf_new(s, &b, MSG, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_free(&b);
    regs++;
    it_rmr_handle_t rmr;
    it_status_t st = it_rmr_create20(s->pz, IT_RMR_TYPE_NARROW, &rmr);
    if (st == IT_SUCCESS) {
      conf_ok(it_rmr_free(rmr));
      rmrs++;
    } else if (st != IT_ERR_OP_NOT_SUPPORTED && st != IT_ERR_INVALID_RMR_TYPE && st != IT_ERR_RESOURCES) {
      g_error("it_rmr_create20 (narrow) returned %s beside two busy connections; expected success, "
              "or IT_ERR_OP_NOT_SUPPORTED, IT_ERR_INVALID_RMR_TYPE or IT_ERR_RESOURCES", itx_status_name(st));
    }
  }
  for (unsigned k = 0; k < G_N_ELEMENTS(c); k++)
    g_thread_join(t[k]);
  g_test_message("%u LMRs and %u RMRs created and freed beside %u transfers on each of two connections",
                 regs, rmrs, c[0].n);
  for (unsigned k = 0; k < G_N_ELEMENTS(c); k++) {
    conf_buf_free(&c[k].src);
    conf_buf_free(&c[k].back);
    write_pair_close(&c[k].w);
  }
}

/* A transfer long enough to be seen landing on any host (milliseconds),
 * small enough for a device that pins it. */
#define LONG_LEN (64u << 20)
#define LONG_BYTE 0x5a

/* Rounds of a 64 MiB RDMA Write from @w's active side landing in @dst
 * while another thread posts a receive on @s's passive side and a 64-byte
 * Send on its active side (@s is @w, or another connection): the Write
 * completes before the Send where they share a connection (RC order), the
 * receive with the Send's bytes, the Write with every byte in place.  It
 * fails when, in every round that saw the Write landing as the posts
 * began, they returned only once it had landed whole (@where: where they
 * were posted, for the message). */
static void
posts_beside_write(conf_pair_t *w, conf_buf_t *dst, conf_buf_t *src, conf_pair_t *s, conf_buf_t *msg,
                   conf_buf_t *rcv, const char *where)
{
  memset(src->data, LONG_BYTE, LONG_LEN);
  conf_rdma_post_t lw = {
    .ep = w->a.ep, .local = conf_seg(src, 0, LONG_LEN),
    .remote = it_make_rdma_addr_absolute(dst->data), .ctx = dst->ctx, .cookie = 1,
  };
  it_lmr_triplet_t ms = conf_seg(msg, 0, MSG), rs = conf_seg(rcv, 0, MSG);
  /* A byte a quarter of the way in: a copy may store its first bytes last
   * (glibc's memcpy keeps them aside to align its loop). */
  const unsigned char *first = &dst->data[LONG_LEN / 4], *last = &dst->data[LONG_LEN - 1];
  /* A loaded host may deschedule the poster for a whole transfer: any
   * round in time shows it. */
  unsigned seen = 0, early = 0, n = conf_beside_rounds();
  for (unsigned r = 0; r < n; r++) {
    memset(dst->data, 0, LONG_LEN);
    conf_buf_fill(msg, r + 1);
    GThread *t = g_thread_new("long-write", conf_rdma_post_run, &lw);
    /* Part of the Write is in place, its last byte not yet: the posts
     * below race a transfer in flight. */
    cert_limit_t lim;
    cert_limit_begin(&lim, "a long RDMA Write to start landing", CONF_TIMEOUT_US);
    while (conf_landing_peek(first) == 0 && !cert_limit_over(&lim))
      ;
    cert_limit_end(&lim);
    gboolean in_flight = conf_landing_peek(first) != 0 && conf_landing_peek(last) == 0;
    conf_ok(it_post_recv(s->p.ep, &rs, 1, 3, IT_COMPLETION_FLAG));
    conf_ok(it_post_send(s->a.ep, &ms, 1, 2, IT_COMPLETION_FLAG));
    if (in_flight) {
      seen++;
      early += conf_landing_peek(last) == 0;
    }
    g_thread_join(t);
    conf_dto(w->a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 1);
    conf_dto(s->a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
    it_dto_cmpl_event_t d = conf_dto(s->p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 3);
    g_assert_cmpuint(d.transferred_length, ==, MSG);
    conf_buf_check(rcv, 0, MSG, r + 1);
    /* On another connection nothing orders the Send after the Write: where
     * a completion means transmission, the Write is placed once a later
     * Read of its own connection returns (conf_placed). */
    if (s != w)
      conf_placed(&w->a, lw.remote, lw.ctx);
    size_t i = conf_first_not(dst->data, LONG_LEN, LONG_BYTE);
    if (i < LONG_LEN)
      g_error("round %u: byte %zu of the 64 MiB Write is 0x%02x once the Write and the Send posted %s "
              "completed, expected 0x%02x (a Write is placed before it completes, and before a later "
              "Send on its connection completes)", r + 1, i, dst->data[i], where, LONG_BYTE);
  }
  g_test_message("%u of %u rounds saw the Write landing when the posts %s began; in %u of those both "
                 "posts returned before its last byte was in place", seen, n, where, early);
  /* One round proves nothing: a poster descheduled between its look and
   * its posts (a loaded host, a sanitizer) finds the transfer whole. */
  if (seen > 1 && early == 0)
    g_error("in each of %u rounds a receive and a Send posted %s while a 64 MiB RDMA Write was landing "
            "returned only once it had landed whole: a post waits for a transfer in flight (a lock held "
            "across the copy?)", seen, where);
}

static void
test_post_beside_transfer(void)
{
  g_test_summary("While one thread's 64 MiB RDMA Write is landing, another posts a receive on the responder "
                 "and a Send on the same endpoint: both posts return before the Write has landed whole (a "
                 "post never waits for a transfer in flight), the Write completes before the Send, and the "
                 "Send's receive completes with every byte of the Write in place (RC order)");
  conf_pair_t p;
  conf_buf_t dst, src, msg, rcv;
  conf_pair_open(&p);
  conf_buf_new(&p.p, &dst, LONG_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_new(&p.a, &src, LONG_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &msg, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rcv, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  posts_beside_write(&p, &dst, &src, &p, &msg, &rcv, "on the same connection");
  conf_buf_free(&rcv);
  conf_buf_free(&msg);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_other_connection_beside_transfer(void)
{
  g_test_summary("With an RMR alive (a provider may take a slower path while memory windows exist), "
                 "while one thread's 64 MiB RDMA Write is landing on one connection, another posts a "
                 "receive and a Send on a second connection of the process: both posts return "
                 "before the Write has landed whole (a transfer in flight holds no lock another "
                 "connection needs), the Write completes, and the second connection's receive completes "
                 "with the Send's bytes");
  conf_pair_t p, q;
  conf_buf_t dst, src, msg, rcv;
  conf_pair_open(&p);
  it_rmr_handle_t rmr;
  it_status_t st = it_rmr_create20(p.a.pz, IT_RMR_TYPE_DEFAULT, &rmr);
  if (st != IT_SUCCESS) {
    conf_pair_close(&p);
    if (st == IT_ERR_OP_NOT_SUPPORTED)
      g_test_skip("the IA has no RMRs");
    else
      g_error("it_rmr_create20 (IT_RMR_TYPE_DEFAULT) returned %s; expected success, or "
              "IT_ERR_OP_NOT_SUPPORTED where the IA has none", itx_status_name(st));
    return;
  }
  conf_pair_open(&q);
  conf_buf_new(&p.p, &dst, LONG_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_pair_connect(&q, NULL, 0, NULL, 0);
  conf_buf_new(&p.a, &src, LONG_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&q.a, &msg, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&q.p, &rcv, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  posts_beside_write(&p, &dst, &src, &q, &msg, &rcv, "on another connection (an RMR alive)");
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&rcv);
  conf_buf_free(&msg);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&q);
  conf_pair_close(&p);
}

/* The send queue's depth while a long transfer is in flight. */
#define SQ_DEPTH 4

static void
test_send_queue_beside_transfer(void)
{
  g_test_summary("An EP of max_request_dtos 4: while one thread's 64 MiB RDMA Write is landing, another "
                 "posts 64-byte RDMA Writes on the same endpoint until refused: exactly 3 are accepted "
                 "(the Write in flight holds a place in the queue until it completes), the next gets "
                 "IT_ERR_TOO_MANY_POSTS, and each accepted one completes once, in order, behind the long "
                 "one");
  it_ep_attributes_t aa, pa;
  conf_default_attr(&aa);
  conf_default_attr(&pa);
  aa.max_request_dtos = SQ_DEPTH;
  conf_pair_t p;
  conf_buf_t dst, src, small, rcv;
  conf_pair_open2(&p, &aa, &pa);
  conf_buf_new(&p.p, &dst, LONG_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_new(&p.a, &src, LONG_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &small, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rcv, MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  memset(src.data, LONG_BYTE, LONG_LEN);
  memset(small.data, LONG_BYTE, MSG);
  conf_rdma_post_t lw = {
    .ep = p.a.ep, .local = conf_seg(&src, 0, LONG_LEN),
    .remote = it_make_rdma_addr_absolute(dst.data), .ctx = dst.ctx, .cookie = 1,
  };
  /* The small Writes go to the region's start with the bytes the long one
   * brings there: the landing check below stands. */
  it_lmr_triplet_t ss = conf_seg(&small, 0, MSG);
  it_rdma_addr_t head = it_make_rdma_addr_absolute(dst.data);
  const unsigned char *first = &dst.data[LONG_LEN / 4], *last = &dst.data[LONG_LEN - 1];
  unsigned seen = 0, n = 4;
  for (unsigned r = 0; r < n; r++) {
    memset(dst.data, 0, LONG_LEN);
    GThread *t = g_thread_new("long-write", conf_rdma_post_run, &lw);
    cert_limit_t lim;
    cert_limit_begin(&lim, "a long RDMA Write to start landing", CONF_TIMEOUT_US);
    while (conf_landing_peek(first) == 0 && !cert_limit_over(&lim))
      ;
    cert_limit_end(&lim);
    gboolean in_flight = conf_landing_peek(first) != 0 && conf_landing_peek(last) == 0;
    unsigned k = 0;
    it_status_t st = IT_SUCCESS;
    while (k <= SQ_DEPTH &&
           (st = it_post_rdma_write(p.a.ep, &ss, 1, 10 + k, IT_COMPLETION_FLAG, head, dst.ctx)) == IT_SUCCESS)
      k++;
    /* Conclusive only if the long Write had not completed by then: still
     * landing, and no completion for it yet (where completions mean the
     * bytes were sent, as on iWARP, it may complete while they land). */
    it_event_t ev;
    it_status_t dq = it_evd_dequeue(p.a.dto, &ev);
    in_flight = in_flight && conf_landing_peek(last) == 0 && dq == IT_ERR_QUEUE_EMPTY;
    g_thread_join(t);
    if (st != IT_SUCCESS)
      conf_assert_status(st, IT_ERR_TOO_MANY_POSTS);
    if (dq == IT_SUCCESS) {
      g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 1);  /* the long Write's: the first to complete */
      g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    } else {
      conf_assert_status(dq, IT_ERR_QUEUE_EMPTY);
    }
    if (in_flight) {
      seen++;
      if (k != SQ_DEPTH - 1)
        g_error("round %u: %u RDMA Writes were accepted behind a 64 MiB Write still landing on an EP of "
                "max_request_dtos %u (then %s): expected %u, the one in flight holding its place",
                r + 1, k, SQ_DEPTH, itx_status_name(st), SQ_DEPTH - 1);
    }
    if (dq != IT_SUCCESS)
      conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 1);
    for (unsigned i = 0; i < k; i++)
      conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 10 + i);
    /* Where a Write completes once sent (iWARP), its bytes may still be
     * landing: a Send behind them, received, says they all landed (RC
     * order) before the next round clears the region. */
    it_lmr_triplet_t rs = conf_seg(&rcv, 0, MSG);
    conf_ok(it_post_recv(p.p.ep, &rs, 1, 3, IT_COMPLETION_FLAG));
    conf_ok(it_post_send(p.a.ep, &ss, 1, 2, IT_COMPLETION_FLAG));
    conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
    conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 3);
    conf_assert_empty(p.a.dto);
  }
  g_test_message("%u of %u rounds posted while the Write was landing", seen, n);
  conf_buf_free(&rcv);
  conf_buf_free(&small);
  conf_buf_free(&src);
  conf_buf_free(&dst);
  conf_pair_close(&p);
}

static void
test_lmr_free_beside_transfer(void)
{
  g_test_summary("The responder frees the LMR a 64 MiB RDMA Write is landing in: it_lmr_free succeeds, and "
                 "no byte of the region changes after it returned (the Write either landed whole before, "
                 "or stops there); the Write completes once, successfully or with an error");
  unsigned seen = 0, n = 3;
  for (unsigned r = 0; r < n; r++) {
    conf_pair_t p;
    conf_buf_t dst, src;
    conf_pair_open(&p);
    conf_buf_new(&p.p, &dst, LONG_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
    conf_pair_connect(&p, NULL, 0, NULL, 0);
    conf_buf_new(&p.a, &src, LONG_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    memset(src.data, LONG_BYTE, LONG_LEN);
    conf_rdma_post_t lw = {
      .ep = p.a.ep, .local = conf_seg(&src, 0, LONG_LEN),
      .remote = it_make_rdma_addr_absolute(dst.data), .ctx = dst.ctx, .cookie = 1,
    };
    const unsigned char *part = &dst.data[LONG_LEN / 4], *last = &dst.data[LONG_LEN - 1];
    GThread *t = g_thread_new("long-write", conf_rdma_post_run, &lw);
    cert_limit_t lim;
    cert_limit_begin(&lim, "a long RDMA Write to start landing", CONF_TIMEOUT_US);
    while (conf_landing_peek(part) == 0 && !cert_limit_over(&lim))
      ;
    cert_limit_end(&lim);
    seen += conf_landing_peek(part) != 0 && conf_landing_peek(last) == 0;
    conf_ok(it_lmr_free(dst.lmr));
    dst.lmr = IT_NULL_HANDLE;
    unsigned char at_free = conf_landing_peek(last);
    g_thread_join(t);
    it_event_t ev = conf_wait(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT);
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 1);
    /* Give a transfer that goes on behind the free's back time to show. */
    g_usleep(50000);
    unsigned char after = conf_landing_peek(last);
    if (after != at_free)
      g_error("round %u: the last byte of a 64 MiB RDMA Write's target was 0x%02x when it_lmr_free returned "
              "and 0x%02x after the Write completed (%s): the transfer wrote into the region after it was "
              "freed", r + 1, at_free, after, itx_dto_status_name(ev.dto_cmpl.dto_status));
    g_test_message("round %u: Write %s, the last byte %s when the free returned", r + 1,
                   itx_dto_status_name(ev.dto_cmpl.dto_status), at_free != 0 ? "landed" : "not landed");
    conf_buf_free(&src);
    conf_buf_free(&dst);
    conf_pair_close(&p);
  }
  g_test_message("%u of %u rounds freed the region while the Write was landing", seen, n);
}

/* posts-on-one-connection: each thread's posts on the one connection. */
#define MANY_N 24
#define MANY_WRITE (128u << 10)
#define MANY_MSG 64

typedef struct {
  it_ep_handle_t ep;
  const conf_buf_t *src;        /* slice i (MANY_WRITE or MANY_MSG bytes) per post */
  size_t slice;
  gboolean write;               /* RDMA Writes to dst's slice i, else Sends */
  it_rdma_addr_t dst;
  it_rmr_context_t ctx;
  it_dto_cookie_t cookie0;
  volatile gint *go;
} poster_t;

static gpointer
poster_run(gpointer data)
{
  poster_t *t = data;
  while (!g_atomic_int_get(t->go))
    ;
  for (unsigned i = 0; i < MANY_N; i++) {
    it_lmr_triplet_t seg = conf_seg(t->src, i * t->slice, (it_length_t) t->slice);
    if (t->write)
      conf_ok(it_post_rdma_write(t->ep, &seg, 1, t->cookie0 + i, IT_COMPLETION_FLAG,
                                 t->dst + (it_rdma_addr_t) i * t->slice, t->ctx));
    else
      conf_ok(it_post_send(t->ep, &seg, 1, t->cookie0 + i, IT_COMPLETION_FLAG));
  }
  return NULL;
}

static void
fill_slice(conf_buf_t *b, size_t off, size_t len, unsigned seed)
{
  for (size_t i = 0; i < len; i++)
    b->data[off + i] = conf_pattern_byte(i, seed);
}

/* Take @n completions from @evd: each class of cookies (cookie >> 12)
 * successful and in its own post order, receives MANY_MSG long. */
static void
collect_in_order(it_evd_handle_t evd, unsigned n, const char *side)
{
  unsigned next[16] = { 0 };
  for (unsigned k = 0; k < n; k++) {
    it_event_t ev;
    size_t more = 0;
    it_status_t st = conf_evd_wait(evd, CONF_TIMEOUT_US, &ev, &more);
    if (st != IT_SUCCESS)
      g_error("%s: completion %u of %u: it_evd_wait returned %s (%s)", side, k + 1, n, itx_status_name(st),
              itx_error_detail());
    it_dto_cmpl_event_t d = ev.dto_cmpl;
    unsigned cls = (unsigned) (d.cookie >> 12) & 15, idx = (unsigned) (d.cookie & 0xfff);
    if (d.dto_status != IT_DTO_SUCCESS)
      g_error("%s: completion 0x%" G_GINT64_MODIFIER "x ended with %s", side, (guint64) d.cookie,
              itx_dto_status_name(d.dto_status));
    if (idx != next[cls])
      g_error("%s: completion 0x%" G_GINT64_MODIFIER "x came where 0x%x was due: the posts of one thread "
              "completed out of their order", side, (guint64) d.cookie, (cls << 12) | next[cls]);
    next[cls]++;
    if (ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT)
      g_assert_cmpuint(d.transferred_length, ==, MANY_MSG);
  }
}

static void
test_posts_on_one_connection(void)
{
  g_test_summary("Three threads post at once on one connection: RDMA Writes of 128 KiB and Sends on the "
                 "active EP, Sends the other way on the passive one.  Every post succeeds, every request and "
                 "receive completes successfully and each thread's in its post order, and every byte lands "
                 "where its request put it");
  for (unsigned r = 0; r < 3; r++) {
    conf_pair_t p;
    conf_buf_t dst, wsrc, asrc, psrc, arcv, prcv;
    conf_pair_open(&p);
    conf_buf_new(&p.p, &dst, MANY_N * MANY_WRITE, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
    conf_pair_connect(&p, NULL, 0, NULL, 0);
    conf_buf_new(&p.a, &wsrc, MANY_N * MANY_WRITE, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.a, &asrc, MANY_N * MANY_MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.p, &psrc, MANY_N * MANY_MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.a, &arcv, MANY_N * MANY_MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.p, &prcv, (MANY_N + 1) * MANY_MSG, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    for (unsigned i = 0; i < MANY_N; i++) {
      fill_slice(&wsrc, i * MANY_WRITE, MANY_WRITE, r * 1000 + i);
      fill_slice(&asrc, i * MANY_MSG, MANY_MSG, r * 1000 + 100 + i);
      fill_slice(&psrc, i * MANY_MSG, MANY_MSG, r * 1000 + 200 + i);
      it_lmr_triplet_t a = conf_seg(&arcv, i * MANY_MSG, MANY_MSG), b = conf_seg(&prcv, i * MANY_MSG, MANY_MSG);
      conf_ok(it_post_recv(p.a.ep, &a, 1, 0x5000 + i, IT_COMPLETION_FLAG));
      conf_ok(it_post_recv(p.p.ep, &b, 1, 0x4000 + i, IT_COMPLETION_FLAG));
    }
    volatile gint go = 0;
    poster_t t[3] = {
      { .ep = p.a.ep, .src = &wsrc, .slice = MANY_WRITE, .write = TRUE,
        .dst = it_make_rdma_addr_absolute(dst.data), .ctx = dst.ctx, .cookie0 = 0x1000, .go = &go },
      { .ep = p.a.ep, .src = &asrc, .slice = MANY_MSG, .cookie0 = 0x2000, .go = &go },
      { .ep = p.p.ep, .src = &psrc, .slice = MANY_MSG, .cookie0 = 0x3000, .go = &go },
    };
    GThread *th[3];
    for (unsigned k = 0; k < 3; k++)
      th[k] = g_thread_new("poster", poster_run, &t[k]);
    g_atomic_int_set(&go, 1);
    for (unsigned k = 0; k < 3; k++)
      g_thread_join(th[k]);
    /* A Write's completion tells only that the requester is done with it
     * (iWARP completes it once sent): a Send posted after every Write, its
     * receive completed, is what says each Write has been placed (RC order). */
    it_lmr_triplet_t fence_rcv = conf_seg(&prcv, MANY_N * MANY_MSG, MANY_MSG), fence = conf_seg(&asrc, 0, MANY_MSG);
    conf_ok(it_post_recv(p.p.ep, &fence_rcv, 1, 0x6000, IT_COMPLETION_FLAG));
    conf_ok(it_post_send(p.a.ep, &fence, 1, 0x7000, IT_COMPLETION_FLAG));
    collect_in_order(p.a.dto, 3 * MANY_N + 1, "active EP");
    collect_in_order(p.p.dto, 2 * MANY_N + 1, "passive EP");
    conf_buf_check(&prcv, MANY_N * MANY_MSG, MANY_MSG, r * 1000 + 100);
    for (unsigned i = 0; i < MANY_N; i++) {
      conf_buf_check(&dst, i * MANY_WRITE, MANY_WRITE, r * 1000 + i);
      conf_buf_check(&prcv, i * MANY_MSG, MANY_MSG, r * 1000 + 100 + i);
      conf_buf_check(&arcv, i * MANY_MSG, MANY_MSG, r * 1000 + 200 + i);
    }
    conf_buf_free(&prcv);
    conf_buf_free(&arcv);
    conf_buf_free(&psrc);
    conf_buf_free(&asrc);
    conf_buf_free(&wsrc);
    conf_buf_free(&dst);
    conf_pair_close(&p);
  }
}

static void
test_stale_handles(void)
{
  g_test_summary("A freed handle stays refused while its slot is reused thousands of times: every new PZ "
                 "gets a handle no earlier PZ had, and the first one is IT_ERR_INVALID_PZ throughout");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_pz_handle_t first;
  conf_ok(it_pz_create(s.ia, &first));
  conf_ok(it_pz_free(first));
  GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_hash_table_add(seen, first);
  for (unsigned i = 0; i < 20000; i++) {
    it_pz_handle_t pz;
    conf_ok(it_pz_create(s.ia, &pz));
    if (!g_hash_table_add(seen, pz))
      g_error("PZ handle %p was handed out twice (after %u create/free cycles)", (void *) pz, i + 1);
    conf_ok(it_pz_free(pz));
    if (i % 1000 == 0)
      conf_assert_status(it_pz_free(first), IT_ERR_INVALID_PZ);
  }
  it_pz_param_t q;
  conf_assert_status(it_pz_query(first, IT_PZ_PARAM_ALL, &q), IT_ERR_INVALID_PZ);
  g_hash_table_destroy(seen);
  conf_side_close(&s);
}

static void
test_pz_limit(void)
{
  g_test_summary("Protection zones are created until the device's limit: every create succeeds or "
                 "returns IT_ERR_RESOURCES (never a crash), and freeing one lets the next create succeed "
                 "(ITAPI_PZ_LIMIT_CAP, default 200000, at most)");
  conf_side_t s;
  conf_side_open(&s, NULL);
  const unsigned cap = MAX((unsigned) conf_env_count("ITAPI_PZ_LIMIT_CAP", 200000), 1);
  GPtrArray *pzs = g_ptr_array_new();
  it_status_t st = IT_SUCCESS;
  while (pzs->len < cap) {
    it_pz_handle_t pz;
    st = it_pz_create(s.ia, &pz);
    if (st != IT_SUCCESS)
      break;
    g_ptr_array_add(pzs, pz);
  }
  g_test_message("%u protection zones before %s", pzs->len, itx_status_name(st));
  if (pzs->len < cap) {
    conf_assert_status(st, IT_ERR_RESOURCES);
    g_assert_cmpstr(itx_error_detail(), !=, "");
    it_pz_handle_t pz;
    conf_ok(it_pz_free(g_ptr_array_index(pzs, pzs->len - 1)));
    conf_ok(it_pz_create(s.ia, &pz));
    g_ptr_array_index(pzs, pzs->len - 1) = pz;
    conf_assert_status(it_pz_create(s.ia, &pz), IT_ERR_RESOURCES);
  }
  for (unsigned i = 0; i < pzs->len; i++)
    conf_ok(it_pz_free(g_ptr_array_index(pzs, i)));
  g_ptr_array_free(pzs, TRUE);
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/race/ep-free-vs-post", test_ep_free_vs_post);
  g_test_add_func("/conformance/race/lmr-free-vs-post", test_lmr_free_vs_post);
  g_test_add_func("/conformance/race/rmr-link-vs-free", test_rmr_link_vs_free);
  g_test_add_func("/conformance/race/evd-free-vs-dequeue", test_evd_free_vs_dequeue);
  g_test_add_func("/conformance/race/evd-free-vs-dequeue-n", test_evd_free_vs_dequeue_n);
  g_test_add_func("/conformance/race/dequeue-n-beside-dequeue", test_dequeue_n_beside_dequeue);
  g_test_add_func("/conformance/race/evd-free-vs-wait", test_evd_free_vs_wait);
  g_test_add_func("/conformance/race/sevd-free-vs-aevd", test_sevd_free_vs_aevd);
  g_test_add_func("/conformance/race/srq-free-vs-post", test_srq_free_vs_post);
  g_test_add_func("/conformance/race/ia-free-vs-wait", test_ia_free_vs_wait);
  g_test_add_func("/conformance/race/connections-vs-registration", test_connections_vs_registration);
  g_test_add_func("/conformance/race/lmr-free-beside-transfer", test_lmr_free_beside_transfer);
  g_test_add_func("/conformance/race/post-beside-transfer", test_post_beside_transfer);
  g_test_add_func("/conformance/race/other-connection-beside-transfer",
                  test_other_connection_beside_transfer);
  g_test_add_func("/conformance/race/send-queue-beside-transfer", test_send_queue_beside_transfer);
  g_test_add_func("/conformance/race/posts-on-one-connection", test_posts_on_one_connection);
  g_test_add_func("/conformance/race/stale-handles", test_stale_handles);
  g_test_add_func("/conformance/race/pz-limit", test_pz_limit);
  return g_test_run();
}
