#!/usr/bin/env bash
# lab/build-initrd.sh: the kernel and initramfs of the RDMA lab VM.
#
# The lab boots Debian 12's own kernel in qemu with a small initramfs that
# holds the kernel's two software RDMA devices, rxe (soft-RoCE, a Debian
# module) and siw (soft-iWARP, built here: Debian's kernel does not ship
# it), the verbs and rdma_cm modules, 9p for the host's build tree, and
# rdma-core's user space: libibverbs and librdmacm with their providers,
# ibv_devinfo, rping, ucmatose, perftest, the `rdma` tool, DAPL (libdat2,
# its own providers and the DAT test tools, for lab/ib-guest.sh's dat-*
# and plugfest-* checks), plus GLib, so
# that the project's programs built on the host run there (lab/run.sh,
# doc/lab.md).  vp/iwarp on the host also speaks iWARP to siw through
# qemu's user-mode network (lab/siw-interop.sh).
#
#   lab/build-initrd.sh [HOST-BINARY...]   # writes $LAB_CACHE/vmlinuz and initrd.img
#
# Each HOST-BINARY (a program or library built on the host, to be run in
# the VM) is checked like the root's own files: every shared library it
# needs must be in the VM or beside it by its RPATH/RUNPATH.
#
# Everything goes under lab/cache (or $LAB_CACHE), which git ignores: the
# .debs (apt-get download: nothing is installed on the host), the unpacked
# kernel, the siw build and the staged root.  A second run reuses the .debs
# and siw.ko.  LAB_KPKG=linux-image-6.1.0-NN-amd64 picks another kernel
# (the default is what linux-image-amd64 depends on today).
# Host needs: apt-get, dpkg, cpio, gzip, kmod (depmod, modprobe), gcc-12,
# make, binutils; lab/run.sh needs qemu-system-x86.
#
# SPDX-License-Identifier: MIT
set -euo pipefail
lab=$(cd "$(dirname "$0")" && pwd)
cache=${LAB_CACHE:-$lab/cache}
die() { echo "build-initrd.sh: $*" >&2; exit 1; }
hostbins=()
for b in "$@"; do
  [ -f "$b" ] || die "no host binary $b"
  hostbins+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")")
done
mkdir -p "$cache/debs"
cd "$cache"

for t in apt-get apt-cache dpkg-deb cpio gzip xz depmod modprobe gcc-12 make objdump strip; do
  command -v $t >/dev/null || die "$t is missing: apt-get install cpio kmod xz-utils gcc-12 make binutils"
done

