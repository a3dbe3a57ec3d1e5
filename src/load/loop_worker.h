// One event loop of a bench run (load/bench_runner.h runs one or several): its own epoll loop,
// libcurl multi handle and connections, its pool of in-flight requests, the histories of its
// sessions, and a LevelDriver for this loop's share of the level being run (load/level_driver.h,
// load/loop_split.h). It paces its share on absolute deadlines from the level's shared start time,
// so the loops of a run together send exactly what one loop would have sent. It does not decide
// when levels start or end: its owner does (a barrier across loops), through the hooks.
//
// Thread rules: construct on any thread; run() on the thread that will own the loop, and every
// other method on that thread (inside run(), or through loop().post() from another thread), except
// queued_now(), which any thread may read. Hooks run on the loop thread. After run() returns, the
// owner may read self_measure() and samples() from any thread that joined it.
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

// What one loop measured about itself.
struct LoopSelfMeasure {
  int loop = 0;
  std::vector<int64_t> loop_lag_ns;  // lateness of a 10 ms probe timer on this loop
  double cpu_s = 0;                  // this loop thread's CPU time (user + system)
  double wall_s = 0;
  int64_t peak_in_flight = 0;  // most of this loop's streams open at once
  uint64_t stream_events = 0;
  uint64_t body_reads = 0;
  uint64_t body_bytes = 0;
};

// State every loop of a run shares: touched once per request (never per token or event).
struct LoopShared {
  std::atomic<uint64_t> next_seq{0};  // request seq numbers, unique across loops
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> peak_in_flight{0};
  std::atomic<bool> interrupt_requested{false};
};

class LoopWorker {
 public:
  struct Hooks {
    // A request finished; its timeline is complete. The hook may move from it.
    std::function<void(RequestTimeline&)> on_record;
    // This loop's share of the level is done (its info final; idle loops give an empty info).
    // ends_sweep: the share stopped the sweep (saturation).
    std::function<void(int loop, const LevelRunInfo& info, bool ends_sweep)> on_level_done;
    // This loop's share saturated mid-level: the other loops should stop the level too. May be
    // empty (one loop).
    std::function<void(int loop, size_t level, const std::string& reason)> on_sweep_stop;
    // Every 250 ms of loop time; may be empty.
    std::function<void()> on_tick;
  };
  // Open-loop arrivals are due this long after their level's start plus their offset.
  static constexpr int64_t kOpenLoopLeadNs = 20'000'000;
  using SessionTextSource = std::function<std::string(int level, int64_t session, int64_t turn)>;

  // REQUIRES: config validated; shared outlives the worker. session_text may be empty; with
  // several loops it is called from each loop's thread.
  LoopWorker(int index, const BenchConfig& config, RequestBuilder builder, LoopShared& shared,
             Hooks hooks, SessionTextSource session_text);
  ~LoopWorker();
  LoopWorker(const LoopWorker&) = delete;
  LoopWorker& operator=(const LoopWorker&) = delete;

  // Runs the loop until finish(). Per-second samples are taken at run_start_ns + k s.
  void run(int64_t run_start_ns);
  // Starts this loop's share (index of `shares`) of `level`, due from start_ns on; a loop whose
  // index is not below `shares` sits the level out (reports it done at once).
  void start_level(size_t level, int shares, int64_t start_ns);
  // Stops sending for `level` (another loop's share stopped the sweep); a no-op once it ended.
  void stop_level(size_t level, const std::string& reason);
  // Leaves run() after the current round.
  void finish() { finished_ = true; }

  EventLoop& loop() { return loop_; }
  int index() const { return index_; }
  // This loop's client queue, as of its last pump (any thread).
  int64_t queued_now() const { return queued_.load(std::memory_order_relaxed); }
  // This loop's streams open now (any thread).
  int64_t in_flight_now() const { return in_flight_.load(std::memory_order_relaxed); }

  const LoopSelfMeasure& self_measure() const { return self_; }
  const std::vector<RunnerSample>& samples() const { return samples_; }

 private:
  void pump();
  void send(const SendOrder& order);
  std::string session_body(const SendOrder& order, RequestTimeline& tl);
  void session_turn_done(InflightRequest* r);
  void on_request_done(InflightRequest* r);
  void finish_level();
  void begin_interrupt();
  void tick_second();

  int index_;
  const BenchConfig& config_;
  RequestBuilder builder_;
  LoopShared& shared_;
  Hooks hooks_;
  SessionTextSource session_text_;
  EventLoop loop_;
  std::unique_ptr<Transport> transport_;  // made on the loop thread in run()
  std::unique_ptr<ChunkClassifier> classifier_;
  std::vector<std::unique_ptr<InflightRequest>> pool_;
  std::vector<InflightRequest*> idle_;
  std::unordered_set<InflightRequest*> active_;

  size_t level_ = 0;
  std::optional<LevelDriver> driver_;
  uint64_t wake_timer_ = 0;
  int64_t wake_timer_at_ = -1;  // -1: not armed
  bool pumping_ = false, pump_again_ = false;
  bool sweep_stop_reported_ = false;
  bool interrupting_ = false;
  bool finished_ = false;
  std::atomic<int64_t> queued_{0};
  std::atomic<int64_t> in_flight_{0};

  struct SessionHistory {
    std::vector<ChatMessage> messages;  // every finished turn: user text, then the reply
    std::string pending_user;           // the user text of the turn in flight
    int64_t tokens = 0;                 // prompt + output tokens of the last finished turn
    bool tokens_known = true;
  };
  std::unordered_map<int64_t, SessionHistory> sessions_;

  LoopSelfMeasure self_;
  std::vector<RunnerSample> samples_;
  int64_t second_max_lag_ns_ = 0;
  int64_t probe_deadline_ns_ = 0;
};

}  // namespace tokperf
