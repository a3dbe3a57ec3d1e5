#include "metrics/client_health.h"

#include <cmath>
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
  const bool weighed = h.distortable_ms > 0;
  const double ref = h.distortable_ms;
  const bool lag_material = !weighed || h.loop_lag_p99_ms >= kLagMaterialShare * ref;
  const std::string against =
      weighed ? fmt::format(", {:.1f}% of the smallest figure it can inflate ({:.2f} ms)",
                            h.loop_lag_p99_ms / ref * 100, ref)
              : "";
  if (h.loop_lag_p99_ms > kLoopLagP99WarnMs && lag_material) {
    out.push_back(fmt::format(
        "client event-loop lag P99 was {:.2f} ms (threshold {:.0f} ms{}): the client may have "
        "distorted the figures",
        h.loop_lag_p99_ms, kLoopLagP99WarnMs, against));
  }
  if (h.loop_lag_max_ms > kLoopLagMaxWarnMs &&
      (!weighed || h.loop_lag_max_ms >= kStallMaterialShare * ref)) {
    out.push_back(fmt::format(
        "client event loop stalled for {:.1f} ms at worst (threshold {:.0f} ms{}): the client may "
        "have distorted the figures",
        h.loop_lag_max_ms, kLoopLagMaxWarnMs,
        weighed ? fmt::format(", against a smallest P50 of {:.2f} ms", ref) : ""));
  }
  const bool lag_known = !std::isnan(h.loop_lag_p99_ms);
  if (h.cpu_utilisation_pct > kCpuUtilisationWarnPct && (!weighed || !lag_known || lag_material)) {
    out.push_back(fmt::format(
        "client CPU use was {:.0f}% of one core (threshold {:.0f}%): the client may have distorted "
        "the figures; try a lower concurrency",
        h.cpu_utilisation_pct, kCpuUtilisationWarnPct));
  }
  return out;
}

std::string render_noise_floor(const NoiseFloor& f) {
  if (!f.measured()) return "";
  std::string out = "client noise floor (measured before the run):";
  if (f.timer_samples > 0) {
    out += fmt::format(" timer wake-up lateness P50 {:.3f} ms, P99 {:.3f} ms, max {:.3f} ms;",
                       f.timer_lateness_p50_ms, f.timer_lateness_p99_ms, f.timer_lateness_max_ms);
  }
  if (f.round_trips > 0) {
    out += fmt::format(" loopback round trip P50 {:.3f} ms, P99 {:.3f} ms;", f.loopback_rtt_p50_ms,
                       f.loopback_rtt_p99_ms);
  }
  if (!std::isnan(f.timer_slack_us))
    out += fmt::format(" timer slack {:.0f} us;", f.timer_slack_us);
  out.back() = '\n';
  if (!f.error.empty()) out += "  (not measured: " + f.error + ")\n";
  return out;
}

}  // namespace tokperf
