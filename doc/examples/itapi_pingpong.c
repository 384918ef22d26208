/*
 * itapi-pingpong: an IT-API application, written against <it_api.h> and the
 * project's <itx.h> (itx_mem_alloc, itx_error_detail).
 *
 * A server and a client (two threads, each with its own interface adapter)
 * connect through the provider's connection management, at the interface's
 * own first address, exchange their buffers' remote contexts in the
 * connection private data, then run three ping-pongs and check every byte
 * that lands:
 *   - send/receive: the client sends, the server answers with a send;
 *   - RDMA Write: each side writes the other's buffer and waits for the
 *     peer's write to land in its own (the perftest write_lat scheme);
 *   - RDMA Read: the client reads the server's buffer and checks it.
 * Latencies are printed as half a round trip (send, write) or one read.
 * The buffers come from itx_mem_alloc(): the memory the provider reaches
 * at its best speed (on vp/emul, one its peer can map for one-sided RDMA).
 * The client disconnects as soon as its last transfer has completed.
 *
 *   itapi-pingpong [-i interface] [-n iterations] [-s bytes] [-t send|all]
 *                  [-l | -c address] [-p port]
 *
 * -t send runs the send/receive ping-pong only.  -l runs the server alone
 * (it listens on -p port and serves one client), -c the client alone,
 * connecting to a server at that IPv4 address: the two sides may then use
 * different interfaces, providers and hosts.
 *
 * SPDX-License-Identifier: MIT
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    it_status_t st_ = (call);                                                  \
    if (st_ != IT_SUCCESS) {                                                   \
      fprintf(stderr, "itapi-pingpong: %s failed with status %d at %s:%d\n",   \
              #call, (int) st_, __FILE__, __LINE__);                           \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define FAIL(...)                                                              \
  do {                                                                         \
    fprintf(stderr, "itapi-pingpong: " __VA_ARGS__);                           \
    fputc('\n', stderr);                                                       \
    exit(1);                                                                   \
  } while (0)

/* What each side tells the other in the connection private data. */
typedef struct {
  uint64_t addr;    /* it_rdma_addr_t of the buffer, network order */
  uint64_t context; /* it_rmr_context_t, network order */
} peer_info_t;

typedef struct {
  const char *ia_name;
  size_t iters;
  size_t size;
  int send_only;             /* -t send */
  uint16_t port;             /* network order: -p, else set by the server */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int listening;
} shared_t;

typedef struct {
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto_evd, cm_evd, req_evd;
  it_ep_handle_t ep;
  it_lmr_handle_t lmr;
  it_rmr_context_t context;
  unsigned char *buf;        /* [0, size): RDMA target; [size, 2 size): source; [2 size, 3 size): receives */
  peer_info_t peer;
} side_t;

static double
now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Where the client finds the server, which listens on the same interface:
 * the interface's own first address (spigot 0), as an RNIC is reached only
 * at its port's addresses; 127.0.0.1 when the interface lists none. */
static it_net_addr_t
self_addr(it_ia_handle_t ia)
{
  it_net_addr_t a;
  memset(&a, 0, sizeof(a));
  a.addr_type = IT_IPV4;
  a.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
  it_ia_info_t *info;
  CHECK(it_ia_query(ia, &info));
  if (info->num_spigots > 0 && info->spigot_info[0].num_net_addr > 0)
    a = info->spigot_info[0].net_addr[0];
  it_ia_info_free(info);
  return a;
}

