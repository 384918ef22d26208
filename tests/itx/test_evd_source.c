/*
 * itx_evd_source_new() and itx_evd_add(): EVDs dispatched by a GLib main
 * loop (itx_glib.h has the contract these tests check).
 *
 * /itx/evd-source/pingpong runs a server and a client in one GMainLoop of
 * one thread over $ITAPI_CONF_IA: the listener's requests, both sides'
 * connection events and both sides' completions all arrive through
 * sources; Sends and RDMA Writes move data with every byte checked.  The
 * other paths use software EVDs, which any interface has.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <poll.h>
#include <string.h>

#include "conf.h"
#include "itx_glib.h"

#define LOOP_TIMEOUT_S 30

/* ---- helpers ---- */

static it_evd_handle_t
sw_evd(it_ia_handle_t ia, size_t qsize, size_t threshold)
{
  it_evd_handle_t evd;
  int fd = -1;
  conf_ok(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_CREATE_FD, qsize, threshold,
                        IT_NULL_HANDLE, &evd, &fd));
  g_assert_cmpint(fd, >=, 0);
  return evd;
}

static void
post_sw(it_evd_handle_t evd, uintptr_t first, uintptr_t n)
{
  for (uintptr_t i = first; i < first + n; i++)
    conf_ok(it_evd_post_se(evd, (void *) (i + 1)));
}

/* What a software-EVD source saw. */
typedef struct seen {
  GArray *data;          /* uintptr_t: the events' data, in order of delivery */
  int stop_after;        /* return G_SOURCE_REMOVE after this many (0: never) */
  gboolean free_evd;     /* it_evd_free the EVD from the first callback */
  int notified;          /* the destroy notify ran */
  it_evd_handle_t evd;
} seen_t;

static gboolean
on_sw(it_evd_handle_t evd, const it_event_t *ev, gpointer data)
{
  seen_t *s = data;
  g_assert_true(evd == s->evd);
  g_assert_cmphex(ev->event_number, ==, IT_SOFTWARE_EVENT);
  uintptr_t v = (uintptr_t) ev->sw.data - 1;
  g_array_append_val(s->data, v);
  if (s->free_evd) {
    conf_ok(it_evd_free(evd));
    s->free_evd = FALSE;
  }
  return s->stop_after == 0 || (int) s->data->len < s->stop_after;
}

static void
on_notify(gpointer data)
{
  ((seen_t *) data)->notified++;
}

static void
seen_init(seen_t *s, it_evd_handle_t evd)
{
  memset(s, 0, sizeof(*s));
  s->data = g_array_new(FALSE, FALSE, sizeof(uintptr_t));
  s->evd = evd;
}

static GSource *
attach(GMainContext *ctx, it_evd_handle_t evd, seen_t *s)
{
  GSource *src = NULL;
  conf_ok(itx_evd_source_new(evd, &src));
  g_assert_nonnull(src);
  g_source_set_callback(src, G_SOURCE_FUNC(on_sw), s, on_notify);
  g_source_attach(src, ctx);
  return src;  /* the caller's reference, for g_source_is_destroyed */
}

/* Run @ctx's dispatches that are due now, without blocking. */
static void
drain(GMainContext *ctx)
{
  for (int i = 0; i < 1000 && g_main_context_iteration(ctx, FALSE); i++)
    ;
}

