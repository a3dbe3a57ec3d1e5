#include "report/record_reader.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "client/target_config.h"

namespace tokperf {
namespace {

using nlohmann::json;

int64_t ms_to_ns_exact(double ms) { return std::llround(ms * 1e6); }

const json* field(const json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

double number_or(const json& j, const char* name, double fallback) {
  const json* f = field(j, name);
  return f != nullptr && f->is_number() ? f->get<double>() : fallback;
}

int64_t count_or(const json& j, const char* name, int64_t fallback) {
  const json* f = field(j, name);
  return f != nullptr && f->is_number() ? f->get<int64_t>() : fallback;
}

ErrorKind error_kind_named(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(ErrorKind::kOther); ++k) {
    if (name == error_kind_name(static_cast<ErrorKind>(k))) return static_cast<ErrorKind>(k);
  }
  return ErrorKind::kOther;
}

}  // namespace

Result<RequestTimeline> timeline_from_record(const json& r) {
  if (!r.is_object()) return Error{"a record is not a JSON object"};
  for (const char* need : {"seq", "phase", "level", "start_unix_us", "queue_ms", "token_events"}) {
    if (field(r, need) == nullptr) return Error{fmt::format("the record has no '{}'", need)};
  }
  RequestTimeline t;
  t.seq = r["seq"].get<uint64_t>();
  t.request_id = r.value("request_id", std::string());
  const std::string phase = r["phase"].get<std::string>();
  if (phase == "warmup") {
    t.phase = Phase::kWarmup;
  } else if (phase == "measure") {
    t.phase = Phase::kMeasure;
  } else if (phase == "cooldown") {
    t.phase = Phase::kCooldown;
  } else {
    return Error{fmt::format("phase '{}' is not warmup, measure or cooldown", phase)};
  }
  t.level = r["level"].get<int>();
  t.start_unix_us = r["start_unix_us"].get<int64_t>();
  t.send_ns = t.start_unix_us * 1000;
  t.intended_ns = t.send_ns - ms_to_ns_exact(r["queue_ms"].get<double>());
  t.connect_ms = number_or(r, "connect_ms", -1);
  t.ttfb_ms = number_or(r, "ttfb_ms", -1);
  if (const json* end = field(r, "end_ms"))
    t.end_ns = t.send_ns + ms_to_ns_exact(end->get<double>());

  const int64_t n = r["token_events"].get<int64_t>();
  if (n > 0) {
    const json* ttft = field(r, "ttft_ms");
    const json* itl = field(r, "itl_ms");
    if (ttft == nullptr || itl == nullptr || !itl->is_array() ||
        static_cast<int64_t>(itl->size()) != n - 1) {
      return Error{"a record with token events lacks ttft_ms or a matching itl_ms"};
    }
    const json* chars = field(r, "content_chars");
    const json* counts = field(r, "token_counts");
    int64_t at = t.send_ns + ms_to_ns_exact(ttft->get<double>());
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) {
        const json& gap = (*itl)[static_cast<size_t>(i - 1)];
        if (!gap.is_number()) return Error{"itl_ms holds a null"};
        at += ms_to_ns_exact(gap.get<double>());
      }
      TokenEvent e{at};
      const auto k = static_cast<size_t>(i);
      if (chars != nullptr && chars->is_array() && k < chars->size()) {
        e.chars = (*chars)[k].get<int32_t>();
        e.visible = e.chars > 0;
      }
      if (counts != nullptr && counts->is_array() && k < counts->size()) {
        e.tokens = (*counts)[k].get<int32_t>();
      }
      t.token_events.push_back(e);
    }
  }
  if (const json* ttfo = field(r, "ttfo_ms")) {
    t.first_visible_ns = t.send_ns + ms_to_ns_exact(ttfo->get<double>());
  }
  t.chunks = static_cast<int32_t>(count_or(r, "chunks", 0));
  t.saw_done = r.value("saw_done", false);
  t.http_status = static_cast<int>(count_or(r, "http_status", 0));
  if (r.value("output_tokens_source", std::string()) == "usage") {
    t.usage_completion_tokens = count_or(r, "output_tokens", -1);
  }
  // prompt_tokens is usage's when reported, else what was sent: either way the same metric.
  t.usage_prompt_tokens = count_or(r, "prompt_tokens", -1);
  t.prompt_tokens_sent = t.usage_prompt_tokens;
  t.requested_input_tokens = count_or(r, "requested_input_tokens", -1);
  t.requested_output_tokens = count_or(r, "requested_output_tokens", -1);
  t.prefix_group = static_cast<int>(count_or(r, "prefix_group", -1));
  // The method's name is one of a fixed set (client/target_config.h); the record keeps its own.
  if (const json* method = field(r, "input_tokens_method"); method && method->is_string()) {
    for (LengthMethod m : {LengthMethod::kNone, LengthMethod::kServerTokenize,
                           LengthMethod::kTokenizer, LengthMethod::kUsageCalibrated,
                           LengthMethod::kApproximate, LengthMethod::kSimulator}) {
      if (*method == length_method_name(m)) t.input_tokens_method = length_method_name(m);
    }
  }
  t.usage_cached_tokens = count_or(r, "cached_tokens", -1);
  if (const json* sid = field(r, "session_id")) {
    const std::string s = sid->get<std::string>();
    const size_t dot = s.find('.');
    t.session = std::stoll(dot == std::string::npos ? s : s.substr(dot + 1));
    t.turn = static_cast<int32_t>(count_or(r, "turn", 0));
  }
  if (r.contains("tool_call_ms")) {
    t.tools_sent = true;
    if (const json* tc = field(r, "tool_call_ms")) {
      t.tool_call_ns = t.send_ns + ms_to_ns_exact(tc->get<double>());
    }
    t.tool_call_seen = r.value("tool_call_seen", false);
  }
  if (const json* src = field(r, "server_timings_source")) {
    ServerTimings& sv = t.server;
    sv.source = src->get<std::string>();
    sv.prompt_ms = number_or(r, "server_prompt_ms", -1);
    sv.decode_ms = number_or(r, "server_decode_ms", -1);
    sv.decode_per_token_ms = number_or(r, "server_decode_per_token_ms", -1);
    sv.queue_ms = number_or(r, "server_queue_ms", -1);
    sv.ttft_ms = number_or(r, "server_ttft_ms", -1);
    sv.load_ms = number_or(r, "server_load_ms", -1);
    sv.total_ms = number_or(r, "server_total_ms", -1);
    sv.prompt_tokens = count_or(r, "server_prompt_tokens", -1);
    sv.cached_tokens = count_or(r, "server_cached_tokens", -1);
    sv.predicted_tokens = count_or(r, "server_predicted_tokens", -1);
  }
  if (const json* err = field(r, "error")) {
    t.error.kind = error_kind_named(err->value("kind", std::string("other")));
    t.error.http_status = static_cast<int>(count_or(*err, "http_status", 0));
    t.error.message = err->value("message", std::string());
  } else if (!r.value("ok", true)) {
    t.error.kind = ErrorKind::kOther;
  }
  return t;
}

RecordFileReader::~RecordFileReader() {
  if (file_ != nullptr) std::fclose(file_);
}

Status RecordFileReader::open(const std::string& path) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) return Error{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  return Status::Ok();
}

Result<std::optional<RequestTimeline>> RecordFileReader::next() {
  std::string text;
  for (;;) {
    text.clear();
    int c;
    while ((c = std::fgetc(file_)) != EOF && c != '\n') text.push_back(static_cast<char>(c));
    if (c == EOF && text.empty()) return std::optional<RequestTimeline>();
    ++line_;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      if (c == EOF) {
        ++torn_;  // the writer died mid-line
        return std::optional<RequestTimeline>();
      }
      return Error{fmt::format("{} line {} is not JSON", path_, line_)};
    }
    auto t = timeline_from_record(j);
    if (!t) return Error{fmt::format("{} line {}: {}", path_, line_, t.error())};
    return std::optional<RequestTimeline>(std::move(*t));
  }
}

}  // namespace tokperf
