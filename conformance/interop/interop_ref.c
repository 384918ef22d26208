/*
 * cert-interop: the provider under test against the reference peer,
 * vp/iwarp in another process (cert-iwarp-peer), over TCP.  Both
 * directions of connection setup, with the peer asking for MPA CRC and
 * not, private data both ways, Sends, RDMA Writes and RDMA Reads both
 * ways in sizes from one byte to several FPDUs, every byte checked at the
 * end it landed on, and an orderly disconnect.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interop_test.h"

typedef struct peer {
  GPid pid;
  int in, out;        /* its standard input, its standard output */
  GString *rx;        /* read, not yet a whole line */
  guint64 addr, rkey; /* its registered buffer */
} peer_t;

typedef struct ref_case {
  gboolean active; /* the provider under test connects */
  gboolean crc;    /* the peer asks for MPA CRC */
  const char *summary;
} ref_case_t;

static char *
peer_path(void)
{
  g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
  g_autofree char *dir = self != NULL ? g_path_get_dirname(self) : g_strdup(".");
  return g_build_filename(dir, "cert-iwarp-peer", NULL);
}

/* One line from the peer (without its newline); fails the test on silence. */
static char *
peer_line(peer_t *p)
{
  for (;;) {
    char *nl = memchr(p->rx->str, '\n', p->rx->len);
    if (nl != NULL) {
      char *line = g_strndup(p->rx->str, (gsize) (nl - p->rx->str));
      g_string_erase(p->rx, 0, nl - p->rx->str + 1);
      return line;
    }
    struct pollfd pf = { .fd = p->out, .events = POLLIN };
    int r = poll(&pf, 1, (int) (interop_wait_s() + INTEROP_REPLY_SLACK_S) * 1000);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0) {
      g_autofree char *why =
        g_strdup_printf("the reference peer (cert-iwarp-peer, pid %d) answered nothing within %u s: "
                        "it hangs (its stderr is above) or the host is slow (ITAPI_CONF_WAIT_S "
                        "raises its waits)", (int) p->pid, interop_wait_s() + INTEROP_REPLY_SLACK_S);
      g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, why);
    }
    g_assert_cmpint(r, ==, 1);
    char chunk[512];
    ssize_t n = read(p->out, chunk, sizeof(chunk));
    if (n <= 0)
      g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC,
                          "the reference peer closed its output: it exited (crashed?)");
    g_string_append_len(p->rx, chunk, n);
  }
}

static char *
peer_cmd(peer_t *p, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Send one command; its one-line answer, which must not be an error. */
static char *
peer_cmd(peer_t *p, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *cmd = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_autofree char *line = g_strdup_printf("%s\n", cmd);
  g_assert_cmpint(write(p->in, line, strlen(line)), ==, (gssize) strlen(line));
  char *ans = peer_line(p);
  if (g_str_has_prefix(ans, "error")) {
    g_autofree char *msg = g_strdup_printf("reference peer: '%s' answered '%s'", cmd, ans);
    g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, msg);
  }
  return ans;
}

static void
peer_start(peer_t *p, gboolean crc)
{
  memset(p, 0, sizeof(*p));
  p->rx = g_string_new(NULL);
  g_autofree char *path = peer_path();
  char *argv[] = { path, NULL };
  g_auto(GStrv) env = g_get_environ();
  /* The reference is vp/iwarp as built, in its default mode: not a module
   * of the same name from the path, not the provider's delivery fences,
   * and selected even where ITAPI_PROVIDER names the provider under test
   * (lab/ib-guest.sh sets ITAPI_PROVIDER=ib, which made the registry
   * refuse vp/iwarp: the peer said "error ... not in the registry"). */
  env = g_environ_unsetenv(env, "ITAPI_PROVIDER_PATH");
  env = g_environ_setenv(env, "ITAPI_PROVIDER", "iwarp", TRUE);
  env = g_environ_unsetenv(env, "ITAPI_IWARP_COMPLETION");
  env = g_environ_unsetenv(env, "ITAPI_IWARP_MPA_REV");
  env = g_environ_setenv(env, "ITAPI_IWARP_CRC", crc ? "1" : "0", TRUE);
  GError *err = NULL;
  /* The peer's waits are the test's: it gets the harness's socket. */
  int ch = cert_limit_channel();
  gboolean ok = g_spawn_async_with_pipes_and_fds(NULL, (const char *const *) argv, (const char *const *) env,
                                                 G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, -1, -1, -1, &ch, &ch,
                                                 ch >= 0 ? 1 : 0, &p->pid, &p->in, &p->out, NULL, &err);
  if (!ok)
    g_test_message("cannot start the reference peer %s: %s", path, err->message);
  g_assert_true(ok);
  g_autofree char *ready = peer_line(p);
  if (!g_str_has_prefix(ready, "ready"))
    g_test_message("reference peer: %s", ready);
  g_assert_true(g_str_has_prefix(ready, "ready"));
  g_autofree char *mr = peer_cmd(p, "mr");
  guint len = 0;
  g_assert_cmpint(sscanf(mr, "mr %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u", &p->addr,
                         &p->rkey, &len), ==, 3);
  g_assert_cmpuint(len, ==, INTEROP_PEER_BUF);
}

