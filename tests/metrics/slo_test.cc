#include "metrics/slo.h"
#include "metrics/stats.h"

#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

RequestMetrics req(double ttft, double tpot, std::vector<double> itl = {}) {
  RequestMetrics m{};
  m.queue_ms = 0;
  m.ttft_ms = ttft;
  m.ttfo_ms = ttft;
  m.tpot_ms = tpot;
  m.e2e_ms = ttft + 100;
  m.ttft_from_intended_ms = ttft + 5;
  m.e2e_from_intended_ms = ttft + 105;
  m.itl_ms = std::move(itl);
  return m;
}

TEST(SloParse, TheIssueExample) {
  auto s = parse_slo("ttft:p95<=2s,tpot:p95<=100ms,e2e:p99<=30s");
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(s->objectives.size(), 3u);
  const auto& o = s->objectives;
  EXPECT_EQ(o[0].metric, SloMetric::kTtft);
  EXPECT_EQ(o[0].percentile, 95);
  EXPECT_TRUE(o[0].inclusive);
  EXPECT_EQ(o[0].threshold_ms, 2000);
  EXPECT_EQ(o[1].metric, SloMetric::kTpot);
  EXPECT_EQ(o[1].threshold_ms, 100);
  EXPECT_EQ(o[2].metric, SloMetric::kE2e);
  EXPECT_EQ(o[2].percentile, 99);
  EXPECT_EQ(o[2].threshold_ms, 30000);
  EXPECT_EQ(o[2].text, "e2e:p99<=30s");
}

TEST(SloParse, OtherForms) {
  auto s = parse_slo(" itl:p99.9<50ms , ttft_from_intended:mean<=1.5s,e2e_from_intended:p100<1m");
  ASSERT_TRUE(s.ok()) << s.error();
  const auto& o = s->objectives;
  EXPECT_EQ(o[0].metric, SloMetric::kItl);
  EXPECT_DOUBLE_EQ(o[0].percentile, 99.9);
  EXPECT_FALSE(o[0].inclusive);
  EXPECT_TRUE(o[0].met_by(49.9));
  EXPECT_FALSE(o[0].met_by(50));
  EXPECT_EQ(o[1].metric, SloMetric::kTtftFromIntended);
  EXPECT_TRUE(o[1].mean);
  EXPECT_EQ(o[1].threshold_ms, 1500);
  EXPECT_TRUE(o[1].met_by(1500));
  EXPECT_EQ(o[2].threshold_ms, 60000);
  EXPECT_TRUE(parse_slo("ttfo:p50<=300ms").ok());
}

TEST(SloParse, BadInputsNameTheObjectiveAndTheSyntax) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"", "has no ':'"},
      {"ttft", "has no ':'"},
      {"foo:p95<=1s", "unknown metric 'foo'"},
      {"ttft:p0<=1s", "statistic 'p0'"},
      {"ttft:p101<=1s", "statistic 'p101'"},
      {"ttft:q95<=1s", "statistic 'q95'"},
      {"ttft:p9.5.5<=1s", "statistic"},
      {"ttft:p<=1s", "statistic"},
      {"ttft:p95>=1s", "no comparison"},
      {"ttft:p95<=2", "threshold '2'"},
      {"ttft:p95<=0s", "zero threshold"},
      {"ttft:p95<=1s,", "objective ''"},
  };
  for (const auto& c : cases) {
    auto r = parse_slo(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().find(c.want), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("expected METRIC:STAT<=DURATION"), std::string::npos);
  }
}

TEST(SloPercentile, LinearInterpolationLikeNumpy) {
  // numpy.percentile([50, 150, 80, 90], 50) == 85; ([1,2,3,4], 95) == 3.85
  EXPECT_DOUBLE_EQ(percentile({50, 150, 80, 90}, 50), 85);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 95), 3.85);
  EXPECT_DOUBLE_EQ(percentile({7, kNaN}, 100), 7);
  EXPECT_TRUE(std::isnan(percentile({kNaN}, 50)));
}

