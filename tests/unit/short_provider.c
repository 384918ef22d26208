/*
 * A provider built against an older, shorter RNIC-PI: its device table ends
 * after 'open', its data table holds only post_send.  The loader must fill
 * the rest with not-supported stubs.  Its probe fails when
 * SHORT_PROVIDER_FAIL is set, to test refusal at probe.
 */
#include <stdlib.h>
#include <string.h>

#include "rnicpi.h"

typedef struct { size_t size; void *list; void *open; } old_device_ops_t;

static rnicpi_status_t
list(char (*names)[RNICPI_DEVICE_NAME_MAX], size_t *count)
{
  if (*count >= 1)
    strcpy(names[0], "short0");
  *count = 1;
  return RNICPI_OK;
}

static rnicpi_dev_t the_dev;

static rnicpi_status_t
open_dev(const char *name, const rnicpi_upcalls_t *up, void *ctx, rnicpi_dev_t **dev)
{
  (void) name;
  (void) up;
  the_dev.al_ctx = ctx;
  *dev = &the_dev;
  return RNICPI_OK;
}

static void
close_must_not_run(rnicpi_dev_t *dev)
{
  (void) dev;
  abort();
}

static rnicpi_status_t
probe(void)
{
  return getenv("SHORT_PROVIDER_FAIL") != NULL ? RNICPI_EIO : RNICPI_OK;
}

/* A full-size table whose size field claims only the first two ops. */
static const rnicpi_device_ops_t dev_ops = {
  .size = sizeof(old_device_ops_t),
  .list = list,
  .open = open_dev,
  .close = close_must_not_run, /* past the size: must not be used */
};
static const rnicpi_data_ops_t data_ops = { .size = sizeof(size_t) };

RNICPI_PROVIDER_DEFINE(short) = {
  .abi_major = RNICPI_ABI_MAJOR,
  .abi_minor = 0,
  .name = "short",
  .version = "0",
  .description = "test: short tables",
  .probe = probe,
  .device = &dev_ops,
  .data = &data_ops,
};