static gboolean
on_deadline(gpointer data)
{
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

/* Iterate @ctx, blocking, until @src is destroyed; fail after 5 s. */
static void
run_until_destroyed(GMainContext *ctx, GSource *src, const char *what)
{
  gboolean late = FALSE;
  GSource *t = g_timeout_source_new_seconds(5);
  g_source_set_callback(t, on_deadline, &late, NULL);
  g_source_attach(t, ctx);
  while (!g_source_is_destroyed(src) && !late)
    g_main_context_iteration(ctx, TRUE);
  g_source_destroy(t);
  g_source_unref(t);
  if (late)
    g_error("the source is still attached 5 s after %s", what);
}

/* ---- software EVDs ---- */

static void
test_order_and_batch(void)
{
  g_test_summary("Every event reaches the callback once, in order; a dispatch takes at most 64, "
                 "so two busy EVDs share the loop, and an EVD left below its threshold by a "
                 "batch is still drained.");
  GMainContext *ctx = g_main_context_new();
  it_ia_handle_t ia;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &ia));
  /* a: threshold 300, so after the first batch it holds fewer than its
   * threshold and its descriptor is quiet; b: threshold 1. */
  it_evd_handle_t a = sw_evd(ia, 512, 300), b = sw_evd(ia, 512, 1);
  seen_t sa, sb;
  seen_init(&sa, a);
  seen_init(&sb, b);
  GSource *ga = attach(ctx, a, &sa), *gb = attach(ctx, b, &sb);
  post_sw(a, 0, 299);
  drain(ctx);
  g_assert_cmpuint(sa.data->len, ==, 0); /* below the threshold: quiet */
  post_sw(a, 299, 1);
  post_sw(b, 0, 300);
  /* One iteration dispatches both, 64 events each. */
  g_main_context_iteration(ctx, FALSE);
  g_assert_cmpuint(sa.data->len, ==, 64);
  g_assert_cmpuint(sb.data->len, ==, 64);
  drain(ctx);
  g_assert_cmpuint(sa.data->len, ==, 300);
  g_assert_cmpuint(sb.data->len, ==, 300);
  for (uintptr_t i = 0; i < 300; i++) {
    g_assert_cmpuint(g_array_index(sa.data, uintptr_t, i), ==, i);
    g_assert_cmpuint(g_array_index(sb.data, uintptr_t, i), ==, i);
  }
  it_event_t ev;
  conf_assert_status(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
  /* Still attached: more events are delivered. */
  post_sw(b, 300, 5);
  drain(ctx);
  g_assert_cmpuint(sb.data->len, ==, 305);
  g_source_destroy(ga);
  g_source_destroy(gb);
  g_assert_cmpint(sa.notified, ==, 1);
  g_assert_cmpint(sb.notified, ==, 1);
  g_source_unref(ga);
  g_source_unref(gb);
  conf_ok(it_ia_free(ia));
  g_array_free(sa.data, TRUE);
  g_array_free(sb.data, TRUE);
  g_main_context_unref(ctx);
}

static void
test_remove(void)
{
  g_test_summary("A callback returning G_SOURCE_REMOVE destroys the source; the events not yet "
                 "taken stay in the EVD, in order.");
  GMainContext *ctx = g_main_context_new();
  it_ia_handle_t ia;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &ia));
  it_evd_handle_t e = sw_evd(ia, 16, 1);
  seen_t s;
  seen_init(&s, e);
  s.stop_after = 2;
  GSource *g = attach(ctx, e, &s);
  post_sw(e, 0, 5);
  drain(ctx);
  g_assert_true(g_source_is_destroyed(g));
  g_assert_cmpint(s.notified, ==, 1);
  g_assert_cmpuint(s.data->len, ==, 2);
  for (uintptr_t i = 2; i < 5; i++) {
    it_event_t ev;
    conf_ok(it_evd_dequeue(e, &ev));
    g_assert_cmpuint((uintptr_t) ev.sw.data - 1, ==, i);
  }
  g_source_unref(g);
  conf_ok(it_ia_free(ia));
  g_array_free(s.data, TRUE);
  g_main_context_unref(ctx);
}

