/*
 * Unit tests of rnicpi_util's completion ring, notification batches and
 * spin lock: a notification queued under a provider's lock is delivered by
 * value after it, even when the CQ it came from is freed in between; the
 * ring passes every completion once, in order, between threads; the lock
 * excludes, and a waiter on a long section sleeps instead of spinning; the
 * host's port rules are read as the kernel's own tools report them; a
 * loopback destination is recognised, and mapped to a device's own address
 * only where the device lists no loopback address.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <glib.h>
#include <linux/capability.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rnicpi_util.h"

typedef struct seen {
  GMutex lock;
  GArray *calls;  /* of rnicpi_notify_t (notify and inflight unused) */
  int delay_ms;   /* each upcall takes this long */
} seen_t;

static seen_t *seen_now;

static void
record(void *dev_ctx, uint64_t cq_ctx)
{
  seen_t *s = seen_now;
  if (s->delay_ms > 0)
    g_usleep((gulong) s->delay_ms * 1000);
  rnicpi_notify_t n = { NULL, dev_ctx, cq_ctx, NULL };
  g_mutex_lock(&s->lock);
  g_array_append_val(s->calls, n);
  g_mutex_unlock(&s->lock);
}

static void
seen_init(seen_t *s)
{
  memset(s, 0, sizeof(*s));
  g_mutex_init(&s->lock);
  s->calls = g_array_new(FALSE, FALSE, sizeof(rnicpi_notify_t));
  seen_now = s;
}

static void
seen_clear(seen_t *s)
{
  g_array_free(s->calls, TRUE);
  g_mutex_clear(&s->lock);
  seen_now = NULL;
}

/* A provider's CQ: the ring inside a larger object. */
typedef struct fake_cq {
  uint64_t pad[4];
  rnicpi_cq_ring_t ring;
} fake_cq_t;

static fake_cq_t *
fake_cq_new(void *dev_ctx, uint64_t cq_ctx, gint *inflight)
{
  fake_cq_t *cq = g_new0(fake_cq_t, 1);
  rnicpi_notify_t to = { record, dev_ctx, cq_ctx, inflight };
  rnicpi_cq_ring_init(&cq->ring, 4, &to);
  return cq;
}

/* Destroy as a provider does, then scribble over the memory as a reuse
 * would: a delivery that read the CQ would pass garbage. */
static void
fake_cq_free(fake_cq_t *cq)
{
  rnicpi_cq_ring_clear(&cq->ring);
  memset(cq, 0xa5, sizeof(*cq));
  g_free(cq);
}

static rnicpi_wc_t
wc_of(uint64_t id)
{
  rnicpi_wc_t wc;
  memset(&wc, 0, sizeof(wc));
  wc.wr_id = id;
  return wc;
}

static void
test_notify_after_free(void)
{
  g_test_summary("an armed ring's push queues a notification by value: the CQ freed (and its "
                 "memory overwritten) before delivery, the upcall still gets the CQ's and the "
                 "device's contexts, once, and the device's in-flight count returns to 0");
  seen_t s;
  seen_init(&s);
  gint inflight = 0;
  int dev_marker;
  fake_cq_t *cq = fake_cq_new(&dev_marker, 0x1234abcdULL, &inflight);
  rnicpi_notify_batch_t b = { .nnotify = 0 };
  rnicpi_wc_t wc = wc_of(1);
  /* Not armed: no notification. */
  g_assert_false(rnicpi_cq_ring_push_notify(&cq->ring, &wc, &b));
  g_assert_cmpint(b.nnotify, ==, 0);
  rnicpi_cq_ring_arm(&cq->ring);
  wc = wc_of(2);
  g_assert_false(rnicpi_cq_ring_push_notify(&cq->ring, &wc, &b));
  g_assert_cmpint(b.nnotify, ==, 1);
  g_assert_cmpint(g_atomic_int_get(&inflight), ==, 1);
  /* An arm is answered once: the next push queues nothing. */
  wc = wc_of(3);
  g_assert_false(rnicpi_cq_ring_push_notify(&cq->ring, &wc, &b));
  g_assert_cmpint(b.nnotify, ==, 1);
  fake_cq_free(cq);
  rnicpi_notify_batch_deliver(&b);
  g_assert_cmpuint(s.calls->len, ==, 1);
  rnicpi_notify_t *n = &g_array_index(s.calls, rnicpi_notify_t, 0);
  g_assert_true(n->dev_ctx == (void *) &dev_marker);
  g_assert_cmphex(n->cq_ctx, ==, 0x1234abcdULL);
  g_assert_cmpint(g_atomic_int_get(&inflight), ==, 0);
  g_assert_cmpint(b.nnotify, ==, 0);
  seen_clear(&s);
}

