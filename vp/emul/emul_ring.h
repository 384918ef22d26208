/*
 * vp/emul across processes, "the ring" (as opposed to in-process
 * delivery): what its files share.  One role per file:
 * - emul_ring.c: the two SPSC rings of a connection (layout, producing and
 *   consuming frames, the ACK word, doorbells);
 * - emul_ring_copy.c: the payload paths: one-sided RDMA by cross-memory
 *   attach or into a mapped region (the place op of emul_xport_ring, for
 *   emul_req_run), the fast case of a post (emul_ring_hot), long copies,
 *   the peer process pinned, the peer's regions mapped here;
 * - emul_ring_resp.c: emul_xport_ring; the responder's ops (the peer's
 *   requests, decoded in ring order for emul_resp_rx, by the rules of
 *   emul_resp.c that in-process requests follow too), the requests'
 *   frames, the answers decoded for the completer (emul_comp_run);
 * - emul_progress.c: the progress thread, and who drains a ring;
 * - emul_ring_cm.c: the connection and the CM handshake;
 * - emul_ring_teardown.c: teardown and peer death;
 * - emul_ring_listen.c: listener sockets;
 * - emul_ring_msg.c: a connection's socket and its messages, sent and read;
 * - emul_export.c: this process's exported region table;
 * - emul_mapped.c: mapped regions, the exporter's side;
 * - emul_ring_ud.c: datagrams and UD service resolution.
 *
 * Design (one paragraph per moving part):
 *
 * CM.  Each listener binds the abstract Unix socket "itapi-emul/<port>"
 * (SOCK_SEQPACKET); the kAL reservation "itapi-conn-qual/emul/<port>" taken
 * by the access layer already makes the port unique on the host.  A connect
 * that finds no listener in its own process connects to that socket and
 * sends REQ; PROBE and ATTACH (the proofs of emul_ring_cm.c's Trust), REP,
 * REJ, RTU follow on the same socket (x_msg_t).  The socket
 * then stays open for the connection's life: it carries doorbells and the
 * teardown messages (DISC with private data, BREAK with the status of the
 * request that broke the connection), and its EOF means the peer process
 * died or dropped the QP: BROKEN and flush, from the progress thread.
 * Peers are identified by SO_PEERCRED, never by what they claim.
 *
 * Shared memory.  Nothing is ever named in /dev/shm: every segment is a
 * memfd passed with SCM_RIGHTS and closed once mapped, so the kernel frees
 * it with its last mapping, also when a process is killed.  Two kinds:
 * - a connection segment (created by the active side): the inbound rights
 *   of each side's QP and one SPSC ring per direction (x_seg_hdr_t);
 * - this process's region table (x_mr_entry_t[], created at first
 *   cross-process use, kept for the process's life, sealed so that only
 *   our own mapping writes it, and given to trusted peers alone
 *   (emul_ring_cm.c, Trust)): key, domain, bounds and rights of each region,
 *   written under the fabric lock with a sequence count (seqlock), so a
 *   requester checks a remote key exactly as the in-process path does.
 *
 * Rings.  Requests (send, atomics, and in bounce mode RDMA) and answers
 * (atomics' ACK, READ_RESP) are frames in the producer's ring; payloads
 * over X_FRAG_MAX go as continuation frames.  A frame starts on a cache
 * line with its mark, the frame's ring position XOR a random key of the
 * ring, stored last: the consumer looks for the next frame at its head
 * (no tail word to read first: a small send is one cache line to fetch),
 * and a mark left from an earlier lap, or payload bytes, never match.  A
 * whole send up to X_FRAG_MAX goes with a 24-byte header (X_OP_SEND_SHORT).
 * A send or bounce-mode write that executed is answered by no frame: the
 * responder raises the ACK word of its ring (`acked`: every request with a
 * sequence number below it executed; a line of its own, doorbell rules as
 * for a frame), and the requester completes its oldest issued requests up
 * to it, in order, before it acts on any answer frame (which the responder
 * published after raising the word).  A consumer never stops draining:
 * requests it cannot execute yet (a send with no receive posted, and every
 * request behind it: RC ordering) wait in the QP's private queue qp->xin
 * (bounded: no more than a peer's send queue holds, ITAPI_EMUL_INBOUND_MB
 * of payload; a peer past it broke the protocol).  So two processes whose
 * rings are full of each other's requests cannot deadlock.  (It pauses only to make a long Read Response's copy, with the
 * locks let go, and drains on after it: emul_ring_serve.)  Frames that arrive whole and contiguous are executed in place
 * (no copy out, no allocation); answers are pushed straight into the ring
 * when nothing waits ahead of them (x->out is only the overflow queue).
 *
 * Who drains a ring, and doorbells.  Two consumers may drain the ring a
 * process reads, each holding the QP's link: the application thread, when
 * it polls an empty CQ that one of the connection's QPs feeds
 * (emul_ring_poll_cq, called from emul_poll_cq: "busy-poll mode", no thread
 * switch and no system call for a small message), and the progress thread
 * (woken by a doorbell on the socket).  An application thread's drain (its
 * busy poll, or its wake-up from a sleep, below) takes the common case,
 * Sends and bounce-mode RDMA Writes, Reads and Read Responses whole in one
 * frame and the ACK word's completions, under the link alone, and leaves the rest to a drain under
 * the fabric lock (emul_ring_drain_link); so does the progress thread's,
 * before it sleeps and when a doorbell wakes it (emul_ring_drain_alone).
 * The consumer's ring word `armed`
 * says "nobody here is polling: ring the bell".  The producer publishes
 * a frame's mark (or its ACK word), then reads `armed` (Dekker pair, both
 * sequentially consistent); only a set `armed` costs a doorbell, and the producer
 * clears it, so there is one doorbell per sleep.  The doorbell itself (a
 * system call) is rung once the producer lets the fabric lock go
 * (emul_ring_doorbell, emul_fabric_unlock).  The progress thread sets
 * `armed` (then looks at the ring once more) before it sleeps, unless the
 * application polled that connection's CQs within the last X_POLL_GRACE_MS
 * and none of them is armed for a notification: then it leaves it clear,
 * leaves the ring to the application's polls (it neither drains nor pumps
 * it: it would take the link and the fabric lock from them, and a core
 * from the pull they make with the locks let go), sleeps at most
 * X_POLL_GRACE_MS and looks again.  So busy polling costs
 * no doorbell, an application that stops polling gets its ring served
 * again within about 2 * X_POLL_GRACE_MS, and one that arms a CQ to wait for it
 * (emul_ring_cq_armed) wakes the progress thread at once to arm the rings:
 * event mode sleeps on the doorbell and costs no CPU while idle.
 * A third consumer is an application thread about to sleep until its CQ
 * has a completion (RNIC-PI 1.11, emul_ring_cq_wait_begin: it_evd_wait).
 * Each side of a connection made an eventfd, its bell, and gave it to the
 * peer with REQ or REP; the sleeper sets `armed` to X_ARM_WAITER on the
 * rings of the connections that feed its CQ (then looks at each ring once
 * more, as the progress thread does), sleeps on their bells, and drains
 * the rings itself when woken (emul_ring_cq_wait_end), so the producer's
 * `write()` to the bell is the one wake-up of the message and the progress
 * thread never runs for it.  `armed` is thus the word of whoever sleeps on
 * the ring: the progress thread leaves a connection with a sleeper
 * (x->waiters) alone.  A sleeper that leaves leaves the ring armed for its
 * return, as a busy poller's ring stays unarmed: the application usually
 * sleeps or polls again within microseconds, and a frame meanwhile only
 * rings the bell nobody watches, where a doorbell would wake the progress
 * thread to take the fabric lock from it.  The progress thread takes the
 * ring back once X_POLL_GRACE_MS has passed (x->left_at), looking every
 * X_POLL_GRACE_MS while sleepers come and go (X_SLEEPER_RECENT_MS), and
 * is woken by a sleeper that leaves while it sleeps without a timer.  A
 * completion the bell does not cover (the progress thread's, a QP of this
 * process) still reaches the sleeper through its armed CQ's cq_notify.
 * ITAPI_EMUL_SPIN_US=N makes the progress thread also spin up to N us on
 * the rings before it sleeps; ITAPI_EMUL_APP_PROGRESS=0 turns the
 * application-thread draining off (both read once per process, for
 * measurements; see doc/performance.md).
 *
 * Timeout.  A live peer never stops draining (above), so frames that
 * wait in a ring with its consumer's `taken` word (its head, stored at
 * every frame) unmoved for ITAPI_EMUL_TIMEOUT_MS (X_TIMEOUT_MS by default,
 * 0: never) mean the peer stopped: stopped by a signal or a debugger, or
 * hostile.  The progress thread looks at each connection before it sleeps
 * (emul_ring_stall_check), and sleeps no longer than half the timeout
 * while a connection has a QP; a ring found stalled breaks its connection
 * as RDMA's retry count does: the oldest work request completes with a
 * transport error, the rest flush, the connection is BROKEN, and the log
 * names the peer.  What the peer took and holds (a Send waiting for its
 * receive, a Read behind it: RC order) is no stall: that waits as long as
 * a receiver that is not ready, for ever.  Only this process's view
 * counts: the check reads `taken` once, to compare it with our tail, and
 * a peer that lies about it only keeps its own connection waiting.
 *
 * Payload.  Where this process may attach to the peer (it read the peer's
 * nonce by process_vm_readv, once per connection, through a pidfd that
 * pins the peer process (emul_ring_copy.c); ITAPI_EMUL_CMA=0 forbids
 * it) and the peer trusts it (gave it its region table), RDMA Write and
 * Read are one-sided: the requester checks the
 * key in the peer's exported table and moves the bytes itself with
 * process_vm_writev/readv (one copy; the target process need not run).
 * A send over X_INLINE_MAX bytes carries the sender's gather list and the
 * receiver pulls it with process_vm_readv when a receive matches (one
 * copy); a smaller one travels inline in the ring (two memcpy, no system
 * call: cheaper than a CMA call up to about that size).  Otherwise payloads
 * travel in the ring (bounce mode) and RDMA is served by the target's
 * progress thread, not its application thread.  Atomics are always executed
 * by the target's progress thread under its fabric lock (process_vm_writev
 * is not atomic), in both modes.  The choice is per direction and said
 * once per process in the log.
 *
 * Mapped regions.  A region a target that trusts the requester registered
 * with remote rights in a MAP_SHARED memfd
 * (sealed against shrinking, or created with MFD_ALLOW_SEALING so that
 * emul can seal it) is mapped by the requester on its first one-sided use
 * (X_MAP_REQ / X_MAP_REP with the fd; emul_mapped.c): from then on RDMA
 * Write and Read to it are a memcpy, with no system call, in both modes
 * (attach or bounce).  Until the answer comes, and for every other region,
 * the paths above.  The checks against the exported table are the same;
 * ITAPI_EMUL_MAP=0 turns mapping off.
 *
 * Personalities.  Both processes apply the rules of their device's row of
 * emul_pers[] (emul.h); the REQ names the requester's personality and a
 * listener of another personality refuses it as unreachable, so both ends
 * of a connection always have the same rules and key format.  ORD is kept
 * by the requester (no more Reads issued and unanswered than negotiated),
 * IRD by whoever executes the Read (the target, or the requester reading
 * the target's ird[] in the connection segment in attach mode).
 *
 * Completion queues stay process-private: a CQ is read only by its own
 * process, and every completion it gets is produced by that process's
 * threads (the application's, for one-sided RDMA it executed itself, or the
 * progress thread, for answers read from a ring).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef EMUL_RING_H
#define EMUL_RING_H

#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <glib-unix.h>

#include "emul.h"

#define X_MAGIC 0x39584d45u       /* "EMX9" */
#define X_RING_SIZE (1u << 20)    /* bytes per direction */
#define X_FRAG_MAX (64u << 10)    /* payload bytes per frame */
#define X_HDR_SIZE 4096u
#define X_LINE 64u                /* frames start on a cache line */
#define X_SEG_SIZE (X_HDR_SIZE + 2 * X_RING_SIZE)
#define X_MR_CAP (1u << 18)       /* regions a peer can reach (index < cap) */
#define X_INLINE_MAX (16u << 10)  /* sends up to this size go inline even with CMA */
#define X_POLL_GRACE_MS 2         /* unarmed sleep while the application polls */
/* How long a peer may take nothing from a ring with frames waiting
 * (ITAPI_EMUL_TIMEOUT_MS; emul_ring.h, "Timeout"). */
