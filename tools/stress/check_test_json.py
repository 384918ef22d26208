#!/usr/bin/env python3
"""Run itapi-test with --json and check its summary.

usage: check_test_json.py ITAPI_TEST [itapi-test arguments...]

Passes when the tool exits 0, its JSON parses, errors == 0,
transactions > 0, every enabled operation was used, every expected
DISCONNECT event came, and, with --fault, the fault was verified.
"""
import json
import subprocess
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = sys.argv[1:] + ['--json']
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(proc.stderr)
    problems = []
    try:
        r = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        print(proc.stdout)
        print(f'output is not JSON: {e}', file=sys.stderr)
        return 1
    print(json.dumps(r, indent=2))
    if proc.returncode != 0:
        problems.append(f'exit status {proc.returncode}')
    if r.get('errors') != 0:
        problems.append(f"errors = {r.get('errors')}")
    if not r.get('transactions', 0) > 0:
        problems.append('no transaction completed')
    for op in r.get('ops_enabled', []):
        if not r['ops'].get(op, 0) > 0:
            problems.append(f'operation {op} was enabled but never completed')
    if 'send' in r.get('ops_enabled', []) and r.get('recv') != r['ops']['send']:
        problems.append(f"{r['ops']['send']} sends completed but {r.get('recv')} receives validated")
    if r.get('disconnect_events') != r.get('disconnect_events_expected'):
        problems.append(f"{r.get('disconnect_events')} of {r.get('disconnect_events_expected')} "
                        'DISCONNECT events')
    if '--fault' in cmd:
        f = r.get('fault', {})
        if not (f.get('verified') and f.get('broken_event')):
            problems.append(f'fault injection not verified: {f}')
    if '-n' in cmd:
        want = int(cmd[cmd.index('-n') + 1])
        if r.get('transactions') != want:
            problems.append(f"{r.get('transactions')} transactions, {want} asked for")
    for p in problems:
        print(f'check_test_json: {p}', file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
