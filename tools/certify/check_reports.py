#!/usr/bin/env python3
"""itapi-certify --provider emul: every output format is written and agrees.

Runs a slice of the catalog at both levels over emul, then a slice of the
interop level alone, and checks the JSON
counts, the JUnit XML, the Markdown and HTML reports and what each names
it certified with (digests of the catalog, module and deviation files, the
environment); then known deviations of a broken module (normal and
--strict), --compare between two of its reports, --repeat over a catalog
with a test whose verdict changes, and a refused module.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

certify, broken = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:
    out = {k: os.path.join(tmp, "r." + k) for k in ("json", "xml", "md", "html")}
    run = subprocess.run([certify, "--provider", "emul", "--filter", "/cm/",
                          "--exclude", "/conformance/cm/three-way", "--exclude", "/rnicpi/cm/reject",
                          "--json", out["json"], "--junit", out["xml"],
                          "--markdown", out["md"], "--html", out["html"]],
                         capture_output=True, text=True,
                         env=dict(os.environ, ITAPI_EMUL_TIMEOUT_MS="12345"))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    doc = json.load(open(out["json"]))
    s = doc["summary"]
    assert s["total"] == len(doc["tests"]) > 10, s
    assert s["fail"] == 0 and s["pass"] + s["skipped"] + s["deviation"] == s["total"], s
    assert {t["level"] for t in doc["tests"]} == {"RNIC-PI", "IT-API"}, "both levels ran"
    assert all(t["summary"] for t in doc["tests"] if t["result"] == "pass"), "summaries"
    assert doc["provider"]["name"] == "emul" and doc["provider"]["capabilities"]
    # --exclude leaves out what it names, and the reports say how the run
    # narrowed the catalog.
    ids = [t["id"] for t in doc["tests"]]
    assert all("/cm/" in i for i in ids), ids
    assert not any("/conformance/cm/three-way" in i or "/rnicpi/cm/reject" in i for i in ids), ids
    scope = "--filter /cm/, --exclude /conformance/cm/three-way, /rnicpi/cm/reject"
    assert doc["catalog"] == scope, doc["catalog"]
    suites = ET.parse(out["xml"]).getroot()
    assert int(suites.get("tests")) == s["total"]
    md = open(out["md"]).read()
    assert "# RNIC-PI certification report: emul" in md and "PASSED" in md
    assert "IT-API 2.5 connection management" in md
    assert "| catalog | %s |" % scope in md, md[:1000]
    html = open(out["html"]).read()
    assert html.startswith("<!DOCTYPE html>") and "PASSED" in html

    # What the report certified with: each file by its SHA-256, so that two
    # reports can be told apart and a run repeated.
    def sha(path):
        return "sha256:" + hashlib.sha256(open(path, "rb").read()).hexdigest()
    cw = doc["certified_with"]
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(certify))))
    assert "--filter /cm/" in cw["command"] and "--exclude /rnicpi/cm/reject" in cw["command"], cw
    progs = dict(p.split(" ") for p in cw["catalog programs"].split(", "))
    assert progs["cert-rnicpi"] == sha(os.path.join(build, "conformance", "rnicpi", "cert-rnicpi")), cw
    assert progs["conf-cm"] == sha(os.path.join(build, "conformance", "conf-cm")), cw
    assert cw["catalog digest"].startswith("sha256:") and "(17 programs)" in cw["catalog digest"], cw
    lib = os.path.realpath(os.path.join(build, "libitapi.so.0"))
    assert cw["provider module"] == "built-in: %s (%s)" % (lib, sha(lib)), cw
    devs = cw["deviation files"]
    assert devs.endswith("emul.txt (%s)" % sha(devs.split(" ")[0])), devs
    assert cw["kernel"].startswith("Linux ") and cw["rdma-core"], cw
    assert doc["environment"].get("ITAPI_EMUL_TIMEOUT_MS") == "12345", doc["environment"]
    assert "ITAPI_EMUL_TIMEOUT_MS=12345" in cw["environment"], cw
    assert "ITAPI_PROVIDER" not in doc["environment"], "set by itapi-certify itself"
    assert "## Certified with" in md and "| catalog digest | sha256:" in md, md[:3000]
    assert "<h2>Certified with</h2>" in html and sha(lib) in html
    assert doc["repeat"] == 1 and all(len(t["runs"]) == 1 for t in doc["tests"]), doc["repeat"]

    # The interop level, alone: its own level and areas in every format, and
    # on emul0 (no iWARP wire) skips that name the capability.
    run = subprocess.run([certify, "--provider", "emul", "--level", "interop",
                          "--filter", "/interop/golden/mpa-re",
                          "--json", out["json"], "--junit", out["xml"],
                          "--markdown", out["md"], "--html", out["html"]],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    assert "Interop level: " in run.stdout, run.stdout
    doc = json.load(open(out["json"]))
    assert {t["level"] for t in doc["tests"]} == {"Interop"}, "only the interop level ran"
    assert doc["catalog"] == "level interop, --filter /interop/golden/mpa-re", doc["catalog"]
    assert len(doc["tests"]) >= 3 and all(t["result"] == "skipped" and "iwarp-tcp-wire" in t["needs"]
                                          for t in doc["tests"]), doc["tests"]
    assert any(l.startswith("Interop level: ") for l in doc["levels"]), doc["levels"]
    assert {c.get("classname") for c in ET.parse(out["xml"]).getroot().iter("testcase")} == {"Interop"}
    for k in ("md", "html"):
        text = open(out[k]).read()
        assert "Interop level: " in text and "Interop: known answers from golden frames" in text, k

    # A listed deviation turns a failure into a known deviation; --strict undoes it.
    dev = os.path.join(tmp, "dev.txt")
    with open(dev, "w") as f:
        f.write("# the broken module's known faults\n"
                "/conformance/neg/rdma-write/past-end registers one page too many (test module)\n"
                "/conformance/neg/rdma-write/straddle-end same fault\n")
    base = [certify, "--provider-module", broken, "--level", "itapi", "--filter", "rdma-write/",
            "--deviations", dev, "--json", out["json"]]
    run = subprocess.run(base, capture_output=True, text=True)
    doc = json.load(open(out["json"]))
    assert run.returncode == 0, run.stdout[-2000:]
    assert doc["summary"]["deviation"] == 2 and doc["summary"]["fail"] == 0, doc["summary"]
    t = next(t for t in doc["tests"] if t["id"].endswith("past-end"))
    assert t["result"] == "deviation" and "one page too many" in t["message"], t
    run = subprocess.run(base + ["--strict"], capture_output=True, text=True)
    doc = json.load(open(out["json"]))
    assert run.returncode == 1 and doc["summary"]["fail"] == 2, doc["summary"]

    # Each failure names the rule it broke, where it is written and its
    # sentence, in every format (the rules file may be given).
    rules = os.path.join(tmp, "rules.txt")
    rule = "A Write past the region's end is refused and writes nothing."
    with open(rules, "w") as f:
        f.write("# test rules\n/conformance/neg/rdma-write/past-end\tIT-API 2.1 it_post_rdma_write\t%s\n" % rule)
    run = subprocess.run(base + ["--strict", "--rules", rules, "--junit", out["xml"], "--markdown",
                                 out["md"], "--html", out["html"], "--tap"], capture_output=True, text=True)
    want = "IT-API 2.1 it_post_rdma_write: " + rule
    assert "# rule broken: " + want in run.stdout, run.stdout[-2000:]
    assert "rule broken: " + want in run.stderr, run.stderr[-2000:]
    doc = json.load(open(out["json"]))
    t = next(t for t in doc["tests"] if t["id"].endswith("past-end"))
    assert t["rule"] == {"where": "IT-API 2.1 it_post_rdma_write", "text": rule}, t
    md = open(out["md"]).read()
    assert "**Rule broken** (IT-API 2.1 it_post_rdma_write): " + rule in md, md[-2000:]
    fails = [tc for tc in ET.parse(out["xml"]).getroot().iter("testcase") if tc.find("failure") is not None]
    assert len(fails) == 2 and any(want in (tc.find("failure").text or "") for tc in fails)
    assert "<b>Rule broken</b>: " + want.replace("'", "&apos;") in open(out["html"]).read()
    # A test the file does not name falls back to its area and summary, and says so.
    other = next(t for t in doc["tests"] if t["id"].endswith("straddle-end"))
    assert other["rule"]["text"] is None
    assert "no rule listed for this test" in md

    # --compare: the same module with and without its deviation file.
    # Without it the two faults are new failures (exit 1) and the
    # deviation files differ; the other way they are deviations again.
    with_dev, without = os.path.join(tmp, "with.json"), os.path.join(tmp, "without.json")
    empty = os.path.join(tmp, "none.txt")
    open(empty, "w").close()
    for dfile, rep in ((dev, with_dev), (empty, without)):
        subprocess.run([certify, "--provider-module", broken, "--level", "itapi", "--filter",
                        "rdma-write/", "--deviations", dfile, "--json", rep], capture_output=True, text=True)
    run = subprocess.run([certify, "--compare", with_dev, without], capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    o = run.stdout
    assert "new failures (2):" in o and "/conformance/neg/rdma-write/past-end: was deviation" in o, o
    assert "deviation files:" in o and empty in o and "provider module:" not in o, o
    assert o.rstrip().endswith("2 new failures, 0 fixed, 0 deviations changed, 0 other changes, "
                               "0 tests added, 0 removed; 1 of what they certified with changed"), o
    run = subprocess.run([certify, "--compare", without, with_dev], capture_output=True, text=True)
    assert run.returncode == 0 and "known deviations changed (2):" in run.stdout, run.stdout
    # Tests added and removed: a narrower slice of the catalog against it.
    part = os.path.join(tmp, "part.json")
    subprocess.run([certify, "--provider-module", broken, "--level", "itapi", "--filter",
                    "rdma-write/past-end", "--deviations", dev, "--json", part], capture_output=True, text=True)
    n = len(json.load(open(with_dev))["tests"]) - len(json.load(open(part))["tests"])
    assert n > 0, n
    run = subprocess.run([certify, "--compare", part, with_dev], capture_output=True, text=True)
    assert run.returncode == 0 and "tests added (%d):" % n in run.stdout, run.stdout
    run = subprocess.run([certify, "--compare", with_dev, part], capture_output=True, text=True)
    assert run.returncode == 0 and "tests removed (%d):" % n in run.stdout, run.stdout
    for bad in (empty, "/nonexistent.json"):
        run = subprocess.run([certify, "--compare", bad, with_dev], capture_output=True, text=True)
        assert run.returncode == 2 and bad in run.stderr, run.stderr

    # --repeat: a catalog (a stand-in cert-rnicpi) with a test that fails
    # every second run and one that always passes.  The first fails, naming
    # its runs; the report keeps each test's verdicts.
    fake = os.path.join(tmp, "fake")
    os.mkdir(fake)
    prog = os.path.join(fake, "cert-rnicpi")
    with open(prog, "w") as f:
        f.write("""#!/usr/bin/env python3
