#include "client/openai_adapter.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/sse_parser.h"

namespace tokperf {
namespace {

ChunkInfo chat(std::string_view data) { return ChunkClassifier(ApiKind::kChat).classify(data); }
ChunkInfo completions(std::string_view data) {
  return ChunkClassifier(ApiKind::kCompletions).classify(data);
}

TEST(OpenAiAdapterTest, ApiKindNamesRoundTrip) {
  EXPECT_STREQ(api_kind_name(ApiKind::kChat), "chat");
  EXPECT_STREQ(api_kind_name(ApiKind::kCompletions), "completions");
  EXPECT_EQ(*parse_api_kind("completions"), ApiKind::kCompletions);
  for (auto name : {"chat", "completions", "anthropic", "responses", "ollama", "ollama-generate",
                    "tgi", "llamacpp"}) {
    auto k = parse_api_kind(name);
    ASSERT_TRUE(k.ok()) << name;
    EXPECT_STREQ(api_kind_name(*k), name);
  }
  auto bad = parse_api_kind("gemini");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("gemini"), std::string::npos);
  EXPECT_NE(bad.error().find("chat, completions, anthropic"), std::string::npos);
}

TEST(OpenAiAdapterTest, Done) {
  EXPECT_TRUE(chat("[DONE]").done);
  EXPECT_TRUE(completions(" [DONE]\n").done);
  EXPECT_EQ(chat("[DONE]").primary_class(), EventClass::kDone);
  EXPECT_TRUE(chat("[DONE]x").parse_error);
}

TEST(OpenAiAdapterTest, ChatRoleWithNullOrEmptyContentCarriesNoToken) {
  for (auto data : {R"({"choices":[{"delta":{"role":"assistant","content":null}}]})",
                    R"({"choices":[{"delta":{"role":"assistant","content":""}}]})",
                    R"({"choices":[{"delta":{"role":"assistant"}}]})"}) {
    ChunkInfo c = chat(data);
    EXPECT_TRUE(c.role) << data;
    EXPECT_EQ(c.content_bytes, 0u) << data;
    EXPECT_FALSE(c.carries_token()) << data;
    EXPECT_EQ(c.primary_class(), EventClass::kRole) << data;
  }
}

TEST(OpenAiAdapterTest, ChatContentBytesAreUnescapedUtf8) {
  // "h\u00e9\n" unescapes to h, C3 A9, LF: 4 bytes.
  ChunkInfo c = chat(R"({"id":"x","choices":[{"index":0,"delta":{"content":"h\u00e9\n"}}]})");
  EXPECT_EQ(c.content_bytes, 4u);
  EXPECT_TRUE(c.content_visible);
  EXPECT_FALSE(c.role);
  EXPECT_EQ(c.primary_class(), EventClass::kContent);
}

TEST(OpenAiAdapterTest, WhitespaceOnlyContentIsATokenButNotVisible) {
  ChunkInfo c = chat(R"({"choices":[{"delta":{"content":" \n\t"}}]})");
  EXPECT_EQ(c.content_bytes, 3u);
  EXPECT_FALSE(c.content_visible);
  EXPECT_TRUE(c.carries_token());
  EXPECT_EQ(c.primary_class(), EventClass::kContent);
}

TEST(OpenAiAdapterTest, RoleAndFirstTokenTogetherAreContent) {
  ChunkInfo c = chat(R"({"choices":[{"delta":{"role":"assistant","content":"Hi"}}]})");
  EXPECT_TRUE(c.role);
  EXPECT_EQ(c.content_bytes, 2u);
  EXPECT_EQ(c.primary_class(), EventClass::kContent);
}

TEST(OpenAiAdapterTest, ReasoningUnderEitherNameAndNotDoubleCounted) {
  EXPECT_EQ(chat(R"({"choices":[{"delta":{"reasoning_content":"think"}}]})").reasoning_bytes, 5u);
  EXPECT_EQ(chat(R"({"choices":[{"delta":{"reasoning":"abc"}}]})").reasoning_bytes, 3u);
  ChunkInfo both = chat(R"({"choices":[{"delta":{"reasoning":"abc","reasoning_content":"abc"}}]})");
  EXPECT_EQ(both.reasoning_bytes, 3u);
  EXPECT_EQ(both.primary_class(), EventClass::kReasoning);
  ChunkInfo nul = chat(R"({"choices":[{"delta":{"content":null,"reasoning_content":null}}]})");
  EXPECT_EQ(nul.primary_class(), EventClass::kOther);
}

TEST(OpenAiAdapterTest, ToolCallNameAndArguments) {
  ChunkInfo first =
      chat(R"({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",)"
           R"("function":{"name":"get_weather","arguments":""}}]}}]})");
  EXPECT_EQ(first.tool_call_bytes, 11u);
  EXPECT_EQ(first.primary_class(), EventClass::kToolCall);
  ChunkInfo args = chat(
      R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}},)"
      R"({"index":1,"function":{"arguments":"{}"}}]}}]})");
  EXPECT_EQ(args.tool_call_bytes, 10u);  // {"city": (8) + {} (2)
  EXPECT_FALSE(args.content_visible);
}

