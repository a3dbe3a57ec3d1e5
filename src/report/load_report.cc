#include "report/load_report.h"

#include <cmath>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/units.h"

namespace tokperf {

nlohmann::json slo_report_json(const SloReport& r) {
  nlohmann::json objectives = nlohmann::json::array();
  for (const auto& o : r.objectives) {
    objectives.push_back({{"objective", o.objective->text},
                          {"measured_ms", json_number_or_null(o.measured_ms)},
                          {"threshold_ms", o.objective->threshold_ms},
                          {"samples", o.samples},
                          {"pass", o.pass}});
  }
  return {
      {"requests", r.requests},       {"good", r.good},     {"attainment_pct", r.attainment_pct},
      {"goodput_rps", r.goodput_rps}, {"pass", r.all_pass}, {"objectives", objectives}};
}

nlohmann::json level_result_json(const LevelResult& r) {
  nlohmann::json load = {
      {"mode", r.run.open_loop ? "open_loop" : "closed_loop"},
      {"measured_sent", r.run.measured_sent},
      {"stopped_early", r.run.stopped_early ? nlohmann::json(*r.run.stopped_early) : nullptr},
  };
  if (r.run.spec.is_ramp()) {
    load["ramp"] = {
        {"from", r.run.spec.start}, {"to", r.run.spec.end}, {"over_s", r.run.spec.ramp_ns / 1e9}};
  }
  if (r.run.open_loop) {
    load["target_rate_rps"] = json_number_or_null(r.run.target_rate_rps);
    load["scheduled_rate_rps"] = json_number_or_null(r.run.scheduled_rate_rps);
    load["achieved_rate_rps"] = json_number_or_null(r.run.achieved_rate_rps);
    load["send_lag_ms"] = dist_stats_json(r.send_lag_ms);
    load["send_lag_exceeded"] = r.run.send_lag_exceeded;
    load["schedule_fingerprint"] = r.run.schedule_fingerprint;
    load["scheduled_arrivals"] = r.run.scheduled_arrivals;
  }
  if (r.run.sessions) {
    load["sessions"] = {{"started", r.run.sessions_started},
                        {"completed", r.run.sessions_completed},
                        {"failed", r.run.sessions_failed},
                        {"cut", r.run.sessions_cut}};
  }
  nlohmann::json j = {{"load", load}};
  if (!r.by_turn.empty()) {
    nlohmann::json turns = nlohmann::json::array();
    for (const TurnStats& t : r.by_turn) {
      turns.push_back({{"turn", t.turn},
                       {"requests", t.requests},
                       {"ok", t.ok},
                       {"ttft_ms", dist_stats_json(t.ttft_ms)},
                       {"tpot_ms", dist_stats_json(t.tpot_ms)},
                       {"prompt_tokens", dist_stats_json(t.prompt_tokens)}});
    }
    j["by_turn"] = std::move(turns);
  }
  if (r.tool_calls) {
    const ToolCallStats& tc = *r.tool_calls;
    j["tool_calls"] = {{"requests", tc.requests},
                       {"with_call", tc.with_call},
                       {"complete", tc.complete},
                       {"completion_rate", json_number_or_null(tc.completion_rate)},
                       {"tool_call_ms", dist_stats_json(tc.tool_call_ms)}};
  }
  if (r.slo) j["slo"] = slo_report_json(*r.slo);
  j["drift"] = {{"judged", r.drift.judged},
                {"drifted", r.drift.drifted},
                {"ttft_p95_first_third_ms", json_number_or_null(r.drift.ttft_p95_first_ms)},
                {"ttft_p95_last_third_ms", json_number_or_null(r.drift.ttft_p95_last_ms)},
                {"itl_p95_first_third_ms", json_number_or_null(r.drift.itl_p95_first_ms)},
                {"itl_p95_last_third_ms", json_number_or_null(r.drift.itl_p95_last_ms)},
                {"explanation", r.drift.explanation}};
  if (r.workload.present()) j["workload"] = workload_stats_json(r.workload);
  return j;
}

nlohmann::json workload_stats_json(const WorkloadLevelStats& w) {
  nlohmann::json cache = nullptr;
  if (w.cache_reported > 0) {
    cache = {{"requests_reporting", w.cache_reported},
             {"hits", w.cache_hits},
             {"hit_rate", json_number_or_null(w.cache_hit_rate)},
             {"cached_token_share", json_number_or_null(w.cached_token_share)},
             {"ttft_hit_ms", dist_stats_json(w.ttft_cache_hit_ms)},
             {"ttft_miss_ms", dist_stats_json(w.ttft_cache_miss_ms)}};
  }
  return {{"requested_input_tokens", dist_stats_json(w.requested_input_tokens)},
          {"served_input_tokens", dist_stats_json(w.served_input_tokens)},
          {"requested_output_tokens", dist_stats_json(w.requested_output_tokens)},
          {"served_output_tokens", dist_stats_json(w.served_output_tokens)},
          {"prefix_cache", cache},
          {"prefix_group_requests", w.prefix_group_requests}};
}

std::string render_level_details(const RunResult& result) {
  std::string out;
  for (const LevelResult& r : result.levels) {
    const LevelSummary& s = r.summary;
    const std::string& label = s.params.label;
    if (r.run.open_loop && r.send_lag_ms.count > 0) {
      out += fmt::format(
          "{}: sent {} req/s against a schedule of {} ({} target); send lag p50 {} p99 {}; "
          "client queue p95 {}, TTFT from intended start p95 {}; schedule {}{}\n",
          label, format_rate(r.run.achieved_rate_rps), format_rate(r.run.scheduled_rate_rps),
          format_rate(r.run.target_rate_rps), format_ms(r.send_lag_ms.p50),
          format_ms(r.send_lag_ms.p99), format_ms(s.queue.p95), format_ms(s.ttft_from_intended.p95),
          r.run.schedule_fingerprint,
          r.run.send_lag_exceeded ? "  [WARNING: send lag above bound: the client fell behind]"
                                  : "");
    }
    if (r.slo) {
      std::string verdicts;
      for (const auto& o : r.slo->objectives) {
        verdicts += fmt::format("  {} {} ({})", o.objective->text, o.pass ? "PASS" : "FAIL",
                                format_ms(o.measured_ms));
      }
      out += fmt::format("{}: SLO {}; goodput {} req/s, attainment {:.1f}%;{}\n", label,
                         r.slo->all_pass ? "met" : "MISSED", format_rate(r.slo->goodput_rps),
                         r.slo->attainment_pct, verdicts);
    }
    if (r.run.stopped_early) {
      out += fmt::format("{}: stopped early: {}\n", label, *r.run.stopped_early);
    }
    if (r.drift.drifted) out += fmt::format("{}: drift: {}\n", label, r.drift.explanation);
    const WorkloadLevelStats& w = r.workload;
    const bool varied = w.requested_input_tokens.count > 0 &&
                        (w.requested_input_tokens.max != w.requested_input_tokens.min ||
                         w.requested_output_tokens.max != w.requested_output_tokens.min);
    if (varied) {
      out += fmt::format(
          "{}: tokens in asked mean {:.0f} (p50 {:.0f}, p95 {:.0f}), served mean {:.0f}; out asked "
          "mean {:.0f} (p95 {:.0f}), served mean {:.0f} (p95 {:.0f})\n",
          label, w.requested_input_tokens.mean, w.requested_input_tokens.p50,
          w.requested_input_tokens.p95, w.served_input_tokens.mean, w.requested_output_tokens.mean,
          w.requested_output_tokens.p95, w.served_output_tokens.mean, w.served_output_tokens.p95);
    }
    if (w.cache_hits > 0 || !w.prefix_group_requests.empty()) {
      out += fmt::format(
          "{}: prefix cache hit {:.0f}% of requests ({:.0f}% of prompt tokens); TTFT p50/p95 hit "
          "{}/{} ({}), miss {}/{} ({})\n",
          label, 100 * w.cache_hit_rate,
          std::isfinite(w.cached_token_share) ? 100 * w.cached_token_share : 0.0,
          format_ms(w.ttft_cache_hit_ms.p50), format_ms(w.ttft_cache_hit_ms.p95),
          w.ttft_cache_hit_ms.count, format_ms(w.ttft_cache_miss_ms.p50),
          format_ms(w.ttft_cache_miss_ms.p95), w.ttft_cache_miss_ms.count);
    }
    if (r.run.sessions) {
      out += fmt::format(
          "{}: sessions: {} started, {} completed, {} ended by a failed turn, {} cut "
          "at the level's end\n",
          label, r.run.sessions_started, r.run.sessions_completed, r.run.sessions_failed,
          r.run.sessions_cut);
      for (const TurnStats& t : r.by_turn) {
        out += fmt::format(
            "{}:   turn {:>2}: {:>4} req  prompt p50 {:>7} tok  TTFT p50 {:>9} p95 "
            "{:>9}  TPOT p50 {:>9} p95 {:>9}\n",
            label, t.turn, t.requests,
            std::isfinite(t.prompt_tokens.p50) ? fmt::format("{:.0f}", t.prompt_tokens.p50)
                                               : std::string("-"),
            format_ms(t.ttft_ms.p50), format_ms(t.ttft_ms.p95), format_ms(t.tpot_ms.p50),
            format_ms(t.tpot_ms.p95));
      }
    }
    if (r.tool_calls) {
      const ToolCallStats& tc = *r.tool_calls;
      out +=
          fmt::format("{}: tool calls: {} of {} complete ({:.1f}%); tool_call_ms p50 {} p95 {}\n",
                      label, tc.complete, tc.requests, 100.0 * tc.completion_rate,
                      format_ms(tc.tool_call_ms.p50), format_ms(tc.tool_call_ms.p95));
    }
  }
  return out;
}

nlohmann::json knee_json(const KneeResult& k) {
  if (!k.found) return nullptr;
  return {{"load", k.load}, {"level_index", k.index}, {"explanation", k.explanation}};
}

nlohmann::json run_summary_json(const nlohmann::json& config_redacted, const RunResult& result,
                                const ClientHealth& health, const RunInfo& run,
                                const ExtraSections& extra) {
  std::vector<LevelSummary> summaries;
  summaries.reserve(result.levels.size());
  for (const LevelResult& l : result.levels) summaries.push_back(l.summary);
  nlohmann::json doc = summary_json(config_redacted, summaries, health, run);
  for (size_t i = 0; i < result.levels.size(); ++i) {
    doc["levels"][i].update(level_result_json(result.levels[i]));
    auto server = extra.server_by_level.find(result.levels[i].summary.params.level);
    if (server != extra.server_by_level.end()) doc["levels"][i]["server"] = server->second;
  }
  doc["knee"] = knee_json(result.knee);
  if (!extra.server.is_null()) doc["server"] = extra.server;
  if (!run.files.empty()) {
    doc["files"] = nlohmann::json::object();
    for (const auto& [name, file] : run.files) doc["files"][name] = file;
  }
  return doc;
}

}  // namespace tokperf
