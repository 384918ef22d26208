/*
 * cert-rnicpi's peer in another process.  The tests of cert_xproc.c and
 * cert_xmore.c hold the active side of a connection; its passive side
 * lives in a second
 * cert-rnicpi, started as "cert-rnicpi --peer" with the same provider and
 * environment, which opens the same device, listens, accepts and then does
 * what the test asks, one line at a time:
 *
 *   test -> peer: a command, words separated by one space
 *   peer -> test: "ok [values]" or "err what failed"
 *
 * So the rules the in-process tests check (keys, protection zones,
 * bounds, rights, receive lengths, completions) are checked again where
 * a provider moves data between two processes: for vp/emul another data
 * path altogether (emul_ring_copy.c, emul_ring_resp.c), for a NIC the ordinary one.
 *
 * The peer answers on the descriptor standard output had when it started,
 * and sends everything else written to standard output (GLib's messages)
 * to standard error.  It exits when its input ends: a test that fails does
 * not leave its peer behind.  Lines have no length limit (an answer may
 * carry 512 bytes of private data in hex), and neither end dies of SIGPIPE
 * when the other is gone: the test fails naming the peer and the command,
 * the peer exits saying why.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cert.h"

#define MW (cert_prov->mw)
#define UDO (cert_prov->ud)
#define PEER_UD_CTX 0xb8000ull

/* How long the test waits for an answer: longer than any wait of the
 * peer's own (CERT_TIMEOUT_MS), so a peer that times out says so first. */
#define PEER_REPLY_MS (3 * CERT_TIMEOUT_MS)
#define PEER_BUFS 8
#define PEER_LISTEN_CTX 0x1150ull
#define PEER_PDS 4

/* The commands (B: a buffer slot 0-7; numbers in C syntax):
 *   side ACCESS              its domain, CQs and QP (QP rights ACCESS)
 *   listen                   a fresh port
 *   accept [LEN [IRD ORD]] / reject LEN   answer the next request (LEN
 *                            bytes of private data; the accept's IRD and
 *                            ORD, 4 each if not given): IRD ORD REQ / REQ
 *                            (the settled IRD and ORD; REQ: the request's
 *                            private data in hex, "-" for none)
 *   request MS               the next connection request reaches the listener
 *                            and stays unanswered: "seen" and its private data
 *                            in hex, or none
 *   connect PORT LEN         the side's QP connects to PORT of the device's
 *                            address with LEN bytes of private data (seed
 *                            CERT_PDATA_CONNECT); answered once connect returns
 *   disconnect LEN           with LEN bytes of private data
 *   pd                       another domain: its index (the side's is 0)
 *   reg B PD LEN ACCESS [shared]   LEN zero bytes registered (in a memfd
 *                            mapping: cert_buf_new_shared): ADDR RKEY
 *   dereg B                  the region goes, the bytes stay
 *   fill B SEED / zero B OFF LEN / check B OFF LEN SEED|zero [FROM]
 *   get64 B OFF / put64 B OFF V
 *   recv B OFF LEN ID [ud|badkey]   a receive of one segment (of the datagram
 *                            QP; or naming a key B's region never had)
 *   recv2 B OFF LEN OFF2 LEN2 ID   a receive of two segments of B
 *   post write|read|send B OFF LEN RADDR RKEY ID   a signaled request
 *   bind B ACCESS            a window over all of B: its key
 *   ud QKEY                  a datagram QP with that Q_Key: its number
 *   wc s|r|ur MS             a completion of the send, receive or datagram
 *                            receive CQ: ID STATUS OPCODE LEN FLAGS RKEY, or none
 *   async TYPE MS / cm TYPE MS   an event of the QP: its cause / "seen" and its
 *                            private data in hex; or none
 *   state                    the QP's state
 *   die / quit               _exit(3) at once / clean up and exit 0 */

/* ---- The peer process -------------------------------------------------- */

typedef struct peer {
  cert_t f;
  cert_side_t s;
  rnicpi_qp_t *ud;            /* a datagram QP ("ud"), in the side's domain */
  rnicpi_cq_t *ud_scq, *ud_rcq;
  rnicpi_pd_t *pd[PEER_PDS]; /* pd[0] is the side's own */
  int npd;
  cert_buf_t buf[PEER_BUFS];
  rnicpi_mw_t *mw[PEER_BUFS];
  rnicpi_listen_t *lst;
  FILE *out;
} peer_t;

static void G_GNUC_PRINTF(2, 3)
say(peer_t *p, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vfprintf(p->out, fmt, ap);
  va_end(ap);
  fputc('\n', p->out);
  if (fflush(p->out) != 0 || ferror(p->out)) {
    /* The test is gone (it failed, or was killed): no clean-up owed. */
    g_printerr("cert-rnicpi --peer: the test took no answer (%s); exiting\n", g_strerror(errno));
    _exit(1);
  }
}

