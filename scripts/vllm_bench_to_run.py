#!/usr/bin/env python3
"""A `vllm bench serve --save-result --save-detailed` JSON as a tokperf run folder, so that
`tokperf sim calibrate` (and `tokperf report`) can read a run measured with vLLM's client.

Each JSON becomes one closed-loop level of `max_concurrency` users (its requests in send order,
all measured: vLLM's client has no warm-up phase) in OUT_DIR/summary.json and
OUT_DIR/requests.jsonl: send time, TTFT and the gaps between chunks as the client recorded them,
prompt and output tokens from its input_lens / output_lens. Several files become several levels of
one folder, in the order given. Failed requests (an error text, or no TTFT) are written as failed.

    python3 scripts/vllm_bench_to_run.py OUT_DIR RUN.json [RUN.json ...]
"""
import json
import os
import sys


def level_of(path, index):
    with open(path) as f:
        d = json.load(f)
    need = ("start_times", "ttfts", "itls", "input_lens", "output_lens")
    missing = [k for k in need if k not in d]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)} (save it with vllm bench serve "
                         "--save-result --save-detailed)")
    concurrency = d.get("max_concurrency")
    if not concurrency:
        raise ValueError(f"{path}: no max_concurrency: only closed-loop runs "
                         "(--max-concurrency C) are converted")
    errors = d.get("errors") or [""] * len(d["ttfts"])
    t0 = min(d["start_times"])
    records = []
    order = sorted(range(len(d["start_times"])), key=lambda i: d["start_times"][i])
    for seq, i in enumerate(order):
        start_us = int(round((d["start_times"][i] - t0) * 1e6)) + 1_700_000_000_000_000
        ttft, itls = d["ttfts"][i], d["itls"][i] or []
        ok = bool(ttft) and not errors[i]
        rec = {"seq": seq, "request_id": f"vllm-{index}-{i}", "phase": "measure", "level": index,
               "start_unix_us": start_us, "queue_ms": 0.0, "http_status": 200 if ok else 0,
               "prompt_tokens": d["input_lens"][i], "requested_input_tokens": d["input_lens"][i],
               "ok": ok, "schema_version": 1}
        if ok:
            gaps_ms = [g * 1e3 for g in itls]
            rec.update({"token_events": 1 + len(gaps_ms), "ttft_ms": ttft * 1e3,
                        "itl_ms": gaps_ms, "end_ms": ttft * 1e3 + sum(gaps_ms),
                        "output_tokens": d["output_lens"][i], "output_tokens_source": "usage",
                        "chunks": 1 + len(gaps_ms), "saw_done": True, "error": None})
        else:
            rec.update({"token_events": 0, "error": {"kind": "http",
                                                     "message": errors[i] or "no first token"}})
        records.append(rec)
    lens = sorted(d["input_lens"])
    level = {"label": f"c={concurrency} in={lens[len(lens) // 2]}", "concurrency": concurrency,
             "load": {"mode": "closed_loop"}, "source": os.path.basename(path)}
    return level, records


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, files = sys.argv[1], sys.argv[2:]
    levels, records = [], []
    try:
        for index, path in enumerate(files):
            level, recs = level_of(path, index)
            levels.append(level)
            records.extend(recs)
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"vllm_bench_to_run: {e}", file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    summary = {"command": "bench", "converted_from": "vllm bench serve --save-detailed",
               "config": {"load": {"max_concurrency": 0}}, "levels": levels}
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(out_dir, "requests.jsonl"), "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    print(f"wrote {out_dir}: {len(levels)} levels, {len(records)} requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
