/*
 * RNIC-PI loader: built-ins, modules from ITAPI_PROVIDER_PATH, refusal with
 * a reason (ABI, missing symbol, probe), ITAPI_PROVIDER selection, and
 * not-supported stubs for operations a short table lacks.  The registry is
 * process-wide, so each case runs in a subprocess with its own environment.
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
#include <string.h>

#include "kal.h"
#include "rnicpi_registry.h"

static const rnicpi_entry_t *
find(const char *name)
{
  for (size_t i = 0; i < rnicpi_registry_count(); i++)
    if (strcmp(rnicpi_registry_get(i)->name, name) == 0)
      return rnicpi_registry_get(i);
  return NULL;
}

static void
test_builtin(void)
{
  g_test_summary("the built-in emul provider is registered, usable, with complete tables");
  const rnicpi_entry_t *e = find("emul");
  g_assert_nonnull(e);
  g_assert_false(e->refused);
  g_assert_cmpstr(e->origin, ==, "built-in");
  g_assert_nonnull(e->prov->cm->listen);
  g_assert_nonnull(e->prov->sock->handoff);
  g_assert_cmpuint(e->prov->device->size, ==, sizeof(rnicpi_device_ops_t));
  g_assert_nonnull(kal_iface_find("emul0"));
  g_assert_null(rnicpi_registry_get(rnicpi_registry_count()));
}

static void
test_bad_abi(void)
{
  g_test_summary("a module built for another ABI major is refused, with the reason logged");
  if (g_test_subprocess()) {
    g_setenv("ITAPI_PROVIDER_PATH", BAD_ABI_MODULE, TRUE);
    const rnicpi_entry_t *e = find("badabi");
    g_assert_nonnull(e);
    g_assert_true(e->refused);
    g_assert_null(e->prov);
    g_assert_nonnull(strstr(e->reason, "ABI 99.0"));
    g_assert_false(find("emul")->refused);
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stderr("*badabi*refused*ABI 99.0*rebuild*");
}

static void
test_not_a_provider(void)
{
  g_test_summary("a shared object without the descriptor symbol is refused by name");
  if (g_test_subprocess()) {
    g_setenv("ITAPI_PROVIDER_PATH", NOT_A_PROVIDER, TRUE);
    rnicpi_registry_load();
    gboolean seen = FALSE;
    for (size_t i = 0; i < rnicpi_registry_count(); i++) {
      const rnicpi_entry_t *e = rnicpi_registry_get(i);
      if (strstr(e->origin, "libbadabi") == NULL && strcmp(e->origin, "built-in") != 0) {
        g_assert_true(e->refused);
        g_assert_nonnull(strstr(e->reason, "rnicpi_provider_v1"));
        seen = TRUE;
      }
    }
    g_assert_true(seen);
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
}

static void
test_short_tables(void)
{
  g_test_summary("a provider with shorter tables loads; absent ops return RNICPI_ENOTSUP");
  if (g_test_subprocess()) {
    g_setenv("ITAPI_PROVIDER_PATH", SHORT_MODULE, TRUE);
    const rnicpi_entry_t *e = find("short");
    g_assert_nonnull(e);
    g_assert_false(e->refused);
    const rnicpi_provider_t *p = e->prov;
    rnicpi_upcalls_t up = { 0 };
    rnicpi_dev_t *dev = NULL;
    g_assert_cmpint(p->device->open("short0", &up, NULL, &dev), ==, RNICPI_OK);
    rnicpi_caps_t caps;
    g_assert_cmpint(p->device->query(dev, &caps), ==, RNICPI_ENOTSUP);
    rnicpi_pd_t *pd = NULL;
    g_assert_cmpint(p->device->pd_alloc(dev, &pd), ==, RNICPI_ENOTSUP);
    rnicpi_wc_t wc;
    g_assert_cmpint(p->data->poll_cq(NULL, &wc, 1), ==, 0);
    g_assert_cmpint(p->data->post_send(NULL, NULL), ==, RNICPI_ENOTSUP);
    /* ABI 1.10: no allocator of its own, so the access layer's memory. */
    void *mem = NULL;
    uint64_t mem_ctx = 0;
    g_assert_cmpint(p->mem->mem_alloc(dev, 4096, &mem, &mem_ctx), ==, RNICPI_ENOTSUP);
    g_assert_null(mem);
    p->mem->mem_free(NULL, 0, 0);
    /* ABI 1.11: no descriptors to sleep on: the caller waits for
     * cq_notify alone, and cq_wait_end is a harmless no-op. */
    struct pollfd pfd[4];
    uint32_t npfd = G_N_ELEMENTS(pfd);
    g_assert_cmpint(p->data->cq_wait_begin(NULL, pfd, &npfd), ==, RNICPI_ENOTSUP);
    g_assert_cmpuint(npfd, ==, 0);
    p->data->cq_wait_end(NULL, pfd, 0);
    /* ABI 1.12: no advice; the access layer's message goes without. */
    char advice[64] = "";
    g_assert_cmpint(p->device->cap_advice(dev, RNICPI_CAP_ATOMICS, advice, sizeof(advice)), ==, RNICPI_ENOTSUP);
    g_assert_cmpstr(advice, ==, "");
    g_assert_cmpint(p->cm->listen(dev, 1, 0, NULL), ==, RNICPI_ENOTSUP);
    g_assert_cmpint(p->sock->handoff(NULL, -1, false, NULL), ==, RNICPI_ENOTSUP);
    p->device->close(dev); /* the stub, not the table's abort() past its size */
    /* A device that cannot describe itself is no interface. */
    g_assert_null(kal_iface_find("short0"));
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stderr("*interface 'short0' of provider 'short' left out*");
}

