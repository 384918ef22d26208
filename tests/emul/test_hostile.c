/*
 * vp/emul: a hostile peer process cannot hurt the target (issue 56, point
 * 2).  This program is the target: it opens emul0 through the public
 * IT-API, listens, and runs tests/emul/hostile-peer (hostile_peer.c and
 * hostile_cases.c: a process that speaks the cross-process protocol of
 * vp/emul/emul_ring.h itself, with no libitapi) with one case of
 * misbehaviour each: a connection segment or a
 * descriptor it must refuse, a peer that proves nothing or stalls, socket
 * messages and ring frames that break the protocol's rules, RDMA requests
 * with keys and addresses it must refuse, floods, frames rewritten after
 * they were published.  Each case asserts, in its row of the table below:
 *  - the end: the request never reaches the application (no
 *    IT_CM_REQ_CONN_REQUEST_EVENT), or the connection breaks
 *    (IT_CM_MSG_CONN_BROKEN_EVENT) and every request posted on it
 *    completes once, IT_DTO_ERR_FLUSHED but for the receives the peer's
 *    Sends filled;
 *  - the target's MESSAGE line (log domain itapi-vp-emul) naming what the
 *    peer sent, or, for an RDMA request it refused, the BREAK naming that
 *    request and the responder's affiliated event;
 *  - what the peer saw (its "check" lines: the errno of each attack on the
 *    descriptors it was given, the descriptors given);
 *  - the guard bytes around every buffer of the target, and its memory
 *    (the peak RSS of a flood grows by less than RSS_MAX);
 *  - and then, with the target alive, another connection of it moving
 *    verified data: an in-process pair, and a child process running the
 *    real library (this program, --good PORT IA) connected through the
 *    same listener.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "conf.h"

#define LINE_MS 30000
#define BUF_LEN 65536         /* the buffer the peer may reach: remote read and write */
#define RECV_LEN 4096
#define RW_LEN 64             /* the peer's Sends of the ring cases */
#define GOOD_LEN 20000        /* the good child's Sends: past X_INLINE_MAX */
#define QUIET_US 300000       /* a case's "nothing happens" */
#define RSS_MAX (64 << 20)
#define GOOD_WRITE 0x5c       /* the 64 bytes an RDMA case writes first (hostile_cases.c, case_rdma) */
#define SEND_COOKIE 100
#define READ_COOKIE 200
#define READ_LEN 100
#define LOG_DOMAIN "itapi-vp-emul"

typedef struct run run_t;

typedef enum {
  END_UNRAISED,  /* the request never reaches the application */
  END_BROKEN,    /* accepted, then broken */
  END_AT_EXIT,   /* accepted; broken when the silent peer exits */
  END_FREED,     /* accepted; the target frees the endpoint itself (a middle) */
  END_TIMED_OUT, /* accepted; broken by the target's timeout, the oldest Send failed with a
                  * transport error (a middle waits for it) */
} end_t;

/* Requests the target posts on the connection once it is established. */
enum { POST_SEND = 1, POST_READ = 2 };

typedef struct {
  const char *path;
  const char *peer;          /* hostile_cases.c's case */
  const char *ia;            /* the target's device (NULL: emul0) */
  const char *summary;
  end_t end;
  /* What the target's line says the peer sent (a piece of it); NULL: no
   * line asked for. */
  const char *said;
  /* "name=value ..." the peer must report. */
  const char *checks;
  unsigned recvs;            /* receives posted before the accept */
  unsigned posts;            /* POST_* */
  unsigned delivered;        /* receives the peer's Sends fill: RW_LEN bytes of fill + k each */
  unsigned char fill;
  it_event_type_t aff;       /* the target's affiliated event (0: not looked at) */
  unsigned landed;           /* bytes the peer writes (GOOD_WRITE) at the buffer's start */
  gboolean flood;            /* RSS: the peak grows by less than RSS_MAX */
  gboolean any_status;       /* a receive may complete filled, too short or flushed */
  gboolean trust_off;        /* the listener made under ITAPI_EMUL_TRUST=0 */
  const char *timeout;       /* ITAPI_EMUL_TIMEOUT_MS as the listener is made (NULL: 0, none) */
  void (*middle)(run_t *r);  /* steps of the case's own once the peer has its go line */
} hcase_t;

struct run {
  const hcase_t *c;
  conf_side_t t;             /* the target: IA, PZ, EVDs, the hostile connection's EP */
  it_listen_handle_t lh;
  it_conn_qual_t qual;
  conf_buf_t buf, rbuf, sbuf, sink, local, other;
  it_pz_handle_t pz2;        /* the foreign key's */
  it_rmr_context_t stale;
  conf_child_t peer;
  gboolean peer_gone;        /* killed: no lines, no exit status */
  unsigned posted;
  GArray *dtos;              /* it_dto_cmpl_event_t taken */
  GHashTable *checks;        /* what the peer said */
};

static const char *self;

static const char *
target_ia(const hcase_t *c)
{
  return c->ia != NULL ? c->ia : "emul0";
}

/* ---- the target's log ---- */

static GMutex log_mutex;
static GPtrArray *log_lines;  /* the MESSAGE lines of LOG_DOMAIN */

static GLogWriterOutput
log_writer(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  const char *domain = NULL, *msg = NULL;
  for (gsize i = 0; i < n; i++) {
    if (g_strcmp0(fields[i].key, "GLIB_DOMAIN") == 0)
      domain = fields[i].value;
    else if (g_strcmp0(fields[i].key, "MESSAGE") == 0)
      msg = fields[i].value;
  }
  if ((level & G_LOG_LEVEL_MESSAGE) && g_strcmp0(domain, LOG_DOMAIN) == 0 && msg != NULL) {
    g_mutex_lock(&log_mutex);
    g_ptr_array_add(log_lines, g_strdup(msg));
    g_mutex_unlock(&log_mutex);
    return G_LOG_WRITER_HANDLED;
  }
  return g_log_writer_default(level, fields, n, data);
}

/* The target's line that says process @pid broke the protocol and what
 * it sent, within @us (a copy, or NULL). */
