/*
 * vp/emul: the responder, written once for both transports (rxe_resp's
 * model): a request comes as a packet (emul_pkt_t), built by the in-process
 * requester when it is posted (emul_exec.c) or decoded from the ring of a
 * connection to another process (emul_ring_resp.c), and emul_resp_rx
 * checks it, executes it and answers it through the packet's transport.
 *
 * The checks are a responder's (IBTA vol 1, 9.4 and 10.6; RFC 5040, 5041
 * and 7306); a refusal names its fault (emul_fault_t), which the transport
 * reports its way (in process: both QPs at once; across processes: a
 * Terminate-like teardown message).  Caller holds the QP's lock (emul.h,
 * "Locks").
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "emul.h"

uint32_t
emul_resp_ird(const emul_qp_t *resp)
{
  return MIN(resp->ird, resp->attr.ird);
}

uint8_t *
emul_remote_range(emul_qp_t *resp, uint64_t raddr, uint64_t rkey, uint64_t len, uint32_t need)
{
  emul_mr_t *mr = emul_mr_lookup(emul_pers_of_qp(resp), rkey);
  if (mr == NULL)
    return NULL;
  /* A window's key answers with its own range and rights, only while bound,
   * and a narrow one only through its QP (emul_key_access). */
  emul_grant_t g = { .access = mr->pd == resp->pd ? emul_key_access(mr, resp) : 0,
                     .qp_access = resp->attr.access, .iova = mr->iova, .length = mr->length };
  return emul_grant_allows(&g, need, raddr, len) ? mr->addr + (raddr - mr->iova) : NULL;
}

/* The remote rights each one-sided opcode needs at the responder. */
static uint32_t
remote_need(rnicpi_wr_opcode_t op)
{
  return op == RNICPI_WR_RDMA_WRITE ? RNICPI_ACCESS_REMOTE_WRITE :
         rnicpi_wr_is_atomic(op) ? RNICPI_ACCESS_ATOMIC : RNICPI_ACCESS_REMOTE_READ;
}

uint8_t *
emul_resp_target(emul_qp_t *resp, rnicpi_wr_opcode_t op, uint64_t raddr, uint64_t rkey, uint64_t len,
                 emul_fault_t *f)
{
  *f = EMUL_FAULT_OP;
  /* A Read or an atomic needs room for it: IRD 0 takes none. */
  if (op != RNICPI_WR_RDMA_WRITE && emul_resp_ird(resp) == 0)
    return NULL;
  /* A misaligned target is an operation the responder cannot execute, not
   * an access violation (RFC 7306 8.2: Remote Operation Error). */
  if (rnicpi_wr_is_atomic(op) && (raddr & 7) != 0)
    return NULL;
  if (len == 0)
    return (uint8_t *) "";  /* a zero-length Write or Read names no memory */
  uint8_t *t = emul_remote_range(resp, raddr, rkey, len, remote_need(op));
  if (t == NULL)
    *f = emul_access_fault(op);
  return t;
}

/* Execute an atomic on the 8 bytes at @t (Fetch and Add with @fetch_add,
 * else Compare and Swap); returns the value before it. */
static uint64_t
resp_atomic(uint8_t *t, gboolean fetch_add, uint64_t compare_add, uint64_t swap)
{
  uint64_t old;
  memcpy(&old, t, 8);
  uint64_t nv = fetch_add ? old + compare_add : old == compare_add ? swap : old;
  memcpy(t, &nv, 8);
  return old;
}

/* The receive a Send takes at @resp (with @inv, a Send with Invalidate of
 * @inv_key, whose key dies first), popped; NULL when there is none, with
 * *@blocked when the Send waits for one (receiver not ready, InfiniBand),
 * else the fault. */
