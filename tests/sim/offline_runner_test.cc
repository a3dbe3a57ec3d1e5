#include "sim/offline_runner.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tokperf::sim {
namespace {

const CostModel& cost() {
  static const CostModel c(Deployment{find_model("llama-3.1-8b").value(),
                                      find_gpu("a100-80g").value(), DType::kBf16, DType::kBf16, 1},
                           CostKnobs{});
  return c;
}

TEST(OfflineRunner, ClosedLoopKeepsConcurrencyAndMarksWarmup) {
  OfflineWorkload w;
  w.prompt_tokens = 200;
  w.output_tokens = 10;
  w.concurrency = 2;
  w.requests = 4;
  w.warmup = 1;
  auto run = run_offline(cost(), EngineConfig{}, w);
  ASSERT_TRUE(run.ok()) << run.error();
  const auto& t = run->timelines;
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].phase, Phase::kWarmup);
  EXPECT_EQ(t[1].phase, Phase::kMeasure);
  for (const auto& r : t) {
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.token_events.size(), 10u);
    EXPECT_EQ(r.usage_completion_tokens, 10);
    EXPECT_EQ(r.end_ns, r.token_events.back().t_ns);
    EXPECT_GT(r.token_events.front().t_ns, r.send_ns);
    // Never more than 2 in flight: at each send, at most one other request is open.
    int open = 0;
    for (const auto& o : t) open += (&o != &r && o.send_ns <= r.send_ns && o.end_ns > r.send_ns);
    EXPECT_LE(open, 1);
  }
  // The third request starts exactly when one of the first two ends.
  EXPECT_EQ(t[2].send_ns, std::min(t[0].end_ns, t[1].end_ns));
  EXPECT_EQ(run->total_output_tokens, 50);
}

// With a front end that passes outputs on one at a time (CostKnobs::output_overhead_s), tokens
// reach the client after the step that made them, and a closed loop sends the next request when
// the client saw the last one finish, not when the engine's step ended.
TEST(OfflineRunner, ClientSeesOutputsWhenTheFrontEndPassesThemOn) {
  CostKnobs k;
  k.request_overhead_s = 0;  // both reach the first step
  k.output_overhead_s = 3e-3;
  const CostModel slow(cost().deployment(), k);
  OfflineWorkload w;
  w.prompt_tokens = 200;
  w.output_tokens = 10;
  w.concurrency = 2;
  w.requests = 4;
  w.warmup = 0;
  auto run = run_offline(slow, EngineConfig{}, w);
  ASSERT_TRUE(run.ok()) << run.error();
  CostKnobs k0 = k;
  k0.output_overhead_s = 0;
  const CostModel fast(cost().deployment(), k0);
  auto base = run_offline(fast, EngineConfig{}, w);
  ASSERT_TRUE(base.ok()) << base.error();
  const auto& t = run->timelines;
  ASSERT_EQ(t.size(), 4u);
  for (const auto& r : t) {
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.token_events.size(), 10u);
    EXPECT_EQ(r.end_ns, r.token_events.back().t_ns);
  }
  // The first two share every step: one of them gets each output 3 ms after the step, the other
  // 6 ms, so their tokens are never stamped together.
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(std::abs(t[0].token_events[i].t_ns - t[1].token_events[i].t_ns), 3'000'000);
  }
  // The third starts exactly when the client saw one of the first two end.
  EXPECT_EQ(t[2].send_ns, std::min(t[0].end_ns, t[1].end_ns));
  // Without the cost, the same first step's tokens leave at its end, together; with it, 3 and
  // 6 ms later.
  const auto& b = base->timelines;
  ASSERT_EQ(b[0].token_events[0].t_ns, b[1].token_events[0].t_ns);
  EXPECT_EQ(std::min(t[0].token_events[0].t_ns, t[1].token_events[0].t_ns),
            b[0].token_events[0].t_ns + 3'000'000);
}