static void
test_probe_fails(void)
{
  g_test_summary("a provider whose probe fails is refused with the probe's status");
  if (g_test_subprocess()) {
    g_setenv("ITAPI_PROVIDER_PATH", SHORT_MODULE, TRUE);
    g_setenv("SHORT_PROVIDER_FAIL", "1", TRUE);
    const rnicpi_entry_t *e = find("short");
    g_assert_nonnull(e);
    g_assert_true(e->refused);
    g_assert_nonnull(strstr(e->reason, "RNICPI_EIO"));
    g_assert_null(kal_iface_find("short0"));
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stderr("*short*refused*probe failed*");
}

static void
test_select(void)
{
  g_test_summary("ITAPI_PROVIDER restricts the providers used; others are listed as not selected");
  if (g_test_subprocess()) {
    g_setenv("ITAPI_PROVIDER", "short", TRUE);
    g_setenv("ITAPI_PROVIDER_PATH", SHORT_MODULE, TRUE);
    const rnicpi_entry_t *e = find("emul");
    g_assert_true(e->refused);
    g_assert_nonnull(strstr(e->reason, "ITAPI_PROVIDER"));
    g_assert_false(find("short")->refused);
    g_assert_null(kal_iface_find("emul0"));
    g_assert_cmpuint(kal_iface_count(), ==, 0);
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
}

static void
test_emul_module(void)
{
  g_test_summary("the installed emul module loads explicitly and duplicates the built-in by name");
  const rnicpi_entry_t *e = NULL;
  rnicpi_status_t st = rnicpi_registry_add_module(EMUL_MODULE, &e);
  g_assert_cmpint(st, ==, RNICPI_EINVAL);
  g_assert_true(e->refused);
  g_assert_nonnull(strstr(e->reason, "already registered"));
  st = rnicpi_registry_add_module("/nonexistent/libnothing.so", &e);
  g_assert_cmpint(st, ==, RNICPI_ENOENT);
  g_assert_nonnull(strstr(e->reason, "cannot load"));
}

static void
test_module_replaces_builtin(void)
{
  g_test_summary("a module on ITAPI_PROVIDER_PATH replaces the built-in of its name and serves its devices");
  if (g_test_subprocess()) {
    g_setenv("ITAPI_PROVIDER_PATH", EMUL_MODULE, TRUE);
    rnicpi_registry_load();
    const rnicpi_entry_t *mod = NULL, *builtin = NULL;
    for (size_t i = 0; i < rnicpi_registry_count(); i++) {
      const rnicpi_entry_t *e = rnicpi_registry_get(i);
      if (strcmp(e->name, "emul") == 0) {
        if (strcmp(e->origin, "built-in") == 0)
          builtin = e;
        else
          mod = e;
      }
    }
    g_assert_nonnull(mod);
    g_assert_nonnull(builtin);
    g_assert_false(mod->refused);
    g_assert_cmpstr(mod->origin, ==, EMUL_MODULE);
    g_assert_true(builtin->refused);
    g_assert_true(kal_iface_find("emul0")->prov == mod->prov);
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
}

static void
test_status_names(void)
{
  g_test_summary("every RNIC-PI status and capability has a name and a message");
  for (int s = 0; s < RNICPI_STATUS_COUNT; s++) {
    g_assert_true(g_str_has_prefix(rnicpi_status_name(s), "RNICPI_"));
    g_assert_cmpuint(strlen(rnicpi_status_message(s)), >, 3);
  }
  g_assert_cmpstr(rnicpi_status_name(RNICPI_EACCES), ==, "RNICPI_EACCES");
  g_assert_cmpstr(rnicpi_status_name(999), ==, "RNICPI_UNKNOWN");
  g_assert_cmpstr(rnicpi_cap_name(RNICPI_CAP_READ_SINK_REMOTE_WRITE), ==, "read-sink-needs-remote-write");
  g_assert_cmpstr(rnicpi_cap_name(3), ==, "unknown");
  g_assert_cmpstr(rnicpi_cap_name(RNICPI_CAP_MW_NEEDS_VA_REGION), ==, "mw-needs-va-region");
}

static void
test_caps_complete(void)
{
  g_test_summary("rnicpi_caps_complete: a provider older than 1.12 has \"mw-needs-va-region\" on its iWARP "
                 "devices, the rule the transport meant until then; a record of 1.12 is left as it is");
  rnicpi_provider_t prov = { .abi_major = RNICPI_ABI_MAJOR, .abi_minor = 11, .name = "old" };
  rnicpi_caps_t iw = { .size = sizeof(iw), .transport = RNICPI_TRANSPORT_IWARP, .features = RNICPI_CAP_RC };
  rnicpi_caps_t ib = { .size = sizeof(ib), .transport = RNICPI_TRANSPORT_IB, .features = RNICPI_CAP_RC };
  rnicpi_caps_t c = iw;
  rnicpi_caps_complete(&prov, &c);
  g_assert_cmphex(c.features, ==, RNICPI_CAP_RC | RNICPI_CAP_MW_NEEDS_VA_REGION);
  c = ib;
  rnicpi_caps_complete(&prov, &c);
  g_assert_cmphex(c.features, ==, RNICPI_CAP_RC);
  /* 1.12 says it with the bit: an iWARP device without it has no such rule. */
  prov.abi_minor = 12;
  c = iw;
  rnicpi_caps_complete(&prov, &c);
  g_assert_cmphex(c.features, ==, RNICPI_CAP_RC);
  c = ib;
  c.features |= RNICPI_CAP_MW_NEEDS_VA_REGION;
  rnicpi_caps_complete(&prov, &c);
  g_assert_cmphex(c.features, ==, RNICPI_CAP_RC | RNICPI_CAP_MW_NEEDS_VA_REGION);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/rnicpi/loader/builtin", test_builtin);
  g_test_add_func("/rnicpi/loader/refuse-abi", test_bad_abi);
  g_test_add_func("/rnicpi/loader/refuse-no-symbol", test_not_a_provider);
  g_test_add_func("/rnicpi/loader/refuse-probe", test_probe_fails);
  g_test_add_func("/rnicpi/loader/short-tables", test_short_tables);
  g_test_add_func("/rnicpi/loader/select", test_select);
  g_test_add_func("/rnicpi/loader/module-by-path", test_emul_module);
  g_test_add_func("/rnicpi/loader/module-replaces-builtin", test_module_replaces_builtin);
  g_test_add_func("/rnicpi/status/names", test_status_names);
  g_test_add_func("/rnicpi/caps/complete", test_caps_complete);
  return g_test_run();
}
