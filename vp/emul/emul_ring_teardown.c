/*
 * vp/emul across processes: the end of a connection.  This side ends it
 * (emul_ring_teardown: DISC with private data, or BREAK naming the
 * request that failed and the fault the peer's QP is told), after the
 * answers already due; the peer's DISC or BREAK, its death (the socket's
 * EOF, its pidfd), a protocol violation, or a peer that takes nothing from
 * our ring for ITAPI_EMUL_TIMEOUT_MS (emul_ring.h, "Timeout") end it here.
 * The events of the end leave after its message (emul_events_after).
 * Design: emul_ring.h, "CM".
 *
 * Everything here runs under the fabric lock; upcalls go through the
 * event thread (CM, async) or emul_work_deliver after the lock (CQs).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "emul_ring.h"

/* This side ends the connection: tell the peer (DISC, or BREAK with the
 * request that failed, and @fault when the peer gets an event), release
 * it, report and flush locally. */
void
emul_ring_teardown(emul_qp_t *qp, emul_work_t *w, x_msg_type_t type, rnicpi_wc_status_t st,
                   uint64_t seq, const x_fault_t *fault, const rnicpi_async_cause_t *local,
                   const void *pdata, uint32_t len)
{
  emul_xconn_t *x = qp->x;
  if (x != NULL) {
    emul_comp_run(qp, NULL, w);  /* what the peer executed completes, not flushed */
    emul_ring_pump(x);  /* answers already due go first, as far as they fit */
    x_msg_t m = { .type = type, .status = st, .seq = seq };
    if (fault != NULL) {
      m.fault = fault->f + 1;
      m.responder = fault->to_responder;
    }
    m.pdata_len = MIN(len, (uint32_t) RNICPI_MAX_PDATA);
    if (m.pdata_len > 0)
      memcpy(m.pdata, pdata, m.pdata_len);
    emul_ring_send_msg(x, &m, NULL, 0, 0);
    g_atomic_int_inc(&x->ref);
    emul_ring_close(x);
  }
  /* The events of the end leave after its message, the affiliated one
   * first: an application that exits on them has told the peer how the
   * connection ended. */
  emul_xconn_t *after = emul_events_after;
  emul_events_after = x;
  if (local != NULL)
    emul_qp_async(qp, *local);
  emul_qp_end(qp, type == X_DISC ? RNICPI_CM_DISCONNECTED : RNICPI_CM_BROKEN, NULL, 0, w);
  emul_events_after = after;
  if (x != NULL)
    emul_ring_conn_unref(x);
}

void
emul_ring_break(emul_qp_t *qp, emul_work_t *w, gboolean orderly, const void *pdata, uint32_t len)
{
  emul_ring_teardown(qp, w, orderly ? X_DISC : X_BREAK, 0, 0, NULL, NULL, pdata, len);
}

void
emul_ring_break_fault(emul_qp_t *qp, emul_work_t *w, emul_fault_t f)
{
  x_fault_t to = { .f = f, .to_responder = TRUE };
  rnicpi_async_cause_t mine = emul_fault_requester(f);
  emul_ring_teardown(qp, w, X_BREAK, 0, 0, &to, &mine, NULL, 0);
}

void
emul_ring_break_local(emul_qp_t *qp, emul_work_t *w, rnicpi_async_cause_t cause)
{
  emul_ring_teardown(qp, w, X_BREAK, 0, 0, NULL, &cause, NULL, 0);
}

void
emul_ring_peer_violation(emul_xconn_t *x, emul_work_t *w, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: process %d (uid %d) sent %s: its connection to process "
        "%d is broken (its work requests flush); a peer that runs this library never does",
        (int) x->peer_pid, (int) x->peer_uid, what, (int) getpid());
  g_free(what);
  emul_ring_peer_break(x, NULL, w);
}

void
emul_ring_timed_out(emul_xconn_t *x, gint64 stalled_us, emul_work_t *w)
{
  emul_qp_t *qp = x->qp;
  g_log(EMUL_LOG, G_LOG_LEVEL_MESSAGE, "emul: process %d (uid %d) took nothing from QP %u's ring "
        "for %" G_GINT64_FORMAT " ms with frames waiting: its connection to process %d is broken "
        "(the oldest work request completes with a transport error, the rest flush); a stopped or "
        "traced peer does this: ITAPI_EMUL_TIMEOUT_MS sets the wait, 0 none",
        (int) x->peer_pid, (int) x->peer_uid, qp->base.qp_num, stalled_us / 1000, (int) getpid());
  emul_comp_run(qp, NULL, w);  /* what the peer executed completes, not flushed */
  /* The oldest request fails, unless its long copy runs with the lock let
   * go: its copier completes it, flushed (flush_all, emul_comp.c). */
  emul_swqe_t *s = qp->xcopying ? NULL : emul_wq_pop(&qp->sq);
  if (s != NULL) {
    emul_complete_send(qp, &s->wr, RNICPI_WC_TRANSPORT_ERR, 0, w);
    emul_swqe_done(qp, s);
  }
  emul_ring_break(qp, w, FALSE, NULL, 0);
}

void
emul_ring_peer_died(emul_xconn_t *x, emul_work_t *w)
{
  if (x->qp != NULL && x->conn == NULL) {
    if (x->qp->x == x)
      emul_ring_answers_settle(x->qp, w);  /* answers it gave before it died */
    emul_ring_peer_break(x, NULL, w);
  } else {
    emul_ring_fail_pending(x, w);
  }
}

/* The peer ended the connection (m: its DISC or BREAK), died (m NULL, EOF)
 * or broke the protocol (m NULL). */
void
emul_ring_peer_break(emul_xconn_t *x, const x_msg_t *m, emul_work_t *w)
{
  if (x->conn != NULL) {
    emul_ring_fail_pending(x, w);
    return;
  }
  emul_qp_t *qp = x->qp;
  if (qp != NULL && qp->x == x)
    emul_comp_run(qp, NULL, w);  /* what the peer executed completes, not flushed */
  emul_ring_close(x);
  if (qp == NULL)
    return;
  gboolean disc = m != NULL && m->type == X_DISC;
  if (m == NULL && qp->state == RNICPI_QPS_RTS)
    emul_qp_async(qp, RNICPI_AE_LLP); /* the peer died, or its ring broke the rules */
  if (m != NULL && m->type == X_BREAK) {
    if (m->fault > 0 && qp->state == RNICPI_QPS_RTS) { /* with its BROKEN below */
      emul_fault_t f = (emul_fault_t) (m->fault - 1);
      emul_qp_async(qp, m->responder ? emul_fault_responder(f) : emul_fault_requester(f));
    }
    emul_swqe_t *s = emul_wq_peek(&qp->sq);
    if (m->status != 0 && s != NULL && s->issued && s->seq == m->seq) {
      /* A responder's refusal is one of two (emul_fault_status); any other
       * word of the peer's is its operation error. */
      rnicpi_wc_status_t st = m->status == RNICPI_WC_REM_ACCESS_ERR ? RNICPI_WC_REM_ACCESS_ERR
                                                                    : RNICPI_WC_REM_OP_ERR;
      emul_wq_pop(&qp->sq);
      emul_complete_send(qp, &s->wr, st, 0, w);
      emul_wq_put(&qp->sq, s);
    }
  }
  emul_qp_end(qp, disc ? RNICPI_CM_DISCONNECTED : RNICPI_CM_BROKEN, disc ? m->pdata : NULL,
              disc ? m->pdata_len : 0, w);
}