static uint64_t
num(char **w, int i)
{
  return w[i] != NULL ? g_ascii_strtoull(w[i], NULL, 0) : 0;
}

/* The buffer named by word @i, registered; NULL after saying why. */
static cert_buf_t *
peer_buf(peer_t *p, char **w, int i)
{
  uint64_t b = num(w, i);
  if (b >= PEER_BUFS || p->buf[b].mem == NULL) {
    say(p, "err no buffer %s", w[i] != NULL ? w[i] : "(none)");
    return NULL;
  }
  return &p->buf[b];
}

char *
cert_pdata_hex(const uint8_t *p, uint32_t len)
{
  if (len == 0)
    return g_strdup("-");
  GString *h = g_string_sized_new(2 * len);
  for (uint32_t i = 0; i < len; i++)
    g_string_append_printf(h, "%02x", p[i]);
  return g_string_free(h, FALSE);
}

void
cert_pdata_fill(uint8_t *p, uint32_t len, uint8_t seed)
{
  for (uint32_t i = 0; i < len; i++)
    p[i] = (uint8_t) (seed + i * 13u);
}

/* check B OFF LEN SEED [FROM]: the pattern of SEED from its byte FROM (or
 * zeros where SEED is "zero"), and the guards either side. */
static void
peer_check(peer_t *p, char **w)
{
  cert_buf_t *b = peer_buf(p, w, 1);
  if (b == NULL)
    return;
  size_t off = num(w, 2), len = num(w, 3);
  gboolean zero = g_strcmp0(w[4], "zero") == 0;
  size_t from = num(w, 5);
  if (off > b->len || len > b->len - off) {
    say(p, "err bytes [%zu, +%zu) are outside buffer %s of %zu", off, len, w[1], b->len);
    return;
  }
  for (size_t i = 0; i < len; i++) {
    uint8_t want = zero ? 0 : cert_pattern((uint8_t) num(w, 4), from + i);
    if (b->data[off + i] != want) {
      say(p, "err byte %zu of buffer %s is 0x%02x, expected 0x%02x", off + i, w[1],
          b->data[off + i], want);
      return;
    }
  }
  for (size_t i = 0; i < CERT_GUARD; i++)
    if (b->mem[i] != CERT_GUARD_BYTE || b->data[b->len + i] != CERT_GUARD_BYTE) {
      say(p, "err a guard byte of buffer %s was written", w[1]);
      return;
    }
  say(p, "ok");
}

static void
peer_side(peer_t *p, char **w)
{
  if (p->s.qp != NULL) {
    say(p, "err the peer has its queue pair already");
    return;
  }
  rnicpi_qp_attr_t a = cert_qp_attr(&p->f, NULL, NULL);
  a.access = (uint32_t) num(w, 1);
  cert_side_new(&p->f, &p->s, 0xb0000, 256, &a);
  p->pd[0] = p->s.pd;
  p->npd = 1;
  say(p, "ok");
}

/* accept [LEN [IRD ORD]] / reject LEN: the next connection request,
 * accepted (with LEN bytes of private data of seed CERT_PDATA_ACCEPT, and
 * IRD and ORD, 4 each or the device's most if not given) or rejected (seed
 * CERT_PDATA_REJECT); the answer ends with the request's private data in
 * hex ("-": none). */
static void
peer_answer(peer_t *p, gboolean accept, uint32_t len, char **w)
{
  g_autofree rnicpi_cm_event_t *req =
    cert_wait_cm(&p->f, RNICPI_CM_CONNECT_REQUEST, PEER_LISTEN_CTX);
  g_autofree char *hex = cert_pdata_hex(req->pdata, req->pdata_len);
  uint8_t pd[RNICPI_MAX_PDATA];
  len = MIN(len, RNICPI_MAX_PDATA);
  cert_pdata_fill(pd, len, accept ? CERT_PDATA_ACCEPT : CERT_PDATA_REJECT);
  rnicpi_conn_param_t cp = { .pdata = pd, .pdata_len = len, .ird = cert_min(4, p->f.caps.max_ird),
                             .ord = cert_min(4, p->f.caps.max_ord) };
  if (accept && w[1] != NULL && w[2] != NULL && w[3] != NULL) {
    cp.ird = (uint32_t) num(w, 2);
    cp.ord = (uint32_t) num(w, 3);
  }
  rnicpi_status_t st = accept ? CMV->accept(p->s.qp, req->conn_id, &cp)
                              : CMV->reject(p->f.dev, req->conn_id, pd, len);
  if (st != RNICPI_OK) {
    say(p, "err %s: %s", accept ? "accept" : "reject", rnicpi_status_name(st));
    return;
  }
  cert_ok(CMV->unlisten(p->lst));
  p->lst = NULL;
  if (!accept) {
    say(p, "ok %s", hex);
    return;
  }
  g_autofree rnicpi_cm_event_t *ev = cert_wait_cm(&p->f, RNICPI_CM_ESTABLISHED, p->s.ctx);
  say(p, "ok %u %u %s", ev->ird, ev->ord, hex);
}

