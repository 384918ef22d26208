/*
 * Conformance: two processes on one host connect and move data (public
 * IT-API only).  The tests: each spawns a child in a role
 * (conf_xproc_child.c) through the harness (conf_xproc_harness.c), drives
 * it and checks what landed on both sides.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf_xproc.h"

/* ---- the parent's halves ---- */

/* Messages both ways with the "echo" child; then a disconnect, or with
 * @bad_send a send whose segment runs past the end of its LMR, which must
 * complete LOCAL_PROTECTION and break the connection (the child was
 * spawned with CONF_XPROC_ECHO_END=broken). */
static void
send_recv_with(child_t *c, gboolean bad_send)
{
  conf_side_t s;
  conf_buf_t sb, rb;
  uint16_t port = xproc_hear_port(c);
  conf_side_open(&s, NULL);
  conf_buf_new(&s, &sb, MSG_BIG * 2, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &rb, MSG_BIG * 2, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t ra = conf_seg(&rb, 0, MSG_SMALL), rbig = conf_seg(&rb, MSG_BIG, MSG_BIG);
  conf_ok(it_post_recv(s.ep, &ra, 1, 11, IT_COMPLETION_FLAG));
  conf_ok(it_post_recv(s.ep, &rbig, 1, 12, IT_COMPLETION_FLAG));
  xproc_connect(&s, port);
  for (size_t i = 0; i < MSG_SMALL; i++)
    sb.data[i] = (unsigned char) (i * 31 + 1 * 7 + 1);
  for (size_t i = 0; i < MSG_BIG; i++)
    sb.data[MSG_BIG + i] = (unsigned char) (i * 31 + 2 * 7 + 1);
  it_lmr_triplet_t a = conf_seg(&sb, 0, MSG_SMALL), b = conf_seg(&sb, MSG_BIG, MSG_BIG);
  conf_ok(it_post_send(s.ep, &a, 1, 21, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(s.ep, &b, 1, 22, IT_COMPLETION_FLAG));
  /* Sends and echoed receives may interleave on the one DTO EVD. */
  int sends = 0, recvs = 0;
  for (int i = 0; i < 4; i++) {
    it_event_t ev;
    size_t more;
    conf_ok(conf_evd_wait(s.dto, CONF_TIMEOUT_US, &ev, &more));
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    if (ev.event_number == IT_DTO_SEND_CMPL_EVENT)
      sends++;
    else if (ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT)
      recvs++;
  }
  g_assert_cmpint(sends, ==, 2);
  g_assert_cmpint(recvs, ==, 2);
  g_assert_cmpmem(rb.data, MSG_SMALL, sb.data, MSG_SMALL);
  g_assert_cmpmem(rb.data + MSG_BIG, MSG_BIG, sb.data + MSG_BIG, MSG_BIG);
  /* Disconnect only once the child's own sends have completed there. */
  g_autofree char *sent = conf_hear(c->from, LINE_TIMEOUT_MS);
  g_assert_cmpstr(sent, ==, "sent");
  if (bad_send) {
    /* From the LMR the echoes landed in (a provider may keep what it
     * checked for them), 64 bytes of which the last 8 lie past its end. */
    it_lmr_triplet_t over = conf_seg(&rb, MSG_BIG * 2 - 56, 64);
    conf_ok(it_post_send(s.ep, &over, 1, 23, IT_COMPLETION_FLAG));
    conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_ERR_LOCAL_PROTECTION, 23);
    conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  } else {
    conf_ok(it_ep_disconnect(s.ep, NULL, 0));
    conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  }
  conf_buf_free(&sb);
  conf_buf_free(&rb);
  conf_side_close(&s);
  xproc_reap_ok(c);
}

/* Send the stream to a "stream" child: message k once the child granted
 * more than k receives, at most STREAM_W in flight (their source slots). */
/* Post credit receive @i into its 8 bytes of @cr: in the busy-poll
 * variant an odd one is two SGEs in swapped order (the high half first). */
static void
stream_credit_recv(conf_side_t *s, conf_buf_t *cr, unsigned i)
{
  it_dto_cookie_t ck = (1u << 30) + i;
  if (!xproc_stream_busy() || i % 2 == 0) {
    it_lmr_triplet_t t = conf_seg(cr, i * 8, 8);
    conf_ok(it_post_recv(s->ep, &t, 1, ck, IT_COMPLETION_FLAG));
    return;
  }
  it_lmr_triplet_t t[2] = { conf_seg(cr, i * 8 + 4, 4), conf_seg(cr, i * 8, 4) };
  conf_ok(it_post_recv(s->ep, t, 2, ck, IT_COMPLETION_FLAG));
}

static void
stream_with(child_t *c)
{
  conf_side_t s;
  conf_buf_t src, cr;
  uint16_t port = xproc_hear_port(c);
  conf_side_open(&s, NULL);
  conf_buf_new(&s, &src, (size_t) STREAM_W * STREAM_SLOT, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &cr, STREAM_CREDITS * 8, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (unsigned i = 0; i < STREAM_CREDITS; i++)
    stream_credit_recv(&s, &cr, i);
  xproc_connect(&s, port);
  guint64 credit = 0, done = 0;
  for (unsigned k = 0; k < STREAM_N || done < STREAM_N;) {
    if (k < STREAM_N && k < credit && k - done < STREAM_W) {
      size_t len = xproc_stream_size(k);
      unsigned char *m = src.data + (size_t) (k % STREAM_W) * STREAM_SLOT;
      for (size_t j = 0; j < len; j++)
        m[j] = xproc_stream_byte(k, j);
      it_lmr_triplet_t t = conf_seg(&src, (size_t) (k % STREAM_W) * STREAM_SLOT, len);
      conf_ok(it_post_send(s.ep, &t, 1, k, IT_COMPLETION_FLAG));
      k++;
      continue;
    }
    it_event_t ev;
    it_status_t st;
    if (!xproc_next_event(s.dto, xproc_stream_busy(), &ev, &st))
      g_error("stream: no completion within 15 s (%u of %u sent, %" G_GUINT64_FORMAT " done, credit %"
              G_GUINT64_FORMAT "): %s", k, STREAM_N, done, credit, itx_status_name(st));
    if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS) {
      /* Most likely the child ended the connection: its account, whole
       * here (where the test runs in a VM, its file is gone afterwards). */
      g_autofree char *here = xproc_broken_account(&s);
      g_autofree char *ended = xproc_wait_status_text(xproc_reap(c, LINE_TIMEOUT_MS));
      g_autofree char *account = xproc_child_stderr_line(c, 1500);
      g_error("stream: work request %" G_GUINT64_FORMAT " (%s) ended with DTO status %s after %u of %u sends, "
              "%" G_GUINT64_FORMAT " completed%s; the child %s; its account (%s), last part: %s",
              (guint64) ev.dto_cmpl.cookie, itx_event_name(ev.event_number),
              itx_dto_status_name(ev.dto_cmpl.dto_status), k, STREAM_N, done, here, ended, c->err, account);
    }
    if (ev.event_number == IT_DTO_SEND_CMPL_EVENT) {
      g_assert_cmpuint(ev.dto_cmpl.cookie, ==, done);  /* in order */
      done++;
    } else {
      g_assert_cmpint(ev.event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
      unsigned i = (unsigned) (ev.dto_cmpl.cookie - (1u << 30));
      g_assert_cmpuint(i, <, STREAM_CREDITS);
      guint64 v = 0;
      if (xproc_stream_busy() && i % 2) {
        /* Its two SGEs in swapped order: the low half landed second. */
        memcpy(&v, cr.data + i * 8 + 4, 4);
        memcpy((unsigned char *) &v + 4, cr.data + i * 8, 4);
      } else {
        memcpy(&v, cr.data + i * 8, 8);
      }
      /* The child's receive count, granted one credit Send at a time. */
      g_assert_cmpuint(v, >=, credit);
      g_assert_cmpuint(v, <=, STREAM_N);
      credit = v;
      stream_credit_recv(&s, &cr, i);
    }
  }
  g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
  g_autofree char *want = g_strdup_printf("ok %u", (unsigned) STREAM_N);
  g_assert_cmpstr(ok, ==, want);
  conf_ok(it_ep_disconnect(s.ep, NULL, 0));
  conf_buf_check_guards(&src);
  conf_buf_free(&src);
  conf_buf_free(&cr);
  conf_side_close(&s);
  xproc_reap_ok(c);
}

/* Connect to a target child and hear its region (address, context,
 * length); a source buffer 16 bytes longer and a sink buffer. */
static void
open_target(child_t *c, conf_side_t *s, conf_buf_t *lb, conf_buf_t *back, guint64 *addr, guint64 *ctx,
            unsigned *len)
{
  uint16_t port = xproc_hear_port(c);
  conf_side_open(s, NULL);
  xproc_connect(s, port);
  g_autofree char *l = conf_hear(c->from, LINE_TIMEOUT_MS);
  g_assert_nonnull(l);
  g_assert_cmpint(sscanf(l, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u", addr, ctx, len), ==, 3);
  conf_buf_new(s, lb, *len + 16, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(s, back, *len, conf_sink_privs(s), IT_ADDR_MODE_ABSOLUTE);
}

/* The end of a test against a "target" child told its last command: its
 * "ok", then (@disconnect) an orderly disconnect, the child reaped. */
static void
close_target(child_t *c, conf_side_t *s, conf_buf_t *lb, conf_buf_t *back, gboolean disconnect)
{
  g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
  if (disconnect) {
    conf_ok(it_ep_disconnect(s->ep, NULL, 0));
    conf_wait(s->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  }
  xproc_reap_ok(c);
  g_assert_cmpstr(ok, ==, "ok");
  conf_buf_free(lb);
  conf_buf_free(back);
  conf_side_close(s);
}

static void
rdma_with(child_t *c, gboolean overrun)
{
  conf_side_t s;
  conf_buf_t lb, back;
  guint64 addr, ctx;
  unsigned len;
  open_target(c, &s, &lb, &back, &addr, &ctx, &len);
  conf_buf_fill(&lb, 9);
  if (overrun) {
    /* 16 bytes past the end of the child's region: refused, nothing lands. */
    it_lmr_triplet_t g = conf_seg(&lb, 0, len + 16);
    conf_ok(it_post_rdma_write(s.ep, &g, 1, 31, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute((void *) (uintptr_t) addr), ctx));
    conf_write_refused(&s, 31);
    conf_say(c->to, "guards\n");
  } else {
    it_lmr_triplet_t g = conf_seg(&lb, 0, len), r = conf_seg(&back, 0, len);
    conf_ok(it_post_rdma_write(s.ep, &g, 1, 31, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute((void *) (uintptr_t) addr), ctx));
    conf_ok(it_post_rdma_read(s.ep, &r, 1, 32, IT_COMPLETION_FLAG,
                              it_make_rdma_addr_absolute((void *) (uintptr_t) addr), ctx));
    conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 31);
    conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 32);
    conf_buf_check(&back, 0, len, 9);
    conf_buf_check_guards(&back);
    conf_say(c->to, "check 9\n");
  }
  close_target(c, &s, &lb, &back, !overrun);
}

/* Reads into RMRs need rdma_read_local_extensions and an RMR type; @iw:
 * a read sink needs remote write, @rel: RMRs may be relatively addressed. */
static it_rmr_type_t
read_ext_type(conf_side_t *s, gboolean *iw, gboolean *rel)
{
  it_ia_info_t *info = conf_info(s);
  it_rmr_type_t t = !info->rdma_read_local_extensions ? IT_RMR_TYPE_DEFAULT :
                    (info->rmr_types_supported & IT_RMR_TYPE_NARROW) ? IT_RMR_TYPE_NARROW :
                    (info->rmr_types_supported & IT_RMR_TYPE_WIDE) ? IT_RMR_TYPE_WIDE : IT_RMR_TYPE_DEFAULT;
  *iw = info->rdma_read_requires_remote_write;
  *rel = info->addr_mode_relative_support;
  it_ia_info_free(info);
  return t;
}

/* Every byte of @b outside [@off, @off + @n) is 0. */
static void
assert_zero_outside(const conf_buf_t *b, size_t off, size_t n)
{
  for (size_t i = 0; i < b->len; i++)
    if ((i < off || i >= off + n) && b->data[i] != 0)
      g_error("byte %zu of the sink, outside the %zu bytes at %zu read into it, is 0x%02x", i, n, off,
              b->data[i]);
}

/* Point @t at @off bytes into the window over [WIN_OFF, WIN_OFF + WIN_LEN)
 * of @b: an offset in a relatively addressed window, else an address. */
static void
win_at(it_rmr_triplet_t *t, conf_buf_t *b, gboolean rel, size_t off)
{
  if (rel)
    t->addr.rel = off;
  else
    t->addr.abs = b->data + WIN_OFF + off;
}

/* RDMA Reads from a target child's region into a window of ours linked
 * through the cross-process EP (relatively addressed where the IA offers
 * it, so that the sink's addresses are offsets the provider translates):
 * the bytes land in the window's range and nowhere else; with IT_UNLINK_LOCAL_SINK the completion names the RMR
 * and it is unlinked.  With @bad_sink the sink window lacks what a Read
 * sink needs (iWARP: remote write on the window; InfiniBand: local write on
 * its LMR): LOCAL_PROTECTION, the connection breaks, nothing lands. */
static void
read_to_rmr_with(child_t *c, gboolean bad_sink)
{
  conf_side_t s;
  conf_buf_t lb, back, sink;
  guint64 addr, ctx;
  unsigned len;
  gboolean iw, rel;
  open_target(c, &s, &lb, &back, &addr, &ctx, &len);
  it_rmr_type_t type = read_ext_type(&s, &iw, &rel);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) addr);
  it_mem_priv_t lmr_privs = iw ? IT_PRIV_LOCAL | IT_PRIV_REMOTE : IT_PRIV_LOCAL_READ | IT_PRIV_REMOTE;
  it_mem_priv_t win_privs = iw ? IT_PRIV_REMOTE_READ : IT_PRIV_REMOTE;
  if (!bad_sink) {
    lmr_privs = IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE;
    win_privs = IT_PRIV_REMOTE_WRITE;
  }
  conf_buf_new(&s, &sink, WIN_OFF * 2, lmr_privs, IT_ADDR_MODE_ABSOLUTE);
  it_rmr_handle_t rmr = IT_NULL_HANDLE;
  it_rmr_context_t wctx = 0;
  it_rmr_triplet_t t = { .length = 256 };
  if (type != IT_RMR_TYPE_DEFAULT) {
    conf_ok(it_rmr_create20(s.pz, type, &rmr));
    conf_ok(it_rmr_link(rmr, sink.lmr, sink.data + WIN_OFF, WIN_LEN,
                        rel ? IT_ADDR_MODE_RELATIVE : IT_ADDR_MODE_ABSOLUTE, win_privs, s.ep, 60,
                        IT_COMPLETION_FLAG, &wctx));
    conf_dto(s.dto, IT_RMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 60);
    t.rmr = rmr;
    win_at(&t, &sink, rel, 16);
  }
  if (bad_sink && rmr != IT_NULL_HANDLE) {
    conf_ok(it_post_rdma_read_to_rmr(s.ep, &t, 1, 61, IT_COMPLETION_FLAG, ra, ctx));
    conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_ERR_LOCAL_PROTECTION, 61);
    conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
    assert_zero_outside(&sink, 0, 0);
    conf_say(c->to, "local\n");
  } else {
    it_lmr_triplet_t g = conf_seg(&lb, 0, len);
    conf_buf_fill(&lb, 9);
    conf_ok(it_post_rdma_write(s.ep, &g, 1, 62, IT_COMPLETION_FLAG, ra, ctx));
    conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 62);
    conf_placed(&s, ra, ctx); /* before the child looks */
    if (rmr != IT_NULL_HANDLE) {
      conf_ok(it_post_rdma_read_to_rmr(s.ep, &t, 1, 63, IT_COMPLETION_FLAG,
                                       it_make_rdma_addr_absolute((void *) (uintptr_t) (addr + 100)), ctx));
      it_dto_cmpl_event_t d = conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 63);
      g_assert_cmpuint(d.transferred_length, ==, 256);
      g_assert_true(d.unlinked_mr_handle == IT_NULL_HANDLE);
      g_assert_cmpmem(sink.data + WIN_OFF + 16, 256, lb.data + 100, 256);
      assert_zero_outside(&sink, WIN_OFF + 16, 256);
      /* With unlink of the sink, at the window's far end. */
      memset(sink.data + WIN_OFF + 16, 0, 256);
      win_at(&t, &sink, rel, WIN_LEN - 100);
      t.length = 100;
      conf_ok(it_post_rdma_read_to_rmr(s.ep, &t, 1, 64, IT_COMPLETION_FLAG | IT_UNLINK_LOCAL_SINK,
                                       it_make_rdma_addr_absolute((void *) (uintptr_t) (addr + 1000)), ctx));
      d = conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 64);
      g_assert_cmpuint(d.transferred_length, ==, 100);
      g_assert_true((void *) d.unlinked_mr_handle == (void *) rmr);
      g_assert_cmpmem(sink.data + WIN_OFF + WIN_LEN - 100, 100, lb.data + 1000, 100);
      assert_zero_outside(&sink, WIN_OFF + WIN_LEN - 100, 100);
      it_rmr_param_t q;
      conf_ok(it_rmr_query(rmr, IT_RMR_PARAM_LINKED, &q));
      g_assert_cmpint(q.linked, ==, IT_FALSE);
      conf_assert_status(it_post_rdma_read_to_rmr(s.ep, &t, 1, 65, IT_COMPLETION_FLAG, ra, ctx),
                         IT_ERR_INVALID_RMR);
      conf_assert_empty(s.dto);
      /* The provider killed the sink key too: the child's write through
       * it is refused, nothing lands. */
      conf_say(c->to, "write %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n",
          rel ? (guint64) 0 : (guint64) (uintptr_t) (sink.data + WIN_OFF), (guint64) wctx);
      conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
      assert_zero_outside(&sink, WIN_OFF + WIN_LEN - 100, 100);
    } else {
      conf_say(c->to, "check 9\n");
    }
  }
  conf_buf_check_guards(&sink);
  g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
  if (rmr == IT_NULL_HANDLE) {
    conf_ok(it_ep_disconnect(s.ep, NULL, 0));
    conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  }
  xproc_reap_ok(c);
  g_assert_cmpstr(ok, ==, "ok");
  if (rmr != IT_NULL_HANDLE)
    conf_ok(it_rmr_free(rmr));
  conf_buf_free(&sink);
  conf_buf_free(&lb);
  conf_buf_free(&back);
  conf_side_close(&s);
  conf_require(type != IT_RMR_TYPE_DEFAULT, "RDMA Read into RMRs (rdma_read_local_extensions, an RMR type)");
}

