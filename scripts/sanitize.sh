#!/usr/bin/env bash
# The sanitizer runs (doc/sanitizers.md):
#
#   bash scripts/sanitize.sh asan   ASan + UBSan build (gcc) in build-asan, leak
#                                   checking on: the unit, conformance and iwarp
#                                   suites (but asan_skip, and asan_narrow's
#                                   rows narrowed; their logs:
#                                   testlog-<row>.json), itapi-test on each
#                                   provider
#   bash scripts/sanitize.sh tsan   TSan build (clang) in build-tsan: itapi-test
#                                   with four threads on each provider,
#                                   dat-objects, unit-source-notify, the
#                                   conformance matrix's emul and iwarp rows
#                                   whole (log: testlog-certify-whole.json),
#                                   then the CM, race and cross-process areas
#                                   of its other rows that differ in threads
#                                   (log: testlog-certify.json)
#   bash scripts/sanitize.sh all    both, one after the other
#
# Extra arguments go to `meson test` (e.g. a test name).  Each build is
# -Dwerror=true -Ddocs=disabled; each run leaves Meson's log in
# build-<san>/meson-logs/testlog.json, which scripts/test.sh counts.  Exits
# 2 when a run left no log, 1 when a build failed or a test did.
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
# intercept_send=0: a send's bytes are recorded as read before the call by
# our own code (tests/sanitizers/tsan-glib.h, "Sockets"), not after it.
# atexit_sleep_ms=50: a process waits 50 ms at exit for its threads to race
# it, not 1 s; the cross-process tests start many children (doc/sanitizers.md).
export TSAN_OPTIONS="atexit_sleep_ms=50:halt_on_error=0:second_deadlock_stack=1:print_suppressions=0:intercept_send=0:suppressions=$supp/tsan.supp"

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

# run DIR [--logbase NAME] MESON-TEST-ARGS...: run the tests, timing them
# (log: DIR/meson-logs/NAME.json, testlog.json by default).
run() {
  local dir=$1 t0=$SECONDS rc=0 logbase=testlog
  shift
  if [ "${1:-}" = --logbase ]; then
    logbase=$2
    shift 2
  fi
  rm -f "$dir/meson-logs/$logbase.json"
  nice -n 19 meson test -C "$dir" --no-rebuild --num-processes 2 --timeout-multiplier 4 \
    --logbase "$logbase" --print-errorlogs "$@" || rc=$?
  echo "sanitize: $dir: tests ran in $((SECONDS - t0)) s (exit $rc; log $logbase.json)"
  if [ ! -f "$dir/meson-logs/$logbase.json" ]; then
    echo "sanitize: $dir: 'meson test $*' left no log $logbase.json: it ran nothing (see the lines above; 'meson test -C $dir --list' names the tests there are)" >&2
    nolog=1
  fi
  return $rc
}
nolog=0

# The conformance tests ASan leaves out: their code runs under it in
# another.  certify-emul-module is emul's own code loaded as a module (the
# module loader runs under ASan in log-domain-iwarp-module, which loads
# vp/iwarp so); 2 minutes of the ASan run, the CI's longest part.
# certify-catches-bounds and certify-jobs-catches-bounds are itapi-certify
# naming the seeded defect of the broken-bounds module, one test at a time
# and in its pool: the module's code and the runner's report of the defect
# run under ASan in certify-reports, the pool in every row (86 s).
# certify-emul-untrusted is the xproc area over the ring, as
# certify-emul-iw-bounce runs it; its handshake and the target's checks of
# an untrusted peer run under ASan in emul-hostile (unit suite).
asan_skip=(certify-emul-module certify-catches-bounds certify-jobs-catches-bounds certify-emul-untrusted)

# itapi-certify's tests at once (ITAPI_CERTIFY_JOBS, itapi-certify --jobs)
# in every run of conformance rows: a row runs alone under meson test, and
# its tests wait much of their time (a peer's answer, a quiet period).
# The emul row here, idle: ASan 131 s with 2, 109 s with 4; TSan 196 s
# with 2, 176 s with 4 (no race either way).  The lab suite's emulated
# VM, which may still run beside the first of them, is not starved: these
# runs are niced to 19 (run), the VM is not.
certify_jobs=${ITAPI_SANITIZE_CERTIFY_JOBS:-4}

# The rows ASan runs narrowed (row, then itapi-certify arguments added to
# the row's own): where a row's setting changes one part of the provider,
# ASan runs that part, and the rest under ASan in the row without the
# setting.  emul-iw0 (emul's iWARP personality: the same code, read from
# the personality's table) at the RNIC-PI level; iwarp-placed (Sends and
# Writes completing at placement) over transfers, flushes and frees beside
# them; iwarp-rfc7306 (atomics and immediate data) over transfers, as the
# emul-iw0-rfc7306 row.  About 5 minutes off the ASan run.
asan_narrow=(
  "certify-emul-iw0|--level rnicpi"
  "certify-iwarp-placed|--filter /rnicpi/data --filter /rnicpi/flush --filter /rnicpi/xproc --filter /conformance/dto/ --filter /conformance/race/"
  "certify-iwarp-rfc7306|--filter /rnicpi/data --filter /rnicpi/xproc --filter /conformance/dto/ --filter /conformance/xproc/"
)

