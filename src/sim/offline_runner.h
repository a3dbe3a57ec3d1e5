// Runs a workload against the Engine in virtual time, with the load semantics of `bench`, and
// records one RequestTimeline per request (virtual ns) so bench's aggregation and output apply.
//
// Closed loop: `concurrency` users each send the next request the moment their previous one ends.
// Open loop: requests arrive at the given times whatever the engine's state. Arrivals are taken
// between engine steps, as a real engine picks up new requests between iterations.
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
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

}  // namespace tokperf::sim
