/*
 * vp/emul's transport interface (rxe's model): what travels between a
 * requester and its peer's responder and back to the completer, as a
 * packet (emul_pkt_t), and the ops a transport gives them
 * (emul_xport_ops_t): in process, emul_xport_local.c; across processes,
 * the ring (emul_ring_resp.c frames requests and decodes
 * them for the responder, emul_comp_run takes the answers).  The
 * responder (emul_resp_rx) and the requester's step toward the peer
 * (emul_req_remote) are written once here, inline in each transport's
 * file with its ops a constant, so that an in-process post makes no call
 * for the layering.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef EMUL_XPORT_H
#define EMUL_XPORT_H

#include "emul.h"

/* A transport's ops (rxe's model: the requester, responder and completer
 * call only these).  In process (emul_xport_local.c) the peer's responder
 * runs in the requester's thread and the bytes move by memcpy; across
 * processes (emul_ring_resp.c) a frame decoded from the ring brings the
 * request, whose requester framed it itself (emul_ring_resp.c): no send. */
typedef struct emul_xport_ops {
  /* Requester: whether @qp may issue requests now. */
  gboolean (*ready)(const emul_qp_t *qp);
  /* Requester, optional: make queued request @s itself, one-sided (out of
   * the queue while it runs, put back when nothing was done): NOT when
   * this transport does not, BLOCKED when it must wait for the answers of
   * the requests ahead (@behind), OWED when a drain (@draining) found a
   * long copy, else DONE or FAILED (completed). */
  emul_exec_t (*place)(emul_qp_t *qp, emul_swqe_t *s, gboolean behind, gboolean draining,
                       emul_work_t *w);
  /* Requester: hand request @pkt, checked by the local rule, to the peer;
   * how it ended (emul_exec_t).  With @at_once the peer answers within
   * the call (the request is then done, blocked or failed); else the
   * request is issued, and completes when its answer comes. */
  emul_exec_t (*transmit)(emul_qp_t *qp, emul_pkt_t *pkt, emul_work_t *w);
  gboolean at_once;
  /* Responder: move the payload into @dst[@n]: receive @r's list for a
   * Send, the checked target for a Write (@r: the receive of its immediate
   * data, or NULL).  On a failure the transport gives @r back to its
   * queue, reports the failure its way and returns FALSE. */
  gboolean (*pull)(emul_qp_t *resp, emul_pkt_t *pkt, emul_rwqe_t *r, const rnicpi_sge_t *dst,
                   uint32_t n, emul_work_t *w);
  /* Responder: the request was executed (@t: its target, a Read's bytes;
   * an atomic's old value in pkt->old): answer it. */
  emul_exec_t (*answer)(emul_qp_t *resp, emul_pkt_t *pkt, uint8_t *t, emul_work_t *w);
  /* Responder: it refused the request with @f: both sides break. */
  void (*refuse)(emul_qp_t *resp, const emul_pkt_t *pkt, emul_fault_t f, emul_work_t *w);
  /* Optional: receive @r (taken) proven here to hold the payload, by the
   * transport's own cache of checked keys (else the responder checks its list). */
  gboolean (*placed)(emul_qp_t *resp, const emul_pkt_t *pkt, const emul_rwqe_t *r);
} emul_xport_ops_t;

/* One request as the responder sees it, or one answer as the completer
 * sees it, whichever transport brought it (rxe's rxe_pkt_info).  An
 * answer's op is the request's kind it answers: RDMA_READ (a Read
 * Response: len bytes at buf) or an ATOMIC_* (its ACK: the old value). */
