#!/usr/bin/env bash
# tools/bench/iwarp.sh: vp/iwarp across two processes on 127.0.0.1 against
# raw TCP and libfabric's tcp provider, side by side in one run (the
# targets of doc/provider-iwarp.md, "Performance").
#
#   tools/bench/iwarp.sh [--build DIR] [--reps N] [--out FILE.md] [--smoke]
#
# Each repetition runs every configuration once, back to back (interleaved,
# as /work/shared/reference/baselines.md does), with the raw TCP baseline
# run just before and just after the vp/iwarp runs it is compared with (its
# figure for the repetition is the mean of the two, so that a drift of the
# host during the repetition weighs on both sides alike).  The table gives
# the median over repetitions with min-max, plus the ratios the targets
# name, taken per repetition (paired) and then the median.  What it runs:
#   - raw TCP, vp/iwarp/bench/tcp_bench.c compiled here with cc -O2, server
#     in a forked process, busy-polling, TCP_NODELAY: an 8 B ping-pong
#     (median half round trip) and a 1 MiB stream (GB/s);
#   - fi_pingpong -p tcp -e msg (libfabric-bin): 8 B latency and 1 MiB
#     ping-pong bandwidth (it prints a mean only);
#   - itapi-perf over iwarp0 (ITAPI_PROVIDER=iwarp), server -s -p PORT and
#     client -c 127.0.0.1 -p PORT, busy poll: send_lat 8 B (median of the
#     run), write_bw 1 MiB with CRC off, and with ITAPI_IWARP_CRC=1;
#   - event mode (itapi-perf -e: every wait is it_evd_wait), send_lat and
#     write_lat 8 B (write_lat -e is notified by a zero-length Send behind
#     each Write), against the floor of one blocking wake-up each way over
#     TCP: itapi-floor tcp (tools/bench/itapi_floor.c, built by meson), an
#     8-byte ping-pong between two processes over 127.0.0.1, TCP_NODELAY,
#     each side blocking in poll; run just before and just after the
#     event-mode runs (the mean of the two is the repetition's floor);
#   - once: the CPU an idle event-mode server uses (2 s, /proc/PID/stat).
# It installs nothing: a missing fi_pingpong shows as "not installed".
# It needs both cores and takes about 35 s per repetition: not a CI test;
# --smoke (few iterations, one repetition) runs in a few seconds and only
# checks that everything runs.
#
# SPDX-License-Identifier: MIT
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=7
. "$here/bench_lib.sh"
bench_args iwarp "$@"

cc -O2 -Wall -pthread -o "$tmp/tcp-bench" "$root/vp/iwarp/bench/tcp_bench.c" ||
  { echo "iwarp.sh: cc failed" >&2; exit 2; }
have_fi=0; command -v fi_pingpong >/dev/null && have_fi=1
floor="$build/tools/bench/itapi-floor"
[ -x "$floor" ] || { echo "iwarp.sh: $floor not built (ninja -C $build)" >&2; exit 2; }

if [ $smoke = 1 ]; then
  N_LAT=500; N_BW=50; FI_LAT=500; FI_BW=20; N_EV=200
else
  N_LAT=20000; N_BW=2000; FI_LAT=20000; FI_BW=200; N_EV=10000
fi
port=$(( 20000 + $$ % 20000 ))
nextport() { port=$((port + 1)); }
export ITAPI_PROVIDER=iwarp

# itapi-perf server + client processes; prints the client's CSV line.
xperf() {
  nextport
  "$perf" -s -p $port >/dev/null 2>"$tmp/srv.err" &
  local s=$!; pids+=($s)
  sleep 0.3
  timeout 120 "$perf" -c 127.0.0.1 -p $port --csv "$@" 2>"$tmp/cli.err" | grep -v '^test'
  wait $s 2>/dev/null
}



echo "iwarp.sh: $reps repetition(s), build $build, results to $out" >&2
loads=""
for r in $(seq 1 "$reps"); do
  loads="$loads $(cut -d' ' -f1 /proc/loadavg)"
  echo "  repetition $r/$reps (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  t1=$("$tmp/tcp-bench" lat 8 $N_LAT proc | awk '{ print $6 }')
  put iw_lat "$r" "$(xperf -t send_lat -S 8 -n $N_LAT | col 5)"
  t2=$("$tmp/tcp-bench" lat 8 $N_LAT proc | awk '{ print $6 }')
  put tcp_lat "$r" "$(mean2 "$t1" "$t2")"
  # Event mode against the blocking TCP floor, back to back.
  f1=$("$floor" tcp $N_EV | cut -d' ' -f2)
  l=$(xperf -e -t send_lat,write_lat -S 8 -n $N_EV)
  put iw_send_ev "$r" "$(echo "$l" | grep '^send_lat' | col 5)"
  put iw_write_ev "$r" "$(echo "$l" | grep '^write_lat' | col 5)"
  f2=$("$floor" tcp $N_EV | cut -d' ' -f2)
  put tcp_poll "$r" "$(mean2 "$f1" "$f2")"
  if [ $have_fi = 1 ]; then
    put fi_lat "$r" "$(fi_run tcp msg 8 $FI_LAT | cut -d' ' -f1)"
  fi
  t1=$("$tmp/tcp-bench" bw 1048576 $N_BW proc | awk '{ print $5 }')
  put iw_bw "$r" "$(xperf -t write_bw -S 1M -n $N_BW | col 11)"
  put iw_bw_crc "$r" "$(ITAPI_IWARP_CRC=1 xperf -t write_bw -S 1M -n $N_BW | col 11)"
  t2=$("$tmp/tcp-bench" bw 1048576 $N_BW proc | awk '{ print $5 }')
  put tcp_bw "$r" "$(mean2 "$t1" "$t2")"
  if [ $have_fi = 1 ]; then
    m=$(fi_run tcp msg 1048576 $FI_BW | cut -d' ' -f2); [ -n "$m" ] && put fi_bw "$r" "$(echo "$m / 1000" | bc -l)"
  fi
