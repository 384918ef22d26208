/*
 * Conformance: an EVD's file descriptor in an event loop (IT_EVD_CREATE_FD
 * under poll(2), level-triggered and edge-triggered epoll(7)), for a DTO
 * SEVD and for an AEVD, one event at a time, at a threshold, and under a
 * stream from other threads; then a server that sleeps only on its AEVD's
 * descriptor while it serves clients in other processes.  The contract is
 * doc/porting.md, "Event dispatchers in poll and epoll".
 *
 * The program re-executes itself with "--evloop-role aevd-client" for each
 * client process, which hears its orders on stdin and says "ok" on stdout,
 * as conf-xproc's children do.  Every wait is bounded; a wait that runs out
 * names what it waited for and how far the run got.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"

/* How long an event loop waits for a descriptor before calling the event
 * stranded (or never delivered). */
#define LOOP_TIMEOUT_MS 10000

static const char *self_exe;

/* ---- watching a descriptor the three ways ---- */

typedef enum { WATCH_POLL, WATCH_EPOLL_LEVEL, WATCH_EPOLL_EDGE } watch_kind_t;
static const char *const watch_name[] = { "poll", "level-triggered epoll", "edge-triggered epoll" };

typedef struct watch {
  watch_kind_t kind;
  int fd;   /* the EVD's descriptor */
  int ep;   /* the epoll instance, or -1 for poll */
} watch_t;

static void
watch_open(watch_t *w, watch_kind_t kind, int fd)
{
  w->kind = kind;
  w->fd = fd;
  w->ep = -1;
  if (kind == WATCH_POLL)
    return;
  w->ep = epoll_create1(EPOLL_CLOEXEC);
  g_assert_cmpint(w->ep, >=, 0);
  struct epoll_event e = { .events = EPOLLIN | (kind == WATCH_EPOLL_EDGE ? EPOLLET : 0), .data.fd = fd };
  g_assert_cmpint(epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &e), ==, 0);
}

static void
watch_close(watch_t *w)
{
  if (w->ep >= 0)
    close(w->ep);
  w->ep = -1;
}

/* One poll() or epoll_wait() of at most @ms: whether it reported the
 * descriptor readable.  Under edge-triggered epoll that consumes the edge. */
static gboolean
watch_ready(watch_t *w, int ms)
{
  int r;
  if (w->kind == WATCH_POLL) {
    struct pollfd p = { .fd = w->fd, .events = POLLIN };
    do
      r = poll(&p, 1, ms);
    while (r < 0 && errno == EINTR);
    g_assert_cmpint(r, >=, 0);
    return r > 0 && (p.revents & POLLIN) != 0;
  }
  struct epoll_event e;
  do
    r = epoll_wait(w->ep, &e, 1, ms);
  while (r < 0 && errno == EINTR);
  g_assert_cmpint(r, >=, 0);
  return r > 0 && (e.events & EPOLLIN) != 0;
}

/* The byte @i of message @j of client @cid, in direction @dir (0: toward
 * the server, 1: back). */
static unsigned char
pattern(unsigned cid, unsigned j, unsigned dir, size_t i)
{
  return (unsigned char) (cid * 131u + j * 31u + dir * 97u + i * 7u + (i >> 8) + (i >> 16));
}

static void
pattern_fill(unsigned char *p, size_t len, unsigned cid, unsigned j, unsigned dir)
{
  for (size_t i = 0; i < len; i++)
    p[i] = pattern(cid, j, dir, i);
}

/* Fail, naming @who, message and byte, unless @p holds the pattern. */
static void
pattern_check(const char *who, const unsigned char *p, size_t len, unsigned cid, unsigned j, unsigned dir)
{
  for (size_t i = 0; i < len; i++)
    if (p[i] != pattern(cid, j, dir, i))
      g_error("%s: byte %zu of message %u of client %u (%zu bytes) is 0x%02x, expected 0x%02x",
              who, i, j, cid, len, p[i], pattern(cid, j, dir, i));
}

/* Fail unless @n bytes at @p are all @v (nothing landed past a message). */
static void
poison_check(const char *who, const unsigned char *p, size_t n, unsigned char v, size_t at)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != v)
      g_error("%s: byte %zu past the message's end (offset %zu) changed to 0x%02x", who, i, at + i, p[i]);
}

/* What a dequeue finds once an event loop timed out on @evd's descriptor:
 * an event left behind (on @evd, or on one of the @n SEVDs @sevd named
 * @names that feed it) or none.  Takes the event it finds. */
static char *
left_behind(it_evd_handle_t evd, const it_evd_handle_t *sevd, const char *const *names, unsigned n)
{
  it_event_t ev;
  if (it_evd_dequeue(evd, &ev) == IT_SUCCESS)
    return g_strdup_printf("it_evd_dequeue now returns %s: it was left behind without a wakeup",
                           itx_event_name(ev.event_number));
  for (unsigned i = 0; i < n; i++)
    if (it_evd_dequeue(sevd[i], &ev) == IT_SUCCESS)
      return g_strdup_printf("the AEVD has nothing, but its SEVD %s holds %s: it was left behind "
                             "without a wakeup", names[i], itx_event_name(ev.event_number));
  return g_strdup("no event is queued on it either: none was delivered");
}

/* ---- the contract, one event at a time ---- */

typedef struct fd_case {
  watch_kind_t kind;
  gboolean aevd;
} fd_case_t;

typedef struct fd_fix {
  const fd_case_t *c;
  conf_pair_t p;
  it_evd_handle_t t;       /* the EVD watched: a DTO SEVD, or an AEVD */
  it_evd_handle_t s1, s2;  /* AEVD: its SEVDs (a's RDMA Writes, threshold 1; a's receives, threshold 2) */
  int fd;
  watch_t w;
  conf_buf_t src, dst;     /* RDMA Writes from a to p */
  conf_buf_t rsrc, rdst;   /* Sends from p to a */
  unsigned n;              /* cookies used */
} fd_fix_t;

#define WRITE_COOKIE 0x10000u
#define RECV_COOKIE 0x20000u
#define RDST_SLOTS 8

static void
fix_open(fd_fix_t *f, const fd_case_t *c)
{
  memset(f, 0, sizeof(*f));
  f->c = c;
  conf_pair_open(&f->p);
  it_evd_handle_t req, recv = f->p.a.dto;
  if (c->aevd) {
    conf_ok(it_evd_create(f->p.a.ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_CREATE_FD, 0, 0,
                          IT_NULL_HANDLE, &f->t, &f->fd));
    conf_ok(it_evd_create(f->p.a.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, f->t, &f->s1, NULL));
    conf_ok(it_evd_create(f->p.a.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 2, f->t, &f->s2, NULL));
    req = f->s1;
    recv = f->s2;
  } else {
    conf_ok(it_evd_create(f->p.a.ia, IT_DTO_EVENT_STREAM, IT_EVD_CREATE_FD, 64, 1, IT_NULL_HANDLE, &f->t, &f->fd));
    req = f->t;
  }
  g_assert_cmpint(f->fd, >=, 0);
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  conf_ok(it_ep_free(f->p.a.ep));
  conf_ok(it_ep_rc_create(f->p.a.pz, req, recv, f->p.a.cm, IT_EP_NO_FLAG, &attr, &f->p.a.ep));
  conf_pair_connect(&f->p, NULL, 0, NULL, 0);
  conf_buf_new(&f->p.a, &f->src, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&f->p.p, &f->dst, 64, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&f->p.p, &f->rsrc, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&f->p.a, &f->rdst, 64 * RDST_SLOTS, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&f->src, 1);
  conf_buf_fill(&f->rsrc, 2);
  watch_open(&f->w, c->kind, f->fd);
}

