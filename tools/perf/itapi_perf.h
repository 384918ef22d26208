/*
 * itapi-perf: what its parts share.  The file list is in itapi_perf.c.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef ITAPI_PERF_H
#define ITAPI_PERF_H

#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define PROG "itapi-perf"
#define DEFAULT_PORT 18515  /* perftest's, so firewalls already opened for it work */
#define MAX_SIZES 64
#define WAIT_SLICE_US 100000 /* blocking waits wake this often to check the connection */

/* Errors (perf_side.c); IT() and it_die() come from tools/tool_util.h. */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
#include "../tool_util.h"

/* Tests and configuration */

typedef enum { OP_SEND, OP_WRITE, OP_READ } op_t;

typedef struct {
  const char *name;
  op_t op;
  bool bw;
} test_desc_t;

#define NTESTS 6
extern const test_desc_t tests[NTESTS];

typedef enum { MODE_LOOPBACK, MODE_SERVER, MODE_CLIENT } run_mode_t;

/* Where the buffers come from (--mem). */
typedef enum {
  MEM_ITX,                   /* itx_mem_alloc: what the provider reaches fastest (default) */
  MEM_SHARED,                /* a sealable memfd of our own, mapped MAP_SHARED */
  MEM_PRIVATE                /* aligned_alloc, as an application's malloc */
} mem_kind_t;
extern const char *const mem_kind_names[3];

typedef struct {
  unsigned test_mask;
  size_t sizes[MAX_SIZES];
  size_t nsizes;
  uint64_t iters;            /* 0: a default that depends on the test and size */
  int64_t warmup;            /* -1: 10% of the iterations */
  double duration;           /* seconds; 0: run by iterations */
  uint32_t window, signal_every;
  bool event, verify, json, csv, progress;
  bool complete_first;       /* --complete-first */
  mem_kind_t mem;            /* --mem */
  run_mode_t mode;
  const char *peer;
  int port;                  /* -1: the provider chooses (loopback) or DEFAULT_PORT */
  const char *ia_name;
  double timeout;            /* seconds a due wait may take (wait_t) */
  unsigned threads;          /* -T: message-rate mode with this many threads; 0: off */
  bool xproc;                /* -T --xproc: the receiving ends in a second process */
  bool ud;                   /* -T --ud: datagram endpoint pairs (ud_bw) */
  bool rmr;                  /* -T --rmr: an RMR allocated beside the run */
  bool srq;                  /* -T --srq: each receiving end takes receives from an SRQ */
  bool xproc_peer;           /* this process is that second process (internal) */
} config_t;

/* The tests -T runs (send_bw, write_bw: tests[] 3 and 4), and its size. */
#define RATE_TESTS ((1u << 3) | (1u << 4))
#define RATE_SIZE 8

/* Wire formats: private data and control messages, all in network order.
 *
 * Per chunk: the client posts a receive for READY and sends RUN; the
 * server posts the chunk's receives, then READY; then the data phase.
 * No send may ever find no receive posted (iWARP has no receiver-not-ready
 * retry: the connection would break), and receives are consumed in the
 * order posted, so the server posts its receive for the next RUN behind
 * the chunk's last data receive, and send_bw runs on credits. */

#define WIRE_MAGIC 0x49545046u /* "ITPF" */
#define WIRE_VERSION 1
#define FLAG_EVENT 0x1
#define FLAG_VERIFY 0x2
#define FLAG_COMPLETE_FIRST 0x4 /* ctrl_msg_t: each ping and pong completes before the wait for the answer */

typedef struct {            /* it_ep_connect() private data */
  uint32_t magic;
  uint16_t version, flags;
  uint32_t window, reserved;
  uint64_t max_size, addr, context;
} conn_pdata_t;
_Static_assert(sizeof(conn_pdata_t) == 40, "conn_pdata_t has padding");

typedef struct {            /* it_ep_accept() private data */
  uint32_t magic;
  uint16_t version, reserved;
  uint64_t addr, context;
} accept_pdata_t;
_Static_assert(sizeof(accept_pdata_t) == 24, "accept_pdata_t has padding");

