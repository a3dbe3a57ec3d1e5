// The built-in HTTP/1.1 client (client/plain_http.h) against a raw TCP server that writes exactly the
// bytes each case scripts: framing (Content-Length, chunked, until close), interim responses,
// keep-alive reuse and the retry of a stale connection, and every failure with the CURLcode libcurl
// would give. Behaviour only: bytes, codes and counts, never how long anything took.
#include "client/plain_http.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/transport.h"
#include "core/clock.h"
#include "net/event_loop.h"

namespace tokperf {
namespace {

// Reads one request (head, then a Content-Length body) from a blocking socket; "" on EOF/timeout.
std::string read_request(int fd) {
  std::string got;
  size_t need = std::string::npos;
  char buf[4096];
  while (true) {
    size_t end = got.find("\r\n\r\n");
    if (end != std::string::npos && need == std::string::npos) {
      need = end + 4;
      size_t cl = got.find("Content-Length: ");
      if (cl != std::string::npos && cl < end) need += std::stoul(got.substr(cl + 16));
    }
    if (need != std::string::npos && got.size() >= need) return got.substr(0, need);
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return "";
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    got.append(buf, static_cast<size_t>(n));
  }
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// A TCP server on 127.0.0.1 whose thread hands each accepted connection to `serve`, one at a time,
// and closes it when `serve` returns. Requests seen are kept for the test to inspect.
class RawServer {
 public:
  using Serve = std::function<void(RawServer& s, int fd, int conn_index)>;
  explicit RawServer(Serve serve) : serve_(std::move(serve)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    socklen_t len = sizeof a;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~RawServer() {
    stop_ = true;
    thread_.join();
    close(listen_fd_);
  }
  uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/v1/x") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int accepted() const { return accepted_.load(); }
  // Reads the next request on fd and keeps it; "" when the client sent none.
  std::string next_request(int fd) {
    std::string r = read_request(fd);
    if (!r.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(r);
    }
    return r;
  }
  std::vector<std::string> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      serve_(*this, fd, accepted_++);
      close(fd);
    }
  }

  Serve serve_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  mutable std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

// Collects what one transfer delivered.
struct Collect : StreamHandler {
  int status = 0;
  std::string content_type;
  std::string body;
  int body_calls = 0;
  int completes = 0;
  TransferResult result;
  bool refuse_body = false;
  std::function<void()> then;  // runs from on_complete (e.g. start the next transfer)
  void on_headers(int s, std::string_view ct, int64_t) override {
    status = s;
    content_type.assign(ct);
  }
  bool on_body(std::string_view b, int64_t t_ns) override {
    EXPECT_GT(t_ns, 0);
    body.append(b);
    body_calls++;
    return !refuse_body;
  }
  void on_complete(const TransferResult& r, int64_t) override {
    result = r;
    completes++;
    if (then) then();
  }
};

class PlainHttpTest : public ::testing::Test {
 protected:
  StreamRequest post(const RawServer& s, std::string body = R"({"stream":true})") {
    StreamRequest r;
    r.url = s.url();
    r.body = std::move(body);
    r.headers = {"Content-Type: application/json"};
    return r;
  }
  // Runs the loop until every handler has completed (or 10 s pass).
  void run_until(const std::vector<Collect*>& hs) {
    const int64_t give_up = mono_ns() + 10'000'000'000;
    auto done = [&] {
      for (Collect* h : hs) {
        if (h->completes == 0) return false;
      }
      return true;
    };
    while (!done() && mono_ns() < give_up) loop_.run_once(50'000'000);
    for (Collect* h : hs) EXPECT_EQ(h->completes, 1);
  }
  Collect fetch(const StreamRequest& r) {
    Collect h;
    transport_.start(r, &h);
    run_until({&h});
    return h;
  }

  EventLoop loop_;
  Transport transport_{loop_, TransportOptions{}};
};

TEST(PlainHttpUrl, TakesPlainHttpAndLeavesTheRestToLibcurl) {
  PlainHttpUrl u;
  ASSERT_TRUE(parse_plain_http_url("http://127.0.0.1:8000/v1/chat/completions", &u));
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8000);
  EXPECT_EQ(u.host_header, "127.0.0.1:8000");
  EXPECT_EQ(u.target, "/v1/chat/completions");
  ASSERT_TRUE(parse_plain_http_url("HTTP://example.com", &u));
  EXPECT_EQ(u.port, 80);
  EXPECT_EQ(u.target, "/");
  ASSERT_TRUE(parse_plain_http_url("http://[::1]:9/a?b=c#frag", &u));
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.host_header, "[::1]:9");
  EXPECT_EQ(u.target, "/a?b=c");
  ASSERT_TRUE(parse_plain_http_url("http://h?q=1", &u));
  EXPECT_EQ(u.target, "/?q=1");
  for (const char* bad : {"https://h/", "http://user:pw@h/", "http://h:0/", "http://h:65536/",
                          "http://h:8x/", "http://", "http:///p", "http://h/a b", "http://[::1/",
                          "ftp://h/"}) {
    EXPECT_FALSE(parse_plain_http_url(bad, &u)) << bad;
  }
}

TEST_F(PlainHttpTest, SendsTheRequestLibcurlWouldAndReadsAContentLengthBody) {
  RawServer s([](RawServer& srv, int fd, int) {
    srv.next_request(fd);
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 11\r\n\r\n"
                  "hello world");
  });
  StreamRequest r = post(s, R"({"a":1})");
  r.url = s.url("/v1/x?y=1");
  r.headers.push_back("X-Custom: yes");
  r.headers.push_back("Expect:");  // libcurl's way to remove a header: not sent
  Collect h = fetch(r);
  EXPECT_EQ(h.result.code, CURLE_OK) << h.result.curl_error;
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.content_type, "text/event-stream");
  EXPECT_EQ(h.body, "hello world");
  EXPECT_EQ(transport_.builtin_transfers(), 1u);
  EXPECT_EQ(transport_.curl_transfers(), 0u);
  ASSERT_EQ(s.requests().size(), 1u);
  const std::string req = s.requests()[0];
  EXPECT_EQ(req.rfind("POST /v1/x?y=1 HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(req.find("\r\nHost: 127.0.0.1:" + std::to_string(s.port()) + "\r\n"), std::string::npos);
  EXPECT_NE(req.find("\r\nContent-Type: application/json\r\n"), std::string::npos);
  EXPECT_NE(req.find("\r\nContent-Length: 7\r\n"), std::string::npos);
  EXPECT_NE(req.find("\r\nX-Custom: yes\r\n"), std::string::npos);
  EXPECT_EQ(req.find("Expect"), std::string::npos);
  EXPECT_EQ(req.substr(req.size() - 11), "\r\n\r\n{\"a\":1}");
}

TEST_F(PlainHttpTest, SendsABodyLargerThanTheSocketBufferWhole) {
  RawServer s([](RawServer& srv, int fd, int) {
    usleep(50'000);  // let the client fill the socket buffer and wait for EPOLLOUT
    std::string r = srv.next_request(fd);
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(r.size()) + "\r\n\r\n");
    write_all(fd, r);  // echo: the test compares what arrived
  });
  std::string big(4 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>('a' + (i / 4096) % 26);
  Collect h = fetch(post(s, big));
  EXPECT_EQ(h.result.code, CURLE_OK) << h.result.curl_error;
  ASSERT_GT(h.body.size(), big.size());
  EXPECT_EQ(h.body.substr(h.body.size() - big.size()), big);
}

TEST_F(PlainHttpTest, DecodesChunkedBodiesSplitAtEveryByte) {
  const std::string response =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
      "5;ext=1\r\nhello\r\n1A\r\n abcdefghijklmnopqrstuvwxy\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (bool bytewise : {false, true}) {
    RawServer s([&](RawServer& srv, int fd, int) {
      srv.next_request(fd);
      if (!bytewise) return write_all(fd, response);
      for (char ch : response) {
        write_all(fd, std::string_view(&ch, 1));
        usleep(200);
      }
    });
    Collect h = fetch(post(s));
    EXPECT_EQ(h.result.code, CURLE_OK) << h.result.curl_error;
    EXPECT_EQ(h.body, "hello abcdefghijklmnopqrstuvwxy") << "bytewise " << bytewise;
  }
}

TEST_F(PlainHttpTest, ReusesAKeepAliveConnectionAndStartsTheNextFromOnComplete) {
  RawServer s([](RawServer& srv, int fd, int) {
    while (!srv.next_request(fd).empty()) {
      write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
  });
  Collect a, b, c;
  a.then = [&] { transport_.start(post(s), &b); };
  b.then = [&] { transport_.start(post(s), &c); };
  transport_.start(post(s), &a);
  run_until({&a, &b, &c});
  for (Collect* h : {&a, &b, &c}) {
    EXPECT_EQ(h->result.code, CURLE_OK) << h->result.curl_error;
    EXPECT_EQ(h->body, "ok");
  }
  EXPECT_EQ(s.accepted(), 1) << "one connection carried all three requests";
  EXPECT_GT(a.result.connect_ms, 0);
  EXPECT_EQ(c.result.connect_ms, 0) << "a reused connection reports no connect time, as libcurl does";
  EXPECT_EQ(s.requests().size(), 3u);
}

TEST_F(PlainHttpTest, RetriesOnceWhenTheServerDroppedTheIdleConnection) {
  // Connection 0 answers one request and then closes on the next without a byte; the client must
  // send that request again on a fresh connection (1).
  RawServer s([](RawServer& srv, int fd, int conn) {
    srv.next_request(fd);
    if (conn == 0) {
      write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na");
      srv.next_request(fd);
      return;  // closes without answering
    }
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb");
  });
  Collect a = fetch(post(s));
  EXPECT_EQ(a.body, "a");
  Collect b = fetch(post(s));
  EXPECT_EQ(b.result.code, CURLE_OK) << b.result.curl_error;
  EXPECT_EQ(b.body, "b");
  EXPECT_EQ(s.accepted(), 2);
}

TEST_F(PlainHttpTest, ReadsUntilCloseAndSkipsInterimResponses) {
  RawServer s([](RawServer& srv, int fd, int) {
    srv.next_request(fd);
    write_all(fd, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"
                  "all of it");
  });
  Collect h = fetch(post(s));
  EXPECT_EQ(h.result.code, CURLE_OK) << h.result.curl_error;
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.content_type, "text/plain");
  EXPECT_EQ(h.body, "all of it");
}

TEST_F(PlainHttpTest, FailuresCarryLibcurlsCodesAndSayWhatHappened) {
  struct Case {
    std::string reply;
    CURLcode code;
    std::string words;
  };
  const std::vector<Case> cases = {
      {"", CURLE_GOT_NOTHING, "Empty reply"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", CURLE_PARTIAL_FILE,
       "7 bytes remaining"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", CURLE_PARTIAL_FILE,
       "outstanding read data"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", CURLE_RECV_ERROR,
       "hexadecimal"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX", CURLE_RECV_ERROR, "CRLF"},
      {"SSH-2.0-OpenSSH\r\n\r\n", CURLE_WEIRD_SERVER_REPLY, "not an HTTP/1.x response"},
      {"HTTP/1.1 200 OK\r\nContent-Length: x1\r\n\r\n", CURLE_WEIRD_SERVER_REPLY,
       "Content-Length"},
      {"HTTP/1.1 200 OK\r\nContent-Le", CURLE_RECV_ERROR, "middle of the response headers"},
  };
  for (const Case& c : cases) {
    RawServer s([&](RawServer& srv, int fd, int) {
      srv.next_request(fd);
      write_all(fd, c.reply);
    });
    Collect h = fetch(post(s));
    EXPECT_EQ(h.result.code, c.code) << c.reply << " → " << h.result.curl_error;
    EXPECT_NE(h.result.curl_error.find(c.words), std::string::npos) << h.result.curl_error;
  }
}

TEST_F(PlainHttpTest, ARefusedConnectionIsReportedOnTheNextLoopTurnNotInsideStart) {
  int port;
  {
    RawServer s([](RawServer&, int, int) {});
    port = s.port();
  }  // closed: nothing listens there now
  StreamRequest r;
  r.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/x";
  r.body = "{}";
  Collect h;
  transport_.start(r, &h);
  EXPECT_EQ(h.completes, 0) << "on_complete must not run inside start()";
  run_until({&h});
  EXPECT_EQ(h.result.code, CURLE_COULDNT_CONNECT);
  EXPECT_NE(h.result.curl_error.find("Failed to connect to 127.0.0.1 port"), std::string::npos)
      << h.result.curl_error;
  EXPECT_EQ(transport_.in_flight(), 0u);
}

TEST_F(PlainHttpTest, TimeoutCancelAndARefusingHandlerEndTheTransfer) {
  // Each connection gets 4 of 100 bytes and is held open until the test releases it.
  std::atomic<int> released{0};
  RawServer s([&](RawServer& srv, int fd, int conn) {
    srv.next_request(fd);
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart");
    while (released.load() <= conn) usleep(1000);
  });
  StreamRequest r = post(s);
  r.timeout_ns = 200'000'000;
  Collect timed = fetch(r);
  EXPECT_EQ(timed.result.code, CURLE_OPERATION_TIMEDOUT);
  EXPECT_NE(timed.result.curl_error.find("4 bytes received"), std::string::npos)
      << timed.result.curl_error;
  released++;

  Collect cancelled;
  uint64_t id = transport_.start(post(s), &cancelled);
  const int64_t give_up = mono_ns() + 10'000'000'000;
  while (cancelled.body.empty() && mono_ns() < give_up) loop_.run_once(50'000'000);
  transport_.cancel(id);
  EXPECT_EQ(cancelled.completes, 1);
  EXPECT_TRUE(cancelled.result.cancelled);
  EXPECT_EQ(transport_.in_flight(), 0u);
  released++;

  Collect refusing;
  refusing.refuse_body = true;
  transport_.start(post(s), &refusing);
  run_until({&refusing});
  EXPECT_EQ(refusing.result.code, CURLE_WRITE_ERROR);
  released++;
}

TEST(PlainHttpChoice, LibcurlCarriesWhatTheBuiltInClientDoesNot) {
  EventLoop loop;
  RawServer s([](RawServer& srv, int fd, int) {
    srv.next_request(fd);
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  TransportOptions o;
  o.client = HttpClientKind::kCurl;
  Transport curl_only(loop, o);
  Collect h;
  StreamRequest r;
  r.url = s.url();
  r.body = "{}";
  curl_only.start(r, &h);
  const int64_t give_up = mono_ns() + 10'000'000'000;
  while (h.completes == 0 && mono_ns() < give_up) loop.run_once(50'000'000);
  EXPECT_EQ(h.result.code, CURLE_OK);
  EXPECT_EQ(h.body, "ok");
  EXPECT_EQ(curl_only.curl_transfers(), 1u);
  EXPECT_EQ(curl_only.builtin_transfers(), 0u);
}

}  // namespace
}  // namespace tokperf
