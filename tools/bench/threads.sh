#!/usr/bin/env bash
# tools/bench/threads.sh: the message rate of one and of two threads over
# vp/emul in one process, against UCX's shared-memory transport with one
# and two threads, side by side in one run (issue 26's target: two threads
# give at least 1.8 times one thread's rate, doc/performance.md).
#
#   tools/bench/threads.sh [--build DIR] [--reps N] [--out FILE.md] [--smoke]
#
# Each repetition runs, back to back:
#   - itapi-perf -T 1 and -T 2 over emul0 (ITAPI_PROVIDER=emul): send_bw
#     and write_bw of 8 B messages, each thread with an endpoint pair of its
#     own driving both ends, busy-polling (Mmsg/s, all threads together);
#     -T 2 --rmr: the same with an RMR allocated beside the run (a memory
#     window elsewhere in the process should not cost the threads their
#     scaling); -T 1 and -T 2 --srq: each receiving end takes its receives
#     from an SRQ of its own; and -T 1 and -T 2 --ud: ud_bw, 8 B datagrams between two datagram
#     endpoints of each thread's own;
#   - ucx_perftest -T 1 and -T 2 -M multi, UCX_TLS=posix,self, server and
#     client processes on 127.0.0.1: ucp_am_bw (active messages, as Sends)
#     and ucp_put_bw (as RDMA Writes), 8 B (Mmsg/s, its "Final" line).
#     UCX's server threads run on the same two CPUs, so its figures are a
#     reference beside ours, not the same work; the ratios that count are
#     each stack's two threads over its own one.
# It installs nothing: a missing ucx_perftest shows as "not installed".  It
# needs both cores and takes about 15 s per repetition: not a CI test;
# --smoke (short runs, one repetition) only checks that everything runs.
#
# SPDX-License-Identifier: MIT
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=5
. "$here/bench_lib.sh"
bench_args threads "$@"

have_ucx=0; command -v ucx_perftest >/dev/null && have_ucx=1
if [ $smoke = 1 ]; then
  SEC=0.2; UCX_N=100000
else
  SEC=2; UCX_N=4000000
fi
port=$(( 20000 + $$ % 20000 ))
nextport() { port=$((port + 1)); }

# itapi-perf -T THREADS [ARGS] over emul0; prints "send_mmsgps write_mmsgps".
rate() {
  ITAPI_PROVIDER=emul "$perf" -T "$@" -D $SEC --csv 2>"$tmp/perf.err" |
    awk -F, '$1 == "send_bw" { s = $6 } $1 == "write_bw" { w = $6 } END { print s, w }'
}

# itapi-perf -T THREADS --ud over emul0; prints the ud_bw Mmsg/s.
ud_rate() {
  ITAPI_PROVIDER=emul "$perf" -T "$1" --ud -D $SEC --csv 2>"$tmp/perf.err" |
    awk -F, '$1 == "ud_bw" { print $6 }'
}

# ucx_perftest TEST with THREADS threads on each side; prints Mmsg/s (the
# last field of its last line, "Final:" with threads: the overall rate).
ucx_rate() {  # TEST THREADS
  nextport
  UCX_TLS=posix,self timeout 60 ucx_perftest -p $port -t "$1" -s 8 -n $UCX_N -T "$2" -M multi \
    >/dev/null 2>&1 &
  local s=$!; pids+=($s)
  sleep 0.5
  UCX_TLS=posix,self timeout 60 ucx_perftest 127.0.0.1 -p $port -t "$1" -s 8 -n $UCX_N -T "$2" \
    -M multi -f 2>/dev/null | tail -n 1 | awk 'NF >= 4 { printf "%.6f\n", $NF / 1e6 }'
  wait $s 2>/dev/null
}

echo "threads.sh: $reps repetition(s), build $build, results to $out" >&2
loads=""
for r in $(seq 1 "$reps"); do
  loads="$loads $(cut -d' ' -f1 /proc/loadavg)"
  echo "  repetition $r/$reps (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  read -r s w <<<"$(rate 1)"; put send1 "$r" "$s"; put write1 "$r" "$w"
  read -r s w <<<"$(rate 2)"; put send2 "$r" "$s"; put write2 "$r" "$w"
  read -r s w <<<"$(rate 2 --rmr)"; put send2m "$r" "$s"; put write2m "$r" "$w"
  read -r s w <<<"$(rate 1 --srq)"; put send1q "$r" "$s"; put write1q "$r" "$w"
  read -r s w <<<"$(rate 2 --srq)"; put send2q "$r" "$s"; put write2q "$r" "$w"
  put ud1 "$r" "$(ud_rate 1)"; put ud2 "$r" "$(ud_rate 2)"
  if [ $have_ucx = 1 ]; then
    for t in 1 2; do
      put ucx_am$t "$r" "$(ucx_rate ucp_am_bw $t)"
      put ucx_put$t "$r" "$(ucx_rate ucp_put_bw $t)"
    done
  fi
