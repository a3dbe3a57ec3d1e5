// End-to-end: several event loops (`--threads N`, load/loop_worker.h) against the scripted server.
// The loops together must send exactly what one loop sends: the planned closed-loop counts, the
// open-loop schedule (the same arrivals at the same intended times), each request once with a seq
// number and id of its own, every request accounted for (sent = ok + failed); the merged results
// equal those one builder computes over the same records. Also built under ThreadSanitizer
// (-DTOKPERF_TSAN=ON, tokperf_tsan_tests). No timing is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/level_result.h"
#include "client/request_builder.h"
#include "core/clock.h"
#include "load/bench_runner.h"
#include "load/loop_split.h"
#include "load/loop_worker.h"
#include "load/open_loop_schedule.h"
#include "metrics/request_record.h"
#include "report/json_output.h"
#include "support/scripted_server.h"

namespace tokperf {
namespace {

using testing_support::Fault;
using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;

ScriptedServerOptions quick_server() {
  ScriptedServerOptions o;
  o.script.ttft_ms = 3;
  o.script.itl_ms = 1;
  o.script.tokens = 4;
  o.tokenize_enabled = false;
  return o;
}

BenchConfig config_for(const ScriptedServer& s, int threads) {
  BenchConfig c;
  c.target.base_url = s.base_url();
  c.target.api = "chat";
  c.target.model = "tokperf-test-model";
  c.prompt.text = "hello";
  c.prompt.output_tokens = 4;
  c.load.timeout_ns = 20'000'000'000;
  c.load.progress = false;
  c.load.stop_on_saturation = false;
  c.load.threads = threads;
  c.run_id = "loops";
  return c;
}

LevelSpec concurrency(double c) { return LevelSpec{LoadMode::kConcurrency, c, c, 0}; }
LevelSpec rate(double r) { return LevelSpec{LoadMode::kRate, r, r, 0}; }

struct LoopRun {
  std::vector<RequestTimeline> records;
  std::vector<LevelRunInfo> levels;
  int loops = 0;
  bool completed = false;
};

LoopRun run_loops(const BenchConfig& c) {
  LoopRun out;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt),
                     [&](const RequestTimeline& t) { out.records.push_back(t); });
  out.loops = runner.loops();
  out.completed = runner.run();
  out.levels = runner.levels();
  return out;
}

int64_t count(const LoopRun& r, int level, Phase phase) {
  return std::count_if(r.records.begin(), r.records.end(), [&](const RequestTimeline& t) {
    return t.level == level && t.phase == phase;
  });
}

// Every record has a seq of its own, the seqs are 0..n-1, and the ids are unique.
void expect_unique_ids(const LoopRun& r) {
  std::set<uint64_t> seqs;
  std::set<std::string> ids;
  for (const auto& t : r.records) {
    seqs.insert(t.seq);
    ids.insert(t.request_id);
  }
  EXPECT_EQ(seqs.size(), r.records.size());
  EXPECT_EQ(ids.size(), r.records.size());
  if (!seqs.empty()) {
    EXPECT_EQ(*seqs.begin(), 0u);
    EXPECT_EQ(*seqs.rbegin(), r.records.size() - 1);
  }
}

std::vector<LevelParams> params_for(const BenchConfig& c) {
  std::vector<LevelParams> p;
  for (size_t i = 0; i < c.load.plan.levels.size(); ++i) {
    LevelParams l;
    l.level = static_cast<int>(i);
    l.label = c.load.plan.levels[i].label();
    p.push_back(l);
  }
  return p;
}

