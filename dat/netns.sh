#!/bin/sh
# Run a command in a network namespace of its own, its loopback up, where
# this user may make one (root, or unprivileged user namespaces); else as
# it is.  Debian's DAT tools listen on fixed ports (dtest's TCP port 15828,
# its qualifier 45248 inside Linux's ephemeral range), which another
# program on the host may hold at that moment: the lab's qemu opens host
# sockets while the suite runs beside it.
#
#   netns.sh COMMAND [ARG...]
#
# SPDX-License-Identifier: MIT
if unshare -n true 2>/dev/null && command -v ip >/dev/null; then
  exec unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"
fi
exec "$@"
