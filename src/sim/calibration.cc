#include "sim/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "load/load_plan.h"
#include "metrics/stats.h"
#include "report/record_reader.h"
#include "sim/engine_preset.h"
#include "sim/step_timeline.h"
#include "sim/validation.h"

namespace tokperf::sim {
namespace {

// What level_figures needs of one request.
struct Sample {
  double ttft_ms = NAN, tpot_ms = NAN;
  int64_t output_tokens = 0, send_ns = 0, end_ns = 0;
};

Sample sample_of(const RequestTimeline& t) {
  const RequestMetrics m = compute_request_metrics(t);
  Sample s;
  s.ttft_ms = m.ttft_ms;
  s.tpot_ms = m.tpot_ms;
  s.output_tokens = std::max<int64_t>(0, m.output_tokens);
  s.send_ns = t.send_ns;
  s.end_ns = t.end_ns > 0 ? t.end_ns : t.send_ns;
  return s;
}

double median_of(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  return v.empty() ? NAN : percentile(std::move(v), 50);
}

LevelFigures figures_of(const std::vector<Sample>& samples) {
  LevelFigures f;
  std::vector<double> ttft, tpot;
  int64_t tokens = 0, first = std::numeric_limits<int64_t>::max(), last = 0;
  for (const Sample& s : samples) {
    ttft.push_back(s.ttft_ms);
    tpot.push_back(s.tpot_ms);
    tokens += s.output_tokens;
    first = std::min(first, s.send_ns);
    last = std::max(last, s.end_ns);
  }
  f.ttft_ms = median_of(std::move(ttft));
  f.tpot_ms = median_of(std::move(tpot));
  f.output_tok_s =
      last > first ? static_cast<double>(tokens) / (static_cast<double>(last - first) / 1e9) : NAN;
  return f;
}

std::vector<int64_t> arrivals_of(const RequestTimeline& t) {
  std::vector<int64_t> v;
  v.reserve(t.token_events.size());
  for (const TokenEvent& e : t.token_events) v.push_back(e.t_ns);
  return v;
}

void with_steps(LevelFigures& f, const std::vector<std::vector<int64_t>>& streams) {
  const StepFigures s = step_figures(streams);
  f.decode_step_ms = s.decode_step_ms;
  f.token_spacing_us = s.token_spacing_us;
}

bool has_steps(const LevelFigures& f) {
  return std::isfinite(f.decode_step_ms) || std::isfinite(f.token_spacing_us);
}

// A summary.json value that may be null or absent: its integer, else `otherwise`.
int64_t int_or(const nlohmann::json& j, const char* key, int64_t otherwise) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : otherwise;
}

bool is_time_knob(const std::string& name) {
  return name.size() > 2 && name.compare(name.size() - 2, 2, "_s") == 0;
}

std::string knob_item(const std::string& name, double value) {
  return fmt::format("{}={:.4g}", name, value);
}

CalibrationSetup with_values(const CalibrationSetup& base, const std::vector<FittedKnob>& knobs) {
  CalibrationSetup s = base;
  for (const FittedKnob& k : knobs) s.flags.knobs.push_back(knob_item(k.name, k.value));
  return s;
}

}  // namespace

LevelFigures level_figures(const std::vector<RequestTimeline>& timelines, bool steps) {
  std::vector<Sample> samples;
  std::vector<std::vector<int64_t>> streams;
  for (const auto& t : timelines) {
    if (t.phase == Phase::kMeasure && t.ok()) samples.push_back(sample_of(t));
    if (steps && t.ok()) streams.push_back(arrivals_of(t));
  }
  LevelFigures f = figures_of(samples);
  if (steps) with_steps(f, streams);
  return f;
}

