/*
 * iwarp-hostile: vp/iwarp against a peer that breaks the protocol.
 *
 * The peer is this test: a raw TCP socket speaking just enough MPA
 * (RFC 5044, RFC 6581) to reach full operation with the provider's QP (the
 * victim), then one bad frame.  The test reads the Terminate the victim
 * sends back and checks its layer, error type and code (RFC 5040 4.8,
 * RFC 5041 7.2, RFC 5044 8), then that the victim closed the stream, went
 * to ERROR with a BROKEN event and flushed every work request.
 * Malformed MPA Requests come before framing exists: the victim refuses
 * them (a Reject where one is defined, else it closes) and never reports
 * a connection request.  Other peers break no rule but lean on a bound: a
 * Read Response taken slowly while its region goes away, Read Requests
 * past the IRD, connections that never send their MPA Request, a process
 * with no file descriptor left.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnicpi.h"
#include "iw.h" /* iw_config, changed between tests */
#include "iw_test_port.h"

extern const rnicpi_provider_t rnicpi_builtin_iwarp;

static const rnicpi_provider_t *P;
static rnicpi_dev_t *dev;
static gboolean placed; /* Sends complete at placement (ITAPI_IWARP_COMPLETION=placed) */
static GAsyncQueue *cmq;

enum { REGION = 4096 };
static uint16_t listen_port; /* argv[1] when given, else a free one */
static rnicpi_listen_t *listener;    /* the victim device's, on listen_port */

static void up_cm(void *ctx, const rnicpi_cm_event_t *ev)
{
  (void) ctx;
  g_async_queue_push(cmq, g_memdup2(ev, sizeof(*ev)));
}
static void up_cq(void *ctx, uint64_t c) { (void) ctx; (void) c; }
static gint n_async; /* asynchronous errors reported */
static GAsyncQueue *asyncq; /* rnicpi_async_event_t *, emptied by victim_new */
static void
up_async(void *ctx, const rnicpi_async_event_t *ev)
{
  (void) ctx;
  g_async_queue_push(asyncq, g_memdup2(ev, sizeof(*ev)));
  g_atomic_int_inc(&n_async);
}

/* After the victim's BROKEN (it comes after the event): exactly one
 * asynchronous event, of @cause, naming the Terminate @layer/@etype/@code
 * it sent or received. */
static void
expect_async(rnicpi_async_cause_t cause, uint8_t layer, uint8_t etype, uint8_t code)
{
  g_autofree rnicpi_async_event_t *ev = g_async_queue_try_pop(asyncq);
  g_assert_nonnull(ev);
  g_test_message("async event %d cause %s Terminate %u/%u/0x%02x", ev->type,
                 rnicpi_async_cause_name(ev->cause), ev->term_layer, ev->term_etype, ev->term_code);
  g_assert_cmphex(ev->ctx, ==, 0xc0);
  g_assert_cmpint(ev->type, ==, rnicpi_async_type_of(cause));
  g_assert_cmpint(ev->cause, ==, cause);
  g_assert_cmpuint(ev->term_layer, ==, layer);
  g_assert_cmpuint(ev->term_etype, ==, etype);
  g_assert_cmphex(ev->term_code, ==, code);
  g_assert_null(g_async_queue_try_pop(asyncq));
}
static const rnicpi_upcalls_t ups = { up_cm, up_cq, up_async };

/* Wait for the next CM event of @type for @ctx (others of this test are
 * dropped). */
static void
wait_cm(rnicpi_cm_event_type_t type, uint64_t ctx)
{
  for (;;) {
    rnicpi_cm_event_t *ev = g_async_queue_timeout_pop(cmq, 10 * G_USEC_PER_SEC);
    g_assert_nonnull(ev);
    gboolean hit = ev->type == type && (ev->qp_ctx == ctx || ev->listen_ctx == ctx);
    g_free(ev);
    if (hit)
      return;
  }
}

/* The very next CM event, within 10 s (NULL-checked); g_free it. */
static rnicpi_cm_event_t *
next_cm(void)
{
  rnicpi_cm_event_t *ev = g_async_queue_timeout_pop(cmq, 10 * G_USEC_PER_SEC);
  g_assert_nonnull(ev);
  return ev;
}

/* ---- the raw peer ------------------------------------------------------ */

/* Read exactly @n bytes: @n, or less at EOF / reset / 5 s of silence. */
static size_t
peer_read(int fd, void *buf, size_t n)
{
  size_t got = 0;
  while (got < n) {
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, 5000) <= 0)
      break;
    ssize_t r = recv(fd, (uint8_t *) buf + got, n - got, 0);
    if (r <= 0)
      break;
    got += (size_t) r;
  }
  return got;
}

static void
peer_write(int fd, const void *buf, size_t n)
{
  g_assert_cmpint(send(fd, buf, n, MSG_NOSIGNAL), ==, (ssize_t) n);
}

static uint32_t crc_table[256];

static uint32_t
crc32c(const uint8_t *p, size_t n)
{
  uint32_t c = 0xffffffff;
  for (size_t i = 0; i < n; i++)
    c = (c >> 8) ^ crc_table[(c ^ p[i]) & 0xff];
  return c ^ 0xffffffff;
}

/* Frame @ulpdu as an FPDU (RFC 5044 4.1; CRC least significant byte
 * first); @bad flips a CRC bit. */
static size_t
fpdu_build(uint8_t *f, gboolean crc, const uint8_t *ulpdu, size_t len, gboolean bad)
{
  f[0] = (uint8_t) (len >> 8);
  f[1] = (uint8_t) len;
  memcpy(f + 2, ulpdu, len);
  size_t n = 2 + len;
  while (n % 4 != 0)
    f[n++] = 0;
  uint32_t c = crc ? crc32c(f, n) : 0;
  if (bad)
    c ^= 1;
  for (int i = 0; i < 4; i++)
    f[n++] = (uint8_t) (c >> (8 * i));
  return n;
}

static void
peer_fpdu(int fd, gboolean crc, const uint8_t *ulpdu, size_t len, gboolean bad)
{
  uint8_t f[4096];
  peer_write(fd, f, fpdu_build(f, crc, ulpdu, len, bad));
}

/* The ULPDU of the next FPDU, into @u (room for 65535); its length, or -1 at EOF. */
static int
peer_next_fpdu(int fd, uint8_t *u)
{
  uint8_t l[2];
  if (peer_read(fd, l, 2) != 2)
    return -1;
  size_t len = (size_t) l[0] << 8 | l[1];
  size_t pad = (4 - ((2 + len) & 3)) & 3;
  uint8_t trailer[8];
  if (peer_read(fd, u, len) != len || peer_read(fd, trailer, pad + 4) != pad + 4)
    return -1;
  return (int) len;
}

static size_t
untagged(uint8_t *h, uint8_t op, uint32_t qn, uint32_t msn, uint32_t mo, gboolean last)
{
  h[0] = (last ? 0x40 : 0) | 0x01;
  h[1] = 0x40 | op;
  uint32_t v[4] = { 0, htonl(qn), htonl(msn), htonl(mo) };
  memcpy(h + 2, v, sizeof(v));
  return 18;
}

static size_t
tagged(uint8_t *h, uint8_t op, uint32_t stag, uint64_t to)
{
  h[0] = 0x80 | 0x40 | 0x01;
  h[1] = 0x40 | op;
  uint32_t s = htonl(stag);
  uint64_t t = GUINT64_TO_BE(to);
  memcpy(h + 2, &s, 4);
  memcpy(h + 6, &t, 8);
  return 14;
}

/* ---- the victim ---------------------------------------------------------- */

typedef struct victim {
  rnicpi_pd_t *pd;
  rnicpi_cq_t *scq, *rcq;
  rnicpi_qp_t *qp;
  uint8_t *buf;        /* REGION registered, as much again unregistered after it */
  rnicpi_mr_t *mr;
  rnicpi_srq_t *srq;   /* the QP's receives come from it (victim_on_srq), or NULL */
  int peer;            /* the raw peer's socket */
  gboolean crc;
  gboolean own_pd;     /* the domain is its own (victim_new), not another victim's */
} victim_t;

/* A victim in domain @pd, or in a domain of its own when @pd is NULL. */
static void
victim_new_in(victim_t *v, size_t region, rnicpi_pd_t *pd)
{
  memset(v, 0, sizeof(*v));
  for (gpointer e; (e = g_async_queue_try_pop(asyncq)) != NULL;)
    g_free(e); /* an earlier victim's */
  v->own_pd = pd == NULL;
  if (v->own_pd)
    g_assert_cmpint(P->device->pd_alloc(dev, &v->pd), ==, RNICPI_OK);
  else
    v->pd = pd;
  g_assert_cmpint(P->queue->cq_create(dev, 64, 1, &v->scq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_create(dev, 64, 2, &v->rcq), ==, RNICPI_OK);
  rnicpi_qp_attr_t a = { .send_cq = v->scq, .recv_cq = v->rcq, .max_send_wr = 16,
                         .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1,
                         .max_rdma_write_sge = 1, .max_rdma_read_sge = 1, .ird = 1, .ord = 1,
                         .access = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE |
                                   RNICPI_ACCESS_ATOMIC };
  g_assert_cmpint(P->queue->qp_create(v->pd, &a, 0xc0, &v->qp), ==, RNICPI_OK);
  v->buf = g_malloc0(2 * region);
  rnicpi_mr_attr_t m = { .addr = v->buf, .length = region, .iova = 0,
                         .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                                   RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE };
  g_assert_cmpint(P->mem->mr_reg(v->pd, &m, &v->mr), ==, RNICPI_OK);
  v->peer = -1;
}

static void
victim_new(victim_t *v, size_t region)
{
  victim_new_in(v, region, NULL);
}

static void
victim_free(victim_t *v)
{
  if (v->peer >= 0)
    close(v->peer);
  if (v->srq != NULL) /* its QP still takes from it */
    g_assert_cmpint(P->srq->srq_destroy(v->srq), ==, RNICPI_EBUSY);
  if (v->qp != NULL) /* NULL: the test destroyed it */
    g_assert_cmpint(P->queue->qp_destroy(v->qp), ==, RNICPI_OK);
  if (v->srq != NULL) {
    /* The QP's end flushed none of the SRQ's receives. */
    rnicpi_wc_t wc;
    g_assert_cmpint(P->data->poll_cq(v->rcq, &wc, 1), ==, 0);
    g_assert_cmpint(P->srq->srq_destroy(v->srq), ==, RNICPI_OK);
  }
  g_assert_cmpint(P->mem->mr_dereg(v->mr), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(v->scq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(v->rcq), ==, RNICPI_OK);
  if (v->own_pd)
    g_assert_cmpint(P->device->pd_free(v->pd), ==, RNICPI_OK);
  g_free(v->buf);
}

/* The raw peer's SO_RCVBUF when not 0: a large window, so that the
 * victim's MSS over loopback is not bounded to half a small one. */
static int peer_rcvbuf;
/* The raw peer's MPA Reply offers the RFC 7306 extensions (IW_MPA_FLAG_RFC7306),
 * which a victim on a device opened with ITAPI_IWARP_RFC7306=1 offered. */
static gboolean peer_rfc7306;
/* The IRD and ORD the victim asks for when it connects. */
static uint32_t victim_ird = 1, victim_ord = 1;

/* What the raw peer's MPA Reply says of peer-to-peer mode (RFC 6581 9). */
typedef enum {
  REPLY_NO_P2P,    /* no A flag: no RTR */
  REPLY_RTR_WRITE, /* A and C: the zero-length Write RTR */
  REPLY_RTR_SEND,  /* A and B: the zero-length Send RTR, which we never offer */
} reply_p2p_t;

/* The victim connects to the raw peer, which answers as an RFC 6581
 * responder (with CRC when @crc) with IRD 4 and ORD @ord, in the
 * peer-to-peer mode @p2p.  With REPLY_RTR_WRITE the peer reads the RTR and
 * the victim is ESTABLISHED; otherwise it is up to the caller what comes
 * next. */
static void
victim_dial(victim_t *v, gboolean crc, reply_p2p_t p2p, uint8_t ord)
{
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t sl = sizeof(sin);
  if (peer_rcvbuf > 0)
    setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &peer_rcvbuf, sizeof(peer_rcvbuf));
  g_assert_cmpint(bind(lfd, (struct sockaddr *) &sin, sizeof(sin)), ==, 0);
  g_assert_cmpint(listen(lfd, 1), ==, 0);
  g_assert_cmpint(getsockname(lfd, (struct sockaddr *) &sin, &sl), ==, 0);
  rnicpi_addr_t dst = { 0 };
  memcpy(&dst.sa, &sin, sizeof(sin));
  rnicpi_conn_param_t cp = { .ird = victim_ird, .ord = victim_ord };
  g_assert_cmpint(P->cm->connect(v->qp, &dst, &cp), ==, RNICPI_OK);
  v->peer = accept(lfd, NULL, NULL);
  g_assert_cmpint(v->peer, >=, 0);
  close(lfd);

  uint8_t req[20 + 512];
  g_assert_cmpuint(peer_read(v->peer, req, 20), ==, 20);
  g_assert_cmpmem(req, 16, "MPA ID Req Frame", 16);
  g_assert_cmpuint(req[17], ==, 2);
  size_t pd = (size_t) req[18] << 8 | req[19];
  g_assert_cmpuint(peer_read(v->peer, req + 20, pd), ==, pd);
  v->crc = crc || (req[16] & 0x40) != 0;
  /* Reply: Rev 2, 0x10 (enhanced), then |A|B| IRD 4 |C|D| ORD. */
  uint8_t rep[24] = "MPA ID Rep Frame";
  rep[16] = 0x10 | (v->crc ? 0x40 : 0) | (peer_rfc7306 ? 0x04 : 0);
  rep[17] = 2;
  rep[18] = 0;
  rep[19] = 4;
  rep[20] = p2p == REPLY_NO_P2P ? 0 : p2p == REPLY_RTR_SEND ? 0xc0 : 0x80;
  rep[21] = 4;
  rep[22] = p2p == REPLY_RTR_WRITE ? 0x80 : 0;
  rep[23] = ord;
  peer_write(v->peer, rep, sizeof(rep));
  if (p2p != REPLY_RTR_WRITE)
    return;
  uint8_t u[65536];
  g_assert_cmpint(peer_next_fpdu(v->peer, u), ==, 14);
  g_assert_cmphex(u[1] & 0x0f, ==, 0x0); /* zero-length RDMA Write */
  wait_cm(RNICPI_CM_ESTABLISHED, 0xc0);
}

static void
victim_connect(victim_t *v, gboolean crc)
{
  victim_dial(v, crc, REPLY_RTR_WRITE, 1); /* ORD 1: the victim's IRD */
}

static void
recv_post(victim_t *v, size_t off, uint32_t len, uint64_t id)
{
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) (v->buf + off), .length = len,
                       .lkey = v->mr->lkey };
  rnicpi_recv_wr_t wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
  g_assert_cmpint(P->data->post_recv(v->qp, &wr), ==, RNICPI_OK);
}

static void
send_post(victim_t *v, uint64_t id)
{
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) v->buf, .length = 8, .lkey = v->mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1 };
  g_assert_cmpint(P->data->post_send(v->qp, &wr), ==, RNICPI_OK);
}

static rnicpi_wc_t
wc_of(rnicpi_cq_t *cq)
{
  rnicpi_wc_t wc;
  for (int i = 0; i < 10000; i++) {
    if (P->data->poll_cq(cq, &wc, 1) == 1)
      return wc;
    g_usleep(1000);
  }
  g_error("no completion within 10 s");
}

/* The next completion of @cq, which must be @wr_id's with @status. */
static rnicpi_wc_t
wc_expect(rnicpi_cq_t *cq, uint64_t wr_id, rnicpi_wc_status_t status)
{
  rnicpi_wc_t wc = wc_of(cq);
  g_assert_cmphex(wc.wr_id, ==, wr_id);
  g_assert_cmpint(wc.status, ==, status);
  return wc;
}

/* Work the victim has when the bad frame comes: two receives and a Send
 * (which, when completions wait for placement, waits for its delivery
 * fence, never answered; otherwise it completed at transmission). */
static void
victim_load(victim_t *v)
{
  recv_post(v, 0, 64, 0x11);
  recv_post(v, 64, 64, 0x12);
  send_post(v, 0x21);
}

/* The peer reads up to the victim's Terminate (into @u) and checks its
 * queue; returns its length. */
static int
peer_next_terminate(victim_t *v, uint8_t *u)
{
  int len;
  for (;;) {
    len = peer_next_fpdu(v->peer, u);
    g_assert_cmpint(len, >=, 18);
    if ((u[0] & 0x80) == 0 && (u[1] & 0x0f) == 0x7)
      break;
  }
  g_assert_cmpint(len, >=, 18 + 4);
  uint32_t qn;
  memcpy(&qn, u + 6, 4);
  g_assert_cmpuint(ntohl(qn), ==, 2); /* Terminate queue */
  return len;
}

/* The victim's receives complete in order: @ids with @st. */
static void
expect_recvs(victim_t *v, const uint64_t *ids, const rnicpi_wc_status_t *st, int n)
{
  for (int i = 0; i < n; i++) {
    rnicpi_wc_t wc = wc_of(v->rcq);
    g_assert_cmphex(wc.wr_id, ==, ids[i]);
    g_assert_cmpint(wc.status, ==, st[i]);
  }
}

/* @u holds the victim's Terminate, just read by the peer: its fields are
 * checked, then the FIN; the victim must be BROKEN in ERROR with
 * everything flushed, its consumer told @cause.  expect_terminate() reads
 * up to the Terminate first. */
static void
expect_terminate_in(victim_t *v, const uint8_t *u, rnicpi_async_cause_t cause, uint8_t layer,
                    uint8_t etype, uint8_t code, const uint64_t *recv_ids,
                    const rnicpi_wc_status_t *recv_st, int nrecv)
{
  g_test_message("Terminate: layer %u etype %u code 0x%02x", u[18] >> 4, u[18] & 0xf, u[19]);
  g_assert_cmpuint(u[18] >> 4, ==, layer);
  g_assert_cmpuint(u[18] & 0x0f, ==, etype);
  g_assert_cmphex(u[19], ==, code);
  if (layer == 2) /* RFC 5040 Figure 10: an LLP error carries no header (M, D, R clear) */
    g_assert_cmphex(u[20] & 0xe0, ==, 0);
  /* Then the victim's FIN: nothing after the Terminate (RFC 5040 5.3). */
  uint8_t b;
  g_assert_cmpuint(peer_read(v->peer, &b, 1), ==, 0);

  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  expect_async(cause, layer, etype, code);
  g_assert_cmpint(P->queue->qp_state(v->qp), ==, RNICPI_QPS_ERROR);
  expect_recvs(v, recv_ids, recv_st, nrecv);
  rnicpi_wc_t wc = wc_of(v->scq);
  g_assert_cmphex(wc.wr_id, ==, 0x21);
  g_assert_cmpint(wc.status, ==, placed ? RNICPI_WC_WR_FLUSH_ERR : RNICPI_WC_SUCCESS);
  g_assert_cmpint(P->data->poll_cq(v->rcq, &wc, 1), ==, 0);
  g_assert_cmpint(P->data->poll_cq(v->scq, &wc, 1), ==, 0);
}

