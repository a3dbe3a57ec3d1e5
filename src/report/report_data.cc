// report_chart_data() and redact_config(): the data behind report.html's charts.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "report/html_report.h"

namespace tokperf {
namespace {

using nlohmann::json;

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

bool secret_name(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* word : {"key", "token", "secret", "password", "auth", "cookie"}) {
    if (name.find(word) != std::string::npos) return true;
  }
  return false;
}

json pcts(const DistStats& d) { return {{"p50", num(d.p50)}, {"p95", num(d.p95)}}; }

}  // namespace

// A CDF per level on one shared x grid (uPlot wants aligned data): the grid is cdf_points quantiles
// of the pooled sample; each level's y is the fraction of its own values <= x.
json cdf_chart_json(const std::vector<std::vector<double>>& per_level,
                    const std::vector<std::string>& labels, size_t points) {
  std::vector<double> pooled;
  for (const auto& v : per_level) pooled.insert(pooled.end(), v.begin(), v.end());
  std::sort(pooled.begin(), pooled.end());
  json out = {{"x", json::array()}, {"series", json::array()}};
  if (pooled.empty() || points < 2) return out;
  std::vector<double> grid;
  for (size_t i = 0; i < points; ++i) {
    double pos = static_cast<double>(i) * (pooled.size() - 1) / (points - 1);
    double x = pooled[static_cast<size_t>(std::llround(pos))];
    if (grid.empty() || x > grid.back()) grid.push_back(x);
  }
  out["x"] = grid;
  for (size_t l = 0; l < per_level.size(); ++l) {
    std::vector<double> v = per_level[l];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    json y = json::array();
    for (double x : grid) {
      auto n = std::upper_bound(v.begin(), v.end(), x) - v.begin();
      y.push_back(static_cast<double>(n) / static_cast<double>(v.size()));
    }
    out["series"].push_back({{"label", labels[l]}, {"y", std::move(y)}});
  }
  return out;
}

json redact_config(const json& config) {
  if (config.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : config.items()) {
      out[k] = secret_name(k) && v.is_string() && !v.get<std::string>().empty() ? json("<redacted>")
                                                                                : redact_config(v);
    }
    return out;
  }
  if (config.is_array()) {
    json out = json::array();
    for (const json& v : config) {
      if (v.is_string()) {
        const std::string s = v.get<std::string>();
        size_t colon = s.find(':');
        if (colon != std::string::npos && secret_name(s.substr(0, colon))) {
          out.push_back(s.substr(0, colon) + ": <redacted>");
          continue;
        }
      }
      out.push_back(redact_config(v));
    }
    return out;
  }
  return config;
}

