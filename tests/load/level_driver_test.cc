// The level driver's load rules in virtual time: a tiny harness plays the runner (it starts what
// the driver orders, finishes each request after a chosen service time, wakes the driver when it
// asks) so every time below is exact and nothing sleeps.
#include "load/level_driver.h"

#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <set>

namespace tokperf {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

struct Request {
  SendOrder order;
  int64_t send_ns = 0;
  int64_t end_ns = 0;
  ErrorKind kind = ErrorKind::kNone;
  bool finished = false;
};

// Runs one level: service(i) is the i-th request's time in service, outcome(i) how it ends.
class Harness {
 public:
  explicit Harness(LevelPlan plan, int64_t start_ns = 0, int64_t lead_ns = 0)
      : driver(std::move(plan), start_ns, lead_ns), now(start_ns) {}

  std::function<int64_t(size_t)> service = [](size_t) { return 10 * kMs; };
  std::function<ErrorKind(size_t)> outcome = [](size_t) { return ErrorKind::kNone; };
  // Called before each wake-up or finish at time t; may call driver.stop().
  std::function<void(int64_t)> before = [](int64_t) {};

  void run(int64_t limit_ns = 3600 * kS) {
    pump();
    while (!driver.level_done()) {
      int64_t t = driver.wake_at();
      for (const Request& r : requests) {
        if (!r.finished && (t < 0 || r.end_ns < t)) t = r.end_ns;
      }
      ASSERT_GE(t, now) << "time went backwards";
      ASSERT_LT(t, limit_ns) << "the level did not end";
      now = t;
      before(now);
      for (size_t i = 0; i < requests.size(); ++i) {
        Request& r = requests[i];
        if (r.finished || r.end_ns != now) continue;
        r.finished = true;
        r.kind = outcome(i);
        driver.on_finished(now, r.order.phase, r.kind, r.order.session);
      }
      pump();
    }
  }

  void pump() {
    while (std::optional<SendOrder> o = driver.next_send(now)) {
      Request r;
      r.order = *o;
      r.send_ns = now;
      r.end_ns = now + service(requests.size());
      requests.push_back(r);
      peak = std::max(peak, in_flight());
    }
    if (driver.take_cancel_cooldown()) {
      for (Request& r : requests) {
        if (r.finished || r.order.phase != Phase::kCooldown) continue;
        r.finished = true;
        r.end_ns = now;
        r.kind = ErrorKind::kCancelled;
        driver.on_finished(now, r.order.phase, r.kind, r.order.session);
      }
    }
  }

  int64_t in_flight() const {
    int64_t n = 0;
    for (const Request& r : requests) n += !r.finished;
    return n;
  }

  std::string phases() const {
    std::string s;
    for (const Request& r : requests) s += "WMC"[static_cast<int>(r.order.phase)];
    return s;
  }

  LevelDriver driver;
  int64_t now;
  std::vector<Request> requests;
  int64_t peak = 0;
};

LevelPlan closed(double c, PhaseLimit warmup, PhaseLimit measure, PhaseLimit cooldown = {}) {
  LevelPlan p;
  p.spec = LevelSpec{LoadMode::kConcurrency, c, c, 0};
  p.warmup = warmup;
  p.measure = measure;
  p.cooldown = cooldown;
  return p;
}

LevelPlan open_loop(std::vector<std::pair<int64_t, Phase>> arrivals, int64_t cap = 0) {
  LevelPlan p;
  p.open_loop = true;
  p.spec = LevelSpec{LoadMode::kRate, 10, 10, 0};
  p.max_concurrency = cap;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    p.arrivals.push_back(
        PlannedArrival{arrivals[i].first, arrivals[i].second, static_cast<int64_t>(i)});
  }
  p.scheduled_arrivals = static_cast<int64_t>(arrivals.size());
  return p;
}

