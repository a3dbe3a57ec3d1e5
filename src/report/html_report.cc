#include "report/html_report.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>

#include "core/units.h"
#include "report/html_page.h"
#include "report/json_output.h"
#include "report/text_file.h"

namespace tokperf {
namespace {

std::string esc(std::string_view s) { return html_escape(s); }

std::string card(const std::string& key, const std::string& value, const std::string& sub,
                 bool bad = false) {
  return fmt::format(R"(<div class="card{}"><div class="k">{}</div><div class="v">{}</div>)"
                     R"(<div class="s">{}</div></div>)",
                     bad ? " bad" : "", esc(key), esc(value), esc(sub));
}

// Sweeps headline their heaviest level: that is where users feel the service at its worst.
size_t headline_level(const SavedRun& run) {
  return run.levels.empty() ? 0 : run.levels.size() - 1;
}

std::string cards_html(const SavedRun& run) {
  if (run.levels.empty()) return "<p>No load level was measured.</p>";
  const LevelSummary& s = run.levels[headline_level(run)];
  int64_t sent = 0, failed = 0;
  for (const LevelSummary& l : run.levels) sent += l.sent, failed += l.failed;
  std::string where = run.levels.size() > 1 ? " at " + s.params.label : "";
  std::string out = "<div class=\"cards\">";
  out += card("TTFT P50" + where, format_ms(s.ttft.p50), "P95 " + format_ms(s.ttft.p95));
  out += card("TPOT P50" + where, format_ms(s.tpot.p50), "P95 " + format_ms(s.tpot.p95));
  out += card("ITL P99" + where, format_ms(s.itl.p99), "P50 " + format_ms(s.itl.p50));
  out += card("Throughput" + where, format_rate(s.output_token_throughput_tps) + " tok/s",
              format_rate(s.request_throughput_rps) + " req/s");
  // Goodput: requests of the headline level meeting every per-request SLO threshold, as
  // summary.json recorded it (computed once, when the run was measured).
  const nlohmann::json* slo = level_slo_json(run, headline_level(run));
  std::string slo_text;
  if (run.config.contains("slo") && run.config["slo"].is_string())
    slo_text = run.config["slo"].get<std::string>();
  if (slo != nullptr) {
    const double goodput = slo->value("goodput_rps", RequestSample::kNaN);
    const double attainment = slo->value("attainment_pct", RequestSample::kNaN);
    out += card("Goodput" + where, fmt::format("{} req/s", format_rate(goodput)),
                fmt::format("{:.1f}% within {}", attainment, slo_text), attainment < 90);
  } else {
    out += card("Goodput", "-",
                slo_text.empty() ? "no SLO given (--slo)" : "no SLO figures in summary.json");
  }
  out += card("Errors", fmt::format("{}", failed),
              fmt::format("of {} requests ({:.1f}%)", sent, sent ? 100.0 * failed / sent : 0.0),
              failed > 0);
  return out + "</div>";
}

std::string level_table_html(const SavedRun& run) {
  std::string out =
      "<table><tr><th>level</th><th>TTFT P50</th><th>TTFT P95</th><th>TTFO P50</th>"
      "<th>TPOT P50</th><th>TPOT P95</th><th>ITL P50</th><th>ITL P99</th><th>E2E P50</th>"
      "<th>E2E P95</th><th>out tok/s</th><th>req/s</th><th>ok</th><th>failed</th></tr>";
  for (const LevelSummary& s : run.levels) {
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(s.params.label), format_ms(s.ttft.p50), format_ms(s.ttft.p95), format_ms(s.ttfo.p50),
        format_ms(s.tpot.p50), format_ms(s.tpot.p95), format_ms(s.itl.p50), format_ms(s.itl.p99),
        format_ms(s.e2e.p50), format_ms(s.e2e.p95), format_rate(s.output_token_throughput_tps),
        format_rate(s.request_throughput_rps), s.ok, s.failed);
  }
  return out + "</table>";
}

std::string diagnosis_html(const std::vector<Finding>& findings) {
  if (findings.empty()) {
    return "<div class=\"ok-box\">No finding: latency is flat across load, decoding is fast, "
           "no stalls or drift, and the client kept up.</div>";
  }
  std::string out;
  for (const Finding& f : findings) {
    out += fmt::format(R"(<div class="finding {}" data-finding="{}"><h3>{}</h3><p>{}</p><ul>)",
                       severity_name(f.severity), finding_kind_name(f.kind), esc(f.title),
                       esc(f.evidence));
    for (const std::string& r : f.remedies) out += "<li>" + esc(r) + "</li>";
    out += "</ul></div>";
  }
  return out;
}

std::string perceived_html(const SavedRun& run, const PerceivedOptions& o) {
  std::string out = fmt::format(
      "<p class=\"sub\">A reader who starts at the first token and reads {:g} tokens/s: decoding "
      "faster than {} per token no longer helps them; the reading stall is how long they sit "
      "waiting for text after it began.</p><table><tr><th>level</th><th>first {} chars P50</th>"
      "<th>P95</th><th>reading stall P50</th><th>P95</th><th>requests stalled</th>"
      "<th>TPOT faster than reader</th></tr>",
      o.reader_tokens_per_s, format_ms(1000.0 / o.reader_tokens_per_s), o.first_chars);
  bool estimated = false;
  for (const LevelSummary& l : run.levels) {
    PerceivedSummary p = summarize_perceived(run.requests, l.params.level, o);
    estimated = estimated || p.chars_estimated;
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} of {}</td>"
        "<td>{} of {}</td></tr>",
        esc(l.params.label), format_ms(p.first_chars_ms.p50), format_ms(p.first_chars_ms.p95),
        format_ms(p.reading_stall_ms.p50), format_ms(p.reading_stall_ms.p95), p.stalled, p.requests,
        p.decode_faster_than_reader, p.with_tpot);
  }
  out += "</table>";
  if (estimated) {
    out +=
        "<p class=\"note\">Some records carry no per-event character counts: one visible "
        "character per token event was assumed for the first-characters column.</p>";
  }
  return out;
}

