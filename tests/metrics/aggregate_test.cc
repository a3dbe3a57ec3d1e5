#include "metrics/aggregate.h"

#include <cmath>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

constexpr int64_t kMs = 1'000'000;

// A successful request sent at send_ms with token events at the given offsets from send.
RequestTimeline ok_request(int64_t send_ms, std::vector<int64_t> token_offsets_ms,
                           int64_t usage_tokens = -1, int64_t prompt_tokens = 100) {
  RequestTimeline t;
  t.intended_ns = send_ms * kMs;
  t.send_ns = send_ms * kMs;
  for (int64_t off : token_offsets_ms) t.token_events.push_back({(send_ms + off) * kMs, -1, true});
  t.end_ns = t.token_events.empty() ? t.send_ns : t.token_events.back().t_ns + 1 * kMs;
  t.usage_completion_tokens = usage_tokens;
  t.usage_prompt_tokens = prompt_tokens;
  return t;
}

RequestTimeline failed_request(int64_t send_ms, int64_t end_ms, ErrorKind kind, int status,
                               std::string message) {
  RequestTimeline t;
  t.intended_ns = t.send_ns = send_ms * kMs;
  t.end_ns = end_ms * kMs;
  t.error = {kind, status, std::move(message)};
  return t;
}

std::vector<RequestTimeline> sample_level() {
  std::vector<RequestTimeline> r;
  RequestTimeline warm = ok_request(0, {50, 60});
  warm.phase = Phase::kWarmup;
  r.push_back(warm);                                  // excluded: warm-up
  r.push_back(ok_request(1000, {100, 130, 170}, 5));  // ttft 100, tpot 17.5, itl 30 40
  r.push_back(ok_request(1100, {200, 220}));          // ttft 200, tpot 20, itl 20
  r.push_back(failed_request(1200, 1300, ErrorKind::kRateLimited, 429, "HTTP 429: slow down"));
  r.push_back(failed_request(1250, 1260, ErrorKind::kRateLimited, 429, "second message"));
  RequestTimeline partial = ok_request(1300, {300, 350});
  partial.error = {ErrorKind::kIncomplete, 200, "connection closed mid-stream"};
  partial.end_ns = 3000 * kMs;  // the latest end: closes the window
  r.push_back(partial);
  RequestTimeline cool = ok_request(5000, {10});
  cool.phase = Phase::kCooldown;
  r.push_back(cool);  // excluded: cool-down
  return r;
}

TEST(AggregateLevel, CountsAndInvariant) {
  LevelSummary s = aggregate_level(sample_level(), {"c=4", -1, 4});
  EXPECT_EQ(s.sent, 5);
  EXPECT_EQ(s.ok, 2);
  EXPECT_EQ(s.failed, 3);
  EXPECT_EQ(s.error_count(ErrorKind::kRateLimited), 2);
  EXPECT_EQ(s.error_count(ErrorKind::kIncomplete), 1);
  EXPECT_EQ(s.error_count(ErrorKind::kTimeout), 0);
  int64_t sum = 0;
  for (const ErrorTally& e : s.errors) sum += e.count;
  EXPECT_EQ(s.sent, s.ok + sum);
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_EQ(s.errors[0].kind, ErrorKind::kRateLimited);  // ascending by kind
  EXPECT_EQ(s.errors[0].first_http_status, 429);
  EXPECT_EQ(s.errors[0].first_message, "HTTP 429: slow down");
  EXPECT_EQ(s.output_tokens_from_usage, 1);
  EXPECT_EQ(s.output_tokens_counted, 1);
}

TEST(AggregateLevel, StatisticsOverSuccessfulRequestsOnly) {
  LevelSummary s = aggregate_level(sample_level(), {"c=4", -1, 4});
  EXPECT_EQ(s.ttft.count, 2);
  EXPECT_DOUBLE_EQ(s.ttft.mean, 150);
  EXPECT_DOUBLE_EQ(s.ttft.p50, 150);
  EXPECT_DOUBLE_EQ(s.ttft.max, 200);  // the incomplete request's 300 ms is not in it
  EXPECT_DOUBLE_EQ(s.tpot.min, 17.5);
  EXPECT_DOUBLE_EQ(s.tpot.max, 20);
  // ITL pools every gap: {30, 40, 20}.
  EXPECT_EQ(s.itl.count, 3);
  EXPECT_DOUBLE_EQ(s.itl.p50, 30);
  EXPECT_DOUBLE_EQ(s.itl.mean, 30);
  EXPECT_DOUBLE_EQ(s.e2e.max, 220);  // second request: last token at +220 ms
  EXPECT_DOUBLE_EQ(s.queue.max, 0);
}

TEST(AggregateLevel, WindowAndThroughput) {
  LevelSummary s = aggregate_level(sample_level(), {"c=4", -1, 4});
  // First measured send 1000 ms, last measured end 3000 ms (the incomplete request).
  EXPECT_DOUBLE_EQ(s.window_s, 2.0);
  EXPECT_EQ(s.output_tokens_total, 5 + 2);
  EXPECT_EQ(s.prompt_tokens_total, 200);
  EXPECT_DOUBLE_EQ(s.request_throughput_rps, 1.0);
  EXPECT_DOUBLE_EQ(s.output_token_throughput_tps, 3.5);
  EXPECT_DOUBLE_EQ(s.total_token_throughput_tps, 103.5);
}