struct emul_pkt {
  rnicpi_wr_opcode_t op;  /* SEND, SEND_INV, RDMA_WRITE(_IMM), RDMA_READ, ATOMIC_*, IMM_DATA */
  uint64_t seq;           /* RC order: the requester's WR */
  uint64_t raddr, rkey, inv_key, imm, compare_add, swap;
  uint64_t len;           /* the message's bytes (immediate data alone: 0) */
  uint64_t old;           /* an atomic's result, for the answer */
  const uint8_t *buf;     /* an answer's: a Read Response's bytes */
  gboolean malformed;     /* an answer whose frame breaks its kind's form: refused */
  /* The transport's.  In process: the requester, its request and its
   * checked local list.  Across processes: the frame (x_in_t), its
   * connection, and whether its copy lets the locks go. */
  emul_qp_t *req;
  const rnicpi_send_wr_t *wr;
  const rnicpi_sge_t *sg;
  void *in;
  emul_xconn_t *x;
  gboolean unlock;
};

/* Whether @op is a Send's, whose payload a receive takes. */
static inline gboolean
emul_pkt_is_send(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_SEND || op == RNICPI_WR_SEND_INV;
}

/* What the responder does for each opcode: check a target, take a
 * receive, move a payload, execute an atomic. */
enum { EMUL_RX_TARGET = 1, EMUL_RX_RECV = 2, EMUL_RX_PULL = 4, EMUL_RX_ATOMIC = 8 };
static const uint8_t emul_rx_of[RNICPI_WR_OPCODE_COUNT] = {
  [RNICPI_WR_SEND] = EMUL_RX_RECV | EMUL_RX_PULL,
  [RNICPI_WR_SEND_INV] = EMUL_RX_RECV | EMUL_RX_PULL,
  [RNICPI_WR_RDMA_WRITE] = EMUL_RX_TARGET | EMUL_RX_PULL,
  [RNICPI_WR_RDMA_WRITE_IMM] = EMUL_RX_TARGET | EMUL_RX_RECV | EMUL_RX_PULL,
  [RNICPI_WR_IMM_DATA] = EMUL_RX_RECV,
  [RNICPI_WR_RDMA_READ] = EMUL_RX_TARGET,
  [RNICPI_WR_ATOMIC_CMP_SWP] = EMUL_RX_TARGET | EMUL_RX_ATOMIC,
  [RNICPI_WR_ATOMIC_FETCH_ADD] = EMUL_RX_TARGET | EMUL_RX_ATOMIC,
};

/* The responder, written once: check the target (key, rights, bounds,
 * IRD) and the receive, move the payload, execute, answer (rxe_resp's
 * states), each transport through its @ops; its rules are emul_resp.c's.
 * Caller holds @resp's lock (emul.h, "Locks").  Inline, with @ops a
 * constant of the caller's file: each transport's calls are direct and
 * its packet stays in registers (an in-process post runs this whole).
 *
 * Immediate data (RNIC-PI 1.5), alone or after an RDMA Write: the Write's
 * target is checked first, then the receive taken (none: a Send's fate,
 * so an InfiniBand Write waits with nothing placed, and runs again whole
 * when a receive comes), the bytes placed, and only then does the receive
 * complete (IBTA 9.4.3; RFC 7306 6.3: the Immediate Data message follows
 * its Write). */
