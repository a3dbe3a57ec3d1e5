// Presents a run's per-level results (analysis/level_result.h): what a level's load did beyond its
// latency statistics (achieved vs target rate, send lag, the schedule fingerprint, early stops),
// SLO goodput/attainment/objectives, drift, and the knee of a sweep. Only formats: every figure was
// computed once, in analysis. summary.json is built here and nowhere else (docs/summary-schema.md).
#pragma once

#include <map>

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/level_result.h"
#include "metrics/client_health.h"
#include "report/json_output.h"

namespace tokperf {

// The "load", "slo" (with objectives) and "drift" objects of one summary.json level.
nlohmann::json level_result_json(const LevelResult& r);
nlohmann::json slo_report_json(const SloReport& r);
// levels[i].workload: requested vs served tokens, prefix-cache hit rate, TTFT by hit/miss.
nlohmann::json workload_stats_json(const WorkloadLevelStats& w);
nlohmann::json knee_json(const KneeResult& k);

// Sections computed outside the client's records (the server's own metrics, servermetrics/), already
// in their summary.json form: "server" at the top, and levels[i].server by level index.
struct ExtraSections {
  nlohmann::json server;                   // null: none
  std::map<int, nlohmann::json> server_by_level;
};

// The whole summary.json document of a run: summary_json()'s statistics, each level's
// level_result_json(), the knee, run.files and the extra sections. The one place it is built.
nlohmann::json run_summary_json(const nlohmann::json& config_redacted, const RunResult& result,
                                const ClientHealth& health, const RunInfo& run,
                                const ExtraSections& extra = {});

// The lines printed under the level table: rates, send lag, goodput, SLO verdicts, stops, drift.
std::string render_level_details(const RunResult& result);

}  // namespace tokperf
