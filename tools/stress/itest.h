/*
 * itapi-test: shared types of the transaction/stress tool.
 *
 * Each worker thread owns E connected endpoint pairs and drives both ends
 * of each pair (the emul fabric lives in one process).  Both ends issue a
 * random mix of operations to each other and validate every transfer.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef ITEST_H
#define ITEST_H

#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define ITEST_MAX_WINDOW 16
#define ITEST_GUARD 16          /* poisoned bytes checked after each landing zone */
#define ITEST_SETUP_TIMEOUT_US (10ull * 1000 * 1000)
#define ITEST_DRAIN_TIMEOUT_S 10.0

/* Operations a user can ask for (--ops). */
typedef enum { OP_SEND, OP_WRITE, OP_READ, OP_ATOMIC, OP_COUNT } itest_op_t;

/* What a work request is; encoded in its cookie. */
typedef enum {
  WR_NONE, WR_SEND, WR_RECV, WR_WRITE, WR_READ, WR_READBACK, WR_FADD, WR_CSWAP, WR_KIND_COUNT
} itest_wr_kind_t;

/* Fault injection of one pair (--fault). */
typedef enum { FAULT_NONE, FAULT_PREP, FAULT_FREED, FAULT_DONE } itest_fault_state_t;

/* Who calls it_ep_disconnect at the end (--close). */
typedef enum { CLOSE_MIXED, CLOSE_ACTIVE, CLOSE_PASSIVE, CLOSE_BOTH } itest_close_t;

/* Lifecycle of a pair. */
typedef enum {
  PAIR_RUNNING,     /* both ends issue and validate */
  PAIR_DEAD,        /* an error broke it: flushed completions are expected */
  PAIR_FAULT,       /* --fault victim pair */
  PAIR_DISCONNECTING
} itest_pair_state_t;

typedef struct {
  bool busy;
  itest_wr_kind_t kind;
  uint64_t cookie;
  uint64_t post_no;   /* position in its queue: completions come in this order */
  uint64_t seq;       /* transfer sequence number: key of the data pattern */
  uint32_t len;
  uint32_t off;       /* remote offset (RDMA) inside the slot or read region */
  uint64_t expect;    /* atomics: the old value the result must hold */
  bool readback;      /* an RDMA Write to be read back once it completed */
  bool miss;          /* a compare-and-swap whose compare is meant to fail */
} itest_wr_t;

typedef struct itest_thread itest_thread_t;
typedef struct itest_pair itest_pair_t;

typedef struct itest_end {
  itest_thread_t *th;
  itest_pair_t *pair;
  struct itest_end *peer;
  int side;             /* 0: active (connects), 1: passive (accepts) */
  unsigned index;       /* pair * 2 + side, inside the thread */
  uint64_t gid;         /* unique in the run: thread << 16 | index */
  it_ep_handle_t ep;
  it_evd_handle_t req_evd, recv_evd, cm_evd;
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  uint8_t *mem;
  size_t memlen;
  uint64_t peer_base;   /* the peer's region, as announced in private data */
  it_rmr_context_t peer_ctx;

  itest_wr_t sq[ITEST_MAX_WINDOW];
  itest_wr_t rq[ITEST_MAX_WINDOW];
  unsigned sq_busy, rq_busy;
  uint64_t sq_post_no, sq_done_no, rq_post_no, rq_done_no;
  uint32_t gen;         /* cookie generation */
  uint64_t op_seq;      /* sequence of RDMA and atomic transfers */
  uint64_t send_seq;    /* sends issued toward the peer */
  uint64_t send_done;   /* sends completed successfully */
  uint64_t recv_seq;    /* receives posted: the k-th gets the peer's k-th send */
  uint64_t recv_done;   /* receives validated */
  uint64_t atomic_value;/* what the peer's counter must hold */
  bool atomics_clean;   /* every atomic to the peer completed successfully */
  bool hold_recv;       /* --fault: victim stops replenishing receives */

  bool established, disconnected, broken, freed;
  bool free_grace;      /* the CM EVD is drained right after this end's it_ep_free:
                           its events were queued before the free */
  bool disc_initiator;  /* this end called it_ep_disconnect */
  unsigned cm_unexpected;
} itest_end_t;

struct itest_pair {
  itest_thread_t *th;
  unsigned index;
  itest_pair_state_t state;
  itest_end_t end[2];
};

typedef struct {
  uint64_t ops[OP_COUNT];   /* completed and validated, by initiator */
  uint64_t fadd, cswap, cswap_miss;
  uint64_t recv, readback;
  uint64_t bytes;
  uint64_t flushed;         /* flushed completions where flushes are expected */
  uint64_t disconnects, disconnects_expected;
  uint64_t issued;
} itest_stats_t;

