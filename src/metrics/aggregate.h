// What one load level measured: counts, latency statistics and throughput, from the request records
// of that level. Definitions (what counts, which window): docs/metrics.md; on disk:
// docs/summary-schema.md.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "metrics/pooled_dist.h"
#include "metrics/request_record.h"
#include "metrics/stats.h"

namespace tokperf {

// The load a level was run at. Plain fields so every load shape (closed loop, open loop, sweeps)
// can describe itself without this module knowing them.
struct LevelParams {
  std::string label;    // e.g. "c=8" or "rate=10/s"; shown by the console table
  int level = -1;       // only records with this RequestTimeline::level count; -1: any level
  int concurrency = 0;  // closed-loop slots; 0 when the level is open-loop
  double target_rate_rps = std::numeric_limits<double>::quiet_NaN();  // open loop; NaN otherwise
};

// Failures of one kind within a level. The first message and status are kept so the console can
// show what went wrong without opening requests.jsonl.
struct ErrorTally {
  ErrorKind kind = ErrorKind::kOther;
  int64_t count = 0;
  int first_http_status = 0;  // 0 when the first failure of this kind had no status
  std::string first_message;
};

struct LevelSummary {
  LevelParams params;

  // Accounting. Invariant: sent == ok + sum(errors[i].count) == ok + failed.
  int64_t sent = 0;
  int64_t ok = 0;
  int64_t failed = 0;
  std::vector<ErrorTally> errors;        // ascending by ErrorKind, kinds with count > 0 only
  int64_t output_tokens_from_usage = 0;  // ok requests whose N_out came from usage
  int64_t output_tokens_counted = 0;     // ok requests whose N_out is the token-event count

  // The server's usage.completion_tokens against what the client counted in the stream (the sum of
  // per-event token counts where the server gave them, else the number of token events), over ok
  // requests that had both. Servers that pack several tokens per chunk differ by design; a server
  // whose usage disagrees with its own per-chunk counts is worth knowing about.
  struct TokenCountCheck {
    int64_t compared = 0;             // ok requests with usage and at least one token event
    int64_t differing = 0;            // of those, usage != counted
    int64_t usage_minus_counted = 0;  // summed over the compared requests
    int64_t max_abs_difference = 0;
  } token_count_check;

  // Latency statistics in milliseconds, over successful measured requests only. itl pools every gap
  // of every such request, so a request with many tokens weighs more.
  DistStats ttft, ttfo, tpot, itl, e2e, queue, ttft_from_intended, e2e_from_intended;
  // Per-token ITL: each gap divided by the tokens the chunk that ended it carried (the event's own
  // count when the server reports one, else the request's mean tokens per chunk, usage / events).
  // Equal to itl when every chunk carries one token; docs/metrics.md.
  DistStats itl_per_token;
  // false when the pooled gaps outgrew PooledDist's exact bound: itl and itl_per_token percentiles
  // then carry up to PooledDist::kMaxRelativeError (docs/metrics.md).
  bool itl_exact = true;

  // Token totals of successful requests; prompt tokens count only requests where they are known.
  int64_t prompt_tokens_total = 0;
  int64_t output_tokens_total = 0;

  // Window: first measured send to last measured end (all measured requests, failed included).
  double window_s = 0;
  double request_throughput_rps = std::numeric_limits<double>::quiet_NaN();  // ok / window
  double output_token_throughput_tps = std::numeric_limits<double>::quiet_NaN();
  double total_token_throughput_tps = std::numeric_limits<double>::quiet_NaN();  // prompt + output

  int64_t error_count(ErrorKind k) const;
};

// Collects one level's records as they finish, so the runner can stream them instead of keeping
// every timeline. Records of other phases or levels are ignored. Not thread-safe: one per recorder
// thread; merge() combines per-thread accumulators at the end.
class LevelAccumulator {
 public:
  explicit LevelAccumulator(LevelParams params) : params_(std::move(params)) {}

  // Returns false when the record was ignored (not kMeasure, or another level).
  bool add(const RequestTimeline& t, const RequestMetrics& m);
  bool add(const RequestTimeline& t) { return add(t, compute_request_metrics(t)); }
  void merge(const LevelAccumulator& other);

  int64_t sent() const { return sent_; }
  LevelSummary summary() const;

 private:
  LevelParams params_;
  int64_t sent_ = 0;
  int64_t ok_ = 0;
  std::vector<ErrorTally> errors_;  // indexed by ErrorKind
  int64_t from_usage_ = 0;
  int64_t counted_ = 0;
  int64_t prompt_tokens_ = 0;
  int64_t output_tokens_ = 0;
  int64_t window_start_ns_ = 0;
  int64_t window_end_ns_ = 0;
  LevelSummary::TokenCountCheck token_check_;
  // Per-request metrics: exact columns (8 bytes each per request).
  std::vector<double> ttft_, ttfo_, tpot_, e2e_, queue_, ttft_int_, e2e_int_;
  // Pooled gaps (hundreds per request): exact up to a bound, then a fine histogram.
  PooledDist itl_, itl_per_token_;
  std::vector<double> per_token_scratch_;  // one request's per-token gaps, reused
};

// Summarises the measured requests (phase == kMeasure, matching params.level) of `records`.
LevelSummary aggregate_level(const std::vector<RequestTimeline>& records,
                             const LevelParams& params);

}  // namespace tokperf
