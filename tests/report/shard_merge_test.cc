// tokperf merge's checks (load_shards) on a real two-shard run kept in tests/data/merge/run/
// (bench --shard I/2 against the scripted server with faults), mutated copy by copy; and the
// golden merge: `tokperf merge` of those folders against figures computed independently from the
// fixture's records (tests/data/merge/expected.json, written by tests/data/merge/expected.py,
// numpy's linear percentiles re-implemented in plain Python).
#include "report/shard_merge.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "support/child_process.h"
#include "support/scratch_dir.h"

namespace tokperf {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kRun = std::string(TOKPERF_TEST_DATA).append("/merge/run");

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}
void write_json(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(2); }

// A writable copy of the fixture run.
std::string copy_run(const std::string& name) {
  const fs::path d = testing_support::scratch_dir("merge_" + name);
  fs::copy(kRun, d, fs::copy_options::recursive);
  return d.string();
}

std::string refusal(const std::vector<std::string>& args) {
  auto dirs = expand_shard_dirs(args);
  if (!dirs) return dirs.error();
  auto shards = load_shards(*dirs);
  return shards ? std::string("accepted") : shards.error();
}

void edit_summary(const std::string& shard_dir, const std::function<void(json&)>& f) {
  json s = read_json(fs::path(shard_dir) / "summary.json");
  f(s);
  write_json(fs::path(shard_dir) / "summary.json", s);
}

TEST(ShardMerge, TheFixtureFormsOneRun) {
  auto dirs = expand_shard_dirs({kRun});
  ASSERT_TRUE(dirs) << dirs.error();
  ASSERT_EQ(dirs->size(), 2u);
  auto shards = load_shards(*dirs);
  ASSERT_TRUE(shards) << shards.error();
  EXPECT_EQ((*shards)[0].index, 0);
  EXPECT_EQ((*shards)[1].index, 1);
  const std::vector<LevelRunInfo> levels = merge_level_infos(*shards);
  ASSERT_EQ(levels.size(), 1u);
  const int64_t sent0 = (*shards)[0].shard["levels"][0]["measured_sent"].get<int64_t>();
  const int64_t sent1 = (*shards)[1].shard["levels"][0]["measured_sent"].get<int64_t>();
  EXPECT_EQ(levels[0].measured_sent, sent0 + sent1);
  EXPECT_EQ(levels[0].send_lag_ns.size(),
            (*shards)[0].shard["levels"][0]["send_lag_ns"].size() +
                (*shards)[1].shard["levels"][0]["send_lag_ns"].size());
  EXPECT_EQ(levels[0].scheduled_arrivals,
            (*shards)[0].shard["levels"][0]["global"]["scheduled_arrivals"].get<int64_t>());
  const ShardHealthView h = shard_health(*shards);
  EXPECT_EQ(h.shards.size(), 2u);
  EXPECT_FALSE(h.bottleneck.empty());
}

TEST(ShardMerge, RefusesShardsOfDifferentRuns) {
  const std::string run = copy_run("differ");
  const std::string s1 = run + "/shard-1";
  edit_summary(s1, [](json& s) { s["config"]["load"]["seed"] = 7; });
  std::string e = refusal({run});
  EXPECT_NE(e.find("refusing to merge (nothing was written)"), std::string::npos) << e;
  EXPECT_NE(e.find("a different plan"), std::string::npos) << e;
  EXPECT_NE(e.find("load.seed"), std::string::npos) << e;

  edit_summary(s1, [](json& s) {
    s["config"]["load"]["seed"] =
        read_json(kRun + "/shard-0/summary.json")["config"]["load"]["seed"];
    s["config"]["target"]["base_url"] = "http://elsewhere:8000/v1";
  });
  e = refusal({run});
  EXPECT_NE(e.find("a different target (target.base_url"), std::string::npos) << e;

  fs::remove_all(run);
  fs::copy(kRun, run, fs::copy_options::recursive);
  edit_summary(s1, [](json& s) { s["tokperf_version"] = "9.9.9"; });
  e = refusal({run});
  EXPECT_NE(e.find("tokperf 9.9.9"), std::string::npos) << e;

  fs::remove_all(run);
  fs::copy(kRun, run, fs::copy_options::recursive);
  edit_summary(s1, [](json& s) { s["config"]["shard"]["count"] = 3; });
  e = refusal({run});
  EXPECT_NE(e.find("shard 1 of 3 but"), std::string::npos) << e;

  fs::remove_all(run);
  fs::copy(kRun, run, fs::copy_options::recursive);
  edit_summary(s1, [](json& s) { s["config"]["shard"]["start_at_unix_us"] = 1; });
  e = refusal({run});
  EXPECT_NE(e.find("--start-at"), std::string::npos) << e;
}

TEST(ShardMerge, RefusesDuplicateMissingAndUnfinishedShards) {
  const std::string run = copy_run("incomplete");
  std::string e = refusal({run + "/shard-0", run + "/shard-0"});
  EXPECT_NE(e.find("are both shard 0"), std::string::npos) << e;
  e = refusal({run + "/shard-1"});
  EXPECT_NE(e.find("shard 0 of 2 is missing"), std::string::npos) << e;

  edit_summary(run + "/shard-1", [](json& s) { s["exit_reason"] = "interrupted"; });
  e = refusal({run});
  EXPECT_NE(e.find("shard-1: the shard did not complete (exit_reason 'interrupted')"),
            std::string::npos)
      << e;
  fs::remove(run + "/shard-1/summary.json");
  e = refusal({run});
  EXPECT_NE(e.find("shard-1: no summary.json: this shard did not finish"), std::string::npos) << e;
  EXPECT_NE(e.find("its requests.jsonl holds what it sent"), std::string::npos) << e;
  fs::remove(run + "/shard-0/shard.json");
  e = refusal({run + "/shard-0"});
  EXPECT_NE(e.find("no shard.json"), std::string::npos) << e;

  e = refusal({run + "/no-such-folder"});
  EXPECT_NE(e.find("no such folder"), std::string::npos) << e;
  fs::create_directories(run + "/empty");
  e = refusal({run + "/empty"});
  EXPECT_NE(e.find("neither a shard's folder"), std::string::npos) << e;

  // A single-process run is no shard.
  const std::string single = copy_run("single") + "/shard-0";
  edit_summary(single, [](json& s) { s["config"]["shard"] = nullptr; });
  e = refusal({single});
  EXPECT_NE(e.find("a single-process run"), std::string::npos) << e;
}

