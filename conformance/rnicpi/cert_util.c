/*
 * cert-rnicpi: the fixture (one opened device per test, upcalls queued),
 * waiting for upcalls and completions with timeouts, buffers with guard
 * bytes, and connected queue-pair pairs over the provider's CM verbs.
 *
 * Upcalls come from the provider's threads; they only copy the event into
 * a GAsyncQueue, so they take no lock the provider's operations take.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cert.h"
#include "rnicpi_util.h"

/* cert_buf_peer_reached: the buffers made now are reached for another process. */
static gboolean buf_peer_reached;

/* ---- Upcalls ---------------------------------------------------------- */

static void
up_cm_event(void *dev_ctx, const rnicpi_cm_event_t *ev)
{
  cert_t *f = dev_ctx;
  g_async_queue_push(f->cm_q, g_memdup2(ev, sizeof(*ev)));
}

static void
up_cq_notify(void *dev_ctx, uint64_t cq_ctx)
{
  cert_t *f = dev_ctx;
  g_async_queue_push(f->notify_q, g_memdup2(&cq_ctx, sizeof(cq_ctx)));
}

/* The states of cert_t.gate_state. */
enum {
  GATE_OFF,    /* upcalls pass */
  GATE_ARMED,  /* the next async_event upcall is held */
  GATE_HELD,   /* one is held */
  GATE_LAPSED, /* one was held for CERT_GATE_HOLD_MS and went on */
};

/* Hold this async_event upcall if the gate is armed: until the test opens
 * it, or for CERT_GATE_HOLD_MS at most. */
static void
gate_pass(cert_t *f)
{
  g_mutex_lock(&f->gate_lock);
  if (f->gate_state == GATE_ARMED) {
    f->gate_state = GATE_HELD;
    g_cond_broadcast(&f->gate_cond);
    gint64 end = g_get_monotonic_time() + CERT_GATE_HOLD_MS * G_TIME_SPAN_MILLISECOND;
    while (f->gate_state == GATE_HELD)
      if (!g_cond_wait_until(&f->gate_cond, &f->gate_lock, end) && f->gate_state == GATE_HELD) {
        f->gate_state = GATE_LAPSED;
        g_cond_broadcast(&f->gate_cond);
      }
  }
  g_mutex_unlock(&f->gate_lock);
}

static void
up_async_event(void *dev_ctx, const rnicpi_async_event_t *ev)
{
  cert_t *f = dev_ctx;
  /* A provider older than 1.7 passes the event without its cause. */
  rnicpi_async_event_t copy = cert_prov->abi_minor >= 7
                               ? *ev : rnicpi_async_event(ev->type, ev->ctx, RNICPI_AE_UNSPECIFIED);
  g_async_queue_push(f->async_q, g_memdup2(&copy, sizeof(copy)));
  gate_pass(f);
}

static const rnicpi_upcalls_t cert_upcalls = {
  .cm_event = up_cm_event,
  .cq_notify = up_cq_notify,
  .async_event = up_async_event,
};

/* ---- Fixture ---------------------------------------------------------- */

void
cert_setup(cert_t *f, gconstpointer data)
{
  (void) data;
  memset(f, 0, sizeof(*f));
  g_mutex_init(&f->gate_lock);
  g_cond_init(&f->gate_cond);
  f->cm_q = g_async_queue_new_full(g_free);
  f->notify_q = g_async_queue_new_full(g_free);
  f->async_q = g_async_queue_new_full(g_free);

  char names[8][RNICPI_DEVICE_NAME_MAX];
  size_t count = G_N_ELEMENTS(names);
  cert_ok(DEV->list(names, &count));
  g_assert_cmpuint(count, >=, 1);
  /* RNICPI_CERT_DEVICE picks one device of the provider (default: the first). */
  const char *want = g_getenv("RNICPI_CERT_DEVICE");
  size_t pick = 0;
  if (want != NULL && *want != '\0') {
    pick = count;
    for (size_t i = 0; i < MIN(count, G_N_ELEMENTS(names)); i++)
      if (strcmp(names[i], want) == 0)
        pick = i;
    if (pick == count)
      g_error("RNICPI_CERT_DEVICE=%s: the provider lists no such device", want);
  }
  g_strlcpy(f->dev_name, names[pick], sizeof(f->dev_name));
  cert_ok(DEV->open(f->dev_name, &cert_upcalls, f, &f->dev));
  g_assert_nonnull(f->dev);
  cert_ok(DEV->query(f->dev, &f->caps));
  /* The record as the access layer reads it: a provider older than a
   * rule's bit is held to the rule it followed by its transport. */
  rnicpi_caps_complete(cert_prov, &f->caps);
}

