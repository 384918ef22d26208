/*
 * iwarp-pair: drives vp/iwarp at the RNIC-PI level for the iWARP tests.
 *
 *   iwarp-pair transfer [PORT] connect over the CM verbs on PORT (without
 *                              it, a free one), move a Send, an RDMA
 *                              Write and an RDMA Read (with
 *                              ITAPI_IWARP_RFC7306=1 also atomics and
 *                              immediate data), check every byte,
 *                              disconnect (the wire test captures it)
 *   iwarp-pair handoff         connect two TCP sockets ourselves and hand
 *                              them over (rnicpi_sock_ops_t.handoff), then
 *                              the same transfer
 *   iwarp-pair lastbyte [PORT] the transfer, with every recvmsg() watched
 *                              (built with -Wl,--wrap=recvmsg): payload
 *                              lands there straight, but never a message's
 *                              last byte, which a store of its own places
 *                              after the call (iw_rx.c, rx_place)
 *   iwarp-pair badcrc [PORT]   with ITAPI_IWARP_CRC=1 and
 *                              ITAPI_IWARP_CORRUPT_CRC=N: the receiver of the
 *                              bad FPDU terminates, both sides end BROKEN and
 *                              every posted receive is flushed
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <glib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnicpi.h"
#include "iw_test_port.h"
#include "iw_test_up.h"

/* Linked with the provider's sources (built-in flavour): no loader. */
extern const rnicpi_provider_t rnicpi_builtin_iwarp;

static const rnicpi_provider_t *P;

#ifdef IW_PAIR_WRAP_RECVMSG
/* The last byte of each message transfer() moves (a Send, an RDMA Write,
 * a Read Response), and what the watched recvmsg() calls did: how many
 * placed payload (more than the stage in their iovec), how many held a
 * watched byte. */
static const uint8_t *watched[3];
static gint placing_calls, watched_hits;
ssize_t __real_recvmsg(int fd, struct msghdr *mh, int flags);
ssize_t
__wrap_recvmsg(int fd, struct msghdr *mh, int flags)
{
  if (mh->msg_iovlen > 1)
    g_atomic_int_inc(&placing_calls);
  for (size_t i = 0; i < mh->msg_iovlen; i++) {
    const uint8_t *b = mh->msg_iov[i].iov_base;
    for (size_t k = 0; k < G_N_ELEMENTS(watched); k++)
      if (watched[k] != NULL && watched[k] >= b && watched[k] < b + mh->msg_iov[i].iov_len)
        g_atomic_int_inc(&watched_hits);
  }
  return __real_recvmsg(fd, mh, flags);
}
#endif

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
      g_error("no CM event %d for 0x%" G_GINT64_MODIFIER "x", type, ctx);
    if (ev->type == type && (ev->qp_ctx == ctx || ev->listen_ctx == ctx))
      return ev;
    pending = g_list_append(pending, ev);
  }
}

typedef struct side {
  rnicpi_pd_t *pd;
  rnicpi_cq_t *scq, *rcq;
  rnicpi_qp_t *qp;
  uint8_t *buf;
  rnicpi_mr_t *mr;
  uint64_t ctx;
} side_t;

enum { LEN = 20000 }; /* several FPDUs per message */

