/*
 * kAL capabilities: what the kernel would let this process do where it
 * checks a capability, asked with capget(2) (the thread's own sets, as the
 * kernel's capable() reads them).
 *
 * SPDX-License-Identifier: MIT
 */
#include <linux/capability.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kal.h"

bool
kal_cap_effective(unsigned cap)
{
  struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
  memset(d, 0, sizeof(d));
  if (cap > CAP_LAST_CAP || syscall(SYS_capget, &h, d) != 0)
    return false;
  return (d[CAP_TO_INDEX(cap)].effective & CAP_TO_MASK(cap)) != 0;
}