/* Open @f's device once more into @b, with upcall queues of its own, as
 * another IA of the process on the same device; cert_teardown(@b) closes
 * it. */
void
cert_open_again(cert_t *f, cert_t *b)
{
  memset(b, 0, sizeof(*b));
  g_mutex_init(&b->gate_lock);
  g_cond_init(&b->gate_cond);
  b->cm_q = g_async_queue_new_full(g_free);
  b->notify_q = g_async_queue_new_full(g_free);
  b->async_q = g_async_queue_new_full(g_free);
  g_strlcpy(b->dev_name, f->dev_name, sizeof(b->dev_name));
  cert_ok(DEV->open(b->dev_name, &cert_upcalls, b, &b->dev));
  g_assert_nonnull(b->dev);
  cert_ok(DEV->query(b->dev, &b->caps));
  rnicpi_caps_complete(cert_prov, &b->caps);
}

static void
drain(GAsyncQueue *q, GList **seen)
{
  gpointer p;
  while ((p = g_async_queue_try_pop(q)) != NULL)
    g_free(p);
  g_list_free_full(*seen, g_free);
  *seen = NULL;
  g_async_queue_unref(q);
}

void
cert_teardown(cert_t *f, gconstpointer data)
{
  (void) data;
  /* An upcall a failed test left held returns; after close the provider
   * makes no more upcalls into this fixture. */
  cert_gate_open(f);
  if (f->dev != NULL)
    DEV->close(f->dev);
  drain(f->cm_q, &f->cm_seen);
  drain(f->notify_q, &f->notify_seen);
  drain(f->async_q, &f->async_seen);
  g_cond_clear(&f->gate_cond);
  g_mutex_clear(&f->gate_lock);
}

void
cert_add_data(const char *path, gconstpointer data, void (*fn)(cert_t *, gconstpointer))
{
  g_test_add(path, cert_t, data, cert_setup, fn, cert_teardown);
}

void
cert_add(const char *path, void (*fn)(cert_t *, gconstpointer))
{
  cert_add_data(path, NULL, fn);
}

static const char *const cert_xproc_modes[] = { "attach", "mapped", "bounce" };

const char *const *
cert_xproc_env(const char *mode)
{
  static const char *const attach[] = { NULL };
  static const char *const mapped[] = { "ITAPI_EMUL_CMA", "0", NULL };
  static const char *const bounce[] = { "ITAPI_EMUL_CMA", "0", "ITAPI_EMUL_MAP", "0", NULL };
  return strcmp(mode, "mapped") == 0 ? mapped : strcmp(mode, "bounce") == 0 ? bounce : attach;
}

void
cert_add_xproc(const char *path, void (*fn)(cert_t *, gconstpointer))
{
  for (size_t i = 0; i < G_N_ELEMENTS(cert_xproc_modes); i++) {
    g_autofree char *p = g_strdup_printf("%s/%s", path, cert_xproc_modes[i]);
    g_test_add(p, cert_t, cert_xproc_modes[i], cert_setup, fn, cert_teardown);
  }
}

gboolean
cert_require_reads(cert_t *f)
{
  if (f->caps.max_ird != 0 && f->caps.max_ord != 0)
    return TRUE;
  g_test_skip("the device offers no outstanding RDMA Read (max_ird or max_ord 0)");
  return FALSE;
}

void
cert_skipf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *why = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_test_skip(why);
}

gboolean
cert_require(cert_t *f, uint64_t cap)
{
  /* The certification runner parses this exact message, both as a note
   * (the test uses the capability) and as the reason of a skip. */
  g_autofree char *msg = g_strdup_printf("needs capability: %s", rnicpi_cap_name(cap));
  if ((f->caps.features & cap) != 0) {
    g_test_message("%s", msg);
    return TRUE;
  }
  g_test_skip(msg);
  return FALSE;
}

uint32_t
cert_min(uint32_t a, uint32_t b)
{
  return a < b ? a : b;
}

/* ---- Waiting for upcalls ---------------------------------------------- */

typedef gboolean (*match_fn)(gconstpointer ev, uint32_t type, uint64_t ctx);