Result<std::vector<MeasuredLevel>> load_measured_levels(const std::string& dir,
                                                        std::vector<std::string>& notes,
                                                        bool steps) {
  const std::string summary_path = dir + "/summary.json";
  auto text = read_text_file(summary_path);
  if (!text.ok()) {
    return Error{"'" + dir + "' is not a run folder: " + summary_path +
                 " cannot be read (give the --out folder of a bench run)"};
  }
  const nlohmann::json summary = nlohmann::json::parse(*text, nullptr, false);
  if (!summary.is_object() || !summary.contains("levels") || !summary["levels"].is_array()) {
    return Error{summary_path + " is not a tokperf summary (no \"levels\" list)"};
  }
  const nlohmann::json& levels_json = summary["levels"];
  const nlohmann::json load = summary.contains("config") && summary["config"].is_object()
                                  ? summary["config"].value("load", nlohmann::json::object())
                                  : nlohmann::json::object();
  const int64_t max_concurrency = int_or(load, "max_concurrency", 0);

  struct Pending {
    int64_t intended_ns = 0;
    Phase phase = Phase::kMeasure;
    OfflineLengths lengths;
    Sample sample;
  };
  std::vector<std::vector<Pending>> by_level(levels_json.size());
  std::vector<std::vector<std::vector<int64_t>>> streams(steps ? levels_json.size() : 0);
  std::vector<int64_t> failed(levels_json.size(), 0), cached(levels_json.size(), 0);
  RecordFileReader reader;
  if (Status s = reader.open(dir + "/requests.jsonl"); !s.ok()) {
    return Error{s.error() +
                 " (sim calibrate replays every request of the run: a run saved with "
                 "--no-save has none)"};
  }
  int64_t unknown_lengths = 0;
  for (;;) {
    auto next = reader.next();
    if (!next.ok()) return Error{next.error()};
    if (!next->has_value()) break;
    const RequestTimeline& t = **next;
    if (t.level < 0 || static_cast<size_t>(t.level) >= by_level.size()) {
      return Error{
          fmt::format("{}/requests.jsonl line {}: level {} is not in summary.json's {} "
                      "levels",
                      dir, reader.line(), t.level, by_level.size())};
    }
    const auto lv = static_cast<size_t>(t.level);
    if (!t.ok()) {
      ++failed[lv];
      continue;
    }
    const RequestMetrics m = compute_request_metrics(t);
    int64_t prompt = m.prompt_tokens > 0 ? m.prompt_tokens : t.requested_input_tokens;
    if (prompt < 1) {
      ++unknown_lengths;
      continue;
    }
    Pending p;
    p.intended_ns = t.intended_ns;
    p.phase = t.phase;
    p.lengths.prompt_tokens = prompt;
    p.lengths.output_tokens = std::max<int64_t>(1, m.output_tokens);
    p.sample = sample_of(t);
    if (t.cached_prompt_tokens() > 0) cached[lv] += t.cached_prompt_tokens();
    if (steps) streams[lv].push_back(arrivals_of(t));
    by_level[lv].push_back(std::move(p));
  }
  if (unknown_lengths > 0) {
    notes.push_back(
        fmt::format("{}: {} requests left out: their prompt length is unknown (no "
                    "usage.prompt_tokens and no requested length)",
                    dir, unknown_lengths));
  }

  std::vector<MeasuredLevel> out;
  for (size_t i = 0; i < by_level.size(); ++i) {
    const nlohmann::json& lj = levels_json[i];
    const std::string label = lj.contains("label") && lj["label"].is_string()
                                  ? lj["label"].get<std::string>()
                                  : fmt::format("level {}", i);
    std::vector<Pending>& reqs = by_level[i];
    std::stable_sort(reqs.begin(), reqs.end(), [](const Pending& a, const Pending& b) {
      return a.intended_ns < b.intended_ns;
    });
    MeasuredLevel m;
    m.label = dir + " " + label;
    m.failed = failed[i];
    m.cached_tokens = cached[i];
    const bool closed = lj.contains("load") && lj["load"].is_object() &&
                        lj["load"].value("mode", "") == "closed_loop";
    m.slots = closed ? int_or(lj, "concurrency", 0) : max_concurrency;
    m.closed_loop = closed;
    std::vector<Sample> measured;
    for (size_t k = 0; k < reqs.size(); ++k) {
      const Pending& p = reqs[k];
      m.arrivals.push_back(PlannedArrival{p.intended_ns - reqs.front().intended_ns, p.phase,
                                          static_cast<int64_t>(k)});
      m.lengths.push_back(p.lengths);
      if (p.phase == Phase::kMeasure) measured.push_back(p.sample);
    }
    if (measured.empty()) {
      notes.push_back(m.label + ": left out, no measured request succeeded");
      continue;
    }
    if (closed && m.slots < 1) {
      notes.push_back(m.label + ": left out, a closed loop whose concurrency summary.json lacks");
      continue;
    }
    m.measured = figures_of(measured);
    if (steps) {
      if (!(closed && m.slots < 2)) with_steps(m.measured, streams[i]);
      if (!has_steps(m.measured)) {
        notes.push_back(m.label + ": no step figures (one user, or no step that several "
                                  "streams share)");
      }
    }
    if (m.failed > 0) {
      notes.push_back(fmt::format("{}: {} failed requests are not replayed", m.label, m.failed));
    }
    if (m.cached_tokens > 0) {
      notes.push_back(fmt::format(
          "{}: the server served {} prompt tokens from its prefix cache; the replay sends every "
          "prompt whole (no shared prefixes), so its prefill is longer than the server's",
          m.label, m.cached_tokens));
    }
    out.push_back(std::move(m));
  }
  if (out.empty()) return Error{dir + " has no level with a measured request that succeeded"};
  return out;
}

