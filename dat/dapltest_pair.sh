#!/bin/sh
# Debian's dapltest (dapl2-utils), unchanged, over libdaplitapi: a server
# (dapltest -T S) and its clients in separate processes on one IT-API
# interface.  Exit 77 (skipped) when dapltest is not installed.
#
#   dapltest_pair.sh DAT_CONF INTERFACE
#
# What runs, and what each must print to pass.  dapltest's exit status is
# no criterion on its own: it returns a DAT_RETURN, whose low byte (the
# exit status) is 0 for nearly every error, and a transaction test whose
# threads fail still ends with "End of Work" and status 0.  So:
#
#  - Transaction tests (-T T), SR, RR and RW initiated by both sides over
#    4 threads of 4 endpoints each (-t 4 -w 4), with data validation (-V),
#    first with completions waited for on EVDs, then polled (-P), then
#    DAPL's man-page mix of multi-segment transfers and sends reaped on
#    receives (-f), then with the server accepting through reserved
#    service points (-r).  A client thread counts its bytes into the
#    totals only when it has run all its iterations, so the client must
#    print its "----- Stats ----" block with every total (Send, Recv,
#    RDMA Read, RDMA Write) equal to what the op list moves in all
#    threads, and no warning, error or validation failure.
#  - The same with completions through a CNO (-Q) when this dapltest
#    offers it: dapltest 2.1.10 lists Q in its option string but its
#    parser has no case for it ("Invalid Transaction Test Parameter: Q";
#    its man page: "Use of CNOs (-Q) is not yet supported"), and it never
#    calls dat_cno_wait.  The run is made and its refusal reported; a
#    dapltest that accepts -Q is held to the criterion above.  dtest -c
#    (dtest_pair.sh) covers the CNO path meanwhile.
#  - Performance tests (-T P), RDMA Write and RDMA Read, blocking (-m b)
#    and polling (-m p): the client must print its statistics and its
#    "raw:" line naming the operation and the iteration count.
#  - The limit test (-T L), all of it: each of its ten tests must print
#    its banner and its closing line, never "error occurs" (a failed
#    cleanup), and the last must finish probing the LMR size.  A create
#    that fails is the limit found, not an error.
#  - Quit (-T Q): the server must then print "Exiting." and exit 0, and
#    nothing it printed may be a warning or an error.
#
# DAT_PAIR_ADDR names the server's address for the clients (default
# 127.0.0.1; the lab gives a device's own address), DAT_PAIR_ITERS the
# transaction iterations (default 1000; the mix and the RSP runs make
# half), DAT_PAIR_TIMEOUT each client's limit in seconds (default 60):
# the lab's emulated CPU runs fewer, for longer.
#
# Iteration counts keep one interface's whole run near 10 s on a 2-core
# machine, and under 60 s when other work loads it 3 times over
# (measured: 1000 transaction iterations over the 16 endpoints take about
# 1.8 s blocking or polling over emul-iw0 and iwarp0, 500 of the mix or
# through RSPs about 1 s; a performance run of 5000 operations 0.2 to
# 0.5 s; the limit test under 1 s).
#
# The server listens on the port given with -n, and each transaction
# test on the ports above it (one per endpoint, counting up from one
# client to the next): the script picks a base port the server can
# listen on, and tries another when the server fails to start.  The
# Meson tests still do not run in parallel (is_parallel: false), as a
# host shares its ports.
#
# SPDX-License-Identifier: MIT
set -u
conf=$1
ia=$2
dapltest=$(command -v dapltest) || { echo "dapltest is not installed (Debian package dapl2-utils): skipped"; exit 77; }
export DAT_OVERRIDE="$conf"
dev="itapi-$ia"
addr=${DAT_PAIR_ADDR:-127.0.0.1}
iters=${DAT_PAIR_ITERS:-1000}
limit=${DAT_PAIR_TIMEOUT:-60}
dir=$(mktemp -d)
spid=
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

fail=0
# What dapltest prints when something went wrong, on either side.
bad='[Ww]arning|[Ee]rror|FAIL|[Mm]ismatch|[Cc]annot|[Cc]ould not|bad (connection|disconnect)|no memory|unimplemented'

# Seconds since the step's start, for the log.
step_start() { t0=$(date +%s.%N); }
took() { echo "$(date +%s.%N) $t0" | awk '{ printf "%.1f s", $1 - $2 }'; }

