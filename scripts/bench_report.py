#!/usr/bin/env python3
"""Formats the raw output of scripts/bench.sh into docs/BENCHMARKS.md (medians over repetitions)."""
import json, os, platform, statistics, subprocess, sys, datetime

raw, cores = sys.argv[1], sys.argv[2]

def lines(name):
    p = os.path.join(raw, name)
    if not os.path.exists(p):
        return []
    return [json.loads(l) for l in open(p) if l.strip().startswith('{')]

def med(xs):
    return statistics.median(xs) if xs else float('nan')

def cpu_model():
    try:
        for l in open('/proc/cpuinfo'):
            if l.startswith('model name'):
                return l.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor()

commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
print('# Benchmarks\n')
print(f'Written by `scripts/bench.sh` on {datetime.date.today()} at commit `{commit}`: {cores} cores '
      f'({cpu_model()}), shared with other work, so every figure is the median of the repetitions and '
      'tokperf is compared with its reference inside the same run. Server and client share the '
      'machine (loopback), so the figures include the server\'s own scheduling noise.\n')

s = lines('streams.jsonl')
if s:
    print('## Timestamp error under many concurrent streams (issue 2)\n')
    print('`bench/stream_timestamp_bench`: N streams from a loopback scripted server, one token event '
          'every 20 ms each (all streams in step, like an engine\'s batch); error = client stamp − the '
          'server\'s send time, per event. "floor" is a minimal epoll reader that only timestamps its '
          'reads. Goal: P99 ≤ 1 ms.\n')
    print('| streams | client | error P50 (ms) | error P99 (ms) | error max (ms) | CPU µs / event |')
    print('|---:|---|---:|---:|---:|---:|')
    keys = sorted({(r['streams'], r['client']) for r in s}, key=lambda k: (k[0], k[1] != 'tokperf'))
    best = {}
    for n, c in keys:
        rs = [r for r in s if r['streams'] == n and r['client'] == c]
        p99 = med([r['err_p99_ms'] for r in rs])
        print(f"| {n} | {c} | {med([r['err_p50_ms'] for r in rs]):.3f} | {p99:.3f} | "
              f"{med([r['err_max_ms'] for r in rs]):.2f} | {med([r['cpu_us_per_event'] for r in rs]):.1f} |")
        best.setdefault(c, []).append((n, p99))
    for c, pts in best.items():
        ok = [n for n, p in pts if p <= 1.0]
        print(f"\nHighest stream count with {c} error P99 ≤ 1 ms: **{max(ok) if ok else 'none'}**"
              f" (of {', '.join(str(n) for n, _ in pts)} tried).")
    print()

c = lines('churn.jsonl')
if c:
    print('## Churn: in-phase refill, one event loop against two (issue 12)\n')
    print('`bench/stream_timestamp_bench --rounds 3 --threads 1,2`: as above, but every stream is '
          'refilled the moment it ends (a closed loop whose streams all start in phase, 3 measured '
          'requests per slot after one warm-up round), so request set-up lands in bursts; tokperf on '
          '1 and 2 event loops (`--threads`), the floor (one epoll loop, keep-alive refill) in the same '
          'run. CPU = the client\'s loop threads\' own.\n')
    print('| streams | client | loops | first-token error P99 (ms) | error P50 (ms) | error P99 (ms) | '
          'error max (ms) | CPU µs / event |')
    print('|---:|---|---:|---:|---:|---:|---:|---:|')
    keys = sorted({(r['streams'], r['client'], r.get('loops', 1)) for r in c},
                  key=lambda k: (k[0], k[1] != 'tokperf', k[2]))
    for n, cl, lp in keys:
        rs = [r for r in c if r['streams'] == n and r['client'] == cl and r.get('loops', 1) == lp]
        print(f"| {n} | {cl} | {lp} | {med([r['first_err_p99_ms'] for r in rs]):.3f} | "
              f"{med([r['err_p50_ms'] for r in rs]):.3f} | {med([r['err_p99_ms'] for r in rs]):.3f} | "
              f"{med([r['err_max_ms'] for r in rs]):.2f} | {med([r['cpu_us_per_event'] for r in rs]):.1f} |")
    print()

p = lines('pacing.jsonl')
if p:
    print('## Open-loop pacing (issue 3)\n')
    print('`bench/open_loop_pacing_bench`: constant arrivals at the target rate for 3 s against a '
          'loopback server; send lag = when the request was dispatched − its intended start. Goal: '
          'achieved within 0.5% of the schedule, send-lag P99 ≤ 200 µs up to 2,000 req/s.\n')
    print('| target req/s | achieved req/s | vs schedule | send lag P50 (µs) | send lag P99 (µs) | client CPU (s) |')
    print('|---:|---:|---:|---:|---:|---:|')
    for rate in sorted({r['target_rps'] for r in p}):
        rs = [r for r in p if r['target_rps'] == rate]
        print(f"| {rate:,.0f} | {med([r['achieved_rps'] for r in rs]):,.1f} | "
              f"{med([r['achieved_vs_schedule_pct'] for r in rs]):+.3f}% | "
              f"{med([r['send_lag_p50_us'] for r in rs]):.0f} | {med([r['send_lag_p99_us'] for r in rs]):.0f} | "
              f"{med([r['client_cpu_s'] for r in rs]):.2f} |")
    print()

def gbench(name):
    path = os.path.join(raw, name)
    if not os.path.exists(path):
        return []
    try:
        return json.load(open(path)).get('benchmarks', [])
    except json.JSONDecodeError:
        return []