/* Take the first event that matches, from those already seen or as they
 * arrive; events that do not match are kept for a later wait. */
static gpointer
wait_match(GAsyncQueue *q, GList **seen, match_fn match, uint32_t type, uint64_t ctx,
           guint timeout_ms, const char *what)
{
  for (GList *l = *seen; l != NULL; l = l->next)
    if (match(l->data, type, ctx)) {
      gpointer ev = l->data;
      *seen = g_list_delete_link(*seen, l);
      return ev;
    }
  cert_limit_t w;
  cert_limit_beginf(&w, (gint64) timeout_ms * 1000, "%s for context 0x%" G_GINT64_MODIFIER "x",
                    what, ctx);
  for (;;) {
    gint64 left = cert_limit_left(&w);
    /* Past the deadline, still look at what has already arrived. */
    gpointer ev = left > 0 ? g_async_queue_timeout_pop(q, (guint64) left)
                           : g_async_queue_try_pop(q);
    if (ev == NULL || match(ev, type, ctx)) {
      cert_limit_end(&w);
      return ev;
    }
    *seen = g_list_append(*seen, ev);
  }
}

static gboolean
match_cm(gconstpointer p, uint32_t type, uint64_t ctx)
{
  const rnicpi_cm_event_t *ev = p;
  if (ev->type != (rnicpi_cm_event_type_t) type)
    return FALSE;
  if (type == RNICPI_CM_CONNECT_REQUEST || type == RNICPI_CM_REQUEST_CANCELLED ||
      type == RNICPI_CM_UD_SVC_REQUEST)
    return ev->listen_ctx == ctx;
  return ev->qp_ctx == ctx;
}

static gboolean
match_async(gconstpointer p, uint32_t type, uint64_t ctx)
{
  const rnicpi_async_event_t *ev = p;
  return ev->type == (rnicpi_async_type_t) type && ev->ctx == ctx;
}

static gboolean
match_notify(gconstpointer p, uint32_t type, uint64_t ctx)
{
  (void) type;
  return *(const uint64_t *) p == ctx;
}

static const char *
cm_type_name(rnicpi_cm_event_type_t t)
{
  static const char *const names[] = {
    [RNICPI_CM_CONNECT_REQUEST] = "CONNECT_REQUEST", [RNICPI_CM_CONNECT_REPLY] = "CONNECT_REPLY",
    [RNICPI_CM_ESTABLISHED] = "ESTABLISHED", [RNICPI_CM_REJECTED] = "REJECTED",
    [RNICPI_CM_UNREACHABLE] = "UNREACHABLE", [RNICPI_CM_DISCONNECTED] = "DISCONNECTED",
    [RNICPI_CM_BROKEN] = "BROKEN", [RNICPI_CM_REQUEST_CANCELLED] = "REQUEST_CANCELLED",
  };
  return (unsigned) t < G_N_ELEMENTS(names) && names[t] != NULL ? names[t] : "unknown";
}

/* What a wait for a CM event of type @t names (a static string). */
static const char *
cm_what(rnicpi_cm_event_type_t t)
{
  static char what[16][48];
  static gsize once;
  if (g_once_init_enter(&once)) {
    for (unsigned i = 0; i < G_N_ELEMENTS(what); i++)
      g_snprintf(what[i], sizeof what[i], "the CM event %s", cm_type_name((rnicpi_cm_event_type_t) i));
    g_once_init_leave(&once, 1);
  }
  return (unsigned) t < G_N_ELEMENTS(what) ? what[t] : "a CM event";
}

rnicpi_cm_event_t *
cert_wait_cm(cert_t *f, rnicpi_cm_event_type_t type, uint64_t ctx)
{
  rnicpi_cm_event_t *ev = wait_match(f->cm_q, &f->cm_seen, match_cm, type, ctx, CERT_TIMEOUT_MS,
                                     cm_what(type));
  if (ev == NULL) {
    g_test_message("no %s CM event for context 0x%" G_GINT64_MODIFIER "x within %d ms",
                   cm_type_name(type), ctx, CERT_TIMEOUT_MS);
    /* What came instead tells a late event from another one. */
    for (GList *l = f->cm_seen; l != NULL; l = l->next) {
      const rnicpi_cm_event_t *o = l->data;
      if (o->qp_ctx == ctx || o->listen_ctx == ctx)
        g_test_message("came for that context, not yet taken: %s", cm_type_name(o->type));
    }
  }
  g_assert_nonnull(ev);
  return ev;
}