static char *
violation_line(pid_t pid, gint64 us)
{
  g_autofree char *who = g_strdup_printf("emul: process %d (uid ", (int) pid);
  g_autofree char *whom = g_strdup_printf(": its connection to process %d is broken", (int) getpid());
  gint64 end = g_get_monotonic_time() + us;
  do {
    char *found = NULL;
    g_mutex_lock(&log_mutex);
    for (guint i = 0; i < log_lines->len && found == NULL; i++) {
      const char *l = g_ptr_array_index(log_lines, i);
      if (g_str_has_prefix(l, who) && strstr(l, whom) != NULL)
        found = g_strdup(l);
    }
    g_mutex_unlock(&log_mutex);
    if (found != NULL)
      return found;
    g_usleep(10000);
  } while (g_get_monotonic_time() < end);
  return NULL;
}

/* ---- checks ---- */

/* @ok, or the test fails saying @what of the case. */
static gboolean
holds(run_t *r, gboolean ok, const char *what)
{
  if (!ok)
    g_error("%s: %s", r->c->path, what);
  return TRUE;
}

/* ---- the peer's lines ---- */

/* Read the peer's lines until @want, keeping its checks; FALSE at its end
 * or after @ms. */
static gboolean
hear_peer(run_t *r, const char *want, int ms)
{
  for (;;) {
    g_autofree char *l = conf_hear(r->peer.from, ms);
    if (l == NULL)
      return FALSE;
    if (g_str_has_prefix(l, "check ")) {
      char *eq = strchr(l + 6, '=');
      if (eq != NULL)
        g_hash_table_insert(r->checks, g_strndup(l + 6, (gsize) (eq - l - 6)), g_strdup(eq + 1));
      continue;
    }
    if (strcmp(l, want) == 0)
      return TRUE;
    g_test_message("hostile peer: %s", l);
  }
}

static void
hear_peer_must(run_t *r, const char *want)
{
  if (!hear_peer(r, want, LINE_MS))
    g_error("the hostile peer (%d) did not say \"%s\" (its stderr: %s)", (int) r->peer.pid, want,
            r->peer.err);
}

/* ---- completions ---- */

static gboolean
take_dto(run_t *r, gint64 us)
{
  it_event_t ev;
  gint64 end = g_get_monotonic_time() + us;
  it_status_t st;
  while ((st = it_evd_dequeue(r->t.dto, &ev)) == IT_ERR_QUEUE_EMPTY && g_get_monotonic_time() < end)
    g_usleep(1000);
  if (st != IT_SUCCESS)
    return FALSE;
  g_array_append_val(r->dtos, ev.dto_cmpl);
  return TRUE;
}

/* Receive @d was filled as the peer wrote it: RW_LEN bytes of the case's
 * fill + its cookie. */
static void
check_filled(run_t *r, const it_dto_cmpl_event_t *d)
{
  g_assert_cmpint(d->dto_status, ==, IT_DTO_SUCCESS);
  g_assert_cmpuint(d->transferred_length, ==, RW_LEN);
  g_assert_cmpuint(conf_first_not(r->rbuf.data + d->cookie * RECV_LEN, RW_LEN, r->c->fill + d->cookie), ==,
                   RW_LEN);
}

/* Every request posted on the hostile connection completed once, with the
 * status its case says: flushed, but for the receives the peer filled. */
static void
check_dtos(run_t *r)
{
  const hcase_t *c = r->c;
  while (r->dtos->len < r->posted && take_dto(r, CONF_TIMEOUT_US))
    ;
  g_assert_cmpuint(r->dtos->len, ==, r->posted);
  conf_assert_empty(r->t.dto);  /* once each */
  for (guint i = 0; i < r->dtos->len; i++) {
    const it_dto_cmpl_event_t *d = &g_array_index(r->dtos, it_dto_cmpl_event_t, i);
    for (guint j = 0; j < i; j++)
      g_assert_cmpuint(g_array_index(r->dtos, it_dto_cmpl_event_t, j).cookie, !=, d->cookie);
    if (d->cookie == READ_COOKIE) {
      /* A Read answered with more than it asked for, or with no bytes, did
       * not complete: the answer broke the connection. */
      if (!holds(r, d->dto_status == IT_DTO_ERR_FLUSHED, "the RDMA Read completed from a malformed answer"))
        g_test_message("the Read completed %s with %u bytes (it asked %u)",
                       itx_dto_status_name(d->dto_status), d->transferred_length, READ_LEN);
      continue;
    }
    if (d->cookie < c->recvs && c->any_status) {
      g_test_message("receive %u: %s, %u bytes", (unsigned) d->cookie, itx_dto_status_name(d->dto_status),
                     d->transferred_length);
      g_assert_true(d->dto_status == IT_DTO_SUCCESS || d->dto_status == IT_DTO_ERR_FLUSHED ||
                    d->dto_status == IT_DTO_ERR_LOCAL_LENGTH);
      if (d->dto_status == IT_DTO_SUCCESS)
        check_filled(r, d);
      continue;
    }
    if (d->cookie < c->delivered) {
      check_filled(r, d);
      continue;
    }
    if (c->end == END_TIMED_OUT && d->cookie == SEND_COOKIE) {
      /* The oldest request of a connection that timed out failed, as RDMA's
       * retries exhausted; the others flushed. */
      g_assert_cmpstr(itx_dto_status_name(d->dto_status), ==, itx_dto_status_name(IT_DTO_ERR_TRANSPORT));
      continue;
    }
    if (d->dto_status != IT_DTO_ERR_FLUSHED)
      g_error("%s: request %" G_GUINT64_FORMAT " completed %s, not flushed", c->path, (guint64) d->cookie,
              itx_dto_status_name(d->dto_status));
  }
}

/* ---- the other connections ---- */

/* The child that runs the real library: it connects to @port of
 * interface @ia, sends GOOD_LEN bytes (seed 1), receives as many (seed 2)
 * and checks them. */
