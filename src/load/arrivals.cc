#include "load/arrivals.h"

#include "core/draws.h"

#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tokperf {

const char* arrival_kind_name(ArrivalKind k) {
  switch (k) {
    case ArrivalKind::kConstant:
      return "constant";
    case ArrivalKind::kPoisson:
      return "poisson";
    case ArrivalKind::kGamma:
      return "gamma";
  }
  return "?";
}

Result<ArrivalKind> parse_arrival_kind(std::string_view text) {
  if (text == "constant") return ArrivalKind::kConstant;
  if (text == "poisson") return ArrivalKind::kPoisson;
  if (text == "gamma") return ArrivalKind::kGamma;
  return Error{
      fmt::format("--arrivals '{}' is not an arrival process; accepted: constant, poisson, "
                  "gamma",
                  text)};
}

ArrivalGenerator::ArrivalGenerator(const ArrivalSpec& spec) : spec_(spec), rng_(spec.seed) {}

double ArrivalGenerator::next_uniform() { return uniform_open01(rng_()); }

double ArrivalGenerator::next_exponential() { return -std::log(next_uniform()); }

double ArrivalGenerator::next_normal() {
  const double u1 = next_uniform();
  const double u2 = next_uniform();
  return box_muller(u1, u2);
}

double ArrivalGenerator::next_gamma(double shape) {
  if (shape < 1.0) {
    // Gamma(k) = Gamma(k + 1) * U^(1/k) (Marsaglia & Tsang 2000, section 6).
    double g = next_gamma(shape + 1.0);
    return g * std::pow(next_uniform(), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = next_normal();
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = next_uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

double ArrivalGenerator::next_gap_s() {
  const double mean_s = 1.0 / spec_.rate_per_s;
  switch (spec_.kind) {
    case ArrivalKind::kConstant:
      return mean_s;
    case ArrivalKind::kPoisson:
      return mean_s * next_exponential();
    case ArrivalKind::kGamma:
      // Shape 1 is exactly the Poisson stream, so "--burstiness 1" reproduces a Poisson schedule.
      if (spec_.burstiness == 1.0) return mean_s * next_exponential();
      return mean_s * next_gamma(spec_.burstiness) / spec_.burstiness;
  }
  return mean_s;
}

namespace {

// Offsets come from one running sum in seconds (constant: i / rate, so no rounding drift), rounded
// to the nearest ns once; a double keeps sub-ns precision over days.
template <class KeepGoing>
std::vector<int64_t> generate(const ArrivalSpec& spec, KeepGoing keep_going) {
  std::vector<int64_t> out;
  ArrivalGenerator gen(spec);
  double t_s = 0;
  for (size_t i = 0;; ++i) {
    if (spec.kind == ArrivalKind::kConstant) t_s = static_cast<double>(i) / spec.rate_per_s;
    int64_t ns = std::llround(t_s * 1e9);
    if (!keep_going(i, ns)) break;
    out.push_back(ns);
    if (spec.kind != ArrivalKind::kConstant) t_s += gen.next_gap_s();
  }
  return out;
}

}  // namespace

std::vector<int64_t> arrival_offsets_count(const ArrivalSpec& spec, size_t count) {
  return generate(spec, [count](size_t i, int64_t) { return i < count; });
}

std::vector<int64_t> arrival_offsets_until(const ArrivalSpec& spec, int64_t duration_ns) {
  return generate(spec, [duration_ns](size_t, int64_t ns) { return ns < duration_ns; });
}

std::vector<int64_t> ramp_arrival_offsets(const ArrivalSpec& spec, double rate_start,
                                          double rate_end, int64_t duration_ns) {
  const double t_end_s = static_cast<double>(duration_ns) / 1e9;
  const double a = rate_start;
  const double b = (rate_end - rate_start) / t_end_s;              // req/s per second
  const double total = a * t_end_s + 0.5 * b * t_end_s * t_end_s;  // expected arrivals
  ArrivalSpec unit = spec;
  unit.rate_per_s = 1.0;
  std::vector<int64_t> out;
  // Unit-rate "operational time" L maps to real time t with a t + b t^2 / 2 = L; this form of the
  // root is stable for b -> 0 and for a = 0.
  for (int64_t l_ns : arrival_offsets_until(unit, std::llround(total * 1e9))) {
    double l = static_cast<double>(l_ns) / 1e9;
    double disc = std::max(0.0, a * a + 2.0 * b * l);
    double denom = a + std::sqrt(disc);
    double t_s = denom > 0 ? 2.0 * l / denom : 0.0;
    int64_t ns = std::llround(t_s * 1e9);
    if (ns >= duration_ns) break;
    out.push_back(ns);
  }
  return out;
}

uint64_t schedule_fingerprint(std::span<const int64_t> offsets_ns) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int64_t v : offsets_ns) {
    auto u = static_cast<uint64_t>(v);
    for (int byte = 0; byte < 8; ++byte) {
      h ^= (u >> (8 * byte)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

std::string fingerprint_hex(uint64_t fingerprint) { return fmt::format("{:016x}", fingerprint); }

Result<std::vector<TraceEntry>> parse_trace_jsonl(std::string_view text, double speed) {
  if (!(speed > 0) || !std::isfinite(speed)) {
    return Error{fmt::format(
        "trace speed {} is not valid; expected a number > 0 (2 = twice as fast)", speed)};
  }
  std::vector<TraceEntry> out;
  double first_s = 0, prev_s = 0;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto bad = [&](std::string_view what) {
      return Error{fmt::format("trace line {}: {}", line_no, what)};
    };
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
    double t_s = 0;
    bool has_s = j.contains("timestamp"), has_ms = j.contains("timestamp_ms");
    if (has_s == has_ms) {
      return bad("needs exactly one of \"timestamp\" (seconds) or \"timestamp_ms\" (milliseconds)");
    }
    const auto& ts = has_s ? j["timestamp"] : j["timestamp_ms"];
    if (!ts.is_number() || !std::isfinite(ts.get<double>())) {
      return bad(fmt::format("\"{}\" must be a number", has_s ? "timestamp" : "timestamp_ms"));
    }
    t_s = has_s ? ts.get<double>() : ts.get<double>() / 1e3;
    if (out.empty())
      first_s = t_s;
    else if (t_s < prev_s)
      return bad(
          fmt::format("timestamp {} s is earlier than the line before "
                      "({} s); a trace must be sorted by time",
                      t_s, prev_s));
    prev_s = t_s;
    TraceEntry e;
    e.line = line_no;
    // Beyond ~292 years the offset does not fit in int64 nanoseconds (llround would be undefined).
    const double offset_ns = (t_s - first_s) / speed * 1e9;
    if (!(offset_ns < 9.2e18)) {
      return bad(fmt::format("timestamp {} s is too far after the first ({} s) at speed {}; offsets "
                             "must stay under 9.2e9 s",
                             t_s, first_s, speed));
    }
    e.offset_ns = std::llround(offset_ns);
    bool has_in = j.contains("input_tokens"), has_prompt = j.contains("prompt");
    if (has_in == has_prompt) {
      return bad("needs exactly one of \"input_tokens\" (integer) or \"prompt\" (string)");
    }
    if (has_in) {
      if (!j["input_tokens"].is_number_integer() || j["input_tokens"].get<int64_t>() < 0) {
        return bad("\"input_tokens\" must be a non-negative integer");
      }
      e.input_tokens = j["input_tokens"].get<int64_t>();
    } else {
      if (!j["prompt"].is_string()) return bad("\"prompt\" must be a string");
      e.prompt = j["prompt"].get<std::string>();
    }
    if (j.contains("output_tokens")) {
      if (!j["output_tokens"].is_number_integer() || j["output_tokens"].get<int64_t>() < 1) {
        return bad("\"output_tokens\" must be a positive integer");
      }
      e.output_tokens = j["output_tokens"].get<int64_t>();
    }
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<TraceEntry>> load_trace_jsonl(const std::string& path, double speed) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("cannot open trace file '{}'", path)};
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = parse_trace_jsonl(ss.str(), speed);
  if (!r) return Error{fmt::format("{}: {}", path, r.error())};
  return r;
}

}  // namespace tokperf
