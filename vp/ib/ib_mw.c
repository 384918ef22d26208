/*
 * vp/ib memory windows (RNIC-PI 1.2) over verbs windows: a narrow window
 * is an IB type 2 window (IBTA 10.6.7.2.3: it answers only through the
 * queue pair that bound it), a wide one a type 1 window (any queue pair of
 * its protection domain).  Both are bound by send-queue work requests, as
 * RNIC-PI wants: type 2 by IBV_WR_BIND_MW, type 1 by ibv_bind_mw, which
 * libibverbs turns into a bind work request on the same queue.  Their
 * completions go through the queue pair's shadows like any other.
 *
 * What verbs does not give and the adapter adds (doc/provider-ib.md):
 *   - a type 1 window cannot be invalidated by a Local Invalidate (IBTA
 *     o10-37.2.26): its invalidation is a bind of length 0, which kills
 *     its key just as well;
 *   - a type 2 window must be free to be bound (IBTA o10-37.2.30):
 *     rebinding a bound one posts a Local Invalidate of its old key first;
 *   - the kernel's rxe (6.1) oopses on a Local Invalidate of a type 2
 *     window that is not bound (rxe_do_invalidate_mw puts a NULL queue
 *     pair), so the adapter tracks each window's state and never gives the
 *     device an invalidation it has not checked: a request that breaks a
 *     rule (a key no bound window of the queue pair's domain has, a narrow
 *     window bound through another queue pair) is posted as an
 *     invalidation of key 0, which names no object and fails on the
 *     device in queue order, as the rule's violation must;
 *   - a type 2 window the device bound holds its queue pair, which rxe
 *     then cannot destroy: a queue pair about to be destroyed frees the
 *     windows last bound through it first (ib_mw_qp_gone);
 *   - a bind that breaks a rule the device does not check (domains, the
 *     region's own rights, a range whose end wraps past zero) is posted
 *     with a range the region does not hold, so that the device fails it
 *     in order (IBV_WC_MW_BIND_ERR).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>

#include "ib.h"

#define MW_RIGHTS (RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_ATOMIC)

uint64_t
ib_mw_caps(const struct ibv_device_attr_ex *ax)
{
  const struct ibv_device_attr *a = &ax->orig_attr;
  uint64_t f = 0;
  if (a->max_mw <= 0)
    return 0;
  /* A type 2 window is freed by a Local Invalidate: it needs the memory
   * management extensions too. */
  if ((a->device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) &&
      (a->device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS))
    f |= RNICPI_CAP_MW_NARROW;
  if (a->device_cap_flags & IBV_DEVICE_MEM_WINDOW)
    f |= RNICPI_CAP_MW_WIDE;
  if (f != 0)
    f |= RNICPI_CAP_LOCAL_INVALIDATE;
  return f;
}

/* A window's key changes: the table follows (dev->mw_lock held). */
static void
mw_rekey_locked(ib_dev_t *dev, ib_mw_t *mw, uint32_t key)
{
  if (g_hash_table_lookup(dev->mws, GUINT_TO_POINTER(mw->key)) == mw)
    g_hash_table_remove(dev->mws, GUINT_TO_POINTER(mw->key));
  mw->key = key;
  g_hash_table_insert(dev->mws, GUINT_TO_POINTER(key), mw);
}