report_fail() {
  echo "dapltest $1 over $ia ($(took)): $2:"
  sed 's/^/  | /' "$3"
  fail=1
}

# Start the server on a base port it can listen on.
start_server() {
  for try in 1 2 3 4 5; do
    port=$((20000 + ($$ * 7 + try * 1031) % 20000))
    # The server lives through every step (11, each a client bounded by
    # $limit): its own bound only stops a hang the steps did not.
    timeout $((limit * 12)) "$dapltest" -T S -D "$dev" -n "$port" > "$dir/server" 2>&1 &
    spid=$!
    # The server says it is ready once its service point listens.
    for i in $(seq 1 100); do
      grep -q "Service Point Ready" "$dir/server" && return 0
      kill -0 "$spid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    spid=
  done
  report_fail "-T S" "the server did not start on any of five ports" "$dir/server"
  exit 1
}

# The byte totals a transaction test's client prints (dapltest's
# DT_update_transaction_stats): per iteration, every endpoint of every
# thread counts its own sends as Send, the server's sends as Recv, and
# each RDMA Read or Write, whoever posts it; -V appends a server, a
# client and a server send of 4096 bytes.  Output: send recv rr rw, in
# dapltest's MB (10^6 bytes).
expected_totals() {
  printf '%s\n' "$@" | awk '
    { a[NR] = $0 }
    END {
      t = 1; w = 1; it = 1000; v = 0; n = 0
      for (k = 1; k <= NR; k++) {
        if (a[k] == "-t") t = a[++k]
        else if (a[k] == "-w") w = a[++k]
        else if (a[k] == "-i") it = a[++k]
        else if (a[k] == "-V") v = 1
        else if (a[k] == "client" || a[k] == "server") {
          who = a[k]; type = a[++k]; size = 4096; segs = 1
          if (a[k + 1] ~ /^[0-9]+$/) size = a[++k]
          if (a[k + 1] ~ /^[0-9]+$/) segs = a[++k]
          if (a[k + 1] == "-f") k++
          n++; W[n] = who; T[n] = type; B[n] = size * segs
        }
      }
      if (v) { n++; W[n] = "server"; T[n] = "SR"; B[n] = 4096
               n++; W[n] = "client"; T[n] = "SR"; B[n] = 4096
               n++; W[n] = "server"; T[n] = "SR"; B[n] = 4096 }
      s = r = rr = rw = 0
      for (k = 1; k <= n; k++) {
        b = B[k] * w * t * it
        if (T[k] == "SR" && W[k] == "client") s += b
        else if (T[k] == "SR") r += b
        else if (T[k] == "RR") rr += b
        else rw += b
      }
      printf "%.2f %.2f %.2f %.2f\n", s / 1e6, r / 1e6, rr / 1e6, rw / 1e6
    }'
}

