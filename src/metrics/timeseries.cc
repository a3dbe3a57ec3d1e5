#include "metrics/timeseries.h"

#include <cmath>
#include <fstream>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "metrics/stats.h"

namespace tokperf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string num(double v) { return std::isnan(v) ? std::string() : fmt::format("{:.3f}", v); }

}  // namespace

std::vector<TimeseriesRow> build_timeseries(std::span<const RequestTimeline> requests,
                                            int64_t run_start_ns, int64_t run_end_ns,
                                            std::span<const RunnerSample> samples) {
  constexpr int64_t kSec = 1'000'000'000;
  const int64_t n = std::max<int64_t>(0, (run_end_ns - run_start_ns + kSec - 1) / kSec);
  std::vector<TimeseriesRow> rows(static_cast<size_t>(n));
  std::vector<std::vector<double>> ttft(rows.size()), itl(rows.size()), lag(rows.size());
  // The window holding t, or -1 outside the run (0 timestamps mean "never happened").
  auto win = [&](int64_t t) -> int64_t {
    if (t <= 0 || t < run_start_ns || t >= run_end_ns) return -1;
    return (t - run_start_ns) / kSec;
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].second = static_cast<int64_t>(i);
    rows[i].loop_lag_ms = kNaN;
  }
  for (const RequestTimeline& r : requests) {
    if (auto w = win(r.intended_ns); w >= 0) rows[w].arrivals++;
    if (auto w = win(r.send_ns); w >= 0) {
      rows[w].sends++;
      lag[w].push_back(static_cast<double>(r.send_ns - r.intended_ns) / 1e6);
    }
    if (auto w = win(r.end_ns); w >= 0) (r.ok() ? rows[w].completions : rows[w].errors)++;
    // In flight at the end of window w: sent before it ends, not ended by then.
    if (r.send_ns > 0) {
      for (int64_t w = std::max<int64_t>(0, win(r.send_ns)); w < n; ++w) {
        int64_t w_end = run_start_ns + (w + 1) * kSec;
        if (r.send_ns >= w_end) continue;
        if (r.end_ns > 0 && r.end_ns < w_end) break;
        rows[w].in_flight++;
      }
    }
    for (size_t k = 0; k < r.token_events.size(); ++k) {
      const TokenEvent& e = r.token_events[k];
      auto w = win(e.t_ns);
      if (w < 0) continue;
      rows[w].output_tok_per_s += e.tokens >= 0 ? e.tokens : 1;
      if (k == 0)
        ttft[w].push_back(static_cast<double>(e.t_ns - r.send_ns) / 1e6);
      else
        itl[w].push_back(static_cast<double>(e.t_ns - r.token_events[k - 1].t_ns) / 1e6);
    }
  }
  for (const RunnerSample& s : samples) {
    auto w = win(s.t_ns);
    if (w < 0) continue;
    TimeseriesRow& row = rows[w];
    row.loop_lag_ms =
        std::isnan(row.loop_lag_ms) ? s.loop_lag_ms : std::max(row.loop_lag_ms, s.loop_lag_ms);
    row.client_queue = s.client_queue;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].ttft_p50_ms = percentile(ttft[i], 50);
    rows[i].ttft_p95_ms = percentile(ttft[i], 95);
    rows[i].itl_p50_ms = percentile(itl[i], 50);
    rows[i].itl_p95_ms = percentile(itl[i], 95);
    rows[i].send_lag_p50_ms = percentile(lag[i], 50);
    rows[i].send_lag_p95_ms = percentile(lag[i], 95);
  }
  return rows;
}

std::string timeseries_csv(std::span<const TimeseriesRow> rows,
                           std::span<const TimeseriesColumn> extra) {
  std::string out =
      "second,arrivals,sends,in_flight,completions,errors,output_tok_per_s,ttft_p50_ms,"
      "ttft_p95_ms,itl_p50_ms,itl_p95_ms,send_lag_p50_ms,send_lag_p95_ms,loop_lag_ms,"
      "client_queue";
  for (const TimeseriesColumn& c : extra) out += "," + c.name;
  out += '\n';
  for (size_t i = 0; i < rows.size(); ++i) {
    const TimeseriesRow& r = rows[i];
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", r.second, r.arrivals,
                       r.sends, r.in_flight, r.completions, r.errors, num(r.output_tok_per_s),
                       num(r.ttft_p50_ms), num(r.ttft_p95_ms), num(r.itl_p50_ms), num(r.itl_p95_ms),
                       num(r.send_lag_p50_ms), num(r.send_lag_p95_ms), num(r.loop_lag_ms),
                       r.client_queue < 0 ? std::string() : std::to_string(r.client_queue));
    for (const TimeseriesColumn& c : extra) {
      out += ',';
      if (i < c.values.size()) out += num(c.values[i]);
    }
    out += '\n';
  }
  return out;
}