static void
fix_close(fd_fix_t *f)
{
  watch_close(&f->w);
  conf_buf_free(&f->src);
  conf_buf_free(&f->dst);
  conf_buf_free(&f->rsrc);
  conf_buf_free(&f->rdst);
  conf_pair_close(&f->p);
}

/* One signaled RDMA Write from a: a completion on the watched DTO SEVD, or
 * on s1.  Its cookie. */
static it_dto_cookie_t
make_write(fd_fix_t *f)
{
  it_dto_cookie_t ck = WRITE_COOKIE + f->n++;
  it_lmr_triplet_t s = conf_seg(&f->src, 0, 8);
  conf_ok(it_post_rdma_write(f->p.a.ep, &s, 1, ck, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(f->dst.data), f->dst.ctx));
  return ck;
}

/* One receive completing at a (on s2): a's receive, then p's Send, whose
 * own completion p takes.  Its cookie. */
static it_dto_cookie_t
make_recv(fd_fix_t *f)
{
  it_dto_cookie_t ck = RECV_COOKIE + f->n++;
  it_lmr_triplet_t r = conf_seg(&f->rdst, (ck % RDST_SLOTS) * 64, 64), s = conf_seg(&f->rsrc, 0, 64);
  conf_ok(it_post_recv(f->p.a.ep, &r, 1, ck, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(f->p.p.ep, &s, 1, ck, IT_COMPLETION_FLAG));
  conf_dto(f->p.p.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, ck);
  return ck;
}

/* Dequeue one event from the watched EVD now: the completion @ck. */
static void
take(fd_fix_t *f, it_dto_cookie_t ck)
{
  it_event_t ev;
  it_status_t st = it_evd_dequeue(f->t, &ev);
  if (st != IT_SUCCESS)
    g_error("%s, %s: the descriptor said ready but it_evd_dequeue returned %s waiting for cookie 0x%"
            G_GINT64_MODIFIER "x", f->c->aevd ? "AEVD" : "DTO SEVD", watch_name[f->c->kind],
            itx_status_name(st), (guint64) ck);
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, ck);
  g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  gboolean recv = ck >= RECV_COOKIE;
  g_assert_cmpint(ev.event_number, ==, recv ? IT_DTO_RC_RECV_CMPL_EVENT : IT_DTO_RDMA_WRITE_CMPL_EVENT);
  if (f->c->aevd)
    g_assert_true(ev.dto_cmpl.evd == (recv ? f->s2 : f->s1));
  else
    g_assert_true(ev.dto_cmpl.evd == f->t);
}

static void
take_none(fd_fix_t *f, const char *when)
{
  it_event_t ev;
  it_status_t st = it_evd_dequeue(f->t, &ev);
  if (st != IT_ERR_QUEUE_EMPTY)
    g_error("%s: expected IT_ERR_QUEUE_EMPTY, got %s (%s)", when, itx_status_name(st),
            st == IT_SUCCESS ? itx_event_name(ev.event_number) : itx_error_detail());
}

static void
expect_ready(fd_fix_t *f, int ms, const char *what)
{
  if (!watch_ready(&f->w, ms))
    g_error("%s, %s: the descriptor was not reported readable within %d ms: %s",
            f->c->aevd ? "AEVD" : "DTO SEVD", watch_name[f->c->kind], ms, what);
}

static void
expect_quiet(fd_fix_t *f, int ms, const char *what)
{
  if (watch_ready(&f->w, ms))
    g_error("%s, %s: the descriptor was reported readable: %s",
            f->c->aevd ? "AEVD" : "DTO SEVD", watch_name[f->c->kind], what);
}

static void
set_threshold(it_evd_handle_t evd, size_t t)
{
  it_evd_param_t m;
  memset(&m, 0, sizeof(m));
  m.sevd_threshold = t;
  conf_ok(it_evd_modify(evd, IT_EVD_PARAM_THRESHOLD, &m));
}

static void
test_fd_contract(gconstpointer data)
{
  const fd_case_t *c = data;
  g_test_summary("IT-API EVD: the descriptor of a DTO SEVD or an AEVD (IT_EVD_CREATE_FD), watched "
                 "by poll, level- or edge-triggered epoll, is quiet while the EVD is below its "
                 "threshold, readable once an event brings it there, stays readable when looked "
                 "at (poll, level) or gives one edge per arrival (edge), and is quiet again after "
                 "the dequeue that takes it below; an SEVD of threshold 2 under the AEVD notifies "
                 "at its second event and is served until empty");
  gboolean edge = c->kind == WATCH_EPOLL_EDGE;
  fd_fix_t f;
  fix_open(&f, c);

  expect_quiet(&f, 0, "no event was ever queued");
  /* One arrival at a time. */
  for (unsigned r = 0; r < 8; r++) {
    it_dto_cookie_t ck = make_write(&f);
    expect_ready(&f, 5000, "one completion arrived on a drained EVD");
    if (edge)
      expect_quiet(&f, 0, "a second edge for a single arrival");
    else
      expect_ready(&f, 0, "looking at the descriptor again (looking consumes nothing)");
    take(&f, ck);
    take_none(&f, "the only event was taken");
    expect_quiet(&f, 0, "after the dequeue that emptied the EVD");
  }

  if (!c->aevd) {
    /* Three completions at threshold 3 (the fd says when all three are
     * there), then threshold 2: readable until a dequeue leaves one. */
    set_threshold(f.t, 3);
    it_dto_cookie_t k0 = make_write(&f), k1 = make_write(&f), k2 = make_write(&f);
    expect_ready(&f, 5000, "three completions reached threshold 3");
    set_threshold(f.t, 2);
    take(&f, k0);
    if (!edge)
      expect_ready(&f, 0, "two completions left at threshold 2");
    take(&f, k1);
    expect_quiet(&f, 0, "one completion left, below threshold 2");
    it_dto_cookie_t k3 = make_write(&f);
    expect_ready(&f, 5000, "a completion brought the EVD back to threshold 2");
    take(&f, k2);
    take(&f, k3);
    take_none(&f, "four completions taken");
    expect_quiet(&f, 0, "after the dequeue that emptied the EVD");
    set_threshold(f.t, 1);
  } else {
    /* s2 (threshold 2) does not notify at one receive; at two it does, and
     * the AEVD hands out both before it falls quiet. */
    it_dto_cookie_t k0 = make_recv(&f);
    expect_quiet(&f, 200, "one receive on an SEVD of threshold 2 (below it)");
    it_dto_cookie_t k1 = make_recv(&f);
    expect_ready(&f, 5000, "the second receive brought the SEVD of threshold 2 to it");
    take(&f, k0);
    if (!edge)
      expect_ready(&f, 0, "the SEVD that notified still holds an event");
    take(&f, k1);
    take_none(&f, "both receives taken");
    expect_quiet(&f, 0, "after the dequeue that emptied the AEVD");
    /* Both SEVDs at once: the loop an application runs (dequeue until
     * empty, then wait) gets all three. */
    it_dto_cookie_t w = make_write(&f);
    k0 = make_recv(&f);
    k1 = make_recv(&f);
    unsigned got = 0, writes = 0;
    while (got < 3) {
      it_event_t ev;
      while (got < 3 && it_evd_dequeue(f.t, &ev) == IT_SUCCESS) {
        g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
        if (ev.dto_cmpl.cookie == w) {
          writes++;
        } else {
          /* Each SEVD's events in order. */
          g_assert_cmpuint(ev.dto_cmpl.cookie, ==, got - writes == 0 ? k0 : k1);
        }
        got++;
      }
      if (got < 3 && !watch_ready(&f.w, 5000))
        g_error("AEVD, %s: %u of 3 events (one per SEVD) taken, then quiet for 5 s", watch_name[c->kind], got);
    }
    g_assert_cmpuint(writes, ==, 1);
    take_none(&f, "the three events taken");
    expect_quiet(&f, 0, "after the dequeue that emptied the AEVD");
  }
  fix_close(&f);
}