typedef struct {
  bool enabled, triggered, verified;
  int victim_side;
  bool victim_holds;        /* the victim stops replenishing receives (else the survivor does) */
  unsigned survivor_flushed, victim_flushed; /* completed in error (flushed, or over a
                                                non-IB transport any error) after the free */
  unsigned error_cmpl;      /* of those, not IT_DTO_ERR_FLUSHED (non-IB transports only) */
  unsigned tolerated_cm;    /* CM events for the freed EP queued before its free */
  unsigned survivor_outstanding, victim_outstanding; /* at it_ep_free */
  bool broken_event;
} itest_fault_report_t;

typedef struct itest_config {
  const char *ia_name;
  unsigned threads, eps;
  double duration;          /* seconds; 0 when a count is given */
  uint64_t transactions;    /* 0 when a duration is given */
  uint32_t max_size;
  unsigned window;
  bool op_enabled[OP_COUNT];
  uint64_t seed;
  bool json, verbose, fault;
  bool three_way;           /* the IA offers the three-way handshake */
  /* it_ia_info_t.transport_type is IT_IB_TRANSPORT: a send that finds no
   * receive waits (RNR retry) and a vanished peer flushes the survivor's
   * requests.  Otherwise (iWARP) a send with no receive posted ends the
   * connection, so a sender needs a receive posted at the peer first, and
   * requests in flight toward a vanished peer may end in a remote error. */
  bool ib;
  size_t disconnect_pdata;  /* it_ia_info_t.disconnect_private_data_len */
  /* itx_ia_completion() is ITX_COMPLETION_SENT (iWARP): a Write's
   * completion says nothing of its placement, so every Write is read back
   * and its target memory checked when that Read returns. */
  bool at_sent;
  unsigned readback_pct;
  itest_close_t close;
  it_ia_handle_t ia[2];     /* [0] active side, [1] passive side */
} itest_config_t;

struct itest_thread {
  const itest_config_t *cfg;
  unsigned id;
  pthread_t tid;
  uint64_t rng;
  uint64_t quota;           /* transactions to issue (-n) */
  double t_start, t_stop;   /* monotonic seconds */
  itest_pair_t *pairs;
  unsigned npairs;
  /* objects of each side */
  it_pz_handle_t pz[2];
  it_evd_handle_t shared_dto_evd;   /* active side: every EP, both queues */
  it_evd_handle_t cm_evd[2];
  it_evd_handle_t req_evd;          /* listener */
  it_listen_handle_t listener;
  it_path_t path;
  uint16_t port;
  size_t slot;                      /* bytes per slot */
  size_t off_src, off_sink, off_recv, off_target, off_rdreg, off_atomic;

  bool stopping;
  itest_fault_state_t fault_state;
  itest_pair_t *fault_pair;
  /* Set (release) just before the fault EP is freed, with both EP handles
   * of the fault pair: the main thread then accepts affiliated events
   * naming them (non-IB transports). */
  atomic_bool fault_injected;
  it_ep_handle_t fault_ep[2];
  double fault_t;
  itest_fault_report_t fault;
  itest_stats_t st;
  atomic_bool done;
  const char *phase;
};

/* Errors: counted for the whole run, the first ones printed. */
extern atomic_uint_fast64_t itest_errors;
void itest_error(const itest_thread_t *th, const itest_end_t *e, uint64_t seq, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
void itest_call_error(const itest_thread_t *th, const itest_end_t *e, uint64_t seq, const char *call,
                      it_status_t st);
void itest_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void itest_log(const itest_config_t *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *itest_end_name(const itest_end_t *e, char *buf, size_t n);
const char *itest_wr_name(itest_wr_kind_t k);
double itest_now(void);

/* itest_conn.c */
void itest_thread_setup(itest_thread_t *th);
void itest_thread_teardown(itest_thread_t *th);
void itest_poll_cm(itest_thread_t *th);

/* itest_dto.c */
uint64_t itest_mix(uint64_t x);
void itest_post_initial_recvs(itest_end_t *e);
void itest_run(itest_thread_t *th);
bool itest_poll_dto(itest_thread_t *th);
bool itest_pair_expects_flush(const itest_pair_t *p);
uint64_t itest_counter_init(const itest_end_t *e);
void itest_fill_read_region(itest_end_t *e);

/* itest_fault.c */
void itest_fault_step(itest_thread_t *th, double now);
itest_end_t *itest_fault_holder(itest_thread_t *th);
bool itest_fault_pending(const itest_thread_t *th);
bool itest_fault_error_ok(const itest_thread_t *th, const itest_end_t *e);

#endif
