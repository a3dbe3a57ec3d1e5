// `tokperf sim run` end to end: bench's flags and outputs in virtual time, capacity search, bad
// flags.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/scratch_dir.h"

namespace {

struct Ran {
  int rc = -1;
  std::string out;  // stdout, plus stderr when `merge`
};

Ran run(const std::string& args, bool merge = true) {
  Ran r;
  const std::string cmd =
      std::string(TOKPERF_BINARY).append(" sim run ") + args + (merge ? " 2>&1" : " 2>/dev/null");
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const char* kSmall =
    "--model llama-3.1-8b --gpu h100 --input-tokens 256 --output-tokens 16 "
    "--ignore-eos";

TEST(SimRunCli, SweepPrintsOneRowPerLevelWithItsConcurrencyAndSloGoodput) {
  Ran r = run(std::string(kSmall) +
                  " --concurrency 1,4,16 -n 20 --slo 'ttft:p95<=2s,tpot:p95<=100ms' --no-save "
                  "--json",
              false);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["command"], "sim run");
  ASSERT_EQ(j["levels"].size(), 3u);
  const int expected[] = {1, 4, 16};
  for (int i = 0; i < 3; ++i) {
    const auto& l = j["levels"][i];
    EXPECT_EQ(l["concurrency"], expected[i]);
    EXPECT_EQ(l["requests"]["sent"], 20);
    EXPECT_EQ(l["requests"]["ok"], 20);
    EXPECT_EQ(l["load"]["mode"], "closed_loop");
    EXPECT_EQ(l["slo"]["requests"], 20);
    EXPECT_TRUE(l["slo"].contains("goodput_rps"));
    EXPECT_GT(l["slo"]["goodput_rps"].get<double>(), 0);
  }
  // A bigger batch: more throughput, slower tokens (the roofline's shape).
  EXPECT_GT(j["levels"][2]["throughput"]["output_tokens_per_s"].get<double>(),
            j["levels"][0]["throughput"]["output_tokens_per_s"].get<double>());
  EXPECT_GT(j["levels"][2]["tpot_ms"]["p50"].get<double>(),
            j["levels"][0]["tpot_ms"]["p50"].get<double>());
}

TEST(SimRunCli, WritesSummaryAndRequestsJsonlLikeBench) {
  const std::string dir = tokperf::testing_support::scratch_dir("tokperf-simrun");
  Ran r = run(std::string(kSmall) + " --request-rate 4 --seed 3 -n 10 --no-history --out " + dir);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("send lag is 0 by construction"), std::string::npos) << r.out;
  std::ifstream s(dir + "/summary.json");
  ASSERT_TRUE(s.good());
  auto j = nlohmann::json::parse(s);
  ASSERT_EQ(j["levels"].size(), 1u);
  EXPECT_EQ(j["levels"][0]["load"]["mode"], "open_loop");
  EXPECT_EQ(j["levels"][0]["load"]["scheduled_arrivals"], 14);  // 4 warm-up (1 s) + 10
  EXPECT_EQ(j["levels"][0]["load"]["schedule_fingerprint"].get<std::string>().size(), 16u);
  std::ifstream jl(dir + "/requests.jsonl");
  std::string line;
  int lines = 0, measured = 0;
  while (std::getline(jl, line)) {
    auto rec = nlohmann::json::parse(line);
    ++lines;
    measured += rec["phase"] == "measure";
    EXPECT_EQ(rec["ok"], true);
    EXPECT_EQ(rec["output_tokens"], 16);
    EXPECT_EQ(rec["output_tokens_source"], "usage");
    EXPECT_EQ(rec["itl_ms"].size(), 15u);
    EXPECT_TRUE(rec.contains("intended_unix_us"));
    EXPECT_TRUE(rec.contains("ttft_from_intended_ms"));
  }
  EXPECT_EQ(lines, 14);
  EXPECT_EQ(measured, 10);
  EXPECT_TRUE(std::filesystem::exists(dir + "/timeseries.csv"));
  std::filesystem::remove_all(dir);
}