static void
peer_reg(peer_t *p, char **w)
{
  uint64_t b = num(w, 1), pd = num(w, 2);
  if (b >= PEER_BUFS || p->buf[b].mem != NULL || pd >= (uint64_t) p->npd) {
    say(p, "err reg: buffer %s in use or domain %s unknown", w[1], w[2] != NULL ? w[2] : "");
    return;
  }
  if (g_strcmp0(w[5], "shared") == 0)
    cert_buf_new_shared(p->pd[pd], &p->buf[b], num(w, 3), (uint32_t) num(w, 4));
  else
    cert_buf_new(p->pd[pd], &p->buf[b], num(w, 3), (uint32_t) num(w, 4));
  say(p, "ok 0x%" G_GINT64_MODIFIER "x 0x%" G_GINT64_MODIFIER "x", cert_raddr(&p->buf[b], 0),
      p->buf[b].mr->rkey);
}

/* dereg B: the region goes, the memory stays (and keeps its bytes). */
static void
peer_dereg(peer_t *p, char **w)
{
  cert_buf_t *b = peer_buf(p, w, 1);
  if (b == NULL)
    return;
  if (b->mr == NULL) {
    say(p, "err buffer %s is not registered", w[1]);
    return;
  }
  cert_ok(MEM->mr_dereg(b->mr));
  b->mr = NULL;
  say(p, "ok");
}

/* bind B ACCESS: a window over all of buffer B (the largest kind the device
 * has), bound by the peer's QP; answers its key. */
static void
peer_bind(peer_t *p, char **w)
{
  cert_buf_t *b = peer_buf(p, w, 1);
  if (b == NULL)
    return;
  uint64_t i = b - p->buf;
  rnicpi_mw_type_t type = (p->f.caps.features & RNICPI_CAP_MW_WIDE) ? RNICPI_MW_WIDE
                                                                    : RNICPI_MW_NARROW;
  if (MW == NULL || p->mw[i] != NULL || MW->mw_alloc(b->mr->pd, type, &p->mw[i]) != RNICPI_OK) {
    say(p, "err no window for buffer %s", w[1]);
    return;
  }
  rnicpi_send_wr_t wr = { .wr_id = 0xb1d, .opcode = RNICPI_WR_BIND_MW, .flags = RNICPI_WR_SIGNALED };
  wr.bind.mw = p->mw[i];
  wr.bind.mr = b->mr;
  wr.bind.addr = cert_raddr(b, 0);
  wr.bind.length = b->len;
  wr.bind.access = (uint32_t) num(w, 2);
  cert_ok(DAT->post_send(p->s.qp, &wr));
  uint64_t key = p->mw[i]->rkey;
  rnicpi_wc_t wc;
  if (cert_poll(p->s.scq, &wc, 1, CERT_TIMEOUT_MS) != 1 || wc.status != RNICPI_WC_SUCCESS) {
    say(p, "err the bind of a window over buffer %s did not complete successfully", w[1]);
    return;
  }
  say(p, "ok 0x%" G_GINT64_MODIFIER "x", key);
}

/* post write|read|send B OFF LEN RADDR RKEY ID: one signaled request of the
 * peer's own, from bytes [OFF, OFF+LEN) of buffer B (the sink of a read). */
static void
peer_post(peer_t *p, char **w)
{
  cert_buf_t *b = peer_buf(p, w, 2);
  if (b == NULL)
    return;
  rnicpi_wr_opcode_t op = g_strcmp0(w[1], "write") == 0  ? RNICPI_WR_RDMA_WRITE
                          : g_strcmp0(w[1], "read") == 0 ? RNICPI_WR_RDMA_READ
                                                         : RNICPI_WR_SEND;
  rnicpi_sge_t sge = cert_sge(b, num(w, 3), (uint32_t) num(w, 4));
  rnicpi_send_wr_t wr = { .wr_id = num(w, 7), .opcode = op, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1, .remote_addr = num(w, 5),
                          .rkey = num(w, 6) };
  rnicpi_status_t st = DAT->post_send(p->s.qp, &wr);
  if (st == RNICPI_OK)
    say(p, "ok");
  else
    say(p, "err post_send: %s", rnicpi_status_name(st));
}

