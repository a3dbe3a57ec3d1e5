// The HTML comparison page of `tokperf compare A B ... --html FILE`: self-contained and offline
// like report.html (same inlined chart library, style and script; report/html_page.h). Contents:
// the verdict (which run users would feel faster and why), the CI gate's outcome, the side-by-side
// table with deltas against A (worse for users in red, better in green), each run's diagnosis in
// one line per finding, and the TTFT, TTFO, TPOT, ITL and E2E distributions of the compared level
// of every run overlaid as CDFs.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "report/html_report.h"

namespace tokperf {

struct ComparePage {
  std::span<const SavedRun> runs;       // A first
  std::span<const RunFigures> figures;  // figures[i] is runs[i] at the compared level
  Verdict verdict;
  std::string gate;                        // the --fail-if text; "" when no gate was given
  std::vector<std::string> gate_failures;  // "condition: detail" per failure
};

// REQUIRES: runs.size() == figures.size() >= 2.
std::string render_compare_html(const ComparePage& page, const ReportOptions& options = {});

// The charts' data: {"cdf": {metric: {"x", "series": [{"label": run name, "y"}]}}, ...} in the
// shape report.js draws, with no levels, time series or timeline.
nlohmann::json compare_chart_data(const ComparePage& page, const ReportOptions& options);

}  // namespace tokperf
