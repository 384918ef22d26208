/*
 * cert-rnicpi: the end of upcalls.  rnicpi_upcalls_t.cq_notify may come
 * while, or just after, a CQ is destroyed (the access layer looks its
 * context up), so once at most after cq_destroy returned; and the device's
 * close promises that no upcall of any kind comes once it returned: the
 * access layer frees what its context points to right after.  The test
 * opens a device of its own with an upcall table that counts, keeps
 * traffic, armed CQs and connection events going up to the teardown, and
 * holds each upcall of the teardown that comes from a provider's thread
 * until the test is about to call close, then makes it slow, so that what
 * a provider queued is still queued when close is called, and one that
 * delivers it after close has time to show it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)

#define QUIET_PAIRS 4
#define QUIET_CQS (4 * QUIET_PAIRS)
/* How long a teardown upcall takes once close is near, how long it waits
 * for that at most (a provider whose teardown waits for its upcalls then
 * goes on), and how long to watch after close. */
#define QUIET_SLOW_US 20000
#define QUIET_HOLD_US 1000000
#define QUIET_AFTER_MS 500

/** A device opened by the test, its upcalls counted. */
typedef struct quiet {
  cert_t c;               /* its queues, as the fixture's */
  GMutex lock;            /* guards what follows */
  GCond near;             /* closing was set */
  gboolean slow;          /* the teardown: each upcall is held, then slow */
  gboolean closing;       /* the test is about to call close */
  GThread *test;          /* the test's thread, whose calls may upcall at once */
  gboolean closed;        /* close returned */
  int after_close;        /* upcalls that came after that */
  int notifies;           /* cq_notify upcalls, all told */
  int in_teardown;        /* upcalls once the teardown began */
  uint64_t gone[QUIET_CQS]; /* contexts of the CQs destroyed so far */
  int after_gone[QUIET_CQS]; /* cq_notify naming each once its destroy returned */
  int ngone;
  char first_late[128];   /* the first upcall after close, for the message */
} quiet_t;

/* Count an upcall; TRUE when it may be queued for the test (not after
 * close: the queues are still there, but the event must not exist). */
static gboolean
quiet_count(quiet_t *q, const char *what, uint64_t ctx, gboolean notify)
{
  g_mutex_lock(&q->lock);
  gboolean closed = q->closed, slow = q->slow && g_thread_self() != q->test;
  /* A provider thread's upcall of the teardown waits for the test to
   * reach close, so that what the provider queued behind it is still
   * queued then. */
  cert_limit_t w;
  cert_limit_begin(&w, "the test to reach close (an upcall held)", QUIET_HOLD_US);
  while (slow && !q->closing && g_cond_wait_until(&q->near, &q->lock, w.end))
    ;
  cert_limit_end(&w);
  if (closed && q->after_close++ == 0)
    g_snprintf(q->first_late, sizeof(q->first_late), "%s for context 0x%" G_GINT64_MODIFIER "x",
               what, ctx);
  if (q->slow)
    q->in_teardown++;
  if (notify) {
    q->notifies++;
    for (int i = 0; i < q->ngone; i++)
      if (q->gone[i] == ctx)
        q->after_gone[i]++;
  }
  g_mutex_unlock(&q->lock);
  if (slow)
    g_usleep(QUIET_SLOW_US);
  return !closed;
}

static void
quiet_cm_event(void *dev_ctx, const rnicpi_cm_event_t *ev)
{
  quiet_t *q = dev_ctx;
  if (quiet_count(q, "a CM event", ev->qp_ctx | ev->listen_ctx, FALSE))
    g_async_queue_push(q->c.cm_q, g_memdup2(ev, sizeof(*ev)));
}

static void
quiet_cq_notify(void *dev_ctx, uint64_t cq_ctx)
{
  quiet_t *q = dev_ctx;
  if (quiet_count(q, "cq_notify", cq_ctx, TRUE))
    g_async_queue_push(q->c.notify_q, g_memdup2(&cq_ctx, sizeof(cq_ctx)));
}

