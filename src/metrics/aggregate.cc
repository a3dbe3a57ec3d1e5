#include "metrics/aggregate.h"

#include <algorithm>
#include <limits>

namespace tokperf {
namespace {

constexpr size_t kErrorKinds = static_cast<size_t>(ErrorKind::kOther) + 1;

void append(std::vector<double>& to, const std::vector<double>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

int64_t LevelSummary::error_count(ErrorKind k) const {
  for (const ErrorTally& e : errors) {
    if (e.kind == k) return e.count;
  }
  return 0;
}

bool LevelAccumulator::add(const RequestTimeline& t, const RequestMetrics& m) {
  if (t.phase != Phase::kMeasure) return false;
  if (params_.level >= 0 && t.level != params_.level) return false;

  ++sent_;
  if (sent_ == 1 || t.send_ns < window_start_ns_) window_start_ns_ = t.send_ns;
  // A record whose end was never stamped still ends no earlier than its last token.
  int64_t end_ns = t.end_ns;
  if (!t.token_events.empty()) end_ns = std::max(end_ns, t.token_events.back().t_ns);
  window_end_ns_ = sent_ == 1 ? end_ns : std::max(window_end_ns_, end_ns);

  if (!t.ok()) {
    if (errors_.empty()) errors_.resize(kErrorKinds);
    ErrorTally& e = errors_[static_cast<size_t>(t.error.kind)];
    if (e.count++ == 0) {
      e.kind = t.error.kind;
      e.first_http_status = t.error.http_status;
      e.first_message = t.error.message;
    }
    return true;
  }

  ++ok_;
  (m.output_tokens_from_usage ? from_usage_ : counted_) += 1;
  output_tokens_ += std::max<int64_t>(m.output_tokens, 0);
  if (m.prompt_tokens > 0) prompt_tokens_ += m.prompt_tokens;
  ttft_.push_back(m.ttft_ms);
  ttfo_.push_back(m.ttfo_ms);
  tpot_.push_back(m.tpot_ms);
  e2e_.push_back(m.e2e_ms);
  queue_.push_back(m.queue_ms);
  ttft_int_.push_back(m.ttft_from_intended_ms);
  e2e_int_.push_back(m.e2e_from_intended_ms);
  itl_.add(m.itl_ms);

  // Tokens the client counted, and the tokens each chunk carried for the per-token ITL.
  const size_t n_events = t.token_events.size();
  bool per_event_known = n_events > 0;
  int64_t counted = 0;
  for (const TokenEvent& e : t.token_events) {
    if (e.tokens > 0) {
      counted += e.tokens;
    } else {
      per_event_known = false;
      counted += 1;
    }
  }
  if (t.usage_completion_tokens >= 0 && n_events > 0) {
    const int64_t d = t.usage_completion_tokens - counted;
    ++token_check_.compared;
    token_check_.differing += d != 0;
    token_check_.usage_minus_counted += d;
    token_check_.max_abs_difference = std::max(token_check_.max_abs_difference, d < 0 ? -d : d);
  }
  const double mean_per_chunk =
      n_events > 0 && m.output_tokens > 0
          ? static_cast<double>(m.output_tokens) / static_cast<double>(n_events)
          : 1.0;
  per_token_scratch_.clear();
  for (size_t i = 1; i < n_events; ++i) {
    const int32_t k = t.token_events[i].tokens;
    const double carried = per_event_known && k > 0 ? k : std::max(mean_per_chunk, 1e-9);
    per_token_scratch_.push_back(m.itl_ms[i - 1] / carried);
  }
  itl_per_token_.add(per_token_scratch_);
  return true;
}

void LevelAccumulator::merge(const LevelAccumulator& o) {
  if (o.sent_ == 0) return;
  if (sent_ == 0) {
    window_start_ns_ = o.window_start_ns_;
    window_end_ns_ = o.window_end_ns_;
  } else {
    window_start_ns_ = std::min(window_start_ns_, o.window_start_ns_);
    window_end_ns_ = std::max(window_end_ns_, o.window_end_ns_);
  }
  sent_ += o.sent_;
  ok_ += o.ok_;
  if (!o.errors_.empty()) {
    if (errors_.empty()) errors_.resize(kErrorKinds);
    for (size_t k = 0; k < kErrorKinds; ++k) {
      const ErrorTally& src = o.errors_[k];
      if (src.count == 0) continue;
      ErrorTally& dst = errors_[k];
      if (dst.count == 0)
        dst = src;
      else
        dst.count += src.count;
    }
  }
  from_usage_ += o.from_usage_;
  counted_ += o.counted_;
  prompt_tokens_ += o.prompt_tokens_;
  output_tokens_ += o.output_tokens_;
  append(ttft_, o.ttft_);
  append(ttfo_, o.ttfo_);
  append(tpot_, o.tpot_);
  itl_.merge(o.itl_);
  append(e2e_, o.e2e_);
  append(queue_, o.queue_);
  append(ttft_int_, o.ttft_int_);
  append(e2e_int_, o.e2e_int_);
  itl_per_token_.merge(o.itl_per_token_);
  token_check_.compared += o.token_check_.compared;
  token_check_.differing += o.token_check_.differing;
  token_check_.usage_minus_counted += o.token_check_.usage_minus_counted;
  token_check_.max_abs_difference =
      std::max(token_check_.max_abs_difference, o.token_check_.max_abs_difference);
}

LevelSummary LevelAccumulator::summary() const {
  LevelSummary s;
  s.params = params_;
  s.sent = sent_;
  s.ok = ok_;
  for (const ErrorTally& e : errors_) {
    if (e.count == 0) continue;
    s.errors.push_back(e);
    s.failed += e.count;
  }
  s.output_tokens_from_usage = from_usage_;
  s.output_tokens_counted = counted_;
  s.ttft = compute_dist_stats(ttft_);
  s.ttfo = compute_dist_stats(ttfo_);
  s.tpot = compute_dist_stats(tpot_);
  s.itl = itl_.stats();
  s.itl_exact = itl_.exact() && itl_per_token_.exact();
  s.e2e = compute_dist_stats(e2e_);
  s.queue = compute_dist_stats(queue_);
  s.ttft_from_intended = compute_dist_stats(ttft_int_);
  s.e2e_from_intended = compute_dist_stats(e2e_int_);
  s.itl_per_token = itl_per_token_.stats();
  s.token_count_check = token_check_;
  s.prompt_tokens_total = prompt_tokens_;
  s.output_tokens_total = output_tokens_;
  s.window_s = sent_ > 0 ? static_cast<double>(window_end_ns_ - window_start_ns_) / 1e9 : 0;
  if (s.window_s > 0) {
    s.request_throughput_rps = static_cast<double>(ok_) / s.window_s;
    s.output_token_throughput_tps = static_cast<double>(output_tokens_) / s.window_s;
    s.total_token_throughput_tps =
        static_cast<double>(output_tokens_ + prompt_tokens_) / s.window_s;
  }
  return s;
}

LevelSummary aggregate_level(const std::vector<RequestTimeline>& records,
                             const LevelParams& params) {
  LevelAccumulator acc(params);
  for (const RequestTimeline& t : records) acc.add(t);
  return acc.summary();
}

}  // namespace tokperf
