/*
 * dat/: handle cells (dat_priv.h says why cells are never reused).
 *
 * Cells come from chunks of DATX_CHUNK_CELLS; a chunk's address is
 * published in `datx_chunks` before the chunk count that makes it
 * visible, so a lookup (datx_cell_find(), inline for the data path) reads
 * the count and then only published chunks, with no lock.  A handle is a
 * cell only if it lies inside a published chunk on a cell boundary:
 * anything else is refused before its bytes are read (libdat2 itself has
 * read its first word, the provider, to reach us).
 *
 * SPDX-License-Identifier: MIT
 */
#include "dat_priv.h"

#define DATX_MAX_CHUNKS 16384u

datx_cell_t *datx_chunks[DATX_MAX_CHUNKS];
guint datx_nchunks;          /* published chunks (atomic) */
static guint next_in_chunk;  /* cells used in the last chunk, under lock */
static GMutex cells_lock;
/* Where datx_cell_retire_wait() sleeps until a killed cell's last hold is
 * dropped. */
static GMutex holds_lock;
static GCond holds_done;

static guint64
hold_word(datx_cell_t *cell)
{
  return __atomic_load_n(&cell->hold, __ATOMIC_ACQUIRE);
}

datx_cell_t *
datx_cell_new(DAT_PROVIDER *provider, datx_type_t type, void *object, datx_ia_t *ia)
{
  g_mutex_lock(&cells_lock);
  guint n = g_atomic_int_get(&datx_nchunks);
  if (n == 0 || next_in_chunk == DATX_CHUNK_CELLS) {
    if (n == DATX_MAX_CHUNKS) {
      g_mutex_unlock(&cells_lock);
      g_warning("no DAT handle left: %u handles were made in this process, the most it can "
                "hold; a freed object's handle is never reused, so start a new process",
                DATX_MAX_CHUNKS * DATX_CHUNK_CELLS);
      return NULL;
    }
    datx_chunks[n] = g_new0(datx_cell_t, DATX_CHUNK_CELLS);
    g_atomic_int_set(&datx_nchunks, n + 1);
    n++;
    next_in_chunk = 0;
  }
  datx_cell_t *cell = &datx_chunks[n - 1][next_in_chunk];
  cell->id = (n - 1) * DATX_CHUNK_CELLS + next_in_chunk;
  next_in_chunk++;
  cell->provider = provider;
  cell->type = type;
  cell->object = object;
  cell->ia = ia;
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
  __atomic_fetch_or(&cell->hold, DATX_HOLD_DEAD, __ATOMIC_ACQ_REL);
  g_atomic_int_set((gint *) &cell->magic, (gint) DATX_MAGIC_DEAD);
  g_atomic_pointer_set(&cell->object, NULL);
  datx_cell_set_it(cell, 0);
}

void *
datx_cell_get(DAT_HANDLE handle, datx_type_t type)
{
  datx_cell_t *cell = datx_cell_find(handle);
  if (cell == NULL || (guint) g_atomic_int_get((gint *) &cell->magic) != DATX_MAGIC_LIVE ||
      cell->type != (uint32_t) type)
    return NULL;
  return cell->object;
}

void *
datx_cell_use(DAT_HANDLE handle, datx_type_t type)
{
  datx_cell_t *cell = datx_cell_peek(handle, type);
  if (cell == NULL)
    return NULL;
  guint64 v = hold_word(cell);
  do {
    if (v & DATX_HOLD_DEAD)
      return NULL;
  } while (!__atomic_compare_exchange_n(&cell->hold, &v, v + DATX_HOLD_USER, TRUE, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED));
  return cell->object;
}

void
datx_cell_unuse(datx_cell_t *cell)
{
  guint64 was = __atomic_fetch_sub(&cell->hold, DATX_HOLD_USER, __ATOMIC_RELEASE);
  g_assert((was & DATX_HOLD_USERS) != 0);
}

void
datx_cell_put_dead(datx_cell_t *cell, guint64 was)
{
  (void) cell;
  g_assert((was & DATX_HOLD_CALLS) > 0);
  if ((was & DATX_HOLD_CALLS) == 1) {
    /* The last hold of a killed cell: its free may be waiting.  Taken
     * under the lock the waiter checks under, so that it is not lost. */
    g_mutex_lock(&holds_lock);
    g_cond_broadcast(&holds_done);
    g_mutex_unlock(&holds_lock);
  }
}

datx_retire_t
datx_cell_retire(datx_cell_t *cell)
{
  guint64 v = 0;
  if (__atomic_compare_exchange_n(&cell->hold, &v, DATX_HOLD_DEAD, FALSE, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    g_atomic_int_set((gint *) &cell->magic, (gint) DATX_MAGIC_DEAD);
    return DATX_RETIRED;
  }
  return (v & DATX_HOLD_DEAD) ? DATX_GONE : DATX_BUSY;
}

/* Sets the dead bit unless the cell has users (and @p even_used is FALSE),
 * then waits for the calls inside it to leave. */
static datx_retire_t
retire_wait(datx_cell_t *cell, gboolean even_used)
{
  guint64 v = hold_word(cell);
  do {
    if (v & DATX_HOLD_DEAD)
      return DATX_GONE;
    if ((v & DATX_HOLD_USERS) != 0 && !even_used)
      return DATX_BUSY;
  } while (!__atomic_compare_exchange_n(&cell->hold, &v, v | DATX_HOLD_DEAD, TRUE,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  g_atomic_int_set((gint *) &cell->magic, (gint) DATX_MAGIC_DEAD);
  if ((v & DATX_HOLD_CALLS) != 0) {
    g_mutex_lock(&holds_lock);
    while ((hold_word(cell) & DATX_HOLD_CALLS) != 0)
      g_cond_wait(&holds_done, &holds_lock);
    g_mutex_unlock(&holds_lock);
  }
  return DATX_RETIRED;
}

datx_retire_t
datx_cell_retire_wait(datx_cell_t *cell)
{
  return retire_wait(cell, FALSE);
}

datx_retire_t
datx_cell_retire_close(datx_cell_t *cell)
{
  return retire_wait(cell, TRUE);
}

void
datx_cell_revive(datx_cell_t *cell)
{
  g_atomic_int_set((gint *) &cell->magic, (gint) DATX_MAGIC_LIVE);
  __atomic_fetch_and(&cell->hold, ~DATX_HOLD_DEAD, __ATOMIC_ACQ_REL);
}

datx_type_t
datx_cell_type(DAT_HANDLE handle)
{
  datx_cell_t *cell = datx_cell_find(handle);
  if (cell == NULL || (guint) g_atomic_int_get((gint *) &cell->magic) != DATX_MAGIC_LIVE)
    return 0;
  return (datx_type_t) cell->type;
}

datx_cell_t *
datx_cell_hold_id(uint32_t id, datx_type_t type)
{
  guint chunk = id / DATX_CHUNK_CELLS;
  if (chunk >= (guint) g_atomic_int_get(&datx_nchunks))
    return NULL;
  return datx_cell_hold(&datx_chunks[chunk][id % DATX_CHUNK_CELLS], type);
}

datx_cell_t *
datx_lmr_hold_context(DAT_LMR_CONTEXT context)
{
  return datx_cell_hold_id(context, DATX_LMR);
}
