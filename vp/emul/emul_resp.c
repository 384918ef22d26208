/*
 * vp/emul: the responder, written once for both transports (rxe_resp's
 * model): a request comes as a packet (emul_pkt_t), built by the in-process
 * requester when it is posted (emul_xport_local.c) or decoded from the ring of a
 * connection to another process (emul_ring_resp.c), and emul_resp_rx
 * (emul_xport.h, inline in each transport) checks it with the rules here,
 * executes it and answers it through the transport's ops.
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

uint64_t
emul_resp_atomic(uint8_t *t, gboolean fetch_add, uint64_t compare_add, uint64_t swap)
{
  uint64_t old;
  memcpy(&old, t, 8);
  uint64_t nv = fetch_add ? old + compare_add : old == compare_add ? swap : old;
  memcpy(t, &nv, 8);
  return old;
}

emul_rwqe_t *
emul_resp_recv_take(emul_qp_t *resp, gboolean inv, uint64_t inv_key, gboolean *blocked, emul_fault_t *f)
{
  *blocked = FALSE;
  emul_rq_lock(resp);
  if (emul_wq_empty(emul_qp_rq(resp))) {
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
  return emul_resp_recv_pop(resp);
}

emul_rwqe_t *
emul_resp_recv_pop(emul_qp_t *resp)
{
  emul_rwqe_t *r = emul_wq_pop(emul_qp_rq(resp));
  gboolean limit = resp->srq != NULL && emul_srq_took(resp->srq);
  emul_rq_unlock(resp);
  if (limit)
    emul_srq_limit(resp->srq);
  return r;
}

void
emul_resp_recv_put(emul_qp_t *resp, emul_rwqe_t *r)
{
  emul_rq_lock(resp);
  emul_wq_put(emul_qp_rq(resp), r);
  emul_rq_unlock(resp);
}

gboolean
emul_resp_recv_fits(emul_qp_t *resp, emul_rwqe_t *r, uint64_t len, emul_fault_t *f, emul_work_t *w)
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
  emul_resp_recv_put(resp, r);
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
  emul_resp_recv_put(resp, r);
}

void
emul_resp_recv_imm(emul_qp_t *resp, emul_rwqe_t *r, uint64_t imm, uint64_t len, emul_work_t *w)
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
  emul_resp_recv_put(resp, r);
}
