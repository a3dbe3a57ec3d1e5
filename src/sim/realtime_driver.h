// Runs the Engine in real time on an EventLoop: requests are submitted as they arrive, steps run
// back to back, and each step's events are delivered when the step ends in real time. The engine's
// clock is CLOCK_MONOTONIC in ns (the loop's clock), so SeqEvent::t_ns is the step's deadline, or
// later when the engine's front end passes outputs on one at a time (CostKnobs::output_overhead_s):
// such an event is delivered at its own time, after every event before it.
//
// Timing: a step starting at S with modelled duration D has its deadline at S + D on an absolute
// timer; the next step starts at that deadline (not at when the timer fired), so scheduling delays
// do not accumulate. If the loop falls more than kMaxCatchUpNs behind, the schedule is re-based on
// the present (counted in rebases) rather than bursting to catch up. An idle engine starts a step
// on the next loop turn after a submission, so requests arriving in one burst share the first step.
//
// Thread rules: loop thread only (construct anywhere before the loop runs). Sinks are called from
// the loop; a sink may call submit() or abort() (for any id).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "net/event_loop.h"
#include "sim/engine.h"

namespace tokperf::sim {

class RealtimeDriver {
 public:
  // Receives one request's events (first token, tokens, finished, preempted) in order. After
  // kFinished the sink is dropped.
  using EventSink = std::function<void(const SeqEvent&)>;

  static constexpr int64_t kMaxCatchUpNs = 100'000'000;

  // How late steps ended versus their deadlines (the server's own lag).
  struct Lag {
    int64_t steps = 0;
    int64_t sum_ns = 0;
    int64_t max_ns = 0;
    int64_t rebases = 0;
    std::vector<int64_t> samples_ns;  // at most kMaxSamples, for percentiles
    // Time spent delivering one step's events (writing every stream's chunk).
    int64_t emit_sum_ns = 0;
    int64_t emit_max_ns = 0;
  };
  static constexpr size_t kMaxSamples = 1 << 20;

  // `loop` and `cost` must outlive the driver.
  RealtimeDriver(EventLoop& loop, const CostModel& cost, EngineConfig config);
  ~RealtimeDriver();
  RealtimeDriver(const RealtimeDriver&) = delete;
  RealtimeDriver& operator=(const RealtimeDriver&) = delete;

  // REQUIRES: r.id unique among requests in flight. Fails when the engine refuses it.
  Status submit(const SimRequest& r, EventSink sink);
  // Drops the request from the engine (its KV blocks are freed) and forgets its sink. Safe for an
  // unknown or finished id.
  void abort(uint64_t id);

  EngineStats engine_stats() const { return engine_.stats(); }
  const Engine& engine() const { return engine_; }
  const Lag& lag() const { return lag_; }
  bool step_in_flight() const { return in_flight_; }
  size_t live_requests() const { return sinks_.size(); }

 private:
  void schedule_start();
  void start_step(int64_t start_ns);
  void on_step_end();
  void deliver(const SeqEvent& ev);
  void arm_late_timer();  // REQUIRES: late_ not empty, no late timer armed

  EventLoop& loop_;
  Engine engine_;
  std::unordered_map<uint64_t, EventSink> sinks_;
  std::vector<SeqEvent> pending_;     // the in-flight step's events, delivered at its deadline
  std::vector<SeqEvent> delivering_;  // swapped with pending_ while sinks run
  std::deque<SeqEvent> late_;         // events stamped after their step's deadline, in time order
  bool in_flight_ = false;
  bool start_scheduled_ = false;
  uint64_t start_timer_ = 0;
  uint64_t step_timer_ = 0;
  uint64_t late_timer_ = 0;
  int64_t deadline_ns_ = 0;
  Lag lag_;
};

}  // namespace tokperf::sim