Status write_timeseries_csv(const std::string& path, std::span<const TimeseriesRow> rows,
                            std::span<const TimeseriesColumn> extra) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Error{fmt::format("cannot write time series to '{}'", path)};
  f << timeseries_csv(rows, extra);
  if (!f) return Error{fmt::format("error while writing time series to '{}'", path)};
  return Status::Ok();
}

DriftReport detect_drift(std::span<const RequestTimeline> requests, int level, int64_t start_ns,
                         int64_t end_ns, const DriftOptions& o) {
  std::vector<DriftPoint> points;
  for (const RequestTimeline& r : requests) {
    if (r.level != level || r.phase != Phase::kMeasure || !r.ok() || r.token_events.empty())
      continue;
    const RequestMetrics m = compute_request_metrics(r);
    points.push_back(DriftPoint{r.send_ns, m.ttft_ms, m.itl_ms});
  }
  return detect_drift(points, start_ns, end_ns, o);
}

DriftReport detect_drift(std::span<const DriftPoint> points, int64_t start_ns, int64_t end_ns,
                         const DriftOptions& o) {
  DriftReport d;
  const int64_t third = (end_ns - start_ns) / 3;
  std::vector<double> ttft[2], itl[2];  // [0]: first third, [1]: last third
  for (const DriftPoint& r : points) {
    int part = r.send_ns >= start_ns && r.send_ns < start_ns + third ? 0
               : r.send_ns >= end_ns - third && r.send_ns < end_ns   ? 1
                                                                     : -1;
    if (part < 0) continue;
    ttft[part].push_back(r.ttft_ms);
    itl[part].insert(itl[part].end(), r.itl_ms.begin(), r.itl_ms.end());
  }
  if (ttft[0].size() < o.min_samples || ttft[1].size() < o.min_samples) {
    d.explanation = fmt::format(
        "drift: not judged ({} and {} requests in the first and last thirds, "
        "{} needed)",
        ttft[0].size(), ttft[1].size(), o.min_samples);
    return d;
  }
  d.judged = true;
  d.ttft_p95_first_ms = percentile(ttft[0], 95);
  d.ttft_p95_last_ms = percentile(ttft[1], 95);
  d.itl_p95_first_ms = percentile(itl[0], 95);
  d.itl_p95_last_ms = percentile(itl[1], 95);
  auto worse = [&](double first, double last) {
    return !std::isnan(first) && !std::isnan(last) && last >= o.factor * first &&
           last - first >= o.min_delta_ms;
  };
  std::vector<std::string> what;
  if (worse(d.ttft_p95_first_ms, d.ttft_p95_last_ms)) {
    what.push_back(
        fmt::format("TTFT P95 {:.0f} -> {:.0f} ms", d.ttft_p95_first_ms, d.ttft_p95_last_ms));
  }
  if (worse(d.itl_p95_first_ms, d.itl_p95_last_ms)) {
    what.push_back(
        fmt::format("ITL P95 {:.1f} -> {:.1f} ms", d.itl_p95_first_ms, d.itl_p95_last_ms));
  }
  d.drifted = !what.empty();
  d.explanation = d.drifted ? fmt::format(
                                  "drift: the last third of the level is markedly worse "
                                  "than the first: {}",
                                  fmt::join(what, ", "))
                            : fmt::format(
                                  "no drift: TTFT P95 {:.0f} -> {:.0f} ms, ITL P95 {:.1f} "
                                  "-> {:.1f} ms (first -> last third)",
                                  d.ttft_p95_first_ms, d.ttft_p95_last_ms, d.itl_p95_first_ms,
                                  d.itl_p95_last_ms);
  return d;
}

}  // namespace tokperf