/* post-beside-transfer: a Read of XLONG_LEN bytes, long enough to be seen
 * landing, small enough for a device that pins it three times. */
#define XLONG_LEN (32u << 20)
#define XLONG_SEED 9

/* The byte conf_buf_fill(XLONG_SEED) puts at @i, and the first index from
 * @i on where that is not 0 (a sink starts zeroed). */
static unsigned char
xlong_byte(size_t i)
{
  return conf_pattern_byte(i, XLONG_SEED);
}

static size_t
xlong_probe(size_t i, int step)
{
  while (xlong_byte(i) == 0)
    i += (size_t) step;
  return i;
}

static gboolean maps_memfd(const char *name);
static guint maps_count(const char *needle);

/* What the provider does with a child's region in a sealable memfd once it
 * has reached it, as the matrix row says (CONF_XPROC_PEER_MAPPED): 1, it
 * maps the region here and moves bytes by memcpy, and the tests wait for
 * that mapping; 0, it must not (a peer it does not trust), nor map the
 * mapping CONF_XPROC_OWN_MAPPING names more than once (the process's own);
 * unset, neither is looked at. */
static int
peer_mapped(void)
{
  const char *v = g_getenv("CONF_XPROC_PEER_MAPPED");
  return v == NULL || *v == '\0' ? -1 : strcmp(v, "0") != 0;
}

/* Whether the child's region is mapped here: the row says the provider
 * does, and the child runs as this user (conf_xuser_on: a peer of another
 * user is not trusted). */
static gboolean
peer_maps(void)
{
  return peer_mapped() == 1 && !conf_xuser_on();
}

/* A provider that maps a region of the child's shared memory here does so
 * some time after its first access: small RDMA Writes of @seg (the bytes
 * the region holds there) until it has, 10 s at most (where it does not,
 * nothing is done).  The mapping comes with the child's answer to a
 * message, which its progress thread sends and this process's takes: on a
 * loaded host (the CI) that may take longer than any count of writes. */
static void
await_mapping(conf_side_t *s, const it_lmr_triplet_t *seg, it_rdma_addr_t ra, it_rmr_context_t ctx)
{
  if (peer_mapped() == 0) {
    /* An untrusted peer's memory stays its own: neither its region nor
     * its region table is mapped here (this process's own table is the
     * one mapping of that name). */
    const char *own = g_getenv("CONF_XPROC_OWN_MAPPING");
    g_assert_false(maps_memfd("conf-xproc-target"));
    if (own != NULL && *own != '\0')
      g_assert_cmpuint(maps_count(own), <=, 1);
  }
  if (!peer_maps())
    return;
  cert_limit_t w;
  cert_limit_begin(&w, "the target's region to be mapped here", 10 * G_USEC_PER_SEC);
  while (!maps_memfd("conf-xproc-target") && !cert_limit_over(&w)) {
    conf_ok(it_post_rdma_write(s->ep, seg, 1, 40, IT_COMPLETION_FLAG, ra, ctx));
    conf_dto(s->dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 40);
    g_usleep(1000);
  }
  cert_limit_end(&w);
  g_assert_true(maps_memfd("conf-xproc-target"));
}

/* A "target" or "mtarget" (@role) child whose region is XLONG_LEN bytes. */
static child_t
spawn_long_target(const char *role)
{
  g_autofree char *len = g_strdup_printf("%u", XLONG_LEN);
  g_setenv("CONF_XPROC_TARGET_LEN", len, TRUE);
  child_t c = xproc_spawn(role);
  g_unsetenv("CONF_XPROC_TARGET_LEN");
  return c;
}

/* A connection to a "target" or "mtarget" child (@role) whose XLONG_LEN
 * bytes hold the XLONG_SEED pattern, written whole from lb (which holds it
 * too) and placed there before xlong_open returns; back is a sink as long
 * (all 0), ra and ctx name the child's region.  An "mtarget" region is
 * mapped here before xlong_open returns where the provider maps a peer's
 * region (peer_maps). */
typedef struct {
  child_t c;
  conf_side_t s;
  conf_buf_t lb, back;
  it_rdma_addr_t ra;
  it_rmr_context_t ctx;
  unsigned len;
} xlong_t;

static void
xlong_open(xlong_t *t, const char *role)
{
  guint64 addr, ctx;
  t->c = spawn_long_target(role);
  open_target(&t->c, &t->s, &t->lb, &t->back, &addr, &ctx, &t->len);
  g_assert_cmpuint(t->len, ==, XLONG_LEN);
  t->ra = it_make_rdma_addr_absolute((void *) (uintptr_t) addr);
  t->ctx = (it_rmr_context_t) ctx;
  conf_buf_fill(&t->lb, XLONG_SEED);
  it_lmr_triplet_t whole = conf_seg(&t->lb, 0, t->len), head = conf_seg(&t->lb, 0, 64);
  conf_ok(it_post_rdma_write(t->s.ep, &whole, 1, 40, IT_COMPLETION_FLAG, t->ra, t->ctx));
  conf_dto(t->s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 40);
  /* The Write's completion says only that its source may be reused: on
   * vp/iwarp it comes once the socket took the last byte, megabytes
   * before the child placed them.  A child told to use its region then
   * (a Send of it, "send") sent the 0s still there: post-beside-receive
   * found byte 29895815 of its 32 MiB receive 0 in one CI run.  A Read
   * behind the Write comes back once the Write is placed (RC order;
   * RFC 5040 5.5, as iw_sq.c's delivery fences use it). */
  size_t tail = t->len - 64;
  it_lmr_triplet_t sink = conf_seg(&t->back, tail, 64);
  conf_ok(it_post_rdma_read(t->s.ep, &sink, 1, 39, IT_COMPLETION_FLAG, t->ra + tail, t->ctx));
  conf_dto(t->s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 39);
  g_assert_cmpmem(t->back.data + tail, 64, t->lb.data + tail, 64);
  memset(t->back.data + tail, 0, 64);
  if (strcmp(role, "mtarget") == 0)
    await_mapping(&t->s, &head, t->ra, t->ctx);
}

/* The end of a test whose child lives: its region still holds the
 * XLONG_SEED pattern (the child checks), and it ends. */
static void
xlong_close(xlong_t *t)
{
  conf_say(t->c.to, "check %u\n", XLONG_SEED);
  g_autofree char *ok = conf_hear(t->c.from, LINE_TIMEOUT_MS);
  g_assert_cmpstr(ok, ==, "ok");
  conf_say(t->c.to, "end\n");
  close_target(&t->c, &t->s, &t->lb, &t->back, TRUE);
  unlink(t->c.err);
}

/* The end of a test that killed the child: the connection ends BROKEN (or
 * DISCONNECT), no other completion comes, nothing outside the sink moved. */
static void
xlong_killed_close(xlong_t *t)
{
  it_event_t cev;
  size_t cmore;
  conf_ok(conf_evd_wait(t->s.cm, CONF_TIMEOUT_US, &cev, &cmore));
  g_assert_true(cev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT ||
                cev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT);
  g_usleep(100000);  /* a second completion of anything would come now */
  conf_assert_empty(t->s.dto);
  conf_buf_check_guards(&t->back);
  xproc_reap(&t->c, 5000);
  unlink(t->c.err);
  conf_buf_free(&t->lb);
  conf_buf_free(&t->back);
  conf_side_close(&t->s);
}

/* How post_beside_transfer_with's long Read is posted, and where from. */
typedef enum {
  BESIDE_PRIVATE,     /* by a thread of its own, from the child's private memory ("target") */
  BESIDE_SHARED,      /* by a thread of its own, from its shared memory ("mtarget") */
  BESIDE_BEHIND_SEND, /* by the test's thread behind a Send to the "mtarget" child: the
                       * Read starts when the Send is answered, at the provider's will */
  BESIDE_RECEIVE,     /* not a Read: a Send of the "mtarget" child's region into a receive */
  BESIDE_RECEIVE_POLLED, /* as BESIDE_RECEIVE, with a thread of the test polling the DTO EVD
                          * meanwhile (it_evd_dequeue), which takes both completions */
} beside_t;

/* BESIDE_RECEIVE_POLLED's poller: it_evd_dequeue on @evd until it has
 * BESIDE_POLLED_EVENTS events or BESIDE_POLL_US have passed (the whole
 * round: the 32 MiB landing as well, which a device in an emulated
 * machine may take seconds over). */
#define BESIDE_POLL_US (4 * CONF_TIMEOUT_US)
#define BESIDE_POLLED_EVENTS 2
typedef struct {
  it_evd_handle_t evd;
  it_event_t ev[BESIDE_POLLED_EVENTS];
  unsigned n;
  it_status_t last;  /* the last status other than an event or IT_ERR_QUEUE_EMPTY */
} beside_poller_t;

static gpointer
beside_poll_run(gpointer data)
{
  beside_poller_t *p = data;
  p->last = IT_SUCCESS;
  cert_limit_t w;
  cert_limit_begin(&w, "events polled beside a transfer", BESIDE_POLL_US);
  while (p->n < BESIDE_POLLED_EVENTS && !cert_limit_over(&w)) {
    it_status_t st = it_evd_dequeue(p->evd, &p->ev[p->n]);
    if (st == IT_SUCCESS)
      p->n++;
    else if (st != IT_ERR_QUEUE_EMPTY)
      p->last = st;
  }
  cert_limit_end(&w);
  return NULL;
}

/* While an RDMA Read of the child's region is landing here, a small RDMA
 * Write is posted on the same endpoint: the post returns before the Read
 * has landed whole, and completes after it.  @mode: beside_t.  A shared
 * region is one a provider may map here (its first accesses then go
 * another way while it sets that up). */
