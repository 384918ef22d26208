/*
 * vp/iwarp RDMAP: the opcode rules table (RFC 5040 4.2, 5041 4), the
 * Terminate message (RFC 5040 4.8, 5.3) sent and received, and the
 * responder's actions once iw_rx.c has a whole message: an RDMA Read
 * Request checked and queued for its Read Responses (RFC 5040 4.4, 5.2.3;
 * iw_tx.c sends them), an RFC 7306 Atomic Request executed and its
 * Response taken, Immediate Data completed (RFC 7306 6).
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "iw.h"

const iw_op_rule_t iw_op_rules[IW_OP_COUNT] = {
  [IW_OP_WRITE] = {
    .valid = true, .tagged = true, .payload = true, .name = "RDMA Write",
  },
  [IW_OP_READ_REQ] = {
    .valid = true, .qn = IW_QN_READ_REQ, .extra_hdr = sizeof(iw_rdmap_readreq_t), .single = true,
    .name = "RDMA Read Request",
  },
  [IW_OP_READ_RESP] = {
    .valid = true, .tagged = true, .payload = true, .name = "RDMA Read Response",
  },
  [IW_OP_SEND] = {
    .valid = true, .qn = IW_QN_SEND, .payload = true, .name = "Send",
  },
  [IW_OP_SEND_INV] = {
    .valid = true, .qn = IW_QN_SEND, .payload = true, .name = "Send with Invalidate",
  },
  [IW_OP_SEND_SE] = {
    .valid = true, .qn = IW_QN_SEND, .payload = true, .name = "Send with SE",
  },
  [IW_OP_SEND_SE_INV] = {
    .valid = true, .qn = IW_QN_SEND, .payload = true, .name = "Send with SE and Invalidate",
  },
  /* The Terminate's headers (control, segment length, copies) are read as
   * its RDMAP header: 4 + 2 + 18 + 28 at most. */
  [IW_OP_TERMINATE] = {
    .valid = true, .qn = IW_QN_TERMINATE, .payload = true, .single = true, .name = "Terminate",
  },
  /* RFC 7306 6.3: exactly 8 bytes, read as the message's RDMAP header. */
  [IW_OP_IMM] = {
    .valid = true, .qn = IW_QN_SEND, .extra_hdr = IW_RDMAP_IMM_BYTES, .single = true,
    .name = "Immediate Data", .rfc7306 = true,
  },
  [IW_OP_IMM_SE] = {
    .valid = true, .qn = IW_QN_SEND, .extra_hdr = IW_RDMAP_IMM_BYTES, .single = true,
    .name = "Immediate Data with SE", .rfc7306 = true,
  },
  [IW_OP_ATOMIC_REQ] = {
    .valid = true, .qn = IW_QN_READ_REQ, .extra_hdr = sizeof(iw_rdmap_atomic_req_t), .single = true,
    .name = "Atomic Request", .rfc7306 = true,
  },
  [IW_OP_ATOMIC_RESP] = {
    .valid = true, .qn = IW_QN_ATOMIC_RESP, .extra_hdr = sizeof(iw_rdmap_atomic_resp_t),
    .single = true, .name = "Atomic Response", .rfc7306 = true,
  },
};

/* A Terminate of this layer and type reports a memory rights violation:
 * the request it names completes REM_ACCESS_ERR at its sender. */
static gboolean
is_access_error(uint8_t layer, uint8_t etype)
{
  return (layer == IW_LAYER_RDMAP && etype == IW_RDMAP_ET_REMOTE_PROT) ||
         (layer == IW_LAYER_DDP && etype == IW_DDP_ET_TAGGED);
}

/* What a Terminate the peer sent reports, by its layer, type and code and
 * the RDMAP opcode of the header it copies (@named, 0xff if none). */
