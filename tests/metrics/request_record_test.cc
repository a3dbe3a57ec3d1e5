#include "metrics/request_record.h"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

constexpr int64_t kMs = 1'000'000;

RequestTimeline timeline_with_tokens(std::initializer_list<int64_t> token_ms) {
  RequestTimeline t;
  t.intended_ns = 0;
  t.send_ns = 0;
  for (int64_t ms : token_ms) t.token_events.push_back({ms * kMs, -1, true});
  t.end_ns = token_ms.size() ? (std::data(token_ms)[token_ms.size() - 1] + 5) * kMs : 50 * kMs;
  return t;
}

TEST(RequestMetrics, HandComputedWithUsage) {
  // send 0, tokens at 100, 130, 170 ms, usage says 5 tokens (some chunks carried two).
  RequestTimeline t = timeline_with_tokens({100, 130, 170});
  t.usage_completion_tokens = 5;
  RequestMetrics m = compute_request_metrics(t);
  EXPECT_DOUBLE_EQ(m.ttft_ms, 100);
  EXPECT_DOUBLE_EQ(m.ttfo_ms, 100);
  EXPECT_DOUBLE_EQ(m.e2e_ms, 170);
  EXPECT_DOUBLE_EQ(m.end_ms, 175);
  EXPECT_DOUBLE_EQ(m.tpot_ms, (170.0 - 100.0) / 4);  // 17.5
  ASSERT_EQ(m.itl_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(m.itl_ms[0], 30);
  EXPECT_DOUBLE_EQ(m.itl_ms[1], 40);
  EXPECT_EQ(m.output_tokens, 5);
  EXPECT_TRUE(m.output_tokens_from_usage);
}

TEST(RequestMetrics, CountsTokenEventsWithoutUsage) {
  RequestTimeline t = timeline_with_tokens({100, 130, 170});
  RequestMetrics m = compute_request_metrics(t);
  EXPECT_EQ(m.output_tokens, 3);
  EXPECT_FALSE(m.output_tokens_from_usage);
  EXPECT_DOUBLE_EQ(m.tpot_ms, 35);  // 70 ms over 2 gaps
}

TEST(RequestMetrics, QueueAndFromIntended) {
  RequestTimeline t = timeline_with_tokens({});
  t.intended_ns = 1000 * kMs;
  t.send_ns = 1012 * kMs;
  t.token_events = {{1100 * kMs, -1, false}, {1150 * kMs, -1, true}};
  RequestMetrics m = compute_request_metrics(t);
  EXPECT_DOUBLE_EQ(m.queue_ms, 12);
  EXPECT_DOUBLE_EQ(m.ttft_ms, 88);
  EXPECT_DOUBLE_EQ(m.ttft_from_intended_ms, 100);
  EXPECT_DOUBLE_EQ(m.e2e_ms, 138);
  EXPECT_DOUBLE_EQ(m.e2e_from_intended_ms, 150);
  // The first event was reasoning (not visible): TTFO waits for visible content.
  EXPECT_DOUBLE_EQ(m.ttfo_ms, 138);
}

TEST(RequestMetrics, TransportVisibleMarkWins) {
  RequestTimeline t = timeline_with_tokens({100, 130});
  t.first_visible_ns = 130 * kMs;
  EXPECT_DOUBLE_EQ(compute_request_metrics(t).ttfo_ms, 130);
}

TEST(RequestMetrics, SingleTokenHasNoTpot) {
  RequestTimeline t = timeline_with_tokens({80});
  t.usage_completion_tokens = 1;
  RequestMetrics m = compute_request_metrics(t);
  EXPECT_DOUBLE_EQ(m.ttft_ms, 80);
  EXPECT_DOUBLE_EQ(m.e2e_ms, 80);
  EXPECT_TRUE(std::isnan(m.tpot_ms));
  EXPECT_TRUE(m.itl_ms.empty());
  EXPECT_EQ(m.output_tokens, 1);
}

TEST(RequestMetrics, OneEventCarryingManyTokensHasNoTpot) {
  // usage says 8 tokens but they all arrived in one event: no decode interval to divide.
  RequestTimeline t = timeline_with_tokens({80});
  t.usage_completion_tokens = 8;
  EXPECT_TRUE(std::isnan(compute_request_metrics(t).tpot_ms));
}

TEST(RequestMetrics, NoTokensLeavesLatenciesUndefined) {
  RequestTimeline t = timeline_with_tokens({});
  t.send_ns = 5 * kMs;
  RequestMetrics m = compute_request_metrics(t);
  EXPECT_TRUE(std::isnan(m.ttft_ms));
  EXPECT_TRUE(std::isnan(m.ttfo_ms));
  EXPECT_TRUE(std::isnan(m.e2e_ms));
  EXPECT_TRUE(std::isnan(m.tpot_ms));
  EXPECT_TRUE(std::isnan(m.ttft_from_intended_ms));
  EXPECT_TRUE(m.itl_ms.empty());
  EXPECT_EQ(m.output_tokens, 0);
  EXPECT_DOUBLE_EQ(m.queue_ms, 5);
  EXPECT_DOUBLE_EQ(m.end_ms, 45);
}

TEST(RequestMetrics, FailedPartialStreamKeepsPartialTimings) {
  RequestTimeline t = timeline_with_tokens({200, 220, 250});
  t.error = {ErrorKind::kIncomplete, 200, "connection closed before [DONE]"};
  RequestMetrics m = compute_request_metrics(t);
  EXPECT_FALSE(t.ok());
  EXPECT_DOUBLE_EQ(m.ttft_ms, 200);
  EXPECT_DOUBLE_EQ(m.e2e_ms, 250);
  EXPECT_DOUBLE_EQ(m.tpot_ms, 25);
  ASSERT_EQ(m.itl_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(m.itl_ms[1], 30);
}

TEST(RequestMetrics, PromptTokensPreferUsage) {
  RequestTimeline t = timeline_with_tokens({10});
  t.prompt_tokens_sent = 300;
  EXPECT_EQ(compute_request_metrics(t).prompt_tokens, 300);
  t.usage_prompt_tokens = 302;
  EXPECT_EQ(compute_request_metrics(t).prompt_tokens, 302);
  t = timeline_with_tokens({10});
  EXPECT_EQ(compute_request_metrics(t).prompt_tokens, -1);
}

TEST(RequestRecordNames, SnakeCase) {
  EXPECT_STREQ(phase_name(Phase::kWarmup), "warmup");
  EXPECT_STREQ(phase_name(Phase::kMeasure), "measure");
  EXPECT_STREQ(phase_name(Phase::kCooldown), "cooldown");
  EXPECT_STREQ(error_kind_name(ErrorKind::kConnect), "connect");
  EXPECT_STREQ(error_kind_name(ErrorKind::kHttp), "http");
  EXPECT_STREQ(error_kind_name(ErrorKind::kAuth), "auth");
  EXPECT_STREQ(error_kind_name(ErrorKind::kRateLimited), "rate_limited");
  EXPECT_STREQ(error_kind_name(ErrorKind::kIncomplete), "incomplete");
  EXPECT_STREQ(error_kind_name(ErrorKind::kParse), "parse");
  EXPECT_STREQ(error_kind_name(ErrorKind::kTimeout), "timeout");
  EXPECT_STREQ(error_kind_name(ErrorKind::kNotStreaming), "not_streaming");
  EXPECT_STREQ(error_kind_name(ErrorKind::kStreamError), "stream_error");
  EXPECT_STREQ(error_kind_name(ErrorKind::kCancelled), "cancelled");
  EXPECT_STREQ(error_kind_name(ErrorKind::kOther), "other");
}

}  // namespace
}  // namespace tokperf
