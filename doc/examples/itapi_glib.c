/*
 * itapi-glib: an IT-API server and client in one GLib main loop.
 *
 * Nothing here blocks or polls: every event dispatcher (EVD) is created
 * with a file descriptor and given to the loop as a GSource
 * (itx_evd_source_new(), <itx_glib.h>), which calls back once per event.
 * In one thread, through one GMainLoop:
 *   - the server listens; its request EVD's source accepts the connection,
 *     handing the client its buffer's remote context in private data;
 *   - for each round the client RDMA-Writes a block into the server's
 *     buffer and then Sends a message; the server's completion EVD source
 *     sees the message arrive (the Write landed before it, RC order),
 *     checks both, and answers the same way; the client checks the answer
 *     and starts the next round;
 *   - after the last round the client disconnects; both connection EVD
 *     sources see it, and the loop quits.
 * Buffers come from itx_mem_alloc(), the memory the provider reaches
 * fastest.  Every byte that lands is checked.
 *
 *   itapi-glib [-i interface] [-n rounds] [-s bytes]
 *
 * Build: cc itapi_glib.c $(pkg-config --cflags --libs itapi glib-2.0)
 *
 * SPDX-License-Identifier: MIT
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>
#include <itx_glib.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    it_status_t st_ = (call);                                                  \
    if (st_ != IT_SUCCESS) {                                                   \
      fprintf(stderr, "itapi-glib: %s failed: %s (%s) at %s:%d\n", #call,      \
              itx_status_name(st_), itx_error_detail(), __FILE__, __LINE__);   \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define FAIL(...)                                                              \
  do {                                                                         \
    fprintf(stderr, "itapi-glib: " __VA_ARGS__);                               \
    fputc('\n', stderr);                                                       \
    exit(1);                                                                   \
  } while (0)

#define MSG_LEN 64 /* bytes of each Send */

enum { SERVER = 1, CLIENT = 2 };

/* What each side tells the other in the connection private data. */
typedef struct {
  uint64_t addr;    /* it_rdma_addr_t of the buffer, network order */
  uint64_t context; /* it_rmr_context_t, network order */
} peer_info_t;

typedef struct app app_t;

typedef struct {
  app_t *app;
  int who;
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto_evd, cm_evd, req_evd;
  it_ep_handle_t ep;
  it_listen_handle_t listener;
  it_lmr_handle_t lmr;
  it_rmr_context_t context;
  /* [0, size): the peer's Writes land here; [size, size + MSG_LEN): its
   * Sends; then our Write source and our Send source. */
  unsigned char *buf;
  size_t buf_len;
  peer_info_t peer;
  size_t rounds, sends, writes;
  int disconnected;
} side_t;

struct app {
  const char *ia_name;
  size_t rounds, size;
  GMainLoop *loop;
  side_t server, client;
};

static unsigned char *target(side_t *s) { return s->buf; }
static unsigned char *recv_area(side_t *s) { return s->buf + s->app->size; }
static unsigned char *write_src(side_t *s) { return s->buf + s->app->size + MSG_LEN; }
static unsigned char *send_src(side_t *s) { return s->buf + 2 * s->app->size + MSG_LEN; }

static unsigned char
pattern(size_t round, int who, size_t i)
{
  return (unsigned char) (i * 7 + round * 13 + who * 101);
}

static void
fill(unsigned char *p, size_t n, size_t round, int who)
{
  for (size_t i = 0; i < n; i++)
    p[i] = pattern(round, who, i);
}

static void
verify(const unsigned char *p, size_t n, size_t round, int who, const char *what)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != pattern(round, who, i))
      FAIL("%s, round %zu: byte %zu is 0x%02x, expected 0x%02x", what, round, i, p[i],
           pattern(round, who, i));
}

static void
post_recv(side_t *s, size_t round)
{
  it_lmr_triplet_t t = { .lmr = s->lmr, .addr.abs = recv_area(s), .length = MSG_LEN };
  CHECK(it_post_recv(s->ep, &t, 1, round, IT_COMPLETION_FLAG));
}

/* One round from @s: an RDMA Write into the peer's buffer, then a Send
 * whose arrival tells the peer the Write has landed. */
static void
send_round(side_t *s, size_t round)
{
  size_t size = s->app->size;
  fill(write_src(s), size, round, s->who);
  fill(send_src(s), MSG_LEN, round, s->who);
  it_lmr_triplet_t w = { .lmr = s->lmr, .addr.abs = write_src(s), .length = size };
  CHECK(it_post_rdma_write(s->ep, &w, 1, round, IT_COMPLETION_FLAG, it_ntoh64(s->peer.addr),
                           it_ntoh64(s->peer.context)));
  it_lmr_triplet_t t = { .lmr = s->lmr, .addr.abs = send_src(s), .length = MSG_LEN };
  CHECK(it_post_send(s->ep, &t, 1, round, IT_COMPLETION_FLAG));
}

static peer_info_t
my_info(side_t *s)
{
  peer_info_t p = { it_hton64(it_make_rdma_addr_absolute(s->buf)), it_hton64(s->context) };
  return p;
}