/* ud QKEY: a datagram QP with that Q_Key: its number. */
static void
peer_ud(peer_t *p, char **w)
{
  if (p->ud != NULL || !(p->f.caps.features & RNICPI_CAP_UD)) {
    say(p, "err no datagram queue pair here");
    return;
  }
  rnicpi_qp_attr_t a = cert_qp_attr(&p->f, NULL, NULL);
  cert_ok(QUE->cq_create(p->f.dev, 64, PEER_UD_CTX | 1, &p->ud_scq));
  cert_ok(QUE->cq_create(p->f.dev, 64, PEER_UD_CTX | 2, &p->ud_rcq));
  a.type = RNICPI_QPT_UD;
  a.qkey = (uint32_t) num(w, 1);
  a.access = 0;
  a.send_cq = p->ud_scq;
  a.recv_cq = p->ud_rcq;
  cert_ok(QUE->qp_create(p->s.pd, &a, PEER_UD_CTX, &p->ud));
  say(p, "ok %u", p->ud->qp_num);
}

/* wc s|r|ur MS: one completion of the send, receive or datagram receive
 * CQ (id, status, opcode, byte_len, flags, rkey, and with
 * RNICPI_WC_WITH_IMM imm_data), or "none". */
static void
peer_wc(peer_t *p, char **w)
{
  rnicpi_cq_t *cq = g_strcmp0(w[1], "s") == 0 ? p->s.scq
                    : g_strcmp0(w[1], "ur") == 0 && p->ud_rcq != NULL ? p->ud_rcq
                                                                      : p->s.rcq;
  rnicpi_wc_t wc;
  if (cert_poll(cq, &wc, 1, (guint) num(w, 2)) != 1) {
    say(p, "ok none");
    return;
  }
  if (wc.flags & RNICPI_WC_WITH_IMM)
    say(p, "ok 0x%" G_GINT64_MODIFIER "x %d %d %u 0x%x 0x%" G_GINT64_MODIFIER "x 0x%" G_GINT64_MODIFIER "x",
        wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.flags, wc.rkey, wc.imm_data);
  else
    say(p, "ok 0x%" G_GINT64_MODIFIER "x %d %d %u 0x%x 0x%" G_GINT64_MODIFIER "x", wc.wr_id,
        wc.status, wc.opcode, wc.byte_len, wc.flags, wc.rkey);
}

/* async TYPE MS: the cause of the first event of TYPE on the peer's QP. */
static void
peer_async(peer_t *p, char **w)
{
  g_autofree rnicpi_async_event_t *ev =
    cert_poll_async(&p->f, (rnicpi_async_type_t) num(w, 1), p->s.ctx, (guint) num(w, 2));
  if (ev == NULL)
    say(p, "ok none");
  else
    say(p, "ok %d", ev->cause);
}

static void
peer_cm(peer_t *p, char **w)
{
  g_autofree rnicpi_cm_event_t *ev =
    cert_poll_cm(&p->f, (rnicpi_cm_event_type_t) num(w, 1), p->s.ctx, (guint) num(w, 2));
  if (ev == NULL) {
    say(p, "ok none");
    return;
  }
  g_autofree char *hex = cert_pdata_hex(ev->pdata, ev->pdata_len);
  say(p, "ok seen %s", hex);
}

/* request MS: a connection request at the listener, left unanswered (the
 * test then kills the peer, or the request stays pending until "quit"). */
static void
peer_request(peer_t *p, char **w)
{
  g_autofree rnicpi_cm_event_t *req =
    cert_poll_cm(&p->f, RNICPI_CM_CONNECT_REQUEST, PEER_LISTEN_CTX, (guint) num(w, 1));
  if (req == NULL) {
    say(p, "ok none");
    return;
  }
  g_autofree char *hex = cert_pdata_hex(req->pdata, req->pdata_len);
  say(p, "ok seen %s", hex);
}

/* connect PORT LEN: the peer as requester, towards a listener of the test
 * (the CM events are the test's to wait for, or the peer's "cm"). */
static void
peer_connect(peer_t *p, char **w)
{
  uint8_t pd[RNICPI_MAX_PDATA];
  uint32_t len = (uint32_t) MIN(num(w, 2), RNICPI_MAX_PDATA);
  cert_pdata_fill(pd, len, CERT_PDATA_CONNECT);
  rnicpi_addr_t dst;
  cert_addr(&p->f, (uint32_t) num(w, 1), &dst);
  rnicpi_conn_param_t cp = { .pdata = pd, .pdata_len = len, .ird = cert_min(4, p->f.caps.max_ird),
                             .ord = cert_min(4, p->f.caps.max_ord) };
  rnicpi_status_t st = CMV->connect(p->s.qp, &dst, &cp);
  if (st == RNICPI_OK)
    say(p, "ok");
  else
    say(p, "err connect: %s", rnicpi_status_name(st));
}

