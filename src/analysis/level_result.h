// Compute once, then present: the per-level results of a run (statistics, SLO outcome, drift,
// send lag, the sweep's knee) built here while records stream in, each record's metrics computed
// once by the caller. report/ only formats a RunResult (console lines, summary.json); report.html
// reads the figures back from summary.json.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "analysis/knee.h"
#include "analysis/request_sample.h"
#include "load/level_run_info.h"
#include "metrics/aggregate.h"
#include "metrics/request_record.h"
#include "metrics/slo.h"
#include "metrics/stats.h"
#include "metrics/timeseries.h"

namespace tokperf {

struct LevelResult {
  LevelSummary summary;   // latency statistics, counts, throughput of the measured requests
  LevelRunInfo run;       // how the runner drove the level (rates, early stop)
  DistStats send_lag_ms;  // open loop: dispatch - intended start of measured arrivals
  // With objectives: the SLO outcome; its objective pointers point into *slo_spec.
  std::shared_ptr<const SloSpec> slo_spec;
  std::optional<SloReport> slo;
  DriftReport drift;
};

struct RunResult {
  std::vector<LevelResult> levels;  // levels that sent a measured request, in run order
  KneeResult knee;                  // of the sweep (needs 3+ levels of one kind)
};

// Collects every finished record of a run, once each, and turns them into a RunResult at the end.
// Not thread-safe: one per recorder thread.
class RunResultBuilder {
 public:
  // levels[i] describes level i (records with RequestTimeline::level == i); slo may be empty.
  RunResultBuilder(std::vector<LevelParams> levels, SloSpec slo);

  // `m` must be compute_request_metrics(t). Records of unknown levels are ignored.
  void add(const RequestTimeline& t, const RequestMetrics& m);

  // runs[i]: the runner's account of level i (levels without one are left out).
  RunResult finish(std::span<const LevelRunInfo> runs) const;

 private:
  struct Level {
    explicit Level(LevelParams p) : acc(std::move(p)) {}
    LevelAccumulator acc;
    std::vector<RequestMetrics> slo_metrics;  // measured requests, only with objectives
    std::vector<uint8_t> slo_ok;
    std::vector<DriftPoint> drift;  // measured, OK, with a token
  };
  std::shared_ptr<const SloSpec> slo_;
  std::vector<Level> levels_;
};

// Knee of a sweep on TTFT P95 against output throughput (needs 3+ levels of one kind).
KneeResult find_sweep_knee(std::span<const LevelSummary> levels);

// An SLO judged on saved request samples (report --slo on a saved run): the measured requests of
// `level` (-1: all) over window_s. `spec` must outlive the report.
SloReport evaluate_slo_on_samples(const SloSpec& spec, std::span<const RequestSample> requests,
                                  int level, double window_s);

}  // namespace tokperf
