/*
 * Read sections: what a lock-free lookup stands in, and the grace period
 * that lets whoever frees an object wait for every lookup that may still
 * be using it.
 *
 * A reader brackets its lookups with rsec_enter() and rsec_exit().  A
 * writer first unpublishes the object (no later lookup finds it), then
 * calls rsec_sync(), which returns once every section of another thread
 * that was open when it started has ended; only then is the object
 * destroyed.  This is RCU's grace period reduced to what a handle table
 * needs: a section is one counter per thread, odd while inside, on a
 * cache line no other thread writes, so entering and leaving are one
 * plain store each.  The entering store must be seen before the lookups
 * after it: rather than a fence on every entry, rsec_sync() makes every
 * running thread of the process pass a full barrier (membarrier(2),
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED, as userspace RCU's membarrier flavour
 * does); where the kernel has no such command, each entry fences.
 *
 * Each library that links this file has its own records and its own
 * thread pointer (the symbols are hidden): libitapi's sections and the
 * DAT provider's do not wait for each other.  Sections nest; a section
 * never blocks for long, and rsec_sync() is never called inside one nor
 * under a lock a section may take.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef ITAPI_RSEC_H
#define ITAPI_RSEC_H

#include <glib.h>
#include <stdint.h>

/** @brief One thread's read-section record. */
typedef struct rsec_reader {
  uint64_t seq;               /**< odd while the thread is inside a section */
  unsigned depth;             /**< nesting; the owning thread's only */
  gboolean fence;             /**< each entry fences: the kernel has no membarrier */
  struct rsec_reader *next;   /**< every record, for rsec_sync() */
} rsec_reader_t;

/** Read on every entry: initial-exec, a load relative to the thread
 * pointer instead of a __tls_get_addr call (one pointer of the static TLS
 * glibc keeps spare for a library loaded later). */
#define RSEC_TLS __attribute__((tls_model("initial-exec")))

/** @brief This thread's record, or NULL before its first section. */
extern __thread rsec_reader_t *rsec_self RSEC_TLS;

/**
 * @brief Makes this thread's record (its first section): a record a thread
 *        that exited gave back, or a new one.
 * @return the record, also in ::rsec_self
 */
rsec_reader_t *rsec_reader_new(void);

/**
 * @brief Waits until every read section of another thread that was open
 *        when this call started has ended.
 */
void rsec_sync(void);

/** @brief Whether this thread is inside a read section. */
gboolean rsec_in_section(void);

/** @brief Opens (or nests) this thread's read section. */
static inline __attribute__((always_inline)) void
rsec_enter(void)
{
  rsec_reader_t *r = rsec_self;
  if (G_UNLIKELY(r == NULL))
    r = rsec_reader_new();
  if (r->depth++ == 0) {
    __atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELAXED);
    /* Pairs with rsec_sync()'s barrier: the lookups below see an
     * unpublished object gone, or rsec_sync() sees this section open.
     * With membarrier(2) rsec_sync() makes this thread pass a full
     * barrier itself, so the store and the lookups need only stay in
     * this order in the code. */
    if (G_UNLIKELY(r->fence))
      __atomic_thread_fence(__ATOMIC_SEQ_CST);
    else
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
  }
}

/** @brief Closes the read section rsec_enter() opened (the outermost one ends it). */
static inline __attribute__((always_inline)) void
rsec_exit(void)
{
  rsec_reader_t *r = rsec_self;
  if (--r->depth == 0)
    __atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELEASE);
}

static inline void rsec_scope_end(int *unused) { (void) unused; rsec_exit(); }
/** A read section from here to the end of the enclosing block. */
#define RSEC_SCOPE() \
  __attribute__((cleanup(rsec_scope_end))) int rsec_scope_ G_GNUC_UNUSED = (rsec_enter(), 0)

#endif
