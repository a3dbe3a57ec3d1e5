// Runs a workload against the Engine in virtual time, with the load semantics of `bench`, and
// records one RequestTimeline per request (virtual ns) so bench's aggregation and output apply.
//
// Closed loop: `concurrency` users each send the next request the moment their previous one ends.
// Open loop: requests arrive at the given times whatever the engine's state. Arrivals are taken
// between engine steps, as a real engine picks up new requests between iterations.
#pragma once

#include <cstdint>
#include <vector>

#include <optional>
#include <string>

#include "core/result.h"
#include "load/load_plan.h"
#include "metrics/request_record.h"
#include "sim/engine.h"

namespace tokperf::sim {

struct OfflineWorkload {
  int64_t prompt_tokens = 512;
  int64_t output_tokens = 128;  // max_tokens of every request
  bool ignore_eos = true;
  int64_t concurrency = 1;           // closed loop; ignored when arrivals_ns is set
  int64_t requests = 100;            // measured requests
  int64_t warmup = 0;                // extra requests first, marked Phase::kWarmup
  std::vector<int64_t> arrivals_ns;  // open loop: one non-decreasing time per request (all phases)
};

struct OfflineRun {
  std::vector<RequestTimeline> timelines;  // in creation order
  EngineStats engine;                      // at the end
  int64_t end_ns = 0;                      // virtual time when the last request ended
  int64_t total_output_tokens = 0;
};

// Fails only on a malformed workload (the message names the field). Requests the engine refuses
// are recorded as failed timelines, not errors.
Result<OfflineRun> run_offline(const CostModel& cost, const EngineConfig& config,
                               const OfflineWorkload& w);

// One request of an open-loop level: its intended start, phase and (optionally) its own lengths.
struct OfflineArrival {
  int64_t at_ns = 0;
  Phase phase = Phase::kMeasure;
  int64_t prompt_tokens = -1;  // -1: the level's
  int64_t output_tokens = -1;  // -1: the level's
};

// One load level with bench's phase rules (docs/LOAD.md), in virtual time from 0:
//  - closed loop (arrivals empty): the slot count is concurrency.target_at(now) (a linear ramp
//    opens slots as it goes); a new request starts the moment a slot is free; the phase machine
//    walks warmup -> measure -> cooldown by count or duration; a count-based warm-up is a barrier
//    (measurement starts with every slot free); cool-down only keeps the load up while measured
//    requests finish, and what is left of it is cancelled then.
//  - open loop: arrivals at their times; with max_concurrency > 0, arrivals that find every slot
//    taken wait in a FIFO client queue (intended start kept, send when a slot frees). Once no
//    measured request is left to send or finish, sending stops and cool-down is cancelled.
// Arrivals are taken between engine steps, as a real engine admits requests between iterations.
// The client side costs nothing: send = intended start unless the request waited for a slot.
struct OfflineLevel {
  int64_t prompt_tokens = 512;
  int64_t output_tokens = 128;  // max_tokens
  bool ignore_eos = true;       // false: the engine draws the length (EngineConfig::eos_mean_tokens)
  LevelSpec concurrency;        // closed loop; mode must be kConcurrency
  PhaseLimit warmup;            // closed loop, resolved (no "default")
  PhaseLimit measure{0, 100};   // closed loop
  PhaseLimit cooldown;          // closed loop
  std::vector<OfflineArrival> arrivals;  // non-empty: open loop, times non-decreasing
  int64_t max_concurrency = 0;           // open loop: 0 = uncapped
};

struct OfflineLevelRun {
  std::vector<RequestTimeline> timelines;  // every request sent, in creation order (seq = index)
  EngineStats engine;
  int64_t end_ns = 0;  // virtual time when the level ended
  std::optional<std::string> stopped_early;  // e.g. the engine refused a request it can never hold
};

// Fails only on a malformed level (the message names the field). The engine is fresh per call.
Result<OfflineLevelRun> run_offline_level(const CostModel& cost, const EngineConfig& config,
                                          const OfflineLevel& level);

}  // namespace tokperf::sim
