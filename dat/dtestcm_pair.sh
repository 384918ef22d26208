#!/bin/sh
# Debian's dtestcm (dapl2-utils), unchanged, over libdaplitapi: a server
# and a client in two processes on one IT-API interface set up 1000
# connections, 100 requested at once, each carrying 48 bytes of private
# data the other side checks; first polling for every event, then with
# the server listening on 100 service points (-m), then waiting on the
# EVDs (-w).  Each side must exit 0 and print that all 1000 connected.
# Exit 77 (skipped) when dtestcm is not installed.
#
#   dtestcm_pair.sh DAT_CONF INTERFACE [ud]
#
# With "ud", the same three runs with -u instead: 1000 UD EPs each side,
# each "connection" the datagram service exchange of DAT's IB UD
# extension (doc/dat.md), the UD connection events checked by dtestcm;
# over interfaces with datagrams (InfiniBand) only.
#
# Like dtest, dtestcm's server listens on TCP port 15828 for the client's
# first contact and on DAT connection qualifiers from 45248: runs of this
# script and of dtest_pair.sh must not overlap (the Meson tests are not
# parallel).
#
# SPDX-License-Identifier: MIT
set -u
conf=$1
ia=$2
ud=
[ "${3:-}" = ud ] && ud=-u
dtestcm=$(command -v dtestcm) || { echo "dtestcm is not installed (Debian package dapl2-utils): skipped"; exit 77; }
export DAT_OVERRIDE="$conf"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/pair_lib.sh"

# dtestcm's client tries the server's TCP port ten times, a second apart.
ready="Conn server waiting for client"
pass="ALL 1000 CONNECTED on"
# shellcheck disable=SC2086 # $ud: a word or none
pair_run "$dtestcm" "${ud:-default}" "$pass" "$ready" "" -c 1000 -b 100 $ud
# shellcheck disable=SC2086
pair_run "$dtestcm" "-m${ud:+ $ud}" "$pass" "$ready" "" -c 1000 -b 100 -m $ud
# shellcheck disable=SC2086
pair_run "$dtestcm" "-w${ud:+ $ud}" "$pass" "$ready" "" -c 1000 -b 100 -w $ud
exit $fail
