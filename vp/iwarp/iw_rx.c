/*
 * vp/iwarp receive side: MPA deframing with the CRC checked on every FPDU
 * (RFC 5044 4.1, 7.1), DDP validation and direct placement (RFC 5041 3,
 * 7), and the RDMAP actions at the end of each segment and message
 * (RFC 5040 5): a Send's and a Read Response's completion here; a Read
 * Request, an atomic or Immediate Data handed to iw_rdmap.c, a Terminate
 * to iw_term_received().
 *
 * One FPDU is read in three steps: its length and DDP/RDMAP header into a
 * small buffer; after the header is validated against the region or the
 * posted receive, the payload with recv() straight into its final place;
 * then pad and CRC.  Nothing from the network is used before it is
 * checked: every length, offset, key and queue number; a violation sends a
 * Terminate with the RFC's layer, type and code.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "iw.h"

void
iw_rx_reset(iw_qp_t *qp)
{
  iw_rx_t *r = &qp->rx;
  r->phase = IW_RX_HDR;
  r->h = r->hdr;
  r->hdr_got = 0;
  r->hdr_need = 4;
  r->msg_off = 0;
  r->rdwqe = NULL;
  r->mr = NULL;
  r->niov = 0;
  r->st_pos = r->st_len = 0;
}

/* What the peer's segment of opcode @op did wrong, by the Terminate it
 * gets (the consumer's affiliated event; doc/provider-iwarp.md).  A fault
 * in our own memory is said by the caller (iw_rx_term_as). */
static rnicpi_async_cause_t
rx_cause(uint8_t op, uint8_t layer, uint8_t etype, uint8_t code)
{
  switch (layer) {
  case IW_LAYER_LLP:
    return code == IW_TERM_MPA_CRC && op == IW_OP_WRITE ? RNICPI_AE_WRITE_CORRUPT : RNICPI_AE_LLP;
  case IW_LAYER_DDP:
    if ((etype == IW_DDP_ET_TAGGED && code == IW_DDP_T_VERSION) ||
        (etype == IW_DDP_ET_UNTAGGED && code == IW_DDP_U_VERSION))
      return RNICPI_AE_BAD_OPCODE;
    if (etype == IW_DDP_ET_TAGGED && op == IW_OP_WRITE)
      return RNICPI_AE_WRITE_ACCESS;
    return RNICPI_AE_PROTOCOL; /* untagged rules; a Read Response off its Read */
  default:
    if (etype == IW_RDMAP_ET_REMOTE_PROT)
      return op == IW_OP_READ_REQ ? RNICPI_AE_READ_ACCESS
                                  : op == IW_OP_WRITE ? RNICPI_AE_WRITE_ACCESS : RNICPI_AE_ACCESS;
    if (etype == IW_RDMAP_ET_REMOTE_OP && (code == IW_RDMAP_O_VERSION || code == IW_RDMAP_O_OPCODE))
      return RNICPI_AE_BAD_OPCODE;
    return RNICPI_AE_PROTOCOL;
  }
}

/* Terminate for the segment being received, with copies of its headers;
 * the consumer's event says @cause. */
void
iw_rx_term_as(iw_qp_t *qp, rnicpi_async_cause_t cause, uint8_t layer, uint8_t etype,
              uint8_t code, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  gboolean tagged = (r->h[2] & IW_DDP_TAGGED) != 0;
  uint32_t dlen = tagged ? sizeof(iw_ddp_tagged_t) : sizeof(iw_ddp_untagged_t);
  const uint8_t *ddp = r->hdr_got >= 2 + dlen ? r->h + 2 : NULL;
  const uint8_t *rd = r->op == IW_OP_READ_REQ && r->hdr_got >= 2 + dlen + 28 ? r->h + 2 + dlen
                                                                               : NULL;
  iw_term_send(qp, cause, layer, etype, code, ddp, dlen, r->ulpdu_len, rd, w);
}

/* Terminate for what the peer's segment did wrong. */
void
iw_rx_term(iw_qp_t *qp, uint8_t layer, uint8_t etype, uint8_t code, iw_work_t *w)
{
  iw_rx_term_as(qp, rx_cause(qp->rx.op, layer, etype, code), layer, etype, code, w);
}

/* The posted receive a message lands in cannot take it: it completes with
 * @st and the peer gets the DDP Terminate @etype/@code.  A buffer that is
 * not registered for local write, or was deregistered mid-message, is our
 * own fault: LOC_PROT_ERR and DDP local catastrophic (RFC 5041 7.2; siw
 * reports the same). */
