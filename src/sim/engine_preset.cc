#include "sim/engine_preset.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

namespace tokperf::sim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

bool names_a100(const GpuSpec& gpu) {
  std::string s = gpu.id + " " + gpu.name;
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s.find("a100") != std::string::npos;
}

std::vector<EnginePreset> make_presets() {
  std::vector<EnginePreset> v;

  EnginePreset vllm;
  vllm.name = "vllm";
  vllm.description =
      "vLLM V1 defaults: KV in the activation dtype, 0.9 of memory, max_num_seqs 1024 and 8192 "
      "batched tokens on GPUs with >= 70 GiB other than A100 (256 and 2048 elsewhere), chunked "
      "prefill, blocks allocated on demand with preemption";
  // vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults (UsageContext.OPENAI_API_SERVER);
  // docs/SIMULATOR.md, "Knobs".
  vllm.device_batch_defaults = true;
  vllm.profiled_memory = true;
  // The V1 engine's own costs, fitted on the calibration half of the fourth batch (vLLM 0.10.2
  // on L40S, 0.23.0 on L4, and the RTX 4090 points: scripts/fit_sim.py --engine vllm) in two
  // stages, each knob on the metric it governs: TPOT (--metric TPOT: the step overhead, with the
  // Ada GPUs' KV-read factor, gpu_catalog.cc), then TTFT (--metric TTFT --worst-weight 0: the
  // front end's serial cost and a latency that does not hold up the next request: the API-server
  // and engine-core processes exchange every request and its tokens over ZMQ). docs/SIMULATOR.md,
  // "Sixth change" (0.81 ms, 1.4 ms, 28.9 ms), refitted the same way with the per-GEMM weight
  // stream ("Seventh change": 0.735 ms, 5.52 ms, 30.3 ms). The presets below start from the
  // knobs before these fits.
  EnginePreset v1 = vllm;
  v1.knobs.step_overhead_s = 0.735e-3;
  v1.knobs.request_overhead_s = 5.52e-3;
  v1.knobs.request_latency_s = 30.3e-3;
  // Per streamed token: measured, not fitted ("Thirtieth change"). The Scicom Llama-3.1-70B runs
  // (calibration half of the fifth batch; vllm bench serve --save-detailed) give each token's
  // arrival at the client; grouped into engine steps, the tokens of one step arrive 68.3 us apart
  // (median over the 20 runs, 54-76 us in each). It replaced the 136.85 us fitted with the other
  // front-end costs ("Eleventh change") by the registered rule (Test K2: calibration sum 20.69 ->
  // 20.31).
  v1.knobs.output_overhead_s = 68.3e-6;
  // Per scheduled sequence: read off the same traces' decode-only steps (steps that carry every
  // stream and no first token, at 10-200 users and 128-4,096-token prompts): the real step grows
  // by 31-43 us a sequence where the cost model's grew by 22.5 with 5 us here; 25 us is the least
  // sum of |ln(model/real)| over the 20 cells ("Thirtieth change", Test K3). Not adopted then (the
  // calibration sum rose); adopted after async scheduling by the registered rule of Test P1
  // (docs/SIMULATOR.md, "Thirty-third change": calibration sum 20.24 -> 17.51).
  v1.knobs.per_seq_overhead_s = 25e-6;
  // vLLM 0.8 to 0.13: the V1 engine's constants above (fitted before async scheduling was
  // modelled, on V1 points of 0.10.2, 0.23.0 and versions not stated) without async scheduling.
  EnginePreset v1_sync = v1;
  v1_sync.name = "vllm-0.13";
  v1_sync.description =
      "vLLM V1 0.8 to 0.13: as vllm without async scheduling (on by default since 0.14): a request "
      "that reaches the scheduler during a step joins the next one";
  // Async scheduling, on by default since vLLM 0.14.0 (release notes: "Async scheduling is now
  // enabled by default", PR #27614): the engine core forms the next step's batch while the GPU
  // runs the current one, so a request that arrives during a step waits for that step and the
  // next. Read off the Scicom vLLM 0.15 traces and adopted by a registered rule (docs/SIMULATOR.md,
  // "Thirty-second change": calibration sum 20.31 -> 20.24).
  v1.config.overlap_schedule = true;
  v1.description +=
      "; async scheduling (0.14 and later): the next step's batch is formed while the current step "
      "runs";
  v.push_back(v1);
  v.push_back(v1_sync);

  // vLLM 0.5.4 (V0 engine, mid-2024): the Python scheduler, sampler and detokeniser ran in the
  // engine loop between GPU steps (what vLLM 0.6's blog set out to remove), so every step carries
  // several CPU milliseconds; chunked prefill off, token budget = max_model_len.
  EnginePreset v0 = vllm;
  // V0 profiles too, but at max(max_model_len, 2048) tokens without chunked prefill, and the
  // sources of its validation points do not give their --max-model-len: the constant reserve.
  v0.profiled_memory = false;
  v0.name = "vllm-v0";
  v0.device_batch_defaults = false;  // V0: max_num_seqs 256, budget = max_model_len
  v0.description =
      "vLLM 0.5.4 (V0 engine, 2024): as vllm with the older per-step CPU overhead of the V0 "
      "loop, no chunked prefill, and prefill steps that run alone while decodes wait";
  v0.config.enable_chunked_prefill = false;
  // Without chunked prefill V0 schedules with Scheduler._schedule_default (vllm/core/scheduler.py):
  // as many whole prompts as fit first, and "Don't schedule decodes if prefills are scheduled": a
  // prefill step runs alone and the running requests wait for it (docs/SIMULATOR.md, "Eighteenth
  // change"); its budget there is max(max_model_len, 2048) (SchedulerConfig; "Nineteenth change").
  v0.config.mixed_batches = false;
  v0.config.max_num_batched_tokens = 0;  // step_token_budget: max(max_model_len, 2048)
  // Fitted on the vLLM 0.5/0.6 calibration points (scripts/fit_sim.py): step overhead and weight
  // bandwidth first; then, with the first prefill of a freshly started server modelled
  // (cold_start_s: every Lambda point is sent right after start-up), the cold cost, the FP8 (W8A8)
  // GEMM efficiency of vLLM 0.5/0.6's kernels and the front end together, on all 10. Once the
  // September runs had their own preset (vllm-v0.6 below), the step overhead alone was refitted on
  // the 3 vLLM 0.5.4 calibration points (--engine vllm-v0: 1.57 -> 1.76 ms).
  v0.knobs.step_overhead_s = 1.76e-3;
  v0.knobs.bandwidth_efficiency = 0.70;
  // That fit was of one flat weight-stream efficiency (before the GEMM-latency stream of
  // CostKnobs::weight_stream_efficiency existed): the V0 presets keep it, KV and weights alike.
  v0.knobs.weight_stream_efficiency = 0.70;
  v0.knobs.gemm_latency_s = 0;
  v0.knobs.request_overhead_s = 2.04e-3;
  v0.knobs.cold_start_s = 41.6e-3;
  // A cold cost that grows with the cold step (cold_start_step_factor) was fitted the same way
  // and went to 0 from every start (0.02-1.0): the calibration bursts want no such part.
  v0.knobs.cold_start_step_factor = 0;
  v0.knobs.w8a8_compute_efficiency = 0.476;
  v.push_back(v0);

  // vLLM 0.6.0 with --num-scheduler-steps 10 (multi-step scheduling): the scheduler and the output
  // processing run once per 10 decode steps instead of every step, which is what 0.6.0 changed to
  // cut the V0 loop's CPU time; multi-step did not combine with chunked prefill in 0.6.0. Tokens
  // stream in chunks of 10 (ITL ~10x TPOT, not modelled: no point uses ITL). Everything but the
  // step overhead is vllm-v0's; the step overhead alone was refitted on the 7 calibration points
  // that ran it (scripts/fit_sim.py --engine vllm-v0.6: 1.57 -> 1.03 ms).
  EnginePreset v06 = v0;
  v06.name = "vllm-v0.6";
  v06.description =
      "vLLM 0.6.0 with --num-scheduler-steps 10 (V0 engine, multi-step scheduling): as vllm-v0 "
      "with the per-step CPU overhead spread over 10 decode steps; no chunked prefill";
  v06.knobs.step_overhead_s = 1.03e-3;
  v.push_back(v06);

  EnginePreset sglang = vllm;
  sglang.profiled_memory = false;  // --mem-fraction-static: no profiling pass
  sglang.name = "sglang";
  sglang.device_batch_defaults = false;
  sglang.description =
      "SGLang defaults: mem_fraction_static ~0.88, chunked_prefill_size 8192, radix prefix "
      "cache, admission that reserves the running requests' expected tokens, retraction, "
      "prefill and decode in separate batches (16-bit GEMMs at 0.525 of peak, fitted on SGLang "
      "0.4.0 dense points; for MoE layers 54.7 us per step and routed-expert GEMMs at 0.068 of "
      "the dense rate, fitted on DeepSeek-R1 "
      "calibration points)";
  // mem_fraction_static: SGLang 0.4.x's default for one GPU (0.87 at tp 2, 0.85 at 4, 0.81 at 8,
  // 0.79 at 16; 0.5.x computes it from the GPU's memory, ~0.90 on an H200 at tp 8). Its KV pool
  // is that fraction of memory less the weights (model_runner.profile_max_num_token), with no
  // further reserve for activations: they live in the rest.
  sglang.knobs.gpu_memory_utilization = 0.88;
  sglang.knobs.activation_reserve_bytes = 0;
  // Fitted together on the 2 calibration points of the DeepSeek-R1 batch (InferenceX issue 870,
  // SGLang 0.5.7, 8xH200 TP8, c = 32 and 64; `scripts/fit_sim.py --engine sglang --knob
  // moe_layer_overhead_s=5e-5 --knob moe_expert_compute_factor=0.2 --rounds 4` -> 68.4 us,
  // 0.0684; docs/SIMULATOR.md "Second batch"). 68 us per MoE layer per step: the many small
  // kernels of a DeepSeek layer (routing, token permutation, MLA projections, all-reduces) that a
  // roofline of its bytes and FLOPs leaves out, 3.9 ms over 58 MoE layers. 0.068 of the dense
  // linear rate for the routed experts' GEMMs: tensor parallelism leaves each rank 256 of an
  // expert's 2,048 intermediate columns and a prompt gives each expert ~1/32 of its tokens, and
  // block-scaled FP8 GEMMs that small reach 14-119 TFLOP/s on an H100 (M = 16-128, N = 2,112,
  // K = 7,168: vllm-project/vllm#23280), 1-6% of the FP8 peak. Unvalidated for other MoE models.
  // Refitted (68 -> 54.7 us, the factor unchanged) once the preset ran SGLang's unmixed batches.
  // Its 16-bit GEMMs (prefill above all): fitted on the calibration points of the SGLang 0.4.0
  // dense batch (Llama-3.3-70B TP4 and Llama-3.1-405B TP8 in BF16 on H200; scripts/fit_sim.py
  // --engine sglang --knob compute_efficiency=0.75, with sglang_admission on; docs/SIMULATOR.md,
  // "Eighth change"): their light-load TTFT and their overloaded output rate (1,024-token prompts:
  // prefill is most of the work) both said prefill ran at ~0.7 of the vLLM points' rate. No dense
  // data of later SGLang versions exists in the set; the FP8 (W8A8) points do not use this knob.
  sglang.knobs.compute_efficiency = 0.525;
  sglang.knobs.moe_layer_overhead_s = 54.7e-6;
  sglang.knobs.moe_expert_compute_factor = 0.068;
  // No --max-running-requests: SGLang sizes its limit from the KV memory it has (at least 2,048
  // requests a scheduler; Engine::sglang_max_running_requests).
  sglang.config.max_num_seqs = 0;
  // SGLang does not put decode tokens into a prefill batch unless --enable-mixed-chunk is given
  // (server_args.py: enable_mixed_chunk = False); a prefill batch runs whenever one can be formed.
  sglang.config.mixed_batches = false;
  // SGLang admits a prompt only while it fits beside the running requests' expected growth
  // (EngineConfig::sglang_admission), not as soon as its prompt's KV is free as vLLM does.
  sglang.config.sglang_admission = true;
  // Its overlap scheduler (on by default since sgl-project/sglang PR #2067, 2024-11-18) is not
  // turned on: modelled as EngineConfig::overlap_schedule, it raised the calibration error sum
  // (docs/SIMULATOR.md, "Twenty-fourth change, not adopted"); `sim validate --knob
  // overlap_schedule=1` replays with it.
  v.push_back(sglang);

  // SGLang 0.4.x (December 2024 - February 2025), as vllm-v0/vllm-v0.6 are per vLLM version: the
  // same defaults, admission and 16-bit GEMM rate, with a cost per running request per step; the
  // two were fitted together on the 9 calibration points whose sources ran 0.4.x
  // (scripts/fit_sim.py --engine sglang-0.4 --knob compute_efficiency=0.525 --knob
  // per_seq_overhead_s=0.0001 --rounds 6 --grid 0.5,0.7,0.85,0.93,1.07,1.15,1.3 -> the GEMM
  // rate unchanged at 0.525, 48.9 us; docs/SIMULATOR.md, "Tenth change"). At the hundreds of
  // requests its overloaded runs held, 48.9 us each is the 10-20 ms a decode step took beyond the
  // model's kernels (70B at 8 requests/s: median gap 70.8 ms published). The points are assigned by
  // the version their source records, not by fit.
  EnginePreset sglang04 = sglang;
  sglang04.name = "sglang-0.4";
  sglang04.description =
      "SGLang 0.4.x (Dec 2024 - Feb 2025): as sglang, with mem_fraction_static by tp (0.88, "
      "0.87 from 2 GPUs, 0.85 from 4, 0.81 from 8), fitted costs per running request and per MoE "
      "layer per step, KV reads at 0.25 of the usual rate (fitted) and its own front-end "
      "latency";
  sglang04.knobs.per_seq_overhead_s = 48.9e-6;
  // Its mem_fraction_static follows the tensor-parallel size (server_args.py; 0.85 on the 4xH200
  // points, 0.81 on the 8xH200 ones, as their settings record). docs/SIMULATOR.md, "Twenty-fifth
  // change".
  sglang04.mem_fraction_by_tp = {{1, 0.88}, {2, 0.87}, {4, 0.85}, {8, 0.81}, {16, 0.79}};
  // 0.4.x ran without the overlap scheduler under --enable-dp-attention (server_args.py), should
  // it be turned on.
  sglang04.config.dp_attention_disables_overlap = true;
  // It also halved chunked_prefill_size there, per rank (EngineConfig::
  // dp_attention_halves_chunk_per_rank): not turned on, the calibration sum did not fall
  // (docs/SIMULATOR.md, "Twenty-sixth change, not adopted").
  // Its own front end (docs/SIMULATOR.md, "Fourteenth change"): a request crosses three processes
  // (tokenizer manager -> scheduler -> detokenizer -> tokenizer manager) before its first token is
  // streamed. Fitted on the preset's dense calibration TTFTs (scripts/fit_sim.py --engine
  // sglang-0.4 --metric TTFT --class dense --worst-weight 0 --rounds 4 --knob
  // request_latency_s=0.02 --knob request_overhead_s=0.00204): 54.7 ms of latency that holds up
  // nothing else, and no serial cost per request.
  sglang04.knobs.request_latency_s = 54.74e-3;
  sglang04.knobs.request_overhead_s = 0;
  // Its own cost per MoE layer per step (docs/SIMULATOR.md, "Fifteenth change"): 0.5.7's 54.7 us
  // left the preset's DeepSeek-V3 calibration points (SGLang 0.4.1, 8xH200, 1 and 8 requests/s)
  // 5x and 2x too fast per token. Fitted on those two alone (scripts/fit_sim.py --engine
  // sglang-0.4 --class moe --metric TPOT --worst-weight 0 --knob moe_layer_overhead_s=54.7e-6
  // --rounds 4 --grid 0.25,0.5,0.8,1.25,2,4): 1.37 ms, ~79 ms a step over DeepSeek's 58 MoE
  // layers before any batch-dependent work. Which kernels of 0.4.1 cost that was not read from
  // SGLang's source; the held-out 0.4.2/0.4.3 DeepSeek-R1 points come out up to 2.5x too slow
  // with it (too fast by up to 3.7x before): later 0.4.x releases were faster than 0.4.1. Dense
  // models have no MoE layer: unchanged.
  sglang04.knobs.moe_layer_overhead_s = 1.3675e-3;
  // And its routed experts' GEMM rate (docs/SIMULATOR.md, "Sixteenth change"), fitted next on the
  // same two points' TTFT with the layer cost above held (scripts/fit_sim.py --engine sglang-0.4
  // --class moe --metric TTFT --worst-weight 0 --knob moe_expert_compute_factor=0.068 --rounds 4
  // --grid 0.25,0.5,0.8,1.25,2,4): 0.0435 of the dense rate, against 0.5.7's 0.068. A fragile
  // fit: at 8 requests/s the run is overloaded and its TTFT swings with the prefill rate.
  sglang04.knobs.moe_expert_compute_factor = 0.04352;
  // Its decode attention reads the KV cache at a quarter of the rate the model gives other
  // engines (docs/SIMULATOR.md, "Twenty-seventh change"): fitted on the preset's dense calibration
  // TPOTs (scripts/fit_sim.py --engine sglang-0.4 --class dense --metric TPOT --knob
  // kv_read_factor=1 --rounds 4 -> 0.25), which came out up to 2x too fast where KV reads fill a
  // decode step (70B long-prompt bursts: median ITL -45/-48%) and not where they do not. Token-
  // granular KV pages (page_size 1) are the candidate cause, not checked against a kernel timing.
  sglang04.knobs.kv_read_factor = 0.25;
  v.push_back(sglang04);

  EnginePreset trt = vllm;
  trt.profiled_memory = false;
  trt.name = "trtllm";
  trt.device_batch_defaults = false;
  trt.description =
      "TensorRT-LLM (trtllm-serve) defaults: KV gets 0.9 of the memory left after weights, "
      "max_batch_size 2048, max_num_tokens 8192, GUARANTEED_NO_EVICT admission (a request is "
      "admitted only when KV for prompt + max_tokens is free)";
  trt.knobs.kv_fraction_of_free_memory = true;
  trt.config.max_num_seqs = 2048;
  trt.config.reserve_max_tokens = true;
  // Fitted on the 7 NIM calibration points (scripts/fit_sim.py --engine nim; the per-token and
  // per-sequence terms refitted when closed loops began at random phases of the loaded cycle,
  // docs/SIMULATOR.md "Twelfth change"); no trtllm-serve data, so the plain TensorRT-LLM preset
  // shares them.
  trt.knobs.request_overhead_s = 4.83e-3;
  trt.knobs.request_overhead_per_token_s = 4.508e-6;
  trt.knobs.per_seq_overhead_s = 0;
  // What the engine holds before the KV cache takes its 0.9 of the free memory: the activation
  // memory TensorRT sizes at build time from the maximum batch and token counts, and the
  // runtime's buffers ("Memory Usage of TensorRT-LLM"). Fitted on the same 7 NIM calibration
  // points, whose saturated ones (c = 100-250) are capacity-bound (docs/SIMULATOR.md,
  // "Twenty-third change"; scripts/fit_sim.py --engine nim --knob
  // activation_reserve_bytes=2.147483648e9 --rounds 4): 6.91 GB per GPU, against the 2 GiB guess.
  trt.knobs.activation_reserve_bytes = 6.914897e9;
  v.push_back(trt);

  EnginePreset nim = trt;
  nim.name = "nim";
  nim.description =
      "NVIDIA NIM for LLMs (TensorRT-LLM backend): as trtllm, and its FP8 profiles keep the KV "
      "cache in FP8";
  nim.fp8_kv_with_fp8_weights = true;
  v.push_back(nim);
  return v;
}

}  // namespace

