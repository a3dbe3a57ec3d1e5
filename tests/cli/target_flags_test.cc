#include "cli/target_flags.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/flags_test_util.h"

namespace tokperf {
namespace {

TargetFlags parse(const std::string& args) {
  TargetFlags f;
  testing_cli::parse_into([&](CLI::App* sub) { add_target_flags(sub, f); }, args);
  return f;
}

// The UsageError message apply_target_flags throws, or "" when it accepts the flags.
std::string usage_error(const std::string& args) {
  BenchConfig c;
  try {
    apply_target_flags(parse(args), c);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(TargetFlags, DefaultsPointAtTheLocalSimulatorWithChat) {
  BenchConfig c;
  apply_target_flags(parse(""), c);
  EXPECT_EQ(c.target.api, "chat");
  EXPECT_NE(c.target.base_url.find("127.0.0.1"), std::string::npos) << c.target.base_url;
  EXPECT_EQ(c.prompt.output_tokens, 256);
  EXPECT_EQ(c.prompt.input_tokens, -1);
  EXPECT_TRUE(c.target.include_usage);
  EXPECT_TRUE(c.target.verify_tls);
  EXPECT_EQ(c.run_id.rfind("tp", 0), 0u) << c.run_id;
}

TEST(TargetFlags, EveryFlagReachesTheConfig) {
  BenchConfig c;
  apply_target_flags(parse("--url http://127.0.0.1:9/v1 --api completions --model m --api-key k "
                           "--header 'X-A: 1' --header 'X-B: 2' --no-usage --http2 --insecure "
                           "--input-tokens 64 --unique-prompts --output-tokens 7 --ignore-eos"),
                     c);
  EXPECT_EQ(c.target.api, "completions");
  EXPECT_EQ(c.target.model, "m");
  EXPECT_EQ(c.target.api_key, "k");
  ASSERT_EQ(c.target.headers.size(), 2u);
  EXPECT_EQ(c.target.headers[1], "X-B: 2");
  EXPECT_FALSE(c.target.include_usage);
  EXPECT_TRUE(c.target.http2);
  EXPECT_FALSE(c.target.verify_tls);
  EXPECT_TRUE(c.target.ignore_eos);
  EXPECT_EQ(c.prompt.input_tokens, 64);
  EXPECT_TRUE(c.prompt.unique_prefix);
  EXPECT_EQ(c.prompt.output_tokens, 7);
}

TEST(TargetFlags, PromptFileIsRead) {
  const std::string path =
      ::testing::TempDir() + "target_flags_prompt-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path) << "hello prompt";
  BenchConfig c;
  apply_target_flags(parse("--prompt-file " + path), c);
  EXPECT_EQ(c.prompt.text, "hello prompt");
  std::remove(path.c_str());
}

TEST(TargetFlags, BadValuesNameTheFlagAndWhatIsAccepted) {
  std::string e = usage_error("--api embeddings");
  EXPECT_NE(e.find("--api"), std::string::npos) << e;
  EXPECT_NE(e.find("chat, completions"), std::string::npos) << e;
  e = usage_error("--header NoColon");
  EXPECT_NE(e.find("--header"), std::string::npos) << e;
  EXPECT_NE(e.find("Name: value"), std::string::npos) << e;
  e = usage_error("--prompt a --input-tokens 5");
  EXPECT_NE(e.find("only one of"), std::string::npos) << e;
  e = usage_error("--output-tokens 0");
  EXPECT_NE(e.find("--output-tokens"), std::string::npos) << e;
  e = usage_error("--input-tokens -2");
  EXPECT_NE(e.find("--input-tokens"), std::string::npos) << e;
  e = usage_error("--prompt-file /nonexistent/tokperf-prompt");
  EXPECT_NE(e.find("--prompt-file"), std::string::npos) << e;
  e = usage_error("--extra-body '[1'");
  EXPECT_FALSE(e.empty()) << "a broken --extra-body is caught before any request";
  EXPECT_EQ(usage_error("--extra-body '{\"temperature\": 0}'"), "");
}

TEST(TargetFlags, MalformedCommandLinesAreRejectedByTheParser) {
  EXPECT_THROW(parse("--no-such-flag"), CLI::ParseError);
}

TEST(TargetFlags, LengthsTakeDistributionsAndRejectOtherText) {
  // --input-tokens/--output-tokens are a length or a distribution (docs/WORKLOADS.md), checked
  // when applied, naming the flag and what is accepted.
  std::string e = usage_error("--output-tokens many");
  EXPECT_NE(e.find("--output-tokens 'many'"), std::string::npos) << e;
  EXPECT_NE(e.find("uniform:A..B"), std::string::npos) << e;
  EXPECT_EQ(usage_error("--input-tokens uniform:10..20 --output-tokens lognormal:100,50"), "");
}

TEST(TargetFlags, ToolsFileIsReadValidatedAndNamedInErrors) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/tokperf_tools_good.json";
  const std::string bad = dir + "/tokperf_tools_bad.json";
  std::ofstream(good) << R"([{"type":"function","function":{"name":"get_weather"}}])";
  std::ofstream(bad) << R"({"type":"function"})";
  BenchConfig c;
  apply_target_flags(parse("--tools " + good + " --tool-choice get_weather"), c);
  EXPECT_NE(c.target.tools_json.find("get_weather"), std::string::npos);
  EXPECT_EQ(c.target.tool_choice, "get_weather");
  const std::string e = usage_error("--tools " + bad);
  EXPECT_NE(e.find(bad), std::string::npos) << e;
  EXPECT_NE(e.find("not an array"), std::string::npos) << e;
  EXPECT_NE(usage_error("--tools " + good + " --api completions").find("chat-style"),
            std::string::npos);
  EXPECT_NE(usage_error("--tool-choice auto").find("needs --tools"), std::string::npos);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST(TargetFlags, SessionsRefuseCompletionsStyleApisByName) {
  BenchConfig c;
  c.load.sessions = parse_turns("3").value();
  for (const char* api : {"completions", "ollama-generate", "tgi", "llamacpp"}) {
    c.target.api = api;
    try {
      check_sessions_api(c);
      ADD_FAILURE() << api << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--api ") + api), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("chat-style"), std::string::npos);
    }
  }
  for (const char* api : {"chat", "anthropic", "responses", "ollama"}) {
    c.target.api = api;
    EXPECT_NO_THROW(check_sessions_api(c)) << api;
  }
}

}  // namespace
}  // namespace tokperf
