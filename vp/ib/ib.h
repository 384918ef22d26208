/*
 * vp/ib: the rdma-core provider.  An adapter from RNIC-PI to libibverbs
 * and librdmacm, so that every RDMA device Linux drives (InfiniBand HCAs,
 * RoCE NICs, iWARP RNICs, and the kernel's rxe and siw) is an IT-API
 * interface.  Objects, locks and the functions its files share.
 *
 * Files, by role:
 *   ib_dev.c       devices (discovery, addresses, capability record,
 *                  removal), opening and closing one, protection domains
 *   ib_progress.c  the progress thread: upcalls, the completion channel,
 *                  asynchronous and rdma_cm events, the sweep
 *   ib_mem.c       memory regions
 *   ib_cq.c        completion queues: the verbs CQ drained into an RNIC-PI ring
 *   ib_qp.c        queue pairs: creation, state, modify, reset, destruction
 *   ib_post.c      posting work requests (send, receive, SRQ receive)
 *   ib_comp.c      completions translated through the shadows, flushes
 *   ib_srq.c       shared receive queues
 *   ib_mw.c        memory windows (IB type 2 narrow, type 1 wide)
 *   ib_ud.c        address handles and what datagrams add to the data path
 *   ib_cm.c        connection management through rdma_cm, and UD service
 *                  resolution (IB SIDR through rdma_cm's UDP port space):
 *                  listen, connect, accept, reject, disconnect, deadlines
 *   ib_cm_event.c  rdma_cm's events, handled on the progress thread
 *
 * What the adapter adds to verbs, and why (doc/provider-ib.md):
 *   - each work request is shadowed in its queue pair (its caller's wr_id
 *     and opcode): verbs leaves an error completion's opcode undefined, and
 *     some devices (siw) never complete a request posted to an errored
 *     queue pair, so the adapter completes it flushed itself;
 *   - a CQ's completions are moved into a ring that never drops one: verbs
 *     treats a CQ overrun as fatal, RNIC-PI reports it and loses nothing;
 *   - the queue pair's state is tracked here: siw's ibv_query_qp always
 *     says RESET.
 *
 * Locks, always taken in this order:
 *   dev->lock (CM: connections, listeners, connect deadlines; the sweep list)
 *   -> cq->poll_lock (draining one verbs CQ)
 *   -> qp->sq_lock, qp->rq_lock, srq->lock (one queue's shadow)
 *   -> dev->qp_lock (the table from QP number to queue pair; a leaf)
 *   -> the CQ ring's own lock, dev->ev_lock (leaves).
 * Upcalls are never made with any of them held.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef IB_H
#define IB_H

#include <glib.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rnicpi.h"
#include "rnicpi_util.h"

#define IB_LOG "itapi-vp-ib"

/* Entries of a verbs CQ at least, on a device that cannot resize one. */
#define IB_CQ_FIXED_MIN 16384u
/* Private data of an iWARP connect, accept or reject: 255, the most a
 * u8 length holds, less the RFC 6581 IRD/ORD word MPA v2 puts in front. */
#define IB_IWARP_PDATA_MAX 251u

/* The vendor id siw reports in ibv_query_device ("bmt", SIW_VENDOR_ID in
 * the kernel's siw.h): the device whose quirks no probe can show; and the
 * longest payload its transmit path copies into a frame by itself
 * (siw_qp_tx.c, siw_try_1seg). */
#define IB_SIW_VENDOR_ID 0x626d74u
#define IB_SIW_SHORT_TX 32u

/* Local segments of an RDMA Read offered where the device takes fewer
 * (siw: max_sge_rd 1, an iWARP Read Response landing in one tagged sink,
 * RFC 5040 6.1): the Read goes out as one verbs Read per run of contiguous
 * segments (ib_post.c, read_pieces), as vp/iwarp does; and the verbs
 * requests one such Read may take at most, each run cut once more at a
 * page for siw's short copy. */
#define IB_READ_SPLIT_SGE 16u
#define IB_READ_PIECES_MAX (2u * IB_READ_SPLIT_SGE)

/* A verbs wr_id names the shadow entry of a work request: the serial of
 * its queue pair (or SRQ) incarnation, the kind of queue and the entry's
 * sequence number.  A completion whose serial is not its queue pair's
 * current one belongs to a queue pair destroyed or reset since, and is
 * dropped: the adapter already completed that request. */
