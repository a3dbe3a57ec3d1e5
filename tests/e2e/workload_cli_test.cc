// Workloads end to end (docs/WORKLOADS.md): datasets, length distributions, shared prefixes, trace
// formats and vLLM bench's flag names, run as a user runs them against the scripted server and the
// built-in simulator; bad files stop the run before any request.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/shell_run.h"
#include "support/scripted_server.h"

namespace tokperf {
namespace {

using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;

using Ran = testing_support::ShellRun;

Ran run(const std::string& args) {
  return testing_support::run_tokperf_shell(args, ::testing::TempDir() + "/tokperf_xdg_wl");
}

std::string temp_path(const std::string& name) {
  return testing_support::unique_temp_path("tokperf_wl_", name);
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
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

ScriptedServerOptions quick_server() {
  ScriptedServerOptions o;
  o.script.ttft_ms = 1;
  o.script.itl_ms = 1;
  o.script.tokens = 4;
  return o;
}

TEST(WorkloadCli, JsonlDatasetSendsItsPromptsMessagesAndLengths) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  const std::string data = write_file(
      "d.jsonl",
      "{\"prompt\": \"alpha prompt\", \"output_tokens\": 3}\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", "
      "\"content\": \"beta prompt\"}], \"output_tokens\": 7}\n");
  const std::string dir = temp_path("out");
  Ran r =
      run("bench --url " + server.base_url() + " --dataset jsonl:" + data +
          " --dataset-sampling sequential --concurrency 1 -n 4 --warmup 0 --out " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("cycles"), std::string::npos) << r.out;  // 4 requests, 2 entries
  int alpha = 0, beta = 0;
  for (const auto& rec : server.records()) {
    if (!rec.body.is_object() || !rec.body.contains("messages")) continue;
    const auto& m = rec.body["messages"];
    if (m.size() == 1 && m[0]["content"] == "alpha prompt") {
      ++alpha;
      EXPECT_EQ(rec.body["max_tokens"], 3);
    } else if (m.size() == 2 && m[0]["role"] == "system" && m[1]["content"] == "beta prompt") {
      ++beta;
      EXPECT_EQ(rec.body["max_tokens"], 7);
    }
  }
  EXPECT_EQ(alpha, 2);
  EXPECT_EQ(beta, 2);
  std::set<int64_t> asked;
  for (const auto& rec : records(dir)) asked.insert(rec["requested_output_tokens"].get<int64_t>());
  EXPECT_EQ(asked, (std::set<int64_t>{3, 7}));
}

TEST(WorkloadCli, AMalformedDatasetLineStopsTheRunBeforeAnyRequest) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  const std::string data = write_file("bad.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": 42}\n");
  Ran r = run("bench --url " + server.base_url() + " --dataset jsonl:" + data + " -n 2 --no-save");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find(data + " line 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"prompt\" must be a non-empty string"), std::string::npos) << r.out;
  EXPECT_TRUE(server.records().empty());

  const std::string empty = write_file("empty.json", "[]");
  r = run("bench --url " + server.base_url() + " --dataset sharegpt:" + empty + " --no-save");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("nothing to send"), std::string::npos) << r.out;

  r = run("bench --url " + server.base_url() + " --input-tokens gauss:5,1 --no-save");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("uniform:A..B"), std::string::npos) << r.out;
  r = run("bench --url " + server.base_url() + " --dataset csv:x --no-save");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(server.records().empty());
}

