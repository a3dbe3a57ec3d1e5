#!/usr/bin/env python3
"""scripts/stream_spacing.py recovers a known per-token spacing and step time: from a vllm bench
JSON built here with a step every 25 ms whose tokens arrive 70 us apart, and from a tokperf sim run
whose front end passes each streamed token in 100 us (--frontend-us-per-token 100); and the first
wave's first token: 0.1 s in the built file, and in a simulated burst far earlier when the front
end passes outputs before queued set-ups (--knob outputs_before_setups=1) than when it does not.
Usage: stream_spacing_test.py TOKPERF."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "stream_spacing.py")


def measured(args):
    out = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"stream_spacing.py {args} exited {out.returncode}: {out.stdout}{out.stderr}")
    m = re.search(r"median over \d+ levels: ([0-9.]+) us a token", out.stdout)
    if not m:
        sys.exit(f"no median in: {out.stdout}")
    return float(m.group(1)), out.stdout


def main():
    tokperf = sys.argv[1]
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        # 40 streams, a step every 25 ms, each step's tokens handed out 70 us apart in a new order.
        n, steps, spacing = 40, 60, 70e-6
        times = [[] for _ in range(n)]
        for k in range(steps):
            order = list(range(n))
            rng.shuffle(order)
            for i, s in enumerate(order):
                times[s].append(1.0 + 0.025 * k + i * spacing)
        bench = {"max_concurrency": n, "start_times": [0.9] * n,
                 "ttfts": [t[0] - 0.9 for t in times],
                 "itls": [[b - a for a, b in zip(t, t[1:])] for t in times]}
        path = os.path.join(tmp, "bench.json")
        with open(path, "w") as f:
            json.dump(bench, f)
        us, text = measured([path])
        if abs(us - 70.0) > 0.5:
            sys.exit(f"built with 70 us a token, measured {us}: {text}")
        if "first wave: first token 0.100 s after the first send, median 0.101 s" not in text:
            sys.exit(f"built with the first tokens 0.1 s after the sends: {text}")
        step = re.search(r"decode-only steps ([0-9.]+) ms", text)
        if not step or abs(float(step.group(1)) - 25.0) > 0.05:
            sys.exit(f"built with 25 ms decode steps: {text}")
        # The simulator's own front end at 100 us a token, 16 and 32 streams.
        run = os.path.join(tmp, "run")
        subprocess.run([tokperf, "sim", "run", "--model", "llama-3.1-8b", "--gpu", "h100",
                        "--frontend-us-per-token", "100", "-c", "16,32", "--requests", "48",
                        "--input-tokens", "256", "--output-tokens", "64", "--ignore-eos",
                        "--no-history", "--out", run], check=True, capture_output=True)
        us, text = measured([run])
        if abs(us - 100.0) > 2:
            sys.exit(f"sim run at 100 us a token, measured {us}: {text}")
        # A burst of 40: the first token waits for all 40 set-ups (5.52 ms each) unless the front
        # end passes outputs first.
        def first_token(extra):
            burst = os.path.join(tmp, "burst" + str(len(extra)))
            subprocess.run([tokperf, "sim", "run", "--model", "llama-3.1-8b", "--gpu", "h100",
                            "-r", "inf", "--max-concurrency", "40", "--requests", "40",
                            "--input-tokens", "128", "--output-tokens", "16", "--ignore-eos",
                            "--no-history", "--out", burst] + extra, check=True,
                           capture_output=True)
            out = subprocess.run([sys.executable, SCRIPT, burst], capture_output=True, text=True)
            m = re.search(r"first wave: first token ([0-9.]+) s", out.stdout)
            if not m:
                sys.exit(f"no first wave in: {out.stdout}{out.stderr}")
            return float(m.group(1))
        fifo, first = first_token([]), first_token(["--knob", "outputs_before_setups=1"])
        if fifo < 40 * 0.00552 or first > 0.25 * fifo:
            sys.exit(f"burst's first token: {fifo} s behind every set-up, {first} s outputs first")
        # A file that is not a detailed bench result is refused by name.
        bad = os.path.join(tmp, "summary-only.json")
        with open(bad, "w") as f:
            json.dump({"max_concurrency": 4}, f)
        out = subprocess.run([sys.executable, SCRIPT, bad], capture_output=True, text=True)
        if out.returncode != 2 or "--save-detailed" not in out.stderr:
            sys.exit(f"summary-only file: rc {out.returncode}: {out.stderr}")
    print("ok")


if __name__ == "__main__":
    main()
