/*
 * cert-rnicpi /rnicpi/xproc, continued: with the passive side in another
 * process (cert_peer.c), the send queue keeps posting order across every
 * kind of request (one-sided ones a provider may carry out itself by
 * another path, local ones, and the ones the peer answers), also when one
 * fails locally in the middle; a shared receive queue takes Sends from the
 * other process; a receive a Send cannot use fails as in one process; and
 * a listener whose process dies leaves its requester one terminal event.
 *
 * SPDX-License-Identifier: MIT
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cert.h"

#define RW (RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE)
#define REMOTE (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE)
#define MW (cert_prov->mw)
#define SRQ (cert_prov->srq)
#define BAD_ID 0xbad0
#define LEN 4096
/* As cert_xproc.c: good accesses a moment apart before the "warm" cases. */
#define WARM_ACCESSES 3
#define WARM_GAP_US 20000

/* @len bytes at @p are the pattern of @seed from its byte @from. */
static void
bytes_are(const char *what, const uint8_t *p, size_t len, uint8_t seed, size_t from)
{
  for (size_t i = 0; i < len; i++)
    if (p[i] != cert_pattern(seed, from + i)) {
      g_test_message("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, p[i],
                     cert_pattern(seed, from + i));
      g_assert_cmphex(p[i], ==, cert_pattern(seed, from + i));
    }
}

/* ---- Send-queue order with every kind of request ---------------------- */

/* What one request posted must complete with. */
typedef struct xo_want {
  uint64_t id;
  rnicpi_wc_opcode_t op;
  rnicpi_wc_status_t status;
  int64_t len; /* byte_len; -1: a local request, not checked */
} xo_want_t;

/* The requests of one sequence, in posting order. */
typedef struct xo {
  cert_peer_t *pe;
  xo_want_t want[16];
  int n;
  /* A request ahead of one failing here may complete flushed instead of
   * successfully (bit i of flushed: request i did). */
  gboolean flush_ok;
  uint32_t flushed;
} xo_t;

static void
xo_post(xo_t *o, rnicpi_send_wr_t *wr, rnicpi_wc_opcode_t op, int64_t len)
{
  g_assert_cmpint(o->n, <, (int) G_N_ELEMENTS(o->want));
  wr->wr_id = 0x0de00 + (uint64_t) o->n;
  wr->flags |= RNICPI_WR_SIGNALED;
  cert_ok(DAT->post_send(o->pe->a.qp, wr));
  o->want[o->n++] = (xo_want_t){ wr->wr_id, op, RNICPI_WC_SUCCESS, len };
}

/* A Send, RDMA Write or RDMA Read of bytes [@off, +@len) of @b. */
static void
xo_data(xo_t *o, rnicpi_wr_opcode_t op, const cert_buf_t *b, size_t off, uint32_t len,
        uint64_t raddr, uint64_t rkey)
{
  rnicpi_sge_t sge = cert_sge(b, off, len);
  rnicpi_send_wr_t wr = {
    .opcode = op, .sg_list = &sge, .num_sge = 1, .remote_addr = raddr, .rkey = rkey
  };
  xo_post(o, &wr,
          op == RNICPI_WR_SEND         ? RNICPI_WC_SEND
          : op == RNICPI_WR_RDMA_WRITE ? RNICPI_WC_RDMA_WRITE
                                       : RNICPI_WC_RDMA_READ,
          len);
}

/* Each request completes once, in posting order, as its xo_want_t says;
 * nothing more follows. */
static void
xo_expect(xo_t *o)
{
  for (int i = 0; i < o->n; i++) {
    const xo_want_t *w = &o->want[i];
    rnicpi_wc_t wc = cert_wc(o->pe->a.scq);
    gboolean flushed = w->status == RNICPI_WC_SUCCESS && o->flush_ok && wc.wr_id == w->id &&
                       wc.status == RNICPI_WC_WR_FLUSH_ERR;
    if (wc.wr_id != w->id || (wc.status != w->status && !flushed))
      g_test_message("completion %d: wr_id 0x%" PRIx64 " status %d, expected 0x%" PRIx64
                     " status %d (request %d of the sequence)",
                     i, wc.wr_id, wc.status, w->id, w->status, (int) (wc.wr_id - 0x0de00));
    g_assert_cmphex(wc.wr_id, ==, w->id);
    if (flushed) {
      g_test_message("request %d, ahead of the failing one, completed flushed", i);
      o->flushed |= 1u << i;
      continue;
    }
    g_assert_cmpint(wc.status, ==, w->status);
    g_assert_cmphex(wc.qp_ctx, ==, o->pe->a.ctx);
    if (w->status != RNICPI_WC_WR_FLUSH_ERR)
      g_assert_cmpint(wc.opcode, ==, w->op);
    if (w->status == RNICPI_WC_SUCCESS && w->len >= 0)
      g_assert_cmpuint(wc.byte_len, ==, (uint32_t) w->len);
  }
  cert_assert_cq_quiet(o->pe->a.scq);
}

typedef struct xo_test {
  gboolean warm; /* the peer's regions in shared memory, used before */
} xo_test_t;

/* The peer's regions of an order test and this side's buffers. */
typedef struct xo_setup {
  cert_peer_t pe;
  cert_xreg_t rb, tgt, srcr; /* receives; Write target; Read source (seed 61) */
  cert_buf_t src, sink;      /* seed 51; zeros */
} xo_setup_t;

