// Summary statistics of a latency sample, computed exactly the way numpy does, so that our figures
// match `vllm bench serve` and a notebook fed the same requests.jsonl. Definitions:
// docs/metrics.md.
#pragma once

#include <cstdint>
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
struct DistStats {
  int64_t count = 0;
  double mean;
  double std;
  double min;
  double p50;
  double p90;
  double p95;
  double p99;
  double p999;  // P99.9
  double max;
};

// The percentiles DistStats carries, in field order: 50, 90, 95, 99, 99.9.
inline constexpr double kReportedPercentiles[] = {50, 90, 95, 99, 99.9};

// Takes the sample by value because it sorts it; move a vector in when it is no longer needed.
DistStats compute_dist_stats(std::vector<double> values);

}  // namespace tokperf
