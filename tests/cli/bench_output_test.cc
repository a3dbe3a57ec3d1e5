// The summary.json golden test: a fixed requests.jsonl (tests/data/golden/requests.jsonl) goes
// through report_run, the path `bench` and `sim run` write summary.json by, and the document must
// equal tests/data/golden/summary.json field by field. Any change to a figure, a field name or the
// statistics shows here as a named path; see tests/data/golden/README.md for how to regenerate the
// expected file and why the diff must be reviewed.
#include "cli/bench_output.h"
#include "cli/run_recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/json_output.h"
#include "support/scratch_dir.h"

namespace tokperf {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kGoldenDir = std::string(TOKPERF_TEST_DATA).append("/golden");
constexpr int64_t kT0 = 1'000'000'000'000;  // monotonic origin of the rebuilt timelines

int64_t ms_to_ns(double ms) { return std::llround(ms * 1e6); }

template <class E, size_t N>
E enum_from_name(const std::string& name, const char* (*name_of)(E)) {
  for (size_t i = 0; i < N; ++i) {
    if (name == name_of(static_cast<E>(i))) return static_cast<E>(i);
  }
  ADD_FAILURE() << "unknown name " << name;
  return static_cast<E>(0);
}

// Rebuilds the client's timeline from one requests.jsonl record (docs/requests-schema.md): sends
// are placed on a monotonic clock by their wall-clock labels, every other time is relative to the
// send as the record gives it.
RequestTimeline timeline_from_record(const json& r, int64_t first_start_us) {
  RequestTimeline t;
  t.seq = r["seq"];
  t.request_id = r["request_id"];
  t.phase = enum_from_name<Phase, 3>(r["phase"], phase_name);
  t.level = r["level"];
  t.start_unix_us = r["start_unix_us"];
  t.send_ns = kT0 + (t.start_unix_us - first_start_us) * 1000;
  t.intended_ns = t.send_ns - ms_to_ns(r["queue_ms"].get<double>());
  t.connect_ms = r["connect_ms"].is_null() ? -1 : r["connect_ms"].get<double>();
  t.ttfb_ms = r["ttfb_ms"].is_null() ? -1 : r["ttfb_ms"].get<double>();
  const auto& token_ms = r["token_ms"];
  const auto& chars = r["content_chars"];
  for (size_t k = 0; k < token_ms.size(); ++k) {
    TokenEvent e{t.send_ns + ms_to_ns(token_ms[k].get<double>())};
    e.chars = chars[k];
    e.visible = e.chars > 0;
    if (e.visible && t.first_visible_ns == 0) t.first_visible_ns = e.t_ns;
    t.token_events.push_back(e);
  }
  t.end_ns = t.send_ns + ms_to_ns(r["end_ms"].get<double>());
  t.last_event_ns = t.token_events.empty() ? 0 : t.token_events.back().t_ns;
  t.chunks = r["chunks"];
  if (r["output_tokens_source"] == "usage") t.usage_completion_tokens = r["output_tokens"];
  if (!r["prompt_tokens"].is_null()) t.usage_prompt_tokens = r["prompt_tokens"];
  t.saw_done = r["saw_done"];
  t.http_status = r["http_status"].is_null() ? 0 : r["http_status"].get<int>();
  if (!r["error"].is_null()) {
    const auto& e = r["error"];
    t.error.kind = enum_from_name<ErrorKind, 12>(e["kind"], error_kind_name);
    t.error.http_status = e["http_status"].is_null() ? 0 : e["http_status"].get<int>();
    t.error.message = e["message"];
  }
  return t;
}

std::vector<json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

// Every difference between two documents, one line each, named by its JSON path. Numbers compare
// with a relative tolerance of 1e-9 (last-bit differences between compilers); everything else
// exactly; a missing or extra field is a difference.
void diff(const json& want, const json& got, const std::string& path,
          std::vector<std::string>& out) {
  if (want.is_number() && got.is_number()) {
    double a = want.get<double>(), b = got.get<double>();
    if (std::abs(a - b) > 1e-9 * std::max(1.0, std::max(std::abs(a), std::abs(b)))) {
      out.push_back(path + ": expected " + want.dump() + ", got " + got.dump());
    }
    return;
  }
  if (want.type() != got.type()) {
    out.push_back(path + ": expected " + want.dump() + ", got " + got.dump());
    return;
  }
  if (want.is_object()) {
    for (auto it = want.begin(); it != want.end(); ++it) {
      if (!got.contains(it.key())) {
        out.push_back(path + "/" + it.key() + ": missing (expected " + it.value().dump() + ")");
      } else {
        diff(it.value(), got[it.key()], path + "/" + it.key(), out);
      }
    }
    for (auto it = got.begin(); it != got.end(); ++it) {
      if (!want.contains(it.key())) {
        out.push_back(path + "/" + it.key() + ": unexpected field " + it.value().dump());
      }
    }
  } else if (want.is_array()) {
    if (want.size() != got.size()) {
      out.push_back(path + ": expected " + std::to_string(want.size()) + " items, got " +
                    std::to_string(got.size()));
    }
    for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
      diff(want[i], got[i], path + "/" + std::to_string(i), out);
    }
  } else if (want != got) {
    out.push_back(path + ": expected " + want.dump() + ", got " + got.dump());
  }
}

