#include "client/stream_recorder.h"

#include <gtest/gtest.h>

#include <string>

namespace tokperf {
namespace {

std::string data(const std::string& json) { return "data: " + json + "\n\n"; }

const std::string kContent = R"({"choices":[{"delta":{"content":"Hi"}}]})";
const std::string kReasoning = R"({"choices":[{"delta":{"reasoning_content":"hmm"}}]})";
const std::string kFinish = R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})";

TEST(StreamRecorder, StampsEachEventWithTheReadThatCompletedIt) {
  ChunkClassifier cls(ApiKind::kChat);
  StreamRecorder rec(&cls);
  RequestTimeline tl;
  rec.begin(&tl);
  const std::string first = data(kContent);
  // The first event's bytes arrive in two reads: it is stamped with the second one.
  rec.on_bytes(first.substr(0, 10), 100);
  EXPECT_TRUE(tl.token_events.empty());
  EXPECT_TRUE(rec.truncated());
  rec.on_bytes(first.substr(10), 200);
  // Two events in one read share its stamp.
  rec.on_bytes(data(kContent) + data(kContent), 300);
  ASSERT_EQ(tl.token_events.size(), 3u);
  EXPECT_EQ(tl.token_events[0].t_ns, 200);
  EXPECT_EQ(tl.token_events[1].t_ns, 300);
  EXPECT_EQ(tl.token_events[2].t_ns, 300);
  EXPECT_TRUE(tl.token_events[0].visible);
  EXPECT_EQ(tl.token_events[0].chars, 2);
  EXPECT_EQ(tl.first_visible_ns, 200);
  EXPECT_EQ(tl.last_event_ns, 300);
  EXPECT_EQ(tl.chunks, 3);
  EXPECT_EQ(rec.events(), 3u);
  EXPECT_FALSE(rec.truncated());
}

TEST(StreamRecorder, ReasoningIsATokenButNotVisibleContent) {
  ChunkClassifier cls(ApiKind::kChat);
  StreamRecorder rec(&cls);
  RequestTimeline tl;
  rec.begin(&tl);
  rec.on_bytes(data(kReasoning), 10);
  rec.on_bytes(data(kContent), 20);
  ASSERT_EQ(tl.token_events.size(), 2u);
  EXPECT_FALSE(tl.token_events[0].visible);
  EXPECT_TRUE(tl.token_events[1].visible);
  EXPECT_EQ(tl.first_visible_ns, 20);
}

TEST(StreamRecorder, FinishDoneAndUsageAreRecorded) {
  ChunkClassifier cls(ApiKind::kChat);
  StreamRecorder rec(&cls);
  RequestTimeline tl;
  rec.begin(&tl);
  rec.on_bytes(data(kContent) + data(kFinish), 5);
  EXPECT_TRUE(rec.saw_finish());
  EXPECT_FALSE(tl.saw_done);
  rec.on_bytes(data(R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34}})"), 6);
  rec.on_bytes("data: [DONE]\n\n", 7);
  EXPECT_TRUE(tl.saw_done);
  EXPECT_EQ(tl.usage_prompt_tokens, 12);
  EXPECT_EQ(tl.usage_completion_tokens, 34);
  EXPECT_EQ(tl.token_events.size(), 1u) << "finish, usage and [DONE] carry no token";
  EXPECT_EQ(tl.last_event_ns, 7);
}

TEST(StreamRecorder, ContinuousUsageGivesTokensPerEvent) {
  ChunkClassifier cls(ApiKind::kChat);
  StreamRecorder rec(&cls);
  RequestTimeline tl;
  rec.begin(&tl);
  rec.on_bytes(data(R"({"usage":{"completion_tokens":1},"choices":[{"delta":{"content":"a"}}]})"),
               1);
  rec.on_bytes(data(R"({"usage":{"completion_tokens":4},"choices":[{"delta":{"content":"b"}}]})"),
               2);
  ASSERT_EQ(tl.token_events.size(), 2u);
  EXPECT_EQ(tl.token_events[0].tokens, 1);
  EXPECT_EQ(tl.token_events[1].tokens, 3) << "tokens packed into the second chunk";
  EXPECT_EQ(tl.usage_completion_tokens, 4);
}

TEST(StreamRecorder, CountsParseAndStreamErrorsKeepingTheFirstMessage) {
  ChunkClassifier cls(ApiKind::kChat);
  StreamRecorder rec(&cls);
  RequestTimeline tl;
  rec.begin(&tl);
  rec.on_bytes(data("{not json"), 1);
  rec.on_bytes(data("[also not"), 2);
  rec.on_bytes(data(R"({"error":{"message":"overloaded"}})"), 3);
  EXPECT_EQ(rec.parse_errors(), 2);
  EXPECT_FALSE(rec.first_parse_error().empty());
  EXPECT_EQ(rec.stream_errors(), 1);
  EXPECT_NE(rec.first_stream_error().find("overloaded"), std::string::npos)
      << rec.first_stream_error();
  EXPECT_TRUE(tl.token_events.empty());
  EXPECT_EQ(tl.chunks, 3) << "every data event counts, whatever its class";
}

TEST(StreamRecorder, BeginResetsStateForTheNextRequest) {
  ChunkClassifier cls(ApiKind::kChat);
  StreamRecorder rec(&cls);
  RequestTimeline first;
  rec.begin(&first);
  rec.on_bytes(data("{bad") + data(kFinish) + "data: {\"choi", 1);
  EXPECT_TRUE(rec.truncated());
  RequestTimeline second;
  rec.begin(&second);
  EXPECT_FALSE(rec.truncated());
  EXPECT_FALSE(rec.saw_finish());
  EXPECT_EQ(rec.parse_errors(), 0);
  EXPECT_TRUE(rec.first_parse_error().empty());
  rec.on_bytes(data(kContent), 9);
  ASSERT_EQ(second.token_events.size(), 1u);
  EXPECT_EQ(second.token_events[0].t_ns, 9);
  EXPECT_TRUE(first.token_events.empty()) << "the old timeline is not written any more";
}

TEST(StreamRecorder, CompletionsApiReadsText) {
  ChunkClassifier cls(ApiKind::kCompletions);
  StreamRecorder rec(&cls);
  RequestTimeline tl;
  rec.begin(&tl);
  rec.on_bytes(data(R"({"choices":[{"text":"hello","index":0}]})"), 4);
  ASSERT_EQ(tl.token_events.size(), 1u);
  EXPECT_TRUE(tl.token_events[0].visible);
  EXPECT_EQ(tl.token_events[0].chars, 5);
}

}  // namespace
}  // namespace tokperf