static void
rx_recv_fail(iw_qp_t *qp, rnicpi_wc_status_t st, uint8_t etype, uint8_t code, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  iw_qp_complete(qp, qp->rcq, r->rwqe->wr_id, RNICPI_WC_RECV, st, 0, w);
  iw_qp_recv_put(qp, r->rwqe);
  r->rwqe = NULL;
  iw_rx_term_as(qp, st == RNICPI_WC_LOC_PROT_ERR ? RNICPI_AE_LOCAL_RECV : RNICPI_AE_PROTOCOL,
                IW_LAYER_DDP, etype, code, w);
}

/* The sink of our own Read @s changed under it (deregistered before or
 * during its Response): the Read completes LOC_PROT_ERR, our fault, and
 * the peer gets the tagged error of the STag it was given, as siw sends. */
static void
rx_sink_lost(iw_qp_t *qp, iw_swqe_t *s, uint8_t layer, uint8_t etype, uint8_t code,
             iw_work_t *w)
{
  s->done = TRUE;
  s->status = RNICPI_WC_LOC_PROT_ERR;
  if (s->parent != NULL) {
    /* A part of a scattered Read: the consumer's Read fails. */
    s->parent->done = TRUE;
    s->parent->status = RNICPI_WC_LOC_PROT_ERR;
  }
  iw_rx_term_as(qp, RNICPI_AE_LOCAL, layer, etype, code, w);
}

/* The place of the payload being received went away mid-message: a
 * tagged sink's region was deregistered (invalid STag: for a Write, the
 * peer's to answer for; for our Read's Response, ours), or a posted
 * receive's buffer was. */
static void
rx_target_gone(iw_qp_t *qp, iw_work_t *w)
{
  if (qp->rx.rdwqe != NULL)
    rx_sink_lost(qp, qp->rx.rdwqe, IW_LAYER_DDP, IW_DDP_ET_TAGGED, IW_DDP_T_INVALID_STAG, w);
  else if (qp->rx.mr != NULL)
    iw_rx_term(qp, IW_LAYER_DDP, IW_DDP_ET_TAGGED, IW_DDP_T_INVALID_STAG, w);
  else
    rx_recv_fail(qp, RNICPI_WC_LOC_PROT_ERR, IW_DDP_ET_CATASTROPHIC, 0, w);
}

/* A consumer's Read @s has every byte placed: it completes successfully,
 * but a Read with Invalidate first invalidates its sink key (RDMAC verbs,
 * "RDMA Read with Invalidate Local STag": once the data landed, before the
 * completion), under the rule of a Local Invalidate (iw_mem_invalidate);
 * a key it may not invalidate completes it RNICPI_WC_MEM_MGT_ERR and ends
 * the stream as any local fault (FALSE). */
static gboolean
rx_read_done(iw_qp_t *qp, iw_swqe_t *s)
{
  s->done = TRUE;
  s->status = RNICPI_WC_SUCCESS;
  if (s->wr.opcode != RNICPI_WR_RDMA_READ_INV)
    return TRUE;
  uint64_t key = s->wr.invalidate_rkey;
  if (key <= UINT32_MAX && iw_mem_invalidate(qp, (uint32_t) key))
    return TRUE;
  g_message("QP %u: the RDMA Read with Invalidate of STag 0x%08" G_GINT64_MODIFIER "x "
            "landed, but that STag is no valid fast-registered region of this QP's protection "
            "domain without a window, nor a window bound through this QP; it completes "
            "MEM_MGT_ERR", qp->base.qp_num, key);
  s->status = RNICPI_WC_MEM_MGT_ERR;
  return FALSE;
}

/* The peer closed its half of the stream. */
static void
rx_eof(iw_qp_t *qp, iw_work_t *w)
{
  gboolean boundary = qp->rx.phase == IW_RX_HDR && qp->rx.hdr_got == 0;
  switch (qp->cs) {
  case IW_CS_CLOSING:
    if (boundary)
      iw_qp_fail(qp, RNICPI_CM_DISCONNECTED, w);
    else
      iw_qp_llp_fail(qp, w); /* inside an FPDU: a broken stream */
    break;
  case IW_CS_RTS:
    /* The peer's orderly disconnect (RDMAC verbs 8.3.1): flush and answer
     * with our own FIN. */
    if (boundary)
      iw_qp_fail(qp, RNICPI_CM_DISCONNECTED, w);
    else
      iw_qp_llp_fail(qp, w);
    shutdown(qp->fd, SHUT_WR);
    break;
  case IW_CS_DRAIN:
    break;
  default:
    iw_qp_llp_fail(qp, w);
    break;
  }
  iw_qp_close_fd(qp);
}