TEST(OpenAiAdapterTest, FinishReason) {
  ChunkInfo c = chat(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})");
  EXPECT_TRUE(c.finish);
  EXPECT_EQ(c.primary_class(), EventClass::kOther);
  EXPECT_FALSE(chat(R"({"choices":[{"delta":{"content":"a"},"finish_reason":null}]})").finish);
}

TEST(OpenAiAdapterTest, UsageNullInEveryChunkThenFinalEmptyChoices) {
  ChunkInfo mid = chat(R"({"choices":[{"delta":{"content":"x"}}],"usage":null})");
  EXPECT_FALSE(mid.has_usage());
  EXPECT_EQ(mid.content_bytes, 1u);
  ChunkInfo last =
      chat(R"({"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,)"
           R"("total_tokens":46,"completion_tokens_details":{"reasoning_tokens":0}}})");
  EXPECT_EQ(last.usage_prompt_tokens, 12);
  EXPECT_EQ(last.usage_completion_tokens, 34);
  EXPECT_EQ(last.primary_class(), EventClass::kUsage);
}

TEST(OpenAiAdapterTest, UsageBesideContentKeepsContentPrimary) {
  ChunkInfo c = chat(R"({"usage":{"completion_tokens":3},"choices":[{"delta":{"content":"a"}}]})");
  EXPECT_EQ(c.usage_completion_tokens, 3);
  EXPECT_EQ(c.usage_prompt_tokens, -1);
  EXPECT_EQ(c.primary_class(), EventClass::kContent);
  ChunkInfo odd = chat(R"({"usage":{"prompt_tokens":"7","completion_tokens":5.0}})");
  EXPECT_EQ(odd.usage_prompt_tokens, -1);
  EXPECT_EQ(odd.usage_completion_tokens, 5);
}

TEST(OpenAiAdapterTest, CompletionsTextAndSeveralChoicesSummed) {
  ChunkInfo c =
      completions(R"({"choices":[{"text":"ab","index":0,"logprobs":null,"finish_reason":null},)"
                  R"({"text":" ","index":1},{"text":"cde","index":2,"finish_reason":"length"}]})");
  EXPECT_EQ(c.content_bytes, 6u);
  EXPECT_TRUE(c.content_visible);
  EXPECT_TRUE(c.finish);
  EXPECT_EQ(
      chat(R"({"choices":[{"delta":{"content":"ab"}},{"delta":{"content":"c"}}]})").content_bytes,
      3u);
}

TEST(OpenAiAdapterTest, EachApiReadsOnlyItsOwnField) {
  EXPECT_EQ(completions(R"({"choices":[{"delta":{"content":"ab"}}]})").content_bytes, 0u);
  EXPECT_EQ(chat(R"({"choices":[{"text":"ab"}]})").content_bytes, 0u);
}

TEST(OpenAiAdapterTest, UnknownFieldsAreSkipped) {
  ChunkInfo c = chat(
      R"({"prompt_token_ids":[1,2,3],"choices":[{"delta":{"content":"a","extra":{"x":[1,{}]}},)"
      R"("logprobs":{"content":[{"token":"a","logprob":-0.1}]}}],)"
      R"("timings":{"prompt_n":35,"prompt_ms":4.9},"usage":{"prompt_tokens":1,"completion_tokens":2}})");
  EXPECT_FALSE(c.parse_error) << c.error_message;
  EXPECT_EQ(c.content_bytes, 1u);
  EXPECT_EQ(c.usage_completion_tokens, 2);
}

