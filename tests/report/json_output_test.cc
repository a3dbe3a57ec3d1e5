#include "report/json_output.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "support/scratch_dir.h"

namespace tokperf {
namespace {

using nlohmann::json;
constexpr int64_t kMs = 1'000'000;

RequestTimeline sample_timeline() {
  RequestTimeline t;
  t.seq = 7;
  t.request_id = "req-7";
  t.level = 2;
  t.intended_ns = 0;
  t.send_ns = 2 * kMs;
  t.start_unix_us = 1'700'000'000'000'000;
  t.connect_ms = 0.5;
  t.ttfb_ms = -1;  // unknown: written as null
  t.token_events = {{102 * kMs, -1, true}, {132 * kMs, -1, true}, {172 * kMs, -1, true}};
  t.end_ns = 175 * kMs;
  t.chunks = 5;
  t.usage_completion_tokens = 5;
  t.usage_prompt_tokens = 64;
  t.saw_done = true;
  t.http_status = 200;
  return t;
}

std::filesystem::path temp_dir() {
  // One directory for the process (the tests below call this more than once).
  static const std::filesystem::path d = testing_support::scratch_dir("tokperf_json_test");
  std::filesystem::create_directories(d);
  return d;
}

TEST(RequestRecordJson, FieldsAndRoundTrip) {
  const RequestTimeline t = sample_timeline();
  const json j = json::parse(request_record_json(t, compute_request_metrics(t)).dump());
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["request_id"], "req-7");
  EXPECT_EQ(j["phase"], "measure");
  EXPECT_EQ(j["level"], 2);
  EXPECT_EQ(j["ok"], true);
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["start_unix_us"], 1'700'000'000'000'000);
  EXPECT_DOUBLE_EQ(j["queue_ms"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(j["connect_ms"].get<double>(), 0.5);
  EXPECT_TRUE(j["ttfb_ms"].is_null());
  EXPECT_DOUBLE_EQ(j["ttft_ms"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(j["ttfo_ms"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(j["tpot_ms"].get<double>(), 17.5);
  EXPECT_DOUBLE_EQ(j["e2e_ms"].get<double>(), 170);
  EXPECT_DOUBLE_EQ(j["ttft_from_intended_ms"].get<double>(), 102);
  EXPECT_EQ(j["itl_ms"], json({30.0, 40.0}));
  EXPECT_EQ(j["output_tokens"], 5);
  EXPECT_EQ(j["output_tokens_source"], "usage");
  EXPECT_EQ(j["prompt_tokens"], 64);
  EXPECT_EQ(j["chunks"], 5);
}

TEST(RequestRecordJson, NaNBecomesNullAndErrorIsFilled) {
  RequestTimeline t;
  t.request_id = "r";
  t.phase = Phase::kWarmup;
  t.send_ns = t.end_ns = 10 * kMs;
  t.error = {ErrorKind::kRateLimited, 429, "HTTP 429: Too Many Requests"};
  const std::string line = request_record_json(t, compute_request_metrics(t)).dump();
  EXPECT_EQ(line.find("NaN"), std::string::npos);
  EXPECT_EQ(line.find("nan"), std::string::npos);
  const json j = json::parse(line);
  EXPECT_EQ(j["phase"], "warmup");
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"]["kind"], "rate_limited");
  EXPECT_EQ(j["error"]["http_status"], 429);
  EXPECT_EQ(j["error"]["message"], "HTTP 429: Too Many Requests");
  for (const char* k : {"ttft_ms", "ttfo_ms", "tpot_ms", "e2e_ms", "ttft_from_intended_ms",
                        "connect_ms", "ttfb_ms", "prompt_tokens"}) {
    EXPECT_TRUE(j[k].is_null()) << k;
  }
  EXPECT_EQ(j["output_tokens"], 0);
  EXPECT_EQ(j["output_tokens_source"], "counted");
  EXPECT_TRUE(j["itl_ms"].is_array());
  EXPECT_TRUE(j["itl_ms"].empty());
}

// The writer's direct serializer must give exactly the text of the json object, for every shape a
// record takes: optional keys (sessions, tools, server timings), nulls, errors with escapes and
// invalid UTF-8, integral and fractional doubles, negative and huge values.
TEST(RequestRecordJson, DirectLineIsByteForByteTheObjectsDump) {
  std::vector<RequestTimeline> cases;
  cases.push_back(sample_timeline());
  {
    RequestTimeline t;  // an error: quotes, a control character, invalid UTF-8
    t.request_id = "r\"1\\x";
    t.phase = Phase::kCooldown;
    t.send_ns = t.end_ns = 10 * kMs;
    t.error = {ErrorKind::kStreamError, 0, std::string("bad \"byte\" \x01 \xff\xfe end")};
    cases.push_back(t);
  }
  {
    RequestTimeline t = sample_timeline();  // sessions, tools, server timings, prefix, cache
    t.session = 12;
    t.turn = 3;
    t.tools_sent = true;
    t.tool_call_seen = true;
    t.tool_call_ns = 150 * kMs;
    t.prefix_group = 4;
    t.requested_input_tokens = 512;
    t.input_tokens_method = "tokenizer";
    t.requested_output_tokens = 0;
    t.usage_cached_tokens = 448;
    t.server.source = "llamacpp_timings";
    t.server.prompt_ms = 12.25;
    t.server.decode_ms = 1e-7;
    t.server.queue_ms = 0;
    t.server.predicted_tokens = 5;
    t.token_events[1].t_ns = 132 * kMs + 333'777;  // a fractional, rounded token_ms
    t.token_events[2].chars = 17;
    t.token_events[0].tokens = 2;  // the server gave counts: token_counts is written
    t.token_events[1].tokens = 1;
    t.connect_ms = 123456789.125;
    cases.push_back(t);
  }
  {
    RequestTimeline t = sample_timeline();  // tools sent, never completed; odd numbers
    t.tools_sent = true;
    t.send_ns = 3;
    t.intended_ns = 7;  // sent "before" it was due: a negative queue
    t.start_unix_us = -5;
    t.seq = UINT64_MAX;
    t.level = -1;
    cases.push_back(t);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const RequestMetrics m = compute_request_metrics(cases[i]);
    std::string line;
    append_request_record(line, cases[i], m);
    EXPECT_EQ(line, request_record_json(cases[i], m)
                        .dump(-1, ' ', false, json::error_handler_t::replace))
        << "case " << i;
  }
}

// Millisecond figures made of whole nanoseconds are written by integer arithmetic: over many
// random and edge values, the line reads back as exactly the record the json object holds (same
// doubles, bit for bit). The text can differ only where nlohmann's Grisu2 writes more digits than
// the shortest (1723054.9559839999 for 1723054.955984, the same double), so it is compared parsed.
TEST(RequestRecordJson, NanosecondFiguresHaveTheSameTextAsTheGeneralWriter) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> ns = {0, 1, 99, 100, 101, 999'999, 1'000'000, 1'000'001, 123'456'789,
                             999'999'999'999'999, 1'000'000'000'000'000, -1, -1'500'000};
  for (int i = 0; i < 20000; ++i) ns.push_back(static_cast<int64_t>(rng() % 2'000'000'000'000));
  for (int i = 0; i < 2000; ++i) ns.push_back(static_cast<int64_t>(rng() % 10'000));
  for (int64_t k : ns) {
    RequestTimeline t = sample_timeline();
    t.token_events = {{t.send_ns + std::abs(k), 3, true}};
    t.end_ns = t.send_ns + std::abs(k) + 1;
    t.connect_ms = static_cast<double>(k) / 1e6;  // any sign, written as given when >= 0
    t.ttfb_ms = static_cast<double>(k) / 1e6 + 1e-9;  // not a whole nanosecond: general path
    const RequestMetrics m = compute_request_metrics(t);
    std::string line;
    append_request_record(line, t, m);
    ASSERT_EQ(json::parse(line), request_record_json(t, m)) << "ns " << k << ": " << line;
  }
}

TEST(RequestsJsonlWriter, OneLinePerRecordVisibleBeforeClose) {
  const auto path = (temp_dir() / "requests.jsonl").string();
  RequestsJsonlWriter w;
  ASSERT_TRUE(w.open(path).ok());
  const RequestTimeline t = sample_timeline();
  const RequestMetrics m = compute_request_metrics(t);
  ASSERT_TRUE(w.write(t, m).ok());
  ASSERT_TRUE(w.write(t, m).ok());
  // Flushed per line: a reader sees both lines while the writer is still open.
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(json::parse(line)["request_id"], "req-7");
    ++lines;
  }
  EXPECT_EQ(lines, 2);
  EXPECT_EQ(w.lines_written(), 2);
  EXPECT_TRUE(w.close().ok());
  EXPECT_FALSE(w.write(t, m).ok());  // closed
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RequestsJsonlWriter, BackgroundModeWritesTheSameLinesInTheSameOrder) {
  // More records than a few batches, each one different, some failed: the writer thread's file
  // must be the caller-thread file byte for byte.
  const auto dir = temp_dir();
  const auto direct = (dir / "direct.jsonl").string(), bg = (dir / "bg.jsonl").string();
  RequestsJsonlWriter a, b;
  ASSERT_TRUE(a.open(direct).ok());
  ASSERT_TRUE(b.open(bg).ok());
  a.set_flush_each_line(false);
  b.set_flush_each_line(false);
  b.set_background(true);
  constexpr int kRecords = 2000;
  for (int i = 0; i < kRecords; ++i) {
    RequestTimeline t = sample_timeline();
    t.seq = static_cast<uint64_t>(i);
    t.request_id = "req-" + std::to_string(i);
    t.token_events.resize(1 + i % 7, t.token_events.front());
    for (size_t k = 0; k < t.token_events.size(); ++k) {
      t.token_events[k].t_ns = (100 + i % 13 + 30 * static_cast<int64_t>(k)) * kMs + i;
    }
    if (i % 97 == 0) t.error = {ErrorKind::kHttp, 500, "boom " + std::to_string(i)};
    const RequestMetrics m = compute_request_metrics(t);
    ASSERT_TRUE(a.write(t, m).ok());
    ASSERT_TRUE(b.write(t, m).ok());
  }
  ASSERT_TRUE(a.close().ok());
  ASSERT_TRUE(b.close().ok());
  EXPECT_EQ(b.lines_written(), kRecords);
  const std::string want = file_text(direct), got = file_text(bg);
  EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), kRecords);
  EXPECT_TRUE(got == want) << "background file differs (" << got.size() << " vs " << want.size()
                           << " bytes)";
}

TEST(RequestsJsonlWriter, BackgroundModeReportsAWriteErrorWithThePath) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  RequestsJsonlWriter w;
  ASSERT_TRUE(w.open("/dev/full").ok());
  w.set_flush_each_line(false);
  w.set_background(true);
  const RequestTimeline t = sample_timeline();
  const RequestMetrics m = compute_request_metrics(t);
  // The error shows on a later write or, at the latest, on close; writing never blocks on it.
  Status first_error = Status::Ok();
  for (int i = 0; i < 5000 && first_error.ok(); ++i) first_error = w.write(t, m);
  Status closed = w.close();
  const Status& err = first_error.ok() ? closed : first_error;
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().find("/dev/full"), std::string::npos) << err.error();
  EXPECT_FALSE(w.write(t, m).ok());  // closed
}

TEST(RequestsJsonlWriter, ReportsOpenFailure) {
  RequestsJsonlWriter w;
  Status s = w.open("/nonexistent-dir-tokperf/requests.jsonl");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("/nonexistent-dir-tokperf/requests.jsonl"), std::string::npos);
}

TEST(SummaryJson, ShapeAndAtomicWrite) {
  std::vector<RequestTimeline> recs = {sample_timeline()};
  recs.push_back(sample_timeline());
  recs[1].error = {ErrorKind::kIncomplete, 0, "dropped"};
  LevelSummary level = aggregate_level(recs, {"c=1", -1, 1});
  ClientHealth health;
  health.cpu_utilisation_pct = 12.5;
  health.warnings = {"w1"};
  const json config = {{"url", "http://127.0.0.1:8000/v1"}, {"api_key", "<redacted>"}};
  const json doc = summary_json(config, {level}, health, {"bench", 42, 3.5, "completed", {}, {}});

  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["tokperf_version"], TOKPERF_VERSION);
  EXPECT_EQ(doc["config"], config);
  ASSERT_EQ(doc["levels"].size(), 1u);
  const json& l = doc["levels"][0];
  EXPECT_EQ(l["concurrency"], 1);
  EXPECT_TRUE(l["target_rate_rps"].is_null());
  EXPECT_EQ(l["requests"]["sent"], 2);
  EXPECT_EQ(l["requests"]["ok"], 1);
  EXPECT_EQ(l["requests"]["errors_by_kind"]["incomplete"], 1);
  EXPECT_DOUBLE_EQ(l["ttft_ms"]["p50"].get<double>(), 100);
  EXPECT_EQ(l["tpot_ms"]["count"], 1);
  EXPECT_TRUE(l["ttft_ms"].contains("p99_9"));
  EXPECT_DOUBLE_EQ(doc["client_health"]["cpu_utilisation_pct"].get<double>(), 12.5);
  EXPECT_TRUE(doc["client_health"]["loop_lag_ms"]["p99"].is_null());
  EXPECT_EQ(doc["client_health"]["warnings"], json({"w1"}));

  const auto path = (temp_dir() / "summary.json").string();
  ASSERT_TRUE(write_json_file(path, doc).ok());
  std::ifstream in(path);
  EXPECT_EQ(json::parse(in), doc);
  for (const auto& e : std::filesystem::directory_iterator(temp_dir())) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  }
  EXPECT_FALSE(write_json_file("/nonexistent-dir-tokperf/summary.json", doc).ok());
}

}  // namespace
}  // namespace tokperf
