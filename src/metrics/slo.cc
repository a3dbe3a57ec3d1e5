#include "metrics/slo.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "core/units.h"
#include "metrics/stats.h"

namespace tokperf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr SloMetric kAllMetrics[] = {SloMetric::kTtft,
                                     SloMetric::kTtfo,
                                     SloMetric::kTpot,
                                     SloMetric::kItl,
                                     SloMetric::kE2e,
                                     SloMetric::kTtftFromIntended,
                                     SloMetric::kE2eFromIntended};

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  size_t n = 0;
  for (double x : v) {
    if (std::isnan(x)) continue;
    sum += x;
    ++n;
  }
  return n ? sum / static_cast<double>(n) : kNaN;
}

// A metric that needs two tokens (TPOT, ITL) is undefined for a one-token answer; such a request
// was not slow at it, so it does not fail the objective. Undefined TTFT/E2E means no token ever
// came.
bool vacuous_when_undefined(SloMetric m) { return m == SloMetric::kTpot || m == SloMetric::kItl; }

}  // namespace

const char* slo_metric_name(SloMetric m) {
  switch (m) {
    case SloMetric::kTtft:
      return "ttft";
    case SloMetric::kTtfo:
      return "ttfo";
    case SloMetric::kTpot:
      return "tpot";
    case SloMetric::kItl:
      return "itl";
    case SloMetric::kE2e:
      return "e2e";
    case SloMetric::kTtftFromIntended:
      return "ttft_from_intended";
    case SloMetric::kE2eFromIntended:
      return "e2e_from_intended";
  }
  return "?";
}

Result<SloSpec> parse_slo(std::string_view text) {
  SloSpec spec;
  size_t pos = 0;
  for (;;) {
    size_t comma = text.find(',', pos);
    std::string_view item =
        trim(text.substr(pos, comma == std::string_view::npos ? comma : comma - pos));
    auto bad = [&](std::string_view what) {
      return Error{
          fmt::format("--slo '{}': objective '{}' {}; expected METRIC:STAT<=DURATION "
                      "with METRIC one of ttft, ttfo, tpot, itl, e2e, ttft_from_intended, "
                      "e2e_from_intended, STAT pNN, pNN.N or mean, and <= or < (e.g. "
                      "ttft:p95<=2s,tpot:p99<100ms)",
                      text, item, what)};
    };
    SloObjective o;
    o.text = std::string(item);
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) return bad("has no ':'");
    std::string_view name = item.substr(0, colon);
    bool known = false;
    for (SloMetric m : kAllMetrics) {
      if (name == slo_metric_name(m)) {
        o.metric = m;
        known = true;
      }
    }
    if (!known) return bad(fmt::format("has an unknown metric '{}'", name));
    std::string_view rest = item.substr(colon + 1);
    size_t op = rest.find('<');
    if (op == std::string_view::npos) return bad("has no comparison");
    std::string_view stat = rest.substr(0, op);
    o.inclusive = op + 1 < rest.size() && rest[op + 1] == '=';
    std::string_view threshold = rest.substr(op + (o.inclusive ? 2 : 1));
    if (stat == "mean") {
      o.mean = true;
    } else {
      bool ok = stat.size() >= 2 && stat[0] == 'p';
      std::string digits(ok ? stat.substr(1) : std::string_view{});
      ok = ok && digits.find_first_not_of("0123456789.") == std::string::npos &&
           std::count(digits.begin(), digits.end(), '.') <= 1 && digits.front() != '.' &&
           digits.back() != '.';
      double p = ok ? std::strtod(digits.c_str(), nullptr) : 0;
      if (!ok || !(p > 0 && p <= 100)) {
        return bad(
            fmt::format("has statistic '{}'; a percentile is p followed by a number in "
                        "(0, 100]",
                        stat));
      }
      o.percentile = p;
    }
    auto ns = parse_duration_ns(threshold);
    if (!ns)
      return bad(fmt::format("has threshold '{}' which is not a duration (500ms, 2s)", threshold));
    if (*ns <= 0) return bad("has a zero threshold");
    o.threshold_ms = static_cast<double>(*ns) / 1e6;
    spec.objectives.push_back(std::move(o));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return spec;
}

