#!/usr/bin/env bash
# tools/bench/dat-callgrind.sh: where the instructions of a DAT ping-pong
# go, counted rather than timed, on any host (no lab VM): Debian's dtest
# RDMA Write ping-pong (-W -p -b 64, as tools/bench/dat-ib.sh times it in
# the lab) through the build tree's dat.conf, its server in a second
# process, its client under callgrind; then, per dat_ep_post_rdma_write
# and per dat_evd_dequeue called from dtest's ping-pong loop, the
# instructions of each layer (libdat2, dat/, IT-API's access layer ual/
# and itapi/, the provider vp/) and of each function
# (tools/bench/callgrind_split.py says how they are split).
#
#   tools/bench/dat-callgrind.sh [--build DIR] [--iters N] [IA...]
#
# IA: the interfaces to count over (default emul0 iwarp0).  Over both, a
# dequeue of the loop finds the Write's completion there, as over rxe in
# the lab: one post and one dequeue per iteration.  Each run keeps its
# profile in the build tree (bench/dat-callgrind-IA.out, for
# callgrind_annotate).  Needs valgrind and dtest (dapl2-utils); dtest's
# server listens on TCP port 15828, so each run is made in a network
# namespace of its own where one can be made (dat/netns.sh).  Instruction
# counts do not depend on the host's load: it runs beside anything.
#
# SPDX-License-Identifier: MIT
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build"
iters=2000
ias=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    -h|--help) sed -n '2,/^# SPDX/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "dat-callgrind.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) ias+=("$1"); shift ;;
  esac
done
[ ${#ias[@]} -gt 0 ] || ias=(emul0 iwarp0)
build=$(cd "$build" && pwd) || exit 2
conf="$build/dat/dat.conf"
[ -f "$conf" ] || { echo "dat-callgrind.sh: $conf not built (the dat feature, ninja -C $build)" >&2; exit 2; }
for tool in valgrind dtest python3; do
  command -v $tool >/dev/null || { echo "dat-callgrind.sh: $tool is not installed" >&2; exit 2; }
done
mkdir -p "$build/bench"
tmp=$(mktemp -d /tmp/dat-callgrind.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# One run over $1, inside the namespace: the server, then the client under
# callgrind, started again while the server does not listen yet.
run_one() {  # IA PROFILE
  # shellcheck disable=SC2016 # expanded by the inner shell
  sh "$root/dat/netns.sh" bash -c '
    ia=$1 out=$2 iters=$3 tmp=$4
    export DAT_OVERRIDE=$5
    timeout 300 dtest -s -P "itapi-$ia" -W -p -b 64 -B "$iters" >"$tmp/server" 2>&1 &
    s=$!
    for try in $(seq 100); do
      timeout 300 valgrind --tool=callgrind --separate-callers=12 --callgrind-out-file="$out" \
        dtest -h 127.0.0.1 -P "itapi-$ia" -W -p -b 64 -B "$iters" >"$tmp/client" 2>&1
      grep -q "Could not connect to" "$tmp/client" || break
      sleep 0.2
    done
    wait $s' sh "$1" "$2" "$iters" "$tmp" "$conf"
}

rc=0
for ia in "${ias[@]}"; do
  out="$build/bench/dat-callgrind-$ia.out"
  run_one "$ia" "$out"
  if ! grep -q "DAPL Test Complete. PASSED" "$tmp/client"; then
    echo "dat-callgrind.sh: dtest over $ia did not pass:"
    sed 's/^/  | /' "$tmp/client" "$tmp/server"
    rc=1
    continue
  fi
  echo "== $ia: dtest -W -p -b 64 -B $iters, the client's instructions"
  python3 "$here/callgrind_split.py" "$out" dat_ep_post_rdma_write dat_evd_dequeue || rc=1
done
exit $rc
