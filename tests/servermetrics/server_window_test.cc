#include "servermetrics/server_window.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "servermetrics/engine_map.h"

namespace tokperf::servermetrics {
namespace {

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read test data " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
// Real llama.cpp captures (tests/data/real-streams/README.md).
std::string capture(const std::string& name) {
  return read(std::string(TOKPERF_TEST_DATA).append("/real-streams/") + name);
}
std::string local(const std::string& name) {
  return read(std::string(TOKPERF_TEST_DATA).append("/servermetrics/") + name);
}

Scrape scrape(int64_t t_ns, const std::string& text) {
  return Scrape{t_ns, true, {}, parse_exposition(text)};
}

TEST(EngineMap, RecognisesEachEngine) {
  EXPECT_EQ(detect_engine(parse_exposition(capture("llamacpp-metrics.prom"))), Engine::kLlamaCpp);
  EXPECT_EQ(detect_engine(parse_exposition(local("vllm_v1.prom"))), Engine::kVllm);
  EXPECT_EQ(detect_engine(parse_exposition(local("vllm_v0.prom"))), Engine::kVllm);
  EXPECT_EQ(detect_engine(parse_exposition(local("sglang.prom"))), Engine::kSglang);
  EXPECT_EQ(detect_engine(parse_exposition(local("tgi.prom"))), Engine::kTgi);
  EXPECT_EQ(detect_engine(parse_exposition("trtllm_num_requests_running 1\n")), Engine::kTrtllm);
  EXPECT_EQ(detect_engine(parse_exposition("nv_inference_request_success 1\n")), Engine::kTriton);
  EXPECT_EQ(detect_engine(parse_exposition("dynamo_frontend_inflight_requests 1\n")),
            Engine::kDynamo);
  EXPECT_EQ(detect_engine(parse_exposition("process_cpu_seconds_total 1\n")), Engine::kUnknown);
}

// The two real captures from one llama.cpp run: counter deltas between them.
TEST(ServerWindow, LlamaCppCountersBetweenRealCaptures) {
  const Scrape s[2] = {scrape(0, capture("llamacpp-metrics-under-load.prom")),
                       scrape(5'000'000'000, capture("llamacpp-metrics-after.prom"))};
  auto w = compute_window(s);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->engine, Engine::kLlamaCpp);
  EXPECT_DOUBLE_EQ(*w->c(Concept::kPromptTokens), 4372 - 757);
  EXPECT_DOUBLE_EQ(*w->c(Concept::kGenerationTokens), 400 - 16);
  EXPECT_NEAR(*w->c(Concept::kPrefillSeconds), 91.104 - 12.454, 1e-9);
  EXPECT_NEAR(*w->c(Concept::kDecodeSeconds), 457.004 - 3.103, 1e-9);
  EXPECT_EQ(w->g(Concept::kRunning)->last, 0);
  EXPECT_EQ(w->counter_resets, 0);
  // n_tokens_max is typed counter but is a maximum: not a counter delta.
  EXPECT_EQ(w->counter_deltas.count("llamacpp:n_tokens_max"), 0u);
  // The throughput gauges are kept raw (they reset per scrape; rates come from counters).
  EXPECT_EQ(w->gauges.at("llamacpp:prompt_tokens_seconds").last, 47.9891);
}

TEST(ServerWindow, CounterResetIsDetected) {
  const Scrape s[3] = {scrape(0, "# TYPE x_total counter\nx_total 100\n"),
                       scrape(1, "# TYPE x_total counter\nx_total 130\n"),
                       scrape(2, "# TYPE x_total counter\nx_total 20\n")};  // restarted
  auto w = compute_window(s);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->counter_deltas.at("x_total"), 30 + 20);
  EXPECT_EQ(w->counter_resets, 1);
}

TEST(ServerWindow, HistogramDeltaMeanAndPercentiles) {
  const std::string empty =
      "# TYPE vllm:time_to_first_token_seconds histogram\n"
      "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 1\n"
      "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.25\",model_name=\"m\"} 1\n"
      "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\",model_name=\"m\"} 1\n"
      "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 1\n"
      "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 1\n"
      "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.05\n";
  const Scrape s[2] = {scrape(0, empty), scrape(1'000'000'000, local("vllm_v1.prom"))};
  auto w = compute_window(s);
  ASSERT_TRUE(w);
  const HistogramDelta* h = w->h(Concept::kTtft);
  ASSERT_NE(h, nullptr);
  // Δcount 9, Δsum 2.45: the exact mean.
  EXPECT_DOUBLE_EQ(h->count, 9);
  EXPECT_NEAR(h->mean(), 2.45 / 9, 1e-12);
  ASSERT_EQ(h->bounds.size(), 3u);
  // Δcumulative: 1, 5, 9, 9. P50: rank 4.5 in (0.1, 0.25]: 0.1 + 0.15 * (4.5 - 1) / 4.
  auto p50 = h->percentile(0.5);
  ASSERT_TRUE(p50);
  EXPECT_NEAR(p50->value, 0.1 + 0.15 * 3.5 / 4, 1e-12);
  EXPECT_EQ(p50->lower, 0.1);
  EXPECT_EQ(p50->upper, 0.25);
  // P10: rank 0.9 in the first bucket, from 0.
  EXPECT_NEAR(h->percentile(0.1)->value, 0.1 * 0.9, 1e-12);
  // Labels other than le are summed; the mapping took the V1 names.
  EXPECT_EQ(w->source[static_cast<size_t>(Concept::kTtft)], "vllm:time_to_first_token_seconds");
  // Counters born inside the window count from zero; _created series are not counters.
  EXPECT_DOUBLE_EQ(*w->c(Concept::kPreemptions), 4);
  EXPECT_DOUBLE_EQ(*w->c(Concept::kFinished), 10);
  EXPECT_EQ(w->counter_deltas.count("vllm:num_preemptions_created{engine=\"0\",model_name=\"m\"}"),
            0u);
  // Exact-name matching: waiting is not waiting_by_reason.
  EXPECT_EQ(w->g(Concept::kWaiting)->mean, 2);
  EXPECT_EQ(w->g(Concept::kKvUsage)->max, 0.5);
}

TEST(ServerWindow, PercentileInTheInfBucketSaysAboveTheLastBound) {
  HistogramDelta h;
  h.bounds = {1, 2};
  h.cumulative = {0, 1, 10};
  h.count = 10;
  auto p = h.percentile(0.9);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->lower, 2);
  EXPECT_TRUE(std::isinf(p->upper));
}

TEST(ServerWindow, OldVllmNamesSglangAndTgiMap) {
  auto one = [](const std::string& text) {
    const Scrape s[2] = {Scrape{0, true, {}, Exposition{}}, scrape(1, text)};
    return compute_window(s);
  };
  auto v0 = one(local("vllm_v0.prom"));
  ASSERT_TRUE(v0);
  EXPECT_EQ(v0->source[static_cast<size_t>(Concept::kItl)], "vllm:time_per_output_token_seconds");
  EXPECT_EQ(v0->source[static_cast<size_t>(Concept::kKvUsage)], "vllm:gpu_cache_usage_perc");
  EXPECT_NEAR(v0->h(Concept::kItl)->mean(), 0.031, 1e-12);
  auto sg = one(local("sglang.prom"));
  ASSERT_TRUE(sg);
  EXPECT_EQ(sg->engine, Engine::kSglang);
  EXPECT_EQ(sg->g(Concept::kWaiting)->last, 4);
  EXPECT_NEAR(sg->h(Concept::kTtft)->mean(), 0.225, 1e-12);
  EXPECT_NEAR(sg->h(Concept::kQueue)->mean(), 0.05, 1e-12);
  EXPECT_EQ(*sg->c(Concept::kGenerationTokens), 4096);
  auto tgi = one(local("tgi.prom"));
  ASSERT_TRUE(tgi);
  EXPECT_EQ(tgi->engine, Engine::kTgi);
  EXPECT_EQ(tgi->h(Concept::kTtft), nullptr);  // TGI has none
  EXPECT_NEAR(tgi->h(Concept::kQueue)->mean(), 0.06, 1e-12);
  EXPECT_EQ(*tgi->c(Concept::kGenerationTokens), 6400);  // the histogram's sum
  EXPECT_EQ(tgi->g(Concept::kRunning)->last, 8);
  EXPECT_EQ(*tgi->c(Concept::kFinished), 20);
}

TEST(ServerWindow, FailedScrapesAreSkipped) {
  Scrape bad;
  bad.error = "down";
  const Scrape s[3] = {scrape(0, "a_total 1\n"), bad, scrape(2, "a_total 3\n")};
  auto w = compute_window(s);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->counter_deltas.at("a_total"), 2);
  const Scrape only[2] = {bad, scrape(2, "a_total 3\n")};
  EXPECT_FALSE(compute_window(only));
}

}  // namespace
}  // namespace tokperf::servermetrics