static emul_rwqe_t *
recv_take(emul_qp_t *resp, gboolean inv, uint64_t inv_key, gboolean *blocked, emul_fault_t *f)
{
  emul_wq_t *rq = emul_qp_rq(resp);
  *blocked = FALSE;
  emul_rq_lock(resp);
  if (emul_wq_empty(rq)) {
    /* InfiniBand: infinite RNR retry, the Send waits; iWARP: a Terminate,
     * DDP untagged with no buffer (RFC 5041 7.2).  A waiting Send of an
     * SRQ's QP is run by the SRQ's next receive post. */
    *blocked = emul_pers_of_qp(resp)->rnr_wait;
    if (*blocked && resp->srq != NULL)
      resp->srq->starved = TRUE;
    emul_rq_unlock(resp);
    *f = EMUL_FAULT_OP;
    return NULL;
  }
  /* Send with Invalidate (IBTA 9.4.1.1.1, RFC 5040 6.10): the key must name
   * a bound window (or a valid fast-registered region) of the responder
   * usable through its QP; it dies before the receive completes (under the
   * fabric lock: not a request of the fast path, whose link it holds too). */
  if (inv && !emul_mw_invalidate(resp, inv_key)) {
    emul_rq_unlock(resp);
    *f = EMUL_FAULT_ACCESS;
    return NULL;
  }
  emul_rwqe_t *r = emul_wq_pop(rq);
  gboolean limit = resp->srq != NULL && emul_srq_took(resp->srq);
  emul_rq_unlock(resp);
  if (limit)
    emul_srq_limit(resp->srq);
  return r;
}

/* Receive @r (taken) goes back to its queue's free list, done. */
static void
recv_put(emul_qp_t *resp, emul_rwqe_t *r)
{
  emul_rq_lock(resp);
  emul_wq_put(emul_qp_rq(resp), r);
  emul_rq_unlock(resp);
}

/* Whether receive @r (taken) can hold @len bytes in memory the QP may
 * write; if not, @r completes with its error and the fault is in @f. */
static gboolean
recv_fits(emul_qp_t *resp, emul_rwqe_t *r, uint64_t len, emul_fault_t *f, emul_work_t *w)
{
  uint64_t room;
  rnicpi_wc_status_t st = RNICPI_WC_SUCCESS;
  /* emul_sges_ok sets room only for a list it accepts: a refused one is a
   * protection error whatever the lengths. */
  if (!emul_sges_ok(resp, r->sge, r->num_sge, RNICPI_ACCESS_LOCAL_WRITE, &room)) {
    st = RNICPI_WC_LOC_PROT_ERR;
    *f = EMUL_FAULT_RECV_BUFFER;
  } else if (len > room) {
    st = RNICPI_WC_LOC_LEN_ERR;
    *f = EMUL_FAULT_RECV_LENGTH;
  }
  if (st == RNICPI_WC_SUCCESS)
    return TRUE;
  emul_complete(resp->rcq, resp, r->wr_id, RNICPI_WC_RECV, st, 0, w);
  recv_put(resp, r);
  return FALSE;
}

void
emul_resp_recv_done(emul_qp_t *resp, emul_rwqe_t *r, uint64_t len, gboolean inv, uint64_t inv_key,
                    emul_work_t *w)
{
  rnicpi_wc_t rwc = {
    .wr_id = r->wr_id, .qp_ctx = resp->base.al_ctx, .status = RNICPI_WC_SUCCESS,
    .opcode = RNICPI_WC_RECV, .byte_len = (uint32_t) len,
  };
  if (inv) {
    rwc.flags = RNICPI_WC_WITH_INV;
    rwc.rkey = inv_key;
  }
  emul_cq_push(resp->rcq, &rwc, w);
  recv_put(resp, r);
}

/* Receive @r (taken, and checked by recv_fits for 0 bytes) is consumed by
 * immediate data @imm (RNIC-PI 1.5; the bits the personality carries)
 * after an RDMA Write of @len bytes (0: alone): placed in it where the
 * personality does, and completed. */
static void
recv_imm(emul_qp_t *resp, emul_rwqe_t *r, uint64_t imm, uint64_t len, emul_work_t *w)
{
  const emul_pers_t *p = emul_pers_of_qp(resp);
  /* InfiniBand places nothing: the value is in the completion alone, whose
   * length is the Write's (IBTA 9.4.3, as verbs' IBV_WC_RECV_RDMA_WITH_IMM). */
  rnicpi_wc_t rwc = {
    .wr_id = r->wr_id, .qp_ctx = resp->base.al_ctx, .status = RNICPI_WC_SUCCESS,
    .opcode = RNICPI_WC_RECV, .flags = RNICPI_WC_WITH_IMM, .imm_data = imm & p->imm_mask,
    .byte_len = p->imm_placed ? 0 : (uint32_t) len,
  };
  /* RFC 7306 6.3: the Immediate Data message's 8 bytes are its payload,
   * placed in network order in a buffer that holds them, and nothing in
   * one that does not (RNIC-PI 1.5). */
  uint64_t room = 0;
  for (uint32_t i = 0; i < r->num_sge; i++)
    room += r->sge[i].length;
  if (p->imm_placed && room >= sizeof(imm)) {
    uint64_t be = GUINT64_TO_BE(rwc.imm_data);
    emul_scatter(r->sge, r->num_sge, (const uint8_t *) &be, sizeof(be));
    rwc.byte_len = sizeof(be);
  }
  emul_cq_push(resp->rcq, &rwc, w);
  recv_put(resp, r);
}