void
cert_assert_no_cm(cert_t *f, rnicpi_cm_event_type_t type, uint64_t ctx)
{
  rnicpi_cm_event_t *ev = wait_match(f->cm_q, &f->cm_seen, match_cm, type, ctx, CERT_QUIET_MS,
                                     cm_what(type));
  if (ev != NULL)
    g_test_message("unexpected second %s CM event for context 0x%" G_GINT64_MODIFIER "x",
                   cm_type_name(type), ctx);
  g_assert_null(ev);
}

rnicpi_cm_event_t *
cert_poll_cm(cert_t *f, rnicpi_cm_event_type_t type, uint64_t ctx, guint timeout_ms)
{
  return wait_match(f->cm_q, &f->cm_seen, match_cm, type, ctx, timeout_ms, cm_what(type));
}

rnicpi_async_event_t *
cert_wait_async(cert_t *f, rnicpi_async_type_t type, uint64_t ctx)
{
  rnicpi_async_event_t *ev =
    wait_match(f->async_q, &f->async_seen, match_async, type, ctx, CERT_TIMEOUT_MS,
               "an asynchronous event (cert_wait_async)");
  if (ev == NULL) {
    g_test_message("no asynchronous event %d for context 0x%" G_GINT64_MODIFIER "x within %d ms",
                   type, ctx, CERT_TIMEOUT_MS);
    for (GList *l = f->async_seen; l != NULL; l = l->next) {
      const rnicpi_async_event_t *o = l->data;
      if (o->ctx == ctx)
        g_test_message("came for that context, not yet taken: asynchronous event %d, cause %d",
                       o->type, o->cause);
    }
  }
  g_assert_nonnull(ev);
  return ev;
}

void
cert_gate_async(cert_t *f)
{
  g_mutex_lock(&f->gate_lock);
  f->gate_state = GATE_ARMED;
  g_mutex_unlock(&f->gate_lock);
}

gboolean
cert_gate_wait_held(cert_t *f, guint timeout_ms)
{
  cert_limit_t w;
  cert_limit_begin(&w, "an async_event upcall to reach the gate (cert_gate_wait_held)",
                   (gint64) timeout_ms * 1000);
  gint64 end = g_get_monotonic_time() + (gint64) timeout_ms * G_TIME_SPAN_MILLISECOND;
  g_mutex_lock(&f->gate_lock);
  while (f->gate_state == GATE_ARMED && g_cond_wait_until(&f->gate_cond, &f->gate_lock, end))
    ;
  gboolean held = f->gate_state == GATE_HELD || f->gate_state == GATE_LAPSED;
  g_mutex_unlock(&f->gate_lock);
  cert_limit_end(&w);
  return held;
}

gboolean
cert_gate_open(cert_t *f)
{
  g_mutex_lock(&f->gate_lock);
  gboolean lapsed = f->gate_state == GATE_LAPSED;
  f->gate_state = GATE_OFF;
  g_cond_broadcast(&f->gate_cond);
  g_mutex_unlock(&f->gate_lock);
  return !lapsed;
}

rnicpi_async_event_t *
cert_poll_async(cert_t *f, rnicpi_async_type_t type, uint64_t ctx, guint timeout_ms)
{
  return wait_match(f->async_q, &f->async_seen, match_async, type, ctx, timeout_ms,
                    "an asynchronous event (cert_poll_async)");
}

void
cert_wait_qp_async(cert_t *f, rnicpi_async_cause_t cause, uint64_t ctx)
{
  rnicpi_async_type_t type = rnicpi_async_type_of(cause);
  if (cert_prov->abi_minor < 7) {
    /* No cause, no QP_REMOTE_ERR before ABI 1.7: the type alone. */
    if (type != RNICPI_ASYNC_QP_REMOTE_ERR)
      g_free(cert_wait_async(f, type, ctx));
    return;
  }
  g_autofree rnicpi_async_event_t *ev = cert_wait_async(f, type, ctx);
  if (ev->term_layer != RNICPI_TERM_NONE)
    g_test_message("async event %d on 0x%" G_GINT64_MODIFIER "x: cause %s, Terminate layer %u "
                   "type %u code 0x%02x", type, ctx, rnicpi_async_cause_name(ev->cause), ev->term_layer,
                   ev->term_etype, ev->term_code);
  if (ev->cause != cause)
    g_test_message("async event %d on 0x%" G_GINT64_MODIFIER "x has cause %s (%d), expected %s",
                   type, ctx, rnicpi_async_cause_name(ev->cause), ev->cause, rnicpi_async_cause_name(cause));
  g_assert_cmpint(ev->cause, ==, cause);
}

