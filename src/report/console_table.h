// The table a person reads at a glance after a run: one row per load level with the latency
// percentiles that matter (TTFT, TPOT, ITL, E2E), throughput and request counts; then a short error
// breakdown and client-health warnings. Plain text, no colour, so it can be diffed and pasted.
#pragma once

#include <string>
#include <vector>

#include "metrics/aggregate.h"
#include "metrics/client_health.h"

namespace tokperf {

// Columns: concurrency (or "rate req/s" for open-loop levels, or "level" with the label when a
// level has neither), TTFT P50/P95, TPOT P50/P95, ITL P50/P99, E2E P50/P95, out tok/s, ok, failed.
// Durations via format_ms (value carries its unit, "-" when undefined); columns right-aligned,
// separated by two spaces; every line ends in '\n'.
std::string render_level_table(const std::vector<LevelSummary>& levels);

// "errors: 3 rate_limited (429), 1 incomplete" per level that had failures (prefixed with the
// level's load when there are several levels), then one indented line per kind with the first
// message (cut to 160 bytes). Empty string when nothing failed.
std::string render_error_breakdown(const std::vector<LevelSummary>& levels);

// "warning: <text>" per client-health warning; empty when none.
std::string render_health_warnings(const ClientHealth& health);

}  // namespace tokperf
