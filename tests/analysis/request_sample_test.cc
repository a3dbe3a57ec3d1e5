// analysis/request_sample: an in-memory request's sample is what its requests.jsonl line reads
// back as, and a run's RecordSampler keeps the records a reader of the finished file samples.
#include "analysis/request_sample.h"

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/level_result.h"
#include "metrics/slo.h"
#include "report/json_output.h"
#include "report/load_report.h"
#include "report/run_fixture.h"
#include "report/run_loader.h"

namespace tokperf {
namespace {

constexpr int64_t kMs = 1'000'000;

bool same_number(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expect_same_numbers(const std::vector<double>& a, const std::vector<double>& b,
                         const char* what, int64_t seq) {
  ASSERT_EQ(a.size(), b.size()) << what << " of seq " << seq;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(same_number(a[i], b[i])) << what << "[" << i << "] of seq " << seq << ": "
                                         << a[i] << " vs " << b[i];
  }
}

void expect_same_sample(const RequestSample& a, const RequestSample& b) {
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.level, b.level) << a.seq;
  EXPECT_EQ(a.measured, b.measured) << a.seq;
  EXPECT_EQ(a.ok, b.ok) << a.seq;
  EXPECT_EQ(a.error_kind, b.error_kind) << a.seq;
  EXPECT_EQ(a.start_unix_us, b.start_unix_us) << a.seq;
  for (auto f : {&RequestSample::queue_ms, &RequestSample::ttft_ms, &RequestSample::ttfo_ms,
                 &RequestSample::tpot_ms, &RequestSample::e2e_ms, &RequestSample::end_ms}) {
    EXPECT_TRUE(same_number(a.*f, b.*f)) << a.seq << ": " << a.*f << " vs " << b.*f;
  }
  expect_same_numbers(a.itl_ms, b.itl_ms, "itl_ms", a.seq);
  expect_same_numbers(a.token_ms, b.token_ms, "token_ms", a.seq);
  EXPECT_EQ(a.output_tokens, b.output_tokens) << a.seq;
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens) << a.seq;
  EXPECT_EQ(a.content_chars, b.content_chars) << a.seq;
}