static void
test_freed(void)
{
  g_test_summary("An EVD freed while its source is attached: with events queued, idle, from "
                 "its own callback, or with its IA; the source never calls the callback "
                 "again, destroys itself at the wake-up the free causes, and runs its notify.");
  GMainContext *ctx = g_main_context_new();
  it_ia_handle_t ia;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &ia));

  /* With events queued: the descriptor is readable, the handle stale. */
  it_evd_handle_t e = sw_evd(ia, 16, 1);
  seen_t s;
  seen_init(&s, e);
  GSource *g = attach(ctx, e, &s);
  post_sw(e, 0, 3);
  drain(ctx);
  g_assert_cmpuint(s.data->len, ==, 3);
  post_sw(e, 3, 2);
  conf_ok(it_evd_free(e));
  run_until_destroyed(ctx, g, "it_evd_free with events queued");
  g_assert_cmpuint(s.data->len, ==, 3);
  g_assert_cmpint(s.notified, ==, 1);
  g_source_unref(g);
  g_array_free(s.data, TRUE);

  /* Idle: nothing queued, the descriptor quiet until the free.  A new
   * EVD made right after takes the freed descriptor's number, as any
   * open() may, and has an event: the old source must not see it. */
  e = sw_evd(ia, 16, 1);
  it_evd_param_t par;
  conf_ok(it_evd_query(e, IT_EVD_PARAM_ALL, &par));
  int old_fd = par.fd;
  seen_init(&s, e);
  g = attach(ctx, e, &s);
  drain(ctx);
  conf_ok(it_evd_free(e));
  it_evd_handle_t reuse = sw_evd(ia, 16, 1);
  conf_ok(it_evd_query(reuse, IT_EVD_PARAM_ALL, &par));
  g_test_message("the freed EVD's descriptor was %d, the new EVD's is %d", old_fd, par.fd);
  post_sw(reuse, 0, 1);
  run_until_destroyed(ctx, g, "it_evd_free of an idle EVD");
  g_assert_cmpuint(s.data->len, ==, 0);
  g_assert_cmpint(s.notified, ==, 1);
  it_event_t ev;
  conf_ok(it_evd_dequeue(reuse, &ev));
  g_assert_cmpuint((uintptr_t) ev.sw.data - 1, ==, 0);
  conf_ok(it_evd_free(reuse));
  g_source_unref(g);
  g_array_free(s.data, TRUE);

  /* From its own callback, with more queued behind the event. */
  e = sw_evd(ia, 16, 1);
  seen_init(&s, e);
  s.free_evd = TRUE;
  g = attach(ctx, e, &s);
  post_sw(e, 0, 4);
  drain(ctx);
  g_assert_true(g_source_is_destroyed(g));
  g_assert_cmpuint(s.data->len, ==, 1);
  g_assert_cmpint(s.notified, ==, 1);
  g_source_unref(g);
  g_array_free(s.data, TRUE);

  /* With its IA, through itx_evd_add in the default context. */
  it_evd_handle_t e2 = sw_evd(ia, 16, 1);
  seen_init(&s, e2);
  guint id = 0;
  conf_ok(itx_evd_add(e2, on_sw, &s, &id));
  g_assert_cmpuint(id, !=, 0);
  post_sw(e2, 0, 2);
  drain(NULL);
  g_assert_cmpuint(s.data->len, ==, 2);
  GSource *g2 = g_main_context_find_source_by_id(NULL, id);
  g_assert_nonnull(g2);
  g_source_ref(g2);
  conf_ok(it_ia_free(ia));
  run_until_destroyed(NULL, g2, "it_ia_free of the EVD's IA");
  g_assert_cmpuint(s.data->len, ==, 2);
  g_source_unref(g2);
  g_array_free(s.data, TRUE);
  g_main_context_unref(ctx);
}

static void
test_refused(void)
{
  g_test_summary("itx_evd_source_new and itx_evd_add refuse a stale handle, an EVD without a "
                 "descriptor, an SEVD that feeds an AEVD, and NULL outputs, with a status.");
  it_ia_handle_t ia;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &ia));
  GSource *g = NULL;
  it_evd_handle_t nofd, aevd, fed, stale;
  conf_ok(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
                        &nofd, NULL));
  conf_assert_status(itx_evd_source_new(nofd, &g), IT_ERR_MISMATCH_FD);
  g_assert_null(g);
  g_assert_nonnull(strstr(itx_error_detail(), "IT_EVD_CREATE_FD"));

  int fd;
  conf_ok(it_evd_create(ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_CREATE_FD, 0, 0,
                        IT_NULL_HANDLE, &aevd, &fd));
  conf_ok(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_CREATE_FD, 4, 1, aevd, &fed, &fd));
  conf_assert_status(itx_evd_source_new(fed, &g), IT_ERR_EVD_WAIT);
  conf_assert_status(itx_evd_add(fed, on_sw, NULL, NULL), IT_ERR_EVD_WAIT);
  g_assert_null(g);

  stale = sw_evd(ia, 4, 1);
  conf_ok(it_evd_free(stale));
  conf_assert_status(itx_evd_source_new(stale, &g), IT_ERR_INVALID_EVD);
  conf_assert_status(itx_evd_add(stale, on_sw, NULL, NULL), IT_ERR_INVALID_EVD);
  conf_assert_status(itx_evd_source_new(IT_NULL_HANDLE, &g), IT_ERR_INVALID_EVD);
  g_assert_null(g);

  it_evd_handle_t ok = sw_evd(ia, 4, 1);
  conf_assert_status(itx_evd_source_new(ok, NULL), IT_ERR_FAULT);
  conf_assert_status(itx_evd_add(ok, NULL, NULL, NULL), IT_ERR_FAULT);
  conf_ok(it_ia_free(ia));
}

