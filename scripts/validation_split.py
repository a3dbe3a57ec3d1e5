#!/usr/bin/env python3
"""Splits data/validation/points.jsonl into calibration and held-out sets by a fixed seed.

Each batch of points is split once, when it is added and before any constant is fitted to it; the
output (data/validation/split.json) is committed and an earlier batch's assignment never changes.
- The first batch (points without a `batch` field, 2026-12-01): seed 14, 40% held out.
- Later batches (points with `batch`): points with a `held_out_rule` are held out by that rule;
  the rest are split with the batch's own seed, 50% held out.
- Batches split by deployment (GROUPED_BATCH_SEEDS, from 2026-12-07): a sweep's points are close
  neighbours, so a point split would hold out points whose neighbours a fit has seen. These batches
  are split by group instead (one model, GPU, TP size, engine preset and engine version): the groups,
  sorted, are shuffled by the batch's seed and held out in turn until at least half of the batch's
  points are held out. A held-out group is a deployment no fit has seen any point of.
Usage: scripts/validation_split.py [--check]
"""
import json
import pathlib
import random
import sys

SEED = 14  # the number; fixed before any constant was fitted
HELD_OUT_FRACTION = 0.4
# Later batches: name -> seed (fixed when the batch was added, before fitting).
BATCH_SEEDS = {"moe-2026-12-03": 1403, "sglang-2025-01": 1404, "dense-2026-12-04": 1406}
BATCH_HELD_OUT_FRACTION = 0.5
GROUPED_BATCH_SEEDS = {"fresh-2026-12-07": 1407}

root = pathlib.Path(__file__).resolve().parent.parent
points = [json.loads(line) for line in open(root / "data/validation/points.jsonl") if line.strip()]
held, calib = [], []


def split(ids, seed, fraction):
    ids = sorted(ids)
    random.Random(seed).shuffle(ids)
    n_held = round(len(ids) * fraction)
    held.extend(ids[:n_held])
    calib.extend(ids[n_held:])


split([p["id"] for p in points if "batch" not in p], SEED, HELD_OUT_FRACTION)
methods = ["first batch: sorted ids, random.Random(14).shuffle, first round(0.4 n) held out"]
for batch, seed in BATCH_SEEDS.items():
    members = [p for p in points if p.get("batch") == batch]
    held.extend(p["id"] for p in members if "held_out_rule" in p)
    split([p["id"] for p in members if "held_out_rule" not in p], seed, BATCH_HELD_OUT_FRACTION)
    methods.append(f"batch {batch}: points with held_out_rule held out; the rest sorted, "
                   f"random.Random({seed}).shuffle, first round(0.5 n) held out")


def group_key(p):
    """One deployment: model, GPU, TP size, engine preset and engine version."""
    fields = (p["model"], p["sim_gpu"], p["tp"], p.get("sim_engine", p["engine"]),
              p["engine_version"])
    return "|".join(str(x) for x in fields)


for batch, seed in GROUPED_BATCH_SEEDS.items():
    members = [p for p in points if p.get("batch") == batch]
    groups = {}
    for p in members:
        groups.setdefault(group_key(p), []).append(p["id"])
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    n_held = 0
    for k in keys:
        if n_held * 2 < len(members):
            held.extend(groups[k])
            n_held += len(groups[k])
        else:
            calib.extend(groups[k])
    methods.append(f"batch {batch}: split by group (model, GPU, TP, engine preset, engine "
                   f"version); groups sorted, random.Random({seed}).shuffle, held out in turn "
                   f"until at least half of the batch's points are held out")
seeded = set(BATCH_SEEDS) | set(GROUPED_BATCH_SEEDS)
unknown = {p.get("batch") for p in points if "batch" in p} - seeded
if unknown:
    sys.exit(f"points.jsonl has batches without a seed here: {sorted(unknown)}")
out_split = {
    "seed": SEED,
    "method": "; ".join(methods),
    "held_out": sorted(held),
    "calibration": sorted(calib),
}
out = root / "data/validation/split.json"
text = json.dumps(out_split, indent=1) + "\n"
if "--check" in sys.argv:
    if out.read_text() == text:
        sys.exit(0)
    committed = json.loads(out.read_text())
    moved = sorted(set(committed.get("held_out", [])) ^ set(out_split["held_out"]))
    sys.exit(f"{out} is not what this script makes from points.jsonl (points whose half differs: "
             f"{moved[:10] or 'none; the method text or the order differs'}); each batch is split "
             f"once, by its seed, before anything is fitted to it")
out.write_text(text)
print(f"{len(out_split['calibration'])} calibration, {len(out_split['held_out'])} held out -> {out}")
