/*
 * vp/iwarp: a software iWARP RNIC (RDMAP/DDP/MPA) over kernel TCP sockets.
 * Objects, locks and the functions shared by its files.
 *
 * Locks, always taken in this order:
 *   dev->lock (CM: listeners, pending requests)
 *   -> qp->lock (one connection: its queues, socket, rx and tx state)
 *   -> dev->mr_lock (read: placing into or gathering from a region)
 *   -> srq->lock, cq->lock, dev->ev_lock (leaves).
 * Upcalls are never made with any of them held: completions mark CQs to
 * notify in an iw_work_t delivered after unlocking; CM and async events go
 * to the device's event queue, delivered by its progress thread.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef IW_H
#define IW_H

#include <glib.h>
#include <sys/uio.h>

#include "rnicpi.h"
#include "rnicpi_util.h"
#include "iw_ddp.h"
#include "iw_mpa.h"
#include "iw_rdmap.h"

#define IW_LOG "itapi-vp-iwarp"

/* Largest FPDU this RNIC sends, header, pad and CRC included.  RFC 5044
 * 8 bounds it by the MULPDU of the connection's effective MSS, so that an
 * FPDU fits one TCP segment: iw_qp_mulpdu() reads TCP_MAXSEG (about 1448
 * on Ethernet, up to 65483 over loopback) and clamps it between these two
 * (and ITAPI_IWARP_FPDU_MAX): the MULPDU bounds of RFC 5044 3, 128 and
 * 64768 bytes of ULPDU, plus the length field and the CRC.  room_for()
 * keeps every ULPDU within fpdu_max - 6. */
#define IW_FPDU_MIN (128 + 6)
#define IW_FPDU_MAX (64768 + 6)
/* Linux's TCP_MAXSEG is the current segment size, which starts at half
 * the peer's window while that window is small (about 32 KiB over
 * loopback) and grows with it: the sender reads it again after every
 * IW_MSS_PROBE_BYTES of payload sent in messages of several FPDUs, until
 * its FPDUs reach the cap (IW_FPDU_MAX, ITAPI_IWARP_FPDU_MAX). */
#define IW_MSS_PROBE_BYTES (1u << 20)
/* Receive staging: one recv() takes the headers and trailers of many small
 * FPDUs (and the trailer plus next header after a payload placed in
 * place), instead of one recv() per field. */
#define IW_RX_STAGE 512
/* While a post waits for the QP's lock, one call of the transmit or
 * receive engine moves at most about this many bytes before it lets the
 * lock go (the socket stays ready: the progress thread, or the poller that
 * owns it, comes back for the rest): a post never waits for a long
 * transfer to end, only for one burst.  Nobody waiting, it goes on while
 * the socket takes or holds bytes (a handoff per burst would cost a
 * stream of 64 KiB sends two thirds of its rate). */
#define IW_IO_BURST (1u << 20)
/* Transmit batch: FPDUs (and iovecs) handed to one sendmsg(). */
#define IW_TX_FPDUS 16
#define IW_TX_IOV 64
/* Headers, trailers and payloads of at most IW_TX_INLINE bytes are written
 * one after the other into the batch's buffer of IW_TX_LIN bytes, so that
 * small FPDUs go out as one iovec (each iovec costs sendmsg() about 50 ns
 * over loopback, more than copying 512 bytes); larger payloads go from
 * the registered memory. */
#define IW_TX_INLINE 512
#define IW_TX_LIN 8192
#define IW_TX_FPDU_LIN                                                                \
  (IW_FPDU_LEN_BYTES + sizeof(iw_ddp_untagged_t) + IW_RDMAP_HDR_MAX + IW_TX_INLINE + 3 + \
   IW_FPDU_CRC_BYTES)
/* A QP whose CQ nobody polled (or slept on, cq_wait_begin) for this long
 * goes back to the progress thread (its socket rejoins the epoll set). */
#define IW_POLL_LEASE_US 2000
/* Two polls of an empty CQ this close together mark a busy poller. */
#define IW_POLL_SPIN_US 200
/* At most this many QPs are driven by one poll of their CQ. */
#define IW_POLL_QPS_MAX 8
/* Private data a consumer may put in a CM message by default: 256 bytes on
 * the wire (what siw and cxgb4 accept) minus the RFC 6581 control word. */
#define IW_PDATA_INTEROP 252
#define IW_MAX_IRD 64
#define IW_MAX_ORD 64
#define IW_MAX_SGE 16
#define IW_CONNECT_TIMEOUT_US 10000000ull
/* Default transport timeout (ITAPI_IWARP_TIMEOUT_MS): a path that answers
 * nothing for this long breaks the connection (iw_sock_tune). */
#define IW_TIMEOUT_MS 30000
/* After a Terminate: how long we read and discard, waiting for the peer to close. */
#define IW_DRAIN_US 2000000ull
/* How long an orderly close waits for its close fence to come back before
 * it sends its FIN anyway (iw_disconnect). */
#define IW_FIN_FENCE_US 5000000ull
/* Connection requests one listener holds, each with a socket: reading its
 * MPA Request (ITAPI_IWARP_MPA_TIMEOUT_MS at most), or waiting for the
 * consumer's answer.  A connection accepted past it takes the place of the
 * oldest still reading, which is closed; when every one waits for the
 * consumer, it is closed at once (iw_cm_listen_io). */
#define IW_LISTEN_PENDING_MAX 1024u
/* A listener whose accept() finds the process or the system out of
 * descriptors (or memory) is left out of the epoll set this long, rather
 * than woken again at once for the connection still queued. */
#define IW_ACCEPT_PAUSE_US 100000
/* A listener reports refused connections at most this often. */
#define IW_LISTEN_REPORT_US (60 * G_USEC_PER_SEC)
/* A Terminate FPDU at its largest (RFC 5040 4.8): length, untagged DDP
 * header, control word, segment length, a copied untagged DDP header and
 * a copied Read Request header, pad, CRC. */
#define IW_TERM_ULPDU_MAX (18 + 4 + 2 + 18 + 28)
/* The longest RDMAP header after a DDP header: the RFC 7306 Atomic Request. */
#define IW_RDMAP_HDR_MAX 52
#define IW_TERM_FPDU_MAX (IW_FPDU_LEN_BYTES + IW_TERM_ULPDU_MAX + 3 + IW_FPDU_CRC_BYTES)

/* What an epoll registration points at. */
typedef enum { IW_POLL_WAKE = 1, IW_POLL_LISTEN, IW_POLL_CREQ, IW_POLL_QP } iw_poll_kind_t;
typedef struct iw_pollable { iw_poll_kind_t kind; } iw_pollable_t;

