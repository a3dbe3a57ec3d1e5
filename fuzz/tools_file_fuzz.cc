// Fuzz target for the --tools file reader, parse_tools_json (client/tool_call.h), and the per-API
// conversion of what it accepts (tools_for_api). Invariants: an error names the file; an accepted
// file gives a non-empty array of {"type": "function", "function": {"name": non-empty string}}
// that parses again to itself; every chat-style protocol accepts it with tool_choice "", "auto" or
// the first tool's name; completions-style protocols refuse it. See docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "client/tool_call.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "tools_file_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tokperf::ApiKind;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tokperf::parse_tools_json(text, "fuzz.json");
  if (!r.ok()) {
    check(r.error().find("'fuzz.json'") != std::string::npos, "an error does not name the file");
    return 0;
  }
  const nlohmann::json& tools = *r;
  check(tools.is_array() && !tools.empty(), "accepted tools are not a non-empty array");
  for (const auto& t : tools) {
    check(t.is_object() && t.value("type", "") == "function", "a tool is not of type function");
    check(t.contains("function") && t["function"].is_object(), "a tool has no function object");
    const auto& name = t["function"]["name"];
    check(name.is_string() && !name.get<std::string>().empty(), "a tool has no name");
  }
  auto again = tokperf::parse_tools_json(tools.dump(), "fuzz.json");
  check(again.ok() && *again == tools, "the accepted tools do not parse again to themselves");
  const std::string first = tokperf::first_tool_name(tools);
  check(!first.empty(), "no first tool name");
  for (ApiKind api :
       {ApiKind::kChat, ApiKind::kAnthropic, ApiKind::kResponses, ApiKind::kOllamaChat}) {
    for (const std::string& choice : {std::string(), std::string("auto"), first}) {
      auto b = tokperf::tools_for_api(tools, choice, api);
      check(b.ok(), "a chat-style protocol refused accepted tools");
      check(b->tools.is_array() && b->tools.size() == tools.size(), "tools lost in conversion");
    }
  }
  for (ApiKind api : {ApiKind::kCompletions, ApiKind::kTgi, ApiKind::kLlamaCpp}) {
    check(!tokperf::tools_for_api(tools, "", api).ok(), "a completions-style protocol took tools");
  }
  return 0;
}
