/*
 * vp/emul: a software RNIC over memory.
 *
 * Two paths, chosen per connection when it is set up:
 * - in-process (both QPs in this process): one process-wide fabric under
 *   one lock; a work request executes against the peer's memory when it is
 *   posted (emul_qp.c, emul_exec.c, emul_cm.c);
 * - cross-process (the listener lives in another process of the host): the
 *   CM exchange runs over a Unix socket, work requests over shared-memory
 *   rings, payloads by cross-memory attach or a bounce path (emul_ring.h
 *   lists its files by role).  A QP with qp->x != NULL is on this path.
 * The same rules cover both (emul_exec.c).
 *
 * Locks, in the order they are taken:
 * 1. the fabric lock (emul_fabric.lock): connection management, the region
 *    table's changes, windows and fast registration, every cross-process
 *    path, datagrams that leave the process, a receive posted to an SRQ
 *    while Sends wait for one or that feeds a QP connected to another
 *    process (emul_srq.c), and the data path of a QP with no link;
 * 2. a link's lock (emul_link_t): the two QPs of an in-process connection
 *    share one; it guards their queues, state, peer pointers and
 *    negotiated limits.  A post or a receive on a linked QP whose work
 *    needs nothing else (emul_qp.c, "The fast path") takes this lock
 *    alone, so connections of different threads do not meet; everything
 *    else takes the fabric lock first, then the link's.  The QP of an
 *    established connection to another process has a link of its own
 *    (link->ring): it guards the QP and its connection's ring state.  A
 *    latency post (emul_ring_hot), a receive posted with nothing
 *    waiting for it (emul_ring_recv_alone) and a drain of the ring's
 *    common case (emul_ring_drain_link: a busy poll's, a woken sleeper's,
 *    the progress thread's) take it alone; every other user of the
 *    connection (other posts and drains, teardown) takes the fabric lock,
 *    then it.  A UD QP has a link of its own too (emul_ud.c, "Locks"): a
 *    datagram between two UD QPs of the process is delivered under the
 *    sender's link, the destination's only tried meanwhile; the table of
 *    UD QPs has a lock of its own (emul_fabric.ud_lock), taken after the
 *    fabric lock or a link and never held while waiting;
 * 3. a CQ's list of those ring links (emul_cq_t.xlock): a busy poll walks
 *    it holding nothing else and only tries each link's lock, so it is
 *    taken after a link's where both are held;
 * 4. a CQ's ring lock (rnicpi_cq_ring_t) and an SRQ's (emul_srq_t.lock),
 *    leaves: nothing else is taken while one is held.
 * No lock is held across a long payload copy of an in-process connection:
 * the copier lets its link's lock go, and the fabric lock too where it
 * held it, and marks the link copying; every other user of the link waits
 * for the mark to clear, with the fabric lock let go, or, a post, queues
 * its work for the copier to run (emul_link.c, "Long copies").
 * The region table is read without the fabric lock by the fast path: its
 * slots never move (a two-level array), an entry is published whole and,
 * when it leaves, freed only once every link has been taken and released
 * after it left (emul_links_pass) and every reference to it was put
 * (emul_mr_release): the fast path looks keys up only under its link's
 * lock, and a long copy, which lets that lock go, holds the regions it
 * uses by reference (emul_hold_t).  The
 * fast path never reads a window's or a fast-registered region's entry
 * (their fields change under the fabric lock): a request, or the receive
 * a Send lands in, that names one is left to the fabric lock
 * (emul_key_fixed); requests that name none go on under their link alone
 * while such entries exist.
 *
 * Personalities.  Every device has one: InfiniBand HCA (emul0, emul-ib0)
 * or iWARP RNIC (emul-iw0; emul0 too under ITAPI_EMUL_PERSONALITY=iwarp).
 * What differs between them is one row of the table emul_pers[]
 * (emul_dev.c): the capability record the access layer reconciles from,
 * and the few execution rules the provider applies from the same row
 * (key format, read-sink rights, receiver not ready, disconnect).  Code
 * elsewhere reads the row (emul_pers_of_qp), never the personality's name.
 * Two QPs connect only when their devices have the same personality.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef EMUL_H
#define EMUL_H

#include <glib.h>
#include <string.h>

#include "rnicpi.h"
#include "rnicpi_util.h"

#define EMUL_LOG "itapi-vp-emul"

/* UD path MTU: IBTA MTU code 5, what it_get_pathinfo reports (emul_ud.c). */
#define EMUL_UD_MTU 4096
/* The Global Route Header placed before every datagram (IBTA 8.3). */
#define EMUL_UD_GRH_LEN 40

/* The process-wide fabric: every emul device of the process hangs off it. */
/* The region table: index -> emul_mr_t*, one array that never moves, so
 * the fast path reads it while the fabric lock adds entries (emul_mr_slot):
 * its address space is reserved whole (EMUL_MR_MAX slots, fewer where the
 * process may not map that much), its pages are used as slots are. */
#define EMUL_MR_MAX (1u << 24)     /* entries at most (the caps' max_mr) */

struct emul_mr;

/* An in-process connection's data lock, shared by its two QPs (order and
 * rules: the header of this file).  A QP keeps a reference to every link
 * it ever had until it is destroyed, so a thread that read qp->link may
 * still take that lock after the QP was reset. */
typedef struct emul_link {
  _Alignas(64) rnicpi_spin_t lock;  /* a cache line of its own: it moves between two threads */
  gint ref;               /* QPs that had it, and the progress thread (fabric lock) */
  gint wanted;            /* threads waiting in emul_link_lock_idle (atomic) */
  /* Long copies (emul_link.c): the rest under the lock. */
  gboolean copying;       /* a copy runs with the lock let go */
  gboolean fcopy;         /* ... and with the fabric lock let go too (emul_fabric.lcopies) */
  gboolean again;         /* work was queued while it ran: run the queues (emul_link_settle) */
  gboolean ring;          /* the one QP of a connection to another process (qp[0]) */
  struct emul_qp *qp[2];  /* the connection's QPs, each until it leaves */
} emul_link_t;

/* A payload copy of at least this many bytes runs with the link's lock let
 * go (emul_link.c, "Long copies"); a shorter one costs less than letting the
 * lock go and taking it back. */
#define EMUL_COPY_UNLOCKED (64u << 10)

/* The tags of one slot's keys (emul_slot_new_tag): the last one handed
 * out, 0 before the first, and the stride to the next, 0 until drawn. */
typedef struct emul_slot_tag {
  uint32_t last;
  uint32_t stride;
} emul_slot_tag_t;

typedef struct emul_fabric {
  rnicpi_spin_t lock;     /* see "Locks" above (emul_fabric_lock) */
  struct emul_mr **mr_tab; /* the region table */
  uint32_t mr_cap;        /* its slots (set once) */
  uint32_t mr_len;        /* slots handed out so far (fabric lock); slot 0 unused */
  GPtrArray *links;       /* every emul_link_t alive (fabric lock) */
  GPtrArray *cqs;         /* every emul_cq_t alive (fabric lock; a fork takes their xlock) */
  /* Cross-process copies running with the fabric lock let go (fabric
   * lock; emul_ring_copy_begin).  Each holds the regions it uses by
   * reference, so only a fork waits for them. */
  guint xcopies;
  guint xcopy_waiters;    /* threads waiting for every such copy to end (a fork): none starts meanwhile */
  gint lcopies;           /* in-process copies running with it let go (fabric lock; emul_link_t.fcopy) */
  guint copy_waiters;     /* threads waiting for those to end (emul_wait_copies): none starts meanwhile
                           * (fabric lock); a QP's own waiters are emul_qp_t.copy_waiters */
  gint nmutable;          /* windows and fast-registration regions alive (atomic; emul_key_fixed) */
  uint64_t mr_gen;        /* counts changes of table entries (emul_ring_mr_sync); from 1 (atomic) */
  GArray *free_mr;        /* free slots of the region table */
  GArray *slot_tag;       /* index -> the slot's last tag and stride (emul_slot_tag_t) */
  GHashTable *listeners;  /* port -> emul_listen_t* */
  GHashTable *conns;      /* conn id -> emul_conn_t* */
  uint64_t next_conn_id;
  uint32_t next_qpn;       /* atomic (emul_qp_number) */
  GAsyncQueue *events;    /* deferred upcalls (emul_upcall_t*) */
  GMutex deliver_lock;    /* held while an upcall is delivered */
  uint64_t next_pd_id;    /* PD identity checked by cross-process peers */
  GHashTable *ud_qps;     /* QP number -> emul_qp_t* of every UD QP (ud_lock; emul_ud.c) */
  rnicpi_spin_t ud_lock;  /* ud_qps: taken with the fabric lock to change it, or to look
                           * a QP up and try its link; its holder never waits */
  guint ud_gen;           /* counts UD QPs destroyed (atomic; emul_qp_t.ud_to) */
  GHashTable *ud_svc;     /* request id -> pending UD service request (emul_ud.c) */
  gint ntimed;            /* connects with a deadline, at least (atomic; emul_cm_expire) */
} emul_fabric_t;

extern emul_fabric_t emul_fabric;

/* A fresh QP number of this process (no lock needed). */
static inline uint32_t
emul_qp_number(void)
{
  return (uint32_t) g_atomic_int_add((gint *) &emul_fabric.next_qpn, 1);
}

/* The provider's progress thread is waiting for the fabric lock
 * (emul_progress.c).  The lock is not fair: an application thread that posts
 * or polls in a tight loop takes it again before the woken waiter runs, so
 * the socket's messages (a mapping answer, a doorbell) would wait for
 * milliseconds.  The data path lets the waiter in first. */
