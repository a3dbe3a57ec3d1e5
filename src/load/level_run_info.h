// How one load level went, as the runner saw it (the request statistics come from the records).
// Filled by the level driver (load/level_driver.h) for every runner: live, virtual-time, and any
// runner that drives a share of a level. Light on purpose: reports and metrics include it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "load/load_plan.h"

namespace tokperf {

struct LevelRunInfo {
  int level = 0;
  LevelSpec spec;
  bool open_loop = false;
  int64_t start_ns = 0, end_ns = 0;  // the level, all phases
  int64_t measured_sent = 0;         // measured requests sent
  double measured_span_s = 0;        // first to last measured intended start
  double target_rate_rps = 0;        // open loop
  double scheduled_rate_rps = 0;     // measured arrivals / their intended span (the sample)
  double achieved_rate_rps = 0;      // measured sends / their actual span (open loop)
  int64_t first_measured_send_ns = 0, last_measured_send_ns = 0;
  std::vector<int64_t> send_lag_ns;  // measured, open loop: dispatch - intended start
  std::string schedule_fingerprint;  // open loop: hex of the arrival offsets
  int64_t scheduled_arrivals = 0;
  std::optional<std::string> stopped_early;  // why the level stopped before its plan
  bool send_lag_exceeded = false;            // send-lag P99 above the configured bound
  // Multi-turn sessions (--turns): started, ran every turn, ended by a failed turn, cut short by
  // the end of the level (sending stopped while turns were left).
  bool sessions = false;
  int64_t sessions_started = 0, sessions_completed = 0, sessions_failed = 0, sessions_cut = 0;
};

}  // namespace tokperf
