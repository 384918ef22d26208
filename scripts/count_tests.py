#!/usr/bin/env python3
"""Count test outcomes in Meson's testlog.json files, GTest/TAP subtests included.

A TAP test contributes one outcome per 'ok'/'not ok' line (a '# SKIP' line
is a skip, and so is a '# TODO' line: a known deviation the certification
runner reports without failing); any other test contributes its own result.  An extra failure is
counted for each argument that is not a log and not "0" (e.g. the doc build).
Prints 'N passed, N failed, N skipped' and exits 1 if anything failed.
A failed test of a log outside build/ (the sanitizer builds', whose output
goes to build-sanitize.log alone) has the end of its output shown first,
so that a CI log names the cause.
"""
import json
import re
import sys

passed = failed = skipped = 0
SHOWN_LINES = 60


def show_failure(path, t):
    """Print the end of a failed test's output (stdout, then stderr)."""
    out = ((t.get("stdout") or "") + (t.get("stderr") or "")).splitlines()
    print(f"--- {path}: {t.get('name')} {t['result']}, its last {min(len(out), SHOWN_LINES)} lines:")
    for l in out[-SHOWN_LINES:]:
        print(f"    {l}")


def count(path):
    global passed, failed, skipped
    show = not path.startswith("build/")
    with open(path) as log:
        for line in log:
            t = json.loads(line)
            if show and t["result"] not in ("OK", "EXPECTEDFAIL", "SKIP"):
                show_failure(path, t)
            out = t.get("stdout") or ""
            tap = [l for l in out.splitlines() if re.match(r"^(not )?ok\b", l)]
            if tap:
                for l in tap:
                    if re.search(r"#\s*(SKIP|TODO)", l, re.I):
                        skipped += 1  # a skip, or a known deviation (TAP TODO)
                    elif l.startswith("not ok"):
                        failed += 1
                    else:
                        passed += 1
                if t["result"] not in ("OK", "EXPECTEDFAIL", "SKIP") and not any(
                        l.startswith("not ok") and not re.search(r"#\s*TODO", l, re.I) for l in tap):
                    failed += 1  # crashed or timed out after its last line
            elif t["result"] in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif t["result"] == "SKIP":
                skipped += 1
            else:
                failed += 1


for arg in sys.argv[1:]:
    if arg.endswith(".json"):
        count(arg)
    elif arg != "0":
        failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
