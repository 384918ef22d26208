#!/bin/sh
# lab/mutate-guest.sh: the in-VM half of tools/mutate/mutate.py --lab.
# Certifies vp/ib on the lab VM's devices, one provider module (a seeded
# defect's, or the unmodified one) at a time, as PLAN lists them:
#
#   TAG DEVICE MODULE TESTS    (TESTS: texts of test ids, comma-separated, for
#                               --filter; - for the level whole)
#
# each with itapi-certify -p ib -d DEVICE at LEVEL, the module named by
# ITAPI_PROVIDER_PATH, the tests of the device's deviation file left out
# (--skip-deviations), in the settings lab/ib-guest.sh's certify uses for
# an emulated CPU.  Its JSON report goes to OUT/TAG-DEVICE.json, its output
# to OUT/TAG-DEVICE.log, and OUT/TAG-DEVICE.status says "STATUS LEVEL
# TESTS" once it ended.  The devices' lists run side by side (rxe0 and siw0 share
# no kernel object), each in its order; SERIAL=1 runs them one after the
# other.  Prints "LAB-RUN TAG DEVICE status N Ms" per certification.
#
#   sh lab/mutate-guest.sh BUILD PLAN OUT LEVEL TIMEOUT [SERIAL]
#
# SPDX-License-Identifier: MIT
build=$1 plan=$2 out=$3 level=$4 timeout=$5 serial=${6:-0}
certify=$build/tools/certify/itapi-certify

one() {
  tag=$1 dev=$2 module=$3 test=$4
  # lab/ib-guest.sh's certify: 100 pairs, 3 rounds beside a transfer, the
  # protection-zone limit siw0 and rxe0 can reach, 30 s for one event.
  pz_cap=110000
  [ "$dev" = rxe0 ] && pz_cap=20000
  filter=
  for t in $(echo "$test" | tr , ' '); do
    [ "$t" = - ] || filter="$filter --filter $t"
  done
  t0=$(date +%s)
  # shellcheck disable=SC2086 # $filter: none or pairs of words
  ITAPI_PROVIDER=ib ITAPI_PROVIDER_PATH=$module ITAPI_SCALE_PAIRS=100 ITAPI_BESIDE_ROUNDS=3 ITAPI_ACKS_ROUNDS=1000 \
    ITAPI_PZ_LIMIT_CAP=$pz_cap ITAPI_CONF_WAIT_S=30 \
    timeout 1500 "$certify" -p ib -d "$dev" --level "$level" --timeout "$timeout" -q \
    --skip-deviations $filter --json "$out/$tag-$dev.json" </dev/null >"$out/$tag-$dev.log" 2>&1
  rc=$?
  echo "$rc $level $test" >"$out/$tag-$dev.status"
  echo "LAB-RUN $tag $dev status $rc $(($(date +%s) - t0))s"
}

queue() {
  while read -r tag dev module test; do
    [ "$dev" = "$1" ] && one "$tag" "$dev" "$module" "$test"
  done <"$plan"
}

devs=$(awk '{ print $2 }' "$plan" | sort -u)
for d in $devs; do
  if [ "$serial" = 1 ]; then
    queue "$d"
  else
    queue "$d" &
  fi
done
wait