#define X_TIMEOUT_MS 10000
/* While a sleeper of a connection left it this recently, the progress
 * thread keeps looking every X_POLL_GRACE_MS instead of sleeping until a
 * leaving sleeper wakes it (emul_ring_cq_wait_end). */
#define X_SLEEPER_RECENT_MS 4
/* The consumer releases room in quarters of the ring (emul_ring_drain); a
 * ring looks full to the producer only with more than that unreleased. */
G_STATIC_ASSERT(X_RING_SIZE / 4 < X_RING_SIZE - X_FRAG_MAX - 2 * X_LINE);

/* Socket messages (CM, doorbells, teardown). */
typedef enum {
  X_REQ = 1,   /* active -> passive, fd: connection segment */
  X_REP,       /* passive -> active, fds (trusted peer only): region table, bell */
  X_RTU,       /* active -> passive (three-way) */
  X_REJ,       /* either way; reason != 0: refused by a non-peer */
  X_ATTACH,    /* active -> passive: its proof of attach (proof), and to a
                * trusted peer its region table and bell */
  X_DOORBELL,  /* the sender's ring has frames */
  X_SPACE,     /* the receiver's ring (produced by the other side) has room */
  X_DISC,      /* orderly disconnect, with private data */
  X_BREAK,     /* the connection failed; status of request seq if any */
  X_MAP_REQ,   /* requester -> target: may I map region mr_index (key mr_key)? */
  X_MAP_REP,   /* target -> requester: fd of its memfd (none: no), file_off */
  X_SIDR_REQ,  /* UD service request to a listener (pers, pdata; emul_ring_ud.c) */
  X_SIDR_REP,  /* its answer: status, qpn, qkey, pdata */
  X_PROBE,     /* passive -> active: its proof of attach (proof), and its own
                * word to read (probe_addr) */
} x_msg_type_t;

/* The descriptors a message carries (x_msg_t.fds), in this order. */
#define X_FD_SEG 1u     /* the connection segment (REQ) */
#define X_FD_TABLE 2u   /* the sender's region table (ATTACH, REP) */
#define X_FD_BELL 4u    /* the sender's bell eventfd (ATTACH, REP) */

