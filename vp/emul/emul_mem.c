/*
 * vp/emul memory regions.
 *
 * A key is 64 bits: the low 32 bits index the fabric's region table, the
 * high 32 bits are drawn from the OS's random source at each registration,
 * so a peer cannot guess a live key from a stale one or from its index.
 * Every change is mirrored into the table this process exports to the
 * processes it is connected to (emul_x_mr_sync, emul_xport.c).
 *
 * SPDX-License-Identifier: MIT
 */
#include <sys/random.h>

#include "emul.h"

static uint32_t
emul_random_key(void)
{
  uint32_t k = 0;
  while (k == 0)
    if (getrandom(&k, sizeof(k), 0) != (ssize_t) sizeof(k))
      k = g_random_int(); /* getrandom cannot fail on a sane kernel */
  return k;
}

emul_mr_t *
emul_mr_lookup(uint64_t key)
{
  uint32_t idx = (uint32_t) key;
  if (idx == 0 || idx >= emul_fabric.mrs->len)
    return NULL;
  emul_mr_t *mr = g_ptr_array_index(emul_fabric.mrs, idx);
  if (mr == NULL || mr->key != (uint32_t) (key >> 32))
    return NULL;
  return mr;
}

static rnicpi_status_t
emul_mr_reg(rnicpi_pd_t *p, const rnicpi_mr_attr_t *attr, rnicpi_mr_t **out)
{
  if (attr->addr == NULL || attr->length == 0)
    return RNICPI_EINVAL;
  if (attr->length > to_emul_dev(p->dev)->caps.max_mr_size)
    return RNICPI_ELIMIT;
  emul_mr_t *mr = g_new0(emul_mr_t, 1);
  mr->base.pd = p;
  mr->pd = to_emul_pd(p);
  mr->addr = attr->addr;
  mr->length = attr->length;
  mr->iova = attr->iova;
  mr->access = attr->access;
  mr->key = emul_random_key();

  g_mutex_lock(&emul_fabric.lock);
  if (emul_fabric.free_mr->len > 0) {
    mr->index = g_array_index(emul_fabric.free_mr, uint32_t, emul_fabric.free_mr->len - 1);
    g_array_set_size(emul_fabric.free_mr, emul_fabric.free_mr->len - 1);
    g_ptr_array_index(emul_fabric.mrs, mr->index) = mr;
  } else {
    mr->index = emul_fabric.mrs->len;
    g_ptr_array_add(emul_fabric.mrs, mr);
  }
  emul_x_mr_sync(mr->index);
  g_mutex_unlock(&emul_fabric.lock);

  mr->base.lkey = mr->base.rkey = ((uint64_t) mr->key << 32) | mr->index;
  g_atomic_int_inc(&mr->pd->nobj);
  *out = &mr->base;
  return RNICPI_OK;
}

static rnicpi_status_t
emul_mr_modify(rnicpi_mr_t *m, uint32_t access)
{
  g_mutex_lock(&emul_fabric.lock);
  to_emul_mr(m)->access = access;
  emul_x_mr_sync(to_emul_mr(m)->index);
  g_mutex_unlock(&emul_fabric.lock);
  return RNICPI_OK;
}

static rnicpi_status_t
emul_mr_dereg(rnicpi_mr_t *m)
{
  emul_mr_t *mr = to_emul_mr(m);
  g_mutex_lock(&emul_fabric.lock);
  g_ptr_array_index(emul_fabric.mrs, mr->index) = NULL;
  g_array_append_val(emul_fabric.free_mr, mr->index);
  emul_x_mr_sync(mr->index);
  g_mutex_unlock(&emul_fabric.lock);
  g_atomic_int_dec_and_test(&mr->pd->nobj);
  g_free(mr);
  return RNICPI_OK;
}

const rnicpi_mem_ops_t emul_mem_ops = {
  .size = sizeof(rnicpi_mem_ops_t),
  .mr_reg = emul_mr_reg,
  .mr_modify = emul_mr_modify,
  .mr_dereg = emul_mr_dereg,
};