static void
test_batch_order(void)
{
  g_test_summary("a batch of 20 notifications (past its 8 inline entries) delivers each once, "
                 "in the order queued, and empties");
  seen_t s;
  seen_init(&s);
  gint inflight = 0;
  rnicpi_notify_batch_t b = { .nnotify = 0 };
  for (uint64_t i = 0; i < 20; i++) {
    fake_cq_t *cq = fake_cq_new(NULL, 100 + i, &inflight);
    rnicpi_cq_ring_arm(&cq->ring);
    rnicpi_wc_t wc = wc_of(i);
    g_assert_false(rnicpi_cq_ring_push_notify(&cq->ring, &wc, &b));
    fake_cq_free(cq);
  }
  g_assert_cmpint(g_atomic_int_get(&inflight), ==, 20);
  rnicpi_notify_batch_deliver(&b);
  g_assert_cmpuint(s.calls->len, ==, 20);
  for (guint i = 0; i < 20; i++)
    g_assert_cmpuint(g_array_index(s.calls, rnicpi_notify_t, i).cq_ctx, ==, 100 + i);
  g_assert_cmpint(g_atomic_int_get(&inflight), ==, 0);
  g_assert_null(b.more);
  seen_clear(&s);
}

typedef struct deliverer {
  rnicpi_notify_batch_t b;
  gint started;
} deliverer_t;

static gpointer
deliver_thread(gpointer data)
{
  deliverer_t *d = data;
  g_atomic_int_set(&d->started, 1);
  rnicpi_notify_batch_deliver(&d->b);
  return NULL;
}

static void
test_quiesce(void)
{
  g_test_summary("rnicpi_notify_quiesce (a device's close) returns only after a notification "
                 "being delivered by another thread has finished its upcall");
  seen_t s;
  seen_init(&s);
  s.delay_ms = 200;
  gint inflight = 0;
  deliverer_t d = { .b = { .nnotify = 0 } };
  fake_cq_t *cq = fake_cq_new(NULL, 7, &inflight);
  rnicpi_cq_ring_arm(&cq->ring);
  rnicpi_wc_t wc = wc_of(1);
  rnicpi_cq_ring_push_notify(&cq->ring, &wc, &d.b);
  fake_cq_free(cq);
  GThread *t = g_thread_new("deliver", deliver_thread, &d);
  while (!g_atomic_int_get(&d.started))
    g_usleep(100);
  rnicpi_notify_quiesce(&inflight);
  g_mutex_lock(&s.lock);
  guint done = s.calls->len;
  g_mutex_unlock(&s.lock);
  g_assert_cmpuint(done, ==, 1);
  g_thread_join(t);
  seen_clear(&s);
}

static gint nested_inflight;
static int nested_returned;

/* An upcall that closes its device: the quiesce inside it must not wait
 * for the delivery it runs in. */
static void
close_from_upcall(void *dev_ctx, uint64_t cq_ctx)
{
  (void) dev_ctx;
  (void) cq_ctx;
  rnicpi_notify_quiesce(&nested_inflight);
  nested_returned++;
}

static void
test_quiesce_in_upcall(void)
{
  g_test_summary("rnicpi_notify_quiesce called from inside a delivery (an upcall closing its "
                 "device) returns without waiting for that delivery's own two entries");
  rnicpi_notify_batch_t b = { .nnotify = 0 };
  rnicpi_notify_t to = { close_from_upcall, NULL, 1, &nested_inflight };
  for (int i = 0; i < 2; i++) {
    rnicpi_cq_ring_t r;
    rnicpi_cq_ring_init(&r, 4, &to);
    rnicpi_cq_ring_arm(&r);
    rnicpi_wc_t wc = wc_of((uint64_t) i);
    rnicpi_cq_ring_push_notify(&r, &wc, &b);
    rnicpi_cq_ring_clear(&r);
  }
  g_assert_cmpint(g_atomic_int_get(&nested_inflight), ==, 2);
  rnicpi_notify_batch_deliver(&b);
  g_assert_cmpint(nested_returned, ==, 2);
  g_assert_cmpint(g_atomic_int_get(&nested_inflight), ==, 0);
}

/* ---- spin lock ---- */

#define SPIN_ROUNDS 200000

