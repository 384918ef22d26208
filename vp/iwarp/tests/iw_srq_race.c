/*
 * iwarp-srq-race: vp/iwarp's shared receive queue under threads.
 *
 * Two connections whose passive QPs take their receives from one SRQ.  A
 * thread per active QP sends numbered messages, a third thread posts the
 * SRQ's receives while the progress thread (and the main thread's polls)
 * take them, and the main thread polls the passive side's receive CQ.  A
 * sender sends only against a receive already posted (iWARP has no
 * receiver-not-ready retry: a Send into an empty SRQ would end its
 * connection), so every message must land: each receive completes once,
 * successfully, on the QP its message arrived on, holding that message's
 * bytes; each connection's messages in order; and the SRQ is empty at the
 * end.  Listeners take random ports (a port in use is skipped).
 *
 *   iwarp-srq-race [--tap] [MESSAGES]   messages per sender (20000)
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <glib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "rnicpi.h"
#include "iw_test_port.h"
#include "iw_test_up.h"

extern const rnicpi_provider_t rnicpi_builtin_iwarp;

static const rnicpi_provider_t *P;
static rnicpi_dev_t *dev;
static int nmsg = 20000; /* messages per sender; argv[1] when given */

enum {
  NSEND = 2,        /* active QPs, one sender thread each */
  MSG = 40,         /* bytes per message */
  SLOT = 64,        /* bytes per receive */
  SRQ_WR = 64,      /* the SRQ's size */
  SQ_WR = 16,       /* each active QP's send queue */
};
#define P_CTX 0xb000u /* passive QP i: P_CTX + i */
#define A_CTX 0xa000u /* active QP i: A_CTX + i */

typedef struct {
  rnicpi_pd_t *pd;
  rnicpi_srq_t *srq;
  rnicpi_cq_t *prcq, *pscq;          /* the passive QPs' */
  rnicpi_qp_t *pqp[NSEND], *aqp[NSEND];
  rnicpi_cq_t *ascq[NSEND], *arcq[NSEND];
  uint8_t *rbuf, *sbuf;              /* receive slots (one per receive), send slots */
  rnicpi_mr_t *rmr, *smr;
  gint posted;                       /* receives posted to the SRQ (atomic) */
  gint claimed;                      /* messages a sender may send: at most posted */
  gint landed;                       /* receive completions taken (atomic) */
  gint failed;                       /* a thread's check failed (atomic) */
} race_t;

static GList *pending;

static rnicpi_cm_event_t *
wait_cm(rnicpi_cm_event_type_t type, uint64_t ctx)
{
  for (GList *l = pending; l != NULL; l = l->next) {
    rnicpi_cm_event_t *ev = l->data;
    if (ev->type == type && (ev->qp_ctx == ctx || ev->listen_ctx == ctx)) {
      pending = g_list_delete_link(pending, l);
      return ev;
    }
  }
  for (;;) {
    rnicpi_cm_event_t *ev = g_async_queue_timeout_pop(cmq, 10 * G_USEC_PER_SEC);
    if (ev == NULL)
      g_error("no CM event %d for 0x%" G_GINT64_MODIFIER "x within 10 s", type, ctx);
    if (ev->type == type && (ev->qp_ctx == ctx || ev->listen_ctx == ctx))
      return ev;
    pending = g_list_append(pending, ev);
  }
}

