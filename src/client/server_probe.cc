#include "client/server_probe.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "client/http_fetch.h"
#include "client/request_builder.h"

namespace tokperf {
namespace {

std::vector<std::string> auth_headers(const TargetConfig& t) {
  std::vector<std::string> h;
  if (t.api == "anthropic") {
    if (!t.api_key.empty()) h.push_back("x-api-key: " + t.api_key);
    h.push_back("anthropic-version: 2023-06-01");
  } else if (!t.api_key.empty()) {
    h.push_back("Authorization: Bearer " + t.api_key);
  }
  for (const auto& x : t.headers) h.push_back(x);
  return h;
}

}  // namespace

Result<std::vector<std::string>> list_models(const TargetConfig& target) {
  std::string url = target.base_url + "/models";
  auto reply = http_fetch("GET", url, auth_headers(target));
  if (!reply) return Error{reply.error()};
  if (reply->status == 401 || reply->status == 403) {
    return Error{fmt::format("{} answered HTTP {}: the API key was refused (set --api-key or "
                             "OPENAI_API_KEY): {}",
                             url, reply->status, body_excerpt(reply->body))};
  }
  std::vector<std::string> ids;
  if (reply->status != 200) return ids;  // some servers have no /models; --model then decides
  try {
    auto j = nlohmann::json::parse(reply->body);
    if (j.contains("data") && j["data"].is_array()) {
      for (const auto& m : j["data"]) {
        if (m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
      }
    } else if (j.contains("models") && j["models"].is_array()) {  // Ollama's /api/tags shape
      for (const auto& m : j["models"]) {
        if (m.contains("name") && m["name"].is_string()) ids.push_back(m["name"].get<std::string>());
      }
    }
  } catch (const nlohmann::json::exception&) {
    // Not JSON: treat as "no model list".
  }
  return ids;
}

Result<ServerTokenizer> ServerTokenizer::probe(const TargetConfig& target) {
  ServerTokenizer t;
  t.url_ = server_root(target.base_url) + "/tokenize";
  t.model_ = target.model;
  t.headers_ = auth_headers(target);
  t.headers_.push_back("Content-Type: application/json");
  auto n = t.count("hello world");
  if (!n) return Error{n.error()};
  if (*n <= 0) return Error{fmt::format("{} returned no tokens for 'hello world'", t.url_)};
  return t;
}

Result<int64_t> ServerTokenizer::count(const std::string& text) const {
  nlohmann::json body = {{"model", model_}, {"prompt", text}, {"content", text},
                         {"add_special_tokens", false}};
  auto reply = http_fetch("POST", url_, headers_, body.dump());
  if (!reply) return Error{reply.error()};
  if (reply->status != 200) {
    return Error{fmt::format("{} answered HTTP {}", url_, reply->status)};
  }
  try {
    auto j = nlohmann::json::parse(reply->body);
    if (j.contains("tokens") && j["tokens"].is_array()) {
      return static_cast<int64_t>(j["tokens"].size());
    }
    if (j.contains("count") && j["count"].is_number_integer()) return j["count"].get<int64_t>();
  } catch (const nlohmann::json::exception&) {
  }
  return Error{fmt::format("{} did not answer with a token list", url_)};
}

namespace {

// GET url; the parsed JSON body when it answered 200 with JSON, else a discarded value.
nlohmann::json get_json(const std::string& url, const std::vector<std::string>& headers,
                        int* status) {
  auto reply = http_fetch("GET", url, headers);
  *status = reply ? reply->status : 0;
  if (!reply) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(reply->body, nullptr, false);
}

}  // namespace

Result<ApiDetection> detect_api(const TargetConfig& target) {
  const std::string root = server_root(target.base_url);
  const auto headers = auth_headers(target);
  int status = 0;
  // Ollama: GET /api/tags lists local models. The first probe also tells an unreachable server.
  auto first = http_fetch("GET", root + "/api/tags", headers);
  if (!first) return Error{first.error()};
  status = first->status;
  auto j = nlohmann::json::parse(first->body, nullptr, false);
  if (status == 200 && j.is_object() && j.contains("models") && j["models"].is_array()) {
    return ApiDetection{"ollama", root + "/api/tags answered with Ollama's model list"};
  }
  // TGI: GET /info names model_id (and the router version).
  j = get_json(root + "/info", headers, &status);
  if (status == 200 && j.is_object() && j.contains("model_id")) {
    return ApiDetection{"tgi", root + "/info answered with TGI's model_id"};
  }
  // llama.cpp: GET /props has default_generation_settings.
  j = get_json(root + "/props", headers, &status);
  if (status == 200 && j.is_object() && j.contains("default_generation_settings")) {
    return ApiDetection{"llamacpp", root +
                                        "/props answered with llama.cpp's generation settings "
                                        "(its native /completion carries the server's timings)"};
  }
  // OpenAI-compatible or Anthropic: GET {base}/models.
  j = get_json(target.base_url + "/models", headers, &status);
  if (j.is_object() && j.contains("type") && j["type"] == "error") {
    return ApiDetection{"anthropic", target.base_url +
                                         "/models answered with an Anthropic error "
                                         "object"};
  }
  if (status == 200 && j.is_object() && j.contains("data") && j["data"].is_array()) {
    if (!j["data"].empty() && j["data"][0].is_object() &&
        j["data"][0].value("type", "") == "model") {
      return ApiDetection{"anthropic",
                          target.base_url + "/models lists models in Anthropic's shape"};
    }
    return ApiDetection{"chat", target.base_url + "/models answered in OpenAI's shape"};
  }
  return ApiDetection{"chat", fmt::format("no Ollama, TGI, llama.cpp or model-list endpoint "
                                          "answered at {} (last HTTP {}); assuming OpenAI chat",
                                          root, status)};
}

}  // namespace tokperf
