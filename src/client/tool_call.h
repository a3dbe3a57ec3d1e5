// Agent tool calls (docs/workloads-sessions.md, "Tool calls"; docs/metrics.md, tool_call_ms):
//  - the tools file of --tools: a JSON array of OpenAI tool definitions
//    ({"type": "function", "function": {"name", "description", "parameters"}}), converted to the
//    shape each chat-style protocol expects;
//  - JsonCompletion: watches a tool call's streamed argument fragments and says when they first
//    form one complete, valid JSON value, without re-parsing the text at every fragment.
// Pure values; any thread (one JsonCompletion per stream).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "client/openai_adapter.h"
#include "core/result.h"

namespace tokperf {

// Parses a tools file's text. `name` (the file) is named in every error. Accepted: a non-empty
// JSON array whose elements are objects with "type": "function" (or no type) and a "function"
// object with a non-empty string "name" (and optionally "description" and an object
// "parameters"); or, for convenience, bare function objects {"name", "parameters"} which are
// wrapped. Returns the array in OpenAI's shape.
Result<nlohmann::json> parse_tools_json(std::string_view text, std::string_view name);
// Reads and parses FILE (errors name it).
Result<nlohmann::json> load_tools_file(const std::string& path);

// The name of the first tool (for the prompt that asks to call it).
std::string first_tool_name(const nlohmann::json& tools);

// The "tools" value and "tool_choice" value for `api`'s request body. choice: "" (none sent),
// "auto", "required", "none", or a tool's name. Fails for a protocol without tools (completions,
// ollama-generate, tgi, llamacpp) or a choice that names no tool.
struct ToolsBody {
  nlohmann::json tools;
  nlohmann::json tool_choice;  // null: not sent
};
Result<ToolsBody> tools_for_api(const nlohmann::json& tools, std::string_view choice, ApiKind api);

// Watches fragments of one JSON text arriving in order. The text is complete once its first
// top-level value (an object or array, after optional whitespace) has closed and the whole of it
// parses; a closed value that does not parse, or a first character that cannot start an object
// or array, can never become complete (failed()). Each byte is scanned once; the full parse runs
// once, when the top-level value closes.
class JsonCompletion {
 public:
  // Appends a fragment; returns complete().
  bool feed(std::string_view fragment);
  bool complete() const { return state_ == State::kComplete; }
  bool failed() const { return state_ == State::kFailed; }
  bool started() const { return !text_.empty(); }
  const std::string& text() const { return text_; }
  void reset();

 private:
  enum class State : uint8_t { kOpen, kComplete, kFailed };
  std::string text_;
  size_t scanned_ = 0;
  int64_t depth_ = 0;
  bool begun_ = false;  // the top-level value has started
  bool in_string_ = false, escape_ = false;
  State state_ = State::kOpen;
};

}  // namespace tokperf
