#include "load/capacity_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "core/units.h"

namespace tokperf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct LevelStats {
  int passes = 0, fails = 0, sure_passes = 0, sure_fails = 0;
  int trials() const { return passes + fails; }
  bool majority_pass() const { return passes > fails; }  // a tie counts as a failure
  bool surely_passes() const { return sure_passes > 0 && fails == 0; }
  bool surely_fails() const { return sure_fails > 0 && passes == 0; }
};

class Search {
 public:
  Search(const RunLevelFn& run, const CapacitySearchOptions& o)
      : run_(run), o_(o), t0_(o.clock ? o.clock->now_ns() : 0) {}

  CapacityResult go();

 private:
  bool budget_left() {
    if (static_cast<int>(result_.trials.size()) >= o_.max_trials) return false;
    if (o_.time_budget_ns > 0 && o_.clock && o_.clock->now_ns() - t0_ >= o_.time_budget_ns) {
      return false;
    }
    return true;
  }
  double snap(double x) const {
    x = std::clamp(x, o_.min_value, o_.max_value);
    return o_.integer ? std::floor(x) : x;
  }
  bool close(double lo, double hi) const {
    return o_.integer ? hi - lo <= 1 : hi - lo <= o_.rate_resolution * lo;
  }
  double mid(double lo, double hi) const {
    return o_.integer ? std::floor(lo + (hi - lo) / 2) : (lo + hi) / 2;
  }
  void trial(double x) {
    LevelOutcome out = run_(x);
    LevelStats& s = stats_[x];
    (out.meets_slo ? s.passes : s.fails)++;
    if (out.decisive) (out.meets_slo ? s.sure_passes : s.sure_fails)++;
    result_.trials.push_back({x, std::move(out)});
  }
  // Runs trials at x until one is decisive or the level has max_trials_per_level.
  void judge(double x) {
    do {
      trial(x);
    } while (budget_left() && stats_[x].sure_passes + stats_[x].sure_fails == 0 &&
             stats_[x].trials() < o_.max_trials_per_level);
  }
  // The next load to try, or nullopt when done.
  std::optional<double> next();
  void finish();

  const RunLevelFn& run_;
  const CapacitySearchOptions& o_;
  int64_t t0_;
  std::map<double, LevelStats> stats_;
  CapacityResult result_;
  std::optional<double> lo_, hi_;  // largest majority pass below hi_; smallest majority failure
};

std::optional<double> Search::next() {
  hi_.reset();
  lo_.reset();
  for (const auto& [x, s] : stats_) {
    if (!s.majority_pass()) {
      hi_ = x;
      break;
    }
  }
  for (const auto& [x, s] : stats_) {
    if (hi_ && x >= *hi_) break;
    if (s.majority_pass()) lo_ = x;
  }
  if (!lo_) {  // nothing passes yet: halve down from the lowest failure
    if (*hi_ <= o_.min_value) return std::nullopt;
    return snap(*hi_ / 2);
  }
  if (!hi_) {  // everything passes: double up
    if (*lo_ >= o_.max_value) return std::nullopt;
    return snap(*lo_ * 2);
  }
  if (!close(*lo_, *hi_)) return mid(*lo_, *hi_);
  // Converged: confirm both sides of the boundary with extra trials.
  result_.converged = true;
  if (stats_[*lo_].trials() < 1 + o_.confirm_trials) return *lo_;
  if (stats_[*hi_].trials() < 1 + o_.confirm_trials) return *hi_;
  // Tighten the interval: probe between the boundary and the nearest decisive levels. No tested
  // load lies strictly between the two ends of either gap, so each midpoint is new.
  std::optional<double> sure_fail, sure_pass;
  for (const auto& [x, s] : stats_) {
    if (x > *lo_ && s.surely_fails() && !sure_fail) sure_fail = x;
    if (x <= *lo_ && s.surely_passes()) sure_pass = x;
  }
  double unsure_above = *hi_;  // the largest tested load in (lo, sure_fail)
  for (const auto& [x, s] : stats_) {
    if (x > *lo_ && (!sure_fail || x < *sure_fail)) unsure_above = x;
  }
  if (sure_fail && !close(unsure_above, *sure_fail)) return mid(unsure_above, *sure_fail);
  if (!sure_fail && unsure_above < o_.max_value) return snap(unsure_above * 2);
  if (!stats_[*lo_].surely_passes()) {
    if (!sure_pass) return stats_.count(o_.min_value) ? std::nullopt : std::optional(o_.min_value);
    double unsure_below = *lo_;  // the smallest tested load in (sure_pass, lo]
    for (const auto& [x, s] : stats_) {
      if (x > *sure_pass && x <= *lo_) {
        unsure_below = x;
        break;
      }
    }
    if (!close(*sure_pass, unsure_below)) return mid(*sure_pass, unsure_below);
  }
  return std::nullopt;
}

