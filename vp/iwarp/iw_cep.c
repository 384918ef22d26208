/*
 * vp/iwarp connection endpoints: a QP's connection handshake, its state
 * the iw_cep_t (as Linux siw's siw_cep, see iw.h for its lifetime and
 * locks), from the endpoint made with the consumer's parameters to the
 * ESTABLISHED event that frees it.  The MPA Request/Reply exchange
 * (RFC 5044 7.1) with RFC 6581 enhanced setup (IRD/ORD, peer-to-peer mode
 * with a zero-length Write or Read as RTR): the initiator's Request and
 * the responder's Reply, the frame read off the socket, the Reply taken
 * (or its first FPDU held back), the private data each side keeps for its
 * ESTABLISHED event, and a setup that fails (UNREACHABLE).  iw_cm.c has
 * the listeners and their pending requests, the consumer's connect,
 * accept, reject and disconnect, socket handoff and deadlines, and calls
 * in here once a QP owns its socket.
 *
 * Interop defaults (reference/wire.md 7): we send Rev 2 with the 0x10 bit
 * and Control Flag A, offering Write and Read RTRs; as responder we echo A
 * and pick Write if offered, then Read.  CRC is used when either side asks
 * (RFC 5044 7.1.1, C bit: it MUST be used if the peer requests it); markers are
 * refused with a Reject, as siw does.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "iw.h"

/* ---- connection endpoints (qp->lock held; see iw_cep_t) -------------- */

iw_cep_t *
iw_cep_get(iw_qp_t *qp)
{
  if (qp->cep == NULL)
    qp->cep = g_new0(iw_cep_t, 1);
  return qp->cep;
}

void
iw_cep_put(iw_qp_t *qp)
{
  g_free(qp->cep);
  qp->cep = NULL;
}

void
iw_cep_established(iw_qp_t *qp)
{
  iw_cep_t *cep = qp->cep; /* NULL only if setup began without one: no private data */
  iw_qp_cm_event(qp, RNICPI_CM_ESTABLISHED, cep != NULL ? cep->est_pdata : NULL,
                 cep != NULL ? cep->est_pdata_len : 0, RNICPI_CM_REASON_NONE);
  iw_cep_put(qp);
}

/* A new connection of @qp: its endpoint, with the consumer's parameters. */
void
iw_cep_set_param(iw_qp_t *qp, const rnicpi_conn_param_t *p)
{
  iw_cep_t *cep = iw_cep_get(qp);
  cep->param = *p;
  cep->hs_got = 0;
  cep->est_pdata_len = 0;
  if (p->pdata_len > 0)
    memcpy(cep->pdata_buf, p->pdata, p->pdata_len);
  cep->param.pdata = NULL;
  qp->attr.ird = p->ird;
  qp->attr.ord = p->ord;
}

void
iw_cep_unreachable(iw_qp_t *qp, rnicpi_cm_reason_t why, iw_work_t *w)
{
  iw_qp_flush(qp, w);
  iw_qp_cm_event(qp, RNICPI_CM_UNREACHABLE, NULL, 0, why);
  iw_qp_close_fd(qp);
}

/* ---- negotiation -------------------------------------------------------- */

static uint32_t
cap_value(uint32_t mine, uint32_t theirs)
{
  return theirs == IW_MPA_V2_VALUE ? mine : MIN(mine, theirs);
}

