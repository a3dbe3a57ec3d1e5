#include "analysis/diagnosis.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tokperf {
namespace {

DistStats stats(double p50, double p95, double p99 = -1, double max = -1) {
  DistStats d;
  d.count = 100;
  d.p50 = d.mean = p50;
  d.p90 = d.p95 = p95;
  d.p99 = p99 < 0 ? p95 : p99;
  d.max = max < 0 ? d.p99 : max;
  d.min = p50 * 0.8;
  return d;
}

LevelSummary level(int index, int concurrency, double ttft50, double ttft95, double itl50,
                   double itl95) {
  LevelSummary s;
  s.params.label = "c=" + std::to_string(concurrency);
  s.params.level = index;
  s.params.concurrency = concurrency;
  s.ttft = stats(ttft50, ttft95);
  s.ttfo = s.ttft;
  s.itl = stats(itl50, itl95);
  s.tpot = stats(itl50, itl95);
  s.sent = s.ok = 100;
  return s;
}

// n requests at `lvl`, sent 100 ms apart, each with `gaps` ITL gaps of gap(i, k) ms.
template <class Gap>
std::vector<RequestSample> requests(int lvl, int n, int gaps, double ttft, Gap gap) {
  std::vector<RequestSample> out;
  for (int i = 0; i < n; ++i) {
    RequestSample r;
    r.seq = i;
    r.level = lvl;
    r.start_unix_us = 1'700'000'000'000'000 + int64_t{i} * 100'000;
    r.ttft_ms = r.ttfo_ms = ttft;
    r.prompt_tokens = 300;
    for (int k = 0; k < gaps; ++k) r.itl_ms.push_back(gap(i, k));
    r.output_tokens = gaps + 1;
    out.push_back(r);
  }
  return out;
}

std::vector<FindingKind> kinds(const std::vector<Finding>& f) {
  std::vector<FindingKind> k;
  for (const Finding& x : f) k.push_back(x.kind);
  return k;
}

// Three levels of a service well inside its SLO, requests with a small deterministic jitter.
struct Healthy {
  std::vector<LevelSummary> levels{level(0, 1, 200, 250, 30, 40), level(1, 4, 210, 270, 31, 42),
                                   level(2, 8, 230, 300, 33, 45)};
  std::vector<RequestSample> reqs =
      requests(0, 90, 100, 200, [](int i, int k) { return 30.0 + ((i * 7 + k * 3) % 10); });
  ClientHealth health;
};

TEST(Diagnosis, HealthyRunHasNoFinding) {
  Healthy h;
  h.health.cpu_utilisation_pct = 20;
  h.health.loop_lag_p99_ms = 0.2;
  h.health.loop_lag_max_ms = 3;
  std::vector<Finding> f = diagnose({h.levels, h.reqs, &h.health});
  EXPECT_TRUE(f.empty()) << f.front().title << ": " << f.front().evidence;
}

TEST(Diagnosis, TtftRisingWithLoadAndFlatItlIsQueueing) {
  // The source material's illustrative step-load table, c=1 and c=32 rows.
  std::vector<LevelSummary> lv{level(0, 1, 350, 400, 38, 42), level(1, 8, 520, 800, 40, 60),
                               level(2, 32, 1400, 3200, 45, 80)};
  std::vector<Finding> f = diagnose({lv, {}, nullptr});
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kQueueing});
  EXPECT_NE(f[0].evidence.find("400 ms at c=1 to 3.20 s at c=32 (x8.0)"), std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("38.0 ms -> 45.0 ms"), std::string::npos) << f[0].evidence;
  EXPECT_FALSE(f[0].remedies.empty());
}

TEST(Diagnosis, TtftSpikeWithinOneLevelIsQueueing) {
  std::vector<LevelSummary> lv{level(0, 16, 300, 1500, 30, 40)};
  std::vector<Finding> f = diagnose({lv, {}, nullptr});
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kQueueing});
  EXPECT_NE(f[0].evidence.find("x5.0"), std::string::npos) << f[0].evidence;
}

TEST(Diagnosis, TtftRisingTogetherWithItlIsNotQueueing) {
  std::vector<LevelSummary> lv{level(0, 1, 350, 400, 30, 35), level(1, 32, 900, 1000, 60, 70)};
  EXPECT_TRUE(diagnose({lv, {}, nullptr}).empty());
}

TEST(Diagnosis, SlowDecodeWithFineTtftIsBandwidthBound) {
  std::vector<LevelSummary> lv{level(0, 8, 300, 400, 150, 180)};
  std::vector<Finding> f = diagnose({lv, {}, nullptr});
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kDecodeBandwidth});
  EXPECT_NE(f[0].evidence.find("TPOT P95 180 ms exceeds 100 ms (about 5.6 tokens/s"),
            std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].remedies[0].find("quantize"), std::string::npos);
}