TEST(OpenAiAdapterTest, ErrorObjectInStream) {
  ChunkInfo c =
      chat(R"({"error":{"message":"model overloaded","type":"server_error","code":503}})");
  EXPECT_TRUE(c.error);
  EXPECT_FALSE(c.parse_error);
  EXPECT_EQ(c.error_message, "model overloaded");
  EXPECT_EQ(c.primary_class(), EventClass::kError);
  EXPECT_EQ(chat(R"({"error":"busy"})").error_message, "busy");
  ChunkInfo no_msg = chat(R"({"error":{"code":500}})");
  EXPECT_TRUE(no_msg.error);
  EXPECT_EQ(no_msg.error_message, R"({"error":{"code":500}})");
  EXPECT_FALSE(chat(R"({"error":null,"choices":[]})").error);
}

TEST(OpenAiAdapterTest, LongErrorMessageIsCutAtACharacterBoundary) {
  // 299 ASCII bytes then "é" (2 bytes): byte 300 would split the character, so 299 are kept.
  std::string text(299, 'x');
  ChunkInfo c = chat(R"({"error":{"message":")" + text + "\u00e9" + "tail\"}}");
  EXPECT_TRUE(c.error);
  EXPECT_EQ(c.error_message, text);
}

TEST(OpenAiAdapterTest, MalformedJsonIsAParseErrorWithExcerpt) {
  for (auto data : {R"({"choices":[{"delta":{"content":"a"})", R"({"choices":)", "{",
                    R"({"a":1} {"b":2})", R"({"choices":[}]})", "{\"a\":\"\xFF\"}"}) {
    ChunkInfo c = chat(data);
    EXPECT_TRUE(c.parse_error) << data;
    EXPECT_FALSE(c.carries_token()) << data;
    EXPECT_NE(c.error_message.find("malformed JSON"), std::string::npos) << c.error_message;
    EXPECT_EQ(c.primary_class(), EventClass::kError);
  }
  ChunkInfo c = chat("{\"choices\":[");
  EXPECT_NE(c.error_message.find("{\"choices\":["), std::string::npos) << c.error_message;
}

// On Demand checks the values it skips for structure only, so a bad literal in a field the
// classifier ignores passes; the contract in openai_adapter.h says so. This pins that documented
// behaviour.
TEST(OpenAiAdapterTest, BadLiteralInASkippedFieldIsNotDetected) {
  EXPECT_FALSE(chat(R"({"a":tru,"choices":[{"delta":{"content":"ok"}}]})").parse_error);
  EXPECT_EQ(chat(R"({"a":tru,"choices":[{"delta":{"content":"ok"}}]})").content_bytes, 2u);
}

TEST(OpenAiAdapterTest, NonObjectIsAParseError) {
  for (auto data : {"[1,2]", "42", "\"text\"", "null", "}", "not json"}) {
    ChunkInfo c = completions(data);
    EXPECT_TRUE(c.parse_error) << data;
    EXPECT_EQ(c.error_message.rfind("payload is not a JSON object: ", 0), 0u) << c.error_message;
  }
}

TEST(OpenAiAdapterTest, EmptyPayloadIsAKeepAlive) {
  ChunkInfo c = chat("  ");
  EXPECT_FALSE(c.parse_error);
  EXPECT_EQ(c.primary_class(), EventClass::kOther);
}

TEST(OpenAiAdapterTest, ClassifierIsReusableAfterErrors) {
  ChunkClassifier classifier(ApiKind::kChat);
  EXPECT_TRUE(classifier.classify("{\"x\":").parse_error);
  EXPECT_EQ(classifier.classify(R"({"choices":[{"delta":{"content":"abc"}}]})").content_bytes, 3u);
  EXPECT_TRUE(classifier.classify("[").parse_error);
  EXPECT_EQ(classifier.classify(R"({"choices":[{"delta":{"content":"z"}}]})").content_bytes, 1u);
}

TEST(OpenAiAdapterTest, EventClassNames) {
  EXPECT_STREQ(event_class_name(EventClass::kToolCall), "tool_call");
  EXPECT_STREQ(event_class_name(EventClass::kReasoning), "reasoning");
  EXPECT_STREQ(event_class_name(EventClass::kOther), "other");
}

// --- Real llama.cpp captures (tests/data/real-streams/README.md) ---

struct StreamSummary {
  std::map<EventClass, int> classes;
  int role_events = 0;
  uint32_t content_bytes = 0;
  int finish_events = 0;
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  bool partial = false;
};

