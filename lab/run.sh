#!/usr/bin/env bash
# lab/run.sh: boot the siw lab VM (lab/build-initrd.sh), run one shell
# command in it, print its console, and exit with the command's status.
#
#   lab/run.sh [-f tcp:127.0.0.1:HOSTPORT-:GUESTPORT]... [-t seconds] [-q]
#              [-k kernel-args] [-l log] 'COMMAND'
#
# In the VM, eth0 is 10.0.2.15 with siw0 bound to it, and the host's
# 127.0.0.1 is 10.0.2.2 (qemu's user-mode network: nothing is configured
# on the host).  -f publishes a VM port on the host's loopback.  -q prints
# only what the command prints; -t (default 300) kills a VM that runs
# longer: status 124.  A VM that dies before the command ends: 125.
# qemu emulates the CPU (TCG): the nested kvm_pvm flavour of KVM on these
# machines cannot boot this kernel.  LAB_ACCEL=kvm uses KVM where it works.
#
# SPDX-License-Identifier: MIT
set -uo pipefail
lab=$(cd "$(dirname "$0")" && pwd)
cache=${LAB_CACHE:-$lab/cache}
fwd=() t=300 quiet=0 kargs="" log=""
while getopts "f:t:qk:l:" o; do
  case $o in
  f) fwd+=("hostfwd=$OPTARG") ;;
  t) t=$OPTARG ;;
  q) quiet=1 ;;
  k) kargs=$OPTARG ;;
  l) log=$OPTARG ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "run.sh: one COMMAND argument, in quotes" >&2; exit 2; }
[ -f "$cache/initrd.img" ] || { echo "run.sh: no $cache/initrd.img: run lab/build-initrd.sh first" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null ||
  { echo "run.sh: qemu-system-x86_64 is missing: apt-get install qemu-system-x86" >&2; exit 2; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/root/lab"; printf '%s\n' "$1" >"$tmp/root/lab/cmd"
# A second archive after the main one: the kernel unpacks both.
(cd "$tmp/root" && find . | cpio -o -H newc --quiet | gzip -1) | cat "$cache/initrd.img" - >"$tmp/initrd"
[ -n "$log" ] || { mkdir -p "$cache/logs"; log="$cache/logs/vm-$(date +%Y%m%d-%H%M%S)-$$.log"; }

accel=${LAB_ACCEL:-tcg}
cpu=max; [ "$accel" = kvm ] && cpu=host
net="user,id=n0,net=10.0.2.0/24,host=10.0.2.2"
for f in "${fwd[@]}"; do net="$net,$f"; done

timeout --foreground "$t" qemu-system-x86_64 -nodefaults -no-user-config -machine pc -accel "$accel" -cpu "$cpu" \
  -smp 2 -m 1G -kernel "$cache/vmlinuz" -initrd "$tmp/initrd" \
  -append "console=ttyS0 quiet panic=-1 $kargs" -display none -serial stdio -no-reboot \
  -netdev "$net" -device virtio-net-pci,netdev=n0,romfile= </dev/null 2>&1 |
  tr -d '\r' | tee "$log" |
  if [ $quiet = 1 ]; then awk '/^LAB-EXIT /{ p = 0 } p { print; fflush() } /^LAB-READY /{ p = 1 }'; else cat; fi
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && { echo "run.sh: the VM ran longer than $t s (log: $log)" >&2; exit 124; }
st=$(awk '/^LAB-EXIT /{ print $2 }' "$log" | tail -1)
[ -n "$st" ] || { echo "run.sh: the VM stopped before the command ended (qemu status $rc; log: $log)" >&2; exit 125; }
exit "$st"
