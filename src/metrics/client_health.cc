#include "metrics/client_health.h"

#include <limits>

#include <fmt/format.h>

namespace tokperf {

double cpu_utilisation_pct(double cpu_user_s, double cpu_system_s, double wall_s) {
  if (!(wall_s > 0)) return std::numeric_limits<double>::quiet_NaN();
  return (cpu_user_s + cpu_system_s) / wall_s * 100.0;
}

std::vector<std::string> client_health_warnings(const ClientHealth& h) {
  std::vector<std::string> out;
  // Comparisons are written so that NaN (not measured) is false and never warns.
  if (h.loop_lag_p99_ms > kLoopLagP99WarnMs) {
    out.push_back(fmt::format(
        "client event-loop lag P99 was {:.2f} ms (threshold {:.0f} ms): the client may have "
        "distorted the figures",
        h.loop_lag_p99_ms, kLoopLagP99WarnMs));
  }
  if (h.loop_lag_max_ms > kLoopLagMaxWarnMs) {
    out.push_back(fmt::format(
        "client event loop stalled for {:.1f} ms at worst (threshold {:.0f} ms): the client may "
        "have distorted the figures",
        h.loop_lag_max_ms, kLoopLagMaxWarnMs));
  }
  if (h.cpu_utilisation_pct > kCpuUtilisationWarnPct) {
    out.push_back(fmt::format(
        "client CPU use was {:.0f}% of one core (threshold {:.0f}%): the client may have distorted "
        "the figures; try a lower concurrency",
        h.cpu_utilisation_pct, kCpuUtilisationWarnPct));
  }
  return out;
}

}  // namespace tokperf
