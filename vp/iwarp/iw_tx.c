/*
 * vp/iwarp transmit side: the messages iw_sq.c starts (the requester's
 * Send, RDMA Write, RDMA Read Request and atomics, the read responder's
 * Read and Atomic Responses, Terminates) and RTRs, segmented into FPDUs
 * of at most the path's MULPDU (RFC 5041 5.2, RFC 5044 4.1, 4.5), written
 * to the socket and accounted once written.  Payload goes from the
 * registered memory straight to the socket with sendmsg(): no copy.  Up
 * to IW_TX_FPDUS FPDUs are framed into one batch and written by one call
 * (a Read Response, the Send behind it and the delivery fence after that
 * share one TCP segment).  Messages are framed one after the other, so
 * two tagged or two untagged messages never interleave (siw refuses
 * that).
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "iw.h"

static gint fpdu_counter; /* for ITAPI_IWARP_CORRUPT_CRC */

/* Payload room of one FPDU after its headers; a multiple of 4, so the
 * FPDUs before the last carry no pad. */
static uint32_t
room_for(iw_qp_t *qp, uint32_t hdr_len)
{
  return (qp->fpdu_max - IW_FPDU_LEN_BYTES - IW_FPDU_CRC_BYTES - hdr_len) & ~3u;
}

static uint32_t
fpdu_crc_final(iw_qp_t *qp, uint32_t crc)
{
  if (!qp->crc)
    return 0;
  int n = iw_config.corrupt_crc;
  if (n > 0 && g_atomic_int_add(&fpdu_counter, 1) + 1 == n) {
    g_message("ITAPI_IWARP_CORRUPT_CRC: corrupting the CRC of FPDU %d", n);
    crc ^= 0xdeadbeef;
  }
  return crc;
}

/* Frame one contiguous ULPDU into @out; returns the FPDU length. */
static uint32_t
frame_ulpdu(iw_qp_t *qp, const uint8_t *ulpdu, uint32_t len, uint8_t *out)
{
  uint16_t l = htons((uint16_t) len);
  memcpy(out, &l, 2);
  memcpy(out + 2, ulpdu, len);
  uint32_t pad = iw_fpdu_pad(len);
  memset(out + 2 + len, 0, pad);
  uint32_t n = 2 + len + pad;
  iw_crc_put(out + n, fpdu_crc_final(qp, iw_crc32c(0, out, n)));
  return n + IW_FPDU_CRC_BYTES;
}

/* The RFC 6581 ready-to-receive, sent by the initiator right after the
 * reply: a zero-length RDMA Write or Read Request with STag 1 (cxgb4 fails
 * tagged segments with STag 0, softiwarp issue #21). */
int
iw_tx_rtr(iw_qp_t *qp)
{
  uint8_t ulpdu[18 + 28], fpdu[2 + sizeof(ulpdu) + 8];
  uint32_t len;
  if (qp->rtr == IW_RTR_WRITE) {
    iw_ddp_tagged_t t = {
      .ctrl = IW_DDP_TAGGED | IW_DDP_LAST | IW_DDP_VERSION,
      .rdmap = IW_RDMAP_VERSION | IW_OP_WRITE,
      .stag_be = htonl(1), .to_be = 0,
    };
    memcpy(ulpdu, &t, sizeof(t));
    len = sizeof(t);
  } else {
    iw_ddp_untagged_t u = {
      .ctrl = IW_DDP_LAST | IW_DDP_VERSION, .rdmap = IW_RDMAP_VERSION | IW_OP_READ_REQ,
      .qn_be = htonl(IW_QN_READ_REQ), .msn_be = htonl(++qp->msn_tx[IW_QN_READ_REQ]),
    };
    iw_rdmap_readreq_t r = { .sink_stag_be = htonl(1), .src_stag_be = htonl(1) };
    memcpy(ulpdu, &u, sizeof(u));
    memcpy(ulpdu + sizeof(u), &r, sizeof(r));
    len = sizeof(u) + sizeof(r);
    iw_tx_internal_read(qp, FALSE);
  }
  uint32_t n = frame_ulpdu(qp, ulpdu, len, fpdu);
  return iw_sock_send_all(qp->fd, fpdu, n);
}

/* Forget the message being framed; the batch stays allocated.  Field by
 * field: this runs per message, and rr is only read after it is set. */
