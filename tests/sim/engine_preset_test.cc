#include "sim/engine_preset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "sim/calibration.h"
#include "sim/deployment.h"
#include "sim/gpu_catalog.h"

namespace tokperf::sim {
namespace {

TEST(EnginePreset, EveryNamedPresetIsFoundAndUnknownOnesListTheAccepted) {
  for (const char* name :
       {"vllm", "vllm-0.13", "vllm-v0", "vllm-v0.6", "sglang", "sglang-0.4", "trtllm", "nim"}) {
    auto p = find_engine_preset(name);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ(p->name, name);
    EXPECT_FALSE(p->description.empty());
  }
  auto bad = find_engine_preset("tgi");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("'tgi'"), std::string::npos);
  EXPECT_NE(bad.error().find("vllm, vllm-0.13, vllm-v0, vllm-v0.6, sglang, sglang-0.4, trtllm, nim"),
            std::string::npos);
}

// The vllm preset is the default knobs and config but for the V1 engine's own costs, fitted on its
// calibration points (step overhead, the front end's serial cost and its latency).
TEST(EnginePreset, VllmIsTheDefaultKnobsAndConfigWithV1sFittedCosts) {
  const EnginePreset p = find_engine_preset("vllm").value();
  const CostKnobs k;
  EXPECT_EQ(p.knobs.step_overhead_s, 0.735e-3);
  EXPECT_EQ(p.knobs.request_overhead_s, 5.52e-3);
  EXPECT_EQ(p.knobs.request_latency_s, 30.3e-3);
  EXPECT_EQ(k.request_latency_s, 0);
  EXPECT_EQ(p.knobs.compute_efficiency, k.compute_efficiency);
  EXPECT_EQ(p.knobs.bandwidth_efficiency, k.bandwidth_efficiency);
  EXPECT_EQ(p.knobs.gpu_memory_utilization, k.gpu_memory_utilization);
  // The presets derived from it start from the knobs before that fit.
  EXPECT_EQ(find_engine_preset("sglang").value().knobs.request_latency_s, 0);
  // SGLang's own: its admission, and the 16-bit GEMM rate fitted on its 0.4.0 dense points.
  EXPECT_TRUE(find_engine_preset("sglang").value().config.sglang_admission);
  EXPECT_FALSE(p.config.sglang_admission);
  EXPECT_EQ(find_engine_preset("sglang").value().knobs.compute_efficiency, 0.525);
  EXPECT_EQ(find_engine_preset("vllm-v0").value().knobs.request_latency_s, 0);
  EXPECT_EQ(p.config.max_num_seqs, EngineConfig{}.max_num_seqs);
  EXPECT_FALSE(p.config.reserve_max_tokens);
}

// vLLM V1's EngineArgs.get_batch_defaults, OpenAI server: 8192 tokens / 1024 sequences on a GPU
// with >= 70 GiB whose name is not an A100's, 2048 / 256 on every other GPU.
TEST(EnginePreset, VllmTakesItsBatchLimitsFromTheGpuAsVllmV1Does) {
  const EnginePreset vllm = find_engine_preset("vllm").value();
  for (const char* id : {"h100", "h200", "mi300x"}) {
    const EngineConfig c = vllm.for_gpu(find_gpu(id).value(), 1).config;
    EXPECT_EQ(c.max_num_batched_tokens, 8192) << id;
    EXPECT_EQ(c.max_num_seqs, 1024) << id;
  }
  for (const char* id : {"a100-80g", "a100-40g", "l40s", "rtx4090", "l4"}) {
    const EngineConfig c = vllm.for_gpu(find_gpu(id).value(), 1).config;
    EXPECT_EQ(c.max_num_batched_tokens, 2048) << id;
    EXPECT_EQ(c.max_num_seqs, 256) << id;
  }
  // A user's spec: the memory and the name decide, as in vLLM (torch's device name).
  auto big = gpu_from_json_text(
      R"({"id": "x", "name": "NVIDIA A100-SXM4-80GB", "memory_gib": 80,
          "memory_bandwidth_gb_s": 2039, "tflops": {"bf16": 312}})",
      "test");
  ASSERT_TRUE(big.ok()) << big.error();
  EXPECT_EQ(vllm.for_gpu(*big, 1).config.max_num_batched_tokens, 2048);
  big->name = "NVIDIA H20";
  EXPECT_EQ(vllm.for_gpu(*big, 1).config.max_num_batched_tokens, 8192);
  big->memory_bytes = 69.0 * 1024 * 1024 * 1024;
  EXPECT_EQ(vllm.for_gpu(*big, 1).config.max_num_batched_tokens, 2048);
  // The other presets keep their own limits on any GPU.
  // SGLang's KV pool is its memory fraction less the weights, with no reserve besides.
  EXPECT_EQ(find_engine_preset("sglang").value().knobs.activation_reserve_bytes, 0);
  for (const char* name : {"vllm-v0", "vllm-v0.6", "sglang", "trtllm", "nim"}) {
    const EnginePreset p = find_engine_preset(name).value();
    const EnginePreset on = find_engine_preset(name, find_gpu("rtx4090").value(), 1).value();
    EXPECT_EQ(on.config.max_num_batched_tokens, p.config.max_num_batched_tokens) << name;
    EXPECT_EQ(on.config.max_num_seqs, p.config.max_num_seqs) << name;
  }
  EXPECT_FALSE(find_engine_preset("tgi", find_gpu("h100").value(), 1).ok());
}