void Search::finish() {
  CapacityResult& r = result_;
  r.budget_exhausted = !budget_left();
  next();  // refresh lo_/hi_ from the final statistics
  r.found = lo_.has_value();
  if (!r.found) {
    r.confidence = stats_.begin()->second.surely_fails() ? "high" : "low";
    r.summary = fmt::format("no load met the SLO: even {:g} {} failed ({} trials); confidence: {}",
                            stats_.begin()->first, o_.unit, r.trials.size(), r.confidence);
    return;
  }
  r.max_passing = *lo_;
  r.lower = r.max_passing;
  bool lower_sure = false;
  for (auto it = stats_.rbegin(); it != stats_.rend(); ++it) {
    if (it->first > *lo_) continue;
    if (it->second.surely_passes()) {
      r.lower = it->first;
      lower_sure = true;
      break;
    }
  }
  r.upper = kInf;
  for (const auto& [x, s] : stats_) {
    if (x > *lo_ && s.surely_fails()) {
      r.upper = o_.integer ? x - 1 : x;
      break;
    }
  }
  // The figures quoted with the answer come from its last passing trial (a majority passed there;
  // quoting a failing one would contradict the answer).
  bool quoted = false;
  for (auto it = r.trials.rbegin(); it != r.trials.rend(); ++it) {
    if (it->x == *lo_ && it->outcome.meets_slo) {
      r.at_answer = it->outcome;
      quoted = true;
      break;
    }
  }
  for (auto it = r.trials.rbegin(); !quoted && it != r.trials.rend(); ++it) {
    if (it->x == *lo_) {
      r.at_answer = it->outcome;
      break;
    }
  }
  bool tight_upper = o_.integer ? r.upper == r.max_passing : close(r.max_passing, r.upper);
  bool tight_lower = r.lower == r.max_passing;
  if (!r.converged || !lower_sure || std::isinf(r.upper))
    r.confidence = "low";
  else if (tight_upper && tight_lower)
    r.confidence = "high";
  else
    r.confidence = "medium";
  std::string at;
  for (const ObjectiveOutcome& ob : r.at_answer.objectives) {
    at += fmt::format("{}{} {}", at.empty() ? "" : ", ", ob.text, format_ms(ob.value_ms));
  }
  std::string bound = std::isinf(r.upper) ? std::string("unbounded") : fmt::format("{:g}", r.upper);
  bool capped = !hi_ && r.max_passing >= o_.max_value;
  r.summary = fmt::format("max {}{:g} {} ({:g}% CI {:g}-{}) at {}; confidence: {}{}",
                          capped ? ">= " : "", r.max_passing, o_.unit, o_.confidence * 100, r.lower,
                          bound, at.empty() ? "-" : at, r.confidence,
                          r.budget_exhausted ? " (budget exhausted)" : "");
}

CapacityResult Search::go() {
  judge(snap(o_.start));
  while (budget_left()) {
    auto x = next();
    if (!x) break;
    if (stats_.count(*x))
      trial(*x);  // a confirmation: one more trial
    else
      judge(*x);
  }
  finish();
  return std::move(result_);
}

}  // namespace

LevelOutcome level_outcome_from(const SloSpec& spec, std::span<const RequestMetrics> requests,
                                std::span<const uint8_t> ok, double confidence) {
  LevelOutcome out;
  SloReport rep = evaluate_slo(spec, requests, ok, 1.0);
  out.meets_slo = rep.all_pass;
  for (const ObjectiveResult& r : rep.objectives) {
    const SloObjective& o = *r.objective;
    ObjectiveOutcome ob{o.text,        r.measured_ms,  r.measured_ms,
                        r.measured_ms, o.threshold_ms, r.pass};
    if (!o.mean) {
      PercentileInterval iv =
          percentile_interval(objective_samples(o, requests, ok), o.percentile, confidence);
      ob.ci_lower_ms = iv.lower_ms;
      ob.ci_upper_ms = iv.upper_ms;
    }
    // Decisive: the whole interval gives the same verdict as the point estimate.
    bool same = r.samples > 0 && (r.pass ? o.met_by(ob.ci_upper_ms) : !o.met_by(ob.ci_lower_ms));
    out.decisive = out.decisive && same;
    out.objectives.push_back(std::move(ob));
  }
  return out;
}

CapacityResult capacity_search(const RunLevelFn& run_level, const CapacitySearchOptions& options) {
  return Search(run_level, options).go();
}

}  // namespace tokperf
