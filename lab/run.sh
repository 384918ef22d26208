#!/usr/bin/env bash
# lab/run.sh: boot the RDMA lab VM (lab/build-initrd.sh), run one shell
# command in it, print its console, and exit with the command's status.
#
#   lab/run.sh [-s DIR | -S] [-m MEM] [-c CPUS] [-t SECONDS] [-q] [-i]
#              [-f tcp:127.0.0.1:HOSTPORT-:GUESTPORT]... [-k KERNEL-ARGS]
#              [-l LOG] 'COMMAND'
#
# In the VM: rxe0 (soft-RoCE) on dummy0 10.9.0.1/24, siw0 (soft-iWARP) on
# eth0 10.0.2.15/24; the host's 127.0.0.1 is 10.0.2.2 (qemu's user-mode
# network: nothing is configured on the host).  lab-ipof, lab-gid and
# lab-selftest are in the PATH; RLIMIT_MEMLOCK is unlimited.
#   -s DIR   mount DIR (default: the repository root) read-write at the same
#            path in the VM (9p), and run the command there: binaries built
#            on the host run as they are, their RPATHs resolve.  -S: none
#   -m, -c   memory (1G) and virtual CPUs (2)
#   -t       kill a VM that runs longer (default 300 s): status 124.  A VM
#            that dies before the command ends: 125
#   -q       print only what the command prints, not the boot
#   -i       an interactive shell on the console after COMMAND (which is
#            optional then); `exit` powers off, Ctrl-a x quits qemu
#   -f       publish a VM port on the host's loopback
#   -k       kernel arguments: lab.rdma=rxe0:dummy0,siw0:eth0 (the default;
#            none: no links), lab.keep=1 (what -i sets)
#   -l       the console log (default: lab/cache/logs/vm-*.log)
# Several VMs may run at once (publish different host ports).  qemu
# emulates the CPU (TCG): the nested kvm_pvm flavour of KVM on these
# machines cannot boot this kernel.  LAB_ACCEL=kvm uses KVM where it works;
# LAB_CPU names the emulated CPU model (default max; host under KVM).
#
# SPDX-License-Identifier: MIT
set -uo pipefail
lab=$(cd "$(dirname "$0")" && pwd)
cache=${LAB_CACHE:-$lab/cache}
usage() { awk 'NR > 1 && /^# SPDX/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2; exit 2; }
share=$(cd "$lab/.." && pwd) mem=1G cpus=2 fwd=() t=300 quiet=0 inter=0 kargs="" log=""
while getopts "s:Sm:c:f:t:qik:l:" o; do
  case $o in
  s) share=$OPTARG ;;
  S) share="" ;;
  m) mem=$OPTARG ;;
  c) cpus=$OPTARG ;;
  f) fwd+=("hostfwd=$OPTARG") ;;
  t) t=$OPTARG ;;
  q) quiet=1 ;;
  i) inter=1 ;;
  k) kargs=$OPTARG ;;
  l) log=$OPTARG ;;
  *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { [ $# -eq 0 ] && [ $inter = 1 ]; } ||
  { echo "run.sh: one COMMAND argument, in quotes" >&2; exit 2; }
[ -f "$cache/initrd.img" ] || { echo "run.sh: no $cache/initrd.img: run lab/build-initrd.sh first" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null ||
  { echo "run.sh: qemu-system-x86_64 is missing: apt-get install qemu-system-x86" >&2; exit 2; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/root/lab"
[ $# -eq 1 ] && printf '%s\n' "$1" >"$tmp/root/lab/cmd"
fs=()
if [ -n "$share" ]; then
  share=$(cd "$share" 2>/dev/null && pwd) || { echo "run.sh: -s: no directory $share" >&2; exit 2; }
  printf '%s\n' "$share" >"$tmp/root/lab/share"
  # qemu reads a comma in an option value as ",,".
  fs=(-fsdev "local,id=share,path=${share//,/,,},security_model=none,multidevs=remap"
      -device virtio-9p-pci,fsdev=share,mount_tag=lab-share)
fi
# A second archive after the main one: the kernel unpacks both.
(cd "$tmp/root" && find . | cpio -o -H newc --quiet | gzip -1) | cat "$cache/initrd.img" - >"$tmp/initrd"
[ -n "$log" ] || { mkdir -p "$cache/logs"; log="$cache/logs/vm-$(date +%Y%m%d-%H%M%S)-$$.log"; }
[ $inter = 1 ] && kargs="$kargs lab.keep=1"

accel=${LAB_ACCEL:-tcg}
cpu=${LAB_CPU:-max}; [ "$accel" = kvm ] && cpu=${LAB_CPU:-host}
net="user,id=n0,net=10.0.2.0/24,host=10.0.2.2"
for f in "${fwd[@]}"; do net="$net,$f"; done
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -machine pc -accel "$accel" -cpu "$cpu"
  -smp "$cpus" -m "$mem" -kernel "$cache/vmlinuz" -initrd "$tmp/initrd"
  -append "console=ttyS0 quiet panic=-1 $kargs" -display none -no-reboot
  -netdev "$net" -device virtio-net-pci,netdev=n0,romfile= "${fs[@]}")

if [ $inter = 1 ]; then
  # The terminal goes to the VM's console as it is (raw): no timeout, no log.
  "${qemu[@]}" -serial mon:stdio
  exit
fi
# Line by line all the way (sed -u reads and writes a line at a time; tee
# does not hold): a caller waits for a line of the command's (the
# LAB-LISTENING of lab/siw-interop.sh and lab/ib-interop.sh), and tr's
# output buffer and mawk's input buffer held it until the VM ended or the
# caller gave up waiting, 220 s later.
timeout --foreground "$t" "${qemu[@]}" -serial stdio </dev/null 2>&1 |
  sed -u 's/\r//g' | tee "$log" |
  if [ $quiet = 1 ]; then sed -u -n '/^LAB-READY /,/^LAB-EXIT /{ /^LAB-READY /d; /^LAB-EXIT /d; p; }'; else cat; fi
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && { echo "run.sh: the VM ran longer than $t s (log: $log)" >&2; exit 124; }
st=$(awk '/^LAB-EXIT /{ print $2 }' "$log" | tail -1)
[ -n "$st" ] || { echo "run.sh: the VM stopped before the command ended (qemu status $rc; log: $log)" >&2; exit 125; }
exit "$st"
