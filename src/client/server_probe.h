// Set-up calls made before any load: is the server there, which model does it serve, can it count
// tokens. Each failure says which URL failed and why.
#pragma once

#include <string>
#include <vector>

#include "client/target_config.h"
#include "core/result.h"

namespace tokperf {

// GET {base}/models. An unreachable server is an error naming the URL and cause; 401/403 says the
// key was refused. Returns the model ids (possibly empty when the server has no /models).
Result<std::vector<std::string>> list_models(const TargetConfig& target);

// What --api auto chose and why.
struct ApiDetection {
  std::string api;     // an ApiKind name (client/openai_adapter.h)
  std::string reason;  // which endpoint answered how
};

// --api auto: probes the server once — GET {root}/api/tags (Ollama), {root}/info (TGI),
// {root}/props (llama.cpp), {base}/models (OpenAI, or Anthropic by its shapes) — and picks the
// first that answers in its protocol's shape; "chat" when none does. Fails only when the server
// cannot be reached.
Result<ApiDetection> detect_api(const TargetConfig& target);

// A token counter backed by the server's tokenize endpoint (vLLM and SGLang: POST /tokenize with
// {"model","prompt"}; llama.cpp: POST /tokenize with {"content"}). One body serves all three.
class ServerTokenizer {
 public:
  // Probes the endpoint; fails when the server offers none (the caller then approximates).
  static Result<ServerTokenizer> probe(const TargetConfig& target);
  Result<int64_t> count(const std::string& text) const;
  const std::string& endpoint() const { return url_; }

 private:
  std::string url_;
  std::string model_;
  std::vector<std::string> headers_;
};

}  // namespace tokperf
