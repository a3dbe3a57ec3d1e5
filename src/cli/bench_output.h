// The shared back half of `bench` (and of the built-in engine's default run): run the load, stream
// every finished request to requests.jsonl, then print the table and write summary.json — also when
// interrupted, so nothing gathered is lost.
#pragma once

#include <string>
#include <vector>

#include "load/bench_config.h"

namespace tokperf {

// Returns the exit code: 0, kExitFailure when every measured request failed, kExitInterrupted.
// `notes` are caveats to print and record (e.g. approximated prompt lengths).
int run_bench_load(const BenchConfig& config, const std::vector<std::string>& notes, bool json);

}  // namespace tokperf