static rnicpi_status_t
ib_mw_alloc(rnicpi_pd_t *p, rnicpi_mw_type_t type, rnicpi_mw_t **out)
{
  ib_dev_t *dev = to_ib_dev(p->dev);
  uint64_t need = type == RNICPI_MW_NARROW ? RNICPI_CAP_MW_NARROW :
                  type == RNICPI_MW_WIDE ? RNICPI_CAP_MW_WIDE : 0;
  if (need == 0)
    return RNICPI_EINVAL;
  if (!(dev->caps.features & need))
    return RNICPI_ENOTSUP;
  struct ibv_mw *vmw = ibv_alloc_mw(to_ib_pd(p)->pd,
                                    type == RNICPI_MW_NARROW ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
  if (vmw == NULL) {
    int err = errno;
    return err == ENOMEM ? RNICPI_ELIMIT : ib_status_of_errno(err);
  }
  ib_mw_t *mw = g_new0(ib_mw_t, 1);
  mw->base.pd = p;
  mw->base.type = type;
  mw->base.rkey = 0; /* no bind posted yet */
  mw->mw = vmw;
  rnicpi_spin_lock(&dev->mw_lock);
  mw->key = vmw->rkey;
  g_hash_table_insert(dev->mws, GUINT_TO_POINTER(mw->key), mw);
  rnicpi_spin_unlock(&dev->mw_lock);
  *out = &mw->base;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_mw_dealloc(rnicpi_mw_t *m)
{
  ib_mw_t *mw = to_ib_mw(m);
  ib_dev_t *dev = to_ib_dev(m->pd->dev);
  rnicpi_spin_lock(&dev->mw_lock);
  if (mw->queued > 0) {
    rnicpi_spin_unlock(&dev->mw_lock);
    return RNICPI_EBUSY;
  }
  if (g_hash_table_lookup(dev->mws, GUINT_TO_POINTER(mw->key)) == mw)
    g_hash_table_remove(dev->mws, GUINT_TO_POINTER(mw->key));
  rnicpi_spin_unlock(&dev->mw_lock);
  /* The device unbinds a bound window as it frees it (its region is free
   * of it after). */
  int err = ibv_dealloc_mw(mw->mw);
  if (err != 0)
    g_warning("%s: ibv_dealloc_mw(key 0x%x) failed: %s; its kernel object stays until the IA is "
              "freed", dev->name, mw->key, g_strerror(err));
  g_free(mw);
  return RNICPI_OK;
}

/* Post a bind (dev->mw_lock and the queue's lock held); 0 or an errno. */
static int
post_bind(ib_qp_t *qp, const rnicpi_send_wr_t *wr, struct ibv_send_wr *v, ib_shadow_t *s)
{
  ib_dev_t *dev = qp->dev;
  ib_mw_t *mw = to_ib_mw(wr->bind.mw);
  ib_mr_t *mr = to_ib_mr(wr->bind.mr);
  gboolean narrow = mw->base.type == RNICPI_MW_NARROW;
  /* IBTA 10.6.7.2.2 and rnicpi.h's rules the device may not check itself. */
  gboolean legal = mw->base.pd == qp->base.pd && mr->base.pd == qp->base.pd &&
                   (mr->access & RNICPI_ACCESS_MW_BIND) && (wr->bind.access & ~MW_RIGHTS) == 0 &&
                   (wr->bind.access & ~mr->access) == 0 && wr->bind.length > 0;
  /* A range whose end wraps past zero: rxe 6.1 checks the end as addr +
   * length against the region's end (rxe_check_bind_mw), a sum that wraps
   * below it, and binds such a window. */
  if (wr->bind.length > UINT64_MAX - wr->bind.addr)
    legal = FALSE;
  /* rxe (and IBTA o10-36.2.2) have no zero-based type 1 window. */
  if (!narrow && wr->bind.zero_based)
    legal = FALSE;
  struct ibv_mw_bind_info bi = {
    .mr = mr->mr,
    .addr = wr->bind.addr,
    .length = wr->bind.length,
    .mw_access_flags = (unsigned) ib_access_to_verbs(wr->bind.access & MW_RIGHTS) &
                       ~(unsigned) IBV_ACCESS_LOCAL_WRITE,
  };
  if (wr->bind.zero_based && narrow)
    bi.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
  /* A region the window's domain does not hold is refused at once by
   * rdma-core's ibv_bind_mw (rxe, mlx5): a stand-in of the window's
   * domain whose key (0) names no region is refused by the device. */
  struct ibv_mr none = { .context = mw->mw->context, .pd = mw->mw->pd };
  if (!legal) {
    /* One byte past the region: refused by the device, in order. */
    bi.addr = mr->iova + mr->length;
    bi.length = 1;
    bi.mw_access_flags = IBV_ACCESS_REMOTE_READ;
    if (mr->base.pd != mw->base.pd) {
      bi.mr = &none;
      bi.addr = 0;
    }
  }
  int err;
  uint32_t key;
  if (narrow) {
    key = ibv_inc_rkey(mw->key);
    v->opcode = IBV_WR_BIND_MW;
    v->bind_mw.mw = mw->mw;
    v->bind_mw.rkey = key;
    v->bind_mw.bind_info = bi;
    struct ibv_send_wr inv, *first = v, *bad = NULL;
    if (mw->bound && legal) {
      /* IBTA o10-37.2.30: only a free type 2 window binds.  Unsignaled:
       * it completes only in error, under the bind's shadow. */
      memset(&inv, 0, sizeof(inv));
      inv.wr_id = v->wr_id;
      inv.opcode = IBV_WR_LOCAL_INV;
      inv.invalidate_rkey = mw->key;
      inv.next = v;
      first = &inv;
    }
    err = ibv_post_send(qp->qp, first, &bad);
    if (err != 0 && bad == v)
      mw->bound = FALSE; /* the invalidation went */
    /* The next bind names the window by this key (the device checks it);
     * only ibv_bind_mw updates it by itself. */
    if (err == 0)
      mw->mw->rkey = key;
  } else {
    struct ibv_mw_bind mb = { .wr_id = v->wr_id, .send_flags = v->send_flags, .bind_info = bi };
    err = ibv_bind_mw(qp->qp, mw->mw, &mb);
    key = mw->mw->rkey; /* ibv_bind_mw wrote the new key */
  }
  if (err != 0)
    return err;
  mw->prev_key = mw->key;
  mw_rekey_locked(dev, mw, key);
  mw->bound = legal;
  if (narrow) {
    mw->prev_bind_qp = mw->bind_qp;
    mw->bind_qp = qp;
  }
  mw->queued++;
  mw->base.rkey = key;
  s->rkey = key;
  s->mw = mw;
  return 0;
}

/* Post an invalidation of wr->invalidate_rkey (locks as post_bind). */
static int
post_invalidate(ib_qp_t *qp, const rnicpi_send_wr_t *wr, struct ibv_send_wr *v, ib_shadow_t *s)
{
  ib_dev_t *dev = qp->dev;
  uint32_t key = (uint32_t) wr->invalidate_rkey;
  ib_mw_t *mw = g_hash_table_lookup(dev->mws, GUINT_TO_POINTER(key));
  gboolean legal = mw != NULL && mw->bound && mw->base.pd == qp->base.pd &&
                   wr->invalidate_rkey <= UINT32_MAX;
  int err;
  s->rkey = wr->invalidate_rkey;
  if (legal && mw->base.type == RNICPI_MW_WIDE) {
    /* IBTA o10-37.2.26: a type 1 window is unbound by a bind of length 0.
     * No region takes part, but rdma-core's providers read bind_info.mr
     * whatever the length (rxe's convert_send_wr takes its lkey, and its
     * rxe_bind_mw its pd): a NULL one crashes the process.  A stand-in of
     * the window's domain, key 0, is read and ignored. */
    struct ibv_mr none = { .context = mw->mw->context, .pd = mw->mw->pd };
    struct ibv_mw_bind mb = { .wr_id = v->wr_id, .send_flags = v->send_flags,
                              .bind_info = { .mr = &none } };
    if ((err = ibv_bind_mw(qp->qp, mw->mw, &mb)) != 0)
      return err;
    mw_rekey_locked(dev, mw, mw->mw->rkey);
  } else {
    struct ibv_send_wr *bad = NULL;
    v->opcode = IBV_WR_LOCAL_INV;
    /* Key 0 names no region and no window: the device fails it in order. */
    v->invalidate_rkey = legal ? key : 0;
    if ((err = ibv_post_send(qp->qp, v, &bad)) != 0)
      return err;
    if (!legal)
      return 0;
  }
  mw->bound = FALSE;
  mw->queued++;
  s->mw = mw;
  return 0;
}

int
ib_mw_post(ib_qp_t *qp, const rnicpi_send_wr_t *wr, struct ibv_send_wr *v, ib_shadow_t *s)
{
  ib_dev_t *dev = qp->dev;
  rnicpi_spin_lock(&dev->mw_lock);
  int err = wr->opcode == RNICPI_WR_BIND_MW ? post_bind(qp, wr, v, s) : post_invalidate(qp, wr, v, s);
  rnicpi_spin_unlock(&dev->mw_lock);
  return err;
}

rnicpi_status_t
ib_mw_check(ib_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  uint64_t f = qp->dev->caps.features;
  if (qp->type != RNICPI_QPT_RC)
    return RNICPI_EINVAL;
  if (wr->opcode == RNICPI_WR_LOCAL_INV)
    return (f & RNICPI_CAP_LOCAL_INVALIDATE) ? RNICPI_OK : RNICPI_ENOTSUP;
  if (!(f & (RNICPI_CAP_MW_NARROW | RNICPI_CAP_MW_WIDE)))
    return RNICPI_ENOTSUP;
  if (wr->bind.mw == NULL || wr->bind.mr == NULL || wr->num_sge != 0)
    return RNICPI_EINVAL;
  return RNICPI_OK;
}

/* A bind or invalidation completed, or was completed for the device
 * (@st its status): the window may go. */
void
ib_mw_retire(ib_dev_t *dev, ib_shadow_t *s, rnicpi_wc_status_t st)
{
  ib_mw_t *mw = s->mw;
  if (mw == NULL)
    return;
  rnicpi_spin_lock(&dev->mw_lock);
  /* A bind that did not execute left the window as it was: free, as far
   * as the device goes, for a type 2 window (its invalidation, if any,
   * went first). */
  if (st != RNICPI_WC_SUCCESS && s->opcode == RNICPI_WC_BIND_MW && mw->key == s->rkey) {
    mw->bound = FALSE;
    /* The device kept the key it had: the next bind must name that one. */
    if (mw->base.type == RNICPI_MW_NARROW) {
      mw->mw->rkey = mw->prev_key;
      mw_rekey_locked(dev, mw, mw->prev_key);
      mw->bind_qp = mw->prev_bind_qp;  /* whatever still holds it there holds it */
    }
  }
  mw->queued--;
  rnicpi_spin_unlock(&dev->mw_lock);
  s->mw = NULL;
}

/* The peer invalidated @key (a Send with Invalidate arrived): a window
 * with it is no longer bound. */
void
ib_mw_invalidated(ib_dev_t *dev, uint32_t key)
{
  rnicpi_spin_lock(&dev->mw_lock);
  ib_mw_t *mw = g_hash_table_lookup(dev->mws, GUINT_TO_POINTER(key));
  if (mw != NULL)
    mw->bound = FALSE;
  rnicpi_spin_unlock(&dev->mw_lock);
}

/* A type 2 window the device bound holds the queue pair it was bound
 * through until it is invalidated: the kernel's rxe (6.1) then waits for
 * it as the queue pair is destroyed, warns, and fails the destroy, which
 * leaves the queue pair behind (and each such destroy costs most of a
 * second).  An invalidation posted before the end does not help: it may
 * have been flushed rather than executed.  So a narrow window last bound
 * through @qp is given a fresh verbs window, and the old one, freed, lets
 * the queue pair go; the window is free after, as a window of a queue
 * pair that is gone must be, and its next bind names the fresh one's key.
 * A window with a request still queued, or bound again through another
 * queue pair while the fresh one was allocated, is left as it is; one
 * being deallocated meanwhile is held off (RNICPI_EBUSY) while its verbs
 * window is replaced. */
void
ib_mw_qp_gone(ib_qp_t *qp)
{
  ib_dev_t *dev = qp->dev;
  GPtrArray *mine = g_ptr_array_new();
  rnicpi_spin_lock(&dev->mw_lock);
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, dev->mws);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    ib_mw_t *mw = v;
    if (mw->prev_bind_qp == qp)
      mw->prev_bind_qp = NULL;  /* the pointer dies with @qp */
    if (mw->bind_qp != qp)
      continue;
    mw->bind_qp = NULL;
    if (mw->queued == 0) {
      mw->queued++;  /* held: ib_mw_dealloc waits for it (RNICPI_EBUSY) */
      g_ptr_array_add(mine, mw);
    }
  }
  rnicpi_spin_unlock(&dev->mw_lock);
  for (guint i = 0; i < mine->len; i++) {
    ib_mw_t *mw = g_ptr_array_index(mine, i);
    struct ibv_mw *fresh = ibv_alloc_mw(to_ib_pd(mw->base.pd)->pd, IBV_MW_TYPE_2), *old = NULL;
    if (fresh == NULL)
      g_message("%s: cannot allocate a verbs window to free window 0x%x of QP %u with (%s): the "
                "device may refuse to destroy the queue pair", dev->name, mw->key, qp->base.qp_num,
                g_strerror(errno));
    rnicpi_spin_lock(&dev->mw_lock);
    if (fresh != NULL && (mw->queued != 1 || mw->bind_qp != NULL)) {
      /* Bound again meanwhile (through another queue pair): that bind
       * names the old verbs window, which stays. */
      old = fresh;
    } else if (fresh != NULL) {
      old = mw->mw;
      mw->mw = fresh;
      mw->prev_key = fresh->rkey;
      mw_rekey_locked(dev, mw, fresh->rkey);
      mw->bound = FALSE;
    }
    mw->queued--;
    rnicpi_spin_unlock(&dev->mw_lock);
    int err = old != NULL ? ibv_dealloc_mw(old) : 0;
    if (err != 0)
      g_warning("%s: ibv_dealloc_mw(key 0x%x) failed: %s; its kernel object stays until the IA is "
                "freed", dev->name, old->rkey, g_strerror(err));
  }
  g_ptr_array_free(mine, TRUE);
}

const rnicpi_mw_ops_t ib_mw_ops = {
  .size = sizeof(rnicpi_mw_ops_t),
  .mw_alloc = ib_mw_alloc,
  .mw_dealloc = ib_mw_dealloc,
};
