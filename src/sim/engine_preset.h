// Engine presets: the defaults of real serving engines that change what a deployment can hold and
// how fast it answers (KV-cache dtype, memory fraction, batch and token limits, admission policy,
// per-request and per-step overheads). `--engine vllm|sglang|trtllm|nim` picks one; vllm is the
// default and equals CostKnobs{} / EngineConfig{}. Values and evidence: docs/SIMULATOR.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sim/cost_model.h"
#include "sim/engine.h"

namespace tokperf::sim {

struct EnginePreset {
  std::string name;
  std::string description;
  CostKnobs knobs;
  EngineConfig config;
  // KV-cache dtype for --kv-dtype auto, given the weight dtype and whether the GPU has FP8 math.
  // vLLM and SGLang keep the activation dtype; NIM's and TensorRT-LLM's FP8 profiles store FP8 KV.
  bool fp8_kv_with_fp8_weights = false;
};

const std::vector<EnginePreset>& engine_presets();
// The names accepted by --engine, comma-separated, for help and errors.
std::string engine_preset_names();
// Looks up a preset; the error names the value and what is accepted.
Result<EnginePreset> find_engine_preset(std::string_view name);

}  // namespace tokperf::sim
