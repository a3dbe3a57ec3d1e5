#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>

namespace tokperf::sim {

CostModel::CostModel(Deployment d, CostKnobs k)
    : d_(std::move(d)), k_(k), params_(count_params(d_.model)) {
  if (d_.tp < 1) d_.tp = 1;
  if (const double f = k_.host_cpu_factor; f != 1) {
    for (double* t : {&k_.step_overhead_s, &k_.per_seq_overhead_s, &k_.eager_layer_host_s,
                      &k_.request_overhead_s, &k_.request_overhead_per_token_s,
                      &k_.request_latency_s, &k_.output_overhead_s})
      *t *= f;
    k_.host_cpu_factor = 1;  // applied: knobs() gives the times this host pays
  }
  matmul_flops_per_s_ = d_.gpu.matmul_flops(d_.weight_dtype);
  w8a8_ = (d_.weight_dtype == DType::kFp8 && d_.gpu.fp8_flops > 0) ||
          (d_.weight_dtype == DType::kInt8 && d_.gpu.int8_ops > 0);
  // Attention runs in 16-bit in the common engines, whatever the weight format.
  attention_flops_per_s_ = d_.gpu.matmul_flops(DType::kBf16);
  attn_flops_per_pair_ = attention_flops_per_query_key(d_.model);
}

double CostModel::linear_compute_efficiency() const {
  return (w8a8_ ? k_.w8a8_compute_efficiency : k_.compute_efficiency) * d_.gpu.matmul_stack_factor;
}

double CostModel::weight_bandwidth_efficiency() const {
  return w8a8_ ? k_.w8a8_bandwidth_efficiency : k_.weight_stream_efficiency;
}

double CostModel::weight_stream_s(double bytes, int64_t gemms) const {
  const double latency = w8a8_ ? 0.0 : static_cast<double>(gemms) * k_.gemm_latency_s;
  return bytes / (d_.gpu.memory_bw_bytes_per_s * weight_bandwidth_efficiency()) + latency;
}

int64_t CostModel::weight_gemms_per_step() const {
  const ModelShape& m = d_.model;
  int64_t attention = 2;
  if (m.is_mla()) attention = m.q_lora_rank > 0 ? 5 : 4;
  const int64_t moe_layers = m.num_moe_layers();
  const int64_t moe_mlp = 1 + 2 + (m.shared_experts > 0 ? 2 : 0);
  return m.num_layers * attention + (m.num_layers - moe_layers) * 2 + moe_layers * moe_mlp + 1;
}

double CostModel::kv_bytes_per_token() const {
  return kv_elements_per_token(d_.model) * dtype_bytes(d_.kv_dtype);
}

double CostModel::weight_bytes_per_gpu() const {
  const double bytes = dtype_bytes(d_.weight_dtype);
  if (!dp_attention()) return weight_bytes_total() / d_.tp;
  return (params_.total - params_.attention) * bytes / d_.tp + params_.attention * bytes;
}

double CostModel::kv_bytes_per_token_per_gpu() const {
  const ModelShape& m = d_.model;
  if (dp_attention()) return kv_bytes_per_token();
  if (m.is_mla()) return kv_bytes_per_token();  // the latent is replicated on every rank
  // With more ranks than KV heads, heads are replicated rather than split further.
  const int64_t heads_per_gpu = (m.num_kv_heads + d_.tp - 1) / d_.tp;
  return 2.0 * static_cast<double>(m.num_layers * heads_per_gpu * m.head_dim) *
         dtype_bytes(d_.kv_dtype);
}

double CostModel::profile_activation_bytes() const {
  if (k_.profile_tokens <= 0) return 0;
  const ModelShape& m = d_.model;
  const double tp = static_cast<double>(d_.tp);
  const double t = static_cast<double>(k_.profile_tokens);
  const double h = static_cast<double>(m.hidden);
  constexpr double kAct = 2;  // 16-bit activations
  const double hidden_buffers = 4 * t * h * kAct;
  double mlp = 0;
  if (m.num_moe_layers() < m.num_layers) {
    mlp = 3 * t * static_cast<double>(m.intermediate) / tp * kAct;  // gate+up, then activated
  }
  if (m.is_moe()) {
    const double chunk = std::min(t, 32768.0);
    const double rows = chunk * static_cast<double>(m.experts_per_token);
    const double moe = rows * (3 * static_cast<double>(m.moe_intermediate) / tp + h) * kAct;
    mlp = std::max(mlp, moe);
  }
  const double sampler = static_cast<double>(std::max<int64_t>(k_.profile_seqs, 0)) *
                         static_cast<double>(m.vocab) * 4 * 2;
  return hidden_buffers + mlp + sampler;
}

double CostModel::kv_reserve_bytes() const {
  return k_.profile_tokens > 0 ? k_.profile_overhead_bytes + profile_activation_bytes()
                               : k_.activation_reserve_bytes;
}

double CostModel::kv_budget_bytes_per_gpu() const {
  const double reserve = kv_reserve_bytes();
  if (k_.kv_fraction_of_free_memory) {
    return k_.gpu_memory_utilization * (d_.gpu.memory_bytes - weight_bytes_per_gpu() - reserve);
  }
  return k_.gpu_memory_utilization * d_.gpu.memory_bytes - weight_bytes_per_gpu() - reserve;
}

int64_t CostModel::kv_capacity_tokens() const {
  if (k_.kv_cache_tokens <= 0) return kv_capacity_tokens_from_memory();
  return (dp_attention() ? d_.tp : 1) * k_.kv_cache_tokens;
}

int64_t CostModel::kv_capacity_tokens_from_memory() const {
  // Data-parallel attention: every rank holds its own requests' KV, so the ranks' caches add up.
  const double ranks = dp_attention() ? static_cast<double>(d_.tp) : 1.0;
  const double budget = kv_budget_bytes_per_gpu();
  if (budget <= 0) return 0;
  return static_cast<int64_t>(std::floor(ranks * budget / kv_bytes_per_token_per_gpu()));
}

double CostModel::prefill_bound_s(int64_t prompt_tokens) const {
  const double n = static_cast<double>(prompt_tokens);
  const double flops = 2.0 * params_.active * n + attn_flops_per_pair_ * n * (n + 1) / 2;
  const double compute_s = flops / (matmul_flops_per_s_ * d_.tp);
  const double memory_s =
      (params_.active * dtype_bytes(d_.weight_dtype) + n * kv_bytes_per_token()) /
      (d_.gpu.memory_bw_bytes_per_s * d_.tp);
  return std::max(compute_s, memory_s);
}

double CostModel::decode_bound_s(int64_t context_tokens) const {
  const double bytes = params_.active * dtype_bytes(d_.weight_dtype) +
                       static_cast<double>(context_tokens) * kv_bytes_per_token();
  const double memory_s = bytes / (d_.gpu.memory_bw_bytes_per_s * d_.tp);
  const double flops = 2.0 * params_.active + attn_flops_per_pair_ * context_tokens;
  return std::max(memory_s, flops / (matmul_flops_per_s_ * d_.tp));
}

double CostModel::expected_active_experts(int64_t n_tokens) const {
  const ModelShape& m = d_.model;
  if (!m.is_moe() || n_tokens <= 0) return 0;
  const double e = static_cast<double>(m.num_experts);
  const double p_untouched =
      std::pow(1.0 - static_cast<double>(m.experts_per_token) / e, static_cast<double>(n_tokens));
  return e * (1.0 - p_untouched);
}

double CostModel::weight_bytes_read(int64_t n_tokens) const {
  // The input table is only gathered (a few rows), so it is not streamed.
  double params = params_.total - (params_.tied ? 0 : params_.embedding);
  const ModelShape& m = d_.model;
  if (m.is_moe()) {
    const double all_routed = static_cast<double>(m.num_moe_layers() * m.num_experts);
    const double touched =
        static_cast<double>(m.num_moe_layers()) * expected_active_experts(n_tokens);
    params -= (all_routed - touched) * params_.expert;
  }
  if (dp_attention()) {
    return ((params - params_.attention) / d_.tp + params_.attention) *
           dtype_bytes(d_.weight_dtype);
  }
  return params * dtype_bytes(d_.weight_dtype) / d_.tp;
}

bool CostModel::runs_eager(const StepShape& s) const {
  const int max_batch = k_.cuda_graph_max_batch;
  if (max_batch < 0 || s.new_tokens == 0) return false;
  if (max_batch == 0 || s.extend_seqs > 0) return true;
  // Under data-parallel attention each rank decodes its own share, and a rank's graph is sized
  // for its own batch (requests spread evenly, as elsewhere in this model).
  const int64_t ranks = dp_attention() ? d_.tp : 1;
  const int64_t per_rank = (s.num_seqs + ranks - 1) / ranks;
  return per_rank > max_batch;
}

StepBreakdown CostModel::step(const StepShape& s) const {
  StepBreakdown b;
  const double tp = static_cast<double>(d_.tp);
  const double lm_head_flops = 2.0 * params_.lm_head * static_cast<double>(s.sampled_seqs);
  const ModelShape& m = d_.model;
  const double routed_params = m.is_moe()
                                   ? static_cast<double>(m.num_moe_layers()) *
                                         static_cast<double>(m.experts_per_token) * params_.expert
                                   : 0.0;
  const double tokens = static_cast<double>(s.new_tokens);
  const double dense_flops =
      2.0 * (params_.matmul_active() - params_.lm_head - routed_params) * tokens;
  const double routed_flops = 2.0 * routed_params * tokens;
  const double rate = tp * matmul_flops_per_s_ * linear_compute_efficiency();
  b.linear_s =
      (dense_flops + lm_head_flops) / rate + routed_flops / (rate * k_.moe_expert_compute_factor);
  b.attention_s = attn_flops_per_pair_ * s.attention_pairs /
                  (tp * attention_flops_per_s_ * k_.attention_efficiency);
  const double peak_bw = d_.gpu.memory_bw_bytes_per_s;
  if (s.new_tokens > 0) {
    b.weights_s = weight_stream_s(weight_bytes_read(s.new_tokens), weight_gemms_per_step());
  }
  // KV pages are read by the attention kernel, not the 8-bit GEMMs: the plain efficiency applies.
  // Data-parallel attention: each rank reads its own requests' KV, a 1/tp share of the batch's.
  const double kv_share = dp_attention() ? 1.0 / tp : 1.0;
  const double kv_factor = k_.kv_read_factor > 0 ? k_.kv_read_factor : d_.gpu.kv_read_factor;
  b.kv_s = s.kv_tokens_read * kv_share * kv_bytes_per_token_per_gpu() /
           (peak_bw * k_.bandwidth_efficiency * kv_factor);
  if (d_.tp > 1 && s.new_tokens > 0) {
    // Two all-reduces per layer (after attention and after the MLP) of 16-bit activations; a ring
    // moves 2 (tp-1)/tp of the buffer through each link.
    const double buffer_bytes = static_cast<double>(s.new_tokens * d_.model.hidden) * 2.0;
    const double link = d_.gpu.interconnect_bytes_per_s * k_.interconnect_efficiency;
    const double per_op = k_.allreduce_latency_s + 2.0 * (tp - 1) / tp * buffer_bytes / link;
    b.comm_s = 2.0 * static_cast<double>(d_.model.num_layers) * per_op;
  }
  if (d_.model.is_moe() && s.new_tokens > 0) {
    b.overhead_s += static_cast<double>(d_.model.num_moe_layers()) * k_.moe_layer_overhead_s;
  }
  b.overhead_s += k_.step_overhead_s + k_.per_seq_overhead_s * static_cast<double>(s.num_seqs);
  // An eager step's kernels are launched one by one from the host while the GPU runs the earlier
  // ones: the step lasts as long as the slower of the two.
  if (runs_eager(s)) {
    b.eager_host_s = static_cast<double>(d_.model.num_layers) * k_.eager_layer_host_s;
  }
  b.total_s =
      b.overhead_s + std::max(std::max(b.linear_s + b.attention_s, b.weights_s + b.kv_s) + b.comm_s,
                              b.eager_host_s);
  return b;
}

}  // namespace tokperf::sim
