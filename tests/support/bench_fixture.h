// Helpers for end-to-end tests that run BenchRunner in-process against the scripted server.
#pragma once

#include <string>
#include <vector>

#include "load/bench_config.h"
#include "metrics/request_record.h"
#include "support/scripted_server.h"

namespace tokperf::testing_support {

struct RunOutput {
  std::vector<RequestTimeline> records;  // every phase
  std::vector<RequestTimeline> measured;
  bool completed = false;
};

// A closed-loop run of `requests` measured requests at `concurrency` against the server.
BenchConfig closed_loop_config(const ScriptedServer& s, int concurrency, int requests,
                               int output_tokens, std::string api = "chat");

// Runs the config to its end (no signals, no progress).
RunOutput run_bench(const BenchConfig& c);

// |client stamp − server send| for every token event of every ok measured request, matched by
// request id; events counts that differ between client and server are skipped.
std::vector<double> stamp_errors_ms(const RunOutput& out, const ScriptedServer& s);

}  // namespace tokperf::testing_support
