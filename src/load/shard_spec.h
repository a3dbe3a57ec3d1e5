// Which share of a run this process drives (`bench --shard I/N` or `--shard auto`), and when the
// shards start (`--start-at`): N processes on N machines, each building the same global plan from
// the seed and pacing its LevelShare of every level (load/level_driver.h), with no coordinator
// and no traffic between them during the run. docs/DISTRIBUTED.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tokperf {

struct ShardSpec {
  int index = 0, count = 1;  // this process paces share `index` of `count` of every level
  std::string source;  // where it came from: "--shard", "OMPI_COMM_WORLD_RANK", ...; "" unsharded
  bool active() const { return !source.empty(); }
};

// Reads one environment variable; nullptr when unset. Injectable so tests control the
// environment.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup process_env();

// `--shard` text: "I/N" (0 <= I < N) or "auto". `shards` is --shards N (0: not given), needed by
// Kubernetes Indexed Jobs, whose environment names only the index. "auto" reads, in this order
// (under mpirun inside a Slurm allocation SLURM_PROCID describes mpirun's own launch step, so the
// MPI variables come first):
//   OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE            Open MPI's mpirun
//   PMIX_RANK / (PMIX_SIZE, OMPI_COMM_WORLD_SIZE, SLURM_NTASKS, --shards)   PMIx launchers
//   SLURM_PROCID / SLURM_NTASKS                            srun
//   SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN / SLURM_ARRAY_TASK_COUNT   sbatch --array
//   JOB_COMPLETION_INDEX / --shards N                      Kubernetes Indexed Job
// --shards with another source must agree with the size found. Errors name the variables seen.
Result<ShardSpec> resolve_shard(std::string_view text, int64_t shards, const EnvLookup& env);

// `--start-at` text: unix seconds ("1764630000", "1764630000.25") or an RFC 3339 time
// ("2026-12-01T23:00:00Z", "2026-12-01T23:00:00.5+01:00"). Returns microseconds since the epoch.
Result<int64_t> parse_start_at(std::string_view text);

// This machine's name (gethostname), for the shard's summary.
std::string host_name();

// The wall clock's state as the kernel reports it (adjtimex): synchronised or not, and its own
// estimate of the error; what a merged time series can trust. Fields are -1 when unknown.
struct ClockStatus {
  std::string source = "CLOCK_REALTIME";
  bool synchronised = false;
  double estimated_error_ms = -1;  // timex.esterror
  double maximum_error_ms = -1;    // timex.maxerror
  std::string describe() const;
};
ClockStatus clock_status();

}  // namespace tokperf
