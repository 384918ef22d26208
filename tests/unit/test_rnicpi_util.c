/*
 * Unit tests of rnicpi_util's completion ring and notification batches:
 * a notification queued under a provider's lock is delivered by value
 * after it, even when the CQ it came from is freed in between.
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
#include <string.h>

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

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/rnicpi/util/notify-after-free", test_notify_after_free);
  g_test_add_func("/rnicpi/util/batch-order", test_batch_order);
  g_test_add_func("/rnicpi/util/quiesce", test_quiesce);
  g_test_add_func("/rnicpi/util/quiesce-in-upcall", test_quiesce_in_upcall);
  return g_test_run();
}
