/*
 * itapi-rping: rdma-core's rping, spoken by an IT-API application, so that
 * this stack can ping a real `rping -s` or `rping -c` (Linux siw, an iWARP
 * RNIC) and be pinged by one.  It speaks rping's protocol, not its code.
 *
 * The protocol.  Every control message is a Send of exactly 16 bytes, all
 * fields big-endian: the address of a buffer (8 bytes), its 32-bit remote
 * key, and its length (4 bytes); a receiver refuses any other length.  For
 * each ping the client
 *   1. writes the ping data into its source buffer: "rdma-ping-<i>: ", then
 *      letters that climb from a start letter by one per byte, wrapping from
 *      'z' back to 'A'; the start letter is 'A' at ping 0 and climbs by one
 *      per ping with the same wrap; the last byte is a NUL;
 *   2. advertises the source buffer (address, key, length) in a Send;
 *   3. waits for the server's "go ahead" Send;
 *   4. advertises its sink buffer in a Send;
 *   5. waits for the server's "write done" Send and compares the sink with
 *      the source byte for byte.
 * The server, for its part, RDMA Reads the advertised source into its own
 * buffer (at most its own size), answers "go ahead" (a Send of 16 bytes
 * whose content means nothing), RDMA Writes the string it read and its NUL
 * into the advertised sink, and answers "write done" the same way.  Each
 * side keeps one receive posted, and reposts it as soon as a message has
 * landed, before it sends the message the peer answers; the connection
 * carries no private data, and RDMA Read depths are 1 in both directions.
 * After its last ping the client disconnects; the server waits for that.
 *
 * IT-API mapping.  Buffers are registered with IT_ADDR_MODE_ABSOLUTE, so an
 * advertised address is the buffer's virtual address, and the advertised key
 * is the it_rmr_context_t of its LMR.  rping's key field has 32 bits, as
 * an R_Key and an STag have, and RNIC-PI keeps the keys of InfiniBand and
 * iWARP devices in them (rnicpi_mr_t); an interface whose contexts needed
 * more could not speak rping, and the tool would say so before it
 * connects.  The server also checks the data it read, since it knows rping's
 * pattern; both sides print one line when all pings were verified.
 *
 *   itapi-rping -s [-a ADDR] [-p PORT] [-C COUNT] [-S SIZE] [-vVdQ] [-i IA] [-T SECONDS]
 *   itapi-rping -c [-a ADDR] [-p PORT] [-C COUNT] [-S SIZE] [-vVdQ] [-i IA] [-T SECONDS]
 *
 * The client connects to -a (IPv4 or IPv6); without it, to its own
 * interface's first address (tool_self_addr; 127.0.0.1 only when the
 * interface lists none), which is where a server on the same interface
 * listens.  -p defaults to rping's port, 7174; -C to 5 pings (at least 1; give both
 * sides the same count); -S to 64 bytes (16 to 65536).  -v prints each
 * ping's data as rping does, -V is accepted (data is always checked), -d
 * traces each step on stderr, -i names the IT-API interface (default: the
 * first of it_interface_list), -T sets how long any one wait may take
 * (default 10 s; a client also retries its connect for that long, so it can
 * start before the server listens).  -Q (--srq) takes this side's receives
 * from a shared receive queue (IT_EP_SRQ) instead of the endpoint's own
 * queue: the peer sees no difference on the wire, and each message must
 * complete on the endpoint with the SRQ's one receive.  Exit status 0 when
 * every ping was verified, 1 on any failure, 2 on bad usage.
 *
 * SPDX-License-Identifier: MIT
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

#include <arpa/inet.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "itapi-rping"
#define RPING_PORT 7174          /* rping's default */
#define RPING_MIN_SIZE 16
#define RPING_MAX_SIZE 65536
#define RPING_RECV_LEN 64        /* room to see (and refuse) a longer message */
#define WAIT_SLICE_US 100000     /* blocking waits wake this often to look at the CM stream */
#define RETRY_PAUSE_US 200000    /* between connect attempts */
#define NKINDS (IT_DTO_RDMA_READ_CMPL_EVENT + 1)

/* ------------------------------------------------------------------------ */
/* rping's control message                                                  */
/* ------------------------------------------------------------------------ */

/* On the wire exactly as rping's struct rping_rdma_info: big-endian. */
typedef struct {
  uint64_t buf;  /* address of the advertised buffer */
  uint32_t rkey; /* its remote key */
  uint32_t size; /* its length in bytes */
} rping_msg_t;

_Static_assert(sizeof(rping_msg_t) == 16, "rping's control message is 16 bytes on the wire");

static rping_msg_t
rping_msg_make(uint64_t buf, uint32_t rkey, uint32_t size)
{
  rping_msg_t m = { it_hton64(buf), htonl(rkey), htonl(size) };
  return m;
}