void
iw_tx_reset(iw_tx_t *t)
{
  t->kind = IW_TX_NONE;
  t->wqe = NULL;
  t->op = 0;
  t->len = t->off = t->sge_off = t->to = 0;
  t->sge_i = t->msn = t->qn = t->stag = 0;
  t->src = NULL;
  t->imm_next = FALSE;
}

/* The region a Read Response is read from, found again before each piece
 * is read and before a later pass writes a piece named in place: the
 * Request was checked when it came (iw_rdmap_read_req), but the consumer
 * may have deregistered the region since and freed its memory, or taken
 * the remote read right from it (it_lmr_modify) or from this QP.  Found by
 * STag and generation (iw_mr_live), so that a new region at that STag is
 * not taken for it; the generation pins its memory, bounds and protection
 * domain.  NULL, with the RDMAP remote protection code in *@code, when the
 * read may not go on (mr_lock held). */
static iw_mr_t *
tx_src_find(iw_qp_t *qp, uint32_t stag, uint64_t gen, uint8_t *code)
{
  iw_mr_t *mr = iw_mr_live(qp->dev, stag, gen);
  if (mr == NULL) {
    *code = IW_RDMAP_P_INVALID_STAG;
    return NULL;
  }
  if (!(mr->access & RNICPI_ACCESS_REMOTE_READ) ||
      !(qp->attr.access & RNICPI_ACCESS_REMOTE_READ)) {
    *code = IW_RDMAP_P_ACCESS;
    return NULL;
  }
  return mr;
}

/* A Read Response's source failed tx_src_find: the Response ends there.
 * An error found while creating a message ends the stream with a
 * Terminate sent in the message's place, copying no header (RFC 5040
 * 7.2); its code is the remote protection error the peer's STag now earns
 * (0/1/@code), so that the peer's Read fails as a remote access error,
 * whatever part of the data it already has. */
static void
tx_src_lost(iw_qp_t *qp, uint32_t stag, uint8_t code, iw_work_t *w)
{
  g_message("QP %u: the region an RDMA Read Response reads (STag 0x%08x) %s before the "
            "Response was all sent; Terminate 0/1/0x%02x",
            qp->base.qp_num, stag,
            code == IW_RDMAP_P_INVALID_STAG ? "was deregistered" : "lost the remote read right",
            code);
  iw_term_send(qp, RNICPI_AE_LOCAL_READ_RESP, IW_LAYER_RDMAP, IW_RDMAP_ET_REMOTE_PROT, code,
               NULL, 0, 0, NULL, w);
}

/* Whether the message being framed may read its next piece: for a Read
 * Response, its source found again, t->src pointing into it;
 * IW_TERM_CODE_NONE, or the code tx_src_find gave (mr_lock held). */
static uint8_t
tx_src_next(iw_qp_t *qp)
{
  iw_tx_t *t = &qp->tx;
  /* An Atomic Response reads no memory; a zero-length Read Response
   * names none (RFC 5041 5.2: its STag is not checked). */
  if (t->kind != IW_TX_RRESP || t->op != IW_OP_READ_RESP || t->len == 0)
    return IW_TERM_CODE_NONE;
  uint8_t code;
  iw_mr_t *mr = tx_src_find(qp, t->rr.src_stag, t->rr.src_gen, &code);
  if (mr == NULL)
    return code;
  t->src = mr->addr + (t->rr.src_to - mr->iova);
  return IW_TERM_CODE_NONE;
}

/* The whole message is framed (not necessarily written yet). */
static void
tx_framed(iw_qp_t *qp)
{
  iw_tx_t *t = &qp->tx;
  if (t->kind == IW_TX_SQ && !iw_op_answered(t->op) && iw_qp_fenced(qp)) {
    /* RFC 5040 has no acknowledgement: TCP having a Send or Write says
     * nothing of its placement (RDMAC verbs 8.1.3.1).  With
     * ITAPI_IWARP_COMPLETION=placed it completes when a later zero-length
     * Read comes back: the peer answers Reads after it placed what came
     * before them (RFC 5040 5.5), and a Terminate for the WR arrives before
     * that answer.  The fence is framed behind this message, so its answer
     * cannot come before this message is written. */
    t->wqe->sent = TRUE;
    qp->unfenced++;
  }
  iw_tx_reset(t);
}

