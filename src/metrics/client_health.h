// How healthy the measuring client itself was during a run. A client whose event loop lagged or
// whose core was saturated stamps bytes late, which inflates TTFT and ITL; these figures let the
// summary say so instead of blaming the server. The transport fills the numbers; this module only
// judges them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tokperf {

// Thresholds beyond which client_health_warnings() speaks up (see docs/summary-schema.md).
inline constexpr double kLoopLagP99WarnMs = 1.0;  // timestamps are meant to be within ~1 ms
inline constexpr double kLoopLagMaxWarnMs =
    20.0;  // a single stall that long distorts an ITL sample
inline constexpr double kCpuUtilisationWarnPct = 80.0;  // % of one core, for the loop thread(s)

struct ClientHealth {
  // Event-loop lag: how late timers fired compared with when they were due.
  int64_t loop_lag_samples = 0;
  double loop_lag_mean_ms = std::numeric_limits<double>::quiet_NaN();
  double loop_lag_p50_ms = std::numeric_limits<double>::quiet_NaN();
  double loop_lag_p99_ms = std::numeric_limits<double>::quiet_NaN();
  double loop_lag_max_ms = std::numeric_limits<double>::quiet_NaN();

  // Process CPU time over the run (getrusage) and its share of one core over the wall time.
  double cpu_user_s = 0;
  double cpu_system_s = 0;
  double wall_s = 0;
  double cpu_utilisation_pct = std::numeric_limits<double>::quiet_NaN();  // 100 = one full core

  int64_t peak_in_flight = 0;      // most streams open at once
  double stream_events_per_s = 0;  // SSE events parsed per second of wall time, averaged

  // Filled from client_health_warnings() by whoever assembles the summary.
  std::vector<std::string> warnings;
};

// (user + system) / wall * 100; NaN when wall_s <= 0.
double cpu_utilisation_pct(double cpu_user_s, double cpu_system_s, double wall_s);

// One sentence per threshold crossed, each naming the figure and the threshold; empty when healthy.
// NaN figures (not measured) never warn.
std::vector<std::string> client_health_warnings(const ClientHealth& h);

}  // namespace tokperf
