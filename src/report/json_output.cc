#include "report/json_output.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>

#include <fmt/format.h>

namespace tokperf {
namespace {

using nlohmann::json;

// The transport writes -1 for "unknown" connect/ttfb times; the file says null.
json ms_or_null_if_negative(double ms) { return ms < 0 ? json(nullptr) : json_number_or_null(ms); }

json count_or_null(int64_t n) { return n < 0 ? json(nullptr) : json(n); }

std::string errno_text() { return std::strerror(errno); }

}  // namespace

json json_number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json request_record_json(const RequestTimeline& t, const RequestMetrics& m) {
  json itl = json::array();
  for (double gap : m.itl_ms) itl.push_back(json_number_or_null(gap));
  // Arrival of each token event from send, and its visible characters: what perceived-speed
  // figures (time to N characters, reading stall) are computed from.
  json token_ms = json::array();
  json content_chars = json::array();
  for (const TokenEvent& e : t.token_events) {
    token_ms.push_back(std::round((e.t_ns - t.send_ns) / 1e3) / 1e3);
    content_chars.push_back(e.chars);
  }
  json error = nullptr;
  if (!t.ok()) {
    error = {{"kind", error_kind_name(t.error.kind)},
             {"http_status", t.error.http_status != 0 ? json(t.error.http_status) : json(nullptr)},
             {"message", t.error.message}};
  }
  // Key order is not significant (nlohmann sorts keys); the schema document lists them.
  json record = {
      {"schema_version", kRequestsSchemaVersion},
      {"seq", t.seq},
      {"request_id", t.request_id},
      {"phase", phase_name(t.phase)},
      {"level", t.level},
      {"ok", t.ok()},
      {"error", error},
      {"http_status", t.http_status != 0 ? json(t.http_status) : json(nullptr)},
      {"start_unix_us", t.start_unix_us},
      // Wall-clock label of the intended start (open loop: the schedule; closed loop: the send).
      {"intended_unix_us", t.start_unix_us - (t.send_ns - t.intended_ns) / 1000},
      {"queue_ms", json_number_or_null(m.queue_ms)},
      {"connect_ms", ms_or_null_if_negative(t.connect_ms)},
      {"ttfb_ms", ms_or_null_if_negative(t.ttfb_ms)},
      {"ttft_ms", json_number_or_null(m.ttft_ms)},
      {"ttfo_ms", json_number_or_null(m.ttfo_ms)},
      {"tpot_ms", json_number_or_null(m.tpot_ms)},
      {"e2e_ms", json_number_or_null(m.e2e_ms)},
      {"end_ms", json_number_or_null(m.end_ms)},
      {"ttft_from_intended_ms", json_number_or_null(m.ttft_from_intended_ms)},
      {"e2e_from_intended_ms", json_number_or_null(m.e2e_from_intended_ms)},
      {"itl_ms", std::move(itl)},
      {"token_ms", std::move(token_ms)},
      {"content_chars", std::move(content_chars)},
      {"output_tokens", m.output_tokens},
      {"output_tokens_source", m.output_tokens_from_usage ? "usage" : "counted"},
      {"token_events", t.token_events.size()},
      {"prompt_tokens", count_or_null(m.prompt_tokens)},
      {"chunks", t.chunks},
      {"saw_done", t.saw_done},
      {"requested_input_tokens", count_or_null(t.requested_input_tokens)},
      {"requested_output_tokens", count_or_null(t.requested_output_tokens)},
      {"input_tokens_method", t.input_tokens_method != nullptr && t.requested_input_tokens >= 0
                                  ? json(t.input_tokens_method)
                                  : json(nullptr)},
      {"prefix_group", t.prefix_group >= 0 ? json(t.prefix_group) : json(nullptr)},
      {"cached_tokens", count_or_null(t.cached_prompt_tokens())},
  };
  // Tokens per event, only when the server said (continuous usage): what the per-token ITL and
  // the usage check use, so a merge rebuilds them exactly.
  for (const TokenEvent& e : t.token_events) {
    if (e.tokens < 0) continue;
    json counts = json::array();
    for (const TokenEvent& f : t.token_events) counts.push_back(f.tokens);
    record["token_counts"] = std::move(counts);
    break;
  }
  // Multi-turn sessions and tool calls: present only on such requests.
  if (t.session >= 0) {
    record["session_id"] = fmt::format("{}.{}", t.level, t.session);
    record["turn"] = t.turn;
  }
  if (t.tools_sent) {
    record["tool_call_ms"] = json_number_or_null(m.tool_call_ms);
    record["tool_call_complete"] = t.tool_call_ns != 0;
    record["tool_call_seen"] = t.tool_call_seen;
  }
  // What the server reported about the request (docs/requests-schema.md, "server_*"): present only
  // when the protocol carried timings, each null when that one was not given.
  const ServerTimings& sv = t.server;
  if (sv.present()) {
    record["server_timings_source"] = sv.source;
    record["server_prompt_ms"] = ms_or_null_if_negative(sv.prompt_ms);
    record["server_decode_ms"] = ms_or_null_if_negative(sv.decode_ms);
    record["server_decode_per_token_ms"] = ms_or_null_if_negative(sv.decode_per_token_ms);
    record["server_queue_ms"] = ms_or_null_if_negative(sv.queue_ms);
    record["server_ttft_ms"] = ms_or_null_if_negative(sv.ttft_ms);
    record["server_load_ms"] = ms_or_null_if_negative(sv.load_ms);
    record["server_total_ms"] = ms_or_null_if_negative(sv.total_ms);
    record["server_prompt_tokens"] = count_or_null(sv.prompt_tokens);
    record["server_cached_tokens"] = count_or_null(sv.cached_tokens);
    record["server_predicted_tokens"] = count_or_null(sv.predicted_tokens);
  }
  return record;
}

namespace {

// requests.jsonl's writer without building a json object: the record request_record_json holds,
// keys in nlohmann's sorted order, null for non-finite, every double written so that it reads back
// bit for bit (the text equals dump()'s but where Grisu2 writes more digits than the shortest),
// at a fraction of the cost: a run writes one record per request, up to millions
// (issue 12: writing results is on the budget). tests/report/json_output_test.cc holds the two
// byte-for-byte equal.
class LineWriter {
 public:
  explicit LineWriter(std::string& out) : out_(out) {}
  void key(const char* k) {
    out_.push_back(first_ ? '{' : ',');
    first_ = false;
    out_.push_back('"');
    out_.append(k);
    out_.append("\":", 2);
  }
  void null() { out_.append("null", 4); }
  void boolean(bool b) { b ? out_.append("true", 4) : out_.append("false", 5); }
  template <typename Int>
  void integer(Int v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  void count_or_null(int64_t n) { n < 0 ? null() : integer(n); }
  void number(double v) {
    if (!std::isfinite(v)) return null();
    if (decimal_ns(v)) return;
    char buf[64];
    // nlohmann's own formatter, so the text is the one dump() writes.
    char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, end);
  }
  void ms_or_null_if_negative(double ms) { ms < 0 ? null() : number(ms); }
  // Most figures are whole nanoseconds in milliseconds (k / 10^6, correctly rounded), and the
  // shortest text that reads back as such a double is k's decimal with six places, trailing zeros
  // cut (no decimal of 15 or fewer digits other than k / 10^6 rounds to it): written with integer
  // arithmetic instead of a float-to-shortest search, the costliest part of a record. Values
  // nlohmann would write with an exponent (below 1e-4) or that are not such a quotient go the
  // general way; either way the value reads back exactly (tests/report/json_output_test.cc).
  bool decimal_ns(double v) {
    const double a = std::fabs(v);
    if (!(a >= 1e-4 && a < 1e9) && v != 0) return false;
    const double scaled = v * 1e6;
    const auto k = static_cast<int64_t>(std::llround(scaled));
    if (static_cast<double>(k) / 1e6 != v) return false;
    uint64_t u = k < 0 ? static_cast<uint64_t>(-k) : static_cast<uint64_t>(k);
    if (v < 0 || std::signbit(v)) out_.push_back('-');
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, u / 1'000'000);
    out_.append(buf, r.ptr);
    out_.push_back('.');
    uint64_t frac = u % 1'000'000;
    if (frac == 0) {
      out_.push_back('0');
      return true;
    }
    char digits[6];
    for (int i = 5; i >= 0; --i, frac /= 10) digits[i] = static_cast<char>('0' + frac % 10);
    int n = 6;
    while (digits[n - 1] == '0') --n;
    out_.append(digits, static_cast<size_t>(n));
    return true;
  }
  void string(std::string_view s) {
    const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
      return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
    });
    if (plain) {
      out_.push_back('"');
      out_.append(s);
      out_.push_back('"');
    } else {  // escapes and invalid UTF-8 exactly as dump(replace) treats them
      out_.append(json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace));
    }
  }
  template <typename F>
  void array(size_t n, F&& item) {
    out_.push_back('[');
    for (size_t i = 0; i < n; ++i) {
      if (i) out_.push_back(',');
      item(i);
    }
    out_.push_back(']');
  }
  void raw(std::string_view s) { out_.append(s); }
  void close() { out_.append(first_ ? "{}" : "}"); }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace

