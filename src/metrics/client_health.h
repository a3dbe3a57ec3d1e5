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
// With a known reference figure (ClientHealth::distortable_ms), the lag only warns when it is a
// material share of it: a 2 ms lag cannot distort a 126 ms ITL, however busy the core was.
inline constexpr double kLagMaterialShare =
    0.05;  // lag P99 >= 5% of the smallest P50 it can inflate
inline constexpr double kStallMaterialShare = 0.5;  // worst stall >= half of that P50

// The client's noise floor measured on this machine before the run (net/noise_floor.h). NaN: not
// measured (the simulator's virtual-time runs, or a part that failed; `error` says which).
struct NoiseFloor {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t timer_samples = 0;
  double timer_lateness_p50_ms = kNaN;  // absolute-deadline timer fired this late (event loop)
  double timer_lateness_p99_ms = kNaN;
  double timer_lateness_max_ms = kNaN;
  double timer_slack_us = kNaN;  // prctl(PR_GET_TIMERSLACK) of the measuring thread
  int64_t round_trips = 0;
  double loopback_rtt_p50_ms = kNaN;  // 1 byte there and back between two threads over TCP
  double loopback_rtt_p99_ms = kNaN;
  std::string error;  // what could not be measured, "" when all was
  bool measured() const { return timer_samples > 0 || round_trips > 0; }
};

// One event loop's own figures, when a run uses several (`bench --threads N`).
struct LoopHealth {
  int loop = 0;
  int64_t loop_lag_samples = 0;
  double loop_lag_p50_ms = std::numeric_limits<double>::quiet_NaN();
  double loop_lag_p99_ms = std::numeric_limits<double>::quiet_NaN();
  double loop_lag_max_ms = std::numeric_limits<double>::quiet_NaN();
  double cpu_s = 0;  // this loop thread's CPU time
  double wall_s = 0;
  double cpu_utilisation_pct = std::numeric_limits<double>::quiet_NaN();  // of one core
  int64_t peak_in_flight = 0;
  double stream_events_per_s = 0;
};

// A loop's figures from its probe-timer lateness samples (ns) and counters.
LoopHealth loop_health(int loop, const std::vector<int64_t>& lag_ns, double cpu_s, double wall_s,
                       int64_t peak_in_flight, uint64_t stream_events);

// The loop most likely to have distorted the figures: the highest lag P99, then the busiest
// thread; -1 when there are none.
int worst_loop(const std::vector<LoopHealth>& loops);

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

  // The smallest figure the client's lateness can distort: the lowest ITL P50 or TTFT P50 over the
  // run's levels (ms). NaN when unknown; then the absolute thresholds above decide alone.
  double distortable_ms = std::numeric_limits<double>::quiet_NaN();

  NoiseFloor noise_floor;  // taken before the run (live bench only)

  // Several event loops: each loop's figures (the fields above merge them: every loop's lag
  // samples, the whole process's CPU) and the worst loop (worst_loop()); empty / -1 with one.
  std::vector<LoopHealth> loops;
  int worst_loop = -1;

  // Filled from client_health_warnings() by whoever assembles the summary.
  std::vector<std::string> warnings;
};

// (user + system) / wall * 100; NaN when wall_s <= 0.
double cpu_utilisation_pct(double cpu_user_s, double cpu_system_s, double wall_s);

// One sentence per threshold crossed, each naming the figure and the threshold; empty when healthy.
// With several loops, a lag or stall is judged on the worst loop and CPU on the busiest loop's
// thread (a process with N loops may use N cores), and the sentence names that loop.
// NaN figures (not measured) never warn. When distortable_ms is known, a lag or stall warns only
// when it is also a material share of it (kLagMaterialShare, kStallMaterialShare), and a busy CPU
// only when the lag it causes is material (the lag is the direct evidence; CPU is its cause).
std::vector<std::string> client_health_warnings(const ClientHealth& h);

// One line for the terminal: "client noise floor: timer wake-up lateness P50 … P99 …, loopback
// round trip P50 …, timer slack … µs"; "" when not measured.
std::string render_noise_floor(const NoiseFloor& f);

}  // namespace tokperf
