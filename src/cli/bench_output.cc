#include "cli/bench_output.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/level_result.h"
#include "cli/app.h"
#include "cli/commands.h"
#include "cli/run_recorder.h"
#include "client/request_builder.h"
#include "core/clock.h"
#include "core/units.h"
#include "load/bench_runner.h"
#include "metrics/client_health.h"
#include "metrics/stats.h"
#include "metrics/timeseries.h"
#include "net/noise_floor.h"
#include "report/console_table.h"
#include "report/html_report.h"
#include "report/json_output.h"
#include "report/load_report.h"
#include "report/shard_merge.h"
#include "servermetrics/live_exposition.h"
#include "servermetrics/scraper.h"
#include "servermetrics/server_report.h"
#include "store/history_store.h"

namespace tokperf {
namespace {

ClientHealth health_from(const ClientSelfMeasure& m) {
  ClientHealth h;
  std::vector<double> lag_ms;
  lag_ms.reserve(m.loop_lag_ns.size());
  for (int64_t ns : m.loop_lag_ns) lag_ms.push_back(ns_to_ms(ns));
  DistStats s = compute_dist_stats(lag_ms);
  h.loop_lag_samples = s.count;
  h.loop_lag_mean_ms = s.mean;
  h.loop_lag_p50_ms = s.p50;
  h.loop_lag_p99_ms = s.p99;
  h.loop_lag_max_ms = s.max;
  h.cpu_user_s = m.cpu_user_s;
  h.cpu_system_s = m.cpu_system_s;
  h.wall_s = m.wall_s;
  h.cpu_utilisation_pct = cpu_utilisation_pct(m.cpu_user_s, m.cpu_system_s, m.wall_s);
  h.peak_in_flight = m.peak_in_flight;
  h.stream_events_per_s = m.wall_s > 0 ? m.stream_events / m.wall_s : 0;
  if (m.loops.size() > 1) {
    for (const LoopSelfMeasure& l : m.loops) {
      h.loops.push_back(
          loop_health(l.loop, l.loop_lag_ns, l.cpu_s, l.wall_s, l.peak_in_flight, l.stream_events));
    }
    h.worst_loop = worst_loop(h.loops);
  }
  h.warnings = client_health_warnings(h);
  return h;
}

void print_progress(const LevelProgress& p) {
  std::string count =
      p.total > 0 ? fmt::format("{}/{}", p.done, p.total) : fmt::format("{}", p.done);
  std::string queued = p.queued > 0 ? fmt::format("  {} queued", p.queued) : "";
  std::string loops;  // several loops: each loop's streams in flight
  for (int64_t n : p.in_flight_by_loop) loops += fmt::format("{}{}", loops.empty() ? " (" : "/", n);
  if (!loops.empty()) loops += " by loop)";
  fmt::print(
      stderr,
      "\r\033[K  {:<12} {:>11} done  {} errors  {} in flight{}{}  TTFT p50 {}  {} tok/s  {:.0f}s",
      p.label, count, p.errors, p.in_flight, loops, queued, format_ms(p.ttft_p50_ms),
      format_rate(p.output_tok_s), p.elapsed_s);
  std::fflush(stderr);
}

LevelParams level_params(const BenchConfig& config, size_t i) {
  const LevelSpec& spec = config.load.plan.levels[i];
  LevelParams p;
  p.level = static_cast<int>(i);
  if (!config.load.trace.empty()) {
    p.label = "trace";
  } else {
    p.label = spec.label();
    if (spec.mode == LoadMode::kConcurrency) {
      p.concurrency = static_cast<int>(spec.start);
    } else {
      p.target_rate_rps = spec.is_ramp() ? (spec.start + spec.end) / 2 : spec.start;
    }
  }
  return p;
}

}  // namespace

RunResultBuilder result_builder(const BenchConfig& config) {
  std::vector<LevelParams> params;
  for (size_t i = 0; i < config.load.plan.levels.size(); ++i) {
    params.push_back(level_params(config, i));
  }
  return RunResultBuilder(std::move(params), config.slo);
}

int run_bench_load(const BenchConfig& config, const std::vector<std::string>& notes, bool json) {
  auto builder = RequestBuilder::create(config.target, config.prompt);
  if (!builder) throw UsageError(builder.error());

  RunRecorder recorder(config);
  recorder.open_output();
  std::FILE* out = json ? stderr : stdout;
  fmt::print(
      out, "tokperf bench: {} model {} ({} API), prompt {} tokens ({}), max {} output tokens\n",
      config.target.base_url, config.target.model, config.target.api, config.prompt.input_tokens,
      config.prompt.input_tokens_note, config.prompt.output_tokens);
  fmt::print(out, "client: {} event loop{} (--threads)\n", config.load.threads,
             config.load.threads == 1 ? "" : "s");

  // tokperf's own live metrics (--metrics-port), served on a thread of its own.
  std::unique_ptr<servermetrics::LiveExposition> live;
  if (config.metrics_port >= 0) {
    live = std::make_unique<servermetrics::LiveExposition>();
    Status st = live->start(static_cast<uint16_t>(config.metrics_port));
    if (!st) throw UsageError(st.error());
    fmt::print(out, "live metrics: http://127.0.0.1:{}/metrics (Prometheus text)\n", live->port());
  }
  // The engine's own metrics (--server-metrics): a baseline now, before warm-up, then a scraper
  // thread of its own; the measured loop only ever queues a level-end scrape.
  std::unique_ptr<servermetrics::ServerScraper> scraper;
  if (config.server_metrics) {
    servermetrics::ScraperOptions so;
    so.urls = config.server_metrics_urls;
    if (so.urls.empty())
      so.urls.push_back(servermetrics::default_metrics_url(config.target.base_url));
    so.interval_ns = config.server_metrics_interval_ns;
    scraper = std::make_unique<servermetrics::ServerScraper>(so);
    scraper->baseline();
    for (const auto& u : scraper->series()) {
      const servermetrics::Scrape& b = u.scrapes.front();
      if (b.ok) {
        fmt::print(out, "server metrics: {} ({}), every {} s\n", u.url,
                   servermetrics::engine_name(servermetrics::detect_engine(b.data)),
                   static_cast<double>(so.interval_ns) / 1e9);
      } else {
        fmt::print(stderr,
                   "tokperf: server metrics: {} did not answer usable metrics ({}); the benchmark "
                   "goes on, retrying every scrape\n",
                   u.url, b.error);
      }
    }
    scraper->start();
  }

  const BenchRunner* started = nullptr;  // set once the runner exists
  BenchRunner runner(config, std::move(*builder), [&](const RequestTimeline& t) {
    if (recorder.records() == 0 && started) recorder.set_run_start(started->run_start_ns());
    const RequestMetrics& m = recorder.add(t);
    if (live) live->record(t, m);
  });
  started = &runner;
  if (config.load.progress || live) {
    runner.set_progress_sink([&](const LevelProgress& p) {
      if (live) live->progress(p.level, p.in_flight, p.queued);
      if (config.load.progress) print_progress(p);
    });
  }
  if (scraper) {
    runner.set_level_sinks(nullptr,
                           [&](const LevelRunInfo& l) { scraper->mark_level_end(l.level); });
  }
  // The client's own floor on this machine, before any request: printed beside the results.
  const NoiseFloor noise_floor = measure_noise_floor();
  fmt::print(out, "{}", render_noise_floor(noise_floor));
  if (config.shard.active()) {
    fmt::print(out, "shard {} of {} (from {}) on {}; clock: {}\n", config.shard.index,
               config.shard.count, config.shard.source, config.shard_host,
               config.shard_clock.describe());
    if (config.load.start_at_unix_us > 0) {
      fmt::print(out, "lockstep: level 1 starts at unix {:.3f} s{}\n",
                 config.load.start_at_unix_us / 1e6,
                 config.load.level_slot_ns > 0
                     ? fmt::format(", level k every {} s after", config.load.level_slot_ns / 1e9)
                     : std::string());
    }
  }
  // Converts the runner's monotonic stamps to the wall clock the records are labelled with.
  const int64_t wall_minus_mono_ns = wall_us() * 1000 - mono_ns();
  int64_t started_us = wall_us();
  bool completed;
  {
    auto guard = install_signal_stop(&runner);
    completed = runner.run();
  }
  if (config.load.progress) fmt::print(stderr, "\r\033[K");

  RunOutcome outcome;
  outcome.levels = runner.levels();
  outcome.samples = runner.samples();
  outcome.start_ns = runner.run_start_ns();
  outcome.end_ns = runner.run_end_ns();
  outcome.self = runner.self_measure();
  outcome.noise_floor = noise_floor;
  outcome.completed = completed;
  outcome.started_unix_us = started_us;
  if (scraper) {
    scraper->stop();
    std::vector<int> levels;
    for (const auto& l : outcome.levels) levels.push_back(l.level);
    outcome.server = std::make_shared<servermetrics::ServerReport>(
        servermetrics::build_server_report(scraper->series(), true, levels, recorder.digests()));
  }
  if (live) live->stop();
  if (Status st = recorder.close(); !st) {
    fmt::print(stderr, "tokperf: writing requests.jsonl failed: {}\n", st.error());
  }
  // A shard's run facts for tokperf merge, written before summary.json: a folder with a summary
  // has both.
  if (config.shard.active() && !config.out_dir.empty()) {
    Status st =
        write_json_file(config.out_dir + "/shard.json",
                        shard_run_json(config, runner.levels(), runner.late_start_ns(),
                                       runner.self_measure(), wall_minus_mono_ns, completed));
    if (!st) fmt::print(stderr, "tokperf: cannot write shard.json: {}\n", st.error());
  }
  return report_run(config, outcome, recorder, notes, json, "bench");
}

int report_run(const BenchConfig& config, const RunOutcome& outcome, RunRecorder& recorder,
               const std::vector<std::string>& notes, bool json, const char* command) {
  std::FILE* out = json ? stderr : stdout;
  const bool completed = outcome.completed;
  const RunResult result = recorder.results().finish(outcome.levels);
  ClientHealth health = health_from(outcome.self);
  health.noise_floor = outcome.noise_floor;
  // Weigh the client's lateness against the smallest figure it could distort (issue 12).
  for (const LevelResult& l : result.levels) {
    for (double p50 : {l.summary.itl.p50, l.summary.ttft.p50}) {
      if (p50 > 0 && !(p50 >= health.distortable_ms)) health.distortable_ms = p50;
    }
  }
  health.warnings = client_health_warnings(health);
  RunInfo info;
  info.command = command;
  info.started_unix_us = outcome.started_unix_us;
  info.duration_s = outcome.self.wall_s;
  info.exit_reason = completed ? "completed" : "interrupted";
  info.notes = notes;
  if (!config.out_dir.empty()) {
    info.files = {{"requests", "requests.jsonl"}, {"timeseries", "timeseries.csv"}};
  }

  std::vector<LevelSummary> summaries;
  for (const LevelResult& l : result.levels) summaries.push_back(l.summary);
  fmt::print(out, "{}", render_level_table(summaries));
  fmt::print(out, "{}", render_level_details(result));
  // The server's side: scraped windows (bench --server-metrics) or per-request server timings.
  std::shared_ptr<const servermetrics::ServerReport> server = outcome.server;
  if (!server) {
    std::vector<int> levels;
    for (const auto& l : outcome.levels) levels.push_back(l.level);
    auto r = servermetrics::build_server_report({}, false, levels, recorder.digests());
    if (r.has_per_request()) server = std::make_shared<servermetrics::ServerReport>(std::move(r));
  }
  std::vector<std::string> level_labels;
  for (const auto& l : server ? server->levels : std::vector<servermetrics::ServerLevel>{}) {
    std::string label = std::to_string(l.level + 1);
    for (const auto& s : summaries) {
      if (s.params.level == l.level) label = s.params.label;
    }
    level_labels.push_back(label);
  }
  if (server) fmt::print(out, "{}", servermetrics::render_server_view(*server, level_labels));
  if (result.knee.found) fmt::print(out, "knee: {}\n", result.knee.explanation);
  fmt::print(out, "{}", render_error_breakdown(summaries));
  fmt::print(out, "{}", render_health_warnings(health));
  for (const auto& n : notes) fmt::print(out, "note: {}\n", n);

  ExtraSections extra;
  if (server) {
    extra.server = servermetrics::server_run_json(*server);
    for (const auto& l : server->levels)
      extra.server_by_level[l.level] = servermetrics::server_level_json(l);
  }
  const nlohmann::json summary = run_summary_json(config_json(config), result, health, info, extra);
  if (!config.out_dir.empty()) {
    // Windows start at the run's start (the recorder's origin, set before its first record).
    const TimeseriesBuilder none(outcome.start_ns);
    auto rows = (recorder.records() > 0 ? recorder.timeseries() : none)
                    .finish(outcome.end_ns, outcome.samples);
    std::vector<TimeseriesColumn> server_cols;
    if (server) {
      server_cols =
          servermetrics::server_timeseries_columns(*server, outcome.start_ns, rows.size());
    }
    Status ts = write_timeseries_csv(config.out_dir + "/timeseries.csv", rows, server_cols);
    if (!ts) fmt::print(stderr, "tokperf: cannot write timeseries.csv: {}\n", ts.error());
    Status st = write_json_file(config.out_dir + "/summary.json", summary);
    if (!st) fmt::print(stderr, "tokperf: cannot write summary.json: {}\n", st.error());
    Status html = write_report_html(config.out_dir, ReportOptions{}, recorder.report_sample());
    if (!html) fmt::print(stderr, "tokperf: cannot write report.html: {}\n", html.error());
    fmt::print(out, "wrote {}/: summary.json, requests.jsonl, timeseries.csv{}\n", config.out_dir,
               html ? ", report.html" : "");
    if (config.record_history) {
      auto id = record_run_in_history(config.out_dir, config.history_store);
      if (id) {
        fmt::print(out, "recorded as history run #{} (tokperf history; tokperf compare {} …)\n",
                   *id, *id);
      } else {
        fmt::print(stderr, "tokperf: could not record the run in the history store: {}\n",
                   id.error());
      }
    }
  }
  if (json) fmt::print("{}\n", summary.dump(2));

  if (!completed) {
    fmt::print(stderr, "tokperf: interrupted; results so far are above{}\n",
               config.out_dir.empty() ? std::string() : " and in " + config.out_dir);
    return kExitInterrupted;
  }
  int64_t ok = 0, sent = 0;
  for (const auto& s : summaries) {
    ok += s.ok;
    sent += s.sent;
  }
  if (sent > 0 && ok == 0) {
    fmt::print(stderr, "tokperf: every measured request failed (see the error breakdown above)\n");
    return kExitFailure;
  }
  if (sent == 0) {
    // Stopped before a measured request went out (a server or simulated engine that refused the
    // warm-up's requests): there is nothing to report, so say why and fail.
    for (const LevelRunInfo& l : outcome.levels) {
      if (!l.stopped_early) continue;
      fmt::print(stderr, "tokperf: no measured request was sent: {}\n", *l.stopped_early);
      return kExitFailure;
    }
  }
  return kExitOk;
}

}  // namespace tokperf
