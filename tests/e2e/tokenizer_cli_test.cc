// Prompt lengths without /tokenize (docs/TOKENIZERS.md), run as a user runs them: --tokenizer FILE
// against a server with no /tokenize, calibration from the server's usage.prompt_tokens, the
// method recorded in summary.json and requests.jsonl, and bad tokenizer files stopping the run
// before any request.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/shell_run.h"
#include "support/scripted_server.h"
#include "tokenize/tokenizer.h"

namespace tokperf {
namespace {

using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;

const std::string kQwen = std::string(TOKPERF_TEST_DATA).append("/tokenize/qwen3.tokenizer.json");

using Ran = testing_support::ShellRun;

Ran run(const std::string& args) {
  return testing_support::run_tokperf_shell(args, ::testing::TempDir() + "/tokperf_xdg_tok");
}

std::string temp_path(const std::string& name) {
  return testing_support::unique_temp_path("tokperf_tok_", name);
}

std::vector<nlohmann::json> records(const std::string& dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(dir + "/requests.jsonl");
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

nlohmann::json summary(const std::string& dir) {
  std::ifstream in(dir + "/summary.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

ScriptedServerOptions no_tokenize_server() {
  ScriptedServerOptions o;
  o.script.ttft_ms = 1;
  o.script.itl_ms = 1;
  o.script.tokens = 4;
  o.tokenize_enabled = false;  // as hosted APIs: no /tokenize
  return o;
}

// Chat requests the server received (probes included; not /models or /tokenize).
size_t chat_requests(const ScriptedServer& server) {
  size_t n = 0;
  for (const auto& rec : server.records())
    n += rec.path.find("/chat/completions") != std::string::npos;
  return n;
}

// The user message of a chat request.
std::string prompt_of(const testing_support::ScriptedRecord& rec) {
  if (!rec.body.is_object() || !rec.body.contains("messages")) return "";
  return rec.body["messages"].back()["content"].get<std::string>();
}

TEST(TokenizerCli, TokenizerFileGivesExactPromptsWithoutTokenize) {
  ScriptedServer server(no_tokenize_server());
  ASSERT_TRUE(server.start().ok());
  const std::string dir = temp_path("out");
  Ran r = run("bench --url " + server.base_url() + " --tokenizer " + kQwen +
              " --input-tokens 300 --concurrency 1 -n 3 --warmup 0 --out " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto s = summary(dir);
  EXPECT_EQ(s["config"]["prompt"]["input_tokens_method"], "tokenizer:qwen3.tokenizer.json");
  EXPECT_EQ(s["config"]["prompt"]["input_tokens"], 300);
  EXPECT_EQ(s["config"]["prompt"]["input_tokens_exact"], true);
  for (const auto& rec : records(dir)) {
    EXPECT_EQ(rec["requested_input_tokens"], 300);
    EXPECT_EQ(rec["input_tokens_method"], "tokenizer");
  }
  // What was sent is 300 tokens by the same tokenizer (loaded here on its own).
  auto tok = load_tokenizer(kQwen);
  ASSERT_TRUE(tok.ok()) << tok.error();
  int sent = 0;
  for (const auto& rec : server.records()) {
    const std::string p = prompt_of(rec);
    if (p.empty()) continue;
    EXPECT_EQ(*(*tok)->count(p), 300);
    ++sent;
  }
  EXPECT_EQ(sent, 3);  // no probe request: the tokenizer needs none
}

TEST(TokenizerCli, CalibratedPromptLengthsMatchTheServersUsage) {
  ScriptedServer server(no_tokenize_server());
  ASSERT_TRUE(server.start().ok());
  const std::string dir = temp_path("out");
  Ran r = run("bench --url " + server.base_url() +
              " --input-tokens 300 --concurrency 1 -n 3 --warmup 0 --out " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("calibrated from the server's usage.prompt_tokens"), std::string::npos)
      << r.out;
  auto s = summary(dir);
  EXPECT_EQ(s["config"]["prompt"]["input_tokens_method"], "usage_calibrated");
  auto recs = records(dir);
  ASSERT_EQ(recs.size(), 3u);
  for (const auto& rec : recs) {
    EXPECT_EQ(rec["input_tokens_method"], "usage_calibrated");
    EXPECT_EQ(rec["requested_input_tokens"], 300);
    EXPECT_EQ(rec["prompt_tokens"], 300);  // the server's own usage
  }
  EXPECT_GT(chat_requests(server), 3u);  // the probes came first
}

TEST(TokenizerCli, NoCalibrateApproximatesAndSaysSo) {
  ScriptedServer server(no_tokenize_server());
  ASSERT_TRUE(server.start().ok());
  const std::string dir = temp_path("out");
  Ran r = run("bench --url " + server.base_url() +
              " --no-calibrate --input-tokens 300 --concurrency 1 -n 2 --warmup 0 --out " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(summary(dir)["config"]["prompt"]["input_tokens_method"], "approximate");
  for (const auto& rec : records(dir)) {
    EXPECT_EQ(rec["input_tokens_method"], "approximate");
    EXPECT_EQ(rec["prompt_tokens"], 240);  // 300 / 1.25 words, one token each on this server
  }
  EXPECT_EQ(chat_requests(server), 2u);  // no probe
}

TEST(TokenizerCli, TheServersTokenizeWinsOverTheFile) {
  ScriptedServerOptions o = no_tokenize_server();
  o.tokenize_enabled = true;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  const std::string dir = temp_path("out");
  Ran r = run("bench --url " + server.base_url() + " --tokenizer " + kQwen +
              " --input-tokens 50 --concurrency 1 -n 1 --warmup 0 --out " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(summary(dir)["config"]["prompt"]["input_tokens_method"], "server_tokenize");
}

TEST(TokenizerCli, UnreachableLengthIsAnErrorNamingTheMinimum) {
  ScriptedServer server(no_tokenize_server());
  ASSERT_TRUE(server.start().ok());
  // Calibrated: the six-word per-request prefix alone is 6 tokens on this server.
  Ran r = run("bench --url " + server.base_url() +
              " --unique-prompts --input-tokens 3 --concurrency 1 -n 1 --warmup 0 --no-save");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("--input-tokens 3 cannot be reached"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("accepted: --input-tokens of at least 7"), std::string::npos) << r.out;
}

TEST(TokenizerCli, BadTokenizerFilesStopTheRunBeforeAnyRequest) {
  ScriptedServer server(no_tokenize_server());
  ASSERT_TRUE(server.start().ok());
  const std::string base = "bench --url " + server.base_url() + " -n 1 --no-save --tokenizer ";
  Ran r = run(base + "/nonexistent/tokenizer.json");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("--tokenizer: tokenizer file '/nonexistent/tokenizer.json' cannot be read"),
            std::string::npos)
      << r.out;
  const std::string wp = temp_path("wordpiece.json");
  std::ofstream(wp) << R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}})";
  r = run(base + wp);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("\"WordPiece\", which tokperf does not implement"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("accepted: a tokenizer.json with a byte-level BPE model"), std::string::npos)
      << r.out;
  const std::string junk = temp_path("junk.json");
  std::ofstream(junk) << "{\"model\": ";
  r = run("sim run --model llama-3.1-8b --gpu h100 -n 1 --no-save --tokenizer " + junk);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("not a JSON object"), std::string::npos) << r.out;
  EXPECT_EQ(server.request_count(), 0u);
}

TEST(TokenizerCli, SimRunCountsDatasetPromptsWithTheTokenizer) {
  const std::string data = temp_path("d.jsonl");
  const std::string texts[] = {"你好，世界！这是一个测试。", "The river runs past the old mill.",
                               "numbers 1234567 and emoji 😀👍🏽"};
  {
    std::ofstream out(data);
    for (const auto& t : texts)
      out << nlohmann::json{{"prompt", t}, {"output_tokens", 4}}.dump() << "\n";
  }
  const std::string dir = temp_path("out");
  Ran r = run("sim run --model llama-3.1-8b --gpu h100 --ignore-eos --tokenizer " + kQwen +
              " --dataset jsonl:" + data +
              " --dataset-sampling sequential --concurrency 1 -n 3 "
              "--warmup 0 --out " +
              dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("counted with tokenizer qwen3.tokenizer.json"), std::string::npos) << r.out;
  EXPECT_EQ(summary(dir)["config"]["prompt"]["input_tokens_method"],
            "tokenizer:qwen3.tokenizer.json");
  auto tok = load_tokenizer(kQwen);
  ASSERT_TRUE(tok.ok());
  std::multiset<int64_t> expected, got;
  for (const auto& t : texts) expected.insert(*(*tok)->count(t));
  for (const auto& rec : records(dir)) {
    got.insert(rec["requested_input_tokens"].get<int64_t>());
    EXPECT_EQ(rec["requested_input_tokens"], rec["prompt_tokens"]);  // the engine counted alike
    EXPECT_EQ(rec["input_tokens_method"], "tokenizer");
  }
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace tokperf