EnginePreset EnginePreset::for_gpu(const GpuSpec& gpu, int tp) const {
  EnginePreset p = *this;
  for (const auto& [min_tp, fraction] : mem_fraction_by_tp) {
    if (tp >= min_tp) p.knobs.gpu_memory_utilization = fraction;
  }
  if (device_batch_defaults) {
    // vLLM compares torch's total device memory (H100 80GB: 79.2 GiB) with 70 GiB and the
    // device name with "a100" (a large token budget lowered A100 throughput, vLLM PR #17885).
    const bool large = gpu.memory_bytes >= 70 * kGiB && !names_a100(gpu);
    p.config.max_num_batched_tokens = large ? 8192 : 2048;
    p.config.max_num_seqs = large ? 1024 : 256;
  }
  p.knobs = knobs_for_engine(p, p.knobs, p.config);
  return p;
}

CostKnobs knobs_for_engine(const EnginePreset& p, CostKnobs k, const EngineConfig& c) {
  if (p.profiled_memory) {
    k.profile_tokens = c.max_num_batched_tokens;
    k.profile_seqs = c.max_num_seqs;
  }
  return k;
}

const std::vector<EnginePreset>& engine_presets() {
  static const std::vector<EnginePreset> kPresets = make_presets();
  return kPresets;
}