#define IB_WRID_SEQ_BITS 38
#define IB_WRID_SEQ_MASK ((UINT64_C(1) << IB_WRID_SEQ_BITS) - 1)
enum { IB_KIND_SEND = 0, IB_KIND_RECV = 1, IB_KIND_SRQ = 2 };

static inline uint64_t
ib_wrid(uint32_t serial, unsigned kind, uint64_t seq)
{
  return ((uint64_t) (serial & 0xffffff) << 40) | ((uint64_t) kind << IB_WRID_SEQ_BITS) |
         (seq & IB_WRID_SEQ_MASK);
}
#define IB_WRID_SERIAL(w) ((uint32_t) ((w) >> 40))
#define IB_WRID_KIND(w) ((unsigned) (((w) >> IB_WRID_SEQ_BITS) & 3))
#define IB_WRID_SEQ(w) ((w) & IB_WRID_SEQ_MASK)

/* UD service resolution through rdma_cm (ib_cm.c, ib_cm_event.c): IB
 * SIDR_REQ private data (216 bytes) less rdma_cm's 36-byte header, and
 * SIDR_REP's (136), each less the adapter's own header (the exact length,
 * which the IB CM pads away, and in the reply the status and Q_Key rdma_cm
 * cannot carry over IP). */
#define IB_UD_REQ_HDR 5
#define IB_UD_PDATA_REQ (180 - IB_UD_REQ_HDR)
#define IB_UD_REP_HDR 12
#define IB_UD_PDATA_REP (136 - IB_UD_REP_HDR)

/* How long (ms) a CQ watched for its unsignaled requests stays unarmed
 * after the progress thread last saw its consumer poll it (ib_comp_events). */
#define IB_REARM_IDLE_MS 50
/* How soon the progress thread tries again to watch the completion
 * channel when epoll refused to take it back (ib_comp_watch_locked). */
#define IB_COMP_RETRY_MS 10

/* Knobs, read once from the environment (ib_dev.c). */
typedef struct ib_config {
  int resolve_ms;       /* ITAPI_IB_RESOLVE_MS: address and route resolution */
  int sweep_ms;         /* ITAPI_IB_FLUSH_MS: wait for a device's own flush */
  int cq_min;           /* ITAPI_IB_CQ_MIN: entries of the smallest verbs CQ */
} ib_config_t;
extern ib_config_t ib_config;

/* Bumped, under a device's mr_lock held for writing, at every change of
 * any device's regions (their table, a region's rights) and when a device
 * is freed: a copy of a region taken at one value is still the region
 * while the value stays (map_sges' memo, ib_post.c).  Atomic. */
extern guint64 ib_mr_gen;

/* One more change of the regions (ib_mr_gen). */
static inline void
ib_mr_changed(void)
{
  __atomic_fetch_add(&ib_mr_gen, 1, __ATOMIC_RELEASE);
}

typedef struct ib_dev ib_dev_t;

/* What an rdma_cm identifier's context points to: a listener's or a
 * connection's tag. */
enum { IB_CTX_LISTEN = 1, IB_CTX_CONN = 2 };
typedef struct ib_cm_ctx {
  int kind;
  void *obj;
} ib_cm_ctx_t;
typedef struct ib_cq ib_cq_t;
typedef struct ib_qp ib_qp_t;
typedef struct ib_srq ib_srq_t;
typedef struct ib_conn ib_conn_t;

/* An open device: one verbs context (rdma_cm's own, so that connection
 * identifiers bound to the device's address share its PDs and QPs), its
 * event channels and the progress thread that drives them. */
