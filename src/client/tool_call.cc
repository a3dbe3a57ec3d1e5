#include "client/tool_call.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace tokperf {

using nlohmann::json;

Result<json> parse_tools_json(std::string_view text, std::string_view name) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    return Error{
        fmt::format("--tools '{}' is not valid JSON; expected a JSON array of OpenAI tool "
                    "definitions, e.g. [{{\"type\": \"function\", \"function\": "
                    "{{\"name\": \"get_weather\", \"parameters\": {{...}}}}}}]",
                    name)};
  }
  if (!j.is_array()) {
    return Error{
        fmt::format("--tools '{}' holds a JSON {}, not an array; expected a JSON array of "
                    "OpenAI tool definitions ([{{\"type\": \"function\", \"function\": "
                    "{{\"name\": ...}}}}])",
                    name, j.type_name())};
  }
  if (j.empty())
    return Error{fmt::format("--tools '{}' is an empty array; give at least one tool", name)};
  json out = json::array();
  for (size_t i = 0; i < j.size(); ++i) {
    const json& t = j[i];
    auto bad = [&](std::string_view why) {
      return Error{
          fmt::format("--tools '{}': tool {} (from 0) {}; expected {{\"type\": "
                      "\"function\", \"function\": {{\"name\": \"...\", \"parameters\": "
                      "{{...}}}}}}",
                      name, i, why)};
    };
    if (!t.is_object()) return bad("is not an object");
    json fn;
    if (t.contains("function")) {
      if (t.contains("type") && t["type"] != "function") {
        return bad("has a \"type\" other than \"function\"");
      }
      fn = t["function"];
      if (!fn.is_object()) return bad("has a \"function\" that is not an object");
    } else if (t.contains("name")) {
      fn = t;  // a bare function definition
    } else {
      return bad("has no \"function\" object");
    }
    if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty()) {
      return bad("has no non-empty string \"name\"");
    }
    if (fn.contains("parameters") && !fn["parameters"].is_object()) {
      return bad("has \"parameters\" that are not a JSON object (a JSON Schema)");
    }
    if (fn.contains("description") && !fn["description"].is_string()) {
      return bad("has a \"description\" that is not a string");
    }
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return out;
}

Result<json> load_tools_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("--tools '{}' cannot be read", path)};
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_tools_json(ss.str(), path);
}

std::string first_tool_name(const json& tools) {
  if (!tools.is_array() || tools.empty()) return "";
  return tools[0]["function"].value("name", "");
}

Result<ToolsBody> tools_for_api(const json& tools, std::string_view choice, ApiKind api) {
  ToolsBody b;
  bool named = !choice.empty() && choice != "auto" && choice != "required" && choice != "none";
  if (named) {
    bool found = false;
    for (const json& t : tools) found |= t["function"].value("name", "") == choice;
    if (!found) {
      return Error{
          fmt::format("--tool-choice '{}' names no tool of --tools; accepted: auto, "
                      "required, none, or one of the tools' names",
                      choice)};
    }
  }
  switch (api) {
    case ApiKind::kChat:
    case ApiKind::kOllamaChat:
      b.tools = tools;
      if (api == ApiKind::kOllamaChat || choice.empty()) break;  // Ollama has no tool_choice
      b.tool_choice = named ? json{{"type", "function"}, {"function", {{"name", choice}}}}
                            : json(std::string(choice));
      break;
    case ApiKind::kAnthropic:
      b.tools = json::array();
      for (const json& t : tools) {
        const json& fn = t["function"];
        json a = {{"name", fn["name"]},
                  {"input_schema", fn.value("parameters", json{{"type", "object"}})}};
        if (fn.contains("description")) a["description"] = fn["description"];
        b.tools.push_back(std::move(a));
      }
      if (choice == "auto") b.tool_choice = {{"type", "auto"}};
      if (choice == "required") b.tool_choice = {{"type", "any"}};
      if (choice == "none") b.tool_choice = {{"type", "none"}};
      if (named) b.tool_choice = {{"type", "tool"}, {"name", choice}};
      break;
    case ApiKind::kResponses:
      b.tools = json::array();
      for (const json& t : tools) {
        json r = t["function"];
        r["type"] = "function";
        b.tools.push_back(std::move(r));
      }
      if (choice.empty()) break;
      b.tool_choice =
          named ? json{{"type", "function"}, {"name", choice}} : json(std::string(choice));
      break;
    default:
      return Error{
          fmt::format("--tools needs a chat-style --api (chat, anthropic, responses, "
                      "ollama); --api {} has no tool calls",
                      api_kind_name(api))};
  }
  return b;
}

bool JsonCompletion::feed(std::string_view fragment) {
  if (state_ != State::kOpen) return complete();
  text_.append(fragment);
  for (; scanned_ < text_.size(); ++scanned_) {
    const char c = text_[scanned_];
    if (!begun_) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
      if (c != '{' && c != '[') {
        state_ = State::kFailed;
        return false;
      }
      begun_ = true;
      depth_ = 1;
      continue;
    }
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        // The top-level value closed: it is complete if it parses, and never will be otherwise.
        const std::string_view value(text_.data(), scanned_ + 1);
        state_ = json::accept(value) ? State::kComplete : State::kFailed;
        ++scanned_;
        return complete();
      }
    }
  }
  return false;
}

void JsonCompletion::reset() {
  text_.clear();
  scanned_ = 0;
  depth_ = 0;
  begun_ = in_string_ = escape_ = false;
  state_ = State::kOpen;
}

}  // namespace tokperf
