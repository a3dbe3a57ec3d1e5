#include "report/console_table.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "core/units.h"

namespace tokperf {
namespace {

constexpr size_t kMaxMessageBytes = 160;

enum class LoadColumn { kConcurrency, kRate, kLabel };

// One column kind for the whole table, so a column never mixes slots and rates.
LoadColumn load_column(const std::vector<LevelSummary>& levels) {
  const bool all_closed = std::all_of(levels.begin(), levels.end(), [](const LevelSummary& s) {
    return s.params.concurrency > 0 && !std::isfinite(s.params.target_rate_rps);
  });
  if (all_closed) return LoadColumn::kConcurrency;
  const bool all_open = std::all_of(levels.begin(), levels.end(), [](const LevelSummary& s) {
    return std::isfinite(s.params.target_rate_rps);
  });
  return all_open ? LoadColumn::kRate : LoadColumn::kLabel;
}

std::string load_cell(const LevelSummary& s, LoadColumn c) {
  switch (c) {
    case LoadColumn::kConcurrency:
      return std::to_string(s.params.concurrency);
    case LoadColumn::kRate:
      return format_rate(s.params.target_rate_rps);
    case LoadColumn::kLabel:
      return s.params.label;
  }
  return {};
}

std::string load_phrase(const LevelSummary& s) {
  if (s.params.concurrency > 0 && !std::isfinite(s.params.target_rate_rps)) {
    return fmt::format("concurrency {}", s.params.concurrency);
  }
  if (std::isfinite(s.params.target_rate_rps)) {
    return fmt::format("{} req/s", format_rate(s.params.target_rate_rps));
  }
  return s.params.label;
}

// Cuts at a UTF-8 character boundary so the console never shows half a character.
std::string cut_message(const std::string& m) {
  if (m.size() <= kMaxMessageBytes) return m;
  size_t n = kMaxMessageBytes;
  while (n > 0 && (static_cast<unsigned char>(m[n]) & 0xC0) == 0x80) --n;
  return m.substr(0, n) + "...";
}

}  // namespace

std::string render_level_table(const std::vector<LevelSummary>& levels) {
  const LoadColumn lc = load_column(levels);
  const char* load_header = lc == LoadColumn::kConcurrency ? "concurrency"
                            : lc == LoadColumn::kRate      ? "rate req/s"
                                                           : "level";
  constexpr size_t kCols = 12;
  std::vector<std::array<std::string, kCols>> rows;
  rows.push_back({load_header, "TTFT P50", "TTFT P95", "TPOT P50", "TPOT P95", "ITL P50", "ITL P99",
                  "E2E P50", "E2E P95", "out tok/s", "ok", "failed"});
  for (const LevelSummary& s : levels) {
    rows.push_back({load_cell(s, lc), format_ms(s.ttft.p50), format_ms(s.ttft.p95),
                    format_ms(s.tpot.p50), format_ms(s.tpot.p95), format_ms(s.itl.p50),
                    format_ms(s.itl.p99), format_ms(s.e2e.p50), format_ms(s.e2e.p95),
                    format_rate(s.output_token_throughput_tps), std::to_string(s.ok),
                    std::to_string(s.failed)});
  }
  std::array<size_t, kCols> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < kCols; ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t c = 0; c < kCols; ++c) {
      if (c > 0) out += "  ";
      out += fmt::format("{:>{}}", row[c], width[c]);
    }
    out += '\n';
  }
  return out;
}

std::string render_error_breakdown(const std::vector<LevelSummary>& levels) {
  std::string out;
  for (const LevelSummary& s : levels) {
    if (s.errors.empty()) continue;
    out += levels.size() > 1 ? fmt::format("errors at {}: ", load_phrase(s)) : "errors: ";
    for (size_t i = 0; i < s.errors.size(); ++i) {
      const ErrorTally& e = s.errors[i];
      if (i > 0) out += ", ";
      out += fmt::format("{} {}", e.count, error_kind_name(e.kind));
      if (e.first_http_status != 0) out += fmt::format(" ({})", e.first_http_status);
    }
    out += '\n';
    for (const ErrorTally& e : s.errors) {
      if (e.first_message.empty()) continue;
      out += fmt::format("  {}: {}\n", error_kind_name(e.kind), cut_message(e.first_message));
    }
  }
  return out;
}

std::string render_health_warnings(const ClientHealth& health) {
  std::string out;
  for (const std::string& w : health.warnings) out += fmt::format("warning: {}\n", w);
  return out;
}

}  // namespace tokperf
