#include "load/level_driver.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "metrics/stats.h"

namespace tokperf {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

PhaseLimit split(PhaseLimit l, const LevelShare& share) {
  if (l.requests > 0) l.requests = share_of(l.requests, share);
  return l;
}

// Whole concurrency of a closed-loop level at offset t (a ramp crosses whole numbers).
int64_t whole_slots(const LevelSpec& spec, int64_t offset_ns) {
  return static_cast<int64_t>(std::floor(spec.target_at(offset_ns) + 1e-9));
}

int64_t slots_for_share(int64_t whole, const LevelShare& share) {
  return share.count <= 1 ? std::max<int64_t>(1, whole) : share_of(whole, share);
}

}  // namespace

int64_t share_of(int64_t x, const LevelShare& s) {
  if (s.count <= 1) return x;
  return x * (s.index + 1) / s.count - x * s.index / s.count;
}

LevelPlan make_level_plan(const LoadConfig& load, size_t level, LevelShare share) {
  const LoadPlan& lp = load.plan;
  LevelPlan p;
  p.level = static_cast<int>(level);
  p.spec = lp.levels[level];
  p.share = share;
  p.open_loop = p.spec.mode == LoadMode::kRate || !load.trace.empty();
  p.stop_on_saturation = load.stop_on_saturation;
  p.saturation = load.saturation;
  p.max_send_lag_p99_ms = load.max_send_lag_p99_ms;
  p.sessions = load.sessions;
  p.session_seed = lp.seed * 0x9e3779b97f4a7c15ULL + level;
  if (p.open_loop) {
    OpenLoopSchedule s = plan_open_loop_schedule(load, level);
    p.target_rate_rps = s.target_rate_rps / std::max(1, share.count);
    p.schedule_fingerprint = std::move(s.fingerprint);
    for (const PlannedArrival& a : s.arrivals) {
      if (share.count <= 1 || a.index % share.count == share.index) p.arrivals.push_back(a);
    }
    p.scheduled_arrivals = static_cast<int64_t>(p.arrivals.size());
    if (lp.max_concurrency > 0) {
      p.max_concurrency = std::max<int64_t>(1, share_of(lp.max_concurrency, share));
    }
    return p;
  }
  p.measure = split(lp.measure, share);
  p.cooldown = split(lp.cooldown, share);
  // Default warm-up: one request per slot, a barrier before measuring.
  p.warmup = load.default_warmup ? PhaseLimit{0, slots_for_share(whole_slots(p.spec, 0), share)}
                                 : split(lp.warmup, share);
  return p;
}

LevelDriver::LevelDriver(LevelPlan plan, int64_t start_ns, int64_t arrival_lead_ns)
    : plan_(std::move(plan)), start_ns_(start_ns), lead_ns_(arrival_lead_ns), last_now_(start_ns) {
  info_.level = plan_.level;
  info_.spec = plan_.spec;
  info_.open_loop = plan_.open_loop;
  info_.start_ns = start_ns;
  info_.sessions = plan_.sessions.active();
  phase_start_ns_ = start_ns;
  if (plan_.stop_on_saturation) {
    saturation_.emplace(plan_.saturation);
    next_sample_ns_ = start_ns + kSecondNs;
  }
  if (!plan_.open_loop) return;
  info_.target_rate_rps = plan_.target_rate_rps;
  info_.schedule_fingerprint = plan_.schedule_fingerprint;
  info_.scheduled_arrivals = plan_.scheduled_arrivals;
  // The schedule is a random sample of the target rate; the client's pacing is judged by how
  // closely the actual sends reproduce the schedule's own rate (n-1 gaps over each span).
  int64_t first = INT64_MAX, last = INT64_MIN, n = 0;
  for (const PlannedArrival& a : plan_.arrivals) {
    if (a.phase != Phase::kMeasure) continue;
    first = std::min(first, a.offset_ns);
    last = std::max(last, a.offset_ns);
    ++n;
  }
  if (n > 1 && last > first) {
    info_.measured_span_s = static_cast<double>(last - first) / 1e9;
    info_.scheduled_rate_rps = static_cast<double>(n - 1) / info_.measured_span_s;
  }
  if (plan_.arrivals.empty()) stopped_ = true;
}

