// End-to-end: multi-turn sessions and agent tool calls through BenchRunner (libcurl, SSE parser,
// classifier, recorder) against the scripted server on 127.0.0.1, judged on the bodies the server
// received and the stamps of the events it sent.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include "analysis/level_result.h"
#include "load/bench_runner.h"
#include "support/bench_fixture.h"
#include "support/scripted_server.h"
#include "workload/workload.h"

namespace tokperf {
namespace {

using testing_support::Fault;
using testing_support::RunOutput;
using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;

std::vector<nlohmann::json> chat_bodies(const ScriptedServer& s) {
  std::vector<nlohmann::json> v;
  for (const auto& r : s.records()) {
    if (r.path == "/v1/chat/completions") v.push_back(r.body);
  }
  return v;
}

BenchConfig session_config(const ScriptedServer& s, int users, int requests, int turns,
                           std::string api = "chat") {
  BenchConfig c = testing_support::closed_loop_config(s, users, requests, 4, std::move(api));
  c.load.default_warmup = false;
  c.load.sessions = parse_turns(std::to_string(turns)).value();
  return c;
}

TEST(SessionsE2E, EachTurnResendsThePreviousPromptPlusTheGeneratedReplyPlusTheNewUserText) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 2;
  o.script.itl_ms = 1;
  o.script.tokens = 4;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  RunOutput out = testing_support::run_bench(session_config(server, 1, 6, 3));
  ASSERT_TRUE(out.completed);
  ASSERT_EQ(out.measured.size(), 6u);
  const std::vector<nlohmann::json> bodies = chat_bodies(server);
  ASSERT_EQ(bodies.size(), 6u);
  const nlohmann::json user = {{"role", "user"}, {"content", "hello there"}};
  // The scripted server's reply to every request: w0 w1 w2 w3, as content deltas.
  const nlohmann::json reply = {{"role", "assistant"}, {"content", "w0 w1 w2 w3 "}};
  for (size_t i = 0; i < bodies.size(); ++i) {
    const RequestTimeline& t = out.measured[i];
    ASSERT_TRUE(t.ok()) << t.error.message;
    EXPECT_EQ(t.session, static_cast<int64_t>(i / 3));
    EXPECT_EQ(t.turn, static_cast<int32_t>(i % 3 + 1));
    const nlohmann::json& messages = bodies[i]["messages"];
    if (t.turn == 1) {
      EXPECT_EQ(messages, nlohmann::json::array({user})) << i;
      continue;
    }
    // Turn k = exactly turn k-1's messages + the reply it generated + the new user text.
    nlohmann::json expected = bodies[i - 1]["messages"];
    expected.push_back(reply);
    expected.push_back(user);
    EXPECT_EQ(messages, expected) << i;
    // The prompt grows by the reply and the new text (the server counts words).
    EXPECT_EQ(t.usage_prompt_tokens, out.measured[i - 1].usage_prompt_tokens + 4 + 2);
  }
}

TEST(SessionsE2E, AFailedTurnEndsItsSessionAndTheRunGoesOn) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 2;
  o.script.itl_ms = 1;
  o.script.tokens = 4;
  o.fault_by_index = {{1, Fault::kHttp500}};  // session 0's second turn
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  RunOutput out = testing_support::run_bench(session_config(server, 1, 6, 3));
  ASSERT_TRUE(out.completed);
  ASSERT_EQ(out.measured.size(), 6u);
  std::vector<std::pair<int64_t, int32_t>> turns;
  for (const auto& t : out.measured) turns.emplace_back(t.session, t.turn);
  using P = std::pair<int64_t, int32_t>;
  EXPECT_EQ(turns, (std::vector<P>{{0, 1}, {0, 2}, {1, 1}, {1, 2}, {1, 3}, {2, 1}}));
  EXPECT_FALSE(out.measured[1].ok());
  EXPECT_EQ(out.measured[1].error.kind, ErrorKind::kHttp);
  for (size_t i : {0u, 2u, 3u, 4u, 5u}) EXPECT_TRUE(out.measured[i].ok()) << i;
  // The session after the failure starts afresh: one user message.
  EXPECT_EQ(chat_bodies(server)[2]["messages"].size(), 1u);
}

TEST(SessionsE2E, SummaryShowsPromptTokensAndLatencyByTurn) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 2;
  o.script.itl_ms = 1;
  o.script.tokens = 4;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = session_config(server, 2, 8, 2);
  RunOutput out = testing_support::run_bench(c);
  ASSERT_TRUE(out.completed);
  RunResultBuilder b({LevelParams{}}, SloSpec{});
  for (const auto& t : out.records) b.add(t, compute_request_metrics(t));
  LevelRunInfo info;
  info.sessions = true;
  RunResult r = b.finish(std::vector<LevelRunInfo>{info});
  ASSERT_EQ(r.levels.size(), 1u);
  const auto& by_turn = r.levels[0].by_turn;
  ASSERT_EQ(by_turn.size(), 2u);
  EXPECT_EQ(by_turn[0].requests, 4);
  EXPECT_EQ(by_turn[1].requests, 4);
  EXPECT_EQ(by_turn[0].prompt_tokens.p50, 2);          // "hello there"
  EXPECT_EQ(by_turn[1].prompt_tokens.p50, 2 + 4 + 2);  // + the reply + the new text
  EXPECT_EQ(by_turn[0].ttft_ms.count, 4);
}