/* Responder: answer request @req on @qp with @param; the QP owns @fd. */
rnicpi_status_t
iw_cep_passive_reply(iw_qp_t *qp, const iw_mpa_msg_t *req, const rnicpi_conn_param_t *param,
              iw_work_t *w)
{
  iw_mpa_msg_t rep = { .reply = true, .rev = req->rev, .enhanced = req->enhanced };
  qp->crc = req->crc || iw_config.crc;
  qp->rev = req->rev;
  /* RFC 6581: each direction settles to what both ends can do. */
  qp->ird = cap_value(param->ird, req->ord);
  qp->ord = cap_value(param->ord, req->ird);
  /* The delivery fences are Reads too: with no IRD announced (0x3FFF, or
   * Rev 1) they stay within the ORD our consumer set (RFC 5040 6.1). */
  qp->peer_ird = req->ird == IW_MPA_V2_VALUE ? qp->ord : req->ird;
  qp->rtr = IW_RTR_NONE;
  if (req->enhanced && req->p2p) {
    /* RFC 6581 9.2: set an RTR type we support even when the initiator
     * offered none of them (only Send); it then terminates with 2/0/7. */
    if (req->rtr_read && !req->rtr_write)
      qp->rtr = IW_RTR_READ;
    else
      qp->rtr = IW_RTR_WRITE;
  }
  rep.crc = qp->crc;
  qp->rfc7306 = req->rfc7306 && qp->dev->rfc7306;
  rep.rfc7306 = qp->rfc7306;
  rep.p2p = req->enhanced && req->p2p; /* RFC 6581 9.2: echo A */
  rep.rtr_write = qp->rtr == IW_RTR_WRITE;
  rep.rtr_read = qp->rtr == IW_RTR_READ;
  /* We always answer one Read (zero-length ones at least, which the
   * delivery fences of iw_sq.c need), so never announce an IRD of 0. */
  rep.ird = MAX(qp->ird, 1u);
  rep.ord = qp->ord;
  /* RFC 6581 9.2: 0x3FFF (the ULP negotiates) is answered with 0x3FFF. */
  if (req->ord == IW_MPA_V2_VALUE)
    rep.ird = IW_MPA_V2_VALUE;
  if (req->ird == IW_MPA_V2_VALUE)
    rep.ord = IW_MPA_V2_VALUE;
  rep.pdata = param->pdata;
  rep.pdata_len = param->pdata_len;
  uint8_t buf[sizeof(iw_mpa_rr_t) + IW_MPA_PDATA_MAX];
  size_t n = iw_mpa_build(&rep, buf);
  if (iw_sock_send_all(qp->fd, buf, n) != 0) {
    iw_qp_fail(qp, RNICPI_CM_BROKEN, w); /* the consumer hears of it as an event */
    iw_qp_close_fd(qp);
    return RNICPI_OK;
  }
  iw_qp_init_stream(qp);
  iw_qp_want_out(qp, FALSE);
  if (qp->rtr != IW_RTR_NONE) {
    qp->cs = IW_CS_RTR_WAIT;
    iw_timed_add(qp, IW_CONNECT_TIMEOUT_US);
  } else {
    /* RFC 5044 7.1.2 (rule 4): the initiator sends first; hold our FPDUs until then. */
    qp->tx_hold = TRUE;
    iw_qp_go_rts(qp);
    iw_cep_established(qp);
  }
  return RNICPI_OK;
}

void
iw_cep_send_request(iw_qp_t *qp, iw_work_t *w)
{
  iw_mpa_msg_t req = {
    .rev = (uint8_t) iw_config.mpa_rev, .crc = iw_config.crc != 0,
    .enhanced = iw_config.mpa_rev == 2, .p2p = iw_config.mpa_rev == 2,
    .rtr_write = iw_config.mpa_rev == 2, .rtr_read = iw_config.mpa_rev == 2,
    .ird = MAX(qp->attr.ird, 1u), .ord = qp->attr.ord,
    .pdata = qp->cep->pdata_buf, .pdata_len = qp->cep->param.pdata_len,
    .rfc7306 = qp->dev->rfc7306,
  };
  uint8_t buf[sizeof(iw_mpa_rr_t) + IW_MPA_PDATA_MAX];
  size_t n = iw_mpa_build(&req, buf);
  if (iw_sock_send_all(qp->fd, buf, n) != 0) {
    iw_cep_unreachable(qp, RNICPI_CM_REASON_NO_LISTENER, w);
    return;
  }
  qp->cs = IW_CS_MPA_REP;
  qp->cep->hs_got = 0;
  iw_qp_want_out(qp, FALSE);
}

