/*
 * Memory for buffers (itx_mem_alloc, itx_mem_free): what the IA's provider
 * reaches at its best speed.
 *
 * The provider decides, through RNIC-PI 1.10's mem_alloc: vp/emul makes a
 * sealed memfd that it maps into its peer process; a provider without the
 * operation (the loader's stub answers RNICPI_ENOTSUP: vp/iwarp, vp/ib, any
 * provider older than 1.10) gets ordinary anonymous pages mapped here.
 * Nothing here looks at the provider's name or transport.
 *
 * Each allocation is remembered by its address, with the provider that made
 * it (descriptors live as long as the process), so itx_mem_free needs no IA
 * (the memory outlives it) and refuses an address it did not give.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ual.h"

typedef struct ual_mem {
  size_t length;                  /* whole pages */
  const rnicpi_provider_t *prov;  /* NULL: anonymous pages mapped here */
  uint64_t ctx;                   /* the provider's word for mem_free */
} ual_mem_t;

/* @n in the largest IEC unit below it ("1.0 EiB"), in plain ASCII for
 * messages (GLib's g_format_size puts a no-break space before the unit). */
static const char *
size_text(size_t n, char buf[32])
{
  static const char *const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
  double v = (double) n;
  unsigned i = 0;
  while (v >= 1024 && i + 1 < G_N_ELEMENTS(unit)) {
    v /= 1024;
    i++;
  }
  g_snprintf(buf, 32, i == 0 ? "%.0f %s" : "%.1f %s", v, unit[i]);
  return buf;
}

static GMutex mem_lock;
static GHashTable *mems;          /* address -> ual_mem_t*, under mem_lock */

it_status_t
itx_mem_alloc(it_ia_handle_t ia_handle, size_t length, void **addr)
{
  if (addr == NULL)
    return ual_fail(IT_ERR_FAULT, "itx_mem_alloc: addr is NULL; pass a void ** for the memory's "
                    "address");
  if (length == 0)
    return ual_fail(IT_ERR_INVALID_LENGTH, "itx_mem_alloc: length is 0; ask for at least one byte");
  size_t page = (size_t) sysconf(_SC_PAGESIZE);
  /* No mapping can exceed PTRDIFF_MAX bytes: refused before any call. */
  if (length > (size_t) PTRDIFF_MAX - page) {
    char sz[32];
    return ual_fail(IT_ERR_RESOURCES, "itx_mem_alloc: %zu bytes (%s) is more than a process can "
                    "map; ask for less", length, size_text(length, sz));
  }
  size_t len = (length + page - 1) / page * page;

  void *p = NULL;
  uint64_t ctx = 0;
  const rnicpi_provider_t *prov = NULL;
  {
    /* The device stays open inside the section, even if the IA is being
     * freed by another thread. */
    RSEC_SCOPE();
    ual_ia_t *ia = ual_ia_get(ia_handle);
    if (ia == NULL)
      return ual_fail(IT_ERR_INVALID_IA, "itx_mem_alloc: %p is not a live IA handle",
                      (void *) ia_handle);
    errno = 0;
    rnicpi_status_t rs = ia->prov->mem->mem_alloc(ia->dev, len, &p, &ctx);
    if (rs == RNICPI_OK) {
      prov = ia->prov;
    } else if (rs != RNICPI_ENOTSUP) {
      int e = errno;
      char sz[32];
      return ual_fail(IT_ERR_RESOURCES, "itx_mem_alloc: provider '%s' of IA '%s' could not allocate "
                      "%zu bytes (%s): %s (%s); ask for less, free memory, or raise the process's "
                      "limits (ulimit -v, ulimit -n)", ia->prov->name, ia->iface->name, len,
                      size_text(len, sz),
                      rnicpi_status_message(rs), e != 0 ? g_strerror(e) : "no reason given");
    }
  }
  if (prov == NULL) {
    /* The provider wants nothing special: anonymous pages, zero-filled. */
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      char sz[32];
      return ual_fail(IT_ERR_RESOURCES, "itx_mem_alloc: mapping %zu bytes (%s) of anonymous memory "
                      "failed: %s; ask for less, free memory, or raise the process's limit "
                      "(ulimit -v)", len, size_text(len, sz), g_strerror(e));
    }
  }
  ual_mem_t *m = g_new(ual_mem_t, 1);
  m->length = len;
  m->prov = prov;
  m->ctx = ctx;
  g_mutex_lock(&mem_lock);
  if (mems == NULL)
    mems = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_hash_table_insert(mems, p, m);
  g_mutex_unlock(&mem_lock);
  *addr = p;
  return IT_SUCCESS;
}

it_status_t
itx_mem_free(void *addr)
{
  if (addr == NULL)
    return IT_SUCCESS;
  g_mutex_lock(&mem_lock);
  ual_mem_t *m = mems != NULL ? g_hash_table_lookup(mems, addr) : NULL;
  if (m != NULL)
    g_hash_table_remove(mems, addr);
  g_mutex_unlock(&mem_lock);
  if (m == NULL)
    return ual_fail(IT_ERR_INVALID_ADDRESS, "itx_mem_free: %p is not an address itx_mem_alloc "
                    "returned, or it was freed already; pass the address itx_mem_alloc set", addr);
  if (m->prov != NULL)
    m->prov->mem->mem_free(addr, m->length, m->ctx);
  else
    munmap(addr, m->length);
  g_free(m);
  return IT_SUCCESS;
}
