#!/usr/bin/env bash
# tools/bench/ib.sh: itapi-perf over vp/ib against perftest on the same
# kernel device, side by side in one run, in the lab VM (lab/run.sh): the
# adapter must add nothing a user can measure (doc/provider-ib.md, "Speed").
#
#   tools/bench/ib.sh [--build DIR] [--reps N] [--out FILE.md] [--smoke]
#                     [--dev rxe0[,siw0]]
#
# It boots the lab VM once (lab/build-initrd.sh must have built it; the
# build tree must lie inside this repository, which the VM shares) and runs
# itself there with --guest.  In the VM, server and client are two
# processes on the device's address (rxe0: 10.9.0.1, siw0: 10.0.2.15), the
# server pinned to CPU 0 and the client to CPU 1 for both programs (two
# busy pollers left to the scheduler on two vCPUs sometimes share one, and
# a run then takes milliseconds per round trip).  Per repetition and
# device, each pair below runs back to back, perftest first in odd
# repetitions and itapi-perf first in even ones:
#   - ib_send_lat -R  vs  itapi-perf -t send_lat, 8 B and 4 KiB;
#   - ib_write_lat -R vs  itapi-perf -t write_lat, 8 B and 4 KiB;
#   - ib_write_bw -R  vs  itapi-perf -t write_bw, 4 KiB and 64 KiB, with
#     itapi-perf's window and completion interval set to perftest's
#     TX depth and CQ moderation (read from its output).
# Like with like: latency is half a round trip, perftest's t_typical (the
# median) against itapi-perf's median, both timed with the TSC
# (ITAPI_PERF_CLOCK=tsc: the VM's kernel keeps time with hpet, and a
# clock_gettime is then a ~1 us system call; perftest always reads the
# TSC), and itapi-perf checks no data (--no-verify; perftest checks none).
# Bandwidth is MB/s = 1e6 B/s (perftest prints MiB/s: converted).  The same
# iteration counts on both sides.  The table gives the median over the
# repetitions (min-max) and the ratio itapi / perftest taken per
# repetition (paired), then the median; targets: latency <= 1.10,
# bandwidth >= 0.95.  Under TCG the absolute figures mean little; the
# ratios do.  Bandwidth in this VM is moved most by rxe's retry timeouts
# (a packet lost on the loopback path waits out the retransmission
# timeout): the report lists them per run (rdma statistic,
# completer_retry_err).  It takes 2-3 min per repetition and device on a
# shared host, plus the boot; it is not a CI test; --smoke (few
# iterations, one repetition) only checks that it runs.
#
# SPDX-License-Identifier: MIT
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=3
. "$here/bench_lib.sh"
lab_args ib "$@"

if [ $smoke = 1 ]; then
  N_LAT=300; N_BW4K=300; N_BW64K=100
else
  N_LAT=5000; N_BW4K=10000; N_BW64K=2000
fi

# ---- in the VM: run the pairs, print "FIG name rep value" ----
if [ $guest = 1 ]; then
  export ITAPI_PROVIDER_PATH="$build/vp/ib/libitapi-ib.so" ITAPI_PROVIDER=ib ITAPI_PERF_CLOCK=tsc
  port=7400
  nextport() { port=$((port + 1)); }

  # perftest TOOL DEV SIZE ITERS: the client's result row; its output in
  # $tmp/pt.out (rdma_cm has no retry: the server gets a second to listen).
  pt() {
    nextport
    "${srv_cpu[@]}" timeout 300 "$1" -R -d "$2" -s "$3" -n "$4" -p $port >"$tmp/pts.out" 2>&1 &
    local s=$!
    sleep 1
    # A client that died (perftest 4.5 sometimes segfaults at its end)
    # leaves its server waiting: it is stopped, the pair has no figure.
    "${cli_cpu[@]}" timeout 300 "$1" -R -d "$2" -s "$3" -n "$4" -p $port "$(addr "$2")" \
      >"$tmp/pt.out" 2>&1 || { sleep 2; kill $s 2>/dev/null; }
    wait $s
    awk '/#bytes/ { getline; print; exit }' "$tmp/pt.out"
  }
  # itapi-perf DEV TEST SIZE ITERS [OPTIONS]: the client's CSV row.
  ip() {
    local dev=$1 t=$2 size=$3 n=$4
    shift 4
    nextport
    "${srv_cpu[@]}" timeout 300 "$perf" -s -i "$dev" -p $port >"$tmp/its.out" 2>&1 &
    local s=$!
    sleep 1
    "${cli_cpu[@]}" timeout 300 "$perf" -c "$(addr "$dev")" -i "$dev" -p $port -t "$t" -S "$size" \
      -n "$n" --csv "$@" 2>"$tmp/itc.err" | grep "^$t," || { sleep 2; kill $s 2>/dev/null; }
    wait $s
  }
  lat_pair() {  # DEV REP TEST SIZE NAME
    local tool=ib_$3 a b
    for side in $(if [ $(($2 % 2)) = 1 ]; then echo pt it; else echo it pt; fi); do
      if [ $side = pt ]; then
        a=$(pt "$tool" "$1" "$4" $N_LAT | awk '{ print $5 }')
        fig "$1.pt_$5" "$2" "$a"
      else
        b=$(ip "$1" "$3" "$4" $N_LAT --no-verify | col 5)
        fig "$1.it_$5" "$2" "$b"
      fi
    done
  }
  # rxe's count of requester retry timeouts (a lost packet waits out the
  # QP's retransmission timeout): what moves bandwidth most in the VM.
  retries() {
    rdma statistic show link "$1/1" 2>/dev/null | sed -n 's/.* completer_retry_err \([0-9]*\).*/\1/p'
  }
  bw_pair() {  # DEV REP SIZE ITERS NAME
    local a b depth=128 every=1 r0 r1
    for side in $(if [ $(($2 % 2)) = 1 ]; then echo pt it; else echo it pt; fi); do
      r0=$(retries "$1")
      if [ $side = pt ]; then
        a=$(pt ib_write_bw "$1" "$3" "$4" | awk '{ printf "%.4f", $4 * 1.048576 }')
        fig "$1.pt_$5" "$2" "$a"
        depth=$(sed -n 's/^ *TX depth *: *\([0-9]*\).*/\1/p' "$tmp/pt.out" | head -1)
        every=$(sed -n 's/^ *CQ Moderation *: *\([0-9]*\).*/\1/p' "$tmp/pt.out" | head -1)
      else
        b=$(ip "$1" write_bw "$3" "$4" -W "${depth:-128}" --signal "${every:-1}" | col 11)
        [ -n "$b" ] && fig "$1.it_$5" "$2" "$(echo "$b * 1000" | bc -l)"
      fi
      r1=$(retries "$1")
      [ -n "$r0" ] && [ -n "$r1" ] && echo "FIG $1.rtx_${side}_$5 $2 $((r1 - r0))"
    done
    echo "FIG $1.window $2 ${depth:-128}/${every:-1}"
  }

  lab_rep() {  # DEV REP
    lat_pair "$1" "$2" send_lat 8 send8
    lat_pair "$1" "$2" send_lat 4096 send4k
    lat_pair "$1" "$2" write_lat 8 write8
    lat_pair "$1" "$2" write_lat 4096 write4k
    bw_pair "$1" "$2" 4096 $N_BW4K wbw4k
    bw_pair "$1" "$2" 65536 $N_BW64K wbw64k
  }

  echo "FIG vm.clocksource 0 $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
  lab_guest_run
  exit 0
