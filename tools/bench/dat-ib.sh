#!/usr/bin/env bash
# tools/bench/dat-ib.sh: our DAT provider (dat/, libdaplitapi.so, over
# vp/ib) against DAPL's own provider (libdaplofa, rdma_cm) on the same
# kernel device, side by side in one run, in the lab VM (lab/run.sh):
# issue 58's targets, latency within 1.10x of DAPL's, bandwidth at least
# 0.95x (doc/dat.md, "Speed").
#
#   tools/bench/dat-ib.sh [--build DIR] [--reps N] [--out FILE.md] [--smoke]
#                         [--dev rxe0[,siw0]]
#
# It boots the lab VM once (lab/build-initrd.sh must have built it; the
# build tree must lie inside this repository, which the VM shares) and runs
# itself there with --guest.  Both providers open the IA "bench-DEV" from
# dat.conf files of their own (DAT_OVERRIDE), ours on DEV, DAPL's on DEV's
# netdev as DAPL's dat.conf names it (rxe0: dummy0, siw0: eth0); server and
# client are two processes on the device's address, the server pinned to
# CPU 0 and the client to CPU 1.  Per repetition and device, each provider
# runs, DAPL's first in odd repetitions and ours first in even ones, with
# the same tools and arguments:
#   - Debian's dapltest: a server (-T S), then its performance test
#     (-T P, 4 KiB, one segment, its default pipeline) of RDMA Write and
#     RDMA Read, blocking (-m b) and polling (-m p), then quit (-T Q); the
#     figure is the client's bandwidth (its "raw:" line, MB/s of 2^20 B);
#   - Debian's dtest, polling (-p): its RDMA Write ping-pong (-W -b 64,
#     each Write signaled and its completion taken, the target's last byte
#     polled), the mean half round trip.  dtest prints a mean, which keeps
#     every stall of a vCPU whole, and under TCG one run in a few takes
#     half as long again as the others, whichever provider runs it.  So
#     each repetition runs the ping-pong 5 times per
#     provider, the providers alternated run by run right after each
#     other, and takes each provider's median of its runs as the
#     repetition's figure.
# The table gives the median over the repetitions (min-max) and the ratio
# ours / DAPL's taken per repetition (paired), then the median.  Under TCG
# the absolute figures mean little; the ratios do.  It takes about 2 min
# per repetition and device on a shared host, plus the boot; it is not a CI
# test; --smoke (few iterations, one repetition) only checks that it runs.
#
# SPDX-License-Identifier: MIT
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=3
. "$here/bench_lib.sh"
lab_args dat-ib "$@"

if [ $smoke = 1 ]; then
  N_P=200; N_LAT=200; lat_runs=1
else
  N_P=2000; N_LAT=2000; lat_runs=5
fi

