#!/usr/bin/env bash
# tools/bench/emul.sh: vp/emul across processes against its peers and the
# machine's raw limits, side by side in one run (doc/performance.md).
#
#   tools/bench/emul.sh [--build DIR] [--reps N] [--out FILE.md] [--smoke]
#
# Each repetition runs every configuration once, back to back (interleaved,
# as /work/shared/reference/baselines.md does), and the table gives the
# median over repetitions with min-max, plus the ratios the targets name,
# taken per repetition (paired) and then the median.  What it runs:
#   - itapi-perf over emul0, server and client processes, busy poll:
#     send_lat 8 B, write_lat 8 B, write_bw and read_bw 1 MiB (median per
#     run), with itapi-perf's default buffers (--mem itx: itx_mem_alloc, a
#     sealed memfd which emul maps into the peer: one-sided RDMA is a
#     memcpy) and again with --mem private (aligned_alloc, as an
#     application's malloc: cross-memory attach), side by side;
#     in-process loopback for reference;
#   - event mode (itapi-perf -e: every wait is it_evd_wait), send_lat and
#     write_lat 8 B (write_lat -e is notified by a zero-length Send behind
#     each Write), against the floor of one blocking wake-up each way:
#     itapi-floor evfd (tools/bench/itapi_floor.c, built by meson), an
#     eventfd ping-pong between two processes, each blocking in poll; run
#     just before and just after the event-mode runs (the mean of the two
#     is the repetition's floor);
#   - fi_pingpong -p shm -e rdm: 8 B latency and 1 MiB ping-pong bandwidth
#     (libfabric-bin; it prints a mean only);
#   - ucx_perftest, UCX_TLS=posix: tag_lat 8 B (p50) and ucp_put_bw 1 MiB
#     (ucx-utils);
#   - tools/bench/emul_probe.c, compiled here with cc -O2: the two-thread
#     cache-line ping-pong floor, single-core memcpy of 1 MiB, and one
#     process_vm_writev of 8 B and 1 MiB (what one-sided RDMA costs emul);
#   - once: the CPU an idle event-mode process uses (2 s, /proc/PID/stat);
#   - once: conformance/conf-scale (1000 pairs in a process, 64 across two
#     processes): setup time and memory per endpoint.
# It installs nothing: missing peers show as "not installed" in the table.
# It is slow (about 1 min per repetition) and needs both cores: it is not
# a CI test; --smoke (few iterations, one repetition) only checks that it
# runs.
#
# SPDX-License-Identifier: MIT
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=3
. "$here/bench_lib.sh"
bench_args emul "$@"

cc -O2 -Wall -pthread -o "$tmp/probe" "$here/emul_probe.c" || { echo "emul.sh: cc failed" >&2; exit 2; }
have_fi=0; command -v fi_pingpong >/dev/null && have_fi=1
have_ucx=0; command -v ucx_perftest >/dev/null && have_ucx=1

floor="$build/tools/bench/itapi-floor"
[ -x "$floor" ] || { echo "emul.sh: $floor not built (ninja -C $build)" >&2; exit 2; }

if [ $smoke = 1 ]; then
  N_LAT=200; N_BW=50; FI_LAT=200; FI_BW=20; UCX_LAT=2000; UCX_BW=50; PROBE_S=0.1; N_EV=200
else
  N_LAT=20000; N_BW=5000; FI_LAT=10000; FI_BW=200; UCX_LAT=20000; UCX_BW=500; PROBE_S=0.5; N_EV=10000
fi
port=$(( 20000 + $$ % 20000 ))
nextport() { port=$((port + 1)); }
export ITAPI_PROVIDER=emul

