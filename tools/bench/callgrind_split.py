#!/usr/bin/env python3
"""Split a callgrind profile's calls by layer (tools/bench/dat-callgrind.sh).

    callgrind_split.py PROFILE ROOT [ROOT...]

PROFILE is a callgrind output file made with --separate-callers=N (N deep
enough to reach from the loop to the innermost function, 12 for the DAT
stack), so that each function's cost is kept apart per chain of callers.
The loop is the function that calls the first ROOT most often (dtest's
ping-pong loop for dat_ep_post_rdma_write: its binary is stripped, so it
has no name to give); for each ROOT called from that loop, this prints its
calls, its instructions per call inclusive, and the instructions per call
of each layer below it and of each function with at least half an
instruction per call.  A function's layer is its object's (libdat2,
libdaplitapi: dat) or, inside libitapi, its source file's folder (ual/ and
itapi/: ual; vp/: vp); a function of neither (libc, GLib) counts for the
nearest caller that has one.
"""
import collections
import re
import sys

NAME_KINDS = {'fl': 'fl', 'fi': 'fl', 'fe': 'fl', 'cfl': 'fl', 'cfi': 'fl',
              'ob': 'ob', 'cob': 'ob', 'fn': 'fn', 'cfn': 'fn'}


def parse(path):
    """Self cost per function context, calls and their inclusive cost per
    (caller, callee), and each function context's (object, file)."""
    names = {'fl': {}, 'ob': {}, 'fn': {}}

    def name(kind, text):
        m = re.match(r'\((\d+)\)(?: (.*))?$', text)
        if not m:
            return text
        table = names[NAME_KINDS[kind]]
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table[m.group(1)]

    self_cost = collections.Counter()
    calls = collections.Counter()
    incl = collections.Counter()
    where = {}
    ob = fl = fn = cfn = None
    pending = None
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if not line or line[0] == '#':
                continue
            key, eq, value = line.partition('=')
            if eq and (key in NAME_KINDS or key == 'calls'):
                if key == 'calls':
                    pending = int(value.split()[0])
                elif key == 'ob':
                    ob = name(key, value)
                elif key == 'fl':
                    fl = name(key, value)
                elif key == 'fn':
                    fn = name(key, value)
                    where[fn] = (ob, fl)
                elif key == 'cfn':
                    cfn = name(key, value)
                else:
                    name(key, value)
                continue
            if line[0].isdigit() or line[0] in '+-*':
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if pending is not None:
                    calls[(fn, cfn)] += pending
                    incl[(fn, cfn)] += cost
                    pending = None
                else:
                    self_cost[fn] += cost
    return self_cost, calls, incl, where


def chain(context):
    """A context's functions, innermost first."""
    return context.split("'")


def layer_of(context, where):
    ob, fl = where.get(context, ('', ''))
    ob, fl = ob or '', fl or ''
    if 'libdat2' in ob:
        return 'libdat2'
    if 'libdaplitapi' in ob:
        return 'dat'
    if '/vp/' in fl:
        return 'vp'
    if '/ual/' in fl or '/itapi/' in fl:
        return 'ual'
    return None


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    self_cost, calls, incl, where = parse(sys.argv[1])
    roots = sys.argv[2:]
    # The base name of a function: its layer, whatever its callers.
    base_layer = {}
    for context in where:
        layer = layer_of(context, where)
        if layer is not None:
            base_layer.setdefault(chain(context)[0], layer)
    callers = collections.Counter()
    for (caller, callee), n in calls.items():
        if callee is not None and chain(callee)[0] == roots[0] and caller is not None:
            callers[chain(caller)[0]] += n
    if not callers:
        sys.exit(f'callgrind_split: {roots[0]} is never called in {sys.argv[1]}')
    loop = callers.most_common(1)[0][0]
    print(f'loop: {loop} (calls {roots[0]} {callers[loop]} times)')
    for root in roots:
        n = sum(c for (caller, callee), c in calls.items()
                if callee is not None and chain(callee)[:2] == [root, loop])
        inclusive = sum(c for (caller, callee), c in incl.items()
                        if callee is not None and chain(callee)[:2] == [root, loop])
        if n == 0:
            print(f'{root}: not called from the loop')
            continue
        print(f'{root}: {n} calls, {inclusive / n:.1f} instructions a call inclusive')
        layers = collections.Counter()
        funcs = collections.Counter()
        for context, cost in self_cost.items():
            ch = chain(context)
            if root not in ch:
                continue
            i = ch.index(root)
            if i + 1 >= len(ch) or ch[i + 1] != loop:
                continue
            layer = next((base_layer[f] for f in ch[:i + 1] if f in base_layer), '?')
            layers[layer] += cost
            funcs[(layer, ch[0])] += cost
        for layer in ('libdat2', 'dat', 'ual', 'vp', '?'):
            if layers[layer]:
                print(f'  {layer:8s} {layers[layer] / n:8.1f}')
        for (layer, func), cost in funcs.most_common():
            if cost / n >= 0.5:
                print(f'    {layer:8s} {func:40s} {cost / n:8.1f}')


if __name__ == '__main__':
    main()
