/*
 * kAL connection-qualifier space.
 *
 * A reservation is a bound socket in the abstract Unix namespace named after
 * the space and the port: the kernel makes the name unique across every
 * process of the host (network namespace) and frees it when the holder dies,
 * so no lock file can go stale.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib.h>

#include "kal.h"

#define KAL_EPHEMERAL_LO 49152
#define KAL_EPHEMERAL_HI 65535

struct kal_port {
  int fd;
  uint32_t port;
};

static rnicpi_status_t
try_bind(const char *space, uint32_t port, int *fd_out)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int n = g_snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
                     "itapi-conn-qual/%s/%u", space, port);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return RNICPI_ENOMEM;
  socklen_t len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) n);
  if (bind(fd, (struct sockaddr *) &sa, len) != 0) {
    int err = errno;
    close(fd);
    return err == EADDRINUSE ? RNICPI_EEXIST : RNICPI_EIO;
  }
  *fd_out = fd;
  return RNICPI_OK;
}

rnicpi_status_t
kal_port_reserve(const char *space, uint32_t *port, kal_port_t **res)
{
  int fd = -1;
  if (*port > 65535)
    return RNICPI_EINVAL;
  if (*port != 0) {
    rnicpi_status_t st = try_bind(space, *port, &fd);
    if (st != RNICPI_OK)
      return st;
  } else {
    uint32_t span = KAL_EPHEMERAL_HI - KAL_EPHEMERAL_LO + 1;
    uint32_t start = g_random_int_range(0, (gint32) span);
    for (uint32_t i = 0; i < span; i++) {
      uint32_t p = KAL_EPHEMERAL_LO + (start + i) % span;
      rnicpi_status_t st = try_bind(space, p, &fd);
      if (st == RNICPI_OK) {
        *port = p;
        break;
      }
      if (st != RNICPI_EEXIST)
        return st;
    }
    if (fd < 0)
      return RNICPI_ELIMIT;
  }
  kal_port_t *r = g_new0(kal_port_t, 1);
  r->fd = fd;
  r->port = *port;
  *res = r;
  return RNICPI_OK;
}

void
kal_port_release(kal_port_t *res)
{
  if (res == NULL)
    return;
  close(res->fd);
  g_free(res);
}
