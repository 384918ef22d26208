/*
 * vp/iwarp: MPA request/reply frames (RFC 5044 7.1) and the RFC 6581
 * control word (IRD/ORD, peer-to-peer mode, RTR types).
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <string.h>

#include "iw_mpa.h"

size_t
iw_mpa_build(const iw_mpa_msg_t *m, uint8_t *out)
{
  iw_mpa_rr_t h;
  memcpy(h.key, m->reply ? IW_MPA_KEY_REP : IW_MPA_KEY_REQ, IW_MPA_KEY_LEN);
  h.flags = (m->markers ? IW_MPA_FLAG_MARKERS : 0) | (m->crc ? IW_MPA_FLAG_CRC : 0) |
            (m->reject ? IW_MPA_FLAG_REJECT : 0) | (m->enhanced ? IW_MPA_FLAG_ENHANCED : 0) |
            (m->rfc7306 ? IW_MPA_FLAG_RFC7306 : 0);
  h.rev = m->rev;
  uint32_t ctl = m->enhanced ? sizeof(iw_mpa_v2_t) : 0;
  h.pd_len_be = htons((uint16_t) (ctl + m->pdata_len));
  memcpy(out, &h, sizeof(h));
  size_t n = sizeof(h);
  if (m->enhanced) {
    /* RFC 6581 9: IRD half carries A and B, ORD half C and D. */
    uint16_t ird = (uint16_t) ((m->ird > IW_MPA_V2_VALUE ? IW_MPA_V2_VALUE : m->ird) | (m->p2p ? IW_MPA_V2_PEER2PEER : 0) |
                               (m->rtr_send ? IW_MPA_V2_RTR_SEND : 0));
    uint16_t ord = (uint16_t) ((m->ord > IW_MPA_V2_VALUE ? IW_MPA_V2_VALUE : m->ord) | (m->rtr_write ? IW_MPA_V2_RTR_WRITE : 0) |
                               (m->rtr_read ? IW_MPA_V2_RTR_READ : 0));
    iw_mpa_v2_t v = { htons(ird), htons(ord) };
    memcpy(out + n, &v, sizeof(v));
    n += sizeof(v);
  }
  if (m->pdata_len > 0)
    memcpy(out + n, m->pdata, m->pdata_len);
  return n + m->pdata_len;
}

iw_mpa_err_t
iw_mpa_parse_header(const uint8_t *hdr, bool reply, uint32_t *pd_len)
{
  iw_mpa_rr_t h;
  memcpy(&h, hdr, sizeof(h));
  if (memcmp(h.key, reply ? IW_MPA_KEY_REP : IW_MPA_KEY_REQ, IW_MPA_KEY_LEN) != 0)
    return IW_MPA_EKEY;
  /* Rev 1 is RFC 5044, rev 2 RFC 6581; rev 0 (pre-IETF) is not spoken. */
  if (h.rev != 1 && h.rev != 2)
    return IW_MPA_EREV;
  uint32_t n = ntohs(h.pd_len_be);
  if (n > IW_MPA_PDATA_MAX)
    return IW_MPA_ELEN;
  *pd_len = n;
  return IW_MPA_OK;
}

iw_mpa_err_t
iw_mpa_parse(const uint8_t *buf, size_t len, bool reply, iw_mpa_msg_t *m)
{
  uint32_t pd_len;
  iw_mpa_err_t e = iw_mpa_parse_header(buf, reply, &pd_len);
  if (e != IW_MPA_OK)
    return e;
  if (len != sizeof(iw_mpa_rr_t) + pd_len)
    return IW_MPA_ELEN;
  iw_mpa_rr_t h;
  memcpy(&h, buf, sizeof(h));
  memset(m, 0, sizeof(*m));
  m->reply = reply;
  m->markers = (h.flags & IW_MPA_FLAG_MARKERS) != 0;
  m->crc = (h.flags & IW_MPA_FLAG_CRC) != 0;
  m->reject = reply && (h.flags & IW_MPA_FLAG_REJECT) != 0;
  m->rfc7306 = (h.flags & IW_MPA_FLAG_RFC7306) != 0;
  m->rev = h.rev;
  m->ird = m->ord = IW_MPA_V2_VALUE;
  const uint8_t *pd = buf + sizeof(h);
  /* RFC 6581 6: the S bit (0x10) of a Rev 2 frame says the private data
   * begins with the control word; without it the frame is a plain one
   * (siw, irdma and cxgb4 set it on every Rev 2 frame they send).  A
   * reject may omit the word. */
  bool ctl = h.rev == 2 && (h.flags & IW_MPA_FLAG_ENHANCED) != 0;
  if (ctl && pd_len >= sizeof(iw_mpa_v2_t)) {
    iw_mpa_v2_t v;
    memcpy(&v, pd, sizeof(v));
    uint16_t ird = ntohs(v.ird_be), ord = ntohs(v.ord_be);
    m->enhanced = true;
    m->p2p = (ird & IW_MPA_V2_PEER2PEER) != 0;
    m->rtr_send = (ird & IW_MPA_V2_RTR_SEND) != 0;
    m->rtr_write = (ord & IW_MPA_V2_RTR_WRITE) != 0;
    m->rtr_read = (ord & IW_MPA_V2_RTR_READ) != 0;
    m->ird = ird & IW_MPA_V2_VALUE;
    m->ord = ord & IW_MPA_V2_VALUE;
    pd += sizeof(v);
    pd_len -= sizeof(v);
  } else if (ctl && !m->reject) {
    return IW_MPA_ECTRL;
  }
  m->pdata = pd;
  m->pdata_len = pd_len;
  return IW_MPA_OK;
}
