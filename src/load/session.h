// Multi-turn sessions (docs/workloads-sessions.md): a session is one simulated user holding a
// conversation of N turns; turn k is sent with the whole history (earlier user prompts and the
// replies actually generated), after a think time that follows the previous reply. This header
// holds the session shape (turns per session, think time between turns) and its seeded draws; the
// load rules live in the level driver (load/level_driver.h), the history in the runners.
//
// Draws are stateless: a session's turn count and each think time are functions of (seed, session
// id, turn), so they do not depend on the order in which requests happen to finish.
// Pure values and functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tokperf {

// Think time between the end of one turn and the send of the next.
struct ThinkTime {
  enum class Kind : uint8_t { kFixed, kUniform, kExponential };
  Kind kind = Kind::kFixed;
  int64_t a_ns = 0;  // fixed: the time; uniform: the low end; exponential: the mean
  int64_t b_ns = 0;  // uniform: the high end
  std::string text() const;
};

struct SessionSpec {
  bool enabled = false;  // --turns given: every request belongs to a session
  int64_t turns_min = 1, turns_max = 1;
  ThinkTime think;
  bool active() const { return enabled; }
  std::string text() const;  // "4 turns, think 2s" for configs and notes
};

// --turns: "N" or "A..B" (uniform whole number in [A, B]); N, A >= 1, B >= A, at most 1000.
Result<SessionSpec> parse_turns(std::string_view text);
// --think-time: "0", a duration ("2s", "500ms"), "A..B" (uniform between two durations) or
// "exp:MEAN" (exponential with that mean).
Result<ThinkTime> parse_think_time(std::string_view text);

// The number of turns of session `session` (within [turns_min, turns_max]).
int64_t session_turns(const SessionSpec& spec, uint64_t seed, int64_t session);
// The think time after turn `turn` (1-based) of `session` ends, before turn + 1 is sent.
int64_t session_think_ns(const SessionSpec& spec, uint64_t seed, int64_t session, int64_t turn);

}  // namespace tokperf