typedef struct iw_config {
  int crc;          /* ITAPI_IWARP_CRC: 1 ask for CRC, 0 only when the peer asks */
  int mpa_rev;      /* ITAPI_IWARP_MPA_REV: 2 (RFC 6581) or 1 */
  uint32_t pdata_max; /* ITAPI_IWARP_PDATA_MAX */
  int corrupt_crc;  /* ITAPI_IWARP_CORRUPT_CRC: corrupt the Nth FPDU sent (debug) */
  uint64_t mpa_timeout_us; /* ITAPI_IWARP_MPA_TIMEOUT_MS: a request must arrive within */
  int poll_progress; /* ITAPI_IWARP_POLL_PROGRESS: an empty poll drives its QPs */
  uint32_t fpdu_max; /* ITAPI_IWARP_FPDU_MAX: cap on the FPDU size (bytes) */
  int placed;        /* ITAPI_IWARP_COMPLETION: 1 "placed" (delivery fences), 0 "sent" */
  uint64_t first_fpdu_delay_us; /* ITAPI_IWARP_FIRST_FPDU_DELAY_MS: initiator's hold */
  uint32_t timeout_ms; /* ITAPI_IWARP_TIMEOUT_MS: a dead path breaks the connection (0: TCP's own) */
  int write_hold;    /* ITAPI_IWARP_WRITE_HOLD: a sleeper's small unsignaled Write waits for its next step */
} iw_config_t;

extern iw_config_t iw_config;

/* Entries per page of a device's region table (iw_dev_t.mr_pages). */
#define IW_MR_PAGE 4096u

typedef struct iw_dev {
  rnicpi_dev_t base;
  rnicpi_upcalls_t up;
  gint notifying;            /* CQ notifications queued, not delivered */
  /* Objects it holds, each kind within its max_* (rnicpi_count_take). */
  gint npd, ncq, nqp, nsrq;
  rnicpi_caps_t caps;
  iw_pollable_t wake_poll;
  GMutex lock;               /* CM state */
  GHashTable *listeners;     /* port -> iw_listen_t* */
  GHashTable *creqs;         /* conn id -> iw_creq_t* */
  GQueue timed;              /* iw_qp_t* with a deadline (ev_lock), linked in the QP */
  gint64 next_timeout_check;
  GQueue polled;             /* iw_qp_t* driven by their pollers (ev_lock), linked in the QP */
  gint lease_untold;         /* a lease began while none was held: the thread, maybe in a
                              * 100 ms epoll_wait, has not counted it (iw_qp_set_polled) */
  gint lease_nap;            /* every lease is a sleeper's (iw_cq_t.waiters): the thread
                              * sleeps 100 ms, not 1; a sleeper that wakes clears it and
                              * wakes the thread (iw_dev_poll_leases, iw_cq_wait_end) */
  uint64_t next_conn_id;
  GRWLock mr_lock;
  /* Regions by STag index (the STag's upper 24 bits), in pages of
   * IW_MR_PAGE entries allocated on first use: a lookup is two loads and a
   * compare of the whole STag (its key byte included). */
  struct iw_mr **mr_pages[(1u << 24) / IW_MR_PAGE];
  uint32_t mr_count;
  uint32_t next_mr_index;
  /* Registrations so far (mr_lock held for writing): each region's
   * iw_mr_t.gen, never repeated, so that a check by STag and generation
   * cannot mistake a new region for a freed one (iw_mr_live). */
  uint64_t mr_gen;
  int epfd, wakefd;
  GThread *thread;
  gboolean stop;
  GMutex ev_lock;
  GQueue events;             /* iw_event_t*, delivered by the progress thread */
  GPtrArray *graveyard;      /* objects freed by the progress thread */
  gint next_qpn;
  /* ITAPI_IWARP_RFC7306=1 when the device opened: its connections offer
   * the RFC 7306 extensions, atomics and immediate data
   * (IW_MPA_FLAG_RFC7306), and use them where the peer offers them too. */
  gboolean rfc7306;
} iw_dev_t;

typedef struct iw_pd {
  rnicpi_pd_t base;
  gint nobj;
} iw_pd_t;

typedef struct iw_mr {
  rnicpi_mr_t base;
  iw_pd_t *pd;
  uint8_t *addr;
  uint64_t length;
  uint64_t iova;
  uint32_t access;
  uint32_t stag;
  uint64_t gen;      /* the device's mr_gen when registered: unique per region */
  /* Fast registration (RNIC-PI 1.4, iw_mem.c).  A region of mr_reg is
   * valid from birth to deregistration; one of mr_alloc (fr) is invalid
   * (its STag answers nothing) until a FAST_REG work request executes,
   * and again once its STag is invalidated.  Every change of validity
   * draws a new gen (mr_lock held for writing), so a placement checked
   * against the old one stops (iw_mr_live). */
  gboolean fr;
  gboolean valid;
  uint32_t max_pages;    /* fr: the most pages one FAST_REG may name */
  gint queued;           /* fr: FAST_REGs posted naming it, not completed (atomic) */
  /* Memory windows (RNIC-PI 1.2, iw_mw.c).  A window's STag is an entry
   * of the same table: @mw names the window, valid while it is bound, its
   * addr, length, iova and access those of the bind.  A region counts the
   * windows bound to it in @nmw: it can be neither deregistered nor
   * invalidated while one is (mr_lock held for writing to change). */
  struct iw_mw *mw;
  uint32_t nmw;
} iw_mr_t;

/* A memory window (iw_mw.c).  Narrow only: the RDMAC verbs' window is
 * bound to the queue pair it was bound through (7.2.7), which alone may
 * reach it, use it as a Read sink or invalidate it locally. */
typedef struct iw_mw {
  rnicpi_mw_t base;
  iw_mr_t entry;             /* its STag in the region table (entry.mw points back) */
  iw_mr_t *parent;           /* the region it is bound to, or NULL (mr_lock) */
  struct iw_qp *qp;          /* the QP it was bound through, or NULL (mr_lock); compared, never
                              * followed: iw_mw_qp_gone unbinds before the QP goes */
  GList qp_link;             /* in qp->mws while bound (mr_lock held for writing) */
  gint queued;               /* binds posted naming it, not completed (atomic) */
} iw_mw_t;

typedef struct iw_cq {
  rnicpi_cq_t base;
  rnicpi_cq_ring_t ring;   /* rnicpi_util: never drops, reports overflow once */
  gint nqp;
  /* QPs completing here, which a poll that finds the ring empty drives
   * itself (receive and transmit) instead of waiting for the progress
   * thread's wake-up: a busy-polling consumer sees data one context
   * switch earlier.  qps_lock is taken before a QP's lock, only with
   * trylock on the latter (the normal order is qp->lock -> cq). */
  GMutex qps_lock;
  GPtrArray *qps;
  guint rr;                  /* where the next poll starts driving (many QPs) */
  gint64 last_poll;          /* monotonic us of the last poll_cq (atomic) */
  gint returned;             /* the last poll_cq returned completions (atomic) */
  /* Threads between cq_wait_begin and cq_wait_end (atomic): they sleep on
   * the sockets of this CQ's QPs themselves, which stay theirs (leased,
   * out of the epoll set) however long they sleep. */
  gint waiters;
} iw_cq_t;