static gboolean
xo_open(cert_t *f, xo_setup_t *s, const xo_test_t *t)
{
  /* vp/emul: in the warm cases neither process reaches into the other by
   * cross-memory attach, so one-sided requests take the mapped region
   * when it is known, the ring otherwise (the variable is read at the
   * connect); other providers ignore it. */
  if (t->warm)
    g_setenv("ITAPI_EMUL_CMA", "0", TRUE);
  gboolean up = cert_peer_open(f, &s->pe, cert_peer_rights(f));
  if (t->warm)
    g_unsetenv("ITAPI_EMUL_CMA");
  if (!up)
    return FALSE;
  s->rb = cert_peer_reg(&s->pe, 0, 0, 1024, RW, FALSE);
  s->tgt = cert_peer_reg(&s->pe, 1, 0, LEN, RW | REMOTE, t->warm);
  s->srcr = cert_peer_reg(&s->pe, 2, 0, LEN, RW | REMOTE, t->warm);
  cert_peer_do(&s->pe, "fill 2 61");
  cert_buf_new(s->pe.a.pd, &s->src, LEN, RW);
  cert_buf_fill(&s->src, 51);
  cert_buf_new(s->pe.a.pd, &s->sink, LEN, cert_sink_access(f));
  if (t->warm) {
    /* Through both keys, a moment apart, at the ends of the regions the
     * sequence does not use. */
    for (int i = 0; i < WARM_ACCESSES; i++) {
      g_usleep(WARM_GAP_US);
      const cert_xreg_t *r[2] = { &s->tgt, &s->srcr };
      for (int k = 0; k < 2; k++) {
        rnicpi_wr_opcode_t op = k == 0 ? RNICPI_WR_RDMA_WRITE : RNICPI_WR_RDMA_READ;
        cert_post_send(s->pe.a.qp, op, k == 0 ? &s->src : &s->sink, LEN - 64, 64, 0x600d,
                       RNICPI_WR_SIGNALED, r[k]->addr + LEN - 64, r[k]->rkey);
        rnicpi_wc_t wc = cert_wc(s->pe.a.scq);
        g_assert_cmphex(wc.wr_id, ==, 0x600d);
        g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
      }
    }
    memset(s->sink.data, 0, LEN);
  }
  return TRUE;
}

static void
xo_close(xo_setup_t *s)
{
  cert_buf_check_guards(&s->src);
  cert_buf_check_guards(&s->sink);
  cert_buf_free(&s->src);
  cert_buf_free(&s->sink);
  cert_peer_close(&s->pe);
}

/* For a failure message: what this side's send queue has completed by
 * then, which says where a sequence stopped. */
static void
xo_report_sends(cert_peer_t *pe)
{
  rnicpi_wc_t wc[16];
  int n = cert_poll(pe->a.scq, wc, G_N_ELEMENTS(wc), 0);
  for (int i = 0; i < n; i++)
    g_test_message("this side's send completion %d: wr_id 0x%" PRIx64 ", status %d, opcode %d, "
                   "%u bytes", i + 1, wc[i].wr_id, wc[i].status, wc[i].opcode, wc[i].byte_len);
  if (n == 0)
    g_test_message("this side's send queue has completed nothing");
}

/* The peer's receive @id completes successfully with @len bytes. */
static void
xo_peer_recv(cert_peer_t *pe, uint64_t id, uint32_t len)
{
  g_autofree char *r = cert_peer_call(pe, "wc r %d", CERT_TIMEOUT_MS);
  g_autofree char *want =
    g_strdup_printf("0x%" PRIx64 " %d %d %u ", id, RNICPI_WC_SUCCESS, RNICPI_WC_RECV, len);
  if (!g_str_has_prefix(r, want)) {
    g_test_message("the peer's receive completion: %s, expected %s...", r, want);
    xo_report_sends(pe);
  }
  g_assert_true(g_str_has_prefix(r, want));
}

