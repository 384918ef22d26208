/*
 * vp/ib shared receive queues: creation, resize and limit, destruction
 * and the count of receives held.  Their shadows are slots (receives
 * complete out of order); receives are posted in ib_post.c
 * (ib_post_srq_recv) and complete in ib_comp.c (ib_srq_complete).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>

#include "ib.h"

static rnicpi_status_t
ib_srq_create(rnicpi_pd_t *p, uint32_t max_wr, uint32_t max_sge, uint64_t al_ctx,
              rnicpi_srq_t **out)
{
  ib_dev_t *dev = to_ib_dev(p->dev);
  if (max_wr == 0 || max_wr > dev->caps.max_qp_wr || max_sge == 0 ||
      max_sge > dev->caps.max_recv_sge)
    return RNICPI_ELIMIT;
  ib_srq_t *srq = g_new0(ib_srq_t, 1);
  struct ibv_srq_init_attr ia = {
    .srq_context = srq,
    .attr = { .max_wr = max_wr, .max_sge = max_sge },
  };
  srq->srq = ibv_create_srq(to_ib_pd(p)->pd, &ia);
  if (srq->srq == NULL) {
    int err = errno;
    g_free(srq);
    return err == EINVAL ? RNICPI_ELIMIT : ib_status_of_errno(err);
  }
  srq->base.pd = p;
  srq->base.al_ctx = al_ctx;
  srq->dev = dev;
  srq->serial = ib_dev_serial(dev);
  srq->max_sge = max_sge;
  srq->nslots = max_wr;
  srq->slot = g_new0(ib_shadow_t, max_wr);
  srq->free = g_new(uint32_t, max_wr);
  for (uint32_t i = 0; i < max_wr; i++) {
    srq->slot[i].done = 1;
    srq->free[i] = max_wr - 1 - i;
  }
  srq->nfree = max_wr;
  *out = &srq->base;
  return RNICPI_OK;
}

static rnicpi_status_t
ib_srq_modify(rnicpi_srq_t *s, uint32_t max_wr, uint32_t limit)
{
  ib_srq_t *srq = to_ib_srq(s);
  struct ibv_srq_attr a = { .max_wr = max_wr, .srq_limit = limit };
  int mask = IBV_SRQ_LIMIT;
  if (max_wr != 0 && max_wr != srq->nslots) {
    if (max_wr < srq->posted)
      return RNICPI_EBUSY; /* it holds more receives than that */
    mask |= IBV_SRQ_MAX_WR;
  }
  int err = ibv_modify_srq(srq->srq, &a, mask);
  if (err != 0)
    return ib_status_of_errno(err);
  if (mask & IBV_SRQ_MAX_WR) {
    rnicpi_spin_lock(&srq->lock);
    if (max_wr > srq->nslots) {
      srq->slot = g_renew(ib_shadow_t, srq->slot, max_wr);
      srq->free = g_renew(uint32_t, srq->free, max_wr);
      for (uint32_t i = srq->nslots; i < max_wr; i++) {
        memset(&srq->slot[i], 0, sizeof(srq->slot[i]));
        srq->slot[i].done = 1;
        srq->free[srq->nfree++] = i;
      }
      srq->nslots = max_wr;
    }
    srq->cap = max_wr;
    rnicpi_spin_unlock(&srq->lock);
  }
  return RNICPI_OK;
}

static rnicpi_status_t
ib_srq_destroy(rnicpi_srq_t *s)
{
  ib_srq_t *srq = to_ib_srq(s);
  int err = ibv_destroy_srq(srq->srq);
  if (err != 0)
    return err == EBUSY ? RNICPI_EBUSY : ib_status_of_errno(err);
  g_free(srq->slot);
  g_free(srq->free);
  g_free(srq);
  return RNICPI_OK;
}

static uint32_t
ib_srq_count(rnicpi_srq_t *s)
{
  ib_srq_t *srq = to_ib_srq(s);
  rnicpi_spin_lock(&srq->lock);
  uint32_t n = srq->posted;
  rnicpi_spin_unlock(&srq->lock);
  return n;
}

/* ---- tables ---------------------------------------------------------------- */

const rnicpi_srq_ops_t ib_srq_ops = {
  .size = sizeof(rnicpi_srq_ops_t),
  .srq_create = ib_srq_create,
  .srq_modify = ib_srq_modify,
  .srq_destroy = ib_srq_destroy,
  .post_srq_recv = ib_post_srq_recv,
  .srq_count = ib_srq_count,
};
