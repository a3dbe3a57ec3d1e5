// The load rules of one level, with no clock and no transport: every runner (the live one in
// load/bench_runner.h, the simulator's virtual-time one in sim/offline_runner.h, and any runner
// that paces a share of a level) tells the driver what time it is and what finished, and asks it
// what to send. Rules (docs/LOAD.md):
//  - closed loop: the slot count is the level's concurrency at `now` (a linear ramp opens a slot
//    when its line crosses the next whole number: the driver asks to be woken then); a request
//    starts the moment a slot is free. Phases warm-up -> measure -> cool-down by count or duration;
//    a count-based warm-up is a barrier (measurement starts with every slot free); cool-down keeps
//    the load up only while measured requests finish, then what is left of it is cancelled.
//  - open loop: arrivals at their intended times (schedule from load/open_loop_schedule.h); with a
//    cap, an arrival that finds every slot taken waits in a FIFO client queue (its intended start
//    kept). Send lag = when the driver was asked - intended start. Once no measured request is left
//    to send or finish, sending stops and cool-down is cancelled.
//  - early stop: once a second of level time the driver feeds its own counters (in flight, queue,
//    finished, errors) to the SaturationDetector; a rule firing (backlog growth or error rate)
//    stops the level and the sweep.
//  - sessions (--turns, load/session.h): every request is a turn of a session. Closed loop: the
//    slot count counts users (sessions open, whether a turn is in flight or the user is thinking);
//    a free slot starts a new session, a session's next turn is due its think time after the
//    previous turn ended and takes the phase the phase machine gives it then. Open loop: each
//    arrival starts a session (its phase is the session's); later turns are due after the think
//    time and go through the same cap and client queue, without send lag (they are not arrivals).
//    A failed or cancelled turn ends its session; when sending stops, sessions with turns left
//    are cut. Turn counts and think times are seeded draws per (session, turn).
// Use: call next_send(now) until it returns nothing, start those requests, cancel cool-down
// requests when take_cancel_cooldown() says so, call on_finished() for every request that ends
// (cancelled ones too), and call next_send again at wake_at() if nothing happens before. Times
// passed in must not decrease. Not thread-safe: one driver per event loop.
//
// Shares: a driver built for share k of n paces that part of the level, so n loops or n processes
// together run the whole plan: arrival i goes to share i mod n; closed-loop slots, phase request
// counts and the open-loop cap are split evenly (floor((k+1)x/n) - floor(kx/n)); durations are not
// split. Each share's LevelRunInfo describes that share; merging them is the caller's.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "load/bench_config.h"
#include "load/level_run_info.h"
#include "load/load_plan.h"
#include "load/open_loop_schedule.h"
#include "load/session.h"
#include "metrics/request_record.h"

namespace tokperf {

// Which part of a level a driver paces: share `index` of `count`.
struct LevelShare {
  int index = 0;
  int count = 1;
};

// One level's rules, resolved from the load configuration: what a driver needs.
struct LevelPlan {
  int level = 0;
  LevelSpec spec;
  bool open_loop = false;
  LevelShare share;
  // Closed loop: phase limits (warm-up resolved: the default is one request per slot).
  PhaseLimit warmup, measure, cooldown;
  // Open loop: this share's arrivals and the schedule they came from.
  std::vector<PlannedArrival> arrivals;
  int64_t max_concurrency = 0;  // this share's cap; 0: uncapped
  double target_rate_rps = 0;
  std::string schedule_fingerprint;  // of the whole level's schedule
  int64_t scheduled_arrivals = 0;    // of this share
  // Early stop and send-lag bound.
  bool stop_on_saturation = false;
  SaturationRules saturation;
  double max_send_lag_p99_ms = 1.0;
  // Multi-turn sessions; inactive: every request stands alone.
  SessionSpec sessions;
  uint64_t session_seed = 0;
};

// REQUIRES: level < load.plan.levels.size(); 0 <= share.index < share.count.
LevelPlan make_level_plan(const LoadConfig& load, size_t level, LevelShare share = {});

// This share of a whole number x split n ways: floor((k+1)x/n) - floor(kx/n).
int64_t share_of(int64_t x, const LevelShare& share);

// Open loop, once every measured send is known: the achieved rate (measured sends over their span)
// and whether the send-lag P99 exceeded the bound. The driver calls it when its level ends; a
// caller merging shares (load/loop_split.h) calls it on the merged info, so both agree exactly.
void finish_open_loop_figures(LevelRunInfo& info, double max_send_lag_p99_ms);

// A request the caller must start now.
struct SendOrder {
  Phase phase = Phase::kMeasure;
  int64_t intended_ns = 0;  // the caller's clock
  int64_t index = -1;       // open loop: index into the schedule (and the trace); -1: closed loop
  int64_t session = -1;     // sessions: the session's id (unique within the level); -1: none
  int64_t turn = 0;         // sessions: 1-based turn within the session; 0: none
};

class LevelDriver {
 public:
  // start_ns: the level's start on the caller's clock; open-loop arrivals are due at
  // start_ns + arrival_lead_ns + their offset.
  LevelDriver(LevelPlan plan, int64_t start_ns, int64_t arrival_lead_ns = 0);

