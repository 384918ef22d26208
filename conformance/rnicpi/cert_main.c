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
const char *cert_prov_option;

int
main(int argc, char **argv)
{
  /* "--peer": the other process of the tests of cert_xproc.c. */
  gboolean peer = argc > 1 && strcmp(argv[1], "--peer") == 0;
  if (peer) {
    argv[1] = argv[0];
    argv++;
    argc--;
  } else {
    g_test_init(&argc, &argv, NULL);
  }

  cert_prov = cert_select_provider(&argc, argv);
  if (cert_prov == NULL)
    return 1;
  if (peer)
    return cert_peer_serve();
  g_test_message("certifying RNIC-PI provider '%s' version %s (ABI %u.%u): %s", cert_prov->name,
                 cert_prov->version != NULL ? cert_prov->version : "?", cert_prov->abi_major,
                 cert_prov->abi_minor, cert_prov->description != NULL ? cert_prov->description : "");

  cert_register_device();
  cert_register_queue();
  cert_register_cm();
  cert_register_data();
  cert_register_errors();
  cert_register_flush();
  cert_register_protect();
  cert_register_mw();
  cert_register_srq();
  cert_register_ud();
  cert_register_more();
  cert_register_edge();
  cert_register_wire();
  cert_register_xproc();
  cert_register_xmore();
  cert_register_wait();
  cert_register_rules();
  cert_register_fence();
  cert_register_close();
  cert_register_status();
  cert_register_negotiate();
  cert_register_count();
  return g_test_run();
}
