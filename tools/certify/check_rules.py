#!/usr/bin/env python3
"""conformance/rules.txt must name the rule of every test the catalog lists.

usage: check_rules.py ITAPI_CERTIFY [--rules FILE] [--provider NAME]...

Runs `ITAPI_CERTIFY -p NAME --list` for each provider (default: emul and
iwarp) and fails, naming them, when a listed test has no line in the rules
file, when a line has not exactly three TAB-separated fields or has an empty
one, when a test has two lines, or when a line names a test no provider lists
any more.  Lines out of order only draw a warning: the file is kept sorted by
test id, but an unsorted line still names its rule.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_RULES = os.path.join(HERE, "..", "..", "conformance", "rules.txt")


def listed_tests(certify, provider):
    """The test ids `itapi-certify -p PROVIDER --list` prints."""
    run = subprocess.run([certify, "--provider", provider, "--list"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{certify} -p {provider} --list exited {run.returncode}: {run.stderr.strip()}")
    ids = []
    for line in run.stdout.splitlines():
        # "<level>  <id>  <spec area>": the id is the one word starting with '/'.
        words = [w for w in line.split() if w.startswith("/")]
        if words:
            ids.append(words[0])
    if not ids:
        sys.exit(f"{certify} -p {provider} --list printed no test")
    return ids


def read_rules(path):
    """(rules by id, problems, ids in file order) of the rules file."""
    rules, problems, order = {}, [], []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            where = f"{os.path.basename(path)}:{n}"
            if len(fields) != 3:
                problems.append(f"{where}: {len(fields)} TAB-separated fields, want 3: {line[:80]!r}")
                continue
            if any(not x.strip() for x in fields):
                problems.append(f"{where}: an empty field: {line[:80]!r}")
                continue
            tid = fields[0]
            if tid in rules:
                problems.append(f"{where}: a second line for {tid}")
                continue
            rules[tid] = (fields[1], fields[2])
            order.append(tid)
    return rules, problems, order


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("certify", help="the itapi-certify program")
    ap.add_argument("--rules", default=DEFAULT_RULES, help="the rules file (default: conformance/rules.txt)")
    ap.add_argument("--provider", action="append", help="a provider whose list to check (repeatable)")
    args = ap.parse_args()
    providers = args.provider or ["emul", "iwarp"]

    listed = {}
    for prov in providers:
        for tid in listed_tests(args.certify, prov):
            listed.setdefault(tid, []).append(prov)
    rules, problems, order = read_rules(args.rules)

    missing = sorted(t for t in listed if t not in rules)
    stale = sorted(t for t in rules if t not in listed)
    for t in missing:
        problems.append(f"no rule for {t} (listed by {', '.join(listed[t])})")
    for t in stale:
        problems.append(f"a rule for {t}, which no provider lists ({', '.join(providers)})")
    unsorted = [(a, b) for a, b in zip(order, order[1:]) if b < a]
    if unsorted:
        a, b = unsorted[0]
        print(f"warning: {os.path.basename(args.rules)} is not sorted by test id: {b} comes after {a}")

    if problems:
        for p in problems:
            print(p)
        sys.exit(f"{len(problems)} problem(s) in {args.rules}")
    print(f"{len(rules)} rules, one for each of the {len(listed)} tests listed by {', '.join(providers)}")


if __name__ == "__main__":
    main()
