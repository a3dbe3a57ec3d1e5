#include "analysis/perceived_speed.h"

#include <algorithm>
#include <cmath>

namespace tokperf {

PerceivedRequest perceived_request(const RequestSample& r, const PerceivedOptions& o) {
  PerceivedRequest p;
  std::vector<double> arrivals = token_arrivals_ms(r);
  if (arrivals.empty()) return p;
  const size_t n = arrivals.size();

  // Time to the first N visible characters.
  p.chars_estimated = r.content_chars.size() != n;
  double chars = 0;
  for (size_t i = 0; i < n; ++i) {
    chars += p.chars_estimated ? o.fallback_chars_per_event : r.content_chars[i];
    if (chars >= o.first_chars) {
      p.first_chars_ms = arrivals[i];
      break;
    }
  }

  // The reader needs tokens_i / R to read event i and starts it when both it has arrived and
  // the previous one is read; every moment it is waiting for an arrival is a stall.
  double tokens_per_event =
      r.output_tokens > static_cast<int64_t>(n) ? static_cast<double>(r.output_tokens) / n : 1.0;
  double read_ms = tokens_per_event * 1000.0 / o.reader_tokens_per_s;
  double free_at = arrivals[0];
  double stall = 0;
  for (double a : arrivals) {
    if (a > free_at) stall += a - free_at;
    free_at = std::max(free_at, a) + read_ms;
  }
  p.reading_stall_ms = stall;
  p.reading_done_ms = free_at;
  return p;
}

PerceivedAccumulator::PerceivedAccumulator(int level, const PerceivedOptions& o)
    : level_(level), options_(o) {
  s_.reader_tpot_threshold_ms = 1000.0 / o.reader_tokens_per_s;
}

void PerceivedAccumulator::add(const RequestSample& r) {
  if (!r.measured || !r.ok || (level_ >= 0 && r.level != level_)) return;
  ++s_.requests;
  PerceivedRequest p = perceived_request(r, options_);
  s_.chars_estimated = s_.chars_estimated || p.chars_estimated;
  first_.push_back(p.first_chars_ms);
  stall_.push_back(p.reading_stall_ms);
  if (p.reading_stall_ms > 0) ++s_.stalled;
  if (std::isfinite(r.tpot_ms)) {
    ++s_.with_tpot;
    if (r.tpot_ms <= s_.reader_tpot_threshold_ms) ++s_.decode_faster_than_reader;
  }
}

PerceivedSummary PerceivedAccumulator::finish() && {
  s_.first_chars_ms = compute_dist_stats(std::move(first_));
  s_.reading_stall_ms = compute_dist_stats(std::move(stall_));
  return std::move(s_);
}

PerceivedSummary summarize_perceived(std::span<const RequestSample> requests, int level,
                                     const PerceivedOptions& o) {
  PerceivedAccumulator acc(level, o);
  for (const RequestSample& r : requests) acc.add(r);
  return std::move(acc).finish();
}

}  // namespace tokperf