static void
test_xproc_order_mixed(cert_t *f, gconstpointer data)
{
  const xo_test_t *t = data;
  g_autofree char *summary =
    g_strdup_printf("with the passive side in another process%s, Sends, RDMA Writes, RDMA "
                    "Reads and (where the "
                    "device has windows and local invalidation) a window bind and a Local "
                    "Invalidate posted "
                    "back to back, all signaled: every request completes once, successfully, "
                    "in posting order, "
                    "with its opcode and length; each Read returns the bytes the peer had, a "
                    "Read of bytes "
                    "Written before it returns them; a Write posted before a Send is in "
                    "place when the peer's "
                    "receive of that Send completes; on InfiniBand, while the first Send "
                    "waits for a receive, "
                    "nothing behind it completes and no Write behind it lands",
                    t->warm ? " (its regions in shared memory and accessed before; vp/emul: "
                              "no cross-memory "
                              "attach, so the mapped path and the ring)"
                            : "");
  g_test_summary(summary);
  xo_setup_t s;
  if (!xo_open(f, &s, t))
    return;
  gboolean ib = f->caps.transport == RNICPI_TRANSPORT_IB;
  const uint32_t send_len[3] = { 64, 128, 200 };
  const size_t send_off[3] = { 0, 2112, 3400 };
  /* On iWARP a Send needs its receive already (RFC 5040 7.1); on
   * InfiniBand the first waits for it (RNR) and holds back what follows. */
  if (!ib)
    for (int i = 0; i < 3; i++)
      cert_peer_do(&s.pe, "recv 0 %d 256 0x%x", i * 256, 0x4e0 + i);

  xo_t o = { .pe = &s.pe };
  rnicpi_mw_t *mw = NULL;
  cert_buf_t win;
  gboolean windows = MW != NULL && (f->caps.features & (RNICPI_CAP_MW_WIDE | RNICPI_CAP_MW_NARROW));
  gboolean inv = windows && (f->caps.features & RNICPI_CAP_LOCAL_INVALIDATE);
  if (windows) {
    cert_buf_new(s.pe.a.pd, &win, 256, RW | REMOTE | RNICPI_ACCESS_MW_BIND);
    rnicpi_mw_type_t type =
      (f->caps.features & RNICPI_CAP_MW_WIDE) ? RNICPI_MW_WIDE : RNICPI_MW_NARROW;
    cert_ok(MW->mw_alloc(s.pe.a.pd, type, &mw));
  } else {
    g_test_message("no memory windows: the sequence has no local request");
  }

  xo_data(&o, RNICPI_WR_SEND, &s.src, send_off[0], send_len[0], 0, 0);
  xo_data(&o, RNICPI_WR_RDMA_WRITE, &s.src, 64, 1024, s.tgt.addr, s.tgt.rkey);
  xo_data(&o, RNICPI_WR_RDMA_READ, &s.sink, 0, 512, s.srcr.addr, s.srcr.rkey);
  if (windows) {
    rnicpi_send_wr_t b = { .opcode = RNICPI_WR_BIND_MW };
    b.bind.mw = mw;
    b.bind.mr = win.mr;
    b.bind.addr = cert_raddr(&win, 0);
    b.bind.length = win.len;
    b.bind.access = REMOTE;
    xo_post(&o, &b, RNICPI_WC_BIND_MW, -1);
  }
  if (inv) {
    rnicpi_send_wr_t li = { .opcode = RNICPI_WR_LOCAL_INV, .invalidate_rkey = mw->rkey };
    xo_post(&o, &li, RNICPI_WC_LOCAL_INV, -1);
  }
  xo_data(&o, RNICPI_WR_RDMA_WRITE, &s.src, 1088, 1024, s.tgt.addr + 1024, s.tgt.rkey);
  xo_data(&o, RNICPI_WR_SEND, &s.src, send_off[1], send_len[1], 0, 0);
  xo_data(&o, RNICPI_WR_RDMA_READ, &s.sink, 512, 1024, s.tgt.addr, s.tgt.rkey);
  xo_data(&o, RNICPI_WR_RDMA_WRITE, &s.src, 3000, 256, s.tgt.addr + 2048, s.tgt.rkey);
  xo_data(&o, RNICPI_WR_SEND, &s.src, send_off[2], send_len[2], 0, 0);
  xo_data(&o, RNICPI_WR_RDMA_READ, &s.sink, 1536, 256, s.tgt.addr + 2048, s.tgt.rkey);
  xo_data(&o, RNICPI_WR_RDMA_READ, &s.sink, 2048, 256, s.srcr.addr + 1024, s.srcr.rkey);

  if (ib) {
    /* Everything waits behind the first Send (IBTA 9.7.5.2.8, 9.5: the
     * responder executes in order). */
    cert_assert_cq_quiet(s.pe.a.scq);
    cert_peer_do(&s.pe, "check 1 0 %d zero", LEN - 64);
    for (size_t i = 0; i < 2304; i++)
      g_assert_cmphex(s.sink.data[i], ==, 0);
    for (int i = 0; i < 3; i++)
      cert_peer_do(&s.pe, "recv 0 %d 256 0x%x", i * 256, 0x4e0 + i);
  }
  /* The Writes before a Send are in place when its receive completes. */
  xo_peer_recv(&s.pe, 0x4e0, send_len[0]);
  xo_peer_recv(&s.pe, 0x4e1, send_len[1]);
  cert_peer_do(&s.pe, "check 1 0 1024 51 64");
  cert_peer_do(&s.pe, "check 1 1024 1024 51 1088");
  xo_peer_recv(&s.pe, 0x4e2, send_len[2]);
  cert_peer_do(&s.pe, "check 1 2048 256 51 3000");
  for (int i = 0; i < 3; i++)
    cert_peer_do(&s.pe, "check 0 %d %u 51 %zu", i * 256, send_len[i], send_off[i]);

  xo_expect(&o);
  bytes_are("the first Read's sink", s.sink.data, 512, 61, 0);
  bytes_are("the Read of the first Write's bytes", s.sink.data + 512, 1024, 51, 64);
  bytes_are("the Read of the third Write's bytes", s.sink.data + 1536, 256, 51, 3000);
  bytes_are("the last Read's sink", s.sink.data + 2048, 256, 61, 1024);
  g_assert_cmpint(QUE->qp_state(s.pe.a.qp), ==, RNICPI_QPS_RTS);
  if (windows) {
    cert_ok(MW->mw_dealloc(mw));
    cert_buf_free(&win);
  }
  xo_close(&s);
}

