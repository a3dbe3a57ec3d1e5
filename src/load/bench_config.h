// Everything one `tokperf bench` run needs, validated once by the CLI and passed explicitly.
// Secrets (the API key) live here only; config_json() redacts them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tokperf {


struct TargetConfig {
  std::string base_url;               // normalised, ends in /v1 (or the user's own prefix)
  std::string api = "chat";           // "chat" | "completions"
  std::string model;                  // resolved before the run
  std::string api_key;                // secret: never printed, logged or written
  std::vector<std::string> headers;   // extra "Name: value" headers
  std::string extra_body_json;        // merged into every request body (JSON object)
  bool include_usage = true;          // stream_options.include_usage
  bool ignore_eos = false;
  bool http2 = false;
  bool verify_tls = true;
};

struct PromptConfig {
  std::string text;                   // the prompt every request sends (after unique prefix)
  int64_t input_tokens = -1;          // tokens in `text` when known (tokenizer), else -1
  bool input_tokens_exact = false;    // true when a tokenize endpoint confirmed the count
  std::string input_tokens_note;      // how the count was obtained, for the output
  bool unique_prefix = false;         // prepend a per-request nonce so no prefix cache can serve it
  int64_t output_tokens = 256;        // max_tokens
};

struct LoadConfig {
  std::vector<int> concurrency{1};    // one level per value (closed loop)
  int64_t requests = 100;             // measured requests per level; 0: until duration
  int64_t warmup = -1;                // -1: one per concurrent slot
  int64_t duration_ns = 0;            // stop starting measured requests after this; 0: none
  int64_t timeout_ns = 600'000'000'000;
  int64_t grace_ns = 5'000'000'000;   // after Ctrl-C, how long in-flight requests may finish
  bool progress = true;               // live progress line (only on a terminal)
};

struct BenchConfig {
  TargetConfig target;
  PromptConfig prompt;
  LoadConfig load;
  std::string out_dir;                // empty: no files
  std::string run_id;                 // prefix of request ids
};

// The configuration as written into summary.json: the API key and Authorization-like headers are
// replaced by "<redacted>".
nlohmann::json config_json(const BenchConfig& c);

}  // namespace tokperf
