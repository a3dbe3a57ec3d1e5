#!/usr/bin/env bash
# A live open-loop soak against the scripted test server, sampling tokperf's RSS every 10 s against
# the records written so far (issue 12: memory must not grow with the request count).
# Loopback only; both processes are stopped at the end.
#   scripts/soak_rss.sh [--build DIR] [--rate R] [--duration 30m] [--tokens N] > rss.csv
set -euo pipefail
cd "$(dirname "$0")/.."
build=build rate=200 duration=30m tokens=64
while (($#)); do
  case "$1" in
    --build) build=$2; shift ;;
    --rate) rate=$2; shift ;;
    --duration) duration=$2; shift ;;
    --tokens) tokens=$2; shift ;;
    *) echo "usage: scripts/soak_rss.sh [--build DIR] [--rate R] [--duration D] [--tokens N]" >&2; exit 2 ;;
  esac
  shift
done
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$build/tests/tokperf-testserver" --port "$port" --ttft-ms 5 --itl-ms 2 --tokens "$tokens" >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 1
"$build/tokperf" bench --url "http://127.0.0.1:$port/v1" --request-rate "$rate" --duration "$duration" \
  --output-tokens "$tokens" --no-early-stop --no-history --out "$work/run" >"$work/bench.log" 2>&1 &
bench=$!
echo "seconds,rss_kb,records"
t=0
while kill -0 "$bench" 2>/dev/null; do
  rss=$(awk '/VmRSS/{print $2}' "/proc/$bench/status" 2>/dev/null || echo)
  lines=$(wc -l <"$work/run/requests.jsonl" 2>/dev/null || echo 0)
  echo "$t,$rss,$lines"
  sleep 10
  t=$((t + 10))
done
wait "$bench" || { cat "$work/bench.log" >&2; exit 1; }
grep -E "^ +[0-9]|warning" "$work/bench.log" >&2 || true
rm -rf "$work"