done

idle_cpu

# ---- statistics ----
nofi="not installed: apt-get install libfabric-bin"
[ $have_fi = 1 ] && nofi="failed (see fi_pingpong -p tcp by hand)"

r1=$(ratio iw_lat tcp_lat); r2=$(ratio iw_lat fi_lat); r3=$(ratio iw_bw tcp_bw)
r4=$(ratio iw_bw_crc tcp_bw); r5=$(ratio iw_bw fi_bw); r6=$(ratio fi_lat tcp_lat)
r7=$(ratio iw_send_ev tcp_poll); r8=$(ratio iw_write_ev tcp_poll)
{
  report_head "vp/iwarp across processes on 127.0.0.1: one run of tools/bench/iwarp.sh"
  echo "| raw TCP ping-pong 8 B, 2 processes, busy poll, µs (median of run; mean of the runs before and after iwarp's) | $(fmt tcp_lat -) |"
  echo "| iwarp send_lat 8 B, 2 processes, busy poll, µs (median of run) | $(fmt iw_lat -) |"
  echo "| libfabric tcp (fi_pingpong -e msg) 8 B, µs (mean) | $(fmt fi_lat "$nofi") |"
  echo "| iwarp send_lat 8 B, 2 processes, event mode (-e), µs | $(fmt iw_send_ev -) |"
  echo "| iwarp write_lat 8 B, 2 processes, event mode (-e, notified by a Send), µs | $(fmt iw_write_ev -) |"
  echo "| raw TCP ping-pong 8 B, 2 processes blocking in poll (floor), µs (mean of the runs before and after) | $(fmt tcp_poll -) |"
  echo "| raw TCP stream 1 MiB sends, 2 processes, GB/s (mean of the runs before and after iwarp's) | $(fmt tcp_bw -) |"
  echo "| iwarp write_bw 1 MiB, CRC off, GB/s | $(fmt iw_bw -) |"
  echo "| iwarp write_bw 1 MiB, CRC on (ITAPI_IWARP_CRC=1), GB/s | $(fmt iw_bw_crc -) |"
  echo "| libfabric tcp 1 MiB ping-pong bandwidth, GB/s | $(fmt fi_bw "$nofi") |"
  echo
  echo "| target | ratio | limit | |"
  echo "|---|---|---|---|"
  echo "| send_lat 8 B ÷ raw TCP 8 B | ${r1:-n/a} | ≤ 1.15 | $(verdict "$r1" '<=' 1.15) |"
  echo "| send_lat 8 B ÷ libfabric tcp 8 B | ${r2:-n/a} | ≤ 1 | $(verdict "$r2" '<=' 1) |"
  echo "| event send_lat 8 B ÷ TCP floor (blocking in poll) | ${r7:-n/a} | ≤ 1.5 | $(verdict "$r7" '<=' 1.5) |"
  echo "| event write_lat 8 B (notified by a Send) ÷ TCP floor | ${r8:-n/a} | ≤ 1.5 | $(verdict "$r8" '<=' 1.5) |"
  echo "| idle event-mode CPU % | ${idle:+$(printf '%.2f' "$idle")} | ≈ 0 | $( [ -n "$idle" ] && verdict "$idle" '<=' 1 || echo n/a) |"
  echo "| write_bw 1 MiB, CRC off ÷ raw TCP stream | ${r3:-n/a} | ≥ 0.90 | $(verdict "$r3" '>=' 0.90) |"
  echo "| write_bw 1 MiB, CRC on ÷ raw TCP stream | ${r4:-n/a} | ≥ 0.75 | $(verdict "$r4" '>=' 0.75) |"
  echo "| write_bw 1 MiB ÷ libfabric tcp 1 MiB | ${r5:-n/a} | (reference) | |"
  echo "| libfabric tcp 8 B ÷ raw TCP 8 B | ${r6:-n/a} | (reference) | |"
  echo
  echo "Threads of the idle server (comm, %cpu since start): ${idle_threads:-n/a}"
} >"$out"
cat "$out"
echo "iwarp.sh: written to $out" >&2
