#include "analysis/roofline.h"

#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

namespace tokperf {
namespace {

LevelSummary level(int index, int concurrency, double ttft_p50, double tpot_p50) {
  LevelSummary s;
  s.params.level = index;
  s.params.concurrency = concurrency;
  s.params.label = "c=" + std::to_string(concurrency);
  s.ttft.p50 = ttft_p50;
  s.tpot.p50 = tpot_p50;
  return s;
}

std::vector<RequestSample> requests(int level, int n, int64_t prompt, int64_t output) {
  std::vector<RequestSample> v(static_cast<size_t>(n));
  for (RequestSample& r : v) {
    r.level = level;
    r.prompt_tokens = prompt;
    r.output_tokens = output;
  }
  return v;
}

sim::DeploymentFlags llama7b_a100() {
  sim::DeploymentFlags f;
  f.model = "llama-2-7b";
  f.gpu = "a100-80g";
  f.dtype = "fp16";
  return f;
}

TEST(Roofline, SevenBillionFp16OnAnA100MatchesTheSourceArithmetic) {
  // SOURCE_NOTES "Arithmetic": 7B FP16 is about 14 GB of weights; at ~2 TB/s one token takes at
  // least ~7 ms. A100 80GB: 2,039 GB/s.
  std::vector<LevelSummary> lv = {level(0, 1, 100, 14)};
  auto rs = requests(0, 5, 100, 200);  // context 100 + 200/2 = 200 tokens
  auto r = compute_roofline(llama7b_a100(), "declared", lv, rs, 0);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_DOUBLE_EQ(r->peak_bandwidth_gbps, 2039);
  EXPECT_NEAR(r->weight_gb, 13.5, 0.3);
  ASSERT_EQ(r->levels.size(), 1u);
  const RooflineLevel& l = r->levels[0];
  EXPECT_DOUBLE_EQ(l.batch, 1);
  EXPECT_DOUBLE_EQ(l.prompt_tokens, 100);
  EXPECT_DOUBLE_EQ(l.context_tokens, 200);
  EXPECT_NEAR(l.decode_bound_ms, 6.7, 0.2);  // ~13.6 GB / 2,039 GB/s
  // Measured TPOT 14 ms is about half the bound: half the bandwidth, as "real engines reach
  // 1/3-1/2".
  EXPECT_NEAR(l.decode_fraction, l.decode_bound_ms / 14, 1e-12);
  EXPECT_NEAR(l.bandwidth_fraction, l.decode_fraction, 1e-9);  // memory-bound at batch 1
  EXPECT_NEAR(l.bandwidth_gbps, l.step_bytes / 1e9 / 0.014, 1e-6);
  // Prefill of 100 tokens: 2 x 6.7e9 x 100 = 1.35e12 FLOPs at 312 TFLOPS is 4.3 ms, below the 6.6
  // ms it takes just to read the weights once, so the bound is the read.
  EXPECT_NEAR(l.prefill_bound_ms, 6.6, 0.3);
  EXPECT_NEAR(l.prefill_fraction, l.prefill_bound_ms / 100, 1e-12);
}

TEST(Roofline, BatchAddsKvReadsAndTensorParallelAddsBandwidth) {
  sim::DeploymentFlags f = llama7b_a100();
  f.tp = 2;
  std::vector<LevelSummary> lv = {level(0, 1, 100, 10), level(1, 8, 300, 20)};
  std::vector<RequestSample> rs = requests(0, 3, 1000, 0);
  auto more = requests(1, 3, 1000, 0);
  rs.insert(rs.end(), more.begin(), more.end());
  auto r = compute_roofline(f, "declared", lv, rs, 0);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_DOUBLE_EQ(r->peak_bandwidth_gbps, 2 * 2039.0);
  const RooflineLevel& one = r->levels[0];
  const RooflineLevel& eight = r->levels[1];
  EXPECT_DOUBLE_EQ(eight.batch, 8);
  // Llama-2-7B keeps 2 x 32 layers x 4096 x 2 bytes = 0.5 MiB of KV per token: 1,000 tokens of
  // context add 0.52 GB per sequence per step.
  double kv_per_seq = 2.0 * 32 * 4096 * 2 * 1000;
  EXPECT_NEAR(eight.step_bytes - one.step_bytes, 7 * kv_per_seq, 1e3);
  EXPECT_NEAR(eight.decode_bound_ms, 1000 * eight.step_bytes / (2 * 2039e9), 1e-9);
}

TEST(Roofline, RecordedDeploymentIsReadBackAndBadFieldsAreNamed) {
  nlohmann::json config = {{"deployment",
                            {{"source", "simulated"},
                             {"model", "llama-2-13b"},
                             {"gpu", "h100"},
                             {"dtype", "int8"},
                             {"kv_dtype", "auto"},
                             {"tp", 2}}}};
  auto d = recorded_deployment(config);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->model, "llama-2-13b");
  EXPECT_EQ((*d)->gpu, "h100");
  EXPECT_EQ((*d)->dtype, "int8");
  EXPECT_EQ((*d)->tp, 2);
  EXPECT_FALSE(recorded_deployment(nlohmann::json{{"deployment", nullptr}})->has_value());
  EXPECT_FALSE(recorded_deployment(nlohmann::json::object())->has_value());
  auto bad = recorded_deployment(nlohmann::json{{"deployment", {{"tp", 0}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("deployment.tp"), std::string::npos);
  // An unknown GPU fails with the simulator's own message, naming the flag and what is accepted.
  sim::DeploymentFlags f = llama7b_a100();
  f.gpu = "tpu-v9";
  auto r = compute_roofline(f, "declared", {}, {}, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("--gpu 'tpu-v9'"), std::string::npos);
}

TEST(Roofline, ConsoleTextShowsBoundsAndShares) {
  std::vector<LevelSummary> lv = {level(0, 1, 100, 13.4)};
  auto rs = requests(0, 2, 100, 0);
  auto r = compute_roofline(llama7b_a100(), "simulated", lv, rs, 0);
  ASSERT_TRUE(r.ok());
  std::string text = render_roofline_text(*r);
  EXPECT_NE(text.find("roofline (simulated)"), std::string::npos) << text;
  EXPECT_NE(text.find("2039 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("c=1"), std::string::npos) << text;
  // 6.6 ms of 13.4 ms: about half the bandwidth.
  double share = 100 * r->levels[0].bandwidth_fraction;
  EXPECT_NEAR(share, 50, 2);
  EXPECT_NE(text.find(fmt::format("({:.0f}%)", share)), std::string::npos) << text;
}

}  // namespace
}  // namespace tokperf
