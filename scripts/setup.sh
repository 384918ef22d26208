#!/usr/bin/env bash
# Set-up on a fresh Debian 12 machine: install what is missing, build, and run
# the main job (itapi-pingpong: an IT-API application moving and verifying
# data over the default provider).
set -euo pipefail
cd "$(dirname "$0")/.."

# libibverbs-dev and librdmacm-dev: the vp/ib module (rdma-core devices);
# libdapl-dev: dat/, the DAT 2.0 provider for libdat2.
pkgs=(meson ninja-build pkg-config gcc g++ libglib2.0-dev doxygen graphviz python3
      libibverbs-dev librdmacm-dev libdapl-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f build/build.ninja ]; then
  meson setup build -Dwerror=true
fi
meson compile -C build
./build/doc/itapi-pingpong -n "${PINGPONG_ITERS:-10000}" -s 64