/* What the responder does for each opcode: check a target, take a
 * receive, move a payload, execute an atomic. */
enum { RX_TARGET = 1, RX_RECV = 2, RX_PULL = 4, RX_ATOMIC = 8 };
static const uint8_t rx_of[RNICPI_WR_OPCODE_COUNT] = {
  [RNICPI_WR_SEND] = RX_RECV | RX_PULL,
  [RNICPI_WR_SEND_INV] = RX_RECV | RX_PULL,
  [RNICPI_WR_RDMA_WRITE] = RX_TARGET | RX_PULL,
  [RNICPI_WR_RDMA_WRITE_IMM] = RX_TARGET | RX_RECV | RX_PULL,
  [RNICPI_WR_IMM_DATA] = RX_RECV,
  [RNICPI_WR_RDMA_READ] = RX_TARGET,
  [RNICPI_WR_ATOMIC_CMP_SWP] = RX_TARGET | RX_ATOMIC,
  [RNICPI_WR_ATOMIC_FETCH_ADD] = RX_TARGET | RX_ATOMIC,
};

/* Immediate data (RNIC-PI 1.5), alone or after an RDMA Write: the Write's
 * target is checked first, then the receive taken (none: a Send's fate,
 * so an InfiniBand Write waits with nothing placed, and runs again whole
 * when a receive comes), the bytes placed, and only then does the receive
 * complete (IBTA 9.4.3; RFC 7306 6.3: the Immediate Data message follows
 * its Write). */
emul_exec_t
emul_resp_rx(emul_qp_t *resp, emul_pkt_t *pkt, emul_work_t *w)
{
  const uint8_t how = rx_of[pkt->op];
  const gboolean imm = pkt->op == RNICPI_WR_IMM_DATA || pkt->op == RNICPI_WR_RDMA_WRITE_IMM;
  emul_fault_t f;
  uint8_t *t = (uint8_t *) "";
  emul_rwqe_t *r = NULL;
  if ((how & RX_TARGET) &&
      (t = emul_resp_target(resp, imm ? RNICPI_WR_RDMA_WRITE : pkt->op, pkt->raddr, pkt->rkey,
                            (how & RX_ATOMIC) ? 8 : pkt->len, &f)) == NULL)
    goto refuse;
  if (how & RX_RECV) {
    gboolean blocked;
    r = recv_take(resp, pkt->op == RNICPI_WR_SEND_INV, pkt->inv_key, &blocked, &f);
    if (r == NULL) {
      if (blocked)
        return EMUL_EXEC_BLOCKED;  /* infinite RNR retry: wait for a receive */
      goto refuse;
    }
    if (!(pkt->ops->placed != NULL && pkt->ops->placed(resp, pkt, r)) &&
        !recv_fits(resp, r, imm ? 0 : pkt->len, &f, w))
      goto refuse;
  }
  if (how & RX_PULL) {
    /* One piece: a Write's target is one range of one entry. */
    rnicpi_sge_t at = { .addr = (uint64_t) (uintptr_t) t, .length = (uint32_t) pkt->len, .lkey = pkt->rkey };
    gboolean send = emul_pkt_is_send(pkt->op);
    if ((send || pkt->len > 0) &&
        !pkt->ops->pull(resp, pkt, r, send ? r->sge : &at, send ? r->num_sge : 1, w))
      return EMUL_EXEC_FAILED;
  }
  /* Atomic against every requester of this memory: the fabric lock
   * serialises them (an atomic never takes a fast path). */
  if (how & RX_ATOMIC)
    pkt->old = resp_atomic(t, pkt->op == RNICPI_WR_ATOMIC_FETCH_ADD, pkt->compare_add, pkt->swap);
  if (imm)
    recv_imm(resp, r, pkt->imm, pkt->len, w);
  else if (r != NULL)
    emul_resp_recv_done(resp, r, pkt->len, pkt->op == RNICPI_WR_SEND_INV, pkt->inv_key, w);
  return pkt->ops->answer(resp, pkt, t, w);
refuse:
  pkt->ops->refuse(resp, pkt, f, w);
  return EMUL_EXEC_FAILED;
}
