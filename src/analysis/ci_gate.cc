#include "analysis/ci_gate.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/units.h"

namespace tokperf {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_duration_metric(const std::string& m) {
  for (const char* d : {"ttft", "ttfo", "tpot", "itl", "e2e", "queue", "stall", "first_chars"})
    if (m == d) return true;
  return false;
}
bool is_plain_metric(const std::string& m) {
  return m == "errors" || m == "error_rate" || m == "tok_s" || m == "rps";
}

double stat_of(const DistStats& d, const std::string& s) {
  if (s == "p50") return d.p50;
  if (s == "p90") return d.p90;
  if (s == "p95") return d.p95;
  if (s == "p99") return d.p99;
  if (s == "mean") return d.mean;
  if (s == "max") return d.max;
  if (s == "min") return d.min;
  return kNaN;
}

bool known_stat(const std::string& s) {
  for (const char* k : {"p50", "p90", "p95", "p99", "mean", "max", "min"})
    if (s == k) return true;
  return false;
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
}

const char* kGrammar =
    "expected METRIC[.STAT] OP VALUE, e.g. 'ttft.p95>+10%', 'errors>0', 'tpot.p50>=+5ms'; "
    "METRIC: ttft ttfo tpot itl e2e queue stall first_chars errors error_rate tok_s rps; "
    "STAT: p50 p90 p95 p99 mean max min; OP: > >= < <=; VALUE: +N% -N% +DURATION or a value";

Result<GateCondition> parse_one(const std::string& text) {
  GateCondition c;
  c.text = text;
  size_t op = text.find_first_of("<>");
  if (op == std::string::npos || op == 0)
    return Error{fmt::format("--fail-if '{}': no comparison; {}", text, kGrammar)};
  std::string lhs = trim(std::string_view(text).substr(0, op));
  bool eq = op + 1 < text.size() && text[op + 1] == '=';
  c.op = text[op] == '>' ? (eq ? GateCondition::Op::kGe : GateCondition::Op::kGt)
                         : (eq ? GateCondition::Op::kLe : GateCondition::Op::kLt);
  std::string rhs = trim(std::string_view(text).substr(op + (eq ? 2 : 1)));
  for (char& ch : lhs) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  size_t dot = lhs.find('.');
  c.metric = lhs.substr(0, dot);
  c.stat = dot == std::string::npos ? "" : lhs.substr(dot + 1);
  bool duration = is_duration_metric(c.metric);
  if (!duration && !is_plain_metric(c.metric))
    return Error{fmt::format("--fail-if '{}': unknown metric '{}'; {}", text, c.metric, kGrammar)};
  if (duration && c.stat.empty()) c.stat = "p95";
  if (duration && !known_stat(c.stat))
    return Error{fmt::format("--fail-if '{}': unknown statistic '{}'; {}", text, c.stat, kGrammar)};
  if (!duration && !c.stat.empty())
    return Error{
        fmt::format("--fail-if '{}': '{}' takes no statistic; {}", text, c.metric, kGrammar)};
  if (rhs.empty()) return Error{fmt::format("--fail-if '{}': no value; {}", text, kGrammar)};
  bool sign = rhs[0] == '+' || rhs[0] == '-';
  double neg = rhs[0] == '-' ? -1 : 1;
  std::string body = sign ? rhs.substr(1) : rhs;
  char* end = nullptr;
  if (!body.empty() && body.back() == '%') {
    c.mode = sign ? GateCondition::Mode::kDeltaPct : GateCondition::Mode::kValue;
    c.threshold = std::strtod(body.c_str(), &end);
    if (!sign && c.metric != "error_rate")
      return Error{
          fmt::format("--fail-if '{}': a percentage needs a sign (+10% = 10% above the "
                      "baseline); {}",
                      text, kGrammar)};
    if (end != body.c_str() + body.size() - 1)
      return Error{fmt::format("--fail-if '{}': bad number '{}'; {}", text, rhs, kGrammar)};
  } else {
    c.mode = sign ? GateCondition::Mode::kDelta : GateCondition::Mode::kValue;
    double v = std::strtod(body.c_str(), &end);
    if (end == body.c_str())
      return Error{fmt::format("--fail-if '{}': bad value '{}'; {}", text, rhs, kGrammar)};
    if (*end != '\0') {
      if (!duration)
        return Error{fmt::format("--fail-if '{}': '{}' is a count or rate, not a duration; {}",
                                 text, c.metric, kGrammar)};
      auto ns = parse_duration_ns(body);
      if (!ns) return Error{fmt::format("--fail-if '{}': {}; {}", text, ns.error(), kGrammar)};
      v = static_cast<double>(*ns) / 1e6;
    }
    c.threshold = v;
  }
  c.threshold *= neg;
  return c;
}

bool holds(GateCondition::Op op, double x, double t) {
  switch (op) {
    case GateCondition::Op::kGt:
      return x > t;
    case GateCondition::Op::kGe:
      return x >= t;
    case GateCondition::Op::kLt:
      return x < t;
    case GateCondition::Op::kLe:
      return x <= t;
  }
  return false;
}

std::string show(const GateCondition& c, double v) {
  return is_duration_metric(c.metric) ? format_ms(v) : fmt::format("{:g}", v);
}

}  // namespace

