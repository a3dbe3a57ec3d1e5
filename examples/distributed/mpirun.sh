#!/usr/bin/env bash
# Open MPI's launcher: the ranks come from OMPI_COMM_WORLD_RANK/SIZE (also inside a Slurm
# allocation, where SLURM_PROCID would name mpirun's own launch step instead). tokperf makes no
# MPI calls; mpirun only starts the processes. --hostfile lists the client machines.
set -euo pipefail
RESULTS=${RESULTS:-/shared/tokperf/run-$(date +%Y%m%d-%H%M%S)}
URL=${URL:-http://router:8000/v1}
START_AT=$(( $(date +%s) + 10 ))
mpirun -np 4 --hostfile "${HOSTFILE:-hosts.txt}" \
  tokperf bench --url "$URL" --concurrency 64 --requests 2000 \
  --shard auto --start-at "$START_AT" --out "$RESULTS" --no-progress --no-history
tokperf merge "$RESULTS" --out "$RESULTS/merged"
