/*
 * kAL interface registry: one interface per device of each usable provider.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include <glib.h>

#include "kal.h"
#include "rnicpi_registry.h"

static GOnce kal_once = G_ONCE_INIT;
static GArray *ifaces; /* of kal_iface_t */

static void no_cm(void *c, const rnicpi_cm_event_t *e) { (void) c; (void) e; }
static void no_cq(void *c, uint64_t q) { (void) c; (void) q; }
static void no_async(void *c, const rnicpi_async_event_t *e) { (void) c; (void) e; }
static const rnicpi_upcalls_t no_upcalls = { no_cm, no_cq, no_async };

static gpointer
kal_do_init(gpointer unused)
{
  (void) unused;
  ifaces = g_array_new(FALSE, TRUE, sizeof(kal_iface_t));
  kal_pin_check_env();
  rnicpi_registry_load();
  for (size_t i = 0; i < rnicpi_registry_count(); i++) {
    const rnicpi_entry_t *e = rnicpi_registry_get(i);
    if (e->refused)
      continue;
    char names[16][64];
    size_t n = G_N_ELEMENTS(names);
    if (e->prov->device->list(names, &n) != RNICPI_OK)
      continue;
    n = MIN(n, G_N_ELEMENTS(names));
    for (size_t d = 0; d < n; d++) {
      kal_iface_t f = { .prov = e->prov };
      g_strlcpy(f.name, names[d], sizeof(f.name));
      g_strlcpy(f.device, names[d], sizeof(f.device));
      /* Open once to learn the transport; a device that will not open or
       * describe itself is left out, with the reason logged. */
      rnicpi_dev_t *dev = NULL;
      rnicpi_caps_t caps;
      rnicpi_status_t st = e->prov->device->open(f.device, &no_upcalls, NULL, &dev);
      if (st == RNICPI_OK) {
        st = e->prov->device->query(dev, &caps);
        e->prov->device->close(dev);
      }
      if (st != RNICPI_OK) {
        g_log("itapi-kal", G_LOG_LEVEL_MESSAGE, "interface '%s' of provider '%s' left out: "
              "it could not be opened and queried (%s)", f.name, e->prov->name,
              rnicpi_status_message(st));
        continue;
      }
      f.transport = caps.transport;
      g_array_append_val(ifaces, f);
    }
  }
  return NULL;
}

void
kal_init(void)
{
  g_once(&kal_once, kal_do_init, NULL);
}

size_t
kal_iface_count(void)
{
  kal_init();
  return ifaces->len;
}

const kal_iface_t *
kal_iface_get(size_t i)
{
  kal_init();
  return i < ifaces->len ? &g_array_index(ifaces, kal_iface_t, i) : NULL;
}

const kal_iface_t *
kal_iface_find(const char *name)
{
  kal_init();
  if (name == NULL)
    return NULL;
  for (guint i = 0; i < ifaces->len; i++)
    if (strcmp(g_array_index(ifaces, kal_iface_t, i).name, name) == 0)
      return &g_array_index(ifaces, kal_iface_t, i);
  return NULL;
}
