#include "load/bench_config.h"

#include <cctype>

#include <nlohmann/json.hpp>

namespace tokperf {
namespace {

// Header names whose values are credentials.
bool is_secret_header(const std::string& h) {
  std::string name = h.substr(0, h.find(':'));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name == "authorization" || name == "proxy-authorization" || name == "api-key" ||
         name == "x-api-key" || name == "cookie" || name.find("token") != std::string::npos ||
         name.find("secret") != std::string::npos || name.find("key") != std::string::npos;
}

}  // namespace

nlohmann::json config_json(const BenchConfig& c) {
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& h : c.target.headers) {
    headers.push_back(is_secret_header(h) ? h.substr(0, h.find(':')) + ": <redacted>" : h);
  }
  nlohmann::json extra = nullptr;
  if (!c.target.extra_body_json.empty()) {
    extra = nlohmann::json::parse(c.target.extra_body_json, nullptr, /*allow_exceptions=*/false);
  }
  return {
      {"target",
       {{"base_url", c.target.base_url},
        {"api", c.target.api},
        {"model", c.target.model},
        {"api_key", c.target.api_key.empty() ? nlohmann::json(nullptr) : nlohmann::json("<redacted>")},
        {"headers", headers},
        {"extra_body", extra},
        {"include_usage", c.target.include_usage},
        {"ignore_eos", c.target.ignore_eos},
        {"http2", c.target.http2}}},
      {"prompt",
       {{"input_tokens", c.prompt.input_tokens},
        {"input_tokens_exact", c.prompt.input_tokens_exact},
        {"input_tokens_note", c.prompt.input_tokens_note},
        {"prompt_chars", c.prompt.text.size()},
        {"unique_prefix", c.prompt.unique_prefix},
        {"output_tokens", c.prompt.output_tokens}}},
      {"load",
       {{"mode", "closed_loop"},
        {"concurrency", c.load.concurrency},
        {"requests", c.load.requests},
        {"warmup", c.load.warmup},
        {"duration_s", c.load.duration_ns / 1e9},
        {"timeout_s", c.load.timeout_ns / 1e9}}},
      {"run_id", c.run_id},
  };
}

}  // namespace tokperf