struct ib_dev {
  rnicpi_dev_t base;
  rnicpi_upcalls_t up;
  struct ibv_context **ctx_list; /* rdma_get_devices(), freed at close */
  struct ibv_context *ctx;
  char name[64];
  rnicpi_caps_t caps;
  gboolean iwarp;                /* transport: iWARP (else IB or RoCE) */
  gboolean cq_fixed;             /* its CQs cannot be resized (siw) */
  gboolean short_split;          /* siw: no short payload across a page (ib_post.c) */
  uint32_t read_sge_dev;         /* sink segments of one verbs Read: more are split (ib_post.c) */
  uint32_t verbs_max_qp_wr;      /* the device's own limit on a verbs queue */
  uint32_t inline_max;           /* inline bytes a queue pair takes (probe_inline) */
  gboolean quirked;              /* ib_quirk_open() was called for ctx */
  uint8_t port;                  /* the port that holds the address */
  struct ibv_comp_channel *comp;
  int comp_sleepers;             /* application threads asleep on comp (ib_cq_wait_begin),
                                  * under lock: while any, it is out of epfd and they
                                  * take its events */
  gboolean comp_out;             /* comp is out of epfd (lock) */
  gboolean comp_warned;          /* putting comp back failed, said once (lock) */
  struct rdma_event_channel *cm;
  int epfd, wakefd;
  GThread *thread;
  gboolean stop;
  GMutex lock;
  GHashTable *conns;             /* conn_id -> ib_conn_t: requests and connections */
  uint64_t next_conn_id;
  GQueue timed;                  /* ib_conn_t connects with a deadline (ib_cm_expire) */
  gint64 timed_next;             /* the nearest deadline in timed; G_MAXINT64: none */
  GList *sweep;                  /* ib_qp_t in ERROR with requests still outstanding */
  GList *rearm;                  /* ib_cq_t watched for unsignaled requests, left unarmed
                                  * while their consumer polls (ib_comp_events) */
  gint64 rearm_at;               /* when to look at them again; G_MAXINT64: none */
  GMutex ev_lock;                /* a leaf: guards events alone */
  GQueue events;                 /* ib_event_t to deliver from the progress thread */
  rnicpi_spin_t qp_lock;
  GHashTable *qps;               /* qp_num -> ib_qp_t */
  uint32_t next_serial;
  gint inflight;                 /* cq notifications queued (rnicpi_notify_quiesce) */
  gint sweep_check;              /* a queue pair flagged flush_due: look for it */
  GRWLock mr_lock;
  GHashTable *mrs;               /* lkey -> ib_mr_t: local segments are checked */
  rnicpi_spin_t mw_lock;         /* a leaf: guards mws and every window's state */
  GHashTable *mws;               /* current window key -> ib_mw_t */
  uint8_t sgid4, sgid6;          /* GID indexes of the port's IPv4 and IPv6 addresses */
  gboolean have_sgid4, have_sgid6;
  gboolean roce;                 /* Ethernet link layer: every address handle has a GRH */
  gint removed;                  /* the device is gone (ib_dev_removed) */
  gint said_loopback;            /* a loopback destination taken to its address was logged */
};

typedef struct ib_pd {
  rnicpi_pd_t base;
  struct ibv_pd *pd;
} ib_pd_t;

typedef struct ib_mr {
  rnicpi_mr_t base;
  struct ibv_mr *mr;
  uint64_t addr, length;         /* the bytes it covers, in our address space */
  uint64_t iova;                 /* the address of its first byte for the device */
  uint32_t access;               /* RNICPI_ACCESS_* it has (local write with remote write) */
  uint32_t asked;                /* RNICPI_ACCESS_* the consumer asked for: what a local
                                  * scatter or gather is checked against (map_sges) */
} ib_mr_t;

/* A memory window: RNIC-PI narrow is IB type 2 (bound to the queue pair
 * of its bind), wide is IB type 1 (any queue pair of its domain).  Its
 * key and state are those of the last request posted for it; the device
 * gets there in queue order. */
typedef struct ib_mw {
  rnicpi_mw_t base;
  struct ibv_mw *mw;
  uint32_t key;                  /* current key (dev->mw_lock) */
  uint32_t prev_key;             /* the key before the last bind posted (dev->mw_lock) */
  gboolean bound;                /* a bind posted, no invalidation since (dev->mw_lock) */
  int queued;                    /* its binds and invalidations not yet completed */
  struct ib_qp *bind_qp;         /* narrow: the queue pair of its last bind (dev->mw_lock) */
  struct ib_qp *prev_bind_qp;    /* the one before the last bind posted (dev->mw_lock) */
} ib_mw_t;

typedef struct ib_ah {
  rnicpi_ah_t base;
  struct ibv_ah *ah;
} ib_ah_t;

