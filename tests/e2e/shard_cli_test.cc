// Sharded bench end to end: N `tokperf bench --shard I/N` processes against the scripted server,
// merged with `tokperf merge`, beside one process running the same plan. Asserts behaviour (the
// same schedule, the same counts, statistics equal to those of the shards' own records, merge
// refusing what does not belong together), never timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "metrics/stats.h"
#include "support/child_process.h"
#include "support/scratch_dir.h"
#include "support/scripted_server.h"

namespace tokperf {
namespace {

using nlohmann::json;
using testing_support::ChildProcess;
using testing_support::ChildResult;
using testing_support::run_child;
using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;
namespace fs = std::filesystem;

// The child never touches the user's history, nor takes a launcher's rank from the test's own
// environment.
std::vector<std::string> clean_env() {
  return {"XDG_DATA_HOME=" + ::testing::TempDir() + "/tokperf_xdg",
          "OMPI_COMM_WORLD_RANK",
          "OMPI_COMM_WORLD_SIZE",
          "PMIX_RANK",
          "SLURM_PROCID",
          "SLURM_NTASKS",
          "SLURM_ARRAY_TASK_ID",
          "JOB_COMPLETION_INDEX"};
}

ChildResult tokperf(std::vector<std::string> args) {
  return run_child(TOKPERF_BINARY, std::move(args), clean_env());
}

std::string temp_dir(const std::string& name) { return testing_support::scratch_dir(name); }

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::vector<json> read_records(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

// Runs `shards` shard processes at once, each with --shard I/N, into dir/shard-I.
void run_shards(const std::vector<std::string>& plan, int shards, const std::string& dir,
                const std::vector<std::string>& extra = {}) {
  std::vector<std::unique_ptr<ChildProcess>> kids;
  for (int i = 0; i < shards; ++i) {
    std::vector<std::string> args = plan;
    args.insert(args.end(), {"--shard", fmt::format("{}/{}", i, shards), "--out", dir});
    args.insert(args.end(), extra.begin(), extra.end());
    kids.push_back(std::make_unique<ChildProcess>(TOKPERF_BINARY, args, clean_env()));
  }
  for (int i = 0; i < shards; ++i) {
    ChildResult r = kids[static_cast<size_t>(i)]->wait();
    ASSERT_EQ(r.exit_code, 0) << "shard " << i << ":\n" << r.err << r.out;
    EXPECT_NE(r.out.find(fmt::format("shard {} of {} (from --shard)", i, shards)),
              std::string::npos)
        << r.out;
  }
}

std::vector<double> measured_values(const std::vector<json>& records, const char* field) {
  std::vector<double> v;
  for (const json& r : records) {
    if (r["phase"] != "measure" || !r["ok"].get<bool>()) continue;
    const json& f = r[field];
    if (f.is_array()) {
      for (const json& x : f) v.push_back(x.get<double>());
    } else if (f.is_number()) {
      v.push_back(f.get<double>());
    }
  }
  return v;
}

class ShardCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ScriptedServerOptions o;
    o.script.ttft_ms = 4;
    o.script.itl_ms = 2;
    o.script.tokens = 5;
    o.script.jitter_ms = 1;
    server_ = std::make_unique<ScriptedServer>(o);
    ASSERT_TRUE(server_->start().ok());
  }
  std::vector<std::string> plan(std::vector<std::string> load) const {
    std::vector<std::string> a = {
        "bench",           "--url", server_->base_url(), "--input-tokens", "20",
        "--output-tokens", "5",     "--no-progress",     "--no-history"};
    a.insert(a.end(), load.begin(), load.end());
    return a;
  }
  std::unique_ptr<ScriptedServer> server_;
};

TEST_F(ShardCli, OpenLoopShardsMergeIntoTheSingleProcessScheduleWithExactStatistics) {
  const std::string root = temp_dir("shard_open");
  const auto load =
      plan({"--request-rate", "60", "--requests", "36", "--warmup", "0", "--seed", "11"});
  // A shared start a little ahead, computed once as a launcher script would.
  const std::string start_at = fmt::format("{:.3f}", wall_us() / 1e6 + 1.5);
  run_shards(load, 3, root + "/shards", {"--start-at", start_at});
  auto single_args = load;
  single_args.insert(single_args.end(), {"--out", root + "/single"});
  ChildResult single = tokperf(single_args);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  ChildResult merged =
      tokperf({"merge", root + "/shards", "--out", root + "/merged", "--no-history"});
  ASSERT_EQ(merged.exit_code, 0) << merged.err << merged.out;
  EXPECT_NE(merged.out.find("tokperf merge: 3 shards"), std::string::npos) << merged.out;

  const json m = read_json(root + "/merged/summary.json");
  const json s = read_json(root + "/single/summary.json");
  ASSERT_EQ(m["levels"].size(), 1u);
  const json& ml = m["levels"][0];
  const json& sl = s["levels"][0];
  // The same plan: the same schedule and the same request counts.
  EXPECT_EQ(ml["load"]["schedule_fingerprint"], sl["load"]["schedule_fingerprint"]);
  EXPECT_EQ(ml["load"]["scheduled_arrivals"], sl["load"]["scheduled_arrivals"]);
  EXPECT_EQ(ml["load"]["measured_sent"], sl["load"]["measured_sent"]);
  EXPECT_EQ(ml["load"]["target_rate_rps"], sl["load"]["target_rate_rps"]);
  EXPECT_EQ(ml["load"]["scheduled_rate_rps"], sl["load"]["scheduled_rate_rps"]);
  EXPECT_EQ(ml["requests"]["sent"], sl["requests"]["sent"]);
  EXPECT_EQ(ml["requests"]["sent"], 36);
  EXPECT_EQ(m["config"]["load"], s["config"]["load"]);
  EXPECT_EQ(m["command"], "merge");
  ASSERT_EQ(m["shards"].size(), 3u);
  // The console names the bottlenecked shard (or says none was) as summary.json does.
  ASSERT_TRUE(m["shard_bottleneck"].is_string());
  EXPECT_NE(merged.out.find("shards: " + m["shard_bottleneck"].get<std::string>()),
            std::string::npos)
      << merged.out;

  // Every shard record, once, unchanged; the statistics are those of exactly these records.
  std::vector<json> shard_records;
  std::set<uint64_t> seqs;
  for (int i = 0; i < 3; ++i) {
    const json sh = read_json(fmt::format("{}/shards/shard-{}/summary.json", root, i));
    EXPECT_EQ(sh["config"]["shard"]["index"], i);
    EXPECT_EQ(sh["config"]["shard"]["count"], 3);
    EXPECT_FALSE(sh["config"]["shard"]["host"].get<std::string>().empty());
    EXPECT_TRUE(sh["config"]["shard"]["clock"].is_object());
    EXPECT_TRUE(sh["config"]["shard"]["start_at_unix_us"].is_number());
    // The shard's own share of the schedule: arrival i of the level goes to shard i mod 3.
    EXPECT_EQ(sh["levels"][0]["load"]["schedule_fingerprint"], sl["load"]["schedule_fingerprint"]);
    EXPECT_EQ(sh["levels"][0]["load"]["scheduled_arrivals"], 12);
    for (json& r : read_records(fmt::format("{}/shards/shard-{}/requests.jsonl", root, i))) {
      EXPECT_EQ(r["seq"].get<uint64_t>() % 3, static_cast<uint64_t>(i));
      EXPECT_TRUE(seqs.insert(r["seq"].get<uint64_t>()).second) << "duplicate seq " << r["seq"];
      shard_records.push_back(std::move(r));
    }
  }
  const std::vector<json> merged_records = read_records(root + "/merged/requests.jsonl");
  ASSERT_EQ(merged_records.size(), shard_records.size());
  std::multiset<std::string> a, b;
  for (const json& r : shard_records) a.insert(r.dump());
  for (const json& r : merged_records) b.insert(r.dump());
  EXPECT_TRUE(a == b) << "merged requests.jsonl is not the shards' records";
  for (const char* field : {"ttft_ms", "itl_ms", "e2e_ms", "tpot_ms"}) {
    const DistStats want = compute_dist_stats(measured_values(shard_records, field));
    const json& got = ml[field];
    EXPECT_EQ(got["count"].get<int64_t>(), want.count) << field;
    EXPECT_EQ(got["p50"].get<double>(), want.p50) << field;
    EXPECT_EQ(got["p90"].get<double>(), want.p90) << field;
    EXPECT_EQ(got["p99"].get<double>(), want.p99) << field;
    EXPECT_EQ(got["max"].get<double>(), want.max) << field;
    EXPECT_DOUBLE_EQ(got["mean"].get<double>(), want.mean) << field;
  }
  EXPECT_TRUE(fs::exists(root + "/merged/report.html"));
  EXPECT_TRUE(fs::exists(root + "/merged/timeseries.csv"));

  // Shards that do not form the run are refused, and nothing is written.
  ChildResult missing = tokperf(
      {"merge", root + "/shards/shard-0", root + "/shards/shard-1", "--out", root + "/partial"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("shard 2 of 3 is missing"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(root + "/partial"));
  ChildResult mixed =
      tokperf({"merge", root + "/shards", root + "/single", "--out", root + "/mixed"});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("single-process run"), std::string::npos) << mixed.err;
  EXPECT_FALSE(fs::exists(root + "/mixed"));
  fs::remove(root + "/shards/shard-1/summary.json");  // as a shard that crashed leaves it
  ChildResult crashed = tokperf({"merge", root + "/shards", "--out", root + "/crashed"});
  EXPECT_EQ(crashed.exit_code, 2);
  EXPECT_NE(crashed.err.find("shard-1: no summary.json: this shard did not finish"),
            std::string::npos)
      << crashed.err;
  EXPECT_FALSE(fs::exists(root + "/crashed"));
}

TEST_F(ShardCli, ClosedLoopShardsSplitTheConcurrencyAndTheRequestCount) {
  const std::string root = temp_dir("shard_closed");
  const auto load = plan({"--concurrency", "3", "--requests", "20"});
  run_shards(load, 2, root + "/shards");
  auto single_args = load;
  single_args.insert(single_args.end(), {"--out", root + "/single"});
  ASSERT_EQ(tokperf(single_args).exit_code, 0);
  ChildResult merged = tokperf({"merge", root + "/shards/shard-1", root + "/shards/shard-0",
                                "--out", root + "/merged", "--no-history"});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  const json m = read_json(root + "/merged/summary.json");
  const json s = read_json(root + "/single/summary.json");
  EXPECT_EQ(m["levels"][0]["requests"]["sent"], s["levels"][0]["requests"]["sent"]);
  EXPECT_EQ(m["levels"][0]["requests"]["sent"], 20);
  EXPECT_EQ(m["levels"][0]["label"], s["levels"][0]["label"]);
  const json s0 = read_json(root + "/shards/shard-0/summary.json");
  const json s1 = read_json(root + "/shards/shard-1/summary.json");
  EXPECT_EQ(s0["levels"][0]["requests"]["sent"].get<int>() +
                s1["levels"][0]["requests"]["sent"].get<int>(),
            20);
  // Two different runs' shards do not merge.
  ChildResult other = tokperf({"merge", root + "/shards/shard-0", root + "/shards/shard-1",
                               root + "/shards/shard-0", "--out", root + "/dup"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("are both shard 0"), std::string::npos) << other.err;
}

TEST_F(ShardCli, SweepLevelsStartOnTheSharedBoundaries) {
  const std::string root = temp_dir("shard_sweep");
  const auto load =
      plan({"--request-rate", "20,40", "--duration", "1s", "--warmup", "0", "--seed", "5"});
  const int64_t start_us = wall_us() + 1'500'000;
  const std::string start_at = fmt::format("{}.{:06d}", start_us / 1'000'000, start_us % 1'000'000);
  run_shards(load, 2, root + "/shards", {"--start-at", start_at, "--level-slot", "1.5s"});
  auto single_args = load;
  single_args.insert(single_args.end(), {"--out", root + "/single"});
  ASSERT_EQ(tokperf(single_args).exit_code, 0);
  ASSERT_EQ(
      tokperf({"merge", root + "/shards", "--out", root + "/merged", "--no-history"}).exit_code, 0);
  // No level starts before its boundary start + k x slot; a late one says by how much.
  for (int i = 0; i < 2; ++i) {
    const json sj = read_json(fmt::format("{}/shards/shard-{}/shard.json", root, i));
    ASSERT_EQ(sj["levels"].size(), 2u);
    for (int k = 0; k < 2; ++k) {
      const json& l = sj["levels"][static_cast<size_t>(k)];
      const int64_t boundary_ns = (start_us + k * 1'500'000) * 1000;
      EXPECT_GE(l["start_unix_ns"].get<int64_t>() + 1'000'000, boundary_ns) << "shard " << i;
      EXPECT_GE(l["late_start_ns"].get<int64_t>(), 0);
    }
  }
  const json m = read_json(root + "/merged/summary.json");
  const json s = read_json(root + "/single/summary.json");
  ASSERT_EQ(m["levels"].size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(m["levels"][k]["load"]["schedule_fingerprint"],
              s["levels"][k]["load"]["schedule_fingerprint"]);
    EXPECT_EQ(m["levels"][k]["load"]["scheduled_arrivals"],
              s["levels"][k]["load"]["scheduled_arrivals"]);
    EXPECT_EQ(m["levels"][k]["label"], s["levels"][k]["label"]);
  }
  EXPECT_EQ(m["config"]["shard"]["level_slot_s"], 1.5);
  // Phases that count requests have no fixed length: the slot must be given.
  auto counted = plan({"--request-rate", "20,40", "--requests", "5", "--shard", "0/2", "--start-at",
                       start_at, "--out", root + "/counted"});
  ChildResult r = tokperf(counted);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--level-slot"), std::string::npos) << r.err;
}

// Shards with several event loops each (--threads 2): every shard splits its own share over its
// loops, and the merge is still the single process's plan (one loop): the same schedule, the same
// counts, each request once.
TEST_F(ShardCli, ShardsWithTwoLoopsEachMergeIntoTheSingleProcessPlan) {
  const std::string root = temp_dir("shard_loops");
  const auto open =
      plan({"--request-rate", "60", "--requests", "36", "--warmup", "0", "--seed", "11"});
  const std::string start_at = fmt::format("{:.3f}", wall_us() / 1e6 + 1.5);
  run_shards(open, 2, root + "/open", {"--threads", "2", "--start-at", start_at});
  auto single_args = open;
  single_args.insert(single_args.end(), {"--threads", "1", "--out", root + "/open-single"});
  ChildResult single = tokperf(single_args);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  ChildResult merged =
      tokperf({"merge", root + "/open", "--out", root + "/open-merged", "--no-history"});
  ASSERT_EQ(merged.exit_code, 0) << merged.err << merged.out;
  const json m = read_json(root + "/open-merged/summary.json");
  const json s = read_json(root + "/open-single/summary.json");
  ASSERT_EQ(m["levels"].size(), 1u);
  const json& ml = m["levels"][0];
  const json& sl = s["levels"][0];
  EXPECT_EQ(ml["load"]["schedule_fingerprint"], sl["load"]["schedule_fingerprint"]);
  EXPECT_EQ(ml["load"]["scheduled_arrivals"], sl["load"]["scheduled_arrivals"]);
  EXPECT_EQ(ml["load"]["measured_sent"], sl["load"]["measured_sent"]);
  EXPECT_EQ(ml["load"]["target_rate_rps"], sl["load"]["target_rate_rps"]);
  EXPECT_EQ(ml["load"]["scheduled_rate_rps"], sl["load"]["scheduled_rate_rps"]);
  EXPECT_EQ(ml["requests"]["sent"], sl["requests"]["sent"]);
  EXPECT_EQ(ml["requests"]["sent"], 36);
  std::set<uint64_t> seqs;
  for (int i = 0; i < 2; ++i) {
    const std::string dir = fmt::format("{}/open/shard-{}", root, i);
    const json sh = read_json(dir + "/summary.json");
    EXPECT_EQ(sh["config"]["load"]["threads"], 2);
    EXPECT_EQ(sh["client_health"]["loops"].size(), 2u);  // each loop's own health
    EXPECT_EQ(sh["levels"][0]["load"]["scheduled_arrivals"], 18);
    EXPECT_EQ(sh["levels"][0]["load"]["schedule_fingerprint"], sl["load"]["schedule_fingerprint"]);
    const json sj = read_json(dir + "/shard.json");
    ASSERT_EQ(sj["levels"].size(), 1u);
    EXPECT_GE(sj["levels"][0]["late_start_ns"].get<int64_t>(), 0);
    for (const json& r : read_records(dir + "/requests.jsonl")) {
      EXPECT_EQ(r["seq"].get<uint64_t>() % 2, static_cast<uint64_t>(i));
      EXPECT_TRUE(seqs.insert(r["seq"].get<uint64_t>()).second) << "duplicate seq " << r["seq"];
    }
  }
  EXPECT_EQ(seqs.size(), 36u);
  EXPECT_EQ(read_records(root + "/open-merged/requests.jsonl").size(), 36u);

  // Closed loop: the level's 4 slots over 2 shards x 2 loops, the 20 requests likewise.
  const auto closed = plan({"--concurrency", "4", "--requests", "20"});
  run_shards(closed, 2, root + "/closed", {"--threads", "2"});
  auto closed_single = closed;
  closed_single.insert(closed_single.end(), {"--threads", "1", "--out", root + "/closed-single"});
  ASSERT_EQ(tokperf(closed_single).exit_code, 0);
  ChildResult cm =
      tokperf({"merge", root + "/closed", "--out", root + "/closed-merged", "--no-history"});
  ASSERT_EQ(cm.exit_code, 0) << cm.err << cm.out;
  const json mc = read_json(root + "/closed-merged/summary.json");
  const json sc = read_json(root + "/closed-single/summary.json");
  EXPECT_EQ(mc["levels"][0]["requests"]["sent"], sc["levels"][0]["requests"]["sent"]);
  EXPECT_EQ(mc["levels"][0]["requests"]["sent"], 20);
  EXPECT_EQ(mc["levels"][0]["label"], sc["levels"][0]["label"]);
  for (int i = 0; i < 2; ++i) {
    const json sh = read_json(fmt::format("{}/closed/shard-{}/summary.json", root, i));
    EXPECT_EQ(sh["config"]["load"]["threads"], 2);
  }
  // Shards given different loop counts split the slots differently: merge refuses them.
  auto one_loop = closed;
  one_loop.insert(one_loop.end(), {"--shard", "1/2", "--threads", "1", "--out", root + "/mixed"});
  ASSERT_EQ(tokperf(one_loop).exit_code, 0);
  fs::copy(root + "/closed/shard-0", root + "/mixed/shard-0", fs::copy_options::recursive);
  ChildResult mixed = tokperf({"merge", root + "/mixed", "--out", root + "/mixed-merged"});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("load.threads"), std::string::npos) << mixed.err;
  EXPECT_FALSE(fs::exists(root + "/mixed-merged"));
}

TEST_F(ShardCli, BadShardFlagsSayWhatIsAccepted) {
  const std::string root = temp_dir("shard_bad");
  const auto load = plan({"--requests", "2", "--out", root});
  auto with = [&](std::vector<std::string> extra) {
    auto a = load;
    a.insert(a.end(), extra.begin(), extra.end());
    return tokperf(a);
  };
  ChildResult r = with({"--shard", "3/3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("out of range for 3 shards"), std::string::npos) << r.err;
  r = with({"--shard", "auto"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no launcher environment"), std::string::npos) << r.err;
  r = with({"--shard", "0/2", "--start-at", "tomorrow"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("RFC 3339"), std::string::npos) << r.err;
  r = with({"--shard", "0/2", "--start-at", "1000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("in the future"), std::string::npos) << r.err;
  r = with({"--start-at", "1000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("add --shard"), std::string::npos) << r.err;
  // A closed-loop level with fewer users than shards would leave a shard idle (fewer requests
  // than planned, silently): refused, naming the level and what would do.
  r = with({"--shard", "1/3", "--concurrency", "4,2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("level 2 has 2 concurrent users, fewer than the 3 shards"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("raise --concurrency to at least 3"), std::string::npos) << r.err;
  r = with({"--shard", "0/3", "--request-rate", "5", "--max-concurrency", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--max-concurrency 2 is split across the 3 shards"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(root + "/shard-1/summary.json"));
  auto no_out = plan({"--requests", "2", "--shard", "0/2"});
  r = tokperf(no_out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--shard needs --out"), std::string::npos) << r.err;
  r = tokperf({"merge", root + "/nothing-here", "--out", root + "/m"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such folder"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root + "/m"));
}

}  // namespace
}  // namespace tokperf