std::string engine_preset_names() {
  std::string s;
  for (const auto& p : engine_presets()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

Result<EnginePreset> find_engine_preset(std::string_view name) {
  for (const auto& p : engine_presets()) {
    if (p.name == name) return p;
  }
  return Error{"--engine '" + std::string(name) +
               "' is not known; accepted: " + engine_preset_names()};
}

Result<EnginePreset> find_engine_preset(std::string_view name, const GpuSpec& gpu, int tp) {
  auto p = find_engine_preset(name);
  if (!p.ok()) return p;
  return p->for_gpu(gpu, tp);
}

namespace {

// The knobs that take any number in a range (times, shares, rates, sizes), by field name.
std::map<std::string, double*> continuous_knobs(CostKnobs& k) {
  return {
      {"gpu_memory_utilization", &k.gpu_memory_utilization},
      {"activation_reserve_bytes", &k.activation_reserve_bytes},
      {"compute_efficiency", &k.compute_efficiency},
      {"attention_efficiency", &k.attention_efficiency},
      {"bandwidth_efficiency", &k.bandwidth_efficiency},
      {"weight_stream_efficiency", &k.weight_stream_efficiency},
      {"gemm_latency_s", &k.gemm_latency_s},
      {"w8a8_compute_efficiency", &k.w8a8_compute_efficiency},
      {"w8a8_bandwidth_efficiency", &k.w8a8_bandwidth_efficiency},
      {"interconnect_efficiency", &k.interconnect_efficiency},
      {"step_overhead_s", &k.step_overhead_s},
      {"per_seq_overhead_s", &k.per_seq_overhead_s},
      {"allreduce_latency_s", &k.allreduce_latency_s},
      {"request_overhead_s", &k.request_overhead_s},
      {"request_overhead_per_token_s", &k.request_overhead_per_token_s},
      {"request_latency_s", &k.request_latency_s},
      {"output_overhead_s", &k.output_overhead_s},
      {"kv_read_factor", &k.kv_read_factor},
      {"moe_layer_overhead_s", &k.moe_layer_overhead_s},
      {"moe_expert_compute_factor", &k.moe_expert_compute_factor},
      {"cold_start_s", &k.cold_start_s},
      {"cold_start_step_factor", &k.cold_start_step_factor},
      {"eager_layer_host_s", &k.eager_layer_host_s},
      {"host_cpu_factor", &k.host_cpu_factor},
      {"profile_overhead_bytes", &k.profile_overhead_bytes},
  };
}

}  // namespace

std::vector<std::string> continuous_knob_names() {
  CostKnobs k;
  std::vector<std::string> names;
  for (const auto& [name, _] : continuous_knobs(k)) names.push_back(name);
  return names;
}

Result<double> continuous_knob_value(const CostKnobs& knobs, const std::string& name) {
  CostKnobs k = knobs;
  const auto m = continuous_knobs(k);
  if (auto it = m.find(name); it != m.end()) return *it->second;
  std::string known;
  for (const auto& [n, _] : m) known += (known.empty() ? "" : ", ") + n;
  return Error{"'" + name + "' is not a knob that takes any number; accepted: " + known};
}

Status apply_knob_overrides(const KnobOverrides& o, EnginePreset& p) {
  CostKnobs& k = p.knobs;
  EngineConfig& c = p.config;
  const std::map<std::string, double*> doubles = continuous_knobs(k);
  // Switches of the engine config and the cost model: 0 or 1, nothing else.
  const std::map<std::string, bool*> switches = {
      {"enable_chunked_prefill", &c.enable_chunked_prefill},
      {"mixed_batches", &c.mixed_batches},
      {"enable_prefix_caching", &c.enable_prefix_caching},
      {"sglang_admission", &c.sglang_admission},
      {"overlap_schedule", &c.overlap_schedule},
      {"dp_attention_halves_chunk_per_rank", &c.dp_attention_halves_chunk_per_rank},
      {"dp_attention", &k.dp_attention},
      {"unified_kv_attention", &c.unified_kv_attention},
      {"outputs_before_setups", &c.outputs_before_setups},
  };
  for (const auto& [name, value] : o) {
    if (auto it = doubles.find(name); it != doubles.end()) {
      // Rates and shares divide a cost: above 0. Times, sizes and the rest: 0 or more.
      // (kv_read_factor 0 means the GPU's own.)
      const bool divides = name.find("efficiency") != std::string::npos ||
                           name == "moe_expert_compute_factor" || name == "gpu_memory_utilization";
      if (!std::isfinite(value) || value < 0 || (divides && value == 0)) {
        return Error{"knob '" + name + "' takes " +
                     (divides ? "a number above 0" : "a number of 0 or more")};
      }
      if (name == "gpu_memory_utilization" && value > 1) {
        return Error{
            "knob 'gpu_memory_utilization' takes a share of the memory, above 0 and at "
            "most 1"};
      }
      *it->second = value;
    } else if (auto sw = switches.find(name); sw != switches.end()) {
      if (value != 0 && value != 1) return Error{"knob '" + name + "' takes 0 or 1"};
      *sw->second = value == 1;
    } else if (name == "max_num_seqs") {
      if (value < 1 || value != std::floor(value)) {
        return Error{"knob 'max_num_seqs' takes a whole number of sequences, at least 1"};
      }
      c.max_num_seqs = static_cast<int64_t>(value);
    } else if (name == "max_num_batched_tokens") {
      if (value < 0 || value != std::floor(value)) {
        return Error{
            "knob 'max_num_batched_tokens' takes a whole number of tokens (0: max(max_model_len, "
            "2048), vLLM V0's)"};
      }
      c.max_num_batched_tokens = static_cast<int64_t>(value);
    } else if (name == "profile_tokens" || name == "profile_seqs") {
      if (value < 0 || value != std::floor(value)) {
        return Error{"knob '" + name + "' takes a whole number of tokens (0: unknown)"};
      }
      (name == "profile_tokens" ? k.profile_tokens : k.profile_seqs) = static_cast<int64_t>(value);
    } else if (name == "cuda_graph_max_batch") {
      if (value < -1 || value != static_cast<double>(static_cast<int>(value))) {
        return Error{
            "knob 'cuda_graph_max_batch' takes -1 (not modelled), 0 (graphs off) or the "
            "largest captured decode batch"};
      }
      k.cuda_graph_max_batch = static_cast<int>(value);
    } else if (name == "kv_cache_tokens") {
      if (value < 0 || value != std::floor(value)) {
        return Error{"knob 'kv_cache_tokens' takes a whole number of tokens (0: from memory)"};
      }
      k.kv_cache_tokens = static_cast<int64_t>(value);
    } else {
      std::string known;
      for (const auto& [n, _] : doubles) known += n + ", ";
      for (const auto& [n, _] : switches) known += n + ", ";
      return Error{"unknown knob '" + name + "'; accepted: " + known +
                   "max_num_seqs, max_num_batched_tokens, cuda_graph_max_batch, profile_tokens, "
                   "profile_seqs, kv_cache_tokens"};
    }
  }
  return Status::Ok();
}

Result<KnobOverrides> parse_knob_overrides(const std::vector<std::string>& items) {
  KnobOverrides out;
  for (const std::string& item : items) {
    const auto eq = item.find('=');
    const std::string number = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* end = nullptr;
    const double v = number.empty() ? NAN : std::strtod(number.c_str(), &end);
    if (eq == 0 || number.empty() || *end != '\0' || !std::isfinite(v)) {
      return Error{"--knob '" + item + "' must be NAME=NUMBER (e.g. step_overhead_s=0.001)"};
    }
    out[item.substr(0, eq)] = v;
  }
  // Names and values are checked on a copy of a preset: the error lists what is accepted.
  EnginePreset probe = engine_presets().front();
  if (Status s = apply_knob_overrides(out, probe); !s.ok()) return Error{"--knob: " + s.error()};
  return out;
}

}  // namespace tokperf::sim
