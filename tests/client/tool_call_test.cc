#include "client/tool_call.h"

#include <gtest/gtest.h>

#include "client/openai_adapter.h"
#include "client/request_builder.h"

namespace tokperf {
namespace {

TEST(JsonCompletion, CompletesAtTheFragmentThatClosesTheObject) {
  JsonCompletion j;
  EXPECT_FALSE(j.feed(""));
  EXPECT_FALSE(j.feed("  {\"city\": "));
  EXPECT_FALSE(j.feed("\"Par"));
  EXPECT_FALSE(j.feed("is}\", \"n\": [1, {\"a\": "));  // the brace is inside a string
  EXPECT_FALSE(j.feed("\"\\\"]\"}"));                  // an escaped quote, a bracket in a string
  EXPECT_TRUE(j.feed("]}"));
  EXPECT_TRUE(j.complete());
  EXPECT_TRUE(j.feed(", trailing"));  // stays complete
  EXPECT_EQ(nlohmann::json::parse(j.text().substr(0, j.text().find("]}") + 2))["city"], "Paris}");
}

TEST(JsonCompletion, AClosedValueThatDoesNotParseOrANonObjectNeverCompletes) {
  JsonCompletion bad;
  EXPECT_FALSE(bad.feed("{\"a\" 1}"));
  EXPECT_TRUE(bad.failed());
  EXPECT_FALSE(bad.feed("{}"));
  JsonCompletion words;
  EXPECT_FALSE(words.feed("w0 w1 "));
  EXPECT_TRUE(words.failed());
  JsonCompletion arr;
  EXPECT_TRUE(arr.feed("[1,2]"));
  arr.reset();
  EXPECT_FALSE(arr.complete());
  EXPECT_FALSE(arr.started());
}

TEST(ToolsFile, AcceptsOpenAiToolsAndBareFunctions) {
  auto t =
      parse_tools_json(R"([{"type":"function","function":{"name":"get_weather","description":"d",)"
                       R"("parameters":{"type":"object"}}},{"name":"search"}])",
                       "tools.json");
  ASSERT_TRUE(t.ok()) << t.error();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[1]["type"], "function");
  EXPECT_EQ((*t)[1]["function"]["name"], "search");
  EXPECT_EQ(first_tool_name(*t), "get_weather");
}

TEST(ToolsFile, RefusesWhatIsNotAnArrayOfToolsNamingTheFile) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (Case c : {Case{"{\"name\":\"x\"}", "not an array"}, Case{"[", "not valid JSON"},
                 Case{"[]", "empty array"}, Case{"[1]", "tool 0 (from 0) is not an object"},
                 Case{"[{\"type\":\"function\",\"function\":{}}]", "\"name\""},
                 Case{"[{\"type\":\"web\",\"function\":{\"name\":\"x\"}}]", "\"type\""},
                 Case{"[{\"function\":{\"name\":\"x\",\"parameters\":3}}]", "parameters"},
                 Case{"[{\"description\":\"no function\"}]", "no \"function\""}}) {
    auto t = parse_tools_json(c.text, "my-tools.json");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.error().find("--tools 'my-tools.json'"), std::string::npos) << t.error();
    EXPECT_NE(t.error().find(c.says), std::string::npos) << t.error();
  }
  auto missing = load_tools_file("/nonexistent/tools.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/tools.json"), std::string::npos);
}

TEST(ToolsFile, EachChatStyleProtocolGetsItsOwnShape) {
  auto tools = parse_tools_json(
      R"([{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])", "t");
  ASSERT_TRUE(tools.ok());
  auto chat = tools_for_api(*tools, "f", ApiKind::kChat);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->tool_choice["function"]["name"], "f");
  auto anthropic = tools_for_api(*tools, "required", ApiKind::kAnthropic);
  ASSERT_TRUE(anthropic.ok());
  EXPECT_EQ(anthropic->tools[0]["name"], "f");
  EXPECT_EQ(anthropic->tools[0]["input_schema"]["type"], "object");
  EXPECT_EQ(anthropic->tool_choice["type"], "any");
  auto responses = tools_for_api(*tools, "", ApiKind::kResponses);
  ASSERT_TRUE(responses.ok());
  EXPECT_EQ(responses->tools[0]["name"], "f");
  EXPECT_TRUE(responses->tool_choice.is_null());
  auto completions = tools_for_api(*tools, "", ApiKind::kCompletions);
  ASSERT_FALSE(completions.ok());
  EXPECT_NE(completions.error().find("chat-style"), std::string::npos);
  auto unknown = tools_for_api(*tools, "g", ApiKind::kChat);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("--tool-choice 'g'"), std::string::npos);
}

TEST(ToolCallCapture, ClassifierHandsOverReplyTextAndArgumentFragments) {
  ChunkClassifier c(ApiKind::kChat);
  std::string text, args;
  c.classify(R"({"choices":[{"delta":{"content":"Hi \"you\""}}]})", &text, &args);
  c.classify(R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f",)"
             R"("arguments":"{\"a\":"}}]}}]})",
             &text, &args);
  EXPECT_EQ(text, "Hi \"you\"");
  EXPECT_EQ(args, "{\"a\":");  // the name is not part of the arguments
  ChunkClassifier a(ApiKind::kAnthropic);
  std::string aargs;
  ChunkInfo i = a.classify(
      R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"q\": 1}"}})",
      nullptr, &aargs);
  EXPECT_EQ(aargs, "{\"q\": 1}");
  EXPECT_TRUE(i.carries_token());
}

TEST(RequestBuilderMessages, ConversationsAndToolsGoWhereEachProtocolWantsThem) {
  TargetConfig t;
  t.base_url = "http://127.0.0.1:1/v1";
  t.model = "m";
  t.tools_json = R"([{"type":"function","function":{"name":"f"}}])";
  PromptConfig p;
  p.text = "x";
  const std::vector<ChatMessage> history = {{"user", "a"}, {"assistant", "b"}, {"user", "c"}};
  for (const char* api : {"chat", "anthropic", "responses", "ollama"}) {
    t.api = api;
    auto b = RequestBuilder::create(t, p);
    ASSERT_TRUE(b.ok()) << api << ": " << b.error();
    EXPECT_TRUE(b->supports_messages());
    EXPECT_TRUE(b->sends_tools());
    auto body = nlohmann::json::parse(b->body_messages(history));
    const auto& list = std::string(api) == "responses" ? body["input"] : body["messages"];
    ASSERT_EQ(list.size(), 3u) << api;
    EXPECT_EQ(list[1]["role"], "assistant");
    EXPECT_EQ(list[1]["content"], "b");
    EXPECT_TRUE(body["tools"].is_array()) << api;
  }
  t.api = "completions";
  auto refused = RequestBuilder::create(t, p);
  ASSERT_FALSE(refused.ok());
  t.tools_json.clear();
  auto plain = RequestBuilder::create(t, p);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->supports_messages());
}

}  // namespace
}  // namespace tokperf