TEST(LevelDriver, ClosedLoopCountWarmupIsABarrierThenMeasureRuns) {
  Harness h(closed(2, {0, 2}, {0, 4}));
  h.run();
  EXPECT_EQ(h.phases(), "WWMMMM");
  // Both warm-up requests end at 10 ms; measuring starts then with both slots free.
  EXPECT_EQ(h.requests[2].send_ns, 10 * kMs);
  EXPECT_EQ(h.requests[3].send_ns, 10 * kMs);
  EXPECT_EQ(h.requests[5].send_ns, 20 * kMs);
  for (const Request& r : h.requests) EXPECT_EQ(r.order.intended_ns, r.send_ns);  // slot came free
  EXPECT_EQ(h.peak, 2);
  EXPECT_EQ(h.driver.info().measured_sent, 4);
  EXPECT_EQ(h.driver.info().first_measured_send_ns, 10 * kMs);
  EXPECT_EQ(h.driver.info().last_measured_send_ns, 20 * kMs);
  EXPECT_EQ(h.driver.info().end_ns, 30 * kMs);
  EXPECT_EQ(h.driver.wake_at(), -1);
}

TEST(LevelDriver, TimeBasedWarmupIsNoBarrier) {
  Harness h(closed(2, {1 * kS, 0}, {0, 2}));
  h.service = [](size_t i) { return i == 0 ? 1500 * kMs : 300 * kMs; };
  h.run();
  // Slot 2 keeps warming up until 1 s has passed (sends at 0, 300, 600, 900 ms); the next free
  // slot (1200 ms) measures while the first warm-up request still runs.
  EXPECT_EQ(h.phases(), "WWWWWMM");
  EXPECT_EQ(h.requests[5].send_ns, 1200 * kMs);
  EXPECT_EQ(h.requests[6].send_ns, 1500 * kMs);
  EXPECT_EQ(h.driver.info().end_ns, 1800 * kMs);
}

TEST(LevelDriver, TimeBasedMeasureEndsAtTheFirstFreeSlotAfterItsDuration) {
  Harness h(closed(1, {}, {25 * kMs, 0}));
  h.run();
  // Sends at 0, 10, 20 ms are measured; at 30 ms the phase is over and nothing follows.
  EXPECT_EQ(h.phases(), "MMM");
  EXPECT_EQ(h.driver.info().end_ns, 30 * kMs);
}

TEST(LevelDriver, CooldownKeepsTheLoadUpUntilMeasuredRequestsFinishThenIsCancelled) {
  Harness h(closed(2, {}, {0, 3}, {0, 10}));
  h.service = [](size_t i) { return i == 1 ? 95 * kMs : 10 * kMs; };
  h.run();
  // M0 (0-10), M1 (0-95), M2 (10-20); cool-down from 20 ms every 10 ms while M1 runs.
  EXPECT_EQ(h.phases(), "MMMCCCCCCCC");
  EXPECT_EQ(h.requests.back().send_ns, 90 * kMs);
  // When M1 ends, the cool-down request in flight is cancelled and the level ends.
  EXPECT_EQ(h.requests.back().kind, ErrorKind::kCancelled);
  EXPECT_EQ(h.requests.back().end_ns, 95 * kMs);
  EXPECT_EQ(h.driver.info().end_ns, 95 * kMs);
  EXPECT_EQ(h.driver.info().measured_sent, 3);
}

