/*
 * vp/emul exported region table: this process's regions and windows as
 * other processes see them (design: emul_ring.h, "Shared memory").  One
 * memfd of X_MR_CAP entries, made at the first cross-process use, given
 * to trusted peers alone (emul_ring_cm.c, Trust) with ATTACH or REP, and
 * sealed so that a peer can only read it.
 *
 * Rules:
 * - every change of a region or window entry passes through
 *   emul_ring_mr_sync (fabric lock held), which writes the entry under its
 *   sequence count (odd while written) and moves emul_fabric.mr_gen;
 * - a peer reads an entry only through emul_ring_mr_read and checks key,
 *   domain, bounds and rights in what it read exactly as the in-process
 *   path does (emul_ring_copy.c, x_grant).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emul_ring.h"

int emul_ring_mr_fd = -1;  /* this process's region table (memfd) */
static x_mr_entry_t *x_mrs;

/* The table, made with no lock held, then filled under the fabric lock
 * with the regions registered so far (emul_ring_init, once). */
gboolean
emul_ring_export_init(void)
{
  int fd = memfd_create("itapi-emul-mrs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  void *m = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, (off_t) X_MR_CAP * sizeof(x_mr_entry_t)) == 0)
    m = mmap(NULL, X_MR_CAP * sizeof(x_mr_entry_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  /* Our mapping is the one that writes: sealed after it, the file cannot
   * be written through any other (a peer's mapping, write(2)), nor grow,
   * nor shrink under a peer's mapping. */
  if (m == MAP_FAILED ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
    g_log(EMUL_LOG, G_LOG_LEVEL_WARNING, "emul: no sealed region table for other processes (%s): "
          "this process cannot connect to other processes (Linux 5.1 or later seals it)",
          g_strerror(errno));
    if (m != MAP_FAILED)
      munmap(m, X_MR_CAP * sizeof(x_mr_entry_t));
    if (fd >= 0)
      close(fd);
    return FALSE;
  }
  emul_fabric_lock();
  emul_ring_mr_fd = fd;
  x_mrs = m;
  for (guint i = 1; i < emul_fabric.mr_len; i++)
    emul_ring_mr_sync(i);
  emul_fabric_unlock();
  return TRUE;
}

void
emul_ring_mr_sync(uint32_t index)
{
  /* What x->hot keeps of a local check is stale (read under a link's lock
   * alone by the latency post: atomic). */
  __atomic_add_fetch(&emul_fabric.mr_gen, 1, __ATOMIC_RELAXED);
  if (x_mrs == NULL || index >= X_MR_CAP)
    return;
  x_mr_entry_t *e = &x_mrs[index];
  emul_mr_t *mr = emul_mr_slot(index);
  uint32_t s = e->seq;
  __atomic_store_n(&e->seq, s + 1, __ATOMIC_SEQ_CST);
  if (mr != NULL) {
    e->key = mr->key;
    e->access = mr->access;
    e->qpn = mr->mw != NULL && mr->mw->qp != NULL ? mr->mw->qp->base.qp_num : 0;
    e->pd_id = mr->pd->id;
    e->addr = (uint64_t) (uintptr_t) mr->addr;
    e->length = mr->length;
    e->iova = mr->iova;
  }
  e->valid = mr != NULL;
  __atomic_store_n(&e->seq, s + 2, __ATOMIC_RELEASE);
}

/* Read one entry of a peer's table consistently (bounded retries: a writer
 * holds an entry odd only for a few stores). */
gboolean
emul_ring_mr_read(const x_mr_entry_t *table, uint32_t index, x_mr_entry_t *out)
{
  if (table == NULL || index == 0 || index >= X_MR_CAP)
    return FALSE;
  const x_mr_entry_t *e = &table[index];
  for (int tries = 0; tries < 1000; tries++) {
    uint32_t s1 = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
    if (s1 & 1)
      continue;
    memcpy(out, (const void *) e, sizeof(*out));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) == s1)
      return out->valid != 0;
  }
  return FALSE;
}