static void
side_new(rnicpi_dev_t *dev, side_t *s, uint64_t ctx)
{
  s->ctx = ctx;
  g_assert_cmpint(P->device->pd_alloc(dev, &s->pd), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_create(dev, 64, ctx | 1, &s->scq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_create(dev, 64, ctx | 2, &s->rcq), ==, RNICPI_OK);
  rnicpi_qp_attr_t a = { .send_cq = s->scq, .recv_cq = s->rcq, .max_send_wr = 16,
                         .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1,
                         .max_rdma_write_sge = 1, .max_rdma_read_sge = 1, .ird = 4, .ord = 4,
                         .access = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE |
                                   RNICPI_ACCESS_ATOMIC };
  g_assert_cmpint(P->queue->qp_create(s->pd, &a, ctx, &s->qp), ==, RNICPI_OK);
  s->buf = g_malloc0(4 * LEN);
  rnicpi_mr_attr_t m = { .addr = s->buf, .length = 4 * LEN,
                         .iova = (uint64_t) (uintptr_t) s->buf,
                         .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE |
                                   RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE |
                                   RNICPI_ACCESS_ATOMIC };
  g_assert_cmpint(P->mem->mr_reg(s->pd, &m, &s->mr), ==, RNICPI_OK);
}

static void
side_free(side_t *s)
{
  g_assert_cmpint(P->queue->qp_destroy(s->qp), ==, RNICPI_OK);
  g_assert_cmpint(P->mem->mr_dereg(s->mr), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(s->scq), ==, RNICPI_OK);
  g_assert_cmpint(P->queue->cq_destroy(s->rcq), ==, RNICPI_OK);
  g_assert_cmpint(P->device->pd_free(s->pd), ==, RNICPI_OK);
  g_free(s->buf);
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

static void
post(rnicpi_qp_t *qp, rnicpi_wr_opcode_t op, side_t *s, size_t off, uint32_t len, uint64_t id,
     uint64_t raddr, uint64_t rkey)
{
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) (s->buf + off), .length = len,
                       .lkey = s->mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = op, .flags = RNICPI_WR_SIGNALED,
                          .sg_list = &sge, .num_sge = 1, .remote_addr = raddr, .rkey = rkey };
  g_assert_cmpint(P->data->post_send(qp, &wr), ==, RNICPI_OK);
}

static void
recv_post(side_t *s, size_t off, uint32_t len, uint64_t id)
{
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) (s->buf + off), .length = len,
                       .lkey = s->mr->lkey };
  rnicpi_recv_wr_t wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
  g_assert_cmpint(P->data->post_recv(s->qp, &wr), ==, RNICPI_OK);
}

static void
fill(uint8_t *p, size_t n, uint8_t seed)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t) (seed + i * 13 + (i >> 7));
}

/* One atomic @wr from a on the word at p->buf + 3 * LEN: it completes as
 * @opcode, the result word at a->buf + 3 * LEN holds @old, the target @now. */
static void
atomic_one(side_t *a, side_t *p, rnicpi_send_wr_t *wr, rnicpi_wc_opcode_t opcode, uint64_t old,
           uint64_t now)
{
  uint64_t got;
  g_assert_cmpint(P->data->post_send(a->qp, wr), ==, RNICPI_OK);
  rnicpi_wc_t wc = wc_of(a->scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, opcode);
  memcpy(&got, a->buf + 3 * LEN, 8);
  g_assert_cmpuint(got, ==, old);
  memcpy(&got, p->buf + 3 * LEN, 8);
  g_assert_cmpuint(got, ==, now);
}

/* With ITAPI_IWARP_RFC7306=1 (both ends): Fetch and Add, then Compare and
 * Swap (RFC 7306 Atomic Request/Response) on a word of p; old values and
 * the word checked. */
static void
atomics(side_t *a, side_t *p)
{
  uint64_t v = 1000;
  memcpy(p->buf + 3 * LEN, &v, 8);
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) (a->buf + 3 * LEN), .length = 8,
                       .lkey = a->mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = 0x30, .opcode = RNICPI_WR_ATOMIC_FETCH_ADD,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = (uint64_t) (uintptr_t) (p->buf + 3 * LEN),
                          .rkey = p->mr->rkey, .compare_add = 23 };
  atomic_one(a, p, &wr, RNICPI_WC_FETCH_ADD, 1000, 1023);
  wr.wr_id = 0x31;
  wr.opcode = RNICPI_WR_ATOMIC_CMP_SWP;
  wr.compare_add = 1023;
  wr.swap = 7;
  atomic_one(a, p, &wr, RNICPI_WC_CMP_SWP, 1023, 7);
}

/* With ITAPI_IWARP_RFC7306=1 (both ends): an RDMA Write with immediate
 * data (Write, then Immediate Data), and Immediate Data with SE alone into
 * a zero-length receive; the written bytes, the values and what the
 * receive buffers hold are checked. */
