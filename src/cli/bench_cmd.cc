// `tokperf bench`: load (closed or open loop, sweeps, traces) against an OpenAI-compatible
// streaming endpoint. Flags -> BenchConfig (validated once) -> probe the server -> build the prompt
// -> run -> report.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <memory>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/bench_output.h"
#include "cli/commands.h"
#include "cli/load_flags.h"
#include "cli/output_flags.h"
#include "cli/shard_flags.h"
#include "cli/target_flags.h"
#include "cli/workload_flags.h"
#include "core/units.h"
#include "load/loop_split.h"
#include "sim/deployment_cli.h"
#include "sim/sim_server.h"
#include "sim/validation.h"

namespace tokperf {
namespace {

struct BenchFlags {
  TargetFlags target;
  LoadFlags load;
  WorkloadFlags workload;
  OutputFlags output;
  ShardFlags shard;
  bool out_given = false;
  bool no_progress = false;
  sim::DeploymentFlags sim;  // the built-in simulated target, used when --url is absent
  bool sim_flags_given = false;
  std::vector<std::string> server_metrics;  // --server-metrics [URL...]
  bool server_metrics_given = false;
  std::string server_metrics_interval = "1s";
  int metrics_port = -1;
  int threads = 0;             // --threads
  bool threads_given = false;  // else default_loop_count()
};

// --threads: validated, defaulted to the machine, and capped by what the levels can share.
void apply_threads_flag(const BenchFlags& f, BenchConfig& config, std::vector<std::string>& notes) {
  if (f.threads_given && (f.threads < 1 || f.threads > kMaxLoops)) {
    throw UsageError(
        fmt::format("--threads {} is out of range; accepted: 1 to {} event loops "
                    "(default: the machine's hardware threads, at most {})",
                    f.threads, kMaxLoops, kMaxDefaultLoops));
  }
  const int requested = f.threads_given ? f.threads : default_loop_count();
  config.load.threads = run_loop_count(config.load, requested);
  if (f.threads_given && config.load.threads < requested) {
    notes.push_back(
        fmt::format("--threads {}: {} event loop{} used, as many as the largest level "
                    "can share (slots, arrivals or --max-concurrency)",
                    requested, config.load.threads, config.load.threads == 1 ? "" : "s"));
  }
}

// Each stream holds a socket, two with the built-in simulated target (its server runs in this
// process): say before the run when the largest level needs more than the descriptor limit, whose
// overflow would otherwise show only as connect errors ("Too many open files"). Open-loop levels
// without --max-concurrency have no known peak and are not judged.
void note_descriptor_limit(const BenchConfig& config, bool in_process_server,
                           std::vector<std::string>& notes) {
  double peak = 0;
  for (const LevelSpec& l : config.load.plan.levels) {
    if (l.mode == LoadMode::kConcurrency) {
      peak = std::max({peak, l.start, l.end});
    } else if (config.load.plan.max_concurrency > 0) {
      peak = std::max(peak, static_cast<double>(config.load.plan.max_concurrency));
    }
  }
  const int shards = std::max(1, config.shard.count);
  const auto streams = static_cast<uint64_t>(std::ceil(peak / shards));
  const uint64_t needed = streams * (in_process_server ? 2 : 1) + 64;  // + files, loops, stdio
  rlimit rl{};
  if (streams == 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
      needed <= rl.rlim_cur) {
    return;
  }
  notes.push_back(fmt::format(
      "{} concurrent streams need about {} file descriptors{}; this process may open {} (ulimit "
      "-n, hard limit {}): connections past it will fail with 'Too many open files'",
      streams, needed, in_process_server ? " (client and the built-in server's side)" : "",
      rl.rlim_cur,
      rl.rlim_max == RLIM_INFINITY ? std::string("unlimited") : std::to_string(rl.rlim_max)));
  fmt::print(stderr, "tokperf: warning: {}\n", notes.back());  // before the run, not only after
}

void apply_server_metrics_flags(const BenchFlags& f, BenchConfig& config) {
  config.server_metrics = f.server_metrics_given;
  for (const auto& u : f.server_metrics) {
    if (u.empty()) continue;  // CLI11's value for a bare --server-metrics
    if (!u.starts_with("http://") && !u.starts_with("https://")) {
      throw UsageError(
          fmt::format("--server-metrics '{}' is not a URL; accepted: http(s)://host:port"
                      "/metrics, several for several replicas, or none for the "
                      "target's own /metrics",
                      u));
    }
    config.server_metrics_urls.push_back(u);
  }
  auto interval = parse_duration_ns(f.server_metrics_interval, "s");
  if (!interval || *interval < 10'000'000) {
    throw UsageError(
        fmt::format("--server-metrics-interval '{}': expected a duration of at least "
                    "10ms, e.g. 1s or 250ms",
                    f.server_metrics_interval));
  }
  config.server_metrics_interval_ns = *interval;
  if (f.metrics_port < -1 || f.metrics_port > 65535) {
    throw UsageError(
        fmt::format("--metrics-port {} is out of range; accepted: 0 (ephemeral) to "
                    "65535",
                    f.metrics_port));
  }
  config.metrics_port = f.metrics_port;
}

int run_bench(BenchFlags& flags) {
  // Without --url: the simulated engine in-process on an ephemeral loopback port, measured through
  // the same HTTP path as a real server (docs/SIMULATOR.md).
  std::unique_ptr<sim::SimServer> simulated;
  if (flags.target.url.empty()) {
    auto s = sim::start_sim_target(flags.sim, flags.target.model);
    if (!s) throw UsageError(s.error());
    simulated = std::move(s).value();
    flags.target.url = simulated->base_url();
    fmt::print(stderr,
               "tokperf: no --url, so benchmarking the built-in simulated engine at {}: {} "
               "(repeated prompts hit its prefix cache, as on vLLM; --unique-prompts avoids it)\n",
               flags.target.url, sim::describe_simulation(*simulated));
    fmt::print(stderr, "tokperf: simulated {}\n",
               sim::held_out_accuracy_line(simulated->cost().deployment(), flags.sim.engine));
    const LoadFlags& l = flags.load;
    if (l.concurrency.empty() && !l.sweep && l.request_rate.empty() && l.ramp.empty() &&
        l.trace.empty() && l.requests.empty() && l.duration.empty() &&
        flags.workload.dataset.empty() && flags.workload.dataset_name.empty()) {
      // The out-of-the-box run: the curve, not one point, in about a minute.
      flags.load.sweep = true;
      flags.load.duration = "6s";
      fmt::print(stderr,
                 "tokperf: default run: closed-loop sweep over concurrency 1,4,8,16,32,64, 6 s per "
                 "level (choose your own with --concurrency, --request-rate, --requests, "
                 "--duration)\n");
    }
  } else if (flags.sim_flags_given) {
    throw UsageError(
        "--sim-model, --model-config, --gpu, --gpu-spec, --dtype, --kv-dtype, --tp and "
        "--dp-attention describe the simulated target; they cannot be combined with --url");
  }
  BenchConfig config;
  apply_target_flags(flags.target, config);
  config.load = make_load_config(flags.load);
  apply_workload_flags(flags.workload, prompt_flag_text(flags.target), flags.load, config);
  check_sessions_api(config);  // --api auto is checked once the probe has chosen
  config.slo = make_slo(flags.load);
  config.load.progress = !flags.no_progress && !flags.output.json && isatty(STDERR_FILENO);
  apply_output_flags(flags.output, config);
  apply_shard_flags(flags.shard, process_env(), flags.out_given, config);
  apply_server_metrics_flags(flags, config);
  if (simulated) {
    config.deployment = sim::deployment_json(flags.sim);
  }
  std::vector<std::string> notes;
  apply_threads_flag(flags, config, notes);
  note_descriptor_limit(config, simulated != nullptr, notes);
  auto ready = prepare_target(config, notes);
  if (!ready) {
    fmt::print(stderr, "tokperf: {}\n", ready.error());
    return kExitUnreachable;
  }
  return run_bench_load(config, notes, flags.output.json);
}

}  // namespace

void register_bench_command(CLI::App& app, CommandSet& cmds) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Measure TTFT, TPOT, ITL and E2E of a streaming endpoint under load");
  add_target_flags(sub, flags->target);
  add_load_flags(sub, flags->load);
  add_workload_flags(sub, flags->workload);
  auto* out = "Output";
  add_output_flags(sub, flags->output);
  sub->add_flag("--no-progress", flags->no_progress, "No live progress line")->group(out);
  add_shard_flags(sub, flags->shard);
  auto* sm = "Server metrics";
  sub->add_option("--server-metrics", flags->server_metrics,
                  "Scrape the engine's Prometheus /metrics while measuring (on its own thread) and "
                  "decompose TTFT per level; no URL: the target's /metrics; several URLs: "
                  "replicas")
      ->expected(0, -1)
      ->group(sm);
  sub->add_option("--server-metrics-interval", flags->server_metrics_interval, "Scrape interval")
      ->capture_default_str()
      ->group(sm);
  sub->add_option("--metrics-port", flags->metrics_port,
                  "Expose tokperf's own live metrics (Prometheus text) on 127.0.0.1:PORT/metrics "
                  "during the run; 0 picks a free port")
      ->group(sm);
  sub->add_option("--threads", flags->threads,
                  fmt::format("Event loops (threads) carrying the streams, each with its own "
                              "connections and its share of every level (default: the machine's "
                              "hardware threads, at most {}; never more than a level's slots or "
                              "arrivals); 1: one loop",
                              kMaxDefaultLoops))
      ->group("Load");
  sim::add_deployment_flags(*sub, flags->sim, "--sim-model", "Simulated target (without --url)");
  cmds.add(sub, [flags, sub] {
    flags->sim_flags_given = sim::deployment_flags_given(*sub, "--sim-model");
    flags->server_metrics_given = sub->count("--server-metrics") > 0;
    flags->threads_given = sub->count("--threads") > 0;
    flags->out_given = sub->count("--out") > 0;
    return run_bench(*flags);
  });
}

}  // namespace tokperf