/* An AEVD of notifications under edge-triggered epoll: one edge per SEVD
 * that reaches its threshold; the notification is the AEVD's event, the
 * events stay on the SEVD, and once the application drained that SEVD the
 * next event gives a new edge. */
static void
test_fd_notifications(void)
{
  g_test_summary("IT-API EVD: an AEVD created with IT_EVD_DEQUEUE_NOTIFICATIONS and IT_EVD_CREATE_FD, "
                 "watched by edge-triggered epoll: an event on a drained SEVD gives one edge and one "
                 "notification naming it, the AEVD is quiet once the notification is taken, and after "
                 "the SEVD is dequeued until IT_ERR_QUEUE_EMPTY its next event gives a new edge");
  conf_side_t s;
  conf_side_open(&s, NULL);
  it_evd_handle_t a, s1, s2;
  int fd = -1;
  conf_ok(it_evd_create(s.ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_CREATE_FD | IT_EVD_DEQUEUE_NOTIFICATIONS,
                        0, 0, IT_NULL_HANDLE, &a, &fd));
  conf_ok(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, a, &s1, NULL));
  conf_ok(it_evd_create(s.ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, a, &s2, NULL));
  watch_t w;
  watch_open(&w, WATCH_EPOLL_EDGE, fd);
  int tokens[4];
  it_event_t ev;
  g_assert_false(watch_ready(&w, 0));
  for (unsigned r = 0; r < 4; r++) {
    it_evd_handle_t sevd = r % 2 == 0 ? s1 : s2;
    /* Two events: one SEVD reaching its threshold once, one edge. */
    conf_ok(it_evd_post_se(sevd, &tokens[0]));
    conf_ok(it_evd_post_se(sevd, &tokens[1]));
    if (!watch_ready(&w, 5000))
      g_error("round %u: no edge for an SEVD that reached its threshold", r);
    g_assert_false(watch_ready(&w, 0));
    conf_ok(it_evd_dequeue(a, &ev));
    g_assert_cmpint(ev.event_number, ==, IT_AEVD_NOTIFICATION_EVENT);
    g_assert_true(ev.aevd_notify.aevd == a);
    g_assert_true(ev.aevd_notify.sevd == sevd);
    conf_assert_status(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
    g_assert_false(watch_ready(&w, 0));
    for (unsigned i = 0; i < 2; i++) {
      conf_ok(it_evd_dequeue(sevd, &ev));
      g_assert_true(ev.sw.data == &tokens[i]);
    }
    conf_assert_status(it_evd_dequeue(sevd, &ev), IT_ERR_QUEUE_EMPTY);
    g_assert_false(watch_ready(&w, 0));
  }
  watch_close(&w);
  conf_ok(it_evd_free(s1));
  conf_ok(it_evd_free(s2));
  conf_ok(it_evd_free(a));
  conf_side_close(&s);
}

/* ---- the contract under a stream (edge-triggered) ---- */

#define STRESS_EPS 4
#define STRESS_N 1200        /* messages per EP */
#define STRESS_LOCKSTEP 300  /* the first ones of each EP, one receive posted among all EPs */
#define STRESS_BATCHED 300   /* the next ones, in batches of STRESS_BATCH per EP */
#define STRESS_BATCH 2
#define STRESS_W 32          /* receives posted after those */
#define STRESS_SLOT 65536
#define STRESS_SENDS 16      /* the sender's Sends in flight */

static size_t
stress_size(unsigned k)
{
  static const size_t sizes[] = { 1, 8, 64, 1000, 4096, 16384, STRESS_SLOT };
  return sizes[(k * 5) % G_N_ELEMENTS(sizes)];
}

typedef struct stress_ep {
  unsigned idx;
  conf_side_t cli;         /* the sender: its own IA, EVDs and EP */
  it_ep_handle_t ep;       /* the receiving EP */
  it_evd_handle_t sevd;    /* AEVD case: the receiving EP's own SEVD */
  conf_buf_t rb, sb;
  GThread *thread;
  GMutex lock;
  GCond cond;
  guint64 granted;         /* receives posted at the receiver: the sender's credit */
  unsigned got;            /* messages received */
  unsigned posted;         /* receives posted (the receiver's thread only) */
} stress_ep_t;

/* The sender: message k once receive k is posted, at most STRESS_SENDS
 * in flight, each Send's completion checked in order. */
static gpointer
stress_send(gpointer data)
{
  stress_ep_t *e = data;
  unsigned done = 0;
  for (unsigned k = 0; k < STRESS_N || done < STRESS_N;) {
    if (k < STRESS_N && k - done < STRESS_SENDS) {
      g_mutex_lock(&e->lock);
      /* Twice the receiver's wait: a receiver stuck in epoll_wait says
       * first, and says why. */
      cert_limit_t w;
      cert_limit_beginf(&w, 2 * LOOP_TIMEOUT_MS * G_TIME_SPAN_MILLISECOND,
                        "sender %u: a receive posted for message %u", e->idx, k);
      while (e->granted <= k)
        if (!g_cond_wait_until(&e->cond, &e->lock, w.end))
          g_error("sender %u: no receive posted for message %u of %u in %d ms", e->idx, k, STRESS_N,
                  2 * LOOP_TIMEOUT_MS);
      cert_limit_end(&w);
      g_mutex_unlock(&e->lock);
      size_t len = stress_size(k), off = (size_t) (k % STRESS_W) * STRESS_SLOT;
      pattern_fill(e->sb.data + off, len, e->idx, k, 0);
      it_lmr_triplet_t t = conf_seg(&e->sb, off, len);
      conf_ok(it_post_send(e->cli.ep, &t, 1, k, IT_COMPLETION_FLAG));
      k++;
      continue;
    }
    it_event_t ev;
    size_t more;
    it_status_t st = conf_evd_wait(e->cli.dto, LOOP_TIMEOUT_MS * 1000ull, &ev, &more);
    if (st != IT_SUCCESS)
      g_error("sender %u: no Send completion in %d ms after %u of %u completed: %s", e->idx,
              LOOP_TIMEOUT_MS, done, STRESS_N, itx_status_name(st));
    g_assert_cmpint(ev.event_number, ==, IT_DTO_SEND_CMPL_EVENT);
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, done);
    done++;
  }
  return NULL;
}

