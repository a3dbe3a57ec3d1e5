#include "load/arrivals.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

std::vector<double> gaps_s(const std::vector<int64_t>& offsets) {
  std::vector<double> g;
  for (size_t i = 1; i < offsets.size(); ++i) g.push_back((offsets[i] - offsets[i - 1]) / 1e9);
  return g;
}

// Kolmogorov–Smirnov statistic of the sample against Exp(rate).
double ks_exponential(std::vector<double> x, double rate) {
  std::sort(x.begin(), x.end());
  double n = static_cast<double>(x.size()), d = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double f = 1 - std::exp(-rate * x[i]);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  return d;
}

double cv(const std::vector<double>& x) {
  double mean = std::accumulate(x.begin(), x.end(), 0.0) / x.size();
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / (x.size() - 1)) / mean;
}

TEST(Arrivals, Mt19937_64IsTheStandardEngine) {
  // The standard fixes the 10000th output of a default-seeded mt19937_64 ([rand.predef]); our
  // schedules are only portable because of this.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ULL);
}

TEST(Arrivals, ConstantIsEvenlySpacedFromZero) {
  auto o = arrival_offsets_count({ArrivalKind::kConstant, 3.0, 1, 7}, 4);
  EXPECT_EQ(o, (std::vector<int64_t>{0, 333333333, 666666667, 1000000000}));
  auto u = arrival_offsets_until({ArrivalKind::kConstant, 10.0, 1, 7}, 1'000'000'000);
  EXPECT_EQ(u.size(), 10u);  // 0, 0.1, ... 0.9; 1.0 is not before the end
}

TEST(Arrivals, PoissonGapsPassKolmogorovSmirnov) {
  // Critical value of D at significance 0.01 is 1.628 / sqrt(n) (asymptotic).
  const size_t n = 4000;
  for (uint64_t seed : {1ULL, 2ULL, 12345ULL}) {
    auto g = gaps_s(arrival_offsets_count({ArrivalKind::kPoisson, 50.0, 1, seed}, n + 1));
    double d = ks_exponential(g, 50.0);
    EXPECT_LT(d, 1.628 / std::sqrt(double(n))) << "seed " << seed;
  }
  // The check has teeth: gamma gaps with the same mean are rejected.
  auto bursty = gaps_s(arrival_offsets_count({ArrivalKind::kGamma, 50.0, 0.5, 1}, n + 1));
  EXPECT_GT(ks_exponential(bursty, 50.0), 1.628 / std::sqrt(double(n)));
}

TEST(Arrivals, GammaKeepsMeanRateAndHasCvOneOverSqrtShape) {
  const size_t n = 40000;
  for (double shape : {0.25, 0.5, 2.0, 4.0}) {
    auto g = gaps_s(arrival_offsets_count({ArrivalKind::kGamma, 20.0, shape, 9}, n + 1));
    double mean = std::accumulate(g.begin(), g.end(), 0.0) / g.size();
    EXPECT_NEAR(mean, 1 / 20.0, 0.05 / 20.0) << "shape " << shape;  // within 5%
    EXPECT_NEAR(cv(g), 1 / std::sqrt(shape), 0.05 / std::sqrt(shape)) << "shape " << shape;
  }
}

TEST(Arrivals, GammaShapeOneIsExactlyPoisson) {
  auto p = arrival_offsets_count({ArrivalKind::kPoisson, 10.0, 1, 5}, 100);
  auto g = arrival_offsets_count({ArrivalKind::kGamma, 10.0, 1.0, 5}, 100);
  EXPECT_EQ(p, g);
}

TEST(Arrivals, SameSeedSameScheduleAndFingerprint) {
  ArrivalSpec s{ArrivalKind::kPoisson, 100.0, 1, 42};
  auto a = arrival_offsets_until(s, 10'000'000'000);
  auto b = arrival_offsets_until(s, 10'000'000'000);
  EXPECT_EQ(a, b);
  EXPECT_EQ(schedule_fingerprint(a), schedule_fingerprint(b));
  s.seed = 43;
  auto c = arrival_offsets_until(s, 10'000'000'000);
  EXPECT_NE(a, c);
  EXPECT_NE(schedule_fingerprint(a), schedule_fingerprint(c));
}

TEST(Arrivals, GoldenScheduleForSeed42) {
  // Pinned so a change of generator is noticed; docs/LOAD.md shows the same numbers.
  auto o = arrival_offsets_count({ArrivalKind::kPoisson, 10.0, 1, 42}, 4);
  EXPECT_EQ(o, (std::vector<int64_t>{0, 28083155, 72863324, 101345913}));
  EXPECT_EQ(fingerprint_hex(schedule_fingerprint(o)), "3d3c7fdcf965fb36");
}

TEST(Arrivals, FingerprintIsFnv1a) {
  EXPECT_EQ(schedule_fingerprint({}), 0xcbf29ce484222325ULL);  // the FNV-1a offset basis
  EXPECT_EQ(fingerprint_hex(0xabcULL), "0000000000000abc");
  std::vector<int64_t> a{0, 1}, b{1, 0};
  EXPECT_NE(schedule_fingerprint(a), schedule_fingerprint(b));
}

TEST(Arrivals, LinearRampFollowsTheIntensity) {
  // 0 -> 100 req/s over 10 s: 500 arrivals expected; the second half holds 3/4 of them.
  ArrivalSpec s{ArrivalKind::kConstant, 1, 1, 0};
  auto o = ramp_arrival_offsets(s, 0, 100, 10'000'000'000);
  EXPECT_NEAR(double(o.size()), 500, 1);
  auto half = std::count_if(o.begin(), o.end(), [](int64_t t) { return t >= 5'000'000'000; });
  EXPECT_NEAR(double(half), 375, 1);
  EXPECT_TRUE(std::is_sorted(o.begin(), o.end()));
  // A flat ramp equals the plain constant schedule.
  auto flat = ramp_arrival_offsets(s, 10, 10, 1'000'000'000);
  EXPECT_EQ(flat, arrival_offsets_until({ArrivalKind::kConstant, 10, 1, 0}, 1'000'000'000));
}

TEST(Arrivals, ParseKind) {
  EXPECT_EQ(*parse_arrival_kind("gamma"), ArrivalKind::kGamma);
  auto bad = parse_arrival_kind("uniform");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("constant, poisson, gamma"), std::string::npos);
}

TEST(Trace, ParsesSecondsAndMillisecondsWithScaling) {
  auto r = parse_trace_jsonl(
      "{\"timestamp\": 10.0, \"input_tokens\": 100, \"output_tokens\": 20}\n"
      "\n"
      "{\"timestamp\": 10.5, \"prompt\": \"hi\"}\n",
      2.0);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].offset_ns, 0);
  EXPECT_EQ((*r)[0].input_tokens, 100);
  EXPECT_EQ((*r)[0].output_tokens, 20);
  EXPECT_EQ((*r)[1].offset_ns, 250'000'000);  // 0.5 s at speed 2
  EXPECT_EQ((*r)[1].prompt, "hi");
  EXPECT_EQ((*r)[1].output_tokens, -1);
  EXPECT_EQ((*r)[1].line, 3);
  auto ms = parse_trace_jsonl(
      "{\"timestamp_ms\": 1000, \"input_tokens\": 1}\n"
      "{\"timestamp_ms\": 1250, \"input_tokens\": 1}");
  ASSERT_TRUE(ms.ok()) << ms.error();
  EXPECT_EQ((*ms)[1].offset_ns, 250'000'000);
}

TEST(Trace, BadLinesNameTheLine) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"{\"timestamp\":1,\"input_tokens\":1}\nnot json", "line 2: not a JSON object"},
      {"{\"input_tokens\":1}", "line 1: needs exactly one of \"timestamp\""},
      {"{\"timestamp\":1,\"timestamp_ms\":1,\"input_tokens\":1}", "exactly one of"},
      {"{\"timestamp\":\"1\",\"input_tokens\":1}", "\"timestamp\" must be a number"},
      {"{\"timestamp\":2,\"input_tokens\":1}\n{\"timestamp\":1,\"input_tokens\":1}",
       "line 2: timestamp 1 s is earlier"},
      {"{\"timestamp\":1}", "\"input_tokens\" (integer) or \"prompt\""},
      {"{\"timestamp\":1,\"input_tokens\":-3}", "non-negative integer"},
      {"{\"timestamp\":1,\"prompt\":\"x\",\"output_tokens\":0}", "positive integer"},
  };
  for (const auto& c : cases) {
    auto r = parse_trace_jsonl(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().find(c.want), std::string::npos) << r.error();
  }
  EXPECT_FALSE(parse_trace_jsonl("", 0).ok());
  EXPECT_FALSE(load_trace_jsonl("/nonexistent/trace.jsonl").ok());
}

}  // namespace
}  // namespace tokperf
