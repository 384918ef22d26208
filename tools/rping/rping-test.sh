#!/bin/sh
# itapi-rping against itself across two processes: rping's protocol (Sends,
# an RDMA Read and an RDMA Write per ping) with every byte checked by both
# sides.  Usage: rping-test.sh ITAPI-RPING PORT INTERFACE [SIZE [OPTION...]]
# PORT 0 takes a port the host has free.  The OPTIONs go to both sides
# (--srq: each receives through a shared receive queue).
# The client is given no -a: it connects to the interface's own first
# address, as the conformance suite does (127.0.0.1 reaches no RNIC).
set -u
RPING=$1 PORT=$2 IA=$3 SIZE=${4:-64}
shift 3
[ $# -gt 0 ] && shift
[ "$PORT" != 0 ] ||
  PORT=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::", 0)); print(s.getsockname()[1])')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$RPING" -s -p "$PORT" -i "$IA" -C 20 -S "$SIZE" -v "$@" >"$out/server" 2>&1 &
srv=$!
"$RPING" -c -p "$PORT" -i "$IA" -C 20 -S "$SIZE" -v "$@" >"$out/client" 2>&1
crc=$?
wait $srv
src=$?
cat "$out/server" "$out/client"
[ $crc -eq 0 ] && [ $src -eq 0 ] || { echo "FAIL: client status $crc, server status $src"; exit 1; }
for f in server client; do
  grep -q "^itapi-rping: 20 pings of $SIZE bytes verified" "$out/$f" ||
    { echo "FAIL: the $f did not verify 20 pings"; exit 1; }
done
[ "$(grep -c '^ping data: rdma-ping-' "$out/client")" -eq 20 ] || { echo "FAIL: client ping lines"; exit 1; }
