/*
 * cert-iwarp-peer: the reference peer of the interop level.  It loads the
 * vp/iwarp provider by name ("iwarp") through the provider registry and
 * does, one line at a time, what the test program asks on its standard
 * input; it answers each command with one line on its standard output.
 *
 *   mr                              -> mr ADDR RKEY LEN   (its registered buffer)
 *   listen                          -> port N
 *   accept PDATA                    -> established REQ_PDATA
 *   connect ADDR PORT PDATA         -> established REP_PDATA
 *   fill OFF LEN SEED | check OFF LEN SEED -> ok | bad BYTE GOT WANT
 *   recv OFF LEN ID                 -> ok
 *   wait-recv                       -> wc ID STATUS OPCODE BYTES
 *   send OFF LEN ID                 -> wc ...   (waits for its completion)
 *   write|read OFF LEN RADDR RKEY ID -> wc ...
 *   disconnect                      -> ok
 *   wait-disconnected               -> disconnected | broken
 *   quit
 *
 * PDATA is hex ("-" for none).  Anything that goes wrong answers
 * "error WHY".  The knobs of vp/iwarp (ITAPI_IWARP_CRC...) come from the
 * environment the test gives it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cert_limit.h"
#include "interop.h"
#include "rnicpi.h"
#include "rnicpi_registry.h"


static const rnicpi_provider_t *P;

/* Begin a wait for @what that gives up after interop_wait_s(), told to
 * itapi-certify: the peer is a process of the test. */
static void
wait_begin(cert_limit_t *w, const char *what)
{
  cert_limit_beginf(w, (gint64) interop_wait_s() * G_USEC_PER_SEC, "the reference peer: %s", what);
}
static GAsyncQueue *cm_q;
static rnicpi_dev_t *dev;
static rnicpi_pd_t *pd;
static rnicpi_cq_t *scq, *rcq;
static rnicpi_qp_t *qp;
static rnicpi_mr_t *mr;
static rnicpi_listen_t *lst;
static uint8_t *buf;

static void
up_cm(void *ctx, const rnicpi_cm_event_t *ev)
{
  (void) ctx;
  g_async_queue_push(cm_q, g_memdup2(ev, sizeof(*ev)));
}

static void
up_notify(void *ctx, uint64_t cq_ctx)
{
  (void) ctx;
  (void) cq_ctx;
}

static void
up_async(void *ctx, const rnicpi_async_event_t *ev)
{
  (void) ctx;
  fprintf(stderr, "cert-iwarp-peer: asynchronous event %d\n", ev->type);
}

static const rnicpi_upcalls_t upcalls = { .cm_event = up_cm, .cq_notify = up_notify,
                                          .async_event = up_async };

