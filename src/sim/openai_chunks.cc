#include "sim/openai_chunks.h"

#include <fmt/format.h>

namespace tokperf::sim {

std::string json_escape_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

OpenAiChunks::OpenAiChunks(std::string_view model, bool chat, uint64_t request_id,
                           int64_t created_unix_s)
    : id_(fmt::format("{}-sim{}", chat ? "chatcmpl" : "cmpl", request_id)),
      chat_(chat),
      created_(created_unix_s),
      model_escaped_(json_escape_text(model)) {
  head_ =
      fmt::format(R"(data: {{"id":"{}","object":"{}","created":{},"model":"{}","choices":)", id_,
                  chat ? "chat.completion.chunk" : "text_completion", created_, model_escaped_);
}

void OpenAiChunks::role(std::string& out) const {
  out += head_;
  out += R"([{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
         R"("finish_reason":null}]})"
         "\n\n";
}

void OpenAiChunks::token(std::string& out, std::string_view text) const {
  out += head_;
  out += chat_ ? R"([{"index":0,"delta":{"content":")" : R"([{"index":0,"text":")";
  out += json_escape_text(text);
  out += chat_ ? R"("},"logprobs":null,"finish_reason":null}]})"
               : R"(","logprobs":null,"finish_reason":null}]})";
  out += "\n\n";
}

void OpenAiChunks::tool_call_start(std::string& out, std::string_view name,
                                   std::string_view arguments) const {
  out += head_;
  fmt::format_to(std::back_inserter(out),
                 R"([{{"index":0,"delta":{{"role":"assistant","content":null,"tool_calls":[{{)"
                 R"("index":0,"id":"call_{}","type":"function","function":{{"name":"{}",)"
                 R"("arguments":"{}"}}}}]}},"logprobs":null,"finish_reason":null}}]}})",
                 id_, json_escape_text(name), json_escape_text(arguments));
  out += "\n\n";
}

void OpenAiChunks::tool_call_arguments(std::string& out, std::string_view arguments) const {
  out += head_;
  out += R"([{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":")";
  out += json_escape_text(arguments);
  out += R"("}}]},"logprobs":null,"finish_reason":null}]})";
  out += "\n\n";
}

void OpenAiChunks::finish(std::string& out, std::string_view finish_reason) const {
  out += head_;
  out += chat_ ? R"([{"index":0,"delta":{},)" : R"([{"index":0,"text":"",)";
  fmt::format_to(std::back_inserter(out), R"("logprobs":null,"finish_reason":"{}"}}]}})",
                 finish_reason);
  out += "\n\n";
}

void OpenAiChunks::usage(std::string& out, int64_t prompt_tokens, int64_t completion_tokens,
                         std::string_view timings_json, int64_t cached_tokens) const {
  out += head_;
  fmt::format_to(std::back_inserter(out),
                 R"([],"usage":{{"prompt_tokens":{},"total_tokens":{},"completion_tokens":{})",
                 prompt_tokens, prompt_tokens + completion_tokens, completion_tokens);
  if (cached_tokens >= 0) {
    fmt::format_to(std::back_inserter(out), R"(,"prompt_tokens_details":{{"cached_tokens":{}}})",
                   cached_tokens);
  }
  out += '}';
  if (!timings_json.empty()) {
    out += R"(,"timings":)";
    out += timings_json;
  }
  out += "}\n\n";
}

void OpenAiChunks::done(std::string& out) { out += "data: [DONE]\n\n"; }

std::string OpenAiChunks::whole(std::string_view text, std::string_view finish_reason,
                                int64_t prompt_tokens, int64_t completion_tokens) const {
  const std::string body =
      chat_ ? fmt::format(R"({{"index":0,"message":{{"role":"assistant","content":"{}"}},)",
                          json_escape_text(text))
            : fmt::format(R"({{"index":0,"text":"{}",)", json_escape_text(text));
  return fmt::format(
      R"({{"id":"{}","object":"{}","created":{},"model":"{}","choices":[{}"logprobs":null,)"
      R"("finish_reason":"{}"}}],"usage":{{"prompt_tokens":{},"total_tokens":{},)"
      R"("completion_tokens":{}}}}})",
      id_, chat_ ? "chat.completion" : "text_completion", created_, model_escaped_, body,
      finish_reason, prompt_tokens, prompt_tokens + completion_tokens, completion_tokens);
}

}  // namespace tokperf::sim
