#!/usr/bin/env bash
# tools/bench/dat.sh: what the DAT provider (dat/, libdaplitapi.so) adds to
# IT-API for the same work, over each interface DAT runs on, side by side in
# one run (issue 58's target: at most 5 % over itapi-perf, doc/dat.md).
#
#   tools/bench/dat.sh [--build DIR] [--reps N] [--out FILE.md] [--smoke]
#
# Each repetition runs, for each of emul-iw0, iwarp0 and emul0 (an
# interface whose dtest run fails shows as such), back to back, the same
# work twice:
#   - itapi-perf, server and client processes on 127.0.0.1 (-s, -c), busy
#     polling, over private memory (--mem private: dtest's buffers come
#     from malloc, which vp/emul cannot map into the peer as it maps
#     itx_mem_alloc's): send_lat of 64 B, and write_lat of 64 B with
#     --complete-first (each Write's completion taken before the target's
#     last byte is polled, as dtest -W does); the mean half round trip of
#     the run (avg_us), as dtest gives a mean;
#   - Debian's dtest (dapl2-utils) through the build tree's dat.conf,
#     server and client processes, polling (-p): its Message PingPong
#     (-b 64, a Send ping-pong of 100 messages, its sends unsignaled) and
#     its RDMA write PingPong (-W -b 64), each a mean half round trip.
# The ratios are dtest's figure over itapi-perf's for the same operation,
# taken per repetition and then the median.  dtest listens on the fixed
# TCP port 15828: nothing else may run dtest meanwhile (the Meson suite
# dat does).  It installs nothing: without dtest the DAT rows show "not
# installed".  It needs both cores and takes about 10 s per repetition: not
# a CI test; --smoke (short runs, one repetition) only checks that
# everything runs.
# dtest's Message PingPong is fixed at 100 messages and leaves its Sends
# unsignaled, where send_lat signals each and takes the completion after
# the pong: the Send row is noisier than the Write row, and itapi-perf
# does slightly more there.
#
# SPDX-License-Identifier: MIT
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=5
. "$here/bench_lib.sh"
bench_args dat "$@"

conf="$build/dat/dat.conf"
have_dtest=0
command -v dtest >/dev/null && [ -f "$conf" ] && have_dtest=1
if [ $smoke = 1 ]; then
  N=500
else
  N=20000
fi
port=$(( 20000 + $$ % 20000 ))
nextport() { port=$((port + 1)); }
ias="emul-iw0 iwarp0 emul0"

# itapi-perf server + client processes over IA; prints its CSV lines.
xperf() {  # IA ARGS...
  local ia=$1
  shift
  nextport
  "$perf" -s -p $port -i "$ia" --mem private >/dev/null 2>"$tmp/srv.err" &
  local s=$!; pids+=($s)
  sleep 0.3
  timeout 120 "$perf" -c 127.0.0.1 -p $port -i "$ia" --mem private --csv "$@" 2>"$tmp/cli.err" |
    grep -v '^test'
  wait $s 2>/dev/null
}

# dtest server + client over IA with ARGS; prints the client's mean half
# round trip of the ping-pong named PATTERN ("Message PingPong", "RDMA
# write PingPong"), in µs, or nothing when a side did not pass.
dtest_lat() {  # IA PATTERN ARGS...
  local ia=$1 what=$2
  shift 2
  DAT_OVERRIDE=$conf timeout 120 dtest -s -P "itapi-$ia" "$@" >"$tmp/dsrv.out" 2>&1 &
  local s=$!; pids+=($s)
  local tries=0
  while :; do
    DAT_OVERRIDE=$conf timeout 120 dtest -h 127.0.0.1 -P "itapi-$ia" "$@" >"$tmp/dcli.out" 2>&1
    grep -q "Could not connect to" "$tmp/dcli.out" || break
    tries=$((tries + 1)); [ $tries -lt 100 ] || break
    sleep 0.1
  done
  wait $s 2>/dev/null
  grep -q "Test Complete. PASSED" "$tmp/dcli.out" && grep -q "Test Complete. PASSED" "$tmp/dsrv.out" ||
    return 0
  grep "$what" "$tmp/dcli.out" | sed -n 's/.*latency \([0-9.]*\) us.*/\1/p' | tail -1
}

echo "dat.sh: $reps repetition(s), build $build, results to $out" >&2
loads=""
for r in $(seq 1 "$reps"); do
  loads="$loads $(cut -d' ' -f1 /proc/loadavg)"
  echo "  repetition $r/$reps (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  for ia in $ias; do
    put "it_send.$ia" "$r" "$(xperf "$ia" -t send_lat -S 64 -n $N | grep '^send_lat' | col 6)"
    put "it_write.$ia" "$r" \
      "$(xperf "$ia" -t write_lat --complete-first -S 64 -n $N | grep '^write_lat' | col 6)"
    if [ $have_dtest = 1 ]; then
      put "dat_send.$ia" "$r" "$(dtest_lat "$ia" "Message PingPong" -p -b 64 -B $N)"
      put "dat_write.$ia" "$r" "$(dtest_lat "$ia" "RDMA write PingPong" -W -p -b 64 -B $N)"
    fi
  done
done

# ---- statistics ----
nodat="not installed: apt-get install dapl2-utils, and build with -Ddat=enabled"
[ $have_dtest = 1 ] && nodat="failed (run dtest over this interface by hand, doc/dat.md)"
{
  report_head "DAT over IT-API, against itapi-perf: one run of tools/bench/dat.sh"
  for ia in $ias; do
    echo "| $ia: itapi-perf send_lat 64 B, 2 processes, busy poll, private memory, µs (mean of run) | $(fmt "it_send.$ia" -) |"
    echo "| $ia: dtest Message PingPong 64 B (-p), µs (mean of run) | $(fmt "dat_send.$ia" "$nodat") |"
    echo "| $ia: itapi-perf write_lat --complete-first 64 B, private memory, µs (mean of run) | $(fmt "it_write.$ia" -) |"
    echo "| $ia: dtest RDMA write PingPong 64 B (-W -p), µs (mean of run) | $(fmt "dat_write.$ia" "$nodat") |"
  done
  echo
  echo "| target | ratio | limit | |"
  echo "|---|---|---|---|"
  for ia in $ias; do
    a=$(ratio "dat_send.$ia" "it_send.$ia"); b=$(ratio "dat_write.$ia" "it_write.$ia")
    echo "| $ia: dtest Send ping-pong ÷ itapi-perf send_lat | ${a:-n/a} | ≤ 1.05 | $(verdict "$a" '<=' 1.05) |"
    echo "| $ia: dtest RDMA Write ping-pong ÷ itapi-perf write_lat | ${b:-n/a} | ≤ 1.05 | $(verdict "$b" '<=' 1.05) |"
  done
} >"$out"
cat "$out"
echo "dat.sh: written to $out" >&2
