#!/usr/bin/env python3
"""libitapi's exported symbols against itapi/itapi.map.

  check_abi.py exports MAP LIBITAPI
      Fails when the library exports a name the map does not list (an
      internal leaked), when a listed name is not exported, or when a name
      is exported under another version node than the map's.
  check_abi.py imports MAP LIBITAPI MODULE...
      Fails when a provider module needs a name that neither its own
      libraries (DT_NEEDED) nor libitapi's exports provide: a module
      loaded by libitapi resolves such names in libitapi, and may only
      use what the map exports.

doc/architecture.md, "What libitapi exports".
"""
import re
import subprocess
import sys


def read_map(path):
    """{name: node} of the map's global names (no wildcards allowed)."""
    text = re.sub(r'/\*.*?\*/', '', open(path).read(), flags=re.S)
    names = {}
    for m in re.finditer(r'([A-Za-z0-9_.]+)\s*\{(.*?)\}\s*[A-Za-z0-9_.]*\s*;', text, flags=re.S):
        node, body = m.group(1), m.group(2)
        scope = None
        for tok in re.findall(r'[^\s;]+:|[^\s;]+', body):
            if tok.endswith(':'):
                scope = tok[:-1]
            elif scope == 'global':
                if any(c in tok for c in '*?['):
                    sys.exit(f'{path}: node {node}: wildcard "{tok}": list names one by one')
                names[tok] = node
    if not names:
        sys.exit(f'{path}: no global names found')
    return names


def nm(path, *flags):
    out = subprocess.run(['nm', '-D', *flags, path], check=True, capture_output=True,
                         text=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def exports(lib):
    """{name: node} of the library's defined dynamic symbols."""
    syms = {}
    for f in nm(lib, '--defined-only'):
        if len(f) < 3 or f[1] == 'A':  # the version nodes themselves
            continue
        name, _, node = f[2].partition('@@')
        syms[name.split('@')[0]] = node or None
    return syms


def needed_exports(module):
    """Names the module's DT_NEEDED libraries define (as ldd resolves them)."""
    out = subprocess.run(['ldd', module], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        m = re.search(r'=>\s*(/\S+)', line)
        if m:
            names.update(f[2].split('@')[0] for f in nm(m.group(1), '--defined-only') if len(f) >= 3)
    return names


def check_exports(mapfile, lib):
    listed, got = read_map(mapfile), exports(lib)
    problems = []
    for name in sorted(set(got) - set(listed)):
        problems.append(f'{lib} exports {name}, which {mapfile} does not list (an internal leaked?)')
    for name in sorted(set(listed) - set(got)):
        problems.append(f'{mapfile} lists {name} ({listed[name]}), which {lib} does not export')
    for name in sorted(set(listed) & set(got)):
        if got[name] != listed[name]:
            problems.append(f'{lib} exports {name} under {got[name]}, {mapfile} under {listed[name]}')
    return problems, f'{len(got)} names exported, all listed in the map'


def check_imports(mapfile, lib, modules):
    exported = set(exports(lib))
    listed = read_map(mapfile)
    problems, used = [], set()
    for mod in modules:
        provided = needed_exports(mod)
        for f in nm(mod, '--undefined-only'):
            if f[0] in ('w', 'v'):  # weak: may stay unresolved
                continue
            name = f[1]
            if '@' in name or name in provided:
                continue
            if name in exported and name in listed:
                used.add(name)
                continue
            problems.append(f'{mod} imports {name}, which libitapi does not export '
                            f'(not in {mapfile})')
    return problems, (f'{len(modules)} modules import {len(used)} names of libitapi, all '
                      f'exported: {", ".join(sorted(used)) or "none"}')


def read_symbols(path):
    """({name: node}, {node}) of a dpkg symbols file's lines name@node."""
    names, nodes = {}, set()
    for n, line in enumerate(open(path), 1):
        if not line.startswith(' '):
            continue  # a comment, the library's header or a field
        m = re.match(r'\s+([A-Za-z0-9_.]+)@([A-Za-z0-9_.]+)\s+\S+', line)
        if not m:
            sys.exit(f'{path}:{n}: not "name@NODE version": {line.strip()}')
        name, node = m.group(1), m.group(2)
        if name == node:
            nodes.add(node)  # the version node's own symbol
        else:
            names[name] = node
    return names, nodes


def check_symbols(mapfile, symfile):
    listed, (got, nodes) = read_map(mapfile), read_symbols(symfile)
    problems = []
    for name in sorted(set(listed) - set(got)):
        problems.append(f'{mapfile} lists {name} ({listed[name]}), which {symfile} does not: add '
                        f'" {name}@{listed[name]} <version>" (the upload that exports it first)')
    for name in sorted(set(got) - set(listed)):
        problems.append(f'{symfile} lists {name}@{got[name]}, which {mapfile} does not export')
    for name in sorted(set(listed) & set(got)):
        if got[name] != listed[name]:
            problems.append(f'{symfile} lists {name} under {got[name]}, {mapfile} under {listed[name]}')
    for node in sorted(set(listed.values()) ^ nodes):
        problems.append(f'version node {node} is in one of {mapfile} and {symfile} only')
    return problems, f'{len(got)} names in {len(nodes)} version nodes, as the map has them'


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == 'exports':
        problems, ok = check_exports(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == 'symbols':
        problems, ok = check_symbols(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 5 and sys.argv[1] == 'imports':
        problems, ok = check_imports(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(__doc__)
    for p in problems:
        print('FAIL:', p)
    if problems:
        return 1
    print('ok:', ok)
    return 0


if __name__ == '__main__':
    sys.exit(main())
