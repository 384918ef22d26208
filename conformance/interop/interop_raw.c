/*
 * cert-interop: the raw peer of the golden tests.  The test plays the far
 * end of the provider's connection itself, over a plain TCP socket, CRC on:
 * it connects with the golden MPA Request (raw_passive) or takes the
 * provider's connect (raw_request_in, raw_active), then writes and reads
 * FPDUs byte for byte.  Used by interop_golden2.c and interop_golden_mpa.c.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "interop_test.h"

#define RAW_WAIT_MS INTEROP_RAW_WAIT_MS

void
raw_fpdu(int fd, const uint8_t *ulpdu, size_t len)
{
  uint8_t out[2 + 1024 + 8];
  g_assert_cmpuint(len, <=, 1024);
  wire_write(fd, out, wire_fpdu_build(ulpdu, len, out));
}

/* One FPDU from the provider (CRC on, checked): the ULPDU's length, or -1
 * when the provider closed first. */
int
raw_fpdu_read(int fd, uint8_t *ulpdu)
{
  uint8_t lb[2];
  if (wire_read(fd, lb, 2, RAW_WAIT_MS) != 2)
    return -1;
  size_t len = (size_t) lb[0] << 8 | lb[1];
  size_t pad = (4 - (2 + len) % 4) % 4;
  g_autofree uint8_t *all = g_malloc(2 + len + pad + 4);
  memcpy(all, lb, 2);
  g_assert_cmpuint(wire_read(fd, all + 2, len + pad + 4, RAW_WAIT_MS), ==, len + pad + 4);
  uint32_t c = wire_crc32c(all, 2 + len + pad);
  const uint8_t *w = all + 2 + len + pad;
  g_assert_cmphex((uint32_t) w[0] | (uint32_t) w[1] << 8 | (uint32_t) w[2] << 16 |
                    (uint32_t) w[3] << 24, ==, c);
  memcpy(ulpdu, all + 2, len);
  return (int) len;
}

/* The CONNECT_REQUEST of listener @lctx within @ms, or NULL. */
rnicpi_cm_event_t *
raw_poll_request(cert_t *f, uint64_t lctx, guint ms)
{
  cert_limit_t w;
  cert_limit_begin(&w, "a CONNECT_REQUEST from the raw peer", (gint64) ms * 1000);
  rnicpi_cm_event_t *ev;
  for (;;) {
    gint64 left = cert_limit_left(&w);
    ev = left > 0 ? g_async_queue_timeout_pop(f->cm_q, (guint64) left) : NULL;
    if (ev == NULL || (ev->type == RNICPI_CM_CONNECT_REQUEST && ev->listen_ctx == lctx))
      break;
    f->cm_seen = g_list_append(f->cm_seen, ev);
  }
  cert_limit_end(&w);
  return ev;
}

/* The test connects with the golden Request and the provider accepts (it
 * is the MPA Responder, CRC on): the socket, in full operation. */
int
raw_passive(cert_t *f, cert_side_t *s, uint64_t lctx)
{
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, lctx, &lst);
  rnicpi_addr_t a;
  cert_addr(f, port, &a);
  int fd = interop_tcp_connect(&a.sa);
  g_assert_cmpint(fd, >=, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  wire_write(fd, wire_golden_request, sizeof(wire_golden_request));
  g_autofree rnicpi_cm_event_t *req = raw_poll_request(f, lctx, CERT_TIMEOUT_MS);
  g_assert_nonnull(req);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->accept(s->qp, req->conn_id, &cp));
  uint8_t h[20];
  g_assert_cmpuint(wire_read(fd, h, sizeof(h), RAW_WAIT_MS), ==, sizeof(h));
  g_assert_cmpmem(h, 16, wire_key_rep, 16);
  g_assert_cmphex(h[16] & 0x20, ==, 0);
  g_assert_cmphex(h[16] & 0x40, ==, 0x40); /* C: we asked for CRC, so both ends use it */
  g_assert_cmpuint(h[17], ==, 1);
  g_assert_cmpuint(h[18] << 8 | h[19], ==, 0);
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s->ctx));
  cert_ok(CMV->unlisten(lst));
  return fd;
}

/* The provider connects to the test (it is the MPA Initiator): the socket
 * after its Request, which the test read whole, the Reply not sent. */
int
raw_listen(cert_t *f, rnicpi_addr_t *dst)
{
  struct sockaddr_storage ss;
  cert_self_addr(f, &ss);
  int lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint(lfd, >=, 0);
  socklen_t sl = ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  g_assert_cmpint(bind(lfd, (struct sockaddr *) &ss, sl), ==, 0);
  g_assert_cmpint(listen(lfd, 1), ==, 0);
  g_assert_cmpint(getsockname(lfd, (struct sockaddr *) &ss, &sl), ==, 0);
  memset(dst, 0, sizeof(*dst));
  dst->sa = ss;
  return lfd;
}

