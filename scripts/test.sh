#!/usr/bin/env bash
# The test command: unit, header and conformance suites, then the doc build
# (warnings are errors), then, where clang and its libFuzzer runtime are
# installed, 60 s libFuzzer runs over vp/iwarp's receive path and over what
# a vp/emul target takes from a peer process (a second build in
# build-fuzz; ITAPI_FUZZ=0 leaves them out).  After the main suite,
# in the background and niced, the sanitizer runs (scripts/sanitize.sh: ASan+UBSan
# in build-asan, and with clang TSan in build-tsan; log in
# build-sanitize.log; ITAPI_SANITIZE=0 leaves them out).  Ends with
# "N passed, N failed, N skipped", counted from Meson's test logs (the
# sanitizer builds' and the lab suite's included) with GTest subtests
# included.  Run with no arguments, the lab suite (the qemu VM's rxe and siw,
# lab/) runs in the background from the start, beside the host suites
# (ITAPI_LAB_BESIDE=0 runs it inside the main run instead).
set -uo pipefail
cd "$(dirname "$0")/.."

san_pid="" lab_pid=""
stop_sanitizers() {
  [ -z "$san_pid" ] || kill -- "-$san_pid" 2>/dev/null || true
  [ -z "$lab_pid" ] || kill -- "-$lab_pid" 2>/dev/null || true
}

[ -f build/build.ninja ] || meson setup build -Dwerror=true
meson compile -C build || { stop_sanitizers; echo "0 passed, 1 failed"; exit 1; }

