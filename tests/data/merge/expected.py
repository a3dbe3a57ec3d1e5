#!/usr/bin/env python3
"""Figures tokperf merge must produce for tests/data/merge/run/, computed from the shards' own
files without tokperf's code: numpy's default (linear) percentile written out by hand. Writes
expected.json beside this script. Run it again only when the fixture is regenerated."""
import glob, json, os

here = os.path.dirname(os.path.abspath(__file__))
shards = sorted(glob.glob(os.path.join(here, "run", "shard-*")))
records, infos = [], []
for d in shards:
    with open(os.path.join(d, "requests.jsonl")) as f:
        records += [json.loads(l) for l in f if l.strip()]
    with open(os.path.join(d, "shard.json")) as f:
        infos.append(json.load(f)["levels"][0])

def pct(v, q):
    v = sorted(v)
    k = (len(v) - 1) * q / 100.0
    f = int(k)
    c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)

def stats(v):
    v = [x for x in v if x is not None]
    return {"count": len(v), "p50": pct(v, 50), "p90": pct(v, 90), "p99": pct(v, 99),
            "max": max(v), "mean": sum(v) / len(v)}

measured = [r for r in records if r["phase"] == "measure"]
ok = [r for r in measured if r["ok"]]
errors = {}
for r in measured:
    if not r["ok"]:
        errors[r["error"]["kind"]] = errors.get(r["error"]["kind"], 0) + 1
first = min(i["first_measured_send_unix_ns"] for i in infos)
last = max(i["last_measured_send_unix_ns"] for i in infos)
sent = sum(i["measured_sent"] for i in infos)
expected = {
    "sent": len(measured),
    "ok": len(ok),
    "errors": errors,
    "schedule_fingerprint": infos[0]["schedule_fingerprint"],
    "measured_sent": sent,
    "scheduled_arrivals": infos[0]["global"]["scheduled_arrivals"],
    "achieved_rate_rps": (sent - 1) / ((last - first) / 1e9),
    "ttft_ms": stats([r["ttft_ms"] for r in ok]),
    "itl_ms": stats([x for r in ok for x in r["itl_ms"]]),
    "tpot_ms": stats([r["tpot_ms"] for r in ok]),
    "e2e_ms": stats([r["e2e_ms"] for r in ok]),
}
with open(os.path.join(here, "expected.json"), "w") as f:
    json.dump(expected, f, indent=2, sort_keys=True)
    f.write("\n")
print(json.dumps(expected, indent=2, sort_keys=True))
