// Knee detection on a load sweep: the level after which latency rises faster than throughput, i.e.
// extra load buys little extra work at a steep price in waiting. Method: docs/LOAD.md ("Knee").
#pragma once

#include <span>
#include <string>

namespace tokperf {

struct SweepPoint {
  double load = 0;        // concurrency or req/s, increasing along the sweep
  double latency_ms = 0;  // e.g. TTFT P95 or ITL P95
  double throughput = 0;  // e.g. output tok/s
};

struct KneeOptions {
  // A step is past the knee when latency grows by more than `elasticity` times the relative growth
  // of throughput: (dL / L) > elasticity * (dT / T).
  double elasticity = 1.0;
  // ...and latency rose by at least this fraction, so flat noisy curves do not trigger.
  double min_latency_rise = 0.10;
  std::string latency_name = "TTFT P95";
  std::string load_name = "concurrency";
};

struct KneeResult {
  bool found = false;
  size_t index = 0;  // the knee level: the last level before the first costly step
  double load = 0;
  std::string explanation;  // one line, with the numbers
};

// REQUIRES: points sorted by load. Needs at least 2 points; NaN points are skipped.
KneeResult find_knee(std::span<const SweepPoint> points, const KneeOptions& options = {});

}  // namespace tokperf
