#include "client/request_builder.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

namespace tokperf {
namespace {

constexpr std::string_view kPlaceholder = "@@TOKPERF_PROMPT@@";

}  // namespace

Result<std::string> normalise_base_url(std::string_view url) {
  std::string u(url);
  while (!u.empty() && std::isspace(static_cast<unsigned char>(u.back()))) u.pop_back();
  if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) {
    return Error{fmt::format(
        "--url '{}' is not an http:// or https:// URL; expected e.g. http://127.0.0.1:8000/v1", url)};
  }
  size_t scheme_end = u.find("://") + 3;
  if (scheme_end >= u.size() || u[scheme_end] == '/') {
    return Error{fmt::format("--url '{}' has no host", url)};
  }
  while (u.back() == '/') u.pop_back();
  size_t path = u.find('/', scheme_end);
  if (path == std::string::npos) u += "/v1";
  return u;
}

std::string server_root(std::string_view base_url) {
  std::string u(base_url);
  if (u.size() >= 3 && u.compare(u.size() - 3, 3, "/v1") == 0) u.resize(u.size() - 3);
  return u;
}

std::string json_escape(std::string_view s) {
  std::string d = nlohmann::json(std::string(s)).dump(-1, ' ', false,
                                                        nlohmann::json::error_handler_t::replace);
  return d.substr(1, d.size() - 2);
}

Result<RequestBuilder> RequestBuilder::create(const TargetConfig& target,
                                              const PromptConfig& prompt) {
  RequestBuilder b;
  nlohmann::json body;
  body["model"] = target.model;
  if (target.api == "chat") {
    b.url_ = target.base_url + "/chat/completions";
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", kPlaceholder}}});
  } else {
    b.url_ = target.base_url + "/completions";
    body["prompt"] = kPlaceholder;
  }
  body["max_tokens"] = prompt.output_tokens;
  body["stream"] = true;
  if (target.include_usage) body["stream_options"] = {{"include_usage", true}};
  if (target.ignore_eos) {
    body["ignore_eos"] = true;  // vLLM, SGLang, TensorRT-LLM, llama.cpp; others ignore or reject it
  }
  if (!target.extra_body_json.empty()) {
    nlohmann::json extra;
    try {
      extra = nlohmann::json::parse(target.extra_body_json);
    } catch (const nlohmann::json::parse_error& e) {
      return Error{fmt::format("--extra-body is not valid JSON ({}); expected an object such as "
                               "'{{\"ignore_eos\": true}}'",
                               e.what())};
    }
    if (!extra.is_object()) {
      return Error{"--extra-body must be a JSON object, e.g. '{\"ignore_eos\": true}'"};
    }
    body.merge_patch(extra);
  }
  std::string dumped = body.dump();
  b.template_ = dumped;
  b.chat_ = target.api == "chat";
  std::string quoted = fmt::format("\"{}\"", kPlaceholder);
  size_t at = dumped.find(quoted);
  if (at == std::string::npos) {
    return Error{"--extra-body must not replace the prompt ('messages' / 'prompt')"};
  }
  b.body_head_ = dumped.substr(0, at + 1);
  b.body_tail_ = dumped.substr(at + quoted.size() - 1);
  b.prompt_escaped_ = json_escape(prompt.text);
  b.base_headers_.push_back("Content-Type: application/json");
  b.base_headers_.push_back("Accept: text/event-stream");
  if (!target.api_key.empty()) b.base_headers_.push_back("Authorization: Bearer " + target.api_key);
  for (const auto& h : target.headers) b.base_headers_.push_back(h);
  return b;
}

std::vector<std::string> RequestBuilder::headers(std::string_view request_id) const {
  std::vector<std::string> h = base_headers_;
  h.push_back(fmt::format("X-Request-Id: {}", request_id));
  return h;
}

std::string RequestBuilder::body(std::string_view prefix) const {
  std::string out;
  out.reserve(body_head_.size() + prefix.size() + prompt_escaped_.size() + body_tail_.size() + 8);
  out += body_head_;
  out += json_escape(prefix);
  out += prompt_escaped_;
  out += body_tail_;
  return out;
}

std::string RequestBuilder::body_for(std::string_view prefix, std::string_view prompt,
                                     int64_t max_tokens) const {
  nlohmann::json j = nlohmann::json::parse(template_);
  std::string text = std::string(prefix) + std::string(prompt);
  if (chat_) {
    j["messages"][0]["content"] = text;
  } else {
    j["prompt"] = text;
  }
  j["max_tokens"] = max_tokens;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tokperf