/* A CQ: the verbs CQ, and the ring its completions are translated into. */
struct ib_cq {
  rnicpi_cq_t base;
  ib_dev_t *dev;
  struct ibv_cq *cq;
  uint32_t vsize;                /* entries of the verbs CQ */
  uint32_t users;                /* work requests the queue pairs on it may hold */
  uint32_t promised;             /* of them, the consumer's (RNIC-PI requests) */
  rnicpi_spin_t poll_lock;
  ib_qp_t *last_qp;              /* the queue pair of the last completion drained
                                  * (poll_lock): most CQs serve one, and the table's
                                  * lock and hash cost more than the rest of a poll */
  uint32_t last_num;             /* its number then (poll_lock) */
  rnicpi_cq_ring_t ring;
  gboolean dead;
  gboolean watch;                /* its queue pairs may hold more than its depth: the
                                  * progress thread drains it at each completion, so
                                  * that going past the depth is reported in time */
  gboolean watch_unsignaled;     /* an unsignaled request was posted to a queue pair on
                                  * it: watched for good, so that its failure (an error
                                  * completion, with no asynchronous event from rxe or
                                  * siw) ends the connection without anyone polling */
  guint polls;                   /* bumped by each ib_poll_cq (relaxed): the consumer
                                  * polls, and finds such a failure itself */
  guint polls_seen;              /* polls when the progress thread last looked (dev->lock) */
  gboolean rearm_due;            /* on dev->rearm: armed again once nobody polls (dev->lock) */
};

/* One shadowed work request. */
typedef struct ib_shadow {
  uint64_t wr_id;                /* the caller's */
  uint8_t opcode;                /* rnicpi_wc_opcode_t */
  uint8_t signaled;
  uint8_t done;                  /* SRQ slots: free */
  uint8_t given;                 /* posted to the device (not kept back in ERROR) */
  uint8_t fail;                  /* a fault found at post (rnicpi_wc_status_t; 0: none):
                                  * the request completes with it in its turn */
  uint8_t fail_cause;            /* and the fault's rnicpi_async_cause_t (the cause of
                                  * its completion's error once done) */
  uint8_t status;                /* send queue: its completion's status once done */
  uint8_t nsge;                  /* UD receives: entries in the queue pair's rq_sge */
  uint8_t pieces;                /* send queue: verbs requests it took in the device's
                                  * queue (a split Read, a narrow bind), until retired */
  uint32_t len;                  /* bytes the request moves */
  uint64_t rkey;                 /* a bind's or an invalidation's key */
  ib_mw_t *mw;                   /* the window a bind or an invalidation is about */
} ib_shadow_t;

/* A ring of shadows for a queue whose requests complete in order. */
typedef struct ib_wq {
  ib_shadow_t *e;
  uint32_t size;                 /* a power of two */
  uint64_t head, tail;           /* sequence numbers: oldest outstanding, next */
  uint64_t seen;                 /* one past the latest the device completed */
} ib_wq_t;

/* The shadow of sequence number @seq in @q. */
static inline ib_shadow_t *
wq_at(ib_wq_t *q, uint64_t seq)
{
  return &q->e[seq & (q->size - 1)];
}

/* IB_QP_ACCEPTING: iWARP's passive side between rdma_accept and its
 * ESTABLISHED event (the kernel's QP is in RTS already). */
typedef enum { IB_QP_IDLE, IB_QP_CONNECTING, IB_QP_ACCEPTING, IB_QP_RTS, IB_QP_ERROR } ib_qp_state_t;