gboolean
cert_wait_notify(cert_t *f, uint64_t cq_ctx, guint timeout_ms)
{
  gpointer ev = wait_match(f->notify_q, &f->notify_seen, match_notify, 0, cq_ctx, timeout_ms,
                           "a completion notification (cert_wait_notify)");
  g_free(ev);
  return ev != NULL;
}

/* ---- Completions ------------------------------------------------------ */

int
cert_poll(rnicpi_cq_t *cq, rnicpi_wc_t *wc, int n, guint timeout_ms)
{
  cert_limit_t w;
  cert_limit_beginf(&w, (gint64) timeout_ms * 1000, "%d completion%s on a CQ (cert_poll)", n,
                    n == 1 ? "" : "s");
  int got = 0;
  while (got < n) {
    int r = DAT->poll_cq(cq, wc + got, n - got);
    g_assert_cmpint(r, >=, 0);
    g_assert_cmpint(r, <=, n - got);
    got += r;
    if (got == n || cert_limit_over(&w))
      break;
    if (r == 0)
      g_usleep(500);
  }
  cert_limit_end(&w);
  return got;
}

void
cert_assert_cq_quiet(rnicpi_cq_t *cq)
{
  rnicpi_wc_t wc;
  g_usleep(CERT_QUIET_MS * 1000);
  int r = DAT->poll_cq(cq, &wc, 1);
  if (r != 0)
    g_test_message("unexpected completion: wr_id 0x%" G_GINT64_MODIFIER "x status %d opcode %d",
                   wc.wr_id, wc.status, wc.opcode);
  g_assert_cmpint(r, ==, 0);
}

rnicpi_wc_t
cert_wc(rnicpi_cq_t *cq)
{
  rnicpi_wc_t wc;
  memset(&wc, 0, sizeof(wc));
  g_assert_cmpint(cert_poll(cq, &wc, 1, CERT_TIMEOUT_MS), ==, 1);
  return wc;
}

/* Every id in @ids completed exactly once with @status, and nothing else. */
void
cert_assert_each_once(const rnicpi_wc_t *wc, int n, const uint64_t *ids, int nids,
                      rnicpi_wc_status_t status)
{
  g_autoptr(GHashTable) seen = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (int i = 0; i < n; i++) {
    gboolean known = FALSE;
    for (int j = 0; j < nids; j++)
      known |= ids[j] == wc[i].wr_id;
    if (!known || g_hash_table_contains(seen, &wc[i].wr_id))
      g_test_message("completion %d: wr_id 0x%" G_GINT64_MODIFIER "x %s", i, wc[i].wr_id,
                     known ? "completed twice" : "was never posted here");
    g_assert_true(known);
    g_assert_false(g_hash_table_contains(seen, &wc[i].wr_id));
    g_hash_table_add(seen, (gpointer) &wc[i].wr_id);
    g_assert_cmpint(wc[i].status, ==, status);
  }
  g_assert_cmpint(n, ==, nids);
}

void
cert_expect_flushed(rnicpi_cq_t *cq, uint64_t qp_ctx, const uint64_t *ids, int nids)
{
  rnicpi_wc_t *wc = g_new0(rnicpi_wc_t, nids + 1);
  int n = cert_poll(cq, wc, nids, CERT_TIMEOUT_MS);
  for (int i = 0; i < n; i++)
    g_assert_cmphex(wc[i].qp_ctx, ==, qp_ctx);
  cert_assert_each_once(wc, n, ids, nids, RNICPI_WC_WR_FLUSH_ERR);
  g_free(wc);
  cert_assert_cq_quiet(cq);
}

/* ---- Memory ----------------------------------------------------------- */