void append_request_record(std::string& out, const RequestTimeline& t, const RequestMetrics& m) {
  LineWriter w(out);
  const ServerTimings& sv = t.server;
  // Keys in byte order, as nlohmann's sorted object writes them.
  w.key("cached_tokens"), w.count_or_null(t.cached_prompt_tokens());
  w.key("chunks"), w.integer(t.chunks);
  w.key("connect_ms"), w.ms_or_null_if_negative(t.connect_ms);
  w.key("content_chars"), w.array(t.token_events.size(), [&](size_t i) {
    w.integer(t.token_events[i].chars);
  });
  w.key("e2e_from_intended_ms"), w.number(m.e2e_from_intended_ms);
  w.key("e2e_ms"), w.number(m.e2e_ms);
  w.key("end_ms"), w.number(m.end_ms);
  w.key("error");
  if (t.ok()) {
    w.null();
  } else {
    LineWriter e(out);
    e.key("http_status");
    t.error.http_status != 0 ? e.integer(t.error.http_status) : e.null();
    e.key("kind"), e.string(error_kind_name(t.error.kind));
    e.key("message"), e.string(t.error.message);
    e.close();
  }
  w.key("http_status");
  t.http_status != 0 ? w.integer(t.http_status) : w.null();
  w.key("input_tokens_method");
  t.input_tokens_method != nullptr && t.requested_input_tokens >= 0
      ? w.string(t.input_tokens_method)
      : w.null();
  w.key("intended_unix_us"), w.integer(t.start_unix_us - (t.send_ns - t.intended_ns) / 1000);
  w.key("itl_ms"), w.array(m.itl_ms.size(), [&](size_t i) { w.number(m.itl_ms[i]); });
  w.key("level"), w.integer(t.level);
  w.key("ok"), w.boolean(t.ok());
  w.key("output_tokens"), w.integer(m.output_tokens);
  w.key("output_tokens_source"), w.string(m.output_tokens_from_usage ? "usage" : "counted");
  w.key("phase"), w.string(phase_name(t.phase));
  w.key("prefix_group");
  t.prefix_group >= 0 ? w.integer(t.prefix_group) : w.null();
  w.key("prompt_tokens"), w.count_or_null(m.prompt_tokens);
  w.key("queue_ms"), w.number(m.queue_ms);
  w.key("request_id"), w.string(t.request_id);
  w.key("requested_input_tokens"), w.count_or_null(t.requested_input_tokens);
  w.key("requested_output_tokens"), w.count_or_null(t.requested_output_tokens);
  w.key("saw_done"), w.boolean(t.saw_done);
  w.key("schema_version"), w.integer(kRequestsSchemaVersion);
  w.key("seq"), w.integer(t.seq);
  if (sv.present()) {
    w.key("server_cached_tokens"), w.count_or_null(sv.cached_tokens);
    w.key("server_decode_ms"), w.ms_or_null_if_negative(sv.decode_ms);
    w.key("server_decode_per_token_ms"), w.ms_or_null_if_negative(sv.decode_per_token_ms);
    w.key("server_load_ms"), w.ms_or_null_if_negative(sv.load_ms);
    w.key("server_predicted_tokens"), w.count_or_null(sv.predicted_tokens);
    w.key("server_prompt_ms"), w.ms_or_null_if_negative(sv.prompt_ms);
    w.key("server_prompt_tokens"), w.count_or_null(sv.prompt_tokens);
    w.key("server_queue_ms"), w.ms_or_null_if_negative(sv.queue_ms);
    w.key("server_timings_source"), w.string(sv.source);
    w.key("server_total_ms"), w.ms_or_null_if_negative(sv.total_ms);
    w.key("server_ttft_ms"), w.ms_or_null_if_negative(sv.ttft_ms);
  }
  if (t.session >= 0) w.key("session_id"), w.string(fmt::format("{}.{}", t.level, t.session));
  w.key("start_unix_us"), w.integer(t.start_unix_us);
  // Tokens per event, only when the server said (see request_record_json).
  if (std::any_of(t.token_events.begin(), t.token_events.end(),
                  [](const TokenEvent& e) { return e.tokens >= 0; })) {
    w.key("token_counts"), w.array(t.token_events.size(), [&](size_t i) {
      w.integer(t.token_events[i].tokens);
    });
  }
  w.key("token_events"), w.integer(t.token_events.size());
  w.key("token_ms"), w.array(t.token_events.size(), [&](size_t i) {
    w.number(std::round((t.token_events[i].t_ns - t.send_ns) / 1e3) / 1e3);
  });
  if (t.tools_sent) {
    w.key("tool_call_complete"), w.boolean(t.tool_call_ns != 0);
    w.key("tool_call_ms"), w.number(m.tool_call_ms);
    w.key("tool_call_seen"), w.boolean(t.tool_call_seen);
  }
  w.key("tpot_ms"), w.number(m.tpot_ms);
  w.key("ttfb_ms"), w.ms_or_null_if_negative(t.ttfb_ms);
  w.key("ttfo_ms"), w.number(m.ttfo_ms);
  w.key("ttft_from_intended_ms"), w.number(m.ttft_from_intended_ms);
  w.key("ttft_ms"), w.number(m.ttft_ms);
  if (t.session >= 0) w.key("turn"), w.integer(t.turn);
  w.close();
}

