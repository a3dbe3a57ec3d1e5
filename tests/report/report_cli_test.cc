// The report and compare commands as a user runs them (the built binary): the roofline from
// stated hardware on `report`, a named error for hardware it does not know, and `compare --html`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "report/run_fixture.h"

namespace tokperf {
namespace {

using testing_fixture::FixtureLevel;

struct Output {
  int code = -1;
  std::string text;  // stdout and stderr
};

Output tokperf(const std::string& args) {
  Output out;
  std::FILE* p = ::popen((std::string(TOKPERF_BINARY).append(" ") + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.text.append(buf, n);
  int status = ::pclose(p);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(ReportCli, StatedHardwareGivesTheRooflineOnTheConsoleAndInThePage) {
  // One level at concurrency 1 with TPOT 30 ms; the fixture's records carry no prompt length and
  // its config none either, so the context is half the output (30 tokens / 2).
  std::string dir = testing_fixture::write_run(testing_fixture::fresh_dir("cli-roof"),
                                               {FixtureLevel{1, 20, 200, 30, 30, 0}});
  Output plain = tokperf("report " + dir);
  EXPECT_EQ(plain.code, 0) << plain.text;
  EXPECT_EQ(plain.text.find("roofline"), std::string::npos) << "no hardware known: no roofline";
  Output r = tokperf("report " + dir + " --gpu a100-80g --model llama-2-7b --dtype fp16 --tp 1");
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("roofline (declared): Llama-2-7B fp16 weights"), std::string::npos)
      << r.text;
  // ~13.5 GB per step at 2,039 GB/s is a 6.6 ms bound: 22% of a 30 ms TPOT.
  EXPECT_NE(r.text.find("6.6"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("22%"), std::string::npos) << r.text;
  std::ifstream in(dir + "/report.html");
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_NE(html.str().find("as stated for this report"), std::string::npos);

  Output bad = tokperf("report " + dir + " --gpu tpu-v9");
  EXPECT_EQ(bad.code, 2) << bad.text;
  EXPECT_NE(bad.text.find("--gpu 'tpu-v9' is not a known GPU; accepted: a100-40g"),
            std::string::npos)
      << bad.text;
  std::filesystem::remove_all(dir);
}

TEST(ReportCli, APageDrawsOnABoundedSampleWhileCsvAndSloReadEveryRecord) {
  // 12,000 records: more than a page draws from (10,000), so the page takes every 2nd, says so,
  // and still exports every record and judges --slo on every record.
  std::string dir = testing_fixture::write_run(testing_fixture::fresh_dir("cli-bounded"),
                                               {FixtureLevel{100, 12'000, 50, 10, 2, 0}});
  Output r = tokperf("report " + dir + " --csv --slo 'ttft:p95<=10s'");
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("one record in every 2 of the 12000 (6000 read)"), std::string::npos)
      << r.text;
  std::ifstream csv(dir + "/requests.csv");
  std::string line;
  int lines = 0;
  while (std::getline(csv, line)) ++lines;
  EXPECT_EQ(lines, 12'001);  // header + every record
  std::ifstream in(dir + "/report.html");
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_NE(html.str().find("ttft:p95<=10s"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ReportCli, CompareWritesTheHtmlPageAndStillGates) {
  std::string a = testing_fixture::write_run(testing_fixture::fresh_dir("cli-cmp-a"),
                                             {FixtureLevel{1, 20, 800, 65, 40, 0}});
  std::string b = testing_fixture::write_run(testing_fixture::fresh_dir("cli-cmp-b"),
                                             {FixtureLevel{1, 20, 3500, 40, 40, 0}});
  std::string page = testing_fixture::fresh_dir("cli-cmp") + "/ab.html";
  Output r = tokperf("compare " + a + " " + b + " --fail-if 'ttft.p95>+10%' --html " + page);
  EXPECT_EQ(r.code, 1) << r.text;  // B's TTFT is 4x A's
  EXPECT_NE(r.text.find("wrote " + page), std::string::npos) << r.text;
  std::ifstream in(page);
  std::stringstream html;
  html << in.rdbuf();
  std::string a_name = std::filesystem::path(a).filename().string();
  EXPECT_NE(html.str().find("data-verdict=\"" + a_name + "\""), std::string::npos);
  EXPECT_NE(html.str().find("data-gate=\"failed\""), std::string::npos);
  EXPECT_NE(html.str().find("id=\"tokperf-data\""), std::string::npos);
  Output nowhere = tokperf("compare " + a + " " + b + " --html /nonexistent-dir/x.html");
  EXPECT_EQ(nowhere.code, 1) << nowhere.text;
  EXPECT_NE(nowhere.text.find("--html"), std::string::npos) << nowhere.text;
  for (const std::string& d : {a, b, std::filesystem::path(page).parent_path().string()})
    std::filesystem::remove_all(d);
}

TEST(ReportCli, CompareJudgesEveryRecordWhenItsPageDrawsOnASample) {
  // 12,000 records each: the page samples every 2nd (the even ones). B's odd requests stall for a
  // second before their last token, so only a verdict over every record sees that B reads worse.
  std::string a = testing_fixture::write_run(testing_fixture::fresh_dir("cli-cmpbig-a"),
                                             {FixtureLevel{100, 12'000, 50, 10, 2, 0}});
  std::string b = testing_fixture::write_run(testing_fixture::fresh_dir("cli-cmpbig-b"),
                                             {FixtureLevel{100, 12'000, 50, 10, 2, 0, 1000}});
  std::string page = testing_fixture::fresh_dir("cli-cmpbig") + "/ab.html";
  Output r = tokperf("compare " + a + " " + b + " --html " + page);
  ASSERT_EQ(r.code, 0) << r.text;
  std::string a_name = std::filesystem::path(a).filename().string();
  std::string b_name = std::filesystem::path(b).filename().string();
  EXPECT_NE(r.text.find("verdict: " + a_name + " would feel"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find(b_name + ": the page's distributions and diagnosis come from one record "
                                 "in every 2 of the 12000 (6000 read)"),
            std::string::npos)
      << r.text;
  std::ifstream in(page);
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_NE(html.str().find("data-sampled=\"" + b_name + "\""), std::string::npos);
  EXPECT_NE(html.str().find("data-verdict=\"" + a_name + "\""), std::string::npos);
  for (const std::string& d : {a, b, std::filesystem::path(page).parent_path().string()})
    std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace tokperf
