#include <algorithm>
#include "workload/datasets.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "workload/prompt.h"

namespace tokperf {
namespace {

using nlohmann::json;

// Splits into lines, calling f(line_no, line) for each non-blank one; stops at f's first error.
template <class F>
Status for_each_line(std::string_view text, F f) {
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    Status s = f(line_no, line);
    if (!s) return s;
  }
  return Status::Ok();
}

// Offsets from the first timestamp, scaled; checks order and range.
Status set_offset(Dataset& d, RequestSpec& s, double t_s, double& first_s, double& prev_s,
                  double speed, const std::function<Error(std::string_view)>& bad) {
  if (d.specs.empty()) {
    first_s = prev_s = t_s;
  } else if (t_s < prev_s) {
    return bad(
        fmt::format("timestamp {} s is earlier than the entry before ({} s); the file must "
                    "be sorted by time",
                    t_s, prev_s));
  }
  prev_s = t_s;
  const double ns = (t_s - first_s) / speed * 1e9;
  if (!(ns < 9.2e18))
    return bad("timestamp too far after the first (offsets must stay under 9.2e9 s)");
  s.timestamp_ns = std::llround(ns);
  return Status::Ok();
}

Status check_speed(double speed) {
  if (!(speed > 0) || !std::isfinite(speed)) {
    return Error{fmt::format(
        "time scale {} is not valid; expected a number > 0 (2 = twice as fast)", speed)};
  }
  return Status::Ok();
}

bool positive_int(const json& v, int64_t max = int64_t{1} << 40) {
  return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= max;
}

// 1-based line of byte offset `at` in text.
int64_t line_of(std::string_view text, size_t at) {
  at = std::min(at, text.size());
  int64_t n = 1;
  for (size_t i = 0; i < at; ++i) n += text[i] == '\n';
  return n;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// "YYYY-MM-DD HH:MM:SS[.frac]" (or with 'T'), or a plain number of seconds.
bool parse_timestamp(std::string_view s, double& out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '"')) s.remove_suffix(1);
  if (s.empty()) return false;
  if (s.size() >= 19 && s[4] == '-' && s[7] == '-' && (s[10] == ' ' || s[10] == 'T') &&
      s[13] == ':' && s[16] == ':') {
    auto num = [&](size_t at, size_t len, int64_t& v) {
      v = 0;
      for (size_t i = at; i < at + len; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
      }
      return true;
    };
    int64_t y, mo, d, h, mi, se;
    if (!num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, d) || !num(11, 2, h) || !num(14, 2, mi) ||
        !num(17, 2, se)) {
      return false;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return false;
    double frac = 0;
    std::string_view rest = s.substr(19);
    if (!rest.empty() && rest.back() == 'Z') rest.remove_suffix(1);
    if (!rest.empty()) {
      if (rest[0] != '.' || rest.size() < 2 || rest.size() > 13) return false;
      double scale = 0.1;
      for (char c : rest.substr(1)) {
        if (c < '0' || c > '9') return false;
        frac += (c - '0') * scale;
        scale /= 10;
      }
    }
    out = static_cast<double>(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se) + frac;
    return true;
  }
  std::string copy(s);
  char* end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && std::isfinite(out) && out >= 0;
}

std::vector<std::string_view> split_csv(std::string_view line) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (;;) {
    size_t c = line.find(',', pos);
    out.push_back(line.substr(pos, c == std::string_view::npos ? c : c - pos));
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  for (auto& f : out) {
    while (!f.empty() && (f.front() == ' ' || f.front() == '"')) f.remove_prefix(1);
    while (!f.empty() && (f.back() == ' ' || f.back() == '"')) f.remove_suffix(1);
  }
  return out;
}

bool parse_count(std::string_view s, int64_t& v) {
  if (s.empty() || s.size() > 12) return false;
  v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  return true;
}

}  // namespace

const char* dataset_kind_name(DatasetKind k) {
  switch (k) {
    case DatasetKind::kShareGpt:
      return "sharegpt";
    case DatasetKind::kJsonl:
      return "jsonl";
    case DatasetKind::kMooncake:
      return "mooncake";
    case DatasetKind::kAzure:
      return "azure";
  }
  return "?";
}

Result<DatasetRef> parse_dataset_ref(std::string_view text) {
  const size_t colon = text.find(':');
  auto bad = [&] {
    return Error{
        fmt::format("--dataset '{}' is not KIND:FILE; accepted kinds: sharegpt, jsonl, "
                    "mooncake, azure (e.g. --dataset sharegpt:ShareGPT_V3.json)",
                    text)};
  };
  if (colon == std::string_view::npos || colon + 1 >= text.size()) return bad();
  DatasetRef r;
  const std::string_view kind = text.substr(0, colon);
  r.path = std::string(text.substr(colon + 1));
  if (kind == "sharegpt") {
    r.kind = DatasetKind::kShareGpt;
  } else if (kind == "jsonl") {
    r.kind = DatasetKind::kJsonl;
  } else if (kind == "mooncake") {
    r.kind = DatasetKind::kMooncake;
  } else if (kind == "azure") {
    r.kind = DatasetKind::kAzure;
  } else {
    return bad();
  }
  return r;
}

