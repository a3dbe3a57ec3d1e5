#!/usr/bin/env python3
"""How far apart the tokens of one engine step reach the client: the serial per-token cost of a
server's stream path (its front end, or the client's loop where that is slower); and how long
the server's decode-only steps last.

An engine step gives every running stream one token; a serving front end that handles the streams
one after another hands them to the client spread over (n - 1) x its per-token cost. Grouping all
streams' token arrivals into steps (arrivals closer than --gap apart) and taking the steps that
carry at least --share of the streams a step usually carries gives that spread per token. The median over those
steps is printed per file, then the median over the files. The time from one such step to the
next, where neither carries a stream's first token (no prefill finished in it), is a decode-only
step: its median is printed beside. For the first wave (the level's first `concurrency` requests,
sent together by a burst or a closed loop's start), it prints when the first of them got its first
token and the median of their first tokens, from the first send: a front end that serves every
queued set-up before any output holds the first token back until the whole wave is set up.

Reads `vllm bench serve --save-result --save-detailed` JSON (start_times, ttfts, itls,
max_concurrency) and tokperf run folders (summary.json + requests.jsonl: start_unix_us, token_ms,
level). docs/SIMULATOR.md, "Thirtieth change", measured the vllm preset's
CostKnobs::output_overhead_s this way.

    python3 scripts/stream_spacing.py RUN.json ... [--gap SECONDS] [--share 0.9]
"""
import argparse
import json
import os
import statistics
import sys


def streams_from_vllm_json(path):
    with open(path) as f:
        d = json.load(f)
    for key in ("start_times", "ttfts", "itls"):
        if key not in d:
            raise ValueError(f"{path}: no '{key}' (save it with vllm bench serve --save-detailed)")
    streams, starts = [], []
    for start, ttft, itls in zip(d["start_times"], d["ttfts"], d["itls"]):
        if ttft is None or not ttft:
            continue
        t = start + ttft
        times = [t]
        for gap in itls:
            t += gap
            times.append(t)
        streams.append(times)
        starts.append(start)
    concurrency = d.get("max_concurrency") or d.get("max_concurrent_requests") or len(streams)
    return [(os.path.basename(path), concurrency, streams, starts)]


def streams_from_tokperf_run(folder):
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    by_level, starts_by_level = {}, {}
    with open(os.path.join(folder, "requests.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if not r.get("ok") or not r.get("token_ms"):
                continue
            start_s = r["start_unix_us"] / 1e6
            by_level.setdefault(r["level"], []).append([start_s + t / 1e3 for t in r["token_ms"]])
            starts_by_level.setdefault(r["level"], []).append(start_s)
    out = []
    for i, level in enumerate(summary.get("levels", [])):
        streams = by_level.get(i, [])
        concurrency = level.get("concurrency") or max(1, len(streams))
        out.append((f"{os.path.basename(folder.rstrip('/'))} {level.get('label', i)}", concurrency,
                    streams, starts_by_level.get(i, [])))
    return out


def first_wave(streams, starts, concurrency):
    """(first, median) first-token time of the level's first `concurrency` requests by send time,
    in seconds from the first send; None when there are none."""
    if not streams:
        return None
    t0 = min(starts)
    wave = sorted(range(len(starts)), key=lambda i: starts[i])[:max(1, int(concurrency))]
    firsts = sorted(streams[i][0] - t0 for i in wave)
    return firsts[0], statistics.median(firsts)


def measure(streams, gap_s, share):
    """Groups every stream's token arrivals into steps and returns (spacing in us, the steps it
    was taken from, all steps, median decode-only step in ms, decode-only steps). Spacing: the
    median spread per token over the steps that carry `share` of the streams a step usually
    carries (the 90th percentile of step sizes: the level's concurrency, or the server's slots
    where those are fewer). Decode-only step: the time from one such step to the next when
    neither carries a stream's first token. gap_s None: a fifth of the median gap within a
    stream."""
    if gap_s is None:
        itls = [b - a for s in streams for a, b in zip(s, s[1:])]
        if not itls:
            return None, 0, 0, None, 0
        gap_s = 0.2 * statistics.median(itls)
    arrivals = sorted((t, i == 0) for s in streams for i, t in enumerate(s))
    steps = []  # [first, last, count, first tokens]
    for t, first in arrivals:
        if steps and t - steps[-1][1] < gap_s:
            steps[-1][1] = t
            steps[-1][2] += 1
            steps[-1][3] += first
        else:
            steps.append([t, t, 1, int(first)])
    sizes = sorted(s[2] for s in steps)
    need = max(2, share * sizes[int(0.9 * (len(sizes) - 1))]) if sizes else 2
    full = [(last - first) / (n - 1) * 1e6 for first, last, n, _ in steps if n >= need]
    decode = [(b[0] - a[0]) * 1e3 for a, b in zip(steps, steps[1:])
              if a[2] >= need and b[2] >= need and a[3] == 0 and b[3] == 0]
    return ((statistics.median(full) if full else None), len(full), len(steps),
            (statistics.median(decode) if decode else None), len(decode))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="vllm bench JSON files or tokperf run folders")
    ap.add_argument("--gap", type=float, default=None,
                    help="arrivals closer than this (s) belong to one step (default: a fifth of "
                    "the median gap between one stream's tokens)")
    ap.add_argument("--share", type=float, default=0.9,
                    help="steps counted must carry this share of the streams a step usually "
                    "carries (0.9)")
    a = ap.parse_args()
    medians = []
    for run in a.runs:
        try:
            levels = (streams_from_tokperf_run(run) if os.path.isdir(run)
                      else streams_from_vllm_json(run))
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
            print(f"stream_spacing: {run}: {e}", file=sys.stderr)
            return 2
        for name, concurrency, streams, starts in levels:
            wave = first_wave(streams, starts, concurrency)
            if wave is not None:
                print(f"{name}: c={concurrency}: first wave: first token {wave[0]:.3f} s after the "
                      f"first send, median {wave[1]:.3f} s")
            if concurrency < 2:
                print(f"{name}: c={concurrency}: one stream, no spacing to measure")
                continue
            us, used, steps, step_ms, decode_steps = measure(streams, a.gap, a.share)
            if us is None:
                print(f"{name}: c={concurrency}: no step of several streams ({steps} steps)")
                continue
            medians.append(us)
            decode = (f"; decode-only steps {step_ms:.2f} ms (median of {decode_steps})"
                      if step_ms is not None else "")
            print(f"{name}: c={concurrency}: {us:.1f} us a token (median of {used} of {steps} "
                  f"steps){decode}")
    if not medians:
        print("stream_spacing: nothing measured", file=sys.stderr)
        return 1
    print(f"median over {len(medians)} levels: {statistics.median(medians):.1f} us a token")
    return 0


if __name__ == "__main__":
    sys.exit(main())