// vLLM 0.6.0 with --num-scheduler-steps 10 is vLLM 0.5.4's engine with the per-step CPU work
// spread over the scheduler steps: the same deployment decodes faster by exactly the difference in
// step overhead, and nothing else differs (no chunked prefill in either; 0.6.0's multi-step did not
// combine with it).
TEST(EnginePreset, VllmV06IsVllmV0WithLessCpuTimePerStep) {
  const EnginePreset v0 = find_engine_preset("vllm-v0").value();
  const EnginePreset v06 = find_engine_preset("vllm-v0.6").value();
  EXPECT_LT(v06.knobs.step_overhead_s, v0.knobs.step_overhead_s);
  EXPECT_FALSE(v0.config.enable_chunked_prefill);
  EXPECT_FALSE(v06.config.enable_chunked_prefill);
  EXPECT_EQ(v06.config.max_num_seqs, v0.config.max_num_seqs);
  EXPECT_EQ(v06.knobs.request_overhead_s, v0.knobs.request_overhead_s);
  EXPECT_EQ(v06.knobs.cold_start_s, v0.knobs.cold_start_s);
  EXPECT_EQ(v06.knobs.bandwidth_efficiency, v0.knobs.bandwidth_efficiency);
  EXPECT_EQ(v06.knobs.w8a8_compute_efficiency, v0.knobs.w8a8_compute_efficiency);

  const Deployment d{find_model("llama-3.1-8b").value(), find_gpu("h100").value(), DType::kBf16,
                     DType::kBf16, 1};
  const CostModel old_loop(d, v0.knobs), multi_step(d, v06.knobs);
  StepShape decode;
  for (int i = 0; i < 8; ++i) decode.add(1, 500, true, false);
  EXPECT_NEAR(old_loop.step_time_s(decode) - multi_step.step_time_s(decode),
              v0.knobs.step_overhead_s - v06.knobs.step_overhead_s, 1e-9);
  StepShape prefill;
  prefill.add(1000, 0, true, true);
  EXPECT_NEAR(old_loop.step_time_s(prefill) - multi_step.step_time_s(prefill),
              v0.knobs.step_overhead_s - v06.knobs.step_overhead_s, 1e-9);
}