static inline __attribute__((always_inline)) emul_exec_t
emul_resp_rx(emul_qp_t *resp, emul_pkt_t *pkt, const emul_xport_ops_t *ops, emul_work_t *w)
{
  const uint8_t how = emul_rx_of[pkt->op];
  const gboolean imm = pkt->op == RNICPI_WR_IMM_DATA || pkt->op == RNICPI_WR_RDMA_WRITE_IMM;
  emul_fault_t f;
  uint8_t *t = (uint8_t *) "";
  emul_rwqe_t *r = NULL;
  if ((how & EMUL_RX_TARGET) &&
      (t = emul_resp_target(resp, imm ? RNICPI_WR_RDMA_WRITE : pkt->op, pkt->raddr, pkt->rkey,
                            (how & EMUL_RX_ATOMIC) ? 8 : pkt->len, &f)) == NULL)
    goto refuse;
  if (how & EMUL_RX_RECV) {
    gboolean blocked;
    r = emul_resp_recv_take(resp, pkt->op == RNICPI_WR_SEND_INV, pkt->inv_key, &blocked, &f);
    if (r == NULL) {
      if (blocked)
        return EMUL_EXEC_BLOCKED;  /* infinite RNR retry: wait for a receive */
      goto refuse;
    }
    if (!(ops->placed != NULL && ops->placed(resp, pkt, r)) &&
        !emul_resp_recv_fits(resp, r, imm ? 0 : pkt->len, &f, w))
      goto refuse;
  }
  if (how & EMUL_RX_PULL) {
    /* One piece: a Write's target is one range of one entry. */
    rnicpi_sge_t at = { .addr = (uint64_t) (uintptr_t) t, .length = (uint32_t) pkt->len, .lkey = pkt->rkey };
    gboolean send = emul_pkt_is_send(pkt->op);
    if ((send || pkt->len > 0) && !ops->pull(resp, pkt, r, send ? r->sge : &at, send ? r->num_sge : 1, w))
      return EMUL_EXEC_FAILED;
  }
  /* Atomic against every requester of this memory: the fabric lock
   * serialises them (an atomic never takes a fast path). */
  if (how & EMUL_RX_ATOMIC)
    pkt->old = emul_resp_atomic(t, pkt->op == RNICPI_WR_ATOMIC_FETCH_ADD, pkt->compare_add, pkt->swap);
  if (imm)
    emul_resp_recv_imm(resp, r, pkt->imm, pkt->len, w);
  else if (r != NULL)
    emul_resp_recv_done(resp, r, pkt->len, pkt->op == RNICPI_WR_SEND_INV, pkt->inv_key, w);
  return ops->answer(resp, pkt, t, w);
refuse:
  ops->refuse(resp, pkt, f, w);
  return EMUL_EXEC_FAILED;
}

/* Request @wr of @qp (@seq in its send queue) as a packet, its local list
 * @sg checked (@len bytes). */
static inline __attribute__((always_inline)) emul_pkt_t
emul_req_pkt(emul_qp_t *qp, const rnicpi_send_wr_t *wr, uint64_t seq, const rnicpi_sge_t *sg, uint64_t len)
{
  return (emul_pkt_t) {
    .op = wr->opcode == RNICPI_WR_RDMA_READ_INV ? RNICPI_WR_RDMA_READ : wr->opcode, .seq = seq,
    .raddr = wr->remote_addr, .rkey = wr->rkey, .inv_key = wr->invalidate_rkey,
    .imm = wr->imm_data, /* the responder keeps its personality's bits, ours (emul_cm.c) */
    .compare_add = wr->compare_add, .swap = wr->swap,
    .len = len, .req = qp, .wr = wr, .sg = sg,
  };
}

/* The requester's step toward the peer, written once: the local rule
 * (emul_req_local; a failure completes @wr with a local protection error
 * and breaks the connection), then @wr as a packet handed to the
 * transport (@ops->transmit).  Caller holds @qp's lock.  Inline, with @ops a
 * constant of the transport's file, as emul_resp_rx: built whole here and
 * never addressed by a call that is not inlined, the packet lives in
 * registers (an in-process post runs requester and responder as one). */
static inline __attribute__((always_inline)) emul_exec_t
emul_req_remote(emul_qp_t *qp, const rnicpi_send_wr_t *wr, const emul_xport_ops_t *ops, emul_work_t *w)
{
  rnicpi_sge_t win[EMUL_MAX_SINK_SGE];
  uint64_t len;
  const rnicpi_sge_t *sg = emul_req_local(qp, wr, win, &len);
  if (sg == NULL) {
    emul_req_fail_local(qp, wr, RNICPI_WC_LOC_PROT_ERR, w);
    return EMUL_EXEC_FAILED;
  }
  emul_pkt_t pkt = emul_req_pkt(qp, wr, 0, sg, len);
  return ops->transmit(qp, &pkt, w);
}

/* The transports (emul_xport_local.c; the ring's: emul_ring_resp.c). */
G_GNUC_INTERNAL extern const emul_xport_ops_t emul_xport_local;
G_GNUC_INTERNAL extern const emul_xport_ops_t emul_xport_ring;

#endif /* EMUL_XPORT_H */