typedef struct spin_shared {
  rnicpi_spin_t lock;
  uint64_t count;     /* plain: only changed under the lock */
  int inside;         /* plain: threads inside the section */
  gboolean overlap;   /* two were inside at once */
} spin_shared_t;

static gpointer
spin_worker(gpointer data)
{
  spin_shared_t *sh = data;
  for (int i = 0; i < SPIN_ROUNDS; i++) {
    rnicpi_spin_lock(&sh->lock);
    if (sh->inside++ != 0)
      sh->overlap = TRUE;
    sh->count++;
    sh->inside--;
    rnicpi_spin_unlock(&sh->lock);
  }
  return NULL;
}

static void
test_spin_exclusion(void)
{
  g_test_summary("two threads taking the spin lock 200000 times each: never both inside, "
                 "no increment lost; trylock fails while it is held");
  spin_shared_t sh = { { 0 }, 0, 0, FALSE };
  GThread *a = g_thread_new("spin-a", spin_worker, &sh);
  GThread *b = g_thread_new("spin-b", spin_worker, &sh);
  g_thread_join(a);
  g_thread_join(b);
  g_assert_false(sh.overlap);
  g_assert_cmpuint(sh.count, ==, 2 * SPIN_ROUNDS);
  g_assert_true(rnicpi_spin_trylock(&sh.lock));
  g_assert_false(rnicpi_spin_trylock(&sh.lock));
  rnicpi_spin_unlock(&sh.lock);
  g_assert_true(rnicpi_spin_trylock(&sh.lock));
  rnicpi_spin_unlock(&sh.lock);
}

#define HOLD_MS 40

typedef struct spin_long {
  rnicpi_spin_t lock;
  gint released;      /* the holder let go */
  gboolean early;     /* the waiter got in before that */
  double cpu_ms;      /* the waiter's CPU time while it waited */
} spin_long_t;

static double
thread_cpu_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double) t.tv_sec * 1e3 + (double) t.tv_nsec / 1e6;
}

static gpointer
spin_waiter(gpointer data)
{
  spin_long_t *sl = data;
  double c0 = thread_cpu_ms();
  rnicpi_spin_lock(&sl->lock);
  sl->cpu_ms = thread_cpu_ms() - c0;
  sl->early = !g_atomic_int_get(&sl->released);
  rnicpi_spin_unlock(&sl->lock);
  return NULL;
}

static void
test_spin_long_hold(void)
{
  g_test_summary("a waiter on a spin lock held for 40 ms gets it only after the release, "
                 "and uses well under half of those 40 ms of CPU (it sleeps, not spins)");
  spin_long_t sl = { { 0 }, 0, FALSE, 0 };
  rnicpi_spin_lock(&sl.lock);
  GThread *w = g_thread_new("spin-wait", spin_waiter, &sl);
  g_usleep(HOLD_MS * 1000);
  g_atomic_int_set(&sl.released, 1);
  rnicpi_spin_unlock(&sl.lock);
  g_thread_join(w);
  g_assert_false(sl.early);
  g_test_message("waiter CPU while the lock was held %d ms: %.2f ms", HOLD_MS, sl.cpu_ms);
  g_assert_cmpfloat(sl.cpu_ms, <, HOLD_MS / 2.0);
}

/* ---- the ring between two threads ---- */

#define RING_N 100000

static gpointer
ring_producer(gpointer data)
{
  rnicpi_cq_ring_t *r = data;
  for (uint64_t i = 0; i < RING_N; i++) {
    rnicpi_wc_t wc = wc_of(i);
    rnicpi_cq_ring_push(r, &wc);
  }
  return NULL;
}

static void
test_ring_threads(void)
{
  g_test_summary("one thread pushes 100000 completions into a ring of depth 4 (it grows) while "
                 "another polls: every one arrives once, in order, with its wr_id");
  rnicpi_notify_t to = { NULL, NULL, 0, NULL };
  rnicpi_cq_ring_t r;
  rnicpi_cq_ring_init(&r, 4, &to);
  GThread *p = g_thread_new("ring-push", ring_producer, &r);
  uint64_t next = 0;
  rnicpi_wc_t got[8];
  while (next < RING_N) {
    int n = rnicpi_cq_ring_poll(&r, got, (int) G_N_ELEMENTS(got));
    for (int i = 0; i < n; i++, next++)
      if (got[i].wr_id != next)
        g_error("entry %" G_GUINT64_FORMAT " has wr_id %" G_GUINT64_FORMAT, next, got[i].wr_id);
  }
  g_thread_join(p);
  g_assert_cmpuint(rnicpi_cq_ring_count(&r), ==, 0);
  rnicpi_cq_ring_clear(&r);
}