int
raw_accept(int lfd)
{
  struct pollfd pf = { .fd = lfd, .events = POLLIN };
  g_assert_cmpint(poll(&pf, 1, RAW_WAIT_MS), ==, 1);
  int fd = accept(lfd, NULL, NULL);
  g_assert_cmpint(fd, >=, 0);
  close(lfd);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int
raw_request_in(cert_t *f, cert_side_t *s)
{
  rnicpi_addr_t dst;
  int lfd = raw_listen(f, &dst);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  cert_ok(CMV->connect(s->qp, &dst, &cp));
  int fd = raw_accept(lfd);
  uint8_t h[20 + 512];
  g_assert_cmpuint(wire_read(fd, h, 20, RAW_WAIT_MS), ==, 20);
  uint32_t pd_len = (uint32_t) h[18] << 8 | h[19];
  g_assert_cmpuint(pd_len, <=, 512);
  g_assert_cmpuint(wire_read(fd, h + 20, pd_len, RAW_WAIT_MS), ==, pd_len);
  return fd;
}

/* raw_request_in, answered by a Rev 1 Reply (RFC 6581: a responder without
 * enhanced set-up answers Rev 1), C=1, no private data: no RTR, and the
 * provider may send first (RFC 5044 7.1.2 holds a Responder back until the
 * Initiator's first FPDU).  The socket, in full operation. */
int
raw_active(cert_t *f, cert_side_t *s)
{
  int fd = raw_request_in(f, s);
  uint8_t rep[20];
  memcpy(rep, wire_key_rep, 16);
  rep[16] = 0x40;
  rep[17] = 1;
  rep[18] = rep[19] = 0;
  wire_write(fd, rep, sizeof(rep));
  g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s->ctx));
  return fd;
}

/* RFC 5041 4.3 untagged header + RFC 5040 4.1 control, in @u. */
void
raw_untagged_hdr(uint8_t *u, uint8_t ddp_ctrl, uint8_t rdmap_ctrl, uint32_t qn, uint32_t msn, uint32_t mo)
{
  u[0] = ddp_ctrl;
  u[1] = rdmap_ctrl;
  wire_put32(u + 2, 0);
  wire_put32(u + 6, qn);
  wire_put32(u + 10, msn);
  wire_put32(u + 14, mo);
}

/* The provider posts an RDMA Read of RD_LEN bytes into @sink at offset 64
 * from the raw peer's RD_SRC_STAG/RD_SRC_TO: its Read Request is checked
 * (RFC 5040 4.4: untagged, L=1, opcode 1, QN 1, MSN 1, MO 0, the sink's
 * STag and TO, the size, the source STag and TO) and left in @req. */
void
raw_read_out(cert_side_t *s, int fd, const cert_buf_t *sink, uint64_t id, uint8_t *req)
{
  cert_post_send(s->qp, RNICPI_WR_RDMA_READ, sink, 64, RD_LEN, id, RNICPI_WR_SIGNALED, RD_SRC_TO,
                 RD_SRC_STAG);
  int len = raw_fpdu_read(fd, req);
  g_assert_cmpint(len, ==, 18 + 28);
  g_assert_cmphex(req[0], ==, 0x41);
  g_assert_cmphex(req[1], ==, 0x41);
  g_assert_cmpuint(wire_get32(req + 6), ==, 1);
  g_assert_cmpuint(wire_get32(req + 10), ==, 1);
  g_assert_cmpuint(wire_get32(req + 14), ==, 0);
  g_assert_cmphex(wire_get32(req + 18), ==, (uint32_t) sink->mr->rkey);
  g_assert_cmphex(wire_get64(req + 22), ==, cert_raddr(sink, 64));
  g_assert_cmpuint(wire_get32(req + 30), ==, RD_LEN);
  g_assert_cmphex(wire_get32(req + 34), ==, RD_SRC_STAG);
  g_assert_cmphex(wire_get64(req + 38), ==, RD_SRC_TO);
}

/* After an orderly disconnect: a provider may send a close fence, a
 * zero-length Read Request, before its FIN (vp/iwarp does, for Linux siw:
 * doc/provider-iwarp.md, "Disconnect").  Answers it with a zero-length
 * Read Response and returns TRUE (the FIN is still to come); FALSE when
 * the provider's stream ended first. */
gboolean
raw_close_fence(int fd)
{
  uint8_t req[65536], hdr[14];
  int len = raw_fpdu_read(fd, req);
  if (len < 0)
    return FALSE;
  g_assert_cmpint(len, ==, 18 + 28);
  g_assert_cmphex(req[0], ==, 0x41);
  g_assert_cmphex(req[1], ==, 0x41);
  g_assert_cmpuint(wire_get32(req + 6), ==, 1);
  g_assert_cmpuint(wire_get32(req + 30), ==, 0);
  raw_read_resp(fd, wire_get32(req + 18), wire_get64(req + 22), 0, TRUE, hdr);
  return TRUE;
}

/* A Read Response segment (RFC 5040 4.3: tagged, opcode 2) of @len
 * pattern bytes to @stag/@to, L as @last. */
void
raw_read_resp(int fd, uint32_t stag, uint64_t to, uint32_t len, gboolean last, uint8_t *hdr)
{
  uint8_t u[14 + 256];
  g_assert_cmpuint(len, <=, 256);
  u[0] = last ? 0xc1 : 0x81;
  u[1] = 0x42;
  wire_put32(u + 2, stag);
  wire_put64(u + 6, to);
  for (uint32_t i = 0; i < len; i++)
    u[14 + i] = interop_pattern(0x55, i);
  memcpy(hdr, u, 14);
  raw_fpdu(fd, u, 14 + len);
}