/* An AEVD's source returns its SEVDs' events. */
typedef struct aevd_seen {
  it_evd_handle_t s1, s2;
  GArray *from1, *from2; /* uintptr_t data of each SEVD's events, in order */
} aevd_seen_t;

static gboolean
on_aevd(it_evd_handle_t evd, const it_event_t *ev, gpointer data)
{
  aevd_seen_t *a = data;
  (void) evd;
  g_assert_cmphex(ev->event_number, ==, IT_SOFTWARE_EVENT);
  uintptr_t v = (uintptr_t) ev->sw.data - 1;
  if (ev->sw.evd == a->s1)
    g_array_append_val(a->from1, v);
  else if (ev->sw.evd == a->s2)
    g_array_append_val(a->from2, v);
  else
    g_error("an event of EVD %p, which is neither SEVD", (void *) ev->sw.evd);
  return G_SOURCE_CONTINUE;
}

/* Whether @p fd is readable now. */
static gboolean
readable(int fd)
{
  struct pollfd p = { .fd = fd, .events = POLLIN };
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void
test_fd_enable(void)
{
  g_test_summary("itx_evd_fd_enable gives an EVD made without IT_EVD_CREATE_FD its descriptor: "
                 "readable at once when an event waits, not once it is taken, again at the "
                 "next; it_evd_query reports the flag and the same descriptor, a second call "
                 "gives it again, itx_evd_source_new accepts the EVD; an aggregate's is "
                 "readable while a member has notified it; a stale handle and a NULL fd are "
                 "refused");
  it_ia_handle_t ia;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &ia));
  it_evd_handle_t evd;
  conf_ok(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
                        &evd, NULL));
  post_sw(evd, 0, 1);
  int fd = -1, again = -1;
  conf_ok(itx_evd_fd_enable(evd, &fd));
  g_assert_cmpint(fd, >=, 0);
  g_assert_true(readable(fd));
  it_evd_param_t prm;
  conf_ok(it_evd_query(evd, IT_EVD_PARAM_ALL, &prm));
  g_assert_true(prm.evd_flag & IT_EVD_CREATE_FD);
  g_assert_cmpint(prm.fd, ==, fd);
  conf_ok(itx_evd_fd_enable(evd, &again));
  g_assert_cmpint(again, ==, fd);
  it_event_t ev;
  conf_ok(it_evd_dequeue(evd, &ev));
  g_assert_false(readable(fd));
  post_sw(evd, 1, 1);
  g_assert_true(readable(fd));
  GSource *g = NULL;
  conf_ok(itx_evd_source_new(evd, &g));
  g_source_unref(g);
  conf_ok(it_evd_dequeue(evd, &ev));
  g_assert_false(readable(fd));

  /* An aggregate made without a descriptor, its member posted to first. */
  it_evd_handle_t aevd, member;
  conf_ok(it_evd_create(ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 0, 0,
                        IT_NULL_HANDLE, &aevd, NULL));
  conf_ok(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, aevd,
                        &member, NULL));
  post_sw(member, 0, 1);
  int afd = -1;
  conf_ok(itx_evd_fd_enable(aevd, &afd));
  g_assert_true(readable(afd));
  conf_ok(it_evd_dequeue(aevd, &ev));
  g_assert_false(readable(afd));
  post_sw(member, 1, 1);
  g_assert_true(readable(afd));

  conf_assert_status(itx_evd_fd_enable(evd, NULL), IT_ERR_FAULT);
  conf_ok(it_evd_free(evd));
  fd = -1;
  conf_assert_status(itx_evd_fd_enable(evd, &fd), IT_ERR_INVALID_EVD);
  g_assert_cmpint(fd, ==, -1);
  conf_ok(it_ia_free(ia));
}

