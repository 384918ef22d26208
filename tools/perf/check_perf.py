#!/usr/bin/env python3
"""Smoke test of itapi-perf in loopback: JSON, CSV, event mode, --complete-first, -T, -T --ud, -T --rmr and --srq,
and a one-sided test that outlasts --timeout.

Usage: check_perf.py PATH/TO/itapi-perf

Checks the shape and the internal consistency of the results, not their
values: the machine running the tests may be busy.
SPDX-License-Identifier: MIT
"""
import json
import subprocess
import sys

TESTS = ["send_lat", "write_lat", "read_lat", "send_bw", "write_bw", "read_bw"]
LAT_KEYS = ["min_us", "median_us", "avg_us", "stddev_us", "p99_us", "p999_us", "max_us"]
CSV_HEADER = ("test,bytes,iters,min_us,median_us,avg_us,stddev_us,p99_us,p999_us,max_us,"
              "gbps,mmsgps")


def run(perf, *args, timeout="10"):
    # --timeout turns a hang inside the tool into an error within seconds.
    cmd = [perf, "--timeout", timeout, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}\n{p.stderr}")
    return p.stdout


def check_result(r, where):
    def fail(msg):
        sys.exit(f"FAIL: {where}: {r.get('test')} {r.get('bytes')} B: {msg}\n{r}")

    if not isinstance(r.get("iters"), int) or r["iters"] <= 0:
        fail("iters is not a positive integer")
    if r["test"].endswith("_lat"):
        if r.get("kind") != "latency":
            fail("kind is not latency")
        v = {k: r.get(k) for k in LAT_KEYS}
        if any(not isinstance(x, (int, float)) for x in v.values()):
            fail("a latency field is missing or not a number")
        if not (0 < v["min_us"] <= v["median_us"] <= v["p99_us"] <= v["p999_us"] <= v["max_us"]):
            fail("min <= median <= p99 <= p99.9 <= max does not hold")
        if not (v["min_us"] <= v["avg_us"] <= v["max_us"]):
            fail("the average is outside [min, max]")
        if r.get("gbps") is not None or r.get("mmsgps") is not None:
            fail("a latency result carries bandwidth")
    else:
        if r.get("kind") != "bandwidth":
            fail("kind is not bandwidth")
        for k in ("gbps", "mmsgps"):
            if not isinstance(r.get(k), (int, float)) or r[k] <= 0:
                fail(f"{k} is not a positive number")
        if any(r.get(k) is not None for k in LAT_KEYS):
            fail("a bandwidth result carries latency")


