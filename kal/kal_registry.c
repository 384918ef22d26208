/*
 * kAL interface registry: one interface per device of each usable provider,
 * then one per alias the configuration file (itapi.conf(5)) defines.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <sys/auxv.h>

#include <glib.h>

#include "kal.h"
#include "rnicpi_registry.h"

#define KAL_LOG "itapi-kal"

static GOnce kal_once = G_ONCE_INIT;
static GArray *ifaces;     /* of kal_iface_t */
static kal_conf_t *conf;   /* the file taken at start-up, or NULL */
static char *conf_path;    /* the file read, or NULL for none */
static char *conf_error;   /* why the file was refused, or NULL */
static GHashTable *missing; /* alias -> why it names no usable device */
static GArray *settings;   /* of kal_setting_t; its strings live as long as the process */

static void no_cm(void *c, const rnicpi_cm_event_t *e) { (void) c; (void) e; }
static void no_cq(void *c, uint64_t q) { (void) c; (void) q; }
static void no_async(void *c, const rnicpi_async_event_t *e) { (void) c; (void) e; }
static const rnicpi_upcalls_t no_upcalls = { no_cm, no_cq, no_async };

/* "FILE, line N", for a setting's origin. */
static char *
at_line(unsigned line)
{
  return g_strdup_printf("%s, line %u", conf->origin, line);
}

static void
setting_add(const char *scope, const char *key, const char *value, char *origin)
{
  kal_setting_t st = { g_intern_string(scope), g_intern_string(key), g_strdup(value), origin };
  g_array_append_val(settings, st);
}

/* A variable overrides the file, which overrides the default. */
static void
setting_layered(const char *scope, const char *key, const char *var, const kal_conf_value_t *v,
                const char *dflt)
{
  const char *env = var != NULL ? g_getenv(var) : NULL;
  if (env != NULL && *env != '\0')
    setting_add(scope, key, env, g_strdup(var));
  else if (v != NULL && v->line != 0)
    setting_add(scope, key, v->text, at_line(v->line));
  else if (dflt != NULL)
    setting_add(scope, key, dflt, g_strdup("default"));
}

/* Read the file once, before the providers are loaded: it selects them. */
static void
conf_load(void)
{
  settings = g_array_new(FALSE, TRUE, sizeof(kal_setting_t));
  missing = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  const char *env = getauxval(AT_SECURE) == 0 ? g_getenv("ITAPI_CONF") : NULL;
  if (kal_conf_read(&conf, &conf_path, &conf_error) != RNICPI_OK) {
    /* Taken whole or not at all, and then no interface is offered: a
     * half-read file could open a device the file did not mean. */
    g_log(KAL_LOG, G_LOG_LEVEL_MESSAGE, "%s; until then no interface is offered", conf_error);
  }
  if (conf_path != NULL)
    setting_add("itapi", "file", conf_path, g_strdup(env != NULL ? "ITAPI_CONF" : "default"));
  else
    setting_add("itapi", "file", "none", g_strdup(env != NULL ? "ITAPI_CONF" : "default (" KAL_CONF_DEFAULT_FILE
                                                  " does not exist)"));
  const kal_conf_value_t *prov = conf != NULL ? &conf->provider : NULL;
  if (prov != NULL && prov->line != 0) {
    g_autofree char *where = at_line(prov->line);
    rnicpi_registry_select(prov->text, where);
  }
  setting_layered("itapi", "provider", "ITAPI_PROVIDER", prov, "all");
  setting_layered("itapi", "cm", "ITAPI_CM", conf != NULL ? &conf->cm : NULL, "auto");
}

static kal_iface_t *
device_find(const char *device, const char *provider)
{
  for (guint i = 0; i < ifaces->len; i++) {
    kal_iface_t *f = &g_array_index(ifaces, kal_iface_t, i);
    if (f->alias_of[0] == '\0' && strcmp(f->device, device) == 0 &&
        (provider == NULL || strcmp(f->prov->name, provider) == 0))
      return f;
  }
  return NULL;
}

/* Apply the [interface NAME] sections to the devices found: an alias
 * becomes an interface of its own; a section named after a device sets
 * that device's defaults.  FALSE with conf_error set when a section
 * contradicts the devices (an alias that takes a device's name). */
