/*
 * vp/ib: siw's poisoned mmap offset.
 *
 * siw hands each user queue (a CQ, a QP's send and receive queues, an
 * SRQ) to libsiw as an mmap key: the page offset rdma_user_mmap_entry_
 * insert() found for it in the context's mmap space, the lowest free range
 * of its pages, shifted by PAGE_SHIFT (siw_mmap_entry_insert(),
 * siw_verbs.c).  The keys are unbounded, but the ABI kept the constant
 * SIW_INVAL_UOBJ_KEY (SIW_UOBJ_MAX_KEY + 1 = 0x90000, siw-abi.h) from the
 * time keys were small counters, and libsiw refuses any object whose key
 * equals it (siw_create_cq/qp/srq() in rdma-core's providers/siw/siw.c):
 * with 4 KiB pages, whatever range starts at page 144 of the context.  The
 * object the kernel just created is destroyed again and ibv_create_* fails
 * with errno untouched.  In one process with vp/ib's 16384-entry CQs
 * (129 pages) the eighth queue pair got that page: the catalog's
 * scale/pairs tests, and now and then ia/handle/reuse, were refused a
 * queue pair.
 *
 * First fit means the page stays poisoned while free: every later object
 * that reaches it fails the same way.  So at the first open of a siw
 * context in the process (its mmap space still empty) the adapter covers
 * the page with a range that starts below it: fillers up to the page
 * before, a CQ of two pages over it (kept while the context is open, 4
 * KiB of the kernel's memory), then the fillers go.
 *
 * SPDX-License-Identifier: MIT
 */
#include <unistd.h>

#include "ib.h"

#define SIW_VENDOR_ID 0x626d74u /* 'bmt', siw_verbs.c */
#define SIW_POISONED_KEY 0x90000u /* SIW_INVAL_UOBJ_KEY */
#define SIW_CQE_SIZE 32u /* struct siw_cqe */
#define SIW_CQ_CTRL_SIZE 8u /* struct siw_cq_ctrl, after the CQEs */

typedef struct {
  struct ibv_context *ctx;
  struct ibv_cq *plug;
  unsigned refs;
} plug_t;

static GMutex plugs_lock;
static GPtrArray *plugs; /* plug_t */

/* Pages of the mapping of a siw CQ of @n entries (a power of two). */
static uint32_t
cq_pages(uint32_t n, uint32_t page)
{
  return (n * SIW_CQE_SIZE + SIW_CQ_CTRL_SIZE + page - 1) / page;
}

/* The largest power-of-two CQ whose mapping takes at most @pages pages;
 * 0 if none (a CQ of one entry takes one page). */
static uint32_t
cq_fitting(uint32_t pages, uint32_t page)
{
  uint32_t best = 0;
  for (uint32_t n = 1; n <= (1u << 20) && cq_pages(n, page) <= pages; n <<= 1)
    best = n;
  return best;
}

/* Cover the poisoned page of @ctx's empty mmap space; the plug, or NULL
 * when the layout is not the one expected (nothing is left behind). */
static struct ibv_cq *
plug_create(struct ibv_context *ctx, const char *name)
{
  uint32_t page = (uint32_t) sysconf(_SC_PAGESIZE);
  if (page == 0 || SIW_POISONED_KEY % page != 0)
    return NULL;
  uint32_t target = SIW_POISONED_KEY / page;
  uint32_t plug_n = 1;
  while (cq_pages(plug_n, page) < 2)
    plug_n <<= 1;
  /* Fill pages [0, target + 1 - plug's pages), then the plug starts
   * there and ends past the target. */
  uint32_t fill_to = target + 1 - cq_pages(plug_n, page);
  GPtrArray *fill = g_ptr_array_new();
  struct ibv_cq *plug = NULL;
  uint32_t at = 0;
  gboolean ok = TRUE;
  while (ok && at < fill_to) {
    uint32_t n = cq_fitting(fill_to - at, page);
    struct ibv_cq *f = n > 0 ? ibv_create_cq(ctx, (int) n, NULL, NULL, 0) : NULL;
    /* siw rounds the depth up to a power of two: what it took tells. */
    if (f == NULL || (uint32_t) f->cqe != n) {
      if (f != NULL)
        ibv_destroy_cq(f);
      ok = FALSE;
      break;
    }
    g_ptr_array_add(fill, f);
    at += cq_pages(n, page);
  }
  if (ok) {
    plug = ibv_create_cq(ctx, (int) plug_n, NULL, NULL, 0);
    if (plug == NULL)
      ok = FALSE;
  }
  for (guint i = 0; i < fill->len; i++)
    ibv_destroy_cq(g_ptr_array_index(fill, i));
  g_ptr_array_free(fill, TRUE);
  if (!ok)
    g_debug("%s: could not cover siw's poisoned mmap offset 0x%x (the context was not empty?); "
            "an object whose queue lands there is refused by libsiw", name, SIW_POISONED_KEY);
  return plug;
}

void
ib_quirk_open(struct ibv_context *ctx, uint32_t vendor_id, const char *name)
{
  if (vendor_id != SIW_VENDOR_ID || ctx->device->transport_type != IBV_TRANSPORT_IWARP)
    return;
  g_mutex_lock(&plugs_lock);
  if (plugs == NULL)
    plugs = g_ptr_array_new();
  for (guint i = 0; i < plugs->len; i++) {
    plug_t *p = g_ptr_array_index(plugs, i);
    if (p->ctx == ctx) {
      p->refs++;
      g_mutex_unlock(&plugs_lock);
      return;
    }
  }
  plug_t *p = g_new0(plug_t, 1);
  p->ctx = ctx;
  p->refs = 1;
  p->plug = plug_create(ctx, name);
  g_ptr_array_add(plugs, p);
  g_mutex_unlock(&plugs_lock);
}

void
ib_quirk_close(struct ibv_context *ctx)
{
  g_mutex_lock(&plugs_lock);
  for (guint i = 0; plugs != NULL && i < plugs->len; i++) {
    plug_t *p = g_ptr_array_index(plugs, i);
    if (p->ctx != ctx)
      continue;
    if (--p->refs == 0) {
      if (p->plug != NULL)
        ibv_destroy_cq(p->plug);
      g_ptr_array_remove_index_fast(plugs, i);
      g_free(p);
    }
    break;
  }
  g_mutex_unlock(&plugs_lock);
}