int64_t estimate_tokens(std::string_view text) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return std::max<int64_t>(1, std::llround(static_cast<double>(words) * kApproxTokensPerWord));
}

Result<Dataset> parse_sharegpt(std::string_view text, std::string_view name) {
  Dataset d;
  d.kind = DatasetKind::kShareGpt;
  d.path = std::string(name);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Error{
        fmt::format("{} line {}: not valid JSON ({}); expected a ShareGPT file: an array "
                    "of {{\"conversations\": [{{\"from\": \"human\", \"value\": ...}}, "
                    "{{\"from\": \"gpt\", \"value\": ...}}]}}",
                    name, line_of(text, e.byte > 0 ? e.byte - 1 : 0), e.what())};
  } catch (const json::exception& e) {  // a number out of range (1e999): found by dataset_fuzz
    return Error{fmt::format("{}: not usable JSON ({}); expected a ShareGPT file: an array of "
                             "{{\"conversations\": [...]}} objects with numbers a double can hold",
                             name, e.what())};
  }
  if (!j.is_array()) {
    return Error{fmt::format("{}: expected a JSON array of conversations (ShareGPT layout)", name)};
  }
  for (size_t i = 0; i < j.size(); ++i) {
    const json& c = j[i];
    auto bad = [&](std::string_view why) {
      std::string id;
      if (c.is_object() && c.contains("id") && c["id"].is_string()) {
        id = fmt::format(" (id \"{}\")", c["id"].get<std::string>());
      }
      return Error{
          fmt::format("{} entry {}{}: {}; expected {{\"conversations\": [{{\"from\": "
                      "\"human\", \"value\": \"...\"}}, {{\"from\": \"gpt\", \"value\": "
                      "\"...\"}}]}}",
                      name, i + 1, id, why)};
    };
    if (!c.is_object()) return bad("not an object");
    if (!c.contains("conversations") || !c["conversations"].is_array()) {
      return bad("\"conversations\" is missing or not an array");
    }
    const json& turns = c["conversations"];
    for (const json& t : turns) {
      if (!t.is_object() || !t.contains("from") || !t["from"].is_string() || !t.contains("value") ||
          !t["value"].is_string()) {
        return bad("a turn is not {\"from\": string, \"value\": string}");
      }
    }
    // The first human turn followed by a reply.
    bool found = false;
    for (size_t k = 0; k + 1 < turns.size(); ++k) {
      const std::string from = turns[k]["from"].get<std::string>();
      if (from != "human" && from != "user") continue;
      RequestSpec s;
      s.prompt = turns[k]["value"].get<std::string>();
      if (s.prompt.empty()) break;
      s.input_tokens = estimate_tokens(s.prompt);
      d.replies.push_back(turns[k + 1]["value"].get<std::string>());
      s.output_tokens = estimate_tokens(d.replies.back());
      s.source_line = static_cast<int>(std::min<size_t>(i + 1, INT32_MAX));
      if (c.contains("id") && c["id"].is_string()) s.session_id = c["id"].get<std::string>();
      d.specs.push_back(std::move(s));
      found = true;
      break;
    }
    if (!found) ++d.skipped;
  }
  if (d.specs.empty()) {
    return Error{
        fmt::format("{}: no conversation has a human turn followed by a reply ({} "
                    "entries); nothing to send",
                    name, j.size())};
  }
  return d;
}

