// End-to-end load shapes (issue 3) against the scripted server: sweeps, open-loop pacing, latency from
// the intended start, goodput/attainment, and the capacity search on a server with K service slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "client/request_builder.h"
#include "core/clock.h"
#include "load/arrivals.h"
#include "load/bench_runner.h"
#include "load/capacity_search.h"
#include "metrics/aggregate.h"
#include "metrics/slo.h"
#include "metrics/stats.h"
#include "support/scripted_server.h"

namespace tokperf {
namespace {

using testing_support::Fault;
using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;

BenchConfig base_config(const ScriptedServer& s, int output_tokens) {
  BenchConfig c;
  c.target.base_url = s.base_url();
  c.target.api = "chat";
  c.target.model = "tokperf-test-model";
  c.prompt.text = "hello";
  c.prompt.output_tokens = output_tokens;
  c.load.timeout_ns = 20'000'000'000;
  c.load.progress = false;
  c.run_id = "load";
  return c;
}

LevelSpec concurrency(double c) { return LevelSpec{LoadMode::kConcurrency, c, c, 0}; }
LevelSpec rate(double r) { return LevelSpec{LoadMode::kRate, r, r, 0}; }

struct LoadRun {
  std::vector<RequestTimeline> records;
  std::vector<LevelRunInfo> levels;
};

LoadRun run(const BenchConfig& c) {
  LoadRun out;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt),
                     [&](const RequestTimeline& t) { out.records.push_back(t); });
  EXPECT_TRUE(runner.run());
  out.levels = runner.levels();
  return out;
}

std::vector<RequestTimeline> measured(const LoadRun& r, int level) {
  std::vector<RequestTimeline> v;
  for (const auto& t : r.records) {
    if (t.level == level && t.phase == Phase::kMeasure) v.push_back(t);
  }
  return v;
}

TEST(LoadShapesE2E, ASweepGivesOneCorrectRowPerLevel) {
  // K = 2 service slots of 20 ms TTFT + 4 x 5 ms: at concurrency 4 half the requests wait a turn.
  ScriptedServerOptions o;
  o.script.ttft_ms = 20;
  o.script.itl_ms = 5;
  o.script.tokens = 5;
  o.queue_slots = 2;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = base_config(server, 5);
  c.load.plan.levels = {concurrency(1), concurrency(2), concurrency(4)};
  c.load.plan.measure = PhaseLimit{0, 16};
  LoadRun r = run(c);
  ASSERT_EQ(r.levels.size(), 3u);
  double service_ms = 20 + 4 * 5;
  // Concurrency 4 on 2 slots: in steady state every request queues behind one other for a whole
  // service time.
  std::vector<double> expected_ttft_p50 = {20, 20, 20 + service_ms};
  for (int level = 0; level < 3; ++level) {
    std::vector<RequestTimeline> m = measured(r, level);
    LevelParams p;
    p.level = level;
    p.concurrency = static_cast<int>(c.load.plan.levels[level].start);
    LevelSummary s = aggregate_level(r.records, p);
    EXPECT_EQ(s.sent, 16) << level;
    EXPECT_EQ(s.ok, 16) << level;
    // Never faster than the server's schedule; how much slower depends on the machine.
    EXPECT_GE(s.ttft.p50, 20.0) << level;
    EXPECT_GE(s.e2e.p50, service_ms) << level;
    (void)expected_ttft_p50;
  }
  // Queueing shows against the same run's uncontended level (expected +40 ms; bound 10 ms).
  {
    LevelParams p0, p2;
    p0.level = 0;
    p2.level = 2;
    EXPECT_GT(aggregate_level(r.records, p2).ttft.p50,
              aggregate_level(r.records, p0).ttft.p50 + 10.0);
  }
  // More concurrency, more throughput until the slots are full.
  LevelParams p0, p1;
  p0.level = 0;
  p1.level = 1;
  // Compared with the same run's c=1 level (ideal ratio 2): a loaded machine slows both.
  EXPECT_GT(aggregate_level(r.records, p1).output_token_throughput_tps,
            1.2 * aggregate_level(r.records, p0).output_token_throughput_tps);
}