static void
immediate(side_t *a, side_t *p)
{
  uint8_t *slot = p->buf + 3 * LEN + 64;
  memset(slot, 0xee, 16);
  recv_post(p, 3 * LEN + 64, 16, 0x40);
  fill(a->buf, 3000, 4);
  rnicpi_sge_t sge = { .addr = (uint64_t) (uintptr_t) a->buf, .length = 3000,
                       .lkey = a->mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = 0x41, .opcode = RNICPI_WR_RDMA_WRITE_IMM,
                          .flags = RNICPI_WR_SIGNALED, .sg_list = &sge, .num_sge = 1,
                          .remote_addr = (uint64_t) (uintptr_t) (p->buf + LEN),
                          .rkey = p->mr->rkey, .imm_data = 0x0102030405060708ull };
  g_assert_cmpint(P->data->post_send(a->qp, &wr), ==, RNICPI_OK);
  rnicpi_wc_t wc = wc_of(p->rcq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmphex(wc.wr_id, ==, 0x40);
  g_assert_cmphex(wc.flags, ==, RNICPI_WC_WITH_IMM);
  g_assert_cmphex(wc.imm_data, ==, 0x0102030405060708ull);
  g_assert_cmpuint(wc.byte_len, ==, 8);
  /* The Write was placed before its immediate data completed. */
  g_assert_cmpmem(p->buf + LEN, 3000, a->buf, 3000);
  static const uint8_t wire[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
  g_assert_cmpmem(slot, 8, wire, 8);
  g_assert_cmphex(slot[8], ==, 0xee);
  wc = wc_of(a->scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_WRITE);
  g_assert_cmphex(wc.wr_id, ==, 0x41);

  recv_post(p, 0, 0, 0x42);
  rnicpi_send_wr_t imm = { .wr_id = 0x43, .opcode = RNICPI_WR_IMM_DATA,
                           .flags = RNICPI_WR_SIGNALED | RNICPI_WR_SOLICITED,
                           .imm_data = 0xfeedfacecafebeefull };
  g_assert_cmpint(P->data->post_send(a->qp, &imm), ==, RNICPI_OK);
  wc = wc_of(p->rcq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmphex(wc.wr_id, ==, 0x42);
  g_assert_cmphex(wc.flags, ==, RNICPI_WC_WITH_IMM);
  g_assert_cmphex(wc.imm_data, ==, 0xfeedfacecafebeefull);
  g_assert_cmpuint(wc.byte_len, ==, 0);
  wc = wc_of(a->scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_SEND);
  g_assert_cmphex(wc.wr_id, ==, 0x43);
}

/* Send a->p, RDMA Write a->p, RDMA Read p->a; every byte checked. */
static void
transfer(side_t *a, side_t *p)
{
  fill(a->buf, LEN, 1);
  recv_post(p, 0, LEN, 0x10);
  post(a->qp, RNICPI_WR_SEND, a, 0, LEN, 0x20, 0, 0);
  rnicpi_wc_t wc = wc_of(p->rcq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpuint(wc.byte_len, ==, LEN);
  g_assert_cmpmem(p->buf, LEN, a->buf, LEN);
  g_assert_cmpint(wc_of(a->scq).status, ==, RNICPI_WC_SUCCESS);

  fill(a->buf + LEN, LEN, 2);
  post(a->qp, RNICPI_WR_RDMA_WRITE, a, LEN, LEN, 0x21, (uint64_t) (uintptr_t) (p->buf + LEN),
       p->mr->rkey);
  g_assert_cmpint(wc_of(a->scq).status, ==, RNICPI_WC_SUCCESS);

  /* The Write completed at transmission: the Read behind it comes back
   * only after the peer placed it (RFC 5040 5.5). */
  fill(p->buf + 2 * LEN, LEN, 3);
  post(a->qp, RNICPI_WR_RDMA_READ, a, 2 * LEN, LEN, 0x22,
       (uint64_t) (uintptr_t) (p->buf + 2 * LEN), p->mr->rkey);
  wc = wc_of(a->scq);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, RNICPI_WC_RDMA_READ);
  g_assert_cmpmem(a->buf + 2 * LEN, LEN, p->buf + 2 * LEN, LEN);
  g_assert_cmpmem(p->buf + LEN, LEN, a->buf + LEN, LEN);
  if (g_strcmp0(g_getenv("ITAPI_IWARP_RFC7306"), "1") == 0) {
    atomics(a, p);
    immediate(a, p);
  }
}

static void
connect_cm(rnicpi_dev_t *dev, side_t *a, side_t *p, uint32_t port)
{
  rnicpi_listen_t *l;
  if (port == 0)
    port = iw_test_listen_any(P, dev, 0x77, &l);
  else
    g_assert_cmpint(P->cm->listen(dev, port, 0x77, &l), ==, RNICPI_OK);
  rnicpi_addr_t dst = { 0 };
  struct sockaddr_in *sin = (struct sockaddr_in *) &dst.sa;
  sin->sin_family = AF_INET;
  sin->sin_port = htons((uint16_t) port);
  sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  rnicpi_conn_param_t cp = { .pdata = "hello iwarp", .pdata_len = 11, .ird = 4, .ord = 4 };
  g_assert_cmpint(P->cm->connect(a->qp, &dst, &cp), ==, RNICPI_OK);
  rnicpi_cm_event_t *req = wait_cm(RNICPI_CM_CONNECT_REQUEST, 0x77);
  g_assert_cmpmem(req->pdata, 11, "hello iwarp", 11);
  g_assert_cmpint(P->cm->accept(p->qp, req->conn_id, &cp), ==, RNICPI_OK);
  g_free(req);
  g_free(wait_cm(RNICPI_CM_ESTABLISHED, a->ctx));
  g_free(wait_cm(RNICPI_CM_ESTABLISHED, p->ctx));
  g_assert_cmpint(P->cm->unlisten(l), ==, RNICPI_OK);
}

static void
connect_handoff(side_t *a, side_t *p)
{
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t sl = sizeof(sin);
  g_assert_cmpint(bind(lfd, (struct sockaddr *) &sin, sizeof(sin)), ==, 0);
  g_assert_cmpint(listen(lfd, 1), ==, 0);
  g_assert_cmpint(getsockname(lfd, (struct sockaddr *) &sin, &sl), ==, 0);
  int cfd = socket(AF_INET, SOCK_STREAM, 0);
  g_assert_cmpint(connect(cfd, (struct sockaddr *) &sin, sizeof(sin)), ==, 0);
  int sfd = accept(lfd, NULL, NULL);
  g_assert_cmpint(sfd, >=, 0);
  close(lfd);
  rnicpi_conn_param_t cp = { .ird = 4, .ord = 4 };
  g_assert_cmpint(P->sock->handoff(p->qp, sfd, false, &cp), ==, RNICPI_OK);
  g_assert_cmpint(P->sock->handoff(a->qp, cfd, true, &cp), ==, RNICPI_OK);
  g_free(wait_cm(RNICPI_CM_ESTABLISHED, a->ctx));
  g_free(wait_cm(RNICPI_CM_ESTABLISHED, p->ctx));
  g_assert_cmpint(P->queue->qp_state(a->qp), ==, RNICPI_QPS_RTS);
  g_assert_cmpint(P->queue->qp_state(p->qp), ==, RNICPI_QPS_RTS);
}

int
main(int argc, char **argv)
{
  if (argc < 2)
    g_error("usage: iwarp-pair transfer|lastbyte|badcrc [PORT] | handoff (no PORT: a free one)");
  P = &rnicpi_builtin_iwarp;
  cmq = g_async_queue_new();
  rnicpi_dev_t *dev;
  g_assert_cmpint(P->device->open("iwarp0", &ups, NULL, &dev), ==, RNICPI_OK);
  side_t a, p;
  side_new(dev, &a, 0xa0);
  side_new(dev, &p, 0xb0);
  uint32_t port = argc > 2 ? (uint32_t) atoi(argv[2]) : 0;

  if (strcmp(argv[1], "transfer") == 0 || strcmp(argv[1], "handoff") == 0) {
    if (strcmp(argv[1], "handoff") == 0)
      connect_handoff(&a, &p);
    else
      connect_cm(dev, &a, &p, port);
    transfer(&a, &p);
    recv_post(&p, 3 * LEN, 64, 0x30);
    g_assert_cmpint(P->cm->disconnect(a.qp, NULL, 0), ==, RNICPI_OK);
    g_free(wait_cm(RNICPI_CM_DISCONNECTED, a.ctx));
    g_free(wait_cm(RNICPI_CM_DISCONNECTED, p.ctx));
    rnicpi_wc_t wc = wc_of(p.rcq);
    g_assert_cmphex(wc.wr_id, ==, 0x30);
    g_assert_cmpint(wc.status, ==, RNICPI_WC_WR_FLUSH_ERR);
  } else if (strcmp(argv[1], "lastbyte") == 0) {
#ifdef IW_PAIR_WRAP_RECVMSG
    connect_cm(dev, &a, &p, port);
    watched[0] = p.buf + LEN - 1;      /* the Send */
    watched[1] = p.buf + 2 * LEN - 1;  /* the RDMA Write */
    watched[2] = a.buf + 3 * LEN - 1;  /* the RDMA Read's response */
    transfer(&a, &p);
    g_assert_cmpint(g_atomic_int_get(&placing_calls), >, 0);
    g_assert_cmpint(g_atomic_int_get(&watched_hits), ==, 0);
    g_assert_cmpint(P->cm->disconnect(a.qp, NULL, 0), ==, RNICPI_OK);
    g_free(wait_cm(RNICPI_CM_DISCONNECTED, a.ctx));
    g_free(wait_cm(RNICPI_CM_DISCONNECTED, p.ctx));
#else
    g_error("lastbyte: this iwarp-pair was built without -Wl,--wrap=recvmsg (iwarp-pair-lastbyte was)");
#endif
  } else if (strcmp(argv[1], "badcrc") == 0) {
    connect_cm(dev, &a, &p, port);
    /* FPDU 1 is the RTR; the Send's first FPDU is the one corrupted. */
    recv_post(&p, 0, LEN, 0x10);
    recv_post(&p, LEN, LEN, 0x11);
    recv_post(&a, 0, 64, 0x12);
    fill(a.buf, LEN, 1);
    post(a.qp, RNICPI_WR_SEND, &a, 0, LEN, 0x20, 0, 0);
    g_free(wait_cm(RNICPI_CM_BROKEN, p.ctx));
    g_free(wait_cm(RNICPI_CM_BROKEN, a.ctx));
    g_assert_cmpint(P->queue->qp_state(a.qp), ==, RNICPI_QPS_ERROR);
    g_assert_cmpint(P->queue->qp_state(p.qp), ==, RNICPI_QPS_ERROR);
    for (int i = 0; i < 2; i++)
      g_assert_cmpint(wc_of(p.rcq).status, ==, RNICPI_WC_WR_FLUSH_ERR);
    g_assert_cmpint(wc_of(a.rcq).status, ==, RNICPI_WC_WR_FLUSH_ERR);
    rnicpi_wc_t wc = wc_of(a.scq);
    g_assert_cmphex(wc.wr_id, ==, 0x20);
    rnicpi_caps_t caps = { .size = sizeof(caps) };
    g_assert_cmpint(P->device->query(dev, &caps), ==, RNICPI_OK);
    if (caps.features & RNICPI_CAP_PLACED_COMPLETION) {
      /* ITAPI_IWARP_COMPLETION=placed: the Send's delivery fence never
       * came back, so it completes in error. */
      g_assert_cmpint(wc.status, !=, RNICPI_WC_SUCCESS);
    } else {
      /* It completed when TCP took it; the peer's Terminate broke the
       * connection after that. */
      g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
    }
    g_assert_cmpint(P->data->poll_cq(a.scq, &wc, 1), ==, 0);
  } else {
    g_error("unknown mode %s", argv[1]);
  }
  side_free(&a);
  side_free(&p);
  P->device->close(dev);
  g_print("ok\n");
  return 0;
}