struct ib_qp {
  rnicpi_qp_t base;
  ib_dev_t *dev;
  struct ibv_qp *qp;
  struct ibv_qp_init_attr init_attr; /* what it was created with (iWARP resets renew it) */
  ib_cq_t *scq, *rcq;
  ib_srq_t *srq;
  rnicpi_qp_type_t type;
  uint32_t serial;
  volatile ib_qp_state_t state;  /* written under sq_lock and rq_lock both */
  uint32_t access;               /* RNICPI_ACCESS_REMOTE_* */
  uint32_t ird, ord;
  uint32_t max_send_sge, max_recv_sge;
  /* The consumer's own limits per operation (max_send_sge above is their
   * largest, what the verbs queue pair was created with: the driver may
   * round it up, so a post is checked against these, not the device). */
  uint32_t lim_send_sge, lim_write_sge, lim_read_sge;
  uint32_t max_inline;           /* sends this short are posted inline */
  uint32_t qkey;
  struct ibv_sge *rq_sge;        /* UD: each receive's scatter list, to find its GRH */
  rnicpi_spin_t sq_lock, rq_lock;
  ib_wq_t sq, rq;
  uint32_t sq_max, rq_max;       /* depths asked for: the shadows hold no more */
  uint32_t sq_need;              /* verbs send requests it may hold (its room in the CQ) */
  uint32_t sq_verbs;             /* of which taken by the shadows not yet retired (sq_lock) */
  gboolean flush_due;            /* in ERROR with work the sweep must finish */
  gboolean break_due;            /* an error of its own: break the connection */
  gboolean held;                 /* a fault found at post waits for its turn: later
                                  * sends stay in the shadow (sq_lock) */
  rnicpi_async_cause_t err_cause; /* the first error completion's cause, to raise */
  gboolean fatal_due;            /* the device raised QP_FATAL: raised at the sweep, unless
                                  * an error completion gave the cause (dev->lock) */
  gboolean torn_down;            /* the consumer ended it (qp_to_error, disconnect, destroy):
                                  * a local QP error after that is a transfer it cut off
                                  * (atomic; cleared by a reset) */
  ib_conn_t *conn;               /* its rdma_cm identifier (dev->lock) */
  gboolean sweeping;             /* in dev->sweep */
  gboolean dying;                /* being destroyed: never swept again (dev->lock) */
  gint64 sweep_at;               /* when the sweep may complete what is left */
};

/* A shared receive queue: its receives complete out of order (on whichever
 * queue pair a message arrives), so its shadows are slots. */
struct ib_srq {
  rnicpi_srq_t base;
  ib_dev_t *dev;
  struct ibv_srq *srq;
  uint32_t serial;
  rnicpi_spin_t lock;
  ib_shadow_t *slot;
  uint32_t nslots, *free, nfree;
  uint32_t posted;
  uint32_t cap;                  /* receives it may hold (0: nslots) */
  uint32_t max_sge;
};

typedef struct ib_listen {
  rnicpi_listen_t base;
  ib_dev_t *dev;
  /* One identifier per address of the device (rdma_cm listens on one
   * address, or on every device at the wildcard), in its TCP space and,
   * on UD devices, in its UDP space too (UD service requests). */
  struct rdma_cm_id *ids[2 * G_N_ELEMENTS(((rnicpi_caps_t *) 0)->addrs)];
  uint32_t nids;
  ib_cm_ctx_t tag;
  uint32_t port;
  gboolean dead;                 /* unlisten began (dev->lock) */
} ib_listen_t;

typedef enum {
  IB_CONN_RESOLVING,   /* active: address, then route */
  IB_CONN_CONNECTING,  /* active: rdma_connect sent */
  IB_CONN_REPLIED,     /* active, three-way: the reply waits for accept or reject */
  IB_CONN_REQUEST,     /* passive: the request waits for accept or reject */
  IB_CONN_ACCEPTING,   /* passive: rdma_accept sent */
  IB_CONN_UP,          /* established */
  IB_CONN_DOWN,        /* disconnected, broken, refused */
  IB_CONN_UD_ASKING,   /* UD service request: resolving, then the SIDR_REQ sent */
  IB_CONN_UD_REQUEST,  /* a UD service request waits for the listener's answer */
} ib_conn_state_t;

/* One rdma_cm identifier: an active connection, a pending request or an
 * accepted one.  Its id's context points to it; it is freed only after
 * rdma_destroy_id() returned, which waits for the progress thread to have
 * acknowledged every event of the id. */
struct ib_conn {
  ib_cm_ctx_t tag;
  uint64_t conn_id;
  ib_dev_t *dev;
  struct rdma_cm_id *id;
  ib_conn_state_t state;
  ib_qp_t *qp;                   /* NULL for a request not yet accepted */
  ib_listen_t *listener;         /* a request's listener */
  uint64_t listen_ctx;
  uint32_t req_ird, req_ord;     /* a request's: its requester's IRD and ORD */
  rnicpi_conn_param_t param;     /* connect: what to send once the route is known */
  uint8_t pdata[RNICPI_MAX_PDATA];
  gboolean three_way;
  uint64_t ud_ctx;               /* a UD service request's context (IB_CONN_UD_ASKING) */
  rnicpi_addr_t peer;            /* where a UD service request went */
  gboolean closing;              /* this side disconnected: DISCONNECTED, not BROKEN */
  gboolean dead;                 /* its id is being destroyed: ignore its events */
  gint64 deadline;               /* connect: ends unanswered then (timeout_us) */
  GList timed_link;              /* in dev->timed while it has a deadline (data: it) */
  gboolean withdrawn;            /* iWARP: ended at its deadline, its id kept until
                                  * the connect's answer (ib_cm_expire) */
};