static uint64_t rping_msg_buf(const rping_msg_t *m) { return it_ntoh64(m->buf); }
static uint32_t rping_msg_rkey(const rping_msg_t *m) { return ntohl(m->rkey); }
static uint32_t rping_msg_size(const rping_msg_t *m) { return ntohl(m->size); }

/* rping's ping data for ping @ping in a buffer of @n bytes (n >= 1).  The
 * prefix may not fit: then the letters are left out, as in rping. */
static void
rping_fill(unsigned char *p, size_t n, unsigned ping)
{
  int cc = snprintf((char *) p, n, "rdma-ping-%u: ", ping);
  unsigned char c = (unsigned char) ('A' + ping % ('z' - 'A' + 1));
  for (size_t i = (size_t) cc; i < n; i++) {
    p[i] = c;
    c = c == 'z' ? 'A' : (unsigned char) (c + 1);
  }
  p[n - 1] = 0;
}

/* ------------------------------------------------------------------------ */
/* State                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct {
  bool server;
  const char *addr;     /* -a as given, or the interface's own address in text */
  it_net_addr_t target; /* the client's target */
  char self_text[INET6_ADDRSTRLEN + 32]; /* addr when -a is not given */
  uint16_t port;        /* host order */
  unsigned count;
  size_t size;
  bool verbose, debug;
  bool srq;             /* -Q: receives from a shared receive queue */
  const char *ia_name;
  uint64_t timeout_us;
} config_t;

/* One registered buffer. */
typedef struct {
  const char *name;
  unsigned char *mem;
  size_t len;           /* bytes registered; one more NUL byte follows */
  it_lmr_handle_t lmr;
  it_rmr_context_t context;
} region_t;

typedef struct {
  const config_t *cfg;
  const char *role, *peer;   /* "server", "client" */
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t req_evd;   /* server: connection requests */
  it_listen_handle_t listener;
  it_evd_handle_t dto_evd, cm_evd;  /* per endpoint, so a failed attempt leaves nothing behind */
  it_ep_handle_t ep;
  it_srq_handle_t srq;       /* -Q: the endpoints' receives, else IT_NULL_HANDLE */
  unsigned srq_held;         /* receives posted to it and not completed */
  region_t ctrl;             /* [0, 16): the message we send; [64, 128): the receive */
  region_t rdma;             /* client: the sink; server: where the Read lands */
  region_t start;            /* client: the ping data the server reads */
  it_dto_cookie_t next_cookie;
  /* A completion taken off the EVD while another was awaited (the order in
   * which a Send's completion and the peer's answer are reported is not
   * fixed); rping keeps at most one request of each kind outstanding. */
  bool stashed[NKINDS];
  it_dto_cmpl_event_t stash[NKINDS];
  unsigned ping;             /* pings done, for messages */
  uint64_t remote_addr;      /* the last advertisement, for messages */
  uint32_t remote_rkey, remote_len;
} rping_t;

static const char *role = "";
static bool debug_on;

/* ------------------------------------------------------------------------ */
/* Errors and tracing                                                       */
/* ------------------------------------------------------------------------ */

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
  va_list ap;
  fflush(stdout);
  fprintf(stderr, PROG ": %s%s", role, *role ? ": " : "");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

#include "../tool_util.h" /* it_die() and IT(), through die() */

