#include "servermetrics/server_window.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace tokperf::servermetrics {
namespace {

struct SeriesInfo {
  std::string name;
  Labels labels;
  MetricType type = MetricType::kUntyped;
};

bool counter_like(const SeriesInfo& s) {
  if (s.name.ends_with("_created")) return false;       // a timestamp, not a count
  if (s.name == "llamacpp:n_tokens_max") return false;  // typed counter, but a maximum
  switch (s.type) {
    case MetricType::kCounter:
    case MetricType::kHistogram:
    case MetricType::kSummary:
      return true;
    case MetricType::kUntyped:
      return s.name.ends_with("_total") || s.name.ends_with("_bucket") ||
             s.name.ends_with("_count") || s.name.ends_with("_sum");
    default:
      return false;
  }
}

const std::string* label(const Labels& l, std::string_view name) {
  for (const auto& [k, v] : l) {
    if (k == name) return &v;
  }
  return nullptr;
}

}  // namespace

std::optional<BucketPercentile> HistogramDelta::percentile(double q) const {
  if (count <= 0 || cumulative.empty()) return std::nullopt;
  const double total = cumulative.back();
  if (total <= 0) return std::nullopt;
  const double rank = q * total;
  double prev_cum = 0, prev_bound = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (cumulative[i] >= rank && cumulative[i] > prev_cum) {
      const double lo = (i == 0 && bounds[0] <= 0) ? bounds[0] : prev_bound;
      const double frac = (rank - prev_cum) / (cumulative[i] - prev_cum);
      return BucketPercentile{lo + (bounds[i] - lo) * std::clamp(frac, 0.0, 1.0), lo, bounds[i]};
    }
    prev_cum = cumulative[i];
    prev_bound = bounds[i];
  }
  // In the +Inf bucket: all that is known is "above the last bound".
  return BucketPercentile{prev_bound, prev_bound, std::numeric_limits<double>::infinity()};
}

std::optional<ServerWindow> compute_window(std::span<const Scrape> all) {
  std::vector<const Scrape*> scrapes;
  for (const Scrape& s : all) {
    if (s.ok) scrapes.push_back(&s);
  }
  if (scrapes.size() < 2) return std::nullopt;
  ServerWindow w;
  w.start_ns = scrapes.front()->t_ns;
  w.end_ns = scrapes.back()->t_ns;
  w.scrapes = static_cast<int64_t>(scrapes.size()) - 1;
  w.engine = detect_engine(scrapes.back()->data);

  // Every series' reset-aware delta and its gauge statistics (inside the window: after the start).
  std::unordered_map<std::string, SeriesInfo> info;
  std::unordered_map<std::string, double> delta, prev;
  std::unordered_map<std::string, GaugeWindow> gauge;
  for (size_t k = 0; k < scrapes.size(); ++k) {
    const Exposition& e = scrapes[k]->data;
    for (const Sample& s : e.samples) {
      std::string key = series_key(s.name, s.labels);
      auto [it, fresh] = info.try_emplace(key);
      if (fresh) it->second = SeriesInfo{s.name, s.labels, e.type_of(s.name)};
      const double v = s.value;
      if (std::isnan(v)) continue;
      auto p = prev.find(key);
      if (p != prev.end()) {
        double d = v - p->second;
        if (d < 0) {  // the counter restarted from zero
          if (counter_like(it->second)) ++w.counter_resets;
          d = v;
        }
        delta[key] += d;
        p->second = v;
      } else {
        if (k > 0)
          delta[key] += v;  // a series born inside the window started at zero
        else
          delta.try_emplace(key, 0.0);
        prev.emplace(key, v);
      }
      if (k > 0) {
        GaugeWindow& g = gauge[key];
        g.mean += v;  // the sum until divided below
        g.max = g.samples == 0 ? v : std::max(g.max, v);
        g.last = v;
        ++g.samples;
      }
    }
  }
  for (auto& [key, g] : gauge) {
    if (g.samples > 0) g.mean /= static_cast<double>(g.samples);
  }
  for (const auto& [key, si] : info) {
    if (counter_like(si)) {
      auto d = delta.find(key);
      if (d != delta.end()) w.counter_deltas[key] = d->second;
    } else if (si.type == MetricType::kGauge || si.type == MetricType::kUntyped) {
      auto g = gauge.find(key);
      if (g != gauge.end()) w.gauges[key] = g->second;
    }
  }

  // Histograms: every family with `_bucket{le}` series, labels other than le summed.
  std::map<std::string, std::map<double, double>> buckets;  // family -> le -> Δcumulative
  for (const auto& [key, si] : info) {
    if (!si.name.ends_with("_bucket")) continue;
    const std::string* le = label(si.labels, "le");
    if (!le) continue;
    auto bound = parse_prom_float(*le);
    if (!bound || std::isnan(*bound)) continue;
    const std::string family = si.name.substr(0, si.name.size() - 7);
    auto d = delta.find(key);
    buckets[family][*bound] += d == delta.end() ? 0.0 : d->second;
  }
  for (auto& [family, by_le] : buckets) {
    HistogramDelta h;
    for (const auto& [le, c] : by_le) {
      if (std::isinf(le)) continue;
      h.bounds.push_back(le);
      h.cumulative.push_back(c);
    }
    auto inf = by_le.find(std::numeric_limits<double>::infinity());
    for (const auto& [key, si] : info) {
      auto d = delta.find(key);
      if (d == delta.end()) continue;
      if (si.name == family + "_sum") h.sum += d->second;
      if (si.name == family + "_count") h.count += d->second;
    }
    h.cumulative.push_back(inf != by_le.end() ? inf->second : h.count);
    if (inf == by_le.end() && h.count == 0 && !h.cumulative.empty()) {
      h.count = h.cumulative.back();
    }
    w.histograms[family] = std::move(h);
  }

  // Concepts through the engine's mapping: the first name the page has wins.
  for (const MappingEntry& m : mapping_table()) {
    if (m.engine != w.engine) continue;
    const size_t ci = static_cast<size_t>(m.concept_id);
    if (!w.source[ci].empty()) continue;
    const std::string family(m.family);
    switch (m.shape) {
      case Shape::kHistogram: {
        auto it = w.histograms.find(family);
        if (it == w.histograms.end()) break;
        HistogramDelta h = it->second;
        for (double& b : h.bounds) b *= m.to_seconds;
        h.sum *= m.to_seconds;
        w.hist[ci] = std::move(h);
        w.source[ci] = family;
        break;
      }
      case Shape::kHistogramSum: {
        auto it = w.histograms.find(family);
        if (it == w.histograms.end()) break;
        w.counter[ci] = it->second.sum;
        w.source[ci] = family;
        break;
      }
      case Shape::kCounter: {
        double sum = 0;
        bool found = false;
        for (const auto& [key, si] : info) {
          if (si.name != family && si.name != family + "_total") continue;
          auto d = delta.find(key);
          if (d == delta.end()) continue;
          sum += d->second;
          found = true;
        }
        if (!found) break;
        w.counter[ci] = sum;
        w.source[ci] = family;
        break;
      }
      case Shape::kGauge: {
        GaugeWindow g;
        for (size_t k = 1; k < scrapes.size(); ++k) {
          double v = 0;
          bool any = false;
          for (const Sample& s : scrapes[k]->data.samples) {
            if (s.name == family && !std::isnan(s.value)) {
              v += s.value;
              any = true;
            }
          }
          if (!any) continue;
          g.mean += v;
          g.max = g.samples == 0 ? v : std::max(g.max, v);
          g.last = v;
          ++g.samples;
        }
        if (g.samples == 0) break;
        g.mean /= static_cast<double>(g.samples);
        w.gauge[ci] = g;
        w.source[ci] = family;
        break;
      }
    }
  }
  return w;
}

