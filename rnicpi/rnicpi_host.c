/*
 * Provider helpers: what the host's kernel would let a process do with a
 * port, for the rule every port space keeps (a port below the host's
 * unprivileged start needs CAP_NET_BIND_SERVICE, as inet_bind() requires
 * of a TCP port).
 *
 * SPDX-License-Identifier: MIT
 */
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rnicpi_util.h"

#define UNPRIVILEGED_SYSCTL "/proc/sys/net/ipv4/ip_unprivileged_port_start"

uint32_t
rnicpi_unprivileged_port_start(void)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents(UNPRIVILEGED_SYSCTL, &text, NULL, NULL))
    return RNICPI_UNPRIVILEGED_PORT_DEFAULT;
  char *end;
  guint64 v = g_ascii_strtoull(text, &end, 10);
  /* The kernel keeps it within 0 to 65535 (ipv4_privileged_ports()). */
  if (end == text || v > 65535)
    return RNICPI_UNPRIVILEGED_PORT_DEFAULT;
  return (uint32_t) v;
}

gboolean
rnicpi_cap_effective(unsigned cap)
{
  struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
  memset(d, 0, sizeof(d));
  if (cap > CAP_LAST_CAP || syscall(SYS_capget, &h, d) != 0)
    return FALSE;
  return (d[CAP_TO_INDEX(cap)].effective & CAP_TO_MASK(cap)) != 0;
}

gboolean
rnicpi_pid_cap_effective(pid_t pid, unsigned cap, gboolean *has)
{
  /* /proc/PID/status is readable for every process of the PID namespace,
   * where capget(2) of another process may be refused. */
  g_autofree char *path = g_strdup_printf("/proc/%d/status", (int) pid);
  g_autofree char *status = NULL;
  if (cap > 63 || !g_file_get_contents(path, &status, NULL, NULL))
    return FALSE;
  const char *l = strstr(status, "\nCapEff:");
  unsigned long long eff;
  if (l == NULL || sscanf(l + 8, "%llx", &eff) != 1)
    return FALSE;
  *has = (eff >> cap) & 1;
  return TRUE;
}