b = gbench('parse.json')
meds = [x for x in b if x.get('aggregate_name') == 'median'] or [x for x in b if x.get('run_type') != 'aggregate']
if meds:
    print('## Stream parsing (SSE + chunk classification)\n')
    print('`bench/sse_parse_bench`: a realistic chat stream fed in reads of the given size; median of '
          'the repetitions.\n')
    print('| benchmark | time per iteration | events/s | ns per event |')
    print('|---|---:|---:|---:|')
    for x in meds:
        ips = x.get('items_per_second')
        name = x.get('run_name', x['name'])
        per = f"{1e9 / ips:.0f}" if ips else ''
        print(f"| {name} | {x['real_time']:,.0f} {x['time_unit']} | {ips:,.0f} | {per} |" if ips else
              f"| {name} | {x['real_time']:,.0f} {x['time_unit']} | | |")
    print()

b = gbench('sim_offline.json')
if b:
    print('## Offline simulation (issue 4)\n')
    print('100,000 closed-loop requests (concurrency 256, 512-token prompts) through the engine in '
          'virtual time. Goal: ≤ 1 s.\n')
    print('| benchmark (arg = output tokens) | wall time | CPU time |')
    print('|---|---:|---:|')
    for x in b:
        print(f"| {x['name']} | {x['real_time']:.0f} {x['time_unit']} | {x['cpu_time']:.0f} {x['time_unit']} |")
    print()

ss = lines('sim_serve.jsonl')
if ss:
    print('## Simulated engine behind HTTP (issue 4)\n')
    print(f"`bench/sim_serve_bench`: `sim serve` ({ss[0]['deployment'].split(';')[0]}) on one core "
          'while tokperf\'s runner measures it in the same process; server lag = how late engine '
          'steps fire against their deadlines; emit = time to write one step\'s chunks to every stream.\n')
    print('| streams | ok / failed | tokens | server CPU (share of a core) | µs per token | server lag P50 / P99 / max (ms) | emit mean / max (ms) | client TTFT P50 (ms) | client ITL P50 / P99 (ms) |')
    print('|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for r in ss:
        print(f"| {r['streams']} | {r['ok']} / {r['failed']} | {r['tokens']:,} | {r['server_cpu_s']:.2f} s ({100 * r['server_cpu_share']:.0f}%) | "
              f"{r['server_us_per_token']:.1f} | {r['server_lag_p50_ms']:.2f} / {r['server_lag_p99_ms']:.2f} / {r['server_lag_max_ms']:.2f} | "
              f"{r['emit_mean_ms']:.1f} / {r['emit_max_ms']:.1f} | {r['client_ttft_p50_ms']:.0f} | {r['client_itl_p50_ms']:.1f} / {r['client_itl_p99_ms']:.1f} |")
    print()
mc = lines('memory.jsonl')
if mc:
    print('## Memory and write time against the request count (issue 12)\n')
    print('`scripts/memory_curve.sh`: `tokperf sim run` (virtual time, so no server is measured) '
          'writing every output file (requests.jsonl, summary.json, timeseries.csv, report.html). '
          'Records are streamed to disk as they finish and folded into bounded per-level state '
          '(docs/metrics.md, "Bounded memory"). Goals: 1,000,000 requests x 256 tokens under '
          '1 GB peak RSS; 100,000 x 128 tokens in <= 3 s and <= 500 MB.\n')
    print('| requests | output tokens | peak RSS (MB) | wall (s) | user + sys CPU (s) | requests.jsonl (MB) |')
    print('|---:|---:|---:|---:|---:|---:|')
    for r in mc:
        print(f"| {r['requests']:,} | {r['output_tokens']} | {r['peak_rss_mb']:.0f} | {r['wall_s']:.2f} | "
              f"{float(r['user_s']) + float(r['sys_s']):.2f} | {r['requests_jsonl_mb']:,.0f} |")
    print()
print('''## Precision goals kept out of the test suite

ctest asserts behaviour only (never early, in order, counted once, same schedule for the same seed,
queue rules), because it runs on a shared, busy 2-core machine and under ASan. The precision goals
those tests used to assert live here, measured on a quiet machine with a reference in the same run:

| goal (quiet machine) | measured by |
|---|---|
| client stamp error P99 <= 1 ms vs the server's send (was `StampAccuracy.*`, a 2 ms bound) | `stream_timestamp_bench` (above) |
| scripted server sends within 2 ms of their schedule (was `ScriptedServerTest.*`, 2/10 ms bounds) | `stream_timestamp_bench` ("floor" column: server + loopback) |
| open-loop send lag P50 < 1 ms, P99 < 10 ms (was `LoadShapesE2E.*`) | `open_loop_pacing_bench` (above; goal 200 µs) |
| measured TTFT/TPOT within a few ms of the scripted server's (was `BenchRunnerE2E.*`, `LoadShapesE2E.*`) | `stream_timestamp_bench` |
| `sim serve` + `bench` within 5% (TTFT) / 3% (TPOT) of the offline runner on the same workload (was `SimServer.BenchAgreesWithTheOfflineRunnerOnTheSameWorkload`; the test now checks never-faster and within 3x) | not yet automated in bench/: compare `sim_serve_bench`'s client TTFT/ITL with `tokperf sim run` by hand |''')
print()
print('Reproduce: `scripts/bench.sh` (about 5 minutes; `--quick` for a smaller run).')
