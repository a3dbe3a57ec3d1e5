#include "core/units.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace tokperf {
namespace {

// Splits "12.5ms" into its number and unit; fails on anything that is not [digits][.digits]unit.
bool split_number(std::string_view text, double& number, std::string_view& unit) {
  size_t i = 0;
  bool digits = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    digits |= text[i] != '.';
    ++i;
  }
  if (!digits) return false;
  std::string num(text.substr(0, i));
  char* end = nullptr;
  number = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(number)) return false;
  unit = text.substr(i);
  return true;
}

}  // namespace

Result<int64_t> parse_duration_ns(std::string_view text, std::string_view default_unit) {
  auto bad = [&] {
    return Error{fmt::format("'{}' is not a duration; expected a number with a unit: ns, us, ms, s, "
                             "m or h (e.g. 500ms, 2s, 5m)",
                             text)};
  };
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit)) return bad();
  if (unit.empty()) unit = default_unit;
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m" || unit == "min") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return bad();
  double ns = number * scale;
  if (ns > 9.2e18) return Error{fmt::format("duration '{}' is too long", text)};
  return static_cast<int64_t>(std::llround(ns));
}

Result<int64_t> parse_count(std::string_view text) {
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit)) {
    return Error{fmt::format("'{}' is not a count; expected a whole number, optionally with k, M or G "
                             "(e.g. 200, 2k)",
                             text)};
  }
  double scale = 1;
  if (unit == "k" || unit == "K") scale = 1e3;
  else if (unit == "M") scale = 1e6;
  else if (unit == "G") scale = 1e9;
  else if (!unit.empty()) {
    return Error{fmt::format("'{}' has an unknown suffix '{}'; accepted: k, M, G", text, unit)};
  }
  double v = number * scale;
  if (v != std::floor(v)) return Error{fmt::format("'{}' is not a whole number", text)};
  if (v > 9.2e18) return Error{fmt::format("count '{}' is too large", text)};
  return static_cast<int64_t>(v);
}

std::string format_ms(double ms) {
  if (!std::isfinite(ms)) return "-";
  if (ms >= 10000) return fmt::format("{:.1f} s", ms / 1000);
  if (ms >= 1000) return fmt::format("{:.2f} s", ms / 1000);
  if (ms >= 100) return fmt::format("{:.0f} ms", ms);
  if (ms >= 10) return fmt::format("{:.1f} ms", ms);
  return fmt::format("{:.2f} ms", ms);
}

std::string format_rate(double v) {
  if (!std::isfinite(v)) return "-";
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

}  // namespace tokperf