/* Append @n bytes at @p to the batch's iovecs, extending the last one when
 * they follow it in memory. */
static void
tx_iov_add(iw_txbatch_t *b, const void *p, size_t n)
{
  struct iovec *last = b->niov > 0 ? &b->iov[b->niov - 1] : NULL;
  if (last != NULL && (const uint8_t *) last->iov_base + last->iov_len == p) {
    last->iov_len += n;
    return;
  }
  b->iov[b->niov].iov_base = (void *) p;
  b->iov[b->niov++].iov_len = n;
}

/* Room for one more FPDU in the batch. */
static gboolean
tx_batch_room(const iw_txbatch_t *b)
{
  return b->nf < IW_TX_FPDUS && b->niov + IW_MAX_SGE + 3 <= IW_TX_IOV &&
         b->lin_len + IW_TX_FPDU_LIN <= IW_TX_LIN;
}

/* Frame the next FPDU of the current message into the batch (mr_lock held
 * for reading): header, then the payload (copied behind the header when
 * it is small, otherwise named in place), then pad and CRC. */
static void
tx_frame(iw_qp_t *qp)
{
  iw_tx_t *t = &qp->tx;
  iw_txbatch_t *b = t->b;
  iw_txf_t *f = &b->f[b->nf++];
  f->done_kind = IW_TX_NONE;
  f->wqe = NULL;
  f->src_gen = 0;
  if (t->kind == IW_TX_TERM) {
    if (qp->tail_len > 0)
      tx_iov_add(b, qp->tail, qp->tail_len);
    tx_iov_add(b, qp->term, qp->term_len);
    f->len = qp->tail_len + qp->term_len;
    f->done_kind = IW_TX_TERM;
    b->len += f->len;
    iw_tx_reset(t);
    return;
  }
  const iw_op_rule_t *rule = &iw_op_rules[t->op];
  uint32_t hlen = rule->tagged ? sizeof(iw_ddp_tagged_t) : sizeof(iw_ddp_untagged_t);
  hlen += rule->extra_hdr;
  uint64_t left = t->len - t->off;
  uint32_t chunk = (uint32_t) MIN(left, (uint64_t) room_for(qp, hlen));
  gboolean last = chunk == left;
  if (!last && qp->fpdu_max < iw_config.fpdu_max) { /* (at most IW_FPDU_MAX) */
    /* The segment size may have grown with the peer's window since: the
     * FPDUs after this one follow it. */
    qp->mss_bytes += chunk;
    if (qp->mss_bytes >= IW_MSS_PROBE_BYTES)
      iw_qp_mulpdu(qp);
  }
  uint8_t *fh = b->lin + b->lin_len, *h = fh + IW_FPDU_LEN_BYTES;
  uint8_t ctrl = (last ? IW_DDP_LAST : 0) | IW_DDP_VERSION;
  uint8_t rdmap = IW_RDMAP_VERSION | t->op;

  if (rule->tagged) {
    iw_ddp_tagged_t d = { .ctrl = ctrl | IW_DDP_TAGGED, .rdmap = rdmap,
                          .stag_be = htonl(t->stag), .to_be = htobe64(t->to + t->off) };
    memcpy(h, &d, sizeof(d));
  } else {
    iw_ddp_untagged_t d = { .ctrl = ctrl, .rdmap = rdmap, .inv_stag_be = htonl(t->stag),
                            .qn_be = htonl(t->qn), .msn_be = htonl(t->msn),
                            .mo_be = htonl((uint32_t) t->off) };
    memcpy(h, &d, sizeof(d));
    if (t->op == IW_OP_READ_REQ) {
      iw_swqe_t *s = t->wqe;
      iw_rdmap_readreq_t r = {
        .sink_stag_be = htonl(s->sink_stag), .sink_to_be = htobe64(s->sink_to),
        .size_be = htonl((uint32_t) s->total),
        .src_stag_be = htonl(s->wr.rkey > UINT32_MAX ? 0 : (uint32_t) s->wr.rkey),
        .src_to_be = htobe64(s->wr.remote_addr),
      };
      memcpy(h + sizeof(d), &r, sizeof(r));
    } else if (t->op == IW_OP_ATOMIC_REQ) {
      const rnicpi_send_wr_t *wr = &t->wqe->wr;
      gboolean faa = wr->opcode == RNICPI_WR_ATOMIC_FETCH_ADD;
      iw_rdmap_atomic_req_t a = {
        .opcode_be = htonl(faa ? IW_ATOMIC_FETCH_ADD : IW_ATOMIC_CMP_SWAP),
        .req_id_be = htonl(t->wqe->req_id),
        .stag_be = htonl(wr->rkey > UINT32_MAX ? 0 : (uint32_t) wr->rkey),
        .to_be = htobe64(wr->remote_addr),
        .add_swap_be = htobe64(faa ? wr->compare_add : wr->swap),
        .add_swap_mask_be = faa ? 0 : UINT64_MAX,
        .compare_be = faa ? 0 : htobe64(wr->compare_add),
        .compare_mask_be = UINT64_MAX, /* RFC 7306 5.2.1: all ones when unused */
      };
      memcpy(h + sizeof(d), &a, sizeof(a));
    } else if (t->op == IW_OP_ATOMIC_RESP) {
      iw_rdmap_atomic_resp_t a = { .req_id_be = htonl(t->rr.req_id), .orig_be = htobe64(t->rr.orig) };
      memcpy(h + sizeof(d), &a, sizeof(a));
    } else if (t->op == IW_OP_IMM || t->op == IW_OP_IMM_SE) {
      uint64_t v = htobe64(t->wqe->wr.imm_data);
      memcpy(h + sizeof(d), &v, IW_RDMAP_IMM_BYTES);
    }
  }
  uint32_t ulpdu = hlen + chunk;
  uint16_t l = htons((uint16_t) ulpdu);
  memcpy(fh, &l, 2);
  uint32_t hdr_len = IW_FPDU_LEN_BYTES + hlen;
  b->lin_len += hdr_len;
  uint32_t crc = qp->crc ? iw_crc32c(0, fh, hdr_len) : 0;

  /* The payload, from the source memory: copied behind the header (the
   * whole FPDU is then one iovec, added at the end) or named in place. */
  gboolean inline_ = chunk <= IW_TX_INLINE;
  if (!inline_)
    tx_iov_add(b, fh, hdr_len);
  uint32_t want = chunk;
  while (want > 0) {
    const uint8_t *src;
    uint32_t n;
    if (t->kind == IW_TX_RRESP) {
      src = t->src + t->off;
      n = want;
    } else {
      const rnicpi_sge_t *s = &t->wqe->sge[t->sge_i];
      src = (const uint8_t *) (uintptr_t) (s->addr + t->sge_off);
      n = (uint32_t) MIN((uint64_t) want, s->length - t->sge_off);
      t->sge_off += n;
      if (t->sge_off == s->length) {
        t->sge_i++;
        t->sge_off = 0;
      }
    }
    if (n == 0)
      continue;
    if (qp->crc)
      crc = iw_crc32c(crc, src, n);
    if (inline_) {
      memcpy(b->lin + b->lin_len, src, n);
      b->lin_len += n;
    } else if (t->kind == IW_TX_RRESP) {
      /* In an iovec of its own, which tx_keep_cut can point at a copy;
       * its region is found again before a later pass writes it. */
      f->src_iov = b->niov;
      f->src_stag = t->rr.src_stag;
      f->src_gen = t->rr.src_gen;
      b->iov[b->niov].iov_base = (void *) src;
      b->iov[b->niov++].iov_len = n;
    } else {
      tx_iov_add(b, src, n);
    }
    want -= n;
  }
  uint8_t *trailer = b->lin + b->lin_len;
  uint32_t pad = iw_fpdu_pad(ulpdu);
  memset(trailer, 0, pad);
  if (qp->crc && pad > 0)
    crc = iw_crc32c(crc, trailer, pad);
  iw_crc_put(trailer + pad, fpdu_crc_final(qp, crc));
  b->lin_len += pad + IW_FPDU_CRC_BYTES;
  f->len = hdr_len + chunk + pad + IW_FPDU_CRC_BYTES;
  if (inline_)
    tx_iov_add(b, fh, f->len);
  else
    tx_iov_add(b, trailer, pad + IW_FPDU_CRC_BYTES);
  b->len += f->len;
  t->off += chunk;
  if (t->off == t->len && t->imm_next) {
    /* The Write is framed; the WR goes on with its immediate data. */
    iw_tx_imm_start(qp, t);
  } else if (t->off == t->len) {
    f->done_kind = (uint8_t) t->kind;
    f->op = t->op;
    f->wqe = t->wqe;
    tx_framed(qp);
  }
}

