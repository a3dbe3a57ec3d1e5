// The arrivals of one open-loop level (a rate, a rate ramp or a trace): when each request is meant
// to start, relative to the level, and which phase it belongs to. Shared by the live runner
// (load/bench_runner.h) and the simulator's virtual-time runner, so that the same flags and seed
// give the same schedule, and the same fingerprint, in both. Semantics: docs/LOAD.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "load/bench_config.h"
#include "metrics/request_record.h"

namespace tokperf {

struct PlannedArrival {
  int64_t offset_ns = 0;  // from the level's first possible arrival
  Phase phase = Phase::kMeasure;
  int64_t index = 0;  // into the offsets (and into LoadConfig::trace when replaying one)
};

struct OpenLoopSchedule {
  std::vector<PlannedArrival> arrivals;  // non-decreasing offsets
  std::string fingerprint;               // fingerprint_hex(schedule_fingerprint(offsets))
  double target_rate_rps = 0;            // 0 for a trace
};

// REQUIRES: level < load.plan.levels.size() and that level is a rate level (or load.trace is set).
// The level's arrival seed is plan.seed + level.
OpenLoopSchedule plan_open_loop_schedule(const LoadConfig& load, size_t level);

}  // namespace tokperf