static void
expect_terminate(victim_t *v, rnicpi_async_cause_t cause, uint8_t layer, uint8_t etype,
                 uint8_t code, const uint64_t *recv_ids, const rnicpi_wc_status_t *recv_st,
                 int nrecv)
{
  static uint8_t u[65536];
  peer_next_terminate(v, u);
  expect_terminate_in(v, u, cause, layer, etype, code, recv_ids, recv_st, nrecv);
}

/* A connected victim (@crc: CRC32c on) with its work loaded (victim_load). */
static void
victim_ready(victim_t *v, gboolean crc)
{
  victim_new(v, REGION);
  victim_connect(v, crc);
  victim_load(v);
}

static const uint64_t two_ids[] = { 0x11, 0x12 };
static const rnicpi_wc_status_t two_flushed[] = { RNICPI_WC_WR_FLUSH_ERR, RNICPI_WC_WR_FLUSH_ERR };

/* Builds the one bad ULPDU for victim @v into @u (64 bytes); its length. */
typedef size_t (*bad_frame_fn)(const victim_t *v, uint8_t *u);

/* A connected, loaded victim gets the ULPDU @build makes and must answer
 * with the Terminate @layer/@etype/@code, both its receives flushed, its
 * consumer told @cause. */
static void
bad_frame_terminates(bad_frame_fn build, rnicpi_async_cause_t cause, uint8_t layer,
                     uint8_t etype, uint8_t code)
{
  victim_t v;
  victim_ready(&v, FALSE);
  uint8_t u[64];
  size_t n = build(&v, u);
  peer_fpdu(v.peer, v.crc, u, n, FALSE);
  expect_terminate(&v, cause, layer, etype, code, two_ids, two_flushed, 2);
  victim_free(&v);
}

static size_t
frame_cut_send(const victim_t *v, uint8_t *u)
{
  (void) v;
  untagged(u, 0x3, 0, 1, 0, TRUE);
  return 10; /* a Send cut to 10 bytes */
}

/* ITAPI_IWARP_FIRST_FPDU_DELAY_MS (the stock siw accept race): the
 * initiator's RTR waits out the hold, and a peer that speaks first (a reply
 * that chooses no RTR, then a Send: RFC 5044 7.1.2 leaves the first FPDU to
 * the initiator, but we tolerate it) ends the hold at once. */
static void
test_first_fpdu_hold(void)
{
  g_test_summary("ITAPI_IWARP_FIRST_FPDU_DELAY_MS: the initiator holds its RTR for the delay; "
                 "a peer that sends first ends the hold at once");
  uint64_t saved = iw_config.first_fpdu_delay_us;
  victim_t v;
  iw_config.first_fpdu_delay_us = 300000;
  victim_new(&v, 4096);
  gint64 t0 = g_get_monotonic_time();
  victim_connect(&v, FALSE);
  gint64 took = g_get_monotonic_time() - t0;
  g_test_message("RTR %" G_GINT64_FORMAT " ms after the connect", took / 1000);
  g_assert_cmpint(took, >=, 290000);
  victim_free(&v);

  iw_config.first_fpdu_delay_us = 10000000;
  victim_new(&v, 4096);
  recv_post(&v, 0, 64, 0x11);
  t0 = g_get_monotonic_time();
  victim_dial(&v, FALSE, REPLY_NO_P2P, 1);
  uint8_t u[32];
  size_t n = untagged(u, 0x3, 0, 1, 0, TRUE);
  memcpy(u + n, "peer-1st", 8);
  peer_fpdu(v.peer, v.crc, u, n + 8, FALSE);
  wait_cm(RNICPI_CM_ESTABLISHED, 0xc0);
  rnicpi_wc_t wc = wc_of(v.rcq);
  took = g_get_monotonic_time() - t0;
  g_test_message("the peer's Send landed %" G_GINT64_FORMAT " ms after the connect", took / 1000);
  g_assert_cmphex(wc.wr_id, ==, 0x11);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, 8);
  g_assert_cmpmem(v.buf, 8, "peer-1st", 8);
  g_assert_cmpint(took, <, 5000000);
  victim_free(&v);
  iw_config.first_fpdu_delay_us = saved;
}

/* The initiator refuses the raw peer's Reply (RFC 6581 9.1): Terminate
 * LLP/MPA/@code with no header, then its FIN.  The consumer never saw the
 * connection established, so its one event is UNREACHABLE with reason
 * @why and IRD @ird, ORD @eord (not BROKEN, and no asynchronous error);
 * the posted receive is flushed. */
static void
reply_refused(reply_p2p_t p2p, uint8_t ord, uint8_t code, rnicpi_cm_reason_t why, uint32_t ird,
              uint32_t eord)
{
  victim_t v;
  rnicpi_cm_event_t *ev;
  /* The last events of earlier tests' victims (all have context 0xc0). */
  while ((ev = g_async_queue_timeout_pop(cmq, 200000)) != NULL)
    g_free(ev);
  victim_new(&v, 4096);
  recv_post(&v, 0, 64, 0x11);
  int asyncs = g_atomic_int_get(&n_async);
  victim_dial(&v, FALSE, p2p, ord);
  static uint8_t u[65536];
  g_assert_cmpint(peer_next_fpdu(v.peer, u), >=, 18 + 4); /* the first FPDU: not an RTR */
  g_assert_cmphex(u[1] & 0x0f, ==, 0x7);                    /* a Terminate */
  uint32_t qn;
  memcpy(&qn, u + 6, 4);
  g_assert_cmpuint(ntohl(qn), ==, 2);
  g_assert_cmphex(u[18], ==, 0x20); /* layer 2 (LLP), error type 0 (MPA) */
  g_assert_cmphex(u[19], ==, code);
  g_assert_cmphex(u[20] & 0xe0, ==, 0);
  uint8_t b;
  g_assert_cmpuint(peer_read(v.peer, &b, 1), ==, 0);
  ev = next_cm();
  g_assert_cmpint(ev->type, ==, RNICPI_CM_UNREACHABLE);
  g_assert_cmphex(ev->qp_ctx, ==, 0xc0);
  g_assert_cmpint(ev->reason, ==, why);
  g_assert_cmpuint(ev->ird, ==, ird);
  g_assert_cmpuint(ev->ord, ==, eord);
  g_free(ev);
  g_assert_cmpint(P->queue->qp_state(v.qp), ==, RNICPI_QPS_ERROR);
  wc_expect(v.rcq, 0x11, RNICPI_WC_WR_FLUSH_ERR);
  /* The peer closes too: nothing more is reported. */
  close(v.peer);
  v.peer = -1;
  g_assert_null(g_async_queue_timeout_pop(cmq, 300000));
  g_assert_cmpint(g_atomic_int_get(&n_async), ==, asyncs);
  victim_free(&v);
}

/* The Reply's ORD 4 exceeds the IRD 1 the Request offered: 0x06.  The
 * consumer hears the Reply's own IRD and ORD (RFC 6581 9.1: to try again
 * with an IRD that will do). */
static void
test_mpa_insufficient_ird(void)
{
  g_test_summary("A Reply whose ORD exceeds the IRD the Request offered: Terminate LLP/MPA/0x06, "
                 "UNREACHABLE with BAD_ORD");
  reply_refused(REPLY_NO_P2P, 4, 0x06, RNICPI_CM_REASON_BAD_ORD, 4, 4);
}

/* The Reply picks the Send RTR, which the Request did not offer: 0x07
 * (the depths are the negotiated ones, 1 and 1). */
static void
test_mpa_unoffered_rtr(void)
{
  g_test_summary("A Reply choosing the Send RTR, which the Request did not offer: Terminate "
                 "LLP/MPA/0x07, UNREACHABLE with BAD_PARAMS");
  reply_refused(REPLY_RTR_SEND, 1, 0x07, RNICPI_CM_REASON_BAD_PARAMS, 1, 1);
}

/* A Send into a posted receive whose buffer lies outside its region: the
 * receive completes with a local protection error, nothing is written, and
 * the peer gets DDP local catastrophic (1/0/0) with the Send's header. */
static void
test_recv_outside_region(void)
{
  g_test_summary("A Send into a receive buffer outside its region: LOC_PROT_ERR, nothing written, "
                 "Terminate DDP local catastrophic (1/0/0)");
  victim_t v;
  victim_new(&v, 4096);
  memset(v.buf + 4096, 0x5a, 64);
  recv_post(&v, 4096, 64, 0x11); /* the unregistered half after the region */
  recv_post(&v, 0, 64, 0x12);
  victim_connect(&v, FALSE);
  uint8_t u[64];
  size_t n = untagged(u, 0x3, 0, 1, 0, TRUE);
  memcpy(u + n, "outside!", 8);
  peer_fpdu(v.peer, v.crc, u, n + 8, FALSE);
  static uint8_t t[65536];
  g_assert_cmpint(peer_next_terminate(&v, t), >=, 18 + 4 + 2 + 18);
  g_assert_cmphex(t[18], ==, 0x10); /* layer 1 (DDP), error type 0 (local catastrophic) */
  g_assert_cmphex(t[19], ==, 0x00);
  g_assert_cmphex(t[20] & 0xe0, ==, 0xc0); /* M and D: the Send's DDP header follows */
  g_assert_cmpmem(t + 24, 18, u, 18);
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  wc_expect(v.rcq, 0x11, RNICPI_WC_LOC_PROT_ERR);
  wc_expect(v.rcq, 0x12, RNICPI_WC_WR_FLUSH_ERR);
  for (int i = 0; i < 64; i++)
    g_assert_cmphex(v.buf[4096 + i], ==, 0x5a);
  victim_free(&v);
}

/* Wait (5 s at most) until @n bytes at @p read as @want: placement by the
 * victim's progress thread, seen from outside.  The bytes are copied out
 * under @qp's lock, which the receive path holds while it places (a
 * memcpy() or a recvmsg() straight into the region, neither atomic): read
 * bare, they would race with the placement (ThreadSanitizer says so), and
 * no completion marks half a message landed. */
static void
wait_landed(iw_qp_t *qp, const uint8_t *p, const uint8_t *want, size_t n)
{
  g_autofree uint8_t *seen = g_malloc(n);
  for (int i = 0; i < 5000; i++) {
    g_mutex_lock(&qp->lock);
    memcpy(seen, p, n);
    g_mutex_unlock(&qp->lock);
    if (memcmp(seen, want, n) == 0)
      break;
    g_usleep(1000);
  }
  g_assert_cmpmem(seen, n, want, n);
}

enum { GONE_LEN = 2000, GONE_HALF = 1000 };

/* Where the message whose target goes away lands. */
typedef enum {
  GONE_SEND,  /* a Send, into a posted receive */
  GONE_READ,  /* the Response to the victim's own RDMA Read, into its sink */
  GONE_WRITE, /* the peer's RDMA Write, into the victim's region */
} gone_kind_t;

/* The victim's own region, where a receive, a Read's sink or the peer's
 * Write lands, is deregistered while a message is on its way into it.
 * With @mid the peer's one FPDU comes in two writes and the region goes
 * between them, once the first half has landed (the check in the middle
 * of a payload); without, the region is gone before the FPDU (the check
 * of the header).  With @reuse the consumer registers the same buffer
 * again at once, as a new region (new STag): its memory, and most likely
 * the freed region's own record, are in use again, and the old STag must
 * still not reach them.  For a Send the receive completes LOC_PROT_ERR and
 * the Terminate is DDP local catastrophic (1/0/0); for a Read Response,
 * the Read completes LOC_PROT_ERR and the Terminate is DDP tagged, invalid
 * STag (1/1/0), as siw sends; for a Write, the same Terminate, the peer's
 * fault.  Either way nothing more is written into the buffer, and the
 * consumer hears BROKEN. */
static void
region_gone(gone_kind_t kind, gboolean mid, gboolean reuse)
{
  victim_t v;
  victim_new(&v, 4096);
  uint8_t *buf2 = g_malloc0(GONE_LEN);
  rnicpi_mr_t *mr2, *mr3 = NULL;
  rnicpi_mr_attr_t ma = { .addr = buf2, .length = GONE_LEN, .iova = 0x10000,
                          .access = RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE };
  g_assert_cmpint(P->mem->mr_reg(v.pd, &ma, &mr2), ==, RNICPI_OK);
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) buf2, .length = GONE_LEN, .lkey = mr2->lkey };
  if (kind == GONE_SEND) {
    rnicpi_recv_wr_t rw = { .wr_id = 0x11, .sg_list = &sge, .num_sge = 1 };
    g_assert_cmpint(P->data->post_recv(v.qp, &rw), ==, RNICPI_OK);
  }
  victim_connect(&v, FALSE);
  static uint8_t u[65536];
  size_t n;
  if (kind == GONE_READ) {
    rnicpi_send_wr_t wr = { .wr_id = 0x31, .opcode = RNICPI_WR_RDMA_READ,
                            .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                            .remote_addr = 0x5000, .rkey = 0x4242 };
    g_assert_cmpint(P->data->post_send(v.qp, &wr), ==, RNICPI_OK);
    int len;
    do {
      len = peer_next_fpdu(v.peer, u);
      g_assert_cmpint(len, >=, 18);
    } while ((u[0] & 0x80) != 0 || (u[1] & 0x0f) != 0x1); /* its Read Request */
    g_assert_cmpint(len, ==, 18 + 28);
    uint32_t sink;
    uint64_t sink_to;
    memcpy(&sink, u + 18, 4);
    memcpy(&sink_to, u + 22, 8);
    g_assert_cmphex(ntohl(sink), ==, (uint32_t) mr2->rkey);
    g_assert_cmphex(GUINT64_FROM_BE(sink_to), ==, 0x10000);
    n = tagged(u, 0x2, ntohl(sink), GUINT64_FROM_BE(sink_to));
  } else if (kind == GONE_WRITE) {
    n = tagged(u, 0x0, (uint32_t) mr2->rkey, 0x10000);
  } else {
    n = untagged(u, 0x3, 0, 1, 0, TRUE);
  }
  uint8_t hdr[18];
  memcpy(hdr, u, n);
  for (size_t i = 0; i < GONE_LEN; i++)
    u[n + i] = (uint8_t) (i * 7 + 1);
  static uint8_t f[GONE_LEN + 64];
  size_t flen = fpdu_build(f, v.crc, u, n + GONE_LEN, FALSE);
  size_t cut = 2 + n + GONE_HALF;
  if (mid) {
    peer_write(v.peer, f, cut);
    wait_landed(to_iw_qp(v.qp), buf2, u + n, GONE_HALF);
  }
  uint32_t old_stag = (uint32_t) mr2->rkey;
  g_assert_cmpint(P->mem->mr_dereg(mr2), ==, RNICPI_OK);
  if (reuse) {
    /* The same buffer, registered again: a new STag, the old one dead. */
    g_assert_cmpint(P->mem->mr_reg(v.pd, &ma, &mr3), ==, RNICPI_OK);
    g_assert_cmphex((uint32_t) mr3->rkey, !=, old_stag);
  }
  peer_write(v.peer, mid ? f + cut : f, mid ? flen - cut : flen);

  static uint8_t t[65536];
  g_assert_cmpint(peer_next_terminate(&v, t), >=, 18 + 4 + 2 + (int) n);
  g_test_message("Terminate: layer %u etype %u code 0x%02x", t[18] >> 4, t[18] & 0xf, t[19]);
  /* DDP: tagged, or local catastrophic */
  g_assert_cmphex(t[18], ==, kind == GONE_SEND ? 0x10 : 0x11);
  g_assert_cmphex(t[19], ==, 0x00);
  g_assert_cmphex(t[20] & 0xe0, ==, 0xc0); /* M and D: the segment's DDP header follows, no R */
  g_assert_cmpmem(t + 24, n, hdr, n);
  uint8_t b;
  g_assert_cmpuint(peer_read(v.peer, &b, 1), ==, 0); /* then the FIN */
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  if (kind == GONE_WRITE) {
    /* The peer wrote to an STag that is no more: its fault. */
    expect_async(RNICPI_AE_WRITE_ACCESS, 1, 1, 0x00);
  } else {
    /* Our own memory failed: the Read's sink, or the receive's buffer. */
    expect_async(kind == GONE_READ ? RNICPI_AE_LOCAL : RNICPI_AE_LOCAL_RECV, 1,
                 kind == GONE_READ ? 1 : 0, 0x00);
    wc_expect(kind == GONE_READ ? v.scq : v.rcq, kind == GONE_READ ? 0x31 : 0x11,
              RNICPI_WC_LOC_PROT_ERR);
  }
  /* Nothing after the deregistration: the first half or nothing at all. */
  static const uint8_t zero[GONE_LEN];
  g_assert_cmpmem(buf2 + GONE_HALF, GONE_LEN - GONE_HALF, zero, GONE_LEN - GONE_HALF);
  if (!mid)
    g_assert_cmpmem(buf2, GONE_HALF, zero, GONE_HALF);
  if (mr3 != NULL)
    g_assert_cmpint(P->mem->mr_dereg(mr3), ==, RNICPI_OK);
  victim_free(&v);
  g_free(buf2);
}

/* Post an RDMA Write of @len bytes of v->buf and take its FPDUs at the
 * peer: every ULPDU within the RFC 5044 3 limit, the TOs following on, L
 * on the last only, the bytes the message; then its completion.  Returns
 * the largest ULPDU; @first gets the first one's length. */
static uint32_t
write_fpdus(victim_t *v, uint32_t len, uint32_t *first)
{
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) v->buf, .length = len, .lkey = v->mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = 0x41, .opcode = RNICPI_WR_RDMA_WRITE,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = 0x7000, .rkey = 0x5151 };
  g_assert_cmpint(P->data->post_send(v->qp, &wr), ==, RNICPI_OK);
  static uint8_t u[65536];
  uint32_t got = 0, nfpdu = 0, largest = 0;
  while (got < len) {
    int n = peer_next_fpdu(v->peer, u);
    g_assert_cmpint(n, >=, 14);
    if ((u[0] & 0x80) == 0 || (u[1] & 0x0f) != 0x0)
      continue; /* not the Write */
    g_assert_cmpint(n, <=, 64768);
    uint32_t stag;
    uint64_t to;
    memcpy(&stag, u + 2, 4);
    memcpy(&to, u + 6, 8);
    g_assert_cmphex(ntohl(stag), ==, 0x5151);
    g_assert_cmpuint(GUINT64_FROM_BE(to), ==, 0x7000 + got);
    uint32_t pay = (uint32_t) n - 14;
    g_assert_cmpuint(got + pay, <=, len);
    g_assert_cmpmem(u + 14, pay, v->buf + got, pay);
    g_assert_cmpint((u[0] & 0x40) != 0, ==, got + pay == len); /* L on the last segment only */
    if (nfpdu++ == 0)
      *first = (uint32_t) n;
    got += pay;
    largest = MAX(largest, (uint32_t) n);
  }
  g_test_message("a %u-byte Write: %u FPDUs, the first ULPDU %u bytes, the largest %u", len,
                 nfpdu, *first, largest);
  if (placed) {
    /* The Write completes once placed: answer its delivery fence. */
    int n;
    do {
      n = peer_next_fpdu(v->peer, u);
      g_assert_cmpint(n, >=, 14);
    } while ((u[0] & 0x80) != 0 || (u[1] & 0x0f) != 0x1);
    uint32_t sink;
    memcpy(&sink, u + 18, 4);
    size_t k = tagged(u, 0x2, ntohl(sink), 0);
    peer_fpdu(v->peer, v->crc, u, k, FALSE);
  }
  wc_expect(v->scq, 0x41, RNICPI_WC_SUCCESS);
  return largest;
}

