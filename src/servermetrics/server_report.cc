#include "servermetrics/server_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace tokperf::servermetrics {
namespace {

std::string ms(double v) { return std::isfinite(v) ? fmt::format("{:.1f}", v) : "-"; }

}  // namespace

bool ServerReport::has_windows() const {
  return std::any_of(levels.begin(), levels.end(), [](const ServerLevel& l) { return l.window; });
}
bool ServerReport::has_per_request() const {
  return std::any_of(levels.begin(), levels.end(),
                     [](const ServerLevel& l) { return l.per_request.requests > 0; });
}

std::optional<ServerWindow> level_window(const UrlSeries& u, int level) {
  if (u.scrapes.empty()) return std::nullopt;
  size_t from = 0;
  if (level > 0) {
    auto prev = u.level_end.find(level - 1);
    if (prev != u.level_end.end()) from = prev->second;
  }
  auto end = u.level_end.find(level);
  const size_t to = end != u.level_end.end() ? end->second : u.scrapes.size() - 1;
  if (to <= from) return std::nullopt;
  return compute_window(std::span<const Scrape>(u.scrapes).subspan(from, to - from + 1));
}

ServerWindow merge_windows(std::span<const ServerWindow> ws) {
  ServerWindow m = ws.front();
  for (size_t k = 1; k < ws.size(); ++k) {
    const ServerWindow& w = ws[k];
    m.start_ns = std::min(m.start_ns, w.start_ns);
    m.end_ns = std::max(m.end_ns, w.end_ns);
    m.scrapes += w.scrapes;
    m.counter_resets += w.counter_resets;
    if (m.engine != w.engine) m.engine = Engine::kUnknown;
    for (size_t i = 0; i < m.hist.size(); ++i) {
      if (m.hist[i] && w.hist[i] && m.hist[i]->bounds == w.hist[i]->bounds) {
        m.hist[i]->count += w.hist[i]->count;
        m.hist[i]->sum += w.hist[i]->sum;
        for (size_t b = 0; b < m.hist[i]->cumulative.size(); ++b) {
          m.hist[i]->cumulative[b] += w.hist[i]->cumulative[b];
        }
      } else if (!m.hist[i] && w.hist[i]) {
        m.hist[i] = w.hist[i];
        m.source[i] = w.source[i];
      }
      if (w.counter[i]) m.counter[i] = m.counter[i].value_or(0) + *w.counter[i];
      if (w.gauge[i]) {
        if (!m.gauge[i]) {
          m.gauge[i] = w.gauge[i];
        } else {
          m.gauge[i]->mean += w.gauge[i]->mean;
          m.gauge[i]->max += w.gauge[i]->max;
          m.gauge[i]->last += w.gauge[i]->last;
        }
      }
      if (m.source[i].empty()) m.source[i] = w.source[i];
    }
    for (const auto& [k2, v] : w.counter_deltas) m.counter_deltas[k2] += v;
  }
  // KV usage is a fraction per replica: the merged view keeps the fullest replica, not a sum.
  const size_t kv = static_cast<size_t>(Concept::kKvUsage);
  if (m.gauge[kv]) {
    GaugeWindow g = *ws.front().gauge[kv];
    for (const auto& w : ws) {
      if (w.gauge[kv]) {
        g.max = std::max(g.max, w.gauge[kv]->max);
        g.mean = std::max(g.mean, w.gauge[kv]->mean);
      }
    }
    m.gauge[kv] = g;
  }
  return m;
}

ServerReport build_server_report(std::vector<UrlSeries> urls, bool scraped,
                                 std::span<const int> levels,
                                 std::span<const RequestTimeline> records) {
  return build_server_report(std::move(urls), scraped, levels, digests_of(records));
}

ServerReport build_server_report(std::vector<UrlSeries> urls, bool scraped,
                                 std::span<const int> levels,
                                 std::span<const RequestDigest> records) {
  ServerReport r;
  r.scraped = scraped;
  r.urls = std::move(urls);
  for (int level : levels) {
    ServerLevel l;
    l.level = level;
    std::vector<ServerWindow> ws;
    for (const UrlSeries& u : r.urls) {
      if (auto w = level_window(u, level)) ws.push_back(std::move(*w));
    }
    if (!ws.empty()) {
      l.window = merge_windows(ws);
      l.decomposition = decompose_level(records, level, *l.window);
    }
    l.per_request = decompose_requests(records, level);
    r.levels.push_back(std::move(l));
  }
  if (scraped && !r.has_windows()) {
    std::vector<std::string> why;
    for (const UrlSeries& u : r.urls) {
      const int64_t ok = static_cast<int64_t>(u.scrapes.size()) - u.failed;
      if (u.failed > 0) {
        why.push_back(fmt::format("{}: {} of {} scrapes failed, first: {}", u.url, u.failed,
                                  u.scrapes.size(), u.first_error));
      } else if (ok < 2) {
        why.push_back(fmt::format("{}: only {} scrape(s), two are needed per level", u.url, ok));
      }
    }
    r.missing_reason = why.empty() ? std::string("no scrape bounded a level")
                                   : fmt::format("{}", fmt::join(why, "; "));
  }
  return r;
}