typedef struct x_msg {
  uint32_t magic;
  uint32_t type;
  uint32_t qpn;
  uint32_t ird, ord;
  uint32_t three_way;
  uint32_t attach;       /* PROBE, ATTACH: the sender attaches to the receiver
                          * for payload (it can, and ITAPI_EMUL_CMA allows it) */
  uint32_t reason;       /* REJ */
  uint32_t status;       /* BREAK: rnicpi_wc_status_t of request seq (0: none);
                          * SIDR_REP: rnicpi_ud_svc_status_t */
  uint32_t fault;        /* BREAK: emul_fault_t + 1 of the request that failed (0: none) */
  uint32_t responder;    /* BREAK with a fault: the receiver was that request's responder */
  uint32_t pdata_len;
  uint32_t pers;         /* REQ: emul_pers_id_t of the requester's device */
  uint32_t atomics;      /* REQ, REP: the sender's device executes atomics */
  uint32_t qkey;         /* SIDR_REP: the Q_Key of the QP named in qpn */
  uint32_t v6;           /* REQ: the connect named an IPv6 address (::1) */
  uint64_t pd_id;        /* REQ, REP: domain of the sender's QP */
  uint64_t probe_addr;   /* REQ, PROBE: the sender's nonce, which the peer
                          * proves it can read by attach (emul_ring_cm.c, Trust) */
  uint64_t proof;        /* PROBE, ATTACH: what the sender read there (0: nothing) */
  uint32_t fds;          /* X_FD_* of the descriptors that ride with it */
  uint32_t pad;
  uint64_t seq;          /* BREAK */
  uint32_t mr_index;     /* MAP_REQ, MAP_REP */
  uint32_t mr_key;
  uint64_t mr_addr;      /* MAP_REP: the region's address and length there */
  uint64_t mr_len;
  uint64_t file_off;     /* MAP_REP: offset of mr_addr in the memfd */
  uint8_t pdata[RNICPI_MAX_PDATA];
} x_msg_t;

#define X_MSG_MIN offsetof(x_msg_t, pdata)

/* A socket message waiting to be sent (emul_xconn_t.msgs): @nfds
 * descriptors ride with it (SCM_RIGHTS), those whose bit is set in @given
 * closed once it is sent (or dropped).  Or, with @upcall set, no message:
 * an event raised once the messages ahead of it are sent
 * (emul_ring_msgs_then). */
typedef struct x_sockmsg {
  emul_upcall_t *upcall;
  int fds[4];
  int nfds;
  unsigned given;
  x_msg_t m;  /* X_MSG_MIN + m.pdata_len bytes of it are sent */
} x_sockmsg_t;

/* Ring frames. */
typedef enum {
  X_OP_SEND = 1,   /* payload: data, or (X_F_CMA) the sender's x_iov_t list */
  X_OP_WRITE,      /* bounce mode */
  X_OP_READ,       /* bounce mode */
  X_OP_ATOMIC,     /* both modes */
  X_OP_ACK,        /* answer: status, byte_len; atomics: old value in cmp */
  X_OP_READ_RESP,  /* answer with the data read */
  X_OP_CONT,       /* continuation of the previous frame's payload */
  X_OP_SEND_SHORT, /* a whole send in one frame, with the short header x_short_t */
} x_op_t;

#define X_F_CMA 1u
#define X_F_FETCH_ADD 2u
#define X_F_INV 4u        /* SEND: Send with Invalidate of key rkey */
/* Immediate data (RNIC-PI 1.5), its value in cmp (the bits the
 * personality carries): a SEND of no payload (RNICPI_WR_IMM_DATA), or a
 * WRITE whose receive completes once its bytes are placed
 * (RNICPI_WR_RDMA_WRITE_IMM, always through the ring: it needs the
 * responder's receive).  Both consume a receive as a Send does. */
#define X_F_IMM 8u

typedef struct x_frame {
  uint64_t mark;         /* the frame's ring position ^ the ring's key: written last */
  uint32_t op;
  uint32_t flags;
  uint32_t frag_len;     /* payload bytes in this frame */
  uint32_t status;       /* ACK */
  uint32_t byte_len;     /* SEND, READ: bytes of the message; ACK: bytes moved */
  uint32_t pad;
  uint64_t seq;          /* request: requester's WR; answer: the request's */
  uint64_t total;        /* payload bytes of the whole message */
  uint64_t raddr, rkey;
  uint64_t cmp, swap;     /* ATOMIC; cmp: ACK's old value, X_F_IMM's immediate data */
} x_frame_t;

/* The header of X_OP_SEND_SHORT: the payload (len bytes, at most
 * X_FRAG_MAX) follows at once, so a send of up to 40 bytes is one line. */
typedef struct x_short {
  uint64_t mark;
  uint32_t op;
  uint32_t len;
  uint64_t seq;
} x_short_t;

typedef struct x_iov {
  uint64_t addr;
  uint64_t len;
} x_iov_t;
/* Entries of a Send's gather list (X_F_CMA) at most. */
#define X_IOV_MAX 64

typedef struct x_ring_ctl {
  _Alignas(64) uint64_t acked;      /* written by the producer, as responder:
                                     * the consumer's requests with seq below
                                     * it executed, no answer frame (ACK word) */
  _Alignas(64) uint64_t head;       /* written by the consumer */
  _Alignas(64) uint32_t want_space; /* the producer waits for X_SPACE */
  _Alignas(64) uint32_t armed;      /* the consumer may sleep: doorbell needed (X_ARM_*) */
  _Alignas(64) uint64_t taken;      /* written by the consumer: its head, at every frame
                                     * (relaxed; the producer's stall check alone reads
                                     * it, see "Timeout") */
} x_ring_ctl_t;

/* Who sleeps on the consumer's side of a ring (x_ring_ctl_t.armed). */
enum {
  X_ARM_NONE = 0,    /* somebody polls the ring: no doorbell */
  X_ARM_THREAD = 1,  /* its progress thread: an X_DOORBELL message */
  X_ARM_WAITER = 2,  /* an application thread in cq_wait_begin: its bell eventfd */
};
/* The doorbells a thread owes the peer (emul_ring_doorbell): a producer's,
 * from the armed words it took, and a consumer's who released room the
 * peer's producer waits for (want_space). */
#define X_BELL_THREAD 1u
#define X_BELL_WAITER 2u
#define X_BELL_SPACE 4u
/* Not the peer's: the connection's queued socket messages to send, and its
 * socket to close after them (emul_ring_send_msg, emul_ring_close); and
 * our own bell eventfd, for a sleeper of ours (the connection closed). */
#define X_BELL_MSGS 8u
#define X_BELL_SELF 16u
/* Connections one thread sleeps on in one cq_wait_begin. */
#define X_WAIT_MAX 8

typedef struct x_seg_hdr {
  uint32_t magic;
  uint32_t ring_size;
  uint32_t access[2];      /* inbound rights of the QP of side 0 (active), 1 */
  uint32_t ird[2];         /* IRD of each side's QP (0: it answers no Read) */
  uint64_t key[2];         /* frame marks of ring[s] (x_frame_t::mark) */
  x_ring_ctl_t ring[2];    /* ring[s] is produced by side s */
} x_seg_hdr_t;
G_STATIC_ASSERT(sizeof(x_seg_hdr_t) <= X_HDR_SIZE);

typedef struct x_mr_entry {
  uint32_t seq;            /* odd while written */
  uint32_t key;
  uint32_t access;
  uint32_t valid;
  uint32_t qpn;            /* a narrow window: the only QP it answers through (0: any) */
  uint32_t pad;
  uint64_t pd_id;
  uint64_t addr;
  uint64_t length;
  uint64_t iova;
} x_mr_entry_t;

