#!/usr/bin/env bash
# The test command: unit, header and conformance suites, then the doc build
# (warnings are errors).  Ends with "N passed, N failed, N skipped", counted
# from Meson's test log with GTest subtests included.
set -uo pipefail
cd "$(dirname "$0")/.."

[ -f build/build.ninja ] || meson setup build -Dwerror=true
meson compile -C build || { echo "0 passed, 1 failed"; exit 1; }

meson test -C build --print-errorlogs "$@"
test_rc=$?

docs_rc=0
if meson compile -C build docs >build/docs.log 2>&1; then
  echo "docs: built in build/doc/reference/html/index.html"
else
  docs_rc=1
  echo "docs: FAILED"; tail -n 30 build/docs.log
fi

python3 scripts/count_tests.py build/meson-logs/testlog.json $docs_rc
count_rc=$?
[ $test_rc -eq 0 ] && [ $docs_rc -eq 0 ] && [ $count_rc -eq 0 ]
