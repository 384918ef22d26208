/*
 * itx_provider_count(), itx_provider_get(), itx_provider_refused_devices()
 * and itx_interface_caps(): the provider registry read through the public
 * library alone, as itapi-info does.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include <glib.h>
#include <it_api.h>
#include <itx.h>

/* Every entry reads back whole: a usable one with its version, a refused
 * one with its reason. */
static void
test_list(void)
{
  g_test_summary("itx: every provider entry has a name and an origin; a usable one its "
                 "version and description, a refused one its reason");
  size_t n = itx_provider_count();
  if (n == 0) {
    g_test_skip("no provider in this build");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    itx_provider_info_t p;
    g_assert_cmpint(itx_provider_get(i, &p), ==, IT_SUCCESS);
    g_assert_nonnull(p.name);
    g_assert_cmpstr(p.origin, !=, "");
    if (p.usable) {
      g_assert_nonnull(p.version);
      g_assert_nonnull(p.description);
      g_assert_cmpstr(p.reason, ==, "");
    } else {
      g_assert_null(p.version);
      g_assert_cmpstr(p.reason, !=, "");
    }
  }
}

static void
test_bad_args(void)
{
  g_test_summary("itx: an index past the registry is IT_ERR_RANGE, a NULL output IT_ERR_FAULT");
  itx_provider_info_t p;
  itx_refused_device_t d[4];
  size_t n = G_N_ELEMENTS(d);
  itx_caps_t caps;
  g_assert_cmpint(itx_provider_get(itx_provider_count(), &p), ==, IT_ERR_RANGE);
  g_assert_cmpint(itx_provider_get(0, NULL), ==, IT_ERR_FAULT);
  g_assert_cmpint(itx_provider_refused_devices(itx_provider_count(), d, &n), ==, IT_ERR_RANGE);
  g_assert_cmpint(itx_provider_refused_devices(0, NULL, &n), ==, IT_ERR_FAULT);
  g_assert_cmpint(itx_provider_refused_devices(0, d, NULL), ==, IT_ERR_FAULT);
  g_assert_cmpint(itx_interface_caps(NULL, &caps), ==, IT_ERR_FAULT);
  g_assert_cmpint(itx_interface_caps("emul0", NULL), ==, IT_ERR_FAULT);
  g_assert_cmpint(itx_interface_caps("no-such-interface", &caps), ==, IT_ERR_INVALID_NAME);
}

/* Each interface of it_interface_list() has a record, with room for at
 * least one queue pair. */
static void
test_caps(void)
{
  g_test_summary("itx: itx_interface_caps() gives each listed interface's features and limits, "
                 "every feature bit with its name");
  it_interface_t ifs[32];
  size_t n = G_N_ELEMENTS(ifs), total = 0;
  it_interface_list(ifs, &n, &total);
  if (n == 0) {
    g_test_skip("no interface on this host");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    itx_caps_t caps;
    memset(&caps, 0, sizeof(caps));
    g_assert_cmpint(itx_interface_caps(ifs[i].name, &caps), ==, IT_SUCCESS);
    g_assert_cmpuint(caps.max_qp, >, 0);
    g_assert_cmpuint(caps.max_qp_wr, >, 0);
    g_assert_cmpuint(caps.max_cqe, >, 0);
    g_assert_cmpuint(caps.max_msg_size, >, 0);
    g_assert_cmpuint(caps.num_ports, >, 0);
    for (int b = 0; b < 64; b++)
      if (caps.features & (UINT64_C(1) << b))
        g_assert_cmpstr(itx_feature_name(UINT64_C(1) << b), !=, "unknown");
  }
}

static void
test_feature_names(void)
{
  g_test_summary("itx: itx_feature_name() names ITX_FEATURE_IMMEDIATE \"immediate-data\", and "
                 "answers \"unknown\" for no bit, two bits and a bit without a name");
  g_assert_cmpstr(itx_feature_name(ITX_FEATURE_IMMEDIATE), ==, "immediate-data");
  g_assert_cmpstr(itx_feature_name(0), ==, "unknown");
  g_assert_cmpstr(itx_feature_name(ITX_FEATURE_IMMEDIATE | 1), ==, "unknown");
  g_assert_cmpstr(itx_feature_name(UINT64_C(1) << 63), ==, "unknown");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/itx/provider/list", test_list);
  g_test_add_func("/itx/provider/bad-args", test_bad_args);
  g_test_add_func("/itx/provider/interface-caps", test_caps);
  g_test_add_func("/itx/provider/feature-names", test_feature_names);
  return g_test_run();
}
