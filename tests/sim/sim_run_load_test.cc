// sim run's virtual-time load: bench's levels, phases, schedules and caps against the engine.
#include "cli/sim_run_load.h"

#include <gtest/gtest.h>

#include "load/arrivals.h"
#include "sim/offline_runner.h"

namespace tokperf {
namespace {

const sim::CostModel& cost() {
  static const sim::CostModel c(
      sim::Deployment{sim::find_model("llama-3.1-8b").value(), sim::find_gpu("a100-80g").value(),
                      sim::DType::kBf16, sim::DType::kBf16, 1},
      sim::CostKnobs{});
  return c;
}

SimLoadOptions fixed_lengths() {
  SimLoadOptions o;
  o.input_tokens = 200;
  o.output_tokens = 8;
  o.ignore_eos = true;
  return o;
}

// Most requests open at once among `level`'s records (ends are exclusive: a slot freed at t is
// reused at t).
int peak_in_flight(const std::vector<RequestTimeline>& records, int level) {
  int peak = 0;
  for (const auto& r : records) {
    if (r.level != level) continue;
    int open = 0;
    for (const auto& o : records) {
      open += o.level == level && o.send_ns <= r.send_ns && o.end_ns > r.send_ns;
    }
    peak = std::max(peak, open);
  }
  return peak;
}

TEST(SimRunLoad, SweepRunsEachLevelWithItsConcurrencyAndWarmupBarrier) {
  BenchConfig c;
  c.load.plan.levels = {LevelSpec{LoadMode::kConcurrency, 1, 1, 0},
                        LevelSpec{LoadMode::kConcurrency, 4, 4, 0}};
  c.load.plan.measure = PhaseLimit{0, 12};
  std::vector<std::string> notes;
  auto run = simulate_load(cost(), c, fixed_lengths(), notes);
  ASSERT_TRUE(run.ok()) << run.error();
  ASSERT_EQ(run->levels.size(), 2u);
  int measured[2] = {0, 0}, warmup[2] = {0, 0};
  for (const auto& r : run->records) {
    ASSERT_TRUE(r.ok()) << r.error.message;
    (r.phase == Phase::kMeasure ? measured : warmup)[r.level]++;
  }
  // Default warm-up: one request per slot.
  EXPECT_EQ(warmup[0], 1);
  EXPECT_EQ(warmup[1], 4);
  EXPECT_EQ(measured[0], 12);
  EXPECT_EQ(measured[1], 12);
  EXPECT_EQ(run->levels[1].measured_sent, 12);
  EXPECT_EQ(peak_in_flight(run->records, 0), 1);
  EXPECT_EQ(peak_in_flight(run->records, 1), 4);
  // Level 1 starts where level 0 ended, and measuring starts after every warm-up request ended.
  EXPECT_EQ(run->levels[1].start_ns, run->levels[0].end_ns);
  int64_t last_warmup_end = 0, first_measured_send = INT64_MAX;
  for (const auto& r : run->records) {
    if (r.level != 1) continue;
    if (r.phase == Phase::kWarmup) last_warmup_end = std::max(last_warmup_end, r.end_ns);
    if (r.phase == Phase::kMeasure) first_measured_send = std::min(first_measured_send, r.send_ns);
  }
  EXPECT_EQ(first_measured_send, last_warmup_end);
  EXPECT_EQ(run->end_ns, run->levels[1].end_ns);
}

TEST(SimRunLoad, OpenLoopFollowsTheSeededScheduleOfArrivalsH) {
  BenchConfig c;
  c.load.plan.levels = {LevelSpec{LoadMode::kRate, 5, 5, 0}};
  c.load.plan.measure = PhaseLimit{0, 20};
  c.load.plan.seed = 7;
  std::vector<std::string> notes;
  auto run = simulate_load(cost(), c, fixed_lengths(), notes);
  ASSERT_TRUE(run.ok()) << run.error();
  // bench's default open-loop warm-up is one second of arrivals: 5 at 5 req/s, so 25 in all.
  const std::vector<int64_t> offsets =
      arrival_offsets_count(ArrivalSpec{ArrivalKind::kPoisson, 5, 1, 7}, 25);
  const LevelRunInfo& info = run->levels[0];
  EXPECT_TRUE(info.open_loop);
  EXPECT_EQ(info.schedule_fingerprint, fingerprint_hex(schedule_fingerprint(offsets)));
  EXPECT_EQ(info.scheduled_arrivals, 25);
  EXPECT_EQ(info.measured_sent, 20);
  ASSERT_EQ(run->records.size(), 25u);
  for (size_t i = 0; i < offsets.size(); ++i) {
    EXPECT_EQ(run->records[i].intended_ns, offsets[i]) << i;
    EXPECT_EQ(run->records[i].send_ns, offsets[i]) << i;  // uncapped: sent on time
    EXPECT_EQ(run->records[i].phase, i < 5 ? Phase::kWarmup : Phase::kMeasure) << i;
  }
  // Send lag is 0 by construction; achieved = scheduled rate = 19 gaps over the measured span.
  ASSERT_EQ(info.send_lag_ns.size(), 20u);
  for (int64_t lag : info.send_lag_ns) EXPECT_EQ(lag, 0);
  EXPECT_DOUBLE_EQ(info.scheduled_rate_rps, 19 / ((offsets[24] - offsets[5]) / 1e9));
  EXPECT_DOUBLE_EQ(info.achieved_rate_rps, info.scheduled_rate_rps);
  EXPECT_DOUBLE_EQ(info.target_rate_rps, 5);
}

TEST(SimRunLoad, MaxConcurrencyQueuesArrivalsUntilASlotFrees) {
  sim::OfflineLevel l;
  l.prompt_tokens = 100;
  l.output_tokens = 4;
  l.plan.open_loop = true;
  l.plan.spec = LevelSpec{LoadMode::kRate, 1, 1, 0};
  for (int i = 0; i < 3; ++i) l.plan.arrivals.push_back(PlannedArrival{0, Phase::kMeasure, i});
  l.plan.max_concurrency = 1;
  auto run = sim::run_offline_level(cost(), sim::EngineConfig{}, l);
  ASSERT_TRUE(run.ok()) << run.error();
  const auto& t = run->timelines;
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].send_ns, 0);
  EXPECT_EQ(t[1].send_ns, t[0].end_ns);  // waited in the client queue...
  EXPECT_EQ(t[2].send_ns, t[1].end_ns);
  EXPECT_EQ(t[2].intended_ns, 0);  // ...and kept its intended start
  EXPECT_GT(t[2].send_ns, 0);
}

