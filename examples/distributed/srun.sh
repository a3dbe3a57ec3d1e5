#!/usr/bin/env bash
# Inside an allocation (salloc -N4, or an sbatch script): four tasks, one shared start, one merge.
set -euo pipefail
RESULTS=${RESULTS:-/shared/tokperf/run-$(date +%Y%m%d-%H%M%S)}
URL=${URL:-http://router:8000/v1}
START_AT=$(( $(date +%s) + 10 ))
srun -N4 -n4 tokperf bench --url "$URL" --request-rate 100,200,400 --duration 30s --seed 42 \
  --shard auto --start-at "$START_AT" --out "$RESULTS" --no-progress --no-history
tokperf merge "$RESULTS" --out "$RESULTS/merged"
