// The simulator's shared flags (--model, --model-config, --gpu, --gpu-spec, --dtype, --kv-dtype,
// --tp), declared once for every command that needs them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/deployment.h"

namespace CLI {
class App;
}

namespace tokperf::sim {

struct EngineConfig;

// `f` must outlive parsing; CLI11 writes into it. `model_flag` names the model option: "--model"
// for the simulator's own commands; bench, whose --model is the served model id, passes
// "--sim-model". A non-empty `group` puts the flags under that heading in --help.
void add_deployment_flags(CLI::App& sub, DeploymentFlags& f,
                          const std::string& model_flag = "--model", const std::string& group = "");

// --engine NAME (engine_preset_names()): the serving engine whose defaults and overheads apply
// (sim/engine_preset.h), and the engine's own settings that go with it (--cuda-graph-max-batch,
// --kv-cache-tokens, --frontend-us-per-token, --frontend-ms-per-request, --max-model-len).
// Separate from the deployment flags: bench's built-in target has none.
void add_engine_flag(CLI::App& sub, DeploymentFlags& f, const std::string& group = "");

// --max-num-seqs and --max-num-batched-tokens, written into `engine` (which must outlive parsing).
// Whether each was given is the caller's to read (`sub.count(...)` after parsing): the --engine
// preset's limits for the GPU apply to the ones that were not.
void add_batch_limit_flags(CLI::App& sub, EngineConfig& engine, const std::string& group = "");

// True when any of the flags above was given on the command line (after parsing).
bool deployment_flags_given(const CLI::App& sub, const std::string& model_flag = "--model");
// The simulated deployment as summary.json's config.deployment records it (docs/summary-schema.md).
nlohmann::json deployment_json(const DeploymentFlags& f);

}  // namespace tokperf::sim
