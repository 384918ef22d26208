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

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/*
 * Read sections (dat_priv.h).  Each thread that enters one gets a record,
 * kept for the life of the process (a thread that exits gives its record
 * to the next new thread), on a list that only grows, so datx_sync() walks
 * it without a lock.
 */

__thread datx_reader_t *datx_reader_self __attribute__((tls_model("initial-exec")));
static datx_reader_t *readers;  /* every record, newest first (atomic) */
static GMutex spare_lock;
static GSList *spare_readers;   /* records of threads that exited */
static pthread_key_t reader_key;
static pthread_once_t reader_once = PTHREAD_ONCE_INIT;
/* membarrier(2)'s private expedited barrier is registered: entries do not
 * fence.  Set by the module's constructor, before any section. */
static gboolean sync_barrier;

static long
membarrier(int cmd)
{
  return syscall(__NR_membarrier, cmd, 0, 0);
}

__attribute__((constructor)) static void
sync_barrier_init(void)
{
  long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  sync_barrier = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                 membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

static void
reader_thread_exit(void *p)
{
  datx_reader_t *r = p;
  /* A thread that exits inside a section must not hold every later sync. */
  if (r->seq & 1)
    __atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELEASE);
  g_mutex_lock(&spare_lock);
  spare_readers = g_slist_prepend(spare_readers, r);
  g_mutex_unlock(&spare_lock);
}

static void
reader_key_init(void)
{
  if (pthread_key_create(&reader_key, reader_thread_exit) != 0)
    g_error("dat: pthread_key_create failed: the process is out of thread-specific keys");
}

datx_reader_t *
datx_reader_new(void)
{
  pthread_once(&reader_once, reader_key_init);
  g_mutex_lock(&spare_lock);
  datx_reader_t *r = NULL;
  if (spare_readers != NULL) {
    r = spare_readers->data;
    spare_readers = g_slist_delete_link(spare_readers, spare_readers);
  }
  g_mutex_unlock(&spare_lock);
  if (r == NULL) {
    r = g_aligned_alloc0(1, sizeof(*r), G_MEM_ALIGN > 64 ? G_MEM_ALIGN : 64);
    datx_reader_t *head = __atomic_load_n(&readers, __ATOMIC_ACQUIRE);
    do
      r->next = head;
    while (!__atomic_compare_exchange_n(&readers, &head, r, TRUE, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
  }
  r->fence = !sync_barrier;
  pthread_setspecific(reader_key, r);
  datx_reader_self = r;
  return r;
}

void
datx_sync(void)
{
  /* Pairs with datx_read_enter(): either that thread's lookup sees the
   * cell dead, or its open section is seen here. */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  /* The expedited command fails only for want of kernel memory; the
   * global one allocates nothing (an RCU grace period of the system), and
   * when neither answers the wait is retried, never the EVD freed under a
   * reader nor the process aborted. */
  for (unsigned tries = 0; sync_barrier; tries++) {
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
      break;
    int err = errno;
    /* Registered at load; should the kernel have dropped it, register again. */
    if (err == EPERM && tries == 0 && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
      continue;
    if (membarrier(MEMBARRIER_CMD_GLOBAL) == 0)
      break;
    if (tries == 0)
      g_warning("dat: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed (%s) and so did "
                "MEMBARRIER_CMD_GLOBAL; an EVD being freed waits until one succeeds "
                "(free kernel memory, or check the kernel's nohz_full setting)",
                g_strerror(err));
    g_usleep(1000);
  }
  datx_reader_t *self = datx_reader_self;
  for (datx_reader_t *r = __atomic_load_n(&readers, __ATOMIC_ACQUIRE); r != NULL; r = r->next) {
    if (r == self)
      continue;
    guint64 seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
    if ((seq & 1) == 0)
      continue;
    /* A section is one dequeue long: spin briefly, then sleep. */
    for (unsigned spins = 0; __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) == seq; spins++) {
      if (spins < 64)
        sched_yield();
      else
        g_usleep(50);
    }
  }
}