static void
quiet_async_event(void *dev_ctx, const rnicpi_async_event_t *ev)
{
  quiet_t *q = dev_ctx;
  if (quiet_count(q, "an asynchronous event", ev->ctx, FALSE))
    g_async_queue_push(q->c.async_q, g_memdup2(ev, sizeof(*ev)));
}

static const rnicpi_upcalls_t quiet_upcalls = {
  .cm_event = quiet_cm_event,
  .cq_notify = quiet_cq_notify,
  .async_event = quiet_async_event,
};

/* Pair @i, connected, its contexts its own (the CQs' are ctx|1 and ctx|2). */
static void
quiet_pair_open(quiet_t *q, cert_pair_t *pr, int i)
{
  cert_t *g = &q->c;
  memset(pr, 0, sizeof(*pr));
  cert_side_new(g, &pr->a, 0xa0000 + 0x100 * (uint64_t) i, 64, NULL);
  cert_side_new(g, &pr->p, 0xb0000 + 0x100 * (uint64_t) i, 64, NULL);
  rnicpi_listen_t *lst = NULL;
  uint64_t lctx = 0x1250 + (uint64_t) i;
  uint32_t port = cert_listen(g, lctx, &lst);
  rnicpi_addr_t dst;
  cert_addr(g, port, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, g->caps.max_ird),
                             .ord = cert_min(4, g->caps.max_ord) };
  cert_ok(CMV->connect(pr->a.qp, &dst, &cp));
  g_autofree rnicpi_cm_event_t *req = cert_wait_cm(g, RNICPI_CM_CONNECT_REQUEST, lctx);
  cert_ok(CMV->accept(pr->p.qp, req->conn_id, &cp));
  g_free(cert_wait_cm(g, RNICPI_CM_ESTABLISHED, pr->a.ctx));
  g_free(cert_wait_cm(g, RNICPI_CM_ESTABLISHED, pr->p.ctx));
  cert_ok(CMV->unlisten(lst));
}

/* Destroy @cq and remember, once cq_destroy returned, that it is gone. */
static void
quiet_cq_destroy(quiet_t *q, rnicpi_cq_t *cq)
{
  uint64_t ctx = cq->al_ctx;
  cert_ok(QUE->cq_destroy(cq));
  g_mutex_lock(&q->lock);
  g_assert_cmpint(q->ngone, <, QUIET_CQS);
  q->gone[q->ngone++] = ctx;
  g_mutex_unlock(&q->lock);
}

