// Small simdjson On Demand helpers shared by the stream classifiers (client/openai_adapter.cc,
// client/protocol_adapters.cc). Internal to client/: every helper returns the first simdjson error
// and never throws; values of an unexpected type are skipped, not errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <simdjson.h>

#include "client/stream_event.h"

namespace tokperf::json_fields {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// At most max_bytes of s, cut before a UTF-8 continuation byte so no character is split.
inline std::string_view excerpt(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// Visible text: bytes, code points, and whether any character is not whitespace.
inline void add_content(std::string_view text, ChunkInfo& out) {
  if (out.text != nullptr) out.text->append(text);
  out.content_bytes += static_cast<uint32_t>(text.size());
  for (char c : text) out.content_chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  if (!out.content_visible) out.content_visible = !trim(text).empty();
}

// A tool call's argument fragment (or, for protocols that send them whole, all of it).
inline void add_tool_args(std::string_view fragment, ChunkInfo& out) {
  if (out.tool_args != nullptr) out.tool_args->append(fragment);
  out.tool_call_bytes += static_cast<uint32_t>(fragment.size());
}

// A string value; *found false (nothing consumed) for null or any other type. The view stays valid
// while the document does.
inline error_code read_string(od::value v, std::string_view* s, bool* found) {
  *found = false;
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::string) return SUCCESS;
  if (auto e = v.get_string().get(*s)) return e;
  *found = true;
  return SUCCESS;
}

// A count read as a double so that 12 and 12.0 both work; negatives and non-numbers are ignored.
inline error_code read_count(od::value v, int64_t* count) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::number) return SUCCESS;
  double d;
  if (auto e = v.get_double().get(d)) return e;
  if (d >= 0 && d < 9.0e15) *count = static_cast<int64_t>(d);
  return SUCCESS;
}

// A non-negative duration; `scale` converts it to ms (1e-6 for nanoseconds). Others are ignored.
inline error_code read_ms(od::value v, double* ms, double scale = 1.0) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::number) return SUCCESS;
  double d;
  if (auto e = v.get_double().get(d)) return e;
  if (d >= 0 && d < 1e18) *ms = d * scale;
  return SUCCESS;
}

inline error_code read_bool(od::value v, bool* b) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::boolean) return SUCCESS;
  return v.get_bool().get(*b);
}

inline error_code is_null(od::value v, bool* null) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  *null = t == od::json_type::null;
  return SUCCESS;
}

// Calls f(key, value) for every field of v when it is an object (anything else: nothing).
template <typename F>
error_code for_each_field(od::value v, F&& f) {
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
    if (auto e = f(key, field.value())) return e;
  }
  return SUCCESS;
}

// Calls f(element) for every element of v when it is an array.
template <typename F>
error_code for_each_element(od::value v, F&& f) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t != od::json_type::array) return SUCCESS;
  od::array arr;
  if (auto e = v.get_array().get(arr)) return e;
  for (auto element_result : arr) {
    od::value element;
    if (auto e = std::move(element_result).get(element)) return e;
    if (auto e = f(element)) return e;
  }
  return SUCCESS;
}

// Sets an error with message "<kind>: <message>" (or just one of them), cut to max_bytes.
inline void set_stream_error(std::string_view kind, std::string_view message, size_t max_bytes,
                             ChunkInfo& out) {
  out.error = true;
  out.error_message.clear();
  if (!kind.empty()) {
    out.error_message.append(kind);
    if (!message.empty()) out.error_message.append(": ");
  }
  out.error_message.append(message);
  out.error_message.assign(excerpt(out.error_message, max_bytes));
}

// llama.cpp's `timings` object: prompt_n, prompt_ms, predicted_n, predicted_ms,
// predicted_per_token_ms, cache_n (and queue_ms, which `sim serve --timings` adds; llama.cpp has none).
inline error_code read_llamacpp_timings(od::value v, ServerTimings& s) {
  bool any = false;
  auto e = for_each_field(v, [&](std::string_view key, od::value val) -> error_code {
    any = true;
    if (key == "prompt_ms") return read_ms(val, &s.prompt_ms);
    if (key == "predicted_ms") return read_ms(val, &s.decode_ms);
    if (key == "predicted_per_token_ms") return read_ms(val, &s.decode_per_token_ms);
    if (key == "queue_ms") return read_ms(val, &s.queue_ms);
    if (key == "prompt_n") return read_count(val, &s.prompt_tokens);
    if (key == "predicted_n") return read_count(val, &s.predicted_tokens);
    if (key == "cache_n") return read_count(val, &s.cached_tokens);
    return SUCCESS;
  });
  if (!e && any) s.source = "llamacpp.timings";
  return e;
}

}  // namespace tokperf::json_fields
