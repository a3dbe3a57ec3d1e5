// Runs a workload against the Engine in virtual time, with the load semantics of `bench` (the one
// LevelDriver, load/level_driver.h), and records one RequestTimeline per request (virtual ns) so
// bench's aggregation and output apply.
//
// Closed loop: `concurrency` users each send the next request the moment their previous one ends;
// warm-up requests come first and are a barrier (bench's count-based warm-up). Open loop: requests
// arrive at the given times whatever the engine's state.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "load/level_driver.h"
#include "load/level_run_info.h"
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
  std::optional<std::string> stopped_early;  // e.g. the engine refused a request it can never hold
};

// Fails only on a malformed workload (the message names the field). A request the engine refuses
// is recorded as a failed timeline, not an error, and stops the run (a closed loop would resend it
// forever).
Result<OfflineRun> run_offline(const CostModel& cost, const EngineConfig& config,
                               const OfflineWorkload& w);

// Per-request lengths of an open-loop level (a trace's own), by SendOrder::index.
struct OfflineLengths {
  int64_t prompt_tokens = -1;  // -1: the level's
  int64_t output_tokens = -1;  // -1: the level's
  // The prompt's block hashes (sim_text.h prefix_block_hashes) for the prefix cache; empty: none.
  std::vector<uint64_t> prefix_block_hashes;
  int prefix_group = -1;  // recorded on the timeline
};

// One load level in virtual time from 0, with bench's load rules: the LevelDriver
// (load/level_driver.h) decides what to send and when, this runner plays the client and the server.
// Arrivals are taken between engine steps, as a real engine admits requests between iterations;
// an arrival due during a step is sent at its own time and waits for the next step. The client
// side costs nothing: send = intended start unless the request waited for a slot (send lag 0).
// A request not finished timeout_ns after its send fails as a timeout at that time (its tokens
// so far kept), as bench's transport records one; the engine drops it.
struct OfflineLevel {
  int64_t prompt_tokens = 512;
  int64_t output_tokens = 128;  // max_tokens
  bool ignore_eos = true;  // false: the engine draws the length (EngineConfig::eos_mean_tokens)
  LevelPlan plan;          // the level's rules (make_level_plan, or built by hand)
  std::vector<OfflineLengths> lengths;  // by SendOrder::index; empty: the level's lengths
  // When set: every request's lengths and hashes, asked in send order (the workload's source).
  std::function<OfflineLengths(const SendOrder&)> request_of;
  int64_t timeout_ns = 0;               // 0: no timeout
  // When set: each request is handed over as it ends (in end order) and not kept, so a level's
  // memory holds only what is in flight; OfflineLevelRun::timelines stays empty.
  std::function<void(RequestTimeline&&)> on_finished;
};

struct OfflineLevelRun {
  // Every request sent, in creation order (seq = index); empty with OfflineLevel::on_finished.
  std::vector<RequestTimeline> timelines;
  EngineStats engine;
  int64_t end_ns = 0;       // virtual time when the level ended
  LevelRunInfo info;        // the driver's account (rates, send lag, early stop)
  bool ends_sweep = false;  // the level stopped by its own early-stop rule
};

// Fails only on a malformed level (the message names the field). The engine is fresh per call.
Result<OfflineLevelRun> run_offline_level(const CostModel& cost, const EngineConfig& config,
                                          const OfflineLevel& level);

}  // namespace tokperf::sim
