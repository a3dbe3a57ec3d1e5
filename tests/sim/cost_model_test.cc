#include "sim/cost_model.h"

#include <gtest/gtest.h>

#include <string>

namespace tokperf::sim {
namespace {

CostModel make(const char* model, const char* gpu, DType dtype = DType::kFp16, int tp = 1) {
  Deployment d{find_model(model).value(), find_gpu(gpu).value(), dtype, DType::kFp16, tp};
  return CostModel(d, CostKnobs{});
}

TEST(CostModel, WeightAndKvBytes) {
  const CostModel c = make("llama-2-7b", "a100-80g");
  EXPECT_DOUBLE_EQ(c.weight_bytes_total(), 6'738'415'616.0 * 2);
  EXPECT_DOUBLE_EQ(c.kv_bytes_per_token(), 524'288.0);  // 2 * 32 layers * 32 heads * 128 * 2 B
  const CostModel int4 = make("llama-2-7b", "a100-80g", DType::kInt4);
  EXPECT_DOUBLE_EQ(int4.weight_bytes_total(), c.weight_bytes_total() / 4);
}

TEST(CostModel, KvCapacityAfterUtilisationWeightsAndReserve) {
  const CostModel c = make("llama-2-7b", "a100-80g");
  const double gib = 1024.0 * 1024 * 1024;
  const double budget = 0.9 * 79.2 * gib - 6'738'415'616.0 * 2 - 2 * gib;  // 79.2 GiB visible
  EXPECT_DOUBLE_EQ(c.kv_budget_bytes_per_gpu(), budget);
  EXPECT_EQ(c.kv_capacity_tokens(), static_cast<int64_t>(budget / 524'288.0));
  EXPECT_TRUE(c.fits());
  EXPECT_FALSE(make("llama-3.1-70b", "a100-80g").fits());
  EXPECT_EQ(make("llama-3.1-70b", "a100-80g").kv_capacity_tokens(), 0);
}

TEST(CostModel, TensorParallelSplitsWeightsAndKvHeads) {
  const CostModel tp1 = make("llama-3.1-70b", "h100", DType::kFp8, 1);
  const CostModel tp2 = make("llama-3.1-70b", "h100", DType::kFp8, 2);
  EXPECT_DOUBLE_EQ(tp2.weight_bytes_per_gpu(), tp1.weight_bytes_per_gpu() / 2);
  EXPECT_DOUBLE_EQ(tp2.kv_bytes_per_token_per_gpu(), tp1.kv_bytes_per_token_per_gpu() / 2);
  // Only TP > 1 pays for all-reduces.
  StepShape s;
  s.add(1, 100, true, false);
  EXPECT_EQ(tp1.step(s).comm_s, 0);
  EXPECT_GT(tp2.step(s).comm_s, 0);
}

// The TP all-reduce (allreduce_latency_s + a ring over the datasheet link at
// interconnect_efficiency) against published H100 measurements of vLLM's custom all-reduce
// (sgl-project/sglang PR #2904, 2025-01-15, `tests/test_trt_reduce.py`: float32 tensors of 524,288
// and 1,048,576 elements, i.e. 2 and 4 MiB, no CUDA graph): TP 2/4/8 took 17.7/26.9/30.4 µs and
// 26.6/40.2/45.0 µs. A decode step of 128 or 256 Llama-3.1-70B tokens all-reduces 2 or 4 MiB of
// 16-bit activations twice per layer; the model stays within 25% of every measurement.
TEST(CostModel, TensorParallelAllReduceIsWithinAQuarterOfPublishedH100Timings) {
  const struct {
    int tp;
    int64_t tokens;
    double measured_us;
  } cases[] = {{2, 128, 17.7}, {4, 128, 26.9}, {8, 128, 30.4},
               {2, 256, 26.6}, {4, 256, 40.2}, {8, 256, 45.0}};
  for (const auto& c : cases) {
    SCOPED_TRACE("tp " + std::to_string(c.tp) + ", " + std::to_string(c.tokens) + " tokens");
    const CostModel m = make("llama-3.1-70b", "h100", DType::kFp16, c.tp);
    StepShape s;
    for (int64_t i = 0; i < c.tokens; ++i) s.add(1, 100, true, false);
    const double per_op_us = m.step(s).comm_s / (2.0 * m.deployment().model.num_layers) * 1e6;
    EXPECT_NEAR(per_op_us / c.measured_us, 1.0, 0.25) << per_op_us << " µs";
  }
}

TEST(CostModel, ExpectedDistinctExperts) {
  const CostModel c = make("mixtral-8x7b", "h100");
  EXPECT_DOUBLE_EQ(c.expected_active_experts(1), 2.0);               // top-2
  EXPECT_DOUBLE_EQ(c.expected_active_experts(2), 8 * (1 - 0.5625));  // 1 - (6/8)^2
  EXPECT_NEAR(c.expected_active_experts(1000), 8.0, 1e-9);
  // A batch of one reads fewer weight bytes than a big batch that touches every expert.
  StepShape one, many;
  one.add(1, 0, true, true);
  many.add(512, 0, true, true);
  EXPECT_LT(c.step(one).weights_s, c.step(many).weights_s * 0.5);
}

TEST(CostModel, Fp8ChangesFlopRateOnlyWhereTheGpuHasIt) {
  StepShape big;
  big.add(4096, 0, true, true);
  const double a100_fp16 = make("llama-3.1-8b", "a100-80g").step(big).linear_s;
  const double a100_fp8 = make("llama-3.1-8b", "a100-80g", DType::kFp8).step(big).linear_s;
  const double h100_fp16 = make("llama-3.1-8b", "h100").step(big).linear_s;
  const double h100_fp8 = make("llama-3.1-8b", "h100", DType::kFp8).step(big).linear_s;
  EXPECT_DOUBLE_EQ(a100_fp8, a100_fp16);
  // Twice the rate on H100, at the W8A8 efficiency rather than the 16-bit one.
  const CostKnobs k;
  EXPECT_NEAR(h100_fp8, h100_fp16 / 2 * k.compute_efficiency / k.w8a8_compute_efficiency,
              h100_fp16 * 0.01);
}

TEST(CostModel, W8a8KnobsApplyOnlyToEightBitMathAndOnlyToWeights) {
  const CostModel a100_fp8 = make("llama-3.1-8b", "a100-80g", DType::kFp8);  // weight-only
  const CostModel a100_int8 = make("llama-3.1-8b", "a100-80g", DType::kInt8);
  const CostModel h100_fp8 = make("llama-3.1-8b", "h100", DType::kFp8);
  const CostModel h100_int4 = make("llama-3.1-8b", "h100", DType::kInt4);
  EXPECT_FALSE(a100_fp8.w8a8());
  EXPECT_TRUE(a100_int8.w8a8());
  EXPECT_TRUE(h100_fp8.w8a8());
  EXPECT_FALSE(h100_int4.w8a8());
  const CostKnobs k;
  EXPECT_DOUBLE_EQ(a100_fp8.weight_bandwidth_efficiency(), k.weight_stream_efficiency);
  EXPECT_DOUBLE_EQ(h100_fp8.weight_bandwidth_efficiency(), k.w8a8_bandwidth_efficiency);
  EXPECT_DOUBLE_EQ(h100_fp8.linear_compute_efficiency(), k.w8a8_compute_efficiency);
  // Decode: the FP8 weight stream is half the bytes at the W8A8 efficiency; the KV cache (16-bit
  // here) is read at the plain efficiency whatever the weight format.
  const CostModel h100_fp16 = make("llama-3.1-8b", "h100");
  StepShape one;
  one.add(1, 4000, true, false);
  const double gemms_s = static_cast<double>(h100_fp16.weight_gemms_per_step()) * k.gemm_latency_s;
  EXPECT_NEAR(h100_fp8.step(one).weights_s,
              (h100_fp16.step(one).weights_s - gemms_s) / 2 * k.weight_stream_efficiency /
                  k.w8a8_bandwidth_efficiency,
              1e-12);
  EXPECT_DOUBLE_EQ(h100_fp8.step(one).kv_s, h100_fp16.step(one).kv_s);
}

TEST(CostModel, EachWeightGemmAddsItsLatencyToTheSixteenBitStreamOnly) {
  // Llama-3.1-8B: 32 layers of fused QKV, output, gate+up and down, and the output head.
  const CostModel dense = make("llama-3.1-8b", "h200", DType::kBf16);
  EXPECT_EQ(dense.weight_gemms_per_step(), 32 * 4 + 1);
  // DeepSeek-V3: MLA's five projections on all 61 layers; 3 dense MLPs; 58 MoE layers of router,
  // routed pair and shared pair.
  const CostModel mla = make("deepseek-v3", "h200", DType::kBf16);
  EXPECT_EQ(mla.weight_gemms_per_step(), 61 * 5 + 3 * 2 + 58 * 5 + 1);
  const CostModel mixtral = make("mixtral-8x7b", "h100", DType::kBf16);
  EXPECT_EQ(mixtral.weight_gemms_per_step(), 32 * (2 + 3) + 1);

  StepShape one;
  one.add(1, 100, true, false);
  CostKnobs flat;
  flat.gemm_latency_s = 0;
  const CostModel no_latency(dense.deployment(), flat);
  const double added = dense.step(one).weights_s - no_latency.step(one).weights_s;
  EXPECT_NEAR(added, 129 * CostKnobs{}.gemm_latency_s, 1e-12);
  // The latency does not depend on the batch: a step of 64 decodes pays it once.
  StepShape many;
  for (int i = 0; i < 64; ++i) many.add(1, 100, true, false);
  EXPECT_NEAR(dense.step(many).weights_s - no_latency.step(many).weights_s, added, 1e-12);
  // W8A8 (FP8 on an H200): the measured 8-bit efficiency already carries it.
  const CostModel fp8 = make("llama-3.1-8b", "h200", DType::kFp8);
  const CostModel fp8_flat(fp8.deployment(), flat);
  EXPECT_DOUBLE_EQ(fp8.step(one).weights_s, fp8_flat.step(one).weights_s);
  // weight_stream_efficiency 0.8 and no latency is the flat stream of before.
  CostKnobs old = flat;
  old.weight_stream_efficiency = 0.8;
  const CostModel before(dense.deployment(), old);
  EXPECT_DOUBLE_EQ(before.weight_stream_s(4.8e9, 10), 4.8e9 / (4.8e12 * 0.8));
  EXPECT_DOUBLE_EQ(
      dense.weight_stream_s(4.8e9, 10),
      4.8e9 / (4.8e12 * CostKnobs{}.weight_stream_efficiency) + 10 * CostKnobs{}.gemm_latency_s);
}

TEST(CostModel, TheStackFactorSlowsOnlyTheLinearLayersCompute) {
  GpuSpec full = find_gpu("mi300x").value();
  full.matmul_stack_factor = 1.0;
  const ModelShape m = find_model("llama-3.1-8b").value();
  const CostModel rocm(Deployment{m, find_gpu("mi300x").value(), DType::kBf16, DType::kBf16, 1},
                       CostKnobs{});
  const CostModel peak(Deployment{m, full, DType::kBf16, DType::kBf16, 1}, CostKnobs{});
  EXPECT_DOUBLE_EQ(rocm.linear_compute_efficiency(),
                   CostKnobs{}.compute_efficiency * rocm.deployment().gpu.matmul_stack_factor);
  StepShape prefill, decode;
  prefill.add(4096, 0, true, true);
  decode.add(1, 2000, true, false);
  EXPECT_NEAR(rocm.step(prefill).linear_s * 0.615, peak.step(prefill).linear_s, 1e-12);
  EXPECT_DOUBLE_EQ(rocm.step(prefill).attention_s, peak.step(prefill).attention_s);
  // Decode at batch 1 streams the weights: bandwidth-bound, unchanged.
  EXPECT_DOUBLE_EQ(rocm.step(decode).weights_s, peak.step(decode).weights_s);
  EXPECT_DOUBLE_EQ(rocm.prefill_bound_s(1000), peak.prefill_bound_s(1000));  // datasheet bound
}

TEST(CostModel, StepTimeGrowsWithPromptAndBatch) {
  const CostModel c = make("llama-3.1-8b", "a100-80g");
  StepShape p512, p4096;
  p512.add(512, 0, true, true);
  p4096.add(4096, 0, true, true);
  EXPECT_GT(c.step_time_s(p4096), 4 * c.step_time_s(p512));  // compute-bound: ~linear
  StepShape b1, b64;
  b1.add(1, 1000, true, false);
  for (int i = 0; i < 64; ++i) b64.add(1, 1000, true, false);
  // Decode at batch 64 costs more per step (KV reads), but far less than 64x (weights shared).
  EXPECT_GT(c.step_time_s(b64), c.step_time_s(b1));
  EXPECT_LT(c.step_time_s(b64), 4 * c.step_time_s(b1));
}

// CUDA graphs (knob cuda_graph_max_batch): a decode-only batch up to the capture limit costs its
// GPU time; a larger one, a step with a prompt chunk, or every step with graphs off, costs at least
// the host's eager launch time, one measured layer cost per layer.
TEST(CostModel, EagerStepsCostAtLeastTheHostLaunchTime) {
  CostKnobs k;
  const Deployment d{find_model("llama-3.1-8b").value(), find_gpu("h100").value(), DType::kBf16,
                     DType::kBf16, 1};
  StepShape decode8, decode64, prefill;
  for (int i = 0; i < 8; ++i) decode8.add(1, 1000, true, false);
  for (int i = 0; i < 64; ++i) decode64.add(1, 1000, true, false);
  prefill.add(16, 0, true, true);
  const CostModel graphs_everywhere(d, k);  // the default: not modelled
  k.cuda_graph_max_batch = 32;
  const CostModel capped(d, k);
  k.cuda_graph_max_batch = 0;
  const CostModel eager(d, k);
  const double host = 32 * k.eager_layer_host_s;  // 32 layers
  for (const StepShape* s : {&decode8, &decode64, &prefill}) {
    EXPECT_FALSE(graphs_everywhere.runs_eager(*s));
    EXPECT_EQ(graphs_everywhere.step(*s).eager_host_s, 0);
    EXPECT_TRUE(eager.runs_eager(*s));
    EXPECT_DOUBLE_EQ(eager.step(*s).eager_host_s, host);
    EXPECT_GE(eager.step_time_s(*s), host);
    EXPECT_GE(eager.step_time_s(*s), graphs_everywhere.step_time_s(*s));
  }
  EXPECT_FALSE(capped.runs_eager(decode8));
  EXPECT_DOUBLE_EQ(capped.step_time_s(decode8), graphs_everywhere.step_time_s(decode8));
  EXPECT_TRUE(capped.runs_eager(decode64));  // above the largest captured batch
  EXPECT_TRUE(capped.runs_eager(prefill));   // extend steps are never captured
  // A small decode batch is host-bound when eager: 8B at batch 8 is ~4 ms of GPU time on an H100,
  // its 32 eager layers ~19 ms of launches.
  EXPECT_LT(graphs_everywhere.step_time_s(decode8), host);
  EXPECT_NEAR(eager.step_time_s(decode8), host + eager.step(decode8).overhead_s, 1e-12);
  // Data-parallel attention: the limit is per rank.
  const Deployment dsv3{find_model("deepseek-v3").value(),
                        find_gpu("h200").value(),
                        DType::kFp8,
                        DType::kFp8,
                        8,
                        true};
  k.cuda_graph_max_batch = 160;
  const CostModel dp(dsv3, k);
  StepShape per_rank_160, per_rank_161;
  for (int i = 0; i < 8 * 160; ++i) per_rank_160.add(1, 2000, true, false);
  for (int i = 0; i < 8 * 160 + 1; ++i) per_rank_161.add(1, 2000, true, false);
  EXPECT_FALSE(dp.runs_eager(per_rank_160));
  EXPECT_TRUE(dp.runs_eager(per_rank_161));
}

// vLLM's profiling pass (knobs profile_tokens / profile_seqs): four hidden-sized buffers and the
// MLP's gate+up and activated outputs for every token, the sampler's float32 logits and
// probabilities for every sequence; a fused MoE layer counts top-k copies of at most 32,768 tokens.
TEST(CostModel, ProfiledReserveFollowsThePassShape) {
  CostKnobs k;
  k.profile_tokens = 29000;
  k.profile_seqs = 256;
  const Deployment d{find_model("llama-3.1-8b").value(), find_gpu("h100").value(), DType::kBf16,
                     DType::kBf16, 1};
  const CostModel c(d, k);
  const double expected = 4.0 * 29000 * 4096 * 2 + 3.0 * 29000 * 14336 * 2 + 256.0 * 128256 * 4 * 2;
  EXPECT_DOUBLE_EQ(c.profile_activation_bytes(), expected);
  EXPECT_DOUBLE_EQ(c.kv_budget_bytes_per_gpu(), k.gpu_memory_utilization * d.gpu.memory_bytes -
                                                    c.weight_bytes_per_gpu() -
                                                    k.profile_overhead_bytes - expected);
  // Without a shape: the constant reserve.
  EXPECT_EQ(CostModel(d, CostKnobs{}).profile_activation_bytes(), 0);
  // Tensor parallelism splits the MLP's outputs, not the hidden-sized buffers.
  const Deployment d2{d.model, d.gpu, DType::kBf16, DType::kBf16, 2};
  EXPECT_DOUBLE_EQ(CostModel(d2, k).profile_activation_bytes(),
                   expected - 3.0 * 29000 * 14336 * 2 / 2);
  // MoE: the fused experts' caches for top-8 copies of a 32,768-token chunk dominate.
  k.profile_tokens = 65536;
  k.profile_seqs = 0;
  const Deployment moe{find_model("deepseek-v3").value(), find_gpu("h200").value(), DType::kFp8,
                       DType::kFp8, 8};
  const double h = 7168, rows = 32768.0 * 8;
  EXPECT_DOUBLE_EQ(CostModel(moe, k).profile_activation_bytes(),
                   4 * 65536 * h * 2 + rows * (3 * 2048 / 8.0 + h) * 2);
}

TEST(CostModel, StepShapeCountsCausalPairs) {
  StepShape s;
  s.add(4, 10, true, true);  // 4 new tokens after 10 cached: 4*10 + (1+2+3+4)
  EXPECT_DOUBLE_EQ(s.attention_pairs, 50);
  EXPECT_DOUBLE_EQ(s.kv_tokens_read, 14);
  EXPECT_EQ(s.new_tokens, 4);
}

// Data-parallel attention (SGLang --enable-dp-attention): the attention weights are whole on every
// rank, each rank caches only its own requests (capacity adds up over the ranks) and reads a 1/tp
// share of a batch's KV; attention FLOPs per GPU are unchanged.
// The KV size an engine logged (--kv-cache-tokens) replaces the one computed from memory and
// nothing else; per rank under data-parallel attention; a logged size says the weights fitted.
TEST(CostModel, TheEnginesOwnKvSizeReplacesTheComputedOne) {
  Deployment d{find_model("llama-2-7b").value(), find_gpu("a100-80g").value(), DType::kFp16,
               DType::kFp16, 1};
  CostKnobs k;
  const CostModel computed(d, k);
  k.kv_cache_tokens = 12'345;
  const CostModel given(d, k);
  EXPECT_EQ(given.kv_capacity_tokens(), 12'345);
  EXPECT_EQ(given.kv_capacity_tokens_from_memory(), computed.kv_capacity_tokens());
  EXPECT_DOUBLE_EQ(given.kv_budget_bytes_per_gpu(), computed.kv_budget_bytes_per_gpu());
  StepShape s;
  s.add(512, 0, true, true);
  EXPECT_DOUBLE_EQ(given.step_time_s(s), computed.step_time_s(s));
  Deployment big{find_model("llama-3.1-70b").value(), find_gpu("a100-80g").value(), DType::kFp16,
                 DType::kFp16, 1};
  EXPECT_FALSE(CostModel(big, CostKnobs{}).fits());
  EXPECT_TRUE(CostModel(big, k).fits());
  Deployment ds{find_model("deepseek-v3").value(), find_gpu("h200").value(), DType::kFp8,
                DType::kFp8, 8};
  k.dp_attention = true;
  EXPECT_EQ(CostModel(ds, k).kv_capacity_tokens(), 8 * 12'345);
}

TEST(CostModel, DataParallelAttentionTradesWeightMemoryForKvCapacity) {
  Deployment d{find_model("deepseek-v3").value(), find_gpu("h200").value(), DType::kFp8,
               DType::kFp8, 8};
  CostKnobs k;
  const CostModel tp(d, k);
  k.dp_attention = true;
  const CostModel dp(d, k);
  const double attn_bytes = tp.params().attention;  // FP8: one byte per weight
  EXPECT_GT(attn_bytes, 0);
  EXPECT_NEAR(dp.weight_bytes_per_gpu() - tp.weight_bytes_per_gpu(), attn_bytes * 7 / 8, 1e3);
  const double per_token = tp.kv_bytes_per_token_per_gpu();  // MLA: the latent, whole
  EXPECT_DOUBLE_EQ(dp.kv_bytes_per_token_per_gpu(), per_token);
  EXPECT_NEAR(static_cast<double>(dp.kv_capacity_tokens()),
              8 * dp.kv_budget_bytes_per_gpu() / per_token, 8);
  // Less than 8x: the whole attention weights take ~9.6 GB of each rank's KV budget.
  EXPECT_GT(dp.kv_capacity_tokens(), 6 * tp.kv_capacity_tokens());
  EXPECT_LT(dp.kv_capacity_tokens(), 8 * tp.kv_capacity_tokens());
  StepShape s;
  for (int i = 0; i < 64; ++i) s.add(1, 4000, true, false);
  const StepBreakdown a = tp.step(s), b = dp.step(s);
  EXPECT_NEAR(b.kv_s, a.kv_s / 8, 1e-12);
  EXPECT_DOUBLE_EQ(b.attention_s, a.attention_s);
  EXPECT_GT(b.weights_s, a.weights_s);
  // One GPU: nothing to split, so the knob changes nothing.
  Deployment small{find_model("mixtral-8x7b").value(), find_gpu("h200").value(), DType::kBf16,
                   DType::kBf16, 1};
  EXPECT_EQ(CostModel(small, k).kv_capacity_tokens(),
            CostModel(small, CostKnobs{}).kv_capacity_tokens());
}

TEST(CostModel, HostCpuFactorScalesEveryHostSideTimeAndNothingOnTheGpu) {
  const Deployment d{find_model("llama-3.1-8b").value(), find_gpu("h100").value(), DType::kBf16,
                     DType::kBf16, 1};
  CostKnobs k;
  k.request_overhead_s = 5e-3;
  k.request_overhead_per_token_s = 1e-6;
  k.request_latency_s = 30e-3;
  k.output_overhead_s = 100e-6;
  k.cuda_graph_max_batch = 0;  // every step eager: the launch time is the host's too
  const CostModel as_fitted(d, k);
  k.host_cpu_factor = 2.5;
  const CostModel slow(d, k);
  const CostKnobs& a = as_fitted.knobs();
  const CostKnobs& b = slow.knobs();
  EXPECT_DOUBLE_EQ(b.step_overhead_s, 2.5 * a.step_overhead_s);
  EXPECT_DOUBLE_EQ(b.per_seq_overhead_s, 2.5 * a.per_seq_overhead_s);
  EXPECT_DOUBLE_EQ(b.eager_layer_host_s, 2.5 * a.eager_layer_host_s);
  EXPECT_DOUBLE_EQ(b.request_overhead_s, 12.5e-3);
  EXPECT_DOUBLE_EQ(b.request_overhead_per_token_s, 2.5e-6);
  EXPECT_DOUBLE_EQ(b.request_latency_s, 75e-3);
  EXPECT_DOUBLE_EQ(b.output_overhead_s, 250e-6);
  EXPECT_DOUBLE_EQ(b.host_cpu_factor, 1);  // applied once: knobs() are the times this host pays
  // The GPU's side of a step is unchanged; only its host parts grow.
  StepShape decode;
  for (int i = 0; i < 16; ++i) decode.add(1, 1000, true, false);
  EXPECT_DOUBLE_EQ(slow.step(decode).weights_s, as_fitted.step(decode).weights_s);
  EXPECT_DOUBLE_EQ(slow.step(decode).kv_s, as_fitted.step(decode).kv_s);
  EXPECT_DOUBLE_EQ(slow.step(decode).overhead_s, 2.5 * as_fitted.step(decode).overhead_s);
  EXPECT_DOUBLE_EQ(slow.step(decode).eager_host_s, 2.5 * as_fitted.step(decode).eager_host_s);
  // A model built from its own knobs() does not apply the factor twice.
  EXPECT_DOUBLE_EQ(CostModel(d, b).knobs().request_overhead_s, 12.5e-3);
}

}  // namespace
}  // namespace tokperf::sim