TEST(SloEvaluate, GoodputAndAttainmentMatchHandCounts) {
  auto spec = parse_slo("ttft:p50<=100ms,tpot:p90<=20ms");
  ASSERT_TRUE(spec.ok());
  std::vector<RequestMetrics> r = {
      req(50, 10),      // good
      req(150, 10),     // TTFT too slow
      req(80, 30),      // TPOT too slow
      req(90, kNaN),    // one-token answer: TPOT undefined, not held against it -> good
      req(10, 5),       // failed (see ok) -> never good
      req(kNaN, kNaN),  // OK but no token ever arrived -> not good
  };
  std::vector<uint8_t> ok = {1, 1, 1, 1, 0, 1};
  SloReport rep = evaluate_slo(*spec, r, ok, 2.0);
  EXPECT_EQ(rep.requests, 6u);
  EXPECT_EQ(rep.good, 2u);
  EXPECT_NEAR(rep.attainment_pct, 100.0 * 2 / 6, 1e-9);
  EXPECT_DOUBLE_EQ(rep.goodput_rps, 1.0);
  ASSERT_EQ(rep.objectives.size(), 2u);
  // TTFT over OK requests {50, 150, 80, 90}: P50 = 85 -> pass.
  EXPECT_DOUBLE_EQ(rep.objectives[0].measured_ms, 85);
  EXPECT_EQ(rep.objectives[0].samples, 4u);
  EXPECT_TRUE(rep.objectives[0].pass);
  // TPOT over {10, 10, 30}: P90 = 10 + 0.8 * 20 = 26 -> fail.
  EXPECT_DOUBLE_EQ(rep.objectives[1].measured_ms, 26);
  EXPECT_EQ(rep.objectives[1].samples, 3u);
  EXPECT_FALSE(rep.objectives[1].pass);
  EXPECT_FALSE(rep.all_pass);
}

TEST(SloEvaluate, ItlPerRequestIsItsOwnPercentileAndPooledForTheObjective) {
  std::vector<RequestMetrics> r = {req(10, 1, {10, 20, 100}), req(10, 1, {30, 30})};
  auto p50 = parse_slo("itl:p50<=25ms");
  SloReport a = evaluate_slo(*p50, r, {}, 1.0);
  EXPECT_EQ(a.good, 1u);                              // own P50: 20 (good) and 30 (not)
  EXPECT_DOUBLE_EQ(a.objectives[0].measured_ms, 30);  // pooled {10,20,30,30,100}
  EXPECT_FALSE(a.objectives[0].pass);
  auto max = parse_slo("itl:p100<=40ms");
  EXPECT_EQ(evaluate_slo(*max, r, {}, 1.0).good, 1u);  // own max: 100 (not) and 30 (good)
  auto mean = parse_slo("itl:mean<=40ms");
  SloReport m = evaluate_slo(*mean, r, {}, 1.0);
  EXPECT_EQ(m.good, 1u);                              // own means 43.3 (not) and 30 (good)
  EXPECT_DOUBLE_EQ(m.objectives[0].measured_ms, 38);  // pooled mean 190 / 5
}

TEST(SloEvaluate, NoSamplesFails) {
  auto spec = parse_slo("ttft:p95<=1s");
  SloReport rep = evaluate_slo(*spec, {}, {}, 1.0);
  EXPECT_EQ(rep.requests, 0u);
  EXPECT_FALSE(rep.objectives[0].pass);
  EXPECT_FALSE(rep.all_pass);
}

TEST(PercentileInterval, MedianOf100IsRanks40To61) {
  // The classic table value: for n = 100 the 95% CI of the median is [x(40), x(61)], 96.48%.
  PercentileInterval iv = percentile_rank_interval(100, 50, 0.95);
  EXPECT_EQ(iv.lower_rank, 40);
  EXPECT_EQ(iv.upper_rank, 61);
  EXPECT_NEAR(iv.coverage, 0.9648, 1e-4);
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  PercentileInterval withv = percentile_interval(v, 50);
  EXPECT_EQ(withv.lower_ms, 40);
  EXPECT_EQ(withv.upper_ms, 61);
}