TEST(MultiLoopE2E, ClosedLoopSendsExactlyThePlannedRequestsOnce) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, 2);
  c.load.plan.levels = {concurrency(5)};
  c.load.plan.measure = PhaseLimit{0, 23};
  LoopRun r = run_loops(c);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.loops, 2);
  // Default warm-up: one request per slot (2 + 3 over the two loops), then 23 measured (11 + 12).
  EXPECT_EQ(count(r, 0, Phase::kWarmup), 5);
  EXPECT_EQ(count(r, 0, Phase::kMeasure), 23);
  ASSERT_EQ(r.levels.size(), 1u);
  EXPECT_EQ(r.levels[0].measured_sent, 23);
  expect_unique_ids(r);
  // The server saw each of them once.
  ASSERT_TRUE(server.wait_finished(r.records.size(), 10'000));
  std::map<std::string, int> seen;
  for (const auto& rec : server.records()) seen[rec.request_id]++;
  EXPECT_EQ(seen.size(), r.records.size());
  for (const auto& t : r.records) EXPECT_EQ(seen[t.request_id], 1) << t.request_id;
}

TEST(MultiLoopE2E, OpenLoopLoopsSendTheSingleLoopScheduleAtTheSameIntendedTimes) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  auto open_config = [&](int threads) {
    BenchConfig c = config_for(server, threads);
    c.load.plan.levels = {rate(400)};
    c.load.plan.arrivals = ArrivalKind::kPoisson;
    c.load.plan.seed = 7;
    c.load.default_warmup = false;
    c.load.plan.warmup = PhaseLimit{0, 6};
    c.load.plan.measure = PhaseLimit{0, 41};
    return c;
  };
  const BenchConfig one = open_config(1), three = open_config(3);
  LoopRun r1 = run_loops(one);
  LoopRun r3 = run_loops(three);
  ASSERT_TRUE(r1.completed);
  ASSERT_TRUE(r3.completed);
  EXPECT_EQ(r1.loops, 1);
  EXPECT_EQ(r3.loops, 3);
  // Intended start relative to the level's start, for every request of every phase.
  auto offsets = [](const LoopRun& r) {
    std::vector<int64_t> v;
    for (const auto& t : r.records) v.push_back(t.intended_ns - r.levels[0].start_ns);
    std::sort(v.begin(), v.end());
    return v;
  };
  const OpenLoopSchedule s = plan_open_loop_schedule(one.load, 0);
  std::vector<int64_t> planned;
  for (const PlannedArrival& a : s.arrivals) {
    planned.push_back(LoopWorker::kOpenLoopLeadNs + a.offset_ns);
  }
  std::sort(planned.begin(), planned.end());
  EXPECT_EQ(planned.size(), 47u);
  EXPECT_EQ(offsets(r1), planned);
  EXPECT_EQ(offsets(r3), planned);
  for (const LoopRun* r : {&r1, &r3}) {
    ASSERT_EQ(r->levels.size(), 1u);
    const LevelRunInfo& l = r->levels[0];
    EXPECT_EQ(l.schedule_fingerprint, s.fingerprint);
    EXPECT_EQ(l.scheduled_arrivals, 47);
    EXPECT_EQ(l.measured_sent, 41);
    EXPECT_EQ(static_cast<int64_t>(l.send_lag_ns.size()), 41);
    EXPECT_EQ(count(*r, 0, Phase::kMeasure), 41);
    EXPECT_EQ(count(*r, 0, Phase::kWarmup), 6);
    expect_unique_ids(*r);
  }
  // The merged info keeps the whole schedule's own figures.
  EXPECT_EQ(r3.levels[0].scheduled_rate_rps, r1.levels[0].scheduled_rate_rps);
  EXPECT_EQ(r3.levels[0].measured_span_s, r1.levels[0].measured_span_s);
  EXPECT_EQ(r3.levels[0].target_rate_rps, r1.levels[0].target_rate_rps);
}

TEST(MultiLoopE2E, FailuresAreAccountedPerLevelAndMergedStatisticsEqualOneBuilders) {
  ScriptedServerOptions o = quick_server();
  o.fault_fractions = {{Fault::kHttp500, 0.2}, {Fault::kDisconnect, 0.15}};
  o.script.fault_at_token = 1;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, 2);
  c.load.plan.levels = {concurrency(2), concurrency(6)};
  c.load.plan.measure = PhaseLimit{0, 30};
  // The runner's own sink is one builder, as bench's is; a second builder takes the same records
  // in seq order (the order one loop sending them one after the other would hand them over).
  RunResultBuilder live(params_for(c), c.slo);
  std::vector<RequestTimeline> records;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt),
                     [&](const RequestTimeline& t) {
                       live.add(t, compute_request_metrics(t));
                       records.push_back(t);
                     });
  ASSERT_TRUE(runner.run());
  EXPECT_EQ(runner.loops(), 2);
  std::vector<RequestTimeline> by_seq = records;
  std::sort(by_seq.begin(), by_seq.end(),
            [](const auto& a, const auto& b) { return a.seq < b.seq; });
  RunResultBuilder one(params_for(c), c.slo);
  for (const auto& t : by_seq) one.add(t, compute_request_metrics(t));
  const RunResult a = live.finish(runner.levels());
  const RunResult b = one.finish(runner.levels());
  ASSERT_EQ(a.levels.size(), 2u);
  ASSERT_EQ(b.levels.size(), 2u);
  int64_t failed_total = 0;
  for (size_t i = 0; i < 2; ++i) {
    const LevelSummary& s = a.levels[i].summary;
    EXPECT_EQ(s.sent, 30);
    EXPECT_EQ(s.sent, s.ok + s.failed);
    failed_total += s.failed;
    EXPECT_EQ(runner.levels()[i].measured_sent, 30);
    EXPECT_EQ(level_summary_json(s).dump(), level_summary_json(b.levels[i].summary).dump());
  }
  EXPECT_GT(failed_total, 0);  // the faults did reach the client
  LoopRun r{records, runner.levels(), runner.loops(), true};
  expect_unique_ids(r);
}