/* 1: got bytes; 0: stop (would block, or the connection ended). */
static int
rx_check(iw_qp_t *qp, ssize_t n, iw_work_t *w)
{
  if (n > 0)
    return 1;
  if (n == 0) {
    rx_eof(qp, w);
    return 0;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return 0;
  g_debug("QP %u: recv: %s", qp->base.qp_num, g_strerror(errno));
  iw_qp_conn_lost(qp, w);
  return 0;
}

/* The first 4 bytes: ULPDU_Length, DDP control, RDMAP control. */
static gboolean
rx_parse_first(iw_qp_t *qp, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  uint16_t ulen;
  memcpy(&ulen, r->h, 2);
  r->ulpdu_len = ntohs(ulen);
  uint8_t ctrl = r->h[2], rdmap = r->h[3];
  gboolean tagged = (ctrl & IW_DDP_TAGGED) != 0;
  r->op = rdmap & IW_RDMAP_OP_MASK;
  if ((ctrl & IW_DDP_DV_MASK) != IW_DDP_VERSION) {
    iw_rx_term(qp, IW_LAYER_DDP, tagged ? IW_DDP_ET_TAGGED : IW_DDP_ET_UNTAGGED,
               tagged ? IW_DDP_T_VERSION : IW_DDP_U_VERSION, w);
    return FALSE;
  }
  if ((rdmap & IW_RDMAP_RV_MASK) != IW_RDMAP_VERSION) {
    iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_VERSION, w);
    return FALSE;
  }
  const iw_op_rule_t *rule = &iw_op_rules[r->op];
  if (!rule->valid || rule->tagged != tagged || (rule->rfc7306 && !qp->rfc7306)) {
    iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_OPCODE, w);
    return FALSE;
  }
  uint32_t dlen = tagged ? sizeof(iw_ddp_tagged_t) : sizeof(iw_ddp_untagged_t);
  uint32_t extra = rule->extra_hdr;
  if (r->op == IW_OP_TERMINATE) {
    /* Control word, then optional segment length and header copies. */
    if (r->ulpdu_len < dlen + sizeof(iw_rdmap_term_t) ||
        r->ulpdu_len > dlen + sizeof(iw_rdmap_term_t) + 2 + 18 + 28) {
      iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_UNSPECIFIED, w);
      return FALSE;
    }
    extra = r->ulpdu_len - dlen;
  }
  if (r->ulpdu_len < dlen + extra || (!rule->payload && r->ulpdu_len != dlen + extra)) {
    iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_UNSPECIFIED, w);
    return FALSE;
  }
  r->hdr_need = IW_FPDU_LEN_BYTES + dlen + extra;
  r->payload = r->ulpdu_len - dlen - extra;
  return TRUE;
}

/* Add the elements of a receive that hold message bytes [off, off+len). */
gboolean
iw_rx_scatter(iw_qp_t *qp, const iw_rwqe_t *q, uint64_t off, uint32_t len)
{
  iw_rx_t *r = &qp->rx;
  r->niov = 0;
  for (uint32_t i = 0; i < q->num_sge && len > 0; i++) {
    const rnicpi_sge_t *s = &q->sge[i];
    if (off >= s->length) {
      off -= s->length;
      continue;
    }
    if (iw_mr_local(qp, s, RNICPI_ACCESS_LOCAL_WRITE) == NULL)
      return FALSE;
    uint32_t n = (uint32_t) MIN((uint64_t) len, s->length - off);
    r->iov[r->niov].iov_base = (uint8_t *) (uintptr_t) (s->addr + off);
    r->iov[r->niov++].iov_len = n;
    len -= n;
    off = 0;
  }
  return TRUE;
}

/* Validate a tagged segment against the region or window it names (RFC
 * 5041 7.2, RFC 5040 7.1).  A window bound through another queue pair is
 * not associated with this stream. */
iw_tagged_verdict_t
iw_rx_tagged_check(iw_qp_t *qp, uint32_t stag, uint64_t to, uint32_t len, uint32_t need,
                   gboolean qp_rights)
{
  iw_mr_t *mr = iw_mr_lookup(qp->dev, stag);
  iw_tagged_verdict_t v = {
    .mr = mr, .layer = IW_LAYER_DDP, .etype = IW_DDP_ET_TAGGED, .code = IW_TERM_CODE_NONE,
  };
  if (mr == NULL)
    v.code = IW_DDP_T_INVALID_STAG;
  else if (mr->pd != qp->pd || !iw_mw_reachable(mr, qp))
    v.code = IW_DDP_T_STAG_NOT_ASSOC;
  else if (to > UINT64_MAX - len)
    v.code = IW_DDP_T_TO_WRAP;
  else if (to < mr->iova || len > mr->length || to - mr->iova > mr->length - len)
    v.code = IW_DDP_T_BASE_BOUNDS;
  else if ((mr->access & need) != need || (qp_rights && (qp->attr.access & need) != need)) {
    v.layer = IW_LAYER_RDMAP;
    v.etype = IW_RDMAP_ET_REMOTE_PROT;
    v.code = IW_RDMAP_P_ACCESS;
  }
  return v;
}