# itapi-perf server + client processes; prints the CSV lines of the client.
# XMEM=itx|shared|private: where both take their buffers (--mem; default
# itx, itx_mem_alloc: a memfd the peer maps; private: malloc'd memory,
# reached by cross-memory attach).
xperf() {
  nextport
  local mem=()
  [ -n "${XMEM:-}" ] && mem=(--mem "$XMEM")
  "$perf" -s -p $port "${mem[@]}" >/dev/null 2>"$tmp/srv.err" &
  local s=$!; pids+=($s)
  sleep 0.3
  timeout 120 "$perf" -c 127.0.0.1 -p $port --csv "${mem[@]}" "$@" 2>"$tmp/cli.err" | grep -v '^test'
  wait $s 2>/dev/null
}


ucx_run() {  # TEST SIZE ITERS -> "p50_us overall_us overall_MiBps"
  nextport
  local w=$(( $3 / 10 ))
  UCX_TLS=posix timeout 60 ucx_perftest -p $port -t "$1" -s "$2" -n "$3" -w $w >/dev/null 2>&1 &
  local s=$!; pids+=($s)
  sleep 0.3
  UCX_TLS=posix timeout 60 ucx_perftest 127.0.0.1 -p $port -t "$1" -s "$2" -n "$3" -w $w -f 2>/dev/null |
    awk '$1 ~ /^[0-9]+$/ && NF >= 8 { print $2, $4, $6 }' | tail -1
  wait $s 2>/dev/null
}


echo "emul.sh: $reps repetition(s), build $build, results to $out" >&2
loads=""
for r in $(seq 1 "$reps"); do
  loads="$loads $(cut -d' ' -f1 /proc/loadavg)"
  echo "  repetition $r/$reps (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  # The latency figures whose ratios are targets run back to back, first:
  # the machine's state (which vCPUs, what else runs on the host) changes
  # over seconds, and a ratio is only fair between figures of one state.
  l=$(xperf -t send_lat,write_lat -S 8 -n $N_LAT)
  put emul_send "$r" "$(echo "$l" | grep '^send_lat' | col 5)"
  put emul_write "$r" "$(echo "$l" | grep '^write_lat' | col 5)"
  [ $have_ucx = 1 ] && put ucx_lat "$r" "$(ucx_run tag_lat 8 $UCX_LAT | cut -d' ' -f1)"
  put floor "$r" "$("$tmp/probe" clpp $PROBE_S | cut -d' ' -f2 | awk '{ print $1 / 1000 }')"
  l=$(XMEM=itx xperf -t write_bw,read_bw -S 1M -n $N_BW)
  put emul_wbw "$r" "$(echo "$l" | grep '^write_bw' | col 11)"
  put emul_rbw "$r" "$(echo "$l" | grep '^read_bw' | col 11)"
  # Event mode against the eventfd floor, back to back.
  f1=$("$floor" evfd $N_EV | cut -d' ' -f2)
  l=$(xperf -e -t send_lat,write_lat -S 8 -n $N_EV)
  put emul_send_ev "$r" "$(echo "$l" | grep '^send_lat' | col 5)"
  put emul_write_ev "$r" "$(echo "$l" | grep '^write_lat' | col 5)"
  f2=$("$floor" evfd $N_EV | cut -d' ' -f2)
  put evfd "$r" "$(mean2 "$f1" "$f2")"
  put emul_write_priv "$r" "$(XMEM=private xperf -t write_lat -S 8 -n $N_LAT | col 5)"
  l=$(XMEM=private xperf -t write_bw,read_bw -S 1M -n $N_BW)
  put emul_wbw_priv "$r" "$(echo "$l" | grep '^write_bw' | col 11)"
  put emul_rbw_priv "$r" "$(echo "$l" | grep '^read_bw' | col 11)"
  l=$(timeout 120 "$perf" -t send_lat,write_lat -S 8 -n $N_LAT --csv 2>/dev/null | grep -v '^test')
  put loop_send "$r" "$(echo "$l" | grep '^send_lat' | col 5)"
  put loop_write "$r" "$(echo "$l" | grep '^write_lat' | col 5)"
  if [ $have_fi = 1 ]; then
    put fi_lat "$r" "$(fi_run shm rdm 8 $FI_LAT | cut -d' ' -f1)"
    m=$(fi_run shm rdm 1048576 $FI_BW | cut -d' ' -f2); [ -n "$m" ] && put fi_bw "$r" "$(echo "$m / 1000" | bc -l)"
  fi
  if [ $have_ucx = 1 ]; then
    m=$(ucx_run ucp_put_bw 1048576 $UCX_BW | cut -d' ' -f3)
    [ -n "$m" ] && put ucx_bw "$r" "$(echo "$m * 1.048576 / 1000" | bc -l)"
  fi
  put memcpy "$r" "$("$tmp/probe" memcpy 1048576 $PROBE_S | cut -d' ' -f2)"
  put cma8 "$r" "$("$tmp/probe" cma 8 $PROBE_S | cut -d' ' -f2 | awk '{ print $1 / 1000 }')"
  m=$("$tmp/probe" cma 1048576 $PROBE_S | cut -d' ' -f2)
  [ -n "$m" ] && put cma1m "$r" "$(awk -v ns="$m" 'BEGIN { print 1048576 / ns }')"