  // The next request to start at `now`, or nothing. Also takes the per-second saturation samples
  // due by `now`.
  std::optional<SendOrder> next_send(int64_t now_ns);
  // True once (then false) when every cool-down request still in flight should be cancelled.
  bool take_cancel_cooldown();
  // A request of `phase` ended at `now` (error kind kNone when it succeeded); `session` is its
  // SendOrder::session.
  void on_finished(int64_t now_ns, Phase phase, ErrorKind kind, int64_t session = -1);
  // The session is still open (more turns may be sent); false once it ended or was cut.
  bool session_open(int64_t session) const { return sessions_.count(session) > 0; }
  // The caller stops the level (Ctrl-C: "interrupted"; a server that refuses every request):
  // nothing more is sent, the client queue is dropped; in-flight requests still report.
  void stop(int64_t now_ns, std::string reason);

  // When to call next_send again if nothing finishes first; -1: never.
  int64_t wake_at() const;
  // Nothing left to send and nothing in flight: info() is final.
  bool level_done() const { return done_; }
  // The level stopped early by its own rule (saturation, error rate): the sweep should end.
  bool ends_sweep() const { return saturated_; }

  int64_t in_flight() const { return in_flight_; }
  int64_t queued() const { return static_cast<int64_t>(queue_.size()); }
  const LevelRunInfo& info() const { return info_; }
  const LevelPlan& plan() const { return plan_; }

 private:
  struct Due {
    int64_t intended_ns;
    Phase phase;
    int64_t index;
    int64_t session = -1;
  };
  struct Session {
    int64_t turns = 1;              // drawn at its start
    int64_t next_turn = 1;          // the turn to send next
    Phase phase = Phase::kMeasure;  // open loop: of the arrival that started it
    int64_t index = -1;             // open loop: that arrival's index
    bool waiting = false;           // thinking or queued: no turn in flight
  };
  int64_t open_session(Phase phase, int64_t index);
  void end_session(int64_t id, int64_t* counter);
  void cut_waiting_sessions();
  void take_samples(int64_t now);
  void stop_sending();
  int64_t slot_limit(int64_t now) const;
  PhaseLimit closed_loop_limit() const;
  std::optional<Phase> next_closed_loop_phase(int64_t now);
  std::optional<SendOrder> sent(int64_t now, Phase phase, int64_t intended, int64_t index,
                                int64_t session = -1);
  std::optional<SendOrder> next_open_loop(int64_t now);
  std::optional<SendOrder> next_closed_loop_session(int64_t now);
  bool measured_left() const;
  void check_done(int64_t now);
  void finalize(int64_t now);

  LevelPlan plan_;
  int64_t start_ns_;
  int64_t lead_ns_;
  int64_t last_now_;  // the latest time the caller gave
  LevelRunInfo info_;
  int64_t in_flight_ = 0;
  int64_t measured_in_flight_ = 0;
  bool stopped_ = false;  // nothing more will be sent
  bool cancel_cooldown_ = false, cooldown_cancelled_ = false;
  bool done_ = false;
  bool saturated_ = false;
  // Closed loop: the phase machine.
  Phase phase_ = Phase::kWarmup;
  int64_t phase_started_ = 0;
  int64_t phase_start_ns_ = 0;
  // Open loop: the schedule and the client queue.
  size_t next_arrival_ = 0;
  std::deque<Due> queue_;
  // Early stop: per-second samples of level time.
  std::optional<SaturationDetector> saturation_;
  int64_t next_sample_ns_ = 0;
  int64_t second_completed_ = 0, second_errors_ = 0;
  // Sessions: every open one, and those thinking by due time.
  std::unordered_map<int64_t, Session> sessions_;
  std::set<std::pair<int64_t, int64_t>> thinking_;  // (due ns, session id)
  int64_t next_session_ = 0;
};

}  // namespace tokperf
