#!/usr/bin/env python3
"""itapi-certify shows a failing test's sanitizer report under its failure.

A test that a sanitizer stopped fails with one line ("WARNING:
ThreadSanitizer: data race"); the report's stacks are what tells where.
The check runs the catalog from a folder whose conf-ia is a stand-in that
prints a ThreadSanitizer report and exits 66 (the other programs are the
build's, found through its conformance folder), and expects the report's
lines, from its WARNING to its SUMMARY, on the console under the failure.

usage: check_sanitizer_report.py ITAPI_CERTIFY BUILD_DIR
"""
import os
import subprocess
import sys
import tempfile

certify, build = sys.argv[1], sys.argv[2]
FAKE = """#!/bin/sh
if [ "$1" = "-l" ]; then echo /conformance/ia/sanitized; exit 0; fi
echo "1..1"
echo "=================="
echo "WARNING: ThreadSanitizer: data race (pid=1)"
echo "  Write of size 8 at 0x7b2800000008 by thread T2:"
echo "    #0 free_it where.c:12:3"
echo "SUMMARY: ThreadSanitizer: data race where.c:12:3 in free_it"
echo "=================="
echo "ok 1 /conformance/ia/sanitized"
exit 66
"""
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "conf-ia"), "w") as f:
        f.write(FAKE)
    os.chmod(os.path.join(tmp, "conf-ia"), 0o755)
    os.symlink(os.path.abspath(os.path.join(build, "conformance")), os.path.join(tmp, "conformance"))
    run = subprocess.run([certify, "-p", "emul", "--tests-dir", tmp, "--level", "itapi",
                          "--filter", "/conformance/ia/sanitized", "-q"],
                         capture_output=True, text=True)
    out = run.stdout + run.stderr
    print(out)
    assert run.returncode == 1, f"expected exit 1 (a failure), got {run.returncode}"
    assert "FAIL      /conformance/ia/sanitized" in out, "the test is not reported as failed"
    assert out.count("FAIL  ") == 1, "another test failed"
    for want in ("| WARNING: ThreadSanitizer: data race (pid=1)", "|     #0 free_it where.c:12:3",
                 "| SUMMARY: ThreadSanitizer: data race where.c:12:3 in free_it"):
        assert want in out, f"the console lacks the report's line '{want}'"
    print("the sanitizer report is shown under the failure")
