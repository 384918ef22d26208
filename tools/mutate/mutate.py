#!/usr/bin/env python3
"""Measure how many seeded provider defects the certification catalog catches.

    tools/mutate/mutate.py [--defects FILE] [--only ID[,ID...]] [--work DIR]
                           [--configs NAME,...] [--timeout SEC] [--keep] [--first]

Each defect is a realistic one-line slip (a dropped check, a wrong
comparison, an off-by-one) written as an exact text replacement in one
source file of a provider.  The script copies the source tree into a
scratch directory, builds it once, certifies every configuration CI
certifies to get the baseline, and then, one defect at a time, applies the
replacement, rebuilds, certifies the configurations that use the file, and
puts the file back.  A test CATCHES a defect when it fails with the defect
in and did not fail in the baseline; a test that catches it alone is run a
second time, so that one flaky failure is not counted as a catch.

The output names, for each defect, the tests that caught it and their
levels; for each test, the defects it caught; and the catch rate of the
whole catalog and of each level alone.  The results are also written as
JSON to WORK/results.json.  doc/certification.md ("Measuring the catalog")
explains the defect file format and how to read the figures.

Exit status: 0 when the run completed (whatever the rate), 2 when it could
not (a defect whose text is not found exactly once in its file, a build of
the unmodified tree that fails, a baseline that cannot be certified).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# The configurations CI certifies whole (rows of conformance/matrix/meson.build): name ->
# (itapi-certify arguments, environment).
CONFIGS = {
    "emul": (["-p", "emul"], {}),
    "emul-iw0": (["-p", "emul", "-d", "emul-iw0"], {}),
    "iwarp": (["-p", "iwarp"], {}),
    "iwarp-placed": (["-p", "iwarp"], {"ITAPI_IWARP_COMPLETION": "placed"}),
    "iwarp-rfc7306": (["-p", "iwarp"], {"ITAPI_IWARP_RFC7306": "1"}),
}
# Which configurations a file's defect can show in: a provider's own
# configurations, or all of them for shared code.
# The --level every certification runs at.
LEVEL = ["all"]
CONFIGS_OF_DIR = {
    "vp/emul/": ["emul", "emul-iw0"],
    "vp/iwarp/": ["iwarp", "iwarp-placed", "iwarp-rfc7306"],
}


class Defect:
    def __init__(self, ident, title):
        self.id = ident
        self.title = title
        self.area = ""
        self.hunks = []  # [file, old lines, new lines]

    @property
    def file(self):
        return ", ".join(sorted(set(h[0] for h in self.hunks)))

    def configs(self, chosen):
        names = set()
        for h in self.hunks:
            for prefix, own in CONFIGS_OF_DIR.items():
                if h[0].startswith(prefix):
                    names.update(own)
                    break
            else:
                names.update(chosen)
        return [c for c in chosen if c in names]


def parse_defects(path):
    """The defect file: blocks of

        ## ID title
        area: spec area
        file: path/from/the/source/root.c
        - the exact old line(s), each after "- "
        + the new line(s), each after "+ " (none: the old lines go)

    with '#' comment lines and blank lines between blocks.  A defect that
    must change two places (both ends of a wire format) repeats the
    'file:' line, each followed by its own '-' and '+' lines."""
    defects = []
    cur = None
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            where = "%s:%d" % (path, n)
            if line.startswith("## "):
                parts = line[3:].split(None, 1)
                cur = Defect(parts[0], parts[1] if len(parts) > 1 else "")
                defects.append(cur)
            elif line.startswith("#") or not line.strip():
                continue
            elif cur is None:
                sys.exit("%s: a line before the first '## ID title' header" % where)
            elif line.startswith("area:"):
                cur.area = line[5:].strip()
            elif line.startswith("file:"):
                cur.hunks.append([line[5:].strip(), [], []])
            elif (line.startswith("- ") or line == "-") and cur.hunks:
                cur.hunks[-1][1].append(line[2:])
            elif (line.startswith("+ ") or line == "+") and cur.hunks:
                cur.hunks[-1][2].append(line[2:])
            else:
                sys.exit("%s: expected 'area:', 'file:', '- old' or '+ new': %r" % (where, line))
    seen = set()
    for d in defects:
        if not d.hunks or any(not h[1] for h in d.hunks):
            sys.exit("%s: defect %s needs a 'file:' and at least one '- old' line after it" % (path, d.id))
        if d.id in seen:
            sys.exit("%s: defect id %s is used twice" % (path, d.id))
        seen.add(d.id)
    return defects


def copy_tree(src, dst):
    """Copy the files git knows (tracked and untracked, not ignored)."""
    out = subprocess.run(["git", "-C", src, "ls-files", "-co", "--exclude-standard", "-z"],
                         check=True, capture_output=True).stdout.decode()
    os.makedirs(dst, exist_ok=True)
    for rel in filter(None, out.split("\0")):
        s = os.path.join(src, rel)
        if not os.path.isfile(s):
            continue  # deleted in the work tree
        d = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy2(s, d)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def build(bdir):
    r = run(["ninja", "-C", bdir])
    return r.returncode == 0, r.stdout


def certify(bdir, work, config, tag, timeout, extra=()):
    args, env_add = CONFIGS[config]
    out = os.path.join(work, "json", "%s-%s.json" % (tag, config))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ)
    env.update(env_add)
    cmd = [os.path.join(bdir, "tools", "certify", "itapi-certify")] + args + \
          ["--quiet", "--timeout", str(timeout), "--level", LEVEL[0], "--json", out] + list(extra)
    r = run(cmd, env=env)
    if not os.path.exists(out):
        return None, r.stdout
    with open(out, encoding="utf-8") as f:
        rep = json.load(f)
    return {t["id"]: t for t in rep["tests"]}, r.stdout


def apply(src_root, d):
    """Apply @d's hunks; returns ({file: its text before}, None) or
    (None, why not) with nothing changed."""
    saved = {}
    for rel, old_lines, new_lines in d.hunks:
        path = os.path.join(src_root, rel)
        if rel not in saved:
            with open(path, encoding="utf-8") as f:
                saved[rel] = f.read()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        old = "\n".join(old_lines)
        hits = text.count(old)
        if hits != 1:
            restore(src_root, d, saved)
            return None, "its old text occurs %d times in %s (it must occur once)" % (hits, rel)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, "\n".join(new_lines), 1))
    return saved, None


def restore(src_root, d, saved):
    for rel, text in saved.items():
        with open(os.path.join(src_root, rel), "w", encoding="utf-8") as f:
            f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--defects", default=os.path.join(SRC, "tools", "mutate", "defects.txt"))
    ap.add_argument("--only", help="comma-separated defect ids to run")
    ap.add_argument("--work", default="/tmp/itapi-mutate", help="scratch directory")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="configurations to certify")
    ap.add_argument("--timeout", type=int, default=30, help="seconds per test (itapi-certify)")
    ap.add_argument("--level", default="all",
                    help="the catalog level to run (itapi-certify --level: rnicpi, itapi, interop, all)")
    ap.add_argument("--keep", action="store_true",
                    help="reuse WORK's copy, build and baseline (the copy is not refreshed)")
    ap.add_argument("--first", action="store_true",
                    help="stop certifying a defect at the first configuration that catches it "
                         "(the rate is the same; the per-test lists are shorter)")
    ap.add_argument("--check", action="store_true",
                    help="only check that every defect applies to this tree, then stop")
    a = ap.parse_args()

    LEVEL[0] = a.level
    defects = parse_defects(a.defects)
    if a.only:
        want = set(a.only.split(","))
        defects = [d for d in defects if d.id in want]
    chosen = [c for c in a.configs.split(",") if c]
    for c in chosen:
        if c not in CONFIGS:
            sys.exit("mutate: unknown configuration %r (known: %s)" % (c, ", ".join(CONFIGS)))

    if a.check:
        bad = 0
        for d in defects:
            texts = {}
            for rel, old_lines, new_lines in d.hunks:
                if rel not in texts:
                    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
                        texts[rel] = f.read()
                old = "\n".join(old_lines)
                hits = texts[rel].count(old)
                if hits != 1:
                    print("mutate: defect %s: its old text occurs %d times in %s" % (d.id, hits, rel))
                    bad += 1
                    break
                texts[rel] = texts[rel].replace(old, "\n".join(new_lines), 1)
        print("mutate: %d defects, %d that do not apply" % (len(defects), bad))
        return 2 if bad else 0

    src = os.path.join(a.work, "src")
    bdir = os.path.join(a.work, "build")
    if not a.keep or not os.path.isdir(bdir):
        shutil.rmtree(a.work, ignore_errors=True)
        print("mutate: copying %s to %s" % (SRC, src), flush=True)
        copy_tree(SRC, src)
        r = run(["meson", "setup", bdir, src, "-Dwerror=false", "-Ddocs=disabled", "-Dib=disabled",
                 "-Dfuzz=false"])
        if r.returncode != 0:
            print(r.stdout)
            sys.exit(2)
    # Every defect's text must be found before anything runs for long.
    for d in defects:
        text, err = apply(src, d)
        if err:
            print("mutate: defect %s: %s" % (d.id, err))
            sys.exit(2)
        restore(src, d, text)
    ok, log = build(bdir)
    if not ok:
        print(log[-4000:])
        print("mutate: the unmodified tree does not build")
        sys.exit(2)

    t0 = time.time()
    base = {}
    for c in chosen:
        # Under --keep the copy is the one the last baseline certified.
        stamp = os.path.join(a.work, "json", "baseline-%s.level" % c)
        cached = os.path.join(a.work, "json", "baseline-%s.json" % c)
        if a.keep and os.path.exists(cached) and os.path.exists(stamp) and \
                open(stamp, encoding="utf-8").read() == LEVEL[0]:
            with open(cached, encoding="utf-8") as f:
                base[c] = {t["id"]: t for t in json.load(f)["tests"]}
            print("baseline %-13s reused from %s" % (c, cached), flush=True)
            continue
        res, log = certify(bdir, a.work, c, "baseline", a.timeout)
        if res is None:
            print(log[-4000:])
            print("mutate: the baseline of %s could not be certified" % c)
            sys.exit(2)
        base[c] = res
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(LEVEL[0])
        fails = sorted(i for i, t in res.items() if t["result"] == "fail")
        print("baseline %-13s %d tests, %d failing%s" % (c, len(res), len(fails),
              (": " + ", ".join(fails)) if fails else ""), flush=True)

    results = []
    for d in defects:
        text, err = apply(src, d)
        entry = {"id": d.id, "title": d.title, "area": d.area, "file": d.file, "caught_by": {},
                 "configs": d.configs(chosen)}
        ok, log = build(bdir)
        if not ok:
            restore(src, d, text)
            entry["error"] = "does not build: " + log.strip().splitlines()[-1][:200]
            results.append(entry)
            print("%-5s INVALID  %s (%s)" % (d.id, d.title, entry["error"]), flush=True)
            continue
        for c in entry["configs"]:
            res, log = certify(bdir, a.work, c, d.id, a.timeout)
            if res is None:
                entry["caught_by"].setdefault("(itapi-certify)", {"level": "all", "configs": []})
                entry["caught_by"]["(itapi-certify)"]["configs"].append(c)
                continue
            for tid, t in res.items():
                b = base[c].get(tid)
                if t["result"] == "fail" and (b is None or b["result"] != "fail"):
                    e = entry["caught_by"].setdefault(tid, {"level": t["level"], "configs": []})
                    e["configs"].append(c)
            if a.first and entry["caught_by"]:
                # A lone catch stops the defect only once it repeats; else
                # the next configuration may catch it for sure.
                if len(entry["caught_by"]) > 1:
                    break
                tid = next(iter(entry["caught_by"]))
                res, _ = certify(bdir, a.work, c, d.id + "-again", a.timeout, ["--filter", tid])
                if tid.startswith("(") or (res is not None and res.get(tid, {}).get("result") == "fail"):
                    entry["confirmed"] = True
                    break
                entry.setdefault("flaky_seen", []).append(tid)
                entry["caught_by"] = {}
        # A lone catch is confirmed by a second run of that test.
        if len(entry["caught_by"]) == 1 and not entry.pop("confirmed", False):
            tid, e = next(iter(entry["caught_by"].items()))
            if not tid.startswith("("):
                again = []
                for c in e["configs"]:
                    res, _ = certify(bdir, a.work, c, d.id + "-again", a.timeout, ["--filter", tid])
                    if res is not None and res.get(tid, {}).get("result") == "fail":
                        again.append(c)
                if again:
                    e["configs"] = again
                else:
                    entry["flaky"] = tid
                    entry["caught_by"] = {}
        restore(src, d, text)
        results.append(entry)
        levels = {}
        for e in entry["caught_by"].values():
            levels[e["level"]] = levels.get(e["level"], 0) + 1
        if entry["caught_by"]:
            names = sorted(entry["caught_by"])
            print("%-5s caught   %s\n      by %d test(s) (%s): %s%s" % (
                d.id, d.title, len(names), ", ".join("%s %d" % kv for kv in sorted(levels.items())),
                ", ".join(names[:6]), " ..." if len(names) > 6 else ""), flush=True)
        else:
            print("%-5s MISSED   %s%s" % (d.id, d.title,
                  " (one failure, not repeated: %s)" % entry["flaky"] if "flaky" in entry else ""),
                  flush=True)
    # Put the tree back as it was for a later --keep run.
    build(bdir)

    valid = [r for r in results if "error" not in r]
    by_test = {}
    for r in valid:
        for tid in r["caught_by"]:
            by_test.setdefault(tid, []).append(r["id"])
    print("\nTests that caught defects:")
    for tid in sorted(by_test):
        print("  %-60s %s" % (tid, " ".join(by_test[tid])))
    n = len(valid)
    caught = [r for r in valid if r["caught_by"]]
    print("\ndefects: %d valid, %d that did not build" % (n, len(results) - n))
    if n:
        print("catalog (all levels): caught %d of %d (%.1f%%)" % (len(caught), n, 100.0 * len(caught) / n))
        for lvl in ("RNIC-PI", "IT-API", "Interop"):
            k = sum(1 for r in valid if any(e["level"] == lvl for e in r["caught_by"].values()))
            print("%s level alone: caught %d of %d (%.1f%%)" % (lvl, k, n, 100.0 * k / n))
        missed = [r["id"] for r in valid if not r["caught_by"]]
        print("missed: %s" % (" ".join(missed) if missed else "none"))
    print("time: %.0f s" % (time.time() - t0))
    with open(os.path.join(a.work, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
