#!/usr/bin/env python3
"""A copy of itapi-certify outside its build tree takes nothing from it.

Only the build tree's own binary takes its test programs from the build
tree and its rules and deviation files from the source tree; any other
copy, installed or staged under a DESTDIR, takes them from the install
prefix alone.  The check runs one test of emul's catalog with a JSON
report twice: with the build tree's binary, whose report names the
source tree's rules and deviation file, and with a copy of it in a
temporary folder, whose report names neither tree and gives no test
program the digest of the build tree's program of that name.

usage: check_installed_copy.py ITAPI_CERTIFY BUILD_DIR SOURCE_DIR
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

certify, build, source = (os.path.realpath(p) for p in sys.argv[1:4])


def digest(path):
    with open(path, "rb") as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()


def certified_with(program, tmp, name):
    """The provenance of PROGRAM's report on one test of emul's catalog."""
    report = os.path.join(tmp, name + ".json")
    env = dict(os.environ, LD_LIBRARY_PATH=build)
    env.pop("ITAPI_CERT_DIR", None)
    run = subprocess.run([program, "-p", "emul", "--level", "itapi", "--filter",
                          "/conformance/ia/interface-list", "--timeout", "30", "-q",
                          "--json", report], env=env, capture_output=True, text=True)
    out = (run.stdout + run.stderr).strip().splitlines()
    print(f"# {name}: exit {run.returncode}: {out[-1] if out else 'no output'}")
    # 1: the test programs are not installed here, which is a failed test.
    assert run.returncode in (0, 1), f"{name} exited {run.returncode}"
    with open(report) as f:
        return json.load(f)["certified_with"]


built = {}
for top, _, files in os.walk(os.path.join(build, "conformance")):
    for f in files:
        p = os.path.join(top, f)
        if os.access(p, os.X_OK):
            built[f] = digest(p)

with tempfile.TemporaryDirectory() as tmp:
    own = certified_with(certify, tmp, "build-tree")
    assert own["rules"].startswith(source + "/"), f"rules: {own['rules']}"
    assert (source + "/conformance/deviations/emul.txt") in own["deviation files"], \
        f"deviation files: {own['deviation files']}"

    copy = os.path.join(tmp, "bin", "itapi-certify")
    os.mkdir(os.path.dirname(copy))
    shutil.copy2(certify, copy)
    other = certified_with(copy, tmp, "copy")
    for item in ("rules", "deviation files"):
        for tree in (build, source):
            assert tree + "/" not in other[item], f"the copy's {item} are in {tree}: {other[item]}"
    programs = other["catalog programs"]
    for entry in programs.split(", ") if programs else []:
        name, d = entry.split(" ")
        assert built.get(name) != d, f"the copy ran the build tree's {name}"
    print("only the build tree's itapi-certify looks into the build and source trees")
