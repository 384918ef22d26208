/*
 * cert-rnicpi: shared receive queues (rnicpi_srq_ops_t, ABI 1.1,
 * RNICPI_CAP_SRQ).  Two passive queue pairs of one domain take their
 * receives from one SRQ; each is connected to an active queue pair of its
 * own, and each has a receive CQ of its own.  A receive taken from the
 * SRQ completes on the receive CQ of the queue pair the message arrived
 * on, with that QP's context: the SRQ has no CQ, and which queue pair took
 * the receive is known only when the message arrives.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define SRQ (cert_prov->srq)
#define SRQ_CTX 0x5e0000ull
#define P_CTX 0xb0000ull
#define SLOT 64

typedef struct {
  rnicpi_pd_t *pd;
  rnicpi_cq_t *scq, *rcq[2]; /* rcq[i]: passive QP i's receive CQ */
  rnicpi_srq_t *srq;
  rnicpi_qp_t *p[2];  /* passive QPs on the SRQ, contexts P_CTX + 0x1000 * (i + 1) */
  cert_side_t a[2];   /* their active peers (when connected) */
  cert_buf_t rb;      /* the SRQ's receive buffers, SLOT bytes each */
  gboolean connected;
} srq_setup_t;

static uint64_t
p_ctx(int i)
{
  return P_CTX + 0x1000ull * (uint64_t) (i + 1);
}

/* A domain, an SRQ of @max_wr receives, and two queue pairs on it; with
 * @connect, each connected to an active side of its own. */
static gboolean
srq_open(cert_t *f, srq_setup_t *s, uint32_t max_wr, gboolean connect)
{
  memset(s, 0, sizeof(*s));
  if (!cert_require(f, RNICPI_CAP_SRQ))
    return FALSE;
  if (connect && !cert_require(f, RNICPI_CAP_CM_VERBS))
    return FALSE;
  cert_ok(DEV->pd_alloc(f->dev, &s->pd));
  cert_ok(QUE->cq_create(f->dev, 64, P_CTX | 1, &s->scq));
  for (int i = 0; i < 2; i++)
    cert_ok(QUE->cq_create(f->dev, 64, P_CTX | (uint64_t) (2 + i), &s->rcq[i]));
  cert_ok(SRQ->srq_create(s->pd, max_wr, 1, SRQ_CTX, &s->srq));
  g_assert_nonnull(s->srq);
  g_assert_true(s->srq->pd == s->pd);
  g_assert_cmphex(s->srq->al_ctx, ==, SRQ_CTX);
  cert_buf_new(s->pd, &s->rb, SLOT * 16, RW);
  for (int i = 0; i < 2; i++) {
    rnicpi_qp_attr_t a = cert_qp_attr(f, s->scq, s->rcq[i]);
    a.srq = s->srq;
    cert_ok(QUE->qp_create(s->pd, &a, p_ctx(i), &s->p[i]));
  }
  if (!connect)
    return TRUE;
  for (int i = 0; i < 2; i++) {
    cert_side_new(f, &s->a[i], 0xa0000 + 0x1000ull * (uint64_t) (i + 1), 64, NULL);
    rnicpi_listen_t *lst = NULL;
    uint32_t port = cert_listen(f, 0x1150, &lst);
    rnicpi_addr_t dst;
    cert_addr(f, port, &dst);
    rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                               .ord = cert_min(4, f->caps.max_ord) };
    cert_ok(CMV->connect(s->a[i].qp, &dst, &cp));
    g_autofree rnicpi_cm_event_t *req = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1150);
    cert_ok(CMV->accept(s->p[i], req->conn_id, &cp));
    g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s->a[i].ctx));
    g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, p_ctx(i)));
    cert_ok(CMV->unlisten(lst));
  }
  s->connected = TRUE;
  return TRUE;
}