asan() {
  build build-asan gcc g++ address,undefined || return 1
  if [ $# -gt 0 ]; then
    run build-asan "$@"
    return
  fi
  # The unit, conformance (the conformance matrix but asan_skip, and the
  # asan_narrow rows, run after with their narrowing) and iwarp suites.
  local names narrow=() entry rc=0
  for entry in "${asan_narrow[@]}"; do narrow+=("${entry%%|*}"); done
  mapfile -t names < <(meson test -C build-asan --no-rebuild --list --suite unit --suite conformance \
    --suite iwarp 2>/dev/null | sed -n -E 's@^.* / ([^ ]+)$@\1@p' |
    grep -vxF -f <(printf '%s\n' "${asan_skip[@]}" "${narrow[@]}"))
  if [ ${#names[@]} -eq 0 ]; then
    echo "sanitize: 'meson test -C build-asan --list' names no test of the unit, conformance and iwarp suites: is build-asan set up (build-asan.setup.log)?" >&2
    return 1
  fi
  ITAPI_CERTIFY_JOBS=$certify_jobs run build-asan "${names[@]}" || rc=1
  # Each narrowed row in a run of its own (--test-args reaches every test
  # of a run), with a log of its own: testlog-<row>.json, which
  # scripts/test.sh counts beside testlog.json.
  for entry in "${asan_narrow[@]}"; do
    ITAPI_CERTIFY_JOBS=$certify_jobs run build-asan --logbase "testlog-${entry%%|*}" "${entry%%|*}" \
      --test-args "${entry#*|}" || rc=1
  done
  return $rc
}

tsan() {
  build build-tsan clang clang++ thread || return 1
  if [ $# -gt 0 ]; then
    run build-tsan "$@"
    return
  fi
  # itapi-test (not the 20 s itapi-test-long), unit-source-notify (the
  # callback order tsan-glib.h keeps visible), dat-objects (the DAT
  # provider's handles, waits and abrupt close racing) ...
  local rc=0
  mapfile -t names < <(meson test -C build-tsan --no-rebuild --list 2>/dev/null |
    sed -n -E 's@^.* / (itapi-test-(mix|send|fault|threads-.*)|itapi-first-calls-.*|unit-source-notify|dat-objects.*)$@\1@p')
  run build-tsan "${names[@]}" || rc=1
  # ... the conformance matrix's emul and iwarp rows whole (every level: the
  # provider's own tests, those with a peer process, the IT-API programs;
  # about 3 minutes each) ...
  # A test waits 20 s for one event, not 5 (ITAPI_CONF_WAIT_S): under TSan,
  # four at a time, a 32 MiB Read through emul's bounce ring took more than
  # 5 s on a loaded host (/conformance/xproc/post-beside-transfer); the
  # wait only says when a lost completion is called lost.  A wait may
  # outlast its own limit by 30 s, not 5 (--wait-grace): a call that
  # should return at once (it_evd_wait with no time to wait, beside an
  # it_ia_free of its IA in /conformance/race/ia-free-vs-wait) took 5.5 s
  # under TSan on a loaded host.
  ITAPI_CONF_WAIT_S=20 ITAPI_CERTIFY_JOBS=$certify_jobs run build-tsan --logbase testlog-certify-whole certify-emul certify-iwarp \
    --test-args "--timeout 240 --wait-grace 30" || rc=1
  # ... and its other rows whose threads differ (emul's bounce ring, the host
  # CM's connect; an emul personality changes rules, not threads) over the
  # programs where threads race: the CM, the concurrency (race) and the
  # cross-process ones.  Each run has its own log, which scripts/test.sh
  # counts beside testlog.json.
  ITAPI_CONF_WAIT_S=20 ITAPI_CERTIFY_JOBS=$certify_jobs run build-tsan --logbase testlog-certify certify-emul-iw-bounce certify-iwarp-hostcm --test-args "--level itapi --timeout 240 --wait-grace 30 \
    --filter /conformance/cm/ --filter /conformance/race/ --filter /conformance/xproc/" || rc=1
  return $rc
}

what=${1:-}
[ $# -gt 0 ] && shift
rc=0
case "$what" in
  asan) asan "$@" || rc=1 ;;
  tsan) tsan "$@" || rc=1 ;;
  all)
    asan "$@" || rc=1
    tsan "$@" || rc=1 ;;
  *)
    echo "usage: bash scripts/sanitize.sh asan|tsan|all [meson test arguments]" >&2
    exit 2 ;;
esac
# 2: a run left no log (scripts/test.sh counts that as a failure; a failed
# test is counted from its log).
[ $nolog = 0 ] || exit 2
exit $rc
