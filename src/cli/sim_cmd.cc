// `tokperf sim run`: a closed-loop workload against the simulated engine in virtual time, with a
// small per-run table. `tokperf sim serve` is registered but arrives with the HTTP front.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "cli/app.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "sim/deployment_cli.h"
#include "sim/offline_runner.h"

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

  auto* serve = sim_app->add_subcommand(
      "serve", "OpenAI-compatible HTTP server over the engine (not built yet: issue 4 item 4)");
  cmds.add(serve, [] {
    fmt::print(stderr,
               "tokperf: 'sim serve' arrives with the simulator's HTTP front (issue 4, item 4); "
               "use 'tokperf sim run' for offline runs meanwhile\n");
    return kExitFailure;
  });
}

}  // namespace tokperf
