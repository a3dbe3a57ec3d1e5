// `tokperf sim run`'s core: bench's load plan (levels, phases, arrivals, cap, trace) run against
// the simulated engine in virtual time, turned into the RunOutcome that bench's reporting takes
// (cli/bench_output.h). No sockets, no sleeping: a sweep takes as long as the engine's arithmetic.
//
// Clock: every level gets a fresh engine; level i starts in virtual time where level i-1 ended, and
// the records' times are virtual ns from the start of the run. Open-loop schedules come from
// load/open_loop_schedule.h with the same seed as bench, so fingerprints match a live run's.
// The load rules are bench's own LevelDriver (load/level_driver.h): phases, client queue and cap,
// ramps, --timeout (a request whose virtual E2E would pass it fails as a timeout at that virtual
// time) and early stop (saturation and error rate, judged once a virtual second; it ends the
// sweep).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/bench_output.h"
#include "core/result.h"
#include "load/bench_config.h"
#include "sim/cost_model.h"
#include "sim/engine.h"

namespace tokperf {

struct SimLoadOptions {
  sim::EngineConfig engine;  // its seed is replaced by load.plan.seed + level (output lengths)
  int64_t input_tokens = 512;
  int64_t output_tokens = 256;  // max_tokens; trace entries may set their own
  bool ignore_eos = false;      // false: the engine's output-length distribution
  int64_t started_unix_us = 0;  // labels records (start_unix_us = this + virtual send time)
};

// Runs every level of config.load (config.prompt and config.target are not read). Fails only on a
// malformed level. Requests of a trace that gives a prompt instead of input_tokens are sized at
// one token per 4 characters (notes says so). With config.workload, every request is the
// workload's (sized and prefix-hashed from its text by the simulator's tokenizer).
// `sink`: each record as it ends (then dropped, so memory holds only requests in flight); without
// one the records are kept in RunOutcome::records.
Result<RunOutcome> simulate_load(const sim::CostModel& cost, const BenchConfig& config,
                                 const SimLoadOptions& options, std::vector<std::string>& notes,
                                 const std::function<void(const RequestTimeline&)>& sink = {});

}  // namespace tokperf
