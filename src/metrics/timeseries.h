// Per-second windows over a run, built after the fact from the request timelines (plus the
// per-second samples the runner pushed: event-loop lag, client queue), written as timeseries.csv;
// and drift detection within a level. Column definitions: docs/LOAD.md ("Time series").
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "metrics/pooled_dist.h"
#include "metrics/request_record.h"

namespace tokperf {

// What the runner samples once a second (monotonic t_ns inside the window it describes).
struct RunnerSample {
  int64_t t_ns = 0;
  double loop_lag_ms = 0;    // event-loop timer lag observed in that second (max)
  int64_t client_queue = 0;  // due but not yet sent
};

struct TimeseriesRow {
  int64_t second = 0;    // window [run_start + second s, +1 s)
  int64_t arrivals = 0;  // intended starts in the window
  int64_t sends = 0;
  int64_t in_flight = 0;        // sent and not ended at the window's end
  int64_t completions = 0;      // ended OK in the window
  int64_t errors = 0;           // ended with an error in the window
  double output_tok_per_s = 0;  // token events in the window (their token counts when known)
  double ttft_p50_ms = 0,
         ttft_p95_ms = 0;  // requests whose first token came in the window; NaN if none
  double itl_p50_ms = 0, itl_p95_ms = 0;            // gaps ending in the window
  double send_lag_p50_ms = 0, send_lag_p95_ms = 0;  // send - intended, by send time
  double loop_lag_ms = 0;     // max over the runner's samples in the window; NaN if none
  int64_t client_queue = -1;  // last runner sample in the window; -1 if none
  // The engine's own metrics in that second (bench --server-metrics): written as extra columns
  // (TimeseriesColumn, servermetrics/server_report.h), read back by the run loader; NaN if none.
  double server_running = NAN, server_waiting = NAN, server_kv_usage = NAN;
  double server_gen_tok_per_s = NAN, server_preemptions = NAN;
};

// Windows of 1 s from run_start_ns up to run_end_ns (the last one may be partial).
// build_timeseries fed one finished request at a time, in bounded memory: counts per window, and
// each window's TTFT, ITL and send-lag values exactly up to kExactPerWindow of each, then within
// 0.8% (PooledDist with kSubBuckets: 1/128). Windows start at run_start_ns. A window costs about
// 2 KB, so a run's memory grows with its duration only at that rate (a million requests of
// virtual-time serving span ~10^5 windows).
class TimeseriesBuilder {
 public:
  static constexpr size_t kExactPerWindow = 64;
  static constexpr int kSubBuckets = 64;
  explicit TimeseriesBuilder(int64_t run_start_ns = 0) : start_ns_(run_start_ns) {}
  void set_run_start(int64_t ns) { start_ns_ = ns; }
  void add(const RequestTimeline& r);
  std::vector<TimeseriesRow> finish(int64_t run_end_ns,
                                    std::span<const RunnerSample> samples = {}) const;

 private:
  struct Window {
    int64_t arrivals = 0, sends = 0, completions = 0, errors = 0;
    int64_t in_flight_delta = 0;  // requests whose in-flight span starts (+) or ends (-) here
    double tokens = 0;
    PooledDist ttft{kExactPerWindow, kSubBuckets}, itl{kExactPerWindow, kSubBuckets},
        lag{kExactPerWindow, kSubBuckets};
  };
  Window& at(int64_t w);
  int64_t start_ns_;
  std::vector<Window> windows_;  // window w: [start + w s, +1 s)
};

std::vector<TimeseriesRow> build_timeseries(std::span<const RequestTimeline> requests,
                                            int64_t run_start_ns, int64_t run_end_ns,
                                            std::span<const RunnerSample> samples = {});

// A column appended after the fixed ones (e.g. the server's own metrics, servermetrics/): one value
// per row, NaN (or a missing value) written empty.
struct TimeseriesColumn {
  std::string name;
  std::vector<double> values;
};

// CSV with a header line; NaN written as an empty field.
std::string timeseries_csv(std::span<const TimeseriesRow> rows,
                           std::span<const TimeseriesColumn> extra = {});
Status write_timeseries_csv(const std::string& path, std::span<const TimeseriesRow> rows,
                            std::span<const TimeseriesColumn> extra = {});

struct DriftOptions {
  double factor = 1.5;      // last third's P95 >= factor * first third's...
  double min_delta_ms = 5;  // ...and worse by at least this much
  size_t min_samples = 20;  // per third, else no verdict
};

struct DriftReport {
  bool drifted = false;
  bool judged = false;  // false: too few samples
  double ttft_p95_first_ms = 0, ttft_p95_last_ms = 0;
  double itl_p95_first_ms = 0, itl_p95_last_ms = 0;
  std::string explanation;
};

// What drift detection needs of one measured, OK request that produced a token.
struct DriftPoint {
  int64_t send_ns = 0;
  double ttft_ms = 0;
  std::vector<double> itl_ms;
};

// Compares the first and last thirds (by send time) of one level's requests in [start_ns, end_ns):
// TTFT P95 over requests and ITL P95 over their gaps.
DriftReport detect_drift(std::span<const DriftPoint> points, int64_t start_ns, int64_t end_ns,
                         const DriftOptions& options = {});
// detect_drift fed one measured OK request at a time in bounded memory: every point exactly until
// the level's pooled gaps pass kExactGaps; then per-second buckets of send time, each bucket
// going to the third that holds its midpoint (so a third's edges move by at most half a second)
// and its gaps kept within 0.8% (PooledDist with kBucketSubBuckets: 1/128). docs/metrics.md.
class DriftAccumulator {
 public:
  static constexpr size_t kExactGaps = size_t{1} << 22;  // 4 M gaps, 32 MB
  static constexpr int64_t kBucketNs = 1'000'000'000;
  static constexpr int kBucketSubBuckets = 64;
  explicit DriftAccumulator(size_t exact_gaps = kExactGaps) : exact_gaps_(exact_gaps) {}
  void add(int64_t send_ns, double ttft_ms, std::span<const double> itl_ms);
  DriftReport finish(int64_t start_ns, int64_t end_ns, const DriftOptions& options = {}) const;
  bool exact() const { return !bucketed_; }

 private:
  struct Bucket {
    std::vector<double> ttft;
    PooledDist itl{64, kBucketSubBuckets};
  };
  size_t exact_gaps_;
  std::vector<DriftPoint> points_;
  size_t gaps_ = 0;
  bool bucketed_ = false;
  std::map<int64_t, Bucket> buckets_;  // by send second
};

// The same over a run's records: those of `level` that were measured, OK and produced a token.
DriftReport detect_drift(std::span<const RequestTimeline> requests, int level, int64_t start_ns,
                         int64_t end_ns, const DriftOptions& options = {});

}  // namespace tokperf
