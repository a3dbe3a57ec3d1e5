#include "report/html_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "report/csv_export.h"
#include "report/report_assets.h"
#include "report/run_fixture.h"

namespace tokperf {
namespace {

using testing_fixture::FixtureLevel;

std::string two_level_run(const std::string& name) {
  return testing_fixture::write_run(
      testing_fixture::fresh_dir(name),
      {FixtureLevel{1, 40, 200, 30, 30, 0}, FixtureLevel{4, 40, 300, 32, 30, 2}},
      "ttft:p95<=2s,tpot:p95<=100ms");
}

TEST(RunLoader, ReadsBackWhatTheWritersWrote) {
  auto run = load_run(two_level_run("loader"));
  ASSERT_TRUE(run.ok()) << run.error();
  ASSERT_EQ(run->levels.size(), 2u);
  EXPECT_EQ(run->levels[1].params.label, "c=4");
  EXPECT_EQ(run->levels[1].params.concurrency, 4);
  EXPECT_EQ(run->levels[1].sent, 42);
  EXPECT_EQ(run->levels[1].failed, 2);
  ASSERT_EQ(run->levels[1].errors.size(), 1u);
  EXPECT_EQ(run->levels[1].errors[0].kind, ErrorKind::kRateLimited);
  EXPECT_EQ(run->levels[1].errors[0].first_http_status, 429);
  EXPECT_EQ(run->requests.size(), 82u);
  // Request 0 has no jitter: first token 200 ms after send, sent 0.5 ms after it was due.
  EXPECT_DOUBLE_EQ(run->requests[0].ttft_ms, 200);
  EXPECT_DOUBLE_EQ(run->requests[0].queue_ms, 0.5);
  EXPECT_EQ(run->requests[0].itl_ms.size(), 29u);
  EXPECT_EQ(run->requests[0].prompt_tokens, 300);
  EXPECT_FALSE(run->requests[81].ok);
  EXPECT_EQ(run->requests[81].error_kind, "rate_limited");
  EXPECT_FALSE(run->timeseries.empty());
  EXPECT_TRUE(run->warnings.empty());
}

// The loader's fast line parser reads every field the report uses exactly as the json path does,
// including odd lines another tool may write (fields missing, reordered, typed oddly).
TEST(RunLoader, FastLineParserReadsWhatTheJsonPathReads) {
  std::string dir = two_level_run("fastparse");
  {
    std::ofstream f(dir + "/requests.jsonl", std::ios::app);
    f << R"({"ttft_ms":12.5,"seq":900,"level":1,"phase":"warmup","ok":false,"error":{"message":"x\"y","kind":"timeout","http_status":null},"itl_ms":[1,null,2.5],"token_ms":[],"output_tokens":3.9,"extra":{"a":[1,2,{"b":null}]}})"
      << "\n"
      << R"({"seq":901,"ttft_ms":"fast","content_chars":[3,null,4.7],"prompt_tokens":null})"
      << "\n";
  }
  auto run = load_run(dir);
  ASSERT_TRUE(run.ok()) << run.error();
  std::ifstream in(dir + "/requests.jsonl");
  std::string line;
  size_t i = 0;
  auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
  while (std::getline(in, line)) {
    ASSERT_LT(i, run->requests.size());
    const RequestSample want = request_sample_from_json(nlohmann::json::parse(line));
    const RequestSample& got = run->requests[i++];
    EXPECT_EQ(got.seq, want.seq) << line;
    EXPECT_EQ(got.level, want.level) << line;
    EXPECT_EQ(got.measured, want.measured) << line;
    EXPECT_EQ(got.ok, want.ok) << line;
    EXPECT_EQ(got.error_kind, want.error_kind) << line;
    EXPECT_EQ(got.start_unix_us, want.start_unix_us) << line;
    EXPECT_EQ(got.output_tokens, want.output_tokens) << line;
    EXPECT_EQ(got.prompt_tokens, want.prompt_tokens) << line;
    for (auto [a, b] : {std::pair{got.queue_ms, want.queue_ms}, {got.ttft_ms, want.ttft_ms},
                        {got.ttfo_ms, want.ttfo_ms}, {got.tpot_ms, want.tpot_ms},
                        {got.e2e_ms, want.e2e_ms}, {got.end_ms, want.end_ms}}) {
      EXPECT_TRUE(same(a, b)) << a << " vs " << b << " in " << line;
    }
    ASSERT_EQ(got.itl_ms.size(), want.itl_ms.size()) << line;
    for (size_t k = 0; k < got.itl_ms.size(); ++k) EXPECT_TRUE(same(got.itl_ms[k], want.itl_ms[k]));
    EXPECT_EQ(got.token_ms, want.token_ms) << line;
    EXPECT_EQ(got.content_chars, want.content_chars) << line;
  }
  EXPECT_EQ(i, run->requests.size());
  EXPECT_EQ(i, 84u);
}

