/*
 * Conformance: socket conversion (IT-API 2.6): an application's connected
 * TCP socket becomes the connection of an endpoint on each side.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"

static gboolean
have_sc(conf_side_t *s)
{
  it_ia_info_t *info = conf_info(s);
  gboolean ok = info->socket_conversion_support;
  it_ia_info_free(info);
  return conf_require(ok, "socket_conversion_support");
}

/* @a as a socket address of the host (port 0); FALSE for a type TCP has
 * no address for (a GID). */
static gboolean
host_sockaddr(const it_net_addr_t *a, struct sockaddr_storage *ss, socklen_t *len)
{
  memset(ss, 0, sizeof(*ss));
  if (a->addr_type == IT_IPV4) {
    struct sockaddr_in *s4 = (struct sockaddr_in *) ss;
    s4->sin_family = AF_INET;
    s4->sin_addr = a->addr.ipv4;
    *len = sizeof(*s4);
    return TRUE;
  }
  if (a->addr_type == IT_IPV6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = a->addr.ipv6;
    *len = sizeof(*s6);
    return TRUE;
  }
  return FALSE;
}

/* A connected pair of TCP sockets; the listener stays open (it is how the
 * accepted side is told apart) until @lfd is closed.  The connection runs
 * over the address of @s's interface the suite connects to
 * (conf_self_addr): a provider that takes over a socket carries its RDMA
 * traffic on that TCP connection, and an RNIC offloads only connections
 * over its own port, which loopback never crosses.  Only when that address
 * is not one of the host's TCP addresses (bind says EADDRNOTAVAIL, or it
 * is a GID) does the pair use 127.0.0.1, and the test log says so. */
static void
tcp_pair(conf_side_t *s, int *client, int *server, int *lfd)
{
  it_net_addr_t self = conf_self_addr(s);
  g_autofree char *self_s = conf_addr_str(&self);
  struct sockaddr_storage a;
  socklen_t al;
  int fd = -1;
  if (host_sockaddr(&self, &a, &al)) {
    fd = socket(a.ss_family, SOCK_STREAM, 0);
    g_assert_cmpint(fd, >=, 0);
    if (bind(fd, (struct sockaddr *) &a, al) != 0) {
      int err = errno;
      if (err != EADDRNOTAVAIL)
        g_error("binding a TCP listener to %s, the first address IA '%s' lists: %s", self_s,
                conf_ia_name(), g_strerror(err));
      close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {
    g_test_message("%s, the first address IA '%s' lists, is no TCP address of this host; the "
                   "TCP connection runs over 127.0.0.1", self_s, conf_ia_name());
    it_net_addr_t lo = { .addr_type = IT_IPV4 };
    lo.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
    host_sockaddr(&lo, &a, &al);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *) &a, al), ==, 0);
    g_free(self_s);
    self_s = conf_addr_str(&lo);
  }
  *lfd = fd;
  g_assert_cmpint(listen(*lfd, 1), ==, 0);
  al = sizeof(a);
  g_assert_cmpint(getsockname(*lfd, (struct sockaddr *) &a, &al), ==, 0);
  *client = socket(a.ss_family, SOCK_STREAM, 0);
  g_assert_cmpint(*client, >=, 0);
  if (connect(*client, (struct sockaddr *) &a, al) != 0)
    g_error("connecting a TCP socket to %s (for IA '%s') failed: %s; check that no firewall "
            "keeps the host from its own address", self_s, conf_ia_name(), g_strerror(errno));
  *server = accept(*lfd, NULL, NULL);
  g_assert_cmpint(*server, >=, 0);
}

