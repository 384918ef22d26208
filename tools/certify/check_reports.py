#!/usr/bin/env python3
"""itapi-certify --provider emul: every output format is written and agrees.

Runs a slice of the catalog at both levels over emul, then a slice of the
interop level alone, and checks the JSON
counts, the JUnit XML, the Markdown and HTML reports; then known deviations
of a broken module (normal and --strict), and a refused module.
"""
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
                         capture_output=True, text=True)
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

    # A module that is not a provider is refused with a reason and exit 2.
    run = subprocess.run([certify, "--provider-module", "/nonexistent.so"], capture_output=True, text=True)
    assert run.returncode == 2 and "refused" in run.stderr, run.stderr
print("reports OK")