/* Write what the socket takes of the batch: 1 all, 0 would block, -1 error. */
static int
tx_write(iw_qp_t *qp)
{
  iw_txbatch_t *b = qp->tx.b;
  while (b->sent < b->len) {
    struct iovec iov[IW_TX_IOV];
    struct msghdr mh = { .msg_iov = b->iov, .msg_iovlen = b->niov };
    if (b->sent > 0) {
      /* The rest of a batch the socket took in part. */
      int n = 0;
      size_t skip = b->sent;
      for (int i = 0; i < b->niov; i++) {
        if (skip >= b->iov[i].iov_len) {
          skip -= b->iov[i].iov_len;
          continue;
        }
        iov[n].iov_base = (uint8_t *) b->iov[i].iov_base + skip;
        iov[n++].iov_len = b->iov[i].iov_len - skip;
        skip = 0;
      }
      mh.msg_iov = iov;
      mh.msg_iovlen = n;
    }
    /* One piece (a small FPDU, copied whole) needs no iovec array: send()
     * spares the kernel importing one (about 0.1 us a message here). */
    ssize_t r = mh.msg_iovlen == 1
                  ? send(qp->fd, mh.msg_iov[0].iov_base, mh.msg_iov[0].iov_len,
                         MSG_NOSIGNAL | MSG_DONTWAIT)
                  : sendmsg(qp->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
      g_debug("QP %u: send: %s", qp->base.qp_num, g_strerror(errno));
      return -1;
    }
    b->sent += (size_t) r;
  }
  return 1;
}