static void
test_host_port_start(void)
{
  g_test_summary("rnicpi_unprivileged_port_start() gives the host's "
                 "net.ipv4.ip_unprivileged_port_start as sysctl(8) reports it");
  uint32_t start = rnicpi_unprivileged_port_start();
  g_assert_cmpuint(start, <=, 65535);
  /* procps installs it in /usr/sbin or /sbin, often off a user's PATH. */
  g_autofree char *sysctl = g_find_program_in_path("sysctl");
  for (const char *const *p = (const char *const[]) { "/usr/sbin/sysctl", "/sbin/sysctl", NULL };
       sysctl == NULL && *p != NULL; p++)
    if (g_file_test(*p, G_FILE_TEST_IS_EXECUTABLE))
      sysctl = g_strdup(*p);
  if (sysctl == NULL) {
    g_test_skip("no sysctl(8) on PATH to compare with");
    return;
  }
  const char *argv[] = { sysctl, "-n", "net.ipv4.ip_unprivileged_port_start", NULL };
  g_autofree char *out = NULL;
  int wait = 0;
  g_assert_true(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                             &out, NULL, &wait, NULL));
  if (!g_spawn_check_wait_status(wait, NULL)) {
    g_test_skip("sysctl(8) cannot read net.ipv4.ip_unprivileged_port_start here");
    return;
  }
  g_assert_cmpuint(g_ascii_strtoull(out, NULL, 10), ==, start);
}

static void
test_host_caps(void)
{
  g_test_summary("rnicpi_cap_effective() (capget) and rnicpi_pid_cap_effective() of this "
                 "process (/proc/self/status) agree on every capability; a process that is "
                 "not there, or a capability past 63, is no answer and leaves the output alone");
  for (unsigned cap = 0; cap <= CAP_LAST_CAP; cap++) {
    gboolean has = 2;
    g_assert_true(rnicpi_pid_cap_effective(getpid(), cap, &has));
    g_assert_cmpint(has, ==, rnicpi_cap_effective(cap));
  }
  g_assert_false(rnicpi_cap_effective(CAP_LAST_CAP + 1));
  gboolean has = 2;
  g_assert_false(rnicpi_pid_cap_effective(getpid(), 64, &has));
  /* Above the kernel's pid_max limit (2^22): no such process. */
  g_assert_false(rnicpi_pid_cap_effective((pid_t) (1 << 23), CAP_NET_BIND_SERVICE, &has));
  g_assert_cmpint(has, ==, 2);
}

/* @text ("10.9.0.1", "::1") as a socket address, port 0. */
static struct sockaddr_storage
sa_of(const char *text)
{
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
  if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
  } else {
    g_assert_cmpint(inet_pton(AF_INET6, text, &s6->sin6_addr), ==, 1);
    s6->sin6_family = AF_INET6;
  }
  return ss;
}

static void
test_addr_loopback(void)
{
  g_test_summary("rnicpi_addr_is_loopback: 127.0.0.0/8, ::1 and IPv4-mapped 127.x.y.z are this "
                 "host's loopback; a device address, the wildcards and a mapped other address "
                 "are not");
  static const char *const yes[] = { "127.0.0.1", "127.1.2.3", "127.255.255.254", "::1",
                                     "::ffff:127.0.0.1", "::ffff:127.9.8.7" };
  static const char *const no[] = { "10.9.0.1", "0.0.0.0", "128.0.0.1", "126.255.255.255", "::",
                                    "::ffff:10.0.0.1", "::2", "fe80::1", "::127.0.0.1" };
  for (size_t i = 0; i < G_N_ELEMENTS(yes); i++) {
    struct sockaddr_storage ss = sa_of(yes[i]);
    g_test_message("%s", yes[i]);
    g_assert_true(rnicpi_addr_is_loopback((const struct sockaddr *) &ss));
  }
  for (size_t i = 0; i < G_N_ELEMENTS(no); i++) {
    struct sockaddr_storage ss = sa_of(no[i]);
    g_test_message("%s", no[i]);
    g_assert_false(rnicpi_addr_is_loopback((const struct sockaddr *) &ss));
  }
  struct sockaddr_storage unix_ss = { .ss_family = AF_UNIX };
  g_assert_false(rnicpi_addr_is_loopback((const struct sockaddr *) &unix_ss));
}