static void
buf_register(rnicpi_pd_t *pd, cert_buf_t *b, size_t len, uint32_t access)
{
  b->len = len;
  memset(b->mem, CERT_GUARD_BYTE, len + 2 * CERT_GUARD);
  b->data = b->mem + CERT_GUARD;
  memset(b->data, 0, len);
  rnicpi_mr_attr_t attr = {
    .addr = b->data, .length = len, .iova = (uint64_t) (uintptr_t) b->data, .access = access,
  };
  cert_ok(MEM->mr_reg(pd, &attr, &b->mr));
  g_assert_nonnull(b->mr);
#ifdef ITAPI_TSAN_GLIB_H
  /* A buffer of a test with a peer process, or of the peer: this process's
   * provider may place into it or read it for the other process, ordered
   * after this thread's accesses by lines on a pipe and frames the other
   * process wrote, where TSan cannot follow; so, as memory a NIC reaches
   * by DMA, its bytes are a benign race (doc/sanitizers.md). */
  if (buf_peer_reached)
    ITAPI_TSAN_DMA_TARGET(b->data, len, "a region reached for another process (cert-rnicpi --peer)");
#endif
}

void
cert_buf_peer_reached(gboolean on)
{
  buf_peer_reached = on;
}

void
cert_buf_new(rnicpi_pd_t *pd, cert_buf_t *b, size_t len, uint32_t access)
{
  memset(b, 0, sizeof(*b));
  b->fd = -1;
  b->mem = g_malloc(len + 2 * CERT_GUARD);
  buf_register(pd, b, len, access);
}

