// The KV-cache capacity against vLLM's own startup logs (data/validation/kv_capacity.jsonl): the
// set loads, its halves are the committed split, the held-out figures estimate prints are the
// recomputed ones, and malformed rows are refused with the reason.
#include "sim/kv_validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

namespace tokperf::sim {
namespace {

const std::string kDataDir = std::string(TOKPERF_TEST_DATA).append("/../../data/validation");

TEST(KvValidation, TheSetLoadsWithBothHalvesAndUniqueIds) {
  auto rows = load_kv_capacity_set(kDataDir);
  ASSERT_TRUE(rows.ok()) << rows.error();
  std::set<std::string> ids, gpus;
  int held = 0;
  for (const auto& r : *rows) {
    EXPECT_TRUE(ids.insert(r.id).second) << r.id;
    EXPECT_EQ(r.source.rfind("https://", 0), 0u) << r.id << ": a citable source";
    gpus.insert(r.deployment.gpu.id);
    held += r.held_out ? 1 : 0;
  }
  EXPECT_GE(rows->size(), 12u);
  EXPECT_EQ(held, kKvCapacityHeldOut.rows);
  EXPECT_GE(static_cast<int>(rows->size()) - held, 5);
  EXPECT_GE(gpus.size(), 5u);
}

TEST(KvValidation, HeldOutErrorIsTheFigureEstimatePrints) {
  auto rows = load_kv_capacity_set(kDataDir);
  ASSERT_TRUE(rows.ok()) << rows.error();
  const KvCapacityResult r = run_kv_validation(*rows);
  EXPECT_TRUE(r.failures.empty()) << r.failures.front();
  for (const auto& row : r.rows) {
    std::printf("| %s | %s | %.0f | %.0f | %+.1f%% |\n", row.row->id.c_str(),
                row.row->held_out ? "held-out" : "calibration", row.row->logged_tokens,
                row.predicted, row.error_pct());
  }
  const MetricSummary held = r.summary(true);
  EXPECT_EQ(held.n, kKvCapacityHeldOut.rows);
  EXPECT_NEAR(held.median_abs_pct, kKvCapacityHeldOut.median_pct, 0.051);
  EXPECT_NEAR(held.worst_ratio, kKvCapacityHeldOut.worst_ratio, 0.0051);
}

// The profiled reserve is what the capacity depends on: without it (the constant 2 GiB) the
// calibration half is much worse, which is why the vllm preset profiles.
TEST(KvValidation, TheProfiledReserveBeatsTheConstantOnCalibration) {
  auto rows = load_kv_capacity_set(kDataDir);
  ASSERT_TRUE(rows.ok()) << rows.error();
  const double profiled = run_kv_validation(*rows).summary(false).median_abs_pct;
  const double constant =
      run_kv_validation(*rows, {{"profile_tokens", 0}}).summary(false).median_abs_pct;
  EXPECT_LT(profiled, 10);
  EXPECT_GT(constant, 3 * profiled);
}

TEST(KvValidation, MalformedRowsAreRefusedWithTheReason) {
  const std::string dir = ::testing::TempDir() + "/kv_bad_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& rows, const std::string& split) {
    std::ofstream(dir + "/kv_capacity.jsonl") << rows;
    std::ofstream(dir + "/kv_capacity_split.json") << split;
    return load_kv_capacity_set(dir);
  };
  const std::string row =
      R"({"id":"a","source":"https://x","engine":"V1","model":"llama-3.1-8b","gpu":"h100",)"
      R"("tp":1,"dtype":"bf16","gpu_memory_utilization":0.9,"profile_tokens":8192,)"
      R"("max_num_seqs":1024,"kv_cache_tokens":400000})";
  EXPECT_TRUE(write(row + "\n", R"({"held_out":["a"],"calibration":[]})").ok());
  auto unsplit = write(row + "\n", R"({"held_out":[],"calibration":[]})");
  ASSERT_FALSE(unsplit.ok());
  EXPECT_NE(unsplit.error().find("exactly one half"), std::string::npos) << unsplit.error();
  std::string bad = row;
  bad.replace(bad.find("0.9"), 3, "1.5");
  auto util = write(bad + "\n", R"({"held_out":["a"],"calibration":[]})");
  ASSERT_FALSE(util.ok());
  EXPECT_NE(util.error().find("gpu_memory_utilization"), std::string::npos) << util.error();
  std::string gpu = row;
  gpu.replace(gpu.find("\"h100\""), 6, "\"h900\"");
  auto unknown = write(gpu + "\n", R"({"held_out":["a"],"calibration":[]})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("line 1"), std::string::npos) << unknown.error();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tokperf::sim