TEST(LevelDriver, OpenLoopSendsOnScheduleAndRecordsSendLag) {
  LevelDriver d(open_loop({{0, Phase::kMeasure}, {100 * kMs, Phase::kMeasure}}), 5 * kS, 20 * kMs);
  EXPECT_FALSE(d.next_send(5 * kS).has_value());
  EXPECT_EQ(d.wake_at(), 5 * kS + 20 * kMs);  // the level's lead before its first arrival
  auto a = d.next_send(5 * kS + 20 * kMs);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->intended_ns, 5 * kS + 20 * kMs);
  EXPECT_EQ(a->index, 0);
  EXPECT_FALSE(d.next_send(5 * kS + 20 * kMs).has_value());
  EXPECT_EQ(d.wake_at(), 5 * kS + 120 * kMs);
  // Asked 3 ms late: sent now, intended start kept, 3 ms of send lag.
  auto b = d.next_send(5 * kS + 123 * kMs);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->intended_ns, 5 * kS + 120 * kMs);
  EXPECT_EQ(d.info().send_lag_ns, (std::vector<int64_t>{0, 3 * kMs}));
  EXPECT_FALSE(d.level_done());
  d.on_finished(5 * kS + 130 * kMs, Phase::kMeasure, ErrorKind::kNone);
  d.on_finished(5 * kS + 140 * kMs, Phase::kMeasure, ErrorKind::kNone);
  EXPECT_TRUE(d.level_done());
  EXPECT_EQ(d.info().end_ns, 5 * kS + 140 * kMs);
  EXPECT_DOUBLE_EQ(d.info().scheduled_rate_rps, 10);  // 1 gap of 100 ms
  EXPECT_DOUBLE_EQ(d.info().achieved_rate_rps, 1 / 0.103);
  EXPECT_TRUE(d.info().send_lag_exceeded);  // P99 above the 1 ms default bound
}

TEST(LevelDriver, CapQueuesArrivalsInOrderAndKeepsTheirIntendedStart) {
  Harness h(open_loop({{0, Phase::kMeasure}, {0, Phase::kMeasure}, {5 * kMs, Phase::kMeasure}}, 1));
  h.pump();
  EXPECT_EQ(h.requests.size(), 1u);
  EXPECT_EQ(h.driver.queued(), 1);
  h.run();
  ASSERT_EQ(h.requests.size(), 3u);
  EXPECT_EQ(h.requests[1].send_ns, 10 * kMs);
  EXPECT_EQ(h.requests[1].order.intended_ns, 0);
  EXPECT_EQ(h.requests[2].send_ns, 20 * kMs);
  EXPECT_EQ(h.requests[2].order.intended_ns, 5 * kMs);
  EXPECT_EQ(h.peak, 1);
  // Queue time is not send lag: each arrival was dispatched (sent or queued) on time.
  EXPECT_EQ(h.driver.info().send_lag_ns, (std::vector<int64_t>{0, 0, 0}));
}

TEST(LevelDriver, OpenLoopStopsAndCancelsCooldownOnceNoMeasuredRequestIsLeft) {
  Harness h(open_loop({{0, Phase::kWarmup},
                       {10 * kMs, Phase::kMeasure},
                       {20 * kMs, Phase::kCooldown},
                       {30 * kMs, Phase::kCooldown},
                       {40 * kMs, Phase::kCooldown}}));
  h.service = [](size_t i) { return i == 0 ? 5 * kMs : i == 1 ? 25 * kMs : 100 * kMs; };
  h.run();
  EXPECT_EQ(h.phases(), "WMCC");  // the arrival at 40 ms is never sent
  EXPECT_EQ(h.requests[2].kind, ErrorKind::kCancelled);
  EXPECT_EQ(h.requests[3].kind, ErrorKind::kCancelled);
  EXPECT_EQ(h.requests[3].end_ns, 35 * kMs);
  EXPECT_EQ(h.driver.info().end_ns, 35 * kMs);
}

TEST(LevelDriver, LinearConcurrencyRampOpensASlotWhenItsLineCrossesAWholeNumber) {
  LevelPlan p = closed(1, {}, {3 * kS, 0});
  p.spec = LevelSpec{LoadMode::kConcurrency, 1, 3, 2 * kS};
  Harness h(p);
  h.service = [](size_t) { return 10 * kS; };
  h.run();
  ASSERT_EQ(h.requests.size(), 3u);
  EXPECT_EQ(h.requests[0].send_ns, 0);
  // Each later request starts at the first nanosecond at which the ramp allows one more slot.
  for (int k : {1, 2}) {
    const int64_t t = h.requests[static_cast<size_t>(k)].send_ns;
    EXPECT_EQ(p.spec.target_at(t), k + 1) << k;
    EXPECT_EQ(p.spec.target_at(t - 1), k) << k;
  }
  EXPECT_NEAR(static_cast<double>(h.requests[1].send_ns), 1e9, 2);
  EXPECT_EQ(h.peak, 3);
}

