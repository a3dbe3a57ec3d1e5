#!/usr/bin/env python3
"""Fits simulator knobs on the CALIBRATION half of data/validation/ only.

Coordinate descent over a few knobs of one engine preset, each step a grid of multipliers around
the current value; the objective is the sum over metrics (TTFT, TPOT, output tok/s) of the median
|error| on calibration points of that engine, plus a penalty for any point off by more than 1.8x.
The held-out half is never read. Usage:

  scripts/fit_sim.py --engine vllm --knob step_overhead_s=0.0004 --knob request_overhead_s=0.005 ...

It prints the best values; copy them into src/sim/engine_preset.cc (or CostKnobs) by hand and say
so in docs/SIMULATOR.md.
"""
import argparse
import json
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
binary = root / "build" / "tokperf"
engine_names = []  # set from --engine: only those presets' calibration points are replayed
data_dir = root / "data/validation"  # set from --data
metrics = []  # set from --metric: the metrics the objective sums (default all)
worst_weight = 50.0  # set from --worst-weight: the penalty per unit of worst ratio above 1.8x
model_class = ""  # set from --class: only dense or only MoE points in the objective


def evaluate(knobs, engine_ids):
    doc = {"failures": [], "rows": []}
    for engine in engine_names:
        cmd = [str(binary), "sim", "validate", "--split", "calibration", "--json",
               "--data", str(data_dir), "--engine", engine]
        for k, v in knobs.items():
            cmd += ["--knob", f"{k}={v:.9g}"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        one = json.loads(out.stdout)
        doc["failures"] += one["failures"]
        doc["rows"] += one["rows"]
    if doc["failures"]:
        return float("inf"), doc
    by_metric = {}
    worst = 1.0
    for row in doc["rows"]:
        if row["held_out"] or (engine_ids and row["id"] not in engine_ids):
            continue
        if model_class and row["model_class"] != model_class:
            continue
        if metrics and row["metric"] not in metrics:
            continue
        by_metric.setdefault(row["metric"], []).append(abs(row["error_pct"]))
        r = 1 + row["error_pct"] / 100
        worst = max(worst, r, 1 / r if r > 0 else float("inf"))
    score = 0.0
    for errs in by_metric.values():
        errs.sort()
        n = len(errs)
        score += errs[n // 2] if n % 2 else (errs[n // 2 - 1] + errs[n // 2]) / 2
    return score + worst_weight * max(0.0, worst - 1.8), doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True,
                    help="fit on this engine preset's calibration points; comma-separated: on "
                         "several presets' together (presets that share the knobs, e.g. "
                         "vllm,vllm-0.13)")
    ap.add_argument("--knob", action="append", default=[], help="NAME=START value to fit")
    ap.add_argument("--fixed", action="append", default=[], help="NAME=VALUE held fixed")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--grid", type=lambda t: [float(x) for x in t.split(",")],
                    default=[0, 0.25, 0.5, 0.7, 0.85, 1.15, 1.4, 2, 4],
                    help="multipliers tried around each knob's current value")
    ap.add_argument("--binary", default=str(root / "build" / "tokperf"), help="the tokperf to run (default build/tokperf)")
    ap.add_argument("--data", default=str(root / "data/validation"),
                    help="the validation set (default data/validation)")
    ap.add_argument("--worst-weight", type=float, default=50.0,
                    help="penalty per unit of the worst point's ratio above 1.8x (default 50; 0: "
                         "medians alone, for a set whose worst point no knob being fitted can move)")
    ap.add_argument("--metric", action="append", default=[],
                    help="only this metric in the objective (TTFT, TPOT, 'output tok/s'); "
                         "repeatable; default all: fit a knob on the metric it governs")
    ap.add_argument("--only", default="",
                    help="comma-separated point ids: fit on these calibration points alone (one "
                         "host's, scripts/per_host_fit.py)")
    ap.add_argument("--class", dest="model_class", choices=["dense", "moe"], default="",
                    help="only this model class's points in the objective (default both): fit a "
                         "knob that only MoE layers pay on MoE points alone")
    a = ap.parse_args()
    global engine_names, binary, data_dir, worst_weight, metrics, model_class
    model_class = a.model_class
    worst_weight = a.worst_weight
    metrics = a.metric
    engine_names = a.engine.split(",")
    binary = pathlib.Path(a.binary)
    data_dir = pathlib.Path(a.data)
    points = [json.loads(l) for l in open(data_dir / "points.jsonl") if l.strip()]
    split = json.load(open(data_dir / "split.json"))
    ids = {p["id"] for p in points if p.get("sim_engine", p["engine"]) in engine_names and p["id"] in split["calibration"]}
    if a.only:
        only = set(a.only.split(","))
        unknown = only - ids
        if unknown:
            sys.exit(f"--only: not calibration points of {a.engine}: {', '.join(sorted(unknown))}")
        ids = only
    knobs = {k.split("=")[0]: float(k.split("=")[1]) for k in a.knob}
    fixed = {k.split("=")[0]: float(k.split("=")[1]) for k in a.fixed}
    best, _ = evaluate({**fixed, **knobs}, ids)
    print(f"start {best:.2f} {knobs}", file=sys.stderr)
    for _ in range(a.rounds):
        for name in list(knobs):
            for mult in a.grid:
                trial = dict(knobs)
                trial[name] = knobs[name] * mult if knobs[name] != 0 else mult * 1e-3
                if name.endswith("efficiency") and not 0 < trial[name] <= 1:
                    continue  # an achieved fraction of peak
                score, _ = evaluate({**fixed, **trial}, ids)
                if score < best - 1e-6:
                    best, knobs = score, trial
                    print(f"{best:.2f} {knobs}", file=sys.stderr)
    print(json.dumps({"engine": a.engine, "score": best, "knobs": knobs, "fixed": fixed}, indent=1))


if __name__ == "__main__":
    main()
