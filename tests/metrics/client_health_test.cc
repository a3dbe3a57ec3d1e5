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

}  // namespace
}  // namespace tokperf