// Bounded reading: every k-th line, spread over the whole file, and a note saying so.
TEST(RunLoader, AtMostMaxRequestsAreReadEvenlyAndTheReportSaysSo) {
  // 82 lines, at most 20: every 8th (the smallest power of two that reads no more than 20)
  auto run = load_run(two_level_run("sampled"), 20);
  ASSERT_TRUE(run.ok()) << run.error();
  EXPECT_EQ(run->request_lines, 82);
  EXPECT_EQ(run->stride, 8);
  ASSERT_EQ(run->requests.size(), 11u);  // lines 1, 9, ..., 81
  EXPECT_EQ(run->requests[0].seq, 0);
  EXPECT_EQ(run->requests[10].seq, 80);
  ASSERT_EQ(run->warnings.size(), 1u);
  EXPECT_NE(run->warnings[0].find("one record in every 8 of the 82 (11 read)"), std::string::npos)
      << run->warnings[0];
  EXPECT_EQ(run->levels.size(), 2u);  // level statistics still from summary.json
  EXPECT_EQ(run->levels[1].sent, 42);
}

TEST(RunLoader, MissingSummaryNamesTheFile) {
  auto run = load_run(testing_fixture::fresh_dir("empty"));
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().find("summary.json"), std::string::npos) << run.error();
}

TEST(RunLoader, TornJsonlLineIsSkippedWithAWarning) {
  std::string dir = two_level_run("torn");
  std::ofstream(dir + "/requests.jsonl", std::ios::app) << "{\"seq\": 99, \"ok\": tr";
  auto run = load_run(dir);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->requests.size(), 82u);
  ASSERT_EQ(run->warnings.size(), 1u);
  EXPECT_NE(run->warnings[0].find("line 83"), std::string::npos) << run->warnings[0];
}

TEST(RedactConfig, HidesSecretValuesAndHeaders) {
  nlohmann::json c = {{"target",
                       {{"api_key", "sk-1"},
                        {"model", "m"},
                        {"headers", {"Authorization: Bearer x", "X-Team: perf"}}}},
                      {"password", "p"}};
  nlohmann::json r = redact_config(c);
  EXPECT_EQ(r["target"]["api_key"], "<redacted>");
  EXPECT_EQ(r["target"]["model"], "m");
  EXPECT_EQ(r["target"]["headers"][0], "Authorization: <redacted>");
  EXPECT_EQ(r["target"]["headers"][1], "X-Team: perf");
  EXPECT_EQ(r["password"], "<redacted>");
}

TEST(ReportChartData, CdfIsMonotoneAndEndsAtOne) {
  auto run = load_run(two_level_run("cdf"));
  ASSERT_TRUE(run.ok());
  nlohmann::json d = report_chart_data(*run, {});
  EXPECT_EQ(d["load_axis"], "concurrency");
  ASSERT_EQ(d["levels"].size(), 2u);
  EXPECT_EQ(d["levels"][1]["load"], 4);
  const auto& cdf = d["cdf"]["ttft"];
  ASSERT_EQ(cdf["series"].size(), 2u);
  for (const auto& s : cdf["series"]) {
    ASSERT_EQ(s["y"].size(), cdf["x"].size());
    for (size_t i = 1; i < s["y"].size(); ++i) EXPECT_GE(s["y"][i], s["y"][i - 1]);
    EXPECT_DOUBLE_EQ(s["y"].back().get<double>(), 1.0);
  }
  // Level c=1 has TTFT 200..200.8 ms, so its CDF reaches 1 before c=4's values (300+) begin.
  EXPECT_EQ(d["slo"].size(), 2u);
  EXPECT_EQ(d["slo"][0]["metric"], "ttft");
  EXPECT_DOUBLE_EQ(d["slo"][0]["threshold_ms"].get<double>(), 2000);
  EXPECT_EQ(d["timeline"].size(), 82u);
  EXPECT_FALSE(d["timeseries"].is_null());
}

TEST(HtmlReport, IsSelfContainedAndRedacted) {
  std::string dir = two_level_run("html");
  ASSERT_TRUE(write_report_html(dir).ok());
  std::ifstream f(dir + "/report.html");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string html = ss.str();
  EXPECT_EQ(html.find("SECRET"), std::string::npos);
  EXPECT_NE(html.find("&lt;redacted&gt;"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_NE(html.find("id=\"tokperf-data\""), std::string::npos);
  EXPECT_NE(html.find("No finding"), std::string::npos);  // the fixture is healthy
  EXPECT_NE(html.find("rate_limited"), std::string::npos);
  EXPECT_NE(html.find("Goodput at c=4"), std::string::npos);
  // 40 of 42 requests good at c=4.
  EXPECT_NE(html.find("95.2% within ttft:p95&lt;=2s,tpot:p95&lt;=100ms"), std::string::npos);
  if (report_assets().have_chart_library) {
    EXPECT_NE(html.find("uPlot"), std::string::npos);
  }
}

TEST(CsvExport, QuotesAndEmptyFieldsForUndefined) {
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("plain"), "plain");
  RequestSample r;
  r.seq = 3;
  r.ok = false;
  r.error_kind = "http";
  r.queue_ms = 1.5;
  std::vector<RequestSample> rs{r};
  std::string csv = requests_csv(rs);
  EXPECT_EQ(csv.substr(csv.find('\n') + 1), "3,0,measure,false,http,0,1.5,,,,,,0,,0,\n");
  LevelSummary s;
  s.params.label = "c=1";
  s.params.level = 0;
  s.params.concurrency = 1;
  s.sent = s.ok = 2;
  s.ttft.p50 = 200;
  std::vector<LevelSummary> lv{s};
  std::string l = levels_csv(lv);
  const std::string row = l.substr(l.find('\n') + 1);
  EXPECT_EQ(row.rfind("c=1,0,1,,2,2,0,,200,,,,,,", 0), 0u) << row;
}

}  // namespace
}  // namespace tokperf
