#!/usr/bin/env python3
"""Writes tests/data/golden/requests.jsonl: the fixed input of the summary.json golden test
(tests/report/summary_golden_test.cc). Two closed-loop levels (c=1, c=4) with warm-up, measured and
cool-down requests, reasoning tokens, usage-reported and counted output lengths, and failed requests
(HTTP 500, timeout, mid-stream drop). Deterministic (seeded); run it only to change the input, then
regenerate summary.json as docs/TESTING.md says and review both diffs."""
import json
import random

rng = random.Random(20261201)
START_US = 1_764_547_200_000_000  # 2025-12-01T00:00:00Z, label only
lines = []
seq = 0
t_us = START_US
for level, conc in ((0, 1), (1, 4)):
    phases = ["warmup"] * conc + ["measure"] * 12 + ["cooldown"] * 2
    for i, phase in enumerate(phases):
        seq += 1
        queue_ms = 0.0 if conc == 1 else rng.choice([0.0, 0.0, 1.25, 3.5])
        ttft = round(rng.uniform(30, 90) * (1 if conc == 1 else 1.8), 3)
        n = rng.randint(6, 16)
        reasoning = 2 if seq % 5 == 0 else 0
        token_ms, chars = [], []
        t = ttft
        for k in range(n):
            token_ms.append(round(t, 3))
            chars.append(0 if k < reasoning else rng.randint(1, 6))
            t += rng.uniform(8, 14) * (1 if conc == 1 else 1.4)
        error = None
        http_status = 200
        fail = phase == "measure" and (seq % 7 == 3)
        if fail and seq % 2 == 1:
            error = {"kind": "http", "http_status": 500, "message": "HTTP 500: overloaded"}
            http_status = 500
            token_ms, chars = [], []
            end_ms = round(rng.uniform(2, 5), 3)
        elif fail:
            error = {"kind": "incomplete", "http_status": None,
                     "message": "connection closed mid-stream"}
            token_ms, chars = token_ms[:3], chars[:3]
            end_ms = round(token_ms[-1] + 1.5, 3)
        else:
            end_ms = round(token_ms[-1] + 0.25, 3)
        from_usage = seq % 3 != 0 and error is None
        lines.append({
            "seq": seq, "request_id": f"tpgolden-{seq}", "phase": phase, "level": level,
            "ok": error is None, "error": error, "http_status": http_status,
            "start_unix_us": t_us, "queue_ms": queue_ms,
            "connect_ms": 0.5 if i < conc else 0.0, "ttfb_ms": round(ttft * 0.9, 3) if token_ms else 2.0,
            "token_ms": token_ms, "content_chars": chars,
            "output_tokens": len(token_ms) + (1 if from_usage else 0),
            "output_tokens_source": "usage" if from_usage else "counted",
            "prompt_tokens": 128 if seq % 4 else None,
            "chunks": len(token_ms) + 1, "saw_done": error is None,
            "end_ms": end_ms,
        })
        t_us += int((end_ms + 0.5) * 1000) // conc
with open("tests/data/golden/requests.jsonl", "w") as f:
    for line in lines:
        f.write(json.dumps(line, sort_keys=True) + "\n")
print(len(lines), "records")