done

noucx="not installed: apt-get install ucx-utils"
[ $have_ucx = 1 ] && noucx="failed (see ucx_perftest by hand)"
r1=$(ratio send2 send1); r2=$(ratio write2 write1)
r3=$(ratio ucx_am2 ucx_am1); r4=$(ratio ucx_put2 ucx_put1); r5=$(ratio ud2 ud1)
r6=$(ratio send2m send1); r7=$(ratio write2m write1)
r8=$(ratio send2q send1q); r9=$(ratio write2q write1q)
{
  report_head "Message rate of one and two threads: one run of tools/bench/threads.sh"
  echo "| emul send_bw 8 B, 1 thread (itapi-perf -T 1), Mmsg/s | $(fmt send1 -) |"
  echo "| emul send_bw 8 B, 2 threads (itapi-perf -T 2), Mmsg/s | $(fmt send2 -) |"
  echo "| emul write_bw 8 B, 1 thread, Mmsg/s | $(fmt write1 -) |"
  echo "| emul write_bw 8 B, 2 threads, Mmsg/s | $(fmt write2 -) |"
  echo "| emul send_bw 8 B, 2 threads, an RMR allocated beside (--rmr), Mmsg/s | $(fmt send2m -) |"
  echo "| emul write_bw 8 B, 2 threads, an RMR allocated beside, Mmsg/s | $(fmt write2m -) |"
  echo "| emul send_bw 8 B, 1 thread, receiving through an SRQ (--srq), Mmsg/s | $(fmt send1q -) |"
  echo "| emul send_bw 8 B, 2 threads, each receiving through an SRQ, Mmsg/s | $(fmt send2q -) |"
  echo "| emul write_bw 8 B, 1 thread, an SRQ at the receiving end, Mmsg/s | $(fmt write1q -) |"
  echo "| emul write_bw 8 B, 2 threads, an SRQ at each receiving end, Mmsg/s | $(fmt write2q -) |"
  echo "| emul ud_bw 8 B, 1 thread (itapi-perf -T 1 --ud), Mmsg/s | $(fmt ud1 -) |"
  echo "| emul ud_bw 8 B, 2 threads, Mmsg/s | $(fmt ud2 -) |"
  echo "| UCX posix ucp_am_bw 8 B, 1 thread a side, Mmsg/s | $(fmt ucx_am1 "$noucx") |"
  echo "| UCX posix ucp_am_bw 8 B, 2 threads a side, Mmsg/s | $(fmt ucx_am2 "$noucx") |"
  echo "| UCX posix ucp_put_bw 8 B, 1 thread a side, Mmsg/s | $(fmt ucx_put1 "$noucx") |"
  echo "| UCX posix ucp_put_bw 8 B, 2 threads a side, Mmsg/s | $(fmt ucx_put2 "$noucx") |"
  echo
  echo "| target | ratio | limit | |"
  echo "|---|---|---|---|"
  echo "| emul send_bw: 2 threads ÷ 1 thread | ${r1:-n/a} | ≥ 1.8 | $(verdict "$r1" '>=' 1.8) |"
  echo "| emul write_bw: 2 threads ÷ 1 thread | ${r2:-n/a} | ≥ 1.8 | $(verdict "$r2" '>=' 1.8) |"
  echo "| emul send_bw, an RMR beside: 2 threads ÷ 1 thread | ${r6:-n/a} | (no target) | |"
  echo "| emul write_bw, an RMR beside: 2 threads ÷ 1 thread | ${r7:-n/a} | (no target) | |"
  echo "| emul send_bw, through SRQs: 2 threads ÷ 1 thread | ${r8:-n/a} | (no target) | |"
  echo "| emul write_bw, with SRQs: 2 threads ÷ 1 thread | ${r9:-n/a} | (no target) | |"
  echo "| emul ud_bw: 2 threads ÷ 1 thread | ${r5:-n/a} | (no target) | |"
  echo "| UCX ucp_am_bw: 2 threads ÷ 1 thread | ${r3:-n/a} | (reference) | |"
  echo "| UCX ucp_put_bw: 2 threads ÷ 1 thread | ${r4:-n/a} | (reference) | |"
} >"$out"
cat "$out"
echo "threads.sh: written to $out" >&2
