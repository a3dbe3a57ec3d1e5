#include "sim/offline_runner.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>

namespace tokperf::sim {
namespace {
// One generated token as a streaming client would have recorded it: one event, one token, visible.
void record_token(RequestTimeline& t, const SeqEvent& ev) {
  if (ev.kind == SeqEventKind::kFirstToken) t.first_visible_ns = ev.t_ns;
  t.token_events.push_back(TokenEvent{ev.t_ns, 1, true});
  t.last_event_ns = ev.t_ns;
  ++t.chunks;
}

}  // namespace

Result<OfflineRun> run_offline(const CostModel& cost, const EngineConfig& config,
                               const OfflineWorkload& w) {
  const bool open_loop = !w.arrivals_ns.empty();
  const int64_t total =
      open_loop ? static_cast<int64_t>(w.arrivals_ns.size()) : w.warmup + w.requests;
  if (w.prompt_tokens < 1 || w.output_tokens < 1) {
    return Error{"input and output tokens must be >= 1"};
  }
  if (!open_loop && (w.concurrency < 1 || w.requests < 0 || w.warmup < 0)) {
    return Error{"concurrency must be >= 1 and requests, warmup >= 0"};
  }
  if (open_loop && !std::is_sorted(w.arrivals_ns.begin(), w.arrivals_ns.end())) {
    return Error{"open-loop arrival times must not decrease"};
  }

  Engine engine(cost, config);
  OfflineRun run;
  run.timelines.resize(static_cast<size_t>(total));
  int64_t next = 0;  // next request to create
  int64_t done = 0;

  auto send = [&](int64_t at_ns) {
    RequestTimeline& t = run.timelines[static_cast<size_t>(next)];
    t.seq = static_cast<uint64_t>(next);
    t.request_id = "sim-" + std::to_string(next);
    t.phase = next < (open_loop ? 0 : w.warmup) ? Phase::kWarmup : Phase::kMeasure;
    t.intended_ns = t.send_ns = at_ns;
    t.prompt_tokens_sent = w.prompt_tokens;
    t.token_events.reserve(static_cast<size_t>(w.output_tokens));
    SimRequest r;
    r.id = static_cast<uint64_t>(next);
    r.prompt_tokens = w.prompt_tokens;
    r.max_tokens = w.output_tokens;
    r.ignore_eos = w.ignore_eos;
    r.arrival_ns = at_ns;
    ++next;
    const Status s = engine.submit(r);
    if (!s.ok()) {
      t.error = RequestError{ErrorKind::kHttp, 400, s.error()};
      t.http_status = 400;
      t.end_ns = at_ns;
      ++done;
      return false;
    }
    t.http_status = 200;
    return true;
  };

  int64_t now = 0;
  if (!open_loop) {
    // Closed-loop users whose request was refused send their next one at once.
    for (int64_t u = 0; u < w.concurrency && next < total; ++u) {
      while (next < total && !send(0)) {
      }
    }
  }
  while (done < total) {
    if (open_loop) {
      while (next < total && w.arrivals_ns[static_cast<size_t>(next)] <= now) {
        send(w.arrivals_ns[static_cast<size_t>(next)]);
      }
    }
    if (!engine.has_work()) {
      if (open_loop && next < total) {
        now = std::max(now, w.arrivals_ns[static_cast<size_t>(next)]);
        continue;
      }
      break;  // nothing left that can run
    }
    const StepResult& r = engine.step(now);
    now += r.duration_ns;
    for (const SeqEvent& ev : r.events) {
      RequestTimeline& t = run.timelines[ev.request_id];
      switch (ev.kind) {
        case SeqEventKind::kFirstToken:
        case SeqEventKind::kToken:
          record_token(t, ev);
          break;
        case SeqEventKind::kFinished:
          t.end_ns = ev.t_ns;
          t.usage_prompt_tokens = w.prompt_tokens;
          t.usage_completion_tokens = ev.output_tokens;
          t.saw_done = true;
          run.total_output_tokens += ev.output_tokens;
          ++done;
          if (!open_loop) {
            while (next < total && !send(ev.t_ns)) {
            }
          }
          break;
        case SeqEventKind::kPreempted:
          break;
      }
    }
  }
  run.engine = engine.stats();
  run.end_ns = now;
  return run;
}

namespace {


// The driver of one level: bench's load rules (load/bench_runner.cc) with the engine as the server
// and virtual time as the clock. Invariant: in_flight_ counts requests submitted and not ended.
class LevelDriver {
 public:
  LevelDriver(const CostModel& cost, const EngineConfig& config, const OfflineLevel& l)
      : l_(l), open_loop_(!l.arrivals.empty()), engine_(cost, config) {}

