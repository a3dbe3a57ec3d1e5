// Fuzz target for `--slo` parsing (parse_slo in metrics/slo.h). Invariants: on success every
// objective has a percentile in (0, 100] (or is a mean), a threshold >= 0 and keeps its text; the
// objectives' texts joined with commas parse again to the same objectives; an error always says
// something. See docs/FUZZING.md.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "metrics/slo.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "slo_parse_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tokperf::parse_slo(text);
  if (!r.ok()) {
    check(!r.error().empty(), "empty error message");
    return 0;
  }
  std::string joined;
  for (const auto& o : r->objectives) {
    check(o.mean || (o.percentile > 0 && o.percentile <= 100), "percentile out of (0, 100]");
    check(std::isfinite(o.threshold_ms) && o.threshold_ms >= 0, "threshold not finite or negative");
    check(!o.text.empty(), "objective without text");
    check(tokperf::slo_metric_name(o.metric) != nullptr, "metric without a name");
    if (!joined.empty()) joined += ',';
    joined += o.text;
  }
  auto again = tokperf::parse_slo(joined);
  check(again.ok(), "the objectives' own texts do not parse");
  check(again->objectives.size() == r->objectives.size(), "reparse changed the count");
  for (size_t i = 0; i < r->objectives.size(); ++i) {
    const auto& a = r->objectives[i];
    const auto& b = again->objectives[i];
    check(a.metric == b.metric && a.mean == b.mean && a.percentile == b.percentile &&
              a.inclusive == b.inclusive && a.threshold_ms == b.threshold_ms,
          "reparse changed an objective");
  }
  return 0;
}
