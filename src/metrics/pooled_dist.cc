#include "metrics/pooled_dist.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "metrics/slo.h"

namespace tokperf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kExponentBias = 1100;  // frexp exponents of finite doubles are >= -1073

// Bucket keys order as the values do: 0 for zero, positive keys for positive values (larger
// values, larger keys), their negatives for negative values.
int64_t bucket_key(double v, int64_t subs) {
  if (v == 0 || !std::isfinite(v)) return v == 0 ? 0 : (v > 0 ? INT64_MAX : INT64_MIN);
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // [0.5, 1)
  int64_t sub = static_cast<int64_t>((m - 0.5) * 2 * static_cast<double>(subs));
  sub = std::clamp<int64_t>(sub, 0, subs - 1);
  const int64_t k = (static_cast<int64_t>(e) + kExponentBias) * subs + sub + 1;
  return v > 0 ? k : -k;
}

double bucket_mid(int64_t key, int64_t subs) {
  if (key == 0) return 0;
  if (key == INT64_MAX) return std::numeric_limits<double>::infinity();
  if (key == INT64_MIN) return -std::numeric_limits<double>::infinity();
  const int64_t k = (key > 0 ? key : -key) - 1;
  const int e = static_cast<int>(k / subs - kExponentBias);
  const int64_t sub = k % subs;
  const double mid = std::ldexp(0.5 + (static_cast<double>(sub) + 0.5) / (2.0 * static_cast<double>(subs)), e);
  return key > 0 ? mid : -mid;
}

// numpy's _lerp (metrics/stats.cc), so exact-mode and histogram-mode interpolation agree.
double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

}  // namespace

void PooledDist::add(double v) {
  if (std::isnan(v)) return;
  ++n_;
  if (!spilled_) {
    exact_.push_back(v);
    if (exact_.size() > exact_limit_) spill();
    return;
  }
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
  const double d = v - mean_;
  mean_ += d / static_cast<double>(n_);
  m2_ += d * (v - mean_);
  add_bucket(v, 1);
}

void PooledDist::add(std::span<const double> values) {
  size_t i = 0;
  while (i < values.size() && !spilled_) add(values[i++]);
  if (i == values.size()) return;
  const std::span<const double> rest = values.subspan(i);
  for (double v : rest) {
    if (!std::isnan(v)) add_bucket(v, 1);
  }
  const Moments b = fold(rest);
  merge_moments(b);
  n_ += b.n;
}

PooledDist::Moments PooledDist::fold(std::span<const double> values) {
  // Two passes (the sum, then squared deviations from the mean): no division per value, and no
  // less accurate than a running update.
  Moments m;
  double sum = 0;
  for (double v : values) {
    if (std::isnan(v)) continue;
    if (m.n == 0) {
      m.min = m.max = v;
    } else {
      m.min = std::min(m.min, v);
      m.max = std::max(m.max, v);
    }
    ++m.n;
    sum += v;
  }
  if (m.n == 0) return m;
  m.mean = sum / static_cast<double>(m.n);
  for (double v : values) {
    if (!std::isnan(v)) m.m2 += (v - m.mean) * (v - m.mean);
  }
  return m;
}

PooledDist::Moments PooledDist::moments() const {
  if (!spilled_) return fold(exact_);
  return Moments{n_, mean_, m2_, min_, max_};
}

void PooledDist::merge_moments(const Moments& o) {
  // The running moments hold n_ values (n_ not yet counting o's).
  if (o.n == 0) return;
  if (n_ == 0) {
    min_ = o.min;
    max_ = o.max;
  } else {
    min_ = std::min(min_, o.min);
    max_ = std::max(max_, o.max);
  }
  const double na = static_cast<double>(n_), nb = static_cast<double>(o.n);
  const double d = o.mean - mean_;
  mean_ += d * nb / (na + nb);
  m2_ += o.m2 + d * d * na * nb / (na + nb);
}