json dist_stats_json(const DistStats& s) {
  json ci = json::object();
  const char* names[] = {"p50", "p90", "p95", "p99", "p99_9"};
  for (size_t i = 0; i < std::size(names); ++i) {
    if (s.count == 0) break;
    ci[names[i]] = json::array({json_number_or_null(s.ci95[i].lower),
                                json_number_or_null(s.ci95[i].upper)});
  }
  return {{"count", s.count},
          {"mean", json_number_or_null(s.mean)},
          {"std", json_number_or_null(s.std)},
          {"min", json_number_or_null(s.min)},
          {"p50", json_number_or_null(s.p50)},
          {"p90", json_number_or_null(s.p90)},
          {"p95", json_number_or_null(s.p95)},
          {"p99", json_number_or_null(s.p99)},
          {"p99_9", json_number_or_null(s.p999)},
          {"max", json_number_or_null(s.max)},
          {"ci95", ci}};
}

json level_summary_json(const LevelSummary& s) {
  json errors = json::object();
  json first_messages = json::object();
  for (const ErrorTally& e : s.errors) {
    errors[error_kind_name(e.kind)] = e.count;
    first_messages[error_kind_name(e.kind)] = {
        {"http_status", e.first_http_status != 0 ? json(e.first_http_status) : json(nullptr)},
        {"message", e.first_message}};
  }
  return {
      {"label", s.params.label},
      {"level", s.params.level},
      {"concurrency", s.params.concurrency > 0 ? json(s.params.concurrency) : json(nullptr)},
      {"target_rate_rps", json_number_or_null(s.params.target_rate_rps)},
      {"requests",
       {{"sent", s.sent},
        {"ok", s.ok},
        {"failed", s.failed},
        {"errors_by_kind", errors},
        {"first_error_by_kind", first_messages}}},
      {"output_tokens_source",
       {{"usage", s.output_tokens_from_usage}, {"counted", s.output_tokens_counted}}},
      {"token_count_check",
       {{"compared", s.token_count_check.compared},
        {"differing", s.token_count_check.differing},
        {"usage_minus_counted", s.token_count_check.usage_minus_counted},
        {"max_abs_difference", s.token_count_check.max_abs_difference}}},
      {"ttft_ms", dist_stats_json(s.ttft)},
      {"ttfo_ms", dist_stats_json(s.ttfo)},
      {"tpot_ms", dist_stats_json(s.tpot)},
      {"itl_ms", dist_stats_json(s.itl)},
      {"itl_per_token_ms", dist_stats_json(s.itl_per_token)},
      {"itl_exact", s.itl_exact},
      {"e2e_ms", dist_stats_json(s.e2e)},
      {"queue_ms", dist_stats_json(s.queue)},
      {"ttft_from_intended_ms", dist_stats_json(s.ttft_from_intended)},
      {"e2e_from_intended_ms", dist_stats_json(s.e2e_from_intended)},
      {"tokens",
       {{"prompt_total", s.prompt_tokens_total}, {"output_total", s.output_tokens_total}}},
      {"window_s", json_number_or_null(s.window_s)},
      {"throughput",
       {{"requests_per_s", json_number_or_null(s.request_throughput_rps)},
        {"output_tokens_per_s", json_number_or_null(s.output_token_throughput_tps)},
        {"total_tokens_per_s", json_number_or_null(s.total_token_throughput_tps)}}},
  };
}