static void
test_aevd(void)
{
  g_test_summary("One source on an AEVD delivers the events of every SEVD that feeds it, each "
                 "naming its own SEVD, in each SEVD's order.");
  GMainContext *ctx = g_main_context_new();
  it_ia_handle_t ia;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &ia));
  it_evd_handle_t aevd;
  int fd;
  conf_ok(it_evd_create(ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_CREATE_FD, 0, 0,
                        IT_NULL_HANDLE, &aevd, &fd));
  aevd_seen_t a = { .from1 = g_array_new(FALSE, FALSE, sizeof(uintptr_t)),
                    .from2 = g_array_new(FALSE, FALSE, sizeof(uintptr_t)) };
  conf_ok(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 128, 1, aevd, &a.s1,
                        NULL));
  conf_ok(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 128, 1, aevd, &a.s2,
                        NULL));
  GSource *g = NULL;
  conf_ok(itx_evd_source_new(aevd, &g));
  g_source_set_callback(g, G_SOURCE_FUNC(on_aevd), &a, NULL);
  g_source_attach(g, ctx);
  post_sw(a.s1, 0, 100);
  post_sw(a.s2, 0, 7);
  drain(ctx);
  g_assert_cmpuint(a.from1->len, ==, 100);
  g_assert_cmpuint(a.from2->len, ==, 7);
  for (uintptr_t i = 0; i < 100; i++)
    g_assert_cmpuint(g_array_index(a.from1, uintptr_t, i), ==, i);
  for (uintptr_t i = 0; i < 7; i++)
    g_assert_cmpuint(g_array_index(a.from2, uintptr_t, i), ==, i);
  /* The SEVDs and then the AEVD freed: the source goes. */
  conf_ok(it_evd_free(a.s1));
  conf_ok(it_evd_free(a.s2));
  conf_ok(it_evd_free(aevd));
  run_until_destroyed(ctx, g, "it_evd_free of the AEVD");
  g_source_unref(g);
  conf_ok(it_ia_free(ia));
  g_array_free(a.from1, TRUE);
  g_array_free(a.from2, TRUE);
  g_main_context_unref(ctx);
}

/* ---- a server and a client in one GMainLoop ---- */

#define PP_ROUNDS 200
#define PP_SEND 1000          /* bytes of each Send */
#define PP_WRITE (64 * 1024)  /* bytes of each RDMA Write */
/* Registered layout of each side: the peer's RDMA Write lands at
 * OFF_TARGET, its Send at OFF_RECV; ours go from OFF_SEND and OFF_WSRC. */
#define OFF_TARGET 0
#define OFF_RECV PP_WRITE
#define OFF_SEND (OFF_RECV + PP_SEND)
#define OFF_WSRC (OFF_SEND + PP_SEND)
#define PP_LEN (OFF_WSRC + PP_WRITE)

enum { WHO_SERVER = 1, WHO_CLIENT = 2 };
enum { KIND_SEND = 0, KIND_WRITE = 1 };

typedef struct {          /* connection private data, network order */
  uint64_t addr, context;
} pp_pdata_t;

struct pp;

typedef struct pp_side {
  struct pp *pp;
  const char *name;
  int who;
  conf_side_t cs;         /* ia, pz, dto, cm, req, ep (aff unused) */
  conf_buf_t buf;
  it_listen_handle_t lh;
  uint64_t peer_addr;
  it_rmr_context_t peer_ctx;
  /* What came through the sources. */
  unsigned requests, established, disconnects;
  unsigned recvs, sends, writes, flushed;
  unsigned notified;      /* destroy notifies of this side's sources */
  gboolean disconnecting;
} pp_side_t;

typedef struct pp {
  GMainContext *ctx;
  GMainLoop *loop;
  it_conn_qual_t qual;
  pp_side_t srv, cli;
  gboolean timed_out;
} pp_t;

static unsigned char
pp_byte(unsigned round, int who, int kind, size_t j)
{
  return (unsigned char) (round * 31 + who * 101 + kind * 13 + j * 7);
}

static void
pp_fill(unsigned char *p, size_t n, unsigned round, int who, int kind)
{
  for (size_t j = 0; j < n; j++)
    p[j] = pp_byte(round, who, kind, j);
}

static void
pp_check(const pp_side_t *s, size_t off, size_t n, unsigned round, int who, int kind)
{
  const unsigned char *p = s->buf.data + off;
  for (size_t j = 0; j < n; j++)
    if (p[j] != pp_byte(round, who, kind, j))
      g_error("%s, round %u: byte %zu of the peer's %s is 0x%02x, expected 0x%02x", s->name, round,
              j, kind == KIND_SEND ? "Send" : "RDMA Write", p[j], pp_byte(round, who, kind, j));
}

