// Human units on the command line and in output: durations ("500ms", "2s", "5m", "1.5h", "250us"),
// counts ("2k", "1.5M") and sizes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tokperf {

// Parses a duration into nanoseconds. Accepts a non-negative decimal number followed by one of
// ns, us, ms, s, m, h. A bare number is rejected unless default_unit is given (e.g. "s").
Result<int64_t> parse_duration_ns(std::string_view text, std::string_view default_unit = {});

// Parses a non-negative count with an optional k/M/G suffix (powers of 1000): "2k" -> 2000.
Result<int64_t> parse_count(std::string_view text);

// Formats a duration in milliseconds compactly for tables: "812 ms", "1.83 s", "0.42 ms".
std::string format_ms(double ms);

// Formats a rate: "1,234.5".
std::string format_rate(double v);

}  // namespace tokperf
