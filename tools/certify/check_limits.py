#!/usr/bin/env python3
"""itapi-certify kills a test from the limit of what it waits for.

The catalog runs from a folder whose conf-ia is limit-standin, a stand-in
that tells its waits as a conformance test does (conformance/cert_limit.h);
the other programs are the build's, found through its conformance folder.
With a ceiling (--timeout) of 60 s and a grace of 2 s:

- a test that hangs in a wait of 1 s, in its own process or in a child, is
  killed after about 3 s, and the message names the wait, its process, its
  limit and the grace;
- a test that waits 8 times 0.5 s (limit 1 s each, 4 s in all) passes, and
  so does one whose child died in a wait it never ended, and one whose 8
  such waits, 0.2 s apart with none open between them, are nested in a
  wait of 1 s (its loop's: a step that ended less than the grace ago
  excuses it);
- a test that hangs in that outer wait after 2 steps (1 s) is killed
  after about 3 s (the outer wait's limit and grace: no step is open to
  excuse it), naming the outer wait;
- with a ceiling of 4 s, a test that hangs outside any wait is killed at
  the ceiling, and the message names the last wait it made.

usage: check_limits.py ITAPI_CERTIFY LIMIT_STANDIN BUILD_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

certify, standin, build = sys.argv[1], sys.argv[2], sys.argv[3]


def run(tmp, timeout, *filters):
    args = [certify, "-p", "emul", "--tests-dir", tmp, "--level", "itapi", "--timeout", str(timeout),
            "--wait-grace", "2", "--jobs", "1"]
    for f in filters:
        args += ["--filter", f]
    t0 = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - t0
    out = r.stdout + r.stderr
    print(out)
    return r.returncode, out, took


def line(out, test):
    m = re.search(r"^(PASS|FAIL)\s+%s \((\d+) ms\)(.*)$" % re.escape(test), out, re.M)
    assert m, f"no verdict line for {test}"
    return m.group(1), int(m.group(2)) / 1000.0, m.group(3)


with tempfile.TemporaryDirectory() as tmp:
    shutil.copy(standin, os.path.join(tmp, "conf-ia"))
    os.symlink(os.path.abspath(os.path.join(build, "conformance")), os.path.join(tmp, "conformance"))

    rc, out, took = run(tmp, 60, "/conformance/ia/limit-hang", "/conformance/ia/limit-child-hang",
                        "/conformance/ia/limit-steady", "/conformance/ia/limit-dead-child",
                        "/conformance/ia/limit-nested")
    assert rc == 1, f"expected exit 1 (the hangs fail), got {rc}"
    for test, what, whose in (("limit-hang", "a reply that never comes", "the test"),
                              ("limit-child-hang", "the child's reply that never comes",
                               "started by the test")):
        verdict, secs, msg = line(out, "/conformance/ia/" + test)
        assert verdict == "FAIL", f"{test} was not killed"
        assert 2.5 <= secs <= 15, f"{test} was killed after {secs} s, not about 1 s + 2 s of grace"
        assert f"waited for {what} (process " in msg and whose in msg, f"{test}: the wait is not named"
        assert "past its limit of 1.0 s and a grace of 2 s" in msg, f"{test}: no limit and grace"
    for test in ("limit-steady", "limit-dead-child", "limit-nested"):
        verdict, secs, msg = line(out, "/conformance/ia/" + test)
        assert verdict == "PASS", f"{test}, which made steady progress, was killed: {msg}"
        assert secs >= 2.9, f"{test} took {secs} s: it did not outlast one wait limit"
    assert took < 45, f"the run took {took:.0f} s: the ceiling, not the waits, ended the hangs"

    rc, out, took = run(tmp, 60, "/conformance/ia/limit-stuck-loop")
    verdict, secs, msg = line(out, "/conformance/ia/limit-stuck-loop")
    assert verdict == "FAIL" and 2.5 <= secs <= 15, f"a hang in a loop's wait: {verdict} after {secs} s"
    assert "waited for a loop of steps (process " in msg, "the loop's wait is not named"

    rc, out, took = run(tmp, 4, "/conformance/ia/limit-outside")
    verdict, secs, msg = line(out, "/conformance/ia/limit-outside")
    assert verdict == "FAIL" and 3.9 <= secs <= 15, f"a hang outside waits: {verdict} after {secs} s"
    assert "ran past the ceiling of 4 s (--timeout)" in msg, "the ceiling is not named"
    assert "its last (for a short step) ended" in msg, "the last wait is not named"
    print("tests are killed from their waits' limits, and at the ceiling outside them")
