// Turns the data payload of one stream event (an SSE `data:` payload, or one NDJSON line) into
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
// and `tool_calls[].function.arguments` / `.name`. kCompletions reads choices[].text. A top-level
// `timings` object (llama.cpp) or `metrics` object (vLLM per-request metrics) fills
// ChunkInfo::server. Unknown fields anywhere (vLLM `prompt_token_ids`, logprobs, ...) are skipped.
// The other protocols' rules are in client/protocol_adapters.h. An
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

// Every protocol the client speaks (docs/metrics.md has a table per protocol). The OpenAI kinds are
// classified here; the others in client/protocol_adapters.cc, onto the same ChunkInfo.
enum class ApiKind {
  kChat,            // POST {base}/chat/completions, SSE
  kCompletions,     // POST {base}/completions, SSE
  kAnthropic,       // POST {base}/messages (Anthropic Messages), SSE with event types
  kResponses,       // POST {base}/responses (OpenAI Responses), SSE with event types
  kOllamaChat,      // POST {root}/api/chat, NDJSON
  kOllamaGenerate,  // POST {root}/api/generate, NDJSON
  kTgi,             // POST {root}/generate_stream (Hugging Face TGI), SSE
  kLlamaCpp,        // POST {root}/completion (llama.cpp native), SSE
};

enum class Framing { kSse, kNdjson };
Framing framing_of(ApiKind kind);

// "chat", "completions", "anthropic", "responses", "ollama", "ollama-generate", "tgi", "llamacpp".
const char* api_kind_name(ApiKind kind);
// Accepts the names above; anything else is an error naming what is accepted.
Result<ApiKind> parse_api_kind(std::string_view name);
// The accepted names, comma-separated, for help and error texts.
const char* api_kind_names();

class ChunkClassifier {
 public:
  static constexpr size_t kMaxErrorMessageBytes = 300;

  explicit ChunkClassifier(ApiKind kind) : kind_(kind) {}

  ChunkClassifier(const ChunkClassifier&) = delete;
  ChunkClassifier& operator=(const ChunkClassifier&) = delete;

  ApiKind kind() const { return kind_; }

  // Classifies one event's data payload (SseEvent::data). The payload is copied; it need not
  // outlive the call. When given, the event's visible text is appended to *text and its tool-call
  // argument fragments to *tool_args (ChunkInfo::text, ::tool_args).
  ChunkInfo classify(std::string_view data, std::string* text = nullptr,
                     std::string* tool_args = nullptr);

 private:
  simdjson::error_code classify_openai(simdjson::ondemand::object obj, ChunkInfo& out,
                                       std::string_view data);

  ApiKind kind_;
  simdjson::ondemand::parser parser_;
  std::string padded_;  // payload followed by SIMDJSON_PADDING bytes; capacity reused
};

}  // namespace tokperf