double request_value_ms(const RequestMetrics& m, const SloObjective& o) {
  switch (o.metric) {
    case SloMetric::kTtft:
      return m.ttft_ms;
    case SloMetric::kTtfo:
      return m.ttfo_ms;
    case SloMetric::kTpot:
      return m.tpot_ms;
    case SloMetric::kE2e:
      return m.e2e_ms;
    case SloMetric::kTtftFromIntended:
      return m.ttft_from_intended_ms;
    case SloMetric::kE2eFromIntended:
      return m.e2e_from_intended_ms;
    case SloMetric::kItl:
      return o.mean ? mean_of(m.itl_ms) : percentile(m.itl_ms, o.percentile);
  }
  return kNaN;
}

std::vector<double> objective_samples(const SloObjective& o,
                                      std::span<const RequestMetrics> requests,
                                      std::span<const uint8_t> ok) {
  std::vector<double> values;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!ok.empty() && ok[i] == 0) continue;
    if (o.metric == SloMetric::kItl) {
      values.insert(values.end(), requests[i].itl_ms.begin(), requests[i].itl_ms.end());
    } else {
      values.push_back(request_value_ms(requests[i], o));
    }
  }
  std::erase_if(values, [](double v) { return std::isnan(v); });
  return values;
}

SloAccumulator::SloAccumulator(const SloSpec& spec) : spec_(&spec) {
  for (const SloObjective& o : spec.objectives) {
    // Per-request values stay exact (one a request); pooled ITL gaps are bounded.
    samples_.emplace_back(o.metric == SloMetric::kItl ? PooledDist::kDefaultExactLimit
                                                      : std::numeric_limits<size_t>::max());
  }
}

void SloAccumulator::add(const RequestMetrics& m, bool ok) {
  ++requests_;
  if (!ok) return;
  bool good = true;
  for (size_t k = 0; k < spec_->objectives.size(); ++k) {
    const SloObjective& o = spec_->objectives[k];
    const double v = request_value_ms(m, o);
    if (std::isnan(v) ? !vacuous_when_undefined(o.metric) : !o.met_by(v)) good = false;
    if (o.metric == SloMetric::kItl) {
      samples_[k].add(m.itl_ms);
    } else {
      samples_[k].add(v);
    }
  }
  good_ += good;
}

SloReport SloAccumulator::finish(double window_s) const {
  SloReport r;
  r.requests = requests_;
  r.good = good_;
  r.attainment_pct = r.requests ? 100.0 * static_cast<double>(r.good) / r.requests : 0;
  r.goodput_rps = window_s > 0 ? static_cast<double>(r.good) / window_s : 0;
  r.all_pass = true;
  for (size_t k = 0; k < spec_->objectives.size(); ++k) {
    const SloObjective& o = spec_->objectives[k];
    const PooledDist& d = samples_[k];
    ObjectiveResult res;
    res.objective = &o;
    res.samples = static_cast<size_t>(d.count());
    res.measured_ms = o.mean ? d.mean() : d.percentile(o.percentile);
    res.pass = res.samples > 0 && o.met_by(res.measured_ms);
    r.all_pass = r.all_pass && res.pass;
    r.objectives.push_back(res);
  }
  return r;
}

SloReport evaluate_slo(const SloSpec& spec, std::span<const RequestMetrics> requests,
                       std::span<const uint8_t> ok, double window_s) {
  SloAccumulator acc(spec);
  for (size_t i = 0; i < requests.size(); ++i) acc.add(requests[i], ok.empty() || ok[i] != 0);
  return acc.finish(window_s);
}

