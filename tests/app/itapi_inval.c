/*
 * itapi-inval: a region invalidated by the peer's Send with Invalidate
 * (it_post_send_and_unlink), between two IT-API processes on any
 * interfaces, so that vp/iwarp can be checked against Linux siw (through
 * vp/ib) in both directions (lab/siw-interop.sh, cases siw-inval-*).
 *
 * Two roles, independent of who listens:
 *   owner        registers a region of -S bytes, fast-registered
 *                (it_lmr_create_unlinked, it_lmr_link) when the interface
 *                has lmr_link_support, else with it_lmr_create, and
 *                advertises its address and STag;
 *   invalidator  RDMA-Writes a known pattern into it, then sends a Send with
 *                Invalidate naming that STag; once the owner has checked
 *                the bytes it says "go", and the invalidator accesses the
 *                dead STag again (-x read or -x write), which must fail.
 *
 * Every message is a Send of 24 bytes, big-endian: a magic, a kind (HELLO,
 * AD, DONE, GO), the STag, the length and the address.  The side that
 * connected sends HELLO first: an MPA responder sends nothing before the
 * initiator's first FPDU when no RTR was negotiated (RFC 5044 7.1.2, rule
 * 4; siw as the initiator offers none), so a listening owner would wait
 * for ever to advertise.  The owner checks:
 * the bytes that landed, the receive completion of the Send with
 * Invalidate (its length, and that unlinked_mr_handle names the region;
 * -u accepts an interface that does not report it), that a linked
 * region reads unlinked afterwards (it_lmr_query), and after the dead
 * access that nothing more landed.  The invalidator checks that the dead
 * access completed with a status of -E (a comma-separated list of names,
 * IT_DTO_ERR_REMOTE_ACCESS by default) and, for a Read, that its sink
 * stayed untouched.  Both then wait for the connection to end with an
 * event of -X (default IT_CM_MSG_CONN_BROKEN_EVENT) and, with -A, for
 * that asynchronous event on the IA's affiliated stream; any other event
 * fails the run.  Both print the STag on a line of its own
 * ("itapi-inval: stag 0x..."), for a capture to be checked against.
 *
 *   itapi-inval -s|-c -r owner|invalidator [-a ADDR] [-p PORT] [-i IA] [-S SIZE]
 *               [-x read|write] [-E STATUS,...] [-X EVENT,...] [-A EVENT] [-u] [-R]
 *               [-T SECONDS] [-d]
 *
 * -s listens on -p (0: a port the interface picks, said on a
 * "listening on port N" line) and serves one connection; -c connects to
 * -a (default: the interface's first address) and -p, retrying for -T
 * seconds.  -R makes the owner register its region with it_lmr_create
 * even where it could fast-register.  Exit status 0 when every check
 * passed, 1 otherwise, 2 on bad usage.
 *
 * SPDX-License-Identifier: MIT
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

#include <arpa/inet.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "itapi-inval"
#define MAGIC 0x494e5631u  /* "INV1" */
#define MSG_LEN 24
#define RECV_LEN 64        /* room to see (and refuse) a longer message */
#define NRECV 4
#define SLICE_US 100000
#define PAGE 4096
#define NSTASH 4

enum { KIND_AD = 1, KIND_DONE = 2, KIND_GO = 3, KIND_HELLO = 4 };

typedef struct {
  uint32_t magic, kind, stag, len;
  uint64_t addr;
} msg_t;

_Static_assert(sizeof(msg_t) == MSG_LEN, "the message is 24 bytes on the wire");

typedef struct {
  bool server, owner, write, unreported, registered;
  const char *addr, *ia_name, *expect_status, *expect_end, *expect_async;
  it_net_addr_t target;
  char self_text[64];
  uint16_t port;
  size_t size;
  uint64_t timeout_us;
} config_t;

typedef struct {
  const config_t *cfg;
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t req_evd, dto_evd, cm_evd, aff_evd;
  it_listen_handle_t listener;
  it_ep_handle_t ep;
  unsigned char *ctrl, *data, *sink; /* ctrl: [0, 64) sends, then NRECV receives */
  it_lmr_handle_t ctrl_lmr, data_lmr, sink_lmr;
  it_rmr_context_t data_ctx;
  bool fast;                          /* the owner's region is fast-registered */
  it_dto_cookie_t cookie;
  unsigned recvs;                     /* receives posted and not completed */
  bool end_seen, async_seen;
  it_dto_cmpl_event_t stash[NSTASH]; /* completions that came before their wait */
  unsigned nstash;
} inval_t;

