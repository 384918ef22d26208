/*
 * The provider registry: built-ins, then modules from the install
 * directory and ITAPI_PROVIDER_PATH, filtered by ITAPI_PROVIDER (or, when
 * it is not set, by the selection of the configuration file).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <sys/auxv.h>

#include <glib.h>
#include <gmodule.h>

#include "rnicpi_registry.h"
#include "rnicpi_private.h"
#include "rnicpi_builtins.h"

#define G_LOG_DOMAIN_RNICPI "itapi-rnicpi"

typedef struct {
  rnicpi_entry_t pub;
  rnicpi_full_t full;
  GModule *module;
} entry_t;

static GMutex reg_lock;
static GPtrArray *reg_entries; /* of entry_t* */
static gboolean reg_loaded;

/* The selection rnicpi_registry_select() set: a default ITAPI_PROVIDER
 * overrides. */
static char *sel_default, *sel_origin;

/* The names in force, and a phrase that says where they came from. */
static const char *
selection(const char **origin)
{
  const char *sel = g_getenv("ITAPI_PROVIDER");
  if (sel != NULL && *sel != '\0') {
    *origin = "ITAPI_PROVIDER";
    return sel;
  }
  *origin = sel_origin;
  return sel_default;
}

static gboolean
name_selected(const char *name)
{
  const char *origin;
  const char *sel = selection(&origin);
  if (sel == NULL || *sel == '\0')
    return TRUE;
  g_auto(GStrv) names = g_strsplit(sel, ",", -1);
  for (char **n = names; *n != NULL; n++)
    if (g_strcmp0(g_strstrip(*n), name) == 0)
      return TRUE;
  return FALSE;
}

static entry_t *
find_usable(const char *name, const entry_t *self)
{
  for (guint i = 0; i < reg_entries->len; i++) {
    entry_t *e = g_ptr_array_index(reg_entries, i);
    if (e != self && e->pub.prov != NULL && strcmp(e->pub.name, name) == 0)
      return e;
  }
  return NULL;
}

static entry_t *
refuse(entry_t *e, gboolean loud, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static entry_t *
refuse(entry_t *e, gboolean loud, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_vsnprintf(e->pub.reason, sizeof(e->pub.reason), fmt, ap);
  va_end(ap);
  e->pub.refused = true;
  e->pub.prov = NULL;
  if (loud)
    g_log(G_LOG_DOMAIN_RNICPI, G_LOG_LEVEL_MESSAGE,
          "RNIC-PI provider '%s' (%s) refused: %s", e->pub.name,
          e->pub.origin, e->pub.reason);
  else
    g_log(G_LOG_DOMAIN_RNICPI, G_LOG_LEVEL_DEBUG,
          "RNIC-PI provider '%s' (%s) not used: %s", e->pub.name,
          e->pub.origin, e->pub.reason);
  return e;
}

/* Checks shared by built-ins and modules; fills the entry. */
static entry_t *
admit(entry_t *e, const rnicpi_provider_t *desc, gboolean explicit_load)
{
  if (desc->name != NULL)
    g_strlcpy(e->pub.name, desc->name, sizeof(e->pub.name));
  if (desc->abi_major != RNICPI_ABI_MAJOR)
    return refuse(e, TRUE, "built for RNIC-PI ABI %u.%u, this library speaks %u.%u; "
                  "rebuild the provider against this rnicpi.h",
                  desc->abi_major, desc->abi_minor, RNICPI_ABI_MAJOR, RNICPI_ABI_MINOR);
  if (desc->name == NULL || desc->device == NULL || desc->data == NULL) {
    return refuse(e, TRUE, "descriptor lacks a name, device ops or data ops; "
                  "a provider must fill name, device and data");
  }
  if (!explicit_load && !name_selected(desc->name)) {
    const char *origin;
    const char *sel = selection(&origin);
    if (strcmp(origin, "ITAPI_PROVIDER") == 0)
      return refuse(e, FALSE, "not selected by ITAPI_PROVIDER=%s", sel);
    return refuse(e, FALSE, "not selected by %s (provider = %s)", origin, sel);
  }
  if (find_usable(desc->name, e) != NULL)
    return refuse(e, explicit_load, "a provider named '%s' is already registered", desc->name);
  if (desc->probe != NULL) {
    rnicpi_status_t st = desc->probe();
    if (st != RNICPI_OK)
      return refuse(e, TRUE, "probe failed with %s (%s)", rnicpi_status_name(st),
                    rnicpi_status_message(st));
  }
  rnicpi_complete_tables(desc, &e->full);
  e->pub.prov = &e->full.desc;
  e->pub.refused = false;
  e->pub.reason[0] = '\0';
  return e;
}

static entry_t *
new_entry(const char *name, const char *origin)
{
  entry_t *e = g_new0(entry_t, 1);
  g_strlcpy(e->pub.name, name, sizeof(e->pub.name));
  g_strlcpy(e->pub.origin, origin, sizeof(e->pub.origin));
  g_ptr_array_add(reg_entries, e);
  return e;
}

static entry_t *
load_module(const char *path, gboolean explicit_load)
{
  g_autofree char *base = g_path_get_basename(path);
  entry_t *e = new_entry(base, path);
  e->module = g_module_open(path, G_MODULE_BIND_LOCAL);
  if (e->module == NULL)
    return refuse(e, TRUE, "cannot load the module: %s", g_module_error());
  gpointer sym = NULL;
  if (!g_module_symbol(e->module, RNICPI_PROVIDER_SYMBOL, &sym) || sym == NULL)
    return refuse(e, TRUE, "the module exports no '%s' symbol; define the "
                  "descriptor with RNICPI_PROVIDER_DEFINE()", RNICPI_PROVIDER_SYMBOL);
  return admit(e, sym, explicit_load);
}

static void
scan_dir(const char *dir)
{
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d == NULL)
    return;
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  const char *n;
  while ((n = g_dir_read_name(d)) != NULL)
    if (g_str_has_suffix(n, ".so"))
      g_ptr_array_add(names, g_build_filename(dir, n, NULL));
  g_dir_close(d);
  g_ptr_array_sort(names, (GCompareFunc) g_strcmp0);
  for (guint i = 0; i < names->len; i++)
    load_module(g_ptr_array_index(names, i), FALSE);
  g_ptr_array_unref(names);
}

