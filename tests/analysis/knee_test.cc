#include "analysis/knee.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

TEST(Knee, TheSourceMaterialTable) {
  // concurrency: TTFT P95, tok/s (SOURCE_NOTES.md). 1->8: +100% vs +418% (fine); 8->16: +87.5% vs
  // +44.8%, 1.95x as fast: the knee is at 8.
  std::vector<SweepPoint> p = {{1, 400, 28}, {8, 800, 145}, {16, 1500, 210}, {32, 3200, 260}};
  KneeResult k = find_knee(p);
  ASSERT_TRUE(k.found);
  EXPECT_EQ(k.index, 1u);
  EXPECT_EQ(k.load, 8);
  EXPECT_EQ(k.explanation,
            "knee at concurrency 8: from 8 to 16, TTFT P95 rose 800 -> 1500 ms (+88%) while "
            "throughput went 145 -> 210 (+45%); latency grows 2.0x as fast as throughput beyond "
            "this point");
  KneeOptions strict;
  strict.elasticity = 3;  // only 16 -> 32 (+113% vs +24%, 4.8x) qualifies
  EXPECT_EQ(find_knee(p, strict).load, 16);
}

TEST(Knee, SaturatedThroughput) {
  std::vector<SweepPoint> p = {{1, 100, 10}, {2, 105, 20}, {4, 110, 40}, {8, 400, 40}};
  KneeResult k = find_knee(p);
  ASSERT_TRUE(k.found);
  EXPECT_EQ(k.load, 4);
  EXPECT_NE(k.explanation.find("did not grow (40 -> 40): the service is saturated"),
            std::string::npos)
      << k.explanation;
}

TEST(Knee, NoneOnALinearScalingCurve) {
  // Throughput doubles each level; latency rises 5% (below the 10% floor) then 20% (vs +100%).
  std::vector<SweepPoint> p = {{1, 100, 10}, {2, 105, 20}, {4, 126, 40}, {8, 140, 80}};
  KneeResult k = find_knee(p);
  EXPECT_FALSE(k.found);
  EXPECT_EQ(k.explanation, "no knee: TTFT P95 rose no faster than throughput up to concurrency 8");
  EXPECT_FALSE(find_knee(std::vector<SweepPoint>{{1, 100, 10}}).found);
}

TEST(Knee, SkipsFailedLevels) {
  double nan = std::nan("");
  std::vector<SweepPoint> p = {{1, 100, 10}, {2, nan, nan}, {4, 300, 12}};
  KneeResult k = find_knee(p);
  ASSERT_TRUE(k.found);
  EXPECT_EQ(k.load, 1);
}

}  // namespace
}  // namespace tokperf