std::string errors_html(const SavedRun& run) {
  std::string out;
  for (const LevelSummary& l : run.levels) {
    for (const ErrorTally& e : l.errors) {
      out +=
          fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", esc(l.params.label),
                      error_kind_name(e.kind), e.count, esc(e.first_message));
    }
  }
  if (out.empty()) return "<p>No request failed.</p>";
  return "<table><tr><th>level</th><th>kind</th><th>count</th><th>first message</th></tr>" + out +
         "</table>";
}

double json_ms(const nlohmann::json& stats, const char* key) {
  if (!stats.is_object() || !stats.contains(key) || !stats[key].is_number()) return std::nan("");
  return stats[key].get<double>();
}

// Multi-turn sessions (TTFT/TPOT and prompt tokens by turn) and tool calls, from summary.json's
// levels[].by_turn and levels[].tool_calls; empty when the run had neither.
std::string sessions_html(const SavedRun& run) {
  std::string turns, tools;
  for (const auto& l : run.summary.value("levels", nlohmann::json::array())) {
    const std::string label = l.value("label", "");
    for (const auto& t : l.value("by_turn", nlohmann::json::array())) {
      const double prompt = json_ms(t.value("prompt_tokens", nlohmann::json()), "p50");
      turns += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td></tr>",
          esc(label), t.value("turn", 0), t.value("requests", 0),
          std::isfinite(prompt) ? fmt::format("{:.0f}", prompt) : "-",
          format_ms(json_ms(t["ttft_ms"], "p50")), format_ms(json_ms(t["ttft_ms"], "p95")),
          format_ms(json_ms(t["tpot_ms"], "p50")), format_ms(json_ms(t["tpot_ms"], "p95")));
    }
    if (l.contains("tool_calls") && l["tool_calls"].is_object()) {
      const auto& tc = l["tool_calls"];
      tools += fmt::format("<tr><td>{}</td><td>{} of {}</td><td>{}</td><td>{}</td></tr>",
                           esc(label), tc.value("complete", 0), tc.value("requests", 0),
                           format_ms(json_ms(tc["tool_call_ms"], "p50")),
                           format_ms(json_ms(tc["tool_call_ms"], "p95")));
    }
  }
  std::string out;
  if (!turns.empty()) {
    out +=
        "\n<h2>Multi-turn sessions</h2>\n<p class=\"sub\">Each turn resends the whole "
        "conversation, so prompts grow with the turn index; TTFT follows the prefill.</p>"
        "<table><tr><th>level</th><th>turn</th><th>requests</th><th>prompt tokens P50</th>"
        "<th>TTFT P50</th><th>P95</th><th>TPOT P50</th><th>P95</th></tr>" +
        turns + "</table>";
  }
  if (!tools.empty()) {
    out +=
        "\n<h2>Tool calls</h2>\n<p class=\"sub\">tool_call_ms: from the send until the "
        "streamed tool-call arguments first formed complete, valid JSON.</p><table><tr>"
        "<th>level</th><th>complete</th><th>tool_call_ms P50</th><th>P95</th></tr>" +
        tools + "</table>";
  }
  return out;
}