typedef struct x_map x_map_t;

/* The peer's region the last one-sided request reached, through a mapping
 * or by attach, as checked then (emul_ring_copy.c, x_grant).  It stands for the full check
 * while the peer's exported entry keeps its sequence count, the peer QP
 * its inbound rights and the connection its mappings (map_gen).  Every
 * change of a region or window entry of either process passes through
 * emul_ring_mr_sync, which moves both counts. */
typedef struct x_hot {
  gboolean valid;
  uint64_t rkey;
  uint32_t index;
  uint32_t seq;                 /* of the exported entry, when checked */
  uint32_t qp_access;           /* the peer QP's inbound rights then */
  uint32_t access;              /* the entry's rights within those */
  uint64_t iova, length;
  uint8_t *base;                /* where iova is mapped here, or NULL: by attach */
  uint64_t map_gen;
  /* The local region the last one passed (emul_sge_region), while no entry of
   * the table changed (emul_fabric.mr_gen). */
  uint64_t lkey, lstart, llen, lgen;
  uint32_t laccess;
  /* Where iova is in the peer, for an attach call (base NULL). */
  uint64_t addr;
} x_hot_t;

/* A frame (with its whole payload) waiting to enter the ring. */
typedef struct x_out {
  x_frame_t f;
  uint8_t *buf;                 /* payload, or NULL: gather from sg; owned once queued */
  const rnicpi_sge_t *sg;
  uint32_t nsg;
  uint64_t done;
  gboolean started;
} x_out_t;

/* A request from the peer, assembled, waiting to execute (qp->xin), or
 * an answer waiting behind a copy (qp->xans). */
typedef struct x_in {
  x_frame_t f;
  uint8_t *buf;
} x_in_t;
/* A queue entry for the frame @f found by a drain: @buf is taken when
 * @owned (assembled), else copied out of the ring (f->total bytes). */
x_in_t *emul_ring_in_new(const x_frame_t *f, uint8_t *buf, gboolean owned);
void emul_ring_in_free(x_in_t *in);
/* The payload bytes @in holds (counted in qp->xin_bytes while it waits). */
static inline uint64_t
emul_ring_in_bytes(const x_in_t *in)
{
  return in->buf != NULL ? in->f.total : 0;
}
/* ITAPI_EMUL_INBOUND_MB, in bytes: the payload a peer's requests may hold
 * waiting to execute in one QP (qp->xin; read once, emul_progress.c). */
G_GNUC_INTERNAL extern uint64_t emul_ring_xin_max;

struct emul_xconn {
  gint ref;
  gboolean dead;
  int fd;
  GSource *src;
  int side;                     /* 0: active, 1: passive */
  pid_t peer_pid;
  int peer_pidfd;               /* pins the peer process (emul_ring_copy.c); -1: none, and
                                 * so no attach to it */
  GSource *pid_src;             /* the progress thread's watch of peer_pidfd, or NULL */
  int peer_mem;                 /* the peer's /proc/PID/mem, opened under the pin: short
                                 * attach copies (emul_ring_vm_copy); -1: none */
  x_seg_hdr_t *seg;
  const x_mr_entry_t *peer_mrs; /* the peer's region table, read-only */
  uint64_t peer_pd;
  uint32_t peer_qpn;
  uid_t peer_uid;               /* the peer's effective user (SO_PEERCRED) */
  uint64_t nonce;               /* the word the peer reads to prove it can attach */
  gboolean trusted;             /* the peer is of our user and proved it can attach to
                                 * us: it gets our region table, bell and mappings */
  gboolean probed;              /* this process read the peer's nonce by attach */
  gboolean probe_seen;          /* active: the passive's PROBE came */
  gboolean no_trust;            /* ITAPI_EMUL_TRUST=0 when the connection began */
  gboolean no_cma;              /* ITAPI_EMUL_CMA=0 when the connection began */
  gboolean cma_out;             /* this process attaches to the peer for payload: it can,
                                 * may, and the peer gave it its region table */
  gboolean peer_cma;            /* the peer attaches to us for payload (it proved it can) */
  x_msg_t *held_req;            /* passive: the REQ, raised once ATTACH came */
  emul_qp_t *qp;                /* NULL until a passive request is accepted */
  emul_conn_t *conn;            /* the handshake in progress */
  emul_listen_t *listener;      /* passive: the listener that accepted */
  GQueue out;                   /* x_out_t*, in ring order */
  guint out_answers;            /* Read Responses and atomics' ACKs among them: no more
                                 * than the peer may have outstanding (IRD) */
  uint64_t out_bytes;           /* the payload they hold copied (a peer's Reads wait for
                                 * room past ITAPI_EMUL_INBOUND_MB: emul_ring_exec_in) */
  x_in_t in;                    /* message being assembled */
  uint64_t in_have;
  gboolean in_busy;
  gint in_whole;                /* x->in is whole, assembled by a drain under the link
                                 * alone, for the full drain to execute (x_assemble;
                                 * atomic: emul_ring_pending reads it unlocked) */
  uint64_t tail;                /* producer: where the next frame goes */
  uint64_t rx_head;             /* consumer: where the next frame comes (link; read
                                 * without it by emul_ring_pending: atomic) */
  uint64_t rx_published;        /* consumer: the head the producer was last given */
  uint64_t rx_link, rx_full;    /* consumer: frames taken under the QP's link alone
                                 * (emul_ring_drain_link), and by the full drain under
                                 * the fabric lock; said at close (debug log) */
  uint64_t key_out, key_in;     /* marks of our ring, of the peer's (seg->key) */
  uint64_t head_seen;           /* producer: the consumer's head, last read */
  gint64 timeout_us;            /* ITAPI_EMUL_TIMEOUT_MS when the connection began (0: never) */
  uint64_t stall_taken;         /* producer: the consumer's `taken` when it last moved... */
  gint64 stall_at;              /* ...seen at this time (monotonic us; 0: nothing waits) */
  uint64_t acked_seen;          /* requester: the peer's ACK word, last acted on (as rx_head) */
  gint app_polls;               /* the application polled a CQ of this QP (count; written
                                 * under the link, read without it: atomic) */
  gint seen_polls;              /* app_polls at the progress thread's last look */
  gint64 polled_at;             /* when it last saw app_polls change (monotonic us) */
  gint poll_arm_seq;            /* CQ arms of the process as of the last poll (as app_polls) */
  int bell_fd;                  /* eventfd the peer writes when our ring's armed is
                                 * X_ARM_WAITER (emul_ring_cq_wait_begin); -1 */
  int peer_bell_fd;             /* the peer's, which we write; -1 until it comes */
  gint waiters;                 /* application threads asleep on bell_fd (lock) */
  gboolean bell_rung;           /* bell_fd holds a count nobody read yet (lock) */
  uint32_t armed_by;            /* who stored our ring's armed word last: X_ARM_WAITER
                                 * (a sleeper), else the progress thread (lock) */
  gint64 left_at;               /* the last sleeper left, the ring still armed for one: the
                                 * progress thread's to take back after the grace (lock) */
  gint64 last_left;             /* when a sleeper last left (monotonic us; lock) */
  x_map_t *maps;                /* the peer's regions mapped here (emul_mapped.c) */
  uint64_t map_gen;             /* counts the mappings of maps taken down */
  gboolean issue_owed;          /* a drain left the send queue's next long copy to its
                                 * drainer (emul_ring_issue_owed; lock) */
  x_hot_t hot;                  /* the region one-sided requests reached last */
  /* The socket's messages (emul_ring_send_msg, the doorbells): queued in
   * order and sent with the fabric lock let go, by one thread at a time;
   * the socket closes after the last of them (emul_ring_close). */
  GMutex mlock;                 /* guards the six below; a leaf */
  GQueue msgs;                  /* x_sockmsg_t*, in order */
  gboolean msending;            /* a thread sends them now */
  gboolean sock_reading;        /* the progress thread reads the socket now, with no
                                 * lock held (emul_ring_conn_ready) */
  gboolean sock_close;          /* the connection closed: nothing more joins them,
                                 * the socket closes after them and the read */
  gboolean sock_closed;
  gboolean watch_due;           /* src is made, not started: its first sender starts it
                                 * (emul_ring_msgs_flush), unless the connection closed */
  gint64 room_since;            /* the message at the head of msgs has waited for room in
                                 * the socket since (monotonic us; 0: none waits): the
                                 * sender's (x_sockmsg_send) */
  gint map_lost;                /* 1 + the index of an X_MAP_REQ that was not sent,
                                 * asked again (emul_ring_map_lookup); 0 (atomic) */
};

