// `tokperf sim calibrate RUN_DIR...`: fits the simulator's host and serving-stack knobs to runs
// bench measured against a real server (sim/calibration.h), checks the fit on held-out levels,
// and prints the --knob flags that make sim run / sim serve / estimate answer for that server.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/sim_run_cmd.h"
#include "sim/calibration.h"
#include "sim/deployment_cli.h"
#include "sim/dtype.h"
#include "sim/engine_preset.h"
#include "sim/validation.h"

namespace tokperf {
namespace {

struct CalibrateFlags {
  std::vector<std::string> runs;
  std::vector<std::string> check_runs;  // --check: levels only compared, never fitted on
  sim::CalibrationSetup setup;
  std::vector<std::string> fit;  // empty: sim::default_calibration_knobs()
  int rounds = 3;
  bool json = false;
  bool no_check = false;
  bool steps = false;  // --steps: fit the server's step timeline read from token arrivals too
  std::string out;  // --out FILE: the JSON document, for --calibration FILE
};

double pct(double simulated, double measured) {
  return std::isfinite(simulated) && std::isfinite(measured) && measured > 0
             ? 100.0 * (simulated / measured - 1.0)
             : NAN;
}

// Median |error| in percent of one figure over some levels (sim/validation.h's summary); NaN
// with none defined.
double median_abs_pct(const std::vector<sim::LevelFigures>& simulated,
                      const std::vector<sim::MeasuredLevel>& levels,
                      double sim::LevelFigures::*field) {
  std::vector<std::pair<double, double>> pairs;
  for (size_t i = 0; i < levels.size(); ++i) {
    if (std::isfinite(pct(simulated[i].*field, levels[i].measured.*field))) {
      pairs.emplace_back(simulated[i].*field, levels[i].measured.*field);
    }
  }
  return pairs.empty() ? NAN : sim::summarize_errors(pairs).median_abs_pct;
}

std::string fmt_pct(double p) { return std::isfinite(p) ? fmt::format("{:.1f}%", p) : "-"; }
std::string fmt_num(double v, const char* unit) {
  if (!std::isfinite(v)) return "-";
  return v >= 100 ? fmt::format("{:.0f}{}", v, unit) : fmt::format("{:.3g}{}", v, unit);
}

nlohmann::json figures_json(const sim::LevelFigures& f) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json j = {{"ttft_p50_ms", num(f.ttft_ms)},
                      {"tpot_p50_ms", num(f.tpot_ms)},
                      {"output_tok_s", num(f.output_tok_s)}};
  if (std::isfinite(f.decode_step_ms) || std::isfinite(f.token_spacing_us)) {
    j["decode_step_p50_ms"] = num(f.decode_step_ms);
    j["token_spacing_p50_us"] = num(f.token_spacing_us);
  }
  return j;
}

struct Check {
  std::vector<size_t> fitted_on, held_out;  // indexes into the fitted runs' levels (the split)
  std::vector<sim::LevelFigures> preset, fitted;  // of the held-out levels
  std::vector<sim::MeasuredLevel> levels;         // the held-out levels
  // The fit on the closed-loop held-out levels run as sim run runs them (NaN for open loops);
  // empty when none is a closed loop.
  std::vector<sim::LevelFigures> fitted_as_sim_run;
  size_t closed_loops = 0;
};

int run_calibrate(CalibrateFlags& f) {
  if (f.runs.empty()) throw UsageError("give one or more run folders (bench --out DIR)");
  if (f.rounds < 1 || f.rounds > 20) throw UsageError("--rounds takes 1 to 20");
  auto d = sim::resolve_deployment(f.setup.flags);
  if (!d.ok()) throw UsageError(d.error());
  std::vector<std::string> knobs =
      f.fit.empty() ? sim::default_calibration_knobs(sim::CostModel(*d, sim::CostKnobs{}).w8a8())
                    : f.fit;
  for (const std::string& k : knobs) {
    if (auto v = sim::continuous_knob_value(sim::CostKnobs{}, k); !v.ok()) {
      throw UsageError("--fit: " + v.error());
    }
    // A flag that sets the same cost would replace every value the fit tries.
    if (k == "request_overhead_s" && f.setup.flags.frontend_ms_per_request >= 0) {
      throw UsageError(
          "--frontend-ms-per-request sets request_overhead_s, which --fit would fit: give one");
    }
    if (k == "output_overhead_s" && f.setup.flags.frontend_us_per_token >= 0) {
      throw UsageError(
          "--frontend-us-per-token sets output_overhead_s, which --fit would fit: give one");
    }
  }
  std::vector<std::string> notes;
  std::vector<sim::MeasuredLevel> levels;
  for (const std::string& dir : f.runs) {
    auto l = sim::load_measured_levels(dir, notes, f.steps);
    if (!l.ok()) throw UsageError(l.error());
    for (auto& x : *l) levels.push_back(std::move(x));
  }
  if (std::string n = sim::one_prompt_length_note(levels); !n.empty()) notes.push_back(n);
  if (std::string n = sim::one_output_length_note(levels); !n.empty()) notes.push_back(n);
  if (auto p = sim::engine_preset(f.setup.flags, d->gpu, d->tp); !p.ok()) {
    throw UsageError(p.error());
  }

  std::vector<sim::MeasuredLevel> check_runs_levels;
  for (const std::string& dir : f.check_runs) {
    auto l = sim::load_measured_levels(dir, notes, f.steps);
    if (!l.ok()) throw UsageError("--check: " + l.error());
    for (auto& x : *l) check_runs_levels.push_back(std::move(x));
  }

  // The check: the levels of the --check runs against the fit on every level of the runs; else,
  // with 3 levels or more, every second one (2nd, 4th, ...) held out of a first fit.
  Check check;
  const bool by_runs = !check_runs_levels.empty();
  const bool checked = by_runs || (!f.no_check && levels.size() >= 3);
  // The check levels replayed with the preset and with a fit.
  auto replay_check = [&](const sim::CalibrationFit& with) {
    auto preset = sim::replay_levels(f.setup, check.levels);
    auto fitted = sim::replay_levels(sim::with_fitted_knobs(f.setup, with), check.levels);
    if (!preset.ok() || !fitted.ok()) {
      throw UsageError(preset.ok() ? fitted.error() : preset.error());
    }
    check.preset = *preset;
    check.fitted = *fitted;
    check.closed_loops = static_cast<size_t>(
        std::count_if(check.levels.begin(), check.levels.end(),
                      [](const sim::MeasuredLevel& l) { return l.closed_loop; }));
    if (check.closed_loops > 0) {
      auto as_sim_run = sim::replay_levels(sim::with_fitted_knobs(f.setup, with), check.levels,
                                           /*as_sim_run=*/true);
      if (!as_sim_run.ok()) throw UsageError(as_sim_run.error());
      check.fitted_as_sim_run = *as_sim_run;
    }
  };
  if (checked && !by_runs) {
    std::vector<sim::MeasuredLevel> fit_levels;
    for (size_t i = 0; i < levels.size(); ++i) {
      if (i % 2 == 1) {
        check.held_out.push_back(i);
        check.levels.push_back(levels[i]);
      } else {
        check.fitted_on.push_back(i);
        fit_levels.push_back(levels[i]);
      }
    }
    auto first = sim::fit_calibration(f.setup, fit_levels, knobs, f.rounds);
    if (!first.ok()) throw UsageError(first.error());
    replay_check(*first);
  }
  auto fit = sim::fit_calibration(f.setup, levels, knobs, f.rounds);
  if (!fit.ok()) throw UsageError(fit.error());
  if (by_runs) {
    check.levels = check_runs_levels;
    replay_check(*fit);
  }

  const std::string engine = f.setup.flags.engine;
  double sim::LevelFigures::*const fields[] = {
      &sim::LevelFigures::ttft_ms, &sim::LevelFigures::tpot_ms, &sim::LevelFigures::output_tok_s};
  {
    nlohmann::json j;
    j["deployment"] = sim::deployment_json(f.setup.flags);
    j["objective_preset"] = fit->objective_start;
    j["objective_fitted"] = fit->objective;
    j["knobs"] = nlohmann::json::array();
    for (const auto& k : fit->knobs) {
      j["knobs"].push_back({{"name", k.name}, {"preset", k.start}, {"fitted", k.value}});
    }
    j["flags"] = fit->flags();
    j["levels"] = nlohmann::json::array();
    for (size_t i = 0; i < levels.size(); ++i) {
      j["levels"].push_back({{"label", levels[i].label},
                             {"measured", figures_json(levels[i].measured)},
                             {"preset", figures_json(fit->start[i])},
                             {"fitted", figures_json(fit->fitted[i])}});
    }
    if (checked) {
      nlohmann::json c;
      c["held_out"] = nlohmann::json::array();
      for (const auto& l : check.levels) c["held_out"].push_back(l.label);
      const char* names[] = {"ttft", "tpot", "output_tok_s"};
      for (int m = 0; m < 3; ++m) {
        const double a = median_abs_pct(check.preset, check.levels, fields[m]);
        const double b = median_abs_pct(check.fitted, check.levels, fields[m]);
        c["preset_median_abs_pct"][names[m]] =
            std::isfinite(a) ? nlohmann::json(a) : nlohmann::json();
        c["fitted_median_abs_pct"][names[m]] =
            std::isfinite(b) ? nlohmann::json(b) : nlohmann::json();
        if (!check.fitted_as_sim_run.empty()) {
          const double s = median_abs_pct(check.fitted_as_sim_run, check.levels, fields[m]);
          c["fitted_as_sim_run_median_abs_pct"][names[m]] =
              std::isfinite(s) ? nlohmann::json(s) : nlohmann::json();
        }
      }
      c["closed_loop_levels"] = check.closed_loops;
      j["check"] = c;
    }
    j["notes"] = notes;
    if (!f.out.empty()) {
      std::ofstream out(f.out);
      out << j.dump(1) << "\n";
      if (!out) throw UsageError(fmt::format("--out '{}' cannot be written", f.out));
    }
    if (f.json) {
      fmt::print("{}\n", j.dump(1));
      return kExitOk;
    }
  }

  fmt::print(
      "tokperf sim calibrate: {} levels from {} run{}; {} on {} x {}, weights {}, engine {}\n",
      levels.size(), f.runs.size(), f.runs.size() == 1 ? "" : "s", d->model.name, d->tp,
      d->gpu.name, sim::dtype_name(d->weight_dtype), engine);
  for (const auto& n : notes) fmt::print("note: {}\n", n);
  if (by_runs) {
    fmt::print(
        "check: fitted on every level above; on the {} levels of the --check runs the median "
        "|error| goes\n",
        check.levels.size());
  } else if (checked) {
    std::string fitted_on, held;
    for (size_t i : check.fitted_on)
      fitted_on += (fitted_on.empty() ? "" : ", ") + std::to_string(i + 1);
    for (size_t i : check.held_out) held += (held.empty() ? "" : ", ") + std::to_string(i + 1);
    fmt::print(
        "check: fitted on levels {} alone; on the held-out levels {} the median |error| goes\n",
        fitted_on, held);
  }
  if (checked) {
    const char* names[] = {"TTFT", "TPOT", "output tok/s"};
    std::string line;
    for (int m = 0; m < 3; ++m) {
      line += fmt::format("{}{} {} -> {}", m ? ", " : "  ", names[m],
                          fmt_pct(median_abs_pct(check.preset, check.levels, fields[m])),
                          fmt_pct(median_abs_pct(check.fitted, check.levels, fields[m])));
    }
    fmt::print("{} (the {} preset -> fitted)\n", line, engine);
    if (!check.fitted_as_sim_run.empty()) {
      // The replay above sends each request at its measured time; sim run's closed loop does not.
      std::string as_run;
      for (int m = 0; m < 3; ++m) {
        as_run +=
            fmt::format("{}{} {}", m ? ", " : "", names[m],
                        fmt_pct(median_abs_pct(check.fitted_as_sim_run, check.levels, fields[m])));
      }
      fmt::print(
          "  as sim run runs them (users start together after the warm-up, each sending the next "
          "request\n  as the last ends, not at the measured times), the fit on the {} closed-loop "
          "level{}:\n  {} (what a what-if by sim run can expect at these loads)\n",
          check.closed_loops, check.closed_loops == 1 ? "" : "s", as_run);
    }
  } else if (!f.no_check) {
    fmt::print("check: none (3 levels or more are needed to hold one out)\n");
  }
  fmt::print("fit on every level: sum of |ln(simulated / measured)| {:.3f} -> {:.3f}\n",
             fit->objective_start, fit->objective);
  for (const auto& k : fit->knobs) {
    fmt::print("  {:<26} {:>10.4g} -> {:<10.4g}{}\n", k.name, k.start, k.value,
               k.start == k.value ? " (kept)" : "");
  }
  fmt::print("\n{:<34} {:>26}  {:>26}  {:>26}\n", "level (measured / preset / fitted)", "TTFT P50",
             "TPOT P50", "output tok/s");
  // A level's label ("RUN_DIR LEVEL") in `width` columns: the run folder's own name when the
  // path does not fit, then the end of that.
  auto fit_label = [](std::string label, size_t width) {
    if (label.size() > width) {
      const size_t slash = label.rfind('/', label.rfind(' '));
      if (slash != std::string::npos) label = label.substr(slash + 1);
    }
    if (label.size() > width) label = "..." + label.substr(label.size() - (width - 3));
    return label;
  };
  // One row: measured / preset / fitted for the three figures.
  auto print_row = [&](std::string label, const sim::LevelFigures& m, const sim::LevelFigures& p,
                       const sim::LevelFigures& q) {
    label = fit_label(label, 34);
    fmt::print("{:<34} {:>26}  {:>26}  {:>26}\n", label,
               fmt::format("{} / {} / {}", fmt_num(m.ttft_ms, ""), fmt_num(p.ttft_ms, ""),
                           fmt_num(q.ttft_ms, " ms")),
               fmt::format("{} / {} / {}", fmt_num(m.tpot_ms, ""), fmt_num(p.tpot_ms, ""),
                           fmt_num(q.tpot_ms, " ms")),
               fmt::format("{} / {} / {}", fmt_num(m.output_tok_s, ""), fmt_num(p.output_tok_s, ""),
                           fmt_num(q.output_tok_s, "")));
  };
  for (size_t i = 0; i < levels.size(); ++i) {
    print_row(levels[i].label, levels[i].measured, fit->start[i], fit->fitted[i]);
  }
  for (size_t i = 0; by_runs && i < check.levels.size(); ++i) {
    print_row("(check) " + fit_label(check.levels[i].label, 26), check.levels[i].measured,
              check.preset[i], check.fitted[i]);
  }
  if (f.steps) {
    // The step figures read from the token arrivals (sim/step_timeline.h), fitted beside the rest.
    fmt::print("\n{:<34} {:>26}  {:>26}\n", "steps (measured / preset / fitted)",
               "decode-only step", "one step's tokens apart");
    for (size_t i = 0; i < levels.size(); ++i) {
      const sim::LevelFigures &m = levels[i].measured, &p = fit->start[i], &q = fit->fitted[i];
      fmt::print("{:<34} {:>26}  {:>26}\n", fit_label(levels[i].label, 34),
                 fmt::format("{} / {} / {}", fmt_num(m.decode_step_ms, ""),
                             fmt_num(p.decode_step_ms, ""), fmt_num(q.decode_step_ms, " ms")),
                 fmt::format("{} / {} / {}", fmt_num(m.token_spacing_us, ""),
                             fmt_num(p.token_spacing_us, ""), fmt_num(q.token_spacing_us, " us")));
    }
  }
  fmt::print(
      "\nfor what-ifs on this server, add to sim run, sim serve or estimate (same --model, --gpu, "
      "--engine):\n  {}\n",
      f.out.empty() ? fit->flags() : "--calibration " + f.out + "   (or " + fit->flags() + ")");
  fmt::print(
      "note: the fit describes this host and these loads; the published accuracy figures are "
      "for the presets as shipped\n");
  return kExitOk;
}

}  // namespace