static void __attribute__((format(printf, 1, 2)))
dbg(const char *fmt, ...)
{
  if (!debug_on)
    return;
  va_list ap;
  fprintf(stderr, PROG ": %s: ", role);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static uint64_t
now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* ------------------------------------------------------------------------ */
/* Set-up                                                                   */
/* ------------------------------------------------------------------------ */

static void
region_open(rping_t *r, region_t *reg, const char *name, size_t len, it_mem_priv_t privs)
{
  size_t alloc = (len + 1 + 4095) / 4096 * 4096;
  reg->name = name;
  reg->len = len;
  reg->mem = aligned_alloc(4096, alloc);
  if (reg->mem == NULL)
    die("out of memory for the %zu-byte %s buffer", len, name);
  memset(reg->mem, 0, alloc);
  IT(it_lmr_create, r->pz, reg->mem, NULL, len, IT_ADDR_MODE_ABSOLUTE, privs, IT_LMR_FLAG_NONE,
     0, &reg->lmr, &reg->context);
  if ((privs & IT_PRIV_REMOTE) && reg->context > UINT32_MAX)
    die("interface %s gave the %s buffer the remote key 0x%llx, which does not fit the 32-bit "
        "rkey of rping's messages; use an interface with 32-bit keys (itapi-info lists them)", r->cfg->ia_name, name, (unsigned long long) reg->context);
  dbg("%s buffer: %zu bytes at 0x%llx, rkey 0x%llx", name, len,
      (unsigned long long) it_make_rdma_addr_absolute(reg->mem),
      (unsigned long long) reg->context);
}

static void
region_close(region_t *reg)
{
  if (reg->mem == NULL)
    return;
  IT(it_lmr_free, reg->lmr);
  free(reg->mem);
  reg->mem = NULL;
}

static void
rping_open(rping_t *r)
{
  const config_t *cfg = r->cfg;
  IT(it_ia_create, cfg->ia_name, 2, 1, &r->ia);
  IT(it_pz_create, r->ia, &r->pz);
  /* One receive at a time, as without -Q; room for one more. */
  if (cfg->srq)
    IT(it_srq_create, r->pz, 1, 2, &r->srq);
  region_open(r, &r->ctrl, "control", 2 * RPING_RECV_LEN, IT_PRIV_LOCAL);
  /* An iWARP Read sink needs remote write too (it_ia_info_t::
   * rdma_read_requires_remote_write); the client's sink is written. */
  region_open(r, &r->rdma, "rdma", cfg->size, IT_PRIV_LOCAL | IT_PRIV_REMOTE);
  if (!cfg->server)
    region_open(r, &r->start, "start", cfg->size, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ);
}

/* A fresh endpoint with its own dispatchers. */
static void
ep_open(rping_t *r)
{
  IT(it_evd_create, r->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 32, 1, IT_NULL_HANDLE,
     &r->dto_evd, NULL);
  IT(it_evd_create, r->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1,
     IT_NULL_HANDLE, &r->cm_evd, NULL);
  it_ep_attributes_t a;
  tool_rc_attr(&a, r->cfg->size, 8, 8);
  /* rping's responder_resources and initiator_depth */
  a.srv.rc.rdma_read_ird = 1;
  a.srv.rc.rdma_read_ord = 1;
  a.srv.rc.srq = r->srq;
  IT(it_ep_rc_create, r->pz, r->dto_evd, r->dto_evd, r->cm_evd,
     r->srq != IT_NULL_HANDLE ? IT_EP_SRQ : IT_EP_NO_FLAG, &a, &r->ep);
  memset(r->stashed, 0, sizeof(r->stashed));
}

static void
ep_close(rping_t *r)
{
  if (r->ep == IT_NULL_HANDLE)
    return;
  IT(it_ep_free, r->ep);
  IT(it_evd_free, r->cm_evd);
  IT(it_evd_free, r->dto_evd);
  r->ep = IT_NULL_HANDLE;
}

static void
rping_close(rping_t *r)
{
  ep_close(r);
  if (r->srq != IT_NULL_HANDLE)
    IT(it_srq_free, r->srq); /* a receive it still holds goes with it */
  if (r->listener != IT_NULL_HANDLE)
    IT(it_listen_free, r->listener);
  region_close(&r->start);
  region_close(&r->rdma);
  region_close(&r->ctrl);
  IT(it_ia_free, r->ia); /* frees the PZ and the request EVD with it */
}

/* ------------------------------------------------------------------------ */
/* Data transfers                                                           */
/* ------------------------------------------------------------------------ */

static unsigned char *
recv_slot(rping_t *r)
{
  return r->ctrl.mem + RPING_RECV_LEN;
}

static void
post_recv(rping_t *r)
{
  it_lmr_triplet_t t = { .lmr = r->ctrl.lmr, .addr.abs = recv_slot(r), .length = RPING_RECV_LEN };
  if (r->srq == IT_NULL_HANDLE) {
    IT(it_post_recv, r->ep, &t, 1, r->next_cookie++, IT_COMPLETION_FLAG);
    return;
  }
  IT(it_post_recv, r->srq, &t, 1, r->next_cookie++, IT_COMPLETION_FLAG);
  r->srq_held++;
}

/* The receive posted before a connection exists, as rping does.  An SRQ
 * keeps the one an endpoint of a refused attempt left in it (only the
 * endpoint's own receives are flushed when it is freed). */
static void
post_first_recv(rping_t *r)
{
  if (r->srq == IT_NULL_HANDLE || r->srq_held == 0)
    post_recv(r);
}

static void
post_msg(rping_t *r, rping_msg_t m)
{
  memcpy(r->ctrl.mem, &m, sizeof(m));
  it_lmr_triplet_t t = { .lmr = r->ctrl.lmr, .addr.abs = r->ctrl.mem, .length = sizeof(m) };
  IT(it_post_send, r->ep, &t, 1, r->next_cookie++, IT_COMPLETION_FLAG);
}

/* The connection ended while we waited for @what: say how, from the CM
 * stream (waiting up to a second for its event to follow a flush). */
static void __attribute__((noreturn))
connection_lost(rping_t *r, const char *what, const char *how)
{
  it_event_t ev;
  it_status_t st = it_evd_wait(r->cm_evd, 1000000, &ev, NULL);
  if (st == IT_SUCCESS && ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT)
    die("the %s disconnected after %u of %u pings, while the %s waited for %s (%s); see the "
        "%s's messages (it failed, or was given a smaller -C count)", r->peer, r->ping,
        r->cfg->count, r->role, what, itx_event_name(ev.event_number), r->peer);
  if (st == IT_SUCCESS)
    die("the connection ended after %u of %u pings, while the %s waited for %s (%s); the %s "
        "failed or was stopped: see its messages", r->ping, r->cfg->count, r->role, what,
        itx_event_name(ev.event_number), r->peer);
  die("%s while the %s waited for %s after %u of %u pings, and no connection event followed",
      how, r->role, what, r->ping, r->cfg->count);
}

static void __attribute__((noreturn))
dto_failed(rping_t *r, const it_dto_cmpl_event_t *d, const char *what)
{
  char how[160];
  snprintf(how, sizeof(how), "%s (cookie %llu) completed with %s",
           itx_event_name(d->event_number), (unsigned long long) d->cookie,
           itx_dto_status_name(d->dto_status));
  if (d->dto_status == IT_DTO_ERR_FLUSHED)
    connection_lost(r, what, how);
  if (d->dto_status == IT_DTO_ERR_REMOTE_ACCESS)
    die("%s while waiting for %s: the %s refused its buffer 0x%llx, rkey 0x%x, %u bytes, that it "
        "advertised in ping %u", how, what, r->peer, (unsigned long long) r->remote_addr,
        r->remote_rkey, r->remote_len, r->ping + 1);
  die("%s while waiting for %s in ping %u", how, what, r->ping + 1);
}

/* Wait for the completion of kind @want (a DTO event number), keeping any
 * other kind for its own wait.  @what names it in messages. */
static it_dto_cmpl_event_t
dto_wait(rping_t *r, it_event_type_t want, const char *what)
{
  if (r->stashed[want]) {
    r->stashed[want] = false;
    return r->stash[want];
  }
  uint64_t deadline = now_us() + r->cfg->timeout_us;
  for (;;) {
    it_event_t ev;
    uint64_t now = now_us();
    if (now >= deadline)
      die("timed out after %.1f s waiting for %s in ping %u of %u; nothing came (see -T)",
          (double) r->cfg->timeout_us / 1e6, what, r->ping + 1, r->cfg->count);
    uint64_t slice = deadline - now < WAIT_SLICE_US ? deadline - now : WAIT_SLICE_US;
    it_status_t st = it_evd_wait(r->dto_evd, slice, &ev, NULL);
    if (st == IT_ERR_TIMEOUT_EXPIRED) {
      /* The connection may end with nothing of ours outstanding to flush. */
      if (it_evd_dequeue(r->cm_evd, &ev) == IT_SUCCESS)
        die("the connection ended (%s) after %u of %u pings, while the %s waited for %s",
            itx_event_name(ev.event_number), r->ping, r->cfg->count, r->role, what);
      continue;
    }
    if (st != IT_SUCCESS)
      it_die("it_evd_wait on the DTO EVD", st);
    const it_dto_cmpl_event_t *d = &ev.dto_cmpl;
    dbg("%s (cookie %llu): %s, %u bytes", itx_event_name(ev.event_number),
        (unsigned long long) d->cookie, itx_dto_status_name(d->dto_status), d->transferred_length);
    if (d->dto_status != IT_DTO_SUCCESS)
      dto_failed(r, d, what);
    if (ev.event_number == want)
      return *d;
    if (ev.event_number >= NKINDS || r->stashed[ev.event_number])
      die("unexpected %s while waiting for %s in ping %u", itx_event_name(ev.event_number), what,
          r->ping + 1);
    r->stashed[ev.event_number] = true;
    r->stash[ev.event_number] = *d;
  }
}

/* Send @m and wait for its completion (the send buffer is then free). */
static void
send_msg(rping_t *r, rping_msg_t m, const char *what)
{
  dbg("sending %s: buf 0x%llx rkey 0x%x size %u", what, (unsigned long long) rping_msg_buf(&m),
      rping_msg_rkey(&m), rping_msg_size(&m));
  post_msg(r, m);
  char w[96];
  snprintf(w, sizeof(w), "the completion of the Send of %s", what);
  dto_wait(r, IT_DTO_SEND_CMPL_EVENT, w);
}

/* Wait for the peer's next message, check it is rping's 16 bytes, repost
 * the receive (before we send what the peer answers: on iWARP a Send that
 * finds no receive is fatal) and return the message. */
static rping_msg_t
recv_msg(rping_t *r, const char *what)
{
  it_dto_cmpl_event_t d = dto_wait(r, IT_DTO_RC_RECV_CMPL_EVENT, what);
  rping_msg_t m;
  if (d.transferred_length != sizeof(m))
    die("received a %u-byte message where rping's %zu-byte %s belongs (ping %u); the %s does "
        "not speak rping's protocol", d.transferred_length, sizeof(m), what, r->ping + 1,
        r->peer);
  if (r->srq != IT_NULL_HANDLE) {
    r->srq_held--;
    if (d.ep != r->ep)
      die("a receive of the shared receive queue completed on endpoint %p, not on %p, the one "
          "the %s's message arrived on (ping %u)", (void *) d.ep, (void *) r->ep, r->peer,
          r->ping + 1);
  }
  memcpy(&m, recv_slot(r), sizeof(m));
  post_recv(r);
  dbg("received %s: buf 0x%llx rkey 0x%x size %u", what, (unsigned long long) rping_msg_buf(&m),
      rping_msg_rkey(&m), rping_msg_size(&m));
  return m;
}

static rping_msg_t
advert_of(const region_t *reg)
{
  return rping_msg_make(it_make_rdma_addr_absolute(reg->mem), (uint32_t) reg->context,
                        (uint32_t) reg->len);
}

/* The first byte where @got differs from @want, or @n. */
static size_t
first_diff(const unsigned char *got, const unsigned char *want, size_t n)
{
  size_t i = 0;
  while (i < n && got[i] == want[i])
    i++;
  return i;
}

/* ------------------------------------------------------------------------ */
/* Connection management                                                    */
/* ------------------------------------------------------------------------ */

/* Wait for @want on @evd; anything else ends the run. */
static it_event_t
cm_wait(rping_t *r, it_evd_handle_t evd, it_event_type_t want, const char *what)
{
  it_event_t ev;
  it_status_t st = it_evd_wait(evd, r->cfg->timeout_us, &ev, NULL);
  if (st == IT_ERR_TIMEOUT_EXPIRED)
    die("timed out after %.1f s waiting for %s (%s); see -T", (double) r->cfg->timeout_us / 1e6,
        what, itx_event_name(want));
  if (st != IT_SUCCESS)
    it_die("it_evd_wait on the CM EVD", st);
  dbg("%s", itx_event_name(ev.event_number));
  if (ev.event_number != want)
    die("expected %s while waiting for %s, got %s%s%s", itx_event_name(want), what,
        itx_event_name(ev.event_number),
        ev.event_number == IT_CM_MSG_CONN_NONPEER_REJECT_EVENT ? "; reject reason: " : "",
        ev.event_number == IT_CM_MSG_CONN_NONPEER_REJECT_EVENT ?
          tool_reject_reason(ev.conn.reject_reason_code) : "");
  return ev;
}

static void
server_accept(rping_t *r)
{
  const config_t *cfg = r->cfg;
  IT(it_evd_create, r->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
     &r->req_evd, NULL);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = htons(cfg->port);
  IT(it_listen_create, r->ia, 0, r->req_evd, IT_LISTEN_CONN_QUAL_INPUT, &qual, &r->listener);
  dbg("listening on port %u of interface %s, every address of it (-a %s is only shown)",
      cfg->port, cfg->ia_name, cfg->addr != NULL ? cfg->addr : "not given");

  it_event_t ev = cm_wait(r, r->req_evd, IT_CM_REQ_CONN_REQUEST_EVENT, "a client to connect");
  char from[INET6_ADDRSTRLEN] = "?";
  if (ev.conn_req.source_addr.addr_type == IT_IPV4)
    inet_ntop(AF_INET, &ev.conn_req.source_addr.addr.ipv4, from, sizeof(from));
  else if (ev.conn_req.source_addr.addr_type == IT_IPV6)
    inet_ntop(AF_INET6, &ev.conn_req.source_addr.addr.ipv6, from, sizeof(from));
  /* rping sends no private data; any that comes is ignored, as rping does. */
  dbg("connection request from %s, IRD %u ORD %u, %s private data", from,
      ev.conn_req.rdma_read_ird, ev.conn_req.rdma_read_ord,
      ev.conn_req.private_data_present ? "with" : "no");

  ep_open(r);
  post_first_recv(r);
  IT(it_ep_accept, r->ep, ev.conn_req.cn_est_id, NULL, 0);
  ev = cm_wait(r, r->cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "the accepted connection");
  dbg("connected: IRD %u ORD %u", ev.conn.rdma_read_ird, ev.conn.rdma_read_ord);
}

/* rping's client may start before its server listens: connect on a fresh
 * endpoint until one is accepted or -T has passed. */
static void
client_connect(rping_t *r)
{
  const config_t *cfg = r->cfg;
  it_path_t path;
  size_t npaths = 1, total = 0;
  IT(it_get_pathinfo, r->ia, 0, &cfg->target, &npaths, &total, &path);
  if (npaths < 1)
    die("interface %s has no path to %s; give an address it can reach (-a), or another "
        "interface (-i)", cfg->ia_name, cfg->addr);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = htons(cfg->port);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));

  uint64_t deadline = now_us() + cfg->timeout_us;
  for (unsigned attempt = 1;; attempt++) {
    ep_open(r);
    post_first_recv(r);
    dbg("connecting to %s port %u (attempt %u)", cfg->addr, cfg->port, attempt);
    IT(it_ep_connect, r->ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY, NULL, 0);
    uint64_t now = now_us(), left = deadline > now ? deadline - now : 0;
    it_event_t ev;
    it_status_t st = it_evd_wait(r->cm_evd, left > WAIT_SLICE_US ? left : WAIT_SLICE_US, &ev, NULL);
    if (st == IT_ERR_TIMEOUT_EXPIRED)
      die("no answer from %s port %u within %.1f s (%u attempts); is the server running and "
          "reachable over interface %s?", cfg->addr, cfg->port, (double) cfg->timeout_us / 1e6,
          attempt, cfg->ia_name);
    if (st != IT_SUCCESS)
      it_die("it_evd_wait on the CM EVD", st);
    if (ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT) {
      dbg("connected: IRD %u ORD %u, %s private data", ev.conn.rdma_read_ird,
          ev.conn.rdma_read_ord, ev.conn.private_data_present ? "with" : "no");
      return;
    }
    bool rejected = ev.event_number == IT_CM_MSG_CONN_PEER_REJECT_EVENT ||
                    ev.event_number == IT_CM_MSG_CONN_NONPEER_REJECT_EVENT;
    const char *why = ev.event_number == IT_CM_MSG_CONN_NONPEER_REJECT_EVENT ?
                        tool_reject_reason(ev.conn.reject_reason_code) : "by the peer";
    dbg("%s (reason: %s)", itx_event_name(ev.event_number), why);
    if (!rejected)
      die("expected %s while connecting to %s port %u, got %s",
          itx_event_name(IT_CM_MSG_CONN_ESTABLISHED_EVENT), cfg->addr, cfg->port,
          itx_event_name(ev.event_number));
    ep_close(r);
    if (now_us() + RETRY_PAUSE_US >= deadline)
      die("%s port %u refused the connection for %.1f s (%u attempts; last: %s, reason: %s); "
          "start `rping -s` or `itapi-rping -s` there, or check the address and port",
          cfg->addr, cfg->port, (double) cfg->timeout_us / 1e6, attempt,
          itx_event_name(ev.event_number), why);
    usleep(RETRY_PAUSE_US);
  }
}

