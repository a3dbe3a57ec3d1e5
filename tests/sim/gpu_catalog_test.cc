#include "sim/gpu_catalog.h"

#include "sim/cost_model.h"

#include <gtest/gtest.h>

namespace tokperf::sim {
namespace {

TEST(GpuCatalog, AllBuiltinsPresentWithDensePeaks) {
  for (const char* id :
       {"a100-40g", "a100-80g", "h100", "h200", "l40s", "rtx4090", "a10g", "l4", "mi300x"}) {
    auto g = find_gpu(id);
    ASSERT_TRUE(g.ok()) << id;
    EXPECT_GT(g->memory_bytes, 0) << id;
    EXPECT_GT(g->memory_bw_bytes_per_s, 0) << id;
    EXPECT_GT(g->bf16_flops, 0) << id;
  }
  // Dense, not the 1979 TFLOPS "with sparsity" figure.
  EXPECT_DOUBLE_EQ(find_gpu("h100")->bf16_flops, 989.4e12);
  EXPECT_DOUBLE_EQ(find_gpu("a100-80g")->fp16_flops, 312e12);
  EXPECT_DOUBLE_EQ(find_gpu("a100-80g")->memory_bw_bytes_per_s, 2039e9);
}

TEST(GpuCatalog, LowPrecisionMathOnlyWhereTheGpuHasIt) {
  const GpuSpec a100 = find_gpu("a100-80g").value();
  EXPECT_DOUBLE_EQ(a100.matmul_flops(DType::kFp8), 312e12);   // Ampere: no FP8 tensor cores
  EXPECT_DOUBLE_EQ(a100.matmul_flops(DType::kInt8), 624e12);  // but INT8 W8A8
  EXPECT_DOUBLE_EQ(a100.matmul_flops(DType::kInt4), 312e12);  // weight-only
  const GpuSpec h100 = find_gpu("h100").value();
  EXPECT_DOUBLE_EQ(h100.matmul_flops(DType::kFp8), 1978.9e12);
}

TEST(GpuCatalog, UnknownIdListsAccepted) {
  auto g = find_gpu("b200");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("'b200'"), std::string::npos);
  EXPECT_NE(g.error().find("rtx4090"), std::string::npos);
}

TEST(GpuCatalog, UserSpecJson) {
  auto g = gpu_from_json_text(
      R"({"id":"x","memory_gib":16,"memory_bandwidth_gb_s":2000,"tflops":{"bf16":100}})", "t");
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_DOUBLE_EQ(g->memory_bw_bytes_per_s, 2e12);
  EXPECT_DOUBLE_EQ(g->fp16_flops, 100e12);  // falls back to the bf16 figure
  EXPECT_DOUBLE_EQ(g->memory_bytes, 16.0 * 1024 * 1024 * 1024);
  EXPECT_FALSE(gpu_from_json_text(R"({"memory_gib":16})", "t").ok());
  EXPECT_DOUBLE_EQ(g->matmul_stack_factor, 1.0);
}

// A spec's optional factor `key`: 0.6 is read into `field`; 0, 1.5, -0.2 and a string are refused,
// naming the file and the accepted range.
void expect_factor_read_and_bounded(const std::string& key, double GpuSpec::*field) {
  SCOPED_TRACE(key);
  const std::string base =
      R"({"id":"x","memory_gib":16,"memory_bandwidth_gb_s":2000,"tflops":{"bf16":100},)";
  auto g = gpu_from_json_text(base + "\"" + key + "\":0.6}", "t");
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_DOUBLE_EQ((*g).*field, 0.6);
  for (const char* bad : {"0", "1.5", "-0.2", "\"half\""}) {
    auto b = gpu_from_json_text(base + "\"" + key + "\":" + bad + "}", "'f.json'");
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.error().find("'f.json': " + key + " must be a number in (0, 1]"), std::string::npos)
        << b.error();
  }
}

TEST(GpuCatalog, MatmulStackFactorIsReadAndBounded) {
  expect_factor_read_and_bounded("matmul_stack_factor", &GpuSpec::matmul_stack_factor);
  // NVIDIA GPUs are the reference the efficiencies were measured on; the MI300X's ROCm GEMMs
  // reach a lower share of its peak.
  EXPECT_DOUBLE_EQ(find_gpu("h100")->matmul_stack_factor, 1.0);
  EXPECT_DOUBLE_EQ(find_gpu("a100-80g")->matmul_stack_factor, 1.0);
  EXPECT_NEAR(find_gpu("mi300x")->matmul_stack_factor, 0.514 / ((0.869 + 0.803) / 2), 0.001);
}

// The KV-read factor: read from a spec, bounded, below 1 on the Ada GPUs only, and it slows a
// decode step's KV reads and nothing else.
TEST(GpuCatalog, KvReadFactorIsReadBoundedAndSlowsOnlyKvReads) {
  expect_factor_read_and_bounded("kv_read_factor", &GpuSpec::kv_read_factor);
  for (const char* ada : {"l40s", "l4", "rtx4090"}) {
    EXPECT_LT(find_gpu(ada)->kv_read_factor, 1.0) << ada;
  }
  for (const char* other : {"a100-80g", "h100", "h200", "mi300x", "a10g"}) {
    EXPECT_DOUBLE_EQ(find_gpu(other)->kv_read_factor, 1.0) << other;
  }
  GpuSpec slow = find_gpu("h100").value();
  slow.kv_read_factor = 0.5;
  const Deployment fast_d{find_model("llama-3.1-8b").value(), find_gpu("h100").value(),
                          DType::kBf16, DType::kBf16, 1};
  Deployment slow_d = fast_d;
  slow_d.gpu = slow;
  StepShape s;
  for (int i = 0; i < 32; ++i) s.add(1, 2000, true, false);
  const StepBreakdown a = CostModel(fast_d, CostKnobs{}).step(s);
  const StepBreakdown b = CostModel(slow_d, CostKnobs{}).step(s);
  EXPECT_NEAR(b.kv_s, 2 * a.kv_s, 1e-12);
  EXPECT_DOUBLE_EQ(b.weights_s, a.weights_s);
  EXPECT_DOUBLE_EQ(b.linear_s, a.linear_s);
  CostKnobs knob;
  knob.kv_read_factor = 0.5;  // the fitting override
  EXPECT_NEAR(CostModel(fast_d, knob).step(s).kv_s, b.kv_s, 1e-12);
}

}  // namespace
}  // namespace tokperf::sim
