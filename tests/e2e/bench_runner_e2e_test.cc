// End-to-end: BenchRunner (libcurl transport, SSE parser, classifier, timeline) against the
// scripted server on 127.0.0.1:0, comparing what tokperf measured with what the server sent and
// when.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "client/request_builder.h"
#include "core/clock.h"
#include "load/bench_runner.h"
#include "metrics/stats.h"
#include "support/bench_fixture.h"
#include "support/scripted_server.h"

namespace tokperf {
namespace {

using testing_support::Fault;
using testing_support::LineEnding;
using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;

using testing_support::RunOutput;
using testing_support::stamp_errors_ms;

BenchConfig config_for(const ScriptedServer& s, int concurrency, int requests, int output_tokens,
                       std::string api = "chat") {
  return testing_support::closed_loop_config(s, concurrency, requests, output_tokens,
                                             std::move(api));
}

RunOutput run(const BenchConfig& c) {
  RunOutput out = testing_support::run_bench(c);
  EXPECT_TRUE(out.completed);
  return out;
}

TEST(BenchRunnerE2E, AwkwardFramingGivesTheSameEventsAndCounts) {
  struct Case {
    LineEnding le;
    bool split;
    int comment_every;
    int per_chunk;
  };
  for (Case k : {Case{LineEnding::kCrlf, false, 0, 1}, Case{LineEnding::kCr, true, 2, 1},
                 Case{LineEnding::kLf, true, 1, 3}, Case{LineEnding::kCrlf, true, 3, 4}}) {
    ScriptedServerOptions o;
    o.script.ttft_ms = 5;
    o.script.itl_ms = 3;
    o.script.tokens = 12;
    o.script.line_ending = k.le;
    o.script.split_writes = k.split;
    o.script.comment_every = k.comment_every;
    o.script.tokens_per_chunk = k.per_chunk;
    ScriptedServer server(o);
    ASSERT_TRUE(server.start().ok());
    RunOutput out = run(config_for(server, 2, 4, 12));
    ASSERT_EQ(out.measured.size(), 4u);
    for (const auto& t : out.measured) {
      ASSERT_TRUE(t.ok()) << t.error.message;
      RequestMetrics m = compute_request_metrics(t);
      EXPECT_EQ(m.output_tokens, 12);  // from usage, although events carry several tokens
      EXPECT_EQ(t.token_events.size(), static_cast<size_t>((12 + k.per_chunk - 1) / k.per_chunk));
      EXPECT_TRUE(t.saw_done);
    }
  }
}

TEST(BenchRunnerE2E, RequestsCarryTheirIdKeyAndStreamOptions) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 1;
  o.script.itl_ms = 1;
  o.script.tokens = 3;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, 1, 3, 3);
  c.target.api_key = "sk-test-123";
  RunOutput out = run(c);
  std::set<std::string> ids;
  for (const auto& t : out.records) ids.insert(t.request_id);
  for (const auto& rec : server.records()) {
    EXPECT_EQ(ids.count(rec.request_id), 1u) << rec.request_id;
    EXPECT_EQ(rec.authorization, "Bearer sk-test-123");
    EXPECT_EQ(rec.body["stream"], true);
    EXPECT_EQ(rec.body["stream_options"]["include_usage"], true);
    EXPECT_EQ(rec.body["max_tokens"], 3);
  }
}