Result<LevelFigures> replay_level(const CostModel& cost, const EngineConfig& config,
                                  const MeasuredLevel& level) {
  OfflineLevel lv;
  lv.prompt_tokens = lv.output_tokens = 1;
  lv.ignore_eos = true;
  lv.plan.open_loop = true;
  lv.plan.spec = LevelSpec{LoadMode::kRate, 1, 1, 0};
  lv.plan.max_concurrency = level.slots;
  lv.plan.arrivals = level.arrivals;
  lv.lengths = level.lengths;
  auto run = run_offline_level(cost, config, lv);
  if (!run.ok()) return Error{level.label + ": " + run.error()};
  return level_figures(run->timelines, has_steps(level.measured));
}

Result<LevelFigures> run_level_as_sim_run(const CostModel& cost, const EngineConfig& config,
                                          const MeasuredLevel& level) {
  if (!level.closed_loop) return LevelFigures{NAN, NAN, NAN};
  OfflineLevel lv;
  lv.prompt_tokens = lv.output_tokens = 1;
  lv.ignore_eos = true;
  lv.plan.spec = LevelSpec{LoadMode::kConcurrency, static_cast<double>(level.slots),
                           static_cast<double>(level.slots), 0};
  int64_t counts[3] = {0, 0, 0};  // warm-up, measured, cool-down requests that succeeded
  for (const PlannedArrival& a : level.arrivals) {
    ++counts[a.phase == Phase::kWarmup ? 0 : a.phase == Phase::kMeasure ? 1 : 2];
  }
  lv.plan.warmup = PhaseLimit{0, counts[0]};
  lv.plan.measure = PhaseLimit{0, counts[1]};
  lv.plan.cooldown = PhaseLimit{0, counts[2]};
  // The n-th request sent gets the n-th measured lengths (they are in intended-send order).
  size_t sent = 0;
  lv.request_of = [&level, &sent](const SendOrder&) {
    const size_t n = level.lengths.size();
    return n == 0 ? OfflineLengths{} : level.lengths[sent++ % n];
  };
  auto run = run_offline_level(cost, config, lv);
  if (!run.ok()) return Error{level.label + ": " + run.error()};
  return level_figures(run->timelines, has_steps(level.measured));
}