/* An upcall to make from the progress thread, outside every lock. */
typedef struct ib_event {
  enum { IB_EV_CM, IB_EV_ASYNC, IB_EV_NOTIFY, IB_EV_REMOVED } kind;
  rnicpi_cm_event_t cm;
  rnicpi_async_event_t async;
  rnicpi_notify_t notify;        /* counted in the device's inflight until delivered */
} ib_event_t;

static inline ib_dev_t *to_ib_dev(rnicpi_dev_t *d) { return (ib_dev_t *) d; }
static inline ib_pd_t *to_ib_pd(rnicpi_pd_t *p) { return (ib_pd_t *) p; }
static inline ib_mr_t *to_ib_mr(rnicpi_mr_t *m) { return (ib_mr_t *) m; }
static inline ib_cq_t *to_ib_cq(rnicpi_cq_t *c) { return (ib_cq_t *) c; }
static inline ib_qp_t *to_ib_qp(rnicpi_qp_t *q) { return (ib_qp_t *) q; }
static inline ib_srq_t *to_ib_srq(rnicpi_srq_t *s) { return (ib_srq_t *) s; }
static inline ib_listen_t *to_ib_listen(rnicpi_listen_t *l) { return (ib_listen_t *) l; }
static inline ib_mw_t *to_ib_mw(rnicpi_mw_t *m) { return (ib_mw_t *) m; }
static inline ib_ah_t *to_ib_ah(rnicpi_ah_t *a) { return (ib_ah_t *) a; }

/* ib_dev.c */
rnicpi_status_t ib_status_of_errno(int err);
void ib_dev_removed(ib_dev_t *dev);
gboolean ib_dev_unlisted(ib_dev_t *dev);
ib_qp_t *ib_qp_lookup(ib_dev_t *dev, uint32_t qp_num);
uint32_t ib_dev_serial(ib_dev_t *dev);
/* The rights a region gets: verbs grants local write with remote write
 * and atomics. */
uint32_t ib_access_granted(uint32_t access);
int ib_access_to_verbs(uint32_t access);
int ib_qp_access_to_verbs(uint32_t access);

/* ib_progress.c */
void ib_dev_wake(ib_dev_t *dev);
int ib_dev_watch(ib_dev_t *dev, int fd, uint32_t tag);
void ib_comp_events(ib_dev_t *dev);
gboolean ib_comp_watch_locked(ib_dev_t *dev);
void ib_dev_queue_cm(ib_dev_t *dev, const rnicpi_cm_event_t *ev);
void ib_dev_queue_async(ib_dev_t *dev, const rnicpi_async_event_t *ev);
void ib_dev_queue_notify(ib_dev_t *dev, const rnicpi_notify_t *n);
void ib_sweep_add(ib_qp_t *qp);
void ib_sweep_add_locked(ib_qp_t *qp);
void ib_dev_sweep_soon(ib_dev_t *dev);
/* What the progress thread's epoll reports, by the tag ib_open gave each
 * descriptor. */
enum { POLL_WAKE = 1, POLL_CM, POLL_COMP, POLL_ASYNC };
/* The progress thread of the ib_dev_t @data: ib_open starts it, and it
 * returns once dev->stop is set and the thread woken (ib_close). */
gpointer progress_thread(gpointer data);
/* The open devices, under open_lock: ib_open adds one, ib_close takes it
 * out, and the progress threads find a verbs context's others there. */
extern GMutex open_lock;
extern GList *open_devs;

/* ib_quirk.c: siw's mmap key SIW_INVAL_UOBJ_KEY covered while a context
 * is open (once per context and process; each open has its close). */
void ib_quirk_open(struct ibv_context *ctx, uint32_t vendor_id, const char *name);
void ib_quirk_close(struct ibv_context *ctx);

