/*
 * Read sections (rsec.h): the per-thread records, and the grace period.
 *
 * Each thread that enters a section gets a record, kept for the life of
 * the process (a thread that exits gives its record to the next new
 * thread), on a list that only grows, so rsec_sync() walks it without a
 * lock.
 *
 * SPDX-License-Identifier: MIT
 */
#include "rsec.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

__thread rsec_reader_t *rsec_self RSEC_TLS;
static rsec_reader_t *readers;   /* every record, newest first (atomic) */
static GMutex spare_lock;
static GSList *spare_readers;    /* records of threads that exited */
static pthread_key_t reader_key;
static gboolean reader_key_ok;   /* reader_key exists: exited threads' records are reused */
static pthread_once_t reader_once = PTHREAD_ONCE_INIT;
/* rsec_sync() makes every running thread pass a full barrier, so an
 * entry need not fence.  Set by the constructor, before any section can
 * be entered, and never changed. */
static gboolean sync_barrier;

static long
membarrier(int cmd)
{
  return syscall(__NR_membarrier, cmd, 0, 0);
}

/* The library's constructor.  Registration belongs to the process and is
 * kept across fork (Linux 4.14 and later, which have the command at all). */
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
  rsec_reader_t *r = p;
  /* A thread that exits inside a section (a callback that ended it) must
   * not hold every later grace period. */
  if (r->seq & 1)
    __atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELEASE);
  r->depth = 0;
  g_mutex_lock(&spare_lock);
  spare_readers = g_slist_prepend(spare_readers, r);
  g_mutex_unlock(&spare_lock);
}

/* Without a key a section still works; only the records of threads that
 * exit are not reused (one cache line each), and a thread that exits
 * inside a section holds every later grace period. */
static void
reader_key_init(void)
{
  int err = pthread_key_create(&reader_key, reader_thread_exit);
  reader_key_ok = err == 0;
  if (!reader_key_ok)
    g_warning("read sections: pthread_key_create failed (%s): the process is out of "
              "thread-specific keys (PTHREAD_KEYS_MAX); each new thread's record is kept after "
              "it exits: free keys with pthread_key_delete, or start fewer threads",
              g_strerror(err));
}

rsec_reader_t *
rsec_reader_new(void)
{
  pthread_once(&reader_once, reader_key_init);
  g_mutex_lock(&spare_lock);
  rsec_reader_t *r = NULL;
  if (spare_readers != NULL) {
    r = spare_readers->data;
    spare_readers = g_slist_delete_link(spare_readers, spare_readers);
  }
  g_mutex_unlock(&spare_lock);
  if (r == NULL) {
    r = g_aligned_alloc0(1, sizeof(*r), G_MEM_ALIGN > 64 ? G_MEM_ALIGN : 64);
    rsec_reader_t *head = __atomic_load_n(&readers, __ATOMIC_ACQUIRE);
    do
      r->next = head;
    while (!__atomic_compare_exchange_n(&readers, &head, r, TRUE, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
  }
  r->fence = !sync_barrier;
  if (reader_key_ok)
    pthread_setspecific(reader_key, r);
  rsec_self = r;
  return r;
}

/* Every running thread of the process passes a full barrier: a section
 * whose entering store it has not seen yet will see what this thread
 * stored before.  The expedited command can fail only for want of kernel
 * memory (a CPU mask it allocates); the global one allocates nothing but
 * waits for an RCU grace period of the whole system, so it is the
 * fallback, and when neither answers the wait is retried rather than the
 * object freed under a reader or the process aborted. */
static void
barrier_all(void)
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
      g_warning("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed (%s) and so did "
                "MEMBARRIER_CMD_GLOBAL; an object being freed waits until one succeeds "
                "(free kernel memory, or check the kernel's nohz_full setting)",
                g_strerror(err));
    g_usleep(1000);
  }
}

void
rsec_sync(void)
{
  /* Pairs with rsec_enter(): either that thread's lookup sees the object
   * unpublished, or its open section is seen here. */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (sync_barrier)
    barrier_all();
  rsec_reader_t *self = rsec_self;
  for (rsec_reader_t *r = __atomic_load_n(&readers, __ATOMIC_ACQUIRE); r != NULL; r = r->next) {
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
rsec_in_section(void)
{
  return rsec_self != NULL && rsec_self->depth > 0;
}
