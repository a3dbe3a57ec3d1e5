#include "client/stream_recorder.h"

namespace tokperf {

StreamRecorder::StreamRecorder(ChunkClassifier* classifier)
    : classifier_(classifier),
      parser_(this),
      ndjson_parser_(this),
      ndjson_(framing_of(classifier->kind()) == Framing::kNdjson) {}

void StreamRecorder::begin(RequestTimeline* timeline, bool keep_reply) {
  tl_ = timeline;
  keep_reply_ = keep_reply;
  reply_.clear();
  if (!keep_reply) reply_.shrink_to_fit();  // a reused recorder keeps no session's memory
  fragment_.clear();
  tool_json_.reset();
  parser_.reset();
  ndjson_parser_.reset();
  head_.clear();
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
  if (head_.size() < kHeadBytes) head_.append(bytes.substr(0, kHeadBytes - head_.size()));
  if (ndjson_) {
    ndjson_parser_.feed(bytes);
  } else {
    parser_.feed(bytes);
  }
}

void StreamRecorder::on_event(const SseEvent& event) {
  RequestTimeline& tl = *tl_;
  fragment_.clear();
  ChunkInfo c = classifier_->classify(event.data, keep_reply_ ? &reply_ : nullptr,
                                      tl.tools_sent ? &fragment_ : nullptr);
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
    if (c.usage_completion_tokens >= 0 && !c.usage_is_total) {
      ev.tokens = static_cast<int32_t>(c.usage_completion_tokens - last_usage_completion_);
    }
    tl.token_events.push_back(ev);
    if (c.content_visible && tl.first_visible_ns == 0) tl.first_visible_ns = now_ns_;
  }
  // Tool calls: the arguments are complete at the event whose fragment closed valid JSON.
  if (!fragment_.empty()) {
    tl.tool_call_seen = true;
    if (tool_json_.feed(fragment_) && tl.tool_call_ns == 0) tl.tool_call_ns = now_ns_;
  }
  if (c.usage_completion_tokens >= 0) {
    last_usage_completion_ = c.usage_completion_tokens;
    tl.usage_completion_tokens = c.usage_completion_tokens;
  }
  if (c.usage_prompt_tokens >= 0) tl.usage_prompt_tokens = c.usage_prompt_tokens;
  if (c.usage_cached_tokens >= 0) tl.usage_cached_tokens = c.usage_cached_tokens;
  if (c.server.present()) merge_server_timings(c.server, tl.server);
}

void merge_server_timings(const ServerTimings& from, ServerTimings& into) {
  auto take = [](auto v, auto& field) {
    if (v >= 0) field = v;
  };
  take(from.prompt_ms, into.prompt_ms);
  take(from.decode_ms, into.decode_ms);
  take(from.decode_per_token_ms, into.decode_per_token_ms);
  take(from.queue_ms, into.queue_ms);
  take(from.ttft_ms, into.ttft_ms);
  take(from.load_ms, into.load_ms);
  take(from.total_ms, into.total_ms);
  take(from.prompt_tokens, into.prompt_tokens);
  take(from.cached_tokens, into.cached_tokens);
  take(from.predicted_tokens, into.predicted_tokens);
  if (into.source.empty()) {
    into.source = from.source;
  } else if (into.source.find(from.source) == std::string::npos) {
    into.source += "+" + from.source;
  }
}

}  // namespace tokperf