/* Active QP @i connects to passive QP @i over a listener on a free port. */
static void
race_connect(race_t *r, int i)
{
  rnicpi_listen_t *l = NULL;
  uint32_t port = iw_test_listen_any(P, dev, 0x77, &l);
  rnicpi_addr_t dst = { 0 };
  struct sockaddr_in *sin = (struct sockaddr_in *) &dst.sa;
  sin->sin_family = AF_INET;
  sin->sin_port = htons((uint16_t) port);
  sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  rnicpi_conn_param_t cp = { .ird = 1, .ord = 1 };
  g_assert_cmpint(P->cm->connect(r->aqp[i], &dst, &cp), ==, RNICPI_OK);
  g_autofree rnicpi_cm_event_t *req = wait_cm(RNICPI_CM_CONNECT_REQUEST, 0x77);
  g_assert_cmpint(P->cm->accept(r->pqp[i], req->conn_id, &cp), ==, RNICPI_OK);
  g_free(wait_cm(RNICPI_CM_ESTABLISHED, A_CTX + (uint64_t) i));
  g_free(wait_cm(RNICPI_CM_ESTABLISHED, P_CTX + (uint64_t) i));
  g_assert_cmpint(P->cm->unlisten(l), ==, RNICPI_OK);
}

static rnicpi_mr_t *
reg(rnicpi_pd_t *pd, uint8_t *buf, size_t len)
{
  rnicpi_mr_t *mr = NULL;
  rnicpi_mr_attr_t m = { .addr = buf, .length = len, .iova = (uint64_t) (uintptr_t) buf,
                         .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE };
  g_assert_cmpint(P->mem->mr_reg(pd, &m, &mr), ==, RNICPI_OK);
  return mr;
}

