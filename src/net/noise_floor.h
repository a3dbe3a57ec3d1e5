// The measuring client's own noise floor on this machine, taken before a run: how late an event
// loop's absolute-deadline timers fire, the kernel's timer slack, and a loopback TCP round trip
// between two threads (the fastest a reply can reach the client here). Printed beside the results
// and written to summary.json (client_health.noise_floor), so a reader can tell a 0.3 ms ITL jitter
// from the client's own floor. Takes about 0.1 s.
#pragma once

#include "metrics/client_health.h"

namespace tokperf {

struct NoiseFloorOptions {
  int timer_samples = 200;  // absolute timers, one every timer_interval_ns
  int64_t timer_interval_ns = 250'000;
  int round_trips = 200;  // 1-byte ping-pongs over a loopback TCP connection
};

// Never throws; a part that could not be measured is left NaN and `error` says why.
NoiseFloor measure_noise_floor(const NoiseFloorOptions& options = {});

}  // namespace tokperf
