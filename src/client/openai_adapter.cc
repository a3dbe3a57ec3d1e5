#include "client/openai_adapter.h"

#include <algorithm>
#include <utility>

namespace tokperf {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;

// Every helper returns the first simdjson error; the caller turns it into parse_error. Fields are
// visited in document order and unknown ones skipped, so servers may order and extend them freely.

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// At most max_bytes of s, cut before a UTF-8 continuation byte so no character is split.
std::string_view excerpt(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

void add_content(std::string_view text, ChunkInfo& out) {
  out.content_bytes += static_cast<uint32_t>(text.size());
  // Code points: every byte that is not a UTF-8 continuation byte starts one.
  for (char c : text) out.content_chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  if (!out.content_visible) out.content_visible = !trim(text).empty();
}

// Reads a string value; sets *found false (and consumes nothing) for null or any other type.
error_code read_string(od::value v, std::string_view* s, bool* found) {
  *found = false;
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::string) return SUCCESS;
  if (auto e = v.get_string().get(*s)) return e;
  *found = true;
  return SUCCESS;
}

// Token counts are read as doubles so that 12 and 12.0 both work; negatives are ignored.
error_code read_count(od::value v, int64_t* count) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::number) return SUCCESS;
  double d;
  if (auto e = v.get_double().get(d)) return e;
  if (d >= 0 && d < 9.0e15) *count = static_cast<int64_t>(d);
  return SUCCESS;
}

error_code read_usage(od::value v, ChunkInfo& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::object) return SUCCESS;  // OpenAI's `usage: null` in every chunk
  od::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return e;
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    if (key == "prompt_tokens") {
      if (auto e = read_count(field.value(), &out.usage_prompt_tokens)) return e;
    } else if (key == "completion_tokens") {
      if (auto e = read_count(field.value(), &out.usage_completion_tokens)) return e;
    }
  }
  return SUCCESS;
}

// llama.cpp's per-request `timings` {prompt_n, prompt_ms, predicted_n, predicted_ms, cache_n, …}
// on the final chunk (the simulator adds queue_ms). Issue 11's one place that reads them.
error_code read_timings(od::value v, ChunkInfo& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::object) return SUCCESS;
  od::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return e;
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    double* ms = key == "prompt_ms"      ? &out.timings.prompt_ms
                 : key == "predicted_ms" ? &out.timings.predicted_ms
                 : key == "queue_ms"     ? &out.timings.queue_ms
                                         : nullptr;
    int64_t* n = key == "prompt_n"      ? &out.timings.prompt_n
                 : key == "predicted_n" ? &out.timings.predicted_n
                 : key == "cache_n"     ? &out.timings.cache_n
                                        : nullptr;
    if (ms) {
      od::json_type ft;
      if (auto e = field.value().type().get(ft)) return e;
      if (ft != od::json_type::number) continue;
      double d;
      if (auto e = field.value().get_double().get(d)) return e;
      if (d >= 0 && d < 1e12) *ms = d;
    } else if (n) {
      if (auto e = read_count(field.value(), n)) return e;
    }
  }
  return SUCCESS;
}

error_code read_tool_calls(od::value v, ChunkInfo& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::array) return SUCCESS;
  od::array calls;
  if (auto e = v.get_array().get(calls)) return e;
  for (auto call_result : calls) {
    od::value call;
    if (auto e = std::move(call_result).get(call)) return e;
    if (auto e = call.type().get(t)) return e;
    if (t != od::json_type::object) continue;
    od::object call_obj;
    if (auto e = call.get_object().get(call_obj)) return e;
    for (auto field_result : call_obj) {
      od::field field;
      if (auto e = std::move(field_result).get(field)) return e;
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return e;
      if (key != "function") continue;
      od::value fn = field.value();
      if (auto e = fn.type().get(t)) return e;
      if (t != od::json_type::object) continue;
      od::object fn_obj;
      if (auto e = fn.get_object().get(fn_obj)) return e;
      for (auto fn_field_result : fn_obj) {
        od::field fn_field;
        if (auto e = std::move(fn_field_result).get(fn_field)) return e;
        if (auto e = fn_field.unescaped_key().get(key)) return e;
        if (key != "arguments" && key != "name") continue;
        std::string_view text;
        bool found;
        if (auto e = read_string(fn_field.value(), &text, &found)) return e;
        if (found) out.tool_call_bytes += static_cast<uint32_t>(text.size());
      }
    }
  }
  return SUCCESS;
}

error_code read_delta(od::value v, ChunkInfo& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::object) return SUCCESS;
  od::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  // Some servers send the same reasoning text under both names; take the longer, do not add them.
  size_t reasoning_bytes = 0;
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return e;
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    std::string_view text;
    bool found = false;
    if (key == "role") {
      if (auto e = read_string(field.value(), &text, &found)) return e;
      if (found) out.role = true;
    } else if (key == "content") {
      if (auto e = read_string(field.value(), &text, &found)) return e;
      if (found) add_content(text, out);
    } else if (key == "reasoning_content" || key == "reasoning") {
      if (auto e = read_string(field.value(), &text, &found)) return e;
      if (found) reasoning_bytes = std::max(reasoning_bytes, text.size());
    } else if (key == "tool_calls") {
      if (auto e = read_tool_calls(field.value(), out)) return e;
    }
  }
  out.reasoning_bytes += static_cast<uint32_t>(reasoning_bytes);
  return SUCCESS;
}

