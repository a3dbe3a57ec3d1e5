#include "cli/load_flags.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/flags_test_util.h"

namespace tokperf {
namespace {

LoadFlags parse(const std::string& args) {
  LoadFlags f;
  testing_cli::parse_into([&](CLI::App* sub) { add_load_flags(sub, f); }, args);
  return f;
}

std::string usage_error(const std::string& args) {
  try {
    LoadFlags f = parse(args);
    (void)make_load_config(f);
    (void)make_slo(f);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(LoadFlags, ConcurrencyListAndRequestCount) {
  LoadConfig c = make_load_config(parse("--concurrency 1,4,16 --requests 2k --seed 7"));
  ASSERT_EQ(c.plan.levels.size(), 3u);
  EXPECT_EQ(c.plan.levels[0].mode, LoadMode::kConcurrency);
  EXPECT_EQ(c.plan.levels[2].start, 16);
  EXPECT_EQ(c.plan.measure.requests, 2000);
  EXPECT_EQ(c.plan.seed, 7u);
  EXPECT_TRUE(c.default_warmup);
}

TEST(LoadFlags, RateDurationWarmupTimeoutAndStopRules) {
  LoadConfig c =
      make_load_config(parse("--request-rate 5 --duration 30s --warmup 10req "
                             "--timeout 2m --no-early-stop --max-error-rate 0.2 "
                             "--max-concurrency 8"));
  ASSERT_EQ(c.plan.levels.size(), 1u);
  EXPECT_EQ(c.plan.levels[0].mode, LoadMode::kRate);
  EXPECT_EQ(c.plan.measure.duration_ns, 30'000'000'000);
  EXPECT_EQ(c.plan.warmup.requests, 10);
  EXPECT_FALSE(c.default_warmup);
  EXPECT_EQ(c.timeout_ns, 120'000'000'000);
  EXPECT_FALSE(c.stop_on_saturation);
  EXPECT_DOUBLE_EQ(c.saturation.max_error_rate, 0.2);
  EXPECT_EQ(c.plan.max_concurrency, 8);
}

TEST(LoadFlags, TraceReplacesTheLevels) {
  const std::string path =
      ::testing::TempDir() + "load_flags_trace-" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(path) << "{\"timestamp\": 0, \"input_tokens\": 10}\n"
                         "{\"timestamp\": 1, \"input_tokens\": 20}\n";
  LoadConfig c = make_load_config(parse("--trace " + path + " --trace-speed 2"));
  ASSERT_EQ(c.trace.size(), 2u);
  EXPECT_EQ(c.trace[1].offset_ns, 500'000'000);
  ASSERT_EQ(c.plan.levels.size(), 1u);
  EXPECT_EQ(c.plan.levels[0].mode, LoadMode::kRate);
  std::remove(path.c_str());
}

TEST(LoadFlags, SloIsParsed) {
  SloSpec s = make_slo(parse("--slo ttft:p95<=2s,tpot:p50<100ms"));
  ASSERT_EQ(s.objectives.size(), 2u);
  EXPECT_DOUBLE_EQ(s.objectives[0].threshold_ms, 2000);
  EXPECT_FALSE(s.objectives[1].inclusive);
  EXPECT_TRUE(make_slo(parse("")).empty());
}

TEST(LoadFlags, BadValuesNameTheFlag) {
  struct Case {
    const char* args;
    const char* must_mention;
  } cases[] = {
      {"--concurrency 4 --request-rate 2", "one of --concurrency"},
      {"--sweep --request-rate 2", "--sweep"},
      {"--burstiness 0", "--burstiness"},
      {"--max-concurrency -1", "--max-concurrency"},
      {"--requests 10 --duration 5s", "--requests or --duration"},
      {"--requests zero", "--requests"},
      {"--duration 0s", "--duration"},
      {"--duration 5", "--duration"},
      {"--timeout soon", "--timeout"},
      {"--max-error-rate 1.5", "--max-error-rate"},
      {"--trace /nonexistent/t.jsonl", "--trace"},
      {"--slo ttft:p95", "ttft:p95"},
      {"--arrivals sometimes", "sometimes"},
      {"--request-rate inf --duration 10s", "--requests N"},
      {"--request-rate 10,inf", "inf alone"},
      {"--request-rate infinite", "'infinite' is not valid"},
  };
  for (const auto& k : cases) {
    std::string e = usage_error(k.args);
    EXPECT_NE(e.find(k.must_mention), std::string::npos) << k.args << " -> '" << e << "'";
  }
  EXPECT_EQ(usage_error("--concurrency 2 --requests 5"), "");
}

// vLLM bench's --request-rate inf: alone, every measured request at once and no warm-up; with
// --max-concurrency C, the closed loop of C that --max-concurrency alone gives.
TEST(LoadFlags, InfiniteRateIsOneBurstOrAClosedLoopUnderACap) {
  LoadConfig burst = make_load_config(parse("--request-rate inf --requests 50"));
  ASSERT_EQ(burst.plan.levels.size(), 1u);
  EXPECT_EQ(burst.plan.levels[0].mode, LoadMode::kConcurrency);
  EXPECT_EQ(burst.plan.levels[0].start, 50);
  EXPECT_EQ(burst.plan.measure.requests, 50);
  EXPECT_FALSE(burst.default_warmup);
  EXPECT_TRUE(burst.plan.warmup.none());

  LoadConfig dflt = make_load_config(parse("--request-rate Infinity"));
  ASSERT_EQ(dflt.plan.levels.size(), 1u);
  EXPECT_EQ(dflt.plan.levels[0].start, 100);  // the default count

  LoadConfig warm = make_load_config(parse("--request-rate inf --requests 20 --warmup 5"));
  EXPECT_EQ(warm.plan.levels[0].start, 20);
  EXPECT_FALSE(warm.default_warmup);
  EXPECT_EQ(warm.plan.warmup.requests, 5);

  LoadConfig capped = make_load_config(parse("-r inf --max-concurrency 8 --requests 30"));
  LoadConfig same = make_load_config(parse("--max-concurrency 8 --requests 30"));
  ASSERT_EQ(capped.plan.levels.size(), 1u);
  EXPECT_EQ(capped.plan.levels[0].mode, LoadMode::kConcurrency);
  EXPECT_EQ(capped.plan.levels[0].start, 8);
  EXPECT_EQ(capped.default_warmup, same.default_warmup);
  EXPECT_EQ(capped.plan.measure.requests, 30);
}

TEST(LoadFlags, TurnsAndThinkTimeMakeSessions) {
  LoadConfig c = make_load_config(parse("--concurrency 4 --turns 2..5 --think-time 1s..3s"));
  EXPECT_TRUE(c.sessions.active());
  EXPECT_EQ(c.sessions.turns_min, 2);
  EXPECT_EQ(c.sessions.turns_max, 5);
  EXPECT_EQ(c.sessions.think.kind, ThinkTime::Kind::kUniform);
  EXPECT_EQ(c.sessions.think.b_ns, 3'000'000'000);
  EXPECT_FALSE(make_load_config(parse("--concurrency 4")).sessions.active());
  EXPECT_NE(usage_error("--turns 0").find("--turns '0'"), std::string::npos);
  EXPECT_NE(usage_error("--think-time 2s").find("needs --turns"), std::string::npos);
  EXPECT_NE(usage_error("--turns 3 --think-time soon").find("--think-time 'soon'"),
            std::string::npos);
}

}  // namespace
}  // namespace tokperf
