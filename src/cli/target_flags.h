// The target and prompt flags shared by `bench` and `capacity`: which server, API, model and key;
// which prompt and how many output tokens. Validated into a BenchConfig; prepare_target() then talks
// to the server (model list, tokenizer) before any load.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "load/bench_config.h"
#include "tokenize/tokenizer.h"

namespace CLI {
class App;
}

namespace tokperf {

struct TargetFlags {
  std::string url;
  std::string api = "chat";
  std::string model;
  std::string api_key;
  std::vector<std::string> headers;
  std::string extra_body;
  std::string prompt;
  std::string prompt_file;
  std::string input_tokens;   // a length or a distribution (workload/length_dist.h); "" = 128
  bool unique_prompts = false;
  std::string output_tokens;  // likewise; "" = 256
  bool ignore_eos = false;
  bool no_usage = false;
  bool http2 = false;
  std::string http_client = "auto";
  bool insecure = false;
  std::string tools;        // --tools FILE
  std::string tool_choice;  // --tool-choice
  std::string tokenizer;    // --tokenizer FILE (tokenize/tokenizer.h)
  bool no_calibrate = false;  // --no-calibrate
};

// Loads --tokenizer FILE; throws UsageError naming the file and what is accepted.
std::shared_ptr<const Tokenizer> load_tokenizer_flag(const std::string& path);

// Declares the flags on `sub` (groups "Target" and "Prompt").
void add_target_flags(CLI::App* sub, TargetFlags& f);

// Fills c.target and c.prompt (and a fresh run id); throws UsageError naming the bad flag.
void apply_target_flags(const TargetFlags& f, BenchConfig& c);

// Multi-turn sessions need a chat-style --api: throws UsageError naming the API otherwise. Call
// once the API is known (after prepare_target resolves --api auto).
void check_sessions_api(const BenchConfig& c);

// Resolves the model and builds the prompt(s). Fails, naming the URL and the cause, when the server
// cannot be reached or refuses the key. Returns the server's model ids.
Result<std::vector<std::string>> prepare_target(BenchConfig& c, std::vector<std::string>& notes);

}  // namespace tokperf
