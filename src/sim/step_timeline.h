// The server's engine steps as a client sees them. One engine step gives every running stream a
// token, so the streams' arrivals come in clusters: grouping every stream's events into steps
// (arrivals closer than a fifth of the median gap within a stream belong to one) gives how long
// the server's decode-only steps last and how far apart one step's tokens reach the client (a
// serving front end that hands the streams their tokens one after another spreads them by its
// cost per token). `sim calibrate --steps` compares these for the measured and the replayed
// requests with this one definition; scripts/stream_spacing.py is the same reading for vLLM's
// benchmark files (docs/SIMULATOR.md, "Thirtieth change").
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace tokperf::sim {

struct StepFigures {
  // Median over the steps that carry at least 90% of the streams a step usually carries (the
  // 90th percentile of step sizes: the level's streams, or the server's slots where those are
  // fewer) of (last - first arrival) / (events - 1). NaN without such a step of 2 streams or more.
  double token_spacing_us = NAN;
  // Median time from one such step to the next when neither carries a stream's first event (no
  // prompt finished in them). NaN without two such steps in a row.
  double decode_step_ms = NAN;
  int64_t steps = 0, full_steps = 0, decode_steps = 0;
};

// `streams`: each stream's event arrival times (ns, one clock for all, ascending); its first is
// its first token.
StepFigures step_figures(const std::vector<std::vector<int64_t>>& streams);

}  // namespace tokperf::sim
