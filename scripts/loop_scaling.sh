#!/usr/bin/env bash
# How tokperf's client scales with its event loops (--threads) on a machine with many cores:
# churning streams (every slot refilled as its request ends) from scripted servers that share one
# port (SO_REUSEPORT), the servers pinned to the first cores and the client to the rest, so that
# neither competes with the other for a core. For each stream count: tokperf on 1, 2, 4, ... loops,
# then the floor (one epoll loop that only timestamps its reads), repeated REPS times. One JSON
# object per run (bench/stream_timestamp_bench's fields: first-token and every-event timestamp
# error P99, CPU per event, the servers' own lateness). docs/BENCHMARKS.md reads them.
#
#   scripts/loop_scaling.sh build/bench/stream_timestamp_bench results.jsonl
# Environment: SERVER_THREADS (default: half the cores), STREAMS (4000,8000,16000),
# LOOPS (1,2,4,8: capped at the client's cores), TOKENS (50), ITL_MS (20), ROUNDS (3), REPS (2),
# CLIENT (both: tokperf and the floor; or tokperf, floor).
set -euo pipefail
bin=${1:?usage: loop_scaling.sh STREAM_TIMESTAMP_BENCH [OUT.jsonl]}
out=${2:-}
cores=$(nproc)
if ((cores < 4)); then
  echo "loop_scaling.sh: $cores cores; the curve needs at least 4 (servers and client apart)" >&2
  exit 2
fi
server_threads=${SERVER_THREADS:-$((cores / 2))}
client_first=$server_threads
client_last=$((cores - 1))
client_cores=$((client_last - client_first + 1))
streams=${STREAMS:-4000,8000,16000}
tokens=${TOKENS:-50}
itl=${ITL_MS:-20}
rounds=${ROUNDS:-3}
reps=${REPS:-2}
loops=""
IFS=, read -ra want <<<"${LOOPS:-1,2,4,8}"
for l in "${want[@]}"; do
  if ((l <= client_cores)); then loops="${loops:+$loops,}$l"; fi
done
# Each stream holds a client and a server socket; the fd limit must
# cover twice the largest count (raised where permitted; the bench raises its soft limit too).
ulimit -n 1048576 2>/dev/null || ulimit -n 65536 2>/dev/null || true
echo "loop_scaling: $cores cores: $server_threads scripted servers on 0-$((server_threads - 1))," \
  "client on $client_first-$client_last; streams $streams, loops $loops, $tokens tokens every" \
  "$itl ms, $rounds rounds, $reps repetitions" >&2
for rep in $(seq 1 "$reps"); do
  IFS=, read -ra counts <<<"$streams"
  for n in "${counts[@]}"; do
    "$bin" --streams "$n" --rounds "$rounds" --tokens "$tokens" --itl-ms "$itl" \
      --threads "$loops" --client "${CLIENT:-both}" --server-threads "$server_threads" --server-cpu 0 \
      --client-cpus "$client_first-$client_last" |
      sed "s/^{/{\"rep\":$rep,\"cores\":$cores,/" | tee -a "${out:-/dev/null}"
  done
done