TEST(MultiLoopE2E, LevelsSmallerThanTheLoopCountAndHooksBracketEachLevel) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, 3);
  // Concurrency 1 has room for one loop only; 4 for all three.
  c.load.plan.levels = {concurrency(1), concurrency(4)};
  c.load.plan.measure = PhaseLimit{0, 7};
  std::vector<std::string> events;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt),
                     [&](const RequestTimeline& t) {
                       events.push_back("record " + std::to_string(t.level));
                     });
  runner.set_level_sinks(
      [&](const LevelRunInfo& i) {
        EXPECT_EQ(i.end_ns, 0);
        events.push_back("start " + std::to_string(i.level));
      },
      [&](const LevelRunInfo& i) {
        EXPECT_EQ(i.measured_sent, 7);
        events.push_back("end " + std::to_string(i.level));
      });
  ASSERT_TRUE(runner.run());
  EXPECT_EQ(runner.loops(), 3);
  // Level 0: one warm-up + 7 measured; level 1: four warm-up + 7 measured.
  std::vector<std::string> want = {"start 0"};
  for (int i = 0; i < 8; ++i) want.push_back("record 0");
  want.push_back("end 0");
  want.push_back("start 1");
  for (int i = 0; i < 11; ++i) want.push_back("record 1");
  want.push_back("end 1");
  EXPECT_EQ(events, want);
  // Each loop reports its own health figures; the merged lag holds every loop's samples.
  const ClientSelfMeasure& m = runner.self_measure();
  ASSERT_EQ(m.loops.size(), 3u);
  size_t lag_samples = 0;
  for (const auto& l : m.loops) lag_samples += l.loop_lag_ns.size();
  EXPECT_EQ(m.loop_lag_ns.size(), lag_samples);
  EXPECT_GE(m.peak_in_flight, 1);
  EXPECT_LE(m.peak_in_flight, 4);
}

TEST(MultiLoopE2E, AnInterruptStopsEveryLoopAndEverySentRequestIsRecorded) {
  ScriptedServerOptions o = quick_server();
  o.script.tokens = 30;
  o.script.itl_ms = 2;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, 2);
  c.load.plan.levels = {concurrency(4), concurrency(8)};
  c.load.plan.measure = PhaseLimit{0, 1000};
  c.load.grace_ns = 5'000'000'000;
  std::vector<RequestTimeline> records;
  BenchRunner* self = nullptr;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt),
                     [&](const RequestTimeline& t) {
                       records.push_back(t);
                       if (t.phase == Phase::kMeasure) self->interrupt();  // the sink's thread
                     });
  self = &runner;
  EXPECT_FALSE(runner.run());
  ASSERT_EQ(runner.levels().size(), 1u);  // the second level never started
  EXPECT_EQ(runner.levels()[0].stopped_early.value_or(""), "interrupted");
  uint64_t max_seq = 0;
  for (const auto& t : records) max_seq = std::max(max_seq, t.seq);
  // Every request any loop sent came back as a record (finished or cancelled), none twice.
  EXPECT_EQ(records.size(), max_seq + 1);
  LoopRun r{records, runner.levels(), runner.loops(), false};
  expect_unique_ids(r);
  EXPECT_LT(static_cast<int64_t>(records.size()), 1000);
}

TEST(MultiLoopE2E, SessionsSplitAcrossLoopsKeepTheirTurnsOnOneLoop) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, 2);
  c.load.plan.levels = {concurrency(4)};
  c.load.plan.measure = PhaseLimit{0, 24};
  c.load.sessions.enabled = true;
  c.load.sessions.turns_min = c.load.sessions.turns_max = 3;
  LoopRun r = run_loops(c);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(count(r, 0, Phase::kMeasure), 24);
  expect_unique_ids(r);
  // Session ids are unique across loops, and each session's turns come in order 1, 2, 3.
  std::map<int64_t, std::vector<int32_t>> turns;
  for (const auto& t : r.records) turns[t.session].push_back(t.turn);
  for (auto& [id, v] : turns) {
    ASSERT_GE(id, 0);
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], static_cast<int32_t>(i + 1)) << id;
  }
  // Each turn resends its session's history: turn k carries 2k - 1 messages.
  for (const auto& rec : server.records()) {
    if (rec.body.is_null()) continue;
    // ids are loops-<seq>; the matching record gives the turn
    for (const auto& t : r.records) {
      if (t.request_id == rec.request_id) {
        EXPECT_EQ(rec.body["messages"].size(), static_cast<size_t>(2 * t.turn - 1));
      }
    }
  }
}

