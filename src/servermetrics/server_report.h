// The server's view of a finished run, per level: the scraped windows (several URLs merged, as
// replicas of one service), the TTFT decomposition, the per-request decomposition where responses
// carried the server's timings, and the server's columns for timeseries.csv on the client's clock.
// Why the view is missing when it is (URL down, HTML, no samples). Definitions:
// docs/SERVER-METRICS.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/request_record.h"
#include "metrics/timeseries.h"
#include "servermetrics/scraper.h"
#include "servermetrics/server_window.h"
#include "servermetrics/ttft_decomposition.h"

namespace tokperf::servermetrics {

struct ServerLevel {
  int level = 0;
  std::optional<ServerWindow> window;  // merged over every URL that answered
  LevelDecomposition decomposition;
  RequestDecomposition per_request;
};

struct ServerReport {
  bool scraped = false;        // --server-metrics was on
  std::string missing_reason;  // empty when at least one level has a server window
  std::vector<UrlSeries> urls;
  std::vector<ServerLevel> levels;
  bool has_windows() const;
  bool has_per_request() const;
};

// The window of level i on one URL: from the scrape that ended level i-1 (the baseline for the
// first level) to the scrape taken right after level i ended (the last scrape when that is
// missing).
std::optional<ServerWindow> level_window(const UrlSeries& u, int level);

// Adds windows of replicas: counters and histograms (same bounds) add, gauges add (per-replica
// means and maxima summed: an upper bound for the max).
ServerWindow merge_windows(std::span<const ServerWindow> windows);

// `levels`: the level indices that ran, in order. `urls` empty: no scraping (per request only).
ServerReport build_server_report(std::vector<UrlSeries> urls, bool scraped,
                                 std::span<const int> levels,
                                 std::span<const RequestDigest> requests);
ServerReport build_server_report(std::vector<UrlSeries> urls, bool scraped,
                                 std::span<const int> levels,
                                 std::span<const RequestTimeline> records);

// summary.json: {"status": "ok"|"missing"|"per_request_only", "missing_reason", "urls": [...]}
nlohmann::json server_run_json(const ServerReport& r);
// summary.json levels[i]["server"]: the window (window_json), "ttft_decomposition", "per_request".
nlohmann::json server_level_json(const ServerLevel& l);

// Printed beside the level table: one line per level plus the buckets' resolution; or why the
// server view is missing.
std::string render_server_view(const ServerReport& r, std::span<const std::string> level_labels);

// server_running, server_waiting, server_kv_usage, server_gen_tok_per_s, server_preemptions: one
// value per 1 s row from run_start_ns (the client's monotonic clock); NaN where no scrape fell.
std::vector<TimeseriesColumn> server_timeseries_columns(const ServerReport& r, int64_t run_start_ns,
                                                        size_t rows);

}  // namespace tokperf::servermetrics
