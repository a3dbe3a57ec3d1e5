#include "servermetrics/engine_map.h"

#include <array>

namespace tokperf::servermetrics {
namespace {

using E = Engine;
using C = Concept;
using S = Shape;

constexpr MappingEntry kTable[] = {
    // vLLM V1 (vllm/v1/metrics/loggers.py); V0 and pre-0.11 names after the new ones.
    {E::kVllm, C::kTtft, "vllm:time_to_first_token_seconds", S::kHistogram, 1, ""},
    {E::kVllm, C::kItl, "vllm:inter_token_latency_seconds", S::kHistogram, 1, "per step"},
    {E::kVllm, C::kItl, "vllm:time_per_output_token_seconds", S::kHistogram, 1,
     "before 0.11; per step"},
    {E::kVllm, C::kE2e, "vllm:e2e_request_latency_seconds", S::kHistogram, 1, ""},
    {E::kVllm, C::kQueue, "vllm:request_queue_time_seconds", S::kHistogram, 1, ""},
    {E::kVllm, C::kPrefill, "vllm:request_prefill_time_seconds", S::kHistogram, 1, ""},
    {E::kVllm, C::kDecode, "vllm:request_decode_time_seconds", S::kHistogram, 1, ""},
    {E::kVllm, C::kRunning, "vllm:num_requests_running", S::kGauge, 1, ""},
    {E::kVllm, C::kWaiting, "vllm:num_requests_waiting", S::kGauge, 1, ""},
    {E::kVllm, C::kKvUsage, "vllm:kv_cache_usage_perc", S::kGauge, 1, ""},
    {E::kVllm, C::kKvUsage, "vllm:gpu_cache_usage_perc", S::kGauge, 1, "before 0.9"},
    {E::kVllm, C::kPreemptions, "vllm:num_preemptions", S::kCounter, 1, ""},
    {E::kVllm, C::kPrefixHits, "vllm:prefix_cache_hits", S::kCounter, 1, "tokens"},
    {E::kVllm, C::kPrefixHits, "vllm:gpu_prefix_cache_hits", S::kCounter, 1, "V0"},
    {E::kVllm, C::kPromptTokens, "vllm:prompt_tokens", S::kCounter, 1, ""},
    {E::kVllm, C::kGenerationTokens, "vllm:generation_tokens", S::kCounter, 1, ""},
    {E::kVllm, C::kFinished, "vllm:request_success", S::kCounter, 1, "by finished_reason"},
    // SGLang (python/sglang/srt/metrics/collector.py).
    {E::kSglang, C::kTtft, "sglang:time_to_first_token_seconds", S::kHistogram, 1, ""},
    {E::kSglang, C::kItl, "sglang:inter_token_latency_seconds", S::kHistogram, 1, ""},
    {E::kSglang, C::kE2e, "sglang:e2e_request_latency_seconds", S::kHistogram, 1, ""},
    {E::kSglang, C::kQueue, "sglang:queue_time_seconds", S::kHistogram, 1, ""},
    {E::kSglang, C::kRunning, "sglang:num_running_reqs", S::kGauge, 1, ""},
    {E::kSglang, C::kWaiting, "sglang:num_queue_reqs", S::kGauge, 1, ""},
    {E::kSglang, C::kKvUsage, "sglang:token_usage", S::kGauge, 1, "token pool usage"},
    {E::kSglang, C::kPreemptions, "sglang:num_retracted_requests", S::kCounter, 1, "retractions"},
    {E::kSglang, C::kPrefixHits, "sglang:cached_tokens", S::kCounter, 1, ""},
    {E::kSglang, C::kPromptTokens, "sglang:prompt_tokens", S::kCounter, 1, ""},
    {E::kSglang, C::kGenerationTokens, "sglang:generation_tokens", S::kCounter, 1, ""},
    {E::kSglang, C::kFinished, "sglang:num_requests", S::kCounter, 1, ""},
    // TensorRT-LLM's trtllm-serve (/prometheus/metrics).
    {E::kTrtllm, C::kTtft, "trtllm_time_to_first_token_seconds", S::kHistogram, 1, ""},
    {E::kTrtllm, C::kItl, "trtllm_time_per_output_token_seconds", S::kHistogram, 1, ""},
    {E::kTrtllm, C::kE2e, "trtllm_e2e_request_latency_seconds", S::kHistogram, 1, ""},
    {E::kTrtllm, C::kQueue, "trtllm_request_queue_time_seconds", S::kHistogram, 1, ""},
    {E::kTrtllm, C::kPrefill, "trtllm_request_prefill_time_seconds", S::kHistogram, 1, ""},
    {E::kTrtllm, C::kDecode, "trtllm_request_decode_time_seconds", S::kHistogram, 1, ""},
    {E::kTrtllm, C::kRunning, "trtllm_num_requests_running", S::kGauge, 1, ""},
    {E::kTrtllm, C::kWaiting, "trtllm_num_requests_waiting", S::kGauge, 1, ""},
    {E::kTrtllm, C::kKvUsage, "trtllm_kv_cache_utilization", S::kGauge, 1, ""},
    {E::kTrtllm, C::kPromptTokens, "trtllm_prompt_tokens", S::kCounter, 1, ""},
    {E::kTrtllm, C::kGenerationTokens, "trtllm_generation_tokens", S::kCounter, 1, ""},
    {E::kTrtllm, C::kFinished, "trtllm_request_success", S::kCounter, 1, ""},
    // Triton with the TensorRT-LLM backend (port 8002): the first-response histogram is in ms.
    {E::kTriton, C::kTtft, "nv_inference_first_response_histogram_ms", S::kHistogram, 1e-3,
     "milliseconds"},
    {E::kTriton, C::kFinished, "nv_inference_request_success", S::kCounter, 1, ""},
    // TGI (router/src/server.rs): no TTFT histogram; ITL per request.
    {E::kTgi, C::kE2e, "tgi_request_duration", S::kHistogram, 1, ""},
    {E::kTgi, C::kQueue, "tgi_request_queue_duration", S::kHistogram, 1, ""},
    {E::kTgi, C::kItl, "tgi_request_mean_time_per_token_duration", S::kHistogram, 1,
     "mean per request"},
    {E::kTgi, C::kRunning, "tgi_batch_current_size", S::kGauge, 1, ""},
    {E::kTgi, C::kWaiting, "tgi_queue_size", S::kGauge, 1, ""},
    {E::kTgi, C::kPromptTokens, "tgi_request_input_length", S::kHistogramSum, 1, "histogram sum"},
    {E::kTgi, C::kGenerationTokens, "tgi_request_generated_tokens", S::kHistogramSum, 1,
     "histogram sum"},
    {E::kTgi, C::kFinished, "tgi_request_success", S::kCounter, 1, ""},
    // llama.cpp (--metrics; unlabelled): counters of seconds, no histograms.
    {E::kLlamaCpp, C::kPromptTokens, "llamacpp:prompt_tokens", S::kCounter, 1, "excludes cached"},
    {E::kLlamaCpp, C::kGenerationTokens, "llamacpp:tokens_predicted", S::kCounter, 1, ""},
    {E::kLlamaCpp, C::kPrefillSeconds, "llamacpp:prompt_seconds", S::kCounter, 1, ""},
    {E::kLlamaCpp, C::kDecodeSeconds, "llamacpp:tokens_predicted_seconds", S::kCounter, 1, ""},
    {E::kLlamaCpp, C::kPrefixHits, "llamacpp:prompt_tokens_cached", S::kCounter, 1, "newer builds"},
    {E::kLlamaCpp, C::kRunning, "llamacpp:requests_processing", S::kGauge, 1, ""},
    {E::kLlamaCpp, C::kWaiting, "llamacpp:requests_deferred", S::kGauge, 1, ""},
    // NVIDIA Dynamo's frontend.
    {E::kDynamo, C::kTtft, "dynamo_frontend_time_to_first_token_seconds", S::kHistogram, 1, ""},
    {E::kDynamo, C::kItl, "dynamo_frontend_inter_token_latency_seconds", S::kHistogram, 1, ""},
    {E::kDynamo, C::kE2e, "dynamo_frontend_request_duration_seconds", S::kHistogram, 1, ""},
    {E::kDynamo, C::kWaiting, "dynamo_frontend_queued_requests", S::kGauge, 1, ""},
    {E::kDynamo, C::kRunning, "dynamo_frontend_inflight_requests", S::kGauge, 1,
     "in flight at the frontend"},
    {E::kDynamo, C::kGenerationTokens, "dynamo_frontend_output_tokens", S::kCounter, 1, ""},
};

struct Prefix {
  std::string_view prefix;
  Engine engine;
};
constexpr Prefix kPrefixes[] = {
    {"vllm:", E::kVllm},         {"sglang:", E::kSglang},       {"trtllm_", E::kTrtllm},
    {"nv_trt_llm_", E::kTriton}, {"nv_inference_", E::kTriton}, {"tgi_", E::kTgi},
    {"llamacpp:", E::kLlamaCpp}, {"dynamo_", E::kDynamo},
};

}  // namespace

const char* engine_name(Engine e) {
  switch (e) {
    case E::kVllm:
      return "vLLM";
    case E::kSglang:
      return "SGLang";
    case E::kTrtllm:
      return "TensorRT-LLM";
    case E::kTriton:
      return "Triton";
    case E::kTgi:
      return "TGI";
    case E::kLlamaCpp:
      return "llama.cpp";
    case E::kDynamo:
      return "Dynamo";
    case E::kUnknown:
      break;
  }
  return "unknown";
}

const char* concept_name(Concept c) {
  switch (c) {
    case C::kTtft:
      return "ttft";
    case C::kItl:
      return "itl";
    case C::kE2e:
      return "e2e";
    case C::kQueue:
      return "queue";
    case C::kPrefill:
      return "prefill";
    case C::kDecode:
      return "decode";
    case C::kRunning:
      return "running";
    case C::kWaiting:
      return "waiting";
    case C::kKvUsage:
      return "kv_usage";
    case C::kPreemptions:
      return "preemptions";
    case C::kPrefixHits:
      return "prefix_hit_tokens";
    case C::kPromptTokens:
      return "prompt_tokens";
    case C::kGenerationTokens:
      return "generation_tokens";
    case C::kFinished:
      return "finished_requests";
    case C::kPrefillSeconds:
      return "prefill_seconds";
    case C::kDecodeSeconds:
      return "decode_seconds";
    case C::kCount_:
      break;
  }
  return "?";
}

std::span<const MappingEntry> mapping_table() { return kTable; }

Engine detect_engine(const Exposition& e) {
  // The engine with the most series wins (a gateway may add a few of its own).
  std::array<int64_t, 8> votes{};
  for (const Sample& s : e.samples) {
    for (const Prefix& p : kPrefixes) {
      if (s.name.starts_with(p.prefix)) {
        ++votes[static_cast<size_t>(p.engine)];
        break;
      }
    }
  }
  size_t best = 0;
  for (size_t i = 1; i < votes.size(); ++i) {
    if (votes[i] > votes[best]) best = i;
  }
  return votes[best] > 0 ? static_cast<Engine>(best) : Engine::kUnknown;
}

}  // namespace tokperf::servermetrics