/* ------------------------------------------------------------------------ */
/* The pings                                                                */
/* ------------------------------------------------------------------------ */

static void
server_run(rping_t *r)
{
  const config_t *cfg = r->cfg;
  unsigned char *expect = malloc(cfg->size);
  if (expect == NULL)
    die("out of memory for %zu bytes", cfg->size);

  for (r->ping = 0; r->ping < cfg->count; r->ping++) {
    unsigned i = r->ping;
    rping_msg_t src = recv_msg(r, "the client's source advertisement");
    r->remote_addr = rping_msg_buf(&src);
    r->remote_rkey = rping_msg_rkey(&src);
    r->remote_len = rping_msg_size(&src);
    if (r->remote_len == 0)
      die("the client advertised a 0-byte source buffer in ping %u", i + 1);
    size_t n = r->remote_len < cfg->size ? r->remote_len : cfg->size;
    memset(r->rdma.mem, 0, cfg->size);
    it_lmr_triplet_t t = { .lmr = r->rdma.lmr, .addr.abs = r->rdma.mem, .length = n };
    dbg("RDMA Read of %zu bytes from 0x%llx rkey 0x%x", n, (unsigned long long) r->remote_addr,
        r->remote_rkey);
    IT(it_post_rdma_read, r->ep, &t, 1, r->next_cookie++, IT_COMPLETION_FLAG, r->remote_addr,
       (it_rmr_context_t) r->remote_rkey);
    it_dto_cmpl_event_t d =
      dto_wait(r, IT_DTO_RDMA_READ_CMPL_EVENT, "the RDMA Read of the ping data");
    if (d.transferred_length != n)
      die("the RDMA Read of ping %u brought %u bytes, %zu were asked", i + 1,
          d.transferred_length, n);
    if (cfg->verbose)
      printf("server ping data: %.*s\n", (int) strnlen((char *) r->rdma.mem, n), r->rdma.mem);
    /* The pattern is known: check what the Read brought, unless the client's
     * buffer is larger than ours and we read only its head. */
    if (r->remote_len <= cfg->size) {
      rping_fill(expect, n, i);
      size_t j = first_diff(r->rdma.mem, expect, n);
      if (j < n)
        die("data mismatch in ping %u read from the client: byte %zu of %zu is 0x%02x, expected "
            "0x%02x", i + 1, j, n, r->rdma.mem[j], expect[j]);
    } else {
      dbg("the client's %u-byte buffer is larger than ours: its data is not checked here",
          r->remote_len);
    }
    send_msg(r, rping_msg_make(0, 0, 0), "\"go ahead\"");

    rping_msg_t sink = recv_msg(r, "the client's sink advertisement");
    r->remote_addr = rping_msg_buf(&sink);
    r->remote_rkey = rping_msg_rkey(&sink);
    r->remote_len = rping_msg_size(&sink);
    size_t w = strnlen((char *) r->rdma.mem, n) + 1; /* the string and its NUL, as rping */
    w = w < n ? w : n;
    w = w < r->remote_len ? w : r->remote_len;
    if (w == 0)
      die("the client advertised a 0-byte sink buffer in ping %u", i + 1);
    t.length = w;
    dbg("RDMA Write of %zu bytes to 0x%llx rkey 0x%x", w, (unsigned long long) r->remote_addr,
        r->remote_rkey);
    IT(it_post_rdma_write, r->ep, &t, 1, r->next_cookie++, IT_COMPLETION_FLAG, r->remote_addr,
       (it_rmr_context_t) r->remote_rkey);
    dto_wait(r, IT_DTO_RDMA_WRITE_CMPL_EVENT, "the RDMA Write of the ping data");
    send_msg(r, rping_msg_make(0, 0, 0), "\"write done\"");
  }
  free(expect);

  /* The client disconnects after its last ping.  A message instead means it
   * pings on: it was given a larger -C. */
  uint64_t deadline = now_us() + cfg->timeout_us;
  for (;;) {
    it_event_t ev;
    if (it_evd_dequeue(r->dto_evd, &ev) == IT_SUCCESS) {
      dbg("%s: %s", itx_event_name(ev.event_number), itx_dto_status_name(ev.dto_cmpl.dto_status));
      if (ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT && ev.dto_cmpl.dto_status == IT_DTO_SUCCESS)
        die("the client sent another message after all %u pings; give both sides the same -C "
            "count", cfg->count);
      continue;
    }
    uint64_t now = now_us();
    if (now >= deadline)
      die("timed out after %.1f s waiting for the client to disconnect after %u pings (see -T)",
          (double) cfg->timeout_us / 1e6, cfg->count);
    uint64_t slice = deadline - now < WAIT_SLICE_US ? deadline - now : WAIT_SLICE_US;
    it_status_t st = it_evd_wait(r->cm_evd, slice, &ev, NULL);
    if (st == IT_ERR_TIMEOUT_EXPIRED)
      continue;
    if (st != IT_SUCCESS)
      it_die("it_evd_wait on the CM EVD", st);
    dbg("%s", itx_event_name(ev.event_number));
    if (ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT)
      return;
    die("expected %s after all %u pings, got %s: the connection did not close cleanly",
        itx_event_name(IT_CM_MSG_CONN_DISCONNECT_EVENT), cfg->count,
        itx_event_name(ev.event_number));
  }
}