/* The victim's TCP_MAXSEG.  Its socket is read under the QP's lock: the
 * progress thread closes it and sets qp->fd to -1 under that lock when the
 * stream ends. */
static int
victim_mss(victim_t *v)
{
  iw_qp_t *qp = to_iw_qp(v->qp);
  int mss = 0, fd, r = -1;
  socklen_t sl = sizeof(mss);
  g_mutex_lock(&qp->lock);
  fd = qp->fd;
  if (fd >= 0)
    r = getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &sl);
  g_mutex_unlock(&qp->lock);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(r, ==, 0);
  return mss;
}

/* RFC 5044 3: over loopback (MSS about 64 KiB) every FPDU of a large RDMA
 * Write still holds a ULPDU of at most 64768 bytes, and the segments carry
 * the message in order, each at the TO where it belongs. */
static void
test_fpdu_max(void)
{
  g_test_summary("A 300,000-byte RDMA Write over loopback: every FPDU's ULPDU is at most "
                 "64768 bytes (RFC 5044 3), the TOs follow on, the bytes are the message");
  enum { BIG = 300000 };
  uint32_t saved = iw_config.fpdu_max;
  iw_config.fpdu_max = IW_FPDU_MAX; /* whatever ITAPI_IWARP_FPDU_MAX says */
  victim_t v;
  victim_new(&v, BIG);
  for (size_t i = 0; i < BIG; i++)
    v.buf[i] = (uint8_t) (i % 251);
  peer_rcvbuf = 4 << 20;
  victim_connect(&v, TRUE);
  peer_rcvbuf = 0;
  int mss = victim_mss(&v);
  g_test_message("the loopback MSS is %d", mss);
  if (mss <= IW_FPDU_MAX) {
    /* The path alone keeps FPDUs under the limit: nothing to check. */
    g_test_skip("the loopback MSS here is not above the RFC 5044 FPDU limit");
  } else {
    uint32_t first;
    /* At the limit, less the alignment of the payload to 4 bytes. */
    g_assert_cmpuint(write_fpdus(&v, BIG, &first), >, 64768 - 8);
  }
  victim_free(&v);
  iw_config.fpdu_max = saved;
}

/* Linux starts a connection's segment size at half the peer's window
 * while that window is small (about 32 KiB over loopback), and raises it
 * as the window grows: the FPDUs of large Writes grow with it, each still
 * within the segment size read when it was framed. */
static void
test_fpdu_grows(void)
{
  g_test_summary("Over loopback, the FPDUs of a stream of 1 MiB RDMA Writes start within the "
                 "connection's first TCP_MAXSEG and grow to the larger one Linux reports once "
                 "the peer's window has grown (RFC 5044 4.5: the MULPDU follows the EMSS)");
  enum { MIB = 1 << 20, WRITES = 8 };
  uint32_t saved = iw_config.fpdu_max;
  iw_config.fpdu_max = IW_FPDU_MAX;
  victim_t v;
  victim_new(&v, MIB);
  for (size_t i = 0; i < MIB; i++)
    v.buf[i] = (uint8_t) (i % 253);
  victim_connect(&v, TRUE);
  int mss0 = victim_mss(&v), mss1 = mss0;
  uint32_t first, largest = 0, first0 = 0;
  for (int i = 0; i < WRITES; i++) {
    /* The segment size two Writes before the end: the sender reads it
     * again at least once within those two (every MiB of FPDUs). */
    if (i == WRITES - 2)
      mss1 = victim_mss(&v);
    largest = MAX(largest, write_fpdus(&v, MIB, &first));
    if (i == 0)
      first0 = first;
    /* Within the MULPDU of a segment size seen on this connection. */
    g_assert_cmpuint(largest + 6, <=, (uint32_t) MAX(mss0, victim_mss(&v)));
  }
  g_test_message("TCP_MAXSEG %d at the start, %d after %d MiB", mss0, mss1, WRITES - 2);
  g_assert_cmpuint(first0 + 6, <=, (uint32_t) mss0);
  if (mss1 - mss1 % 4 <= mss0 - mss0 % 4 || mss0 >= IW_FPDU_MAX)
    g_test_skip("the segment size did not grow here: nothing to follow");
  else
    g_assert_cmpuint(largest + 6, >, (uint32_t) MIN(mss0, IW_FPDU_MAX));
  victim_free(&v);
  iw_config.fpdu_max = saved;
}

/* Spin on @cq for up to @ms milliseconds until @done(qp) holds (read under
 * the QP's lock); every poll renews the poller's lease on the QP. */
static gboolean
spin_until(rnicpi_cq_t *cq, iw_qp_t *qp, gboolean (*done)(iw_qp_t *), int ms)
{
  gint64 end = g_get_monotonic_time() + (gint64) ms * 1000;
  while (g_get_monotonic_time() < end) {
    rnicpi_wc_t wc;
    g_assert_cmpint(P->data->poll_cq(cq, &wc, 1), ==, 0);
    g_mutex_lock(&qp->lock);
    gboolean d = done(qp);
    g_mutex_unlock(&qp->lock);
    if (d)
      return TRUE;
  }
  return FALSE;
}

static gboolean qp_polled(iw_qp_t *qp) { return qp->polled; }
static gboolean qp_draining(iw_qp_t *qp) { return qp->cs == IW_CS_DRAIN; }
static gboolean qp_closed(iw_qp_t *qp) { return qp->fd < 0; }

/* A socket a spinning poller holds is in no epoll set.  When its stream
 * fails, the progress thread takes it back: the peer's FIN after our
 * Terminate closes it at once, though the poller goes on spinning (which
 * keeps its lease), not when the drain timer (IW_DRAIN_US) runs out. */
static void
test_polled_drain(void)
{
  g_test_summary("A QP driven by a spinning poller Terminates an RDMA Write to an unknown STag; "
                 "with the poller still spinning, the peer's FIN closes the stream within "
                 "500 ms (the drain timer would take 2 s)");
  if (!iw_config.poll_progress) {
    g_test_skip("ITAPI_IWARP_POLL_PROGRESS=0: no poller takes the QP");
    return;
  }
  victim_t v;
  victim_new(&v, 4096);
  victim_connect(&v, TRUE);
  iw_qp_t *qp = to_iw_qp(v.qp);
  g_assert_true(spin_until(v.rcq, qp, qp_polled, 1000));
  uint8_t u[14 + 16] = { 0 };
  size_t n = tagged(u, 0x0, 0xdead00, 0);
  peer_fpdu(v.peer, v.crc, u, n + 16, FALSE);
  g_assert_true(spin_until(v.rcq, qp, qp_draining, 5000));
  static uint8_t t[65536];
  g_assert_cmpint(peer_next_terminate(&v, t), >=, 18 + 4);
  g_assert_cmphex(t[18], ==, 0x11); /* DDP tagged: invalid STag */
  uint8_t b;
  g_assert_cmpuint(peer_read(v.peer, &b, 1), ==, 0); /* its FIN */
  g_assert_cmpint(shutdown(v.peer, SHUT_WR), ==, 0);  /* and ours */
  gint64 t0 = g_get_monotonic_time();
  gboolean closed = spin_until(v.rcq, qp, qp_closed, 500);
  g_test_message("%s after %.1f ms", closed ? "closed" : "still open",
                 (g_get_monotonic_time() - t0) / 1e3);
  g_assert_true(closed);
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  victim_free(&v);
}

static void
test_recv_region_gone(void)
{
  g_test_summary("A posted receive's region deregistered before the Send comes: LOC_PROT_ERR, "
                 "nothing written, Terminate DDP local catastrophic (1/0/0)");
  region_gone(GONE_SEND, FALSE, FALSE);
}

static void
test_recv_region_gone_mid(void)
{
  g_test_summary("A posted receive's region deregistered halfway through a Send's payload: "
                 "LOC_PROT_ERR, nothing more written, Terminate DDP local catastrophic (1/0/0)");
  region_gone(GONE_SEND, TRUE, FALSE);
}

static void
test_read_sink_gone(void)
{
  g_test_summary("The sink of the victim's RDMA Read deregistered before the Read Response: the "
                 "Read completes LOC_PROT_ERR, nothing written, Terminate DDP tagged, invalid "
                 "STag (1/1/0) as siw");
  region_gone(GONE_READ, FALSE, FALSE);
}

static void
test_read_sink_gone_mid(void)
{
  g_test_summary("The sink of the victim's RDMA Read deregistered halfway through the Read "
                 "Response: LOC_PROT_ERR, nothing more written, Terminate DDP tagged (1/1/0)");
  region_gone(GONE_READ, TRUE, FALSE);
}

static void
test_read_sink_reused_mid(void)
{
  g_test_summary("The sink of the victim's RDMA Read deregistered halfway through the Read "
                 "Response and its buffer registered again at once as a new region: the old "
                 "STag places nothing more, the Read completes LOC_PROT_ERR, Terminate DDP "
                 "tagged (1/1/0)");
  region_gone(GONE_READ, TRUE, TRUE);
}

static void
test_write_region_gone_mid(void)
{
  g_test_summary("The victim's region deregistered halfway through the peer's RDMA Write into "
                 "it: nothing more written, Terminate DDP tagged, invalid STag (1/1/0), "
                 "WRITE_ACCESS");
  region_gone(GONE_WRITE, TRUE, FALSE);
}

static void
test_write_region_reused_mid(void)
{
  g_test_summary("The victim's region deregistered halfway through the peer's RDMA Write and "
                 "its buffer registered again at once as a new region: the old STag places "
                 "nothing more, Terminate DDP tagged, invalid STag (1/1/0)");
  region_gone(GONE_WRITE, TRUE, TRUE);
}

/* A WR with no segments may leave sg_list NULL (a zero-length Send, a
 * zero-length Read): posting it copies nothing from NULL (memcpy(d, NULL,
 * 0) is undefined, C11 7.24.1p2; UBSan with halt_on_error=1 aborts on it),
 * and the message still goes out and completes. */
static void
test_post_no_segments(void)
{
  g_test_summary("A Send and a receive posted with no segments and sg_list NULL: the peer gets "
                 "a zero-length Send (untagged, QN 0, MSN 1, L), the Send completes SUCCESS, the "
                 "receive is taken by the peer's zero-length Send with byte_len 0");
  victim_t v;
  victim_new(&v, 4096);
  rnicpi_recv_wr_t rw = { .wr_id = 0x51, .sg_list = NULL, .num_sge = 0 };
  g_assert_cmpint(P->data->post_recv(v.qp, &rw), ==, RNICPI_OK);
  victim_connect(&v, FALSE);
  rnicpi_send_wr_t wr = { .wr_id = 0x52, .opcode = RNICPI_WR_SEND, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = NULL, .num_sge = 0 };
  g_assert_cmpint(P->data->post_send(v.qp, &wr), ==, RNICPI_OK);
  static uint8_t u[65536];
  int len;
  do {
    len = peer_next_fpdu(v.peer, u);
    g_assert_cmpint(len, >=, 18);
  } while ((u[0] & 0x80) != 0 || (u[1] & 0x0f) != 0x3); /* the Send */
  g_assert_cmpint(len, ==, 18);
  g_assert_cmphex(u[0] & 0x40, ==, 0x40); /* L */
  uint32_t qn, msn;
  memcpy(&qn, u + 6, 4);
  memcpy(&msn, u + 10, 4);
  g_assert_cmpuint(ntohl(qn), ==, 0);
  g_assert_cmpuint(ntohl(msn), ==, 1);
  if (placed) {
    /* Its delivery fence: answer it, as write_fpdus() does. */
    do {
      len = peer_next_fpdu(v.peer, u);
      g_assert_cmpint(len, >=, 14);
    } while ((u[0] & 0x80) != 0 || (u[1] & 0x0f) != 0x1);
    uint32_t sink;
    memcpy(&sink, u + 18, 4);
    size_t k = tagged(u, 0x2, ntohl(sink), 0);
    peer_fpdu(v.peer, v.crc, u, k, FALSE);
  }
  rnicpi_wc_t wc = wc_expect(v.scq, 0x52, RNICPI_WC_SUCCESS);
  size_t n = untagged(u, 0x3, 0, 1, 0, TRUE);
  peer_fpdu(v.peer, v.crc, u, n, FALSE);
  wc = wc_expect(v.rcq, 0x51, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, 0);
  victim_free(&v);
}

static void
test_bad_length(void)
{
  g_test_summary("An FPDU whose ULPDU_Length cannot hold its DDP header: RDMAP remote "
                 "operation error, unspecified (0/2/0xff)");
  bad_frame_terminates(frame_cut_send, RNICPI_AE_PROTOCOL, 0, 2, 0xff);
}

/* A connected, loaded victim gets a Send (or an RDMA Write into its
 * region) with a bad CRC: Terminate LLP / MPA / CRC error, and the
 * consumer's event says which. */
static void
bad_crc(gboolean write)
{
  victim_t v;
  victim_ready(&v, TRUE);
  uint8_t u[64];
  size_t n = write ? tagged(u, 0x0, (uint32_t) v.mr->rkey, 0) : untagged(u, 0x3, 0, 1, 0, TRUE);
  memcpy(u + n, "corrupt!", 8);
  peer_fpdu(v.peer, TRUE, u, n + 8, TRUE);
  expect_terminate(&v, write ? RNICPI_AE_WRITE_CORRUPT : RNICPI_AE_LLP, 2, 0, 0x02, two_ids,
                   two_flushed, 2);
  victim_free(&v);
}

static void
test_bad_crc(void)
{
  g_test_summary("A Send whose CRC32c is wrong: LLP, MPA, CRC error (2/0/0x02); its bytes "
                 "may be placed (DDP places before the CRC is known) but its receive is "
                 "flushed, never completed");
  bad_crc(FALSE);
}

static void
test_bad_crc_write(void)
{
  g_test_summary("An RDMA Write whose CRC32c is wrong: the same Terminate (2/0/0x02), and the "
                 "consumer is told the Write's data is corrupt (RNICPI_AE_WRITE_CORRUPT: "
                 "IT_ASYNC_AFF_EP_RDMAW_CORRUPT_DATA), not a mere stream error");
  bad_crc(TRUE);
}

static void
test_eof_mid_fpdu(void)
{
  g_test_summary("The peer closes its half of the stream in the middle of an FPDU: no "
                 "Terminate can be framed; the victim is BROKEN, its receives flush, and its "
                 "consumer gets one RNICPI_ASYNC_QP_FATAL of cause LLP "
                 "(IT_ASYNC_AFF_EP_L_LLP_ERROR) with no Terminate detail");
  victim_t v;
  victim_ready(&v, FALSE);
  uint8_t u[64];
  size_t n = untagged(u, 0x3, 0, 1, 0, TRUE);
  memset(u + n, 0x5a, 16);
  uint8_t f[128];
  size_t flen = fpdu_build(f, v.crc, u, n + 16, FALSE);
  peer_write(v.peer, f, flen / 2);
  g_assert_cmpint(shutdown(v.peer, SHUT_WR), ==, 0);
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  expect_async(RNICPI_AE_LLP, RNICPI_TERM_NONE, RNICPI_TERM_NONE, RNICPI_TERM_NONE);
  expect_recvs(&v, two_ids, two_flushed, 2);
  victim_free(&v);
}

static void
test_peer_terminate(void)
{
  g_test_summary("The peer answers the victim's Send with a Terminate, DDP untagged, message "
                 "too long (1/2/0x05), copying the Send's header: the victim sends no "
                 "Terminate of its own, only its FIN; BROKEN; its consumer gets "
                 "RNICPI_ASYNC_QP_REMOTE_ERR of cause REMOTE_RECV_LENGTH with that layer, type "
                 "and code; the Send fails (placed completions) and the receives flush");
  victim_t v;
  victim_ready(&v, FALSE);
  static uint8_t s[65536];
  int len;
  do {
    len = peer_next_fpdu(v.peer, s);
    g_assert_cmpint(len, >=, 18);
  } while ((s[0] & 0x80) != 0 || (s[1] & 0x0f) != 0x3); /* the victim's Send */
  uint8_t t[64];
  size_t n = untagged(t, 0x7, 2, 1, 0, TRUE);
  t[n] = 0x12;     /* DDP, untagged buffer error */
  t[n + 1] = 0x05; /* message too long */
  t[n + 2] = 0xc0; /* M, D: the DDP segment length and header follow */
  t[n + 3] = 0;
  uint16_t sl = htons((uint16_t) len);
  memcpy(t + n + 4, &sl, 2);
  memcpy(t + n + 6, s, 18);
  peer_fpdu(v.peer, v.crc, t, n + 6 + 18, FALSE);
  /* Its FIN, no Terminate (a placement fence's Read Request may come first). */
  while ((len = peer_next_fpdu(v.peer, s)) >= 0)
    g_assert_false((s[0] & 0x80) == 0 && (s[1] & 0x0f) == 0x7);
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  expect_async(RNICPI_AE_REMOTE_RECV_LENGTH, 1, 2, 0x05);
  rnicpi_wc_t wc = wc_of(v.scq);
  g_assert_cmphex(wc.wr_id, ==, 0x21);
  g_assert_cmpint(wc.status, ==, placed ? RNICPI_WC_REM_OP_ERR : RNICPI_WC_SUCCESS);
  expect_recvs(&v, two_ids, two_flushed, 2);
  victim_free(&v);
}

static size_t
frame_write_unknown_stag(const victim_t *v, uint8_t *u)
{
  size_t n = tagged(u, 0x0, (uint32_t) v->mr->rkey ^ 0x5a5a5a00u, 0);
  memset(u + n, 0xee, 16);
  return n + 16;
}

static void
test_unknown_stag(void)
{
  g_test_summary("An RDMA Write to an STag nobody registered: DDP tagged, invalid STag (1/1/0)");
  bad_frame_terminates(frame_write_unknown_stag, RNICPI_AE_WRITE_ACCESS, 1, 1, 0x00);
}

static void
test_to_beyond(void)
{
  g_test_summary("An RDMA Write running past the end of the region: DDP tagged, base or "
                 "bounds violation (1/1/1); nothing written");
  victim_t v;
  victim_ready(&v, FALSE);
  uint8_t u[64];
  size_t n = tagged(u, 0x0, (uint32_t) v.mr->rkey, REGION - 8);
  memset(u + n, 0xee, 16);
  peer_fpdu(v.peer, v.crc, u, n + 16, FALSE);
  expect_terminate(&v, RNICPI_AE_WRITE_ACCESS, 1, 1, 0x01, two_ids, two_flushed, 2);
  for (size_t i = REGION - 8; i < 2 * REGION; i++)
    g_assert_cmpuint(v.buf[i], ==, 0);
  victim_free(&v);
}