std::string pct(double f) { return std::isfinite(f) ? fmt::format("{:.0f}%", 100 * f) : "-"; }

std::string roofline_html(const SavedRun& run, const ReportOptions& o) {
  Result<std::optional<Roofline>> r = report_roofline(run, o);
  if (!r) return "<p class=\"note\">Roofline not shown: " + esc(r.error()) + "</p>";
  if (!r->has_value()) {
    return "<p class=\"note\">Not shown: the run does not say what hardware it measured. Give it "
           "with <code>tokperf report DIR --gpu ... --model ... --dtype ... --tp ...</code>; runs "
           "of the built-in engine record it themselves.</p>";
  }
  const Roofline& rf = **r;
  std::string out = fmt::format(
      "<p class=\"sub\">{} ({}): peak memory bandwidth {:.0f} GB/s over all GPUs, {:.1f} GB of "
      "weights read per decode step. The lower bounds assume 100% of peak; real engines reach "
      "about 1/3-1/2 of the decode bound. TTFT includes network and queueing, so its share falls "
      "with load; above 100% means a prefix-cache hit.</p><table><tr><th>level</th>"
      "<th>decode batch</th><th>TPOT P50</th><th>decode lower bound</th><th>of bound</th>"
      "<th>achieved bandwidth</th><th>TTFT P50</th><th>prefill lower bound</th><th>of bound</th>"
      "</tr>",
      esc(rf.deployment),
      rf.source == "simulated" ? "the built-in engine's deployment" : "as stated for this report",
      rf.peak_bandwidth_gbps, rf.weight_gb);
  for (const RooflineLevel& l : rf.levels) {
    out += fmt::format(
        "<tr><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>",
        esc(l.label), l.batch, format_ms(l.tpot_p50_ms), format_ms(l.decode_bound_ms),
        pct(l.decode_fraction),
        std::isfinite(l.bandwidth_gbps)
            ? fmt::format("{:.0f} GB/s ({} of peak)", l.bandwidth_gbps, pct(l.bandwidth_fraction))
            : "-",
        format_ms(l.ttft_p50_ms), format_ms(l.prefill_bound_ms), pct(l.prefill_fraction));
  }
  return out + "</table>";
}

}  // namespace

Result<std::optional<Roofline>> report_roofline(const SavedRun& run, const ReportOptions& o) {
  std::optional<sim::DeploymentFlags> flags = o.deployment;
  std::string source = "declared";
  if (!flags) {
    auto recorded = recorded_deployment(run.config);
    if (!recorded) return Error{recorded.error()};
    if (!recorded->has_value()) return std::optional<Roofline>{};
    flags = **recorded;
    source = run.config["deployment"].value("source", "recorded");
  }
  double prompt = 0;
  if (run.config.contains("prompt") && run.config["prompt"].is_object())
    prompt = run.config["prompt"].value("input_tokens", 0.0);
  auto r = compute_roofline(*flags, source, run.levels, run.requests, prompt);
  if (!r) return Error{r.error()};
  return std::optional<Roofline>{std::move(*r)};
}

