#include "metrics/client_health.h"

#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "metrics/stats.h"

namespace tokperf {

double cpu_utilisation_pct(double cpu_user_s, double cpu_system_s, double wall_s) {
  if (!(wall_s > 0)) return std::numeric_limits<double>::quiet_NaN();
  return (cpu_user_s + cpu_system_s) / wall_s * 100.0;
}

LoopHealth loop_health(int loop, const std::vector<int64_t>& lag_ns, double cpu_s, double wall_s,
                       int64_t peak_in_flight, uint64_t stream_events) {
  LoopHealth h;
  h.loop = loop;
  std::vector<double> lag_ms;
  lag_ms.reserve(lag_ns.size());
  for (int64_t ns : lag_ns) lag_ms.push_back(static_cast<double>(ns) / 1e6);
  const DistStats s = compute_dist_stats(lag_ms);
  h.loop_lag_samples = s.count;
  h.loop_lag_p50_ms = s.p50;
  h.loop_lag_p99_ms = s.p99;
  h.loop_lag_max_ms = s.max;
  h.cpu_s = cpu_s;
  h.wall_s = wall_s;
  h.cpu_utilisation_pct = cpu_utilisation_pct(cpu_s, 0, wall_s);
  h.peak_in_flight = peak_in_flight;
  h.stream_events_per_s = wall_s > 0 ? static_cast<double>(stream_events) / wall_s : 0;
  return h;
}

int worst_loop(const std::vector<LoopHealth>& loops) {
  int worst = -1;
  auto key = [](const LoopHealth& l) {
    return std::make_pair(std::isnan(l.loop_lag_p99_ms) ? -1.0 : l.loop_lag_p99_ms,
                          std::isnan(l.cpu_utilisation_pct) ? -1.0 : l.cpu_utilisation_pct);
  };
  for (size_t i = 0; i < loops.size(); ++i) {
    if (worst < 0 || key(loops[i]) > key(loops[static_cast<size_t>(worst)])) {
      worst = static_cast<int>(i);
    }
  }
  return worst;
}

std::vector<std::string> client_health_warnings(const ClientHealth& h) {
  std::vector<std::string> out;
  // With several loops the worst one decides (a lagging loop distorts its own share of the
  // streams, however idle the others are); the merged figures would dilute it.
  double lag_p99 = h.loop_lag_p99_ms, lag_max = h.loop_lag_max_ms, cpu = h.cpu_utilisation_pct;
  std::string lag_who = "client", stall_who = "client", cpu_who = "client";
  const bool several = h.loops.size() > 1;
  if (several) {
    const size_t n = h.loops.size();
    auto name = [n](const LoopHealth& l) { return fmt::format("client loop {} of {}", l.loop + 1, n); };
    const int w = h.worst_loop >= 0 ? h.worst_loop : worst_loop(h.loops);
    lag_p99 = h.loops[static_cast<size_t>(w)].loop_lag_p99_ms;
    lag_who = name(h.loops[static_cast<size_t>(w)]);
    const LoopHealth* stall = nullptr;
    const LoopHealth* busy = nullptr;
    for (const LoopHealth& l : h.loops) {
      if (!std::isnan(l.loop_lag_max_ms) && (!stall || l.loop_lag_max_ms > stall->loop_lag_max_ms))
        stall = &l;
      if (!std::isnan(l.cpu_utilisation_pct) &&
          (!busy || l.cpu_utilisation_pct > busy->cpu_utilisation_pct))
        busy = &l;
    }
    lag_max = stall ? stall->loop_lag_max_ms : std::numeric_limits<double>::quiet_NaN();
    if (stall) stall_who = name(*stall);
    cpu = busy ? busy->cpu_utilisation_pct : std::numeric_limits<double>::quiet_NaN();
    if (busy) cpu_who = name(*busy);
  }
  // Comparisons are written so that NaN (not measured) is false and never warns.
  const bool weighed = h.distortable_ms > 0;
  const double ref = h.distortable_ms;
  const bool lag_material = !weighed || lag_p99 >= kLagMaterialShare * ref;
  const std::string against =
      weighed ? fmt::format(", {:.1f}% of the smallest figure it can inflate ({:.2f} ms)",
                            lag_p99 / ref * 100, ref)
              : "";
  if (lag_p99 > kLoopLagP99WarnMs && lag_material) {
    out.push_back(fmt::format(
        "{} event-loop lag P99 was {:.2f} ms (threshold {:.0f} ms{}): the client may have "
        "distorted the figures",
        lag_who, lag_p99, kLoopLagP99WarnMs, against));
  }
  if (lag_max > kLoopLagMaxWarnMs && (!weighed || lag_max >= kStallMaterialShare * ref)) {
    out.push_back(fmt::format(
        "{} event loop stalled for {:.1f} ms at worst (threshold {:.0f} ms{}): the client may "
        "have distorted the figures",
        stall_who, lag_max, kLoopLagMaxWarnMs,
        weighed ? fmt::format(", against a smallest P50 of {:.2f} ms", ref) : ""));
  }
  const bool lag_known = !std::isnan(lag_p99);
  if (cpu > kCpuUtilisationWarnPct && (!weighed || !lag_known || lag_material)) {
    out.push_back(fmt::format(
        "{} CPU use was {:.0f}% of one core (threshold {:.0f}%): the client may have distorted "
        "the figures; try {}",
        several ? cpu_who + " thread's" : cpu_who, cpu, kCpuUtilisationWarnPct,
        several ? "a lower concurrency or more --threads" : "a lower concurrency"));
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
