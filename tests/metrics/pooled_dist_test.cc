// PooledDist (metrics/pooled_dist.h): exact below its bound (identical to compute_dist_stats),
// within its stated relative error above it, and merges as if one had seen every value.
#include "metrics/pooled_dist.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "metrics/stats.h"
#include "metrics/timeseries.h"

namespace tokperf {
namespace {

std::vector<double> lognormal_sample(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(3.0, 0.6);  // ms, ITL-like, with a long tail
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

void expect_same(const DistStats& a, const DistStats& b) {
  EXPECT_EQ(a.count, b.count);
  for (auto f : {&DistStats::mean, &DistStats::std, &DistStats::min, &DistStats::p50,
                 &DistStats::p90, &DistStats::p95, &DistStats::p99, &DistStats::p999,
                 &DistStats::max}) {
    EXPECT_EQ(a.*f, b.*f);
  }
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(a.ci95[i].lower, b.ci95[i].lower) << i;
    EXPECT_EQ(a.ci95[i].upper, b.ci95[i].upper) << i;
  }
}

TEST(PooledDist, BelowItsBoundIsExactlyComputeDistStats) {
  const std::vector<double> v = lognormal_sample(5000, 1);
  PooledDist d(5000);
  d.add(v);
  d.add(std::nan(""));  // ignored, as compute_dist_stats drops NaN
  ASSERT_TRUE(d.exact());
  expect_same(d.stats(), compute_dist_stats(v));
  EXPECT_EQ(d.percentile(37.5), percentile(v, 37.5));
}

TEST(PooledDist, AboveItsBoundPercentilesStayWithinTheStatedRelativeError) {
  const std::vector<double> v = lognormal_sample(200'000, 2);
  PooledDist d(1000);
  d.add(v);
  ASSERT_FALSE(d.exact());
  const DistStats exact = compute_dist_stats(v);
  const DistStats got = d.stats();
  const double tol = PooledDist::kMaxRelativeError;
  EXPECT_EQ(got.count, exact.count);
  EXPECT_EQ(got.min, exact.min);
  EXPECT_EQ(got.max, exact.max);
  EXPECT_NEAR(got.mean, exact.mean, 1e-9 * exact.mean);
  EXPECT_NEAR(got.std, exact.std, 1e-9 * exact.std);
  for (auto f : {&DistStats::p50, &DistStats::p90, &DistStats::p95, &DistStats::p99,
                 &DistStats::p999}) {
    EXPECT_NEAR(got.*f, exact.*f, tol * exact.*f);
  }
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(got.ci95[i].lower, exact.ci95[i].lower, tol * exact.ci95[i].lower) << i;
    EXPECT_NEAR(got.ci95[i].upper, exact.ci95[i].upper, tol * exact.ci95[i].upper) << i;
  }
  // A coarser histogram keeps its own, larger, bound.
  PooledDist coarse(10, 64);
  coarse.add(v);
  EXPECT_NEAR(coarse.percentile(95), exact.p95, coarse.max_relative_error() * exact.p95);
  EXPECT_GT(std::fabs(coarse.percentile(95) - exact.p95), 0.0);
}

TEST(PooledDist, ZeroAndNegativeValuesKeepTheirOrderOnceSpilled) {
  std::vector<double> v = {-5, -1, 0, 0, 0, 1, 2, 3, 4, 100};
  PooledDist d(2);
  d.add(v);
  ASSERT_FALSE(d.exact());
  EXPECT_EQ(d.percentile(0), -5);
  EXPECT_EQ(d.percentile(100), 100);
  EXPECT_NEAR(d.percentile(12.5), percentile(v, 12.5), 1.0 * PooledDist::kMaxRelativeError * 5);
  EXPECT_EQ(d.percentile(33.4), 0);
}

TEST(PooledDist, MergeEqualsOneThatSawEveryValue) {
  const std::vector<double> a = lognormal_sample(3000, 3), b = lognormal_sample(4000, 4);
  for (size_t bound : {size_t{100000}, size_t{5000}, size_t{100}}) {
    PooledDist x(bound), y(bound), all(bound);
    x.add(a);
    y.add(b);
    all.add(a);
    all.add(b);
    x.merge(y);
    EXPECT_EQ(x.exact(), all.exact()) << bound;
    const DistStats m = x.stats(), s = all.stats();
    EXPECT_EQ(m.count, s.count);
    EXPECT_EQ(m.p50, s.p50) << bound;
    EXPECT_EQ(m.p99, s.p99) << bound;
    EXPECT_EQ(m.max, s.max);
    EXPECT_NEAR(m.mean, s.mean, 1e-12 * s.mean);
  }
}

TEST(DriftAccumulator, BucketedPastItsBoundGivesTheExactVerdict) {
  // 60 s level, one request every 50 ms, 100 gaps each; ITL doubles in the last third.
  constexpr int64_t kS = 1'000'000'000;
  std::vector<DriftPoint> points;
  for (int64_t i = 0; i < 1200; ++i) {
    const int64_t send = 5 * kS + i * (kS / 20);
    const bool late = send >= 5 * kS + 40 * kS;
    DriftPoint p{send, 200.0 + static_cast<double>(i % 7), {}};
    for (int k = 0; k < 100; ++k) p.itl_ms.push_back((late ? 40.0 : 20.0) + (k % 5));
    points.push_back(std::move(p));
  }
  const DriftReport exact = detect_drift(points, 5 * kS, 65 * kS);
  DriftAccumulator small(1000);  // spills after ten requests
  for (const DriftPoint& p : points) small.add(p.send_ns, p.ttft_ms, p.itl_ms);
  EXPECT_FALSE(small.exact());
  const DriftReport bucketed = small.finish(5 * kS, 65 * kS);
  ASSERT_TRUE(exact.judged);
  EXPECT_TRUE(exact.drifted);
  EXPECT_EQ(bucketed.judged, exact.judged);
  EXPECT_EQ(bucketed.drifted, exact.drifted);
  EXPECT_EQ(bucketed.ttft_p95_first_ms, exact.ttft_p95_first_ms);
  EXPECT_NEAR(bucketed.itl_p95_last_ms, exact.itl_p95_last_ms,
              exact.itl_p95_last_ms / (2.0 * DriftAccumulator::kBucketSubBuckets));
}

}  // namespace
}  // namespace tokperf
