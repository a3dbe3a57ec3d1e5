// Turns the data payload of one server-sent event from an OpenAI-compatible streaming endpoint into
// a ChunkInfo (client/stream_event.h): which classes of output it carries and how many bytes of
// each.
//
// Understood, for both APIs:
//   - `[DONE]` (surrounding whitespace allowed) -> done;
//   - `{"error": {...}}` (or a string) -> error, with error_message an excerpt of at most
//     kMaxErrorMessageBytes of the message (or of the raw error value when it has no message);
//   - `usage`: absent, null (OpenAI sends `usage: null` in every chunk when usage is requested) or
//   an
//     object with prompt_tokens / completion_tokens; a usage object is read wherever it appears,
//     including a final `choices: []` chunk;
//   - `choices[]`: several choices are summed; `finish_reason` non-null -> finish.
// kChat reads choices[].delta: `role`, `content` (null and "" carry nothing; whitespace-only is a
// token but not visible), `reasoning_content` / `reasoning` (vLLM, SGLang, DeepSeek, OpenRouter)
// and `tool_calls[].function.arguments` / `.name`. kCompletions reads choices[].text. Unknown
// fields anywhere (llama.cpp `timings`, vLLM `prompt_token_ids`, logprobs, ...) are skipped. An
// empty or whitespace-only payload is a keep-alive: class kOther, not an error. Anything else that
// is not one JSON object -> parse_error, with the parser's complaint and an excerpt of the payload.
// Validation is simdjson On Demand's: UTF-8, strings, bracket balance, trailing content and every
// value the classifier reads are checked; a bad literal (`tru`) inside a field it skips is not.
//
// Never throws. Cost: the simdjson parser and the padded copy of the payload are reused, so after
// warm-up classification allocates nothing unless it must write an error message.
// Thread rules: none inside; one classifier per thread (or per stream).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "client/stream_event.h"
#include "core/result.h"

namespace tokperf {

enum class ApiKind { kChat, kCompletions };

const char* api_kind_name(ApiKind kind);  // "chat" / "completions"
// Accepts "chat" and "completions"; anything else is an error naming what is accepted.
Result<ApiKind> parse_api_kind(std::string_view name);

class ChunkClassifier {
 public:
  static constexpr size_t kMaxErrorMessageBytes = 300;

  explicit ChunkClassifier(ApiKind kind) : kind_(kind) {}

  ChunkClassifier(const ChunkClassifier&) = delete;
  ChunkClassifier& operator=(const ChunkClassifier&) = delete;

  ApiKind kind() const { return kind_; }

  // Classifies one event's data payload (SseEvent::data). The payload is copied; it need not
  // outlive the call.
  ChunkInfo classify(std::string_view data);

 private:
  ApiKind kind_;
  simdjson::ondemand::parser parser_;
  std::string padded_;  // payload followed by SIMDJSON_PADDING bytes; capacity reused
};

}  // namespace tokperf