// Requests longer than the served context (Llama-2-7B: 4,096 tokens) get the 400 a server answers
// and the rest are served: a trace with one such prompt in five records 4 failures and 16
// successes and exits 0. A workload none of whose requests fit stops after 1,000 refusals in a
// row (a duration-bound closed loop would otherwise resend forever without time passing), saying
// why, and fails.
TEST(SimRunCli, RequestsBeyondTheServedContextFailAloneAndAllOfThemStopTheLevel) {
  const std::string trace = tokperf::testing_support::scratch_file("tokperf-simrun-ctx.jsonl");
  {
    std::ofstream f(trace);
    for (int i = 0; i < 20; ++i) {
      f << nlohmann::json{{"timestamp", i * 0.1},
                          {"input_tokens", i % 5 == 0 ? 5000 : 500},
                          {"output_tokens", 20}}
               .dump()
        << "\n";
    }
  }
  Ran mixed = run("--trace " + trace + " --no-save --no-history --json", false);
  std::filesystem::remove(trace);
  ASSERT_EQ(mixed.rc, 0) << mixed.out;
  const auto j = nlohmann::json::parse(mixed.out);
  EXPECT_EQ(j["levels"][0]["requests"]["ok"], 16);
  EXPECT_EQ(j["levels"][0]["requests"]["failed"], 4);
  EXPECT_TRUE(j["levels"][0]["load"]["stopped_early"].is_null());

  Ran none = run(
      "--model llama-3.1-8b --gpu h100 -c 2 --duration 10s --input-tokens 2000 --output-tokens 16 "
      "--max-model-len 1024 --no-save --no-history");
  EXPECT_EQ(none.rc, 1) << none.out;
  EXPECT_NE(none.out.find("refused 1000 requests in a row, the last because 2000 prompt + 16 "
                          "output tokens exceed the served context of 1024"),
            std::string::npos)
      << none.out;
}

TEST(SimRunCli, CapacitySearchGivesTheSameAnswerTwice) {
  const std::string args =
      std::string(kSmall) + " --capacity --slo 'tpot:p95<=15ms' --start 8 --max 512 -n 40";
  Ran a = run(args), b = run(args);
  ASSERT_EQ(a.rc, 0) << a.out;
  const auto line = [](const std::string& out) {
    const size_t at = out.rfind("max ");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_NE(line(a.out).find("concurrent (95% CI"), std::string::npos) << a.out;
  EXPECT_EQ(line(a.out), line(b.out));
}

// A --knob changes the simulated engine (a slower step, a slower token) and says so; the
// recorded deployment keeps it.
TEST(SimRunCli, KnobReplacesAPresetValueAndTheRunSaysSo) {
  const std::string args = std::string(kSmall) + " -c 4 -n 20 --no-save --json";
  Ran base = run(args, false);
  Ran slow = run(args + " --knob step_overhead_s=0.02", false);
  ASSERT_EQ(base.rc, 0) << base.out;
  ASSERT_EQ(slow.rc, 0) << slow.out;
  auto b = nlohmann::json::parse(base.out), s = nlohmann::json::parse(slow.out);
  const double tpot_base = b["levels"][0]["tpot_ms"]["p50"],
               tpot_slow = s["levels"][0]["tpot_ms"]["p50"];
  EXPECT_GT(tpot_slow, tpot_base + 15) << tpot_base << " -> " << tpot_slow;
  EXPECT_EQ(s["config"]["deployment"]["knobs"][0], "step_overhead_s=0.02");
  Ran text = run(std::string(kSmall) + " -c 2 -n 4 --no-save --knob step_overhead_s=0.02");
  EXPECT_NE(text.out.find("--knob step_overhead_s=0.02 replaces the vllm preset's values"),
            std::string::npos)
      << text.out;
}

// vLLM bench's --request-rate inf: every measured request sent at once, no warm-up.
TEST(SimRunCli, InfiniteRateSendsEveryRequestAtOnce) {
  Ran r = run(std::string(kSmall) + " --request-rate inf -n 12 --no-save --json", false);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["levels"].size(), 1u);
  const auto& l = j["levels"][0];
  EXPECT_EQ(l["concurrency"], 12);
  EXPECT_EQ(l["requests"]["sent"], 12);
  EXPECT_EQ(l["requests"]["ok"], 12);
}