int64_t LevelDriver::slot_limit(int64_t now) const {
  if (plan_.open_loop) return plan_.max_concurrency > 0 ? plan_.max_concurrency : INT64_MAX;
  return slots_for_share(whole_slots(plan_.spec, now - start_ns_), plan_.share);
}

PhaseLimit LevelDriver::closed_loop_limit() const {
  if (phase_ == Phase::kWarmup) return plan_.warmup;
  if (phase_ == Phase::kMeasure) return plan_.measure;
  // Cool-down only keeps the load up while measured requests finish.
  return measured_in_flight_ > 0 ? plan_.cooldown : PhaseLimit{};
}

std::optional<Phase> LevelDriver::next_closed_loop_phase(int64_t now) {
  for (;;) {
    const PhaseLimit limit = closed_loop_limit();
    const bool exhausted = limit.none() ||
                           (limit.requests > 0 && phase_started_ >= limit.requests) ||
                           (limit.duration_ns > 0 && now - phase_start_ns_ >= limit.duration_ns);
    if (!exhausted) return phase_;
    if (phase_ == Phase::kCooldown) {
      stop_sending();
      return std::nullopt;
    }
    // A count-based warm-up is a barrier: measurement starts when it has drained.
    if (phase_ == Phase::kWarmup && limit.requests > 0 && in_flight_ > 0) return std::nullopt;
    phase_ = phase_ == Phase::kWarmup ? Phase::kMeasure : Phase::kCooldown;
    phase_started_ = 0;
    phase_start_ns_ = now;
  }
}

std::optional<SendOrder> LevelDriver::sent(int64_t now, Phase phase, int64_t intended,
                                           int64_t index, int64_t session) {
  ++in_flight_;
  if (phase == Phase::kMeasure) {
    ++measured_in_flight_;
    if (info_.measured_sent++ == 0) info_.first_measured_send_ns = now;
    info_.last_measured_send_ns = now;
  }
  SendOrder o{phase, intended, index};
  if (session >= 0) {
    Session& s = sessions_.at(session);
    s.waiting = false;
    o.session = session;
    o.turn = s.next_turn++;
  }
  return o;
}

int64_t LevelDriver::open_session(Phase phase, int64_t index) {
  const int64_t id = plan_.share.index + next_session_++ * std::max(1, plan_.share.count);
  Session s;
  s.turns = session_turns(plan_.sessions, plan_.session_seed, id);
  s.phase = phase;
  s.index = index;
  s.waiting = true;
  sessions_.emplace(id, s);
  ++info_.sessions_started;
  return id;
}

void LevelDriver::end_session(int64_t id, int64_t* counter) {
  if (sessions_.erase(id) > 0) ++*counter;
}

void LevelDriver::cut_waiting_sessions() {
  thinking_.clear();
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->second.waiting) {
      it = sessions_.erase(it);
      ++info_.sessions_cut;
    } else {
      ++it;
    }
  }
}

std::optional<SendOrder> LevelDriver::next_open_loop(int64_t now) {
  const int64_t cap = slot_limit(now);
  for (;;) {
    int64_t arrival_due = INT64_MAX;
    if (next_arrival_ < plan_.arrivals.size()) {
      arrival_due = start_ns_ + lead_ns_ + plan_.arrivals[next_arrival_].offset_ns;
    }
    const int64_t think_due = thinking_.empty() ? INT64_MAX : thinking_.begin()->first;
    if (std::min(arrival_due, think_due) > now) break;
    Due d{0, Phase::kMeasure, -1};
    if (think_due <= arrival_due) {  // a session's next turn (not an arrival: no send lag)
      const auto [due, id] = *thinking_.begin();
      thinking_.erase(thinking_.begin());
      const Session& s = sessions_.at(id);
      d = Due{due, s.phase, s.index, id};
    } else {
      const PlannedArrival& a = plan_.arrivals[next_arrival_++];
      if (a.phase == Phase::kMeasure) info_.send_lag_ns.push_back(now - arrival_due);
      d = Due{arrival_due, a.phase, a.index};
      if (plan_.sessions.active()) d.session = open_session(a.phase, a.index);
    }
    if (in_flight_ >= cap || !queue_.empty()) {
      queue_.push_back(d);
      continue;
    }
    return sent(now, d.phase, d.intended_ns, d.index, d.session);
  }
  if (!queue_.empty() && in_flight_ < cap) {
    const Due d = queue_.front();
    queue_.pop_front();
    return sent(now, d.phase, d.intended_ns, d.index, d.session);
  }
  return std::nullopt;
}