static void
srq_close(srq_setup_t *s)
{
  for (int i = 0; i < 2; i++)
    if (s->p[i] != NULL)
      cert_ok(QUE->qp_destroy(s->p[i]));
  if (s->srq != NULL)
    cert_ok(SRQ->srq_destroy(s->srq));
  cert_buf_free(&s->rb);
  cert_ok(QUE->cq_destroy(s->scq));
  for (int i = 0; i < 2; i++)
    cert_ok(QUE->cq_destroy(s->rcq[i]));
  cert_ok(DEV->pd_free(s->pd));
  if (s->connected)
    for (int i = 0; i < 2; i++)
      cert_side_free(&s->a[i]);
}

/* Post receive @id into slot @slot of the SRQ's buffer. */
static rnicpi_status_t
srq_post(srq_setup_t *s, int slot, uint64_t id)
{
  rnicpi_sge_t sge = cert_sge(&s->rb, (size_t) slot * SLOT, SLOT);
  rnicpi_recv_wr_t wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
  return SRQ->post_srq_recv(s->srq, &wr);
}

/* Active side @i sends @len bytes of pattern @seed; its send completes. */
static void
srq_send(srq_setup_t *s, int i, uint32_t len, uint8_t seed, cert_buf_t *src)
{
  cert_buf_fill(src, seed);
  cert_post_send(s->a[i].qp, RNICPI_WR_SEND, src, 0, len, 0x5e4d, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(s->a[i].scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
}

/* The next receive completion: @id, arrived on passive QP @i (so on its
 * receive CQ), @len bytes of pattern @seed in slot @slot. */
static void
srq_expect_recv(srq_setup_t *s, uint64_t id, int i, int slot, uint32_t len, uint8_t seed)
{
  rnicpi_wc_t r = cert_wc(s->rcq[i]);
  g_assert_cmphex(r.wr_id, ==, id);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(r.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmphex(r.qp_ctx, ==, p_ctx(i));
  g_assert_cmpuint(r.byte_len, ==, len);
  cert_buf_check(&s->rb, (size_t) slot * SLOT, len, seed);
}

/* Nothing more on either receive CQ. */
static void
srq_assert_quiet(srq_setup_t *s)
{
  for (int i = 0; i < 2; i++)
    cert_assert_cq_quiet(s->rcq[i]);
}

static void
test_srq_post_count(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("srq_create of 4 receives: srq_count counts each post_srq_recv, the fifth is "
                 "RNICPI_EFULL and changes nothing; srq_modify growing it to 8 (limit 0) lets 4 "
                 "more in, then RNICPI_EFULL again; no receive completes meanwhile");
  srq_setup_t s;
  if (!srq_open(f, &s, 4, FALSE))
    return;
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 0);
  for (int i = 0; i < 4; i++) {
    cert_ok(srq_post(&s, i, 0x100 + (uint64_t) i));
    g_assert_cmpuint(SRQ->srq_count(s.srq), ==, (guint) i + 1);
  }
  cert_cmpst(srq_post(&s, 4, 0x104), RNICPI_EFULL);
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 4);
  cert_ok(SRQ->srq_modify(s.srq, 8, 0));
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 4);
  for (int i = 4; i < 8; i++)
    cert_ok(srq_post(&s, i, 0x100 + (uint64_t) i));
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 8);
  cert_cmpst(srq_post(&s, 8, 0x108), RNICPI_EFULL);
  srq_assert_quiet(&s);
  srq_close(&s);
}

static void
test_srq_destroy_busy(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("srq_destroy of an SRQ that queue pairs use is RNICPI_EBUSY and the SRQ keeps "
                 "working; once they are destroyed it destroys");
  srq_setup_t s;
  if (!srq_open(f, &s, 8, FALSE))
    return;
  cert_ok(srq_post(&s, 0, 1));
  cert_cmpst(SRQ->srq_destroy(s.srq), RNICPI_EBUSY);
  cert_ok(QUE->qp_destroy(s.p[0]));
  s.p[0] = NULL;
  cert_cmpst(SRQ->srq_destroy(s.srq), RNICPI_EBUSY);
  cert_ok(srq_post(&s, 1, 2));
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 2);
  cert_ok(QUE->qp_destroy(s.p[1]));
  s.p[1] = NULL;
  cert_ok(SRQ->srq_destroy(s.srq));
  s.srq = NULL;
  srq_assert_quiet(&s);
  srq_close(&s);
}