nlohmann::json server_run_json(const ServerReport& r) {
  nlohmann::json j;
  j["status"] = r.has_windows() ? "ok" : r.has_per_request() ? "per_request_only" : "missing";
  j["scraped"] = r.scraped;
  if (!r.missing_reason.empty()) j["missing_reason"] = r.missing_reason;
  nlohmann::json urls = nlohmann::json::array();
  for (const UrlSeries& u : r.urls) {
    Engine e = Engine::kUnknown;
    for (auto it = u.scrapes.rbegin(); it != u.scrapes.rend(); ++it) {
      if (it->ok) {
        e = detect_engine(it->data);
        break;
      }
    }
    urls.push_back({{"url", u.url},
                    {"engine", engine_name(e)},
                    {"scrapes", u.scrapes.size()},
                    {"failed", u.failed},
                    {"first_error",
                     u.first_error.empty() ? nlohmann::json() : nlohmann::json(u.first_error)}});
  }
  j["urls"] = std::move(urls);
  return j;
}

nlohmann::json server_level_json(const ServerLevel& l) {
  nlohmann::json j = l.window ? window_json(*l.window) : nlohmann::json::object();
  if (l.window) j["ttft_decomposition"] = level_decomposition_json(l.decomposition);
  if (l.per_request.requests > 0) j["per_request"] = request_decomposition_json(l.per_request);
  return j;
}

std::string render_server_view(const ServerReport& r, std::span<const std::string> labels) {
  std::string out;
  auto label = [&](size_t i) {
    return i < labels.size() ? labels[i] : std::to_string(r.levels[i].level + 1);
  };
  if (r.scraped && !r.has_windows()) {
    out += fmt::format("server view: missing ({})\n", r.missing_reason);
  }
  if (r.has_windows()) {
    std::string engine;
    for (const auto& l : r.levels) {
      if (l.window) {
        engine = engine_name(l.window->engine);
        break;
      }
    }
    out += fmt::format("server view ({}, {} URL{}): TTFT decomposition, means in ms\n", engine,
                       r.urls.size(), r.urls.size() == 1 ? "" : "s");
    out += fmt::format("{:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>15} {:>8} {:>8} {:>7} {:>8}\n",
                       "level", "client", "outside", "queue", "prefill", "overhead", "dominant",
                       "running", "waiting", "KV max", "preempt");
    for (size_t i = 0; i < r.levels.size(); ++i) {
      const ServerLevel& l = r.levels[i];
      if (!l.window) {
        out += fmt::format("{:>10} (no server window)\n", label(i));
        continue;
      }
      const LevelDecomposition& d = l.decomposition;
      const ServerWindow& w = *l.window;
      auto gmean = [&](Concept c) {
        const GaugeWindow* g = w.g(c);
        return g ? fmt::format("{:.1f}", g->mean) : std::string("-");
      };
      const GaugeWindow* kv = w.g(Concept::kKvUsage);
      auto pre = w.c(Concept::kPreemptions);
      out += fmt::format("{:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>15} {:>8} {:>8} {:>7} {:>8}\n",
                         label(i), ms(d.client_ttft_mean_ms), ms(d.outside_server_ms),
                         ms(d.queue_mean_ms), ms(d.prefill_mean_ms), ms(d.server_overhead_ms),
                         d.dominant.empty() ? "-" : d.dominant, gmean(Concept::kRunning),
                         gmean(Concept::kWaiting),
                         kv ? fmt::format("{:.0f}%", kv->max * 100) : std::string("-"),
                         pre ? fmt::format("{:.0f}", *pre) : std::string("-"));
      if (!d.resolution.empty()) {
        out += fmt::format("{:>10}   server percentiles from buckets: {}\n", "", d.resolution);
      }
      // Token counters beside what the client received (same window, all phases).
      std::string tokens;
      if (auto p = w.c(Concept::kPromptTokens)) {
        tokens += fmt::format("prompt {:.0f} (client usage {})", *p, d.client_prompt_tokens);
      }
      if (auto g = w.c(Concept::kGenerationTokens)) {
        tokens += fmt::format("{}generated {:.0f} (client {})", tokens.empty() ? "" : ", ", *g,
                              d.client_output_tokens);
      }
      if (auto ps = w.c(Concept::kPrefillSeconds)) {
        tokens += fmt::format("{}prefill time {:.3f} s", tokens.empty() ? "" : ", ", *ps);
      }
      if (auto ds = w.c(Concept::kDecodeSeconds)) {
        tokens += fmt::format("{}decode time {:.3f} s", tokens.empty() ? "" : ", ", *ds);
      }
      if (!tokens.empty()) out += fmt::format("{:>10}   server counters: {}\n", "", tokens);
    }
    out +=
        "  (client = outside + queue + prefill + overhead; outside = client − server TTFT: "
        "network, HTTP, gateway; the server's clock is its own, so compare means over the "
        "same window)\n";
  }
  if (r.has_per_request()) {
    out += "server timings in responses (per request, ms):\n";
    for (size_t i = 0; i < r.levels.size(); ++i) {
      const RequestDecomposition& p = r.levels[i].per_request;
      if (p.requests == 0) continue;
      out += fmt::format(
          "{:>10}  {} requests: client TTFT p50 {} mean {}; server prompt_ms p50 {} mean {}{}; "
          "client − server p50 {} (min {}){}\n",
          label(i), p.requests, ms(p.client_ttft_p50_ms), ms(p.client_ttft_mean_ms),
          ms(p.server_prompt_p50_ms), ms(p.server_prompt_mean_ms),
          std::isfinite(p.server_queue_mean_ms)
              ? fmt::format("; server queue mean {}", ms(p.server_queue_mean_ms))
              : std::string(),
          ms(p.remainder_p50_ms), ms(p.remainder_min_ms),
          p.server_prompt_n_total >= 0
              ? fmt::format("; Σ prompt_n {} Σ prompt_ms {:.1f}", p.server_prompt_n_total,
                            p.server_prompt_ms_total)
              : std::string());
    }
  }
  return out;
}