static void
test_too_long(void)
{
  g_test_summary("A Send longer than the receive buffer: DDP untagged, message too long "
                 "(1/2/5); that receive fails with a length error, the next is flushed");
  victim_t v;
  victim_ready(&v, FALSE);
  uint8_t u[128];
  size_t n = untagged(u, 0x3, 0, 1, 0, TRUE);
  memset(u + n, 0xee, 100);
  peer_fpdu(v.peer, v.crc, u, n + 100, FALSE);
  static const rnicpi_wc_status_t st[] = { RNICPI_WC_LOC_LEN_ERR, RNICPI_WC_WR_FLUSH_ERR };
  expect_terminate(&v, RNICPI_AE_PROTOCOL, 1, 2, 0x05, two_ids, st, 2);
  for (size_t i = 64; i < 2 * REGION; i++)
    g_assert_cmpuint(v.buf[i], ==, 0);
  victim_free(&v);
}

/* ---- a shared receive queue ----------------------------------------- */

#define SRQ_CTX 0x5e0

/* Victim @v's QP again, taking its receives from a new SRQ of its domain
 * (v->srq, returned) that holds @n receives of 64 bytes, at 64 * (i + 1)
 * in its buffer, ids 0x31 + i. */
static rnicpi_srq_t *
victim_on_srq(victim_t *v, int n)
{
  rnicpi_srq_t *srq = NULL;
  g_assert_cmpint(P->queue->qp_destroy(v->qp), ==, RNICPI_OK);
  g_assert_cmpint(P->srq->srq_create(v->pd, 8, 1, SRQ_CTX, &srq), ==, RNICPI_OK);
  v->srq = srq;
  rnicpi_qp_attr_t a = { .send_cq = v->scq, .recv_cq = v->rcq, .max_send_wr = 16,
                         .max_send_sge = 1, .max_rdma_write_sge = 1, .max_rdma_read_sge = 1,
                         .ird = 1, .ord = 1, .srq = srq,
                         .access = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE };
  g_assert_cmpint(P->queue->qp_create(v->pd, &a, 0xc0, &v->qp), ==, RNICPI_OK);
  for (int i = 0; i < n; i++) {
    rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) (v->buf + 64 * (i + 1)), .length = 64,
                         .lkey = v->mr->lkey };
    rnicpi_recv_wr_t wr = { .wr_id = 0x31 + (uint64_t) i, .sg_list = &sge, .num_sge = 1 };
    g_assert_cmpint(P->srq->post_srq_recv(srq, &wr), ==, RNICPI_OK);
  }
  /* Its own queue is the SRQ's. */
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) v->buf, .length = 64, .lkey = v->mr->lkey };
  rnicpi_recv_wr_t wr = { .wr_id = 0xbad, .sg_list = &sge, .num_sge = 1 };
  g_assert_cmpint(P->data->post_recv(v->qp, &wr), ==, RNICPI_EINVAL);
  return srq;
}

/* The peer's Send number @msn, @len bytes of @seed, in one FPDU (@last)
 * or as the first segment of a longer message. */
static void
peer_send(victim_t *v, uint32_t msn, uint8_t seed, size_t len, gboolean last)
{
  uint8_t u[128];
  size_t n = untagged(u, 0x3, 0, msn, 0, last);
  memset(u + n, seed, len);
  peer_fpdu(v->peer, v->crc, u, n + len, FALSE);
}

/* The victim's next receive: @id, successful, @len bytes of @seed at
 * 64 * @slot. */
static void
expect_srq_recv(victim_t *v, uint64_t id, int slot, uint32_t len, uint8_t seed)
{
  rnicpi_wc_t wc = wc_expect(v->rcq, id, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RECV);
  g_assert_cmphex(wc.qp_ctx, ==, 0xc0);
  g_assert_cmpuint(wc.byte_len, ==, len);
  for (uint32_t i = 0; i < 64; i++)
    g_assert_cmphex(v->buf[64 * slot + i], ==, i < len ? seed : 0);
}

static void
test_srq_empty(void)
{
  g_test_summary("A QP on an SRQ of 2 receives, limit armed at 2: the peer's first Send takes "
                 "the first (the limit event, once), the second the other; the third finds the "
                 "SRQ empty and is a Terminate DDP untagged, no buffer (1/2/0x02): BROKEN, "
                 "nothing more completes on the receive CQ, and the SRQ takes new receives");
  victim_t v;
  victim_new(&v, REGION);
  rnicpi_srq_t *srq = victim_on_srq(&v, 2);
  g_assert_cmpint(P->srq->srq_modify(srq, 0, 2), ==, RNICPI_OK);
  victim_connect(&v, FALSE);
  send_post(&v, 0x21);

  peer_send(&v, 1, 0xa1, 20, TRUE);
  expect_srq_recv(&v, 0x31, 1, 20, 0xa1);
  g_autofree rnicpi_async_event_t *lim = g_async_queue_timeout_pop(asyncq, 5 * G_USEC_PER_SEC);
  g_assert_nonnull(lim);
  g_assert_cmpint(lim->type, ==, RNICPI_ASYNC_SRQ_LIMIT);
  g_assert_cmphex(lim->ctx, ==, SRQ_CTX);
  peer_send(&v, 2, 0xa2, 30, TRUE);
  expect_srq_recv(&v, 0x32, 2, 30, 0xa2);
  g_assert_cmpuint(P->srq->srq_count(srq), ==, 0);

  peer_send(&v, 3, 0xa3, 40, TRUE);
  /* No receive completes (expect_terminate: 0 of them), none is flushed. */
  expect_terminate(&v, RNICPI_AE_PROTOCOL, 1, 2, 0x02, NULL, NULL, 0);
  for (size_t i = 3 * 64; i < 2 * REGION; i++)
    g_assert_cmpuint(v.buf[i], ==, 0);

  /* The SRQ outlives the connection: it takes receives, and keeps them. */
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) (v.buf + 192), .length = 64,
                       .lkey = v.mr->lkey };
  rnicpi_recv_wr_t wr = { .wr_id = 0x33, .sg_list = &sge, .num_sge = 1 };
  g_assert_cmpint(P->srq->post_srq_recv(srq, &wr), ==, RNICPI_OK);
  g_assert_cmpuint(P->srq->srq_count(srq), ==, 1);
  victim_free(&v);
  g_assert_null(g_async_queue_try_pop(asyncq));
}

static void
test_srq_flush_own(void)
{
  g_test_summary("A QP on an SRQ of 3 receives moved to ERROR in the middle of a Send (its "
                 "first segment placed) flushes the one receive that Send took, once, and "
                 "leaves the SRQ's other 2 receives in it");
  victim_t v;
  victim_new(&v, REGION);
  rnicpi_srq_t *srq = victim_on_srq(&v, 3);
  victim_connect(&v, FALSE);
  peer_send(&v, 1, 0xb1, 16, FALSE);
  /* The segment is taken when the SRQ's count falls. */
  for (int i = 0; i < 5000 && P->srq->srq_count(srq) != 2; i++)
    g_usleep(1000);
  g_assert_cmpuint(P->srq->srq_count(srq), ==, 2);
  g_assert_cmpint(P->queue->qp_to_error(v.qp), ==, RNICPI_OK);
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  rnicpi_wc_t wc = wc_expect(v.rcq, 0x31, RNICPI_WC_WR_FLUSH_ERR);
  g_assert_cmpint(P->data->poll_cq(v.rcq, &wc, 1), ==, 0);
  g_assert_cmpuint(P->srq->srq_count(srq), ==, 2);
  victim_free(&v);
}

/* The ULPDU of an RDMA Read Request into @u (64 bytes); its length. */
static size_t
read_request_ulpdu(uint8_t *u, uint32_t msn, uint32_t sink, uint32_t size, uint32_t src_stag,
                   uint64_t src_to)
{
  size_t n = untagged(u, 0x1, 1, msn, 0, TRUE);
  uint32_t s = htonl(sink), sz = htonl(size), src = htonl(src_stag);
  uint64_t sink_to = 0, sto = GUINT64_TO_BE(src_to);
  memcpy(u + n, &s, 4);
  memcpy(u + n + 4, &sink_to, 8);
  memcpy(u + n + 12, &sz, 4);
  memcpy(u + n + 16, &src, 4);
  memcpy(u + n + 20, &sto, 8);
  return n + 28;
}

static void
read_request(victim_t *v, uint32_t msn, uint32_t size, uint64_t src_to)
{
  uint8_t u[64];
  size_t n = read_request_ulpdu(u, msn, 0x77777700, size, (uint32_t) v->mr->rkey, src_to);
  peer_fpdu(v->peer, v->crc, u, n, FALSE);
}

static void
test_read_beyond_ird(void)
{
  g_test_summary("More RDMA Read Requests in flight than the IRD the victim announced: "
                 "RDMAP remote operation, catastrophic for the stream (0/2/7), after the "
                 "Read Response FPDU in progress is completed");
  victim_t v;
  enum { BIG = 16 << 20 };
  victim_new(&v, BIG);
  victim_connect(&v, FALSE);
  victim_load(&v);
  /* The peer does not read: the first response fills the socket and stays
   * in flight when the next requests arrive (IRD negotiated to 1). */
  for (uint32_t msn = 1; msn <= 3; msn++)
    read_request(&v, msn, BIG, 0);
  expect_terminate(&v, RNICPI_AE_PROTOCOL, 0, 2, 0x07, two_ids, two_flushed, 2);
  victim_free(&v);
}

/* Wait (5 s at most) until @cond(qp) holds, read under the QP's lock. */
static gboolean
wait_qp(iw_qp_t *qp, gboolean (*cond)(iw_qp_t *))
{
  for (int i = 0; i < 5000; i++) {
    g_mutex_lock(&qp->lock);
    gboolean c = cond(qp);
    g_mutex_unlock(&qp->lock);
    if (c)
      return TRUE;
    g_usleep(1000);
  }
  return FALSE;
}

/* A Read Response is under way and its socket is full. */
static gboolean
qp_rresp_stalled(iw_qp_t *qp)
{
  return qp->tx.kind == IW_TX_RRESP && qp->want_out;
}

/* As qp_rresp_stalled, with another Read Request queued behind. */
static gboolean
qp_rresp_queued(iw_qp_t *qp)
{
  return qp_rresp_stalled(qp) && qp->irq.len == 1;
}

/* The socket took part of an FPDU: its rest waits for room. */
static gboolean
qp_fpdu_cut(iw_qp_t *qp)
{
  const iw_txbatch_t *b = qp->tx.b;
  return b != NULL && b->sent > b->f_end;
}

enum { SRC_BIG = 16 << 20, SRC_SMALL = 64 << 10 };

/* @len bytes of fresh anonymous memory holding i % 251 at byte i,
 * registered in @v's protection domain for remote reads. */
static uint8_t *
source_new(victim_t *v, size_t len, rnicpi_mr_t **mr)
{
  uint8_t *src = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true(src != MAP_FAILED);
  for (size_t i = 0; i < len; i++)
    src[i] = (uint8_t) (i % 251);
  rnicpi_mr_attr_t ma = { .addr = src, .length = len, .iova = 0,
                          .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                                    RNICPI_ACCESS_REMOTE_READ };
  g_assert_cmpint(P->mem->mr_reg(v->pd, &ma, mr), ==, RNICPI_OK);
  return src;
}

/* The peer reads the victim's Read Response to @sink (past the victim's
 * Send and, with placed completions, its fence): each FPDU at the TO where
 * it belongs, every byte the source's (i % 251), up to its last FPDU or to
 * a Terminate, which is left in @r (*@term).  Returns the bytes it got. */
static uint64_t
peer_take_response(victim_t *v, uint8_t *r, uint32_t sink, gboolean *term)
{
  uint64_t got = 0;
  uint32_t nresp = 0;
  *term = FALSE;
  for (;;) {
    int len = peer_next_fpdu(v->peer, r);
    g_assert_cmpint(len, >=, 14);
    if ((r[0] & 0x80) == 0 && (r[1] & 0x0f) == 0x7) {
      *term = TRUE;
      break;
    }
    if ((r[0] & 0x80) == 0 || (r[1] & 0x0f) != 0x2)
      continue;
    uint32_t stag;
    uint64_t to;
    memcpy(&stag, r + 2, 4);
    memcpy(&to, r + 6, 8);
    g_assert_cmphex(ntohl(stag), ==, sink);
    g_assert_cmpuint(GUINT64_FROM_BE(to), ==, got);
    for (int i = 14; i < len; i++, got++)
      if (r[i] != (uint8_t) (got % 251))
        g_error("Read Response byte %" G_GUINT64_FORMAT " is 0x%02x, not the source's 0x%02x",
                got, r[i], (uint8_t) (got % 251));
    nresp++;
    if (r[0] & 0x40)
      break; /* L: the last */
  }
  g_test_message("the peer got %" G_GUINT64_FORMAT " bytes of a Response in %u FPDUs%s", got,
                 nresp, *term ? ", then the Terminate" : "");
  return got;
}

/* How the source of a Read Response fails while the peer takes it. */
typedef enum {
  SRC_FREED,          /* deregistered and unmapped */
  SRC_FREED_MID_FPDU, /* the same, the socket having taken part of an FPDU */
  SRC_RIGHT_REMOVED,  /* its remote read right taken away */
} src_loss_t;

/* The raw peer Reads all of a 16 MiB region of the victim through a small
 * window and stops reading; with the Response under way and the victim's
 * socket full, the victim's consumer deregisters the region and unmaps
 * its memory, or takes its remote read right away (@loss).  Then the peer
 * reads on: every Read Response byte it gets is the region's, at the TO
 * it belongs, short of the whole; then the Terminate RDMAP remote
 * protection 0/1/@code (invalid STag, access rights), its FIN, and the
 * victim BROKEN with LOCAL_READ_RESP (IRRQ access violation).  Without a
 * check before each piece the victim's progress thread reads the unmapped
 * pages (a crash) or sends what the memory holds now. */
static void
read_source_lost(src_loss_t loss, uint8_t code)
{
  uint32_t saved = iw_config.fpdu_max;
  /* FPDUs of about 3000 bytes: TCP takes whole segments, which the
   * path's own FPDUs fill exactly, so with those it stops between two. */
  if (loss == SRC_FREED_MID_FPDU)
    iw_config.fpdu_max = 3000;
  victim_t v;
  victim_new(&v, REGION);
  rnicpi_mr_t *mr;
  uint8_t *src = source_new(&v, SRC_BIG, &mr);
  peer_rcvbuf = 16384;
  victim_connect(&v, TRUE); /* CRC: every piece framed is read whole */
  peer_rcvbuf = 0;
  victim_load(&v);
  uint8_t u[64];
  size_t n = read_request_ulpdu(u, 1, 0x77777700, SRC_BIG, (uint32_t) mr->rkey, 0);
  peer_fpdu(v.peer, v.crc, u, n, FALSE);
  iw_qp_t *qp = to_iw_qp(v.qp);
  g_assert_true(wait_qp(qp, qp_rresp_stalled));
  g_mutex_lock(&qp->lock);
  gboolean cut = qp_fpdu_cut(qp);
  g_mutex_unlock(&qp->lock);
  g_test_message("the socket stopped %s an FPDU", cut ? "in the middle of" : "at the end of");
  if (loss == SRC_FREED_MID_FPDU)
    g_assert_true(cut);
  if (loss == SRC_RIGHT_REMOVED) {
    g_assert_cmpint(P->mem->mr_modify(mr, RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE),
                    ==, RNICPI_OK);
  } else {
    g_assert_cmpint(P->mem->mr_dereg(mr), ==, RNICPI_OK);
    g_assert_cmpint(munmap(src, SRC_BIG), ==, 0);
  }

  static uint8_t r[65536];
  gboolean term;
  g_assert_cmpuint(peer_take_response(&v, r, 0x77777700, &term), <, SRC_BIG);
  g_assert_true(term);
  g_assert_cmphex(r[20] & 0xe0, ==, 0); /* no header copied: the Request is long gone */
  expect_terminate_in(&v, r, RNICPI_AE_LOCAL_READ_RESP, 0, 1, code, two_ids, two_flushed, 2);
  if (loss == SRC_RIGHT_REMOVED) {
    g_assert_cmpint(P->mem->mr_dereg(mr), ==, RNICPI_OK);
    g_assert_cmpint(munmap(src, SRC_BIG), ==, 0);
  }
  victim_free(&v);
  iw_config.fpdu_max = saved;
}

static void
test_read_source_freed(void)
{
  g_test_summary("The source of an RDMA Read Response the peer reads slowly is deregistered and "
                 "its pages unmapped halfway: the victim reads nothing more of it (no crash, "
                 "no byte but the region's), ends the Response with the Terminate RDMAP remote "
                 "protection, invalid STag (0/1/0), and lives on");
  read_source_lost(SRC_FREED, 0x00);
}

static void
test_read_source_freed_mid_fpdu(void)
{
  g_test_summary("The same with the victim's socket full in the middle of an FPDU (3000-byte "
                 "FPDUs): the rest of that FPDU, copied before the pages went, goes out whole, "
                 "then the Terminate (0/1/0) on an FPDU boundary");
  read_source_lost(SRC_FREED_MID_FPDU, 0x00);
}

static void
test_read_source_right_removed(void)
{
  g_test_summary("The source of an RDMA Read Response the peer reads slowly loses its remote "
                 "read right halfway (it_lmr_modify): the Response stops there with the "
                 "Terminate RDMAP remote protection, access rights (0/1/2)");
  read_source_lost(SRC_RIGHT_REMOVED, 0x02);
}

static void
test_read_source_freed_queued(void)
{
  g_test_summary("Two RDMA Read Requests (IRD 2): while the first one's 16 MiB Response waits "
                 "for the peer's window, the second one's source is deregistered and unmapped; "
                 "the first Response arrives whole (its last FPDUs framed with the second "
                 "one's start go out first), then, where the second would start, the "
                 "Terminate RDMAP remote protection, invalid STag (0/1/0)");
  victim_t v;
  victim_new(&v, REGION);
  rnicpi_mr_t *mr1, *mr2;
  uint8_t *src1 = source_new(&v, SRC_BIG, &mr1), *src2 = source_new(&v, SRC_SMALL, &mr2);
  peer_rcvbuf = 16384;
  victim_ird = 2;
  victim_dial(&v, TRUE, REPLY_RTR_WRITE, 2);
  victim_ird = 1;
  peer_rcvbuf = 0;
  victim_load(&v);
  uint8_t u[64], f[256];
  size_t n = fpdu_build(f, v.crc, u,
                        read_request_ulpdu(u, 1, 0x77777700, SRC_BIG, (uint32_t) mr1->rkey, 0),
                        FALSE);
  n += fpdu_build(f + n, v.crc, u,
                  read_request_ulpdu(u, 2, 0x88888800, SRC_SMALL, (uint32_t) mr2->rkey, 0), FALSE);
  peer_write(v.peer, f, n);
  g_assert_true(wait_qp(to_iw_qp(v.qp), qp_rresp_queued));
  g_assert_cmpint(P->mem->mr_dereg(mr2), ==, RNICPI_OK);
  g_assert_cmpint(munmap(src2, SRC_SMALL), ==, 0);

  static uint8_t r[65536];
  gboolean term;
  g_assert_cmpuint(peer_take_response(&v, r, 0x77777700, &term), ==, SRC_BIG);
  g_assert_false(term);
  g_assert_cmpint(peer_next_terminate(&v, r), >=, 18 + 4);
  expect_terminate_in(&v, r, RNICPI_AE_LOCAL_READ_RESP, 0, 1, 0x00, two_ids, two_flushed, 2);
  g_assert_cmpint(P->mem->mr_dereg(mr1), ==, RNICPI_OK);
  g_assert_cmpint(munmap(src1, SRC_BIG), ==, 0);
  victim_free(&v);
}

