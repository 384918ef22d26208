/*
 * vp/emul memory regions.
 *
 * A key is an index into the fabric's region table and a tag, both
 * personalities' keys 32 bits wide (emul_dev.c, EMUL_KEY_LAYOUT): a 24-bit
 * index above an 8-bit tag, equal in lkey and rkey as on rxe and every
 * iWARP RNIC (RDMAC verbs 7.2).  Key 0 never names a region (index 0 is
 * never used).  A slot's first tag is drawn from the OS's random source;
 * each later key of the slot (a registration reusing it, a bind, a fast
 * registration) takes the last tag plus the slot's stride, modulo the 255
 * tags: 1 on iWARP, as consumers of iWARP RNICs bump the key byte; on
 * InfiniBand a stride drawn at random for the slot, prime to 255.  Either
 * way a slot goes through all 255 tags before one comes back, so a stale
 * key stays refused for the next 254 keys of its slot, and on InfiniBand a
 * peer that kept one stale key cannot tell the live one from it, nor a
 * fresh slot's from its index.
 * Every change is mirrored into the table this process exports to the
 * processes it is connected to (emul_ring_mr_sync, emul_export.c).
 *
 * Fast registration (RNIC-PI 1.4): mr_alloc takes a slot for an invalid
 * region; a FAST_REG work request binds it to memory with rights and a
 * new tag (drawn at post, as a window's bind), a Local Invalidate of its
 * key (or a Read with Invalidate, or a peer's Send with Invalidate) makes
 * it invalid again: no rights and no length, so its last key is refused
 * until the next FAST_REG gives a fresh one.  Posted in-process only.
 *
 * Memory for buffers (RNIC-PI 1.10, itx_mem_alloc): what emul reaches
 * fastest across processes is a region its peer can map and move by
 * memcpy (emul_mapped.c), so mem_alloc makes exactly what the exporter
 * there recognizes: a MAP_SHARED mapping of a memfd created with
 * MFD_ALLOW_SEALING, sealed against shrinking (so the peer's mapping can
 * never fault), its descriptor kept open here until mem_free.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "emul.h"
#include "emul_ring.h"

/* Random key bits: drawn from getrandom 64 words at a time into a pool of
 * the thread's, which a registration, a window's allocation, a bind or
 * fast registration's post and a connect's dial fill up before they take
 * the fabric lock (emul_random_ready): no system call under it but once in
 * 64 keys of a chain of binds. */
#define RND_POOL 64
static __thread uint32_t rnd_pool[RND_POOL];
static __thread guint rnd_left;

static void
rnd_fill(void)
{
  if (getrandom(rnd_pool, sizeof(rnd_pool), 0) != (ssize_t) sizeof(rnd_pool)) {
    for (guint i = 0; i < RND_POOL; i++)
      rnd_pool[i] = g_random_int(); /* getrandom cannot fail on a sane kernel */
  }
  rnd_left = RND_POOL;
}

void
emul_random_forget(void)
{
  rnd_left = 0;
}

void
emul_random_ready(void)
{
  if (rnd_left < 8)
    rnd_fill();
}

uint32_t
emul_random_u32(void)
{
  if (rnd_left == 0)
    rnd_fill();
  return rnd_pool[--rnd_left];
}

static uint32_t
emul_random_key(const emul_pers_t *p)
{
  uint32_t k = 0;
  while (k == 0)
    k = emul_random_u32() & p->tag_mask;
  return k;
}

/* Take a slot of the table for @mr (windows too); FALSE when full.  The
 * slot stays empty until emul_mr_slot_set publishes the entry whole. */
gboolean
emul_slot_alloc(emul_mr_t *mr, const emul_pers_t *p)
{
  if (emul_fabric.mr_cap == 0)
    return FALSE;  /* no table (emul_fabric_do_init) */
  uint64_t max_index = MIN((uint64_t) p->index_mask, (uint64_t) emul_fabric.mr_cap - 1);
  GArray *fr = emul_fabric.free_mr;
  if (fr->len > 0 && g_array_index(fr, uint32_t, fr->len - 1) <= max_index) {
    mr->index = g_array_index(fr, uint32_t, fr->len - 1);
    g_array_set_size(fr, fr->len - 1);
  } else if (emul_fabric.mr_len <= max_index) {
    mr->index = emul_fabric.mr_len++;
  } else {
    return FALSE;
  }
  return TRUE;
}

