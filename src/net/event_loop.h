// A single-threaded epoll event loop with absolute-deadline timers on CLOCK_MONOTONIC (timerfd, so
// sub-millisecond precision). Used by the client transport, the scripted test server and the
// simulator's HTTP front. One loop per thread; nothing shared in the hot path.
//
// Thread rules: every method except post() and stop() must be called on the loop's thread (inside a
// callback, or before run() starts). Callbacks may add/remove watches and timers, including their
// own.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tokperf {

class EventLoop {
 public:
  using IoCallback = std::function<void(uint32_t epoll_events)>;
  using Callback = std::function<void()>;

  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Starts watching fd for `events` (EPOLLIN/EPOLLOUT/…), or changes the events and callback of a
  // watched fd. The loop never closes fd.
  void watch(int fd, uint32_t events, IoCallback cb);
  // Stops watching fd; safe to call for an fd that is not watched. Call before closing fd.
  void unwatch(int fd);
  bool watching(int fd) const {
    return fd >= 0 && static_cast<size_t>(fd) < watches_.size() && watches_[fd].generation != 0;
  }

  // Runs cb once at (or just after) the absolute monotonic time deadline_ns. Returns an id for
  // cancel_timer. A deadline in the past fires on the next turn of the loop.
  uint64_t add_timer_at(int64_t deadline_ns, Callback cb);
  uint64_t add_timer_after(int64_t delay_ns, Callback cb);
  // Cancels a pending timer; a no-op for a timer that already ran or was cancelled.
  void cancel_timer(uint64_t id);

  // Thread-safe: queues cb to run on the loop's thread and wakes the loop.
  void post(Callback cb);

  // Runs until stop(). Returns at once if stop() was already called.
  void run();
  // Runs at most one round of ready events and due timers, waiting up to max_wait_ns (-1: forever).
  void run_once(int64_t max_wait_ns);
  // Thread-safe.
  void stop();
  bool stopped() const { return stop_.load(std::memory_order_relaxed); }

  // When the current round's epoll_wait returned (mono ns): the moment the loop learned which fds were
  // ready. Bytes that made an fd readable had arrived by then, so it is the arrival stamp for reads
  // done in this round (read time would add the time spent on the fds handled before it).
  int64_t wake_ns() const { return wake_ns_; }

  // With snapshot_readable(true), the loop reads each ready fd's pending byte count (FIONREAD) right
  // after epoll_wait, before any callback runs, and the time right after that count was taken;
  // wake_readable() and wake_readable_ns() give them for the fd whose callback is running (-1 / 0:
  // not taken). Those bytes had all arrived by wake_readable_ns(), which is therefore their stamp:
  // wake_ns() is not, since bytes that arrive between epoll_wait's return and the count are counted
  // too (seen: 10-30 us early with 128 streams on a loaded machine, tests/e2e/stamp_causality_test).
  // An fd whose count has grown by the time its callback runs received the extra bytes later still.
  void snapshot_readable(bool on) { snapshot_readable_ = on; }
  int wake_readable() const { return wake_readable_; }
  int64_t wake_readable_ns() const { return wake_readable_ns_; }

  // How late timers fired (now - deadline), in ns: the loop's own lag. Sum, count and max.
  struct LagStats {
    int64_t count = 0;
    int64_t sum_ns = 0;
    int64_t max_ns = 0;
    std::vector<int64_t> samples_ns;  // at most kMaxLagSamples, for percentiles
  };
  static constexpr size_t kMaxLagSamples = 1 << 16;
  const LagStats& timer_lag() const { return lag_; }

 private:
  void arm_timerfd();
  void fire_due_timers();
  void drain_posted();

  int epfd_ = -1;
  int timerfd_ = -1;
  int wakefd_ = -1;
  // epoll_event.data.u64 carries (generation << 32 | fd): an event still queued for an fd that was
  // closed and reused within the same round is recognised as stale and dropped.
  struct Watch {
    uint32_t generation = 0;  // 0: fd not watched
    IoCallback cb;
  };
  // Indexed by fd (fds are small and dense): no hash lookup per ready fd.
  std::vector<Watch> watches_;
  uint32_t next_generation_ = 1;
  std::map<std::pair<int64_t, uint64_t>, Callback> timers_;  // (deadline, id) -> cb
  std::unordered_map<uint64_t, int64_t> timer_deadline_;     // id -> deadline
  uint64_t next_timer_id_ = 1;
  int64_t armed_deadline_ = -1;
  std::atomic<bool> stop_{false};
  std::mutex post_mu_;
  std::vector<Callback> posted_;
  LagStats lag_;
  int64_t wake_ns_ = 0;
  bool snapshot_readable_ = false;
  int wake_readable_ = -1;
  int64_t wake_readable_ns_ = 0;
};

}  // namespace tokperf