// A shard of a distributed run (--shard I/2) with two loops: its loops pace only its share, number
// their requests c*2 + I, and the two shards' loops together send the whole level.
TEST(MultiLoopE2E, ShardLoopsSplitTheShardsShareAndNumberRequestsAcrossShards) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  int64_t measured = 0, warmup = 0;
  std::set<uint64_t> seqs;
  for (int shard = 0; shard < 2; ++shard) {
    BenchConfig c = config_for(server, 2);
    c.load.plan.levels = {concurrency(4)};
    c.load.plan.measure = PhaseLimit{0, 10};
    c.load.share_index = shard;
    c.load.share_count = 2;
    c.run_id = fmt::format("shard{}", shard);
    LoopRun r = run_loops(c);
    ASSERT_TRUE(r.completed);
    EXPECT_EQ(r.loops, 2);
    int64_t want = 0;
    for (int k = 0; k < 2; ++k) want += share_of(10, loop_share(c.load, k, 2));
    EXPECT_EQ(count(r, 0, Phase::kMeasure), want) << "shard " << shard;
    ASSERT_EQ(r.levels.size(), 1u);
    EXPECT_EQ(r.levels[0].measured_sent, want);
    measured += count(r, 0, Phase::kMeasure);
    warmup += count(r, 0, Phase::kWarmup);
    for (const auto& t : r.records) {
      EXPECT_EQ(t.seq % 2, static_cast<uint64_t>(shard)) << t.seq;
      EXPECT_TRUE(seqs.insert(t.seq).second) << "seq " << t.seq << " twice";
    }
  }
  EXPECT_EQ(measured, 10);
  EXPECT_EQ(warmup, 4);  // one per slot: the level's 4 slots over 2 shards x 2 loops
}

// Lockstep (--start-at): a level waits for its wall-clock boundary on every loop; an interrupt
// while waiting ends the run at once, and each level's late start is recorded.
class LockstepLoops : public ::testing::TestWithParam<int> {};

TEST_P(LockstepLoops, AnInterruptWhileWaitingForTheNextBoundaryEndsTheRun) {
  ScriptedServer server(quick_server());
  ASSERT_TRUE(server.start().ok());
  BenchConfig c = config_for(server, GetParam());
  c.load.plan.levels = {concurrency(2), concurrency(2)};
  c.load.plan.measure = PhaseLimit{0, 4};
  // Level 1's boundary passed a second ago (it starts late, at once); level 2's is 10 minutes
  // away: only the interrupt can end the run before the test's timeout.
  c.load.start_at_unix_us = wall_us() - 1'000'000;
  c.load.level_slot_ns = 600'000'000'000;
  std::vector<RequestTimeline> records;
  bool level_one_done = false;
  BenchRunner runner(c, *RequestBuilder::create(c.target, c.prompt),
                     [&](const RequestTimeline& t) { records.push_back(t); });
  runner.set_level_sinks(nullptr, [&](const LevelRunInfo& l) { level_one_done = l.level == 0; });
  runner.set_progress_sink([&](const LevelProgress&) {
    if (level_one_done) runner.interrupt();  // the calling thread, while level 2 waits
  });
  EXPECT_EQ(runner.loops(), GetParam());
  EXPECT_FALSE(runner.run());
  ASSERT_EQ(runner.levels().size(), 1u);  // the second level never started
  EXPECT_FALSE(runner.levels()[0].stopped_early.has_value());
  ASSERT_EQ(runner.late_start_ns().size(), 2u);
  EXPECT_GT(runner.late_start_ns()[0], 0);
  EXPECT_EQ(runner.late_start_ns()[1], 0);
  int64_t measured = 0;
  for (const auto& t : records) {
    EXPECT_EQ(t.level, 0);
    if (t.phase == Phase::kMeasure) ++measured;
  }
  EXPECT_EQ(measured, 4);
}

INSTANTIATE_TEST_SUITE_P(Loops, LockstepLoops, ::testing::Values(1, 2));

}  // namespace
}  // namespace tokperf