/* The header is complete: validate it and set up where the payload goes. */
static gboolean
rx_segment_start(iw_qp_t *qp, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  const uint8_t *d = r->h + IW_FPDU_LEN_BYTES;
  gboolean last = (d[0] & IW_DDP_LAST) != 0;
  r->crc = qp->crc ? iw_crc32c(0, r->h, r->hdr_need) : 0;
  r->payload_got = 0;
  r->niov = 0;
  r->mr = NULL;
  r->trailer_got = 0;
  r->trailer_need = iw_fpdu_pad(r->ulpdu_len) + IW_FPDU_CRC_BYTES;

  /* RFC 6581: the first FPDU must be the RTR the reply chose, or a
   * Terminate (9.1, 9.2: the initiator refusing the reply's IRD/ORD or
   * RTR), which ends the stream with the peer's code. */
  if (qp->cs == IW_CS_RTR_WAIT && r->op != IW_OP_TERMINATE &&
      !((qp->rtr == IW_RTR_WRITE && r->op == IW_OP_WRITE && r->payload == 0) ||
        (qp->rtr == IW_RTR_READ && r->op == IW_OP_READ_REQ))) {
    iw_rx_term(qp, IW_LAYER_LLP, 0, IW_TERM_MPA_NO_RTR, w);
    return FALSE;
  }

  if (iw_op_rules[r->op].tagged) {
    iw_ddp_tagged_t t;
    memcpy(&t, d, sizeof(t));
    uint32_t stag = iw_be32(t.stag_be);
    uint64_t to = iw_be64(t.to_be);
    r->stag = stag;
    iw_mr_lock(qp);
    if (r->op == IW_OP_WRITE) {
      /* A zero-length Write places nothing: its STag is not checked (the
       * RFC 6581 RTR carries STag 1). */
      if (r->payload > 0) {
        iw_tagged_verdict_t v = iw_rx_tagged_check(qp, stag, to, r->payload,
                                                   RNICPI_ACCESS_REMOTE_WRITE, TRUE);
        if (v.code != IW_TERM_CODE_NONE) {
          iw_mr_unlock(qp);
          iw_rx_term(qp, v.layer, v.etype, v.code, w);
          return FALSE;
        }
        iw_mr_t *mr = v.mr;
        r->mr = mr;
        r->mr_gen = mr->gen;
        r->iov[0].iov_base = mr->addr + (to - mr->iova);
        r->iov[0].iov_len = r->payload;
        r->niov = 1;
      }
    } else {
      /* Read Response: it answers the oldest Read (RFC 5040 5.2.3). */
      iw_swqe_t *s = rnicpi_fifo_peek(&qp->orq);
      if (s == NULL) {
        iw_mr_unlock(qp);
        iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_OPCODE, w);
        return FALSE;
      }
      /* RFC 5041 5.2 (and 7.2): the STag and TO of a zero-length tagged
       * message are not checked (the fence's and the RTR's responses). */
      uint8_t code = IW_TERM_CODE_NONE;
      if (s->internal && s->total == 0) {
        /* Linux siw answers a zero-length Read with as many bytes as the
         * last request its transmit slot held (siw_activate_tx leaves
         * its first element as it was, and siw_qp_sq_proc_tx sends one):
         * what answers our own fences and RTRs is read and dropped. */
        if (r->payload > 0) {
          if (r->junk == NULL)
            r->junk = g_malloc(G_MAXUINT16 + 1); /* any ULPDU's payload */
          r->iov[0].iov_base = r->junk;
          r->iov[0].iov_len = r->payload;
          r->niov = 1;
        }
      } else if (r->payload > 0 && stag != s->sink_stag)
        code = IW_DDP_T_INVALID_STAG;
      else if (r->payload > s->total - s->got || (r->payload > 0 && to != s->sink_to + s->got))
        code = IW_DDP_T_BASE_BOUNDS;
      else if (r->payload > 0) {
        iw_tagged_verdict_t v = iw_rx_tagged_check(qp, stag, to, r->payload,
                                                   RNICPI_ACCESS_REMOTE_WRITE, FALSE);
        if (v.code != IW_TERM_CODE_NONE) {
          /* The STag and TO are the ones our Request gave. */
          iw_mr_unlock(qp);
          rx_sink_lost(qp, s, v.layer, v.etype, v.code, w);
          return FALSE;
        }
        r->mr = v.mr;
        r->mr_gen = v.mr->gen;
        r->iov[0].iov_base = s->sink + s->got;
        r->iov[0].iov_len = r->payload;
        r->niov = 1;
      }
      if (code != IW_TERM_CODE_NONE) {
        iw_mr_unlock(qp);
        iw_rx_term(qp, IW_LAYER_DDP, IW_DDP_ET_TAGGED, code, w);
        return FALSE;
      }
      r->rdwqe = s;
    }
    iw_mr_unlock(qp);
  } else {
    iw_ddp_untagged_t u;
    memcpy(&u, d, sizeof(u));
    uint32_t qn = iw_be32(u.qn_be), msn = iw_be32(u.msn_be), mo = iw_be32(u.mo_be);
    const iw_op_rule_t *rule = &iw_op_rules[r->op];
    if (qn != rule->qn) {
      iw_rx_term(qp, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, IW_DDP_U_INVALID_QN, w);
      return FALSE;
    }
    if (msn != qp->msn_rx[qn]) {
      iw_rx_term(qp, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, IW_DDP_U_MSN_RANGE, w);
      return FALSE;
    }
    if (rule->single && (mo != 0 || !last)) {
      iw_rx_term(qp, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, IW_DDP_U_INVALID_MO, w);
      return FALSE;
    }
    if (qn == IW_QN_SEND) {
      if (rule->single && r->rwqe != NULL) {
        /* A one-segment message (RFC 7306 Immediate Data) is a message of
         * its own, never inside a Send's segments. */
        iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_OP, IW_RDMAP_O_OPCODE, w);
        return FALSE;
      }
      if (r->rwqe == NULL) {
        if (mo != 0) {
          iw_rx_term(qp, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, IW_DDP_U_INVALID_MO, w);
          return FALSE;
        }
        r->rwqe = iw_qp_recv_take(qp);
        r->msg_off = 0;
        if (r->rwqe == NULL) {
          /* RFC 5040 7.1: iWARP has no receiver-not-ready retry. */
          iw_rx_term(qp, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, IW_DDP_U_NO_BUFFER, w);
          return FALSE;
        }
      } else if (mo != r->msg_off) {
        iw_rx_term(qp, IW_LAYER_DDP, IW_DDP_ET_UNTAGGED, IW_DDP_U_INVALID_MO, w);
        return FALSE;
      }
      if (r->payload > r->rwqe->total - r->msg_off) {
        rx_recv_fail(qp, RNICPI_WC_LOC_LEN_ERR, IW_DDP_ET_UNTAGGED, IW_DDP_U_TOO_LONG, w);
        return FALSE;
      }
      iw_mr_lock(qp);
      gboolean ok = iw_rx_scatter(qp, r->rwqe, r->msg_off, r->payload);
      iw_mr_unlock(qp);
      if (!ok) {
        rx_recv_fail(qp, RNICPI_WC_LOC_PROT_ERR, IW_DDP_ET_CATASTROPHIC, 0, w);
        return FALSE;
      }
    }
  }
  r->phase = r->payload > 0 ? IW_RX_PAYLOAD : IW_RX_TRAILER;
  return TRUE;
}