fi

# ---- on the host: boot the VM, collect, tabulate ----
[ -f "$build/vp/ib/libitapi-ib.so" ] ||
  { echo "ib.sh: no vp/ib module in $build (libibverbs-dev, librdmacm-dev)" >&2; exit 2; }
lab_host_run 150

rtx() {  # DEV NAME -> "a,b,c / x,y,z": retry timeouts per repetition, perftest / itapi
  local p="" i="" r
  for r in $(seq 1 "$reps"); do
    p="$p${p:+,}${V[$1.rtx_pt_$2.$r]:-?}"; i="$i${i:+,}${V[$1.rtx_it_$2.$r]:-?}"
  done
  echo "$p / $i"
}
row() {  # DEV NAME TEST SIZE UNIT OP LIMIT
  local r; r=$(ratio "$1.it_$2" "$1.pt_$2")
  echo "| $1 | $3 | $4 | $(fmt "$1.pt_$2" failed) | $(fmt "$1.it_$2" failed) | ${r:-n/a} | $6 $7 | $(verdict_word "$r" "$6" "$7") |"
}
{
  echo "## itapi-perf over vp/ib against perftest: one run of tools/bench/ib.sh"
  echo
  echo "Command: \`$invocation\` ($reps repetition(s))"
  echo "($(date -u +'%Y-%m-%d %H:%M UTC'); lab VM: qemu TCG, ${V[vm.cpus.0]:-?} vCPUs, kernel ${V[vm.kernel.0]:-?},"
  echo "clocksource ${V[vm.clocksource.0]:-?}; load average in the VM at the start of each repetition:$loads).  Median"
  echo "over the repetitions (min–max); the ratio is itapi ÷ perftest per repetition (paired), then"
  echo "the median.  Latency: half a round trip, µs (perftest t_typical, itapi-perf median); bandwidth:"
  echo "MB/s (1e6 B/s)."
  echo
  echo "| device | test | size | perftest | itapi-perf over vp/ib | ratio | target | |"
  echo "|---|---|---|---|---|---|---|---|"
  for dev in ${devs//,/ }; do
    row "$dev" send8 send_lat "8 B" us '<=' 1.10
    row "$dev" send4k send_lat "4 KiB" us '<=' 1.10
    row "$dev" write8 write_lat "8 B" us '<=' 1.10
    row "$dev" write4k write_lat "4 KiB" us '<=' 1.10
    row "$dev" wbw4k write_bw "4 KiB" MB/s '>=' 0.95
    row "$dev" wbw64k write_bw "64 KiB" MB/s '>=' 0.95
  done
  echo
  echo "Iterations per run: latency $N_LAT, write_bw 4 KiB $N_BW4K, 64 KiB $N_BW64K (itapi-perf adds"
  echo "10 % untimed warm-up).  write_bw window/completion interval (perftest's TX depth/CQ"
  echo "moderation, given to itapi-perf as -W/--signal): ${V[${devs%%,*}.window.1]:-?}."
  echo
  echo "Retry timeouts of the device during each write_bw run (rxe's completer_retry_err; a lost"
  echo "packet waits out the QP's retransmission timeout, in a run of a few seconds), per repetition,"
  echo "perftest / itapi-perf:"
  for dev in ${devs//,/ }; do
    echo "$dev 4 KiB: $(rtx "$dev" wbw4k); 64 KiB: $(rtx "$dev" wbw64k)."
  done
} >"$out"
cat "$out"
echo "ib.sh: written to $out" >&2
