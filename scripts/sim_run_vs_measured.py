#!/usr/bin/env python3
"""Predict measured closed-loop bench runs with `tokperf sim run` and print the error per level.

For each RUN_DIR (a `tokperf bench` output folder of a closed loop at fixed lengths, --ignore-eos)
this runs `tokperf sim run` with the given flags at the run's own concurrencies, measured request
count, output length and the prompt length the server counted (usage), then compares, per level,
the per-request quantiles P25, P50, P75, P95 (nearest rank over the measured requests) of TTFT and
TPOT, and the summary's P50 and output tok/s. The last lines are the median |error| over the
levels with at least --min-users users. Used for docs/SIMULATOR.md, "Twenty-ninth change":

  scripts/sim_run_vs_measured.py tests/data/calibration/llamacpp-tiny-cpu-fewusers/prompt448 ... -- \\
    --calibration tests/data/calibration/llamacpp-tiny-cpu-slots/fit-np8-standin.json \\
    --model-config tests/data/calibration/llamacpp-tiny-cpu/model_config.json \\
    --gpu-spec tests/data/calibration/llamacpp-tiny-cpu/cpu_spec.json --dtype fp16 --engine vllm-0.13 \\
    --max-num-seqs 8 --max-num-batched-tokens 2048
"""
import argparse, json, math, os, statistics, subprocess, sys, tempfile

QUANTILES = (25, 50, 75, 95)


def nearest_rank(xs, q):
    xs = sorted(xs)
    return xs[max(1, math.ceil(q / 100 * len(xs))) - 1]


def per_level(run_dir):
    """{level: {'ttft': [...], 'tpot': [...]}} over the measured requests that succeeded."""
    out = {}
    with open(os.path.join(run_dir, 'requests.jsonl')) as f:
        for line in f:
            r = json.loads(line)
            if r['phase'] != 'measure' or not r['ok']:
                continue
            lv = out.setdefault(r['level'], {'ttft': [], 'tpot': []})
            lv['ttft'].append(r['ttft_ms'])
            lv['tpot'].append(r['tpot_ms'])
    return out


def summary_levels(run_dir):
    with open(os.path.join(run_dir, 'summary.json')) as f:
        s = json.load(f)
    return s, {l['level']: l for l in s['levels']}


def main():
    argv = sys.argv[1:]
    sim_flags = []
    if '--' in argv:
        i = argv.index('--')
        argv, sim_flags = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('runs', nargs='+', metavar='RUN_DIR')
    ap.add_argument('--tokperf', default='./build/tokperf', help='the tokperf binary')
    ap.add_argument('--min-users', type=int, default=2, help='levels counted in the medians')
    args = ap.parse_args(argv)
    errors = []  # (metric, |error| %)
    with tempfile.TemporaryDirectory() as tmp:
        for run in args.runs:
            s, measured = summary_levels(run)
            reqs = per_level(run)
            prompt = int(statistics.median(
                json.loads(x)['prompt_tokens'] for x in open(os.path.join(run, 'requests.jsonl'))))
            users = [measured[lv]['concurrency'] for lv in sorted(measured)]
            out = os.path.join(tmp, os.path.basename(os.path.normpath(run)))
            cmd = [args.tokperf, 'sim', 'run', *sim_flags, '--input-tokens', str(prompt),
                   '--output-tokens', str(s['config']['prompt']['output_tokens']), '--ignore-eos',
                   '-c', ','.join(map(str, users)),
                   '-n', str(s['config']['load']['measure']['requests']), '--no-history', '--out', out]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f'{" ".join(cmd)} failed:\n{done.stderr}')
            _, predicted = summary_levels(out)
            sim = per_level(out)
            print(f'{run}: {prompt}-token prompts (usage)')
            for lv in sorted(measured):
                m, p = measured[lv], predicted[lv]
                cells = []
                for metric in ('ttft', 'tpot'):
                    for q in QUANTILES:
                        a, b = nearest_rank(sim[lv][metric], q), nearest_rank(reqs[lv][metric], q)
                        e = 100 * (a / b - 1)
                        cells.append(f'{metric.upper()} P{q} {a:.1f}/{b:.1f} ({e:+.0f}%)')
                        if m['concurrency'] >= args.min_users:
                            errors.append((metric + ' quantiles', abs(e)))
                for name, key in (('TTFT P50', lambda l: l['ttft_ms']['p50']),
                                  ('TPOT P50', lambda l: l['tpot_ms']['p50']),
                                  ('output tok/s', lambda l: l['throughput']['output_tokens_per_s'])):
                    e = 100 * (key(p) / key(m) - 1)
                    if m['concurrency'] >= args.min_users:
                        errors.append((name, abs(e)))
                    if name == 'output tok/s':
                        cells.append(f'out {key(p):.1f}/{key(m):.1f} ({e:+.0f}%)')
                print(f'  c={m["concurrency"]}: ' + '  '.join(cells) + '   (simulated/measured)')
    print(f'median |error| over the levels with >= {args.min_users} users:')
    for name in ('ttft quantiles', 'tpot quantiles', 'TTFT P50', 'TPOT P50', 'output tok/s'):
        e = [x for n, x in errors if n == name]
        if e:
            print(f'  {name:15s} {statistics.median(e):5.1f}%  ({len(e)} values)')


if __name__ == '__main__':
    main()
