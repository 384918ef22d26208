/*
 * vp/emul links and the copy accounting: the lock the two QPs of an
 * in-process connection share (emul_link_t), and the one a QP connected
 * to another process or a UD QP has of its own; how a thread takes it
 * and lets it go; the long copies that run with it let go, and the waits
 * for them of what changes a QP or the region table.
 *
 * Long copies.  A payload copy of EMUL_COPY_UNLOCKED bytes or more runs
 * with the link's lock let go (emul_link_copy_begin, emul_link_copy_end),
 * as a NIC moves a message while the host posts more: the checks before
 * it and the completions after it are made under the lock, and the link
 * is marked copying meanwhile.  A copy reached under the fabric lock (a
 * post naming a window, work run after a receiver was not ready) lets that lock
 * go too (link->fcopy, counted in emul_fabric.lcopies) unless a thread
 * waits for such copies to end (emul_fabric.copy_waiters), and takes it back first
 * when done.  A post on either QP that finds the mark, on the fast path
 * or under the fabric lock (emul_link_take_post), queues its request or
 * receive in order (behind the one being copied) and marks the link
 * again; the copier, on its way out, runs the queues under the fabric
 * lock (emul_link_settle, which leaves them while a copy runs).
 * Everything else that takes the link (connection management, a state
 * query) waits for the mark to clear with the fabric lock let go
 * (emul_link_take); a window or fast-registration region entering the
 * table and a fork first wait for every in-process copy that let the
 * fabric lock go (emul_wait_copies, emul_wait_all_copies), then for each
 * link's mark (emul_link_lock_idle), so both QPs stay as they were until
 * the copy is done.  The copy holds the regions it touches by reference
 * (emul_exec.c, copy_begin), put before it takes a lock back: a region
 * leaving the table waits for those (emul_mr_release), not for the
 * process's other copies, so the memory being copied stays registered
 * until the copy is done.
 *
 * SPDX-License-Identifier: MIT
 */
#include "emul.h"

void
emul_link_join(emul_qp_t *a, emul_qp_t *p)
{
  emul_link_t *l = g_aligned_alloc0(1, sizeof(emul_link_t), _Alignof(emul_link_t));
  l->ref = 2;
  l->qp[0] = a;
  l->qp[1] = p;
  g_ptr_array_add(emul_fabric.links, l);
  /* Everything establish wrote is seen by a thread that reads the link
   * (acquire) before it takes its lock. */
  __atomic_store_n(&a->link, l, __ATOMIC_RELEASE);
  __atomic_store_n(&p->link, l, __ATOMIC_RELEASE);
}

void
emul_link_join_ring(emul_qp_t *qp)
{
  emul_link_t *l = g_aligned_alloc0(1, sizeof(emul_link_t), _Alignof(emul_link_t));
  l->ref = 1;
  l->ring = TRUE;
  l->qp[0] = qp;
  g_ptr_array_add(emul_fabric.links, l);
  __atomic_store_n(&qp->link, l, __ATOMIC_RELEASE);
  emul_cq_ring_link(l, TRUE);  /* the busy poll's drain finds it there (emul_ring_poll_cq) */
}

void
emul_link_join_ud(emul_qp_t *qp)
{
  emul_link_t *l = g_aligned_alloc0(1, sizeof(emul_link_t), _Alignof(emul_link_t));
  l->ref = 1;
  l->qp[0] = qp;
  g_ptr_array_add(emul_fabric.links, l);
  __atomic_store_n(&qp->link, l, __ATOMIC_RELEASE);
}

/* @qp leaves its link (reset, destroy; fabric lock and the link's held):
 * it keeps the reference until it is destroyed (emul_link_t). */
void
emul_link_leave(emul_qp_t *qp)
{
  if (qp->link == NULL)
    return;
  if (qp->link->ring)
    emul_cq_ring_link(qp->link, FALSE);
  for (unsigned i = 0; i < G_N_ELEMENTS(qp->link->qp); i++)
    if (qp->link->qp[i] == qp)
      qp->link->qp[i] = NULL;
  qp->old_links = g_slist_prepend(qp->old_links, qp->link);
  __atomic_store_n(&qp->link, NULL, __ATOMIC_RELEASE);
}

void
emul_link_unref(emul_link_t *l)
{
  if (--l->ref == 0) {
    g_ptr_array_remove_fast(emul_fabric.links, l);
    g_aligned_free(l);
  }
}

/* Drop every reference @qp holds (destroy; fabric lock held). */
void
emul_links_release(emul_qp_t *qp)
{
  for (GSList *i = qp->old_links; i != NULL; i = i->next)
    emul_link_unref(i->data);
  g_slist_free(qp->old_links);
  qp->old_links = NULL;
}

void
emul_link_lock(emul_link_t *l)
{
  if (!rnicpi_spin_trylock(&l->lock)) {
    /* Counted while it waits: a busy poll, which only tries the lock
     * again and again, passes the link over meanwhile (x_poll_links), so
     * a thread that holds the fabric lock is not kept waiting here. */
    g_atomic_int_inc(&l->wanted);
    rnicpi_spin_lock(&l->lock);
    g_atomic_int_add(&l->wanted, -1);
  }
}

