// Token stamps end to end, as behaviour: every event the scripted server sent is stamped exactly once,
// in order, and never before the server sent it (the server stamps before its write, the client at the
// epoll wake after the bytes arrived, on the same monotonic clock). How close the stamps are is a
// precision figure, not a behaviour: bench/stream_timestamp_bench measures it against a minimal epoll
// reader in the same run (docs/BENCHMARKS.md). Nothing here depends on how busy the machine is.
#include <gtest/gtest.h>

#include <unordered_map>

#include "core/clock.h"
#include "load/bench_runner.h"
#include "metrics/request_record.h"
#include "support/bench_fixture.h"
#include "support/scripted_server.h"

namespace tokperf {
namespace {

using testing_support::RunOutput;
using testing_support::ScriptedServer;
using testing_support::ScriptedServerOptions;

// Checks every measured request against what the server recorded for it.
void expect_every_event_stamped_once_after_its_send(const RunOutput& out, const ScriptedServer& s,
                                                    int tokens) {
  std::unordered_map<std::string, const RequestTimeline*> by_id;
  for (const auto& t : out.measured) by_id[t.request_id] = &t;
  size_t matched = 0;
  for (const auto& rec : s.records()) {
    auto it = by_id.find(rec.request_id);
    if (it == by_id.end()) continue;  // warm-up
    const RequestTimeline& t = *it->second;
    ASSERT_TRUE(t.ok()) << t.error.message;
    ASSERT_EQ(t.token_events.size(), rec.token_event_send_ns.size()) << rec.request_id;
    for (size_t i = 0; i < t.token_events.size(); ++i) {
      EXPECT_GE(t.token_events[i].t_ns, rec.token_event_send_ns[i])
          << rec.request_id << " event " << i << " stamped before the server sent it";
      if (i > 0) {
        EXPECT_GE(t.token_events[i].t_ns, t.token_events[i - 1].t_ns);
      }
    }
    EXPECT_GE(t.token_events.front().t_ns, t.send_ns);
    RequestMetrics m = compute_request_metrics(t);
    EXPECT_EQ(m.output_tokens, tokens);
    EXPECT_TRUE(m.output_tokens_from_usage);
    EXPECT_EQ(m.itl_ms.size(), static_cast<size_t>(tokens - 1));
    ++matched;
  }
  EXPECT_EQ(matched, out.measured.size());
}

TEST(StampCausality, OneStreamEveryEventStampedOnceInOrderAfterItsSend) {
  ScriptedServerOptions o;
  o.script.ttft_ms = 20;
  o.script.itl_ms = 5;
  o.script.tokens = 16;
  ScriptedServer server(o);
  ASSERT_TRUE(server.start().ok());
  RunOutput out = testing_support::run_bench(testing_support::closed_loop_config(server, 1, 8, 16));
  ASSERT_TRUE(out.completed);
  ASSERT_EQ(out.measured.size(), 8u);
  expect_every_event_stamped_once_after_its_send(out, server, 16);
}

// On both HTTP clients (the built-in one, and libcurl with --http-client curl).
TEST(StampCausality, ManyStreamsInPhaseEveryEventStampedOnceAfterItsSend) {
  for (const char* http_client : {"auto", "curl"}) {
    SCOPED_TRACE(http_client);
    ScriptedServerOptions o;
    o.script.ttft_ms = 30;
    o.script.itl_ms = 10;
    o.script.jitter_ms = 5;
    o.script.tokens = 10;
    ScriptedServer server(o);
    ASSERT_TRUE(server.start().ok());
    BenchConfig c = testing_support::closed_loop_config(server, 128, 256, 10);
    c.target.http_client = http_client;
    RunOutput out = testing_support::run_bench(c);
    ASSERT_TRUE(out.completed);
    ASSERT_EQ(out.measured.size(), 256u);
    expect_every_event_stamped_once_after_its_send(out, server, 10);
  }
}

}  // namespace
}  // namespace tokperf