static rnicpi_async_cause_t
term_remote_cause(uint8_t layer, uint8_t etype, uint8_t code, uint8_t named)
{
  if (is_access_error(layer, etype))
    return RNICPI_AE_REMOTE_ACCESS;
  if (layer == IW_LAYER_DDP && etype == IW_DDP_ET_UNTAGGED && code == IW_DDP_U_TOO_LONG)
    return RNICPI_AE_REMOTE_RECV_LENGTH;
  /* RFC 5041 7.2: DDP local catastrophic on a Send: its receive buffer
   * failed the peer (as siw and this provider report it). */
  gboolean names_send = named == IW_OP_SEND || named == IW_OP_SEND_INV ||
                        named == IW_OP_SEND_SE || named == IW_OP_SEND_SE_INV;
  if (layer == IW_LAYER_DDP && etype == IW_DDP_ET_CATASTROPHIC && names_send)
    return RNICPI_AE_REMOTE_RECV;
  return RNICPI_AE_REMOTE;
}

/* Build the Terminate into qp->term; it goes out ahead of anything not yet
 * started, after the FPDU being sent (qp->lock held). */
static void
term_build(iw_qp_t *qp, uint8_t layer, uint8_t etype, uint8_t code,
           const uint8_t *ddp_hdr, uint32_t ddp_len, uint32_t seg_len,
           const uint8_t *rdmap_hdr)
{
  g_debug("QP %u: Terminate layer %u etype %u code 0x%02x", qp->base.qp_num, layer, etype, code);
  /* RFC 5040 Figure 10: a Terminate for an LLP error or a local
   * catastrophic error carries neither header. */
  if (layer == IW_LAYER_LLP || (layer == IW_LAYER_RDMAP && etype == IW_RDMAP_ET_CATASTROPHIC))
    ddp_hdr = rdmap_hdr = NULL;
  uint8_t ulpdu[IW_TERM_ULPDU_MAX];
  iw_ddp_untagged_t d = {
    .ctrl = IW_DDP_LAST | IW_DDP_VERSION, .rdmap = IW_RDMAP_VERSION | IW_OP_TERMINATE,
    .qn_be = htonl(IW_QN_TERMINATE), .msn_be = htonl(++qp->msn_tx[IW_QN_TERMINATE]),
    .mo_be = 0,
  };
  memcpy(ulpdu, &d, sizeof(d));
  uint32_t n = sizeof(d);
  iw_rdmap_term_t tc = {
    .layer_etype = (uint8_t) ((layer << 4) | (etype & 0x0f)), .code = code,
    .hdrct = (ddp_hdr != NULL ? IW_TERM_M | IW_TERM_D : 0) | (rdmap_hdr != NULL ? IW_TERM_R : 0),
  };
  memcpy(ulpdu + n, &tc, sizeof(tc));
  n += sizeof(tc);
  if (ddp_hdr != NULL) {
    uint16_t sl = htons((uint16_t) seg_len);
    memcpy(ulpdu + n, &sl, 2);
    memcpy(ulpdu + n + 2, ddp_hdr, ddp_len);
    n += 2 + ddp_len;
  }
  if (rdmap_hdr != NULL) {
    memcpy(ulpdu + n, rdmap_hdr, sizeof(iw_rdmap_readreq_t));
    n += sizeof(iw_rdmap_readreq_t);
  }
  uint16_t l = htons((uint16_t) n);
  memcpy(qp->term, &l, 2);
  memcpy(qp->term + 2, ulpdu, n);
  uint32_t pad = iw_fpdu_pad(n);
  memset(qp->term + 2 + n, 0, pad);
  uint32_t flen = 2 + n + pad;
  uint32_t crc = qp->crc ? iw_crc32c(0, qp->term, flen) : 0;
  iw_crc_put(qp->term + flen, crc);
  qp->term_len = flen + 4;
  qp->term_pending = TRUE;
}

/* After term_build and the consumer's event: send the Terminate, then our
 * FIN, and discard what comes in until the peer closes, IW_DRAIN_US at
 * most (qp->lock held). */
static void
term_drain(iw_qp_t *qp, iw_work_t *w)
{
  qp->cs = IW_CS_DRAIN;
  iw_timed_add(qp, IW_DRAIN_US);
  iw_tx_progress(qp, w);
}

/* Report a protocol error: queue a Terminate (it goes out after the FPDU
 * being sent, then our FIN), move to ERROR, flush, tell the consumer. */
