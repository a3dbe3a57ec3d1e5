// PooledDist (metrics/pooled_dist.h): exact below its bound (identical to compute_dist_stats),
// within its stated relative error above it, and merges as if one had seen every value.
#include "metrics/pooled_dist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
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

TEST(PooledDist, ABatchHoldsWhatOneByOneHolds) {
  // Batches (one request's gaps) fold their moments in at once once spilled: the same buckets,
  // so the same percentiles; mean and std the same to rounding; NaN ignored either way.
  std::vector<double> v = lognormal_sample(50'000, 21);
  for (size_t i = 0; i < v.size(); i += 777) v[i] = std::nan("");
  for (size_t bound : {size_t{1'000'000}, size_t{3000}, size_t{1}}) {
    PooledDist one(bound), batched(bound);
    for (double x : v) one.add(x);
    for (size_t i = 0; i < v.size(); i += 127) {
      batched.add(std::span<const double>(v).subspan(i, std::min<size_t>(127, v.size() - i)));
    }
    ASSERT_EQ(one.exact(), batched.exact()) << bound;
    const DistStats a = one.stats(), b = batched.stats();
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.min, b.min);
    EXPECT_EQ(a.max, b.max);
    for (auto f : {&DistStats::p50, &DistStats::p90, &DistStats::p99, &DistStats::p999}) {
      EXPECT_EQ(a.*f, b.*f) << bound;
    }
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(a.ci95[i].lower, b.ci95[i].lower) << bound;
    EXPECT_NEAR(a.mean, b.mean, 1e-12 * a.mean) << bound;
    EXPECT_NEAR(a.std, b.std, 1e-9 * a.std) << bound;
  }
}

TEST(PooledDist, MergingAnEmptyOrExactOneIntoASpilledOneKeepsMinMaxAndMoments) {
  const std::vector<double> a = lognormal_sample(4000, 31), b = lognormal_sample(300, 32);
  PooledDist spilled(1000), exact(100000), empty(1000), all(1000);
  spilled.add(a);
  exact.add(b);
  all.add(a);
  all.add(b);
  spilled.merge(empty);
  spilled.merge(exact);
  const DistStats m = spilled.stats(), s = all.stats();
  EXPECT_EQ(m.count, s.count);
  EXPECT_EQ(m.min, s.min);
  EXPECT_EQ(m.max, s.max);
  EXPECT_EQ(m.p50, s.p50);
  EXPECT_NEAR(m.mean, s.mean, 1e-12 * s.mean);
  EXPECT_NEAR(m.std, s.std, 1e-9 * s.std);
  // And an empty one that takes a spilled one.
  PooledDist e2(1000);
  e2.merge(spilled);
  EXPECT_EQ(e2.stats().min, s.min);
  EXPECT_EQ(e2.stats().max, s.max);
  EXPECT_EQ(e2.count(), s.count);
}

// The reference for a spilled percentile, from the documented rule: every value replaced by its
// bucket's midpoint (frexp exponent, 2048 linear sub-buckets of the mantissa), clamped to
// [min, max], ranks interpolated as numpy's linear method does (min and max at the ends).
double reference_percentile(std::vector<double> v, double q) {
  const double lo = *std::min_element(v.begin(), v.end());
  const double hi = *std::max_element(v.begin(), v.end());
  std::vector<double> mids;
  for (double x : v) {
    int e = 0;
    const double m = std::frexp(x, &e);
    auto sub = static_cast<int64_t>((m - 0.5) * 2 * PooledDist::kSubBuckets);
    sub = std::clamp<int64_t>(sub, 0, PooledDist::kSubBuckets - 1);
    const double mid = std::ldexp(0.5 + (static_cast<double>(sub) + 0.5) / (2.0 * PooledDist::kSubBuckets), e);
    mids.push_back(std::clamp(mid, lo, hi));
  }
  std::sort(mids.begin(), mids.end());
  mids.front() = lo;
  mids.back() = hi;
  return percentile(mids, q);
}

TEST(PooledDist, SpilledBucketsAreTheFrexpBucketsForNormalAndSubnormalValues) {
  // Values over many octaves, at bucket edges, and below the normal range (subnormals), so both
  // of add_bucket's paths (the mantissa bits and frexp) and the octave cache's switches are used.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-40.0, 40.0);
  std::vector<double> v;
  for (int i = 0; i < 4000; ++i) v.push_back(std::exp2(u(rng)));
  for (int k = 0; k < 64; ++k) v.push_back(std::ldexp(1.0 + k / 2048.0, k % 7));  // bucket edges
  for (int k = 1; k < 50; ++k) v.push_back(std::numeric_limits<double>::denorm_min() * k * 977);
  PooledDist d(100);
  for (double x : v) d.add(x);
  ASSERT_FALSE(d.exact());
  for (double q : {0.0, 0.1, 1.0, 5.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 100.0}) {
    EXPECT_EQ(d.percentile(q), reference_percentile(v, q)) << "q " << q;
  }
}

TEST(PooledDist, CopiesAndMovesOfASpilledOneKeepCountingIntoTheirOwnBuckets) {
  const std::vector<double> a = lognormal_sample(3000, 11), b = lognormal_sample(3000, 12);
  PooledDist all(1000);
  for (double x : a) all.add(x);
  for (double x : b) all.add(x);

  PooledDist first(1000);
  for (double x : a) first.add(x);
  PooledDist copy = first;             // copied after spilling
  PooledDist moved = std::move(first);  // and moved
  for (double x : b) copy.add(x);
  for (double x : b) moved.add(x);
  expect_same(copy.stats(), all.stats());
  expect_same(moved.stats(), all.stats());
  PooledDist assigned(1000);
  assigned = copy;
  assigned.add(1.0);
  copy.add(1.0);
  expect_same(assigned.stats(), copy.stats());
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