static json noise_floor_json(const NoiseFloor& f) {
  if (!f.measured()) return nullptr;
  return {{"timer_samples", f.timer_samples},
          {"timer_lateness_ms",
           {{"p50", json_number_or_null(f.timer_lateness_p50_ms)},
            {"p99", json_number_or_null(f.timer_lateness_p99_ms)},
            {"max", json_number_or_null(f.timer_lateness_max_ms)}}},
          {"timer_slack_us", json_number_or_null(f.timer_slack_us)},
          {"round_trips", f.round_trips},
          {"loopback_rtt_ms",
           {{"p50", json_number_or_null(f.loopback_rtt_p50_ms)},
            {"p99", json_number_or_null(f.loopback_rtt_p99_ms)}}},
          {"error", f.error}};
}

// Several event loops: each loop's own figures; null with one loop.
static json loops_health_json(const ClientHealth& h) {
  if (h.loops.size() <= 1) return nullptr;
  json a = json::array();
  for (const LoopHealth& l : h.loops) {
    a.push_back({{"loop", l.loop},
                 {"loop_lag_ms",
                  {{"count", l.loop_lag_samples},
                   {"p50", json_number_or_null(l.loop_lag_p50_ms)},
                   {"p99", json_number_or_null(l.loop_lag_p99_ms)},
                   {"max", json_number_or_null(l.loop_lag_max_ms)}}},
                 {"cpu_s", json_number_or_null(l.cpu_s)},
                 {"cpu_utilisation_pct", json_number_or_null(l.cpu_utilisation_pct)},
                 {"peak_in_flight", l.peak_in_flight},
                 {"stream_events_per_s", json_number_or_null(l.stream_events_per_s)}});
  }
  return a;
}