void
iw_term_send(iw_qp_t *qp, rnicpi_async_cause_t cause, uint8_t layer, uint8_t etype,
             uint8_t code, const uint8_t *ddp_hdr, uint32_t ddp_len, uint32_t seg_len,
             const uint8_t *rdmap_hdr, iw_work_t *w)
{
  if (qp->fd < 0 || qp->term_sent || qp->cs == IW_CS_DRAIN) {
    iw_qp_fail(qp, RNICPI_CM_BROKEN, w);
    return;
  }
  term_build(qp, layer, etype, code, ddp_hdr, ddp_len, seg_len, rdmap_hdr);
  if (cause != RNICPI_AE_UNSPECIFIED)
    iw_qp_async(qp, cause, layer, etype, code);
  iw_qp_fail(qp, RNICPI_CM_BROKEN, w);
  term_drain(qp, w);
}

/* The initiator refuses the MPA Reply (RFC 6581 9.1): Terminate
 * LLP/MPA/@code on a connection the consumer never saw established, so it
 * learns of a refused connection (UNREACHABLE, @why), not a broken one
 * (qp->lock held). */
void
iw_term_refuse(iw_qp_t *qp, uint8_t code, rnicpi_cm_reason_t why, iw_work_t *w)
{
  iw_qp_init_stream(qp);
  term_build(qp, IW_LAYER_LLP, 0, code, NULL, 0, 0, NULL);
  iw_qp_flush(qp, w);
  iw_qp_cm_event(qp, RNICPI_CM_UNREACHABLE, NULL, 0, why);
  term_drain(qp, w);
}

/* The WR whose message the Terminate's copy of an untagged DDP header
 * names (RFC 5040 4.8: the header of the segment in error), by its queue
 * and MSN; NULL when it copies none, copies a tagged one (a Write carries
 * no MSN), or names nothing still outstanding. */
static iw_swqe_t *
term_named_wr(iw_qp_t *qp, const uint8_t *body, uint32_t len)
{
  iw_rdmap_term_t tc;
  iw_ddp_untagged_t u;
  const uint32_t at = sizeof(tc) + 2; /* the copy follows the DDP segment length */
  if (len < at + sizeof(u))
    return NULL;
  memcpy(&tc, body, sizeof(tc));
  memcpy(&u, body + at, sizeof(u));
  if (!(tc.hdrct & IW_TERM_D) || (u.ctrl & IW_DDP_TAGGED))
    return NULL;
  uint32_t qn = iw_be32(u.qn_be), msn = iw_be32(u.msn_be);
  for (iw_swqe_t *e = rnicpi_fifo_peek(&qp->sq_out); e != NULL; e = e->q_next) {
    /* A part of a scattered Read answers for the consumer's Read. */
    iw_swqe_t *wr = e->parent != NULL ? e->parent : e;
    if (!wr->internal && !wr->done && e->msn != 0 && e->qn == qn && e->msn == msn)
      return wr;
  }
  return NULL;
}

/* The peer terminated the stream (RFC 5040 5.3): the WR it names fails
 * with the remote error, the Sends and Writes before it succeed, and
 * everything else is flushed. */