# ---- in the VM: run both providers, print "FIG name rep value" ----
if [ $guest = 1 ]; then
  export ITAPI_PROVIDER_PATH="$build/vp/ib/libitapi-ib.so" ITAPI_PROVIDER=ib
  port=7600
  netdev() { case $1 in rxe0) echo dummy0 ;; siw0) echo eth0 ;; esac; }
  for d in ${devs//,/ }; do
    echo "bench-$d u2.0 nonthreadsafe default $build/dat/libdaplitapi.so dapl.2.0 \"$d 0\" \"\""
  done >"$tmp/ours.conf"
  for d in ${devs//,/ }; do
    echo "bench-$d u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"$(netdev "$d") 0\" \"\""
  done >"$tmp/ofa.conf"
  # dapltest prints a hundredth of 5 as ".5" (%d.%d): field FIELD of its
  # "raw:" line, read back as a number.
  raw_field() {
    sed -n 's/^raw: //p' "$1" | tr -d ' ' | cut -d, -f"$2" |
      awk -F. 'NF == 2 { printf "%d.%02d\n", $1, $2 }'
  }
  dapltest_perf() {  # PROVIDER DEV REP
    local conf=$tmp/$1.conf ia=bench-$2 a
    a=$(addr "$2")
    port=$((port + 100))
    DAT_OVERRIDE=$conf "${srv_cpu[@]}" timeout 300 dapltest -T S -D "$ia" -n $port >"$tmp/dts.out" 2>&1 &
    local s=$! i=0
    until grep -q "Service Point Ready" "$tmp/dts.out"; do
      i=$((i + 1))
      [ $i -lt 300 ] && kill -0 $s 2>/dev/null || { echo "dat-ib.sh: the dapltest server on $1 did not start" >&2; kill $s 2>/dev/null; return; }
      sleep 0.2
    done
    for op in RW RR; do
      for mode in b p; do
        DAT_OVERRIDE=$conf "${cli_cpu[@]}" timeout 300 dapltest -T P -s "$a" -D "$ia" -n $port -m $mode \
          -i $N_P $op 4096 >"$tmp/dtp.out" 2>&1
        fig "$2.$1_${op}_$mode" "$3" "$(raw_field "$tmp/dtp.out" 8)"
      done
    done
    DAT_OVERRIDE=$conf timeout 60 dapltest -T Q -s "$a" -D "$ia" -n $port >/dev/null 2>&1
    sleep 1
    kill $s 2>/dev/null
    wait $s 2>/dev/null
  }
  dtest_lat() {  # PROVIDER DEV: one ping-pong, its mean half round trip on stdout
    local conf=$tmp/$1.conf ia=bench-$2 a tries=0
    a=$(addr "$2")
    DAT_OVERRIDE=$conf "${srv_cpu[@]}" timeout 300 dtest -s -P "$ia" -W -p -b 64 -B $N_LAT >"$tmp/ds.out" 2>&1 &
    local s=$!
    while :; do
      DAT_OVERRIDE=$conf "${cli_cpu[@]}" timeout 300 dtest -h "$a" -P "$ia" -W -p -b 64 -B $N_LAT >"$tmp/dc.out" 2>&1
      grep -q "Could not connect to" "$tmp/dc.out" || break
      tries=$((tries + 1))
      [ $tries -lt 100 ] && kill -0 $s 2>/dev/null || break
      sleep 0.2
    done
    wait $s 2>/dev/null
    grep -q "Test Complete. PASSED" "$tmp/dc.out" || return
    sed -n 's/.*RDMA write PingPong.*latency \([0-9.]*\) us.*/\1/p' "$tmp/dc.out" | tail -1
  }
  median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

  lab_rep() {  # DEV REP
    local prov order k
    order=$(if [ $(($2 % 2)) = 1 ]; then echo ofa ours; else echo ours ofa; fi)
    for prov in $order; do
      dapltest_perf "$prov" "$1" "$2"
    done
    : >"$tmp/lat.ofa"; : >"$tmp/lat.ours"
    for k in $(seq 1 "$lat_runs"); do
      for prov in $order; do
        dtest_lat "$prov" "$1" >>"$tmp/lat.$prov"
      done
    done
    for prov in ofa ours; do
      echo "$lab_script: $1 repetition $2: dtest latency of $prov, µs:" $(cat "$tmp/lat.$prov") >&2
      fig "$1.${prov}_wlat" "$2" "$(median <"$tmp/lat.$prov")"
    done
  }

  lab_guest_run
  exit 0
fi

# ---- on the host: boot the VM, collect, tabulate ----
[ -f "$build/vp/ib/libitapi-ib.so" ] && [ -f "$build/dat/libdaplitapi.so" ] ||
  { echo "dat-ib.sh: no vp/ib module or DAT provider in $build (libibverbs-dev, librdmacm-dev, libdapl-dev)" >&2; exit 2; }
lab_host_run 240

row() {  # DEV NAME WHAT UNIT OP LIMIT
  local r
  r=$(ratio "$1.ours_$2" "$1.ofa_$2")
  echo "| $1 | $3 | $4 | $(fmt "$1.ofa_$2" failed) | $(fmt "$1.ours_$2" failed) | ${r:-n/a} | $5 $6 | $(verdict_word "$r" "$5" "$6") |"
}
{
  echo "## Our DAT provider over vp/ib against DAPL's own: one run of tools/bench/dat-ib.sh"
  echo
  echo "Command: \`$invocation\` ($reps repetition(s))"
  echo "($(date -u +'%Y-%m-%d %H:%M UTC'); lab VM: qemu TCG, ${V[vm.cpus.0]:-?} vCPUs, kernel ${V[vm.kernel.0]:-?};"
  echo "load average in the VM at the start of each repetition:$loads).  Median over the repetitions"
  echo "(min–max); the ratio is ours ÷ DAPL's per repetition (paired), then the median."
  echo
  echo "| device | test | unit | DAPL (libdaplofa) | ours (libdaplitapi over vp/ib) | ratio | target | |"
  echo "|---|---|---|---|---|---|---|---|"
  for dev in ${devs//,/ }; do
    row "$dev" RW_b "dapltest -T P RW 4 KiB, blocking" "MB/s" '>=' 0.95
    row "$dev" RW_p "dapltest -T P RW 4 KiB, polling" "MB/s" '>=' 0.95
    row "$dev" RR_b "dapltest -T P RR 4 KiB, blocking" "MB/s" '>=' 0.95
    row "$dev" RR_p "dapltest -T P RR 4 KiB, polling" "MB/s" '>=' 0.95
    row "$dev" wlat "dtest -W -p RDMA Write ping-pong 64 B" "µs" '<=' 1.10
  done
  echo
  echo "Operations per run: dapltest -T P $N_P, dtest ping-pong $N_LAT ($lat_runs runs per provider and"
  echo "repetition, alternated; a repetition's latency is each provider's median of its runs).  dapltest's MB is 2^20 bytes."
} >"$out"
cat "$out"
echo "dat-ib.sh: written to $out" >&2