Result<std::vector<GateCondition>> parse_gate(std::string_view text) {
  std::vector<GateCondition> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    if (!item.empty()) {
      auto c = parse_one(item);
      if (!c) return Error{c.error()};
      out.push_back(std::move(*c));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (out.empty()) return Error{fmt::format("--fail-if '{}': no condition; {}", text, kGrammar)};
  return out;
}

double gate_metric_value(const GateCondition& c, const RunFigures& r) {
  const std::string& m = c.metric;
  if (m == "ttft") return stat_of(r.level.ttft, c.stat);
  if (m == "ttfo") return stat_of(r.level.ttfo, c.stat);
  if (m == "tpot") return stat_of(r.level.tpot, c.stat);
  if (m == "itl") return stat_of(r.level.itl, c.stat);
  if (m == "e2e") return stat_of(r.level.e2e, c.stat);
  if (m == "queue") return stat_of(r.level.queue, c.stat);
  if (m == "stall") return stat_of(r.perceived.reading_stall_ms, c.stat);
  if (m == "first_chars") return stat_of(r.perceived.first_chars_ms, c.stat);
  if (m == "errors") return static_cast<double>(r.failed);
  if (m == "error_rate") return r.sent > 0 ? 100.0 * r.failed / r.sent : 0;
  if (m == "tok_s") return r.level.output_token_throughput_tps;
  if (m == "rps") return r.level.request_throughput_rps;
  return kNaN;
}

std::vector<GateFailure> evaluate_gate(const std::vector<GateCondition>& conditions,
                                       const RunFigures& baseline, const RunFigures& candidate) {
  std::vector<GateFailure> out;
  for (const GateCondition& c : conditions) {
    double b = gate_metric_value(c, baseline), v = gate_metric_value(c, candidate);
    std::string name = c.stat.empty() ? c.metric : c.metric + "." + c.stat;
    double x = v;
    std::string detail;
    if (c.mode == GateCondition::Mode::kValue) {
      detail = fmt::format("{} of {} is {}", name, candidate.name, show(c, v));
    } else {
      x = c.mode == GateCondition::Mode::kDelta ? v - b : (b != 0 ? 100 * (v - b) / b : kNaN);
      detail =
          fmt::format("{} of {} is {} vs {} for {} ({})", name, candidate.name, show(c, v),
                      show(c, b), baseline.name,
                      std::isfinite(v - b) && b != 0 ? fmt::format("{:+.1f}%", 100 * (v - b) / b)
                                                     : fmt::format("{:+g}", v - b));
    }
    if (!std::isfinite(x)) {
      out.push_back({c.text, detail + "; undefined, so the gate cannot pass"});
    } else if (holds(c.op, x, c.threshold)) {
      out.push_back({c.text, detail});
    }
  }
  return out;
}

}  // namespace tokperf