TEST(WorkloadCli, VllmFlagNamesRunTheSameLoad) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  const std::string dir = temp_path("vllm");
  Ran r = run("bench --base-url " + server.base_url() +
              " --num-prompts 12 --max-concurrency 3 --random-input-len 100 --random-output-len 8 "
              "--random-range-ratio 0.5 --seed 7 --warmup 0 --out " +
              dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto s = summary(dir);
  ASSERT_EQ(s["levels"].size(), 1u);
  EXPECT_EQ(s["levels"][0]["concurrency"], 3);
  EXPECT_EQ(s["levels"][0]["requests"]["sent"], 12);
  std::set<int64_t> inputs;
  for (const auto& rec : records(dir)) {
    const int64_t in = rec["requested_input_tokens"].get<int64_t>();
    const int64_t out = rec["requested_output_tokens"].get<int64_t>();
    EXPECT_GE(in, 50);
    EXPECT_LE(in, 150);
    EXPECT_GE(out, 4);
    EXPECT_LE(out, 12);
    inputs.insert(in);
  }
  EXPECT_GT(inputs.size(), 3u);  // drawn, not fixed
  const auto& w = s["levels"][0]["workload"];
  EXPECT_EQ(w["requested_input_tokens"]["count"], 12);
  EXPECT_GE(w["requested_input_tokens"]["min"].get<double>(), 50);
}

TEST(WorkloadCli, AzureTraceReplaysEveryEntryWithItsLengths) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  const std::string trace = write_file("az.csv",
                                       "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                       "2023-11-16 18:15:46.000,40,3\n"
                                       "2023-11-16 18:15:46.200,60,5\n"
                                       "2023-11-16 18:15:46.400,80,2\n");
  const std::string dir = temp_path("az");
  Ran r = run("bench --url " + server.base_url() + " --dataset azure:" + trace +
              " --trace-speed 4 --out " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::multiset<int64_t> outs;
  for (const auto& rec : records(dir)) outs.insert(rec["requested_output_tokens"].get<int64_t>());
  EXPECT_EQ(outs, (std::multiset<int64_t>{2, 3, 5}));
  EXPECT_EQ(summary(dir)["config"]["load"]["trace_entries"], 3);
}

