// `bench --shard I/N|auto`, `--shards N`, `--start-at TIME` and `--level-slot DUR`: one process's
// share of a run spread over several machines (docs/DISTRIBUTED.md). Resolved once into
// BenchConfig (load.share_*, load.start_at_unix_us, load.level_slot_ns, shard, out_dir).
#pragma once

#include <cstdint>
#include <string>

#include "load/bench_config.h"
#include "load/shard_spec.h"

namespace CLI {
class App;
}

namespace tokperf {

struct ShardFlags {
  std::string shard;  // "I/N" or "auto"; empty: not sharded
  int64_t shards = 0;
  std::string start_at;
  std::string level_slot;
};

// Declares the flags on `sub` (group "Shards").
void add_shard_flags(CLI::App* sub, ShardFlags& f);

// REQUIRES: c.load and c.out_dir already set from their flags. Throws UsageError naming the flag.
// Sharded: c.out_dir becomes <--out>/shard-<I> and the host and clock are recorded.
void apply_shard_flags(const ShardFlags& f, const EnvLookup& env, bool out_given, BenchConfig& c);

}  // namespace tokperf
