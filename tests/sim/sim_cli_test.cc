// The simulator's command-line edges: `tokperf bench` without --url measures the built-in engine;
// `tokperf sim serve` starts, says where, and stops on --max-seconds; bad flags name themselves.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

struct Ran {
  int rc = -1;
  std::string out;  // stdout and stderr
};

Ran run(const std::string& args) {
  Ran r;
  FILE* p = popen((std::string(TOKPERF_BINARY).append(" ") + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(SimCli, BenchWithoutUrlMeasuresTheBuiltInEngine) {
  Ran r =
      run("bench -n 3 --warmup 0 --input-tokens 64 --output-tokens 4 --ignore-eos --no-progress "
          "--no-save --no-history --sim-model llama-3.1-8b --gpu h100 --dtype fp8");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("built-in simulated engine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Llama-3.1-8B (8.0B params) in fp8 on 1 x NVIDIA H100"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("model llama-3.1-8b"), std::string::npos) << r.out;
}

TEST(SimCli, BadFlagsAreNamed) {
  Ran r = run("bench --url http://127.0.0.1:1 --gpu h100");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("cannot be combined with --url"), std::string::npos) << r.out;
  r = run("bench --sim-model gpt-5");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("--sim-model 'gpt-5'"), std::string::npos) << r.out;
  r = run("sim serve --port 70000");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("--port 70000"), std::string::npos) << r.out;
  r = run("sim serve --model llama-2-70b --gpu rtx4090");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("cannot hold it"), std::string::npos) << r.out;
}

TEST(SimCli, ServeSaysWhereAndStopsOnMaxSeconds) {
  Ran r = run("sim serve --port 0 --max-seconds 0.2");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("listening on http://127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stopped (--max-seconds reached): 0 requests finished"), std::string::npos)
      << r.out;
}

}  // namespace
