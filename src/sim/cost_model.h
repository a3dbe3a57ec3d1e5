// The roofline: memory footprint, textbook lower bounds, and the step-time model the engine uses.
// Every knob lives in CostKnobs; defaults and the evidence for each: docs/SIMULATOR.md.
#pragma once

#include <cstdint>

#include "sim/dtype.h"
#include "sim/gpu_catalog.h"
#include "sim/model_catalog.h"

namespace tokperf::sim {

struct CostKnobs {
  double gpu_memory_utilization = 0.9;  // vLLM's default fraction of device memory it may use
  // false (vLLM, SGLang): KV budget = utilization x memory - weights - reserve. true
  // (TensorRT-LLM's free_gpu_memory_fraction): KV budget = utilization x (memory - weights -
  // reserve).
  bool kv_fraction_of_free_memory = false;
  // Per-GPU bytes kept back for activations, CUDA graphs and the sampler (vLLM measures this in a
  // profiling run; 1-4 GiB for 7B-70B models at 8192 batched tokens).
  double activation_reserve_bytes = 2.0 * 1024 * 1024 * 1024;
  double compute_efficiency = 0.75;   // achieved / peak for the linear layers (16-bit GEMMs)
  double attention_efficiency = 0.5;  // achieved / peak for attention math
  double bandwidth_efficiency = 0.8;  // achieved / peak HBM bandwidth when reading the KV cache
  // The 16-bit (and weight-only) weight stream of a step: each weight GEMM costs its bytes at
  // weight_stream_efficiency of the datasheet bandwidth plus gemm_latency_s (its launch, ramp-up
  // and tail, which a GEMM at decode batch sizes cannot hide), so small GEMMs on fast memory reach
  // less of the bandwidth than large ones. Both were chosen (the smallest largest error) on four
  // kernel profiles, not on serving points: a BF16 decoder layer's four GEMMs at 1 token on an H200
  // for Llama-3.1-8B and Llama-3.1-70B's TP2 shard (scripts/gpu_microbench.py, part linear) and
  // Vidur's Llama-3-8B A100 and Llama-2-7B H100 profiles; all four within 4% (the flat 0.8 before:
  // -15% to -3%). weight_stream_efficiency 0.8 and gemm_latency_s 0 give the old flat stream.
  // docs/SIMULATOR.md, "Seventh change".
  double weight_stream_efficiency = 0.876;
  double gemm_latency_s = 6.05e-6;
  // W8A8 (FP8 or INT8 weights on a GPU with that tensor math): every linear layer first quantises
  // its activations in a separate kernel and runs an 8-bit GEMM whose tiles suit small batches
  // less well, so the same bytes and FLOPs go slower than in 16-bit. Measured on H100 by vLLM's
  // bench_fp8_gemm (docs/SIMULATOR.md, "Knobs"); used instead of compute_efficiency and, for the
  // weight stream only, bandwidth_efficiency. Weight-only formats keep the 16-bit knobs.
  double w8a8_compute_efficiency = 0.62;
  double w8a8_bandwidth_efficiency = 0.68;
  double interconnect_efficiency = 0.7;
  double step_overhead_s = 0.4e-3;     // scheduling, sampling, launch per engine step
  double per_seq_overhead_s = 5e-6;    // per scheduled sequence (input prep, detokenise)
  double allreduce_latency_s = 15e-6;  // fixed cost of one tensor-parallel all-reduce
  // Serving front end, per request, before the scheduler sees it (HTTP, tokenisation, request
  // setup, and the first token's detokenise/stream path): a fixed part plus a part per prompt
  // token. Requests pass through it one at a time.
  // vLLM's value was fitted on the calibration half of data/validation/ (the vLLM 0.5/0.6 points:
  // the same FastAPI front end), together with their cold first step; scripts/fit_sim.py,
  // docs/SIMULATOR.md.
  double request_overhead_s = 2.04e-3;
  double request_overhead_per_token_s = 0;
  // Latency every request pays between the client and the scheduler that does not hold up the
  // next request (a hop between the API-server and engine processes, event-loop wake-ups, the first
  // token's way back): added to TTFT, unlike request_overhead_s, which the front end serves one
  // request at a time. Fitted per engine preset.
  double request_latency_s = 0;
  // The same serial front end, per streamed token of each request (detokenise, build and write the
  // stream's chunk): each step's outputs pass through it one at a time after the step ends, so a
  // token reaches the client when the front end has handled it and every output before it, and a
  // new request waits behind them. 0: outputs leave at the step's end.
  double output_overhead_s = 0;
  // Per MoE layer per step: routing, token permutation and the grouped-GEMM launch that a dense
  // layer does not pay (plus expert-parallel dispatch when experts are spread over GPUs).
  double moe_layer_overhead_s = 0;
  // The routed experts' GEMMs run at this fraction of the dense linear rate: a top-k MoE layer
  // scatters a step's tokens over many small per-expert GEMMs (and tensor parallelism splits each
  // expert's intermediate size again), which fill the GPU worse than one dense GEMM. 1 = as dense.
  double moe_expert_compute_factor = 1;
  // One-off cost of the first step that prefills on a freshly started server (first use of each
  // kernel and GEMM shape, memory-pool growth, the first sampler/detokeniser pass). Paid only when
  // the workload says the server is cold (EngineConfig::cold_start: the validation points whose
  // source sends its requests right after start-up); 0 for a warmed server.
  double cold_start_s = 0;
  // The part of that one-off cost that grows with what the cold step runs (first launches at the
  // step's GEMM shapes, allocator growth for its activations): this fraction of the step's own
  // modelled duration is added on top of cold_start_s, on the same step, under the same condition.
  double cold_start_step_factor = 0;
  // Data-parallel attention (SGLang's --enable-dp-attention, with dp size = tp): each of the tp
  // ranks runs attention for its own share of the requests with the attention weights whole, and
  // the other layers stay tensor-parallel. Per GPU that means the attention weights unsplit (in
  // memory and in every step's weight stream), KV for its own requests only (capacity x tp) and a
  // 1/tp share of the KV reads, requests spread evenly. Attention FLOPs per GPU do not change
  // (all heads for 1/tp of the tokens instead of 1/tp of the heads for all). Off by default.
  bool dp_attention = false;
  // CUDA graphs. -1 (every preset's default): not modelled, every step costs its GPU time alone,
  // as when each step replays a captured graph or a C++ runtime launches it (vLLM V1's full and
  // piecewise graphs, TensorRT-LLM's C++ runtime). 0: graphs off (SGLang --disable-cuda-graph,
  // vLLM --enforce-eager, TensorRT-LLM's PyTorch backend without use_cuda_graph): every step runs
  // eager. N > 0: a decode-only step of at most N sequences (per rank under data-parallel
  // attention) replays a graph; a larger decode batch, and every step with a prefill or
  // recompute chunk, runs eager (SGLang, vLLM's V0 engine and TensorRT-LLM's PyTorch backend
  // capture decode batches only). An eager step costs at least the host's time to launch it.
  int cuda_graph_max_batch = -1;
  // Host time to launch one decoder layer's kernels from Python, eagerly: measured on an H200
  // machine (scripts/gpu_microbench.py, part launch): a Llama-3.1-8B layer written in PyTorch,
  // 46-48 kernels, eager minus graph replay 571-588 us per layer at batch 1-8 (12 us a kernel).
  double eager_layer_host_s = 0.58e-3;
  // The host's CPU against the hosts the presets were fitted on: every host-side time above
  // (step_overhead_s, per_seq_overhead_s, eager_layer_host_s, and the front end's
  // request_overhead_s, request_overhead_per_token_s, request_latency_s, output_overhead_s) is
  // multiplied by it, whether it came from the preset, a --frontend-* flag or another --knob. One
  // number for "this machine's Python runs N times slower", which a fit can move where seven
  // constants would need many runs (docs/SIMULATOR.md, "Thirtieth change"). 1: as fitted.
  double host_cpu_factor = 1;
  // The shape of vLLM's profiling pass, from which it sizes the memory it keeps from the KV cache:
  // one forward of profile_tokens tokens (its max_num_batched_tokens) and a sampler pass over
  // profile_seqs sequences (max_num_seqs). 0: unknown, activation_reserve_bytes alone. When set,
  // the memory kept from the KV cache besides the weights is profile_overhead_bytes (CUDA context
  // residue, NCCL and library workspaces) + the pass's activations
  // (CostModel::profile_activation_bytes).
  int64_t profile_tokens = 0;
  int64_t profile_seqs = 0;
  double profile_overhead_bytes = 0;  // fitted on the calibration half of kv_capacity.jsonl
  // The KV cache's size in tokens as the engine itself reported it at start-up (vLLM: "GPU KV
  // cache size: N tokens", or V0's "# GPU blocks: B" x block size; SGLang: max_total_num_tokens,
  // or its --max-total-tokens), per rank under data-parallel attention. 0: computed from memory
  // (kv_budget_bytes_per_gpu). When set it replaces the computed capacity and nothing else: the
  // memory figures stay the model's.
  int64_t kv_cache_tokens = 0;
  // > 0: replaces the GPU's GpuSpec::kv_read_factor (for fitting it with --knob); 0: the GPU's.
  double kv_read_factor = 0;
};

struct Deployment {
  ModelShape model;
  GpuSpec gpu;
  DType weight_dtype = DType::kFp16;
  DType kv_dtype = DType::kFp16;
  int tp = 1;  // tensor-parallel degree: GPUs sharing every layer
  // Data-parallel attention over the tp GPUs (--dp-attention; also CostKnobs::dp_attention).
  bool dp_attention = false;
};

// What one engine step computes; the engine adds one entry per scheduled sequence.
struct StepShape {
  int64_t num_seqs = 0;
  int64_t new_tokens = 0;      // tokens whose KV this step computes (prefill chunks + decodes)
  int64_t sampled_seqs = 0;    // sequences that emit a token at the end of the step
  double attention_pairs = 0;  // sum over new tokens of the keys each attends to
  double kv_tokens_read = 0;   // cached tokens whose K/V are read
  int64_t extend_seqs = 0;     // sequences computing prompt (or recompute) tokens, not a decode