/* ib_cq.c */
rnicpi_status_t ib_cq_create(rnicpi_dev_t *d, uint32_t depth, uint64_t al_ctx, rnicpi_cq_t **out);
rnicpi_status_t ib_cq_destroy(rnicpi_cq_t *c);
int ib_poll_cq(rnicpi_cq_t *c, rnicpi_wc_t *wc, int n);
uint32_t ib_cq_count(rnicpi_cq_t *c);
rnicpi_status_t ib_arm_cq(rnicpi_cq_t *c);
rnicpi_status_t ib_cq_wait_begin(rnicpi_cq_t *c, struct pollfd *fds, uint32_t *nfds);
void ib_cq_wait_end(rnicpi_cq_t *c, const struct pollfd *fds, uint32_t nfds);
int ib_cq_drain(ib_cq_t *cq, rnicpi_notify_batch_t *b);
void ib_cq_push(ib_cq_t *cq, const rnicpi_wc_t *wc, rnicpi_notify_batch_t *b);
void ib_cq_defer(ib_dev_t *dev, rnicpi_notify_batch_t *b);
void ib_cq_forget_qp(ib_cq_t *cq, ib_qp_t *qp);

/* Where the completions drained from a CQ go: the poller's own array
 * while it has room (a poll that found the ring empty takes them
 * straight from the device), then the CQ's ring. */
typedef struct {
  ib_cq_t *cq;
  rnicpi_notify_batch_t *b;
  rnicpi_wc_t *wc;
  int room;
  int got;
} ib_sink_t;

static inline void
ib_sink_put(ib_sink_t *s, const rnicpi_wc_t *wc)
{
  if (s->got < s->room)
    s->wc[s->got++] = *wc;
  else
    ib_cq_push(s->cq, wc, s->b);
}

/* Where to write the next completion for @s, to be handed over by
 * ib_sink_commit: the poller's own entry while it has room (no copy),
 * else @spare. */
static inline rnicpi_wc_t *
ib_sink_slot(ib_sink_t *s, rnicpi_wc_t *spare)
{
  return s->got < s->room ? &s->wc[s->got] : spare;
}

/* Hand over @wc, written where ib_sink_slot said. */
static inline void
ib_sink_commit(ib_sink_t *s, rnicpi_wc_t *wc, const rnicpi_wc_t *spare)
{
  if (wc != spare)
    s->got++;
  else
    ib_cq_push(s->cq, wc, s->b);
}

/* ib_qp.c */
void ib_qp_set_error(ib_qp_t *qp);
void ib_qp_torn_down(ib_qp_t *qp);
void ib_qp_set_state(ib_qp_t *qp, ib_qp_state_t s);
rnicpi_status_t ib_qp_modify_verbs(ib_qp_t *qp, enum ibv_qp_state to);
/* @qp failed with @cause, or was flushed (UNSPECIFIED): ERROR, and the
 * sweep completes what the device leaves; a first fault of its own breaks
 * the connection. */
void qp_fault(ib_qp_t *qp, rnicpi_async_cause_t cause);

/* ib_comp.c */
void ib_qp_complete(ib_qp_t *qp, const struct ibv_wc *vwc, ib_sink_t *out);
void ib_qp_received(rnicpi_wc_t *wc, const struct ibv_wc *v);
void ib_qp_flush_rest(ib_qp_t *qp, rnicpi_notify_batch_t *b);
void ib_qp_fatal_settle(ib_qp_t *qp);
gboolean ib_qp_outstanding(ib_qp_t *qp);
gboolean ib_srq_complete(ib_qp_t *qp, const struct ibv_wc *vwc, rnicpi_wc_t *out);

/* ib_post.c: a receive posted to an SRQ (ib_srq_ops' post_srq_recv). */
rnicpi_status_t ib_post_srq_recv(rnicpi_srq_t *s, const rnicpi_recv_wr_t *wr);

/* ib_mw.c */
rnicpi_status_t ib_mw_check(ib_qp_t *qp, const rnicpi_send_wr_t *wr);
int ib_mw_post(ib_qp_t *qp, const rnicpi_send_wr_t *wr, struct ibv_send_wr *v, ib_shadow_t *s);
void ib_mw_retire(ib_dev_t *dev, ib_shadow_t *s, rnicpi_wc_status_t st);
void ib_mw_invalidated(ib_dev_t *dev, uint32_t key);
/* @qp's verbs queue pair is about to be destroyed (its requests are all
 * complete): the narrow windows last bound through it get a fresh verbs
 * window (ib_mw.c). */