static void
client_run(rping_t *r)
{
  const config_t *cfg = r->cfg;
  for (r->ping = 0; r->ping < cfg->count; r->ping++) {
    unsigned i = r->ping;
    rping_fill(r->start.mem, cfg->size, i);
    memset(r->rdma.mem, 0, cfg->size); /* so that stale data cannot pass */
    r->remote_addr = 0;
    r->remote_rkey = 0;
    r->remote_len = 0;
    send_msg(r, advert_of(&r->start), "the source advertisement");
    recv_msg(r, "the server's \"go ahead\"");
    send_msg(r, advert_of(&r->rdma), "the sink advertisement");
    recv_msg(r, "the server's \"write done\"");
    size_t j = first_diff(r->rdma.mem, r->start.mem, cfg->size);
    if (j < cfg->size)
      die("data mismatch in ping %u: byte %zu of %zu of the sink is 0x%02x, the source's is "
          "0x%02x; the server's RDMA Write did not bring back what it read", i + 1, j, cfg->size,
          r->rdma.mem[j], r->start.mem[j]);
    if (cfg->verbose)
      printf("ping data: %s\n", (char *) r->rdma.mem);
  }
  IT(it_ep_disconnect, r->ep, NULL, 0);
  cm_wait(r, r->cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT, "the end of the connection");
}

