/*
 * Handles and read sections: validated, generation-checked handles whose
 * objects are reclaimed only when no thread can still be using them.
 *
 * A handle is not a pointer.  Its value packs the object type (8 bits), a
 * generation (UAL_GEN_BITS) and a slot index (32 bits).  A lookup (inline,
 * in ual.h) checks the type, that the slot exists and holds an object
 * whose own handle (type and generation included) is the value, so a
 * freed, foreign or garbage value is refused without being dereferenced.
 * Slots live in fixed chunks that never move, so a lookup takes no lock.
 *
 * A lookup without the object lock is made inside a read section
 * (ual_read_enter/ual_read_exit, one counter per thread).  Freeing an
 * object first unpublishes it (ual_handle_kill: no lookup finds it any
 * more), then waits for every read section that was open at that moment
 * to close (ual_sync), and only then destroys it.  This is the grace
 * period of RCU, reduced to what a handle table needs: the data path pays
 * one plain store on entry and one on exit, on a line no other thread
 * writes.  The store on entry must be seen before the lookups that follow
 * it; rather than a fence on every entry, ual_sync makes every running
 * thread of the process pass a full barrier (membarrier(2), as
 * userspace RCU's membarrier flavour does).  Where the kernel has no
 * membarrier, each entry takes the fence (ual_sync_barrier).
 *
 * A slot whose generation would wrap is retired instead of reused, so no
 * stale handle ever names a live object; running out of slots is a status
 * (ual_handle_alloc returns FALSE), never an abort.
 *
 * This file needs nothing of the other ual/ files (a unit test builds it
 * alone with small limits).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ual.h"

#define GEN_MAX ((1u << UAL_GEN_BITS) - 1)

ual_slot_t *ual_slot_chunks[UAL_MAX_CHUNKS];
static GMutex handle_lock;
static GArray *free_slots; /* uint32_t */
static uint32_t next_slot = 1; /* slot 0 never used */
static uint32_t slots_retired;

static ual_slot_t *
slot_of(uint32_t idx)
{
  uint32_t c = idx >> UAL_CHUNK_BITS;
  if (c >= UAL_MAX_CHUNKS)
    return NULL;
  ual_slot_t *chunk = g_atomic_pointer_get(&ual_slot_chunks[c]);
  return chunk == NULL ? NULL : &chunk[idx & (UAL_CHUNK_SLOTS - 1)];
}

gboolean
ual_handle_alloc(ual_obj_t *obj, it_handle_type_enum_t type, ual_ia_t *ia)
{
  uint32_t idx;
  g_mutex_lock(&handle_lock);
  if (free_slots == NULL)
    free_slots = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  if (free_slots->len > 0) {
    idx = g_array_index(free_slots, uint32_t, free_slots->len - 1);
    g_array_set_size(free_slots, free_slots->len - 1);
  } else {
    uint32_t c = next_slot >> UAL_CHUNK_BITS;
    if (c >= UAL_MAX_CHUNKS) {
      g_mutex_unlock(&handle_lock);
      obj->handle = 0;
      return FALSE;
    }
    idx = next_slot++;
    if (ual_slot_chunks[c] == NULL)
      g_atomic_pointer_set(&ual_slot_chunks[c], g_new0(ual_slot_t, UAL_CHUNK_SLOTS));
  }
  ual_slot_t *s = slot_of(idx);
  if (s->gen == 0)
    s->gen = 1;
  obj->type = type;
  obj->ia = ia;
  obj->handle = ((uint64_t) (type + 1) << 56) | ((uint64_t) s->gen << 32) | idx;
  __atomic_store_n(&s->obj, obj, __ATOMIC_RELEASE);
  g_mutex_unlock(&handle_lock);
  if (ia != NULL && type != IT_HANDLE_TYPE_IA)
    ia->nobj[type]++;
  return TRUE;
}

void
ual_handle_kill(ual_obj_t *obj)
{
  ual_slot_t *s = slot_of((uint32_t) obj->handle);
  if (s != NULL)
    __atomic_store_n(&s->obj, NULL, __ATOMIC_SEQ_CST);
}

void
ual_handle_release(ual_obj_t *obj)
{
  uint32_t idx = (uint32_t) obj->handle;
  if (obj->handle == 0)
    return;
  if (obj->ia != NULL && obj->type != IT_HANDLE_TYPE_IA)
    obj->ia->nobj[obj->type]--;
  g_mutex_lock(&handle_lock);
  ual_slot_t *s = slot_of(idx);
  __atomic_store_n(&s->obj, NULL, __ATOMIC_SEQ_CST);
  if (s->gen >= GEN_MAX) {
    /* Every generation of this slot has been handed out: reusing it would
     * make the oldest stale handle of it valid again. */
    slots_retired++;
  } else {
    s->gen++;
    g_array_append_val(free_slots, idx);
  }
  g_mutex_unlock(&handle_lock);
  obj->handle = 0;
}

