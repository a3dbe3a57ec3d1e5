#include "client/request_builder.h"

#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tokperf {
namespace {

TargetConfig target(std::string api) {
  TargetConfig t;
  t.base_url = "http://127.0.0.1:8000/v1";
  t.api = std::move(api);
  t.model = "m";
  return t;
}

TEST(NormaliseBaseUrl, AddsV1OnlyWhenThePathIsEmpty) {
  EXPECT_EQ(*normalise_base_url("http://h:8000"), "http://h:8000/v1");
  EXPECT_EQ(*normalise_base_url("http://h:8000/"), "http://h:8000/v1");
  EXPECT_EQ(*normalise_base_url("http://h:8000/v1/"), "http://h:8000/v1");
  EXPECT_EQ(*normalise_base_url("https://h/openai/v1"), "https://h/openai/v1");
  EXPECT_FALSE(normalise_base_url("h:8000").ok());
  EXPECT_FALSE(normalise_base_url("ftp://h").ok());
  EXPECT_FALSE(normalise_base_url("http://").ok());
  EXPECT_EQ(server_root("http://h:8000/v1"), "http://h:8000");
}

TEST(RequestBuilder, ChatBodyCarriesStreamUsageAndThePrompt) {
  PromptConfig p;
  p.text = "say \"hi\"\n";
  p.output_tokens = 64;
  TargetConfig t = target("chat");
  t.ignore_eos = true;
  auto b = RequestBuilder::create(t, p);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->url(), "http://127.0.0.1:8000/v1/chat/completions");
  auto j = nlohmann::json::parse(b->body("nonce "));
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["messages"][0]["role"], "user");
  EXPECT_EQ(j["messages"][0]["content"], "nonce say \"hi\"\n");
  EXPECT_EQ(j["max_tokens"], 64);
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_EQ(j["ignore_eos"], true);
}

TEST(RequestBuilder, MessagesGoAsAHistoryOrJoinedWhereThereIsNone) {
  PromptConfig p;
  p.text = "x";
  const std::vector<ChatMessage> msgs = {
      {"system", "be brief"}, {"user", "hello"}, {"assistant", "hi"}, {"user", "more"}};
  auto chat = RequestBuilder::create(target("chat"), p);
  ASSERT_TRUE(chat.ok());
  auto j = nlohmann::json::parse(chat->body_messages(msgs, 9));
  ASSERT_EQ(j["messages"].size(), 4u);
  EXPECT_EQ(j["messages"][0]["role"], "system");
  EXPECT_EQ(j["messages"][3]["content"], "more");
  EXPECT_EQ(j["max_tokens"], 9);
  auto anthropic = RequestBuilder::create(target("anthropic"), p);
  j = nlohmann::json::parse(anthropic->body_messages(msgs, 5));
  EXPECT_EQ(j["system"], "be brief");
  ASSERT_EQ(j["messages"].size(), 3u);
  EXPECT_EQ(j["messages"][0]["role"], "user");
  auto completions = RequestBuilder::create(target("completions"), p);
  j = nlohmann::json::parse(completions->body_messages(msgs, 5));
  EXPECT_EQ(j["prompt"], "be brief\nhello\nhi\nmore");
  EXPECT_EQ(j["max_tokens"], 5);
}

TEST(RequestBuilder, CompletionsBodyAndNoUsage) {
  PromptConfig p;
  p.text = "abc";
  TargetConfig t = target("completions");
  t.include_usage = false;
  auto b = RequestBuilder::create(t, p);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->url(), "http://127.0.0.1:8000/v1/completions");
  auto j = nlohmann::json::parse(b->body(""));
  EXPECT_EQ(j["prompt"], "abc");
  EXPECT_FALSE(j.contains("stream_options"));
  EXPECT_FALSE(j.contains("ignore_eos"));
}

