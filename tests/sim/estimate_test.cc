#include "sim/estimate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tokperf::sim {
namespace {

// "One A100-class bandwidth" in the source material's arithmetic: exactly 2 TB/s.
GpuSpec two_tb_gpu() {
  return gpu_from_json_text(
             R"({"id":"2tb","memory_gib":80,"memory_bandwidth_gb_s":2000,"tflops":{"fp16":312}})",
             "test")
      .value();
}

Estimate run(const char* model, const GpuSpec& gpu, int64_t prompt = 1000) {
  Deployment d{find_model(model).value(), gpu, DType::kFp16, DType::kFp16, 1};
  EstimateRequest r;
  r.prompt_tokens = prompt;
  r.output_tokens = 100;
  return compute_estimate(CostModel(d, CostKnobs{}), r);
}

// Source: 7B FP16, 1,000-token prompt on an A100 (312 TFLOPS) >= ~45 ms.
TEST(Estimate, SevenBPrefillBoundOnA100) {
  const Estimate e = run("llama-2-7b", find_gpu("a100-80g").value());
  EXPECT_NEAR(e.prefill_bound_s, 0.045, 0.002);
}

// Source: 7B FP16 ~14 GB; at 2 TB/s >= ~7 ms/token.
TEST(Estimate, SevenBDecodeBoundAtTwoTbPerSecond) {
  const Estimate e = run("llama-2-7b", two_tb_gpu());
  EXPECT_NEAR(e.weight_bytes_total, 14e9, 0.6e9);
  EXPECT_NEAR(e.decode_bound_first_s, 0.007, 0.0005);
  EXPECT_TRUE(e.fits);
}

// Source: 70B FP16 ~140 GB -> ~71 ms/token, 1,000-token prefill ~0.45 s; does not fit in 80 GB.
TEST(Estimate, SeventyBBoundsAndDoesNotFit) {
  const Estimate e = run("llama-3.1-70b", two_tb_gpu());
  EXPECT_NEAR(e.weight_bytes_total, 140e9, 2e9);
  EXPECT_NEAR(e.decode_bound_first_s, 0.071, 0.0015);
  EXPECT_NEAR(e.prefill_bound_s, 0.45, 0.01);
  EXPECT_FALSE(e.fits);
  EXPECT_EQ(e.kv_capacity_tokens, 0);
  ASSERT_FALSE(e.notes.empty());
  EXPECT_NE(e.notes[0].find("does NOT fit"), std::string::npos);
}

TEST(Estimate, ExpectedValuesSitAboveTheBounds) {
  const Estimate e = run("llama-3.1-8b", find_gpu("a100-40g").value(), 1024);
  EXPECT_GT(e.expected_ttft_s, e.prefill_bound_s);
  EXPECT_GT(e.expected_tpot_s, e.decode_bound_first_s);
  // vLLM on an A100-40GB serves Llama-3.1-8B BF16 at ~13.3 ms/token at concurrency 1.
  EXPECT_NEAR(e.expected_tpot_s, 0.0133, 0.0133 * 0.15);
}

TEST(Estimate, CapacityInSequencesAtTheContext) {
  const Estimate e = run("llama-2-7b", find_gpu("a100-80g").value());
  EXPECT_EQ(e.context_tokens, 1100);
  EXPECT_EQ(e.kv_capacity_sequences, e.kv_capacity_tokens / 1100);
}

TEST(Estimate, TextAndJsonCarryTheFigures) {
  Deployment d{find_model("llama-3.1-70b").value(), find_gpu("a100-80g").value(), DType::kFp16,
               DType::kFp16, 1};
  const CostModel c(d, CostKnobs{});
  const EstimateRequest r;
  const Estimate e = compute_estimate(c, r);
  const std::string text = format_estimate_text(e, c, r);
  EXPECT_NE(text.find("fits"), std::string::npos);
  EXPECT_NE(text.find("NO"), std::string::npos);
  const auto j = estimate_to_json(e, c, r);
  EXPECT_EQ(j["fits"], false);
  EXPECT_DOUBLE_EQ(j["prefill_bound_s"].get<double>(), e.prefill_bound_s);
}

TEST(Estimate, TextNamesTheWeightStreamItApplied) {
  Deployment d{find_model("llama-3.1-8b").value(), find_gpu("h100").value(), DType::kFp16,
               DType::kFp16, 1};
  const EstimateRequest r;
  const CostModel sixteen(d, CostKnobs{});
  const std::string text = format_estimate_text(compute_estimate(sixteen, r), sixteen, r);
  EXPECT_NE(text.find("weight bandwidth 88% + 6.05 us a GEMM, 129 a step"), std::string::npos)
      << text;
  const auto j = estimate_to_json(compute_estimate(sixteen, r), sixteen, r);
  EXPECT_DOUBLE_EQ(j["knobs"]["gemm_latency_s"].get<double>(), CostKnobs{}.gemm_latency_s);

  CostKnobs flat;
  flat.gemm_latency_s = 0;  // the old flat stream: no per-GEMM part to name
  const CostModel old(d, flat);
  EXPECT_EQ(format_estimate_text(compute_estimate(old, r), old, r).find("a GEMM"),
            std::string::npos);

  d.weight_dtype = DType::kFp8;  // W8A8 on an H100: its own flat stream
  const CostModel fp8(d, CostKnobs{});
  const std::string t8 = format_estimate_text(compute_estimate(fp8, r), fp8, r);
  EXPECT_NE(t8.find("weight bandwidth 68%, 8-bit weight and activation kernels"), std::string::npos)
      << t8;
  EXPECT_EQ(t8.find("a GEMM"), std::string::npos);
}

}  // namespace
}  // namespace tokperf::sim