static void
stress_post_one(stress_ep_t *e)
{
  it_lmr_triplet_t t = conf_seg(&e->rb, (size_t) (e->posted % STRESS_W) * STRESS_SLOT, STRESS_SLOT);
  conf_ok(it_post_recv(e->ep, &t, 1, ((guint64) e->idx << 32) | e->posted, IT_COMPLETION_FLAG));
  e->posted++;
  g_mutex_lock(&e->lock);
  e->granted = e->posted;
  g_cond_signal(&e->cond);
  g_mutex_unlock(&e->lock);
}

/* Post the receives the senders may fill once @total messages arrived.
 * First the EPs take turns with one receive among them all, so each
 * message finds the EVD drained and its completion races the receiver's
 * way back into epoll_wait; then each EP gets two receives at a time, the
 * next two once every EP's two arrived, so the last arrivals of a batch
 * race the dequeues of the first ones and nothing comes after them to
 * wake the receiver if they are left behind; then STRESS_W each. */
static void
stress_grant(stress_ep_t *eps, unsigned total)
{
  const unsigned turns = STRESS_EPS * STRESS_LOCKSTEP, batches = turns + STRESS_EPS * STRESS_BATCHED;
  if (total < turns) {
    stress_ep_t *e = &eps[total % STRESS_EPS];
    if (e->posted == e->got)
      stress_post_one(e);
  } else if (total < batches) {
    if ((total - turns) % (STRESS_EPS * STRESS_BATCH) == 0)
      for (unsigned i = 0; i < STRESS_EPS; i++)
        for (unsigned b = 0; b < STRESS_BATCH; b++)
          stress_post_one(&eps[i]);
  } else {
    for (unsigned i = 0; i < STRESS_EPS; i++)
      while (eps[i].posted < STRESS_N && eps[i].posted - eps[i].got < STRESS_W)
        stress_post_one(&eps[i]);
  }
}

