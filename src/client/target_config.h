// Where a run sends its requests and what each one asks for: the client's side of a run's
// configuration (the load's side is load/bench_config.h). Secrets (the API key) live here only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tokperf {

struct TargetConfig {
  std::string base_url;              // normalised, ends in /v1 (or the user's own prefix)
  std::string api = "chat";          // a client/openai_adapter.h ApiKind name (--api)
  std::string model;                 // resolved before the run
  std::string api_key;               // secret: never printed, logged or written
  std::vector<std::string> headers;  // extra "Name: value" headers
  std::string extra_body_json;       // merged into every request body (JSON object)
  bool include_usage = true;         // stream_options.include_usage
  bool ignore_eos = false;
  bool http2 = false;
  std::string http_client = "auto";  // --http-client: auto or curl (client/transport.h)
  bool verify_tls = true;
  // --tools: the tools array (OpenAI shape, client/tool_call.h) as JSON text, "" for none; and
  // --tool-choice ("" not sent, auto, required, none, or a tool's name).
  std::string tools_json;
  std::string tool_choice;
};

// How a run's prompt lengths were obtained (docs/TOKENIZERS.md); written as input_tokens_method.
enum class LengthMethod : uint8_t {
  kNone,             // the user's own prompt: its length is what the server's usage says
  kServerTokenize,   // the server's /tokenize counted the text: exact
  kTokenizer,        // --tokenizer FILE counted the text: exact for that tokenizer
  kUsageCalibrated,  // sized by probe requests' usage.prompt_tokens (template included)
  kApproximate,      // 1.25 tokens per word, nothing measured
  kSimulator,        // the simulated engine's own tokenizer
};

inline const char* length_method_name(LengthMethod m) {
  switch (m) {
    case LengthMethod::kNone: return "none";
    case LengthMethod::kServerTokenize: return "server_tokenize";
    case LengthMethod::kTokenizer: return "tokenizer";
    case LengthMethod::kUsageCalibrated: return "usage_calibrated";
    case LengthMethod::kApproximate: return "approximate";
    case LengthMethod::kSimulator: return "simulator";
  }
  return "none";
}

struct PromptConfig {
  std::string text;                 // the prompt every request sends (after unique prefix)
  int64_t input_tokens = -1;        // tokens in `text` when known (tokenizer), else -1
  bool input_tokens_exact = false;  // true when a tokenize endpoint confirmed the count
  std::string input_tokens_note;    // how the count was obtained, for the output
  LengthMethod input_tokens_method = LengthMethod::kNone;
  std::string tokenizer_name;       // with kTokenizer: the file's label (tokenize/tokenizer.h)
  // "tokenizer:<name>" for kTokenizer, else length_method_name().
  std::string input_tokens_method_label() const {
    return input_tokens_method == LengthMethod::kTokenizer ? "tokenizer:" + tokenizer_name
                                                            : length_method_name(input_tokens_method);
  }
  bool unique_prefix = false;       // prepend a per-request nonce so no prefix cache can serve it
  int64_t output_tokens = 256;      // max_tokens
};

}  // namespace tokperf
