// `tokperf sim run` (cli/sim_run_cmd.cc): bench's load flags against the simulated engine in
// virtual time. `tokperf sim serve`: the engine behind an OpenAI-compatible HTTP server in
// real time (sim/sim_server.h) until Ctrl-C, --max-seconds or --max-requests.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/sim_run_cmd.h"
#include "core/clock.h"
#include "metrics/stats.h"
#include "sim/deployment_cli.h"
#include "sim/engine_preset.h"
#include "sim/sim_server.h"

namespace tokperf {
namespace {

struct SimServeConfig {
  sim::DeploymentFlags deployment;
  sim::EngineConfig engine;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string served_model;
  double max_seconds = 0;
  int64_t max_requests = 0;
  bool timings = false;
  bool max_num_seqs_given = false;
  bool max_num_batched_tokens_given = false;
};

double percentile_ms(std::vector<int64_t> ns, double p) {
  std::vector<double> v(ns.size());
  std::transform(ns.begin(), ns.end(), v.begin(), [](int64_t x) { return ns_to_ms(x); });
  return percentile(std::move(v), p);
}

int serve_sim(const SimServeConfig& c) {
  if (c.port < 0 || c.port > 65535) {
    throw UsageError(
        fmt::format("--port {} is out of range; accepted: 0 (ephemeral) to 65535", c.port));
  }
  if (c.max_seconds < 0) throw UsageError("--max-seconds must be 0 (no limit) or more");
  if (c.max_requests < 0) throw UsageError("--max-requests must be 0 (no limit) or more");
  auto d = sim::resolve_deployment(c.deployment);
  if (!d.ok()) throw UsageError(d.error());
  sim::SimServerOptions o;
  o.deployment = std::move(d).value();
  auto found = sim::engine_preset(c.deployment, o.deployment.gpu, o.deployment.tp);
  if (!found.ok()) throw UsageError(found.error());
  const sim::EnginePreset preset = *found;
  // The preset's scheduler (sglang's admission and unmixed batches, vllm-v0's prefill-only
  // steps, ...) as sim run and bench's built-in target run it, with the flags on top.
  o.engine = sim::engine_config_with_flags(preset, c.engine, c.max_num_seqs_given,
                                           c.max_num_batched_tokens_given);
  o.engine.seed = c.engine.seed;
  o.knobs = sim::engine_knobs(preset, o.engine, c.deployment);
  o.host = c.host;
  o.port = static_cast<uint16_t>(c.port);
  o.served_model = c.served_model;
  o.emit_timings = c.timings;
  // The id the user typed (llama-2-7b) rather than the display name, as vLLM serves the model path.
  if (o.served_model.empty() && c.deployment.model_config.empty())
    o.served_model = c.deployment.model;
  auto server = sim::SimServer::create(o);
  if (!server.ok()) throw UsageError(server.error());
  sim::SimServer& s = **server;

  // SIGINT/SIGTERM are blocked before the loop thread starts (it inherits the mask) and taken here
  // with sigtimedwait, so the server thread is never interrupted and shutdown is orderly.
  sigset_t stop_signals, old_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &old_mask);
  Status st = s.start();
  if (!st.ok()) {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    throw UsageError(fmt::format("--host {} --port {}: {}", c.host, c.port, st.error()));
  }
  fmt::print("tokperf sim serve: {}\n", sim::describe_simulation(s));
  if (std::string k = sim::knob_note(c.deployment); !k.empty()) fmt::print("note: {}\n", k);
  fmt::print("listening on {} (model id '{}'); Ctrl-C stops\n", s.base_url(), s.served_model());
  std::fflush(stdout);

  const int64_t start_ns = mono_ns();
  const char* why = "interrupted";
  for (;;) {
    timespec wait{0, 50'000'000};
    if (sigtimedwait(&stop_signals, nullptr, &wait) >= 0) break;
    const auto& k = s.counters();
    if (c.max_requests > 0 && k.finished.load() + k.aborted.load() >= c.max_requests) {
      why = "--max-requests reached";
      break;
    }
    if (c.max_seconds > 0 && static_cast<double>(mono_ns() - start_ns) / 1e9 >= c.max_seconds) {
      why = "--max-seconds reached";
      break;
    }
  }
  s.stop();
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  const sim::SimServerReport r = s.report();
  const auto& k = s.counters();
  fmt::print(
      "stopped ({}): {} requests finished, {} aborted by clients, {} rejected; {} tokens; "
      "{} engine steps, {} preemptions\n",
      why, k.finished.load(), k.aborted.load(), k.rejected.load(), r.tokens_emitted,
      r.engine.steps_total, r.engine.preemptions_total);
  if (r.lag.steps > 0) {
    fmt::print(
        "server lag (step end vs deadline): p50 {:.3f} ms, p99 {:.3f} ms, max {:.3f} ms; "
        "{} re-bases\n",
        percentile_ms(r.lag.samples_ns, 50), percentile_ms(r.lag.samples_ns, 99),
        ns_to_ms(r.lag.max_ns), r.lag.rebases);
  }
  return kExitOk;
}

}  // namespace

void register_sim_command(CLI::App& app, CommandSet& cmds) {
  auto* sim_app = app.add_subcommand("sim", "The simulated inference engine");
  sim_app->require_subcommand(1);

  register_sim_run_command(*sim_app, cmds);
  register_sim_validate_command(*sim_app, cmds);
  register_sim_calibrate_command(*sim_app, cmds);

  auto scfg = std::make_shared<SimServeConfig>();
  auto* serve = sim_app->add_subcommand(
      "serve", "OpenAI-compatible HTTP server over the engine, streaming in real time");
  sim::add_deployment_flags(*serve, scfg->deployment);
  sim::add_engine_flag(*serve, scfg->deployment);
  serve->add_option("--host", scfg->host, "IPv4 address to listen on")->capture_default_str();
  serve->add_option("--port", scfg->port, "TCP port; 0 picks a free one (the URL is printed)")
      ->capture_default_str();
  serve->add_option("--served-model-name", scfg->served_model,
                    "model id in /v1/models and responses (default: the --model name)");
  sim::add_batch_limit_flags(*serve, scfg->engine);
  serve
      ->add_option("--eos-mean-tokens", scfg->engine.eos_mean_tokens,
                   "mean output length (exponential, capped by max_tokens) without ignore_eos")
      ->capture_default_str();
  serve->add_flag("--timings", scfg->timings,
                  "add llama.cpp-style per-request `timings` (prompt_ms, predicted_ms, and the "
                  "simulator's queue_ms) to the usage chunk");
  serve->add_flag("!--no-prefix-caching", scfg->engine.enable_prefix_caching,
                  "turn the prefix cache off");
  serve->add_option("--seed", scfg->engine.seed, "random seed (output lengths)")
      ->capture_default_str();
  serve->add_option("--max-seconds", scfg->max_seconds, "stop after this many seconds (0: never)")
      ->capture_default_str();
  serve
      ->add_option("--max-requests", scfg->max_requests,
                   "stop after this many generation requests ended (0: never)")
      ->capture_default_str();
  cmds.add(serve, [scfg, serve] {
    scfg->max_num_seqs_given = serve->count("--max-num-seqs") > 0;
    scfg->max_num_batched_tokens_given = serve->count("--max-num-batched-tokens") > 0;
    return serve_sim(*scfg);
  });
}

}  // namespace tokperf