/* ------------------------------------------------------------------------ */
/* Command line                                                             */
/* ------------------------------------------------------------------------ */

static void
usage(FILE *f)
{
  fprintf(f,
"usage: " PROG " -s [-a ADDR] [-p PORT] [-C COUNT] [-S SIZE] [-vVdQ] [-i IA] [-T SECONDS]\n"
"       " PROG " -c [-a ADDR] [-p PORT] [-C COUNT] [-S SIZE] [-vVdQ] [-i IA] [-T SECONDS]\n"
"rdma-core's rping over IT-API: pings a real rping, or is pinged by one.\n"
"  -s          server: serve one connection, then exit\n"
"  -c          client: connect to ADDR, retrying for up to -T seconds\n"
"  -a ADDR     address to connect to, IPv4 or IPv6 (default: the interface's own first\n"
"              address, 127.0.0.1 when it lists none; the server only shows it)\n"
"  -p PORT     port (default %d, rping's)\n"
"  -C COUNT    pings, at least 1 (default 5; give both sides the same)\n"
"  -S SIZE     bytes per ping, %d to %d (default 64)\n"
"  -v          print each ping's data\n"
"  -V          validate (accepted: the data is always checked)\n"
"  -d          trace each step on stderr\n"
"  -Q, --srq   receive through a shared receive queue (the interface's srq_support)\n"
"  -i IA       IT-API interface (default: the first of it_interface_list; see itapi-info)\n"
"  -T SECONDS  longest wait for any one event, and the client's connect window (default 10)\n",
          RPING_PORT, RPING_MIN_SIZE, RPING_MAX_SIZE);
}

