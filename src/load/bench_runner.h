// Runs the load of `tokperf bench` against a live endpoint, level after level:
//  - closed loop (a concurrency level): C requests in flight, a new one sent the moment one
//  finishes;
//    a linear ramp moves C over time;
//  - open loop (a rate level): arrivals at precomputed absolute times on the monotonic clock
//  (timerfd,
//    sub-millisecond), never paced by relative sleeps; with --max-concurrency, arrivals that find
//    no free slot wait in a client queue (their queue time is kept); trace replay is an open-loop
//    level whose arrivals and lengths come from the trace.
// Each level runs warm-up, measure and cool-down phases (by count or by time; only measure counts).
// A count-based warm-up is a barrier: measurement starts on a warm server with every slot free.
// These rules, the client queue, ramps and early stop live in the clock-free LevelDriver
// (load/level_driver.h), which the simulator's virtual-time runner drives too; this class owns the
// clock, the timers and the sockets.
// Every finished request goes to the sink at once, so nothing is lost on a crash or Ctrl-C.
// One event-loop thread carries every stream. Definitions: docs/LOAD.md, docs/metrics.md.
//
// Thread rules: run() blocks the calling thread and runs the loop on it; interrupt() may be called
// from any thread or a signal handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "client/request_builder.h"
#include "load/bench_config.h"
#include "load/level_driver.h"
#include "load/level_run_info.h"
#include "metrics/request_record.h"
#include "metrics/timeseries.h"
#include "net/event_loop.h"

namespace tokperf {

class ChunkClassifier;
class InflightRequest;
class Transport;

// What the client measured about itself during a run (its own health).
struct ClientSelfMeasure {
  std::vector<int64_t> loop_lag_ns;  // lateness of a 10 ms probe timer
  double cpu_user_s = 0;
  double cpu_system_s = 0;
  double wall_s = 0;
  int64_t peak_in_flight = 0;
  uint64_t stream_events = 0;
  uint64_t body_reads = 0;
  uint64_t body_bytes = 0;
};

struct LevelProgress {
  int level = 0;
  std::string label;
  int64_t done = 0;   // measured requests finished
  int64_t total = 0;  // measured requests planned (0: time-bound)
  int64_t errors = 0;
  int64_t in_flight = 0;
  int64_t queued = 0;
  double ttft_p50_ms = 0;  // over the last finished requests
  double output_tok_s = 0;
  double elapsed_s = 0;
};

class BenchRunner {
 public:
  using RecordSink = std::function<void(const RequestTimeline&)>;
  using ProgressSink = std::function<void(const LevelProgress&)>;

  // REQUIRES: config validated (levels non-empty, model resolved). With a trace, builder must
  // accept per-request lengths (RequestBuilder::body_for).
  BenchRunner(const BenchConfig& config, RequestBuilder builder, RecordSink on_record);
  ~BenchRunner();

  using LevelSink = std::function<void(const LevelRunInfo&)>;

  void set_progress_sink(ProgressSink sink) { progress_ = std::move(sink); }
  // Called on the loop thread when a level starts (before its first request) and when it has
  // ended (every request of it finished; the info is final). Hooks for per-level side work such
  // as scraping server metrics; they must not block.
  void set_level_sinks(LevelSink on_start, LevelSink on_end) {
    on_level_start_ = std::move(on_start);
    on_level_end_ = std::move(on_end);
  }

  // Multi-turn sessions: the user text of turn `turn` (1-based) of session `session` at `level`.
  // Default: the configured prompt (with the unique prefix on a session's first turn when
  // --unique-prompts). Set before run(); dataset sources plug in here.
  using SessionTextSource = std::function<std::string(int level, int64_t session, int64_t turn)>;
  void set_session_text_source(SessionTextSource source) { session_text_ = std::move(source); }

  // Runs every level. Returns false when interrupted.
  bool run();
  // Thread- and signal-safe: stop sending, let in-flight requests finish within the grace period,
  // then cancel them.
  void interrupt();

  const ClientSelfMeasure& self_measure() const { return self_; }
  const std::vector<LevelRunInfo>& levels() const { return infos_; }
  const std::vector<RunnerSample>& samples() const { return samples_; }
  // Lockstep shards (LoadConfig::start_at_unix_us): per level, how late it started after its
  // fixed boundary (0: on time); empty without --start-at.
  const std::vector<int64_t>& late_start_ns() const { return late_start_ns_; }
  int64_t run_start_ns() const { return run_start_ns_; }
  int64_t run_end_ns() const { return run_end_ns_; }

 private:
  // Starts level `index` now, or at its lockstep boundary (begin_level then runs it).
  void start_level(size_t index);
  void begin_level(size_t index);
  // Starts what the driver orders now, cancels finished-with cool-down, arms the driver's wake-up
  // timer and moves to the next level when this one is done. Re-entrant calls (a cancel finishes
  // a request at once) are folded into the running one.
  void pump();
  void on_request_done(InflightRequest* r);
  void finish_level();
  void tick_second();
  void tick_progress();
  void begin_interrupt();
  void send(const SendOrder& order);
  // A session turn's body: its history plus the new user text; fills the timeline's session fields.
  std::string session_body(const SendOrder& order, RequestTimeline& tl);
  void session_turn_done(InflightRequest* r);

  BenchConfig config_;
  RequestBuilder builder_;
  RecordSink on_record_;
  ProgressSink progress_;
  LevelSink on_level_start_, on_level_end_;
  EventLoop loop_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<ChunkClassifier> classifier_;
  std::vector<std::unique_ptr<InflightRequest>> pool_;
  std::vector<InflightRequest*> idle_;
  std::unordered_set<InflightRequest*> active_;

  // The level being run: its rules live in the driver; the runner owns the clock and sockets.
  size_t level_ = 0;
  int64_t level_start_ns_ = 0;
  std::optional<LevelDriver> driver_;
  uint64_t wake_timer_ = 0;
  int64_t wake_timer_at_ = -1;  // -1: not armed
  bool pumping_ = false, pump_again_ = false;
  uint64_t seq_ = 0;
  int64_t second_max_lag_ns_ = 0;

  bool waiting_level_ = false;  // a lockstep level's start timer is armed
  std::vector<int64_t> late_start_ns_;
  bool interrupting_ = false;
  bool interrupted_ = false;
  bool finished_ = false;
  std::atomic<bool> interrupt_requested_{false};

  // Progress of the current level.
  int64_t done_ = 0;
  int64_t errors_ = 0;
  int64_t output_tokens_ = 0;
  std::vector<double> recent_ttft_ms_;
  size_t recent_next_ = 0;

  // Sessions of the current level: the conversation so far, by SendOrder::session.
  struct SessionHistory {
    std::vector<ChatMessage> messages;  // every finished turn: user text, then the reply
    std::string pending_user;           // the user text of the turn in flight
    int64_t tokens = 0;                 // prompt + output tokens of the last finished turn
    bool tokens_known = true;
  };
  std::unordered_map<int64_t, SessionHistory> sessions_;
  SessionTextSource session_text_;

  std::vector<LevelRunInfo> infos_;
  std::vector<RunnerSample> samples_;
  ClientSelfMeasure self_;
  int64_t probe_deadline_ns_ = 0;
  int64_t run_start_ns_ = 0, run_end_ns_ = 0;
};

// Makes SIGINT/SIGTERM call runner->interrupt() (a second signal exits at once with 130).
// Returns a guard that restores the default handlers when destroyed.
std::shared_ptr<void> install_signal_stop(BenchRunner* runner);

}  // namespace tokperf