def check_long_one_sided(perf):
    """A one-sided test longer than --timeout passes: the server waits for
    the client's next message without a deadline while the client works
    alone.  The chunk is sized from a half-second run's rate to last about
    2.5 times --timeout, whatever the machine's speed and load."""
    # The sustained rate: chunks of a duration run, not the ramp of a short one.
    out = run(perf, "-t", "write_bw", "-S", "65536", "-D", "0.5", "--json")
    secs, iters = 1.0, json.loads(out)["results"][0]["mmsgps"] * 1e6
    # A second try when the machine sped up (its load fell) and the run was
    # too short to outlast the timeout.
    for _ in range(2):
        iters = max(500, int(iters * 2.5 / secs))
        out = run(perf, "-t", "write_bw", "-S", "65536", "-n", str(iters), "-w", "0", "--json",
                  timeout="1")
        r = json.loads(out)["results"][0]
        check_result(r, "--timeout 1")
        if r["iters"] != iters:
            sys.exit(f"FAIL: --timeout 1: write_bw ran {r['iters']} iterations, not {iters}")
        secs = iters / (r["mmsgps"] * 1e6)
        if secs > 1.5:
            break
    return secs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    perf = sys.argv[1]

    out = run(perf, "-t", "all", "--size", "8,4096", "-n", "200", "--json")
    doc = json.loads(out)
    res = doc["results"]
    if len(res) != 12:
        sys.exit(f"FAIL: --json: {len(res)} results, expected 12 (6 tests x 2 sizes)")
    got = sorted((r["test"], r["bytes"]) for r in res)
    want = sorted((t, b) for t in TESTS for b in (8, 4096))
    if got != want:
        sys.exit(f"FAIL: --json: results for {got}, expected {want}")
    for r in res:
        check_result(r, "--json")
        if r["iters"] != 200:
            sys.exit(f"FAIL: --json: {r['test']} {r['bytes']} B ran {r['iters']} iterations, not 200")

    out = run(perf, "-t", "write_lat,write_bw", "-S", "64", "-n", "100", "--csv")
    lines = out.splitlines()
    if not lines or lines[0] != CSV_HEADER:
        sys.exit(f"FAIL: --csv: header is {lines[:1]}, expected [{CSV_HEADER!r}]")
    if len(lines) != 3 or any(len(l.split(",")) != len(CSV_HEADER.split(",")) for l in lines):
        sys.exit(f"FAIL: --csv: expected 2 rows of {len(CSV_HEADER.split(','))} fields:\n{out}")

    out = run(perf, "-e", "-t", "send_lat", "-S", "64", "-n", "200", "--json")
    doc = json.loads(out)
    if doc.get("completion") != "event" or len(doc["results"]) != 1:
        sys.exit(f"FAIL: -e: expected one event-mode result:\n{out}")
    check_result(doc["results"][0], "-e")

    # --complete-first (the order of dtest's ping-pong) over private memory.
    out = run(perf, "--complete-first", "--mem", "private", "-t", "send_lat,write_lat", "-S", "64",
              "-n", "200", "--json")
    doc = json.loads(out)
    if doc.get("complete_first") is not True or [r["test"] for r in doc["results"]] != ["send_lat", "write_lat"]:
        sys.exit(f"FAIL: --complete-first: expected send_lat and write_lat, said in the head:\n{out}")
    for r in doc["results"]:
        check_result(r, "--complete-first")

    # -T: two threads, each with its own endpoint pair, side by side.
    out = run(perf, "-T", "2", "-D", "0.2", "--json")
    doc = json.loads(out)
    res = doc["results"]
    if doc.get("threads") != 2 or sorted(r["test"] for r in res) != ["send_bw", "write_bw"]:
        sys.exit(f"FAIL: -T 2: expected send_bw and write_bw over 2 threads:\n{out}")
    for r in res:
        if r["bytes"] != 8 or r["threads"] != 2 or r["msgs"] <= 0 or r["seconds"] <= 0:
            sys.exit(f"FAIL: -T 2: {r}")
        if not 0 < r["thread_min_mmsgps"] <= r["thread_max_mmsgps"]:
            sys.exit(f"FAIL: -T 2: a thread moved no message, or min > max: {r}")
        # The aggregate is all messages over the longest thread's time.
        if abs(r["mmsgps"] - r["msgs"] / r["seconds"] / 1e6) > 1e-3 * r["mmsgps"]:
            sys.exit(f"FAIL: -T 2: the rate is not msgs / seconds: {r}")
    # -T --ud: two threads, each with two datagram endpoints, two sizes.
    out = run(perf, "-T", "2", "--ud", "-S", "8,4096", "-D", "0.2", "--json", "-i", "emul0")
    doc = json.loads(out)
    res = doc["results"]
    if [(r["test"], r["bytes"]) for r in res] != [("ud_bw", 8), ("ud_bw", 4096)]:
        sys.exit(f"FAIL: -T 2 --ud: expected ud_bw of 8 and 4096 bytes:\n{out}")
    for r in res:
        if r["threads"] != 2 or r["msgs"] <= 0 or not 0 < r["thread_min_mmsgps"] <= r["thread_max_mmsgps"]:
            sys.exit(f"FAIL: -T 2 --ud: a thread moved no datagram: {r}")
    # -T --rmr: the same run with an RMR allocated beside it, said in the head.
    out = run(perf, "-T", "2", "--rmr", "-D", "0.2", "--json", "-i", "emul0")
    doc = json.loads(out)
    if doc.get("rmr") is not True or [r["test"] for r in doc["results"]] != ["send_bw", "write_bw"]:
        sys.exit(f"FAIL: -T 2 --rmr: expected rmr true and send_bw, write_bw:\n{out}")
    for r in doc["results"]:
        if r["msgs"] <= 0 or not 0 < r["thread_min_mmsgps"] <= r["thread_max_mmsgps"]:
            sys.exit(f"FAIL: -T 2 --rmr: a thread moved no message: {r}")
    # -T --srq: each receiving end takes its receives from an SRQ.
    out = run(perf, "-T", "2", "--srq", "-D", "0.2", "--json", "-i", "emul0")
    doc = json.loads(out)
    if [r["test"] for r in doc["results"]] != ["send_bw", "write_bw"]:
        sys.exit(f"FAIL: -T 2 --srq: expected send_bw, write_bw:\n{out}")
    for r in doc["results"]:
        if r["msgs"] <= 0 or not 0 < r["thread_min_mmsgps"] <= r["thread_max_mmsgps"]:
            sys.exit(f"FAIL: -T 2 --srq: a thread moved no message: {r}")
    p = subprocess.run([perf, "-T", "1", "--srq", "--ud"], capture_output=True, text=True, timeout=30)
    if p.returncode == 0 or "--srq goes with -T" not in p.stderr:
        sys.exit(f"FAIL: --srq with --ud is not refused with a message:\n{p.stderr}")
    p = subprocess.run([perf, "--rmr"], capture_output=True, text=True, timeout=30)
    if p.returncode == 0 or "--rmr goes with -T" not in p.stderr:
        sys.exit(f"FAIL: --rmr without -T is not refused with a message:\n{p.stderr}")
    p = subprocess.run([perf, "-T", "2", "-t", "send_lat"], capture_output=True, text=True,
                       timeout=30)
    if p.returncode == 0 or "send_bw and write_bw" not in p.stderr:
        sys.exit(f"FAIL: -T with a latency test is not refused with a message:\n{p.stderr}")

    p = subprocess.run([perf, "-t", "no_such_test"], capture_output=True, text=True, timeout=30)
    if p.returncode == 0 or "no_such_test" not in p.stderr:
        sys.exit(f"FAIL: an unknown test name is not refused with a message:\n{p.stderr}")

    secs = check_long_one_sided(perf)

    print("itapi-perf: JSON, CSV, event mode, -T, -T --ud, -T --rmr, -T --srq, argument checks "
          f"and a write_bw of {secs:.1f} s under --timeout 1 passed")


if __name__ == "__main__":
    main()