static unsigned long
parse_num(const char *opt, const char *s, unsigned long min, unsigned long max)
{
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*s == '\0' || *s == '-' || *end != '\0' || v < min || v > max) {
    fprintf(stderr, PROG ": %s %s: expected a number from %lu to %lu\n", opt, s, min, max);
    exit(2);
  }
  return v;
}

static void
parse_args(int argc, char **argv, config_t *cfg)
{
  static const struct option longopts[] = {
    { "srq", no_argument, NULL, 'Q' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  int mode = 0, opt;
  while ((opt = getopt_long(argc, argv, "sca:p:C:S:vVdQi:T:h", longopts, NULL)) != -1) {
    switch (opt) {
    case 's':
    case 'c':
      if (mode != 0 && mode != opt) {
        fprintf(stderr, PROG ": -s and -c exclude each other\n");
        exit(2);
      }
      mode = opt;
      break;
    case 'a': cfg->addr = optarg; break;
    case 'p': cfg->port = (uint16_t) parse_num("-p", optarg, 1, 65535); break;
    case 'C': cfg->count = (unsigned) parse_num("-C", optarg, 1, 2147483647); break;
    case 'S': cfg->size = parse_num("-S", optarg, RPING_MIN_SIZE, RPING_MAX_SIZE); break;
    case 'v': cfg->verbose = true; break;
    case 'V': break;
    case 'd': cfg->debug = true; break;
    case 'Q': cfg->srq = true; break;
    case 'i': cfg->ia_name = optarg; break;
    case 'T': cfg->timeout_us = parse_num("-T", optarg, 1, 86400) * 1000000u; break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind < argc) {
    fprintf(stderr, PROG ": unexpected argument %s\n", argv[optind]);
    exit(2);
  }
  if (mode == 0) {
    fprintf(stderr, PROG ": say -s (server) or -c (client)\n");
    usage(stderr);
    exit(2);
  }
  cfg->server = mode == 's';
  if (!cfg->server && cfg->addr != NULL) {
    if (inet_pton(AF_INET, cfg->addr, &cfg->target.addr.ipv4) == 1) {
      cfg->target.addr_type = IT_IPV4;
    } else if (inet_pton(AF_INET6, cfg->addr, &cfg->target.addr.ipv6) == 1) {
      cfg->target.addr_type = IT_IPV6;
    } else {
      fprintf(stderr, PROG ": -a %s: expected an IPv4 address in dotted form (10.0.0.1) or an "
              "IPv6 address (fd00::1)\n", cfg->addr);
      exit(2);
    }
  }
}

int
main(int argc, char **argv)
{
  config_t cfg = { .port = RPING_PORT, .count = 5, .size = 64, .timeout_us = 10000000u };
  parse_args(argc, argv, &cfg);
  role = cfg.server ? "server" : "client";
  debug_on = cfg.debug;

  it_interface_t ifs[16];
  if (cfg.ia_name == NULL) {
    size_t n = sizeof(ifs) / sizeof(ifs[0]), total = 0;
    it_interface_list(ifs, &n, &total);
    if (n == 0)
      die("no IT-API interface is available; run itapi-info to see why the providers were "
          "refused");
    cfg.ia_name = ifs[0].name;
  }
  dbg("interface %s, %u pings of %zu bytes, port %u%s", cfg.ia_name, cfg.count, cfg.size, cfg.port,
      cfg.srq ? ", receives from a shared receive queue" : "");

  rping_t r = { .cfg = &cfg, .role = role, .peer = cfg.server ? "client" : "server" };
  rping_open(&r);
  if (cfg.server) {
    server_accept(&r);
    server_run(&r);
  } else {
    if (cfg.addr == NULL) {
      IT(tool_self_addr, r.ia, &cfg.target);
      cfg.addr = tool_addr_str(&cfg.target, cfg.self_text, sizeof(cfg.self_text));
      dbg("no -a: connecting to %s, the first address of interface %s", cfg.addr, cfg.ia_name);
    }
    client_connect(&r);
    client_run(&r);
  }
  rping_close(&r);
  printf(PROG ": %u pings of %zu bytes verified\n", cfg.count, cfg.size);
  return 0;
}