void
cert_buf_new_shared(rnicpi_pd_t *pd, cert_buf_t *b, size_t len, uint32_t access)
{
  memset(b, 0, sizeof(*b));
  long page = sysconf(_SC_PAGESIZE);
  b->map_len = (len + 2 * CERT_GUARD + (size_t) page - 1) / (size_t) page * (size_t) page;
  b->fd = memfd_create("cert-buf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (b->fd < 0 || ftruncate(b->fd, (off_t) b->map_len) != 0)
    g_error("a shared buffer of %zu bytes: memfd_create/ftruncate: %s", b->map_len,
            g_strerror(errno));
  void *m = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
  if (m == MAP_FAILED)
    g_error("a shared buffer of %zu bytes: mmap: %s", b->map_len, g_strerror(errno));
  b->mem = m;
  buf_register(pd, b, len, access);
}

void
cert_buf_free(cert_buf_t *b)
{
  if (b->mr != NULL)
    cert_ok(MEM->mr_dereg(b->mr));
  if (b->map_len != 0) {
    munmap(b->mem, b->map_len);
    close(b->fd);
  } else {
    g_free(b->mem);
  }
  memset(b, 0, sizeof(*b));
}

uint8_t
cert_pattern(uint8_t seed, size_t i)
{
  return (uint8_t) (seed * 31u + i * 7u + (i >> 8));
}

void
cert_buf_fill(cert_buf_t *b, uint8_t seed)
{
  for (size_t i = 0; i < b->len; i++)
    b->data[i] = cert_pattern(seed, i);
}

/* Bytes [off, off+len) hold the pattern of @seed as a buffer filled from 0. */
void
cert_buf_check(const cert_buf_t *b, size_t off, size_t len, uint8_t seed)
{
  for (size_t i = 0; i < len; i++)
    if (b->data[off + i] != cert_pattern(seed, i)) {
      g_test_message("byte %zu of the buffer is 0x%02x, expected 0x%02x", off + i,
                     b->data[off + i], cert_pattern(seed, i));
      g_assert_cmphex(b->data[off + i], ==, cert_pattern(seed, i));
    }
}

void
cert_buf_check_guards(const cert_buf_t *b)
{
  for (size_t i = 0; i < CERT_GUARD; i++) {
    g_assert_cmphex(b->mem[i], ==, CERT_GUARD_BYTE);
    g_assert_cmphex(b->data[b->len + i], ==, CERT_GUARD_BYTE);
  }
}

rnicpi_sge_t
cert_sge(const cert_buf_t *b, size_t off, uint32_t len)
{
  rnicpi_sge_t s = { .addr = (uint64_t) (uintptr_t) (b->data + off), .length = len,
                     .lkey = b->mr->lkey };
  return s;
}

uint64_t
cert_raddr(const cert_buf_t *b, size_t off)
{
  return (uint64_t) (uintptr_t) (b->data + off);
}

/* ---- Queue pairs and connections -------------------------------------- */

rnicpi_qp_attr_t
cert_qp_attr(cert_t *f, rnicpi_cq_t *scq, rnicpi_cq_t *rcq)
{
  const rnicpi_caps_t *c = &f->caps;
  rnicpi_qp_attr_t a = {
    .send_cq = scq, .recv_cq = rcq,
    .max_send_wr = cert_min(64, c->max_qp_wr), .max_recv_wr = cert_min(64, c->max_qp_wr),
    .max_send_sge = cert_min(4, c->max_send_sge), .max_recv_sge = cert_min(4, c->max_recv_sge),
    .max_rdma_write_sge = cert_min(4, c->max_rdma_write_sge),
    .max_rdma_read_sge = cert_min(4, c->max_rdma_read_sge),
    .ird = cert_min(4, c->max_ird), .ord = cert_min(4, c->max_ord),
    .access = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE,
  };
  if (c->features & RNICPI_CAP_ATOMICS)
    a.access |= RNICPI_ACCESS_ATOMIC;
  return a;
}

/* A domain, a send and a receive CQ, and a queue pair using them; @attr
 * gives the QP's attributes (its CQ members are replaced), NULL the defaults. */
void
cert_side_new(cert_t *f, cert_side_t *s, uint64_t ctx, uint32_t cq_depth,
              const rnicpi_qp_attr_t *attr)
{
  memset(s, 0, sizeof(*s));
  s->ctx = ctx;
  cert_ok(DEV->pd_alloc(f->dev, &s->pd));
  cert_ok(QUE->cq_create(f->dev, cq_depth, ctx | 1, &s->scq));
  cert_ok(QUE->cq_create(f->dev, cq_depth, ctx | 2, &s->rcq));
  rnicpi_qp_attr_t a = attr != NULL ? *attr : cert_qp_attr(f, NULL, NULL);
  a.send_cq = s->scq;
  a.recv_cq = s->rcq;
  cert_ok(QUE->qp_create(s->pd, &a, ctx, &s->qp));
  g_assert_nonnull(s->qp);
}

void
cert_side_free(cert_side_t *s)
{
  if (s->qp != NULL)
    cert_ok(QUE->qp_destroy(s->qp));
  cert_ok(QUE->cq_destroy(s->scq));
  cert_ok(QUE->cq_destroy(s->rcq));
  cert_ok(DEV->pd_free(s->pd));
  memset(s, 0, sizeof(*s));
}

/* Ports for listeners: RNICPI_CERT_PORT, or one derived from the pid so
 * that two certification runs on one host do not collide. */
uint32_t
cert_port(void)
{
  static uint32_t next;
  if (next == 0) {
    const char *env = g_getenv("RNICPI_CERT_PORT");
    next = env != NULL ? (uint32_t) g_ascii_strtoull(env, NULL, 10)
                       : 20000u + (uint32_t) (getpid() % 1000) * 40u;
  }
  return next++;
}

void
cert_self_addr(cert_t *f, struct sockaddr_storage *out)
{
  /* The device's own first address: an RNIC (rdma_cm over rxe and siw
   * too) reaches its peers only through its port's addresses, and
   * 127.0.0.1 is none of them.  Loopback only when it lists none. */
  memset(out, 0, sizeof(*out));
  if (f->caps.num_addrs > 0) {
    *out = f->caps.addrs[0];
    if (out->ss_family != AF_INET && out->ss_family != AF_INET6)
      g_error("device '%s' lists caps.addrs[0] of address family %d; a provider lists IPv4 or "
              "IPv6 addresses (AF_INET %d, AF_INET6 %d) for its peers to connect to",
              f->dev_name, out->ss_family, AF_INET, AF_INET6);
    return;
  }
  struct sockaddr_in *s4 = (struct sockaddr_in *) out;
  s4->sin_family = AF_INET;
  s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

void
cert_self_gid(cert_t *f, uint8_t gid[RNICPI_GID_LEN])
{
  struct sockaddr_storage ss;
  cert_self_addr(f, &ss);
  memset(gid, 0, 16);
  if (ss.ss_family == AF_INET6) {
    memcpy(gid, &((const struct sockaddr_in6 *) &ss)->sin6_addr, 16);
  } else {
    gid[10] = gid[11] = 0xff;
    memcpy(gid + 12, &((const struct sockaddr_in *) &ss)->sin_addr, 4);
  }
}

void
cert_addr(cert_t *f, uint32_t port, rnicpi_addr_t *out)
{
  memset(out, 0, sizeof(*out));
  cert_self_addr(f, &out->sa);
  if (out->sa.ss_family == AF_INET)
    ((struct sockaddr_in *) &out->sa)->sin_port = htons((uint16_t) port);
  else
    ((struct sockaddr_in6 *) &out->sa)->sin6_port = htons((uint16_t) port);
}

uint32_t
cert_listen(cert_t *f, uint64_t ctx, rnicpi_listen_t **lst)
{
  /* A TCP-based provider shares the host's port space: a port another
   * test's connection holds is skipped, anything else fails the test. */
  for (int attempt = 0; attempt < 32; attempt++) {
    uint32_t port = cert_port();
    rnicpi_status_t st = CMV->listen(f->dev, port, ctx, lst);
    if (st == RNICPI_OK)
      return port;
    cert_cmpst(st, RNICPI_EEXIST);
  }
  g_error("no free port for a listener after 32 tries");
  return 0;
}

/* Two sides connected over the CM verbs (two-way), or a skip. */
gboolean
cert_pair_open(cert_t *f, cert_pair_t *pr, const rnicpi_qp_attr_t *attr)
{
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord) };
  return cert_pair_open_cp(f, pr, attr, &cp, &cp);
}