static void
race_open(race_t *r)
{
  memset(r, 0, sizeof(*r));
  g_assert_cmpint(P->device->pd_alloc(dev, &r->pd), ==, RNICPI_OK);
  g_assert_cmpint(P->srq->srq_create(r->pd, SRQ_WR, 1, 0x5e0, &r->srq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_create(dev, NSEND * nmsg, 1, &r->prcq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_create(dev, 64, 2, &r->pscq), ==, RNICPI_OK);
  for (int i = 0; i < NSEND; i++) {
    rnicpi_qp_attr_t pa = { .send_cq = r->pscq, .recv_cq = r->prcq, .max_send_wr = 4,
                            .max_send_sge = 1, .max_rdma_write_sge = 1, .max_rdma_read_sge = 1,
                            .ird = 1, .ord = 1, .srq = r->srq };
    g_assert_cmpint(P->queue->qp_create(r->pd, &pa, P_CTX + (uint64_t) i, &r->pqp[i]), ==,
                    RNICPI_OK);
    g_assert_cmpint(P->queue->cq_create(dev, SQ_WR, 3, &r->ascq[i]), ==, RNICPI_OK);
    g_assert_cmpint(P->queue->cq_create(dev, 4, 4, &r->arcq[i]), ==, RNICPI_OK);
    rnicpi_qp_attr_t aa = { .send_cq = r->ascq[i], .recv_cq = r->arcq[i], .max_send_wr = SQ_WR,
                            .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1,
                            .max_rdma_write_sge = 1, .max_rdma_read_sge = 1, .ird = 1, .ord = 1 };
    g_assert_cmpint(P->queue->qp_create(r->pd, &aa, A_CTX + (uint64_t) i, &r->aqp[i]), ==,
                    RNICPI_OK);
  }
  r->rbuf = g_malloc0((size_t) NSEND * nmsg * SLOT);
  r->sbuf = g_malloc0((size_t) NSEND * nmsg * MSG);
  r->rmr = reg(r->pd, r->rbuf, (size_t) NSEND * nmsg * SLOT);
  r->smr = reg(r->pd, r->sbuf, (size_t) NSEND * nmsg * MSG);
  for (int i = 0; i < NSEND; i++)
    race_connect(r, i);
}

static void
race_close(race_t *r)
{
  for (int i = 0; i < NSEND; i++) {
    g_assert_cmpint(P->queue->qp_destroy(r->aqp[i]), ==, RNICPI_OK);
    g_assert_cmpint(P->queue->qp_destroy(r->pqp[i]), ==, RNICPI_OK);
    g_assert_cmpint(P->queue->cq_destroy(r->ascq[i]), ==, RNICPI_OK);
    g_assert_cmpint(P->queue->cq_destroy(r->arcq[i]), ==, RNICPI_OK);
  }
  g_assert_cmpint(P->srq->srq_destroy(r->srq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(r->prcq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(r->pscq), ==, RNICPI_OK);
  g_assert_cmpint(P->mem->mr_dereg(r->rmr), ==, RNICPI_OK);
  g_assert_cmpint(P->mem->mr_dereg(r->smr), ==, RNICPI_OK);
  g_assert_cmpint(P->device->pd_free(r->pd), ==, RNICPI_OK);
  g_free(r->rbuf);
  g_free(r->sbuf);
}

/* The bytes of message @seq of sender @i: its number, then a pattern. */
static void
msg_fill(uint8_t *p, int i, uint32_t seq)
{
  uint32_t id[2] = { (uint32_t) i, seq };
  memcpy(p, id, sizeof(id));
  for (size_t k = sizeof(id); k < MSG; k++)
    p[k] = (uint8_t) (seq * 7 + (uint32_t) i * 31 + k);
}

/* The poster: receive n goes to slot n, id n, while at most SRQ_WR - 8 are
 * held (the SRQ never refuses one for EFULL). */
static gpointer
poster(gpointer data)
{
  race_t *r = data;
  for (int n = 0; n < NSEND * nmsg;) {
    if (n - g_atomic_int_get(&r->landed) >= SRQ_WR - 8) {
      g_thread_yield();
      continue;
    }
    rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) (r->rbuf + (size_t) n * SLOT),
                         .length = SLOT, .lkey = r->rmr->lkey };
    rnicpi_recv_wr_t wr = { .wr_id = (uint64_t) n, .sg_list = &sge, .num_sge = 1 };
    rnicpi_status_t st = P->srq->post_srq_recv(r->srq, &wr);
    if (st != RNICPI_OK) {
      g_printerr("post_srq_recv of receive %d: status %d\n", n, st);
      g_atomic_int_inc(&r->failed);
      return NULL;
    }
    n++;
    g_atomic_int_set(&r->posted, n);
  }
  return NULL;
}

typedef struct {
  race_t *r;
  int i;
} sender_t;

/* Reap the sender's send completions; FALSE when one failed. */
static gboolean
reap(race_t *r, int i, int *out)
{
  rnicpi_wc_t wc[8];
  int n = P->data->poll_cq(r->ascq[i], wc, 8);
  for (int k = 0; k < n; k++)
    if (wc[k].status != RNICPI_WC_SUCCESS) {
      g_printerr("sender %d: Send 0x%" G_GINT64_MODIFIER "x completed with %d\n", i,
                 wc[k].wr_id, wc[k].status);
      return FALSE;
    }
  *out -= n;
  return TRUE;
}

static gpointer
sender(gpointer data)
{
  sender_t *s = data;
  race_t *r = s->r;
  int out = 0;
  for (uint32_t seq = 0; seq < (uint32_t) nmsg && !g_atomic_int_get(&r->failed); seq++) {
    /* A credit: a receive posted that no other message claimed. */
    for (;;) {
      int c = g_atomic_int_get(&r->claimed);
      if (c < g_atomic_int_get(&r->posted) && g_atomic_int_compare_and_exchange(&r->claimed, c, c + 1))
        break;
      if (!reap(r, s->i, &out))
        goto fail;
      g_thread_yield();
    }
    uint8_t *p = r->sbuf + ((size_t) s->i * nmsg + seq) * MSG;
    msg_fill(p, s->i, seq);
    rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) p, .length = MSG, .lkey = r->smr->lkey };
    rnicpi_send_wr_t wr = { .wr_id = seq, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                            .sg_list = &sge, .num_sge = 1 };
    rnicpi_status_t st;
    while ((st = P->data->post_send(r->aqp[s->i], &wr)) == RNICPI_EFULL)
      if (!reap(r, s->i, &out))
        goto fail;
    if (st != RNICPI_OK) {
      g_printerr("sender %d: post_send of message %u: status %d\n", s->i, seq, st);
      goto fail;
    }
    out++;
  }
  while (out > 0 && !g_atomic_int_get(&r->failed))
    if (!reap(r, s->i, &out))
      goto fail;
  return NULL;
fail:
  g_atomic_int_inc(&r->failed);
  return NULL;
}