/* TRUE when the segment's places are a receive's elements, which
 * rx_targets_live finds again from the payload already placed
 * (iw_rx_scatter starts them there).  Any other segment's places (a
 * region's, or the buffer that takes bytes to drop) start at its first
 * payload byte, and rx_dest skips what is placed.  A receive may be open
 * under a tagged segment. */
static gboolean
rx_rescatters(const iw_rx_t *r)
{
  return !iw_op_rules[r->op].tagged && r->rwqe != NULL;
}

/* Still the same regions as when the header was checked? */
static gboolean
rx_targets_live(iw_qp_t *qp)
{
  iw_rx_t *r = &qp->rx;
  /* r->mr may be freed memory by now (iw_mr_dereg frees at once, and a
   * new region may sit at the same address): find the region again by the
   * segment's STag and compare generations, never read through r->mr. */
  if (r->mr != NULL)
    return iw_mr_live(qp->dev, r->stag, r->mr_gen) == r->mr;
  if (rx_rescatters(r))
    return iw_rx_scatter(qp, r->rwqe, r->msg_off + r->payload_got, r->payload - r->payload_got);
  return TRUE; /* nothing to place, or bytes to drop */
}

/* The places the rest of the payload goes to; returns the iovec count. */
static int
rx_dest(iw_qp_t *qp, struct iovec *iov)
{
  iw_rx_t *r = &qp->rx;
  int n = 0;
  uint32_t skip = rx_rescatters(r) ? 0 : r->payload_got;
  for (int i = 0; i < r->niov; i++) {
    if (skip >= r->iov[i].iov_len) {
      skip -= (uint32_t) r->iov[i].iov_len;
      continue;
    }
    iov[n].iov_base = (uint8_t *) r->iov[i].iov_base + skip;
    iov[n++].iov_len = r->iov[i].iov_len - skip;
    skip = 0;
  }
  return n;
}

