#!/bin/sh
# Debian's dtest (dapl2-utils), unchanged, over libdaplitapi: a server and a
# client in two processes on one IT-API interface, first the default run
# (RDMA Write, RDMA Read and a Send ping-pong, each checked by dtest), then
# the data-validation run (-D: an RDMA Write ping-pong whose every byte
# the client compares), then the default run with completions through a
# CNO (-c).  Each side must exit 0 and print dtest's pass
# line; the -D run must also say it checked data.  Exit 77 (skipped) when
# dtest is not installed.
#
#   dtest_pair.sh DAT_CONF INTERFACE
#
# dtest's server listens on TCP port 15828 for the client's first contact
# and on DAT connection qualifier 45248: runs of this script must not
# overlap (the Meson test is not parallel).
#
# SPDX-License-Identifier: MIT
set -u
conf=$1
ia=$2
dtest=$(command -v dtest) || { echo "dtest is not installed (Debian package dapl2-utils): skipped"; exit 77; }
export DAT_OVERRIDE="$conf"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

. "$(dirname "$0")/pair_lib.sh"

# The client's first step is a TCP connection to the server's port 15828,
# which the server opens once its IA is up: tried again until then.
pass="DAPL Test Complete. PASSED"
retry="Could not connect to"
run() {
  name=$1; shift
  pair_run "$dtest" "$name" "$pass" "" "$retry" "$@"
  if [ "$name" = "-D" ] && ! grep -q "RDMA WRITE PINGPONG with DATA CHECK" "$dir/client"; then
    echo "dtest -D over $ia: the client did not run its data check"
    fail=1
  fi
}

run default -b 4096
run -D -D -b 65536
run -c -c -b 4096
exit $fail