/* What executing a request did (emul_ring_copy.c, emul_ring_resp.c):
 * done, blocked (a receive not ready), failed (completed in error), not
 * one-sided here (it goes through the ring), or owed: nothing done, a long
 * copy found by a drain is left to the drainer (emul_ring_issue_owed). */
typedef enum {
  XR_DONE = EMUL_EXEC_DONE, XR_BLOCKED = EMUL_EXEC_BLOCKED, XR_FAILED = EMUL_EXEC_FAILED, /* the responder's */
  XR_NOTDIRECT = EMUL_EXEC_NOT, XR_OWED = EMUL_EXEC_OWED
} xr_t;

/* A request's fault as a BREAK tells it: the receiver raises the event
 * of its side (the responder's, or the requester's). */
typedef struct {
  emul_fault_t f;
  gboolean to_responder;
} x_fault_t;

/* Live cross-process connections of this process (emul_cq.c skips the
 * cross-process work of a poll while there is none), and the list of them
 * (emul_ring_cm.c; fabric lock held). */
G_GNUC_INTERNAL extern gint emul_ring_nconn;
G_GNUC_INTERNAL extern GList *emul_ring_conns;

/* emul_progress.c */
/* emul_ring_init (no lock held) is in emul.h.  Ready: it succeeded. */
gboolean emul_ring_ready(void);
void emul_ring_progress_lock(void);  /* the progress thread's way to the fabric lock */
/* A listening socket @fd (the progress thread's) whose accept failed with
 * @err: when that is EMFILE or ENFILE and a connection waits, it is taken
 * with the reserve descriptor and closed (logged at most once a minute,
 * counted as @what), so the socket does not stay readable; TRUE then. */
gboolean emul_ring_accept_refuse(int fd, int err, const char *what);
/* The connection requests one listener holds (an eighth of RLIMIT_NOFILE,
 * 16 to 1024; set by emul_ring_init). */
G_GNUC_INTERNAL extern guint emul_ring_pending_max;
/* Watch @fd from the progress thread: @fn runs there, without the lock.
 * @notify (or NULL) lets @data go once the source is destroyed and no
 * callback of it runs: a descriptor @fn reads with no lock held is closed
 * there, never by whoever destroys the source.  Enter, first in @fn: takes
 * the fabric lock (emul_ring_progress_lock), then TRUE unless the source
 * was destroyed meanwhile (its data may be gone: touch nothing). */
GSource *emul_ring_watch(int fd, GIOCondition cond, GUnixFDSourceFunc fn, gpointer data,
                         GDestroyNotify notify);
/* emul_ring_watch in two steps, for a caller that holds the fabric lock:
 * the watch made (no system call), then started with the lock let go
 * (GLib writes the progress thread's wake-up eventfd as it attaches). */
GSource *emul_ring_watch_new(int fd, GIOCondition cond, GUnixFDSourceFunc fn, gpointer data,
                             GDestroyNotify notify);
void emul_ring_watch_start(GSource *src);
gboolean emul_ring_enter(void);

/* A listening socket of this process watched by the progress thread (a
 * listener's port, a UD QP's name), the first member of its owner's
 * g_malloc'd record, which goes with it.  Its callback accepts with no lock
 * held, so the socket closes only once the watch is destroyed and no
 * callback of it runs; the owner's close waits for that (for a second at
 * most), so that the name can be bound again at once.  @closing (or NULL)
 * runs as the socket closes, on the thread that closes it. */
typedef struct emul_ring_lsock {
  int fd;
  GSource *src;
  gint ref;       /* the watch's and the owner's */
  gint closed;    /* atomic */
  void (*closing)(struct emul_ring_lsock *s);
} emul_ring_lsock_t;

/* Init: @s (zeroed) holds @fd, not watched yet.  Watch: @fn runs on the
 * progress thread with @s as its data (emul_ring_watch).  Close: the watch
 * (if any) destroyed, the socket closed, @s let go (no lock held). */
void emul_ring_lsock_init(emul_ring_lsock_t *s, int fd);
void emul_ring_lsock_watch(emul_ring_lsock_t *s, GUnixFDSourceFunc fn);
void emul_ring_lsock_close(emul_ring_lsock_t *s);

/* The application's side of progress (emul_cq.c, no lock held).  Poll:
 * a poll of @cq took @got of @n entries; when none, drain the rings that
 * feed it and poll again; returns the entries taken.  Armed: @cq was armed
 * for a notification. */
int emul_ring_poll_cq(emul_cq_t *cq, rnicpi_wc_t *wc, int n, int got);
void emul_ring_cq_armed(emul_cq_t *cq);
/* RNIC-PI 1.11 for the connections that feed @cq (emul_cq.c, no lock held):
 * the calling thread sleeps on their bell eventfds (at most @room of
 * them; how many goes back), then makes the progress itself. */
uint32_t emul_ring_cq_wait_begin(emul_cq_t *cq, struct pollfd *fds, uint32_t room);
void emul_ring_cq_wait_end(emul_cq_t *cq, const struct pollfd *fds, uint32_t nfds);

/* emul_export.c: this process's region table (memfd, -1 until made by
 * emul_ring_export_init at the first cross-process use). */
G_GNUC_INTERNAL extern int emul_ring_mr_fd;
gboolean emul_ring_export_init(void);
gboolean emul_ring_mr_read(const x_mr_entry_t *table, uint32_t index, x_mr_entry_t *out);

/* emul_ring_msg.c */
/* The abstract socket address "itapi-emul/<kind><n>". */
socklen_t emul_ring_addr(const char *kind, uint32_t n, struct sockaddr_un *sa);
/* A SOCK_SEQPACKET socket (non-blocking) connected to emul_ring_addr(@kind,
 * @n), or -1: nobody listens there, or its backlog stayed full for
 * @wait_ms (0: not waited for; no lock may be held when @wait_ms > 0). */
int emul_ring_dial(const char *kind, uint32_t n, uint32_t wait_ms);
/* A SOCK_SEQPACKET socket (non-blocking) listening at emul_ring_addr(@kind,
 * @n), or -1 with errno saying why (EADDRINUSE: another process has it). */
