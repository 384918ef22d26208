/*
 * cert-rnicpi: choose the provider under test and run the tests.
 *
 *   cert-rnicpi [GTest options] [--provider NAME | --provider-module PATH]
 *
 * or, through the environment (simplest under a GTest runner),
 * RNICPI_CERT_PROVIDER=NAME or RNICPI_CERT_MODULE=PATH.  The default is the
 * provider "emul".  A module given by path is loaded with
 * rnicpi_registry_add_module(); a provider by name comes from the registry
 * (ITAPI_PROVIDER_PATH, the built-ins, the install directory).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "cert.h"

const rnicpi_provider_t *cert_prov;

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
    g_printerr("cert-rnicpi: provider module %s is not usable (%s): %s\n", path,
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
    g_printerr("cert-rnicpi: provider '%s' (%s) was refused: %s\n", name, refused->origin,
               refused->reason);
  else
    g_printerr("cert-rnicpi: no provider named '%s' in the registry (%zu entries)\n", name,
               rnicpi_registry_count());
  return NULL;
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);

  const char *module = take_option(&argc, argv, "--provider-module");
  const char *name = take_option(&argc, argv, "--provider");
  if (module == NULL && name == NULL) {
    module = g_getenv("RNICPI_CERT_MODULE");
    name = g_getenv("RNICPI_CERT_PROVIDER");
  }
  if (module != NULL && *module != '\0')
    cert_prov = select_by_module(module);
  else
    cert_prov = select_by_name(name != NULL && *name != '\0' ? name : "emul");
  if (cert_prov == NULL)
    return 1;
  g_test_message("certifying RNIC-PI provider '%s' version %s (ABI %u.%u): %s", cert_prov->name,
                 cert_prov->version != NULL ? cert_prov->version : "?", cert_prov->abi_major,
                 cert_prov->abi_minor, cert_prov->description != NULL ? cert_prov->description : "");

  cert_register_device();
  cert_register_queue();
  cert_register_cm();
  cert_register_data();
  cert_register_errors();
  cert_register_mw();
  cert_register_srq();
  cert_register_ud();
  cert_register_more();
  return g_test_run();
}
