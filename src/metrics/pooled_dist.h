// A distribution of very many values (pooled inter-token gaps: hundreds per request, hundreds of
// millions per long run) held in bounded memory: exactly, as the values themselves, until it holds
// `exact_limit` of them; then as a log-linear histogram whose buckets are 1/2048 of an octave wide,
// so a percentile read from it is within kMaxRelativeError of the exact one (docs/metrics.md,
// "Bounded memory"). count, mean, std, min and max stay exact (mean and std to floating-point
// rounding) in both modes; percentiles are numpy-exact while exact() holds.
//
// Why not always a histogram: the golden tests pin numpy's percentiles to the last bit, and almost
// every run (thousands of requests) stays under the limit, so it stays exact; only a run that would
// otherwise hold gigabytes of gaps trades 0.025% of a percentile for bounded memory.
// Not thread-safe; merge() combines two (a shard's or a loop's) exactly as if one had seen both.
#pragma once

#include <cstddef>
#include <bit>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "metrics/stats.h"

namespace tokperf {

class PooledDist {
 public:
  // Sub-buckets per octave of the histogram mode; a bucket's midpoint is within
  // 1 / (2 * sub_buckets) of any value in it, relatively.
  static constexpr int kSubBuckets = 2048;
  static constexpr double kMaxRelativeError = 1.0 / (2.0 * kSubBuckets);  // 0.024%
  // 2 M values = 16 MB: ~8,000 requests of 256 tokens stay exact.
  static constexpr size_t kDefaultExactLimit = size_t{1} << 21;

  // `sub_buckets` (a power of two up to 2^20) trades precision for memory once spilled; merge()
  // needs equal settings.
  explicit PooledDist(size_t exact_limit = kDefaultExactLimit, int sub_buckets = kSubBuckets)
      : exact_limit_(exact_limit),
        sub_buckets_(sub_buckets),
        sub_bits_(std::has_single_bit(static_cast<unsigned>(sub_buckets))
                      ? std::countr_zero(static_cast<unsigned>(sub_buckets))
                      : -1) {}
  // The largest relative error of a percentile once spilled.
  double max_relative_error() const { return 1.0 / (2.0 * sub_buckets_); }

  void add(double v);  // NaN is ignored
  // The same values as add() one by one would hold; once spilled, their moments are folded in as
  // one batch (one division for the batch, not one per value), so mean and std can differ from
  // the one-by-one fold in the last bits.
  void add(std::span<const double> values);
  void merge(const PooledDist& other);

  int64_t count() const { return n_; }
  bool exact() const { return !spilled_; }
  // Statistics as compute_dist_stats gives them (identical while exact()); confidence intervals
  // are the order statistics at the same ranks.
  DistStats stats() const;
  // The q-th percentile (numpy's linear rule); NaN when empty.
  double percentile(double q) const;
  // The mean (summed in insertion order while exact); NaN when empty.
  double mean() const;

 private:
  // n, mean, sum of squared deviations, min, max: kept running once spilled; while exact, computed
  // from exact_ when needed (at the spill, or when merged into a spilled one).
  struct Moments {
    int64_t n = 0;
    double mean = 0, m2 = 0, min = 0, max = 0;
  };
  Moments moments() const;
  static Moments fold(std::span<const double> values);  // two-pass; NaN skipped
  void merge_moments(const Moments& o);  // Chan et al.'s pairwise update into the running ones
  void spill();
  void add_bucket(double v, int64_t count);
  template <typename F>
  void for_each_bucket(F&& f) const;  // f(midpoint, count) in ascending order
  // The value of the k-th smallest (0-based) sample: exact, or its bucket's midpoint clamped to
  // [min, max]. REQUIRES: spilled_, k < n_.
  double value_at_rank(int64_t k) const;

  size_t exact_limit_;
  int sub_buckets_;
  int sub_bits_;  // log2(sub_buckets_), -1 when it is not a power of two
  bool spilled_ = false;
  std::vector<double> exact_;
  // Histogram: positive finite values in per-octave chunks of sub_buckets_ counts (by frexp
  // exponent); zero, negative and infinite values by an ordered key (few in practice).
  std::map<int, std::vector<int64_t>> octaves_;
  std::map<int64_t, int64_t> others_;
  int64_t n_ = 0;
  // Once spilled: Welford's running mean and sum of squared deviations, min and max (while exact
  // they are not kept: the values are).
  double mean_ = 0, m2_ = 0;
  double min_ = 0, max_ = 0;
  // The octave add_bucket used last and its counts (map nodes never move). A copy or a move
  // starts it empty, and a move empties the source's, so it never points into another's map.
  struct OctaveCache {
    int octave = 0;
    int64_t* chunk = nullptr;
    OctaveCache() = default;
    OctaveCache(const OctaveCache&) {}
    OctaveCache(OctaveCache&& o) noexcept { o.chunk = nullptr; }
    OctaveCache& operator=(const OctaveCache&) {
      chunk = nullptr;
      return *this;
    }
    OctaveCache& operator=(OctaveCache&& o) noexcept {
      chunk = o.chunk = nullptr;
      return *this;
    }
  } last_;
};

}  // namespace tokperf
