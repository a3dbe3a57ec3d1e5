// report.html: one self-contained page that explains a run at a glance and opens offline (the chart
// library and every byte of data are inlined; nothing is fetched at view time). Sections: headline
// cards, diagnosis, perceived speed, per-level table, charts (CDFs, latency vs load with SLO lines,
// throughput vs latency, per-second time series, per-request timeline), errors, the configuration
// with secrets redacted. What each chart shows: docs/REPORTS.md.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "analysis/perceived_speed.h"
#include "core/result.h"
#include "report/run_loader.h"

namespace tokperf {

struct ReportOptions {
  std::string title;     // "" : "tokperf report" plus the run's folder
  std::string slo_text;  // "" : the run's own SLO (config "slo"), if any; same syntax as --slo
  PerceivedOptions perceived;
  DiagnosisThresholds thresholds;
  size_t max_timeline_rows = 400;  // requests drawn in the timeline (evenly sampled beyond that)
  size_t cdf_points = 200;         // x positions per CDF chart
};

// The page for a loaded run. Throws nothing; an unparsable slo_text is reported inside the page.
std::string render_report_html(const SavedRun& run, const ReportOptions& options = {});

// Loads the run in `dir` (summary.json, requests.jsonl, timeseries.csv), renders it and writes
// `dir`/report.html atomically. This is what bench calls after writing its outputs.
Status write_report_html(const std::string& dir, const ReportOptions& options = {});

// The data the page's script draws (embedded as JSON): levels, CDFs, time series, timeline, SLO.
nlohmann::json report_chart_data(const SavedRun& run, const ReportOptions& options);

// A copy of `config` with secret-looking values (keys naming key/token/secret/password/auth/cookie,
// and "Name: value" headers with such names) replaced by "<redacted>".
nlohmann::json redact_config(const nlohmann::json& config);

}  // namespace tokperf