static void
test_srq_qp_error_keeps(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a queue pair on an SRQ that enters ERROR (or is destroyed) flushes none of the "
                 "SRQ's receives: srq_count stays, nothing completes, and the other queue pair "
                 "still receives into them in order");
  srq_setup_t s;
  if (!srq_open(f, &s, 8, TRUE))
    return;
  for (int i = 0; i < 3; i++)
    cert_ok(srq_post(&s, i, 0x200 + (uint64_t) i));
  cert_ok(QUE->qp_to_error(s.p[0]));
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, s.a[0].ctx));
  srq_assert_quiet(&s);
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 3);
  cert_ok(QUE->qp_destroy(s.p[0]));
  s.p[0] = NULL;
  srq_assert_quiet(&s);
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 3);

  cert_buf_t src;
  cert_buf_new(s.a[1].pd, &src, SLOT, RW);
  srq_send(&s, 1, 40, 61, &src);
  srq_expect_recv(&s, 0x200, 1, 0, 40, 61);
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 2);
  srq_assert_quiet(&s);
  cert_buf_free(&src);
  srq_close(&s);
}

static void
test_srq_shared_order(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("Sends from two connections into two queue pairs on one SRQ take its receives "
                 "in the order they were posted, whichever QP they arrive on; each completes on "
                 "the receive CQ of the QP it arrived on (each QP has its own) with its context and the bytes in that receive's buffer, "
                 "and srq_count falls by one each time");
  srq_setup_t s;
  if (!srq_open(f, &s, 8, TRUE))
    return;
  for (int i = 0; i < 4; i++)
    cert_ok(srq_post(&s, i, 0x300 + (uint64_t) i));
  cert_buf_t src[2];
  cert_buf_new(s.a[0].pd, &src[0], SLOT, RW);
  cert_buf_new(s.a[1].pd, &src[1], SLOT, RW);
  static const int from[3] = { 0, 1, 0 };
  for (int k = 0; k < 3; k++) {
    srq_send(&s, from[k], 20 + (uint32_t) k, (uint8_t) (70 + k), &src[from[k]]);
    srq_expect_recv(&s, 0x300 + (uint64_t) k, from[k], k, 20 + (uint32_t) k, (uint8_t) (70 + k));
    g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 3 - (guint) k);
  }
  for (size_t i = 3 * SLOT; i < s.rb.len; i++)
    g_assert_cmphex(s.rb.data[i], ==, 0);
  srq_assert_quiet(&s);
  cert_assert_cq_quiet(s.a[0].rcq);
  cert_buf_free(&src[0]);
  cert_buf_free(&src[1]);
  srq_close(&s);
}

static void
test_srq_limit(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("srq_modify arming a limit of 3 on an SRQ holding 4: the Send that leaves 3 "
                 "raises nothing, the one that leaves 2 raises RNICPI_ASYNC_SRQ_LIMIT with the "
                 "SRQ's context once, and the next (limit disarmed) raises none; re-armed, the "
                 "event comes again");
  srq_setup_t s;
  if (!srq_open(f, &s, 8, TRUE))
    return;
  for (int i = 0; i < 4; i++)
    cert_ok(srq_post(&s, i, 0x400 + (uint64_t) i));
  cert_ok(SRQ->srq_modify(s.srq, 0, 3));
  cert_buf_t src;
  cert_buf_new(s.a[0].pd, &src, SLOT, RW);

  srq_send(&s, 0, 8, 1, &src);
  srq_expect_recv(&s, 0x400, 0, 0, 8, 1);
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_SRQ_LIMIT, SRQ_CTX, CERT_QUIET_MS));

  srq_send(&s, 0, 8, 2, &src);
  srq_expect_recv(&s, 0x401, 0, 1, 8, 2);
  g_free(cert_wait_async(f, RNICPI_ASYNC_SRQ_LIMIT, SRQ_CTX));

  srq_send(&s, 0, 8, 3, &src);
  srq_expect_recv(&s, 0x402, 0, 2, 8, 3);
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_SRQ_LIMIT, SRQ_CTX, CERT_QUIET_MS));
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 1);

  /* Re-armed above the count: the next take raises it again. */
  cert_ok(srq_post(&s, 4, 0x404));
  cert_ok(srq_post(&s, 5, 0x405));
  cert_ok(SRQ->srq_modify(s.srq, 0, 3));
  srq_send(&s, 0, 8, 4, &src);
  srq_expect_recv(&s, 0x403, 0, 3, 8, 4);
  g_free(cert_wait_async(f, RNICPI_ASYNC_SRQ_LIMIT, SRQ_CTX));
  g_assert_null(cert_poll_async(f, RNICPI_ASYNC_SRQ_LIMIT, SRQ_CTX, CERT_QUIET_MS));
  cert_buf_free(&src);
  srq_close(&s);
}

