// The simulator's shared flags (--model, --model-config, --gpu, --gpu-spec, --dtype, --kv-dtype,
// --tp), declared once for every command that needs them.
#pragma once

#include "sim/deployment.h"

namespace CLI {
class App;
}

namespace tokperf::sim {

// `f` must outlive parsing; CLI11 writes into it.
void add_deployment_flags(CLI::App& sub, DeploymentFlags& f);

}  // namespace tokperf::sim
