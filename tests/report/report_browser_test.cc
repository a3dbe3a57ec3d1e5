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

#include "report/html_report.h"
#include "report/report_assets.h"
#include "report/run_fixture.h"

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

}  // namespace
}  // namespace tokperf
