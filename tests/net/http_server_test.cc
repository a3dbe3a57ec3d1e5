#include "net/http_server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "net/event_loop.h"

namespace tokperf {
namespace {

constexpr int kStreamChunks = 5;

// A server on its own loop thread with a few routes:
//   /hello  → {"ok":true}      /echo → the request body
//   /stream → 5 chunks "c0".."c4", 2 ms apart      /abort → one chunk, then abort()
class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override { start(HttpServer::Options{}); }
  void TearDown() override { stop(); }

  void start(HttpServer::Options opts) {
    loop_ = std::make_unique<EventLoop>();  // a stopped loop cannot run again
    server_ = std::make_unique<HttpServer>(
        *loop_, [this](HttpRequest& req, std::shared_ptr<HttpResponse> resp) { route(req, resp); },
        opts);
    ASSERT_TRUE(server_->listen("127.0.0.1", 0).ok());
    thread_ = std::thread([this] { loop_->run(); });
  }
  void stop() {
    if (!thread_.joinable()) return;
    loop_->post([this] {
      server_->close_all();
      loop_->stop();
    });
    thread_.join();
  }

  void route(HttpRequest& req, std::shared_ptr<HttpResponse> resp) {
    if (req.path == "/hello") {
      resp->reply_json(200, R"({"ok":true})");
    } else if (req.path == "/echo") {
      resp->start(200, {{"X-Query", req.query}}, HttpResponse::Mode::kContentLength, req.body);
    } else if (req.path == "/stream" || req.path == "/abort") {
      resp->start_sse();
      resp->write("c0");
      stream_step(resp, 1, req.path == "/abort");
    } else {
      resp->reply_json(404, "{}");
    }
  }
  void stream_step(std::shared_ptr<HttpResponse> resp, int i, bool abort) {
    loop_->add_timer_after(2'000'000, [this, resp, i, abort] {
      if (abort) return resp->abort();
      if (i == kStreamChunks) {
        resp->finish();
        return;
      }
      if (resp->write("c" + std::to_string(i))) stream_step(resp, i + 1, abort);
    });
  }