G_GNUC_INTERNAL extern gint emul_ring_pwant;

/* The fabric lock is a spin lock (rnicpi_util.h): every post and every poll
 * that finds work takes it, and its release is then a plain store.  Its
 * long sections (a large copy, a cross-memory attach call) make a waiter
 * yield, then sleep. */
/* Doorbells to other processes this thread owes, and the socket messages
 * of connections it queued (their handshake, mapping requests, teardown),
 * rung and sent as it lets the lock go (emul_ring.c, emul_ring_doorbell;
 * emul_ring_msg.c, emul_ring_send_msg): never a system call under the lock
 * for a connection's socket. */
G_GNUC_INTERNAL extern __thread guint emul_ring_bells_due __attribute__((tls_model("initial-exec")));
void emul_ring_bells_ring(void);
/* Ring the doorbells this thread owes, with no lock held: after the fabric
 * lock goes, and after a section under a QP's link alone. */
static inline void
emul_ring_bells_flush(void)
{
  if (G_UNLIKELY(emul_ring_bells_due != 0))
    emul_ring_bells_ring();
}
/* Whether this thread holds the fabric lock: a long copy lets it go too
 * (emul_link.c, "Long copies"). */
G_GNUC_INTERNAL extern __thread gboolean emul_fabric_mine __attribute__((tls_model("initial-exec")));
/* A thread never waits for the fabric lock owing a bell: a bell owed from
 * a section under a link alone (a sleeper's or a poll's drain) is rung
 * before the wait, not after the lock's other holders. */
static inline void
emul_fabric_lock(void)
{
  emul_ring_bells_flush();
  rnicpi_spin_lock(&emul_fabric.lock);
  emul_fabric_mine = TRUE;
}
static inline void
emul_fabric_unlock(void)
{
  emul_fabric_mine = FALSE;
  rnicpi_spin_unlock(&emul_fabric.lock);
  emul_ring_bells_flush();
}
static inline gboolean
emul_fabric_trylock(void)
{
  if (!rnicpi_spin_trylock(&emul_fabric.lock))
    return FALSE;
  emul_fabric_mine = TRUE;
  return TRUE;
}

/* Whether @q is empty, without a call into GLib: the data path asks it of
 * queues that are almost always empty, once or twice per message. */
static inline gboolean emul_queue_empty(const GQueue *q) { return q->head == NULL; }

static inline void
emul_lock_data_path(void)
{
  emul_ring_bells_flush();  /* as emul_fabric_lock: no wait owing a bell */
  /* The waiter may need this CPU to run at all (fewer cores than busy
   * threads): the backoff yields it. */
  for (unsigned n = 1; G_UNLIKELY(g_atomic_int_get(&emul_ring_pwant) > 0); n++)
    rnicpi_spin_backoff(n);
  emul_fabric_lock();
}

/* One personality: the capability record's personality-dependent part and
 * the rules the provider applies from it.  Everything not here is common. */
typedef enum { EMUL_PERS_IB = 0, EMUL_PERS_IWARP, EMUL_PERS_COUNT } emul_pers_id_t;

typedef struct emul_pers {
  emul_pers_id_t id;
  const char *name;             /* ITAPI_EMUL_PERSONALITY value */
  const char *device;           /* the device that always has it */
  const char *what;             /* for messages */
  /* capability record */
  rnicpi_transport_t transport;
  rnicpi_path_format_t path_format;
  uint64_t features;
  uint32_t pdata_connect, pdata_accept, pdata_reject, pdata_disconnect;
  uint32_t pdata_ud_req, pdata_ud_rep;
  uint32_t max_rdma_read_sge;
  /* keys: key = index << index_shift | tag << tag_shift, each field at
   * most 32 bits wide (EMUL_KEY_LAYOUT); tags: emul_slot_new_tag */
  uint8_t index_shift, tag_shift;
  uint32_t index_mask, tag_mask;
  uint64_t key_bits;            /* every bit a key may have set */
  gboolean tag_step_random;     /* a slot's tags step by a random stride (else by 1) */
  /* execution rules */
  uint32_t read_sink_need;      /* rights the local sink of an RDMA Read needs */
  /* A wire Read names one sink STag and TO (iWARP, RFC 5040 6.1): a Read
   * scattered over several runs of contiguous segments is as many wire
   * Reads, each an ORD credit (emul_req.c, ord_cost); else one. */
  gboolean read_sink_per_run;
  gboolean rnr_wait;            /* a Send with no receive waits (else: Terminate) */
  /* Immediate data (RNIC-PI 1.5): the bits that travel (InfiniBand: the
   * low 32, its ImmDt header; iWARP: 64, RFC 7306 6.3), and whether they
   * are also placed in a receive buffer that holds them, its byte_len 8
   * (iWARP; else byte_len is the length of the Write they follow). */
  uint64_t imm_mask;
  gboolean imm_placed;
  gboolean drain_on_disconnect; /* disconnect once outstanding requests are answered */
} emul_pers_t;

extern const emul_pers_t emul_pers[EMUL_PERS_COUNT];

typedef struct emul_dev {
  rnicpi_dev_t base;
  rnicpi_upcalls_t up;
  gint ref;
  gboolean closed;
  gint notifying;               /* CQ notifications queued, not delivered */
  /* Objects it holds, each kind within its max_* (rnicpi_count_take). */
  gint npd, ncq, nqp, nsrq;
  const emul_pers_t *pers;
  rnicpi_caps_t caps;
} emul_dev_t;

typedef struct emul_pd {
  rnicpi_pd_t base;
  gint nobj;
  uint64_t id;
} emul_pd_t;

/* A region, or a window's key (emul_mw_t.entry): an object of the region
 * table counted by reference, as rxe's pool elements are.  The table holds
 * one reference from publication until the entry leaves (emul_mr_release);
 * a copy in flight with the locks let go holds one on every region its
 * bytes touch (emul_hold_t), and the removal waits for those before it
 * frees the entry. */
typedef struct emul_mr {
  rnicpi_mr_t base;
  gint ref;                /* the table's while published, each window's bound to it, and
                            * each holder's (atomic) */
  emul_pd_t *pd;
  const emul_pers_t *pers; /* of its device: the format of its key */
  uint8_t *addr;
  uint64_t length;
  uint64_t iova;
  uint32_t access;
  uint32_t index;
  uint32_t key;            /* the tag part of the key (pers->tag_mask) */
  gboolean zero_based;     /* iova is not addr */
  struct emul_mw *mw;      /* this entry is a window's key (emul_mw.c), or NULL */
  gint nmw;                /* a region: windows bound to it (dereg: EBUSY) */
  /* RNIC-PI 1.4 fast registration (emul_mem.c): a region of mr_alloc is
   * invalid (no rights, no length) until a FAST_REG executes, and again
   * after a Local Invalidate (or a Read with Invalidate, a Send with
   * Invalidate) of its key. */
  gboolean fr;             /* allocated by mr_alloc */
  gboolean valid;          /* fr: bound to memory by its last FAST_REG */
  uint32_t max_pages;      /* fr: capacity */
  gint queued;             /* fr: FAST_REGs naming it still queued (dereg: EBUSY) */
} emul_mr_t;

/* A memory window.  Its key lives in the region table as entry, so lookups
 * and the table exported to other processes see it like a region's; an
 * unbound window's entry has no rights.  A narrow window's exported entry
 * never has rights either: it answers only through its own QP, which
 * another process cannot check (windows are bound in-process only). */
typedef struct emul_mw {
  rnicpi_mw_t base;
  emul_mr_t entry;
  emul_mr_t *parent;       /* bound region (a reference to it), or NULL */
  struct emul_qp *qp;      /* narrow and bound: the QP it answers through */
  uint32_t access;         /* rights while bound */
  gint queued;             /* WRs naming it still queued on a send queue */
} emul_mw_t;

/* Work queues.  A send or receive WR kept past its post is an entry that
 * starts with the link of an intrusive FIFO (rnicpi_fifo_t, offset 0); the
 * queue keeps the entries it took back for the next post (rnicpi_cache_t),
 * so a post allocates nothing once the queue has been that deep.  Every
 * entry of a queue holds the most SGEs its posts may carry (checked before
 * they are queued). */
typedef struct emul_wqe {
  struct emul_wqe *next;
} emul_wqe_t;

typedef struct emul_wq {
  rnicpi_fifo_t q;
  rnicpi_cache_t free;     /* entries to reuse */
  size_t size;             /* bytes per entry */
} emul_wq_t;

static inline void
emul_wq_init(emul_wq_t *q, size_t base, uint32_t max_sge)
{
  rnicpi_fifo_init(&q->q, offsetof(emul_wqe_t, next));
  q->free.top = NULL;
  q->size = base + MAX(max_sge, 1u) * sizeof(rnicpi_sge_t);
}

/* A fresh entry, for a post of no more SGEs than the queue was made for. */
static inline void *emul_wq_get(emul_wq_t *q) { return rnicpi_cache_get(&q->free, q->size); }
/* An entry that left the queue is done with. */
static inline void emul_wq_put(emul_wq_t *q, void *entry) { rnicpi_cache_put(&q->free, entry); }
static inline gboolean emul_wq_empty(const emul_wq_t *q) { return rnicpi_fifo_empty(&q->q); }
static inline void *emul_wq_peek(const emul_wq_t *q) { return rnicpi_fifo_peek(&q->q); }
static inline void emul_wq_push(emul_wq_t *q, void *entry) { rnicpi_fifo_push(&q->q, entry); }
static inline void emul_wq_push_head(emul_wq_t *q, void *entry) { rnicpi_fifo_push_head(&q->q, entry); }
static inline void *emul_wq_pop(emul_wq_t *q) { return rnicpi_fifo_pop(&q->q); }

