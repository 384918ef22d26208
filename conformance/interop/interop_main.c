/*
 * cert-interop: the interop level of the certification catalog.
 *
 *   cert-interop [GTest options] [--provider NAME | --provider-module PATH]
 *
 * The provider under test is chosen as cert-rnicpi chooses it
 * (RNICPI_CERT_PROVIDER, RNICPI_CERT_MODULE, RNICPI_CERT_DEVICE).  Its
 * tests need an iWARP wire: the capability record says iWARP and a
 * listener of the device is reached over TCP at its first address
 * (interop_require_wire).
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "interop_test.h"

const rnicpi_provider_t *cert_prov;
const char *cert_prov_option;

int
interop_tcp_connect(const struct sockaddr_storage *ss)
{
  int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  socklen_t l = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  if (connect(fd, (const struct sockaddr *) ss, l) != 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  return fd;
}

gboolean
interop_require_wire(cert_t *f)
{
  if (!cert_require(f, RNICPI_CAP_CM_VERBS))
    return FALSE;
  /* The record decides first: an InfiniBand device has no MPA wire. */
  if (f->caps.transport != RNICPI_TRANSPORT_IWARP) {
    g_test_message("device '%s' reports transport %d, not iWARP (%d): no MPA/TCP wire to test",
                   f->dev_name, f->caps.transport, RNICPI_TRANSPORT_IWARP);
    g_test_skip("needs capability: " INTEROP_CAP_WIRE);
    return FALSE;
  }
  /* Then the wire itself: a listener of the device answers a plain TCP
   * connect at the device's first address (what any iWARP peer does
   * first).  A device that emulates iWARP over something else (vp/emul's
   * emul-iw0 listens in memory) refuses it. */
  rnicpi_listen_t *lst = NULL;
  uint32_t port = cert_listen(f, 0x7e57, &lst);
  rnicpi_addr_t a;
  cert_addr(f, port, &a);
  int fd = interop_tcp_connect(&a.sa);
  cert_ok(CMV->unlisten(lst));
  if (fd < 0) {
    char text[INET6_ADDRSTRLEN] = "?";
    const void *ip = a.sa.ss_family == AF_INET ? (const void *) &((struct sockaddr_in *) &a.sa)->sin_addr
                                               : (const void *) &((struct sockaddr_in6 *) &a.sa)->sin6_addr;
    inet_ntop(a.sa.ss_family, ip, text, sizeof(text));
    g_test_message("device '%s' is iWARP, but its listener on port %u is not reachable over TCP "
                   "at its first address %s (%s): its connections are not MPA over TCP, so no "
                   "standard iWARP peer can reach it", f->dev_name, port, text, g_strerror(-fd));
    g_test_skip("needs capability: " INTEROP_CAP_WIRE);
    return FALSE;
  }
  close(fd);
  g_test_message("needs capability: " INTEROP_CAP_WIRE);
  return TRUE;
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);

  cert_prov = cert_select_provider(&argc, argv);
  if (cert_prov == NULL)
    return 1;
  g_test_message("interop certification of RNIC-PI provider '%s' version %s (ABI %u.%u)",
                 cert_prov->name, cert_prov->version != NULL ? cert_prov->version : "?",
                 cert_prov->abi_major, cert_prov->abi_minor);

  interop_register_golden();
  interop_register_golden2();
  interop_register_golden_mpa();
  interop_register_peer();
  return g_test_run();
}
