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
// (load/level_driver.h), which the simulator's virtual-time runner drives too; the loop workers
// (load/loop_worker.h) own the clock, the timers and the sockets.
// Several event loops (`--threads N`, BenchConfig::load.threads): loop k runs on a thread of its
// own with its own connections and paces share k of every level (load/loop_worker.h,
// load/loop_split.h); levels start in lockstep (a barrier: level L+1 starts on every loop at one
// shared time once every loop has finished level L), and what the loops report is merged into
// what one loop would have reported. With one loop, the loop runs on the calling thread.
// A shard of a distributed run (`--shard I/N`, load.share_index/share_count) splits its own share
// the same way: loop k of m paces the combined share I + N*k of N*m (arrival i goes to shard
// i mod N and, within it, to loop (i div N) mod m), and with `--start-at` every level waits for
// its wall-clock boundary before it starts on any loop (docs/DISTRIBUTED.md).
// Every finished request goes to the sink at once (one loop) or within 10 ms (several: each loop
// queues its records and the calling thread hands them to the sink), so nothing is lost on a crash
// or Ctrl-C. Definitions: docs/LOAD.md, docs/metrics.md.
//
// Thread rules: run() blocks the calling thread; the record, progress and level sinks all run on
// that thread (never two at once, so they need no locks). interrupt() may be called from any
// thread or a signal handler. The session text source runs on the loops' threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "client/request_builder.h"
#include "load/bench_config.h"
#include "load/level_run_info.h"
#include "load/loop_worker.h"
#include "metrics/request_record.h"
#include "metrics/timeseries.h"

namespace tokperf {

// What the client measured about itself during a run (its own health), merged over its loops.
struct ClientSelfMeasure {
  std::vector<int64_t> loop_lag_ns;  // lateness of a 10 ms probe timer, every loop's samples
  double cpu_user_s = 0;
  double cpu_system_s = 0;
  double wall_s = 0;
  int64_t peak_in_flight = 0;
  uint64_t stream_events = 0;
  uint64_t body_reads = 0;
  uint64_t body_bytes = 0;
  std::vector<LoopSelfMeasure> loops;  // each loop's own figures, by loop index
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
  std::vector<int64_t> in_flight_by_loop;  // several loops: each loop's streams open; else empty
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
  void interrupt() { shared_.interrupt_requested.store(true); }

  // The loops this run uses: load.threads capped by what its levels can share (run_loop_count).
  int loops() const { return static_cast<int>(mailboxes_.size()); }
  const ClientSelfMeasure& self_measure() const { return self_; }
  const std::vector<LevelRunInfo>& levels() const { return infos_; }
  // Per-second samples, merged over the loops (merge_loop_samples), and each loop's own.
  const std::vector<RunnerSample>& samples() const { return samples_; }
  const std::vector<std::vector<RunnerSample>>& loop_samples() const { return loop_samples_; }
  // Lockstep shards (LoadConfig::start_at_unix_us): per level, how late it started after its
  // fixed boundary (0: on time); empty without --start-at.
  const std::vector<int64_t>& late_start_ns() const { return late_start_ns_; }
  int64_t run_start_ns() const { return run_start_ns_; }
  int64_t run_end_ns() const { return run_end_ns_; }

 private:
  // Per loop, what the calling thread collects from it (several loops only).
  struct LoopMailbox {
    std::mutex mu;
    std::vector<RequestTimeline> records;  // finished, not yet handed to the sink
  };
  void run_on_this_thread();
  void run_on_loop_threads();
  // Starts `level` now, or once its lockstep boundary has come (begin_level then starts it);
  // from_loop: called on the (only) loop's thread inside run().
  void start_level(size_t level, bool from_loop);
  // Starts `level` on every loop now; from_loop as for start_level.
  void begin_level(size_t level, bool from_loop);
  // Interrupted while waiting for a level's boundary: nothing is in flight, the run ends.
  void end_wait_interrupted();
  // Every loop finished the level: merge, report, then the next level or the end.
  void end_level(std::vector<LevelRunInfo> shares, bool ends_sweep);
  void deliver(const RequestTimeline& t);
  void drain_mailboxes();
  void tick_progress();
  void collect_measures();

  BenchConfig config_;
  RecordSink on_record_;
  ProgressSink progress_;
  LevelSink on_level_start_, on_level_end_;
  SessionTextSource session_text_;
  RequestBuilder builder_;
  LoopShared shared_;
  std::vector<std::unique_ptr<LoopWorker>> workers_;
  std::vector<std::unique_ptr<LoopMailbox>> mailboxes_;

  size_t level_ = 0;
  int level_shares_ = 1;
  int64_t level_start_ns_ = 0;
  LevelRunInfo level_whole_;  // the whole level's driver info at its start (schedule figures)
  bool finished_ = false;
  bool interrupted_ = false;
  // Lockstep: a level waits for its boundary (waiting_level_: which, and when on the monotonic
  // clock); per level, how late it started.
  bool waiting_level_ = false;
  size_t waiting_index_ = 0;
  int64_t waiting_until_ns_ = 0;
  std::vector<int64_t> late_start_ns_;

  // Several loops: what the loops told the calling thread, under mu_.
  std::mutex mu_;
  std::condition_variable wake_;
  bool news_ = false;
  std::vector<std::optional<LevelRunInfo>> done_;  // this level's share infos, by loop
  bool done_ends_sweep_ = false;
  struct SweepStop {
    int loop;
    size_t level;
    std::string reason;
  };
  std::vector<SweepStop> sweep_stops_;
  std::exception_ptr loop_failure_;

  // Progress of the current level, from the records handed to the sink.
  int64_t done_count_ = 0;
  int64_t errors_ = 0;
  int64_t output_tokens_ = 0;
  std::vector<double> recent_ttft_ms_;
  size_t recent_next_ = 0;

  std::vector<LevelRunInfo> infos_;
  std::vector<RunnerSample> samples_;
  std::vector<std::vector<RunnerSample>> loop_samples_;
  ClientSelfMeasure self_;
  int64_t run_start_ns_ = 0, run_end_ns_ = 0;
};
// Makes SIGINT/SIGTERM call runner->interrupt() (a second signal exits at once with 130).
// Returns a guard that restores the default handlers when destroyed.
std::shared_ptr<void> install_signal_stop(BenchRunner* runner);

}  // namespace tokperf
