#include "client/protocol_adapters.h"

#include <algorithm>

#include "client/json_fields.h"

namespace tokperf::protocol {
namespace {

using namespace json_fields;  // NOLINT: the helpers are this file's vocabulary

constexpr size_t kMaxMsg = ChunkClassifier::kMaxErrorMessageBytes;

template <typename F>
error_code for_each_top_field(od::object obj, F&& f) {
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return e;
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    if (auto e = f(key, field.value())) return e;
  }
  return SUCCESS;
}

// {"type": "...", "message": "..."} (Anthropic, llama.cpp) or a bare string (Ollama, TGI).
error_code read_error_value(od::value v, std::string_view fallback_kind, ChunkInfo& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t == od::json_type::null) return SUCCESS;
  std::string_view kind, message;
  bool found = false;
  if (t == od::json_type::string) {
    if (auto e = read_string(v, &message, &found)) return e;
  } else if (t == od::json_type::object) {
    if (auto e = for_each_field(v, [&](std::string_view key, od::value val) -> error_code {
          bool f = false;
          if (key == "message") return read_string(val, &message, &f);
          if (key == "type" || key == "code") {
            od::json_type vt;
            if (auto e2 = val.type().get(vt)) return e2;
            if (vt == od::json_type::string && kind.empty()) return read_string(val, &kind, &f);
          }
          return SUCCESS;
        }))
      return e;
  }
  if (kind.empty()) kind = fallback_kind;
  set_stream_error(kind, message.empty() ? std::string_view("(no message)") : message, kMaxMsg,
                   out);
  return SUCCESS;
}

}  // namespace

// ---- Anthropic Messages ----

error_code classify_anthropic(od::object obj, ChunkInfo& out) {
  std::string_view type;
  return for_each_top_field(obj, [&](std::string_view key, od::value v) -> error_code {
    bool found = false;
    if (key == "type") {
      if (auto e = read_string(v, &type, &found)) return e;
      if (type == "message_stop") out.done = true;
      return SUCCESS;
    }
    if (key == "delta") {  // content_block_delta and message_delta
      return for_each_field(v, [&](std::string_view k, od::value dv) -> error_code {
        std::string_view text;
        bool f = false;
        if (k == "text") {
          if (auto e = read_string(dv, &text, &f)) return e;
          if (f) add_content(text, out);
        } else if (k == "thinking") {
          if (auto e = read_string(dv, &text, &f)) return e;
          if (f) out.reasoning_bytes += static_cast<uint32_t>(text.size());
        } else if (k == "partial_json") {  // input_json_delta: a tool_use block's input
          if (auto e = read_string(dv, &text, &f)) return e;
          if (f) add_tool_args(text, out);
        } else if (k == "stop_reason") {
          bool null = true;
          if (auto e = is_null(dv, &null)) return e;
          if (!null) out.finish = true;
        }
        return SUCCESS;
      });
    }
    if (key == "content_block") {  // content_block_start: text (usually ""), tool_use name
      return for_each_field(v, [&](std::string_view k, od::value cv) -> error_code {
        std::string_view text;
        bool f = false;
        if (k == "text") {
          if (auto e = read_string(cv, &text, &f)) return e;
          if (f) add_content(text, out);
        } else if (k == "name") {
          if (auto e = read_string(cv, &text, &f)) return e;
          if (f) out.tool_call_bytes += static_cast<uint32_t>(text.size());
        } else if (k == "thinking") {
          if (auto e = read_string(cv, &text, &f)) return e;
          if (f) out.reasoning_bytes += static_cast<uint32_t>(text.size());
        }
        return SUCCESS;
      });
    }
    if (key == "message") {  // message_start: role and input tokens (its output_tokens is a stub)
      return for_each_field(v, [&](std::string_view k, od::value mv) -> error_code {
        if (k == "role") {
          std::string_view role;
          bool f = false;
          if (auto e = read_string(mv, &role, &f)) return e;
          if (f) out.role = true;
        } else if (k == "usage") {
          return for_each_field(mv, [&](std::string_view uk, od::value uv) -> error_code {
            if (uk == "input_tokens") return read_count(uv, &out.usage_prompt_tokens);
            return SUCCESS;
          });
        }
        return SUCCESS;
      });
    }
    if (key == "usage") {  // message_delta: cumulative output tokens
      return for_each_field(v, [&](std::string_view uk, od::value uv) -> error_code {
        if (uk == "output_tokens") return read_count(uv, &out.usage_completion_tokens);
        if (uk == "input_tokens") return read_count(uv, &out.usage_prompt_tokens);
        return SUCCESS;
      });
    }
    if (key == "error") return read_error_value(v, "error", out);
    return SUCCESS;
  });
}

// ---- OpenAI Responses ----