// SGLang 0.4.x is the sglang preset (same memory, admission, unmixed batches) with a cost per
// running request per step: a decode step of 200 requests takes 200 x that longer, one of 1 request
// barely longer.
TEST(EnginePreset, Sglang04IsSglangWithACostPerRunningRequest) {
  const EnginePreset now = find_engine_preset("sglang").value();
  const EnginePreset v04 = find_engine_preset("sglang-0.4").value();
  EXPECT_GT(v04.knobs.per_seq_overhead_s, now.knobs.per_seq_overhead_s);
  EXPECT_EQ(v04.knobs.gpu_memory_utilization, now.knobs.gpu_memory_utilization);
  EXPECT_EQ(v04.config.mixed_batches, now.config.mixed_batches);
  EXPECT_EQ(v04.config.sglang_admission, now.config.sglang_admission);
  EXPECT_EQ(v04.config.max_num_seqs, now.config.max_num_seqs);

  const Deployment d{find_model("llama-3.1-70b").value(), find_gpu("h200").value(), DType::kBf16,
                     DType::kBf16, 4};
  // Its slower KV reads (the twenty-seventh change) have their own test below: equal here.
  CostKnobs same_kv = now.knobs;
  same_kv.kv_read_factor = v04.knobs.kv_read_factor;
  const CostModel later(d, same_kv), early(d, v04.knobs);
  StepShape big, one;
  for (int i = 0; i < 200; ++i) big.add(1, 700, true, false);
  one.add(1, 700, true, false);
  const double per_seq = v04.knobs.per_seq_overhead_s - now.knobs.per_seq_overhead_s;
  EXPECT_NEAR(early.step_time_s(big) - later.step_time_s(big), 200 * per_seq, 1e-9);
  EXPECT_NEAR(early.step_time_s(one) - later.step_time_s(one), per_seq, 1e-9);
}

// SGLang 0.4.x pays its own, larger cost per MoE layer per step and runs its routed experts
// slower (fitted on its DeepSeek-V3 calibration points, docs/SIMULATOR.md "Fifteenth change" and
// "Sixteenth change"): a DeepSeek-V3 decode step (bound by its weight reads) is longer by 58 layers
// x the difference, a prefill by more; a dense model's step does not change.
TEST(EnginePreset, Sglang04PaysItsOwnMoeCostsAndDenseModelsDoNot) {
  const EnginePreset now = find_engine_preset("sglang").value();
  const EnginePreset v04 = find_engine_preset("sglang-0.4").value();
  const double per_layer = v04.knobs.moe_layer_overhead_s - now.knobs.moe_layer_overhead_s;
  EXPECT_GT(per_layer, 0);
  // Its routed experts' GEMMs also run at a lower share of the dense rate (the sixteenth change).
  EXPECT_LT(v04.knobs.moe_expert_compute_factor, now.knobs.moe_expert_compute_factor);

  const Deployment moe{find_model("deepseek-v3").value(), find_gpu("h200").value(), DType::kFp8,
                       DType::kFp8, 8};
  ASSERT_EQ(moe.model.num_moe_layers(), 58);
  // The per-running-request cost differs too (the tenth change); take it out per batch. The KV
  // reads (the twenty-seventh change) are made equal.
  const double per_seq = v04.knobs.per_seq_overhead_s - now.knobs.per_seq_overhead_s;
  CostKnobs same_kv = now.knobs;
  same_kv.kv_read_factor = v04.knobs.kv_read_factor;
  for (int batch : {1, 64}) {
    StepShape decode;
    for (int i = 0; i < batch; ++i) decode.add(1, 2000, true, false);
    const double longer =
        CostModel(moe, v04.knobs).step_time_s(decode) - CostModel(moe, same_kv).step_time_s(decode);
    EXPECT_NEAR(longer, 58 * per_layer + batch * per_seq, 1e-9) << batch;
  }
  // A prefill is bound by its GEMMs, the routed ones slower still: longer by more than the fixed
  // costs alone.
  StepShape prefill;
  prefill.add(4096, 0, true, true);
  EXPECT_GT(
      CostModel(moe, v04.knobs).step_time_s(prefill) - CostModel(moe, same_kv).step_time_s(prefill),
      58 * per_layer + per_seq + 1e-3);
  const Deployment dense{find_model("llama-3.1-70b").value(), find_gpu("h200").value(),
                         DType::kBf16, DType::kBf16, 4};
  StepShape one;
  one.add(1, 700, true, false);
  EXPECT_NEAR(
      CostModel(dense, v04.knobs).step_time_s(one) - CostModel(dense, same_kv).step_time_s(one),
      per_seq, 1e-9);
}