TEST(WorkloadCli, SharedPrefixesHitTheBuiltInSimulatorsPrefixCache) {
  const std::string dir = temp_path("prefix");
  Ran r =
      run("bench --prefix-groups 2 --prefix-tokens 512 --input-tokens 64 --output-tokens 4 "
          "--ignore-eos --concurrency 1 -n 12 --out " +
          dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  int hits = 0;
  std::set<int> groups;
  for (const auto& rec : records(dir)) {
    ASSERT_TRUE(rec["cached_tokens"].is_number()) << rec.dump();
    groups.insert(rec["prefix_group"].get<int>());
    if (rec["cached_tokens"].get<int64_t>() >= 256) ++hits;  // most of the 512 shared tokens
  }
  EXPECT_EQ(groups, (std::set<int>{0, 1}));
  EXPECT_GE(hits, 10);  // all but each group's first request (warm-up included)
  const nlohmann::json s = summary(dir);
  const auto& cache = s["levels"][0]["workload"]["prefix_cache"];
  EXPECT_GE(cache["hit_rate"].get<double>(), 0.8);
  EXPECT_NE(r.out.find("prefix cache hit"), std::string::npos) << r.out;
}

// Virtual time, so the TTFT comparison is the engine's arithmetic, not this machine's speed.
TEST(WorkloadCli, SimRunSharedPrefixHasCacheHitsAndLowerTtftThanUniquePrompts) {
  const std::string common =
      "sim run --model llama-3.1-8b --gpu h100 --output-tokens 16 --ignore-eos --request-rate 4 "
      "-n 60 --no-save --json ";
  Ran shared = run(common + "--prefix-groups 4 --prefix-tokens 2000 --input-tokens 100");
  Ran unique = run(common + "--input-tokens 2100");  // no shared text: nothing to hit
  ASSERT_EQ(shared.rc, 0) << shared.out;
  ASSERT_EQ(unique.rc, 0) << unique.out;
  auto json_of = [](const std::string& out) {
    return nlohmann::json::parse(out.substr(out.find("{\n")));
  };
  const auto s = json_of(shared.out)["levels"][0];
  const auto u = json_of(unique.out)["levels"][0];
  EXPECT_GE(s["workload"]["prefix_cache"]["hit_rate"].get<double>(), 0.9);
  EXPECT_EQ(u["workload"]["prefix_cache"]["hits"], 0);
  EXPECT_NEAR(s["workload"]["requested_input_tokens"]["mean"].get<double>(),
              u["workload"]["requested_input_tokens"]["mean"].get<double>(), 10);
  EXPECT_LT(s["ttft_ms"]["p50"].get<double>(), u["ttft_ms"]["p50"].get<double>());
}

// Sessions on the simulator: with the prefix cache, each turn's history is served from it; with
// --no-prefix-caching every turn prefills its whole history, so TTFT grows with the turn (the
// source material's agent: 0.5 s -> 2.8 s by turn four), at the same prompt lengths.
TEST(WorkloadCli, SimRunSessionsWithoutPrefixCacheTtftGrowsWithTheTurn) {
  const std::string common =
      "sim run --model llama-3.1-8b --gpu h100 --concurrency 1 --turns 4 -n 8 --input-tokens 2000 "
      "--output-tokens 100 --ignore-eos --no-save --json ";
  Ran cached = run(common);
  Ran cold = run(common + "--no-prefix-caching");
  ASSERT_EQ(cached.rc, 0) << cached.out;
  ASSERT_EQ(cold.rc, 0) << cold.out;
  auto level_of = [](const std::string& out) {
    return nlohmann::json::parse(out.substr(out.find("{\n")))["levels"][0];
  };
  const auto c = level_of(cached.out);
  const auto n = level_of(cold.out);
  EXPECT_EQ(n["workload"]["prefix_cache"]["hits"], 0);
  EXPECT_GT(c["workload"]["prefix_cache"]["hits"].get<int64_t>(), 0);
  ASSERT_EQ(n["by_turn"].size(), 4u);
  ASSERT_EQ(c["by_turn"].size(), 4u);
  double last = 0;
  for (size_t k = 0; k < 4; ++k) {
    const double ttft = n["by_turn"][k]["ttft_ms"]["p50"].get<double>();
    EXPECT_GT(ttft, last) << "turn " << k + 1;
    last = ttft;
    EXPECT_EQ(n["by_turn"][k]["prompt_tokens"]["p50"], c["by_turn"][k]["prompt_tokens"]["p50"]);
  }
  EXPECT_LT(c["by_turn"][3]["ttft_ms"]["p50"].get<double>(),
            n["by_turn"][3]["ttft_ms"]["p50"].get<double>());
}

TEST(WorkloadCli, MooncakeTraceControlsPrefixHitsOnTheSimulator) {
  // Entries 2 and 3 repeat entry 1's first blocks; entry 4 shares nothing.
  const std::string trace = write_file(
      "mc.jsonl",
      "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [1, 2]}\n"
      "{\"timestamp\": 1000, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [1, 2]}\n"
      "{\"timestamp\": 2000, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [1, 3]}\n"
      "{\"timestamp\": 3000, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [9, "
      "8]}\n");
  const std::string dir = temp_path("mc");
  Ran r = run("sim run --model llama-3.1-8b --gpu h100 --ignore-eos --dataset mooncake:" + trace +
              " --out " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::map<int64_t, int64_t> cached_by_seq;
  for (const auto& rec : records(dir)) {
    cached_by_seq[rec["seq"].get<int64_t>()] = rec["cached_tokens"].get<int64_t>();
  }
  ASSERT_EQ(cached_by_seq.size(), 4u);
  EXPECT_EQ(cached_by_seq[0], 0);
  EXPECT_GE(cached_by_seq[1], 1000);  // everything but the last block
  EXPECT_GE(cached_by_seq[2], 500);   // the first 512-token block
  EXPECT_LT(cached_by_seq[2], 1000);
  EXPECT_EQ(cached_by_seq[3], 0);
}

}  // namespace
}  // namespace tokperf