static void
scan_path_entry(const char *p)
{
  if (g_file_test(p, G_FILE_TEST_IS_DIR))
    scan_dir(p);
  else if (g_file_test(p, G_FILE_TEST_IS_REGULAR))
    load_module(p, FALSE);
  else
    g_log(G_LOG_DOMAIN_RNICPI, G_LOG_LEVEL_MESSAGE,
          "ITAPI_PROVIDER_PATH entry '%s' is neither a directory nor a file; ignored", p);
}

void
rnicpi_registry_load(void)
{
  g_mutex_lock(&reg_lock);
  if (reg_loaded) {
    g_mutex_unlock(&reg_lock);
    return;
  }
  reg_entries = g_ptr_array_new();
  /* First registered wins a name: the user's path, then what was built in,
   * then what is installed. */
  const char *path = g_getenv("ITAPI_PROVIDER_PATH");
  if (path != NULL && getauxval(AT_SECURE) == 0) {
    g_auto(GStrv) parts = g_strsplit(path, ":", -1);
    for (char **p = parts; *p != NULL; p++)
      if (**p != '\0')
        scan_path_entry(*p);
  }
  for (size_t i = 0; rnicpi_builtins[i] != NULL; i++)
    admit(new_entry(rnicpi_builtins[i]->name, "built-in"), rnicpi_builtins[i], FALSE);
  scan_dir(RNICPI_MODULE_DIR);
  reg_loaded = TRUE;
  g_mutex_unlock(&reg_lock);
}

void
rnicpi_registry_select(const char *names, const char *origin)
{
  g_mutex_lock(&reg_lock);
  /* Once built, the registry keeps the providers it admitted. */
  if (!reg_loaded) {
    g_free(sel_default);
    g_free(sel_origin);
    sel_default = g_strdup(names);
    sel_origin = g_strdup(origin != NULL ? origin : "the default selection");
  }
  g_mutex_unlock(&reg_lock);
}

size_t
rnicpi_registry_count(void)
{
  rnicpi_registry_load();
  return reg_entries->len;
}

const rnicpi_entry_t *
rnicpi_registry_get(size_t i)
{
  rnicpi_registry_load();
  if (i >= reg_entries->len)
    return NULL;
  return &((entry_t *) g_ptr_array_index(reg_entries, i))->pub;
}

rnicpi_status_t
rnicpi_registry_add_module(const char *path, const rnicpi_entry_t **entry)
{
  rnicpi_registry_load();
  g_mutex_lock(&reg_lock);
  entry_t *e = load_module(path, TRUE);
  g_mutex_unlock(&reg_lock);
  *entry = &e->pub;
  if (!e->pub.refused)
    return RNICPI_OK;
  return e->module == NULL ? RNICPI_ENOENT : RNICPI_EINVAL;
}