void
iw_term_received(iw_qp_t *qp, const uint8_t *body, uint32_t len, iw_work_t *w)
{
  uint8_t layer = 0xf, etype = 0xf, code = 0xff;
  uint8_t named = 0xff; /* the RDMAP opcode of the header it copies */
  if (len >= sizeof(iw_rdmap_term_t)) {
    iw_rdmap_term_t tc;
    memcpy(&tc, body, sizeof(tc));
    layer = tc.layer_etype >> 4;
    etype = tc.layer_etype & 0x0f;
    code = tc.code;
    if ((tc.hdrct & IW_TERM_D) && len >= sizeof(tc) + 2 + 2)
      named = body[sizeof(tc) + 2 + 1] & IW_RDMAP_OP_MASK;
  }
  gboolean names_read = named != 0xff && iw_op_answered(named);
  g_debug("QP %u: peer sent Terminate layer %u etype %u code 0x%02x", qp->base.qp_num, layer,
          etype, code);
  /* The WR it answers: the one its DDP header copy names.  The peer
   * processes the stream in order and stops at the first error, so the
   * Sends and Writes sent before that message were placed (with
   * ITAPI_IWARP_COMPLETION=placed they may still wait for a fence's
   * answer that will not come now); the Reads and atomics before it
   * were accepted but their answers are lost, and are flushed. */
  iw_swqe_t *blame = term_named_wr(qp, body, len);
  for (iw_swqe_t *e = rnicpi_fifo_peek(&qp->sq_out); blame != NULL && e != blame; e = e->q_next)
    if (e->sent && !e->done)
      e->done = TRUE;
  /* Without a copy that names one: the oldest Read if it names a Read,
   * else the oldest Send or Write not yet known placed. */
  for (iw_swqe_t *e = rnicpi_fifo_peek(&qp->orq); names_read && e != NULL && blame == NULL; e = e->or_next)
    if (!e->internal || e->parent != NULL)
      blame = e->parent != NULL ? e->parent : e;
  for (iw_swqe_t *e = rnicpi_fifo_peek(&qp->sq_out); e != NULL && blame == NULL; e = e->q_next) {
    if (!e->done && !e->internal)
      blame = e;
  }
  if (blame != NULL) {
    blame->done = TRUE;
    blame->status = is_access_error(layer, etype) ? RNICPI_WC_REM_ACCESS_ERR
                                                  : RNICPI_WC_REM_OP_ERR;
    rnicpi_fifo_remove(&qp->orq, blame);
    iw_qp_sq_reap(qp, w);
  }
  /* A connected consumer learns what the peer reported, unless the peer
   * only aborted (RDMAP local catastrophic error: its own fault). */
  if (iw_qp_connected(qp) && (layer != IW_LAYER_RDMAP || etype != IW_RDMAP_ET_CATASTROPHIC))
    iw_qp_async(qp, term_remote_cause(layer, etype, code, named), layer, etype, code);
  iw_qp_fail(qp, RNICPI_CM_BROKEN, w);
  qp->term_sent = TRUE; /* never answer a Terminate with one */
  qp->cs = IW_CS_DRAIN;
  shutdown(qp->fd, SHUT_WR);
  iw_timed_add(qp, IW_DRAIN_US);
}

/* ---- the responder's actions at the end of a message (called by iw_rx.c) ---- */

/* The IRD is used up for one more Read (@zero_length: of no bytes) or
 * atomic: the Reads and atomics queued or being answered.  Zero-length
 * Reads (a peer's delivery and close fences) count like any other: RFC
 * 5040 5.2.3 bounds every outstanding RDMA Read Request by the IRD, and
 * each holds an entry here until its answer is framed, however slowly the
 * peer reads.  But the IRD we announce is 1 at least (iw_cep.c), so that a
 * peer may fence toward a consumer that set none: one zero-length Read is
 * taken at IRD 0.  The RTR's answer alone does not count (RFC 6581 has it
 * before the stream's Reads begin): it is the oldest entry while queued. */
static gboolean
ird_full(iw_qp_t *qp, gboolean zero_length)
{
  const iw_rresp_t *oldest = rnicpi_fifo_peek(&qp->irq);
  uint32_t inflight = qp->irq.len + (qp->tx.kind == IW_TX_RRESP) -
                      (oldest != NULL && oldest->rtr);
  return inflight >= (zero_length ? MAX(qp->ird, 1u) : qp->ird);
}

/* A Data Source or atomic target the tagged checks refused: RFC 5040
 * 5.2.3 has RDMAP, not DDP, report it (Remote Protection). */