static int
good_child(unsigned port, const char *ia)
{
  conf_side_t s;
  conf_side_open_on(&s, ia, NULL);
  conf_buf_t rb, sb;
  conf_buf_new(&s, &rb, GOOD_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&s, &sb, GOOD_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rt = conf_seg(&rb, 0, GOOD_LEN), st = conf_seg(&sb, 0, GOOD_LEN);
  conf_ok(it_post_recv(s.ep, &rt, 1, 1, IT_COMPLETION_FLAG));
  it_conn_qual_t q = { .type = IT_IANA_PORT };
  q.conn_qual.port = htons((uint16_t) port);
  conf_ok(conf_connect(&s, s.ep, &q, IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
  conf_wait(s.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_buf_fill(&sb, 1);
  conf_ok(it_post_send(s.ep, &st, 1, 2, IT_COMPLETION_FLAG));
  for (int n = 0; n < 2; n++) {  /* the Send's and the receive's, in either order */
    it_event_t ev;
    conf_ok(it_evd_wait(s.dto, CONF_TIMEOUT_US, &ev, NULL));
    g_assert_cmpint(ev.dto_cmpl.dto_status, ==, IT_DTO_SUCCESS);
  }
  conf_buf_check(&rb, 0, GOOD_LEN, 2);
  printf("ok\n");
  fflush(stdout);
  g_free(conf_hear(STDIN_FILENO, LINE_MS));  /* "bye" */
  conf_buf_free(&rb);
  conf_buf_free(&sb);
  conf_side_close(&s);
  return 0;
}

/* Another process running the real library connects through the
 * target's listener, and verified data moves both ways. */
static void
good_client(run_t *r)
{
  it_evd_handle_t dto, cm;
  it_ep_handle_t ep;
  it_ep_attributes_t a;
  conf_default_attr(&a);
  conf_ok(it_evd_create(r->t.ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE, &dto,
                        NULL));
  conf_ok(it_evd_create(r->t.ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE, &cm,
                        NULL));
  conf_ok(it_ep_rc_create(r->t.pz, dto, dto, cm, IT_EP_NO_FLAG, &a, &ep));
  conf_buf_t rb, sb;
  conf_buf_new(&r->t, &rb, GOOD_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&r->t, &sb, GOOD_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rt = conf_seg(&rb, 0, GOOD_LEN), st = conf_seg(&sb, 0, GOOD_LEN);
  conf_ok(it_post_recv(ep, &rt, 1, 1, IT_COMPLETION_FLAG));
  g_autofree char *port = g_strdup_printf("%u", (unsigned) ntohs(r->qual.conn_qual.port));
  const char *args[] = { "--good", port, target_ia(r->c), NULL };
  conf_child_t c = conf_child_spawn(self, args, "hostile-good", NULL, NULL);
  it_event_t ev = conf_wait(r->t.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  conf_dto(dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_buf_check(&rb, 0, GOOD_LEN, 1);
  conf_buf_fill(&sb, 2);
  conf_ok(it_post_send(ep, &st, 1, 2, IT_COMPLETION_FLAG));
  conf_dto(dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  g_autofree char *ok = conf_hear(c.from, LINE_MS);
  g_assert_cmpstr(ok, ==, "ok");
  conf_say(c.to, "bye\n");
  conf_child_reap(&c);
  conf_ok(it_ep_free(ep));
  conf_buf_free(&rb);
  conf_buf_free(&sb);
  conf_ok(it_evd_free(dto));
  conf_ok(it_evd_free(cm));
}

/* An in-process pair of the target moves verified data too. */
static void
good_pair(void)
{
  conf_pair_t p;
  conf_pair_open(&p);
  conf_buf_t rb, sb;
  conf_buf_new(&p.p, &rb, RECV_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p.a, &sb, RECV_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rt = conf_seg(&rb, 0, RECV_LEN), st = conf_seg(&sb, 0, RECV_LEN);
  conf_ok(it_post_recv(p.p.ep, &rt, 1, 1, IT_COMPLETION_FLAG));
  conf_pair_connect(&p, NULL, 0, NULL, 0);
  conf_buf_fill(&sb, 3);
  conf_ok(it_post_send(p.a.ep, &st, 1, 2, IT_COMPLETION_FLAG));
  conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
  conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
  conf_buf_check(&rb, 0, RECV_LEN, 3);
  conf_buf_free(&rb);
  conf_buf_free(&sb);
  conf_pair_close(&p);
}

/* ---- a case ---- */

static void
run_open(run_t *r)
{
  it_ep_attributes_t a;
  conf_default_attr(&a);
  a.max_recv_dtos = MAX(a.max_recv_dtos, 32);
  conf_side_open_on(&r->t, target_ia(r->c), &a);
  r->qual.type = IT_IANA_PORT;
  if (r->c->trust_off)
    g_setenv("ITAPI_EMUL_TRUST", "0", TRUE);
  /* Read as the listener is made (emul_ring_listen), as the one above. */
  g_setenv("ITAPI_EMUL_TIMEOUT_MS", r->c->timeout != NULL ? r->c->timeout : "0", TRUE);
  conf_ok(it_listen_create(r->t.ia, 0, r->t.req, IT_LISTEN_NO_FLAG, &r->qual, &r->lh));
  g_setenv("ITAPI_EMUL_TIMEOUT_MS", "0", TRUE);
  if (r->c->trust_off)
    g_unsetenv("ITAPI_EMUL_TRUST");
  it_mem_priv_t remote = IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ | IT_PRIV_REMOTE_WRITE;
  conf_buf_new(&r->t, &r->buf, BUF_LEN, remote, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&r->t, &r->rbuf, (size_t) a.max_recv_dtos * RECV_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&r->t, &r->sbuf, RECV_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&r->t, &r->sink, RECV_LEN, conf_sink_privs(&r->t), IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&r->t, &r->local, RECV_LEN, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  /* A key that named a region of ours, and one of another domain. */
  conf_buf_t gone;
  conf_buf_new(&r->t, &gone, RECV_LEN, remote, IT_ADDR_MODE_ABSOLUTE);
  r->stale = gone.ctx;
  conf_buf_free(&gone);
  conf_ok(it_pz_create(r->t.ia, &r->pz2));
  r->other.len = RECV_LEN;
  r->other.mem = aligned_alloc(4096, 2 * CONF_GUARD + RECV_LEN);
  memset(r->other.mem, CONF_GUARD_BYTE, 2 * CONF_GUARD + RECV_LEN);
  r->other.data = r->other.mem + CONF_GUARD;
  conf_ok(it_lmr_create(r->pz2, r->other.data, NULL, RECV_LEN, IT_ADDR_MODE_ABSOLUTE, remote,
                        IT_LMR_FLAG_NONE, 0, &r->other.lmr, &r->other.ctx));
  r->dtos = g_array_new(FALSE, TRUE, sizeof(it_dto_cmpl_event_t));
  r->checks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

static void
run_close(run_t *r)
{
  conf_buf_free(&r->buf);
  conf_buf_free(&r->rbuf);
  conf_buf_free(&r->sbuf);
  conf_buf_free(&r->sink);
  conf_buf_free(&r->local);
  conf_buf_free(&r->other);
  conf_ok(it_pz_free(r->pz2));
  conf_side_close(&r->t);
  g_array_free(r->dtos, TRUE);
  g_hash_table_destroy(r->checks);
}

/* What the target posts once connected, and the peer's go line. */
static void
run_go(run_t *r)
{
  if (r->c->posts & POST_SEND) {
    it_lmr_triplet_t st = conf_seg(&r->sbuf, 0, 64);
    conf_ok(it_post_send(r->t.ep, &st, 1, SEND_COOKIE, IT_COMPLETION_FLAG));
    r->posted++;
  }
  if (r->c->posts & POST_READ) {
    /* The peer answers it itself: any remote address and key. */
    it_lmr_triplet_t sk = conf_seg(&r->sink, 0, READ_LEN);
    it_rdma_addr_t anywhere = it_make_rdma_addr_absolute((void *) (uintptr_t) 0x10000);
    conf_ok(it_post_rdma_read(r->t.ep, &sk, 1, READ_COOKIE, IT_COMPLETION_FLAG, anywhere,
                              (it_rmr_context_t) 1));
    r->posted++;
  }
  conf_say(r->peer.to, "go %" G_GUINT64_FORMAT " %u %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %"
           G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", (guint64) (uintptr_t) r->buf.data, BUF_LEN,
           (guint64) r->buf.ctx, (guint64) r->stale, (guint64) r->other.ctx, (guint64) r->local.ctx);
}

/* The peer did not end the connection's handshake or life as its case
 * asks: killed, so that its death ends it (the target sees EOF). */
static void
peer_kill(run_t *r)
{
  kill(r->peer.pid, SIGKILL);
  int status;
  waitpid(r->peer.pid, &status, 0);
  unlink(r->peer.err);
  close(r->peer.to);
  close(r->peer.from);
  r->peer_gone = TRUE;
}

/* The connection's end: BROKEN, as the case asks (a peer that outlives
 * the wait is killed before the failure is said). */
static void
wait_broken(run_t *r)
{
  it_event_t ev;
  it_status_t st = it_evd_wait(r->t.cm, CONF_TIMEOUT_US, &ev, NULL);
  if (st != IT_SUCCESS)
    peer_kill(r);
  holds(r, st == IT_SUCCESS, "the target never broke the connection");
  g_assert_cmpstr(itx_event_name(ev.event_number), ==, itx_event_name(IT_CM_MSG_CONN_BROKEN_EVENT));
}

/* The hostile peer runs its case against the target, to its end. */
static void
run_peer(run_t *r)
{
  const hcase_t *c = r->c;
  g_autofree char *port = g_strdup_printf("%u", (unsigned) ntohs(r->qual.conn_qual.port));
  const char *args[] = { c->peer, port, NULL };
  const char *exe = g_getenv("HOSTILE_PEER");
  g_autofree char *dir = g_path_get_dirname(self);
  g_autofree char *near = g_build_filename(dir, "hostile-peer", NULL);
  r->peer = conf_child_spawn(exe != NULL ? exe : near, args, "hostile-peer", NULL, NULL);
  if (c->end == END_UNRAISED) {
    hear_peer_must(r, "done");
    return;
  }
  for (unsigned k = 0; k < c->recvs; k++) {
    it_lmr_triplet_t rt = conf_seg(&r->rbuf, (size_t) k * RECV_LEN, RECV_LEN);
    conf_ok(it_post_recv(r->t.ep, &rt, 1, k, IT_COMPLETION_FLAG));
    r->posted++;
  }
  it_event_t ev = conf_wait(r->t.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  conf_ok(it_ep_accept(r->t.ep, ev.conn_req.cn_est_id, NULL, 0));
  conf_wait(r->t.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  hear_peer_must(r, "established");
  run_go(r);
  if (c->middle != NULL)
    c->middle(r);
  if (c->end == END_BROKEN)
    wait_broken(r);
  if (!r->peer_gone)
    hear_peer_must(r, "done");
  if (c->end == END_BROKEN || c->end == END_FREED || c->end == END_TIMED_OUT)
    check_dtos(r);
}

/* What the target said of the peer, what the peer saw, and the target's
 * memory: nothing landed outside its regions, nor where the peer had no
 * right to write. */
static void
check_target(run_t *r)
{
  const hcase_t *c = r->c;
  if (c->said != NULL) {
    g_autofree char *line = violation_line(r->peer.pid, G_USEC_PER_SEC);
    if (line != NULL)
      g_test_message("the target said: %s", line);
    if (holds(r, line != NULL, "the target said nothing of what the peer did"))
      holds(r, strstr(line, c->said) != NULL, "the target's line does not name what the peer did");
  }
  if (c->aff != 0)
    conf_wait(r->t.aff, c->aff);
  g_auto(GStrv) want = g_strsplit(c->checks != NULL ? c->checks : "", " ", -1);
  for (int i = 0; want[i] != NULL && !r->peer_gone; i++) {
    if (*want[i] == '\0')
      continue;
    char *eq = strchr(want[i], '=');
    g_assert_nonnull(eq);
    *eq = '\0';
    const char *got = g_hash_table_lookup(r->checks, want[i]);
    if (g_strcmp0(got, eq + 1) != 0)
      g_error("%s: the peer saw %s=%s, not %s", c->path, want[i], got != NULL ? got : "(nothing)", eq + 1);
  }
  conf_buf_check_guards(&r->buf);
  conf_buf_check_guards(&r->rbuf);
  conf_buf_check_guards(&r->sink);
  conf_buf_check_guards(&r->other);
  g_assert_cmpuint(conf_first_not(r->buf.data, c->landed, GOOD_WRITE), ==, c->landed);
  g_assert_cmpuint(conf_first_not(r->buf.data + c->landed, BUF_LEN - c->landed, 0), ==, BUF_LEN - c->landed);
  g_assert_cmpuint(conf_first_not(r->other.data, RECV_LEN, CONF_GUARD_BYTE), ==, RECV_LEN);
  if (!(c->posts & POST_READ))
    g_assert_cmpuint(conf_first_not(r->sink.data, RECV_LEN, 0), ==, RECV_LEN);
}

static void
run_case(gconstpointer data)
{
  const hcase_t *c = data;
  g_test_summary(c->summary);
  run_t r = { .c = c };
  run_open(&r);
  gint64 rss0 = conf_status_kb("VmRSS:");
  conf_peak_reset();
  run_peer(&r);
  if (c->flood) {
    gint64 grew = conf_status_kb("VmHWM:") - rss0;
    g_test_message("the target's peak RSS grew by %" G_GINT64_FORMAT " KiB", grew);
    holds(&r, grew < RSS_MAX / 1024, "the flood grew the target's memory past the bound");
  }
  check_target(&r);

  /* The target lives on: its other connections move data. */
  good_pair();
  good_client(&r);
  if (!r.peer_gone) {
    conf_say(r.peer.to, "bye\n");
    conf_child_reap(&r.peer);
  }
  if (c->end == END_AT_EXIT) {
    wait_broken(&r);
    check_dtos(&r);
  }
  if (c->end == END_UNRAISED)
    conf_assert_empty(r.t.req);  /* the hostile request never came */
  run_close(&r);
}

/* ---- middles ---- */

/* The peer wrote what the target must not take yet (a frame without its
 * mark, or marked for a later lap): nothing happens; then it publishes,
 * and the Sends land. */
static void
middle_wait(run_t *r)
{
  it_event_t ev;
  hear_peer_must(r, g_strcmp0(r->c->peer, "ring-half") == 0 ? "half-written" : "out-of-order");
  g_usleep(QUIET_US);
  g_assert_cmpint(it_evd_dequeue(r->t.dto, &ev), ==, IT_ERR_QUEUE_EMPTY);
  g_assert_cmpint(it_evd_dequeue(r->t.cm, &ev), ==, IT_ERR_QUEUE_EMPTY);
  g_assert_cmpint(conf_ep_state(r->t.ep), ==, IT_EP_STATE_CONNECTED);
  conf_say(r->peer.to, "publish\n");
  hear_peer_must(r, "published");
  for (unsigned k = 0; k < r->c->delivered; k++)
    g_assert_true(take_dto(r, CONF_TIMEOUT_US));
  conf_say(r->peer.to, "publish\n");
}

/* The peer answered the target's Read with a malformed answer: the Read's
 * completion (or a broken connection) before the peer goes on. */
static void
middle_answer(run_t *r)
{
  take_dto(r, CONF_TIMEOUT_US);
  conf_buf_check_guards(&r->sink);
  /* Nothing past what the Read asked. */
  g_assert_cmpuint(conf_first_not(r->sink.data + READ_LEN, RECV_LEN - READ_LEN, 0), ==, RECV_LEN - READ_LEN);
  conf_say(r->peer.to, "publish\n");
}

/* The target ends the connection to a peer that answers nothing: its
 * disconnect, then the endpoint freed, in bounded time whatever the peer
 * does (a graceful iWARP disconnect waits for the answers to what was
 * posted, which never come). */
static void
middle_disconnect(run_t *r)
{
  it_event_t ev;
  hear_peer_must(r, "stalled");
  conf_ok(it_ep_disconnect(r->t.ep, NULL, 0));
  it_status_t st = it_evd_wait(r->t.cm, G_USEC_PER_SEC, &ev, NULL);
  g_test_message("the disconnect from a silent peer: %s within 1 s",
                 st == IT_SUCCESS ? itx_event_name(ev.event_number) : "no event");
  gint64 t0 = g_get_monotonic_time();
  conf_ok(it_ep_free(r->t.ep));
  r->t.ep = IT_NULL_HANDLE;
  g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);
}

/* The peer took the target's first Send and stops: three more Sends wait
 * in the ring, and the connection breaks once the listener's timeout
 * passed, not before. */
#define MIDWAY_MS 1000
static void
middle_timeout(run_t *r)
{
  hear_peer_must(r, "stalled");
  it_lmr_triplet_t st = conf_seg(&r->sbuf, 0, 64);
  gint64 t0 = g_get_monotonic_time();
  for (unsigned k = 1; k <= 3; k++) {
    conf_ok(it_post_send(r->t.ep, &st, 1, SEND_COOKIE + k, IT_COMPLETION_FLAG));
    r->posted++;
  }
  wait_broken(r);
  gint64 took = g_get_monotonic_time() - t0;
  g_test_message("broken %" G_GINT64_FORMAT " ms after the Sends the peer never took (timeout %d ms)",
                 took / 1000, MIDWAY_MS);
  g_assert_cmpint(took, >=, MIDWAY_MS * 1000);
}

/* ---- the table ---- */

#define SEGMENT_BAD "a connection request with a connection segment that is not a memfd"
#define FDS_BAD "with descriptors that do not match what it says it carries"
#define UNKNOWN "a socket message of unknown type 77"
#define FLUSH_ALL "end=eof"

static const hcase_t cases[] = {
  /* The handshake: the request never reaches the application. */
  { .path = "/emul/hostile/segment/short", .peer = "segment-short",
    .summary = "a connection segment memfd shorter than X_SEG_SIZE: refused, the request never raised",
    .end = END_UNRAISED, .said = SEGMENT_BAD, .checks = "end=eof" },
  { .path = "/emul/hostile/segment/unsealable", .peer = "segment-unsealable",
    .summary = "a segment memfd not sealed against shrinking and sealed against sealing: refused",
    .end = END_UNRAISED, .said = SEGMENT_BAD, .checks = "end=eof seals=1" },
  { .path = "/emul/hostile/segment/regular-file", .peer = "segment-file",
    .summary = "a regular file instead of a memfd as the segment: refused",
    .end = END_UNRAISED, .said = SEGMENT_BAD, .checks = "end=eof" },
  { .path = "/emul/hostile/segment/pipe", .peer = "segment-pipe",
    .summary = "a pipe instead of a memfd as the segment: refused",
    .end = END_UNRAISED, .said = SEGMENT_BAD, .checks = "end=eof" },
  { .path = "/emul/hostile/segment/other-layout", .peer = "segment-layout",
    .summary = "a segment of another layout (its magic): refused",
    .end = END_UNRAISED, .said = "a connection segment of another layout", .checks = "end=eof" },
  { .path = "/emul/hostile/descriptors/none", .peer = "fds-none",
    .summary = "a REQ that says it carries the segment and carries no descriptor: refused",
    .end = END_UNRAISED, .said = FDS_BAD, .checks = "end=eof" },
  { .path = "/emul/hostile/descriptors/extra", .peer = "fds-extra",
    .summary = "a REQ with two descriptors for one: refused",
    .end = END_UNRAISED, .said = FDS_BAD, .checks = "end=eof" },
  { .path = "/emul/hostile/descriptors/undeclared", .peer = "fds-undeclared",
    .summary = "a REQ with a descriptor it does not declare: refused",
    .end = END_UNRAISED, .said = FDS_BAD, .checks = "end=eof" },
  { .path = "/emul/hostile/attach/bell-not-eventfd", .peer = "attach-bell",
    .summary = "an ATTACH whose bell is a pipe: refused, the request never raised",
    .end = END_UNRAISED, .said = "with a bell that is not an eventfd", .checks = "end=eof target-proof=ok" },
  { .path = "/emul/hostile/attach/table-too-short", .peer = "attach-table",
    .summary = "an ATTACH whose region table is one page: refused",
    .end = END_UNRAISED, .said = "with a region table that is not a memfd of its size", .checks = "end=eof" },
  { .path = "/emul/hostile/attach/table-missing", .peer = "attach-fds",
    .summary = "an ATTACH that says it carries a table and carries none: refused",
    .end = END_UNRAISED, .said = FDS_BAD, .checks = "end=eof" },
  { .path = "/emul/hostile/stall/no-attach", .peer = "stall-attach",
    .summary = "a peer that never sends ATTACH: its request is never raised, and the listener serves another "
               "client meanwhile",
    .end = END_UNRAISED, .checks = "target-proof=ok" },
  { .path = "/emul/hostile/stall/established-silent", .peer = "stall-established",
    .summary = "a peer that reads nothing once connected: the target's other connections go on; its exit "
               "breaks the connection and flushes what was posted",
    .end = END_AT_EXIT, .checks = "rep-fds=0/0", .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/stall/disconnect-silent", .peer = "stall-established-iwarp", .ia = "emul-iw0",
    .summary = "the target disconnects from and frees an endpoint whose peer answers nothing (iWARP: a "
               "graceful disconnect waits for answers): freed at once, what was posted flushed",
    .end = END_FREED, .checks = "rep-fds=0/0", .recvs = 2, .posts = POST_SEND, .middle = middle_disconnect },

  { .path = "/emul/hostile/stall/midway-timeout", .peer = "stall-midway",
    .summary = "a live peer that takes one Send and then nothing: broken after the timeout, no sooner; "
               "the oldest Send fails with a transport error, the rest flush",
    .end = END_TIMED_OUT, .timeout = G_STRINGIFY(MIDWAY_MS), .said = "took nothing from QP",
    .checks = "took-first=yes end=eof break-status=zero", .recvs = 2, .posts = POST_SEND,
    .middle = middle_timeout },

  /* Trust. */
  { .path = "/emul/hostile/trust/sealed", .peer = "trust-sealed",
    .summary = "a trusted peer (same user, proof read by attach) cannot shrink the segment nor write, shrink "
               "or remap writable the region table it is given",
    .end = END_BROKEN, .said = UNKNOWN, .recvs = 2, .posts = POST_SEND,
    .checks = "rep-fds=6/2 seg-ftruncate=EPERM table-mmap-write=EPERM table-write=EPERM "
              "table-ftruncate=EPERM table-mprotect=EACCES table-entry=ok end=eof" },
  { .path = "/emul/hostile/trust/proof-zero", .peer = "trust-proof-zero",
    .summary = "a peer whose proof is 0 gets no descriptor, cannot shrink the segment, and its mapping "
               "request breaks the connection",
    .end = END_BROKEN, .said = "a request to map region", .checks = "rep-fds=0/0 seg-ftruncate=EPERM end=eof",
    .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/trust/trust-off", .peer = "trust-off",
    .summary = "under ITAPI_EMUL_TRUST=0 a peer that proves it can attach is still not trusted",
    .end = END_BROKEN, .said = "a request to map region", .checks = "rep-fds=0/0 seg-ftruncate=EPERM end=eof",
    .recvs = 2, .posts = POST_SEND, .trust_off = TRUE },
  { .path = "/emul/hostile/map/refused", .peer = "map-refused",
    .summary = "a trusted peer's mapping requests for a region with local rights only, one not in a memfd "
               "and one not registered are answered with no descriptor",
    .end = END_BROKEN, .said = UNKNOWN, .checks = "map-local=0 map-heap=0 map-none=0 end=eof", .recvs = 2,
    .posts = POST_SEND },

  /* The peer's process. */
  { .path = "/emul/hostile/peer/exits-socket-lives", .peer = "exit-forked",
    .summary = "the peer process exits while a child it forked keeps the connection's socket open: the "
               "target ends the connection at the exit (its pidfd), what was posted flushed",
    .end = END_BROKEN, .checks = "end=eof", .recvs = 2, .posts = POST_SEND },

  /* Socket messages of a connected peer. */
  { .path = "/emul/hostile/message/short", .peer = "msg-short",
    .summary = "a socket message of 8 bytes breaks the connection",
    .end = END_BROKEN, .said = "a malformed socket message (8 bytes", .checks = FLUSH_ALL, .recvs = 2,
    .posts = POST_SEND },
  { .path = "/emul/hostile/message/magic", .peer = "msg-magic",
    .summary = "a socket message with another magic breaks the connection",
    .end = END_BROKEN, .said = "a malformed socket message", .checks = FLUSH_ALL, .recvs = 2,
    .posts = POST_SEND },
  { .path = "/emul/hostile/message/pdata-overrun", .peer = "msg-pdata",
    .summary = "a socket message whose pdata_len passes its end breaks the connection",
    .end = END_BROKEN, .said = "a malformed socket message", .checks = FLUSH_ALL, .recvs = 2,
    .posts = POST_SEND },
  { .path = "/emul/hostile/message/unknown-type", .peer = "msg-type",
    .summary = "a socket message of a type the protocol does not have breaks the connection",
    .end = END_BROKEN, .said = UNKNOWN, .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/message/reply-from-active", .peer = "msg-rep",
    .summary = "a REP from the active side breaks the connection",
    .end = END_BROKEN, .said = "a reply to a connection it did not request", .checks = FLUSH_ALL, .recvs = 2,
    .posts = POST_SEND },
  { .path = "/emul/hostile/message/second-request", .peer = "msg-req",
    .summary = "a second REQ, with a segment, on an established connection breaks it",
    .end = END_BROKEN, .said = "a connection request out of turn", .checks = FLUSH_ALL, .recvs = 2,
    .posts = POST_SEND },
  { .path = "/emul/hostile/message/service-request-connected", .peer = "msg-sidr",
    .summary = "a UD service request on an established connection breaks it, said",
    .end = END_BROKEN, .said = "service request", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/message/attach-again", .peer = "msg-attach",
    .summary = "an ATTACH on an established connection breaks it, said",
    .end = END_BROKEN, .said = "an attach answer out of turn", .checks = FLUSH_ALL, .recvs = 2,
    .posts = POST_SEND },
  { .path = "/emul/hostile/message/probe-from-active", .peer = "msg-probe",
    .summary = "a PROBE from the active side breaks the connection, said",
    .end = END_BROKEN, .said = "a probe out of turn", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/message/rtu-out-of-turn", .peer = "msg-rtu",
    .summary = "an RTU on a two-way connection breaks it",
    .end = END_BROKEN, .said = "a ready-to-use out of turn", .checks = FLUSH_ALL, .recvs = 2,
    .posts = POST_SEND },

  /* Malformed frames. */
  { .path = "/emul/hostile/frame/fragment-too-long", .peer = "frame-frag",
    .summary = "a frame whose frag_len passes X_FRAG_MAX breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/short-too-long", .peer = "frame-short-frag",
    .summary = "a short Send whose length passes X_FRAG_MAX breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/unknown-op", .peer = "frame-op",
    .summary = "a frame of an op the protocol does not have breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/orphan-continuation", .peer = "frame-cont",
    .summary = "a continuation with no first frame breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/total-too-large", .peer = "frame-total",
    .summary = "a message longer than 1 GiB and a page breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/continuation-overrun", .peer = "frame-overrun",
    .summary = "a continuation longer than what is left of its message breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/interleaved", .peer = "frame-interleave",
    .summary = "a new message before the one being assembled is whole breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/length-mismatch", .peer = "frame-length",
    .summary = "a Send whose byte_len is not the payload it carries breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/imm-with-payload", .peer = "imm-payload",
    .summary = "immediate data alone that carries a payload breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/imm-with-invalidate", .peer = "imm-inv",
    .summary = "immediate data that also names a key to invalidate breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/imm-on-read", .peer = "imm-read",
    .summary = "an RDMA Read that says it carries immediate data breaks the connection, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/imm-wider-than-ib", .peer = "imm-wide",
    .summary = "immediate data past the InfiniBand personality's 32 bits breaks the connection, said; "
               "no receive completes with it",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/frame/write-imm-wider-than-ib", .peer = "imm-write-wide",
    .summary = "an RDMA Write with immediate data past the InfiniBand personality's 32 bits breaks "
               "the connection before a byte lands, said",
    .end = END_BROKEN, .said = "frame", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  /* Well-formed immediate data with no receive posted, on iWARP: a
   * Terminate, as for a Send. */
  { .path = "/emul/hostile/imm/no-receive-iwarp", .peer = "imm-no-recv-iwarp", .ia = "emul-iw0",
    .summary = "immediate data alone finding no receive on iWARP is refused by a BREAK naming it",
    .end = END_BROKEN, .checks = "end=eof break-status=nonzero break-seq=match", .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR },
  { .path = "/emul/hostile/imm/write-no-receive-iwarp", .peer = "imm-write-no-recv-iwarp", .ia = "emul-iw0",
    .summary = "an RDMA Write with immediate data finding no receive on iWARP is refused by a BREAK "
               "naming it, and none of its bytes lands",
    .end = END_BROKEN, .checks = "end=eof break-status=nonzero break-seq=match", .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR },

  /* Answers. */
  { .path = "/emul/hostile/answer/ack-for-nothing", .peer = "answer-ack",
    .summary = "an ACK frame for no request issued breaks the connection, said",
    .end = END_BROKEN, .said = "answer", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/answer/read-response-for-nothing", .peer = "answer-read-resp",
    .summary = "a Read Response for no request issued breaks the connection, said",
    .end = END_BROKEN, .said = "answer", .checks = FLUSH_ALL, .recvs = 2, .posts = POST_SEND },
  { .path = "/emul/hostile/answer/read-response-too-long", .peer = "answer-long",
    .summary = "a Read Response longer than its Read: nothing lands past the sink, and the Read does not "
               "complete with more than it asked",
    .end = END_BROKEN, .said = "answer", .checks = "end=eof read-len=100", .recvs = 2, .posts = POST_READ,
    .middle = middle_answer },
  { .path = "/emul/hostile/answer/ack-for-read", .peer = "answer-ack-read",
    .summary = "an ACK frame answering an RDMA Read (no bytes) breaks the connection",
    .end = END_BROKEN, .said = "answer", .checks = "end=eof", .recvs = 2, .posts = POST_READ,
    .middle = middle_answer },

  /* Bounce-mode RDMA the target refuses: BREAK naming the request. */
#define REFUSED "good-write=acked end=eof break-status=nonzero break-seq=match"
  { .path = "/emul/hostile/rdma/write/index-out-of-range", .peer = "write-index",
    .summary = "an RDMA Write with a key whose index passes every table is refused by a BREAK naming it",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/write/stale-key", .peer = "write-stale",
    .summary = "an RDMA Write with the key of a deregistered region is refused",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/write/foreign-key", .peer = "write-foreign",
    .summary = "an RDMA Write with the key of a region of another protection domain is refused",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/write/past-end", .peer = "write-past-end",
    .summary = "an RDMA Write across the end of the region is refused, and nothing lands past it",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/write/before-start", .peer = "write-before",
    .summary = "an RDMA Write 64 bytes before the region is refused",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/write/long-past-end", .peer = "write-long",
    .summary = "an RDMA Write of three frames, longer than the region, is refused once assembled",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/read/index-out-of-range", .peer = "read-index",
    .summary = "an RDMA Read with a key whose index passes every table is refused",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/read/stale-key", .peer = "read-stale",
    .summary = "an RDMA Read with the key of a deregistered region is refused",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/read/foreign-key", .peer = "read-foreign",
    .summary = "an RDMA Read with the key of a region of another protection domain is refused",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/read/past-end", .peer = "read-past-end",
    .summary = "an RDMA Read across the end of the region is refused",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/read/address-wrap", .peer = "read-wrap",
    .summary = "an RDMA Read at the top of the address space (its end wraps) is refused",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION, .landed = 64 },
  { .path = "/emul/hostile/rdma/read/huge", .peer = "read-huge",
    .summary = "an RDMA Read of 4 GiB - 1 from a 64 KiB region is refused",
    .end = END_BROKEN, .checks = REFUSED, .recvs = 2, .posts = POST_SEND,
    .aff = IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION, .landed = 64 },

  /* Floods (ITAPI_EMUL_INBOUND_MB=1). */
  { .path = "/emul/hostile/flood/sends", .peer = "flood-sends",
    .summary = "Sends of 64 KiB with no receive posted: past ITAPI_EMUL_INBOUND_MB the connection breaks, "
               "said, and the target's memory stays bounded",
    .end = END_BROKEN, .said = "more requests than this queue pair holds",
    .checks = "end=eof flood-stopped=yes", .posts = POST_SEND, .flood = TRUE },
  { .path = "/emul/hostile/flood/tiny-sends", .peer = "flood-tiny",
    .summary = "Sends of 8 bytes with no receive posted: past the send queue's bound the connection breaks, "
               "said",
    .end = END_BROKEN, .said = "more requests than this queue pair holds", .checks = "end=eof",
    .posts = POST_SEND, .flood = TRUE },
  { .path = "/emul/hostile/flood/one-long-send", .peer = "flood-long",
    .summary = "one Send of 128 MiB with no receive posted: the target's memory stays bounded while it is "
               "assembled",
    .end = END_BROKEN, .said = "more requests than this queue pair holds", .checks = "end=eof",
    .posts = POST_SEND, .flood = TRUE },
  { .path = "/emul/hostile/flood/reads", .peer = "flood-reads",
    .summary = "RDMA Reads far past the negotiated IRD, with the answers never read: refused, said, memory "
               "bounded",
    .end = END_BROKEN, .said = "Read", .checks = "end=eof", .posts = POST_SEND, .flood = TRUE },

  /* The ring's own rules. */
  { .path = "/emul/hostile/ring/rewritten", .peer = "ring-rewrite",
    .summary = "Sends whose headers the peer rewrites (length, op) while the target takes them: whatever the "
               "target read, nothing lands outside the receives and each completes once",
    .end = END_BROKEN, .checks = "end=eof", .recvs = 16, .posts = POST_SEND, .fill = 0x30,
    .any_status = TRUE },
  { .path = "/emul/hostile/ring/half-written", .peer = "ring-half",
    .summary = "a frame written but for its mark: the target waits, then takes it once the mark is stored",
    .end = END_BROKEN, .said = UNKNOWN, .checks = "end=eof", .recvs = 2, .posts = POST_SEND, .delivered = 1,
    .fill = 0x61, .middle = middle_wait },
  { .path = "/emul/hostile/ring/out-of-order", .peer = "ring-order",
    .summary = "a frame marked for a later lap at the head, the next one published: the target waits, "
               "then takes both in order once the first mark is right",
    .end = END_BROKEN, .said = UNKNOWN, .checks = "end=eof", .recvs = 3, .posts = POST_SEND, .delivered = 2,
    .fill = 0x41, .middle = middle_wait },
};

/* The harness itself: a message the target sent before closing reaches
 * the peer even when the close reset the socket (messages of the peer's
 * unread), as every case's "break-status" check needs. */
static void
harness_reset(void)
{
  const char *exe = g_getenv("HOSTILE_PEER");
  g_autofree char *dir = g_path_get_dirname(self);
  g_autofree char *near = g_build_filename(dir, "hostile-peer", NULL);
  const char *argv[] = { exe != NULL ? exe : near, "--check-reset", NULL };
  g_autofree char *out = NULL;
  int status = 0;
  g_autoptr(GError) err = NULL;
  g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL,
                             &status, &err));
  g_test_message("hostile-peer --check-reset: %s", out);
  g_assert_true(g_spawn_check_wait_status(status, NULL));
}

int
main(int argc, char **argv)
{
  self = argv[0];
  /* Read once per process by vp/emul: the floods' bound. */
  g_setenv("ITAPI_EMUL_INBOUND_MB", "1", FALSE);
  g_setenv("ITAPI_CONF_IA", "emul0", FALSE);
  if (argc == 4 && strcmp(argv[1], "--good") == 0)
    return good_child((unsigned) atoi(argv[2]), argv[3]);
  log_lines = g_ptr_array_new_with_free_func(g_free);
  g_log_set_writer_func(log_writer, NULL, NULL);
  g_test_init(&argc, &argv, NULL);
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
    g_test_add_data_func(cases[i].path, &cases[i], run_case);
  g_test_add_func("/emul/hostile/harness/message-before-reset", harness_reset);
  return g_test_run();
}