Result<Dataset> parse_jsonl_dataset(std::string_view text, std::string_view name, double speed) {
  if (Status s = check_speed(speed); !s) return Error{s.error()};
  Dataset d;
  d.kind = DatasetKind::kJsonl;
  d.path = std::string(name);
  double first_s = 0, prev_s = 0;
  int timed = 0;
  Status st = for_each_line(text, [&](int line_no, std::string_view line) -> Status {
    std::function<Error(std::string_view)> bad = [&](std::string_view why) {
      return Error{fmt::format("{} line {}: {}", name, line_no, why)};
    };
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return bad(
          "not a JSON object; expected {\"prompt\": \"...\"} or {\"messages\": [{\"role\": "
          "\"user\", \"content\": \"...\"}]} with optional \"output_tokens\", "
          "\"session_id\", \"turn\", \"timestamp\"");
    }
    RequestSpec s;
    s.source_line = line_no;
    const bool has_prompt = j.contains("prompt"), has_messages = j.contains("messages");
    if (has_prompt == has_messages) {
      return bad(
          "needs exactly one of \"prompt\" (a string) or \"messages\" (an array of "
          "{\"role\", \"content\"})");
    }
    if (has_prompt) {
      if (!j["prompt"].is_string() || j["prompt"].get<std::string>().empty()) {
        return bad("\"prompt\" must be a non-empty string");
      }
      s.prompt = j["prompt"].get<std::string>();
    } else {
      const json& m = j["messages"];
      if (!m.is_array() || m.empty()) return bad("\"messages\" must be a non-empty array");
      for (const json& msg : m) {
        if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string() ||
            !msg.contains("content") || !msg["content"].is_string()) {
          return bad("each message must be {\"role\": string, \"content\": string}");
        }
        s.messages.push_back({msg["role"].get<std::string>(), msg["content"].get<std::string>()});
      }
      if (std::all_of(s.messages.begin(), s.messages.end(),
                      [](const auto& msg) { return msg.content.empty(); })) {
        return bad("\"messages\" must carry some text: every \"content\" here is empty");
      }
    }
    s.input_tokens = estimate_tokens(flat_prompt(s));
    if (j.contains("output_tokens")) {
      if (!positive_int(j["output_tokens"]))
        return bad("\"output_tokens\" must be a positive integer");
      s.output_tokens = j["output_tokens"].get<int64_t>();
    }
    const bool has_session = j.contains("session_id"), has_turn = j.contains("turn");
    if (has_session != has_turn) return bad("\"session_id\" and \"turn\" go together");
    if (has_session) {
      const json& sid = j["session_id"];
      if (sid.is_string()) {
        s.session_id = sid.get<std::string>();
      } else if (sid.is_number_integer()) {
        s.session_id = std::to_string(sid.get<int64_t>());
      } else {
        return bad("\"session_id\" must be a string or an integer");
      }
      if (!j["turn"].is_number_integer() || j["turn"].get<int64_t>() < 0 ||
          j["turn"].get<int64_t>() > 1'000'000) {
        return bad("\"turn\" must be an integer from 0");
      }
      s.turn = static_cast<int>(j["turn"].get<int64_t>());
    }
    const bool has_s = j.contains("timestamp"), has_ms = j.contains("timestamp_ms");
    if (has_s && has_ms) return bad("give \"timestamp\" (seconds) or \"timestamp_ms\", not both");
    if (has_s || has_ms) {
      const json& ts = has_s ? j["timestamp"] : j["timestamp_ms"];
      if (!ts.is_number() || !std::isfinite(ts.get<double>()) || ts.get<double>() < 0) {
        return bad(fmt::format("\"{}\" must be a non-negative number",
                               has_s ? "timestamp" : "timestamp_ms"));
      }
      const double t_s = has_s ? ts.get<double>() : ts.get<double>() / 1e3;
      if (timed != static_cast<int>(d.specs.size())) {
        return bad("has a timestamp but earlier lines do not; give every line one or none");
      }
      if (Status o = set_offset(d, s, t_s, first_s, prev_s, speed, bad); !o) return o;
      ++timed;
    } else if (timed > 0) {
      return bad("has no timestamp but earlier lines do; give every line one or none");
    }
    d.specs.push_back(std::move(s));
    return Status::Ok();
  });
  if (!st) return Error{st.error()};
  if (d.specs.empty()) return Error{fmt::format("{}: no entries (the file is empty)", name)};
  d.timed = timed == static_cast<int>(d.specs.size());
  return d;
}

Result<Dataset> parse_mooncake(std::string_view text, std::string_view name, double speed) {
  if (Status s = check_speed(speed); !s) return Error{s.error()};
  Dataset d;
  d.kind = DatasetKind::kMooncake;
  d.path = std::string(name);
  d.timed = true;
  double first_s = 0, prev_s = 0;
  Status st = for_each_line(text, [&](int line_no, std::string_view line) -> Status {
    std::function<Error(std::string_view)> bad = [&](std::string_view why) {
      return Error{
          fmt::format("{} line {}: {}; expected {{\"timestamp\": MS, \"input_length\": N, "
                      "\"output_length\": N, \"hash_ids\": [ids]}}",
                      name, line_no, why)};
    };
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
    if (!j.contains("timestamp") || !j["timestamp"].is_number() ||
        !std::isfinite(j["timestamp"].get<double>()) || j["timestamp"].get<double>() < 0) {
      return bad("\"timestamp\" (milliseconds) is missing or not a non-negative number");
    }
    if (!j.contains("input_length") || !positive_int(j["input_length"], 10'000'000)) {
      return bad("\"input_length\" is missing or not a positive integer");
    }
    if (!j.contains("output_length") || !positive_int(j["output_length"], 10'000'000)) {
      return bad("\"output_length\" is missing or not a positive integer");
    }
    std::vector<uint64_t> ids;
    if (j.contains("hash_ids")) {
      if (!j["hash_ids"].is_array()) return bad("\"hash_ids\" must be an array of integers");
      for (const json& h : j["hash_ids"]) {
        if (!h.is_number_integer()) return bad("\"hash_ids\" must be an array of integers");
        ids.push_back(h.is_number_unsigned() ? h.get<uint64_t>()
                                             : static_cast<uint64_t>(h.get<int64_t>()));
      }
    }
    RequestSpec s;
    s.source_line = line_no;
    s.input_tokens = j["input_length"].get<int64_t>();
    s.output_tokens = j["output_length"].get<int64_t>();
    if (Status o =
            set_offset(d, s, j["timestamp"].get<double>() / 1e3, first_s, prev_s, speed, bad);
        !o) {
      return o;
    }
    d.specs.push_back(std::move(s));
    d.block_ids.push_back(std::move(ids));
    return Status::Ok();
  });
  if (!st) return Error{st.error()};
  if (d.specs.empty()) return Error{fmt::format("{}: no entries (the file is empty)", name)};
  return d;
}

