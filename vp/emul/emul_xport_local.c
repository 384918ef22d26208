/*
 * vp/emul's in-process transport (emul_xport.h): the two QPs of a
 * connection live in this process, the peer's responder (emul_resp_rx)
 * runs in the requester's thread when a request is posted or what it
 * waited for came (emul_exec.c), the payload moves by memcpy, and the
 * answer is the request's completion, at once.  Every op is inline into
 * emul_xport_local_exec, the requester's entry for the requests that
 * reach the peer (Send, RDMA Write and Read, atomics, immediate data):
 * an in-process post makes no call for the layering.
 *
 * A long copy (EMUL_COPY_UNLOCKED bytes or more) lets the locks go, its
 * regions held by reference (emul_link.c, "Long copies").
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "emul_xport.h"

/* Copy a gather list into a scatter list. */
static void
sg_to_sg(const rnicpi_sge_t *g, uint32_t ng, const rnicpi_sge_t *s, uint32_t ns)
{
  uint32_t gi = 0, si = 0;
  uint64_t go = 0, so = 0;
  while (gi < ng && si < ns) {
    uint64_t n = MIN(g[gi].length - go, s[si].length - so);
    if (n > 0)
      memcpy((uint8_t *) (uintptr_t) (s[si].addr + so),
             (const uint8_t *) (uintptr_t) (g[gi].addr + go), n);
    go += n;
    so += n;
    if (go == g[gi].length) { gi++; go = 0; }
    if (si < ns && so == s[si].length) { si++; so = 0; }
  }
}

/* A long copy of @len bytes by @qp (emul_link.c, "Long copies") holds the
 * regions it touches by reference, taken here under the lock that its
 * checks were made under: the lists @a and @b, and the entry of @rkey at
 * the responder when @remote.  The locks are let go only when every one
 * is held; an entry that left the table since the checks keeps the copy
 * under the lock, which its removal waits for.  Inline: a short copy
 * (every latency case) pays only the length test. */
static inline __attribute__((always_inline)) emul_link_t *
copy_begin(emul_qp_t *qp, uint64_t len, emul_hold_t *h, const rnicpi_sge_t *a, uint32_t na,
           const rnicpi_sge_t *b, uint32_t nb, gboolean remote, uint64_t rkey)
{
  h->n = 0;
  if (len < EMUL_COPY_UNLOCKED || qp->link == NULL)
    return NULL;
  const emul_pers_t *p = emul_pers_of_qp(qp);
  if (!emul_hold_sges(h, p, a, na) || !emul_hold_sges(h, p, b, nb) ||
      (remote && !emul_hold_key(h, p, rkey))) {
    emul_hold_drop(h);
    return NULL;
  }
  return emul_link_copy_begin(qp, len);
}

/* The copy is over: its references go before any lock is taken back
 * (@l NULL: nothing was let go, and nothing is held). */
static inline void
copy_end(emul_qp_t *qp, emul_link_t *l, emul_hold_t *h)
{
  if (l == NULL)
    return;
  emul_hold_drop(h);
  emul_link_copy_end(qp, l);
}

/* The responder's ops: the bytes move by memcpy between the requester's
 * checked list and the responder's memory, and the answer is the
 * requester's completion.  Inline into the responder (emul_resp_rx) that
 * local_send runs. */
static inline __attribute__((always_inline)) gboolean
local_pull(emul_qp_t *resp, emul_pkt_t *pkt, emul_rwqe_t *r, const rnicpi_sge_t *dst, uint32_t n,
           emul_work_t *w)
{
  (void) resp, (void) r, (void) w;
  gboolean send = emul_pkt_is_send(pkt->op);
  emul_hold_t h;
  emul_link_t *l = copy_begin(pkt->req, pkt->len, &h, pkt->sg, pkt->wr->num_sge, send ? dst : NULL,
                              send ? n : 0, !send, pkt->rkey);
  if (send)
    sg_to_sg(pkt->sg, pkt->wr->num_sge, dst, n);
  else
    emul_sg_copy(pkt->sg, pkt->wr->num_sge, (uint8_t *) (uintptr_t) dst->addr, TRUE);
  copy_end(pkt->req, l, &h);
  return TRUE;
}

/* A Read's bytes come back into the requester's list (IBTA 9.4.4; RFC 5040
 * 4.4), an atomic's old value into its 8 bytes; then the request completes. */
static inline __attribute__((always_inline)) emul_exec_t
local_answer(emul_qp_t *resp, emul_pkt_t *pkt, uint8_t *t, emul_work_t *w)
{
  (void) resp;
  emul_qp_t *qp = pkt->req;
  const rnicpi_send_wr_t *wr = pkt->wr;
  if (pkt->op == RNICPI_WR_RDMA_READ) {
    emul_hold_t h;
    emul_link_t *l = copy_begin(qp, pkt->len, &h, pkt->sg, wr->num_sge, NULL, 0, TRUE, wr->rkey);
    if (pkt->len > 0)
      emul_sg_copy(pkt->sg, wr->num_sge, t, FALSE);
    copy_end(qp, l, &h);
    if (!emul_read_inv_done(qp, wr)) {
      emul_req_fail_local(qp, wr, RNICPI_WC_MEM_MGT_ERR, w);
      return EMUL_EXEC_FAILED;
    }
  } else if (rnicpi_wr_is_atomic(pkt->op)) {
    memcpy((void *) (uintptr_t) wr->sg_list[0].addr, &pkt->old, 8);
    pkt->len = 8;
  }
  emul_complete_send(qp, wr, RNICPI_WC_SUCCESS, (uint32_t) pkt->len, w);
  return EMUL_EXEC_DONE;
}

static void
local_refuse(emul_qp_t *resp, const emul_pkt_t *pkt, emul_fault_t f, emul_work_t *w)
{
  (void) resp;
  emul_req_fail_remote(pkt->req, pkt->wr, f, w);
}

/* The requester's: the peer's responder, run at once in this thread. */
static inline __attribute__((always_inline)) emul_exec_t
local_send(emul_qp_t *qp, emul_pkt_t *pkt, emul_work_t *w)
{
  return emul_resp_rx(qp->peer, pkt, &emul_xport_local, w);
}

/* Issue while the connection stands (RTS). */
static gboolean
local_ready(const emul_qp_t *qp)
{
  return qp->state == RNICPI_QPS_RTS;
}

const emul_xport_ops_t emul_xport_local = {
  .ready = local_ready, .transmit = local_send, .at_once = TRUE,
  .pull = local_pull, .answer = local_answer, .refuse = local_refuse,
};

emul_exec_t
emul_xport_local_exec(emul_qp_t *qp, const rnicpi_send_wr_t *wr, emul_work_t *w)
{
  return emul_req_remote(qp, wr, &emul_xport_local, w);
}