  // A sequence computing `new_tokens` tokens after `context_before` cached ones (causal); `extend`
  // when they are prompt or recomputed tokens rather than one decode token.
  void add(int64_t new_tok, int64_t context_before, bool samples, bool extend) {
    ++num_seqs;
    extend_seqs += extend ? 1 : 0;
    new_tokens += new_tok;
    sampled_seqs += samples ? 1 : 0;
    const double n = static_cast<double>(new_tok);
    attention_pairs += n * static_cast<double>(context_before) + n * (n + 1) / 2;
    kv_tokens_read += static_cast<double>(context_before + new_tok);
  }
};

// Where a step's time goes (seconds, already divided by efficiencies).
struct StepBreakdown {
  double linear_s = 0;     // matmul FLOPs
  double attention_s = 0;  // attention FLOPs
  double weights_s = 0;    // streaming the weights the batch touches
  double kv_s = 0;         // reading the KV cache
  double comm_s = 0;       // tensor-parallel all-reduces
  double overhead_s = 0;
  // Eager steps (CostKnobs::cuda_graph_max_batch): the host's time to launch the step's kernels;
  // 0 when the step replays a graph or graphs are not modelled.
  double eager_host_s = 0;
  // overhead + max(max(compute, memory) + comm, eager host launch)
  double total_s = 0;
};

// Immutable after construction; cheap to call from the engine's hot loop.
class CostModel {
 public:
  CostModel(Deployment d, CostKnobs k);