void register_sim_calibrate_command(CLI::App& sim_app, CommandSet& cmds) {
  auto f = std::make_shared<CalibrateFlags>();
  auto* sub = sim_app.add_subcommand(
      "calibrate",
      "Fit the simulator's host and serving costs to runs bench measured against your server");
  sub->add_option("runs", f->runs, "run folders (bench --out DIR) measured against the server")
      ->required();
  sim::add_deployment_flags(*sub, f->setup.flags);
  sim::add_engine_flag(*sub, f->setup.flags);
  sim::add_batch_limit_flags(*sub, f->setup.engine_flags);
  sub->add_option("--fit", f->fit,
                  "knobs to fit (comma-separated field names; default compute_efficiency, "
                  "weight_stream_efficiency (for FP8/INT8 weights the w8a8_ pair), "
                  "attention_efficiency, bandwidth_efficiency, step_overhead_s, per_seq_overhead_s, "
                  "request_overhead_s, request_latency_s, "
                  "output_overhead_s; with few runs, host_cpu_factor alone scales every "
                  "host-side cost of the preset by one number); --knob values are where the fit "
                  "starts")
      ->delimiter(',');
  sub->add_flag("--steps", f->steps,
                "also fit the server's steps as the token arrivals show them: each level's median "
                "decode-only step (with TPOT) and how far apart one step's tokens reach the "
                "client (the front end's cost per token, with TTFT); on vLLM, step costs read "
                "this way carried to another model on the same host where fitted aggregates did "
                "less well (docs/SIMULATOR.md, \"Thirtieth change\")");
  sub->add_option("--rounds", f->rounds, "coarse passes over the knobs before two fine ones")
      ->capture_default_str();
  sub->add_option("--check", f->check_runs,
                  "run folders only compared, never fitted on (another workload, another day): "
                  "their error with the preset and with the fit is printed instead of the "
                  "every-second-level check");
  sub->add_flag("--no-check", f->no_check,
                "skip the first fit that holds every second level out to report its error");
  sub->add_flag("--json", f->json, "print JSON (levels, knobs, check, flags)");
  sub->add_option("--out", f->out,
                  "write that JSON to FILE, for --calibration FILE on sim run, sim serve and "
                  "estimate (their runs then say how well the fit did on its check)");
  cmds.add(sub, [f, sub] {
    // The defaults (Llama-2-7B on an A100) would fit some other server's constants silently.
    if (sub->count("--model") + sub->count("--model-config") == 0 ||
        sub->count("--gpu") + sub->count("--gpu-spec") == 0) {
      throw UsageError(
          "say what the server runs: --model (or --model-config) and --gpu (or --gpu-spec), with "
          "--dtype, --tp and --engine as for sim run");
    }
    f->setup.max_num_seqs_given = sub->count("--max-num-seqs") > 0;
    f->setup.max_num_batched_tokens_given = sub->count("--max-num-batched-tokens") > 0;
    return run_calibrate(*f);
  });
}

}  // namespace tokperf
