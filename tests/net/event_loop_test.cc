// EventLoop watches: the fd-indexed table (watch, re-watch, unwatch, a callback unwatching itself,
// an fd closed and reused within one round). Behaviour only; no timing is asserted.
#include "net/event_loop.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace tokperf {
namespace {

struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd), 0); }
  ~SocketPair() {
    for (int f : fd) {
      if (f >= 0) close(f);
    }
  }
  void send_byte() { ASSERT_EQ(write(fd[1], "x", 1), 1); }
};

void drain(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof buf) > 0) {
  }
}

TEST(EventLoop, WatchRewatchAndUnwatch) {
  EventLoop loop;
  SocketPair p;
  const int fd = p.fd[0];
  EXPECT_FALSE(loop.watching(fd));
  EXPECT_FALSE(loop.watching(-1));
  EXPECT_FALSE(loop.watching(1 << 20));
  int first = 0, second = 0;
  loop.watch(fd, EPOLLIN, [&](uint32_t) {
    first++;
    drain(fd);
  });
  EXPECT_TRUE(loop.watching(fd));
  p.send_byte();
  loop.run_once(1000'000'000);
  EXPECT_EQ(first, 1);
  // Re-watching replaces the callback.
  loop.watch(fd, EPOLLIN, [&](uint32_t) {
    second++;
    drain(fd);
  });
  p.send_byte();
  loop.run_once(1000'000'000);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
  loop.unwatch(fd);
  EXPECT_FALSE(loop.watching(fd));
  loop.unwatch(fd);  // a no-op the second time
  p.send_byte();
  loop.run_once(0);
  EXPECT_EQ(second, 1);
}

TEST(EventLoop, CallbackMayUnwatchItselfAndWatchAnother) {
  EventLoop loop;
  SocketPair a, b;
  int calls_a = 0, calls_b = 0;
  loop.watch(a.fd[0], EPOLLIN, [&](uint32_t) {
    calls_a++;
    drain(a.fd[0]);
    loop.unwatch(a.fd[0]);  // destroys the stored callback while it runs
    loop.watch(b.fd[0], EPOLLIN, [&](uint32_t) {
      calls_b++;
      drain(b.fd[0]);
    });
  });
  a.send_byte();
  loop.run_once(1000'000'000);
  EXPECT_EQ(calls_a, 1);
  EXPECT_FALSE(loop.watching(a.fd[0]));
  EXPECT_TRUE(loop.watching(b.fd[0]));
  b.send_byte();
  a.send_byte();
  loop.run_once(1000'000'000);
  EXPECT_EQ(calls_a, 1);
  EXPECT_EQ(calls_b, 1);
}

TEST(EventLoop, EventForAnFdReusedInTheSameRoundIsDropped) {
  EventLoop loop;
  SocketPair a, b, fresh;
  close(fresh.fd[0]);
  close(fresh.fd[1]);
  fresh.fd[0] = fresh.fd[1] = -1;
  int new_calls = 0, ready_calls = 0;
  // Both become ready in one round. Whichever runs first closes the other's fd and opens a new
  // socket (the kernel hands out the lowest free fd, so the number is reused), watched anew; the
  // event still queued for the old fd must not reach the new watch.
  auto on_ready = [&](int& self_fd, int& other_fd) {
    ready_calls++;
    drain(self_fd);
    if (fresh.fd[0] >= 0) return;
    loop.unwatch(other_fd);
    close(other_fd);
    other_fd = -1;
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fresh.fd), 0);
    loop.watch(fresh.fd[0], EPOLLIN, [&](uint32_t) { new_calls++; });
  };
  loop.watch(a.fd[0], EPOLLIN, [&](uint32_t) { on_ready(a.fd[0], b.fd[0]); });
  loop.watch(b.fd[0], EPOLLIN, [&](uint32_t) { on_ready(b.fd[0], a.fd[0]); });
  a.send_byte();
  b.send_byte();
  loop.run_once(1000'000'000);
  EXPECT_EQ(ready_calls, 1);  // the closed fd's queued event was dropped
  EXPECT_EQ(new_calls, 0);    // and did not reach the new socket's watch
  EXPECT_TRUE(loop.watching(fresh.fd[0]));
  fresh.send_byte();
  loop.run_once(1000'000'000);
  EXPECT_EQ(new_calls, 1);
}

}  // namespace
}  // namespace tokperf
