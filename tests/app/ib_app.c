/*
 * ib-app: a client and server written the way applications for InfiniBand
 * HCAs are written against IT-API (IBM's SKV is the model), so that the
 * stack can show such an application running unchanged on every interface.
 * It uses the standard IT-API 2.1 calls of <it_api.h> and nothing else:
 * no project extension, no helper of the conformance suite.  Statuses and
 * events are put into words by two functions the build links beside it
 * (ib_app_diag.c); an application from the field would print the numbers.
 *
 * What it takes from IB applications:
 *   - the interface by a hard-coded name, "vp_softrdma" (IBM SoftRDMA's),
 *     which itapi.conf(5) maps to a device;
 *   - IB-sized RC endpoints: RDMA Read depths of 32 each way and 8 local
 *     segments per RDMA Read;
 *   - an IP path filled by hand (the iWARP form of it_path_t, ip_vers and
 *     both addresses), as rdma_cm applications do; it_get_pathinfo is never
 *     called;
 *   - a region's address and RMR context exchanged in the connection's
 *     private data, absolute addresses.
 *
 * What it moves, each byte checked by the side that receives it:
 *   1. Sends: a burst of SEND_BURST messages of different lengths each way;
 *   2. RDMA Writes: each side writes REGION_LEN bytes into the other's
 *      region, then says so in a Send (ordered after the Writes);
 *   3. RDMA Reads: each side fills its region and says so; the other posts
 *      NREADS (32: the whole ORD) Reads at once, each scattering into
 *      READ_SEGS (8) local segments of different lengths, half of them
 *      spread over two regions with gaps between, half contiguous in a third
 *      region; guard bytes around the segments must be left untouched.
 * Then the client disconnects, and both wait for the disconnect event.
 *
 *   ib-app --server [--port N] [--timeout S]
 *   ib-app --client [--port N] [--timeout S] [--address IPV4]
 *
 * A server given --port 0 listens where the adapter chooses, said on its
 * "listening on port N" line.  The client connects to --address; without it, to the interface's first
 * IPv4 address (it_ia_query), or 127.0.0.1 when it lists none, which is
 * where a server on the same interface of this host listens.  The client
 * retries its connect until --timeout has passed, so it may start first.
 * Exit status 0 when everything was checked, 1 on any failure, 2 on bad
 * usage.
 *
 * SPDX-License-Identifier: MIT
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ib_app_diag.h"

#define PROG "ib-app"
#define IA_NAME "vp_softrdma"  /* hard-coded, as IBM SoftRDMA applications do */
#define DEFAULT_PORT 24810

#define APP_MAGIC 0x49424150u  /* "IBAP" */
#define APP_VERSION 1u

#define READ_DEPTH 32          /* IRD and ORD, as SKV asks */
#define READ_SEGS 8            /* local segments of one RDMA Read, as SKV asks */
#define NREADS READ_DEPTH      /* Reads in flight at once: the whole ORD */
#define SEG_LEN(j) (512u + 64u * (unsigned) (j)) /* 512 .. 960: every segment a different length */
#define READ_LEN (8u * 512u + 64u * 28u)          /* sum of SEG_LEN(0..7) = 5888 */
#define SLOT 1024u             /* a spread segment's slot: at least 64 guard bytes after it */

#define REGION_LEN (256u * 1024u)     /* each side's exposed region */
#define WRITE_CHUNK (64u * 1024u)     /* one RDMA Write */
#define NWRITES (REGION_LEN / WRITE_CHUNK)
#define MSG_MAX 4096u                 /* a Send's payload at most */
#define RECV_DEPTH 16                 /* receives kept posted */
#define SEND_BURST 12                 /* data Sends in a row: fewer than RECV_DEPTH */
#define SEND_SLOTS SEND_BURST
#define GUARD 0xee

#define WAIT_SLICE_US 100000u
#define RETRY_PAUSE_US 200000u

_Static_assert(READ_LEN == SEG_LEN(0) + SEG_LEN(1) + SEG_LEN(2) + SEG_LEN(3) + SEG_LEN(4) +
                 SEG_LEN(5) + SEG_LEN(6) + SEG_LEN(7), "READ_LEN is the sum of the segments");
_Static_assert(SEG_LEN(READ_SEGS - 1) + 64u <= SLOT, "a spread segment leaves guard bytes");
_Static_assert(NREADS * READ_LEN <= REGION_LEN, "the Reads cover part of the region");

