#include "sim/step_timeline.h"

#include <algorithm>
#include <climits>
#include <cstddef>

#include "metrics/stats.h"

namespace tokperf::sim {
namespace {

// The median as percentile(v, 50) gives it, found by partial selection rather than a full sort
// (sim calibrate --steps reads every token of every level on each replay it tries).
double median(std::vector<double>& v) {
  if (v.empty()) return NAN;
  const size_t k = (v.size() - 1) / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  if (v.size() % 2 == 1) return v[k];
  const double middle[] = {v[k], *std::min_element(v.begin() + static_cast<ptrdiff_t>(k) + 1,
                                                   v.end())};
  return percentile_sorted(middle, 50);
}

}  // namespace

StepFigures step_figures(const std::vector<std::vector<int64_t>>& streams) {
  StepFigures out;
  size_t events = 0;
  int64_t origin = INT64_MAX;
  for (const auto& s : streams) {
    events += s.size();
    if (!s.empty()) origin = std::min(origin, s.front());
  }
  if (events == 0) return out;
  // Each arrival as one integer, (time from the earliest) * 2 + whether it is its stream's first
  // event: one sort of plain integers orders them as (time, first) pairs would.
  std::vector<int64_t> arrivals;
  std::vector<double> gaps;
  arrivals.reserve(events);
  gaps.reserve(events);
  for (const auto& s : streams) {
    for (size_t i = 0; i < s.size(); ++i) {
      arrivals.push_back((s[i] - origin) * 2 + (i == 0 ? 1 : 0));
      if (i > 0) gaps.push_back(static_cast<double>(s[i] - s[i - 1]));
    }
  }
  if (gaps.empty()) return out;
  const double within = 0.2 * median(gaps);
  std::sort(arrivals.begin(), arrivals.end());
  struct Step {
    int64_t first = 0, last = 0, events = 0, first_tokens = 0;
  };
  std::vector<Step> steps;
  for (const int64_t a : arrivals) {
    const int64_t t = a / 2;
    const bool first = (a & 1) != 0;
    if (!steps.empty() && static_cast<double>(t - steps.back().last) < within) {
      steps.back().last = t;
      ++steps.back().events;
      steps.back().first_tokens += first;
    } else {
      steps.push_back(Step{t, t, 1, first ? 1 : 0});
    }
  }
  out.steps = static_cast<int64_t>(steps.size());
  std::vector<double> sizes;
  for (const Step& s : steps) sizes.push_back(static_cast<double>(s.events));
  const double usual = percentile(sizes, 90);
  const double need = std::max(2.0, 0.9 * usual);
  auto full = [&](const Step& s) { return static_cast<double>(s.events) >= need; };
  std::vector<double> spacing, decode;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (!full(s)) continue;
    spacing.push_back(static_cast<double>(s.last - s.first) / 1e3 /
                      static_cast<double>(s.events - 1));
    if (i > 0 && full(steps[i - 1]) && s.first_tokens == 0 && steps[i - 1].first_tokens == 0) {
      decode.push_back(static_cast<double>(s.first - steps[i - 1].first) / 1e6);
    }
  }
  out.full_steps = static_cast<int64_t>(spacing.size());
  out.decode_steps = static_cast<int64_t>(decode.size());
  out.token_spacing_us = median(spacing);
  out.decode_step_ms = median(decode);
  return out;
}

}  // namespace tokperf::sim
