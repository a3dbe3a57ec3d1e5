#include "metrics/client_health.h"

#include <cmath>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

TEST(ClientHealth, CpuUtilisation) {
  EXPECT_DOUBLE_EQ(cpu_utilisation_pct(3, 1, 10), 40);
  EXPECT_TRUE(std::isnan(cpu_utilisation_pct(1, 1, 0)));
}

TEST(ClientHealth, HealthyOrUnmeasuredGivesNoWarning) {
  ClientHealth h;  // everything NaN / zero: not measured
  EXPECT_TRUE(client_health_warnings(h).empty());
  h.loop_lag_p99_ms = 0.4;
  h.loop_lag_max_ms = 3;
  h.cpu_utilisation_pct = 35;
  EXPECT_TRUE(client_health_warnings(h).empty());
}

TEST(ClientHealth, EachThresholdWarns) {
  ClientHealth h;
  h.loop_lag_p99_ms = 2.5;
  auto w = client_health_warnings(h);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("2.50 ms"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("may have distorted"), std::string::npos);

  h = {};
  h.loop_lag_max_ms = 25;
  EXPECT_EQ(client_health_warnings(h).size(), 1u);

  h = {};
  h.cpu_utilisation_pct = 93;
  w = client_health_warnings(h);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("93%"), std::string::npos) << w[0];

  h.loop_lag_p99_ms = 1.01;
  h.loop_lag_max_ms = 20.5;
  EXPECT_EQ(client_health_warnings(h).size(), 3u);
}

TEST(ClientHealth, ThresholdIsExclusive) {
  ClientHealth h;
  h.loop_lag_p99_ms = kLoopLagP99WarnMs;
  h.cpu_utilisation_pct = kCpuUtilisationWarnPct;
  EXPECT_TRUE(client_health_warnings(h).empty());
}

// Issue 12: a lag that cannot distort what was measured is not a warning. The case from a real CPU
// llama.cpp server at 4 users: lag P99 2 ms, ITL P50 126 ms, TTFT P50 6.1 s.
TEST(ClientHealth, LagSmallAgainstTheMeasuredFiguresDoesNotWarn) {
  ClientHealth h;
  h.loop_lag_p99_ms = 2.0;
  h.loop_lag_max_ms = 30;
  h.cpu_utilisation_pct = 95;
  EXPECT_EQ(client_health_warnings(h).size(), 3u);  // unweighed: every absolute threshold
  h.distortable_ms = 126;
  EXPECT_TRUE(client_health_warnings(h).empty());
}

TEST(ClientHealth, LagMaterialAgainstTheMeasuredFiguresWarnsAndSaysHowMuch) {
  ClientHealth h;
  h.loop_lag_p99_ms = 2.0;
  h.distortable_ms = 20;  // 10%
  auto w = client_health_warnings(h);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("10.0% of the smallest figure"), std::string::npos) << w[0];
  h.cpu_utilisation_pct = 95;  // the busy core is now worth naming too
  EXPECT_EQ(client_health_warnings(h).size(), 2u);
  h.loop_lag_max_ms = 9.9;  // under the absolute stall threshold: never
  EXPECT_EQ(client_health_warnings(h).size(), 2u);
  h.loop_lag_max_ms = 25;  // above it and above half of 20 ms
  EXPECT_EQ(client_health_warnings(h).size(), 3u);
}

TEST(ClientHealth, MaterialShareBoundariesAreInclusive) {
  ClientHealth h;
  h.distortable_ms = 40;
  h.loop_lag_p99_ms = kLagMaterialShare * 40;  // 2 ms: over 1 ms and exactly 5%
  EXPECT_EQ(client_health_warnings(h).size(), 1u);
  h.loop_lag_p99_ms = 1.9;
  EXPECT_TRUE(client_health_warnings(h).empty());
  h.loop_lag_max_ms = kStallMaterialShare * 40;  // 20 ms is not over the absolute 20 ms
  EXPECT_TRUE(client_health_warnings(h).empty());
  h.distortable_ms = 30;
  h.loop_lag_p99_ms = 0.5;  // under the absolute 1 ms: never
  h.loop_lag_max_ms = 21;   // over 20 ms and over 15 ms
  EXPECT_EQ(client_health_warnings(h).size(), 1u);
}

TEST(ClientHealth, SeveralLoopsAreJudgedByTheWorstLoopWhichIsNamed) {
  // Two loops: loop 2's probes were late, loop 1's were not. Merged, the lag P99 looks fine (most
  // samples are loop 1's); the warning speaks of loop 2, and a process CPU above one core (two
  // loop threads) is not itself a warning: each thread is judged against its own core.
  ClientHealth h;
  h.loop_lag_p99_ms = 0.6;
  h.loop_lag_max_ms = 4;
  h.cpu_utilisation_pct = 130;
  std::vector<int64_t> calm(200, 100'000), late(200, 100'000);
  for (int i = 0; i < 10; ++i) late[i] = 3'000'000;  // 5% of loop 2's probes 3 ms late
  h.loops.push_back(loop_health(0, calm, 0.6, 1.0, 40, 1000));
  h.loops.push_back(loop_health(1, late, 0.7, 1.0, 38, 900));
  h.worst_loop = worst_loop(h.loops);
  EXPECT_EQ(h.worst_loop, 1);
  EXPECT_DOUBLE_EQ(h.loops[1].cpu_utilisation_pct, 70);
  EXPECT_DOUBLE_EQ(h.loops[0].stream_events_per_s, 1000);
  EXPECT_DOUBLE_EQ(h.loops[1].loop_lag_max_ms, 3);
  auto w = client_health_warnings(h);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("client loop 2 of 2 event-loop lag P99"), std::string::npos) << w[0];

  // A loop thread near a full core warns, naming that loop.
  h.loops[0] = loop_health(0, calm, 0.95, 1.0, 40, 1000);
  w = client_health_warnings(h);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[1].find("client loop 1 of 2 thread's CPU use was 95%"), std::string::npos) << w[1];
  EXPECT_NE(w[1].find("--threads"), std::string::npos) << w[1];
}

TEST(ClientHealth, WorstLoopOfNoneIsNone) { EXPECT_EQ(worst_loop({}), -1); }

}  // namespace
}  // namespace tokperf
