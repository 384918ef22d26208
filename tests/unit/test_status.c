/*
 * Status names and messages (itx_status_name, itx_status_message) come from
 * the one list, cover every value, and stay in bounds for any input.
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
#include <string.h>

#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

static void
test_all_named(void)
{
  g_test_summary("every status 0..106 has a distinct IT_ name and a sentence");
  GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (int s = 0; s <= IT_ERR_WAITER_LIMIT; s++) {
    const char *n = itx_status_name((it_status_t) s);
    g_assert_true(g_str_has_prefix(n, "IT_"));
    g_assert_false(g_hash_table_contains(seen, n));
    g_hash_table_add(seen, (gpointer) n);
    g_assert_cmpuint(strlen(itx_status_message((it_status_t) s)), >, 5);
  }
  g_hash_table_unref(seen);
  g_assert_cmpstr(itx_status_name(IT_ERR_INVALID_HANDLE), ==, "IT_ERR_INVALID_HANDLE");
  g_assert_cmpstr(itx_status_name(IT_SUCCESS), ==, "IT_SUCCESS");
  g_assert_cmpstr(itx_status_name(IT_ERR_WAITER_LIMIT), ==, "IT_ERR_WAITER_LIMIT");
}

static void
test_out_of_range(void)
{
  g_test_summary("values outside the list give IT_ERR_UNKNOWN, never a stray pointer");
  g_assert_cmpstr(itx_status_name((it_status_t) (IT_ERR_WAITER_LIMIT + 1)), ==, "IT_ERR_UNKNOWN");
  g_assert_cmpstr(itx_status_name((it_status_t) -1), ==, "IT_ERR_UNKNOWN");
  g_assert_cmpstr(itx_status_message((it_status_t) 100000), ==, "unknown status");
}

static void
test_event_names(void)
{
  g_test_summary("event numbers have names; unknown ones say so");
  g_assert_cmpstr(itx_event_name(IT_CM_MSG_CONN_ESTABLISHED_EVENT), ==, "IT_CM_MSG_CONN_ESTABLISHED_EVENT");
  g_assert_cmpstr(itx_event_name(IT_DTO_RDMA_READ_CMPL_EVENT), ==, "IT_DTO_RDMA_READ_CMPL_EVENT");
  g_assert_cmpstr(itx_event_name((it_event_type_t) 0x7777), ==, "IT_EVENT_UNKNOWN");
}

static void
test_byte_order(void)
{
  g_test_summary("it_hton64 puts the most significant byte first");
  uint64_t v = it_hton64(UINT64_C(0x0102030405060708));
  const unsigned char *b = (const unsigned char *) &v;
  for (int i = 0; i < 8; i++)
    g_assert_cmpuint(b[i], ==, (unsigned) (i + 1));
  g_assert_cmpuint(it_ntoh64(v), ==, UINT64_C(0x0102030405060708));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/itapi/status/all-named", test_all_named);
  g_test_add_func("/itapi/status/out-of-range", test_out_of_range);
  g_test_add_func("/itapi/status/event-names", test_event_names);
  g_test_add_func("/itapi/byte-order", test_byte_order);
  return g_test_run();
}