  const Deployment& deployment() const { return d_; }
  const CostKnobs& knobs() const { return k_; }
  const ParamCounts& params() const { return params_; }
  // The efficiencies this deployment's linear layers run at: the W8A8 knobs when the weights are
  // FP8/INT8 and the GPU has that math, otherwise compute_efficiency / bandwidth_efficiency.
  bool w8a8() const { return w8a8_; }
  // Data-parallel attention (the deployment's or CostKnobs::dp_attention) on more than one GPU.
  bool dp_attention() const { return (d_.dp_attention || k_.dp_attention) && d_.tp > 1; }
  // Whether a step of this shape runs eager under CostKnobs::cuda_graph_max_batch.
  bool runs_eager(const StepShape& s) const;
  double linear_compute_efficiency() const;
  double weight_bandwidth_efficiency() const;
  // Weight GEMMs one rank launches in a step that streams weights: per layer the attention
  // projections (fused QKV and output; MLA's q_a, q_b, kv_a, kv_b and output) and the MLP (fused
  // gate+up and down; an MoE layer's router, its routed experts as one fused kernel pair and its
  // shared experts' pair), plus the output head. Paid at CostKnobs::gemm_latency_s each on the
  // 16-bit and weight-only stream (the W8A8 knob was measured at batch 1 and carries its own).
  int64_t weight_gemms_per_step() const;
  // Time to stream `bytes` of weights through `gemms` weight GEMMs on one GPU: bytes at the
  // weight-stream efficiency, plus CostKnobs::gemm_latency_s a GEMM off the W8A8 path.
  double weight_stream_s(double bytes, int64_t gemms) const;