PercentileInterval percentile_rank_interval(int64_t n, double p, double confidence) {
  PercentileInterval iv;
  iv.upper_rank = n + 1;
  iv.lower_ms = -kInf;
  iv.upper_ms = kInf;
  if (n <= 0) return iv;
  const double q = std::clamp(p / 100.0, 0.0, 1.0);
  const double tail = (1.0 - confidence) / 2.0;
  // cdf over [lo, hi] of B ~ Binomial(n, q), the number of samples below the true percentile. The
  // mass lies within a few standard deviations of the mode: the window spans 40 of them (plus a
  // margin for small n), outside which the mass is below 1e-300, so F is exact to double precision
  // while the cost is O(sqrt(n)), not O(n) (a run's pooled ITL can hold millions of gaps). The pmf
  // is evaluated with lgamma once at the mode and by the ratio pmf(k+1)/pmf(k) elsewhere.
  int64_t lo = 0, hi = n;
  std::vector<double> pmf;
  if (q <= 0 || q >= 1) {
    pmf.assign(static_cast<size_t>(n) + 1, 0.0);
    pmf[q <= 0 ? 0 : static_cast<size_t>(n)] = 1.0;
  } else {
    const double sd = std::sqrt(static_cast<double>(n) * q * (1 - q));
    const int64_t mode = std::clamp<int64_t>(static_cast<int64_t>((n + 1) * q), 0, n);
    const int64_t half = static_cast<int64_t>(std::ceil(20 * sd)) + 50;
    lo = std::max<int64_t>(0, mode - half);
    hi = std::min<int64_t>(n, mode + half);
    pmf.assign(static_cast<size_t>(hi - lo) + 1, 0.0);
    const double lq = std::log(q), l1q = std::log1p(-q), r = q / (1 - q);
    const double at_mode = std::exp(std::lgamma(n + 1.0) - std::lgamma(mode + 1.0) -
                                    std::lgamma(n - mode + 1.0) + mode * lq + (n - mode) * l1q);
    pmf[static_cast<size_t>(mode - lo)] = at_mode;
    for (int64_t k = mode; k < hi; ++k) {  // pmf(k+1) = pmf(k) (n-k)/(k+1) q/(1-q)
      pmf[static_cast<size_t>(k + 1 - lo)] =
          pmf[static_cast<size_t>(k - lo)] * static_cast<double>(n - k) / (k + 1.0) * r;
    }
    for (int64_t k = mode; k > lo; --k) {  // pmf(k-1) = pmf(k) k/(n-k+1) (1-q)/q
      pmf[static_cast<size_t>(k - 1 - lo)] =
          pmf[static_cast<size_t>(k - lo)] * static_cast<double>(k) / (n - k + 1.0) / r;
    }
  }
  std::vector<double> cdf(pmf.size());
  double acc = 0;
  for (size_t i = 0; i < pmf.size(); ++i) cdf[i] = std::min(acc += pmf[i], 1.0);
  auto F = [&](int64_t k) {
    if (k < lo) return 0.0;
    if (k >= n) return 1.0;
    if (k > hi) return 1.0;
    return cdf[static_cast<size_t>(k - lo)];
  };
  // x_(l) <= true percentile  <=>  B >= l, so P(miss below) = F(l - 1): take the largest l with
  // F(l - 1) <= tail. Symmetrically x_(u) >= it <=> B <= u - 1: the smallest u with F(u-1) >=
  // 1-tail. F is monotone, so both are binary searches.
  {
    int64_t a = 1, b = n, best = 0;  // largest l in [1, n] with F(l-1) <= tail
    while (a <= b) {
      const int64_t m = a + (b - a) / 2;
      if (F(m - 1) <= tail) {
        best = m;
        a = m + 1;
      } else {
        b = m - 1;
      }
    }
    iv.lower_rank = best;
  }
  {
    int64_t a = 1, b = n, best = n + 1;  // smallest u in [1, n] with F(u-1) >= 1 - tail
    while (a <= b) {
      const int64_t m = a + (b - a) / 2;
      if (F(m - 1) >= 1 - tail) {
        best = m;
        b = m - 1;
      } else {
        a = m + 1;
      }
    }
    iv.upper_rank = best;
  }
  iv.coverage = F(iv.upper_rank - 1) - F(iv.lower_rank - 1);
  return iv;
}

PercentileInterval percentile_interval(std::vector<double> values, double p, double confidence) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  std::sort(values.begin(), values.end());
  auto n = static_cast<int64_t>(values.size());
  PercentileInterval iv = percentile_rank_interval(n, p, confidence);
  if (iv.lower_rank >= 1) iv.lower_ms = values[static_cast<size_t>(iv.lower_rank - 1)];
  if (iv.upper_rank <= n) iv.upper_ms = values[static_cast<size_t>(iv.upper_rank - 1)];
  return iv;
}

}  // namespace tokperf
