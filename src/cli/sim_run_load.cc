#include "cli/sim_run_load.h"

#include <algorithm>
#include <cmath>
#include <span>

#include <fmt/format.h>

#include "load/open_loop_schedule.h"
#include "sim/offline_runner.h"

namespace tokperf {
namespace {

constexpr int64_t kCharsPerToken = 4;  // rough English text; only for trace lines giving a prompt

void fill_open_loop_rates(LevelRunInfo& info, std::span<const RequestTimeline> records) {
  int64_t first_intended = INT64_MAX, last_intended = INT64_MIN, n = 0;
  for (const auto& t : records) {
    if (t.phase != Phase::kMeasure) continue;
    first_intended = std::min(first_intended, t.intended_ns);
    last_intended = std::max(last_intended, t.intended_ns);
    ++n;
    // The virtual client dispatches every arrival exactly on time (a capped one then waits in the
    // client queue, which is queue time, not send lag), so send lag is 0 by construction.
    info.send_lag_ns.push_back(0);
  }
  if (n > 1 && last_intended > first_intended) {
    info.measured_span_s = static_cast<double>(last_intended - first_intended) / 1e9;
    info.scheduled_rate_rps = static_cast<double>(n - 1) / info.measured_span_s;
  }
  if (info.measured_sent > 1 && info.last_measured_send_ns > info.first_measured_send_ns) {
    info.achieved_rate_rps =
        static_cast<double>(info.measured_sent - 1) /
        (static_cast<double>(info.last_measured_send_ns - info.first_measured_send_ns) / 1e9);
  }
}

}  // namespace

Result<RunOutcome> simulate_load(const sim::CostModel& cost, const BenchConfig& config,
                                 const SimLoadOptions& o, std::vector<std::string>& notes) {
  const LoadConfig& load = config.load;
  const LoadPlan& plan = load.plan;
  RunOutcome out;
  out.started_unix_us = o.started_unix_us;
  int64_t level_start_ns = 0;
  bool prompt_estimated = false;
  for (size_t i = 0; i < plan.levels.size(); ++i) {
    const LevelSpec& spec = plan.levels[i];
    sim::OfflineLevel l;
    l.prompt_tokens = o.input_tokens;
    l.output_tokens = o.output_tokens;
    l.ignore_eos = o.ignore_eos;
    LevelRunInfo info;
    info.level = static_cast<int>(i);
    info.spec = spec;
    info.open_loop = spec.mode == LoadMode::kRate || !load.trace.empty();
    info.start_ns = level_start_ns;
    if (info.open_loop) {
      const OpenLoopSchedule s = plan_open_loop_schedule(load, i);
      info.target_rate_rps = s.target_rate_rps;
      info.schedule_fingerprint = s.fingerprint;
      info.scheduled_arrivals = static_cast<int64_t>(s.arrivals.size());
      l.max_concurrency = plan.max_concurrency;
      for (const PlannedArrival& a : s.arrivals) {
        sim::OfflineArrival x{a.offset_ns, a.phase, -1, -1};
        if (!load.trace.empty()) {
          const TraceEntry& e = load.trace[static_cast<size_t>(a.index)];
          x.output_tokens = e.output_tokens;
          x.prompt_tokens = e.input_tokens;
          if (e.input_tokens <= 0) {
            x.prompt_tokens =
                std::max<int64_t>(1, static_cast<int64_t>(e.prompt.size()) / kCharsPerToken);
            prompt_estimated = true;
          }
        }
        l.arrivals.push_back(x);
      }
    } else {
      l.concurrency = spec;
      l.measure = plan.measure;
      l.cooldown = plan.cooldown;
      // bench's default: one warm-up request per slot, a barrier before measuring.
      l.warmup = load.default_warmup
                     ? PhaseLimit{0, static_cast<int64_t>(std::max(1.0, std::floor(spec.start)))}
                     : plan.warmup;
    }
    sim::EngineConfig engine = o.engine;
    engine.seed = plan.seed + i;
    auto run = sim::run_offline_level(cost, engine, l);
    if (!run) return Error{fmt::format("level {} ({}): {}", i + 1, spec.label(), run.error())};
    info.stopped_early = run->stopped_early;
    for (RequestTimeline& t : run->timelines) {
      t.level = static_cast<int>(i);
      t.seq = static_cast<uint64_t>(out.records.size());
      t.request_id = fmt::format("{}-{}", config.run_id.empty() ? "sim" : config.run_id, t.seq);
      // Shift every time onto the run's virtual clock (0 stays "never" for first_visible_ns).
      for (int64_t* ns : {&t.intended_ns, &t.send_ns, &t.end_ns, &t.last_event_ns})
        *ns += level_start_ns;
      if (t.first_visible_ns != 0) t.first_visible_ns += level_start_ns;
      for (TokenEvent& e : t.token_events) e.t_ns += level_start_ns;
      t.start_unix_us = o.started_unix_us + t.send_ns / 1000;
      if (t.phase == Phase::kMeasure) {
        ++info.measured_sent;
        if (info.measured_sent == 1) info.first_measured_send_ns = t.send_ns;
        info.first_measured_send_ns = std::min(info.first_measured_send_ns, t.send_ns);
        info.last_measured_send_ns = std::max(info.last_measured_send_ns, t.send_ns);
      }
      out.records.push_back(std::move(t));
    }
    info.end_ns = level_start_ns + run->end_ns;
    if (info.open_loop) {
      const std::span<const RequestTimeline> all(out.records);
      fill_open_loop_rates(info, all.last(run->timelines.size()));
    }
    level_start_ns = info.end_ns;
    out.levels.push_back(std::move(info));
  }
  out.start_ns = 0;
  out.end_ns = level_start_ns;
  // The run's length in virtual time; no client CPU or loop lag exists to report.
  out.self.wall_s = static_cast<double>(level_start_ns) / 1e9;
  if (prompt_estimated) {
    notes.push_back(fmt::format(
        "trace lines giving a prompt were sized at one token per {} characters", kCharsPerToken));
  }
  return out;
}

}  // namespace tokperf
