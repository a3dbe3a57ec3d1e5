// The real-time driver must reproduce the virtual-time engine's schedule: same steps, same event
// spacing, events delivered no earlier than their deadlines.
#include "sim/realtime_driver.h"

#include <gtest/gtest.h>

#include "core/clock.h"
#include "sim/deployment.h"

namespace tokperf::sim {
namespace {

// Step-for-step equivalence of the two drivers; the serving front end (whose ready times follow
// each driver's own clock) is covered by Engine.FrontEnd* and left out here.
CostModel default_cost() {
  CostKnobs k;
  k.request_overhead_s = 0;
  k.request_overhead_per_token_s = 0;
  return CostModel(*resolve_deployment(DeploymentFlags{}), k);
}

SimRequest request(uint64_t id, int64_t prompt, int64_t out) {
  SimRequest r;
  r.id = id;
  r.prompt_tokens = prompt;
  r.max_tokens = out;
  return r;
}

void expect_same_schedule_as_virtual_time(const CostModel& cost) {
  // Virtual time: both requests at 0, steps back to back.
  Engine engine(cost, EngineConfig{});
  ASSERT_TRUE(engine.submit(request(1, 300, 5)).ok());
  ASSERT_TRUE(engine.submit(request(2, 100, 3)).ok());
  std::vector<SeqEvent> expected;
  int64_t now = 0;
  while (engine.has_work()) {
    const StepResult& r = engine.step(now);
    now += r.duration_ns;
    expected.insert(expected.end(), r.events.begin(), r.events.end());
  }

  EventLoop loop;
  RealtimeDriver driver(loop, cost, EngineConfig{});
  std::vector<SeqEvent> got;
  std::vector<int64_t> delivered_ns;
  int finished = 0;
  auto sink = [&](const SeqEvent& ev) {
    got.push_back(ev);
    delivered_ns.push_back(mono_ns());
    if (ev.kind == SeqEventKind::kFinished) ++finished;
  };
  ASSERT_TRUE(driver.submit(request(1, 300, 5), sink).ok());
  ASSERT_TRUE(driver.submit(request(2, 100, 3), sink).ok());
  const int64_t give_up = mono_ns() + 5'000'000'000;
  while (finished < 2 && mono_ns() < give_up) loop.run_once(10'000'000);
  ASSERT_EQ(finished, 2);

  ASSERT_EQ(got.size(), expected.size());
  const int64_t origin = got.front().t_ns - expected.front().t_ns;  // first step's real start
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].kind, expected[i].kind) << i;
    EXPECT_EQ(got[i].request_id, expected[i].request_id) << i;
    EXPECT_EQ(got[i].t_ns - origin, expected[i].t_ns) << i;  // deadlines exactly as in virtual time
    EXPECT_GE(delivered_ns[i], got[i].t_ns) << i;            // never before the step ends
  }
  EXPECT_EQ(driver.lag().steps, engine.stats().steps_total);
  EXPECT_EQ(driver.live_requests(), 0u);
}

TEST(RealtimeDriver, MatchesTheVirtualTimeEngineStepForStep) {
  expect_same_schedule_as_virtual_time(default_cost());
}

// A front end that passes outputs on one at a time (CostKnobs::output_overhead_s) stamps them
// after their step's end; the driver holds each until its own time, in order.
TEST(RealtimeDriver, DeliversOutputsStampedAfterTheStepAtTheirOwnTime) {
  CostKnobs k;
  k.request_overhead_s = 0;
  k.request_overhead_per_token_s = 0;
  k.output_overhead_s = 5e-3;
  expect_same_schedule_as_virtual_time(CostModel(*resolve_deployment(DeploymentFlags{}), k));
}

TEST(RealtimeDriver, AbortFreesKvAndSilencesTheRequest) {
  const CostModel cost = default_cost();
  EventLoop loop;
  RealtimeDriver driver(loop, cost, EngineConfig{});
  int events_1 = 0, finished_2 = 0;
  ASSERT_TRUE(driver
                  .submit(request(1, 64, 1000),
                          [&](const SeqEvent&) {
                            if (++events_1 == 2) driver.abort(1);  // from inside its own sink
                          })
                  .ok());
  ASSERT_TRUE(
      driver
          .submit(request(2, 64, 10),
                  [&](const SeqEvent& ev) { finished_2 += ev.kind == SeqEventKind::kFinished; })
          .ok());
  const int64_t give_up = mono_ns() + 5'000'000'000;
  while (finished_2 < 1 && mono_ns() < give_up) loop.run_once(10'000'000);
  ASSERT_EQ(finished_2, 1);
  EXPECT_EQ(events_1, 2);
  const EngineStats st = driver.engine_stats();
  EXPECT_EQ(st.aborted_total, 1);
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_EQ(st.running + st.waiting, 0);
  EXPECT_FALSE(driver.step_in_flight());
}

}  // namespace
}  // namespace tokperf::sim
