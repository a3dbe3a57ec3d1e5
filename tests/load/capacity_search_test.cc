#include "load/capacity_search.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

LevelOutcome verdict(bool pass, bool decisive = true) {
  LevelOutcome o;
  o.meets_slo = pass;
  o.decisive = decisive;
  return o;
}

TEST(CapacitySearch, DeterministicModelFindsTheExactAnswer) {
  std::vector<double> tried;
  auto run = [&](double x) {
    tried.push_back(x);
    LevelOutcome o = verdict(x <= 23);
    o.objectives.push_back({"ttft:p95<=2s", 80 * x, 80 * x, 80 * x, 2000, x <= 23});
    return o;
  };
  CapacityResult r = capacity_search(run, {});  // start 8
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.max_passing, 23);
  EXPECT_EQ(r.lower, 23);
  EXPECT_EQ(r.upper, 23);
  EXPECT_TRUE(r.converged);
  EXPECT_FALSE(r.budget_exhausted);
  EXPECT_EQ(r.confidence, "high");
  // Bracket 8, 16, 32; bisect 24, 20, 22, 23; confirm 23 and 24 twice each.
  EXPECT_EQ(tried, (std::vector<double>{8, 16, 32, 24, 20, 22, 23, 23, 23, 24, 24}));
  EXPECT_EQ(r.summary, "max 23 concurrent (95% CI 23-23) at ttft:p95<=2s 1.84 s; confidence: high");
}

TEST(CapacitySearch, StartAboveTheAnswerHalvesDown) {
  auto run = [](double x) { return verdict(x <= 5); };
  CapacitySearchOptions o;
  o.start = 64;
  CapacityResult r = capacity_search(run, o);
  EXPECT_EQ(r.max_passing, 5);
  EXPECT_EQ(r.trials[0].x, 64);
  EXPECT_EQ(r.trials[1].x, 32);
}

TEST(CapacitySearch, NothingPasses) {
  CapacityResult r = capacity_search([](double) { return verdict(false); }, {});
  EXPECT_FALSE(r.found);
  EXPECT_EQ(r.trials.back().x, 1);
  EXPECT_EQ(r.confidence, "high");
  EXPECT_EQ(r.summary.rfind("no load met the SLO: even 1 concurrent failed", 0), 0u) << r.summary;
}

TEST(CapacitySearch, EverythingPassesUpToTheCap) {
  CapacitySearchOptions o;
  o.max_value = 100;
  CapacityResult r = capacity_search([](double) { return verdict(true); }, o);
  EXPECT_EQ(r.max_passing, 100);
  EXPECT_TRUE(std::isinf(r.upper));
  EXPECT_EQ(r.confidence, "low");
  EXPECT_NE(r.summary.find("max >= 100 concurrent"), std::string::npos) << r.summary;
}

TEST(CapacitySearch, RealValuedRateWithinResolution) {
  CapacitySearchOptions o;
  o.integer = false;
  o.start = 10;
  o.unit = "req/s";
  CapacityResult r = capacity_search([](double x) { return verdict(x <= 37.3); }, o);
  EXPECT_LE(r.max_passing, 37.3);
  EXPECT_GE(r.max_passing, 37.3 * 0.95);
  EXPECT_GT(r.upper, 37.3);
  EXPECT_LE(r.upper - r.max_passing, 0.05 * r.max_passing + 1e-9);
}

// TTFT P95 = 50 ms * x plus noise (sd 30 ms); the trial's CI is the measurement +-100 ms. Threshold
// 1175 ms puts the true boundary at x = 23.5: 23 passes, 24 fails, 21 and 26 are beyond doubt.
TEST(CapacitySearch, NoisyModelReturnsTheKnownAnswerWithAnInterval) {
  int exact = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, 30);
    auto run = [&](double x) {
      double v = 50 * x + noise(rng);
      LevelOutcome o;
      o.meets_slo = v <= 1175;
      o.decisive = (v + 100 <= 1175) || (v - 100 > 1175);
      return o;
    };
    CapacityResult r = capacity_search(run, {});
    EXPECT_GE(r.max_passing, 22) << "seed " << seed;
    EXPECT_LE(r.max_passing, 24) << "seed " << seed;
    EXPECT_LE(r.lower, 23) << "seed " << seed;
    EXPECT_GE(r.upper, 23) << "seed " << seed;
    EXPECT_GE(r.lower, 20) << "seed " << seed << ": " << r.summary;
    EXPECT_LE(r.upper, 26) << "seed " << seed << ": " << r.summary;
    EXPECT_LE(r.trials.size(), 40u);
    exact += r.max_passing == 23;
  }
  EXPECT_GE(exact, 14);  // majority voting gets it exactly right most of the time
}

TEST(CapacitySearch, StopsOnTheTimeBudget) {
  ManualClock clock;
  CapacitySearchOptions o;
  o.clock = &clock;
  o.time_budget_ns = 300'000'000'000;  // 5 minutes; each trial takes 1
  auto run = [&](double x) {
    clock.advance_ns(60'000'000'000);
    return verdict(x <= 23);
  };
  CapacityResult r = capacity_search(run, o);
  EXPECT_EQ(r.trials.size(), 5u);  // 8 16 32 24 20
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.max_passing, 20);
  EXPECT_EQ(r.confidence, "low");
}

TEST(LevelOutcome, DecisiveOnlyWhenTheCiClearsTheThreshold) {
  std::vector<RequestMetrics> reqs;
  for (int i = 1; i <= 100; ++i) {
    RequestMetrics m{};
    m.ttft_ms = i;
    reqs.push_back(m);
  }
  // P50 = 50.5, 95% CI [x(40), x(61)] = [40, 61].
  LevelOutcome clear = level_outcome_from(*parse_slo("ttft:p50<=70ms"), reqs, {});
  EXPECT_TRUE(clear.meets_slo);
  EXPECT_TRUE(clear.decisive);
  ASSERT_EQ(clear.objectives.size(), 1u);
  EXPECT_DOUBLE_EQ(clear.objectives[0].value_ms, 50.5);
  EXPECT_EQ(clear.objectives[0].ci_lower_ms, 40);
  EXPECT_EQ(clear.objectives[0].ci_upper_ms, 61);
  LevelOutcome close = level_outcome_from(*parse_slo("ttft:p50<=55ms"), reqs, {});
  EXPECT_TRUE(close.meets_slo);
  EXPECT_FALSE(close.decisive);
  LevelOutcome fail = level_outcome_from(*parse_slo("ttft:p50<=30ms"), reqs, {});
  EXPECT_FALSE(fail.meets_slo);
  EXPECT_TRUE(fail.decisive);
}

}  // namespace
}  // namespace tokperf
