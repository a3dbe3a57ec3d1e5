#!/usr/bin/python3
"""Writes tests/data/percentiles_numpy.json: numpy's percentiles, mean and std for fixed data sets.

The C++ test (tests/metrics/stats_test.cc) checks src/metrics/stats.cc against these values, so our
percentiles are numpy's default (method="linear"), the one `vllm bench serve` reports.
Needs numpy only here (Debian: python3-numpy); the build and tests read the committed JSON.
Run from the repository root: /usr/bin/python3 scripts/gen_percentile_golden.py
"""
import json
import pathlib

import numpy as np

QUANTILES = [0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100]


def data_sets():
    rng = np.random.default_rng(20240601)
    yield "size1", [42.5]
    yield "size2", [10.0, 20.0]
    yield "size3", [3.0, 1.0, 2.0]
    yield "size10", [float(v) for v in rng.uniform(0, 100, 10)]
    yield "size101", [float(v) for v in rng.normal(250, 40, 101)]
    yield "size1000_random", [float(v) for v in rng.uniform(5, 500, 1000)]
    yield "ties", [7.0] * 5 + [3.0] * 4 + [9.0] * 6 + [1.0]
    # Heavy tail: mostly steady ITLs with a few multi-second stalls, the shape P99 exists for.
    tail = list(rng.lognormal(np.log(30), 0.2, 990)) + list(rng.uniform(1000, 5000, 10))
    yield "heavy_tail", [float(v) for v in tail]


def main():
    cases = []
    for name, xs in data_sets():
        arr = np.array(xs, dtype=np.float64)
        cases.append({
            "name": name,
            "data": xs,
            "quantiles": QUANTILES,
            "percentiles": [float(np.percentile(arr, q)) for q in QUANTILES],
            "mean": float(np.mean(arr)),
            "std": float(np.std(arr)),
        })
    out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "percentiles_numpy.json"
    doc = {"generator": "scripts/gen_percentile_golden.py", "numpy_version": np.__version__,
           "method": "linear", "cases": cases}
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