TEST(ShardMerge, NamesTheBottleneckedShardOrSaysNoneWas) {
  const std::string run = copy_run("health");
  auto view = [&] {
    auto shards = load_shards(*expand_shard_dirs({run}));
    EXPECT_TRUE(shards) << shards.error();
    return shard_health(*shards);
  };
  for (int i = 0; i < 2; ++i) {
    edit_summary(run + "/shard-" + std::to_string(i), [](json& s) {
      s["client_health"]["warnings"] = json::array();
      s["client_health"]["loop_lag_ms"]["p99"] = 0.2;
    });
    const std::string path = run + "/shard-" + std::to_string(i) + "/shard.json";
    json sj = read_json(path);
    sj["levels"][0]["send_lag_exceeded"] = false;
    write_json(path, sj);
  }
  ShardHealthView v = view();
  EXPECT_EQ(v.bottleneck_index, -1);
  EXPECT_NE(v.bottleneck.find("no shard was a bottleneck"), std::string::npos) << v.bottleneck;

  edit_summary(run + "/shard-1", [](json& s) {
    s["client_health"]["warnings"] = json::array({"client event-loop lag P99 was 9 ms"});
  });
  v = view();
  EXPECT_EQ(v.bottleneck_index, 1);
  EXPECT_NE(v.bottleneck.find("shard 1 of 2 (host "), std::string::npos) << v.bottleneck;
  EXPECT_NE(v.bottleneck.find("was the bottleneck: client event-loop lag P99 was 9 ms"),
            std::string::npos)
      << v.bottleneck;

  // A shard that started a level after its lockstep boundary warns too; with two strained
  // shards the one with more warnings is named.
  json sj = read_json(run + "/shard-0/shard.json");
  sj["levels"][0]["late_start_ns"] = 250'000'000;
  write_json(run + "/shard-0/shard.json", sj);
  edit_summary(run + "/shard-0", [](json& s) {
    s["client_health"]["warnings"] = json::array({"client CPU was 95% of one core"});
  });
  v = view();
  EXPECT_EQ(v.bottleneck_index, 0);
  EXPECT_NE(v.bottleneck.find("2 of 2 shards' clients were strained; the worst, shard 0"),
            std::string::npos)
      << v.bottleneck;
  EXPECT_NE(v.shards[0]["warnings"][1].get<std::string>().find("started 250 ms after"),
            std::string::npos);
}

TEST(ShardMerge, GoldenMergedSummary) {
  const std::string out = testing_support::scratch_dir("merge_golden");
  const auto r =
      testing_support::run_child(TOKPERF_BINARY, {"merge", kRun, "--out", out, "--no-history"},
                                 {"XDG_DATA_HOME=" + ::testing::TempDir() + "/tokperf_xdg"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json m = read_json(fs::path(out) / "summary.json");
  const json want = read_json(std::string(TOKPERF_TEST_DATA).append("/merge/expected.json"));
  const json& l = m["levels"][0];
  EXPECT_EQ(m["command"], "merge");
  EXPECT_EQ(l["requests"]["sent"], want["sent"]);
  EXPECT_EQ(l["requests"]["ok"], want["ok"]);
  EXPECT_EQ(l["requests"]["errors_by_kind"], want["errors"]);
  EXPECT_EQ(l["load"]["schedule_fingerprint"], want["schedule_fingerprint"]);
  EXPECT_EQ(l["load"]["measured_sent"], want["measured_sent"]);
  EXPECT_EQ(l["load"]["scheduled_arrivals"], want["scheduled_arrivals"]);
  EXPECT_NEAR(l["load"]["achieved_rate_rps"].get<double>(), want["achieved_rate_rps"].get<double>(),
              1e-9);
  for (const char* metric : {"ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"}) {
    for (const char* stat : {"count", "p50", "p90", "p99", "max", "mean"}) {
      const double got = l[metric][stat].get<double>();
      const double exp = want[metric][stat].get<double>();
      EXPECT_NEAR(got, exp, 1e-9 * std::max(1.0, std::abs(exp))) << metric << "." << stat;
    }
  }
  EXPECT_EQ(m["shards"].size(), 2u);
  EXPECT_EQ(m["config"]["shard"]["merged"], true);
  EXPECT_FALSE(m["config"]["shard"].contains("index"));  // a merge is no one shard
  EXPECT_TRUE(fs::exists(fs::path(out) / "report.html"));
  EXPECT_TRUE(fs::exists(fs::path(out) / "timeseries.csv"));
  // The merged requests.jsonl is the shards' records, every one once.
  auto count_lines = [](const fs::path& p) {
    std::ifstream in(p);
    int64_t n = 0;
    std::string line;
    while (std::getline(in, line)) n += !line.empty();
    return n;
  };
  EXPECT_EQ(count_lines(fs::path(out) / "requests.jsonl"),
            count_lines(kRun + "/shard-0/requests.jsonl") +
                count_lines(kRun + "/shard-1/requests.jsonl"));
}

}  // namespace
}  // namespace tokperf
