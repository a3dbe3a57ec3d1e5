// Compute once, then present: the per-level results of a run (statistics, SLO outcome, drift,
// send lag, the sweep's knee) built here while records stream in, each record's metrics computed
// once by the caller. report/ only formats a RunResult (console lines, summary.json); report.html
// reads the figures back from summary.json.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "analysis/knee.h"
#include "analysis/request_sample.h"
#include "load/level_run_info.h"
#include "metrics/aggregate.h"
#include "metrics/request_record.h"
#include "metrics/slo.h"
#include "metrics/stats.h"
#include "metrics/timeseries.h"

namespace tokperf {

// What the level's requests asked for against what they got, and the server's prefix cache
// (docs/WORKLOADS.md). Over measured requests that finished without error.
struct WorkloadLevelStats {
  DistStats requested_input_tokens;  // what the workload asked for (estimates unless tokenized)
  DistStats served_input_tokens;     // usage.prompt_tokens (else the client's own count)
  DistStats requested_output_tokens;  // max_tokens sent
  DistStats served_output_tokens;     // usage.completion_tokens (else counted)
  // Prefix cache, over requests whose server reported cached prompt tokens.
  int64_t cache_reported = 0;
  int64_t cache_hits = 0;                 // of which with at least one cached token
  double cache_hit_rate = NAN;            // cache_hits / cache_reported
  double cached_token_share = NAN;        // sum(cached) / sum(prompt tokens) of those
  DistStats ttft_cache_hit_ms, ttft_cache_miss_ms;
  // Requests per shared-prefix group (index = group), empty without groups.
  std::vector<int64_t> prefix_group_requests;
  bool present() const {
    return requested_input_tokens.count > 0 || requested_output_tokens.count > 0 ||
           cache_reported > 0;
  }
};

// Multi-turn sessions: the measured requests of one turn index (docs/workloads-sessions.md).
struct TurnStats {
  int64_t turn = 0;  // 1-based
  int64_t requests = 0, ok = 0;
  DistStats ttft_ms, tpot_ms;
  DistStats prompt_tokens;  // usage when reported, else what the client sent
};

// Agent tool calls (--tools): measured requests that sent tools; how many streamed tool-call
// arguments that formed complete JSON, and when (docs/metrics.md, tool_call_ms).
struct ToolCallStats {
  int64_t requests = 0;   // measured requests with tools sent
  int64_t with_call = 0;  // of them: a tool-call argument fragment arrived
  int64_t complete = 0;   // of them: the arguments formed complete, valid JSON
  double completion_rate = DistStats::kUndefined;  // complete / requests
  DistStats tool_call_ms;
};

struct LevelResult {
  LevelSummary summary;   // latency statistics, counts, throughput of the measured requests
  LevelRunInfo run;       // how the runner drove the level (rates, early stop)
  DistStats send_lag_ms;  // open loop: dispatch - intended start of measured arrivals
  // With objectives: the SLO outcome; its objective pointers point into *slo_spec.
  std::shared_ptr<const SloSpec> slo_spec;
  std::optional<SloReport> slo;
  DriftReport drift;
  WorkloadLevelStats workload;
  std::vector<TurnStats> by_turn;           // sessions only, by turn index
  std::optional<ToolCallStats> tool_calls;  // only when the level sent tools
};

struct RunResult {
  std::vector<LevelResult> levels;  // levels that sent a measured request, in run order
  KneeResult knee;                  // of the sweep (needs 3+ levels of one kind)
};

// Collects every finished record of a run, once each, and turns them into a RunResult at the end.
// Not thread-safe: one per recorder thread.
class RunResultBuilder {
 public:
  // levels[i] describes level i (records with RequestTimeline::level == i); slo may be empty.
  RunResultBuilder(std::vector<LevelParams> levels, SloSpec slo);

  // `m` must be compute_request_metrics(t). Records of unknown levels are ignored.
  void add(const RequestTimeline& t, const RequestMetrics& m);

  // runs[i]: the runner's account of level i (levels without one are left out).
  RunResult finish(std::span<const LevelRunInfo> runs) const;

 private:
  struct Level {
    explicit Level(LevelParams p) : acc(std::move(p)) {}
    LevelAccumulator acc;
    std::optional<SloAccumulator> slo;  // only with objectives
    DriftAccumulator drift;             // measured, OK, with a token
    // Workload figures of measured OK requests (WorkloadLevelStats).
    std::vector<double> req_in, served_in, req_out, served_out, ttft_hit, ttft_miss;
    int64_t cache_reported = 0, cache_hits = 0, cached_sum = 0, cache_prompt_sum = 0;
    std::vector<int64_t> groups;
    struct Turn {
      int64_t requests = 0, ok = 0;
      std::vector<double> ttft, tpot, prompt_tokens;
    };
    std::vector<Turn> turns;  // index turn - 1
    int64_t tools_sent = 0, tool_seen = 0;
    std::vector<double> tool_call_ms;
  };
  std::shared_ptr<const SloSpec> slo_;
  std::vector<Level> levels_;
};

// Knee of a sweep on TTFT P95 against output throughput (needs 3+ levels of one kind).
KneeResult find_sweep_knee(std::span<const LevelSummary> levels);

// An SLO judged on saved request samples (report --slo on a saved run): the measured requests of
// `level` (-1: all) over window_s. `spec` must outlive the report.
SloReport evaluate_slo_on_samples(const SloSpec& spec, std::span<const RequestSample> requests,
                                  int level, double window_s);

// The same judged while the samples stream past (report --slo reads requests.jsonl once, in
// bounded memory): add() every sample, then finish() per level; the reports equal
// evaluate_slo_on_samples over the same samples.
class SampleSloJudge {
 public:
  explicit SampleSloJudge(const SloSpec& spec) : spec_(&spec) {}
  void add(const RequestSample& r);
  SloReport finish(int level, double window_s) const;

 private:
  const SloSpec* spec_;
  std::map<int, SloAccumulator> by_level_;
};

}  // namespace tokperf