static void
test_read_source_beyond(void)
{
  g_test_summary("An RDMA Read Request whose source runs past the region: RDMAP remote "
                 "protection, base or bounds (0/1/1)");
  victim_t v;
  victim_ready(&v, FALSE);
  read_request(&v, 1, 64, REGION - 32);
  expect_terminate(&v, RNICPI_AE_READ_ACCESS, 0, 1, 0x01, two_ids, two_flushed, 2);
  victim_free(&v);
}

static size_t
frame_send_invalidate(const victim_t *v, uint8_t *u)
{
  size_t n = untagged(u, 0x4, 0, 1, 0, TRUE);
  uint32_t inv = htonl((uint32_t) v->mr->rkey);
  memcpy(u + 2, &inv, 4);
  memset(u + n, 0x5a, 8);
  return n + 8;
}

/* Whether STag @stag answers (a valid region) on the victim's device. */
static gboolean
stag_valid(uint32_t stag)
{
  iw_dev_t *d = to_iw_dev(dev);
  g_rw_lock_reader_lock(&d->mr_lock);
  gboolean ok = iw_mr_lookup(d, stag) != NULL;
  g_rw_lock_reader_unlock(&d->mr_lock);
  return ok;
}

static void
test_send_invalidate(void)
{
  g_test_summary("A Send with Invalidate naming the victim's region of mr_reg, which no peer "
                 "may invalidate: RFC 5040 5.3's Terminate, RDMAP remote protection, STag "
                 "cannot be invalidated (0/1/9); the receive it used is flushed, not "
                 "completed, and the region's STag still answers");
  victim_t v;
  victim_ready(&v, FALSE);
  uint8_t u[64];
  size_t n = frame_send_invalidate(&v, u);
  peer_fpdu(v.peer, v.crc, u, n, FALSE);
  expect_terminate(&v, RNICPI_AE_ACCESS, 0, 1, 0x09, two_ids, two_flushed, 2);
  g_assert_true(stag_valid((uint32_t) v.mr->rkey));
  victim_free(&v);
}

enum { FR_LEN = 256, FR_PAGE = 4096 };

/* Fast-register @mr (of mr_alloc) over @mem (FR_LEN bytes) with every
 * right, by a FAST_REG on @v's connected QP: its new STag. */
static uint32_t
fr_post(victim_t *v, rnicpi_mr_t *mr, uint8_t *mem)
{
  rnicpi_send_wr_t wr = { .wr_id = 0xf0, .opcode = RNICPI_WR_FAST_REG,
                          .flags = RNICPI_WR_SIGNALED };
  wr.fast_reg = (rnicpi_fast_reg_t) {
    .mr = mr, .addr = mem, .length = FR_LEN, .iova = (uint64_t) (uintptr_t) mem,
    .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
              RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE,
    .page_size = FR_PAGE, .num_pages = 2,
  };
  g_assert_cmpint(P->data->post_send(v->qp, &wr), ==, RNICPI_OK);
  rnicpi_wc_t wc = wc_expect(v->scq, 0xf0, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_FAST_REG);
  g_assert_cmphex(wc.rkey, ==, mr->rkey);
  g_assert_true(stag_valid((uint32_t) wc.rkey));
  return (uint32_t) wc.rkey;
}

/* A region of @v's domain fast-registered over @mem (fr_post): its STag. */
static uint32_t
fr_new(victim_t *v, uint8_t *mem, rnicpi_mr_t **mr)
{
  g_assert_cmpint(P->mem->mr_alloc(v->pd, 2, mr), ==, RNICPI_OK);
  g_assert_false(stag_valid((uint32_t) (*mr)->rkey)); /* invalid until registered */
  return fr_post(v, *mr, mem);
}

/* A Local Invalidate of @stag on @v's QP, which succeeds. */
static void
local_inv(victim_t *v, uint32_t stag)
{
  rnicpi_send_wr_t inv = { .wr_id = 0xf1, .opcode = RNICPI_WR_LOCAL_INV,
                           .flags = RNICPI_WR_SIGNALED, .invalidate_rkey = stag };
  g_assert_cmpint(P->data->post_send(v->qp, &inv), ==, RNICPI_OK);
  rnicpi_wc_t wc = wc_expect(v->scq, 0xf1, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_LOCAL_INV);
  g_assert_cmphex(wc.rkey, ==, stag);
  g_assert_false(stag_valid(stag));
}

/* The peer of @v sends a Send with Invalidate (MSN @msn, 8 bytes) naming
 * @stag. */
static void
peer_send_inv(victim_t *v, uint32_t msn, uint32_t stag)
{
  uint8_t u[64];
  size_t n = untagged(u, 0x4, 0, msn, 0, TRUE);
  uint32_t inv = htonl(stag);
  memcpy(u + 2, &inv, 4);
  memset(u + n, 0x5a, 8);
  peer_fpdu(v->peer, v->crc, u, n + 8, FALSE);
}

static const uint64_t second_id[] = { 0x12 };
static const rnicpi_wc_status_t one_flushed[] = { RNICPI_WC_WR_FLUSH_ERR };

static void
test_write_invalidated(void)
{
  g_test_summary("An RDMA Write to the STag of a fast-registered region after a Local "
                 "Invalidate of it: DDP tagged, invalid STag (1/1/0); nothing written");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  uint8_t *mem = g_malloc0(FR_LEN);
  rnicpi_mr_t *fr;
  uint32_t stag = fr_new(&v, mem, &fr);
  local_inv(&v, stag);
  victim_load(&v);
  uint8_t u[64];
  size_t n = tagged(u, 0x0, stag, (uint64_t) (uintptr_t) mem);
  memset(u + n, 0xee, 16);
  peer_fpdu(v.peer, v.crc, u, n + 16, FALSE);
  expect_terminate(&v, RNICPI_AE_WRITE_ACCESS, 1, 1, 0x00, two_ids, two_flushed, 2);
  for (size_t i = 0; i < FR_LEN; i++)
    g_assert_cmpuint(mem[i], ==, 0);
  g_assert_cmpint(P->mem->mr_dereg(fr), ==, RNICPI_OK);
  g_free(mem);
  victim_free(&v);
}

/* A Write FPDU into a fast-registered region comes in two pieces; between
 * them, once the first half has landed, the consumer invalidates the
 * region's STag and, with @refast, fast-registers the same memory again
 * (the same index, a new key).  The second half is refused with DDP
 * tagged, invalid STag (1/1/0) and not a byte of it is written: the old
 * STag reaches neither the invalid region nor the new registration. */
static void
write_invalidated_mid(gboolean refast)
{
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  uint8_t *mem = g_malloc0(FR_LEN);
  rnicpi_mr_t *fr;
  uint32_t stag = fr_new(&v, mem, &fr);
  static uint8_t u[FR_LEN + 64], f[FR_LEN + 64];
  size_t n = tagged(u, 0x0, stag, (uint64_t) (uintptr_t) mem);
  uint8_t hdr[14];
  memcpy(hdr, u, n);
  for (size_t i = 0; i < FR_LEN; i++)
    u[n + i] = (uint8_t) (i * 7 + 1);
  size_t flen = fpdu_build(f, v.crc, u, n + FR_LEN, FALSE);
  size_t cut = 2 + n + FR_LEN / 2;
  peer_write(v.peer, f, cut);
  wait_landed(to_iw_qp(v.qp), mem, u + n, FR_LEN / 2);
  local_inv(&v, stag);
  if (refast)
    g_assert_cmphex(fr_post(&v, fr, mem), !=, stag);
  peer_write(v.peer, f + cut, flen - cut);

  static uint8_t t[65536];
  g_assert_cmpint(peer_next_terminate(&v, t), >=, 18 + 4 + 2 + (int) n);
  g_test_message("Terminate: layer %u etype %u code 0x%02x", t[18] >> 4, t[18] & 0xf, t[19]);
  g_assert_cmphex(t[18], ==, 0x11);
  g_assert_cmphex(t[19], ==, 0x00);
  g_assert_cmpmem(t + 24, n, hdr, n);
  uint8_t b;
  g_assert_cmpuint(peer_read(v.peer, &b, 1), ==, 0);
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  expect_async(RNICPI_AE_WRITE_ACCESS, 1, 1, 0x00);
  static const uint8_t zero[FR_LEN / 2];
  g_assert_cmpmem(mem + FR_LEN / 2, FR_LEN / 2, zero, FR_LEN / 2);
  g_assert_cmpint(P->mem->mr_dereg(fr), ==, RNICPI_OK);
  g_free(mem);
  victim_free(&v);
}

static void
test_write_invalidated_mid(void)
{
  g_test_summary("A Local Invalidate between the two halves of a Write FPDU into a "
                 "fast-registered region: the second half is refused (1/1/0), not written");
  write_invalidated_mid(FALSE);
}

static void
test_write_refast_mid(void)
{
  g_test_summary("A Local Invalidate and a new fast registration of the same memory between "
                 "the two halves of a Write FPDU: the old STag's second half is refused "
                 "(1/1/0), not written into the new registration");
  write_invalidated_mid(TRUE);
}

static void
test_read_remote_invalidated(void)
{
  g_test_summary("A Send with Invalidate naming a fast-registered region of the victim's "
                 "domain: the receive completes with RNICPI_WC_WITH_INV and that STag; an RDMA "
                 "Read Request of it afterwards gets RDMAP remote protection, invalid STag "
                 "(0/1/0) and no Read Response");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  uint8_t *mem = g_malloc0(FR_LEN);
  memset(mem, 0x3c, FR_LEN);
  rnicpi_mr_t *fr;
  uint32_t stag = fr_new(&v, mem, &fr);
  victim_load(&v);
  peer_send_inv(&v, 1, stag);
  rnicpi_wc_t wc = wc_expect(v.rcq, 0x11, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, 8);
  g_assert_cmphex(wc.flags & RNICPI_WC_WITH_INV, ==, RNICPI_WC_WITH_INV);
  g_assert_cmphex(wc.rkey, ==, stag);
  g_assert_false(stag_valid(stag));
  uint8_t u[64];
  size_t n = read_request_ulpdu(u, 1, 0x77777700, 64, stag, (uint64_t) (uintptr_t) mem);
  peer_fpdu(v.peer, v.crc, u, n, FALSE);
  /* peer_next_terminate skips nothing but a Read Response would be
   * refused here: the first FPDU after the Send's is the Terminate. */
  static uint8_t t[65536];
  int len;
  do {
    len = peer_next_fpdu(v.peer, t);
    g_assert_cmpint(len, >=, 14);
    g_assert_false((t[0] & 0x80) != 0 && (t[1] & 0x0f) == 0x2); /* no Read Response */
  } while ((t[0] & 0x80) != 0 || (t[1] & 0x0f) != 0x7);
  expect_terminate_in(&v, t, RNICPI_AE_READ_ACCESS, 0, 1, 0x00, second_id, one_flushed, 1);
  g_assert_cmpint(P->mem->mr_dereg(fr), ==, RNICPI_OK);
  g_free(mem);
  victim_free(&v);
}

static void
test_send_invalidate_other_pd(void)
{
  g_test_summary("A Send with Invalidate naming a valid fast-registered region of another "
                 "protection domain than the receiving QP's: Terminate 0/1/9, the receive "
                 "flushed, and the region is untouched: its STag still answers and an RDMA "
                 "Write through its own QP lands");
  victim_t o;
  victim_new(&o, REGION);
  victim_connect(&o, FALSE);
  uint8_t *mem = g_malloc0(FR_LEN);
  rnicpi_mr_t *fr;
  uint32_t stag = fr_new(&o, mem, &fr);

  victim_t v;
  victim_ready(&v, FALSE);
  peer_send_inv(&v, 1, stag);
  expect_terminate(&v, RNICPI_AE_ACCESS, 0, 1, 0x09, two_ids, two_flushed, 2);
  g_assert_true(stag_valid(stag));
  victim_free(&v);

  uint8_t u[64], want[16];
  size_t n = tagged(u, 0x0, stag, (uint64_t) (uintptr_t) mem + 32);
  memset(u + n, 0xee, 16);
  memset(want, 0xee, 16);
  peer_fpdu(o.peer, o.crc, u, n + 16, FALSE);
  wait_landed(to_iw_qp(o.qp), mem + 32, want, 16);
  g_assert_cmpint(P->queue->qp_to_error(o.qp), ==, RNICPI_OK);
  g_assert_cmpint(P->mem->mr_dereg(fr), ==, RNICPI_OK);
  g_free(mem);
  victim_free(&o);
}

/* ---- memory windows (iw_mw.c) -------------------------------------------- */

enum { MW_REGION = 4096, MW_OFF = 1024, MW_LEN = 512 };

/* A VA-based region of a victim's domain over fresh memory (iWARP binds
 * windows to no other: RNICPI_CAP_MW_NEEDS_VA_REGION), and a window on it. */
typedef struct {
  uint8_t *mem;
  rnicpi_mr_t *mr;
  rnicpi_mw_t *mw;
  uint32_t stag;     /* of the last bind */
} win_t;

/* Bind @w's window through @v's QP over [MW_OFF, MW_OFF + MW_LEN) of its
 * region with @access: the bind completes with the STag post_send gave,
 * which answers from then on. */
static uint32_t
win_bind(victim_t *v, win_t *w, uint32_t access)
{
  rnicpi_send_wr_t wr = { .wr_id = 0xb1, .opcode = RNICPI_WR_BIND_MW, .flags = RNICPI_WR_SIGNALED };
  wr.bind = (rnicpi_bind_t) { .mw = w->mw, .mr = w->mr,
                              .addr = (uint64_t) (uintptr_t) (w->mem + MW_OFF), .length = MW_LEN,
                              .access = access };
  g_assert_cmpint(P->data->post_send(v->qp, &wr), ==, RNICPI_OK);
  rnicpi_wc_t wc = wc_expect(v->scq, 0xb1, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_BIND_MW);
  g_assert_cmphex(wc.rkey, ==, w->mw->rkey);
  g_assert_cmphex(wc.rkey >> 8, !=, w->mr->rkey >> 8);
  g_assert_true(stag_valid((uint32_t) wc.rkey));
  w->stag = (uint32_t) wc.rkey;
  return w->stag;
}

/* A region of @v's domain and a window of it bound through @v's QP with
 * @access; the region's bytes are @fill. */
static void
win_new(victim_t *v, win_t *w, uint32_t access, uint8_t fill)
{
  w->mem = g_malloc(MW_REGION);
  memset(w->mem, fill, MW_REGION);
  rnicpi_mr_attr_t m = { .addr = w->mem, .length = MW_REGION,
                         .iova = (uint64_t) (uintptr_t) w->mem,
                         .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                                   RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE |
                                   RNICPI_ACCESS_MW_BIND };
  g_assert_cmpint(P->mem->mr_reg(v->pd, &m, &w->mr), ==, RNICPI_OK);
  g_assert_cmpint(P->mw->mw_alloc(v->pd, RNICPI_MW_NARROW, &w->mw), ==, RNICPI_OK);
  win_bind(v, w, access);
}

/* The window goes (bound or not), then its region. */
static void
win_free(win_t *w)
{
  g_assert_cmpint(P->mw->mw_dealloc(w->mw), ==, RNICPI_OK);
  g_assert_false(stag_valid(w->stag));
  g_assert_cmpint(P->mem->mr_dereg(w->mr), ==, RNICPI_OK);
  g_free(w->mem);
}

/* Every byte of @w's region is @fill but [@off, @off + @len), which
 * holds @want. */
static void
win_check(const win_t *w, uint8_t fill, size_t off, size_t len, const uint8_t *want)
{
  for (size_t i = 0; i < MW_REGION; i++)
    if (i < off || i >= off + len)
      g_assert_cmphex(w->mem[i], ==, fill);
  if (len > 0)
    g_assert_cmpmem(w->mem + off, len, want, len);
}

/* The peer writes @len bytes of 0xee at @to through @stag. */
static void
peer_write_at(victim_t *v, uint32_t stag, uint64_t to, size_t len)
{
  uint8_t u[64 + 64];
  g_assert_cmpuint(len, <=, 64);
  size_t n = tagged(u, 0x0, stag, to);
  memset(u + n, 0xee, len);
  peer_fpdu(v->peer, v->crc, u, n + len, FALSE);
}

static void
test_mw_write_past_window(void)
{
  g_test_summary("A window bound over part of a region: the region refuses mr_dereg "
                 "(RNICPI_EBUSY); the peer's RDMA Write through the window's STag lands at "
                 "the window's place; one that starts inside the window and ends past it, "
                 "still inside the region, gets DDP tagged base or bounds (1/1/1) and writes "
                 "nothing");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  win_t w;
  win_new(&v, &w, RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE, 0);
  g_assert_cmpint(P->mem->mr_dereg(w.mr), ==, RNICPI_EBUSY);
  victim_load(&v);
  uint8_t want[16];
  memset(want, 0xee, sizeof(want));
  uint64_t base = (uint64_t) (uintptr_t) (w.mem + MW_OFF);
  peer_write_at(&v, w.stag, base, 16);
  wait_landed(to_iw_qp(v.qp), w.mem + MW_OFF, want, 16);
  peer_write_at(&v, w.stag, base + MW_LEN - 8, 16);
  expect_terminate(&v, RNICPI_AE_WRITE_ACCESS, 1, 1, 0x01, two_ids, two_flushed, 2);
  win_check(&w, 0, MW_OFF, 16, want);
  win_free(&w);
  victim_free(&v);
}

