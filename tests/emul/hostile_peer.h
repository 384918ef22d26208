/*
 * The hostile peer of tests/emul/test_hostile.c: what its cases
 * (hostile_cases.c) share with its protocol plumbing (hostile_peer.c).
 * The peer speaks vp/emul's cross-process protocol itself, with no
 * libitapi and no provider: vp/emul/emul_ring.h is included for its
 * layouts and constants alone.  It is always the active side: it creates
 * the connection segment, produces ring[0] and consumes ring[1].
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef HOSTILE_PEER_H
#define HOSTILE_PEER_H

#include <glib.h>

#include "emul_ring.h"

#define LINE_MS 30000
#define ROUND_LINE(n) (((uint64_t) (n) + X_LINE - 1) & ~(uint64_t) (X_LINE - 1))
/* A socket message type the protocol does not have (peer_finish). */
#define FINISH_TYPE 77
/* The seals the library's active side puts on a segment (emul_ring_dial_open). */
#define SEALED (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* A key's fields, in the layout of both of emul's personalities
 * (vp/emul/emul_dev.c, EMUL_KEY_LAYOUT): a 24-bit table index above an
 * 8-bit tag.  The table entries and mapping requests carry them apart. */
#define KEY_INDEX(key) ((uint32_t) ((key) >> 8) & 0xffffffu)
#define KEY_TAG(key) ((uint32_t) (key) & 0xffu)
#define KEY_MAKE(index, tag) ((uint64_t) (index) << 8 | (uint64_t) (tag))

typedef struct peer {
  int sock;
  pid_t target;
  int seg_fd;
  x_seg_hdr_t *seg;
  uint8_t *out;             /* ring[0]: produced here */
  const uint8_t *in;        /* ring[1]: the target's */
  uint64_t key_out, key_in;
  uint64_t tail;            /* where the next frame goes */
  uint64_t in_head;         /* the next frame of the target's ring */
  volatile uint64_t nonce;  /* the target reads it by attach (Trust) */
  x_msg_t probe;            /* the target's PROBE */
  int rep_fds[4], rep_nfds; /* what came with its REP */
  uint32_t rep_mask;
  /* The go line: the target's buffer with remote rights (addr, len,
   * rkey), a key it deregistered, a key of another of its domains, a
   * region of local rights only. */
  uint64_t addr, len, rkey, stale, foreign, local;
  /* A BREAK the target sent, if any. */
  gboolean broke;
  uint32_t break_status;
  uint64_t break_seq;
} peer_t;

/* A case, by the name the target runs it with (hostile_cases.c). */
typedef struct peer_case {
  const char *name;
  void (*run)(peer_t *p);
  /* case_rdma's request: a Read (else a Write) of @len bytes with the key
   * @key (0: the buffer's, 1: an index past every table, 2: the stale one,
   * 3: the foreign one) at @where (0: the buffer's start, 1: across its
   * end, 2: 64 bytes before it, 3: the top of the address space). */
  gboolean read;
  uint64_t len;
  int key, where;
  gboolean iwarp;  /* the target's device is emul-iw0 (else emul0, InfiniBand) */
} peer_case_t;

extern const peer_case_t peer_cases[];
extern const size_t peer_ncases;
extern const peer_case_t *peer_the_case;  /* the one running */

/* ---- lines to and from the target's test ---- */

void peer_say(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
void peer_die(const char *fmt, ...) G_GNUC_PRINTF(1, 2) G_GNUC_NORETURN;
/* One line from stdin within @ms, without its newline; NULL at EOF or
 * timeout. */
char *peer_hear(int ms);
/* The next line must be @want. */
void peer_hear_want(const char *want);

/* ---- socket messages ---- */

/* Send @len bytes of @m (its magic as given) with @nfds descriptors. */
gboolean peer_send_raw(peer_t *p, const void *m, size_t len, const int *fds, int nfds);
/* Send @m as the library does: its magic, X_MSG_MIN + pdata_len bytes. */
gboolean peer_send_msg(peer_t *p, x_msg_t *m, const int *fds, int nfds);
void peer_doorbell(peer_t *p);
/* The next message within @ms: its size (0: EOF, -1: none in time), its
 * descriptors in @fds (up to 4). */
ssize_t peer_recv_msg(peer_t *p, x_msg_t *m, int *fds, int *nfds, int ms);
/* The next message of @type, skipping doorbells; FALSE (said as a check)
 * when the target closed or sent something else. */
gboolean peer_expect_msg(peer_t *p, uint32_t type, x_msg_t *m, int *fds, int *nfds);
/* Read what the target sends until it closes the socket; says how it
 * ended ("end=eof" or "end=open") and whether a BREAK came with a status. */
void peer_wait_end(peer_t *p);
/* A message the protocol does not have (FINISH_TYPE), then
 * peer_wait_end: the cases whose own move breaks nothing end so. */
void peer_finish(peer_t *p);

/* ---- the connection segment and the handshake ---- */

/* A memfd of @size bytes (memfd_create @flags) with @seals added (0: none),
 * mapped and laid out as the active side lays it out (emul_ring_connect). */
void peer_seg_new(peer_t *p, uint64_t size, unsigned flags, int seals);
/* A REQ as the library's (emul_ring_connect) saying @mask, with @fds. */
gboolean peer_send_req(peer_t *p, uint32_t mask, const int *fds, int nfds);
/* The target's PROBE; says whether its proof is our nonce. */
gboolean peer_wait_probe(peer_t *p);
/* ATTACH with @fds: @prove, the target's nonce read by attach (a peer of
 * its user proves it may attach: emul_ring_cm.c, Trust), else proof 0. */
gboolean peer_send_attach(peer_t *p, gboolean prove, uint32_t mask, const int *fds, int nfds);
/* The target's REP; says which descriptors came with it. */
gboolean peer_wait_rep(peer_t *p);
/* A whole handshake as the library's active side makes it, in a segment
 * sealed with @seals (0: the target seals it), trusted or not (@prove);
 * says "established" and hears the go line. */
gboolean peer_connect(peer_t *p, gboolean prove, int seals);

/* ---- ring[0], produced here ---- */

void peer_ring_write(peer_t *p, uint64_t pos, const void *src, uint64_t n);
void peer_mark_store(peer_t *p, uint64_t pos, uint64_t mark);
/* Frame @f with @payload (f->frag_len bytes, or none) at the tail,
 * published (@publish) or written but for its mark: its position, or
 * G_MAXUINT64 when the ring has no room (the target stopped taking
 * frames). */
uint64_t peer_frame_put(peer_t *p, const x_frame_t *f, const void *payload, gboolean publish);
/* A whole Send of @len bytes with the short header, as peer_frame_put. */
uint64_t peer_short_put(peer_t *p, uint64_t seq, const void *payload, uint32_t len, gboolean publish);
/* peer_frame_put, published, and a doorbell. */
void peer_frame_ring(peer_t *p, const x_frame_t *f, const void *payload);

/* ---- ring[1], the target's ---- */

/* The target's next frame within @ms, its header copied into @f (a short
 * one as the Send it is); FALSE if none came. */
gboolean peer_frame_next(peer_t *p, x_frame_t *f, int ms);

#endif
