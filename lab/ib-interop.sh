#!/usr/bin/env bash
# lab/ib-interop.sh: vp/ib (rdma-core) on the kernel's rxe and siw in the
# lab VM, against software we did not write.  Cases:
#
#   vm             one VM boot running lab/ib-guest.sh: itapi-certify (both
#                  levels) on rxe0 and siw0 (deviation files
#                  conformance/deviations/rxe0.txt, siw0.txt; reports in
#                  BUILD/ib-cert-DEV.md), itapi-perf between two processes
#                  and itapi-pingpong on both, rdma-core's rping
#                  against itapi-rping both ways on both, and Debian's
#                  dtest through our DAT provider and against DAPL's own
#                  provider (the plugfest) on both
#   cross-passive  vp/ib on siw0 in the VM listens (itapi-rping -s), vp/iwarp
#                  on this host connects through qemu's forward once it listens
#   cross-active   vp/iwarp on this host listens, vp/ib on siw0 connects
#   CHECK...       any other name is a check of lab/ib-guest.sh
#                  (certify-rxe0, loopback-siw0...): the named checks run
#                  in one VM boot of their own, after the cases above
#
# Every ping is a Send each way, an RDMA Read and an RDMA Write, and both
# programs check the bytes.  Where tshark is installed the cross cases
# capture the host's loopback and decode it: the MPA Request and Reply,
# the four RDMAP opcodes, no malformed frame.
#
#   [LAB_FULL=1] [LAB_REPEAT=N] lab/ib-interop.sh [--build DIR] [-C pings] [case...]
#
# LAB_REPEAT=N: the repetitions of certify-repeat-DEV (default 5).
# LAB_FULL=1 also runs the tests the devices' deviation files list (CI
# leaves them out: any failure of theirs is the listed deviation).
#
# Prints a TAP line per check and "ib-interop: N passed, N failed"; exits
# 0 when all passed, 77 when the lab cannot run here (no VM image, no
# vp/ib module), 1 otherwise.  Meson runs it as the test ib-interop
# (suites interop and slow).
#
# SPDX-License-Identifier: MIT
set -uo pipefail
lab=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$lab/.." && pwd)
cache=${LAB_CACHE:-$lab/cache}
build=$root/build count=5
# Stock siw sends its MPA Reply before it reads the socket: the host's
# first FPDU waits this long (doc/provider-iwarp.md, "The accept race of
# stock siw").
hold=${LAB_HOLD_MS:-500}
while [ $# -gt 0 ]; do
  case $1 in
  --build) build=$2; shift 2 ;;
  -C) count=$2; shift 2 ;;
  -*) sed -n '2,34p' "$0" >&2; exit 2 ;;
  *) break ;;
  esac
done
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(vm cross-passive cross-active)
skip() { echo "ib-interop: skipped: $*"; exit 77; }
build=$(cd "$build" 2>/dev/null && pwd) || skip "no build directory $build"
[ -f "$build/vp/ib/libitapi-ib.so" ] ||
  skip "no vp/ib module in $build (apt-get install libibverbs-dev librdmacm-dev, then reconfigure)"
