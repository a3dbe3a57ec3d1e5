#include "metrics/request_record.h"

#include <limits>

#include "core/clock.h"

namespace tokperf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The first visible content: the transport's mark when it set one, else the first token event the
// adapter flagged visible. Either source gives the same instant when both are filled.
int64_t first_visible_ns(const RequestTimeline& t) {
  if (t.first_visible_ns != 0) return t.first_visible_ns;
  for (const TokenEvent& e : t.token_events) {
    if (e.visible) return e.t_ns;
  }
  return 0;
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kWarmup:
      return "warmup";
    case Phase::kMeasure:
      return "measure";
    case Phase::kCooldown:
      return "cooldown";
  }
  return "unknown";
}

const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::kNone:
      return "none";
    case ErrorKind::kConnect:
      return "connect";
    case ErrorKind::kHttp:
      return "http";
    case ErrorKind::kAuth:
      return "auth";
    case ErrorKind::kRateLimited:
      return "rate_limited";
    case ErrorKind::kIncomplete:
      return "incomplete";
    case ErrorKind::kParse:
      return "parse";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kNotStreaming:
      return "not_streaming";
    case ErrorKind::kStreamError:
      return "stream_error";
    case ErrorKind::kCancelled:
      return "cancelled";
    case ErrorKind::kOther:
      return "other";
  }
  return "unknown";
}

RequestMetrics compute_request_metrics(const RequestTimeline& t) {
  RequestMetrics m{};
  m.queue_ms = ns_to_ms(t.send_ns - t.intended_ns);
  m.end_ms = t.end_ns != 0 ? ns_to_ms(t.end_ns - t.send_ns) : kNaN;

  const size_t n_events = t.token_events.size();
  m.output_tokens_from_usage = t.usage_completion_tokens >= 0;
  m.output_tokens =
      m.output_tokens_from_usage ? t.usage_completion_tokens : static_cast<int64_t>(n_events);
  m.prompt_tokens = t.usage_prompt_tokens >= 0 ? t.usage_prompt_tokens : t.prompt_tokens_sent;

  if (n_events == 0) {
    m.ttft_ms = m.e2e_ms = m.tpot_ms = kNaN;
    m.ttft_from_intended_ms = m.e2e_from_intended_ms = kNaN;
  } else {
    const int64_t first_ns = t.token_events.front().t_ns;
    const int64_t last_ns = t.token_events.back().t_ns;
    m.ttft_ms = ns_to_ms(first_ns - t.send_ns);
    m.e2e_ms = ns_to_ms(last_ns - t.send_ns);
    m.ttft_from_intended_ms = ns_to_ms(first_ns - t.intended_ns);
    m.e2e_from_intended_ms = ns_to_ms(last_ns - t.intended_ns);
    // One event carrying every token has no decode interval to divide, so TPOT needs two events as
    // well as two tokens; otherwise it would read 0 ms and flatter the server.
    m.tpot_ms = (m.output_tokens >= 2 && n_events >= 2)
                    ? ns_to_ms(last_ns - first_ns) / static_cast<double>(m.output_tokens - 1)
                    : kNaN;
    m.itl_ms.reserve(n_events - 1);
    for (size_t i = 1; i < n_events; ++i) {
      m.itl_ms.push_back(ns_to_ms(t.token_events[i].t_ns - t.token_events[i - 1].t_ns));
    }
  }

  m.tool_call_ms = t.tool_call_ns != 0 ? ns_to_ms(t.tool_call_ns - t.send_ns) : kNaN;
  const int64_t visible_ns = first_visible_ns(t);
  m.ttfo_ms = visible_ns != 0 ? ns_to_ms(visible_ns - t.send_ns) : kNaN;
  return m;
}

}  // namespace tokperf
