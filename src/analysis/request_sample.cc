#include "analysis/request_sample.h"

#include <cmath>

#include "core/clock.h"

namespace tokperf {

std::vector<double> token_arrivals_ms(const RequestSample& r) {
  if (!r.token_ms.empty()) return r.token_ms;
  std::vector<double> out;
  if (!std::isfinite(r.ttft_ms)) return out;
  out.reserve(r.itl_ms.size() + 1);
  double t = r.ttft_ms;
  out.push_back(t);
  for (double gap : r.itl_ms) {
    t += gap;
    out.push_back(t);
  }
  return out;
}

RequestSample request_sample_from(const RequestTimeline& t, const RequestMetrics& m) {
  RequestSample s;
  s.seq = static_cast<int64_t>(t.seq);
  s.level = t.level;
  s.measured = t.phase == Phase::kMeasure;
  s.ok = t.ok();
  if (!s.ok) s.error_kind = error_kind_name(t.error.kind);
  s.start_unix_us = t.start_unix_us;
  s.queue_ms = m.queue_ms;
  s.ttft_ms = m.ttft_ms;
  s.ttfo_ms = m.ttfo_ms;
  s.tpot_ms = m.tpot_ms;
  s.e2e_ms = m.e2e_ms;
  s.end_ms = m.end_ms;
  s.itl_ms = m.itl_ms;
  s.output_tokens = m.output_tokens;
  s.prompt_tokens = m.prompt_tokens;
  s.token_ms.reserve(t.token_events.size());
  for (const TokenEvent& e : t.token_events) s.token_ms.push_back(ns_to_ms(e.t_ns - t.send_ns));
  return s;
}

}  // namespace tokperf
