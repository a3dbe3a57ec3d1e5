// Engine presets: the defaults of real serving engines that change what a deployment can hold and
// how fast it answers (KV-cache dtype, memory fraction, batch and token limits, admission policy,
// per-request and per-step overheads). `--engine NAME` picks one (engine_preset_names() below);
// vllm is the default and equals CostKnobs{} / EngineConfig{} on a large GPU (see for_gpu below
// for the batch limits it takes elsewhere). Values and evidence: docs/SIMULATOR.md.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/gpu_catalog.h"

namespace tokperf::sim {

struct EnginePreset {
  std::string name;
  std::string description;
  CostKnobs knobs;
  EngineConfig config;
  // KV-cache dtype for --kv-dtype auto, given the weight dtype and whether the GPU has FP8 math.
  // vLLM and SGLang keep the activation dtype; NIM's and TensorRT-LLM's FP8 profiles store FP8 KV.
  bool fp8_kv_with_fp8_weights = false;
  // vLLM V1's OpenAI server picks max_num_batched_tokens and max_num_seqs by device when they are
  // not given (EngineArgs.get_batch_defaults): 8192 and 1024 on a GPU with at least 70 GiB that
  // is not an A100, 2048 and 256 on every other GPU (A100, L40S, RTX 4090, ...).
  bool device_batch_defaults = false;
  // vLLM V1 sizes its KV cache after one profiling forward of max_num_batched_tokens tokens and a
  // sampler pass over max_num_seqs sequences: the memory it keeps back follows those limits
  // (CostKnobs::profile_tokens; checked against vLLM's startup logs, docs/SIMULATOR.md "KV-cache
  // capacity"). The other presets keep the constant activation_reserve_bytes.
  bool profiled_memory = false;
  // Engines that set their memory fraction from the tensor-parallel size when it is not given
  // (SGLang 0.4.x's mem_fraction_static): {smallest tp, fraction} in rising tp order; the last
  // entry whose tp the deployment reaches replaces knobs.gpu_memory_utilization. Empty: the knob.
  std::vector<std::pair<int, double>> mem_fraction_by_tp;

  // This preset as its engine starts on `tp` GPUs of type `gpu`: `config` with the
  // device-dependent batch limits applied (unchanged for presets without them), the memory
  // fraction for `tp` (mem_fraction_by_tp), and for a profiled_memory preset the knobs'
  // profiling shape taken from the batch limits.
  EnginePreset for_gpu(const GpuSpec& gpu, int tp) const;
};

// For a profiled_memory preset, the knobs' profiling shape from the engine settings the run
// really uses (after --max-num-batched-tokens / --max-num-seqs); others unchanged.
CostKnobs knobs_for_engine(const EnginePreset& p, CostKnobs k, const EngineConfig& c);

const std::vector<EnginePreset>& engine_presets();
// The names accepted by --engine, comma-separated, for help and errors.
std::string engine_preset_names();
// Looks up a preset; the error names the value and what is accepted.
Result<EnginePreset> find_engine_preset(std::string_view name);
// The same, as the engine starts on `tp` GPUs of type `gpu` (EnginePreset::for_gpu). Callers
// that simulate a deployment use this one.
Result<EnginePreset> find_engine_preset(std::string_view name, const GpuSpec& gpu, int tp);

// Knob values that replace a preset's, by name (CostKnobs/EngineConfig field names: `--knob` of
// sim validate for fitting on the calibration set, of sim run/serve and estimate for what-ifs);
// an unknown name or a value a knob does not take is an error that lists what is accepted.
using KnobOverrides = std::map<std::string, double>;
Status apply_knob_overrides(const KnobOverrides& o, EnginePreset& p);
// The knobs that take any number in a range (CostKnobs fields: times, shares, rates, sizes), the
// ones a fit can move (sim calibrate, scripts/fit_sim.py); the switches and whole-number limits
// are not among them.
std::vector<std::string> continuous_knob_names();
// One of those knobs' value in `k`; the error names the knob and lists the accepted names.
Result<double> continuous_knob_value(const CostKnobs& k, const std::string& name);
// "NAME=NUMBER" items (repeatable --knob), checked by name and value.
Result<KnobOverrides> parse_knob_overrides(const std::vector<std::string>& items);

}  // namespace tokperf::sim