error_code read_choices(od::value v, ApiKind kind, ChunkInfo& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::array) return SUCCESS;
  od::array choices;
  if (auto e = v.get_array().get(choices)) return e;
  for (auto choice_result : choices) {
    od::value choice;
    if (auto e = std::move(choice_result).get(choice)) return e;
    if (auto e = choice.type().get(t)) return e;
    if (t != od::json_type::object) continue;
    od::object obj;
    if (auto e = choice.get_object().get(obj)) return e;
    for (auto field_result : obj) {
      od::field field;
      if (auto e = std::move(field_result).get(field)) return e;
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return e;
      if (key == "finish_reason") {
        if (auto e = field.value().type().get(t)) return e;
        if (t != od::json_type::null) out.finish = true;
      } else if (key == "delta" && kind == ApiKind::kChat) {
        if (auto e = read_delta(field.value(), out)) return e;
      } else if (key == "text" && kind == ApiKind::kCompletions) {
        std::string_view text;
        bool found;
        if (auto e = read_string(field.value(), &text, &found)) return e;
        if (found) add_content(text, out);
      } else if (key == "usage") {  // some servers put usage inside the choice
        if (auto e = read_usage(field.value(), out)) return e;
      }
    }
  }
  return SUCCESS;
}

// `error` may be an object with a message, a bare string, or something else (then the payload is
// quoted). `error: null` is not an error.
error_code read_error(od::value v, std::string_view payload, ChunkInfo& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t == od::json_type::null) return SUCCESS;
  out.error = true;
  std::string_view message = payload;
  bool found = false;
  if (t == od::json_type::string) {
    if (auto e = read_string(v, &message, &found)) return e;
  } else if (t == od::json_type::object) {
    od::object obj;
    if (auto e = v.get_object().get(obj)) return e;
    for (auto field_result : obj) {
      od::field field;
      if (auto e = std::move(field_result).get(field)) return e;
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return e;
      if (key != "message" || found) continue;
      std::string_view text;
      if (auto e = read_string(field.value(), &text, &found)) return e;
      if (found) message = text;
    }
  }
  out.error_message.assign(excerpt(message, ChunkClassifier::kMaxErrorMessageBytes));
  return SUCCESS;
}

void set_parse_error(std::string_view what, std::string_view payload, ChunkInfo& out) {
  out = ChunkInfo{};
  out.parse_error = true;
  out.error_message.assign(what);
  out.error_message.append(": ");
  const size_t room = ChunkClassifier::kMaxErrorMessageBytes > out.error_message.size()
                          ? ChunkClassifier::kMaxErrorMessageBytes - out.error_message.size()
                          : 0;
  out.error_message.append(excerpt(payload, room));
}

}  // namespace

const char* api_kind_name(ApiKind kind) {
  switch (kind) {
    case ApiKind::kChat:
      return "chat";
    case ApiKind::kCompletions:
      return "completions";
  }
  return "?";
}

Result<ApiKind> parse_api_kind(std::string_view name) {
  if (name == "chat") return ApiKind::kChat;
  if (name == "completions") return ApiKind::kCompletions;
  return Error{"--api: unknown API '" + std::string(name) + "'; accepted: chat, completions"};
}

ChunkInfo ChunkClassifier::classify(std::string_view data) {
  ChunkInfo out;
  const std::string_view body = trim(data);
  if (body == "[DONE]") {
    out.done = true;
    return out;
  }
  if (body.empty()) return out;  // keep-alive

  padded_.assign(data);
  padded_.resize(data.size() + simdjson::SIMDJSON_PADDING);
  od::document doc;
  if (auto e = parser_.iterate(padded_.data(), data.size(), padded_.size()).get(doc)) {
    set_parse_error(std::string("malformed JSON (") + simdjson::error_message(e) + ")", data, out);
    return out;
  }
  od::object obj;
  if (auto e = doc.get_object().get(obj)) {
    set_parse_error(e == simdjson::INCORRECT_TYPE
                        ? std::string("payload is not a JSON object")
                        : std::string("malformed JSON (") + simdjson::error_message(e) + ")",
                    data, out);
    return out;
  }
  error_code err = SUCCESS;
  for (auto field_result : obj) {
    od::field field;
    if ((err = std::move(field_result).get(field))) break;
    std::string_view key;
    if ((err = field.unescaped_key().get(key))) break;
    if (key == "choices") {
      err = read_choices(field.value(), kind_, out);
    } else if (key == "usage") {
      err = read_usage(field.value(), out);
    } else if (key == "timings") {
      err = read_timings(field.value(), out);
    } else if (key == "error") {
      err = read_error(field.value(), data, out);
    }
    if (err) break;
  }
  // The object must be the whole payload: anything after it leaves the iterator short of the end.
  const char* trailing = nullptr;
  if (!err && doc.current_location().get(trailing) != simdjson::OUT_OF_BOUNDS) {
    err = simdjson::TRAILING_CONTENT;
  }
  if (err)
    set_parse_error(std::string("malformed JSON (") + simdjson::error_message(err) + ")", data,
                    out);
  return out;
}

}  // namespace tokperf