void
emul_mr_slot_set(uint32_t idx, emul_mr_t *mr)
{
  __atomic_store_n(&emul_fabric.mr_tab[idx], mr, __ATOMIC_RELEASE);
}

/* The count goes up, then every link is taken and released, then the
 * entry is published: a fast path that took its link's lock before sees
 * no such entry (the publication waits for its release), one that took it
 * after sees the count, looks at each key it reads and leaves a request
 * naming such an entry to the fabric lock (emul_key_fixed). */
void
emul_mr_mutable_enter(void)
{
  g_atomic_int_inc(&emul_fabric.nmutable);
  emul_links_quiesce();
}

/* The fast path reads a key's entry only while it holds its link's lock,
 * and copies with the lock let go while the link is marked copying: once
 * each link was taken idle and released, no fast path and no long copy
 * that began before still runs (a window or fast-registration region
 * entering the table, a UD QP leaving its table). */
void
emul_links_quiesce(void)
{
  emul_wait_copies();  /* the rest wait with the fabric lock held (emul_link_lock_idle) */
  for (guint i = 0; i < emul_fabric.links->len; i++) {
    emul_link_t *l = g_ptr_array_index(emul_fabric.links, i);
    emul_link_lock_idle(l);
    rnicpi_spin_unlock(&l->lock);
  }
}

void
emul_mr_release(emul_mr_t *mr)
{
  if (g_atomic_int_dec_and_test(&mr->ref))
    return;
  for (unsigned n = 1; g_atomic_int_get(&mr->ref) != 0; n++)
    emul_fabric_let_go(n);
}

/* Hold the region behind entry @key names: a region's own, a window's
 * bound parent (whose windows keep it in the table: dereg is EBUSY). */
gboolean
emul_hold_key(emul_hold_t *h, const emul_pers_t *p, uint64_t key)
{
  emul_mr_t *mr = emul_mr_lookup(p, key);
  if (mr != NULL && mr->mw != NULL)
    mr = mr->mw->parent;
  if (mr == NULL || h->n == EMUL_HOLD_MAX)
    return FALSE;
  emul_mr_get(mr);
  h->mr[h->n++] = mr;
  return TRUE;
}

gboolean
emul_hold_sges(emul_hold_t *h, const emul_pers_t *p, const rnicpi_sge_t *s, uint32_t n)
{
  for (uint32_t i = 0; i < n; i++)
    if (s[i].length > 0 && !emul_hold_key(h, p, s[i].lkey))
      return FALSE;
  return TRUE;
}

void
emul_hold_drop(emul_hold_t *h)
{
  for (guint i = 0; i < h->n; i++)
    emul_mr_put(h->mr[i]);
  h->n = 0;
}

/* A fast path looks a key up only under its link's lock, and a long
 * copy, in-process or cross-process, holds its regions by reference: once
 * each link was taken and released after an entry left the table, no
 * fast path looks at it any more, and every copy that uses it holds a
 * reference (emul_mr_release waits for those). */
void
emul_links_pass(void)
{
  for (guint i = 0; i < emul_fabric.links->len; i++) {
    emul_link_t *l = g_ptr_array_index(emul_fabric.links, i);
    emul_link_lock(l);
    rnicpi_spin_unlock(&l->lock);
  }
}

