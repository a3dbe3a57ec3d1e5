#include "report/record_reader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "report/json_output.h"

namespace tokperf {
namespace {

// Bitwise equality of two metrics (NaN equals NaN: both undefined).
void expect_same(double a, double b, const char* what) {
  if (std::isnan(a) || std::isnan(b)) {
    EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << what << ": " << a << " vs " << b;
  } else {
    EXPECT_EQ(a, b) << what;
  }
}

void expect_same_metrics(const RequestMetrics& a, const RequestMetrics& b) {
  expect_same(a.queue_ms, b.queue_ms, "queue");
  expect_same(a.ttft_ms, b.ttft_ms, "ttft");
  expect_same(a.ttfo_ms, b.ttfo_ms, "ttfo");
  expect_same(a.tpot_ms, b.tpot_ms, "tpot");
  expect_same(a.e2e_ms, b.e2e_ms, "e2e");
  expect_same(a.end_ms, b.end_ms, "end");
  expect_same(a.ttft_from_intended_ms, b.ttft_from_intended_ms, "ttft_from_intended");
  expect_same(a.e2e_from_intended_ms, b.e2e_from_intended_ms, "e2e_from_intended");
  expect_same(a.tool_call_ms, b.tool_call_ms, "tool_call");
  ASSERT_EQ(a.itl_ms.size(), b.itl_ms.size());
  for (size_t i = 0; i < a.itl_ms.size(); ++i) EXPECT_EQ(a.itl_ms[i], b.itl_ms[i]) << i;
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_EQ(a.output_tokens_from_usage, b.output_tokens_from_usage);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
}

// Awkward stamps on the monotonic clock: odd nanoseconds, large offsets.
RequestTimeline streamed(uint64_t seq) {
  RequestTimeline t;
  t.seq = seq;
  t.request_id = "tpx-" + std::to_string(seq);
  t.level = 1;
  t.intended_ns = 987'654'321'123 + static_cast<int64_t>(seq) * 7;
  t.send_ns = t.intended_ns + 1'234'567;
  t.start_unix_us = 1'764'630'000'123'457;
  t.connect_ms = 0.25;
  t.ttfb_ms = 12.5;
  int64_t at = t.send_ns + 38'510'001;
  for (int k = 0; k < 9; ++k) {
    t.token_events.push_back({at, -1, k != 2, k == 2 ? 0 : 3 + k});
    at += 9'402'777 + k * 13;
  }
  t.end_ns = at + 250'001;
  t.chunks = 11;
  t.saw_done = true;
  t.http_status = 200;
  t.usage_prompt_tokens = 128;
  t.usage_completion_tokens = 9;
  t.requested_input_tokens = 130;
  t.input_tokens_method = "server_tokenize";  // read back as the same fixed name
  t.requested_output_tokens = 16;
  t.prefix_group = 2;
  t.usage_cached_tokens = 64;
  return t;
}

TEST(RecordReader, RebuiltTimelineGivesTheSameMetricsAndTheSameRecord) {
  std::vector<RequestTimeline> cases;
  cases.push_back(streamed(1));
  {
    RequestTimeline t = streamed(2);  // counted tokens, per-event counts, no usage, warm-up
    t.phase = Phase::kWarmup;
    t.usage_completion_tokens = -1;
    t.usage_prompt_tokens = -1;
    t.prompt_tokens_sent = 100;
    for (auto& e : t.token_events) e.tokens = 2;
    t.usage_cached_tokens = -1;
    cases.push_back(t);
  }
  {
    RequestTimeline t = streamed(3);  // a session turn with tools and server timings
    t.session = 17;
    t.turn = 3;
    t.tools_sent = true;
    t.tool_call_seen = true;
    t.tool_call_ns = t.token_events[5].t_ns;
    t.server.source = "llamacpp.timings";
    t.server.prompt_ms = 12.75;
    t.server.decode_ms = 80.125;
    t.server.cached_tokens = 64;
    t.server.predicted_tokens = 9;
    cases.push_back(t);
  }
  {
    RequestTimeline t;  // failed before any token
    t.seq = 4;
    t.phase = Phase::kCooldown;
    t.intended_ns = 5'000'000'001;
    t.send_ns = 5'000'000'001;
    t.start_unix_us = 1'764'630'001'000'000;
    t.end_ns = t.send_ns + 3'000'000'003;
    t.error = {ErrorKind::kRateLimited, 429, "slow down"};
    t.http_status = 429;
    cases.push_back(t);
  }
  for (const RequestTimeline& t : cases) {
    const RequestMetrics m = compute_request_metrics(t);
    const nlohmann::json rec = request_record_json(t, m);
    // Through text, as the file holds it.
    auto back = timeline_from_record(nlohmann::json::parse(rec.dump()));
    ASSERT_TRUE(back) << back.error();
    const RequestMetrics m2 = compute_request_metrics(*back);
    expect_same_metrics(m, m2);
    EXPECT_EQ(request_record_json(*back, m2), rec) << rec.dump();
    EXPECT_EQ(back->ok(), t.ok());
    EXPECT_EQ(back->error.kind, t.error.kind);
    EXPECT_EQ(back->phase, t.phase);
    EXPECT_EQ(back->cached_prompt_tokens(), t.cached_prompt_tokens());
    EXPECT_EQ(back->send_ns, t.start_unix_us * 1000);  // on the wall clock
  }
}

TEST(RecordReader, RefusesRecordsMissingWhatMetricsNeed) {
  EXPECT_FALSE(timeline_from_record(nlohmann::json::array()));
  auto rec = request_record_json(streamed(1), compute_request_metrics(streamed(1)));
  rec.erase("queue_ms");
  auto r = timeline_from_record(rec);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("queue_ms"), std::string::npos);
  rec = request_record_json(streamed(1), compute_request_metrics(streamed(1)));
  rec["itl_ms"].erase(0);
  EXPECT_FALSE(timeline_from_record(rec));
  rec["phase"] = "bogus";
  EXPECT_FALSE(timeline_from_record(rec));
}

TEST(RecordReader, StreamsAFileAndStopsAtATornLastLine) {
  const std::string path = ::testing::TempDir() + "/record_reader_test.jsonl";
  {
    std::ofstream f(path);
    for (uint64_t s = 1; s <= 3; ++s) {
      f << request_record_json(streamed(s), compute_request_metrics(streamed(s))).dump() << "\n";
    }
    f << "\n{\"seq\": 4, \"pha";  // a crash mid-line
  }
  RecordFileReader r;
  ASSERT_TRUE(r.open(path));
  int n = 0;
  for (;;) {
    auto t = r.next();
    ASSERT_TRUE(t) << t.error();
    if (!*t) break;
    EXPECT_EQ((*t)->seq, static_cast<uint64_t>(++n));
  }
  EXPECT_EQ(n, 3);
  EXPECT_EQ(r.torn_lines(), 1);

  {
    std::ofstream f(path);
    f << "not json\n"
      << request_record_json(streamed(1), compute_request_metrics(streamed(1))).dump() << "\n";
  }
  RecordFileReader bad;
  ASSERT_TRUE(bad.open(path));
  auto t = bad.next();
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().find("line 1 is not JSON"), std::string::npos) << t.error();
  RecordFileReader none;
  EXPECT_FALSE(none.open(path + ".missing"));
}

}  // namespace
}  // namespace tokperf
