/*
 * Conformance: every DTO completes exactly once, also at the end of an
 * endpoint's connection.  After it_ep_free or it_ep_reset the EVDs hold
 * nothing more of the EP's DTOs, and a reset EP connected again shows no
 * stale completion; DTOs posted to a NONOPERATIONAL EP complete flushed
 * once and never again; a DTO posted without IT_COMPLETION_FLAG that fails
 * still completes, with its error (the flag suppresses successes only),
 * and the DTOs behind it flush; large RDMA Reads, Sends and RDMA Writes in
 * flight when the EP is disconnected or freed complete flushed, or
 * successfully with every byte in place.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "conf.h"

#define assert_handle_eq(a, b) \
  g_assert_cmphex((guint64) (uintptr_t) (a), ==, (guint64) (uintptr_t) (b))

#define PRIV_TARGET (IT_PRIV_LOCAL | IT_PRIV_REMOTE)
/* What a sink holds before a transfer, so a byte not placed shows. */
#define POISON 0x5a
/* How long to go on watching an EVD that must stay empty. */
#define LATE_US (200 * 1000)
/* In-flight transfers: this many DTOs of the EP's largest payload. */
#define NFLIGHT 8
#define FLIGHT_LEN (1u << 20)
#define BAD_COOKIE 0xbad0

/* A completion the test expects: its event, its cookie, the status it must
 * have (or, with @any, success or flushed), and what came. */
typedef struct want {
  it_event_type_t type;
  it_dto_cookie_t cookie;
  it_dto_status_t status;
  gboolean any;        /* success or flushed */
  gboolean or_flushed; /* status, or flushed */
  gboolean seen;
  unsigned order;      /* how many completions came before it */
  it_dto_cmpl_event_t got;
} want_t;

static want_t
want(it_event_type_t type, it_dto_cookie_t cookie, it_dto_status_t status)
{
  want_t w = { .type = type, .cookie = cookie, .status = status };
  return w;
}

static want_t
want_any(it_event_type_t type, it_dto_cookie_t cookie)
{
  want_t w = { .type = type, .cookie = cookie, .status = IT_DTO_SUCCESS, .any = TRUE };
  return w;
}

/* Nothing on @evd now, nor a while later. */
static void
assert_empty_late(it_evd_handle_t evd)
{
  conf_assert_empty(evd);
  g_usleep(LATE_US);
  conf_assert_empty(evd);
}

/* Match completion @ev against the list @w of @n: it must be one not yet
 * seen, of @ep, with the right event and status; @order counts. */
static void
match_event(const it_event_t *ev, it_ep_handle_t ep, want_t *w, size_t n, unsigned *order)
{
  size_t i = 0;
  while (i < n && w[i].cookie != ev->dto_cmpl.cookie)
    i++;
  if (i == n || w[i].seen)
    g_error("%s completion: %s, cookie 0x%" G_GINT64_MODIFIER "x, %s",
            i == n ? "unexpected (never posted, or stale)" : "repeated", itx_event_name(ev->event_number),
            (guint64) ev->dto_cmpl.cookie, itx_dto_status_name(ev->dto_cmpl.dto_status));
  g_assert_cmpstr(itx_event_name(ev->event_number), ==, itx_event_name(w[i].type));
  it_dto_status_t got = ev->dto_cmpl.dto_status;
  gboolean ok = w[i].any ? got == IT_DTO_SUCCESS || got == IT_DTO_ERR_FLUSHED
                         : got == w[i].status || (w[i].or_flushed && got == IT_DTO_ERR_FLUSHED);
  if (!ok)
    g_error("cookie 0x%" G_GINT64_MODIFIER "x completed with %s, expected %s%s", (guint64) w[i].cookie,
            itx_dto_status_name(got), w[i].any ? "success or flushed" : itx_dto_status_name(w[i].status),
            w[i].or_flushed ? " or flushed" : "");
  assert_handle_eq(ev->dto_cmpl.ep, ep);
  w[i].seen = TRUE;
  w[i].got = ev->dto_cmpl;
  w[i].order = (*order)++;
}

