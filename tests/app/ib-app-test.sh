#!/bin/sh
# ib-app, an application written for InfiniBand that opens the interface
# "vp_softrdma" by name, as a server and a client in two processes over
# DEVICE, which a configuration file of its own (itapi.conf(5), through
# ITAPI_CONF) makes that name an alias of.  The file and its directory are
# the test's own and writable by its user alone, as the file rule asks.
#   ib-app-test.sh IB-APP DEVICE
# The server's port is the one the adapter chooses (said on its
# "listening" line): runs side by side (the sanitizer builds') never meet.
set -u
app=$1 dev=$2
dir=$(mktemp -d) || exit 1
trap 'kill $srv 2>/dev/null; rm -rf "$dir"' EXIT
srv=
chmod 700 "$dir"
printf '# ib-app over %s\n[interface vp_softrdma]\ndevice = %s\n' "$dev" "$dev" >"$dir/itapi.conf"
chmod 600 "$dir/itapi.conf"
export ITAPI_CONF="$dir/itapi.conf"

"$app" --server --port 0 >"$dir/server" 2>&1 &
srv=$!
# The client connects once the server listens (it would retry otherwise).
i=0
until grep -q 'listening' "$dir/server" 2>/dev/null; do
  if ! kill -0 $srv 2>/dev/null || [ $i -ge 300 ]; then
    echo "FAIL: the server did not listen on vp_softrdma (device $dev):"
    cat "$dir/server"
    exit 1
  fi
  i=$((i + 1))
  sleep 0.1
done
port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$dir/server")
"$app" --client --port "$port" >"$dir/client" 2>&1
crc=$?
wait $srv
src=$?
srv=
echo "--- server"; cat "$dir/server"
echo "--- client"; cat "$dir/client"
[ $crc -eq 0 ] && [ $src -eq 0 ] || { echo "FAIL over $dev: client status $crc, server status $src"; exit 1; }
for f in server client; do
  grep -q "^ib-app: $f: done over vp_softrdma, every byte checked" "$dir/$f" ||
    { echo "FAIL over $dev: the $f did not finish its checks"; exit 1; }
done
echo "ib-app over vp_softrdma = $dev: Sends, RDMA Writes and 32 RDMA Reads of 8 segments, checked"
