#include "net/noise_floor.h"

#include <cmath>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

// Behaviour only: every sample is taken, timers never fire early, ordering of the statistics holds.
// How small the floor is depends on the machine and is reported by the benchmarks, not tested.
TEST(NoiseFloor, TakesEverySampleAndTimersAreNeverEarly) {
  NoiseFloorOptions o;
  o.timer_samples = 40;
  o.timer_interval_ns = 100'000;
  o.round_trips = 30;
  NoiseFloor f = measure_noise_floor(o);
  EXPECT_TRUE(f.error.empty()) << f.error;
  EXPECT_TRUE(f.measured());
  EXPECT_EQ(f.timer_samples, 40);
  EXPECT_GE(f.timer_lateness_p50_ms, 0);
  EXPECT_LE(f.timer_lateness_p50_ms, f.timer_lateness_p99_ms);
  EXPECT_LE(f.timer_lateness_p99_ms, f.timer_lateness_max_ms);
  EXPECT_EQ(f.round_trips, 30);
  EXPECT_GT(f.loopback_rtt_p50_ms, 0);
  EXPECT_LE(f.loopback_rtt_p50_ms, f.loopback_rtt_p99_ms);
  EXPECT_FALSE(std::isnan(f.timer_slack_us));
  const std::string line = render_noise_floor(f);
  EXPECT_NE(line.find("timer wake-up lateness P50"), std::string::npos) << line;
  EXPECT_NE(line.find("loopback round trip P50"), std::string::npos) << line;
}

TEST(NoiseFloor, NothingAskedNothingMeasured) {
  NoiseFloorOptions o;
  o.timer_samples = 0;
  o.round_trips = 0;
  NoiseFloor f = measure_noise_floor(o);
  EXPECT_FALSE(f.measured());
  EXPECT_EQ(render_noise_floor(f), "");
}

}  // namespace
}  // namespace tokperf
