// The bytes of the simulated server's OpenAI-compatible answers: SSE chunks for
// /v1/chat/completions (role chunk, content deltas, a finish chunk, a usage chunk, [DONE]) and
// /v1/completions (text chunks), and the non-streaming bodies. Shapes follow vLLM's OpenAI server
// (`logprobs: null`, usage chunk with empty `choices`). Hand-formatted: one chunk per token per
// stream is the server's hot path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tokperf::sim {

class OpenAiChunks {
 public:
  // `model` is the served model id (escaped here once); `chat` selects the chat shapes.
  OpenAiChunks(std::string_view model, bool chat, uint64_t request_id, int64_t created_unix_s);

  // Each appends one complete SSE event ("data: {...}\n\n") to out.
  void role(std::string& out) const;  // chat only: {"role":"assistant","content":""}
  void token(std::string& out, std::string_view text) const;
  void finish(std::string& out, std::string_view finish_reason) const;
  // Chat only, a tool call (index 0): the first delta names the function and carries the first
  // arguments fragment; later deltas carry further fragments.
  void tool_call_start(std::string& out, std::string_view name, std::string_view arguments) const;
  void tool_call_arguments(std::string& out, std::string_view arguments) const;
  // `timings_json`, when given, is a JSON object added as llama.cpp's "timings" beside usage.
  // `cached_tokens` >= 0 adds usage.prompt_tokens_details.cached_tokens (OpenAI, vLLM).
  void usage(std::string& out, int64_t prompt_tokens, int64_t completion_tokens,
             std::string_view timings_json = {}, int64_t cached_tokens = -1) const;
  static void done(std::string& out);  // "data: [DONE]\n\n"

  // The complete non-streaming body (chat.completion or text_completion) with usage.
  std::string whole(std::string_view text, std::string_view finish_reason, int64_t prompt_tokens,
                    int64_t completion_tokens) const;

  const std::string& id() const { return id_; }

 private:
  std::string head_;  // {"id":…,"object":…,"created":…,"model":…,"choices":
  std::string id_;
  bool chat_;
  int64_t created_;
  std::string model_escaped_;
};

// JSON string escaping without the quotes.
std::string json_escape_text(std::string_view s);

}  // namespace tokperf::sim
