// report.html in real headless Chromium (Debian's `chromium`, see scripts/install-deps.sh): it
// loads from a file:// URL with the network blocked, raises no script error, fetches nothing, and
// every chart reports itself drawn (report.js checks each canvas for painted pixels). The
// screenshot is kept as an artifact: test-artifacts/report.png under the test's working folder, or
// $TOKPERF_ARTIFACT_DIR.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "analysis/compare.h"
#include "report/compare_html.h"
#include "report/html_report.h"
#include "report/report_assets.h"
#include "report/run_fixture.h"
#include "report/text_file.h"

namespace tokperf {
namespace {

using testing_fixture::FixtureLevel;

struct Output {
  int status = -1;
  std::string text;
};

Output run(const std::string& cmd) {
  Output out;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.text.append(buf, n);
  out.status = ::pclose(p);
  return out;
}

std::string chromium_command(const std::string& profile) {
  return "timeout 60 chromium --headless --no-sandbox --disable-gpu "
         "--disable-background-networking --disable-component-update --disable-sync "
         "--no-first-run --disable-extensions --disable-dev-shm-usage "
         "--host-resolver-rules='MAP * ~NOTFOUND' --proxy-server=127.0.0.1:9 "
         "--user-data-dir=" +
         profile + " --window-size=1400,4200 ";
}

std::string attr(const std::string& dom, const std::string& name) {
  std::smatch m;
  if (std::regex_search(dom, m, std::regex(name + "=\"([^\"]*)\""))) return m[1];
  return "";
}

TEST(ReportBrowser, LoadsOfflineWithoutErrorsAndDrawsEveryChart) {
  ASSERT_EQ(std::system("command -v chromium >/dev/null 2>&1"), 0)
      << "chromium is not installed: run scripts/install-deps.sh";
  ASSERT_TRUE(report_assets().have_chart_library) << "built without the chart library (npm)";
  std::string dir = testing_fixture::write_run(
      testing_fixture::fresh_dir("browser"),
      {FixtureLevel{1, 30, 200, 30, 40, 0}, FixtureLevel{4, 40, 350, 34, 40, 0},
       FixtureLevel{8, 48, 900, 40, 40, 3}},
      "ttft:p95<=2s,tpot:p95<=100ms");
  ASSERT_TRUE(write_report_html(dir).ok());
  std::string url = "file://" + dir + "/report.html";

  Output dom = run(chromium_command(dir + "/profile-dom") + "--dump-dom '" + url + "' 2>" + dir +
                   "/chromium-dom.log");
  ASSERT_EQ(dom.status, 0) << "chromium failed; see " << dir << "/chromium-dom.log";
  EXPECT_EQ(attr(dom.text, "data-report-state"), "ok");
  EXPECT_EQ(attr(dom.text, "data-errors"), "") << "script errors were recorded";
  EXPECT_EQ(attr(dom.text, "data-resources"), "0") << "the page fetched something";
  // 5 CDFs + TTFT/TPOT vs load + throughput vs latency + 3 time series + the timeline.
  EXPECT_EQ(attr(dom.text, "data-charts-expected"), "12");
  EXPECT_EQ(attr(dom.text, "data-charts-drawn"), "12");
  EXPECT_EQ(dom.text.find("data-drawn=\"no\""), std::string::npos);

  std::filesystem::path artifacts =
      std::getenv("TOKPERF_ARTIFACT_DIR") ? std::getenv("TOKPERF_ARTIFACT_DIR") : "test-artifacts";
  std::filesystem::create_directories(artifacts);
  std::string png = std::filesystem::absolute(artifacts / "report.png").string();
  std::filesystem::remove(png);
  Output shot = run(chromium_command(dir + "/profile-shot") +
                    "--hide-scrollbars --screenshot=" + png + " '" + url + "' 2>&1");
  ASSERT_EQ(shot.status, 0) << shot.text;
  EXPECT_EQ(shot.text.find("Uncaught"), std::string::npos) << shot.text;
  ASSERT_TRUE(std::filesystem::exists(png));
  EXPECT_GT(std::filesystem::file_size(png), 50'000u) << "screenshot looks blank";
  std::filesystem::remove_all(dir + "/profile-dom");
  std::filesystem::remove_all(dir + "/profile-shot");
}

// The comparison page of `tokperf compare ... --html`: same offline checks, and its five overlaid
// CDFs draw. Screenshot: test-artifacts/compare.png.
TEST(ReportBrowser, ComparisonPageLoadsOfflineAndDrawsOverlaidCdfs) {
  ASSERT_EQ(std::system("command -v chromium >/dev/null 2>&1"), 0)
      << "chromium is not installed: run scripts/install-deps.sh";
  ASSERT_TRUE(report_assets().have_chart_library) << "built without the chart library (npm)";
  // The source material's model A/B story: A shows text at 0.8 s and streams at 65 ms/token; B
  // makes users wait 3.5 s and then streams at 40 ms/token.
  std::string a = testing_fixture::write_run(testing_fixture::fresh_dir("cmp-a"),
                                             {FixtureLevel{1, 30, 800, 65, 60, 0}});
  std::string b = testing_fixture::write_run(testing_fixture::fresh_dir("cmp-b"),
                                             {FixtureLevel{1, 30, 3500, 40, 60, 0}});
  std::vector<SavedRun> runs;
  std::vector<RunFigures> figures;
  for (const std::string& dir : {a, b}) {
    auto run = load_run(dir);
    ASSERT_TRUE(run.ok()) << run.error();
    auto f = run_figures(dir == a ? "model-A" : "model-B", run->levels, run->requests, "", {});
    ASSERT_TRUE(f.ok()) << f.error();
    runs.push_back(std::move(*run));
    figures.push_back(std::move(*f));
  }
  Verdict v = perceived_verdict(figures, {});
  ASSERT_EQ(v.winner, 0) << v.explanation;
  std::string html = render_compare_html(
      {runs, figures, v, "ttft.p95>+10%", {"ttft.p95>+10% (model-B): 3.5 s vs 800 ms"}});
  EXPECT_NE(html.find("data-verdict=\"model-A\""), std::string::npos);
  EXPECT_NE(html.find("data-gate=\"failed\""), std::string::npos);
  EXPECT_NE(html.find("<td class=\"worse\">"), std::string::npos);   // B's TTFT
  EXPECT_NE(html.find("<td class=\"better\">"), std::string::npos);  // B's TPOT
  std::string dir = testing_fixture::fresh_dir("cmp-page");
  ASSERT_TRUE(write_text_file(dir + "/compare.html", html).ok());
  std::string url = "file://" + dir + "/compare.html";

  Output dom = run(chromium_command(dir + "/profile-dom") + "--dump-dom '" + url + "' 2>" + dir +
                   "/chromium-dom.log");
  ASSERT_EQ(dom.status, 0) << "chromium failed; see " << dir << "/chromium-dom.log";
  EXPECT_EQ(attr(dom.text, "data-report-state"), "ok");
  EXPECT_EQ(attr(dom.text, "data-errors"), "") << "script errors were recorded";
  EXPECT_EQ(attr(dom.text, "data-resources"), "0") << "the page fetched something";
  EXPECT_EQ(attr(dom.text, "data-charts-expected"), "5");  // TTFT, TTFO, TPOT, ITL, E2E
  EXPECT_EQ(attr(dom.text, "data-charts-drawn"), "5");

  std::filesystem::path artifacts =
      std::getenv("TOKPERF_ARTIFACT_DIR") ? std::getenv("TOKPERF_ARTIFACT_DIR") : "test-artifacts";
  std::filesystem::create_directories(artifacts);
  std::string png = std::filesystem::absolute(artifacts / "compare.png").string();
  std::filesystem::remove(png);
  Output shot = run(chromium_command(dir + "/profile-shot") +
                    "--hide-scrollbars --screenshot=" + png + " '" + url + "' 2>&1");
  ASSERT_EQ(shot.status, 0) << shot.text;
  ASSERT_TRUE(std::filesystem::exists(png));
  EXPECT_GT(std::filesystem::file_size(png), 50'000u) << "screenshot looks blank";
  for (const std::string& d : {a, b, dir}) std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace tokperf
