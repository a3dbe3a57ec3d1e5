#!/usr/bin/env bash
# Peak RSS and wall time of a whole run, every output file written, against its request count
# (issue 12, "Bounded memory"): `tokperf sim run` in virtual time, so the figures measure what the
# client keeps and writes, not a server. One line per run, as JSON, on stdout.
#   scripts/memory_curve.sh [--build DIR] [--tokens N] [--concurrency C] COUNT...
# e.g. scripts/memory_curve.sh --tokens 256 10000 100000 300000 1000000
set -euo pipefail
cd "$(dirname "$0")/.."
build=build tokens=256 concurrency=256 input=512
counts=()
while (($#)); do
  case "$1" in
    --build) build=$2; shift ;;
    --tokens) tokens=$2; shift ;;
    --concurrency) concurrency=$2; shift ;;
    --input) input=$2; shift ;;
    -*) echo "usage: scripts/memory_curve.sh [--build DIR] [--tokens N] [--concurrency C] [--input N] COUNT..." >&2; exit 2 ;;
    *) counts+=("$1") ;;
  esac
  shift
done
((${#counts[@]})) || { echo "memory_curve.sh: give at least one request count" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "memory_curve.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
for n in "${counts[@]}"; do
  out=$(mktemp -d)
  /usr/bin/time -f '%M %e %U %S' -o "$out/time" "$build/tokperf" sim run --concurrency "$concurrency" \
    --requests "$n" --input-tokens "$input" --output-tokens "$tokens" --ignore-eos --no-history \
    --out "$out/run" >/dev/null 2>"$out/stderr" || { cat "$out/stderr" >&2; exit 1; }
  read -r rss_kb wall user sys <"$out/time"
  bytes=$(stat -c %s "$out/run/requests.jsonl")
  printf '{"requests":%s,"output_tokens":%s,"concurrency":%s,"peak_rss_mb":%.1f,"wall_s":%s,"user_s":%s,"sys_s":%s,"requests_jsonl_mb":%.1f}\n' \
    "$n" "$tokens" "$concurrency" "$(echo "$rss_kb / 1024" | bc -l)" "$wall" "$user" "$sys" "$(echo "$bytes / 1048576" | bc -l)"
  rm -rf "$out"
done