Result<Dataset> parse_azure_csv(std::string_view text, std::string_view name, double speed) {
  if (Status s = check_speed(speed); !s) return Error{s.error()};
  Dataset d;
  d.kind = DatasetKind::kAzure;
  d.path = std::string(name);
  d.timed = true;
  int col_t = -1, col_in = -1, col_out = -1;
  double first_s = 0, prev_s = 0;
  Status st = for_each_line(text, [&](int line_no, std::string_view line) -> Status {
    std::function<Error(std::string_view)> bad = [&](std::string_view why) {
      return Error{fmt::format("{} line {}: {}", name, line_no, why)};
    };
    auto fields = split_csv(line);
    if (col_t < 0) {
      for (size_t i = 0; i < fields.size(); ++i) {
        if (fields[i] == "TIMESTAMP") col_t = static_cast<int>(i);
        if (fields[i] == "ContextTokens") col_in = static_cast<int>(i);
        if (fields[i] == "GeneratedTokens") col_out = static_cast<int>(i);
      }
      if (col_t < 0 || col_in < 0 || col_out < 0) {
        col_t = -1;
        return bad("expected the header TIMESTAMP,ContextTokens,GeneratedTokens (any order)");
      }
      return Status::Ok();
    }
    const size_t need = static_cast<size_t>(std::max({col_t, col_in, col_out}));
    if (fields.size() <= need) {
      return bad(fmt::format("{} fields; the header has at least {}", fields.size(), need + 1));
    }
    RequestSpec s;
    s.source_line = line_no;
    double t_s = 0;
    if (!parse_timestamp(fields[static_cast<size_t>(col_t)], t_s)) {
      return bad(fmt::format("TIMESTAMP '{}' is not YYYY-MM-DD HH:MM:SS[.fraction] or seconds",
                             fields[static_cast<size_t>(col_t)]));
    }
    if (!parse_count(fields[static_cast<size_t>(col_in)], s.input_tokens) || s.input_tokens < 1) {
      return bad(fmt::format("ContextTokens '{}' is not a positive integer",
                             fields[static_cast<size_t>(col_in)]));
    }
    if (!parse_count(fields[static_cast<size_t>(col_out)], s.output_tokens) ||
        s.output_tokens < 1) {
      return bad(fmt::format("GeneratedTokens '{}' is not a positive integer",
                             fields[static_cast<size_t>(col_out)]));
    }
    if (Status o = set_offset(d, s, t_s, first_s, prev_s, speed, bad); !o) return o;
    d.specs.push_back(std::move(s));
    return Status::Ok();
  });
  if (!st) return Error{st.error()};
  if (col_t < 0) return Error{fmt::format("{}: empty (no header, no entries)", name)};
  if (d.specs.empty()) return Error{fmt::format("{}: a header but no entries", name)};
  return d;
}

Result<Dataset> load_dataset(const DatasetRef& ref, double speed) {
  std::ifstream in(ref.path, std::ios::binary);
  if (!in) {
    return Error{fmt::format("--dataset {}:{}: cannot open the file", dataset_kind_name(ref.kind),
                             ref.path)};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  switch (ref.kind) {
    case DatasetKind::kShareGpt:
      return parse_sharegpt(text, ref.path);
    case DatasetKind::kJsonl:
      return parse_jsonl_dataset(text, ref.path, speed);
    case DatasetKind::kMooncake:
      return parse_mooncake(text, ref.path, speed);
    case DatasetKind::kAzure:
      return parse_azure_csv(text, ref.path, speed);
  }
  return Error{"unknown dataset kind"};
}

}  // namespace tokperf
