#include "report/run_loader.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>
#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

namespace tokperf {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double num(const json& j, const char* key, double fallback = kNaN) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

int64_t integer(const json& j, const char* key, int64_t fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : fallback;
}

const json& child(const json& j, const char* key) {
  static const json kEmpty = json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

DistStats dist_from_json(const json& j) {
  DistStats d;
  d.count = integer(j, "count");
  d.mean = num(j, "mean");
  d.std = num(j, "std");
  d.min = num(j, "min");
  d.p50 = num(j, "p50");
  d.p90 = num(j, "p90");
  d.p95 = num(j, "p95");
  d.p99 = num(j, "p99");
  d.p999 = num(j, "p99_9");
  d.max = num(j, "max");
  if (auto it = j.find("ci95"); it != j.end() && it->is_object()) {
    const char* names[] = {"p50", "p90", "p95", "p99", "p99_9"};
    for (size_t i = 0; i < std::size(names); ++i) {
      auto c = it->find(names[i]);
      if (c == it->end() || !c->is_array() || c->size() != 2) continue;
      if ((*c)[0].is_number()) d.ci95[i].lower = (*c)[0].get<double>();
      if ((*c)[1].is_number()) d.ci95[i].upper = (*c)[1].get<double>();
    }
  }
  return d;
}

ErrorKind error_kind_from_name(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(ErrorKind::kOther); ++k) {
    if (name == error_kind_name(static_cast<ErrorKind>(k))) return static_cast<ErrorKind>(k);
  }
  return ErrorKind::kOther;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

}  // namespace

LevelSummary level_summary_from_json(const json& j) {
  LevelSummary s;
  s.params.label = j.value("label", "");
  s.params.level = static_cast<int>(integer(j, "level", -1));
  s.params.concurrency = static_cast<int>(integer(j, "concurrency", 0));
  s.params.target_rate_rps = num(j, "target_rate_rps");
  const json& req = child(j, "requests");
  s.sent = integer(req, "sent");
  s.ok = integer(req, "ok");
  s.failed = integer(req, "failed");
  const json& first = child(req, "first_error_by_kind");
  for (const auto& [name, count] : child(req, "errors_by_kind").items()) {
    ErrorTally e;
    e.kind = error_kind_from_name(name);
    e.count = count.is_number() ? count.get<int64_t>() : 0;
    const json& f = child(first, name.c_str());
    e.first_http_status = static_cast<int>(integer(f, "http_status"));
    e.first_message = f.value("message", "");
    s.errors.push_back(std::move(e));
  }
  const json& src = child(j, "output_tokens_source");
  s.output_tokens_from_usage = integer(src, "usage");
  s.output_tokens_counted = integer(src, "counted");
  const json& check = child(j, "token_count_check");
  s.token_count_check.compared = integer(check, "compared");
  s.token_count_check.differing = integer(check, "differing");
  s.token_count_check.usage_minus_counted = integer(check, "usage_minus_counted");
  s.token_count_check.max_abs_difference = integer(check, "max_abs_difference");
  s.ttft = dist_from_json(child(j, "ttft_ms"));
  s.ttfo = dist_from_json(child(j, "ttfo_ms"));
  s.tpot = dist_from_json(child(j, "tpot_ms"));
  s.itl = dist_from_json(child(j, "itl_ms"));
  s.itl_per_token = dist_from_json(child(j, "itl_per_token_ms"));
  s.itl_exact = j.value("itl_exact", true);
  s.e2e = dist_from_json(child(j, "e2e_ms"));
  s.queue = dist_from_json(child(j, "queue_ms"));
  s.ttft_from_intended = dist_from_json(child(j, "ttft_from_intended_ms"));
  s.e2e_from_intended = dist_from_json(child(j, "e2e_from_intended_ms"));
  const json& tok = child(j, "tokens");
  s.prompt_tokens_total = integer(tok, "prompt_total");
  s.output_tokens_total = integer(tok, "output_total");
  s.window_s = num(j, "window_s", 0);
  const json& tp = child(j, "throughput");
  s.request_throughput_rps = num(tp, "requests_per_s");
  s.output_token_throughput_tps = num(tp, "output_tokens_per_s");
  s.total_token_throughput_tps = num(tp, "total_tokens_per_s");
  return s;
}

ClientHealth client_health_from_json(const json& j) {
  ClientHealth h;
  const json& lag = child(j, "loop_lag_ms");
  h.loop_lag_samples = integer(lag, "count");
  h.loop_lag_mean_ms = num(lag, "mean");
  h.loop_lag_p50_ms = num(lag, "p50");
  h.loop_lag_p99_ms = num(lag, "p99");
  h.loop_lag_max_ms = num(lag, "max");
  h.cpu_user_s = num(j, "cpu_user_s", 0);
  h.cpu_system_s = num(j, "cpu_system_s", 0);
  h.wall_s = num(j, "wall_s", 0);
  h.cpu_utilisation_pct = num(j, "cpu_utilisation_pct");
  h.peak_in_flight = integer(j, "peak_in_flight");
  h.stream_events_per_s = num(j, "stream_events_per_s", 0);
  h.distortable_ms = num(j, "distortable_ms");
  if (auto nf = j.find("noise_floor"); nf != j.end() && nf->is_object()) {
    NoiseFloor& f = h.noise_floor;
    f.timer_samples = integer(*nf, "timer_samples");
    const json& tl = child(*nf, "timer_lateness_ms");
    f.timer_lateness_p50_ms = num(tl, "p50");
    f.timer_lateness_p99_ms = num(tl, "p99");
    f.timer_lateness_max_ms = num(tl, "max");
    f.timer_slack_us = num(*nf, "timer_slack_us");
    f.round_trips = integer(*nf, "round_trips");
    const json& rt = child(*nf, "loopback_rtt_ms");
    f.loopback_rtt_p50_ms = num(rt, "p50");
    f.loopback_rtt_p99_ms = num(rt, "p99");
    f.error = nf->value("error", "");
  }
  if (auto it = j.find("warnings"); it != j.end() && it->is_array()) {
    for (const json& w : *it)
      if (w.is_string()) h.warnings.push_back(w.get<std::string>());
  }
  return h;
}

RequestSample request_sample_from_json(const json& j) {
  RequestSample r;
  r.seq = integer(j, "seq");
  r.level = static_cast<int>(integer(j, "level"));
  r.measured = j.value("phase", "measure") == "measure";
  r.ok = j.value("ok", false);
  if (auto e = j.find("error"); e != j.end() && e->is_object()) r.error_kind = e->value("kind", "");
  r.start_unix_us = integer(j, "start_unix_us");
  r.queue_ms = num(j, "queue_ms", 0);
  r.ttft_ms = num(j, "ttft_ms");
  r.ttfo_ms = num(j, "ttfo_ms");
  r.tpot_ms = num(j, "tpot_ms");
  r.e2e_ms = num(j, "e2e_ms");
  r.end_ms = num(j, "end_ms");
  r.output_tokens = integer(j, "output_tokens");
  r.prompt_tokens = integer(j, "prompt_tokens", -1);
  auto numbers = [&](const char* key, auto& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) return;
    for (const json& v : *it) out.push_back(v.is_number() ? v.get<double>() : kNaN);
  };
  numbers("itl_ms", r.itl_ms);
  numbers("token_ms", r.token_ms);
  std::vector<double> chars;
  numbers("content_chars", chars);
  for (double c : chars) r.content_chars.push_back(std::isfinite(c) ? static_cast<int32_t>(c) : 0);
  return r;
}