namespace {

error_code read_responses_usage(od::value v, ChunkInfo& out) {
  return for_each_field(v, [&](std::string_view k, od::value uv) -> error_code {
    if (k == "input_tokens") return read_count(uv, &out.usage_prompt_tokens);
    if (k == "output_tokens") return read_count(uv, &out.usage_completion_tokens);
    return SUCCESS;
  });
}

}  // namespace

error_code classify_responses(od::object obj, ChunkInfo& out) {
  std::string_view type, delta, message, code, failure_message, failure_code;
  bool has_delta = false;
  auto e = for_each_top_field(obj, [&](std::string_view key, od::value v) -> error_code {
    bool f = false;
    if (key == "type") return read_string(v, &type, &f);
    if (key == "delta") return read_string(v, &delta, &has_delta);
    if (key == "message") return read_string(v, &message, &f);
    if (key == "code") return read_string(v, &code, &f);
    if (key == "response") {
      return for_each_field(v, [&](std::string_view k, od::value rv) -> error_code {
        if (k == "usage") return read_responses_usage(rv, out);
        if (k == "error") {
          return for_each_field(rv, [&](std::string_view ek, od::value ev) -> error_code {
            bool g = false;
            if (ek == "message") return read_string(ev, &failure_message, &g);
            if (ek == "code") return read_string(ev, &failure_code, &g);
            return SUCCESS;
          });
        }
        return SUCCESS;
      });
    }
    return SUCCESS;
  });
  if (e) return e;
  if (has_delta) {
    if (type == "response.output_text.delta" || type == "response.refusal.delta") {
      add_content(delta, out);
    } else if (type == "response.reasoning_text.delta" ||
               type == "response.reasoning_summary_text.delta") {
      out.reasoning_bytes += static_cast<uint32_t>(delta.size());
    } else if (type == "response.function_call_arguments.delta" ||
               type == "response.custom_tool_call_input.delta") {
      add_tool_args(delta, out);
    }
  }
  if (type == "response.completed" || type == "response.incomplete") {
    out.finish = true;
    out.done = true;
  } else if (type == "response.failed") {
    set_stream_error(failure_code.empty() ? std::string_view("response.failed") : failure_code,
                     failure_message.empty() ? std::string_view("(no message)") : failure_message,
                     kMaxMsg, out);
  } else if (type == "error") {
    set_stream_error(code.empty() ? std::string_view("error") : code,
                     message.empty() ? std::string_view("(no message)") : message, kMaxMsg, out);
  }
  return SUCCESS;
}

// ---- Ollama ----

namespace {

error_code read_ollama_message(od::value v, ChunkInfo& out) {
  return for_each_field(v, [&](std::string_view k, od::value mv) -> error_code {
    std::string_view text;
    bool f = false;
    if (k == "role") {
      if (auto e = read_string(mv, &text, &f)) return e;
      if (f) out.role = true;
    } else if (k == "content") {
      if (auto e = read_string(mv, &text, &f)) return e;
      if (f) add_content(text, out);
    } else if (k == "thinking") {
      if (auto e = read_string(mv, &text, &f)) return e;
      if (f) out.reasoning_bytes += static_cast<uint32_t>(text.size());
    } else if (k == "tool_calls") {
      // [{"function": {"name": "...", "arguments": {...}}}]: arguments is an object, counted raw.
      return for_each_element(mv, [&](od::value call) -> error_code {
        return for_each_field(call, [&](std::string_view ck, od::value cv) -> error_code {
          if (ck != "function") return SUCCESS;
          return for_each_field(cv, [&](std::string_view fk, od::value fv) -> error_code {
            if (fk == "name") {
              std::string_view name;
              bool g = false;
              if (auto e = read_string(fv, &name, &g)) return e;
              if (g) out.tool_call_bytes += static_cast<uint32_t>(name.size());
            } else if (fk == "arguments") {
              od::json_type t;
              if (auto e = fv.type().get(t)) return e;
              if (t == od::json_type::object) {
                od::object args;
                if (auto e = fv.get_object().get(args)) return e;
                std::string_view raw;
                if (auto e = args.raw_json().get(raw)) return e;
                add_tool_args(raw, out);
              } else if (t == od::json_type::string) {
                std::string_view raw;
                bool g = false;
                if (auto e = read_string(fv, &raw, &g)) return e;
                add_tool_args(raw, out);
              }
            }
            return SUCCESS;
          });
        });
      });
    }
    return SUCCESS;
  });
}

}  // namespace

