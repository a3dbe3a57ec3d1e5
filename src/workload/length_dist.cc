#include "workload/length_dist.h"

#include "core/draws.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>

#include <fmt/format.h>

namespace tokperf {
namespace {

constexpr std::string_view kAccepted =
    "accepted: N, fixed:N, uniform:A..B, normal:MEAN,SD, lognormal:MEAN,SD (the lengths' own mean "
    "and SD), hist:FILE";
constexpr int64_t kMaxLength = 10'000'000;  // tokens; far beyond any context window

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view s, int64_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_double(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

WorkloadRng WorkloadRng::for_request(uint64_t seed, uint64_t stream, uint64_t index) {
  return WorkloadRng(mix(mix(seed ^ 0x5757'4f52'4b4c'4f41ULL) + mix(stream + 1) + index));
}

double WorkloadRng::uniform() { return uniform_open01(rng_()); }

double WorkloadRng::normal() {
  const double u1 = uniform();
  const double u2 = uniform();
  return box_muller(u1, u2);
}

uint64_t WorkloadRng::below(uint64_t n) {
  const auto k = static_cast<uint64_t>(uniform() * static_cast<double>(n));
  return std::min(k, n - 1);
}

LengthDist LengthDist::fixed(int64_t n) {
  LengthDist d;
  d.kind_ = Kind::kFixed;
  d.a_ = d.b_ = n;
  d.mean_ = static_cast<double>(n);
  d.text_ = std::to_string(n);
  return d;
}

Result<LengthDist> LengthDist::parse(std::string_view text, std::string_view flag) {
  const std::string_view t = trim(text);
  auto bad = [&](std::string_view why) {
    return Error{fmt::format("{} '{}': {}; {}", flag, text, why, kAccepted)};
  };
  const size_t colon = t.find(':');
  const std::string_view kind = colon == std::string_view::npos ? "fixed" : t.substr(0, colon);
  const std::string_view args = colon == std::string_view::npos ? t : t.substr(colon + 1);
  LengthDist d;
  d.text_ = std::string(t);
  if (kind == "fixed") {
    int64_t n = 0;
    if (!parse_int(args, n)) return bad("not a whole number of tokens");
    if (n < 1 || n > kMaxLength) return bad("the length must be 1 to 10000000 tokens");
    LengthDist f = fixed(n);
    f.text_ = d.text_;
    return f;
  }
  if (kind == "uniform") {
    const size_t dots = args.find("..");
    int64_t a = 0, b = 0;
    if (dots == std::string_view::npos || !parse_int(args.substr(0, dots), a) ||
        !parse_int(args.substr(dots + 2), b)) {
      return bad("expected uniform:A..B with whole numbers, e.g. uniform:100..300");
    }
    if (a < 1 || b < a || b > kMaxLength) return bad("needs 1 <= A <= B <= 10000000");
    d.kind_ = Kind::kUniform;
    d.a_ = a;
    d.b_ = b;
    d.mean_ = (static_cast<double>(a) + static_cast<double>(b)) / 2;
    return d;
  }
  if (kind == "normal" || kind == "lognormal") {
    const size_t comma = args.find(',');
    double mean = 0, sd = 0;
    if (comma == std::string_view::npos || !parse_double(args.substr(0, comma), mean) ||
        !parse_double(args.substr(comma + 1), sd)) {
      return bad(fmt::format("expected {}:MEAN,SD with numbers, e.g. {}:500,150", kind, kind));
    }
    if (!(mean >= 1) || mean > kMaxLength || !(sd >= 0) || sd > kMaxLength) {
      return bad("needs 1 <= MEAN <= 10000000 and 0 <= SD <= 10000000");
    }
    d.mean_ = mean;
    d.sd_ = sd;
    if (kind == "normal") {
      d.kind_ = Kind::kNormal;
    } else {
      d.kind_ = Kind::kLognormal;
      d.sigma_ = std::sqrt(std::log1p((sd / mean) * (sd / mean)));
      d.mu_ = std::log(mean) - d.sigma_ * d.sigma_ / 2;
    }
    return d;
  }
  if (kind == "hist") {
    const std::string path(trim(args));
    if (path.empty()) return bad("expected hist:FILE");
    std::ifstream in(path, std::ios::binary);
    if (!in) return bad(fmt::format("cannot read histogram file '{}'", path));
    std::stringstream ss;
    ss << in.rdbuf();
    auto h = parse_histogram(ss.str(), path);
    if (!h) return Error{fmt::format("{}: {}", flag, h.error())};
    h->text_ = d.text_;
    return h;
  }
  return bad(fmt::format("'{}' is not a distribution", kind));
}

Result<LengthDist> LengthDist::parse_histogram(std::string_view text, std::string_view name) {
  LengthDist d;
  d.kind_ = Kind::kHistogram;
  d.text_ = fmt::format("hist:{}", name);
  int line_no = 0;
  size_t pos = 0;
  double total = 0, weighted = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    auto bad = [&](std::string_view why) {
      return Error{
          fmt::format("histogram '{}' line {}: {}; expected \"VALUE WEIGHT\" or "
                      "\"LOW..HIGH WEIGHT\" (whole tokens >= 1, weight >= 0)",
                      name, line_no, why)};
    };
    size_t sep = line.find_first_of(" \t,");
    if (sep == std::string_view::npos) return bad("no weight");
    std::string_view range = line.substr(0, sep);
    std::string_view weight_text = trim(line.substr(sep + 1));
    if (!weight_text.empty() && weight_text.front() == ',')
      weight_text = trim(weight_text.substr(1));
    HistogramBin b;
    const size_t dots = range.find("..");
    if (dots == std::string_view::npos) {
      if (!parse_int(range, b.low)) return bad(fmt::format("'{}' is not a whole number", range));
      b.high = b.low;
    } else if (!parse_int(range.substr(0, dots), b.low) ||
               !parse_int(range.substr(dots + 2), b.high)) {
      return bad(fmt::format("'{}' is not LOW..HIGH", range));
    }
    if (b.low < 1 || b.high < b.low || b.high > kMaxLength) {
      return bad("lengths must be 1 to 10000000 with LOW <= HIGH");
    }
    if (!parse_double(weight_text, b.weight) || b.weight < 0 || b.weight > 1e15) {
      return bad(fmt::format("weight '{}' is not a number from 0 to 1e15", weight_text));
    }
    if (b.weight == 0) continue;
    total += b.weight;
    weighted += b.weight * (static_cast<double>(b.low) + static_cast<double>(b.high)) / 2;
    d.bins_.push_back(b);
    d.cumulative_.push_back(total);
  }
  if (d.bins_.empty()) {
    return Error{fmt::format("histogram '{}' has no bin with a weight above 0", name)};
  }
  d.mean_ = weighted / total;
  return d;
}

int64_t LengthDist::sample(WorkloadRng& rng) const {
  auto clamp = [](double x) {
    // Clamped as a double first: a lognormal tail may exceed what llround can hold.
    if (!(x >= 1)) return int64_t{1};
    if (x >= static_cast<double>(kMaxLength)) return kMaxLength;
    return static_cast<int64_t>(std::llround(x));
  };
  switch (kind_) {
    case Kind::kFixed:
      return a_;
    case Kind::kUniform:
      return a_ + static_cast<int64_t>(rng.below(static_cast<uint64_t>(b_ - a_ + 1)));
    case Kind::kNormal:
      return clamp(mean_ + sd_ * rng.normal());
    case Kind::kLognormal:
      return clamp(std::exp(mu_ + sigma_ * rng.normal()));
    case Kind::kHistogram: {
      const double u = rng.uniform() * cumulative_.back();
      size_t i = static_cast<size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
                                     cumulative_.begin());
      i = std::min(i, bins_.size() - 1);
      const HistogramBin& b = bins_[i];
      if (b.high == b.low) return b.low;
      return b.low + static_cast<int64_t>(rng.below(static_cast<uint64_t>(b.high - b.low + 1)));
    }
  }
  return a_;
}

double LengthDist::mean() const { return mean_; }

}  // namespace tokperf
