#include "metrics/stats.h"

#include <cmath>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tokperf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void expect_rel(double expected, double actual, const std::string& what) {
  const double tol = 1e-9 * std::max(1.0, std::abs(expected));
  EXPECT_NEAR(actual, expected, tol) << what;
}

TEST(Percentile, HandComputedLinearInterpolation) {
  // Sorted {10, 20, 30, 40}: index (n-1)*q = 3*q. P50 -> 1.5 -> 25; P90 -> 2.7 -> 37; P10 -> 13.
  std::vector<double> x = {40, 10, 30, 20};
  EXPECT_DOUBLE_EQ(percentile(x, 50), 25);
  EXPECT_DOUBLE_EQ(percentile(x, 90), 37);
  EXPECT_DOUBLE_EQ(percentile(x, 10), 13);
  EXPECT_DOUBLE_EQ(percentile(x, 0), 10);
  EXPECT_DOUBLE_EQ(percentile(x, 100), 40);
}

TEST(Percentile, EmptyAndNaN) {
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
  EXPECT_TRUE(std::isnan(percentile({kNaN, kNaN}, 50)));
  EXPECT_DOUBLE_EQ(percentile({kNaN, 4, 2, kNaN}, 50), 3);
}

TEST(DistStats, HandComputed) {
  // {2, 4, 4, 4, 5, 5, 7, 9}: mean 5, population std 2 (the textbook example).
  DistStats s = compute_dist_stats({2, 4, 4, 4, 5, 5, 7, 9, kNaN});
  EXPECT_EQ(s.count, 8);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.std, 2);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.p50, 4.5);          // index 3.5 between 4 and 5
  EXPECT_DOUBLE_EQ(s.p90, 7 + 0.3 * 2);  // index 6.3 between 7 and 9
}

TEST(DistStats, EmptyIsAllNaN) {
  DistStats s = compute_dist_stats({kNaN});
  EXPECT_EQ(s.count, 0);
  for (double v : {s.mean, s.std, s.min, s.p50, s.p90, s.p95, s.p99, s.p999, s.max}) {
    EXPECT_TRUE(std::isnan(v));
  }
}

// Expected values come from numpy (scripts/gen_percentile_golden.py).
TEST(Percentile, MatchesNumpyGolden) {
  std::ifstream in(std::string(TOKPERF_TEST_DATA).append("/percentiles_numpy.json"));
  ASSERT_TRUE(in) << "missing tests/data/percentiles_numpy.json";
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_GE(doc["cases"].size(), 8u);
  for (const auto& c : doc["cases"]) {
    const std::string name = c["name"];
    const auto data = c["data"].get<std::vector<double>>();
    const auto qs = c["quantiles"].get<std::vector<double>>();
    const auto want = c["percentiles"].get<std::vector<double>>();
    ASSERT_EQ(qs.size(), want.size());
    for (size_t i = 0; i < qs.size(); ++i) {
      expect_rel(want[i], percentile(data, qs[i]), name + " q=" + std::to_string(qs[i]));
    }
    const DistStats s = compute_dist_stats(data);
    EXPECT_EQ(s.count, static_cast<int64_t>(data.size())) << name;
    expect_rel(c["mean"].get<double>(), s.mean, name + " mean");
    expect_rel(c["std"].get<double>(), s.std, name + " std");
    // DistStats' percentiles are the same function at fixed q; check P99.9 via the golden q list.
    for (size_t i = 0; i < qs.size(); ++i) {
      if (qs[i] == 99.9) expect_rel(want[i], s.p999, name + " p999");
      if (qs[i] == 50) expect_rel(want[i], s.p50, name + " p50");
    }
  }
}

TEST(DistStats, EveryPercentileCarriesItsOrderStatisticInterval) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, shuffled order does not matter
  DistStats s = compute_dist_stats(v);
  // n = 100: the median's 95% interval is [x(40), x(61)] (the classic table value).
  EXPECT_EQ(s.ci95[0].lower, 40);
  EXPECT_EQ(s.ci95[0].upper, 61);
  for (const auto& ci : s.ci95) {
    if (!std::isnan(ci.lower) && !std::isnan(ci.upper)) {
      EXPECT_LE(ci.lower, ci.upper);
    }
  }
  EXPECT_LE(s.ci95[1].lower, s.p90);
  EXPECT_GE(s.ci95[1].upper, s.p90);
  // 100 samples cannot bound a P99 from above: nothing in them is sure to lie above the true P99.
  EXPECT_TRUE(std::isnan(s.ci95[3].upper));
  EXPECT_FALSE(std::isnan(s.ci95[3].lower));
  EXPECT_TRUE(std::isnan(compute_dist_stats({}).ci95[0].lower));
}

}  // namespace
}  // namespace tokperf
