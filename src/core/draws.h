// The project's own transforms from raw 64-bit generator output to draws, shared by every seeded
// generator (arrival schedules, workload lengths). Never std::*_distribution, whose output differs
// between standard libraries; the algorithms are in docs/LOAD.md so a schedule can be regenerated.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace tokperf {

// Uniform in the open interval (0, 1) from the top 53 bits, centred in their cell: never exactly 0
// or 1, so log() of it is always finite.
inline double uniform_open01(uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;
}

// N(0, 1) from two uniforms in (0, 1): Box–Muller, cosine branch only.
inline double box_muller(double u1, double u2) {
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace tokperf