/* The socket took part of an FPDU whose payload is a Read Response's
 * source, named in place: the payload is copied out (one FPDU at most),
 * since the region may be deregistered and its memory freed before the
 * socket takes the rest, and the rest must still go out for a Terminate to
 * start on an FPDU boundary (RFC 5044 4.1).  Every pass that leaves a
 * batch half written calls it, so between passes no half-written FPDU
 * names a region (mr_lock held). */
static void
tx_keep_cut(iw_txbatch_t *b)
{
  if (b->f_done >= b->nf || b->sent == b->f_end || b->f[b->f_done].src_gen == 0)
    return;
  iw_txf_t *f = &b->f[b->f_done];
  struct iovec *v = &b->iov[f->src_iov];
  if (b->cut_size < v->iov_len) {
    /* The iovecs still naming the old copy are written already. */
    g_free(b->cut);
    b->cut = g_malloc(v->iov_len);
    b->cut_size = v->iov_len;
  }
  memcpy(b->cut, v->iov_base, v->iov_len);
  v->iov_base = b->cut;
  f->src_gen = 0;
}

/* Pieces of Read Responses framed in an earlier pass and not written yet
 * name their regions in place: a pass holds mr_lock, so each region stays
 * while the pass that checked it runs, but not after.  Before this pass
 * writes them, each is found again; FALSE when one failed and the stream
 * was terminated (which dropped the batch). */
static gboolean
tx_batch_src_ok(iw_qp_t *qp, iw_work_t *w)
{
  iw_txbatch_t *b = qp->tx.b;
  for (int i = b != NULL ? b->f_done : 0; b != NULL && i < b->nf; i++) {
    const iw_txf_t *f = &b->f[i];
    uint8_t code;
    if (f->src_gen != 0 && tx_src_find(qp, f->src_stag, f->src_gen, &code) == NULL) {
      tx_src_lost(qp, f->src_stag, code, w);
      return FALSE;
    }
  }
  return TRUE;
}

/* An FPDU that ends a message is written completely. */
static void
tx_written(iw_qp_t *qp, iw_txf_t *f, iw_work_t *w)
{
  switch (f->done_kind) {
  case IW_TX_SQ:
    /* Without delivery fences, complete at transmission. */
    if (!iw_op_answered(f->op) && !iw_qp_fenced(qp) && f->wqe != NULL) {
      f->wqe->done = TRUE;
      iw_qp_sq_reap(qp, w);
    }
    break;
  case IW_TX_TERM:
    qp->term_sent = TRUE;
    g_free(qp->tail);
    qp->tail = NULL;
    qp->tail_len = 0;
    shutdown(qp->fd, SHUT_WR);
    break;
  default:
    break;
  }
}