/* @got payload bytes landed at @iov: add them to the CRC. */
static void
rx_placed(iw_qp_t *qp, const struct iovec *iov, int n, size_t got)
{
  iw_rx_t *r = &qp->rx;
  r->payload_got += (uint32_t) got;
  if (qp->crc)
    for (int i = 0; i < n && got > 0; i++) {
      size_t k = MIN(got, iov[i].iov_len);
      r->crc = iw_crc32c(r->crc, iov[i].iov_base, k);
      got -= k;
    }
}

/* Copy payload that was read ahead into the stage to its place (mr_lock
 * held): returns the bytes used. */
static uint32_t
rx_place_staged(iw_qp_t *qp, const uint8_t *src, uint32_t avail)
{
  iw_rx_t *r = &qp->rx;
  struct iovec iov[IW_MAX_SGE];
  int n = rx_dest(qp, iov);
  uint32_t want = MIN(avail, r->payload - r->payload_got), k = 0;
  for (int i = 0; i < n && k < want; i++) {
    size_t c = MIN((size_t) (want - k), iov[i].iov_len);
    rnicpi_place(iov[i].iov_base, src + k, c); /* its last byte last: rnicpi_util.h */
    k += (uint32_t) c;
  }
  rx_placed(qp, iov, n, k);
  return k;
}

/* recv() the rest of the payload but its last byte straight into its
 * place, and that byte and what follows into the stage (mr_lock held);
 * *@asked: the bytes the call had room for.  The kernel's copy may make
 * the last byte visible before those ahead of it (rnicpi_place says why):
 * rx_consume places it from the stage after the call, and moves on to the
 * trailer then. */
static ssize_t
rx_place(iw_qp_t *qp, size_t *asked)
{
  iw_rx_t *r = &qp->rx;
  struct iovec iov[IW_MAX_SGE + 1];
  int n = rx_dest(qp, iov);
  if (n > 0 && --iov[n - 1].iov_len == 0)
    n--;
  size_t room = r->payload - r->payload_got - 1;
  iov[n].iov_base = r->stage;
  iov[n].iov_len = sizeof(r->stage);
  *asked = room + sizeof(r->stage);
  struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n + 1 };
  ssize_t got = recvmsg(qp->fd, &mh, MSG_DONTWAIT);
  if (got > 0) {
    size_t pay = MIN((size_t) got, room);
    rx_placed(qp, iov, n, pay);
    r->st_pos = 0;
    r->st_len = (uint32_t) ((size_t) got - pay);
  }
  return got;
}