  int connect_raw() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(server_->port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
  }
  static void send_all(int fd, const std::string& s) {
    ASSERT_EQ(send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
  }
  // Reads one Content-Length response from fd (leftover bytes stay in buf). "" on EOF/timeout.
  static std::string read_response(int fd, std::string& buf) {
    char tmp[4096];
    for (;;) {
      size_t end = buf.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t cl_pos = buf.find("Content-Length: ");
        size_t cl = cl_pos < end ? std::stoul(buf.substr(cl_pos + 16)) : 0;
        if (buf.size() >= end + 4 + cl) {
          std::string r = buf.substr(0, end + 4 + cl);
          buf.erase(0, end + 4 + cl);
          return r;
        }
      }
      ssize_t n = recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) return "";
      buf.append(tmp, static_cast<size_t>(n));
    }
  }
  static bool peer_closed(int fd) {
    char c;
    return recv(fd, &c, 1, 0) == 0;
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  int fd = connect_raw();
  std::string buf;
  for (int i = 0; i < 3; ++i) {
    send_all(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string r = read_response(fd, buf);
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
    EXPECT_NE(r.find("\r\n\r\n{\"ok\":true}"), std::string::npos) << r;
    EXPECT_NE(r.find("Connection: keep-alive"), std::string::npos);
  }
  // Two pipelined requests in one write, with a body and a query: answered in order.
  send_all(fd,
           "POST /echo?a=1 HTTP/1.1\r\ncontent-LENGTH: 5\r\n\r\nfirst"
           "POST /echo?a=2 HTTP/1.1\r\nContent-Length: 6\r\n\r\nsecond");
  std::string r1 = read_response(fd, buf), r2 = read_response(fd, buf);
  EXPECT_NE(r1.find("X-Query: a=1\r\n"), std::string::npos) << r1;
  EXPECT_EQ(r1.substr(r1.size() - 5), "first");
  EXPECT_NE(r2.find("X-Query: a=2\r\n"), std::string::npos) << r2;
  EXPECT_EQ(r2.substr(r2.size() - 6), "second");
  close(fd);
  EXPECT_EQ(server_->stats().connections_accepted.load(), 1u);
  EXPECT_EQ(server_->stats().requests.load(), 5u);
}

// Out of file descriptors (EMFILE), the server closes a waiting connection instead of leaving it
// in the backlog, where the level-triggered listen socket would keep its loop spinning and the peer
// would wait for ever; the connections it has go on being served, and new ones once descriptors
// are free again.
TEST_F(HttpServerTest, ShedsConnectionsItHasNoDescriptorFor) {
  const int kept = connect_raw();
  std::string buf;
  send_all(kept, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_FALSE(read_response(kept, buf).empty());
  constexpr int kWaiting = 3;
  int waiting[kWaiting];
  for (int& fd : waiting) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  // No new descriptor from here: the limit is the number the next one would get.
  const int next = dup(0);
  ASSERT_GE(next, 0);
  close(next);
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit tight = before;
  tight.rlim_cur = static_cast<rlim_t>(next);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server_->port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int fd : waiting) {
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);  // into the backlog
  }
  for (int fd : waiting) EXPECT_TRUE(peer_closed(fd)) << "connection left waiting";
  // The server counts a shed connection before closing it; the loop thread may still be on its
  // way (a bounded wait, not a timing assumption).
  for (int i = 0; i < 200 && server_->stats().connections_refused.load() < kWaiting; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->stats().connections_refused.load(), static_cast<uint64_t>(kWaiting));
  send_all(kept, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(read_response(kept, buf).find("{\"ok\":true}"), std::string::npos);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
  for (int fd : waiting) close(fd);
  const int fresh = connect_raw();
  std::string fresh_buf;
  send_all(fresh, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(read_response(fresh, fresh_buf).find("{\"ok\":true}"), std::string::npos);
  close(fresh);
  close(kept);
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  int fd = connect_raw();
  std::string buf;
  send_all(fd, "GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n");
  std::string r = read_response(fd, buf);
  EXPECT_NE(r.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(peer_closed(fd));
  close(fd);
}

TEST_F(HttpServerTest, GarbageGets400AndClose) {
  int fd = connect_raw();
  std::string buf;
  send_all(fd, "HELLO THERE\r\n\r\n");
  std::string r = read_response(fd, buf);
  EXPECT_EQ(r.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << r;
  EXPECT_TRUE(peer_closed(fd));
  close(fd);
  EXPECT_EQ(server_->stats().bad_requests.load(), 1u);
  EXPECT_EQ(server_->stats().requests.load(), 0u);
}

TEST_F(HttpServerTest, ChunkedRequestBodyGets501) {
  int fd = connect_raw();
  std::string buf;
  send_all(fd, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(read_response(fd, buf).rfind("HTTP/1.1 501 ", 0), 0u);
  close(fd);
}

TEST_F(HttpServerTest, OversizeBodyGets413) {
  stop();
  server_.reset();
  HttpServer::Options opts;
  opts.max_body_bytes = 1024;
  start(opts);
  int fd = connect_raw();
  std::string buf;
  send_all(fd, "POST /echo HTTP/1.1\r\nContent-Length: 5000\r\n\r\n");
  EXPECT_EQ(read_response(fd, buf).rfind("HTTP/1.1 413 ", 0), 0u);
  close(fd);
}

size_t append_body(char* p, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

CURL* make_easy(const std::string& url, std::string* body) {
  CURL* h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
  return h;
}

TEST_F(HttpServerTest, StreamingChunkedResponseReadByCurl) {
  std::string body;
  CURL* h = make_easy("http://127.0.0.1:" + std::to_string(server_->port()) + "/stream", &body);
  EXPECT_EQ(curl_easy_perform(h), CURLE_OK);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(h);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, "c0c1c2c3c4");
}

TEST_F(HttpServerTest, AbortIsSeenAsBrokenTransfer) {
  std::string body;
  CURL* h = make_easy("http://127.0.0.1:" + std::to_string(server_->port()) + "/abort", &body);
  CURLcode rc = curl_easy_perform(h);
  curl_easy_cleanup(h);
  EXPECT_NE(rc, CURLE_OK);
  EXPECT_EQ(body, "c0");
}

TEST_F(HttpServerTest, OneLoopServes200ConcurrentStreams) {
  constexpr int kStreams = 200;
  CURLM* multi = curl_multi_init();
  std::vector<std::string> bodies(kStreams);
  std::vector<CURL*> handles;
  std::string url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/stream";
  for (int i = 0; i < kStreams; ++i) {
    handles.push_back(make_easy(url, &bodies[i]));
    curl_multi_add_handle(multi, handles.back());
  }
  int running = 1, ok = 0;
  while (running > 0) {
    curl_multi_perform(multi, &running);
    curl_multi_poll(multi, nullptr, 0, 100, nullptr);
    CURLMsg* msg;
    int left;
    while ((msg = curl_multi_info_read(multi, &left)) != nullptr) {
      if (msg->msg == CURLMSG_DONE && msg->data.result == CURLE_OK) ++ok;
    }
  }
  for (CURL* h : handles) {
    curl_multi_remove_handle(multi, h);
    curl_easy_cleanup(h);
  }
  curl_multi_cleanup(multi);
  EXPECT_EQ(ok, kStreams);
  for (const auto& b : bodies) EXPECT_EQ(b, "c0c1c2c3c4");
  EXPECT_EQ(server_->stats().connections_accepted.load(), static_cast<uint64_t>(kStreams));
  EXPECT_EQ(server_->stats().requests.load(), static_cast<uint64_t>(kStreams));
}

}  // namespace
}  // namespace tokperf

namespace tokperf {
namespace {

TEST(ParseHttpRequest, ACompleteRequestWithBodyAndWhatFollows) {
  const std::string in =
      "POST /v1/chat/completions?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /";
  HttpRequest req;
  HttpParseResult r = parse_http_request(in, 1024, 1024, req);
  ASSERT_EQ(r.kind, HttpParseResult::Kind::kComplete);
  EXPECT_EQ(r.consumed, in.size() - 5);  // "GET /" is the next request's start
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/v1/chat/completions");
  EXPECT_EQ(req.query, "a=1");
  EXPECT_EQ(req.body, "abc");
  ASSERT_NE(req.header("content-length"), nullptr);
  EXPECT_EQ(*req.header("host"), "x");
}

TEST(ParseHttpRequest, EveryPrefixWaitsForMore) {
  const std::string in = "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi";
  for (size_t n = 0; n < in.size(); ++n) {
    HttpRequest req;
    EXPECT_EQ(parse_http_request(in.substr(0, n), 1024, 1024, req).kind,
              HttpParseResult::Kind::kNeedMore)
        << n;
  }
}

TEST(ParseHttpRequest, ErrorsCarryTheStatusTheServerAnswers) {
  auto status = [](const std::string& in, size_t max_head = 1024, size_t max_body = 1024) {
    HttpRequest req;
    HttpParseResult r = parse_http_request(in, max_head, max_body, req);
    return r.kind == HttpParseResult::Kind::kError ? r.status : 0;
  };
  EXPECT_EQ(status("GET /x HTTP/2.0\r\n\r\n"), 400);
  EXPECT_EQ(status("GET x HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nNoColon\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nBad Name: v\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 501);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 2000\r\n\r\n"), 413);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nX: " + std::string(2000, 'a')), 431);
  EXPECT_EQ(status("GET / HTTP/1.1\r\n\r\n"), 0);
}

}  // namespace
}  // namespace tokperf