static void
reply(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

static void
reply(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

/* The next CM event, of @type or ending the connection; NULL on timeout. */
static rnicpi_cm_event_t *
wait_cm(rnicpi_cm_event_type_t type)
{
  cert_limit_t w;
  wait_begin(&w, "a CM event");
  rnicpi_cm_event_t *ev;
  for (;;) {
    gint64 left = cert_limit_left(&w);
    ev = left > 0 ? g_async_queue_timeout_pop(cm_q, (guint64) left) : NULL;
    if (ev == NULL || ev->type == type || ev->type == RNICPI_CM_BROKEN ||
        ev->type == RNICPI_CM_REJECTED || ev->type == RNICPI_CM_UNREACHABLE ||
        ev->type == RNICPI_CM_DISCONNECTED)
      break;
    g_free(ev);
  }
  cert_limit_end(&w);
  return ev;
}

static void
reply_wc(rnicpi_cq_t *cq)
{
  rnicpi_wc_t wc;
  cert_limit_t w;
  wait_begin(&w, "a completion");
  int r;
  for (;;) {
    memset(&wc, 0, sizeof(wc));
    r = P->data->poll_cq(cq, &wc, 1);
    if (r != 0 || cert_limit_over(&w))
      break;
    g_usleep(200);
  }
  cert_limit_end(&w);
  if (r == 1)
    reply("wc %" G_GUINT64_FORMAT " %d %d %u", wc.wr_id, wc.status, wc.opcode, wc.byte_len);
  else
    reply("error no completion within %u s (ITAPI_CONF_WAIT_S raises the wait)", interop_wait_s());
}

static gboolean
range_ok(guint64 off, guint64 len)
{
  return off <= INTEROP_PEER_BUF && len <= INTEROP_PEER_BUF - off;
}

static void
post(rnicpi_wr_opcode_t op, guint64 off, guint64 len, guint64 raddr, guint64 rkey, guint64 id)
{
  rnicpi_sge_t s = { .addr = (uint64_t) (uintptr_t) (buf + off), .length = (uint32_t) len,
                     .lkey = mr->lkey };
  rnicpi_send_wr_t wr = { .wr_id = id, .opcode = op, .flags = RNICPI_WR_SIGNALED, .sg_list = &s,
                          .num_sge = 1, .remote_addr = raddr, .rkey = rkey };
  rnicpi_status_t st = P->data->post_send(qp, &wr);
  if (st != RNICPI_OK)
    reply("error post_send: %s", rnicpi_status_name(st));
  else
    reply_wc(scq);
}

static void
established(rnicpi_cm_event_t *ev, const uint8_t *req_pdata, uint32_t req_len)
{
  if (ev == NULL || ev->type != RNICPI_CM_ESTABLISHED) {
    reply("error no ESTABLISHED (event %d, reason %d)", ev != NULL ? (int) ev->type : 0,
          ev != NULL ? (int) ev->reason : 0);
    return;
  }
  g_autofree char *hex = req_pdata != NULL ? interop_hex(req_pdata, req_len)
                                           : interop_hex(ev->pdata, ev->pdata_len);
  reply("established %s", hex);
}

static void
do_command(char **w, int n)
{
  const char *c = w[0];
  uint8_t pdata[RNICPI_MAX_PDATA];
  if (strcmp(c, "mr") == 0) {
    reply("mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u", (guint64) (uintptr_t) buf, (guint64) mr->rkey, INTEROP_PEER_BUF);
  } else if (strcmp(c, "listen") == 0) {
    for (uint32_t port = 30000 + (uint32_t) (getpid() % 500) * 50, k = 0; k < 50; k++, port++) {
      if (P->cm->listen(dev, port, 0x15, &lst) == RNICPI_OK) {
        reply("port %u", port);
        return;
      }
    }
    reply("error no free port to listen on");
  } else if (strcmp(c, "accept") == 0 && n == 2) {
    int len = interop_unhex(w[1], pdata, sizeof(pdata));
    g_autofree rnicpi_cm_event_t *req = wait_cm(RNICPI_CM_CONNECT_REQUEST);
    if (len < 0 || req == NULL || req->type != RNICPI_CM_CONNECT_REQUEST) {
      reply("error no connection request within %u s (ITAPI_CONF_WAIT_S raises the wait)",
            interop_wait_s());
      return;
    }
    rnicpi_conn_param_t cp = { .pdata = pdata, .pdata_len = (uint32_t) len, .ird = 4, .ord = 4 };
    rnicpi_status_t st = P->cm->accept(qp, req->conn_id, &cp);
    if (st != RNICPI_OK) {
      reply("error accept: %s", rnicpi_status_name(st));
      return;
    }
    g_autofree rnicpi_cm_event_t *ev = wait_cm(RNICPI_CM_ESTABLISHED);
    established(ev, req->pdata, req->pdata_len);
  } else if (strcmp(c, "connect") == 0 && n == 4) {
    int len = interop_unhex(w[3], pdata, sizeof(pdata));
    rnicpi_addr_t dst;
    memset(&dst, 0, sizeof(dst));
    struct sockaddr_in *s4 = (struct sockaddr_in *) &dst.sa;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &dst.sa;
    uint16_t port = htons((uint16_t) g_ascii_strtoull(w[2], NULL, 10));
    if (inet_pton(AF_INET, w[1], &s4->sin_addr) == 1) {
      s4->sin_family = AF_INET;
      s4->sin_port = port;
    } else if (inet_pton(AF_INET6, w[1], &s6->sin6_addr) == 1) {
      s6->sin6_family = AF_INET6;
      s6->sin6_port = port;
    } else {
      reply("error bad address %s", w[1]);
      return;
    }
    if (len < 0) {
      reply("error bad private data");
      return;
    }
    rnicpi_conn_param_t cp = { .pdata = pdata, .pdata_len = (uint32_t) len, .ird = 4, .ord = 4 };
    rnicpi_status_t st = P->cm->connect(qp, &dst, &cp);
    if (st != RNICPI_OK) {
      reply("error connect: %s", rnicpi_status_name(st));
      return;
    }
    g_autofree rnicpi_cm_event_t *ev = wait_cm(RNICPI_CM_ESTABLISHED);
    established(ev, NULL, 0);
  } else if ((strcmp(c, "fill") == 0 || strcmp(c, "check") == 0) && n == 4) {
    guint64 off = g_ascii_strtoull(w[1], NULL, 10), len = g_ascii_strtoull(w[2], NULL, 10);
    uint8_t seed = (uint8_t) g_ascii_strtoull(w[3], NULL, 10);
    if (!range_ok(off, len)) {
      reply("error range");
      return;
    }
    for (guint64 i = 0; i < len; i++) {
      if (c[0] == 'f') {
        buf[off + i] = interop_pattern(seed, i);
      } else if (buf[off + i] != interop_pattern(seed, i)) {
        reply("bad %" G_GUINT64_FORMAT " %u %u", off + i, buf[off + i], interop_pattern(seed, i));
        return;
      }
    }
    reply("ok");
  } else if (strcmp(c, "recv") == 0 && n == 4) {
    guint64 off = g_ascii_strtoull(w[1], NULL, 10), len = g_ascii_strtoull(w[2], NULL, 10);
    if (!range_ok(off, len)) {
      reply("error range");
      return;
    }
    rnicpi_sge_t s = { .addr = (uint64_t) (uintptr_t) (buf + off), .length = (uint32_t) len,
                       .lkey = mr->lkey };
    rnicpi_recv_wr_t wr = { .wr_id = g_ascii_strtoull(w[3], NULL, 10), .sg_list = &s, .num_sge = 1 };
    rnicpi_status_t st = P->data->post_recv(qp, &wr);
    if (st != RNICPI_OK)
      reply("error post_recv: %s", rnicpi_status_name(st));
    else
      reply("ok");
  } else if (strcmp(c, "wait-recv") == 0) {
    reply_wc(rcq);
  } else if (strcmp(c, "send") == 0 && n == 4) {
    guint64 off = g_ascii_strtoull(w[1], NULL, 10), len = g_ascii_strtoull(w[2], NULL, 10);
    if (!range_ok(off, len))
      reply("error range");
    else
      post(RNICPI_WR_SEND, off, len, 0, 0, g_ascii_strtoull(w[3], NULL, 10));
  } else if ((strcmp(c, "write") == 0 || strcmp(c, "read") == 0) && n == 6) {
    guint64 off = g_ascii_strtoull(w[1], NULL, 10), len = g_ascii_strtoull(w[2], NULL, 10);
    if (!range_ok(off, len))
      reply("error range");
    else
      post(c[0] == 'w' ? RNICPI_WR_RDMA_WRITE : RNICPI_WR_RDMA_READ, off, len,
           g_ascii_strtoull(w[3], NULL, 10), g_ascii_strtoull(w[4], NULL, 10),
           g_ascii_strtoull(w[5], NULL, 10));
  } else if (strcmp(c, "disconnect") == 0) {
    rnicpi_status_t st = P->cm->disconnect(qp, NULL, 0);
    if (st != RNICPI_OK)
      reply("error disconnect: %s", rnicpi_status_name(st));
    else
      reply("ok");
  } else if (strcmp(c, "wait-disconnected") == 0) {
    g_autofree rnicpi_cm_event_t *ev = wait_cm(RNICPI_CM_DISCONNECTED);
    if (ev != NULL && ev->type == RNICPI_CM_DISCONNECTED)
      reply("disconnected");
    else if (ev != NULL && ev->type == RNICPI_CM_BROKEN)
      reply("broken");
    else
      reply("error no DISCONNECTED within %u s (ITAPI_CONF_WAIT_S raises the wait)", interop_wait_s());
  } else {
    reply("error unknown command '%s' with %d words", c, n);
  }
}

static const rnicpi_provider_t *
reference_provider(void)
{
  rnicpi_registry_load();
  for (size_t i = 0; i < rnicpi_registry_count(); i++) {
    const rnicpi_entry_t *e = rnicpi_registry_get(i);
    if (strcmp(e->name, "iwarp") == 0 && !e->refused && e->prov != NULL)
      return e->prov;
  }
  return NULL;
}

int
main(void)
{
  cm_q = g_async_queue_new_full(g_free);
  P = reference_provider();
  if (P == NULL) {
    reply("error the reference provider 'iwarp' (vp/iwarp) is not in the registry");
    return 1;
  }
  char names[8][RNICPI_DEVICE_NAME_MAX];
  size_t count = G_N_ELEMENTS(names);
  rnicpi_qp_attr_t a = {
    .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1,
    .max_rdma_write_sge = 1, .max_rdma_read_sge = 1, .ird = 4, .ord = 4,
    .access = RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE,
  };
  buf = g_malloc0(INTEROP_PEER_BUF);
#ifdef ITAPI_TSAN_GLIB_H
  /* The provider's thread reads and places it for the test's process, in
   * an order that runs through that process (doc/sanitizers.md). */
  ITAPI_TSAN_DMA_TARGET(buf, INTEROP_PEER_BUF, "the peer's buffer, reached for the test's process");
#endif
  rnicpi_mr_attr_t ma = { .addr = buf, .length = INTEROP_PEER_BUF,
                          .iova = (uint64_t) (uintptr_t) buf,
                          .access = RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ |
                                    RNICPI_ACCESS_REMOTE_WRITE };
  rnicpi_status_t st;
  if ((st = P->device->list(names, &count)) != RNICPI_OK || count == 0 ||
      (st = P->device->open(names[0], &upcalls, NULL, &dev)) != RNICPI_OK ||
      (st = P->device->pd_alloc(dev, &pd)) != RNICPI_OK ||
      (st = P->queue->cq_create(dev, 64, 1, &scq)) != RNICPI_OK ||
      (st = P->queue->cq_create(dev, 64, 2, &rcq)) != RNICPI_OK ||
      (a.send_cq = scq, a.recv_cq = rcq, st = P->queue->qp_create(pd, &a, 0x9000, &qp)) != RNICPI_OK ||
      (st = P->mem->mr_reg(pd, &ma, &mr)) != RNICPI_OK) {
    reply("error setting up vp/iwarp: %s", rnicpi_status_name(st));
    return 1;
  }
  reply("ready %s", names[0]);

  char line[2048];
  while (fgets(line, sizeof(line), stdin) != NULL) {
    g_strstrip(line);
    g_auto(GStrv) w = g_strsplit(line, " ", -1);
    int n = (int) g_strv_length(w);
    if (n == 0 || *w[0] == '\0')
      continue;
    if (strcmp(w[0], "quit") == 0)
      break;
    do_command(w, n);
  }
  if (lst != NULL)
    P->cm->unlisten(lst);
  P->mem->mr_dereg(mr);
  P->queue->qp_destroy(qp);
  P->queue->cq_destroy(scq);
  P->queue->cq_destroy(rcq);
  P->device->pd_free(pd);
  P->device->close(dev);
  g_free(buf);
  return 0;
}