import os, sys
if "-l" in sys.argv:
    print("/rnicpi/fake/steady")
    print("/rnicpi/fake/flaky")
    sys.exit(0)
tid = sys.argv[sys.argv.index("-p") + 1]
if tid.endswith("flaky"):
    # Only this test keeps state: the two may run at once (--jobs).
    state = os.path.join(os.path.dirname(sys.argv[0]), "runs")
    n = int(open(state).read()) if os.path.exists(state) else 0
    open(state + ".new", "w").write(str(n + 1))
    os.rename(state + ".new", state)
    if n % 2 == 1:
        print("not ok 1 %s" % tid)
        print("# ERROR: it fails every second run")
        sys.exit(1)
print("ok 1 %s" % tid)
""")
    os.chmod(prog, 0o755)
    run = subprocess.run([certify, "--provider", "emul", "--tests-dir", fake, "--level", "rnicpi",
                          "--repeat", "3", "--json", out["json"], "--tap"], capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith("1..6\n"), run.stdout
    assert "PFP /rnicpi/fake/flaky" in run.stderr and "1 of 2 tests changed verdict over 3 runs" in run.stderr, run.stderr
    doc = json.load(open(out["json"]))
    t = {t["id"]: t for t in doc["tests"]}
    assert doc["repeat"] == 3 and t["/rnicpi/fake/steady"]["runs"] == "PPP", doc
    assert t["/rnicpi/fake/flaky"]["runs"] == "PFP" and t["/rnicpi/fake/flaky"]["result"] == "fail", t
    assert "verdict changed over 3 runs (PFP" in t["/rnicpi/fake/flaky"]["message"], t
    assert "fails every second run" in t["/rnicpi/fake/flaky"]["message"], t
    assert doc["summary"]["fail"] == 1 and doc["summary"]["pass"] == 1, doc["summary"]
    run = subprocess.run([certify, "--provider", "emul", "--repeat", "0"], capture_output=True, text=True)
    assert run.returncode == 2 and "--repeat" in run.stderr, run.stderr

    # A module that is not a provider is refused with a reason and exit 2.
    run = subprocess.run([certify, "--provider-module", "/nonexistent.so"], capture_output=True, text=True)
    assert run.returncode == 2 and "refused" in run.stderr, run.stderr
print("reports OK")
