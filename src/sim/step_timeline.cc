#include "sim/step_timeline.h"

#include <algorithm>
#include <utility>

#include "metrics/stats.h"

namespace tokperf::sim {
namespace {

double median(std::vector<double> v) { return v.empty() ? NAN : percentile(std::move(v), 50); }

}  // namespace

StepFigures step_figures(const std::vector<std::vector<int64_t>>& streams) {
  StepFigures out;
  std::vector<double> gaps;
  std::vector<std::pair<int64_t, bool>> arrivals;  // time, first event of its stream
  for (const auto& s : streams) {
    for (size_t i = 0; i < s.size(); ++i) {
      arrivals.emplace_back(s[i], i == 0);
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
  for (const auto& [t, first] : arrivals) {
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
  out.token_spacing_us = median(std::move(spacing));
  out.decode_step_ms = median(std::move(decode));
  return out;
}

}  // namespace tokperf::sim
