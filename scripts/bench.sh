#!/usr/bin/env bash
# Runs the benchmarks in bench/ and writes their figures into docs/BENCHMARKS.md.
# Machines are shared and noisy: each figure is the median of --repeat runs, and tokperf is always
# measured side by side with its reference (the minimal epoll reader) in the same run.
#   scripts/bench.sh [--quick] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-bench
repeat=3
quick=0
while (($#)); do
  case "$1" in
    --quick) quick=1; repeat=1 ;;
    --build) build=$2; shift ;;
    *) echo "usage: scripts/bench.sh [--quick] [--build DIR]" >&2; exit 2 ;;
  esac
  shift
done
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTOKPERF_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j2 --target stream_timestamp_bench open_loop_pacing_bench sse_parse_bench \
  sim_offline_bench $(ls bench/sim_serve_bench.cc >/dev/null 2>&1 && echo sim_serve_bench) >/dev/null
out=$(mktemp -d)
streams="250,500,1000,2000,4000"; rates="100,1000,2000,5000"; tokens=100
churn="500,1000"
((quick)) && { streams="250,1000"; rates="100,1000"; tokens=50; churn="500"; }
for i in $(seq "$repeat"); do
  "$build/bench/stream_timestamp_bench" --streams "$streams" --itl-ms 20 --tokens "$tokens" >>"$out/streams.jsonl"
  "$build/bench/open_loop_pacing_bench" --rates "$rates" --seconds 3 >>"$out/pacing.jsonl"
  # Churn (issue 12): every stream refilled in phase as it ends; tokperf on 1 and 2 event loops.
  "$build/bench/stream_timestamp_bench" --streams "$churn" --itl-ms 20 --tokens "$tokens" --rounds 3 \
    --threads 1,2 >>"$out/churn.jsonl"
done
"$build/bench/sse_parse_bench" --benchmark_format=json --benchmark_repetitions="$repeat" >"$out/parse.json" 2>/dev/null
"$build/bench/sim_offline_bench" --benchmark_format=json >"$out/sim_offline.json" 2>/dev/null
cmake --build "$build" -j2 --target tokperf >/dev/null
if ((quick)); then
  scripts/memory_curve.sh --build "$build" --tokens 128 10000 100000 >"$out/memory.jsonl"
else
  scripts/memory_curve.sh --build "$build" --tokens 128 100000 >"$out/memory.jsonl"
  scripts/memory_curve.sh --build "$build" --tokens 256 10000 100000 300000 1000000 >>"$out/memory.jsonl"
fi
if [ -x "$build/bench/sim_serve_bench" ]; then
  "$build/bench/sim_serve_bench" >"$out/sim_serve.jsonl" 2>/dev/null || true
fi
python3 scripts/bench_report.py "$out" "$(nproc)" >docs/BENCHMARKS.md
echo "wrote docs/BENCHMARKS.md (raw figures in $out)"
