/*
 * Conformance across processes, the child's side: each role opens its end
 * (listens, says its port and keys), answers the parent's lines and checks
 * what the parent's operations left in its memory.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf_xproc.h"

const unsigned char xproc_ud_req_pd[sizeof XPROC_UD_REQ_TEXT] = XPROC_UD_REQ_TEXT;
const unsigned char xproc_ud_rep_pd[sizeof XPROC_UD_REP_TEXT] = XPROC_UD_REP_TEXT;

/* Listen, say the port, accept with private data (receives posted first
 * unless @no_recv); the side is ready.  @attr: the EP's attributes (NULL:
 * the defaults). */
static void
role_accept_attr(conf_side_t *s, const it_ep_attributes_t *attr, conf_buf_t *rb, gboolean no_recv)
{
  conf_side_open(s, attr);
  conf_child_listen(s);
  it_event_t ev = conf_wait(s->req, IT_CM_REQ_CONN_REQUEST_EVENT);
  g_assert_true(ev.conn_req.private_data_present);
  g_assert_cmpmem(ev.conn_req.private_data, sizeof(xproc_cpd), xproc_cpd, sizeof(xproc_cpd));
  if (rb != NULL) {
    conf_buf_new(s, rb, MSG_BIG * 2, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
    if (!no_recv) {
      it_lmr_triplet_t a = conf_seg(rb, 0, MSG_SMALL), b = conf_seg(rb, MSG_BIG, MSG_BIG);
      conf_ok(it_post_recv(s->ep, &a, 1, 1, IT_COMPLETION_FLAG));
      conf_ok(it_post_recv(s->ep, &b, 1, 2, IT_COMPLETION_FLAG));
    }
  }
  conf_ok(it_ep_accept(s->ep, ev.conn_req.cn_est_id, xproc_apd, sizeof(xproc_apd)));
  conf_wait(s->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
}

static void
role_accept(conf_side_t *s, conf_buf_t *rb, gboolean no_recv)
{
  role_accept_attr(s, NULL, rb, no_recv);
}

static int
role_echo(void)
{
  conf_side_t s;
  conf_buf_t rb;
  role_accept(&s, &rb, FALSE);
  conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  it_dto_cmpl_event_t e = conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  g_assert_cmpuint(e.transferred_length, ==, MSG_BIG);
  for (size_t i = 0; i < MSG_SMALL; i++)
    g_assert_cmpuint(rb.data[i], ==, (unsigned char) (i * 31 + 1 * 7 + 1));
  for (size_t i = 0; i < MSG_BIG; i++)
    if (rb.data[MSG_BIG + i] != (unsigned char) (i * 31 + 2 * 7 + 1))
      g_error("byte %zu of the big message differs", i);
  it_lmr_triplet_t a = conf_seg(&rb, 0, MSG_SMALL), b = conf_seg(&rb, MSG_BIG, MSG_BIG);
  conf_ok(it_post_send(s.ep, &a, 1, 3, IT_COMPLETION_FLAG));
  conf_ok(it_post_send(s.ep, &b, 1, 4, IT_COMPLETION_FLAG));
  conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 3);
  conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 4);
  /* The echo is delivered; the parent ends the connection only once it
   * hears this, as an application closes only when both sides are done: a
   * send complete at the peer may still await its own completion here
   * (iWARP completes sends behind a fencing zero-length RDMA Read), and a
   * disconnect before that would flush it. */
  printf("sent\n");
  fflush(stdout);
  /* CONF_XPROC_ECHO_END=broken: the parent ends with a request that
   * breaks the connection (send_recv_with). */
  conf_wait(s.cm, g_strcmp0(g_getenv("CONF_XPROC_ECHO_END"), "broken") == 0 ?
                  IT_CM_MSG_CONN_BROKEN_EVENT : IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_buf_check_guards(&rb);
  return 0;
}

/* ---- stream: many messages of mixed sizes, each checked ---- */

/* Sizes around every boundary a transport may have: empty, a cache line
 * and its header, pages, a frame's payload limit, several frames. */
size_t
xproc_stream_size(unsigned k)
{
  static const size_t sizes[] = { 0, 1, 7, 8, 23, 40, 41, 63, 64, 65, 1000, 4095, 4096,
                                  65535, 65536, 65537, 200000, STREAM_SLOT };
  return sizes[(k * 7) % G_N_ELEMENTS(sizes)];
}

unsigned char
xproc_stream_byte(unsigned k, size_t j)
{
  return (unsigned char) (k * 131 + j * 7 + (j >> 8));
}

gboolean
xproc_stream_busy(void)
{
  return g_strcmp0(g_getenv("CONF_XPROC_STREAM_POLL"), "1") == 0;
}

/* xproc_next_event within @w. */
static gboolean
next_event_until(it_evd_handle_t dto, gboolean poll, const cert_limit_t *w, it_event_t *ev,
                 it_status_t *st)
{
  if (!poll) {
    size_t more;
    *st = it_evd_wait(dto, XPROC_EVENT_WAIT_US, ev, &more);
    if (*st == IT_SUCCESS)
      conf_child_progress();
    return *st == IT_SUCCESS;
  }
  for (unsigned n = 0;; n++) {
    *st = it_evd_dequeue(dto, ev);
    if (*st == IT_SUCCESS)
      conf_child_progress();
    if (*st != IT_ERR_QUEUE_EMPTY)
      return *st == IT_SUCCESS;
    if (n % 1024 == 0 && cert_limit_over(w))
      return FALSE;
  }
}

gboolean
xproc_next_event(it_evd_handle_t dto, gboolean poll, it_event_t *ev, it_status_t *st)
{
  cert_limit_t w;
  cert_limit_begin(&w, poll ? "the next event of a stream (it_evd_dequeue)"
                            : "the next event of a stream (it_evd_wait)", XPROC_EVENT_WAIT_US);
  gboolean got = next_event_until(dto, poll, &w, ev, st);
  cert_limit_end(&w);
  return got;
}

/* Name one event of @ev's stream in @out: its type, and for a DTO
 * completion its cookie and status. */
static void
account_event(GString *out, const it_event_t *ev)
{
  g_string_append(out, itx_event_name(ev->event_number));
  if (ev->event_number == IT_DTO_SEND_CMPL_EVENT || ev->event_number == IT_DTO_RC_RECV_CMPL_EVENT ||
      ev->event_number == IT_DTO_RDMA_WRITE_CMPL_EVENT || ev->event_number == IT_DTO_RDMA_READ_CMPL_EVENT)
    g_string_append_printf(out, " (work request %" G_GUINT64_FORMAT ", %s)", (guint64) ev->dto_cmpl.cookie,
                           itx_dto_status_name(ev->dto_cmpl.dto_status));
}

char *
xproc_broken_account(conf_side_t *s)
{
  GString *out = g_string_new(NULL);
  unsigned ok = 0, flushed = 0, other = 0;
  it_event_t ev;
  cert_limit_t w;
  cert_limit_begin(&w, "2 s of completions after a broken connection", 2 * G_USEC_PER_SEC);
  while (!cert_limit_over(&w)) {
    if (it_evd_dequeue(s->dto, &ev) != IT_SUCCESS) {
      g_usleep(1000);
      continue;
    }
    if (ev.dto_cmpl.dto_status == IT_DTO_SUCCESS) {
      ok++;
    } else if (ev.dto_cmpl.dto_status == IT_DTO_ERR_FLUSHED) {
      flushed++;
    } else if (other++ < 2) {
      g_string_append(out, "; then ");
      account_event(out, &ev);
    }
  }
  cert_limit_end(&w);
  g_string_append_printf(out, "; in the next 2 s %u more completed, %u flushed, %u failed otherwise", ok,
                         flushed, other);
  const struct { it_evd_handle_t evd; const char *what; } more[] = {
    { s->aff, "affiliated async" }, { s->cm, "connection" } };
  for (size_t i = 0; i < G_N_ELEMENTS(more); i++) {
    g_string_append_printf(out, "; %s events:", more[i].what);
    unsigned n = 0;
    while (more[i].evd != IT_NULL_HANDLE && it_evd_dequeue(more[i].evd, &ev) == IT_SUCCESS && n++ < 4) {
      g_string_append_c(out, ' ');
      g_string_append(out, itx_event_name(ev.event_number));
    }
    if (n == 0)
      g_string_append(out, " none");
  }
  return g_string_free(out, FALSE);
}

/* Where byte @j of a message landed in receive @k's slot @m: in the
 * busy-poll variant (@busy: xproc_stream_busy, read once by the caller, not
 * per byte: getenv per byte took most of the stream's time) an odd receive
 * is [STREAM_SPLIT, STREAM_SLOT) of the slot, then [0, STREAM_SPLIT). */
static const unsigned char *
stream_at(const unsigned char *m, unsigned k, size_t j, gboolean busy)
{
  if (!busy || k % 4 != 3)
    return m + j;
  return j < STREAM_SLOT - STREAM_SPLIT ? m + STREAM_SPLIT + j : m + j - (STREAM_SLOT - STREAM_SPLIT);
}

/* Post receive @k into its slot of @b (cookie @k). */
static void
stream_recv(conf_side_t *s, conf_buf_t *b, guint64 k)
{
  size_t at = (size_t) (k % STREAM_W) * STREAM_SLOT;
  if (!xproc_stream_busy() || k % 4 != 3) {
    it_lmr_triplet_t t = conf_seg(b, at, STREAM_SLOT);
    conf_ok(it_post_recv(s->ep, &t, 1, k, IT_COMPLETION_FLAG));
    return;
  }
  it_lmr_triplet_t t[2] = { conf_seg(b, at + STREAM_SPLIT, STREAM_SLOT - STREAM_SPLIT),
                            conf_seg(b, at, STREAM_SPLIT) };
  conf_ok(it_post_recv(s->ep, t, 2, k, IT_COMPLETION_FLAG));
}

/* Send our receive count (the sender's credit) from @b's credit slot. */
static void
stream_credit(conf_side_t *s, conf_buf_t *b, guint64 posted, it_dto_cookie_t ck)
{
  guint64 v = posted;
  memcpy(b->data + (size_t) STREAM_W * STREAM_SLOT, &v, 8);
  it_lmr_triplet_t t = conf_seg(b, (size_t) STREAM_W * STREAM_SLOT, 8);
  conf_ok(it_post_send(s->ep, &t, 1, ck, IT_COMPLETION_FLAG));
}

/* The receiving child: keeps STREAM_W receives posted, grants them as
 * credit, checks every message's length and bytes in order. */
static int
role_stream(void)
{
  conf_side_t s;
  conf_buf_t b;
  const gboolean busy = xproc_stream_busy();
  role_accept(&s, NULL, TRUE);
  conf_buf_new(&s, &b, (size_t) STREAM_W * STREAM_SLOT + 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  guint64 posted = 0, credits_sent = 0, credits_done = 0;
  for (; posted < STREAM_W; posted++)
    stream_recv(&s, &b, posted);
  stream_credit(&s, &b, posted, 1u << 30);
  credits_sent++;
  guint64 granted = posted;
  for (unsigned k = 0; k < STREAM_N;) {
    it_event_t ev;
    it_status_t st;
    if (!xproc_next_event(s.dto, busy, &ev, &st))
      g_error("stream child: no completion within 15 s after %u of %u messages: %s", k, STREAM_N,
              itx_status_name(st));
    if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS) {
      g_autoptr(GString) first = g_string_new(NULL);
      account_event(first, &ev);
      g_autofree char *rest = xproc_broken_account(&s);
      g_error("stream child: %s after %u of %u messages%s", first->str, k, STREAM_N, rest);
    }
    if (ev.event_number == IT_DTO_SEND_CMPL_EVENT) {
      credits_done++;
    } else {
      g_assert_cmpint(ev.event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
      g_assert_cmpuint(ev.dto_cmpl.cookie, ==, k);  /* in order */
      size_t len = xproc_stream_size(k);
      if (ev.dto_cmpl.transferred_length != len)
        g_error("stream child: message %u is %zu bytes, sent %zu", k,
                (size_t) ev.dto_cmpl.transferred_length, len);
      const unsigned char *m = b.data + (size_t) (k % STREAM_W) * STREAM_SLOT;
      for (size_t j = 0; j < len; j++)
        if (*stream_at(m, k, j, busy) != xproc_stream_byte(k, j))
          g_error("stream child: byte %zu of message %u (%zu bytes, receive of %d SGEs) differs", j, k,
                  len, busy && k % 4 == 3 ? 2 : 1);
      k++;
      if (posted < STREAM_N)
        stream_recv(&s, &b, posted++);
    }
    /* Grant in batches, one credit send in flight at a time (its slot):
     * the parent never holds more than a few unread credits. */
    if ((posted - granted >= STREAM_W / 2 || (posted == STREAM_N && posted > granted)) &&
        credits_done == credits_sent) {
      stream_credit(&s, &b, posted, (1u << 30) + credits_sent);
      credits_sent++;
      granted = posted;
    }
  }
  printf("ok %u\n", (unsigned) STREAM_N);
  fflush(stdout);
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_buf_check_guards(&b);
  return 0;
}

/* A registered buffer as conf_buf_new makes (with @privs), but in a
 * MAP_SHARED memfd named "conf-xproc-target" that may be sealed (left
 * mapped at exit). */
static void
memfd_buf_new(conf_side_t *s, conf_buf_t *b, size_t len, it_mem_priv_t privs)
{
  size_t total = CONF_GUARD * 2 + ((len + 4095) / 4096) * 4096;
  int fd = memfd_create("conf-xproc-target", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(ftruncate(fd, (off_t) total), ==, 0);
  memset(b, 0, sizeof(*b));
  b->len = len;
  b->mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  g_assert_true(b->mem != MAP_FAILED);
  memset(b->mem, CONF_GUARD_BYTE, total);
  b->data = b->mem + CONF_GUARD;
  memset(b->data, 0, len);
  conf_ok(it_lmr_create(s->pz, b->data, NULL, len, IT_ADDR_MODE_ABSOLUTE, privs, IT_LMR_FLAG_NONE, 0,
                        &b->lmr, &b->ctx));
}

/* The target's region: 64 KiB, or CONF_XPROC_TARGET_LEN bytes (a transfer
 * long enough to be watched landing). */
static size_t
target_len(void)
{
  const char *v = g_getenv("CONF_XPROC_TARGET_LEN");
  return v != NULL ? (size_t) g_ascii_strtoull(v, NULL, 10) : 64 * 1024;
}

/* The longest receive "recv N" posts (the receives share one buffer). */
#define TARGET_RECV_MAX (1u << 20)

/* A target region; the application thread then sleeps in read(): RDMA
 * against it must complete without it.  "check SEED" verifies the region,
 * "guards" only the guard bytes (after a refused write), "write ADDR CTX"
 * writes to the parent through a context that must be refused, "end" (the
 * parent checked the bytes itself) waits for its disconnect.  With @memfd, the
 * region is in shared memory (see memfd_buf_new) and the commands repeat
 * until "guards". */
static int
role_target(gboolean memfd)
{
  conf_side_t s;
  conf_buf_t rb, sb = { 0 };
  const size_t len = target_len();
  role_accept(&s, NULL, FALSE);
  if (memfd)
    memfd_buf_new(&s, &rb, len, IT_PRIV_LOCAL | IT_PRIV_REMOTE);
  else
    conf_buf_new(&s, &rb, len, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  xproc_peer_accessed(&rb);
  printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u\n",
         (guint64) (uintptr_t) rb.data, (guint64) rb.ctx, (unsigned) len);
  fflush(stdout);
  char cmd[64] = { 0 };
  unsigned seed;
  while (memfd) {
    g_autofree char *l = conf_hear(0, LINE_TIMEOUT_MS * 3); /* one-sided RDMA runs meanwhile */
    g_assert_nonnull(l);
    if (strcmp(l, "end") == 0) {
      /* The parent is done and disconnects. */
      printf("ok\n");
      fflush(stdout);
      conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
      return 0;
    }
    unsigned rlen = 64;
    if (strcmp(l, "recv") == 0 || sscanf(l, "recv %u", &rlen) == 1) {
      /* A receive for the parent's next Send of 64 bytes or fewer, or of
       * "recv N" bytes, at most TARGET_RECV_MAX (left unread: a Send ahead
       * of the parent's RDMA holds that RDMA back until it is answered). */
      g_assert_cmpuint(rlen, <=, TARGET_RECV_MAX);
      if (sb.lmr == IT_NULL_HANDLE)
        conf_buf_new(&s, &sb, TARGET_RECV_MAX, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
      it_lmr_triplet_t t = conf_seg(&sb, 0, rlen);
      conf_ok(it_post_recv(s.ep, &t, 1, 8, IT_COMPLETION_FLAG));
      printf("posted\n");
      fflush(stdout);
      continue;
    }
    if (strcmp(l, "send") == 0) {
      /* The whole region, into a receive of the parent's. */
      it_lmr_triplet_t t = conf_seg(&rb, 0, len);
      conf_ok(it_post_send(s.ep, &t, 1, 9, IT_COMPLETION_FLAG));
      /* Up to XPROC_EVENT_WAIT_US, as the stream: 32 MiB through rxe in
       * the lab VM's emulated CPU, beside the host's suites, may take
       * longer than CONF_TIMEOUT_US. */
      it_event_t ev;
      it_status_t st;
      if (!xproc_next_event(s.dto, FALSE, &ev, &st))
        g_error("target child: no completion of its %zu-byte Send within %d s: %s", len,
                (int) (XPROC_EVENT_WAIT_US / G_USEC_PER_SEC), itx_status_name(st));
      g_assert_cmpstr(itx_event_name(ev.event_number), ==, itx_event_name(IT_DTO_SEND_CMPL_EVENT));
      g_assert_cmpstr(itx_dto_status_name(ev.dto_cmpl.dto_status), ==, itx_dto_status_name(IT_DTO_SUCCESS));
      g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 9);
      printf("sent\n");
      fflush(stdout);
      continue;
    }
    if (strcmp(l, "free") == 0) {
      /* The parent's next write names a region that no longer exists. */
      conf_ok(it_lmr_free(rb.lmr));
      printf("freed\n");
      fflush(stdout);
      continue;
    }
    if (sscanf(l, "check %u", &seed) != 1) {
      /* A refused overrun: the guards and the last pattern are intact. */
      conf_buf_check_guards(&rb);
      conf_buf_check(&rb, 0, len, seed);
      conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
      printf("ok\n");
      fflush(stdout);
      return 0;
    }
    conf_buf_check(&rb, 0, len, seed);
    conf_buf_check_guards(&rb);
    printf("ok\n");
    fflush(stdout);
  }
  ssize_t n = read(0, cmd, sizeof(cmd) - 1); /* blocked: one-sided RDMA runs meanwhile */
  g_assert_cmpint(n, >, 0);
  guint64 waddr, wctx;
  gboolean check = FALSE;
  if (sscanf(cmd, "write %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &waddr, &wctx) == 2) {
    /* The parent's context is dead: this write is refused, breaking the
     * connection. */
    it_lmr_triplet_t g = conf_seg(&rb, 0, 16);
    conf_ok(it_post_rdma_write(s.ep, &g, 1, 7, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute((void *) (uintptr_t) waddr), (it_rmr_context_t) wctx));
    conf_write_refused(&s, 7);
    conf_buf_check_guards(&rb);
  } else if ((check = sscanf(cmd, "check %u", &seed) == 1) || strncmp(cmd, "end", 3) == 0) {
    /* "end": the parent checked the bytes itself, and disconnects. */
    if (check)
      conf_buf_check(&rb, 0, len, seed);
    conf_buf_check_guards(&rb);
    printf("ok\n");
    fflush(stdout);
    conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
    return 0;
  } else {
    /* "local": the parent's request failed at the parent (nothing to tell
     * this responder); otherwise a refused write. */
    gboolean local = strncmp(cmd, "local", 5) == 0;
    conf_buf_check_guards(&rb);
    /* InfiniBand checks the whole range of an RDMA Write before placing a
     * byte; iWARP places each DDP segment as it comes, so only the memory
     * outside the region is guaranteed untouched there. */
    if (conf_transport(&s) == IT_IB_TRANSPORT || local)
      for (size_t i = 0; i < len; i++)
        g_assert_cmpuint(rb.data[i], ==, 0);
    conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
    it_event_t ev;
    size_t more;
    if (!local)
      conf_ok(conf_evd_wait(s.aff, CONF_TIMEOUT_US, &ev, &more)); /* the responder is told */
  }
  printf("ok\n");
  fflush(stdout);
  return 0;
}

static gboolean
has_narrow_rmr(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  gboolean ok = (info->rmr_types_supported & IT_RMR_TYPE_NARROW) && info->post_send_unlink_remote_support;
  it_ia_info_free(info);
  return ok;
}

/* A narrow window over part of a region, linked through the cross-process
 * EP; the parent writes and reads through it, then unlinks it with a Send
 * with Invalidate, which the receive completion names. */
static int
role_window(void)
{
  conf_side_t s;
  conf_buf_t rb;
  role_accept(&s, &rb, FALSE);
  xproc_peer_accessed(&rb);
  if (!has_narrow_rmr(&s)) {
    printf("skip\n");
    fflush(stdout);
    conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
    return 0;
  }
  it_rmr_handle_t rmr;
  it_rmr_context_t ctx = 0;
  conf_ok(it_rmr_create20(s.pz, IT_RMR_TYPE_NARROW, &rmr));
  conf_ok(it_rmr_link(rmr, rb.lmr, rb.data + WIN_OFF, WIN_LEN, IT_ADDR_MODE_ABSOLUTE,
                      IT_PRIV_REMOTE_READ | IT_PRIV_REMOTE_WRITE, s.ep, 5, IT_COMPLETION_FLAG, &ctx));
  conf_dto(s.dto, IT_RMR_LINK_CMPL_EVENT, IT_DTO_SUCCESS, 5);
  printf("win %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", (guint64) (uintptr_t) (rb.data + WIN_OFF),
         (guint64) ctx);
  fflush(stdout);
  it_dto_cmpl_event_t rc = conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  g_assert_cmpuint(rc.transferred_length, ==, 128);
  g_assert_cmphex((guint64) (uintptr_t) rc.unlinked_mr_handle, ==, (guint64) (uintptr_t) rmr);
  conf_buf_check(&rb, 0, 128, 22);
  conf_buf_check(&rb, WIN_OFF, WIN_LEN, 21);
  it_rmr_param_t q;
  conf_ok(it_rmr_query(rmr, IT_RMR_PARAM_LINKED, &q));
  g_assert_cmpint(q.linked, ==, IT_FALSE);
  printf("unlinked\n");
  fflush(stdout);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT); /* the parent's write through the dead key */
  conf_buf_check(&rb, WIN_OFF, WIN_LEN, 21);
  conf_buf_check_guards(&rb);
  printf("ok\n");
  fflush(stdout);
  return 0;
}

/* An 8-byte word (at offset 8 of a 24-byte region) for the parent's
 * atomics, which this process executes while its application thread is
 * blocked reading "check V" (or "broken V": the parent's last atomic was
 * refused, and the connection breaks): the word must then hold V, its
 * neighbours 0.  Where this interface has no atomics, the EP and region do
 * not allow them. */
static int
role_atomic(void)
{
  conf_side_t s;
  conf_buf_t rb;
  it_ep_attributes_t attr;
  gboolean at = conf_probe_atomics(&attr, NULL);
  role_accept_attr(&s, &attr, NULL, TRUE);
  conf_buf_new(&s, &rb, 24, IT_PRIV_LOCAL | (at ? IT_PRIV_ATOMIC : IT_PRIV_REMOTE), IT_ADDR_MODE_ABSOLUTE);
  xproc_peer_accessed(&rb);
  guint64 v = WORD0;
  memcpy(rb.data + 8, &v, 8);
  printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u\n", (guint64) (uintptr_t) (rb.data + 8),
         (guint64) rb.ctx, 8u);
  fflush(stdout);
  g_autofree char *l = conf_hear(0, LINE_TIMEOUT_MS * 3);
  guint64 want = 0;
  char verb[8] = "";
  g_assert_nonnull(l);
  g_assert_cmpint(sscanf(l, "%7s %" G_GUINT64_FORMAT, verb, &want), ==, 2);
  memcpy(&v, rb.data + 8, 8);
  g_assert_cmpuint(v, ==, want);
  for (int i = 0; i < 8; i++)
    g_assert_cmpuint(rb.data[i] | rb.data[16 + i], ==, 0);
  conf_buf_check_guards(&rb);
  printf("ok\n");
  fflush(stdout);
  conf_wait(s.cm, strcmp(verb, "broken") == 0 ? IT_CM_MSG_CONN_BROKEN_EVENT
                                              : IT_CM_MSG_CONN_DISCONNECT_EVENT);
  return 0;
}

/* ---- datagrams ---- */

/* A UD EP with Q_Key @qkey on a side opened by conf_side_open, with
 * UD_N receives of UD_GRH + UD_LEN bytes posted from @rb; FALSE (nothing
 * made) where the IA has no UD service. */
gboolean
xproc_ud_open(conf_side_t *s, uint32_t qkey, it_ep_handle_t *ep, it_remote_ep_info_t *info, conf_buf_t *rb)
{
  it_ia_info_t *ii = conf_info(s);
  gboolean ud = (ii->supported_service_types & IT_UD_SERVICE) != 0;
  it_ia_info_free(ii);
  if (!ud)
    return FALSE;
  it_ep_attributes_t a;
  memset(&a, 0, sizeof(a));
  a.max_dto_payload_size = UD_LEN;
  a.max_request_dtos = UD_N * 2;
  a.max_recv_dtos = UD_N * 2;
  a.max_send_segments = 1;
  a.max_recv_segments = 1;
  a.srv.ud.ep_info.ud_ep_key = qkey;
  conf_ok(it_ep_ud_create(s->pz, s->dto, s->dto, &a, 0, ep));
  it_ep_param_t p;
  conf_ok(it_ep_query(*ep, IT_EP_PARAM_ALL, &p));
  *info = p.attr.srv.ud.ep_info;
  conf_buf_new(s, rb, (size_t) UD_N * (UD_GRH + UD_LEN), IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (int i = 0; i < UD_N; i++) {
    it_lmr_triplet_t t = conf_seg(rb, (size_t) i * (UD_GRH + UD_LEN), UD_GRH + UD_LEN);
    conf_ok(it_post_recvfrom(*ep, &t, 1, 100 + i, IT_COMPLETION_FLAG));
  }
  return TRUE;
}

/* Take UD_N receive completions on @ep from the EP @from: each holds one
 * of the seeds @seed0 .. @seed0 + UD_N - 1 after its GRH, each seed once.
 * The last one's completion in @last. */
void
xproc_ud_take(conf_side_t *s, it_ep_handle_t ep, const conf_buf_t *rb, it_ud_ep_id_t from,
              unsigned seed0, it_event_t *last)
{
  gboolean seen[UD_N] = { FALSE };
  for (int i = 0; i < UD_N; i++) {
    it_event_t ev = conf_wait(s->dto, IT_DTO_UD_RECV_CMPL_EVENT);
    const it_all_dto_cmpl_event_t *d = &ev.all_dto_cmpl;
    g_assert_cmpint(d->dto_status, ==, IT_DTO_SUCCESS);
    g_assert_true(d->ep == ep);
    g_assert_cmpuint(d->ud_ep_id, ==, from);
    g_assert_true(d->flags & IT_UD_IB_GRH_PRESENT);
    g_assert_cmpuint(d->transferred_length, ==, UD_GRH + UD_LEN);
    g_assert_cmpuint(d->cookie, >=, 100);
    g_assert_cmpuint(d->cookie, <, 100 + UD_N);
    conf_buf_t chk = *rb;
    chk.data = rb->data + (size_t) (d->cookie - 100) * (UD_GRH + UD_LEN) + UD_GRH;
    unsigned k = 0;  /* conf_buf_fill's first byte says the seed */
    while (k < UD_N && chk.data[0] != (unsigned char) ((seed0 + k) * 7 + 1))
      k++;
    g_assert_cmpuint(k, <, UD_N);
    g_assert_false(seen[k]);
    seen[k] = TRUE;
    conf_buf_check(&chk, 0, UD_LEN, seed0 + k);
    *last = ev;
  }
}

/* Send UD_N datagrams of seeds @seed0 .. from @sb to @dst; each send
 * completes successfully. */
void
xproc_ud_send_all(conf_side_t *s, it_ep_handle_t ep, conf_buf_t *sb,
                  const it_dg_remote_ep_addr_t *dst, unsigned seed0)
{
  for (int i = 0; i < UD_N; i++) {
    conf_buf_t piece = *sb;
    piece.data = sb->data + (size_t) i * UD_LEN;
    piece.len = UD_LEN;
    conf_buf_fill(&piece, seed0 + (unsigned) i);
  }
  for (int i = 0; i < UD_N; i++) {
    it_lmr_triplet_t t = conf_seg(sb, (size_t) i * UD_LEN, UD_LEN);
    conf_ok(it_post_sendto(ep, &t, 1, 200 + i, IT_COMPLETION_FLAG, dst));
  }
  for (int i = 0; i < UD_N; i++)
    conf_dto(s->dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 200 + i);
}

/* Listen, answer the parent's UD service request with our UD EP, take its
 * datagrams and echo each one's payload back to the address and EP its
 * completion names (seeds + 50). */
static int
role_ud(void)
{
  conf_side_t s;
  conf_buf_t rb, sb;
  it_ep_handle_t ep;
  it_remote_ep_info_t info;
  conf_side_open(&s, NULL);
  if (!xproc_ud_open(&s, UD_QKEY_CHILD, &ep, &info, &rb)) {
    printf("skip\n");
    fflush(stdout);
    return 0;
  }
  conf_child_listen(&s);
  it_event_t ev = conf_wait(s.req, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
  g_assert_true(ev.ud_svc_request.private_data_present);
  g_assert_cmpmem(ev.ud_svc_request.private_data, sizeof(xproc_ud_req_pd), xproc_ud_req_pd, sizeof(xproc_ud_req_pd));
  conf_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id, IT_UD_SVC_EP_INFO_VALID, info, xproc_ud_rep_pd,
                              sizeof(xproc_ud_rep_pd)));
  g_autofree char *from = conf_hear(0, LINE_TIMEOUT_MS);
  guint64 parent_id = 0;
  g_assert_nonnull(from);
  g_assert_cmpint(sscanf(from, "from %" G_GUINT64_FORMAT, &parent_id), ==, 1);
  it_event_t last;
  xproc_ud_take(&s, ep, &rb, (it_ud_ep_id_t) parent_id, 10, &last);
  it_dg_remote_ep_addr_t to = conf_ud_reply_to(s.pz, &last.all_dto_cmpl, UD_QKEY_PARENT);
  conf_buf_new(&s, &sb, (size_t) UD_N * UD_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  xproc_ud_send_all(&s, ep, &sb, &to, 60);
  conf_buf_check_guards(&rb);
  printf("ok\n");
  fflush(stdout);
  g_autofree char *bye = conf_hear(0, LINE_TIMEOUT_MS);
  g_assert_cmpstr(bye, ==, "bye");
  conf_ok(it_ep_free(ep));
  conf_buf_free(&rb);
  conf_buf_free(&sb);
  conf_side_close(&s);
  return 0;
}

/* ---- protection zones across processes ---- */

#define PZ_LEN 4096
#define PZ_TOUCHED 128  /* the parent's good requests stay below this offset */

/* Two regions for the parent: one in the EP's PZ, then one in a second PZ
 * of this IA (in a sealable memfd with @memfd), each said as "mr ADDR CTX
 * LEN".  The parent's accesses to the second must be refused.  On "check
 * remote" or "check local" (the parent's request failed at the parent):
 * the second region is whole, the first past PZ_TOUCHED, the guards of
 * both; the connection breaks (and, remote, an affiliated event names the
 * EP); then "ok". */
static int
role_pz(gboolean memfd)
{
  conf_side_t s;
  it_ep_attributes_t attr;
  gboolean at = conf_probe_atomics(&attr, NULL);
  role_accept_attr(&s, &attr, NULL, TRUE);
  it_mem_priv_t privs = IT_PRIV_LOCAL | IT_PRIV_REMOTE | (at ? IT_PRIV_ATOMIC : 0);
  conf_buf_t rb, fb;
  conf_buf_new(&s, &rb, PZ_LEN, privs, IT_ADDR_MODE_ABSOLUTE);
  conf_side_t other = s;
  conf_ok(it_pz_create(s.ia, &other.pz));
  if (memfd)
    memfd_buf_new(&other, &fb, PZ_LEN, privs);
  else
    conf_buf_new(&other, &fb, PZ_LEN, privs, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&rb, 5);
  conf_buf_fill(&fb, 6);
  xproc_peer_accessed(&rb);
  xproc_peer_accessed(&fb);
  g_autofree unsigned char *rb_was = g_memdup2(rb.data, rb.len);
  g_autofree unsigned char *fb_was = g_memdup2(fb.data, fb.len);
  printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u\n", (guint64) (uintptr_t) rb.data,
         (guint64) rb.ctx, (unsigned) PZ_LEN);
  printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u\n", (guint64) (uintptr_t) fb.data,
         (guint64) fb.ctx, (unsigned) PZ_LEN);
  fflush(stdout);
  g_autofree char *l = conf_hear(0, LINE_TIMEOUT_MS * 3);
  g_assert_nonnull(l);
  g_assert_true(g_str_has_prefix(l, "check "));
  g_assert_cmpmem(fb.data, fb.len, fb_was, fb.len);
  g_assert_cmpmem(rb.data + PZ_TOUCHED, rb.len - PZ_TOUCHED, rb_was + PZ_TOUCHED, rb.len - PZ_TOUCHED);
  conf_buf_check_guards(&rb);
  conf_buf_check_guards(&fb);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  if (strcmp(l, "check remote") == 0) {
    it_event_t ev;
    size_t more;
    conf_ok(conf_evd_wait(s.aff, CONF_TIMEOUT_US, &ev, &more)); /* the responder is told */
    g_assert_true(ev.aff_async.cause.ep == s.ep);
  }
  printf("ok\n");
  fflush(stdout);
  return 0;
}

/* One connection after another for the parent's key checks: on "next",
 * accept the next connection on a fresh EP, register a fresh region
 * (private, or in a sealable memfd with @memfd) filled with seed 5 and say
 * it ("mr ADDR CTX LEN"); on "check", verify it past PZ_TOUCHED and its
 * guards, wait for the connection to break and the affiliated event, say
 * "ok".  "bye" ends. */
static int
role_keys(gboolean memfd)
{
  conf_side_t s;
  conf_side_open(&s, NULL);
  conf_child_listen(&s);
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  for (;;) {
    g_autofree char *cmd = conf_hear(0, LINE_TIMEOUT_MS * 3);
    g_assert_nonnull(cmd);
    if (strcmp(cmd, "bye") == 0)
      break;
    g_assert_cmpstr(cmd, ==, "next");
    it_ep_handle_t ep;
    conf_ok(it_ep_rc_create(s.pz, s.dto, s.dto, s.cm, IT_EP_NO_FLAG, &attr, &ep));
    it_event_t ev = conf_wait(s.req, IT_CM_REQ_CONN_REQUEST_EVENT);
    conf_ok(it_ep_accept(ep, ev.conn_req.cn_est_id, xproc_apd, sizeof(xproc_apd)));
    conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
    conf_buf_t rb;
    if (memfd)
      memfd_buf_new(&s, &rb, PZ_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE);
    else
      conf_buf_new(&s, &rb, PZ_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_fill(&rb, 5);
    xproc_peer_accessed(&rb);
    g_autofree unsigned char *was = g_memdup2(rb.data, rb.len);
    printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u\n", (guint64) (uintptr_t) rb.data,
           (guint64) rb.ctx, (unsigned) PZ_LEN);
    fflush(stdout);
    g_autofree char *chk = conf_hear(0, LINE_TIMEOUT_MS * 3);
    g_assert_cmpstr(chk, ==, "check");
    g_assert_cmpmem(rb.data + PZ_TOUCHED, rb.len - PZ_TOUCHED, was + PZ_TOUCHED, rb.len - PZ_TOUCHED);
    conf_buf_check_guards(&rb);
    ev = conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
    g_assert_true(ev.conn.ep == ep);
    size_t more;
    conf_ok(conf_evd_wait(s.aff, CONF_TIMEOUT_US, &ev, &more));
    g_assert_true(ev.aff_async.cause.ep == ep);
    conf_ok(it_lmr_free(rb.lmr));
    rb.lmr = IT_NULL_HANDLE;
    if (!memfd)
      conf_buf_free(&rb); /* a memfd mapping stays, as role_target's */
    conf_ok(it_ep_free(ep));
    printf("ok\n");
    fflush(stdout);
  }
  return 0;
}

/* ---- receive lengths and the EP's RDMA rights ---- */

/* The layout of a "recvlen" child's buffer for messages of @n bytes: the
 * first receive takes [0, n); the second [2n, 2n + n/2) and [3n, 3n + n/2);
 * the third, which the parent overruns by one byte, [4n, 5n), or with two
 * segments [4n, 4n + n/2) and [5n, 5n + n/2). */
void
xproc_recvlen_params(size_t *n, int *sges)
{
  const char *p = g_getenv("CONF_XPROC_RECV");
  unsigned long a = 64;
  int b = 1;
  if (p != NULL)
    g_assert_cmpint(sscanf(p, "%lu %d", &a, &b), ==, 2);
  *n = a;
  *sges = b;
}

/* Three receives (xproc_recvlen_params), "ready"; the first two complete with
 * the parent's @n bytes scattered exactly into their segments; the third
 * exactly once, IT_DTO_ERR_LOCAL_LENGTH, nothing written outside its
 * segments; the connection breaks with IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR;
 * "ok". */
static int
role_recvlen(void)
{
  conf_side_t s;
  size_t n;
  int sges;
  xproc_recvlen_params(&n, &sges);
  role_accept(&s, NULL, TRUE);
  conf_buf_t rb;
  conf_buf_new(&s, &rb, 7 * n, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&rb, 5);
  g_autofree unsigned char *was = g_memdup2(rb.data, rb.len);
  it_lmr_triplet_t r1 = conf_seg(&rb, 0, n);
  it_lmr_triplet_t r2[2] = { conf_seg(&rb, 2 * n, n / 2), conf_seg(&rb, 3 * n, n - n / 2) };
  it_lmr_triplet_t r3[2] = { conf_seg(&rb, 4 * n, sges == 1 ? n : n / 2), conf_seg(&rb, 5 * n, n - n / 2) };
  conf_ok(it_post_recv(s.ep, &r1, 1, 1, IT_COMPLETION_FLAG));
  conf_ok(it_post_recv(s.ep, r2, 2, 2, IT_COMPLETION_FLAG));
  conf_ok(it_post_recv(s.ep, r3, (size_t) sges, 3, IT_COMPLETION_FLAG));
  printf("ready\n");
  fflush(stdout);
  it_dto_cmpl_event_t e = conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  g_assert_cmpuint(e.transferred_length, ==, n);
  e = conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  g_assert_cmpuint(e.transferred_length, ==, n);
  conf_dto(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_ERR_LOCAL_LENGTH, 3);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  it_event_t ev = conf_wait(s.aff, IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR);
  g_assert_true(ev.aff_async.cause.ep == s.ep);
  conf_assert_empty(s.dto); /* the failed receive completed once */
  /* The parent's bytes (conf_buf_fill seed 9) where the receives put
   * them, the old ones everywhere else but the third receive's segments. */
  conf_buf_check(&rb, 0, n, 9);
  g_assert_cmpmem(rb.data + n, n, was + n, n);
  conf_buf_check(&rb, 2 * n, n / 2, 9);
  g_assert_cmpmem(rb.data + 2 * n + n / 2, n - n / 2, was + 2 * n + n / 2, n - n / 2);
  for (size_t i = 0; i < n - n / 2; i++)
    g_assert_cmpuint(rb.data[3 * n + i], ==, (unsigned char) ((n / 2 + i) * 31 + 9 * 7 + 1));
  size_t end3 = sges == 1 ? 5 * n : 4 * n + n / 2;
  g_assert_cmpmem(rb.data + end3, 5 * n - end3, was + end3, 5 * n - end3);
  size_t past = sges == 1 ? 5 * n : 6 * n - n / 2;
  g_assert_cmpmem(rb.data + past, rb.len - past, was + past, rb.len - past);
  conf_buf_check_guards(&rb);
  printf("ok\n");
  fflush(stdout);
  return 0;
}

/* CONF_XPROC_RIGHTS "w" or "r": the EP accepts with incoming RDMA Writes
 * (or Reads) disabled; a region (private, or a sealable memfd with
 * @memfd) with every remote right, filled with seed 5, said as "mr ADDR
 * CTX LEN"; on "check": unchanged past PZ_TOUCHED, guards intact, the
 * connection broken with an affiliated event naming the EP; "ok". */
static int
role_rights(gboolean memfd)
{
  conf_side_t s;
  it_ep_attributes_t attr;
  conf_default_attr(&attr);
  gboolean no_write = g_strcmp0(g_getenv("CONF_XPROC_RIGHTS"), "w") == 0;
  attr.srv.rc.rdma_write_enable = no_write ? IT_FALSE : IT_TRUE;
  attr.srv.rc.rdma_read_enable = no_write ? IT_TRUE : IT_FALSE;
  role_accept_attr(&s, &attr, NULL, TRUE);
  conf_buf_t rb;
  if (memfd)
    memfd_buf_new(&s, &rb, PZ_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE);
  else
    conf_buf_new(&s, &rb, PZ_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_fill(&rb, 5);
  xproc_peer_accessed(&rb);
  g_autofree unsigned char *was = g_memdup2(rb.data, rb.len);
  printf("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u\n", (guint64) (uintptr_t) rb.data,
         (guint64) rb.ctx, (unsigned) PZ_LEN);
  fflush(stdout);
  g_autofree char *l = conf_hear(0, LINE_TIMEOUT_MS * 3);
  g_assert_cmpstr(l, ==, "check");
  g_assert_cmpmem(rb.data + PZ_TOUCHED, rb.len - PZ_TOUCHED, was + PZ_TOUCHED, rb.len - PZ_TOUCHED);
  conf_buf_check_guards(&rb);
  conf_wait(s.cm, IT_CM_MSG_CONN_BROKEN_EVENT);
  it_event_t ev;
  size_t more;
  conf_ok(conf_evd_wait(s.aff, CONF_TIMEOUT_US, &ev, &more)); /* the responder is told */
  g_assert_true(ev.aff_async.cause.ep == s.ep);
  printf("ok\n");
  fflush(stdout);
  return 0;
}

static int
role_sleeper(void)
{
  conf_side_t s;
  role_accept(&s, NULL, TRUE);
  printf("ready\n");
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) /* killed here */
    ;
  return 0;
}

/* ---- wait-race: bursts of sends to a parent whose threads race ---- */

unsigned char
xproc_burst_byte(unsigned round, unsigned k, size_t j)
{
  return (unsigned char) (round * 29 + k * 131 + j * 7 + 3);
}

void
xproc_burst_send(it_ep_handle_t ep, conf_buf_t *b, unsigned round, unsigned k, size_t len)
{
  unsigned char *m = b->data + (size_t) k * len;
  for (size_t j = 0; j < len; j++)
    m[j] = xproc_burst_byte(round, k, j);
  it_lmr_triplet_t t = conf_seg(b, (size_t) k * len, len);
  conf_ok(it_post_send(ep, &t, 1, k, IT_COMPLETION_FLAG));
}

/* The sending child: "burst ROUND GAP_US" sends BURST_N messages of
 * BURST_LEN bytes (message k of round ROUND), a random pause of up to
 * GAP_US between two, every send completion reaped; then "sent ROUND".
 * "quit": wait for the parent's disconnect. */
static int
role_burst(void)
{
  conf_side_t s;
  conf_buf_t b;
  role_accept(&s, NULL, TRUE);
  conf_buf_new(&s, &b, (size_t) BURST_N * BURST_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  GRand *rnd = g_rand_new_with_seed(27);
  for (;;) {
    g_autofree char *l = conf_hear(0, 60000);
    unsigned round = 0, gap = 0;
    if (l == NULL || strcmp(l, "quit") == 0)
      break;
    g_assert_cmpint(sscanf(l, "burst %u %u", &round, &gap), ==, 2);
    unsigned done = 0;
    for (unsigned k = 0; k < BURST_N; k++) {
      xproc_burst_send(s.ep, &b, round, k, BURST_LEN);
      if (gap > 0)
        g_usleep(g_rand_int_range(rnd, 0, (gint32) gap + 1));
      it_event_t ev;
      while (it_evd_dequeue(s.dto, &ev) == IT_SUCCESS) {
        g_assert_cmpint(ev.event_number, ==, IT_DTO_SEND_CMPL_EVENT);
        g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
        done++;
      }
    }
    while (done < BURST_N) {
      conf_dto(s.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, done);
      done++;
    }
    printf("sent %u\n", round);
    fflush(stdout);
  }
  g_rand_free(rnd);
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  return 0;
}

/* ---- acks: a receiver whose acknowledgements wake a sleeper ---- */

/* The receiving child of sleep-beside-acks: ACKS_B receives posted, then
 * "rounds N" from the parent; each round takes ACKS_B messages of ACKS_LEN bytes (message k of round r),
 * checks them, posts them again and answers with an 8-byte Send that
 * names the round.  The parent, asleep for that answer, is woken on the
 * way by this side's acknowledgements of its Sends, which complete nothing
 * it waits for. */
static int
role_acks(void)
{
  conf_side_t s;
  conf_buf_t b;
  role_accept(&s, NULL, TRUE);
  conf_buf_new(&s, &b, (size_t) ACKS_B * ACKS_LEN + 64, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  for (unsigned k = 0; k < ACKS_B; k++) {
    it_lmr_triplet_t t = conf_seg(&b, (size_t) k * ACKS_LEN, ACKS_LEN);
    conf_ok(it_post_recv(s.ep, &t, 1, k, IT_COMPLETION_FLAG));
  }
  printf("ready\n");
  fflush(stdout);
  g_autofree char *l = conf_hear(0, LINE_TIMEOUT_MS);
  unsigned rounds = 0;
  g_assert_true(l != NULL && sscanf(l, "rounds %u", &rounds) == 1);
  guint64 *answer = (guint64 *) (void *) (b.data + (size_t) ACKS_B * ACKS_LEN);
  unsigned r = 0, k = 0, answered = 0;
  while (answered < rounds) {
    it_event_t ev;
    it_status_t st = conf_evd_wait(s.dto, CONF_TIMEOUT_US, &ev, NULL);
    if (st != IT_SUCCESS)
      g_error("acks child: no completion within 5 s in round %u (%u of %u messages, %u answers "
              "complete): %s", r, k, ACKS_B, answered, itx_status_name(st));
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
    if (ev.event_number == IT_DTO_SEND_CMPL_EVENT) {
      g_assert_cmpuint(ev.dto_cmpl.cookie, ==, 1000 + answered);
      answered++;
    } else {
      g_assert_cmpint(ev.event_number, ==, IT_DTO_RC_RECV_CMPL_EVENT);
      g_assert_cmpuint(ev.dto_cmpl.cookie, ==, k);  /* in order */
      g_assert_cmpuint(ev.dto_cmpl.transferred_length, ==, ACKS_LEN);
      const unsigned char *m = b.data + (size_t) k * ACKS_LEN;
      for (size_t j = 0; j < ACKS_LEN; j++)
        if (m[j] != xproc_burst_byte(r, k, j))
          g_error("acks child: byte %zu of message %u of round %u differs", j, k, r);
      it_lmr_triplet_t t = conf_seg(&b, (size_t) k * ACKS_LEN, ACKS_LEN);
      conf_ok(it_post_recv(s.ep, &t, 1, k, IT_COMPLETION_FLAG));
      k++;
    }
    /* The answer's slot is free once the last answer completed; the
     * parent sends the next round only after it. */
    if (k == ACKS_B && answered == r) {
      *answer = r;
      it_lmr_triplet_t a = conf_seg(&b, (size_t) ACKS_B * ACKS_LEN, sizeof(*answer));
      conf_ok(it_post_send(s.ep, &a, 1, 1000 + r, IT_COMPLETION_FLAG));
      r++;
      k = 0;
    }
  }
  conf_wait(s.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_buf_check_guards(&b);
  return 0;
}

/* ---- the role by its name ---- */

int
xproc_child_main(const char *role)
{
  if (strcmp(role, "echo") == 0)
    return role_echo();
  if (strcmp(role, "target") == 0)
    return role_target(FALSE);
  if (strcmp(role, "mtarget") == 0)
    return role_target(TRUE);
  if (strcmp(role, "window") == 0)
    return role_window();
  if (strcmp(role, "sleeper") == 0)
    return role_sleeper();
  if (strcmp(role, "atomic") == 0)
    return role_atomic();
  if (strcmp(role, "stream") == 0)
    return role_stream();
  if (strcmp(role, "burst") == 0)
    return role_burst();
  if (strcmp(role, "acks") == 0)
    return role_acks();
  if (strcmp(role, "ud") == 0)
    return role_ud();
  if (strcmp(role, "pz") == 0 || strcmp(role, "pzm") == 0)
    return role_pz(strcmp(role, "pzm") == 0);
  if (strcmp(role, "keys") == 0 || strcmp(role, "keysm") == 0)
    return role_keys(strcmp(role, "keysm") == 0);
  if (strcmp(role, "recvlen") == 0)
    return role_recvlen();
  if (strcmp(role, "rights") == 0 || strcmp(role, "rightsm") == 0)
    return role_rights(strcmp(role, "rightsm") == 0);
  return 2;
}
