#include "load/open_loop_schedule.h"

#include <algorithm>
#include <cmath>

#include "load/arrivals.h"

namespace tokperf {
namespace {

// The phase a request with this index / intended offset belongs to, walking the three limits in
// order. Counts compare with the index, durations with the offset.
Phase phase_by_limits(const LoadPlan& plan, const PhaseLimit& warmup, int64_t index,
                      int64_t offset_ns) {
  auto inside = [](const PhaseLimit& l, int64_t& i, int64_t& t) {
    if (l.none()) return false;
    if (l.requests > 0) {
      if (i < l.requests) return true;
      i -= l.requests;
      return false;
    }
    if (t < l.duration_ns) return true;
    t -= l.duration_ns;
    return false;
  };
  int64_t i = index, t = offset_ns;
  if (inside(warmup, i, t)) return Phase::kWarmup;
  if (inside(plan.measure, i, t)) return Phase::kMeasure;
  return Phase::kCooldown;
}

}  // namespace

OpenLoopSchedule plan_open_loop_schedule(const LoadConfig& load, size_t level) {
  const LoadPlan& plan = load.plan;
  const LevelSpec& spec = plan.levels[level];
  OpenLoopSchedule out;
  std::vector<int64_t> offsets;
  PhaseLimit warmup = plan.warmup;
  if (!load.trace.empty()) {
    for (const auto& e : load.trace) offsets.push_back(e.offset_ns);
    warmup = load.default_warmup ? PhaseLimit{} : plan.warmup;
  } else {
    ArrivalSpec a;
    a.kind = plan.arrivals;
    a.rate_per_s = spec.start;
    a.burstiness = plan.burstiness;
    a.seed = plan.seed + level;
    if (load.default_warmup) warmup = PhaseLimit{0, std::max<int64_t>(1, std::llround(spec.start))};
    if (spec.is_ramp()) {
      offsets = ramp_arrival_offsets(a, spec.start, spec.end, spec.ramp_ns);
      // A ramp is one measured sweep of the rate: no warm-up or cool-down of its own.
      warmup = PhaseLimit{};
    } else if (warmup.duration_ns == 0 && plan.measure.duration_ns == 0 &&
               plan.cooldown.duration_ns == 0) {
      offsets = arrival_offsets_count(
          a, static_cast<size_t>(warmup.requests + plan.measure.requests + plan.cooldown.requests));
    } else {
      // Durations: counts in the other phases become time at the target rate.
      auto dur = [&](const PhaseLimit& l) {
        return l.duration_ns > 0 ? l.duration_ns
                                 : static_cast<int64_t>(l.requests / spec.start * 1e9);
      };
      offsets = arrival_offsets_until(a, dur(warmup) + dur(plan.measure) + dur(plan.cooldown));
    }
    out.target_rate_rps = spec.is_ramp() ? (spec.start + spec.end) / 2 : spec.start;
  }
  out.fingerprint = fingerprint_hex(schedule_fingerprint(offsets));
  // With any phase given as a duration, every phase is judged by time (counts became time above).
  bool durations = warmup.duration_ns > 0 || plan.measure.duration_ns > 0;
  LoadPlan timed = plan;
  PhaseLimit timed_warmup = warmup;
  if (durations && !spec.is_ramp() && load.trace.empty()) {
    auto as_time = [&](const PhaseLimit& l) {
      if (l.none() || l.duration_ns > 0) return l;
      return PhaseLimit{static_cast<int64_t>(l.requests / spec.start * 1e9), 0};
    };
    timed_warmup = as_time(warmup);
    timed.measure = as_time(plan.measure);
    timed.cooldown = as_time(plan.cooldown);
  }
  out.arrivals.reserve(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    auto idx = static_cast<int64_t>(i);
    Phase p;
    if (!load.trace.empty()) {
      // A trace is replayed whole: after its warm-up every entry is measured.
      p = idx < warmup.requests ? Phase::kWarmup : Phase::kMeasure;
    } else if (spec.is_ramp()) {
      p = Phase::kMeasure;
    } else {
      p = phase_by_limits(timed, timed_warmup, durations ? 0 : idx, durations ? offsets[i] : 0);
    }
    out.arrivals.push_back(PlannedArrival{offsets[i], p, idx});
  }
  return out;
}

}  // namespace tokperf
