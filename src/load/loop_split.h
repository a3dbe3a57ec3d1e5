// Splitting a bench run across several event loops (`--threads N`) and merging what they report
// back into what one loop would have reported. Loop k drives share k of every level
// (load/level_driver.h, LevelShare); a level never gets more shares than it has work for, so no
// loop holds an empty share of a level that has room for one:
//  - closed loop: at most as many shares as the level's largest whole concurrency (a ramp's top);
//  - open loop: at most as many as it has arrivals, and, with --max-concurrency, as the cap (each
//    share's cap is at least 1, so more shares than the cap would exceed it).
// Loops past a level's share count sit that level out. A shard of a distributed run (`--shard
// I/N`: load.share_index I, load.share_count N) splits only its own share: loop k of m paces the
// combined share I + N*k of N*m (loop_share), so arrival i goes to shard i mod N and, within it, to
// loop (i div N) mod m, and over every shard's loops the slots, request counts and cap add up to
// the level's. The share count m is computed from the global plan and N only, so every shard given
// the same --threads uses the same m (config.load.threads, which tokperf merge checks).
// Definitions: docs/LOAD.md ("Several event loops"), docs/DISTRIBUTED.md.
#pragma once

#include <cstdint>
#include <vector>

#include "load/bench_config.h"
#include "load/level_driver.h"
#include "load/level_run_info.h"
#include "metrics/timeseries.h"

namespace tokperf {

// The loop count `--threads` asks for when the user gives none: the machine's hardware threads,
// at most kMaxDefaultLoops (1 when the machine does not say).
inline constexpr int kMaxDefaultLoops = 16;
inline constexpr int kMaxLoops = 256;  // what `--threads` accepts
int default_loop_count();

// How many shares level `level` is split into when the run has `loops` loops (1..loops). A shard
// counts only its part of the work (the level's divided by load.share_count, rounded down), so no
// combined share is empty.
// REQUIRES: level < load.plan.levels.size(), loops >= 1.
int level_share_count(const LoadConfig& load, size_t level, int loops);

// The part of a level loop `loop` of `loops` paces: {I + N*loop, N*loops} for shard I of N (with
// no shards, {loop, loops}).
LevelShare loop_share(const LoadConfig& load, int loop, int loops);

// The loops a run needs: `requested` capped by the largest share count over its levels.
int run_loop_count(const LoadConfig& load, int requested);

// One level's LevelRunInfo from its shares' (each final, in share order), as one driver pacing the
// whole level would have filled it: counts and send lags add up, the first and last measured sends
// are the earliest and latest of any share, the schedule's own figures (fingerprint, scheduled
// arrivals and rate, measured span, target rate) are `whole`'s (the info of a driver built for the
// whole level), and the achieved rate and send-lag bound are recomputed over the merged sends
// (finish_open_loop_figures). The first share that stopped early gives the reason.
// REQUIRES: shares non-empty.
LevelRunInfo merge_level_shares(const std::vector<LevelRunInfo>& shares, const LevelRunInfo& whole,
                                double max_send_lag_p99_ms);

// Per-second client samples of several loops (each taken on the same one-second grid from the
// run's start) merged into one series: second i's loop lag is the worst loop's, its client queue
// the sum. The series is as long as the longest input.
std::vector<RunnerSample> merge_loop_samples(const std::vector<std::vector<RunnerSample>>& loops);

}  // namespace tokperf