struct GoldenRun {
  std::vector<json> input;
  std::vector<RequestTimeline> records;
  json summary;
};

GoldenRun run_golden() {
  GoldenRun g;
  g.input = read_jsonl(kGoldenDir + "/requests.jsonl");
  EXPECT_FALSE(g.input.empty());
  const int64_t first_us = g.input.front()["start_unix_us"];
  for (const json& r : g.input) g.records.push_back(timeline_from_record(r, first_us));

  BenchConfig config;
  config.target.base_url = "http://127.0.0.1:9/v1";
  config.target.model = "golden-model";
  config.prompt.input_tokens = 128;
  config.prompt.output_tokens = 16;
  config.load.plan.levels = {LevelSpec{LoadMode::kConcurrency, 1, 1, 0},
                             LevelSpec{LoadMode::kConcurrency, 4, 4, 0}};
  config.load.plan.measure = PhaseLimit{0, 12};
  config.load.plan.cooldown = PhaseLimit{0, 2};
  config.load.progress = false;
  config.slo = *parse_slo("ttft:p95<=150ms,tpot:p50<=20ms");
  config.run_id = "tpgolden";
  config.record_history = false;
  // One folder per test process: ctest runs the tests of this file in parallel.
  const fs::path dir =
      testing_support::scratch_dir(std::string("tokperf-summary-golden-") +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::create_directories(dir);
  config.out_dir = dir.string();

  RunOutcome outcome;
  outcome.started_unix_us = first_us;
  outcome.start_ns = INT64_MAX;
  for (size_t level = 0; level < config.load.plan.levels.size(); ++level) {
    LevelRunInfo info;
    info.level = static_cast<int>(level);
    info.spec = config.load.plan.levels[level];
    info.start_ns = INT64_MAX;
    int64_t first_intended = INT64_MAX, last_intended = 0;
    for (const auto& t : g.records) {
      if (t.level != info.level) continue;
      info.start_ns = std::min(info.start_ns, t.send_ns);
      info.end_ns = std::max(info.end_ns, t.end_ns);
      if (t.phase != Phase::kMeasure) continue;
      ++info.measured_sent;
      info.first_measured_send_ns = info.first_measured_send_ns == 0
                                        ? t.send_ns
                                        : std::min(info.first_measured_send_ns, t.send_ns);
      info.last_measured_send_ns = std::max(info.last_measured_send_ns, t.send_ns);
      first_intended = std::min(first_intended, t.intended_ns);
      last_intended = std::max(last_intended, t.intended_ns);
    }
    info.measured_span_s = (last_intended - first_intended) / 1e9;
    outcome.start_ns = std::min(outcome.start_ns, info.start_ns);
    outcome.end_ns = std::max(outcome.end_ns, info.end_ns);
    outcome.levels.push_back(info);
  }
  outcome.self.wall_s = (outcome.end_ns - outcome.start_ns) / 1e9;
  outcome.self.peak_in_flight = 4;
  // The records reach the recorder once each, as bench's record sink hands them over.
  RunRecorder recorder(config);
  recorder.set_run_start(outcome.start_ns);
  for (const auto& t : g.records) recorder.add(t);
  EXPECT_EQ(report_run(config, outcome, recorder, {"golden fixture"}, /*json=*/false, "bench"), 0);
  std::ifstream in(dir / "summary.json");
  EXPECT_TRUE(in) << "summary.json was not written";
  std::stringstream ss;
  ss << in.rdbuf();
  g.summary = json::parse(ss.str());
  fs::remove_all(dir);
  return g;
}

// The rebuilt timelines are the recorded requests: written back, each gives its input line.
TEST(SummaryGolden, TheFixtureRoundTripsThroughTheRecordWriter) {
  GoldenRun g = run_golden();
  ASSERT_EQ(g.records.size(), g.input.size());
  for (size_t i = 0; i < g.records.size(); ++i) {
    json written = request_record_json(g.records[i], compute_request_metrics(g.records[i]));
    std::vector<std::string> diffs;
    for (auto it = g.input[i].begin(); it != g.input[i].end(); ++it) {
      diff(it.value(), written[it.key()], "/" + it.key(), diffs);
    }
    for (const auto& d : diffs) ADD_FAILURE() << "record " << i << ": " << d;
  }
}

TEST(SummaryGolden, RequestsJsonlGivesTheCheckedInSummary) {
  GoldenRun g = run_golden();
  const std::string golden_path = kGoldenDir + "/summary.json";
  if (const char* update = std::getenv("TOKPERF_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(golden_path) << g.summary.dump(2) << "\n";
    GTEST_SKIP() << "rewrote " << golden_path << "; review the diff before committing it";
  }
  std::ifstream in(golden_path);
  ASSERT_TRUE(in) << golden_path << " is missing; see tests/data/golden/README.md";
  std::stringstream ss;
  ss << in.rdbuf();
  const json want = json::parse(ss.str());
  std::vector<std::string> diffs;
  diff(want, g.summary, "", diffs);
  for (const auto& d : diffs) ADD_FAILURE() << d;
  EXPECT_TRUE(diffs.empty()) << diffs.size() << " field(s) differ from " << golden_path
                             << " (tests/data/golden/README.md says how to review and regenerate)";
}

}  // namespace
}  // namespace tokperf
