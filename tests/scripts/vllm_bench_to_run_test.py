#!/usr/bin/env python3
"""scripts/vllm_bench_to_run.py: a vllm bench --save-detailed JSON becomes a run folder that
sim calibrate reads with the same figures (median TTFT and TPOT of the requests, one closed-loop
level of max_concurrency users), a failed request stays failed, and a file without the detailed
arrays is refused by name. Usage: vllm_bench_to_run_test.py TOKPERF."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "vllm_bench_to_run.py")


def main():
    tokperf = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        n = 12
        bench = {"max_concurrency": 4,
                 "start_times": [100.0 + 0.05 * i for i in range(n)],
                 "ttfts": [0.020 + 0.001 * i for i in range(n)],
                 "itls": [[0.010 + 0.0001 * i] * 15 for i in range(n)],
                 "input_lens": [256] * n, "output_lens": [16] * n,
                 "errors": [""] * n}
        bench["ttfts"][5], bench["itls"][5], bench["errors"][5] = None, [], "HTTP 500"
        src = os.path.join(tmp, "bench.json")
        with open(src, "w") as f:
            json.dump(bench, f)
        out = os.path.join(tmp, "run")
        r = subprocess.run([sys.executable, SCRIPT, out, src], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"convert: rc {r.returncode}: {r.stderr}")
        cal = subprocess.run([tokperf, "sim", "calibrate", out, "--model", "llama-3.1-8b", "--gpu",
                              "h100", "--fit", "step_overhead_s", "--rounds", "1", "--no-check",
                              "--json"], capture_output=True, text=True)
        if cal.returncode != 0:
            sys.exit(f"sim calibrate: rc {cal.returncode}: {cal.stdout}{cal.stderr}")
        j = json.loads(cal.stdout)
        if len(j["levels"]) != 1 or "c=4" not in j["levels"][0]["label"]:
            sys.exit(f"levels: {j['levels']}")
        m = j["levels"][0]["measured"]
        ok = [i for i in range(n) if i != 5]
        want_ttft = statistics.median(bench["ttfts"][i] * 1e3 for i in ok)
        want_tpot = statistics.median(bench["itls"][i][0] * 1e3 for i in ok)
        if abs(m["ttft_p50_ms"] - want_ttft) > 1e-3 or abs(m["tpot_p50_ms"] - want_tpot) > 1e-3:
            sys.exit(f"measured {m}, want TTFT {want_ttft} TPOT {want_tpot}")
        if not any("1 failed requests are not replayed" in x for x in j["notes"]):
            sys.exit(f"the failed request: {j['notes']}")
        bad = os.path.join(tmp, "summary-only.json")
        with open(bad, "w") as f:
            json.dump({"max_concurrency": 4, "ttfts": []}, f)
        r = subprocess.run([sys.executable, SCRIPT, os.path.join(tmp, "x"), bad],
                           capture_output=True, text=True)
        if r.returncode != 2 or "--save-detailed" not in r.stderr:
            sys.exit(f"summary-only file: rc {r.returncode}: {r.stderr}")
    print("ok")


if __name__ == "__main__":
    main()