/* A whole, CRC-checked segment: act on it. */
static gboolean
rx_segment_end(iw_qp_t *qp, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  const uint8_t *d = r->h + IW_FPDU_LEN_BYTES;
  gboolean last = (d[0] & IW_DDP_LAST) != 0;
  gboolean rtr_done = FALSE;
  switch (r->op) {
  case IW_OP_WRITE:
    rtr_done = qp->cs == IW_CS_RTR_WAIT;
    break;
  case IW_OP_READ_RESP: {
    iw_swqe_t *s = r->rdwqe;
    s->got += r->payload;
    r->rdwqe = NULL;
    if (last) {
      if (s->got != s->total && !(s->internal && s->total == 0)) {
        iw_rx_term(qp, IW_LAYER_DDP, IW_DDP_ET_TAGGED, IW_DDP_T_BASE_BOUNDS, w);
        return FALSE;
      }
      rnicpi_fifo_pop(&qp->orq);
      if ((s->fence || !s->internal || s->parent != NULL) && qp->ord_used > 0)
        qp->ord_used--;
      iw_swqe_t *app = s->parent;
      gboolean ok = TRUE;
      if (app != NULL && --app->parts_out == 0 && qp->rd_split != app && !app->done) {
        /* The last part of a scattered Read: the consumer's Read is
         * complete, all of its bytes placed. */
        ok = rx_read_done(qp, app);
      }
      if (s->fence) {
        /* Everything sent before the fence is placed. */
        for (iw_swqe_t *e = rnicpi_fifo_peek(&qp->sq_out); e != NULL && e != s; e = e->q_next) {
          if (e->sent && !e->done)
            e->done = TRUE;
        }
        qp->fence_out = FALSE;
      }
      if (!s->internal)
        ok = rx_read_done(qp, s);
      s->done = TRUE;
      iw_qp_sq_reap(qp, w);
      if (!ok) {
        iw_term_send(qp, RNICPI_AE_LOCAL, IW_LAYER_RDMAP, IW_RDMAP_ET_CATASTROPHIC, 0, NULL, 0,
                     0, NULL, w);
        return FALSE;
      }
    }
    break;
  }
  case IW_OP_SEND:
  case IW_OP_SEND_INV:
  case IW_OP_SEND_SE:
  case IW_OP_SEND_SE_INV:
    r->msg_off += r->payload;
    if (last) {
      rnicpi_wc_t wc = {
        .wr_id = r->rwqe->wr_id, .qp_ctx = qp->base.al_ctx, .status = RNICPI_WC_SUCCESS,
        .opcode = RNICPI_WC_RECV, .byte_len = (uint32_t) r->msg_off,
      };
      if (r->op == IW_OP_SEND_INV || r->op == IW_OP_SEND_SE_INV) {
        /* RFC 5040 5.3, 6.10: the STag is invalidated before the
         * receive completes, or the stream terminated: only a valid
         * fast-registered region of this QP's domain may be
         * (iw_mem_invalidate), never a region of mr_reg. */
        iw_ddp_untagged_t u;
        memcpy(&u, d, sizeof(u));
        uint32_t stag = iw_be32(u.inv_stag_be);
        if (!iw_mem_invalidate(qp, stag)) {
          g_message("QP %u: a Send with Invalidate names STag 0x%08x, which is no valid "
                    "fast-registered region of this QP's protection domain; Terminate 0/1/0x09",
                    qp->base.qp_num, stag);
          iw_rx_term(qp, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_PROT, IW_RDMAP_P_CANT_INVALIDATE,
                     w);
          return FALSE;
        }
        wc.flags = RNICPI_WC_WITH_INV;
        wc.rkey = stag;
      }
      qp->msn_rx[IW_QN_SEND]++;
      iw_cq_push(qp->rcq, &wc, w);
      iw_qp_recv_put(qp, r->rwqe);
      r->rwqe = NULL;
      r->msg_off = 0;
    }
    break;
  case IW_OP_READ_REQ:
    if (!iw_rdmap_read_req(qp, d, &rtr_done, w))
      return FALSE;
    break;
  case IW_OP_IMM:
  case IW_OP_IMM_SE:
    if (!iw_rdmap_imm(qp, d, w))
      return FALSE;
    break;
  case IW_OP_ATOMIC_REQ:
    if (!iw_rdmap_atomic_req(qp, d, w))
      return FALSE;
    break;
  case IW_OP_ATOMIC_RESP:
    if (!iw_rdmap_atomic_resp(qp, d, w))
      return FALSE;
    break;
  case IW_OP_TERMINATE:
    iw_term_received(qp, d + sizeof(iw_ddp_untagged_t),
                     r->hdr_need - IW_FPDU_LEN_BYTES - sizeof(iw_ddp_untagged_t), w);
    return FALSE;
  default:
    break;
  }
  r->phase = IW_RX_HDR;
  r->hdr_got = 0;
  r->hdr_need = 4;
  r->mr = NULL;
  if (rtr_done) {
    iw_qp_go_rts(qp);
    iw_cep_established(qp);
  }
  /* RFC 5044 7.1.2 (rule 4): without an RTR the responder sends after the first FPDU
   * (the caller of iw_rx_progress transmits). */
  qp->tx_hold = FALSE;
  return qp->fd >= 0;
}

/* The pad and CRC that end an FPDU (RFC 5044 4.1): FALSE, with a Terminate
 * sent, when the CRC is wrong. */
static gboolean
rx_trailer_ok(iw_qp_t *qp, const uint8_t *trailer, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  if (!qp->crc)
    return TRUE;
  uint32_t pad = r->trailer_need - IW_FPDU_CRC_BYTES;
  uint32_t crc = pad > 0 ? iw_crc32c(r->crc, trailer, pad) : r->crc;
  const uint8_t *c = trailer + pad;
  if (iw_crc_matches(c, crc))
    return TRUE;
  uint32_t wire = iw_crc_get(c);
  /* RFC 5044 8: a bad CRC ends the stream with a Terminate. */
  g_message("QP %u: FPDU CRC error (got 0x%08x, computed 0x%08x)", qp->base.qp_num, wire, crc);
  iw_rx_term(qp, IW_LAYER_LLP, 0, IW_TERM_MPA_CRC, w);
  return FALSE;
}

/* The stage holds a whole FPDU of @len bytes at @p: act on it where it
 * lies, with the same steps as one read piecewise, minus the copies. */
static gboolean
rx_whole(iw_qp_t *qp, const uint8_t *p, uint32_t len, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  r->h = p;
  r->hdr_got = 4;
  r->st_pos += len;
  if (!rx_parse_first(qp, w))
    return FALSE;
  r->hdr_got = r->hdr_need;
  if (!rx_segment_start(qp, w))
    return FALSE;
  /* The pass holds mr_lock: the regions rx_segment_start checked stay. */
  const uint8_t *q = p + r->hdr_need;
  if (r->payload > 0)
    q += rx_place_staged(qp, q, r->payload);
  return rx_trailer_ok(qp, q, w) && rx_segment_end(qp, w);
}

