#!/usr/bin/env bash
# The sanitizer runs (doc/sanitizers.md):
#
#   bash scripts/sanitize.sh asan   ASan + UBSan build (gcc) in build-asan, leak
#                                   checking on: the unit, conformance and iwarp
#                                   suites, itapi-test on each provider
#   bash scripts/sanitize.sh tsan   TSan build (clang) in build-tsan: itapi-test
#                                   with four threads on each provider, the
#                                   cross-process, CM and race conformance tests
#   bash scripts/sanitize.sh all    both, one after the other
#
# Extra arguments go to `meson test` (e.g. a test name).  Each build is
# -Dwerror=true -Ddocs=disabled; each run leaves Meson's log in
# build-<san>/meson-logs/testlog.json, which scripts/test.sh counts.  Exits
# non-zero when a build failed or a test did.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
supp=$root/tests/sanitizers

# GSlice (GLib 2.74) recycles memory without malloc/free: ASan would miss a
# use-after-free of a slice and TSan would see a recycled slice as a race.
export G_SLICE=always-malloc
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:print_summary=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1:suppressions=$supp/ubsan.supp"
# halt_on_error=0: every race of a run is printed; the process still exits 66.
export TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:print_suppressions=0:suppressions=$supp/tsan.supp"

# build DIR CC CXX SANITIZERS: set up (once) and build DIR.
build() {
  local dir=$1 cc=$2 cxx=$3 san=$4 t0=$SECONDS
  if ! command -v "$cc" >/dev/null || ! command -v "$cxx" >/dev/null; then
    echo "sanitize: $cc/$cxx not found (apt-get install ${cc%%-*}); $dir not built" >&2
    return 1
  fi
  if [ ! -f "$dir/build.ninja" ]; then
    CC=$cc CXX=$cxx meson setup "$dir" -Db_sanitize="$san" -Db_lundef=false \
      -Ddocs=disabled -Dwerror=true >"$dir.setup.log" 2>&1 || {
      echo "sanitize: 'CC=$cc meson setup $dir -Db_sanitize=$san' failed ($dir.setup.log):" >&2
      tail -n 20 "$dir.setup.log" >&2
      rm -rf "$dir"
      return 1
    }
  fi
  nice meson compile -C "$dir" -j 2 >"$dir.build.log" 2>&1 || {
    echo "sanitize: building $dir failed ($dir.build.log):" >&2
    grep -E 'error|warning' "$dir.build.log" | head -n 20 >&2
    return 1
  }
  echo "sanitize: $dir: built in $((SECONDS - t0)) s"
}

# run DIR MESON-TEST-ARGS...: run the tests, timing them.
run() {
  local dir=$1 t0=$SECONDS rc=0
  shift
  rm -f "$dir/meson-logs/testlog.json"
  nice -n 19 meson test -C "$dir" --no-rebuild --num-processes 2 --timeout-multiplier 4 \
    --print-errorlogs "$@" || rc=$?
  echo "sanitize: $dir: tests ran in $((SECONDS - t0)) s (exit $rc)"
  return $rc
}

asan() {
  build build-asan gcc g++ address,undefined || return 1
  if [ $# -eq 0 ]; then
    # The unit, conformance and iwarp suites, less the three cert-rnicpi runs
    # that certify-emul, certify-emul-iw0 and certify-iwarp repeat as their
    # RNIC-PI level (the same program over the same provider and device).
    mapfile -t names < <(meson test -C build-asan --no-rebuild --list --suite unit \
        --suite conformance --suite iwarp 2>/dev/null |
      sed -n -E 's@^.* / ([^ ]+)$@\1@p' | grep -v -x -E 'cert-rnicpi-(emul|emul-iw|iwarp)')
    set -- "${names[@]}"
  else
    set -- --suite unit --suite conformance --suite iwarp "$@"
  fi
  run build-asan "$@"
}

tsan() {
  build build-tsan clang clang++ thread || return 1
  if [ $# -eq 0 ]; then
    # itapi-test (not the 20 s itapi-test-long) and every instance of the
    # CM and race (concurrency) conformance programs; of the cross-process
    # one, emul's own attach path, emul-iw0's bounce ring and vp/iwarp's
    # host CM (emul-iw0's attach path, plain and RFC 7306, adds no thread
    # of its own to those).
    mapfile -t names < <(meson test -C build-tsan --no-rebuild --list 2>/dev/null |
      sed -n -E 's@^.* / ((itapi-test-(mix|send|fault|threads-.*)|conformance-(cm|race)(-.*)?|conformance-xproc(-emul-iw-bounce|-iwarp-hostcm)?))$@\1@p')
    set -- "${names[@]}"
  fi
  run build-tsan "$@"
}

what=${1:-}
[ $# -gt 0 ] && shift
case "$what" in
  asan) asan "$@" ;;
  tsan) tsan "$@" ;;
  all)
    rc=0
    asan "$@" || rc=1
    tsan "$@" || rc=1
    exit $rc ;;
  *)
    echo "usage: bash scripts/sanitize.sh asan|tsan|all [meson test arguments]" >&2
    exit 2 ;;
esac
