#include "client/request_builder.h"

#include <strings.h>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "client/tool_call.h"

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

std::string endpoint_url(const std::string& base_url, ApiKind api) {
  switch (api) {
    case ApiKind::kChat:
      return base_url + "/chat/completions";
    case ApiKind::kCompletions:
      return base_url + "/completions";
    case ApiKind::kAnthropic:
      return base_url + "/messages";
    case ApiKind::kResponses:
      return base_url + "/responses";
    case ApiKind::kOllamaChat:
      return server_root(base_url) + "/api/chat";
    case ApiKind::kOllamaGenerate:
      return server_root(base_url) + "/api/generate";
    case ApiKind::kTgi:
      return server_root(base_url) + "/generate_stream";
    case ApiKind::kLlamaCpp:
      return server_root(base_url) + "/completion";
  }
  return base_url;
}

Result<RequestBuilder> RequestBuilder::create(const TargetConfig& target,
                                              const PromptConfig& prompt) {
  auto api = parse_api_kind(target.api);
  if (!api) return Error{api.error()};
  RequestBuilder b;
  b.api_ = *api;
  b.url_ = endpoint_url(target.base_url, *api);
  nlohmann::json body = nlohmann::json::object();
  const nlohmann::json user_message =
      nlohmann::json::array({{{"role", "user"}, {"content", kPlaceholder}}});
  switch (*api) {
    case ApiKind::kChat:
    case ApiKind::kAnthropic:
      body["model"] = target.model;
      body["messages"] = user_message;
      body["max_tokens"] = prompt.output_tokens;
      b.prompt_ptr_ = "/messages/0/content";
      b.max_tokens_ptr_ = "/max_tokens";
      break;
    case ApiKind::kCompletions:
      body["model"] = target.model;
      body["prompt"] = kPlaceholder;
      body["max_tokens"] = prompt.output_tokens;
      b.prompt_ptr_ = "/prompt";
      b.max_tokens_ptr_ = "/max_tokens";
      break;
    case ApiKind::kResponses:
      body["model"] = target.model;
      body["input"] = kPlaceholder;
      body["max_output_tokens"] = prompt.output_tokens;
      b.prompt_ptr_ = "/input";
      b.max_tokens_ptr_ = "/max_output_tokens";
      break;
    case ApiKind::kOllamaChat:
    case ApiKind::kOllamaGenerate:
      body["model"] = target.model;
      if (*api == ApiKind::kOllamaChat) {
        body["messages"] = user_message;
        b.prompt_ptr_ = "/messages/0/content";
      } else {
        body["prompt"] = kPlaceholder;
        b.prompt_ptr_ = "/prompt";
      }
      body["options"] = {{"num_predict", prompt.output_tokens}};
      b.max_tokens_ptr_ = "/options/num_predict";
      break;
    case ApiKind::kTgi:
      body["inputs"] = kPlaceholder;
      body["parameters"] = {{"max_new_tokens", prompt.output_tokens}, {"details", true}};
      b.prompt_ptr_ = "/inputs";
      b.max_tokens_ptr_ = "/parameters/max_new_tokens";
      break;
    case ApiKind::kLlamaCpp:
      body["prompt"] = kPlaceholder;
      body["n_predict"] = prompt.output_tokens;
      b.prompt_ptr_ = "/prompt";
      b.max_tokens_ptr_ = "/n_predict";
      break;
  }
  if (*api != ApiKind::kTgi) body["stream"] = true;
  const bool openai = *api == ApiKind::kChat || *api == ApiKind::kCompletions;
  if (openai && target.include_usage) body["stream_options"] = {{"include_usage", true}};
  if (target.ignore_eos) {
    // vLLM, SGLang, TensorRT-LLM, llama.cpp and the simulator; others ignore or reject it.
    body["ignore_eos"] = true;
  }
  if (!target.tools_json.empty()) {
    auto tools = nlohmann::json::parse(target.tools_json, nullptr, false);
    if (tools.is_discarded()) return Error{"--tools: the tools are not valid JSON"};
    auto tb = tools_for_api(tools, target.tool_choice, *api);
    if (!tb) return Error{tb.error()};
    body["tools"] = tb->tools;
    if (!tb->tool_choice.is_null()) body["tool_choice"] = tb->tool_choice;
    b.sends_tools_ = true;
  }
  if (!target.extra_body_json.empty()) {
    nlohmann::json extra;
    try {
      extra = nlohmann::json::parse(target.extra_body_json);
    } catch (const nlohmann::json::exception& e) {  // parse errors, and numbers out of range
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
  std::string quoted = fmt::format("\"{}\"", kPlaceholder);
  size_t at = dumped.find(quoted);
  if (at == std::string::npos) {
    return Error{"--extra-body must not replace the prompt ('messages' / 'prompt' / 'input')"};
  }
  b.body_head_ = dumped.substr(0, at + 1);
  b.body_tail_ = dumped.substr(at + quoted.size() - 1);
  b.prompt_escaped_ = json_escape(prompt.text);
  b.base_headers_.push_back("Content-Type: application/json");
  b.base_headers_.push_back(framing_of(*api) == Framing::kNdjson ? "Accept: application/x-ndjson"
                                                                 : "Accept: text/event-stream");
  if (!target.api_key.empty()) {
    if (*api == ApiKind::kAnthropic) {
      b.base_headers_.push_back("x-api-key: " + target.api_key);
    } else {
      b.base_headers_.push_back("Authorization: Bearer " + target.api_key);
    }
  }
  if (*api == ApiKind::kAnthropic) {
    bool has_version = false;
    for (const auto& h : target.headers) {
      if (h.size() >= 18 && strncasecmp(h.c_str(), "anthropic-version:", 18) == 0) {
        has_version = true;
      }
    }
    if (!has_version) b.base_headers_.push_back("anthropic-version: 2023-06-01");
  }
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

bool api_supports_messages(ApiKind api) {
  return api == ApiKind::kChat || api == ApiKind::kAnthropic || api == ApiKind::kResponses ||
         api == ApiKind::kOllamaChat;
}

bool RequestBuilder::supports_messages() const { return api_supports_messages(api_); }

std::string RequestBuilder::body_for(std::string_view prefix, std::string_view prompt,
                                     int64_t max_tokens) const {
  nlohmann::json j = nlohmann::json::parse(template_);
  j[nlohmann::json::json_pointer(prompt_ptr_)] = std::string(prefix) + std::string(prompt);
  if (max_tokens >= 0) j[nlohmann::json::json_pointer(max_tokens_ptr_)] = max_tokens;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RequestBuilder::body_messages(const std::vector<ChatMessage>& messages,
                                         int64_t max_tokens) const {
  if (!supports_messages()) {
    std::string joined;
    for (size_t i = 0; i < messages.size(); ++i) {
      if (i > 0) joined += '\n';
      joined += messages[i].content;
    }
    return body_for("", joined, max_tokens);
  }
  nlohmann::json j = nlohmann::json::parse(template_);
  nlohmann::json list = nlohmann::json::array();
  std::string system;
  for (const ChatMessage& m : messages) {
    if (api_ == ApiKind::kAnthropic && m.role == "system") {
      system += system.empty() ? m.content : "\n" + m.content;
      continue;
    }
    list.push_back({{"role", m.role}, {"content", m.content}});
  }
  j[api_ == ApiKind::kResponses ? "input" : "messages"] = std::move(list);
  if (!system.empty()) j["system"] = system;
  if (max_tokens >= 0) j[nlohmann::json::json_pointer(max_tokens_ptr_)] = max_tokens;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tokperf