/* CQs to notify once the locks are released. */
typedef rnicpi_notify_batch_t iw_work_t;

typedef struct iw_swqe {
  struct iw_swqe *q_next;    /* in sq, then sq_out (rnicpi_fifo_t) */
  struct iw_swqe *or_next;   /* in orq, as well, while a Read or atomic waits */
  rnicpi_send_wr_t wr;
  rnicpi_sge_t sge[IW_MAX_SGE];
  uint64_t total;
  gboolean done;             /* transmitted (send/write) or answered (read) */
  rnicpi_wc_status_t status;
  gboolean internal;         /* an RTR or fence read: completes nothing */
  gboolean fence;            /* a delivery fence (zero-length Read) */
  gboolean sent;             /* Send/Write transmitted, placement not yet confirmed */
  uint32_t req_id;           /* atomic: the Request Identifier its response names */
  /* Its untagged message (a Send, Read or atomic request, the Immediate
   * Data after a Write): the queue and MSN it went out with, which a
   * Terminate's copy of its DDP header names (RFC 5040 4.8).  MSN 0: none
   * yet (MSNs start at 1, RFC 5041 4.3). */
  uint32_t qn, msn;
  /* BIND_MW: the STag index of the region it names, read at post, so
   * that its execution finds the region in the table (or finds it gone)
   * without following a pointer to a region deregistered meanwhile. */
  uint32_t bind_index;
  /* RDMA Read: the local sink */
  uint32_t sink_stag;
  uint64_t sink_to;
  uint8_t *sink;
  uint64_t got;
  /* A scattered RDMA Read (iw_sq.c, tx_read_part): RFC 5040 6.1 gives a
   * Read Request one Data Sink STag and TO, so a Read whose sink is more
   * than one run of contiguous segments goes out as one wire Read per
   * run.  Each part is an internal entry with @parent the consumer's
   * Read; the consumer's Read has part_sge and part_off (the next run,
   * and its offset in the remote range) and parts_out (parts issued and
   * not answered).  It completes once, when its last part is answered. */
  struct iw_swqe *parent;
  uint32_t part_sge, parts_out;
  uint64_t part_off;
} iw_swqe_t;

typedef struct iw_rwqe {
  struct iw_rwqe *q_next;    /* in rq */
  uint64_t wr_id;
  uint32_t num_sge;
  uint64_t total;
  rnicpi_sge_t sge[IW_MAX_SGE];
} iw_rwqe_t;

/* A shared receive queue (iw_srq.c): receives any of its QPs takes. */
typedef struct iw_srq {
  rnicpi_srq_t base;
  iw_dev_t *dev;
  iw_pd_t *pd;
  GMutex lock;               /* a leaf: under a QP's lock in its receive pass */
  rnicpi_fifo_t rq;          /* iw_rwqe_t, posted and not taken */
  rnicpi_cache_t cache;      /* entries its QPs gave back */
  uint32_t max_wr, max_sge;
  uint32_t limit;            /* armed limit, 0 when disarmed */
  gint nqp;                  /* QPs taking from it (atomic) */
} iw_srq_t;

/* An inbound RDMA Read being answered, or an executed RFC 7306 atomic
 * whose response is due (the two are answered in the order they came). */
typedef struct iw_rresp {
  struct iw_rresp *q_next;   /* in irq */
  uint32_t sink_stag;
  uint64_t sink_to;
  uint32_t src_stag;
  uint64_t src_to;
  uint64_t src_gen;          /* Read: the source region's iw_mr_t.gen when the Request came */
  uint32_t len;
  gboolean atomic;
  gboolean rtr;              /* the RFC 6581 RTR's answer: outside the IRD */
  uint32_t req_id;           /* atomic: the request's identifier */
  uint64_t orig;             /* atomic: the target's value before it */
} iw_rresp_t;

/* Connection phases of a QP. */
typedef enum {
  IW_CS_NONE = 0,    /* no connection */
  IW_CS_TCP_CONNECT, /* active: TCP connect in progress */
  IW_CS_MPA_REP,     /* active: request sent, reading the reply */
  IW_CS_MPA_REQ,     /* passive handoff: reading the request */
  IW_CS_RTR_WAIT,    /* passive: reply sent, waiting for the RTR */
  IW_CS_HOLD,        /* active: reply taken, first FPDU held back (first_fpdu_delay_us) */
  IW_CS_RTS,         /* full operation */
  IW_CS_CLOSING,     /* our FIN is out (or due), waiting for the peer's */
  IW_CS_DRAIN,       /* broken: terminate out, reading until EOF */
  IW_CS_CLOSED,
} iw_cstate_t;

typedef enum { IW_RX_HDR, IW_RX_PAYLOAD, IW_RX_TRAILER } iw_rxphase_t;

/* Receive state of one FPDU. */
typedef struct iw_rx {
  iw_rxphase_t phase;
  /* The FPDU's length and headers: in hdr, or in the stage itself when the
   * whole FPDU came in one read (parsed in place). */
  const uint8_t *h;
  uint8_t hdr[IW_FPDU_LEN_BYTES + 18 + 64];
  uint32_t hdr_got, hdr_need;
  uint32_t ulpdu_len;
  uint8_t op;
  uint32_t payload, payload_got;
  uint8_t trailer[8];
  uint32_t trailer_got, trailer_need;
  uint32_t crc;
  struct iovec iov[IW_MAX_SGE];
  int niov;
  /* untagged message being received */
  iw_rwqe_t *rwqe;
  uint64_t msg_off;
  /* tagged: the read being answered */
  iw_swqe_t *rdwqe;
  /* tagged: the region placed into, named by STag and generation and
   * found again in the table before every recv() (iw_mr_live): the
   * region may have been deregistered and freed between two passes, so
   * the pointer is compared, never followed. */
  iw_mr_t *mr;
  uint64_t mr_gen;
  uint32_t stag;
  /* bytes read ahead of the FPDU being parsed: stage[st_pos, st_len) */
  uint32_t st_pos, st_len;
  uint8_t stage[IW_RX_STAGE];
  uint8_t *junk;    /* where a payload that answers our own zero-length Read goes */
} iw_rx_t;

typedef enum { IW_TX_NONE = 0, IW_TX_SQ, IW_TX_RRESP, IW_TX_TERM, IW_TX_RTR } iw_txkind_t;