static uint8_t
rdmap_prot_code(uint8_t layer, uint8_t code)
{
  static const uint8_t rdmap_code_of[] = {
    [IW_DDP_T_INVALID_STAG] = IW_RDMAP_P_INVALID_STAG,
    [IW_DDP_T_BASE_BOUNDS] = IW_RDMAP_P_BASE_BOUNDS,
    [IW_DDP_T_STAG_NOT_ASSOC] = IW_RDMAP_P_STAG_NOT_ASSOC,
    [IW_DDP_T_TO_WRAP] = IW_RDMAP_P_TO_WRAP,
  };
  if (layer != IW_LAYER_DDP)
    return code;
  return code < G_N_ELEMENTS(rdmap_code_of) ? rdmap_code_of[code] : IW_RDMAP_P_UNSPECIFIED;
}

/* Fetch and Add of @add to @v where a set bit of @mask ends a field: no
 * carry crosses out of it (RFC 7306 masked form; @mask 0 is the plain add). */
static uint64_t
masked_add(uint64_t v, uint64_t add, uint64_t mask)
{
  if (mask == 0)
    return v + add;
  uint64_t sum = 0, carry = 0;
  for (int i = 0; i < 64; i++) {
    uint64_t a = (v >> i) & 1, b = (add >> i) & 1, s = a ^ b ^ carry;
    carry = ((a & b) | (a & carry) | (b & carry)) & ~((mask >> i) & 1);
    sum |= s << i;
  }
  return sum;
}

/* Execute an RFC 7306 Atomic Request on @target, atomically with respect
 * to every other atomic of this process (and the CPU's own atomics); the
 * value before it goes back in the response. */
static uint64_t
atomic_exec(uint64_t *target, const iw_rdmap_atomic_req_t *a)
{
  uint32_t op = iw_be32(a->opcode_be) & 0xf;
  uint64_t add_swap = iw_be64(a->add_swap_be), as_mask = iw_be64(a->add_swap_mask_be);
  uint64_t cmp = iw_be64(a->compare_be), cmp_mask = iw_be64(a->compare_mask_be);
  if (op == IW_ATOMIC_FETCH_ADD && as_mask == 0)
    return __atomic_fetch_add(target, add_swap, __ATOMIC_SEQ_CST);
  uint64_t old = __atomic_load_n(target, __ATOMIC_SEQ_CST), nv;
  do {
    if (op == IW_ATOMIC_FETCH_ADD)
      nv = masked_add(old, add_swap, as_mask);
    else if (((old ^ cmp) & cmp_mask) == 0)
      nv = (old & ~as_mask) | (add_swap & as_mask);
    else
      return old; /* compared unequal: nothing written */
  } while (!__atomic_compare_exchange_n(target, &old, nv, FALSE, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST));
  return old;
}

/* RFC 7306 Atomic Request (QN 1, shares IRD with Reads): check, execute,
 * queue the response behind the Reads that came before it. */