  OfflineLevelRun run() {
    if (open_loop_) {
      admit_arrivals(0, true);
    } else {
      fill(0);
    }
    for (;;) {
      if (sending_done_ && in_flight_ == 0 && queue_.empty()) break;
      if (!engine_.has_work()) {
        if (open_loop_ && next_arrival_ < l_.arrivals.size()) {
          now_ = std::max(now_, l_.arrivals[next_arrival_].at_ns);
          admit_arrivals(now_, true);
          continue;
        }
        break;  // nothing runnable and nothing due: the level is over
      }
      const StepResult& r = engine_.step(now_);
      now_ += r.duration_ns;
      // Arrivals during the step found the slots as they were before its requests finished.
      if (open_loop_) admit_arrivals(now_, false);
      for (const SeqEvent& ev : r.events) on_event(ev);
      if (open_loop_) admit_arrivals(now_, true);
    }
    run_.engine = engine_.stats();
    run_.end_ns = now_;
    return std::move(run_);
  }

 private:
  int64_t slot_limit(int64_t now) const {
    if (open_loop_) return l_.max_concurrency > 0 ? l_.max_concurrency : INT64_MAX;
    return static_cast<int64_t>(std::max(1.0, std::floor(l_.concurrency.target_at(now) + 1e-9)));
  }

  // Open loop: arrivals due by `now` (strictly before it unless `inclusive`) are sent or queued.
  void admit_arrivals(int64_t now, bool inclusive) {
    while (!sending_done_ && next_arrival_ < l_.arrivals.size()) {
      const OfflineArrival& a = l_.arrivals[next_arrival_];
      if (a.at_ns > now || (!inclusive && a.at_ns == now)) break;
      ++next_arrival_;
      if (in_flight_ >= slot_limit(a.at_ns) || !queue_.empty()) {
        queue_.push_back(&a);
      } else {
        send(a.at_ns, a.at_ns, a.phase, a.prompt_tokens, a.output_tokens);
      }
    }
  }

  PhaseLimit closed_loop_limit() const {
    if (phase_ == Phase::kWarmup) return l_.warmup;
    if (phase_ == Phase::kMeasure) return l_.measure;
    return measured_in_flight_ > 0 ? l_.cooldown : PhaseLimit{};
  }

  // The phase the next closed-loop request belongs to, or none when no request may start now.
  std::optional<Phase> next_phase(int64_t now) {
    for (;;) {
      const PhaseLimit limit = closed_loop_limit();
      const bool exhausted = limit.none() ||
                             (limit.requests > 0 && phase_started_ >= limit.requests) ||
                             (limit.duration_ns > 0 && now - phase_start_ns_ >= limit.duration_ns);
      if (!exhausted) return phase_;
      if (phase_ == Phase::kCooldown) {
        sending_done_ = true;
        return std::nullopt;
      }
      if (phase_ == Phase::kWarmup && limit.requests > 0 && in_flight_ > 0) return std::nullopt;
      phase_ = phase_ == Phase::kWarmup ? Phase::kMeasure : Phase::kCooldown;
      phase_started_ = 0;
      phase_start_ns_ = now;
    }
  }

  void fill(int64_t now) {
    while (!sending_done_ && in_flight_ < slot_limit(now)) {
      const std::optional<Phase> p = next_phase(now);
      if (!p) break;
      ++phase_started_;
      send(now, now, *p, -1, -1);
    }
    if (sending_done_) cancel_cooldown();
  }

  void send(int64_t intended_ns, int64_t send_ns, Phase phase, int64_t prompt, int64_t out) {
    const auto seq = static_cast<uint64_t>(run_.timelines.size());
    RequestTimeline& t = run_.timelines.emplace_back();
    t.seq = seq;
    t.request_id = "sim-" + std::to_string(seq);
    t.phase = phase;
    t.intended_ns = intended_ns;
    t.send_ns = send_ns;
    t.prompt_tokens_sent = prompt > 0 ? prompt : l_.prompt_tokens;
    SimRequest r;
    r.id = seq;
    r.prompt_tokens = t.prompt_tokens_sent;
    r.max_tokens = out > 0 ? out : l_.output_tokens;
    r.ignore_eos = l_.ignore_eos;
    r.arrival_ns = send_ns;
    const Status s = engine_.submit(r);
    if (!s.ok()) {
      t.error = RequestError{ErrorKind::kHttp, 400, s.error()};
      t.http_status = 400;
      t.end_ns = send_ns;
      // A closed loop would resend at once, forever: stop the level and say why.
      if (!run_.stopped_early) run_.stopped_early = "the engine refused a request: " + s.error();
      sending_done_ = true;
      queue_.clear();
      return;
    }
    t.http_status = 200;
    t.token_events.reserve(static_cast<size_t>(r.max_tokens));
    ++in_flight_;
    if (phase == Phase::kMeasure) ++measured_in_flight_;
  }