// SGLang 0.4.x's decode attention reads the KV cache at 0.25 of the rate the model gives the
// other presets (fitted on its dense calibration TPOTs, docs/SIMULATOR.md "Twenty-seventh
// change"): the KV part of a step takes 4x as long on an H200, the weight reads do not change,
// and a long-context decode step grows while a short-context one barely does.
TEST(EnginePreset, Sglang04ReadsTheKvCacheAtAQuarterOfTheRate) {
  const EnginePreset now = find_engine_preset("sglang").value();
  const EnginePreset v04 = find_engine_preset("sglang-0.4").value();
  EXPECT_EQ(v04.knobs.kv_read_factor, 0.25);
  EXPECT_EQ(now.knobs.kv_read_factor, 0);  // the GPU's own (1 on an H200)
  const Deployment d{find_model("llama-3.1-70b").value(), find_gpu("h200").value(), DType::kBf16,
                     DType::kBf16, 4};
  const CostModel later(d, now.knobs), early(d, v04.knobs);
  StepShape long_ctx, short_ctx;
  for (int i = 0; i < 300; ++i) long_ctx.add(1, 3000, true, false);
  for (int i = 0; i < 300; ++i) short_ctx.add(1, 100, true, false);
  EXPECT_NEAR(early.step(long_ctx).kv_s / later.step(long_ctx).kv_s, 4.0, 1e-9);
  EXPECT_EQ(early.step(long_ctx).weights_s, later.step(long_ctx).weights_s);
  const double long_growth = early.step_time_s(long_ctx) / later.step_time_s(long_ctx);
  const double short_growth = early.step_time_s(short_ctx) / later.step_time_s(short_ctx);
  EXPECT_GT(long_growth, 1.5);
  EXPECT_LT(short_growth, long_growth);
}

// The per-token front-end cost is vLLM V1's only (fitted in the "Eleventh change", measured from
// one host's token arrivals since the "Thirtieth"); the other presets leave it out rather than
// borrow it.
TEST(EnginePreset, OnlyVllmV1PassesEachStreamedTokenThroughItsFrontEnd) {
  for (const EnginePreset& p : engine_presets()) {
    if (p.name == "vllm" || p.name == "vllm-0.13") continue;
    EXPECT_EQ(p.knobs.output_overhead_s, 0) << p.name;
  }
  EXPECT_NEAR(find_engine_preset("vllm").value().knobs.output_overhead_s, 68.3e-6, 1e-12);
  EXPECT_NEAR(find_engine_preset("vllm-0.13").value().knobs.output_overhead_s, 68.3e-6, 1e-12);
}

// vLLM 0.14 turned async scheduling on by default ("Thirty-second change"): the vllm preset forms
// the next step's batch while the current one runs; vllm-0.13 is the same V1 engine without it.
TEST(EnginePreset, VllmSchedulesAsyncFrom014AndVllm013IsTheSameEngineWithout) {
  const EnginePreset now = find_engine_preset("vllm").value();
  const EnginePreset before = find_engine_preset("vllm-0.13").value();
  EXPECT_TRUE(now.config.overlap_schedule);
  EXPECT_FALSE(before.config.overlap_schedule);
  EXPECT_NE(now.description.find("async scheduling"), std::string::npos);
  EXPECT_NE(before.description.find("0.13"), std::string::npos);
  // Nothing else differs.
  EXPECT_EQ(now.knobs.step_overhead_s, before.knobs.step_overhead_s);
  EXPECT_EQ(now.knobs.request_overhead_s, before.knobs.request_overhead_s);
  EXPECT_EQ(now.knobs.request_latency_s, before.knobs.request_latency_s);
  EXPECT_EQ(now.config.max_num_seqs, before.config.max_num_seqs);
  EXPECT_EQ(now.device_batch_defaults, before.device_batch_defaults);
  EXPECT_EQ(now.profiled_memory, before.profiled_memory);
  for (const EnginePreset& p : engine_presets()) {
    if (p.name != "vllm") EXPECT_FALSE(p.config.overlap_schedule) << p.name;
  }
}

// vLLM V1's cost per scheduled sequence, read off 8xH100 decode steps (docs/SIMULATOR.md,
// "Thirty-third change"): both V1 presets carry it, the older engines keep their own, and sim
// calibrate fits it by default, since a user's host need not share it.
TEST(EnginePreset, TheV1PresetsCost25UsASequenceAndCalibrationFitsIt) {
  for (const char* name : {"vllm", "vllm-0.13"}) {
    EXPECT_DOUBLE_EQ(find_engine_preset(name).value().knobs.per_seq_overhead_s, 25e-6) << name;
  }
  EXPECT_DOUBLE_EQ(find_engine_preset("vllm-v0").value().knobs.per_seq_overhead_s, 5e-6);
  EXPECT_DOUBLE_EQ(find_engine_preset("sglang").value().knobs.per_seq_overhead_s, 5e-6);
  for (bool w8a8 : {false, true}) {
    const std::vector<std::string> knobs = default_calibration_knobs(w8a8);
    EXPECT_NE(std::find(knobs.begin(), knobs.end(), "per_seq_overhead_s"), knobs.end());
  }
}