namespace {

// The objective over the figures `only` selects: 0 TTFT, 1 TPOT, -1 all. The step figures, where
// measured, go with the figure they shape: the decode-only step with TPOT, the spacing of one
// step's tokens (the front end's cost per token) with TTFT.
double objective_of(const std::vector<LevelFigures>& simulated,
                    const std::vector<MeasuredLevel>& levels, int only) {
  double sum = 0;
  for (size_t i = 0; i < levels.size() && i < simulated.size(); ++i) {
    const LevelFigures& m = levels[i].measured;
    const LevelFigures& s = simulated[i];
    const std::pair<double, double> figures[] = {{s.ttft_ms, m.ttft_ms},
                                                 {s.tpot_ms, m.tpot_ms},
                                                 {s.output_tok_s, m.output_tok_s},
                                                 {s.decode_step_ms, m.decode_step_ms},
                                                 {s.token_spacing_us, m.token_spacing_us}};
    constexpr int kGoesWith[] = {0, 1, 2, 1, 0};
    for (int f = 0; f < 5; ++f) {
      const auto [sim, meas] = figures[f];
      if ((only >= 0 && kGoesWith[f] != only) || !std::isfinite(meas) || meas <= 0) continue;
      if (f >= 3 && !(std::isfinite(sim) && sim > 0)) {
        sum += std::log(10.0);  // the replay shows no such step: as far off as 10x, not a failure
        continue;
      }
      if (!std::isfinite(sim) || sim <= 0) return std::numeric_limits<double>::infinity();
      sum += std::fabs(std::log(sim / meas));
    }
  }
  return sum;
}

}  // namespace

double calibration_objective(const std::vector<LevelFigures>& simulated,
                             const std::vector<MeasuredLevel>& levels) {
  return objective_of(simulated, levels, -1);
}

Result<std::vector<LevelFigures>> replay_levels(const CalibrationSetup& setup,
                                                const std::vector<MeasuredLevel>& levels,
                                                bool as_sim_run) {
  auto d = resolve_deployment(setup.flags);
  if (!d.ok()) return Error{d.error()};
  auto preset = engine_preset(setup.flags, d->gpu, d->tp);
  if (!preset.ok()) return Error{preset.error()};
  const EngineConfig cfg = engine_config_with_flags(
      *preset, setup.engine_flags, setup.max_num_seqs_given, setup.max_num_batched_tokens_given);
  const CostModel cost(std::move(d).value(), engine_knobs(*preset, cfg, setup.flags));
  if (!cost.fits()) return Error{"the weights do not fit in the GPUs' memory"};
  // The levels are independent replays (each its own engine): one thread each, up to the cores.
  std::vector<std::optional<Result<LevelFigures>>> results(levels.size());
  const size_t workers =
      std::max<size_t>(1, std::min<size_t>(levels.size(), std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < levels.size(); i = next++) {
      results[i].emplace(as_sim_run ? run_level_as_sim_run(cost, cfg, levels[i])
                                    : replay_level(cost, cfg, levels[i]));
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  std::vector<LevelFigures> out;
  for (auto& r : results) {
    if (!r->ok()) return Error{r->error()};
    out.push_back(**r);
  }
  return out;
}

namespace {

constexpr const char* kOnePromptLength =
    "every level fitted on has prompts of about {:.0f} tokens: attention's cost cannot be told from "
    "the linear layers' at one length, so the fit may not carry to others (a real llama.cpp server "
    "fitted at 156 tokens came out 47% off on TTFT at 540); add a run at another prompt length";
constexpr const char* kOneOutputLength =
    "every level fitted on has answers of about {:.0f} tokens: the front end's cost per request "
    "cannot be told from its cost per streamed token at one length, so the fit may split its time "
    "the wrong way and miss other loads (a simulated server measured with 64-token answers was "
    "fitted up to 20% off on TTFT at a load it had not seen, by where the fit started; with "
    "16-token runs added, within 2%); add a run with another output length";

// A note when every level's median `field` (prompt or output tokens) is within 1.5x of the
// others': `text` with the middle of those medians in place of its {:.0f}. Empty otherwise, or
// when no level has one.
std::string one_length_note(const std::vector<MeasuredLevel>& levels,
                            int64_t OfflineLengths::*field, const char* text) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const MeasuredLevel& l : levels) {
    std::vector<double> lengths;
    for (const OfflineLengths& x : l.lengths) {
      if (x.*field > 0) lengths.push_back(static_cast<double>(x.*field));
    }
    if (lengths.empty()) continue;
    const double median = percentile(lengths, 50);
    lo = std::min(lo, median);
    hi = std::max(hi, median);
  }
  if (hi <= 0 || hi > 1.5 * lo) return "";
  return fmt::format(fmt::runtime(text), (lo + hi) / 2);
}

}  // namespace

