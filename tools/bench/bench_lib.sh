# tools/bench/bench_lib.sh: what the bench scripts share (sourced, not run).
#
#   bench_args NAME "$@"                   parse --build --reps --out --smoke
#                                         --help; sets invocation, build,
#                                         reps, out, smoke, perf, tmp, pids
#   fi_run PROVIDER EP SIZE ITERS          one fi_pingpong run (needs nextport)
#   idle_cpu                               CPU % of an idle event-mode server
#                                         (sets idle, idle_threads; needs
#                                         nextport)
#   put NAME REP VALUE                     record a figure of a repetition
#   stat / ratio / fmt / verdict           the statistics of the tables
#
# SPDX-License-Identifier: MIT

bench_args() {
  local name=$1
  shift
  invocation="tools/bench/$name.sh${*:+ $*}"
  build="$root/build"
  out=""
  smoke=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --build) build=$2; shift 2 ;;
      --reps) reps=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --smoke) smoke=1; reps=1; shift ;;
      -h|--help) sed -n '2,/^# SPDX/p' "$here/$name.sh" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      *) echo "$name.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
  done
  build=$(cd "$build" && pwd) || exit 2
  perf="$build/tools/perf/itapi-perf"
  [ -x "$perf" ] || { echo "$name.sh: $perf not built (ninja -C $build)" >&2; exit 2; }
  [ -n "$out" ] || out="$build/bench/$name-$(date -u +%Y%m%dT%H%M%SZ).md"
  mkdir -p "$(dirname "$out")"
  tmp=$(mktemp -d "/tmp/$name-bench.XXXXXX")
  pids=()
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}

col() { cut -d, -f"$1"; }   # a field of itapi-perf's CSV

# fi_pingpong server and client with PROVIDER and endpoint type EP on the
# next port; prints "usec/xfer MB/sec" of its last line.
fi_run() {  # PROVIDER EP SIZE ITERS
  nextport
  timeout 60 fi_pingpong -p "$1" -e "$2" -I "$4" -S "$3" -B $port >/dev/null 2>&1 &
  local s=$!; pids+=($s)
  sleep 0.5
  timeout 60 fi_pingpong -p "$1" -e "$2" -I "$4" -S "$3" -P $port 127.0.0.1 2>/dev/null |
    awk '$1 ~ /^[0-9]+[kmg]?$/ && NF >= 7 { print $7, $6 }' | tail -1
  wait $s 2>/dev/null
}

# CPU seconds (user + system) a process has used so far.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }

# Idle: an event-mode connection with no traffic.  The client is stopped
# in the middle of a send_lat run, so the server sits in it_evd_wait for a
# ping that does not come; its CPU use over 2 s, in percent, goes to
# $idle, and its threads (name and %cpu since start) to $idle_threads.
# With perf, the CPU time is its task-clock (to the microsecond); without,
# /proc/PID/stat's ticks (a tick of 10 ms in 2 s is 0.5 %).
idle_cpu() {
  idle=""; idle_threads=""
  nextport
  "$perf" -s -p $port >/dev/null 2>&1 &
  local srv=$!; pids+=($srv)
  sleep 0.3
  "$perf" -c 127.0.0.1 -p $port -e -t send_lat -S 8 -n 100000000 --timeout 60 >/dev/null 2>&1 &
  local cli=$!; pids+=($cli)
  sleep 1
  kill -STOP $cli 2>/dev/null
  sleep 0.5
  if [ -r /proc/$srv/stat ]; then
    local c0 c1 ms
    ms=$(command -v perf >/dev/null &&
         perf stat -x, -e task-clock -p $srv -- sleep 2 2>&1 | awk -F, '$3 == "task-clock" { print $1 }')
    if [ -n "$ms" ]; then
      idle=$(echo "$ms / 20" | bc -l)
    else
      c0=$(cpu_s $srv); sleep 2; c1=$(cpu_s $srv)
      idle=$(echo "($c1 - $c0) * 100 / 2" | bc -l)
    fi
    idle_threads=$(ps -L -o comm=,%cpu= -p $srv | tr -s ' ' | tr '\n' ';')
  fi
  kill -CONT $cli 2>/dev/null; kill $cli $srv 2>/dev/null; wait $cli $srv 2>/dev/null
}

declare -A V   # V[name.rep] = value
put() { [ -n "$3" ] && V["$1.$2"]=$3; }
mean2() {  # A B -> their mean; the one given if the other is empty
  if [ -n "$1" ] && [ -n "$2" ]; then echo "($1 + $2) / 2" | bc -l; else echo "${1:-$2}"; fi
}

stat() {  # NAME -> "median min max" over repetitions, or empty
  local vals=()
  for r in $(seq 1 "$reps"); do [ -n "${V[$1.$r]:-}" ] && vals+=("${V[$1.$r]}"); done
  [ ${#vals[@]} -gt 0 ] || return 0
  printf '%s\n' "${vals[@]}" | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'
}
ratio() {  # A B -> paired median of A/B per repetition
  local rs=()
  for r in $(seq 1 "$reps"); do
    local a=${V[$1.$r]:-} b=${V[$2.$r]:-}
    [ -n "$a" ] && [ -n "$b" ] && rs+=("$(echo "$a / $b" | bc -l)")
  done
  [ ${#rs[@]} -gt 0 ] || return 0
  printf '%s\n' "${rs[@]}" | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f", m }'
}
fmt() {  # NAME MISSING-TEXT -> "median (min-max)"
  local s; s=$(stat "$1")
  if [ -z "$s" ]; then echo "$2"; return; fi
  echo "$s" | awk '{ f = ($1 < 1) ? "%.3f" : ($1 < 100 ? "%.2f" : "%.0f");
    printf f " (" f "–" f ")", $1, $2, $3 }'
}
verdict() {  # RATIO OP LIMIT
  [ -n "$1" ] || { echo "n/a"; return; }
  if echo "$1 $2 $3" | awk '{ exit !(($2 == "<=" && $1 <= $3) || ($2 == ">=" && $1 >= $3)) }'; then
    echo "met"; else echo "not met"; fi
}

report_head() {  # TITLE -> the report's heading, command, machine and the figure table's head
  echo "## $1"
  echo
  echo "Command: \`$invocation\` ($reps repetition(s))"
  echo "($(date -u +'%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r); load average at the start of"
  echo "each repetition:$loads).  Median over the repetitions (min–max); ratios are"
  echo "paired per repetition, then the median."
  echo
  echo "| figure | value |"
  echo "|---|---|"
}
