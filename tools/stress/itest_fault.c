/*
 * itapi-test --fault: midway through the run, thread 0 and thread 1 each
 * free one EP of their first pair abruptly (it_ep_free) and check that the
 * peer gets IT_CM_MSG_CONN_BROKEN_EVENT and that every work request still
 * outstanding on either end completes exactly once (the freed EP's
 * completions name its stale handle).  Before the free, one end stops
 * replenishing its receives so the other end's sends wait in its send
 * queue: in thread 0 the victim holds back (the survivor has queued sends
 * and posted receives to flush), in thread 1 the survivor does (the freed
 * EP has them).  The other pairs run on.
 *
 * That is InfiniBand (it_ia_info_t.transport_type IT_IB_TRANSPORT).  Over
 * other transports (iWARP) a send that finds no receive ends the
 * connection, so nobody holds back: the free comes while the sender has
 * sends in flight and the other end receives posted; requests in flight
 * toward the freed EP may then complete with a remote error instead of
 * flushed (still exactly once each), the survivor may get an affiliated
 * EP event, and CM events of the victim queued before its free may be
 * dequeued after it.  An error on any other pair, or before the free, is
 * still an error.
 *
 * SPDX-License-Identifier: MIT
 */
#include "itest.h"

static void
fault_free(itest_thread_t *th, itest_end_t *victim, double now)
{
  itest_end_t *surv = victim->peer;
  th->fault.survivor_outstanding = surv->sq_busy + surv->rq_busy;
  th->fault.victim_outstanding = victim->sq_busy + victim->rq_busy;
  /* Connection events queued so far are taken while the EP still exists. */
  itest_poll_cm(th);
  victim->pair->state = PAIR_FAULT;
  th->fault_ep[0] = victim->pair->end[0].ep;
  th->fault_ep[1] = victim->pair->end[1].ep;
  atomic_store_explicit(&th->fault_injected, true, memory_order_release);
  it_status_t st = it_ep_free(victim->ep);
  if (st != IT_SUCCESS) {
    itest_call_error(th, victim, 0, "it_ep_free (fault injection)", st);
    th->fault_state = FAULT_DONE;
    return;
  }
  victim->freed = true;
  /* What the EVD holds for the victim now was queued before it_ep_free
   * returned (an error of the pair racing the free): tolerated once here;
   * an event for it dequeued later is an error. */
  victim->free_grace = true;
  itest_poll_cm(th);
  victim->free_grace = false;
  th->fault_state = FAULT_FREED;
  th->fault_t = now;
  itest_log(th->cfg, "fault: freed the %s EP of thread %u pair %u with %u of its own and %u of the "
            "peer's work requests outstanding", victim->side ? "passive" : "active", th->id,
            victim->pair->index, th->fault.victim_outstanding, th->fault.survivor_outstanding);
}

/* The end that stops replenishing its receives while the fault is
 * prepared, so the other end's sends pile up in its send queue. */
itest_end_t *
itest_fault_holder(itest_thread_t *th)
{
  itest_end_t *victim = &th->fault_pair->end[th->fault.victim_side];
  return th->fault.victim_holds ? victim : victim->peer;
}

void
itest_fault_step(itest_thread_t *th, double now)
{
  if (!th->fault.enabled)
    return;
  itest_pair_t *p = th->fault_pair;
  switch (th->fault_state) {
  case FAULT_NONE: {
    bool due = th->cfg->duration > 0 ? now - th->t_start >= th->cfg->duration / 2 :
               th->st.issued >= th->quota / 2;
    if (!due || p->state != PAIR_RUNNING)
      return;
    /* Only where a send waits for a receive (RNR retry) may the holder let
     * its receive queue run dry. */
    itest_fault_holder(th)->hold_recv = th->cfg->ib;
    th->fault.triggered = true;
    th->fault_state = FAULT_PREP;
    th->fault_t = now;
    return;
  }
  case FAULT_PREP: {
    /* Free once the sender's requests wait behind the holder's empty
     * receive queue: the free then catches queued sends and receives. */
    itest_end_t *holder = itest_fault_holder(th);
    bool ready = th->cfg->ib ? holder->rq_busy == 0 && holder->peer->sq_busy > 0
                             : holder->rq_busy > 0 && holder->peer->sq_busy > 0;
    if (ready || now - th->fault_t > 0.25 || p->state != PAIR_RUNNING)
      fault_free(th, &p->end[th->fault.victim_side], now);
    return;
  }
  case FAULT_FREED: {
    itest_end_t *victim = &p->end[th->fault.victim_side], *surv = victim->peer;
    if (surv->broken && surv->sq_busy + surv->rq_busy == 0 && victim->sq_busy + victim->rq_busy == 0) {
      th->fault_state = FAULT_DONE;
      th->fault.broken_event = true;
      th->fault.verified = !surv->disconnected && surv->cm_unexpected == 0;
      itest_log(th->cfg, "fault: thread %u: the peer got IT_CM_MSG_CONN_BROKEN_EVENT; %u of its and %u "
                "of the freed EP's requests completed flushed%s, each once", th->id,
                th->fault.survivor_flushed, th->fault.victim_flushed,
                th->fault.error_cmpl ? " or in error" : "");
    }
    return;
  }
  default:
    return;
  }
}

bool
itest_fault_pending(const itest_thread_t *th)
{
  return th->fault.enabled && th->fault_state != FAULT_DONE &&
         th->fault_state != FAULT_NONE;
}

/* Whether an error completion of @e's request is one the fault explains:
 * on the fault pair after the free, flushed on InfiniBand, any error
 * elsewhere (iWARP: requests in flight toward the freed QP may end in a
 * remote error, the peer's Terminate).  Exactly-once is checked apart. */
bool
itest_fault_error_ok(const itest_thread_t *th, const itest_end_t *e)
{
  return !th->cfg->ib && th->fault.enabled && e->pair == th->fault_pair &&
         e->pair->state == PAIR_FAULT;
}