gboolean
iw_rdmap_atomic_req(iw_qp_t *qp, const uint8_t *d, iw_work_t *w)
{
  qp->msn_rx[IW_QN_READ_REQ]++;
  if (ird_full(qp, FALSE)) {
    iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_CATA_STREAM, w);
    return FALSE;
  }
  iw_rdmap_atomic_req_t a;
  memcpy(&a, d + sizeof(iw_ddp_untagged_t), sizeof(a));
  uint32_t op = iw_be32(a.opcode_be) & 0xf;
  if (op != IW_ATOMIC_FETCH_ADD && op != IW_ATOMIC_CMP_SWAP) {
    iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_UNSPECIFIED, w);
    return FALSE;
  }
  uint32_t stag = iw_be32(a.stag_be);
  uint64_t to = iw_be64(a.to_be);
  iw_mr_lock(qp);
  iw_tagged_verdict_t v = iw_rx_tagged_check(qp, stag, to, 8, RNICPI_ACCESS_ATOMIC, TRUE);
  iw_mr_t *mr = v.mr;
  if (v.code == IW_TERM_CODE_NONE && (to & 7) != 0) {
    /* RFC 7306 8.2: the target must be 64-bit aligned, or RDMAP Remote
     * Operation "catastrophic error, localized to RDMAP Stream". */
    iw_mr_unlock(qp);
    iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_CATA_STREAM, w);
    return FALSE;
  }
  uint8_t *target = v.code == IW_TERM_CODE_NONE ? mr->addr + (to - mr->iova) : NULL;
  if (target != NULL && ((uintptr_t) target & 7) != 0) {
    /* An aligned TO in a zero-based region (or one whose iova and address
     * differ mod 8) may still name a misaligned word of memory, where a
     * CPU atomic is undefined (and a split lock on x86): refused as RFC
     * 7306 8.2 refuses a misaligned TO.  The peer asked nothing wrong, so
     * the consumer hears of its own memory (RNICPI_AE_LOCAL). */
    g_message("QP %u: Atomic Request at TO 0x%" G_GINT64_MODIFIER "x of STag 0x%08x: the "
              "memory there is not 8-byte aligned (the region's address and its iova 0x%"
              G_GINT64_MODIFIER "x differ mod 8); Terminate 0/2/0x07",
              qp->base.qp_num, to, stag, mr->iova);
    iw_mr_unlock(qp);
    iw_rx_term_as(qp, RNICPI_AE_LOCAL, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP,
                  IW_RDMAP_O_CATA_STREAM, w);
    return FALSE;
  }
  uint64_t orig = 0;
  if (target != NULL)
    orig = atomic_exec((uint64_t *) (void *) target, &a);
  iw_mr_unlock(qp);
  if (v.code != IW_TERM_CODE_NONE) {
    iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_PROT, rdmap_prot_code(v.layer, v.code), w);
    return FALSE;
  }
  iw_rresp_t *rr = rnicpi_cache_get0(&qp->rresp_cache, sizeof(iw_rresp_t));
  rr->atomic = TRUE;
  rr->req_id = iw_be32(a.req_id_be);
  rr->orig = orig;
  rnicpi_fifo_push(&qp->irq, rr);
  return TRUE;
}

/* RFC 7306 Atomic Response (QN 3): it answers the oldest request
 * outstanding, which must be the atomic it names. */
gboolean
iw_rdmap_atomic_resp(iw_qp_t *qp, const uint8_t *d, iw_work_t *w)
{
  qp->msn_rx[IW_QN_ATOMIC_RESP]++;
  iw_rdmap_atomic_resp_t a;
  memcpy(&a, d + sizeof(iw_ddp_untagged_t), sizeof(a));
  iw_swqe_t *s = rnicpi_fifo_peek(&qp->orq);
  if (s == NULL || s->internal || !rnicpi_wr_is_atomic(s->wr.opcode) ||
      iw_be32(a.req_id_be) != s->req_id) {
    iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_UNSPECIFIED, w);
    return FALSE;
  }
  /* The result element was checked at transmission; check it again, it
   * may have been deregistered since. */
  uint64_t orig = iw_be64(a.orig_be);
  iw_mr_lock(qp);
  gboolean ok = iw_local_ok(qp, &s->sge[0], RNICPI_ACCESS_LOCAL_WRITE);
  if (ok)
    memcpy(s->sink, &orig, 8);
  iw_mr_unlock(qp);
  rnicpi_fifo_pop(&qp->orq);
  if (qp->ord_used > 0)
    qp->ord_used--;
  s->done = TRUE;
  s->status = ok ? RNICPI_WC_SUCCESS : RNICPI_WC_LOC_PROT_ERR;
  iw_qp_sq_reap(qp, w);
  if (!ok) {
    iw_term_send(qp, RNICPI_AE_LOCAL, IW_LAYER_RDMAP, IW_RDMAP_ET_CATASTROPHIC, 0, NULL, 0, 0,
                 NULL, w);
    return FALSE;
  }
  return TRUE;
}

/* RFC 7306 6.3: an Immediate Data message consumed the receive taken at
 * its start.  Its 8 bytes go to the completion, and to the buffer as they
 * came (network order) when the buffer has room for them. */