/* Free every entry, queued or kept (the queue is going away). */
static inline void
emul_wq_clear(emul_wq_t *q)
{
  void *e;
  while ((e = rnicpi_fifo_pop(&q->q)) != NULL)
    g_free(e);
  rnicpi_cache_clear(&q->free);
}

typedef struct emul_cq {
  rnicpi_cq_t base;
  rnicpi_cq_ring_t ring;   /* rnicpi_util: never drops, reports overflow once */
  gint nqp;
  /* The links of the QPs connected to another process that complete here
   * (emul_link_t.ring; added and removed with the fabric lock and the
   * link's held), under xlock: a busy poll walks it holding no other lock
   * and only tries each link's (emul_ring_poll_cq). */
  rnicpi_spin_t xlock;
  GPtrArray *xlinks;
} emul_cq_t;

typedef struct emul_conn emul_conn_t;
typedef struct emul_xconn emul_xconn_t; /* cross-process connection (emul_ring.h) */
typedef struct emul_pkt emul_pkt_t;     /* a request or an answer (below) */

/* A shared receive queue (emul_srq.c).  Its lock guards rq, max_wr,
 * limit and starved; it is a leaf but for a CQ's ring lock, taken under a
 * link's, the fabric lock or none (emul_rq_lock). */
typedef struct emul_srq {
  rnicpi_srq_t base;
  emul_pd_t *pd;
  rnicpi_spin_t lock;
  emul_wq_t rq;            /* emul_rwqe_t, shared by every QP that uses it */
  GList *qps;              /* emul_qp_t* taking receives from it (fabric lock) */
  uint32_t max_wr, max_sge;
  uint32_t limit;          /* armed limit event, 0 when none */
  gboolean starved;        /* a Send found it empty and waits for a receive (RNR): the next
                            * post runs the waiting senders (emul_post_srq_recv) */
} emul_srq_t;

typedef struct emul_qp {
  rnicpi_qp_t base;
  emul_pd_t *pd;
  emul_srq_t *srq;         /* receives come from it, or NULL (own rq) */
  emul_link_t *link;       /* in-process connection's data lock, or NULL (atomic) */
  GSList *old_links;       /* links it had before a reset (kept until destroy) */
  emul_cq_t *scq, *rcq;
  rnicpi_qp_state_t state;
  struct emul_qp *peer;
  emul_conn_t *conn;       /* pending connection this QP takes part in */
  emul_wq_t sq;            /* emul_swqe_t blocked behind a receiver not ready,
                            * or (cross-process) in flight */
  emul_wq_t rq;            /* emul_rwqe_t */
  rnicpi_qp_attr_t attr;
  uint32_t ird, ord;       /* negotiated */
  gboolean atomics;        /* connected, and both ends execute atomics */
  gboolean closing;        /* disconnect waits for outstanding requests */
  gboolean dialing;        /* its connect dials another process with the lock let go
                            * (emul_connect): no other connect or accept takes it */
  emul_xconn_t *x;         /* cross-process: the connection to the peer process */
  GQueue xin;              /* cross-process: peer's requests not yet executed (x_in_t*) */
  GQueue xans;             /* cross-process: the peer's answers queued behind a long
                            * Read Response's copy, that one first (x_in_t*) */
  uint64_t xin_bytes;      /* cross-process: the payload bytes xin holds (its bound,
                            * emul_ring.c x_xin_room) */
  gboolean xin_rnr;        /* cross-process: the first of them waits for a receive, or a
                            * Read for room for its answer (emul_ring_exec_in) */
  uint64_t next_seq;       /* cross-process: sequence number of the next WR */
  /* Cross-process: a one-sided RDMA whose copy (attach or into a mapped
   * region) runs with the fabric lock let go (emul_ring_copy.c, "Long
   * copies"). */
  gboolean xcopying;
  gboolean xcopy_flushed;  /* the QP was flushed meanwhile: the copier completes it flushed, then the rest */
  /* The copy is a Read Response's, for this Read (out of the send queue):
   * later posts go on into the ring behind it, none may complete first. */
  struct emul_swqe *xcopy_answered;
  /* Cross-process responder: a Send's payload pulled from the peer by
   * attach with the fabric lock let go (emul_ring_resp.c, "Long pulls"):
   * its receive is out of the queue, the peer's later requests wait. */
  gboolean rcopying;
  /* Threads waiting for this QP's xcopying and rcopying to clear (a reset,
   * a destroy: emul_qp_wait_copy): no new copy of its lets the fabric lock
   * go meanwhile (fabric lock). */
  guint copy_waiters;
  /* In process: a request of this QP, out of its send queue, whose payload
   * is copied with the link's lock let go (emul_link.c, "Long copies"; link
   * lock).  It still counts against max_send_wr. */
  gboolean lcopying;
  GList *mws;              /* emul_mw_t* narrow windows bound through it */
  gboolean ud;             /* an unreliable-datagram QP (emul_ud.c) */
  struct emul_xud *xud;    /* UD: its name for other processes (emul_ring_ud.c), or NULL */
  uint32_t qkey;           /* UD: the Q_Key datagrams must carry */
  /* UD: the destination its last datagram found in the table, good while
   * emul_fabric.ud_gen is still @ud_to_gen (its link) */
  uint32_t ud_to_qpn;
  struct emul_qp *ud_to;
  guint ud_to_gen;
} emul_qp_t;

/* The run-time knobs of a connection across processes, read from the
 * environment by the application's thread as it listens or connects
 * (emul_ring_cm.c): the progress thread never reads the environment. */
typedef struct emul_ring_knobs {
  gboolean no_cma;         /* ITAPI_EMUL_CMA=0 */
  gboolean no_trust;       /* ITAPI_EMUL_TRUST=0 */
  uint32_t timeout_ms;     /* ITAPI_EMUL_TIMEOUT_MS (0: never) */
} emul_ring_knobs_t;

typedef struct emul_listen {
  rnicpi_listen_t base;
  uint32_t port;
  struct x_lsock *xsock;   /* cross-process endpoint "itapi-emul/<port>" and the
                            * progress thread's watch of it, or NULL (emul_ring_listen.c) */
  emul_ring_knobs_t knobs; /* as it started listening */
} emul_listen_t;

typedef enum { CONN_REQUESTED, CONN_REPLIED } emul_conn_state_t;

struct emul_conn {
  uint64_t id;
  emul_conn_state_t state;
  emul_qp_t *active;
  emul_qp_t *passive;
  emul_listen_t *listener;
  uint32_t ird, ord;       /* requested by the active side */
  gboolean three_way;
  gboolean peer_atomics;   /* cross-process: the active side's device executes atomics */
  emul_xconn_t *x;         /* cross-process handshake: the peer's socket */
  gint64 deadline;         /* the active side gives up (timeout_us), or 0: never */
};

/* A send-queue WR kept past its post: blocked (in-process), or in flight
 * to another process until the peer answers (seq, issued). */
typedef struct emul_swqe {
  emul_wqe_t link;
  uint64_t seq;
  gboolean issued;
  uint32_t len;            /* issued: bytes of the request (its completion's) */
  rnicpi_send_wr_t wr;
  rnicpi_sge_t sge[];
} emul_swqe_t;

typedef struct emul_rwqe {
  emul_wqe_t link;
  uint64_t wr_id;
  uint32_t num_sge;
  rnicpi_sge_t sge[];
} emul_rwqe_t;

/* Work collected under the fabric lock, delivered after it is released:
 * the CQs to notify (each at most once: notifying disarms it). */
typedef rnicpi_notify_batch_t emul_work_t;

static inline emul_dev_t *to_emul_dev(rnicpi_dev_t *d) { return (emul_dev_t *) d; }
static inline emul_pd_t *to_emul_pd(rnicpi_pd_t *p) { return (emul_pd_t *) p; }
static inline emul_mr_t *to_emul_mr(rnicpi_mr_t *m) { return (emul_mr_t *) m; }
static inline emul_cq_t *to_emul_cq(rnicpi_cq_t *c) { return (emul_cq_t *) c; }
static inline emul_qp_t *to_emul_qp(rnicpi_qp_t *q) { return (emul_qp_t *) q; }
static inline emul_mw_t *to_emul_mw(rnicpi_mw_t *m) { return (emul_mw_t *) m; }
static inline emul_listen_t *to_emul_listen(rnicpi_listen_t *l) { return (emul_listen_t *) l; }
static inline emul_dev_t *emul_qp_dev(emul_qp_t *qp) { return to_emul_dev(qp->base.pd->dev); }
static inline const emul_pers_t *emul_pers_of_qp(emul_qp_t *qp) { return emul_qp_dev(qp)->pers; }
/* The device of @qp executes atomics (IB, or iWARP with ITAPI_EMUL_RFC7306). */
static inline gboolean emul_qp_atomics(emul_qp_t *qp)
{
  return (emul_qp_dev(qp)->caps.features & RNICPI_CAP_ATOMICS) != 0;
}

/* The provider object (emul_dev.c) and its tables, each beside the
 * functions it lists: device (emul_dev.c), memory (emul_mem.c), queues
 * (emul_qp.c), data path (emul_cq.c), CM (emul_cm.c), windows (emul_mw.c),
 * SRQs (emul_srq.c), datagrams (emul_ud.c). */