static uint32_t
gcd32(uint32_t a, uint32_t b)
{
  while (b != 0) {
    uint32_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/* A stride for a slot's tags under @p: prime to the number of tags, so
 * that stepping by it visits every tag before one comes back. */
static uint32_t
slot_stride(const emul_pers_t *p)
{
  uint32_t n = p->tag_mask;
  if (!p->tag_step_random || n < 3)
    return 1;
  uint32_t s;
  do
    s = emul_random_u32() % (n - 1) + 1;
  while (gcd32(s, n) != 1);
  return s;
}

/* A fresh tag for slot @index (never 0): a random one for the slot's
 * first key, else the last plus the slot's stride (the head of this
 * file); remembered as the slot's last. */
uint32_t
emul_slot_new_tag(const emul_pers_t *p, uint32_t index)
{
  GArray *st = emul_fabric.slot_tag;
  if (st->len <= index)
    g_array_set_size(st, index + 1);
  emul_slot_tag_t *t = &g_array_index(st, emul_slot_tag_t, index);
  uint32_t tag;
  if (t->last == 0) {
    tag = emul_random_key(p);
  } else {
    if (p->tag_step_random && t->stride == 0)
      t->stride = slot_stride(p);
    uint64_t n = p->tag_mask;
    uint64_t step = p->tag_step_random ? t->stride : 1;
    /* tags 1..n as 0..n-1, stepped modulo n */
    tag = (uint32_t) (((uint64_t) (t->last - 1) % n + step) % n + 1);
  }
  t->last = tag;
  return tag;
}

/* Give a new region @mr its slot and key and export it; frees @mr when
 * the table outgrew this personality's index field. */
static rnicpi_status_t
mr_enter(emul_mr_t *mr, emul_dev_t *dev, rnicpi_mr_t **out)
{
  emul_random_ready();
  emul_fabric_lock();
  if (!emul_slot_alloc(mr, dev->pers)) {
    emul_fabric_unlock();
    g_free(mr);
    return RNICPI_ELIMIT;
  }
  mr->key = emul_slot_new_tag(dev->pers, mr->index);
  mr->ref = 1;  /* the table's */
  if (mr->fr)
    emul_mr_mutable_enter();
  emul_mr_slot_set(mr->index, mr);
  emul_ring_mr_sync(mr->index);
  emul_fabric_unlock();
  mr->base.lkey = mr->base.rkey = emul_key_make(dev->pers, mr->index, mr->key);
  g_atomic_int_inc(&mr->pd->nobj);
  *out = &mr->base;
  return RNICPI_OK;
}

static rnicpi_status_t
emul_mr_reg(rnicpi_pd_t *p, const rnicpi_mr_attr_t *attr, rnicpi_mr_t **out)
{
  if (attr->addr == NULL || attr->length == 0)
    return RNICPI_EINVAL;
  emul_dev_t *dev = to_emul_dev(p->dev);
  if (attr->length > dev->caps.max_mr_size)
    return RNICPI_ELIMIT;
  /* A device without atomics refuses the right (siw: atomic_cap 0). */
  if ((attr->access & RNICPI_ACCESS_ATOMIC) && !(dev->caps.features & RNICPI_CAP_ATOMICS))
    return RNICPI_ENOTSUP;
  emul_mr_t *mr = g_new0(emul_mr_t, 1);
  mr->base.pd = p;
  mr->pd = to_emul_pd(p);
  mr->addr = attr->addr;
  mr->length = attr->length;
  mr->iova = attr->iova;
  mr->access = attr->access;
  mr->pers = dev->pers;

  mr->zero_based = attr->iova != (uint64_t) (uintptr_t) attr->addr;

  return mr_enter(mr, dev, out);
}

/* RNIC-PI 1.4: an invalid region for fast registration. */
static rnicpi_status_t
emul_mr_alloc(rnicpi_pd_t *p, uint32_t max_pages, rnicpi_mr_t **out)
{
  emul_dev_t *dev = to_emul_dev(p->dev);
  if (!(dev->caps.features & RNICPI_CAP_FAST_REGISTER))
    return RNICPI_ENOTSUP;
  if (max_pages == 0)
    return RNICPI_EINVAL;
  emul_mr_t *mr = g_new0(emul_mr_t, 1);
  mr->base.pd = p;
  mr->pd = to_emul_pd(p);
  mr->pers = dev->pers;
  mr->fr = TRUE;
  mr->max_pages = max_pages;
  return mr_enter(mr, dev, out);
}

/* Execute a FAST_REG (rules: rnicpi_fast_reg_t).  The new key was drawn at
 * post and travels in wr->rkey. */
rnicpi_wc_status_t
emul_fr_exec(emul_qp_t *qp, const rnicpi_send_wr_t *wr)
{
  const rnicpi_fast_reg_t *f = &wr->fast_reg;
  emul_mr_t *mr = to_emul_mr(f->mr);
  const emul_pers_t *p = emul_pers_of_qp(qp);
  uint64_t feats = emul_qp_dev(qp)->caps.features;
  uint32_t index, tag;
  if (!mr->fr || mr->pd != qp->pd || mr->valid || emul_mr_slot(mr->index) != mr)
    return RNICPI_WC_MEM_MGT_ERR;
  if (f->addr == NULL || f->length == 0 || f->num_pages == 0 || f->num_pages > mr->max_pages ||
      f->page_size == 0 || f->length > (uint64_t) f->num_pages * f->page_size)
    return RNICPI_WC_MEM_MGT_ERR;
  if (((f->access & RNICPI_ACCESS_ATOMIC) && !(feats & RNICPI_CAP_ATOMICS)) ||
      (f->iova != (uint64_t) (uintptr_t) f->addr && (f->iova != 0 || !(feats & RNICPI_CAP_ZERO_BASED))))
    return RNICPI_WC_MEM_MGT_ERR;
  if (!emul_key_split(p, wr->rkey, &index, &tag) || index != mr->index)
    return RNICPI_WC_MEM_MGT_ERR;
  mr->addr = f->addr;
  mr->length = f->length;
  mr->iova = f->iova;
  mr->zero_based = f->iova != (uint64_t) (uintptr_t) f->addr;
  mr->access = f->access;
  mr->key = tag;
  mr->valid = TRUE;
  emul_ring_mr_sync(mr->index);
  return RNICPI_WC_SUCCESS;
}

/* Invalidate a fast-registered region: its key keeps naming the slot but
 * grants nothing. */
void
emul_fr_invalidate(emul_mr_t *mr)
{
  mr->valid = FALSE;
  mr->access = 0;
  mr->length = 0;
  emul_ring_mr_sync(mr->index);
}

static rnicpi_status_t
emul_mr_modify(rnicpi_mr_t *m, uint32_t access)
{
  if ((access & RNICPI_ACCESS_ATOMIC) &&
      !(to_emul_dev(m->pd->dev)->caps.features & RNICPI_CAP_ATOMICS))
    return RNICPI_ENOTSUP;
  emul_fabric_lock();
  __atomic_store_n(&to_emul_mr(m)->access, access, __ATOMIC_RELAXED);
  emul_ring_mr_sync(to_emul_mr(m)->index);
  emul_fabric_unlock();
  return RNICPI_OK;
}

static rnicpi_status_t
emul_mr_dereg(rnicpi_mr_t *m)
{
  emul_mr_t *mr = to_emul_mr(m);
  emul_fabric_lock();
  if (mr->nmw > 0 || mr->queued > 0) {
    /* IBTA 10.6.7.2.3: a region with bound windows cannot go away; nor
     * one a queued FAST_REG names. */
    emul_fabric_unlock();
    return RNICPI_EBUSY;
  }
  emul_mr_slot_set(mr->index, NULL);
  g_array_append_val(emul_fabric.free_mr, mr->index);
  emul_ring_mr_sync(mr->index);
  /* A copy from or into its memory ends first: every such copy holds a
   * reference (emul_mr_release), and no fast path looks at the entry
   * after emul_links_pass. */
  emul_links_pass();
  if (mr->fr)
    g_atomic_int_add(&emul_fabric.nmutable, -1);
  emul_mr_release(mr);
  emul_fabric_unlock();
  g_atomic_int_dec_and_test(&mr->pd->nobj);
  g_free(mr);
  return RNICPI_OK;
}

static rnicpi_status_t
emul_mem_alloc(rnicpi_dev_t *d, size_t length, void **addr, uint64_t *ctx)
{
  (void) d;
  const char *what = "memfd_create";
  int fd = memfd_create("itapi-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    goto err;
  /* Growing is sealed too: the size never changes under either process. */
  what = "ftruncate";
  if (ftruncate(fd, (off_t) length) != 0)
    goto err_close;
  what = "F_ADD_SEALS";
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    goto err_close;
  what = "mmap";
  void *p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    goto err_close;
  *addr = p;
  *ctx = (uint64_t) fd;
  return RNICPI_OK;

err_close: {
  int e = errno;
  close(fd);
  errno = e;
}
err:
  g_log(EMUL_LOG, G_LOG_LEVEL_DEBUG, "emul: %s for a %zu-byte sealed memfd failed: %s", what, length,
        g_strerror(errno));
  return RNICPI_ENOMEM;
}

static void
emul_mem_free(void *addr, size_t length, uint64_t ctx)
{
  int fd = (int) ctx;
  /* A peer that mapped it keeps its pages until it unmaps them. */
  emul_ring_share_forget(fd);
  munmap(addr, length);
  close(fd);
}

const rnicpi_mem_ops_t emul_mem_ops = {
  .size = sizeof(rnicpi_mem_ops_t),
  .mr_reg = emul_mr_reg,
  .mr_modify = emul_mr_modify,
  .mr_dereg = emul_mr_dereg,
  .mr_alloc = emul_mr_alloc,
  .mem_alloc = emul_mem_alloc,
  .mem_free = emul_mem_free,
};