# transaction NAME ARGS...: a -T T client and its criterion.
transaction() {
  name=$1; shift
  out="$dir/t-$name"
  step_start
  timeout "$limit" "$dapltest" -T T -s "$addr" -D "$dev" -n "$port" "$@" > "$out" 2>&1
  rc=$?
  if grep -q "Invalid Transaction Test Parameter: Q" "$out"; then
    echo "dapltest -T T $name over $ia: this dapltest refuses -Q (its parser has no CNO mode): not run"
    return
  fi
  set -- $(expected_totals "$@")
  got=$(awk '/^Total Send /{s=$4} /^Total Recv /{r=$4} /^Total RDMA Read /{rr=$5}
             /^Total RDMA Write /{rw=$5} END {print s, r, rr, rw}' "$out")
  if [ $rc -ne 0 ] || ! grep -q "^----- Stats ---- :" "$out" || grep -Eq "$bad" "$out"; then
    report_fail "-T T $name" "the client exited with $rc, without its statistics or with an error" "$out"
  elif ! echo "$got $*" | awk '{ for (k = 1; k <= 4; k++) { d = $k - $(k + 4); if (d > 0.015 || d < -0.015) exit 1 } }'; then
    report_fail "-T T $name" "totals (send recv rdma-read rdma-write, MB) $got, expected $*" "$out"
  else
    echo "dapltest -T T $name over $ia ($(took)): $(grep -h '^----- Stats' "$out" | sed 's/^----- Stats ---- : //'), $(grep -h '^Total Time' "$out" | sed 's/  */ /g'), MB moved $got"
  fi
}

# performance MODE OP: a -T P client and its criterion.
performance() {
  mode=$1; op=$2
  out="$dir/p-$op-$mode"
  step_start
  timeout "$limit" "$dapltest" -T P -s "$addr" -D "$dev" -n "$port" -m "$mode" -i 5000 "$op" 4096 > "$out" 2>&1
  rc=$?
  word=blocking; [ "$mode" = p ] && word=polling
  if [ $rc -ne 0 ] || ! grep -Eq "^ *Mode +: $word" "$out" ||
     ! grep -q "^raw: $op, 5000, 4096, 1," "$out" || grep -Eq "$bad" "$out"; then
    report_fail "-T P $op -m $mode" "the client exited with $rc, without its statistics or with an error" "$out"
  else
    echo "dapltest -T P $op -m $mode over $ia ($(took)): $(grep -h '^ *Bandwidth' "$out" | sed 's/^ *//; s/  */ /g'), latency $(grep -h -A1 '^Latency' "$out" | sed -n '2s/.*: //p')"
  fi
}

step_start
start_server
echo "dapltest server over $ia on port $port ($(took))"

ops="client SR 4096 server SR 4096 client RR 4096 server RR 4096 client RW 4096 server RW 4096"
transaction evd -t 4 -w 4 -V -i "$iters" $ops
transaction poll -t 4 -w 4 -V -P -i "$iters" $ops
transaction mix -t 4 -w 4 -V -i $((iters / 2)) client RW 4096 1 server RW 2048 4 client SR 1024 4 \
  server SR 4096 2 client SR 1024 3 -f server SR 2048 1 -f
transaction rsp -t 4 -w 4 -V -r -i $((iters / 2)) $ops
transaction cno -t 4 -w 4 -V -Q -i "$iters" $ops
for op in RW RR; do
  for mode in b p; do
    performance $mode $op
  done
done

# The limit test needs no server.  Its last probe mallocs LMR buffers up
# to 1 GiB: with Meson's MALLOC_PERTURB_, glibc writes every byte of them
# (10 s instead of 0.3 s), so it runs without.
out="$dir/limit"
step_start
env -u MALLOC_PERTURB_ timeout "$limit" "$dapltest" -T L -D "$dev" > "$out" 2>&1
rc=$?
missing=
for t in ia pz cno evd ep rsp psp lmr rpost size_lmr; do
  grep -Eq "^Limitation Test +limit_$t\$" "$out" || missing="$missing $t"
done
if [ $rc -ne 0 ] || [ -n "$missing" ] || grep -q "error occurs" "$out" ||
   ! grep -Eq "Largest LMR was|bytes OK - stopping now" "$out" ||
   [ "$(tail -n 1 "$out")" != "**********************************************************************" ]; then
  report_fail "-T L" "exited with $rc, tests not run:${missing:- none}, or stopped on an error" "$out"
else
  echo "dapltest -T L over $ia ($(took)): all ten tests ran to the end: $(grep -h -E 'LimitTest: [A-Za-z ]+(opened|created): ' "$out" | sed 's/LimitTest: //' | tr '\n' ';' | sed 's/;$//; s/;/, /g')"
fi

out="$dir/quit"
step_start
timeout "$limit" "$dapltest" -T Q -s "$addr" -D "$dev" -n "$port" > "$out" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "End of Work" "$out"; then
  report_fail "-T Q" "the client exited with $rc without its end line" "$out"
fi
# After the quit, the server has one step's limit to end.
for i in $(seq 1 $((limit * 10))); do
  kill -0 "$spid" 2>/dev/null || break
  sleep 0.1
done
kill "$spid" 2>/dev/null
wait "$spid"
src=$?
spid=
if [ $src -ne 0 ] || ! grep -q "Exiting\.$" "$dir/server" || grep -Eq "$bad" "$dir/server"; then
  report_fail "-T S" "the server exited with $src, without its end line or after an error" "$dir/server"
else
  echo "dapltest -T Q, -T S over $ia ($(took)): served $(grep -c 'Finished for this client' "$dir/server") transaction clients, quit cleanly"
fi
exit $fail