TEST(LoadShapesE2E, OpenLoopKeepsTheRateAndTheSameSeedTheSameSchedule) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 2;
  o.script.itl_ms = 1;
  o.script.tokens = 2;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = base_config(server, 2);
  c.load.plan.levels = {rate(200)};
  c.load.plan.measure = PhaseLimit{0, 300};
  c.load.plan.arrivals = ArrivalKind::kPoisson;
  c.load.plan.seed = 7;
  c.load.default_warmup = false;
  c.load.plan.warmup = PhaseLimit{0, 20};
  LoadRun a = run(c);
  ASSERT_EQ(a.levels.size(), 1u);
  const LevelRunInfo& info = a.levels[0];
  EXPECT_TRUE(info.open_loop);
  EXPECT_EQ(info.measured_sent, 300);
  // Every measured send has its lag recorded, never negative. How small the lag is (pacing
  // precision) depends on the machine: bench/open_loop_pacing_bench measures it on a quiet one
  // (docs/BENCHMARKS.md).
  EXPECT_EQ(info.send_lag_ns.size(), 300u);
  for (int64_t ns : info.send_lag_ns) EXPECT_GE(ns, 0);
  // The same seed gives the same schedule, whatever the server did.
  LoadRun b = run(c);
  EXPECT_EQ(b.levels[0].schedule_fingerprint, info.schedule_fingerprint);
  c.load.plan.seed = 8;
  c.load.plan.measure = PhaseLimit{0, 20};
  LoadRun d = run(c);
  EXPECT_NE(d.levels[0].schedule_fingerprint, info.schedule_fingerprint);
  // Every measured request records its intended start, and is never sent before it.
  for (const auto& t : measured(a, 0)) EXPECT_GE(t.send_ns, t.intended_ns);
}

TEST(LoadShapesE2E, LatencyFromTheIntendedStartIncludesTheClientQueue) {
  // Constant arrivals every 50 ms, one slot (--max-concurrency 1), service 100 ms: request i is
  // meant to start at 50·i but can only start at 100·i, so its queue is 50·i ms and its TTFT from the
  // intended start exceeds the service TTFT by exactly that.
  ScriptedServerOptions o;
  o.script.ttft_ms = 20;
  o.script.itl_ms = 20;
  o.script.tokens = 5;  // 20 + 4 x 20 = 100 ms
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = base_config(server, 5);
  c.load.plan.levels = {rate(20)};
  c.load.plan.arrivals = ArrivalKind::kConstant;
  c.load.plan.max_concurrency = 1;
  c.load.plan.measure = PhaseLimit{0, 6};
  c.load.default_warmup = false;
  LoadRun r = run(c);
  std::vector<RequestTimeline> m = measured(r, 0);
  ASSERT_EQ(m.size(), 6u);
  std::sort(m.begin(), m.end(), [](auto& a, auto& b) { return a.intended_ns < b.intended_ns; });
  for (size_t i = 0; i < m.size(); ++i) {
    RequestMetrics x = compute_request_metrics(m[i]);
    ASSERT_TRUE(m[i].ok());
    // Request i cannot be sent before the i services ahead of it (>= 100 ms each) are over, so
    // its queue is at least 50·i ms; a loaded machine only adds to it. The identities between the
    // two latencies hold exactly.
    double min_queue = 50.0 * static_cast<double>(i);
    EXPECT_GE(x.queue_ms, min_queue - 1e-6) << i;
    EXPECT_GE(x.ttft_ms, 20.0) << i;
    EXPECT_NEAR(x.ttft_from_intended_ms - x.ttft_ms, x.queue_ms, 1e-6) << i;
    EXPECT_NEAR(x.e2e_from_intended_ms - x.e2e_ms, x.queue_ms, 1e-6) << i;
  }
}

