#!/usr/bin/env python3
"""Splits data/validation/points.jsonl into calibration and held-out sets by a fixed seed.

Run once, before any constant is fitted; the output (data/validation/split.json) is committed and
never regenerated after tuning starts. Usage: scripts/validation_split.py [--check]
"""
import json
import pathlib
import random
import sys

SEED = 14  # the number; fixed before any constant was fitted
HELD_OUT_FRACTION = 0.4

root = pathlib.Path(__file__).resolve().parent.parent
points = [json.loads(line) for line in open(root / "data/validation/points.jsonl") if line.strip()]
ids = sorted(p["id"] for p in points)
rng = random.Random(SEED)
rng.shuffle(ids)
n_held = round(len(ids) * HELD_OUT_FRACTION)
split = {
    "seed": SEED,
    "method": "sorted ids, random.Random(seed).shuffle, first round(0.4 n) held out",
    "held_out": sorted(ids[:n_held]),
    "calibration": sorted(ids[n_held:]),
}
out = root / "data/validation/split.json"
text = json.dumps(split, indent=1) + "\n"
if "--check" in sys.argv:
    sys.exit(0 if out.read_text() == text else 1)
out.write_text(text)
print(f"{len(split['calibration'])} calibration, {len(split['held_out'])} held out -> {out}")