TEST(AggregateLevel, FiltersByLevel) {
  std::vector<RequestTimeline> r = {ok_request(0, {10}), ok_request(0, {20})};
  r[1].level = 1;
  EXPECT_EQ(aggregate_level(r, {"a", 0}).sent, 1);
  EXPECT_DOUBLE_EQ(aggregate_level(r, {"b", 1}).ttft.max, 20);
  EXPECT_EQ(aggregate_level(r, {"all", -1}).sent, 2);
}

TEST(AggregateLevel, EmptyLevel) {
  LevelSummary s = aggregate_level({}, {"none"});
  EXPECT_EQ(s.sent, 0);
  EXPECT_EQ(s.ttft.count, 0);
  EXPECT_TRUE(std::isnan(s.ttft.p50));
  EXPECT_DOUBLE_EQ(s.window_s, 0);
  EXPECT_TRUE(std::isnan(s.request_throughput_rps));
}

TEST(LevelAccumulator, MergeEqualsOneAccumulator) {
  const auto records = sample_level();
  LevelAccumulator a({"x"}), b({"x"});
  for (size_t i = 0; i < records.size(); ++i) (i % 2 ? a : b).add(records[i]);
  a.merge(b);
  LevelSummary merged = a.summary();
  LevelSummary whole = aggregate_level(records, {"x"});
  EXPECT_EQ(merged.sent, whole.sent);
  EXPECT_EQ(merged.error_count(ErrorKind::kRateLimited), 2);
  EXPECT_DOUBLE_EQ(merged.window_s, whole.window_s);
  EXPECT_DOUBLE_EQ(merged.itl.mean, whole.itl.mean);
  EXPECT_EQ(merged.itl.count, whole.itl.count);
}

TEST(LevelAccumulator, IgnoresOtherPhases) {
  LevelAccumulator acc({"x"});
  RequestTimeline warm = ok_request(0, {10});
  warm.phase = Phase::kWarmup;
  EXPECT_FALSE(acc.add(warm));
  EXPECT_TRUE(acc.add(ok_request(0, {10})));
  EXPECT_EQ(acc.sent(), 1);
}

TEST(AggregateLevel, PerTokenItlDividesEachGapByTheTokensItsChunkCarried) {
  // Request 1: usage 5 over 3 events (30 and 40 ms gaps), no per-event counts: mean 5/3 per chunk.
  // Request 2: per-event counts 1, 2, 4 (continuous usage): gaps 20 ms over 2 and 40 ms over 4.
  RequestTimeline a = ok_request(0, {100, 130, 170}, 5);
  RequestTimeline b = ok_request(0, {10, 30, 70}, 7);
  b.token_events[0].tokens = 1;
  b.token_events[1].tokens = 2;
  b.token_events[2].tokens = 4;
  LevelSummary s = aggregate_level({a, b}, {"c=1", -1, 1});
  ASSERT_EQ(s.itl_per_token.count, 4);
  EXPECT_DOUBLE_EQ(s.itl_per_token.min, 10);  // b: 20/2 and 40/4
  EXPECT_DOUBLE_EQ(s.itl_per_token.max, 24);  // a: 40 / (5/3)
  EXPECT_DOUBLE_EQ(s.itl.max, 40);            // per chunk: unchanged
  // One token per chunk: per-token ITL equals ITL.
  LevelSummary one = aggregate_level({ok_request(0, {100, 130, 170}, 3)}, {"c=1", -1, 1});
  EXPECT_DOUBLE_EQ(one.itl_per_token.p50, one.itl.p50);
  EXPECT_DOUBLE_EQ(one.itl_per_token.max, one.itl.max);
}

TEST(AggregateLevel, TokenCountCheckComparesUsageWithWhatTheStreamCarried) {
  RequestTimeline packed = ok_request(0, {100, 130, 170}, 5);  // 3 events, usage 5: +2
  RequestTimeline exact = ok_request(0, {100, 130}, 2);        // agrees
  RequestTimeline liar = ok_request(0, {10, 30}, 2);           // per-event 3 + 3, usage 2: -4
  liar.token_events[0].tokens = 3;
  liar.token_events[1].tokens = 3;
  RequestTimeline no_usage = ok_request(0, {10, 30});  // not compared
  LevelSummary s = aggregate_level({packed, exact, liar, no_usage}, {"c=1", -1, 1});
  EXPECT_EQ(s.token_count_check.compared, 3);
  EXPECT_EQ(s.token_count_check.differing, 2);
  EXPECT_EQ(s.token_count_check.usage_minus_counted, -2);
  EXPECT_EQ(s.token_count_check.max_abs_difference, 4);
  // Merging two accumulators gives the same check as one.
  LevelAccumulator x({"c=1", -1, 1}), y({"c=1", -1, 1});
  x.add(packed);
  x.add(exact);
  y.add(liar);
  y.add(no_usage);
  x.merge(y);
  EXPECT_EQ(x.summary().token_count_check.usage_minus_counted, -2);
  EXPECT_EQ(x.summary().itl_per_token.count, s.itl_per_token.count);
}

}  // namespace
}  // namespace tokperf
