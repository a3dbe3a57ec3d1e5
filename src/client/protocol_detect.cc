#include "client/protocol_detect.h"

#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/http_fetch.h"
#include "client/json_fields.h"

namespace tokperf {
namespace {

using json_fields::trim;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view first_line(std::string_view s) {
  size_t nl = s.find('\n');
  std::string_view l = nl == std::string_view::npos ? s : s.substr(0, nl);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  return l;
}

// The first `data:` payload of an SSE body, or "".
std::string_view first_sse_data(std::string_view body) {
  while (!body.empty()) {
    std::string_view l = first_line(body);
    if (starts_with(l, "data:")) {
      l.remove_prefix(5);
      if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
      return l;
    }
    size_t nl = body.find('\n');
    if (nl == std::string_view::npos) break;
    body.remove_prefix(nl + 1);
  }
  return {};
}

bool looks_like_sse(std::string_view body) {
  std::string_view l = first_line(trim(body));
  return starts_with(l, "data:") || starts_with(l, "event:") || starts_with(l, ":") ||
         starts_with(l, "id:") || starts_with(l, "retry:");
}

std::string suggestion(std::string_view api) {
  if (api.empty()) return "check --url and --api (accepted: " + std::string(api_kind_names()) + ")";
  return fmt::format("try --api {}", api);
}

}  // namespace

bool content_type_fits(ApiKind api, std::string_view content_type) {
  if (content_type.empty()) return true;
  const std::string ct = lower(content_type);
  if (contains(ct, "text/plain")) return true;
  if (framing_of(api) == Framing::kNdjson) {
    return contains(ct, "ndjson") || contains(ct, "application/json") || contains(ct, "jsonl") ||
           contains(ct, "json-seq");
  }
  return contains(ct, "text/event-stream");
}

std::string guess_api_of_event(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  if (j.contains("choices") && j["choices"].is_array()) {
    for (const auto& c : j["choices"]) {
      if (c.is_object() && c.contains("delta")) return "chat";
      if (c.is_object() && c.contains("text")) return "completions";
    }
    return "chat";
  }
  if (j.contains("type") && j["type"].is_string()) {
    const std::string t = j["type"].get<std::string>();
    if (starts_with(t, "message_") || starts_with(t, "content_block_") || t == "ping") {
      return "anthropic";
    }
    if (starts_with(t, "response.")) return "responses";
  }
  if (j.contains("done") && j.contains("message")) return "ollama";
  if (j.contains("done") && j.contains("response")) return "ollama-generate";
  if (j.contains("token") && j["token"].is_object()) return "tgi";
  if (j.contains("generated_text")) return "tgi";
  if (j.contains("content") && j.contains("stop")) return "llamacpp";
  return "";
}

std::string describe_foreign_stream(ApiKind expected, std::string_view content_type,
                                    std::string_view head) {
  const std::string_view body = trim(head);
  const std::string ct = content_type.empty() ? std::string("no content type")
                                              : fmt::format("content type '{}'", content_type);
  const std::string excerpt = body_excerpt(std::string(body.substr(0, 120)));
  const char* want = api_kind_name(expected);
  if (starts_with(body, "<") || contains(lower(content_type), "html")) {
    return fmt::format(
        "an HTML page arrived ({}: '{}') instead of a --api {} stream: the URL reaches a web page "
        "or a proxy's error page, not the model server; check --url and --api",
        ct, excerpt, want);
  }
  if (framing_of(expected) == Framing::kSse && !looks_like_sse(body) && starts_with(body, "{")) {
    const std::string guess = guess_api_of_event(first_line(body));
    return fmt::format(
        "newline-delimited JSON arrived ({}: '{}'), not the server-sent events --api {} "
        "expects{}; {}",
        ct, excerpt, want, guess.empty() ? "" : fmt::format(" (it looks like --api {})", guess),
        suggestion(guess.empty() ? std::string("ollama") : guess));
  }
  if (framing_of(expected) == Framing::kNdjson && looks_like_sse(body)) {
    const std::string guess = guess_api_of_event(first_sse_data(body));
    return fmt::format(
        "server-sent events arrived ({}: '{}'), not the newline-delimited JSON --api {} "
        "expects{}; {}",
        ct, excerpt, want, guess.empty() ? "" : fmt::format(" (they look like --api {})", guess),
        suggestion(guess));
  }
  // Same framing, another protocol's events.
  const std::string_view event =
      framing_of(expected) == Framing::kSse ? first_sse_data(body) : first_line(body);
  const std::string guess = guess_api_of_event(event);
  if (!guess.empty() && guess != want) {
    return fmt::format("the events are in another protocol than --api {} ({}: '{}'); {}", want, ct,
                       excerpt, suggestion(guess));
  }
  return "";
}

}  // namespace tokperf