TEST(SimRunLoad, EngineRefusalStopsTheLevelInsteadOfLooping) {
  sim::OfflineLevel l;
  l.prompt_tokens = 1000;  // within the model's context, more than the whole KV cache below
  l.output_tokens = 4;
  l.plan.spec = LevelSpec{LoadMode::kConcurrency, 2, 2, 0};
  l.plan.measure = PhaseLimit{1'000'000'000, 0};
  sim::EngineConfig engine;
  engine.num_blocks = 4;  // 64 tokens
  auto run = sim::run_offline_level(cost(), engine, l);
  ASSERT_TRUE(run.ok()) << run.error();
  ASSERT_TRUE(run->info.stopped_early.has_value());
  EXPECT_EQ(run->timelines.size(), 1u);
  EXPECT_FALSE(run->timelines[0].ok());
}

TEST(SimRunLoad, TimeoutFailsARequestAtItsVirtualDeadlineAsBenchRecordsOne) {
  BenchConfig c;
  c.load.plan.levels = {LevelSpec{LoadMode::kConcurrency, 1, 1, 0}};
  c.load.plan.measure = PhaseLimit{0, 3};
  c.load.default_warmup = false;
  c.load.timeout_ns = 50'000'000;
  SimLoadOptions o = fixed_lengths();
  o.output_tokens = 2000;  // seconds of decoding: far past the timeout
  std::vector<std::string> notes;
  auto run = simulate_load(cost(), c, o, notes);
  ASSERT_TRUE(run.ok()) << run.error();
  ASSERT_EQ(run->records.size(), 3u);
  for (const auto& r : run->records) {
    EXPECT_EQ(r.error.kind, ErrorKind::kTimeout);
    EXPECT_EQ(r.end_ns - r.send_ns, 50'000'000);
    EXPECT_FALSE(r.token_events.empty());  // what streamed before the deadline is kept
    for (const auto& e : r.token_events) EXPECT_LE(e.t_ns, r.end_ns);
  }
  // The closed loop's slot frees at the deadline.
  EXPECT_EQ(run->records[1].send_ns, run->records[0].end_ns);
  // Without the deadline the same request succeeds, taking longer than the timeout.
  c.load.timeout_ns = 600'000'000'000;
  auto slow = simulate_load(cost(), c, o, notes);
  ASSERT_TRUE(slow.ok());
  EXPECT_TRUE(slow->records[0].ok());
  EXPECT_GT(slow->records[0].end_ns - slow->records[0].send_ns, 50'000'000);
}

TEST(SimRunLoad, EarlyStopEndsAnOverloadedLevelAndTheSweepInVirtualTime) {
  BenchConfig c;
  c.load.plan.levels = {LevelSpec{LoadMode::kRate, 200, 200, 0},
                        LevelSpec{LoadMode::kRate, 400, 400, 0}};
  c.load.plan.measure = PhaseLimit{60'000'000'000, 0};
  SimLoadOptions o = fixed_lengths();
  o.output_tokens = 256;
  std::vector<std::string> notes;
  auto run = simulate_load(cost(), c, o, notes);
  ASSERT_TRUE(run.ok()) << run.error();
  ASSERT_EQ(run->levels.size(), 1u);  // the sweep ended with the saturated level
  const LevelRunInfo& info = run->levels[0];
  ASSERT_TRUE(info.stopped_early.has_value());
  EXPECT_EQ(info.stopped_early->rfind("stop: backlog", 0), 0u) << *info.stopped_early;
  // Nothing was sent after the verdict, taken at a whole virtual second well before the plan's end.
  int64_t last_send = 0;
  for (const auto& r : run->records) last_send = std::max(last_send, r.send_ns);
  EXPECT_LT(last_send, 30'000'000'000);
  // With early stop off, a plan that outlasts the verdict (25 s) is sent whole.
  c.load.stop_on_saturation = false;
  c.load.plan.levels.resize(1);
  c.load.plan.measure = PhaseLimit{25'000'000'000, 0};
  auto full = simulate_load(cost(), c, o, notes);
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE(full->levels[0].stopped_early.has_value());
  EXPECT_GT(full->levels[0].measured_sent, 200 * 24);
}

}  // namespace
}  // namespace tokperf
