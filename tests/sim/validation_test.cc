// Issue 4 item 7: published measurements replayed through the engine (run_offline, the engine
// behind `tokperf sim run`). Each case pins the prediction printed in docs/SIMULATOR.md's
// validation table (within 1%), so the table cannot drift from the model, and checks the error
// against the measurement stays inside the band the table states. A model change that moves a
// prediction must update the table with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/clock.h"
#include "sim/deployment.h"
#include "sim/offline_runner.h"

namespace tokperf::sim {
namespace {

CostModel cost_for(const char* model, const char* gpu, const char* dtype, int tp) {
  DeploymentFlags f;
  f.model = model;
  f.gpu = gpu;
  f.dtype = dtype;
  f.tp = tp;
  auto d = resolve_deployment(f);
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error());
  return CostModel(*d, CostKnobs{});
}

struct Replay {
  double ttft_ms = 0;  // median
  double itl_ms = 0;   // median of per-request TPOT (= mean ITL with one token per event)
  double output_tok_per_s = 0;
};

Replay replay(const CostModel& cost, int64_t in, int64_t out, int64_t concurrency,
              int64_t requests) {
  OfflineWorkload w;
  w.prompt_tokens = in;
  w.output_tokens = out;
  w.concurrency = concurrency;
  w.requests = requests;
  auto run = run_offline(cost, EngineConfig{}, w);
  EXPECT_TRUE(run.ok());
  std::vector<double> ttft, tpot;
  for (const auto& t : run->timelines) {
    const auto& e = t.token_events;
    ttft.push_back(ns_to_ms(e.front().t_ns - t.send_ns));
    tpot.push_back(ns_to_ms(e.back().t_ns - e.front().t_ns) / static_cast<double>(e.size() - 1));
  }
  std::sort(ttft.begin(), ttft.end());
  std::sort(tpot.begin(), tpot.end());
  Replay r;
  r.ttft_ms = ttft[ttft.size() / 2];
  r.itl_ms = tpot[tpot.size() / 2];
  r.output_tok_per_s = static_cast<double>(run->total_output_tokens) / (run->end_ns / 1e9);
  return r;
}

double error_pct(double predicted, double measured) { return 100.0 * (predicted / measured - 1); }

// The linear layers of one transformer layer at n tokens, as the step model costs them: FLOPs at
// the GPU's rate x the linear efficiency, or the layer's weight bytes at bandwidth x the weight
// stream's efficiency, whichever is longer.
double linear_ms_per_layer(const CostModel& c, int64_t n) {
  const Deployment& d = c.deployment();
  const double layer_params =
      (c.params().matmul_active() - c.params().lm_head) / static_cast<double>(d.model.num_layers);
  const double compute_s = 2.0 * layer_params * static_cast<double>(n) /
                           (d.gpu.matmul_flops(d.weight_dtype) * c.linear_compute_efficiency());
  const double memory_s = layer_params * dtype_bytes(d.weight_dtype) /
                          (d.gpu.memory_bw_bytes_per_s * c.weight_bandwidth_efficiency());
  return 1e3 * std::max(compute_s, memory_s);
}

// Prints the row so the table in docs/SIMULATOR.md can be regenerated from the test log.
void row(const char* what, double predicted, double measured) {
  std::printf("| %s | %.3f | %.3f | %+.1f%% |\n", what, predicted, measured,
              error_pct(predicted, measured));
}

TEST(Validation, NimLlama70bFp8OnTwoH100) {
  const CostModel c = cost_for("llama-3.1-70b", "h100", "fp8", 2);  // 3.3-70B has 3.1-70B's shape
  const Replay long_prompt = replay(c, 5000, 500, 1, 3);
  const Replay long_answer = replay(c, 500, 2000, 1, 3);
  row("NIM 70B FP8 TP2, 5000/500, TTFT ms", long_prompt.ttft_ms, 406.8);
  row("NIM 70B FP8 TP2, 5000/500, ITL ms", long_prompt.itl_ms, 18.58);
  row("NIM 70B FP8 TP2, 5000/500, output tok/s", long_prompt.output_tok_per_s, 51.67);
  row("NIM 70B FP8 TP2, 500/2000, TTFT ms", long_answer.ttft_ms, 47.8);
  row("NIM 70B FP8 TP2, 500/2000, ITL ms", long_answer.itl_ms, 18.91);
  row("NIM 70B FP8 TP2, 500/2000, output tok/s", long_answer.output_tok_per_s, 52.85);
  EXPECT_NEAR(long_prompt.ttft_ms, 356.5, 3.6);
  EXPECT_NEAR(long_prompt.itl_ms, 18.39, 0.18);
  EXPECT_NEAR(long_prompt.output_tok_per_s, 52.45, 0.52);
  EXPECT_NEAR(long_answer.ttft_ms, 35.19, 0.35);
  EXPECT_NEAR(long_answer.itl_ms, 18.16, 0.18);
  EXPECT_NEAR(long_answer.output_tok_per_s, 55.04, 0.55);
  // Decode is within 5% since the W8A8 knobs (docs/SIMULATOR.md); TTFT is still too fast, the
  // short prompt most (client-side and per-request costs the engine model does not have).
  EXPECT_LT(std::abs(error_pct(long_prompt.itl_ms, 18.58)), 5);
  EXPECT_LT(std::abs(error_pct(long_answer.itl_ms, 18.91)), 5);
  EXPECT_LT(std::abs(error_pct(long_prompt.ttft_ms, 406.8)), 15);
  EXPECT_LT(error_pct(long_answer.ttft_ms, 47.8), -20);  // known miss: fix it, then tighten
  EXPECT_GT(error_pct(long_answer.ttft_ms, 47.8), -30);
}

TEST(Validation, VllmLlama31_8bBf16OnA100_40g) {
  const CostModel c = cost_for("llama-3.1-8b", "a100-40g", "bf16", 1);
  const Replay c1 = replay(c, 1024, 128, 1, 20);
  const Replay c8 = replay(c, 1024, 128, 8, 200);
  const double ratio = c8.output_tok_per_s / c1.output_tok_per_s;
  row("vLLM 8B BF16 A100-40G, 1024/128 c=1, ms per output token", c1.itl_ms, 13.3);
  row("vLLM 8B BF16 A100-40G, c=8 / c=1 output throughput", ratio, 6.6);
  EXPECT_NEAR(c1.itl_ms, 12.59, 0.13);
  EXPECT_NEAR(ratio, 6.02, 0.06);
  EXPECT_LT(std::abs(error_pct(c1.itl_ms, 13.3)), 10);
  EXPECT_LT(std::abs(error_pct(ratio, 6.6)), 10);
}

TEST(Validation, VidurPerLayerLinearProfiles) {
  // Vidur profiled on A100 80GB and H100 SXM; Llama-3-8B has Llama-3.1-8B's shape.
  const CostModel a100 = cost_for("llama-3.1-8b", "a100-80g", "bf16", 1);
  const CostModel h100 = cost_for("llama-2-7b", "h100", "fp16", 1);
  const double a1 = linear_ms_per_layer(a100, 1), a4k = linear_ms_per_layer(a100, 4096);
  const double h1 = linear_ms_per_layer(h100, 1), h4k = linear_ms_per_layer(h100, 4096);
  row("Vidur Llama-3-8B A100, linear ms/layer, 1 token", a1, 0.276);
  row("Vidur Llama-3-8B A100, linear ms/layer, 4096 tokens", a4k, 7.82);
  row("Vidur Llama-2-7B H100, linear ms/layer, 1 token", h1, 0.156);
  row("Vidur Llama-2-7B H100, linear ms/layer, 4096 tokens", h4k, 2.205);
  EXPECT_NEAR(a1, 0.267, 0.003);
  EXPECT_NEAR(a4k, 7.62, 0.08);
  EXPECT_NEAR(h1, 0.151, 0.002);
  EXPECT_NEAR(h4k, 2.24, 0.03);
  for (auto [p, m] : {std::pair{a1, 0.276}, {a4k, 7.82}, {h1, 0.156}, {h4k, 2.205}}) {
    EXPECT_LT(std::abs(error_pct(p, m)), 5) << p << " vs " << m;
  }
}

}  // namespace
}  // namespace tokperf::sim
