#!/usr/bin/env python3
"""A provider logs under its own GLib log domain, built in or loaded.

check_log_domain.py PROGRAM DOMAIN VAR=VALUE...

Runs PROGRAM (itapi-info) with the environment given, which makes the
provider warn about a setting, and checks that the warning on stderr names
DOMAIN (GLib prints "DOMAIN-WARNING **"), as G_MESSAGES_DEBUG=DOMAIN and
G_DEBUG's filters rely on.  Exit 0 when it does, 1 when not.
SPDX-License-Identifier: MIT
"""
import os
import subprocess
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    prog, domain = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    env.pop("G_MESSAGES_DEBUG", None)
    for kv in sys.argv[3:]:
        k, v = kv.split("=", 1)
        env[k] = v
    p = subprocess.run([prog], capture_output=True, text=True, env=env, timeout=60)
    warn = [l for l in p.stderr.splitlines() if "WARNING **" in l]
    if not warn:
        sys.exit(f"FAIL: {prog} with {' '.join(sys.argv[3:])} printed no warning; stderr:\n{p.stderr}")
    if not any(f"{domain}-WARNING **" in l for l in warn):
        sys.exit(f"FAIL: the provider's warning is not in log domain {domain}:\n" + "\n".join(warn))
    print(f"ok: {warn[0].strip()}")


if __name__ == "__main__":
    main()
