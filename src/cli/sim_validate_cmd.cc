// `tokperf sim validate`: replays the published measurements of data/validation/ through the
// simulator (sim/validation.h) and prints every point's prediction and error, the summary per
// split and metric, and optionally regenerates sim/accuracy_figures.h. --knob overrides a preset
// knob for fitting on the calibration half (scripts/fit_sim.py).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/sim_run_cmd.h"
#include "sim/kv_validation.h"
#include "sim/validation.h"

namespace tokperf {
namespace {

struct ValidateFlags {
  std::string data = "data/validation";
  std::string split = "all";
  std::string engine;  // empty: every engine
  std::string batch;   // empty: every batch
  std::vector<std::string> knobs;
  bool json = false;
  bool markdown = false;
  std::string write_figures;
  bool kv = false;  // --kv: the KV-cache capacity rows (kv_capacity.jsonl) instead of the points
};

// --kv: every vLLM startup log of data/validation/kv_capacity.jsonl beside the KV capacity the
// model gives for the same model, GPU, parallelism, utilisation and profiling shape.
int run_validate_kv(const ValidateFlags& f, const sim::KnobOverrides& overrides) {
  if (!f.engine.empty() || !f.batch.empty() || !f.write_figures.empty()) {
    throw UsageError("--kv takes --data, --split, --knob, --json and --markdown only");
  }
  auto rows = sim::load_kv_capacity_set(f.data);
  if (!rows.ok()) throw UsageError(fmt::format("--data: {}", rows.error()));
  std::vector<sim::KvCapacityRow> chosen;
  for (const auto& r : *rows) {
    if (f.split == "all" || (f.split == "held-out") == r.held_out) chosen.push_back(r);
  }
  const sim::KvCapacityResult r = sim::run_kv_validation(chosen, overrides);
  if (f.json) {
    nlohmann::json doc = {{"rows", nlohmann::json::array()}, {"summary", nlohmann::json::array()}};
    for (const auto& row : r.rows) {
      doc["rows"].push_back({{"id", row.row->id},
                             {"held_out", row.row->held_out},
                             {"logged_tokens", row.row->logged_tokens},
                             {"predicted_tokens", row.predicted},
                             {"error_pct", row.error_pct()}});
    }
    for (bool held : {false, true}) {
      const sim::MetricSummary s = r.summary(held);
      doc["summary"].push_back({{"split", held ? "held-out" : "calibration"},
                                {"n", s.n},
                                {"median_abs_pct", s.n > 0 ? s.median_abs_pct : 0.0},
                                {"worst_ratio", s.worst_ratio}});
    }
    doc["failures"] = r.failures;
    fmt::print("{}\n", doc.dump(2));
    return r.failures.empty() ? kExitOk : kExitFailure;
  }
  if (f.markdown) {
    fmt::print("| vLLM log | split | vLLM | engine | logged KV tokens | predicted | error |\n");
    fmt::print("|---|---|---|---|---|---|---|\n");
  }
  for (const auto& row : r.rows) {
    if (f.markdown) {
      fmt::print("| {} | {} | {} | {} | {:.0f} | {:.0f} | {:+.1f}% |\n", row.row->id,
                 row.row->held_out ? "held-out" : "calibration", row.row->vllm_version,
                 row.row->engine, row.row->logged_tokens, row.predicted, row.error_pct());
    } else {
      fmt::print("{:<44} {:<11} {:>10.0f} {:>10.0f} {:>+7.1f}%\n", row.row->id,
                 row.row->held_out ? "held-out" : "calibration", row.row->logged_tokens,
                 row.predicted, row.error_pct());
    }
  }
  if (!f.markdown) {
    for (bool held : {false, true}) {
      const sim::MetricSummary s = r.summary(held);
      if (s.n == 0) continue;
      fmt::print("{:<11} KV capacity n={:<3} median |error| {:5.1f}%  worst {:.2f}x\n",
                 held ? "held-out" : "calibration", s.n, s.median_abs_pct, s.worst_ratio);
    }
  }
  for (const auto& e : r.failures) fmt::print("not predicted: {}\n", e);
  return r.failures.empty() ? kExitOk : kExitFailure;
}

using ClassFilter = std::pair<std::optional<sim::ModelClass>, const char*>;
constexpr ClassFilter kClasses[] = {{sim::ModelClass::kDense, "dense"},
                                    {sim::ModelClass::kMoe, "moe"}};
constexpr ClassFilter kAllAndClasses[] = {
    {std::nullopt, "all"}, {sim::ModelClass::kDense, "dense"}, {sim::ModelClass::kMoe, "moe"}};

int run_validate(const ValidateFlags& f) {
  if (f.split != "all" && f.split != "calibration" && f.split != "held-out") {
    throw UsageError(
        fmt::format("--split '{}' is not known; accepted: all, calibration, held-out", f.split));
  }
  auto parsed = sim::parse_knob_overrides(f.knobs);
  if (!parsed.ok()) throw UsageError(parsed.error());
  const sim::KnobOverrides overrides = *parsed;
  if (f.kv) return run_validate_kv(f, overrides);
  auto points = sim::load_validation_set(f.data);
  if (!points.ok()) throw UsageError(fmt::format("--data: {}", points.error()));
  if (!f.batch.empty()) {
    std::set<std::string> batches;
    for (const auto& p : *points) batches.insert(p.batch);
    if (!batches.count(f.batch)) {
      throw UsageError(fmt::format("--batch '{}' is not in {}/points.jsonl; its batches: {}",
                                   f.batch, f.data, fmt::join(batches, ", ")));
    }
  }
  std::vector<sim::ValidationPoint> chosen;
  for (const auto& p : *points) {
    if (!f.engine.empty() && p.sim_engine != f.engine) continue;
    if (!f.batch.empty() && p.batch != f.batch) continue;
    if (f.split == "all" || (f.split == "held-out") == p.held_out) chosen.push_back(p);
  }
  const sim::ValidationResult r = sim::run_validation(chosen, overrides);
  const sim::ValidationMetric metrics[] = {sim::ValidationMetric::kTtft,
                                           sim::ValidationMetric::kTpot,
                                           sim::ValidationMetric::kOutputThroughput};
  if (f.json) {
    nlohmann::json doc = {{"rows", nlohmann::json::array()}, {"summary", nlohmann::json::array()}};
    for (const auto& row : r.rows) {
      doc["rows"].push_back({{"id", row.point->id},
                             {"held_out", row.point->held_out},
                             {"model_class", row.point->moe ? "moe" : "dense"},
                             {"metric", sim::metric_name(row.metric)},
                             {"measured", row.measured},
                             {"predicted", row.predicted},
                             {"error_pct", row.error_pct()}});
    }
    for (bool held : {false, true}) {
      for (auto m : metrics) {
        const sim::MetricSummary s = r.summary(held, m);
        doc["summary"].push_back({{"split", held ? "held-out" : "calibration"},
                                  {"metric", sim::metric_name(m)},
                                  {"n", s.n},
                                  {"median_abs_pct", s.n > 0 ? s.median_abs_pct : 0.0},
                                  {"worst_ratio", s.worst_ratio}});
        for (auto [cls, name] : kClasses) {
          const sim::MetricSummary c = r.summary(held, m, cls);
          if (c.n == 0) continue;
          doc["summary_by_class"].push_back({{"split", held ? "held-out" : "calibration"},
                                             {"class", name},
                                             {"metric", sim::metric_name(m)},
                                             {"n", c.n},
                                             {"median_abs_pct", c.median_abs_pct},
                                             {"worst_ratio", c.worst_ratio}});
        }
      }
    }
    doc["failures"] = r.failures;
    fmt::print("{}\n", doc.dump(1));
  } else if (f.markdown) {
    fmt::print(
        "| point | split | metric | measured | predicted | error |\n|---|---|---|---|---|---|\n");
    for (const auto& row : r.rows) {
      fmt::print("| {} | {} | {} | {:.4g} | {:.4g} | {:+.1f}% |\n", row.point->id,
                 row.point->held_out ? "held-out" : "calibration", sim::metric_name(row.metric),
                 row.measured, row.predicted, row.error_pct());
    }
  } else {
    fmt::print("{:<36} {:<11} {:<12} {:>11} {:>11} {:>8}\n", "point", "split", "metric", "measured",
               "predicted", "error");
    for (const auto& row : r.rows) {
      fmt::print("{:<36} {:<11} {:<12} {:>11.4g} {:>11.4g} {:>+7.1f}%\n", row.point->id,
                 row.point->held_out ? "held-out" : "calibration", sim::metric_name(row.metric),
                 row.measured, row.predicted, row.error_pct());
    }
  }
  if (!f.json) {
    // All points, then each model class (the figures estimate and sim run print are the held-out
    // ones of the prediction's class).
    for (auto [cls, name] : kAllAndClasses) {
      for (bool held : {false, true}) {
        for (auto m : metrics) {
          const sim::MetricSummary s = r.summary(held, m, cls);
          if (s.n == 0) continue;
          fmt::print("{:<11} {:<5} {:<12} n={:<3} median |error| {:5.1f}%  worst {:.2f}x\n",
                     held ? "held-out" : "calibration", name, sim::metric_name(m), s.n,
                     s.median_abs_pct, s.worst_ratio);
        }
      }
    }
    for (const auto& e : r.failures) fmt::print("not replayed: {}\n", e);
  }
  if (!f.write_figures.empty()) {
    if (f.split != "all" || !overrides.empty() || !f.engine.empty() || !f.batch.empty()) {
      throw UsageError(
          "--write-figures needs the whole set: no --split, --engine, --batch or --knob");
    }
    std::ofstream out(f.write_figures);
    out << sim::accuracy_figures_header(r);
    if (!out)
      throw UsageError(fmt::format("--write-figures '{}' cannot be written", f.write_figures));
  }
  return r.failures.empty() ? kExitOk : kExitFailure;
}

}  // namespace

void register_sim_validate_command(CLI::App& sim_app, CommandSet& cmds) {
  auto f = std::make_shared<ValidateFlags>();
  auto* sub = sim_app.add_subcommand(
      "validate", "Replay published measurements (data/validation/) and print the model's errors");
  sub->add_option("--data", f->data, "folder with points.jsonl and split.json")
      ->capture_default_str();
  sub->add_option("--split", f->split, "which points: all, calibration, held-out")
      ->capture_default_str();
  sub->add_option("--engine", f->engine,
                  "only the points replayed with this engine preset (their `sim_engine`)");
  sub->add_option("--batch", f->batch,
                  "only the points of this batch (points.jsonl `batch`; \"first\" for the first "
                  "batch): each was split before anything was fitted to it");
  sub->add_option("--knob", f->knobs,
                  "NAME=VALUE: replace a preset knob (for fitting on --split calibration)");
  sub->add_flag("--json", f->json, "print JSON (rows, summary, failures)");
  sub->add_flag("--markdown", f->markdown, "print the rows as a Markdown table");
  sub->add_flag("--kv", f->kv,
                "the KV-cache capacity against vLLM's startup logs (kv_capacity.jsonl) instead of "
                "the serving points");
  sub->add_option("--write-figures", f->write_figures,
                  "write the held-out summary as a C++ header (src/sim/accuracy_figures.h)");
  cmds.add(sub, [f] { return run_validate(*f); });
}

}  // namespace tokperf