typedef enum { MSG_RUN = 1, MSG_READY = 2, MSG_QUIT = 3 } msg_type_t;

typedef struct {            /* sent in a CTRL_SLOT-byte send */
  uint32_t magic, type, test, flags;
  uint64_t size, iters, base;
} ctrl_msg_t;
_Static_assert(sizeof(ctrl_msg_t) == 40, "ctrl_msg_t has padding");

/* One side of a connection */

/* Registered memory, the same layout on both sides so that offsets name
 * the peer's buffers too: a control page (2 send slots, 4 receive slots,
 * the credit word the server writes, 16 credit sources), then two targets
 * and one source of `slot` bytes each.  Latency tests alternate between
 * the targets so that one is checked while the peer writes the other, and
 * so that stale data (from iteration i-2) never matches.  Three slots, not
 * four: over a provider that pins (vp/ib), both sides of a loopback run
 * without CAP_IPC_LOCK pin from one memlock limit, commonly 8 MiB, and
 * 1 MiB messages must fit in it. */
#define CTRL_SLOT 64
#define OFF_CTRL_SEND 0
#define OFF_CTRL_RECV 256
#define NCTRL_RECV 4
#define OFF_CREDIT 512
#define OFF_CREDIT_SRC 1024
#define NCREDIT_SRC 16
#define OFF_DATA 4096

/* Cookies: a kind in the top byte, a sequence number below. */
#define CK_SQ 1ull
#define CK_DATA_RECV 2ull
#define CK_CTRL_RECV 3ull
#define CK_SEQ_MASK ((1ull << 56) - 1)
#define COOKIE(kind, seq) ((kind) << 56 | ((seq) & CK_SEQ_MASK))

typedef struct {
  const char *role;
  bool event_mode;
  mem_kind_t mem_kind;       /* where mem comes from */
  uint64_t timeout_ns;
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  it_evd_handle_t dto_evd, cm_evd, req_evd;
  it_listen_handle_t listener;
  it_ep_handle_t ep;
  bool use_srq;              /* open_ep gives the EP an SRQ of its own (-T --srq) */
  it_srq_handle_t srq;       /* ... or IT_NULL_HANDLE: receives go to the EP */
  it_lmr_handle_t lmr;
  it_rmr_context_t context;
  unsigned char *mem;
  int mem_fd;                /* the memfd under mem (MEM_SHARED), or -1 */
  size_t mem_len, slot;
  uint64_t peer_addr, peer_context;
  bool connected;
  /* Send queue: every WR gets a sequence number; a signaled completion
   * for number s proves that all up to s are done (RC completes a send
   * queue in order), which covers the unsignaled ones before it. */
  size_t sq_depth, rq_depth;
  uint64_t sq_posted, sq_done, sq_signaled;
  uint64_t ctrl_send_seq[2];
  uint64_t credit_src_seq[NCREDIT_SRC];
  unsigned ctrl_send_next, credit_next;
  /* Receive queue. */
  uint64_t data_recv_posted, data_recvd;
  size_t expect_len;
  unsigned ctrl_recv_next;
  ctrl_msg_t ctrl_q[NCTRL_RECV];
  unsigned ctrl_head, ctrl_count;
} side_t;

/* write_lat in event mode: each RDMA Write is followed by a zero-length
 * Send, and the peer learns of the Write by that Send's receive
 * completion (it_evd_wait), not by polling the target's last byte. */
static inline bool
notify_by_send(const side_t *s, const test_desc_t *t)
{
  return s->event_mode && t->op == OP_WRITE && !t->bw;
}

static inline unsigned char *target(side_t *s, int k) { return s->mem + OFF_DATA + k * s->slot; }
static inline size_t source_off(side_t *s) { return OFF_DATA + 2 * s->slot; }
static inline unsigned char *source(side_t *s) { return s->mem + source_off(s); }
static inline uint64_t peer_target(side_t *s, int k) { return s->peer_addr + OFF_DATA + k * s->slot; }

