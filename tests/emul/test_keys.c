/*
 * vp/emul's keys (emul_mem.c, emul_dev.c EMUL_KEY_LAYOUT): 32 bits on both
 * personalities, a 24-bit table index above an 8-bit tag.  A slot freed
 * is the next one taken, so registering and freeing one region over and
 * over reuses one slot: its tags must go through all 255 values before
 * one comes back, so that a stale key of the slot stays refused for the
 * slot's next 254 keys.
 *
 * SPDX-License-Identifier: MIT
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <glib.h>
#include <it_api.h>

#define TAGS 255

static void
test_slot_cycle(gconstpointer data)
{
  const char *ia_name = data;
  g_test_summary("one region registered and freed 255 times in a row keeps its slot (the "
                 "context's index, above the low 8 bits) and gets 255 distinct contexts, each "
                 "within 32 bits");
  it_ia_handle_t ia;
  it_pz_handle_t pz;
  g_assert_cmpint(it_ia_create(ia_name, 2, 1, &ia), ==, IT_SUCCESS);
  g_assert_cmpint(it_pz_create(ia, &pz), ==, IT_SUCCESS);
  g_autofree uint8_t *buf = g_malloc0(4096);
  it_rmr_context_t ctx[TAGS];
  for (int i = 0; i < TAGS; i++) {
    it_lmr_handle_t lmr;
    g_assert_cmpint(it_lmr_create(pz, buf, NULL, 4096, IT_ADDR_MODE_ABSOLUTE,
                                  IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_LMR_FLAG_NONE, 0, &lmr,
                                  &ctx[i]),
                    ==, IT_SUCCESS);
    g_assert_cmphex(ctx[i], <=, UINT32_MAX);
    g_assert_cmphex(ctx[i] >> 8, ==, ctx[0] >> 8);
    for (int j = 0; j < i; j++)
      g_assert_cmphex(ctx[i], !=, ctx[j]);
    g_assert_cmpint(it_lmr_free(lmr), ==, IT_SUCCESS);
  }
  g_test_message("%s: first context 0x%" G_GINT64_MODIFIER "x, second 0x%" G_GINT64_MODIFIER "x",
                 ia_name, (guint64) ctx[0], (guint64) ctx[1]);
  g_assert_cmpint(it_pz_free(pz), ==, IT_SUCCESS);
  g_assert_cmpint(it_ia_free(ia), ==, IT_SUCCESS);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_setenv("ITAPI_PROVIDER", "emul", FALSE);
  g_test_add_data_func("/emul/keys/slot-cycle/ib", "emul0", test_slot_cycle);
  g_test_add_data_func("/emul/keys/slot-cycle/iwarp", "emul-iw0", test_slot_cycle);
  return g_test_run();
}