static void
open_side(side_t *s, const shared_t *sh)
{
  CHECK(it_ia_create(sh->ia_name, 2, 1, &s->ia));
  CHECK(it_pz_create(s->ia, &s->pz));
  CHECK(it_evd_create(s->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 64, 1,
                      IT_NULL_HANDLE, &s->dto_evd, NULL));
  CHECK(it_evd_create(s->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1,
                      IT_NULL_HANDLE, &s->cm_evd, NULL));
  /* Zero-filled, page-aligned memory of the kind the provider wants. */
  it_status_t st = itx_mem_alloc(s->ia, 3 * sh->size, (void **) &s->buf);
  if (st != IT_SUCCESS)
    FAIL("itx_mem_alloc of a %zu-byte buffer: %s", 3 * sh->size, itx_error_detail());
  CHECK(it_lmr_create(s->pz, s->buf, NULL, 3 * sh->size, IT_ADDR_MODE_ABSOLUTE,
                      IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE, 0, &s->lmr, &s->context));

  it_ep_attributes_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.max_dto_payload_size = sh->size;
  attr.max_request_dtos = 16;
  attr.max_recv_dtos = 16;
  attr.max_send_segments = 1;
  attr.max_recv_segments = 1;
  attr.srv.rc.rdma_read_enable = IT_TRUE;
  attr.srv.rc.rdma_write_enable = IT_TRUE;
  attr.srv.rc.max_rdma_read_segments = 1;
  attr.srv.rc.max_rdma_write_segments = 1;
  attr.srv.rc.rdma_read_ird = 4;
  attr.srv.rc.rdma_read_ord = 4;
  CHECK(it_ep_rc_create(s->pz, s->dto_evd, s->dto_evd, s->cm_evd, IT_EP_NO_FLAG, &attr, &s->ep));
}

static void
close_side(side_t *s)
{
  CHECK(it_ep_free(s->ep));
  CHECK(it_lmr_free(s->lmr));
  CHECK(it_ia_free(s->ia)); /* frees the EVDs and the PZ with it */
  CHECK(itx_mem_free(s->buf)); /* the memory outlives the IA */
}

static it_event_t
wait_event(it_evd_handle_t evd, it_event_type_t want)
{
  it_event_t ev;
  size_t more;
  CHECK(it_evd_wait(evd, 10 * 1000 * 1000, &ev, &more));
  if (ev.event_number != want)
    FAIL("expected event 0x%x, got 0x%x", (unsigned) want, (unsigned) ev.event_number);
  return ev;
}

/* Busy-poll one DTO completion and check it. */
static it_dto_cmpl_event_t
poll_dto(side_t *s, it_event_type_t want, it_dto_cookie_t cookie)
{
  it_event_t ev;
  it_status_t st;
  while ((st = it_evd_dequeue(s->dto_evd, &ev)) == IT_ERR_QUEUE_EMPTY)
    ;
  CHECK(st);
  if (ev.event_number != want || ev.dto_cmpl.dto_status != IT_DTO_SUCCESS ||
      ev.dto_cmpl.cookie != cookie)
    FAIL("completion 0x%x status %d cookie %llu; expected 0x%x success cookie %llu",
         (unsigned) ev.event_number, (int) ev.dto_cmpl.dto_status,
         (unsigned long long) ev.dto_cmpl.cookie, (unsigned) want, (unsigned long long) cookie);
  return ev.dto_cmpl;
}

static void
fill(unsigned char *p, size_t n, size_t iter, int who)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char) (i * 7 + iter * 13 + who);
}

static void
verify(const unsigned char *p, size_t n, size_t iter, int who, const char *what)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char) (i * 7 + iter * 13 + who))
      FAIL("%s iteration %zu: byte %zu is 0x%02x, expected 0x%02x", what, iter, i, p[i],
           (unsigned char) (i * 7 + iter * 13 + who));
}

/* The completion of our Send and of the answer's receive, in either
 * order: on iWARP a Send completes once the transport took it, and the
 * answer may be received before the RNIC reports that (siw does). */
static void
poll_send_and_recv(side_t *s, it_dto_cookie_t cookie)
{
  int sent = 0, received = 0;
  while (!sent || !received) {
    it_event_t ev;
    it_status_t st;
    while ((st = it_evd_dequeue(s->dto_evd, &ev)) == IT_ERR_QUEUE_EMPTY)
      ;
    CHECK(st);
    int *seen = ev.event_number == IT_DTO_SEND_CMPL_EVENT      ? &sent
                : ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT ? &received
                                                               : NULL;
    if (seen == NULL || *seen || ev.dto_cmpl.dto_status != IT_DTO_SUCCESS ||
        ev.dto_cmpl.cookie != cookie)
      FAIL("completion 0x%x status %d cookie %llu; expected a send and a receive, successful, "
           "cookie %llu", (unsigned) ev.event_number, (int) ev.dto_cmpl.dto_status,
           (unsigned long long) ev.dto_cmpl.cookie, (unsigned long long) cookie);
    *seen = 1;
  }
}

/* Busy-poll the completion of Send @cookie; a successful receive of the
 * next message (@cookie + 1) may come first.  Returns 1 when it did. */