static inline uint64_t
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* The clock of one latency sample, as perftest's get_cycles() and UCX's
 * ucs_get_time(): the time-stamp counter where the kernel itself keeps
 * time with it (its clocksource is "tsc": constant rate, synchronised
 * across CPUs), else CLOCK_MONOTONIC.  A TSC read costs a few ns where a
 * clock_gettime() costs 20-25 here, and half of one such call falls inside
 * every sample.  lat_clock_init() decides and calibrates (perf_report.c);
 * lat_ticks_ns() turns a difference of lat_now() into ns. */
extern bool lat_use_tsc;
extern double lat_ns_per_tick;
void lat_clock_init(void);

static inline uint64_t
lat_now(void)
{
#if defined(__x86_64__)
  if (lat_use_tsc)
    return __builtin_ia32_rdtsc();
#endif
  return now_ns();
}

/* The pause of a loop that polls memory another CPU writes (write_lat),
 * as the floor of tools/bench/emul_probe.c does: on x86 it spares the
 * pipeline flush a spin loop takes when the awaited store lands, and the
 * contention of back-to-back loads on the line being written. */
static inline void
spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static inline uint64_t
lat_ticks_ns(uint64_t ticks)
{
  return lat_use_tsc ? (uint64_t) ((double) ticks * lat_ns_per_tick + 0.5) : ticks;
}

/* Data patterns */

/* Who wrote a buffer: part of the pattern, so that a ping echoed back
 * unchanged, or the wrong source, does not pass as the answer. */
enum { WHO_CLIENT = 1, WHO_SERVER = 2, WHO_READ = 3 };

/* The last byte is the iteration's tag, never 0 (targets start zeroed) and
 * different from the tag two iterations earlier: write_lat polls it. */
static inline unsigned char tag_of(uint64_t it) { return (unsigned char) (it % 255 + 1); }

/* Byte j of iteration `it` from `who` is (it * 13 + who * 101 + 7 j) mod
 * 256; the last byte is the tag.  verify() exits naming the iteration and
 * byte; `settle` allows for an RDMA Write still landing. */
void fill(unsigned char *p, size_t n, uint64_t it, unsigned who);
void verify(const unsigned char *p, size_t n, uint64_t it, unsigned who, const char *test,
            const char *role, uint64_t shown, bool settle);

/* Completions, set-up and tear-down (perf_side.c) */

/* What a blocking wait owes --timeout.  A wait is due when the peer owes
 * an answer to something this side did (a completion, READY, a ping's
 * pong, credits): no answer for --timeout seconds is a failure.  The
 * server's wait for the client's next control message is idle: the client
 * owes it nothing (it reports between tests, and in a one-sided test,
 * RDMA Write or Read bandwidth or Read latency, it works alone for as long
 * as the test lasts), so the wait has no deadline and ends with the
 * message or with the loss of the connection, which it watches. */
typedef enum {
  WAIT_DUE,        /* the side's completion mode (-e or busy poll), --timeout */
  WAIT_IDLE,       /* it_evd_wait, no deadline */
  WAIT_IDLE_SPIN   /* busy poll (an event-mode side waits), no deadline */
} wait_t;

void check_deadline(side_t *s, uint64_t deadline, const char *what);
void check_connection(side_t *s);
/* A busy wait's watch, called on each turn `spin` (from 1): every 4096th
 * turn, check the connection and, unless `deadline` is NULL (an idle
 * wait), the deadline, which the first check sets to --timeout from then
 * (a clock read per turn would cost a system call where the clocksource
 * has no vDSO path). */
void spin_check(side_t *s, unsigned spin, uint64_t *deadline, const char *what);
bool pump(side_t *s, bool block, wait_t how, const char *what);
void sq_wait(side_t *s, uint64_t count, const char *what);
uint64_t sq_post(side_t *s, op_t op, size_t local_off, size_t len, uint64_t remote_addr,
                 bool signaled);
