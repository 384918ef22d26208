#!/usr/bin/env python3
"""Measure how many seeded provider defects the certification catalog catches.

    tools/mutate/mutate.py [--defects FILE] [--only ID[,ID...]] [--work DIR]
                           [--configs NAME,...] [--timeout SEC] [--keep] [--first]
    tools/mutate/mutate.py --lab [--defects FILE] [--only ...] [--configs rxe0,siw0] ...

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

--lab measures vp/ib, the adapter to rdma-core, on the lab VM's devices
(rxe0, siw0; lab/run.sh): only the provider module changes between
defects, so the host builds the tree once and each defect's module
(WORK/mutants/ID.so), and one VM boot certifies the baseline and every
module on each device (lab/mutate-guest.sh), the devices side by side; a
further boot certifies the lone catches again (and under --first each
defect not caught yet on its next device), until every defect is decided.

Exit status: 0 when the run completed (whatever the rate), 2 when it could
not (a defect whose text is not found exactly once in its file, a build of
the unmodified tree that fails, a baseline that cannot be certified).
"""

import argparse
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# The configurations CI certifies (rows of conformance/matrix/meson.build): name ->
# (itapi-certify arguments, environment).  All are whole but emul-bounce, the
# cross-process area over emul's bounce ring, where a defect of that path shows.
# emul maps a peer's memfd region here, which the cross-process area waits
# for and requires when told (CONF_XPROC_PEER_MAPPED, as the matrix's rows).
EMUL_MAPS = {"CONF_XPROC_PEER_MAPPED": "1"}
CONFIGS = {
    "emul": (["-p", "emul"], dict(EMUL_MAPS)),
    "emul-iw0": (["-p", "emul", "-d", "emul-iw0"], dict(EMUL_MAPS)),
    "emul-bounce": (["-p", "emul", "--filter", "/conformance/xproc/"], dict(EMUL_MAPS, ITAPI_EMUL_CMA="0")),
    "iwarp": (["-p", "iwarp"], {}),
    "iwarp-placed": (["-p", "iwarp"], {"ITAPI_IWARP_COMPLETION": "placed"}),
    "iwarp-rfc7306": (["-p", "iwarp"], {"ITAPI_IWARP_RFC7306": "1"}),
}
# Which configurations a file's defect can show in: a provider's own
# configurations, or all of them for shared code.
# The --level every certification runs at, and the --filter texts.
LEVEL = ["all"]
FILTERS = []
CONFIGS_OF_DIR = {
    "vp/emul/": ["emul", "emul-iw0", "emul-bounce"],
    "vp/iwarp/": ["iwarp", "iwarp-placed", "iwarp-rfc7306"],
    "vp/ib/": ["rxe0", "siw0"],
}
# --lab: the lab VM's devices under vp/ib (lab/run.sh makes them), each
# certified with the module of the defect (lab/mutate-guest.sh).
LAB_CONFIGS = {
    "rxe0": (["-p", "ib", "-d", "rxe0"], {}),
    "siw0": (["-p", "ib", "-d", "siw0"], {}),
}


class Defect:
    def __init__(self, ident, title):
        self.id = ident
        self.title = title
        self.area = ""
        self.only = None  # the configurations its "configs:" line names
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
        if self.only is not None:
            # In the order its line names them (--first takes the first).
            return [c for c in self.only if c in names and c in chosen]
        return [c for c in chosen if c in names]


