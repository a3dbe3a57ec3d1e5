// A saved run written with the real writers (requests.jsonl, summary.json, timeseries.csv), for the
// report, compare and history tests. Header-only: tests/CMakeLists.txt compiles *_test.cc only.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/level_result.h"
#include "metrics/aggregate.h"
#include "metrics/timeseries.h"
#include "report/json_output.h"
#include "report/load_report.h"
#include "support/scratch_dir.h"

namespace tokperf::testing_fixture {

struct FixtureLevel {
  int concurrency = 1;
  int requests = 40;
  double ttft_ms = 200;
  double itl_ms = 30;
  int tokens = 30;
  int failures = 0;  // extra requests that fail with 429
  // Odd-numbered requests' last token arrives this much later (a reading stall that a sample of
  // every 2nd record does not see).
  double odd_last_token_late_ms = 0;
};

// A new empty folder in the test process's scratch folder (removed when the process ends).
inline std::string fresh_dir(const std::string& name) {
  const std::string p = testing_support::scratch_file("tokperf-" + name);
  std::filesystem::create_directories(p);
  return p;
}

// Requests of a level run back to back in `concurrency` slots, sends 1 ms apart within a wave.
inline std::string write_run(const std::string& dir, const std::vector<FixtureLevel>& levels,
                             const std::string& slo = "") {
  const int64_t ms = 1'000'000;
  RequestsJsonlWriter w;
  (void)w.open(dir + "/requests.jsonl");
  std::vector<RequestTimeline> all;
  std::vector<LevelParams> params;
  std::vector<LevelRunInfo> runs;
  int64_t t = 1'000 * ms;
  uint64_t seq = 0;
  for (size_t li = 0; li < levels.size(); ++li) {
    const FixtureLevel& L = levels[li];
    std::vector<RequestTimeline> recs;
    int total = L.requests + L.failures;
    for (int i = 0; i < total; ++i) {
      RequestTimeline r;
      r.seq = seq++;
      r.request_id = "req-" + std::to_string(r.seq);
      r.level = static_cast<int>(li);
      int wave = i / L.concurrency, slot = i % L.concurrency;
      int64_t dur = static_cast<int64_t>((L.ttft_ms + L.itl_ms * (L.tokens - 1) + 5) * ms);
      r.intended_ns = t + wave * dur + slot * ms;
      r.send_ns = r.intended_ns + ms / 2;
      r.start_unix_us = 1'700'000'000'000'000 + r.send_ns / 1000;
      r.http_status = 200;
      if (i >= L.requests) {
        r.http_status = 429;
        r.error = {ErrorKind::kRateLimited, 429, "too many requests"};
        r.end_ns = r.send_ns + 3 * ms;
      } else {
        for (int k = 0; k < L.tokens; ++k) {
          // A little deterministic jitter so distributions are not single points.
          int64_t jitter = ((i * 7 + k * 3) % 5) * ms / 5;
          int64_t at = r.send_ns + static_cast<int64_t>((L.ttft_ms + L.itl_ms * k) * ms) + jitter;
          if (i % 2 == 1 && k == L.tokens - 1)
            at += static_cast<int64_t>(L.odd_last_token_late_ms * ms);
          r.token_events.push_back({at, 1, true});
        }
        r.first_visible_ns = r.token_events.front().t_ns;
        r.end_ns = r.token_events.back().t_ns + ms;
        r.usage_completion_tokens = L.tokens;
        r.prompt_tokens_sent = 300;
        r.saw_done = true;
      }
      recs.push_back(r);
    }
    LevelParams p;
    p.label = "c=" + std::to_string(L.concurrency);
    p.level = static_cast<int>(li);
    p.concurrency = L.concurrency;
    params.push_back(p);
    LevelRunInfo run;
    run.level = static_cast<int>(li);
    run.spec = LevelSpec{LoadMode::kConcurrency, static_cast<double>(L.concurrency),
                         static_cast<double>(L.concurrency), 0};
    run.start_ns = t;
    for (const auto& r : recs) t = std::max(t, r.end_ns);
    run.end_ns = t;
    run.measured_sent = static_cast<int64_t>(recs.size());
    runs.push_back(run);
    t += 10 * ms;
    all.insert(all.end(), recs.begin(), recs.end());
  }
  // Written as bench writes them: each record's metrics once, into requests.jsonl and the results.
  RunResultBuilder results(params, slo.empty() ? SloSpec{} : parse_slo(slo).value());
  for (const auto& r : all) {
    const RequestMetrics m = compute_request_metrics(r);
    (void)w.write(r, m);
    results.add(r, m);
  }
  (void)w.close();
  nlohmann::json config = {{"target",
                            {{"base_url", "http://127.0.0.1:8000/v1"},
                             {"model", "fixture-model"},
                             {"api_key", "sk-live-SECRET"},
                             {"headers", {"Authorization: Bearer SECRET2", "X-Team: perf"}}}}};
  if (!slo.empty()) config["slo"] = slo;
  ClientHealth health;
  RunInfo info;
  info.command = "bench";
  info.started_unix_us = 1'700'000'000'000'000;
  info.exit_reason = "completed";
  (void)write_json_file(dir + "/summary.json",
                        run_summary_json(config, results.finish(runs), health, info));
  auto rows = build_timeseries(all, 1'000 * ms, t);
  (void)write_timeseries_csv(dir + "/timeseries.csv", rows);
  return dir;
}

}  // namespace tokperf::testing_fixture