extern const rnicpi_provider_t RNICPI_PROVIDER_SELF(emul);
extern const rnicpi_device_ops_t emul_device_ops;
extern const rnicpi_mem_ops_t emul_mem_ops;
extern const rnicpi_queue_ops_t emul_queue_ops;
extern const rnicpi_data_ops_t emul_data_ops;
extern const rnicpi_cm_ops_t emul_cm_ops;

/* The operations the tables of another file list: the posts (emul_qp.c,
 * in emul_data_ops), the QP operations (emul_qp.c) and the CQ ones
 * (emul_cq.c, in emul_queue_ops). */
rnicpi_status_t emul_post_send(rnicpi_qp_t *q, const rnicpi_send_wr_t *wr);
rnicpi_status_t emul_post_recv(rnicpi_qp_t *q, const rnicpi_recv_wr_t *wr);
rnicpi_status_t emul_qp_create(rnicpi_pd_t *p, const rnicpi_qp_attr_t *attr, uint64_t ctx, rnicpi_qp_t **out);
rnicpi_status_t emul_qp_modify(rnicpi_qp_t *q, const rnicpi_qp_attr_t *attr);
rnicpi_status_t emul_qp_to_error(rnicpi_qp_t *q);
rnicpi_status_t emul_qp_reset(rnicpi_qp_t *q);
rnicpi_qp_state_t emul_qp_state(rnicpi_qp_t *q);
rnicpi_status_t emul_qp_destroy(rnicpi_qp_t *q);
rnicpi_status_t emul_cq_create(rnicpi_dev_t *d, uint32_t depth, uint64_t ctx, rnicpi_cq_t **out);
rnicpi_status_t emul_cq_destroy(rnicpi_cq_t *c);

void emul_fabric_init(void);
void emul_dev_ref(emul_dev_t *dev);
void emul_dev_unref(emul_dev_t *dev);

/* Deferred upcalls (never under the fabric lock), raised in order by the
 * event thread.  While a thread's emul_events_after names a connection to
 * another process, those it defers wait behind the socket messages queued
 * for that connection so far and are raised once they are sent
 * (emul_ring_msgs_then): an application that learns of a teardown from
 * its event, and exits, has had its message sent to the peer. */
typedef struct emul_upcall emul_upcall_t;
G_GNUC_INTERNAL extern __thread emul_xconn_t *emul_events_after __attribute__((tls_model("initial-exec")));
void emul_defer_cm(emul_dev_t *dev, const rnicpi_cm_event_t *ev);
void emul_defer_async(emul_dev_t *dev, rnicpi_async_type_t type, uint64_t ctx,
                      rnicpi_async_cause_t cause);
/* Hand @u to the event thread now. */
void emul_events_raise(emul_upcall_t *u);
/* @u joins @x's socket messages, raised once those ahead of it are sent
 * (fabric lock held); FALSE when none wait (raise it now). */
gboolean emul_ring_msgs_then(emul_xconn_t *x, emul_upcall_t *u);
void emul_qp_cm_event(emul_qp_t *qp, rnicpi_cm_event_type_t type,
                      const void *pdata, uint32_t pdata_len);

/* How a request failed at its responder.  Both sides get an affiliated
 * event, as vp/iwarp reports the Terminate it sends and the one it
 * receives: the responder what it found (emul_fault_responder), the
 * requester what the responder reported (emul_fault_requester). */
typedef enum {
  EMUL_FAULT_OP,           /* not executable: no receive, IRD 0, a misaligned atomic */
  EMUL_FAULT_RECV_LENGTH,  /* a Send longer than the receive it took */
  EMUL_FAULT_RECV_BUFFER,  /* the receive's own buffer could not be written */
  EMUL_FAULT_WRITE_ACCESS, /* memory rights: an RDMA Write's sink */
  EMUL_FAULT_READ_ACCESS,  /* an RDMA Read's source */
  EMUL_FAULT_ACCESS,       /* an atomic's target, a Send with Invalidate's key */
} emul_fault_t;

/* The requester's completion status of a request that failed with @f. */
static inline rnicpi_wc_status_t
emul_fault_status(emul_fault_t f)
{
  return f >= EMUL_FAULT_WRITE_ACCESS ? RNICPI_WC_REM_ACCESS_ERR : RNICPI_WC_REM_OP_ERR;
}

/* The memory rights fault of a request of opcode @op. */
static inline emul_fault_t
emul_access_fault(rnicpi_wr_opcode_t op)
{
  rnicpi_async_cause_t c = rnicpi_access_cause(op);
  return c == RNICPI_AE_WRITE_ACCESS ? EMUL_FAULT_WRITE_ACCESS
                                     : c == RNICPI_AE_READ_ACCESS ? EMUL_FAULT_READ_ACCESS
                                                                  : EMUL_FAULT_ACCESS;
}

static inline rnicpi_async_cause_t
emul_fault_responder(emul_fault_t f)
{
  switch (f) {
  case EMUL_FAULT_RECV_BUFFER: return RNICPI_AE_LOCAL_RECV;
  case EMUL_FAULT_WRITE_ACCESS: return RNICPI_AE_WRITE_ACCESS;
  case EMUL_FAULT_READ_ACCESS: return RNICPI_AE_READ_ACCESS;
  case EMUL_FAULT_ACCESS: return RNICPI_AE_ACCESS;
  default: return RNICPI_AE_PROTOCOL;
  }
}

static inline rnicpi_async_cause_t
emul_fault_requester(emul_fault_t f)
{
  switch (f) {
  case EMUL_FAULT_OP: return RNICPI_AE_REMOTE;
  case EMUL_FAULT_RECV_LENGTH: return RNICPI_AE_REMOTE_RECV_LENGTH;
  case EMUL_FAULT_RECV_BUFFER: return RNICPI_AE_REMOTE_RECV;
  default: return RNICPI_AE_REMOTE_ACCESS;
  }
}

/* The cause of a request that failed here with @st: a protection fault
 * in our own memory, or no detail (a window or registration refused). */
static inline rnicpi_async_cause_t
emul_local_cause(rnicpi_wc_status_t st)
{
  return st == RNICPI_WC_LOC_PROT_ERR ? RNICPI_AE_LOCAL : RNICPI_AE_UNSPECIFIED;
}

/* Raise @qp's affiliated event of @cause (deferred). */
void emul_qp_async(emul_qp_t *qp, rnicpi_async_cause_t cause);

/* Work queue entries (fabric lock held): a local request executed on a
 * cross-process QP; a copy of a send-queue WR at the tail of qp->sq (a
 * window or region it names is busy until) the end of the entry; a copy of
 * a receive WR at the tail of @q. */
gboolean emul_qp_exec_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w);
emul_swqe_t *emul_swqe_keep(emul_qp_t *qp, const rnicpi_send_wr_t *wr);
void emul_swqe_done(emul_qp_t *qp, emul_swqe_t *s);
void emul_rwqe_keep(emul_wq_t *q, const rnicpi_recv_wr_t *wr);

/* Memory (the fabric lock, or a link's on the fast path).  The lookups
 * are on every data path. */
/* The entry of slot @idx, or NULL (no lock needed: emul_fabric). */
static inline emul_mr_t *
emul_mr_slot(uint32_t idx)
{
  return idx < emul_fabric.mr_cap ? __atomic_load_n(&emul_fabric.mr_tab[idx], __ATOMIC_ACQUIRE) : NULL;
}
/* Publish @mr (whole) in its slot, or empty slot @idx (@mr NULL); fabric
 * lock held.  An emptied entry is freed only after emul_links_pass and
 * emul_mr_release. */
void emul_mr_slot_set(uint32_t idx, emul_mr_t *mr);
/* Wait until no fast path can still hold an entry taken out of the table
 * before this call, and no in-process long copy runs that began before it
 * (fabric lock held): a window or fast-registration region enters the
 * table. */
void emul_links_quiesce(void);
/* An entry left the table (fabric lock held): wait until no fast path
 * still looks at it.  A long copy, in-process or cross-process, holds the
 * regions it uses by reference instead, which emul_mr_release waits for. */
void emul_links_pass(void);
/* References to regions (emul_mr_t.ref).  emul_mr_get and emul_mr_put
 * count a holder (a long copy in flight, a window bound to the region,
 * emul_mw.c); a get is made only where the entry cannot leave the
 * table under the caller: the fabric lock held, or the link's lock (its
 * removal quiesces every link before it lets the table's reference go). */
static inline void emul_mr_get(emul_mr_t *mr) { g_atomic_int_inc(&mr->ref); }
static inline void emul_mr_put(emul_mr_t *mr) { (void) g_atomic_int_dec_and_test(&mr->ref); }
/* @mr left the table and its quiesce is over (fabric lock held): the
 * table's reference goes, then this waits, letting the fabric lock go,
 * until no holder is left (rxe's cleanup waits for its completion); the
 * caller then frees it.  No new holder comes once the slot is empty. */
void emul_mr_release(emul_mr_t *mr);
/* The regions one long copy touches, each held by reference while it runs
 * with the locks let go (emul_exec.c): its local list, the receive's list
 * a Send lands in, the target of an RDMA Write or Read.  A window's key
 * holds the region the window is bound to. */
#define EMUL_HOLD_MAX 80
typedef struct emul_hold {
  guint n;
  emul_mr_t *mr[EMUL_HOLD_MAX];
} emul_hold_t;
/* Hold the region behind each SGE of @s that moves bytes, or behind @key;
 * FALSE, with what it held so far kept in @h, when an entry is no longer
 * in the table (it left since the caller checked it) or @h is full. */
