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
  // As the record writes each field (report/json_output.cc) and the reader reads it back: a
  // non-finite number is written as null, which the reader takes as its default.
  auto finite_or = [](double v, double fallback) { return std::isfinite(v) ? v : fallback; };
  RequestSample s;
  s.seq = static_cast<int64_t>(t.seq);
  s.level = t.level;
  s.measured = t.phase == Phase::kMeasure;
  s.ok = t.ok();
  if (!s.ok) s.error_kind = error_kind_name(t.error.kind);
  s.start_unix_us = t.start_unix_us;
  s.queue_ms = finite_or(m.queue_ms, 0);
  s.ttft_ms = finite_or(m.ttft_ms, RequestSample::kNaN);
  s.ttfo_ms = finite_or(m.ttfo_ms, RequestSample::kNaN);
  s.tpot_ms = finite_or(m.tpot_ms, RequestSample::kNaN);
  s.e2e_ms = finite_or(m.e2e_ms, RequestSample::kNaN);
  s.end_ms = finite_or(m.end_ms, RequestSample::kNaN);
  s.itl_ms.reserve(m.itl_ms.size());
  for (double g : m.itl_ms) s.itl_ms.push_back(finite_or(g, RequestSample::kNaN));
  s.output_tokens = m.output_tokens;
  s.prompt_tokens = m.prompt_tokens < 0 ? -1 : m.prompt_tokens;
  s.token_ms.reserve(t.token_events.size());
  s.content_chars.reserve(t.token_events.size());
  for (const TokenEvent& e : t.token_events) {
    s.token_ms.push_back(std::round(static_cast<double>(e.t_ns - t.send_ns) / 1e3) / 1e3);
    s.content_chars.push_back(e.chars);
  }
  return s;
}

int64_t sample_stride(int64_t records, size_t max_samples) {
  if (max_samples == 0 || records <= 0) return 1;
  const auto max = static_cast<int64_t>(max_samples);
  int64_t k = 1;
  while ((records + k - 1) / k > max) k *= 2;
  return k;
}

void RecordSampler::add(const RequestTimeline& t, const RequestMetrics& m) {
  const int64_t index = n_++;
  if (index % stride_ != 0) return;
  kept_.push_back(request_sample_from(t, m));
  if (max_ == 0 || kept_.size() <= max_) return;
  // One more than allowed: keep every other one (the records at multiples of the new stride).
  stride_ *= 2;
  size_t w = 0;
  for (size_t r = 0; r < kept_.size(); r += 2, ++w) {
    if (w != r) kept_[w] = std::move(kept_[r]);
  }
  kept_.resize(w);
}

}  // namespace tokperf
