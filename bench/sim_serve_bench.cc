// Can `tokperf sim serve` carry thousands of concurrent streams on one core in real time? N
// streams from tokperf's own BenchRunner (all sent at once, ignore_eos) against an in-process
// SimServer whose engine lets every stream run at once (max_num_seqs = N). Reports the server's own
// lag (how late each step's events went out versus the step's deadline), the time spent writing one
// step's chunks, the server loop's CPU, and what the client measured. One JSON object per N.
//
//   sim_serve_bench --streams 1000,4000 --model llama-3.1-8b --gpu h200 --output-tokens 128
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "client/request_builder.h"
#include "core/clock.h"
#include "load/bench_runner.h"
#include "metrics/stats.h"
#include "sim/deployment_cli.h"
#include "sim/sim_server.h"
#include "workload/prompt.h"

using namespace tokperf;

namespace {

struct Flags {
  std::vector<int> streams{1000, 4000};
  sim::DeploymentFlags deployment;
  int64_t input_tokens = 32;
  int64_t output_tokens = 128;
};

std::vector<double> to_ms(const std::vector<int64_t>& ns) {
  std::vector<double> v;
  v.reserve(ns.size());
  for (int64_t x : ns) v.push_back(ns_to_ms(x));
  return v;
}

void run_one(const Flags& f, int streams) {
  auto d = sim::resolve_deployment(f.deployment);
  if (!d.ok()) {
    fmt::print(stderr, "{}\n", d.error());
    std::exit(2);
  }
  sim::SimServerOptions o;
  o.deployment = *d;
  o.engine.max_num_seqs = streams;
  o.engine.max_num_batched_tokens = std::max<int64_t>(8192, streams);
  o.served_model = "sim";
  auto server = sim::SimServer::create(o);
  if (!server.ok() || !(*server)->start().ok()) std::abort();
  sim::SimServer& s = **server;

  BenchConfig c;
  c.target.base_url = s.base_url();
  c.target.api = "completions";
  c.target.model = "sim";
  c.target.ignore_eos = true;
  c.prompt.text = paragraph_words(f.input_tokens - 6);  // + the 6-word unique prefix
  c.prompt.unique_prefix = true;
  c.prompt.output_tokens = f.output_tokens;
  c.load.plan.levels = {LevelSpec{LoadMode::kConcurrency, double(streams), double(streams), 0}};
  c.load.plan.measure = PhaseLimit{0, streams};
  c.load.default_warmup = false;  // no warm-up: every request is measured
  c.load.stop_on_saturation = false;
  c.load.timeout_ns = 300'000'000'000;
  c.load.progress = false;
  c.run_id = "simbench";
  std::vector<double> ttft, itl;
  int64_t ok = 0, failed = 0;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt), [&](const RequestTimeline& t) {
    if (!t.ok() || t.token_events.size() != static_cast<size_t>(f.output_tokens)) {
      ++failed;
      return;
    }
    ++ok;
    const auto& e = t.token_events;
    ttft.push_back(ns_to_ms(e.front().t_ns - t.send_ns));
    for (size_t i = 1; i < e.size(); ++i) itl.push_back(ns_to_ms(e[i].t_ns - e[i - 1].t_ns));
  });
  const int64_t t0 = mono_ns();
  runner.run();
  const double wall_s = static_cast<double>(mono_ns() - t0) / 1e9;
  s.stop();
  const sim::SimServerReport r = s.report();
  const DistStats lag = compute_dist_stats(to_ms(r.lag.samples_ns));
  const DistStats t = compute_dist_stats(ttft);
  const DistStats g = compute_dist_stats(itl);
  nlohmann::json j = {
      {"streams", streams},
      {"deployment", sim::describe_simulation(s)},
      {"ok", ok},
      {"failed", failed},
      {"tokens", r.tokens_emitted},
      {"engine_steps", r.engine.steps_total},
      {"wall_s", wall_s},
      {"server_cpu_s", r.loop_cpu_s},
      {"server_cpu_share", r.loop_cpu_s / wall_s},
      {"server_us_per_token", r.tokens_emitted ? r.loop_cpu_s * 1e6 / r.tokens_emitted : 0.0},
      {"server_lag_p50_ms", lag.p50},
      {"server_lag_p99_ms", lag.p99},
      {"server_lag_max_ms", lag.max},
      {"server_rebases", r.lag.rebases},
      {"emit_mean_ms", r.lag.steps ? ns_to_ms(r.lag.emit_sum_ns) / r.lag.steps : 0.0},
      {"emit_max_ms", ns_to_ms(r.lag.emit_max_ns)},
      {"client_ttft_p50_ms", t.p50},
      {"client_ttft_p99_ms", t.p99},
      {"client_itl_p50_ms", g.p50},
      {"client_itl_p99_ms", g.p99},
      {"client_cpu_s", runner.self_measure().cpu_user_s + runner.self_measure().cpu_system_s}};
  fmt::print("{}\n", j.dump());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sim serve under thousands of concurrent streams: server lag and CPU"};
  Flags f;
  f.deployment.model = "llama-3.1-8b";
  f.deployment.gpu = "h200";
  app.add_option("--streams", f.streams)->delimiter(',')->capture_default_str();
  sim::add_deployment_flags(app, f.deployment);
  app.add_option("--input-tokens", f.input_tokens)->capture_default_str();
  app.add_option("--output-tokens", f.output_tokens)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (f.input_tokens < 8) {
    fmt::print(stderr, "--input-tokens must be at least 8 (6 go to the unique prefix)\n");
    return 2;
  }
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  for (int n : f.streams) run_one(f, n);
  return 0;
}