class Summarize : public SseSink {
 public:
  explicit Summarize(ApiKind kind) : classifier_(kind) {}
  void on_event(const SseEvent& e) override {
    ChunkInfo c = classifier_.classify(e.data);
    EXPECT_FALSE(c.parse_error) << c.error_message;
    ++summary.classes[c.primary_class()];
    summary.role_events += c.role;
    summary.content_bytes += c.content_bytes;
    summary.finish_events += c.finish;
    if (c.has_usage()) {
      summary.prompt_tokens = c.usage_prompt_tokens;
      summary.completion_tokens = c.usage_completion_tokens;
    }
  }
  StreamSummary summary;

 private:
  ChunkClassifier classifier_;
};

StreamSummary summarize_file(const std::string& name, ApiKind kind, size_t read_bytes) {
  std::ifstream in(std::string(TOKPERF_TEST_DATA).append("/real-streams/") + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  Summarize sink(kind);
  SseParser parser(&sink);
  for (size_t at = 0; at < bytes.size(); at += read_bytes) {
    parser.feed(std::string_view(bytes).substr(at, read_bytes));
  }
  sink.summary.partial = parser.has_partial_event();
  return sink.summary;
}

TEST(OpenAiAdapterTest, LlamaCppChatCapture) {
  for (size_t read_bytes : {size_t{1}, size_t{7}, size_t{1024}, size_t{1} << 20}) {
    StreamSummary s = summarize_file("llamacpp-chat-stream.sse", ApiKind::kChat, read_bytes);
    // role-only first event, 5 one-token events of "/\", a finish event, a usage event, [DONE].
    EXPECT_EQ(s.classes.size(), 5u);  // checked first: operator[] below inserts
    EXPECT_EQ(s.classes[EventClass::kRole], 1);
    EXPECT_EQ(s.role_events, 1);
    EXPECT_EQ(s.classes[EventClass::kContent], 5);
    EXPECT_EQ(s.content_bytes, 10u);
    EXPECT_EQ(s.classes[EventClass::kOther], 1);
    EXPECT_EQ(s.finish_events, 1);
    EXPECT_EQ(s.classes[EventClass::kUsage], 1);
    EXPECT_EQ(s.classes[EventClass::kDone], 1);
    EXPECT_EQ(s.prompt_tokens, 35);
    EXPECT_EQ(s.completion_tokens, 5);
    EXPECT_FALSE(s.partial);
  }
}

TEST(OpenAiAdapterTest, LlamaCppCompletionsCapture) {
  for (size_t read_bytes : {size_t{1}, size_t{13}, size_t{1024}}) {
    StreamSummary s =
        summarize_file("llamacpp-completions-stream.sse", ApiKind::kCompletions, read_bytes);
    // "ha", " Вер" (1 + 6 bytes), "oria", "c"; then text "" with finish and usage; then [DONE].
    EXPECT_EQ(s.classes.size(), 3u);  // checked first: operator[] below inserts
    EXPECT_EQ(s.classes[EventClass::kContent], 4);
    EXPECT_EQ(s.content_bytes, 14u);
    EXPECT_EQ(s.classes[EventClass::kUsage], 1);
    EXPECT_EQ(s.finish_events, 1);
    EXPECT_EQ(s.classes[EventClass::kDone], 1);
    EXPECT_EQ(s.role_events, 0);
    EXPECT_EQ(s.prompt_tokens, 5);
    EXPECT_EQ(s.completion_tokens, 4);
    EXPECT_FALSE(s.partial);
  }
}

TEST(OpenAiAdapter, UsageCarriesCachedPromptTokens) {
  ChunkInfo c = chat(
      R"({"choices":[],"usage":{"prompt_tokens":900,"completion_tokens":5,)"
      R"("prompt_tokens_details":{"cached_tokens":768}}})");
  EXPECT_EQ(c.usage_prompt_tokens, 900);
  EXPECT_EQ(c.usage_cached_tokens, 768);
  c = chat(R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5,)"
           R"("prompt_tokens_details":null}})");
  EXPECT_EQ(c.usage_cached_tokens, -1);
  EXPECT_FALSE(c.parse_error);
  c = chat(R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5}})");
  EXPECT_EQ(c.usage_cached_tokens, -1);
}

}  // namespace
}  // namespace tokperf
