#include "sim/estimate.h"

#include "sim/accuracy_figures.h"
#include "sim/kv_validation.h"
#include "sim/validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tokperf::sim {
namespace {

std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

std::string ms(double s) {
  return s >= 1.0 ? fmt::format("{:.3f} s", s) : fmt::format("{:.2f} ms", s * 1e3);
}

}  // namespace

Estimate compute_estimate(const CostModel& cost, const EstimateRequest& req) {
  Estimate e;
  const Deployment& d = cost.deployment();
  e.weight_bytes_total = cost.weight_bytes_total();
  e.weight_bytes_per_gpu = cost.weight_bytes_per_gpu();
  e.kv_bytes_per_token = cost.kv_bytes_per_token();
  e.kv_bytes_per_token_per_gpu = cost.kv_bytes_per_token_per_gpu();
  e.kv_budget_bytes_per_gpu = cost.kv_budget_bytes_per_gpu();
  e.fits = cost.fits();
  e.kv_capacity_tokens = cost.kv_capacity_tokens();
  e.context_tokens =
      req.context_tokens > 0 ? req.context_tokens : req.prompt_tokens + req.output_tokens;
  e.kv_capacity_sequences = e.context_tokens > 0 ? e.kv_capacity_tokens / e.context_tokens : 0;
  e.prefill_bound_s = cost.prefill_bound_s(req.prompt_tokens);
  e.decode_bound_first_s = cost.decode_bound_s(req.prompt_tokens);
  e.decode_bound_last_s = cost.decode_bound_s(req.prompt_tokens + req.output_tokens);

  // One request on an idle engine: the serving front end, the prompt in chunks of the step
  // budget, then one step per token; the front end passes each token on after its step.
  e.expected_ttft_s =
      cost.knobs().request_overhead_s + cost.knobs().request_latency_s +
      cost.knobs().request_overhead_per_token_s * static_cast<double>(req.prompt_tokens) +
      cost.knobs().output_overhead_s;
  const int64_t chunk = std::max<int64_t>(1, req.max_num_batched_tokens);
  for (int64_t done = 0; done < req.prompt_tokens;) {
    const int64_t n = std::min(chunk, req.prompt_tokens - done);
    StepShape s;
    s.add(n, done, done + n == req.prompt_tokens, true);
    e.expected_ttft_s += cost.step_time_s(s);
    done += n;
  }
  double decode_s = 0;
  for (int64_t i = 1; i < req.output_tokens; ++i) {
    StepShape s;
    s.add(1, req.prompt_tokens + i - 1, true, false);
    decode_s += cost.step_time_s(s);
  }
  e.expected_tpot_s = req.output_tokens > 1 ? decode_s / (req.output_tokens - 1) : 0;
  e.expected_e2e_s = e.expected_ttft_s + decode_s;

  if (!e.fits) {
    e.notes.push_back(fmt::format(
        "does NOT fit: {} of weights per GPU exceed {:.2f} x {} minus the {} reserve; use more "
        "GPUs (--tp), a smaller --dtype or a larger GPU. Bounds below assume it fitted.",
        gb(e.weight_bytes_per_gpu), cost.knobs().gpu_memory_utilization, gb(d.gpu.memory_bytes),
        gb(cost.knobs().activation_reserve_bytes)));
  } else if (e.kv_capacity_sequences < 1) {
    e.notes.push_back(fmt::format("the KV cache holds {} tokens: not one {}-token sequence",
                                  e.kv_capacity_tokens, e.context_tokens));
  }
  if (d.weight_dtype == DType::kFp8 && d.gpu.fp8_flops <= 0) {
    e.notes.push_back(d.gpu.name +
                      " has no FP8 math: FP8 halves weight bytes, FLOPs run at 16-bit");
  }
  return e;
}