  void on_event(const SeqEvent& ev) {
    RequestTimeline& t = run_.timelines[ev.request_id];
    switch (ev.kind) {
      case SeqEventKind::kFirstToken:
      case SeqEventKind::kToken:
        record_token(t, ev);
        break;
      case SeqEventKind::kFinished:
        t.end_ns = ev.t_ns;
        t.usage_prompt_tokens = t.prompt_tokens_sent;
        t.usage_completion_tokens = ev.output_tokens;
        t.saw_done = true;
        ended(t, ev.t_ns);
        break;
      case SeqEventKind::kPreempted:
        break;
    }
  }

  void ended(const RequestTimeline& t, int64_t now) {
    --in_flight_;
    if (t.phase == Phase::kMeasure) --measured_in_flight_;
    if (!open_loop_) {
      fill(now);
      return;
    }
    while (!queue_.empty() && in_flight_ < slot_limit(now)) {
      const OfflineArrival* a = queue_.front();
      queue_.pop_front();
      send(a->at_ns, now, a->phase, a->prompt_tokens, a->output_tokens);
    }
    bool measured_left = measured_in_flight_ > 0;
    for (size_t i = next_arrival_; i < l_.arrivals.size() && !measured_left; ++i) {
      measured_left = l_.arrivals[i].phase == Phase::kMeasure;
    }
    for (const OfflineArrival* a : queue_) measured_left |= a->phase == Phase::kMeasure;
    if (!measured_left && !sending_done_) {
      sending_done_ = true;
      queue_.clear();
      cancel_cooldown();
    }
  }

  // Cool-down requests still running once every measured one has finished have done their job.
  void cancel_cooldown() {
    if (measured_in_flight_ > 0 || cancelled_) return;
    cancelled_ = true;
    for (RequestTimeline& t : run_.timelines) {
      if (t.phase != Phase::kCooldown || t.end_ns != 0 || !t.ok()) continue;
      engine_.abort(t.seq);
      t.error = RequestError{ErrorKind::kCancelled, 0, "cool-down ended"};
      t.end_ns = now_;
      --in_flight_;
    }
  }

  const OfflineLevel& l_;
  const bool open_loop_;
  Engine engine_;
  OfflineLevelRun run_;
  int64_t now_ = 0;
  int64_t in_flight_ = 0;
  int64_t measured_in_flight_ = 0;
  bool sending_done_ = false;
  bool cancelled_ = false;
  // Closed loop: the phase machine.
  Phase phase_ = Phase::kWarmup;
  int64_t phase_started_ = 0;
  int64_t phase_start_ns_ = 0;
  // Open loop: the schedule and the client queue.
  size_t next_arrival_ = 0;
  std::deque<const OfflineArrival*> queue_;
};

}  // namespace

Result<OfflineLevelRun> run_offline_level(const CostModel& cost, const EngineConfig& config,
                                          const OfflineLevel& level) {
  if (level.prompt_tokens < 1 || level.output_tokens < 1) {
    return Error{"input and output tokens must be >= 1"};
  }
  if (level.arrivals.empty()) {
    if (level.concurrency.mode != LoadMode::kConcurrency || !(level.concurrency.start >= 1)) {
      return Error{"a closed-loop level needs a concurrency of at least 1"};
    }
    if (level.measure.none()) return Error{"a closed-loop level needs a measure phase"};
  } else {
    if (level.max_concurrency < 0) return Error{"max_concurrency must be >= 0"};
    const auto by_time = [](const OfflineArrival& a, const OfflineArrival& b) {
      return a.at_ns < b.at_ns;
    };
    const bool sorted = std::is_sorted(level.arrivals.begin(), level.arrivals.end(), by_time);
    if (!sorted) return Error{"open-loop arrival times must not decrease"};
  }
  return LevelDriver(cost, config, level).run();
}

}  // namespace tokperf::sim
