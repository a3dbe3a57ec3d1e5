// Presents a run's per-level results (analysis/level_result.h): what a level's load did beyond its
// latency statistics (achieved vs target rate, send lag, the schedule fingerprint, early stops),
// SLO goodput/attainment/objectives, drift, and the knee of a sweep. Only formats: every figure was
// computed once, in analysis. summary.json is built here and nowhere else (docs/summary-schema.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/level_result.h"
#include "metrics/client_health.h"
#include "report/json_output.h"

namespace tokperf {

// The "load", "slo" (with objectives) and "drift" objects of one summary.json level.
nlohmann::json level_result_json(const LevelResult& r);
nlohmann::json slo_report_json(const SloReport& r);
nlohmann::json knee_json(const KneeResult& k);

// The whole summary.json document of a run: summary_json()'s statistics, each level's
// level_result_json(), the knee and run.files.
nlohmann::json run_summary_json(const nlohmann::json& config_redacted, const RunResult& result,
                                const ClientHealth& health, const RunInfo& run);

// The lines printed under the level table: rates, send lag, goodput, SLO verdicts, stops, drift.
std::string render_level_details(const RunResult& result);

}  // namespace tokperf
