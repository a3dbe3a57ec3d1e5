// Runs the load of `tokperf bench` against a live endpoint, level after level:
//  - closed loop (a concurrency level): C requests in flight, a new one sent the moment one finishes;
//    a linear ramp moves C over time;
//  - open loop (a rate level): arrivals at precomputed absolute times on the monotonic clock (timerfd,
//    sub-millisecond), never paced by relative sleeps; with --max-concurrency, arrivals that find no
//    free slot wait in a client queue (their queue time is kept); trace replay is an open-loop level
//    whose arrivals and lengths come from the trace.
// Each level runs warm-up, measure and cool-down phases (by count or by time; only measure counts).
// A count-based warm-up is a barrier: measurement starts on a warm server with every slot free.
// Every finished request goes to the sink at once, so nothing is lost on a crash or Ctrl-C.
// One event-loop thread carries every stream. Definitions: docs/LOAD.md, docs/metrics.md.
//
// Thread rules: run() blocks the calling thread and runs the loop on it; interrupt() may be called
// from any thread or a signal handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "client/request_builder.h"
#include "load/bench_config.h"
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

// How one level went, as the runner saw it (the request statistics come from the records).
struct LevelRunInfo {
  int level = 0;
  LevelSpec spec;
  bool open_loop = false;
  int64_t start_ns = 0, end_ns = 0;          // the level, all phases
  int64_t measured_sent = 0;                 // measured requests sent
  double measured_span_s = 0;                // first to last measured intended start
  double target_rate_rps = 0;                // open loop
  double scheduled_rate_rps = 0;             // measured arrivals / their intended span (the sample)
  double achieved_rate_rps = 0;              // measured sends / their actual span (open loop)
  int64_t first_measured_send_ns = 0, last_measured_send_ns = 0;
  std::vector<int64_t> send_lag_ns;          // measured, open loop: dispatch - intended start
  std::string schedule_fingerprint;          // open loop: hex of the arrival offsets
  int64_t scheduled_arrivals = 0;
  std::optional<std::string> stopped_early;  // why the level stopped before its plan
  bool send_lag_exceeded = false;            // send-lag P99 above the configured bound
};

struct LevelProgress {
  int level = 0;
  std::string label;
  int64_t done = 0;       // measured requests finished
  int64_t total = 0;      // measured requests planned (0: time-bound)
  int64_t errors = 0;
  int64_t in_flight = 0;
  int64_t queued = 0;
  double ttft_p50_ms = 0; // over the last finished requests
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

  void set_progress_sink(ProgressSink sink) { progress_ = std::move(sink); }
  // Called on the loop thread the moment a level ends (its end_ns is set); must not block — e.g.
  // servermetrics::ServerScraper::mark_level_end, which only queues a scrape.
  void set_level_end_sink(std::function<void(int level)> sink) { level_end_ = std::move(sink); }

  // Runs every level. Returns false when interrupted.
  bool run();
  // Thread- and signal-safe: stop sending, let in-flight requests finish within the grace period,
  // then cancel them.
  void interrupt();

  const ClientSelfMeasure& self_measure() const { return self_; }
  const std::vector<LevelRunInfo>& levels() const { return infos_; }
  const std::vector<RunnerSample>& samples() const { return samples_; }
  int64_t run_start_ns() const { return run_start_ns_; }
  int64_t run_end_ns() const { return run_end_ns_; }

 private:
  struct Arrival {
    int64_t intended_ns;
    Phase phase;
    int64_t index;  // into the trace / arrival list
  };
  void start_level(size_t index);
  void plan_open_loop(LevelRunInfo& info);
  void on_arrival_timer();
  void dispatch(const Arrival& a, int64_t now);
  void fill_closed_loop();
  PhaseLimit closed_loop_limit(int64_t now) const;
  std::optional<Phase> next_closed_loop_phase(int64_t now);
  void cancel_cooldown_if_measured_done();
  bool level_done() const;
  void on_request_done(InflightRequest* r);
  void finish_level();
  void tick_second();
  void tick_progress();
  void begin_interrupt();
  void send(InflightRequest* r, RequestTimeline tl, int64_t trace_index);
  size_t slot_limit(int64_t now) const;

  BenchConfig config_;
  RequestBuilder builder_;
  RecordSink on_record_;
  ProgressSink progress_;
  std::function<void(int)> level_end_;
  EventLoop loop_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<ChunkClassifier> classifier_;
  std::vector<std::unique_ptr<InflightRequest>> pool_;
  std::vector<InflightRequest*> idle_;
  std::unordered_set<InflightRequest*> active_;

  // The level being run.
  size_t level_ = 0;
  bool open_loop_ = false;
  int64_t level_start_ns_ = 0;
  int64_t in_flight_ = 0;
  int64_t measured_in_flight_ = 0;
  uint64_t seq_ = 0;
  // Closed loop: phase machine.
  Phase phase_ = Phase::kWarmup;
  int64_t phase_started_ = 0;
  int64_t phase_start_ns_ = 0;
  bool sending_done_ = false;  // no more requests will be started in this level
  // Open loop: the schedule and the client queue (arrivals waiting for a slot under a cap).
  std::vector<Arrival> schedule_;
  size_t next_arrival_ = 0;
  uint64_t arrival_timer_ = 0;
  bool arrival_timer_armed_ = false;
  std::deque<Arrival> client_queue_;
  std::unique_ptr<SaturationDetector> saturation_;
  int64_t second_completed_ = 0, second_errors_ = 0;
  int64_t second_max_lag_ns_ = 0;

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
