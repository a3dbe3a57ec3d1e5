#include "metrics/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "metrics/slo.h"

namespace tokperf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// numpy's _lerp: a + (b - a) * t, evaluated from the nearer end so the result stays within [a, b]
// and equals numpy's to the last bit for the same inputs.
double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

void drop_nans(std::vector<double>& values) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
}

}  // namespace

double percentile_sorted(std::span<const double> sorted, double q) {
  const size_t n = sorted.size();
  if (n == 0) return kNaN;
  q = std::clamp(q, 0.0, 100.0);
  // numpy divides q by 100 before scaling by (n - 1); doing the same keeps rounding identical.
  const double virtual_index = (q / 100.0) * static_cast<double>(n - 1);
  const double lo_f = std::floor(virtual_index);
  const size_t lo = std::min(static_cast<size_t>(lo_f), n - 1);
  const size_t hi = std::min(lo + 1, n - 1);
  return lerp(sorted[lo], sorted[hi], virtual_index - lo_f);
}

double percentile(std::vector<double> values, double q) {
  drop_nans(values);
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, q);
}

DistStats compute_dist_stats(std::vector<double> values) {
  drop_nans(values);
  DistStats s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / n;
  // Two passes: the textbook one-pass formula loses precision when std is small beside the mean,
  // which is exactly the case for steady ITLs.
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(sq / n);
  s.min = values.front();
  s.max = values.back();
  s.p50 = percentile_sorted(values, 50);
  s.p90 = percentile_sorted(values, 90);
  s.p95 = percentile_sorted(values, 95);
  s.p99 = percentile_sorted(values, 99);
  s.p999 = percentile_sorted(values, 99.9);
  for (size_t i = 0; i < std::size(kReportedPercentiles); ++i) {
    const PercentileInterval iv = percentile_rank_interval(s.count, kReportedPercentiles[i], 0.95);
    if (iv.lower_rank >= 1) s.ci95[i].lower = values[static_cast<size_t>(iv.lower_rank - 1)];
    if (iv.upper_rank <= s.count) s.ci95[i].upper = values[static_cast<size_t>(iv.upper_rank - 1)];
  }
  return s;
}

}  // namespace tokperf