json client_health_json(const ClientHealth& h) {
  return {
      {"loop_lag_ms",
       {{"count", h.loop_lag_samples},
        {"mean", json_number_or_null(h.loop_lag_mean_ms)},
        {"p50", json_number_or_null(h.loop_lag_p50_ms)},
        {"p99", json_number_or_null(h.loop_lag_p99_ms)},
        {"max", json_number_or_null(h.loop_lag_max_ms)}}},
      {"cpu_user_s", json_number_or_null(h.cpu_user_s)},
      {"cpu_system_s", json_number_or_null(h.cpu_system_s)},
      {"wall_s", json_number_or_null(h.wall_s)},
      {"cpu_utilisation_pct", json_number_or_null(h.cpu_utilisation_pct)},
      {"peak_in_flight", h.peak_in_flight},
      {"stream_events_per_s", json_number_or_null(h.stream_events_per_s)},
      {"distortable_ms", json_number_or_null(h.distortable_ms)},
      {"noise_floor", noise_floor_json(h.noise_floor)},
      {"loops", loops_health_json(h)},
      {"worst_loop", h.worst_loop >= 0 ? json(h.worst_loop) : json(nullptr)},
      {"warnings", h.warnings},
  };
}

json summary_json(const json& config_redacted, const std::vector<LevelSummary>& levels,
                  const ClientHealth& health, const RunInfo& run) {
  json lv = json::array();
  for (const LevelSummary& s : levels) lv.push_back(level_summary_json(s));
  return {
      {"schema_version", kSummarySchemaVersion},
      {"tokperf_version", TOKPERF_VERSION},
      {"command", run.command},
      {"started_unix_us", run.started_unix_us},
      {"duration_s", json_number_or_null(run.duration_s)},
      {"exit_reason", run.exit_reason},
      {"notes", run.notes},
      {"config", config_redacted},
      {"levels", std::move(lv)},
      {"client_health", client_health_json(health)},
  };
}