static int
poll_send_or_next_recv(side_t *s, it_dto_cookie_t cookie)
{
  int early = 0;
  for (;;) {
    it_event_t ev;
    it_status_t st;
    while ((st = it_evd_dequeue(s->dto_evd, &ev)) == IT_ERR_QUEUE_EMPTY)
      ;
    CHECK(st);
    if (ev.dto_cmpl.dto_status == IT_DTO_SUCCESS && ev.event_number == IT_DTO_SEND_CMPL_EVENT &&
        ev.dto_cmpl.cookie == cookie)
      return early;
    if (ev.dto_cmpl.dto_status == IT_DTO_SUCCESS && ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
        ev.dto_cmpl.cookie == cookie + 1 && !early) {
      early = 1;
      continue;
    }
    FAIL("completion 0x%x status %d cookie %llu; expected the send of cookie %llu (or first the "
         "receive of the next)", (unsigned) ev.event_number, (int) ev.dto_cmpl.dto_status,
         (unsigned long long) ev.dto_cmpl.cookie, (unsigned long long) cookie);
  }
}

static void
post_recv(side_t *s, size_t size, it_dto_cookie_t cookie)
{
  it_lmr_triplet_t t = { .lmr = s->lmr, .addr.abs = s->buf + 2 * size, .length = size };
  CHECK(it_post_recv(s->ep, &t, 1, cookie, IT_COMPLETION_FLAG));
}

static void
send_buf(side_t *s, size_t size, it_dto_cookie_t cookie)
{
  it_lmr_triplet_t t = { .lmr = s->lmr, .addr.abs = s->buf + size, .length = size };
  CHECK(it_post_send(s->ep, &t, 1, cookie, IT_COMPLETION_FLAG));
}

static void
write_peer(side_t *s, size_t size, it_dto_cookie_t cookie)
{
  it_lmr_triplet_t t = { .lmr = s->lmr, .addr.abs = s->buf + size, .length = size };
  CHECK(it_post_rdma_write(s->ep, &t, 1, cookie, IT_COMPLETION_FLAG,
                           it_ntoh64(s->peer.addr), it_ntoh64(s->peer.context)));
}