/* How long a round of test_srq_limit_owner lets the receive complete
 * while the owner's upcall is held, and how long it then watches the
 * other opens for the event the receive raised. */
#define OWNER_MOVE_MS 1000
#define OWNER_QUIET_MS 500

/* Post receive number @n into slot @n, arm the SRQ's limit at 2, and have
 * active side 0 send 8 bytes of pattern 90 + @n: with two receives held,
 * the one the Send takes raises the limit event. */
static void
owner_raise(srq_setup_t *s, int n, cert_buf_t *src)
{
  cert_ok(srq_post(s, n, 0x600 + (uint64_t) n));
  cert_ok(SRQ->srq_modify(s->srq, 0, 2));
  cert_buf_fill(src, (uint8_t) (90 + n));
  cert_post_send(s->a[0].qp, RNICPI_WR_SEND, src, 0, 8, 0x5e4d, RNICPI_WR_SIGNALED, 0, 0);
}

/* The receive that owner_raise's Send took, receive number @n (posted
 * one earlier), and the Send's own completion. */
static void
owner_check_recv(srq_setup_t *s, const rnicpi_wc_t *r, int n)
{
  g_assert_cmphex(r->wr_id, ==, 0x600 + (uint64_t) n);
  g_assert_cmpint(r->status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(r->opcode, ==, RNICPI_WC_RECV);
  g_assert_cmphex(r->qp_ctx, ==, p_ctx(0));
  g_assert_cmpuint(r->byte_len, ==, 8);
  cert_buf_check(&s->rb, (size_t) n * SLOT, 8, (uint8_t) (90 + n + 1));
  rnicpi_wc_t wc = cert_wc(s->a[0].scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
}

/* No open of @other has the SRQ's limit event, within @quiet_ms. */
static void
owner_assert_none(cert_t *const *other, int nother, guint quiet_ms)
{
  for (int i = 0; i < nother; i++) {
    g_autofree rnicpi_async_event_t *ev =
      cert_poll_async(other[i], RNICPI_ASYNC_SRQ_LIMIT, SRQ_CTX, i == 0 ? quiet_ms : 0);
    if (ev != NULL)
      g_test_message("the SRQ's limit event came to another open of the device (%d of %d)",
                     i + 1, nother);
    g_assert_null(ev);
  }
}

/* Two rounds on @s, whose device is @owner's, of two limit events each,
 * the second raised while @owner's upcall of the first is held: both come
 * to @owner, none to the devices of @other. */
static void
srq_limit_rounds(cert_t *owner, srq_setup_t *s, cert_t *const *other, int nother)
{
  cert_buf_t src;
  cert_buf_new(s->a[0].pd, &src, SLOT, RW);
  int n = 0; /* receives posted; the next Send takes receive n - 1 */
  cert_ok(srq_post(s, n++, 0x600));
  for (int round = 0; round < 2; round++) {
    /* The first event: the owner's upcall of it is held. */
    cert_gate_async(owner);
    owner_raise(s, n++, &src);
    rnicpi_wc_t r = cert_wc(s->rcq[0]);
    owner_check_recv(s, &r, n - 2);
    if (!cert_gate_wait_held(owner, CERT_TIMEOUT_MS))
      owner_assert_none(other, nother, 0);
    g_free(cert_wait_async(owner, RNICPI_ASYNC_SRQ_LIMIT, SRQ_CTX));

    /* The second, while the owner's thread that made that upcall is held
     * in it: only another open's thread can take it, and must hand it to
     * the owner's, held too. */
    owner_raise(s, n++, &src);
    gboolean moved = cert_poll(s->rcq[0], &r, 1, OWNER_MOVE_MS) == 1;
    if (moved)
      owner_assert_none(other, nother, OWNER_QUIET_MS);
    else
      g_test_message("round %d: the receive did not complete while the owner's upcall was "
                     "held: this provider moves the data in the thread that makes that upcall, "
                     "so no other open's thread could read the event first", round);
    if (!cert_gate_open(owner))
      g_test_message("round %d: the upcall was held for the full %d ms", round,
                     CERT_GATE_HOLD_MS);
    if (!moved)
      r = cert_wc(s->rcq[0]);
    owner_check_recv(s, &r, n - 2);
    g_free(cert_wait_async(owner, RNICPI_ASYNC_SRQ_LIMIT, SRQ_CTX));
    owner_assert_none(other, nother, 0);
  }
  cert_buf_free(&src);
}

static void
test_srq_limit_owner(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with the device opened three more times in the process (three more IAs on "
                 "it), an SRQ's limit event comes to the open device that holds the SRQ and to "
                 "none of the others, also while the owner's thread is held in its upcall of "
                 "the one before: two rounds of two events for an SRQ of the first open and "
                 "two for one of the last");
  if (!cert_require(f, RNICPI_CAP_SRQ))
    return;
  /* A provider may read the device's events in one place for all the
   * process's opens of it (rdma-core: one verbs context per device and
   * process, each open's thread reading it): whichever open reads an event
   * must hand it to the owner's.  Which reads first is the provider's
   * affair, so the test decides it: the owner's thread is held in its
   * upcall of one event (cert_gate_async) while the next is raised, which
   * then only another open's thread can read. */
  cert_t o[3];
  for (int i = 0; i < 3; i++)
    cert_open_again(f, &o[i]);
  srq_setup_t s;
  if (srq_open(f, &s, 8, TRUE)) {
    cert_t *const by[3] = { &o[0], &o[1], &o[2] };
    srq_limit_rounds(f, &s, by, 3);
    srq_close(&s);
  }
  if (srq_open(&o[2], &s, 8, TRUE)) {
    cert_t *const by[3] = { f, &o[0], &o[1] };
    srq_limit_rounds(&o[2], &s, by, 3);
    srq_close(&s);
  }
  for (int i = 0; i < 3; i++)
    cert_teardown(&o[i], NULL);
}

/* The next receive completion of passive QP @i: @id, consumed by
 * immediate data @imm after a Write of @wlen bytes (0: alone), per
 * transport (rnicpi.h, RNICPI_WC_WITH_IMM): 32 bits on InfiniBand, nothing
 * placed, byte_len @wlen; 64 on iWARP, also in network order at the start
 * of slot @slot, byte_len 8. */
static void
srq_expect_imm(cert_t *f, srq_setup_t *s, uint64_t id, int i, int slot, uint64_t imm, uint32_t wlen)
{
  gboolean iw = f->caps.transport == RNICPI_TRANSPORT_IWARP;
  rnicpi_wc_t r = cert_wc(s->rcq[i]);
  g_assert_cmphex(r.wr_id, ==, id);
  g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(r.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmphex(r.qp_ctx, ==, p_ctx(i));
  g_assert_cmphex(r.flags & RNICPI_WC_WITH_IMM, ==, RNICPI_WC_WITH_IMM);
  g_assert_cmphex(r.imm_data, ==, iw ? imm : imm & UINT32_MAX);
  g_assert_cmpuint(r.byte_len, ==, iw ? 8 : wlen);
  uint64_t be = GUINT64_TO_BE(imm);
  const uint8_t *at = s->rb.data + (size_t) slot * SLOT;
  if (iw)
    g_assert_cmpmem(at, 8, &be, 8);
  for (size_t k = iw ? 8 : 0; k < SLOT; k++)
    g_assert_cmphex(at[k], ==, 0);
}

static void
test_srq_immediate(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("immediate data into queue pairs on one SRQ: an RDMA Write with immediate data "
                 "places its bytes and takes the SRQ's next receive, immediate data alone the "
                 "one after, each completing on the receive CQ of the QP it arrived on with "
                 "RNICPI_WC_WITH_IMM and the value (iWARP: also placed, byte_len 8; InfiniBand: "
                 "nothing placed, byte_len the Write's length); on InfiniBand, immediate data "
                 "finding the SRQ empty waits for its next receive");
  if (!cert_require(f, RNICPI_CAP_IMMEDIATE))
    return;
  srq_setup_t s;
  if (!srq_open(f, &s, 8, TRUE))
    return;
  gboolean iw = f->caps.transport == RNICPI_TRANSPORT_IWARP;
  cert_buf_t src, dst;
  cert_buf_new(s.a[0].pd, &src, 100, RW);
  cert_buf_fill(&src, 61);
  cert_buf_new(s.pd, &dst, 100,
               RW | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE);
  cert_ok(srq_post(&s, 0, 0x600));
  cert_ok(srq_post(&s, 1, 0x601));

  rnicpi_sge_t g = cert_sge(&src, 0, 100);
  rnicpi_send_wr_t wr = { .wr_id = 0x6a0, .opcode = RNICPI_WR_RDMA_WRITE_IMM,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &g, .num_sge = 1,
                          .remote_addr = cert_raddr(&dst, 0), .rkey = dst.mr->rkey,
                          .imm_data = 0x0102030405060708ull };
  cert_ok(DAT->post_send(s.a[0].qp, &wr));
  srq_expect_imm(f, &s, 0x600, 0, 0, wr.imm_data, 100);
  cert_buf_check(&dst, 0, 100, 61);
  rnicpi_wc_t wc = cert_wc(s.a[0].scq);
  g_assert_cmphex(wc.wr_id, ==, 0x6a0);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_WRITE);

  rnicpi_send_wr_t imm = { .wr_id = 0x6a1, .opcode = RNICPI_WR_IMM_DATA,
                           .flags = RNICPI_WR_SIGNALED, .imm_data = 0xa1b2c3d4e5f60718ull };
  cert_ok(DAT->post_send(s.a[1].qp, &imm));
  srq_expect_imm(f, &s, 0x601, 1, 1, imm.imm_data, 0);
  wc = cert_wc(s.a[1].scq);
  g_assert_cmphex(wc.wr_id, ==, 0x6a1);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_SEND);
  g_assert_cmpuint(SRQ->srq_count(s.srq), ==, 0);

  if (!iw) {
    /* The SRQ is empty: it waits (RNR) until the next receive. */
    imm.wr_id = 0x6a2;
    imm.imm_data = 0x77;
    cert_ok(DAT->post_send(s.a[0].qp, &imm));
    cert_assert_cq_quiet(s.a[0].scq);
    srq_assert_quiet(&s);
    cert_ok(srq_post(&s, 2, 0x602));
    srq_expect_imm(f, &s, 0x602, 0, 2, 0x77, 0);
    g_assert_cmphex(cert_wc(s.a[0].scq).wr_id, ==, 0x6a2);
  }
  srq_assert_quiet(&s);
  cert_buf_check_guards(&dst);
  cert_buf_free(&src);
  cert_buf_free(&dst);
  srq_close(&s);
}

void
cert_register_srq(void)
{
  cert_add("/rnicpi/srq/post-count", test_srq_post_count);
  cert_add("/rnicpi/srq/destroy-busy", test_srq_destroy_busy);
  cert_add("/rnicpi/srq/qp-error-keeps-receives", test_srq_qp_error_keeps);
  cert_add("/rnicpi/srq/shared-order", test_srq_shared_order);
  cert_add("/rnicpi/srq/limit-event", test_srq_limit);
  cert_add("/rnicpi/srq/limit-event-owner", test_srq_limit_owner);
  cert_add("/rnicpi/srq/immediate", test_srq_immediate);
}
