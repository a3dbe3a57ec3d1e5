// Turns one response's bytes into its RequestTimeline: SSE framing (client/sse_parser.h), event
// classification (client/openai_adapter.h), and the timing contract of docs/metrics.md — every event
// is stamped with the arrival time of the read that completed it.
//
// Thread rules: one recorder per in-flight request, on the transport's loop thread. The classifier is
// shared by all recorders of that thread (it is only used inside on_bytes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/openai_adapter.h"
#include "client/sse_parser.h"
#include "metrics/request_record.h"

namespace tokperf {

class StreamRecorder final : public SseSink {
 public:
  explicit StreamRecorder(ChunkClassifier* classifier);

  // Starts recording into *timeline (not owned; must outlive the stream).
  void begin(RequestTimeline* timeline);
  // Feeds the body bytes received at t_ns.
  void on_bytes(std::string_view bytes, int64_t t_ns);

  bool truncated() const { return parser_.has_partial_event(); }
  bool saw_finish() const { return saw_finish_; }
  int parse_errors() const { return parse_errors_; }
  int stream_errors() const { return stream_errors_; }
  const std::string& first_parse_error() const { return first_parse_error_; }
  const std::string& first_stream_error() const { return first_stream_error_; }
  uint64_t events() const { return parser_.events_dispatched(); }

 private:
  void on_event(const SseEvent& event) override;

  ChunkClassifier* classifier_;
  SseParser parser_;
  RequestTimeline* tl_ = nullptr;
  int64_t now_ns_ = 0;
  int64_t last_usage_completion_ = 0;
  bool saw_finish_ = false;
  int parse_errors_ = 0;
  int stream_errors_ = 0;
  std::string first_parse_error_;
  std::string first_stream_error_;
};

}  // namespace tokperf
