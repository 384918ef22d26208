/*
 * dat/: handle cells (dat_priv.h says why cells are never reused).
 *
 * Cells come from chunks of DATX_CHUNK_CELLS; a chunk's address is
 * published in `chunks` before the chunk count that makes it visible, so a
 * lookup reads the count and then only published chunks, with no lock.
 * A handle is a cell only if it lies inside a published chunk on a cell
 * boundary: anything else is refused before its bytes are read (libdat2
 * itself has read its first word, the provider, to reach us).
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#define DATX_CHUNK_CELLS 4096u
#define DATX_MAX_CHUNKS 16384u

static datx_cell_t *chunks[DATX_MAX_CHUNKS];
static guint nchunks;        /* published chunks (atomic) */
static guint next_in_chunk;  /* cells used in the last chunk, under lock */
static GMutex cells_lock;
/* Orders datx_cell_hold() against datx_cell_retire() and datx_cell_kill():
 * a hold sees a live cell and counts itself, or sees the tombstone. */
static GMutex holds_lock;
static GCond holds_done; /* a cell's last hold was dropped */

datx_cell_t *
datx_cell_new(DAT_PROVIDER *provider, datx_type_t type, void *object, datx_ia_t *ia)
{
  g_mutex_lock(&cells_lock);
  guint n = g_atomic_int_get(&nchunks);
  if (n == 0 || next_in_chunk == DATX_CHUNK_CELLS) {
    if (n == DATX_MAX_CHUNKS) {
      g_mutex_unlock(&cells_lock);
      g_warning("no DAT handle left: %u handles were made in this process, the most it can "
                "hold; a freed object's handle is never reused, so start a new process",
                DATX_MAX_CHUNKS * DATX_CHUNK_CELLS);
      return NULL;
    }
    chunks[n] = g_new0(datx_cell_t, DATX_CHUNK_CELLS);
    g_atomic_int_set(&nchunks, n + 1);
    n++;
    next_in_chunk = 0;
  }
  datx_cell_t *cell = &chunks[n - 1][next_in_chunk];
  cell->id = (n - 1) * DATX_CHUNK_CELLS + next_in_chunk;
  next_in_chunk++;
  cell->provider = provider;
  cell->type = type;
  cell->object = object;
  /* Published last: a concurrent lookup sees either nothing or a whole cell. */
  g_atomic_int_set((gint *) &cell->magic, (gint) DATX_MAGIC_LIVE);
  g_mutex_unlock(&cells_lock);
  if (ia != NULL) {
    g_mutex_lock(&ia->lock);
    ia->children = g_list_prepend(ia->children, cell);
    g_mutex_unlock(&ia->lock);
  }
  return cell;
}

void
datx_cell_kill(datx_cell_t *cell, datx_ia_t *ia)
{
  if (ia != NULL) {
    g_mutex_lock(&ia->lock);
    ia->children = g_list_remove(ia->children, cell);
    g_mutex_unlock(&ia->lock);
  }
  g_mutex_lock(&holds_lock);
  g_atomic_int_set((gint *) &cell->magic, (gint) DATX_MAGIC_DEAD);
  cell->object = NULL;
  g_mutex_unlock(&holds_lock);
}

static datx_cell_t *
find_cell(DAT_HANDLE handle)
{
  if (handle == NULL)
    return NULL;
  uintptr_t p = (uintptr_t) handle;
  guint n = g_atomic_int_get(&nchunks);
  for (guint i = n; i-- > 0;) {
    uintptr_t base = (uintptr_t) chunks[i];
    if (p >= base && p < base + DATX_CHUNK_CELLS * sizeof(datx_cell_t)) {
      if ((p - base) % sizeof(datx_cell_t) != 0)
        return NULL;
      return (datx_cell_t *) handle;
    }
  }
  return NULL;
}

void *
datx_cell_get(DAT_HANDLE handle, datx_type_t type)
{
  datx_cell_t *cell = find_cell(handle);
  if (cell == NULL || (guint) g_atomic_int_get((gint *) &cell->magic) != DATX_MAGIC_LIVE ||
      cell->type != (uint32_t) type)
    return NULL;
  return cell->object;
}

datx_cell_t *
datx_cell_hold(DAT_HANDLE handle, datx_type_t type)
{
  datx_cell_t *cell = find_cell(handle);
  if (cell == NULL)
    return NULL;
  g_mutex_lock(&holds_lock);
  gboolean live = (guint) g_atomic_int_get((gint *) &cell->magic) == DATX_MAGIC_LIVE &&
                  cell->type == (uint32_t) type;
  if (live)
    cell->refs++;
  g_mutex_unlock(&holds_lock);
  return live ? cell : NULL;
}

void
datx_cell_put(datx_cell_t *cell)
{
  g_mutex_lock(&holds_lock);
  g_assert(cell->refs > 0);
  if (--cell->refs == 0)
    g_cond_broadcast(&holds_done);
  g_mutex_unlock(&holds_lock);
}

datx_retire_t
datx_cell_retire(datx_cell_t *cell)
{
  datx_retire_t r = DATX_RETIRED;
  g_mutex_lock(&holds_lock);
  if ((guint) g_atomic_int_get((gint *) &cell->magic) != DATX_MAGIC_LIVE)
    r = DATX_GONE;
  else if (cell->refs > 0)
    r = DATX_BUSY;
  else
    g_atomic_int_set((gint *) &cell->magic, (gint) DATX_MAGIC_DEAD);
  g_mutex_unlock(&holds_lock);
  return r;
}

datx_retire_t
datx_cell_retire_wait(datx_cell_t *cell)
{
  g_mutex_lock(&holds_lock);
  if ((guint) g_atomic_int_get((gint *) &cell->magic) != DATX_MAGIC_LIVE) {
    g_mutex_unlock(&holds_lock);
    return DATX_GONE;
  }
  g_atomic_int_set((gint *) &cell->magic, (gint) DATX_MAGIC_DEAD);
  while (cell->refs > 0)
    g_cond_wait(&holds_done, &holds_lock);
  g_mutex_unlock(&holds_lock);
  return DATX_RETIRED;
}

void
datx_cell_revive(datx_cell_t *cell)
{
  g_mutex_lock(&holds_lock);
  g_atomic_int_set((gint *) &cell->magic, (gint) DATX_MAGIC_LIVE);
  g_mutex_unlock(&holds_lock);
}

datx_type_t
datx_cell_type(DAT_HANDLE handle)
{
  datx_cell_t *cell = find_cell(handle);
  if (cell == NULL || (guint) g_atomic_int_get((gint *) &cell->magic) != DATX_MAGIC_LIVE)
    return 0;
  return (datx_type_t) cell->type;
}

datx_cell_t *
datx_lmr_hold_context(DAT_LMR_CONTEXT context)
{
  guint chunk = context / DATX_CHUNK_CELLS;
  if (chunk >= (guint) g_atomic_int_get(&nchunks))
    return NULL;
  return datx_cell_hold(&chunks[chunk][context % DATX_CHUNK_CELLS], DATX_LMR);
}
