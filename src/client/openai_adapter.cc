#include "client/openai_adapter.h"

#include <algorithm>
#include <utility>

#include "client/json_fields.h"
#include "client/protocol_adapters.h"

namespace tokperf {
namespace {

using namespace json_fields;  // NOLINT: the helpers are this file's vocabulary

// Every helper returns the first simdjson error; the caller turns it into parse_error. Fields are
// visited in document order and unknown ones skipped, so servers may order and extend them freely.

// vLLM's per-request `metrics` object (--enable-per-request-metrics), on the final usage chunk.
error_code read_vllm_metrics(od::value v, ServerTimings& s) {
  bool any = false;
  auto e = for_each_field(v, [&](std::string_view key, od::value val) -> error_code {
    any = true;
    if (key == "time_to_first_token_ms") {
      if (auto e2 = read_ms(val, &s.ttft_ms)) return e2;
      s.prompt_ms = s.ttft_ms;  // measured from scheduling: the prefill interval
      return SUCCESS;
    }
    if (key == "generation_time_ms") return read_ms(val, &s.decode_ms);
    if (key == "queue_time_ms") return read_ms(val, &s.queue_ms);
    if (key == "mean_itl_ms") return read_ms(val, &s.decode_per_token_ms);
    return SUCCESS;
  });
  if (!e && any) s.source = "vllm.metrics";
  return e;
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
    } else if (key == "prompt_tokens_details") {
      // {"cached_tokens": N} (OpenAI, vLLM, SGLang); null or absent when not reported.
      od::json_type dt;
      if (auto e = field.value().type().get(dt)) return e;
      if (dt != od::json_type::object) continue;
      od::object details;
      if (auto e = field.value().get_object().get(details)) return e;
      for (auto d : details) {
        od::field df;
        if (auto e = std::move(d).get(df)) return e;
        std::string_view dk;
        if (auto e = df.unescaped_key().get(dk)) return e;
        if (dk == "cached_tokens") {
          if (auto e = read_count(df.value(), &out.usage_cached_tokens)) return e;
        }
      }
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
        const bool arguments = key == "arguments";
        std::string_view text;
        bool found;
        if (auto e = read_string(fn_field.value(), &text, &found)) return e;
        if (!found) continue;
        if (arguments) {
          add_tool_args(text, out);
        } else {
          out.tool_call_bytes += static_cast<uint32_t>(text.size());
        }
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
    case ApiKind::kAnthropic:
      return "anthropic";
    case ApiKind::kResponses:
      return "responses";
    case ApiKind::kOllamaChat:
      return "ollama";
    case ApiKind::kOllamaGenerate:
      return "ollama-generate";
    case ApiKind::kTgi:
      return "tgi";
    case ApiKind::kLlamaCpp:
      return "llamacpp";
  }
  return "?";
}

const char* api_kind_names() {
  return "chat, completions, anthropic, responses, ollama, ollama-generate, tgi, llamacpp";
}

Framing framing_of(ApiKind kind) {
  return kind == ApiKind::kOllamaChat || kind == ApiKind::kOllamaGenerate ? Framing::kNdjson
                                                                          : Framing::kSse;
}

Result<ApiKind> parse_api_kind(std::string_view name) {
  for (ApiKind k :
       {ApiKind::kChat, ApiKind::kCompletions, ApiKind::kAnthropic, ApiKind::kResponses,
        ApiKind::kOllamaChat, ApiKind::kOllamaGenerate, ApiKind::kTgi, ApiKind::kLlamaCpp}) {
    if (name == api_kind_name(k)) return k;
  }
  return Error{"--api: unknown API '" + std::string(name) + "'; accepted: " + api_kind_names()};
}

ChunkInfo ChunkClassifier::classify(std::string_view data, std::string* text,
                                    std::string* tool_args) {
  namespace od = simdjson::ondemand;
  ChunkInfo out;
  out.text = text;
  out.tool_args = tool_args;
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
  switch (kind_) {
    case ApiKind::kAnthropic:
      err = protocol::classify_anthropic(obj, out);
      break;
    case ApiKind::kResponses:
      err = protocol::classify_responses(obj, out);
      break;
    case ApiKind::kOllamaChat:
    case ApiKind::kOllamaGenerate:
      err = protocol::classify_ollama(obj, out);
      break;
    case ApiKind::kTgi:
      err = protocol::classify_tgi(obj, out);
      break;
    case ApiKind::kLlamaCpp:
      err = protocol::classify_llamacpp(obj, out);
      break;
    case ApiKind::kChat:
    case ApiKind::kCompletions:
      err = classify_openai(obj, out, data);
      break;
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

error_code ChunkClassifier::classify_openai(od::object obj, ChunkInfo& out, std::string_view data) {
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
    } else if (key == "error") {
      err = read_error(field.value(), data, out);
    } else if (key == "timings") {  // llama.cpp, on the final chunk
      err = read_llamacpp_timings(field.value(), out.server);
    } else if (key == "metrics") {  // vLLM per-request metrics
      err = read_vllm_metrics(field.value(), out.server);
    }
    if (err) break;
  }
  return err;
}

}  // namespace tokperf
