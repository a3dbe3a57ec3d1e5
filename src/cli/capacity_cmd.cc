// `tokperf capacity --slo …`: the highest concurrency (or request rate) that still meets an SLO.
// Each trial is one level run through the same runner as `bench`; the search (bracket by doubling,
// bisect, repeat near the boundary, order-statistic CIs) is load/capacity_search.h.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/load_flags.h"
#include "cli/target_flags.h"
#include "cli/workload_flags.h"
#include "core/clock.h"
#include "core/units.h"
#include "load/bench_runner.h"
#include "load/capacity_search.h"
#include "report/capacity_report.h"
#include "report/json_output.h"

namespace tokperf {
namespace {

struct CapacityFlags {
  TargetFlags target;
  LoadFlags load;
  WorkloadFlags workload;
  std::string by = "concurrency";
  double start = 8;
  double max = 1024;
  std::string budget = "15m";
  int max_trials = 40;
  std::string out_dir;
  bool json = false;
};

int run_capacity(CapacityFlags& f) {
  if (f.target.url.empty()) {
    throw UsageError("--url is required: the base URL of an OpenAI-compatible server");
  }
  if (f.load.slo.empty()) {
    throw UsageError("--slo is required, e.g. --slo 'ttft:p95<=2s,tpot:p95<=100ms'");
  }
  if (f.by != "concurrency" && f.by != "rate") {
    throw UsageError(fmt::format("--by '{}' is not known; accepted: concurrency, rate", f.by));
  }
  if (!f.load.concurrency.empty() || !f.load.request_rate.empty() || !f.load.ramp.empty() ||
      !f.load.trace.empty() || f.load.sweep) {
    throw UsageError("capacity chooses the load itself: drop --concurrency/--request-rate/--ramp/"
                     "--trace/--sweep and use --by, --start and --max");
  }
  if (!(f.start > 0) || !(f.max >= f.start)) {
    throw UsageError("--start must be above 0 and --max at least --start");
  }
  auto budget = parse_duration_ns(f.budget);
  if (!budget) throw UsageError(fmt::format("--budget: {}", budget.error()));

  BenchConfig base;
  apply_target_flags(f.target, base);
  base.load = make_load_config(f.load);
  apply_workload_flags(f.workload, prompt_flag_text(f.target), f.load, base);
  if (base.workload && base.workload->replays()) {
    base.workload->set_replay(false);  // capacity sets the load; the entries are sampled
    base.load.trace.clear();
  }
  base.slo = make_slo(f.load);
  base.load.progress = false;
  base.load.stop_on_saturation = true;
  std::vector<std::string> notes;
  auto ready = prepare_target(base, notes);
  if (!ready) {
    fmt::print(stderr, "tokperf: {}\n", ready.error());
    return kExitUnreachable;
  }
  std::FILE* out = f.json ? stderr : stdout;
  // A percentile objective can only be judged decisively when its confidence interval is bounded.
  int64_t per_trial = base.load.plan.measure.requests;
  for (const auto& o : base.slo.objectives) {
    if (o.mean || per_trial <= 0) continue;
    PercentileInterval iv = percentile_rank_interval(per_trial, o.percentile);
    if (iv.upper_rank > per_trial) {
      fmt::print(stderr,
                 "tokperf: note: {} requests per trial cannot bound a P{} at 95% confidence, so "
                 "every verdict on '{}' is 'close' and trials repeat; use more --requests\n",
                 per_trial, o.percentile, o.text);
    }
  }
  fmt::print(out, "tokperf capacity: {} model {}, SLO {}, searching {} from {} (max {})\n",
             base.target.base_url, base.target.model, f.load.slo, f.by, f.start, f.max);

  RequestsJsonlWriter jsonl;
  if (!f.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(f.out_dir, ec);
    if (ec) throw UsageError(fmt::format("--out '{}' cannot be created: {}", f.out_dir, ec.message()));
    Status st = jsonl.open(f.out_dir + "/requests.jsonl");
    if (!st) throw UsageError(fmt::format("--out '{}': {}", f.out_dir, st.error()));
  }

  MonotonicClock clock;
  bool interrupted = false;
  int trial_index = 0;
  RunLevelFn run_level = [&](double x) -> LevelOutcome {
    if (interrupted) return {};
    BenchConfig c = base;
    LevelSpec spec;
    spec.mode = f.by == "rate" ? LoadMode::kRate : LoadMode::kConcurrency;
    spec.start = spec.end = x;
    c.load.plan.levels = {spec};
    std::vector<RequestMetrics> metrics;
    std::vector<uint8_t> ok;
    auto builder = RequestBuilder::create(c.target, c.prompt);
    if (!builder) throw UsageError(builder.error());
    int this_trial = trial_index++;
    BenchRunner runner(c, std::move(*builder), [&](const RequestTimeline& t) {
      RequestMetrics m = compute_request_metrics(t);
      if (jsonl.is_open()) {
        RequestTimeline labelled = t;
        labelled.level = this_trial;
        (void)jsonl.write(labelled, m);
      }
      if (t.phase != Phase::kMeasure) return;
      metrics.push_back(std::move(m));
      ok.push_back(t.ok() ? 1 : 0);
    });
    {
      auto guard = install_signal_stop(&runner);
      interrupted = !runner.run();
    }
    LevelOutcome o = level_outcome_from(base.slo, metrics, ok);
    if (!runner.levels().empty() && runner.levels()[0].stopped_early) {
      o.meets_slo = false;  // saturated: whatever finished is not the whole story
      o.decisive = true;
    }
    fmt::print(out, "{}", capacity_trial_line(this_trial + 1, f.by, x, o));
    std::fflush(out);
    return o;
  };

  CapacitySearchOptions opt;
  opt.integer = f.by == "concurrency";
  opt.start = f.start;
  opt.max_value = f.max;
  opt.min_value = opt.integer ? 1 : std::min(f.start, 0.1);
  opt.max_trials = f.max_trials;
  opt.time_budget_ns = *budget;
  opt.clock = &clock;
  opt.unit = opt.integer ? "concurrent" : "req/s";
  CapacityResult r = capacity_search(run_level, opt);
  fmt::print(out, "{}\n", r.summary);

  nlohmann::json doc = capacity_json(
      "capacity", config_json(base),
      {{"by", f.by}, {"start", f.start}, {"max", f.max}, {"budget_s", *budget / 1e9}}, r);
  doc["exit_reason"] = interrupted ? "interrupted" : "completed";
  if (!f.out_dir.empty()) {
    (void)jsonl.close();
    Status st = write_json_file(f.out_dir + "/capacity.json", doc);
    if (!st) fmt::print(stderr, "tokperf: cannot write capacity.json: {}\n", st.error());
  }
  if (f.json) fmt::print("{}\n", doc.dump(2));
  if (interrupted) return kExitInterrupted;
  return r.found ? kExitOk : kExitFailure;
}

}  // namespace

void register_capacity_command(CLI::App& app, CommandSet& cmds) {
  auto f = std::make_shared<CapacityFlags>();
  CLI::App* sub = app.add_subcommand(
      "capacity", "Find the highest concurrency (or request rate) that still meets an SLO");
  add_target_flags(sub, f->target);
  add_load_flags(sub, f->load);
  add_workload_flags(sub, f->workload);
  const char* g = "Search";
  sub->add_option("--by", f->by, "Search over concurrency or rate")->capture_default_str()->group(g);
  sub->add_option("--start", f->start, "First load tried")->capture_default_str()->group(g);
  sub->add_option("--max", f->max, "Highest load tried")->capture_default_str()->group(g);
  sub->add_option("--budget", f->budget, "Stop starting trials after this long")
      ->capture_default_str()->group(g);
  sub->add_option("--max-trials", f->max_trials, "Trial budget")->capture_default_str()->group(g);
  sub->add_option("--out", f->out_dir, "Write capacity.json and requests.jsonl here")->group("Output");
  sub->add_flag("--json", f->json, "Print capacity.json to stdout")->group("Output");
  cmds.add(sub, [f] { return run_capacity(*f); });
}

}  // namespace tokperf
