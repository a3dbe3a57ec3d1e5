// Sharded runs (docs/DISTRIBUTED.md): what each shard writes beside its summary.json (shard.json:
// the per-level run facts on the wall clock, with the compact send-lag column, and the global
// schedule's figures), and how `tokperf merge` finds the shards, refuses those that do not belong
// together, and joins their levels. The request statistics are not merged here: the merge feeds
// every shard's records once to the same result builder a single-process run uses.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "load/bench_config.h"
#include "load/bench_runner.h"
#include "load/level_run_info.h"

namespace tokperf {

inline constexpr int kShardSchemaVersion = 1;

// shard.json of one shard. `wall_minus_mono_ns` converts the runner's monotonic stamps to the wall
// clock the records are labelled with.
nlohmann::json shard_run_json(const BenchConfig& config, std::span<const LevelRunInfo> levels,
                              std::span<const int64_t> late_start_ns, const ClientSelfMeasure& self,
                              int64_t wall_minus_mono_ns, bool completed);

struct ShardFolder {
  std::string dir;
  nlohmann::json summary;  // summary.json
  nlohmann::json shard;    // shard.json
  int index = 0, count = 1;
};

// The folders named on the command line: a shard's own folder (it holds summary.json, shard.json
// or requests.jsonl), or a folder of shard-* folders (bench --shard --out DIR writes DIR/shard-I).
Result<std::vector<std::string>> expand_shard_dirs(const std::vector<std::string>& args);

// Loads every shard and checks that they form one whole run: each finished (summary.json and
// shard.json present, not interrupted), same tokperf version, target, plan (configuration less the
// shard and run id), seed, shard count and start time, each index once, none missing. On any
// problem: an error listing all of them, one per line.
Result<std::vector<ShardFolder>> load_shards(const std::vector<std::string>& dirs);

// The whole run's level facts from every shard's, on the wall clock: sums of sent requests and
// sessions, the union of windows, the send-lag column concatenated, the global schedule's target
// and scheduled rate, achieved rate over the union of measured sends.
std::vector<LevelRunInfo> merge_level_infos(std::span<const ShardFolder> shards);

// The levels as the single-process run described them (mode, targets, ramps), and whether the
// run replayed a trace (the level label is then "trace").
std::vector<LevelSpec> shard_level_specs(const ShardFolder& shard);
bool shard_replays_trace(const ShardFolder& shard);

// Per-shard client health for the merged summary, and one line naming the bottlenecked shard
// (the one whose own client health raised a warning, the worst first), or saying none was.
struct ShardHealthView {
  nlohmann::json shards;   // array, one object per shard in index order
  std::string bottleneck;  // the line
  int bottleneck_index = -1;
};
ShardHealthView shard_health(std::span<const ShardFolder> shards);

}  // namespace tokperf