static void
test_xproc_order_local_error(cert_t *f, gconstpointer data)
{
  const xo_test_t *t = data;
  g_autofree char *summary =
    g_strdup_printf("with the passive side in another process%s, a Send, an "
                    "RDMA Read, an RDMA Write whose "
                    "gather entry names a key this side never had, then a "
                    "good Write, a Send and a Read, posted "
                    "back to back: each completes exactly once and in "
                    "posting order, the bad Write with "
                    "RNICPI_WC_LOC_PROT_ERR in its place: the Send and the "
                    "Read before it successfully (the Read "
                    "with the peer's bytes, the Send's receive at the peer "
                    "successful), or flushed where the "
                    "provider moved the queue pair to ERROR while they were "
                    "outstanding, never with another "
                    "status; the three after it flushed; this side enters "
                    "ERROR and no byte of either Write "
                    "reaches the peer",
                    t->warm ? " (its regions in shared memory and accessed "
                              "before; vp/emul: no cross-memory "
                              "attach)"
                            : "");
  g_test_summary(summary);
  xo_setup_t s;
  if (!xo_open(f, &s, t))
    return;
  for (int i = 0; i < 2; i++)
    cert_peer_do(&s.pe, "recv 0 %d 256 0x%x", i * 256, 0x4e0 + i);
  xo_t o = { .pe = &s.pe, .flush_ok = TRUE };
  xo_data(&o, RNICPI_WR_SEND, &s.src, 0, 64, 0, 0);
  xo_data(&o, RNICPI_WR_RDMA_READ, &s.sink, 0, 1024, s.srcr.addr, s.srcr.rkey);
  rnicpi_sge_t bad = cert_sge(&s.src, 64, 128);
  bad.lkey ^= 0xff0000ffu;
  rnicpi_send_wr_t w = { .opcode = RNICPI_WR_RDMA_WRITE,
                         .sg_list = &bad,
                         .num_sge = 1,
                         .remote_addr = s.tgt.addr,
                         .rkey = s.tgt.rkey };
  xo_post(&o, &w, RNICPI_WC_RDMA_WRITE, 128);
  o.want[o.n - 1].status = RNICPI_WC_LOC_PROT_ERR;
  xo_data(&o, RNICPI_WR_RDMA_WRITE, &s.src, 256, 128, s.tgt.addr + 256, s.tgt.rkey);
  xo_data(&o, RNICPI_WR_SEND, &s.src, 512, 64, 0, 0);
  xo_data(&o, RNICPI_WR_RDMA_READ, &s.sink, 1024, 256, s.srcr.addr, s.srcr.rkey);
  for (int i = 3; i < o.n; i++)
    o.want[i].status = RNICPI_WC_WR_FLUSH_ERR;
  xo_expect(&o);
  if (!(o.flushed & 2))
    bytes_are("the Read's sink", s.sink.data, 1024, 61, 0);
  for (size_t i = 1024; i < LEN; i++)
    g_assert_cmphex(s.sink.data[i], ==, 0);
  cert_wait_state(s.pe.a.qp, RNICPI_QPS_ERROR);
  if (!(o.flushed & 1))
    xo_peer_recv(&s.pe, 0x4e0, 64);
  cert_peer_do(&s.pe, "check 1 0 %d zero", LEN - 64);
  xo_close(&s);
}

/* ---- A shared receive queue fed from another process ------------------ */

#define XSRQ_CTX 0x5e0000ull
#define XSRQ_SLOT (64u << 10)