TEST(EnginePreset, NimStoresFp8KvForFp8WeightsWhereVllmKeeps16Bit) {
  DeploymentFlags f;
  f.model = "llama-3.1-70b";
  f.gpu = "h100";
  f.dtype = "fp8";
  f.tp = 2;
  f.engine = "vllm";
  EXPECT_EQ(resolve_deployment(f).value().kv_dtype, DType::kFp16);
  f.engine = "nim";
  EXPECT_EQ(resolve_deployment(f).value().kv_dtype, DType::kFp8);
  f.kv_dtype = "bf16";  // an explicit --kv-dtype wins
  EXPECT_EQ(resolve_deployment(f).value().kv_dtype, DType::kBf16);
  f.kv_dtype = "auto";
  f.gpu = "a100-80g";  // no FP8 math: NIM's FP8 KV profile does not apply
  EXPECT_EQ(resolve_deployment(f).value().kv_dtype, DType::kFp16);
  f.engine = "tgi";
  auto bad = resolve_deployment(f);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--engine"), std::string::npos);
}

// --max-model-len is the context the engine serves: it replaces the model's
// max_position_embeddings, so vLLM V0's budget max(max_model_len, 2048) follows it (the Lambda
// validation runs served 2,000 and 2,048 tokens of Llama-3.1's 131,072); above the model's own it
// is refused, as vLLM and SGLang refuse it.
TEST(EnginePreset, MaxModelLenReplacesTheModelsContext) {
  DeploymentFlags f;
  f.model = "llama-3.1-8b";
  f.gpu = "h100";
  f.engine = "vllm-v0";
  const EngineConfig v0 = find_engine_preset("vllm-v0").value().config;
  EXPECT_EQ(step_token_budget(v0, resolve_deployment(f).value().model), 131072);
  f.max_model_len = 2000;
  const Deployment served = resolve_deployment(f).value();
  EXPECT_EQ(served.model.max_context, 2000);
  EXPECT_EQ(step_token_budget(v0, served.model), 2048);
  f.max_model_len = 40000;
  EXPECT_EQ(step_token_budget(v0, resolve_deployment(f).value().model), 40000);
  f.max_model_len = 131073;
  auto above = resolve_deployment(f);
  ASSERT_FALSE(above.ok());
  EXPECT_NE(above.error().find("--max-model-len 131073"), std::string::npos) << above.error();
  EXPECT_NE(above.error().find("accepted: 1 to 131072"), std::string::npos) << above.error();
  f.max_model_len = -1;
  auto negative = resolve_deployment(f);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().find("positive"), std::string::npos) << negative.error();
}

TEST(EnginePreset, TrtllmSizesKvFromTheMemoryLeftAfterWeights) {
  const Deployment d{find_model("llama-3.1-8b").value(), find_gpu("h100").value(), DType::kBf16,
                     DType::kBf16, 1};
  const CostModel vllm(d, find_engine_preset("vllm").value().knobs);
  const CostModel trt(d, find_engine_preset("trtllm").value().knobs);
  const CostKnobs& k = trt.knobs();
  EXPECT_NEAR(trt.kv_budget_bytes_per_gpu(),
              k.gpu_memory_utilization *
                  (d.gpu.memory_bytes - trt.weight_bytes_per_gpu() - k.activation_reserve_bytes),
              1.0);
  EXPECT_NE(trt.kv_budget_bytes_per_gpu(), vllm.kv_budget_bytes_per_gpu());
  EXPECT_TRUE(find_engine_preset("trtllm").value().config.reserve_max_tokens);
}

