// Script: names of its enums and the JSON overrides carried by the X-Test-Script header.
#include <string>

#include "support/scripted_server.h"

namespace tokperf::testing_support {

namespace {

constexpr std::pair<Fault, const char*> kFaultNames[] = {
    {Fault::kNone, "none"},
    {Fault::kHttp500, "http500"},
    {Fault::kHttp429, "http429"},
    {Fault::kHttp401, "http401"},
    {Fault::kDisconnect, "disconnect"},
    {Fault::kMalformedJson, "malformed_json"},
    {Fault::kStall, "stall"},
    {Fault::kNonStreaming, "non_streaming"},
    {Fault::kHang, "hang"},
};

}  // namespace

const char* fault_name(Fault f) {
  for (const auto& [fault, name] : kFaultNames) {
    if (fault == f) return name;
  }
  return "unknown";
}

Result<Fault> parse_fault(const std::string& name) {
  for (const auto& [fault, n] : kFaultNames) {
    if (name == n) return fault;
  }
  return Error{"unknown fault '" + name +
               "' (expected none, http500, http429, http401, disconnect, malformed_json, stall, "
               "non_streaming or hang)"};
}

Status Script::apply_json(const nlohmann::json& j) {
  if (!j.is_object()) return Error{"test script: expected a JSON object"};
  try {
    for (const auto& [key, v] : j.items()) {
      if (key == "ttft_ms") {
        ttft_ms = v.get<double>();
      } else if (key == "itl_ms") {
        itl_ms = v.get<double>();
      } else if (key == "jitter_ms") {
        jitter_ms = v.get<double>();
      } else if (key == "tokens") {
        tokens = v.get<int>();
      } else if (key == "tokens_per_chunk") {
        tokens_per_chunk = std::max(1, v.get<int>());
      } else if (key == "role") {
        auto s = v.get<std::string>();
        if (s == "none") {
          role = RoleEvent::kNone;
        } else if (s == "with_first") {
          role = RoleEvent::kWithFirstToken;
        } else if (s == "early") {
          role = RoleEvent::kEarly;
        } else {
          return Error{"test script: role '" + s + "' (expected none, with_first or early)"};
        }
      } else if (key == "reasoning_tokens") {
        reasoning_tokens = v.get<int>();
      } else if (key == "tool_calls") {
        tool_calls = v.get<bool>();
      } else if (key == "tool_json_at") {
        tool_json_at = v.get<int>();
      } else if (key == "line_ending") {
        auto s = v.get<std::string>();
        if (s == "lf") {
          line_ending = LineEnding::kLf;
        } else if (s == "crlf") {
          line_ending = LineEnding::kCrlf;
        } else if (s == "cr") {
          line_ending = LineEnding::kCr;
        } else {
          return Error{"test script: line_ending '" + s + "' (expected lf, crlf or cr)"};
        }
      } else if (key == "comment_every") {
        comment_every = v.get<int>();
      } else if (key == "split_writes") {
        split_writes = v.get<bool>();
      } else if (key == "split_gap_ms") {
        split_gap_ms = v.get<double>();
      } else if (key == "send_done") {
        send_done = v.get<bool>();
      } else if (key == "fault") {
        auto f = parse_fault(v.get<std::string>());
        if (!f.ok()) return Error{"test script: " + f.error()};
        fault = *f;
      } else if (key == "fault_at_token") {
        fault_at_token = v.get<int>();
      } else if (key == "stall_ms") {
        stall_ms = v.get<double>();
      } else if (key == "retry_after_s") {
        retry_after_s = v.get<int>();
      } else {
        return Error{"test script: unknown key '" + key + "'"};
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("test script: wrong type: ") + e.what()};
  }
  return Status::Ok();
}

}  // namespace tokperf::testing_support