std::vector<TimeseriesColumn> server_timeseries_columns(const ServerReport& r, int64_t run_start_ns,
                                                        size_t rows) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<TimeseriesColumn> cols = {{"server_running", std::vector<double>(rows, nan)},
                                        {"server_waiting", std::vector<double>(rows, nan)},
                                        {"server_kv_usage", std::vector<double>(rows, nan)},
                                        {"server_gen_tok_per_s", std::vector<double>(rows, nan)},
                                        {"server_preemptions", std::vector<double>(rows, nan)}};
  if (!r.scraped || rows == 0) return {};
  bool any = false;
  for (const UrlSeries& u : r.urls) {
    // This URL's second-by-second view: gauges from the last scrape in the second, counters
    // summed over the intervals that end in it.
    std::vector<std::array<double, 3>> gauges(rows, {nan, nan, nan});
    std::vector<double> gen(rows, nan), gen_dt(rows, 0), pre(rows, nan);
    const Scrape* prev = nullptr;
    for (const Scrape& s : u.scrapes) {
      if (!s.ok) continue;
      if (prev && s.t_ns >= run_start_ns) {
        const size_t row = static_cast<size_t>((s.t_ns - run_start_ns) / 1'000'000'000);
        const Scrape pair[2] = {*prev, s};
        auto w = compute_window(pair);
        if (row < rows && w) {
          const Concept g[3] = {Concept::kRunning, Concept::kWaiting, Concept::kKvUsage};
          for (size_t k = 0; k < 3; ++k) {
            if (const GaugeWindow* gw = w->g(g[k])) gauges[row][k] = gw->last;
          }
          if (auto d = w->c(Concept::kGenerationTokens)) {
            gen[row] = (std::isnan(gen[row]) ? 0 : gen[row]) + *d;
            gen_dt[row] += static_cast<double>(s.t_ns - prev->t_ns) / 1e9;
          }
          if (auto d = w->c(Concept::kPreemptions)) {
            pre[row] = (std::isnan(pre[row]) ? 0 : pre[row]) + *d;
          }
        }
      }
      prev = &s;
    }
    // Replicas add up, except KV usage (a fraction): the fullest replica.
    auto merge = [&](size_t col, size_t row, double v) {
      if (std::isnan(v)) return;
      double& cell = cols[col].values[row];
      cell = std::isnan(cell) ? v : col == 2 ? std::max(cell, v) : cell + v;
      any = true;
    };
    for (size_t row = 0; row < rows; ++row) {
      for (size_t k = 0; k < 3; ++k) merge(k, row, gauges[row][k]);
      if (gen_dt[row] > 0) merge(3, row, gen[row] / gen_dt[row]);
      merge(4, row, pre[row]);
    }
  }
  if (!any) return {};
  return cols;
}

}  // namespace tokperf::servermetrics