std::string one_prompt_length_note(const std::vector<MeasuredLevel>& levels) {
  return one_length_note(levels, &OfflineLengths::prompt_tokens, kOnePromptLength);
}

std::string one_output_length_note(const std::vector<MeasuredLevel>& levels) {
  return one_length_note(levels, &OfflineLengths::output_tokens, kOneOutputLength);
}

std::vector<std::string> default_calibration_knobs(bool w8a8) {
  return {w8a8 ? "w8a8_compute_efficiency" : "compute_efficiency",
          w8a8 ? "w8a8_bandwidth_efficiency" : "weight_stream_efficiency",
          "attention_efficiency",
          "bandwidth_efficiency",
          "step_overhead_s",
          "per_seq_overhead_s",
          "request_overhead_s",
          "request_latency_s",
          "output_overhead_s"};
}

CalibrationSetup with_fitted_knobs(const CalibrationSetup& setup, const CalibrationFit& fit) {
  return with_values(setup, fit.knobs);
}

std::string CalibrationFit::flags() const {
  std::string s;
  for (const FittedKnob& k : knobs)
    s += (s.empty() ? "" : " ") + ("--knob " + knob_item(k.name, k.value));
  return s;
}

namespace {

// Knobs that set the time of a decode step (what TPOT measures); the rest shape TTFT first.
bool governs_tpot(const std::string& name) {
  static const char* kDecode[] = {
      "bandwidth_efficiency",     "step_overhead_s", "per_seq_overhead_s",       "kv_read_factor",
      "weight_stream_efficiency", "gemm_latency_s",  "w8a8_bandwidth_efficiency"};
  for (const char* k : kDecode) {
    if (name == k) return true;
  }
  return false;
}

double rounded(const std::string& name, double v) {
  return std::strtod(knob_item(name, v).substr(name.size() + 1).c_str(), nullptr);
}

}  // namespace

