#include "load/session.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/units.h"

namespace tokperf {
namespace {

constexpr int64_t kMaxTurns = 1000;

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform double in [0, 1) from (seed, session, turn, stream).
double unit(uint64_t seed, int64_t session, int64_t turn, uint64_t stream) {
  uint64_t h = splitmix(seed ^ splitmix(stream));
  h = splitmix(h ^ static_cast<uint64_t>(session));
  h = splitmix(h ^ static_cast<uint64_t>(turn));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

std::optional<int64_t> whole(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string dur(int64_t ns) { return format_ms(static_cast<double>(ns) / 1e6); }

}  // namespace

std::string ThinkTime::text() const {
  switch (kind) {
    case Kind::kFixed:
      return dur(a_ns);
    case Kind::kUniform:
      return dur(a_ns) + ".." + dur(b_ns);
    case Kind::kExponential:
      return "exp:" + dur(a_ns);
  }
  return "";
}

std::string SessionSpec::text() const {
  std::string turns = turns_min == turns_max ? fmt::format("{}", turns_min)
                                             : fmt::format("{}..{}", turns_min, turns_max);
  return fmt::format("{} turns per session, think time {}", turns, think.text());
}

Result<SessionSpec> parse_turns(std::string_view text) {
  auto bad = [&] {
    return Error{
        fmt::format("--turns '{}': expected a whole number of turns per session (e.g. 4) "
                    "or a uniform range A..B (e.g. 2..6), between 1 and {}",
                    text, kMaxTurns)};
  };
  SessionSpec s;
  s.enabled = true;
  const size_t dots = text.find("..");
  if (dots == std::string_view::npos) {
    auto n = whole(text);
    if (!n || *n < 1 || *n > kMaxTurns) return bad();
    s.turns_min = s.turns_max = *n;
    return s;
  }
  auto a = whole(text.substr(0, dots));
  auto b = whole(text.substr(dots + 2));
  if (!a || !b || *a < 1 || *b < *a || *b > kMaxTurns) return bad();
  s.turns_min = *a;
  s.turns_max = *b;
  return s;
}

Result<ThinkTime> parse_think_time(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Error{
        fmt::format("--think-time '{}': {}; accepted: 0, a duration (2s, 500ms), a "
                    "uniform range (1s..5s) or exp:MEAN (exp:2s)",
                    text, why)};
  };
  auto one = [&](std::string_view s) -> Result<int64_t> {
    auto d = parse_duration_ns(s, "s");
    if (!d) return Error{d.error()};
    if (*d < 0) return Error{"a duration must not be negative"};
    return *d;
  };
  ThinkTime t;
  if (text.rfind("exp:", 0) == 0) {
    auto m = one(text.substr(4));
    if (!m) return bad(m.error());
    t.kind = ThinkTime::Kind::kExponential;
    t.a_ns = *m;
    return t;
  }
  const size_t dots = text.find("..");
  if (dots != std::string_view::npos) {
    auto a = one(text.substr(0, dots));
    auto b = one(text.substr(dots + 2));
    if (!a) return bad(a.error());
    if (!b) return bad(b.error());
    if (*b < *a) return bad("the range's high end is below its low end");
    t.kind = ThinkTime::Kind::kUniform;
    t.a_ns = *a;
    t.b_ns = *b;
    return t;
  }
  auto f = one(text);
  if (!f) return bad(f.error());
  t.a_ns = *f;
  return t;
}

int64_t session_turns(const SessionSpec& spec, uint64_t seed, int64_t session) {
  const int64_t span = spec.turns_max - spec.turns_min + 1;
  if (span <= 1) return spec.turns_min;
  const auto k = static_cast<int64_t>(unit(seed, session, 0, 0x7072) * static_cast<double>(span));
  return spec.turns_min + std::min(k, span - 1);
}

int64_t session_think_ns(const SessionSpec& spec, uint64_t seed, int64_t session, int64_t turn) {
  const ThinkTime& t = spec.think;
  switch (t.kind) {
    case ThinkTime::Kind::kFixed:
      return t.a_ns;
    case ThinkTime::Kind::kUniform:
      return t.a_ns + static_cast<int64_t>(unit(seed, session, turn, 0x7468) *
                                           static_cast<double>(t.b_ns - t.a_ns));
    case ThinkTime::Kind::kExponential: {
      const double u = unit(seed, session, turn, 0x6578);
      return static_cast<int64_t>(-std::log1p(-u) * static_cast<double>(t.a_ns));
    }
  }
  return 0;
}

}  // namespace tokperf