namespace {

// One requests.jsonl line into a RequestSample, as request_sample_from_json(json::parse(line))
// gives it, with simdjson's on-demand parser: a report reads up to tens of thousands of records of
// a few kilobytes each, and this is most of its cost (issue 12). false: not a JSON object (or not
// valid JSON where it was read).
class SampleLineParser {
 public:
  bool parse(std::string_view line, RequestSample& r) {
    namespace od = simdjson::ondemand;
    padded_.assign(line);
    padded_.resize(line.size() + simdjson::SIMDJSON_PADDING);
    od::document doc;
    if (parser_.iterate(padded_.data(), line.size(), padded_.size()).get(doc)) return false;
    od::object obj;
    if (doc.get_object().get(obj)) return false;
    r = RequestSample{};
    r.ok = false;  // as the json path: a record without "ok" did not succeed
    bool have_error_kind = false;
    for (auto field : obj) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return false;
      od::value v;
      if (field.value().get(v)) return false;
      od::json_type type;
      if (v.type().get(type)) return false;
      const bool is_num = type == od::json_type::number;
      auto number = [&](double fallback) {
        double d;
        return is_num && !v.get_double().get(d) ? d : fallback;
      };
      auto integer = [&](int64_t fallback) -> int64_t {
        if (!is_num) return fallback;
        int64_t i;
        if (!v.get_int64().get(i)) return i;
        double d;
        return !v.get_double().get(d) ? static_cast<int64_t>(d) : fallback;
      };
      auto numbers = [&](auto& out) {
        if (type != od::json_type::array) return true;
        od::array a;
        if (v.get_array().get(a)) return false;
        for (auto e : a) {
          od::value x;
          if (e.get(x)) return false;
          od::json_type t;
          if (x.type().get(t)) return false;
          double d = RequestSample::kNaN;
          if (t == od::json_type::number && x.get_double().get(d)) return false;
          out.push_back(d);  // a non-number is skipped by the iteration itself
        }
        return true;
      };
      if (key == "seq") r.seq = integer(0);
      else if (key == "level") r.level = static_cast<int>(integer(0));
      else if (key == "phase") {
        std::string_view p;
        r.measured = type != od::json_type::string || (!v.get_string().get(p) && p == "measure");
      } else if (key == "ok") {
        bool b = false;
        r.ok = type == od::json_type::boolean && !v.get_bool().get(b) && b;
      } else if (key == "error" && type == od::json_type::object) {
        od::object e;
        if (v.get_object().get(e)) return false;
        for (auto f : e) {
          std::string_view k;
          if (f.unescaped_key().get(k)) return false;
          od::value x;
          if (f.value().get(x)) return false;
          std::string_view kind;
          if (k == "kind" && !x.get_string().get(kind)) {
            r.error_kind = std::string(kind);
            have_error_kind = true;
          }
        }
      } else if (key == "start_unix_us") r.start_unix_us = integer(0);
      else if (key == "queue_ms") r.queue_ms = number(0);
      else if (key == "ttft_ms") r.ttft_ms = number(RequestSample::kNaN);
      else if (key == "ttfo_ms") r.ttfo_ms = number(RequestSample::kNaN);
      else if (key == "tpot_ms") r.tpot_ms = number(RequestSample::kNaN);
      else if (key == "e2e_ms") r.e2e_ms = number(RequestSample::kNaN);
      else if (key == "end_ms") r.end_ms = number(RequestSample::kNaN);
      else if (key == "output_tokens") r.output_tokens = integer(0);
      else if (key == "prompt_tokens") r.prompt_tokens = integer(-1);
      else if (key == "itl_ms") { if (!numbers(r.itl_ms)) return false; }
      else if (key == "token_ms") { if (!numbers(r.token_ms)) return false; }
      else if (key == "content_chars") {
        chars_.clear();
        if (!numbers(chars_)) return false;
        for (double c : chars_) {
          r.content_chars.push_back(std::isfinite(c) ? static_cast<int32_t>(c) : 0);
        }
      }
    }
    (void)have_error_kind;
    // Nothing may follow the object (a torn line glued to the next one is malformed).
    const char* trailing = nullptr;
    return doc.current_location().get(trailing) == simdjson::OUT_OF_BOUNDS;
  }