static void
test_mw_read_only_window(void)
{
  g_test_summary("A window bound with REMOTE_READ only over a region that grants remote "
                 "Write: the peer's RDMA Read Request through its STag is answered with the "
                 "window's bytes; an RDMA Write through it gets RDMAP remote protection, "
                 "access violation (0/1/2), and writes nothing");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  win_t w;
  win_new(&v, &w, RNICPI_ACCESS_REMOTE_READ, 0x3c);
  for (size_t i = 0; i < 64; i++)
    w.mem[MW_OFF + 100 + i] = (uint8_t) i;
  victim_load(&v);
  uint8_t u[64];
  size_t n = read_request_ulpdu(u, 1, 0x77777700, 64, w.stag,
                                (uint64_t) (uintptr_t) (w.mem + MW_OFF + 100));
  peer_fpdu(v.peer, v.crc, u, n, FALSE);
  static uint8_t t[65536];
  int len;
  do { /* past the victim's Send */
    len = peer_next_fpdu(v.peer, t);
    g_assert_cmpint(len, >=, 14);
  } while ((t[0] & 0x80) == 0 || (t[1] & 0x0f) != 0x2);
  g_assert_cmpint(len, ==, 14 + 64);
  uint32_t sink;
  memcpy(&sink, t + 2, 4);
  g_assert_cmphex(ntohl(sink), ==, 0x77777700);
  g_assert_cmpmem(t + 14, 64, w.mem + MW_OFF + 100, 64);
  peer_write_at(&v, w.stag, (uint64_t) (uintptr_t) (w.mem + MW_OFF), 16);
  expect_terminate(&v, RNICPI_AE_WRITE_ACCESS, 0, 1, 0x02, two_ids, two_flushed, 2);
  for (size_t i = 0; i < 64; i++)
    w.mem[MW_OFF + 100 + i] = 0x3c;
  win_check(&w, 0x3c, 0, 0, NULL);
  win_free(&w);
  victim_free(&v);
}

static void
test_mw_write_invalidated(void)
{
  g_test_summary("A Local Invalidate of a bound window's STag completes with that STag; the "
                 "peer's RDMA Write through it afterwards gets DDP tagged, invalid STag "
                 "(1/1/0), nothing written, and the region (no window bound) deregisters");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  win_t w;
  win_new(&v, &w, RNICPI_ACCESS_REMOTE_WRITE, 0);
  local_inv(&v, w.stag);
  victim_load(&v);
  peer_write_at(&v, w.stag, (uint64_t) (uintptr_t) (w.mem + MW_OFF), 16);
  expect_terminate(&v, RNICPI_AE_WRITE_ACCESS, 1, 1, 0x00, two_ids, two_flushed, 2);
  win_check(&w, 0, 0, 0, NULL);
  win_free(&w);
  victim_free(&v);
}

static void
test_mw_read_remote_invalidated(void)
{
  g_test_summary("A Send with Invalidate naming a window bound through the receiving QP: the "
                 "receive completes with RNICPI_WC_WITH_INV and that STag, the window is "
                 "unbound; an RDMA Read Request of it afterwards gets RDMAP remote protection, "
                 "invalid STag (0/1/0) and no Read Response");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  win_t w;
  win_new(&v, &w, RNICPI_ACCESS_REMOTE_READ, 0x5a);
  victim_load(&v);
  peer_send_inv(&v, 1, w.stag);
  rnicpi_wc_t wc = wc_expect(v.rcq, 0x11, RNICPI_WC_SUCCESS);
  g_assert_cmphex(wc.flags & RNICPI_WC_WITH_INV, ==, RNICPI_WC_WITH_INV);
  g_assert_cmphex(wc.rkey, ==, w.stag);
  g_assert_false(stag_valid(w.stag));
  uint8_t u[64];
  size_t n = read_request_ulpdu(u, 1, 0x77777700, 64, w.stag,
                                (uint64_t) (uintptr_t) (w.mem + MW_OFF));
  peer_fpdu(v.peer, v.crc, u, n, FALSE);
  static uint8_t t[65536];
  int len;
  do {
    len = peer_next_fpdu(v.peer, t);
    g_assert_cmpint(len, >=, 14);
    g_assert_false((t[0] & 0x80) != 0 && (t[1] & 0x0f) == 0x2); /* no Read Response */
  } while ((t[0] & 0x80) != 0 || (t[1] & 0x0f) != 0x7);
  expect_terminate_in(&v, t, RNICPI_AE_READ_ACCESS, 0, 1, 0x00, second_id, one_flushed, 1);
  win_free(&w);
  victim_free(&v);
}

static void
test_mw_other_qp(void)
{
  g_test_summary("A window bound through one QP (the RDMAC verbs' window: bound to its QP): "
                 "its STag arriving on another connection of the same protection domain gets "
                 "DDP tagged, STag not associated with the stream (1/1/2) and writes nothing, "
                 "while through the binding QP's connection a Write lands; destroying the "
                 "binding QP unbinds the window, so its region deregisters");
  victim_t o;
  victim_new(&o, REGION);
  victim_connect(&o, FALSE);
  win_t w;
  win_new(&o, &w, RNICPI_ACCESS_REMOTE_WRITE, 0);
  uint64_t base = (uint64_t) (uintptr_t) (w.mem + MW_OFF);

  victim_t v;
  victim_new_in(&v, REGION, o.pd);
  victim_connect(&v, FALSE);
  victim_load(&v);
  peer_write_at(&v, w.stag, base, 16);
  expect_terminate(&v, RNICPI_AE_WRITE_ACCESS, 1, 1, 0x02, two_ids, two_flushed, 2);
  win_check(&w, 0, 0, 0, NULL);
  victim_free(&v);

  uint8_t want[16];
  memset(want, 0xee, sizeof(want));
  peer_write_at(&o, w.stag, base + 32, 16);
  wait_landed(to_iw_qp(o.qp), w.mem + MW_OFF + 32, want, 16);
  g_assert_cmpint(P->mem->mr_dereg(w.mr), ==, RNICPI_EBUSY);
  g_assert_cmpint(P->queue->qp_destroy(o.qp), ==, RNICPI_OK);
  o.qp = NULL;
  g_assert_false(stag_valid(w.stag));
  g_assert_cmpint(P->mem->mr_dereg(w.mr), ==, RNICPI_OK);
  g_assert_cmpint(P->mw->mw_dealloc(w.mw), ==, RNICPI_OK);
  g_free(w.mem);
  victim_free(&o);
}

/* The victim's Read of @len bytes (@op: RNICPI_WR_RDMA_READ or _INV, the
 * latter killing @w's STag) into @w's window at window offset @off: the
 * peer takes its Read Request, which must name the window's STag and the
 * window address as its Data Sink, and answers it with @len bytes of
 * 0xab. */
static void
read_into_window(victim_t *v, win_t *w, rnicpi_wr_opcode_t op, size_t off, uint32_t len)
{
  uint64_t at = (uint64_t) (uintptr_t) (w->mem + MW_OFF + off);
  rnicpi_sge_t sge = { .addr = at, .length = len, .lkey = w->stag };
  rnicpi_send_wr_t rd = { .wr_id = 0x4e, .opcode = op,
                          .flags = RNICPI_WR_SIGNALED | RNICPI_WR_SINK_MW, .sg_list = &sge,
                          .num_sge = 1, .remote_addr = 0x9000, .rkey = 0x4400,
                          .invalidate_rkey = w->stag };
  g_assert_cmpint(P->data->post_send(v->qp, &rd), ==, RNICPI_OK);
  static uint8_t t[65536];
  int n;
  do
    n = peer_next_fpdu(v->peer, t);
  while ((t[0] & 0x80) != 0 || (t[1] & 0x0f) != 0x1);
  g_assert_cmpint(n, ==, 18 + 28);
  uint32_t sink, size;
  uint64_t sink_to;
  memcpy(&sink, t + 18, 4);
  memcpy(&sink_to, t + 22, 8);
  memcpy(&size, t + 30, 4);
  g_assert_cmphex(ntohl(sink), ==, w->stag);
  g_assert_cmphex(GUINT64_FROM_BE(sink_to), ==, at);
  g_assert_cmpuint(ntohl(size), ==, len);
  uint8_t u[14 + 64];
  g_assert_cmpuint(len, <=, 64);
  size_t h = tagged(u, 0x2, w->stag, at);
  memset(u + h, 0xab, len);
  peer_fpdu(v->peer, v->crc, u, h + len, FALSE);
}

static void
test_mw_read_into_window(void)
{
  g_test_summary("An RDMA Read into a window of the victim's (RNICPI_WR_SINK_MW) names the "
                 "window's STag and address as its Data Sink and lands at the window's place; "
                 "a Read with Invalidate of the window's STag lands too, completes with "
                 "RNICPI_WC_WITH_INV and that STag, and leaves it dead: the peer's RDMA Write "
                 "through it then gets DDP tagged, invalid STag (1/1/0), nothing written");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  win_t w;
  win_new(&v, &w, RNICPI_ACCESS_REMOTE_WRITE, 0);
  uint8_t want[64];
  memset(want, 0xab, sizeof(want));

  read_into_window(&v, &w, RNICPI_WR_RDMA_READ, 16, 32);
  rnicpi_wc_t wc = wc_expect(v.scq, 0x4e, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  g_assert_cmpuint(wc.byte_len, ==, 32);
  g_assert_cmphex(wc.flags & RNICPI_WC_WITH_INV, ==, 0);
  win_check(&w, 0, MW_OFF + 16, 32, want);
  g_assert_true(stag_valid(w.stag));

  read_into_window(&v, &w, RNICPI_WR_RDMA_READ_INV, 48, 16);
  wc = wc_expect(v.scq, 0x4e, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  g_assert_cmphex(wc.flags & RNICPI_WC_WITH_INV, ==, RNICPI_WC_WITH_INV);
  g_assert_cmphex(wc.rkey, ==, w.stag);
  win_check(&w, 0, MW_OFF + 16, 48, want);
  g_assert_false(stag_valid(w.stag));

  victim_load(&v);
  peer_write_at(&v, w.stag, (uint64_t) (uintptr_t) (w.mem + MW_OFF), 16);
  expect_terminate(&v, RNICPI_AE_WRITE_ACCESS, 1, 1, 0x00, two_ids, two_flushed, 2);
  win_check(&w, 0, MW_OFF + 16, 48, want);
  win_free(&w);
  victim_free(&v);
}

static void
test_mw_read_sink_unbound(void)
{
  g_test_summary("A Local Invalidate (no fence) of a window whose Read is outstanding unbinds "
                 "it before the Read Response comes: the Response is refused as ours to answer, "
                 "DDP tagged, invalid STag (1/1/0), the Read completes "
                 "RNICPI_WC_LOC_PROT_ERR and not a byte lands in the window");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  win_t w;
  win_new(&v, &w, RNICPI_ACCESS_REMOTE_WRITE, 0);
  rnicpi_send_wr_t inv = { .wr_id = 0xf1, .opcode = RNICPI_WR_LOCAL_INV,
                           .flags = RNICPI_WR_SIGNALED, .invalidate_rkey = w.stag };
  uint64_t at = (uint64_t) (uintptr_t) (w.mem + MW_OFF);
  rnicpi_sge_t sge = { .addr = at, .length = 32, .lkey = w.stag };
  rnicpi_send_wr_t rd = { .wr_id = 0x4e, .opcode = RNICPI_WR_RDMA_READ,
                          .flags = RNICPI_WR_SIGNALED | RNICPI_WR_SINK_MW, .sg_list = &sge,
                          .num_sge = 1, .remote_addr = 0x9000, .rkey = 0x4400 };
  g_assert_cmpint(P->data->post_send(v.qp, &rd), ==, RNICPI_OK);
  g_assert_cmpint(P->data->post_send(v.qp, &inv), ==, RNICPI_OK);
  static uint8_t t[65536];
  do
    peer_next_fpdu(v.peer, t);
  while ((t[0] & 0x80) != 0 || (t[1] & 0x0f) != 0x1);
  for (int i = 0; i < 5000 && stag_valid(w.stag); i++)
    g_usleep(1000);
  g_assert_false(stag_valid(w.stag));
  uint8_t u[14 + 32];
  size_t h = tagged(u, 0x2, w.stag, at);
  memset(u + h, 0xab, 32);
  peer_fpdu(v.peer, v.crc, u, h + 32, FALSE);
  g_assert_cmpint(peer_next_terminate(&v, t), >=, 18 + 4);
  g_assert_cmphex(t[18], ==, 0x11);
  g_assert_cmphex(t[19], ==, 0x00);
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  expect_async(RNICPI_AE_LOCAL, 1, 1, 0x00);
  rnicpi_wc_t wc = wc_expect(v.scq, 0x4e, RNICPI_WC_LOC_PROT_ERR);
  wc = wc_expect(v.scq, 0xf1, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_LOCAL_INV);
  win_check(&w, 0, 0, 0, NULL);
  win_free(&w);
  victim_free(&v);
}

static void
test_zero_length_read_response(void)
{
  g_test_summary("The victim's delivery fence (a zero-length RDMA Read) answered by a "
                 "zero-length Read Response with another STag and TO: RFC 5041 5.2 has them "
                 "unchecked, so the Send behind the fence completes and nothing terminates");
  if (!placed) {
    g_test_skip("needs delivery fences (ITAPI_IWARP_COMPLETION=placed, iwarp-hostile-placed)");
    return;
  }
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  send_post(&v, 0x21);
  static uint8_t u[65536];
  int len;
  do {
    len = peer_next_fpdu(v.peer, u);
    g_assert_cmpint(len, >=, 14);
  } while ((u[0] & 0x80) != 0 || (u[1] & 0x0f) != 0x1);
  size_t n = tagged(u, 0x2, 0xdead00, 12345);
  peer_fpdu(v.peer, v.crc, u, n, FALSE);
  wc_expect(v.scq, 0x21, RNICPI_WC_SUCCESS);
  g_assert_cmpint(P->queue->qp_state(v.qp), ==, RNICPI_QPS_RTS);
  victim_free(&v);
}

/* The peer reads the victim's next FPDU, which must be an RDMA Read
 * Request (queue 1) of @size bytes; its Data Sink STag and TO. */
static void
peer_read_request(victim_t *v, uint32_t size, uint32_t *sink, uint64_t *sink_to)
{
  static uint8_t u[65536];
  g_assert_cmpint(peer_next_fpdu(v->peer, u), ==, 18 + 28);
  g_assert_cmphex(u[0] & 0x80, ==, 0);
  g_assert_cmphex(u[1] & 0x0f, ==, 0x1);
  uint32_t qn, st, sz;
  uint64_t to;
  memcpy(&qn, u + 6, 4);
  memcpy(&st, u + 18, 4);
  memcpy(&to, u + 22, 8);
  memcpy(&sz, u + 30, 4);
  g_assert_cmpuint(ntohl(qn), ==, 1);
  g_assert_cmpuint(ntohl(sz), ==, size);
  *sink = ntohl(st);
  *sink_to = GUINT64_FROM_BE(to);
}

/* The peer reads the victim's 8-byte Send, then nothing comes for 300 ms. */
static void
peer_send_then_quiet(victim_t *v)
{
  static uint8_t u[65536];
  g_assert_cmpint(peer_next_fpdu(v->peer, u), ==, 18 + 8);
  g_assert_cmphex(u[1] & 0x0f, ==, 0x3);
  struct pollfd p = { .fd = v->peer, .events = POLLIN };
  g_assert_cmpint(poll(&p, 1, 300), ==, 0);
}

static void
test_fence_within_ord(void)
{
  g_test_summary("A delivery fence is a Read and waits for an ORD credit: with ORD 1 (the peer "
                 "announced IRD 4 but, as RFC 6581 has it, takes no more Reads than our ORD) "
                 "and the consumer's Read unanswered, the fence of a Send goes only once that "
                 "Read's Response came; the Read and the Send complete successfully");
  if (!placed) {
    g_test_skip("needs delivery fences (ITAPI_IWARP_COMPLETION=placed, iwarp-hostile-placed)");
    return;
  }
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) (v.buf + 256), .length = 64,
                       .lkey = v.mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = 0x31, .opcode = RNICPI_WR_RDMA_READ,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = 0x5000, .rkey = 0x4242 };
  g_assert_cmpint(P->data->post_send(v.qp, &wr), ==, RNICPI_OK);
  send_post(&v, 0x21);
  uint32_t sink;
  uint64_t sink_to;
  peer_read_request(&v, 64, &sink, &sink_to);
  peer_send_then_quiet(&v); /* no fence: the Read holds the one credit */
  uint8_t u[128];
  size_t n = tagged(u, 0x2, sink, sink_to);
  for (size_t i = 0; i < 64; i++)
    u[n + i] = (uint8_t) (0xa0 + i);
  peer_fpdu(v.peer, v.crc, u, n + 64, FALSE);
  wc_expect(v.scq, 0x31, RNICPI_WC_SUCCESS);
  g_assert_cmpmem(v.buf + 256, 64, u + n, 64);
  peer_read_request(&v, 0, &sink, &sink_to); /* now the fence */
  peer_fpdu(v.peer, v.crc, u, tagged(u, 0x2, sink, sink_to), FALSE);
  wc_expect(v.scq, 0x21, RNICPI_WC_SUCCESS);
  g_assert_cmpint(P->queue->qp_state(v.qp), ==, RNICPI_QPS_RTS);
  victim_free(&v);
}

static void
test_fence_no_ord(void)
{
  g_test_summary("With ORD 0 the victim sends no delivery fence, a Read the peer (its IRD "
                 "sized to our ORD, RFC 6581) would refuse although it announced IRD 4: a Send "
                 "completes at transmission, as it would without placed completions");
  if (!placed) {
    g_test_skip("needs delivery fences (ITAPI_IWARP_COMPLETION=placed, iwarp-hostile-placed)");
    return;
  }
  victim_t v;
  victim_new(&v, REGION);
  victim_ord = 0;
  victim_connect(&v, FALSE);
  victim_ord = 1;
  send_post(&v, 0x21);
  peer_send_then_quiet(&v);
  wc_expect(v.scq, 0x21, RNICPI_WC_SUCCESS);
  g_assert_cmpint(P->queue->qp_state(v.qp), ==, RNICPI_QPS_RTS);
  victim_free(&v);
}

/* The victim disconnects; the peer reads its close fence, a zero-length
 * RDMA Read Request, and checks that no FIN came with it.  Returns the
 * Read's Data Sink STag. */
static uint32_t
peer_close_fence(victim_t *v)
{
  g_assert_cmpint(P->cm->disconnect(v->qp, NULL, 0), ==, RNICPI_OK);
  uint32_t sink;
  uint64_t sink_to;
  peer_read_request(v, 0, &sink, &sink_to);
  /* Nothing else, the FIN included, before the peer answers. */
  struct pollfd p = { .fd = v->peer, .events = POLLIN };
  g_assert_cmpint(poll(&p, 1, 300), ==, 0);
  return sink;
}

/* The close ends orderly: the victim's FIN and nothing before it (no
 * Terminate), then DISCONNECTED once the peer closes too, with no
 * asynchronous event; the victim is freed. */
static void
close_ends_orderly(victim_t *v)
{
  uint8_t b;
  g_assert_cmpuint(peer_read(v->peer, &b, 1), ==, 0);
  shutdown(v->peer, SHUT_WR);
  wait_cm(RNICPI_CM_DISCONNECTED, 0xc0);
  g_assert_cmpint(P->queue->qp_state(v->qp), ==, RNICPI_QPS_ERROR);
  g_assert_null(g_async_queue_try_pop(asyncq));
  victim_free(v);
}