Status write_json_file(const std::string& path, const json& doc, int indent) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return Error{fmt::format("cannot create '{}': {}", tmp, errno_text())};
  const std::string text = doc.dump(indent, ' ', false, json::error_handler_t::replace) + "\n";
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fflush(f) == 0 && ok;
  ok = ::fsync(::fileno(f)) == 0 && ok;
  const std::string write_error = ok ? std::string() : errno_text();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return Error{fmt::format("cannot write '{}': {}", tmp,
                             write_error.empty() ? errno_text() : write_error)};
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    std::remove(tmp.c_str());
    return Error{fmt::format("cannot rename '{}' to '{}': {}", tmp, path, why)};
  }
  return Status::Ok();
}

// The writer thread of background mode and the batches it shares with the caller. A batch is
// filled by the caller, formatted and written by the thread, then handed back for reuse (its
// records' vectors keep their capacity, so a long run stops allocating).
struct RequestsJsonlWriter::Background {
  static constexpr size_t kBatch = 256;     // records per hand-over
  static constexpr size_t kMaxBatches = 8;  // in flight at most: ~256 x 8 records in memory
  struct Record {
    RequestTimeline t;
    RequestMetrics m;
  };
  struct Batch {
    std::vector<Record> records;
    size_t used = 0;
  };

  explicit Background(std::FILE* f, std::string path) : file(f), path(std::move(path)) {
    thread = std::thread([this] { run(); });
  }

  // Caller side.
  void add(const RequestTimeline& t, const RequestMetrics& m) {
    if (current == nullptr) current = take_free();
    Batch& b = *current;
    if (b.used < b.records.size()) {
      b.records[b.used].t = t;
      b.records[b.used].m = m;
    } else {
      b.records.push_back(Record{t, m});
    }
    if (++b.used == kBatch) hand_over();
  }
  // The first write error so far (Ok while none). The flag spares the caller the lock per record.
  Status status() {
    if (!failed.load(std::memory_order_acquire)) return Status::Ok();
    std::lock_guard lock(mu);
    return error;
  }
  // Writes what is left, stops the thread; the first error, if any, and the lines written.
  Status finish() {
    if (current != nullptr && current->used > 0) hand_over();
    {
      std::lock_guard lock(mu);
      done = true;
    }
    work.notify_one();
    thread.join();
    return error;
  }

  std::unique_ptr<Batch> take_free() {
    std::unique_lock lock(mu);
    room.wait(lock, [&] { return !spare.empty() || batches < kMaxBatches; });
    if (spare.empty()) {
      ++batches;
      auto b = std::make_unique<Batch>();
      b->records.reserve(kBatch);
      return b;
    }
    auto b = std::move(spare.front());
    spare.pop_front();
    return b;
  }
  void hand_over() {
    {
      std::lock_guard lock(mu);
      full.push_back(std::move(current));
    }
    work.notify_one();
  }