TEST(SessionsE2E, TurnsTakeTheirUserTextAndOutputLengthFromTheDataset) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 2;
  o.script.itl_ms = 1;
  o.script.tokens = 4;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  const std::string file = ::testing::TempDir() + "/sessions_dataset.jsonl";
  {
    std::ofstream f(file);
    f << R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"first q"}],"output_tokens":3})"
      << "\n"
      << R"({"prompt":"second q","output_tokens":5})" << "\n";
  }
  BenchConfig c = session_config(server, 1, 2, 2);
  WorkloadOptions w;
  w.dataset = "jsonl:" + file;
  w.sampling = DatasetSampling::kSequential;
  auto workload = Workload::create(w);
  ASSERT_TRUE(workload.ok()) << workload.error();
  c.workload = *workload;
  RunOutput out = testing_support::run_bench(c);
  ASSERT_TRUE(out.completed);
  const std::vector<nlohmann::json> bodies = chat_bodies(server);
  ASSERT_EQ(bodies.size(), 2u);
  // Turn 1: the dataset entry's whole conversation (system prompt included), its max_tokens.
  const nlohmann::json system = {{"role", "system"}, {"content", "be brief"}};
  const nlohmann::json q1 = {{"role", "user"}, {"content", "first q"}};
  EXPECT_EQ(bodies[0]["messages"], nlohmann::json::array({system, q1}));
  EXPECT_EQ(bodies[0]["max_tokens"], 3);
  // Turn 2: the history (with the reply the server generated: 3 tokens, turn 1's max_tokens, not
  // the script's 4) plus the next entry's prompt.
  const nlohmann::json reply = {{"role", "assistant"}, {"content", "w0 w1 w2 "}};
  const nlohmann::json q2 = {{"role", "user"}, {"content", "second q"}};
  EXPECT_EQ(bodies[1]["messages"], nlohmann::json::array({system, q1, reply, q2}));
  EXPECT_EQ(bodies[1]["max_tokens"], 5);
  ASSERT_EQ(out.measured.size(), 2u);
  EXPECT_EQ(out.measured[1].turn, 2);
  EXPECT_EQ(out.measured[1].requested_output_tokens, 5);
}

// Tool calls: the scripted server streams the arguments {"q": "w0 w1 w2 w3 "} over token events
// 0..3 (the JSON closes in event 3), then content.
TEST(ToolCallsE2E, ToolCallMsIsTheStampOfTheEventThatCompletedTheArguments) {
  for (int per_chunk : {1, 2}) {
    ScriptedServerOptions o;
    o.script.ttft_ms = 5;
    o.script.itl_ms = 3;
    o.script.tokens = 6;
    o.script.tool_calls = true;
    o.script.tool_json_at = 3;
    o.script.tokens_per_chunk = per_chunk;
    ScriptedServer server(o);
    ASSERT_TRUE(server.start().ok());
    BenchConfig c = testing_support::closed_loop_config(server, 1, 3, 6);
    c.target.tools_json =
        R"([{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}])";
    c.target.tool_choice = "required";
    RunOutput out = testing_support::run_bench(c);
    ASSERT_TRUE(out.completed);
    ASSERT_EQ(out.measured.size(), 3u);
    const size_t completing_event = 3 / per_chunk;
    for (const auto& t : out.measured) {
      ASSERT_TRUE(t.ok()) << t.error.message;
      EXPECT_TRUE(t.tools_sent);
      EXPECT_TRUE(t.tool_call_seen);
      ASSERT_GT(t.token_events.size(), completing_event);
      EXPECT_EQ(t.tool_call_ns, t.token_events[completing_event].t_ns) << per_chunk;
      const RequestMetrics m = compute_request_metrics(t);
      EXPECT_DOUBLE_EQ(m.tool_call_ms, (t.tool_call_ns - t.send_ns) / 1e6);
      // Tool-call deltas carry tokens: every argument and content event is a token event, and
      // the first argument fragment is the TTFT event. (Events that were already waiting when the
      // client's loop woke share its wake stamp, so on a busy machine the TTFT event and the
      // completing one can carry the same stamp: never a later one.)
      EXPECT_EQ(t.token_events.size(), static_cast<size_t>((6 + per_chunk - 1) / per_chunk));
      EXPECT_DOUBLE_EQ(m.ttft_ms, (t.token_events.front().t_ns - t.send_ns) / 1e6);
      EXPECT_LE(m.ttft_ms, m.tool_call_ms);
    }
    const auto bodies = chat_bodies(server);
    ASSERT_FALSE(bodies.empty());
    EXPECT_EQ(bodies[0]["tools"][0]["function"]["name"], "lookup");
    EXPECT_EQ(bodies[0]["tool_choice"], "required");
  }
}

TEST(ToolCallsE2E, ArgumentsThatNeverFormJsonAreRecordedIncomplete) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 2;
  o.script.itl_ms = 1;
  o.script.tokens = 5;
  o.script.tool_calls = true;  // bare words: never JSON
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = testing_support::closed_loop_config(server, 1, 2, 5);
  c.target.tools_json = R"([{"type":"function","function":{"name":"lookup"}}])";
  RunOutput out = testing_support::run_bench(c);
  ASSERT_TRUE(out.completed);
  RunResultBuilder b({LevelParams{}}, SloSpec{});
  for (const auto& t : out.measured) {
    EXPECT_TRUE(t.tool_call_seen);
    EXPECT_EQ(t.tool_call_ns, 0);
    EXPECT_TRUE(std::isnan(compute_request_metrics(t).tool_call_ms));
    b.add(t, compute_request_metrics(t));
  }
  RunResult r = b.finish(std::vector<LevelRunInfo>{LevelRunInfo{}});
  ASSERT_TRUE(r.levels[0].tool_calls.has_value());
  EXPECT_EQ(r.levels[0].tool_calls->requests, 2);
  EXPECT_EQ(r.levels[0].tool_calls->complete, 0);
  EXPECT_EQ(r.levels[0].tool_calls->completion_rate, 0.0);
}

}  // namespace
}  // namespace tokperf