static void
post_beside_transfer_with(beside_t mode)
{
  gboolean shared = mode != BESIDE_PRIVATE;
  gboolean receive = mode == BESIDE_RECEIVE || mode == BESIDE_RECEIVE_POLLED;
  xlong_t x;
  xlong_open(&x, shared ? "mtarget" : "target");
  child_t *c = &x.c;
  unsigned len = x.len;
  it_rdma_addr_t ra = x.ra;
  it_rmr_context_t ctx = x.ctx;
  it_lmr_triplet_t head = conf_seg(&x.lb, 0, 64);
  size_t part = xlong_probe(len / 4, 1), last = xlong_probe(len - 1, -1);
  unsigned seen = 0, early = 0, n = conf_beside_rounds();  /* as in conf-race */
  for (unsigned r = 0; r < n; r++) {
    memset(x.back.data, 0, len);
    conf_rdma_post_t lr = { .ep = x.s.ep, .local = conf_seg(&x.back, 0, len), .remote = ra, .ctx = ctx,
                            .cookie = 41, .read = TRUE };
    GThread *t = NULL;
    beside_poller_t poller = { .evd = x.s.dto };
    if (receive) {
      conf_ok(it_post_recv(x.s.ep, &lr.local, 1, 44, IT_COMPLETION_FLAG));
      if (mode == BESIDE_RECEIVE_POLLED)
        t = g_thread_new("poller", beside_poll_run, &poller);
      conf_say(c->to, "send\n");
    } else if (mode == BESIDE_BEHIND_SEND) {
      conf_say(c->to, "recv\n");
      g_autofree char *posted = conf_hear(c->from, LINE_TIMEOUT_MS);
      g_assert_cmpstr(posted, ==, "posted");
      conf_ok(it_post_send(x.s.ep, &head, 1, 43, IT_COMPLETION_FLAG));
      conf_rdma_post_run(&lr);
    } else {
      t = g_thread_new("long-read", conf_rdma_post_run, &lr);
    }
    cert_limit_t lim;
    cert_limit_begin(&lim, "a long RDMA Read to start landing", CONF_TIMEOUT_US);
    /* The poller's mode watches in short sleeps: the CPU stays with the
     * poller, which then drains the connection before anything else does. */
    while (conf_landing_peek(&x.back.data[part]) != xlong_byte(part) && !cert_limit_over(&lim))
      if (mode == BESIDE_RECEIVE_POLLED)
        g_usleep(20);
    cert_limit_end(&lim);
    gboolean in_flight = conf_landing_peek(&x.back.data[part]) == xlong_byte(part) &&
                         conf_landing_peek(&x.back.data[last]) != xlong_byte(last);
    /* The same bytes the region holds: the child's check below stands. */
    conf_ok(it_post_rdma_write(x.s.ep, &head, 1, 42, IT_COMPLETION_FLAG, ra, ctx));
    if (in_flight) {
      seen++;
      early += conf_landing_peek(&x.back.data[last]) != xlong_byte(last);
    }
    if (t != NULL)
      g_thread_join(t);
    if (mode == BESIDE_BEHIND_SEND)
      conf_dto(x.s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 43);
    if (receive) {
      /* Two queues: the Write's completion and the receive's in either order. */
      if (mode == BESIDE_RECEIVE_POLLED && poller.n < BESIDE_POLLED_EVENTS)
        g_error("round %u: the thread polling the DTO EVD took %u of the 2 completions (the receive of "
                "a 32 MiB Send, an RDMA Write) in %d s of polling (last status other than "
                "IT_ERR_QUEUE_EMPTY: %s)", r, poller.n, (int) (BESIDE_POLL_US / 1000000),
                itx_status_name(poller.last));
      for (unsigned k = 0; k < 2; k++) {
        it_event_t ev;
        size_t more;
        if (mode == BESIDE_RECEIVE_POLLED)
          ev = poller.ev[k];
        else
          conf_ok(conf_evd_wait(x.s.dto, CONF_TIMEOUT_US, &ev, &more));
        gboolean recv = ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT;
        g_assert_cmpstr(itx_event_name(ev.event_number), ==,
                        itx_event_name(recv ? IT_DTO_RC_RECV_CMPL_EVENT : IT_DTO_RDMA_WRITE_CMPL_EVENT));
        g_assert_cmpuint(ev.dto_cmpl.cookie, ==, recv ? 44 : 42);
        g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_SUCCESS));
        if (recv)
          g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, len);
      }
      g_autofree char *sent = conf_hear(c->from, LINE_TIMEOUT_MS + XPROC_EVENT_WAIT_US / 1000);
      if (g_strcmp0(sent, "sent") != 0) {
        g_autofree char *ended = xproc_wait_status_text(xproc_reap(c, LINE_TIMEOUT_MS));
        g_autofree char *account = xproc_child_stderr_line(c, 1500);
        g_error("round %u: the child said '%s', not 'sent', after both completions of its 32 MiB Send "
                "and the Write came here; the child %s; its stderr (%s), last part: %s", r,
                sent != NULL ? sent : "(nothing)", ended, c->err, account);
      }
    } else {
      conf_dto(x.s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 41);
      conf_dto(x.s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 42);
    }
    conf_buf_check(&x.back, 0, len, XLONG_SEED);
  }
  const char *what = receive ? "Send" : "RDMA Read";
  g_test_message("%u of %u rounds saw the %s landing when the Write was posted; in %u of those the post "
                 "returned before its last byte was in place", seen, n, what, early);
  /* One round proves nothing: a poster descheduled between its look and
   * its post (a loaded host, a sanitizer) finds the transfer whole. */
  if (seen > 1 && early == 0)
    g_error("in each of %u rounds an RDMA Write posted while a %u MiB %s from another process on "
            "the same endpoint was landing returned only once the %s had landed whole: a post waits for "
            "a transfer in flight (a lock held across the copy?)", seen, len >> 20, what, what);
  conf_say(c->to, "check %u\n", XLONG_SEED);
  if (shared) {
    /* The shared-memory child goes on taking commands: "end" ends it. */
    g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
    g_assert_cmpstr(ok, ==, "ok");
    conf_say(c->to, "end\n");
  }
  close_target(c, &x.s, &x.lb, &x.back, TRUE);
  unlink(x.c.err);
}

/* An RDMA Read posted right behind a Send, while this thread only polls
 * (it_evd_dequeue): the Read waits for the Send's answer (its peer's ACK),
 * and the poll that takes that answer must let it go.  Against an
 * "mtarget" child, whose region is mapped here. */
static void
test_read_behind_send_polled(void)
{
  g_test_summary("xproc: 64 rounds of an RDMA Read posted right behind a Send to the child, this "
                 "thread taking completions only by it_evd_dequeue: the Read waits for the Send's "
                 "answer, then completes, in order, with the child's bytes");
  enum { ROUNDS = 64, PIECE = 64 };
  xlong_t x;
  xlong_open(&x, "mtarget");
  it_lmr_triplet_t head = conf_seg(&x.lb, 0, 8);
  for (unsigned r = 0; r < ROUNDS; r++) {
    size_t off = ((size_t) r * 4099) % (x.len - PIECE);
    memset(x.back.data + off, 0, PIECE);
    conf_say(x.c.to, "recv\n");
    g_autofree char *posted = conf_hear(x.c.from, LINE_TIMEOUT_MS);
    g_assert_cmpstr(posted, ==, "posted");
    /* Poll a while first, so that the provider sees this thread polling
     * (a provider may then leave its queue to the poller, and ring no
     * doorbell for it). */
    for (gint64 until = g_get_monotonic_time() + 5000; g_get_monotonic_time() < until;) {
      it_event_t idle;
      it_status_t st = it_evd_dequeue(x.s.dto, &idle);
      g_assert_cmpstr(itx_status_name(st), ==, itx_status_name(IT_ERR_QUEUE_EMPTY));
    }
    it_lmr_triplet_t t = conf_seg(&x.back, off, PIECE);
    conf_ok(it_post_send(x.s.ep, &head, 1, 1000 + r, IT_COMPLETION_FLAG));
    conf_ok(it_post_rdma_read(x.s.ep, &t, 1, 2000 + r, IT_COMPLETION_FLAG, x.ra + off, x.ctx));
    /* In posting order: the Send, then the Read. */
    for (unsigned k = 0; k < 2; k++) {
      it_event_t ev;
      it_status_t st;
      if (!xproc_next_event(x.s.dto, TRUE, &ev, &st))
        g_error("round %u: no %s within 15 s of polling, after an RDMA Read of %u bytes posted behind "
                "a Send (%s): the Read was never let go once the Send was answered", r,
                k == 0 ? "Send completion" : "RDMA Read completion", (unsigned) PIECE, itx_status_name(st));
      g_assert_cmpstr(itx_event_name(ev.event_number), ==,
                      itx_event_name(k == 0 ? IT_DTO_SEND_CMPL_EVENT : IT_DTO_RDMA_READ_CMPL_EVENT));
      g_assert_cmpuint(ev.dto_cmpl.cookie, ==, (k == 0 ? 1000u : 2000u) + r);
      g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_SUCCESS));
    }
    /* The child's region holds what lb holds (xlong_open). */
    g_assert_cmpmem(x.back.data + off, PIECE, x.lb.data + off, PIECE);
  }
  xlong_close(&x);
}

/* Long RDMA Reads, each posted between two Sends, all at once: the Reads
 * go to the child while the Sends ahead of them are unanswered (long
 * enough to be where the target's provider answers every Read itself), and
 * the Sends behind them may be
 * answered while their bytes land.  Against an "mtarget" child (commands
 * between rounds). */
static void
test_reads_between_sends(void)
{
  g_test_summary("xproc: 4 rounds of four 8 MiB RDMA Reads from the child's region, each posted behind "
                 "a 1 MiB Send to it, the eight posted at once: the completions come in posting "
                 "order, each successful, every Read with the child's bytes (a Read Response may "
                 "still be landing while the child acknowledged the Send behind it)");
  enum { ROUNDS = 4, READS = 4, SEND_LEN = 1 << 20 };
  xlong_t x;
  xlong_open(&x, "mtarget");
  size_t piece = x.len / READS;
  it_lmr_triplet_t head = conf_seg(&x.lb, 0, SEND_LEN);
  for (unsigned r = 0; r < ROUNDS; r++) {
    memset(x.back.data, 0, x.len);
    for (unsigned k = 0; k < READS; k++) {
      conf_say(x.c.to, "recv %u\n", (unsigned) SEND_LEN);
      g_autofree char *posted = conf_hear(x.c.from, LINE_TIMEOUT_MS);
      g_assert_cmpstr(posted, ==, "posted");
    }
    for (unsigned k = 0; k < READS; k++) {
      it_lmr_triplet_t t = conf_seg(&x.back, k * piece, piece);
      conf_ok(it_post_send(x.s.ep, &head, 1, 1000 + k, IT_COMPLETION_FLAG));
      conf_ok(it_post_rdma_read(x.s.ep, &t, 1, 2000 + k, IT_COMPLETION_FLAG, x.ra + k * piece, x.ctx));
    }
    /* In posting order: Send, Read, Send, Read... */
    for (unsigned k = 0; k < 2 * READS; k++) {
      gboolean read = k % 2 == 1;
      it_event_t ev;
      it_status_t st;
      if (!xproc_next_event(x.s.dto, FALSE, &ev, &st))
        g_error("round %u: completion %u of %u (%s %u) did not come (%s)", r, k + 1, 2 * READS,
                read ? "the RDMA Read" : "the Send", k / 2, itx_status_name(st));
      if (ev.event_number != (read ? IT_DTO_RDMA_READ_CMPL_EVENT : IT_DTO_SEND_CMPL_EVENT) ||
          ev.dto_cmpl.cookie != (read ? 2000u : 1000u) + k / 2)
        g_error("round %u: completion %u of %u is %s with cookie %" G_GUINT64_FORMAT ", expected %s "
                "with cookie %u: completions out of posting order", r, k + 1, 2 * READS,
                itx_event_name(ev.event_number), (guint64) ev.dto_cmpl.cookie,
                itx_event_name(read ? IT_DTO_RDMA_READ_CMPL_EVENT : IT_DTO_SEND_CMPL_EVENT),
                (read ? 2000u : 1000u) + k / 2);
      g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_SUCCESS));
      if (read)
        g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, piece);
    }
    /* The child's region holds what lb holds (xlong_open). */
    conf_buf_check(&x.back, 0, x.len, XLONG_SEED);
  }
  xlong_close(&x);
}

/* ---- tests ---- */

/* Spawn a @role child and play the parent's @half (with @arg) against it.
 * The child moves data the way the row's settings choose (the conformance
 * matrix runs this area once per transfer path of a provider). */
static void
with_child(const char *role, void (*half)(child_t *, gboolean), gboolean arg)
{
  child_t c = xproc_spawn(role);
  half(&c, arg);
  unlink(c.err);
}

static void
test_send_recv(void)
{
  g_test_summary("xproc: a child process listens; the parent connects with private data both "
                 "ways, sends 1 KiB and 1 MiB, the child verifies and echoes them; DISCONNECT "
                 "on both sides");
  with_child("echo", send_recv_with, FALSE);
}

static void
test_send_local_protection(void)
{
  g_test_summary("xproc: after 1 KiB and 1 MiB sent and echoed, a send from the LMR the echoes "
                 "landed in whose segment ends 8 bytes past it completes "
                 "IT_DTO_ERR_LOCAL_PROTECTION and both "
                 "sides see CONN_BROKEN (what the provider kept of the earlier checks does not "
                 "stand for it)");
  g_setenv("CONF_XPROC_ECHO_END", "broken", TRUE);
  child_t c = xproc_spawn("echo");
  g_unsetenv("CONF_XPROC_ECHO_END");
  send_recv_with(&c, TRUE);
  unlink(c.err);
}

/* @data: a beside_t. */
static void
test_post_beside_transfer(gconstpointer data)
{
  beside_t mode = (beside_t) GPOINTER_TO_INT(data);
  if (mode == BESIDE_SHARED)
    g_test_summary("xproc: as post-beside-transfer, with the child's region in a sealable memfd "
                   "(MAP_SHARED), which a provider may map here and read with memcpy: the post returns before "
                   "the 32 MiB Read has landed whole, the Read completes first, with every byte");
  else if (mode == BESIDE_RECEIVE)
    g_test_summary("xproc: as post-beside-shared-memory, with the 32 MiB coming as a Send from the child's "
                   "region into a receive (a provider may pull it with a thread that drains the "
                   "connection's queue): an RDMA Write posted while it lands returns before it "
                   "landed whole; the receive completes with every byte");
  else if (mode == BESIDE_RECEIVE_POLLED)
    g_test_summary("xproc: as post-beside-receive, with a second thread of this process polling the DTO "
                   "EVD (it_evd_dequeue) while the 32 MiB Send lands (the poll may be where the payload "
                   "is pulled): an RDMA Write posted meanwhile returns before the "
                   "Send landed whole; the poller takes the receive's completion, with every byte, and "
                   "the Write's");
  else if (mode == BESIDE_BEHIND_SEND)
    g_test_summary("xproc: as post-beside-shared-memory, with the 32 MiB Read posted behind a 64-byte Send "
                   "(the child has a receive for it), so that it starts when the provider learns the Send "
                   "arrived (perhaps in a thread that drains the connection's queue): the Write's post returns "
                   "before the Read has landed whole; the Send, the Read, the Write complete in that order");
  else
    g_test_summary("xproc: while one thread's 32 MiB RDMA Read from the child's region (private memory) "
                   "is landing, another posts a 64-byte RDMA Write on the same endpoint: the post returns "
                   "before the Read has landed whole, the Read completes before the Write, and every "
                   "byte of it is in place");
  post_beside_transfer_with(mode);
}

typedef struct {
  pid_t pid;
  gulong delay_us;
} killer_t;

static gpointer
kill_after(gpointer data)
{
  killer_t *k = data;
  g_usleep(k->delay_us);
  conf_child_kill(k->pid, SIGKILL);
  return NULL;
}

/* A Read from a process that is killed meanwhile, and not completed with
 * every byte, ended because its peer went away: flushed, or, the one in
 * flight, IT_DTO_ERR_REMOTE_ACCESS when the peer's region went before its
 * connection (a kernel tears a dead process's objects down in an order of
 * its own, and a device answers a Read of a region no longer there with a
 * remote access error, as it would for a live peer that freed it). */