/* The bytes in the stage, in order: headers, payload, trailers. */
static void
rx_consume(iw_qp_t *qp, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  while (r->st_pos < r->st_len && qp->fd >= 0 &&
         (qp->cs == IW_CS_RTS || qp->cs == IW_CS_RTR_WAIT || qp->cs == IW_CS_CLOSING)) {
    const uint8_t *p = r->stage + r->st_pos;
    uint32_t avail = r->st_len - r->st_pos, k;
    switch (r->phase) {
    case IW_RX_HDR:
      if (r->hdr_got == 0 && avail >= 4) {
        uint32_t ulen = (uint32_t) p[0] << 8 | p[1];
        uint32_t len = iw_fpdu_len(ulen);
        if (len <= avail) {
          if (!rx_whole(qp, p, len, w))
            return;
          break;
        }
      }
      r->h = r->hdr;
      k = MIN(avail, r->hdr_need - r->hdr_got);
      memcpy(r->hdr + r->hdr_got, p, k);
      r->st_pos += k;
      r->hdr_got += k;
      if (r->hdr_got < r->hdr_need)
        continue;
      if (r->hdr_need == 4) {
        if (!rx_parse_first(qp, w))
          return;
        if (r->hdr_got < r->hdr_need)
          continue;
      }
      if (!rx_segment_start(qp, w))
        return;
      break;
    case IW_RX_PAYLOAD:
      iw_mr_lock(qp);
      if (!rx_targets_live(qp)) {
        iw_mr_unlock(qp);
        rx_target_gone(qp, w);
        return;
      }
      r->st_pos += rx_place_staged(qp, p, avail);
      iw_mr_unlock(qp);
      if (r->payload_got == r->payload)
        r->phase = IW_RX_TRAILER;
      break;
    case IW_RX_TRAILER:
      k = MIN(avail, r->trailer_need - r->trailer_got);
      memcpy(r->trailer + r->trailer_got, p, k);
      r->st_pos += k;
      r->trailer_got += k;
      if (r->trailer_got < r->trailer_need)
        continue;
      if (!rx_trailer_ok(qp, r->trailer, w) || !rx_segment_end(qp, w))
        return;
      break;
    }
  }
}

/* Read what the socket holds and act on it.  Small FPDUs come in through
 * the stage, many per recv(); the payload of a large one goes straight to
 * its place, with the trailer and the next header read into the stage by
 * the same call. */
static void
rx_progress(iw_qp_t *qp, iw_work_t *w)
{
  iw_rx_t *r = &qp->rx;
  size_t moved = 0;
  while (qp->fd >= 0) {
    if (qp->cs == IW_CS_DRAIN) {
      /* Broken: discard until the peer closes too. */
      r->st_pos = r->st_len = 0;
      ssize_t n = recv(qp->fd, r->stage, sizeof(r->stage), MSG_DONTWAIT);
      if (n > 0)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
      iw_qp_close_fd(qp);
      return;
    }
    if (qp->cs != IW_CS_RTS && qp->cs != IW_CS_RTR_WAIT && qp->cs != IW_CS_CLOSING)
      return;
    rx_consume(qp, w);
    if (qp->fd < 0 || r->st_pos < r->st_len)
      continue; /* closed, or the state changed with bytes left (drained above) */
    r->st_pos = r->st_len = 0;
    if (moved >= IW_IO_BURST && iw_qp_posts_waiting(qp))
      return;  /* the socket stays readable: the rest in the next burst */
    ssize_t n;
    size_t asked;
    if (r->phase == IW_RX_PAYLOAD) {
      iw_mr_lock(qp);
      if (!rx_targets_live(qp)) {
        iw_mr_unlock(qp);
        rx_target_gone(qp, w);
        return;
      }
      n = rx_place(qp, &asked);
      iw_mr_unlock(qp);
    } else {
      asked = sizeof(r->stage);
      n = recv(qp->fd, r->stage, sizeof(r->stage), MSG_DONTWAIT);
      if (n > 0)
        r->st_len = (uint32_t) n;
    }
    if (!rx_check(qp, n, w))
      return;
    moved += (size_t) n;
    /* A short read emptied the socket: act on it and let the caller go
     * (the next poll or readiness comes back for more). */
    if ((size_t) n < asked) {
      rx_consume(qp, w);
      if (qp->fd < 0 || r->st_pos == r->st_len)
        return;
    }
  }
}

void
iw_rx_progress(iw_qp_t *qp, iw_work_t *w)
{
  iw_mr_lock(qp);
  rx_progress(qp, w);
  iw_mr_unlock(qp);
}
