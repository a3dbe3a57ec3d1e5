#include "client/stream_recorder.h"

namespace tokperf {

StreamRecorder::StreamRecorder(ChunkClassifier* classifier)
    : classifier_(classifier), parser_(this) {}

void StreamRecorder::begin(RequestTimeline* timeline) {
  tl_ = timeline;
  parser_.reset();
  now_ns_ = 0;
  last_usage_completion_ = 0;
  saw_finish_ = false;
  parse_errors_ = 0;
  stream_errors_ = 0;
  first_parse_error_.clear();
  first_stream_error_.clear();
}

void StreamRecorder::on_bytes(std::string_view bytes, int64_t t_ns) {
  now_ns_ = t_ns;
  parser_.feed(bytes);
}

void StreamRecorder::on_event(const SseEvent& event) {
  ChunkInfo c = classifier_->classify(event.data);
  RequestTimeline& tl = *tl_;
  tl.chunks++;
  tl.last_event_ns = now_ns_;
  if (c.parse_error) {
    if (parse_errors_++ == 0) first_parse_error_ = c.error_message;
    return;
  }
  if (c.error) {
    if (stream_errors_++ == 0) first_stream_error_ = c.error_message;
  }
  if (c.done) tl.saw_done = true;
  if (c.finish) saw_finish_ = true;
  if (c.carries_token()) {
    TokenEvent ev{now_ns_, -1, c.content_visible, static_cast<int32_t>(c.content_chars)};
    // With continuous usage (vLLM's continuous_usage_stats) each chunk says how many tokens so far,
    // so the tokens packed into this chunk are known exactly.
    if (c.usage_completion_tokens >= 0) {
      ev.tokens = static_cast<int32_t>(c.usage_completion_tokens - last_usage_completion_);
    }
    tl.token_events.push_back(ev);
    if (c.content_visible && tl.first_visible_ns == 0) tl.first_visible_ns = now_ns_;
  }
  if (c.usage_completion_tokens >= 0) {
    last_usage_completion_ = c.usage_completion_tokens;
    tl.usage_completion_tokens = c.usage_completion_tokens;
  }
  if (c.usage_prompt_tokens >= 0) tl.usage_prompt_tokens = c.usage_prompt_tokens;
  if (c.timings.prompt_ms >= 0) tl.response_timings = c.timings;
}

}  // namespace tokperf