/* disconnect LEN: with LEN bytes of private data of seed CERT_PDATA_DISCONNECT. */
static void
peer_disconnect(peer_t *p, char **w)
{
  uint8_t pd[RNICPI_MAX_PDATA];
  uint32_t len = (uint32_t) MIN(num(w, 1), RNICPI_MAX_PDATA);
  cert_pdata_fill(pd, len, CERT_PDATA_DISCONNECT);
  rnicpi_status_t st = CMV->disconnect(p->s.qp, pd, len);
  if (st == RNICPI_OK)
    say(p, "ok");
  else
    say(p, "err disconnect: %s", rnicpi_status_name(st));
}

static void
peer_free(peer_t *p)
{
  for (int i = 0; i < PEER_BUFS; i++) {
    if (p->mw[i] != NULL)
      cert_ok(MW->mw_dealloc(p->mw[i]));
    if (p->buf[i].mem != NULL)
      cert_buf_free(&p->buf[i]);
  }
  if (p->lst != NULL)
    cert_ok(CMV->unlisten(p->lst));
  if (p->ud != NULL) {
    cert_ok(QUE->qp_destroy(p->ud));
    cert_ok(QUE->cq_destroy(p->ud_scq));
    cert_ok(QUE->cq_destroy(p->ud_rcq));
  }
  if (p->s.qp != NULL)
    cert_side_free(&p->s);
  for (int i = 1; i < p->npd; i++)
    cert_ok(DEV->pd_free(p->pd[i]));
  cert_teardown(&p->f, NULL);
}

/* One command; FALSE when the peer is to stop. */
static gboolean
peer_do(peer_t *p, char **w)
{
  const char *c = w[0] != NULL ? w[0] : "";
  gboolean need_qp = strcmp(c, "side") != 0 && strcmp(c, "quit") != 0 && strcmp(c, "die") != 0;
  if (need_qp && p->s.qp == NULL) {
    say(p, "err '%s' before 'side'", c);
  } else if (strcmp(c, "side") == 0) {
    peer_side(p, w);
  } else if (strcmp(c, "listen") == 0) {
    say(p, "ok %u", cert_listen(&p->f, PEER_LISTEN_CTX, &p->lst));
  } else if (strcmp(c, "accept") == 0 || strcmp(c, "reject") == 0) {
    peer_answer(p, c[0] == 'a', (uint32_t) num(w, 1), w);
  } else if (strcmp(c, "request") == 0) {
    peer_request(p, w);
  } else if (strcmp(c, "connect") == 0) {
    peer_connect(p, w);
  } else if (strcmp(c, "disconnect") == 0) {
    peer_disconnect(p, w);
  } else if (strcmp(c, "pd") == 0 && p->npd == PEER_PDS) {
    say(p, "err 'pd': the peer holds %d domains already, its most", PEER_PDS);
  } else if (strcmp(c, "pd") == 0) {
    cert_ok(DEV->pd_alloc(p->f.dev, &p->pd[p->npd]));
    say(p, "ok %d", p->npd++);
  } else if (strcmp(c, "reg") == 0) {
    peer_reg(p, w);
  } else if (strcmp(c, "dereg") == 0) {
    peer_dereg(p, w);
  } else if (strcmp(c, "fill") == 0) {
    cert_buf_t *b = peer_buf(p, w, 1);
    if (b != NULL) {
      cert_buf_fill(b, (uint8_t) num(w, 2));
      say(p, "ok");
    }
  } else if (strcmp(c, "check") == 0) {
    peer_check(p, w);
  } else if (strcmp(c, "get64") == 0 || strcmp(c, "put64") == 0) {
    cert_buf_t *b = peer_buf(p, w, 1);
    uint64_t off = num(w, 2), v = num(w, 3);
    if (b != NULL && (off > b->len || b->len - off < 8)) {
      say(p, "err offset %" G_GUINT64_FORMAT " past buffer %s", off, w[1]);
    } else if (b != NULL && c[0] == 'g') {
      memcpy(&v, b->data + off, 8);
      say(p, "ok 0x%" G_GINT64_MODIFIER "x", v);
    } else if (b != NULL) {
      memcpy(b->data + off, &v, 8);
      say(p, "ok");
    }
  } else if (strcmp(c, "zero") == 0) {
    cert_buf_t *b = peer_buf(p, w, 1);
    if (b != NULL && num(w, 2) <= b->len && num(w, 3) <= b->len - num(w, 2)) {
      memset(b->data + num(w, 2), 0, num(w, 3));
      say(p, "ok");
    } else if (b != NULL) {
      say(p, "err bytes past buffer %s", w[1]);
    }
  } else if (strcmp(c, "recv") == 0 || strcmp(c, "recv2") == 0) {
    cert_buf_t *b = peer_buf(p, w, 1);
    if (b != NULL) {
      int two = c[4] == '2';
      rnicpi_sge_t sge[2] = { cert_sge(b, num(w, 2), (uint32_t) num(w, 3)),
                              cert_sge(b, num(w, 4), (uint32_t) num(w, 5)) };
      rnicpi_recv_wr_t wr = { .wr_id = num(w, two ? 6 : 4), .sg_list = sge,
                              .num_sge = two ? 2 : 1 };
      rnicpi_status_t st;
      if (g_strcmp0(w[5], "badkey") == 0 && !two)
        sge[0].lkey ^= 0xff0000ffu; /* as the in-process tests spoil a key */
      if (g_strcmp0(w[5], "ud") == 0 && !two)
        st = p->ud != NULL ? DAT->post_recv(p->ud, &wr) : RNICPI_ESTATE;
      else
        st = DAT->post_recv(p->s.qp, &wr);
      if (st == RNICPI_OK)
        say(p, "ok");
      else
        say(p, "err post_recv: %s", rnicpi_status_name(st));
    }
  } else if (strcmp(c, "post") == 0) {
    peer_post(p, w);
  } else if (strcmp(c, "ud") == 0) {
    peer_ud(p, w);
  } else if (strcmp(c, "bind") == 0) {
    peer_bind(p, w);
  } else if (strcmp(c, "wc") == 0) {
    peer_wc(p, w);
  } else if (strcmp(c, "async") == 0) {
    peer_async(p, w);
  } else if (strcmp(c, "cm") == 0) {
    peer_cm(p, w);
  } else if (strcmp(c, "state") == 0) {
    say(p, "ok %d", QUE->qp_state(p->s.qp));
  } else if (strcmp(c, "die") == 0) {
    _exit(3); /* as a process killed: nothing is closed in order */
  } else if (strcmp(c, "quit") == 0) {
    peer_free(p);
    say(p, "ok");
    return FALSE;
  } else {
    say(p, "err unknown command '%s'", c);
  }
  return TRUE;
}

