#!/usr/bin/env python3
"""itapi-certify must catch a broken provider module with a named failing test,
and report what each failed test said (its g_test_message lines).

usage: check_certify.py ITAPI_CERTIFY MODULE EXPECTED_FAILING_TEST [certify args...]
"""
import json
import os
import subprocess
import sys
import tempfile

certify, module, expected, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "report.json")
    run = subprocess.run([certify, "--provider-module", module, "--json", report, "--quiet"] + extra,
                         capture_output=True, text=True)
    print(run.stdout[-3000:])
    assert run.returncode == 1, f"expected exit 1 (failures), got {run.returncode}: {run.stderr}"
    doc = json.load(open(report))
    failed = {t["id"]: t for t in doc["tests"] if t["result"] == "fail"}
    assert expected in failed, f"{expected} did not fail; failures: {sorted(failed)}"
    assert failed[expected]["message"], "the failure carries no message"
    assert doc["summary"]["fail"] == len(failed)
    # A failed test's own messages come with it: every RNIC-PI test's
    # fixture says which provider it certifies.
    rnicpi = [t for i, t in failed.items() if i.startswith("/rnicpi/")]
    for t in rnicpi:
        assert "certifying RNIC-PI provider" in (t.get("said") or ""), \
            f"{t['id']}: the report lacks what the test said: {t.get('said')!r}"
    if rnicpi:
        print(f"what {rnicpi[0]['id']} said is in the report: {rnicpi[0]['said'].strip()[:200]}")
    print(f"caught: {expected}: {failed[expected]['message'][:300]}")
