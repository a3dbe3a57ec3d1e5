// report.html: one self-contained page that explains a run at a glance and opens offline (the chart
// library and every byte of data are inlined; nothing is fetched at view time). Sections: headline
// cards, diagnosis, perceived speed, per-level table, charts (CDFs, latency vs load with SLO lines,
// throughput vs latency, per-second time series, per-request timeline), errors, the configuration
// with secrets redacted. What each chart shows: docs/REPORTS.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "analysis/perceived_speed.h"
#include "analysis/roofline.h"
#include "core/result.h"
#include "report/run_loader.h"

namespace tokperf {

struct ReportOptions {
  std::string title;  // "" : "tokperf report" plus the run's folder
  PerceivedOptions perceived;
  DiagnosisThresholds thresholds;
  size_t max_timeline_rows = 400;  // requests drawn in the timeline (evenly sampled beyond that)
  size_t cdf_points = 200;         // x positions per CDF chart
  // write_report_html reads at most this many records (evenly spread; run_loader.h), so the report
  // of a million-request run is built in bounded memory. 0: all.
  size_t max_requests = 10'000;
  // What was measured, stated by the user (`report --gpu/--model/--dtype/--tp`); wins over the
  // deployment the run recorded itself. Neither: no roofline section.
  std::optional<sim::DeploymentFlags> deployment;
};

// The page for a loaded run. Throws nothing. Every SLO figure comes from summary.json.
std::string render_report_html(const SavedRun& run, const ReportOptions& options = {});

// Loads the run in `dir` (summary.json, requests.jsonl, timeseries.csv), renders it and writes
// `dir`/report.html atomically. This is what bench calls after writing its outputs, handing over
// `kept`: the sample of its records it kept while writing them (a RecordSampler bounded by
// options.max_requests), so requests.jsonl is not read back; the page is the one `tokperf report`
// renders from the files.
Status write_report_html(const std::string& dir, const ReportOptions& options = {},
                         RecordSampler* kept = nullptr);

// The run's roofline (analysis/roofline.h) from options.deployment, else the deployment its config
// recorded; nullopt when neither says what was measured. Fails when the deployment does not
// resolve.
Result<std::optional<Roofline>> report_roofline(const SavedRun& run, const ReportOptions& options);

// The data the page's script draws (embedded as JSON): levels, CDFs, time series, timeline, SLO
// lines (the objectives summary.json recorded).
nlohmann::json report_chart_data(const SavedRun& run, const ReportOptions& options);

// CDFs of several samples on one shared x grid (uPlot wants aligned data): `points` quantiles of
// the pooled values; each series' y is the fraction of its own values <= x. Empty samples get no
// series. {"x": [...], "series": [{"label", "y"}]}.
nlohmann::json cdf_chart_json(const std::vector<std::vector<double>>& samples,
                              const std::vector<std::string>& labels, size_t points);

// A copy of `config` with secret-looking values (keys naming key/token/secret/password/auth/cookie,
// and "Name: value" headers with such names) replaced by "<redacted>".
nlohmann::json redact_config(const nlohmann::json& config);

}  // namespace tokperf
