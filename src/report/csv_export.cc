#include "report/csv_export.h"

#include <fmt/format.h>

#include <cmath>

namespace tokperf {
namespace {

std::string num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string(); }

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string requests_csv_header() {
  return "seq,level,phase,ok,error_kind,start_unix_us,queue_ms,ttft_ms,ttfo_ms,tpot_ms,e2e_ms,"
         "end_ms,output_tokens,prompt_tokens,itl_count,itl_max_ms\n";
}

void append_requests_csv_row(std::string& out, const RequestSample& r) {
  double itl_max = NAN;
  for (double g : r.itl_ms) itl_max = std::isnan(itl_max) ? g : std::fmax(itl_max, g);
  out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.seq, r.level,
                     r.measured ? "measure" : "other", r.ok ? "true" : "false",
                     csv_field(r.error_kind), r.start_unix_us, num(r.queue_ms), num(r.ttft_ms),
                     num(r.ttfo_ms), num(r.tpot_ms), num(r.e2e_ms), num(r.end_ms),
                     r.output_tokens, r.prompt_tokens < 0 ? "" : std::to_string(r.prompt_tokens),
                     r.itl_ms.size(), num(itl_max));
}

std::string requests_csv(std::span<const RequestSample> requests) {
  std::string out = requests_csv_header();
  for (const RequestSample& r : requests) append_requests_csv_row(out, r);
  return out;
}

std::string levels_csv(std::span<const LevelSummary> levels) {
  std::string out = "label,level,concurrency,target_rate_rps,sent,ok,failed";
  const char* metrics[] = {"ttft", "ttfo", "tpot", "itl", "e2e", "queue"};
  for (const char* m : metrics) {
    out += fmt::format(",{0}_mean_ms,{0}_p50_ms,{0}_p90_ms,{0}_p95_ms,{0}_p99_ms,{0}_max_ms", m);
  }
  out += ",window_s,requests_per_s,output_tokens_per_s,total_tokens_per_s\n";
  for (const LevelSummary& s : levels) {
    out += fmt::format("{},{},{},{},{},{},{}", csv_field(s.params.label), s.params.level,
                       s.params.concurrency > 0 ? std::to_string(s.params.concurrency) : "",
                       num(s.params.target_rate_rps), s.sent, s.ok, s.failed);
    for (const DistStats* d : {&s.ttft, &s.ttfo, &s.tpot, &s.itl, &s.e2e, &s.queue}) {
      out += fmt::format(",{},{},{},{},{},{}", num(d->mean), num(d->p50), num(d->p90), num(d->p95),
                         num(d->p99), num(d->max));
    }
    out += fmt::format(",{},{},{},{}\n", num(s.window_s), num(s.request_throughput_rps),
                       num(s.output_token_throughput_tps), num(s.total_token_throughput_tps));
  }
  return out;
}

}  // namespace tokperf