gboolean
iw_rdmap_imm(iw_qp_t *qp, const uint8_t *d, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  iw_rwqe_t *q = r->rwqe;
  uint8_t imm[IW_RDMAP_IMM_BYTES];
  memcpy(imm, d + sizeof(iw_ddp_untagged_t), sizeof(imm));
  r->rwqe = NULL;
  r->msg_off = 0;
  qp->msn_rx[IW_QN_SEND]++;
  uint32_t placed = 0;
  if (q->total >= sizeof(imm)) {
    iw_mr_lock(qp);
    gboolean ok = iw_rx_scatter(qp, q, 0, sizeof(imm));
    for (int i = 0, k = 0; ok && i < r->niov; k += (int) r->iov[i].iov_len, i++)
      memcpy(r->iov[i].iov_base, imm + k, r->iov[i].iov_len);
    iw_mr_unlock(qp);
    r->niov = 0;
    if (!ok) {
      iw_qp_complete(qp, qp->rcq, q->wr_id, RNICPI_WC_RECV, RNICPI_WC_LOC_PROT_ERR, 0, w);
      iw_qp_recv_put(qp, q);
      iw_rx_term_as(qp, RNICPI_AE_LOCAL_RECV, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP,
                    IW_RDMAP_O_CATA_STREAM, w);
      return FALSE;
    }
    placed = sizeof(imm);
  }
  uint64_t be;
  memcpy(&be, imm, sizeof(be));
  rnicpi_wc_t wc = {
    .wr_id = q->wr_id, .qp_ctx = qp->base.al_ctx, .status = RNICPI_WC_SUCCESS,
    .opcode = RNICPI_WC_RECV, .byte_len = placed, .flags = RNICPI_WC_WITH_IMM,
    .imm_data = iw_be64(be),
  };
  iw_cq_push(qp->rcq, &wc, w);
  iw_qp_recv_put(qp, q);
  return TRUE;
}

/* RDMA Read Request (QN 1): in RTR wait, the zero-length Read that is the
 * RTR (*@rtr_done); otherwise the IRD, then the Data Source's STag, bounds
 * and rights (RFC 5040 5.2.3: RDMAP Remote Protection), and the request
 * queued (qp->irq) for the transmit side's Read Responses (iw_tx.c). */
gboolean
iw_rdmap_read_req(iw_qp_t *qp, const uint8_t *d, gboolean *rtr_done, iw_work_t *w)
{
  qp->msn_rx[IW_QN_READ_REQ]++;
  iw_rdmap_readreq_t rq;
  memcpy(&rq, d + sizeof(iw_ddp_untagged_t), sizeof(rq));
  iw_rresp_t *rr = rnicpi_cache_get0(&qp->rresp_cache, sizeof(iw_rresp_t));
  rr->sink_stag = iw_be32(rq.sink_stag_be);
  rr->sink_to = iw_be64(rq.sink_to_be);
  rr->len = iw_be32(rq.size_be);
  rr->src_stag = iw_be32(rq.src_stag_be);
  rr->src_to = iw_be64(rq.src_to_be);
  if (qp->cs == IW_CS_RTR_WAIT) {
    if (rr->len != 0) {
      rnicpi_cache_put(&qp->rresp_cache, rr);
      iw_rx_term(qp, IW_LAYER_LLP, 0, IW_TERM_MPA_NO_RTR, w);
      return FALSE;
    }
    rr->rtr = TRUE;
    *rtr_done = TRUE;
  } else if (ird_full(qp, rr->len == 0)) {
    rnicpi_cache_put(&qp->rresp_cache, rr);
    iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_CATA_STREAM, w);
    return FALSE;
  } else if (rr->len > 0) {
    iw_mr_lock(qp);
    iw_tagged_verdict_t v = iw_rx_tagged_check(qp, rr->src_stag, rr->src_to, rr->len,
                                               RNICPI_ACCESS_REMOTE_READ, TRUE);
    if (v.code == IW_TERM_CODE_NONE)
      rr->src_gen = v.mr->gen; /* the region the Response must still find */
    iw_mr_unlock(qp);
    if (v.code != IW_TERM_CODE_NONE) {
      rnicpi_cache_put(&qp->rresp_cache, rr);
      iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_PROT, rdmap_prot_code(v.layer, v.code), w);
      return FALSE;
    }
  }
  rnicpi_fifo_push(&qp->irq, rr);
  return TRUE;
}
