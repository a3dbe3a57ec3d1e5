#include "report/load_report.h"

#include <cmath>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/units.h"
#include "report/json_output.h"

namespace tokperf {

LevelReport make_level_report(const LevelSummary& summary, const LevelRunInfo& run,
                              const std::vector<RequestTimeline>& records, const SloSpec& slo) {
  LevelReport r;
  r.run = run;
  std::vector<double> lag;
  lag.reserve(run.send_lag_ns.size());
  for (int64_t ns : run.send_lag_ns) lag.push_back(ns_to_ms(ns));
  r.send_lag_ms = compute_dist_stats(std::move(lag));
  r.slo_spec = slo;
  if (!slo.empty()) {
    std::vector<RequestMetrics> metrics;
    std::vector<uint8_t> ok;
    for (const auto& t : records) {
      if (t.level != run.level || t.phase != Phase::kMeasure) continue;
      metrics.push_back(compute_request_metrics(t));
      ok.push_back(t.ok() ? 1 : 0);
    }
    r.has_slo = true;
    r.slo = evaluate_slo(r.slo_spec, metrics, ok, summary.window_s);
  }
  r.drift = detect_drift(records, run.level, run.start_ns, run.end_ns);
  return r;
}

nlohmann::json level_report_json(const LevelReport& r) {
  nlohmann::json load = {
      {"mode", r.run.open_loop ? "open_loop" : "closed_loop"},
      {"measured_sent", r.run.measured_sent},
      {"stopped_early", r.run.stopped_early ? nlohmann::json(*r.run.stopped_early) : nullptr},
  };
  if (r.run.spec.is_ramp()) {
    load["ramp"] = {{"from", r.run.spec.start}, {"to", r.run.spec.end},
                    {"over_s", r.run.spec.ramp_ns / 1e9}};
  }
  if (r.run.open_loop) {
    load["target_rate_rps"] = json_number_or_null(r.run.target_rate_rps);
    load["achieved_rate_rps"] = json_number_or_null(r.run.achieved_rate_rps);
    load["send_lag_ms"] = dist_stats_json(r.send_lag_ms);
    load["send_lag_exceeded"] = r.run.send_lag_exceeded;
    load["schedule_fingerprint"] = r.run.schedule_fingerprint;
    load["scheduled_arrivals"] = r.run.scheduled_arrivals;
  }
  nlohmann::json j = {{"load", load}};
  if (r.has_slo) {
    nlohmann::json objectives = nlohmann::json::array();
    for (const auto& o : r.slo.objectives) {
      objectives.push_back({{"objective", o.objective->text},
                            {"measured_ms", json_number_or_null(o.measured_ms)},
                            {"threshold_ms", o.objective->threshold_ms},
                            {"samples", o.samples},
                            {"pass", o.pass}});
    }
    j["slo"] = {{"requests", r.slo.requests},       {"good", r.slo.good},
                {"attainment_pct", r.slo.attainment_pct}, {"goodput_rps", r.slo.goodput_rps},
                {"pass", r.slo.all_pass},           {"objectives", objectives}};
  }
  j["drift"] = {{"judged", r.drift.judged},
                {"drifted", r.drift.drifted},
                {"ttft_p95_first_third_ms", json_number_or_null(r.drift.ttft_p95_first_ms)},
                {"ttft_p95_last_third_ms", json_number_or_null(r.drift.ttft_p95_last_ms)},
                {"itl_p95_first_third_ms", json_number_or_null(r.drift.itl_p95_first_ms)},
                {"itl_p95_last_third_ms", json_number_or_null(r.drift.itl_p95_last_ms)},
                {"explanation", r.drift.explanation}};
  return j;
}

std::string render_level_details(const std::vector<LevelSummary>& levels,
                                 const std::vector<LevelReport>& reports, const SloSpec& slo) {
  std::string out;
  for (size_t i = 0; i < reports.size() && i < levels.size(); ++i) {
    const LevelReport& r = reports[i];
    const std::string& label = levels[i].params.label;
    if (r.run.open_loop && r.send_lag_ms.count > 0) {
      out += fmt::format(
          "{}: achieved {} req/s of {} target; send lag p50 {} p99 {}; schedule {}{}\n", label,
          format_rate(r.run.achieved_rate_rps), format_rate(r.run.target_rate_rps),
          format_ms(r.send_lag_ms.p50), format_ms(r.send_lag_ms.p99),
          r.run.schedule_fingerprint,
          r.run.send_lag_exceeded ? "  [WARNING: send lag above bound: the client fell behind]"
                                  : "");
    }
    if (r.has_slo) {
      std::string verdicts;
      for (const auto& o : r.slo.objectives) {
        verdicts += fmt::format("  {} {} ({})", o.objective->text, o.pass ? "PASS" : "FAIL",
                                format_ms(o.measured_ms));
      }
      out += fmt::format("{}: SLO {}; goodput {} req/s, attainment {:.1f}%;{}\n", label,
                         r.slo.all_pass ? "met" : "MISSED", format_rate(r.slo.goodput_rps),
                         r.slo.attainment_pct, verdicts);
    }
    if (r.run.stopped_early) {
      out += fmt::format("{}: stopped early: {}\n", label, *r.run.stopped_early);
    }
    if (r.drift.drifted) out += fmt::format("{}: drift: {}\n", label, r.drift.explanation);
  }
  (void)slo;
  return out;
}

KneeResult find_sweep_knee(const std::vector<LevelSummary>& levels) {
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

nlohmann::json knee_json(const KneeResult& k) {
  if (!k.found) return nullptr;
  return {{"load", k.load}, {"level_index", k.index}, {"explanation", k.explanation}};
}

}  // namespace tokperf
