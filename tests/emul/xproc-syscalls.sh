#!/bin/sh
# vp/emul makes no system call under its fabric lock across the whole
# cross-process conformance area (issue 26, point 5): conf-xproc built with
# tests/emul/syscall_watch.c and msg_watch.c, so that the parent and every
# child it starts (the same program) count the calls they make under the
# lock and append one line each to $SYSCALL_WATCH_LOG at exit.  Every line
# must say 0, the Reads into a memory window included
# (/conformance/xproc/read-to-rmr: their attach copy ran under the lock
# until the sink's translation was taken before it).
# Usage: xproc-syscalls.sh CONF-XPROC-WATCHED
set -u
EXE=$1
log=$(mktemp)
out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT
SYSCALL_WATCH_LOG=$log "$EXE" >"$out" 2>&1
rc=$?
tail -n 5 "$out"
[ $rc -eq 0 ] || { cat "$out"; echo "FAIL: conf-xproc failed ($rc)"; exit 1; }
total=$(grep -c '^emul-syscalls: ' "$log")
clean=$(grep -c '^emul-syscalls: 0 under the fabric lock ()$' "$log")
grep -v '^emul-syscalls: 0 under the fabric lock ()$' "$log"
[ "$total" -ge 20 ] || { echo "FAIL: only $total processes reported (expected the parent and its children)"; exit 1; }
[ "$clean" -eq "$total" ] ||
  { echo "FAIL: $((total - clean)) of $total processes made system calls under the fabric lock"; exit 1; }
echo "PASS: $total processes (the parent and its children) made no system call under the fabric lock"