/* The client disconnects once its last round is answered and its own
 * requests completed (on iWARP a Send may complete after the answer). */
static void
maybe_finish(side_t *s)
{
  app_t *app = s->app;
  if (s->who == CLIENT && s->rounds == app->rounds && s->sends == app->rounds &&
      s->writes == app->rounds && s->disconnected == 0) {
    s->disconnected = -1; /* asked */
    CHECK(it_ep_disconnect(s->ep, NULL, 0));
  }
  if (app->server.disconnected == 1 && app->client.disconnected == 1)
    g_main_loop_quit(app->loop);
}

/* The server's listener: accept the request, with our buffer's context. */
static gboolean
on_request(it_evd_handle_t evd, const it_event_t *ev, gpointer data)
{
  side_t *s = data;
  (void) evd;
  if (ev->event_number != IT_CM_REQ_CONN_REQUEST_EVENT || !ev->conn_req.private_data_present)
    FAIL("server: expected a connection request with private data, got %s",
         itx_event_name(ev->event_number));
  memcpy(&s->peer, ev->conn_req.private_data, sizeof(s->peer));
  post_recv(s, 0);
  peer_info_t mine = my_info(s);
  CHECK(it_ep_accept(s->ep, ev->conn_req.cn_est_id, (unsigned char *) &mine, sizeof(mine)));
  return G_SOURCE_CONTINUE;
}

/* Connection events of either side. */
static gboolean
on_connection(it_evd_handle_t evd, const it_event_t *ev, gpointer data)
{
  side_t *s = data;
  (void) evd;
  switch (ev->event_number) {
  case IT_CM_MSG_CONN_ESTABLISHED_EVENT:
    if (s->who == CLIENT) {
      if (!ev->conn.private_data_present)
        FAIL("client: the accept carries no private data");
      memcpy(&s->peer, ev->conn.private_data, sizeof(s->peer));
      printf("connected; server buffer context 0x%llx\n",
             (unsigned long long) it_ntoh64(s->peer.context));
      send_round(s, 0);
    }
    break;
  case IT_CM_MSG_CONN_DISCONNECT_EVENT:
    s->disconnected = 1;
    maybe_finish(s);
    break;
  default:
    FAIL("%s: unexpected connection event %s", s->who == SERVER ? "server" : "client",
         itx_event_name(ev->event_number));
  }
  return G_SOURCE_CONTINUE;
}

/* Completions of either side. */
static gboolean
on_completion(it_evd_handle_t evd, const it_event_t *ev, gpointer data)
{
  side_t *s = data;
  app_t *app = s->app;
  const it_dto_cmpl_event_t *d = &ev->dto_cmpl;
  const char *who = s->who == SERVER ? "server" : "client";
  (void) evd;
  /* The receive the server keeps posted past the last round is flushed
   * by the disconnect. */
  if (d->dto_status == IT_DTO_ERR_FLUSHED && ev->event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
      s->who == SERVER && d->cookie == app->rounds)
    return G_SOURCE_CONTINUE;
  if (d->dto_status != IT_DTO_SUCCESS)
    FAIL("%s: %s of round %llu completed with %s", who, itx_event_name(ev->event_number),
         (unsigned long long) d->cookie, itx_dto_status_name(d->dto_status));
  switch (ev->event_number) {
  case IT_DTO_SEND_CMPL_EVENT:
    s->sends++;
    break;
  case IT_DTO_RDMA_WRITE_CMPL_EVENT:
    s->writes++;
    break;
  case IT_DTO_RC_RECV_CMPL_EVENT: {
    size_t round = (size_t) d->cookie;
    int peer = s->who == SERVER ? CLIENT : SERVER;
    verify(recv_area(s), MSG_LEN, round, peer, s->who == SERVER ? "Send at the server" :
           "Send at the client");
    verify(target(s), app->size, round, peer, s->who == SERVER ? "RDMA Write at the server" :
           "RDMA Write at the client");
    s->rounds++;
    if (s->who == SERVER) {
      post_recv(s, round + 1);
      send_round(s, round);
    } else if (round + 1 < app->rounds) {
      post_recv(s, round + 1);
      send_round(s, round + 1);
    }
    break;
  }
  default:
    FAIL("%s: unexpected completion %s", who, itx_event_name(ev->event_number));
  }
  maybe_finish(s);
  return G_SOURCE_CONTINUE;
}

/* An EVD with a descriptor, dispatched by the loop to @func. */
static it_evd_handle_t
evd_in_loop(side_t *s, it_event_type_t stream, size_t size, itx_evd_source_func_t func)
{
  it_evd_handle_t evd;
  int fd;
  CHECK(it_evd_create(s->ia, stream, IT_EVD_CREATE_FD, size, 1, IT_NULL_HANDLE, &evd, &fd));
  GSource *source;
  CHECK(itx_evd_source_new(evd, &source));
  g_source_set_callback(source, G_SOURCE_FUNC(func), s, NULL);
  g_source_attach(source, g_main_loop_get_context(s->app->loop));
  g_source_unref(source); /* the loop holds it; it goes when the EVD is freed */
  return evd;
}