static void
pp_post_recv(pp_side_t *s, unsigned round)
{
  it_lmr_triplet_t t = conf_seg(&s->buf, OFF_RECV, PP_SEND);
  conf_ok(it_post_recv(s->cs.ep, &t, 1, round, IT_COMPLETION_FLAG));
}

/* Round @round from @s: an RDMA Write into the peer's target, then a Send,
 * whose arrival tells the peer the Write was placed (RC order). */
static void
pp_send_round(pp_side_t *s, unsigned round)
{
  pp_fill(s->buf.data + OFF_WSRC, PP_WRITE, round, s->who, KIND_WRITE);
  pp_fill(s->buf.data + OFF_SEND, PP_SEND, round, s->who, KIND_SEND);
  it_lmr_triplet_t w = conf_seg(&s->buf, OFF_WSRC, PP_WRITE);
  conf_ok(it_post_rdma_write(s->cs.ep, &w, 1, round, IT_COMPLETION_FLAG, s->peer_addr + OFF_TARGET,
                             s->peer_ctx));
  it_lmr_triplet_t t = conf_seg(&s->buf, OFF_SEND, PP_SEND);
  conf_ok(it_post_send(s->cs.ep, &t, 1, round, IT_COMPLETION_FLAG));
}

static pp_pdata_t
pp_mine(const pp_side_t *s)
{
  pp_pdata_t d = { it_hton64(it_make_rdma_addr_absolute(s->buf.data)), it_hton64(s->buf.ctx) };
  return d;
}

static void
pp_peer(pp_side_t *s, const unsigned char *pdata)
{
  pp_pdata_t d;
  memcpy(&d, pdata, sizeof(d));
  s->peer_addr = it_ntoh64(d.addr);
  s->peer_ctx = it_ntoh64(d.context);
}

/* Done when both sides saw their disconnect and every completion. */
static void
pp_maybe_done(pp_t *pp)
{
  pp_side_t *a = &pp->srv, *b = &pp->cli;
  if (a->disconnects == 1 && b->disconnects == 1 && a->recvs == PP_ROUNDS && b->recvs == PP_ROUNDS &&
      a->sends == PP_ROUNDS && b->sends == PP_ROUNDS && a->writes == PP_ROUNDS &&
      b->writes == PP_ROUNDS && a->flushed == 1)
    g_main_loop_quit(pp->loop);
}

static gboolean
pp_on_req(it_evd_handle_t evd, const it_event_t *ev, gpointer data)
{
  pp_side_t *s = data;
  g_assert_true(evd == s->cs.req);
  g_assert_cmpstr(itx_event_name(ev->event_number), ==, "IT_CM_REQ_CONN_REQUEST_EVENT");
  g_assert_true(ev->conn_req.private_data_present);
  s->requests++;
  pp_peer(s, ev->conn_req.private_data);
  pp_post_recv(s, 0);
  pp_pdata_t mine = pp_mine(s);
  conf_ok(it_ep_accept(s->cs.ep, ev->conn_req.cn_est_id, (unsigned char *) &mine, sizeof(mine)));
  return G_SOURCE_CONTINUE;
}