TEST(LevelDriver, BacklogGrowthStopsTheLevelAndTheSweep) {
  std::vector<std::pair<int64_t, Phase>> arrivals;
  for (int64_t t = 0; t < 30 * kS; t += 10 * kMs) arrivals.push_back({t, Phase::kMeasure});
  LevelPlan p = open_loop(arrivals);
  p.stop_on_saturation = true;
  Harness h(p);
  h.service = [](size_t) { return 100 * kS; };  // nothing finishes: the backlog grows 100/s
  h.run();
  // Four windows of 5 samples: judged at 20 s, before the arrival due then is dispatched.
  EXPECT_EQ(h.requests.size(), 2000u);
  ASSERT_TRUE(h.driver.info().stopped_early.has_value());
  EXPECT_EQ(h.driver.info().stopped_early->rfind("stop: backlog", 0), 0u)
      << *h.driver.info().stopped_early;
  EXPECT_TRUE(h.driver.ends_sweep());
  EXPECT_TRUE(h.driver.level_done());  // in-flight requests were let finish
}

TEST(LevelDriver, ErrorRateStopsTheLevel) {
  LevelPlan p = closed(4, {}, {60 * kS, 0});
  p.stop_on_saturation = true;
  Harness h(p);
  h.service = [](size_t) { return 100 * kMs; };
  h.outcome = [](size_t) { return ErrorKind::kHttp; };
  h.run();
  // 40 failures a second; the first full window (5 s) is judged at 5 s.
  ASSERT_TRUE(h.driver.info().stopped_early.has_value());
  EXPECT_EQ(h.driver.info().stopped_early->rfind("stop: error rate 100%", 0), 0u);
  EXPECT_EQ(h.requests.back().send_ns, 4900 * kMs);
  EXPECT_TRUE(h.driver.ends_sweep());
}

TEST(LevelDriver, NoEarlyStopWithoutTheRule) {
  LevelPlan p = closed(4, {}, {0, 100});
  Harness h(p);
  h.outcome = [](size_t) { return ErrorKind::kHttp; };
  h.run();
  EXPECT_FALSE(h.driver.info().stopped_early.has_value());
  EXPECT_EQ(h.driver.info().measured_sent, 100);
}

TEST(LevelDriver, CallerStopEndsSendingButLetsInFlightFinish) {
  Harness h(closed(2, {}, {0, 100}));
  h.before = [&](int64_t t) {
    if (t == 50 * kMs) h.driver.stop(t, "interrupted");
  };
  h.run();
  // Sends at 0,0,10,10,...,40,40: the stop at 50 ms comes before the slots refill.
  EXPECT_EQ(h.requests.size(), 10u);
  EXPECT_EQ(h.driver.info().stopped_early, "interrupted");
  EXPECT_FALSE(h.driver.ends_sweep());
  EXPECT_EQ(h.driver.info().end_ns, 50 * kMs);
}

TEST(LevelDriver, SharesSplitAWholeNumberExactly) {
  for (int64_t x : {0, 1, 7, 8, 100, 1001}) {
    for (int n : {1, 2, 3, 7}) {
      int64_t sum = 0;
      for (int k = 0; k < n; ++k) sum += share_of(x, LevelShare{k, n});
      EXPECT_EQ(sum, x) << x << " / " << n;
    }
  }
  EXPECT_EQ(share_of(8, {0, 3}), 2);
  EXPECT_EQ(share_of(8, {1, 3}), 3);
  EXPECT_EQ(share_of(8, {2, 3}), 3);
}