static void
test_post_beside_take(void)
{
  g_test_summary("Two connections into QPs of one SRQ: a thread per sender sends numbered "
                 "Sends (20000 unless told) against receives a third thread posts meanwhile; every receive "
                 "completes once, successfully, on the QP of its connection with that message's "
                 "40 bytes, each connection's messages in order, and the SRQ ends empty");
  race_t r;
  race_open(&r);
  GThread *post = g_thread_new("srq-poster", poster, &r);
  sender_t s[NSEND];
  GThread *send[NSEND];
  for (int i = 0; i < NSEND; i++) {
    s[i] = (sender_t) { .r = &r, .i = i };
    send[i] = g_thread_new("srq-sender", sender, &s[i]);
  }
  uint32_t next[NSEND] = { 0 };
  g_autofree uint8_t *seen = g_malloc0(NSEND * nmsg);
  gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
  int got = 0;
  while (got < NSEND * nmsg && !g_atomic_int_get(&r.failed)) {
    g_assert_cmpint(g_get_monotonic_time(), <, deadline);
    rnicpi_wc_t wc[16];
    int n = P->data->poll_cq(r.prcq, wc, 16);
    for (int k = 0; k < n; k++) {
      g_assert_cmpint(wc[k].status, ==, RNICPI_WC_SUCCESS);
      g_assert_cmpint(wc[k].opcode, ==, RNICPI_WC_RECV);
      g_assert_cmpuint(wc[k].byte_len, ==, MSG);
      g_assert_cmpuint(wc[k].wr_id, <, NSEND * nmsg);
      g_assert_cmpuint(seen[wc[k].wr_id], ==, 0);
      seen[wc[k].wr_id] = 1;
      const uint8_t *slot = r.rbuf + wc[k].wr_id * SLOT;
      uint32_t id[2];
      memcpy(id, slot, sizeof(id));
      g_assert_cmpuint(id[0], <, NSEND);
      g_assert_cmphex(wc[k].qp_ctx, ==, P_CTX + id[0]);
      g_assert_cmpuint(id[1], ==, next[id[0]]);
      next[id[0]]++;
      uint8_t want[MSG];
      msg_fill(want, (int) id[0], id[1]);
      g_assert_cmpmem(slot, MSG, want, MSG);
      for (size_t b = MSG; b < SLOT; b++)
        g_assert_cmphex(slot[b], ==, 0);
    }
    got += n;
    g_atomic_int_set(&r.landed, got);
    if (n == 0)
      g_thread_yield();
  }
  g_thread_join(post);
  for (int i = 0; i < NSEND; i++)
    g_thread_join(send[i]);
  g_assert_cmpint(g_atomic_int_get(&r.failed), ==, 0);
  g_assert_cmpint(got, ==, NSEND * nmsg);
  for (int i = 0; i < NSEND; i++) {
    g_assert_cmpuint(next[i], ==, (uint32_t) nmsg);
    g_assert_cmpint(P->queue->qp_state(r.pqp[i]), ==, RNICPI_QPS_RTS);
  }
  g_assert_cmpuint(P->srq->srq_count(r.srq), ==, 0);
  rnicpi_wc_t wc;
  g_assert_cmpint(P->data->poll_cq(r.prcq, &wc, 1), ==, 0);
  race_close(&r);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  P = &rnicpi_builtin_iwarp;
  cmq = g_async_queue_new();
  g_assert_cmpint(P->device->open("iwarp0", &ups, NULL, &dev), ==, RNICPI_OK);
  if (argc > 1)
    nmsg = atoi(argv[1]);
  g_assert_cmpint(nmsg, >, 0);
  g_test_add_func("/iwarp/srq/post-beside-take", test_post_beside_take);
  int rc = g_test_run();
  P->device->close(dev);
  return rc;
}
