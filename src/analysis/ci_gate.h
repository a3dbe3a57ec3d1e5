// The CI gate of `tokperf compare --fail-if`: conditions under which a candidate run fails against
// the baseline, e.g. 'ttft.p95>+10%,tpot.p95>+10%,errors>0'. Grammar (docs/REPORTS.md, "CI gate"):
//   CONDITION = METRIC[.STAT] OP VALUE, comma-separated; a run fails when any condition holds.
//   METRIC    = ttft | ttfo | tpot | itl | e2e | queue | stall | first_chars (durations; STAT one
//               of p50 p90 p95 p99 mean max min, default p95) | errors (count) | error_rate (%)
//             | tok_s (output tokens/s) | rps
//   OP        = > | >= | < | <=
//   VALUE     = +N% / -N%: change relative to the baseline; +D / -D (D a duration such as 50ms or
//               0.2s, or a plain number for counts/rates): absolute change; unsigned: the
//               candidate's own value (durations accept units, plain numbers are ms).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/compare.h"
#include "core/result.h"

namespace tokperf {

struct GateCondition {
  enum class Op : uint8_t { kGt, kGe, kLt, kLe };
  enum class Mode : uint8_t { kValue, kDelta, kDeltaPct };
  std::string metric;  // as written, lower case
  std::string stat;    // "" for count metrics
  Op op = Op::kGt;
  Mode mode = Mode::kValue;
  double threshold = 0;  // ms for durations, % for kDeltaPct, else the metric's unit
  std::string text;      // as written
};

Result<std::vector<GateCondition>> parse_gate(std::string_view text);

// The figure a condition reads from one run; NaN when undefined.
double gate_metric_value(const GateCondition& c, const RunFigures& r);

struct GateFailure {
  std::string condition;  // as written
  std::string detail;     // e.g. "ttft.p95 812 ms vs 700 ms (+16.0%)"
};

// Conditions that hold for `candidate` against `baseline`. A condition whose figure is undefined
// (NaN) counts as failed, so a run that measured nothing cannot pass the gate.
std::vector<GateFailure> evaluate_gate(const std::vector<GateCondition>& conditions,
                                       const RunFigures& baseline, const RunFigures& candidate);

}  // namespace tokperf