/* ------------------------------------------------------------------------ */
/* Wire formats (big-endian)                                                */
/* ------------------------------------------------------------------------ */

/* The connection's private data, both ways: the sender's exposed region. */
typedef struct {
  uint32_t magic;
  uint32_t version;
  uint64_t addr;     /* absolute address of the region */
  uint64_t context;  /* its it_rmr_context_t */
  uint64_t len;
} region_pdata_t;

enum msg_type { MSG_DATA = 1, MSG_WRITTEN, MSG_READ_READY, MSG_READ_DONE };

/* The head of every Send. */
typedef struct {
  uint32_t type;
  uint32_t seq;   /* DATA: index in the burst */
  uint32_t seed;  /* of the pattern the payload, or the region, holds */
  uint32_t len;   /* payload bytes after this head */
} msg_head_t;

/* ------------------------------------------------------------------------ */
/* State                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct {
  unsigned char *mem;
  size_t len;
  it_lmr_handle_t lmr;
  it_rmr_context_t context;
} region_t;

typedef struct {
  bool server;
  uint16_t port;
  uint64_t timeout_us;
  const char *address;        /* --address, or NULL */
  it_net_addr_t self;         /* the interface's address the path uses */

  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto_evd, cm_evd, req_evd;
  it_listen_handle_t listener;
  it_ep_attributes_t attr;
  it_ep_handle_t ep;

  region_t msgs;              /* RECV_DEPTH receive slots, then SEND_SLOTS send slots */
  region_t exposed;           /* the peer Writes into it and Reads from it */
  region_t wsrc;              /* what we Write */
  region_t sink[3];           /* Read sinks: two for spread segments, one for contiguous */

  uint64_t peer_addr, peer_context, peer_len;

  /* Completions counted as they are taken off the DTO EVD. */
  unsigned sends_done, writes_done, reads_done;
  unsigned recv_ready[RECV_DEPTH];   /* slots in arrival order */
  uint32_t recv_bytes[RECV_DEPTH];
  unsigned recv_head, recv_count;
  unsigned next_send_slot;
  bool disconnected;
} app_t;

static const char *role = "";

/* Cookies: the kind of request in the top byte, a slot or index below. */
#define COOKIE(kind, i) (((it_dto_cookie_t) (kind) << 56) | (it_dto_cookie_t) (i))
enum { CK_RECV = 1, CK_SEND, CK_WRITE, CK_READ };

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
  va_list ap;
  fflush(stdout);
  fprintf(stderr, PROG ": %s: ", role);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void __attribute__((noreturn))
call_failed(const char *call, it_status_t st)
{
  char text[512];
  die("%s failed: %s", call, ib_app_status_text(st, text, sizeof(text)));
}