static void
peer_stop(peer_t *p)
{
  const char quit[] = "quit\n";
  if (write(p->in, quit, sizeof(quit) - 1) < 0)
    g_test_message("the reference peer is gone: %s", g_strerror(errno));
  close(p->in);
  int status = 0;
  cert_limit_t w;
  cert_limit_begin(&w, "the reference peer to exit", 500 * 10000);
  for (int i = 0; i < 500 && waitpid(p->pid, &status, WNOHANG) == 0; i++)
    g_usleep(10000);
  cert_limit_end(&w);
  if (waitpid(p->pid, &status, WNOHANG) == 0) {
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &status, 0);
  }
  close(p->out);
  g_spawn_close_pid(p->pid);
  g_string_free(p->rx, TRUE);
}

/* "wc ID STATUS OPCODE BYTES" from the peer, checked. */
static void
peer_check_wc(const char *ans, guint64 id, rnicpi_wc_opcode_t op, guint64 bytes)
{
  guint64 got_id = 0, got_bytes = 0;
  int status = -1, opcode = -1;
  g_assert_cmpint(sscanf(ans, "wc %" G_GUINT64_FORMAT " %d %d %" G_GUINT64_FORMAT, &got_id, &status,
                         &opcode, &got_bytes), ==, 4);
  g_assert_cmpuint(got_id, ==, id);
  g_assert_cmpint(status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(opcode, ==, op);
  if (op == RNICPI_WC_RECV)
    g_assert_cmpuint(got_bytes, ==, bytes);
}

static void
peer_expect_bytes(peer_t *p, size_t off, size_t len, uint8_t seed)
{
  g_autofree char *ans = peer_cmd(p, "check %zu %zu %u", off, len, seed);
  if (strcmp(ans, "ok") != 0) {
    g_autofree char *msg = g_strdup_printf("at the reference peer, %zu bytes at offset %zu: %s "
                                           "(byte, got, expected)", len, off, ans);
    g_assertion_message(G_LOG_DOMAIN, __FILE__, __LINE__, G_STRFUNC, msg);
  }
}

static void
fill(cert_buf_t *b, size_t off, size_t len, uint8_t seed)
{
  for (size_t i = 0; i < len; i++)
    b->data[off + i] = interop_pattern(seed, i);
}

static void
expect_bytes(const cert_buf_t *b, size_t off, size_t len, uint8_t seed)
{
  for (size_t i = 0; i < len; i++)
    if (b->data[off + i] != interop_pattern(seed, i)) {
      g_test_message("at the provider under test, byte %zu of a %zu-byte transfer is 0x%02x, "
                     "expected 0x%02x", i, len, b->data[off + i], interop_pattern(seed, i));
      g_assert_cmphex(b->data[off + i], ==, interop_pattern(seed, i));
    }
}

static void
expect_wc(rnicpi_cq_t *cq, uint64_t qp_ctx, uint64_t id, rnicpi_wc_opcode_t op, uint32_t bytes)
{
  rnicpi_wc_t wc = cert_wc(cq);
  g_assert_cmphex(wc.wr_id, ==, id);
  g_assert_cmpint(wc.status, ==, RNICPI_WC_SUCCESS);
  g_assert_cmpint(wc.opcode, ==, op);
  g_assert_cmphex(wc.qp_ctx, ==, qp_ctx);
  if (op == RNICPI_WC_RECV)
    g_assert_cmpuint(wc.byte_len, ==, bytes);
}

/* The address text and port the peer connects to: the device's first. */
static void
addr_text(cert_t *f, char *text, size_t len)
{
  struct sockaddr_storage ss;
  cert_self_addr(f, &ss);
  const void *ip = ss.ss_family == AF_INET ? (const void *) &((struct sockaddr_in *) &ss)->sin_addr
                                           : (const void *) &((struct sockaddr_in6 *) &ss)->sin6_addr;
  g_assert_nonnull(inet_ntop(ss.ss_family, ip, text, (socklen_t) len));
}

static void
ref_connect(cert_t *f, peer_t *peer, cert_side_t *s, const ref_case_t *rc)
{
  /* Private data both ways, 48 bytes (within what any MPA end takes, RFC
   * 5044 7.1.1: 512), or less when the provider may send less. */
  uint8_t req[48], rep[48];
  uint32_t req_len = rc->active ? cert_min(sizeof(req), f->caps.pdata_connect) : sizeof(req);
  uint32_t rep_len = rc->active ? sizeof(rep) : cert_min(sizeof(rep), f->caps.pdata_accept);
  for (uint32_t i = 0; i < sizeof(req); i++) {
    req[i] = interop_pattern(0x51, i);
    rep[i] = interop_pattern(0x52, i);
  }
  g_autofree char *req_hex = interop_hex(req, req_len);
  g_autofree char *rep_hex = interop_hex(rep, rep_len);
  rnicpi_conn_param_t cp = { .ird = cert_min(4, f->caps.max_ird), .ord = cert_min(4, f->caps.max_ord) };
  if (rc->active) {
    g_autofree char *ans = peer_cmd(peer, "listen");
    guint port = 0;
    g_assert_cmpint(sscanf(ans, "port %u", &port), ==, 1);
    rnicpi_addr_t dst;
    cert_addr(f, port, &dst);
    cp.pdata = req;
    cp.pdata_len = req_len;
    cert_ok(CMV->connect(s->qp, &dst, &cp));
    g_autofree char *est = peer_cmd(peer, "accept %s", rep_hex);
    /* The peer saw our request's private data byte for byte. */
    g_autofree char *want = g_strdup_printf("established %s", req_hex);
    g_assert_cmpstr(est, ==, want);
    g_autofree rnicpi_cm_event_t *ev = cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s->ctx);
    g_assert_cmpuint(ev->pdata_len, ==, rep_len);
    g_assert_cmpmem(ev->pdata, ev->pdata_len, rep, rep_len);
  } else {
    rnicpi_listen_t *lst = NULL;
    uint32_t port = cert_listen(f, 0x1157, &lst);
    char text[INET6_ADDRSTRLEN];
    addr_text(f, text, sizeof(text));
    g_autofree char *line = g_strdup_printf("connect %s %u %s\n", text, port, req_hex);
    g_assert_cmpint(write(peer->in, line, strlen(line)), ==, (gssize) strlen(line));
    g_autofree rnicpi_cm_event_t *creq = cert_wait_cm(f, RNICPI_CM_CONNECT_REQUEST, 0x1157);
    g_assert_cmpuint(creq->pdata_len, ==, req_len);
    g_assert_cmpmem(creq->pdata, creq->pdata_len, req, req_len);
    cp.pdata = rep;
    cp.pdata_len = rep_len;
    cert_ok(CMV->accept(s->qp, creq->conn_id, &cp));
    g_autofree char *est = peer_line(peer);
    g_autofree char *want = g_strdup_printf("established %s", rep_hex);
    if (strcmp(est, want) != 0)
      g_test_message("reference peer: %s", est);
    g_assert_cmpstr(est, ==, want);
    g_free(cert_wait_cm(f, RNICPI_CM_ESTABLISHED, s->ctx));
    cert_ok(CMV->unlisten(lst));
  }
  g_assert_cmpint(QUE->qp_state(s->qp), ==, RNICPI_QPS_RTS);
}

