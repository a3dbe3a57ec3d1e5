#include "analysis/level_result.h"

#include <cmath>

namespace tokperf {

RunResultBuilder::RunResultBuilder(std::vector<LevelParams> levels, SloSpec slo) {
  if (!slo.empty()) slo_ = std::make_shared<const SloSpec>(std::move(slo));
  levels_.reserve(levels.size());
  for (LevelParams& p : levels) levels_.emplace_back(std::move(p));
}

void RunResultBuilder::add(const RequestTimeline& t, const RequestMetrics& m) {
  if (t.level < 0 || static_cast<size_t>(t.level) >= levels_.size()) return;
  Level& l = levels_[static_cast<size_t>(t.level)];
  if (!l.acc.add(t, m)) return;  // not measured
  if (slo_) {
    if (!l.slo) l.slo.emplace(*slo_);
    l.slo->add(m, t.ok());
  }
  if (t.ok() && !t.token_events.empty()) l.drift.add(t.send_ns, m.ttft_ms, m.itl_ms);
  if (t.turn > 0) {
    if (l.turns.size() < static_cast<size_t>(t.turn)) l.turns.resize(static_cast<size_t>(t.turn));
    Level::Turn& turn = l.turns[static_cast<size_t>(t.turn - 1)];
    ++turn.requests;
    if (t.ok()) {
      ++turn.ok;
      if (std::isfinite(m.ttft_ms)) turn.ttft.push_back(m.ttft_ms);
      if (std::isfinite(m.tpot_ms)) turn.tpot.push_back(m.tpot_ms);
    }
    if (m.prompt_tokens >= 0) turn.prompt_tokens.push_back(static_cast<double>(m.prompt_tokens));
  }
  if (t.tools_sent) {
    ++l.tools_sent;
    l.tool_seen += t.tool_call_seen;
    if (std::isfinite(m.tool_call_ms)) l.tool_call_ms.push_back(m.tool_call_ms);
  }
  if (!t.ok()) return;
  if (t.requested_input_tokens >= 0) l.req_in.push_back(static_cast<double>(t.requested_input_tokens));
  if (t.requested_output_tokens >= 0) {
    l.req_out.push_back(static_cast<double>(t.requested_output_tokens));
  }
  if (m.prompt_tokens >= 0) l.served_in.push_back(static_cast<double>(m.prompt_tokens));
  l.served_out.push_back(static_cast<double>(m.output_tokens));
  if (t.prefix_group >= 0) {
    const auto g = static_cast<size_t>(t.prefix_group);
    if (l.groups.size() <= g) l.groups.resize(g + 1, 0);
    ++l.groups[g];
  }
  const int64_t cached = t.cached_prompt_tokens();
  if (cached >= 0) {
    ++l.cache_reported;
    const bool hit = cached > 0;
    l.cache_hits += hit ? 1 : 0;
    l.cached_sum += cached;
    l.cache_prompt_sum += std::max<int64_t>(m.prompt_tokens, cached);
    if (std::isfinite(m.ttft_ms)) (hit ? l.ttft_hit : l.ttft_miss).push_back(m.ttft_ms);
  }
}


namespace {

WorkloadLevelStats workload_stats(const std::vector<double>& req_in,
                                  const std::vector<double>& served_in,
                                  const std::vector<double>& req_out,
                                  const std::vector<double>& served_out) {
  WorkloadLevelStats w;
  w.requested_input_tokens = compute_dist_stats(req_in);
  w.served_input_tokens = compute_dist_stats(served_in);
  w.requested_output_tokens = compute_dist_stats(req_out);
  w.served_output_tokens = compute_dist_stats(served_out);
  return w;
}

}  // namespace

RunResult RunResultBuilder::finish(std::span<const LevelRunInfo> runs) const {
  RunResult r;
  std::vector<LevelSummary> summaries;
  for (size_t i = 0; i < levels_.size() && i < runs.size(); ++i) {
    const Level& l = levels_[i];
    if (l.acc.sent() == 0) continue;
    LevelResult res;
    res.summary = l.acc.summary();
    res.run = runs[i];
    std::vector<double> lag;
    lag.reserve(res.run.send_lag_ns.size());
    for (int64_t ns : res.run.send_lag_ns) lag.push_back(static_cast<double>(ns) / 1e6);
    res.send_lag_ms = compute_dist_stats(std::move(lag));
    if (slo_) {
      res.slo_spec = slo_;
      res.slo = l.slo ? l.slo->finish(res.summary.window_s)
                      : evaluate_slo(*slo_, {}, {}, res.summary.window_s);
    }
    res.drift = l.drift.finish(res.run.start_ns, res.run.end_ns);
    res.workload = workload_stats(l.req_in, l.served_in, l.req_out, l.served_out);
    res.workload.cache_reported = l.cache_reported;
    res.workload.cache_hits = l.cache_hits;
    if (l.cache_reported > 0) {
      res.workload.cache_hit_rate =
          static_cast<double>(l.cache_hits) / static_cast<double>(l.cache_reported);
      if (l.cache_prompt_sum > 0) {
        res.workload.cached_token_share =
            static_cast<double>(l.cached_sum) / static_cast<double>(l.cache_prompt_sum);
      }
    }
    res.workload.ttft_cache_hit_ms = compute_dist_stats(l.ttft_hit);
    res.workload.ttft_cache_miss_ms = compute_dist_stats(l.ttft_miss);
    res.workload.prefix_group_requests = l.groups;
    for (size_t k = 0; k < l.turns.size(); ++k) {
      const Level::Turn& turn = l.turns[k];
      if (turn.requests == 0) continue;
      res.by_turn.push_back(TurnStats{static_cast<int64_t>(k + 1), turn.requests, turn.ok,
                                      compute_dist_stats(turn.ttft), compute_dist_stats(turn.tpot),
                                      compute_dist_stats(turn.prompt_tokens)});
    }
    if (l.tools_sent > 0) {
      ToolCallStats tc;
      tc.requests = l.tools_sent;
      tc.with_call = l.tool_seen;
      tc.complete = static_cast<int64_t>(l.tool_call_ms.size());
      tc.completion_rate = static_cast<double>(tc.complete) / static_cast<double>(tc.requests);
      tc.tool_call_ms = compute_dist_stats(l.tool_call_ms);
      res.tool_calls = tc;
    }
    summaries.push_back(res.summary);
    r.levels.push_back(std::move(res));
  }
  r.knee = find_sweep_knee(summaries);
  return r;
}

KneeResult find_sweep_knee(std::span<const LevelSummary> levels) {
  std::vector<SweepPoint> points;
  bool closed = !levels.empty() && levels.front().params.concurrency > 0;
  for (const auto& s : levels) {
    double load = closed ? s.params.concurrency : s.params.target_rate_rps;
    if (!std::isfinite(load) || load <= 0 || !std::isfinite(s.ttft.p95)) continue;
    points.push_back({load, s.ttft.p95, s.output_token_throughput_tps});
  }
  if (points.size() < 3) return {};
  KneeOptions o;
  o.load_name = closed ? "concurrency" : "req/s";
  return find_knee(points, o);
}

namespace {

// The metrics an SLO reads, from a saved sample.
RequestMetrics slo_metrics_of(const RequestSample& r) {
  RequestMetrics m{};
  m.queue_ms = r.queue_ms;
  m.ttft_ms = r.ttft_ms;
  m.ttfo_ms = r.ttfo_ms;
  m.tpot_ms = r.tpot_ms;
  m.e2e_ms = r.e2e_ms;
  m.ttft_from_intended_ms = r.ttft_ms + r.queue_ms;
  m.e2e_from_intended_ms = r.e2e_ms + r.queue_ms;
  m.itl_ms = r.itl_ms;
  return m;
}

}  // namespace

SloReport evaluate_slo_on_samples(const SloSpec& spec, std::span<const RequestSample> requests,
                                  int level, double window_s) {
  std::vector<RequestMetrics> ms;
  std::vector<uint8_t> ok;
  for (const RequestSample& r : requests) {
    if (!r.measured || (level >= 0 && r.level != level)) continue;
    ms.push_back(slo_metrics_of(r));
    ok.push_back(r.ok);
  }
  return evaluate_slo(spec, ms, ok, window_s);
}

void SampleSloJudge::add(const RequestSample& r) {
  if (!r.measured) return;
  const RequestMetrics m = slo_metrics_of(r);
  by_level_.try_emplace(-1, *spec_).first->second.add(m, r.ok);  // -1: every level
  if (r.level != -1) by_level_.try_emplace(r.level, *spec_).first->second.add(m, r.ok);
}

SloReport SampleSloJudge::finish(int level, double window_s) const {
  auto it = by_level_.find(level);
  return it != by_level_.end() ? it->second.finish(window_s) : SloAccumulator(*spec_).finish(window_s);
}

}  // namespace tokperf