int emul_ring_bind_listen(const char *kind, uint32_t n);
/* Queue a socket message to the peer (fabric lock held): the connection's
 * messages leave in order, with the lock let go (the thread owes them as a
 * doorbell, X_BELL_MSGS).  @fds ride with it: those whose bit is set in
 * @given are the message's, closed once it is sent; the others must stay
 * open as long as @x.  Once @x closed, nothing is queued (the given
 * descriptors are closed).  A message that cannot be sent is logged (the
 * peer's EOF tells the rest). */
void emul_ring_send_msg(emul_xconn_t *x, const x_msg_t *m, const int *fds, int nfds, unsigned given);
/* Send @x's queued messages, and then close its socket if it closed, with
 * no lock held (a reference to @x); @first (or NULL) is sent first when
 * nothing waits ahead of it, else it joins the queue (a doorbell joins
 * none: one already waiting at the tail serves).  One thread sends at a
 * time: another that finds it sending leaves its messages to it. */
void emul_ring_msgs_flush(emul_xconn_t *x, x_sockmsg_t *first);
/* Socket messages (and events behind them) queued and not yet sent, in
 * every connection (atomic): the process's exit waits for them
 * (emul_progress.c). */
G_GNUC_INTERNAL extern gint emul_ring_msgs_owed;
/* The sender (@sender) or the reader of @x's socket is done with it: TRUE
 * when the caller is to close it now (the connection closed, and nobody
 * else uses it or has messages for it). */
gboolean emul_ring_sock_done(emul_xconn_t *x, gboolean sender);
gboolean emul_ring_send_fd(int fd, x_msg_t *m, const int *fds, int nfds);
ssize_t emul_ring_recv_msg(int fd, x_msg_t *m, int *fds, int *nfds);
/* Close the descriptors @e gives away (its @given bits): once it is sent,
 * or dropped. */
G_GNUC_INTERNAL void emul_ring_sockmsg_drop(x_sockmsg_t *e);
/* The progress thread's watch of a connection's socket (@data: the
 * connection, referenced by the watch; made by emul_ring_conn_new): the
 * messages read with no lock held, then handled in order under the fabric
 * lock (emul_ring_on_msg). */
G_GNUC_INTERNAL gboolean emul_ring_conn_ready(gint fd, GIOCondition cond, gpointer data);

/* emul_ring_cm.c */
/* What a new connection needs, made with no lock held (emul_ring_listen.c,
 * emul_ring_dial_open): the peer's process and effective user by
 * SO_PEERCRED (0 and (uid_t) -1 when unknown), a random nonce (never 0),
 * the connection's bell (an eventfd, or -1), and the knobs of the
 * environment (read by the application's thread, never the progress
 * thread's). */
G_GNUC_INTERNAL pid_t emul_ring_peer_cred(int fd, uid_t *uid);
G_GNUC_INTERNAL uint64_t emul_ring_nonce_new(void);
G_GNUC_INTERNAL int emul_ring_bell_new(void);
G_GNUC_INTERNAL emul_ring_knobs_t emul_ring_knobs_read(void);
/* A connection over socket @fd (fabric lock held), on @side (0 active, 1
 * passive), with what the calls above made; its socket is watched once
 * the lock is let go. */
G_GNUC_INTERNAL emul_xconn_t *emul_ring_conn_new(int fd, int side, pid_t pid, int pidfd, uid_t uid,
                                                 uint64_t nonce, int bell_fd,
                                                 const emul_ring_knobs_t *k);
void emul_ring_conn_unref(emul_xconn_t *x);
void emul_ring_close(emul_xconn_t *x);
void emul_ring_fail_pending(emul_xconn_t *x, emul_work_t *w);

/* emul_ring_teardown.c */
/* This side ends the connection: tell the peer (DISC, or BREAK with the
 * request that failed, and @fault when the peer gets an event), release
 * it, report and flush locally.  @local (or NULL): this QP's affiliated
 * event, raised with the end's events, after the message is sent. */
void emul_ring_teardown(emul_qp_t *qp, emul_work_t *w, x_msg_type_t type, rnicpi_wc_status_t st,
                        uint64_t seq, const x_fault_t *fault, const rnicpi_async_cause_t *local,
                        const void *pdata, uint32_t len);
void emul_ring_peer_break(emul_xconn_t *x, const x_msg_t *m, emul_work_t *w);
/* The peer process died (its socket's EOF, or its pidfd: fabric lock and
 * the QP's link held): a handshake fails, a connection breaks. */
void emul_ring_peer_died(emul_xconn_t *x, emul_work_t *w);
/* The peer broke the protocol (fabric lock held): said, with the peer's
 * process and user and what it sent (@fmt), and the connection broken as
 * for the peer's death; nothing else of this process is touched. */