int
cert_peer_serve(void)
{
  /* Static: the device stays open when the input ends (no clean-up is
   * owed then), and the provider's progress thread may still call its
   * upcalls into p.f (a connection breaking) while the process exits.
   * On this function's stack, p.f was gone by then: the upcall pushed an
   * event through whatever the exit left there, and vp/ib's peer on rxe0
   * and siw0 died in ld.so's exit path (a library's link map overwritten
   * by a GMutex's lock word). */
  static peer_t p;
  int fd = dup(STDOUT_FILENO);
  if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    g_printerr("cert-rnicpi --peer: cannot keep its answers apart from its messages: %s\n",
               g_strerror(errno));
    return 1;
  }
  /* A test gone away is seen as a write error (say()), not a signal. */
  signal(SIGPIPE, SIG_IGN);
  p.out = fdopen(fd, "w");
  cert_buf_peer_reached(TRUE);
  cert_setup(&p.f, NULL);
  say(&p, "ok %s", p.f.dev_name);
  char *line = NULL;
  size_t cap = 0;
  gboolean more = TRUE;
  while (more && getline(&line, &cap, stdin) >= 0) {
    g_strchomp(line);
    g_auto(GStrv) parts = g_strsplit(line, " ", 15);
    char *w[16] = { NULL }; /* every word a command may name exists, NULL or not */
    for (int i = 0; parts[i] != NULL; i++)
      w[i] = parts[i];
    more = peer_do(&p, w);
  }
  /* "quit" cleaned up; an input that ended first means the test is gone
   * (it failed, or was killed), and no clean-up is owed. */
  free(line);
  return 0;
}

/* ---- The test's end ---------------------------------------------------- */

/* The peer failed to take a command or to answer it: the test fails,
 * naming the peer, what went wrong (@what, before the command; @why after
 * it, or NULL), the command, and how the peer ended if it did. */
static void
peer_fail(cert_peer_t *pe, const char *what, const char *why)
{
  int pid = (int) pe->pid, status = 0;
  g_autofree char *how = NULL;
  /* A peer that closed its pipe is exiting, or has: wait a little for it. */
  for (int i = 0; i < 20 && pe->pid != 0; i++) {
    if (waitpid(pe->pid, &status, WNOHANG) == pe->pid) {
      if (WIFEXITED(status))
        how = g_strdup_printf(": it exited with status %d", WEXITSTATUS(status));
      else if (WIFSIGNALED(status))
        how = g_strdup_printf(": it was killed by signal %d (%s)", WTERMSIG(status),
                              g_strsignal(WTERMSIG(status)));
      g_spawn_close_pid(pe->pid);
      pe->pid = 0;
      break;
    }
    g_usleep(5000);
  }
  g_autofree char *msg = g_strdup_printf("the peer process %d %s '%s'%s%s%s%s; its messages are "
                                         "above", pid, what, pe->last, why != NULL ? " (" : "",
                                         why != NULL ? why : "", why != NULL ? ")" : "",
                                         how != NULL ? how : "");
  g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, msg);
}

