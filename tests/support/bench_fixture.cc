#include "support/bench_fixture.h"

#include <cmath>
#include <unordered_map>

#include "client/request_builder.h"
#include "core/clock.h"
#include "load/bench_runner.h"

namespace tokperf::testing_support {

BenchConfig closed_loop_config(const ScriptedServer& s, int concurrency, int requests,
                               int output_tokens, std::string api) {
  BenchConfig c;
  c.target.base_url = s.base_url();
  c.target.api = std::move(api);
  c.target.model = "tokperf-test-model";
  c.prompt.text = "hello there";
  c.prompt.output_tokens = output_tokens;
  double cc = concurrency;
  c.load.plan.levels = {LevelSpec{LoadMode::kConcurrency, cc, cc, 0}};
  c.load.plan.measure = PhaseLimit{0, requests};
  c.load.timeout_ns = 20'000'000'000;
  c.load.progress = false;
  c.run_id = "e2e";
  return c;
}

RunOutput run_bench(const BenchConfig& c) {
  RunOutput out;
  auto builder = RequestBuilder::create(c.target, c.prompt);
  if (!builder) return out;
  BenchRunner runner(c, std::move(*builder), [&](const RequestTimeline& t) {
    out.records.push_back(t);
    if (t.phase == Phase::kMeasure) out.measured.push_back(t);
  });
  out.completed = runner.run();
  return out;
}

std::vector<double> stamp_errors_ms(const RunOutput& out, const ScriptedServer& s) {
  std::unordered_map<std::string, const RequestTimeline*> by_id;
  for (const auto& t : out.measured) by_id[t.request_id] = &t;
  std::vector<double> err;
  for (const auto& rec : s.records()) {
    auto it = by_id.find(rec.request_id);
    if (it == by_id.end() || !it->second->ok()) continue;
    const auto& ev = it->second->token_events;
    if (ev.size() != rec.token_event_send_ns.size()) continue;
    for (size_t i = 0; i < ev.size(); ++i) {
      err.push_back(std::abs(ns_to_ms(ev[i].t_ns - rec.token_event_send_ns[i])));
    }
  }
  return err;
}

}  // namespace tokperf::testing_support
