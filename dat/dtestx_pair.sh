#!/bin/sh
# Debian's dtestx (dapl2-utils), unchanged, over libdaplitapi: DAT's IB
# extension between a server and a client in two processes on one IT-API
# interface: an RDMA Write with immediate data each way (the bytes and the
# value checked by each side, and the receive's length, which must be the
# Write's), then compare-and-swap and fetch-and-add on each other's memory,
# the old values and the results checked.  Each side must exit 0 and print
# "IB extension test - immed/atomic test PASSED".  Exit 77 (skipped) when
# dtestx is not installed.
#
#   dtestx_pair.sh DAT_CONF INTERFACE
#
# Run over InfiniBand interfaces only: over iWARP, RFC 7306's Immediate
# Data carries no Write length (the receive's length is 8, the value's
# bytes), so dtestx's check of it cannot pass there (doc/dat.md).  The UD
# run (-u) is not made here yet.
#
# dtestx's server listens on TCP port 15828 for the client's first contact,
# as dtest does: runs of this script and of the other dtest scripts must
# not overlap (the Meson tests are not parallel).
#
# SPDX-License-Identifier: MIT
set -u
conf=$1
ia=$2
dtestx=$(command -v dtestx) || { echo "dtestx is not installed (Debian package dapl2-utils): skipped"; exit 77; }
export DAT_OVERRIDE="$conf"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/pair_lib.sh"

pair_run "$dtestx" default "IB extension test - immed/atomic test PASSED" "waiting to snd addr" \
  "Could not connect to"
for side in server client; do
  grep -q "RDMA_WRITE_WITH_IMMEDIATE_DATA test - PASSED" "$dir/$side" &&
    grep -q "CMP_SWAP test - PASSED" "$dir/$side" && grep -q "FETCH_ADD test - PASSED" "$dir/$side" || {
    echo "dtestx over $ia: the $side did not pass all three of its tests (immediate data, compare and swap, fetch and add)"
    fail=1
  }
done
exit $fail