static void
open_side(app_t *app, side_t *s, int who)
{
  memset(s, 0, sizeof(*s));
  s->app = app;
  s->who = who;
  CHECK(it_ia_create(app->ia_name, 2, 1, &s->ia));
  CHECK(it_pz_create(s->ia, &s->pz));
  s->dto_evd = evd_in_loop(s, IT_DTO_EVENT_STREAM, 64, on_completion);
  s->cm_evd = evd_in_loop(s, IT_CM_MSG_EVENT_STREAM, 16, on_connection);
  s->buf_len = 2 * app->size + 2 * MSG_LEN;
  CHECK(itx_mem_alloc(s->ia, s->buf_len, (void **) &s->buf));
  CHECK(it_lmr_create(s->pz, s->buf, NULL, s->buf_len, IT_ADDR_MODE_ABSOLUTE,
                      IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE, 0, &s->lmr, &s->context));
  it_ep_attributes_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.max_dto_payload_size = app->size;
  attr.max_request_dtos = 16;
  attr.max_recv_dtos = 16;
  attr.max_send_segments = 1;
  attr.max_recv_segments = 1;
  attr.srv.rc.rdma_write_enable = IT_TRUE;
  attr.srv.rc.max_rdma_write_segments = 1;
  CHECK(it_ep_rc_create(s->pz, s->dto_evd, s->dto_evd, s->cm_evd, IT_EP_NO_FLAG, &attr, &s->ep));
}

static void
close_side(side_t *s)
{
  if (s->listener != IT_NULL_HANDLE)
    CHECK(it_listen_free(s->listener));
  CHECK(it_ep_free(s->ep));
  CHECK(it_lmr_free(s->lmr));
  CHECK(it_ia_free(s->ia)); /* frees the EVDs, whose sources then go */
  CHECK(itx_mem_free(s->buf));
}

/* Where the client finds the server: the interface's own first address,
 * or 127.0.0.1 when it lists none. */
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

static gboolean
on_timeout(gpointer data)
{
  app_t *app = data;
  FAIL("no end after 30 s: the server finished %zu rounds, the client %zu", app->server.rounds,
       app->client.rounds);
  return G_SOURCE_REMOVE;
}

int
main(int argc, char **argv)
{
  app_t app = { .rounds = 1000, .size = 4096 };
  int opt;
  while ((opt = getopt(argc, argv, "i:n:s:h")) != -1) {
    switch (opt) {
    case 'i': app.ia_name = optarg; break;
    case 'n': app.rounds = strtoul(optarg, NULL, 10); break;
    case 's': app.size = strtoul(optarg, NULL, 10); break;
    default:
      fprintf(stderr, "usage: %s [-i interface] [-n rounds] [-s bytes]\n", argv[0]);
      return opt == 'h' ? 0 : 2;
    }
  }
  if (app.rounds == 0 || app.size == 0)
    FAIL("need at least 1 round of 1 byte (got -n %zu -s %zu)", app.rounds, app.size);
  it_interface_t ifs[8];
  size_t n = 8, total = 0;
  it_interface_list(ifs, &n, &total);
  if (n == 0)
    FAIL("no IT-API interface is available; see itapi-info for refused providers");
  if (app.ia_name == NULL)
    app.ia_name = ifs[0].name;
  printf("interface %s: %zu rounds of a %zu-byte RDMA Write and a %d-byte Send each way, "
         "in one GMainLoop\n", app.ia_name, app.rounds, app.size, MSG_LEN);

  app.loop = g_main_loop_new(NULL, FALSE);
  open_side(&app, &app.server, SERVER);
  open_side(&app, &app.client, CLIENT);
  side_t *srv = &app.server, *cli = &app.client;
  srv->req_evd = evd_in_loop(srv, IT_CM_REQ_EVENT_STREAM, 4, on_request);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  CHECK(it_listen_create(srv->ia, 0, srv->req_evd, IT_LISTEN_NO_FLAG, &qual, &srv->listener));

  it_net_addr_t addr = self_addr(cli->ia);
  it_path_t path;
  size_t npaths = 1, tpaths = 0;
  CHECK(it_get_pathinfo(cli->ia, 0, &addr, &npaths, &tpaths, &path));
  if (npaths != 1)
    FAIL("interface %s has no path to its own address; see itapi-info for its addresses",
         app.ia_name);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  post_recv(cli, 0);
  peer_info_t mine = my_info(cli);
  CHECK(it_ep_connect(cli->ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY, (unsigned char *) &mine,
                      sizeof(mine)));

  g_timeout_add_seconds(30, on_timeout, &app);
  gint64 t0 = g_get_monotonic_time();
  g_main_loop_run(app.loop);
  double us = (double) (g_get_monotonic_time() - t0);
  printf("all data verified: %zu rounds each way, %.2f us per round (connection setup "
         "included)\n", app.rounds, us / (double) app.rounds);

  close_side(srv);
  close_side(cli);
  /* The freed EVDs woke their sources, which remove themselves. */
  while (g_main_context_iteration(NULL, FALSE))
    ;
  g_main_loop_unref(app.loop);
  return 0;
}
