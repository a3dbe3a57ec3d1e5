// The load flags shared by `bench`, `sim run` and `capacity`: levels (concurrency lists, request
// rates, ramps, traces), phases, arrivals, stop rules and the SLO. One options table, one validation,
// so every command reads them the same way (docs/LOAD.md).
#pragma once

#include <cstdint>
#include <string>

#include "load/bench_config.h"
#include "metrics/slo.h"

namespace CLI {
class App;
}

namespace tokperf {

struct LoadFlags {
  std::string concurrency;
  bool sweep = false;
  std::string request_rate;
  std::string ramp;
  std::string arrivals = "poisson";
  bool arrivals_given = false;  // set by the command from CLI11's count("--arrivals")
  double burstiness = 1;
  uint64_t seed = 42;
  int max_concurrency = 0;
  std::string requests;
  std::string duration;
  std::string warmup;
  std::string cooldown;
  std::string timeout = "10m";
  std::string slo;
  std::string trace;
  double trace_speed = 1;
  bool no_early_stop = false;
  double max_error_rate = 0.5;
  double max_send_lag_ms = 1.0;
  std::string turns;       // multi-turn sessions: "N" or "A..B"
  std::string think_time;  // between a session's turns
};

// Declares the flags on `sub` (group "Load").
void add_load_flags(CLI::App* sub, LoadFlags& flags);

// Validates and converts; throws UsageError naming the flag, what is wrong and what is accepted.
LoadConfig make_load_config(const LoadFlags& flags);
SloSpec make_slo(const LoadFlags& flags);

}  // namespace tokperf
