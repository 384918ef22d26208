/* A provider module built for another RNIC-PI ABI major: must be refused. */
#include "rnicpi.h"

static rnicpi_status_t
list(char (*names)[RNICPI_DEVICE_NAME_MAX], size_t *count)
{
  (void) names;
  *count = 0;
  return RNICPI_OK;
}

static const rnicpi_device_ops_t dev_ops = { .size = sizeof(dev_ops), .list = list };
static const rnicpi_data_ops_t data_ops = { .size = sizeof(data_ops) };

RNICPI_PROVIDER_DEFINE(badabi) = {
  .abi_major = 99,
  .abi_minor = 0,
  .name = "badabi",
  .version = "0",
  .description = "test: wrong ABI",
  .device = &dev_ops,
  .data = &data_ops,
};
