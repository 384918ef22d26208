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
#   verdict_word RATIO OP LIMIT            PASS, MISS or n/a for a table row
#
# The lab-VM scripts (ib.sh, dat-ib.sh) boot the lab VM and run themselves
# in it with --guest; the VM prints its figures as "FIG name rep value":
#   lab_args NAME "$@"                     bench_args, plus --guest and
#                                         --dev DEV[,DEV] (sets guest, devs)
#   lab_guest_run                          in the VM: pins (srv_cpu, cli_cpu),
#                                         prints the VM's own figures, runs
#                                         the script's lab_rep DEV REP per
#                                         repetition and device
#   addr DEV / fig NAME REP VALUE          in the VM: DEV's address; print a
#                                         figure if it is a positive number
#   lab_host_run SECONDS                   on the host: boot the VM (SECONDS
#                                         per repetition and device), read
#                                         its figures into V (sets loads)
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
verdict_word() {  # RATIO OP LIMIT -> PASS / MISS / n/a
  case $(verdict "$@") in met) echo PASS ;; "not met") echo MISS ;; *) echo n/a ;; esac
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

# ---- the lab-VM scripts ----

lab_args() {  # NAME "$@"
  local name=$1 rest=()
  shift
  guest=0
  devs=rxe0
  while [ $# -gt 0 ]; do
    case "$1" in
      --guest) guest=1; shift ;;
      --dev) devs=$2; shift 2 ;;
      *) rest+=("$1"); shift ;;
    esac
  done
  lab_script=$name.sh
  bench_args "$name" "${rest[@]}"
  invocation="tools/bench/$lab_script${rest[*]:+ ${rest[*]}}${devs:+ --dev $devs}"
}

# The addresses lab/run.sh gives the VM's devices.
addr() { case $1 in rxe0) echo 10.9.0.1 ;; siw0) echo 10.0.2.15 ;; *) lab-ipof "$1" ;; esac; }

# A figure of a run that failed, or that is no positive number (perftest
# prints a bandwidth of 0.00 or a latency of inf when its run went wrong),
# is left out: the pair has no ratio.
fig() {  # NAME REP VALUE
  case $3 in '' | *[!0-9.]* | *.*.* | .) return ;; esac
  awk -v v="$3" 'BEGIN { exit !(v + 0 > 0) }' && echo "FIG $1 $2 $3"
}

# Server and client are pinned to CPUs of their own where there are two:
# two busy pollers left to the scheduler on two vCPUs sometimes share one,
# and a run then takes milliseconds per round trip.
lab_guest_run() {  # calls the script's lab_rep DEV REP
  local r dev
  srv_cpu=(); cli_cpu=()
  if [ "$(nproc)" -ge 2 ]; then srv_cpu=(taskset -c 0); cli_cpu=(taskset -c 1); fi
  echo "FIG vm.kernel 0 $(uname -r)"
  echo "FIG vm.cpus 0 $(nproc)"
  for r in $(seq 1 "$reps"); do
    echo "FIG vm.load $r $(cut -d' ' -f1 /proc/loadavg)"
    for dev in ${devs//,/ }; do
      echo "$lab_script: repetition $r/$reps on $dev (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      lab_rep "$dev" "$r"
    done
  done
}

# The VM shares this repository (lab/run.sh -s), so the build tree must lie
# inside it.  The VM's lines that start with the script's name are its
# progress, passed on to stderr.
lab_host_run() {  # SECONDS per repetition and device, on top of 240 for the boot
  local cache=${LAB_CACHE:-$root/lab/cache} ndev limit gargs rc tag name rep val r
  [ -f "$cache/initrd.img" ] || { echo "$lab_script: no lab VM image: run lab/build-initrd.sh" >&2; exit 2; }
  case $build/ in "$root"/*) ;; *) echo "$lab_script: $build is outside $root, which the VM shares" >&2; exit 2 ;; esac
  ndev=$(echo "$devs" | tr ',' '\n' | grep -c .)
  limit=$(( 240 + reps * ndev * $1 ))
  gargs=(--guest --build "$build" --reps "$reps" --dev "$devs")
  [ "$smoke" = 1 ] && gargs+=(--smoke)
  echo "$lab_script: $reps repetition(s) on $devs in the lab VM (at most $limit s), build $build, results to $out" >&2
  LAB_CACHE=$cache "$root/lab/run.sh" -q -s "$root" -m 2G -t $limit "bash $here/$lab_script ${gargs[*]}" 2>&1 |
    tr -d '\r' | tee "$tmp/vm.out" | grep --line-buffered "^$lab_script:" >&2
  rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ] || ! grep -q '^FIG ' "$tmp/vm.out"; then
    echo "$lab_script: the VM failed (status $rc):" >&2
    tail -30 "$tmp/vm.out" | sed 's/^/  /' >&2
    exit 1
  fi
  while read -r tag name rep val; do
    [ "$tag" = FIG ] && V["$name.$rep"]=$val
  done <"$tmp/vm.out"
  loads=""
  for r in $(seq 1 "$reps"); do loads="$loads ${V[vm.load.$r]:-?}"; done
}
