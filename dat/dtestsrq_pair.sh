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

fail=0
run() {
  name=$1; shift
  pass="DAPL RC SRQ Test Complete."
  case " $* " in *" -S 0 "*) pass="DAPL RC none SRQ Test Complete." ;; esac
  : > "$dir/server"
  timeout 120 "$dtestsrq" -s -P "itapi-$ia" -p $port "$@" > "$dir/server" 2>&1 &
  spid=$!
  # dtestsrq's client connects at once and gives up on a refusal: start it
  # once the server says it listens.
  tries=0
  while ! grep -q "server ready on port" "$dir/server" && kill -0 $spid 2>/dev/null; do
    tries=$((tries + 1))
    [ $tries -lt 300 ] || break
    sleep 0.1
  done
  timeout 120 "$dtestsrq" -h 127.0.0.1 -P "itapi-$ia" -p $port "$@" > "$dir/client" 2>&1
  crc=$?
  wait $spid
  src=$?
  for side in server client; do
    rc=$src; [ $side = client ] && rc=$crc
    if [ $rc -ne 0 ] || ! grep -q "$pass" "$dir/$side"; then
      echo "dtestsrq $name over $ia: the $side exited with $rc without its pass line:"
      sed 's/^/  | /' "$dir/$side"
      fail=1
    else
      echo "dtestsrq $name over $ia, $side: $(grep -h "$pass" "$dir/$side" | sed 's/^ *//')"
    fi
  done
}

run default
run "-c 4 -B 4 -t 8" -c 4 -B 4 -t 8
run "-S 0 -c 4 -B 2" -S 0 -c 4 -B 2
exit $fail
