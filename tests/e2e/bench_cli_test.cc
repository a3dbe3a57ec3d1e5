// The `tokperf bench` command as a user runs it: a child process against the scripted server.
// Exit codes, messages for bad input, output files, secrets kept out of every output, Ctrl-C.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/scratch_dir.h"
#include "support/scripted_server.h"

namespace tokperf {
namespace {

using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;

struct Child {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs tokperf with args; optionally sends SIGINT after interrupt_after_ms.
Child run_tokperf(std::vector<std::string> args, int interrupt_after_ms = -1,
                  std::vector<std::string> env = {}) {
  std::string base = testing_support::scratch_file("tokperf_cli");
  std::string out_path = base + ".out", err_path = base + ".err";
  // Everything the child needs is built before the fork: the scripted server's thread may hold the
  // allocator's lock at the moment of fork(), so the child makes only async-signal-safe calls.
  std::string bin = TOKPERF_BINARY;
  std::vector<char*> argv;
  argv.push_back(bin.data());
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Never touch the user's own history store.
  std::vector<std::string> overrides = env;
  overrides.push_back("XDG_DATA_HOME=" + ::testing::TempDir() + "/tokperf_xdg");
  auto overridden = [&](const char* kv) {
    for (const auto& o : overrides) {
      size_t n = o.find('=') + 1;
      if (std::strncmp(kv, o.c_str(), n) == 0) return true;
    }
    return false;
  };
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!overridden(*e)) env_strings.emplace_back(*e);
  }
  env_strings.insert(env_strings.end(), overrides.begin(), overrides.end());
  std::vector<char*> envp;
  for (auto& kv : env_strings) envp.push_back(kv.data());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    execve(bin.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  if (interrupt_after_ms >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(interrupt_after_ms));
    kill(pid, SIGINT);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Child c;
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  c.out = slurp(out_path);
  c.err = slurp(err_path);
  return c;
}

std::string temp_dir(const char* name) { return testing_support::scratch_dir(name); }

TEST(BenchCli, BadFlagsExitWithUsageAndSayWhatIsAccepted) {
  Child c = run_tokperf({"bench", "--url", "http://127.0.0.1:1", "--concurrency", "0"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("--concurrency"), std::string::npos) << c.err;
  c = run_tokperf({"bench", "--url", "http://127.0.0.1:1", "--api", "embeddings"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("accepted: chat, completions"), std::string::npos) << c.err;
  c = run_tokperf({"bench", "--url", "http://127.0.0.1:1", "--timeout", "soon"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("500ms"), std::string::npos) << c.err;
  c = run_tokperf({"bench", "--url", "127.0.0.1:8000"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("http://"), std::string::npos) << c.err;
  c = run_tokperf({"bench", "--url", "http://127.0.0.1:1", "--extra-body", "{nope"});
  EXPECT_EQ(c.exit_code, 2);
  c = run_tokperf({"bench", "--nonsense"});
  EXPECT_EQ(c.exit_code, 2);
}

TEST(BenchCli, UnreachableServerFailsBeforeAnyLoadNamingTheUrl) {
  // Port 1 on loopback: nothing listens there.
  Child c = run_tokperf({"bench", "--url", "http://127.0.0.1:1/v1", "--requests", "3"});
  EXPECT_EQ(c.exit_code, 3);
  EXPECT_NE(c.err.find("http://127.0.0.1:1/v1"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("connect"), std::string::npos) << c.err;
}

TEST(BenchCli, WritesSummaryAndOneRecordPerRequestAndNeverTheKey) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 5;
  o.script.itl_ms = 2;
  o.script.tokens = 5;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  std::string dir = temp_dir("bench_out");
  Child c = run_tokperf({"bench", "--url", server.base_url(), "--concurrency", "2,4", "--requests",
                         "6", "--input-tokens", "50", "--output-tokens", "5", "--out", dir,
                         "--header", "X-Api-Key: also-secret", "--json"},
                        -1, {"OPENAI_API_KEY=sk-very-secret"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto summary = nlohmann::json::parse(slurp(dir + "/summary.json"));
  EXPECT_EQ(summary, nlohmann::json::parse(c.out));  // --json prints the same document
  ASSERT_EQ(summary["levels"].size(), 2u);
  std::ifstream in(dir + "/requests.jsonl");
  std::string line;
  int measured = 0, warmup = 0;
  while (std::getline(in, line)) {
    auto r = nlohmann::json::parse(line);
    (r["phase"] == "measure" ? measured : warmup)++;
    EXPECT_TRUE(r["ok"].get<bool>());
    EXPECT_EQ(r["output_tokens"], 5);
    EXPECT_EQ(r["output_tokens_source"], "usage");
  }
  EXPECT_EQ(measured, 12);
  EXPECT_EQ(warmup, 6);  // one per slot and level: 2 + 4
  for (const auto& rec : server.records()) EXPECT_EQ(rec.authorization, "Bearer sk-very-secret");
  for (const std::string& text : {c.out, c.err, slurp(dir + "/summary.json"),
                                  slurp(dir + "/requests.jsonl")}) {
    EXPECT_EQ(text.find("sk-very-secret"), std::string::npos);
    EXPECT_EQ(text.find("also-secret"), std::string::npos);
  }
  // The prompt length came from the server's tokenizer, so it is exact.
  EXPECT_NE(c.err.find("exact"), std::string::npos) << c.err;
}

TEST(BenchCli, ThreadsSpreadsTheRunOverLoopsRecordsTheCountAndRejectsBadValues) {
  for (const char* bad : {"0", "-2", "257", "many"}) {
    Child c = run_tokperf({"bench", "--url", "http://127.0.0.1:1", "--threads", bad});
    EXPECT_EQ(c.exit_code, 2) << bad;
    EXPECT_NE(c.err.find("--threads"), std::string::npos) << c.err;
  }
  ScriptedServerOptions o;
  o.script.ttft_ms = 2;
  o.script.itl_ms = 1;
  o.script.tokens = 3;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  std::string dir = temp_dir("bench_threads");
  // Three loops asked for, but the largest level has two slots: two are used, with a note.
  Child c = run_tokperf({"bench", "--url", server.base_url(), "--concurrency", "1,2", "--requests",
                         "5", "--output-tokens", "3", "--threads", "3", "--out", dir});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("client: 2 event loops"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("--threads 3: 2 event loops used"), std::string::npos) << c.out;
  auto summary = nlohmann::json::parse(slurp(dir + "/summary.json"));
  EXPECT_EQ(summary["config"]["load"]["threads"], 2);
  ASSERT_EQ(summary["client_health"]["loops"].size(), 2u);
  for (const auto& l : summary["levels"]) EXPECT_EQ(l["requests"]["sent"], 5) << l.dump();
  std::ifstream in(dir + "/requests.jsonl");
  std::string line;
  std::set<std::string> ids;
  int lines = 0;
  while (std::getline(in, line)) {
    ids.insert(nlohmann::json::parse(line)["request_id"].get<std::string>());
    ++lines;
  }
  EXPECT_EQ(lines, 13);  // 1 + 2 warm-up, 5 + 5 measured
  EXPECT_EQ(ids.size(), 13u);
}

TEST(BenchCli, RefusedKeyIsReportedAsSuch) {
  ScriptedServerOptions o;
  o.script.fault = testing_support::Fault::kHttp401;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  Child c = run_tokperf({"bench", "--url", server.base_url(), "--model", "m", "--requests", "2",
                         "--warmup", "0", "--prompt", "hi", "--no-save"});
  EXPECT_EQ(c.exit_code, 1) << c.err;  // every request failed
  EXPECT_NE(c.out.find("auth"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("refused"), std::string::npos) << c.out;
}

TEST(BenchCli, CtrlCStopsWritesEverythingAndExits130) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 20;
  o.script.itl_ms = 20;
  o.script.tokens = 10;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  std::string dir = temp_dir("bench_int");
  Child c = run_tokperf({"bench", "--url", server.base_url(), "--concurrency", "4", "--requests",
                         "100000", "--out", dir, "--prompt", "hi"},
                        /*interrupt_after_ms=*/1500);
  EXPECT_EQ(c.exit_code, 130) << c.err;
  EXPECT_NE(c.err.find("interrupted"), std::string::npos) << c.err;
  auto summary = nlohmann::json::parse(slurp(dir + "/summary.json"));
  EXPECT_EQ(summary["exit_reason"], "interrupted");
  std::ifstream in(dir + "/requests.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;  // every line complete
    lines++;
  }
  EXPECT_GT(lines, 4);
}

TEST(BenchCli, EveryApiRunsAgainstTheBuiltInSimulatorAndRecordsServerTimings) {
  // Without --url, --api picks the simulated server's path for that protocol.
  std::string dir = temp_dir("bench_ollama");
  Child c =
      run_tokperf({"bench", "--api", "ollama", "--requests", "3", "--concurrency", "1",
                   "--input-tokens", "40", "--output-tokens", "6", "--ignore-eos", "--out", dir});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::ifstream in(dir + "/requests.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    auto r = nlohmann::json::parse(line);
    ++lines;
    EXPECT_TRUE(r["ok"].get<bool>()) << line;
    EXPECT_EQ(r["output_tokens"], 6);
    EXPECT_EQ(r["server_timings_source"], "ollama.durations");
    ASSERT_TRUE(r["server_prompt_ms"].is_number()) << line;
    EXPECT_LE(r["server_prompt_ms"].get<double>(), r["ttft_ms"].get<double>());
    EXPECT_TRUE(r["server_decode_ms"].is_number());
    EXPECT_EQ(r["server_predicted_tokens"], 6);
    EXPECT_TRUE(r["server_queue_ms"].is_null());  // Ollama does not report it
  }
  EXPECT_GE(lines, 3);
  // OpenAI chat against the simulator reports no server timings: the fields are absent.
  dir = temp_dir("bench_chat_no_timings");
  c = run_tokperf(
      {"bench", "--requests", "2", "--concurrency", "1", "--output-tokens", "3", "--out", dir});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::ifstream in2(dir + "/requests.jsonl");
  ASSERT_TRUE(std::getline(in2, line));
  EXPECT_FALSE(nlohmann::json::parse(line).contains("server_prompt_ms")) << line;
}

TEST(BenchCli, ApiAutoProbesOnceAndSaysWhatItChose) {
  Child c = run_tokperf(
      {"bench", "--api", "auto", "--requests", "2", "--concurrency", "1", "--output-tokens", "3"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.err.find("--api auto chose chat"), std::string::npos) << c.err;
  c = run_tokperf({"bench", "--url", "http://127.0.0.1:1", "--api", "auto", "--requests", "1"});
  EXPECT_EQ(c.exit_code, 3) << c.err;  // unreachable: named, before any load
  EXPECT_NE(c.err.find("127.0.0.1:1"), std::string::npos) << c.err;
}

}  // namespace
}  // namespace tokperf