json report_chart_data(const SavedRun& run, const ReportOptions& o) {
  json d;
  bool all_conc = !run.levels.empty(), all_rate = !run.levels.empty();
  for (const LevelSummary& s : run.levels) {
    all_conc = all_conc && s.params.concurrency > 0;
    all_rate = all_rate && std::isfinite(s.params.target_rate_rps);
  }
  d["load_axis"] = all_conc ? "concurrency" : all_rate ? "request rate (req/s)" : "level";
  d["levels"] = json::array();
  std::vector<std::string> labels;
  for (size_t i = 0; i < run.levels.size(); ++i) {
    const LevelSummary& s = run.levels[i];
    double load = all_conc   ? s.params.concurrency
                  : all_rate ? s.params.target_rate_rps
                             : static_cast<double>(i);
    labels.push_back(s.params.label.empty() ? "level " + std::to_string(i) : s.params.label);
    d["levels"].push_back({{"label", labels.back()},
                           {"load", load},
                           {"ttft", pcts(s.ttft)},
                           {"tpot", pcts(s.tpot)},
                           {"itl", pcts(s.itl)},
                           {"e2e", pcts(s.e2e)},
                           {"out_tps", num(s.output_token_throughput_tps)}});
  }
  // A run without level objects still gets one series of everything measured.
  if (labels.empty()) labels.push_back("all");
  auto level_index = [&](const RequestSample& r) -> size_t {
    for (size_t i = 0; i < run.levels.size(); ++i)
      if (run.levels[i].params.level == r.level || run.levels[i].params.level < 0) return i;
    return run.levels.empty() ? 0 : run.levels.size();
  };

  const char* names[] = {"ttft", "ttfo", "tpot", "itl", "e2e"};
  std::vector<std::vector<double>> samples[5];
  for (auto& s : samples) s.resize(labels.size());
  for (const RequestSample& r : run.requests) {
    if (!r.measured || !r.ok) continue;
    size_t li = level_index(r);
    if (li >= labels.size()) continue;
    for (auto [k, v] : {std::pair{0, r.ttft_ms}, {1, r.ttfo_ms}, {2, r.tpot_ms}, {4, r.e2e_ms}})
      if (std::isfinite(v)) samples[k][li].push_back(v);
    for (double g : r.itl_ms)
      if (std::isfinite(g)) samples[3][li].push_back(g);
  }
  d["cdf"] = json::object();
  for (int k = 0; k < 5; ++k) d["cdf"][names[k]] = cdf_chart_json(samples[k], labels, o.cdf_points);

  d["timeseries"] = nullptr;
  if (!run.timeseries.empty()) {
    json t = {{"t", json::array()},       {"in_flight", json::array()}, {"errors", json::array()},
              {"tok_s", json::array()},   {"ttft_p50", json::array()},  {"ttft_p95", json::array()},
              {"itl_p50", json::array()}, {"itl_p95", json::array()}};
    for (const TimeseriesRow& r : run.timeseries) {
      t["t"].push_back(r.second);
      t["in_flight"].push_back(r.in_flight);
      t["errors"].push_back(r.errors);
      t["tok_s"].push_back(num(r.output_tok_per_s));
      t["ttft_p50"].push_back(num(r.ttft_p50_ms));
      t["ttft_p95"].push_back(num(r.ttft_p95_ms));
      t["itl_p50"].push_back(num(r.itl_p50_ms));
      t["itl_p95"].push_back(num(r.itl_p95_ms));
    }
    // The engine's own metrics on the same time axis, when the run scraped them.
    const bool server = std::any_of(run.timeseries.begin(), run.timeseries.end(),
                                    [](const TimeseriesRow& r) {
                                      return std::isfinite(r.server_running) ||
                                             std::isfinite(r.server_gen_tok_per_s);
                                    });
    if (server) {
      for (const char* k : {"server_running", "server_waiting", "server_kv_pct",
                            "server_gen_tok_s", "server_preemptions"}) {
        t[k] = json::array();
      }
      for (const TimeseriesRow& r : run.timeseries) {
        t["server_running"].push_back(num(r.server_running));
        t["server_waiting"].push_back(num(r.server_waiting));
        t["server_kv_pct"].push_back(num(r.server_kv_usage * 100));
        t["server_gen_tok_s"].push_back(num(r.server_gen_tok_per_s));
        t["server_preemptions"].push_back(num(r.server_preemptions));
      }
    }
    d["timeseries"] = std::move(t);
  }

  // Timeline: measured requests by intended start, evenly thinned to max_timeline_rows.
  std::vector<const RequestSample*> rows;
  for (const RequestSample& r : run.requests)
    if (r.measured) rows.push_back(&r);
  auto intended_us = [](const RequestSample* r) {
    return static_cast<double>(r->start_unix_us) - r->queue_ms * 1000;
  };
  std::sort(rows.begin(), rows.end(),
            [&](auto* a, auto* b) { return intended_us(a) < intended_us(b); });
  d["timeline"] = json::array();
  if (!rows.empty()) {
    double t0 = intended_us(rows.front());
    size_t step =
        (rows.size() + o.max_timeline_rows - 1) / std::max<size_t>(o.max_timeline_rows, 1);
    for (size_t i = 0; i < rows.size(); i += std::max<size_t>(step, 1)) {
      const RequestSample* r = rows[i];
      double end = std::isfinite(r->e2e_ms) ? r->e2e_ms : std::isfinite(r->end_ms) ? r->end_ms : 0;
      d["timeline"].push_back({{"t0_ms", (intended_us(r) - t0) / 1000},
                               {"queue_ms", r->queue_ms},
                               {"ttft_ms", num(r->ttft_ms)},
                               {"e2e_ms", num(r->e2e_ms)},
                               {"end_ms", end},
                               {"ok", r->ok}});
    }
  }

  // The objectives as summary.json recorded them with the run's SLO outcome.
  d["slo"] = json::array();
  for (size_t i = 0; i < run.levels.size(); ++i) {
    const json* slo = level_slo_json(run, i);
    if (slo == nullptr || !slo->contains("objectives")) continue;
    for (const json& ob : (*slo)["objectives"]) {
      const std::string text = ob.value("objective", "");
      d["slo"].push_back({{"metric", text.substr(0, text.find(':'))},
                          {"threshold_ms", ob.value("threshold_ms", 0.0)},
                          {"text", text}});
    }
    break;
  }
  return d;
}

}  // namespace tokperf
