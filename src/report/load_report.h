// What a level's load did beyond its latency statistics (issue 3): achieved vs target rate, send lag,
// the schedule fingerprint, early stops, SLO goodput/attainment/objectives and drift; and the knee of
// a sweep. Built from the runner's LevelRunInfo and the level's records; printed and written into
// summary.json (docs/summary-schema.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/knee.h"
#include "load/bench_runner.h"
#include "metrics/aggregate.h"
#include "metrics/slo.h"
#include "metrics/stats.h"
#include "metrics/timeseries.h"

namespace tokperf {

struct LevelReport {
  LevelRunInfo run;
  DistStats send_lag_ms;  // open loop only
  bool has_slo = false;
  SloReport slo;
  SloSpec slo_spec;       // kept so slo.objectives' pointers stay valid
  DriftReport drift;
};

// REQUIRES: records hold every record of the run (all levels and phases).
LevelReport make_level_report(const LevelSummary& summary, const LevelRunInfo& run,
                              const std::vector<RequestTimeline>& records, const SloSpec& slo);

nlohmann::json level_report_json(const LevelReport& r);

// The lines printed under the level table: rates, send lag, goodput, SLO verdicts, stops, drift.
std::string render_level_details(const std::vector<LevelSummary>& levels,
                                  const std::vector<LevelReport>& reports, const SloSpec& slo);

// Knee of a sweep on TTFT P95 against output throughput (needs 3+ levels of one kind).
KneeResult find_sweep_knee(const std::vector<LevelSummary>& levels);
nlohmann::json knee_json(const KneeResult& k);

}  // namespace tokperf