kpkg=${LAB_KPKG:-$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ { print $2; exit }')}
[ -n "$kpkg" ] || die "cannot resolve linux-image-amd64 (run apt-get update)"
kver=${kpkg#linux-image-}          # 6.1.0-56-amd64
kabi=${kver%-amd64}                # 6.1.0-56
kdeb=$(apt-cache show "$kpkg" | awk '/^Version:/ { print $2; exit }')
kser=${kver%%-*}; kser=${kser%.*}  # 6.1

# The VM's user space: rdma-core and what it links to, perftest, DAPL
# (libdapl2: libdat2 and DAPL's providers, libdaplofa among them;
# dapl2-utils: dtest, dapltest), GLib (the project's programs link it), a
# shell, kmod and iproute2 (for `rdma link add`), strace.  The build fails below, with a list, if a needed shared
# library is missing from these.
user=(libibverbs1 ibverbs-providers librdmacm1 libibumad3 ibverbs-utils rdmacm-utils perftest
      libdapl2 dapl2-utils
      iproute2 libnl-3-200 libnl-route-3-200 libc6 libgcc-s1 busybox-static dash bash libtinfo6
      kmod libkmod2 strace libunwind8
      libglib2.0-0 libffi8 libmount1 libblkid1 libpci3 libudev1
      libbpf1 libelf1 zlib1g libmnl0 libselinux1 libpcre2-8-0 libcap2 libdb5.3 libtirpc3
      libgssapi-krb5-2 libkrb5-3 libk5crypto3 libcom-err2 libkrb5support0 libkeyutils1
      libxtables12 liblzma5 libzstd1 libssl3 libbsd0 libmd0 libatm1)
# linux-kbuild (the build tools siw.ko is made with, not the kernel's
# ABI) may be replaced in the archive by a rebuild of the same upstream
# release before the image is (bookworm-security held linux-kbuild-6.1
# 6.1.192-3 beside linux-image 6.1.192-2 alone): the image's version, else
# the newest of the same upstream version.
kbuild_deb=$kdeb
if ! apt-cache madison "linux-kbuild-$kser" | awk -v v="$kdeb" '$3 == v { f = 1 } END { exit !f }'; then
  kbuild_deb=$(apt-cache madison "linux-kbuild-$kser" | awk -v u="${kdeb%-*}-" 'index($3, u) == 1 { print $3; exit }')
  [ -n "$kbuild_deb" ] || kbuild_deb=$kdeb
  echo "build-initrd.sh: linux-kbuild-$kser $kdeb is gone from the archive; using $kbuild_deb" >&2
fi
build=("linux-source-$kser=$kdeb" "linux-headers-$kver=$kdeb" "linux-headers-$kabi-common=$kdeb"
       "linux-kbuild-$kser=$kbuild_deb")

fetch() {
  local want=() p
  for p in "$@"; do
    local name=${p%%=*}
    ls debs/"${name}"_*.deb >/dev/null 2>&1 || want+=("$p")
  done
  [ ${#want[@]} -eq 0 ] && return 0
  echo "build-initrd.sh: downloading ${#want[@]} package(s)" >&2
  (cd debs && apt-get download -q "${want[@]}" >/dev/null) ||
    die "apt-get download failed for: ${want[*]} (run apt-get update; is the mirror reachable?)"
}
fetch "$kpkg=$kdeb" "${user[@]}" "${build[@]}"
deb() { ls debs/"$1"_*.deb | tail -1; }

# ---- the kernel ----
if [ ! -d "kernel/lib/modules/$kver" ]; then
  rm -rf kernel; mkdir kernel; dpkg-deb -x "$(deb "$kpkg")" kernel
fi
cp "kernel/boot/vmlinuz-$kver" vmlinuz

# ---- siw, built out of tree against the matching headers ----
siw="siw/$kdeb/siw.ko"
if [ ! -f "$siw" ]; then
  echo "build-initrd.sh: building siw.ko for $kver" >&2
  rm -rf kbuild "siw/$kdeb"; mkdir -p kbuild "siw/$kdeb/src"
  for p in "linux-headers-$kver" "linux-headers-$kabi-common" "linux-kbuild-$kser" "linux-source-$kser"; do
    dpkg-deb -x "$(deb "$p")" kbuild
  done
  hdr="$PWD/kbuild/usr/src/linux-headers-$kver"
  # The flavour's Makefile includes the common one by its installed path.
  sed -i "s|/usr/src/linux-headers-$kabi-common|$PWD/kbuild/usr/src/linux-headers-$kabi-common|" "$hdr/Makefile"
  tar -xaf kbuild/usr/src/linux-source-$kser.tar.xz -C "siw/$kdeb/src" --strip-components=5 \
    "linux-source-$kser/drivers/infiniband/sw/siw"
  make -s -C "$hdr" M="$PWD/siw/$kdeb/src" CONFIG_RDMA_SIW=m CC=gcc-12 modules >"siw/$kdeb/build.log" 2>&1 ||
    die "siw build failed: see $cache/siw/$kdeb/build.log"
  strip --strip-debug -o "$siw" "siw/$kdeb/src/siw.ko"
fi

# ---- the root ----
rm -rf rootfs; mkdir rootfs
for p in "${user[@]}"; do dpkg-deb -x "$(deb "$p")" rootfs; done
mods="rootfs/lib/modules/$kver"
mkdir -p "$mods/extra"; cp "$siw" "$mods/extra/"
for f in modules.order modules.builtin modules.builtin.modinfo; do cp "kernel/lib/modules/$kver/$f" "$mods/"; done
[ -f "kernel/lib/modules/$kver/modules.dep" ] || depmod -b kernel "$kver"
# The closure of what the VM loads.  rxe asks for crc32 and siw for crc32c
# by alias at run time (crypto-crc32, crypto-crc32c); --show-depends does
# not follow that, so those modules are named.
for m in virtio_pci virtio_net dummy 9p 9pnet_virtio ib_core ib_uverbs rdma_ucm rdma_cm iw_cm \
         rdma_rxe crc32_generic crc32-pclmul crc32c_generic crc32c-intel libcrc32c; do
  modprobe -d kernel -S "$kver" --show-depends "$m" 2>/dev/null | awk '$1 == "insmod" { print $2 }'
done | sort -u | while read -r ko; do
  rel=${ko#*kernel/lib/modules/$kver/}
  mkdir -p "$mods/$(dirname "$rel")"; cp "$ko" "$mods/$rel"
done
depmod -b rootfs "$kver"

# busybox fills in the commands the packages lack; /bin/sh is dash, so that
# ash does not prefer its own applets to kmod's and iproute2's.
bb=rootfs/bin/busybox
for a in $("$bb" --list); do
  for d in bin sbin usr/bin usr/sbin; do [ -e "rootfs/$d/$a" ] && continue 2; done
  ln -s busybox "rootfs/bin/$a"
done
ln -sf dash rootfs/bin/sh
mkdir -p rootfs/proc rootfs/sys rootfs/dev rootfs/tmp rootfs/run rootfs/etc rootfs/lab
echo 'root:x:0:0:root:/root:/bin/bash' >rootfs/etc/passwd
echo 'root:x:0:' >rootfs/etc/group
ldconfig -r rootfs 2>/dev/null || true

# Every shared library an executable or library needs must be in the root.
find rootfs/lib rootfs/usr/lib rootfs/lib64 -name '*.so*' -printf '%f\n' 2>/dev/null | sort -u >libs.txt
missing=$(find rootfs -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
  { xargs -0 objdump -p 2>/dev/null || true; } | awk '/NEEDED/ { print $2 }' | sort -u |
  { grep -vxF -f libs.txt || true; })
[ -z "$missing" ] || die "the VM root lacks shared libraries: $missing (add their packages to user=)"

# The host binaries named on the command line: a library is in the root,
# or found on the host by the RPATH/RUNPATH of the file that needs it (the
# VM mounts the host's tree at the same path), and then checked in turn.
seen=" " missing=""
todo=(${hostbins[@]+"${hostbins[@]}"})
while [ ${#todo[@]} -gt 0 ]; do
  f=${todo[0]}; todo=("${todo[@]:1}")
  case $seen in *" $f "*) continue ;; esac
  seen="$seen$f "
  dump=$(objdump -p "$f" 2>/dev/null) || die "$f is not an ELF file"
  dirs=$(awk '$1 == "RPATH" || $1 == "RUNPATH" { print $2 }' <<<"$dump" | tr ':' '\n' |
    sed "s|\$ORIGIN|$(dirname "$f")|; s|\${ORIGIN}|$(dirname "$f")|")
  for l in $(awk '$1 == "NEEDED" { print $2 }' <<<"$dump"); do
    grep -qxF "$l" libs.txt && continue
    for d in $dirs; do
      [ -f "$d/$l" ] && { todo+=("$(cd "$d" && pwd)/$l"); continue 2; }
    done
    missing="$missing $l (for $f)"
  done
done
[ -z "$missing" ] || die "the VM lacks shared libraries that host binaries need:$missing (add their packages to user=)"

install -m 755 "$lab/guest/init" rootfs/init
mkdir -p rootfs/lab/bin rootfs/root
install -m 755 "$lab"/guest/bin/* rootfs/lab/bin/
{
  echo "kernel $kpkg $kdeb"
  for p in "${user[@]}"; do dpkg-deb -W --showformat='${Package} ${Version}\n' "$(deb "$p")"; done
} >rootfs/lab/versions.txt
cp rootfs/lab/versions.txt versions.txt
(cd rootfs && find . | cpio -o -H newc -R 0:0 --quiet | gzip -1) >initrd.img
echo "build-initrd.sh: $cache/vmlinuz and initrd.img ($(du -h initrd.img | cut -f1)) for $kver" >&2