/* One answer line, as long as it is (g_free it); NULL once @w is over,
 * or at the end of the input (*@eof set). */
static char *
read_line_until(cert_peer_t *pe, const cert_limit_t *w, gboolean *eof)
{
  *eof = FALSE;
  for (;;) {
    const char *nl = memchr(pe->in->str, '\n', pe->in->len);
    if (nl != NULL) {
      gsize n = (gsize) (nl - pe->in->str);
      char *line = g_strndup(pe->in->str, n);
      g_string_erase(pe->in, 0, (gssize) (n + 1));
      return line;
    }
    gint64 left = cert_limit_left(w) / 1000;
    if (left <= 0)
      return NULL;
    struct pollfd pf = { .fd = pe->from_fd, .events = POLLIN };
    int r = poll(&pf, 1, (int) left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return NULL;
    char buf[4096];
    ssize_t k = read(pe->from_fd, buf, sizeof(buf));
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      *eof = TRUE;
      return NULL;
    }
    g_string_append_len(pe->in, buf, k);
  }
}

/* One answer line within @ms, as read_line_until, the wait told. */
static char *
read_line(cert_peer_t *pe, int ms, gboolean *eof)
{
  cert_limit_t w;
  cert_limit_begin(&w, "a line from the peer process", (gint64) ms * 1000);
  char *line = read_line_until(pe, &w, eof);
  cert_limit_end(&w);
  return line;
}

void
cert_peer_send(cert_peer_t *pe, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *cmd = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_autofree char *line = g_strconcat(cmd, "\n", NULL);
  size_t n = strlen(line), done = 0;
  g_strlcpy(pe->last, cmd, sizeof(pe->last));
  while (done < n) {
    ssize_t k = write(pe->to_fd, line + done, n - done);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      /* EPIPE, not SIGPIPE (cert_peer_start): the peer is gone. */
      peer_fail(pe, "took no command", k < 0 ? g_strerror(errno) : "nothing written");
      return;
    }
    done += (size_t) k;
  }
}

char *
cert_peer_reply(cert_peer_t *pe)
{
  gboolean eof;
  g_autofree char *line = read_line(pe, PEER_REPLY_MS, &eof);
  if (line == NULL && eof) {
    peer_fail(pe, "ended its answers (it exited, or was killed) before answering", NULL);
    return g_strdup("");
  }
  if (line == NULL) {
    g_autofree char *what = g_strdup_printf("gave no answer within %d ms to", PEER_REPLY_MS);
    peer_fail(pe, what, NULL);
    return g_strdup("");
  }
  if (strncmp(line, "ok", 2) != 0) {
    g_test_message("the peer process failed '%s': %s", pe->last, line);
    g_assert_cmpstr(line, ==, "ok");
  }
  return g_strdup(line[2] == ' ' ? line + 3 : "");
}

static char *
peer_vcall(cert_peer_t *pe, const char *fmt, va_list ap)
{
  g_autofree char *cmd = g_strdup_vprintf(fmt, ap);
  cert_peer_send(pe, "%s", cmd);
  return cert_peer_reply(pe);
}

char *
cert_peer_call(cert_peer_t *pe, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *r = peer_vcall(pe, fmt, ap);
  va_end(ap);
  return r;
}

void
cert_peer_do(cert_peer_t *pe, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_free(peer_vcall(pe, fmt, ap));
  va_end(ap);
}

uint64_t
cert_peer_u64(cert_peer_t *pe, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *r = peer_vcall(pe, fmt, ap);
  va_end(ap);
  return g_ascii_strtoull(r, NULL, 0);
}

gboolean
cert_peer_open(cert_t *f, cert_peer_t *pe, uint32_t peer_access)
{
  return cert_peer_open_env(f, pe, peer_access, NULL);
}