TEST(BenchRunnerE2E, EveryRequestIsAccountedForUnderFaults) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 5;
  o.script.itl_ms = 2;
  o.script.tokens = 6;
  o.script.fault_at_token = 3;
  o.script.stall_ms = 30;
  o.fault_fractions = {{Fault::kHttp500, 0.1},       {Fault::kHttp429, 0.1},
                       {Fault::kHttp401, 0.05},      {Fault::kDisconnect, 0.1},
                       {Fault::kMalformedJson, 0.1}, {Fault::kStall, 0.1},
                       {Fault::kNonStreaming, 0.05}};
  o.seed = 7;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, 8, 200, 6);
  c.load.default_warmup = false;
  RunOutput out = run(c);
  ASSERT_EQ(out.measured.size(), 200u);
  std::map<std::string, const RequestTimeline*> by_id;
  for (const auto& t : out.measured) by_id[t.request_id] = &t;
  std::map<ErrorKind, int> kinds;
  const std::map<Fault, ErrorKind> expected = {{Fault::kNone, ErrorKind::kNone},
                                               {Fault::kHttp500, ErrorKind::kHttp},
                                               {Fault::kHttp429, ErrorKind::kRateLimited},
                                               {Fault::kHttp401, ErrorKind::kAuth},
                                               {Fault::kDisconnect, ErrorKind::kIncomplete},
                                               {Fault::kMalformedJson, ErrorKind::kParse},
                                               {Fault::kStall, ErrorKind::kNone},
                                               {Fault::kNonStreaming, ErrorKind::kNotStreaming}};
  ASSERT_TRUE(server.wait_finished(200, 5000));
  int matched = 0;
  for (const auto& rec : server.records()) {
    auto it = by_id.find(rec.request_id);
    ASSERT_NE(it, by_id.end()) << rec.request_id;
    const RequestTimeline& t = *it->second;
    EXPECT_EQ(t.error.kind, expected.at(rec.fault))
        << rec.request_id << " fault " << testing_support::fault_name(rec.fault) << ": "
        << t.error.message;
    kinds[t.error.kind]++;
    matched++;
    if (rec.fault == Fault::kDisconnect) {
      EXPECT_EQ(t.token_events.size(), 3u);  // partial timings kept
      EXPECT_GT(compute_request_metrics(t).ttft_ms, 0);
    }
    if (rec.fault == Fault::kStall) {
      // The 30 ms stall is in the server's schedule; the client sees each token no earlier than
      // the server sent it (same clock), so the stall shows in the client's timeline whatever the
      // machine's load. How precisely it is stamped is bench/'s job.
      ASSERT_EQ(t.token_events.size(), rec.token_event_send_ns.size());
      for (size_t k = 0; k < t.token_events.size(); ++k) {
        EXPECT_GE(t.token_events[k].t_ns, rec.token_event_send_ns[k]) << k;
        EXPECT_GE(rec.token_event_send_ns[k], rec.token_event_due_ns[k]) << k;
      }
      EXPECT_GE(ns_to_ms(t.token_events.back().t_ns - t.send_ns), 30.0);
    }
    if (rec.fault == Fault::kHttp500) {
      EXPECT_EQ(t.error.http_status, 500);
    }
  }
  EXPECT_EQ(matched, 200);
  int total = 0;
  for (auto& [k, n] : kinds) total += n;
  EXPECT_EQ(total, 200);  // sent = ok + errors by kind
  EXPECT_GT(kinds[ErrorKind::kNone], 50);
  EXPECT_GT(kinds[ErrorKind::kRateLimited], 0);
  EXPECT_GT(kinds[ErrorKind::kParse], 0);
}

TEST(BenchRunnerE2E, AHangingServerTimesOut) {
  ScriptedServerOptions o;
  o.script.fault = Fault::kHang;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, 2, 2, 4);
  c.load.default_warmup = false;
  c.load.timeout_ns = 300'000'000;
  RunOutput out = run(c);
  ASSERT_EQ(out.measured.size(), 2u);
  for (const auto& t : out.measured) {
    EXPECT_EQ(t.error.kind, ErrorKind::kTimeout) << t.error.message;
    // Never before the timeout (1 ms for the transport's rounding); how soon after it depends on
    // the machine's load, so only "it did end" is asserted, by the error kind above.
    EXPECT_GE(ns_to_ms(t.end_ns - t.send_ns), 299.0);
  }
}