/* Only where no in-process copy that let the fabric lock go runs
 * (emul_wait_copies; a cross-process copy holds no link and never marks
 * one): the fabric lock, if held, stays held while it waits. */
void
emul_link_lock_idle(emul_link_t *l)
{
  emul_link_lock(l);
  for (unsigned n = 1; G_UNLIKELY(l->copying); n++) {
    rnicpi_spin_unlock(&l->lock);
    rnicpi_spin_backoff(n);
    rnicpi_spin_lock(&l->lock);
  }
}

emul_link_t *
emul_link_take(emul_qp_t *qp)
{
  for (unsigned n = 1;; n++) {
    emul_link_t *l = qp->link;  /* read again: it may change while the fabric lock is let go */
    if (l == NULL)
      return NULL;
    emul_link_lock(l);
    if (G_LIKELY(!l->copying))
      return l;
    rnicpi_spin_unlock(&l->lock);
    emul_fabric_unlock();
    rnicpi_spin_backoff(n);
    emul_lock_data_path();
  }
}

emul_link_t *
emul_link_take_post(emul_qp_t *qp)
{
  emul_link_t *l = qp->link;
  if (l != NULL)
    emul_link_lock(l);
  return l;
}

/* Fabric lock held: let it go for the @n-th time of a wait (backing off
 * the longer, the more), and take it back. */
void
emul_fabric_let_go(unsigned n)
{
  emul_fabric_unlock();
  rnicpi_spin_backoff(n);
  emul_fabric_lock();
}

/* Fabric lock held: let it go and take it back until *@busy is 0.  The
 * waiter is counted in *@waiters (the QP's or the process's copy_waiters)
 * so that no new copy of those it waits for lets the lock go before it
 * had its turn: a thread posting long Writes one after the other would
 * otherwise keep it waiting for ever.  Copies it does not wait for go on
 * letting the lock go. */
static void
copy_wait(const gint *busy, guint *waiters)
{
  if (G_LIKELY(*busy == 0))
    return;
  (*waiters)++;
  for (unsigned n = 1; *busy != 0; n++) {
    emul_fabric_let_go(n);
  }
  (*waiters)--;
}

void
emul_qp_wait_copy(emul_qp_t *qp)
{
  copy_wait(&qp->xcopying, &qp->copy_waiters);
  copy_wait(&qp->rcopying, &qp->copy_waiters);  /* none of the QP's starts while the first lasts */
}

void
emul_wait_copies(void)
{
  copy_wait(&emul_fabric.lcopies, &emul_fabric.copy_waiters);  /* none lets the lock go meanwhile */
}

void
emul_wait_all_copies(void)
{
  /* Both kinds held back for the whole wait: a cross-process copy begun
   * while it waits for an in-process one would still run at the fork. */
  emul_fabric.xcopy_waiters++;
  emul_fabric.copy_waiters++;
  for (unsigned n = 1; emul_fabric.xcopies != 0 || emul_fabric.lcopies != 0; n++) {
    emul_fabric_let_go(n);
  }
  emul_fabric.copy_waiters--;
  emul_fabric.xcopy_waiters--;
}

void
emul_links_lock_all(void)
{
  for (guint i = 0; i < emul_fabric.links->len; i++)
    emul_link_lock_idle(g_ptr_array_index(emul_fabric.links, i));
}

void
emul_links_unlock_all(void)
{
  for (guint i = 0; i < emul_fabric.links->len; i++)
    rnicpi_spin_unlock(&((emul_link_t *) g_ptr_array_index(emul_fabric.links, i))->lock);
}

/* Let @qp's link go for a copy of @len bytes, when it is long (its lock
 * held), and the fabric lock too when this thread holds it and nobody
 * waits for such copies: the link it let go, for emul_link_copy_end, or
 * NULL. */
emul_link_t *
emul_link_copy_begin(emul_qp_t *qp, uint64_t len)
{
  emul_link_t *l = qp->link;
  if (len < EMUL_COPY_UNLOCKED || l == NULL)
    return NULL;
  l->copying = TRUE;
  l->fcopy = emul_fabric_mine && emul_fabric.copy_waiters == 0;
  qp->lcopying = TRUE;
  rnicpi_spin_unlock(&l->lock);
  if (l->fcopy) {
    emul_fabric.lcopies++;
    emul_fabric_unlock();
  }
  return l;
}

/* Take back what emul_link_copy_begin let go for @qp's request: the
 * fabric lock first, as everywhere, then the link's (nobody holds that
 * one for long while it is marked copying). */
void
emul_link_copy_end(emul_qp_t *qp, emul_link_t *l)
{
  if (l == NULL)
    return;
  gboolean fabric = l->fcopy;  /* only the copier writes it while the mark stands */
  if (fabric) {
    emul_lock_data_path();
    emul_fabric.lcopies--;
  }
  rnicpi_spin_lock(&l->lock);
  l->copying = FALSE;
  l->fcopy = FALSE;
  qp->lcopying = FALSE;
}

void
emul_link_settle(emul_link_t *l, emul_work_t *w)
{
  while (l != NULL && G_UNLIKELY(l->again) && !l->copying) {
    l->again = FALSE;
    for (unsigned i = 0; i < G_N_ELEMENTS(l->qp); i++)
      if (l->qp[i] != NULL)
        emul_req_run(l->qp[i], FALSE, w);
  }
}