std::string format_estimate_text(const Estimate& e, const CostModel& cost,
                                 const EstimateRequest& req) {
  const Deployment& d = cost.deployment();
  const ParamCounts& p = cost.params();
  std::string out;
  auto line = [&out](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<34} {}\n", label, value);
  };
  out += fmt::format("{} on {} x {}, weights {}, KV cache {}{}\n", d.model.name, d.tp, d.gpu.name,
                     dtype_name(d.weight_dtype), dtype_name(d.kv_dtype),
                     cost.dp_attention() ? ", data-parallel attention (each GPU caches its own "
                                           "requests)"
                                         : "");
  for (const auto& n : e.notes) out += "note: " + n + "\n";
  line("parameters (total / active)",
       fmt::format("{:.2f} B / {:.2f} B", p.total / 1e9, p.active / 1e9));
  out += "memory\n";
  line("weights (total / per GPU)",
       fmt::format("{} / {}", gb(e.weight_bytes_total), gb(e.weight_bytes_per_gpu)));
  line("KV cache per token (per GPU)",
       fmt::format("{:.0f} bytes ({:.0f} per GPU)", e.kv_bytes_per_token,
                   e.kv_bytes_per_token_per_gpu));
  const CostKnobs& kn = cost.knobs();
  line("kept for activations (per GPU)",
       kn.kv_cache_tokens > 0
           ? fmt::format("{} (not used: the KV size is given)", gb(cost.kv_reserve_bytes()))
       : kn.profile_tokens > 0
           ? fmt::format("{} (vLLM's profiling pass: {} tokens, {} sequences)",
                         gb(cost.kv_reserve_bytes()), kn.profile_tokens, kn.profile_seqs)
           : fmt::format("{} (the engine's constant reserve)", gb(cost.kv_reserve_bytes())));
  line("KV budget per GPU",
       kn.kv_cache_tokens > 0 ? gb(e.kv_budget_bytes_per_gpu)
       : kn.kv_fraction_of_free_memory
           ? fmt::format("{} ({:.2f} of what the weights and that reserve leave of {})",
                         gb(e.kv_budget_bytes_per_gpu), kn.gpu_memory_utilization,
                         gb(cost.deployment().gpu.memory_bytes))
           : fmt::format("{} ({:.2f} of {}, less the weights and that reserve)",
                         gb(e.kv_budget_bytes_per_gpu), kn.gpu_memory_utilization,
                         gb(cost.deployment().gpu.memory_bytes)));
  line("fits", e.fits ? "yes" : "NO");
  line("KV capacity",
       fmt::format("{} tokens = {} sequences of {} tokens{}", e.kv_capacity_tokens,
                   e.kv_capacity_sequences, e.context_tokens,
                   kn.kv_cache_tokens > 0
                       ? fmt::format(" (the engine's own figure, --kv-cache-tokens {}{}; from "
                                     "memory: {})",
                                     kn.kv_cache_tokens, cost.dp_attention() ? " per GPU" : "",
                                     cost.kv_capacity_tokens_from_memory())
                       : ""));
  if (kn.profile_tokens > 0 && kn.kv_cache_tokens == 0) {
    out += fmt::format(
        "  (vLLM's own startup logs: within ±{:.1f}% median on {} held-out engine starts, worst "
        "{:.2f}x; docs/SIMULATOR.md \"KV-cache capacity\")\n",
        kKvCapacityHeldOut.median_pct, kKvCapacityHeldOut.rows, kKvCapacityHeldOut.worst_ratio);
  }
  out += fmt::format("lower bounds (100% of peak, {} prompt / {} output tokens)\n",
                     req.prompt_tokens, req.output_tokens);
  line("prefill", ms(e.prefill_bound_s));
  line("decode per token (first / last)",
       fmt::format("{} / {} ({:.1f} tok/s)", ms(e.decode_bound_first_s), ms(e.decode_bound_last_s),
                   1.0 / e.decode_bound_first_s));
  const CostKnobs& k = cost.knobs();
  std::string stream_note;
  if (cost.w8a8()) {
    stream_note = ", 8-bit weight and activation kernels";
  } else if (k.gemm_latency_s > 0) {
    stream_note = fmt::format(" + {:.2f} us a GEMM, {} a step", k.gemm_latency_s * 1e6,
                              cost.weight_gemms_per_step());
  }
  out += fmt::format(
      "expected, idle engine (linear compute {:.0f}%, weight bandwidth {:.0f}%{}, {:.2f} ms step "
      "overhead{})\n",
      cost.linear_compute_efficiency() * 100, cost.weight_bandwidth_efficiency() * 100, stream_note,
      k.step_overhead_s * 1e3,
      d.model.is_moe() && (k.moe_layer_overhead_s > 0 || k.moe_expert_compute_factor != 1)
          ? fmt::format(" + {:.0f} us per MoE layer, routed experts at {:.3g} of the linear rate",
                        k.moe_layer_overhead_s * 1e6, k.moe_expert_compute_factor)
          : "");
  if (k.cuda_graph_max_batch >= 0) {
    const double host_s = static_cast<double>(d.model.num_layers) * k.eager_layer_host_s;
    out += k.cuda_graph_max_batch == 0
               ? fmt::format(
                     "  CUDA graphs off: every step runs eager, at least {} of host launch "
                     "({} layers x {:.2f} ms)\n",
                     ms(host_s), d.model.num_layers, k.eager_layer_host_s * 1e3)
               : fmt::format(
                     "  CUDA graphs for decode batches up to {}: prefill steps and larger "
                     "batches run eager, at least {} of host launch each\n",
                     k.cuda_graph_max_batch, ms(host_s));
  }
  if (k.output_overhead_s > 0) {
    out += fmt::format(
        "  front end: {:.1f} us per streamed token of each request, so at most {:.0f} tokens/s "
        "streamed in all (a property of the host's CPU: --frontend-us-per-token, or measure "
        "your server's with scripts/stream_spacing.py; where each preset's comes from: "
        "docs/SIMULATOR.md)\n",
        k.output_overhead_s * 1e6, 1.0 / k.output_overhead_s);
  }
  if (k.request_overhead_s > 0 || k.request_overhead_per_token_s > 0) {
    // The same serial front end sets each request up: a cap on requests/s however fast the GPU.
    const double setup_s = k.request_overhead_s +
                           k.request_overhead_per_token_s * static_cast<double>(req.prompt_tokens);
    out += fmt::format(
        "  front end: {:.2f} ms to set each {}-token request up, so at most {:.0f} requests/s "
        "(a property of the host's CPU: --frontend-ms-per-request; where each preset's comes "
        "from: docs/SIMULATOR.md)\n",
        setup_s * 1e3, req.prompt_tokens, 1.0 / setup_s);
  }
  line("TTFT", ms(e.expected_ttft_s));
  line("TPOT", ms(e.expected_tpot_s));
  line("end to end", ms(e.expected_e2e_s));
  out += held_out_accuracy_line(d, req.engine) + "\n";
  return out;
}