void PooledDist::add_bucket(double v, int64_t count) {
  if (!(v > 0) || !std::isfinite(v)) {
    others_[bucket_key(v, sub_buckets_)] += count;
    return;
  }
  int e = 0;
  int64_t sub = 0;
  const auto bits = std::bit_cast<uint64_t>(v);
  const auto biased = static_cast<int>(bits >> 52);  // v > 0: no sign bit
  if (biased != 0 && sub_bits_ >= 0) {
    // A normal double: frexp's exponent is the biased one less 1022, and (m - 0.5) * 2 is the
    // stored fraction, so the sub-bucket (sub_buckets_ a power of two) is the fraction's top bits:
    // the same bucket as the frexp arithmetic below, without the library call.
    e = biased - 1022;
    sub = static_cast<int64_t>((bits & ((uint64_t{1} << 52) - 1)) >> (52 - sub_bits_));
  } else {
    const double m = std::frexp(v, &e);
    sub = static_cast<int64_t>((m - 0.5) * 2 * static_cast<double>(sub_buckets_));
    sub = std::clamp<int64_t>(sub, 0, sub_buckets_ - 1);
  }
  // Gaps cluster in a few octaves: the last one used is looked up without the map.
  if (e != last_.octave || last_.chunk == nullptr) {
    std::vector<int64_t>& chunk = octaves_[e];
    if (chunk.empty()) chunk.resize(static_cast<size_t>(sub_buckets_), 0);
    last_.octave = e;
    last_.chunk = chunk.data();
  }
  last_.chunk[sub] += count;
}

template <typename F>
void PooledDist::for_each_bucket(F&& f) const {
  for (const auto& [key, c] : others_) {
    if (key <= 0) f(bucket_mid(key, sub_buckets_), c);
  }
  const auto subs = static_cast<double>(sub_buckets_);
  for (const auto& [e, chunk] : octaves_) {
    for (size_t sub = 0; sub < chunk.size(); ++sub) {
      if (chunk[sub] != 0) f(std::ldexp(0.5 + (static_cast<double>(sub) + 0.5) / (2.0 * subs), e), chunk[sub]);
    }
  }
  for (const auto& [key, c] : others_) {
    if (key > 0) f(bucket_mid(key, sub_buckets_), c);
  }
}

void PooledDist::spill() {
  const Moments m = fold(exact_);
  mean_ = m.mean;
  m2_ = m.m2;
  min_ = m.min;
  max_ = m.max;
  for (double v : exact_) add_bucket(v, 1);
  std::vector<double>().swap(exact_);
  spilled_ = true;
}

void PooledDist::merge(const PooledDist& o) {
  if (o.n_ == 0) return;
  if (!spilled_ && !o.spilled_ && exact_.size() + o.exact_.size() <= exact_limit_) {
    exact_.insert(exact_.end(), o.exact_.begin(), o.exact_.end());
    n_ += o.n_;
    return;
  }
  if (!spilled_) spill();
  merge_moments(o.moments());
  n_ += o.n_;
  for (double v : o.exact_) add_bucket(v, 1);
  o.for_each_bucket([this](double mid, int64_t c) { add_bucket(mid, c); });
}

double PooledDist::value_at_rank(int64_t k) const {
  if (k <= 0) return min_;
  if (k >= n_ - 1) return max_;
  int64_t seen = 0;
  double found = max_;
  bool done = false;
  for_each_bucket([&](double mid, int64_t c) {
    if (done) return;
    seen += c;
    if (k < seen) {
      found = std::clamp(mid, min_, max_);
      done = true;
    }
  });
  return found;
}

double PooledDist::percentile(double q) const {
  if (n_ == 0) return kNaN;
  if (!spilled_) return tokperf::percentile(exact_, q);
  q = std::clamp(q, 0.0, 100.0);
  const double virtual_index = (q / 100.0) * static_cast<double>(n_ - 1);
  const double lo_f = std::floor(virtual_index);
  const auto lo = std::min(static_cast<int64_t>(lo_f), n_ - 1);
  const auto hi = std::min(lo + 1, n_ - 1);
  return lerp(value_at_rank(lo), value_at_rank(hi), virtual_index - lo_f);
}

double PooledDist::mean() const {
  if (n_ == 0) return kNaN;
  if (spilled_) return mean_;
  double sum = 0;
  for (double v : exact_) sum += v;
  return sum / static_cast<double>(exact_.size());
}

DistStats PooledDist::stats() const {
  if (!spilled_) return compute_dist_stats(exact_);
  DistStats s;
  s.count = n_;
  if (n_ == 0) return s;
  s.mean = mean_;
  s.std = std::sqrt(m2_ / static_cast<double>(n_));
  s.min = min_;
  s.max = max_;
  s.p50 = percentile(50);
  s.p90 = percentile(90);
  s.p95 = percentile(95);
  s.p99 = percentile(99);
  s.p999 = percentile(99.9);
  for (size_t i = 0; i < std::size(kReportedPercentiles); ++i) {
    const PercentileInterval iv = percentile_rank_interval(n_, kReportedPercentiles[i], 0.95);
    if (iv.lower_rank >= 1) s.ci95[i].lower = value_at_rank(iv.lower_rank - 1);
    if (iv.upper_rank <= n_) s.ci95[i].upper = value_at_rank(iv.upper_rank - 1);
  }
  return s;
}

}  // namespace tokperf
