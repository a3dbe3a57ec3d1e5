// Fuzz target for human units (parse_duration_ns, parse_count, format_ms in core/units.h).
// Invariants: parsed values are never negative; a bare number is rejected without a default unit
// and accepted in the default unit exactly as if that unit were written; errors say something;
// format_ms never returns an empty string. Byte 0 picks the default unit, the rest is the text.
// See docs/FUZZING.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/units.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "units_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

bool is_bare_number(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.')) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static constexpr std::string_view kUnits[] = {"", "ns", "us", "ms", "s", "m", "h", ""};
  const std::string_view unit = kUnits[data[0] & 7];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  auto d = tokperf::parse_duration_ns(text, unit);
  if (d.ok()) {
    check(*d >= 0, "negative duration");
    check(!tokperf::format_ms(static_cast<double>(*d) / 1e6).empty(), "empty format_ms");
  } else {
    check(!d.error().empty(), "empty duration error");
  }
  auto plain = tokperf::parse_duration_ns(text);
  if (is_bare_number(text)) check(!plain.ok(), "bare number accepted without a default unit");
  if (!unit.empty() && is_bare_number(text)) {
    auto spelled = tokperf::parse_duration_ns(std::string(text) + std::string(unit));
    check(spelled.ok() == d.ok(), "default unit differs from the unit written out");
    if (spelled.ok()) check(*spelled == *d, "default unit gives another value");
  }
  auto c = tokperf::parse_count(text);
  if (c.ok()) {
    check(*c >= 0, "negative count");
  } else {
    check(!c.error().empty(), "empty count error");
  }
  return 0;
}