TEST(LoadShapesE2E, GoodputAndAttainmentMatchAHandCount) {
  // A third of the requests stall 150 ms before their first token: they miss ttft:p95<=60ms each.
  ScriptedServerOptions o;
  o.script.ttft_ms = 10;
  o.script.itl_ms = 2;
  o.script.tokens = 4;
  o.script.fault_at_token = 0;
  o.script.stall_ms = 150;
  o.fault_fractions = {{Fault::kStall, 0.33}, {Fault::kHttp500, 0.1}};
  o.seed = 11;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = base_config(server, 4);
  c.load.plan.levels = {concurrency(4)};
  c.load.plan.measure = PhaseLimit{0, 60};
  c.load.default_warmup = false;
  LoadRun r = run(c);
  std::vector<RequestTimeline> m = measured(r, 0);
  ASSERT_EQ(m.size(), 60u);
  std::map<std::string, Fault> fault_of;
  for (const auto& rec : server.records()) fault_of[rec.request_id] = rec.fault;
  size_t hand_good = 0;
  for (const auto& t : m) hand_good += fault_of.at(t.request_id) == Fault::kNone ? 1 : 0;
  std::vector<RequestMetrics> metrics;
  std::vector<uint8_t> ok;
  for (const auto& t : m) {
    metrics.push_back(compute_request_metrics(t));
    ok.push_back(t.ok() ? 1 : 0);
  }
  SloSpec slo = *parse_slo("ttft:p95<=60ms");
  SloReport rep = evaluate_slo(slo, metrics, ok, 2.0);
  EXPECT_EQ(rep.requests, 60u);
  EXPECT_EQ(rep.good, hand_good);
  EXPECT_NEAR(rep.attainment_pct, 100.0 * hand_good / 60, 1e-9);
  EXPECT_NEAR(rep.goodput_rps, hand_good / 2.0, 1e-9);
  EXPECT_FALSE(rep.all_pass);  // P95 sits among the stalled ones
}

TEST(LoadShapesE2E, CapacitySearchFindsTheSlotCount) {
  // K = 4 slots, 100 ms of service each: up to 4 concurrent users see TTFT ≈ 60 ms; a 5th waits
  // for a slot. With ttft:p95<=110ms the highest passing concurrency is exactly 4; the 50 ms margin
  // is there for a loaded machine (the scheduler's delays add to every TTFT).
  ScriptedServerOptions o;
  o.script.ttft_ms = 60;
  o.script.itl_ms = 10;
  o.script.tokens = 5;
  o.queue_slots = 4;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  SloSpec slo = *parse_slo("ttft:p95<=110ms");
  RunLevelFn run_level = [&](double x) {
    BenchConfig c = base_config(server, 5);
    c.load.plan.levels = {concurrency(x)};
    c.load.plan.measure = PhaseLimit{0, static_cast<int64_t>(8 * x)};
    LoadRun r = run(c);
    std::vector<RequestMetrics> metrics;
    std::vector<uint8_t> ok;
    for (const auto& t : measured(r, 0)) {
      metrics.push_back(compute_request_metrics(t));
      ok.push_back(t.ok() ? 1 : 0);
    }
    return level_outcome_from(slo, metrics, ok);
  };
  CapacitySearchOptions opt;
  opt.start = 2;
  opt.max_value = 32;
  opt.max_trials = 16;
  CapacityResult res = capacity_search(run_level, opt);
  ASSERT_TRUE(res.found) << res.summary;
  EXPECT_EQ(res.max_passing, 4) << res.summary;
}

TEST(LoadShapesE2E, TraceReplayKeepsItsTimesScaledAndItsLengths) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 2;
  o.script.itl_ms = 1;
  o.script.tokens = 50;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  auto trace = parse_trace_jsonl(
      "{\"timestamp\": 0.0, \"input_tokens\": 10, \"output_tokens\": 3}\n"
      "{\"timestamp\": 0.2, \"input_tokens\": 20, \"output_tokens\": 5}\n"
      "{\"timestamp\": 0.4, \"prompt\": \"hello there\", \"output_tokens\": 7}\n"
      "{\"timestamp\": 1.0, \"input_tokens\": 10}\n",
      /*speed=*/2.0);
  ASSERT_TRUE(trace.ok()) << trace.error();
  BenchConfig c = base_config(server, 4);
  c.load.trace = *trace;
  for (auto& e : c.load.trace) {
    if (e.prompt.empty()) e.prompt = "word word";
  }
  c.load.plan.levels = {LevelSpec{LoadMode::kRate, 0, 0, 0}};
  c.load.default_warmup = false;
  LoadRun r = run(c);
  std::vector<RequestTimeline> m = measured(r, 0);
  ASSERT_EQ(m.size(), 4u);
  std::sort(m.begin(), m.end(), [](auto& a, auto& b) { return a.intended_ns < b.intended_ns; });
  // Twice as fast: 0, 100, 200 and 500 ms after the first.
  const double expected_ms[] = {0, 100, 200, 500};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(ns_to_ms(m[i].intended_ns - m[0].intended_ns), expected_ms[i], 0.01) << i;
    EXPECT_GE(m[i].send_ns, m[i].intended_ns) << i;
  }
  // Each request asked for its own output length (the last one: the workload default of 4).
  std::map<std::string, int> max_tokens;
  for (const auto& rec : server.records()) max_tokens[rec.request_id] = rec.body["max_tokens"];
  const int expected_tokens[] = {3, 5, 7, 4};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(max_tokens[m[i].request_id], expected_tokens[i]) << i;
}

