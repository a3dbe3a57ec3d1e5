#include "sim/offline_runner.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tokperf::sim