 private:
  simdjson::ondemand::parser parser_;
  std::string padded_;
  std::vector<double> chars_;
};

}  // namespace

std::optional<ServerEvidence> server_evidence_from_json(const json& level) {
  if (!level.is_object() || !level.contains("server") || !level["server"].is_object()) {
    return std::nullopt;
  }
  const json& s = level["server"];
  if (!s.contains("concepts")) return std::nullopt;
  auto number = [](const json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : kNaN;
  };
  ServerEvidence e;
  e.engine = s.value("engine", std::string("unknown"));
  const json& concepts = s["concepts"];
  auto concept_field = [&](const char* name, const char* key) {
    return concepts.is_object() && concepts.contains(name) ? number(concepts[name], key) : kNaN;
  };
  e.waiting_mean = concept_field("waiting", "mean");
  e.waiting_max = concept_field("waiting", "max");
  e.kv_usage_max = concept_field("kv_usage", "max");
  e.preemptions = concept_field("preemptions", "delta");
  if (s.contains("ttft_decomposition")) {
    const json& d = s["ttft_decomposition"];
    e.client_ttft_mean_ms = number(d, "client_ttft_mean_ms");
    e.server_ttft_mean_ms = number(d, "server_ttft_mean_ms");
    e.queue_mean_ms = number(d, "queue_mean_ms");
    e.prefill_mean_ms = number(d, "prefill_mean_ms");
    e.outside_server_ms = number(d, "outside_server_ms");
  }
  return e;
}

