// What one server-sent event (one `data:` payload) of an OpenAI-compatible stream carries, as the API
// adapter classifies it. See docs/metrics.md for how these drive TTFT, TTFO, ITL and token counts.
#pragma once

#include <cstdint>
#include <string>

#include "metrics/request_record.h"

namespace tokperf {

// The classes of DESIGN.md's contract. One event may carry several (a role beside its first content,
// a finish event with usage); primary_class() picks the one that matters most for timing.
enum class EventClass : uint8_t {
  kRole,       // a delta with a role and no text
  kContent,    // visible text (delta.content / choices[].text)
  kReasoning,  // delta.reasoning_content / delta.reasoning
  kToolCall,   // delta.tool_calls[].function.arguments / name
  kUsage,      // a usage object with token counts
  kDone,       // data: [DONE], or the protocol's own end of stream
  kError,      // {"error": …} in the stream
  kOther,      // anything else (empty deltas, finish-only events, keep-alives)
};

const char* event_class_name(EventClass c);

struct ChunkInfo {
  bool role = false;
  uint32_t content_bytes = 0;          // UTF-8 bytes of delta.content / text
  uint32_t content_chars = 0;          // characters (code points) of that text
  bool content_visible = false;        // content holds a non-whitespace character
  uint32_t reasoning_bytes = 0;
  uint32_t tool_call_bytes = 0;
  int64_t usage_prompt_tokens = -1;    // -1: not present in this event
  int64_t usage_completion_tokens = -1;
  int64_t usage_cached_tokens = -1;    // usage.prompt_tokens_details.cached_tokens
  bool done = false;                   // [DONE]
  bool error = false;                  // an error object; message in error_message
  bool parse_error = false;            // payload is not valid JSON / not an object
  bool finish = false;                 // a finish_reason was set
  bool usage_is_total = false;         // usage here is the request's total, not a running count
                                       // (TGI's final event carries a token and the total)
  std::string error_message;           // short excerpt, for error / parse_error
  ServerTimings server;                // the server's own timings, when this event carries them
  // Optional capture (ChunkClassifier::classify's `capture`): when set, the visible text is
  // appended to *text and tool-call argument fragments to *tool_args (sessions keep the reply;
  // --tools times the arguments). Not owned.
  std::string* text = nullptr;
  std::string* tool_args = nullptr;

  // True when the event carries at least one generated token (content, reasoning or tool call).
  bool carries_token() const { return content_bytes > 0 || reasoning_bytes > 0 || tool_call_bytes > 0; }
  bool has_usage() const { return usage_completion_tokens >= 0 || usage_prompt_tokens >= 0; }
  EventClass primary_class() const;
};

}  // namespace tokperf
