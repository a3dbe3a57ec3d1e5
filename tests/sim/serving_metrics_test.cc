#include "sim/serving_metrics.h"

#include <gtest/gtest.h>

namespace tokperf::sim {
namespace {

TEST(PromHistogram, BoundsAreInclusiveUpperEdges) {
  PromHistogram h({0.01, 0.1});
  h.observe(0.01);  // le="0.01"
  h.observe(0.05);  // le="0.1"
  h.observe(0.1);   // le="0.1"
  h.observe(3.0);   // +Inf
  EXPECT_EQ(h.buckets(), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(h.count(), 4);
  EXPECT_DOUBLE_EQ(h.sum(), 3.16);
}

TEST(ServingMetrics, RendersVllmNamesWithCumulativeBuckets) {
  ServingMetrics m;
  m.ttft_s.observe(0.03);
  m.ttft_s.observe(0.3);
  m.generation_tokens_total = 7;
  EngineStats e;
  e.running = 2;
  e.waiting = 1;
  e.kv_blocks_total = 100;
  e.kv_blocks_used = 25;
  e.preemptions_total = 4;
  const std::string t = render_prometheus(m, e, "m");
  auto has = [&](const std::string& line) {
    EXPECT_NE(t.find(line + "\n"), std::string::npos) << line;
  };
  has("# TYPE vllm:num_requests_running gauge");
  has("vllm:num_requests_running{model_name=\"m\"} 2");
  has("vllm:num_requests_waiting{model_name=\"m\"} 1");
  has("vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25");
  has("vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.25");
  has("# TYPE vllm:num_preemptions counter");
  has("vllm:num_preemptions_total{model_name=\"m\"} 4");
  has("vllm:generation_tokens_total{model_name=\"m\"} 7");
  has("vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.02\"} 0");
  has("vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.04\"} 1");
  has("vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.5\"} 2");
  has("vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"1.0\"} 2");
  has("vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 2");
  has("vllm:time_to_first_token_seconds_count{model_name=\"m\"} 2");
}

}  // namespace
}  // namespace tokperf::sim