static void
test_xproc_srq_send(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("this side's queue pair takes its receives from an SRQ holding 6, limit "
                 "armed "
                 "at 3; the process of the passive side sends 1, 200, 4096, 65536 and 100 "
                 "bytes: "
                 "each Send completes successfully there and takes the SRQ's receives in "
                 "posting "
                 "order, completing on this QP's receive CQ (not on that of a QP put "
                 "on the SRQ before it) with its context, opcode RECV, the "
                 "Send's length and bytes, nothing written past them; "
                 "RNICPI_ASYNC_SRQ_LIMIT "
                 "comes once, with the SRQ's context, at the Send that leaves 2");
  if (!cert_require(f, RNICPI_CAP_SRQ))
    return;
  cert_peer_t pe;
  if (!cert_peer_start(f, &pe, cert_peer_rights(f), NULL))
    return;
  /* This side's QP again, on an SRQ of its domain. */
  cert_ok(QUE->qp_destroy(pe.a.qp));
  rnicpi_srq_t *srq = NULL;
  cert_ok(SRQ->srq_create(pe.a.pd, 8, 1, XSRQ_CTX, &srq));
  /* A queue pair on the SRQ before this side's, with a receive CQ of its
   * own: a receive taken for this side's QP must not complete there. */
  rnicpi_cq_t *decoy_rcq = NULL;
  rnicpi_qp_t *decoy = NULL;
  cert_ok(QUE->cq_create(f->dev, 16, XSRQ_CTX | 0xd, &decoy_rcq));
  rnicpi_qp_attr_t a = cert_qp_attr(f, pe.a.scq, decoy_rcq);
  a.srq = srq;
  cert_ok(QUE->qp_create(pe.a.pd, &a, XSRQ_CTX | 0xd, &decoy));
  a.recv_cq = pe.a.rcq;
  cert_ok(QUE->qp_create(pe.a.pd, &a, pe.a.ctx, &pe.a.qp));
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord) };
  cert_peer_connect(f, &pe, &cp, "accept");
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pe.a.ctx));
  g_free(cert_peer_reply(&pe));

  cert_buf_t rb;
  cert_buf_new(pe.a.pd, &rb, 6 * (size_t) XSRQ_SLOT, RW);
  for (int i = 0; i < 6; i++) {
    rnicpi_sge_t sge = cert_sge(&rb, (size_t) i * XSRQ_SLOT, XSRQ_SLOT);
    rnicpi_recv_wr_t wr = { .wr_id = 0x5400 + (uint64_t) i, .sg_list = &sge, .num_sge = 1 };
    cert_ok(SRQ->post_srq_recv(srq, &wr));
  }
  cert_ok(SRQ->srq_modify(srq, 0, 3));
  cert_peer_reg(&pe, 0, 0, XSRQ_SLOT, RW, FALSE);
  const uint32_t sizes[] = { 1, 200, 4096, XSRQ_SLOT, 100 };
  for (int i = 0; i < (int) G_N_ELEMENTS(sizes); i++) {
    cert_peer_do(&pe, "fill 0 %d", 70 + i);
    cert_peer_do(&pe, "post send 0 0 %u 0 0 0x%x", sizes[i], 0x5e0 + i);
    g_autofree char *s = cert_peer_call(&pe, "wc s %d", CERT_TIMEOUT_MS);
    g_autofree char *swant =
      g_strdup_printf("0x%x %d %d ", 0x5e0 + i, RNICPI_WC_SUCCESS, RNICPI_WC_SEND);
    g_assert_true(g_str_has_prefix(s, swant));
    rnicpi_wc_t r = cert_wc(pe.a.rcq);
    g_assert_cmphex(r.wr_id, ==, 0x5400 + (uint64_t) i);
    g_assert_cmpint(r.status, ==, RNICPI_WC_SUCCESS);
    g_assert_cmpint(r.opcode, ==, RNICPI_WC_RECV);
    g_assert_cmphex(r.qp_ctx, ==, pe.a.ctx);
    g_assert_cmpuint(r.byte_len, ==, sizes[i]);
    const uint8_t *slot = rb.data + (size_t) i * XSRQ_SLOT;
    bytes_are("the SRQ's receive", slot, sizes[i], (uint8_t) (70 + i), 0);
    for (size_t k = sizes[i]; k < XSRQ_SLOT; k++)
      g_assert_cmphex(slot[k], ==, 0);
    /* Taken: 6 - (i + 1) left; the limit of 3 is crossed at 2 left. */
    g_autofree rnicpi_async_event_t *ev = cert_poll_async(f, RNICPI_ASYNC_SRQ_LIMIT, XSRQ_CTX,
                                                          i == 3 ? CERT_TIMEOUT_MS : CERT_QUIET_MS);
    if (i == 3)
      g_assert_nonnull(ev);
    else if (ev != NULL)
      g_test_message("RNICPI_ASYNC_SRQ_LIMIT after Send %d, with %d receives left", i, 5 - i);
    if (i != 3)
      g_assert_null(ev);
  }
  g_assert_cmpuint(SRQ->srq_count(srq), ==, 1);
  cert_assert_cq_quiet(pe.a.rcq);
  cert_assert_cq_quiet(decoy_rcq);
  g_assert_cmpint(QUE->qp_state(pe.a.qp), ==, RNICPI_QPS_RTS);
  cert_ok(QUE->qp_destroy(pe.a.qp));
  pe.a.qp = NULL;
  cert_ok(QUE->qp_destroy(decoy));
  cert_ok(QUE->cq_destroy(decoy_rcq));
  cert_ok(SRQ->srq_destroy(srq));
  cert_buf_free(&rb);
  cert_peer_close(&pe);
}

/* ---- Immediate data to another process -------------------------------- */

#define XI_WRITE (70u << 10) /* past a ring frame and the inline limit of a Send */
#define XI_VALUE 0x1122334455667788ull

/* The peer's next receive completion: @id, successful, consumed by
 * immediate data @imm (the low 32 bits on InfiniBand) with @len bytes. */
