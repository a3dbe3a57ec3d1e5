// What the simulated server counts about itself, rendered in vLLM's Prometheus names (V1 engine,
// https://docs.vllm.ai/en/latest/design/metrics.html) so dashboards and scrapers built for vLLM
// read it unchanged. Buckets are vLLM's. Values are in seconds as vLLM's are; KV-cache usage is a
// fraction (1 = 100%), exported both as the V1 name and the V0 `gpu_cache_usage_perc`.
//
// Thread rules: owned and updated by the server's loop thread; render() on that thread too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine.h"

namespace tokperf::sim {

// A Prometheus histogram with fixed upper bounds (cumulative on output).
class PromHistogram {
 public:
  explicit PromHistogram(std::vector<double> upper_bounds);
  void observe(double value);
  int64_t count() const { return count_; }
  double sum() const { return sum_; }
  // Non-cumulative count per bound; the last entry is the +Inf bucket.
  const std::vector<int64_t>& buckets() const { return counts_; }
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;
  int64_t count_ = 0;
  double sum_ = 0;
};

struct ServingMetrics {
  ServingMetrics();

  PromHistogram ttft_s;             // vllm:time_to_first_token_seconds
  PromHistogram itl_s;              // vllm:inter_token_latency_seconds (one sample per token gap)
  PromHistogram tpot_s;             // vllm:time_per_output_token_seconds (V0 name, same samples)
  PromHistogram e2e_s;              // vllm:e2e_request_latency_seconds
  // Observed when a request finishes, as vLLM does, from the engine's exact times: queue = arrival
  // -> (last) scheduled, prefill = scheduled -> first token, decode = first -> last token,
  // inference = scheduled -> last token.
  PromHistogram queue_s;            // vllm:request_queue_time_seconds
  PromHistogram prefill_s;          // vllm:request_prefill_time_seconds
  PromHistogram decode_s;           // vllm:request_decode_time_seconds
  PromHistogram inference_s;        // vllm:request_inference_time_seconds
  int64_t prompt_tokens_total = 0;  // vllm:prompt_tokens_total (finished requests)
  int64_t generation_tokens_total = 0;  // vllm:generation_tokens_total (every emitted token)
  int64_t success_length = 0;           // vllm:request_success_total{finished_reason="length"}
  int64_t success_stop = 0;             // ... {finished_reason="stop"}
  int64_t aborted = 0;                  // ... {finished_reason="abort"}
};

// The text exposition (format 0.0.4) of `m` plus the engine's gauges, every sample labelled
// model_name="<served_model>".
std::string render_prometheus(const ServingMetrics& m, const EngineStats& engine,
                              const std::string& served_model);

}  // namespace tokperf::sim