gboolean
cert_pair_open_cp(cert_t *f, cert_pair_t *pr, const rnicpi_qp_attr_t *attr,
                  const rnicpi_conn_param_t *act, const rnicpi_conn_param_t *pas)
{
  memset(pr, 0, sizeof(*pr));
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return FALSE;
  cert_side_new(f, &pr->a, 0xa0000, 256, attr);
  cert_side_new(f, &pr->p, 0xb0000, 256, attr);

  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x1150, &lst);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  cert_ok(CMV->connect(pr->a.qp, &dst, act));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1150);
  cert_ok(CMV->accept(pr->p.qp, req->conn_id, pas));
  g_autofree rnicpi_cm_event_t *ea = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr->a.ctx);
  g_autofree rnicpi_cm_event_t *ep = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pr->p.ctx);
  pr->a.ird = ea->ird;
  pr->a.ord = ea->ord;
  pr->p.ird = ep->ird;
  pr->p.ord = ep->ord;
  cert_ok(CMV->unlisten(lst));
  g_assert_cmpint(QUE->qp_state(pr->a.qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(QUE->qp_state(pr->p.qp), ==, RNICPI_QPS_RTS);
  return TRUE;
}

void
cert_pair_free(cert_pair_t *pr)
{
  cert_side_free(&pr->a);
  cert_side_free(&pr->p);
}

void
cert_post_recv(rnicpi_qp_t *qp, const cert_buf_t *b, size_t off, uint32_t len, uint64_t id)
{
  rnicpi_sge_t s = cert_sge(b, off, len);
  rnicpi_recv_wr_t wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 };
  cert_ok(DAT->post_recv(qp, &wr));
}

void
cert_placed(cert_t *f, cert_pair_t *pr, uint64_t raddr, uint64_t rkey)
{
  cert_placed_by(f, &pr->a, raddr, rkey);
}

void
cert_placed_by(cert_t *f, cert_side_t *s, uint64_t raddr, uint64_t rkey)
{
  if (f->caps.features & RNICPI_CAP_PLACED_COMPLETION)
    return;
  cert_post_send(s->qp, RNICPI_WR_RDMA_READ, NULL, 0, 0, CERT_PLACED_ID, RNICPI_WR_SIGNALED,
                 raddr, rkey);
  rnicpi_wc_t wc = cert_wc(s->scq);
  g_assert_cmphex(wc.wr_id, ==, CERT_PLACED_ID);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
}

/* One WR with one SGE (none when @b is NULL). */
void
cert_post_send(rnicpi_qp_t *qp, rnicpi_wr_opcode_t op, const cert_buf_t *b, size_t off,
               uint32_t len, uint64_t id, uint32_t flags, uint64_t raddr, uint64_t rkey)
{
  rnicpi_sge_t s = { 0 };
  if (b != NULL)
    s = cert_sge(b, off, len);
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = op, .flags = flags, .sg_list = &s,
                          .num_sge = b != NULL ? 1 : 0, .remote_addr = raddr, .rkey = rkey };
  cert_ok(DAT->post_send(qp, &wr));
}

uint32_t
cert_sink_access(cert_t *f)
{
  uint32_t a = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE;
  if (f->caps.features & RNICPI_CAP_READ_SINK_REMOTE_WRITE)
    a |= RNICPI_ACCESS_REMOTE_WRITE;
  return a;
}
