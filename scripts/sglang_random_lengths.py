#!/usr/bin/python3
"""Checks the per-request lengths of the validation points taken from SGLang's bench_serving runs.

SGLang 0.4.0's bench_serving (random dataset) seeds numpy's legacy generator with --seed (1 by
default) and then draws every input length, then every output length:
    input_lens  = np.random.randint(max(int(input_len * ratio), 1), input_len + 1, size=n)
    output_lens = np.random.randint(int(output_len * ratio), output_len + 1, size=n)
The source publishes the run's totals, not the lengths. For every point whose workload carries
`input_lens` and a `lens_rule` of this kind, this redraws them and checks that they equal the
point's arrays and sum to the totals the point quotes (`lens_totals`).
Needs Debian's python3-numpy. Usage: scripts/sglang_random_lengths.py
"""
import json
import pathlib
import sys

import numpy as np

root = pathlib.Path(__file__).resolve().parent.parent
bad = checked = 0
for line in open(root / "data/validation/points.jsonl"):
    if not line.strip():
        continue
    p = json.loads(line)
    w = p["workload"]
    rule = w.get("lens_rule")
    if rule is None:
        continue
    n = len(w["input_lens"])
    np.random.seed(rule["seed"])
    ratio = rule["range_ratio"]
    ins = np.random.randint(max(int(w["input_tokens"] * ratio), 1), w["input_tokens"] + 1, size=n)
    outs = np.random.randint(int(w["output_tokens"] * ratio), w["output_tokens"] + 1, size=n)
    ok = (ins.tolist() == w["input_lens"] and outs.tolist() == w["output_lens"]
          and int(ins.sum()) == rule["total_input_tokens"]
          and int(outs.sum()) == rule["total_output_tokens"])
    checked += 1
    if not ok:
        bad += 1
        print(f"{p['id']}: the redrawn lengths differ from the point's or from the published totals")
print(f"{checked} points checked, {bad} differ")
sys.exit(1 if bad or not checked else 0)
