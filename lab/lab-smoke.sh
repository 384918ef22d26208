#!/usr/bin/env bash
# lab/lab-smoke.sh: boot the lab VM once and check that it is the place to
# run the project's verbs programs:
#
#   links        rxe0 on dummy0 and siw0 on eth0, both ACTIVE
#   addresses    lab-ipof: rxe0 10.9.0.1, siw0 10.0.2.15; lab-gid rxe0: 1
#   memlock      RLIMIT_MEMLOCK unlimited (siw checks it even for root)
#   share        the command runs in the shared directory, at its host path
#   itapi-info   the build tree's itapi-info (libitapi by RPATH, GLib) runs
#                and lists its providers
#   lab-devices  a host-built program linking GLib and libibverbs sees rxe0
#                (IB transport, Ethernet link) and siw0 (iWARP), both active
#   devinfo-*    ibv_devinfo -d rxe0, -d siw0
#   rping-rxe0   3 pings of rdma-core's rping on rxe0's address
#
#   lab/lab-smoke.sh [--build DIR]
#
# Prints a TAP line per check and "lab-smoke: N passed, N failed"; exits 0
# when all passed, 77 when the lab cannot run here (no VM image: run
# lab/build-initrd.sh; no qemu; the project not built), 1 otherwise.
# Meson runs it as the test lab-smoke (suites interop and slow).
#
# SPDX-License-Identifier: MIT
set -uo pipefail
lab=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$lab/.." && pwd)
cache=${LAB_CACHE:-$lab/cache}
build=$root/build
while [ $# -gt 0 ]; do
  case $1 in
  --build) build=$2; shift 2 ;;
  *) sed -n '2,22p' "$0" >&2; exit 2 ;;
  esac
done
skip() { echo "lab-smoke: skipped: $*"; exit 77; }
[ -f "$cache/initrd.img" ] || skip "no lab VM image: run lab/build-initrd.sh"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is missing"
build=$(cd "$build" 2>/dev/null && pwd) || skip "no build directory $build"
[ -x "$build/tools/itapi-info" ] || skip "no $build/tools/itapi-info (build the project first)"

# The VM sees the repository when the build tree is inside it, else the
# build tree alone; either way at the host's path.
case $build/ in "$root"/*) share=$root ;; *) share=$build ;; esac
checks=(links addresses memlock share itapi-info lab-devices devinfo-rxe0 devinfo-siw0 rping-rxe0)
devices=$build/lab/lab-devices
[ -x "$devices" ] || devices=""

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The guest's half: one "CHECK name ok|FAIL|SKIP why" line per check, the
# output of a failed one indented below it.
cat >"$tmp/guest.sh" <<EOF
share='$share' build='$build' devices='$devices'
EOF
cat >>"$tmp/guest.sh" <<'EOF'
out=/tmp/check.out
check() {
  name=$1; shift
  if "$@" >$out 2>&1; then echo "CHECK $name ok"; else echo "CHECK $name FAIL"; tail -15 $out | sed 's/^/    /'; fi
}
want() { printf '%s\n' "$1" | grep -qE "$2" || { echo "expected /$2/ in:"; printf '%s\n' "$1"; return 1; }; }
links() {
  l=$(rdma link) && echo "$l" &&
    want "$l" '^link rxe0/1 state ACTIVE .*netdev dummy0' && want "$l" '^link siw0/1 state ACTIVE .*netdev eth0'
}
addresses() {
  r=$(lab-ipof rxe0) s=$(lab-ipof siw0) g=$(lab-gid rxe0)
  echo "rxe0 $r gid $g, siw0 $s"
  [ "$r" = 10.9.0.1 ] && [ "$s" = 10.0.2.15 ] && [ "$g" = 1 ]
}
memlock() { l=$(ulimit -l); echo "ulimit -l: $l"; [ "$l" = unlimited ]; }
share() { echo "cwd $(pwd)"; [ "$(pwd)" = "$share" ] && [ -f "$build/build.ninja" ]; }
itapi_info() {
  o=$("$build/tools/itapi-info" 2>&1) && echo "$o" | sed -n '/^Providers:/,/^Interfaces:/p' &&
    echo "$o" | awk '/^Providers:/ { p = 1; next } p && /^  [a-z]/ { n++ } /^Interfaces:/ { p = 0 } END { exit n == 0 }'
}
lab_devices() {
  o=$("$devices") && echo "$o" &&
    want "$o" '^rxe0 transport=IB link=Ethernet port1=active$' &&
    want "$o" '^siw0 transport=iWARP link=Ethernet port1=active$'
}
devinfo() {
  o=$(ibv_devinfo -d "$1") && echo "$o" | head -12 && want "$o" "$2" && want "$o" 'state:.*PORT_ACTIVE'
}
rping_rxe0() {
  a=$(lab-ipof rxe0) n=0
  timeout 60 rping -s -a "$a" -p 7300 -C 3 >/tmp/rping.server 2>&1 &
  srv=$!
  until rdma res show cm_id | grep -q 'state LISTEN .*:7300 '; do
    n=$((n + 1)); [ $n -gt 100 ] && break; sleep 0.2
  done
  timeout 60 rping -c -a "$a" -p 7300 -C 3 -v; st=$?
  [ $st = 0 ] || kill $srv 2>/dev/null
  wait $srv; sst=$?
  echo "client status $st, server status $sst:"; cat /tmp/rping.server
  [ $st = 0 ] && [ $sst = 0 ]
}
check links links
check addresses addresses
check memlock memlock
check share share
check itapi-info itapi_info
if [ -n "$devices" ]; then check lab-devices lab_devices; else echo "CHECK lab-devices SKIP no lab-devices (libibverbs-dev missing on the host)"; fi
check devinfo-rxe0 devinfo rxe0 'transport:.*InfiniBand'
check devinfo-siw0 devinfo siw0 'transport:.*iWARP'
check rping-rxe0 rping_rxe0
EOF

start=$(date +%s)
"$lab/run.sh" -q -t 240 -s "$share" -l "$tmp/console.log" "$(cat "$tmp/guest.sh")" >"$tmp/out" 2>&1
vm=$?
wall=$(( $(date +%s) - start ))
boot=$(awk '/^LAB-READY /{ for (i = 1; i < NF; i++) if ($i == "up") print $(i + 1) }' "$tmp/console.log")
echo "  VM: status $vm, ${wall} s wall, ready after ${boot:-?} (guest clock)"

pass=0 fail=0 n=0
for c in "${checks[@]}"; do
  n=$((n + 1))
  line=$(grep "^CHECK $c " "$tmp/out" | head -1)
  case $line in
  "CHECK $c ok") pass=$((pass + 1)); echo "ok $n - $c" ;;
  "CHECK $c SKIP"*) pass=$((pass + 1)); echo "ok $n - $c # SKIP ${line#CHECK "$c" SKIP }" ;;
  "CHECK $c FAIL")
    fail=$((fail + 1)); echo "not ok $n - $c"
    # The indented lines after this check's line, up to the next check.
    awk -v c="CHECK $c FAIL" '$0 == c { p = 1; next } /^CHECK / { p = 0 } p' "$tmp/out" ;;
  *)
    fail=$((fail + 1)); echo "not ok $n - $c (no result: the VM stopped, status $vm)"
    [ $fail = 1 ] && tail -15 "$tmp/out" | sed 's/^/    /' ;;
  esac
done
echo "lab-smoke: $pass passed, $fail failed"
[ $fail -eq 0 ]