void post_data_recv(side_t *s, int k, size_t len);
void post_ctrl_recv(side_t *s);
void send_ctrl(side_t *s, msg_type_t type, unsigned test, unsigned flags, uint64_t size,
               uint64_t iters, uint64_t base);
ctrl_msg_t wait_ctrl(side_t *s, wait_t how, const char *what);
/* The receiving side's credit (perf_side.c): its count of data receives
 * posted, RDMA-written into the sender's credit word, which a sender reads
 * before each Send. */
void publish_credit(side_t *s);
uint64_t read_credit(side_t *s);
/* Account for one completion taken by the caller (what pump does). */
void account_event(side_t *s, const it_event_t *ev);
it_event_t wait_cm(side_t *s, it_evd_handle_t evd, it_event_type_t want, bool forever,
                   const char *what);
void open_ia(side_t *s, const char *ia_name, it_ia_info_t **info);
void open_ep(side_t *s, size_t max_size, uint32_t window);
void close_side(side_t *s);
/* The buffers of open_ep, however they were had (--mem). */
void free_buffers(side_t *s);
void check_size_limits(const it_ia_info_t *info, size_t max_size, const char *who);

/* Server (perf_server.c) and client (perf_client.c) */

typedef struct {
  const config_t *cfg;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int port;          /* host order; -1 until listening */
} rendezvous_t;

void server_run(const config_t *cfg, rendezvous_t *rv);
void *server_thread(void *rendezvous);
int client_run(const config_t *cfg, const it_net_addr_t *addr, int port);

/* -T: message rate of cfg->threads threads, each with its own endpoint
 * pair (perf_rate.c). */
int rate_run(const config_t *cfg);
/* -T --ud: the datagram rate of cfg->threads threads (perf_ud.c). */
int ud_rate_run(const config_t *cfg);
/* -T's report (perf_rate.c): the head, naming what each thread has; one
 * row of a test and size, from each thread's messages and time (all the
 * messages over the longest time, the slowest and the fastest thread);
 * the tail. */
void rate_head(const config_t *cfg, const char *ia_name, const char *what);
/* The largest of cfg->sizes. */
size_t max_size_of(const config_t *cfg);
/* -T --rmr: an RMR of a protection zone of its own on @ia, allocated
 * (unlinked) while the threads run; both handles IT_NULL_HANDLE without
 * --rmr.  Close frees them. */
typedef struct {
  it_pz_handle_t pz;
  it_rmr_handle_t rmr;
} rmr_beside_t;
void rmr_beside_open(const config_t *cfg, it_ia_handle_t ia, rmr_beside_t *b);
void rmr_beside_close(rmr_beside_t *b);
void rate_row(const config_t *cfg, const char *test, size_t bytes, const uint64_t *msgs,
              const uint64_t *ns, bool first);
void rate_tail(const config_t *cfg);

/* Results (perf_report.c) */

typedef struct {
  uint32_t *ns;              /* latency samples: round trip or read time */
  size_t n, cap;
  uint64_t bw_ns, bw_msgs;   /* bandwidth: time and messages of the timed chunks */
} samples_t;

typedef struct {
  bool on;
  uint64_t start, next;
  const char *test;
  size_t size;
  uint64_t total;            /* iterations, or 0 in duration mode */
  double duration;
  bool shown;
} progress_t;

typedef struct {
  const char *test;
  bool bw;
  size_t bytes;
  uint64_t iters;
  double min, median, avg, stddev, p99, p999, max; /* microseconds */
  double gbps, mmsgps;
} result_t;

extern bool progress_drawn;
extern const char *const csv_fields;
void progress_tick(progress_t *p, uint64_t now, uint64_t done);
void progress_done(progress_t *p);
void record(samples_t *sm, uint64_t ns);
void lat_stats(result_t *r, samples_t *sm, double div);
void print_table_header(void);
void print_table_row(const result_t *r);
void print_csv_row(const result_t *r);
void print_json(const config_t *cfg, const char *ia, const result_t *res, size_t n);

#endif /* ITAPI_PERF_H */