static void
test_none_after_close(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("no upcall comes once close returned, and cq_notify names a destroyed CQ at "
                 "most once after cq_destroy returned: four connected pairs on a device of the "
                 "test's own, every CQ armed, Sends each way, then, with receives outstanding, "
                 "CQs re-armed and each upcall from a provider's thread held until close is "
                 "near, then 20 ms long, every queue pair destroyed (its "
                 "peer's connection breaks, its receives flush), every CQ, domain, and the "
                 "device closed; for 500 ms after close nothing comes");
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return;
  quiet_t *q = g_new0(quiet_t, 1);
  g_mutex_init(&q->lock);
  g_cond_init(&q->near);
  cert_t *g = &q->c;
  g->cm_q = g_async_queue_new_full(g_free);
  g->notify_q = g_async_queue_new_full(g_free);
  g->async_q = g_async_queue_new_full(g_free);
  g_strlcpy(g->dev_name, f->dev_name, sizeof(g->dev_name));
  cert_ok(DEV->open(g->dev_name, &quiet_upcalls, q, &g->dev));
  g->caps = f->caps;

  cert_pair_t pr[QUIET_PAIRS];
  cert_buf_t buf[QUIET_PAIRS][2];
  for (int i = 0; i < QUIET_PAIRS; i++) {
    quiet_pair_open(q, &pr[i], i);
    cert_side_t *side[2] = { &pr[i].a, &pr[i].p };
    for (int s = 0; s < 2; s++) {
      cert_buf_new(side[s]->pd, &buf[i][s], 8 * 256, RW);
      cert_buf_fill(&buf[i][s], (uint8_t) (0x40 + 2 * i + s));
      for (int k = 0; k < 4; k++)
        cert_post_recv(side[s]->qp, &buf[i][s], 256 * (size_t) (4 + k), 256,
                       0x700 + (uint64_t) k);
      cert_ok(DAT->arm_cq(side[s]->scq));
      cert_ok(DAT->arm_cq(side[s]->rcq));
    }
    /* One Send each way: every CQ has a completion and an upcall. */
    for (int s = 0; s < 2; s++) {
      cert_post_send(side[s]->qp, RNICPI_WR_SEND, &buf[i][s], 0, 256, 0x710, RNICPI_WR_SIGNALED,
                     0, 0);
      g_assert_true(cert_wait_notify(g, side[s]->ctx | 1, CERT_TIMEOUT_MS));
      g_assert_true(cert_wait_notify(g, side[1 - s]->ctx | 2, CERT_TIMEOUT_MS));
      rnicpi_wc_t wc = cert_wc(side[s]->scq);
      g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
      wc = cert_wc(side[1 - s]->rcq);
      g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
      cert_buf_check(&buf[i][1 - s], 256 * 4, 256, (uint8_t) (0x40 + 2 * i + s));
    }
    for (int s = 0; s < 2; s++) {
      cert_ok(DAT->arm_cq(side[s]->scq));
      cert_ok(DAT->arm_cq(side[s]->rcq));
    }
  }
  g_assert_cmpint(q->notifies, >=, 4 * QUIET_PAIRS);

  /* The teardown, with upcalls held: what a provider queued meanwhile is
   * still queued when close is called. */
  g_mutex_lock(&q->lock);
  q->slow = TRUE;
  q->test = g_thread_self();
  g_mutex_unlock(&q->lock);
  for (int i = 0; i < QUIET_PAIRS; i++)
    cert_ok(QUE->qp_destroy(pr[i].a.qp));
  for (int i = 0; i < QUIET_PAIRS; i++)
    cert_ok(QUE->qp_destroy(pr[i].p.qp));
  for (int i = 0; i < QUIET_PAIRS; i++) {
    cert_side_t *side[2] = { &pr[i].a, &pr[i].p };
    for (int s = 0; s < 2; s++) {
      quiet_cq_destroy(q, side[s]->scq);
      quiet_cq_destroy(q, side[s]->rcq);
      cert_buf_free(&buf[i][s]);
      cert_ok(DEV->pd_free(side[s]->pd));
    }
  }
  g_mutex_lock(&q->lock);
  q->closing = TRUE;
  g_cond_broadcast(&q->near);
  g_mutex_unlock(&q->lock);
  DEV->close(g->dev);
  g_mutex_lock(&q->lock);
  q->closed = TRUE;
  g_mutex_unlock(&q->lock);
  g_usleep(QUIET_AFTER_MS * 1000);

  g_mutex_lock(&q->lock);
  int late = q->after_close;
  g_test_message("%d upcalls came during the teardown, %d of them after close returned",
                 q->in_teardown, late);
  if (late > 0)
    g_test_message("%d upcalls came after close returned, the first %s", late, q->first_late);
  for (int i = 0; i < q->ngone; i++) {
    if (q->after_gone[i] > 1)
      g_test_message("cq_notify named CQ 0x%" G_GINT64_MODIFIER "x %d times after its "
                     "cq_destroy returned", q->gone[i], q->after_gone[i]);
    g_assert_cmpint(q->after_gone[i], <=, 1);
  }
  g_mutex_unlock(&q->lock);
  g_assert_cmpint(late, ==, 0);

  g_async_queue_unref(g->cm_q);
  g_async_queue_unref(g->notify_q);
  g_async_queue_unref(g->async_q);
  g_list_free_full(g->cm_seen, g_free);
  g_list_free_full(g->notify_seen, g_free);
  g_list_free_full(g->async_seen, g_free);
  g_cond_clear(&q->near);
  g_mutex_clear(&q->lock);
  g_free(q);
}

void
cert_register_close(void)
{
  cert_add("/rnicpi/upcalls/none-after-close", test_none_after_close);
}
