// End-to-end: bench against `sim serve` (in-process) with the server-metrics scraper running, and
// the decomposition checked against the simulator's truth — its exact per-request queue and
// prefill times, reported in llama.cpp-style `timings` — at low load (prefill-dominated) and past
// the knee (queue-dominated, max_num_seqs 2 under 8 streams). And the measured loop never waits on
// a stalled scrape.
#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "client/request_builder.h"
#include "load/bench_runner.h"
#include "servermetrics/scraper.h"
#include "servermetrics/server_report.h"
#include "sim/sim_server.h"
#include "workload/prompt.h"

namespace tokperf::servermetrics {
namespace {

std::unique_ptr<sim::SimServer> start_sim(int64_t max_num_seqs) {
  auto d = sim::resolve_deployment(sim::DeploymentFlags{});
  EXPECT_TRUE(d.ok());
  sim::SimServerOptions o;
  o.deployment = *d;
  o.engine.max_num_seqs = max_num_seqs;
  o.served_model = "sim-model";
  o.emit_timings = true;
  auto s = sim::SimServer::create(o);
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE((*s)->start().ok());
  return std::move(s).value();
}

BenchConfig config_for(const sim::SimServer& s, std::vector<int> concurrency, int requests) {
  BenchConfig c;
  c.target.base_url = s.base_url();
  c.target.model = s.served_model();
  c.target.ignore_eos = true;
  c.prompt.text = paragraph_words(1000);
  c.prompt.output_tokens = 8;
  c.prompt.unique_prefix = true;  // no prefix cache: every request prefills its whole prompt
  c.load.plan.levels.clear();
  for (int n : concurrency) {
    c.load.plan.levels.push_back(LevelSpec{LoadMode::kConcurrency, double(n), double(n), 0});
  }
  c.load.plan.measure = PhaseLimit{0, requests};
  c.load.default_warmup = false;
  c.load.stop_on_saturation = false;
  c.load.timeout_ns = 30'000'000'000;
  c.load.progress = false;
  c.run_id = "servermetrics";
  return c;
}

// The value at rank ceil(q n): the one a bucket-interpolated percentile's bucket must contain.
double rank_quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::max<size_t>(k, 1) - 1];
}

void expect_histogram_matches_truth(const HistogramDelta& h, const std::vector<double>& truth_ms,
                                    const char* what) {
  ASSERT_EQ(h.count, static_cast<double>(truth_ms.size())) << what;
  double sum = 0;
  for (double v : truth_ms) sum += v;
  // Means are exact (Δsum/Δcount); the responses print the truth to the microsecond.
  EXPECT_NEAR(h.mean() * 1e3, sum / static_cast<double>(truth_ms.size()), 0.01) << what;
  for (double q : {0.5, 0.9}) {
    auto p = h.percentile(q);
    ASSERT_TRUE(p) << what;
    const double truth_s = rank_quantile(truth_ms, q) / 1e3;
    EXPECT_GE(truth_s, p->lower - 1e-9) << what << " P" << q * 100;
    EXPECT_LE(truth_s, p->upper + 1e-9) << what << " P" << q * 100;
    EXPECT_LE(std::abs(p->value - truth_s), p->upper - p->lower) << what << " P" << q * 100;
  }
}