[ -f "$cache/initrd.img" ] || skip "no lab VM image: run lab/build-initrd.sh"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is missing"
case $build/ in "$root"/*) share=$root ;; *) share=$build ;; esac
rping=$build/tools/rping/itapi-rping
capture=0
if command -v tshark >/dev/null && command -v dumpcap >/dev/null; then
  . "$root/vp/iwarp/tests/wire_lib.sh"
  capture=1
fi

# One interop run at a time: two emulated VMs beside the host's suites
# starve each other (a siw Write then misses its 120 s).  The other waits.
exec 9>"$cache/interop.lock"
flock 9 || echo "ib-interop: cannot lock $cache/interop.lock; running beside the other lab test" >&2

tmp=$(mktemp -d); trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT
pass=0 fail=0 n=0
hport=$(( 23000 + $$ % 8000 ))
result() {
  n=$((n + 1))
  if [ "$1" = ok ]; then pass=$((pass + 1)); echo "ok $n - $2"; else fail=$((fail + 1)); echo "not ok $n - $2"; fi
}

# The guest's checks: all of them, or those given.
vm_case() {
  # A repeated catalog (certify-repeat-DEV) takes about 4 minutes of the
  # VM per repetition and device.
  local vm_s=3300
  case " $* " in *" certify-repeat-"*) vm_s=$((3300 + 1200 * ${LAB_REPEAT:-5})) ;; esac
  "$lab/run.sh" -q -s "$share" -m 3G -t $vm_s \
    "LAB_FULL=${LAB_FULL:-0} LAB_REPEAT=${LAB_REPEAT:-5} sh $lab/ib-guest.sh $build $*" >"$tmp/vm.out" 2>&1
  local rc=$? seen=0
  while read -r tag name st secs; do
    [ "$tag" = CHECK ] || continue
    seen=$((seen + 1))
    [ "$st" = ok ] || awk -v n="$name" '$1 == "CHECK" { p = ($2 == n) ; next } p' "$tmp/vm.out"
    result "$st" "$name${secs:+ ($secs)}"
  done <"$tmp/vm.out"
  if [ $rc -ne 0 ] || [ $seen -eq 0 ]; then
    echo "  the VM failed (status $rc):"; tail -20 "$tmp/vm.out" | sed 's/^/    /'
    result FAIL vm
  fi
}

cross_case() {
  local c=$1 vm host hrc ok=1 env="ITAPI_PROVIDER_PATH=$build/vp/ib/libitapi-ib.so ITAPI_PROVIDER=ib"
  hport=$((hport + 1))
  if [ $capture = 1 ]; then
    wire_capture $hport "$tmp/$c.pcapng" >"$tmp/$c.dumpcap.err" 2>&1 || capture=0
  fi
  case $c in
  cross-passive)
    # The host connects only once siw listens in the VM (rdma_cm shows the
    # listener; the VM says so through a file in the share): connects sent
    # through qemu's forward while the VM boots left siw half-open streams
    # on its listener, and Debian 6.1's siw then freed the listening
    # endpoint while it was still listed (list_del corruption in
    # siw_destroy_listen when the server ended; seen under load).
    local ready="$build/.ib-interop-ready-$$-$hport" i
    rm -f "$ready"
    "$lab/run.sh" -q -s "$share" -t 240 -f "tcp:127.0.0.1:$hport-:7174" \
      "$env $rping -s -a 10.0.2.15 -p 7174 -C $count -i siw0 -v -T 120 & s=\$!; i=0;
       until rdma res show cm_id | grep -q 'LISTEN.*src-addr 10.0.2.15:7174 '; do
         i=\$((i + 1)); [ \$i -lt 120 ] && kill -0 \$s || break; sleep 1; done;
       touch $ready; wait \$s" >"$tmp/$c.vm" 2>&1 &
    vm=$!
    for ((i = 0; i < 220; i++)); do
      [ -e "$ready" ] || ! kill -0 $vm 2>/dev/null && break
      sleep 1
    done
    ITAPI_PROVIDER=iwarp ITAPI_IWARP_FIRST_FPDU_DELAY_MS=$hold \
      "$rping" -c -a 127.0.0.1 -p $hport -C "$count" -v -T 60 >"$tmp/$c.host" 2>&1 &
    host=$!
    wait $vm; vm=$?
    rm -f "$ready" ;;
  cross-active)
    ITAPI_PROVIDER=iwarp "$rping" -s -a 127.0.0.1 -p $hport -C "$count" -v -T 240 >"$tmp/$c.host" 2>&1 &
    host=$!
    "$lab/run.sh" -q -s "$share" -t 240 \
      "$env $rping -c -a 10.0.2.2 -p $hport -C $count -i siw0 -v -T 60" >"$tmp/$c.vm" 2>&1
    vm=$? ;;
  esac
  [ $vm -eq 0 ] || kill $host 2>/dev/null
  wait $host; hrc=$?
  [ $capture = 1 ] && wire_stop
  [ $vm -eq 0 ] || { echo "  vp/ib on siw0 (VM) failed with status $vm:"; tail -8 "$tmp/$c.vm" | sed 's/^/    /'; ok=0; }
  [ $hrc -eq 0 ] || { echo "  vp/iwarp (host) failed with status $hrc:"; tail -8 "$tmp/$c.host" | sed 's/^/    /'; ok=0; }
  local got
  got=$(grep -c 'ping data: rdma-ping-' "$tmp/$c.vm")
  [ "$got" -eq "$count" ] || { echo "  the VM side printed $got pings of $count"; ok=0; }
  got=$(grep -c 'ping data: rdma-ping-' "$tmp/$c.host")
  [ "$got" -eq "$count" ] || { echo "  the host side printed $got pings of $count"; ok=0; }
  if [ $capture = 1 ]; then
    wire_decode "$tmp/$c.pcapng" 0 0x03:Send 0x00:Write 0x01:"Read Request" \
      0x02:"Read Response" >"$tmp/$c.decode" || ok=0
    sed 's/^/  /' "$tmp/$c.decode"
  fi
  result "$([ $ok = 1 ] && echo ok || echo FAIL)" "$c"
}

checks=()
for c in "${cases[@]}"; do
  case $c in
  vm) vm_case ;;
  cross-passive|cross-active) cross_case "$c" ;;
  *) checks+=("$c") ;;
  esac
done
[ ${#checks[@]} -eq 0 ] || vm_case "${checks[@]}"
echo "ib-interop: $pass passed, $fail failed"
[ $fail -eq 0 ]