static void
assert_killed_read_end(it_dto_status_t st)
{
  if (st != IT_DTO_ERR_FLUSHED && st != IT_DTO_ERR_REMOTE_ACCESS)
    g_test_message("a Read ended by its peer's death completed %s: expected IT_DTO_ERR_FLUSHED, "
                   "or IT_DTO_ERR_REMOTE_ACCESS if the peer's region went first",
                   itx_dto_status_name(st));
  g_assert_true(st == IT_DTO_ERR_FLUSHED || st == IT_DTO_ERR_REMOTE_ACCESS);
}

static void
test_peer_killed_mid_transfer(void)
{
  g_test_summary("xproc: 32 MiB RDMA Reads from the child's shared-memory region, one after the "
                 "other, while the child is killed: each Read completes exactly once, in order, "
                 "successfully with every byte or ended by the death (flushed, or REMOTE_ACCESS "
                 "when the child's region went before its connection), the connection "
                 "ends BROKEN (or, over TCP, DISCONNECT), and the parent goes on unharmed (a provider "
                 "that maps the child's region keeps it mapped while a copy runs)");
  xlong_t x;
  xlong_open(&x, "mtarget");
  it_lmr_triplet_t sink = conf_seg(&x.back, 0, x.len);

  killer_t k = { .pid = x.c.pid, .delay_us = 30000 };
  GThread *t = g_thread_new("killer", kill_after, &k);
  unsigned n = 0, ok = 0;
  gboolean ended = FALSE;
  /* The copies x.back to x.back (the bytes are checked once at the end: every
   * Read brings the same ones), so that the death comes during one. */
  memset(x.back.data, 0, x.len);
  while (!ended && n < 100000) {
    conf_ok(it_post_rdma_read(x.s.ep, &sink, 1, 1000 + n, IT_COMPLETION_FLAG, x.ra, x.ctx));
    it_event_t ev;
    size_t more;
    conf_ok(conf_evd_wait(x.s.dto, CONF_TIMEOUT_US, &ev, &more));
    g_assert_cmpstr(itx_event_name(ev.event_number), ==, itx_event_name(IT_DTO_RDMA_READ_CMPL_EVENT));
    g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 1000 + n);
    n++;
    if (ev.dto_cmpl.dto_status == IT_DTO_SUCCESS) {
      ok++;
    } else {
      assert_killed_read_end(ev.dto_cmpl.dto_status);
      ended = TRUE;
    }
  }
  g_thread_join(t);
  g_assert_true(ended);
  g_test_message("%u Reads completed with every byte before the child's death ended the connection", ok);
  if (ok > 0)
    conf_buf_check(&x.back, 0, x.len, XLONG_SEED);  /* a flushed Read brings the same bytes, if any */
  xlong_killed_close(&x);
}

/* Wait (busy, as an application polling for it would) until the byte at
 * @i of @b is the pattern's; FALSE after CONF_TIMEOUT_US. */
static gboolean
await_landing(const conf_buf_t *b, size_t i)
{
  cert_limit_t w;
  cert_limit_beginf(&w, CONF_TIMEOUT_US, "byte %zu of a transfer to land", i);
  gboolean landed = TRUE;
  while (landed && conf_landing_peek(&b->data[i]) != xlong_byte(i))
    landed = !cert_limit_over(&w);
  cert_limit_end(&w);
  return landed;
}

/* The next completion is the RDMA Read @cookie, successful with every
 * byte in @sink or flushed (@killed: or ended by the peer's death, as
 * assert_killed_read_end allows); its status. */
static it_dto_status_t
read_done(conf_side_t *s, it_dto_cookie_t cookie, const conf_buf_t *sink, gboolean killed)
{
  it_event_t ev;
  size_t more;
  conf_ok(conf_evd_wait(s->dto, CONF_TIMEOUT_US, &ev, &more));
  g_assert_cmpstr(itx_event_name(ev.event_number), ==, itx_event_name(IT_DTO_RDMA_READ_CMPL_EVENT));
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, cookie);
  if (ev.dto_cmpl.dto_status == IT_DTO_SUCCESS)
    conf_buf_check(sink, 0, sink->len, XLONG_SEED);
  else if (killed)
    assert_killed_read_end(ev.dto_cmpl.dto_status);
  else
    g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_ERR_FLUSHED));
  return ev.dto_cmpl.dto_status;
}

static void
test_peer_killed_mid_queued_transfer(void)
{
  g_test_summary("xproc: a 32 MiB RDMA Read from the child's shared-memory region posted by one thread, "
                 "a second one posted on the same endpoint while the first is landing, the child killed "
                 "while the second is landing: the first completes successfully with every byte, the "
                 "second exactly once (successfully with every byte, flushed, or REMOTE_ACCESS when the "
                 "child's region went before its connection), nothing else completes, "
                 "and the connection ends BROKEN (or, over TCP, DISCONNECT)");
  xlong_t x;
  xlong_open(&x, "mtarget");
  conf_buf_t back2;
  conf_buf_new(&x.s, &back2, x.len, conf_sink_privs(&x.s), IT_ADDR_MODE_ABSOLUTE);

  /* Where a post copies the bytes itself, the second post finds the first
   * one's copy running and queues behind it, and the death comes while
   * that second copy runs. */
  size_t part = xlong_probe(x.len / 4, 1);
  memset(x.back.data, 0, x.len);
  memset(back2.data, 0, x.len);
  conf_rdma_post_t first = { .ep = x.s.ep, .local = conf_seg(&x.back, 0, x.len), .remote = x.ra, .ctx = x.ctx,
                             .cookie = 51, .read = TRUE };
  GThread *t = g_thread_new("long-read", conf_rdma_post_run, &first);
  g_assert_true(await_landing(&x.back, part));
  it_lmr_triplet_t sink2 = conf_seg(&back2, 0, x.len);
  conf_ok(it_post_rdma_read(x.s.ep, &sink2, 1, 52, IT_COMPLETION_FLAG, x.ra, x.ctx));
  gboolean second_landing = await_landing(&back2, part);
  conf_child_kill(x.c.pid, SIGKILL);
  g_thread_join(t);

  /* The second Read was landing: the first had landed whole (RC order). */
  it_dto_status_t st1 = read_done(&x.s, 51, &x.back, TRUE);
  if (second_landing)
    g_assert_cmpstr(itx_dto_status_name(st1), ==, itx_dto_status_name(IT_DTO_SUCCESS));
  it_dto_status_t st2 = read_done(&x.s, 52, &back2, TRUE);
  g_test_message("the second Read was %s landing when the child was killed; the Reads completed %s, %s",
                 second_landing ? "seen" : "not seen", itx_dto_status_name(st1), itx_dto_status_name(st2));
  xlong_killed_close(&x);
  conf_buf_check_guards(&back2);
  conf_buf_free(&back2);
}

typedef struct {
  const conf_buf_t *watch;  /* kill when the byte at @at of this buffer has landed */
  size_t at;
  pid_t pid;
  gboolean landing;         /* out: it had */
} landing_killer_t;

static gpointer
kill_when_landing(gpointer data)
{
  landing_killer_t *k = data;
  k->landing = await_landing(k->watch, k->at);
  conf_child_kill(k->pid, SIGKILL);
  return NULL;
}

static void
test_peer_killed_mid_receive(void)
{
  g_test_summary("xproc: the child sends its 32 MiB region into a receive posted here (on InfiniBand after "
                 "the Send arrived, which waits for it) and is killed while the bytes land: the receive "
                 "completes exactly once, successfully with every byte or flushed, nothing else completes, "
                 "and the connection ends BROKEN (or DISCONNECT)");
  xlong_t x;
  xlong_open(&x, "mtarget");
  it_lmr_triplet_t into = conf_seg(&x.back, 0, x.len);
  memset(x.back.data, 0, x.len);

  /* With the receive posted after the Send arrived, a provider that
   * pulls the bytes from the child does so in the post, while its thread
   * learns of the death. */
  gboolean waits = conf_transport(&x.s) == IT_IB_TRANSPORT;
  if (!waits)
    conf_ok(it_post_recv(x.s.ep, &into, 1, 44, IT_COMPLETION_FLAG));
  landing_killer_t k = { .watch = &x.back, .at = xlong_probe(x.len / 4, 1), .pid = x.c.pid };
  GThread *t = g_thread_new("killer", kill_when_landing, &k);
  conf_say(x.c.to, "send\n");
  if (waits) {
    g_usleep(50000);
    conf_ok(it_post_recv(x.s.ep, &into, 1, 44, IT_COMPLETION_FLAG));
  }
  g_thread_join(t);
  it_event_t ev;
  size_t more;
  conf_ok(conf_evd_wait(x.s.dto, CONF_TIMEOUT_US, &ev, &more));
  g_assert_cmpstr(itx_event_name(ev.event_number), ==, itx_event_name(IT_DTO_RC_RECV_CMPL_EVENT));
  g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 44);
  if (ev.dto_cmpl.dto_status == IT_DTO_SUCCESS) {
    g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, x.len);
    conf_buf_check(&x.back, 0, x.len, XLONG_SEED);
  } else {
    g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_ERR_FLUSHED));
  }
  g_test_message("the Send was %s landing when the child was killed; the receive completed %s",
                 k.landing ? "seen" : "not seen", itx_dto_status_name(ev.dto_cmpl.dto_status));
  xlong_killed_close(&x);
}