static void
test_fd_stress(gconstpointer data)
{
  gboolean aevd = GPOINTER_TO_INT(data);
  g_test_summary("IT-API EVD: a thread that sleeps only in edge-triggered epoll on the descriptor "
                 "of a DTO SEVD shared by 4 EPs (or of an AEVD over their 4 SEVDs) and, at each "
                 "edge, dequeues until IT_ERR_QUEUE_EMPTY, receives every one of 4 x 1200 Sends "
                 "from 4 other threads, byte for byte and in order, first one at a time among all "
                 "(each racing the loop's last dequeue), then in batches of two per EP, then 32 in "
                 "flight per EP: no event is ever left with the descriptor quiet");
  conf_side_t srv;
  conf_side_open(&srv, NULL);
  conf_ok(it_ep_free(srv.ep));
  srv.ep = IT_NULL_HANDLE;
  it_evd_handle_t t;
  int fd = -1;
  if (aevd)
    conf_ok(it_evd_create(srv.ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_CREATE_FD, 0, 0,
                          IT_NULL_HANDLE, &t, &fd));
  else
    conf_ok(it_evd_create(srv.ia, IT_DTO_EVENT_STREAM, IT_EVD_CREATE_FD, STRESS_EPS * STRESS_W, 1,
                          IT_NULL_HANDLE, &t, &fd));
  it_listen_handle_t lh;
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  conf_ok(it_listen_create(srv.ia, 0, srv.req, IT_LISTEN_NO_FLAG, &qual, &lh));

  stress_ep_t eps[STRESS_EPS];
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  for (unsigned i = 0; i < STRESS_EPS; i++) {
    stress_ep_t *e = &eps[i];
    memset(e, 0, sizeof(*e));
    e->idx = i;
    g_mutex_init(&e->lock);
    g_cond_init(&e->cond);
    e->sevd = t;
    if (aevd)
      conf_ok(it_evd_create(srv.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, STRESS_W, 1, t, &e->sevd, NULL));
    conf_ok(it_ep_rc_create(srv.pz, e->sevd, e->sevd, srv.cm, IT_EP_NO_FLAG, &attr, &e->ep));
    conf_buf_new(&srv, &e->rb, (size_t) STRESS_W * STRESS_SLOT, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_side_open(&e->cli, NULL);
    conf_buf_new(&e->cli, &e->sb, (size_t) STRESS_W * STRESS_SLOT, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_ok(conf_connect(&e->cli, e->cli.ep, &qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
    it_event_t ev = conf_wait(srv.req, IT_CM_REQ_CONN_REQUEST_EVENT);
    conf_ok(it_ep_accept(e->ep, ev.conn_req.cn_est_id, NULL, 0));
    conf_wait(e->cli.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    ev = conf_wait(srv.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    g_assert_true(ev.conn.ep == e->ep);
  }

  watch_t w;
  watch_open(&w, WATCH_EPOLL_EDGE, fd);
  stress_grant(eps, 0);
  for (unsigned i = 0; i < STRESS_EPS; i++)
    eps[i].thread = g_thread_new("conf-evloop-send", stress_send, &eps[i]);
  unsigned total = 0, wakeups = 0, idle = 0;
  const unsigned target = STRESS_EPS * STRESS_N;
  while (total < target) {
    if (!watch_ready(&w, LOOP_TIMEOUT_MS)) {
      it_evd_handle_t sevds[STRESS_EPS];
      static const char *const names[] = { "of EP 0", "of EP 1", "of EP 2", "of EP 3" };
      for (unsigned i = 0; i < STRESS_EPS; i++)
        sevds[i] = eps[i].sevd;
      g_autofree char *left = left_behind(t, sevds, names, aevd ? STRESS_EPS : 0);
      g_error("%s: no edge in %d ms after %u of %u messages (per EP: %u %u %u %u); %s",
              aevd ? "AEVD" : "DTO SEVD", LOOP_TIMEOUT_MS, total, target, eps[0].got, eps[1].got,
              eps[2].got, eps[3].got, left);
    }
    wakeups++;
    unsigned before = total;
    it_event_t ev;
    it_status_t st;
    while ((st = it_evd_dequeue(t, &ev)) == IT_SUCCESS) {
      if (ev.event_number != IT_DTO_RC_RECV_CMPL_EVENT || ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
        g_error("%s: %s with status %s after %u of %u messages", aevd ? "AEVD" : "DTO SEVD",
                itx_event_name(ev.event_number), itx_dto_status_name(ev.dto_cmpl.dto_status), total, target);
      unsigned i = (unsigned) (ev.dto_cmpl.cookie >> 32), k = (unsigned) ev.dto_cmpl.cookie;
      g_assert_cmpuint(i, <, STRESS_EPS);
      stress_ep_t *e = &eps[i];
      g_assert_true(ev.dto_cmpl.ep == e->ep);
      g_assert_true(ev.dto_cmpl.evd == e->sevd);
      g_assert_cmpuint(k, ==, e->got); /* in order */
      size_t len = stress_size(k);
      if (ev.dto_cmpl.transferred_length != len)
        g_error("EP %u: message %u is %u bytes, sent %zu", i, k, (unsigned) ev.dto_cmpl.transferred_length, len);
      pattern_check("receiver", e->rb.data + (size_t) (k % STRESS_W) * STRESS_SLOT, len, i, k, 0);
      e->got++;
      total++;
      stress_grant(eps, total);
    }
    g_assert_cmpint(st, ==, IT_ERR_QUEUE_EMPTY);
    idle += total == before;
    if (idle > total + 1000)
      g_error("%s: %u wakeups found no event (%u messages so far): a busy loop", aevd ? "AEVD" : "DTO SEVD",
              idle, total);
  }
  g_test_message("%u messages in %u wakeups, %u of them finding nothing", total, wakeups, idle);
  /* Spurious edges are allowed (doc/porting.md), a busy loop is not. */
  g_assert_cmpuint(idle, <=, total / 4 + 2);
  for (unsigned i = 0; i < STRESS_EPS; i++)
    g_thread_join(eps[i].thread);
  it_event_t ev;
  conf_assert_status(it_evd_dequeue(t, &ev), IT_ERR_QUEUE_EMPTY);
  g_assert_false(watch_ready(&w, 0));
  watch_close(&w);
  for (unsigned i = 0; i < STRESS_EPS; i++) {
    conf_buf_check_guards(&eps[i].rb);
    conf_buf_free(&eps[i].sb);
    conf_side_close(&eps[i].cli);
    conf_buf_free(&eps[i].rb);
    g_mutex_clear(&eps[i].lock);
    g_cond_clear(&eps[i].cond);
  }
  conf_side_close(&srv);
}

/* ---- a server woken only by its AEVD, clients in other processes ---- */

#define SRV_CLIENTS 8
#define SRV_ROUNDS 24
#define SRV_SLOT (256 * 1024)
#define SRV_POISON 0xee
#define LINE_TIMEOUT_MS 10000
/* A client waits longer than the server: a server stuck in its loop says
 * first, and says why. */
#define CLIENT_TIMEOUT_MS (2 * LOOP_TIMEOUT_MS)

/* Round j: the client Sends a message of round_size(j) bytes and the
 * server Sends one of the same size back; or, every third round, each side
 * RDMA Writes that many bytes into the other's region and then Sends an
 * 8-byte notice.  Over SRV_ROUNDS rounds every size goes both ways. */
static size_t
round_size(unsigned j)
{
  static const size_t sizes[] = { 8, 64, 1000, 4096, 65536, 65537, 200000, SRV_SLOT };
  return sizes[j % G_N_ELEMENTS(sizes)];
}

static gboolean
round_is_write(unsigned j)
{
  return j % 3 == 2;
}

/* Private data: the client's (connect) and the server's (accept). */
typedef struct hello {
  char magic[4];
  uint32_t cid;
  uint64_t addr;   /* the sender's region for the other side's RDMA Writes */
  uint64_t ctx;
} hello_t;

typedef struct notice {
  uint32_t round;
  uint32_t len;
} notice_t;

static const char hello_magic[4] = { 'E', 'V', 'L', '1' };

enum { CK_RECV = 1, CK_SEND, CK_WRITE };
#define CK(ep, kind, j) (((guint64) (ep) << 32) | ((guint64) (kind) << 24) | (guint64) (j))
#define CK_KIND(ck) ((unsigned) ((ck) >> 24) & 0xff)

typedef conf_child_t child_t;

/* This program again as client @n of @role. */
static child_t
spawn(const char *role, unsigned n)
{
  g_autofree char *name = g_strdup_printf("conf-evloop-%s%u", role, n);
  const char *args[] = { "--evloop-role", role, NULL };
  return conf_child_spawn(self_exe, args, name, NULL, NULL);
}


/* The client processes' state and logs, for a failure message. */
static char *
children_report(child_t *c, unsigned n)
{
  GString *s = g_string_new(NULL);
  for (unsigned i = 0; i < n; i++) {
    int st = 0;
    gboolean ended = c[i].pid > 0 && conf_child_wait(&c[i], FALSE, &st);
    g_autofree char *err = NULL;
    g_file_get_contents(c[i].err, &err, NULL, NULL);
    g_string_append_printf(s, "\nclient %u (pid %d): %s", i, (int) c[i].pid,
                           c[i].pid <= 0 ? "reaped" : ended ? "exited" : "running");
    if (ended)
      c[i].pid = -1;
    if (err != NULL && *err != '\0')
      g_string_append_printf(s, "; its stderr:\n%s", err);
  }
  return g_string_free(s, FALSE);
}

/* ---- the client process ---- */

/* Wait for one completion on the client's DTO EVD. */
static it_dto_cmpl_event_t
client_next(conf_side_t *s, unsigned cid, unsigned j, const char *what)
{
  it_event_t ev;
  size_t more;
  it_status_t st = conf_evd_wait(s->dto, CLIENT_TIMEOUT_MS * 1000ull, &ev, &more);
  if (st != IT_SUCCESS)
    g_error("client %u: round %u of %u: no completion in %d ms waiting for %s: %s", cid, j, SRV_ROUNDS,
            CLIENT_TIMEOUT_MS, what, itx_status_name(st));
  conf_child_progress();
  if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
    g_error("client %u: round %u: %s (cookie 0x%" G_GINT64_MODIFIER "x) completed with %s", cid, j,
            itx_event_name(ev.event_number), (guint64) ev.dto_cmpl.cookie,
            itx_dto_status_name(ev.dto_cmpl.dto_status));
  return ev.dto_cmpl;
}

static int
role_aevd_client(void)
{
  g_autofree char *l = conf_hear(0, LINE_TIMEOUT_MS);
  unsigned port = 0, cid = 0;
  if (l == NULL || sscanf(l, "port %u cid %u", &port, &cid) != 2)
    g_error("aevd client: no orders on stdin (%s)", l != NULL ? l : "EOF or timeout");
  conf_side_t s;
  conf_buf_t sb, rb, region;
  conf_side_open(&s, NULL);
  conf_buf_new(&s, &sb, SRV_SLOT + 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &rb, SRV_SLOT + 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &region, SRV_SLOT + 64, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  memset(rb.data, SRV_POISON, rb.len);
  it_lmr_triplet_t r = conf_seg(&rb, 0, SRV_SLOT);
  conf_ok(it_post_recv(s.ep, &r, 1, CK(0, CK_RECV, 0), IT_COMPLETION_FLAG));

  hello_t h = { .cid = cid, .addr = (uint64_t) (uintptr_t) region.data, .ctx = region.ctx };
  memcpy(h.magic, hello_magic, 4);
  it_path_t path;
  it_conn_attributes_t ca;
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons((uint16_t) port);
  memset(&ca, 0, sizeof(ca));
  conf_path(&s, &path);
  conf_ok(it_ep_connect(s.ep, &path, &ca, &q, IT_CONNECT_FLAG_TWO_WAY, (const unsigned char *) &h, sizeof(h)));
  it_event_t ev;
  size_t more;
  it_status_t st = conf_evd_wait(s.cm, CLIENT_TIMEOUT_MS * 1000ull, &ev, &more);
  if (st != IT_SUCCESS || ev.event_number != IT_CM_MSG_CONN_ESTABLISHED_EVENT)
    g_error("client %u: %s instead of ESTABLISHED", cid,
            st == IT_SUCCESS ? itx_event_name(ev.event_number) : itx_status_name(st));
  g_assert_true(ev.conn.private_data_present);
  hello_t srv;
  memcpy(&srv, ev.conn.private_data, sizeof(srv));
  g_assert_cmpmem(srv.magic, 4, hello_magic, 4);
  g_assert_cmpuint(srv.cid, ==, cid);

  for (unsigned j = 0; j < SRV_ROUNDS; j++) {
    size_t len = round_size(j);
    gboolean write = round_is_write(j);
    if (j > 0) {
      memset(rb.data, SRV_POISON, rb.len);
      conf_ok(it_post_recv(s.ep, &r, 1, CK(0, CK_RECV, j), IT_COMPLETION_FLAG));
    }
    pattern_fill(sb.data, len, cid, j, 0);
    it_lmr_triplet_t t = conf_seg(&sb, 0, len);
    unsigned want = 1, done = 0;
    if (write) {
      memset(region.data, SRV_POISON, region.len);
      conf_ok(it_post_rdma_write(s.ep, &t, 1, CK(0, CK_WRITE, j), IT_COMPLETION_FLAG, srv.addr, srv.ctx));
      notice_t n = { j, (uint32_t) len };
      memcpy(sb.data + SRV_SLOT, &n, sizeof(n));
      t = conf_seg(&sb, SRV_SLOT, sizeof(n));
      want = 2;
    }
    conf_ok(it_post_send(s.ep, &t, 1, CK(0, CK_SEND, j), IT_COMPLETION_FLAG));
    gboolean replied = FALSE;
    while (!replied || done < want) {
      it_dto_cmpl_event_t d = client_next(&s, cid, j, replied ? "its own requests" : "the server's reply");
      g_assert_cmpuint(d.cookie & 0xffffff, ==, j);
      if (CK_KIND(d.cookie) != CK_RECV) {
        done++;
        continue;
      }
      g_assert_false(replied);
      replied = TRUE;
      if (write) {
        notice_t n;
        g_assert_cmpuint(d.transferred_length, ==, sizeof(n));
        memcpy(&n, rb.data, sizeof(n));
        g_assert_cmpuint(n.round, ==, j);
        g_assert_cmpuint(n.len, ==, len);
        poison_check("client", rb.data + sizeof(n), 64, SRV_POISON, sizeof(n));
        pattern_check("client (the server's RDMA Write)", region.data, len, cid, j, 1);
        poison_check("client (the server's RDMA Write)", region.data + len, 64, SRV_POISON, len);
      } else {
        if (d.transferred_length != len)
          g_error("client %u: the reply to message %u is %u bytes, expected %zu", cid, j,
                  (unsigned) d.transferred_length, len);
        pattern_check("client (the server's Send)", rb.data, len, cid, j, 1);
        poison_check("client (the server's Send)", rb.data + len, 64, SRV_POISON, len);
      }
    }
  }
  /* The server ends the connection once its last reply completed. */
  it_event_t last;
  st = conf_evd_wait(s.cm, CLIENT_TIMEOUT_MS * 1000ull, &last, &more);
  if (st != IT_SUCCESS || last.event_number != IT_CM_MSG_CONN_DISCONNECT_EVENT)
    g_error("client %u: after %u rounds, %s instead of the server's DISCONNECT", cid, SRV_ROUNDS,
            st == IT_SUCCESS ? itx_event_name(last.event_number) : itx_status_name(st));
  conf_buf_check_guards(&sb);
  conf_buf_check_guards(&rb);
  conf_buf_check_guards(&region);
  printf("ok %u %u\n", cid, SRV_ROUNDS);
  fflush(stdout);
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  conf_buf_free(&region);
  conf_side_close(&s);
  return 0;
}

/* ---- the server ---- */

enum { EP_FREE, EP_ACCEPTED, EP_UP, EP_CLOSING, EP_DONE };

typedef struct srv_ep {
  it_ep_handle_t ep;
  it_evd_handle_t req, recv;   /* the shared SEVDs it completes on */
  conf_buf_t rb, sb, region;   /* receive, send and RDMA Write source, RDMA Write target */
  unsigned cid;                /* the client it serves */
  guint64 peer_addr, peer_ctx; /* the client's region */
  unsigned got;                /* rounds whose message arrived and was checked */
  unsigned replied;            /* rounds answered */
  unsigned pending;            /* Sends and RDMA Writes posted, not completed */
  gboolean due;                /* a reply waits for pending == 0 */
  int state;
} srv_ep_t;

typedef struct srv {
  conf_side_t s;               /* ia, pz; req: the CM_REQ SEVD, cm: the CM_MSG SEVD, aff */
  it_evd_handle_t aevd;
  int fd;
  it_evd_handle_t dreq[2], drecv[2];
  srv_ep_t ep[SRV_CLIENTS];
  unsigned accepted, done, events;
} srv_t;

static srv_ep_t *
srv_ep_of(srv_t *S, it_ep_handle_t ep, const char *what)
{
  for (unsigned i = 0; i < SRV_CLIENTS; i++)
    if (S->ep[i].ep == ep)
      return &S->ep[i];
  g_error("server: %s names EP %p, none of the server's", what, (void *) ep);
  return NULL;
}

/* Answer the round that arrived once the previous answer completed (its
 * buffer is reused). */
static void
srv_reply(srv_t *S, srv_ep_t *e)
{
  if (!e->due || e->pending > 0)
    return;
  unsigned i = (unsigned) (e - S->ep), j = e->replied;
  size_t len = round_size(j);
  pattern_fill(e->sb.data, len, e->cid, j, 1);
  it_lmr_triplet_t t = conf_seg(&e->sb, 0, len);
  e->pending = 1;
  if (round_is_write(j)) {
    conf_ok(it_post_rdma_write(e->ep, &t, 1, CK(i, CK_WRITE, j), IT_COMPLETION_FLAG, e->peer_addr, e->peer_ctx));
    notice_t n = { j, (uint32_t) len };
    memcpy(e->sb.data + SRV_SLOT, &n, sizeof(n));
    t = conf_seg(&e->sb, SRV_SLOT, sizeof(n));
    e->pending = 2;
  }
  conf_ok(it_post_send(e->ep, &t, 1, CK(i, CK_SEND, j), IT_COMPLETION_FLAG));
  e->due = FALSE;
  e->replied++;
}

static void
srv_recv(srv_t *S, srv_ep_t *e, const it_dto_cmpl_event_t *d)
{
  unsigned i = (unsigned) (e - S->ep), j = e->got;
  g_assert_cmpuint(d->cookie, ==, CK(i, CK_RECV, j));
  g_assert_true(d->evd == e->recv);
  /* The AEVD may hand out the first receive before the ESTABLISHED of
   * another SEVD; the EP is connected all the same (rules.txt,
   * /conformance/cm/reply-before-established). */
  g_assert_true(e->state == EP_ACCEPTED || e->state == EP_UP);
  size_t len = round_size(j);
  if (round_is_write(j)) {
    notice_t n;
    g_assert_cmpuint(d->transferred_length, ==, sizeof(n));
    memcpy(&n, e->rb.data, sizeof(n));
    g_assert_cmpuint(n.round, ==, j);
    g_assert_cmpuint(n.len, ==, len);
    pattern_check("server (the client's RDMA Write)", e->region.data, len, e->cid, j, 0);
    poison_check("server (the client's RDMA Write)", e->region.data + len, 64, SRV_POISON, len);
    memset(e->region.data, SRV_POISON, len);
  } else {
    if (d->transferred_length != len)
      g_error("server: message %u of client %u is %u bytes, expected %zu", j, e->cid,
              (unsigned) d->transferred_length, len);
    pattern_check("server (the client's Send)", e->rb.data, len, e->cid, j, 0);
  }
  memset(e->rb.data, SRV_POISON, len);
  e->got++;
  /* The next round's receive before this round's answer. */
  if (e->got < SRV_ROUNDS) {
    it_lmr_triplet_t r = conf_seg(&e->rb, 0, SRV_SLOT);
    conf_ok(it_post_recv(e->ep, &r, 1, CK(i, CK_RECV, e->got), IT_COMPLETION_FLAG));
  }
  e->due = TRUE;
  srv_reply(S, e);
}

static void
srv_event(srv_t *S, const it_event_t *ev)
{
  S->events++;
  switch (ev->event_number) {
  case IT_CM_REQ_CONN_REQUEST_EVENT: {
    g_assert_true(ev->conn_req.evd == S->s.req);
    hello_t h;
    memcpy(&h, ev->conn_req.private_data, sizeof(h));
    if (!ev->conn_req.private_data_present || memcmp(h.magic, hello_magic, 4) != 0 || h.cid >= SRV_CLIENTS)
      g_error("server: a connection request without a client's private data");
    if (S->accepted == SRV_CLIENTS)
      g_error("server: connection request %u, for %u clients", S->accepted + 1, SRV_CLIENTS);
    srv_ep_t *e = &S->ep[S->accepted++];
    e->cid = h.cid;
    e->peer_addr = h.addr;
    e->peer_ctx = h.ctx;
    it_lmr_triplet_t r = conf_seg(&e->rb, 0, SRV_SLOT);
    conf_ok(it_post_recv(e->ep, &r, 1, CK(e - S->ep, CK_RECV, 0), IT_COMPLETION_FLAG));
    hello_t a = { .cid = h.cid, .addr = (uint64_t) (uintptr_t) e->region.data, .ctx = e->region.ctx };
    memcpy(a.magic, hello_magic, 4);
    conf_ok(it_ep_accept(e->ep, ev->conn_req.cn_est_id, (const unsigned char *) &a, sizeof(a)));
    e->state = EP_ACCEPTED;
    break;
  }
  case IT_CM_MSG_CONN_ESTABLISHED_EVENT: {
    g_assert_true(ev->conn.evd == S->s.cm);
    srv_ep_t *e = srv_ep_of(S, ev->conn.ep, "ESTABLISHED");
    g_assert_cmpint(e->state, ==, EP_ACCEPTED);
    e->state = EP_UP;
    break;
  }
  case IT_CM_MSG_CONN_DISCONNECT_EVENT: {
    g_assert_true(ev->conn.evd == S->s.cm);
    srv_ep_t *e = srv_ep_of(S, ev->conn.ep, "DISCONNECT");
    if (e->state != EP_CLOSING)
      g_error("server: client %u disconnected after %u of %u rounds", e->cid, e->got, SRV_ROUNDS);
    e->state = EP_DONE;
    S->done++;
    break;
  }
  case IT_DTO_RC_RECV_CMPL_EVENT:
  case IT_DTO_SEND_CMPL_EVENT:
  case IT_DTO_RDMA_WRITE_CMPL_EVENT: {
    const it_dto_cmpl_event_t *d = &ev->dto_cmpl;
    srv_ep_t *e = srv_ep_of(S, d->ep, itx_event_name(ev->event_number));
    if (d->dto_status != IT_DTO_SUCCESS)
      g_error("server: client %u, round %u: %s completed with %s", e->cid, (unsigned) (d->cookie & 0xffffff),
              itx_event_name(ev->event_number), itx_dto_status_name(d->dto_status));
    if (ev->event_number == IT_DTO_RC_RECV_CMPL_EVENT) {
      srv_recv(S, e, d);
      break;
    }
    g_assert_true(d->evd == e->req);
    g_assert_cmpuint(CK_KIND(d->cookie), ==, ev->event_number == IT_DTO_SEND_CMPL_EVENT ? CK_SEND : CK_WRITE);
    g_assert_cmpuint(d->cookie & 0xffffff, ==, e->replied - 1);
    g_assert_cmpuint(e->pending, >, 0);
    e->pending--;
    srv_reply(S, e);
    if (e->replied == SRV_ROUNDS && e->pending == 0 && e->state == EP_UP) {
      conf_ok(it_ep_disconnect(e->ep, NULL, 0));
      e->state = EP_CLOSING;
    }
    break;
  }
  default:
    g_error("server: unexpected %s (0x%x) from the AEVD", itx_event_name(ev->event_number),
            (unsigned) ev->event_number);
  }
}

static void
srv_open(srv_t *S)
{
  memset(S, 0, sizeof(*S));
  conf_side_t *s = &S->s;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &s->ia));
  conf_ok(it_pz_create(s->ia, &s->pz));
  conf_ok(it_evd_create(s->ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_CREATE_FD, 0, 0, IT_NULL_HANDLE,
                        &S->aevd, &S->fd));
  /* Every stream the server hears goes through the AEVD: connection
   * requests, connection events, completions, affiliated errors. */
  conf_ok(it_evd_create(s->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 32, 1, S->aevd, &s->req, NULL));
  conf_ok(it_evd_create(s->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, S->aevd, &s->cm, NULL));
  conf_ok(it_evd_create(s->ia, IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 32, 1, S->aevd, &s->aff, NULL));
  /* Two groups of EPs share a request SEVD and a receive SEVD each. */
  for (unsigned g = 0; g < 2; g++) {
    conf_ok(it_evd_create(s->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, S->aevd, &S->dreq[g], NULL));
    conf_ok(it_evd_create(s->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1, S->aevd, &S->drecv[g], NULL));
  }
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  for (unsigned i = 0; i < SRV_CLIENTS; i++) {
    srv_ep_t *e = &S->ep[i];
    e->req = S->dreq[i % 2];
    e->recv = S->drecv[i % 2];
    conf_ok(it_ep_rc_create(s->pz, e->req, e->recv, s->cm, IT_EP_NO_FLAG, &attr, &e->ep));
    conf_buf_new(s, &e->rb, SRV_SLOT + 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(s, &e->sb, SRV_SLOT + 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(s, &e->region, SRV_SLOT + 64, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
    memset(e->rb.data, SRV_POISON, e->rb.len);
    memset(e->region.data, SRV_POISON, e->region.len);
  }
}

static void
srv_close(srv_t *S)
{
  for (unsigned i = 0; i < SRV_CLIENTS; i++) {
    srv_ep_t *e = &S->ep[i];
    conf_buf_check_guards(&e->rb);
    conf_buf_check_guards(&e->sb);
    conf_buf_check_guards(&e->region);
    conf_buf_free(&e->rb);
    conf_buf_free(&e->sb);
    conf_buf_free(&e->region);
  }
  conf_side_close(&S->s);
}

static void
test_aevd_server(gconstpointer data)
{
  watch_kind_t kind = GPOINTER_TO_INT(data);
  g_test_summary("IT-API AEVD across processes: a server whose 8 EPs share four DTO SEVDs, whose "
                 "connection requests, connection events and affiliated errors have SEVDs too, all "
                 "under one AEVD, sleeps only in poll (or edge-triggered epoll) on the AEVD's "
                 "descriptor and serves 8 client processes at once: 24 rounds each of Sends and "
                 "RDMA Writes of 8 B to 256 KiB both ways, every byte checked on both sides, without "
                 "a busy loop and without an event left behind");
  srv_t S;
  srv_open(&S);
  it_listen_handle_t lh;
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  conf_ok(it_listen_create(S.s.ia, 0, S.s.req, IT_LISTEN_NO_FLAG, &qual, &lh));
  unsigned port = ntohs(qual.conn_qual.port);

  child_t kids[SRV_CLIENTS];
  for (unsigned i = 0; i < SRV_CLIENTS; i++) {
    kids[i] = spawn("aevd-client", i);
    g_autofree char *orders = g_strdup_printf("port %u cid %u\n", port, i);
    g_assert_cmpint(write(kids[i].to, orders, strlen(orders)), ==, (ssize_t) strlen(orders));
  }

  watch_t w;
  watch_open(&w, kind, S.fd);
  unsigned wakeups = 0, idle = 0;
  while (S.done < SRV_CLIENTS) {
    if (!watch_ready(&w, LOOP_TIMEOUT_MS)) {
      const it_evd_handle_t sevds[] = { S.s.req, S.s.cm, S.s.aff, S.dreq[0], S.drecv[0], S.dreq[1], S.drecv[1] };
      static const char *const names[] = { "of connection requests", "of connection events",
                                           "of affiliated events", "of group 0's requests",
                                           "of group 0's receives", "of group 1's requests",
                                           "of group 1's receives" };
      g_autofree char *left = left_behind(S.aevd, sevds, names, G_N_ELEMENTS(sevds));
      GString *rounds = g_string_new(NULL);
      /* And where each EP stands: a completion that never came (pending),
       * a disconnect never asked (state), or its event lost (EP state). */
      static const char *const st_names[] = { "free", "accepted", "up", "closing", "done" };
      for (unsigned i = 0; i < S.accepted; i++)
        g_string_append_printf(rounds, " %u/%u (%u pending, %s, EP state %d)", S.ep[i].got, S.ep[i].replied,
                               S.ep[i].pending, st_names[S.ep[i].state], (int) conf_ep_state(S.ep[i].ep));
      g_autofree char *kids_say = children_report(kids, SRV_CLIENTS);
      g_error("server (%s): no wakeup in %d ms with %u of %u clients done, %u accepted (rounds "
              "received/answered:%s); %s%s", watch_name[kind], LOOP_TIMEOUT_MS, S.done, SRV_CLIENTS,
              S.accepted, rounds->str, left, kids_say);
    }
    wakeups++;
    unsigned before = S.events;
    it_event_t ev;
    it_status_t st;
    while ((st = it_evd_dequeue(S.aevd, &ev)) == IT_SUCCESS)
      srv_event(&S, &ev);
    g_assert_cmpint(st, ==, IT_ERR_QUEUE_EMPTY);
    idle += S.events == before;
    if (idle > S.events + 1000)
      g_error("server (%s): %u wakeups found no event (%u events so far): a busy loop on a descriptor "
              "left readable with nothing to take", watch_name[kind], idle, S.events);
  }
  g_test_message("%u events in %u wakeups, %u of them finding nothing", S.events, wakeups, idle);
  /* A wakeup that finds nothing may happen (doc/porting.md); a loop that
   * spins on a descriptor left readable makes thousands. */
  if (idle > S.events / 4 + 2)
    g_error("server (%s): %u of %u wakeups found no event (%u events): the descriptor stayed "
            "readable with nothing to take", watch_name[kind], idle, wakeups, S.events);
  g_assert_false(watch_ready(&w, 0));
  watch_close(&w);

  for (unsigned i = 0; i < SRV_CLIENTS; i++) {
    g_autofree char *ok = conf_hear(kids[i].from, LINE_TIMEOUT_MS);
    g_autofree char *want = g_strdup_printf("ok %u %u", i, SRV_ROUNDS);
    int st = 0;
    gboolean ended = conf_child_wait(&kids[i], TRUE, &st);
    if (g_strcmp0(ok, want) != 0 || !ended || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      g_autofree char *err = NULL;
      g_file_get_contents(kids[i].err, &err, NULL, NULL);
      g_error("client %u said '%s' and ended with status 0x%x; its stderr:\n%s", i, ok != NULL ? ok : "",
              st, err != NULL ? err : "");
    }
    close(kids[i].to);
    close(kids[i].from);
    unlink(kids[i].err);
  }
  for (unsigned i = 0; i < SRV_CLIENTS; i++)
    g_assert_cmpuint(S.ep[i].replied, ==, SRV_ROUNDS);
  srv_close(&S);
}

int
main(int argc, char **argv)
{
  self_exe = g_file_read_link("/proc/self/exe", NULL);
  g_log_writer_default_set_use_stderr(TRUE);
  conf_xuser_start(argv);
  if (argc == 3 && strcmp(argv[1], "--evloop-role") == 0) {
    conf_child_watchdog_start(); /* a child never outlives a stuck parent by much */
    if (strcmp(argv[2], "aevd-client") == 0)
      return role_aevd_client();
    return 2;
  }
  g_test_init(&argc, &argv, NULL);
  signal(SIGPIPE, SIG_IGN);
  static const char *const kind_id[] = { "poll", "epoll-level", "epoll-edge" };
  static const fd_case_t cases[] = {
    { WATCH_POLL, FALSE }, { WATCH_POLL, TRUE },
    { WATCH_EPOLL_LEVEL, FALSE }, { WATCH_EPOLL_LEVEL, TRUE },
    { WATCH_EPOLL_EDGE, FALSE }, { WATCH_EPOLL_EDGE, TRUE },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = g_strdup_printf("/conformance/evd/fd/%s/%s", kind_id[cases[i].kind],
                                            cases[i].aevd ? "aevd" : "dto");
    g_test_add_data_func(path, &cases[i], test_fd_contract);
  }
  g_test_add_func("/conformance/evd/fd/epoll-edge/notifications", test_fd_notifications);
  g_test_add_data_func("/conformance/evd/fd/epoll-edge/stream/dto", GINT_TO_POINTER(FALSE), test_fd_stress);
  g_test_add_data_func("/conformance/evd/fd/epoll-edge/stream/aevd", GINT_TO_POINTER(TRUE), test_fd_stress);
  g_test_add_data_func("/conformance/xproc/aevd-server/poll", GINT_TO_POINTER(WATCH_POLL), test_aevd_server);
  g_test_add_data_func("/conformance/xproc/aevd-server/epoll-edge", GINT_TO_POINTER(WATCH_EPOLL_EDGE),
                       test_aevd_server);
  return g_test_run();
}
