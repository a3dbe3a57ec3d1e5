#include "servermetrics/ttft_decomposition.h"

#include <cmath>

#include <gtest/gtest.h>

#include "servermetrics/server_report.h"

namespace tokperf::servermetrics {
namespace {

RequestTimeline request(int level, int64_t send_ms, int64_t first_token_ms, double prompt_ms = -1,
                        double queue_ms = -1) {
  RequestTimeline t;
  t.level = level;
  t.send_ns = (1000 + send_ms) * 1'000'000;  // 0 would mean "never sent"
  t.token_events.push_back(TokenEvent{(1000 + first_token_ms) * 1'000'000});
  t.end_ns = t.token_events.back().t_ns;
  t.server.prompt_ms = prompt_ms;
  if (prompt_ms >= 0) t.server.source = "llamacpp.timings";
  t.server.queue_ms = queue_ms;
  return t;
}

HistogramDelta hist(double count, double sum_s) {
  HistogramDelta h;
  h.count = count;
  h.sum = sum_s;
  h.bounds = {0.1, 1.0};
  h.cumulative = {0, count, count};
  return h;
}

ServerWindow window(double ttft_s, double queue_s, double prefill_s) {
  ServerWindow w;
  w.engine = Engine::kVllm;
  w.hist[static_cast<size_t>(Concept::kTtft)] = hist(2, 2 * ttft_s);
  w.hist[static_cast<size_t>(Concept::kQueue)] = hist(2, 2 * queue_s);
  w.hist[static_cast<size_t>(Concept::kPrefill)] = hist(2, 2 * prefill_s);
  return w;
}

TEST(TtftDecomposition, LevelPartsAddUpToTheClientMean) {
  // Client TTFTs 500 and 700 ms (mean 600); server TTFT 550, queue 400, prefill 130.
  std::vector<RequestTimeline> rs = {request(0, 0, 500), request(0, 10, 710), request(1, 0, 9)};
  LevelDecomposition d = decompose_level(rs, 0, window(0.55, 0.4, 0.13));
  EXPECT_EQ(d.client_requests, 2);
  EXPECT_DOUBLE_EQ(d.client_ttft_mean_ms, 600);
  EXPECT_NEAR(d.outside_server_ms, 50, 1e-9);
  EXPECT_NEAR(d.queue_mean_ms, 400, 1e-9);
  EXPECT_NEAR(d.prefill_mean_ms, 130, 1e-9);
  EXPECT_NEAR(d.server_overhead_ms, 20, 1e-9);
  EXPECT_NEAR(d.outside_server_ms + d.queue_mean_ms + d.prefill_mean_ms + d.server_overhead_ms,
              d.client_ttft_mean_ms, 1e-9);
  EXPECT_EQ(d.dominant, "queue");
  EXPECT_NE(d.resolution.find("queue P50 in [0.1, 1] s"), std::string::npos) << d.resolution;
  EXPECT_NE(describe_decomposition(d).find("400.0 queue"), std::string::npos);
}

TEST(TtftDecomposition, OutsideTheServerDominates) {
  std::vector<RequestTimeline> rs = {request(0, 0, 900)};
  LevelDecomposition d = decompose_level(rs, 0, window(0.1, 0.01, 0.08));
  EXPECT_EQ(d.dominant, "outside_server");
  EXPECT_NEAR(d.outside_server_ms, 800, 1e-9);
}

TEST(TtftDecomposition, PerRequestFromResponseTimings) {
  std::vector<RequestTimeline> rs = {request(0, 0, 100, 80), request(0, 0, 300, 250, 30),
                                     request(0, 0, 50), request(1, 0, 10, 5)};
  RequestDecomposition d = decompose_requests(rs, 0);
  EXPECT_EQ(d.requests, 2);  // the one without timings is left out
  EXPECT_DOUBLE_EQ(d.client_ttft_mean_ms, 200);
  EXPECT_DOUBLE_EQ(d.server_prompt_mean_ms, 165);
  EXPECT_TRUE(std::isnan(d.server_queue_mean_ms));  // only one of two reported it
  EXPECT_DOUBLE_EQ(d.remainder_mean_ms, (20 + 20) / 2.0);
  EXPECT_DOUBLE_EQ(d.remainder_min_ms, 20);
  // Any source of timings plugs in through the interface.
  RequestDecomposition fixed = decompose_requests(rs, 1, [](const RequestTimeline&) {
    return std::optional<ServerRequestTiming>(ServerRequestTiming{4, 1});
  });
  EXPECT_EQ(fixed.requests, 1);
  EXPECT_DOUBLE_EQ(fixed.server_queue_mean_ms, 1);
  EXPECT_DOUBLE_EQ(fixed.remainder_mean_ms, 5);
}

TEST(ServerReport, MissingViewSaysWhy) {
  UrlSeries u{"http://127.0.0.1:1/metrics", {}, {}, 0, {}};
  Scrape bad;
  bad.error = "the URL answered HTML";
  u.scrapes = {bad, bad};
  u.failed = 2;
  u.first_error = bad.error;
  const int levels[] = {0};
  std::vector<RequestTimeline> rs = {request(0, 0, 10)};
  ServerReport r = build_server_report({u}, true, levels, rs);
  EXPECT_FALSE(r.has_windows());
  EXPECT_NE(r.missing_reason.find("2 of 2 scrapes failed"), std::string::npos) << r.missing_reason;
  EXPECT_NE(r.missing_reason.find("HTML"), std::string::npos);
  EXPECT_EQ(server_run_json(r)["status"], "missing");
  const std::string labels[] = {"c=1"};
  EXPECT_NE(render_server_view(r, labels).find("server view: missing"), std::string::npos);
}

TEST(ServerReport, LevelWindowsAndTimeseriesColumns) {
  UrlSeries u{"u", {}, {}, 0, {}};
  auto s = [](int64_t t_s, int running, int gen) {
    return Scrape{t_s * 1'000'000'000,
                  true,
                  {},
                  parse_exposition("vllm:num_requests_running " + std::to_string(running) +
                                   "\nvllm:generation_tokens_total " + std::to_string(gen) + "\n")};
  };
  u.scrapes = {s(0, 0, 0), s(1, 4, 100), s(2, 4, 300), s(3, 1, 400)};
  u.level_end = {{0, 2}, {1, 3}};
  auto w0 = level_window(u, 0);
  auto w1 = level_window(u, 1);
  ASSERT_TRUE(w0 && w1);
  EXPECT_EQ(*w0->c(Concept::kGenerationTokens), 300);
  EXPECT_EQ(*w1->c(Concept::kGenerationTokens), 100);
  EXPECT_EQ(w0->g(Concept::kRunning)->mean, 4);
  const int levels[] = {0, 1};
  ServerReport r = build_server_report({u}, true, levels, std::span<const RequestDigest>{});
  auto cols = server_timeseries_columns(r, 0, 4);
  ASSERT_EQ(cols.size(), 5u);
  EXPECT_EQ(cols[0].name, "server_running");
  EXPECT_TRUE(std::isnan(cols[0].values[0]));  // the baseline opens no interval
  EXPECT_EQ(cols[0].values[1], 4);
  EXPECT_EQ(cols[3].values[2], 200);  // tokens/s between the scrapes at 1 s and 2 s
  EXPECT_EQ(cols[0].values[3], 1);
  // Several scrapes in one second: the gauges' last value, the counters' rate over the second.
  UrlSeries dense{"u", {s(0, 0, 0)}, {}, 0, {}};
  for (int k = 1; k <= 4; ++k) {
    Scrape x = s(0, k, 50 * k);
    x.t_ns = 1'000'000'000 + k * 200'000'000;
    dense.scrapes.push_back(x);
  }
  ServerReport d = build_server_report({dense}, true, std::span<const int>(levels, 1), std::span<const RequestDigest>{});
  auto dc = server_timeseries_columns(d, 0, 3);
  ASSERT_EQ(dc.size(), 5u);
  EXPECT_EQ(dc[0].values[1], 4);                    // the last of 1, 2, 3, 4 (not their sum)
  EXPECT_NEAR(dc[3].values[1], 200.0 / 1.8, 1e-9);  // 200 tokens over the 1.8 s of intervals
}

}  // namespace
}  // namespace tokperf::servermetrics
