/*
 * The access layer's handle table and read sections (ual/ual_handle.c),
 * built alone with a table of 8 slots and 3-bit generations, so that
 * running out of handles and generations that would wrap can be reached.
 *
 * SPDX-License-Identifier: MIT
 */
#include "ual.h"

#define SLOTS (UAL_MAX_CHUNKS * UAL_CHUNK_SLOTS)

static void
test_exhaustion(void)
{
  g_test_summary("Handles run out as a status: every slot but slot 0 is handed out, the next alloc "
                 "returns FALSE, and a released slot serves again under a new generation");
  ual_obj_t objs[SLOTS];
  memset(objs, 0, sizeof(objs));
  unsigned n = 0;
  while (n < SLOTS && ual_handle_alloc(&objs[n], IT_HANDLE_TYPE_PZ, NULL))
    n++;
  g_assert_cmpuint(n, ==, SLOTS - 1);
  ual_obj_t extra = { 0 };
  g_assert_false(ual_handle_alloc(&extra, IT_HANDLE_TYPE_PZ, NULL));
  g_assert_cmpuint(extra.handle, ==, 0);
  for (unsigned i = 0; i < n; i++)
    g_assert_true(ual_handle_get((void *) (uintptr_t) objs[i].handle, IT_HANDLE_TYPE_PZ) == &objs[i]);
  uint64_t old = objs[3].handle;
  ual_handle_release(&objs[3]);
  g_assert_null(ual_handle_get((void *) (uintptr_t) old, IT_HANDLE_TYPE_PZ));
  g_assert_true(ual_handle_alloc(&extra, IT_HANDLE_TYPE_PZ, NULL));
  g_assert_cmpuint((uint32_t) extra.handle, ==, (uint32_t) old);
  g_assert_cmpuint(extra.handle, !=, old);
  g_assert_null(ual_handle_get((void *) (uintptr_t) old, IT_HANDLE_TYPE_PZ));
  ual_handle_release(&extra);
  for (unsigned i = 0; i < n; i++)
    if (i != 3)
      ual_handle_release(&objs[i]);
}

static void
test_generation_wrap(void)
{
  g_test_summary("A slot whose generations are spent is retired, not reused: over many create/free "
                 "cycles no handle value is handed out twice and every stale handle stays refused; once "
                 "every slot is retired, alloc returns FALSE");
  GHashTable *seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  GArray *stale = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  unsigned cycles = 0;
  for (;;) {
    ual_obj_t o = { 0 };
    if (!ual_handle_alloc(&o, IT_HANDLE_TYPE_EP, NULL))
      break;
    g_assert_true(ual_handle_get((void *) (uintptr_t) o.handle, IT_HANDLE_TYPE_EP) == &o);
    uint64_t *key = g_new(uint64_t, 1);
    *key = o.handle;
    if (!g_hash_table_add(seen, key))
      g_error("handle 0x%" G_GINT64_MODIFIER "x handed out twice after %u cycles", o.handle, cycles);
    g_array_append_val(stale, o.handle);
    ual_handle_kill(&o);
    g_assert_null(ual_handle_get((void *) (uintptr_t) *key, IT_HANDLE_TYPE_EP));
    ual_handle_release(&o);
    for (unsigned i = 0; i < stale->len; i++)
      g_assert_null(ual_handle_any((void *) (uintptr_t) g_array_index(stale, uint64_t, i)));
    g_assert_cmpuint(++cycles, <, 10000);
  }
  /* Each slot served each of its generations once, then retired: 7 each,
   * less the ones /ual/handle/exhaustion spent (two at most per slot). */
  g_assert_cmpuint(ual_handle_retired(), ==, SLOTS - 1);
  g_assert_cmpuint(g_hash_table_size(seen), >=, (SLOTS - 1) * ((1u << UAL_GEN_BITS) - 3));
  g_assert_cmpuint(g_hash_table_size(seen), <=, (SLOTS - 1) * ((1u << UAL_GEN_BITS) - 1));
  g_hash_table_destroy(seen);
  g_array_free(stale, TRUE);
}

typedef struct {
  gint in, release, out;
} holder_t;

static gpointer
hold_section(gpointer data)
{
  holder_t *h = data;
  rsec_enter();
  rsec_enter(); /* nested: only the outermost exit ends it */
  g_atomic_int_set(&h->in, 1);
  while (!g_atomic_int_get(&h->release))
    g_usleep(1000);
  rsec_exit();
  g_usleep(20000);
  g_atomic_int_set(&h->out, 1);
  rsec_exit();
  return NULL;
}

static void
test_grace_period(void)
{
  g_test_summary("rsec_sync returns at once with no section open, and waits for a section another thread "
                 "opened before it (nested sections end with the outermost exit)");
  gint64 t0 = g_get_monotonic_time();
  rsec_sync();
  g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);
  holder_t h = { 0 };
  GThread *t = g_thread_new("holder", hold_section, &h);
  while (!g_atomic_int_get(&h.in))
    g_usleep(1000);
  g_atomic_int_set(&h.release, 1);
  rsec_sync();
  g_assert_cmpint(g_atomic_int_get(&h.out), ==, 1);
  g_thread_join(t);
  /* A section of this thread's own does not hold its own grace period. */
  rsec_enter();
  g_assert_true(rsec_in_section());
  rsec_sync();
  rsec_exit();
  g_assert_false(rsec_in_section());
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ual/handle/exhaustion", test_exhaustion);
  g_test_add_func("/ual/handle/generation-wrap", test_generation_wrap);
  g_test_add_func("/ual/handle/grace-period", test_grace_period);
  return g_test_run();
}
