// The algorithm of `tokperf capacity`: the highest load (whole concurrency, or a real request rate)
// whose level still meets an SLO. Transport-free: the caller supplies run_level(x), which runs one
// trial at load x and judges it. Algorithm and statistics: docs/LOAD.md ("Capacity search").
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/clock.h"
#include "metrics/slo.h"

namespace tokperf {

struct ObjectiveOutcome {
  std::string text;        // the objective as written, e.g. "ttft:p95<=2s"
  double value_ms = 0;     // measured percentile (or mean)
  double ci_lower_ms = 0;  // order-statistic CI of that percentile (mean: == value_ms)
  double ci_upper_ms = 0;
  double threshold_ms = 0;
  bool pass = false;
};

// One trial at one load.
struct LevelOutcome {
  bool meets_slo = false;
  // True when every objective's CI lies wholly on its verdict's side of the threshold: another
  // trial would very likely give the same verdict.
  bool decisive = true;
  std::vector<ObjectiveOutcome> objectives;
};

// Judges one trial's requests against spec with `confidence` CIs (pooled ITL gaps are not
// independent, so an ITL interval is narrower than it should be).
LevelOutcome level_outcome_from(const SloSpec& spec, std::span<const RequestMetrics> requests,
                                std::span<const uint8_t> ok, double confidence = 0.95);

struct CapacitySearchOptions {
  double start = 8;  // first load tried
  double min_value = 1;
  double max_value = 4096;          // never tried above; if it passes, the answer is ">= max_value"
  bool integer = true;              // concurrency (whole numbers) or request rate (real)
  double rate_resolution = 0.05;    // real loads: stop bisecting when (hi - lo) <= this * lo
  int max_trials_per_level = 3;     // repeat an indecisive level up to this many trials
  int confirm_trials = 2;           // extra trials at the final lo and hi
  int max_trials = 40;              // trial budget for the whole search
  int64_t time_budget_ns = 0;       // 0: none; else stop starting trials once exceeded
  const Clock* clock = nullptr;     // REQUIRED when time_budget_ns > 0
  double confidence = 0.95;         // only labels the summary; the CIs come from run_level
  std::string unit = "concurrent";  // "req/s" for rates
};

struct CapacityTrial {
  double x = 0;
  LevelOutcome outcome;
};

struct CapacityResult {
  bool found = false;      // some load met the SLO
  double max_passing = 0;  // the answer: highest load with a majority of passing trials
  double lower = 0;        // highest load at or below the answer that passed decisively every time
  double upper = 0;        // highest load that might still pass (+inf: never saw a sure failure)
  bool converged = false;  // bisection reached the resolution
  bool budget_exhausted = false;
  std::string confidence;             // "high", "medium" or "low" (docs/LOAD.md)
  LevelOutcome at_answer;             // the last trial at max_passing
  std::vector<CapacityTrial> trials;  // in the order run
  std::string summary;  // "max 23 concurrent (95% CI 21-24) at ttft:p95<=2s 1.83 s; high"
};

using RunLevelFn = std::function<LevelOutcome(double x)>;

// Brackets by doubling (or halving) from start, bisects, repeats indecisive levels, confirms the
// final boundary, then probes between the boundary and the nearest decisive levels to tighten the
// interval. Stops on convergence or budget. run_level is called on the caller's thread, one trial
// at a time.
CapacityResult capacity_search(const RunLevelFn& run_level, const CapacitySearchOptions& options);

}  // namespace tokperf