gboolean emul_hold_sges(emul_hold_t *h, const emul_pers_t *p, const rnicpi_sge_t *s, uint32_t n);
gboolean emul_hold_key(emul_hold_t *h, const emul_pers_t *p, uint64_t key);
/* Put every reference @h holds (no lock needed). */
void emul_hold_drop(emul_hold_t *h);
/* The rights of a region (emul_mr_modify changes them under the fabric
 * lock while the fast path reads them). */
static inline uint32_t emul_mr_access(const emul_mr_t *mr)
{
  return __atomic_load_n(&mr->access, __ATOMIC_RELAXED);
}
/* A window or fast-registered region enters the table (fabric lock held):
 * every link is taken and released first, so a fast path that holds its
 * link's lock never sees such an entry appear (emul_key_fixed). */
void emul_mr_mutable_enter(void);
/* Index and tag of @key in @p's layout; FALSE when it has other bits set. */
static inline gboolean
emul_key_split(const emul_pers_t *p, uint64_t key, uint32_t *index, uint32_t *tag)
{
  if (key & ~p->key_bits)
    return FALSE;
  *index = (uint32_t) (key >> p->index_shift) & p->index_mask;
  *tag = (uint32_t) (key >> p->tag_shift) & p->tag_mask;
  return TRUE;
}

/* The region or window entry of @key, or NULL. */
static inline emul_mr_t *
emul_mr_lookup(const emul_pers_t *p, uint64_t key)
{
  uint32_t idx, tag;
  if (!emul_key_split(p, key, &idx, &tag) || idx == 0)
    return NULL;
  emul_mr_t *mr = emul_mr_slot(idx);
  if (mr == NULL || mr->pers != p || mr->key != tag)
    return NULL;
  return mr;
}
/* Whether @key names no entry, or one whose fields never change: not a
 * window's nor a fast-registered region's (a bind, a fast registration, an
 * invalidation change theirs under the fabric lock).  The fast path, which
 * holds a link's lock alone, goes on only with such keys and leaves a
 * request naming any other to the fabric lock: none can appear in the slot
 * while it holds its link (emul_mr_mutable_enter).  Only fields set before
 * the entry was published are read, never its tag; nothing at all while
 * no such entry exists in the process (emul_fabric.nmutable, read under
 * the link's lock: the common case costs one load per request). */
static inline gboolean
emul_mutable_none(void)
{
  return g_atomic_int_get(&emul_fabric.nmutable) == 0;
}
static inline gboolean
emul_key_fixed(const emul_pers_t *p, uint64_t key)
{
  uint32_t idx, tag;
  if (emul_mutable_none() || !emul_key_split(p, key, &idx, &tag))
    return TRUE;
  const emul_mr_t *mr = emul_mr_slot(idx);
  return mr == NULL || (mr->mw == NULL && !mr->fr);
}
/* emul_key_fixed for the key of every SGE of @s that moves bytes. */
static inline gboolean
emul_sges_fixed(const emul_pers_t *p, const rnicpi_sge_t *s, uint32_t n)
{
  if (emul_mutable_none())
    return TRUE;
  for (uint32_t i = 0; i < n; i++)
    if (s[i].length > 0 && !emul_key_fixed(p, s[i].lkey))
      return FALSE;
  return TRUE;
}
gboolean emul_slot_alloc(emul_mr_t *mr, const emul_pers_t *p);
uint32_t emul_slot_new_tag(const emul_pers_t *p, uint32_t index);
/* Random bits for the keys this thread is about to make, drawn before it
 * takes the fabric lock (emul_mem.c). */
void emul_random_ready(void);
/* 32 random bits from this thread's pool (filled by emul_random_ready). */
uint32_t emul_random_u32(void);
/* A forked child draws its own (pthread_atfork: the parent's pool is not
 * its to repeat). */
void emul_random_forget(void);
static inline uint64_t emul_key_make(const emul_pers_t *p, uint32_t index, uint32_t tag)
{
  return ((uint64_t) index << p->index_shift) | ((uint64_t) tag << p->tag_shift);
}

/* Memory windows (emul_mw.c; fabric lock held). */
extern const rnicpi_mw_ops_t emul_mw_ops;
uint32_t emul_key_access(const emul_mr_t *mr, const emul_qp_t *qp);
rnicpi_status_t emul_mw_post_check(emul_qp_t *qp, rnicpi_send_wr_t *wr);
/* Whether emul_mw_post_check has anything to check in @wr: it names a
 * window, a fast-registered region or a sink window (a plain send, write,
 * read or atomic does not). */
static inline gboolean
emul_mw_post_relevant(const rnicpi_send_wr_t *wr)
{
  const uint32_t ops = 1u << RNICPI_WR_BIND_MW | 1u << RNICPI_WR_LOCAL_INV | 1u << RNICPI_WR_SEND_INV |
                       1u << RNICPI_WR_FAST_REG | 1u << RNICPI_WR_RDMA_READ_INV;
  return (wr->flags & RNICPI_WR_SINK_MW) || ((1u << wr->opcode) & ops);
}
rnicpi_wc_status_t emul_mw_bind(emul_qp_t *qp, const rnicpi_send_wr_t *wr);
gboolean emul_mw_invalidate(emul_qp_t *qp, uint64_t key);
/* Fast registration (emul_mem.c; fabric lock held). */
rnicpi_wc_status_t emul_fr_exec(emul_qp_t *qp, const rnicpi_send_wr_t *wr);
void emul_fr_invalidate(emul_mr_t *mr);
void emul_mw_qp_gone(emul_qp_t *qp);

/* Personality rules (emul_dev.c). */
uint32_t emul_pers_local_need(const emul_pers_t *p, rnicpi_wr_opcode_t op);
static inline gboolean emul_is_rd_atomic(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_RDMA_READ || op == RNICPI_WR_RDMA_READ_INV || rnicpi_wr_is_atomic(op);
}

/* Completion queues. */
void emul_cq_push(emul_cq_t *cq, const rnicpi_wc_t *wc, emul_work_t *w);
/* The link @l of a QP connected to another process joins (@join) or
 * leaves the lists of its CQs (emul_cq_t.xlinks; the fabric lock and @l's
 * held). */
void emul_cq_ring_link(emul_link_t *l, gboolean join);
/* Take and let go every CQ's xlock (a fork, after every link's). */
void emul_cqs_lock_all(void);
void emul_cqs_unlock_all(void);
/* Deliver what @w collected (no lock held); nothing to do is the usual case. */
static inline void
emul_work_deliver(emul_work_t *w)
{
  if (rnicpi_notify_batch_pending(w))
    rnicpi_notify_batch_deliver(w);
}

/* Completions (emul_comp.c). */
/* The completer (rxe_completer), @qp's lock held: the requests the peer's
 * ACK word covers complete in order, then answer @ans (NULL: none), which
 * must be the oldest unanswered request's (else a protocol violation: the
 * connection breaks).  A Read Response's bytes land in its sink (with the
 * locks let go for a long one when ans->unlock), an atomic's old value in
 * its 8 bytes, and the request completes.  @ans NULL: TRUE when a request
 * completed; else TRUE when @ans completed and the connection stands. */
gboolean emul_comp_run(emul_qp_t *qp, const emul_pkt_t *ans, emul_work_t *w);
void emul_complete(emul_cq_t *cq, emul_qp_t *qp, uint64_t wr_id, rnicpi_wc_opcode_t op,
                   rnicpi_wc_status_t st, uint32_t len, emul_work_t *w);
void emul_complete_send(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st,
                        uint32_t len, emul_work_t *w);
/* Copy @n bytes; a few loads and stores, no call, up to 16 (the latency
 * case of one-sided RDMA), memcpy beyond. */
static inline void
emul_copy(uint8_t *dst, const uint8_t *src, uint64_t n)
{
  if (n > 16) {
    memcpy(dst, src, n);
  } else if (n >= 8) {
    uint64_t a, b;
    memcpy(&a, src, 8);
    memcpy(&b, src + n - 8, 8);
    memcpy(dst, &a, 8);
    memcpy(dst + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, src, 4);
    memcpy(&b, src + n - 4, 4);
    memcpy(dst, &a, 4);
    memcpy(dst + n - 4, &b, 4);
  } else {
    for (uint64_t i = 0; i < n; i++)
      dst[i] = src[i];
  }
}

/* Copy the last piece of a message into its place: emul_copy, with the
 * message's last byte stored last (rnicpi_place says why). */
static inline void
emul_place(uint8_t *dst, const uint8_t *src, uint64_t n)
{
  if (n == 0)
    return;
  emul_copy(dst, src, n - 1);
  __atomic_store_n(dst + n - 1, src[n - 1], __ATOMIC_RELEASE);
}

/* Whether [@addr, @addr + @len) lies within [@start, @start + @length):
 * the bounds rule of every key, local or remote, region or window, written
 * so that no sum can wrap. */
static inline gboolean
emul_range_holds(uint64_t start, uint64_t length, uint64_t addr, uint64_t len)
{
  return addr >= start && len <= length && addr - start <= length - len;
}

/* What a key grants one one-sided access at a responder, read from either
 * table that holds it: the responder's own region table (emul_remote_range,
 * in its process) or the copy it exports to a peer in another process
 * (emul_ring_copy.c, x_grant).  @access holds the key's rights for this
 * access, 0 when the key answers not at all (another protection domain, or
 * a window bound to another QP); @qp_access the responder QP's remote
 * rights; [@iova, @iova + @length) the key's range. */
typedef struct emul_grant {
  uint32_t access;
  uint32_t qp_access;
  uint64_t iova;
  uint64_t length;
} emul_grant_t;

