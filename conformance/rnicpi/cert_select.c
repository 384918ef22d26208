/*
 * The provider under test of a certification program: chosen by name or
 * module path, from the options GTest left or from the environment.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

/* Take "--opt VALUE" or "--opt=VALUE" out of what GTest left in argv. */
static const char *
take_option(int *argc, char **argv, const char *opt)
{
  size_t n = strlen(opt);
  for (int i = 1; i < *argc; i++) {
    const char *v = NULL;
    int used = 0;
    if (strcmp(argv[i], opt) == 0 && i + 1 < *argc) {
      v = argv[i + 1];
      used = 2;
    } else if (strncmp(argv[i], opt, n) == 0 && argv[i][n] == '=') {
      v = argv[i] + n + 1;
      used = 1;
    }
    if (v != NULL) {
      memmove(&argv[i], &argv[i + used], (size_t) (*argc - i - used + 1) * sizeof(char *));
      *argc -= used;
      return v;
    }
  }
  return NULL;
}

static const rnicpi_provider_t *
select_by_module(const char *path)
{
  /* Already registered from ITAPI_PROVIDER_PATH: a second load of the same
   * module would be refused for its name, so take the registered one. */
  for (size_t i = 0; i < rnicpi_registry_count(); i++) {
    const rnicpi_entry_t *r = rnicpi_registry_get(i);
    if (!r->refused && r->prov != NULL && strcmp(r->origin, path) == 0)
      return r->prov;
  }
  const rnicpi_entry_t *e = NULL;
  rnicpi_status_t st = rnicpi_registry_add_module(path, &e);
  if (st != RNICPI_OK) {
    g_printerr("%s: provider module %s is not usable (%s): %s\n", g_get_prgname(), path,
               rnicpi_status_name(st), e != NULL ? e->reason : "no registry entry");
    return NULL;
  }
  return e->prov;
}

static const rnicpi_provider_t *
select_by_name(const char *name)
{
  const rnicpi_entry_t *refused = NULL;
  for (size_t i = 0; i < rnicpi_registry_count(); i++) {
    const rnicpi_entry_t *e = rnicpi_registry_get(i);
    if (strcmp(e->name, name) != 0)
      continue;
    if (!e->refused && e->prov != NULL)
      return e->prov;
    refused = e;
  }
  if (refused != NULL)
    g_printerr("%s: provider '%s' (%s) was refused: %s\n", g_get_prgname(), name, refused->origin,
               refused->reason);
  else
    g_printerr("%s: no provider named '%s' in the registry (%zu entries)\n", g_get_prgname(), name,
               rnicpi_registry_count());
  return NULL;
}

const rnicpi_provider_t *
cert_select_provider(int *argc, char **argv)
{
  const char *module = take_option(argc, argv, "--provider-module");
  const char *name = take_option(argc, argv, "--provider");
  if (module == NULL && name == NULL) {
    module = g_getenv("RNICPI_CERT_MODULE");
    name = g_getenv("RNICPI_CERT_PROVIDER");
  }
  if (module != NULL && *module != '\0') {
    cert_prov_option = g_strconcat("--provider-module=", module, NULL);
    return select_by_module(module);
  }
  if (name == NULL || *name == '\0')
    name = "emul";
  cert_prov_option = g_strconcat("--provider=", name, NULL);
  return select_by_name(name);
}