TEST(Diagnosis, BothSlowIsComputeAndBandwidth) {
  std::vector<LevelSummary> lv{level(0, 8, 2500, 3000, 140, 150)};
  std::vector<Finding> f = diagnose({lv, {}, nullptr});
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kComputeAndBandwidth});
  EXPECT_NE(f[0].evidence.find("TTFT P95 3.00 s exceeds 2.00 s"), std::string::npos);
  EXPECT_NE(f[0].remedies[0].find("prompt length"), std::string::npos);
}

TEST(Diagnosis, RareMultiSecondGapsAreStalls) {
  // 50 requests x 100 gaps of 40 ms; 2 gaps of 2 s in each of 30 requests: 60 / 5000 = 1.2% > 1%.
  Healthy h;
  std::vector<RequestSample> r = requests(0, 50, 100, 200, [](int i, int k) {
    return (i < 30 && (k == 10 || k == 60)) ? 2000.0 : 40.0;
  });
  std::vector<Finding> f = diagnose({h.levels, r, nullptr});
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kStalls});
  EXPECT_NE(f[0].evidence.find("ITL P50 40.0 ms but P99 2.00 s (x50) and the longest gap 2.00 s"),
            std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("30 request(s)"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].remedies[0].find("preempted"), std::string::npos);
}

TEST(Diagnosis, LastThirdWorseThanFirstIsDrift) {
  Healthy h;
  // 90 requests in send order; TTFT 200 ms for the first 30, 500 ms for the last 30.
  std::vector<RequestSample> r = requests(0, 90, 10, 200, [](int, int) { return 30.0; });
  for (int i = 60; i < 90; ++i) r[static_cast<size_t>(i)].ttft_ms = 500;
  std::reverse(r.begin(), r.end());  // file order is completion order, not send order
  std::vector<Finding> f = diagnose({h.levels, r, nullptr});
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kDrift});
  EXPECT_NE(f[0].evidence.find("TTFT P95 200 ms in the first third of the requests vs 500 ms"),
            std::string::npos)
      << f[0].evidence;
}

TEST(Diagnosis, TooFewRequestsGiveNoDriftVerdict) {
  Healthy h;
  std::vector<RequestSample> r = requests(0, 30, 10, 200, [](int, int) { return 30.0; });
  for (int i = 20; i < 30; ++i) r[static_cast<size_t>(i)].ttft_ms = 900;
  EXPECT_TRUE(diagnose({h.levels, r, nullptr}).empty());
}

TEST(Diagnosis, TtftLinearInPromptLengthGivesPrefillRate) {
  Healthy h;
  // TTFT = 100 ms + prompt / 5000 tok/s, prompts 500..4000 tokens.
  std::vector<RequestSample> r = requests(0, 8, 5, 0, [](int, int) { return 30.0; });
  for (size_t i = 0; i < r.size(); ++i) {
    r[i].prompt_tokens = 500 * static_cast<int64_t>(i + 1);
    r[i].ttft_ms = 100 + r[i].prompt_tokens * 0.2;
  }
  DiagnosisThresholds th;
  th.prefill_min_samples = 8;
  std::vector<Finding> f = diagnose({h.levels, r, nullptr}, th);
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kPrefillRate});
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_NE(f[0].evidence.find("TTFT ~ 100 ms + prompt tokens / 5000 tokens/s (200.00 ms per 1k "
                               "tokens; R^2 1.00, 8 requests, prompts 500-4000 tokens)"),
            std::string::npos)
      << f[0].evidence;
}

TEST(Diagnosis, ItlGrowingAlongLongResponsesIsKvCacheTax) {
  Healthy h;
  // 400 gaps rising linearly 30 -> 55 ms: first-quarter median 33.1, last-quarter 51.8 ms.
  std::vector<RequestSample> r =
      requests(0, 5, 400, 200, [](int, int k) { return 30.0 + 25.0 * k / 400; });
  std::vector<Finding> f = diagnose({h.levels, r, nullptr});
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kKvCacheTax});
  EXPECT_NE(f[0].evidence.find("Median ITL 33.1 ms over the first quarter"), std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("vs 51.8 ms"), std::string::npos) << f[0].evidence;
}

TEST(Diagnosis, SaturatedClientIsReported) {
  Healthy h;
  h.health.cpu_utilisation_pct = 97;
  std::vector<Finding> f = diagnose({h.levels, h.reqs, &h.health});
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kClientBound});
  EXPECT_NE(f[0].evidence.find("97"), std::string::npos) << f[0].evidence;
}

TEST(Diagnosis, VisibleOutputLongAfterFirstTokenIsReported) {
  std::vector<LevelSummary> lv{level(0, 1, 300, 350, 30, 40)};
  lv[0].ttfo = stats(3000, 3500);
  std::vector<Finding> f = diagnose({lv, {}, nullptr});
  ASSERT_EQ(kinds(f), std::vector<FindingKind>{FindingKind::kLateVisibleOutput});
  EXPECT_NE(f[0].evidence.find("TTFO P50 3.00 s vs TTFT P50 300 ms (2.70 s later)"),
            std::string::npos)
      << f[0].evidence;
}

}  // namespace
}  // namespace tokperf
