// Time sources. Durations are measured on the monotonic clock only (CLOCK_MONOTONIC, the same clock
// timerfd and std::chrono::steady_clock use on Linux); the wall clock only labels records.
#pragma once

#include <chrono>
#include <cstdint>

namespace tokperf {

// Nanoseconds on CLOCK_MONOTONIC. Cheap (vDSO); safe to call from any thread.
int64_t mono_ns();

// Microseconds since the Unix epoch (wall clock); for labels only, never for durations.
int64_t wall_us();

// An injectable clock so tests and the virtual-time simulator control time.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now_ns() const = 0;
};

// The real monotonic clock.
class MonotonicClock final : public Clock {
 public:
  int64_t now_ns() const override { return mono_ns(); }
};

// A clock that only moves when told to. Not thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ns = 0) : now_(start_ns) {}
  int64_t now_ns() const override { return now_; }
  void set_ns(int64_t t) { now_ = t; }
  void advance_ns(int64_t d) { now_ += d; }

 private:
  int64_t now_;
};

inline double ns_to_ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace tokperf
