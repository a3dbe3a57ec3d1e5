// `tokperf estimate`: memory, KV capacity, roofline bounds and expected latencies for one model on
// one GPU setup, without running anything. Logic: sim/estimate.h.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "sim/deployment_cli.h"
#include "sim/engine_preset.h"
#include "sim/estimate.h"

namespace tokperf {
namespace {

struct EstimateConfig {
  sim::DeploymentFlags deployment;
  sim::EstimateRequest request;
  bool json = false;
};

int run_estimate(const EstimateConfig& c) {
  auto d = sim::resolve_deployment(c.deployment);
  if (!d.ok()) throw UsageError(d.error());
  if (c.request.prompt_tokens < 1 || c.request.output_tokens < 1) {
    throw UsageError("--prompt-tokens and --output-tokens must be >= 1");
  }
  auto found = sim::engine_preset(c.deployment, d->gpu, d->tp);
  if (!found.ok()) throw UsageError(found.error());
  const sim::EnginePreset preset = *found;
  sim::EstimateRequest req = c.request;
  req.max_num_batched_tokens = sim::step_token_budget(preset.config, d->model);
  req.engine = c.deployment.engine;
  const sim::CostModel cost(std::move(d).value(),
                            sim::engine_knobs(preset, preset.config, c.deployment));
  const sim::Estimate e = sim::compute_estimate(cost, req);
  if (c.json) {
    fmt::print("{}\n", sim::estimate_to_json(e, cost, req).dump(2));
  } else {
    fmt::print("{}", sim::format_estimate_text(e, cost, req));
  }
  if (std::string k = sim::knob_note(c.deployment); !k.empty()) {
    fmt::print(c.json ? stderr : stdout, "note: {}\n", k);
  }
  if (preset.config.unified_kv_attention) {
    fmt::print(c.json ? stderr : stdout,
               "note: unified_kv_attention is a scheduler's matter: these figures are for one "
               "request alone, attending over its own tokens; sim run and sim serve add the cells "
               "the other slots hold\n");
  }
  return kExitOk;
}

}  // namespace

void register_estimate_command(CLI::App& app, CommandSet& cmds) {
  auto cfg = std::make_shared<EstimateConfig>();
  auto* sub = app.add_subcommand(
      "estimate", "Roofline arithmetic: weight memory, KV capacity, prefill/decode bounds");
  sim::add_deployment_flags(*sub, cfg->deployment);
  sim::add_engine_flag(*sub, cfg->deployment);
  sub->add_option("--prompt-tokens", cfg->request.prompt_tokens, "prompt length")
      ->capture_default_str();
  sub->add_option("--output-tokens", cfg->request.output_tokens, "output length")
      ->capture_default_str();
  sub->add_option("--context", cfg->request.context_tokens,
                  "context per sequence for the capacity in sequences (0: prompt + output)")
      ->capture_default_str();
  sub->add_flag("--json", cfg->json, "print JSON instead of text");
  cmds.add(sub, [cfg] { return run_estimate(*cfg); });
}

}  // namespace tokperf
