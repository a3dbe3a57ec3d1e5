// A parser for the Prometheus text exposition format (0.0.4) and OpenMetrics 1.0 text: what serving
// engines answer on /metrics. Split-safe (bytes may arrive in any pieces), tolerant (a line it
// cannot read is counted and skipped, never fatal; families it does not know are kept as raw
// series). Handles HELP/TYPE/UNIT, label escaping (\\ \" \n), NaN/+Inf/-Inf, timestamps,
// exemplars (dropped), `# EOF`. Definitions: docs/SERVER-METRICS.md.
//
// Thread rules: one parser per thread; the result is a plain value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokperf::servermetrics {

enum class MetricType : uint8_t {
  kUntyped,  // no TYPE line (or "untyped"/"unknown")
  kCounter,
  kGauge,
  kHistogram,
  kSummary,
  kGaugeHistogram,
  kInfo,
  kStateSet,
};
const char* metric_type_name(MetricType t);

using Labels = std::vector<std::pair<std::string, std::string>>;  // sorted by name

struct Sample {
  std::string name;  // the series name as written (e.g. "x_bucket", "y_total")
  Labels labels;
  double value = 0;
  std::optional<double> timestamp;  // as written (ms in 0.0.4, s in OpenMetrics)
};

struct Family {
  MetricType type = MetricType::kUntyped;
  std::string help;
  std::string unit;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, Family, std::less<>> families;  // from HELP/TYPE/UNIT lines, by name
  int64_t bad_lines = 0;                                // lines skipped as unreadable
  std::string first_error;                              // "line N: why" of the first one
  bool saw_eof = false;                                 // OpenMetrics "# EOF"
  // The family a series belongs to: its own name if declared, else the name without a
  // _bucket/_sum/_count/_total/_created/_gcount/_gsum/_info suffix when that is declared.
  std::string family_of(std::string_view series) const;
  MetricType type_of(std::string_view series) const;
};

// "name{a="1",b="2"}" with labels in sorted order and values escaped: a stable series key.
std::string series_key(std::string_view name, const Labels& labels);

class ExpositionParser {
 public:
  // Any split of the input gives the same result as the whole.
  void feed(std::string_view bytes);
  // Parses a last line without a newline and returns what was read. The parser is then reset.
  Exposition finish();

 private:
  void line(std::string_view l);
  std::string pending_;
  Exposition out_;
  int64_t line_no_ = 0;
};

Exposition parse_exposition(std::string_view text);

// Parses a float as the formats write them: decimal/exponent, NaN, +Inf, -Inf, Inf. Nothing else.
std::optional<double> parse_prom_float(std::string_view s);

}  // namespace tokperf::servermetrics