// vLLM V1 sizes its KV cache after profiling its own batch limits, so the vllm preset's reserve
// follows them (the device defaults, then any --max-num-batched-tokens / --max-num-seqs); the
// other presets keep the constant reserve.
TEST(EnginePreset, VllmProfilesItsBatchLimitsTheOthersKeepTheConstant) {
  const EnginePreset h100 = find_engine_preset("vllm", find_gpu("h100").value(), 1).value();
  EXPECT_EQ(h100.knobs.profile_tokens, 8192);
  EXPECT_EQ(h100.knobs.profile_seqs, 1024);
  const EnginePreset a100 = find_engine_preset("vllm", find_gpu("a100-80g").value(), 1).value();
  EXPECT_EQ(a100.knobs.profile_tokens, 2048);
  EXPECT_EQ(a100.knobs.profile_seqs, 256);
  EngineConfig flags = h100.config;
  flags.max_num_batched_tokens = 16384;
  EXPECT_EQ(knobs_for_engine(h100, h100.knobs, flags).profile_tokens, 16384);
  // SGLang's KV pool is its memory fraction less the weights, with no reserve besides.
  EXPECT_EQ(find_engine_preset("sglang").value().knobs.activation_reserve_bytes, 0);
  for (const char* name : {"vllm-v0", "vllm-v0.6", "sglang", "trtllm", "nim"}) {
    const EnginePreset p = find_engine_preset(name, find_gpu("h100").value(), 1).value();
    EXPECT_EQ(p.knobs.profile_tokens, 0) << name;
    EXPECT_EQ(knobs_for_engine(p, p.knobs, flags).profile_tokens, 0) << name;
  }
}

// SGLang 0.4.x's mem_fraction_static follows the tensor-parallel size when it is not given
// (server_args.py); sglang (0.5.x) keeps 0.88 and vllm 0.9 at every size. The KV pool shrinks
// with it: Llama-3.3-70B in BF16 on 4 H200s holds fewer tokens at 0.85 than at 0.88.
TEST(EnginePreset, Sglang04TakesItsMemoryFractionFromTheTensorParallelSize) {
  const GpuSpec h200 = find_gpu("h200").value();
  const std::pair<int, double> table[] = {{1, 0.88}, {2, 0.87},  {3, 0.87}, {4, 0.85},
                                          {8, 0.81}, {16, 0.79}, {32, 0.79}};
  for (const auto& [tp, fraction] : table) {
    EXPECT_EQ(find_engine_preset("sglang-0.4", h200, tp).value().knobs.gpu_memory_utilization,
              fraction)
        << "tp " << tp;
    EXPECT_EQ(find_engine_preset("sglang", h200, tp).value().knobs.gpu_memory_utilization, 0.88);
    EXPECT_EQ(find_engine_preset("vllm", h200, tp).value().knobs.gpu_memory_utilization, 0.9);
  }
  const Deployment d{find_model("llama-3.1-70b").value(), h200, DType::kBf16, DType::kBf16, 4};
  const CostModel at_tp4(d, find_engine_preset("sglang-0.4", h200, 4).value().knobs);
  const CostModel at_088(d, find_engine_preset("sglang", h200, 4).value().knobs);
  EXPECT_LT(at_tp4.kv_capacity_tokens(), at_088.kv_capacity_tokens());
}

}  // namespace
// --knob NAME=VALUE on sim run/serve and estimate: the preset as found, with the named knobs
// replaced; names, values and the NAME=NUMBER form are checked and errors say what is accepted.
TEST(EnginePreset, KnobFlagsReplaceThePresetsValuesAndRefuseWhatTheyCannotTake) {
  const GpuSpec h100 = find_gpu("h100").value();
  DeploymentFlags f;
  f.engine = "sglang";
  const EnginePreset shipped = engine_preset(f, h100, 1).value();
  EXPECT_FALSE(shipped.config.overlap_schedule);  // opt-in: "Twenty-fourth change", not adopted
  EXPECT_EQ(knob_note(f), "");

  f.knobs = {"overlap_schedule=1", "step_overhead_s=0.002", "max_num_seqs=64"};
  const EnginePreset what_if = engine_preset(f, h100, 1).value();
  EXPECT_TRUE(what_if.config.overlap_schedule);
  EXPECT_DOUBLE_EQ(what_if.knobs.step_overhead_s, 0.002);
  EXPECT_EQ(what_if.config.max_num_seqs, 64);
  EXPECT_EQ(what_if.knobs.compute_efficiency, shipped.knobs.compute_efficiency);  // the rest kept
  EXPECT_NE(knob_note(f).find("overlap_schedule=1"), std::string::npos);
  EXPECT_NE(knob_note(f).find("as shipped"), std::string::npos);
  // llama.cpp's unified KV attention: opt-in too ("Twenty-eighth change", not adopted).
  for (const EnginePreset& p : engine_presets()) {
    EXPECT_FALSE(p.config.unified_kv_attention) << p.name;
  }
  f.knobs = {"unified_kv_attention=1"};
  EXPECT_TRUE(engine_preset(f, h100, 1).value().config.unified_kv_attention);
  // The front end passing outputs before queued set-ups: opt-in too ("Thirty-first change").
  for (const EnginePreset& p : engine_presets()) {
    EXPECT_FALSE(p.config.outputs_before_setups) << p.name;
  }
  f.knobs = {"outputs_before_setups=1"};
  EXPECT_TRUE(engine_preset(f, h100, 1).value().config.outputs_before_setups);
  // One factor for the host's CPU ("Thirtieth change"): kept as given, applied by the cost model.
  f.knobs = {"host_cpu_factor=3.8"};
  EXPECT_DOUBLE_EQ(engine_preset(f, h100, 1).value().knobs.host_cpu_factor, 3.8);
  EXPECT_EQ(shipped.knobs.host_cpu_factor, 1);

  const std::pair<const char*, const char*> refused[] = {
      {"no_such_knob=1", "accepted: "},
      {"step_overhead_s", "NAME=NUMBER"},
      {"step_overhead_s=fast", "NAME=NUMBER"},
      {"step_overhead_s=1ms", "NAME=NUMBER"},
      {"=1", "NAME=NUMBER"},
      {"step_overhead_s=-0.001", "0 or more"},
      {"host_cpu_factor=-2", "0 or more"},
      {"compute_efficiency=0", "above 0"},
      {"overlap_schedule=2", "0 or 1"},
      {"kv_cache_tokens=1.5", "whole number"},
      {"max_num_seqs=0", "at least 1"},
      {"max_num_batched_tokens=-5", "whole number of tokens"},
      {"gpu_memory_utilization=1.2", "at most 1"},
  };
  for (const auto& [item, says] : refused) {
    f.knobs = {item};
    auto r = engine_preset(f, h100, 1);
    ASSERT_FALSE(r.ok()) << item;
    EXPECT_NE(r.error().find(says), std::string::npos) << item << " -> " << r.error();
    EXPECT_NE(r.error().find("--knob"), std::string::npos) << r.error();
  }
}