static void
xi_peer_recv(cert_t *f, cert_peer_t *pe, uint64_t id, uint64_t imm, uint32_t len)
{
  gboolean iw = f->caps.transport == RNICPI_TRANSPORT_IWARP;
  g_autofree char *r = cert_peer_call(pe, "wc r %d", CERT_TIMEOUT_MS);
  uint64_t got_id = 0, rkey = 0, got_imm = 0;
  int st = -1, op = -1;
  unsigned got_len = 0, flags = 0;
  g_test_message("the peer's receive completion: %s", r);
  g_assert_cmpint(sscanf(r, "%" SCNx64 " %d %d %u %x %" SCNx64 " %" SCNx64, &got_id, &st, &op,
                         &got_len, &flags, &rkey, &got_imm), ==, 7);
  g_assert_cmphex(got_id, ==, id);
  g_assert_cmpint(st, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(op, ==, RNICPI_WC_RECV);
  g_assert_cmphex(flags & RNICPI_WC_WITH_IMM, ==, RNICPI_WC_WITH_IMM);
  g_assert_cmphex(got_imm, ==, iw ? imm : imm & UINT32_MAX);
  g_assert_cmpuint(got_len, ==, len);
}

static void
test_xproc_immediate(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("with the passive side in another process: an RDMA Write with immediate data "
                 "of 70 KiB places every byte, then completes one receive there with "
                 "RNICPI_WC_WITH_IMM and the value (the low 32 bits on InfiniBand, byte_len the "
                 "Write's length, nothing placed; "
                 "on iWARP the 8 bytes in network order at the receive's start, byte_len 8, "
                 "nothing past them); immediate data alone into a receive of 4 bytes completes "
                 "with byte_len 0, nothing placed; a Send, immediate data and a Send complete "
                 "their receives in posting order; on InfiniBand, a Write with immediate data "
                 "posted before the receive waits for it, nothing completing meanwhile");
  if (!cert_require(f, RNICPI_CAP_IMMEDIATE))
    return;
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  gboolean iw = f->caps.transport == RNICPI_TRANSPORT_IWARP;
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, XI_WRITE, RW);
  cert_buf_fill(&src, 41);
  cert_xreg_t dst = cert_peer_reg(&pe, 0, 0, XI_WRITE, RW | RNICPI_ACCESS_REMOTE_WRITE, FALSE);
  cert_peer_reg(&pe, 1, 0, 256, RW, FALSE);
  cert_peer_do(&pe, "fill 1 9");

  /* RDMA Write with immediate data into a receive of 32 bytes. */
  cert_peer_do(&pe, "recv 1 0 32 0x4f1");
  rnicpi_sge_t g = cert_sge(&src, 0, XI_WRITE);
  rnicpi_send_wr_t wr = { .wr_id = 0x5f1, .opcode = RNICPI_WR_RDMA_WRITE_IMM,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &g, .num_sge = 1,
                          .remote_addr = dst.addr, .rkey = dst.rkey, .imm_data = XI_VALUE };
  cert_ok(DAT->post_send(pe.a.qp, &wr));
  rnicpi_wc_t s = cert_wc(pe.a.scq);
  g_assert_cmphex(s.wr_id, ==, 0x5f1);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_RDMA_WRITE);
  xi_peer_recv(f, &pe, 0x4f1, XI_VALUE, iw ? 8 : XI_WRITE);
  cert_peer_do(&pe, "check 0 0 %u 41 0", XI_WRITE);
  if (iw) {
    uint64_t v = cert_peer_u64(&pe, "get64 1 0");
    g_assert_cmphex(GUINT64_FROM_BE(v), ==, XI_VALUE);
    cert_peer_do(&pe, "check 1 8 248 9 8");
  } else {
    cert_peer_do(&pe, "check 1 0 256 9 0");
  }

  /* Immediate data alone, into a receive too small to hold it. */
  cert_peer_do(&pe, "recv 1 32 4 0x4f2");
  rnicpi_send_wr_t imm = { .wr_id = 0x5f2, .opcode = RNICPI_WR_IMM_DATA,
                           .flags = RNICPI_WR_SIGNALED, .imm_data = 0xabcd };
  cert_ok(DAT->post_send(pe.a.qp, &imm));
  s = cert_wc(pe.a.scq);
  g_assert_cmphex(s.wr_id, ==, 0x5f2);
  g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(s.opcode, ==, RNICPI_WC_SEND);
  xi_peer_recv(f, &pe, 0x4f2, 0xabcd, 0);
  cert_peer_do(&pe, "check 1 8 248 9 8");

  /* In order with the Sends around it. */
  cert_peer_do(&pe, "recv 1 64 64 0x4f3");
  cert_peer_do(&pe, "recv 1 128 64 0x4f4");
  cert_peer_do(&pe, "recv 1 192 64 0x4f5");
  cert_post_send(pe.a.qp, RNICPI_WR_SEND, &src, 0, 16, 0x5f3, RNICPI_WR_SIGNALED, 0, 0);
  imm.wr_id = 0x5f4;
  imm.imm_data = 0xfeedface00000001ull;
  cert_ok(DAT->post_send(pe.a.qp, &imm));
  cert_post_send(pe.a.qp, RNICPI_WR_SEND, &src, 16, 16, 0x5f5, RNICPI_WR_SIGNALED, 0, 0);
  for (uint64_t id = 0x5f3; id <= 0x5f5; id++) {
    s = cert_wc(pe.a.scq);
    g_assert_cmphex(s.wr_id, ==, id);
    g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
  }
  xo_peer_recv(&pe, 0x4f3, 16);
  xi_peer_recv(f, &pe, 0x4f4, 0xfeedface00000001ull, iw ? 8 : 0);
  xo_peer_recv(&pe, 0x4f5, 16);
  cert_peer_do(&pe, "check 1 64 16 41 0");
  cert_peer_do(&pe, "check 1 192 16 41 16");

  /* InfiniBand: posted before the receive, it waits for one (RNR). */
  if (!iw) {
    cert_peer_do(&pe, "zero 0 0 64");
    g.length = 64;
    wr.wr_id = 0x5f6;
    wr.imm_data = 0x600d;
    cert_ok(DAT->post_send(pe.a.qp, &wr));
    g_autofree char *none = cert_peer_call(&pe, "wc r %d", CERT_QUIET_MS);
    g_assert_cmpstr(none, ==, "none");
    cert_assert_cq_quiet(pe.a.scq);
    cert_peer_do(&pe, "check 0 0 64 zero");  /* nothing placed while it waits */
    cert_peer_do(&pe, "recv 1 0 32 0x4f6");
    s = cert_wc(pe.a.scq);
    g_assert_cmphex(s.wr_id, ==, 0x5f6);
    g_assert_cmpint(s.status, ==, RNICPI_WC_SUCCESS);
    xi_peer_recv(f, &pe, 0x4f6, 0x600d, 64);
    cert_peer_do(&pe, "check 0 0 64 41 0");
  }
  g_assert_cmpint(QUE->qp_state(pe.a.qp), ==, RNICPI_QPS_RTS);
  cert_buf_free(&src);
  cert_peer_close(&pe);
}