/* The last byte of a write carries the iteration: wait for it to land. */
static void
wait_landed(side_t *s, size_t size, size_t iter, int who)
{
  volatile unsigned char *last = s->buf + size - 1;
  unsigned char want = (unsigned char) ((size - 1) * 7 + iter * 13 + who);
  while (*last != want)
    ;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

static void *
server_main(void *arg)
{
  shared_t *sh = arg;
  side_t s;
  memset(&s, 0, sizeof(s));
  open_side(&s, sh);
  it_listen_handle_t lh;
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  CHECK(it_evd_create(s.ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1,
                      IT_NULL_HANDLE, &s.req_evd, NULL));
  /* -p: this port; otherwise the adapter chooses one. */
  qual.conn_qual.port = sh->port;
  CHECK(it_listen_create(s.ia, 0, s.req_evd,
                         sh->port != 0 ? IT_LISTEN_CONN_QUAL_INPUT : IT_LISTEN_NO_FLAG, &qual, &lh));
  pthread_mutex_lock(&sh->lock);
  sh->port = qual.conn_qual.port;
  sh->listening = 1;
  pthread_cond_signal(&sh->cond);
  pthread_mutex_unlock(&sh->lock);

  it_event_t ev = wait_event(s.req_evd, IT_CM_REQ_CONN_REQUEST_EVENT);
  if (!ev.conn_req.private_data_present)
    FAIL("the connection request carries no private data");
  memcpy(&s.peer, ev.conn_req.private_data, sizeof(s.peer));
  post_recv(&s, sh->size, 0);
  peer_info_t mine = { it_hton64(it_make_rdma_addr_absolute(s.buf)), it_hton64(s.context) };
  CHECK(it_ep_accept(s.ep, ev.conn_req.cn_est_id, (unsigned char *) &mine, sizeof(mine)));
  wait_event(s.cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT);

  /* Send/receive: echo each message back, checked.  The client's next
   * message may arrive before our Send's completion (a transport that
   * completes a Send late, such as siw): its receive is then taken first. */
  int early = 0;
  for (size_t i = 0; i < sh->iters; i++) {
    if (!early)
      poll_dto(&s, IT_DTO_RC_RECV_CMPL_EVENT, i);
    early = 0;
    verify(s.buf + 2 * sh->size, sh->size, i, 1, "send/recv at the server");
    post_recv(&s, sh->size, i + 1);
    fill(s.buf + sh->size, sh->size, i, 2);
    send_buf(&s, sh->size, i);
    early = poll_send_or_next_recv(&s, i);
  }
  /* RDMA Write: answer each landed write with one of ours. */
  for (size_t i = 0; i < sh->iters && !sh->send_only; i++) {
    wait_landed(&s, sh->size, i, 3);
    verify(s.buf, sh->size, i, 3, "RDMA Write at the server");
    fill(s.buf + sh->size, sh->size, i, 4);
    write_peer(&s, sh->size, i);
    poll_dto(&s, IT_DTO_RDMA_WRITE_CMPL_EVENT, i);
  }
  /* RDMA Read: the client reads our source half; say when it is ready. */
  if (!sh->send_only) {
    fill(s.buf + sh->size, sh->size, 0, 5);
    send_buf(&s, 1, 0);
    poll_dto(&s, IT_DTO_SEND_CMPL_EVENT, 0);
  }

  wait_event(s.cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  CHECK(it_listen_free(lh));
  close_side(&s);
  return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static void
report(const char *what, double *lat, size_t n, size_t size)
{
  qsort(lat, n, sizeof(double), cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += lat[i];
  printf("%-12s %8zu %8zu %10.2f %10.2f %10.2f %10.2f\n", what, size, n, lat[0], lat[n / 2],
         sum / n, lat[n - 1]);
}

int
main(int argc, char **argv)
{
  shared_t sh = { .iters = 1000, .size = 64 };
  pthread_mutex_init(&sh.lock, NULL);
  pthread_cond_init(&sh.cond, NULL);
  int opt, listen_only = 0;
  const char *server_addr = NULL;
  while ((opt = getopt(argc, argv, "i:n:s:t:lc:p:h")) != -1) {
    switch (opt) {
    case 'i': sh.ia_name = optarg; break;
    case 'n': sh.iters = strtoul(optarg, NULL, 10); break;
    case 's': sh.size = strtoul(optarg, NULL, 10); break;
    case 't':
      if (strcmp(optarg, "send") != 0 && strcmp(optarg, "all") != 0)
        FAIL("-t %s: the tests are 'send' (send/receive only) or 'all'", optarg);
      sh.send_only = strcmp(optarg, "send") == 0;
      break;
    case 'l': listen_only = 1; break;
    case 'c': server_addr = optarg; break;
    case 'p': sh.port = htons((uint16_t) strtoul(optarg, NULL, 10)); break;
    default:
      fprintf(stderr, "usage: %s [-i interface] [-n iterations] [-s bytes] [-t send|all] "
                      "[-l | -c address] [-p port]\n", argv[0]);
      return opt == 'h' ? 0 : 2;
    }
  }
  if (sh.iters == 0 || sh.size < 8)
    FAIL("need at least 1 iteration and 8 bytes (got -n %zu -s %zu)", sh.iters, sh.size);
  if ((listen_only || server_addr != NULL) && sh.port == 0)
    FAIL("-l and -c need the server's port (-p)");

  it_interface_t ifs[8];
  size_t n = 8, total = 0;
  it_interface_list(ifs, &n, &total);
  if (n == 0)
    FAIL("no IT-API interface is available; see itapi-info for refused providers");
  if (sh.ia_name == NULL)
    sh.ia_name = ifs[0].name;
  printf("interface %s (transport %d, IT-API %u.%u), %zu iterations of %zu bytes\n",
         sh.ia_name, (int) ifs[0].transport_type, ifs[0].major_version, ifs[0].minor_version,
         sh.iters, sh.size);

  if (listen_only) {
    server_main(&sh);
    printf("all data verified: the server's part of the exchange is done\n");
    return 0;
  }
  pthread_t server;
  if (server_addr == NULL) {
    pthread_create(&server, NULL, server_main, &sh);
    pthread_mutex_lock(&sh.lock);
    while (!sh.listening)
      pthread_cond_wait(&sh.cond, &sh.lock);
    pthread_mutex_unlock(&sh.lock);
  }

  side_t c;
  memset(&c, 0, sizeof(c));
  open_side(&c, &sh);
  it_net_addr_t addr = self_addr(c.ia);
  if (server_addr != NULL) {
    addr.addr_type = IT_IPV4;
    if (inet_pton(AF_INET, server_addr, &addr.addr.ipv4) != 1)
      FAIL("-c %s is not an IPv4 address", server_addr);
  }
  it_path_t path;
  size_t npaths = 1, tpaths = 0;
  CHECK(it_get_pathinfo(c.ia, 0, &addr, &npaths, &tpaths, &path));
  if (npaths != 1) {
    char text[INET6_ADDRSTRLEN] = "?";
    inet_ntop(addr.addr_type == IT_IPV4 ? AF_INET : AF_INET6,
              addr.addr_type == IT_IPV4 ? (const void *) &addr.addr.ipv4 : (const void *) &addr.addr.ipv6,
              text, sizeof(text));
    FAIL("interface %s has no path to its own address %s; see itapi-info for its addresses",
         sh.ia_name, text);
  }
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = sh.port;
  peer_info_t mine = { it_hton64(it_make_rdma_addr_absolute(c.buf)), it_hton64(c.context) };
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  post_recv(&c, sh.size, 0);
  CHECK(it_ep_connect(c.ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY,
                      (unsigned char *) &mine, sizeof(mine)));
  it_event_t ev = wait_event(c.cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  if (!ev.conn.private_data_present)
    FAIL("the accept carries no private data");
  memcpy(&c.peer, ev.conn.private_data, sizeof(c.peer));
  printf("connected to port %u; server buffer context 0x%llx\n", ntohs(sh.port),
         (unsigned long long) it_ntoh64(c.peer.context));

  double *lat = calloc(sh.iters, sizeof(double));
  printf("%-12s %8s %8s %10s %10s %10s %10s\n", "test", "bytes", "iters", "min_us", "median_us",
         "avg_us", "max_us");

  for (size_t i = 0; i < sh.iters; i++) {
    fill(c.buf + sh.size, sh.size, i, 1);
    double t0 = now_us();
    send_buf(&c, sh.size, i);
    poll_send_and_recv(&c, i);
    lat[i] = (now_us() - t0) / 2;
    verify(c.buf + 2 * sh.size, sh.size, i, 2, "send/recv at the client");
    post_recv(&c, sh.size, i + 1);
  }
  report("send/recv", lat, sh.iters, sh.size);

  if (!sh.send_only) {
    for (size_t i = 0; i < sh.iters; i++) {
      fill(c.buf + sh.size, sh.size, i, 3);
      double t0 = now_us();
      write_peer(&c, sh.size, i);
      poll_dto(&c, IT_DTO_RDMA_WRITE_CMPL_EVENT, i);
      wait_landed(&c, sh.size, i, 4);
      lat[i] = (now_us() - t0) / 2;
      verify(c.buf, sh.size, i, 4, "RDMA Write at the client");
    }
    report("rdma_write", lat, sh.iters, sh.size);

    poll_dto(&c, IT_DTO_RC_RECV_CMPL_EVENT, sh.iters);
    for (size_t i = 0; i < sh.iters; i++) {
      memset(c.buf, 0, sh.size);
      it_lmr_triplet_t t = { .lmr = c.lmr, .addr.abs = c.buf, .length = sh.size };
      double t0 = now_us();
      CHECK(it_post_rdma_read(c.ep, &t, 1, i, IT_COMPLETION_FLAG,
                              it_ntoh64(c.peer.addr) + sh.size, it_ntoh64(c.peer.context)));
      poll_dto(&c, IT_DTO_RDMA_READ_CMPL_EVENT, i);
      lat[i] = now_us() - t0;
      verify(c.buf, sh.size, 0, 5, "RDMA Read at the client");
    }
    report("rdma_read", lat, sh.iters, sh.size);
  }

  CHECK(it_ep_disconnect(c.ep, NULL, 0));
  wait_event(c.cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  if (server_addr == NULL)
    pthread_join(server, NULL);
  close_side(&c);
  free(lat);
  size_t one_sided = sh.send_only ? 0 : sh.iters;
  printf("all data verified: %zu send/recv, %zu RDMA Write and %zu RDMA Read transfers of %zu bytes\n",
         2 * sh.iters, 2 * one_sided, one_sided, sh.size);
  return 0;
}
