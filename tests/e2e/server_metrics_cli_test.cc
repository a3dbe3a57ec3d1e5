// `tokperf bench --server-metrics` as a user runs it, against the built-in simulated engine: the
// server view lands in the console, summary.json and timeseries.csv; a metrics URL that is down
// leaves the benchmark running and the report saying why the view is missing.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/scratch_dir.h"

namespace tokperf {
namespace {

struct CliRun {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CliRun tokperf(const std::string& args, const std::string& tag) {
  const std::string base = testing_support::scratch_file("tokperf_sm" + tag);
  const std::string cmd = "XDG_DATA_HOME=" + ::testing::TempDir() + "/tokperf_xdg " +
                          std::string(TOKPERF_BINARY).append(" ") + args + " > " + base + ".out 2> " +
                          base + ".err";
  CliRun r;
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  return r;
}

const char* kLoad =
    "bench --concurrency 2 --requests 6 --output-tokens 8 --no-progress "
    "--server-metrics-interval 200ms";

TEST(ServerMetricsCli, BuiltInEngineGivesTheServerView) {
  const std::string dir = ::testing::TempDir() + "/tokperf_sm_ok_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  CliRun r = tokperf(std::string(kLoad) + " --server-metrics --out " + dir, "ok");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("server view (vLLM, 1 URL)"), std::string::npos) << r.out;
  auto summary = nlohmann::json::parse(slurp(dir + "/summary.json"));
  EXPECT_EQ(summary["server"]["status"], "ok");
  const auto& level = summary["levels"][0]["server"];
  EXPECT_EQ(level["engine"], "vLLM");
  EXPECT_TRUE(level["ttft_decomposition"]["prefill_mean_ms"].is_number());
  EXPECT_TRUE(level["concepts"]["generation_tokens"]["delta"].is_number());
  const std::string ts = slurp(dir + "/timeseries.csv");
  EXPECT_NE(ts.substr(0, ts.find('\n')).find("server_running"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ServerMetricsCli, AMetricsUrlThatIsDownLeavesTheBenchmarkRunning) {
  const std::string dir = ::testing::TempDir() + "/tokperf_sm_down_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  CliRun r = tokperf(std::string(kLoad) + " --server-metrics http://127.0.0.1:1/metrics --out " + dir,
                  "down");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("did not answer usable metrics"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("server view: missing (http://127.0.0.1:1/metrics"), std::string::npos)
      << r.out;
  auto summary = nlohmann::json::parse(slurp(dir + "/summary.json"));
  EXPECT_EQ(summary["server"]["status"], "missing");
  EXPECT_NE(summary["server"]["missing_reason"].get<std::string>().find("scrapes failed"),
            std::string::npos);
  EXPECT_EQ(summary["levels"][0]["requests"]["ok"], 6);
  std::filesystem::remove_all(dir);
}

TEST(ServerMetricsCli, ABadUrlOrIntervalIsRefusedSayingWhatIsAccepted) {
  CliRun r = tokperf("bench --server-metrics notaurl --requests 1", "bad");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("--server-metrics 'notaurl' is not a URL"), std::string::npos) << r.err;
  CliRun i = tokperf("bench --server-metrics --server-metrics-interval 1ms --requests 1", "badi");
  EXPECT_NE(i.rc, 0);
  EXPECT_NE(i.err.find("at least 10ms"), std::string::npos) << i.err;
}

}  // namespace
}  // namespace tokperf