// A closed loop of identical requests keeps its simulated users in step (real clients may drift
// apart): the run says so; drawn lengths, one user or an open loop do not get the note.
// Identical requests in a closed loop keep the places in the engine's steps that the first wave
// took. The serial front end (the vllm preset's 5.52 ms a request) spaces the first wave, so the
// first user's requests are served sooner than the others'; with no serial time every request
// shares its first step with the other users'. The note says which.
TEST(SimRunCli, IdenticalRequestsInAClosedLoopGetANoteThatTheyKeepInStep) {
  const std::string note = "keep the places their first requests took in the engine's steps";
  const std::string small = kSmall;
  auto measured_ttfts = [](const std::string& dir) {
    std::vector<double> ttft;
    std::ifstream jl(dir + "/requests.jsonl");
    std::string line;
    while (std::getline(jl, line)) {
      auto rec = nlohmann::json::parse(line);
      if (rec["phase"] == "measure") ttft.push_back(rec["ttft_ms"].get<double>());
    }
    std::sort(ttft.begin(), ttft.end());
    return ttft;
  };
  for (const bool serial : {true, false}) {
    const std::string dir = tokperf::testing_support::scratch_dir("tokperf-simrun-step");
    Ran r = run(small + " -c 4 -n 8 --no-history --out " + dir +
                (serial ? "" : " --knob request_overhead_s=0"));
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find(note), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(serial ? "hands them over 5.52 ms apart" : "all in the same steps"),
              std::string::npos)
        << r.out;
    const std::vector<double> ttft = measured_ttfts(dir);
    ASSERT_EQ(ttft.size(), 8u);
    if (serial) {
      EXPECT_LT(ttft.front(), 0.9 * ttft.back()) << r.out;
    } else {
      EXPECT_LT(ttft.back(), 1.01 * ttft.front()) << r.out;
    }
    std::filesystem::remove_all(dir);
  }
  for (const std::string& other :
       {small + " -c 1",
        std::string("--model llama-3.1-8b --gpu h100 --input-tokens uniform:100..300 "
                    "--output-tokens 16 --ignore-eos -c 4"),
        small + " --request-rate 4",
        std::string(
            "--model llama-3.1-8b --gpu h100 --input-tokens 256 --output-tokens 16 -c 4")}) {
    Ran r = run(other + " -n 8 --no-save --no-history");
    ASSERT_EQ(r.rc, 0) << other << ": " << r.out;
    EXPECT_EQ(r.out.find(note), std::string::npos) << other << ": " << r.out;
  }
}

// A level whose serial front end is busy most of the time (the vllm preset's 5.52 ms a request and
// 68.3 us a streamed token at 400 users of 128/128 tokens: busy 97%) gets a note that the front end's
// costs, the host CPU's, set its latencies; lighter levels, or the same level with a cheaper
// front end, do not.
TEST(SimRunCli, AFrontEndBoundLevelIsNamedWithTheFlagsThatSetItsCosts) {
  const std::string note = "front end bound: the serial front end";
  const std::string load =
      "--model llama-3.1-70b --gpu h100 --tp 8 --input-tokens 128 --output-tokens 128 "
      "--ignore-eos -n 400 --no-save --no-history";
  Ran r = run(load + " --concurrency 10,400");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(note), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("was busy for most of level c=400 ("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("c=10 ("), std::string::npos) << r.out;  // only the bound level is named
  EXPECT_NE(r.out.find("--frontend-us-per-token and --frontend-ms-per-request"), std::string::npos)
      << r.out;
  Ran cheap =
      run(load + " --concurrency 400 --frontend-us-per-token 40 --frontend-ms-per-request 0.5");
  ASSERT_EQ(cheap.rc, 0) << cheap.out;
  EXPECT_EQ(cheap.out.find(note), std::string::npos) << cheap.out;
  // One factor scales them all: 50 users do not bind the preset's front end, but do bind one on a
  // host a quarter as fast, and the note says what the costs became (the preset's 5.52 ms, x4).
  EXPECT_NE(r.out.find("--knob host_cpu_factor=N"), std::string::npos) << r.out;
  Ran fifty = run(load + " --concurrency 50");
  ASSERT_EQ(fifty.rc, 0) << fifty.out;
  EXPECT_EQ(fifty.out.find(note), std::string::npos) << fifty.out;
  Ran slow = run(load + " --concurrency 50 --knob host_cpu_factor=4");
  ASSERT_EQ(slow.rc, 0) << slow.out;
  EXPECT_NE(slow.out.find("was busy for most of level c=50 ("), std::string::npos) << slow.out;
  EXPECT_NE(slow.out.find("22.1 ms to set each request up"), std::string::npos) << slow.out;
}

TEST(SimRunCli, BadFlagsExit2NamingTheFlag) {
  struct Case {
    const char* args;
    const char* says;
  } cases[] = {
      {"--concurrency 0", "--concurrency"},
      {"--arrivals weird -r 5", "weird"},
      {"--capacity", "--slo"},
      {"--input-tokens 0", "--input-tokens"},
      {"--capacity --slo 'ttft:p95<=1s' --by speed", "--by 'speed'"},
      {"--model gpt-5", "gpt-5"},
      {"--concurrency 4 --request-rate 2", "give one of"},
      {"--knob overlap_schedule=yes", "NAME=NUMBER"},
      {"--knob warp_speed=9", "unknown knob 'warp_speed'"},
      {"--request-rate 2,inf", "inf alone"},
  };
  for (const auto& c : cases) {
    Ran r = run(std::string(c.args) + " --no-save");
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
  }
}

}  // namespace
