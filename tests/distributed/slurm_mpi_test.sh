#!/usr/bin/env bash
# Sharded tokperf bench through real launchers on one host (issue 13): a Slurm cluster from
# Debian's packages (munged + slurmctld + 2 slurmd "nodes" on 127.0.0.1, no systemd, no cgroups)
# runs `tokperf bench --shard auto` through srun, srun --mpi=pmix, an sbatch array and
# salloc+mpirun; Open MPI's mpirun --oversubscribe runs it without Slurm. Each sharded run is merged and checked against a
# single-process run of the same plan: same schedule fingerprint, same request counts, the merged
# statistics those of the shards' records, each shard's rank taken from the launcher's variable.
#
#   slurm_mpi_test.sh TOKPERF TOKPERF_TESTSERVER      (ctest runs it; exit 77 = skipped)
#
# Skips loudly (exit 77) when slurm-wlm, munge, openmpi-bin or libpmix-dev (Slurm's pmix plugin
# loads libpmix.so, which only the -dev package links) are missing or when not root
# (scripts/install-deps.sh installs them). Everything lives in a temporary folder; the cluster
# is torn down on any exit, killing only the daemons it started (by their pid files).
set -euo pipefail
T0=$SECONDS

skip() { echo "SKIP: slurm_mpi_test: $*" >&2; echo "SKIP: slurm_mpi_test: $*"; exit 77; }
fail() { echo "FAIL: slurm_mpi_test: $*" >&2; exit 1; }
for c in munged slurmctld slurmd srun sbatch salloc sinfo squeue mpirun python3; do
  command -v "$c" >/dev/null 2>&1 ||
    skip "'$c' not found: apt-get install slurm-wlm munge openmpi-bin (scripts/install-deps.sh)"
done
# grep reads all of ldconfig's output (no -q): under pipefail, grep -q's early exit could end
# ldconfig with SIGPIPE, and the test skipped itself on a machine that has libpmix.
ldconfig -p 2>/dev/null | grep 'libpmix\.so ' >/dev/null ||
  skip "libpmix.so not found (srun --mpi=pmix needs it): apt-get install libpmix-dev"
[[ $(id -u) -eq 0 ]] || skip "needs root (the one-host cluster runs its daemons as SlurmUser=root)"
TOKPERF=$(realpath "${1:?usage: slurm_mpi_test.sh TOKPERF TOKPERF_TESTSERVER}")
SERVER=$(realpath "${2:?usage: slurm_mpi_test.sh TOKPERF TOKPERF_TESTSERVER}")
[[ -x $TOKPERF && -x $SERVER ]] || fail "build tokperf and tokperf-testserver first"

W=$(mktemp -d "${TMPDIR:-/tmp}/tokperf-slurm.XXXXXX")
chmod 755 "$W"  # munged wants every folder above its socket searchable by all
D=$W/cluster
export SLURM_CONF=$D/etc/slurm.conf
NODES=2
SERVER_PID=""

# Free TCP ports for slurmctld and the slurmd nodes, so two runs (or another cluster) on this
# host do not collide.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

pid_of() { [[ -f $1 ]] && cat "$1" 2>/dev/null || true; }
alive() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }

down() {
  local pids=() p
  for f in "$D"/run/slurmctld.pid "$D"/run/slurmd-*.pid; do
    p=$(pid_of "$f"); alive "$p" && pids+=("$p")
  done
  if ((${#pids[@]})); then
    timeout 5 scancel --quiet --full -u root 2>/dev/null || true
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 100); do
      local left=0
      for p in "${pids[@]}"; do alive "$p" && left=1; done
      ((left)) || break
      sleep 0.1
    done
    for p in "${pids[@]}"; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
  fi
  p=$(pid_of "$D/run/munged.pid"); alive "$p" && kill -TERM "$p" 2>/dev/null
  [[ -n $SERVER_PID ]] && kill -TERM "$SERVER_PID" 2>/dev/null
  true
}
cleanup() {
  local rc=$?
  down
  if ((rc != 0)); then
    echo "--- logs kept in $W/cluster/log:" >&2
    tail -n 20 "$D"/log/*.log >&2 2>/dev/null || true
  else
    rm -rf "$W"
  fi
  echo "slurm_mpi_test: finished in $(( SECONDS - T0 )) s (rc $rc)"
}
trap cleanup EXIT

# --- bring-up: own munge key and socket, own config; nothing outside $D is touched -----------
mkdir -p "$D"/etc "$D"/run "$D"/state/ctld "$D"/log
chmod 700 "$D/etc"
chmod 755 "$D" "$D/run"
for i in $(seq 1 $NODES); do mkdir -p "$D/state/d-n$i"; done
dd if=/dev/urandom of="$D/etc/munge.key" bs=1 count=128 status=none
chmod 400 "$D/etc/munge.key"
munged --socket="$D/run/munge.socket" --key-file="$D/etc/munge.key" \
  --pid-file="$D/run/munged.pid" --seed-file="$D/state/munged.seed" --log-file="$D/log/munged.log"
CTLD_PORT=$(free_port)
CPUS=$(nproc)
{
  echo "ClusterName=tokperf$$"
  echo "SlurmctldHost=localhost"
  echo "SlurmctldPort=$CTLD_PORT"
  echo "SlurmUser=root"
  echo "SlurmdUser=root"
  echo "AuthType=auth/munge"
  echo "CredType=cred/munge"
  echo "AuthInfo=socket=$D/run/munge.socket"
  echo "StateSaveLocation=$D/state/ctld"
  echo "SlurmdSpoolDir=$D/state/d-%n"
  echo "TmpFS=$D/state/d-%n"
  echo "SlurmctldPidFile=$D/run/slurmctld.pid"
  echo "SlurmdPidFile=$D/run/slurmd-%n.pid"
  echo "SlurmctldLogFile=$D/log/slurmctld.log"
  echo "SlurmdLogFile=$D/log/slurmd-%n.log"
  echo "MailProg=/bin/true"
  # No cgroups, no systemd: plain process tracking, no task plugin, no accounting.
  echo "ProctrackType=proctrack/linuxproc"
  echo "TaskPlugin=task/none"
  echo "JobAcctGatherType=jobacct_gather/none"
  echo "AccountingStorageType=accounting_storage/none"
  echo "JobCompType=jobcomp/none"
  echo "SchedulerType=sched/backfill"
  echo "SelectType=select/cons_tres"
  echo "SelectTypeParameters=CR_Core"
  echo "MpiDefault=none"
  echo "ReturnToService=2"
  echo "InactiveLimit=0"
  echo "KillWait=2"
  echo "MinJobAge=5"
  echo "SchedulerParameters=batch_sched_delay=0"
  for i in $(seq 1 $NODES); do
    echo "NodeName=n$i NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 Port=$(free_port) CPUs=$CPUS"
  done
  echo "PartitionName=ci Nodes=ALL Default=YES MaxTime=10 State=UP OverSubscribe=YES"
} >"$SLURM_CONF"
slurmctld
for i in $(seq 1 $NODES); do slurmd -N "n$i"; done
up=0
for _ in $(seq 1 200); do
  n=$(timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 ~ /^idle/' | sort -u | wc -l || true)
  if [[ $n -eq $NODES ]]; then up=1; break; fi
  sleep 0.1
done
((up)) || fail "the cluster did not come up within 20 s"
echo "cluster up ($NODES nodes) after $(( SECONDS - T0 )) s"

# --- the target: one scripted server every shard shares --------------------------------------
"$SERVER" --port 0 --ttft-ms 4 --itl-ms 2 --tokens 5 --jitter-ms 1 --max-seconds 240 \
  >"$W/server.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do grep -q http "$W/server.out" 2>/dev/null && break; sleep 0.05; done
URL=$(grep -o 'http://[0-9.:]*/v1' "$W/server.out" | head -1)
[[ -n $URL ]] || fail "tokperf-testserver did not print its URL"
export XDG_DATA_HOME=$W/xdg  # never the user's history

PLAN=(bench --url "$URL" --request-rate 40 --requests 24 --warmup 0 --seed 13 --input-tokens 20
      --output-tokens 5 --no-progress --no-history)
start_at() { python3 -c 'import time; print(f"{time.time() + 2:.3f}")'; }

"$TOKPERF" "${PLAN[@]}" --out "$W/single" >"$W/single.log" 2>&1 || fail "single-process run failed"

# Checks a merged run against the single-process one and its shards' records.
check() {  # check NAME SHARDS SOURCE
  python3 - "$W/single" "$W/$1" "$W/$1-merged" "$2" "$3" <<'PY'
import json, os, sys
single, shards_dir, merged, n, source = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
load = lambda p: json.load(open(p))
lines = lambda p: [json.loads(l) for l in open(p) if l.strip()]
s, m = load(f"{single}/summary.json"), load(f"{merged}/summary.json")
sl, ml = s["levels"][0], m["levels"][0]
def eq(what, a, b):
    if a != b:
        sys.exit(f"{shards_dir}: {what}: merged {a!r} != single-process {b!r}")
eq("schedule fingerprint", ml["load"]["schedule_fingerprint"], sl["load"]["schedule_fingerprint"])
eq("scheduled arrivals", ml["load"]["scheduled_arrivals"], sl["load"]["scheduled_arrivals"])
eq("measured requests sent", ml["load"]["measured_sent"], sl["load"]["measured_sent"])
eq("requests in the level", ml["requests"]["sent"], sl["requests"]["sent"])
eq("shard count", len(m["shards"]), n)
records = []
for i in range(n):
    sh = load(f"{shards_dir}/shard-{i}/summary.json")["config"]["shard"]
    eq(f"shard {i} index", sh["index"], i)
    eq(f"shard {i} rank source", sh["source"], source)
    records += lines(f"{shards_dir}/shard-{i}/requests.jsonl")
merged_records = lines(f"{merged}/requests.jsonl")
eq("records", sorted(json.dumps(r, sort_keys=True) for r in merged_records),
   sorted(json.dumps(r, sort_keys=True) for r in records))
# numpy's default (linear) percentile over the shards' own records, computed here independently.
def pct(v, q):
    v = sorted(v); k = (len(v) - 1) * q / 100; f = int(k); c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)
ttft = [r["ttft_ms"] for r in records if r["phase"] == "measure" and r["ok"]]
for q, key in ((50, "p50"), (90, "p90"), (99, "p99")):
    if abs(ml["ttft_ms"][key] - pct(ttft, q)) > 1e-9 * max(1, abs(pct(ttft, q))):
        sys.exit(f"ttft {key}: merged {ml['ttft_ms'][key]} != {pct(ttft, q)} over the records")
print(f"{shards_dir}: {n} shards ({source}) merged == single-process plan: fingerprint "
      f"{ml['load']['schedule_fingerprint']}, {ml['requests']['sent']} requests, TTFT p50 {ml['ttft_ms']['p50']:.3f} ms "
      f"p99 {ml['ttft_ms']['p99']:.3f} ms over {len(ttft)} records")
PY
}

merge() {  # merge NAME
  "$TOKPERF" merge "$W/$1" --out "$W/$1-merged" --no-history >"$W/$1-merge.log" 2>&1 ||
    { cat "$W/$1-merge.log" >&2; fail "merge of $1 failed"; }
}

# srun: 3 tasks over 2 nodes; the rank is SLURM_PROCID.
timeout 120 srun -N2 -n3 -O --export=ALL "$TOKPERF" "${PLAN[@]}" --shard auto \
  --start-at "$(start_at)" --out "$W/srun" >"$W/srun.log" 2>&1 ||
  { cat "$W/srun.log" >&2; fail "srun of the shards failed"; }
merge srun
check srun 3 SLURM_PROCID

# srun --mpi=pmix: PMIx names the rank (PMIX_RANK), the size comes from SLURM_NTASKS.
timeout 120 srun --mpi=pmix -N2 -n2 -O --export=ALL "$TOKPERF" "${PLAN[@]}" --shard auto \
  --start-at "$(start_at)" --out "$W/pmix" >"$W/pmix.log" 2>&1 ||
  { cat "$W/pmix.log" >&2; fail "srun --mpi=pmix of the shards failed"; }
merge pmix
check pmix 2 PMIX_RANK

# sbatch --array: one task per array index; the rank is SLURM_ARRAY_TASK_ID.
timeout 120 sbatch --wait --array=0-1 -o "$W/array-%a.log" --export=ALL \
  --wrap "'$TOKPERF' ${PLAN[*]} --shard auto --start-at $(start_at) --out '$W/array'" \
  >"$W/sbatch.log" 2>&1 || { cat "$W/sbatch.log" "$W"/array-*.log >&2; fail "sbatch --array failed"; }
merge array
check array 2 SLURM_ARRAY_TASK_ID

# mpirun without Slurm: the rank is OMPI_COMM_WORLD_RANK.
env -u SLURM_CONF timeout 120 mpirun --allow-run-as-root --oversubscribe -np 3 \
  "$TOKPERF" "${PLAN[@]}" --shard auto --start-at "$(start_at)" --out "$W/mpirun" \
  >"$W/mpirun.log" 2>&1 || { cat "$W/mpirun.log" >&2; fail "mpirun of the shards failed"; }
merge mpirun
check mpirun 3 OMPI_COMM_WORLD_RANK

# mpirun inside a Slurm allocation: SLURM_PROCID there numbers mpirun's launch step (stale for the
# ranks); OMPI_COMM_WORLD_RANK must win.
timeout 120 salloc -N2 -n3 -O mpirun --allow-run-as-root --oversubscribe -np 3 \
  "$TOKPERF" "${PLAN[@]}" --shard auto --start-at "$(start_at)" --out "$W/salloc-mpirun" \
  >"$W/salloc.log" 2>&1 || { cat "$W/salloc.log" >&2; fail "salloc + mpirun of the shards failed"; }
merge salloc-mpirun
check salloc-mpirun 3 OMPI_COMM_WORLD_RANK

# A missing shard is refused, naming it, and nothing is written.
rm -rf "$W/srun/shard-1"
if "$TOKPERF" merge "$W/srun" --out "$W/partial" --no-history >"$W/partial.log" 2>&1; then
  fail "merge accepted a run with a shard missing"
fi
grep -q "shard 1 of 3 is missing" "$W/partial.log" || { cat "$W/partial.log" >&2; fail "no message"; }
[[ ! -e $W/partial ]] || fail "a refused merge wrote $W/partial"
echo "slurm_mpi_test: OK"