#define CALL(fn, ...)                                                          \
  do {                                                                         \
    it_status_t st_ = fn(__VA_ARGS__);                                         \
    if (st_ != IT_SUCCESS)                                                     \
      call_failed(#fn, st_);                                                   \
  } while (0)

static uint64_t
now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* ------------------------------------------------------------------------ */
/* Patterns                                                                 */
/* ------------------------------------------------------------------------ */

/* Byte @off of the pattern @seed: no period shorter than the buffers here,
 * so that a segment landing at the wrong offset is seen. */
static unsigned char
pattern_byte(uint32_t seed, size_t off)
{
  uint32_t x = (uint32_t) off * 2654435761u + seed * 40503u + (uint32_t) (off >> 16);
  return (unsigned char) (x >> 24);
}

static void
pattern_fill(unsigned char *p, size_t len, uint32_t seed, size_t base)
{
  for (size_t i = 0; i < len; i++)
    p[i] = pattern_byte(seed, base + i);
}

static void
pattern_check(const unsigned char *p, size_t len, uint32_t seed, size_t base, const char *what)
{
  for (size_t i = 0; i < len; i++)
    if (p[i] != pattern_byte(seed, base + i))
      die("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, len, p[i],
          pattern_byte(seed, base + i));
}

/* ------------------------------------------------------------------------ */
/* Set-up                                                                   */
/* ------------------------------------------------------------------------ */

static void
region_open(app_t *a, region_t *r, size_t len, it_mem_priv_t privs)
{
  size_t alloc = (len + 4095) / 4096 * 4096;
  r->mem = aligned_alloc(4096, alloc);
  if (r->mem == NULL)
    die("out of memory for a %zu-byte region", len);
  memset(r->mem, 0, alloc);
  r->len = len;
  CALL(it_lmr_create, a->pz, r->mem, NULL, len, IT_ADDR_MODE_ABSOLUTE, privs, IT_LMR_FLAG_NONE, 0,
       &r->lmr, &r->context);
}

/* The interface's first IPv4 address, 127.0.0.1 when it lists none. */
static void
self_address(app_t *a)
{
  it_ia_info_t *info = NULL;
  CALL(it_ia_query, a->ia, &info);
  memset(&a->self, 0, sizeof(a->self));
  a->self.addr_type = IT_IPV4;
  a->self.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
  /* From the last to the first, so that the first IPv4 address wins. */
  if (info->num_spigots > 0)
    for (size_t i = info->spigot_info[0].num_net_addr; i-- > 0;)
      if (info->spigot_info[0].net_addr[i].addr_type == IT_IPV4)
        a->self = info->spigot_info[0].net_addr[i];
  if (info->connect_private_data_len < sizeof(region_pdata_t) ||
      info->accept_private_data_len < sizeof(region_pdata_t))
    die("interface " IA_NAME " carries %zu bytes of private data in a connect and %zu in an "
        "accept; this application needs %zu", info->connect_private_data_len,
        info->accept_private_data_len, sizeof(region_pdata_t));
  it_ia_info_free(info);
}

static void
app_open(app_t *a)
{
  CALL(it_ia_create, IA_NAME, 2, 1, &a->ia);
  CALL(it_pz_create, a->ia, &a->pz);
  self_address(a);
  CALL(it_evd_create, a->ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 256, 1, IT_NULL_HANDLE,
       &a->dto_evd, NULL);
  CALL(it_evd_create, a->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1,
       IT_NULL_HANDLE, &a->cm_evd, NULL);
  region_open(a, &a->msgs, (RECV_DEPTH + SEND_SLOTS) * (size_t) MSG_MAX, IT_PRIV_LOCAL);
  region_open(a, &a->exposed, REGION_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE);
  region_open(a, &a->wsrc, REGION_LEN, IT_PRIV_LOCAL);
  /* A Read sink is written by the responder's answer: remote write, which
   * iWARP requires (RFC 5040 4.4, a tagged sink) and InfiniBand ignores. */
  region_open(a, &a->sink[0], (size_t) NREADS * READ_SEGS * SLOT, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
  region_open(a, &a->sink[1], (size_t) NREADS * READ_SEGS * SLOT, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
  region_open(a, &a->sink[2], (size_t) NREADS * READ_LEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);

  it_ep_attributes_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.max_dto_payload_size = WRITE_CHUNK;
  attr.max_request_dtos = NREADS + SEND_BURST + 4;
  attr.max_recv_dtos = RECV_DEPTH;
  attr.max_send_segments = 1;
  attr.max_recv_segments = 1;
  attr.srv.rc.rdma_read_enable = IT_TRUE;
  attr.srv.rc.rdma_write_enable = IT_TRUE;
  attr.srv.rc.max_rdma_read_segments = READ_SEGS;
  attr.srv.rc.max_rdma_write_segments = 1;
  attr.srv.rc.rdma_read_ird = READ_DEPTH;
  attr.srv.rc.rdma_read_ord = READ_DEPTH;
  a->attr = attr;
  CALL(it_ep_rc_create, a->pz, a->dto_evd, a->dto_evd, a->cm_evd, IT_EP_NO_FLAG, &attr, &a->ep);
}

static void
app_close(app_t *a)
{
  CALL(it_ep_free, a->ep);
  if (a->listener != IT_NULL_HANDLE)
    CALL(it_listen_free, a->listener);
  region_t *regions[] = { &a->msgs, &a->exposed, &a->wsrc, &a->sink[0], &a->sink[1], &a->sink[2] };
  for (size_t i = 0; i < sizeof(regions) / sizeof(regions[0]); i++) {
    CALL(it_lmr_free, regions[i]->lmr);
    free(regions[i]->mem);
  }
  CALL(it_ia_free, a->ia); /* frees the PZ and the EVDs with it */
}

/* ------------------------------------------------------------------------ */
/* Completions                                                              */
/* ------------------------------------------------------------------------ */

static unsigned char *
recv_slot(app_t *a, unsigned slot)
{
  return a->msgs.mem + (size_t) slot * MSG_MAX;
}

static void
post_recv(app_t *a, unsigned slot)
{
  it_lmr_triplet_t t = { .lmr = a->msgs.lmr, .addr.abs = recv_slot(a, slot), .length = MSG_MAX };
  CALL(it_post_recv, a->ep, &t, 1, COOKIE(CK_RECV, slot), IT_COMPLETION_FLAG);
}

/* A connection event while data was expected: the peer went away. */
static void
check_cm(app_t *a, const char *waiting_for)
{
  it_event_t ev;
  if (it_evd_dequeue(a->cm_evd, &ev) != IT_SUCCESS)
    return;
  if (ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT) {
    a->disconnected = true;
    if (waiting_for != NULL)
      die("the peer disconnected while the %s waited for %s", role, waiting_for);
    return;
  }
  die("%s while the %s waited for %s", ib_app_event_name(ev.event_number), role,
      waiting_for != NULL ? waiting_for : "the disconnect");
}

/* Takes one DTO completion off the EVD (waiting up to a slice) and counts
 * it; false when none came.  Any status but success ends the run, except
 * the flushes that follow the disconnect. */
static bool
pump(app_t *a, const char *waiting_for)
{
  it_event_t ev;
  it_status_t st = it_evd_wait(a->dto_evd, WAIT_SLICE_US, &ev, NULL);
  if (st == IT_ERR_TIMEOUT_EXPIRED) {
    check_cm(a, waiting_for);
    return false;
  }
  if (st != IT_SUCCESS)
    call_failed("it_evd_wait on the DTO EVD", st);
  if (ev.event_number < IT_DTO_SEND_CMPL_EVENT || ev.event_number > IT_DTO_RDMA_READ_CMPL_EVENT)
    die("%s on the DTO EVD while the %s waited for %s", ib_app_event_name(ev.event_number), role,
        waiting_for);
  it_dto_cmpl_event_t *d = &ev.dto_cmpl;
  if (d->ep != a->ep)
    return true; /* a receive of an endpoint a refused connect left, flushed */
  unsigned kind = (unsigned) (d->cookie >> 56), idx = (unsigned) (d->cookie & 0xffffffu);
  if (d->dto_status != IT_DTO_SUCCESS) {
    if (a->disconnected && d->dto_status == IT_DTO_ERR_FLUSHED)
      return true;
    char text[256];
    die("%s of cookie kind %u index %u completed with %s while the %s waited for %s",
        ib_app_event_name(ev.event_number), kind, idx,
        ib_app_dto_status_text(d->dto_status, text, sizeof(text)), role, waiting_for);
  }
  switch (kind) {
  case CK_RECV:
    if (a->recv_count == RECV_DEPTH)
      die("more receives completed than were posted");
    a->recv_ready[(a->recv_head + a->recv_count) % RECV_DEPTH] = idx;
    a->recv_bytes[idx] = d->transferred_length;
    a->recv_count++;
    break;
  case CK_SEND: a->sends_done++; break;
  case CK_WRITE: a->writes_done++; break;
  case CK_READ:
    if (d->transferred_length != READ_LEN)
      die("RDMA Read %u moved %u bytes, %u were asked", idx, d->transferred_length, READ_LEN);
    a->reads_done++;
    break;
  default: die("a completion with a cookie this program never gave: 0x%llx", (unsigned long long) d->cookie);
  }
  return true;
}

static void
wait_count(app_t *a, const unsigned *counter, unsigned target, const char *what)
{
  uint64_t deadline = now_us() + a->timeout_us;
  while (*counter < target) {
    if (!pump(a, what) && now_us() > deadline)
      die("timed out after %.1f s waiting for %s (%u of %u)", (double) a->timeout_us / 1e6, what,
          *counter, target);
  }
}

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

static void
send_msg(app_t *a, uint32_t type, uint32_t seq, uint32_t seed, uint32_t len)
{
  unsigned slot = a->next_send_slot++ % SEND_SLOTS;
  unsigned char *p = a->msgs.mem + (size_t) (RECV_DEPTH + slot) * MSG_MAX;
  msg_head_t h = { htonl(type), htonl(seq), htonl(seed), htonl(len) };
  memcpy(p, &h, sizeof(h));
  pattern_fill(p + sizeof(h), len, seed, 0);
  it_lmr_triplet_t t = { .lmr = a->msgs.lmr, .addr.abs = p, .length = sizeof(h) + len };
  CALL(it_post_send, a->ep, &t, 1, COOKIE(CK_SEND, slot), IT_COMPLETION_FLAG);
}

/* The next message, of type @type: its head, its payload checked against
 * its seed; its receive is posted again before this returns. */
static msg_head_t
recv_msg(app_t *a, uint32_t type, const char *what)
{
  uint64_t deadline = now_us() + a->timeout_us;
  while (a->recv_count == 0)
    if (!pump(a, what) && now_us() > deadline)
      die("timed out after %.1f s waiting for %s", (double) a->timeout_us / 1e6, what);
  unsigned slot = a->recv_ready[a->recv_head];
  a->recv_head = (a->recv_head + 1) % RECV_DEPTH;
  a->recv_count--;
  const unsigned char *p = recv_slot(a, slot);
  uint32_t n = a->recv_bytes[slot];
  if (n < sizeof(msg_head_t))
    die("a %u-byte message came while the %s waited for %s", n, role, what);
  msg_head_t h;
  memcpy(&h, p, sizeof(h));
  h.type = ntohl(h.type);
  h.seq = ntohl(h.seq);
  h.seed = ntohl(h.seed);
  h.len = ntohl(h.len);
  if (h.type != type)
    die("a message of type %u came while the %s waited for %s (type %u)", h.type, role, what, type);
  if (h.len != n - sizeof(h))
    die("%s says %u bytes of payload, the receive brought %zu", what, h.len, n - sizeof(h));
  pattern_check(p + sizeof(h), h.len, h.seed, 0, what);
  post_recv(a, slot);
  return h;
}

/* ------------------------------------------------------------------------ */
/* Phases                                                                   */
/* ------------------------------------------------------------------------ */

static uint32_t
burst_len(unsigned i)
{
  /* 1 byte to the whole slot, no two alike */
  static const uint32_t lens[SEND_BURST] = { 1, 7, 64, 100, 511, 512, 513, 1000, 2048, 3001,
                                             4000, MSG_MAX - sizeof(msg_head_t) };
  return lens[i];
}

static uint32_t
seed_of(const char *what)
{
  uint32_t h = 2166136261u; /* FNV-1a: each phase and side its own pattern */
  for (; *what; what++)
    h = (h ^ (unsigned char) *what) * 16777619u;
  return h;
}

static void
sends_out(app_t *a)
{
  unsigned before = a->sends_done;
  for (unsigned i = 0; i < SEND_BURST; i++)
    send_msg(a, MSG_DATA, i, seed_of(role) + i, burst_len(i));
  wait_count(a, &a->sends_done, before + SEND_BURST, "the Sends of the burst to complete");
}

static void
sends_in(app_t *a)
{
  for (unsigned i = 0; i < SEND_BURST; i++) {
    msg_head_t h = recv_msg(a, MSG_DATA, "a Send of the peer's burst");
    if (h.seq != i || h.len != burst_len(i))
      die("Send %u of the peer's burst came as number %u with %u bytes (expected %u)", i, h.seq,
          h.len, burst_len(i));
  }
  printf(PROG ": %s: %u Sends received, every byte checked\n", role, SEND_BURST);
}

static void
writes_out(app_t *a)
{
  uint32_t seed = seed_of(a->server ? "server writes" : "client writes");
  pattern_fill(a->wsrc.mem, REGION_LEN, seed, 0);
  unsigned before = a->writes_done;
  for (unsigned i = 0; i < NWRITES; i++) {
    it_lmr_triplet_t t = { .lmr = a->wsrc.lmr, .addr.abs = a->wsrc.mem + (size_t) i * WRITE_CHUNK,
                           .length = WRITE_CHUNK };
    CALL(it_post_rdma_write, a->ep, &t, 1, COOKIE(CK_WRITE, i), IT_COMPLETION_FLAG,
         a->peer_addr + (uint64_t) i * WRITE_CHUNK, (it_rmr_context_t) a->peer_context);
  }
  wait_count(a, &a->writes_done, before + NWRITES, "the RDMA Writes to complete");
  /* The Send is placed after the Writes before it (IB and RDMAP ordering):
   * when the peer sees it, the region holds what was written. */
  send_msg(a, MSG_WRITTEN, 0, seed, 0);
}

static void
writes_in(app_t *a)
{
  msg_head_t h = recv_msg(a, MSG_WRITTEN, "the peer's word that its RDMA Writes are done");
  pattern_check(a->exposed.mem, REGION_LEN, h.seed, 0, "the region the peer wrote");
  printf(PROG ": %s: %u RDMA Writes of %u bytes received, every byte checked\n", role, NWRITES,
         WRITE_CHUNK);
}

/* Our region offered to the peer's Reads; returns when it has read it. */
static void
reads_offer(app_t *a)
{
  uint32_t seed = seed_of(a->server ? "server region" : "client region");
  pattern_fill(a->exposed.mem, REGION_LEN, seed, 0);
  send_msg(a, MSG_READ_READY, 0, seed, 0);
  recv_msg(a, MSG_READ_DONE, "the peer's word that its RDMA Reads are done");
}

/* Where segment @j of Read @i lands: even Reads spread their segments over
 * sinks 0 and 1, far apart and in slots with guard bytes after them; odd
 * Reads place them one after another in sink 2 (one run). */
static unsigned char *
seg_place(app_t *a, unsigned i, unsigned j, it_lmr_handle_t *lmr)
{
  if (i % 2 == 0) {
    region_t *s = &a->sink[j % 2];
    *lmr = s->lmr;
    return s->mem + ((size_t) j * NREADS + i) * SLOT;
  }
  size_t off = (size_t) i * READ_LEN;
  for (unsigned k = 0; k < j; k++)
    off += SEG_LEN(k);
  *lmr = a->sink[2].lmr;
  return a->sink[2].mem + off;
}

static void
reads_do(app_t *a)
{
  msg_head_t h = recv_msg(a, MSG_READ_READY, "the peer's word that its region is ready");
  for (unsigned s = 0; s < 3; s++)
    memset(a->sink[s].mem, GUARD, a->sink[s].len);
  unsigned before = a->reads_done;
  /* All NREADS at once: the ORD negotiated is READ_DEPTH. */
  for (unsigned i = 0; i < NREADS; i++) {
    it_lmr_triplet_t t[READ_SEGS];
    for (unsigned j = 0; j < READ_SEGS; j++) {
      t[j].addr.abs = seg_place(a, i, j, &t[j].lmr);
      t[j].length = SEG_LEN(j);
    }
    CALL(it_post_rdma_read, a->ep, t, READ_SEGS, COOKIE(CK_READ, i), IT_COMPLETION_FLAG,
         a->peer_addr + (uint64_t) i * READ_LEN, (it_rmr_context_t) a->peer_context);
  }
  wait_count(a, &a->reads_done, before + NREADS, "the RDMA Reads to complete");

  /* Every segment holds its part of the peer's region; every other byte
   * of the sinks is still the guard. */
  for (unsigned i = 0; i < NREADS; i++) {
    size_t src = (size_t) i * READ_LEN;
    for (unsigned j = 0; j < READ_SEGS; j++) {
      it_lmr_handle_t lmr;
      unsigned char *p = seg_place(a, i, j, &lmr);
      char what[96];
      snprintf(what, sizeof(what), "segment %u of RDMA Read %u (sink %s)", j, i,
               i % 2 == 0 ? (j % 2 ? "1" : "0") : "2");
      pattern_check(p, SEG_LEN(j), h.seed, src, what);
      memset(p, GUARD, SEG_LEN(j));
      src += SEG_LEN(j);
    }
  }
  for (unsigned s = 0; s < 3; s++)
    for (size_t k = 0; k < a->sink[s].len; k++)
      if (a->sink[s].mem[k] != GUARD)
        die("byte %zu of Read sink %u, outside every segment, is 0x%02x: a Read wrote past its "
            "segment", k, s, a->sink[s].mem[k]);
  send_msg(a, MSG_READ_DONE, 0, 0, 0);
  printf(PROG ": %s: %u RDMA Reads in flight of %u segments each (%u bytes), every byte checked\n",
         role, NREADS, READ_SEGS, READ_LEN);
}

/* ------------------------------------------------------------------------ */
/* Connection                                                               */
/* ------------------------------------------------------------------------ */

static void
pdata_make(app_t *a, region_pdata_t *p)
{
  p->magic = htonl(APP_MAGIC);
  p->version = htonl(APP_VERSION);
  p->addr = it_hton64(it_make_rdma_addr_absolute(a->exposed.mem));
  p->context = it_hton64((uint64_t) a->exposed.context);
  p->len = it_hton64(REGION_LEN);
}

static void
pdata_take(app_t *a, const unsigned char *raw, it_boolean_t present, const char *from)
{
  region_pdata_t p;
  if (!present)
    die("the %s's private data did not come", from);
  memcpy(&p, raw, sizeof(p));
  if (ntohl(p.magic) != APP_MAGIC || ntohl(p.version) != APP_VERSION)
    die("the %s's private data is not this program's (magic 0x%08x, version %u)", from,
        ntohl(p.magic), ntohl(p.version));
  a->peer_addr = it_ntoh64(p.addr);
  a->peer_context = it_ntoh64(p.context);
  a->peer_len = it_ntoh64(p.len);
  if (a->peer_len != REGION_LEN)
    die("the %s offers a region of %llu bytes, expected %u", from,
        (unsigned long long) a->peer_len, REGION_LEN);
}

static void
check_depths(uint32_t ird, uint32_t ord)
{
  if (ird != READ_DEPTH || ord != READ_DEPTH)
    die("the connection has RDMA Read depths IRD %u and ORD %u; this application asked %u each",
        ird, ord, READ_DEPTH);
  printf(PROG ": %s: connected, IRD %u ORD %u\n", role, ird, ord);
}

static it_event_t
cm_wait(app_t *a, it_evd_handle_t evd, it_event_type_t want, const char *what)
{
  it_event_t ev;
  it_status_t st = it_evd_wait(evd, a->timeout_us, &ev, NULL);
  if (st == IT_ERR_TIMEOUT_EXPIRED)
    die("timed out after %.1f s waiting for %s", (double) a->timeout_us / 1e6, what);
  if (st != IT_SUCCESS)
    call_failed("it_evd_wait on a CM EVD", st);
  if (ev.event_number != want)
    die("expected %s (%s), got %s", ib_app_event_name(want), what,
        ib_app_event_name(ev.event_number));
  return ev;
}

static void
server_accept(app_t *a)
{
  CALL(it_evd_create, a->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, IT_NULL_HANDLE,
       &a->req_evd, NULL);
  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = htons(a->port);
  /* Port 0: the adapter chooses one, said on the line below. */
  CALL(it_listen_create, a->ia, 0, a->req_evd, a->port != 0 ? IT_LISTEN_CONN_QUAL_INPUT : IT_LISTEN_NO_FLAG,
       &qual, &a->listener);
  a->port = ntohs(qual.conn_qual.port);
  printf(PROG ": server: listening on port %u of " IA_NAME "\n", a->port);
  fflush(stdout);

  it_event_t ev = cm_wait(a, a->req_evd, IT_CM_REQ_CONN_REQUEST_EVENT, "a client to connect");
  pdata_take(a, ev.conn_req.private_data, ev.conn_req.private_data_present, "client");
  for (unsigned s = 0; s < RECV_DEPTH; s++)
    post_recv(a, s);
  region_pdata_t mine;
  pdata_make(a, &mine);
  CALL(it_ep_accept, a->ep, ev.conn_req.cn_est_id, (const unsigned char *) &mine, sizeof(mine));
  ev = cm_wait(a, a->cm_evd, IT_CM_MSG_CONN_ESTABLISHED_EVENT, "the accepted connection");
  check_depths(ev.conn.rdma_read_ird, ev.conn.rdma_read_ord);
}

static void
client_connect(app_t *a)
{
  /* The path by hand, as rdma_cm applications fill it: IPv4, from our
   * address to the server's. */
  it_net_addr_t server = a->self;
  if (a->address != NULL) {
    server.addr_type = IT_IPV4;
    if (inet_pton(AF_INET, a->address, &server.addr.ipv4) != 1)
      die("--address %s: expected an IPv4 address", a->address);
  }
  it_path_t path;
  memset(&path, 0, sizeof(path));
  path.spigot_id = 0;
  path.timeout = a->timeout_us;
  path.remote.iwarp.ip_vers = IT_IP_VERS_IPV4;
  path.remote.iwarp.laddr.ipv4 = a->self.addr.ipv4;
  path.remote.iwarp.raddr.ipv4 = server.addr.ipv4;
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &server.addr.ipv4, text, sizeof(text));

  it_conn_qual_t qual = { .type = IT_IANA_PORT };
  qual.conn_qual.port = htons(a->port);
  it_conn_attributes_t ca;
  memset(&ca, 0, sizeof(ca));
  region_pdata_t mine;
  pdata_make(a, &mine);
  for (unsigned s = 0; s < RECV_DEPTH; s++)
    post_recv(a, s);

  /* The server may not listen yet: a refused attempt is tried again on a
   * fresh endpoint (a rejected one is done for) until the timeout. */
  uint64_t deadline = now_us() + a->timeout_us;
  for (unsigned attempt = 1;; attempt++) {
    CALL(it_ep_connect, a->ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY,
         (const unsigned char *) &mine, sizeof(mine));
    it_event_t ev;
    it_status_t st = it_evd_wait(a->cm_evd, a->timeout_us, &ev, NULL);
    if (st == IT_ERR_TIMEOUT_EXPIRED)
      die("no answer from %s port %u within %.1f s", text, a->port, (double) a->timeout_us / 1e6);
    if (st != IT_SUCCESS)
      call_failed("it_evd_wait on the CM EVD", st);
    if (ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT) {
      pdata_take(a, ev.conn.private_data, ev.conn.private_data_present, "server");
      check_depths(ev.conn.rdma_read_ird, ev.conn.rdma_read_ord);
      return;
    }
    bool nonpeer = ev.event_number == IT_CM_MSG_CONN_NONPEER_REJECT_EVENT;
    if (!nonpeer && ev.event_number != IT_CM_MSG_CONN_PEER_REJECT_EVENT)
      die("expected %s connecting to %s port %u, got %s",
          ib_app_event_name(IT_CM_MSG_CONN_ESTABLISHED_EVENT), text, a->port,
          ib_app_event_name(ev.event_number));
    if (now_us() + RETRY_PAUSE_US >= deadline)
      die("%s port %u refused the connection for %.1f s (%u attempts; last: %s, reason %d)", text,
          a->port, (double) a->timeout_us / 1e6, attempt, ib_app_event_name(ev.event_number),
          nonpeer ? (int) ev.conn.reject_reason_code : -1);
    usleep(RETRY_PAUSE_US);
    /* A rejected endpoint is done for: a new one (its flushed receives
     * are told apart by their endpoint, see pump). */
    CALL(it_ep_free, a->ep);
    CALL(it_ep_rc_create, a->pz, a->dto_evd, a->dto_evd, a->cm_evd, IT_EP_NO_FLAG, &a->attr,
         &a->ep);
    for (unsigned s = 0; s < RECV_DEPTH; s++)
      post_recv(a, s);
  }
}

/* ------------------------------------------------------------------------ */
/* The run                                                                  */
/* ------------------------------------------------------------------------ */

static void
client_run(app_t *a)
{
  sends_out(a);
  sends_in(a);
  writes_out(a);
  writes_in(a);
  reads_do(a);
  reads_offer(a);
  CALL(it_ep_disconnect, a->ep, NULL, 0);
  cm_wait(a, a->cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT, "the end of the connection");
  a->disconnected = true;
}

static void
server_run(app_t *a)
{
  sends_in(a);
  sends_out(a);
  writes_in(a);
  writes_out(a);
  reads_offer(a);
  reads_do(a);
  /* The client disconnects once it has our word that the Reads are done;
   * the Send carrying it must complete first. */
  wait_count(a, &a->sends_done, a->next_send_slot, "the last Send to complete");
  if (!a->disconnected)
    cm_wait(a, a->cm_evd, IT_CM_MSG_CONN_DISCONNECT_EVENT, "the client to disconnect");
  a->disconnected = true;
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

int
main(int argc, char **argv)
{
  app_t a;
  memset(&a, 0, sizeof(a));
  a.port = DEFAULT_PORT;
  a.timeout_us = 30000000u;
  int mode = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--server") == 0 || strcmp(arg, "--client") == 0)
      mode = arg[2];
    else if (strcmp(arg, "--port") == 0 && i + 1 < argc)
      a.port = (uint16_t) parse_num(arg, argv[++i], 0, 65535);
    else if (strcmp(arg, "--timeout") == 0 && i + 1 < argc)
      a.timeout_us = parse_num(arg, argv[++i], 1, 3600) * 1000000u;
    else if (strcmp(arg, "--address") == 0 && i + 1 < argc)
      a.address = argv[++i];
    else {
      fprintf(stderr, "usage: " PROG " --server|--client [--port N] [--timeout S] "
                      "[--address IPV4]\n");
      return 2;
    }
  }
  if (mode == 0) {
    fprintf(stderr, PROG ": say --server or --client\n");
    return 2;
  }
  a.server = mode == 's';
  role = a.server ? "server" : "client";

  app_open(&a);
  if (a.server) {
    server_accept(&a);
    server_run(&a);
  } else {
    client_connect(&a);
    client_run(&a);
  }
  app_close(&a);
  printf(PROG ": %s: done over " IA_NAME ", every byte checked\n", role);
  return 0;
}