static void
test_close_fence(void)
{
  g_test_summary("An orderly close: the victim's FIN waits for the answer to a zero-length "
                 "RDMA Read sent behind its last message, since the peer answers it only once "
                 "it has sent what it was sending (Linux siw fails a Send whose last FPDU is "
                 "out when a FIN comes in before it completes); then FIN, DISCONNECTED");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  uint32_t sink = peer_close_fence(&v);
  uint8_t u[64];
  peer_fpdu(v.peer, v.crc, u, tagged(u, 0x2, sink, 0), FALSE);
  close_ends_orderly(&v);
}

static void
test_close_fence_no_ord(void)
{
  g_test_summary("An orderly close with ORD 0: no close fence, a Read the peer (its IRD sized "
                 "to our ORD, RFC 6581) would refuse with a Terminate although it announced "
                 "IRD 4; the FIN comes first, then DISCONNECTED, no Terminate");
  victim_t v;
  victim_new(&v, REGION);
  victim_ord = 0;
  victim_connect(&v, FALSE);
  victim_ord = 1;
  g_assert_cmpint(P->cm->disconnect(v.qp, NULL, 0), ==, RNICPI_OK);
  uint8_t b;
  g_assert_cmpuint(peer_read(v.peer, &b, 1), ==, 0); /* the FIN, nothing before it */
  shutdown(v.peer, SHUT_WR);
  wait_cm(RNICPI_CM_DISCONNECTED, 0xc0);
  g_assert_null(g_async_queue_try_pop(asyncq));
  victim_free(&v);
}

static void
test_close_fence_stale(void)
{
  g_test_summary("The close fence answered as Linux siw answers a zero-length Read when its "
                 "last request had data: a Read Response carrying 16 bytes of that request's; "
                 "they are dropped, and the close ends in FIN and DISCONNECTED, no Terminate");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  uint32_t sink = peer_close_fence(&v);
  uint8_t u[64];
  size_t n = tagged(u, 0x2, sink, 0);
  memset(u + n, 0x5a, 16);
  peer_fpdu(v.peer, v.crc, u, n + 16, FALSE);
  close_ends_orderly(&v);
}

static void
test_close_fence_stale_pieces(void)
{
  g_test_summary("The close fence answered as Linux siw answered it in the lab: three Read "
                 "Response FPDUs of 1,436 stale bytes each, the last one last, the first cut "
                 "in two by a pause so the victim places its payload in two receives; the "
                 "dropped bytes keep their place in the stream (a second receive that took "
                 "the whole payload again took the next FPDU's header as payload and junk as "
                 "a header, and sent a Terminate), and "
                 "the close ends in FIN and DISCONNECTED, no Terminate");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  uint32_t sink = peer_close_fence(&v);
  enum { STALE = 1436 };
  static uint8_t f[3 * (STALE + 64)], u[STALE + 64];
  size_t n = 0;
  for (int i = 0; i < 3; i++) {
    size_t h = tagged(u, 0x2, sink, 0);
    if (i < 2)
      u[0] &= (uint8_t) ~0x40; /* not last */
    memset(u + h, 0x30 + i, STALE);
    n += fpdu_build(f + n, v.crc, u, h + STALE, FALSE);
  }
  peer_write(v.peer, f, 700);
  g_usleep(100 * 1000); /* the victim takes the first 700 bytes alone */
  peer_write(v.peer, f + 700, n - 700);
  close_ends_orderly(&v);
}

static void
test_close_fence_freed(void)
{
  g_test_summary("The consumer frees a QP whose orderly close waits for nothing but its "
                 "close fence: its FIN goes at once, with no Terminate");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, FALSE);
  peer_close_fence(&v);
  g_assert_cmpint(P->queue->qp_destroy(v.qp), ==, RNICPI_OK);
  uint8_t b;
  g_assert_cmpuint(peer_read(v.peer, &b, 1), ==, 0); /* a FIN, no Terminate first */
  close(v.peer);
  g_assert_cmpint(P->mem->mr_dereg(v.mr), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(v.scq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(v.rcq), ==, RNICPI_OK);
  g_assert_cmpint(P->device->pd_free(v.pd), ==, RNICPI_OK);
  g_free(v.buf);
}

/* A zero-length Read Request naming @sink as its Data Sink, framed at @f. */
static size_t
zero_read_build(uint8_t *f, gboolean crc, uint32_t msn, uint32_t sink)
{
  uint8_t u[64];
  return fpdu_build(f, crc, u, read_request_ulpdu(u, msn, sink, 0, 0, 0), FALSE);
}

static void
test_zero_reads_beyond_ird(void)
{
  g_test_summary("Two zero-length RDMA Read Requests in one segment to a victim whose IRD is 1: "
                 "the second is one more Read in flight than the IRD, zero-length or not (RFC "
                 "5040 5.2.3): RDMAP remote operation, catastrophic for the stream (0/2/7), "
                 "not a queue that grows while the peer does not read its answers");
  victim_t v;
  victim_ready(&v, FALSE);
  /* One write: the victim reads both before it answers the first. */
  uint8_t f[128];
  size_t n = zero_read_build(f, v.crc, 1, 0x5100);
  n += zero_read_build(f + n, v.crc, 2, 0x5200);
  peer_write(v.peer, f, n);
  expect_terminate(&v, RNICPI_AE_PROTOCOL, 0, 2, 0x07, two_ids, two_flushed, 2);
  victim_free(&v);
}

static void
test_zero_read_ird_zero(void)
{
  g_test_summary("A victim whose consumer set IRD 0 announces IRD 1 (so that a peer may "
                 "fence): a zero-length RDMA Read Request is answered by a zero-length Read "
                 "Response, nothing terminates; a 16-byte Read Request after it gets RDMAP "
                 "remote operation, catastrophic for the stream (0/2/7)");
  victim_t v;
  victim_new(&v, REGION);
  victim_ird = 0;
  victim_connect(&v, FALSE);
  victim_ird = 1;
  uint8_t f[128], u[64];
  peer_write(v.peer, f, zero_read_build(f, v.crc, 1, 0x5100));
  static uint8_t r[65536];
  g_assert_cmpint(peer_next_fpdu(v.peer, r), ==, 14);
  g_assert_cmphex(r[0] & 0xc0, ==, 0xc0); /* tagged, last */
  g_assert_cmphex(r[1] & 0x0f, ==, 0x2);  /* Read Response */
  uint32_t stag;
  memcpy(&stag, r + 2, 4);
  g_assert_cmphex(ntohl(stag), ==, 0x5100);
  g_assert_cmpint(P->queue->qp_state(v.qp), ==, RNICPI_QPS_RTS);
  peer_write(v.peer, f,
             fpdu_build(f, v.crc, u, read_request_ulpdu(u, 2, 0x5200, 16, (uint32_t) v.mr->rkey, 0),
                        FALSE));
  peer_next_terminate(&v, r);
  g_assert_cmphex(r[18], ==, 0x02);
  g_assert_cmphex(r[19], ==, 0x07);
  uint8_t b;
  g_assert_cmpuint(peer_read(v.peer, &b, 1), ==, 0);
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  victim_free(&v);
}

static void
test_byte_by_byte(void)
{
  g_test_summary("Two Sends and three zero-length RDMA Reads written one byte per TCP segment "
                 "(every header, payload and CRC split across reads): both Sends land with "
                 "their bytes, and the Reads are answered in order, each with the Data Sink "
                 "it named");
  victim_t v;
  victim_new(&v, REGION);
  victim_connect(&v, TRUE);
  recv_post(&v, 0, 64, 0x11);
  recv_post(&v, 64, 64, 0x12);
  uint8_t f[512], u[64];
  size_t n = 0, h = untagged(u, 0x3, 0, 1, 0, TRUE);
  memcpy(u + h, "eight b.", 8);
  n += fpdu_build(f + n, v.crc, u, h + 8, FALSE);
  n += zero_read_build(f + n, v.crc, 1, 0x5100);
  n += zero_read_build(f + n, v.crc, 2, 0x5100);
  h = untagged(u, 0x3, 0, 2, 0, TRUE);
  memcpy(u + h, "thirteen byte", 13); /* with a pad of 1 */
  n += fpdu_build(f + n, v.crc, u, h + 13, FALSE);
  n += zero_read_build(f + n, v.crc, 3, 0x5200);
  int one = 1;
  setsockopt(v.peer, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  for (size_t i = 0; i < n; i++) {
    peer_write(v.peer, f + i, 1);
    g_usleep(100);
  }
  rnicpi_wc_t wc = wc_expect(v.rcq, 0x11, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, 8);
  g_assert_cmpmem(v.buf, 8, "eight b.", 8);
  wc = wc_expect(v.rcq, 0x12, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, 13);
  g_assert_cmpmem(v.buf + 64, 13, "thirteen byte", 13);
  static uint8_t r[65536];
  const uint32_t sinks[] = { 0x5100, 0x5100, 0x5200 };
  for (int i = 0; i < 3; i++) {
    int len = peer_next_fpdu(v.peer, r);
    g_assert_cmpint(len, ==, 14);
    g_assert_cmphex(r[1] & 0x0f, ==, 0x2); /* Read Response */
    uint32_t stag;
    memcpy(&stag, r + 2, 4);
    g_assert_cmphex(ntohl(stag), ==, sinks[i]);
  }
  g_assert_cmpint(P->queue->qp_state(v.qp), ==, RNICPI_QPS_RTS);
  victim_free(&v);
}

static size_t
frame_immediate_data(const victim_t *v, uint8_t *u)
{
  (void) v;
  size_t n = untagged(u, 0x8, 0, 1, 0, TRUE);
  memset(u + n, 0xee, 8);
  return n + 8;
}

static void
test_unknown_opcode(void)
{
  g_test_summary("An RDMAP opcode this connection does not speak (0x8, RFC 7306 Immediate "
                 "Data, not negotiated): RDMAP remote operation, invalid opcode (0/2/6)");
  bad_frame_terminates(frame_immediate_data, RNICPI_AE_BAD_OPCODE, 0, 2, 0x06);
}

/* An RFC 7306 Fetch and Add of @add at @stag/@to, Request Identifier @id,
 * framed at @u; its length. */
static size_t
atomic_fetch_add_ulpdu(uint8_t *u, uint32_t msn, uint32_t id, uint32_t stag, uint64_t to,
                       uint64_t add)
{
  size_t n = untagged(u, 0xa, 1, msn, 0, TRUE);
  uint32_t w[3] = { htonl(0x0), htonl(id), htonl(stag) }; /* opcode 0: Fetch and Add */
  uint64_t q[5] = { GUINT64_TO_BE(to), GUINT64_TO_BE(add), 0, 0, G_MAXUINT64 };
  memcpy(u + n, w, sizeof(w));
  memcpy(u + n + sizeof(w), q, sizeof(q));
  return n + sizeof(w) + sizeof(q);
}

static void
test_atomic_host_misaligned(void)
{
  g_test_summary("An RFC 7306 Fetch and Add at TO 8 of a zero-based region registered 4 bytes "
                 "past an 8-byte boundary: the TO is aligned, the memory it names is not, so "
                 "no CPU atomic runs there (undefined, a split lock); Terminate RDMAP remote "
                 "operation, catastrophic for the stream (0/2/7) as for a misaligned TO (RFC "
                 "7306 8.2), the consumer told of its own memory (LOCAL), the word unchanged");
  /* A device of its own, opened with the RFC 7306 option. */
  rnicpi_dev_t *saved = dev;
  g_setenv("ITAPI_IWARP_RFC7306", "1", TRUE);
  g_assert_cmpint(P->device->open("iwarp0", &ups, NULL, &dev), ==, RNICPI_OK);
  g_unsetenv("ITAPI_IWARP_RFC7306");
  victim_t v;
  victim_new(&v, REGION);
  uint8_t *odd = v.buf + REGION + 4; /* g_malloc memory is 8-byte aligned */
  g_assert_cmpuint((uintptr_t) odd % 8, ==, 4);
  for (int i = 0; i < 32; i++)
    odd[i] = (uint8_t) (0xa0 + i);
  uint8_t before[32];
  memcpy(before, odd, sizeof(before));
  rnicpi_mr_t *mr;
  rnicpi_mr_attr_t ma = { .addr = odd, .length = 32, .iova = 0,
                          .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                                    RNICPI_ACCESS_ATOMIC };
  g_assert_cmpint(P->mem->mr_reg(v.pd, &ma, &mr), ==, RNICPI_OK);
  peer_rfc7306 = TRUE;
  victim_connect(&v, FALSE);
  peer_rfc7306 = FALSE;
  g_assert_true(to_iw_qp(v.qp)->rfc7306);
  victim_load(&v);
  uint8_t u[128];
  size_t n = atomic_fetch_add_ulpdu(u, 1, 0x1234, (uint32_t) mr->rkey, 8, 1);
  peer_fpdu(v.peer, v.crc, u, n, FALSE);
  expect_terminate(&v, RNICPI_AE_LOCAL, 0, 2, 0x07, two_ids, two_flushed, 2);
  g_assert_cmpmem(odd, sizeof(before), before, sizeof(before));
  g_assert_cmpint(P->mem->mr_dereg(mr), ==, RNICPI_OK);
  victim_free(&v);
  P->device->close(dev);
  dev = saved;
}

/* ---- MPA Requests -------------------------------------------------------- */

static int
mpa_connect(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(listen_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  g_assert_cmpint(connect(fd, (struct sockaddr *) &sin, sizeof(sin)), ==, 0);
  return fd;
}

static void
mpa_request(int fd, const char *key, uint8_t flags, uint8_t rev, uint16_t pd_len,
            size_t pd_sent)
{
  uint8_t f[20 + 1024] = { 0 };
  memcpy(f, key, 16);
  f[16] = flags;
  f[17] = rev;
  f[18] = (uint8_t) (pd_len >> 8);
  f[19] = (uint8_t) pd_len;
  if (rev == 2 && pd_sent >= 4) {
    f[20] = 0x80;
    f[21] = 4;
    f[22] = 0x80;
    f[23] = 4;
  }
  peer_write(fd, f, 20 + pd_sent);
}

/* The victim closes without a reply (or after a Reject, checked by the
 * caller), and never offers the request to its consumer. */
static void
expect_refused(int fd)
{
  uint8_t b[64];
  gint64 t0 = g_get_monotonic_time();
  size_t n = peer_read(fd, b, sizeof(b));
  g_assert_cmpuint(n, ==, 0);
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 4 * G_USEC_PER_SEC);
  close(fd);
  rnicpi_cm_event_t *ev = g_async_queue_timeout_pop(cmq, 100000);
  if (ev != NULL)
    g_assert_cmpint(ev->type, !=, RNICPI_CM_CONNECT_REQUEST);
  g_free(ev);
}

static void
test_mpa_bad_key(void)
{
  g_test_summary("An MPA Request with the wrong key is refused: the connection closes");
  int fd = mpa_connect();
  mpa_request(fd, "MPA ID Rep Frame", 0, 1, 0, 0);
  expect_refused(fd);
}

static void
test_mpa_bad_length(void)
{
  g_test_summary("An MPA Request announcing more than 512 bytes of private data is refused");
  int fd = mpa_connect();
  mpa_request(fd, "MPA ID Req Frame", 0, 1, 600, 600);
  expect_refused(fd);
}

static void
test_mpa_bad_rev(void)
{
  g_test_summary("An MPA Request of a revision not spoken (0, 3) is refused");
  int fd = mpa_connect();
  mpa_request(fd, "MPA ID Req Frame", 0, 3, 0, 0);
  expect_refused(fd);
}

static void
test_mpa_markers(void)
{
  g_test_summary("An RFC 6581 MPA Request asking for markers gets a Reply with R set (and, as "
                 "RFC 6581 10 asks of an enhanced request's reject, the S bit and a control "
                 "word), then a close");
  int fd = mpa_connect();
  mpa_request(fd, "MPA ID Req Frame", 0x80 | 0x10, 2, 4, 4);
  uint8_t rep[24];
  g_assert_cmpuint(peer_read(fd, rep, 20), ==, 20);
  g_assert_cmpmem(rep, 16, "MPA ID Rep Frame", 16);
  g_assert_cmphex(rep[16] & 0x30, ==, 0x30);
  g_assert_cmpuint((size_t) rep[18] << 8 | rep[19], ==, 4);
  g_assert_cmpuint(peer_read(fd, rep + 20, 4), ==, 4);
  expect_refused(fd);
}

static void
test_mpa_pdata_beyond_frame(void)
{
  g_test_summary("An MPA Request whose private data stops short of its PD_Length, then "
                 "FIN: refused");
  int fd = mpa_connect();
  mpa_request(fd, "MPA ID Req Frame", 0, 1, 100, 20);
  shutdown(fd, SHUT_WR);
  expect_refused(fd);
}

static void
test_mpa_pdata_stall(void)
{
  g_test_summary("An MPA Request whose private data never completes: closed after "
                 "ITAPI_IWARP_MPA_TIMEOUT_MS (500 ms here)");
  int fd = mpa_connect();
  mpa_request(fd, "MPA ID Req Frame", 0, 1, 100, 20);
  expect_refused(fd);
}

static void
test_rtr_wait_terminate(void)
{
  g_test_summary("The victim accepts an RFC 6581 Request offering the Write RTR; the "
                 "initiator's first FPDU is a Terminate instead (RFC 6581 9.1: it refuses "
                 "the reply): the victim ends the connection BROKEN and answers with its FIN "
                 "alone, no Terminate of its own");
  victim_t v;
  victim_new(&v, REGION);
  int fd = mpa_connect();
  mpa_request(fd, "MPA ID Req Frame", 0x10, 2, 4, 4);
  rnicpi_cm_event_t *ev;
  do {
    ev = g_async_queue_timeout_pop(cmq, 10 * G_USEC_PER_SEC);
    g_assert_nonnull(ev);
    if (ev->type == RNICPI_CM_CONNECT_REQUEST)
      break;
    g_free(ev);
  } while (TRUE);
  rnicpi_conn_param_t cp = { .ird = 1, .ord = 1 };
  g_assert_cmpint(P->cm->accept(v.qp, ev->conn_id, &cp), ==, RNICPI_OK);
  g_free(ev);
  uint8_t rep[24];
  g_assert_cmpuint(peer_read(fd, rep, sizeof(rep)), ==, sizeof(rep));
  g_assert_cmpmem(rep, 16, "MPA ID Rep Frame", 16);
  /* Terminate: LLP (MPA) layer, code 6 (insufficient IRD). */
  uint8_t u[64];
  size_t n = untagged(u, 0x7, 2, 1, 0, TRUE);
  u[n] = 0x20;
  u[n + 1] = 0x06;
  u[n + 2] = 0;
  u[n + 3] = 0;
  peer_fpdu(fd, (rep[16] & 0x40) != 0, u, n + 4, FALSE);
  uint8_t b[64];
  g_assert_cmpuint(peer_read(fd, b, sizeof(b)), ==, 0);
  wait_cm(RNICPI_CM_BROKEN, 0xc0);
  expect_async(RNICPI_AE_REMOTE, 2, 0, 0x06);
  g_assert_cmpint(P->queue->qp_state(v.qp), ==, RNICPI_QPS_ERROR);
  close(fd);
  victim_free(&v);
}

/* ---- connection requests the listener holds ---------------------------- */

/* The requests the victim's listener holds, read under the device's CM lock. */
static uint32_t
listener_held(void)
{
  iw_dev_t *d = to_iw_dev(dev);
  g_mutex_lock(&d->lock);
  uint32_t n = to_iw_listen(listener)->held;
  g_mutex_unlock(&d->lock);
  return n;
}

/* Wait (5 s at most) until the listener holds @n requests. */
static void
wait_held(uint32_t n)
{
  for (int i = 0; i < 500 && listener_held() != n; i++)
    g_usleep(10000);
  g_assert_cmpuint(listener_held(), ==, n);
}

/* The CPU time, in milliseconds, that the device's progress thread (named
 * iwarp0-progress, /proc/self/task/<tid>/comm) has used. */
static guint64
progress_cpu_ms(void)
{
  guint64 ticks = 0;
  g_autoptr(GDir) d = g_dir_open("/proc/self/task", 0, NULL);
  g_assert_nonnull(d);
  for (const char *t; (t = g_dir_read_name(d)) != NULL;) {
    g_autofree char *cp = g_strdup_printf("/proc/self/task/%s/comm", t);
    g_autofree char *sp = g_strdup_printf("/proc/self/task/%s/stat", t);
    g_autofree char *comm = NULL, *stat = NULL;
    if (!g_file_get_contents(cp, &comm, NULL, NULL) || !g_str_has_prefix(comm, "iwarp0-progress") ||
        !g_file_get_contents(sp, &stat, NULL, NULL))
      continue;
    /* After "(comm) ": state, then fields 4 to 13; utime and stime are 14 and 15. */
    g_auto(GStrv) f = g_strsplit(strrchr(stat, ')') + 2, " ", 0);
    g_assert_cmpuint(g_strv_length(f), >, 13);
    ticks += g_ascii_strtoull(f[11], NULL, 10) + g_ascii_strtoull(f[12], NULL, 10);
  }
  return ticks * 1000 / (guint64) sysconf(_SC_CLK_TCK);
}

/* A CONNECT_REQUEST comes within @ms (events of earlier tests' victims
 * are passed over); the request is rejected.  Returns how long it took. */
static gint64
expect_request(int ms)
{
  gint64 t0 = g_get_monotonic_time(), end = t0 + (gint64) ms * 1000;
  rnicpi_cm_event_t *ev;
  while ((ev = g_async_queue_timeout_pop(cmq, (guint64) MAX(end - g_get_monotonic_time(), 1))) !=
           NULL && ev->type != RNICPI_CM_CONNECT_REQUEST)
    g_free(ev);
  gint64 took = g_get_monotonic_time() - t0;
  g_assert_nonnull(ev);
  g_assert_cmpint(P->cm->reject(dev, ev->conn_id, NULL, 0), ==, RNICPI_OK);
  g_free(ev);
  return took;
}

enum { FLOOD = IW_LISTEN_PENDING_MAX + 64 };

static void
test_request_flood(void)
{
  g_test_summary("IW_LISTEN_PENDING_MAX + 64 TCP connections that never send an MPA Request: "
                 "the listener holds 1024 requests and closes the oldest still reading for "
                 "each one past that (the first 64 connections, at once, not after the MPA "
                 "timeout), and a client that sends its MPA Request is offered to the consumer "
                 "within a second");
  struct rlimit saved, more;
  g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &saved), ==, 0);
  more = saved;
  more.rlim_cur = 2 * FLOOD + 256; /* both ends in this process */
  if (saved.rlim_max < more.rlim_cur) {
    g_test_skip("the hard limit on file descriptors is below 2 * 1088 + 256");
    return;
  }
  if (saved.rlim_cur < more.rlim_cur)
    g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &more), ==, 0);
  /* No request times out during the test: only the bound closes them. */
  uint64_t saved_timeout = iw_config.mpa_timeout_us;
  iw_config.mpa_timeout_us = 60 * G_USEC_PER_SEC;
  wait_held(0);
  static int fl[FLOOD];
  for (int i = 0; i < FLOOD; i++)
    fl[i] = mpa_connect();
  /* The oldest 64 see their connection closed, the others not. */
  int closed = 0;
  for (int tries = 0; tries < 500 && closed < FLOOD - (int) IW_LISTEN_PENDING_MAX; tries++) {
    closed = 0;
    for (int i = 0; i < FLOOD; i++) {
      uint8_t b;
      if (recv(fl[i], &b, 1, MSG_DONTWAIT | MSG_PEEK) == 0)
        closed++;
    }
    if (closed < FLOOD - (int) IW_LISTEN_PENDING_MAX)
      g_usleep(10000);
  }
  g_test_message("%d of %d connections closed by the listener", closed, FLOOD);
  for (int i = 0; i < FLOOD; i++) {
    uint8_t b;
    ssize_t r = recv(fl[i], &b, 1, MSG_DONTWAIT | MSG_PEEK);
    if (i < FLOOD - (int) IW_LISTEN_PENDING_MAX)
      g_assert_cmpint(r, ==, 0);
    else
      g_assert_cmpint(r, ==, -1);
  }
  g_assert_cmpuint(listener_held(), ==, IW_LISTEN_PENDING_MAX);
  int good = mpa_connect();
  mpa_request(good, "MPA ID Req Frame", 0, 1, 0, 0);
  gint64 took = expect_request(1000);
  g_test_message("the well-behaved client's request came after %.1f ms", took / 1e3);
  close(good);
  for (int i = 0; i < FLOOD; i++)
    close(fl[i]);
  wait_held(0);
  iw_config.mpa_timeout_us = saved_timeout;
  g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &saved), ==, 0);
}