gboolean
cert_peer_start(cert_t *f, cert_peer_t *pe, uint32_t peer_access, const char *const *env)
{
  cert_buf_peer_reached(TRUE);
  memset(pe, 0, sizeof(*pe));
  pe->to_fd = pe->from_fd = -1;
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return FALSE;
  /* A dead peer makes writes to it fail (cert_peer_send), not this
   * process die. */
  signal(SIGPIPE, SIG_IGN);
  pe->in = g_string_new(NULL);
  const char *argv[] = { "/proc/self/exe", "--peer", cert_prov_option, NULL };
  g_autoptr(GError) err = NULL;
  g_auto(GStrv) envp = g_get_environ();
  for (int i = 0; env != NULL && env[i] != NULL && env[i + 1] != NULL; i += 2)
    envp = g_environ_setenv(envp, env[i], env[i + 1], TRUE);
  /* The peer's waits are the test's: it gets the harness's socket. */
  int ch = cert_limit_channel();
  if (!g_spawn_async_with_pipes_and_fds(NULL, argv, (const char *const *) envp, G_SPAWN_DO_NOT_REAP_CHILD,
                                        NULL, NULL, -1, -1, -1, &ch, &ch, ch >= 0 ? 1 : 0, &pe->pid,
                                        &pe->to_fd, &pe->from_fd, NULL, &err))
    g_error("cannot start the peer process (%s --peer %s): %s", argv[0], cert_prov_option,
            err->message);
  g_strlcpy(pe->last, "(its start)", sizeof(pe->last));
  g_autofree char *dev = cert_peer_reply(pe);
  g_assert_cmpstr(dev, ==, f->dev_name);
  g_test_message("peer process %d on device %s", (int) pe->pid, dev);
  cert_side_new(f, &pe->a, 0xa0000, 256, NULL);
  cert_peer_do(pe, "side 0x%x", peer_access);
  return TRUE;
}

void
cert_peer_connect(cert_t *f, cert_peer_t *pe, const rnicpi_conn_param_t *cp, const char *answer)
{
  uint32_t port = (uint32_t) cert_peer_u64(pe, "listen");
  cert_peer_send(pe, "%s", answer);
  rnicpi_addr_t dst;
  cert_addr(f, port, &dst);
  cert_ok(CMV->connect(pe->a.qp, &dst, cp));
}

gboolean
cert_peer_open_env(cert_t *f, cert_peer_t *pe, uint32_t peer_access, const char *const *env)
{
  if (!cert_peer_start(f, pe, peer_access, env))
    return FALSE;
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird),
                             .ord = cert_min(4, f->caps.max_ord) };
  cert_peer_connect(f, pe, &cp, "accept");
  g_autofree rnicpi_cm_event_t *ea = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, pe->a.ctx);
  pe->a.ird = ea->ird;
  pe->a.ord = ea->ord;
  g_free(cert_peer_reply(pe));
  g_assert_cmpint(QUE->qp_state(pe->a.qp), ==, RNICPI_QPS_RTS);
  return TRUE;
}

void
cert_peer_close(cert_peer_t *pe)
{
  cert_buf_peer_reached(FALSE);
  if (pe->pid != 0) {
    cert_peer_do(pe, "quit");
    int status = 0;
    if (waitpid(pe->pid, &status, 0) == pe->pid)
      g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g_spawn_close_pid(pe->pid);
  }
  if (pe->to_fd >= 0)
    close(pe->to_fd);
  if (pe->from_fd >= 0)
    close(pe->from_fd);
  if (pe->in != NULL)
    g_string_free(pe->in, TRUE);
  cert_side_free(&pe->a);
  memset(pe, 0, sizeof(*pe));
}

cert_xreg_t
cert_peer_reg(cert_peer_t *pe, int slot, int pd, size_t len, uint32_t access, gboolean shared)
{
  cert_xreg_t r = { .slot = slot };
  g_autofree char *a = cert_peer_call(pe, "reg %d %d %zu 0x%x%s", slot, pd, len, access,
                                      shared ? " shared" : "");
  g_assert_cmpint(sscanf(a, "%" SCNx64 " %" SCNx64, &r.addr, &r.rkey), ==, 2);
  return r;
}

uint32_t
cert_peer_rights(cert_t *f)
{
  return RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE |
         ((f->caps.features & RNICPI_CAP_ATOMICS) ? RNICPI_ACCESS_ATOMIC : 0);
}

void
cert_peer_broken(cert_peer_t *pe, rnicpi_async_type_t type)
{
  g_autofree char *cm = cert_peer_call(pe, "cm %d %d", RNICPI_CM_BROKEN, CERT_TIMEOUT_MS);
  g_assert_true(g_str_has_prefix(cm, "seen"));
  if (type != 0) {
    g_autofree char *ev = cert_peer_call(pe, "async %d %d", type, CERT_TIMEOUT_MS);
    if (strcmp(ev, "none") == 0)
      g_test_message("the peer process got no asynchronous event %d", type);
    g_assert_cmpstr(ev, !=, "none");
  }
  cert_limit_t w;
  cert_limit_begin(&w, "the peer's QP to enter ERROR", CERT_TIMEOUT_MS * 1000);
  uint64_t st;
  while ((st = cert_peer_u64(pe, "state")) != RNICPI_QPS_ERROR && !cert_limit_over(&w))
    g_usleep(1000);
  cert_limit_end(&w);
  g_assert_cmpint(st, ==, RNICPI_QPS_ERROR);
}

void
cert_peer_reap(cert_peer_t *pe)
{
  int status = 0;
  waitpid(pe->pid, &status, 0);
  g_spawn_close_pid(pe->pid);
  pe->pid = 0;
}
