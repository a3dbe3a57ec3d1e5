// Runs the closed-loop load of `tokperf bench` against a live endpoint: for each concurrency level,
// W warm-up requests (excluded from statistics), then R measured requests (or until a duration), with
// C requests in flight and a new one sent the moment one finishes. One event loop thread carries all
// streams; each finished request is handed to the sink at once, so nothing is lost on a crash.
//
// Thread rules: run() blocks the calling thread and runs the loop on it; interrupt() may be called
// from any thread (or a signal arriving while run() is blocked: see install_signal_stop).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/request_builder.h"
#include "load/bench_config.h"
#include "metrics/request_record.h"
#include "net/event_loop.h"

namespace tokperf {

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
  int concurrency = 0;
  int64_t done = 0;       // measured requests finished
  int64_t total = 0;      // measured requests planned (0: duration-bound)
  int64_t errors = 0;
  double ttft_p50_ms = 0; // over the last finished requests
  double output_tok_s = 0;
  double elapsed_s = 0;
};

class BenchRunner {
 public:
  using RecordSink = std::function<void(const RequestTimeline&)>;
  using ProgressSink = std::function<void(const LevelProgress&)>;

  // REQUIRES: config validated (concurrency >= 1, model resolved).
  BenchRunner(const BenchConfig& config, RequestBuilder builder, RecordSink on_record);
  ~BenchRunner();

  // Called every 250 ms while running (on the loop thread).
  void set_progress_sink(ProgressSink sink) { progress_ = std::move(sink); }

  // Runs every level. Returns false when interrupted.
  bool run();
  // Thread-safe: stop sending, let in-flight requests finish within the grace period, then cancel.
  void interrupt();

  const ClientSelfMeasure& self_measure() const { return self_; }

 private:
  class Slot;
  void start_level(size_t index);
  void fill_slots();
  bool may_start() const;
  void on_slot_done(Slot* slot);
  void finish_level();
  void tick_progress();
  void begin_interrupt();

  BenchConfig config_;
  RequestBuilder builder_;
  RecordSink on_record_;
  ProgressSink progress_;
  EventLoop loop_;
  std::unique_ptr<class Transport> transport_;
  std::unique_ptr<class ChunkClassifier> classifier_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> free_slots_;

  size_t level_ = 0;
  Phase phase_ = Phase::kWarmup;
  int64_t phase_started_ = 0;   // requests started in this phase
  int64_t phase_target_ = 0;    // requests to start in this phase (0: duration-bound)
  int64_t measure_deadline_ns_ = 0;
  int64_t level_start_ns_ = 0;
  int64_t in_flight_ = 0;
  uint64_t seq_ = 0;
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

  ClientSelfMeasure self_;
  int64_t probe_deadline_ns_ = 0;
};

// Makes SIGINT/SIGTERM call runner->interrupt() (once; a second signal exits at once with 130).
// Returns a guard that restores the default handlers when destroyed.
std::shared_ptr<void> install_signal_stop(BenchRunner* runner);

}  // namespace tokperf