TEST(LoadShapesE2E, ALinearRateRampSpeedsUpAsPlanned) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 1;
  o.script.itl_ms = 1;
  o.script.tokens = 1;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = base_config(server, 1);
  c.load.plan.levels = {LevelSpec{LoadMode::kRate, 10, 90, 2'000'000'000}};  // 10 -> 90 req/s in 2 s
  c.load.plan.arrivals = ArrivalKind::kConstant;
  LoadRun r = run(c);
  std::vector<RequestTimeline> m = measured(r, 0);
  // The mean rate is 50 req/s over 2 s: about 100 arrivals, most of them in the second half.
  EXPECT_NEAR(static_cast<double>(m.size()), 100, 3);
  int64_t t0 = INT64_MAX;
  for (const auto& t : m) t0 = std::min(t0, t.intended_ns);
  int first_half = 0;
  for (const auto& t : m) first_half += (t.intended_ns - t0) < 1'000'000'000 ? 1 : 0;
  // First second: 10 -> 50 req/s, about 30 arrivals; second: about 70.
  EXPECT_NEAR(first_half, 30, 3);
}

TEST(LoadShapesE2E, ALevelFullOfErrorsStopsEarlyAndSoDoesTheSweep) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 1;
  o.script.itl_ms = 1;
  o.script.tokens = 2;
  o.fault_fractions = {{Fault::kHttp500, 0.9}};
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = base_config(server, 2);
  c.load.plan.levels = {concurrency(4), concurrency(8)};
  c.load.plan.measure = PhaseLimit{20'000'000'000, 0};  // 20 s planned
  c.load.default_warmup = false;
  c.load.saturation.window_s = 1;
  c.load.saturation.min_finished = 20;
  c.load.saturation.max_error_rate = 0.5;
  int64_t t0 = mono_ns();
  LoadRun r = run(c);
  double took_s = (mono_ns() - t0) / 1e9;
  ASSERT_EQ(r.levels.size(), 1u);  // the sweep stopped too
  ASSERT_TRUE(r.levels[0].stopped_early.has_value());
  EXPECT_NE(r.levels[0].stopped_early->find("error"), std::string::npos) << *r.levels[0].stopped_early;
  EXPECT_LT(took_s, 15.0);  // well before the planned 20 s (it stops after ~1 s of errors)
}

TEST(LoadShapesE2E, CooldownKeepsTheLoadButIsNotMeasured) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 5;
  o.script.itl_ms = 5;
  o.script.tokens = 4;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = base_config(server, 4);
  c.load.plan.levels = {concurrency(3)};
  c.load.plan.measure = PhaseLimit{0, 7};
  c.load.plan.cooldown = PhaseLimit{0, 50};
  LoadRun r = run(c);
  std::map<Phase, int> phases;
  for (const auto& t : r.records) phases[t.phase]++;
  EXPECT_EQ(phases[Phase::kWarmup], 3);
  EXPECT_EQ(phases[Phase::kMeasure], 7);
  EXPECT_GE(phases[Phase::kCooldown], 1);   // sent while the last measured ones finished
  EXPECT_LT(phases[Phase::kCooldown], 50);  // and stopped once they had
  LevelParams p;
  p.level = 0;
  EXPECT_EQ(aggregate_level(r.records, p).sent, 7);
}

}  // namespace
}  // namespace tokperf