void ib_mw_qp_gone(ib_qp_t *qp);
uint64_t ib_mw_caps(const struct ibv_device_attr_ex *ax);

/* ib_ud.c */
rnicpi_status_t ib_ud_prepare(ib_qp_t *qp, const rnicpi_send_wr_t *wr, uint32_t len,
                              struct ibv_send_wr *v);
void ib_ud_recv_complete(ib_qp_t *qp, const ib_shadow_t *s, uint64_t seq,
                         const struct ibv_wc *v, rnicpi_wc_t *out);
rnicpi_status_t ib_ud_qp_up(ib_qp_t *qp);
void ib_ud_find_gids(ib_dev_t *dev);

/* ib_cm.c */
void ib_cm_qp_gone(ib_qp_t *qp);
void ib_cm_qp_error(ib_qp_t *qp);
void ib_cm_close_dev(ib_dev_t *dev);
void ib_cm_expire(ib_dev_t *dev);
/* A new connection in the table (dev->lock held). */
ib_conn_t *conn_new_locked(ib_dev_t *dev);
/* Take @c out of the table and off its queue pair (dev->lock held); FALSE if taken already. */
gboolean conn_take_locked(ib_conn_t *c);
/* Destroy a taken connection's identifier and free it, with no lock held. */
void conn_free(ib_conn_t *c);
/* The queue pair leaves the connection: ERROR in verbs and here. */
void qp_down(ib_qp_t *qp);
/* Active side, the route known: prepare the QP and send the request; an errno. */
int active_connect(ib_conn_t *c);
/* Active side, IB, the reply come: RTR, RTS and the RTU; an errno. */
int active_establish(ib_conn_t *c);

/* ib_cm_event.c */
void ib_cm_handle(ib_dev_t *dev, struct rdma_cm_event *e);
gboolean ib_cm_break_locked(ib_qp_t *qp, rnicpi_cm_event_t *ev);
/* What handling an event decided under dev->lock, done once the lock is let go. */
typedef struct {
  gboolean have;
  rnicpi_cm_event_t ev;
  ib_conn_t *destroy;     /* a connection taken, to destroy after the ack */
  ib_conn_t *reject;      /* a request to refuse after the ack (its listener is gone) */
} ib_cm_out_t;
/* @ev zeroed, then of @type for the queue pair of @qp_ctx. */
void cm_ev_init(rnicpi_cm_event_t *ev, rnicpi_cm_event_type_t type, uint64_t qp_ctx);
/* Refuse the request of @id as no listener's: a vp/ib requester reports UNREACHABLE. */
void reject_no_listener(struct rdma_cm_id *id);
/* @c's queue pair leaves the connection, @o getting its event @type (dev->lock held). */
void fail_active(ib_conn_t *c, rnicpi_cm_event_type_t type, rnicpi_cm_reason_t why,
                 const struct rdma_cm_event *e, ib_cm_out_t *o);
/* The mark in front of the adapter's header in a UD service request. */
extern const uint8_t ud_req_mark[4];
/* Answer a UD service request's identifier, with no lock held; an errno. */
int ud_answer(struct rdma_cm_id *id, rnicpi_ud_svc_status_t status, uint32_t qpn, uint32_t qkey,
              const void *pdata, uint32_t len);
/* The answer (@e; NULL: none) to our UD service request @c into @o (dev->lock held). */
void ud_reply_event(ib_conn_t *c, struct rdma_cm_event *e, ib_cm_out_t *o);

/* The provider object (ib_dev.c) and its tables. */
extern const rnicpi_provider_t RNICPI_PROVIDER_SELF(ib);
extern const rnicpi_device_ops_t ib_device_ops;
extern const rnicpi_data_ops_t ib_data_ops;
extern const rnicpi_mem_ops_t ib_mem_ops;
extern const rnicpi_queue_ops_t ib_queue_ops;
extern const rnicpi_cm_ops_t ib_cm_ops;
extern const rnicpi_srq_ops_t ib_srq_ops;
extern const rnicpi_mw_ops_t ib_mw_ops;
extern const rnicpi_ud_ops_t ib_ud_ops;

#endif /* IB_H */
