/*
 * vp/emul with its capability record changed where the access layer must
 * follow the record and not the transport (tests/emul/test_cap_rule.c):
 * RNICPI_CAP_MW_NEEDS_VA_REGION flipped on every device, so emul-ib0 (an
 * InfiniBand device) has it and emul-iw0 (an iWARP one) has not; and
 * advice of its own for every capability, which the access layer's
 * messages must quote.  The devices themselves are emul's, unchanged.
 *
 * SPDX-License-Identifier: MIT
 */
#include "emul.h"

static rnicpi_device_ops_t device_ops;

static rnicpi_status_t
capflip_query(rnicpi_dev_t *dev, rnicpi_caps_t *caps)
{
  rnicpi_status_t st = emul_device_ops.query(dev, caps);
  if (st == RNICPI_OK)
    caps->features ^= RNICPI_CAP_MW_NEEDS_VA_REGION;
  return st;
}

static rnicpi_status_t
capflip_cap_advice(rnicpi_dev_t *dev, uint64_t cap, char *advice, size_t len)
{
  (void) dev;
  g_snprintf(advice, len, "capflip advises CAPFLIP_CAP_%" G_GINT64_MODIFIER "x=1", (guint64) cap);
  return RNICPI_OK;
}

static rnicpi_status_t
capflip_probe(void)
{
  device_ops = emul_device_ops;
  device_ops.query = capflip_query;
  device_ops.cap_advice = capflip_cap_advice;
  return RNICPI_OK;
}

__attribute__((visibility("default"))) const rnicpi_provider_t rnicpi_provider_v1 = {
  .abi_major = RNICPI_ABI_MAJOR,
  .abi_minor = RNICPI_ABI_MINOR,
  .name = "capflip",
  .version = "0",
  .description = "emul with capability bits flipped, for tests of the access layer",
  .probe = capflip_probe,
  .device = &device_ops,
  .mem = &emul_mem_ops,
  .queue = &emul_queue_ops,
  .data = &emul_data_ops,
  .cm = &emul_cm_ops,
  .srq = &emul_srq_ops,
  .mw = &emul_mw_ops,
  .ud = &emul_ud_ops,
};