nlohmann::json window_json(const ServerWindow& w) {
  nlohmann::json j;
  j["engine"] = engine_name(w.engine);
  j["scrapes"] = w.scrapes;
  j["span_s"] = static_cast<double>(w.end_ns - w.start_ns) / 1e9;
  j["counter_resets"] = w.counter_resets;
  nlohmann::json concepts = nlohmann::json::object();
  auto pct = [](const HistogramDelta& h, double q) -> nlohmann::json {
    auto p = h.percentile(q);
    if (!p) return nullptr;
    return {{"value_s", p->value},
            {"bucket_s",
             {p->lower, std::isinf(p->upper) ? nlohmann::json("+Inf") : nlohmann::json(p->upper)}}};
  };
  for (size_t i = 0; i < static_cast<size_t>(Concept::kCount_); ++i) {
    if (w.source[i].empty()) continue;
    nlohmann::json c{{"source", w.source[i]}};
    if (w.hist[i]) {
      const HistogramDelta& h = *w.hist[i];
      c["count"] = h.count;
      c["mean_s"] = h.count > 0 ? nlohmann::json(h.mean()) : nlohmann::json(nullptr);
      c["p50"] = pct(h, 0.5);
      c["p90"] = pct(h, 0.9);
      c["p99"] = pct(h, 0.99);
      c["percentiles_from"] = "buckets (interpolated; true value lies in bucket_s)";
    }
    if (w.counter[i]) c["delta"] = *w.counter[i];
    if (w.gauge[i]) {
      c["mean"] = w.gauge[i]->mean;
      c["max"] = w.gauge[i]->max;
      c["last"] = w.gauge[i]->last;
    }
    concepts[concept_name(static_cast<Concept>(i))] = std::move(c);
  }
  j["concepts"] = std::move(concepts);
  j["counters"] = w.counter_deltas;
  nlohmann::json gauges = nlohmann::json::object();
  for (const auto& [k, g] : w.gauges) gauges[k] = {{"mean", g.mean}, {"max", g.max}};
  j["gauges"] = std::move(gauges);
  return j;
}

}  // namespace tokperf::servermetrics