// Varied records: odd nanoseconds (not whole microseconds), failures with no token, warm-up,
// unknown and known prompt sizes, token counts per event, visible characters.
std::vector<RequestTimeline> varied_records(int n) {
  std::vector<RequestTimeline> out;
  for (int i = 0; i < n; ++i) {
    RequestTimeline t;
    t.seq = static_cast<uint64_t>(i);
    t.request_id = "r" + std::to_string(i);
    t.level = i % 3;
    t.phase = i % 11 == 0 ? Phase::kWarmup : Phase::kMeasure;
    t.intended_ns = 1'000 * kMs + i * 7'777'777LL;
    t.send_ns = t.intended_ns + (i % 5) * 123'457;
    t.start_unix_us = 1'700'000'000'000'000 + t.send_ns / 1000;
    t.http_status = 200;
    if (i % 13 == 5) {
      t.http_status = 500;
      t.error = {ErrorKind::kHttp, 500, "boom"};
      t.end_ns = t.send_ns + 3 * kMs + 1;
    } else {
      const int tokens = 1 + i % 9;
      for (int k = 0; k < tokens; ++k) {
        const int64_t at = t.send_ns + 40 * kMs + k * (9 * kMs + 333) + (i * 37 + k * 11) % 1000;
        t.token_events.push_back({at, i % 4 == 0 ? 2 : -1, k % 3 != 1, (k * 5 + i) % 17});
      }
      t.first_visible_ns = t.token_events.front().t_ns;
      t.end_ns = t.token_events.back().t_ns + kMs;
      t.usage_completion_tokens = i % 2 ? tokens * (i % 4 == 0 ? 2 : 1) : -1;
      t.usage_prompt_tokens = i % 3 ? 100 + i : -1;
      t.saw_done = true;
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string write_records(const std::vector<RequestTimeline>& records) {
  const std::string dir = testing_fixture::fresh_dir("request-sample");
  RequestsJsonlWriter w;
  EXPECT_TRUE(w.open(dir + "/requests.jsonl").ok());
  for (const RequestTimeline& t : records) {
    EXPECT_TRUE(w.write(t, compute_request_metrics(t)).ok());
  }
  EXPECT_TRUE(w.close().ok());
  std::ofstream(dir + "/summary.json") << R"({"levels": []})";
  return dir;
}

TEST(RequestSampleFrom, IsWhatTheRecordReadsBackAsFieldByField) {
  const std::vector<RequestTimeline> records = varied_records(60);
  const std::string dir = write_records(records);
  Result<SavedRun> run = load_run(dir);
  ASSERT_TRUE(run) << run.error();
  ASSERT_EQ(run->requests.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    expect_same_sample(request_sample_from(records[i], compute_request_metrics(records[i])),
                       run->requests[i]);
  }
}

TEST(SampleStride, IsTheSmallestPowerOfTwoThatKeepsTheSampleWithinItsBound) {
  EXPECT_EQ(sample_stride(0, 10), 1);
  EXPECT_EQ(sample_stride(10, 10), 1);
  EXPECT_EQ(sample_stride(11, 10), 2);
  EXPECT_EQ(sample_stride(20, 10), 2);
  EXPECT_EQ(sample_stride(21, 10), 4);
  EXPECT_EQ(sample_stride(100'000, 10'000), 16);  // 6,250 kept
  EXPECT_EQ(sample_stride(1'000'000, 0), 1);      // no bound
  EXPECT_EQ(sample_stride(5, 1), 8);
}

TEST(RecordSampler, HoldsExactlyWhatSampleStridePicksFromTheRecordsSoFar) {
  for (size_t max : {size_t{0}, size_t{1}, size_t{3}, size_t{10}, size_t{64}}) {
    RecordSampler s(max);
    for (int64_t n = 1; n <= 1100; ++n) {
      RequestTimeline t;
      t.seq = static_cast<uint64_t>(n - 1);
      s.add(t, compute_request_metrics(t));
      const int64_t k = sample_stride(n, max);
      ASSERT_EQ(s.stride(), k) << "max " << max << ", n " << n;
      ASSERT_EQ(static_cast<int64_t>(s.samples().size()), (n + k - 1) / k) << max << " " << n;
      if (max > 0) {
        ASSERT_LE(s.samples().size(), max);
      }
      for (size_t i = 0; i < s.samples().size(); ++i) {
        ASSERT_EQ(s.samples()[i].seq, static_cast<int64_t>(i) * k) << max << " " << n;
      }
    }
  }
}

TEST(RecordSampler, AKeptSampleLoadsAsTheFileSampleDoes) {
  // What bench hands to the report while writing is what `tokperf report` reads from the files.
  const std::vector<RequestTimeline> records = varied_records(237);
  const std::string dir = write_records(records);
  for (size_t max : {size_t{0}, size_t{10}, size_t{100}, size_t{237}}) {
    RecordSampler kept(max);
    for (const RequestTimeline& t : records) kept.add(t, compute_request_metrics(t));
    Result<SavedRun> from_file = load_run(dir, max);
    Result<SavedRun> from_memory = load_run(dir, max, &kept);
    ASSERT_TRUE(from_file && from_memory);
    EXPECT_EQ(from_memory->stride, from_file->stride) << max;
    EXPECT_EQ(from_memory->request_lines, from_file->request_lines) << max;
    EXPECT_EQ(from_memory->warnings, from_file->warnings) << max;
    ASSERT_EQ(from_memory->requests.size(), from_file->requests.size()) << max;
    for (size_t i = 0; i < from_file->requests.size(); ++i) {
      expect_same_sample(from_memory->requests[i], from_file->requests[i]);
    }
  }
}

TEST(SampleSloJudge, StreamedEqualsTheJudgementOfTheWholeSample) {
  const std::vector<RequestTimeline> records = varied_records(300);
  std::vector<RequestSample> samples;
  for (const RequestTimeline& t : records) {
    samples.push_back(request_sample_from(t, compute_request_metrics(t)));
  }
  auto spec = parse_slo("ttft:p90<=60ms,itl:p99<=9.5ms,tpot:p50<=10ms");
  ASSERT_TRUE(spec) << spec.error();
  SampleSloJudge judge(*spec);
  for (const RequestSample& r : samples) judge.add(r);
  for (int level : {-1, 0, 1, 2, 7}) {
    const SloReport want = evaluate_slo_on_samples(*spec, samples, level, 12.5);
    const SloReport got = judge.finish(level, 12.5);
    EXPECT_EQ(slo_report_json(got).dump(), slo_report_json(want).dump()) << "level " << level;
  }
}

}  // namespace
}  // namespace tokperf
