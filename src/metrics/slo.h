// Service-level objectives: parsing "--slo 'ttft:p95<=2s,tpot:p95<=100ms'", evaluating them on a
// set of requests (goodput, attainment, pass/fail of each percentile objective), and
// distribution-free confidence intervals for percentiles. Definitions: docs/LOAD.md ("SLOs and
// goodput").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "metrics/pooled_dist.h"
#include "metrics/request_record.h"

namespace tokperf {

enum class SloMetric : uint8_t {
  kTtft,
  kTtfo,
  kTpot,
  kItl,
  kE2e,
  kTtftFromIntended,
  kE2eFromIntended
};
const char* slo_metric_name(SloMetric m);  // "ttft", ..., "ttft_from_intended"

struct SloObjective {
  SloMetric metric = SloMetric::kTtft;
  bool mean = false;       // "mean" instead of a percentile
  double percentile = 50;  // in (0, 100]; unused when mean
  bool inclusive = true;   // "<=" (true) or "<"
  double threshold_ms = 0;
  std::string text;  // as written, e.g. "ttft:p95<=2s"
  bool met_by(double value_ms) const {
    return inclusive ? value_ms <= threshold_ms : value_ms < threshold_ms;
  }
};

struct SloSpec {
  std::vector<SloObjective> objectives;
  bool empty() const { return objectives.empty(); }
};

// Comma-separated objectives METRIC:STAT OP DURATION, STAT = pNN | pNN.N | mean, OP = <= | <,
// DURATION as parse_duration_ns accepts. Spaces around items are ignored.
Result<SloSpec> parse_slo(std::string_view text);

// The value a single request contributes for an objective: its own metric; for ITL, the request's
// own gaps at the objective's percentile (or their mean). NaN when undefined.
double request_value_ms(const RequestMetrics& m, const SloObjective& o);

// The samples an objective is measured over: each OK request's value (ITL: all its gaps), NaN
// dropped.
std::vector<double> objective_samples(const SloObjective& o,
                                      std::span<const RequestMetrics> requests,
                                      std::span<const uint8_t> ok);

struct ObjectiveResult {
  const SloObjective* objective = nullptr;  // points into the SloSpec passed to evaluate_slo
  double measured_ms =
      0;  // percentile/mean over OK requests (ITL: over all their gaps); NaN if none
  size_t samples = 0;
  bool pass = false;  // false also when there were no samples
};

struct SloReport {
  size_t requests = 0;        // all, failed included
  size_t good = 0;            // OK and every per-request threshold met
  double attainment_pct = 0;  // good / requests * 100
  double goodput_rps = 0;     // good / window_s
  bool all_pass = false;
  std::vector<ObjectiveResult> objectives;
};

// Evaluates spec over requests finished in a window of window_s seconds. ok[i] says whether request
// i succeeded (empty: all did); failed requests count in `requests` and are never good. REQUIRES:
// ok.empty() || ok.size() == requests.size(); window_s > 0. `spec` must outlive the report.
SloReport evaluate_slo(const SloSpec& spec, std::span<const RequestMetrics> requests,
                       std::span<const uint8_t> ok, double window_s);

// evaluate_slo fed one request at a time in bounded memory: per objective the requests' values
// (8 bytes a request) or, for ITL, their pooled gaps (metrics/pooled_dist.h: exact up to its bound,
// then within PooledDist::kMaxRelativeError). `spec` must outlive the accumulator and its reports.
class SloAccumulator {
 public:
  explicit SloAccumulator(const SloSpec& spec);
  void add(const RequestMetrics& m, bool ok);
  SloReport finish(double window_s) const;

 private:
  const SloSpec* spec_;
  size_t requests_ = 0, good_ = 0;
  std::vector<PooledDist> samples_;  // per objective
};

// A distribution-free confidence interval for the p-th percentile from n samples (order
// statistics): [x_(lower_rank), x_(upper_rank)] (1-based ranks of the sorted sample) covers the
// true percentile with probability >= confidence, from Binomial(n, p/100) tail sums. A side is
// unbounded (rank 0 or n+1) when n is too small to bound it.
struct PercentileInterval {
  int64_t lower_rank = 0;  // 0: no lower bound
  int64_t upper_rank = 0;  // n + 1: no upper bound
  double coverage = 0;     // the exact coverage of the chosen ranks
  double lower_ms = 0;     // -inf when unbounded
  double upper_ms = 0;     // +inf when unbounded
};
PercentileInterval percentile_rank_interval(int64_t n, double p, double confidence = 0.95);
// The same, with the sample's values filled in (NaN ignored).
PercentileInterval percentile_interval(std::vector<double> values, double p,
                                       double confidence = 0.95);

}  // namespace tokperf