void emul_ring_peer_violation(emul_xconn_t *x, emul_work_t *w, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* The peer took nothing from our ring for @stalled_us with frames waiting
 * (fabric lock and the QP's link held; emul_ring.h, "Timeout"): said, the
 * oldest work request completed with a transport error, the connection
 * broken, the rest flushed. */
void emul_ring_timed_out(emul_xconn_t *x, gint64 stalled_us, emul_work_t *w);

/* emul_ring.c */
gboolean emul_ring_pending(emul_xconn_t *x);  /* the peer's ring has frames */
/* Frames we published wait in our ring, not taken by the peer; its
 * `taken` word, read once, in *@taken (emul_ring.h, "Timeout"). */
gboolean emul_ring_waiting(emul_xconn_t *x, uint64_t *taken);
void emul_ring_pump(emul_xconn_t *x);
gboolean emul_ring_drain(emul_xconn_t *x, gboolean cut, emul_work_t *w);
/* A drainer's turn at @x (fabric lock and the QP's link held, a reference
 * to @x): emul_ring_drain, and after it the long copies it left to its
 * drainer (emul_ring_issue_owed, which lets the locks go for each); a
 * drain cut at a long Read Response goes on after its copy. */
void emul_ring_serve(emul_xconn_t *x, emul_work_t *w);
/* The drain of @qp's ring @x under the QP's link alone (a busy poll's, a
 * woken sleeper's, the progress thread's; the
 * fabric lock not held): Sends, and the bounce mode's RDMA Writes, Reads
 * and Read Responses, whole in one frame (emul_ring_recv_short,
 * emul_ring_write_short, emul_ring_read_short, emul_ring_answer_short)
 * and the completions of the peer's ACK word with nothing to issue behind
 * them.  What it found: X_DRAIN_DID (completions
 * pushed), X_DRAIN_FABRIC (it stopped at work the full drain,
 * emul_ring_drain, takes under the fabric lock). */
#define X_DRAIN_DID 1u
#define X_DRAIN_FABRIC 2u
unsigned emul_ring_drain_link(emul_qp_t *qp, emul_xconn_t *x, emul_work_t *w);
/* emul_progress.c: the progress thread's drain of @x's ring (referenced)
 * under its QP's link @l alone (referenced; no lock held, the link waited
 * for), as an application thread's busy poll drains it
 * (emul_ring_drain_link). */
unsigned emul_ring_drain_alone(emul_link_t *l, emul_xconn_t *x, emul_work_t *w);
void emul_ring_space(emul_xconn_t *x);
void emul_ring_free_queues(emul_xconn_t *x);
gboolean emul_ring_ring_push_short(emul_xconn_t *x, uint64_t seq, const rnicpi_sge_t *sg, uint32_t nsg,
                                uint64_t len, guint *bell);
void emul_ring_doorbell(emul_xconn_t *x, guint bell);  /* rung at emul_fabric_unlock */
/* Request @seq, @len bytes of @sg[@n], whole in one frame with the short
 * header, its bell rung: a Send's common case (emul_ring_send, and the
 * fast case's, emul_ring_hot).  FALSE, with nothing pushed, when the peer
 * pulls its payload (attach) or it does not fit. */
static inline __attribute__((always_inline)) gboolean
emul_ring_send_short(emul_xconn_t *x, uint64_t seq, const rnicpi_sge_t *sg, uint32_t n, uint64_t len)
{
  guint bell = 0;
  if ((x->peer_cma && len > X_INLINE_MAX) || x->dead ||
      !emul_ring_ring_push_short(x, seq, sg, n, len, &bell))
    return FALSE;
  if (bell)
    emul_ring_doorbell(x, bell);
  return TRUE;
}
void emul_ring_ack(emul_xconn_t *x, uint64_t upto);
/* FALSE when a borrowed payload had to wait and no memory held its copy:
 * nothing was sent or queued (the caller breaks the connection). */
gboolean emul_ring_emit(emul_xconn_t *x, x_out_t *o, gboolean owned);
/* Push @o (one frame at most; o->buf borrowed) into the ring at once when
 * nothing waits ahead of it and it fits (the QP's link held): FALSE, with
 * nothing pushed, otherwise. */
gboolean emul_ring_emit_now(emul_xconn_t *x, x_out_t *o);

/* The ring's requester ops (emul_xport_ops_t's ready and place:
 * emul_ring_copy.c; transmit: emul_ring_resp.c). */
gboolean emul_ring_req_ready(const emul_qp_t *qp);
emul_exec_t emul_ring_place(emul_qp_t *qp, emul_swqe_t *s, gboolean behind, gboolean draining, emul_work_t *w);
emul_exec_t emul_ring_send(emul_qp_t *qp, emul_pkt_t *pkt, emul_work_t *w);
/* Long copies (emul_ring_copy.c), of a request's bytes or of a Send's
 * payload pulled (emul_ring_resp.c): whether a copy of @len bytes lets the
 * fabric lock go (an attach call, @attach, whatever its length: a system
 * call; a memcpy when it is long), when nobody waits for @qp's copies to
 * end (emul_qp_wait_copy) nor for the process's (emul_wait_copies). */
gboolean emul_ring_copy_unlocks(const emul_qp_t *qp, uint64_t len, gboolean attach);
/* A long copy (*@unlock) found by a drain (@draining): TRUE when it is left
 * to the drainer for after its drain (x->issue_owed set; the caller
 * returns XR_OWED), whoever drains. */
gboolean emul_ring_copy_owed(emul_xconn_t *x, gboolean draining, gboolean *unlock);
/* Let the fabric lock and @qp's link go for a long copy of @qp, marking it
 * (*@mark: the QP's xcopying or rcopying) and holding its connection and
 * mappings; emul_ring_copy_end takes both locks back and lets them go
 * (errno kept). */
emul_xconn_t *emul_ring_copy_begin(emul_qp_t *qp, gboolean *mark);
void emul_ring_copy_end(emul_qp_t *qp, emul_xconn_t *x, gboolean *mark);
/* Hold by reference the regions of this process that list @s of @qp
 * names (fabric lock held), for a long copy into or out of them: FALSE,
 * nothing held, when one cannot be (the copy then keeps the lock).  The
 * copier puts them (emul_hold_drop) before it takes the lock back. */
gboolean emul_ring_copy_hold(emul_qp_t *qp, emul_hold_t *h, const rnicpi_sge_t *s, uint32_t n);
void emul_ring_answered(emul_qp_t *qp, emul_work_t *w);
void emul_ring_issue_owed(emul_xconn_t *x, emul_work_t *w);
/* An answer @f found by a drain; @owned: @buf is the caller's to give
 * (assembled), else it lives in the ring until the drain ends. */
void emul_ring_answer(emul_qp_t *qp, const x_frame_t *f, uint8_t *buf, gboolean owned, emul_work_t *w);
/* A teardown about to run: the answers queued behind a copy that is not
 * running (qp->xans) complete now, under the lock, as the peer gave them. */
void emul_ring_answers_settle(emul_qp_t *qp, emul_work_t *w);
/* Move bytes between local pieces @l and the pieces @r of process @pid,
 * pinned by @pidfd (emul_ring_copy.c): FALSE, errno ESRCH, when @pidfd is
 * -1 or says the process exited (nothing then moved into it). */
gboolean emul_ring_vm_copy(pid_t pid, int pidfd, int mem, gboolean to_peer, const struct iovec *l, int nl,
                           const struct iovec *r, int nr);
int emul_ring_sge_iov(const rnicpi_sge_t *s, uint32_t n, struct iovec *iov);

/* A message's payload read in place: @len bytes, the first @na at @a and
 * the rest at @b (the ring's start, for a frame that wraps its end). */
typedef struct x_span {
  const uint8_t *a, *b;
  uint64_t na, len;
} x_span_t;
/* emul_ring_resp.c: land payload @p in the scatter list @sge[@n] (checked;
 * as far as it holds it), the message's last byte last (emul_place). */
void emul_ring_span_scatter(const rnicpi_sge_t *sge, uint32_t n, const x_span_t *p);
/* emul_ring_resp.c: the bounce mode's Read Response @f (its payload @p,
 * whole in one frame) for the RDMA Read at the head of @qp's send queue,
 * landed and completed when that Read is one (not with Invalidate) into
 * SGEs whose keys name regions whose entries never change and that still
 * pass, no copy runs, nothing waits behind it to be issued and no
 * disconnect waits for it (the QP's link held).  FALSE, nothing done,
 * otherwise: the full drain takes it. */
gboolean emul_ring_answer_short(emul_qp_t *qp, emul_xconn_t *x, const x_frame_t *f, const x_span_t *p,
                                emul_work_t *w);

/* emul_ring_resp.c */
/* A Send whole in one frame (@f, its payload @p; no Invalidate, no
 * attach), landed in the next receive of @qp's queue or SRQ when that
 * holds it and every SGE of it passes the check (the QP's link held):
 * completed and acknowledged.  FALSE, nothing done, when it does not
 * apply. */
gboolean emul_ring_recv_short(emul_qp_t *qp, emul_xconn_t *x, const x_frame_t *f, const x_span_t *p,
                              emul_work_t *w);
/* The bounce mode's RDMA Write whole in one frame (@f, its payload @p),
 * landed when its key names a region whose entry never changes and the
 * region takes it (the QP's link held): acknowledged.  FALSE, nothing
 * done, otherwise: the full drain executes it, or refuses it. */
gboolean emul_ring_write_short(emul_qp_t *qp, emul_xconn_t *x, const x_frame_t *f, const x_span_t *p);
/* The bounce mode's RDMA Read @f, answered at once in one Read Response
 * frame when its key names a region whose entry never changes, the region
 * gives it and the ring has room (the QP's link held).  FALSE, nothing
 * done, otherwise: the full drain answers it, or refuses it. */
gboolean emul_ring_read_short(emul_qp_t *qp, emul_xconn_t *x, const x_frame_t *f);
/* @draining: called from a drain of the ring (a long pull is XR_OWED). */
xr_t emul_ring_exec_in(emul_qp_t *qp, x_in_t *in, gboolean draining, emul_work_t *w);
void emul_ring_run_in(emul_qp_t *qp, gboolean draining, emul_work_t *w);

/* The requester's and the responder's check of a local SGE (both on the
 * latency path, hence inline here). */
/* emul_sge_region for @sg, answered from x->hot when it names the region the
 * last one passed and no region changed since.  FALSE sends the caller to
 * the full path, which checks again: so does a key whose entry changes
 * under the fabric lock (emul_key_fixed) when this thread does not hold
 * it; such an entry is never remembered. */
static inline __attribute__((always_inline)) gboolean
emul_ring_hot_local(emul_qp_t *qp, emul_xconn_t *x, const rnicpi_sge_t *sg, uint32_t need)
{
  x_hot_t *h = &x->hot;
  uint64_t gen = __atomic_load_n(&emul_fabric.mr_gen, __ATOMIC_RELAXED);
  if (sg->lkey == h->lkey && h->lgen == gen && (h->laccess & need) == need &&
      sg->addr >= h->lstart && sg->length <= h->llen && sg->addr - h->lstart <= h->llen - sg->length)
    return TRUE;
  if (!emul_fabric_mine && !emul_key_fixed(emul_pers_of_qp(qp), sg->lkey))
    return FALSE;
  emul_mr_t *mr = emul_sge_region(qp, sg, need);
  if (mr == NULL)
    return FALSE;
  if (mr->fr)
    return TRUE;  /* checked, not remembered: a fast registration changes it */
  h->lkey = sg->lkey;
  h->lstart = (uint64_t) (uintptr_t) mr->addr;
  h->llen = mr->length;
  h->laccess = mr->access;
  h->lgen = gen;  /* as read before the check: a change since makes it stale */
  return TRUE;
}

/* emul_ring_copy.c: regions of the peer mapped here.  Lookup returns where
 * entry @e (index @index, checked by the caller) is mapped, or NULL (and
 * asks the peer for it, once). */
G_GNUC_INTERNAL extern gboolean emul_ring_map_on;
uint8_t *emul_ring_map_lookup(emul_xconn_t *x, uint32_t index, const x_mr_entry_t *e);
/* A mapping the peer asked of this process, or answered to it (a message
 * read under the fabric lock): what its system calls need (reading
 * /proc/self/maps and opening the memfd to answer; checking and mapping
 * the answer's), which emul_ring_map_io makes with the lock let go. */
typedef struct emul_map_io {
  uint32_t type;        /* X_MAP_REQ or X_MAP_REP */
  uint32_t index, key;
  uint64_t addr, len;   /* X_MAP_REQ: 0 when the region cannot be mapped */
  uint64_t file_off;    /* X_MAP_REP */
  int fd;               /* X_MAP_REP: the answer's memfd, ours to close; -1 */
  const char *why;      /* X_MAP_REQ: why it stays unmapped, when it does */
} emul_map_io_t;
/* Fabric lock held: the region @m asks for, as it is now, if @x's peer
 * (trusted) may map it. */
void emul_ring_on_map_req(emul_xconn_t *x, const x_msg_t *m, emul_map_io_t *io);
/* Fabric lock and the QP's link held: whether @m answers what @x asked,
 * in @io (taking @fd, which the caller sets to -1 then). */
gboolean emul_ring_on_map_rep(emul_xconn_t *x, const x_msg_t *m, int fd, emul_map_io_t *io);
/* No lock held (a reference to @x): answer the request, or map the
 * answer's pages and put them in @x's table (taking the fabric lock and
 * the link for that alone). */
void emul_ring_map_io(emul_xconn_t *x, emul_map_io_t *io);
/* emul_ring_map_io's answer half (emul_ring_copy.c). */
void emul_ring_map_take(emul_xconn_t *x, emul_map_io_t *io);
/* Unmap the peer's regions mapped here (the connection's last reference). */
void emul_ring_maps_free(emul_xconn_t *x);
/* The memfd @fd (the application frees it, emul_mem.c) is no longer
 * exported: the descriptor of our own kept for it is closed (no lock held). */
void emul_ring_share_forget(int fd);

/* emul_ring_copy.c: the peer process pinned.  Pin: a pidfd of the peer
 * of socket @sock (process @pid by SO_PEERCRED), made with no lock held,
 * or -1 (errno).  Alive: @pidfd (-1: FALSE) has not signalled its
 * process's exit (a system call).  Mem open: process @pid's memory file
 * for short attach copies, opened before the look at the pin that makes
 * it the pinned process's (x_probe), or -1.  Watch: the progress thread's watch of
 * x->peer_pidfd, made (x->pid_src; none without one), started and
 * destroyed with the connection's socket watch (emul_ring_cm.c,
 * emul_ring_msg.c). */
int emul_ring_peer_pin(int sock, pid_t pid);
gboolean emul_ring_peer_alive(int pidfd);
int emul_ring_peer_mem_open(pid_t pid);
void emul_ring_peer_watch_new(emul_xconn_t *x);

/* emul_ring_ud.c: a UD service request arrived on @x (a listener's
 * socket); *@sock is a duplicate of that socket made as the request was
 * read (or -1), which the request takes (*@sock set to -1) to be answered
 * on. */
void emul_ring_ud_on_svc_req(emul_xconn_t *x, const x_msg_t *m, int *sock, emul_work_t *w);

/* emul_ring_msg.c to emul_ring_cm.c: what the progress thread read from a
 * connection's socket (emul_ring_conn_ready), handed over. */

/* What a handshake message needs of system calls, made by the progress
 * thread as it reads the message, before it takes the fabric lock
 * (x_conn_pre): the peer's connection segment (REQ) and region table
 * (ATTACH, REP) checked and mapped, its bell checked (ATTACH, REP), its
 * memory probed (REQ, PROBE).  What the handler does not take is unmapped
 * or closed after the lock (x_pre_drop). */
typedef struct {
  void *seg;      /* MAP_FAILED: none */
  void *table;    /* MAP_FAILED: none */
  int bell;       /* the peer's bell eventfd, checked; -1: none */
  const char *bad;  /* why a descriptor of the message was refused, or NULL */
  gboolean cma;   /* this process can attach to the peer's memory (x_probe) */
  uint64_t proof; /* what it read there */
  int mem;        /* the peer's memory file (x_probe), or -1 */
  gboolean trust; /* PROBE, ATTACH: the peer proved it can attach to us, and is
                   * of our effective user */
  int sock;       /* a UD service request's: the socket duplicated, to answer on
                   * (emul_ring_ud_on_svc_req); -1: none */
} x_pre_t;

/* Messages one callback reads from a connection's socket
 * (emul_ring_conn_ready). */
#define X_READ_BATCH 8

/* What the messages read in one callback leave to be made with the fabric
 * lock let go: the mappings asked and answered (emul_ring_map_io), at most
 * one per message. */
typedef struct {
  emul_map_io_t io[X_READ_BATCH];
  guint n;
} x_later_t;

/* Handle message @m read from @x's socket, in order (fabric lock held):
 * @fds, the @nfds descriptors that came with it (a handler that keeps one
 * sets it to -1; the rest are closed after the lock), @pre what its system
 * calls made before the lock; a mapping asked or answered joins @later. */
G_GNUC_INTERNAL void emul_ring_on_msg(emul_xconn_t *x, const x_msg_t *m, int *fds, int nfds,
                                      x_pre_t *pre, emul_work_t *w, x_later_t *later);

#endif