/* One FPDU framed into the transmit batch. */
typedef struct iw_txf {
  uint32_t len;              /* bytes of the FPDU */
  uint8_t done_kind;         /* iw_txkind_t of the message it ends, or IW_TX_NONE */
  uint8_t op;
  iw_swqe_t *wqe;            /* the WR it ends (done_kind IW_TX_SQ) */
  /* A Read Response's payload named in place, in iov[src_iov]: its
   * region by STag and generation, found again before a later pass
   * writes it; src_gen 0 when the payload is not in a region (copied
   * behind the header, or out of it by tx_keep_cut). */
  int src_iov;
  uint32_t src_stag;
  uint64_t src_gen;
} iw_txf_t;

/* FPDUs framed and handed to the socket together (allocated on first use:
 * an idle connection does not carry it). */
typedef struct iw_txbatch {
  struct iovec iov[IW_TX_IOV]; /* adjacent pieces share one */
  int niov, nf, f_done;
  size_t len, sent, f_end;   /* bytes framed, written, end of f[f_done] */
  iw_txf_t f[IW_TX_FPDUS];
  uint32_t lin_len;
  uint8_t lin[IW_TX_LIN];    /* headers, trailers, inline payloads */
  uint8_t *cut;              /* a half-written Read Response payload, copied (tx_keep_cut) */
  size_t cut_size;
} iw_txbatch_t;

/* Transmit state: the message being framed into FPDUs. */
typedef struct iw_tx {
  iw_txkind_t kind;
  iw_swqe_t *wqe;
  uint8_t op;
  uint64_t len, off;         /* message length, bytes framed */
  uint32_t sge_i;            /* gather position */
  uint64_t sge_off;
  uint8_t *src;              /* the Read Response's source, found again before each piece */
  iw_rresp_t rr;             /* the read being answered (set with kind IW_TX_RRESP) */
  gboolean imm_next;         /* an RDMA Write whose Immediate Data message follows it */
  uint32_t msn, qn;
  uint32_t stag;
  uint64_t to;
  iw_txbatch_t *b;
} iw_tx_t;

/* A QP's connection endpoint while its connection is set up (siw's
 * siw_cep): the MPA Request or Reply being read, the consumer's connection
 * parameters and private data to send, and the private data the
 * ESTABLISHED event will carry.  The phase itself is the QP's iw_cstate_t
 * (the receive engine and the transmitter read it too), the negotiated
 * result the QP's crc, rev, rtr, ird, ord, peer_ird and rfc7306.
 *
 * Lifetime and locks: the QP owns it (qp->cep), and every access is made
 * with qp->lock held.  Its code is iw_cep.c.  It is allocated when the QP
 * starts a connection (iw_connect, iw_accept, iw_handoff:
 * iw_cep_set_param) and freed, still under qp->lock, right after the
 * ESTABLISHED event that used it (iw_cep_put: initiator in
 * iw_cep_active_establish, responder in iw_cep_passive_reply or, with an
 * RTR, in the receive engine when the RTR arrives), or, when setup never
 * finishes, by iw_qp_reset or iw_qp_destroy (before the QP goes to the
 * graveyard).  Its users are the progress thread (iw_cm_qp_io,
 * iw_cm_timeouts -> iw_cep_active_establish), the consumer's CM calls, and a
 * poller or CQ sleeper whose iw_rx_progress reads the RTR (poll lease):
 * each takes qp->lock and finds qp->cep NULL once it is gone, so nothing
 * keeps a pointer to it past the lock.  A passive request the consumer has
 * not accepted yet is the listener's (iw_creq_t, dev->lock): iw_accept
 * copies the request out of it before the creq is buried. */
typedef struct iw_cep {
  uint8_t hs[sizeof(iw_mpa_rr_t) + IW_MPA_PDATA_MAX]; /* the frame being read */
  uint32_t hs_got;
  rnicpi_conn_param_t param;  /* copy; pdata in pdata_buf */
  uint8_t pdata_buf[IW_MPA_PDATA_MAX];
  /* The private data the ESTABLISHED event carries: the Request's on a
   * passive handoff, the Reply's on a held initiator (IW_CS_HOLD). */
  uint8_t est_pdata[IW_MPA_PDATA_MAX];
  uint32_t est_pdata_len;
} iw_cep_t;

typedef struct iw_qp {
  iw_pollable_t poll;
  rnicpi_qp_t base;
  iw_dev_t *dev;
  iw_pd_t *pd;
  iw_cq_t *scq, *rcq;
  iw_srq_t *srq;             /* its receives come from this SRQ (rq stays empty), or NULL */
  GMutex lock;
  gint posts_waiting;        /* posts waiting for lock (atomic; iw_qp_lock_post) */
  rnicpi_qp_attr_t attr;
  rnicpi_qp_state_t state;
  iw_cstate_t cs;
  int fd;
  uint32_t epmask;             /* what the epoll set watches; 0: not in it */
  gboolean active, dead, final_event, closing, handoff, tx_hold, want_out;
  /* negotiated */
  gboolean crc;
  uint8_t rev;
  iw_rtr_t rtr;
  uint32_t ird, ord;
  uint32_t peer_ird;          /* the IRD the peer announced (iw_qp_read_room) */
  gboolean rfc7306;           /* both ends offered RFC 7306 (IW_MPA_FLAG_RFC7306): atomics, immediate data */
  gint64 deadline;
  GList timed_link;           /* in dev->timed when data == qp */
  GList polled_link;          /* in dev->polled when data == qp */
  gboolean polled;            /* input driven by poll_cq, not the progress thread */
  gboolean slept;             /* ...the lease a sleeper took (iw_cq_wait_begin), which no
                               * spinning poller has renewed since */
  uint32_t mr_depth;          /* nested holds of dev->mr_lock by this QP's pass (iw_mr_lock) */
  GQueue mws;                 /* iw_mw_t bound through it (mr_lock held for writing) */
  uint32_t fpdu_max;          /* largest FPDU sent (MULPDU of the path) */
  uint32_t mss_bytes;         /* payload sent in non-final FPDUs since TCP_MAXSEG was read */
  iw_cep_t *cep;               /* while the connection is set up (see iw_cep_t) */
  /* queues */
  rnicpi_fifo_t sq;               /* iw_swqe_t: posted, not started */
  rnicpi_fifo_t sq_out;           /* iw_swqe_t: started, completing in order */
  rnicpi_fifo_t orq;              /* iw_swqe_t: RDMA Reads and atomics waiting for their response */
  rnicpi_fifo_t rq;               /* iw_rwqe_t */
  rnicpi_fifo_t irq;              /* iw_rresp_t: inbound reads and atomics to answer */
  rnicpi_cache_t swqe_cache, rwqe_cache, rresp_cache;
  uint32_t ord_used;
  iw_swqe_t *rd_split;         /* a scattered Read whose parts are being issued (in sq_out) */
  uint32_t sq_used;            /* consumer WRs posted and not completed */
  uint32_t unfenced;          /* Sends/Writes sent since the last fence */
  gboolean fence_out;
  gboolean fin_fence;         /* an orderly close owes a fence before its FIN */
  uint32_t msn_tx[IW_QN_COUNT];
  uint32_t msn_rx[IW_QN_COUNT];
  iw_tx_t tx;
  iw_rx_t rx;
  uint8_t term[IW_TERM_FPDU_MAX];
  /* The rest of an FPDU cut by a flush, copied so that the Terminate after
   * it starts on an FPDU boundary (RFC 5044 4.1) once the memory is gone. */
  uint8_t *tail;
  uint32_t tail_len;
  uint32_t term_len;
  gboolean term_pending, term_sent;
} iw_qp_t;

