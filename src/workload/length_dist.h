// Length distributions for synthetic prompts and outputs (--input-tokens / --output-tokens accept
// them): a fixed length, uniform, normal, lognormal or an empirical histogram read from a file.
// Draws are seeded and reproducible across standard libraries: std::mt19937_64 (whose output the
// C++ standard fixes) and our own transforms, never std::*_distribution — as load/arrivals.h.
// Syntax and algorithms: docs/WORKLOADS.md.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tokperf {

// A seeded stream of uniform and normal draws (own transforms over std::mt19937_64).
class WorkloadRng {
 public:
  explicit WorkloadRng(uint64_t seed) : rng_(seed) {}
  // The stream of request `index` of purpose `stream` under `seed`: independent of draw order.
  static WorkloadRng for_request(uint64_t seed, uint64_t stream, uint64_t index);
  // Uniform in the open interval (0, 1): the top 53 bits, centred in their cell.
  double uniform();
  // N(0, 1) by Box–Muller (cosine branch only, two uniforms per draw).
  double normal();
  // Uniform integer in [0, n). REQUIRES: n >= 1.
  uint64_t below(uint64_t n);

 private:
  std::mt19937_64 rng_;
};

struct HistogramBin {
  int64_t low = 0;   // inclusive
  int64_t high = 0;  // inclusive; == low for a single value
  double weight = 0;
};

class LengthDist {
 public:
  enum class Kind : uint8_t { kFixed, kUniform, kNormal, kLognormal, kHistogram };

  // Accepted (whole tokens, at least 1):
  //   N | fixed:N                  always N
  //   uniform:A..B                 integers A..B inclusive, equally likely
  //   normal:MEAN,SD               rounded, clamped to >= 1
  //   lognormal:MEAN,SD            the lengths' own mean and SD (not the log's mu/sigma), rounded,
  //                                clamped to >= 1
  //   hist:FILE                    an empirical histogram, one bin per line: "VALUE WEIGHT" or
  //                                "LOW..HIGH WEIGHT" (uniform inside the bin); '#' comments
  // `flag` names the option in errors.
  static Result<LengthDist> parse(std::string_view text, std::string_view flag);
  // The histogram form from the file's text (parse() reads the file); `name` labels errors.
  static Result<LengthDist> parse_histogram(std::string_view text, std::string_view name);
  static LengthDist fixed(int64_t n);

  int64_t sample(WorkloadRng& rng) const;
  Kind kind() const { return kind_; }
  bool is_fixed() const { return kind_ == Kind::kFixed; }
  // The expected value (exact for fixed/uniform/histogram; the untruncated mean otherwise).
  double mean() const;
  // As the user wrote it, for summary.json and the notes.
  const std::string& text() const { return text_; }

 private:
  Kind kind_ = Kind::kFixed;
  std::string text_;
  int64_t a_ = 1, b_ = 1;      // fixed: a; uniform: a..b
  double mean_ = 1, sd_ = 0;   // normal, lognormal (the lengths' own)
  double mu_ = 0, sigma_ = 0;  // lognormal: of the log
  std::vector<HistogramBin> bins_;
  std::vector<double> cumulative_;  // running weight sums, last = total
};

}  // namespace tokperf
