#!/usr/bin/env python3
"""itapi-info --json parses and says what the build has: emul0, 83 calls;
its text gives each interface's per-endpoint limits."""
import json
import subprocess
import sys

out = subprocess.run([sys.argv[1], "--json"], check=True, capture_output=True, text=True).stdout
doc = json.loads(out)
names = [i["name"] for i in doc["interfaces"]]
assert "emul0" in names, names
emul = next(i for i in doc["interfaces"] if i["name"] == "emul0")
assert emul["ia_info"]["connect_private_data_len"] > 0, emul
assert "cm-verbs" in emul["rnicpi_features"] and emul["rnicpi_limits"]["max_qp"] > 0, emul
assert 0 < emul["calls_usable"] <= 83
# RNIC-PI 1.12: the iWARP personality says the window rule of its
# transport as a bit (RDMAC verbs 7.2.7); the InfiniBand one has no such rule.
assert "mw-needs-va-region" not in emul["rnicpi_features"], emul["rnicpi_features"]
emul_iw = [i for i in doc["interfaces"] if i["name"] == "emul-iw0"]
assert not emul_iw or "mw-needs-va-region" in emul_iw[0]["rnicpi_features"], emul_iw
assert any(p["name"] == "emul" and p["usable"] for p in doc["providers"]), doc["providers"]
calls = doc["calls"]
assert len(calls) == 83 and len({c["name"] for c in calls}) == 83, len(calls)
assert any(c["name"] == "it_post_send" and c["supported"] for c in calls)
assert any(c["name"] == "it_lmr_link" and c["supported"] for c in calls)
assert ("it_lmr_link" in emul["calls_not_usable"]) != bool(emul["ia_info"]["lmr_link_support"]), emul
assert "it_srq_create" in emul["calls_not_usable"] or emul["ia_info"]["srq_support"]
# With vp/ib loaded (ITAPI_PROVIDER_PATH), the provider is usable and each
# of its devices is an interface or listed as refused with a reason; with
# no device at all, one entry says why.
ib = [p for p in doc["providers"] if p["name"] == "ib"]
if len(sys.argv) > 2 and sys.argv[2] == "--ib":
    assert ib and ib[0]["usable"], doc["providers"]
    ib_ifaces = [i for i in doc["interfaces"] if i.get("provider", "ib") == "ib"
                 and not i["name"].startswith(("emul", "iwarp"))]
    refused = ib[0].get("refused_devices", [])
    assert ib_ifaces or refused, ib[0]
    assert all(r["reason"] for r in refused), refused
# The text shows what an application sizes its endpoints by, per
# interface, as the JSON's limits give it.
text = subprocess.run([sys.argv[1]], check=True, capture_output=True, text=True).stdout
lim = emul["rnicpi_limits"]
want = ("per endpoint: IRD %d, ORD %d, RDMA Read segments %d, RDMA Write segments %d, "
        "Send segments %d, receive segments %d" % (lim["max_ird"], lim["max_ord"],
        lim["max_rdma_read_sge"], lim["max_rdma_write_sge"], lim["max_send_sge"], lim["max_recv_sge"]))
assert want in text.split("emul0:", 1)[1], text
assert lim["max_ird"] >= 32 and lim["max_rdma_read_sge"] >= 8, lim
print("itapi-info --json: %d providers, %d interfaces, %d calls" %
      (len(doc["providers"]), len(names), len(calls)))