static void
test_convert(void)
{
  g_test_summary("Socket conversion: after a streaming-mode exchange on an application's TCP "
                 "connection, it_socket_convert on both ends connects their EPs with each end's "
                 "message as private data; send/recv and RDMA Write then move verified data");
  conf_side_t a, p;
  conf_side_open(&a, NULL);
  if (!have_sc(&a)) {
    conf_side_close(&a);
    return;
  }
  conf_side_open(&p, NULL);
  int c, s, l;
  tcp_pair(&a, &c, &s, &l);

  /* Streaming mode first, as an application negotiating over TCP would. */
  const char hello[] = "HELLO RDMA";
  char got[sizeof(hello)];
  g_assert_cmpint(write(c, hello, sizeof(hello)), ==, (int) sizeof(hello));
  g_assert_cmpint(read(s, got, sizeof(got)), ==, (int) sizeof(hello));
  g_assert_cmpmem(got, sizeof(got), hello, sizeof(hello));

  conf_buf_t rbuf, sbuf, tgt;
  conf_buf_new(&p, &rbuf, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&p, &tgt, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_ADDR_MODE_ABSOLUTE);
  conf_buf_new(&a, &sbuf, 4096, IT_PRIV_LOCAL, IT_ADDR_MODE_ABSOLUTE);
  it_lmr_triplet_t rt = conf_seg(&rbuf, 0, 4096);
  conf_ok(it_post_recv(p.ep, &rt, 1, 7, IT_COMPLETION_FLAG));

  static const unsigned char amsg[] = "from the connecting end";
  static const unsigned char pmsg[] = "from the accepting end";
  conf_ok(it_socket_convert(s, p.ep, IT_SC_DEFAULT, pmsg, sizeof(pmsg)));
  conf_ok(it_socket_convert(c, a.ep, IT_SC_DEFAULT, amsg, sizeof(amsg)));
  it_event_t ev = conf_wait(a.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.private_data_present);
  g_assert_cmpmem(ev.conn.private_data, sizeof(pmsg), pmsg, sizeof(pmsg));
  ev = conf_wait(p.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  g_assert_true(ev.conn.private_data_present);
  g_assert_cmpmem(ev.conn.private_data, sizeof(amsg), amsg, sizeof(amsg));
  close(c); /* the interface holds its own copies */
  close(s);
  close(l);

  conf_buf_fill(&sbuf, 4);
  it_lmr_triplet_t st = conf_seg(&sbuf, 0, 3000);
  conf_ok(it_post_send(a.ep, &st, 1, 8, IT_COMPLETION_FLAG));
  it_dto_cmpl_event_t r = conf_dto(p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 7);
  g_assert_cmpuint(r.transferred_length, ==, 3000);
  g_assert_cmpmem(rbuf.data, 3000, sbuf.data, 3000);
  conf_dto(a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 8);
  conf_ok(it_post_rdma_write(a.ep, &st, 1, 9, IT_COMPLETION_FLAG,
                             it_make_rdma_addr_absolute(tgt.data + 100), tgt.ctx));
  conf_dto(a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 9);
  conf_placed(&a, it_make_rdma_addr_absolute(tgt.data + 100), tgt.ctx);
  g_assert_cmpmem(tgt.data + 100, 3000, sbuf.data, 3000);
  conf_buf_check_guards(&tgt);

  conf_ok(it_ep_disconnect(a.ep, NULL, 0));
  conf_wait(a.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_wait(p.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  conf_buf_free(&tgt);
  conf_buf_free(&rbuf);
  conf_buf_free(&sbuf);
  conf_side_close(&a);
  conf_side_close(&p);
}

static void
test_errors(void)
{
  g_test_summary("Socket conversion: a descriptor that is not a connected TCP socket, the "
                 "no-MPA flag, a connected EP and too much private data are refused");
  conf_side_t a;
  conf_side_open(&a, NULL);
  it_ia_info_t *info = conf_info(&a);
  gboolean sc = info->socket_conversion_support;
  size_t limit = info->connect_private_data_len;
  it_ia_info_free(info);
  if (!sc) {
    /* Without the capability the call says so, whatever its arguments. */
    conf_assert_status(it_socket_convert(0, a.ep, IT_SC_DEFAULT, NULL, 0), IT_ERR_OP_NOT_SUPPORTED);
    conf_side_close(&a);
    return;
  }
  int udp = socket(AF_INET, SOCK_DGRAM, 0);
  conf_assert_status(it_socket_convert(udp, a.ep, IT_SC_DEFAULT, NULL, 0), IT_ERR_INVALID_CONVERSION);
  close(udp);
  int unconnected = socket(AF_INET, SOCK_STREAM, 0);
  conf_assert_status(it_socket_convert(unconnected, a.ep, IT_SC_DEFAULT, NULL, 0),
                     IT_ERR_INVALID_CONVERSION);
  close(unconnected);
  conf_assert_status(it_socket_convert(-1, a.ep, IT_SC_DEFAULT, NULL, 0), IT_ERR_INVALID_CONVERSION);
  int c, s, l;
  tcp_pair(&a, &c, &s, &l);
  conf_assert_status(it_socket_convert(c, a.ep, IT_SC_NO_REQ_REP, NULL, 0), IT_ERR_INVALID_CONVERSION);
  unsigned char *big = g_malloc0(limit + 1);
  conf_assert_status(it_socket_convert(c, a.ep, IT_SC_DEFAULT, big, limit + 1),
                     IT_ERR_INVALID_PDATA_LENGTH);
  g_free(big);
  conf_assert_status(it_socket_convert(c, (it_ep_handle_t) a.pz, IT_SC_DEFAULT, NULL, 0),
                     IT_ERR_INVALID_EP);
  it_ep_param_t prm;
  conf_ok(it_ep_query(a.ep, IT_EP_PARAM_STATE, &prm));
  g_assert_cmpint(prm.ep_state.rc, ==, IT_EP_STATE_UNCONNECTED);
  close(c);
  close(s);
  close(l);
  conf_side_close(&a);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conformance/sc/convert", test_convert);
  g_test_add_func("/conformance/sc/errors", test_errors);
  return g_test_run();
}