/* Take one completion from @evd and match it (match_event). */
static void
take_one(it_evd_handle_t evd, it_ep_handle_t ep, want_t *w, size_t n, unsigned *order)
{
  it_event_t ev;
  size_t more = 0;
  it_status_t st = conf_evd_wait(evd, CONF_TIMEOUT_US, &ev, &more);
  if (st != IT_SUCCESS) {
    size_t missing = 0, first = n;
    for (size_t i = 0; i < n; i++)
      if (!w[i].seen) {
        g_test_message("cookie 0x%" G_GINT64_MODIFIER "x (%s) never completed", (guint64) w[i].cookie,
                       itx_event_name(w[i].type));
        missing++;
        first = first < n ? first : i;
      }
    g_error("waiting for a completion: %s; %zu posted DTOs never completed, the first cookie "
            "0x%" G_GINT64_MODIFIER "x (%s)", itx_status_name(st), missing,
            (guint64) (first < n ? w[first].cookie : 0), first < n ? itx_event_name(w[first].type) : "-");
  }
  match_event(&ev, ep, w, n, order);
}

/* Every completion of @w, each once, in any order; then nothing more. */
static void
take_all(it_evd_handle_t evd, it_ep_handle_t ep, want_t *w, size_t n)
{
  size_t left = 0;
  unsigned order = 0;
  for (size_t i = 0; i < n; i++)
    left += !w[i].seen;
  while (left-- > 0)
    take_one(evd, ep, w, n, &order);
  conf_assert_empty(evd);
}

/* [off, off + len) of @dst holds the bytes @src holds there. */
static void
check_same(const conf_buf_t *dst, const conf_buf_t *src, size_t off, size_t len)
{
  for (size_t i = off; i < off + len; i++)
    if (dst->data[i] != src->data[i])
      g_error("byte %zu of the sink is 0x%02x, expected 0x%02x (%zu bytes of %zu in place before it)",
              i, dst->data[i], src->data[i], i - off, len);
}

static void
pair_up(conf_pair_t *p)
{
  conf_pair_open(p);
  conf_pair_connect(p, NULL, 0, NULL, 0);
}

