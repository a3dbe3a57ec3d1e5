#include "cli/sim_run_cmd.h"

#include <cmath>
#include <ctime>
#include <filesystem>
#include <memory>
#include <random>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/bench_output.h"
#include "cli/commands.h"
#include "cli/load_flags.h"
#include "cli/output_flags.h"
#include "cli/run_recorder.h"
#include "cli/sim_run_load.h"
#include "cli/workload_flags.h"
#include "core/clock.h"
#include "core/units.h"
#include "load/capacity_search.h"
#include "report/capacity_report.h"
#include "report/json_output.h"
#include "sim/deployment_cli.h"
#include "sim/engine_preset.h"
#include "sim/sim_text.h"
#include "sim/validation.h"

namespace tokperf {
namespace {

struct SimRunFlags {
  sim::DeploymentFlags deployment;
  LoadFlags load;
  WorkloadFlags workload;
  std::string input_tokens;   // "" = 512; a length or a distribution
  std::string output_tokens;  // "" = 256
  bool ignore_eos = false;
  std::string tokenizer;  // --tokenizer FILE: the simulated model counts prompts with it
  sim::EngineConfig engine;
  OutputFlags output;
  bool capacity = false;
  std::string by = "concurrency";
  double start = 8;
  double max = 1024;
  int max_trials = 40;
  bool max_num_seqs_given = false;
  bool max_num_batched_tokens_given = false;
};

// The --engine preset's scheduler settings on this GPU, with the engine flags the user gave on top.
sim::EngineConfig engine_config(const SimRunFlags& f, const sim::GpuSpec& gpu) {
  auto preset = sim::engine_preset(f.deployment, gpu, f.deployment.tp);
  if (!preset.ok()) throw UsageError(preset.error());
  return sim::engine_config_with_flags(*preset, f.engine, f.max_num_seqs_given,
                                       f.max_num_batched_tokens_given);
}

sim::CostModel make_cost(const SimRunFlags& f) {
  auto d = sim::resolve_deployment(f.deployment);
  if (!d.ok()) throw UsageError(d.error());
  auto preset = sim::engine_preset(f.deployment, d->gpu, d->tp);
  if (!preset.ok()) throw UsageError(preset.error());
  const sim::EngineConfig engine = engine_config(f, d->gpu);
  sim::CostModel cost(std::move(d).value(), sim::engine_knobs(*preset, engine, f.deployment));
  if (!cost.fits()) {
    throw UsageError(fmt::format(
        "{} in {} needs {:.1f} GB of weights per GPU; {} x {} cannot hold it (try --tp or --dtype)",
        cost.deployment().model.name, sim::dtype_name(cost.deployment().weight_dtype),
        cost.weight_bytes_per_gpu() / 1e9, cost.deployment().tp, cost.deployment().gpu.name));
  }
  return cost;
}

std::string describe(const SimRunFlags& f, const sim::CostModel& cost) {
  const auto& d = cost.deployment();
  return fmt::format("{} on {} x {}, weights {}, KV {}, engine {}", d.model.name, d.tp, d.gpu.name,
                     sim::dtype_name(d.weight_dtype), sim::dtype_name(d.kv_dtype),
                     f.deployment.engine);
}

// The parts of a BenchConfig that describe the simulated target, for summary.json and the history.
BenchConfig base_config(const SimRunFlags& f, const sim::CostModel& cost) {
  if (!(f.engine.eos_mean_tokens >= 1)) throw UsageError("--eos-mean-tokens must be at least 1");
  if (f.engine.max_num_seqs < 1 || f.engine.max_num_batched_tokens < 1) {
    throw UsageError("--max-num-seqs and --max-num-batched-tokens must be at least 1");
  }
  BenchConfig c;
  c.target.base_url = fmt::format("sim://{}", describe(f, cost));
  c.target.model = f.deployment.model;
  c.target.ignore_eos = f.ignore_eos;
  c.prompt.input_tokens = 512;
  c.prompt.input_tokens_exact = true;
  c.prompt.input_tokens_note = "simulated";
  c.prompt.output_tokens = 256;
  c.load = make_load_config(f.load);
  PromptFlagText p;
  p.input_tokens = f.input_tokens;
  p.output_tokens = f.output_tokens;
  apply_workload_flags(f.workload, p, f.load, c);  // a fixed --input-tokens sets c.prompt
  if (c.workload && f.capacity && c.workload->replays()) {
    c.workload->set_replay(false);  // the search sets the load; entries are sampled
    c.load.trace.clear();
  }
  c.prompt.input_tokens_method = LengthMethod::kSimulator;
  if (!f.tokenizer.empty()) {
    c.tokenizer = load_tokenizer_flag(f.tokenizer);
    c.prompt.input_tokens_method = LengthMethod::kTokenizer;
    c.prompt.tokenizer_name = c.tokenizer->name();
  }
  if (c.workload) {
    if (c.tokenizer) {
      std::shared_ptr<const Tokenizer> t = c.tokenizer;
      TokenCounter counter = [t](const std::string& s) { return t->count(s); };
      const std::string how = "tokenizer " + t->name();
      c.workload->calibrate(counter, how);
      c.workload->count_dataset(counter, how);
    } else {
      c.workload->calibrate(
          [](const std::string& s) -> Result<int64_t> { return sim::count_tokens(s); },
          "the simulator's tokenizer");
    }
    c.prompt.input_tokens_note = c.workload->describe();
  }
  c.load.progress = false;
  c.slo = make_slo(f.load);
  c.deployment = sim::deployment_json(f.deployment);  // the report's roofline reads it
  std::random_device rd;
  c.run_id = fmt::format("sim{:08x}", rd());
  return c;
}

SimLoadOptions load_options(const SimRunFlags& f, const sim::CostModel& cost, const BenchConfig& c,
                            int64_t started_unix_us) {
  SimLoadOptions o;
  o.engine = engine_config(f, cost.deployment().gpu);
  o.input_tokens = c.prompt.input_tokens;
  o.output_tokens = c.prompt.output_tokens;
  o.ignore_eos = f.ignore_eos;
  o.started_unix_us = started_unix_us;
  return o;
}

int run_levels(const SimRunFlags& f, const sim::CostModel& cost, BenchConfig config) {
  apply_output_flags(f.output, config);
  std::FILE* out = f.output.json ? stderr : stdout;
  const std::string lengths =
      config.workload ? config.workload->describe()
                      : fmt::format("{} in / max {} out tokens", config.prompt.input_tokens,
                                    config.prompt.output_tokens);
  fmt::print(out, "tokperf sim run: {}; {}{}; virtual time\n", describe(f, cost), lengths,
             f.ignore_eos ? " (ignore_eos)" : ", lengths from the engine's EOS distribution");
  std::vector<std::string> notes = {
      "virtual time: simulated engine, no sockets; send lag is 0 by construction and client "
      "health (CPU, loop lag) does not apply",
      sim::held_out_accuracy_line(cost.deployment(), f.deployment.engine),
  };
  if (std::string k = sim::knob_note(f.deployment); !k.empty()) notes.push_back(std::move(k));
  // Identical requests in a closed loop: a deterministic engine keeps the places in its steps
  // that the users' first requests took, where real clients drift apart (docs/SIMULATOR.md,
  // "Twenty-ninth change"). The serial front end spaces requests sent together; with none, all of
  // them share every step.
  const sim::CostKnobs& knobs = cost.knobs();
  const bool in_step =
      !config.workload && f.ignore_eos &&
      std::any_of(config.load.plan.levels.begin(), config.load.plan.levels.end(),
                  [](const LevelSpec& l) {
                    return l.mode == LoadMode::kConcurrency && std::max(l.start, l.end) >= 2;
                  });
  if (in_step) {
    const double spacing_ms =
        1e3 * (knobs.request_overhead_s + knobs.request_overhead_per_token_s *
                                              static_cast<double>(config.prompt.input_tokens));
    const bool no_serial = spacing_ms <= 0;
    notes.push_back(fmt::format(
        "closed loop of identical requests: the simulated users start together and keep the "
        "places their first requests took in the engine's steps for the whole run ({}); real "
        "ones may drift apart so that one's prompt lands between another's tokens (a real "
        "llama.cpp server at 2-6 users did, and TTFT and TPOT percentiles came out far off: "
        "docs/SIMULATOR.md, \"Twenty-ninth change\") or keep their waves as the model does (a "
        "real vLLM 0.15 at 10 users did: \"Thirtieth change\"); a dataset or a length "
        "distribution (--input-tokens uniform:A..B) breaks the step",
        no_serial ? "all in the same steps: this front end has no serial time per request, "
                    "request_overhead_s 0, where a real server takes requests one at a time; "
                    "--knob request_overhead_s=1e-9 does that, which on the llama.cpp server "
                    "brought TPOT percentiles closer, TTFT not always"
                  : fmt::format("the front end hands them over {:.3g} ms apart; those that reach "
                                "the engine within one step share it each time",
                                spacing_ms)));
  }
  const int64_t wall_start_ns = mono_ns();
  if (config.workload) {
    const PhaseLimit& m = config.load.plan.measure;
    const int64_t planned =
        m.requests > 0 ? m.requests * static_cast<int64_t>(config.load.plan.levels.size()) : -1;
    for (std::string& n : config.workload->notes(planned)) notes.push_back(std::move(n));
  }
  RunRecorder recorder(config);
  recorder.open_output(/*flush_each_line=*/false);
  recorder.set_run_start(0);  // virtual time from 0
  auto outcome = simulate_load(cost, config, load_options(f, cost, config, wall_us()), notes,
                               [&](const RequestTimeline& t) { recorder.add(t); });
  if (!outcome) throw UsageError(outcome.error());
  notes.push_back(fmt::format("simulated {:.1f} s of serving in {:.2f} s of wall time",
                              outcome->self.wall_s, (mono_ns() - wall_start_ns) / 1e9));
  if (Status st = recorder.close(); !st) {
    fmt::print(stderr, "tokperf: writing requests.jsonl failed: {}\n", st.error());
  }
  return report_run(config, *outcome, recorder, notes, f.output.json, "sim run");
}

// Capacity search as `tokperf capacity` does it, each trial a one-level virtual-time run. Trial k
// uses seed + k, so a repeated load is a fresh sample (Poisson arrivals, EOS lengths) and the
// whole search still repeats exactly.
int run_capacity_search(const SimRunFlags& f, const sim::CostModel& cost, const BenchConfig& base) {
  if (base.slo.objectives.empty()) {
    throw UsageError("--capacity needs --slo, e.g. --slo 'ttft:p95<=2s,tpot:p95<=100ms'");
  }
  if (f.by != "concurrency" && f.by != "rate") {
    throw UsageError(fmt::format("--by '{}' is not known; accepted: concurrency, rate", f.by));
  }
  if (!f.load.concurrency.empty() || !f.load.request_rate.empty() || !f.load.ramp.empty() ||
      !f.load.trace.empty() || f.load.sweep) {
    throw UsageError(
        "--capacity chooses the load itself: drop --concurrency/--request-rate/"
        "--ramp/--trace/--sweep and use --by, --start and --max");
  }
  if (!(f.start > 0) || !(f.max >= f.start)) {
    throw UsageError("--start must be above 0 and --max at least --start");
  }
  if (f.max_trials < 1) throw UsageError("--max-trials must be at least 1");
  std::FILE* out = f.output.json ? stderr : stdout;
  fmt::print(out,
             "tokperf sim run --capacity: {}, SLO {}, searching {} from {} (max {}); "
             "virtual time\n",
             describe(f, cost), f.load.slo, f.by, f.start, f.max);
  int trial = 0;
  RunLevelFn run_level = [&](double x) -> LevelOutcome {
    BenchConfig c = base;
    LevelSpec spec;
    spec.mode = f.by == "rate" ? LoadMode::kRate : LoadMode::kConcurrency;
    spec.start = spec.end = x;
    c.load.plan.levels = {spec};
    c.load.plan.seed = base.load.plan.seed + static_cast<uint64_t>(trial++);
    std::vector<std::string> notes;
    auto run = simulate_load(cost, c, load_options(f, cost, c, 0), notes);
    if (!run) throw UsageError(run.error());
    std::vector<RequestMetrics> metrics;
    std::vector<uint8_t> ok;
    for (const auto& t : run->records) {
      if (t.phase != Phase::kMeasure) continue;
      metrics.push_back(compute_request_metrics(t));
      ok.push_back(t.ok() ? 1 : 0);
    }
    LevelOutcome o = level_outcome_from(base.slo, metrics, ok);
    if (!run->levels.empty() && run->levels[0].stopped_early) {
      o.meets_slo = false;  // stopped early (saturated): as `capacity` judges a live trial
      o.decisive = true;
    }
    fmt::print(out, "{}", capacity_trial_line(trial, f.by, x, o));
    return o;
  };
  CapacitySearchOptions opt;
  opt.integer = f.by == "concurrency";
  opt.start = f.start;
  opt.max_value = f.max;
  opt.min_value = opt.integer ? 1 : std::min(f.start, 0.1);
  opt.max_trials = f.max_trials;
  opt.unit = opt.integer ? "concurrent" : "req/s";
  const CapacityResult r = capacity_search(run_level, opt);
  fmt::print(out, "{}\n", r.summary);
  fmt::print(out, "{}\n", sim::held_out_accuracy_line(cost.deployment(), f.deployment.engine));
  if (std::string k = sim::knob_note(f.deployment); !k.empty()) fmt::print(out, "note: {}\n", k);
  if (f.output.json) {
    nlohmann::json doc = capacity_json("sim run --capacity", config_json(base),
                                       {{"by", f.by}, {"start", f.start}, {"max", f.max}}, r);
    fmt::print("{}\n", doc.dump(2));
  }
  return r.found ? kExitOk : kExitFailure;
}

int run_sim(const SimRunFlags& f) {
  const sim::CostModel cost = make_cost(f);
  BenchConfig config = base_config(f, cost);
  if (f.capacity) return run_capacity_search(f, cost, config);
  return run_levels(f, cost, std::move(config));
}

}  // namespace

void register_sim_run_command(CLI::App& sim_app, CommandSet& cmds) {
  auto f = std::make_shared<SimRunFlags>();
  auto* run = sim_app.add_subcommand(
      "run", "bench's load flags against the simulated engine in virtual time (no sockets)");
  sim::add_deployment_flags(*run, f->deployment);
  sim::add_engine_flag(*run, f->deployment);
  add_load_flags(run, f->load);
  add_workload_flags(run, f->workload);
  const char* p = "Prompt";
  run->add_option("--input-tokens", f->input_tokens,
                  "Prompt tokens per request (default 512), or a distribution: uniform:A..B, "
                  "normal:MEAN,SD, lognormal:MEAN,SD, hist:FILE")
      ->group(p);
  run->add_option("--output-tokens", f->output_tokens,
                  "max_tokens per request (default 256), or a distribution as --input-tokens")
      ->group(p);
  run->add_flag("--ignore-eos", f->ignore_eos,
                "Generate exactly --output-tokens (else lengths follow --eos-mean-tokens)")
      ->group(p);
  run->add_option("--tokenizer", f->tokenizer,
                  "The simulated model counts prompt tokens with this tokenizer (tokenizer.json, "
                  "SentencePiece .model, or a model folder; docs/TOKENIZERS.md) instead of its "
                  "own word-based count")
      ->group(p);
  const char* e = "Engine";
  sim::add_batch_limit_flags(*run, f->engine, e);
  run->add_option("--eos-mean-tokens", f->engine.eos_mean_tokens,
                  "Mean output length (exponential, capped by max_tokens) without --ignore-eos")
      ->capture_default_str()
      ->group(e);
  run->add_flag("!--no-prefix-caching", f->engine.enable_prefix_caching,
                "Turn the engine's prefix cache off (vLLM's --no-enable-prefix-caching): every "
                "prompt, shared prefixes and session history included, is prefilled in full")
      ->group(e);
  add_output_flags(run, f->output);
  const char* s = "Capacity search";
  run->add_flag("--capacity", f->capacity,
                "Find the highest load meeting --slo (as `tokperf capacity`, in virtual time)")
      ->group(s);
  run->add_option("--by", f->by, "Search over concurrency or rate")
      ->capture_default_str()
      ->group(s);
  run->add_option("--start", f->start, "First load tried")->capture_default_str()->group(s);
  run->add_option("--max", f->max, "Highest load tried")->capture_default_str()->group(s);
  run->add_option("--max-trials", f->max_trials, "Trial budget")->capture_default_str()->group(s);
  cmds.add(run, [f, run] {
    f->max_num_seqs_given = run->count("--max-num-seqs") > 0;
    f->max_num_batched_tokens_given = run->count("--max-num-batched-tokens") > 0;
    return run_sim(*f);
  });
}

}  // namespace tokperf