static gboolean
pp_on_cm(it_evd_handle_t evd, const it_event_t *ev, gpointer data)
{
  pp_side_t *s = data;
  g_assert_true(evd == s->cs.cm);
  g_assert_true(ev->conn.ep == s->cs.ep);
  switch (ev->event_number) {
  case IT_CM_MSG_CONN_ESTABLISHED_EVENT:
    s->established++;
    g_assert_cmpuint(s->established, ==, 1);
    if (s->who == WHO_CLIENT) {
      g_assert_true(ev->conn.private_data_present);
      pp_peer(s, ev->conn.private_data);
      pp_send_round(s, 0);
    }
    break;
  case IT_CM_MSG_CONN_DISCONNECT_EVENT:
    s->disconnects++;
    g_assert_cmpuint(s->disconnects, ==, 1);
    pp_maybe_done(s->pp);
    break;
  default:
    g_error("%s: unexpected connection event %s", s->name, itx_event_name(ev->event_number));
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
pp_on_dto(it_evd_handle_t evd, const it_event_t *ev, gpointer data)
{
  pp_side_t *s = data;
  g_assert_true(evd == s->cs.dto);
  const it_dto_cmpl_event_t *d = &ev->dto_cmpl;
  unsigned round = (unsigned) d->cookie;
  int peer = s->who == WHO_SERVER ? WHO_CLIENT : WHO_SERVER;
  /* The server's receive for the round after the last is flushed by the
   * disconnect. */
  if (d->dto_status == IT_DTO_ERR_FLUSHED && ev->event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
      s->who == WHO_SERVER && round == PP_ROUNDS) {
    s->flushed++;
    pp_maybe_done(s->pp);
    return G_SOURCE_CONTINUE;
  }
  if (d->dto_status != IT_DTO_SUCCESS)
    g_error("%s: %s of round %u completed with %s", s->name, itx_event_name(ev->event_number), round,
            itx_dto_status_name(d->dto_status));
  switch (ev->event_number) {
  case IT_DTO_SEND_CMPL_EVENT:
    g_assert_cmpuint(round, ==, s->sends);
    s->sends++;
    break;
  case IT_DTO_RDMA_WRITE_CMPL_EVENT:
    g_assert_cmpuint(round, ==, s->writes);
    s->writes++;
    break;
  case IT_DTO_RC_RECV_CMPL_EVENT:
    g_assert_cmpuint(round, ==, s->recvs);
    g_assert_cmpuint(d->transferred_length, ==, PP_SEND);
    pp_check(s, OFF_RECV, PP_SEND, round, peer, KIND_SEND);
    pp_check(s, OFF_TARGET, PP_WRITE, round, peer, KIND_WRITE);
    s->recvs++;
    if (s->who == WHO_SERVER) {
      pp_post_recv(s, round + 1);
      pp_send_round(s, round);
    } else if (round + 1 < PP_ROUNDS) {
      pp_post_recv(s, round + 1);
      pp_send_round(s, round + 1);
    }
    break;
  default:
    g_error("%s: unexpected completion %s", s->name, itx_event_name(ev->event_number));
  }
  /* The client disconnects once its last round is answered and its own
   * requests completed (on iWARP a Send may complete after the answer
   * arrived; a disconnect before would flush it). */
  if (s->who == WHO_CLIENT && s->recvs == PP_ROUNDS && s->sends == PP_ROUNDS &&
      s->writes == PP_ROUNDS && !s->disconnecting) {
    s->disconnecting = TRUE;
    conf_ok(it_ep_disconnect(s->cs.ep, NULL, 0));
  }
  pp_maybe_done(s->pp);
  return G_SOURCE_CONTINUE;
}

static void
pp_notify(gpointer data)
{
  ((pp_side_t *) data)->notified++;
}

static void
pp_source(pp_t *pp, pp_side_t *s, it_evd_handle_t evd, itx_evd_source_func_t func)
{
  GSource *g = NULL;
  conf_ok(itx_evd_source_new(evd, &g));
  g_source_set_callback(g, G_SOURCE_FUNC(func), s, pp_notify);
  g_source_attach(g, pp->ctx);
  g_source_unref(g);
}

/* An IA with a PZ, DTO and CM EVDs that have descriptors, an RC EP and
 * the registered buffer; the server also a CM_REQ EVD. */
static void
pp_open(pp_t *pp, pp_side_t *s, const char *name, int who)
{
  memset(s, 0, sizeof(*s));
  s->pp = pp;
  s->name = name;
  s->who = who;
  conf_side_t *c = &s->cs;
  int fd;
  conf_ok(it_ia_create(conf_ia_name(), 2, 1, &c->ia));
  conf_ok(it_pz_create(c->ia, &c->pz));
  conf_ok(it_evd_create(c->ia, IT_DTO_EVENT_STREAM, IT_EVD_CREATE_FD, 64, 1, IT_NULL_HANDLE, &c->dto,
                        &fd));
  conf_ok(it_evd_create(c->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_CREATE_FD, 8, 1, IT_NULL_HANDLE, &c->cm,
                        &fd));
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  conf_ok(it_ep_rc_create(c->pz, c->dto, c->dto, c->cm, IT_EP_NO_FLAG, &attr, &c->ep));
  conf_buf_new(c, &s->buf, PP_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  pp_source(pp, s, c->dto, pp_on_dto);
  pp_source(pp, s, c->cm, pp_on_cm);
  if (who == WHO_SERVER) {
    conf_ok(it_evd_create(c->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_CREATE_FD, 4, 1, IT_NULL_HANDLE,
                          &c->req, &fd));
    pp_source(pp, s, c->req, pp_on_req);
    pp->qual.type = IT_IANA_PORT;
    conf_ok(it_listen_create(c->ia, 0, c->req, IT_LISTEN_NO_FLAG, &pp->qual, &s->lh));
  }
}

static gboolean
pp_on_timeout(gpointer data)
{
  pp_t *pp = data;
  pp->timed_out = TRUE;
  g_main_loop_quit(pp->loop);
  return G_SOURCE_REMOVE;
}

static void
test_pingpong(void)
{
  g_test_summary("A server and a client in one GMainLoop of one thread: the connection request, "
                 "both sides' connection events and every completion arrive through EVD sources; "
                 "200 rounds of a 64 KiB RDMA Write and a 1000-byte Send each way, every byte "
                 "checked; freeing the IAs removes all five sources.");
  g_test_message("interface %s", conf_ia_name());
  pp_t pp;
  memset(&pp, 0, sizeof(pp));
  pp.ctx = g_main_context_new();
  pp.loop = g_main_loop_new(pp.ctx, FALSE);
  pp_open(&pp, &pp.srv, "server", WHO_SERVER);
  pp_open(&pp, &pp.cli, "client", WHO_CLIENT);

  /* The client connects; everything after happens in the loop. */
  it_path_t path;
  conf_path(&pp.cli.cs, &path);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  pp_post_recv(&pp.cli, 0);
  pp_pdata_t mine = pp_mine(&pp.cli);
  conf_ok(it_ep_connect(pp.cli.cs.ep, &path, &ca, &pp.qual, IT_CONNECT_FLAG_TWO_WAY,
                        (unsigned char *) &mine, sizeof(mine)));
  GSource *t = g_timeout_source_new_seconds(LOOP_TIMEOUT_S);
  g_source_set_callback(t, pp_on_timeout, &pp, NULL);
  g_source_attach(t, pp.ctx);
  g_main_loop_run(pp.loop);
  g_source_destroy(t);
  g_source_unref(t);
  if (pp.timed_out)
    g_error("no end after %d s: server %u requests, %u established, %u receives, %u sends, %u "
            "writes, %u flushed, %u disconnects; client %u established, %u receives, %u sends, %u "
            "writes, %u disconnects", LOOP_TIMEOUT_S, pp.srv.requests, pp.srv.established,
            pp.srv.recvs, pp.srv.sends, pp.srv.writes, pp.srv.flushed, pp.srv.disconnects,
            pp.cli.established, pp.cli.recvs, pp.cli.sends, pp.cli.writes, pp.cli.disconnects);
  g_assert_cmpuint(pp.srv.requests, ==, 1);
  g_assert_cmpuint(pp.srv.established, ==, 1);
  g_assert_cmpuint(pp.cli.established, ==, 1);
  g_assert_cmpuint(pp.cli.flushed, ==, 0);
  conf_buf_check_guards(&pp.srv.buf);
  conf_buf_check_guards(&pp.cli.buf);

  /* Nothing more is pending; freeing the IAs frees the EVDs, and every
   * source goes by itself. */
  conf_ok(it_listen_free(pp.srv.lh));
  conf_buf_free(&pp.srv.buf);
  conf_buf_free(&pp.cli.buf);
  conf_side_close(&pp.srv.cs);
  conf_side_close(&pp.cli.cs);
  gboolean late = FALSE;
  t = g_timeout_source_new_seconds(5);
  g_source_set_callback(t, on_deadline, &late, NULL);
  g_source_attach(t, pp.ctx);
  while ((pp.srv.notified < 3 || pp.cli.notified < 2) && !late)
    g_main_context_iteration(pp.ctx, TRUE);
  g_source_destroy(t);
  g_source_unref(t);
  g_assert_cmpuint(pp.srv.notified, ==, 3);
  g_assert_cmpuint(pp.cli.notified, ==, 2);
  g_main_loop_unref(pp.loop);
  g_main_context_unref(pp.ctx);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/itx/evd-source/order-and-batch", test_order_and_batch);
  g_test_add_func("/itx/evd-source/remove", test_remove);
  g_test_add_func("/itx/evd-source/freed", test_freed);
  g_test_add_func("/itx/evd-source/refused", test_refused);
  g_test_add_func("/itx/evd-source/aevd", test_aevd);
  g_test_add_func("/itx/evd-source/fd-enable", test_fd_enable);
  g_test_add_func("/itx/evd-source/pingpong", test_pingpong);
  return g_test_run();
}
