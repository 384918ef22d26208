#!/usr/bin/env python3
"""The man pages render with no warning, and say what the code does.

check_man.py SRCDIR PAGE... [--tool PAGE=PROGRAM]...

- groff -ww -man -z renders each page with no warning (skipped, exit 77,
  where groff is missing); mandoc -Tlint finds nothing, where installed;
- itapi(3) names every function of it_api.h, itx.h and itx_glib.h;
- every ITAPI_* variable the library, the providers and the tools read is
  named on some page;
- a tool's page documents only options its --help shows, and shows every
  long option --help has.
"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

errors = []


def fail(msg):
    errors.append(msg)
    print("FAIL: " + msg)


def render(pages):
    groff = shutil.which("groff")
    if groff is None:
        print("SKIP: no groff (apt-get install groff-base)")
        sys.exit(77)
    for p in pages:
        r = subprocess.run([groff, "-ww", "-man", "-Tutf8", "-z", str(p)],
                           capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            fail(f"groff -ww on {p.name}: {r.stderr.strip() or 'exit %d' % r.returncode}")
    mandoc = shutil.which("mandoc")
    if mandoc is None:
        print("# mandoc not installed: -Tlint not run")
        return
    for p in pages:
        r = subprocess.run([mandoc, "-Tlint", str(p)], capture_output=True, text=True)
        out = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or out:
            fail(f"mandoc -Tlint on {p.name}: {out or 'exit %d' % r.returncode}")


def plain(text):
    """The page's words with roff's escapes for '-' and font changes gone."""
    return re.sub(r"\\f[BIRP]", "", text).replace("\\-", "-")


def calls_listed(src, pages):
    page = next((p for p in pages if p.name == "itapi.3"), None)
    if page is None:
        fail("no itapi.3 among the pages")
        return
    text = plain(page.read_text())
    for header, prefix in (("itapi/include/it_api.h", "it_"), ("itapi/include/itx.h", "itx_"),
                           ("itapi/include/itx_glib.h", "itx_")):
        decl = re.compile(r"^[A-Za-z_][\w \*]*?\b(" + prefix + r"\w+)\s*\(", re.M)
        for name in sorted(set(decl.findall((src / header).read_text()))):
            if not re.search(r"\b" + name + r"\b", text):
                fail(f"itapi.3 does not list {name}() of {header}")


def variables_documented(src, pages):
    text = "\n".join(plain(p.read_text()) for p in pages)
    seen = {}
    dirs = ["rnicpi", "kal", "ual", "itapi", "tools", "vp/emul", "vp/iwarp", "vp/ib", "dat"]
    for d in dirs:
        for f in sorted((src / d).glob("*.[ch]")) + sorted((src / d).glob("*/*.[ch]")):
            if "/tests/" in str(f) or "/fuzz/" in str(f) or "/bench/" in str(f):
                continue
            for v in re.findall(r'"(ITAPI_[A-Z0-9_]+)"', f.read_text(errors="replace")):
                seen.setdefault(v, f.relative_to(src))
    for v, f in sorted(seen.items()):
        if not re.search(r"\b" + v + r"\b", text):
            fail(f"{v} (read in {f}) is on no man page")


def options_true(page, program):
    r = subprocess.run([program, "--help"], capture_output=True, text=True)
    if r.returncode != 0:  # getopt() without long options: -h
        r = subprocess.run([program, "-h"], capture_output=True, text=True)
    helptext = r.stdout + r.stderr
    helplong = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", helptext))
    helpshort = set(re.findall(r"(?<![\w-])-[A-Za-z](?![\w-])", helptext))
    helpshort |= {"-" + c for c in "".join(re.findall(r"\[-([A-Za-z]{2,})\]", helptext))}
    if subprocess.run([program, "-h"], capture_output=True).returncode == 0:
        helpshort.add("-h")  # what printed the usage is an option too
    text = page.read_text()
    m = re.search(r"^\.SH OPTIONS\n(.*?)^\.SH ", text, re.M | re.S)
    if m is None:
        fail(f"{page.name} has no OPTIONS section")
        return
    tags = plain("\n".join(re.findall(r"^\.TP\n(.*)$", m.group(1), re.M)))
    pagelong = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", plain(text)))
    pageshort = set(re.findall(r"(?<![\w-])-[A-Za-z](?![\w-])", tags))
    for o in sorted(pagelong - helplong):
        fail(f"{page.name} documents {o}, which {program} --help does not show")
    for o in sorted(pageshort - helpshort):
        fail(f"{page.name} documents {o}, which {program} --help does not show")
    for o in sorted(helplong - pagelong - {"--help-all", "--help-gapplication"}):
        fail(f"{program} --help shows {o}, which {page.name} does not document")


def main():
    src = Path(sys.argv[1])
    pages, tools = [], []
    args = iter(sys.argv[2:])
    for a in args:
        if a == "--tool":
            name, program = next(args).split("=", 1)
            tools.append((name, program))
        else:
            pages.append(Path(a))
    render(pages)
    calls_listed(src, pages)
    variables_documented(src, pages)
    byname = {p.name: p for p in pages}
    for name, program in tools:
        options_true(byname[name], program)
    print(f"{len(pages)} pages, {len(tools)} tools checked: {len(errors)} problems")
    sys.exit(1 if errors else 0)


main()
