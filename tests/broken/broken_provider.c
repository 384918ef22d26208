/*
 * Deliberately broken RNIC-PI providers, built outside the provider tree
 * from the emul sources, for the certification runner to catch:
 *   BROKEN_MODE 1, "brokenbounds": every region is registered one page longer
 *     than asked, so an RDMA Write past the end lands instead of failing;
 *   BROKEN_MODE 2, "lossycq": the CQ loses every seventh completion.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "emul.h"

static rnicpi_mem_ops_t mem_ops;
static rnicpi_data_ops_t data_ops;

#if BROKEN_MODE == 1
#define BROKEN_NAME "brokenbounds"
static rnicpi_status_t
broken_mr_reg(rnicpi_pd_t *pd, const rnicpi_mr_attr_t *attr, rnicpi_mr_t **mr)
{
  rnicpi_mr_attr_t a = *attr;
  a.length += 4096;
  return emul_mem_ops.mr_reg(pd, &a, mr);
}
#else
#define BROKEN_NAME "lossycq"
static int
lossy_poll_cq(rnicpi_cq_t *cq, rnicpi_wc_t *wc, int n)
{
  static int seen;
  int got = emul_data_ops.poll_cq(cq, wc, n), kept = 0;
  for (int i = 0; i < got; i++)
    if (++seen % 7 != 0)
      wc[kept++] = wc[i];
  return kept;
}
#endif

static rnicpi_status_t
broken_probe(void)
{
  mem_ops = emul_mem_ops;
  data_ops = emul_data_ops;
#if BROKEN_MODE == 1
  mem_ops.mr_reg = broken_mr_reg;
#else
  data_ops.poll_cq = lossy_poll_cq;
#endif
  return RNICPI_OK;
}

__attribute__((visibility("default"))) const rnicpi_provider_t rnicpi_provider_v1 = {
  .abi_major = RNICPI_ABI_MAJOR,
  .abi_minor = RNICPI_ABI_MINOR,
  .name = BROKEN_NAME,
  .version = "0",
  .description = "deliberately broken emul, for certification tests",
  .probe = broken_probe,
  .device = &emul_device_ops,
  .mem = &mem_ops,
  .queue = &emul_queue_ops,
  .data = &data_ops,
  .cm = &emul_cm_ops,
};
