#!/bin/sh
# vp/emul makes no system call under its fabric lock (issue 26, point 5):
# itapi-rping built with tests/emul/syscall_watch.c, which sees every call
# vp/emul makes into the kernel, run against itself across two processes
# (tools/rping/rping-test.sh: a listener, a connection, Sends, an RDMA Read
# and an RDMA Write per ping, every byte checked, the disconnect).  Each
# side reports what it sent; both must have sent their handshake message
# (the client the request, type 1; the server the reply, type 2), the
# mapping request and its answer (types 10 and 11: the server's Read and
# Write reach the client's buffer) and the disconnect, none under the lock;
# read what the other sent, none under the lock either; and made no other
# call under it (the listener's socket, bind, listen and accept4, the
# connect's socket, connect, memfd and eventfd, the mappings of the peer's
# segment and table, the probe of its memory, the keys' getrandom, the
# last unmapping of a connection: each was made under the lock before).
# Usage: syscalls-unlocked.sh RPING-TEST RPING PORT INTERFACE
set -u
TEST=$1 RPING=$2 PORT=$3 IA=$4
# Whether the mapping's exchange happens within the run is the scheduler's
# choice: the client answers from its progress thread, and on a starved
# host that thread may first run after all 20 pings, when the connection is
# closing and the answer is dropped.  A run that left a type uncovered but
# broke no rule is run again, at most three times in all; a rule broken in
# any run fails at once.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run=1
while :; do
  sh "$TEST" "$RPING" "$PORT" "$IA" >"$out" 2>&1
  rc=$?
  cat "$out"
  [ $rc -eq 0 ] || { echo "FAIL: the rping run failed ($rc)"; exit 1; }
  lines=$(grep -c '^emul-msgs: [0-9]* sent, 0 under the fabric lock (.*); [1-9][0-9]* read, 0 under the fabric lock$' "$out")
  [ "$lines" -eq 2 ] ||
    { echo "FAIL: $lines of 2 sides sent and read every socket message with the fabric lock let go"; exit 1; }
  calls=$(grep -c '^emul-syscalls: 0 under the fabric lock ()$' "$out")
  [ "$calls" -eq 2 ] ||
    { echo "FAIL: $calls of 2 sides made no system call under the fabric lock"; exit 1; }
  missing=
  for t in 1 2 8 10 11; do
    grep '^emul-msgs: ' "$out" | grep -q "types sent:.* $t\( \|)\)" || missing="$missing $t"
  done
  [ -n "$missing" ] || break
  [ $run -lt 3 ] ||
    { echo "FAIL: in $run runs, no side sent a socket message of type(s)$missing"; exit 1; }
  echo "syscalls-unlocked: run $run sent no socket message of type(s)$missing; running again"
  run=$((run + 1))
done
echo "PASS: both sides sent and read their socket messages, and made every other system call, with the fabric lock let go"