  double weight_bytes_total() const { return params_.total * dtype_bytes(d_.weight_dtype); }
  double weight_bytes_per_gpu() const;  // data-parallel attention keeps its weights whole
  double kv_bytes_per_token() const;    // whole model, all layers
  // KV heads are split over TP (MLA's latent is not); data-parallel attention: a rank holds whole
  // tokens of its own requests.
  double kv_bytes_per_token_per_gpu() const;
  // util x memory - weights - kv_reserve_bytes(), per GPU; negative when the weights alone do not
  // fit.
  double kv_budget_bytes_per_gpu() const;
  // What the engine keeps from the KV cache besides the weights, per GPU: activation_reserve_bytes,
  // or with a profiling shape (CostKnobs::profile_tokens) profile_overhead_bytes +
  // profile_activation_bytes().
  double kv_reserve_bytes() const;
  // Peak activation memory per GPU of a vLLM-style profiling pass: the largest layer's live
  // buffers for profile_tokens tokens (16-bit: four hidden-sized ones, and a dense MLP's gate+up
  // and activated outputs; a fused MoE layer's three intermediate caches for top-k copies of up to
  // 32,768 tokens at a time, VLLM_FUSED_MOE_CHUNK_SIZE) plus the sampler's float32 logits and
  // probabilities for profile_seqs sequences. 0 without a profiling shape.
  double profile_activation_bytes() const;
  // A KV size the engine reported (CostKnobs::kv_cache_tokens) says the weights fitted.
  bool fits() const { return k_.kv_cache_tokens > 0 || kv_budget_bytes_per_gpu() > 0; }
  int64_t kv_capacity_tokens() const;  // 0 when it does not fit
  // The capacity from memory alone, ignoring CostKnobs::kv_cache_tokens.
  int64_t kv_capacity_tokens_from_memory() const;

  // Textbook lower bounds at 100% of peak: max(FLOPs / peak, bytes / bandwidth) over all TP GPUs.
  // Prefill: 2 x active params x tokens + causal attention. Decode: one token at `context` cached
  // tokens, batch of one: active weight bytes + KV bytes read.
  double prefill_bound_s(int64_t prompt_tokens) const;
  double decode_bound_s(int64_t context_tokens) const;

  // Modelled duration of one engine step.
  StepBreakdown step(const StepShape& s) const;
  double step_time_s(const StepShape& s) const { return step(s).total_s; }

  // Expected distinct routed experts touched per MoE layer by n tokens with top-k of E, under
  // uniform routing: E * (1 - (1 - k/E)^n).
  double expected_active_experts(int64_t n_tokens) const;

 private:
  double weight_bytes_read(int64_t n_tokens) const;

  Deployment d_;
  CostKnobs k_;
  ParamCounts params_;
  bool w8a8_ = false;
  double matmul_flops_per_s_;
  double attention_flops_per_s_;
  double attn_flops_per_pair_;
};

}  // namespace tokperf::sim