/* Sizes: one byte, odd ones within one FPDU, and messages of several FPDUs
 * (an FPDU carries at most 65535 bytes of ULPDU, RFC 5044 4.1). */
static const uint32_t sizes[] = { 1, 777, 4096, 65543, 262147 };

static void
test_ref(cert_t *f, gconstpointer data)
{
  const ref_case_t *rc = data;
  g_test_summary(rc->summary);
  if (!interop_require_wire(f))
    return;
  g_test_message("the reference peer %s MPA CRC (RFC 5044 7.1.2: used when either end asks)",
                 rc->crc ? "asks for" : "does not ask for");
  peer_t peer;
  peer_start(&peer, rc->crc);
  cert_side_t s;
  cert_side_new(f, &s, 0xc0000, 64, NULL);
  cert_buf_t b;
  cert_buf_peer_reached(TRUE);  /* the peer process writes and reads it */
  cert_buf_new(s.pd, &b, INTEROP_PEER_BUF,
               RNICPI_ACCESS_LOCAL_READ | RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE);
  cert_buf_peer_reached(FALSE);
  ref_connect(f, &peer, &s, rc);

  uint64_t id = 100;
  /* The peer's receive that follows a Write: it lands after the Write
   * (RFC 5040 5.5: placement of a Send implies that of what came before). */
  const uint32_t fence_off = INTEROP_PEER_BUF - 64;
  for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
    uint32_t len = (uint32_t) cert_min(sizes[k], (uint32_t) MIN(f->caps.max_msg_size, fence_off));
    uint8_t seed = (uint8_t) (k * 4 + 1);
    g_test_message("%u bytes each way: Send, RDMA Write, RDMA Read", len);

    /* Send, provider -> peer. */
    g_free(peer_cmd(&peer, "recv 0 %u %" G_GUINT64_FORMAT, len, id));
    fill(&b, 0, len, seed);
    cert_post_send(s.qp, RNICPI_WR_SEND, &b, 0, len, id, RNICPI_WR_SIGNALED, 0, 0);
    expect_wc(s.scq, s.ctx, id, RNICPI_WC_SEND, len);
    g_autofree char *rw = peer_cmd(&peer, "wait-recv");
    peer_check_wc(rw, id, RNICPI_WC_RECV, len);
    peer_expect_bytes(&peer, 0, len, seed);
    id++;

    /* Send, peer -> provider. */
    memset(b.data, 0, len);
    cert_post_recv(s.qp, &b, 0, len, id);
    g_free(peer_cmd(&peer, "fill 0 %u %u", len, seed + 1));
    g_autofree char *sw = peer_cmd(&peer, "send 0 %u %" G_GUINT64_FORMAT, len, id);
    peer_check_wc(sw, id, RNICPI_WC_SEND, len);
    expect_wc(s.rcq, s.ctx, id, RNICPI_WC_RECV, len);
    expect_bytes(&b, 0, len, seed + 1);
    id++;

    /* RDMA Write, provider -> peer, then a Send that lands after it. */
    fill(&b, 0, len, seed + 2);
    cert_post_send(s.qp, RNICPI_WR_RDMA_WRITE, &b, 0, len, id, RNICPI_WR_SIGNALED, peer.addr + 8,
                   peer.rkey);
    expect_wc(s.scq, s.ctx, id, RNICPI_WC_RDMA_WRITE, len);
    g_free(peer_cmd(&peer, "recv %u 16 %" G_GUINT64_FORMAT, fence_off, id + 1));
    cert_post_send(s.qp, RNICPI_WR_SEND, &b, 0, 16, id + 1, RNICPI_WR_SIGNALED, 0, 0);
    expect_wc(s.scq, s.ctx, id + 1, RNICPI_WC_SEND, 16);
    g_autofree char *fw = peer_cmd(&peer, "wait-recv");
    peer_check_wc(fw, id + 1, RNICPI_WC_RECV, 16);
    peer_expect_bytes(&peer, 8, len, seed + 2);
    id += 2;

    /* RDMA Write, peer -> provider, then a Send that lands after it. */
    memset(b.data, 0, len + 16);
    g_free(peer_cmd(&peer, "fill 0 %u %u", len, seed + 3));
    g_autofree char *ww = peer_cmd(&peer, "write 0 %u %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
                                   " %" G_GUINT64_FORMAT, len, cert_raddr(&b, 16), (guint64) b.mr->rkey, id);
    peer_check_wc(ww, id, RNICPI_WC_RDMA_WRITE, len);
    cert_post_recv(s.qp, &b, INTEROP_PEER_BUF - 16, 16, id + 1);
    g_autofree char *fs = peer_cmd(&peer, "send 0 16 %" G_GUINT64_FORMAT, id + 1);
    peer_check_wc(fs, id + 1, RNICPI_WC_SEND, 16);
    expect_wc(s.rcq, s.ctx, id + 1, RNICPI_WC_RECV, 16);
    expect_bytes(&b, 16, len, seed + 3);
    g_assert_cmphex(b.data[0], ==, 0); /* nothing before the target */
    id += 2;

    /* RDMA Read by the provider of the peer's memory. */
    memset(b.data, 0, len);
    g_free(peer_cmd(&peer, "fill 4 %u %u", len, seed + 4));
    cert_post_send(s.qp, RNICPI_WR_RDMA_READ, &b, 0, len, id, RNICPI_WR_SIGNALED, peer.addr + 4,
                   peer.rkey);
    expect_wc(s.scq, s.ctx, id, RNICPI_WC_RDMA_READ, len);
    expect_bytes(&b, 0, len, seed + 4);
    id++;

    /* RDMA Read by the peer of the provider's memory. */
    fill(&b, 32, len, seed + 5);
    g_free(peer_cmd(&peer, "fill 0 %u 0", len));
    g_autofree char *rr = peer_cmd(&peer, "read 0 %u %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
                                   " %" G_GUINT64_FORMAT, len, cert_raddr(&b, 32), (guint64) b.mr->rkey, id);
    peer_check_wc(rr, id, RNICPI_WC_RDMA_READ, len);
    peer_expect_bytes(&peer, 0, len, seed + 5);
    id++;
  }
  /* Every operation completed once, and nothing more. */
  cert_assert_cq_quiet(s.scq);
  cert_assert_cq_quiet(s.rcq);
  cert_buf_check_guards(&b);

  /* Orderly disconnect (RFC 5040 5.4 over the LLP's close): the provider
   * under test closes when it connected, the peer when it did. */
  if (rc->active) {
    cert_ok(CMV->disconnect(s.qp, NULL, 0));
    g_autofree char *d = peer_cmd(&peer, "wait-disconnected");
    g_assert_cmpstr(d, ==, "disconnected");
  } else {
    g_free(peer_cmd(&peer, "disconnect"));
  }
  g_free(cert_wait_cm(f, RNICPI_CM_DISCONNECTED, s.ctx));
  cert_assert_no_cm(f, RNICPI_CM_BROKEN, s.ctx);
  cert_assert_cq_quiet(s.scq);
  cert_assert_cq_quiet(s.rcq);
  peer_stop(&peer);
  cert_buf_free(&b);
  cert_side_free(&s);
}

static const ref_case_t cases[] = {
  { TRUE, TRUE, "the provider connects to vp/iwarp in another process, which asks for MPA CRC: "
    "private data both ways, Send, RDMA Write and RDMA Read each way from 1 byte to several "
    "FPDUs, every byte checked where it landed, then the provider disconnects" },
  { TRUE, FALSE, "as active/crc, with a reference peer that does not ask for MPA CRC" },
  { FALSE, TRUE, "vp/iwarp in another process connects to the provider, asking for MPA CRC: "
    "private data both ways, the same transfers both ways, then the peer disconnects" },
  { FALSE, FALSE, "as passive/crc, with a reference peer that does not ask for MPA CRC" },
};

void
interop_register_peer(void)
{
  static const char *const names[] = {
    "/interop/peer/active/crc", "/interop/peer/active/no-crc",
    "/interop/peer/passive/crc", "/interop/peer/passive/no-crc",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
    g_test_add(names[i], cert_t, &cases[i], cert_setup, test_ref, cert_teardown);
}
