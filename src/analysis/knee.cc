#include "analysis/knee.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace tokperf {

KneeResult find_knee(std::span<const SweepPoint> points, const KneeOptions& o) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::isfinite(points[i].latency_ms) && std::isfinite(points[i].throughput) &&
        points[i].latency_ms > 0 && points[i].throughput > 0) {
      idx.push_back(i);
    }
  }
  KneeResult r;
  for (size_t k = 0; k + 1 < idx.size(); ++k) {
    const SweepPoint& a = points[idx[k]];
    const SweepPoint& b = points[idx[k + 1]];
    double d_lat = (b.latency_ms - a.latency_ms) / a.latency_ms;
    double d_thr = (b.throughput - a.throughput) / a.throughput;
    if (d_lat < o.min_latency_rise) continue;
    // Relative growth, not absolute slopes: the comparison is unit-free and does not depend on
    // how far apart the levels are.
    if (d_thr > 0 && d_lat <= o.elasticity * d_thr) continue;
    r.found = true;
    r.index = idx[k];
    r.load = a.load;
    if (d_thr > 0) {
      r.explanation = fmt::format(
          "knee at {} {:g}: from {:g} to {:g}, {} rose {:.0f} -> {:.0f} ms ({:+.0f}%) while "
          "throughput went {:.0f} -> {:.0f} ({:+.0f}%); latency grows {:.1f}x as fast as "
          "throughput beyond this point",
          o.load_name, a.load, a.load, b.load, o.latency_name, a.latency_ms, b.latency_ms,
          100 * d_lat, a.throughput, b.throughput, 100 * d_thr, d_lat / d_thr);
      return r;
    }
    // Throughput flat or falling while latency climbs.
    r.explanation = fmt::format(
        "knee at {} {:g}: from {:g} to {:g}, {} rose {:.0f} -> {:.0f} ms ({:+.0f}%) while "
        "throughput did not grow ({:.0f} -> {:.0f}): the service is saturated",
        o.load_name, a.load, a.load, b.load, o.latency_name, a.latency_ms, b.latency_ms,
        100 * d_lat, a.throughput, b.throughput);
    return r;
  }
  r.explanation = idx.size() < 2 ? "no knee: fewer than 2 usable levels"
                                 : fmt::format(
                                       "no knee: {} rose no faster than throughput up to "
                                       "{} {:g}",
                                       o.latency_name, o.load_name, points[idx.back()].load);
  return r;
}

}  // namespace tokperf
