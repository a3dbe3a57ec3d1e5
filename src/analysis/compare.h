// Comparing runs the way users would feel them: a side-by-side table with deltas against the first
// (baseline) run, and a verdict on which one would feel faster and why. Users feel the wait for the
// first visible text and any wait for text once reading began, not total time: the source
// material's story of model A (8 s total, first token at 0.8 s) against model B (6 s total, first
// token at 3.5 s) must come out "A". Rules: docs/REPORTS.md ("Compare").
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "analysis/perceived_speed.h"
#include "analysis/request_sample.h"
#include "core/result.h"
#include "metrics/aggregate.h"

namespace tokperf {

// One run at the level being compared.
struct RunFigures {
  std::string name;
  LevelSummary level;
  PerceivedSummary perceived;
  int64_t sent = 0;    // all levels
  int64_t failed = 0;  // all levels
};

// Picks the level labelled `level_label` ("" : the last, heaviest level). Fails when no level has
// that label (the message lists the labels there are) or the run has no level.
Result<RunFigures> run_figures(const std::string& name, std::span<const LevelSummary> levels,
                               std::span<const RequestSample> requests,
                               const std::string& level_label, const PerceivedOptions& options);
// The same, with the records fed one at a time: `feed` is called once, after the level is picked,
// and hands every record of the run to the accumulator (e.g. streamed from requests.jsonl).
Result<RunFigures> run_figures(const std::string& name, std::span<const LevelSummary> levels,
                               const std::function<void(PerceivedAccumulator&)>& feed,
                               const std::string& level_label, const PerceivedOptions& options);

// What a user waits for: first visible text (TTFO, else TTFT) plus the reading stall, at a
// percentile (50 or 95).
double perceived_wait_ms(const RunFigures& r, int percentile);

struct Verdict {
  int winner = -1;  // index into the runs; -1: no difference users would notice
  std::string explanation;
};

// REQUIRES: runs.size() >= 2.
Verdict perceived_verdict(std::span<const RunFigures> runs, const PerceivedOptions& options);

// One figure of the side-by-side table: its value in each run and its change against the first.
struct CompareRow {
  std::string figure;               // "TTFT P95", "first 20 chars P50", ...
  std::vector<std::string> values;  // one per run
  std::vector<std::string> deltas;  // one per run after the first: "+120 ms (+15%)"
  std::vector<int> worse;           // per delta: 1 worse for users, -1 better, 0 same or unknown
};
std::vector<CompareRow> compare_rows(std::span<const RunFigures> runs, int first_chars);

// Plain-text table: one row per figure, one column per run, then "vs <baseline>" delta columns.
std::string render_compare_table(std::span<const RunFigures> runs, int first_chars);

}  // namespace tokperf
