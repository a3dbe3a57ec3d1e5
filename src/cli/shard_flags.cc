#include "cli/shard_flags.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/clock.h"
#include "core/units.h"

namespace tokperf {
namespace {

// Level boundaries leave this much beyond the planned phases for the last requests to finish.
int64_t slot_margin_ns(int64_t planned_ns) {
  return std::max<int64_t>(2'000'000'000, planned_ns / 5);
}

// The planned length of one level when every phase is bound by time; 0 when one counts requests.
int64_t planned_level_ns(const LoadConfig& l) {
  const PhaseLimit* phases[] = {&l.plan.warmup, &l.plan.measure, &l.plan.cooldown};
  int64_t sum = 0;
  for (const PhaseLimit* p : phases) {
    if (p->requests > 0) return 0;
    sum += p->duration_ns;
  }
  // Open loop: the default warm-up is the first second of arrivals.
  if (l.default_warmup) sum += 1'000'000'000;
  return sum;
}

// A closed-loop level's users and an open-loop cap are split across shards; a shard left with no
// user would send nothing while the others send their share, so the merged run would carry fewer
// requests than planned. Refused before anything runs.
void refuse_shares_without_work(const LoadConfig& l, int shards) {
  const bool open_loop_trace = !l.trace.empty();
  for (size_t i = 0; i < l.plan.levels.size(); ++i) {
    const LevelSpec& spec = l.plan.levels[i];
    if (open_loop_trace || spec.mode == LoadMode::kRate) continue;
    const auto users = static_cast<int64_t>(std::floor(std::max(spec.start, spec.end) + 1e-9));
    if (users < shards) {
      throw UsageError(fmt::format(
          "--shard: level {} has {} concurrent user{}, fewer than the {} shards, so some shards "
          "would have no user and send nothing; every shard needs at least one: run at most {} "
          "shard{} or raise --concurrency to at least {}",
          i + 1, users, users == 1 ? "" : "s", shards, std::max<int64_t>(1, users),
          users == 1 ? "" : "s", shards));
    }
  }
  if (l.plan.max_concurrency > 0 && l.plan.max_concurrency < shards) {
    throw UsageError(fmt::format(
        "--shard: --max-concurrency {} is split across the {} shards, and each needs at least "
        "one request in flight: raise --max-concurrency to at least {} or run at most {} shards",
        l.plan.max_concurrency, shards, shards, l.plan.max_concurrency));
  }
}

}  // namespace

void add_shard_flags(CLI::App* sub, ShardFlags& f) {
  const char* g = "Shards (docs/DISTRIBUTED.md)";
  sub->add_option("--shard", f.shard,
                  "Run share I of N of the plan (I/N, 0-based), or auto: the rank from mpirun, "
                  "srun, an sbatch array or a Kubernetes Indexed Job; merge with tokperf merge")
      ->group(g);
  sub->add_option("--shards", f.shards,
                  "Shard count when the launcher names only the index (Kubernetes "
                  "JOB_COMPLETION_INDEX)")
      ->group(g);
  sub->add_option("--start-at", f.start_at,
                  "Wall-clock start of the first level, the same on every shard: unix seconds "
                  "or RFC 3339 (2026-12-01T23:00:00Z)")
      ->group(g);
  sub->add_option("--level-slot", f.level_slot,
                  "With --start-at: level k starts at start + k x this (default: the planned "
                  "phases + 20%, at least +2s; required when phases count requests)")
      ->group(g);
}

void apply_shard_flags(const ShardFlags& f, const EnvLookup& env, bool out_given, BenchConfig& c) {
  LoadConfig& l = c.load;
  if (f.shard.empty()) {
    if (f.shards != 0 || !f.start_at.empty() || !f.level_slot.empty()) {
      throw UsageError(
          "--shards, --start-at and --level-slot belong to a sharded run; add --shard "
          "I/N or --shard auto");
    }
    return;
  }
  auto spec = resolve_shard(f.shard, f.shards, env);
  if (!spec) throw UsageError(spec.error());
  if (!out_given || c.out_dir.empty()) {
    throw UsageError(
        "--shard needs --out DIR, a folder every shard can write (a shared volume, or "
        "gathered afterwards): shard I writes DIR/shard-I, and tokperf merge DIR "
        "--out MERGED joins them");
  }
  c.shard = *spec;
  l.share_index = spec->index;
  l.share_count = spec->count;
  c.out_dir = fmt::format("{}/shard-{}", c.out_dir, spec->index);
  c.shard_host = host_name();
  c.shard_clock = clock_status();
  if (!f.start_at.empty()) {
    auto at = parse_start_at(f.start_at);
    if (!at) throw UsageError(at.error());
    l.start_at_unix_us = *at;
    const int64_t late_s = (wall_us() - *at) / 1'000'000;
    if (late_s > 60) {
      throw UsageError(
          fmt::format("--start-at {} was {} s ago; every shard must get a start time "
                      "in the future (e.g. now + 10 s, computed once by the launcher "
                      "script)",
                      f.start_at, late_s));
    }
  } else if (!f.level_slot.empty()) {
    throw UsageError("--level-slot needs --start-at: boundaries count from the shared start");
  }
  if (l.start_at_unix_us > 0 && l.plan.levels.size() > 1) {
    if (!f.level_slot.empty()) {
      auto slot = parse_duration_ns(f.level_slot, "s");
      if (!slot || *slot <= 0) {
        throw UsageError(
            fmt::format("--level-slot '{}': expected a positive duration, e.g. 45s", f.level_slot));
      }
      l.level_slot_ns = *slot;
    } else {
      const int64_t planned = planned_level_ns(l);
      if (planned == 0) {
        throw UsageError(
            "sharded levels start on fixed boundaries, and a phase that counts "
            "requests has no fixed length: give --level-slot DUR (longer than a "
            "level takes) or time-bound phases (--duration, --warmup 5s)");
      }
      l.level_slot_ns = planned + slot_margin_ns(planned);
    }
  }
  refuse_shares_without_work(l, spec->count);
}

}  // namespace tokperf
