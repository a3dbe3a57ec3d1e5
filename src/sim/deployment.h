// Turns the flags every simulator command shares (--model/--model-config, --gpu/--gpu-spec,
// --dtype, --kv-dtype, --tp) into a validated Deployment.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "sim/cost_model.h"
#include "sim/engine_preset.h"

namespace tokperf::sim {

struct DeploymentFlags {
  std::string model = "llama-2-7b";
  std::string model_config;  // path to a Hugging Face config.json; overrides --model
  // The text of such a config (a validation point's `model_config`); overrides both.
  std::string model_config_text;
  std::string gpu = "a100-80g";
  std::string gpu_spec;  // path to a GPU spec JSON; overrides --gpu
  std::string dtype = "fp16";
  std::string kv_dtype = "auto";  // auto: the 16-bit type of the weights (fp16 unless bf16)
  int tp = 1;
  bool dp_attention = false;    // --dp-attention: SGLang's data-parallel attention (needs tp > 1)
  std::string engine = "vllm";  // engine preset (sim/engine_preset.h): vllm, sglang, trtllm, nim
  // --cuda-graph-max-batch: -1 keeps the preset's (CostKnobs::cuda_graph_max_batch), 0 is eager
  // everywhere (--enforce-eager, --disable-cuda-graph), N > 0 captures decode batches up to N.
  int cuda_graph_max_batch = -1;
  // --kv-cache-tokens: the KV cache the engine reported at start-up (CostKnobs::kv_cache_tokens);
  // 0 computes it from memory.
  int64_t kv_cache_tokens = 0;
  // --frontend-us-per-token: the front end's time per streamed token of each request, in
  // microseconds (CostKnobs::output_overhead_s); negative keeps the preset's.
  double frontend_us_per_token = -1;
  // --frontend-ms-per-request: the front end's serial time to set each request up, in
  // milliseconds (CostKnobs::request_overhead_s); negative keeps the preset's.
  double frontend_ms_per_request = -1;
  // --max-model-len: the context length the engine serves (vLLM --max-model-len, SGLang
  // --context-length); it replaces the model's max_position_embeddings wherever an engine sizes
  // something by it (vLLM V0's token budget, SGLang's request pool, the simulated server's
  // limit). 0 keeps the model's.
  int64_t max_model_len = 0;
  // --knob NAME=VALUE (repeatable): preset knobs replaced for a what-if (KnobOverrides names);
  // the --cuda-graph-max-batch, --kv-cache-tokens and --frontend-* flags apply on top.
  std::vector<std::string> knobs;
  // --calibration FILE: what `sim calibrate --out FILE` wrote; its fitted knobs replace the
  // preset's before --knob applies (empty: none).
  std::string calibration;
};

// A preset's knobs for the engine settings a run really uses (its profiling shape follows
// --max-num-batched-tokens / --max-num-seqs: knobs_for_engine) with the flags that change knobs
// (--cuda-graph-max-batch) on top.
CostKnobs engine_knobs(const EnginePreset& p, const EngineConfig& c, const DeploymentFlags& f);

// The scheduler a command runs (sim run, sim serve): the preset's EngineConfig, every switch kept
// (chunked prefill, mixed batches, admission, overlap, ...), with the user's engine flags on top:
// --max-num-seqs / --max-num-batched-tokens where given, --eos-mean-tokens and the prefix cache
// switch always. The seed stays the preset's (each command seeds its own).
EngineConfig engine_config_with_flags(const EnginePreset& p, const EngineConfig& flags,
                                      bool max_num_seqs_given, bool max_num_batched_tokens_given);

// Errors name the flag, the value and what is accepted.
Result<Deployment> resolve_deployment(const DeploymentFlags& f);

// The --engine preset as it starts on `tp` GPUs of type `gpu` (find_engine_preset) with the
// --knob overrides applied. Every command that simulates a deployment takes its preset here.
Result<EnginePreset> engine_preset(const DeploymentFlags& f, const GpuSpec& gpu, int tp);

// "" without --knob and --calibration; else a note (without "note: ") saying which knobs replace
// the preset's (for a calibration: how many levels it was fitted on, its own check's errors, and
// whether it was fitted for another deployment) and that the held-out accuracy figures describe
// the presets as shipped.
std::string knob_note(const DeploymentFlags& f);

}  // namespace tokperf::sim