/* ---- A receive the Send cannot use ------------------------------------- */

typedef enum {
  XB_KEY,      /* the receive names a key its buffer's region never had */
  XB_NO_WRITE, /* the region lacks LOCAL_WRITE */
  XB_OTHER_PD, /* the region is of another domain than the QP's */
} xb_case_t;

static void
test_xproc_recv_bad_buffer(cert_t *f, gconstpointer data)
{
  xb_case_t c = (xb_case_t) GPOINTER_TO_INT(data);
  static const char *const what[] = {
    [XB_KEY] = "whose scatter entry names a key its region never had",
    [XB_NO_WRITE] = "whose buffer's region lacks LOCAL_WRITE",
    [XB_OTHER_PD] = "whose buffer is a region of another protection domain than the QP's",
  };
  g_autofree char *summary =
    g_strdup_printf("with the passive side in another process, a Send of 256 bytes into a "
                    "receive %s: as in one "
                    "process, the peer completes the receive with RNICPI_WC_LOC_PROT_ERR and "
                    "leaves its buffer "
                    "unchanged, the requester completes the Send with an error (where "
                    "completions mean "
                    "placement), both sides are BROKEN and in ERROR, the peer's event is "
                    "RNICPI_ASYNC_QP_FATAL "
                    "of cause LOCAL_RECV and the requester's cause REMOTE_RECV",
                    what[c]);
  g_test_summary(summary);
  cert_peer_t pe;
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  int pd = c == XB_OTHER_PD ? (int) cert_peer_u64(&pe, "pd") : 0;
  uint32_t access = c == XB_NO_WRITE ? RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_REMOTE_READ : RW;
  cert_peer_reg(&pe, 0, pd, 512, access, FALSE);
  cert_peer_do(&pe, "fill 0 33");
  cert_peer_do(&pe, "recv 0 0 512 0x4ec%s", c == XB_KEY ? " badkey" : "");
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, 256, RW);
  cert_buf_fill(&src, 34);
  cert_post_send(pe.a.qp, RNICPI_WR_SEND, &src, 0, 256, BAD_ID, RNICPI_WR_SIGNALED, 0, 0);
  g_autofree char *r = cert_peer_call(&pe, "wc r %d", CERT_TIMEOUT_MS);
  g_autofree char *want = g_strdup_printf("0x4ec %d ", RNICPI_WC_LOC_PROT_ERR);
  if (!g_str_has_prefix(r, want)) {
    g_test_message("the peer's receive completion: %s, expected %s...", r, want);
    xo_report_sends(&pe);
  }
  g_assert_true(g_str_has_prefix(r, want));
  rnicpi_wc_t wc = cert_wc(pe.a.scq);
  g_assert_cmphex(wc.wr_id, ==, BAD_ID);
  g_test_message("requester completion status %d", wc.status);
  if (f->caps.features & RNICPI_CAP_PLACED_COMPLETION)
    g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
  g_free(cert_wait_cm(f, RNICPI_CM_BROKEN, pe.a.ctx));
  cert_wait_qp_async(f, RNICPI_AE_REMOTE_RECV, pe.a.ctx);
  cert_wait_state(pe.a.qp, RNICPI_QPS_ERROR);
  cert_peer_broken(&pe, 0);
  g_autofree char *ev = cert_peer_call(&pe, "async %d %d", RNICPI_ASYNC_QP_FATAL, CERT_TIMEOUT_MS);
  if (cert_prov->abi_minor >= 7) {
    g_autofree char *cause = g_strdup_printf("%d", RNICPI_AE_LOCAL_RECV);
    g_assert_cmpstr(ev, ==, cause);
  } else {
    g_assert_cmpstr(ev, !=, "none");
  }
  cert_peer_do(&pe, "check 0 0 512 33");
  cert_assert_cq_quiet(pe.a.scq);
  cert_buf_free(&src);
  cert_peer_close(&pe);
}

/* ---- The listener's process dies ---------------------------------------- */

