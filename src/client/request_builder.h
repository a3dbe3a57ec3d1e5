// Builds the HTTP requests of a run: URL, headers (Authorization, or x-api-key + anthropic-version
// for Anthropic; X-Request-Id; the user's own) and the streaming JSON body of the chosen protocol
// (--api): chat, completions, anthropic (/v1/messages), responses (/v1/responses), ollama
// (/api/chat), ollama-generate (/api/generate), tgi (/generate_stream), llamacpp (/completion). The
// body is serialised once around a placeholder so each request only splices in its (escaped)
// prompt.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/chat_message.h"
#include "client/openai_adapter.h"
#include "client/target_config.h"
#include "core/result.h"

namespace tokperf {

class RequestBuilder {
 public:
  // Fails when extra_body_json is not a JSON object, naming the problem.
  static Result<RequestBuilder> create(const TargetConfig& target, const PromptConfig& prompt);

  const std::string& url() const { return url_; }
  ApiKind api() const { return api_; }
  // Headers for one request; request_id goes into X-Request-Id.
  std::vector<std::string> headers(std::string_view request_id) const;
  // Body for one request; prefix (may be empty) is put before the shared prompt text.
  std::string body(std::string_view prefix) const;
  // Body with its own prompt and max_tokens (-1: the run's) (trace replay); slower: serialises the
  // whole body.
  std::string body_for(std::string_view prefix, std::string_view prompt, int64_t max_tokens) const;
  // True for the protocols that carry a conversation (chat, anthropic, responses, ollama).
  bool supports_messages() const;
  // Body carrying a whole conversation (a dataset's chat history, or a session turn: the history,
  // then the new user message) and its own max_tokens (-1: the run's). Protocols that take
  // messages (supports_messages) get them as they are (Anthropic's system messages go into its
  // top-level "system"; Responses takes them as "input"); the others get the contents joined by
  // newlines as the prompt.
  std::string body_messages(const std::vector<ChatMessage>& messages,
                            int64_t max_tokens = -1) const;
  // True when the body carries tools (--tools).
  bool sends_tools() const { return sends_tools_; }

 private:
  std::string url_;
  std::vector<std::string> base_headers_;
  std::string template_;       // the whole body with the placeholder, for body_for
  ApiKind api_ = ApiKind::kChat;
  std::string prompt_ptr_;      // JSON pointer of the prompt text in the body
  std::string max_tokens_ptr_;  // JSON pointer of the output-token limit
  std::string body_head_;     // JSON up to the opening quote of the prompt string
  std::string body_tail_;     // from the closing quote on
  std::string prompt_escaped_;
  bool sends_tools_ = false;
};

// True for the protocols that carry a conversation: chat, anthropic, responses, ollama.
bool api_supports_messages(ApiKind api);

// The streaming endpoint of `api` under base_url (OpenAI and Anthropic paths under /v1; Ollama, TGI
// and llama.cpp at the server root).
std::string endpoint_url(const std::string& base_url, ApiKind api);

// Normalises a base URL: trims a trailing '/', appends /v1 when the path is empty. Fails on a URL
// that is not http:// or https://.
Result<std::string> normalise_base_url(std::string_view url);

// The server root (base URL without a trailing /v1), where vLLM, SGLang and llama.cpp put
// /tokenize, /health and /metrics.
std::string server_root(std::string_view base_url);

// JSON string escaping (without the quotes).
std::string json_escape(std::string_view s);

}  // namespace tokperf