/* Disconnect a from p; both see DISCONNECT. */
static void
disconnect(conf_pair_t *p)
{
  conf_ok(it_ep_disconnect(p->a.ep, NULL, 0));
  conf_wait(p->a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_wait(p->p.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
}

/* ---- at the end: free, reset, reconnect ------------------------------ */

static void
test_ep_free(void)
{
  g_test_summary("IT-API it_ep_free of a connected EP with receives, RDMA Writes and an RDMA Read "
                 "outstanding: each completes exactly once on its EVD (the receives flushed, the "
                 "others flushed or successfully, a successful Read with its bytes), naming the "
                 "freed EP, and the EVD stays empty afterwards, also a while later");
  conf_pair_t p;
  pair_up(&p);
  conf_buf_t src, tgt, rsrc, sink, rq;
  conf_buf_new(&p.a, &src, FLIGHT_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &tgt, FLIGHT_LEN, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rsrc, FLIGHT_LEN, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &sink, FLIGHT_LEN, conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &rq, 4 * 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 3);
  conf_buf_fill(&rsrc, 5);
  memset(sink.data, POISON, sink.len);

  want_t w[9];
  size_t n = 0;
  for (unsigned i = 0; i < 4; i++) {
    it_lmr_triplet_t r = conf_seg(&rq, i * 64, 64);
    conf_ok(it_post_recv(p.a.ep, &r, 1, 0xd100 + i, IT_COMPLETION_FLAG));
    w[n++] = want(IT_DTO_RC_RECV_CMPL_EVENT, 0xd100 + i, IT_DTO_ERR_FLUSHED);
  }
  it_lmr_triplet_t s = conf_seg(&src, 0, src.len), k = conf_seg(&sink, 0, sink.len);
  for (unsigned i = 0; i < 4; i++) {
    conf_ok(it_post_rdma_write(p.a.ep, &s, 1, 0xd200 + i, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute(tgt.data), tgt.ctx));
    w[n++] = want_any(IT_DTO_RDMA_WRITE_CMPL_EVENT, 0xd200 + i);
  }
  conf_ok(it_post_rdma_read(p.a.ep, &k, 1, 0xd300, IT_COMPLETION_FLAG,
                            it_make_rdma_addr_absolute(rsrc.data), rsrc.ctx));
  w[n++] = want_any(IT_DTO_RDMA_READ_CMPL_EVENT, 0xd300);
  it_ep_handle_t ep = p.a.ep;
  conf_ok(it_ep_free(p.a.ep));
  p.a.ep = IT_NULL_HANDLE;

  take_all(p.a.dto, ep, w, n);
  if (w[8].got.dto_status == IT_DTO_SUCCESS)
    check_same(&sink, &rsrc, 0, sink.len);
  conf_buf_check_guards(&sink);
  assert_empty_late(p.a.dto);
  conf_wait(p.p.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  conf_assert_empty(p.p.dto);

  conf_buf_free(&rq);
  conf_buf_free(&sink);
  conf_buf_free(&rsrc);
  conf_buf_free(&tgt);
  conf_buf_free(&src);
  conf_pair_close(&p);
}

static void
test_ep_reset_reconnect(void)
{
  g_test_summary("IT-API it_ep_disconnect then it_ep_reset of an EP with receives and RDMA Writes "
                 "outstanding: each completes once before the reset, nothing after it; connected "
                 "again, the reset EPs carry new Sends and Writes that complete once each, with no "
                 "stale completion of the old DTOs");
  conf_pair_t p;
  pair_up(&p);
  conf_buf_t src, tgt, ra, rp;
  conf_buf_new(&p.a, &src, 65536, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &tgt, 65536, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &ra, 1024, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &rp, 1024, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 7);

  want_t w[5];
  size_t n = 0;
  for (unsigned i = 0; i < 3; i++) {
    it_lmr_triplet_t r = conf_seg(&ra, i * 256, 256);
    conf_ok(it_post_recv(p.a.ep, &r, 1, 0xe100 + i, IT_COMPLETION_FLAG));
    w[n++] = want(IT_DTO_RC_RECV_CMPL_EVENT, 0xe100 + i, IT_DTO_ERR_FLUSHED);
  }
  it_lmr_triplet_t s = conf_seg(&src, 0, src.len);
  for (unsigned i = 0; i < 2; i++) {
    conf_ok(it_post_rdma_write(p.a.ep, &s, 1, 0xe110 + i, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute(tgt.data), tgt.ctx));
    w[n++] = want_any(IT_DTO_RDMA_WRITE_CMPL_EVENT, 0xe110 + i);
  }
  disconnect(&p);
  take_all(p.a.dto, p.a.ep, w, n);
  conf_ok(it_ep_reset(p.a.ep));
  conf_ok(it_ep_reset(p.p.ep));
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_UNCONNECTED);
  assert_empty_late(p.a.dto);
  conf_assert_empty(p.p.dto);

  conf_pair_connect(&p, NULL, 0, NULL, 0);
  memset(tgt.data, 0, tgt.len);
  it_lmr_triplet_t r0 = conf_seg(&rp, 0, 256), r1 = conf_seg(&ra, 0, 256);
  it_lmr_triplet_t s0 = conf_seg(&src, 0, 200), s1 = conf_seg(&src, 0, 4096);
  conf_ok(it_post_recv(p.p.ep, &r0, 1, 0xe200, IT_COMPLETION_FLAG));
  conf_ok(it_post_recv(p.a.ep, &r1, 1, 0xe201, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(p.a.ep, &s0, 1, 0xe210, IT_COMPLETION_FLAG));
  conf_ok(it_post_rdma_write(p.a.ep, &s1, 1, 0xe212, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(tgt.data), tgt.ctx));
  conf_ok(it_post_send(p.p.ep, NULL, 0, 0xe211, IT_COMPLETION_FLAG));
  want_t wa[3] = { want(IT_DTO_RC_RECV_CMPL_EVENT, 0xe201, IT_DTO_SUCCESS),
                   want(IT_DTO_SEND_CMPL_EVENT, 0xe210, IT_DTO_SUCCESS),
                   want(IT_DTO_RDMA_WRITE_CMPL_EVENT, 0xe212, IT_DTO_SUCCESS) };
  want_t wp[2] = { want(IT_DTO_RC_RECV_CMPL_EVENT, 0xe200, IT_DTO_SUCCESS),
                   want(IT_DTO_SEND_CMPL_EVENT, 0xe211, IT_DTO_SUCCESS) };
  take_all(p.a.dto, p.a.ep, wa, 3);
  take_all(p.p.dto, p.p.ep, wp, 2);
  g_assert_cmpuint(wa[0].got.transferred_length, ==, 0);
  g_assert_cmpuint(wp[0].got.transferred_length, ==, 200);
  check_same(&rp, &src, 0, 200);
  conf_placed(&p.a, it_make_rdma_addr_absolute(tgt.data), tgt.ctx);
  check_same(&tgt, &src, 0, 4096);
  conf_assert_empty(p.a.dto);

  conf_buf_free(&rp);
  conf_buf_free(&ra);
  conf_buf_free(&tgt);
  conf_buf_free(&src);
  conf_pair_close(&p);
}

static void
test_nonoperational_once(void)
{
  g_test_summary("IT-API DTOs posted to a NONOPERATIONAL EP: each of several receives, Sends, "
                 "RDMA Writes and RDMA Reads, with IT_COMPLETION_FLAG or without, completes "
                 "exactly once with IT_DTO_ERR_FLUSHED; polled again later, and after it_ep_reset "
                 "and it_ep_free, the EVD holds nothing more");
  conf_pair_t p;
  pair_up(&p);
  conf_buf_t b, tgt;
  conf_buf_new(&p.a, &b, 1024, conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &tgt, 1024, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  disconnect(&p);
  g_assert_cmpint(conf_ep_state(p.a.ep), ==, IT_EP_STATE_NONOPERATIONAL);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute(tgt.data);

  for (unsigned round = 0; round < 2; round++) {
    it_dto_cookie_t c = 0xf000 + round * 0x100;
    want_t w[10];
    size_t n = 0;
    for (unsigned i = 0; i < 4; i++) {
      it_lmr_triplet_t r = conf_seg(&b, i * 64, 64);
      conf_ok(it_post_recv(p.a.ep, &r, 1, c + i, IT_COMPLETION_FLAG));
      w[n++] = want(IT_DTO_RC_RECV_CMPL_EVENT, c + i, IT_DTO_ERR_FLUSHED);
    }
    it_lmr_triplet_t s = conf_seg(&b, 512, 64);
    for (unsigned i = 0; i < 2; i++) {
      it_dto_flags_t fl = i ? 0 : IT_COMPLETION_FLAG;
      conf_ok(it_post_send(p.a.ep, &s, 1, c + 0x10 + i, fl));
      w[n++] = want(IT_DTO_SEND_CMPL_EVENT, c + 0x10 + i, IT_DTO_ERR_FLUSHED);
      conf_ok(it_post_rdma_write(p.a.ep, &s, 1, c + 0x20 + i, fl, ra, tgt.ctx));
      w[n++] = want(IT_DTO_RDMA_WRITE_CMPL_EVENT, c + 0x20 + i, IT_DTO_ERR_FLUSHED);
      conf_ok(it_post_rdma_read(p.a.ep, &s, 1, c + 0x30 + i, fl, ra, tgt.ctx));
      w[n++] = want(IT_DTO_RDMA_READ_CMPL_EVENT, c + 0x30 + i, IT_DTO_ERR_FLUSHED);
    }
    take_all(p.a.dto, p.a.ep, w, n);
    assert_empty_late(p.a.dto);
  }
  for (size_t i = 0; i < tgt.len; i++)
    g_assert_cmphex(tgt.data[i], ==, 0);
  /* Flushed means gone: neither a reset nor freeing the EP flushes them again. */
  conf_ok(it_ep_reset(p.a.ep));
  conf_assert_empty(p.a.dto);
  conf_ok(it_ep_free(p.a.ep));
  p.a.ep = IT_NULL_HANDLE;
  conf_assert_empty(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_free(&tgt);
  conf_buf_free(&b);
  conf_pair_close(&p);
}

/* ---- unsignaled DTOs that fail ---------------------------------------- */

typedef enum { BAD_PZ, BAD_LENGTH, BAD_ACCESS, BAD_RMR_READ, BAD_RMR_WRITE } bad_kind_t;

static void
test_unsignaled_error(gconstpointer data)
{
  bad_kind_t kind = (bad_kind_t) GPOINTER_TO_INT(data);
  g_test_summary("IT-API a DTO posted without IT_COMPLETION_FLAG that fails (locally: an LMR of "
                 "another PZ, a segment past its LMR's end, an RDMA Read into an LMR without "
                 "IT_PRIV_LOCAL_WRITE; remotely: an RDMA Read or Write with a wrong RMR context) "
                 "still completes with its error and cookie, and the DTOs behind it, with the "
                 "flag or without, and the receives complete flushed, each once");
  conf_pair_t p;
  pair_up(&p);
  gboolean remote = kind == BAD_RMR_READ || kind == BAD_RMR_WRITE;
  gboolean at_sent = itx_ia_completion(p.a.ia) == ITX_COMPLETION_SENT;
  conf_buf_t src, tgt, sink, rq, foreign;
  conf_buf_new(&p.a, &src, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.p, &tgt, 4096, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  /* The sink of the failing Read may be read, not written, locally. */
  conf_buf_new(&p.a, &sink, 4096,
               kind == BAD_ACCESS ? IT_PRIV_LOCAL_READ : conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &rq, 128, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_pz_handle_t pz2;
  conf_ok(it_pz_create(p.a.ia, &pz2));
  conf_side_t other = p.a;
  other.pz = pz2;
  conf_buf_new(&other, &foreign, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 9);
  conf_buf_fill(&foreign, 9);
  conf_buf_fill(&tgt, 11);
  memset(sink.data, POISON, sink.len);
  want_t wr[2];
  for (unsigned i = 0; i < 2; i++) {
    it_lmr_triplet_t r = conf_seg(&rq, i * 64, 64);
    conf_ok(it_post_recv(p.a.ep, &r, 1, 0xa600 + i, IT_COMPLETION_FLAG));
    wr[i] = want(IT_DTO_RC_RECV_CMPL_EVENT, 0xa600 + i, IT_DTO_ERR_FLUSHED);
  }

  it_rdma_addr_t ra = it_make_rdma_addr_absolute(tgt.data);
  it_rmr_context_t bad_ctx = tgt.ctx ^ 0xff0000ffu;
  it_lmr_triplet_t l;
  it_event_type_t type;
  it_dto_status_t status = IT_DTO_ERR_LOCAL_PROTECTION;
  switch (kind) {
  case BAD_PZ:
    l = conf_seg(&foreign, 0, 256);
    type = IT_DTO_SEND_CMPL_EVENT;
    conf_ok(it_post_send(p.a.ep, &l, 1, BAD_COOKIE, 0));
    break;
  case BAD_LENGTH:
    l = conf_seg(&src, src.len - 128, 256);
    type = IT_DTO_SEND_CMPL_EVENT;
    conf_ok(it_post_send(p.a.ep, &l, 1, BAD_COOKIE, 0));
    break;
  case BAD_ACCESS:
    l = conf_seg(&sink, 0, 256);
    type = IT_DTO_RDMA_READ_CMPL_EVENT;
    conf_ok(it_post_rdma_read(p.a.ep, &l, 1, BAD_COOKIE, 0, ra, tgt.ctx));
    break;
  case BAD_RMR_READ:
    l = conf_seg(&sink, 0, 256);
    type = IT_DTO_RDMA_READ_CMPL_EVENT;
    status = IT_DTO_ERR_REMOTE_ACCESS;
    conf_ok(it_post_rdma_read(p.a.ep, &l, 1, BAD_COOKIE, 0, ra, bad_ctx));
    break;
  case BAD_RMR_WRITE:
  default:
    l = conf_seg(&src, 0, 256);
    type = IT_DTO_RDMA_WRITE_CMPL_EVENT;
    status = IT_DTO_ERR_REMOTE_ACCESS;
    conf_ok(it_post_rdma_write(p.a.ep, &l, 1, BAD_COOKIE, 0, ra, bad_ctx));
    break;
  }
  /* The peer's refusal comes back later; where completions mean
   * transmission a DTO posted meanwhile would be sent and could succeed:
   * wait for the broken connection first. */
  if (remote)
    conf_wait(p.a.cm, IT_CM_MSG_CONN_BROKEN_EVENT);

  /* Behind it: Writes and Sends, with the flag and without. */
  it_lmr_triplet_t s = conf_seg(&src, 0, 64);
  want_t wn[4];
  for (unsigned i = 0; i < 4; i++) {
    it_dto_flags_t fl = i % 2 ? 0 : IT_COMPLETION_FLAG;
    if (i < 2) {
      conf_ok(it_post_rdma_write(p.a.ep, &s, 1, 0xa700 + i, fl,
                                 it_make_rdma_addr_absolute(tgt.data + 1024), tgt.ctx));
      wn[i] = want(IT_DTO_RDMA_WRITE_CMPL_EVENT, 0xa700 + i, IT_DTO_ERR_FLUSHED);
    } else {
      conf_ok(it_post_send(p.a.ep, &s, 1, 0xa700 + i, fl));
      wn[i] = want(IT_DTO_SEND_CMPL_EVENT, 0xa700 + i, IT_DTO_ERR_FLUSHED);
    }
  }

  /* Each once: the failing DTO with its error and cookie, the DTOs behind
   * it flushed and after it, in posting order, the receives flushed.  An
   * RDMA Write the peer refused may have completed at transmission where
   * completions mean that (unreported, being unsignaled), or flushed;
   * never as a success. */
  gboolean may_vanish = kind == BAD_RMR_WRITE && at_sent;
  want_t all[7] = { want(type, BAD_COOKIE, status), wn[0], wn[1], wn[2], wn[3], wr[0], wr[1] };
  all[0].or_flushed = may_vanish;
  unsigned order = 0;
  for (size_t k = 0; k < 7; k++) {
    gboolean rest_seen = TRUE;
    for (size_t i = 1; i < 7; i++)
      rest_seen &= all[i].seen;
    if (rest_seen && may_vanish) {
      g_test_message("the refused Write completed at transmission (no completion at placement)");
      break;
    }
    take_one(p.a.dto, p.a.ep, all, 7, &order);
  }
  for (size_t i = 1; i < 4; i++)
    g_assert_cmpuint(all[i].order, <, all[i + 1].order);
  if (all[0].seen)
    g_assert_cmpuint(all[0].order, <, all[1].order);
  assert_empty_late(p.a.dto);

  /* Nothing of the failing DTO landed. */
  if (kind == BAD_ACCESS || kind == BAD_RMR_READ)
    for (size_t i = 0; i < sink.len; i++)
      g_assert_cmphex(sink.data[i], ==, POISON);
  conf_buf_check(&tgt, 0, tgt.len, 11);
  conf_buf_check_guards(&sink);
  conf_buf_check_guards(&tgt);

  conf_buf_free(&foreign);
  conf_buf_free(&rq);
  conf_buf_free(&sink);
  conf_buf_free(&tgt);
  conf_buf_free(&src);
  conf_pair_close(&p);
}

/* ---- in flight at disconnect ------------------------------------------ */

typedef enum { FLIGHT_READ, FLIGHT_SEND, FLIGHT_WRITE } flight_t;
/* How the test ends the connection: it_ep_disconnect (orderly, which a
 * provider may let drain) or it_ep_free (abrupt). */
#define FLIGHT_FREE 0x10

static void
test_in_flight(gconstpointer data)
{
  flight_t kind = (flight_t) (GPOINTER_TO_INT(data) & 0xf);
  gboolean by_free = (GPOINTER_TO_INT(data) & FLIGHT_FREE) != 0;
  g_test_summary("IT-API it_ep_disconnect or it_ep_free with 8 RDMA Reads, Sends or RDMA Writes "
                 "of 1 MiB in flight: each DTO completes exactly once, flushed or successfully; a "
                 "successful Read has every byte in its sink, a successful receive every byte of "
                 "its Send, and (where completions mean placement) a successful Send or Write "
                 "every byte at the peer; the peer's receives complete once too");
  conf_pair_t p;
  pair_up(&p);
  gboolean placed = itx_ia_completion(p.a.ia) == ITX_COMPLETION_PLACED;
  size_t len = FLIGHT_LEN;
  conf_buf_t src, dst, rq;
  if (kind == FLIGHT_READ) {
    conf_buf_new(&p.p, &src, len * NFLIGHT, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.a, &dst, len * NFLIGHT, conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  } else {
    conf_buf_new(&p.a, &src, len * NFLIGHT, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.p, &dst, len * NFLIGHT, kind == FLIGHT_SEND ? IT_PRIV_LOCAL : PRIV_TARGET,
                 IT_ADDR_MODE_ABSOLUTE);
  }
  conf_buf_new(&p.a, &rq, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 13);
  memset(dst.data, POISON, dst.len);

  want_t w[NFLIGHT + 1], wp[NFLIGHT];
  it_lmr_triplet_t r = conf_seg(&rq, 0, 64);
  conf_ok(it_post_recv(p.a.ep, &r, 1, 0xc500, IT_COMPLETION_FLAG));
  w[NFLIGHT] = want(IT_DTO_RC_RECV_CMPL_EVENT, 0xc500, IT_DTO_ERR_FLUSHED);
  if (kind == FLIGHT_SEND)
    for (unsigned i = 0; i < NFLIGHT; i++) {
      it_lmr_triplet_t t = conf_seg(&dst, i * len, len);
      conf_ok(it_post_recv(p.p.ep, &t, 1, 0xc600 + i, IT_COMPLETION_FLAG));
      wp[i] = want_any(IT_DTO_RC_RECV_CMPL_EVENT, 0xc600 + i);
    }
  for (unsigned i = 0; i < NFLIGHT; i++) {
    size_t off = i * len;
    it_dto_cookie_t c = 0xc700 + i;
    if (kind == FLIGHT_READ) {
      it_lmr_triplet_t t = conf_seg(&dst, off, len);
      conf_ok(it_post_rdma_read(p.a.ep, &t, 1, c, IT_COMPLETION_FLAG,
                                it_make_rdma_addr_absolute(src.data + off), src.ctx));
      w[i] = want_any(IT_DTO_RDMA_READ_CMPL_EVENT, c);
    } else if (kind == FLIGHT_SEND) {
      it_lmr_triplet_t t = conf_seg(&src, off, len);
      conf_ok(it_post_send(p.a.ep, &t, 1, c, IT_COMPLETION_FLAG));
      w[i] = want_any(IT_DTO_SEND_CMPL_EVENT, c);
    } else {
      it_lmr_triplet_t t = conf_seg(&src, off, len);
      conf_ok(it_post_rdma_write(p.a.ep, &t, 1, c, IT_COMPLETION_FLAG,
                                 it_make_rdma_addr_absolute(dst.data + off), dst.ctx));
      w[i] = want_any(IT_DTO_RDMA_WRITE_CMPL_EVENT, c);
    }
  }
  /* Disconnect once the first DTO completed, so that the others are
   * caught mid-transfer where the bytes take time to move; the outcome is
   * checked whatever the timing. */
  unsigned order = 0;
  take_one(p.a.dto, p.a.ep, w, NFLIGHT, &order);
  it_ep_handle_t ep = p.a.ep;
  if (by_free) {
    conf_ok(it_ep_free(p.a.ep));
    p.a.ep = IT_NULL_HANDLE;
  } else {
    conf_ok(it_ep_disconnect(p.a.ep, NULL, 0));
  }
  take_all(p.a.dto, ep, w, NFLIGHT + 1);
  /* However the peer learnt of it, its connection ended. */
  it_event_t ev;
  size_t more = 0;
  conf_ok(conf_evd_wait(p.p.cm, CONF_TIMEOUT_US, &ev, &more));
  g_assert_true(ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT ||
                ev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT);

  int ok = 0;
  for (unsigned i = 0; i < NFLIGHT; i++) {
    if (w[i].got.dto_status != IT_DTO_SUCCESS)
      continue;
    ok++;
    if (kind == FLIGHT_READ || placed)
      check_same(&dst, &src, i * len, len);
  }
  g_test_message("%d of %d DTOs completed successfully, the rest flushed", ok, NFLIGHT);
  if (kind == FLIGHT_SEND) {
    take_all(p.p.dto, p.p.ep, wp, NFLIGHT);
    for (unsigned i = 0; i < NFLIGHT; i++) {
      if (wp[i].got.dto_status != IT_DTO_SUCCESS) {
        /* Received means placed: the sender cannot have seen a success
         * where completions mean placement and the receive flushed. */
        if (placed)
          g_assert_cmpint(w[i].got.dto_status, !=, IT_DTO_SUCCESS);
        continue;
      }
      g_assert_cmpuint(wp[i].got.transferred_length, ==, len);
      check_same(&dst, &src, i * len, len);
    }
  }
  assert_empty_late(p.a.dto);
  conf_assert_empty(p.p.dto);
  conf_buf_check_guards(&dst);

  conf_buf_free(&rq);
  conf_buf_free(&dst);
  conf_buf_free(&src);
  conf_pair_close(&p);
}

/* ---- an orderly disconnect ends while the consumer sleeps -------------- */

static void
test_disconnect_poll_then_sleep(void)
{
  g_test_summary("IT-API it_ep_disconnect with two RDMA Reads outstanding, the consumer polling "
                 "its EVD with it_evd_dequeue until both Reads completed and then sleeping in "
                 "it_evd_wait: the disconnect still ends (the close the Reads held back goes out "
                 "without another call), so the receive posted before it completes flushed, "
                 "each Read completes once (with its bytes when successful), and both sides "
                 "get their disconnect event");
  conf_pair_t p;
  pair_up(&p);
  conf_buf_t src, dst, rq;
  conf_buf_new(&p.p, &src, 8192, PRIV_TARGET, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &dst, 8192, conf_sink_privs(&p.a), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &rq, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&src, 17);
  memset(dst.data, POISON, dst.len);
  it_lmr_triplet_t r = conf_seg(&rq, 0, rq.len);
  conf_ok(it_post_recv(p.a.ep, &r, 1, 0xc800, IT_COMPLETION_FLAG));
  want_t w[3] = { want(IT_DTO_RC_RECV_CMPL_EVENT, 0xc800, IT_DTO_ERR_FLUSHED),
                  want_any(IT_DTO_RDMA_READ_CMPL_EVENT, 0xc801),
                  want_any(IT_DTO_RDMA_READ_CMPL_EVENT, 0xc802) };

  /* A busy poller, then the Reads and the disconnect; their answers are
   * given a moment to arrive together, and are polled for. */
  it_event_t ev;
  for (int i = 0; i < 4; i++)
    conf_assert_status(it_evd_dequeue(p.a.dto, &ev), IT_ERR_QUEUE_EMPTY);
  for (unsigned i = 0; i < 2; i++) {
    it_lmr_triplet_t t = conf_seg(&dst, i * 4096, 4096);
    conf_ok(it_post_rdma_read(p.a.ep, &t, 1, 0xc801 + i, IT_COMPLETION_FLAG,
                              it_make_rdma_addr_absolute(src.data + i * 4096), src.ctx));
  }
  conf_ok(it_ep_disconnect(p.a.ep, NULL, 0));
  g_usleep(500);
  unsigned order = 0;
  cert_limit_t lim;
  cert_limit_begin(&lim, "the first two completions after the disconnect", CONF_TIMEOUT_US);
  while (!(w[1].seen && w[2].seen)) {
    it_status_t st = it_evd_dequeue(p.a.dto, &ev);
    if (st == IT_ERR_QUEUE_EMPTY && !cert_limit_over(&lim))
      continue;
    conf_ok(st);
    match_event(&ev, p.a.ep, w, 3, &order);
  }
  cert_limit_end(&lim);
  /* Now asleep until the rest comes. */
  take_all(p.a.dto, p.a.ep, w, 3);
  for (unsigned i = 0; i < 2; i++)
    if (w[1 + i].got.dto_status == IT_DTO_SUCCESS)
      check_same(&dst, &src, i * 4096, 4096);
  conf_wait(p.a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  it_event_t pev;
  size_t more = 0;
  conf_ok(conf_evd_wait(p.p.cm, CONF_TIMEOUT_US, &pev, &more));
  g_assert_true(pev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT ||
                pev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT);
  conf_buf_check_guards(&dst);

  conf_buf_free(&rq);
  conf_buf_free(&dst);
  conf_buf_free(&src);
  conf_pair_close(&p);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/dto/flush/ep-free", test_ep_free);
  g_test_add_func("/conformance/dto/flush/ep-reset-reconnect", test_ep_reset_reconnect);
  g_test_add_func("/conformance/dto/flush/nonoperational-once", test_nonoperational_once);
  g_test_add_func("/conformance/dto/flush/disconnect-poll-then-sleep", test_disconnect_poll_then_sleep);
  g_test_add_data_func("/conformance/dto/unsignaled-error/other-pz", GINT_TO_POINTER(BAD_PZ),
                       test_unsignaled_error);
  g_test_add_data_func("/conformance/dto/unsignaled-error/length", GINT_TO_POINTER(BAD_LENGTH),
                       test_unsignaled_error);
  g_test_add_data_func("/conformance/dto/unsignaled-error/access", GINT_TO_POINTER(BAD_ACCESS),
                       test_unsignaled_error);
  g_test_add_data_func("/conformance/dto/unsignaled-error/read-rmr", GINT_TO_POINTER(BAD_RMR_READ),
                       test_unsignaled_error);
  g_test_add_data_func("/conformance/dto/unsignaled-error/write-rmr", GINT_TO_POINTER(BAD_RMR_WRITE),
                       test_unsignaled_error);
  static const char *const kinds[] = { "read", "send", "write" };
  for (int k = FLIGHT_READ; k <= FLIGHT_WRITE; k++) {
    g_autofree char *d = g_strdup_printf("/conformance/dto/flush/in-flight/disconnect/%s", kinds[k]);
    g_autofree char *f = g_strdup_printf("/conformance/dto/flush/in-flight/ep-free/%s", kinds[k]);
    g_test_add_data_func(d, GINT_TO_POINTER(k), test_in_flight);
    g_test_add_data_func(f, GINT_TO_POINTER(k | FLIGHT_FREE), test_in_flight);
  }
  return g_test_run();
}
