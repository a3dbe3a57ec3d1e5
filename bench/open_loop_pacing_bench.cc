// Open-loop pacing: how exactly does tokperf send at a target rate? Constant arrivals at R req/s
// against a loopback scripted server (1 ms to first token, 1 token), for a few seconds per rate;
// reports the achieved rate against the schedule's and the send lag (dispatch − intended start)
// percentiles, plus the client's CPU. Prints one JSON object per rate.
//
//   open_loop_pacing_bench --rates 100,1000,2000,5000 --seconds 3
#include <sys/resource.h>
#include <time.h>

#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/request_builder.h"
#include "core/clock.h"
#include "load/bench_runner.h"
#include "metrics/stats.h"
#include "support/scripted_server.h"

using namespace tokperf;

int main(int argc, char** argv) {
  CLI::App app{"open-loop pacing accuracy: achieved rate and send lag at fixed target rates"};
  std::vector<double> rates{100, 1000, 5000};
  double seconds = 3;
  std::string arrivals = "constant";
  app.add_option("--rates", rates)->delimiter(',');
  app.add_option("--seconds", seconds);
  app.add_option("--arrivals", arrivals);
  CLI11_PARSE(app, argc, argv);
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  for (double rate : rates) {
    testing_support::ScriptedServerOptions o;
    o.script.ttft_ms = 1;
    o.script.itl_ms = 1;
    o.script.tokens = 1;
    o.tokenize_enabled = false;
    testing_support::ScriptedServer server(o);
    if (!server.start()) return 1;
    BenchConfig c;
    c.target.base_url = server.base_url();
    c.target.api = "completions";
    c.target.model = "tokperf-test-model";
    c.target.include_usage = false;
    c.prompt.text = "hi";
    c.prompt.output_tokens = 1;
    c.load.plan.levels = {LevelSpec{LoadMode::kRate, rate, rate, 0}};
    c.load.plan.arrivals = *parse_arrival_kind(arrivals);
    c.load.plan.measure = PhaseLimit{0, static_cast<int64_t>(rate * seconds)};
    c.load.default_warmup = false;
    c.load.plan.warmup = PhaseLimit{0, static_cast<int64_t>(rate * 0.5) + 1};
    c.load.progress = false;
    c.load.stop_on_saturation = false;
    c.run_id = "pace";
    int64_t ok = 0, failed = 0;
    BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt), [&](const RequestTimeline& t) {
      if (t.phase != Phase::kMeasure) return;
      (t.ok() ? ok : failed)++;
    });
    timespec a{}, b{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    runner.run();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    const LevelRunInfo& info = runner.levels().at(0);
    std::vector<double> lag_ms;
    for (int64_t ns : info.send_lag_ns) lag_ms.push_back(ns_to_ms(ns));
    DistStats lag = compute_dist_stats(lag_ms);
    double cpu_s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    nlohmann::json j = {{"target_rps", rate},
                        {"arrivals", arrivals},
                        {"scheduled_rps", info.scheduled_rate_rps},
                        {"achieved_rps", info.achieved_rate_rps},
                        {"achieved_vs_schedule_pct",
                         100.0 * (info.achieved_rate_rps / info.scheduled_rate_rps - 1)},
                        {"sent", info.measured_sent},
                        {"ok", ok},
                        {"failed", failed},
                        {"send_lag_p50_us", lag.p50 * 1000},
                        {"send_lag_p99_us", lag.p99 * 1000},
                        {"send_lag_max_us", lag.max * 1000},
                        {"client_cpu_s", cpu_s}};
    fmt::print("{}\n", j.dump());
    std::fflush(stdout);
    server.stop();
  }
  return 0;
}