def parse_defects(path):
    """The defect file: blocks of

        ## ID title
        area: spec area
        configs: NAME,...   (optional: the only configurations it can show in)
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
            elif line.startswith("configs:"):
                cur.only = [c for c in line[8:].replace(",", " ").split() if c]
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


def build(bdir, target=None, jobs=None):
    """Build @bdir (or its @target alone), niced: the certifications that
    follow must not wait for a CPU."""
    r = run(["nice", "-n", "19", "ninja", "-C", bdir] + (["-j%d" % jobs] if jobs else []) +
            ([target] if target else []))
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
          ["--quiet", "--timeout", str(timeout), "--level", LEVEL[0], "--json", out] + \
          [x for f in FILTERS for x in ("--filter", f)] + list(extra)
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
    ap.add_argument("--defects", help="the defect file (default: tools/mutate/defects.txt; "
                                      "with --lab, defects-ib.txt)")
    ap.add_argument("--only", help="comma-separated defect ids to run")
    ap.add_argument("--work", help="scratch directory (default: /tmp/itapi-mutate; with --lab, "
                                   "/tmp/itapi-mutate-ib, which the VM shares)")
    ap.add_argument("--configs", help="configurations to certify (default: every host one; with "
                                      "--lab, rxe0,siw0)")
    ap.add_argument("--timeout", type=int,
                    help="seconds per test (itapi-certify; default 30, with --lab 120)")
    ap.add_argument("--level",
                    help="the catalog level to run (itapi-certify --level: rnicpi, itapi, interop, "
                         "all; default all, with --lab rnicpi)")
    ap.add_argument("--filter", action="append", default=[],
                    help="certify only the tests whose id contains this (itapi-certify --filter; "
                         "repeated: any of them): a quick check of new tests against defects")
    ap.add_argument("--jobs", type=int, help="ninja's -j (default: ninja's own)")
    ap.add_argument("--lab", action="store_true",
                    help="vp/ib's defects on the lab VM's devices (lab/run.sh, LAB_CACHE): the host "
                         "builds each defect's provider module, one VM boot certifies them all")
    ap.add_argument("--build-only", action="store_true",
                    help="with --lab: build the defects' modules, then stop (the lab may be busy)")
    ap.add_argument("--report", action="store_true",
                    help="with --lab: certify nothing, report what WORK holds (a run cut short)")
    ap.add_argument("--lab-serial", action="store_true",
                    help="with --lab: certify the devices one after the other, not side by side")
    ap.add_argument("--keep", action="store_true",
                    help="reuse WORK's copy, build and baseline (the copy is not refreshed)")
    ap.add_argument("--first", action="store_true",
                    help="stop certifying a defect at the first configuration that catches it "
                         "(the rate is the same; the per-test lists are shorter)")
    ap.add_argument("--check", action="store_true",
                    help="only check that every defect applies to this tree, then stop")
    a = ap.parse_args()

    a.keep = a.keep or a.report
    if a.lab:
        CONFIGS.clear()
        CONFIGS.update(LAB_CONFIGS)
    a.defects = a.defects or os.path.join(SRC, "tools", "mutate",
                                          "defects-ib.txt" if a.lab else "defects.txt")
    a.work = os.path.abspath(a.work or ("/tmp/itapi-mutate-ib" if a.lab else "/tmp/itapi-mutate"))
    a.timeout = a.timeout or (120 if a.lab else 30)
    LEVEL[0] = a.level or ("rnicpi" if a.lab else "all")
    FILTERS[:] = a.filter
    defects = parse_defects(a.defects)
    if a.only:
        want = set(a.only.split(","))
        defects = [d for d in defects if d.id in want]
    chosen = [c for c in (a.configs or ",".join(CONFIGS)).split(",") if c]
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
        # The lab certifies vp/ib alone: the DAT provider is not needed.
        r = run(["meson", "setup", bdir, src, "-Dwerror=false", "-Ddocs=disabled", "-Dfuzz=false"] +
                (["-Dib=enabled", "-Ddat=disabled"] if a.lab else ["-Dib=disabled"]))
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
    ok, log = build(bdir, jobs=a.jobs)
    if not ok:
        print(log[-4000:])
        print("mutate: the unmodified tree does not build")
        sys.exit(2)
    if a.lab:
        return lab_main(a, defects, chosen, src, bdir)

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
        entry = new_entry(d, chosen)
        ok, log = build(bdir, jobs=a.jobs)
        if not ok:
            restore(src, d, text)
            entry["error"] = "does not build: " + log.strip().splitlines()[-1][:200]
            results.append(entry)
            print_entry(entry)
            continue
        for c in entry["configs"]:
            res, log = certify(bdir, a.work, c, d.id, a.timeout)
            add_catches(entry, c, res, base[c])
            if res is None:
                continue
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
        print_entry(entry)
    # Put the tree back as it was for a later --keep run.
    build(bdir, jobs=a.jobs)
    summarize(results, a.work, t0)
    return 0


def new_entry(d, chosen):
    return {"id": d.id, "title": d.title, "area": d.area, "file": d.file, "caught_by": {},
            "configs": d.configs(chosen)}


# ---- --lab: vp/ib on the lab VM's devices ----------------------------------

LAB_MODULE = "vp/ib/libitapi-ib.so"


def lab_modules(a, defects, src, bdir):
    """Each defect's provider module, WORK/mutants/ID.so (under --keep, one
    built before is kept), and the unmodified one, baseline.so: {id: path}
    and {id: why it does not build}."""
    mdir = os.path.join(a.work, "mutants")
    os.makedirs(mdir, exist_ok=True)
    modules, errors = {}, {}
    for d in defects:
        so = os.path.join(mdir, d.id + ".so")
        if a.keep and os.path.exists(so):
            modules[d.id] = so
            continue
        text, err = apply(src, d)
        ok, log = build(bdir, LAB_MODULE, a.jobs)
        restore(src, d, text)
        if ok:
            shutil.copy2(os.path.join(bdir, LAB_MODULE), so)
            modules[d.id] = so
        else:
            errors[d.id] = "does not build: " + log.strip().splitlines()[-1][:200]
        print("mutate: module %-5s %s" % (d.id, "built" if ok else errors[d.id]), flush=True)
    ok, log = build(bdir, LAB_MODULE, a.jobs)
    if not ok:
        print(log[-4000:])
        sys.exit("mutate: the unmodified vp/ib does not build again")
    modules["baseline"] = os.path.join(mdir, "baseline.so")
    shutil.copy2(os.path.join(bdir, LAB_MODULE), modules["baseline"])
    return modules, errors


def lab_result(work, tag, config, tests=""):
    """A lab certification's outcome: (ran, {test id: test} or None when
    itapi-certify made no report).  ran is False when the VM never got to
    it, or certified another level or other tests (a run before, under
    --keep)."""
    base = os.path.join(work, "json", "%s-%s" % (tag, config))
    try:
        with open(base + ".status", encoding="utf-8") as f:
            status = f.read().split()
    except OSError:
        return False, None
    if status[1:] != [LEVEL[0], tests or "-"]:
        return False, None
    try:
        with open(base + ".json", encoding="utf-8") as f:
            return True, {t["id"]: t for t in json.load(f)["tests"]}
    except (OSError, ValueError):
        return True, None


def lab_certify(a, bdir, runs):
    """Certify @runs, [(tag, config, module, test id or "")], in one boot of
    the lab VM (lab/mutate-guest.sh); under --keep, one certified before at
    the same level is not certified again."""
    if a.keep:
        runs = [r for r in runs if not lab_result(a.work, r[0], r[1], r[3])[0]]
    if not runs or a.report:
        return
    jdir = os.path.join(a.work, "json")
    os.makedirs(jdir, exist_ok=True)
    for tag, config, _, _ in runs:
        for ext in (".json", ".status", ".log"):
            path = os.path.join(jdir, "%s-%s%s" % (tag, config, ext))
            if os.path.exists(path):
                os.unlink(path)
    plan = os.path.join(a.work, "lab-plan.txt")
    with open(plan, "w", encoding="utf-8") as f:
        for tag, config, module, test in runs:
            f.write("%s %s %s %s\n" % (tag, config, module, test or "-"))
    # A certification of the RNIC-PI level takes 2 to 4 minutes in the VM;
    # a defect that hangs tests, up to the guest's 1500 s for one.
    per = {}
    for r in runs:
        per[r[1]] = per.get(r[1], 0) + 1
    longest = sum(per.values()) if a.lab_serial else max(per.values())
    vm_t = 600 + 900 * longest
    lab = os.path.join(a.work, "src", "lab")
    cmd = [os.path.join(lab, "run.sh"), "-q", "-s", a.work, "-m", "4G", "-t", str(vm_t),
           "sh %s %s %s %s %s %d %d" % (os.path.join(lab, "mutate-guest.sh"), bdir, plan, jdir,
                                        LEVEL[0], a.timeout, 1 if a.lab_serial else 0)]
    # One lab VM at a time, as lab/ib-interop.sh: two emulated VMs starve
    # each other.
    cache = os.environ.get("LAB_CACHE", os.path.join(lab, "cache"))
    lock = open(os.path.join(cache, "interop.lock"), "a", encoding="utf-8")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("mutate: waiting for %s (another lab run)" % lock.name, flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
    print("mutate: %d certifications in the lab VM (%s)" % (
        len(runs), ", ".join("%s %d" % kv for kv in sorted(per.items()))), flush=True)
    rc = subprocess.run(cmd).returncode
    lock.close()
    if rc != 0:
        print("mutate: the lab VM ended with status %d; what it certified counts" % rc, flush=True)


def lab_main(a, defects, chosen, src, bdir):
    """Certify the defects' modules in rounds, one VM boot each: the
    baselines and each defect on its configurations (under --first, on the
    first one its "configs:" line names); then the lone catches once more,
    and under --first the next configuration of each defect not caught yet;
    and so on until every defect is decided."""
    t0 = time.time()
    modules, errors = lab_modules(a, defects, src, bdir)
    if a.build_only:
        print("mutate: %d modules in %s" % (len(modules), os.path.join(a.work, "mutants")))
        return 0
    tests = ",".join(FILTERS)
    results = []
    for d in defects:
        entry = new_entry(d, chosen)
        results.append(entry)
        if d.id in errors:
            entry["error"] = errors[d.id]
        entry["applies"] = entry["configs"]
        entry["configs"] = []  # those certified
        entry["todo"] = list(entry["applies"])
    base = {}
    for rnd in range(1, 100):
        runs = [("baseline", c, modules["baseline"], tests) for c in chosen] if rnd == 1 else []
        for entry in results:
            if "error" in entry or entry.get("done"):
                continue
            if "confirm" in entry:
                tid, cs = entry["confirm"]
                runs += [(entry["id"] + "-again", c, modules[entry["id"]], tid) for c in cs]
            elif entry["todo"]:
                take = entry["todo"][:1] if a.first else list(entry["todo"])
                runs += [(entry["id"], c, modules[entry["id"]], tests) for c in take]
            else:
                entry["done"] = True
        if not runs:
            break
        lab_certify(a, bdir, runs)
        if rnd == 1:
            for c in chosen:
                ran, res = lab_result(a.work, "baseline", c, tests)
                if res is None:
                    sys.exit("mutate: the baseline of %s was not certified (%s)" % (
                        c, "no report" if ran else "the VM did not get to it"))
                base[c] = res
                fails = sorted(i for i, t in res.items() if t["result"] == "fail")
                print("baseline %-13s %d tests, %d failing%s" % (c, len(res), len(fails),
                      (": " + ", ".join(fails)) if fails else ""), flush=True)
        for entry in results:
            if "error" in entry or entry.get("done"):
                continue
            if "confirm" in entry:
                tid, cs = entry.pop("confirm")
                again = [c for c in cs if (lab_result(a.work, entry["id"] + "-again", c, tid)[1]
                                           or {}).get(tid, {}).get("result") == "fail"]
                if again:
                    entry["caught_by"][tid]["configs"] = again
                    entry["done"] = True
                else:
                    entry.setdefault("flaky_seen", []).append(tid)
                    entry["caught_by"] = {}
                    entry["done"] = not a.first
                continue
            for c in (entry["todo"][:1] if a.first else list(entry["todo"])):
                ran, res = lab_result(a.work, entry["id"], c, tests)
                if not ran:
                    entry["error"] = "not certified on %s: the VM did not get to it" % c
                    break
                add_catches(entry, c, res, base[c])
                entry["configs"].append(c)
                entry["todo"].remove(c)
            if "error" in entry:
                continue
            caught = entry["caught_by"]
            if len(caught) == 1 and not next(iter(caught)).startswith("("):
                tid, e = next(iter(caught.items()))
                entry["confirm"] = (tid, list(e["configs"]))
            elif caught and a.first:
                entry["done"] = True
    for entry in results:
        if not entry["caught_by"] and entry.get("flaky_seen"):
            entry["flaky"] = entry["flaky_seen"][-1]
        print_entry(entry, per_config=True)
    summarize(results, a.work, t0, per_config=chosen)
    return 0


def add_catches(entry, config, res, base):
    """Count in @entry the tests of certification @res (None: itapi-certify
    made no report) that fail and did not fail in @base."""
    if res is None:
        entry["caught_by"].setdefault("(itapi-certify)", {"level": "all", "configs": []})
        entry["caught_by"]["(itapi-certify)"]["configs"].append(config)
        return
    for tid, t in res.items():
        b = base.get(tid)
        if t["result"] == "fail" and (b is None or b["result"] != "fail"):
            e = entry["caught_by"].setdefault(tid, {"level": t["level"], "configs": []})
            e["configs"].append(config)


def print_entry(entry, per_config=False):
    levels = {}
    for e in entry["caught_by"].values():
        levels[e["level"]] = levels.get(e["level"], 0) + 1
    if "error" in entry:
        print("%-5s INVALID  %s (%s)" % (entry["id"], entry["title"], entry["error"]), flush=True)
    elif entry["caught_by"]:
        names = sorted(entry["caught_by"])
        print("%-5s caught   %s\n      by %d test(s) (%s): %s%s" % (
            entry["id"], entry["title"], len(names),
            ", ".join("%s %d" % kv for kv in sorted(levels.items())),
            ", ".join(names[:6]), " ..." if len(names) > 6 else ""), flush=True)
        if per_config:
            rest = [c for c in entry.get("applies", []) if c not in entry["configs"]]
            print("      on %s%s" % (", ".join("%s by %d" % (c, sum(
                1 for e in entry["caught_by"].values() if c in e["configs"])) for c in entry["configs"]),
                "; not certified on %s (--first)" % ", ".join(rest) if rest else ""), flush=True)
    else:
        print("%-5s MISSED   %s%s" % (entry["id"], entry["title"],
              " (one failure, not repeated: %s)" % entry["flaky"] if "flaky" in entry else ""),
              flush=True)


def summarize(results, work, t0, per_config=None):
    """The tests that caught defects, the rates, the misses; and with
    @per_config (configuration names) each configuration's own rate over
    the defects certified there."""
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
        for c in per_config or ():
            on = [r for r in valid if c in r["configs"]]
            k = sum(1 for r in on if any(c in e["configs"] for e in r["caught_by"].values()))
            print("on %s: caught %d of the %d certified there (%.1f%%)%s" % (
                c, k, len(on), 100.0 * k / len(on) if on else 0.0,
                "; missed: " + " ".join(r["id"] for r in on if not any(
                    c in e["configs"] for e in r["caught_by"].values())) if k < len(on) else ""))
        missed = [r["id"] for r in valid if not r["caught_by"]]
        print("missed: %s" % (" ".join(missed) if missed else "none"))
    print("time: %.0f s" % (time.time() - t0))
    with open(os.path.join(work, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