nlohmann::json estimate_to_json(const Estimate& e, const CostModel& cost,
                                const EstimateRequest& req) {
  const Deployment& d = cost.deployment();
  const CostKnobs& k = cost.knobs();
  const accuracy::HeldOutFigures& fig =
      model_class_of(d) == ModelClass::kMoe ? accuracy::kMoe : accuracy::kDense;
  // A metric with no held-out point of this class has no figure: null.
  auto json_pct = [](int n, double pct) { return n > 0 ? nlohmann::json(pct) : nlohmann::json(); };
  return {
      {"model", d.model.id},
      {"gpu", d.gpu.id},
      {"dtype", dtype_name(d.weight_dtype)},
      {"kv_dtype", dtype_name(d.kv_dtype)},
      {"tp", d.tp},
      {"dp_attention", cost.dp_attention()},
      // The served context length (--max-model-len, else max_position_embeddings; 0: unknown).
      {"max_model_len", d.model.max_context},
      {"cuda_graph_max_batch", cost.knobs().cuda_graph_max_batch},
      // The front end's time per streamed token of each request (0: not modelled).
      {"frontend_us_per_token", k.output_overhead_s * 1e6},
      // The front end's serial time to set each request up, fixed part (0: not modelled).
      {"frontend_ms_per_request", k.request_overhead_s * 1e3},
      // The engine's own KV size when --kv-cache-tokens gave it (null: from memory).
      {"kv_cache_tokens_given",
       k.kv_cache_tokens > 0 ? nlohmann::json(k.kv_cache_tokens) : nlohmann::json()},
      {"prompt_tokens", req.prompt_tokens},
      {"output_tokens", req.output_tokens},
      {"params_total", cost.params().total},
      {"params_active", cost.params().active},
      {"weight_bytes_total", e.weight_bytes_total},
      {"weight_bytes_per_gpu", e.weight_bytes_per_gpu},
      {"kv_bytes_per_token", e.kv_bytes_per_token},
      {"kv_bytes_per_token_per_gpu", e.kv_bytes_per_token_per_gpu},
      {"kv_budget_bytes_per_gpu", e.kv_budget_bytes_per_gpu},
      {"fits", e.fits},
      {"kv_capacity_tokens", e.kv_capacity_tokens},
      {"context_tokens", e.context_tokens},
      {"kv_capacity_sequences", e.kv_capacity_sequences},
      {"prefill_bound_s", e.prefill_bound_s},
      {"decode_bound_first_s", e.decode_bound_first_s},
      {"decode_bound_last_s", e.decode_bound_last_s},
      {"expected_ttft_s", e.expected_ttft_s},
      {"expected_tpot_s", e.expected_tpot_s},
      {"expected_e2e_s", e.expected_e2e_s},
      {"knobs",
       {{"gpu_memory_utilization", k.gpu_memory_utilization},
        {"activation_reserve_bytes", k.activation_reserve_bytes},
        {"compute_efficiency", k.compute_efficiency},
        {"attention_efficiency", k.attention_efficiency},
        {"bandwidth_efficiency", k.bandwidth_efficiency},
        {"w8a8_compute_efficiency", k.w8a8_compute_efficiency},
        {"w8a8_bandwidth_efficiency", k.w8a8_bandwidth_efficiency},
        {"weight_stream_efficiency", k.weight_stream_efficiency},
        {"gemm_latency_s", k.gemm_latency_s},
        {"applied_linear_compute_efficiency", cost.linear_compute_efficiency()},
        {"applied_weight_bandwidth_efficiency", cost.weight_bandwidth_efficiency()},
        {"step_overhead_s", k.step_overhead_s},
        {"request_overhead_s", k.request_overhead_s},
        {"request_overhead_per_token_s", k.request_overhead_per_token_s},
        {"request_latency_s", k.request_latency_s},
        {"moe_layer_overhead_s", k.moe_layer_overhead_s},
        {"moe_expert_compute_factor", k.moe_expert_compute_factor}}},
      {"accuracy",
       {{"model_class", model_class_of(cost.deployment()) == ModelClass::kMoe ? "moe" : "dense"},
        {"held_out_runs", fig.runs},
        {"ttft_median_abs_pct", json_pct(fig.ttft_n, fig.ttft_pct)},
        {"tpot_median_abs_pct", json_pct(fig.tpot_n, fig.tpot_pct)},
        {"output_throughput_median_abs_pct", json_pct(fig.output_n, fig.output_pct)},
        {"worst_ratio", fig.worst_ratio},
        {"worst", fig.worst},
        {"validated_gpu_and_engine",
         in_validated_set(cost.deployment().gpu.id, req.engine, model_class_of(cost.deployment()))},
        {"source", "docs/SIMULATOR.md, data/validation/"}}},
      {"notes", e.notes},
  };
}

}  // namespace tokperf::sim
