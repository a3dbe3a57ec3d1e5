// Prompt lengths from the server's own usage, for servers with no /tokenize (hosted APIs) when no
// --tokenizer is given: a text's "length" is the usage.prompt_tokens the server reports for one
// streamed request carrying it as the prompt, with max_tokens 1. That count includes whatever the
// server adds (chat template, BOS), so prompts sized by it make the server's usage hit the target.
// Each call is one request to the target, made before the load starts (docs/TOKENIZERS.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "client/target_config.h"
#include "core/result.h"

namespace tokperf {

class RequestBuilder;

class UsageCounter {
 public:
  // Sends one probe; fails, saying why, when the request fails or its reply reports no
  // usage.prompt_tokens (the caller then approximates). REQUIRES: target.api resolved (not auto).
  static Result<UsageCounter> probe(const TargetConfig& target);

  // usage.prompt_tokens of one request whose prompt is `text`.
  Result<int64_t> count(const std::string& text) const;
  // Requests sent so far (the probe included), for the run's notes.
  int64_t requests() const { return *requests_; }

 private:
  std::shared_ptr<const RequestBuilder> builder_;
  std::shared_ptr<int64_t> requests_;
};

}  // namespace tokperf