TEST(RequestBuilder, ExtraBodyIsMergedAndValidated) {
  PromptConfig p;
  p.text = "x";
  TargetConfig t = target("chat");
  t.extra_body_json = R"({"temperature": 0, "stream_options": {"continuous_usage_stats": true}})";
  auto b = RequestBuilder::create(t, p);
  ASSERT_TRUE(b.ok()) << b.error();
  auto j = nlohmann::json::parse(b->body(""));
  EXPECT_EQ(j["temperature"], 0);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_EQ(j["stream_options"]["continuous_usage_stats"], true);

  t.extra_body_json = "[1]";
  EXPECT_FALSE(RequestBuilder::create(t, p).ok());
  t.extra_body_json = "{oops";
  auto bad = RequestBuilder::create(t, p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--extra-body"), std::string::npos);
  t.extra_body_json = R"({"temperature": 1e999})";  // out of range: an error, not an exception
  bad = RequestBuilder::create(t, p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--extra-body"), std::string::npos) << bad.error();
}

TEST(RequestBuilder, HeadersCarryTheKeyAndTheRequestId) {
  PromptConfig p;
  p.text = "x";
  TargetConfig t = target("chat");
  t.api_key = "sk-secret";
  t.headers = {"X-Team: a"};
  auto b = RequestBuilder::create(t, p);
  auto h = b->headers("run-7");
  EXPECT_NE(std::find(h.begin(), h.end(), "Authorization: Bearer sk-secret"), h.end());
  EXPECT_NE(std::find(h.begin(), h.end(), "X-Request-Id: run-7"), h.end());
  EXPECT_NE(std::find(h.begin(), h.end(), "X-Team: a"), h.end());
}

TEST(RequestBuilder, EveryProtocolHasItsPathBodyAndHeaders) {
  PromptConfig p;
  p.text = "hello";
  p.output_tokens = 12;
  struct Case {
    const char* api;
    const char* url;
    const char* prompt_ptr;
    const char* max_ptr;
  };
  for (Case c :
       {Case{"anthropic", "http://127.0.0.1:8000/v1/messages", "/messages/0/content",
             "/max_tokens"},
        Case{"responses", "http://127.0.0.1:8000/v1/responses", "/input", "/max_output_tokens"},
        Case{"ollama", "http://127.0.0.1:8000/api/chat", "/messages/0/content",
             "/options/num_predict"},
        Case{"ollama-generate", "http://127.0.0.1:8000/api/generate", "/prompt",
             "/options/num_predict"},
        Case{"tgi", "http://127.0.0.1:8000/generate_stream", "/inputs",
             "/parameters/max_new_tokens"},
        Case{"llamacpp", "http://127.0.0.1:8000/completion", "/prompt", "/n_predict"}}) {
    TargetConfig t = target(c.api);
    t.api_key = "k";
    auto b = RequestBuilder::create(t, p);
    ASSERT_TRUE(b.ok()) << c.api << ": " << b.error();
    EXPECT_EQ(b->url(), c.url);
    EXPECT_STREQ(api_kind_name(b->api()), c.api);
    for (const std::string& body : {b->body("n "), b->body_for("n ", "hello", 12)}) {
      auto j = nlohmann::json::parse(body);
      EXPECT_EQ(j[nlohmann::json::json_pointer(c.prompt_ptr)], "n hello") << c.api;
      EXPECT_EQ(j[nlohmann::json::json_pointer(c.max_ptr)], 12) << c.api;
      EXPECT_FALSE(j.contains("stream_options")) << c.api;  // OpenAI's only
      EXPECT_EQ(j.value("stream", std::string(c.api) != "tgi"), std::string(c.api) != "tgi")
          << c.api;
    }
    auto j = nlohmann::json::parse(b->body_for("", "other", 99));
    EXPECT_EQ(j[nlohmann::json::json_pointer(c.prompt_ptr)], "other");
    EXPECT_EQ(j[nlohmann::json::json_pointer(c.max_ptr)], 99);
    const auto h = b->headers("r1");
    auto has = [&](std::string_view x) {
      return std::find(h.begin(), h.end(), std::string(x)) != h.end();
    };
    if (std::string(c.api) == "anthropic") {
      EXPECT_TRUE(has("x-api-key: k"));
      EXPECT_TRUE(has("anthropic-version: 2023-06-01"));
      EXPECT_FALSE(has("Authorization: Bearer k"));
    } else {
      EXPECT_TRUE(has("Authorization: Bearer k"));
    }
    EXPECT_TRUE(has(std::string(c.api).rfind("ollama", 0) == 0 ? "Accept: application/x-ndjson"
                                                               : "Accept: text/event-stream"));
  }
  EXPECT_FALSE(RequestBuilder::create(target("gemini"), p).ok());
}

}  // namespace
}  // namespace tokperf
