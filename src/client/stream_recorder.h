// Turns one response's bytes into its RequestTimeline: SSE or NDJSON framing (client/sse_parser.h,
// client/ndjson_parser.h, chosen by the classifier's protocol), event classification
// (client/openai_adapter.h), server-reported timings (RequestTimeline::server), and the timing
// contract of docs/metrics.md — every event is stamped with the arrival time of the read that
// completed it.
//
// Thread rules: one recorder per in-flight request, on the transport's loop thread. The classifier
// is shared by all recorders of that thread (it is only used inside on_bytes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/ndjson_parser.h"
#include "client/openai_adapter.h"
#include "client/sse_parser.h"
#include "client/tool_call.h"
#include "metrics/request_record.h"

namespace tokperf {

class StreamRecorder final : public SseSink {
 public:
  explicit StreamRecorder(ChunkClassifier* classifier);

  // Starts recording into *timeline (not owned; must outlive the stream). keep_reply: keep the
  // visible text of the reply (reply_text(); sessions need it for the next turn's history).
  // Tool calls are timed (RequestTimeline::tool_call_ns) when timeline->tools_sent.
  void begin(RequestTimeline* timeline, bool keep_reply = false);
  // Feeds the body bytes received at t_ns.
  void on_bytes(std::string_view bytes, int64_t t_ns);

  bool truncated() const {
    return ndjson_ ? ndjson_parser_.has_partial_event() : parser_.has_partial_event();
  }
  bool saw_finish() const { return saw_finish_; }
  int parse_errors() const { return parse_errors_; }
  int stream_errors() const { return stream_errors_; }
  const std::string& first_parse_error() const { return first_parse_error_; }
  const std::string& first_stream_error() const { return first_stream_error_; }
  uint64_t events() const {
    return ndjson_ ? ndjson_parser_.events_dispatched() : parser_.events_dispatched();
  }
  // The first bytes of the body (up to kHeadBytes), to say what arrived when nothing made sense.
  static constexpr size_t kHeadBytes = 512;
  const std::string& head() const { return head_; }
  ApiKind api() const { return classifier_->kind(); }
  // The reply's visible text so far (only with keep_reply).
  const std::string& reply_text() const { return reply_; }
  // The first tool call's arguments so far (only with tools_sent).
  const JsonCompletion& tool_args() const { return tool_json_; }

 private:
  void on_event(const SseEvent& event) override;

  ChunkClassifier* classifier_;
  SseParser parser_;
  NdjsonParser ndjson_parser_;
  bool ndjson_ = false;
  std::string head_;
  RequestTimeline* tl_ = nullptr;
  int64_t now_ns_ = 0;
  int64_t last_usage_completion_ = 0;
  bool saw_finish_ = false;
  int parse_errors_ = 0;
  int stream_errors_ = 0;
  std::string first_parse_error_;
  std::string first_stream_error_;
  bool keep_reply_ = false;
  std::string reply_;
  std::string fragment_;  // this event's tool-call argument fragments
  JsonCompletion tool_json_;
};

// Copies the fields `from` reports (>= 0) into `into`; sources are joined with '+' when two differ.
void merge_server_timings(const ServerTimings& from, ServerTimings& into);

}  // namespace tokperf
