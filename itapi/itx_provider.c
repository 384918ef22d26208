/*
 * The provider registry, the interfaces' capability records and the
 * settings in force as IT-API consumers see them (itx.h): tools such as
 * itapi-info read them without RNIC-PI's private loader.
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
#include <string.h>

#include "itx.h"
#include "kal.h"

size_t
itx_provider_count(void)
{
  return kal_provider_count();
}

it_status_t
itx_provider_get(size_t i, itx_provider_info_t *info)
{
  if (!info)
    return IT_ERR_FAULT;
  const rnicpi_entry_t *e = kal_provider_get(i);
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
  const rnicpi_entry_t *e = kal_provider_get(i);
  if (!e)
    return IT_ERR_RANGE;
  if (e->refused)
    return IT_ERR_INVALID_NAME;
  size_t room = *count, n = room;
  char (*names)[RNICPI_DEVICE_NAME_MAX] = g_malloc0_n(MAX(room, 1), sizeof(*names));
  char (*reasons)[RNICPI_REASON_MAX] = g_malloc0_n(MAX(room, 1), sizeof(*reasons));
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

/* itx_caps_t::features carries the device's bits as they are: a bit of
 * itx.h is the RNIC-PI bit of the same meaning, and names come from one
 * list (RNICPI_CAP_LIST). */
G_STATIC_ASSERT(ITX_FEATURE_IMMEDIATE == RNICPI_CAP_IMMEDIATE);

const char *
itx_feature_name(uint64_t feature)
{
  return rnicpi_cap_name(feature);
}

it_status_t
itx_interface_caps(const char *interface, itx_caps_t *caps)
{
  if (!interface || !caps)
    return IT_ERR_FAULT;
  const kal_iface_t *f = kal_iface_find(interface);
  if (f == NULL)
    return IT_ERR_INVALID_NAME;
  rnicpi_caps_t rc;
  if (kal_iface_caps(f, &rc) != RNICPI_OK)
    return IT_ERR_RESOURCES;
  *caps = (itx_caps_t) {
    .features = rc.features,
    .max_qp = rc.max_qp,
    .max_qp_wr = rc.max_qp_wr,
    .max_cq = rc.max_cq,
    .max_cqe = rc.max_cqe,
    .max_mr = rc.max_mr,
    .max_pd = rc.max_pd,
    .max_srq = rc.max_srq,
    .max_send_sge = rc.max_send_sge,
    .max_recv_sge = rc.max_recv_sge,
    .max_rdma_write_sge = rc.max_rdma_write_sge,
    .max_rdma_read_sge = rc.max_rdma_read_sge,
    .max_inline = rc.max_inline,
    .max_ird = rc.max_ird,
    .max_ord = rc.max_ord,
    .max_msg_size = rc.max_msg_size,
    .max_mr_size = rc.max_mr_size,
    .num_ports = rc.num_ports,
  };
  return IT_SUCCESS;
}

size_t
itx_setting_count(void)
{
  return kal_setting_count();
}

it_status_t
itx_setting_get(size_t i, itx_setting_t *setting)
{
  if (!setting)
    return IT_ERR_FAULT;
  const kal_setting_t *k = kal_setting_get(i);
  if (!k)
    return IT_ERR_RANGE;
  setting->scope = k->scope;
  setting->key = k->key;
  setting->value = k->value;
  setting->origin = k->origin;
  return IT_SUCCESS;
}

const char *
itx_conf_error(void)
{
  return kal_conf_error();
}
