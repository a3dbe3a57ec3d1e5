// The description of a run as a sequence of load levels, parsed from the command line, and the stop
// rules that end an over-saturated level early. Pure data and parsing: the runner (src/cli bench)
// owns the clock and the transport. Flag syntax and semantics: docs/LOAD.md.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "load/arrivals.h"

namespace tokperf {

enum class LoadMode : uint8_t { kConcurrency, kRate };

// One level. A plain level holds `start` for its whole length; a linear ramp level moves from
// `start` to `end` over ramp_ns (the runner asks target_at()).
struct LevelSpec {
  LoadMode mode = LoadMode::kConcurrency;
  double start = 1;     // concurrency (whole number) or req/s
  double end = 1;       // == start unless a linear ramp
  int64_t ramp_ns = 0;  // 0: not a ramp
  bool is_ramp() const { return ramp_ns > 0; }
  // The target at offset_ns into the level; concurrency is rounded down (a slot opens when the line
  // crosses the next whole number).
  double target_at(int64_t offset_ns) const;
  std::string label() const;  // "c=8", "10 req/s", "rate 10->100 over 60 s"
};

// How long a phase lasts: by time or by request count; both 0 means "none" (e.g. no warm-up).
struct PhaseLimit {
  int64_t duration_ns = 0;
  int64_t requests = 0;
  bool none() const { return duration_ns == 0 && requests == 0; }
};

struct LoadPlan {
  std::vector<LevelSpec> levels;
  PhaseLimit warmup;  // per level, excluded from statistics
  PhaseLimit measure{60'000'000'000, 0};
  PhaseLimit cooldown;  // per level: requests still sent, excluded from statistics
  ArrivalKind arrivals = ArrivalKind::kPoisson;  // rate levels only
  double burstiness = 1;
  uint64_t seed = 0;
  int max_concurrency = 0;  // rate levels: 0 = uncapped
};

// The default sweep when neither --concurrency nor --request-rate is given.
inline constexpr std::string_view kDefaultConcurrencySweep = "1,4,8,16,32,64";

// "--concurrency 1,4,8": positive whole numbers, comma-separated.
Result<std::vector<LevelSpec>> parse_concurrency_list(std::string_view text);
// "--request-rate 10,20.5": positive numbers (req/s).
Result<std::vector<LevelSpec>> parse_rate_list(std::string_view text);
// "--ramp KIND:FROM..TO:HOW" with KIND rate|concurrency and HOW one of
//   step=S      arithmetic levels FROM, FROM+S, ... up to TO (inclusive when hit)
//   x=F         geometric levels FROM, FROM*F, ... up to TO (F > 1); the last level is TO
//   linear=DUR  one level whose target moves linearly from FROM to TO over DUR
Result<std::vector<LevelSpec>> parse_ramp(std::string_view text);
// "--duration 60s" / "--warmup 20" / "--cooldown 5s": a duration (with unit) or a request count
// (a whole number, optionally "req" or k/M suffix). "0" means none.
Result<PhaseLimit> parse_phase_limit(std::string_view flag, std::string_view text);

// One per-second sample the runner pushes while a level runs.
struct LoadSample {
  int64_t in_flight = 0;     // requests sent and not finished
  int64_t client_queue = 0;  // requests due (intended start passed) but not yet sent
  int64_t completed = 0;     // finished OK in this second
  int64_t errors = 0;        // finished with an error in this second
};

struct SaturationRules {
  int window_s = 5;             // samples per window
  int growing_windows = 3;      // backlog mean must rise across this many consecutive windows...
  double min_growth = 10;       // ...by at least this many requests in total
  double max_error_rate = 0.5;  // errors / finished over the last window
  int64_t min_finished = 20;    // ...counted only once this many finished in the window
};

// Says when a level is clearly over-saturated. Feed one sample per second; not thread-safe.
// Backlog = in_flight + client_queue: under a closed loop it is capped, so only the error rule can
// fire; under an open loop it grows without bound once arrivals outpace service.
class SaturationDetector {
 public:
  explicit SaturationDetector(SaturationRules rules = {}) : rules_(rules) {}
  void add(const LoadSample& s);
  // "stop: <reason>" with the numbers, once a rule fires (and from then on); nullopt before.
  const std::optional<std::string>& stop_reason() const { return reason_; }

 private:
  void check();
  SaturationRules rules_;
  std::deque<LoadSample> samples_;  // the last growing_windows+1 windows
  std::optional<std::string> reason_;
};

}  // namespace tokperf