/* The responder's rule, one for both tables: @g holds the rights @need, in
 * the key and in the QP, over [@raddr, @raddr + @len). */
static inline gboolean
emul_grant_allows(const emul_grant_t *g, uint32_t need, uint64_t raddr, uint64_t len)
{
  return (g->access & need) == need && (g->qp_access & need) == need &&
         emul_range_holds(g->iova, g->length, raddr, len);
}

/* The region of @qp's domain with rights @need whose memory holds local
 * SGE @s (of any length), or NULL. */
static inline emul_mr_t *
emul_sge_region(emul_qp_t *qp, const rnicpi_sge_t *s, uint32_t need)
{
  emul_mr_t *mr = emul_mr_lookup(emul_pers_of_qp(qp), s->lkey);
  /* A window's key is a remote key only (IBTA 10.6.7; RDMAC verbs 7.2.7). */
  if (mr == NULL || mr->mw != NULL || mr->pd != qp->pd || (emul_mr_access(mr) & need) != need)
    return NULL;
  return emul_range_holds((uint64_t) (uintptr_t) mr->addr, mr->length, s->addr, s->length) ? mr : NULL;
}
gboolean emul_sges_ok(emul_qp_t *qp, const rnicpi_sge_t *s, uint32_t n, uint32_t need,
                      uint64_t *total);
/* Scatter entries of a Read into windows (the IB personality's maximum). */
#define EMUL_MAX_SINK_SGE 32
/* Work requests a queue pair's send queue holds at most (max_qp_wr): also
 * the most requests a peer process may have waiting to execute here. */
#define EMUL_MAX_QP_WR (1u << 14)
/* The requester's local rule, for every request that moves bytes, in
 * process or across (written once): its own list (each SGE in a region of
 * the QP's domain with the rights the personality asks of its opcode; an
 * atomic's one SGE of 8 bytes), or, for a read sink of windows
 * (#RNICPI_WR_SINK_MW), the windows' ranges translated to our addresses
 * in @win (EMUL_MAX_SINK_SGE entries); NULL when the check fails
 * (RNICPI_WC_LOC_PROT_ERR).  Where the bytes land is decided by the check
 * as it stands at that moment: a window unbound since the post is
 * refused. */
const rnicpi_sge_t *emul_req_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_sge_t *win,
                                    uint64_t *len);
/* Read with Local Invalidate (RDMAC verbs; RNIC-PI 1.4): once the data of
 * @wr landed and before its completion, the sink key dies.  FALSE when it
 * names no window or fast-registered region the QP may invalidate
 * (RNICPI_WC_MEM_MGT_ERR); TRUE for any other request. */
gboolean emul_read_inv_done(emul_qp_t *qp, const rnicpi_send_wr_t *wr);

/* The responder's rules, whichever transport brought the request
 * (emul_resp.c).  A refusal names its fault in @f; the caller reports it. */
/* The responder's IRD: negotiated, and lowered since by qp_modify. */
uint32_t emul_resp_ird(const emul_qp_t *resp);
/* The responder's bytes of a remote range: the key's entry of @resp's
 * domain granting @need, the QP granting it too, and the range within the
 * entry; NULL when any of that fails. */
uint8_t *emul_remote_range(emul_qp_t *resp, uint64_t raddr, uint64_t rkey, uint64_t len,
                           uint32_t need);
/* The bytes an RDMA Write, RDMA Read or atomic (@op) of @len bytes at
 * @raddr under @rkey reaches at @resp, checked as a responder does (IRD for
 * a Read or atomic, an atomic's alignment, rights and bounds); NULL with
 * the fault.  A zero-length Write or Read reaches "" (no memory). */
uint8_t *emul_resp_target(emul_qp_t *resp, rnicpi_wr_opcode_t op, uint64_t raddr, uint64_t rkey,
                          uint64_t len, emul_fault_t *f);
/* Execute an atomic on the 8 bytes at @t (Fetch and Add with @fetch_add,
 * else Compare and Swap); returns the value before it. */
uint64_t emul_resp_atomic(uint8_t *t, gboolean fetch_add, uint64_t compare_add, uint64_t swap);
/* The receive a Send takes at @resp (with @inv, a Send with Invalidate of
 * @inv_key, whose key dies first), popped; NULL when there is none, with
 * *@blocked when the Send waits for one (receiver not ready, InfiniBand),
 * else the fault. */
emul_rwqe_t *emul_resp_recv_take(emul_qp_t *resp, gboolean inv, uint64_t inv_key, gboolean *blocked,
                                 emul_fault_t *f);
/* The head of @resp's receive queue (its SRQ's), popped with the queue's
 * lock held (emul_rq_lock; let go here), and the SRQ's limit event if the
 * take crossed it.  emul_resp_recv_put: receive @r, taken, back to its
 * queue's free list, done. */
emul_rwqe_t *emul_resp_recv_pop(emul_qp_t *resp);
void emul_resp_recv_put(emul_qp_t *resp, emul_rwqe_t *r);
/* Whether receive @r (taken) can hold @len bytes in memory the QP may
 * write; if not, @r completes with its error and the fault is in @f. */
gboolean emul_resp_recv_fits(emul_qp_t *resp, emul_rwqe_t *r, uint64_t len, emul_fault_t *f,
                             emul_work_t *w);
/* Receive @r (taken, and checked by emul_resp_recv_fits for 0 bytes) is
 * consumed by immediate data @imm (RNIC-PI 1.5; the bits the personality
 * carries) after an RDMA Write of @len bytes (0: alone): placed in it
 * where the personality does, and completed. */
void emul_resp_recv_imm(emul_qp_t *resp, emul_rwqe_t *r, uint64_t imm, uint64_t len, emul_work_t *w);
/* Receive @r holds the Send's @len bytes: its completion. */
void emul_resp_recv_done(emul_qp_t *resp, emul_rwqe_t *r, uint64_t len, gboolean inv, uint64_t inv_key,
                         emul_work_t *w);
/* How a request's execution ended: completed; blocked (a Send finding no
 * receive waits, queued, and so does every request behind it); or failed
 * (completed with its error, the connection broken).  A transport's place
 * (emul_xport.h) may also say: not placed by it (the request goes as a
 * packet), or owed (nothing done: a long copy a drain found is left to the
 * drainer). */
typedef enum { EMUL_EXEC_DONE, EMUL_EXEC_BLOCKED, EMUL_EXEC_FAILED, EMUL_EXEC_NOT, EMUL_EXEC_OWED } emul_exec_t;

/* The requester's failures (emul_comp.c), for both transports: a local one
 * (@st) completes @wr and breaks the connection; a remote one (@f, found
 * by the requester in the peer's memory) also tells the responder. */
void emul_req_fail_local(emul_qp_t *qp, const rnicpi_send_wr_t *wr, rnicpi_wc_status_t st, emul_work_t *w);
void emul_req_fail_remote(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_fault_t f, emul_work_t *w);
void emul_sg_copy(const rnicpi_sge_t *s, uint32_t n, uint8_t *buf, gboolean to_buf);
/* Scatter @len bytes of @buf over a receive's list (checked), as far as it
 * holds them, the last byte last (emul_place). */
void emul_scatter(const rnicpi_sge_t *s, uint32_t n, const uint8_t *buf, uint64_t len);
/* emul_scatter from byte @skip of the list on: the pieces of one message
 * that does not lie in one place (a ring frame that wraps its end). */
void emul_scatter_at(const rnicpi_sge_t *s, uint32_t n, uint64_t skip, const uint8_t *buf, uint64_t len);
/* The requester (emul_req.c), @qp's lock held: issue the send queue's
 * requests not yet issued, in order, as far as RC ordering and the ORD
 * allow.  @draining: from a drain of the ring (a long copy is left to the
 * drainer). */
void emul_req_run(emul_qp_t *qp, gboolean draining, emul_work_t *w);
/* A post on a QP connected to another process (emul_req.c; @qp's lock
 * held): the requester's fast case first (emul_ring_hot), then the request
 * queued and emul_req_run. */
rnicpi_status_t emul_req_post(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w);

/* The executor of each opcode in process (emul_exec.c): a post runs it at
 * once when nothing is queued (emul_qp.c), emul_req_run when what blocked
 * it came. */
typedef emul_exec_t (*emul_exec_fn)(emul_qp_t *, const rnicpi_send_wr_t *, emul_work_t *);
G_GNUC_INTERNAL extern const emul_exec_fn emul_exec_of[RNICPI_WR_OPCODE_COUNT];
/* The executor of the requests that reach the peer (Send, RDMA Write and
 * Read, atomics, immediate data) in process: the in-process transport's
 * (emul_xport_local.c). */
emul_exec_t emul_xport_local_exec(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w);
/* Links (emul_link.c).  Take @l's lock once no copy runs with it let go
 * (every taker but the fast path's post waits so). */
void emul_link_lock_idle(emul_link_t *l);
/* @qp leaves its link (reset, destroy; fabric lock and the link's held),
 * keeping the reference; at destroy it drops every reference it holds
 * (fabric lock held). */
G_GNUC_INTERNAL void emul_link_leave(emul_qp_t *qp);
G_GNUC_INTERNAL void emul_links_release(emul_qp_t *qp);
/* Fabric lock held: let it go for the @n-th time of a wait (backing off
 * the longer, the more), and take it back. */
G_GNUC_INTERNAL void emul_fabric_let_go(unsigned n);
/* A request's payload copy of @len bytes (emul_exec.c; @qp's link held):
 * when it is long, the link's lock is let go, and the fabric lock too
 * when this thread holds it and nobody waits for such copies; begin
 * returns the link it let go (NULL: nothing), for end to take back. */