TEST(PercentileInterval, SmallSampleLeavesTheTailUnbounded) {
  // n = 20, P95: P(B <= 16) = 0.0159 <= 0.025 < P(B <= 17) = 0.0755, and P(B <= 19) = 0.64 < 0.975.
  PercentileInterval iv = percentile_rank_interval(20, 95, 0.95);
  EXPECT_EQ(iv.lower_rank, 17);
  EXPECT_EQ(iv.upper_rank, 21);
  EXPECT_NEAR(iv.coverage, 1 - 0.0159, 1e-3);
  PercentileInterval withv = percentile_interval(std::vector<double>(20, 1.0), 95);
  EXPECT_TRUE(std::isinf(withv.upper_ms));
}

TEST(PercentileInterval, CoverageHoldsInSimulation) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);  // any continuous law will do; true P90 = 0.9
  int covered = 0;
  const int reps = 2000;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> x(60);
    for (double& v : x) v = u(rng);
    PercentileInterval iv = percentile_interval(x, 90);
    covered += iv.lower_ms <= 0.9 && 0.9 <= iv.upper_ms;
  }
  EXPECT_GE(covered, 0.93 * reps);  // nominal >= 95%; 2 points of simulation slack
}

// The windowed O(sqrt(n)) computation against the plain O(n) sum of every Binomial term.
PercentileInterval naive_rank_interval(int64_t n, double p, double confidence) {
  PercentileInterval iv;
  iv.upper_rank = n + 1;
  const double q = p / 100, tail = (1 - confidence) / 2;
  std::vector<double> cdf(static_cast<size_t>(n) + 1);
  double acc = 0;
  for (int64_t k = 0; k <= n; ++k) {
    acc += std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) +
                    k * std::log(q) + (n - k) * std::log1p(-q));
    cdf[static_cast<size_t>(k)] = std::min(acc, 1.0);
  }
  auto F = [&](int64_t k) { return k < 0 ? 0.0 : k >= n ? 1.0 : cdf[static_cast<size_t>(k)]; };
  for (int64_t l = n; l >= 1; --l)
    if (F(l - 1) <= tail) {
      iv.lower_rank = l;
      break;
    }
  for (int64_t u = 1; u <= n; ++u)
    if (F(u - 1) >= 1 - tail) {
      iv.upper_rank = u;
      break;
    }
  iv.coverage = F(iv.upper_rank - 1) - F(iv.lower_rank - 1);
  return iv;
}

TEST(PercentileInterval, WindowedComputationEqualsTheFullSum) {
  for (int64_t n : {1, 2, 5, 19, 20, 59, 100, 999, 4000, 20000}) {
    for (double p : {1.0, 50.0, 90.0, 95.0, 99.0, 99.9}) {
      PercentileInterval a = percentile_rank_interval(n, p, 0.95);
      PercentileInterval b = naive_rank_interval(n, p, 0.95);
      EXPECT_EQ(a.lower_rank, b.lower_rank) << n << " P" << p;
      EXPECT_EQ(a.upper_rank, b.upper_rank) << n << " P" << p;
      EXPECT_NEAR(a.coverage, b.coverage, 1e-9) << n << " P" << p;
    }
  }
}

TEST(PercentileInterval, MillionsOfSamplesStayCheapAndCentred) {
  // Pooled ITL of a long run: the ranks sit about 1.96 standard deviations either side of n q.
  const int64_t n = 50'000'000;
  PercentileInterval iv = percentile_rank_interval(n, 99, 0.95);
  const double sd = std::sqrt(n * 0.99 * 0.01);
  EXPECT_NEAR(static_cast<double>(iv.lower_rank), n * 0.99 - 1.96 * sd, 3);
  EXPECT_NEAR(static_cast<double>(iv.upper_rank), n * 0.99 + 1.96 * sd, 3);
  EXPECT_GE(iv.coverage, 0.95);
}

}  // namespace
}  // namespace tokperf