Result<std::vector<TimeseriesRow>> parse_timeseries_csv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return std::vector<TimeseriesRow>{};
  auto split = [](const std::string& l) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream s(l);
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    if (!l.empty() && l.back() == ',') cells.emplace_back();
    return cells;
  };
  std::vector<std::string> header = split(line);
  std::vector<TimeseriesRow> rows;
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string> cells = split(line);
    if (cells.size() != header.size()) {
      return Error{fmt::format("line {} has {} fields, the header has {}", line_no, cells.size(),
                               header.size())};
    }
    std::map<std::string, double> v;
    for (size_t i = 0; i < cells.size(); ++i) {
      v[header[i]] = cells[i].empty() ? kNaN : std::strtod(cells[i].c_str(), nullptr);
    }
    auto get = [&](const char* k) { return v.count(k) ? v[k] : kNaN; };
    auto count = [&](const char* k) {
      double x = get(k);
      return std::isfinite(x) ? static_cast<int64_t>(x) : -1;
    };
    TimeseriesRow r;
    r.second = count("second");
    r.arrivals = count("arrivals");
    r.sends = count("sends");
    r.in_flight = count("in_flight");
    r.completions = count("completions");
    r.errors = count("errors");
    r.output_tok_per_s = get("output_tok_per_s");
    r.ttft_p50_ms = get("ttft_p50_ms");
    r.server_running = get("server_running");
    r.server_waiting = get("server_waiting");
    r.server_kv_usage = get("server_kv_usage");
    r.server_gen_tok_per_s = get("server_gen_tok_per_s");
    r.server_preemptions = get("server_preemptions");
    r.ttft_p95_ms = get("ttft_p95_ms");
    r.itl_p50_ms = get("itl_p50_ms");
    r.itl_p95_ms = get("itl_p95_ms");
    r.send_lag_p50_ms = get("send_lag_p50_ms");
    r.send_lag_p95_ms = get("send_lag_p95_ms");
    r.loop_lag_ms = get("loop_lag_ms");
    r.client_queue = count("client_queue");
    rows.push_back(r);
  }
  return rows;
}