G_GNUC_INTERNAL emul_link_t *emul_link_copy_begin(emul_qp_t *qp, uint64_t len);
G_GNUC_INTERNAL void emul_link_copy_end(emul_qp_t *qp, emul_link_t *l);
/* Fabric lock held: wait, letting it go meanwhile, until no copy of @qp
 * runs with it let go (a request's, emul_ring_copy.c "Long copies"; a
 * Send's payload pulled, emul_ring_resp.c "Long pulls"): what changes
 * @qp's state or frees it calls this first. */
void emul_qp_wait_copy(emul_qp_t *qp);
/* Fabric lock held: wait, letting it go meanwhile, for every in-process
 * copy that let the fabric lock go (emul_link_t.fcopy), none beginning
 * meanwhile: a window or fast-registration region entering the table.
 * Afterwards, while the caller holds the fabric lock, an in-process copy
 * still running is one under its link alone, which needs only that lock
 * back.  A cross-process copy reads no key once its checks are made under
 * the lock, and holds the regions it uses by reference: none is waited for. */
void emul_wait_copies(void);
/* The same for every copy, in-process or cross-process (emul_fabric.xcopies),
 * none beginning meanwhile: a fork, whose child must find none running. */
void emul_wait_all_copies(void);
/* Fabric lock held: @wr, whose copy ran while @qp was flushed, completes
 * flushed, then the send queue behind it. */
void emul_qp_copy_flushed(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w);
/* The same for a request whose long copy ended whole although the QP was
 * flushed meanwhile (its bytes are where it sent or fetched them): it
 * completes successfully with @len, then the rest of the queues flush. */
void emul_qp_copy_whole(emul_qp_t *qp, const rnicpi_send_wr_t *wr, uint32_t len, emul_work_t *w);
/* Fabric lock held: take also @qp's link lock, when it has a link, once
 * no long copy runs with it let go; meanwhile the fabric lock is let go
 * too (the copier may need it back), so the caller reads nothing it needs
 * before this call.  Give what it returned back to emul_link_drop. */
emul_link_t *emul_link_take(emul_qp_t *qp);
/* The same for a post, which queues its work behind a long copy running
 * (emul_link.c, "Long copies"): the link's lock, whether or not a copy runs. */
emul_link_t *emul_link_take_post(emul_qp_t *qp);
static inline void emul_link_drop(emul_link_t *l)
{
  if (l != NULL)
    rnicpi_spin_unlock(&l->lock);
}
/* Fabric lock and @l's held (or @l NULL): run what posts queued on its
 * QPs while a long copy had the lock let go (emul_link_t.again). */
void emul_link_settle(emul_link_t *l, emul_work_t *w);
/* Take @l's lock, whether or not a copy runs with it let go; a busy poll
 * passes the link over while a thread waits here (emul_link_t.wanted). */
void emul_link_lock(emul_link_t *l);
/* Fabric lock held: let a reference to @l go (a QP's, or the progress
 * thread's while it drains a ring under the link alone); the last frees it. */
void emul_link_unref(emul_link_t *l);
/* Give the two QPs of a new in-process connection one link (establish). */
void emul_link_join(emul_qp_t *a, emul_qp_t *p);
/* Give the QP of a new connection to another process a link of its own
 * (emul_ring_cm.c, established): its latency posts take that lock alone
 * (emul_qp.c, "The fast path"). */
void emul_link_join_ring(emul_qp_t *qp);
/* Give a UD QP a link of its own (create): its receive queue and state
 * are guarded by it, so that a datagram's post and delivery and a
 * receive's post take that lock alone (emul_ud.c, "Locks"). */
void emul_link_join_ud(emul_qp_t *qp);
/* Lock and unlock every link (a fork: pthread_atfork). */
void emul_links_lock_all(void);
void emul_links_unlock_all(void);
void emul_qp_set_error(emul_qp_t *qp, emul_work_t *w);
/* @qp's connection ended, whichever transport says so: its event @t (with
 * the peer's private data) if it was connected, then ERROR, flushed. */
void emul_qp_end(emul_qp_t *qp, rnicpi_cm_event_type_t t, const void *pdata, uint32_t len,
                 emul_work_t *w);
void emul_qp_break(emul_qp_t *qp, emul_work_t *w, gboolean orderly,
                   const void *pdata, uint32_t pdata_len);
void emul_cm_qp_gone(emul_qp_t *qp, emul_work_t *w);
/* IRD and ORD settle when a connection is established, in process or
 * across processes: @qp's ORD to the peer's IRD, its IRD to the peer's
 * ORD, each within what @qp asked for (emul_cm.c). */
void emul_cm_settle(emul_qp_t *qp, uint32_t peer_ird, uint32_t peer_ord);
void emul_cm_conn_drop(emul_conn_t *c);
void emul_cm_unreachable(emul_qp_t *qp, rnicpi_cm_reason_t why);
void emul_cm_request_cancelled(emul_conn_t *c);
/* The active side of @c gives up after @timeout_us (0: never, the
 * default) unless an answer came (fabric lock held). */
void emul_cm_arm(emul_conn_t *c, uint64_t timeout_us);
/* Ends the connects whose deadline passed; returns the microseconds to
 * the next deadline, or -1 when none (the event thread). */
gint64 emul_cm_expire(void);
/* Wakes the event thread to look at the deadlines again. */
void emul_events_wake(void);
void emul_cm_fill_pdata(rnicpi_cm_event_t *ev, const void *pdata, uint32_t len);

/* First cross-process use (emul_progress.c): the region table and the
 * progress thread, made once; no lock held (a listener, a connect, a UD QP
 * call it before they take the fabric lock). */
gboolean emul_ring_init(void);
/* Cross-process path (emul_ring_listen.c, emul_ring_cm.c,
 * emul_ring_teardown.c, emul_ring_copy.c, emul_ring_resp.c, emul_export.c;
 * fabric lock held). */
/* A listener's socket for other processes is bound before the fabric lock
 * is taken (emul_ring_listen_open: a descriptor, or -1 where the port is
 * another process's or there is no cross-process path), becomes @l's under
 * it (emul_ring_listen) and is watched once it is let go
 * (emul_ring_listen_start).  Unlisten (lock held) cuts it from @l and
 * refuses the requests nobody answered; what it returns is closed with the
 * lock let go (emul_ring_listen_close). */
int emul_ring_listen_open(uint32_t port);
void emul_ring_listen(emul_listen_t *l, int fd);
void emul_ring_listen_start(emul_listen_t *l);
struct x_lsock *emul_ring_unlisten(emul_listen_t *l, emul_work_t *w);
void emul_ring_listen_close(struct x_lsock *s);
/* A connect to another process's listener: its socket dialled, the
 * connection segment and the bell made with no lock held
 * (emul_ring_dial_open: FALSE when nobody listens at @port), made a
 * connection under the fabric lock (emul_ring_connect, which takes them
 * all); what is left closed with the lock let go (emul_ring_dial_close). */
typedef struct emul_dial {
  int fd;
  int seg_fd;
  int bell_fd;
  void *seg;     /* or NULL */
  int pid;
  int pidfd;     /* pins the listener's process (emul_ring_copy.c), or -1 */
  uid_t uid;     /* the listener's effective user */
  uint64_t nonce;  /* the connection's (emul_ring_cm.c, Trust) */
} emul_dial_t;
#define EMUL_DIAL_NONE ((emul_dial_t) { .fd = -1, .seg_fd = -1, .bell_fd = -1, .pidfd = -1 })
gboolean emul_ring_dial_open(uint32_t port, emul_dial_t *d);
void emul_ring_dial_close(emul_dial_t *d);
void emul_ring_connect(emul_qp_t *qp, emul_dial_t *d, gboolean v6, const rnicpi_conn_param_t *p);
rnicpi_status_t emul_ring_accept(emul_qp_t *qp, emul_conn_t *c, const rnicpi_conn_param_t *p);
void emul_ring_reject(emul_conn_t *c, const void *pdata, uint32_t len, emul_work_t *w);
void emul_ring_qp_gone(emul_qp_t *qp, emul_conn_t *c, emul_work_t *w);
void emul_ring_break(emul_qp_t *qp, emul_work_t *w, gboolean orderly,
                  const void *pdata, uint32_t pdata_len);
/* Break @qp's connection for its request's remote failure @f: @qp gets
 * the requester's affiliated event, the peer process's QP the
 * responder's, each with its BROKEN, after the BREAK is sent. */
void emul_ring_break_fault(emul_qp_t *qp, emul_work_t *w, emul_fault_t f);
/* Break @qp's connection for its request's local failure: @qp's
 * affiliated event @cause with its BROKEN, after the BREAK is sent. */
void emul_ring_break_local(emul_qp_t *qp, emul_work_t *w, rnicpi_async_cause_t cause);
/* The requester's fast case of a post (emul_ring_copy.c), @wr of its shape
 * (emul_req_hot_shape), @qp's lock held: a Send next to issue by the
 * issued-prefix rule (emul_req_next) pushed whole with the short header
 * when its local SGE passes the cache of the region last checked
 * (emul_ring_hot_local), kept issued after; an RDMA Write or Read with
 * nothing queued whose target the grant cache (x->hot) holds, made at
 * once.  @alone: the caller holds the QP's link and not the fabric lock;
 * only then is an attach call made here (under the fabric lock it is
 * x_direct's, which lets that lock go for it).  FALSE, with nothing done,
 * when it does not apply. */
