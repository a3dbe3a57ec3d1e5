// What the server's own metrics say about one window of a run (a load level): reset-aware counter
// deltas, histogram deltas with exact means (Δsum/Δcount) and bucket-interpolated percentiles that
// carry their bucket, gauge mean/max over the scrapes taken inside the window — raw for every
// series, and per common concept through the engine mapping. Definitions: docs/SERVER-METRICS.md.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "servermetrics/engine_map.h"
#include "servermetrics/exposition_parser.h"

namespace tokperf::servermetrics {

// One scrape of one URL, stamped on the client's monotonic clock.
struct Scrape {
  int64_t t_ns = 0;  // midpoint of the request, monotonic (the client's clock)
  bool ok = false;   // false: no usable exposition (error says why)
  std::string error;
  Exposition data;
};

// A percentile read from buckets: somewhere in [lower, upper] (upper may be +Inf), interpolated
// linearly inside the bucket as Prometheus' histogram_quantile does.
struct BucketPercentile {
  double value = 0;
  double lower = 0, upper = 0;
};

struct HistogramDelta {
  double count = 0;  // observations in the window
  double sum = 0;    // their sum (seconds after scaling)
  double mean() const { return count > 0 ? sum / count : 0; }
  std::vector<double> bounds;      // finite upper bounds, ascending (seconds after scaling)
  std::vector<double> cumulative;  // Δ cumulative counts per bound, then +Inf last
  std::optional<BucketPercentile> percentile(double q) const;  // q in (0,1); none when count 0
};

struct GaugeWindow {
  double mean = 0, max = 0, last = 0;
  int64_t samples = 0;
};

struct ServerWindow {
  Engine engine = Engine::kUnknown;
  int64_t start_ns = 0, end_ns = 0;  // the scrapes bounding the window
  int64_t scrapes = 0;               // ok scrapes inside (end included)
  int64_t counter_resets = 0;        // series seen going down (a restart)
  // Raw: every counter/histogram series' delta and every gauge, by series key.
  std::map<std::string, double> counter_deltas;
  std::map<std::string, GaugeWindow> gauges;
  std::map<std::string, HistogramDelta> histograms;  // by family, labels summed, unscaled
  // Per concept, through the engine's mapping (labels summed).
  std::array<std::optional<HistogramDelta>, static_cast<size_t>(Concept::kCount_)> hist;
  std::array<std::optional<double>, static_cast<size_t>(Concept::kCount_)> counter;
  std::array<std::optional<GaugeWindow>, static_cast<size_t>(Concept::kCount_)> gauge;
  std::array<std::string, static_cast<size_t>(Concept::kCount_)> source;  // series family used

  const HistogramDelta* h(Concept c) const {
    auto& v = hist[static_cast<size_t>(c)];
    return v ? &*v : nullptr;
  }
  std::optional<double> c(Concept k) const { return counter[static_cast<size_t>(k)]; }
  const GaugeWindow* g(Concept k) const {
    auto& v = gauge[static_cast<size_t>(k)];
    return v ? &*v : nullptr;
  }
};

// The window from `scrapes.front()` (its start) to `scrapes.back()`. REQUIRES: ordered by t_ns.
// Failed scrapes are skipped; nullopt when fewer than two ok scrapes remain.
std::optional<ServerWindow> compute_window(std::span<const Scrape> scrapes);

// {"engine", "scrapes", "counter_resets", "concepts": {name: {...}}, "counters": {...}} with
// percentiles as {"value", "bucket": [lo, hi]} — what summary.json carries per level.
nlohmann::json window_json(const ServerWindow& w);

}  // namespace tokperf::servermetrics
