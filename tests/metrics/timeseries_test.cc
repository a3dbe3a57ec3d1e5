#include "metrics/timeseries.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'000'000'000;  // run start (0 would read as "never")

RequestTimeline tl(int64_t intended_ms, int64_t send_ms, std::vector<int64_t> events_ms,
                   int64_t end_ms, bool ok = true) {
  RequestTimeline t;
  t.intended_ns = kT0 + intended_ms * kMs;
  t.send_ns = kT0 + send_ms * kMs;
  for (int64_t e : events_ms) t.token_events.push_back({kT0 + e * kMs, -1, true});
  t.end_ns = end_ms < 0 ? 0 : kT0 + end_ms * kMs;
  if (!ok) t.error.kind = ErrorKind::kIncomplete;
  return t;
}

TEST(Timeseries, WindowsMatchHandCounts) {
  std::vector<RequestTimeline> r = {
      tl(100, 102, {500, 700, 1200}, 1200),  // R1
      tl(900, 1100, {1500}, 2500, false),    // R2: sent 200 ms late, fails at 2.5 s
      tl(2000, 2000, {}, -1),                // R3: still running at the end
  };
  std::vector<RunnerSample> s = {{kT0 + 300 * kMs, 0.5, 1}, {kT0 + 600 * kMs, 1.5, 3}};
  auto rows = build_timeseries(r, kT0, kT0 + 3000 * kMs, s);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].arrivals, 2);
  EXPECT_EQ(rows[0].sends, 1);
  EXPECT_EQ(rows[0].in_flight, 1);
  EXPECT_EQ(rows[0].output_tok_per_s, 2);
  EXPECT_DOUBLE_EQ(rows[0].ttft_p50_ms, 398);
  EXPECT_DOUBLE_EQ(rows[0].itl_p95_ms, 200);
  EXPECT_DOUBLE_EQ(rows[0].send_lag_p50_ms, 2);
  EXPECT_DOUBLE_EQ(rows[0].loop_lag_ms, 1.5);
  EXPECT_EQ(rows[0].client_queue, 3);

  EXPECT_EQ(rows[1].arrivals, 0);
  EXPECT_EQ(rows[1].sends, 1);
  EXPECT_EQ(rows[1].in_flight, 1);  // R1 ended at 1.2 s; R2 is running
  EXPECT_EQ(rows[1].completions, 1);
  EXPECT_EQ(rows[1].output_tok_per_s, 2);
  EXPECT_DOUBLE_EQ(rows[1].ttft_p50_ms, 400);
  EXPECT_DOUBLE_EQ(rows[1].itl_p50_ms, 500);
  EXPECT_DOUBLE_EQ(rows[1].send_lag_p95_ms, 200);
  EXPECT_TRUE(std::isnan(rows[1].loop_lag_ms));

  EXPECT_EQ(rows[2].arrivals, 1);
  EXPECT_EQ(rows[2].in_flight, 1);  // R3 only: R2 ended at 2.5 s
  EXPECT_EQ(rows[2].errors, 1);
  EXPECT_EQ(rows[2].completions, 0);
  EXPECT_TRUE(std::isnan(rows[2].ttft_p50_ms));

  std::string csv = timeseries_csv(rows);
  std::istringstream lines(csv);
  std::string header, row0, row1, row2;
  std::getline(lines, header);
  std::getline(lines, row0);
  std::getline(lines, row1);
  std::getline(lines, row2);
  EXPECT_EQ(header.rfind("second,arrivals,sends,in_flight,completions,errors,", 0), 0u);
  EXPECT_EQ(row0, "0,2,1,1,0,0,2.000,398.000,398.000,200.000,200.000,2.000,2.000,1.500,3");
  EXPECT_EQ(row2, "2,1,1,1,0,1,0.000,,,,,0.000,0.000,,");
}

TEST(Timeseries, WritesTheFile) {
  std::string path = ::testing::TempDir() + "tokperf_timeseries_test.csv";
  auto rows = build_timeseries({}, kT0, kT0 + 1500 * kMs);
  ASSERT_EQ(rows.size(), 2u);  // the last window is partial
  ASSERT_TRUE(write_timeseries_csv(path, rows).ok());
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), timeseries_csv(rows));
  std::remove(path.c_str());
  EXPECT_FALSE(write_timeseries_csv("/nonexistent/dir/ts.csv", rows).ok());
}

std::vector<RequestTimeline> level(int64_t ttft_first_ms, int64_t ttft_last_ms, int per_third) {
  // A 30 s level: sends spread over the first and last 10 s, ITL 20 ms throughout.
  std::vector<RequestTimeline> out;
  for (int i = 0; i < per_third; ++i) {
    int64_t t1 = i * (9000 / per_third), t2 = 20000 + i * (9000 / per_third);
    out.push_back(tl(t1, t1, {t1 + ttft_first_ms, t1 + ttft_first_ms + 20}, t1 + 1000));
    out.push_back(tl(t2, t2, {t2 + ttft_last_ms, t2 + ttft_last_ms + 20}, t2 + 1000));
  }
  return out;
}

TEST(Drift, FlaggedWhenTheLastThirdIsMarkedlyWorse) {
  auto r = level(100, 200, 30);
  DriftReport d = detect_drift(r, 0, kT0, kT0 + 30000 * kMs);
  EXPECT_TRUE(d.judged);
  EXPECT_TRUE(d.drifted);
  EXPECT_DOUBLE_EQ(d.ttft_p95_first_ms, 100);
  EXPECT_DOUBLE_EQ(d.ttft_p95_last_ms, 200);
  EXPECT_EQ(d.explanation,
            "drift: the last third of the level is markedly worse than the first: TTFT P95 100 -> "
            "200 ms");
}

TEST(Drift, NotFlaggedWhenStableOrMildOrTooFew) {
  DriftReport same = detect_drift(level(100, 100, 30), 0, kT0, kT0 + 30000 * kMs);
  EXPECT_TRUE(same.judged);
  EXPECT_FALSE(same.drifted);
  DriftReport mild = detect_drift(level(100, 140, 30), 0, kT0, kT0 + 30000 * kMs);  // 1.4x < 1.5x
  EXPECT_FALSE(mild.drifted);
  DriftReport other_level = detect_drift(level(100, 200, 30), 1, kT0, kT0 + 30000 * kMs);
  EXPECT_FALSE(other_level.judged);
  DriftReport few = detect_drift(level(100, 200, 5), 0, kT0, kT0 + 30000 * kMs);
  EXPECT_FALSE(few.judged);
  EXPECT_FALSE(few.drifted);
}

}  // namespace
}  // namespace tokperf