static gboolean
conf_apply(void)
{
  const char *all_cm = conf->cm.text;
  for (guint i = 0; i < ifaces->len; i++)
    g_array_index(ifaces, kal_iface_t, i).cm = all_cm;
  for (size_t k = 0; k < conf->n_ifaces; k++) {
    const kal_conf_iface_t *s = &conf->ifaces[k];
    g_autofree char *scope = g_strdup_printf("interface %s", s->name);
    const char *device = s->device.text != NULL ? s->device.text : s->name;
    if (s->device.text != NULL && strcmp(device, s->name) != 0 && device_find(s->name, NULL) != NULL) {
      conf_error = g_strdup_printf("configuration file %s, line %u: [interface %s] is the name of a "
                                   "device, so it cannot be an alias of %s; give the alias another name, "
                                   "or set ITAPI_CONF to another file (ITAPI_CONF= for none)",
                                   conf->origin, s->line, s->name, device);
      return FALSE;
    }
    setting_layered(scope, "device", NULL, &s->device, device);
    setting_layered(scope, "provider", NULL, &s->provider, NULL);
    setting_layered(scope, "cm", "ITAPI_CM", &s->cm, NULL);
    kal_iface_t *dev = device_find(device, s->provider.text);
    if (dev == NULL) {
      char *why = g_strdup_printf("interface '%s' (%s, line %u) names device '%s'%s%s, which no usable "
                                  "provider offers; itapi-info lists the devices and the providers left "
                                  "out", s->name, conf->origin, s->line, device,
                                  s->provider.text != NULL ? " of provider " : "",
                                  s->provider.text != NULL ? s->provider.text : "");
      g_log(KAL_LOG, G_LOG_LEVEL_MESSAGE, "%s", why);
      g_hash_table_replace(missing, g_strdup(s->name), why);
      continue;
    }
    const char *cm = s->cm.text != NULL ? s->cm.text : all_cm;
    if (strcmp(device, s->name) == 0) {
      dev->cm = cm;
      continue;
    }
    kal_iface_t alias = *dev;
    g_strlcpy(alias.name, s->name, sizeof(alias.name));
    g_strlcpy(alias.alias_of, dev->name, sizeof(alias.alias_of));
    alias.cm = cm;
    g_array_append_val(ifaces, alias);
  }
  return TRUE;
}

/* Open a device to read its record: the one way the registry's devices
 * are queried outside an IA. */
static rnicpi_status_t
device_caps(const rnicpi_provider_t *prov, const char *device, rnicpi_caps_t *caps)
{
  rnicpi_dev_t *dev = NULL;
  rnicpi_caps_t rc;
  rnicpi_status_t st = prov->device->open(device, &no_upcalls, NULL, &dev);
  if (st != RNICPI_OK)
    return st;
  st = prov->device->query(dev, &rc);
  prov->device->close(dev);
  if (st != RNICPI_OK)
    return st;
  rnicpi_caps_complete(prov, &rc);
  *caps = rc;
  return RNICPI_OK;
}

static gpointer
kal_do_init(gpointer unused)
{
  (void) unused;
  ifaces = g_array_new(FALSE, TRUE, sizeof(kal_iface_t));
  kal_pin_check_env();
  conf_load();
  rnicpi_registry_load();
  for (size_t i = 0; i < rnicpi_registry_count(); i++) {
    const rnicpi_entry_t *e = rnicpi_registry_get(i);
    if (e->refused)
      continue;
    char names[16][RNICPI_DEVICE_NAME_MAX];
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
      rnicpi_caps_t caps;
      rnicpi_status_t st = device_caps(e->prov, f.device, &caps);
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
  if (conf != NULL && !conf_apply())
    g_log(KAL_LOG, G_LOG_LEVEL_MESSAGE, "%s; until then no interface is offered", conf_error);
  if (conf_error != NULL)
    g_array_set_size(ifaces, 0);
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

const char *
kal_iface_missing(const char *name)
{
  kal_init();
  if (conf_error != NULL)
    return conf_error;
  return name != NULL ? g_hash_table_lookup(missing, name) : NULL;
}

size_t
kal_provider_count(void)
{
  kal_init();
  return rnicpi_registry_count();
}

const rnicpi_entry_t *
kal_provider_get(size_t i)
{
  kal_init();
  return rnicpi_registry_get(i);
}

rnicpi_status_t
kal_iface_caps(const kal_iface_t *iface, rnicpi_caps_t *caps)
{
  if (iface == NULL || caps == NULL)
    return RNICPI_EINVAL;
  return device_caps(iface->prov, iface->device, caps);
}

const char *
kal_conf_error(void)
{
  kal_init();
  return conf_error;
}

size_t
kal_setting_count(void)
{
  kal_init();
  return settings->len;
}

const kal_setting_t *
kal_setting_get(size_t i)
{
  kal_init();
  return i < settings->len ? &g_array_index(settings, kal_setting_t, i) : NULL;
}
