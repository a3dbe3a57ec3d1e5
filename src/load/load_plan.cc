#include "load/load_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/units.h"

namespace tokperf {
namespace {

// A strict decimal number: digits with at most one '.', nothing else.
std::optional<double> parse_number(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  size_t dots = 0;
  for (char c : s) {
    if (c == '.')
      ++dots;
    else if (c < '0' || c > '9')
      return std::nullopt;
  }
  if (dots > 1 || s == ".") return std::nullopt;
  std::string tmp(s);
  double v = std::strtod(tmp.c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (;;) {
    size_t next = s.find(sep, pos);
    out.push_back(s.substr(pos, next == std::string_view::npos ? next : next - pos));
    if (next == std::string_view::npos) return out;
    pos = next + 1;
  }
}

Result<std::vector<LevelSpec>> parse_list(std::string_view flag, std::string_view text,
                                          LoadMode mode) {
  bool whole = mode == LoadMode::kConcurrency;
  const char* accepted = whole ? "positive whole numbers separated by commas, e.g. 1,4,8"
                               : "positive numbers (req/s) separated by commas, e.g. 10,20.5, "
                                 "or inf alone (every request at once)";
  std::vector<LevelSpec> out;
  for (std::string_view item : split(text, ',')) {
    auto v = parse_number(item);
    if (!v || *v <= 0 || (whole && *v != std::floor(*v))) {
      return Error{
          fmt::format("{} '{}': '{}' is not valid; expected {}", flag, text, item, accepted)};
    }
    out.push_back({mode, *v, *v, 0});
  }
  return out;
}

}  // namespace

double LevelSpec::target_at(int64_t offset_ns) const {
  if (!is_ramp()) return start;
  double f = std::clamp(static_cast<double>(offset_ns) / static_cast<double>(ramp_ns), 0.0, 1.0);
  double v = start + (end - start) * f;
  return mode == LoadMode::kConcurrency ? std::floor(v + 1e-9) : v;
}

std::string LevelSpec::label() const {
  const char* what = mode == LoadMode::kConcurrency ? "concurrency" : "rate";
  if (is_ramp()) {
    return fmt::format("{} {:g}->{:g} over {:g} s", what, start, end, ramp_ns / 1e9);
  }
  return mode == LoadMode::kConcurrency ? fmt::format("c={:g}", start)
                                        : fmt::format("{:g} req/s", start);
}

Result<std::vector<LevelSpec>> parse_concurrency_list(std::string_view text) {
  return parse_list("--concurrency", text, LoadMode::kConcurrency);
}

Result<std::vector<LevelSpec>> parse_rate_list(std::string_view text) {
  return parse_list("--request-rate", text, LoadMode::kRate);
}

Result<std::vector<LevelSpec>> parse_ramp(std::string_view text) {
  auto bad = [&](std::string_view what) {
    return Error{
        fmt::format("--ramp '{}': {}; expected KIND:FROM..TO:HOW with KIND rate or "
                    "concurrency and HOW step=S, x=F or linear=DURATION (e.g. "
                    "rate:10..100:step=10, concurrency:1..64:x=2, rate:1..50:linear=60s)",
                    text, what)};
  };
  auto parts = split(text, ':');
  if (parts.size() != 3) return bad("needs three ':'-separated parts");
  LoadMode mode;
  if (parts[0] == "rate")
    mode = LoadMode::kRate;
  else if (parts[0] == "concurrency")
    mode = LoadMode::kConcurrency;
  else
    return bad(fmt::format("unknown kind '{}'", parts[0]));
  bool whole = mode == LoadMode::kConcurrency;
  size_t dots = parts[1].find("..");
  if (dots == std::string_view::npos) return bad("the range must be FROM..TO");
  auto from = parse_number(parts[1].substr(0, dots));
  auto to = parse_number(parts[1].substr(dots + 2));
  if (!from || !to || *from <= 0 || *to <= 0) return bad("FROM and TO must be positive numbers");
  if (whole && (*from != std::floor(*from) || *to != std::floor(*to))) {
    return bad("a concurrency range takes whole numbers");
  }
  size_t eq = parts[2].find('=');
  if (eq == std::string_view::npos) return bad(fmt::format("'{}' is not HOW=VALUE", parts[2]));
  std::string_view how = parts[2].substr(0, eq), value = parts[2].substr(eq + 1);
  std::vector<LevelSpec> out;
  if (how == "linear") {
    auto d = parse_duration_ns(value);
    if (!d || *d <= 0) return bad(fmt::format("linear={} is not a positive duration", value));
    out.push_back({mode, *from, *to, *d});
    return out;
  }
  if (*to < *from) return bad("stepped ramps go up: FROM must be <= TO");
  auto v = parse_number(value);
  if (how == "step") {
    if (!v || *v <= 0 || (whole && *v != std::floor(*v))) {
      return bad(fmt::format("step={} must be a positive{} number", value, whole ? " whole" : ""));
    }
    // Index-based so 0.1 steps do not accumulate rounding; the 1e-9 keeps TO when it is hit
    // exactly.
    for (int64_t i = 0;; ++i) {
      double x = *from + static_cast<double>(i) * *v;
      if (x > *to * (1 + 1e-9)) break;
      out.push_back({mode, x, x, 0});
      if (out.size() > 1000) return bad("more than 1000 levels");
    }
    return out;
  }
  if (how == "x") {
    if (!v || *v <= 1) return bad(fmt::format("x={} must be a factor > 1", value));
    for (double x = *from; x < *to * (1 - 1e-9); x *= *v) {
      double level = whole ? std::round(x) : x;
      if (out.empty() || out.back().start != level) out.push_back({mode, level, level, 0});
      if (out.size() > 1000) return bad("more than 1000 levels");
    }
    out.push_back({mode, *to, *to, 0});
    return out;
  }
  return bad(fmt::format("unknown HOW '{}'", how));
}

Result<PhaseLimit> parse_phase_limit(std::string_view flag, std::string_view text) {
  PhaseLimit p;
  if (text == "0") return p;
  std::string_view count = text;
  if (count.size() > 3 && count.substr(count.size() - 3) == "req") {
    count = count.substr(0, count.size() - 3);
  }
  if (auto n = parse_count(count); n.ok()) {
    p.requests = *n;
    return p;
  }
  if (auto d = parse_duration_ns(text); d.ok()) {
    p.duration_ns = *d;
    return p;
  }
  return Error{
      fmt::format("{} '{}' is neither a duration nor a request count; expected e.g. 60s, "
                  "5m, 500ms (time) or 200, 200req, 2k (requests)",
                  flag, text)};
}

void SaturationDetector::add(const LoadSample& s) {
  if (reason_) return;
  samples_.push_back(s);
  const size_t keep = static_cast<size_t>(rules_.window_s) * (rules_.growing_windows + 1);
  while (samples_.size() > keep) samples_.pop_front();
  check();
}

void SaturationDetector::check() {
  const size_t w = static_cast<size_t>(rules_.window_s);
  // Error rule: the last full window.
  if (samples_.size() >= w) {
    int64_t ok = 0, err = 0;
    for (size_t i = samples_.size() - w; i < samples_.size(); ++i) {
      ok += samples_[i].completed;
      err += samples_[i].errors;
    }
    double finished = static_cast<double>(ok + err);
    if (ok + err >= rules_.min_finished && err / finished > rules_.max_error_rate) {
      reason_ = fmt::format(
          "stop: error rate {:.0f}% over the last {} s ({} of {} finished), above "
          "{:.0f}%",
          100.0 * err / finished, w, err, ok + err, 100 * rules_.max_error_rate);
      return;
    }
  }
  // Backlog rule: the means of the last growing_windows+1 windows rise strictly, by min_growth
  // total.
  const size_t n_windows = static_cast<size_t>(rules_.growing_windows) + 1;
  if (samples_.size() < w * n_windows) return;
  std::vector<double> means;
  for (size_t k = 0; k < n_windows; ++k) {
    double sum = 0;
    for (size_t i = k * w; i < (k + 1) * w; ++i) {
      sum += static_cast<double>(samples_[i].in_flight + samples_[i].client_queue);
    }
    means.push_back(sum / static_cast<double>(w));
  }
  for (size_t k = 1; k < means.size(); ++k) {
    if (!(means[k] > means[k - 1])) return;
  }
  if (means.back() - means.front() < rules_.min_growth) return;
  std::string trail;
  for (size_t k = 0; k < means.size(); ++k)
    trail += fmt::format("{}{:.0f}", k ? " -> " : "", means[k]);
  reason_ = fmt::format(
      "stop: backlog (in-flight + client queue) grew {} over the last {} windows "
      "of {} s: arrivals outpace service",
      trail, rules_.growing_windows, w);
}

}  // namespace tokperf