TEST(OfflineRunner, OpenLoopSendsAtTheGivenTimes) {
  OfflineWorkload w;
  w.prompt_tokens = 100;
  w.output_tokens = 5;
  w.arrivals_ns = {0, 2'000'000'000};
  auto run = run_offline(cost(), EngineConfig{}, w);
  ASSERT_TRUE(run.ok());
  const auto& t = run->timelines;
  EXPECT_EQ(t[1].send_ns, 2'000'000'000);
  // Both meet an idle engine, so both wait the same time for their first token.
  EXPECT_EQ(t[0].token_events[0].t_ns - t[0].send_ns, t[1].token_events[0].t_ns - t[1].send_ns);
}

TEST(OfflineRunner, RefusedRequestsAreRecordedAsFailures) {
  OfflineWorkload w;
  w.prompt_tokens = 100;
  w.output_tokens = 100;
  w.requests = 3;
  EngineConfig cfg;
  cfg.num_blocks = 4;  // 64 tokens: nothing fits
  auto run = run_offline(cost(), cfg, w);
  ASSERT_TRUE(run.ok());
  // The first refusal is recorded as a failure and stops the run (a closed loop would resend the
  // request forever), saying why.
  ASSERT_EQ(run->timelines.size(), 1u);
  EXPECT_EQ(run->timelines[0].error.kind, ErrorKind::kHttp);
  ASSERT_TRUE(run->stopped_early.has_value());
  EXPECT_NE(run->stopped_early->find("refused"), std::string::npos);
}

TEST(OfflineRunner, RejectsMalformedWorkloads) {
  OfflineWorkload w;
  w.concurrency = 0;
  EXPECT_FALSE(run_offline(cost(), EngineConfig{}, w).ok());
  w.concurrency = 1;
  w.arrivals_ns = {5, 1};
  EXPECT_FALSE(run_offline(cost(), EngineConfig{}, w).ok());
}

// Multi-turn sessions in virtual time: each turn prefills the whole history, so TTFT grows with
// the turn index; with prefix caching the previous turn's prompt is served from the cache.
OfflineLevel session_level(int64_t turns, int64_t users, int64_t requests) {
  OfflineLevel l;
  l.prompt_tokens = 512;
  l.output_tokens = 64;
  l.plan.spec = LevelSpec{LoadMode::kConcurrency, double(users), double(users), 0};
  l.plan.measure = PhaseLimit{0, requests};
  l.plan.sessions.enabled = true;
  l.plan.sessions.turns_min = l.plan.sessions.turns_max = turns;
  return l;
}

std::vector<double> ttft_by_turn(const OfflineLevelRun& run, int64_t turns) {
  std::vector<std::vector<double>> v(static_cast<size_t>(turns));
  for (const auto& t : run.timelines) {
    EXPECT_TRUE(t.ok());
    v[static_cast<size_t>(t.turn - 1)].push_back(compute_request_metrics(t).ttft_ms);
  }
  std::vector<double> mean;
  for (const auto& x : v) {
    double s = 0;
    for (double d : x) s += d;
    mean.push_back(x.empty() ? 0 : s / static_cast<double>(x.size()));
  }
  return mean;
}

TEST(OfflineRunnerSessions, PromptsGrowByTheRepliesAndTtftGrowsWithTheTurn) {
  EngineConfig no_cache;
  no_cache.enable_prefix_caching = false;
  auto run = run_offline_level(cost(), no_cache, session_level(4, 1, 8));
  ASSERT_TRUE(run.ok()) << run.error();
  ASSERT_EQ(run->timelines.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    const auto& t = run->timelines[i];
    EXPECT_EQ(t.turn, static_cast<int32_t>(i % 4 + 1));
    EXPECT_EQ(t.session, static_cast<int64_t>(i / 4));
    // Turn k: 512 new tokens after k - 1 earlier prompts and their 64-token replies.
    EXPECT_EQ(t.prompt_tokens_sent, 512 * t.turn + 64 * (t.turn - 1));
  }
  const std::vector<double> ttft = ttft_by_turn(*run, 4);
  for (size_t k = 1; k < ttft.size(); ++k) EXPECT_GT(ttft[k], ttft[k - 1]) << "turn " << k + 1;
  EXPECT_EQ(run->info.sessions_completed, 2);
}

TEST(OfflineRunnerSessions, PrefixCachingServesTheHistoryOfTheSession) {
  EngineConfig no_cache;
  no_cache.enable_prefix_caching = false;
  auto cold = run_offline_level(cost(), no_cache, session_level(4, 2, 16));
  auto warm = run_offline_level(cost(), EngineConfig{}, session_level(4, 2, 16));
  ASSERT_TRUE(cold.ok() && warm.ok());
  EXPECT_EQ(cold->engine.prefix_hit_tokens, 0);
  EXPECT_GT(warm->engine.prefix_hit_tokens, 0);
  const std::vector<double> c = ttft_by_turn(*cold, 4), w = ttft_by_turn(*warm, 4);
  EXPECT_NEAR(w[0], c[0], 1e-6);  // the first turn has no history to reuse
  for (size_t k = 1; k < 4; ++k) EXPECT_LT(w[k], c[k]) << "turn " << k + 1;
}

}  // namespace
}  // namespace tokperf::sim
