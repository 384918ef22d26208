/*
 * Handles: validated, generation-checked handles whose objects are
 * reclaimed only when no thread can still be using them.
 *
 * A handle is not a pointer.  Its value packs the object type (8 bits), a
 * generation (UAL_GEN_BITS) and a slot index (32 bits).  A lookup (inline,
 * in ual.h) checks the type, that the slot exists and holds an object
 * whose own handle (type and generation included) is the value, so a
 * freed, foreign or garbage value is refused without being dereferenced.
 * Slots live in fixed chunks that never move, so a lookup takes no lock.
 *
 * A lookup without the object lock is made inside a read section
 * (util/rsec.h).  Freeing an object first unpublishes it
 * (ual_handle_kill: no lookup finds it any more), then waits for every
 * read section that was open at that moment to close (rsec_sync), and
 * only then destroys it.
 *
 * A slot whose generation would wrap is retired instead of reused, so no
 * stale handle ever names a live object; running out of slots is a status
 * (ual_handle_alloc returns FALSE), never an abort.
 *
 * This file needs nothing of the other ual/ files but util/rsec.c (a unit
 * test builds the two alone with small limits).
 *
 * SPDX-License-Identifier: MIT
 */
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

