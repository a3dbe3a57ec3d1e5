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

TimeseriesBuilder::Window& TimeseriesBuilder::at(int64_t w) {
  if (static_cast<size_t>(w) >= windows_.size()) windows_.resize(static_cast<size_t>(w) + 1);
  return windows_[static_cast<size_t>(w)];
}

void TimeseriesBuilder::add(const RequestTimeline& r) {
  constexpr int64_t kSec = 1'000'000'000;
  // The window holding t (windows past the run's end are dropped at finish); -1 before the run or
  // for 0 ("never happened").
  auto win = [&](int64_t t) -> int64_t { return t <= 0 || t < start_ns_ ? -1 : (t - start_ns_) / kSec; };
  if (auto w = win(r.intended_ns); w >= 0) at(w).arrivals++;
  if (auto w = win(r.send_ns); w >= 0) {
    Window& x = at(w);
    x.sends++;
    x.lag.add(static_cast<double>(r.send_ns - r.intended_ns) / 1e6);
  }
  if (auto w = win(r.end_ns); w >= 0) (r.ok() ? at(w).completions : at(w).errors)++;
  // In flight at the end of window w: sent before it ends and not ended by then, i.e. w from the
  // send's window (0 when sent before the run) up to, not including, the end's window.
  if (r.send_ns > 0) {
    const int64_t from = std::max<int64_t>(0, win(r.send_ns));
    const bool ended = r.end_ns > 0;
    const int64_t to = ended ? (r.end_ns < start_ns_ ? -1 : (r.end_ns - start_ns_) / kSec) : -2;
    if (!ended || to > from) {
      at(from).in_flight_delta++;
      if (ended) at(to).in_flight_delta--;
    }
  }
  for (size_t k = 0; k < r.token_events.size(); ++k) {
    const TokenEvent& e = r.token_events[k];
    const int64_t w = win(e.t_ns);
    if (w < 0) continue;
    Window& x = at(w);
    x.tokens += e.tokens >= 0 ? e.tokens : 1;
    if (k == 0)
      x.ttft.add(static_cast<double>(e.t_ns - r.send_ns) / 1e6);
    else
      x.itl.add(static_cast<double>(e.t_ns - r.token_events[k - 1].t_ns) / 1e6);
  }
}

std::vector<TimeseriesRow> TimeseriesBuilder::finish(int64_t run_end_ns,
                                                     std::span<const RunnerSample> samples) const {
  constexpr int64_t kSec = 1'000'000'000;
  const int64_t n = std::max<int64_t>(0, (run_end_ns - start_ns_ + kSec - 1) / kSec);
  std::vector<TimeseriesRow> rows(static_cast<size_t>(n));
  int64_t in_flight = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    TimeseriesRow& row = rows[i];
    row.second = static_cast<int64_t>(i);
    row.loop_lag_ms = kNaN;
    if (i >= windows_.size()) {
      row.in_flight = in_flight;
      row.ttft_p50_ms = row.ttft_p95_ms = row.itl_p50_ms = row.itl_p95_ms = kNaN;
      row.send_lag_p50_ms = row.send_lag_p95_ms = kNaN;
      continue;
    }
    const Window& w = windows_[i];
    in_flight += w.in_flight_delta;
    row.in_flight = in_flight;
    row.arrivals = w.arrivals;
    row.sends = w.sends;
    row.completions = w.completions;
    row.errors = w.errors;
    row.output_tok_per_s = w.tokens;
    row.ttft_p50_ms = w.ttft.percentile(50);
    row.ttft_p95_ms = w.ttft.percentile(95);
    row.itl_p50_ms = w.itl.percentile(50);
    row.itl_p95_ms = w.itl.percentile(95);
    row.send_lag_p50_ms = w.lag.percentile(50);
    row.send_lag_p95_ms = w.lag.percentile(95);
  }
  // Requests ending past the run's last window were in flight to its end: nothing to undo.
  for (const RunnerSample& s : samples) {
    if (s.t_ns <= 0 || s.t_ns < start_ns_ || s.t_ns >= run_end_ns) continue;
    TimeseriesRow& row = rows[static_cast<size_t>((s.t_ns - start_ns_) / kSec)];
    row.loop_lag_ms =
        std::isnan(row.loop_lag_ms) ? s.loop_lag_ms : std::max(row.loop_lag_ms, s.loop_lag_ms);
    row.client_queue = s.client_queue;
  }
  return rows;
}

