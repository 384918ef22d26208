/*
 * The provider registry as IT-API consumers see it (itx.h): tools such as
 * itapi-info read it without RNIC-PI's private loader.
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
#include <string.h>

#include "itx.h"
#include "rnicpi_registry.h"

size_t
itx_provider_count(void)
{
  return rnicpi_registry_count();
}

it_status_t
itx_provider_get(size_t i, itx_provider_info_t *info)
{
  if (!info)
    return IT_ERR_FAULT;
  const rnicpi_entry_t *e = rnicpi_registry_get(i);
  if (!e)
    return IT_ERR_RANGE;
  info->name = e->name;
  info->origin = e->origin;
  info->usable = e->refused ? IT_FALSE : IT_TRUE;
  info->version = e->refused ? NULL : e->prov->version;
  info->description = e->refused ? NULL : e->prov->description;
  info->reason = e->refused ? e->reason : "";
  return IT_SUCCESS;
}

it_status_t
itx_provider_refused_devices(size_t i, itx_refused_device_t *devices, size_t *count)
{
  if (!devices || !count)
    return IT_ERR_FAULT;
  const rnicpi_entry_t *e = rnicpi_registry_get(i);
  if (!e)
    return IT_ERR_RANGE;
  if (e->refused)
    return IT_ERR_INVALID_NAME;
  size_t room = *count, n = room;
  char (*names)[64] = g_malloc0_n(MAX(room, 1), sizeof(*names));
  char (*reasons)[256] = g_malloc0_n(MAX(room, 1), sizeof(*reasons));
  rnicpi_status_t st = e->prov->device->list_refused(names, reasons, &n);
  if (st == RNICPI_OK) {
    for (size_t k = 0; k < MIN(n, room); k++) {
      g_strlcpy(devices[k].name, names[k], sizeof(devices[k].name));
      g_strlcpy(devices[k].reason, reasons[k], sizeof(devices[k].reason));
    }
    *count = n;
  }
  g_free(names);
  g_free(reasons);
  return st == RNICPI_OK ? IT_SUCCESS : IT_ERR_OP_NOT_SUPPORTED;
}

it_status_t
itx_interface_caps(const char *interface, struct rnicpi_caps *caps)
{
  static const rnicpi_upcalls_t none;
  if (!interface || !caps)
    return IT_ERR_FAULT;
  for (size_t i = 0; i < rnicpi_registry_count(); i++) {
    const rnicpi_entry_t *e = rnicpi_registry_get(i);
    if (e->refused)
      continue;
    char names[16][64];
    size_t n = G_N_ELEMENTS(names);
    if (e->prov->device->list(names, &n) != RNICPI_OK)
      continue;
    for (size_t d = 0; d < MIN(n, G_N_ELEMENTS(names)); d++) {
      if (strcmp(names[d], interface) != 0)
        continue;
      rnicpi_dev_t *dev = NULL;
      if (e->prov->device->open(names[d], &none, NULL, &dev) != RNICPI_OK)
        return IT_ERR_RESOURCES;
      rnicpi_caps_t rc;
      gboolean ok = e->prov->device->query(dev, &rc) == RNICPI_OK;
      e->prov->device->close(dev);
      if (!ok)
        return IT_ERR_RESOURCES;
      rnicpi_caps_complete(e->prov, &rc);  /* the record as the access layer reads it */
      *caps = rc;
      return IT_SUCCESS;
    }
  }
  return IT_ERR_INVALID_NAME;
}
