// Summary statistics of a latency sample, computed exactly the way numpy does, so that our figures
// match `vllm bench serve` and a notebook fed the same requests.jsonl. Definitions:
// docs/metrics.md.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace tokperf {

// Percentile of an ascending, NaN-free sample by linear interpolation between closest ranks:
// numpy's default, np.percentile(x, q) with method="linear". The virtual index is (n - 1) * q /
// 100. q is in percent, [0, 100] (clamped). Returns NaN for an empty sample. REQUIRES: sorted is
// ascending and holds no NaN.
double percentile_sorted(std::span<const double> sorted, double q);

// Same, for an unsorted sample; NaNs are dropped first (np.nanpercentile).
double percentile(std::vector<double> values, double q);

// The statistics every latency metric reports. Units are those of the input (ms throughout
// tokperf). std is the population standard deviation (ddof = 0, like np.std). NaNs in the input are
// ignored; with no finite value, count is 0 and every other field is NaN.
// A default-constructed DistStats is the empty one.
struct DistStats {
  static constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();
  int64_t count = 0;
  double mean = kUndefined;
  double std = kUndefined;
  double min = kUndefined;
  double p50 = kUndefined;
  double p90 = kUndefined;
  double p95 = kUndefined;
  double p99 = kUndefined;
  double p999 = kUndefined;  // P99.9
  double max = kUndefined;
  // 95% distribution-free confidence interval of each reported percentile (kReportedPercentiles
  // order), from order statistics (metrics/slo.h percentile_rank_interval): [x_(l), x_(u)] of the
  // sorted sample. A side is NaN where the sample is too small to bound it.
  struct Interval {
    double lower = kUndefined;
    double upper = kUndefined;
  };
  Interval ci95[5];
};

// The percentiles DistStats carries, in field order: 50, 90, 95, 99, 99.9.
inline constexpr double kReportedPercentiles[] = {50, 90, 95, 99, 99.9};

// Takes the sample by value because it sorts it; move a vector in when it is no longer needed.
DistStats compute_dist_stats(std::vector<double> values);

}  // namespace tokperf