std::optional<SendOrder> LevelDriver::next_closed_loop_session(int64_t now) {
  // A user whose think time is over sends its next turn; it already holds its slot.
  if (!thinking_.empty() && thinking_.begin()->first <= now) {
    std::optional<Phase> p = next_closed_loop_phase(now);
    if (!p || thinking_.empty()) return std::nullopt;  // warm-up barrier, or sending stopped
    const auto [due, id] = *thinking_.begin();
    thinking_.erase(thinking_.begin());
    ++phase_started_;
    return sent(now, *p, due, -1, id);
  }
  // A free slot starts a new session.
  if (static_cast<int64_t>(sessions_.size()) < slot_limit(now)) {
    std::optional<Phase> p = next_closed_loop_phase(now);
    if (!p) return std::nullopt;
    ++phase_started_;
    return sent(now, *p, now, -1, open_session(*p, -1));
  }
  return std::nullopt;
}

std::optional<SendOrder> LevelDriver::next_send(int64_t now) {
  last_now_ = std::max(last_now_, now);
  take_samples(now);
  if (done_) return std::nullopt;
  if (!stopped_ && plan_.open_loop) {
    if (std::optional<SendOrder> o = next_open_loop(now)) return o;
  } else if (!stopped_) {
    const int64_t slots = slot_limit(now);
    const bool more_slots_later = plan_.spec.is_ramp() && plan_.spec.end > plan_.spec.start &&
                                  now - start_ns_ < plan_.spec.ramp_ns;
    if (slots == 0 && !more_slots_later) stop_sending();
    if (!stopped_ && plan_.sessions.active()) {
      if (std::optional<SendOrder> o = next_closed_loop_session(now)) return o;
    } else if (!stopped_ && in_flight_ < slots) {
      if (std::optional<Phase> p = next_closed_loop_phase(now)) {
        ++phase_started_;
        return sent(now, *p, now, -1);  // closed loop: the slot came free now
      }
    }
  }
  check_done(now);
  return std::nullopt;
}

bool LevelDriver::take_cancel_cooldown() { return std::exchange(cancel_cooldown_, false); }

void LevelDriver::on_finished(int64_t now, Phase phase, ErrorKind kind, int64_t session) {
  last_now_ = std::max(last_now_, now);
  take_samples(now);
  --in_flight_;
  if (phase == Phase::kMeasure) --measured_in_flight_;
  if (kind == ErrorKind::kNone) {
    ++second_completed_;
  } else if (kind != ErrorKind::kCancelled) {
    ++second_errors_;
  }
  if (auto it = sessions_.find(session); session >= 0 && it != sessions_.end()) {
    Session& s = it->second;
    if (kind == ErrorKind::kNone && s.next_turn > s.turns) {
      end_session(session, &info_.sessions_completed);
    } else if (kind == ErrorKind::kCancelled || (kind == ErrorKind::kNone && stopped_)) {
      end_session(session, &info_.sessions_cut);
    } else if (kind != ErrorKind::kNone) {
      end_session(session, &info_.sessions_failed);  // a failed turn ends its session only
    } else {
      s.waiting = true;
      thinking_.emplace(
          now + session_think_ns(plan_.sessions, plan_.session_seed, session, s.next_turn - 1),
          session);
    }
  }
  // Once every measured request has finished, cool-down arrivals have done their job.
  if (plan_.open_loop && !stopped_ && !measured_left()) stop_sending();
  check_done(now);
}

void LevelDriver::stop(int64_t now, std::string reason) {
  if (!info_.stopped_early) info_.stopped_early = std::move(reason);
  stop_sending();
  check_done(now);
}

bool LevelDriver::measured_left() const {
  if (measured_in_flight_ > 0) return true;
  for (size_t i = next_arrival_; i < plan_.arrivals.size(); ++i) {
    if (plan_.arrivals[i].phase == Phase::kMeasure) return true;
  }
  for (const Due& d : queue_) {
    if (d.phase == Phase::kMeasure) return true;
  }
  for (const auto& [due, id] : thinking_) {
    if (sessions_.at(id).phase == Phase::kMeasure) return true;
  }
  return false;
}

