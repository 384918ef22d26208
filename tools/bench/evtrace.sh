#!/usr/bin/env bash
# tools/bench/evtrace.sh: where the time of one event-mode message goes.
# Runs itapi-perf -e (send_lat or write_lat, 8 B) between a server and a
# client process under strace -f, twice (N1 and N2 iterations), and
# prints, per process and thread, the system calls per message and the
# sleeps per message (calls that may block: poll, ppoll, epoll_wait and
# futex waits with a timeout other than 0), from the difference of the
# two runs (so that set-up and tear-down cancel out).  One message is one
# ping (the server's side) or one pong (the client's side).  strace slows
# everything down: the counts are what it is for, not the times.
#
#   tools/bench/evtrace.sh [--build DIR] [--provider emul|iwarp]
#                          [--test send_lat|write_lat] [--n1 N] [--n2 N]
#                          [--show]
#
# --show also prints the system calls of one steady-state iteration of
# each side (the calls between two of its sleeps, from the second run).
#
# SPDX-License-Identifier: MIT
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build"
prov=emul
test=send_lat
n1=500
n2=3000
show=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --provider) prov=$2; shift 2 ;;
    --test) test=$2; shift 2 ;;
    --n1) n1=$2; shift 2 ;;
    --n2) n2=$2; shift 2 ;;
    --show) show=1; shift ;;
    -h|--help) sed -n '2,/^# SPDX/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "evtrace.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
perf="$build/tools/perf/itapi-perf"
[ -x "$perf" ] || { echo "evtrace.sh: $perf not built" >&2; exit 2; }
command -v strace >/dev/null || { echo "evtrace.sh: needs strace" >&2; exit 2; }
tmp=$(mktemp -d /tmp/evtrace.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export ITAPI_PROVIDER=$prov
port=$(( 20000 + $$ % 20000 ))

run() {  # N TAG
  port=$((port + 1))
  strace -f -Y -o "$tmp/srv-$2" "$perf" -s -p $port >/dev/null 2>&1 &
  local s=$!
  sleep 1
  strace -f -Y -o "$tmp/cli-$2" "$perf" -c 127.0.0.1 -p $port -e -t "$test" -S 8 -n "$1" -w 0 \
    --timeout 120 >/dev/null 2>"$tmp/cli-$2.err" || { cat "$tmp/cli-$2.err" >&2; exit 1; }
  wait $s
}
run "$n1" 1
run "$n2" 2

python3 - "$tmp" "$n1" "$n2" "$show" "$prov" "$test" <<'EOF'
import collections, re, sys
tmp, n1, n2, show, prov, test = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5], sys.argv[6]
line_re = re.compile(r'^(\d+)<([^>]*)> (?:<\.\.\. )?([a-z_0-9]+)(\(| resumed>)(.*)$')
SLEEPS = ("poll", "ppoll", "epoll_wait", "epoll_pwait", "select", "pselect6")

def sleeps(call, args):
    if call in SLEEPS:
        # poll(fds, n, timeout): a timeout of 0 never sleeps
        m = re.search(r', (-?\d+)\)?\s*(=|<unfinished)', args)
        return not (m and m.group(1) == "0")
    if call == "futex":
        return "FUTEX_WAIT" in args
    return False

def parse(path):
    calls = collections.Counter()     # (thread, call) -> n
    waits = collections.Counter()     # thread -> n
    seq = collections.defaultdict(list)
    names = {}
    for ln in open(path):
        m = line_re.match(ln)
        if not m:
            continue
        tid, comm, call, kind, rest = m.groups()
        if kind != "(":
            continue                  # the end of an unfinished call, counted at its start
        names[tid] = comm
        calls[(comm, call)] += 1
        if sleeps(call, rest):
            waits[comm] += 1
        seq[tid].append((comm, call, sleeps(call, rest), ln.rstrip()))
    seq["main"] = seq[next(iter(seq))] if seq else []
    return calls, waits, seq

msgs = (n2 - n1)
for side, label in (("srv", "server (receives the pings)"), ("cli", "client (receives the pongs)")):
    c1, w1, _ = parse(f"{tmp}/{side}-1")
    c2, w2, seq = parse(f"{tmp}/{side}-2")
    print(f"{prov} {test} 8 B, event mode, {label}: per message (difference of {n2} and {n1} iterations)")
    threads = sorted({t for t, _ in c2})
    total = 0.0
    for t in threads:
        per = {call: (c2[(t, call)] - c1[(t, call)]) / msgs for (tt, call) in c2 if tt == t}
        per = {k: v for k, v in per.items() if v >= 0.05}
        n = sum(per.values())
        if n < 0.05:
            continue
        total += n
        sl = (w2[t] - w1[t]) / msgs
        detail = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]))
        print(f"  thread {t}: {n:.2f} system calls, {sl:.2f} sleeps ({detail})")
    print(f"  all threads: {total:.2f} system calls per message")
    if show:
        # One steady-state iteration of the main thread: between two of its
        # sleeps, two thirds into the run, with what other threads did then.
        s = seq["main"]
        if s:
            idx = [i for i, x in enumerate(s) if x[2]]
            if len(idx) > 3:
                k = idx[len(idx) * 2 // 3]
                k2 = [i for i in idx if i > k][0]
                print("  one iteration of the application thread:")
                for x in s[k:k2 + 1]:
                    print("    " + x[3][:150])
    print()
EOF
