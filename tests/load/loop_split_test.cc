// Splitting a run across event loops and merging their reports (load/loop_split.h): share counts,
// and merged infos and samples equal to what one driver over the whole level gives.
#include "load/loop_split.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "load/level_driver.h"

namespace tokperf {
namespace {

LevelSpec concurrency(double c) { return LevelSpec{LoadMode::kConcurrency, c, c, 0}; }
LevelSpec rate(double r) { return LevelSpec{LoadMode::kRate, r, r, 0}; }

TEST(LoopSplit, ClosedLoopLevelsNeverGetMoreSharesThanSlots) {
  LoadConfig load;
  load.plan.levels = {concurrency(1), concurrency(3), concurrency(64),
                      LevelSpec{LoadMode::kConcurrency, 2, 9.5, 1'000'000'000}};
  EXPECT_EQ(level_share_count(load, 0, 4), 1);
  EXPECT_EQ(level_share_count(load, 1, 4), 3);
  EXPECT_EQ(level_share_count(load, 2, 4), 4);
  EXPECT_EQ(level_share_count(load, 3, 16), 9);  // a ramp: its top, whole
  EXPECT_EQ(level_share_count(load, 2, 1), 1);
  EXPECT_EQ(run_loop_count(load, 8), 8);
  EXPECT_EQ(run_loop_count(load, 1), 1);
  load.plan.levels = {concurrency(1), concurrency(2)};
  EXPECT_EQ(run_loop_count(load, 8), 2);
}

TEST(LoopSplit, OpenLoopSharesAreBoundByArrivalsAndTheCap) {
  LoadConfig load;
  load.plan.levels = {rate(100)};
  load.default_warmup = false;
  load.plan.measure = PhaseLimit{0, 3};
  EXPECT_EQ(level_share_count(load, 0, 8), 3);  // three arrivals
  load.plan.measure = PhaseLimit{0, 50};
  EXPECT_EQ(level_share_count(load, 0, 8), 8);
  load.plan.max_concurrency = 2;  // each share's cap is at least 1: two shares at most
  EXPECT_EQ(level_share_count(load, 0, 8), 2);
  EXPECT_EQ(run_loop_count(load, 8), 2);
}

TEST(LoopSplit, SharePlansTogetherHoldTheWholeLevel) {
  LoadConfig load;
  load.plan.levels = {concurrency(7)};
  load.plan.measure = PhaseLimit{0, 101};
  const int n = level_share_count(load, 0, 3);
  ASSERT_EQ(n, 3);
  int64_t measure = 0, warmup = 0;
  for (int k = 0; k < n; ++k) {
    const LevelPlan p = make_level_plan(load, 0, LevelShare{k, n});
    measure += p.measure.requests;
    warmup += p.warmup.requests;
    EXPECT_GE(p.warmup.requests, 1);  // every share has a slot
  }
  EXPECT_EQ(measure, 101);
  EXPECT_EQ(warmup, 7);
}

// Shards x loops: shard I of N splits its share over m loops as the combined shares I + N*k of
// N*m; the share count is the shard's part of the work, the same on every shard.
TEST(LoopSplit, ShardLoopsSplitOnlyTheShardsShareAndAddUpOverShards) {
  LoadConfig load;
  load.plan.levels = {concurrency(7), concurrency(3)};
  load.plan.measure = PhaseLimit{0, 101};
  load.share_count = 2;
  EXPECT_EQ(level_share_count(load, 0, 8), 3);  // 7 slots over 2 shards: 3 loops each at most
  EXPECT_EQ(level_share_count(load, 1, 8), 1);  // 3 over 2: 1
  EXPECT_EQ(run_loop_count(load, 8), 3);
  int64_t measure = 0, warmup = 0;
  for (int shard = 0; shard < 2; ++shard) {
    load.share_index = shard;
    const int m = level_share_count(load, 0, 3);
    ASSERT_EQ(m, 3);
    for (int k = 0; k < m; ++k) {
      const LevelShare s = loop_share(load, k, m);
      EXPECT_EQ(s.index, shard + 2 * k);
      EXPECT_EQ(s.count, 6);
      const LevelPlan p = make_level_plan(load, 0, s);
      measure += p.measure.requests;
      warmup += p.warmup.requests;
      EXPECT_GE(p.warmup.requests, 1);  // every loop of every shard has a slot
    }
  }
  EXPECT_EQ(measure, 101);
  EXPECT_EQ(warmup, 7);
}

TEST(LoopSplit, ShardLoopsTogetherPaceExactlyTheShardsArrivals) {
  LoadConfig load;
  load.plan.levels = {rate(200)};
  load.plan.seed = 3;
  load.default_warmup = false;
  load.plan.measure = PhaseLimit{0, 45};
  load.share_count = 3;
  for (int shard = 0; shard < 3; ++shard) {
    load.share_index = shard;
    const LevelPlan one = make_level_plan(load, 0, LevelShare{shard, 3});
    const int m = level_share_count(load, 0, 4);
    ASSERT_EQ(m, 4);  // 15 arrivals per shard: room for 4 loops
    std::vector<int64_t> got;
    for (int k = 0; k < m; ++k) {
      const LevelPlan p = make_level_plan(load, 0, loop_share(load, k, m));
      EXPECT_FALSE(p.arrivals.empty());
      EXPECT_EQ(p.schedule_fingerprint, one.schedule_fingerprint);
      for (const PlannedArrival& a : p.arrivals) {
        EXPECT_EQ(a.index % 3, shard);
        EXPECT_EQ((a.index / 3) % m, k);
        got.push_back(a.index);
      }
    }
    std::vector<int64_t> want;
    for (const PlannedArrival& a : one.arrivals) want.push_back(a.index);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << "shard " << shard;
  }
}

// Drives a share's driver to its end in virtual time: every request finishes 1 ms after it starts.
LevelRunInfo drive(LevelPlan plan, int64_t start_ns) {
  LevelDriver d(std::move(plan), start_ns, 20'000'000);
  int64_t now = start_ns;
  std::vector<std::pair<int64_t, Phase>> in_flight;  // (end, phase)
  for (int guard = 0; guard < 1'000'000 && !d.level_done(); ++guard) {
    while (auto o = d.next_send(now)) in_flight.emplace_back(now + 1'000'000, o->phase);
    std::sort(in_flight.begin(), in_flight.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    int64_t next = d.wake_at();
    if (!in_flight.empty() && (next < 0 || in_flight.front().first <= next)) {
      now = std::max(now, in_flight.front().first);
      const Phase p = in_flight.front().second;
      in_flight.erase(in_flight.begin());
      d.on_finished(now, p, ErrorKind::kNone);
    } else if (next >= 0) {
      now = std::max(now, next);
    } else {
      break;
    }
  }
  EXPECT_TRUE(d.level_done());
  return d.info();
}

TEST(LoopSplit, MergedOpenLoopInfoEqualsTheWholeLevelsWhereSchedulesDecide) {
  LoadConfig load;
  load.plan.levels = {rate(500)};
  load.plan.seed = 11;
  load.default_warmup = false;
  load.plan.warmup = PhaseLimit{0, 4};
  load.plan.measure = PhaseLimit{0, 60};
  load.stop_on_saturation = false;
  const int64_t start = 5'000'000'000;
  const LevelRunInfo whole = drive(make_level_plan(load, 0), start);
  const LevelRunInfo whole_at_start = LevelDriver(make_level_plan(load, 0), start, 20'000'000).info();
  std::vector<LevelRunInfo> shares;
  for (int k = 0; k < 3; ++k) shares.push_back(drive(make_level_plan(load, 0, {k, 3}), start));
  const LevelRunInfo m = merge_level_shares(shares, whole_at_start, load.max_send_lag_p99_ms);
  EXPECT_EQ(m.measured_sent, whole.measured_sent);
  EXPECT_EQ(m.scheduled_arrivals, whole.scheduled_arrivals);
  EXPECT_EQ(m.schedule_fingerprint, whole.schedule_fingerprint);
  EXPECT_EQ(m.scheduled_rate_rps, whole.scheduled_rate_rps);
  EXPECT_EQ(m.measured_span_s, whole.measured_span_s);
  EXPECT_EQ(m.target_rate_rps, whole.target_rate_rps);
  // In virtual time every arrival is sent on its deadline, so the loops' sends are the whole's.
  EXPECT_EQ(m.first_measured_send_ns, whole.first_measured_send_ns);
  EXPECT_EQ(m.last_measured_send_ns, whole.last_measured_send_ns);
  EXPECT_EQ(m.achieved_rate_rps, whole.achieved_rate_rps);
  std::vector<int64_t> a = m.send_lag_ns, b = whole.send_lag_ns;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  EXPECT_EQ(m.start_ns, start);
  EXPECT_EQ(m.send_lag_exceeded, whole.send_lag_exceeded);
}

TEST(LoopSplit, MergedInfoAddsCountsAndKeepsTheFirstStopReason) {
  LevelRunInfo whole;
  whole.level = 2;
  whole.open_loop = true;
  LevelRunInfo a, b;
  a.start_ns = 100;
  a.end_ns = 900;
  a.measured_sent = 3;
  a.first_measured_send_ns = 200;
  a.last_measured_send_ns = 400;
  a.send_lag_ns = {1'000'000, 3'000'000, 2'000'000};
  a.sessions_started = 2;
  b.start_ns = 100;
  b.end_ns = 1200;
  b.measured_sent = 2;
  b.first_measured_send_ns = 150;
  b.last_measured_send_ns = 1'000'000'150;
  b.send_lag_ns = {500'000, 2'500'000};
  b.stopped_early = "saturated";
  b.sessions_cut = 1;
  const LevelRunInfo m = merge_level_shares({a, b}, whole, 2.0);
  EXPECT_EQ(m.level, 2);
  EXPECT_EQ(m.end_ns, 1200);
  EXPECT_EQ(m.measured_sent, 5);
  EXPECT_EQ(m.first_measured_send_ns, 150);
  EXPECT_EQ(m.last_measured_send_ns, 1'000'000'150);
  EXPECT_DOUBLE_EQ(m.achieved_rate_rps, 4.0);  // 4 gaps over 1 s
  EXPECT_EQ(m.send_lag_ns.size(), 5u);
  EXPECT_TRUE(m.send_lag_exceeded);  // P99 of {0.5,1,2,2.5,3} ms > 2 ms
  EXPECT_EQ(m.stopped_early.value_or(""), "saturated");
  EXPECT_EQ(m.sessions_started, 2);
  EXPECT_EQ(m.sessions_cut, 1);
}

TEST(LoopSplit, SamplesMergeByTheSecondWithTheWorstLagAndTheSummedQueue) {
  std::vector<std::vector<RunnerSample>> loops = {
      {{1000, 0.5, 2}, {2000, 3.0, 0}},
      {{1001, 1.5, 1}, {2001, 0.2, 4}, {3001, 0.1, 0}},
  };
  const std::vector<RunnerSample> m = merge_loop_samples(loops);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].t_ns, 1001);
  EXPECT_DOUBLE_EQ(m[0].loop_lag_ms, 1.5);
  EXPECT_EQ(m[0].client_queue, 3);
  EXPECT_DOUBLE_EQ(m[1].loop_lag_ms, 3.0);
  EXPECT_EQ(m[1].client_queue, 4);
  EXPECT_EQ(m[2].t_ns, 3001);
}

}  // namespace
}  // namespace tokperf