std::vector<TimeseriesRow> build_timeseries(std::span<const RequestTimeline> requests,
                                            int64_t run_start_ns, int64_t run_end_ns,
                                            std::span<const RunnerSample> samples) {
  TimeseriesBuilder b(run_start_ns);
  for (const RequestTimeline& r : requests) b.add(r);
  return b.finish(run_end_ns, samples);
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

namespace {

// The verdict from the first [0] and last [1] thirds: each third's TTFTs and pooled gaps.
DriftReport judge_drift(std::vector<double> (&ttft)[2], const PooledDist (&itl)[2],
                        const DriftOptions& o) {
  DriftReport d;
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
  d.itl_p95_first_ms = itl[0].percentile(95);
  d.itl_p95_last_ms = itl[1].percentile(95);
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

}  // namespace

DriftReport detect_drift(std::span<const DriftPoint> points, int64_t start_ns, int64_t end_ns,
                         const DriftOptions& o) {
  DriftAccumulator acc;
  for (const DriftPoint& p : points) acc.add(p.send_ns, p.ttft_ms, p.itl_ms);
  return acc.finish(start_ns, end_ns, o);
}

void DriftAccumulator::add(int64_t send_ns, double ttft_ms, std::span<const double> itl_ms) {
  if (!bucketed_) {
    points_.push_back(DriftPoint{send_ns, ttft_ms, {itl_ms.begin(), itl_ms.end()}});
    gaps_ += itl_ms.size();
    if (gaps_ <= exact_gaps_) return;
    // Too many gaps to keep: fold every point into its second of send time from now on.
    bucketed_ = true;
    std::vector<DriftPoint> points;
    points.swap(points_);
    for (const DriftPoint& p : points) add(p.send_ns, p.ttft_ms, p.itl_ms);
    return;
  }
  Bucket& b = buckets_[send_ns >= 0 ? send_ns / kBucketNs : (send_ns - kBucketNs + 1) / kBucketNs];
  b.ttft.push_back(ttft_ms);
  b.itl.add(itl_ms);
}

DriftReport DriftAccumulator::finish(int64_t start_ns, int64_t end_ns,
                                     const DriftOptions& o) const {
  const int64_t third = (end_ns - start_ns) / 3;
  // [0]: first third, [1]: last third, by send time; -1: neither.
  auto part_of = [&](int64_t send_ns) {
    return send_ns >= start_ns && send_ns < start_ns + third ? 0
           : send_ns >= end_ns - third && send_ns < end_ns   ? 1
                                                             : -1;
  };
  std::vector<double> ttft[2];
  PooledDist itl[2] = {PooledDist(exact_gaps_, kBucketSubBuckets),
                       PooledDist(exact_gaps_, kBucketSubBuckets)};
  for (const DriftPoint& r : points_) {
    const int part = part_of(r.send_ns);
    if (part < 0) continue;
    ttft[part].push_back(r.ttft_ms);
    itl[part].add(r.itl_ms);
  }
  for (const auto& [second, b] : buckets_) {
    const int part = part_of(second * kBucketNs + kBucketNs / 2);  // by the bucket's midpoint
    if (part < 0) continue;
    ttft[part].insert(ttft[part].end(), b.ttft.begin(), b.ttft.end());
    itl[part].merge(b.itl);
  }
  return judge_drift(ttft, itl, o);
}

}  // namespace tokperf