/* Read one request or reply frame into @hs: 1 complete, 0 more to come,
 * -1 closed, -2 malformed. */
int
iw_cep_read_frame(int fd, uint8_t *hs, uint32_t *got, bool reply)
{
  for (;;) {
    uint32_t need = sizeof(iw_mpa_rr_t);
    if (*got >= need) {
      uint32_t pd;
      if (iw_mpa_parse_header(hs, reply, &pd) != IW_MPA_OK)
        return -2;
      need += pd;
      if (*got == need)
        return 1;
    }
    ssize_t n = recv(fd, hs + *got, need - *got, MSG_DONTWAIT);
    if (n == 0)
      return -1;
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    *got += (uint32_t) n;
  }
}

/* The private data of @m, for the ESTABLISHED event that comes later. */
static void
keep_pdata(iw_qp_t *qp, const iw_mpa_msg_t *m)
{
  iw_cep_t *cep = qp->cep;
  cep->est_pdata_len = MIN(m->pdata_len, (uint32_t) sizeof(cep->est_pdata));
  memcpy(cep->est_pdata, m->pdata, cep->est_pdata_len);
}

/* A QP's socket during setup (qp->lock held). */
void
iw_cm_qp_io(iw_qp_t *qp, uint32_t events, iw_work_t *w)
{
  if (qp->cs == IW_CS_HOLD) {
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
      iw_timed_del(qp);
      iw_cep_active_establish(qp, w);
      if (qp->fd >= 0 && qp->cs == IW_CS_RTS)
        iw_qp_io_rts(qp, events, w);
    }
    return;
  }
  if (qp->cs == IW_CS_TCP_CONNECT) {
    int err = 0;
    socklen_t l = sizeof(err);
    getsockopt(qp->fd, SOL_SOCKET, SO_ERROR, &err, &l);
    if (err != 0) {
      iw_cep_unreachable(qp, rnicpi_cm_reason_of_errno(err), w);
      return;
    }
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
      iw_cep_send_request(qp, w);
    return;
  }
  iw_cep_t *cep = qp->cep;
  int r = iw_cep_read_frame(qp->fd, cep->hs, &cep->hs_got, qp->cs == IW_CS_MPA_REP);
  if (r == 0)
    return;
  if (r < 0) {
    /* Closed before answering: unlisten, or a reject without a frame. */
    iw_cep_unreachable(qp, r == -1 ? RNICPI_CM_REASON_NO_LISTENER : RNICPI_CM_REASON_NONE, w);
    return;
  }
  iw_mpa_msg_t m;
  if (iw_mpa_parse(cep->hs, cep->hs_got, qp->cs == IW_CS_MPA_REP, &m) != IW_MPA_OK) {
    iw_cep_unreachable(qp, RNICPI_CM_REASON_NONE, w);
    return;
  }
  if (qp->cs == IW_CS_MPA_REQ) {
    /* Passive handoff: accept at once with the handoff's parameters. */
    if (m.markers) {
      iw_mpa_msg_t rej = { .reply = true, .reject = true, .rev = m.rev, .enhanced = m.enhanced };
      uint8_t buf[sizeof(iw_mpa_rr_t) + sizeof(iw_mpa_v2_t)];
      iw_sock_send_all(qp->fd, buf, iw_mpa_build(&rej, buf));
      iw_cep_unreachable(qp, RNICPI_CM_REASON_NONE, w);
      return;
    }
    rnicpi_conn_param_t p = cep->param;
    p.pdata = cep->pdata_buf;
    keep_pdata(qp, &m);
    iw_cep_passive_reply(qp, &m, &p, w);
    return;
  }
  if (m.reject) {
    iw_qp_flush(qp, w);
    iw_qp_cm_event(qp, RNICPI_CM_REJECTED, m.pdata, m.pdata_len, RNICPI_CM_REASON_NONE);
    iw_qp_close_fd(qp);
    return;
  }
  if (m.markers) {
    iw_cep_unreachable(qp, RNICPI_CM_REASON_BAD_PARAMS, w); /* it needs markers, which we never insert */
    return;
  }
  qp->crc = m.crc || iw_config.crc;
  qp->rev = m.rev;
  /* Only a reply that carries the flag back agreed to RFC 7306. */
  qp->rfc7306 = qp->dev->rfc7306 && m.rfc7306;
  if (m.ord != IW_MPA_V2_VALUE && m.ord > MAX(qp->attr.ird, 1u)) {
    /* RFC 6581 9.1: the responder will have more Reads outstanding than
     * the IRD our Request offered; the initiator must terminate. */
    g_debug("QP %u: the MPA Reply's ORD %u exceeds our IRD %u: Terminate", qp->base.qp_num,
            m.ord, MAX(qp->attr.ird, 1u));
    /* RFC 6581 9.1: the consumer is told the responder's IRD and ORD, to
     * try again with an IRD that will do. */
    qp->ird = m.ord;
    qp->ord = m.ird == IW_MPA_V2_VALUE ? qp->attr.ord : m.ird;
    iw_term_refuse(qp, IW_TERM_MPA_NO_IRD, RNICPI_CM_REASON_BAD_ORD, w);
    return;
  }
  qp->ord = cap_value(qp->attr.ord, m.ird);
  qp->ird = cap_value(qp->attr.ird, m.ord);
  qp->peer_ird = m.ird == IW_MPA_V2_VALUE ? qp->ord : m.ird; /* as iw_cep_passive_reply */
  qp->rtr = IW_RTR_NONE;
  if (m.enhanced && iw_config.mpa_rev == 2) {
    /* RFC 6581: use the RTR the responder chose (softiwarp issue #20). */
    if (m.p2p && m.rtr_write)
      qp->rtr = IW_RTR_WRITE;
    else if (m.p2p && m.rtr_read)
      qp->rtr = IW_RTR_READ;
    else if (m.p2p) {
      iw_term_refuse(qp, IW_TERM_MPA_NO_RTR, RNICPI_CM_REASON_BAD_PARAMS, w);
      return;
    }
  }
  keep_pdata(qp, &m);
  if (iw_config.first_fpdu_delay_us > 0) {
    /* Hold our first FPDU (the RTR, or the consumer's first message) back:
     * stock Linux siw sends its Reply before it listens to the socket, and
     * an FPDU that comes in between sits unread (doc/provider-iwarp.md,
     * "The accept race of stock siw").  A peer that speaks first (which
     * RFC 5044 7.1.2 leaves to the initiator; tolerated) ends the hold. */
    qp->cs = IW_CS_HOLD;
    iw_timed_add(qp, iw_config.first_fpdu_delay_us);
    return;
  }
  iw_cep_active_establish(qp, w);
}

/* Initiator: the reply was taken; start full operation (qp->lock held). */
void
iw_cep_active_establish(iw_qp_t *qp, iw_work_t *w)
{
  iw_qp_init_stream(qp);
  if (qp->rtr != IW_RTR_NONE && iw_tx_rtr(qp) != 0) {
    g_message("QP %u: cannot send the RTR after the MPA Reply: %s; the peer closed or reset "
              "the connection (if it waits for our first FPDU, lower "
              "ITAPI_IWARP_FIRST_FPDU_DELAY_MS)", qp->base.qp_num, g_strerror(errno));
    iw_cep_unreachable(qp, RNICPI_CM_REASON_NONE, w);
    return;
  }
  iw_qp_go_rts(qp);
  iw_cep_established(qp);
  iw_tx_progress(qp, w);
}