/* A capability record listing @n addresses, in text. */
static rnicpi_caps_t
caps_listing(const char *const *addrs, unsigned n)
{
  rnicpi_caps_t c;
  memset(&c, 0, sizeof(c));
  g_assert_cmpuint(n, <=, G_N_ELEMENTS(c.addrs));
  for (unsigned i = 0; i < n; i++) {
    c.addrs[i] = sa_of(addrs[i]);
    /* A listed address may carry a port: the target never does. */
    ((struct sockaddr_in *) &c.addrs[i])->sin_port = htons(4791);
  }
  c.num_addrs = n;
  return c;
}

/* rnicpi_caps_loopback_target's answer for @family on @c: its address in
 * text, or "" when FALSE (and @out then untouched). */
static char *
target_of(const rnicpi_caps_t *c, int family)
{
  struct sockaddr_storage out;
  memset(&out, 0xee, sizeof(out));
  if (!rnicpi_caps_loopback_target(c, family, &out)) {
    g_assert_cmphex(((unsigned char *) &out)[0], ==, 0xee);
    return g_strdup("");
  }
  char buf[INET6_ADDRSTRLEN];
  if (out.ss_family == AF_INET) {
    g_assert_cmpuint(((struct sockaddr_in *) &out)->sin_port, ==, 0);
    return g_strdup(inet_ntop(AF_INET, &((struct sockaddr_in *) &out)->sin_addr, buf, sizeof(buf)));
  }
  g_assert_cmpint(out.ss_family, ==, AF_INET6);
  g_assert_cmpuint(((struct sockaddr_in6 *) &out)->sin6_port, ==, 0);
  return g_strdup(inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &out)->sin6_addr, buf, sizeof(buf)));
}

static void
test_loopback_target(void)
{
  g_test_summary("rnicpi_caps_loopback_target: on a device that lists no loopback address, a "
                 "loopback destination stands for its first address of the same family, else "
                 "of the other, port 0; a device listing a loopback address, or none, keeps it");
  static const char *const v4_only[] = { "10.9.0.1", "10.9.0.2" };
  static const char *const both[] = { "10.0.2.15", "fd00::15", "fd00::16" };
  static const char *const v6_only[] = { "fd00::1" };
  static const char *const with_lo[] = { "127.0.0.1", "192.168.1.2", "::1" };
  static const char *const with_lo6[] = { "10.1.1.1", "::1" };
  struct {
    const char *const *addrs;
    unsigned n;
    int family;
    const char *want;
  } rows[] = {
    { v4_only, 2, AF_INET, "10.9.0.1" },   { v4_only, 2, AF_INET6, "10.9.0.1" },
    { both, 3, AF_INET, "10.0.2.15" },     { both, 3, AF_INET6, "fd00::15" },
    { v6_only, 1, AF_INET, "fd00::1" },    { v6_only, 1, AF_INET6, "fd00::1" },
    { with_lo, 3, AF_INET, "" },           { with_lo, 3, AF_INET6, "" },
    { with_lo6, 2, AF_INET, "" },          { NULL, 0, AF_INET, "" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
    rnicpi_caps_t c = caps_listing(rows[i].addrs, rows[i].n);
    g_autofree char *got = target_of(&c, rows[i].family);
    g_test_message("row %zu: %s", i, got);
    g_assert_cmpstr(got, ==, rows[i].want);
  }
  /* A count past the array is read no further than the array. */
  rnicpi_caps_t c = caps_listing(v4_only, 2);
  c.num_addrs = 99;
  g_autofree char *got = target_of(&c, AF_INET);
  g_assert_cmpstr(got, ==, "10.9.0.1");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/rnicpi/util/notify-after-free", test_notify_after_free);
  g_test_add_func("/rnicpi/util/batch-order", test_batch_order);
  g_test_add_func("/rnicpi/util/quiesce", test_quiesce);
  g_test_add_func("/rnicpi/util/quiesce-in-upcall", test_quiesce_in_upcall);
  g_test_add_func("/rnicpi/util/spin-exclusion", test_spin_exclusion);
  g_test_add_func("/rnicpi/util/spin-long-hold", test_spin_long_hold);
  g_test_add_func("/rnicpi/util/ring-threads", test_ring_threads);
  g_test_add_func("/rnicpi/util/host/port-start", test_host_port_start);
  g_test_add_func("/rnicpi/util/host/caps", test_host_caps);
  g_test_add_func("/rnicpi/util/addr/loopback", test_addr_loopback);
  g_test_add_func("/rnicpi/util/addr/loopback-target", test_loopback_target);
  return g_test_run();
}
