#include "load/load_plan.h"

#include <gtest/gtest.h>

namespace tokperf {
namespace {

std::vector<double> starts(const std::vector<LevelSpec>& v) {
  std::vector<double> out;
  for (const auto& l : v) out.push_back(l.start);
  return out;
}

TEST(LoadPlan, ConcurrencyAndRateLists) {
  auto c = parse_concurrency_list(kDefaultConcurrencySweep);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(starts(*c), (std::vector<double>{1, 4, 8, 16, 32, 64}));
  EXPECT_EQ((*c)[2].label(), "c=8");
  auto r = parse_rate_list("10,20.5");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(starts(*r), (std::vector<double>{10, 20.5}));
  EXPECT_EQ((*r)[1].mode, LoadMode::kRate);
  EXPECT_EQ((*r)[1].label(), "20.5 req/s");
  for (const char* bad : {"", "1,,4", "1,2.5", "0", "-1", "4,x", "1e3"}) {
    auto e = parse_concurrency_list(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.error().find("--concurrency"), std::string::npos);
    EXPECT_NE(e.error().find("positive whole numbers"), std::string::npos);
  }
  EXPECT_FALSE(parse_rate_list("10,0").ok());
}

TEST(LoadPlan, SteppedAndGeometricRamps) {
  auto s = parse_ramp("rate:10..50:step=10");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(starts(*s), (std::vector<double>{10, 20, 30, 40, 50}));
  auto frac = parse_ramp("rate:0.1..0.3:step=0.1");
  ASSERT_TRUE(frac.ok()) << frac.error();
  EXPECT_EQ(frac->size(), 3u);  // 0.1 + 2 * 0.1 is not lost to rounding
  auto g = parse_ramp("concurrency:1..64:x=2");
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(starts(*g), (std::vector<double>{1, 2, 4, 8, 16, 32, 64}));
  auto g2 = parse_ramp("concurrency:1..10:x=3");
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(starts(*g2), (std::vector<double>{1, 3, 9, 10}));  // TO always ends the ramp
}

TEST(LoadPlan, LinearRampTargets) {
  auto r = parse_ramp("concurrency:1..11:linear=10s");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 1u);
  const LevelSpec& l = (*r)[0];
  EXPECT_TRUE(l.is_ramp());
  EXPECT_EQ(l.target_at(0), 1);
  EXPECT_EQ(l.target_at(4'900'000'000), 5);  // 1 + 10 * 0.49 = 5.9 -> 5 slots
  EXPECT_EQ(l.target_at(5'000'000'000), 6);
  EXPECT_EQ(l.target_at(20'000'000'000), 11);  // holds TO after the ramp
  auto rate = parse_ramp("rate:100..10:linear=1m");
  ASSERT_TRUE(rate.ok());
  EXPECT_DOUBLE_EQ((*rate)[0].target_at(30'000'000'000), 55);
  EXPECT_EQ((*rate)[0].label(), "rate 100->10 over 60 s");
}

TEST(LoadPlan, BadRampsSayWhatIsAccepted) {
  for (const char* bad : {"rate:10..100", "speed:1..2:step=1", "rate:10-100:step=10",
                          "rate:100..10:step=10", "concurrency:1..8:step=1.5", "rate:1..8:x=1",
                          "rate:1..8:linear=abc", "rate:1..8:bogus=2", "rate:0..8:step=1"}) {
    auto e = parse_ramp(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.error().find("expected KIND:FROM..TO:HOW"), std::string::npos) << e.error();
    EXPECT_NE(e.error().find(bad), std::string::npos);
  }
}

TEST(LoadPlan, PhaseLimits) {
  auto t = parse_phase_limit("--warmup", "30s");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->duration_ns, 30'000'000'000);
  EXPECT_EQ(t->requests, 0);
  auto n = parse_phase_limit("--warmup", "20");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->requests, 20);
  EXPECT_EQ(parse_phase_limit("--duration", "2k")->requests, 2000);
  EXPECT_EQ(parse_phase_limit("--duration", "200req")->requests, 200);
  EXPECT_EQ(parse_phase_limit("--duration", "5m")->duration_ns, 300'000'000'000);
  EXPECT_TRUE(parse_phase_limit("--cooldown", "0")->none());
  auto e = parse_phase_limit("--warmup", "1.5");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("--warmup '1.5'"), std::string::npos);
}

TEST(Saturation, GrowingBacklogStops) {
  SaturationRules rules;  // 5 s windows, 3 growing windows, +10 total
  SaturationDetector d(rules);
  // Window means 10, 14, 18, 22: rising strictly by 12 in all.
  for (int w = 0; w < 4; ++w) {
    for (int s = 0; s < 5; ++s) {
      EXPECT_FALSE(d.stop_reason()) << "fired early at window " << w;
      d.add({10 + 4 * w, 0, 5, 0});
    }
  }
  ASSERT_TRUE(d.stop_reason());
  EXPECT_EQ(*d.stop_reason(),
            "stop: backlog (in-flight + client queue) grew 10 -> 14 -> 18 -> 22 over the last 3 "
            "windows of 5 s: arrivals outpace service");
}

TEST(Saturation, SteadyOrSlowlyGrowingBacklogDoesNot) {
  SaturationDetector steady;
  for (int i = 0; i < 60; ++i) steady.add({8 + (i % 3), 0, 5, 0});  // noisy but flat
  EXPECT_FALSE(steady.stop_reason());
  SaturationDetector slow;  // rises every window but only by 1 each: 3 in all, under min_growth
  for (int w = 0; w < 4; ++w)
    for (int s = 0; s < 5; ++s) slow.add({w, 0, 5, 0});
  EXPECT_FALSE(slow.stop_reason());
  SaturationDetector dip;  // the client queue grows but one window dips
  int means[] = {10, 20, 15, 30};
  for (int m : means)
    for (int s = 0; s < 5; ++s) dip.add({0, m, 5, 0});
  EXPECT_FALSE(dip.stop_reason());
}

TEST(Saturation, ErrorRateStops) {
  SaturationDetector d;
  for (int i = 0; i < 5; ++i) d.add({4, 0, 2, 1});  // 5 of 15 finished failed: 33%
  EXPECT_FALSE(d.stop_reason());
  for (int i = 0; i < 5; ++i) d.add({4, 0, 1, 3});  // last window: 15 of 20 = 75%
  ASSERT_TRUE(d.stop_reason());
  EXPECT_EQ(*d.stop_reason(),
            "stop: error rate 75% over the last 5 s (15 of 20 finished), above 50%");
  SaturationDetector few;  // 100% errors but only 5 finished: too few to judge
  for (int i = 0; i < 5; ++i) few.add({1, 0, 0, 1});
  EXPECT_FALSE(few.stop_reason());
}

}  // namespace
}  // namespace tokperf
