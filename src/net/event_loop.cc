#include "net/event_loop.h"

#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/clock.h"

namespace tokperf {
namespace {

constexpr int kMaxEvents = 1024;

}  // namespace

EventLoop::EventLoop() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  timerfd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  wakefd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || timerfd_ < 0 || wakefd_ < 0) {
    throw std::runtime_error(std::string("event loop: cannot create epoll/timerfd/eventfd: ") +
                             std::strerror(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = static_cast<uint32_t>(timerfd_);  // generation 0
  epoll_ctl(epfd_, EPOLL_CTL_ADD, timerfd_, &ev);
  ev.data.u64 = static_cast<uint32_t>(wakefd_);
  epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev);
}

EventLoop::~EventLoop() {
  if (epfd_ >= 0) close(epfd_);
  if (timerfd_ >= 0) close(timerfd_);
  if (wakefd_ >= 0) close(wakefd_);
}

namespace {
uint64_t watch_tag(uint32_t generation, int fd) {
  return (static_cast<uint64_t>(generation) << 32) | static_cast<uint32_t>(fd);
}
}  // namespace

void EventLoop::watch(int fd, uint32_t events, IoCallback cb) {
  if (fd < 0) throw std::invalid_argument("event loop: watch() of a negative fd");
  epoll_event ev{};
  ev.events = events;
  if (static_cast<size_t>(fd) >= watches_.size()) watches_.resize(static_cast<size_t>(fd) + 1);
  Watch& w = watches_[static_cast<size_t>(fd)];
  if (w.generation == 0) {
    uint32_t gen = next_generation_++;
    if (next_generation_ == 0) next_generation_ = 1;  // 0 tags the loop's own fds
    ev.data.u64 = watch_tag(gen, fd);
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST) {
      epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev);
    }
    w.generation = gen;
  } else {
    ev.data.u64 = watch_tag(w.generation, fd);
    epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev);
  }
  w.cb = std::move(cb);
}

void EventLoop::unwatch(int fd) {
  if (!watching(fd)) return;
  Watch& w = watches_[static_cast<size_t>(fd)];
  w.generation = 0;
  w.cb = nullptr;
  epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
}

uint64_t EventLoop::add_timer_at(int64_t deadline_ns, Callback cb) {
  uint64_t id = next_timer_id_++;
  timers_.emplace(std::make_pair(deadline_ns, id), std::move(cb));
  timer_deadline_.emplace(id, deadline_ns);
  if (armed_deadline_ < 0 || deadline_ns < armed_deadline_) arm_timerfd();
  return id;
}

uint64_t EventLoop::add_timer_after(int64_t delay_ns, Callback cb) {
  return add_timer_at(mono_ns() + delay_ns, std::move(cb));
}

void EventLoop::cancel_timer(uint64_t id) {
  auto it = timer_deadline_.find(id);
  if (it == timer_deadline_.end()) return;
  timers_.erase(std::make_pair(it->second, id));
  timer_deadline_.erase(it);
}

void EventLoop::post(Callback cb) {
  {
    std::lock_guard<std::mutex> lock(post_mu_);
    posted_.push_back(std::move(cb));
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wakefd_, &one, sizeof one);
}

void EventLoop::stop() {
  stop_.store(true, std::memory_order_relaxed);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wakefd_, &one, sizeof one);
}

void EventLoop::arm_timerfd() {
  itimerspec spec{};
  if (timers_.empty()) {
    armed_deadline_ = -1;  // all-zero it_value disarms
  } else {
    int64_t d = timers_.begin()->first.first;
    if (d <= 0) d = 1;  // zero would disarm
    spec.it_value.tv_sec = d / 1'000'000'000;
    spec.it_value.tv_nsec = d % 1'000'000'000;
    armed_deadline_ = d;
  }
  timerfd_settime(timerfd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

void EventLoop::fire_due_timers() {
  int64_t now = mono_ns();
  // Fire only timers due at entry, so a callback re-adding a zero-delay timer cannot starve I/O.
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    auto node = timers_.extract(timers_.begin());
    timer_deadline_.erase(node.key().second);
    int64_t late = now - node.key().first;
    lag_.count++;
    lag_.sum_ns += late;
    if (late > lag_.max_ns) lag_.max_ns = late;
    if (lag_.samples_ns.size() < kMaxLagSamples) lag_.samples_ns.push_back(late);
    node.mapped()();
  }
  arm_timerfd();
}

void EventLoop::drain_posted() {
  std::vector<Callback> batch;
  {
    std::lock_guard<std::mutex> lock(post_mu_);
    batch.swap(posted_);
  }
  for (auto& cb : batch) cb();
}

void EventLoop::run_once(int64_t max_wait_ns) {
  epoll_event events[kMaxEvents];
  int timeout_ms = -1;
  if (max_wait_ns >= 0) {
    timeout_ms = static_cast<int>(std::min<int64_t>((max_wait_ns + 999'999) / 1'000'000, 1 << 30));
  }
  int n = epoll_wait(epfd_, events, kMaxEvents, timeout_ms);
  wake_ns_ = mono_ns();
  if (n < 0) {
    if (errno == EINTR) return;
    throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
  }
  // Pending bytes per ready fd, read before any callback can take time (see snapshot_readable).
  // Each count is stamped right after it is taken (one vDSO clock read per ready fd): every byte it
  // counts had arrived by then, which the wake time cannot promise.
  int readable[kMaxEvents];
  int64_t readable_ns[kMaxEvents];
  if (snapshot_readable_) {
    for (int i = 0; i < n; ++i) {
      int fd = static_cast<int>(static_cast<uint32_t>(events[i].data.u64));
      if (!(events[i].events & EPOLLIN) || ioctl(fd, FIONREAD, &readable[i]) != 0) {
        readable[i] = -1;
        readable_ns[i] = 0;
      } else {
        readable_ns[i] = mono_ns();
      }
    }
  }
  bool timer_ready = false;
  for (int i = 0; i < n; ++i) {
    uint64_t tag = events[i].data.u64;
    int fd = static_cast<int>(static_cast<uint32_t>(tag));
    uint32_t gen = static_cast<uint32_t>(tag >> 32);
    if (gen == 0 && fd == timerfd_) {
      uint64_t expirations;
      [[maybe_unused]] ssize_t r = read(timerfd_, &expirations, sizeof expirations);
      timer_ready = true;
    } else if (gen == 0 && fd == wakefd_) {
      uint64_t v;
      [[maybe_unused]] ssize_t r = read(wakefd_, &v, sizeof v);
      drain_posted();
    } else {
      // Unwatched by an earlier callback this round, or closed and reused by a new watch.
      if (!watching(fd) || watches_[static_cast<size_t>(fd)].generation != gen) continue;
      // A copy: the callback may unwatch or re-watch itself (or grow the table).
      IoCallback cb = watches_[static_cast<size_t>(fd)].cb;
      wake_readable_ = snapshot_readable_ ? readable[i] : -1;
      wake_readable_ns_ = snapshot_readable_ ? readable_ns[i] : 0;
      cb(events[i].events);
      wake_readable_ = -1;
      wake_readable_ns_ = 0;
    }
  }
  if (timer_ready || (!timers_.empty() && timers_.begin()->first.first <= mono_ns())) {
    fire_due_timers();
  }
}

void EventLoop::run() {
  while (!stop_.load(std::memory_order_relaxed)) run_once(-1);
}

}  // namespace tokperf