// sim run and sim serve run the preset's scheduler with the user's flags on top: sim serve used to
// start from a default (vLLM-like) EngineConfig and keep only the preset's batch limits.
TEST(EnginePreset, CommandsRunThePresetsSchedulerWithTheFlagsOnTop) {
  const GpuSpec h100 = find_gpu("h100").value();
  const EnginePreset sglang = find_engine_preset("sglang", h100, 1).value();
  const EnginePreset v0 = find_engine_preset("vllm-v0", h100, 1).value();
  EngineConfig flags;  // the flags' defaults: a vLLM-like config
  flags.max_num_seqs = 7;
  flags.max_num_batched_tokens = 512;
  flags.eos_mean_tokens = 40;
  flags.enable_prefix_caching = false;

  const EngineConfig s = engine_config_with_flags(sglang, flags, true, false);
  EXPECT_EQ(s.sglang_admission, sglang.config.sglang_admission);
  EXPECT_TRUE(s.sglang_admission);
  EXPECT_EQ(s.mixed_batches, sglang.config.mixed_batches);
  EXPECT_NE(s.mixed_batches, flags.mixed_batches);  // SGLang's unmixed batches kept
  EXPECT_EQ(s.max_num_seqs, 7);
  EXPECT_EQ(s.max_num_batched_tokens, sglang.config.max_num_batched_tokens);  // not given
  EXPECT_EQ(s.eos_mean_tokens, 40);
  EXPECT_FALSE(s.enable_prefix_caching);

  const EngineConfig o = engine_config_with_flags(v0, flags, false, true);
  EXPECT_FALSE(o.enable_chunked_prefill);
  EXPECT_EQ(o.max_num_batched_tokens, 512);
  EXPECT_EQ(o.max_num_seqs, v0.config.max_num_seqs);
}

}  // namespace tokperf::sim