static const char *role = "";

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
  va_list ap;
  fflush(stdout);
  fprintf(stderr, PROG ": %s: ", role);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

#include "../../tools/tool_util.h" /* it_die() and IT(), through die() */

static bool debug_on;

static void __attribute__((format(printf, 1, 2)))
dbg(const char *fmt, ...)
{
  if (!debug_on)
    return;
  va_list ap;
  fprintf(stderr, PROG ": %s: ", role);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static uint64_t
now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* @name is one of the comma-separated names of @list. */
static bool
name_in(const char *name, const char *list)
{
  size_t n = strlen(name);
  for (const char *p = list; p != NULL && *p != '\0';) {
    const char *e = strchr(p, ',');
    size_t len = e != NULL ? (size_t) (e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0)
      return true;
    p = e != NULL ? e + 1 : NULL;
  }
  return false;
}

/* The pattern the invalidator writes (byte @i of the region). */
static unsigned char
pattern(size_t i)
{
  return (unsigned char) (i * 7u + 0x31u);
}

static unsigned char *
page_alloc(size_t len)
{
  size_t alloc = (len + PAGE - 1) / PAGE * PAGE;
  unsigned char *p = aligned_alloc(PAGE, alloc);
  if (p == NULL)
    die("out of memory for %zu bytes", len);
  memset(p, 0, alloc);
  return p;
}

/* ---- messages ------------------------------------------------------------ */

static void
post_recv(inval_t *t)
{
  unsigned slot = (unsigned) (t->cookie % NRECV);
  it_lmr_triplet_t s = { .lmr = t->ctrl_lmr, .addr.abs = t->ctrl + RECV_LEN * (1 + slot),
                         .length = RECV_LEN };
  IT(it_post_recv, t->ep, &s, 1, 1000 + slot, IT_COMPLETION_FLAG);
  t->cookie++;
  t->recvs++;
}

/* The next DTO completion; the connection's end or any other event before
 * it fails the run. */
static it_dto_cmpl_event_t
dto_next(inval_t *t, const char *what)
{
  uint64_t deadline = now_us() + t->cfg->timeout_us;
  for (;;) {
    it_event_t ev;
    if (now_us() >= deadline)
      die("timed out after %.1f s waiting for %s (-T)", (double) t->cfg->timeout_us / 1e6, what);
    it_status_t st = it_evd_wait(t->dto_evd, SLICE_US, &ev, NULL);
    if (st == IT_SUCCESS) {
      dbg("%s (cookie %llu): %s, %u bytes", itx_event_name(ev.event_number),
          (unsigned long long) ev.dto_cmpl.cookie, itx_dto_status_name(ev.dto_cmpl.dto_status),
          ev.dto_cmpl.transferred_length);
      return ev.dto_cmpl;
    }
    if (st != IT_ERR_TIMEOUT_EXPIRED)
      it_die("it_evd_wait on the DTO EVD", st);
    if (it_evd_dequeue(t->cm_evd, &ev) == IT_SUCCESS)
      die("the connection ended (%s) while waiting for %s", itx_event_name(ev.event_number), what);
    if (it_evd_dequeue(t->aff_evd, &ev) == IT_SUCCESS)
      die("asynchronous event %s while waiting for %s", itx_event_name(ev.event_number), what);
  }
}

/* Wait for a successful completion of @kind.  A successful one of
 * another kind is kept for its own wait: a Send's completion and the
 * peer's answer come in either order (siw completes a Send after the
 * peer's answer may have landed). */
static it_dto_cmpl_event_t
dto_wait(inval_t *t, it_event_type_t kind, const char *what)
{
  for (unsigned i = 0; i < t->nstash; i++) {
    if (t->stash[i].event_number == kind) {
      it_dto_cmpl_event_t d = t->stash[i];
      t->stash[i] = t->stash[--t->nstash];
      return d;
    }
  }
  for (;;) {
    it_dto_cmpl_event_t d = dto_next(t, what);
    if (d.event_number == kind && d.dto_status == IT_DTO_SUCCESS)
      return d;
    if (d.dto_status != IT_DTO_SUCCESS || t->nstash == NSTASH)
      die("%s: %s completed with %s (expected %s, IT_DTO_SUCCESS)", what,
          itx_event_name(d.event_number), itx_dto_status_name(d.dto_status), itx_event_name(kind));
    t->stash[t->nstash++] = d;
  }
}

static void
send_msg(inval_t *t, uint32_t kind, bool invalidate, const char *what)
{
  msg_t m = { htonl(MAGIC), htonl(kind), htonl((uint32_t) t->data_ctx), htonl((uint32_t) t->cfg->size),
              it_hton64(it_make_rdma_addr_absolute(t->data)) };
  memcpy(t->ctrl, &m, sizeof(m));
  it_lmr_triplet_t s = { .lmr = t->ctrl_lmr, .addr.abs = t->ctrl, .length = sizeof(m) };
  if (invalidate)
    IT(it_post_send_and_unlink, t->ep, &s, 1, t->cookie++, IT_COMPLETION_FLAG, t->data_ctx);
  else
    IT(it_post_send, t->ep, &s, 1, t->cookie++, IT_COMPLETION_FLAG);
  dto_wait(t, IT_DTO_SEND_CMPL_EVENT, what);
}

/* Wait for the peer's message of @kind; the receive's completion in @d. */
static msg_t
recv_msg(inval_t *t, uint32_t kind, const char *what, it_dto_cmpl_event_t *d)
{
  *d = dto_wait(t, IT_DTO_RC_RECV_CMPL_EVENT, what);
  t->recvs--;
  if (d->transferred_length != MSG_LEN)
    die("%s: received %u bytes, the message has %d", what, d->transferred_length, MSG_LEN);
  unsigned slot = (unsigned) (d->cookie - 1000);
  if (slot >= NRECV)
    die("%s: a receive completed with cookie %llu, which no receive of ours has", what,
        (unsigned long long) d->cookie);
  msg_t m;
  memcpy(&m, t->ctrl + RECV_LEN * (1 + slot), sizeof(m));
  m.magic = ntohl(m.magic);
  m.kind = ntohl(m.kind);
  m.stag = ntohl(m.stag);
  m.len = ntohl(m.len);
  m.addr = it_ntoh64(m.addr);
  if (m.magic != MAGIC || m.kind != kind)
    die("%s: got magic 0x%08x kind %u, expected 0x%08x kind %u; is the peer itapi-inval?", what,
        m.magic, m.kind, MAGIC, kind);
  post_recv(t);
  return m;
}

/* ---- set-up and connection ------------------------------------------------- */

/* The endpoint with its receives posted: two Reads each way (the dead
 * Read and a fence), privileged operations where the region is linked. */
static void
ep_open(inval_t *t)
{
  it_ep_attributes_t a;
  tool_rc_attr(&a, t->cfg->size, 8, NRECV);
  a.srv.rc.rdma_read_ird = 2;
  a.srv.rc.rdma_read_ord = 2;
  a.priv_ops_enable = t->fast ? IT_TRUE : IT_FALSE;
  IT(it_ep_rc_create, t->pz, t->dto_evd, t->dto_evd, t->cm_evd, IT_EP_NO_FLAG, &a, &t->ep);
  for (unsigned i = 0; i < NRECV; i++)
    post_recv(t);
}

static void
inval_open(inval_t *t)
{
  const config_t *cfg = t->cfg;
  IT(it_ia_create, cfg->ia_name, 2, 1, &t->ia);
  IT(it_pz_create, t->ia, &t->pz);
  IT(it_evd_create, t->ia, IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1,
     IT_NULL_HANDLE, &t->aff_evd, NULL);
  IT(it_evd_create, t->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 32, 1, IT_NULL_HANDLE,
     &t->dto_evd, NULL);
  IT(it_evd_create, t->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
     IT_NULL_HANDLE, &t->cm_evd, NULL);
  it_ia_info_t *info = NULL;
  IT(it_ia_query, t->ia, &info);
  bool link = info->lmr_link_support, unlink = info->post_send_unlink_remote_support;
  it_ia_info_free(info);
  if (!cfg->owner && !unlink)
    die("interface %s cannot send a Send with Invalidate (post_send_unlink_remote_support is "
        "false; see itapi-info)", cfg->ia_name);
  t->fast = cfg->owner && link && !cfg->registered;

  t->ctrl = page_alloc(RECV_LEN * (1 + NRECV));
  it_rmr_context_t unused;
  IT(it_lmr_create, t->pz, t->ctrl, NULL, RECV_LEN * (1 + NRECV), IT_ADDR_MODE_ABSOLUTE,
     IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &t->ctrl_lmr, &unused);
  t->data = page_alloc(cfg->size);
  if (!cfg->owner || !t->fast)
    IT(it_lmr_create, t->pz, t->data, NULL, cfg->size, IT_ADDR_MODE_ABSOLUTE,
       cfg->owner ? IT_PRIV_LOCAL | IT_PRIV_REMOTE : IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0,
       &t->data_lmr, &t->data_ctx);
  else
    IT(it_lmr_create_unlinked, t->pz, (cfg->size + PAGE - 1) / PAGE, IT_LMR_FLAG_NONE, 0,
       &t->data_lmr);
  if (!cfg->owner) {
    /* Where a dead Read would land (an iWARP Read sink needs remote write). */
    t->sink = page_alloc(cfg->size);
    memset(t->sink, 0x5a, cfg->size);
    IT(it_lmr_create, t->pz, t->sink, NULL, cfg->size, IT_ADDR_MODE_ABSOLUTE,
       IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_LMR_FLAG_NONE, 0, &t->sink_lmr, &unused);
  }

  ep_open(t);
}

static void
inval_accept(inval_t *t)
{
  config_t *cfg = (config_t *) t->cfg;
  IT(it_evd_create, t->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
     &t->req_evd, NULL);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = htons(cfg->port);
  IT(it_listen_create, t->ia, 0, t->req_evd,
     cfg->port != 0 ? IT_LISTEN_CONN_QUAL_INPUT : IT_LISTEN_NO_FLAG, &qual, &t->listener);
  cfg->port = ntohs(qual.conn_qual.port);
  printf(PROG ": %s: listening on port %u of %s\n", role, cfg->port, cfg->ia_name);
  fflush(stdout);
  it_event_t ev;
  it_status_t st = it_evd_wait(t->req_evd, cfg->timeout_us, &ev, NULL);
  if (st != IT_SUCCESS)
    it_die("it_evd_wait for a connection request", st);
  if (ev.event_number != IT_CM_REQ_CONN_REQUEST_EVENT)
    die("expected a connection request, got %s", itx_event_name(ev.event_number));
  IT(it_ep_accept, t->ep, ev.conn_req.cn_est_id, NULL, 0);
  st = it_evd_wait(t->cm_evd, cfg->timeout_us, &ev, NULL);
  if (st != IT_SUCCESS)
    it_die("it_evd_wait for the accepted connection", st);
  if (ev.event_number != IT_CM_MSG_CONN_ESTABLISHED_EVENT)
    die("the accept ended with %s, not %s", itx_event_name(ev.event_number),
        itx_event_name(IT_CM_MSG_CONN_ESTABLISHED_EVENT));
}

/* The server may not listen yet: a refused connect is tried again on a
 * fresh endpoint until -T has passed. */
static void
inval_connect(inval_t *t)
{
  const config_t *cfg = t->cfg;
  it_path_t path;
  size_t npaths = 1, total = 0;
  IT(it_get_pathinfo, t->ia, 0, &cfg->target, &npaths, &total, &path);
  if (npaths < 1)
    die("interface %s has no path to %s", cfg->ia_name, cfg->addr);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = htons(cfg->port);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  uint64_t deadline = now_us() + cfg->timeout_us;
  for (unsigned attempt = 1;; attempt++) {
    dbg("connecting to %s port %u (attempt %u)", cfg->addr, cfg->port, attempt);
    IT(it_ep_connect, t->ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
    it_event_t ev;
    it_status_t st = it_evd_wait(t->cm_evd, cfg->timeout_us, &ev, NULL);
    if (st != IT_SUCCESS)
      it_die("it_evd_wait for the connection", st);
    if (ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT)
      return;
    if (now_us() >= deadline)
      die("no connection to %s port %u within %.1f s (%u attempts; the last ended with %s)",
          cfg->addr, cfg->port, (double) cfg->timeout_us / 1e6, attempt,
          itx_event_name(ev.event_number));
    /* A fresh endpoint: the refused one is NONOPERATIONAL. */
    IT(it_ep_free, t->ep);
    while (it_evd_dequeue(t->dto_evd, &ev) == IT_SUCCESS)
      ;
    t->recvs = 0;
    ep_open(t);
    struct timespec pause = { 0, 200000000 };
    nanosleep(&pause, NULL);
  }
}

/* After the dead access: wait for the connection's end (-X) and the
 * asynchronous event (-A); flushed receives are expected, nothing else. */
static void
wait_end(inval_t *t)
{
  const config_t *cfg = t->cfg;
  uint64_t deadline = now_us() + cfg->timeout_us;
  while (!t->end_seen || (cfg->expect_async != NULL && !t->async_seen)) {
    if (now_us() >= deadline)
      die("timed out after %.1f s waiting for %s%s%s (seen: end %s, asynchronous event %s)",
          (double) cfg->timeout_us / 1e6, cfg->expect_end,
          cfg->expect_async != NULL ? " and " : "",
          cfg->expect_async != NULL ? cfg->expect_async : "", t->end_seen ? "yes" : "no",
          t->async_seen ? "yes" : "no");
    it_event_t ev;
    if (it_evd_dequeue(t->dto_evd, &ev) == IT_SUCCESS) {
      const it_dto_cmpl_event_t *d = &ev.dto_cmpl;
      dbg("%s (cookie %llu): %s", itx_event_name(ev.event_number), (unsigned long long) d->cookie,
          itx_dto_status_name(d->dto_status));
      if (ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT && d->dto_status == IT_DTO_ERR_FLUSHED)
        continue;
      die("after the dead access: %s (cookie %llu) with %s; only flushed receives may complete",
          itx_event_name(ev.event_number), (unsigned long long) d->cookie,
          itx_dto_status_name(d->dto_status));
    }
    if (it_evd_dequeue(t->aff_evd, &ev) == IT_SUCCESS) {
      const char *n = itx_event_name(ev.event_number);
      printf(PROG ": %s: asynchronous event %s\n", role, n);
      if (cfg->expect_async == NULL || strcmp(n, cfg->expect_async) != 0 || t->async_seen)
        die("asynchronous event %s, expected %s", n,
            cfg->expect_async != NULL ? cfg->expect_async : "none");
      t->async_seen = true;
      continue;
    }
    it_status_t st = it_evd_wait(t->cm_evd, SLICE_US, &ev, NULL);
    if (st == IT_ERR_TIMEOUT_EXPIRED)
      continue;
    if (st != IT_SUCCESS)
      it_die("it_evd_wait on the CM EVD", st);
    const char *n = itx_event_name(ev.event_number);
    printf(PROG ": %s: connection ended: %s\n", role, n);
    if (t->end_seen || !name_in(n, cfg->expect_end))
      die("the connection ended with %s, expected one of %s", n, cfg->expect_end);
    t->end_seen = true;
  }
}

/* ---- the two roles --------------------------------------------------------- */

static void
owner_run(inval_t *t)
{
  const config_t *cfg = t->cfg;
  if (t->fast) {
    IT(it_lmr_link, t->data_lmr, t->data, NULL, cfg->size, IT_ADDR_MODE_ABSOLUTE,
       IT_PRIV_LOCAL | IT_PRIV_REMOTE, t->ep, t->cookie++, IT_COMPLETION_FLAG, &t->data_ctx);
    dto_wait(t, IT_LMR_LINK_CMPL_EVENT, "the fast registration (it_lmr_link)");
  }
  printf(PROG ": owner: %s region of %zu bytes, stag 0x%08llx\n",
         t->fast ? "fast-registered" : "registered", cfg->size, (unsigned long long) t->data_ctx);
  printf(PROG ": stag 0x%08llx\n", (unsigned long long) t->data_ctx);
  fflush(stdout);
  send_msg(t, KIND_AD, false, "the Send of the advertisement");

  it_dto_cmpl_event_t d;
  msg_t m = recv_msg(t, KIND_DONE, "the Send with Invalidate", &d);
  if (m.stag != (uint32_t) t->data_ctx)
    die("the Send with Invalidate's message names STag 0x%08x, ours is 0x%08llx", m.stag,
        (unsigned long long) t->data_ctx);
  for (size_t i = 0; i < cfg->size; i++)
    if (t->data[i] != pattern(i))
      die("byte %zu of %zu of the region is 0x%02x, the peer's RDMA Write carried 0x%02x", i,
          cfg->size, t->data[i], pattern(i));
  if (d.unlinked_mr_handle == (it_handle_t) t->data_lmr) {
    printf(PROG ": owner: the receive completion names the region as unlinked\n");
  } else if (cfg->unreported && d.unlinked_mr_handle == IT_NULL_HANDLE) {
    printf(PROG ": owner: the receive completion names no unlinked region (-u: the interface "
           "does not report it)\n");
  } else {
    die("the receive of the Send with Invalidate names %p in unlinked_mr_handle, not the region "
        "%p", (void *) d.unlinked_mr_handle, (void *) t->data_lmr);
  }
  if (t->fast) {
    it_lmr_param_t prm;
    IT(it_lmr_query, t->data_lmr, IT_LMR_PARAM_LINKED, &prm);
    if (prm.linked != IT_FALSE)
      die("it_lmr_query says the region is still linked after the peer invalidated it");
  }
  printf(PROG ": owner: %zu bytes landed and were checked; STag 0x%08x invalidated by the peer\n",
         cfg->size, m.stag);
  fflush(stdout);
  send_msg(t, KIND_GO, false, "the Send of \"go\"");
  wait_end(t);
  for (size_t i = 0; i < cfg->size; i++)
    if (t->data[i] != pattern(i))
      die("byte %zu of the region changed to 0x%02x after the STag was invalidated", i,
          t->data[i]);
  printf(PROG ": owner: nothing landed through the dead STag\n");
}

static void
invalidator_run(inval_t *t)
{
  const config_t *cfg = t->cfg;
  it_dto_cmpl_event_t d;
  msg_t ad = recv_msg(t, KIND_AD, "the owner's advertisement", &d);
  if (ad.len != cfg->size)
    die("the owner advertised %u bytes, we were given -S %zu", ad.len, cfg->size);
  t->data_ctx = ad.stag;
  printf(PROG ": stag 0x%08x\n", ad.stag);
  fflush(stdout);
  for (size_t i = 0; i < cfg->size; i++)
    t->data[i] = pattern(i);
  it_lmr_triplet_t s = { .lmr = t->data_lmr, .addr.abs = t->data, .length = cfg->size };
  IT(it_post_rdma_write, t->ep, &s, 1, t->cookie++, IT_COMPLETION_FLAG, ad.addr, ad.stag);
  dto_wait(t, IT_DTO_RDMA_WRITE_CMPL_EVENT, "the RDMA Write into the owner's region");
  send_msg(t, KIND_DONE, true, "the Send with Invalidate");
  printf(PROG ": invalidator: wrote %zu bytes, then a Send with Invalidate of STag 0x%08x\n",
         cfg->size, ad.stag);
  fflush(stdout);
  recv_msg(t, KIND_GO, "the owner's \"go\"", &d);

  /* The dead access: it must fail with a status of -E. */
  if (cfg->write) {
    memset(t->data, 0xee, cfg->size);
    IT(it_post_rdma_write, t->ep, &s, 1, t->cookie++, IT_COMPLETION_FLAG, ad.addr, ad.stag);
  } else {
    it_lmr_triplet_t k = { .lmr = t->sink_lmr, .addr.abs = t->sink, .length = cfg->size };
    IT(it_post_rdma_read, t->ep, &k, 1, t->cookie++, IT_COMPLETION_FLAG, ad.addr, ad.stag);
  }
  const char *what = cfg->write ? "the RDMA Write to the dead STag" : "the RDMA Read of the dead STag";
  uint64_t deadline = now_us() + cfg->timeout_us;
  for (;;) {
    it_event_t ev;
    if (now_us() >= deadline)
      die("timed out after %.1f s waiting for %s to complete", (double) cfg->timeout_us / 1e6, what);
    if (it_evd_wait(t->dto_evd, SLICE_US, &ev, NULL) != IT_SUCCESS) {
      /* The end of the connection or an asynchronous event may come
       * first: each is checked in wait_end. */
      if (!t->end_seen && it_evd_dequeue(t->cm_evd, &ev) == IT_SUCCESS) {
        const char *n = itx_event_name(ev.event_number);
        printf(PROG ": invalidator: connection ended: %s\n", n);
        if (!name_in(n, cfg->expect_end))
          die("the connection ended with %s, expected one of %s", n, cfg->expect_end);
        t->end_seen = true;
      }
      if (it_evd_dequeue(t->aff_evd, &ev) == IT_SUCCESS) {
        const char *n = itx_event_name(ev.event_number);
        printf(PROG ": invalidator: asynchronous event %s\n", n);
        if (cfg->expect_async == NULL || strcmp(n, cfg->expect_async) != 0 || t->async_seen)
          die("asynchronous event %s, expected %s", n,
              cfg->expect_async != NULL ? cfg->expect_async : "none");
        t->async_seen = true;
      }
      continue;
    }
    const it_dto_cmpl_event_t *c = &ev.dto_cmpl;
    if (ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT && c->dto_status == IT_DTO_ERR_FLUSHED)
      continue;
    it_event_type_t want = cfg->write ? IT_DTO_RDMA_WRITE_CMPL_EVENT : IT_DTO_RDMA_READ_CMPL_EVENT;
    const char *n = itx_dto_status_name(c->dto_status);
    printf(PROG ": invalidator: %s completed with %s\n", what, n);
    if (ev.event_number != want)
      die("%s completed as %s", what, itx_event_name(ev.event_number));
    if (!name_in(n, cfg->expect_status))
      die("%s completed with %s, expected one of %s", what, n, cfg->expect_status);
    break;
  }
  if (!cfg->write)
    for (size_t i = 0; i < cfg->size; i++)
      if (t->sink[i] != 0x5a)
        die("byte %zu of the dead Read's sink changed to 0x%02x", i, t->sink[i]);
  wait_end(t);
}

/* ---- command line ------------------------------------------------------------ */

static void
usage(FILE *f)
{
  fprintf(f,
"usage: " PROG " -s|-c -r owner|invalidator [-a ADDR] [-p PORT] [-i IA] [-S SIZE]\n"
"                   [-x read|write] [-E STATUS,...] [-X EVENT,...] [-A EVENT] [-u] [-R]\n"
"                   [-T SECONDS] [-d]\n"
"A region invalidated by the peer's Send with Invalidate, then accessed again.\n"
"  -s, -c      listen (one connection) or connect\n"
"  -r ROLE     owner (advertises a region) or invalidator (writes, invalidates)\n"
"  -a ADDR     address to connect to (default: the interface's first address)\n"
"  -p PORT     port (default 7175; -s -p 0: one the interface picks, said on a line)\n"
"  -i IA       IT-API interface (default: the first of it_interface_list)\n"
"  -S SIZE     bytes of the region, 16 to 1048576 (default 4096)\n"
"  -x ACCESS   the invalidator's access to the dead STag: read (default) or write\n"
"  -E LIST     statuses the dead access may complete with (default IT_DTO_ERR_REMOTE_ACCESS)\n"
"  -X LIST     events the connection may end with (default IT_CM_MSG_CONN_BROKEN_EVENT)\n"
"  -A EVENT    an asynchronous event that must come on the affiliated stream\n"
"  -u          the owner accepts a receive that names no unlinked region\n"
"  -R          the owner registers (it_lmr_create) even where it could fast-register\n"
"  -T SECONDS  longest wait for any one step, and the connect window (default 30)\n"
"  -d          trace each step on stderr\n");
}

static unsigned long
parse_num(const char *opt, const char *s, unsigned long min, unsigned long max)
{
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*s == '\0' || *s == '-' || *end != '\0' || v < min || v > max) {
    fprintf(stderr, PROG ": %s %s: expected a number from %lu to %lu\n", opt, s, min, max);
    exit(2);
  }
  return v;
}

static void
parse_args(int argc, char **argv, config_t *cfg)
{
  int mode = 0, opt;
  const char *r = NULL;
  while ((opt = getopt(argc, argv, "scr:a:p:i:S:x:E:X:A:uRT:dh")) != -1) {
    switch (opt) {
    case 's':
    case 'c': mode = opt; break;
    case 'r': r = optarg; break;
    case 'a': cfg->addr = optarg; break;
    case 'p': cfg->port = (uint16_t) parse_num("-p", optarg, 0, 65535); break;
    case 'i': cfg->ia_name = optarg; break;
    case 'S': cfg->size = parse_num("-S", optarg, 16, 1048576); break;
    case 'x':
      if (strcmp(optarg, "read") != 0 && strcmp(optarg, "write") != 0) {
        fprintf(stderr, PROG ": -x %s: expected read or write\n", optarg);
        exit(2);
      }
      cfg->write = strcmp(optarg, "write") == 0;
      break;
    case 'E': cfg->expect_status = optarg; break;
    case 'X': cfg->expect_end = optarg; break;
    case 'A': cfg->expect_async = optarg; break;
    case 'u': cfg->unreported = true; break;
    case 'R': cfg->registered = true; break;
    case 'T': cfg->timeout_us = parse_num("-T", optarg, 1, 86400) * 1000000u; break;
    case 'd': debug_on = true; break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind < argc || mode == 0 || r == NULL ||
      (strcmp(r, "owner") != 0 && strcmp(r, "invalidator") != 0)) {
    usage(stderr);
    exit(2);
  }
  cfg->server = mode == 's';
  cfg->owner = strcmp(r, "owner") == 0;
  if (!cfg->server && cfg->port == 0) {
    fprintf(stderr, PROG ": -c needs the server's port (-p)\n");
    exit(2);
  }
  if (!cfg->server && cfg->addr != NULL) {
    if (inet_pton(AF_INET, cfg->addr, &cfg->target.addr.ipv4) == 1) {
      cfg->target.addr_type = IT_IPV4;
    } else if (inet_pton(AF_INET6, cfg->addr, &cfg->target.addr.ipv6) == 1) {
      cfg->target.addr_type = IT_IPV6;
    } else {
      fprintf(stderr, PROG ": -a %s: expected an IPv4 or IPv6 address\n", cfg->addr);
      exit(2);
    }
  }
}

int
main(int argc, char **argv)
{
  config_t cfg = { .port = 7175, .size = 4096, .timeout_us = 30000000u,
                   .expect_status = "IT_DTO_ERR_REMOTE_ACCESS",
                   .expect_end = "IT_CM_MSG_CONN_BROKEN_EVENT" };
  parse_args(argc, argv, &cfg);
  role = cfg.owner ? "owner" : "invalidator";
  it_interface_t ifs[16];
  if (cfg.ia_name == NULL) {
    size_t n = sizeof(ifs) / sizeof(ifs[0]), total = 0;
    it_interface_list(ifs, &n, &total);
    if (n == 0)
      die("no IT-API interface is available (see itapi-info)");
    cfg.ia_name = ifs[0].name;
  }
  inval_t t = { .cfg = &cfg };
  inval_open(&t);
  if (cfg.server) {
    inval_accept(&t);
  } else {
    if (cfg.addr == NULL) {
      IT(tool_self_addr, t.ia, &cfg.target);
      cfg.addr = tool_addr_str(&cfg.target, cfg.self_text, sizeof(cfg.self_text));
    }
    inval_connect(&t);
    send_msg(&t, KIND_HELLO, false, "the Send of \"hello\"");
  }
  if (cfg.server) {
    it_dto_cmpl_event_t d;
    recv_msg(&t, KIND_HELLO, "the client's \"hello\"", &d);
  }
  if (cfg.owner)
    owner_run(&t);
  else
    invalidator_run(&t);
  IT(it_ep_free, t.ep);
  if (t.listener != IT_NULL_HANDLE)
    IT(it_listen_free, t.listener);
  IT(it_lmr_free, t.data_lmr);
  IT(it_lmr_free, t.ctrl_lmr);
  if (t.sink_lmr != IT_NULL_HANDLE)
    IT(it_lmr_free, t.sink_lmr);
  IT(it_ia_free, t.ia);
  free(t.ctrl);
  free(t.data);
  free(t.sink);
  printf(PROG ": %s: verified\n", role);
  return 0;
}
