// The shared back half of `bench` (and of the built-in engine's default run): run the load, stream
// every finished request to requests.jsonl, then print the table and write summary.json — also when
// interrupted, so nothing gathered is lost.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/level_result.h"
#include "load/bench_config.h"
#include "load/bench_runner.h"
#include "metrics/client_health.h"
#include "metrics/request_record.h"
#include "servermetrics/server_report.h"

namespace tokperf {

// Returns the exit code: 0, kExitFailure when every measured request failed, kExitInterrupted.
// `notes` are caveats to print and record (e.g. approximated prompt lengths).
int run_bench_load(const BenchConfig& config, const std::vector<std::string>& notes, bool json);

// Everything a finished run produced, live (bench) or in virtual time (sim run).
struct RunOutcome {
  // Every record of every phase and level, kept only where a caller asked simulate_load for them
  // (a capacity trial); runs hand each record to a RunRecorder as it finishes instead.
  std::vector<RequestTimeline> records;
  std::vector<LevelRunInfo> levels;
  std::vector<RunnerSample> samples;  // per-second client samples (may be empty)
  int64_t start_ns = 0, end_ns = 0;   // the run, on the records' clock
  ClientSelfMeasure self;
  NoiseFloor noise_floor;  // measured before the run (live bench); unmeasured for virtual time
  bool completed = true;
  int64_t started_unix_us = 0;
  // What --server-metrics scraped (null: no scraping; per-request server timings are still read
  // from the records).
  std::shared_ptr<const servermetrics::ServerReport> server;
};

class RunRecorder;

// Prints the level table and details, writes summary.json, timeseries.csv and report.html into
// config.out_dir (when set; requests.jsonl is the recorder's) and records the run in the history.
// Returns the exit code as run_bench_load does. `recorder` was fed every record of the run once
// (cli/run_recorder.h) and closed.
int report_run(const BenchConfig& config, const RunOutcome& outcome, RunRecorder& recorder,
               const std::vector<std::string>& notes, bool json, const char* command);

// The result builder for config's levels and SLO (level labels and loads as the table shows them).
RunResultBuilder result_builder(const BenchConfig& config);

}  // namespace tokperf