static void
test_disconnect_mid_read_behind_send(void)
{
  g_test_summary("xproc: a 64-byte Send, a 32 MiB RDMA Read behind it from the child's shared-memory "
                 "region, and it_ep_disconnect called while the Read is landing: the Send completes "
                 "successfully, the Read exactly once (successfully with every byte, or flushed), nothing "
                 "else completes, and both sides get DISCONNECT");
  xlong_t x;
  xlong_open(&x, "mtarget");
  it_lmr_triplet_t head = conf_seg(&x.lb, 0, 64), sink = conf_seg(&x.back, 0, x.len);
  conf_say(x.c.to, "recv\n");
  g_autofree char *posted = conf_hear(x.c.from, LINE_TIMEOUT_MS);
  g_assert_cmpstr(posted, ==, "posted");

  memset(x.back.data, 0, x.len);
  conf_ok(it_post_send(x.s.ep, &head, 1, 43, IT_COMPLETION_FLAG));
  conf_ok(it_post_rdma_read(x.s.ep, &sink, 1, 41, IT_COMPLETION_FLAG, x.ra, x.ctx));
  gboolean landing = await_landing(&x.back, xlong_probe(x.len / 4, 1));
  conf_ok(it_ep_disconnect(x.s.ep, NULL, 0));
  conf_dto(x.s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 43);
  it_dto_status_t st = read_done(&x.s, 41, &x.back, FALSE);
  g_test_message("the Read was %s landing when the disconnect was called; it completed %s",
                 landing ? "seen" : "not seen", itx_dto_status_name(st));
  conf_wait(x.s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_assert_empty(x.s.dto);
  conf_buf_check_guards(&x.back);
  /* The child was told nothing: its command loop ends at the disconnect. */
  conf_say(x.c.to, "end\n");
  close_target(&x.c, &x.s, &x.lb, &x.back, FALSE);
  unlink(x.c.err);
}

static void
test_rdma_write_read(void)
{
  g_test_summary("xproc: RDMA Write into the child's region and RDMA Read back while the "
                 "child's application thread is blocked in read()");
  with_child("target", rdma_with, FALSE);
}

/* Connect to an "atomic" child with atomics_enable; its word's address and
 * context. */
static void
open_atomic(child_t *c, conf_side_t *s, const it_ep_attributes_t *attr, guint64 *addr, guint64 *ctx)
{
  uint16_t port = xproc_hear_port(c);
  unsigned len = 0;
  conf_side_open(s, attr);
  xproc_connect(s, port);
  g_autofree char *l = conf_hear(c->from, LINE_TIMEOUT_MS);
  g_assert_nonnull(l);
  g_assert_cmpint(sscanf(l, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u", addr, ctx, &len), ==, 3);
  g_assert_cmpuint(len, ==, 8);
}

/* Tell the child the word's value, hear it agree, disconnect. */
static void
close_atomic(child_t *c, conf_side_t *s, guint64 word)
{
  conf_say(c->to, "check %" G_GUINT64_FORMAT "\n", word);
  g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
  conf_ok(it_ep_disconnect(s->ep, NULL, 0));
  conf_wait(s->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  xproc_reap_ok(c);
  g_assert_cmpstr(ok, ==, "ok");
  conf_side_close(s);
}

/* Where the interface has atomics: an "atomic" child connected (its word's
 * address and context) and a result buffer of @len bytes of 0xee; FALSE
 * (the test skipped) where it has none. */
static gboolean
start_atomic(child_t *c, conf_side_t *s, conf_buf_t *res, size_t len, guint64 *addr, guint64 *ctx)
{
  it_ep_attributes_t attr;
  if (!conf_require(conf_probe_atomics(&attr, NULL), "atomics"))
    return FALSE;
  *c = xproc_spawn("atomic");
  open_atomic(c, s, &attr, addr, ctx);
  conf_buf_new(s, res, len, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  memset(res->data, 0xee, len);
  return TRUE;
}

static void
test_atomics(void)
{
  g_test_summary("xproc: fetch-and-add and compare-and-swap (matching, then not) on an 8-byte word "
                 "of the child's, whose application thread is blocked in read(): the old values come "
                 "back, the word ends as the last swap left it, its neighbours untouched");
  child_t c;
  conf_side_t s;
  conf_buf_t res;
  guint64 addr, ctx, got[3];
  if (!start_atomic(&c, &s, &res, 24, &addr, &ctx))
    return;
  it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) addr);
  it_lmr_triplet_t r0 = conf_seg(&res, 0, 8), r1 = conf_seg(&res, 8, 8), r2 = conf_seg(&res, 16, 8);
  conf_ok(it_post_atomic(s.ep, IT_FETCH_AND_ADD, 5, 0, &r0, 1, IT_COMPLETION_FLAG, ra, ctx));
  conf_ok(it_post_atomic(s.ep, IT_COMPARE_AND_SWAP, 7, WORD0 + 5, &r1, 2, IT_COMPLETION_FLAG, ra, ctx));
  conf_ok(it_post_atomic(s.ep, IT_COMPARE_AND_SWAP, 9, 1, &r2, 3, IT_COMPLETION_FLAG, ra, ctx));
  conf_dto(s.dto, IT_DTO_FETCH_ADD_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_dto(s.dto, IT_DTO_CMP_SWAP_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_dto(s.dto, IT_DTO_CMP_SWAP_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  memcpy(got, res.data, 24);
  g_assert_cmpuint(got[0], ==, WORD0);      /* before the add */
  g_assert_cmpuint(got[1], ==, WORD0 + 5);  /* matched: swapped to 7 */
  g_assert_cmpuint(got[2], ==, 7);          /* did not match 1: stays 7 */
  conf_buf_check_guards(&res);
  conf_assert_empty(s.dto);
  conf_buf_free(&res);
  close_atomic(&c, &s, 7);
  unlink(c.err);
}

static void
test_atomic_misaligned(void)
{
  g_test_summary("xproc: fetch-and-add on a misaligned word (4 bytes into the child's region) "
                 "completes IT_DTO_ERR_REMOTE_RESPONDER (RFC 7306 8.2, as in one process), both "
                 "sides BROKEN; neither the child's memory nor the result buffer changes");
  child_t c;
  conf_side_t s;
  conf_buf_t res;
  guint64 addr, ctx;
  if (!start_atomic(&c, &s, &res, 8, &addr, &ctx))
    return;
  it_lmr_triplet_t r0 = conf_seg(&res, 0, 8);
  conf_ok(it_post_atomic(s.ep, IT_FETCH_AND_ADD, 5, 0, &r0, 1, IT_COMPLETION_FLAG,
                         it_make_rdma_addr_absolute((void *) (uintptr_t) (addr - 4)), ctx));
  conf_dto(s.dto, IT_DTO_FETCH_ADD_CMPL_EVENT, IT_DTO_ERR_REMOTE_RESPONDER, 1);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  for (int i = 0; i < 8; i++)
    g_assert_cmpuint(res.data[i], ==, 0xee);
  conf_buf_check_guards(&res);
  conf_say(c.to, "broken %" G_GUINT64_FORMAT "\n", (guint64) WORD0);
  g_autofree char *ok = conf_hear(c.from, LINE_TIMEOUT_MS);
  xproc_reap_ok(&c);
  g_assert_cmpstr(ok, ==, "ok");
  conf_buf_free(&res);
  conf_side_close(&s);
  unlink(c.err);
}

/* The provider's setting that offers RFC 7306 in a process is named by
 * CONF_XPROC_RFC7306_VAR (the conformance matrix sets it on the row that
 * turns the option on): the child runs with it 0. */
static void
test_atomics_not_negotiated(void)
{
  g_test_summary("xproc, iWARP: with the RFC 7306 option here (the provider's setting that "
                 "CONF_XPROC_RFC7306_VAR names, at 1) and not in the child, the connection does not "
                 "use it: it_post_atomic is refused with IT_ERR_OP_NOT_SUPPORTED, its detail quoting "
                 "the provider's advice (that setting at 1 at both ends), no completion comes and the "
                 "child's word keeps its value");
  it_ep_attributes_t attr;
  gboolean iw;
  gboolean at = conf_probe_atomics(&attr, &iw);
  const char *var = g_getenv("CONF_XPROC_RFC7306_VAR");
  const char *opt = var != NULL && *var != '\0' ? g_getenv(var) : NULL;
  if (!conf_require(at && iw && opt != NULL && strcmp(opt, "1") == 0,
                    "an iWARP device with RFC 7306 offered by the setting CONF_XPROC_RFC7306_VAR names"))
    return;
  g_autofree char *on = g_strdup_printf("%s=1", var);
  g_autofree char *kept = g_strdup(opt);
  g_setenv(var, "0", TRUE);
  child_t c = xproc_spawn("atomic");
  g_setenv(var, kept, TRUE);
  conf_side_t s;
  conf_buf_t res;
  guint64 addr, ctx;
  open_atomic(&c, &s, &attr, &addr, &ctx);
  conf_buf_new(&s, &res, 8, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t r = conf_seg(&res, 0, 8);
  g_assert_cmpint(it_post_atomic(s.ep, IT_FETCH_AND_ADD, 5, 0, &r, 1, IT_COMPLETION_FLAG,
                                 it_make_rdma_addr_absolute((void *) (uintptr_t) addr), ctx),
                  ==, IT_ERR_OP_NOT_SUPPORTED);
  g_assert_nonnull(strstr(itx_error_detail(), on));
  conf_assert_empty(s.dto);
  conf_buf_free(&res);
  close_atomic(&c, &s, WORD0);
  unlink(c.err);
}

/* The stream against a "stream" child. */
static void
stream_against_child(void)
{
  child_t c = xproc_spawn("stream");
  stream_with(&c);
  unlink(c.err);
}

static void
test_stream(void)
{
  g_test_summary("xproc: 2000 sends of 0 B to 256 KiB (every frame and page boundary) under "
                 "receive credits, each checked byte for byte and in order at the child");
  stream_against_child();
}

static void
test_stream_busy_poll(void)
{
  g_test_summary("xproc: the stream of 2000 sends with both sides polling their event queue "
                 "(it_evd_dequeue, never a wait), every fourth receive of the child and every "
                 "other credit receive of the parent two SGEs in swapped order, messages of 64 KiB "
                 "and more among the rest: a busy poll's drain takes part of the ring and hands "
                 "the rest over mid-stream; each message "
                 "checked byte for byte, in order, where its SGEs put it");
  g_setenv("CONF_XPROC_STREAM_POLL", "1", TRUE);
  stream_against_child();
  g_unsetenv("CONF_XPROC_STREAM_POLL");
}

/* wait-race: the receive completions of one burst, taken by whichever of
 * the parent's threads gets each first. */
typedef struct {
  GMutex lock;
  it_evd_handle_t dto;
  conf_buf_t *rb;
  unsigned round, got;
  gboolean seen[BURST_N];
  gboolean race;          /* a second thread dequeues beside the waiter */
  unsigned by_wait, by_dequeue;
} burst_t;

/* One receive completion of the burst: once, whole, of this round. */
static void
burst_take(burst_t *bu, const it_event_t *ev, gboolean waited)
{
  g_assert_cmpint(ev->event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
  g_assert_cmpint(ev->dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  g_assert_cmpuint(ev->dto_cmpl.transferred_length, ==, BURST_LEN);
  guint64 k = ev->dto_cmpl.cookie;
  g_assert_cmpuint(k, <, BURST_N);
  const unsigned char *m = bu->rb->data + (size_t) k * BURST_LEN;
  for (size_t j = 0; j < BURST_LEN; j++)
    if (m[j] != xproc_burst_byte(bu->round, (unsigned) k, j))
      g_error("wait-race: byte %zu of message %u of round %u differs", j, (unsigned) k, bu->round);
  g_mutex_lock(&bu->lock);
  if (bu->seen[k])
    g_error("wait-race: message %u of round %u completed twice", (unsigned) k, bu->round);
  bu->seen[k] = TRUE;
  bu->got++;
  if (waited)
    bu->by_wait++;
  else
    bu->by_dequeue++;
  g_mutex_unlock(&bu->lock);
}

static gboolean
burst_done(burst_t *bu)
{
  g_mutex_lock(&bu->lock);
  gboolean d = bu->got == BURST_N;
  g_mutex_unlock(&bu->lock);
  return d;
}

static gpointer
burst_dequeuer(gpointer data)
{
  burst_t *bu = data;
  cert_limit_t w;
  cert_limit_beginf(&w, 3 * CONF_TIMEOUT_US, "wait-race: round %u's %u messages", bu->round, BURST_N);
  while (!burst_done(bu)) {
    it_event_t ev;
    it_status_t st = it_evd_dequeue(bu->dto, &ev);
    if (st == IT_SUCCESS)
      burst_take(bu, &ev, FALSE);
    else if (st == IT_ERR_QUEUE_EMPTY)
      g_usleep(20);
    else
      g_error("wait-race: it_evd_dequeue: %s", itx_status_name(st));
    if (cert_limit_over(&w))
      g_error("wait-race: round %u: only %u of %u messages in 15 s", bu->round, bu->got, BURST_N);
  }
  cert_limit_end(&w);
  return NULL;
}

static void
wait_race_with(child_t *c)
{
  conf_side_t s;
  conf_buf_t rb;
  uint16_t port = xproc_hear_port(c);
  conf_side_open(&s, NULL);
  conf_buf_new(&s, &rb, (size_t) BURST_N * BURST_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  xproc_connect(&s, port);
  /* Rounds: without and with a racing dequeuer, messages back to back and
   * spaced (so that the waiter sleeps between them, on the provider's
   * descriptors where it offers them). */
  static const struct { gboolean race; unsigned gap_us; } rounds[] = {
    { FALSE, 0 }, { FALSE, 300 }, { TRUE, 0 }, { TRUE, 300 }, { FALSE, 2000 }, { TRUE, 2000 },
  };
  for (unsigned r = 0; r < G_N_ELEMENTS(rounds); r++) {
    burst_t bu = { .dto = s.dto, .rb = &rb, .round = r, .race = rounds[r].race };
    g_mutex_init(&bu.lock);
    memset(rb.data, 0, rb.len);
    for (unsigned k = 0; k < BURST_N; k++) {
      it_lmr_triplet_t t = conf_seg(&rb, (size_t) k * BURST_LEN, BURST_LEN);
      conf_ok(it_post_recv(s.ep, &t, 1, k, IT_COMPLETION_FLAG));
    }
    conf_say(c->to, "burst %u %u\n", r, rounds[r].gap_us);
    GThread *t = bu.race ? g_thread_new("wait-race-dequeue", burst_dequeuer, &bu) : NULL;
    /* The waiter: alone, each wait must end with a completion within 5 s
     * (one stranded would time out); raced, it gives up after 20 ms and
     * looks again, the other thread may have taken the rest. */
    while (!burst_done(&bu)) {
      it_event_t ev;
      size_t more;
      it_status_t st = conf_evd_wait(s.dto, bu.race ? 20000 : CONF_TIMEOUT_US, &ev, &more);
      if (st == IT_SUCCESS)
        burst_take(&bu, &ev, TRUE);
      else if (!(bu.race && st == IT_ERR_TIMEOUT_EXPIRED))
        g_error("wait-race: round %u: it_evd_wait after %u of %u messages: %s", r, bu.got, BURST_N,
                itx_status_name(st));
    }
    if (t != NULL)
      g_thread_join(t);
    g_test_message("round %u (%s, gaps up to %u us): %u taken by it_evd_wait, %u by it_evd_dequeue", r,
                   bu.race ? "raced" : "alone", rounds[r].gap_us, bu.by_wait, bu.by_dequeue);
    g_autofree char *sent = conf_hear(c->from, LINE_TIMEOUT_MS);
    g_autofree char *want = g_strdup_printf("sent %u", r);
    g_assert_cmpstr(sent, ==, want);
    it_event_t extra;
    g_assert_cmpint(it_evd_dequeue(s.dto, &extra), ==, IT_ERR_QUEUE_EMPTY);
    g_mutex_clear(&bu.lock);
  }
  conf_say(c->to, "quit\n");
  conf_ok(it_ep_disconnect(s.ep, NULL, 0));
  conf_buf_check_guards(&rb);
  conf_buf_free(&rb);
  conf_side_close(&s);
  xproc_reap_ok(c);
}

static void
test_wait_race(void)
{
  g_test_summary("xproc: bursts of 60 sends of 64 B from a child process, back to back and spaced, "
                 "taken by a thread in it_evd_wait alone (each wait bounded: none stranded) and "
                 "with a second thread dequeuing from the same EVD at the same time: every "
                 "message is taken exactly once, whole, and nothing is left over");
  child_t c = xproc_spawn("burst");
  wait_race_with(&c);
  unlink(c.err);
}

/* sleep-beside-acks: rounds of ACKS_B signaled Sends to the "acks" child,
 * each round's answer waited for in it_evd_wait on an EVD of receives of
 * its own, the Sends' completions going to another.  The child's
 * acknowledgements of the Sends wake a sleeper that finds nothing for its
 * EVD and sleeps again: a sleep must never begin where the answer that
 * follows cannot wake it. */
static void
acks_with(child_t *c)
{
  conf_side_t s;
  conf_buf_t sb, ab;
  it_evd_handle_t rq;
  uint16_t port = xproc_hear_port(c);
  conf_side_open(&s, NULL);
  conf_ok(it_ep_free(s.ep));
  conf_ok(it_evd_create(s.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE, &rq, NULL));
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  conf_ok(it_ep_rc_create(s.pz, s.dto, rq, s.cm, IT_EP_NO_FLAG, &attr, &s.ep));
  conf_buf_new(&s, &sb, (size_t) ACKS_B * ACKS_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &ab, 8, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t at = conf_seg(&ab, 0, 8);
  conf_ok(it_post_recv(s.ep, &at, 1, 0, IT_COMPLETION_FLAG));
  xproc_connect(&s, port);
  g_autofree char *ready = conf_hear(c->from, LINE_TIMEOUT_MS);
  g_assert_cmpstr(ready, ==, "ready");
  /* The window this looks for is a few instructions wide: many rounds,
   * where a round costs microseconds (ITAPI_ACKS_ROUNDS, default 10000;
   * the lab's emulated CPU, where one may cost a millisecond, runs 1000). */
  unsigned rounds = (unsigned) MAX(MIN(conf_env_count("ITAPI_ACKS_ROUNDS", 10000), 1000000), 1);
  conf_say(c->to, "rounds %u\n", rounds);
  for (unsigned r = 0; r < rounds; r++) {
    for (unsigned k = 0; k < ACKS_B; k++)
      xproc_burst_send(s.ep, &sb, r, k, ACKS_LEN);
    it_event_t ev;
    it_status_t st = conf_evd_wait(rq, CONF_TIMEOUT_US, &ev, NULL);
    if (st != IT_SUCCESS)
      g_error("sleep-beside-acks: round %u of %u: no answer within 5 s: %s (the child's account is in "
              "%s)", r, rounds, itx_status_name(st), c->err);
    g_assert_cmpint(ev.event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
    if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
      g_error("sleep-beside-acks: round %u of %u: the answer's receive completed %s (the child's "
              "account is in %s)", r, rounds, itx_dto_status_name(ev.dto_cmpl.dto_status), c->err);
    g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, 8);
    guint64 v;
    memcpy(&v, ab.data, 8);
    g_assert_cmpuint(v, ==, r);
    conf_ok(it_post_recv(s.ep, &at, 1, r + 1, IT_COMPLETION_FLAG));
    /* The round's Sends all completed: the child took every message. */
    for (unsigned k = 0; k < ACKS_B; k++)
      conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, k);
  }
  it_event_t extra;
  g_assert_cmpint(it_evd_dequeue(rq, &extra), ==, IT_ERR_QUEUE_EMPTY);
  g_assert_cmpint(it_evd_dequeue(s.dto, &extra), ==, IT_ERR_QUEUE_EMPTY);
  conf_ok(it_ep_disconnect(s.ep, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_buf_check_guards(&sb);
  conf_buf_check_guards(&ab);
  conf_buf_free(&sb);
  conf_buf_free(&ab);
  conf_side_close(&s);
  xproc_reap_ok(c);
}

static void
test_sleep_beside_acks(void)
{
  g_test_summary("xproc: 10000 rounds (ITAPI_ACKS_ROUNDS) of 8 Sends of 64 B to a child, each round's 8-byte answer "
                 "waited for in it_evd_wait on an EVD of receives alone, while the child's "
                 "acknowledgements of the Sends (completions of another EVD) wake the sleeper: "
                 "every answer wakes it within 5 s, every byte and completion checked");
  child_t c = xproc_spawn("acks");
  acks_with(&c);
  unlink(c.err);
}

/* threads-beside: one thread's connection to an "mtarget" (or "target")
 * child. */
typedef struct {
  child_t c;
  unsigned index;
  unsigned writes, reads;
} threads_beside_t;

#define BESIDE_OPS 20000
#define BESIDE_SLOT 64

static unsigned char
beside_byte(unsigned t, unsigned i, size_t j)
{
  return (unsigned char) (t * 101 + i * 7 + j * 3 + 1);
}

/* BESIDE_OPS RDMA Writes of BESIDE_SLOT bytes into the child's region,
 * slot by slot, each completion awaited, and an RDMA Read of the
 * slot just written every 16th, its bytes checked; then the whole region
 * read back: every slot holds its last Write. */
static gpointer
beside_thread(gpointer data)
{
  threads_beside_t *b = data;
  conf_side_t s;
  conf_buf_t lb, back;
  guint64 addr, ctx;
  unsigned len;
  open_target(&b->c, &s, &lb, &back, &addr, &ctx, &len);
  unsigned slots = MIN(len / BESIDE_SLOT, 64u);
  for (unsigned i = 0; i < BESIDE_OPS; i++) {
    unsigned k = i % slots;
    unsigned char *m = lb.data + (size_t) k * BESIDE_SLOT;
    for (size_t j = 0; j < BESIDE_SLOT; j++)
      m[j] = beside_byte(b->index, i, j);
    it_lmr_triplet_t g = conf_seg(&lb, (size_t) k * BESIDE_SLOT, BESIDE_SLOT);
    it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) (addr + (guint64) k * BESIDE_SLOT));
    conf_ok(it_post_rdma_write(s.ep, &g, 1, i, IT_COMPLETION_FLAG, ra, ctx));
    conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, i);
    b->writes++;
    if (i % 16 == 15) {
      it_lmr_triplet_t r = conf_seg(&back, 0, BESIDE_SLOT);
      conf_ok(it_post_rdma_read(s.ep, &r, 1, i, IT_COMPLETION_FLAG, ra, ctx));
      conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, i);
      if (memcmp(back.data, m, BESIDE_SLOT) != 0)
        g_error("threads-beside: thread %u read back slot %u after write %u: other bytes", b->index, k, i);
      b->reads++;
    }
  }
  it_lmr_triplet_t r = conf_seg(&back, 0, (size_t) slots * BESIDE_SLOT);
  conf_ok(it_post_rdma_read(s.ep, &r, 1, BESIDE_OPS, IT_COMPLETION_FLAG,
                            it_make_rdma_addr_absolute((void *) (uintptr_t) addr), ctx));
  conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, BESIDE_OPS);
  for (unsigned k = 0; k < slots; k++) {
    unsigned last = k + slots * ((BESIDE_OPS - 1 - k) / slots);
    for (size_t j = 0; j < BESIDE_SLOT; j++)
      if (back.data[(size_t) k * BESIDE_SLOT + j] != beside_byte(b->index, last, j))
        g_error("threads-beside: thread %u: byte %zu of slot %u is not write %u's", b->index, j, k, last);
  }
  conf_buf_check_guards(&lb);
  conf_buf_check_guards(&back);
  conf_say(b->c.to, "end\n");
  close_target(&b->c, &s, &lb, &back, TRUE);
  return NULL;
}

/* @role: "mtarget" (the child's region in shared memory) or "target" (in
 * its private memory, which a provider reaches without mapping it). */
static void
test_threads_beside(gconstpointer role)
{
  if (strcmp(role, "mtarget") == 0)
    g_test_summary("xproc: two threads of this process, each connected to a child process of its "
                   "own whose region is in shared memory, post 20000 RDMA Writes of 64 B each, one "
                   "after the other, and an RDMA Read of every 16th slot, side by side: every "
                   "completion comes once, every Read returns the bytes just written, and the "
                   "regions end with each slot's last Write (threads that drive connections of "
                   "their own share no state a race could tear)");
  else
    g_test_summary("xproc: threads-beside with each child's region in its private memory (under "
                   "a provider that copies between processes, every Write and Read is a system "
                   "call): every completion comes once, every Read returns the bytes just written, "
                   "and the regions end with each slot's last Write");
  threads_beside_t b[2];
  for (unsigned t = 0; t < 2; t++) {
    b[t] = (threads_beside_t) { .index = t };
    b[t].c = xproc_spawn(role);
  }
  GThread *th[2];
  for (unsigned t = 0; t < 2; t++)
    th[t] = g_thread_new("threads-beside", beside_thread, &b[t]);
  for (unsigned t = 0; t < 2; t++) {
    g_thread_join(th[t]);
    g_assert_cmpuint(b[t].writes, ==, BESIDE_OPS);
    g_assert_cmpuint(b[t].reads, ==, BESIDE_OPS / 16);
    unlink(b[t].c.err);
  }
}

/* Does this process map a memfd named @name? */
static gboolean
maps_memfd(const char *name)
{
  g_autofree char *maps = NULL;
  g_autofree char *needle = g_strdup_printf("/memfd:%s", name);
  g_assert_true(g_file_get_contents("/proc/self/maps", &maps, NULL, NULL));
  return strstr(maps, needle) != NULL;
}

/* The mappings of this process whose line names @needle. */
static guint
maps_count(const char *needle)
{
  g_autofree char *maps = NULL;
  g_assert_true(g_file_get_contents("/proc/self/maps", &maps, NULL, NULL));
  guint n = 0;
  for (const char *p = strstr(maps, needle); p != NULL; p = strstr(p + 1, needle))
    n++;
  return n;
}

typedef enum { MAPPED_OVERRUN, MAPPED_FREED, MAPPED_STRADDLE } mapped_end_t;

/* Rounds of RDMA Write then Read against the child's memfd region, each
 * checked on both sides, then a write that must be refused: @end says
 * which (an overrun longer than the region, a write in bounds after the
 * child freed the region, or 32 bytes of which the last 16 lie past the
 * region's end). */
static void
rdma_mapped_run(child_t *c, mapped_end_t end)
{
  conf_side_t s;
  conf_buf_t lb, back;
  guint64 addr, ctx;
  unsigned len;
  open_target(c, &s, &lb, &back, &addr, &ctx, &len);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) addr);
  it_lmr_triplet_t g = conf_seg(&lb, 0, len), r = conf_seg(&back, 0, len);
  unsigned seed = 0;
  for (int round = 0; round < 4; round++) {
    /* Many writes: the first ones may go another way while the
     * provider sets up a faster one; every one must land. */
    for (int i = 0; i < 50; i++) {
      seed = (unsigned) (round * 100 + i + 1);
      conf_buf_fill(&lb, seed);
      conf_ok(it_post_rdma_write(s.ep, &g, 1, 40, IT_COMPLETION_FLAG, ra, ctx));
      conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 40);
      memset(back.data, 0, len);
      conf_ok(it_post_rdma_read(s.ep, &r, 1, 41, IT_COMPLETION_FLAG, ra, ctx));
      conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 41);
      conf_buf_check(&back, 0, len, seed);
    }
    conf_say(c->to, "check %u\n", seed);
    g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
    g_assert_cmpstr(ok, ==, "ok");
  }
  conf_buf_check_guards(&back);
  /* A provider that maps such a region here and moves the bytes with
   * memcpy has mapped it by now, or after a few more of the same writes
   * (await_mapping: the mapping may come after 200 round trips). */
  await_mapping(&s, &g, ra, ctx);
  if (end == MAPPED_FREED) {
    /* The same write as every round's, after the region's LMR is freed:
     * whatever the provider kept from the earlier checks (a mapping, the
     * last region reached), the key is dead and nothing of
     * the new pattern may land (the child checks the old one). */
    conf_say(c->to, "free\n");
    g_autofree char *fr = conf_hear(c->from, LINE_TIMEOUT_MS);
    g_assert_cmpstr(fr, ==, "freed");
    conf_buf_fill(&lb, seed + 1);
    conf_ok(it_post_rdma_write(s.ep, &g, 1, 42, IT_COMPLETION_FLAG, ra, ctx));
  } else if (end == MAPPED_STRADDLE) {
    /* Shorter than the region, so only where it ends gives it away. */
    it_lmr_triplet_t tail = conf_seg(&lb, 0, 32);
    it_rdma_addr_t at = it_make_rdma_addr_absolute((void *) (uintptr_t) (addr + len - 16));
    conf_ok(it_post_rdma_write(s.ep, &tail, 1, 42, IT_COMPLETION_FLAG, at, ctx));
  } else {
    /* Bounds are still checked: 16 bytes past the end, refused. */
    it_lmr_triplet_t over = conf_seg(&lb, 0, len + 16);
    conf_ok(it_post_rdma_write(s.ep, &over, 1, 42, IT_COMPLETION_FLAG, ra, ctx));
  }
  conf_write_refused(&s, 42);
  conf_say(c->to, "guards\n");
  g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
  xproc_reap_ok(c);
  g_assert_cmpstr(ok, ==, "ok");
  conf_buf_free(&lb);
  conf_buf_free(&back);
  conf_side_close(&s);
}

static void
rdma_mapped_with(child_t *c, gboolean freed)
{
  rdma_mapped_run(c, freed ? MAPPED_FREED : MAPPED_OVERRUN);
}

static void
rdma_straddle_with(child_t *c, gboolean unused)
{
  (void) unused;
  rdma_mapped_run(c, MAPPED_STRADDLE);
}

static void
test_rdma_shared_memory(void)
{
  g_test_summary("xproc: the child's region lives in a sealable memfd (MAP_SHARED): 200 RDMA "
                 "Writes each read back and checked, the child checks too while blocked; an "
                 "overrun is still refused with REMOTE_ACCESS, guards intact");
  with_child("mtarget", rdma_mapped_with, FALSE);
}

static void
test_rdma_straddle(void)
{
  g_test_summary("xproc: 200 checked RDMA Writes and Reads to the child's shared-memory region, "
                 "then a 32-byte RDMA Write whose last 16 bytes lie past the region's end "
                 "completes REMOTE_ACCESS, the connection breaks and the child finds its last "
                 "pattern and guards intact");
  with_child("mtarget", rdma_straddle_with, FALSE);
}

static void
test_rdma_after_free(void)
{
  g_test_summary("xproc: 200 checked RDMA Writes and Reads to the child's shared-memory region, "
                 "then the child frees the region's LMR: the same write completes REMOTE_ACCESS, "
                 "the connection breaks and the child finds its last pattern intact (what a "
                 "provider keeps of an earlier check of that key must not outlive the region)");
  with_child("mtarget", rdma_mapped_with, TRUE);
}

static void
test_windows(void)
{
  g_test_summary("xproc: the child links a narrow RMR through its cross-process EP; the parent "
                 "RDMA-Writes and Reads through its context, then it_post_send_and_unlink "
                 "invalidates it (the child's receive names the RMR, it_rmr_query says unlinked); "
                 "a write through the dead context completes REMOTE_ACCESS, nothing lands");
  child_t c = xproc_spawn("window");
  uint16_t port = xproc_hear_port(&c);
  conf_side_t s;
  conf_buf_t lb, back;
  conf_side_open(&s, NULL);
  xproc_connect(&s, port);
  g_autofree char *l = conf_hear(c.from, LINE_TIMEOUT_MS);
  g_assert_nonnull(l);
  if (g_strcmp0(l, "skip") == 0) {
    conf_ok(it_ep_disconnect(s.ep, NULL, 0));
    conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
    xproc_reap_ok(&c);
    unlink(c.err);
    conf_side_close(&s);
    conf_require(FALSE, "narrow RMRs and send-and-unlink (rmr_types_supported, "
                 "post_send_unlink_remote_support)");
    return;
  }
  guint64 addr, ctx;
  g_assert_cmpint(sscanf(l, "win %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &addr, &ctx), ==, 2);
  it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) addr);
  conf_buf_new(&s, &lb, WIN_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &back, WIN_LEN, conf_sink_privs(&s), IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t g = conf_seg(&lb, 0, WIN_LEN), r = conf_seg(&back, 0, WIN_LEN);
  conf_buf_fill(&lb, 21);
  conf_ok(it_post_rdma_write(s.ep, &g, 1, 50, IT_COMPLETION_FLAG, ra, ctx));
  conf_dto(s.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 50);
  conf_ok(it_post_rdma_read(s.ep, &r, 1, 51, IT_COMPLETION_FLAG, ra, ctx));
  conf_dto(s.dto, IT_DTO_RDMA_READ_CMPL_EVENT, IT_DTO_SUCCESS, 51);
  conf_buf_check(&back, 0, WIN_LEN, 21);
  conf_buf_t msg;
  conf_buf_new(&s, &msg, 128, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&msg, 22);
  it_lmr_triplet_t m = conf_seg(&msg, 0, 128);
  conf_ok(it_post_send_and_unlink(s.ep, &m, 1, 52, IT_COMPLETION_FLAG, ctx));
  conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 52);
  g_autofree char *u = conf_hear(c.from, LINE_TIMEOUT_MS);
  g_assert_cmpstr(u, ==, "unlinked");
  conf_buf_fill(&lb, 23);
  conf_ok(it_post_rdma_write(s.ep, &g, 1, 53, IT_COMPLETION_FLAG, ra, ctx));
  conf_write_refused(&s, 53);
  g_autofree char *ok = conf_hear(c.from, LINE_TIMEOUT_MS);
  xproc_reap_ok(&c);
  g_assert_cmpstr(ok, ==, "ok");
  unlink(c.err);
  conf_buf_free(&lb);
  conf_buf_free(&back);
  conf_buf_free(&msg);
  conf_side_close(&s);
}

static void
test_read_to_rmr(void)
{
  g_test_summary("xproc: it_post_rdma_read_to_rmr from the child's region (its application thread "
                 "blocked in read()) into a window of ours: the bytes land in the window's range and "
                 "nowhere else; with IT_UNLINK_LOCAL_SINK (Read with Invalidate) the completion names "
                 "the RMR, it is unlinked and refused after");
  with_child("target", read_to_rmr_with, FALSE);
}

static void
test_read_to_rmr_rights(void)
{
  g_test_summary("xproc: a Read into a window without what a Read sink needs (iWARP: the window's "
                 "remote write; InfiniBand: its LMR's local write) completes "
                 "IT_DTO_ERR_LOCAL_PROTECTION, the connection breaks, nothing lands on either side");
  with_child("target", read_to_rmr_with, TRUE);
}

static void
test_ud(void)
{
  g_test_summary("xproc UD: the parent resolves the child's UD EP by UD service resolution "
                 "(private data both ways), sends it 8 datagrams (a first one with a wrong Q_Key, "
                 "dropped), the child checks each after its GRH and the sender's ud_ep_id, and "
                 "echoes 8 back to the address its receive completion named");
  child_t c = xproc_spawn("ud");
  g_autofree char *l = conf_hear(c.from, LINE_TIMEOUT_MS);
  g_assert_nonnull(l);
  if (g_strcmp0(l, "skip") == 0) {
    xproc_reap_ok(&c);
    unlink(c.err);
    conf_require(FALSE, "ud");
    return;
  }
  unsigned port = 0;
  g_assert_cmpint(sscanf(l, "port %u", &port), ==, 1);
  conf_side_t s;
  conf_buf_t rb, sb;
  it_ep_handle_t ep;
  it_remote_ep_info_t info;
  conf_side_open(&s, NULL);
  g_assert_true(xproc_ud_open(&s, UD_QKEY_PARENT, &ep, &info, &rb));
  conf_say(c.to, "from %" G_GUINT64_FORMAT "\n", (guint64) info.ud_ep_id);
  it_path_t path;
  conf_path(&s, &path);
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons((uint16_t) port);
  it_ud_svc_req_handle_t svc;
  conf_ok(it_ud_service_request_handle_create(&q, s.cm, &path, xproc_ud_req_pd, sizeof(xproc_ud_req_pd), &svc));
  conf_ok(it_ud_service_request(svc));
  it_event_t rep = conf_wait(s.cm, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
  g_assert_cmpint(rep.ud_svc_reply.status, ==, IT_UD_SVC_EP_INFO_VALID);
  g_assert_cmphex(rep.ud_svc_reply.ep_info.ud_ep_key, ==, UD_QKEY_CHILD);
  g_assert_cmpuint(rep.ud_svc_reply.ep_info.ud_ep_id, !=, info.ud_ep_id);  /* unique on the host */
  g_assert_true(rep.ud_svc_reply.private_data_present);
  g_assert_cmpmem(rep.ud_svc_reply.private_data, sizeof(xproc_ud_rep_pd), xproc_ud_rep_pd, sizeof(xproc_ud_rep_pd));
  it_addr_handle_t ah;
  conf_ok(it_address_handle_create(s.pz, &rep.ud_svc_reply.dst_path, 0, &ah));
  it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
  dst.addr.ud.addr = ah;
  dst.addr.ud.ep_info = rep.ud_svc_reply.ep_info;
  conf_buf_new(&s, &sb, (size_t) UD_N * UD_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  /* The wrong Q_Key first: the send completes, the child never sees it
   * (it takes exactly UD_N, each seed once). */
  it_dg_remote_ep_addr_t bad = dst;
  bad.addr.ud.ep_info.ud_ep_key = UD_QKEY_CHILD ^ 1;
  memset(sb.data, 0x5a, UD_LEN);
  it_lmr_triplet_t t = conf_seg(&sb, 0, UD_LEN);
  conf_ok(it_post_sendto(ep, &t, 1, 199, IT_COMPLETION_FLAG, &bad));
  conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 199);
  xproc_ud_send_all(&s, ep, &sb, &dst, 10);
  it_event_t last;
  xproc_ud_take(&s, ep, &rb, rep.ud_svc_reply.ep_info.ud_ep_id, 60, &last);
  g_autofree char *ok = conf_hear(c.from, LINE_TIMEOUT_MS);
  g_assert_cmpstr(ok, ==, "ok");
  conf_say(c.to, "bye\n");
  xproc_reap_ok(&c);
  unlink(c.err);
  conf_assert_empty(s.dto);
  conf_buf_check_guards(&rb);
  conf_ok(it_ud_service_request_handle_free(svc));
  conf_ok(it_ep_free(ep));
  conf_buf_free(&rb);
  conf_buf_free(&sb);
  conf_side_close(&s);
}

static void
test_peer_killed(void)
{
  g_test_summary("xproc: the child is killed while the parent's send waits for a receive: "
                 "CONN_BROKEN within seconds (over iWARP's TCP also DISCONNECT, the dead "
                 "process's kernel closing the stream), every posted WR flushed exactly once");
  conf_side_t s;
  conf_buf_t b;
  child_t c = xproc_spawn("sleeper");
  uint16_t port = xproc_hear_port(&c);
  conf_side_open(&s, NULL);
  conf_buf_new(&s, &b, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  xproc_connect(&s, port);
  g_autofree char *l = conf_hear(c.from, LINE_TIMEOUT_MS);
  g_assert_cmpstr(l, ==, "ready");
  it_lmr_triplet_t seg = conf_seg(&b, 0, 4096);
  for (int i = 0; i < 4; i++)
    conf_ok(it_post_recv(s.ep, &seg, 1, 100 + i, IT_COMPLETION_FLAG));
  /* On InfiniBand a send with no receive at the peer waits (RNR retry); on
   * iWARP it would end the connection at once, so only receives are
   * outstanding there. */
  int outstanding = 4;
  if (conf_transport(&s) == IT_IB_TRANSPORT) {
    conf_ok(it_post_send(s.ep, &seg, 1, 200, IT_COMPLETION_FLAG)); /* waits: no receive there */
    conf_ok(it_post_send(s.ep, &seg, 1, 201, 0));
    outstanding = 6;
  }
  g_usleep(50000);
  conf_child_kill(c.pid, SIGKILL);
  it_event_t cev;
  size_t cmore;
  conf_ok(conf_evd_wait(s.cm, CONF_TIMEOUT_US, &cev, &cmore));
  if (conf_transport(&s) == IT_IB_TRANSPORT) {
    if (cev.event_number != IT_CM_MSG_CONN_BROKEN_EVENT)
      g_error("expected IT_CM_MSG_CONN_BROKEN_EVENT, got %s", itx_event_name(cev.event_number));
  } else if (cev.event_number != IT_CM_MSG_CONN_BROKEN_EVENT &&
             cev.event_number != IT_CM_MSG_CONN_DISCONNECT_EVENT) {
    /* iWARP runs over TCP: the dead process's kernel closes the stream,
     * with a FIN that reads as an orderly close (DISCONNECT) or with a
     * reset (BROKEN). */
    g_error("expected IT_CM_MSG_CONN_BROKEN_EVENT or IT_CM_MSG_CONN_DISCONNECT_EVENT, got %s",
            itx_event_name(cev.event_number));
  }
  g_assert_true(cev.conn.ep == s.ep);
  gboolean seen[6] = { FALSE };
  for (int i = 0; i < outstanding; i++) {
    it_event_t ev;
    size_t more;
    conf_ok(conf_evd_wait(s.dto, CONF_TIMEOUT_US, &ev, &more));
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_ERR_FLUSHED);
    int k = ev.dto_cmpl.cookie >= 200 ? 4 + (int) (ev.dto_cmpl.cookie - 200)
                                      : (int) (ev.dto_cmpl.cookie - 100);
    g_assert_cmpint(k, >=, 0);
    g_assert_cmpint(k, <, 6);
    g_assert_false(seen[k]);
    seen[k] = TRUE;
  }
  conf_assert_empty(s.dto);
  xproc_reap(&c, 5000);
  unlink(c.err);
  conf_buf_free(&b);
  conf_side_close(&s);
}

static void
test_protection(void)
{
  g_test_summary("xproc: an RDMA Write past the end of the child's region completes "
                 "IT_DTO_ERR_REMOTE_ACCESS, both sides BROKEN, the child's guard bytes intact");
  with_child("target", rdma_with, TRUE);
}

static int
count_fds(void)
{
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  g_assert_nonnull(d);
  while (readdir(d) != NULL)
    n++;
  closedir(d);
  return n;
}

/* Segments in /dev/shm whose names hold "itapi", as this stack names the
 * shared memory it makes. */
static int
count_shm(void)
{
  int n = 0;
  DIR *d = opendir("/dev/shm");
  struct dirent *e;
  if (d == NULL)
    return 0;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, "itapi") != NULL)
      n++;
  closedir(d);
  return n;
}

static void
test_no_leak(void)
{
  g_test_summary("xproc: connections that closed leave no segment in /dev/shm and no fd open "
                 "(the provider's per-process region table and thread stay after first use)");
  child_t c = xproc_spawn("echo");
  send_recv_with(&c, FALSE);  /* first use: the provider's lasting objects exist now */
  unlink(c.err);
  g_usleep(100000);
  int fds = count_fds();
  for (int i = 0; i < 2; i++) {
    child_t e = xproc_spawn("echo");
    send_recv_with(&e, FALSE);
    unlink(e.err);
    child_t t = xproc_spawn("target");
    rdma_with(&t, i == 1);
    unlink(t.err);
  }
  g_usleep(100000);
  g_assert_cmpint(count_fds(), ==, fds);
  g_assert_cmpint(count_shm(), ==, 0);
}

typedef enum { XPZ_WRITE, XPZ_READ, XPZ_ATOMIC, XPZ_LOCAL } xpz_op_t;

/* One request of @op from @loc to offset @off of the region at @addr/@ctx. */
static void
xpz_post(conf_side_t *s, xpz_op_t op, conf_buf_t *loc, guint64 addr, size_t off, guint64 ctx,
         it_dto_cookie_t cookie)
{
  it_rdma_addr_t ra = it_make_rdma_addr_absolute((void *) (uintptr_t) (addr + off));
  it_lmr_triplet_t l = conf_seg(loc, 0, op == XPZ_ATOMIC ? 8 : 64);
  if (op == XPZ_READ)
    conf_ok(it_post_rdma_read(s->ep, &l, 1, cookie, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) ctx));
  else if (op == XPZ_ATOMIC)
    conf_ok(it_post_atomic(s->ep, IT_FETCH_AND_ADD, 1, 0, &l, cookie, IT_COMPLETION_FLAG, ra,
                           (it_rmr_context_t) ctx));
  else
    conf_ok(it_post_rdma_write(s->ep, &l, 1, cookie, IT_COMPLETION_FLAG, ra, (it_rmr_context_t) ctx));
}

/* Against a "pz" child: the request of @op to the region of the child's
 * EP's PZ succeeds (a Read or atomic returns the child's bytes); then the
 * same request to the region of the child's other PZ is refused with
 * IT_DTO_ERR_REMOTE_ACCESS, or with XPZ_LOCAL an RDMA Write to the first
 * region from an LMR of another PZ of this IA completes
 * IT_DTO_ERR_LOCAL_PROTECTION; the local buffer is unchanged, the
 * connection breaks, and the child finds its memory unchanged. */
static void
pz_with(child_t *c, xpz_op_t op)
{
  static const it_event_type_t type[] = { IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_RDMA_READ_CMPL_EVENT,
                                          IT_DTO_FETCH_ADD_CMPL_EVENT, IT_DTO_RDMA_WRITE_CMPL_EVENT };
  conf_side_t s;
  it_ep_attributes_t attr;
  conf_probe_atomics(&attr, NULL);
  uint16_t port = xproc_hear_port(c);
  conf_side_open(&s, &attr);
  xproc_connect(&s, port);
  guint64 addr[2], ctx[2];
  unsigned len[2];
  for (int i = 0; i < 2; i++) {
    g_autofree char *l = conf_hear(c->from, LINE_TIMEOUT_MS);
    g_assert_nonnull(l);
    g_assert_cmpint(sscanf(l, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u", &addr[i], &ctx[i], &len[i]),
                    ==, 3);
  }
  conf_buf_t loc, foreign;
  conf_buf_new(&s, &loc, 64, conf_sink_privs(&s), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&loc, 1);
  /* The child's regions hold conf_buf_fill's pattern of seed 5 (and 6). */
  unsigned char want[64];
  for (size_t i = 0; i < 64; i++)
    want[i] = (unsigned char) ((8 + i) * 31 + 5 * 7 + 1);
  xpz_post(&s, op == XPZ_LOCAL ? XPZ_WRITE : op, &loc, addr[0], 8, ctx[0], 1);
  conf_dto(s.dto, type[op], IT_DTO_SUCCESS, 1);
  if (op == XPZ_READ) {
    g_assert_cmpmem(loc.data, 64, want, 64);
  } else if (op == XPZ_ATOMIC) {
    g_assert_cmpmem(loc.data, 8, want, 8);
  }
  memset(loc.data, 0xee, loc.len);
  g_autofree unsigned char *loc_was = g_memdup2(loc.data, loc.len);
  if (op == XPZ_LOCAL) {
    conf_side_t other = s;
    conf_ok(it_pz_create(s.ia, &other.pz));
    conf_buf_new(&other, &foreign, 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_fill(&foreign, 2);
    xpz_post(&s, XPZ_WRITE, &foreign, addr[0], 1024, ctx[0], 2);
    conf_dto(s.dto, type[op], IT_DTO_ERR_LOCAL_PROTECTION, 2);
    conf_buf_check(&foreign, 0, 64, 2);
    conf_buf_free(&foreign);
  } else {
    xpz_post(&s, op, &loc, addr[1], 8, ctx[1], 2);
    conf_dto_refused(&s, type[op], IT_DTO_ERR_REMOTE_ACCESS, 2);
  }
  g_assert_cmpmem(loc.data, loc.len, loc_was, loc.len);
  conf_buf_check_guards(&loc);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  conf_say(c->to, "check %s\n", op == XPZ_LOCAL ? "local" : "remote");
  g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
  xproc_reap_ok(c);
  g_assert_cmpstr(ok, ==, "ok");
  conf_buf_free(&loc);
  conf_side_close(&s);
}

static void
test_pz(gconstpointer data)
{
  xpz_op_t op = (xpz_op_t) GPOINTER_TO_INT(data);
  g_test_summary("xproc: the child registers a region in its EP's PZ and one in a second PZ of its "
                 "IA, in private memory and then in a sealable memfd; after an RDMA Write, Read or "
                 "atomic to the first succeeded, the same request to the second completes "
                 "IT_DTO_ERR_REMOTE_ACCESS (pz-local: a write from an LMR of another PZ of the "
                 "parent's IA completes IT_DTO_ERR_LOCAL_PROTECTION), the connection breaks and "
                 "the child finds both regions unchanged; private and memfd memory");
  if (op == XPZ_ATOMIC && !conf_require(conf_probe_atomics(NULL, NULL), "atomics"))
    return;
  for (int memfd = 0; memfd < 2; memfd++) {
    g_test_message("%s memory", memfd ? "memfd" : "private");
    child_t c = xproc_spawn(memfd ? "pzm" : "pz");
    pz_with(&c, op);
    unlink(c.err);
  }
}

/* Against a "keys" child: per change of the key, a fresh connection and
 * region; the RDMA Write or Read (@op) with the region's context succeeds
 * (a Read returns the child's bytes), the same with the changed context
 * completes IT_DTO_ERR_REMOTE_ACCESS, the local buffer stays, the
 * connection breaks and the child finds its region unchanged.  The
 * changes: the key byte (five values) and one bit of every other byte of
 * the key alone. */
static void
keys_with(child_t *c, xpz_op_t op)
{
  static const it_event_type_t type[] = { IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_RDMA_READ_CMPL_EVENT };
  uint16_t port = xproc_hear_port(c);
  conf_key_change_t ch[64 + 8];
  int n = 0;
  for (int i = 0; n == 0 || i < n; i++) {
    conf_side_t s;
    conf_say(c->to, "next\n");
    conf_side_open(&s, NULL);
    xproc_connect(&s, port);
    guint64 addr, ctx;
    unsigned len;
    g_autofree char *l = conf_hear(c->from, LINE_TIMEOUT_MS);
    g_assert_nonnull(l);
    g_assert_cmpint(sscanf(l, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u", &addr, &ctx, &len), ==, 3);
    if (n == 0) {
      n = conf_key_changes(ctx, TRUE, ch);
      conf_key_change_t bits[64];
      int nb = conf_key_changes(ctx, FALSE, bits);
      for (int b = 0; b < nb; b += 8)  /* bits 8, 16, 24 (, 32, 40...) */
        ch[n++] = bits[b];
      ch[n++] = bits[nb - 1];          /* and the highest */
    }
    g_test_message("%s, context 0x%" G_GINT64_MODIFIER "x, %s", op == XPZ_READ ? "RDMA Read" : "RDMA Write",
                   ctx, ch[i].what);
    conf_buf_t loc;
    conf_buf_new(&s, &loc, 64, conf_sink_privs(&s), IT_ADDR_MODE_ABSOLUTE);
    conf_buf_fill(&loc, 1);
    xpz_post(&s, op, &loc, addr, 8, ctx, 1);
    conf_dto(s.dto, type[op], IT_DTO_SUCCESS, 1);
    if (op == XPZ_READ)
      for (size_t k = 0; k < 64; k++)
        g_assert_cmpuint(loc.data[k], ==, (unsigned char) ((8 + k) * 31 + 5 * 7 + 1));
    memset(loc.data, 0xee, loc.len);
    xpz_post(&s, op, &loc, addr, 8, ctx ^ ch[i].mask, 2);
    conf_dto_refused(&s, type[op], IT_DTO_ERR_REMOTE_ACCESS, 2);
    for (size_t k = 0; k < loc.len; k++)
      g_assert_cmpuint(loc.data[k], ==, 0xee);
    conf_buf_check_guards(&loc);
    conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
    conf_say(c->to, "check\n");
    g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
    g_assert_cmpstr(ok, ==, "ok");
    conf_buf_free(&loc);
    conf_side_close(&s);
  }
  conf_say(c->to, "bye\n");
  xproc_reap_ok(c);
}

static void
test_key_field(gconstpointer data)
{
  xpz_op_t op = (xpz_op_t) GPOINTER_TO_INT(data);
  g_test_summary("xproc: a context that differs from the child's live region's only in its key "
                 "byte (five values), or only in one bit of another byte, is refused across "
                 "processes: after the RDMA Write or Read with the right context succeeded, the "
                 "one with the changed context completes IT_DTO_ERR_REMOTE_ACCESS, the "
                 "connection breaks and the child's region is unchanged; private and memfd "
                 "memory");
  for (int memfd = 0; memfd < 2; memfd++) {
    g_test_message("%s memory", memfd ? "memfd" : "private");
    child_t c = xproc_spawn(memfd ? "keysm" : "keys");
    keys_with(&c, op);
    unlink(c.err);
  }
}


/* Against a "recvlen" child: sends of n, n and n + 1 bytes; the first two
 * succeed, the third completes exactly once IT_DTO_ERR_REMOTE_RESPONDER
 * (conf_dto_refused: a provider that completes sends when they are sent may
 * say success) with IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR, the connection
 * breaks. */
static void
recvlen_with(child_t *c)
{
  conf_side_t s;
  size_t n;
  int sges;
  xproc_recvlen_params(&n, &sges);
  uint16_t port = xproc_hear_port(c);
  conf_side_open(&s, NULL);
  xproc_connect(&s, port);
  g_autofree char *ready = conf_hear(c->from, LINE_TIMEOUT_MS);
  g_assert_cmpstr(ready, ==, "ready");
  conf_buf_t sb;
  conf_buf_new(&s, &sb, n + 1, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&sb, 9);
  it_lmr_triplet_t a = conf_seg(&sb, 0, n), b = conf_seg(&sb, 0, n + 1);
  /* Back to back: an iWARP requester completing sends at placement still
   * has the good ones outstanding when the Terminate refusing the third
   * comes; it names that message (its MSN), not the oldest one. */
  conf_ok(it_post_send(s.ep, &a, 1, 1, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(s.ep, &a, 1, 2, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(s.ep, &b, 1, 3, IT_COMPLETION_FLAG));
  conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_dto_refused(&s, IT_DTO_SEND_CMPL_EVENT, IT_DTO_ERR_REMOTE_RESPONDER, 3);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  it_event_t ev = conf_wait(s.aff, IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR);
  g_assert_true(ev.aff_async.cause.ep == s.ep);
  conf_assert_empty(s.dto); /* the failed send completed once */
  g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS * 2);
  xproc_reap_ok(c);
  g_assert_cmpstr(ok, ==, "ok");
  conf_buf_check_guards(&sb);
  conf_buf_free(&sb);
  conf_side_close(&s);
}

static void
test_recv_length(void)
{
  g_test_summary("xproc: the child posts a receive of n bytes, one of n bytes in two segments "
                 "and one of n bytes (in one or two segments); sends of n, n and n + 1 bytes: the "
                 "first two land exactly in their segments, the third completes the receive "
                 "IT_DTO_ERR_LOCAL_LENGTH and the send IT_DTO_ERR_REMOTE_RESPONDER, each once, "
                 "nothing is written outside the receive segments, both sides break (sender "
                 "IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR, receiver IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR); "
                 "n = 64 and 64 KiB");
  static const char *const params[] = { "64 1", "64 2", "65536 1", "65536 2" };
  for (size_t i = 0; i < G_N_ELEMENTS(params); i++) {
    g_test_message("n, segments of the third receive: %s", params[i]);
    g_setenv("CONF_XPROC_RECV", params[i], TRUE);
    child_t c = xproc_spawn("recvlen");
    recvlen_with(&c);
    unlink(c.err);
    g_unsetenv("CONF_XPROC_RECV");
  }
}

/* Against a "rights" child whose EP refuses incoming RDMA Writes (@no_write)
 * or Reads, its region in a memfd with @memfd: the allowed operation
 * succeeds many times (a Read returns the child's bytes), then the refused
 * one completes IT_DTO_ERR_REMOTE_ACCESS with the local buffer unchanged,
 * the connection breaks and the child finds its region unchanged. */
static void
rights_with(child_t *c, gboolean no_write, gboolean memfd)
{
  conf_side_t s;
  uint16_t port = xproc_hear_port(c);
  conf_side_open(&s, NULL);
  xproc_connect(&s, port);
  guint64 addr, ctx;
  unsigned len;
  g_autofree char *l = conf_hear(c->from, LINE_TIMEOUT_MS);
  g_assert_nonnull(l);
  g_assert_cmpint(sscanf(l, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u", &addr, &ctx, &len), ==, 3);
  conf_buf_t loc;
  conf_buf_new(&s, &loc, 64, conf_sink_privs(&s), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&loc, 1);
  xpz_op_t good = no_write ? XPZ_READ : XPZ_WRITE, bad = no_write ? XPZ_WRITE : XPZ_READ;
  static const it_event_type_t type[] = { IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_RDMA_READ_CMPL_EVENT };
  /* Many: a provider may take a faster path once it reached a region
   * (mapping a memfd region here takes a round trip: peer_maps). */
  gboolean mapping = memfd && peer_maps();
  for (it_dto_cookie_t k = 1; k <= 50 || (mapping && k <= 1000 && !maps_memfd("conf-xproc-target")); k++) {
    xpz_post(&s, good, &loc, addr, 8, ctx, k);
    conf_dto(s.dto, type[good], IT_DTO_SUCCESS, k);
    if (good == XPZ_READ)
      for (size_t i = 0; i < 64; i++)
        g_assert_cmpuint(loc.data[i], ==, (unsigned char) ((8 + i) * 31 + 5 * 7 + 1));
  }
  memset(loc.data, 0xee, loc.len);
  xpz_post(&s, bad, &loc, addr, 8, ctx, 1001);
  conf_dto_refused(&s, type[bad], IT_DTO_ERR_REMOTE_ACCESS, 1001);
  for (size_t i = 0; i < loc.len; i++)
    g_assert_cmpuint(loc.data[i], ==, 0xee);
  conf_buf_check_guards(&loc);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  conf_say(c->to, "check\n");
  g_autofree char *ok = conf_hear(c->from, LINE_TIMEOUT_MS);
  xproc_reap_ok(c);
  g_assert_cmpstr(ok, ==, "ok");
  conf_buf_free(&loc);
  conf_side_close(&s);
}

static void
test_rdma_disabled(gconstpointer data)
{
  gboolean no_write = GPOINTER_TO_INT(data);
  g_test_summary("xproc: the child's EP accepts with incoming RDMA Writes (or Reads) disabled and "
                 "registers a region with every remote right: RDMA Reads (Writes) succeed many times, "
                 "then an RDMA Write (Read) completes IT_DTO_ERR_REMOTE_ACCESS, the connection "
                 "breaks and the child's region is unchanged; private and memfd memory");
  g_setenv("CONF_XPROC_RIGHTS", no_write ? "w" : "r", TRUE);
  for (int memfd = 0; memfd < 2; memfd++) {
    g_test_message("%s memory", memfd ? "memfd" : "private");
    child_t c = xproc_spawn(memfd ? "rightsm" : "rights");
    rights_with(&c, no_write, memfd);
    unlink(c.err);
  }
  g_unsetenv("CONF_XPROC_RIGHTS");
}

int
main(int argc, char **argv)
{
  xproc_self_exe = g_file_read_link("/proc/self/exe", NULL);
  g_log_writer_default_set_use_stderr(TRUE);
  conf_xuser_start(argv);
  if (argc == 3 && strcmp(argv[1], "--xproc-role") == 0) {
    conf_child_watchdog_start(); /* a child never outlives a stuck parent by much */
    return xproc_child_main(argv[2]);
  }
  g_test_init(&argc, &argv, NULL);
  signal(SIGPIPE, SIG_IGN);
  g_test_add_func("/conformance/xproc/send-recv", test_send_recv);
  g_test_add_func("/conformance/xproc/send-local-protection", test_send_local_protection);
  g_test_add_func("/conformance/xproc/rdma-write-read", test_rdma_write_read);
  g_test_add_data_func("/conformance/xproc/post-beside-transfer", GINT_TO_POINTER(BESIDE_PRIVATE),
                       test_post_beside_transfer);
  g_test_add_data_func("/conformance/xproc/post-beside-shared-memory", GINT_TO_POINTER(BESIDE_SHARED),
                       test_post_beside_transfer);
  g_test_add_data_func("/conformance/xproc/post-beside-read-behind-send", GINT_TO_POINTER(BESIDE_BEHIND_SEND),
                       test_post_beside_transfer);
  g_test_add_data_func("/conformance/xproc/post-beside-receive", GINT_TO_POINTER(BESIDE_RECEIVE),
                       test_post_beside_transfer);
  g_test_add_data_func("/conformance/xproc/post-beside-receive/polled", GINT_TO_POINTER(BESIDE_RECEIVE_POLLED),
                       test_post_beside_transfer);
  g_test_add_func("/conformance/xproc/peer-killed-mid-transfer", test_peer_killed_mid_transfer);
  g_test_add_func("/conformance/xproc/peer-killed-mid-queued-transfer", test_peer_killed_mid_queued_transfer);
  g_test_add_func("/conformance/xproc/disconnect-mid-read-behind-send", test_disconnect_mid_read_behind_send);
  g_test_add_func("/conformance/xproc/peer-killed-mid-receive", test_peer_killed_mid_receive);
  g_test_add_func("/conformance/xproc/stream", test_stream);
  g_test_add_func("/conformance/xproc/stream/busy-poll", test_stream_busy_poll);
  g_test_add_func("/conformance/xproc/read-behind-send/busy-poll", test_read_behind_send_polled);
  g_test_add_func("/conformance/xproc/reads-between-sends", test_reads_between_sends);
  g_test_add_func("/conformance/xproc/wait-race", test_wait_race);
  g_test_add_func("/conformance/xproc/rdma-shared-memory", test_rdma_shared_memory);
  g_test_add_func("/conformance/xproc/rdma-after-free", test_rdma_after_free);
  g_test_add_func("/conformance/xproc/rdma-shared-memory/straddle", test_rdma_straddle);
  g_test_add_func("/conformance/xproc/windows", test_windows);
  g_test_add_func("/conformance/xproc/sleep-beside-acks", test_sleep_beside_acks);
  g_test_add_data_func("/conformance/xproc/threads-beside", "mtarget", test_threads_beside);
  g_test_add_data_func("/conformance/xproc/threads-beside/private", "target", test_threads_beside);
  g_test_add_func("/conformance/xproc/read-to-rmr", test_read_to_rmr);
  g_test_add_func("/conformance/xproc/read-to-rmr/rights", test_read_to_rmr_rights);
  g_test_add_func("/conformance/xproc/ud", test_ud);
  g_test_add_func("/conformance/xproc/atomics", test_atomics);
  g_test_add_func("/conformance/xproc/atomic-misaligned", test_atomic_misaligned);
  g_test_add_func("/conformance/xproc/atomics-not-negotiated", test_atomics_not_negotiated);
  g_test_add_func("/conformance/xproc/peer-killed", test_peer_killed);
  g_test_add_func("/conformance/xproc/protection", test_protection);
  g_test_add_func("/conformance/xproc/no-leak", test_no_leak);
  g_test_add_data_func("/conformance/xproc/pz-write", GINT_TO_POINTER(XPZ_WRITE), test_pz);
  g_test_add_data_func("/conformance/xproc/pz-read", GINT_TO_POINTER(XPZ_READ), test_pz);
  g_test_add_data_func("/conformance/xproc/pz-atomic", GINT_TO_POINTER(XPZ_ATOMIC), test_pz);
  g_test_add_data_func("/conformance/xproc/pz-local", GINT_TO_POINTER(XPZ_LOCAL), test_pz);
  g_test_add_data_func("/conformance/xproc/key-field/write", GINT_TO_POINTER(XPZ_WRITE), test_key_field);
  g_test_add_data_func("/conformance/xproc/key-field/read", GINT_TO_POINTER(XPZ_READ), test_key_field);
  g_test_add_func("/conformance/xproc/recv-length", test_recv_length);
  g_test_add_data_func("/conformance/xproc/rdma-disabled/write", GINT_TO_POINTER(TRUE), test_rdma_disabled);
  g_test_add_data_func("/conformance/xproc/rdma-disabled/read", GINT_TO_POINTER(FALSE), test_rdma_disabled);
  return g_test_run();
}

