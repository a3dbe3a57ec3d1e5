// The open-loop schedule of one level: which arrivals exist, when, and in which phase, for rates,
// ramps and traces (docs/LOAD.md). Pure computation: exact, no clock.
#include "load/open_loop_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tokperf {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

LoadConfig rate_level(double rps, ArrivalKind kind = ArrivalKind::kConstant) {
  LoadConfig c;
  c.plan.levels = {LevelSpec{LoadMode::kRate, rps, rps, 0}};
  c.plan.arrivals = kind;
  c.plan.measure = PhaseLimit{};
  c.default_warmup = false;
  return c;
}

std::vector<Phase> phases(const OpenLoopSchedule& s) {
  std::vector<Phase> p;
  for (const auto& a : s.arrivals) p.push_back(a.phase);
  return p;
}

TEST(OpenLoopSchedule, CountPhasesTakeTheirRequestsInOrderAtTheRate) {
  LoadConfig c = rate_level(10);
  c.plan.warmup = PhaseLimit{0, 2};
  c.plan.measure = PhaseLimit{0, 5};
  c.plan.cooldown = PhaseLimit{0, 3};
  const OpenLoopSchedule s = plan_open_loop_schedule(c, 0);
  ASSERT_EQ(s.arrivals.size(), 10u);
  const auto W = Phase::kWarmup, M = Phase::kMeasure, C = Phase::kCooldown;
  EXPECT_EQ(phases(s), (std::vector<Phase>{W, W, M, M, M, M, M, C, C, C}));
  for (size_t i = 0; i < s.arrivals.size(); ++i) {
    EXPECT_EQ(s.arrivals[i].offset_ns, static_cast<int64_t>(i) * 100 * kMs);  // i / rate, exact
    EXPECT_EQ(s.arrivals[i].index, static_cast<int64_t>(i));
  }
  EXPECT_DOUBLE_EQ(s.target_rate_rps, 10);
  EXPECT_FALSE(s.fingerprint.empty());
}

TEST(OpenLoopSchedule, DurationPhasesAreJudgedByTheIntendedStart) {
  LoadConfig c = rate_level(10);
  c.plan.warmup = PhaseLimit{1 * kS, 0};
  c.plan.measure = PhaseLimit{2 * kS, 0};
  const OpenLoopSchedule s = plan_open_loop_schedule(c, 0);
  ASSERT_EQ(s.arrivals.size(), 30u);  // offsets 0, 0.1, ... 2.9 s: strictly before the 3 s end
  for (const auto& a : s.arrivals) {
    EXPECT_LT(a.offset_ns, 3 * kS);
    EXPECT_EQ(a.phase, a.offset_ns < 1 * kS ? Phase::kWarmup : Phase::kMeasure) << a.offset_ns;
  }
}

TEST(OpenLoopSchedule, ACountBesideADurationBecomesTimeAtTheRate) {
  LoadConfig c = rate_level(10);
  c.plan.warmup = PhaseLimit{0, 5};         // 5 requests at 10 req/s = the first 0.5 s
  c.plan.measure = PhaseLimit{1 * kS, 0};
  c.plan.cooldown = PhaseLimit{0, 2};       // 0.2 s
  const OpenLoopSchedule s = plan_open_loop_schedule(c, 0);
  ASSERT_EQ(s.arrivals.size(), 17u);  // 0 .. 1.6 s
  for (const auto& a : s.arrivals) {
    const Phase want = a.offset_ns < 500 * kMs    ? Phase::kWarmup
                       : a.offset_ns < 1500 * kMs ? Phase::kMeasure
                                                  : Phase::kCooldown;
    EXPECT_EQ(a.phase, want) << a.offset_ns;
  }
}

TEST(OpenLoopSchedule, TheDefaultWarmUpIsTheFirstSecondOfArrivals) {
  LoadConfig c = rate_level(4);
  c.default_warmup = true;
  c.plan.measure = PhaseLimit{0, 6};
  const OpenLoopSchedule s = plan_open_loop_schedule(c, 0);
  ASSERT_EQ(s.arrivals.size(), 10u);
  const std::vector<Phase> ps = phases(s);
  EXPECT_EQ(std::count(ps.begin(), ps.end(), Phase::kWarmup), 4);
  EXPECT_EQ(s.arrivals[3].phase, Phase::kWarmup);
  EXPECT_EQ(s.arrivals[4].phase, Phase::kMeasure);
  // At least one warm-up request even below 1 req/s.
  LoadConfig slow = rate_level(0.25);
  slow.default_warmup = true;
  slow.plan.measure = PhaseLimit{0, 2};
  const OpenLoopSchedule t = plan_open_loop_schedule(slow, 0);
  ASSERT_EQ(t.arrivals.size(), 3u);
  EXPECT_EQ(t.arrivals[0].phase, Phase::kWarmup);
  EXPECT_EQ(t.arrivals[1].phase, Phase::kMeasure);
  EXPECT_EQ(t.arrivals[1].offset_ns, 4 * kS);
}