  // Writer thread.
  void run() {
    std::string text;
    for (;;) {
      std::unique_ptr<Batch> b;
      {
        std::unique_lock lock(mu);
        work.wait(lock, [&] { return !full.empty() || done; });
        if (full.empty()) return;
        b = std::move(full.front());
        full.pop_front();
      }
      if (!failed.load(std::memory_order_relaxed)) {
        text.clear();
        for (size_t i = 0; i < b->used; ++i) {
          append_request_record(text, b->records[i].t, b->records[i].m);
          text.push_back('\n');
        }
        if (std::fwrite(text.data(), 1, text.size(), file) != text.size()) {
          Status err = Error{fmt::format("cannot write '{}': {}", path, errno_text())};
          std::lock_guard lock(mu);
          error = std::move(err);
          failed.store(true, std::memory_order_release);
        } else {
          lines += static_cast<int64_t>(b->used);
        }
      }
      b->used = 0;
      {
        std::lock_guard lock(mu);
        spare.push_back(std::move(b));
      }
      room.notify_one();
    }
  }

  std::FILE* file;
  std::string path;
  std::unique_ptr<Batch> current;  // the caller's, not shared
  std::mutex mu;
  std::condition_variable work, room;
  std::deque<std::unique_ptr<Batch>> full, spare;
  size_t batches = 0;
  bool done = false;
  Status error = Status::Ok();      // under mu
  std::atomic<bool> failed{false};  // set once error is, after it
  int64_t lines = 0;  // the thread's until it has stopped
  std::thread thread;
};

RequestsJsonlWriter::RequestsJsonlWriter() = default;
RequestsJsonlWriter::~RequestsJsonlWriter() { (void)close(); }

Status RequestsJsonlWriter::open(const std::string& path) {
  if (Status s = close(); !s.ok()) return s;
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) return Error{fmt::format("cannot create '{}': {}", path, errno_text())};
  path_ = path;
  lines_ = 0;
  return Status::Ok();
}

void RequestsJsonlWriter::set_background(bool on) {
  if (on == (bg_ != nullptr) || file_ == nullptr) return;
  if (on) {
    // Whole batches go to the kernel in one write; a large buffer spares the copy for the rest.
    std::setvbuf(file_, nullptr, _IOFBF, size_t{1} << 20);
    bg_ = std::make_unique<Background>(file_, path_);
  } else {
    (void)bg_->finish();
    lines_ += bg_->lines;
    bg_.reset();
  }
}

Status RequestsJsonlWriter::write(const RequestTimeline& t, const RequestMetrics& m) {
  if (bg_ != nullptr) {
    if (Status st = bg_->status(); !st) return st;
    bg_->add(t, m);
    return Status::Ok();
  }
  line_.clear();
  append_request_record(line_, t, m);
  return write_text_line();
}

Status RequestsJsonlWriter::write_line(const json& record) {
  if (bg_ != nullptr) return Error{"requests.jsonl writer: write_line() in background mode"};
  // replace: a server's invalid UTF-8 in an error message must not throw on the hot path.
  line_ = record.dump(-1, ' ', false, json::error_handler_t::replace);
  return write_text_line();
}

Status RequestsJsonlWriter::write_text_line() {
  if (file_ == nullptr) return Error{"requests.jsonl writer is not open"};
  line_.push_back('\n');
  if (std::fwrite(line_.data(), 1, line_.size(), file_) != line_.size() ||
      (flush_each_line_ && std::fflush(file_) != 0)) {
    Status err = Error{fmt::format("cannot write '{}': {}", path_, errno_text())};
    std::fclose(file_);
    file_ = nullptr;
    return err;
  }
  ++lines_;
  return Status::Ok();
}

Status RequestsJsonlWriter::close() {
  if (file_ == nullptr) return Status::Ok();
  Status bg_status = Status::Ok();
  if (bg_ != nullptr) {
    bg_status = bg_->finish();
    lines_ += bg_->lines;
    bg_.reset();
  }
  const bool ok = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!bg_status) return bg_status;
  if (!ok) return Error{fmt::format("cannot close '{}': {}", path_, errno_text())};
  return Status::Ok();
}

}  // namespace tokperf