/* The device's region table, read by a QP's transmit or receive pass
 * (qp->lock held).  A pass takes the lock once and every step inside it
 * nests for free; registration waits for the pass to end. */
static inline void
iw_mr_lock(iw_qp_t *qp)
{
  if (qp->mr_depth++ == 0)
    g_rw_lock_reader_lock(&qp->dev->mr_lock);
}

static inline void
iw_mr_unlock(iw_qp_t *qp)
{
  if (--qp->mr_depth == 0)
    g_rw_lock_reader_unlock(&qp->dev->mr_lock);
}

/* A post takes the QP's lock; when it must wait, it says so, and the
 * transmit or receive pass holding the lock lets it go after its burst
 * (IW_IO_BURST).  Uncontended, one trylock. */
static inline void
iw_qp_lock_post(iw_qp_t *qp)
{
  if (G_LIKELY(g_mutex_trylock(&qp->lock)))
    return;
  g_atomic_int_inc(&qp->posts_waiting);
  g_mutex_lock(&qp->lock);
  g_atomic_int_add(&qp->posts_waiting, -1);
}

static inline gboolean
iw_qp_posts_waiting(iw_qp_t *qp)
{
  return g_atomic_int_get(&qp->posts_waiting) > 0;
}

/* Take @qp's lock for a pass of its engine (the progress thread's, or a
 * spinning poller's trylock): the posts a pass let the lock go for after
 * its burst go first.  A GMutex is not fair: the pass that took it back at
 * once, while the woken post was still being scheduled on an idle core,
 * kept a post waiting for a whole 32 MiB Send, burst after burst (the
 * post-beside-receive tests failed 4 and 7 runs of 16 on an idle host). */
static inline void
iw_qp_lock_io(iw_qp_t *qp)
{
  while (iw_qp_posts_waiting(qp))
    g_thread_yield();
  g_mutex_lock(&qp->lock);
}

static inline gboolean
iw_qp_trylock_io(iw_qp_t *qp)
{
  return !iw_qp_posts_waiting(qp) && g_mutex_trylock(&qp->lock);
}

typedef struct iw_listen {
  iw_pollable_t poll;
  rnicpi_listen_t base;
  iw_dev_t *dev;
  uint32_t port;
  int fd;
  /* Its requests (dev->lock): those reading their MPA Request, oldest
   * first (iw_creq_t.link), and all it holds, those delivered to the
   * consumer included (IW_LISTEN_PENDING_MAX at most). */
  GQueue reading;
  uint32_t held;
  gint64 paused_until;       /* out of the epoll set until then (0: watched) */
  gint64 next_report;        /* the next line about refusals, not before then */
  uint32_t unreported;       /* refusals and failed accepts since the last line */
} iw_listen_t;

/* A passive connection before the consumer accepts or rejects it. */
typedef struct iw_creq {
  iw_pollable_t poll;
  iw_dev_t *dev;
  iw_listen_t *listener;
  GList link;                /* in listener->reading until delivered */
  uint64_t id;
  int fd;
  gboolean delivered, dead;
  gint64 deadline;           /* the whole MPA Request must be in by then */
  struct sockaddr_storage peer;
  uint8_t hs[sizeof(iw_mpa_rr_t) + IW_MPA_PDATA_MAX];
  uint32_t hs_got;
  iw_mpa_msg_t req;
} iw_creq_t;

typedef struct iw_event {
  gboolean is_cm;
  rnicpi_cm_event_t cm;
  rnicpi_async_event_t async;
} iw_event_t;

static inline iw_dev_t *to_iw_dev(rnicpi_dev_t *d) { return (iw_dev_t *) d; }
static inline iw_pd_t *to_iw_pd(rnicpi_pd_t *p) { return (iw_pd_t *) p; }
static inline iw_mr_t *to_iw_mr(rnicpi_mr_t *m) { return (iw_mr_t *) m; }
static inline iw_cq_t *to_iw_cq(rnicpi_cq_t *c) { return (iw_cq_t *) c; }
static inline iw_qp_t *to_iw_qp(rnicpi_qp_t *q) { return G_STRUCT_MEMBER_P(q, -(glong) G_STRUCT_OFFSET(iw_qp_t, base)); }
static inline iw_listen_t *to_iw_listen(rnicpi_listen_t *l) { return G_STRUCT_MEMBER_P(l, -(glong) G_STRUCT_OFFSET(iw_listen_t, base)); }

/* The provider object (iw_dev.c) and its tables, each beside the
 * functions it lists: device (iw_dev.c), memory (iw_mem.c), queues
 * (iw_qp.c), data path (iw_cq.c), CM and socket handoff (iw_cm.c),
 * shared receive queues (iw_srq.c). */
extern const rnicpi_provider_t RNICPI_PROVIDER_SELF(iwarp);
extern const rnicpi_device_ops_t iw_device_ops;
extern const rnicpi_mem_ops_t iw_mem_ops;
extern const rnicpi_queue_ops_t iw_queue_ops;
extern const rnicpi_data_ops_t iw_data_ops;
extern const rnicpi_cm_ops_t iw_cm_ops;
extern const rnicpi_sock_ops_t iw_sock_ops;
extern const rnicpi_srq_ops_t iw_srq_ops;
extern const rnicpi_mw_ops_t iw_mw_ops;

/* iw_dev.c: events and the progress thread. */
/* A device with its capabilities, locks, tables and descriptors, but no
 * progress thread yet (iw_open starts it; the fuzz target drives the
 * device without one); NULL, said in the log, when a descriptor cannot be
 * had.  iw_config must be set already. */
iw_dev_t *iw_dev_new(const rnicpi_upcalls_t *up, void *ctx);
void iw_defer_cm(iw_dev_t *dev, const rnicpi_cm_event_t *ev);
void iw_defer_async(iw_dev_t *dev, const rnicpi_async_event_t *ev);
void iw_dev_wake(iw_dev_t *dev);
void iw_dev_bury(iw_dev_t *dev, gpointer obj);
void iw_epoll_set(iw_dev_t *dev, int fd, iw_pollable_t *p, uint32_t events, gboolean add);
void iw_epoll_del(iw_dev_t *dev, int fd);