uint32_t
ual_handle_retired(void)
{
  g_mutex_lock(&handle_lock);
  uint32_t n = slots_retired;
  g_mutex_unlock(&handle_lock);
  return n;
}

/*
 * Read sections.  Each thread that enters one gets a record, kept for the
 * life of the process (a thread that exits gives its record to the next
 * new thread), on a list that only grows, so ual_sync walks it without a
 * lock.  A record's sequence is odd while its thread is inside a section.
 */

__thread ual_reader_t *ual_reader_self UAL_TLS;
static ual_reader_t *readers;   /* every record, newest first (atomic) */
static GMutex spare_lock;
static GSList *spare_readers;   /* records of threads that exited */
static pthread_key_t reader_key;
static pthread_once_t reader_once = PTHREAD_ONCE_INIT;

static void
reader_thread_exit(void *p)
{
  ual_reader_t *r = p;
  /* A thread that exits inside a section (a callback that ended it) must
   * not hold every later grace period. */
  if (r->seq & 1)
    __atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELEASE);
  r->depth = 0;
  g_mutex_lock(&spare_lock);
  spare_readers = g_slist_prepend(spare_readers, r);
  g_mutex_unlock(&spare_lock);
}

static void
reader_key_init(void)
{
  if (pthread_key_create(&reader_key, reader_thread_exit) != 0)
    g_error("ual: pthread_key_create failed: the process is out of thread-specific keys");
}

ual_reader_t *
ual_reader_new(void)
{
  pthread_once(&reader_once, reader_key_init);
  g_mutex_lock(&spare_lock);
  ual_reader_t *r = NULL;
  if (spare_readers != NULL) {
    r = spare_readers->data;
    spare_readers = g_slist_delete_link(spare_readers, spare_readers);
  }
  g_mutex_unlock(&spare_lock);
  if (r == NULL) {
    r = g_aligned_alloc0(1, sizeof(*r), G_MEM_ALIGN > 64 ? G_MEM_ALIGN : 64);
    ual_reader_t *head = __atomic_load_n(&readers, __ATOMIC_ACQUIRE);
    do
      r->next = head;
    while (!__atomic_compare_exchange_n(&readers, &head, r, TRUE, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
  }
  r->fence = !ual_sync_barrier;
  pthread_setspecific(reader_key, r);
  ual_reader_self = r;
  return r;
}

gboolean ual_sync_barrier;

static long
membarrier(int cmd)
{
  return syscall(__NR_membarrier, cmd, 0, 0);
}

/* Before any read section or ual_sync can run: the library's constructor.
 * Registration belongs to the process and is kept across fork (Linux
 * 4.14 and later, which have the command at all). */
__attribute__((constructor)) static void
sync_barrier_init(void)
{
  long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  ual_sync_barrier = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                     membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

/* Every running thread of the process passes a full barrier: a read
 * section whose entering store it has not seen yet will see what this
 * thread stored before.  The expedited command can fail only for want of
 * kernel memory (a CPU mask it allocates); the global one allocates
 * nothing but waits for an RCU grace period of the whole system, so it is
 * the fallback, and when neither answers the wait is retried rather than
 * the object freed under a reader or the process aborted. */
static void
sync_barrier(void)
{
  for (unsigned tries = 0;; tries++) {
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
      return;
    int err = errno;
    /* Registered at load; should the kernel have dropped it, register again. */
    if (err == EPERM && tries == 0 && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
      continue;
    if (membarrier(MEMBARRIER_CMD_GLOBAL) == 0)
      return;
    if (tries == 0)
      g_warning("ual: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed (%s) and so did "
                "MEMBARRIER_CMD_GLOBAL; an object being freed waits until one succeeds "
                "(free kernel memory, or check the kernel's nohz_full setting)",
                g_strerror(err));
    g_usleep(1000);
  }
}

void
ual_sync(void)
{
  /* Pairs with ual_read_enter: either that thread's lookup sees the
   * object unpublished, or its open section is seen here. */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (ual_sync_barrier)
    sync_barrier();
  ual_reader_t *self = ual_reader_self;
  for (ual_reader_t *r = __atomic_load_n(&readers, __ATOMIC_ACQUIRE); r != NULL; r = r->next) {
    if (r == self)
      continue;
    uint64_t s = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
    if ((s & 1) == 0)
      continue;
    /* Sections are a post or a dequeue long: spin briefly, then sleep. */
    for (unsigned spins = 0; __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) == s; spins++) {
      if (spins < 64)
        sched_yield();
      else
        g_usleep(50);
    }
  }
}

gboolean
ual_in_read_section(void)
{
  return ual_reader_self != NULL && ual_reader_self->depth > 0;
}