static void
test_xproc_listener_dies(cert_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("the process of the passive side listens, takes this side's "
                 "connection request "
                 "and dies before answering it: this side's QP gets exactly "
                 "one terminal CM event, "
                 "RNICPI_CM_UNREACHABLE (it was never connected, so not "
                 "BROKEN), and nothing "
                 "else, enters ERROR and completes its posted receive flushed, "
                 "once; a fresh QP "
                 "then connects to a fresh peer process and a Send crosses");
  cert_peer_t pe;
  if (!cert_peer_start(f, &pe, cert_peer_rights(f), NULL))
    return;
  cert_buf_t rb;
  cert_buf_new(pe.a.pd, &rb, 64, RW);
  const uint64_t rid = 0x4e0;
  cert_post_recv(pe.a.qp, &rb, 0, 64, rid);
  uint32_t port = (uint32_t) cert_peer_u64(&pe, "listen");
  uint8_t pd[RNICPI_MAX_PDATA];
  uint32_t len = cert_min(16, f->caps.pdata_connect);
  cert_pdata_fill(pd, len, CERT_PDATA_CONNECT);
  rnicpi_conn_param_t cp = { .pdata = pd,
                             .pdata_len = len,
                             .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord) };
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  cert_ok(CMV->connect(pe.a.qp, &dst, &cp));
  g_autofree char *req = cert_peer_call(&pe, "request %d", CERT_TIMEOUT_MS);
  g_assert_true(g_str_has_prefix(req, "seen"));
  cert_peer_send(&pe, "die");
  cert_peer_reap(&pe);

  static const rnicpi_cm_event_type_t ends[] = { RNICPI_CM_UNREACHABLE, RNICPI_CM_BROKEN,
                                                 RNICPI_CM_REJECTED, RNICPI_CM_DISCONNECTED,
                                                 RNICPI_CM_ESTABLISHED };
  static const char *const names[] = { "UNREACHABLE", "BROKEN", "REJECTED", "DISCONNECTED",
                                       "ESTABLISHED" };
  g_autofree rnicpi_cm_event_t *un =
    cert_poll_cm(f, RNICPI_CM_UNREACHABLE, pe.a.ctx, CERT_TIMEOUT_MS);
  if (un != NULL)
    g_test_message("UNREACHABLE, reason %d", un->reason);
  /* Then nothing else, a second UNREACHABLE included. */
  for (size_t i = 0; i < G_N_ELEMENTS(ends); i++) {
    g_autofree rnicpi_cm_event_t *ev =
      cert_poll_cm(f, ends[i], pe.a.ctx, i == 0 ? CERT_QUIET_MS : 0);
    if (ev != NULL)
      g_test_message("the requester got %s%s", names[i],
                     un != NULL ? " after UNREACHABLE" : ", and no UNREACHABLE before it");
    g_assert_null(ev);
  }
  g_assert_nonnull(un);
  cert_wait_state(pe.a.qp, RNICPI_QPS_ERROR);
  cert_expect_flushed(pe.a.rcq, pe.a.ctx, &rid, 1);
  cert_assert_cq_quiet(pe.a.scq);
  cert_buf_free(&rb);
  cert_peer_close(&pe);

  /* The device is not left waiting for the dead process. */
  if (!cert_peer_open(f, &pe, cert_peer_rights(f)))
    return;
  cert_buf_t src;
  cert_buf_new(pe.a.pd, &src, 64, RW);
  cert_buf_fill(&src, 35);
  cert_peer_reg(&pe, 0, 0, 64, RW, FALSE);
  cert_peer_do(&pe, "recv 0 0 64 0x4e1");
  cert_post_send(pe.a.qp, RNICPI_WR_SEND, &src, 0, 64, 0x5e1, RNICPI_WR_SIGNALED, 0, 0);
  rnicpi_wc_t wc = cert_wc(pe.a.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x5e1);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  xo_peer_recv(&pe, 0x4e1, 64);
  cert_peer_do(&pe, "check 0 0 64 35");
  cert_buf_free(&src);
  cert_peer_close(&pe);
}

void
cert_register_xmore(void)
{
  static const xo_test_t cold = { FALSE }, warm = { TRUE };
  g_test_add("/rnicpi/xproc/order-mixed", cert_t, &cold, cert_setup, test_xproc_order_mixed,
             cert_teardown);
  g_test_add("/rnicpi/xproc/order-mixed-warm", cert_t, &warm, cert_setup, test_xproc_order_mixed,
             cert_teardown);
  g_test_add("/rnicpi/xproc/order-local-error", cert_t, &cold, cert_setup,
             test_xproc_order_local_error, cert_teardown);
  g_test_add("/rnicpi/xproc/order-local-error-warm", cert_t, &warm, cert_setup,
             test_xproc_order_local_error, cert_teardown);
  cert_add("/rnicpi/xproc/srq-send", test_xproc_srq_send);
  cert_add("/rnicpi/xproc/immediate", test_xproc_immediate);
  g_test_add("/rnicpi/xproc/recv-bad-buffer/key", cert_t, GINT_TO_POINTER(XB_KEY), cert_setup,
             test_xproc_recv_bad_buffer, cert_teardown);
  g_test_add("/rnicpi/xproc/recv-bad-buffer/no-local-write", cert_t, GINT_TO_POINTER(XB_NO_WRITE),
             cert_setup, test_xproc_recv_bad_buffer, cert_teardown);
  g_test_add("/rnicpi/xproc/recv-bad-buffer/other-pd", cert_t, GINT_TO_POINTER(XB_OTHER_PD),
             cert_setup, test_xproc_recv_bad_buffer, cert_teardown);
  cert_add("/rnicpi/xproc/listener-dies", test_xproc_listener_dies);
}