TEST(LevelDriver, SharesOfAClosedLoopLevelTogetherRunTheWholePlan) {
  LoadConfig load;
  load.plan.levels = {LevelSpec{LoadMode::kConcurrency, 8, 8, 0}};
  load.plan.measure = PhaseLimit{0, 100};
  int64_t measured = 0, peak = 0;
  for (int k = 0; k < 3; ++k) {
    LevelPlan p = make_level_plan(load, 0, LevelShare{k, 3});
    EXPECT_EQ(p.warmup.requests, share_of(8, {k, 3}));  // default warm-up: one per slot
    Harness h(p);
    h.run();
    EXPECT_EQ(h.peak, share_of(8, {k, 3}));
    measured += h.driver.info().measured_sent;
    peak += h.peak;
  }
  EXPECT_EQ(measured, 100);
  EXPECT_EQ(peak, 8);
}

TEST(LevelDriver, SharesOfAnOpenLoopLevelTakeEveryNthArrival) {
  LoadConfig load;
  load.plan.levels = {LevelSpec{LoadMode::kRate, 20, 20, 0}};
  load.plan.measure = PhaseLimit{0, 50};
  load.plan.max_concurrency = 5;
  const LevelPlan whole = make_level_plan(load, 0);
  std::vector<int64_t> seen;
  int64_t cap = 0;
  for (int k = 0; k < 2; ++k) {
    const LevelPlan p = make_level_plan(load, 0, LevelShare{k, 2});
    EXPECT_EQ(p.schedule_fingerprint, whole.schedule_fingerprint);
    for (const PlannedArrival& a : p.arrivals) {
      EXPECT_EQ(a.index % 2, k);
      EXPECT_EQ(a.offset_ns, whole.arrivals[static_cast<size_t>(a.index)].offset_ns);
      seen.push_back(a.index);
    }
    cap += p.max_concurrency;
  }
  EXPECT_EQ(seen.size(), whole.arrivals.size());
  EXPECT_EQ(cap, 5);
}

TEST(LevelDriver, PlanResolvesBenchDefaults) {
  LoadConfig load;
  load.plan.levels = {LevelSpec{LoadMode::kConcurrency, 4, 4, 0},
                      LevelSpec{LoadMode::kRate, 5, 5, 0}};
  load.plan.measure = PhaseLimit{0, 20};
  const LevelPlan c = make_level_plan(load, 0);
  EXPECT_FALSE(c.open_loop);
  EXPECT_EQ(c.warmup.requests, 4);  // one warm-up request per slot
  EXPECT_TRUE(c.stop_on_saturation);
  const LevelPlan o = make_level_plan(load, 1);
  EXPECT_TRUE(o.open_loop);
  EXPECT_EQ(o.arrivals.size(), 25u);  // one second of warm-up arrivals + 20 measured
  EXPECT_DOUBLE_EQ(o.target_rate_rps, 5);
  load.default_warmup = false;
  EXPECT_TRUE(make_level_plan(load, 0).warmup.none());
}

// ---- Multi-turn sessions ----

LevelPlan with_sessions(LevelPlan p, int64_t turns_min, int64_t turns_max, int64_t think_ns) {
  p.sessions.enabled = true;
  p.sessions.turns_min = turns_min;
  p.sessions.turns_max = turns_max;
  p.sessions.think.a_ns = think_ns;
  p.session_seed = 7;
  return p;
}

// (session, turn) of every request, in send order.
std::vector<std::pair<int64_t, int64_t>> turns_of(const Harness& h) {
  std::vector<std::pair<int64_t, int64_t>> v;
  for (const Request& r : h.requests) v.emplace_back(r.order.session, r.order.turn);
  return v;
}

