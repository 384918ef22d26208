#!/usr/bin/env bash
# tools/bench/drain.sh: how fast an application drains a burst of
# completions from a DTO EVD: N calls of it_evd_dequeue against one
# itx_evd_dequeue_n of up to N, side by side in one run (issue 57: the
# batch call is kept if it drains bursts of 16 and more at least 1.3 times
# as fast).
#
#   tools/bench/drain.sh [--build DIR] [--reps N] [--out FILE.md] [--smoke]
#
# Each repetition runs tools/bench/itapi_drain.c (built by meson) on emul0
# and on iwarp0 (vp/iwarp over TCP on this host), with bursts of 16 and of
# 64 completions; inside each run the two ways alternate burst by burst,
# so that each ratio compares figures taken in the same seconds.  Both
# ends of the connection are in one process.  A run's "empty" column
# counts the calls that found the EVD empty inside a timed drain (0: every
# burst was all there when the clock started).  About 10 s a repetition:
# not a CI test; --smoke (short runs, one repetition) only checks that it
# runs.
#
# SPDX-License-Identifier: MIT
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=3
. "$here/bench_lib.sh"
bench_args drain "$@"

drain="$build/tools/bench/itapi-drain"
[ -x "$drain" ] || { echo "drain.sh: $drain not built (ninja -C $build)" >&2; exit 2; }
SEC=1
[ $smoke = 1 ] && SEC=0.1
IAS="emul0 iwarp0"
NS="16 64"

echo "drain.sh: $reps repetition(s), build $build, results to $out" >&2
loads=""
empties=""
for r in $(seq 1 "$reps"); do
  loads="$loads $(cut -d' ' -f1 /proc/loadavg)"
  echo "  repetition $r/$reps (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  for ia in $IAS; do
    for n in $NS; do
      read -r _ _ one many empty <<<"$(timeout 60 "$drain" -i "$ia" -n "$n" -D $SEC 2>"$tmp/err" ||
                                        sed 's/^/    /' "$tmp/err" >&2)"
      put "one.$ia.$n" "$r" "${one:-}"; put "many.$ia.$n" "$r" "${many:-}"
      empties="$empties ${empty:-?}"
    done
  done
done

{
  report_head "Draining a burst of completions: one run of tools/bench/drain.sh"
  for ia in $IAS; do
    for n in $NS; do
      echo "| $ia, burst of $n: it_evd_dequeue × $n, Mevents/s | $(fmt "one.$ia.$n" failed) |"
      echo "| $ia, burst of $n: itx_evd_dequeue_n (max $n), Mevents/s | $(fmt "many.$ia.$n" failed) |"
    done
  done
  echo
  echo "Empty calls inside the timed drains, per run:$empties."
  echo
  echo "| target | ratio | limit | |"
  echo "|---|---|---|---|"
  for ia in $IAS; do
    for n in $NS; do
      rt=$(ratio "many.$ia.$n" "one.$ia.$n")
      echo "| $ia, burst of $n: batch ÷ single | ${rt:-n/a} | ≥ 1.3 | $(verdict "$rt" '>=' 1.3) |"
    done
  done
} >"$out"
cat "$out"
echo "drain.sh: written to $out" >&2
