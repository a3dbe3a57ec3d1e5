#!/usr/bin/env python3
"""What knowing the host buys: the published points refitted one host at a time.

The presets' front-end, per-step and achieved-rate constants are fitted across every source's
hosts; `tokperf sim calibrate` lets a user fit them on their own server instead. This script asks
how much of the held-out error that would remove on the published data: for each group of points
from one source, GPU, engine preset, model and dtype with at least 3 calibration points and 1
held-out point, it fits those constants on the group's calibration points alone
(scripts/fit_sim.py --only), then replays the group's held-out points with them and with the
preset. Nothing here changes a preset or the shipped figures (docs/SIMULATOR.md, "What knowing the
host buys"). Usage: scripts/per_host_fit.py [--rounds 3] [--json OUT]
"""
import argparse
import collections
import json
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
binary = root / "build" / "tokperf"
data = root / "data/validation"


def group_key(p):
    return (p["source"].split("/blob/")[0], p.get("sim_gpu"), p.get("sim_engine", p["engine"]),
            p.get("sim_model"), p.get("dtype"))


def preset_knobs(p):
    """The preset's values of the fitted knobs for this point's GPU, engine and dtype."""
    cmd = [str(binary), "estimate", "--model", "llama-3.1-8b", "--gpu", p["sim_gpu"], "--engine",
           p.get("sim_engine", p["engine"]), "--dtype", p["dtype"], "--json"]
    est = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    k = est["knobs"]
    w8a8 = p["dtype"] in ("fp8", "int8")  # every GPU these groups ran on has the 8-bit math
    names = (["w8a8_compute_efficiency", "w8a8_bandwidth_efficiency"] if w8a8 else
             ["compute_efficiency", "weight_stream_efficiency"])
    out = {n: k[n] for n in names}
    out["bandwidth_efficiency"] = k["bandwidth_efficiency"]
    out["step_overhead_s"] = k.get("step_overhead_s", 0)
    out["request_overhead_s"] = k.get("request_overhead_s", 0) or 0.001
    out["request_latency_s"] = k.get("request_latency_s", 0) or 0.001
    out["output_overhead_s"] = est["frontend_us_per_token"] * 1e-6 or 0.0001
    return out


def validate(engine, split, knobs):
    cmd = [str(binary), "sim", "validate", "--split", split, "--json", "--engine", engine]
    for k, v in knobs.items():
        cmd += ["--knob", f"{k}={v:.9g}"]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def median(x):
    x = sorted(x)
    n = len(x)
    return float("nan") if n == 0 else (x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the per-point rows here")
    a = ap.parse_args()
    points = [json.loads(l) for l in open(data / "points.jsonl") if l.strip()]
    split = json.load(open(data / "split.json"))
    cal = set(split["calibration"])
    groups = collections.defaultdict(list)
    for p in points:
        groups[group_key(p)].append(p)
    rows = []
    for key, ps in groups.items():
        cal_ids = [p["id"] for p in ps if p["id"] in cal]
        held_ids = {p["id"] for p in ps if p["id"] not in cal}
        if len(cal_ids) < 3 or not held_ids:
            continue
        engine = key[2]
        start = preset_knobs(ps[0])
        cmd = [sys.executable, str(root / "scripts/fit_sim.py"), "--engine", engine, "--only",
               ",".join(cal_ids), "--worst-weight", "0", "--rounds", str(a.rounds)]
        for k, v in start.items():
            cmd += ["--knob", f"{k}={v:.9g}"]
        print(f"fitting {key} on {len(cal_ids)} calibration points ...", file=sys.stderr)
        fit = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        base = validate(engine, "held-out", {})
        fitted = validate(engine, "held-out", fit["knobs"])
        before = {(r["id"], r["metric"]): r["error_pct"] for r in base["rows"]}
        for r in fitted["rows"]:
            if r["id"] in held_ids:
                rows.append({"group": " ".join(str(x) for x in key), "id": r["id"],
                             "metric": r["metric"], "preset_pct": before[(r["id"], r["metric"])],
                             "per_host_pct": r["error_pct"], "knobs": fit["knobs"]})
    print("| point | metric | preset | per-host fit |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['id']} | {r['metric']} | {r['preset_pct']:+.1f}% | {r['per_host_pct']:+.1f}% |")
    for m in ("TTFT", "TPOT", "output tok/s"):
        b = [abs(r["preset_pct"]) for r in rows if r["metric"] == m]
        f = [abs(r["per_host_pct"]) for r in rows if r["metric"] == m]
        print(f"{m}: n={len(b)} median |error| preset {median(b):.1f}% -> per-host {median(f):.1f}%")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