TEST(ServerMetricsE2E, DecompositionMatchesTheSimulatorsTruthBelowAndPastTheKnee) {
  auto server = start_sim(2);
  BenchConfig c = config_for(*server, {1, 8}, 24);
  ScraperOptions so;
  so.urls = {default_metrics_url(server->base_url())};
  so.interval_ns = 200'000'000;
  std::atomic<int> fetched{0};
  MetricsFetcher real = default_metrics_fetcher();
  ServerScraper scraper(so, [&](const std::string& url, int64_t timeout_ns) {
    auto reply = real(url, timeout_ns);
    fetched.fetch_add(1);
    return reply;
  });
  scraper.baseline();
  ASSERT_TRUE(scraper.series()[0].scrapes[0].ok) << scraper.series()[0].scrapes[0].error;
  scraper.start();
  std::vector<RequestTimeline> records;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt),
                     [&](const RequestTimeline& t) { records.push_back(t); });
  // Clean window edges for the truth check: this test's hook waits (on the loop) until the
  // level-end scrape is done (two scrapes: one may have been under way), so no request of the next
  // level can end inside the previous window. bench never waits here (see the stall test below).
  runner.set_level_sinks(nullptr, [&](const LevelRunInfo& info) {
    const int level = info.level;
    const int before = fetched.load();
    scraper.mark_level_end(level);
    while (fetched.load() < before + 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_TRUE(runner.run());
  scraper.stop();
  ASSERT_EQ(records.size(), 48u);
  for (const auto& t : records) ASSERT_TRUE(t.ok()) << t.error.message;

  const int levels[] = {0, 1};
  ServerReport r = build_server_report(scraper.series(), true, levels, records);
  ASSERT_TRUE(r.has_windows()) << r.missing_reason;
  for (int level : levels) {
    SCOPED_TRACE(level);
    const ServerLevel& l = r.levels[static_cast<size_t>(level)];
    ASSERT_TRUE(l.window);
    EXPECT_EQ(l.window->engine, Engine::kVllm);
    std::vector<double> queue_ms, prefill_ms;
    for (const auto& t : records) {
      if (t.level != level) continue;
      ASSERT_GE(t.server.prompt_ms, 0);
      queue_ms.push_back(t.server.queue_ms);
      prefill_ms.push_back(t.server.prompt_ms);
    }
    ASSERT_NE(l.window->h(Concept::kQueue), nullptr);
    ASSERT_NE(l.window->h(Concept::kPrefill), nullptr);
    expect_histogram_matches_truth(*l.window->h(Concept::kQueue), queue_ms, "queue");
    expect_histogram_matches_truth(*l.window->h(Concept::kPrefill), prefill_ms, "prefill");
    const LevelDecomposition& d = l.decomposition;
    // The simulator's TTFT is exactly queue + prefill; the client saw it from before the server.
    EXPECT_NEAR(d.server_overhead_ms, 0, 0.01);
    EXPECT_GE(d.outside_server_ms, 0);
    EXPECT_NEAR(d.outside_server_ms + d.queue_mean_ms + d.prefill_mean_ms + d.server_overhead_ms,
                d.client_ttft_mean_ms, 1e-6);
    // Per request: client TTFT - (queue + prefill) is the network and HTTP share, never negative.
    EXPECT_EQ(l.per_request.requests, 24);
    EXPECT_GE(l.per_request.remainder_min_ms, -0.01);
    // Server tokens match what the client received.
    EXPECT_EQ(*l.window->c(Concept::kGenerationTokens), 24 * 8);
  }
  EXPECT_EQ(r.levels[0].decomposition.dominant, "prefill");
  EXPECT_LT(r.levels[0].decomposition.queue_mean_ms, r.levels[0].decomposition.prefill_mean_ms);
  EXPECT_EQ(r.levels[1].decomposition.dominant, "queue");
  EXPECT_GT(r.levels[1].window->g(Concept::kWaiting)->max, 0);
  // The server's columns land on the client's clock, inside the run.
  auto cols = server_timeseries_columns(
      r, runner.run_start_ns(),
      static_cast<size_t>((runner.run_end_ns() - runner.run_start_ns()) / 1'000'000'000) + 1);
  ASSERT_FALSE(cols.empty());
  EXPECT_TRUE(
      std::any_of(cols[0].values.begin(), cols[0].values.end(), [](double v) { return v > 0; }));
}

// The scrape stalls (its fetch blocks until released); the benchmark finishes regardless, and the
// scrape is released only after run() has returned: the measured loop never waited on it.
TEST(ServerMetricsE2E, AStalledScrapeNeverDelaysMeasuredRequests) {
  auto server = start_sim(256);
  BenchConfig c = config_for(*server, {2}, 10);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls{0};
  MetricsFetcher stall = [&](const std::string&, int64_t) -> Result<HttpReply> {
    if (calls.fetch_add(1) >= 1) released.wait();  // the baseline answers; then it stalls
    return HttpReply{200, "text/plain", "x_total 1\n"};
  };
  ScraperOptions so;
  so.urls = {"http://stalled.invalid/metrics"};
  so.interval_ns = 1'000'000;
  ServerScraper scraper(so, stall);
  scraper.baseline();
  scraper.start();
  std::vector<RequestTimeline> records;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt),
                     [&](const RequestTimeline& t) { records.push_back(t); });
  runner.set_level_sinks(nullptr,
                         [&](const LevelRunInfo& info) { scraper.mark_level_end(info.level); });
  ASSERT_TRUE(runner.run());
  EXPECT_EQ(scraper.attempts(), 2);  // the stalled scrape is still the one in flight
  release.set_value();
  scraper.stop();
  ASSERT_EQ(records.size(), 10u);
  for (const auto& t : records) EXPECT_TRUE(t.ok()) << t.error.message;
  EXPECT_EQ(scraper.series()[0].level_end.count(0), 1u);
}

}  // namespace
}  // namespace tokperf::servermetrics