/* Leave this process no file descriptor: a limit just above the highest
 * in use, the holes below it filled with /dev/null (returned, for
 * fds_restore); the limit before goes to @saved. */
static GArray *
fds_exhaust(struct rlimit *saved)
{
  int top = 0;
  {
    g_autoptr(GDir) d = g_dir_open("/proc/self/fd", 0, NULL);
    for (const char *n; (n = g_dir_read_name(d)) != NULL;)
      top = MAX(top, atoi(n));
  }
  g_assert_cmpint(getrlimit(RLIMIT_NOFILE, saved), ==, 0);
  struct rlimit none = *saved;
  none.rlim_cur = (rlim_t) top + 1;
  g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &none), ==, 0);
  GArray *fill = g_array_new(FALSE, FALSE, sizeof(int));
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;)
    g_array_append_val(fill, fd); /* top + 1 at most */
  g_assert_cmpint(errno, ==, EMFILE);
  return fill;
}

static void
fds_restore(const struct rlimit *saved, GArray *fill)
{
  for (guint i = 0; i < fill->len; i++)
    close(g_array_index(fill, int, i));
  g_array_free(fill, TRUE);
  g_assert_cmpint(setrlimit(RLIMIT_NOFILE, saved), ==, 0);
}

/* @n TCP sockets, made now (a connect needs no new descriptor). */
static void
sockets_new(int *fd, int n)
{
  for (int i = 0; i < n; i++)
    g_assert_cmpint((fd[i] = socket(AF_INET, SOCK_STREAM, 0)), >=, 0);
}

static void
sockets_connect(int *fd, int n)
{
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(listen_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  for (int i = 0; i < n; i++)
    g_assert_cmpint(connect(fd[i], (struct sockaddr *) &sin, sizeof(sin)), ==, 0);
}

enum { QUEUED = 4, SILENT = 8 };

static void
test_accept_out_of_fds(void)
{
  g_test_summary("Connections queued while the process has no file descriptor left and the "
                 "listener holds no request: accept() fails with EMFILE and the listener rests "
                 "instead of waking the progress thread again at once (under 200 ms of its "
                 "CPU in that second, not all of it); once descriptors are free it accepts "
                 "them, and a request sent on one is offered to the consumer");
  wait_held(0);
  int cl[QUEUED];
  sockets_new(cl, QUEUED);
  struct rlimit saved;
  guint64 cpu0 = progress_cpu_ms();
  GArray *fill = fds_exhaust(&saved);
  sockets_connect(cl, QUEUED);
  g_usleep(G_USEC_PER_SEC);
  fds_restore(&saved, fill);
  guint64 cpu = progress_cpu_ms() - cpu0;
  g_test_message("the progress thread used %" G_GUINT64_FORMAT " ms of CPU in the second "
                 "without descriptors", cpu);
  g_assert_cmpuint(cpu, <, 200);
  wait_held(QUEUED);
  mpa_request(cl[0], "MPA ID Req Frame", 0, 1, 0, 0);
  gint64 took = expect_request(1000);
  g_test_message("the request came %.1f ms after it was sent", took / 1e3);
  for (int i = 0; i < QUEUED; i++)
    close(cl[i]);
  wait_held(0);
}

static void
test_accept_out_of_fds_evicts(void)
{
  g_test_summary("With 8 connections held that never send an MPA Request and no file "
                 "descriptor left, 4 new connections take the places of the 4 oldest silent "
                 "ones (closed at once), and a request sent on a new one is offered to the "
                 "consumer within a second");
  wait_held(0);
  int silent[SILENT], cl[QUEUED];
  for (int i = 0; i < SILENT; i++)
    silent[i] = mpa_connect();
  wait_held(SILENT);
  sockets_new(cl, QUEUED);
  struct rlimit saved;
  GArray *fill = fds_exhaust(&saved);
  sockets_connect(cl, QUEUED);
  mpa_request(cl[0], "MPA ID Req Frame", 0, 1, 0, 0);
  gint64 took = expect_request(1000);
  fds_restore(&saved, fill);
  g_test_message("the request came %.1f ms after it was sent", took / 1e3);
  for (int i = 0; i < SILENT; i++) {
    uint8_t b;
    struct pollfd p = { .fd = silent[i], .events = POLLIN };
    g_assert_cmpint(poll(&p, 1, i < QUEUED ? 1000 : 0), ==, i < QUEUED ? 1 : 0);
    if (i < QUEUED)
      g_assert_cmpint(recv(silent[i], &b, 1, 0), ==, 0);
    close(silent[i]);
  }
  for (int i = 0; i < QUEUED; i++)
    close(cl[i]);
  wait_held(0);
}

static void
test_mpa_rev2_no_control(void)
{
  g_test_summary("A Rev 2 MPA Request too short for the RFC 6581 control word is refused");
  int fd = mpa_connect();
  mpa_request(fd, "MPA ID Req Frame", 0x10, 2, 2, 2);
  expect_refused(fd);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  if (argc > 1)
    listen_port = (uint16_t) atoi(argv[1]);
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ 0x82f63b78 : c >> 1;
    crc_table[i] = c;
  }
  g_setenv("ITAPI_IWARP_MPA_TIMEOUT_MS", "500", TRUE);
  P = &rnicpi_builtin_iwarp;
  cmq = g_async_queue_new();
  asyncq = g_async_queue_new();
  g_assert_cmpint(P->device->open("iwarp0", &ups, NULL, &dev), ==, RNICPI_OK);
  rnicpi_caps_t caps = { .size = sizeof(caps) };
  g_assert_cmpint(P->device->query(dev, &caps), ==, RNICPI_OK);
  placed = (caps.features & RNICPI_CAP_PLACED_COMPLETION) != 0;
  if (listen_port != 0)
    g_assert_cmpint(P->cm->listen(dev, listen_port, 0x77, &listener), ==, RNICPI_OK);
  else
    listen_port = (uint16_t) iw_test_listen_any(P, dev, 0x77, &listener);

  g_test_add_func("/iwarp/hostile/fpdu/bad-length", test_bad_length);
  g_test_add_func("/iwarp/hostile/fpdu/bad-crc", test_bad_crc);
  g_test_add_func("/iwarp/hostile/fpdu/bad-crc-write", test_bad_crc_write);
  g_test_add_func("/iwarp/hostile/rdmap/peer-terminate", test_peer_terminate);
  g_test_add_func("/iwarp/hostile/fpdu/eof-mid-fpdu", test_eof_mid_fpdu);
  g_test_add_func("/iwarp/hostile/fpdu/byte-by-byte", test_byte_by_byte);
  g_test_add_func("/iwarp/hostile/ddp/unknown-stag", test_unknown_stag);
  g_test_add_func("/iwarp/hostile/ddp/polled-drain", test_polled_drain);
  g_test_add_func("/iwarp/hostile/ddp/recv-outside-region", test_recv_outside_region);
  g_test_add_func("/iwarp/hostile/mpa/fpdu-max", test_fpdu_max);
  g_test_add_func("/iwarp/hostile/mpa/fpdu-grows", test_fpdu_grows);
  g_test_add_func("/iwarp/hostile/ddp/recv-region-gone", test_recv_region_gone);
  g_test_add_func("/iwarp/hostile/ddp/recv-region-gone-mid", test_recv_region_gone_mid);
  g_test_add_func("/iwarp/hostile/ddp/read-sink-gone", test_read_sink_gone);
  g_test_add_func("/iwarp/hostile/ddp/read-sink-gone-mid", test_read_sink_gone_mid);
  g_test_add_func("/iwarp/hostile/ddp/read-sink-reused-mid", test_read_sink_reused_mid);
  g_test_add_func("/iwarp/hostile/ddp/write-region-gone-mid", test_write_region_gone_mid);
  g_test_add_func("/iwarp/hostile/ddp/write-region-reused-mid", test_write_region_reused_mid);
  g_test_add_func("/iwarp/hostile/ddp/to-beyond-region", test_to_beyond);
  g_test_add_func("/iwarp/hostile/ddp/message-too-long", test_too_long);
  g_test_add_func("/iwarp/hostile/ddp/srq-empty", test_srq_empty);
  g_test_add_func("/iwarp/hostile/ddp/srq-flush-own", test_srq_flush_own);
  g_test_add_func("/iwarp/hostile/rdmap/read-beyond-ird", test_read_beyond_ird);
  g_test_add_func("/iwarp/hostile/rdmap/zero-read-beyond-ird", test_zero_reads_beyond_ird);
  g_test_add_func("/iwarp/hostile/rdmap/zero-read-ird-zero", test_zero_read_ird_zero);
  g_test_add_func("/iwarp/hostile/rdmap/read-source-beyond-region", test_read_source_beyond);
  g_test_add_func("/iwarp/hostile/rdmap/read-source-freed", test_read_source_freed);
  g_test_add_func("/iwarp/hostile/rdmap/read-source-freed-mid-fpdu", test_read_source_freed_mid_fpdu);
  g_test_add_func("/iwarp/hostile/rdmap/read-source-freed-queued", test_read_source_freed_queued);
  g_test_add_func("/iwarp/hostile/rdmap/read-source-right-removed", test_read_source_right_removed);
  g_test_add_func("/iwarp/hostile/rdmap/unknown-opcode", test_unknown_opcode);
  g_test_add_func("/iwarp/hostile/rdmap/atomic-host-misaligned", test_atomic_host_misaligned);
  g_test_add_func("/iwarp/hostile/rdmap/send-invalidate", test_send_invalidate);
  g_test_add_func("/iwarp/hostile/rdmap/send-invalidate-other-pd", test_send_invalidate_other_pd);
  g_test_add_func("/iwarp/hostile/ddp/write-invalidated-stag", test_write_invalidated);
  g_test_add_func("/iwarp/hostile/ddp/write-invalidated-mid", test_write_invalidated_mid);
  g_test_add_func("/iwarp/hostile/ddp/write-refast-registered-mid", test_write_refast_mid);
  g_test_add_func("/iwarp/hostile/rdmap/read-remote-invalidated-stag", test_read_remote_invalidated);
  g_test_add_func("/iwarp/hostile/rdmap/post-no-segments", test_post_no_segments);
  g_test_add_func("/iwarp/hostile/mw/write-past-window", test_mw_write_past_window);
  g_test_add_func("/iwarp/hostile/mw/read-only-window", test_mw_read_only_window);
  g_test_add_func("/iwarp/hostile/mw/write-invalidated", test_mw_write_invalidated);
  g_test_add_func("/iwarp/hostile/mw/read-remote-invalidated", test_mw_read_remote_invalidated);
  g_test_add_func("/iwarp/hostile/mw/other-qp", test_mw_other_qp);
  g_test_add_func("/iwarp/hostile/mw/read-into-window", test_mw_read_into_window);
  g_test_add_func("/iwarp/hostile/mw/read-sink-unbound", test_mw_read_sink_unbound);
  g_test_add_func("/iwarp/hostile/ddp/zero-length-read-response", test_zero_length_read_response);
  g_test_add_func("/iwarp/hostile/rdmap/fence-within-ord", test_fence_within_ord);
  g_test_add_func("/iwarp/hostile/rdmap/fence-no-ord", test_fence_no_ord);
  g_test_add_func("/iwarp/hostile/cm/close-fence", test_close_fence);
  g_test_add_func("/iwarp/hostile/cm/close-fence-no-ord", test_close_fence_no_ord);
  g_test_add_func("/iwarp/hostile/cm/close-fence-stale", test_close_fence_stale);
  g_test_add_func("/iwarp/hostile/cm/close-fence-stale-pieces", test_close_fence_stale_pieces);
  g_test_add_func("/iwarp/hostile/cm/close-fence-freed", test_close_fence_freed);
  g_test_add_func("/iwarp/hostile/mpa/terminate-for-rtr", test_rtr_wait_terminate);
  g_test_add_func("/iwarp/hostile/mpa/first-fpdu-hold", test_first_fpdu_hold);
  g_test_add_func("/iwarp/hostile/mpa/insufficient-ird", test_mpa_insufficient_ird);
  g_test_add_func("/iwarp/hostile/mpa/unoffered-rtr", test_mpa_unoffered_rtr);
  g_test_add_func("/iwarp/hostile/mpa/bad-key", test_mpa_bad_key);
  g_test_add_func("/iwarp/hostile/mpa/bad-length", test_mpa_bad_length);
  g_test_add_func("/iwarp/hostile/mpa/bad-rev", test_mpa_bad_rev);
  g_test_add_func("/iwarp/hostile/mpa/markers", test_mpa_markers);
  g_test_add_func("/iwarp/hostile/mpa/pdata-beyond-frame", test_mpa_pdata_beyond_frame);
  g_test_add_func("/iwarp/hostile/mpa/pdata-stall", test_mpa_pdata_stall);
  g_test_add_func("/iwarp/hostile/mpa/rev2-no-control-word", test_mpa_rev2_no_control);
  g_test_add_func("/iwarp/hostile/cm/request-flood", test_request_flood);
  g_test_add_func("/iwarp/hostile/cm/accept-out-of-fds", test_accept_out_of_fds);
  g_test_add_func("/iwarp/hostile/cm/accept-out-of-fds-evicts", test_accept_out_of_fds_evicts);
  int r = g_test_run();
  g_assert_cmpint(P->cm->unlisten(listener), ==, RNICPI_OK);
  P->device->close(dev);
  return r;
}
