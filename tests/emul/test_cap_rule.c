/*
 * The access layer follows the provider's capability record, not the
 * transport nor the provider's name (issue 26): run over "capflip"
 * (tests/emul/capflip_provider.c), vp/emul with RNICPI_CAP_MW_NEEDS_VA_REGION
 * flipped and advice of its own, where a rule read from the transport, or
 * a message naming emul's variables, gives the wrong answer.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include <glib.h>

#include "conf.h"
#include "itx.h"
#include "rnicpi.h"

/* it_rmr_link of a window over a relatively addressed LMR, on the
 * unconnected EP of an IA of @iface: what the access layer answers. */
static it_status_t
link_relative(const char *iface)
{
  conf_side_t s;
  conf_side_open_on(&s, iface, NULL);
  conf_buf_t b;
  conf_buf_new(&s, &b, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_RELATIVE);
  it_rmr_handle_t rmr;
  conf_ok(it_rmr_create20(s.pz, IT_RMR_TYPE_NARROW, &rmr));
  it_rmr_context_t ctx = 0;
  /* addr is an offset into a relatively addressed LMR. */
  it_status_t st = it_rmr_link(rmr, b.lmr, (void *) (uintptr_t) 64, 256, IT_ADDR_MODE_ABSOLUTE,
                               IT_PRIV_REMOTE_WRITE, s.ep, 1, IT_COMPLETION_FLAG, &ctx);
  g_test_message("%s: %s (%s)", iface, itx_status_name(st), itx_error_detail());
  conf_ok(it_rmr_free(rmr));
  conf_buf_free(&b);
  conf_side_close(&s);
  return st;
}

static void
test_bit_on_ib(void)
{
  g_test_summary("emul-ib0 (transport InfiniBand) with capability \"mw-needs-va-region\": it_rmr_link "
                 "over a relatively addressed LMR is refused with IT_ERR_INVALID_ADDR_MODE, the detail "
                 "naming the capability");
  g_assert_cmpstr(itx_status_name(link_relative("emul-ib0")), ==, itx_status_name(IT_ERR_INVALID_ADDR_MODE));
  g_assert_nonnull(strstr(itx_error_detail(), "mw-needs-va-region"));
}

static void
test_bit_off_iwarp(void)
{
  g_test_summary("emul-iw0 (transport iWARP) without capability \"mw-needs-va-region\": the access layer "
                 "applies no rule to the relatively addressed LMR; the link goes on to the EP's state "
                 "(IT_ERR_INVALID_EP_STATE: not connected)");
  g_assert_cmpstr(itx_status_name(link_relative("emul-iw0")), ==, itx_status_name(IT_ERR_INVALID_EP_STATE));
}

static void
test_advice(void)
{
  g_test_summary("a refusal for a capability the IA lacks (IT_PRIV_ATOMIC on emul-iw0, no atomics) "
                 "quotes the provider's advice (cap_advice, RNIC-PI 1.12), and names none of emul's "
                 "variables itself");
  if (!conf_require(g_getenv("ITAPI_EMUL_RFC7306") == NULL, "ITAPI_EMUL_RFC7306 unset (emul-iw0 without atomics)"))
    return;
  conf_side_t s;
  conf_side_open_on(&s, "emul-iw0", NULL);
  static char mem[4096] __attribute__((aligned(4096)));
  it_lmr_handle_t lmr;
  it_rmr_context_t ctx;
  g_assert_cmpstr(itx_status_name(it_lmr_create(s.pz, mem, NULL, sizeof(mem), IT_ADDR_MODE_ABSOLUTE,
                                                IT_PRIV_LOCAL | IT_PRIV_ATOMIC, IT_LMR_FLAG_NONE, 0, &lmr,
                                                &ctx)),
                  ==, itx_status_name(IT_ERR_INVALID_PRIVS));
  const char *d = itx_error_detail();
  g_test_message("%s", d);
  g_assert_nonnull(strstr(d, "emul-iw0"));
  g_autofree char *advice = g_strdup_printf("; capflip advises CAPFLIP_CAP_%" G_GINT64_MODIFIER "x=1",
                                            (guint64) RNICPI_CAP_ATOMICS);
  g_assert_nonnull(strstr(d, advice));
  g_assert_null(strstr(d, "ITAPI_EMUL_"));
  conf_side_close(&s);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/caps/mw-needs-va-region/ib-with-bit", test_bit_on_ib);
  g_test_add_func("/caps/mw-needs-va-region/iwarp-without-bit", test_bit_off_iwarp);
  g_test_add_func("/caps/advice/quoted", test_advice);
  return g_test_run();
}