Result<CalibrationFit> fit_calibration(const CalibrationSetup& setup,
                                       const std::vector<MeasuredLevel>& levels,
                                       const std::vector<std::string>& knob_names, int rounds) {
  auto d = resolve_deployment(setup.flags);
  if (!d.ok()) return Error{d.error()};
  auto preset = engine_preset(setup.flags, d->gpu, d->tp);
  if (!preset.ok()) return Error{preset.error()};
  const EngineConfig cfg = engine_config_with_flags(
      *preset, setup.engine_flags, setup.max_num_seqs_given, setup.max_num_batched_tokens_given);
  const CostKnobs start_knobs = engine_knobs(*preset, cfg, setup.flags);

  CalibrationFit fit;
  for (const std::string& name : knob_names) {
    auto v = continuous_knob_value(start_knobs, name);
    if (!v.ok()) return Error{"--fit: " + v.error()};
    // A value printed with 4 significant digits is the value evaluated (the flags reproduce it).
    const double start = rounded(name, *v);
    fit.knobs.push_back(FittedKnob{name, start, start});
  }
  auto allowed = [](const std::string& name, double c) {
    if (!std::isfinite(c) || c < 0) return false;
    if (name.find("efficiency") != std::string::npos && (c <= 0 || c > 1)) return false;
    return c > 0 || is_time_knob(name);
  };
  // The objective of these values over figure `only` (see objective_of); infinity when the
  // engine cannot be built or a replay fails.
  auto evaluate = [&](const std::vector<FittedKnob>& knobs, int only,
                      std::vector<LevelFigures>* figures) -> double {
    auto r = replay_levels(with_values(setup, knobs), levels);
    if (!r.ok()) return std::numeric_limits<double>::infinity();
    const double obj = objective_of(*r, levels, only);
    if (figures != nullptr) *figures = std::move(r).value();
    return obj;
  };
  {
    auto first = replay_levels(with_values(setup, fit.knobs), levels);
    if (!first.ok()) return Error{first.error()};
    fit.start = *first;
    fit.objective_start = calibration_objective(fit.start, levels);
  }

  // 1. Coordinate descent on multiplicative grids, each knob on the figure it governs first
  //    (decode-step knobs on TPOT, then the rest on TTFT), then every knob on all figures.
  const std::vector<double> coarse = {0, 0.25, 0.5, 0.7, 0.85, 1.15, 1.4, 2, 4};
  const std::vector<double> fine = {0.9, 0.95, 1.05, 1.1};
  // From 0 a multiplier cannot move a time: these absolute values instead (10 us to 30 ms).
  const std::vector<double> from_zero = {1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2};
  auto descend = [&](int only, bool tpot_knobs, bool other_knobs, int passes) {
    double best = evaluate(fit.knobs, only, nullptr);
    for (int pass = 0; pass < passes + 1; ++pass) {
      const std::vector<double>& grid = pass < passes ? coarse : fine;
      for (size_t i = 0; i < fit.knobs.size(); ++i) {
        const std::string name = fit.knobs[i].name;  // a copy: fit.knobs is replaced below
        if (governs_tpot(name) ? !tpot_knobs : !other_knobs) continue;
        const double v = fit.knobs[i].value;
        std::vector<double> candidates;
        if (v == 0) {
          if (is_time_knob(name)) candidates = from_zero;
        } else {
          for (double m : grid) candidates.push_back(v * m);
        }
        for (double c : candidates) {
          if (!allowed(name, c)) continue;
          std::vector<FittedKnob> trial = fit.knobs;
          trial[i].value = rounded(name, c);
          if (trial[i].value == v) continue;
          const double obj = evaluate(trial, only, nullptr);
          if (obj < best - 1e-9) {
            best = obj;
            fit.knobs = std::move(trial);
          }
        }
      }
    }
  };
  // 3. The whole search from several starts, the time knobs as given, x3 and x0.3, then the
  //    front end's cost per streamed token alone x4 and its cost per request alone x4: a front
  //    end near saturation is a cliff in the objective that a local search from one side misses,
  //    and the two costs trade against each other along it (a synthetic server's 12 ms and 300 us
  //    were fitted as 15.5 ms and 33 us from one start before the last two were added).
  const std::vector<FittedKnob> origin = fit.knobs;
  std::vector<FittedKnob> best_knobs = origin;
  double best_objective = evaluate(origin, -1, nullptr);
  // A last pass starts from the best of the others (scale 0): a search restarted from a local
  // optimum, with fresh grids and simplex, often leaves it.
  struct Start {
    double scale;       // every time knob x scale; 0: the best of the starts before
    const char* alone;  // non-null: only this knob, x scale
  };
  for (const Start& st : {Start{1.0, nullptr}, Start{3.0, nullptr}, Start{0.3, nullptr},
                          Start{4.0, "output_overhead_s"}, Start{4.0, "request_overhead_s"},
                          Start{0.0, nullptr}}) {
    const double scale = st.scale;
    if (st.alone != nullptr &&
        std::none_of(origin.begin(), origin.end(), [&](const FittedKnob& k) {
          return k.name == st.alone && k.value > 0;
        })) {
      continue;  // that knob is not fitted (or starts at 0): the start would be the first's
    }
    fit.knobs = scale == 0 ? best_knobs : origin;
    for (FittedKnob& k : fit.knobs) {
      if (scale > 0 && is_time_knob(k.name) && k.value > 0 &&
          (st.alone == nullptr || k.name == st.alone)) {
        k.value = rounded(k.name, k.value * scale);
      }
    }
    descend(/*TPOT*/ 1, true, false, rounds);
    descend(/*TTFT*/ 0, false, true, rounds);
    descend(-1, true, true, rounds);

    // 2. Nelder-Mead in the logarithms of the knobs that are not 0, on all figures: the knobs
    //    trade against each other (a slower GPU or a longer step overhead), which one knob at a
    //    time cannot follow.
    std::vector<size_t> free;
    for (size_t i = 0; i < fit.knobs.size(); ++i) {
      if (fit.knobs[i].value > 0) free.push_back(i);
    }
    // Restarted from the best vertex with a fresh simplex while that still gains: a collapsed
    // simplex stops where a ridge turns.
    for (int restart = 0; restart < 3 && !free.empty(); ++restart) {
      const double before = evaluate(fit.knobs, -1, nullptr);
      const size_t n = free.size();
      auto knobs_at = [&](const std::vector<double>& x) {
        std::vector<FittedKnob> k = fit.knobs;
        for (size_t j = 0; j < n; ++j) k[free[j]].value = rounded(k[free[j]].name, std::exp(x[j]));
        return k;
      };
      auto f_at = [&](const std::vector<double>& x) {
        const auto k = knobs_at(x);
        for (size_t j = 0; j < n; ++j) {
          if (!allowed(k[free[j]].name, k[free[j]].value))
            return std::numeric_limits<double>::infinity();
        }
        return evaluate(k, -1, nullptr);
      };
      std::vector<std::vector<double>> simplex(n + 1, std::vector<double>(n));
      for (size_t j = 0; j < n; ++j) simplex[0][j] = std::log(fit.knobs[free[j]].value);
      for (size_t v = 1; v <= n; ++v) {
        simplex[v] = simplex[0];
        simplex[v][v - 1] += std::log(restart % 2 ? 0.6 : 1.5);
      }
      std::vector<double> fx(n + 1);
      for (size_t v = 0; v <= n; ++v) fx[v] = f_at(simplex[v]);
      const int max_evaluations = 30 * static_cast<int>(n) + 30;
      for (int evals = 0; evals < max_evaluations;) {
        std::vector<size_t> order(n + 1);
        for (size_t v = 0; v <= n; ++v) order[v] = v;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fx[a] < fx[b]; });
        const size_t best = order[0], worst = order[n], second = order[n - 1];
        if (fx[worst] - fx[best] < 1e-6) break;
        std::vector<double> centroid(n, 0.0);
        for (size_t v = 0; v <= n; ++v) {
          if (v == worst) continue;
          for (size_t j = 0; j < n; ++j) centroid[j] += simplex[v][j] / static_cast<double>(n);
        }
        auto toward = [&](double t) {
          std::vector<double> x(n);
          for (size_t j = 0; j < n; ++j) x[j] = centroid[j] + t * (simplex[worst][j] - centroid[j]);
          return x;
        };
        const auto reflected = toward(-1.0);
        const double fr = f_at(reflected);
        ++evals;
        if (fr < fx[best]) {
          const auto expanded = toward(-2.0);
          const double fe = f_at(expanded);
          ++evals;
          if (fe < fr) {
            simplex[worst] = expanded, fx[worst] = fe;
          } else {
            simplex[worst] = reflected, fx[worst] = fr;
          }
        } else if (fr < fx[second]) {
          simplex[worst] = reflected, fx[worst] = fr;
        } else {
          const auto contracted = toward(fr < fx[worst] ? -0.5 : 0.5);
          const double fc = f_at(contracted);
          ++evals;
          if (fc < std::min(fr, fx[worst])) {
            simplex[worst] = contracted, fx[worst] = fc;
          } else {
            for (size_t v = 0; v <= n; ++v) {
              if (v == best) continue;
              for (size_t j = 0; j < n; ++j) {
                simplex[v][j] = simplex[best][j] + 0.5 * (simplex[v][j] - simplex[best][j]);
              }
              fx[v] = f_at(simplex[v]);
              ++evals;
            }
          }
        }
      }
      size_t best = 0;
      for (size_t v = 1; v <= n; ++v) {
        if (fx[v] < fx[best]) best = v;
      }
      if (fx[best] >= before - 1e-4) break;
      fit.knobs = knobs_at(simplex[best]);
    }
    const double o = evaluate(fit.knobs, -1, nullptr);
    if (o < best_objective) {
      best_objective = o;
      best_knobs = fit.knobs;
    }
  }
  fit.knobs = best_knobs;
  fit.objective = evaluate(fit.knobs, -1, &fit.fitted);
  return fit;
}

}  // namespace tokperf::sim
