#include "client/protocol_detect.h"

#include <gtest/gtest.h>

namespace tokperf {
namespace {

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

TEST(ProtocolDetectTest, ContentTypesPerFraming) {
  EXPECT_TRUE(content_type_fits(ApiKind::kChat, "text/event-stream; charset=utf-8"));
  EXPECT_TRUE(content_type_fits(ApiKind::kAnthropic, ""));
  EXPECT_FALSE(content_type_fits(ApiKind::kChat, "application/x-ndjson"));
  EXPECT_FALSE(content_type_fits(ApiKind::kTgi, "text/html"));
  EXPECT_TRUE(content_type_fits(ApiKind::kOllamaChat, "application/x-ndjson"));
  EXPECT_TRUE(content_type_fits(ApiKind::kOllamaGenerate, "application/json; charset=utf-8"));
  EXPECT_FALSE(content_type_fits(ApiKind::kOllamaChat, "text/event-stream"));
}

TEST(ProtocolDetectTest, GuessesEachProtocolFromOneEvent) {
  EXPECT_EQ(guess_api_of_event(R"({"choices":[{"delta":{"content":"x"}}]})"), "chat");
  EXPECT_EQ(guess_api_of_event(R"({"choices":[{"text":"x"}]})"), "completions");
  EXPECT_EQ(guess_api_of_event(R"({"type":"message_start","message":{}})"), "anthropic");
  EXPECT_EQ(guess_api_of_event(R"({"type":"response.created","response":{}})"), "responses");
  EXPECT_EQ(guess_api_of_event(R"({"model":"m","message":{"content":"x"},"done":false})"),
            "ollama");
  EXPECT_EQ(guess_api_of_event(R"({"model":"m","response":"x","done":false})"), "ollama-generate");
  EXPECT_EQ(guess_api_of_event(R"({"token":{"text":"x"},"generated_text":null})"), "tgi");
  EXPECT_EQ(guess_api_of_event(R"({"content":"x","stop":false})"), "llamacpp");
  EXPECT_EQ(guess_api_of_event(R"({"error":"boom"})"), "");
  EXPECT_EQ(guess_api_of_event("not json"), "");
}

TEST(ProtocolDetectTest, NdjsonToAnSseClientNamesWhatArrivedAndTheApi) {
  const std::string m =
      describe_foreign_stream(ApiKind::kChat, "application/x-ndjson",
                              "{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\","
                              "\"content\":\"Hi\"},\"done\":false}\n");
  EXPECT_TRUE(has(m, "newline-delimited JSON")) << m;
  EXPECT_TRUE(has(m, "application/x-ndjson")) << m;
  EXPECT_TRUE(has(m, "try --api ollama")) << m;
}

TEST(ProtocolDetectTest, SseToAnNdjsonClient) {
  const std::string m =
      describe_foreign_stream(ApiKind::kOllamaChat, "text/event-stream",
                              "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n");
  EXPECT_TRUE(has(m, "server-sent events")) << m;
  EXPECT_TRUE(has(m, "try --api chat")) << m;
}

TEST(ProtocolDetectTest, AnotherProtocolsEventsOverTheSameFraming) {
  const std::string m = describe_foreign_stream(
      ApiKind::kChat, "text/event-stream",
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n");
  EXPECT_TRUE(has(m, "another protocol")) << m;
  EXPECT_TRUE(has(m, "try --api anthropic")) << m;
  // The expected protocol after all: no diagnosis.
  EXPECT_EQ(describe_foreign_stream(ApiKind::kChat, "text/event-stream",
                                    "data: {\"choices\":[{\"delta\":{}}]}\n\n"),
            "");
}

TEST(ProtocolDetectTest, HtmlFromAProxy) {
  const std::string m = describe_foreign_stream(
      ApiKind::kAnthropic, "text/html; charset=utf-8",
      "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head></html>");
  EXPECT_TRUE(has(m, "HTML page")) << m;
  EXPECT_TRUE(has(m, "502 Bad Gateway")) << m;
  EXPECT_TRUE(has(m, "--url")) << m;
}

}  // namespace
}  // namespace tokperf
