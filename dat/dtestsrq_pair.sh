#!/bin/sh
# Debian's dtestsrq (dapl2-utils), unchanged, over libdaplitapi: a server
# and a client in two processes on one IT-API interface, each side's EPs
# taking their receives from one shared receive queue.  First the default
# run (one connection, three ping-pong bursts, buffers of the interface's
# DAT_IB_TRANSPORT_MTU), then four connections sharing the SRQ with bursts
# of four messages, then dtestsrq's run without an SRQ (-S 0: receives
# posted to each EP).  Each side must exit 0 and print dtestsrq's pass
# line (it exits 0 on most failures too, so the line is what counts).  Exit 77
# (skipped) when dtestsrq is not installed.
#
#   dtestsrq_pair.sh DAT_CONF INTERFACE
#
# The server listens on DAT connection qualifier 45260 (-p), away from
# dtest's 45248; runs of this script must not overlap (the Meson test is
# not parallel).
#
# SPDX-License-Identifier: MIT
set -u
conf=$1
ia=$2
dtestsrq=$(command -v dtestsrq) ||
  { echo "dtestsrq is not installed (Debian package dapl2-utils): skipped"; exit 77; }
export DAT_OVERRIDE="$conf"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
port=45260

. "$(dirname "$0")/pair_lib.sh"

# dtestsrq's client connects at once and gives up on a refusal: it starts
# once the server says it listens.
run() {
  name=$1; shift
  pass="DAPL RC SRQ Test Complete."
  case " $* " in *" -S 0 "*) pass="DAPL RC none SRQ Test Complete." ;; esac
  pair_run "$dtestsrq" "$name" "$pass" "server ready on port" "" -p $port "$@"
}

run default
run "-c 4 -B 4 -t 8" -c 4 -B 4 -t 8
run "-S 0 -c 4 -B 2" -S 0 -c 4 -B 2
exit $fail
