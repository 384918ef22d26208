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
#   dtestx_pair.sh DAT_CONF INTERFACE [ud]
#
# With "ud", the UD run (dtestx -u) instead: DAT's IB UD extension, four
# datagram "connections" each way (each side listens and connects, one EP
# asking the other's four times), then four datagrams each way carrying
# an RMR triplet, each receive 40 bytes (the GRH) longer than the datagram,
# its bytes 40 in.  Each side must exit 0, print "Connected! 4 endpoints",
# four "Recv RMR message" lines and "IB extension test - UD test PASSED".
# Without -h both sides of dtestx -u are servers: the client is told -c.
#
# Run over InfiniBand interfaces only: over iWARP, RFC 7306's Immediate
# Data carries no Write length (the receive's length is 8, the value's
# bytes), so dtestx's check of it cannot pass there (doc/dat.md); iWARP
# has no datagrams for the UD run.
#
# dtestx's server listens on TCP port 15828 for the client's first contact,
# as dtest does: runs of this script and of the other dtest scripts must
# not overlap (the Meson tests are not parallel).
#
# SPDX-License-Identifier: MIT
set -u
conf=$1
ia=$2
mode=${3:-}
dtestx=$(command -v dtestx) || { echo "dtestx is not installed (Debian package dapl2-utils): skipped"; exit 77; }
export DAT_OVERRIDE="$conf"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/pair_lib.sh"

if [ "$mode" = ud ]; then
  client_args=-c
  pair_run "$dtestx" -u "IB extension test - UD test PASSED" "waiting to snd addr" \
    "Could not connect to" -u
  for side in server client; do
    grep -q "Connected! 4 endpoints" "$dir/$side" &&
      [ "$(grep -c "Recv RMR message" "$dir/$side")" -eq 4 ] || {
      echo "dtestx -u over $ia: the $side did not connect its 4 endpoints and receive 4 datagrams"
      fail=1
    }
  done
  exit $fail
fi

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
