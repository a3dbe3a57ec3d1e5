#include "cli/output_flags.h"

#include <gtest/gtest.h>

#include <string>

#include "cli/flags_test_util.h"

namespace tokperf {
namespace {

BenchConfig apply(const std::string& args) {
  OutputFlags f;
  testing_cli::parse_into([&](CLI::App* sub) { add_output_flags(sub, f); }, args);
  BenchConfig c;
  c.run_id = "tpabc";
  apply_output_flags(f, c);
  return c;
}

TEST(OutputFlags, DefaultIsADatedFolderEndingInTheRunId) {
  BenchConfig c = apply("");
  EXPECT_EQ(c.out_dir.rfind("tokperf-results/", 0), 0u) << c.out_dir;
  EXPECT_EQ(c.out_dir.substr(c.out_dir.size() - 6), "-tpabc") << c.out_dir;
  EXPECT_TRUE(c.record_history);
  EXPECT_EQ(c.history_store, "");
}

TEST(OutputFlags, OutStoreAndNoHistory) {
  BenchConfig c = apply("--out /tmp/x --store /tmp/h.db --no-history");
  EXPECT_EQ(c.out_dir, "/tmp/x");
  EXPECT_EQ(c.history_store, "/tmp/h.db");
  EXPECT_FALSE(c.record_history);
}

TEST(OutputFlags, NoSaveWritesNothingEvenWithOut) {
  EXPECT_EQ(apply("--no-save").out_dir, "");
  EXPECT_EQ(apply("--no-save --out /tmp/x").out_dir, "");
}

TEST(OutputFlags, JsonIsAFlag) {
  OutputFlags f;
  testing_cli::parse_into([&](CLI::App* sub) { add_output_flags(sub, f); }, "--json");
  EXPECT_TRUE(f.json);
}

}  // namespace
}  // namespace tokperf