TEST(BenchRunnerE2E, CompletionsReasoningAndToolCallsAreTokens) {
  {
    ScriptedServerOptions o;
    o.script.ttft_ms = 2;
    o.script.itl_ms = 1;
    o.script.tokens = 5;
    ScriptedServer server(o);
    ASSERT_TRUE(server.start().ok());
    RunOutput out = run(config_for(server, 1, 2, 5, "completions"));
    for (const auto& t : out.measured) {
      ASSERT_TRUE(t.ok()) << t.error.message;
      EXPECT_EQ(t.token_events.size(), 5u);
    }
  }
  {
    ScriptedServerOptions o;
    o.script.ttft_ms = 20;
    o.script.itl_ms = 10;
    o.script.tokens = 8;
    o.script.reasoning_tokens = 5;
    ScriptedServer server(o);
    ASSERT_TRUE(server.start().ok());
    RunOutput out = run(config_for(server, 1, 2, 8));
    for (const auto& t : out.measured) {
      ASSERT_TRUE(t.ok()) << t.error.message;
      RequestMetrics m = compute_request_metrics(t);
      EXPECT_EQ(t.token_events.size(), 8u);
      // Behaviour, not pacing: the first token is no earlier than the server's 20 ms TTFT, the
      // first visible content is the 6th token (after 5 reasoning tokens), so no earlier than
      // 20 + 5 * 10 ms.
      EXPECT_GE(m.ttft_ms, 20.0);
      for (size_t k = 0; k < 5; ++k) EXPECT_FALSE(t.token_events[k].visible) << k;
      EXPECT_TRUE(t.token_events[5].visible);
      EXPECT_EQ(t.first_visible_ns, t.token_events[5].t_ns);
      EXPECT_GE(m.ttfo_ms, 20.0 + 5 * 10);
    }
  }
  {
    ScriptedServerOptions o;
    o.script.ttft_ms = 2;
    o.script.itl_ms = 1;
    o.script.tokens = 6;
    o.script.tool_calls = true;
    ScriptedServer server(o);
    ASSERT_TRUE(server.start().ok());
    RunOutput out = run(config_for(server, 1, 2, 6));
    for (const auto& t : out.measured) {
      ASSERT_TRUE(t.ok()) << t.error.message;
      EXPECT_EQ(t.token_events.size(), 6u);
      EXPECT_TRUE(std::isnan(compute_request_metrics(t).ttfo_ms));  // no visible content
    }
  }
}

TEST(BenchRunnerE2E, LevelHooksBracketEachLevelsRecords) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 2;
  o.script.itl_ms = 1;
  o.script.tokens = 3;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, 1, 3, 3);
  c.load.plan.levels = {LevelSpec{LoadMode::kConcurrency, 1, 1, 0},
                        LevelSpec{LoadMode::kConcurrency, 2, 2, 0}};
  auto builder = RequestBuilder::create(c.target, c.prompt);
  ASSERT_TRUE(builder.ok());
  std::vector<std::string> events;
  BenchRunner runner(c, std::move(*builder), [&](const RequestTimeline& t) {
    events.push_back("record " + std::to_string(t.level));
  });
  runner.set_level_sinks(
      [&](const LevelRunInfo& i) {
        EXPECT_EQ(i.end_ns, 0);
        events.push_back("start " + std::to_string(i.level));
      },
      [&](const LevelRunInfo& i) {
        EXPECT_GE(i.end_ns, i.start_ns);
        EXPECT_EQ(i.measured_sent, 3);
        events.push_back("end " + std::to_string(i.level));
      });
  ASSERT_TRUE(runner.run());
  // Level 0: one warm-up + 3 measured; level 1: two warm-up + 3 measured.
  std::vector<std::string> want = {"start 0"};
  for (int i = 0; i < 4; ++i) want.push_back("record 0");
  want.push_back("end 0");
  want.push_back("start 1");
  for (int i = 0; i < 5; ++i) want.push_back("record 1");
  want.push_back("end 1");
  EXPECT_EQ(events, want);
  ASSERT_EQ(runner.levels().size(), 2u);
  EXPECT_EQ(runner.levels()[1].measured_sent, 3);
}

}  // namespace
}  // namespace tokperf