# With no arguments, the lab suite (rxe and siw in an emulated VM: slow, and
# mostly waiting on one emulated machine) runs from the start beside
# everything else, in its own meson test run with its own log
# (build/meson-logs/testlog-lab.json); its output is shown at the end.
logs=(build/meson-logs/testlog.json)
lab_rc=0
if [ $# -eq 0 ] && [ "${ITAPI_LAB_BESIDE:-1}" != 0 ]; then
  rm -f build/meson-logs/testlog-lab.json
  setsid meson test -C build --no-rebuild --print-errorlogs --suite lab --num-processes 1 \
    --logbase testlog-lab >build/lab-tests.out 2>&1 &
  lab_pid=$!
  # The conformance rows run alone under meson test and wait much of
  # their time (a peer's answer, a quiet period): itapi-certify runs four
  # of a row's tests at once (ITAPI_CERTIFY_JOBS; those that look at or
  # load the whole host still alone).  The emul row beside a busy loop,
  # niced as here: 94 s with two, 76 s with four.  Niced a little, so
  # that the lab's emulated VM, whose checks have timeouts of their own,
  # goes first.
  ITAPI_CERTIFY_JOBS=${ITAPI_CERTIFY_JOBS:-4} nice -n 5 \
    meson test -C build --no-rebuild --print-errorlogs --no-suite lab
else
  meson test -C build --print-errorlogs "$@"
fi
test_rc=$?

# The sanitizer runs start once the main suite is done (they load both
# cores, and the siw lab's emulated VM in the main suite must not starve:
# a Write of siw's stalled past its 120 s timeout once when they ran
# beside it), and run beside the doc build and the fuzz run.  A stale log
# must not be counted if a build fails.
san_what=""
if [ "${ITAPI_SANITIZE:-1}" != 0 ]; then
  rm -f build-asan/meson-logs/testlog*.json build-tsan/meson-logs/testlog.json \
    build-tsan/meson-logs/testlog-certify.json build-tsan/meson-logs/testlog-certify-whole.json
  san_what=all
  command -v clang >/dev/null || san_what=asan
  # Its own process group (setsid), so that an early exit stops all of it.
  setsid nice bash scripts/sanitize.sh $san_what >build-sanitize.log 2>&1 &
  san_pid=$!
fi

docs_rc=0
if meson compile -C build docs >build/docs.log 2>&1; then
  echo "docs: built in build/doc/reference/html/index.html"
else
  docs_rc=1
  echo "docs: FAILED"; tail -n 30 build/docs.log
fi

fuzz_rc=0
if [ "${ITAPI_FUZZ:-1}" != 0 ] && command -v clang >/dev/null &&
   echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
   clang -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null; then
  if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang meson setup build-fuzz -Dfuzz=true -Ddocs=disabled -Dwerror=true >build-fuzz.log 2>&1 ||
      { fuzz_rc=1; echo "fuzz: 'CC=clang meson setup build-fuzz -Dfuzz=true' failed (build-fuzz.log below); fix it or run with ITAPI_FUZZ=0"; tail -n 20 build-fuzz.log; }
  fi
  if [ $fuzz_rc -eq 0 ] && meson compile -C build-fuzz vp/iwarp/fuzz/iwarp-fuzz tests/emul/fuzz/emul-fuzz \
       tests/emul/fuzz/emul-fuzz-record >build-fuzz.log 2>&1; then
    rm -f build-fuzz/meson-logs/testlog.json
    meson test -C build-fuzz --no-rebuild --print-errorlogs --suite slow iwarp-fuzz emul-fuzz
    logs+=(build-fuzz/meson-logs/testlog.json)
  elif [ $fuzz_rc -eq 0 ]; then
    fuzz_rc=1; echo "fuzz: building iwarp-fuzz and emul-fuzz with clang failed (build-fuzz.log below); fix it or run with ITAPI_FUZZ=0"; tail -n 20 build-fuzz.log
  fi
elif [ "${ITAPI_FUZZ:-1}" = 0 ]; then
  echo "fuzz: skipped (ITAPI_FUZZ=0)"
elif ! command -v clang >/dev/null; then
  echo "fuzz: skipped (no clang: apt-get install clang libclang-rt-14-dev)"
else
  echo "fuzz: skipped (clang -fsanitize=fuzzer does not link: apt-get install libclang-rt-14-dev)"
fi

san_rc=0
if [ -n "$san_pid" ]; then
  echo "sanitizers: waiting for scripts/sanitize.sh $san_what (log: build-sanitize.log)"
  wait "$san_pid"; san_exit=$?
  # Each failure once (Meson repeats them in its summary), and the timings.
  grep -E '^sanitize:|^ *[0-9]+/[0-9]+ .* (FAIL|ERROR|TIMEOUT|UNEXPECTEDPASS) ' build-sanitize.log |
    awk '!seen[$0]++'
  [ "$san_what" = asan ] && echo "sanitizers: TSan skipped (no clang: apt-get install clang)"
  dirs=(build-asan)
  [ "$san_what" = all ] && dirs+=(build-tsan)
  for d in "${dirs[@]}"; do
    if [ -f "$d/meson-logs/testlog.json" ]; then
      logs+=("$d/meson-logs/testlog.json")
    else
      san_rc=1
      echo "sanitizers: $d did not build or run (build-sanitize.log); fix it or run with ITAPI_SANITIZE=0"
    fi
  done
  # ASan's narrowed rows (asan_narrow in scripts/sanitize.sh) and TSan's
  # conformance matrix runs have logs of their own.
  for l in build-asan/meson-logs/testlog-*.json; do
    [ -f "$l" ] && logs+=("$l")
  done
  if [ "$san_what" = all ]; then
    for l in testlog-certify-whole testlog-certify; do
      if [ -f "build-tsan/meson-logs/$l.json" ]; then
        logs+=("build-tsan/meson-logs/$l.json")
      else
        san_rc=1
        echo "sanitizers: build-tsan's conformance matrix run $l did not run (build-sanitize.log)"
      fi
    done
  fi
  if [ "$san_exit" -eq 2 ]; then
    # A failed test is counted from its log; exit 2 is a run that left none.
    san_rc=1
    echo "sanitizers: a run of scripts/sanitize.sh $san_what left no log (build-sanitize.log)"
  fi
else
  echo "sanitizers: skipped (ITAPI_SANITIZE=0)"
fi

if [ -n "$lab_pid" ]; then
  echo "lab: waiting for the lab suite (build/lab-tests.out)"
  wait "$lab_pid"; lab_rc=$?
  cat build/lab-tests.out
  if [ -f build/meson-logs/testlog-lab.json ]; then
    logs+=(build/meson-logs/testlog-lab.json)
  else
    lab_rc=1
    echo "lab: the lab suite did not run (build/lab-tests.out above); run it alone with 'meson test -C build --suite lab'"
  fi
fi

python3 scripts/count_tests.py "${logs[@]}" $docs_rc $fuzz_rc $san_rc $lab_rc
count_rc=$?
[ $test_rc -eq 0 ] && [ $docs_rc -eq 0 ] && [ $fuzz_rc -eq 0 ] && [ $san_rc -eq 0 ] &&
  [ $lab_rc -eq 0 ] && [ $count_rc -eq 0 ]
