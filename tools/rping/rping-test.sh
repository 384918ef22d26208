#!/bin/sh
# itapi-rping against itself across two processes: rping's protocol (Sends,
# an RDMA Read and an RDMA Write per ping) with every byte checked by both
# sides.  Usage: rping-test.sh ITAPI-RPING PORT INTERFACE [SIZE]
# The client is given no -a: it connects to the interface's own first
# address, as the conformance suite does (127.0.0.1 reaches no RNIC).
set -u
RPING=$1 PORT=$2 IA=$3 SIZE=${4:-64}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$RPING" -s -p "$PORT" -i "$IA" -C 20 -S "$SIZE" -v >"$out/server" 2>&1 &
srv=$!
"$RPING" -c -p "$PORT" -i "$IA" -C 20 -S "$SIZE" -v >"$out/client" 2>&1
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