/* iw_mem.c (mr_lock held by the caller). */
/* The entry at STag index @idx, valid or not, or NULL. */
static inline iw_mr_t *
iw_mr_at(iw_dev_t *dev, uint32_t idx)
{
  struct iw_mr **page = dev->mr_pages[idx / IW_MR_PAGE];
  return page != NULL ? page[idx % IW_MR_PAGE] : NULL;
}
static inline iw_mr_t *
iw_mr_lookup(iw_dev_t *dev, uint32_t stag)
{
  iw_mr_t *mr = iw_mr_at(dev, stag >> 8);
  return mr != NULL && mr->stag == stag && mr->valid ? mr : NULL;
}
/* The region of STag @stag if it is still the one registered as
 * generation @gen (mr_lock held): NULL once that region was deregistered,
 * even when its memory or its STag index went to a new one. */
static inline iw_mr_t *
iw_mr_live(iw_dev_t *dev, uint32_t stag, uint64_t gen)
{
  iw_mr_t *mr = iw_mr_lookup(dev, stag);
  return mr != NULL && mr->gen == gen ? mr : NULL;
}
/* Give @mr another STag (the fuzz target's seeds name fixed ones); FALSE
 * when that index is taken.  Takes mr_lock. */
gboolean iw_mr_set_stag(iw_dev_t *dev, iw_mr_t *mr, uint32_t stag);
/* Free the table's pages (device close). */
void iw_mr_table_free(iw_dev_t *dev);
/* The STag work requests of the send queue (RNIC-PI 1.4: FAST_REG,
 * LOCAL_INV; 1.2: BIND_MW), taken by post_send (qp->lock held; a
 * FAST_REG names a region of mr_alloc, a BIND_MW a window and a region):
 * a FAST_REG's or a bind's new STag is written into the region's or the
 * window's keys and into the queued copy's wr.rkey. */
void iw_mem_post(iw_qp_t *qp, iw_swqe_t *s);
/* Undo what iw_mem_post counted, when the request completes. */
void iw_mem_post_done(const rnicpi_send_wr_t *wr);
/* Whether @op is one of those, executed in its turn without a message. */
static inline gboolean
iw_mem_is_stag_op(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_FAST_REG || op == RNICPI_WR_LOCAL_INV || op == RNICPI_WR_BIND_MW;
}
/* Execute a FAST_REG, LOCAL_INV or BIND_MW at its turn in the send queue
 * (qp->lock held; mr_lock may be held for reading by this QP's pass, and
 * is let go meanwhile): its completion status. */
rnicpi_wc_status_t iw_mem_exec(iw_qp_t *qp, const iw_swqe_t *s);
/* Invalidate STag @stag for a Send with Invalidate received on @qp (RFC
 * 5040 5.3, 6.10), before its receive completes; FALSE when @stag names
 * nothing @qp may invalidate: a valid fast-registered region of its
 * protection domain with no window bound to it, or a window bound
 * through @qp (same locking as iw_mem_exec). */
gboolean iw_mem_invalidate(iw_qp_t *qp, uint32_t stag);
/* Enter @mr (a region or a window's entry) into the table with a fresh
 * index and a random key: RNICPI_ELIMIT when the table is full (takes
 * mr_lock). */
rnicpi_status_t iw_mr_table_add(iw_dev_t *dev, iw_mr_t *mr);
/* Take @mr out of the table (mr_lock held for writing). */
void iw_mr_table_remove(iw_dev_t *dev, iw_mr_t *mr);
/* A region's entry (not a window's) that may gather or scatter locally:
 * @s inside it, of @qp's protection domain, with the rights @need
 * (mr_lock held). */
iw_mr_t *iw_mr_local(iw_qp_t *qp, const rnicpi_sge_t *s, uint32_t need);

/* iw_mw.c: memory windows (mr_lock held for writing, but mw_alloc and
 * mw_dealloc, which take it).  Bind @s (a BIND_MW, iw_mem_exec): its
 * completion status, RNICPI_WC_MW_BIND_ERR when a rule of rnicpi_bind_t
 * is broken. */
rnicpi_wc_status_t iw_mw_bind(iw_qp_t *qp, const iw_swqe_t *s);
/* Unbind @mw: its STag answers nothing from now on and placement checked
 * against it stops (a new gen). */
void iw_mw_unbind(iw_dev_t *dev, iw_mw_t *mw);
/* Whether @qp may reach window entry @mr: bound, and bound through @qp. */
static inline gboolean
iw_mw_reachable(const iw_mr_t *mr, const iw_qp_t *qp)
{
  return mr->mw == NULL || mr->mw->qp == qp;
}
/* @qp goes away: the windows bound through it are unbound (takes mr_lock). */
void iw_mw_qp_gone(iw_qp_t *qp);
/* RNIC-PI 1.4 (RNICPI_WR_SINK_MW): the window entry segment @s of a Read
 * on @qp names, if it may take the Read Response: a window of @qp's
 * domain bound through @qp, @s inside it (in its address space), the
 * window granting remote write and its region local write (the iWARP
 * read-sink rights, split as vp/emul splits them); NULL otherwise
 * (mr_lock held). */
iw_mr_t *iw_mw_sink(iw_qp_t *qp, const rnicpi_sge_t *s);
/* A Read: RNICPI_WR_RDMA_READ or, RNIC-PI 1.4, RNICPI_WR_RDMA_READ_INV. */
static inline gboolean
iw_wr_is_read(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_RDMA_READ || op == RNICPI_WR_RDMA_READ_INV;
}

/* iw_srq.c.  Take the SRQ's head receive (NULL when it is empty), raising
 * the armed limit event; give an entry back once its message completed;
 * a QP of domain @pd starts (iw_srq_attach, RNICPI_EINVAL for another
 * domain's SRQ) or stops taking from it. */
iw_rwqe_t *iw_srq_take(iw_srq_t *srq);
void iw_srq_put(iw_srq_t *srq, iw_rwqe_t *r);
rnicpi_status_t iw_srq_attach(iw_srq_t *srq, iw_pd_t *pd);
void iw_srq_detach(iw_srq_t *srq);

/* iw_cq.c */
rnicpi_status_t iw_cq_create(rnicpi_dev_t *d, uint32_t depth, uint64_t ctx, rnicpi_cq_t **out);
rnicpi_status_t iw_cq_destroy(rnicpi_cq_t *c);
void iw_cq_attach(iw_cq_t *cq, iw_qp_t *qp);
void iw_cq_detach(iw_cq_t *cq, iw_qp_t *qp);
void iw_cq_push(iw_cq_t *cq, const rnicpi_wc_t *wc, iw_work_t *w);
void iw_work_deliver(iw_work_t *w);