Result<SavedRun> load_run(const std::string& dir, size_t max_requests, RecordSampler* kept) {
  SavedRun run;
  run.dir = dir;
  std::string text;
  const std::string summary_path = dir + "/summary.json";
  if (!read_file(summary_path, text)) {
    return Error{
        fmt::format("cannot read '{}': expected a folder written by tokperf bench (with "
                    "summary.json and requests.jsonl)",
                    summary_path)};
  }
  run.summary = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!run.summary.is_object() || !run.summary.contains("levels") ||
      !run.summary["levels"].is_array()) {
    return Error{
        fmt::format("'{}' is not a tokperf summary: expected a JSON object with a "
                    "\"levels\" array (docs/summary-schema.md)",
                    summary_path)};
  }
  run.config = run.summary.value("config", json::object());
  for (const json& l : run.summary["levels"]) {
    run.levels.push_back(level_summary_from_json(l));
    if (auto e = server_evidence_from_json(l)) {
      e->label = run.levels.back().params.label;
      run.server.push_back(std::move(*e));
    }
  }
  run.health = client_health_from_json(child(run.summary, "client_health"));

  bool sampled = false;
  if (kept != nullptr) {
    run.request_lines = kept->records();
    run.stride = kept->stride();
    run.requests = kept->take();
    sampled = true;
  } else if (std::ifstream in(dir + "/requests.jsonl", std::ios::binary); in) {
    if (max_requests > 0) {
      // First pass: count lines, to spread the sample over the whole run.
      char buf[1 << 16];
      int64_t lines = 0;
      char last = '\n';
      while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        const auto n = static_cast<size_t>(in.gcount());
        lines += std::count(buf, buf + n, '\n');
        last = buf[n - 1];
      }
      if (last != '\n') ++lines;
      run.stride = sample_stride(lines, max_requests);
      in.clear();
      in.seekg(0);
    }
    std::string line;
    int64_t line_no = 0;
    SampleLineParser sample_parser;
    while (std::getline(in, line)) {
      ++line_no;
      if ((line_no - 1) % run.stride != 0 || line.empty()) continue;
      RequestSample sample;
      if (!sample_parser.parse(line, sample)) {
        run.warnings.push_back(
            fmt::format("requests.jsonl line {} is not a JSON object; skipped", line_no));
        continue;
      }
      run.requests.push_back(std::move(sample));
    }
    run.request_lines = line_no;
    sampled = true;
  }
  if (sampled && run.stride > 1) {
    run.warnings.push_back(fmt::format(
        "per-request figures here (diagnosis, perceived speed, timeline, CDFs) come from one "
        "record in every {} of the {} ({} read) to bound memory; the level statistics come "
        "from all of them (summary.json)",
        run.stride, run.request_lines, run.requests.size()));
  }
  if (read_file(dir + "/timeseries.csv", text)) {
    auto rows = parse_timeseries_csv(text);
    if (rows)
      run.timeseries = std::move(*rows);
    else
      run.warnings.push_back("timeseries.csv: " + rows.error() + "; time series not shown");
  }
  return run;
}

int64_t for_each_request_sample(const std::string& dir,
                                const std::function<void(const RequestSample&)>& fn) {
  std::ifstream in(dir + "/requests.jsonl", std::ios::binary);
  if (!in) return 0;
  std::string line;
  int64_t lines = 0;
  SampleLineParser parser;
  RequestSample sample;
  while (std::getline(in, line)) {
    ++lines;
    if (!line.empty() && parser.parse(line, sample)) fn(sample);
  }
  return lines;
}

const nlohmann::json* level_slo_json(const SavedRun& run, size_t index) {
  if (!run.summary.contains("levels") || !run.summary["levels"].is_array()) return nullptr;
  const nlohmann::json& levels = run.summary["levels"];
  if (index >= levels.size() || !levels[index].is_object()) return nullptr;
  auto it = levels[index].find("slo");
  return it != levels[index].end() && it->is_object() ? &*it : nullptr;
}

}  // namespace tokperf