TEST(LevelDriverSessions, ClosedLoopUsersRunTheirTurnsAfterThinkingThenStartNewSessions) {
  Harness h(with_sessions(closed(2, {}, {0, 12}), 3, 3, 100 * kMs));
  h.run();
  ASSERT_EQ(h.requests.size(), 12u);
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(turns_of(h), (std::vector<P>{{0, 1},
                                         {1, 1},
                                         {0, 2},
                                         {1, 2},
                                         {0, 3},
                                         {1, 3},
                                         {2, 1},
                                         {3, 1},
                                         {2, 2},
                                         {3, 2},
                                         {2, 3},
                                         {3, 3}}));
  // Turn k + 1 goes out the think time after turn k ended (10 ms service), intended then too.
  EXPECT_EQ(h.requests[2].send_ns, 110 * kMs);
  EXPECT_EQ(h.requests[2].order.intended_ns, 110 * kMs);
  EXPECT_EQ(h.requests[4].send_ns, 220 * kMs);
  // A finished session frees its user's slot at once: the next session starts then.
  EXPECT_EQ(h.requests[6].send_ns, 230 * kMs);
  EXPECT_EQ(h.peak, 2);
  const LevelRunInfo& info = h.driver.info();
  EXPECT_TRUE(info.sessions);
  EXPECT_EQ(info.sessions_started, 4);
  EXPECT_EQ(info.sessions_completed, 4);
  EXPECT_EQ(info.sessions_failed, 0);
  EXPECT_EQ(info.end_ns, 460 * kMs);
}

TEST(LevelDriverSessions, ThinkingUsersHoldTheirSlots) {
  // One user: while it thinks, no other session may start although nothing is in flight.
  Harness h(with_sessions(closed(1, {}, {0, 4}), 2, 2, 1 * kS));
  h.run();
  ASSERT_EQ(h.requests.size(), 4u);
  EXPECT_EQ(h.requests[1].order.session, 0);
  EXPECT_EQ(h.requests[1].send_ns, 1010 * kMs);
  EXPECT_EQ(h.requests[2].order.session, 1);
  EXPECT_EQ(h.requests[2].send_ns, 1020 * kMs);
}

TEST(LevelDriverSessions, AFailedTurnEndsItsSessionOnly) {
  Harness h(with_sessions(closed(1, {}, {0, 7}), 3, 3, 0));
  h.outcome = [](size_t i) { return i == 1 ? ErrorKind::kHttp : ErrorKind::kNone; };
  h.run();
  using P = std::pair<int64_t, int64_t>;
  // Session 0 fails at turn 2 and sends no turn 3; the run goes on with session 1.
  EXPECT_EQ(turns_of(h), (std::vector<P>{{0, 1}, {0, 2}, {1, 1}, {1, 2}, {1, 3}, {2, 1}, {2, 2}}));
  EXPECT_EQ(h.requests[2].send_ns, h.requests[1].end_ns);
  const LevelRunInfo& info = h.driver.info();
  EXPECT_EQ(info.sessions_started, 3);
  EXPECT_EQ(info.sessions_failed, 1);
  EXPECT_EQ(info.sessions_completed, 1);
  EXPECT_EQ(info.sessions_cut, 1);  // session 2 had a turn left when measuring ended
  EXPECT_FALSE(info.stopped_early.has_value());
}

TEST(LevelDriverSessions, OpenLoopArrivalsStartSessionsWhoseTurnsFollowTheReplies) {
  Harness h(
      with_sessions(open_loop({{0, Phase::kMeasure}, {1 * kS, Phase::kMeasure}}), 2, 2, 50 * kMs));
  h.run();
  ASSERT_EQ(h.requests.size(), 4u);
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(turns_of(h), (std::vector<P>{{0, 1}, {0, 2}, {1, 1}, {1, 2}}));
  EXPECT_EQ(h.requests[1].send_ns, 60 * kMs);  // 10 ms reply + 50 ms think
  EXPECT_EQ(h.requests[1].order.intended_ns, 60 * kMs);
  EXPECT_EQ(h.requests[1].order.index, 0);  // the arrival that started the session
  EXPECT_EQ(h.requests[1].order.phase, Phase::kMeasure);
  EXPECT_EQ(h.requests[3].send_ns, 1060 * kMs);
  // Only arrivals have send lag; the level lasts until the last session's last turn.
  EXPECT_EQ(h.driver.info().send_lag_ns.size(), 2u);
  EXPECT_EQ(h.driver.info().end_ns, 1070 * kMs);
  EXPECT_EQ(h.driver.info().sessions_completed, 2);
}

