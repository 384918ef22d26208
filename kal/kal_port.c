/*
 * kAL connection-qualifier space.
 *
 * A reservation is a bound socket in the abstract Unix namespace named after
 * the space and the port: the kernel makes the name unique across every
 * process of the host (network namespace) and frees it when the holder dies,
 * so no lock file can go stale.
 *
 * Who holds a port.  While the name is bound nobody else can bind it, of
 * any user; but any local user may bind any abstract name that is free,
 * without this layer and without a capability, so a name can be squatted
 * before its listener takes it (privileged ports included: the namespace
 * has no permissions).  A reservation therefore listens, and a refused
 * reservation names its holder by SO_PEERCRED on a connection to it, the
 * kernel's record of the process that called listen(), never by anything
 * a peer says; a name that refuses connections is no reservation of this
 * layer.  The holder never accepts: each refused reservation leaves one
 * connection in its queue (SOMAXCONN long) until it is released, and past
 * that the holder is not named.
 *
 * A port below the host's unprivileged start (net.ipv4.ip_unprivileged_
 * port_start, 1024 unless changed) needs CAP_NET_BIND_SERVICE in the
 * effective set, the rule the kernel's inet_bind() applies to a TCP port.
 * It is checked here, for every space, so that a qualifier means the same
 * on every provider: vp/emul binds no TCP port, and vp/iwarp's bind would
 * only be refused later, by the kernel.  As the kernel does, the capability
 * counts over the user namespace that owns the network namespace
 * (ns_capable(net->user_ns)): a process that has it only in a user
 * namespace of its own (`unshare -U -r`) does not.  A port chosen here is
 * not checked: the kernel's autobind does not check either, and the range
 * it is chosen from lies above.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib.h>

#include "kal.h"
#include "rnicpi_util.h"

#define KAL_EPHEMERAL_LO 49152
#define KAL_EPHEMERAL_HI 65535

struct kal_port {
  int fd;
  uint32_t port;
};

/* The abstract name of @port of @space; its length for bind and connect. */
static socklen_t
port_addr(const char *space, uint32_t port, struct sockaddr_un *sa)
{
  memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  int n = g_snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "itapi-conn-qual/%s/%u", space, port);
  return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + (size_t) n);
}

static rnicpi_status_t
try_bind(const char *space, uint32_t port, int *fd_out)
{
  struct sockaddr_un sa;
  socklen_t len = port_addr(space, port, &sa);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return RNICPI_ENOMEM;
  if (bind(fd, (struct sockaddr *) &sa, len) != 0) {
    int err = errno;
    close(fd);
    return err == EADDRINUSE ? RNICPI_EEXIST : RNICPI_EIO;
  }
  if (listen(fd, SOMAXCONN) != 0) {
    close(fd);
    return RNICPI_EIO;
  }
  *fd_out = fd;
  return RNICPI_OK;
}

/* Who holds @port of @space, for a refusal's sentence: "pid N (uid U)"
 * and, for a port below @start held by a process that lacks
 * CAP_NET_BIND_SERVICE, that it took the name outside this layer. */
static char *
describe_holder(const char *space, uint32_t port, uint32_t start)
{
  struct sockaddr_un sa;
  socklen_t len = port_addr(space, port, &sa);
  const char *name = sa.sun_path + 1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return g_strdup_printf("another process holds it (it cannot be named: %s)", g_strerror(errno));
  struct ucred cr;
  socklen_t crlen = sizeof(cr);
  char *d;
  if (connect(fd, (struct sockaddr *) &sa, len) == 0 &&
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0) {
    /* Nothing is said of a process whose capabilities cannot be seen. */
    gboolean has = TRUE;
    gboolean squat = port < start && cr.uid != 0 &&
                     rnicpi_pid_cap_effective(cr.pid, CAP_NET_BIND_SERVICE, &has) && !has;
    d = g_strdup_printf("process %d (uid %u) holds it%s%s%s", (int) cr.pid, (unsigned) cr.uid,
                        squat ? " without CAP_NET_BIND_SERVICE, so it bound the abstract name '" : "",
                        squat ? name : "", squat ? "' outside this access layer (any local user can)" : "");
  } else if (errno == ECONNREFUSED) {
    d = g_strdup_printf("a socket that does not listen holds it, which is no reservation of this access "
                        "layer: any local user can bind the abstract name '%s' (`ss -xap | grep %s` "
                        "names its process)", name, name);
  } else {
    d = g_strdup_printf("another process holds it (it cannot be named: %s)", g_strerror(errno));
  }
  close(fd);
  return d;
}

/* Whether the user namespace that owns this process's network namespace
 * lies outside its own (an ancestor: NS_GET_USERNS refuses with EPERM), so
 * that no capability of its effective set counts there.  FALSE when /proc
 * or the ioctl is missing: the effective set then decides alone. */
static gboolean
net_owned_above(void)
{
  int net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (net < 0)
    return FALSE;
  int owner = ioctl(net, NS_GET_USERNS);
  int err = errno;
  close(net);
  if (owner >= 0) {
    close(owner);
    return FALSE;
  }
  return err == EPERM;
}

rnicpi_status_t
kal_port_reserve(const char *space, uint32_t *port, kal_port_t **res, char **why)
{
  int fd = -1;
  if (*port > 65535) {
    if (why != NULL)
      *why = g_strdup_printf("connection qualifier %u is not a port (1 to 65535)", *port);
    return RNICPI_EINVAL;
  }
  if (*port != 0) {
    uint32_t start = rnicpi_unprivileged_port_start();
    gboolean cap = *port < start && rnicpi_cap_effective(CAP_NET_BIND_SERVICE);
    if (*port < start && (!cap || net_owned_above())) {
      if (why != NULL)
        *why = g_strdup_printf("connection qualifier %u is below the host's unprivileged start %u "
                               "(net.ipv4.ip_unprivileged_port_start): listening on it needs "
                               "CAP_NET_BIND_SERVICE, which this process (uid %u) lacks%s; use a "
                               "qualifier of %u or above, or grant the capability", *port, start,
                               (unsigned) geteuid(), cap ? " over its network namespace (it has it "
                               "only in a user namespace of its own)" : "", start);
      return RNICPI_EACCES;
    }
    rnicpi_status_t st = try_bind(space, *port, &fd);
    if (st != RNICPI_OK) {
      if (why != NULL) {
        g_autofree char *holder = st == RNICPI_EEXIST ? describe_holder(space, *port, start) : NULL;
        *why = g_strdup_printf("connection qualifier %u cannot be reserved: %s%s", *port,
                               holder != NULL ? holder : rnicpi_status_message(st),
                               holder != NULL ? "; free it, or use another qualifier" : "");
      }
      return st;
    }
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
      if (st != RNICPI_EEXIST) {
        if (why != NULL)
          *why = g_strdup_printf("no connection qualifier could be reserved: %s", rnicpi_status_message(st));
        return st;
      }
    }
    if (fd < 0) {
      if (why != NULL)
        *why = g_strdup_printf("every connection qualifier from %u to %u is held by a listener of "
                               "this host", KAL_EPHEMERAL_LO, KAL_EPHEMERAL_HI);
      return RNICPI_ELIMIT;
    }
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