/* The next FPDU of @b written whole and not yet accounted, now accounted
 * (f_done, f_end past it); NULL when there is none. */
static iw_txf_t *
tx_whole_next(iw_txbatch_t *b)
{
  if (b->f_done >= b->nf || b->f_end + b->f[b->f_done].len > b->sent)
    return NULL;
  iw_txf_t *f = &b->f[b->f_done++];
  b->f_end += f->len;
  return f;
}

/* Account for the FPDUs written completely; empty the batch when done. */
static void
tx_account(iw_qp_t *qp, iw_work_t *w)
{
  iw_txbatch_t *b = qp->tx.b;
  iw_txf_t *f;
  while ((f = tx_whole_next(b)) != NULL) {
    if (f->done_kind != IW_TX_NONE)
      tx_written(qp, f, w);
  }
  if (b->sent == b->len)
    b->niov = b->nf = b->f_done = 0, b->len = b->sent = b->f_end = 0, b->lin_len = 0;
}

/* An orderly close owes its FIN now: asked for (iw_disconnect), still
 * connected, and nothing left to send or to be answered, its own fence
 * included (RDMAC verbs 8.3.1: graceful close once the send queue and
 * reads are done). */
static gboolean
tx_fin_due(const iw_qp_t *qp)
{
  return qp->closing && !qp->fin_fence && qp->cs == IW_CS_RTS && rnicpi_fifo_empty(&qp->sq) &&
         qp->rd_split == NULL && qp->unfenced == 0 &&
         rnicpi_fifo_empty(&qp->orq) && rnicpi_fifo_empty(&qp->irq);
}

/* Something for the transmit pass to do now: a message, the rest of a
 * batch, a Terminate, a Read Response, a fence, or the FIN of an orderly
 * close.  The FIN counts: it often falls due on input (the last Read's
 * Response), and a poller or sleeper that skips the transmit pass when
 * nothing is pending would leave the close hanging. */
gboolean
iw_tx_pending(iw_qp_t *qp)
{
  return qp->tx.kind != IW_TX_NONE || (qp->tx.b != NULL && qp->tx.b->sent < qp->tx.b->len) ||
         qp->term_pending || !rnicpi_fifo_empty(&qp->irq) || !rnicpi_fifo_empty(&qp->sq) ||
         qp->rd_split != NULL || (qp->fin_fence && rnicpi_fifo_empty(&qp->orq)) ||
         (qp->unfenced > 0 && !qp->fence_out) || tx_fin_due(qp);
}

/* @qp's orderly close waits for nothing but its own fence (iw_disconnect),
 * and the consumer frees @qp or the fence's time is up: the FIN goes now,
 * as it would have without the fence (not the Terminate of an abort).
 * FALSE: something of the consumer's is still outstanding. */
gboolean
iw_tx_fin_cut_short(iw_qp_t *qp)
{
  if (!qp->closing || qp->cs != IW_CS_RTS || !rnicpi_fifo_empty(&qp->sq) || qp->rd_split != NULL ||
      !rnicpi_fifo_empty(&qp->irq) || qp->tx.kind != IW_TX_NONE ||
      (qp->tx.b != NULL && qp->tx.b->sent < qp->tx.b->len))
    return FALSE;
  for (const iw_swqe_t *s = rnicpi_fifo_peek(&qp->orq); s != NULL; s = s->or_next) {
    if (!s->internal)
      return FALSE;
  }
  shutdown(qp->fd, SHUT_WR);
  qp->cs = IW_CS_CLOSING;
  return TRUE;
}

/* The stream is dead for data (flush): forget the batch and the message.
 * If an FPDU is half written, its rest is copied out first (the memory it
 * names may go with the flush): the peer's deframer needs it before a
 * Terminate can follow on an FPDU boundary (RFC 5044 4.1). */
