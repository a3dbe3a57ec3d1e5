#include "servermetrics/live_exposition.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "client/http_fetch.h"
#include "servermetrics/exposition_parser.h"

namespace tokperf::servermetrics {
namespace {

RequestTimeline finished(bool ok, int tokens) {
  RequestTimeline t;
  t.intended_ns = 1'000'000'000;
  t.send_ns = 1'000'200'000;
  for (int i = 0; i < tokens; ++i) {
    t.token_events.push_back(TokenEvent{t.send_ns + 50'000'000 + i * 20'000'000});
  }
  if (!ok) t.error.kind = ErrorKind::kRateLimited;
  return t;
}

const Sample* find(const Exposition& e, std::string_view name, const Labels& labels = {}) {
  for (const Sample& s : e.samples) {
    if (s.name == name && (labels.empty() || s.labels == labels)) return &s;
  }
  return nullptr;
}

TEST(LiveExposition, ServesTheRunsProgressInPrometheusText) {
  LiveExposition live;
  ASSERT_TRUE(live.start(0).ok());
  { auto t = finished(true, 5); live.record(t, compute_request_metrics(t)); }
  { auto t = finished(true, 3); live.record(t, compute_request_metrics(t)); }
  { auto t = finished(false, 0); live.record(t, compute_request_metrics(t)); }
  live.progress(2, 7, 1);
  auto reply =
      http_fetch("GET", "http://127.0.0.1:" + std::to_string(live.port()) + "/metrics", {});
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply->status, 200);
  Exposition e = parse_exposition(reply->body);
  EXPECT_EQ(e.bad_lines, 0) << e.first_error;
  EXPECT_EQ(find(e, "tokperf_requests_total", {{"outcome", "ok"}})->value, 2);
  EXPECT_EQ(find(e, "tokperf_requests_total", {{"outcome", "rate_limited"}})->value, 1);
  EXPECT_EQ(find(e, "tokperf_ttft_seconds_count")->value, 2);
  EXPECT_NEAR(find(e, "tokperf_ttft_seconds_sum")->value, 0.1, 1e-9);
  EXPECT_EQ(find(e, "tokperf_itl_seconds_count")->value, 4 + 2);
  EXPECT_EQ(find(e, "tokperf_in_flight_requests")->value, 7);
  EXPECT_EQ(find(e, "tokperf_level")->value, 2);
  EXPECT_EQ(find(e, "tokperf_output_tokens_total")->value, 8);
  EXPECT_EQ(find(e, "tokperf_send_lag_seconds_count")->value, 3);
  auto other = http_fetch("GET", "http://127.0.0.1:" + std::to_string(live.port()) + "/", {});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->status, 404);
  live.stop();
}

// promtool (Debian `prometheus`) is the reference validator of the text format.
TEST(LiveExposition, PromtoolAcceptsTheExposition) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool NOT INSTALLED: the exposition was not validated (apt-get install "
                    "prometheus, see scripts/install-deps.sh)";
  }
  LiveExposition live;
  { auto t = finished(true, 5); live.record(t, compute_request_metrics(t)); }
  { auto t = finished(false, 0); live.record(t, compute_request_metrics(t)); }
  live.progress(0, 1, 0);
  const std::string path = ::testing::TempDir() + "/tokperf_live.prom";
  {
    std::ofstream f(path);
    f << live.render();
  }
  const std::string cmd = "promtool check metrics < " + path + " > " + path + ".out 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream out(path + ".out");
  std::string msg((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << msg;
  std::remove(path.c_str());
  std::remove((path + ".out").c_str());
}

// promtool rejects a broken page, so its acceptance above is a real check.
TEST(LiveExposition, PromtoolChecksAFailingPage) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool NOT INSTALLED";
  }
  const std::string path = ::testing::TempDir() + "/tokperf_bad.prom";
  {
    std::ofstream f(path);
    f << "# TYPE x counter\nx{a=1} 2\n";
  }
  const std::string cmd = "promtool check metrics < " + path + " >/dev/null 2>&1";
  EXPECT_NE(std::system(cmd.c_str()),
            0);  // the validator can fail: the check above means something
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tokperf::servermetrics