TEST(OpenLoopSchedule, ARampIsOneMeasuredSweepAtItsMeanRate) {
  LoadConfig c = rate_level(10);
  c.plan.levels = {LevelSpec{LoadMode::kRate, 10, 30, 10 * kS}};
  c.plan.warmup = PhaseLimit{0, 5};  // ignored: a ramp has no warm-up of its own
  c.plan.measure = PhaseLimit{10 * kS, 0};
  const OpenLoopSchedule s = plan_open_loop_schedule(c, 0);
  // Constant arrivals under the ramp: the integral of 10 + 2t over 10 s is 200 requests.
  EXPECT_NEAR(static_cast<double>(s.arrivals.size()), 200, 1);
  EXPECT_DOUBLE_EQ(s.target_rate_rps, 20);
  int64_t prev = -1;
  for (const auto& a : s.arrivals) {
    EXPECT_EQ(a.phase, Phase::kMeasure);
    EXPECT_GE(a.offset_ns, prev);
    EXPECT_LT(a.offset_ns, 10 * kS);
    prev = a.offset_ns;
  }
  // The gaps shrink as the rate climbs.
  const auto gap = [&](size_t i) { return s.arrivals[i + 1].offset_ns - s.arrivals[i].offset_ns; };
  EXPECT_GT(gap(1), gap(s.arrivals.size() - 3));
}

TEST(OpenLoopSchedule, ATraceIsReplayedWholeAfterItsWarmUp) {
  LoadConfig c = rate_level(1);
  c.plan.warmup = PhaseLimit{0, 2};
  for (int64_t t : {0, 5, 5, 40, 100}) {
    TraceEntry e;
    e.offset_ns = t * kMs;
    e.input_tokens = 10;
    c.trace.push_back(e);
  }
  const OpenLoopSchedule s = plan_open_loop_schedule(c, 0);
  ASSERT_EQ(s.arrivals.size(), 5u);
  EXPECT_EQ(s.arrivals[2].offset_ns, 5 * kMs);
  EXPECT_EQ(s.arrivals[4].offset_ns, 100 * kMs);
  EXPECT_EQ(s.arrivals[4].index, 4);  // into the trace, for its lengths
  const auto W = Phase::kWarmup, M = Phase::kMeasure;
  EXPECT_EQ(phases(s), (std::vector<Phase>{W, W, M, M, M}));
  EXPECT_EQ(s.target_rate_rps, 0);
  // The default warm-up does not apply to a trace: every entry is measured.
  c.default_warmup = true;
  c.plan.warmup = PhaseLimit{};
  const OpenLoopSchedule all = plan_open_loop_schedule(c, 0);
  const std::vector<Phase> ps = phases(all);
  EXPECT_EQ(std::count(ps.begin(), ps.end(), Phase::kMeasure), 5);
}

TEST(OpenLoopSchedule, TheSameSeedGivesTheSameScheduleAndEachLevelItsOwn) {
  LoadConfig c = rate_level(50, ArrivalKind::kPoisson);
  c.plan.levels.push_back(c.plan.levels[0]);  // two levels at the same rate
  c.plan.measure = PhaseLimit{0, 200};
  c.plan.seed = 7;
  const OpenLoopSchedule a = plan_open_loop_schedule(c, 0);
  const OpenLoopSchedule again = plan_open_loop_schedule(c, 0);
  const OpenLoopSchedule level1 = plan_open_loop_schedule(c, 1);
  ASSERT_EQ(a.arrivals.size(), 200u);
  EXPECT_EQ(a.fingerprint, again.fingerprint);
  for (size_t i = 0; i < a.arrivals.size(); ++i) {
    EXPECT_EQ(a.arrivals[i].offset_ns, again.arrivals[i].offset_ns);
  }
  // Level k draws with seed + k: another schedule, another fingerprint.
  EXPECT_NE(a.fingerprint, level1.fingerprint);
  EXPECT_NE(a.arrivals[1].offset_ns, level1.arrivals[1].offset_ns);
  c.plan.seed = 8;
  EXPECT_EQ(plan_open_loop_schedule(c, 0).fingerprint, level1.fingerprint);
  // Poisson: gaps vary, mean near 1 / rate (200 gaps: within 25%).
  const double mean_gap =
      static_cast<double>(a.arrivals.back().offset_ns) / static_cast<double>(a.arrivals.size() - 1);
  EXPECT_NEAR(mean_gap, 20.0 * kMs, 5.0 * kMs);
  EXPECT_NE(a.arrivals[1].offset_ns - a.arrivals[0].offset_ns,
            a.arrivals[2].offset_ns - a.arrivals[1].offset_ns);
}

}  // namespace
}  // namespace tokperf