void
iw_tx_drop(iw_qp_t *qp)
{
  iw_txbatch_t *b = qp->tx.b;
  /* FPDUs written whole but not accounted yet (a write that failed after
   * others went out, tx_progress): past them first.  Their messages are
   * flushed with the rest. */
  if (b != NULL)
    while (tx_whole_next(b) != NULL)
      continue;
  if (b != NULL && b->f_done < b->nf && b->sent > b->f_end) {
    iw_txf_t *f = &b->f[b->f_done];
    /* Batch bytes [sent, f_end + len): the iovecs may span FPDUs. */
    size_t skip = b->sent, n = b->f_end + f->len - b->sent, k = 0;
    uint8_t *tail = g_malloc(n);
    iw_mr_lock(qp);
    for (int i = 0; i < b->niov && k < n; i++) {
      size_t l = b->iov[i].iov_len;
      if (skip >= l) {
        skip -= l;
        continue;
      }
      size_t c = MIN(l - skip, n - k);
      memcpy(tail + k, (uint8_t *) b->iov[i].iov_base + skip, c);
      k += c;
      skip = 0;
    }
    iw_mr_unlock(qp);
    g_free(qp->tail);
    qp->tail = tail;
    qp->tail_len = (uint32_t) n;
  }
  if (b != NULL)
    b->niov = b->nf = b->f_done = 0, b->len = b->sent = b->f_end = 0, b->lin_len = 0;
  iw_tx_reset(&qp->tx);
}

/* Free the transmit state of a QP that is going away, and its caches of
 * work-queue entries (flushed before this). */
void
iw_tx_free(iw_qp_t *qp)
{
  rnicpi_cache_clear(&qp->swqe_cache);
  rnicpi_cache_clear(&qp->rwqe_cache);
  rnicpi_cache_clear(&qp->rresp_cache);
  if (qp->tx.b != NULL)
    g_free(qp->tx.b->cut);
  g_free(qp->tx.b);
  qp->tx.b = NULL;
  g_free(qp->tail);
  qp->tail = NULL;
  qp->tail_len = 0;
}

static void
tx_progress(iw_qp_t *qp, iw_work_t *w)
{
  iw_tx_t *t = &qp->tx;
  size_t moved = 0;
  if (!tx_batch_src_ok(qp, w))
    return;
  while (qp->fd >= 0) {
    if (moved >= IW_IO_BURST && iw_qp_posts_waiting(qp) && iw_tx_pending(qp)) {
      /* The rest in the next burst: the progress thread (the socket has
       * room), or the poller that owns the socket, comes back for it. */
      iw_qp_want_out(qp, TRUE);
      return;
    }
    /* Frame what can go now, as long as the batch has room. */
    for (;;) {
      iw_txbatch_t *b = t->b;
      if (b != NULL && !tx_batch_room(b))
        break;
      if (t->kind == IW_TX_NONE && !iw_tx_next(qp, w))
        break;
      if (qp->fd < 0)
        return;
      uint8_t code = tx_src_next(qp);
      if (code != IW_TERM_CODE_NONE) {
        /* What is framed (from sources still there) goes out whole first. */
        if (t->b != NULL && t->b->sent < t->b->len)
          break;
        tx_src_lost(qp, t->rr.src_stag, code, w);
        continue; /* the Terminate is next */
      }
      if (t->b == NULL)
        t->b = g_new0(iw_txbatch_t, 1);
      iw_mr_lock(qp);
      tx_frame(qp);
      iw_mr_unlock(qp);
    }
    iw_txbatch_t *b = t->b;
    if (b == NULL || b->sent == b->len) {
      /* Drained: an orderly close sends its FIN now. */
      if (tx_fin_due(qp)) {
        shutdown(qp->fd, SHUT_WR);
        qp->cs = IW_CS_CLOSING;
        iw_timed_add(qp, 5000000);
      }
      iw_qp_want_out(qp, FALSE);
      return;
    }
    size_t before = b->sent;
    iw_mr_lock(qp);
    int r = tx_write(qp);
    iw_mr_unlock(qp);
    moved += b->sent - before;
    if (r < 0) {
      iw_tx_drop(qp);
      g_free(qp->tail);
      qp->tail = NULL;
      qp->tail_len = 0;
      iw_qp_conn_lost(qp, w);
      return;
    }
    tx_account(qp, w);
    if (r == 0) {
      tx_keep_cut(b);
      iw_qp_want_out(qp, TRUE);
      return;
    }
  }
}

void
iw_tx_progress(iw_qp_t *qp, iw_work_t *w)
{
  iw_mr_lock(qp);
  tx_progress(qp, w);
  iw_mr_unlock(qp);
}
