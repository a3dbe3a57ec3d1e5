#include "client/stream_event.h"

namespace tokperf {

const char* event_class_name(EventClass c) {
  switch (c) {
    case EventClass::kRole:
      return "role";
    case EventClass::kContent:
      return "content";
    case EventClass::kReasoning:
      return "reasoning";
    case EventClass::kToolCall:
      return "tool_call";
    case EventClass::kUsage:
      return "usage";
    case EventClass::kDone:
      return "done";
    case EventClass::kError:
      return "error";
    case EventClass::kOther:
      return "other";
  }
  return "?";
}

// Timing decides the order: a token beats the role that came with it (TTFT starts there), visible
// content beats reasoning beside it, and usage only names an event that carries nothing else. A
// malformed payload counts as an error event; parse_error tells the two apart.
EventClass ChunkInfo::primary_class() const {
  if (done) return EventClass::kDone;
  if (error || parse_error) return EventClass::kError;
  if (content_bytes > 0) return EventClass::kContent;
  if (reasoning_bytes > 0) return EventClass::kReasoning;
  if (tool_call_bytes > 0) return EventClass::kToolCall;
  if (role) return EventClass::kRole;
  if (has_usage()) return EventClass::kUsage;
  return EventClass::kOther;
}

}  // namespace tokperf
