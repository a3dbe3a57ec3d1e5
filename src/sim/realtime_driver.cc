#include "sim/realtime_driver.h"

#include <algorithm>

#include "core/clock.h"

namespace tokperf::sim {

RealtimeDriver::RealtimeDriver(EventLoop& loop, const CostModel& cost, EngineConfig config)
    : loop_(loop), engine_(cost, config) {}

RealtimeDriver::~RealtimeDriver() {
  if (start_timer_ != 0) loop_.cancel_timer(start_timer_);
  if (step_timer_ != 0) loop_.cancel_timer(step_timer_);
  if (late_timer_ != 0) loop_.cancel_timer(late_timer_);
}

Status RealtimeDriver::submit(const SimRequest& r, EventSink sink) {
  Status s = engine_.submit(r);
  if (!s.ok()) return s;
  sinks_[r.id] = std::move(sink);
  if (!in_flight_) schedule_start();
  return Status::Ok();
}

void RealtimeDriver::abort(uint64_t id) {
  sinks_.erase(id);
  // A request that finished in the step now in flight is no longer held; nothing to do then.
  if (engine_.abort(id) && !in_flight_) schedule_start();  // freed blocks may admit a waiter
}

void RealtimeDriver::schedule_start() {
  if (start_scheduled_) return;
  start_scheduled_ = true;
  // A timer already due: runs after this turn's I/O, so a burst of arrivals shares the step.
  start_timer_ = loop_.add_timer_at(mono_ns(), [this] {
    start_timer_ = 0;
    start_scheduled_ = false;
    if (!in_flight_) start_step(mono_ns());
  });
}

void RealtimeDriver::start_step(int64_t start_ns) {
  if (!engine_.has_work()) return;
  const StepResult& r = engine_.step(start_ns);
  if (r.duration_ns == 0) return;  // nothing runnable until a request arrives or is aborted
  pending_.assign(r.events.begin(), r.events.end());
  in_flight_ = true;
  deadline_ns_ = start_ns + r.duration_ns;
  step_timer_ = loop_.add_timer_at(deadline_ns_, [this] { on_step_end(); });
}

void RealtimeDriver::on_step_end() {
  step_timer_ = 0;
  in_flight_ = false;
  const int64_t fired = mono_ns();
  const int64_t late = std::max<int64_t>(0, fired - deadline_ns_);
  ++lag_.steps;
  lag_.sum_ns += late;
  lag_.max_ns = std::max(lag_.max_ns, late);
  if (lag_.samples_ns.size() < kMaxSamples) lag_.samples_ns.push_back(late);

  delivering_.swap(pending_);
  for (const SeqEvent& ev : delivering_) {
    // Stamped after the deadline (the engine's front end passes outputs on one at a time,
    // CostKnobs::output_overhead_s), or behind one that is: queued for its own time.
    if (ev.t_ns > deadline_ns_ || !late_.empty()) {
      late_.push_back(ev);
    } else {
      deliver(ev);
    }
  }
  delivering_.clear();
  if (!late_.empty() && late_timer_ == 0) arm_late_timer();
  const int64_t emitted = mono_ns();
  lag_.emit_sum_ns += emitted - fired;
  lag_.emit_max_ns = std::max(lag_.emit_max_ns, emitted - fired);

  int64_t next = deadline_ns_;
  if (emitted - deadline_ns_ > kMaxCatchUpNs) {
    next = emitted;
    ++lag_.rebases;
  }
  start_step(next);
}

void RealtimeDriver::deliver(const SeqEvent& ev) {
  auto it = sinks_.find(ev.request_id);
  if (it == sinks_.end()) return;  // aborted while its step ran
  if (ev.kind == SeqEventKind::kFinished) {
    EventSink sink = std::move(it->second);
    sinks_.erase(it);
    sink(ev);
  } else {
    it->second(ev);
  }
}

void RealtimeDriver::arm_late_timer() {
  late_timer_ = loop_.add_timer_at(late_.front().t_ns, [this] {
    late_timer_ = 0;
    const int64_t now = mono_ns();
    while (!late_.empty() && late_.front().t_ns <= now) {
      const SeqEvent ev = late_.front();
      late_.pop_front();
      deliver(ev);
    }
    if (!late_.empty() && late_timer_ == 0) arm_late_timer();
  });
}

}  // namespace tokperf::sim
