// Open-loop arrival schedules and trace replay. Schedules are absolute offsets in nanoseconds from
// the start of a load level; the runner adds the level's start time and arms an absolute timer for
// each, so pacing never accumulates the error of relative sleeps.
//
// Reproducibility: the generators use std::mt19937_64 (whose output the C++ standard fixes) and our
// own uniform/exponential/gamma transforms, never std::*_distribution (whose output differs between
// standard libraries). The exact algorithm is in docs/LOAD.md so another implementation can
// regenerate a schedule; schedule_fingerprint() lets users check that two runs sent the same one.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tokperf {

enum class ArrivalKind : uint8_t { kConstant, kPoisson, kGamma };
const char* arrival_kind_name(ArrivalKind k);
// Accepts "constant", "poisson", "gamma".
Result<ArrivalKind> parse_arrival_kind(std::string_view text);

struct ArrivalSpec {
  ArrivalKind kind = ArrivalKind::kPoisson;
  double rate_per_s = 1;  // mean arrival rate; REQUIRES: > 0
  double burstiness = 1;  // gamma shape k; CV of the gaps = 1/sqrt(k); 1 = Poisson. REQUIRES: > 0
  uint64_t seed = 0;
};

// Streams inter-arrival gaps (seconds) for one spec. Not thread-safe; cheap to copy.
class ArrivalGenerator {
 public:
  explicit ArrivalGenerator(const ArrivalSpec& spec);
  // The gap before the next arrival, in seconds, mean 1/rate.
  double next_gap_s();
  // A uniform draw in the open interval (0, 1) from the same stream (exposed for tests/docs).
  double next_uniform();

 private:
  double next_exponential();        // mean 1
  double next_normal();             // N(0, 1), Box–Muller, cosine branch only
  double next_gamma(double shape);  // mean shape, scale 1 (Marsaglia–Tsang)

  ArrivalSpec spec_;
  std::mt19937_64 rng_;
};

// The first `count` arrival offsets (ns from level start). The first arrival is at offset 0.
std::vector<int64_t> arrival_offsets_count(const ArrivalSpec& spec, size_t count);
// Every arrival offset strictly before duration_ns.
std::vector<int64_t> arrival_offsets_until(const ArrivalSpec& spec, int64_t duration_ns);

// A linear rate ramp from rate_start to rate_end (req/s) over duration_ns: arrivals of `spec`
// (whose rate_per_s is ignored) are generated at unit rate and mapped through the inverse of the
// cumulative rate (time-rescaling), so Poisson stays Poisson with the ramped intensity. Offsets <
// duration_ns. REQUIRES: rate_start, rate_end >= 0, not both 0.
std::vector<int64_t> ramp_arrival_offsets(const ArrivalSpec& spec, double rate_start,
                                          double rate_end, int64_t duration_ns);

// FNV-1a 64 over the little-endian bytes of each offset: identical schedules give identical values.
uint64_t schedule_fingerprint(std::span<const int64_t> offsets_ns);
// 16 lowercase hex digits.
std::string fingerprint_hex(uint64_t fingerprint);

// One request of a replayed trace.
struct TraceEntry {
  int64_t offset_ns = 0;       // from the first entry, after time scaling
  int64_t input_tokens = -1;   // -1 when the line gives a prompt instead
  std::string prompt;          // empty when the line gives input_tokens
  int64_t output_tokens = -1;  // -1: not given (the workload's default applies)
  int line = 0;                // 1-based line in the trace file
};

// Parses a JSONL trace: one object per line with "timestamp" (seconds, a number) or "timestamp_ms"
// (milliseconds), "input_tokens" (integer) or "prompt" (string), and optional "output_tokens".
// Timestamps must not decrease. Offsets are (t - t_first) / speed (speed 2 = twice as fast).
// Blank lines are skipped. Errors name the line number, the field and what is accepted.
Result<std::vector<TraceEntry>> parse_trace_jsonl(std::string_view text, double speed = 1.0);
Result<std::vector<TraceEntry>> load_trace_jsonl(const std::string& path, double speed = 1.0);

}  // namespace tokperf