done

idle_cpu
pscpu=$idle_threads

# Scale: the conformance program's own report (setup time, memory).
scale=""
if [ -x "$build/conformance/conf-scale" ]; then
  scale=$(ITAPI_SCALE_PAIRS=1000 ITAPI_SCALE_XPAIRS=64 timeout 120 "$build/conformance/conf-scale" 2>&1 |
          sed -n 's/^# scale: //p')
fi

# ---- statistics ----
nofi="not installed: apt-get install libfabric-bin ucx-utils"
noucx=$nofi
[ $have_fi = 1 ] && nofi="failed (see fi_pingpong -p shm by hand)"
[ $have_ucx = 1 ] && noucx="failed (see ucx_perftest by hand)"

r1=$(ratio emul_send ucx_lat); r2=$(ratio emul_send fi_lat); r3=$(ratio emul_write floor)
r4=$(ratio emul_wbw fi_bw); r5=$(ratio emul_wbw memcpy); r6=$(ratio emul_write_priv cma8)
r7=$(ratio emul_wbw_priv cma1m)
r8=$(ratio emul_wbw emul_wbw_priv); r9=$(ratio emul_rbw emul_rbw_priv)
r10=$(ratio emul_send_ev evfd); r11=$(ratio emul_write_ev evfd)
{
  report_head "vp/emul across processes: one run of tools/bench/emul.sh"
  echo "| emul send_lat 8 B, cross-process, busy poll, µs (median of run) | $(fmt emul_send -) |"
  echo "| emul write_lat 8 B, cross-process, busy poll, µs | $(fmt emul_write -) |"
  echo "| emul write_bw 1 MiB, cross-process, itx_mem_alloc buffers, GB/s | $(fmt emul_wbw -) |"
  echo "| emul read_bw 1 MiB, cross-process, itx_mem_alloc buffers, GB/s | $(fmt emul_rbw -) |"
  echo "| emul write_lat 8 B, private buffers (cross-memory attach), µs | $(fmt emul_write_priv -) |"
  echo "| emul write_bw 1 MiB, private buffers (cross-memory attach), GB/s | $(fmt emul_wbw_priv -) |"
  echo "| emul read_bw 1 MiB, private buffers (cross-memory attach), GB/s | $(fmt emul_rbw_priv -) |"
  echo "| emul send_lat 8 B, cross-process, event mode (-e), µs | $(fmt emul_send_ev -) |"
  echo "| emul write_lat 8 B, cross-process, event mode (-e, notified by a Send), µs | $(fmt emul_write_ev -) |"
  echo "| eventfd ping-pong, 2 processes blocking in poll (floor), µs (mean of the runs before and after) | $(fmt evfd -) |"
  echo "| emul send_lat 8 B, in-process loopback, µs | $(fmt loop_send -) |"
  echo "| emul write_lat 8 B, in-process loopback, µs | $(fmt loop_write -) |"
  echo "| UCX tag_lat 8 B, UCX_TLS=posix, µs (p50) | $(fmt ucx_lat "$noucx") |"
  echo "| UCX ucp_put_bw 1 MiB, UCX_TLS=posix, GB/s | $(fmt ucx_bw "$noucx") |"
  echo "| libfabric shm 8 B (fi_pingpong), µs (mean) | $(fmt fi_lat "$nofi") |"
  echo "| libfabric shm 1 MiB (fi_pingpong), GB/s | $(fmt fi_bw "$nofi") |"
  echo "| cache-line ping-pong, 2 threads (floor), µs | $(fmt floor -) |"
  echo "| memcpy 1 MiB, one core, GB/s | $(fmt memcpy -) |"
  echo "| process_vm_writev 8 B, µs per call | $(fmt cma8 -) |"
  echo "| process_vm_writev 1 MiB, GB/s | $(fmt cma1m -) |"
  echo "| idle event-mode server, CPU % over 2 s | ${idle:+$(printf '%.2f' "$idle")} |"
  echo
  echo "| target | ratio | limit | |"
  echo "|---|---|---|---|"
  echo "| send_lat 8 B ÷ UCX tag_lat posix 8 B | ${r1:-n/a} | ≤ 1 | $(verdict "$r1" '<=' 1) |"
  echo "| send_lat 8 B ÷ libfabric shm 8 B | ${r2:-n/a} | (reference) | |"
  echo "| write_lat 8 B ÷ cache-line floor | ${r3:-n/a} | ≤ 2 | $(verdict "$r3" '<=' 2) |"
  echo "| event send_lat 8 B ÷ eventfd floor | ${r10:-n/a} | ≤ 1.5 | $(verdict "$r10" '<=' 1.5) |"
  echo "| event write_lat 8 B (notified by a Send) ÷ eventfd floor | ${r11:-n/a} | ≤ 1.5 | $(verdict "$r11" '<=' 1.5) |"
  echo "| write_lat 8 B, private buffers ÷ one process_vm_writev 8 B | ${r6:-n/a} | (why) | |"
  echo "| write_bw 1 MiB ÷ libfabric shm 1 MiB | ${r4:-n/a} | ≥ 1 | $(verdict "$r4" '>=' 1) |"
  echo "| write_bw 1 MiB ÷ memcpy 1 MiB | ${r5:-n/a} | ≥ 0.8 | $(verdict "$r5" '>=' 0.8) |"
  echo "| write_bw 1 MiB, private buffers ÷ process_vm_writev 1 MiB | ${r7:-n/a} | (why) | |"
  echo "| idle event-mode CPU % | ${idle:+$(printf '%.2f' "$idle")} | ≈ 0 | $( [ -n "$idle" ] && verdict "$idle" '<=' 1 || echo n/a) |"
  echo
  echo "One-sided RDMA of 1 MiB across two processes by where the buffers come from"
  echo "(itapi-perf --mem itx, its default, against --mem private), GB/s:"
  echo
  echo "| operation | itx_mem_alloc | malloc (aligned_alloc) | ratio |"
  echo "|---|---|---|---|"
  echo "| RDMA Write (write_bw) | $(fmt emul_wbw -) | $(fmt emul_wbw_priv -) | ${r8:-n/a} |"
  echo "| RDMA Read (read_bw) | $(fmt emul_rbw -) | $(fmt emul_rbw_priv -) | ${r9:-n/a} |"
  echo
  echo "Threads of the idle server (comm, %cpu since start): ${pscpu:-n/a}"
  echo
  echo "Scale (conf-scale, emul0):"
  echo
  if [ -n "$scale" ]; then echo "$scale" | sed 's/^/- /'; else echo "- conf-scale not built or failed"; fi
} >"$out"
cat "$out"
echo "emul.sh: written to $out" >&2