TEST(LevelDriverSessions, OpenLoopLaterTurnsWaitForTheCapLikeArrivals) {
  // Cap 1: session 0's second turn is due at 10 ms while session 1's first turn (arrived at
  // 5 ms, queued) is in flight from 10 ms; it waits in the client queue.
  Harness h(
      with_sessions(open_loop({{0, Phase::kMeasure}, {5 * kMs, Phase::kMeasure}}, 1), 2, 2, 0));
  h.run();
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(turns_of(h), (std::vector<P>{{0, 1}, {1, 1}, {0, 2}, {1, 2}}));
  EXPECT_EQ(h.requests[1].send_ns, 10 * kMs);
  EXPECT_EQ(h.requests[2].send_ns, 20 * kMs);
  EXPECT_EQ(h.requests[2].order.intended_ns, 10 * kMs);
  EXPECT_LE(h.peak, 1);
}

TEST(LevelDriverSessions, ATurnDueDuringTheWarmupBarrierWaitsForItWithoutSpinning) {
  // Count warm-up of 2 (a barrier): session 0's second turn is due at 10 ms, but warm-up's second
  // request runs until 30 ms; the turn goes out then, measured, and the driver never asks to be
  // woken in the past while it waits.
  Harness h(with_sessions(closed(2, {0, 2}, {0, 4}), 3, 3, 0));
  h.service = [](size_t i) { return i == 1 ? 30 * kMs : 10 * kMs; };
  h.run();
  ASSERT_GE(h.requests.size(), 3u);
  EXPECT_EQ(h.phases().substr(0, 3), "WWM");
  EXPECT_EQ(h.requests[2].order.session, 0);
  EXPECT_EQ(h.requests[2].order.turn, 2);
  EXPECT_EQ(h.requests[2].send_ns, 30 * kMs);
  EXPECT_EQ(h.requests[2].order.intended_ns, 10 * kMs);  // the wait shows as queue time
}

TEST(LevelDriverSessions, TurnCountsAndThinkTimesAreSeededDrawsInRange) {
  SessionSpec s = *parse_turns("2..5");
  s.think = *parse_think_time("1s..3s");
  std::set<int64_t> seen;
  for (int64_t id = 0; id < 200; ++id) {
    const int64_t n = session_turns(s, 42, id);
    EXPECT_GE(n, 2);
    EXPECT_LE(n, 5);
    EXPECT_EQ(n, session_turns(s, 42, id));  // the same draw every time
    seen.insert(n);
    const int64_t think = session_think_ns(s, 42, id, 1);
    EXPECT_GE(think, 1 * kS);
    EXPECT_LE(think, 3 * kS);
  }
  EXPECT_EQ(seen.size(), 4u);  // every count in the range occurs
  SessionSpec e = s;
  e.think = *parse_think_time("exp:2s");
  EXPECT_EQ(e.think.kind, ThinkTime::Kind::kExponential);
  EXPECT_GE(session_think_ns(e, 1, 3, 2), 0);
}

TEST(LevelDriverSessions, BadTurnsAndThinkTimesAreRefusedWithTheAcceptedForms) {
  for (const char* bad : {"0", "x", "5..2", "1..", "-1", "2000"}) {
    auto r = parse_turns(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("--turns"), std::string::npos);
    EXPECT_NE(r.error().find("A..B"), std::string::npos);
  }
  for (const char* bad : {"fast", "3s..1s", "exp:", "-2s"}) {
    auto r = parse_think_time(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("--think-time"), std::string::npos);
    EXPECT_NE(r.error().find("exp:MEAN"), std::string::npos);
  }
  EXPECT_EQ(parse_think_time("2").value().a_ns, 2 * kS);  // a bare number is seconds
  EXPECT_EQ(parse_turns("4").value().turns_max, 4);
}

}  // namespace
}  // namespace tokperf
