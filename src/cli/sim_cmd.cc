// `tokperf sim run`: a closed-loop workload against the simulated engine in virtual time, with a
// small per-run table. `tokperf sim serve`: the engine behind an OpenAI-compatible HTTP server in
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
#include "core/clock.h"
#include "sim/deployment_cli.h"
#include "sim/offline_runner.h"
#include "sim/sim_server.h"

namespace tokperf {
namespace {

struct SimRunConfig {
  sim::DeploymentFlags deployment;
  sim::OfflineWorkload workload;
  sim::EngineConfig engine;
};

// Linear interpolation between closest ranks (numpy's default). Private stop-gap until the shared
// statistics module lands.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

int run_sim(const SimRunConfig& c) {
  auto d = sim::resolve_deployment(c.deployment);
  if (!d.ok()) throw UsageError(d.error());
  const sim::CostModel cost(std::move(d).value(), sim::CostKnobs{});
  if (!cost.fits()) {
    throw UsageError(fmt::format(
        "{} in {} needs {:.1f} GB of weights per GPU; {} x {} cannot hold it (try --tp or --dtype)",
        cost.deployment().model.name, sim::dtype_name(cost.deployment().weight_dtype),
        cost.weight_bytes_per_gpu() / 1e9, cost.deployment().tp, cost.deployment().gpu.name));
  }
  auto run = sim::run_offline(cost, c.engine, c.workload);
  if (!run.ok()) throw UsageError(run.error());

  std::vector<double> ttft, tpot, itl;
  int64_t ok = 0, failed = 0, tokens = 0;
  int64_t first_send = -1, last_end = 0;
  for (const auto& t : run->timelines) {
    if (t.phase != Phase::kMeasure) continue;
    if (!t.ok() || t.token_events.empty()) {
      ++failed;
      continue;
    }
    ++ok;
    const auto& ev = t.token_events;
    tokens += static_cast<int64_t>(ev.size());
    if (first_send < 0 || t.send_ns < first_send) first_send = t.send_ns;
    last_end = std::max(last_end, t.end_ns);
    ttft.push_back(ns_to_ms(ev.front().t_ns - t.send_ns));
    if (ev.size() >= 2) {
      tpot.push_back(ns_to_ms(ev.back().t_ns - ev.front().t_ns) /
                     static_cast<double>(ev.size() - 1));
    }
    for (size_t i = 1; i < ev.size(); ++i) itl.push_back(ns_to_ms(ev[i].t_ns - ev[i - 1].t_ns));
  }
  const double span_s = first_send >= 0 ? static_cast<double>(last_end - first_send) / 1e9 : 0;
  const auto& dep = cost.deployment();
  fmt::print("simulated: {} on {} x {}, weights {}, KV {}; {} in / {} out tokens, virtual time\n",
             dep.model.name, dep.tp, dep.gpu.name, sim::dtype_name(dep.weight_dtype),
             sim::dtype_name(dep.kv_dtype), c.workload.prompt_tokens, c.workload.output_tokens);
  fmt::print("{:>11} | {:>8} | {:>9} | {:>9} | {:>9} | {:>9} | {:>9} | {:>9} | {:>10}\n",
             "concurrency", "requests", "TTFT P50", "TTFT P95", "TPOT P50", "TPOT P95", "ITL P50",
             "ITL P95", "tok/s");
  fmt::print(
      "{:>11} | {:>8} | {:>9.1f} | {:>9.1f} | {:>9.2f} | {:>9.2f} | {:>9.2f} | {:>9.2f} | "
      "{:>10.1f}\n",
      c.workload.concurrency, ok, percentile(ttft, 50), percentile(ttft, 95), percentile(tpot, 50),
      percentile(tpot, 95), percentile(itl, 50), percentile(itl, 95),
      span_s > 0 ? static_cast<double>(tokens) / span_s : 0.0);
  fmt::print("(ms; {} failed; {} preemptions; KV cache {} blocks of {} tokens; {} engine steps)\n",
             failed, run->engine.preemptions_total, run->engine.kv_blocks_total,
             c.engine.block_size, run->engine.steps_total);
  return failed > 0 && ok == 0 ? kExitFailure : kExitOk;
}

struct SimServeConfig {
  sim::DeploymentFlags deployment;
  sim::EngineConfig engine;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string served_model;
  double max_seconds = 0;
  int64_t max_requests = 0;
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
  o.engine = c.engine;
  o.host = c.host;
  o.port = static_cast<uint16_t>(c.port);
  o.served_model = c.served_model;
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

  auto cfg = std::make_shared<SimRunConfig>();
  auto* run = sim_app->add_subcommand("run", "Run a closed-loop workload in virtual time");
  sim::add_deployment_flags(*run, cfg->deployment);
  auto& w = cfg->workload;
  run->add_option("--concurrency", w.concurrency, "concurrent users (closed loop)")
      ->capture_default_str();
  run->add_option("--requests", w.requests, "measured requests")->capture_default_str();
  run->add_option("--warmup", w.warmup, "warm-up requests before measuring")->capture_default_str();
  run->add_option("--input-tokens", w.prompt_tokens, "prompt tokens per request")
      ->capture_default_str();
  run->add_option("--output-tokens", w.output_tokens, "output tokens per request (ignore_eos)")
      ->capture_default_str();
  run->add_option("--seed", cfg->engine.seed, "random seed")->capture_default_str();
  run->add_option("--max-num-seqs", cfg->engine.max_num_seqs, "engine batch limit")
      ->capture_default_str();
  run->add_option("--max-num-batched-tokens", cfg->engine.max_num_batched_tokens,
                  "engine per-step token budget")
      ->capture_default_str();
  cmds.add(run, [cfg] { return run_sim(*cfg); });

  auto scfg = std::make_shared<SimServeConfig>();
  auto* serve = sim_app->add_subcommand(
      "serve", "OpenAI-compatible HTTP server over the engine, streaming in real time");
  sim::add_deployment_flags(*serve, scfg->deployment);
  serve->add_option("--host", scfg->host, "IPv4 address to listen on")->capture_default_str();
  serve->add_option("--port", scfg->port, "TCP port; 0 picks a free one (the URL is printed)")
      ->capture_default_str();
  serve->add_option("--served-model-name", scfg->served_model,
                    "model id in /v1/models and responses (default: the --model name)");
  serve->add_option("--max-num-seqs", scfg->engine.max_num_seqs, "engine batch limit")
      ->capture_default_str();
  serve
      ->add_option("--max-num-batched-tokens", scfg->engine.max_num_batched_tokens,
                   "engine per-step token budget")
      ->capture_default_str();
  serve
      ->add_option("--eos-mean-tokens", scfg->engine.eos_mean_tokens,
                   "mean output length (exponential, capped by max_tokens) without ignore_eos")
      ->capture_default_str();
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
  cmds.add(serve, [scfg] { return serve_sim(*scfg); });
}

}  // namespace tokperf