void LevelDriver::stop_sending() {
  stopped_ = true;
  queue_.clear();
  cut_waiting_sessions();
}

void LevelDriver::take_samples(int64_t now) {
  while (saturation_ && !stopped_ && !done_ && next_sample_ns_ <= now) {
    LoadSample s;
    s.in_flight = in_flight_;
    s.client_queue = static_cast<int64_t>(queue_.size());
    s.completed = second_completed_;
    s.errors = second_errors_;
    saturation_->add(s);
    second_completed_ = second_errors_ = 0;
    next_sample_ns_ += kSecondNs;
    if (saturation_->stop_reason()) {
      // Stop sending; let what is in flight finish (bounded by --timeout).
      if (!info_.stopped_early) info_.stopped_early = *saturation_->stop_reason();
      saturated_ = true;
      stop_sending();
    }
  }
}

void LevelDriver::check_done(int64_t now) {
  if (done_) return;
  if (stopped_ && measured_in_flight_ == 0 && in_flight_ > 0 && !cooldown_cancelled_) {
    cancel_cooldown_ = cooldown_cancelled_ = true;
  }
  const bool nothing_to_send =
      stopped_ || (plan_.open_loop && next_arrival_ == plan_.arrivals.size() && queue_.empty() &&
                   thinking_.empty());
  if (nothing_to_send && in_flight_ == 0) finalize(now);
}

void finish_open_loop_figures(LevelRunInfo& info, double max_send_lag_p99_ms) {
  if (info.measured_sent > 1 && info.last_measured_send_ns > info.first_measured_send_ns) {
    info.achieved_rate_rps =
        static_cast<double>(info.measured_sent - 1) /
        (static_cast<double>(info.last_measured_send_ns - info.first_measured_send_ns) / 1e9);
  }
  std::vector<double> lag_ms;
  lag_ms.reserve(info.send_lag_ns.size());
  for (int64_t ns : info.send_lag_ns) lag_ms.push_back(static_cast<double>(ns) / 1e6);
  if (!lag_ms.empty() && percentile(std::move(lag_ms), 99) > max_send_lag_p99_ms) {
    info.send_lag_exceeded = true;
  }
}

void LevelDriver::finalize(int64_t now) {
  done_ = true;
  info_.end_ns = now;
  if (plan_.open_loop) finish_open_loop_figures(info_, plan_.max_send_lag_p99_ms);
}

int64_t LevelDriver::wake_at() const {
  if (done_) return -1;
  int64_t wake = -1;
  auto consider = [&](int64_t t) {
    if (t >= 0 && (wake < 0 || t < wake)) wake = t;
  };
  if (!stopped_) {
    if (saturation_) consider(next_sample_ns_);
    // A turn already due waits for something only a finishing request changes (the warm-up
    // barrier): on_finished brings the caller back, so no wake-up for it.
    if (!thinking_.empty() && thinking_.begin()->first > last_now_) {
      consider(thinking_.begin()->first);
    }
    if (plan_.open_loop) {
      if (next_arrival_ < plan_.arrivals.size()) {
        consider(start_ns_ + lead_ns_ + plan_.arrivals[next_arrival_].offset_ns);
      }
    } else if (plan_.spec.is_ramp() && plan_.spec.end > plan_.spec.start) {
      // The next time the ramp's line crosses a whole number (a slot opens): the first ns at
      // which whole_slots() reaches it, estimated from the line and corrected for rounding.
      const LevelSpec& s = plan_.spec;
      const int64_t next = whole_slots(s, last_now_ - start_ns_) + 1;
      if (next <= whole_slots(s, s.ramp_ns)) {
        const double frac = (static_cast<double>(next) - s.start) / (s.end - s.start);
        auto t = std::max<int64_t>(last_now_ - start_ns_ + 1,
                                   static_cast<int64_t>(std::ceil(frac * s.ramp_ns)));
        while (whole_slots(s, t) < next) ++t;
        while (t > last_now_ - start_ns_ + 1 && whole_slots(s, t - 1) >= next) --t;
        consider(start_ns_ + t);
      }
    }
  }
  return wake;
}

}  // namespace tokperf