std::string render_report_html(const SavedRun& run, const ReportOptions& o) {
  std::vector<Finding> findings =
      diagnose({run.levels, run.requests, &run.health, run.server}, o.thresholds);
  std::string title = o.title.empty() ? "tokperf report: " + run.dir : o.title;
  std::string started = "-";
  if (int64_t us = run.summary.value("started_unix_us", int64_t{0}); us > 0) {
    std::time_t t = static_cast<std::time_t>(us / 1000000);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
    started = buf;
  }
  std::string notes;
  for (const auto& n : run.summary.value("notes", nlohmann::json::array()))
    if (n.is_string()) notes += "<li>" + esc(n.get<std::string>()) + "</li>";
  for (const std::string& w : run.warnings) notes += "<li>" + esc(w) + "</li>";
  // Workload figures, as summary.json has them (levels[i].workload; docs/WORKLOADS.md).
  for (const auto& l : run.summary.value("levels", nlohmann::json::array())) {
    if (!l.is_object() || !l.contains("workload") || !l["workload"].is_object()) continue;
    const auto& c = l["workload"].value("prefix_cache", nlohmann::json());
    if (!c.is_object() || c.value("hits", 0) == 0) continue;
    auto num = [](const nlohmann::json& j, const char* a, const char* b) {
      return j.contains(a) && j[a].is_object() && j[a].contains(b) && j[a][b].is_number()
                 ? j[a][b].get<double>()
                 : NAN;
    };
    notes += "<li>" +
             esc(fmt::format("{}: prefix cache hit {:.0f}% of requests; TTFT p50 hit {}, miss {}",
                             l.value("label", ""), 100 * c.value("hit_rate", 0.0),
                             format_ms(num(c, "ttft_hit_ms", "p50")),
                             format_ms(num(c, "ttft_miss_ms", "p50")))) +
             "</li>";
  }

  std::string html = html_page_open(title);
  html += fmt::format(
      "<p class=\"sub\">{} &middot; started {} &middot; {} &middot; {} level(s), {} request "
      "records &middot; tokperf {}</p>\n",
      esc(run.summary.value("command", "run")), started, esc(run.summary.value("exit_reason", "")),
      run.levels.size(), run.request_lines > 0 ? run.request_lines : static_cast<int64_t>(run.requests.size()),
      esc(run.summary.value("tokperf_version", "")));
  html += cards_html(run);
  html += "\n<h2>Diagnosis</h2>\n" + diagnosis_html(findings);
  html += "\n<h2>Per level</h2>\n" + level_table_html(run);
  html += sessions_html(run);
  html += "\n<h2>Roofline efficiency</h2>\n" + roofline_html(run, o);
  html += "\n<h2>Perceived speed</h2>\n" + perceived_html(run, o.perceived);
  html += "\n<h2>Charts</h2>\n<div id=\"charts\"></div>\n";
  html += "<h2>Errors</h2>\n" + errors_html(run);
  if (!notes.empty()) html += "\n<h2>Notes</h2>\n<ul>" + notes + "</ul>";
  html += "\n<h2>Configuration (secrets redacted)</h2>\n<pre>" +
          esc(redact_config(run.config).dump(2)) + "</pre>\n";
  html += html_page_close(report_chart_data(run, o));
  return html;
}

Status write_report_html(const std::string& dir, const ReportOptions& o, RecordSampler* kept) {
  Result<SavedRun> run = load_run(dir, o.max_requests, kept);
  if (!run) return Error{run.error()};
  return write_text_file(dir + "/report.html", render_report_html(*run, o));
}

}  // namespace tokperf