gboolean emul_ring_hot(emul_qp_t *qp, const rnicpi_send_wr_t *wr, gboolean alone, emul_work_t *w);

/* The requester's issued-prefix rule: the requests issued are a prefix of
 * the send queue, so a request posted now is the next to issue when the
 * last one queued is issued; a local fence waits for every earlier request
 * (a Read's answer may still be writing what it reads). */
static inline gboolean
emul_req_next(const emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  const emul_swqe_t *last = (const emul_swqe_t *) qp->sq.q.tail;
  return last == NULL || (last->issued && !(wr->flags & RNICPI_WR_LOCAL_FENCE));
}

/* Whether @wr has the shape of the requester's fast case: one SGE, a
 * Send, RDMA Write or Read that names no sink window. */
static inline gboolean
emul_req_hot_shape(const rnicpi_send_wr_t *wr)
{
  return wr->num_sge == 1 && !(wr->flags & RNICPI_WR_SINK_MW) &&
         (wr->opcode == RNICPI_WR_SEND || wr->opcode == RNICPI_WR_RDMA_WRITE ||
          wr->opcode == RNICPI_WR_RDMA_READ);
}

gboolean emul_ring_outstanding(emul_qp_t *qp);
void emul_ring_recv_posted(emul_qp_t *qp, emul_work_t *w);
/* Whether a receive posted to @qp (connected to another process, its link
 * held) needs nothing but that lock: no Send of the peer waits for a
 * receive, and the connection owes the ring no frame (emul_ring_recv_posted
 * then does nothing). */
gboolean emul_ring_recv_alone(const emul_qp_t *qp);
void emul_ring_access_changed(emul_qp_t *qp);
void emul_ring_mr_sync(uint32_t index);

/* Shared receive queues (emul_srq.c).  A responder's receive queue is its
 * own (guarded by its link's lock or the fabric lock) or its SRQ's, which
 * is touched only under the SRQ's lock: emul_rq_lock and emul_rq_unlock
 * take and let go that lock, and nothing for a QP without an SRQ. */
static inline emul_wq_t *emul_qp_rq(emul_qp_t *qp) { return qp->srq != NULL ? &qp->srq->rq : &qp->rq; }
static inline void emul_rq_lock(emul_qp_t *qp)
{
  if (qp->srq != NULL)
    rnicpi_spin_lock(&qp->srq->lock);
}
static inline void emul_rq_unlock(emul_qp_t *qp)
{
  if (qp->srq != NULL)
    rnicpi_spin_unlock(&qp->srq->lock);
}
/* A receive was taken from @srq (its lock held): TRUE once when that left
 * fewer receives than the armed limit, which it disarms; the caller raises
 * the event (emul_srq_limit) once it let the lock go. */
gboolean emul_srq_took(emul_srq_t *srq);
void emul_srq_limit(emul_srq_t *srq);
extern const rnicpi_srq_ops_t emul_srq_ops;

/* Unreliable datagrams, address handles, UD service resolution (emul_ud.c).
 * The _locked ones run under the fabric lock. */
extern const rnicpi_ud_ops_t emul_ud_ops;
/* Remove @qp from the UD table (destroy; fabric lock held, and not its
 * link): then every link is taken once, so that no sender still holds it
 * as the destination it found last (emul_qp_t.ud_to). */
void emul_ud_qp_add_locked(emul_qp_t *qp);
void emul_ud_qp_gone_locked(emul_qp_t *qp);
/* A listener goes: its unanswered service requests get "no service", at
 * once from this process, with the lock let go from another: those are
 * returned, for emul_ud_svc_refuse (no lock held). */
GSList *emul_ud_unlisten_locked(emul_listen_t *l);
void emul_ud_svc_refuse(GSList *away);
/* A datagram on its way to a UD QP: the GRH and payload (@len bytes in
 * all, in @buf), what the receive completion says of its sender, and what
 * the destination checks (Q_Key, personality). */
typedef struct emul_ud_dgram {
  const emul_pers_t *pers;
  uint32_t qkey;
  uint32_t src_qpn;
  const uint8_t *sgid;
  const uint8_t *buf;
  uint64_t len;
} emul_ud_dgram_t;
/* A datagram as a UD post builds it (under the fabric lock), in the
 * poster's frame: @bytes holds its GRH and payload, @d points into it.
 * @away: it goes to QP @dst_qpn of another process, by
 * emul_ring_ud_send() once the fabric lock is let go, on @sock (a
 * reference to the socket connected to it, taken under the lock; NULL
 * when there is none yet). */
typedef struct emul_ud_out {
  gboolean away;
  uint32_t dst_qpn;
  struct x_ud_out *sock;
  emul_ud_dgram_t d;
  uint8_t sgid[16];
  uint8_t bytes[EMUL_UD_GRH_LEN + EMUL_UD_MTU];
} emul_ud_out_t;
/* Execute UD send @wr of @qp under its link @l (held; let go before this
 * returns), its SGEs naming no memory window or fast-registered region
 * (emul_sges_fixed), or with @l NULL under the fabric lock (held
 * throughout).  The datagram is built in @out and delivered in this
 * process (under @l: under its destination's link alone, and its SRQ's
 * lock, unless its receive names such an entry, which takes the fabric
 * lock for that part), or left in @out (@out->away) for the caller to send
 * once it has let every lock go. */
rnicpi_status_t emul_ud_post_send(emul_qp_t *qp, emul_link_t *l, const rnicpi_send_wr_t *wr,
                                  emul_work_t *w, emul_ud_out_t *out);
/* Deliver @d to UD QP @dst, or drop it: @dst's link held (its SRQ's lock
 * is taken here; emul_ud_deliver_locked takes the link under the fabric
 * lock).  FALSE, nothing done, only
 * without the fabric lock: the receive it would take names a window or a
 * fast-registered region (emul_key_fixed), the fabric lock's to deliver
 * into. */
gboolean emul_ud_deliver(emul_qp_t *dst, const emul_ud_dgram_t *d, emul_work_t *w);
void emul_ud_deliver_locked(emul_qp_t *dst, const emul_ud_dgram_t *d, emul_work_t *w);
/* The service reply event for @requester's request @req_ctx to @responder. */
void emul_ud_svc_reply_to(emul_dev_t *requester, uint64_t req_ctx, const rnicpi_addr_t *responder,
                          rnicpi_ud_svc_status_t status, uint32_t qpn, uint32_t qkey, const void *pdata,
                          uint32_t len);
/* Another process asks listener @l for its service, to be answered on @fd
 * (owned from here on); FALSE, @fd not taken, when @l has as many requests
 * of other processes unanswered as it holds (emul_ud.c). */
gboolean emul_ud_svc_remote(emul_listen_t *l, int fd, const void *pdata, uint32_t len);
/* Datagrams and service requests across processes (emul_ring_ud.c; fabric
 * lock held but by emul_ring_ud_send and where said).  A UD QP's host-wide
 * name is bound before the QP takes the lock, with the number the QP gets
 * (emul_ring_ud_bind, no lock: the next number no UD QP of another process
 * has; NULL when it could bind none, the QP reachable from its process
 * only), given to the QP under it (emul_ring_ud_open) and watched once it
 * is let go (emul_ring_ud_start, no lock); a destroy takes it from the QP
 * under the lock (emul_ring_ud_close) and closes it after
 * (emul_ring_ud_free, no lock).
 * emul_ring_ud_away_locked: @qp has a name of its own, so @out goes to
 * QP @dst_qpn of another process (@out->away, with the socket connected
 * to it referenced if there is one); FALSE: it cannot send there. */
struct emul_xud *emul_ring_ud_bind(uint32_t *qpn);
void emul_ring_ud_open(emul_qp_t *qp, struct emul_xud *u);
void emul_ring_ud_start(emul_qp_t *qp);
struct emul_xud *emul_ring_ud_close(emul_qp_t *qp);
void emul_ring_ud_free(struct emul_xud *u);
gboolean emul_ring_ud_away_locked(emul_qp_t *qp, uint32_t dst_qpn, emul_ud_out_t *out);
/* Carry @out's datagram away, or drop it, and let @out->sock go; no lock
 * held.  The fabric lock is taken only to add a socket connected to the
 * destination or forget a dead one, never across a system call. */
void emul_ring_ud_send(emul_ud_out_t *out);
/* A service request to another process's listener at @port (no lock
 * held: dialled and sent, then watched; FALSE when nobody listens there),
 * and the answer to one on its socket @fd, which then closes (no lock
 * held). */
gboolean emul_ring_ud_svc_request(emul_dev_t *dev, const rnicpi_addr_t *dst, uint32_t port, const void *pdata,
                               uint32_t len, uint64_t req_ctx);
void emul_ring_ud_svc_answer(int fd, rnicpi_ud_svc_status_t status, uint32_t qpn, uint32_t qkey,
                          const void *pdata, uint32_t len);
rnicpi_status_t emul_ud_svc_request(rnicpi_dev_t *dev, const rnicpi_addr_t *dst, const void *pdata,
                                    uint32_t pdata_len, uint64_t req_ctx);
rnicpi_status_t emul_ud_svc_reply(rnicpi_dev_t *dev, uint64_t req_id, rnicpi_ud_svc_status_t status,
                                  uint32_t qpn, uint32_t qkey, const void *pdata, uint32_t pdata_len);
gboolean emul_addr_is_ours(const rnicpi_addr_t *a);
/* 127.0.0.1, or with @v6 ::1, into @ss (port 0). */
void emul_cm_loopback(struct sockaddr_storage *ss, gboolean v6);
uint16_t emul_addr_port(const rnicpi_addr_t *a);

#endif