/* iw_qp.c: the RNIC-PI posts (in iw_data_ops) and QP operations (iw_queue_ops). */
rnicpi_status_t iw_post_send(rnicpi_qp_t *q, const rnicpi_send_wr_t *wr);
rnicpi_status_t iw_post_recv(rnicpi_qp_t *q, const rnicpi_recv_wr_t *wr);
rnicpi_status_t iw_qp_create(rnicpi_pd_t *p, const rnicpi_qp_attr_t *attr, uint64_t ctx, rnicpi_qp_t **out);
rnicpi_status_t iw_qp_modify(rnicpi_qp_t *q, const rnicpi_qp_attr_t *attr);
rnicpi_status_t iw_qp_to_error(rnicpi_qp_t *q);
rnicpi_status_t iw_qp_reset(rnicpi_qp_t *q);
rnicpi_qp_state_t iw_qp_state(rnicpi_qp_t *q);
rnicpi_status_t iw_qp_destroy(rnicpi_qp_t *q);
/* iw_qp.c (qp->lock held). */
void iw_qp_complete(iw_qp_t *qp, iw_cq_t *cq, uint64_t wr_id, rnicpi_wc_opcode_t op,
                    rnicpi_wc_status_t st, uint32_t len, iw_work_t *w);
void iw_qp_sq_reap(iw_qp_t *qp, iw_work_t *w);
void iw_qp_flush(iw_qp_t *qp, iw_work_t *w);
void iw_qp_cm_event(iw_qp_t *qp, rnicpi_cm_event_type_t type, const void *pdata,
                    uint32_t pdata_len, rnicpi_cm_reason_t reason);
void iw_qp_fail(iw_qp_t *qp, rnicpi_cm_event_type_t ev, iw_work_t *w);
void iw_qp_close_fd(iw_qp_t *qp);
void iw_qp_go_rts(iw_qp_t *qp);
void iw_qp_init_stream(iw_qp_t *qp);
void iw_qp_mulpdu(iw_qp_t *qp);
void iw_qp_io(iw_qp_t *qp, uint32_t events, iw_work_t *w);
void iw_qp_want_out(iw_qp_t *qp, gboolean on);
void iw_qp_set_polled(iw_qp_t *qp, gboolean on);
void iw_dev_poll_leases(iw_dev_t *dev);
void iw_qp_unpoll(iw_qp_t *qp, iw_work_t *w);

/* iw_tx.c: the requester and the read responder's transmit side: messages
 * framed into FPDUs, written, accounted. */
void iw_tx_progress(iw_qp_t *qp, iw_work_t *w);
void iw_tx_drop(iw_qp_t *qp);
void iw_tx_free(iw_qp_t *qp);
gboolean iw_tx_pending(iw_qp_t *qp);
gboolean iw_tx_fin_cut_short(iw_qp_t *qp);
int iw_tx_rtr(iw_qp_t *qp);
/* Forget the message being framed in @t (its batch stays). */
G_GNUC_INTERNAL void iw_tx_reset(iw_tx_t *t);

/* iw_sq.c: which message the transmit side sends next.  Next: start it in
 * qp->tx (iw_tx_progress frames it); FALSE when there is none to send
 * now.  Imm start: @t's WR goes on with its Immediate Data message (RFC
 * 7306 6.3), after its RDMA Write.  Internal read: a zero-length Read of
 * our own queued to be answered (an RTR; @fence: a delivery fence), which
 * completes nothing. */
G_GNUC_INTERNAL gboolean iw_tx_next(iw_qp_t *qp, iw_work_t *w);
G_GNUC_INTERNAL void iw_tx_imm_start(iw_qp_t *qp, iw_tx_t *t);
G_GNUC_INTERNAL iw_swqe_t *iw_tx_internal_read(iw_qp_t *qp, gboolean fence);

/* A local gather/scatter element within a region of @qp's protection zone
 * that has the rights @need (mr_lock held for reading). */
gboolean iw_local_ok(iw_qp_t *qp, const rnicpi_sge_t *s, uint32_t need);

/* iw_rx.c: receive, validate, place (DDP), complete Sends and Read Responses,
 * and hand the other whole messages to iw_rdmap.c. */
void iw_rx_progress(iw_qp_t *qp, iw_work_t *w);
void iw_rx_reset(iw_qp_t *qp);
/* Terminate for what the peer's segment being received did wrong (the
 * consumer's event follows from it), or with the event @cause. */
void iw_rx_term(iw_qp_t *qp, uint8_t layer, uint8_t etype, uint8_t code, iw_work_t *w);
void iw_rx_term_as(iw_qp_t *qp, rnicpi_async_cause_t cause, uint8_t layer, uint8_t etype,
                   uint8_t code, iw_work_t *w);
/* What iw_rx_tagged_check found: the Terminate a refused access earns, or
 * code IW_TERM_CODE_NONE when the access may go ahead. */
typedef struct iw_tagged_verdict {
  iw_mr_t *mr;    /* the region or window @stag names; NULL if none */
  uint8_t layer;  /* enum iw_term_layer */
  uint8_t etype;  /* the layer's error type */
  uint8_t code;   /* the type's code, or IW_TERM_CODE_NONE */
} iw_tagged_verdict_t;
/* Validate a tagged access of @len bytes at @stag/@to needing @need
 * (RFC 5041 7.2, RFC 5040 7.1), with the QP's own rights too when
 * @qp_rights (mr_lock held). */
iw_tagged_verdict_t iw_rx_tagged_check(iw_qp_t *qp, uint32_t stag, uint64_t to, uint32_t len,
                                       uint32_t need, gboolean qp_rights);
/* The receive's elements that hold message bytes [@off, @off+@len), into
 * qp->rx.iov; FALSE when one is not writable (mr_lock held). */
gboolean iw_rx_scatter(iw_qp_t *qp, const iw_rwqe_t *q, uint64_t off, uint32_t len);

/* RFC 7306: an Atomic Request or an RDMA Read Request, both answered by
 * the peer (ORD, IRD) rather than confirmed by a later fence. */
static inline gboolean
iw_op_answered(uint8_t op)
{
  return op == IW_OP_READ_REQ || op == IW_OP_ATOMIC_REQ;
}

/* The receive the next untagged Send-queue message of @qp lands in: the
 * head of its own queue or of its SRQ; NULL when there is none (qp->lock
 * held). */
static inline iw_rwqe_t *
iw_qp_recv_take(iw_qp_t *qp)
{
  return qp->srq != NULL ? iw_srq_take(qp->srq) : rnicpi_fifo_pop(&qp->rq);
}

/* A receive of @qp that completed: its entry goes back where it came from
 * (qp->lock held). */
static inline void
iw_qp_recv_put(iw_qp_t *qp, iw_rwqe_t *r)
{
  if (qp->srq != NULL)
    iw_srq_put(qp->srq, r);
  else
    rnicpi_cache_put(&qp->rwqe_cache, r);
}

