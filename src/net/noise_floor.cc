#include "net/noise_floor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "metrics/stats.h"
#include "net/event_loop.h"

namespace tokperf {
namespace {

double ns_ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

void add_error(NoiseFloor& f, const std::string& what) {
  f.error += (f.error.empty() ? "" : "; ") + what;
}

// Absolute-deadline timers on the same kind of event loop the client runs: lateness = fire - due.
void measure_timers(const NoiseFloorOptions& o, NoiseFloor& f) {
  if (o.timer_samples <= 0) return;
  EventLoop loop;
  std::vector<double> late_ms;
  late_ms.reserve(static_cast<size_t>(o.timer_samples));
  const int64_t start = mono_ns() + o.timer_interval_ns;
  for (int i = 0; i < o.timer_samples; ++i) {
    const int64_t due = start + static_cast<int64_t>(i) * o.timer_interval_ns;
    loop.add_timer_at(due, [&, due, i] {
      late_ms.push_back(ns_ms(mono_ns() - due));
      if (i + 1 == o.timer_samples) loop.stop();
    });
  }
  loop.run();
  DistStats s = compute_dist_stats(std::move(late_ms));
  f.timer_samples = s.count;
  f.timer_lateness_p50_ms = s.p50;
  f.timer_lateness_p99_ms = s.p99;
  f.timer_lateness_max_ms = s.max;
}

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

bool full_io(int fd, char* b, bool write) {
  for (;;) {
    ssize_t n = write ? ::send(fd, b, 1, MSG_NOSIGNAL) : ::recv(fd, b, 1, 0);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// 1-byte ping-pongs over a loopback TCP connection, the echo on a thread of its own: two thread
// wake-ups and the loopback stack, the fastest any server on this machine can answer.
void measure_round_trips(const NoiseFloorOptions& o, NoiseFloor& f) {
  if (o.round_trips <= 0) return;
  Fd lst(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (lst.fd < 0 || ::bind(lst.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(lst.fd, 1) != 0 ||
      ::getsockname(lst.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    add_error(f, std::string("loopback listen: ") + std::strerror(errno));
    return;
  }
  Fd cli(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (cli.fd < 0 || ::connect(cli.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    add_error(f, std::string("loopback connect: ") + std::strerror(errno));
    return;
  }
  Fd srv(::accept4(lst.fd, nullptr, nullptr, SOCK_CLOEXEC));
  if (srv.fd < 0) {
    add_error(f, std::string("loopback accept: ") + std::strerror(errno));
    return;
  }
  const int one = 1;
  ::setsockopt(cli.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(srv.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::thread echo([fd = srv.fd, n = o.round_trips] {
    char b;
    for (int i = 0; i < n; ++i) {
      if (!full_io(fd, &b, false) || !full_io(fd, &b, true)) return;
    }
  });
  std::vector<double> rtt_ms;
  rtt_ms.reserve(static_cast<size_t>(o.round_trips));
  char b = 'x';
  for (int i = 0; i < o.round_trips; ++i) {
    const int64_t t0 = mono_ns();
    if (!full_io(cli.fd, &b, true) || !full_io(cli.fd, &b, false)) {
      add_error(f, "loopback round trip failed");
      break;
    }
    rtt_ms.push_back(ns_ms(mono_ns() - t0));
  }
  ::shutdown(cli.fd, SHUT_RDWR);  // unblocks the echo if the loop above broke off
  echo.join();
  DistStats s = compute_dist_stats(std::move(rtt_ms));
  f.round_trips = s.count;
  f.loopback_rtt_p50_ms = s.p50;
  f.loopback_rtt_p99_ms = s.p99;
}

}  // namespace

NoiseFloor measure_noise_floor(const NoiseFloorOptions& options) {
  NoiseFloor f;
  const int slack_ns = ::prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  if (slack_ns >= 0) f.timer_slack_us = slack_ns / 1000.0;
  measure_timers(options, f);
  measure_round_trips(options, f);
  return f;
}

}  // namespace tokperf