error_code classify_ollama(od::object obj, ChunkInfo& out) {
  bool done = false;
  bool timings = false;
  ServerTimings& s = out.server;
  auto e = for_each_top_field(obj, [&](std::string_view key, od::value v) -> error_code {
    std::string_view text;
    bool f = false;
    if (key == "message") return read_ollama_message(v, out);
    if (key == "response") {  // /api/generate
      if (auto e2 = read_string(v, &text, &f)) return e2;
      if (f) add_content(text, out);
      return SUCCESS;
    }
    if (key == "thinking") {  // /api/generate with think
      if (auto e2 = read_string(v, &text, &f)) return e2;
      if (f) out.reasoning_bytes += static_cast<uint32_t>(text.size());
      return SUCCESS;
    }
    if (key == "done") return read_bool(v, &done);
    if (key == "prompt_eval_count") return read_count(v, &out.usage_prompt_tokens);
    if (key == "eval_count") return read_count(v, &out.usage_completion_tokens);
    if (key == "prompt_eval_duration") return timings = true, read_ms(v, &s.prompt_ms, 1e-6);
    if (key == "eval_duration") return timings = true, read_ms(v, &s.decode_ms, 1e-6);
    if (key == "load_duration") return timings = true, read_ms(v, &s.load_ms, 1e-6);
    if (key == "total_duration") return timings = true, read_ms(v, &s.total_ms, 1e-6);
    if (key == "error") return read_error_value(v, "", out);
    return SUCCESS;
  });
  if (e) return e;
  if (done) {
    out.finish = true;
    out.done = true;
  }
  if (timings) {
    s.source = "ollama.durations";
    s.prompt_tokens = out.usage_prompt_tokens;
    s.predicted_tokens = out.usage_completion_tokens;
    if (s.decode_ms >= 0 && s.predicted_tokens > 0) {
      s.decode_per_token_ms = s.decode_ms / static_cast<double>(s.predicted_tokens);
    }
  }
  return SUCCESS;
}

// ---- TGI ----

error_code classify_tgi(od::object obj, ChunkInfo& out) {
  std::string_view error_type;
  std::string_view error_text;
  bool has_error = false;
  auto e = for_each_top_field(obj, [&](std::string_view key, od::value v) -> error_code {
    bool f = false;
    if (key == "token") {
      std::string_view text;
      bool found = false, special = false;
      if (auto e2 = for_each_field(v, [&](std::string_view k, od::value tv) -> error_code {
            bool g = false;
            if (k == "text") return read_string(tv, &text, &found);
            if (k == "special") return read_bool(tv, &special);
            (void)g;
            return SUCCESS;
          }))
        return e2;
      if (found && !special) add_content(text, out);
      return SUCCESS;
    }
    if (key == "generated_text") {
      bool null = true;
      if (auto e2 = is_null(v, &null)) return e2;
      if (!null) out.done = true;
      return SUCCESS;
    }
    if (key == "details") {
      return for_each_field(v, [&](std::string_view k, od::value dv) -> error_code {
        if (k == "generated_tokens") {
          out.usage_is_total = true;
          return read_count(dv, &out.usage_completion_tokens);
        }
        if (k == "input_length") return read_count(dv, &out.usage_prompt_tokens);
        if (k == "finish_reason") {
          bool null = true;
          if (auto e2 = is_null(dv, &null)) return e2;
          if (!null) out.finish = true;
        }
        return SUCCESS;
      });
    }
    if (key == "error") {
      od::json_type t;
      if (auto e2 = v.type().get(t)) return e2;
      if (t == od::json_type::null) return SUCCESS;
      has_error = true;
      return read_string(v, &error_text, &f);
    }
    if (key == "error_type") return read_string(v, &error_type, &f);
    return SUCCESS;
  });
  if (e) return e;
  if (has_error) {
    set_stream_error(error_type, error_text.empty() ? std::string_view("(no message)") : error_text,
                     kMaxMsg, out);
  }
  return SUCCESS;
}

// ---- llama.cpp native /completion ----

error_code classify_llamacpp(od::object obj, ChunkInfo& out) {
  return for_each_top_field(obj, [&](std::string_view key, od::value v) -> error_code {
    std::string_view text;
    bool f = false;
    if (key == "content") {
      if (auto e = read_string(v, &text, &f)) return e;
      if (f) add_content(text, out);
      return SUCCESS;
    }
    if (key == "stop") {
      bool stop = false;
      if (auto e = read_bool(v, &stop)) return e;
      if (stop) out.finish = out.done = true;
      return SUCCESS;
    }
    if (key == "tokens_predicted") return read_count(v, &out.usage_completion_tokens);
    if (key == "tokens_evaluated") return read_count(v, &out.usage_prompt_tokens);
    if (key == "timings") return read_llamacpp_timings(v, out.server);
    if (key == "error") return read_error_value(v, "error", out);
    return SUCCESS;
  });
}

}  // namespace tokperf::protocol