/* Whether the consumer gets BROKEN when @qp fails: it is in RTS, or has
 * accepted and waits for the RTR. */
static inline gboolean
iw_qp_connected(const iw_qp_t *qp)
{
  return qp->state == RNICPI_QPS_RTS || qp->cs == IW_CS_RTR_WAIT;
}

/* How many Reads @qp may have outstanding, its own zero-length ones (the
 * fences of iw_sq.c) included: the IRD the peer announced, and never more
 * than our ORD.  RFC 6581 has the peer size its IRD to our ORD, and a
 * peer may announce more than it then takes: vp/iwarp announces an IRD of
 * 1 at least, yet its IRD is 0 toward an ORD of 0 (iw_cep.c). */
static inline uint32_t
iw_qp_read_room(const iw_qp_t *qp)
{
  return MIN(qp->peer_ird, qp->ord);
}

/* Whether @qp's Sends and Writes complete when a delivery fence comes back
 * (ITAPI_IWARP_COMPLETION=placed, with room for a Read to carry it) rather
 * than at transmission. */
static inline gboolean
iw_qp_fenced(const iw_qp_t *qp)
{
  return iw_config.placed && iw_qp_read_room(qp) > 0;
}

/* iw_rdmap.c */
/* Terminate the stream for a protocol error or a local fault: the
 * consumer gets the affiliated event of @cause (none for
 * RNICPI_AE_UNSPECIFIED: an abort it asked for). */
void iw_term_send(iw_qp_t *qp, rnicpi_async_cause_t cause, uint8_t layer, uint8_t etype,
                  uint8_t code, const uint8_t *ddp_hdr, uint32_t ddp_len, uint32_t seg_len,
                  const uint8_t *rdmap_hdr, iw_work_t *w);
void iw_term_refuse(iw_qp_t *qp, uint8_t code, rnicpi_cm_reason_t why, iw_work_t *w);
void iw_term_received(iw_qp_t *qp, const uint8_t *body, uint32_t len, iw_work_t *w);
/* The responder's RDMAP actions on a whole message (@d: its DDP header),
 * called by iw_rx.c; FALSE when the stream was terminated.  A Read
 * Request (RTR wait: *@rtr_done for the RTR), an RFC 7306 Atomic Request
 * (executed) and Atomic Response, an Immediate Data message. */
gboolean iw_rdmap_read_req(iw_qp_t *qp, const uint8_t *d, gboolean *rtr_done, iw_work_t *w);
gboolean iw_rdmap_atomic_req(iw_qp_t *qp, const uint8_t *d, iw_work_t *w);
gboolean iw_rdmap_atomic_resp(iw_qp_t *qp, const uint8_t *d, iw_work_t *w);
gboolean iw_rdmap_imm(iw_qp_t *qp, const uint8_t *d, iw_work_t *w);

/* iw_cm.c: listeners, connect/accept/reject/disconnect, handoff, deadlines. */
void iw_cm_listen_io(iw_listen_t *l);
void iw_cm_creq_io(iw_creq_t *c, uint32_t events);
void iw_cm_timeouts(iw_dev_t *dev);
void iw_timed_add(iw_qp_t *qp, uint64_t us);
void iw_timed_del(iw_qp_t *qp);
/* Send all of @buf on @fd, waiting a little for room (handshake frames,
 * the RTR): 0, or -1 when the socket failed or stayed full. */
int iw_sock_send_all(int fd, const void *buf, size_t len);
/* A connection's socket: TCP_NODELAY, and the transport timeout
 * (iw_config.timeout_ms: TCP_USER_TIMEOUT and keepalive) unless it is 0. */
void iw_sock_tune(int fd);

/* iw_cep.c: the connection endpoint (iw_cep_t) and the MPA handshake on a
 * QP's socket (qp->lock held, except iw_cep_read_frame). */
/* @qp's connection endpoint, allocated if it has none. */
iw_cep_t *iw_cep_get(iw_qp_t *qp);
/* Free @qp's connection endpoint, if any. */
void iw_cep_put(iw_qp_t *qp);
/* The ESTABLISHED event of @qp, with the private data its endpoint kept;
 * the endpoint is then freed. */
void iw_cep_established(iw_qp_t *qp);
/* A new connection of @qp: its endpoint, with the consumer's parameters
 * and private data; the IRD and ORD asked for in qp->attr. */
void iw_cep_set_param(iw_qp_t *qp, const rnicpi_conn_param_t *p);
/* Setup failed: every WR flushed, UNREACHABLE for @why, the socket closed. */
void iw_cep_unreachable(iw_qp_t *qp, rnicpi_cm_reason_t why, iw_work_t *w);
/* Responder: answer MPA Request @req with @param (the QP owns the
 * socket); a send that fails is the consumer's BROKEN event. */
rnicpi_status_t iw_cep_passive_reply(iw_qp_t *qp, const iw_mpa_msg_t *req,
                                     const rnicpi_conn_param_t *param, iw_work_t *w);
/* Initiator: send the MPA Request, then read the Reply (IW_CS_MPA_REP). */
void iw_cep_send_request(iw_qp_t *qp, iw_work_t *w);
/* Read one MPA Request (@reply FALSE) or Reply frame from @fd into @hs,
 * *@got bytes of it so far: 1 complete, 0 more to come, -1 closed,
 * -2 malformed. */
int iw_cep_read_frame(int fd, uint8_t *hs, uint32_t *got, bool reply);
/* A QP's socket during setup: the TCP connect, the MPA Request or Reply
 * read and taken, the held first FPDU released. */
void iw_cm_qp_io(iw_qp_t *qp, uint32_t events, iw_work_t *w);
/* Initiator: the Reply was taken; send the RTR if one was agreed, go to
 * RTS and tell the consumer ESTABLISHED. */
void iw_cep_active_establish(iw_qp_t *qp, iw_work_t *w);

/* iw_qp.c: a connected QP's socket, and a failing connection's events. */
void iw_qp_io_rts(iw_qp_t *qp, uint32_t events, iw_work_t *w);
/* The consumer's affiliated event for @qp: @cause, and the layer, type and
 * code of the Terminate sent or received (RNICPI_TERM_NONE: none). */
void iw_qp_async(iw_qp_t *qp, rnicpi_async_cause_t cause, uint8_t layer, uint8_t etype,
                 uint8_t code);
/* The stream failed under @qp without a Terminate (a reset, an EOF inside
 * an FPDU, no RTR in time): a connected consumer gets an LLP event, then
 * BROKEN. */
void iw_qp_llp_fail(iw_qp_t *qp, iw_work_t *w);
void iw_qp_conn_lost(iw_qp_t *qp, iw_work_t *w);

#endif
